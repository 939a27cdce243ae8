//! Requests that escaped rewriting: a replayed page asked this server for
//! a path outside the collection (`/js/x.js`: a root-relative URL built
//! where neither the server's rewriting nor the client script saw it, as in
//! `import("/x.js")` or an inline `onclick`). Its Referer names the replay
//! URL of the page, so the archived URL it meant is known: the request is
//! redirected there, at the page's time, as pywb does. Nothing else is
//! trusted: only a Referer on this very host, in this collection.

use warchest_replay::archive_url::{self, TimeSpec, normalize_target};

/// The replay URL (root-relative) for `target`, the raw path and query of
/// a request outside the collection, made by the page in `referer` on
/// `host`; `dest` is the request's `Sec-Fetch-Dest`, which picks the
/// modifier. `None` when the Referer is not a replay page of `coll` on
/// `host`.
pub(crate) fn escaped_request(
    coll: &str,
    target: &str,
    referer: Option<&str>,
    host: Option<&str>,
    dest: Option<&str>,
) -> Option<String> {
    let (referer, host) = (referer?.trim(), host?.trim());
    if !target.starts_with('/') || target.starts_with("//") || target.starts_with("/_/") {
        return None;
    }
    let rest = referer
        .strip_prefix("http://")
        .or_else(|| referer.strip_prefix("https://"))?;
    let (rhost, rpath) = rest.split_once('/')?;
    if !rhost.eq_ignore_ascii_case(host) {
        return None;
    }
    let (spec, page) = rpath
        .strip_prefix(coll)?
        .strip_prefix('/')?
        .split_once('/')?;
    let ts = TimeSpec::parse(spec)?;
    let page = normalize_target(page);
    let abs = archive_url::resolve(&page, target).filter(|a| a.starts_with("http"))?;
    let m = match dest.unwrap_or("") {
        "script" | "worker" | "sharedworker" | "serviceworker" => "js_",
        "style" => "cs_",
        "image" => "im_",
        "iframe" | "frame" => "if_",
        "document" => ts.modifier.as_str(),
        "audio" | "video" | "track" | "embed" | "object" | "font" => "oe_",
        _ => "mp_",
    };
    Some(format!("/{coll}/{}{m}/{abs}", ts.timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_replay_pages_of_this_host() {
        let r =
            Some("http://127.0.0.1:8081/archive/20121120120000mp_/http://site.example/a/page.html");
        let h = Some("127.0.0.1:8081");
        assert_eq!(
            escaped_request("archive", "/js/x.js?v=1", r, h, Some("script")).as_deref(),
            Some("/archive/20121120120000js_/http://site.example/js/x.js?v=1")
        );
        assert_eq!(
            escaped_request("archive", "/p", r, h, Some("document")).as_deref(),
            Some("/archive/20121120120000mp_/http://site.example/p")
        );
        assert_eq!(
            escaped_request("archive", "/i.png", r, h, Some("image")).as_deref(),
            Some("/archive/20121120120000im_/http://site.example/i.png")
        );
        assert_eq!(
            escaped_request("archive", "/d.json", r, h, None).as_deref(),
            Some("/archive/20121120120000mp_/http://site.example/d.json")
        );
        // Another host's page, another collection, no Referer, a
        // non-replay Referer, the server's own paths: nothing.
        assert_eq!(
            escaped_request("archive", "/x", r, Some("evil.example"), None),
            None
        );
        assert_eq!(escaped_request("other", "/x", r, h, None), None);
        assert_eq!(escaped_request("archive", "/x", None, h, None), None);
        assert_eq!(
            escaped_request(
                "archive",
                "/x",
                Some("http://127.0.0.1:8081/archive/search"),
                h,
                None
            ),
            None
        );
        assert_eq!(escaped_request("archive", "/_/client.js", r, h, None), None);
        assert_eq!(
            escaped_request("archive", "//evil.example/x", r, h, None),
            None
        );
    }
}
