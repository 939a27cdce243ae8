//! The few URL operations a capture needs: split an absolute `http`,
//! `https` or `ftp` URL into its parts, and resolve a redirect's Location
//! against the URL it came from (RFC 3986 section 5.2).
//!
//! Hand-written rather than a general URL crate: a capture must send the
//! request target as the user or the server wrote it (no re-encoding), and
//! the rules needed here are short.

use std::fmt;

use super::CaptureError;

/// A URL scheme a capture can fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `http`
    Http,
    /// `https`
    Https,
    /// `ftp`
    Ftp,
}

impl Scheme {
    /// The scheme's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Ftp => "ftp",
        }
    }

    /// The port when the URL names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
            Scheme::Ftp => 21,
        }
    }
}

/// An absolute URL, split.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Url {
    /// The scheme.
    pub scheme: Scheme,
    /// `user[:password]` before `@`, as written.
    pub userinfo: Option<String>,
    /// The host, lower-cased; an IPv6 literal without its brackets.
    pub host: String,
    /// The port as written, if any.
    pub port: Option<u16>,
    /// Path and query as written (`/` when empty), without the fragment.
    pub path_and_query: String,
}

impl Url {
    /// Parses an absolute URL of a scheme a capture can fetch.
    ///
    /// # Errors
    /// Another scheme, no host, a bad port, or control characters or spaces.
    pub fn parse(text: &str) -> Result<Url, CaptureError> {
        let bad = |why: &str| CaptureError::Url(format!("{text:?}: {why}"));
        let text = text.trim();
        if text.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("holds spaces or control characters"));
        }
        let (scheme, rest) = text.split_once("://").ok_or_else(|| bad("not absolute"))?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            "ftp" => Scheme::Ftp,
            _ => return Err(bad("scheme not http, https or ftp")),
        };
        let rest = rest.split('#').next().unwrap_or("");
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_string()), h),
            None => (None, authority),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            match after {
                "" => (h, None),
                p => (h, Some(p.strip_prefix(':').ok_or_else(|| bad("bad port"))?)),
            }
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        // An IP literal in brackets, or a name or IPv4 address: a bracket
        // in it, or a colon outside brackets, would print as another URL
        // (or none).
        if host.contains(['[', ']']) || (!hostport.starts_with('[') && host.contains(':')) {
            return Err(bad("bad host"));
        }
        let port = match port {
            None | Some("") => None,
            Some(p) => Some(p.parse::<u16>().map_err(|_| bad("bad port"))?),
        };
        let path_and_query = if path.is_empty() {
            "/".to_string()
        } else if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Ok(Url {
            scheme,
            userinfo,
            host: host.to_ascii_lowercase(),
            port,
            path_and_query,
        })
    }

    /// The port to connect to.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(self.scheme.default_port())
    }

    /// `host` or `host:port` as the Host header wants it (the port only
    /// when not the scheme's default), IPv6 literals in brackets.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(p) if p != self.scheme.default_port() => format!("{host}:{p}"),
            _ => host,
        }
    }

    /// `scheme://authority`, the key of a host's robots.txt and politeness.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.authority())
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.path_and_query
            .split('?')
            .next()
            .unwrap_or(&self.path_and_query)
    }

    /// Resolves a reference (a redirect's Location) against this URL.
    ///
    /// # Errors
    /// The result is not a URL a capture can fetch.
    pub fn join(&self, reference: &str) -> Result<Url, CaptureError> {
        let bad = |e: url::ParseError| CaptureError::Url(format!("{reference}: {e}"));
        let base = url::Url::parse(&self.to_string()).map_err(bad)?;
        let mut joined = base.join(reference.trim()).map_err(bad)?;
        // A fragment is never sent.
        joined.set_fragment(None);
        Url::parse(joined.as_str())
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.scheme.as_str())?;
        f.write_str("://")?;
        if let Some(u) = &self.userinfo {
            write!(f, "{u}@")?;
        }
        write!(f, "{}{}", self.authority(), self.path_and_query)
    }
}

/// Decodes `%XX` escapes (for FTP paths); bad escapes are kept as written.
pub fn percent_decode(s: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_parts() {
        let u = Url::parse("HTTPS://User:pw@Example.COM:8443/a/b?x=1#frag").unwrap();
        assert_eq!(u.scheme, Scheme::Https);
        assert_eq!(u.userinfo.as_deref(), Some("User:pw"));
        assert_eq!(u.host, "example.com");
        assert_eq!(u.port, Some(8443));
        assert_eq!(u.path_and_query, "/a/b?x=1");
        assert_eq!(u.authority(), "example.com:8443");
        let u = Url::parse("http://[::1]:80?q").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.authority(), "[::1]");
        assert_eq!(u.path_and_query, "/?q");
        assert_eq!(u.to_string(), "http://[::1]/?q");
        for bad in [
            "mailto:x",
            "http://",
            "http://h:99999/",
            "http://a b/",
            "/rel",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    /// What the capture_wire fuzz target found: hosts with a colon outside
    /// brackets, or a bracket, were taken, and printed as a URL that does
    /// not parse (`http://1:]8:0?q` as `http://[1:]8]:0/?q`) or parses
    /// otherwise. They are refused; what parses prints back as itself.
    #[test]
    fn hosts_that_print_as_another_url_are_refused() {
        for bad in [
            "http://1:]8:0?q",
            "http://a:b:80/",
            "http://a:b:/",
            "http://[[]/",
            "http://x]/",
            "http://[a]b]/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
        for good in [
            "http://[::1]:8080/a",
            "http://[v1.x]/",
            "http://h:/p",
            "ftp://u:p@h/",
        ] {
            let u = Url::parse(good).unwrap();
            assert_eq!(Url::parse(&u.to_string()).unwrap().host, u.host, "{good}");
        }
    }

    #[test]
    fn joins_references() {
        let b = Url::parse("http://h/a/b/c?q").unwrap();
        let j = |r: &str| b.join(r).unwrap().to_string();
        assert_eq!(j("d"), "http://h/a/b/d");
        assert_eq!(j("../d?x"), "http://h/a/d?x");
        assert_eq!(j("../../../d"), "http://h/d");
        assert_eq!(j("/x/./y/../z"), "http://h/x/z");
        assert_eq!(j("?n"), "http://h/a/b/c?n");
        assert_eq!(j(""), "http://h/a/b/c?q");
        assert_eq!(j("//other:81/p"), "http://other:81/p");
        assert_eq!(j("https://s/"), "https://s/");
        assert_eq!(j("./"), "http://h/a/b/");
    }

    #[test]
    fn decodes_percent() {
        assert_eq!(percent_decode("a%20b%zz%4"), b"a b%zz%4");
    }
}
