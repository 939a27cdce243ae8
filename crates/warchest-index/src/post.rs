//! The query pywb and cdxj-indexer append to the url key of POST and PUT
//! requests (`__wb_method=post&...`), so that replay can tell requests with
//! different bodies apart. The body becomes a query string by its
//! Content-Type, following cdxj-indexer 1.5 (`postquery.py`) and the IIPC
//! guideline for non-GET requests:
//!
//! - `application/x-www-form-urlencoded`: the body as UTF-8 text, `+` and
//!   `%XX` decoded (not UTF-8: as binary, below);
//! - `multipart/*`: the form fields, URL-encoded (unparsable: as binary);
//! - `application/json`: the JSON flattened to `name=value` pairs, repeated
//!   names numbered `name.2_`, `name.3_`..., literals as python writes them
//!   (`True`, `False`, `None`, `1.0`); JSON lines are read line by line;
//!   unparsable: nothing;
//! - `text/plain`: as JSON when it parses, else as binary;
//! - anything else (AMF included, see docs/indexing.md): `__wb_post_data=`
//!   and the body in base64.
//!
//! The query is cut to 4096 characters.

use data_encoding::BASE64;

/// Longest query appended, in characters.
pub const MAX_QUERY_CHARS: usize = 4096;

/// The query for a request body, as cdxj-indexer computes it. `mime` is the
/// request's Content-Type as written (cdxj-indexer matches prefixes
/// case-sensitively). `None` when cdxj-indexer has none either (an AMF body
/// it cannot decode, which warchest never produces; kept for the type).
pub fn body_query(mime: &str, body: &[u8]) -> Option<String> {
    let query = if mime.starts_with("application/x-www-form-urlencoded") {
        match std::str::from_utf8(body) {
            Ok(text) => unquote_plus(text),
            Err(_) => binary(body),
        }
    } else if mime.starts_with("multipart/") {
        multipart(mime, body).unwrap_or_else(|| binary(body))
    } else if mime.starts_with("application/json") {
        json_query(body).unwrap_or_default()
    } else if mime.starts_with("text/plain") {
        json_query(body).unwrap_or_else(|| binary(body))
    } else {
        binary(body)
    };
    Some(query.chars().take(MAX_QUERY_CHARS).collect())
}

fn binary(body: &[u8]) -> String {
    format!("__wb_post_data={}", BASE64.encode(body))
}

/// python's `urllib.parse.unquote_plus` on text: `+` is a space, `%XX`
/// escapes are decoded within runs of ASCII and each run decoded as UTF-8
/// with replacement.
pub(crate) fn unquote_plus(text: &str) -> String {
    // A run of non-ASCII text has no `%` and starts with a lead byte, so
    // decoding the whole as UTF-8 gives what decoding run by run gives.
    percent_encoding::percent_decode_str(&text.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// What python's `quote_plus` escapes: all but ASCII letters, digits and
/// `_.-~` (space too, written `+` below).
const QUOTE_PLUS_ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'_')
    .remove(b'.')
    .remove(b'-')
    .remove(b'~');

/// python's `quote_plus` (safe characters: ASCII letters, digits, `_.-~`).
pub(crate) fn quote_plus(s: &[u8], out: &mut String) {
    for piece in percent_encoding::percent_encode(s, QUOTE_PLUS_ESCAPED) {
        // A space is the only byte encoded `%20` (a `%` is `%25`).
        match piece {
            "%20" => out.push('+'),
            p => out.push_str(p),
        }
    }
}

fn urlencode<'a>(pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.enumerate() {
        if i > 0 {
            out.push('&');
        }
        quote_plus(k, &mut out);
        out.push('=');
        quote_plus(v, &mut out);
    }
    out
}

/// Form fields of a multipart body, URL-encoded; `None` when the body does
/// not parse.
fn multipart(mime: &str, body: &[u8]) -> Option<String> {
    // cdxj-indexer takes what follows the first "boundary=" (up to a second).
    let boundary = mime.split("boundary=").nth(1)?;
    if boundary.is_empty() {
        return None;
    }
    let delim = format!("--{boundary}");
    let delim = delim.as_bytes();
    let find = |hay: &[u8], from: usize| -> Option<usize> {
        memchr::memmem::find(&hay[from..], delim).map(|i| i + from)
    };
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut at = find(body, 0)? + delim.len();
    loop {
        if body[at..].starts_with(b"--") {
            break;
        }
        let line_end = memchr::memchr(b'\n', &body[at..])? + at + 1;
        let head_end = warchest::http::find_head_end(&body[line_end..]).map(|n| n + line_end);
        let (head, content_start) = match head_end {
            Some(e) => (&body[line_end..e], e),
            // A part without headers starts with its blank line.
            None if body[line_end..].starts_with(b"\r\n") => (&b""[..], line_end + 2),
            None => return None,
        };
        let next = find(body, content_start)?;
        let mut content = &body[content_start..next];
        if let Some(c) = content.strip_suffix(b"\r\n") {
            content = c;
        } else if let Some(c) = content.strip_suffix(b"\n") {
            content = c;
        }
        let name = disposition_param(head, "name")?;
        pairs.push((name, content.to_vec()));
        at = next + delim.len();
    }
    Some(urlencode(pairs.iter().map(|(k, v)| (&k[..], &v[..]))))
}

