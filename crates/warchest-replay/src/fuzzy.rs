//! Fuzzy matching of URLs, as pywb's rules do it: a URL with no capture
//! of its own (a cache-busting parameter, a session id, a JSONP callback
//! name made up at run time) is served the nearest capture of the same
//! resource, the URL that is the same once what the rules name is taken
//! out.
//!
//! The rules are data: [`FuzzyRules::default`] is the shipped file
//! (`fuzzy-rules.txt`, its form described at its top), and
//! `warchest serve --fuzzy-rules FILE` adds more ([`FuzzyRules::load`]).
//!
//! ```
//! use warchest_replay::fuzzy::FuzzyRules;
//! let r = FuzzyRules::default();
//! assert_eq!(
//!     r.key("http://example.com/a.json?_=1700000000000&x=1"),
//!     r.key("https://www.example.com/a.json?x=1&_=1600000000000"),
//! );
//! assert_ne!(r.key("http://example.com/a.json?x=1"), r.key("http://example.com/a.json?x=2"));
//! ```

use std::io::{self, Read};
use std::path::Path;

use regex::Regex;
use warchest::error::{Error, ErrorKind, Result};

/// The shipped rules.
pub const DEFAULT_RULES: &str = include_str!("fuzzy-rules.txt");

/// What a rule takes out of a URL.
#[derive(Debug, Clone)]
enum What {
    /// A query parameter by name (lower case), or by prefix.
    Param { name: String, prefix: bool },
    /// A path parameter (`;name=value`) by name (lower case).
    PathParam(String),
    /// Any parameter whose value matches.
    Value(Regex),
    /// Any parameter whose name matches.
    Name(Regex),
}

/// One rule: what it takes out, whether it is a JSONP callback, and the
/// hosts it applies to.
#[derive(Debug, Clone)]
struct Rule {
    what: What,
    jsonp: bool,
    /// `None`: every host; else the host or its subdomains.
    host: Option<String>,
}

impl Rule {
    fn applies_to(&self, host: &str) -> bool {
        self.host.as_deref().is_none_or(|h| {
            host == h || host.strip_suffix(h).is_some_and(|rest| rest.ends_with('.'))
        })
    }

    fn drops_param(&self, name: &str, value: &str) -> bool {
        match &self.what {
            What::Param { name: n, prefix } => {
                let lower = name.to_ascii_lowercase();
                if *prefix {
                    lower.starts_with(n.as_str())
                } else {
                    lower == *n
                }
            }
            What::Value(re) => re.is_match(value),
            What::Name(re) => re.is_match(name),
            What::PathParam(_) => false,
        }
    }
}

/// A set of fuzzy-matching rules.
#[derive(Debug, Clone)]
pub struct FuzzyRules {
    rules: Vec<Rule>,
}

impl Default for FuzzyRules {
    /// The shipped rules (`fuzzy-rules.txt`).
    fn default() -> FuzzyRules {
        // The shipped file is checked by a unit test: it always parses.
        FuzzyRules::parse(DEFAULT_RULES, "fuzzy-rules.txt").unwrap_or(FuzzyRules { rules: vec![] })
    }
}

impl FuzzyRules {
    /// No rules: fuzzy matching off.
    pub fn none() -> FuzzyRules {
        FuzzyRules { rules: Vec::new() }
    }

