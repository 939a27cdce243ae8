//! URLs in replay: resolving references against a page's URL (RFC 3986
//! section 5.2, enough of it for web pages), archive URLs
//! (`/{collection}/{timestamp}{modifier}/{url}`), and timestamps.

/// The scheme of `s` when it starts with one (`http:`, `data:`), lower-case.
pub fn scheme(s: &str) -> Option<String> {
    let end = s.find(':')?;
    let sch = &s[..end];
    let mut bytes = sch.bytes();
    let first = bytes.next()?;
    if !first.is_ascii_alphabetic()
        || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
    {
        return None;
    }
    Some(sch.to_ascii_lowercase())
}

/// Resolves `reference` against the absolute URL `base` (RFC 3986 section
/// 5.2, as browsers do it: the `url` crate). A reference with a scheme of
/// its own (`https:`, `data:`, `javascript:`) is returned as written.
/// `None` when the base is not absolute.
pub fn resolve(base: &str, reference: &str) -> Option<String> {
    let r = reference.trim_matches(|c: char| c.is_ascii_whitespace());
    if scheme(r).is_some() {
        return Some(r.to_string());
    }
    let base = url::Url::parse(base).ok()?;
    base.join(r).ok().map(String::from)
}

/// Modifiers of archive URLs, as pywb names them.
pub mod modifier {
    /// The archived bytes, unchanged.
    pub const IDENTITY: &str = "id_";
    /// An image (served as archived, no banner).
    pub const IMAGE: &str = "im_";
    /// A script: rewritten as JavaScript.
    pub const SCRIPT: &str = "js_";
    /// A stylesheet: rewritten as CSS.
    pub const STYLE: &str = "cs_";
    /// A frame: rewritten, no banner.
    pub const FRAME: &str = "if_";
    /// Embedded object or media: no banner.
    pub const OBJECT: &str = "oe_";
    /// Page content without the banner.
    pub const PAGE: &str = "mp_";
    /// A service worker's script: JavaScript, the client script first.
    pub const SERVICE_WORKER: &str = "sw_";
}

/// The modifiers recognised after a timestamp.
const MODIFIERS: [&str; 9] = [
    "id_", "im_", "js_", "cs_", "if_", "fr_", "oe_", "mp_", "sw_",
];

/// A parsed `{timestamp}{modifier}` path segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeSpec {
    /// The digits given (1 to 14 of them).
    pub timestamp: String,
    /// The modifier (`""` for none).
    pub modifier: String,
}

impl TimeSpec {
    /// Parses `20140126200624`, `2014im_`, `20140126200624id_`; `None` for
    /// anything else.
    pub fn parse(seg: &str) -> Option<TimeSpec> {
        let digits = seg.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 14 {
            return None;
        }
        let modifier = &seg[digits..];
        if !modifier.is_empty() && !MODIFIERS.contains(&modifier) {
            return None;
        }
        Some(TimeSpec {
            timestamp: seg[..digits].to_string(),
            modifier: modifier.to_string(),
        })
    }
}

/// Pads a partial timestamp to 14 digits with the earliest values
/// (`2014` -> `20140101000000`).
pub fn pad_timestamp(ts: &str) -> String {
    const LOW: &str = "00000101000000";
    let digits: String = ts.chars().filter(char::is_ascii_digit).take(14).collect();
    let mut s = digits.clone();
    s.push_str(&LOW[digits.len()..]);
    if s.starts_with("0000") {
        s.replace_range(..4, "1000");
    }
    s
}

