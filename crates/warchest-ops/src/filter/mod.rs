//! Record filter expressions, in the language of jwarc's `filter` command
//! with a few additions (see docs/commands.md for the grammar).
//!
//! ```
//! use warchest_ops::filter::{Filter, Subject};
//! use warchest::warc::Reader;
//! let f: Filter = r#"warc-type == "resource" && :length < 10"#.parse()?;
//! let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
//! let mut r = Reader::new(&data[..]);
//! let rec = r.next_record()?.expect("a record");
//! assert!(f.matches(&mut Subject::new(rec.header())));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A comparison looks at one field of the record:
//!
//! - `Name` — a WARC header field (the first of that name, ASCII case
//!   ignored);
//! - `http:Name` — a header field of the HTTP message in the block (request
//!   or response), and `http:status` the response's status code;
//! - `:status`, `:method`, `:content-type` (the payload's media type:
//!   the HTTP Content-Type of an HTTP block, else the record's, lower-cased
//!   without parameters), `:uri` (WARC-Target-URI without `<>`), `:host`,
//!   `:type`, `:length` (Content-Length) and `:offset` (the stored offset).
//!
//! As in jwarc, a missing field compares as the empty string, and a value
//! that is not an integer compares as 0 against numbers; `=~` and `!~` match
//! the whole value (the regex is anchored at both ends).

mod parse;

use std::borrow::Cow;
use std::str::FromStr;

use parse::{Expr, FieldRef, Test};
pub use parse::{FilterError, MAX_COMPARISONS, MAX_DEPTH, MAX_EXPR_LEN, MAX_REGEXES};

use warchest::http::HttpHead;
use warchest::warc::{RecordLocation, WarcHeader};

/// A compiled filter expression.
#[derive(Debug, Clone)]
pub struct Filter {
    expr: Expr,
    source: String,
    uses_http: bool,
}

impl Filter {
    /// Parses `expr`.
    ///
    /// # Errors
    /// A syntax error, a bad regular expression, or an expression past the
    /// bounds ([`MAX_EXPR_LEN`], [`MAX_DEPTH`], [`MAX_COMPARISONS`],
    /// [`MAX_REGEXES`]); the error names the column and what was expected.
    pub fn parse(expr: &str) -> Result<Filter, FilterError> {
        let e = parse::parse(expr)?;
        let uses_http = uses_http(&e);
        Ok(Filter {
            expr: e,
            source: expr.to_string(),
            uses_http,
        })
    }

    /// The expression as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when some comparison looks at the HTTP message, so a caller
    /// that cannot supply it lazily knows whether to read it.
    pub fn uses_http(&self) -> bool {
        self.uses_http
    }

    /// Evaluates the expression for one record. The HTTP head is asked of
    /// `subject` only when a comparison that needs it is reached.
    pub fn matches(&self, subject: &mut Subject<'_>) -> bool {
        eval(&self.expr, subject)
    }
}

impl FromStr for Filter {
    type Err = FilterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Filter::parse(s)
    }
}

fn uses_http(e: &Expr) -> bool {
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().any(uses_http),
        Expr::Not(e) => uses_http(e),
        Expr::Cmp(f, _) => f.uses_http(),
    }
}

enum Http<'a> {
    Loaded(Option<&'a HttpHead>),
    Owned(Option<HttpHead>),
    Lazy(&'a mut dyn FnMut() -> Option<HttpHead>),
}

/// What a filter is evaluated against: a record's header, where it is, and
/// its HTTP head (given, or loaded on first use).
pub struct Subject<'a> {
    header: &'a WarcHeader,
    location: Option<RecordLocation>,
    http: Http<'a>,
}

impl<'a> Subject<'a> {
    /// A record known by its header only: HTTP fields are missing.
    pub fn new(header: &'a WarcHeader) -> Self {
        Subject {
            header,
            location: None,
            http: Http::Loaded(None),
        }
    }

    /// Sets where the record is (for `:offset`).
    pub fn location(mut self, location: RecordLocation) -> Self {
        self.location = Some(location);
        self
    }

    /// Sets the HTTP head, already parsed.
    pub fn http(mut self, head: Option<&'a HttpHead>) -> Self {
        self.http = Http::Loaded(head);
        self
    }

    /// Sets a function that reads the HTTP head, called at most once and
    /// only when a comparison needs it.
    pub fn http_loader(mut self, load: &'a mut dyn FnMut() -> Option<HttpHead>) -> Self {
        self.http = Http::Lazy(load);
        self
    }