    /// Parses rules in the form of `fuzzy-rules.txt`; `name` (a file name)
    /// is what errors cite, with the line.
    ///
    /// # Errors
    /// A line is not a rule, or its regular expression does not compile.
    pub fn parse(text: &str, name: &str) -> Result<FuzzyRules> {
        let mut rules = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: String| {
                Error::new(ErrorKind::Usage(format!(
                    "{name}, line {}: {why}: {line:?}",
                    i + 1
                )))
            };
            let mut words: Vec<&str> = line.split_whitespace().collect();
            let host = match words.last() {
                Some(w) if w.starts_with('@') && words.len() > 2 => {
                    let h = w[1..].trim_start_matches('.').to_ascii_lowercase();
                    words.pop();
                    Some(h)
                }
                _ => None,
            };
            let [kind, arg] = words[..] else {
                return Err(bad("a rule is KIND ARGUMENT [@HOST]".into()));
            };
            let regex = |s: &str| {
                Regex::new(&format!("^(?:{s})$"))
                    .map_err(|e| bad(format!("regular expression: {e}")))
            };
            let (what, jsonp) = match kind {
                "param" | "jsonp" => {
                    let lower = arg.to_ascii_lowercase();
                    let (name, prefix) = match lower.strip_suffix('*') {
                        Some(p) => (p.to_string(), true),
                        None => (lower, false),
                    };
                    (What::Param { name, prefix }, kind == "jsonp")
                }
                "path-param" => (What::PathParam(arg.to_ascii_lowercase()), false),
                "value" => (What::Value(regex(arg)?), false),
                "name" => (What::Name(regex(arg)?), false),
                k => return Err(bad(format!("unknown kind {k:?}"))),
            };
            rules.push(Rule { what, jsonp, host });
        }
        Ok(FuzzyRules { rules })
    }

    /// The shipped rules and those of `path`.
    ///
    /// # Errors
    /// The file cannot be read or has a line that is not a rule.
    pub fn load(path: &Path) -> Result<FuzzyRules> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::from(io::Error::new(
                e.kind(),
                format!("fuzzy rules {}: {e}", path.display()),
            ))
        })?;
        let mut rules = FuzzyRules::default();
        rules
            .rules
            .extend(FuzzyRules::parse(&text, &path.display().to_string())?.rules);
        Ok(rules)
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are none (fuzzy matching off).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The URL as the rules see it: no scheme, host lower case without
    /// `www.`, path without ignored path parameters, query without ignored
    /// parameters, the others sorted. Two URLs with the same key are the
    /// same resource. `None` when `url` is not an http(s) URL.
    pub fn key(&self, url: &str) -> Option<String> {
        let p = Parts::of(url)?;
        let host = p.host.strip_prefix("www.").unwrap_or(&p.host);
        let rules: Vec<&Rule> = self.rules.iter().filter(|r| r.applies_to(host)).collect();
        let mut path = String::new();
        for (i, seg) in p.path.split('/').enumerate() {
            if i > 0 {
                path.push('/');
            }
            let mut pieces = seg.split(';');
            path.push_str(pieces.next().unwrap_or(""));
            for pp in pieces {
                let name = pp.split('=').next().unwrap_or("").to_ascii_lowercase();
                let dropped = rules
                    .iter()
                    .any(|r| matches!(&r.what, What::PathParam(n) if *n == name));
                if !dropped {
                    path.push(';');
                    path.push_str(pp);
                }
            }
        }
        let mut kept: Vec<&str> = p
            .query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .filter(|kv| {
                let (n, v) = kv.split_once('=').unwrap_or((kv, ""));
                !rules.iter().any(|r| r.drops_param(n, v))
            })
            .collect();
        kept.sort_unstable();
        Some(format!("{host}{path}?{}", kept.join("&")))
    }

    /// Where the captures that may match `url` are: the URL without query
    /// and path parameters (a prefix of their index keys).
    pub fn search_prefix(url: &str) -> Option<String> {
        let p = Parts::of(url)?;
        let path: Vec<&str> = p
            .path
            .split('/')
            .map(|s| s.split(';').next().unwrap_or(""))
            .collect();
        Some(format!("{}://{}{}", p.scheme, p.host, path.join("/")))
    }

    /// The JSONP callback name `url` asks for (the value of a `jsonp`
    /// rule's parameter), if any and if it is a plain name (letters,
    /// digits, `_`, `$`, `.`), as a callback must be to be put into a
    /// script.
    pub fn jsonp_callback(&self, url: &str) -> Option<String> {
        let p = Parts::of(url)?;
        let host = p.host.strip_prefix("www.").unwrap_or(&p.host).to_string();
        p.query.split('&').find_map(|kv| {
            let (n, v) = kv.split_once('=')?;
            let is_cb = self
                .rules
                .iter()
                .any(|r| r.jsonp && r.applies_to(&host) && r.drops_param(n, v));
            let plain = !v.is_empty()
                && v.len() <= 200
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_$.".contains(&b))
                && !v.as_bytes()[0].is_ascii_digit();
            (is_cb && plain).then(|| v.to_string())
        })
    }

    /// For a capture of `captured` served for `asked`: the JSONP callback
    /// name in the response and the one to call instead, when they differ.
    pub fn jsonp_rename(&self, asked: &str, captured: &str) -> Option<(String, String)> {
        let new = self.jsonp_callback(asked)?;
        let old = self.jsonp_callback(captured)?;
        (new != old).then_some((old, new))
    }
}

