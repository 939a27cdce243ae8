//! SURT url keys, as the python `surt` package (0.3.1) makes them with the
//! options pywb and cdxj-indexer use (`surt.surt(url)`: IA and Google
//! canonicalisation, no scheme, no trailing comma, IP addresses reversed).
//!
//! The rules, in the order they apply (docs/indexing.md has the details):
//!
//! 1. Parse: ASCII white space trimmed at both ends, tab/CR/LF removed
//!    everywhere; `http://` added when no `scheme:` starts the URL; repeated
//!    `http(s)://` prefixes collapsed to the last; an RFC 2396 split into
//!    scheme, authority, path, query and fragment; user info dropped; a port
//!    that is not a number in 0..=65535 makes the URL invalid; for `http*`
//!    schemes with an empty authority the first path segment is the host.
//! 2. Google rules: fragment dropped; query unescaped repeatedly then
//!    escaped once; host unescaped repeatedly, IDNA 2003 encoded when not
//!    ASCII, `..` made `.`, dots trimmed, decimal/octal/hex IPv4 forms turned
//!    into a dotted quad, else lower-cased and escaped once; path unescaped
//!    repeatedly, dot segments resolved and empty segments dropped (when there
//!    is a host), escaped once.
//! 3. IA rules: host lower-cased, leading `www`, `www2`... label dropped
//!    (not for `dns:`); default port (80 http, 443 https) dropped; path
//!    lower-cased, ASP.NET session ids removed, trailing `/` dropped unless
//!    the path is `/`; query session ids (jsessionid, phpsessid, sid,
//!    aspsessionid, cfid/cftoken) removed, lower-cased, arguments sorted
//!    bytewise, an empty query dropped.
//! 4. Output: host labels reversed and joined with `,`, `:port` when kept,
//!    `)`, then the path and `?query`. Without a host: `scheme:` and the path.
//!
//! `filedesc:` URLs are returned unchanged and an empty URL is `-`.

use std::borrow::Cow;
use std::fmt;

/// Why a URL has no SURT form. Indexers then use the URL itself as the key,
/// as cdxj-indexer does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SurtError {
    /// Nothing is left once white space is removed.
    Empty,
    /// The port is not a decimal number in 0..=65535.
    InvalidPort,
    /// An all-digit host longer than python's integer conversion accepts
    /// (4300 digits).
    HostTooLong,
}

impl fmt::Display for SurtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SurtError::Empty => "empty URL",
            SurtError::InvalidPort => "invalid port",
            SurtError::HostTooLong => "all-digit host too long",
        })
    }
}

impl std::error::Error for SurtError {}