/// A parameter of the part's Content-Disposition header.
fn disposition_param(head: &[u8], param: &str) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(head);
    const NAME: &str = "content-disposition:";
    let line = text.lines().find(|l| {
        l.as_bytes()
            .get(..NAME.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(NAME.as_bytes()))
    })?;
    for p in line.get(NAME.len()..)?.split(';').skip(1) {
        let p = p.trim();
        if let Some((k, v)) = p.split_once('=')
            && k.trim().eq_ignore_ascii_case(param)
        {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(v);
            return Some(v.as_bytes().to_vec());
        }
    }
    None
}

/// The flattened JSON query, `None` when the body is not JSON (or JSON
/// lines) python would read.
pub(crate) fn json_query(body: &[u8]) -> Option<String> {
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let mut data = Flat::default();
    match json::parse(body) {
        Ok(v) => data.add(&v, ""),
        Err(()) => {
            if !body.contains(&b'\n') {
                return None;
            }
            for line in body.split(|&b| b == b'\n') {
                let v = json::parse(line).ok()?;
                data.add(&v, "");
            }
        }
    }
    Some(urlencode(
        data.pairs.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())),
    ))
}

/// python's dict of flattened names, insertion ordered.
#[derive(Default)]
struct Flat {
    pairs: Vec<(String, String)>,
    dupes: Vec<(String, u64)>,
}

impl Flat {
    fn key(&mut self, n: &str) -> String {
        if !self.pairs.iter().any(|(k, _)| k == n) {
            return n.to_string();
        }
        let count = match self.dupes.iter_mut().find(|(k, _)| k == n) {
            Some((_, c)) => {
                *c += 1;
                *c
            }
            None => {
                self.dupes.push((n.to_string(), 2));
                2
            }
        };
        format!("{n}.{count}_")
    }

    fn set(&mut self, k: String, v: String) {
        match self.pairs.iter_mut().find(|(key, _)| *key == k) {
            Some((_, val)) => *val = v,
            None => self.pairs.push((k, v)),
        }
    }

    fn add(&mut self, v: &json::Value, name: &str) {
        match v {
            json::Value::Object(items) => {
                for (n, v) in items {
                    self.add(v, n);
                }
            }
            json::Value::Array(items) => {
                for v in items {
                    self.add(v, name);
                }
            }
            json::Value::Scalar(s) => {
                if !name.is_empty() {
                    let k = self.key(name);
                    self.set(k, s.clone());
                }
            }
        }
    }
}

/// A JSON reader with python's `json.loads` grammar (NaN and Infinity
/// accepted, control characters in strings refused, duplicate keys keeping
/// the first position and the last value) whose scalars are kept as python's
/// `str()` writes them.
mod json {
    pub enum Value {
        Object(Vec<(String, Value)>),
        Array(Vec<Value>),
        Scalar(String),
    }

    /// Deeper nesting fails, as python's recursion limit makes it.
    const MAX_DEPTH: usize = 900;

