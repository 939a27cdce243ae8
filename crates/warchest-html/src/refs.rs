//! Character references in attribute values, decoded the way HTML's
//! tokenizer decodes them, for the names a URL or a script is likely to
//! hold.

use std::borrow::Cow;

use encoding_rs::WINDOWS_1252;

/// The named references known, with what they stand for. Case-sensitive,
/// as HTML's names are. Beyond the markup ones, the ASCII punctuation a
/// URL is made of: `javascript&colon;` or `&sol;&sol;host` must be read
/// as the browser reads them, or a link escapes rewriting.
const NAMED: [(&str, char); 38] = [
    ("amp", '&'),
    ("AMP", '&'),
    ("lt", '<'),
    ("LT", '<'),
    ("gt", '>'),
    ("GT", '>'),
    ("quot", '"'),
    ("QUOT", '"'),
    ("apos", '\''),
    ("nbsp", '\u{a0}'),
    ("Tab", '\t'),
    ("NewLine", '\n'),
    ("excl", '!'),
    ("num", '#'),
    ("dollar", '$'),
    ("percnt", '%'),
    ("lpar", '('),
    ("rpar", ')'),
    ("ast", '*'),
    ("midast", '*'),
    ("plus", '+'),
    ("comma", ','),
    ("period", '.'),
    ("sol", '/'),
    ("colon", ':'),
    ("semi", ';'),
    ("equals", '='),
    ("quest", '?'),
    ("commat", '@'),
    ("lsqb", '['),
    ("lbrack", '['),
    ("bsol", '\\'),
    ("rsqb", ']'),
    ("rbrack", ']'),
    ("lowbar", '_'),
    ("grave", '`'),
    ("lcub", '{'),
    ("rcub", '}'),
];

/// The names of [`NAMED`] that HTML also accepts without their `;` (its
/// legacy ones).
const LEGACY: [&str; 9] = ["amp", "AMP", "lt", "LT", "gt", "GT", "quot", "QUOT", "nbsp"];

/// `s`, an attribute value as written, with its character references
/// decoded as HTML's tokenizer decodes them in an attribute value:
///
/// - numeric references (`&#47;`, `&#x2F;`, the `;` optional), with the
///   spec's replacements: `&#0;`, surrogates and values past U+10FFFF
///   become U+FFFD, and `&#128;`..`&#159;` the windows-1252 characters
///   they name (`&#150;` is `–`);
/// - the named references of a short table: `&amp;` `&lt;` `&gt;`
///   `&quot;` `&apos;` `&nbsp;`, `&Tab;` `&NewLine;`, and the ASCII
///   punctuation (`&colon;` `&sol;` `&quest;` `&equals;` `&num;`
///   `&percnt;` `&lpar;` ...). Of these, `&amp` `&lt` `&gt` `&quot` and
///   `&nbsp` (and the upper-case `&AMP` `&LT` `&GT` `&QUOT`) count without
///   their `;` too, unless a letter, a digit or `=` follows (so that
///   `?a=1&amp=2` keeps its `&amp`, as in a browser).
///
/// Limits: any other named reference (`&copy;`, `&eacute;`, the rest of
/// HTML's table of over two thousand) is kept as written, so text outside
/// URLs may keep references a browser would decode; a URL seldom holds
/// one, and its characters would be percent-encoded anyway. An `&` that
/// starts no reference is kept. Linear in the length of `s`; borrowed
/// when `s` holds no `&`.
pub fn decode_references(s: &str) -> Cow<'_, str> {
    let Some(first) = s.find('&') else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len());
    let mut i = first;
    out.push_str(&s[..first]);
    while let Some(p) = s[i..].find('&') {
        let amp = i + p;
        out.push_str(&s[i..amp]);
        match reference_at(s.as_bytes(), amp + 1) {
            Some((c, end)) => {
                out.push(c);
                i = end;
            }
            None => {
                out.push('&');
                i = amp + 1;
            }
        }
    }
    out.push_str(&s[i..]);
    Cow::Owned(out)
}