/// The SURT form of `url`.
///
/// ```
/// use warchest_index::surt::surt;
/// assert_eq!(
///     surt("http://www.Example.com:80/A/b/?b=2&a=1#x").unwrap(),
///     "com,example)/a/b?a=1&b=2"
/// );
/// assert_eq!(surt("dns:www.example.com").unwrap(), "dns:www.example.com");
/// ```
///
/// # Errors
/// The URL is empty once white space is removed, or its port is invalid,
/// or its host is a number of more than 4300 digits.
pub fn surt(url: &str) -> Result<String, SurtError> {
    let out = surt_bytes(url.as_bytes())?;
    // Everything but `filedesc` input (returned as is) is ASCII here.
    Ok(String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The url key an index uses for `url`: its SURT form, or `url` itself when
/// it has none (what cdxj-indexer does with URLs surt rejects).
pub fn url_key(url: &str) -> String {
    surt(url).unwrap_or_else(|_| url.to_string())
}

/// [`surt`] over bytes.
///
/// # Errors
/// As [`surt`].
pub fn surt_bytes(url: &[u8]) -> Result<Vec<u8>, SurtError> {
    if url.is_empty() {
        return Ok(b"-".to_vec());
    }
    if url.starts_with(b"filedesc") {
        return Ok(url.to_vec());
    }
    let mut u = Url::parse(url)?;
    u.canonicalize_google()?;
    u.canonicalize_ia();
    Ok(u.surt_form())
}

/// A URL split the way the `surt` package's `handyurl` splits it, before any
/// canonicalisation. Used for the host and path columns of Parquet indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The scheme as written.
    pub scheme: Vec<u8>,
    /// The host, lower-cased (ASCII); `None` when there is none.
    pub host: Option<Vec<u8>>,
    /// The explicit port (0 counts as none).
    pub port: Option<u16>,
    /// The path (`None` when empty).
    pub path: Option<Vec<u8>>,
    /// The query without `?` (`None` when empty).
    pub query: Option<Vec<u8>>,
}

impl Url {
    /// Splits `url` as `handyurl.parse` does.
    ///
    /// # Errors
    /// [`SurtError::Empty`] and [`SurtError::InvalidPort`].
    pub fn parse(url: &[u8]) -> Result<Url, SurtError> {
        // python's bytes.strip(): ASCII white space, vertical tab included.
        let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
        let start = url.iter().position(|b| !ws(b)).unwrap_or(url.len());
        let end = url.iter().rposition(|b| !ws(b)).map_or(start, |e| e + 1);
        let trimmed = &url[start..end];
        // Nearly every URL has no tab or line break: one copy, not a
        // filter byte by byte (about 2,000 instructions a URL).
        let mut s: Vec<u8> = if memchr::memchr3(b'\t', b'\r', b'\n', trimmed).is_none() {
            trimmed.to_vec()
        } else {
            trimmed
                .iter()
                .copied()
                .filter(|b| !matches!(b, b'\t' | b'\r' | b'\n'))
                .collect()
        };
        if s.is_empty() {
            return Err(SurtError::Empty);
        }
        if scheme_len(&s).is_none() {
            let mut with = b"http://".to_vec();
            with.extend_from_slice(&s);
            s = with;
        }
        collapse_protocols(&mut s);

        let split = split_url(&s);
        let scheme = split.scheme.to_vec();
        if scheme.is_empty() {
            return Err(SurtError::Empty);
        }
        let mut netloc = split.netloc;
        while let [rest @ .., b':'] = netloc {
            netloc = rest;
        }
        let (host, port) = host_info(netloc);
        let port = match port {
            None => None,
            Some(p) => {
                if !p.iter().all(u8::is_ascii_digit) {
                    return Err(SurtError::InvalidPort);
                }
                let digits = p.iter().skip_while(|&&b| b == b'0').count();
                if digits > 5 {
                    return Err(SurtError::InvalidPort);
                }
                let v = p
                    .iter()
                    .fold(0u32, |acc, &b| acc * 10 + u32::from(b - b'0'));
                if v > 65535 {
                    return Err(SurtError::InvalidPort);
                }
                (v != 0).then_some(v as u16)
            }
        };
        let mut host = (!host.is_empty()).then(|| lower_host(host));
        let mut path = (!split.path.is_empty()).then(|| split.path.to_vec());
        if scheme.starts_with(b"http")
            && host.is_none()
            && let Some(p) = &path
        {
            let stripped: &[u8] = {
                let start = p.iter().position(|&b| b != b'/').unwrap_or(p.len());
                &p[start..]
            };
            let (h, rest) = match memchr::memchr(b'/', stripped) {
                Some(i) => (&stripped[..i], &stripped[i + 1..]),
                None => (stripped, &b""[..]),
            };
            host = Some(h.to_vec());
            let mut np = b"/".to_vec();
            np.extend_from_slice(rest);
            path = Some(np);
        }
        Ok(Url {
            scheme,
            host,
            port,
            path,
            query: split.query.filter(|q| !q.is_empty()).map(<[u8]>::to_vec),
        })
    }

    fn has_host(&self) -> bool {
        self.host.as_ref().is_some_and(|h| !h.is_empty())
    }

    /// The GoogleURLCanonicalizer step.
    fn canonicalize_google(&mut self) -> Result<(), SurtError> {
        // Each step borrows what it leaves unchanged (most URLs): one
        // allocation at most per part.
        if let Some(q) = &self.query {
            let q = escape_once(&unescape_repeatedly(q)).into_owned();
            self.query = Some(q);
        }
        if self.has_host()
            && let Some(h) = &self.host
        {
            let mut host = unescape_repeatedly(h);
            if !host.is_ascii()
                && let Some(ascii) = idna_2003(&host)
            {
                host = Cow::Owned(ascii);
            }
            let collapsed = collapse_double_dots(&host);
            let host = trim_dots(&collapsed);
            let host = match ip_forms(host)? {
                Some(ip) => ip,
                None if host.iter().any(u8::is_ascii_uppercase) => {
                    escape_once(&host.to_ascii_lowercase()).into_owned()
                }
                None => escape_once(host).into_owned(),
            };
            self.host = Some(host);
        }
        if let Some(p) = &self.path {
            let unescaped = unescape_repeatedly(p);
            let path = if self.has_host() {
                escape_once(&normalize_path(Some(&unescaped))).into_owned()
            } else {
                escape_once(&unescaped).into_owned()
            };
            self.path = Some(path);
        } else if self.has_host() {
            self.path = Some(escape_once(&normalize_path(None)).into_owned());
        }
        Ok(())
    }

    /// The IAURLCanonicalizer step.
    fn canonicalize_ia(&mut self) {
        if let Some(h) = &mut self.host
            && !h.is_empty()
        {
            h.make_ascii_lowercase();
            if self.scheme != b"dns"
                && let Some(n) = www_prefix(h)
            {
                h.drain(..n);
            }
        }
        let default_port = if self.scheme.eq_ignore_ascii_case(b"http") {
            80
        } else if self.scheme.eq_ignore_ascii_case(b"https") {
            443
        } else {
            0
        };
        if self.port == Some(default_port) {
            self.port = None;
        }
        if let Some(p) = &mut self.path
            && !p.is_empty()
        {
            p.make_ascii_lowercase();
            if let Cow::Owned(np) = strip_path_session_id(p) {
                *p = np;
            }
            if p.len() > 1 && p.ends_with(b"/") {
                p.pop();
            }
        }
        if let Some(q) = &self.query {
            let mut q = strip_query_session_id(q).into_owned();
            q.make_ascii_lowercase();
            let q = sort_query(&q);
            self.query = (!q.is_empty()).then_some(q);
        }
    }

    fn surt_form(&self) -> Vec<u8> {
        let len = |v: &Option<Vec<u8>>| v.as_ref().map_or(0, Vec::len);
        let mut s = Vec::with_capacity(
            len(&self.host) + len(&self.path) + len(&self.query) + self.scheme.len() + 8,
        );
        let host = self.host.as_deref().filter(|h| !h.is_empty());
        match host {
            Some(h) => {
                for (i, label) in h.rsplit(|&b| b == b'.').enumerate() {
                    if i > 0 {
                        s.push(b',');
                    }
                    s.extend_from_slice(label);
                }
                if let Some(p) = self.port {
                    s.push(b':');
                    crate::push_u64(&mut s, u64::from(p));
                }
                s.push(b')');
            }
            None => {
                s.extend_from_slice(&self.scheme);
                s.push(b':');
            }
        }
        match &self.path {
            Some(p) if !p.is_empty() => s.extend_from_slice(p),
            _ if self.query.is_some() => s.push(b'/'),
            _ => {}
        }
        if let Some(q) = &self.query {
            s.push(b'?');
            s.extend_from_slice(q);
        }
        s
    }
}

/// Length of a leading `scheme` when `scheme:` starts `s`.
fn scheme_len(s: &[u8]) -> Option<usize> {
    let first = *s.first()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    let n = s
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))?;
    (s[n] == b':').then_some(n)
}