/// An http(s) URL's pieces, as the rules need them.
struct Parts {
    scheme: String,
    host: String,
    path: String,
    query: String,
}

impl Parts {
    fn of(url: &str) -> Option<Parts> {
        let (scheme, rest) = url.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let rest = rest.split('#').next().unwrap_or("");
        let (before_q, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = match before_q.find('/') {
            Some(i) => before_q.split_at(i),
            None => (before_q, "/"),
        };
        let authority = authority.rsplit('@').next().unwrap_or("");
        let host = authority.to_ascii_lowercase();
        let host = match scheme.as_str() {
            "http" => host.strip_suffix(":80").map(str::to_string).unwrap_or(host),
            _ => host
                .strip_suffix(":443")
                .map(str::to_string)
                .unwrap_or(host),
        };
        Some(Parts {
            scheme,
            host,
            path: path.to_string(),
            query: query.to_string(),
        })
    }
}

/// Most bytes at the start of a JSONP response looked at for the callback.
const JSONP_HEAD: usize = 4096;

/// A reader that gives a JSONP response with the callback renamed: the
/// occurrences of the archived callback name in its first 4 KiB (where a
/// JSONP response calls it) become the name the page asked for.
pub struct JsonpRename<R> {
    inner: R,
    old: Vec<u8>,
    new: Vec<u8>,
    head: Option<io::Cursor<Vec<u8>>>,
}

impl<R: Read> JsonpRename<R> {
    /// Renames `old` to `new` in what `inner` gives.
    pub fn new(inner: R, old: &str, new: &str) -> JsonpRename<R> {
        JsonpRename {
            inner,
            old: old.as_bytes().to_vec(),
            new: new.as_bytes().to_vec(),
            head: None,
        }
    }

    fn fill_head(&mut self) -> io::Result<()> {
        let mut buf = Vec::with_capacity(JSONP_HEAD);
        (&mut self.inner)
            .take(JSONP_HEAD as u64)
            .read_to_end(&mut buf)?;
        let mut out = Vec::with_capacity(buf.len() + self.new.len());
        let mut i = 0;
        while i < buf.len() {
            let ident = |b: u8| b.is_ascii_alphanumeric() || b"_$".contains(&b);
            if buf[i..].starts_with(&self.old)
                && (i == 0 || !ident(buf[i - 1]))
                && buf.get(i + self.old.len()).is_none_or(|&b| !ident(b))
            {
                out.extend_from_slice(&self.new);
                i += self.old.len();
            } else {
                out.push(buf[i]);
                i += 1;
            }
        }
        self.head = Some(io::Cursor::new(out));
        Ok(())
    }
}

impl<R: Read> Read for JsonpRename<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.head.is_none() {
            self.fill_head()?;
        }
        if let Some(h) = &mut self.head {
            let n = h.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
        }
        self.inner.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_rules_parse() {
        let r = FuzzyRules::parse(DEFAULT_RULES, "fuzzy-rules.txt").unwrap();
        assert!(r.len() > 20);
        assert_eq!(FuzzyRules::default().len(), r.len());
    }