/// Seconds since 1970 of a 14-digit timestamp (out-of-range parts clamped).
pub fn timestamp_seconds(ts: &str) -> i64 {
    let p = pad_timestamp(ts);
    let n = |a: usize, b: usize| p[a..b].parse::<i64>().unwrap_or(0);
    let (y, mo, d) = (n(0, 4), n(4, 6).clamp(1, 12), n(6, 8).clamp(1, 31));
    let (h, mi, s) = (n(8, 10).min(23), n(10, 12).min(59), n(12, 14).min(59));
    days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// A 14-digit timestamp as an HTTP date (`Sun, 26 Jan 2014 20:06:24 GMT`),
/// as Memento-Datetime wants it.
pub fn http_date(ts: &str) -> String {
    let p = pad_timestamp(ts);
    let secs = timestamp_seconds(ts);
    let dow = DAYS[secs.div_euclid(86_400).rem_euclid(7) as usize];
    let mo = p[4..6].parse::<usize>().unwrap_or(1).clamp(1, 12);
    format!(
        "{dow}, {} {} {} {}:{}:{} GMT",
        &p[6..8],
        MONTHS[mo - 1],
        &p[..4],
        &p[8..10],
        &p[10..12],
        &p[12..14]
    )
}

/// Parses an HTTP date (`Sun, 26 Jan 2014 20:06:24 GMT`, as in
/// Accept-Datetime) into a 14-digit timestamp.
pub fn parse_http_date(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.split_once(',').map_or(s, |(_, r)| r).trim();
    let mut it = s.split_ascii_whitespace();
    let day: u32 = it.next()?.parse().ok()?;
    let mon = it.next()?;
    let mo = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(mon))? + 1;
    let year: u32 = it.next()?.parse().ok()?;
    let hms: Vec<u32> = it
        .next()?
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    if hms.len() != 3 || day == 0 || day > 31 || year > 9999 {
        return None;
    }
    Some(format!(
        "{year:04}{mo:02}{day:02}{:02}{:02}{:02}",
        hms[0], hms[1], hms[2]
    ))
}

/// The URL part of a replay path, made absolute the way browsers and
/// proxies may have mangled it: `http:/x` (slashes merged) becomes
/// `http://x`, and a URL without a scheme gets `http://`.
pub fn normalize_target(url: &str) -> String {
    for sch in ["http:", "https:"] {
        if let Some(rest) = url.strip_prefix(sch)
            && !rest.starts_with("//")
        {
            return format!("{sch}//{}", rest.trim_start_matches('/'));
        }
    }
    if scheme(url).is_some() && url.contains("://") {
        url.to_string()
    } else if let Some(rest) = url.strip_prefix("//") {
        format!("http://{rest}")
    } else {
        format!("http://{url}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_references() {
        let b = "http://a.example/b/c/d;p?q";
        for (r, want) in [
            ("g", "http://a.example/b/c/g"),
            ("./g", "http://a.example/b/c/g"),
            ("g/", "http://a.example/b/c/g/"),
            ("/g", "http://a.example/g"),
            // The url crate writes the empty path of an http URL as "/".
            ("//g", "http://g/"),
            ("?y", "http://a.example/b/c/d;p?y"),
            ("g?y", "http://a.example/b/c/g?y"),
            ("#s", "http://a.example/b/c/d;p?q#s"),
            ("../g", "http://a.example/b/g"),
            ("../..", "http://a.example/"),
            ("../../../g", "http://a.example/g"),
            ("https://x.example/y", "https://x.example/y"),
            (" img.png ", "http://a.example/b/c/img.png"),
        ] {
            assert_eq!(resolve(b, r).as_deref(), Some(want), "{r}");
        }
        assert_eq!(
            resolve("http://example.com", "a.css").as_deref(),
            Some("http://example.com/a.css")
        );
        assert_eq!(resolve("not a url", "a"), None);
    }

    #[test]
    fn time_specs() {
        assert_eq!(
            TimeSpec::parse("20140126200624im_"),
            Some(TimeSpec {
                timestamp: "20140126200624".into(),
                modifier: "im_".into()
            })
        );
        assert_eq!(TimeSpec::parse("2014").unwrap().modifier, "");
        assert!(TimeSpec::parse("2014xx_").is_none());
        assert!(TimeSpec::parse("http:").is_none());
        assert!(TimeSpec::parse("123456789012345").is_none());
    }

    #[test]
    fn timestamps_and_dates() {
        assert_eq!(pad_timestamp("2014"), "20140101000000");
        assert_eq!(timestamp_seconds("19700101000000"), 0);
        assert_eq!(timestamp_seconds("20140126200624"), 1_390_766_784);
        assert_eq!(http_date("20140126200624"), "Sun, 26 Jan 2014 20:06:24 GMT");
        assert_eq!(
            parse_http_date("Sun, 26 Jan 2014 20:06:24 GMT").as_deref(),
            Some("20140126200624")
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }

    #[test]
    fn targets() {
        assert_eq!(normalize_target("http:/x.com/a"), "http://x.com/a");
        assert_eq!(normalize_target("x.com/a"), "http://x.com/a");
        assert_eq!(normalize_target("https://x.com/"), "https://x.com/");
    }
}