/// `^(https?://)+` replaced by its last repetition.
fn collapse_protocols(s: &mut Vec<u8>) {
    let mut at = 0;
    let mut last = None;
    loop {
        let rest = &s[at..];
        let n = if rest.starts_with(b"http://") {
            7
        } else if rest.starts_with(b"https://") {
            8
        } else {
            break;
        };
        last = Some((at, n));
        at += n;
    }
    if let Some((start, _)) = last
        && start > 0
    {
        s.drain(..start);
    }
}

struct Split<'a> {
    scheme: &'a [u8],
    netloc: &'a [u8],
    path: &'a [u8],
    query: Option<&'a [u8]>,
}

/// The RFC 2396 appendix B split (fragment dropped: nothing keeps it).
fn split_url(s: &[u8]) -> Split<'_> {
    let (scheme, mut rest) = match scheme_len(s) {
        Some(n) => (&s[..n], &s[n + 1..]),
        None => (&s[..0], s),
    };
    if let Some(i) = memchr::memchr(b'#', rest) {
        rest = &rest[..i];
    }
    let mut netloc = &rest[..0];
    if let Some(after) = rest.strip_prefix(b"//") {
        let end = after
            .iter()
            .position(|&b| matches!(b, b'/' | b'?'))
            .unwrap_or(after.len());
        netloc = &after[..end];
        rest = &after[end..];
    }
    let (path, query) = match memchr::memchr(b'?', rest) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    Split {
        scheme,
        netloc,
        path,
        query,
    }
}

/// Host and port of an authority, as python's `urlsplit` finds them.
fn host_info(netloc: &[u8]) -> (&[u8], Option<&[u8]>) {
    let hostinfo = match netloc.iter().rposition(|&b| b == b'@') {
        Some(i) => &netloc[i + 1..],
        None => netloc,
    };
    let (host, port) = match memchr::memchr(b'[', hostinfo) {
        Some(i) => {
            let bracketed = &hostinfo[i + 1..];
            let (h, after) = match memchr::memchr(b']', bracketed) {
                Some(j) => (&bracketed[..j], &bracketed[j + 1..]),
                None => (bracketed, &b""[..]),
            };
            let port = memchr::memchr(b':', after).map_or(&b""[..], |k| &after[k + 1..]);
            (h, port)
        }
        None => match memchr::memchr(b':', hostinfo) {
            Some(i) => (&hostinfo[..i], &hostinfo[i + 1..]),
            None => (hostinfo, &b""[..]),
        },
    };
    (host, (!port.is_empty()).then_some(port))
}

/// Lower-cases a host, but not an IPv6 zone after `%`.
fn lower_host(h: &[u8]) -> Vec<u8> {
    let mut v = h.to_vec();
    let end = memchr::memchr(b'%', &v).unwrap_or(v.len());
    v[..end].make_ascii_lowercase();
    v
}

/// Percent-decodes until nothing decodes any more, in one pass: `%XX`
/// escapes never overlap, so decoding is confluent and a stack that
/// re-examines its top after each decoded byte reaches the same fixed point
/// as python's decode-until-unchanged loop, in linear time (passes of
/// `percent_encoding::percent_decode` until unchanged would be quadratic on
/// `%25252525...41`).
pub(crate) fn unescape_repeatedly(s: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memchr(b'%', s).is_none() {
        return Cow::Borrowed(s);
    }
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    for &b in s {
        out.push(b);
        while let [.., b'%', x, y] = out[..] {
            match (char::from(x).to_digit(16), char::from(y).to_digit(16)) {
                (Some(hi), Some(lo)) => {
                    out.truncate(out.len() - 3);
                    // Two hex digits: below 256.
                    out.push((hi << 4 | lo) as u8);
                }
                _ => break,
            }
        }
    }
    Cow::Owned(out)
}

