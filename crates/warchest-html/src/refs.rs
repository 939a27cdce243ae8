//! Character references (`&amp;`, `&eacute;`, `&#233;`, `&#xE9;`) decoded
//! as HTML's tokenizer decodes them, with the standard's full table of
//! named references ([`crate::entities`]), in its two modes: in text
//! ([`decode_text_references`]) and in an attribute value
//! ([`decode_references`]). The one decoder of the workspace, so that the
//! crawler, replay and text extraction read a reference alike.

use std::borrow::Cow;

use crate::entities::ENTITIES;

/// `s`, an attribute value as written, with its character references
/// decoded as HTML's tokenizer decodes them in an attribute value: every
/// named reference of the standard's table (`&amp;`, `&colon;`,
/// `&hellip;`, `&NotNestedLessLess;`...), and numeric ones
/// ([`decode_text_references`] says how). The one difference from text:
/// a legacy name written without its `;` (`&amp`, `&copy`, `&not`...)
/// followed by a letter, a digit or `=` is kept as written, so that a URL's
/// `?a=1&copy=2` keeps its `&copy`, as in a browser.
///
/// Why a URL needs the names: `javascript&colon;` or `&sol;&sol;host`
/// must be read as the browser reads them, or a link escapes rewriting.
/// An `&` that starts no reference is kept. Linear in the length of `s`;
/// borrowed when `s` holds no `&`.
pub fn decode_references(s: &str) -> Cow<'_, str> {
    decode(s, true)
}

/// `s`, text (the character data of an element, or RCDATA: a `<title>`,
/// a `<textarea>`), with its character references decoded as HTML's
/// tokenizer decodes them there:
///
/// - named references: the longest name of the standard's table that the
///   text starts with, so that a legacy name needs no `;` even when a
///   letter follows (`&copy2026` is `©2026`, `&notit;` is `¬it;`); a
///   name may stand for two characters (`&NotNestedLessLess;` is `⪡̸`);
/// - numeric references (`&#47;`, `&#x2F;`, the `;` optional), with the
///   standard's replacements: `&#0;`, surrogates and values past U+10FFFF
///   become U+FFFD, and `&#128;`..`&#159;` the windows-1252 characters
///   they name (`&#150;` is `–`; the five bytes windows-1252 leaves
///   unmapped stay the C1 controls they are).
///
/// An `&` that starts no reference (`&bogus;`, `&#;`, `& `) is kept.
/// Linear in the length of `s`; borrowed when `s` holds no `&`.
pub fn decode_text_references(s: &str) -> Cow<'_, str> {
    decode(s, false)
}

/// The characters that numeric references to 0x80-0x9F stand for (the
/// standard's table, which is windows-1252's).
const C1: [char; 32] = [
    '\u{20AC}', '\u{81}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{8D}', '\u{017D}', '\u{8F}',
    '\u{90}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}', '\u{0153}', '\u{9D}', '\u{017E}', '\u{0178}',
];

/// The longest name of the table, with its `;`.
const MAX_NAME: usize = 32;
/// The longest legacy name (one that needs no `;`).
const MAX_LEGACY: usize = 6;

/// What `name` (a table key: without `&`, with its `;` if it has one)
/// stands for.
fn lookup(name: &str) -> Option<&'static str> {
    ENTITIES
        .binary_search_by(|(n, _)| n.as_bytes().cmp(name.as_bytes()))
        .ok()
        .map(|i| ENTITIES[i].1)
}

/// [`decode_text_references`], or [`decode_references`] when `in_attr`.
fn decode(s: &str, in_attr: bool) -> Cow<'_, str> {
    // `str::find` of a char searches a word at a time (core's memchr), and
    // text extraction runs this over every page of a corpus.
    let Some(first) = s.find('&') else {
        return Cow::Borrowed(s);
    };
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..first]);
    let mut i = first;
    while i < b.len() {
        // `b[i]` is `&`; every index `reference` gives follows an ASCII
        // byte, so it is a char boundary.
        match reference(&s[i + 1..], in_attr) {
            Some((Replacement::Char(c), used)) => {
                out.push(c);
                i += 1 + used;
            }
            Some((Replacement::Str(r), used)) => {
                out.push_str(r);
                i += 1 + used;
            }
            None => {
                out.push('&');
                i += 1;
            }
        }
        let next = s[i..].find('&').map_or(b.len(), |n| i + n);
        out.push_str(&s[i..next]);
        i = next;
    }
    Cow::Owned(out)
}