    fn head(&mut self) -> Option<&HttpHead> {
        if let Http::Lazy(load) = &mut self.http {
            let h = load();
            self.http = Http::Owned(h);
        }
        match &self.http {
            Http::Loaded(h) => *h,
            Http::Owned(h) => h.as_ref(),
            Http::Lazy(_) => None,
        }
    }

    /// The value of a field, `None` when the record has none.
    fn value(&mut self, f: &FieldRef) -> Option<Cow<'_, str>> {
        match f {
            FieldRef::Warc(name) => self.header.get(name),
            FieldRef::Type => self.header.record_type_str(),
            FieldRef::Uri => self.header.target_uri(),
            FieldRef::Host => {
                let uri = self.header.target_uri()?;
                uri_host(&uri).map(|h| Cow::Owned(h.to_ascii_lowercase()))
            }
            FieldRef::Length => self
                .header
                .content_length()
                .map(|n| Cow::Owned(n.to_string())),
            FieldRef::Offset => self.location.map(|l| Cow::Owned(l.offset.to_string())),
            FieldRef::Http(name) => {
                let v = self.head()?.fields().value(name)?;
                Some(Cow::Owned(v.into_owned()))
            }
            FieldRef::Status => {
                let h = self.head()?;
                h.status()
                    .filter(|_| h.is_response())
                    .map(|s| Cow::Owned(s.to_string()))
            }
            FieldRef::Method => {
                let m = self.head()?.method()?;
                Some(Cow::Owned(String::from_utf8_lossy(m).into_owned()))
            }
            FieldRef::ContentType => {
                if self.header.is_http() {
                    self.head()?.media_type().map(Cow::Owned)
                } else {
                    let ct = self.header.content_type()?;
                    warchest::http::media_type(ct.as_bytes()).map(Cow::Owned)
                }
            }
        }
    }
}

/// Integer value of a field as jwarc reads it: missing or not a number is 0.
fn number(v: Option<&str>) -> i64 {
    v.and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or(0)
}

fn eval(e: &Expr, s: &mut Subject<'_>) -> bool {
    match e {
        Expr::And(v) => v.iter().all(|e| eval(e, s)),
        Expr::Or(v) => v.iter().any(|e| eval(e, s)),
        Expr::Not(e) => !eval(e, s),
        Expr::Cmp(f, t) => {
            let v = s.value(f);
            let text = v.as_deref().unwrap_or("");
            match t {
                Test::StrEq(x) => text == x,
                Test::StrNe(x) => text != x,
                Test::NumEq(n) => number(v.as_deref()) == *n,
                Test::NumNe(n) => number(v.as_deref()) != *n,
                Test::Lt(n) => number(v.as_deref()) < *n,
                Test::Le(n) => number(v.as_deref()) <= *n,
                Test::Gt(n) => number(v.as_deref()) > *n,
                Test::Ge(n) => number(v.as_deref()) >= *n,
                Test::Match(r) => r.is_match(text),
                Test::NoMatch(r) => !r.is_match(text),
            }
        }
    }
}

