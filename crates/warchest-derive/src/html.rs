//! A streaming HTML tokenizer: start and end tags with their attributes,
//! text, raw text (script, style) and comments, as a flat event stream with
//! no tree, in one pass over the decoded page.
//!
//! Why our own and not html5ever or lol_html: text extraction and the WAT's
//! link and meta harvest need only the token stream (Common Crawl's own
//! extractor is a lexer too), and a tokenizer that borrows from the page and
//! allocates nothing per token is several times faster than building a DOM
//! (html5ever) or rewriting a stream whose text arrives in fragments without
//! entities decoded (lol_html). It follows the WHATWG tokenizer where text
//! extraction can tell the difference: raw text elements end only at their
//! own end tag (a `"</div>"` inside a script string does not end the
//! script), RCDATA (title, textarea) decodes entities, quoted attribute
//! values may hold `>`, comments end at `-->` (or the abrupt `<!-->`), a `<`
//! that opens no tag is text, and a tag cut by the end of input is dropped.
//! Tree construction (implied end tags, foster parenting) is left to the
//! consumers, which need only a little of it.
//!
//! Nothing here can panic or recurse; all work is linear in the input.

use std::borrow::Cow;

use warchest_html::decode_references;

/// One token of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token<'a> {
    /// Character data; entities are not decoded yet ([`decode_entities`]).
    Text(&'a str),
    /// The contents of a raw text element (script, style, xmp, iframe,
    /// noembed, noframes, plaintext), never decoded.
    RawText(&'a str),
    /// A start tag.
    Start(Tag<'a>),
    /// An end tag (its name, lower-cased).
    End(TagName),
    /// A comment's text.
    Comment(&'a str),
    /// `<!DOCTYPE ...>`, `<![CDATA[...]]>` and processing instructions: the
    /// text between `<` and `>`.
    Declaration(&'a str),
}

/// A tag name, ASCII lower-cased, kept inline (no allocation).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TagName {
    buf: [u8; TagName::MAX],
    len: u8,
}

impl TagName {
    /// Longer names (custom elements) are kept as the empty name: no rule
    /// of text extraction or of the WAT names one.
    const MAX: usize = 16;

    fn new(raw: &str) -> TagName {
        let mut buf = [0u8; TagName::MAX];
        if raw.len() > TagName::MAX || !raw.is_ascii() {
            return TagName { buf, len: 0 };
        }
        for (d, s) in buf.iter_mut().zip(raw.bytes()) {
            *d = s.to_ascii_lowercase();
        }
        TagName {
            buf,
            len: raw.len() as u8,
        }
    }

    /// The lower-cased name ("" for a name over 16 bytes or not ASCII).
    pub fn as_str(&self) -> &str {
        // Only ASCII bytes are ever stored.
        std::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or("")
    }
}

impl std::fmt::Debug for TagName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl PartialEq<&str> for TagName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A start tag: its name and its attributes, parsed when asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag<'a> {
    name: TagName,
    attrs: &'a str,
    self_closing: bool,
}

impl<'a> Tag<'a> {
    /// The element's name, lower-cased.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The element's name as a [`TagName`].
    pub fn tag_name(&self) -> TagName {
        self.name
    }

    /// Whether the tag ends with `/>`.
    pub fn self_closing(&self) -> bool {
        self.self_closing
    }

    /// The attributes in order, as written: name (not lower-cased) and
    /// value with entities decoded (`""` for an attribute without a value).
    pub fn attrs(&self) -> Attrs<'a> {
        Attrs {
            src: self.attrs,
            pos: 0,
        }
    }

    /// The value of the first attribute named `name` (ASCII
    /// case-insensitive), entities decoded.
    pub fn attr(&self, name: &str) -> Option<Cow<'a, str>> {
        self.attrs()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Whether the tag has an attribute named `name`.
    pub fn has_attr(&self, name: &str) -> bool {
        self.attrs().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

/// The attributes of a [`Tag`].
#[derive(Debug, Clone)]
pub struct Attrs<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Iterator for Attrs<'a> {
    type Item = (&'a str, Cow<'a, str>);

    fn next(&mut self) -> Option<Self::Item> {
        match scan_attr(self.src.as_bytes(), &mut self.pos) {
            AttrStep::Attr { name, value } => {
                let value = match value {
                    Some((s, e)) => decode_references(&self.src[s..e]),
                    None => Cow::Borrowed(""),
                };
                Some((&self.src[name.0..name.1], value))
            }
            AttrStep::End { .. } | AttrStep::Eof => None,
        }
    }
}

enum AttrStep {
    Attr {
        name: (usize, usize),
        value: Option<(usize, usize)>,
    },
    /// `>` at this position; whether `/` came right before it.
    End {
        gt: usize,
        self_closing: bool,
    },
    Eof,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// One step of the attribute part of a tag (the WHATWG "before attribute
/// name" state onwards), from `*pos`.
fn scan_attr(b: &[u8], pos: &mut usize) -> AttrStep {
    let mut i = *pos;
    let mut slash = false;
    loop {
        match b.get(i) {
            None => {
                *pos = i;
                return AttrStep::Eof;
            }
            Some(b'>') => {
                *pos = i + 1;
                return AttrStep::End {
                    gt: i,
                    self_closing: slash,
                };
            }
            Some(b'/') => {
                slash = true;
                i += 1;
            }
            Some(&c) if is_ws(c) => {
                slash = false;
                i += 1;
            }
            Some(_) => break,
        }
    }
    // The name: a leading `=` belongs to it, as the spec says.
    let start = i;
    i += 1;
    while let Some(&c) = b.get(i) {
        if is_ws(c) || c == b'/' || c == b'>' || c == b'=' {
            break;
        }
        i += 1;
    }
    let name = (start, i);
    let mut j = i;
    while b.get(j).is_some_and(|&c| is_ws(c)) {
        j += 1;
    }
    if b.get(j) != Some(&b'=') {
        *pos = i;
        return AttrStep::Attr { name, value: None };
    }
    j += 1;
    while b.get(j).is_some_and(|&c| is_ws(c)) {
        j += 1;
    }
    match b.get(j) {
        Some(&q) if q == b'"' || q == b'\'' => match memchr::memchr(q, &b[j + 1..]) {
            Some(n) => {
                *pos = j + 1 + n + 1;
                AttrStep::Attr {
                    name,
                    value: Some((j + 1, j + 1 + n)),
                }
            }
            None => {
                *pos = b.len();
                AttrStep::Eof
            }
        },
        _ => {
            let s = j;
            while let Some(&c) = b.get(j) {
                if is_ws(c) || c == b'>' {
                    break;
                }
                j += 1;
            }
            *pos = j;
            AttrStep::Attr {
                name,
                value: Some((s, j)),
            }
        }
    }
}

/// Elements whose contents are raw text up to their own end tag.
fn raw_text_kind(name: &str) -> Option<bool> {
    // Some(true): RCDATA (entities decoded, so given as Text).
    match name {
        "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" => Some(false),
        "title" | "textarea" => Some(true),
        _ => None,
    }
}

/// The tokenizer: an iterator of [`Token`]s borrowing from the page.
#[derive(Debug, Clone)]
pub struct Tokenizer<'a> {
    src: &'a str,
    pos: usize,
    /// After a raw text or RCDATA start tag: its name and whether RCDATA.
    raw: Option<(TagName, bool)>,
}

impl<'a> Tokenizer<'a> {
    /// A tokenizer over a whole page.
    pub fn new(src: &'a str) -> Tokenizer<'a> {
        Tokenizer {
            src,
            pos: 0,
            raw: None,
        }
    }

    /// The byte offset reached in the page.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The contents of a raw text element up to `</name` followed by a
    /// tag-ending byte; the end tag is left for the next call.
    fn raw_text(&mut self, name: TagName, rcdata: bool) -> Option<Token<'a>> {
        let b = self.src.as_bytes();
        let name = name.as_str().as_bytes();
        let start = self.pos;
        let mut from = start;
        let end = loop {
            let Some(n) = memchr::memmem::find(&b[from..], b"</") else {
                break b.len();
            };
            let at = from + n;
            let after = at + 2 + name.len();
            if b.len() >= after
                && b[at + 2..after].eq_ignore_ascii_case(name)
                && b.get(after)
                    .is_none_or(|&c| is_ws(c) || c == b'/' || c == b'>')
            {
                break at;
            }
            from = at + 2;
        };
        self.pos = end;
        if end == start {
            return self.next();
        }
        let text = &self.src[start..end];
        Some(if rcdata {
            Token::Text(text)
        } else {
            Token::RawText(text)
        })
    }
}

impl<'a> Iterator for Tokenizer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if let Some((name, rcdata)) = self.raw.take() {
            return self.raw_text(name, rcdata);
        }
        let b = self.src.as_bytes();
        let start = self.pos;
        if start >= b.len() {
            return None;
        }
        // Text up to the next `<` that opens markup.
        let mut i = start;
        loop {
            match memchr::memchr(b'<', &b[i..]) {
                None => {
                    self.pos = b.len();
                    return Some(Token::Text(&self.src[start..]));
                }
                Some(n) => {
                    let at = i + n;
                    let opens = match b.get(at + 1) {
                        Some(c) if c.is_ascii_alphabetic() => true,
                        Some(b'/') | Some(b'!') | Some(b'?') => true,
                        _ => false,
                    };
                    if opens {
                        if at > start {
                            self.pos = at;
                            return Some(Token::Text(&self.src[start..at]));
                        }
                        break;
                    }
                    i = at + 1;
                }
            }
        }
        // Markup at `start`.
        let rest = &b[start..];
        if rest.starts_with(b"<!--") {
            let body = start + 4;
            // `<!-->` and `<!--->` end at once.
            for abrupt in [&b">"[..], &b"->"[..]] {
                if b[body..].starts_with(abrupt) {
                    self.pos = body + abrupt.len();
                    return Some(Token::Comment(""));
                }
            }
            return Some(match memchr::memmem::find(&b[body..], b"-->") {
                Some(n) => {
                    self.pos = body + n + 3;
                    Token::Comment(&self.src[body..body + n])
                }
                None => {
                    self.pos = b.len();
                    Token::Comment(&self.src[body..])
                }
            });
        }
        if rest[1] == b'!' || rest[1] == b'?' {
            let end = memchr::memchr(b'>', &b[start..]).map_or(b.len(), |n| start + n);
            self.pos = (end + 1).min(b.len());
            return Some(Token::Declaration(&self.src[start + 1..end]));
        }
        let end_tag = rest[1] == b'/';
        let name_start = start + 1 + usize::from(end_tag);
        if end_tag && !b.get(name_start).is_some_and(u8::is_ascii_alphabetic) {
            // `</>` is nothing; `</3` is a bogus comment up to `>`.
            let end = memchr::memchr(b'>', &b[name_start..]).map_or(b.len(), |n| name_start + n);
            self.pos = (end + 1).min(b.len());
            return if b.get(name_start) == Some(&b'>') {
                self.next()
            } else {
                Some(Token::Comment(&self.src[name_start..end]))
            };
        }
        let mut j = name_start;
        while let Some(&c) = b.get(j) {
            if is_ws(c) || c == b'/' || c == b'>' {
                break;
            }
            j += 1;
        }
        let name = TagName::new(&self.src[name_start..j]);
        let attrs_start = j;
        let mut p = j;
        let (gt, self_closing) = loop {
            match scan_attr(b, &mut p) {
                AttrStep::Attr { .. } => continue,
                AttrStep::End { gt, self_closing } => break (gt, self_closing),
                AttrStep::Eof => {
                    // A tag cut by the end of input is dropped.
                    self.pos = b.len();
                    return None;
                }
            }
        };
        self.pos = gt + 1;
        if end_tag {
            return Some(Token::End(name));
        }
        if let Some(rcdata) = raw_text_kind(name.as_str()) {
            self.raw = Some((name, rcdata));
        } else if name == "plaintext" {
            // The rest of the page is raw text: an end tag name that
            // cannot occur in it (a NUL) never ends it.
            self.raw = Some((TagName::new("plaintext\u{0}"), false));
        }
        Some(Token::Start(Tag {
            name,
            attrs: &self.src[attrs_start..gt],
            self_closing,
        }))
    }
}