/// What python `surt` escapes: bytes outside 0x21..0x7E (controls, space,
/// DEL and every non-ASCII byte, which `percent_encoding` always escapes),
/// `#` and `%`.
const SURT_ESCAPED: &percent_encoding::AsciiSet =
    &percent_encoding::CONTROLS.add(b' ').add(b'#').add(b'%');

/// Percent-encodes bytes outside 0x21..0x7E, `#` and `%` (uppercase hex).
pub(crate) fn escape_once(s: &[u8]) -> Cow<'_, [u8]> {
    // A single piece comes back borrowed, whether it is `s` itself or one
    // escape (`%` alone is `%25`).
    match Cow::from(percent_encoding::percent_encode(s, SURT_ESCAPED)) {
        Cow::Borrowed(b) if b.as_bytes() == s => Cow::Borrowed(s),
        Cow::Borrowed(b) => Cow::Owned(b.as_bytes().to_vec()),
        Cow::Owned(o) => Cow::Owned(o.into_bytes()),
    }
}

/// `..` replaced by `.`, left to right, without overlap (python's
/// `bytes.replace`).
fn collapse_double_dots(s: &[u8]) -> Cow<'_, [u8]> {
    if !s.windows(2).any(|w| w == b"..") {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'.' && s.get(i + 1) == Some(&b'.') {
            out.push(b'.');
            i += 2;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

fn trim_dots(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b'.').unwrap_or(s.len());
    let end = s.iter().rposition(|&b| b != b'.').map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// `www`, `www2`... followed by a dot, at the start of a host.
fn www_prefix(h: &[u8]) -> Option<usize> {
    let rest = h.strip_prefix(b"www")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    (rest.get(digits) == Some(&b'.')).then_some(3 + digits + 1)
}

/// Resolves `.` and `..` segments and drops empty ones but the last.
fn normalize_path(path: Option<&[u8]>) -> Cow<'_, [u8]> {
    let path = match path {
        Some(p) if !p.is_empty() => p,
        _ => return Cow::Borrowed(b"/"),
    };
    // Already normal (most paths): a leading `/`, no empty segment but
    // the last, no `.` or `..` segment.
    if path[0] == b'/'
        && !path.windows(2).any(|w| w == b"//")
        && !path[1..]
            .split(|&b| b == b'/')
            .any(|seg| seg == b"." || seg == b"..")
    {
        return Cow::Borrowed(path);
    }
    let mut kept: Vec<&[u8]> = Vec::new();
    for seg in path.split(|&b| b == b'/').skip(1) {
        match seg {
            b"." => {}
            b".." => {
                if kept.pop().is_none() {
                    kept.push(seg);
                }
            }
            _ => kept.push(seg),
        }
    }
    let mut out = b"/".to_vec();
    if let Some((last, init)) = kept.split_last() {
        for seg in init {
            if !seg.is_empty() {
                out.extend_from_slice(seg);
                out.push(b'/');
            }
        }
        out.extend_from_slice(last);
    }
    Cow::Owned(out)
}

/// The IPv4 forms python's surt turns into a dotted quad: an all-digit host
/// (masked to 32 bits), and dotted decimal or octal forms the C resolver
/// (`inet_aton`) accepts. `None` when the host is none of these.
fn ip_forms(host: &[u8]) -> Result<Option<Vec<u8>>, SurtError> {
    if host.is_empty() {
        return Ok(None);
    }
    if host.iter().all(u8::is_ascii_digit) {
        if host.len() > 4300 {
            return Err(SurtError::HostTooLong);
        }
        let v = host.iter().fold(0u32, |acc, &b| {
            acc.wrapping_mul(10).wrapping_add(u32::from(b - b'0'))
        });
        return Ok(Some(dotted(v)));
    }
    // At most four parts, none empty: kept in place, not collected.
    let mut parts: [&[u8]; 4] = [&[]; 4];
    let mut n = 0;
    for p in host.split(|&b| b == b'.') {
        if n == 4 || p.is_empty() {
            return Ok(None);
        }
        parts[n] = p;
        n += 1;
    }
    let parts = &parts[..n];
    let decimal = host[0] != b'0' && parts.iter().all(|p| p.iter().all(u8::is_ascii_digit));
    let octal = host[0] == b'0'
        && parts
            .iter()
            .all(|p| p.iter().all(|b| (b'0'..=b'7').contains(b)));
    if !(decimal || octal) {
        return Ok(None);
    }
    Ok(inet_aton(parts).map(dotted))
}

/// `inet_aton` on parts made only of digits: each part decimal, or octal
/// with a leading 0; the last part fills the remaining bytes.
fn inet_aton(parts: &[&[u8]]) -> Option<u32> {
    let mut vals = [0u64; 4];
    for (slot, p) in vals.iter_mut().zip(parts) {
        let (base, digits) = if p.len() > 1 && p[0] == b'0' {
            (8u64, &p[1..])
        } else {
            (10u64, &p[..])
        };
        let mut v: u64 = 0;
        for &d in digits {
            let d = u64::from(d - b'0');
            if d >= base {
                return None;
            }
            v = v * base + d;
            if v > u64::from(u32::MAX) {
                return None;
            }
        }
        *slot = v;
    }
    let (last, init) = vals.get(..parts.len())?.split_last()?;
    if init.iter().any(|&v| v > 0xff) {
        return None;
    }
    let max_last: u64 = match init.len() {
        0 => 0xffff_ffff,
        1 => 0x00ff_ffff,
        2 => 0xffff,
        _ => 0xff,
    };
    if *last > max_last {
        return None;
    }
    let mut v: u64 = 0;
    for (i, b) in init.iter().enumerate() {
        v |= b << (24 - 8 * i);
    }
    Some((v | last) as u32)
}

fn dotted(v: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(15);
    for (i, byte) in v.to_be_bytes().into_iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        crate::push_u64(&mut out, u64::from(byte));
    }
    out
}

