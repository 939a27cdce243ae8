//! The URL of a refresh: `<meta http-equiv=refresh content="...">` and the
//! `Refresh` header.

use std::ops::Range;

/// Where the URL of a refresh value lies in it (character references
/// already decoded), read as HTML's "shared declarative refresh steps"
/// read it: white space, a time (digits and dots, at least one digit or a
/// leading dot), then a `;`, a `,` or white space, then the URL, with or
/// without `url=` (any case, white space around the `=`), with or
/// without quotes (a quoted URL ends at its closing quote, or runs to the
/// end when there is none). So `5; url=/next`, `0;URL='x'`, `3, x`,
/// `5 x` and `5;x` all name the URL they hold.
///
/// `None` when the value is not a refresh (no time, or something else
/// after it: `; x`, `5x`) or names no URL (`10`, `0; url=`: a refresh of
/// the page itself). The range leaves out trailing white space, as the
/// URL parser does; the URL is otherwise as written (not trimmed of
/// anything else, not resolved). Linear, no allocation.
pub fn refresh_url(content: &str) -> Option<Range<usize>> {
    let b = content.as_bytes();
    let ws = |i: usize| b.get(i).is_some_and(u8::is_ascii_whitespace);
    let mut i = 0;
    while ws(i) {
        i += 1;
    }
    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 && b.get(i) != Some(&b'.') {
        return None;
    }
    i += digits;
    i += b[i..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'.')
        .count();
    match b.get(i) {
        None => return None,
        Some(b';' | b',') => i += 1,
        Some(c) if c.is_ascii_whitespace() => {
            while ws(i) {
                i += 1;
            }
            if matches!(b.get(i), Some(b';' | b',')) {
                i += 1;
            }
        }
        Some(_) => return None,
    }
    while ws(i) {
        i += 1;
    }
    let mut start = i;
    let mut quote = None;
    // `url` then `=`: both optional; without the `=` the URL starts where
    // the `u` was (`5; urls.html` names `urls.html`).
    if b.get(i).is_some_and(|c| c.eq_ignore_ascii_case(&b'u')) {
        if b.get(i + 1).is_some_and(|c| c.eq_ignore_ascii_case(&b'r'))
            && b.get(i + 2).is_some_and(|c| c.eq_ignore_ascii_case(&b'l'))
        {
            let mut j = i + 3;
            while ws(j) {
                j += 1;
            }
            if b.get(j) == Some(&b'=') {
                j += 1;
                while ws(j) {
                    j += 1;
                }
                (start, quote) = skip_quote(b, j);
            }
        }
    } else {
        (start, quote) = skip_quote(b, i);
    }
    let mut end = quote
        .and_then(|q| b[start..].iter().position(|c| *c == q))
        .map_or(b.len(), |close| start + close);
    while end > start && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    // Every index here follows or precedes an ASCII byte: char boundaries.
    (end > start).then_some(start..end)
}

/// Past an opening quote at `i`, if there is one, and which.
fn skip_quote(b: &[u8], i: usize) -> (usize, Option<u8>) {
    match b.get(i) {
        Some(&q @ (b'"' | b'\'')) => (i + 1, Some(q)),
        _ => (i, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Option<&str> {
        refresh_url(s).map(|r| &s[r])
    }

    #[test]
    fn what_the_crawler_read() {
        assert_eq!(url("5; url=/next"), Some("/next"));
        assert_eq!(url("0;URL='x y'"), Some("x y"));
        assert_eq!(url("3, other"), Some("other"));
        assert_eq!(url("10"), None);
        assert_eq!(url(" 0 ; Url = \"q.html\" trailing"), Some("q.html"));
        assert_eq!(url("1.5;url=a"), Some("a"));
        assert_eq!(url(".5;url=a"), Some("a"));
    }

    /// What replay's old search for `url=` missed: no `url=` at all.
    #[test]
    fn without_url_equals() {
        let s = "5; http://x.test/";
        assert_eq!(refresh_url(s), Some(3..17));
        assert_eq!(url("5 http://x.test/  "), Some("http://x.test/"));
        assert_eq!(url("0;'quoted.html'"), Some("quoted.html"));
        assert_eq!(url("0; urls.html"), Some("urls.html"));
        assert_eq!(url("0; url x.html"), Some("url x.html"));
        assert_eq!(url("0; ur=x"), Some("ur=x"));
    }

    #[test]
    fn not_refreshes_or_no_url() {
        for s in [
            "",
            " ",
            "; url=x",
            "x",
            "5x; url=y",
            "0;",
            "0; url=",
            "0; url= ''",
            "0 ,  ",
        ] {
            assert_eq!(url(s), None, "{s:?}");
        }
        // A quote never closed runs to the end.
        assert_eq!(url("0; url='a.html"), Some("a.html"));
        assert_eq!(url("0; url=\"é\"x"), Some("é"));
    }

    #[test]
    fn no_panic() {
        for s in [
            "'", "0'", "0;'", "0;u", "0;ur", "0;url", "0;url=", "0;url='", "é", "0;é",
        ] {
            let _ = refresh_url(s);
        }
    }
}
