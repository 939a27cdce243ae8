//! Archived `Set-Cookie` headers, replayed. The replay origin serves every
//! archived site, so a cookie cannot keep its archived domain, and its
//! archived path means nothing under `/{coll}/{ts}{mod}/{url}` (the
//! timestamp and the modifier sit between the collection and the archived
//! path, so no cookie path covers "this host, every modifier"). Each
//! cookie is stored instead under a name that says its archived domain
//! and path, `wc~DOMAIN~PATH~NAME` (each part percent-encoded; DOMAIN
//! starting with `.` for a domain cookie), with the path `/{coll}/`, and
//! the client script (`client.js`) gives `document.cookie` the cookies
//! whose domain and path match the archived URL shown, and stores what
//! scripts set the same way (docs/serve.md, "Cookies").
//!
//! Expiry: an archived date is years past; one before the capture time
//! (a deletion) deletes the cookie, any other makes it a session cookie.
//! `Secure` and `SameSite=None` are dropped (the replay origin may be
//! plain HTTP; the cookie never leaves it), `HttpOnly` kept.

use warchest::http::date::parse_http_date;

/// The prefix of replayed cookies' names.
const MARK: &str = "wc";

/// `s` with what cannot stand in a cookie name (and `~`, the separator)
/// percent-encoded; the same as `cookieEnc` in `client.js`.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if !(0x20..0x7f).contains(&b) || b"%~;=,\" ".contains(&b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

/// RFC 6265's default path of a URL path: up to its last `/`, or `/`.
fn default_path(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The `Set-Cookie` value to send for the archived `value`, received with
/// `archived_url` at `capture` (14 digits), in collection `coll`; `None`
/// (with the reason) when the browser would have refused it.
pub(crate) fn rewrite(
    value: &str,
    archived_url: &str,
    capture: &str,
    coll: &str,
) -> Result<String, &'static str> {
    let (host, path) = host_and_path(archived_url).ok_or("not an http(s) URL")?;
    let mut bits = value.split(';');
    let nv = bits.next().unwrap_or("");
    let (name, val) = nv.split_once('=').ok_or("no name=value")?;
    let (name, val) = (name.trim(), val.trim());
    if name.is_empty() {
        return Err("no name");
    }
    let mut dom = host.clone();
    let mut cpath = default_path(&path).to_string();
    let mut gone = false;
    let mut http_only = false;
    for a in bits {
        let (an, av) = a.split_once('=').unwrap_or((a, ""));
        let (an, av) = (an.trim().to_ascii_lowercase(), av.trim());
        match an.as_str() {
            "domain" if !av.is_empty() => {
                let d = av.trim_start_matches('.').to_ascii_lowercase();
                if host != d && !host.ends_with(&format!(".{d}")) {
                    return Err("its Domain is not the archived host's");
                }
                dom = format!(".{d}");
            }
            "path" if av.starts_with('/') => cpath = av.to_string(),
            "max-age" if av.parse::<i64>().is_ok_and(|n| n <= 0) => gone = true,
            "expires" => {
                // `Wed, 21-Nov-2012 12:00:00 GMT` as well as RFC 1123.
                if let Some(t) = parse_http_date(&av.replace('-', " "))
                    // A two-digit year is not guessed at.
                    && !t.starts_with("00")
                    && t.as_str() < capture
                {
                    gone = true;
                }
            }
            "httponly" => http_only = true,
            _ => {}
        }
    }
    let mut out = format!(
        "{MARK}~{}~{}~{}={}; Path=/{coll}/",
        encode(&dom),
        encode(&cpath),
        encode(name),
        val
    );
    if gone {
        out.push_str("; Max-Age=0");
    }
    if http_only {
        out.push_str("; HttpOnly");
    }
    Ok(out)
}

/// The lower-case host and the path of an `http(s)` URL.
fn host_and_path(u: &str) -> Option<(String, String)> {
    let rest = u
        .strip_prefix("http://")
        .or_else(|| u.strip_prefix("https://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if hostport.starts_with('[') {
        hostport.split_inclusive(']').next().unwrap_or(hostport)
    } else {
        hostport.split(':').next().unwrap_or(hostport)
    };
    let path = rest[end..].split(['?', '#']).next().unwrap_or("");
    let path = if path.is_empty() { "/" } else { path };
    Some((host.to_ascii_lowercase(), path.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "20121120120000";

    #[test]
    fn named_for_the_archived_domain_and_path() {
        let rw = |v: &str, u: &str| rewrite(v, u, TS, "archive");
        assert_eq!(
            rw(
                "sid=abc; Path=/; Domain=.Site.example; Secure; SameSite=None",
                "http://www.site.example/a/b"
            )
            .unwrap(),
            "wc~.site.example~/~sid=abc; Path=/archive/"
        );
        assert_eq!(
            rw("pref=x y", "https://site.example:8443/shop/cart?q=1").unwrap(),
            "wc~site.example~/shop~pref=x y; Path=/archive/"
        );
        assert_eq!(
            rw(
                "a~b=1; path=/p; HttpOnly; expires=Wed, 21-Nov-2012 12:00:00 GMT",
                "http://h.example/"
            )
            .unwrap(),
            "wc~h.example~/p~a%7Eb=1; Path=/archive/; HttpOnly"
        );
        // Deleted at the capture time.
        assert_eq!(
            rw(
                "old=; expires=Thu, 01 Jan 1970 00:00:00 GMT",
                "http://h.example/x"
            )
            .unwrap(),
            "wc~h.example~/~old=; Path=/archive/; Max-Age=0"
        );
        // An Expires whose time is out of range is no date: not deleted.
        assert_eq!(
            rw(
                "odd=1; expires=Thu, 01 Jan 1970 99:99:99 GMT",
                "http://h.example/x"
            )
            .unwrap(),
            "wc~h.example~/~odd=1; Path=/archive/"
        );
        assert_eq!(
            rw("old=1; Max-Age=0", "http://h.example/x").unwrap(),
            "wc~h.example~/~old=1; Path=/archive/; Max-Age=0"
        );
        // What the browser would have refused.
        assert!(rw("x=1; Domain=other.example", "http://h.example/").is_err());
        assert!(rw("novalue", "http://h.example/").is_err());
        assert!(rw("=1", "http://h.example/").is_err());
        assert!(rw("x=1", "ftp://h.example/").is_err());
    }

    #[test]
    fn encoding_matches_the_client() {
        assert_eq!(
            encode("/a b;c=d,e\"%~é"),
            "/a%20b%3Bc%3Dd%2Ce%22%25%7E%C3%A9"
        );
        assert_eq!(default_path("/a/b/c"), "/a/b");
        assert_eq!(default_path("/a"), "/");
        assert_eq!(
            host_and_path("http://u@[::1]:80/p?q").unwrap(),
            ("[::1]".into(), "/p".into())
        );
    }
}