/// The character of the reference that starts at `at` (just after its
/// `&`) and where it ends, `None` when none starts there. Every index it
/// returns follows an ASCII byte, so it is a char boundary.
fn reference_at(b: &[u8], at: usize) -> Option<(char, usize)> {
    let rest = b.get(at..)?;
    if rest.first() == Some(&b'#') {
        let (radix, start) = match rest.get(1) {
            Some(b'x' | b'X') => (16, 2),
            _ => (10, 1),
        };
        let digits = rest[start..]
            .iter()
            .take_while(|d| char::from(**d).is_digit(radix))
            .count();
        if digits == 0 {
            return None;
        }
        // Saturating: a run of digits of any length is read in one pass
        // and stays past U+10FFFF.
        let value = rest[start..start + digits].iter().fold(0u32, |v, d| {
            let d = char::from(*d).to_digit(radix).unwrap_or(0);
            v.saturating_mul(radix).saturating_add(d)
        });
        let mut end = at + start + digits;
        if b.get(end) == Some(&b';') {
            end += 1;
        }
        return Some((numeric_char(value), end));
    }
    let n = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    let name = std::str::from_utf8(&rest[..n]).ok()?;
    let c = NAMED.iter().find(|(k, _)| *k == name)?.1;
    match rest.get(n) {
        Some(b';') => Some((c, at + n + 1)),
        Some(b'=') => None,
        _ if LEGACY.contains(&name) => Some((c, at + n)),
        _ => None,
    }
}

/// The character a numeric reference stands for (HTML's "numeric
/// character reference end state").
fn numeric_char(v: u32) -> char {
    if (0x80..=0x9f).contains(&v) {
        // The spec's table for these is windows-1252's (its five unmapped
        // bytes stay the C1 controls they are).
        let byte = [u8::try_from(v).unwrap_or(0)];
        return WINDOWS_1252
            .decode_without_bom_handling(&byte)
            .0
            .chars()
            .next()
            .unwrap_or('\u{fffd}');
    }
    match char::from_u32(v) {
        Some('\0') | None => '\u{fffd}',
        Some(c) => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_numeric() {
        assert_eq!(
            decode_references("a?b=1&amp;c=2&#38;d&#x26;e"),
            "a?b=1&c=2&d&e"
        );
        assert_eq!(
            decode_references("&unknown; & &#xZZ; &#; &"),
            "&unknown; & &#xZZ; &#; &"
        );
        assert!(matches!(decode_references("no refs"), Cow::Borrowed(_)));
        assert_eq!(decode_references("&LT;&QUOT&AMP;&apos;"), "<\"&'");
    }

    /// What replay decoded and the crawler did not (and the other way):
    /// both now read these as a browser does.
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

    #[test]
    fn without_semicolons() {
        // Legacy names: decoded unless a name character or `=` follows.
        assert_eq!(decode_references("&lt&ltx&amp"), "<&ltx&");
        assert_eq!(decode_references("?a=1&amp=2&nbsp."), "?a=1&amp=2\u{a0}.");
        // Others need their `;`.
        assert_eq!(decode_references("&colon &sol/"), "&colon &sol/");
        // Numeric ones never do; the digits end where they end.
        assert_eq!(decode_references("&#47x&#x2fg"), "/x/g");
    }

    #[test]
    fn numeric_replacements() {
        assert_eq!(
            decode_references("&#0;&#x110000;&#xD800;&#99999999999;"),
            "\u{fffd}".repeat(4)
        );
        assert_eq!(decode_references("&#128;&#x96;&#x81;&#159;"), "€–\u{81}Ÿ");
        assert_eq!(decode_references("&#x1F600;&#10;"), "\u{1F600}\n");
        let long = format!("&#x{};", "f".repeat(10_000));
        assert_eq!(decode_references(&long), "\u{fffd}");
    }

    #[test]
    fn any_text_no_panic() {
        for s in [
            "&",
            "&#",
            "&#x",
            "&#x;",
            "é&é",
            "&amp;é&#233",
            "&\u{1F600};",
        ] {
            let _ = decode_references(s);
        }
        assert_eq!(decode_references("é&#233"), "éé");
    }
}