    #[test]
    fn cache_busters_and_sessions_match() {
        let r = FuzzyRules::default();
        let k = |u: &str| r.key(u).unwrap();
        let base = k("http://example.com/api/data.json?id=7");
        for u in [
            "http://example.com/api/data.json?id=7&_=1700000000123",
            "https://www.example.com/api/data.json?_=1&id=7",
            "http://EXAMPLE.com:80/api/data.json?cb=x&id=7&rand=0.123",
            "http://example.com/api/data.json?id=7&nocache=0.84712934",
            "http://example.com/api/data.json?id=7&PHPSESSID=abc",
            "http://example.com/api/data.json;jsessionid=ABC123?id=7",
            "http://example.com/api/data.json?id=7&utm_source=x&utm_medium=y",
            "http://example.com/api/data.json?1700000000&id=7",
            "http://example.com/api/data.json?id=7&v=1699999999",
            "http://example.com/api/data.json?id=7#frag",
        ] {
            assert_eq!(k(u), base, "{u}");
        }
        for u in [
            "http://example.com/api/data.json?id=8",
            "http://example.com/api/data.json",
            "http://example.com/api/data.json?id=7&page=2",
            "http://example.com/api/other.json?id=7",
            "http://example.org/api/data.json?id=7",
            "http://example.com/api/data.json;x=1?id=7",
        ] {
            assert_ne!(k(u), base, "{u}");
        }
        assert_eq!(r.key("ftp://example.com/"), None);
        assert_eq!(r.key("not a url"), None);
    }

    #[test]
    fn prefixes_and_jsonp() {
        let r = FuzzyRules::default();
        assert_eq!(
            FuzzyRules::search_prefix("https://a.example/x/y;jsessionid=1?q=2").as_deref(),
            Some("https://a.example/x/y")
        );
        assert_eq!(
            r.jsonp_rename(
                "http://a.example/j?callback=jQuery_999&_=2",
                "http://a.example/j?callback=jQuery_123&_=1"
            ),
            Some(("jQuery_123".into(), "jQuery_999".into()))
        );
        assert_eq!(
            r.jsonp_rename(
                "http://a.example/j?callback=cb1",
                "http://a.example/j?callback=cb1"
            ),
            None
        );
        // Not a plain name: never put into a script.
        assert_eq!(
            r.jsonp_callback("http://a.example/j?callback=alert(1)//"),
            None
        );
        assert_eq!(r.jsonp_callback("http://a.example/j?callback=1abc"), None);
    }

    #[test]
    fn user_rules_extend_and_scope_by_host() {
        let mut r = FuzzyRules::default();
        r.rules.extend(
            FuzzyRules::parse(
                "# mine\nparam session @shop.example\nname x[0-9]+\n",
                "mine.txt",
            )
            .unwrap()
            .rules,
        );
        assert_eq!(
            r.key("http://www.shop.example/a?session=1&q=1"),
            r.key("http://shop.example/a?q=1")
        );
        assert_eq!(
            r.key("http://eu.shop.example/a?session=1"),
            r.key("http://eu.shop.example/a")
        );
        assert_ne!(
            r.key("http://other.example/a?session=1"),
            r.key("http://other.example/a")
        );
        assert_eq!(
            r.key("http://o.example/a?x12=5"),
            r.key("http://o.example/a")
        );
        let e = FuzzyRules::parse("param\n", "bad.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.txt, line 1"), "{e}");
        let e = FuzzyRules::parse("\n\nvalue (\n", "bad.txt")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("regular expression"),
            "{e}"
        );
        let e = FuzzyRules::parse("glob *\n", "bad.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown kind"), "{e}");
        assert!(FuzzyRules::none().is_empty());
    }

    #[test]
    fn jsonp_response_renamed_at_its_start_only() {
        let body = b"/**/ typeof cbOld === 'function' && cbOld({\"a\": \"cbOld\"});".to_vec();
        let mut out = String::new();
        JsonpRename::new(&body[..], "cbOld", "cbNew")
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(
            out,
            "/**/ typeof cbNew === 'function' && cbNew({\"a\": \"cbNew\"});"
        );
        // A name inside a longer name is not the callback.
        let mut out = String::new();
        JsonpRename::new(&b"cbOldX(1)"[..], "cbOld", "cbNew")
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "cbOldX(1)");
        // Past the first 4 KiB the body passes as it is.
        let mut long = vec![b' '; 5000];
        long.extend_from_slice(b"cbOld(1)");
        let mut out = Vec::new();
        JsonpRename::new(&long[..], "cbOld", "cbNew")
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, long);
    }
}
