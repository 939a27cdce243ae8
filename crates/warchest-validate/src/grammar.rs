//! Value grammars of WARC named fields, as the specification writes them.
//!
//! The reader accepts more than these (see docs/format-notes.md); a
//! validator says where a value departs from the letter. Each check returns
//! why a value does not conform, as a plain phrase.

use warchest::fields::is_token_char;
use warchest::warc::{DatePrecision, WarcDate};

/// True for `token` (RFC 2616 section 2.2): one or more token characters.
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_token_char)
}

/// Character classes of RFC 3986, by byte.
const URI_CHAR: u8 = 1; // unreserved, sub-delims, ':' '@' '/' '?'
const URI_PCT: u8 = 2; // '%'
const URI_HASH: u8 = 4; // '#'
const URI_BRACKET: u8 = 8; // '[' ']'

const fn uri_classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = if c.is_ascii_alphanumeric() {
            URI_CHAR
        } else {
            match c {
                b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*'
                | b'+' | b',' | b';' | b'=' | b':' | b'@' | b'/' | b'?' => URI_CHAR,
                b'%' => URI_PCT,
                b'#' => URI_HASH,
                b'[' | b']' => URI_BRACKET,
                _ => 0,
            }
        };
        i += 1;
    }
    t
}

static URI_CLASSES: [u8; 256] = uri_classes();

/// Whether every byte of `b` is an ordinary URI character (class
/// `URI_CHAR`). `URI_CHAR` is the only class with its lowest bit set, so
/// the classes of eight bytes are ANDed together and tested once: no
/// branch a byte (this runs on every URI and record id of every record).
fn all_uri_chars(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let m = c
            .iter()
            .fold(URI_CHAR, |m, &x| m & URI_CLASSES[usize::from(x)]);
        if m == 0 {
            return false;
        }
    }
    chunks
        .remainder()
        .iter()
        .all(|&c| URI_CLASSES[usize::from(c)] == URI_CHAR)
}

/// Checks an absolute URI (RFC 3986 section 3: `scheme ":" hier-part
/// ["?" query] ["#" fragment]`) character by character: a scheme, no white
/// space, no character outside the URI alphabet, percent signs followed by
/// two hex digits, `[` `]` only in the authority, one `#` at most.
pub(crate) fn check_uri(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err("is empty".into());
    }
    let colon = b.iter().position(|&c| c == b':');
    let scheme_ok = |end: usize| {
        end > 0
            && b[0].is_ascii_alphabetic()
            && b[1..end]
                .iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
    };
    let colon = match colon {
        Some(c) if scheme_ok(c) => c,
        _ if b.contains(&b' ') => return Err("contains a space".into()),
        _ => return Err("is not an absolute URI: no scheme".into()),
    };
    let rest = &b[colon + 1..];
    // The common case first: every byte an ordinary URI character.
    if all_uri_chars(rest) {
        return Ok(());
    }
    // The authority, where IP literals may use brackets.
    let authority = if rest.starts_with(b"//") {
        let end = rest[2..]
            .iter()
            .position(|&c| matches!(c, b'/' | b'?' | b'#'))
            .map_or(rest.len(), |p| p + 2);
        2..end
    } else {
        0..0
    };
    let mut fragment = false;
    let mut i = 0;
    while i < rest.len() {
        let c = rest[i];
        match URI_CLASSES[usize::from(c)] {
            URI_CHAR => {}
            URI_PCT => {
                let ok = rest
                    .get(i + 1..i + 3)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
                if !ok {
                    return Err("holds a '%' not followed by two hex digits".into());
                }
                i += 3;
                continue;
            }
            URI_HASH if !fragment => fragment = true,
            URI_BRACKET if authority.contains(&i) => {}
            _ if c == b' ' => return Err("contains a space".into()),
            _ if c.is_ascii_whitespace() => return Err("contains white space".into()),
            _ if c >= 0x80 => {
                return Err("holds non-ASCII characters, which must be percent-encoded".into());
            }
            _ if c < 0x20 || c == 0x7f => return Err("holds a control character".into()),
            _ => {
                return Err(format!(
                    "holds '{}', which must be percent-encoded",
                    char::from(c)
                ));
            }
        }
        i += 1;
    }
    Ok(())
}

/// Checks `"<" uri ">"`, the form of WARC-Record-ID and the fields that
/// name records.
pub(crate) fn check_id_uri(s: &str) -> Result<(), String> {
    let inner = match (s.starts_with('<'), s.ends_with('>') && s.len() > 1) {
        (true, true) => &s[1..s.len() - 1],
        (false, false) => return Err("is not inside <...>".into()),
        (true, false) => return Err("has no closing '>'".into()),
        (false, true) => return Err("has no opening '<'".into()),
    };
    check_uri(inner)
}