/// `host.decode('utf-8', 'ignore').encode('idna')` (python's IDNA 2003
/// codec); `None` when the codec would fail, the host then staying as is.
fn idna_2003(host: &[u8]) -> Option<Vec<u8>> {
    let mut text = String::with_capacity(host.len());
    for chunk in host.utf8_chunks() {
        text.push_str(chunk.valid());
    }
    if text.is_empty() {
        return Some(Vec::new());
    }
    if text.is_ascii() {
        let labels: Vec<&str> = text.split('.').collect();
        let (last, init) = labels.split_last()?;
        if init.iter().any(|l| l.is_empty() || l.len() >= 64) || last.len() >= 64 {
            return None;
        }
        return Some(text.into_bytes());
    }
    let is_dot = |c: char| matches!(c, '.' | '\u{3002}' | '\u{ff0e}' | '\u{ff61}');
    let mut labels: Vec<&str> = text.split(is_dot).collect();
    let trailing_dot = labels.len() > 1 && labels.last().is_some_and(|l| l.is_empty());
    if trailing_dot {
        labels.pop();
    }
    let mut out = Vec::new();
    for label in labels {
        if !out.is_empty() {
            out.push(b'.');
        }
        out.extend_from_slice(&to_ascii(label)?);
    }
    if trailing_dot {
        out.push(b'.');
    }
    Some(out)
}

/// RFC 3490 ToASCII with AllowUnassigned and without STD3 rules.
fn to_ascii(label: &str) -> Option<Vec<u8>> {
    let ok_len = |l: &[u8]| (!l.is_empty() && l.len() < 64).then(|| l.to_vec());
    if label.is_ascii() {
        return ok_len(label.as_bytes());
    }
    let prepped = nameprep(label)?;
    if prepped.is_ascii() {
        return ok_len(prepped.as_bytes());
    }
    if prepped.starts_with("xn--") {
        return None;
    }
    let mut ace = b"xn--".to_vec();
    ace.extend_from_slice(&punycode_encode(&prepped)?);
    ok_len(&ace)
}

/// RFC 3491 nameprep, unassigned code points allowed (as python's `idna`
/// codec does for lookups).
fn nameprep(label: &str) -> Option<String> {
    use stringprep::tables as t;
    use unicode_normalization::UnicodeNormalization;
    let mapped: String = label
        .chars()
        .filter(|&c| !t::commonly_mapped_to_nothing(c))
        .flat_map(t::case_fold_for_nfkc)
        .collect();
    let norm: String = mapped.nfkc().collect();
    let prohibited = |c: char| {
        t::non_ascii_space_character(c)
            || t::non_ascii_control_character(c)
            || t::private_use(c)
            || t::non_character_code_point(c)
            || t::surrogate_code(c)
            || t::inappropriate_for_plain_text(c)
            || t::inappropriate_for_canonical_representation(c)
            || t::change_display_properties_or_deprecated(c)
            || t::tagging_character(c)
    };
    if norm.chars().any(prohibited) {
        return None;
    }
    if norm.chars().any(t::bidi_r_or_al) {
        let first = norm.chars().next().is_some_and(t::bidi_r_or_al);
        let last = norm.chars().next_back().is_some_and(t::bidi_r_or_al);
        if norm.chars().any(t::bidi_l) || !first || !last {
            return None;
        }
    }
    Some(norm)
}