/// What a reference stands for: a numeric one's character, a named one's
/// text.
enum Replacement {
    Char(char),
    Str(&'static str),
}

/// The reference at the start of `s` (just after its `&`) and how many
/// bytes of `s` it takes; `None` when no reference starts there.
fn reference(s: &str, in_attr: bool) -> Option<(Replacement, usize)> {
    let b = s.as_bytes();
    if b.first() == Some(&b'#') {
        return numeric(b).map(|(c, used)| (Replacement::Char(c), used));
    }
    let run = b
        .iter()
        .take(MAX_NAME + 8)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if run == 0 {
        return None;
    }
    // A name with its `;` is the longest match there can be.
    if b.get(run) == Some(&b';')
        && let Some(r) = lookup(&s[..=run])
    {
        return Some((Replacement::Str(r), run + 1));
    }
    // Else the longest legacy name the run starts with.
    let (k, r) = (2..=run.min(MAX_LEGACY))
        .rev()
        .find_map(|k| lookup(&s[..k]).map(|r| (k, r)))?;
    if in_attr
        && b.get(k)
            .is_some_and(|&c| c == b'=' || c.is_ascii_alphanumeric())
    {
        // The standard's rule for attributes: the longest match is
        // not decoded, and no shorter one is tried.
        return None;
    }
    Some((Replacement::Str(r), k))
}

/// A numeric reference at the start of `b` (its `#` first): its
/// character and the bytes it takes, `None` without digits.
fn numeric(b: &[u8]) -> Option<(char, usize)> {
    let (radix, start) = match b.get(1) {
        Some(b'x' | b'X') => (16, 2),
        _ => (10, 1),
    };
    let mut j = start;
    let mut value: u32 = 0;
    while let Some(d) = b.get(j).and_then(|&c| char::from(c).to_digit(radix)) {
        // Saturating: a run of digits of any length is read in one pass
        // and stays past U+10FFFF, which is U+FFFD anyway.
        value = value.saturating_mul(radix).saturating_add(d).min(0x11_0000);
        j += 1;
    }
    if j == start {
        return None;
    }
    if b.get(j) == Some(&b';') {
        j += 1;
    }
    let c = match value {
        0 => '\u{FFFD}',
        0x80..=0x9F => C1[(value - 0x80) as usize],
        // Surrogates and values past U+10FFFF are no `char`.
        v => char::from_u32(v).unwrap_or('\u{FFFD}'),
    };
    Some((c, j))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary search needs the table sorted by bytes, and the bounds
    /// above must hold for it.
    #[test]
    fn table_sorted_and_bounded() {
        assert!(
            ENTITIES
                .windows(2)
                .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes())
        );
        assert_eq!(ENTITIES.len(), 2231);
        assert!(ENTITIES.iter().all(|(n, _)| n.len() <= MAX_NAME));
        assert!(
            ENTITIES
                .iter()
                .filter(|(n, _)| !n.ends_with(';'))
                .all(|(n, _)| n.len() <= MAX_LEGACY && lookup(&format!("{n};")).is_some())
        );
    }

    #[test]
    fn named_and_numeric() {
        for decode in [decode_references, decode_text_references] {
            assert_eq!(decode("a?b=1&amp;c=2&#38;d&#x26;e"), "a?b=1&c=2&d&e");
            assert_eq!(
                decode("&unknown; & &#xZZ; &#; &"),
                "&unknown; & &#xZZ; &#; &"
            );
            assert!(matches!(decode("no refs"), Cow::Borrowed(_)));
            assert_eq!(decode("&LT;&QUOT&AMP;&apos;"), "<\"&'");
        }
    }

    /// Names past the short table warchest-html had before, one of them
    /// two characters long.
    #[test]
    fn the_whole_table() {
        for decode in [decode_references, decode_text_references] {
            assert_eq!(decode("a&hellip;b&rarr;c"), "a\u{2026}b\u{2192}c");
            assert_eq!(decode("&NotNestedLessLess;"), "\u{2aa1}\u{338}");
            assert_eq!(decode("&eacute;&Eacute;&euro;"), "éÉ€");
            assert_eq!(decode("&NotSquareSubsetEqual;"), "⋢");
            // Names are case-sensitive.
            assert_eq!(decode("&Hellip;&RARR;"), "&Hellip;&RARR;");
        }
    }

