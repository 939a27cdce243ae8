//! The URLs of CSS: `url(...)` and `@import "..."`, in style sheets,
//! `<style>` elements and `style` attributes.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::LazyLock;

use regex::bytes::Regex;

/// `url(...)` (after `@import` or not) or `@import` with a string. Bytes,
/// not Unicode (`-u`): a URL in a legacy charset is matched too, and CSS
/// white space is ASCII's. A backslash escapes the next character (any,
/// in a string: there a newline after it continues the string), or up to
/// six hex digits and one white space. No raw newline inside a string or
/// a bare URL: CSS ends them there.
static CSS_URL: LazyLock<Regex> = LazyLock::new(|| {
    let ws = r"[\t\n\x0C\r ]";
    let dq = r#""((?:\\(?s:.)|[^"\\\n\r\x0C])*)""#;
    let sq = r#"'((?:\\(?s:.)|[^'\\\n\r\x0C])*)'"#;
    // A hex escape takes one white space after it, even in a bare URL.
    let bare =
        r#"((?:\\[0-9A-Fa-f]{1,6}(?:\r\n|[\t\n\x0C\r ])?|\\[^\n\r\x0C]|[^)"'\\\t\n\x0C\r ])*)"#;
    Regex::new(&format!(
        r"(?i-u)(@import{ws}*)?url\({ws}*(?:{dq}|{sq}|{bare}){ws}*\)|@import{ws}*(?:{dq}|{sq})"
    ))
    .expect("a valid constant pattern")
});

/// How a stylesheet names a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CssUrlForm {
    /// `url(...)`, not after `@import`: an image, a font...
    Url,
    /// `@import url(...)`: a stylesheet.
    ImportUrl,
    /// `@import "..."`: a stylesheet.
    Import,
}

/// A URL that CSS names, found by [`css_urls`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CssUrl {
    /// Where the URL lies in the text: inside its quotes, or between the
    /// parentheses of a bare `url()` without the white space around it;
    /// escapes as written (see [`css_unescape`]). May be empty (`url()`).
    pub range: Range<usize>,
    /// The quote it is written between (`"` or `'`), `None` for a bare
    /// `url(...)`: what [`css_escape`] must escape to write one back.
    pub quote: Option<u8>,
    /// How it is named.
    pub form: CssUrlForm,
    /// The whole of what names it: `url(...)` with its parentheses, or
    /// `@import` and its string (a reader of CSS in pieces must not cut
    /// inside it).
    pub token: Range<usize>,
}

/// The URLs of CSS `text`, in order: `url(...)` in any case, with or
/// without quotes, white space inside the parentheses, backslash escapes
/// (`url(a\)b.png)` names `a)b.png`), and `@import "..."` / `@import '...'`
/// without `url()`. The same matcher for the crawler (what it archives)
/// and replay (what it rewrites), so that the two agree.
///
/// Not a CSS tokenizer: comments and strings are not skipped (a URL in a
/// comment is found too, which costs at most a fetch), a string or a bare
/// URL with a raw newline in it is not matched (CSS ends it there). Bytes
/// in any ASCII-compatible charset. Linear time (the `regex` crate), no
/// allocation per match beyond the iterator's.
pub fn css_urls(text: &[u8]) -> impl Iterator<Item = CssUrl> + '_ {
    CSS_URL.captures_iter(text).filter_map(|c| {
        let (g, m) = (2..=6).find_map(|g| c.get(g).map(|m| (g, m)))?;
        let quote = match g {
            2 | 5 => Some(b'"'),
            3 | 6 => Some(b'\''),
            _ => None,
        };
        let form = if g >= 5 {
            CssUrlForm::Import
        } else if c.get(1).is_some() {
            CssUrlForm::ImportUrl
        } else {
            CssUrlForm::Url
        };
        Some(CssUrl {
            range: m.range(),
            quote,
            form,
            token: c.get(0).map_or(m.range(), |t| t.range()),
        })
    })
}