/// RFC 3492 punycode encoding of a label. `None` on overflow.
fn punycode_encode(input: &str) -> Option<Vec<u8>> {
    const BASE: u32 = 36;
    const T_MIN: u32 = 1;
    const T_MAX: u32 = 26;
    const SKEW: u32 = 38;
    const DAMP: u32 = 700;
    fn adapt(mut delta: u32, points: u32, first: bool) -> u32 {
        delta /= if first { DAMP } else { 2 };
        delta += delta / points;
        let mut k = 0;
        while delta > ((BASE - T_MIN) * T_MAX) / 2 {
            delta /= BASE - T_MIN;
            k += BASE;
        }
        k + (BASE - T_MIN + 1) * delta / (delta + SKEW)
    }
    fn digit(d: u32) -> u8 {
        if d < 26 {
            b'a' + d as u8
        } else {
            b'0' + (d - 26) as u8
        }
    }
    let chars: Vec<u32> = input.chars().map(u32::from).collect();
    let mut out: Vec<u8> = chars
        .iter()
        .filter(|&&c| c < 0x80)
        .map(|&c| c as u8)
        .collect();
    let basic = out.len() as u32;
    if basic > 0 {
        out.push(b'-');
    }
    let mut n: u32 = 0x80;
    let mut delta: u32 = 0;
    let mut bias: u32 = 72;
    let mut h = basic;
    let total = chars.len() as u32;
    while h < total {
        let m = chars.iter().copied().filter(|&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(h + 1)?)?;
        n = m;
        for &c in &chars {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        T_MIN
                    } else if k >= bias + T_MAX {
                        T_MAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, h + 1, h == basic);
                delta = 0;
                h += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(out)
}

/// Removes ASP.NET session ids from a (lower-cased) path:
/// `/(S(24 chars))/x.aspx` and `/(24 chars)/x.aspx` forms.
fn strip_path_session_id(path: &[u8]) -> Cow<'_, [u8]> {
    // Both forms start with `(`.
    if memchr::memchr(b'(', path).is_none() {
        return Cow::Borrowed(path);
    }
    let mut p = path.to_vec();
    for form in [SessionForm::Nested, SessionForm::Flat] {
        if let Some((g1_end, g3_start)) = find_path_session(&p, form) {
            let mut np = p[..g1_end].to_vec();
            np.extend_from_slice(&p[g3_start..]);
            p = np;
        }
    }
    Cow::Owned(p)
}

#[derive(Clone, Copy)]
enum SessionForm {
    /// `(` then one or more `X(24 alnum)` then `)/`.
    Nested,
    /// `(24 alnum)/`.
    Flat,
}

/// Where the session segment is: the greedy `^(.*/)(session)([^?]+\.aspx.*)$`
/// match with the last possible `/`.
fn find_path_session(p: &[u8], form: SessionForm) -> Option<(usize, usize)> {
    let alnum24 = |s: &[u8]| s.len() >= 24 && s[..24].iter().all(u8::is_ascii_alphanumeric);
    for g1_end in (1..=p.len()).rev() {
        if p[g1_end - 1] != b'/' {
            continue;
        }
        let rest = &p[g1_end..];
        let session_len = match form {
            SessionForm::Flat => {
                if rest.first() == Some(&b'(')
                    && alnum24(&rest[1..])
                    && rest.get(25..27) == Some(b")/")
                {
                    Some(27)
                } else {
                    None
                }
            }
            SessionForm::Nested => {
                let mut i = 1;
                let mut units = 0;
                if rest.first() == Some(&b'(') {
                    while rest.get(i).is_some_and(u8::is_ascii_alphabetic)
                        && rest.get(i + 1) == Some(&b'(')
                        && alnum24(&rest[(i + 2).min(rest.len())..])
                        && rest.get(i + 26) == Some(&b')')
                    {
                        i += 27;
                        units += 1;
                    }
                }
                (units > 0 && rest.get(i..i + 2) == Some(b")/")).then_some(i + 2)
            }
        };
        let Some(n) = session_len else { continue };
        let g3 = &rest[n..];
        // `[^?]+\.aspx.*`: some `.aspx` at index >= 1 with no `?` before it.
        let ok = (1..g3.len()).any(|i| g3[i..].starts_with(b".aspx") && !g3[..i].contains(&b'?'));
        if ok {
            return Some((g1_end, g1_end + n));
        }
    }
    None
}

/// The query session-id patterns of `URLRegexTransformer`, applied in turn.
fn strip_query_session_id(q: &[u8]) -> Cow<'_, [u8]> {
    // Every pattern holds one of these (ASCII case ignored).
    let holds = |word: &[u8]| q.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    // (`jsessionid=`, `aspsessionid`: "sessionid"; `phpsessid=`, `sid=`:
    // "sid="; `cfid=`).
    if !(holds(b"sid=") || holds(b"sessionid") || holds(b"cfid=")) {
        return Cow::Borrowed(q);
    }
    let mut q = q.to_vec();
    for pat in QUERY_SESSION_PATTERNS {
        if let Some((start, end)) = find_last_session(&q, *pat) {
            // `^(.*)(?:session)(?:&(.*))?$`: group 1, then group 2 if not empty.
            let mut nq = q[..start].to_vec();
            if end < q.len() {
                nq.extend_from_slice(&q[end + 1..]);
            }
            q = nq;
        }
    }
    Cow::Owned(q)
}