    pub fn parse(bytes: &[u8]) -> Result<Value, ()> {
        let text = std::str::from_utf8(bytes).map_err(|_| ())?;
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        p.ws();
        let v = p.value(0)?;
        p.ws();
        if p.i != p.s.len() {
            return Err(());
        }
        Ok(v)
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                self.i += 1;
            }
        }

        fn eat(&mut self, lit: &[u8]) -> bool {
            if self.s[self.i..].starts_with(lit) {
                self.i += lit.len();
                true
            } else {
                false
            }
        }

        fn value(&mut self, depth: usize) -> Result<Value, ()> {
            if depth > MAX_DEPTH {
                return Err(());
            }
            match self.s.get(self.i).ok_or(())? {
                b'{' => {
                    self.i += 1;
                    let mut items: Vec<(String, Value)> = Vec::new();
                    self.ws();
                    if self.eat(b"}") {
                        return Ok(Value::Object(items));
                    }
                    loop {
                        self.ws();
                        if self.s.get(self.i) != Some(&b'"') {
                            return Err(());
                        }
                        let k = self.string()?;
                        self.ws();
                        if !self.eat(b":") {
                            return Err(());
                        }
                        self.ws();
                        let v = self.value(depth + 1)?;
                        match items.iter_mut().find(|(key, _)| *key == k) {
                            Some((_, old)) => *old = v,
                            None => items.push((k, v)),
                        }
                        self.ws();
                        if self.eat(b"}") {
                            return Ok(Value::Object(items));
                        }
                        if !self.eat(b",") {
                            return Err(());
                        }
                    }
                }
                b'[' => {
                    self.i += 1;
                    let mut items = Vec::new();
                    self.ws();
                    if self.eat(b"]") {
                        return Ok(Value::Array(items));
                    }
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        if self.eat(b"]") {
                            return Ok(Value::Array(items));
                        }
                        if !self.eat(b",") {
                            return Err(());
                        }
                    }
                }
                b'"' => Ok(Value::Scalar(self.string()?)),
                _ => {
                    for (lit, s) in [
                        (&b"true"[..], "True"),
                        (b"false", "False"),
                        (b"null", "None"),
                        (b"NaN", "nan"),
                        (b"Infinity", "inf"),
                        (b"-Infinity", "-inf"),
                    ] {
                        if self.eat(lit) {
                            return Ok(Value::Scalar(s.to_string()));
                        }
                    }
                    self.number()
                }
            }
        }

        fn string(&mut self) -> Result<String, ()> {
            self.i += 1;
            let mut out = String::new();
            loop {
                let start = self.i;
                while let Some(&b) = self.s.get(self.i) {
                    if b == b'"' || b == b'\\' || b < 0x20 {
                        break;
                    }
                    self.i += 1;
                }
                // The input is valid UTF-8 and the stops are ASCII.
                out.push_str(std::str::from_utf8(&self.s[start..self.i]).map_err(|_| ())?);
                match self.s.get(self.i).ok_or(())? {
                    b'"' => {
                        self.i += 1;
                        return Ok(out);
                    }
                    b'\\' => {
                        self.i += 1;
                        let c = *self.s.get(self.i).ok_or(())?;
                        self.i += 1;
                        match c {
                            b'"' => out.push('"'),
                            b'\\' => out.push('\\'),
                            b'/' => out.push('/'),
                            b'b' => out.push('\u{8}'),
                            b'f' => out.push('\u{c}'),
                            b'n' => out.push('\n'),
                            b'r' => out.push('\r'),
                            b't' => out.push('\t'),
                            b'u' => {
                                let hi = self.hex4()?;
                                let c = if (0xd800..0xdc00).contains(&hi)
                                    && self.s[self.i..].starts_with(b"\\u")
                                {
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if !(0xdc00..0xe000).contains(&lo) {
                                        // A lone surrogate python keeps and
                                        // later fails to encode.
                                        return Err(());
                                    }
                                    0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                                } else {
                                    hi
                                };
                                out.push(char::from_u32(c).ok_or(())?);
                            }
                            _ => return Err(()),
                        }
                    }
                    _ => return Err(()),
                }
            }
        }

        fn hex4(&mut self) -> Result<u32, ()> {
            let h = self.s.get(self.i..self.i + 4).ok_or(())?;
            self.i += 4;
            let h = std::str::from_utf8(h).map_err(|_| ())?;
            if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(());
            }
            u32::from_str_radix(h, 16).map_err(|_| ())
        }

        fn number(&mut self) -> Result<Value, ()> {
            let start = self.i;
            self.eat(b"-");
            let int_start = self.i;
            let digits = |p: &mut Self| {
                let s = p.i;
                while p.s.get(p.i).is_some_and(u8::is_ascii_digit) {
                    p.i += 1;
                }
                p.i - s
            };
            if self.s.get(self.i) == Some(&b'0') {
                self.i += 1;
            } else if digits(self) == 0 {
                return Err(());
            }
            let int_end = self.i;
            let mut float = false;
            if self.s.get(self.i) == Some(&b'.')
                && self.s.get(self.i + 1).is_some_and(u8::is_ascii_digit)
            {
                self.i += 1;
                digits(self);
                float = true;
            }
            if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
                let save = self.i;
                self.i += 1;
                if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                    self.i += 1;
                }
                if digits(self) == 0 {
                    self.i = save;
                } else {
                    float = true;
                }
            }
            let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| ())?;
            if float {
                let f: f64 = text.parse().map_err(|_| ())?;
                return Ok(Value::Scalar(python_float_repr(f)));
            }
            let int = &self.s[int_start..int_end];
            if int.len() > 4300 {
                return Err(());
            }
            let negative = start != int_start && int.iter().any(|&b| b != b'0');
            let digits = std::str::from_utf8(int).map_err(|_| ())?;
            Ok(Value::Scalar(if negative {
                format!("-{digits}")
            } else {
                digits.to_string()
            }))
        }
    }

    /// python's `repr(float)`: shortest round-trip digits, fixed notation
    /// for exponents -4..16, else `d.ddde+XX`.
    pub fn python_float_repr(f: f64) -> String {
        if f.is_nan() {
            return "nan".into();
        }
        if f.is_infinite() {
            return if f > 0.0 { "inf".into() } else { "-inf".into() };
        }
        let sci = format!("{f:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let (sign, mantissa) = match mantissa.strip_prefix('-') {
            Some(m) => ("-", m),
            None => ("", mantissa),
        };
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        if (-4..16).contains(&exp) {
            let (int, frac) = if exp >= 0 {
                let point = (exp + 1) as usize;
                if point >= digits.len() {
                    let zeros = "0".repeat(point - digits.len());
                    (format!("{digits}{zeros}"), "0".to_string())
                } else {
                    (digits[..point].to_string(), digits[point..].to_string())
                }
            } else {
                let zeros = "0".repeat((-exp - 1) as usize);
                ("0".to_string(), format!("{zeros}{digits}"))
            };
            format!("{sign}{int}.{frac}")
        } else {
            let m = if digits.len() > 1 {
                format!("{}.{}", &digits[..1], &digits[1..])
            } else {
                digits
            };
            let es = if exp < 0 { '-' } else { '+' };
            format!("{sign}{m}e{es}{:02}", exp.abs())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::json::python_float_repr;
    use super::*;

    #[test]
    fn form_bodies_are_decoded() {
        assert_eq!(
            body_query("application/x-www-form-urlencoded", b"foo=bar&test=abc").unwrap(),
            "foo=bar&test=abc"
        );
        assert_eq!(
            body_query("application/x-www-form-urlencoded", b"a=%41+b&c=%E2%82%AC").unwrap(),
            "a=A b&c=\u{20ac}"
        );
        assert_eq!(
            body_query("application/x-www-form-urlencoded", b"\xff").unwrap(),
            "__wb_post_data=/w=="
        );
    }

    #[test]
    fn quoting_as_python_does() {
        // unquote_plus: invalid escapes kept, a cut UTF-8 sequence one
        // replacement character, non-ASCII text as is.
        assert_eq!(unquote_plus("a+b%2b%zz%4"), "a b+%zz%4");
        assert_eq!(
            unquote_plus("%E2%82\u{ac}%E2%82%AC"),
            "\u{fffd}\u{ac}\u{20ac}"
        );
        let mut out = String::new();
        quote_plus(b"a b~_.-*/%+\xff\x00", &mut out);
        assert_eq!(out, "a+b~_.-%2A%2F%25%2B%FF%00");
    }

    #[test]
    fn json_bodies_are_flattened() {
        assert_eq!(
            body_query(
                "application/json",
                br#"{"a": 1, "b": [true, null, {"c": 1.5e20}], "a": "x y", "d": {"a": 2}}"#
            )
            .unwrap(),
            "a=x+y&b=True&b.2_=None&c=1.5e%2B20&a.2_=2"
        );
        assert_eq!(body_query("application/json", b"not json").unwrap(), "");
        assert_eq!(
            body_query("text/plain", b"not json").unwrap(),
            "__wb_post_data=bm90IGpzb24="
        );
        assert_eq!(
            body_query("application/json", b"{\"a\":1}\n{\"a\":2}").unwrap(),
            "a=1&a.2_=2"
        );
    }

    #[test]
    fn floats_print_as_python_does() {
        for (f, want) in [
            (1.0, "1.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123.456, "123.456"),
            (-0.0, "-0.0"),
            (1e15, "1000000000000000.0"),
        ] {
            assert_eq!(python_float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn multipart_fields() {
        let body = b"--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello world\r\n--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\x00\x01\r\n--XX--\r\n";
        assert_eq!(
            body_query("multipart/form-data; boundary=XX", body).unwrap(),
            "a=hello+world&f=%00%01"
        );
    }

    #[test]
    fn other_bodies_are_base64() {
        assert_eq!(
            body_query("application/octet-stream", b"\x00\x01").unwrap(),
            "__wb_post_data=AAE="
        );
        let long = vec![b'a'; 10_000];
        assert_eq!(
            body_query("", &long).unwrap().chars().count(),
            MAX_QUERY_CHARS
        );
    }
}