/// The most CSS or script text a reader in pieces holds back while it
/// waits for a statement's (or a script line's) end, in bytes: past it,
/// an `url(` or `@import` never finished no longer holds the rest back
/// (`hold_open` false in [`css_cut`]), and a line without an end is read
/// as it stands. One value for the crawler's link extractor
/// (`warchest-crawl`) and replay's rewriter (`warchest-replay`): with two,
/// a statement longer than the smaller with a URL across its mark would
/// be rewritten by one and never found (so never archived) by the other.
pub const MAX_CARRY: usize = 256 << 10;

/// Where CSS that comes in pieces may be cut, the part before the cut read
/// now and the rest held back for the next piece (0: hold it all), so that
/// [`css_urls`] of the parts finds what it finds in the whole: after a
/// `;`, a `}` or a line end, but never inside a URL's token (white space
/// may stand inside `url( ... )` and after `@import`, and `;` in a bare
/// `url()`) nor after an `url(` or `@import` (in any case) whose URL is
/// not found yet (or found only inside another's string not yet closed):
/// there the cut goes back before it. The crawler's link extractor and
/// replay's rewriter cut CSS with it, so both read a stylesheet in pieces
/// as whole. Linear in `b` for each of at most 16 steps back.
///
/// A caller bounds what it holds: past its bound it passes `hold_open`
/// false, and an `url(` or `@import` never finished (`@import` named in a
/// comment) no longer holds the rest back; the cut still falls outside
/// every URL found.
pub fn css_cut(b: &[u8], hold_open: bool) -> usize {
    css_cut_urls(b, hold_open).0
}

/// [`css_cut`] and the URLs of `b[..cut]`, as [`css_urls`] finds them, from
/// one pass of the matcher over `b`: for a reader that wants both (the
/// crawler's link extractor), not a second pass over the part.
///
/// They are the matches in all of `b` that end at or before the cut.
/// Exact: the pattern (`CSS_URL`) has no assertion, nothing that looks at
/// the end of the text, so a match of `b[..cut]` is one of `b` and a
/// match of `b` within `b[..cut]` one of `b[..cut]`; and the cut is never
/// inside a match of `b`, so each match leftmost-first picks in `b`
/// before the cut is its first pick in `b[..cut]` too (whose candidates
/// are a subset of `b`'s), and after the last of them `b[..cut]` has none.
pub fn css_cut_urls(b: &[u8], hold_open: bool) -> (usize, Vec<CssUrl>) {
    let boundary_before = |at: usize| {
        b[..at]
            .iter()
            .rposition(|&c| matches!(c, b';' | b'}' | b'\n'))
            .map_or(0, |i| i + 1)
    };
    let mut cut = boundary_before(b.len());
    if cut == 0 {
        return (0, Vec::new());
    }
    let mut urls: Vec<CssUrl> = css_urls(b).collect();
    // The first opening no URL was found for, in all of `b`: before any
    // cut, it is the first before that cut too (one scan, not one a step).
    let open = if hold_open {
        first_unfinished(b, &urls)
    } else {
        None
    };
    let cut = 'found: {
        for _ in 0..16 {
            if cut == 0 {
                break;
            }
            if let Some(u) = urls
                .iter()
                .find(|u| u.token.start < cut && cut < u.token.end)
            {
                cut = boundary_before(u.token.start);
                continue;
            }
            match open.filter(|&p| p < cut) {
                Some(p) => cut = boundary_before(p),
                None => break 'found cut,
            }
        }
        0
    };
    urls.retain(|u| u.token.end <= cut);
    (cut, urls)
}

/// Where the first `url(` or `@import` (in any case) of CSS `b` starts
/// that the token of none of `urls` (in order, apart) holds: one whose URL
/// is not found yet, or not as itself (an `url(` in an `@import` string
/// not yet closed).
fn first_unfinished(b: &[u8], urls: &[CssUrl]) -> Option<usize> {
    let mut k = 0;
    (0..b.len()).find(|&i| {
        let rest = &b[i..];
        let opens = (rest.len() >= 4 && rest[..4].eq_ignore_ascii_case(b"url("))
            || (rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"@import"));
        if !opens {
            return false;
        }
        while urls.get(k).is_some_and(|u| u.token.end <= i) {
            k += 1;
        }
        urls.get(k).is_none_or(|u| u.token.start > i)
    })
}