#[derive(Clone, Copy)]
enum QueryPattern {
    /// `name=` and exactly `n` ASCII alphanumerics.
    Fixed(&'static [u8], usize),
    /// `aspsessionid` 8 letters `=` 24 letters.
    AspSession,
    /// `cfid=[^&]+&cftoken=[^&]+`.
    CfId,
}

const QUERY_SESSION_PATTERNS: &[QueryPattern] = &[
    QueryPattern::Fixed(b"jsessionid=", 32),
    QueryPattern::Fixed(b"phpsessid=", 32),
    QueryPattern::Fixed(b"sid=", 32),
    QueryPattern::AspSession,
    QueryPattern::CfId,
];

/// The greedy match: the last start from which the session pattern matches
/// and is followed by the end or `&`. Returns its start and end.
fn find_last_session(q: &[u8], pat: QueryPattern) -> Option<(usize, usize)> {
    let ci_starts = |s: &[u8], p: &[u8]| s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p);
    let ends_ok = |end: usize| end == q.len() || q[end] == b'&';
    for start in (0..q.len()).rev() {
        let s = &q[start..];
        let end = match pat {
            QueryPattern::Fixed(name, n) => {
                if !ci_starts(s, name) {
                    continue;
                }
                let v = &s[name.len()..];
                if v.len() < n || !v[..n].iter().all(u8::is_ascii_alphanumeric) {
                    continue;
                }
                start + name.len() + n
            }
            QueryPattern::AspSession => {
                const NAME: &[u8] = b"aspsessionid";
                if !ci_starts(s, NAME) {
                    continue;
                }
                let v = &s[NAME.len()..];
                if v.len() < 8 + 1 + 24
                    || !v[..8].iter().all(u8::is_ascii_alphabetic)
                    || v[8] != b'='
                    || !v[9..33].iter().all(u8::is_ascii_alphabetic)
                {
                    continue;
                }
                start + NAME.len() + 33
            }
            QueryPattern::CfId => {
                if !ci_starts(s, b"cfid=") {
                    continue;
                }
                let v = &s[5..];
                let x = v.iter().position(|&b| b == b'&').unwrap_or(v.len());
                if x == 0 || !ci_starts(&v[x..], b"&cftoken=") {
                    continue;
                }
                let w = &v[x + 9..];
                let y = w.iter().position(|&b| b == b'&').unwrap_or(w.len());
                if y == 0 {
                    continue;
                }
                start + 5 + x + 9 + y
            }
        };
        if ends_ok(end) {
            return Some((start, end));
        }
    }
    None
}