    /// What replay decoded and the crawler did not (and the other way):
    /// both read these as a browser does.
    #[test]
    fn url_punctuation_and_script_tricks() {
        assert_eq!(
            decode_references("javascript&colon;alert(1)"),
            "javascript:alert(1)"
        );
        assert_eq!(
            decode_references("http&colon;&sol;&sol;x.test&#x2F;a&quest;b&equals;c&num;d"),
            "http://x.test/a?b=c#d"
        );
        assert_eq!(decode_references("java&Tab;script:"), "java\tscript:");
        assert_eq!(decode_references("&lpar;&rpar;&percnt;"), "()%");
    }

    /// The one difference of the two modes: a legacy name without its `;`
    /// followed by a name character or `=`.
    #[test]
    fn attribute_mode_keeps_legacy_names_before_name_characters() {
        assert_eq!(decode_references("?a=1&copy=2"), "?a=1&copy=2");
        assert_eq!(decode_text_references("?a=1&copy=2"), "?a=1©=2");
        assert_eq!(decode_references("&copy2026 &notit"), "&copy2026 &notit");
        assert_eq!(decode_text_references("&copy2026 &notit"), "©2026 ¬it");
        // Before anything else, or with the `;`, both decode.
        for decode in [decode_references, decode_text_references] {
            assert_eq!(decode("&copy &copy;x &copy"), "© ©x ©");
            assert_eq!(decode("&lt&amp"), "<&");
            assert_eq!(decode("?a=1&amp;copy=2"), "?a=1&copy=2");
        }
        assert_eq!(decode_references("&lt&ltx&amp"), "<&ltx&");
        assert_eq!(decode_references("?a=1&amp=2&nbsp."), "?a=1&amp=2\u{a0}.");
    }

    /// Without `;`, the longest legacy name the letters start with, the
    /// rest kept as text; other names need their `;`.
    #[test]
    fn longest_legacy_match() {
        assert_eq!(decode_text_references("&notit;"), "¬it;");
        // `&ampere;` is no name; `&amp` is the longest legacy one.
        assert_eq!(decode_text_references("&ampere;"), "&ere;");
        assert_eq!(decode_text_references("&aacutex"), "áx");
        // In an attribute that longest match is kept as written (a name
        // character follows it), and no shorter one is tried.
        assert_eq!(decode_references("&notit;"), "&notit;");
        assert_eq!(decode_references("&ampere;"), "&ampere;");
        assert_eq!(decode_references("&aacutex"), "&aacutex");
        for decode in [decode_references, decode_text_references] {
            assert_eq!(decode("&notin;&not;&not."), "∉¬¬.");
            assert_eq!(decode("&colon &sol/ &hellip"), "&colon &sol/ &hellip");
        }
    }

    #[test]
    fn numeric_replacements() {
        for decode in [decode_references, decode_text_references] {
            assert_eq!(
                decode("&#0;&#x110000;&#xD800;&#xdfff;&#99999999999;"),
                "\u{fffd}".repeat(5)
            );
            assert_eq!(decode("&#128;&#x96;&#x81;&#159;&#x9D;"), "€–\u{81}Ÿ\u{9d}");
            assert_eq!(
                decode("&#x1F600;&#10;&#X41;&#x10FFFF;"),
                "\u{1F600}\nA\u{10FFFF}"
            );
            // The `;` is optional; the digits end where they end.
            assert_eq!(decode("&#47x&#x2fg&#65"), "/x/gA");
            assert_eq!(decode("&#x;&#-1;&#+1;&# 1"), "&#x;&#-1;&#+1;&# 1");
            let long = format!("&#x{};", "f".repeat(10_000));
            assert_eq!(decode(&long), "\u{fffd}");
            let long = format!("&#{}1;", "0".repeat(10_000));
            assert_eq!(decode(&long), "\u{1}");
        }
    }

    #[test]
    fn any_text_no_panic() {
        let long_name = format!("&{};", "a".repeat(100));
        for s in [
            "&",
            "&#",
            "&#x",
            "&#x;",
            "é&é",
            "&amp;é&#233",
            "&\u{1F600};",
            "&aé;",
            long_name.as_str(),
        ] {
            assert_eq!(decode_references(s), decode_text_references(s), "{s:?}");
        }
        assert_eq!(decode_references("é&#233"), "éé");
        assert_eq!(decode_text_references(&long_name), long_name);
        assert_eq!(decode_text_references("&notié"), "¬ié");
        assert_eq!(decode_references("&notié"), "&notié");
    }
}
