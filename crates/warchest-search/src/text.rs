//! A page's text for the index: the payload decoded to characters, and
//! for HTML its title and the text of its body.
//!
//! This is a small token-stream reader (no DOM): markup, comments and the
//! contents of `script`, `style`, `noscript` and `template` are dropped,
//! block elements end a line, white space collapses, and the character
//! references a page's text holds most are decoded. It serves the index
//! (words and a snippet), not a corpus: the text of record for corpora is
//! `warchest derive text`'s.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// How much of a page is looked at for a `<meta>` charset.
const META_PRESCAN: usize = 8 * 1024;

/// Longest title kept, in bytes.
pub const MAX_TITLE: usize = 1024;

/// A page read as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageText {
    /// The title (`<title>`), white space collapsed; empty when none.
    pub title: String,
    /// The text, one line per block.
    pub text: String,
}

/// What a payload is, for reading its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTML or XHTML.
    Html,
    /// Plain text.
    Plain,
}

impl Kind {
    /// The kind of a media type (lower case, no parameters), when its text
    /// is indexed.
    pub fn of(media_type: &str) -> Option<Kind> {
        match media_type {
            "text/html" | "application/xhtml+xml" => Some(Kind::Html),
            "text/plain" => Some(Kind::Plain),
            _ => None,
        }
    }
}

/// The encoding of a payload: its byte order mark, else the HTTP charset
/// (`declared`), else (HTML) a `<meta>` charset in the first 8 KiB, else
/// UTF-8 when the bytes are UTF-8, else windows-1252 (as browsers do).
pub fn encoding(
    bytes: &[u8],
    declared: Option<&'static Encoding>,
    kind: Kind,
) -> &'static Encoding {
    if let Some((e, _)) = Encoding::for_bom(bytes) {
        return e;
    }
    if let Some(e) = declared {
        return e;
    }
    if kind == Kind::Html
        && let Some(e) = meta_charset(&bytes[..bytes.len().min(META_PRESCAN)])
    {
        return e;
    }
    if std::str::from_utf8(bytes).is_ok() {
        UTF_8
    } else {
        WINDOWS_1252
    }
}

/// A `charset=` in a `<meta>` tag of `head`.
fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let lower = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = find(&lower[from..], b"<meta") {
        let start = from + i;
        let end = lower[start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(c) = find(tag, b"charset=") {
            let v = &tag[c + 8..];
            let v = v
                .iter()
                .position(|&b| !matches!(b, b'"' | b'\'' | b' '))
                .map_or(&v[v.len()..], |s| &v[s..]);
            let len = v
                .iter()
                .position(|&b| matches!(b, b'"' | b'\'' | b' ' | b';' | b'/' | b'>'))
                .unwrap_or(v.len());
            // UTF-16 cannot be declared in a page read as ASCII.
            return Encoding::for_label(&v[..len]).map(|e| {
                if e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE {
                    UTF_8
                } else {
                    e
                }
            });
        }
        from = end;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The text of a payload of `kind`, decoded with [`encoding`].
pub fn page_text(bytes: &[u8], declared: Option<&'static Encoding>, kind: Kind) -> PageText {
    let enc = encoding(bytes, declared, kind);
    let (s, _, _) = enc.decode(bytes);
    match kind {
        Kind::Plain => PageText {
            title: String::new(),
            text: collapse_lines(&s),
        },
        Kind::Html => html_text(&s),
    }
}

/// Elements whose content is not text.
const SKIPPED: &[&str] = &["script", "style", "noscript", "template"];

/// Elements that end a line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// Title and text of an HTML page.
pub fn html_text(s: &str) -> PageText {
    let mut out = Lines::default();
    let mut title = String::new();
    let mut in_title = false;
    let mut rest = s;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            text_piece(rest, in_title, &mut title, &mut out);
            break;
        };
        text_piece(&rest[..lt], in_title, &mut title, &mut out);
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |e| &after[e + 3..]);
            continue;
        }
        let Some(gt) = rest.find('>') else {
            break;
        };
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if name.is_empty() {
            // `<!DOCTYPE`, `<?xml`, a lone `<`: no element.
            continue;
        }
        if name == "title" {
            in_title = !closing;
            continue;
        }
        if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with('/') {
            // Raw text up to the closing tag.
            let close = format!("</{name}");
            let end = find_ci(rest, &close).unwrap_or(rest.len());
            rest = &rest[end..];
            rest = rest.find('>').map_or("", |e| &rest[e + 1..]);
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            out.end_line();
        } else if matches!(name.as_str(), "img" | "input" | "label") {
            out.space();
        }
    }
    out.end_line();
    let mut title = collapse(&decode_refs(&title));
    cut_at_char(&mut title, MAX_TITLE);
    PageText {
        title,
        text: out.text,
    }
}