/// Removes one pair of `<...>` around a value, if present.
pub(crate) fn strip_brackets(s: &str) -> (&str, bool) {
    match s.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
        Some(t) => (t, true),
        None => (s, false),
    }
}

/// Checks `1*DIGIT` (a non-negative integer that fits 64 bits).
pub(crate) fn check_integer(s: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err("is not a decimal number".into());
    }
    s.parse::<u64>()
        .map_err(|_| "is too large for a 64-bit number".into())
}

/// Checks an IPv4 dotted quad or an IPv6 address.
pub(crate) fn check_ip(s: &str) -> Result<(), String> {
    if s.parse::<std::net::Ipv4Addr>().is_ok() || s.parse::<std::net::Ipv6Addr>().is_ok() {
        Ok(())
    } else {
        Err("is neither an IPv4 dotted quad nor an IPv6 address".into())
    }
}

/// Checks `media-type = type "/" subtype *( OWS ";" OWS parameter )`,
/// `parameter = token "=" ( token | quoted-string )` (WARC section 5.6 with
/// the white space of erratum #38).
pub(crate) fn check_media_type(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    let token = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && is_token_char(b[*i]) {
            *i += 1;
        }
        *i > start
    };
    let ows = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t') {
            *i += 1;
        }
    };
    if !token(&mut i) {
        return Err("has no type before '/'".into());
    }
    if b.get(i) != Some(&b'/') {
        return Err("is not type/subtype".into());
    }
    i += 1;
    if !token(&mut i) {
        return Err("has no subtype after '/'".into());
    }
    loop {
        ows(&mut i);
        if i == b.len() {
            return Ok(());
        }
        if b[i] != b';' {
            return Err(format!(
                "has '{}' where ';' or the end was expected",
                char::from(b[i])
            ));
        }
        i += 1;
        ows(&mut i);
        if !token(&mut i) {
            return Err("has a parameter without a name".into());
        }
        if b.get(i) != Some(&b'=') {
            return Err("has a parameter without '=value'".into());
        }
        i += 1;
        if b.get(i) == Some(&b'"') {
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err("has an unterminated quoted string".into()),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => i += 2,
                    Some(&c) if c < 0x20 && c != b'\t' => {
                        return Err("has a control character in a quoted string".into());
                    }
                    Some(_) => i += 1,
                }
            }
        } else if !token(&mut i) {
            return Err("has a parameter without a value".into());
        }
    }
}

/// What a date's form says, beyond what the value means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DateForm {
    /// The precision written.
    pub precision: DatePrecision,
    /// `t` or `z` written in lower case.
    pub lowercase: bool,
}

/// Checks a W3CDTF UTC timestamp: the forms `YYYY`, `YYYY-MM`,
/// `YYYY-MM-DD`, `YYYY-MM-DDThh:mmZ`, `YYYY-MM-DDThh:mm:ssZ` and
/// `YYYY-MM-DDThh:mm:ss.sZ` (1 to 9 fraction digits), a real calendar date.
pub(crate) fn check_date(s: &str) -> Result<(DateForm, WarcDate), String> {
    let d = WarcDate::parse(s).map_err(|e| e.reason.to_string())?;
    let b = s.as_bytes();
    if d.had_offset {
        return Err("has a numeric time zone offset instead of Z (UTC)".into());
    }
    let mut lowercase = false;
    if b.len() > 10 {
        match b[10] {
            b'T' => {}
            b't' => lowercase = true,
            _ => return Err("has no 'T' between date and time".into()),
        }
        match b.last() {
            Some(b'Z') => {}
            Some(b'z') => lowercase = true,
            _ => return Err("does not end in Z".into()),
        }
    }
    if let DatePrecision::Fraction(_) = d.precision {
        let digits = b.len().saturating_sub(21);
        if digits > 9 {
            return Err(format!(
                "has {digits} fraction digits; at most 9 are allowed"
            ));
        }
    }
    let form = DateForm {
        precision: d.precision,
        lowercase,
    };
    Ok((form, d))
}