/// The host of an absolute URI (`scheme://[userinfo@]host[:port]/...`), as
/// written: brackets of an IPv6 literal kept, port and userinfo removed.
/// `None` for URIs without an authority (`urn:`, `dns:`, `mailto:`).
pub fn uri_host(uri: &str) -> Option<&str> {
    let uri = uri.trim();
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return None;
    }
    let rest = uri[colon + 1..].strip_prefix("//")?;
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let auth = &rest[..end];
    let auth = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let host = if auth.starts_with('[') {
        auth.find(']').map_or(auth, |i| &auth[..=i])
    } else {
        auth.split(':').next().unwrap_or(auth)
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warchest::fields::Fields;
    use warchest::warc::Version;

    fn header(fields: &[(&str, &str)]) -> WarcHeader {
        let mut f = Fields::with_start_line(b"WARC/1.1");
        for (n, v) in fields {
            f.append(n, v).unwrap();
        }
        WarcHeader::from_fields(Version::V1_1, f)
    }

    fn head(text: &str) -> HttpHead {
        HttpHead::parse(text.as_bytes()).unwrap().unwrap().0
    }

    #[test]
    fn evaluates() {
        let resp = header(&[
            ("WARC-Type", "response"),
            ("WARC-Target-URI", "<https://User@WWW.Example.com:8443/a?b>"),
            ("Content-Type", "application/http; msgtype=response"),
            ("Content-Length", "1234"),
        ]);
        let res_head = head(
            "HTTP/1.1 404 Not Found\r\nContent-Type: Text/HTML; charset=utf-8\r\nX-N: 7\r\n\r\n",
        );
        let info = header(&[
            ("WARC-Type", "warcinfo"),
            ("Content-Type", "application/warc-fields"),
            ("Content-Length", "x"),
        ]);
        // (expression, response record, warcinfo record)
        let cases: &[(&str, bool, bool)] = &[
            ("warc-type == \"response\"", true, false),
            ("WARC-TYPE != \"response\"", false, true),
            (":type == \"warcinfo\"", false, true),
            ("http:status == 404", true, false),
            (":status == 404 && :status != 200", true, false),
            (":status < 500 && :status >= 400", true, false),
            // Missing compares as "" and as 0, as in jwarc.
            (":status == 0", false, true),
            ("http:x-n > 6 && http:X-N <= 7", true, false),
            ("http:missing == \"\"", true, true),
            (":content-type == \"text/html\"", true, false),
            (":content-type =~ \"text/.*\"", true, false),
            (":content-type == \"application/warc-fields\"", false, true),
            // Anchored: a part of the value is not a match.
            (":content-type =~ \"text\"", false, false),
            (":content-type !~ \"image/.*\"", true, true),
            (
                ":uri == \"https://User@WWW.Example.com:8443/a?b\"",
                true,
                false,
            ),
            (":host == \"www.example.com\"", true, false),
            (":length > 1000", true, false),
            // Not a number: 0.
            (":length == 0", false, true),
            ("!(warc-type == \"response\")", false, true),
            (
                "warc-type == \"warcinfo\" || http:status == 404",
                true,
                true,
            ),
            // No location given: missing, so 0.
            ("(:offset == 0)", true, true),
        ];
        for (src, want_resp, want_info) in cases {
            let f = Filter::parse(src).unwrap();
            let mut s = Subject::new(&resp).http(Some(&res_head));
            assert_eq!(f.matches(&mut s), *want_resp, "{src} on the response");
            let mut s = Subject::new(&info);
            assert_eq!(f.matches(&mut s), *want_info, "{src} on the warcinfo");
        }
    }

    #[test]
    fn loads_the_head_lazily_and_once() {
        let resp = header(&[
            ("WARC-Type", "request"),
            ("Content-Type", "application/http; msgtype=request"),
        ]);
        let mut calls = 0;
        let mut load = || {
            calls += 1;
            Some(head("POST /x HTTP/1.1\r\nHost: a\r\n\r\n"))
        };
        let f = Filter::parse("warc-type == \"response\" && :status == 200").unwrap();
        assert!(f.uses_http());
        assert!(!f.matches(&mut Subject::new(&resp).http_loader(&mut load)));
        let f = Filter::parse(":method == \"POST\" && http:host == \"a\" && :status == 0").unwrap();
        assert!(f.matches(&mut Subject::new(&resp).http_loader(&mut load)));
        assert_eq!(calls, 1, "not needed by the first, once for the second");
        assert!(!Filter::parse("a == 1").unwrap().uses_http());
    }

    #[test]
    fn offsets() {
        let h = header(&[("WARC-Type", "response")]);
        let loc = RecordLocation {
            index: 3,
            offset: 777,
            codec: warchest::codec::Codec::Gzip,
            offset_in_member: 0,
            header_len: 10,
        };
        let f = Filter::parse(":offset == 777").unwrap();
        assert!(f.matches(&mut Subject::new(&h).location(loc)));
        assert!(!f.matches(&mut Subject::new(&h)));
    }

    #[test]
    fn hosts() {
        let cases: &[(&str, Option<&str>)] = &[
            ("http://example.com/", Some("example.com")),
            ("https://u:p@Example.com:80/x", Some("Example.com")),
            ("http://[::1]:8080/", Some("[::1]")),
            ("http://example.com?x", Some("example.com")),
            ("http://example.com", Some("example.com")),
            ("dns:example.com", None),
            ("urn:uuid:x", None),
            ("http:///path", None),
            ("no scheme", None),
            ("", None),
        ];
        for (uri, want) in cases {
            assert_eq!(uri_host(uri), *want, "{uri}");
        }
    }
}