/// Case-insensitive find of an ASCII needle.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    let n = needle.as_bytes();
    hay.as_bytes()
        .windows(n.len())
        .position(|w| w.eq_ignore_ascii_case(n))
}

fn text_piece(piece: &str, in_title: bool, title: &mut String, out: &mut Lines) {
    if piece.is_empty() {
        return;
    }
    if in_title {
        title.push_str(piece);
    } else {
        out.push(&decode_refs(piece));
    }
}

/// Text gathered a line at a time, white space collapsed.
#[derive(Default)]
struct Lines {
    text: String,
    pending_space: bool,
}

impl Lines {
    fn push(&mut self, s: &str) {
        for c in s.chars() {
            if c.is_whitespace() || c.is_control() {
                self.pending_space = true;
            } else {
                if self.pending_space && !self.text.is_empty() && !self.text.ends_with('\n') {
                    self.text.push(' ');
                }
                self.pending_space = false;
                self.text.push(c);
            }
        }
    }
    fn space(&mut self) {
        self.pending_space = true;
    }
    fn end_line(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.pending_space = false;
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Plain text: each line's white space collapsed, empty lines dropped.
fn collapse_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.lines() {
        let l = collapse(line);
        if !l.is_empty() {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// Cuts `s` to at most `max` bytes, at a character boundary.
pub fn cut_at_char(s: &mut String, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    true
}

/// Decodes numeric character references and the named ones text holds
/// most; others stay as written.
fn decode_refs(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[1..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '#')
            .map_or(rest.len(), |e| e + 1);
        let name = &rest[1..end];
        let semi = rest[end..].starts_with(';');
        let c = if let Some(num) = name.strip_prefix('#') {
            let n = if let Some(h) = num.strip_prefix(['x', 'X']) {
                u32::from_str_radix(h, 16).ok()
            } else {
                num.parse().ok()
            };
            n.map(|n| {
                char::from_u32(n)
                    .filter(|c| *c != '\0')
                    .unwrap_or('\u{FFFD}')
            })
        } else {
            named(name)
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[end + usize::from(semi)..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn named(name: &str) -> Option<char> {
    Some(match name {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" => '\'',
        "nbsp" => '\u{A0}',
        "copy" => '©',
        "reg" => '®',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "laquo" => '«',
        "raquo" => '»',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "middot" => '·',
        "bull" => '•',
        "eacute" => 'é',
        "egrave" => 'è',
        "agrave" => 'à',
        "uuml" => 'ü',
        "ouml" => 'ö',
        "auml" => 'ä',
        "szlig" => 'ß',
        "ccedil" => 'ç',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_title_text_and_blocks() {
        let t = html_text(
            "<!DOCTYPE html><html><head><title> A &amp; B </title>\
             <style>p{x:1}</style><script>var a = '<p>no</p>';</script></head>\
             <body><h1>Head</h1><p>one  two<br>three &lt;x&gt; &#233;&#x20AC;</p>\
             <!-- hidden --><div>four</div></body></html>",
        );
        assert_eq!(t.title, "A & B");
        assert_eq!(t.text, "Head\none two\nthree <x> é€\nfour\n");
    }

    #[test]
    fn charsets() {
        let latin = b"<meta charset=\"iso-8859-1\"><p>caf\xe9</p>";
        assert_eq!(page_text(latin, None, Kind::Html).text, "café\n");
        let utf8 = "<p>café</p>".as_bytes();
        assert_eq!(page_text(utf8, None, Kind::Html).text, "café\n");
        assert_eq!(
            page_text(b"caf\xe9", Some(encoding_rs::WINDOWS_1252), Kind::Plain).text,
            "café\n"
        );
        // Not UTF-8 and undeclared: windows-1252.
        assert_eq!(
            page_text(b"<p>\x93q\x94</p>", None, Kind::Html).text,
            "“q”\n"
        );
    }

    #[test]
    fn odd_markup_ends() {
        assert_eq!(html_text("<p>a <b").text, "a\n");
        assert_eq!(html_text("a <!-- never closed").text, "a\n");
        assert_eq!(html_text("<script>never closed").text, "");
        assert_eq!(html_text("&bogus; & &#xZZ;").text, "&bogus; & &#xZZ;\n");
    }
}