/// True when `bytes` is ISO 8859-1 text: printable characters, and LF when
/// `lf` is allowed (RFC 1952 FNAME and FCOMMENT).
pub(crate) fn is_latin1_text(bytes: &[u8], lf: bool) -> bool {
    bytes
        .iter()
        .all(|&c| (0x20..0x7f).contains(&c) || c >= 0xa0 || (lf && c == b'\n'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_uri_chars_is_each_byte_of_class_uri_char() {
        use super::{URI_CHAR, URI_CLASSES, all_uri_chars};
        let base: Vec<u8> = b"http://example.com/a?b=c;d".repeat(2);
        // Every byte value at every place of every length up to 40 (the
        // eight-byte chunks and the remainder), against a byte loop.
        for len in 0..40 {
            let mut s = base[..len].to_vec();
            assert!(all_uri_chars(&s), "{len}");
            for at in 0..len {
                for b in 0..=255u8 {
                    let old = s[at];
                    s[at] = b;
                    assert_eq!(
                        all_uri_chars(&s),
                        URI_CLASSES[usize::from(b)] == URI_CHAR,
                        "{len} {at} {b}"
                    );
                    s[at] = old;
                }
            }
        }
    }

    use super::*;

    #[test]
    fn uris() {
        for ok in [
            "http://example.com/",
            "https://[::1]:8080/a?b=c#d",
            "urn:uuid:d7ae5c10-e6b3-4d27-967d-34780c58ba39",
            "dns:www.archive.org",
            "DNS:WWW.ARCHIVE.ORG",
            "file://var/www/htdoc/images/logoc.jpg",
            "http://a/%20b",
            "mailto:a@b.c",
        ] {
            assert_eq!(check_uri(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("bad_uri", "no scheme"),
            ("zaphod", "no scheme"),
            ("http://a/b c", "space"),
            ("http://a/|", "'|'"),
            ("http://a/%2", "two hex"),
            ("http://a/é", "non-ASCII"),
            ("http://a/?x[]=1", "'['"),
            ("http://a/#a#b", "'#'"),
            ("1http://a", "no scheme"),
        ] {
            let e = check_uri(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn id_uris() {
        assert_eq!(check_id_uri("<urn:uuid:1234>"), Ok(()));
        assert!(check_id_uri("urn:uuid:1234").unwrap_err().contains("<...>"));
        assert!(
            check_id_uri("<urn:uuid:1234")
                .unwrap_err()
                .contains("closing")
        );
        assert!(check_id_uri("<zaphod>").unwrap_err().contains("scheme"));
        assert!(check_id_uri("<>").is_err());
        assert!(check_id_uri(">").is_err());
        assert_eq!(strip_brackets("<a:b>"), ("a:b", true));
        assert_eq!(strip_brackets("a:b"), ("a:b", false));
    }

    #[test]
    fn media_types() {
        for ok in [
            "application/http; msgtype=response",
            "application/http;msgtype=request",
            "text/html; charset=\"utf-8\"",
            "application/warc-fields",
            "text/plain ; a=b ;c=\"x\\\"y\"",
        ] {
            assert_eq!(check_media_type(ok), Ok(()), "{ok}");
        }
        for bad in [
            "gif\\image",
            "text",
            "text/",
            "/html",
            "text/html;",
            "text/html; charset",
            "text/html; =x",
            "text/html; a=\"open",
            "text/html x",
        ] {
            assert!(check_media_type(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn integers_ips_tokens() {
        assert_eq!(check_integer("0"), Ok(0));
        assert_eq!(check_integer("693"), Ok(693));
        for bad in ["", "-1", "1e3", "very lengthy", "99999999999999999999999"] {
            assert!(check_integer(bad).is_err(), "{bad}");
        }
        for ok in [
            "207.241.229.39",
            "::1",
            "2001:db8::ff00:42:8329",
            "::ffff:1.2.3.4",
        ] {
            assert_eq!(check_ip(ok), Ok(()), "{ok}");
        }
        for bad in ["a.b.c.d", "1.2.3", "256.1.1.1", "", "fe80::1%eth0"] {
            assert!(check_ip(bad).is_err(), "{bad}");
        }
        assert!(is_token("response"));
        assert!(!is_token("two words"));
        assert!(!is_token(""));
    }

    #[test]
    fn dates() {
        let f = check_date("2008-04-30T20:48:25Z").unwrap().0;
        assert_eq!(f.precision, DatePrecision::Second);
        assert!(!f.lowercase);
        let f = check_date("2008-04-30t20:48:25z").unwrap().0;
        assert!(f.lowercase);
        assert_eq!(
            check_date("2016-09-19T18:03:53.123456Z")
                .unwrap()
                .0
                .precision,
            DatePrecision::Fraction(6)
        );
        assert_eq!(check_date("2016").unwrap().0.precision, DatePrecision::Year);
        assert_eq!(
            check_date("2016-09-19").unwrap().0.precision,
            DatePrecision::Day
        );
        for bad in [
            "blue monday",
            "2009-03-65T08:43:19Z",
            "2009-03-05T08:43:19-0800",
            "2009-03-05 08:43:19Z",
            "2009-03-05T08:43:19",
            "2009-03-05T08:43:19.1234567890Z",
            "",
        ] {
            assert!(check_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn latin1() {
        assert!(is_latin1_text(b"file.warc", false));
        assert!(is_latin1_text(b"caf\xe9", false));
        assert!(!is_latin1_text(b"a\nb", false));
        assert!(is_latin1_text(b"a\nb", true));
        assert!(!is_latin1_text(b"a\x85", true));
    }
}