/// Sorts `&`-separated arguments as python sorts `(name,)` / `(name, value)`
/// tuples: by name, a bare name before `name=`, then by value.
fn sort_query(q: &[u8]) -> Vec<u8> {
    if q.len() <= 1 {
        return q.to_vec();
    }
    let mut args: Vec<(&[u8], Option<&[u8]>)> = q
        .split(|&b| b == b'&')
        .map(|a| match memchr::memchr(b'=', a) {
            Some(i) => (&a[..i], Some(&a[i + 1..])),
            None => (a, None),
        })
        .collect();
    args.sort();
    let mut out = Vec::with_capacity(q.len());
    for (i, (name, value)) in args.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(name);
        if let Some(v) = value {
            out.push(b'=');
            out.extend_from_slice(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases checked against `python3 -c 'import surt; print(surt.surt(u))'`
    /// (surt 0.3.1); `None` where surt raises and indexers keep the URL.
    const CASES: &[(&str, Option<&str>)] = &[
        (
            "http://www.Example.com:80/A/b/?b=2&a=1#x",
            Some("com,example)/a/b?a=1&b=2"),
        ),
        ("http://0777.0.0.1/", Some("1,0,0,0777)/")),
        ("http://999.1.1.1/", Some("1,1,1,999)/")),
        ("http://1.08.1.1/", Some("1,1,08,1)/")),
        ("http://127.1/", Some("1,0,0,127)/")),
        ("http://0x7f.1/", Some("1,0x7f)/")),
        ("http://4294967296.1/", Some("1,4294967296)/")),
        ("http://1.2.3.4.5/", Some("5,4,3,2,1)/")),
        ("http://[::1]:8080/a", Some("::1:8080)/a")),
        ("http://a:0/", Some("a)/")),
        ("http://a:/", Some("a)/")),
        ("http://a:65536/", None),
        ("http://a:8o/", None),
        ("   ", None),
        ("\t", None),
        ("", Some("-")),
        (
            "http://www.example.com/a/../b/./c//d/?b=2&a=1&a#x",
            Some("com,example)/b/c/d?a&a=1&b=2"),
        ),
        ("http://ü..com/", Some("com,%c3%bc)/")),
        ("http://straße.de/", Some("de,strasse)/")),
        ("http://例子.测试/", Some("xn--0zwm56d,xn--fsqu00a)/")),
        ("http://xn--bcher-kva.de/", Some("de,xn--bcher-kva)/")),
        ("http://Bücher.de/", Some("de,xn--bcher-kva)/")),
        ("HTTP://WWW.EXAMPLE.COM/", Some("com,example)/")),
        ("http://http://https://x.com/a", Some("com,x)/a")),
        ("http://user:pw@www.a.com:80/", Some("com,a)/")),
        ("dns:WWW.ARCHIVE.ORG", Some("dns:www.archive.org")),
        ("DNS:WWW.ARCHIVE.ORG", Some("DNS:www.archive.org")),
        ("https://a.com:443/", Some("com,a)/")),
        ("https://a.com:80/", Some("com,a:80)/")),
        ("ftp://a.com:21/", Some("com,a:21)/")),
        ("http:////www.vikings.com", Some("com,vikings)/")),
        ("http:///", Some("http:/")),
        ("filedesc://x.arc", Some("filedesc://x.arc")),
        (
            "http://a.com/?jsessionid=0123456789abcdef0123456789abcdef&x=1",
            Some("com,a)/?x=1"),
        ),
        ("http://1234567890123/", Some("203,4,251,113)/")),
        ("http://%31%32%37.0.0.1/", Some("1,0,0,127)/")),
        ("http://a.com/%2525252541", Some("com,a)/a")),
        ("http://😀.com/", Some("com,xn--e28h)/")),
        (
            "http://www.a.com/(S(abcdefghijklmnopqrstuvwx))/foo.aspx",
            Some("com,a)/foo.aspx"),
        ),
        ("http://a.com/?a=1&&b", Some("com,a)/?&a=1&b")),
        ("http://01.02.03.04/", Some("4,3,2,1)/")),
        ("http://010.1/", Some("1,0,0,8)/")),
        ("http://1.2.3/", Some("3,0,2,1)/")),
        ("http://1.16777215/", Some("255,255,255,1)/")),
        ("http://1.16777216/", Some("16777216,1)/")),
        ("http://4294967295/", Some("255,255,255,255)/")),
        ("http://4294967296/", Some("0,0,0,0)/")),
        ("http://00/", Some("0,0,0,0)/")),
        ("http://1.2.3.256/", Some("256,3,2,1)/")),
        ("http://012.0.0.1/", Some("1,0,0,10)/")),
        ("urn:X-wpull:log", Some("urn:x-wpull:log")),
        (
            "metadata://gnu.org/software/wget/warc/MANIFEST.txt",
            Some("org,gnu)/software/wget/warc/manifest.txt"),
        ),
        (
            "file:///example%20with%20spaces.png",
            Some("file:/example%20with%20spaces.png"),
        ),
        (
            "http://example.com?example=1",
            Some("com,example)/?example=1"),
        ),
        ("http://example.com", Some("com,example)/")),
        ("http://www2.example.com/", Some("com,example)/")),
        ("http://wwwx.example.com/", Some("com,example,wwwx)/")),
        ("http://a.com/x/", Some("com,a)/x")),
        ("http://a.com/?", Some("com,a)/")),
        ("http://a.com/#frag", Some("com,a)/")),
        ("http://a.com/a b", Some("com,a)/a%20b")),
        ("http://a.com/?q=a%20b+c", Some("com,a)/?q=a%20b+c")),
    ];

    #[test]
    fn matches_python_surt() {
        for (url, want) in CASES {
            let got = surt(url).ok();
            assert_eq!(got.as_deref(), *want, "{url:?}");
        }
    }

    #[test]
    fn url_key_falls_back_to_the_url() {
        assert_eq!(url_key("http://a:99999/"), "http://a:99999/");
        assert_eq!(url_key("http://A.com/"), "com,a)/");
    }

    #[test]
    fn unescape_reaches_the_fixed_point() {
        assert_eq!(*unescape_repeatedly(b"%2541"), *b"A");
        assert_eq!(*unescape_repeatedly(b"%%41"), *b"%A");
        assert_eq!(*unescape_repeatedly(b"%4"), *b"%4");
        assert_eq!(*unescape_repeatedly(b"%252"), *b"%2");
        // Linear on long chains (python's loop would be quadratic).
        let long = "%25".repeat(100_000) + "41";
        let want = "%".repeat(99_999) + "A";
        assert_eq!(*unescape_repeatedly(long.as_bytes()), *want.as_bytes());
        assert_eq!(*unescape_repeatedly(b"%25%2541"), *b"%A");
        // One byte escaped alone, and nothing to escape.
        assert_eq!(*escape_once(b"%"), *b"%25");
        assert_eq!(*escape_once(b" "), *b"%20");
        assert_eq!(*escape_once(b"a#b\xff"), *b"a%23b%FF");
        assert!(matches!(escape_once(b"abc"), Cow::Borrowed(_)));
    }

    #[test]
    fn punycode_known_values() {
        assert_eq!(punycode_encode("bücher").unwrap(), b"bcher-kva");
        assert_eq!(punycode_encode("例子").unwrap(), b"fsqu00a");
    }

    #[test]
    fn query_sorting_keeps_bare_names_first() {
        assert_eq!(sort_query(b"b=1&a=&a"), b"a&a=&b=1");
    }
}