/// Decodes character references (`&amp;`, `&#233;`, `&#xE9;`, all the
/// names of HTML's table) in text: warchest-html's decoder, the
/// workspace's one, so that text extraction reads a reference as the
/// crawler and replay read it.
pub use warchest_html::decode_text_references as decode_entities;

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> Vec<String> {
        Tokenizer::new(s)
            .map(|t| match t {
                Token::Text(t) => format!("T{t}"),
                Token::RawText(t) => format!("R{t}"),
                Token::Start(tag) => {
                    let attrs: Vec<String> =
                        tag.attrs().map(|(n, v)| format!(" {n}={v}")).collect();
                    format!(
                        "<{}{}{}>",
                        tag.name(),
                        attrs.concat(),
                        if tag.self_closing() { "/" } else { "" }
                    )
                }
                Token::End(n) => format!("</{}>", n.as_str()),
                Token::Comment(c) => format!("C{c}"),
                Token::Declaration(d) => format!("D{d}"),
            })
            .collect()
    }

    #[test]
    fn tags_attributes_and_text() {
        assert_eq!(
            tokens("<!DOCTYPE html><P Class=\"a>b\" id=x hidden data-x='1'>Hi &amp; bye</p><br/>"),
            [
                "D!DOCTYPE html",
                "<p Class=a>b id=x hidden= data-x=1>",
                "THi &amp; bye",
                "</p>",
                "<br/>"
            ]
        );
    }

    #[test]
    fn script_ends_only_at_its_end_tag() {
        assert_eq!(
            tokens("<script>var s = '</div><p>x</p>'; a<b</script >after"),
            [
                "<script>",
                "Rvar s = '</div><p>x</p>'; a<b",
                "</script>",
                "Tafter"
            ]
        );
        assert_eq!(
            tokens("<script>never closed <p>"),
            ["<script>", "Rnever closed <p>"]
        );
        assert_eq!(
            tokens("<title>a <b> &amp;</title>"),
            ["<title>", "Ta <b> &amp;", "</title>"]
        );
    }

    #[test]
    fn stray_lt_comments_and_cut_tags() {
        assert_eq!(tokens("a < b <3 c"), ["Ta < b <3 c"]);
        assert_eq!(
            tokens("x<!-- <p> -->y<!-->z"),
            ["Tx", "C <p> ", "Ty", "C", "Tz"]
        );
        assert_eq!(tokens("x<div class=\"never"), ["Tx"]);
        assert_eq!(tokens("x</>y</3 z>w"), ["Tx", "Ty", "C3 z", "Tw"]);
    }

    #[test]
    fn entities() {
        assert_eq!(
            decode_entities("a &amp; b &lt;&gt; &eacute;&#233;&#xE9; &nbsp;|"),
            "a & b <> ééé \u{a0}|"
        );
        assert_eq!(
            decode_entities("&copy2026 &notit; &bogus; & &#; &#x110000; &#150;"),
            "©2026 ¬it; &bogus; & &#; \u{FFFD} –"
        );
        assert_eq!(decode_entities("&NotSquareSubsetEqual;"), "⋢");
        let tag = Tokenizer::new("<a href='?a=1&copy=2&amp;b=&lt;'>").next();
        let Some(Token::Start(tag)) = tag else {
            panic!()
        };
        assert_eq!(tag.attr("HREF").as_deref(), Some("?a=1&copy=2&b=<"));
    }

    #[test]
    fn any_bytes_end_without_panic() {
        let s = "<a b='<<>>&#99999999999;&amp<!--<script></scrip<x </";
        for i in 0..=s.len() {
            if s.is_char_boundary(i) {
                let _ = tokens(&s[..i]);
                let _ = decode_entities(&s[..i]);
            }
        }
    }
}