/// `raw`, a URL as [`css_urls`] found it, with its CSS escapes resolved:
/// `\)` is `)`, `\26 ` (up to six hex digits and one white space after) is
/// `&`, a backslash before a newline (a string's line continuation) is
/// nothing; `\0`, surrogates and values past U+10FFFF are U+FFFD.
/// Borrowed when `raw` holds no backslash.
pub fn css_unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut it = raw.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let mut v = 0u32;
        let mut digits = 0;
        while digits < 6
            && let Some(d) = it.peek().and_then(|d| d.to_digit(16))
        {
            v = v * 16 + d;
            digits += 1;
            it.next();
        }
        if digits == 0 {
            match it.next() {
                // Escaped newlines vanish (`\r\n` is one newline).
                Some('\r') => {
                    it.next_if_eq(&'\n');
                }
                Some('\n' | '\x0C') | None => {}
                Some(e) => out.push(e),
            }
            continue;
        }
        out.push(match char::from_u32(v) {
            Some('\0') | None => '\u{fffd}',
            Some(ch) => ch,
        });
        // One white space ends the escape (`\r\n` counting as one).
        match it.peek() {
            Some('\r') => {
                it.next();
                it.next_if_eq(&'\n');
            }
            Some(' ' | '\t' | '\n' | '\x0C') => {
                it.next();
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

/// `url` escaped to be written back where [`css_urls`] found one with
/// `quote` (`None`: a bare `url(...)`), so that CSS reads `url` again:
/// backslashes and the quote (in a bare URL: quotes, parentheses and
/// white space) escaped, control characters as hex escapes. Borrowed when
/// nothing needs escaping, as for the URLs a URL parser serializes.
pub fn css_escape(url: &str, quote: Option<u8>) -> Cow<'_, str> {
    let needs = |c: char| match quote {
        Some(q) => c == '\\' || c == char::from(q) || c.is_ascii_control(),
        None => matches!(c, '\\' | '"' | '\'' | '(' | ')' | ' ') || c.is_ascii_control(),
    };
    if !url.chars().any(needs) {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len() + 8);
    for c in url.chars() {
        if !needs(c) {
            out.push(c);
        } else if c.is_ascii_control() || c == ' ' {
            // A hex escape and the space that ends it: no character
            // after it can be read as one more hex digit.
            let _ = write!(out, "\\{:X} ", u32::from(c));
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {

    #[test]
    fn cuts_never_split_a_url() {
        for (css, cut) in [
            (&b"a{b:url(x.png)}\nc{"[..], 16),
            (b"a{b:url(\n x.png\n)}", 18),
            (b"a{b:url(\n x.png\n", 0),
            (b"p{}\na{b:url(y;z", 4),
            (b"p{}\n@import\n", 4),
            (b"p{}\n@import\n'i.css';q{", 20),
            (b"/* url( */\np{};", 0),
            (b"no boundary", 0),
            // An `url(` inside an `@import` string not closed yet.
            (b"T@import \"/curl(ng);", 0),
            (b"T@import \"/curl(ng);\";", 22),
        ] {
            assert_eq!(css_cut(css, true), cut, "{}", String::from_utf8_lossy(css));
        }
        // Past a caller's bound, an opening never finished holds nothing
        // back; a URL found is still never cut.
        assert_eq!(css_cut(b"/* @import */\np{};", false), 18);
        assert_eq!(css_cut(b"/* @import */\np{};", true), 0);
        assert_eq!(css_cut(b"p{}\na{b:url(\n x.png\n)}", false), 22);
    }

    use super::*;

    /// Pieces of CSS-ish text: what opens, closes and escapes a URL, and
    /// what a cut may follow.
    const FRAGMENTS: [&str; 14] = [
        "url(", "URL( ", ")", "\"", "'", "\\", ";", "}", "\n", " ", "@import", "a.png", "x{b:",
        "/*",
    ];

    proptest::proptest! {
        // Cheap cases: more of them reach URLs on both sides of a cut.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]

        /// The URLs [`css_cut_urls`] gives with its cut are those
        /// [`css_urls`] finds in the text before the cut.
        #[test]
        fn cut_urls_are_the_urls_before_the_cut(
            parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..40),
            hold_open: bool,
        ) {
            let b: Vec<u8> = parts.iter().flat_map(|&i| FRAGMENTS[i].bytes()).collect();
            let (cut, urls) = css_cut_urls(&b, hold_open);
            proptest::prop_assert_eq!(urls, css_urls(&b[..cut]).collect::<Vec<_>>());
        }
    }

    fn found(text: &str) -> Vec<(&str, Option<u8>, CssUrlForm)> {
        css_urls(text.as_bytes())
            .map(|u| (&text[u.range], u.quote, u.form))
            .collect()
    }

    #[test]
    fn forms() {
        use CssUrlForm::*;
        let css = "@import url(\"a.css\");\n@import 'b.css' screen;@IMPORT\"c.css\";\
body{background:url(bg.png)} .x{background:URL( \"/i/x.gif\" )} .e{x:url()}\
.s{x:url( 'q r.png' )}";
        assert_eq!(
            found(css),
            [
                ("a.css", Some(b'"'), ImportUrl),
                ("b.css", Some(b'\''), Import),
                ("c.css", Some(b'"'), Import),
                ("bg.png", None, Url),
                ("/i/x.gif", Some(b'"'), Url),
                ("", None, Url),
                ("q r.png", Some(b'\''), Url),
            ]
        );
    }

    /// What replay's old pattern missed: escapes. `url(a\)b.png)` was cut
    /// at the escaped parenthesis.
    #[test]
    fn escapes() {
        let css = r#"a{b:url(a\)b.png)} c{d:url("x\"y.png")} e{f:url(s\ p.png)}"#;
        let got = found(css);
        assert_eq!(
            got.iter().map(|g| g.0).collect::<Vec<_>>(),
            [r"a\)b.png", r#"x\"y.png"#, r"s\ p.png"]
        );
        assert_eq!(css_unescape(r"a\)b.png"), "a)b.png");
        assert_eq!(css_unescape(r#"x\"y.png"#), "x\"y.png");
        assert_eq!(css_unescape(r"s\ p.png"), "s p.png");
        assert_eq!(
            css_unescape(r"\26 x\000026y\0 \110000z"),
            "&x&y\u{fffd}\u{fffd}z"
        );
        assert_eq!(css_unescape("a\\\r\nb\\\nc\\"), "abc");
        assert!(matches!(css_unescape("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn not_urls() {
        // A raw newline ends a string or a bare URL: no match.
        assert!(found("a{b:url(\"x\ny\")} c{d:url(x\ny)} @import \"a\nb\";").is_empty());
        // A quote inside a bare URL.
        assert!(found("a{b:url(x\"y)}").is_empty());
        assert!(found("url(").is_empty() && found("@import").is_empty());
    }

    #[test]
    fn legacy_bytes() {
        let css = b"a{b:url(caf\xe9.png)} @import '\xe9.css';";
        let got: Vec<_> = css_urls(css).map(|u| css[u.range].to_vec()).collect();
        assert_eq!(got, [b"caf\xe9.png".to_vec(), b"\xe9.css".to_vec()]);
    }

    #[test]
    fn escaping_round_trips() {
        let nasty = "/a b(c)'d\"e\\f\ng\u{7f}é.png";
        for (quote, wrap) in [
            (None, ("url(", ")")),
            (Some(b'"'), ("url(\"", "\")")),
            (Some(b'\''), ("@import '", "'")),
        ] {
            let text = format!("{}{}{}", wrap.0, css_escape(nasty, quote), wrap.1);
            let urls: Vec<_> = css_urls(text.as_bytes()).collect();
            assert_eq!(urls.len(), 1, "{text}");
            assert_eq!(urls[0].quote, quote);
            assert_eq!(css_unescape(&text[urls[0].range.clone()]), nasty, "{text}");
        }
        assert!(matches!(
            css_escape("http://x.test/a?b=1&c", None),
            Cow::Borrowed(_)
        ));
    }
}
