//! HTML to text, in one pass over the token stream: the page's title, its
//! whole text in Common Crawl's WET layout, and its main content (the same
//! text without boilerplate: navigation, headers, footers, sidebars,
//! forms, link lists).
//!
//! The whole text follows Common Crawl's rules (docs/derive.md): one line
//! per block element, whitespace runs (C0 controls and no-break spaces
//! included) collapsed to one space except in `<pre>`, no trailing spaces,
//! no blank lines, script, style and comments left out, no alt texts or
//! link URLs, table cells and inline controls separated by a space. The
//! title is the first line, as in Common Crawl's WET records.
//!
//! The main content is built in the same pass: the subtrees of boilerplate
//! elements (by tag, ARIA role, `hidden`, inline `display:none`, and
//! class or id words such as `nav`, `sidebar`, `footer`, `share`) are left
//! out, and then every line whose text is mostly link text. It follows the
//! ideas of Resiliparse's `main_content=True` (docs/derive.md says how it
//! differs) without building a DOM.

use crate::html::{Tag, TagName, Token, Tokenizer, decode_entities};

/// What [`html_to_text`] found in a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extract {
    /// The first `<title>` outside SVG, whitespace collapsed.
    pub title: Option<String>,
    /// The whole text in Common Crawl's WET layout.
    pub text: String,
    /// The main content, without boilerplate.
    pub main_text: String,
}

/// Deeper nesting than this is not tracked (its elements are text only),
/// so a page of a million `<div>`s costs no more memory than a small one.
const MAX_DEPTH: usize = 256;

/// Block elements: they start and end a line. Common Crawl's list
/// (ia-web-commons' `BLOCK_ELEMENTS`, `th` aside: a cell here), and
/// elements it lacks or only spaces (main, nav, menu, dialog, details,
/// summary, legend, option...), whose text would otherwise run into the
/// next line's.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "br"
            | "button"
            | "canvas"
            | "caption"
            | "center"
            | "col"
            | "colgroup"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "embed"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "frameset"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "head"
            | "header"
            | "hgroup"
            | "hr"
            | "html"
            | "legend"
            | "li"
            | "listing"
            | "main"
            | "map"
            | "menu"
            | "nav"
            | "noscript"
            | "object"
            | "ol"
            | "optgroup"
            | "option"
            | "output"
            | "p"
            | "pre"
            | "progress"
            | "section"
            | "summary"
            | "table"
            | "tbody"
            | "textarea"
            | "tfoot"
            | "thead"
            | "title"
            | "tr"
            | "ul"
            | "video"
    )
}

/// Inline elements that stand apart from their neighbours: a space.
/// Common Crawl's `INLINE_ELEMENTS_SPACING` (less those that are blocks
/// above), and `th`, `area` and `audio`.
fn is_spacing(name: &str) -> bool {
    matches!(
        name,
        "td" | "th"
            | "cite"
            | "datalist"
            | "iframe"
            | "img"
            | "input"
            | "label"
            | "q"
            | "time"
            | "select"
            | "area"
            | "audio"
    )
}

/// Elements with no end tag.
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
            | "keygen"
    )
}

/// Elements whose contents are never text: raw text ones (script and
/// style are given as raw text by the tokenizer), templates, and the
/// head-only ones.
fn is_hidden(name: &str) -> bool {
    matches!(
        name,
        "template" | "script" | "style" | "iframe" | "noembed" | "noframes" | "xmp" | "object"
    )
}

/// Elements whose subtree is boilerplate whatever their attributes say.
fn is_boilerplate_tag(name: &str) -> bool {
    matches!(
        name,
        "nav"
            | "aside"
            | "footer"
            | "form"
            | "menu"
            | "select"
            | "button"
            | "dialog"
            | "audio"
            | "video"
            | "noscript"
            | "textarea"
            | "label"
    )
}

/// Class and id words (split at `-`, `_` and spaces) that mark boilerplate.
fn is_boilerplate_word(word: &str) -> bool {
    matches!(
        word,
        "nav"
            | "navbar"
            | "navigation"
            | "menu"
            | "menubar"
            | "sidebar"
            | "footer"
            | "breadcrumb"
            | "breadcrumbs"
            | "cookie"
            | "cookies"
            | "consent"
            | "banner"
            | "share"
            | "sharing"
            | "social"
            | "related"
            | "recommended"
            | "advert"
            | "advertisement"
            | "ads"
            | "ad"
            | "sponsored"
            | "popup"
            | "modal"
            | "newsletter"
            | "subscribe"
            | "skip"
            | "login"
            | "signin"
            | "toolbar"
            | "pagination"
            | "pager"
            | "masthead"
            | "topbar"
            | "hidden"
            | "sr"
            | "print"
            | "widget"
            | "byline"
            | "tags"
    )
}

fn words_say_boilerplate(value: &str) -> bool {
    value
        .split(|c: char| c.is_ascii_whitespace() || c == '-' || c == '_')
        .any(|w| {
            // Lower-cased on the stack: no allocation per class word.
            let mut buf = [0u8; 16];
            if w.is_empty() || w.len() > buf.len() {
                return false;
            }
            for (d, s) in buf.iter_mut().zip(w.bytes()) {
                *d = s.to_ascii_lowercase();
            }
            std::str::from_utf8(&buf[..w.len()]).is_ok_and(is_boilerplate_word)
        })
}

/// Whether an inline style hides the element.
fn style_hides(style: &str) -> bool {
    let lower = style.to_ascii_lowercase();
    let squeezed = |key: &str, value: &str| {
        lower.match_indices(key).any(|(i, _)| {
            let rest = lower[i + key.len()..].trim_start();
            rest.strip_prefix(':')
                .is_some_and(|r| r.trim_start().starts_with(value))
        })
    };
    squeezed("display", "none") || squeezed("visibility", "hidden")
}

/// Whether a start tag opens boilerplate, for the main content.
fn is_boilerplate(tag: &Tag<'_>, in_article: bool) -> bool {
    let name = tag.name();
    if matches!(name, "main" | "article" | "body" | "html" | "h1") {
        return false;
    }
    if is_boilerplate_tag(name) {
        return true;
    }
    // A page's own header, not an article's.
    if name == "header" && !in_article {
        return true;
    }
    for (attr, value) in tag.attrs() {
        let boiler = if attr.eq_ignore_ascii_case("hidden") {
            true
        } else if attr.eq_ignore_ascii_case("aria-hidden") {
            value.trim().eq_ignore_ascii_case("true")
        } else if attr.eq_ignore_ascii_case("role") {
            let role = value.trim();
            if role.eq_ignore_ascii_case("main") || role.eq_ignore_ascii_case("article") {
                return false;
            }
            [
                "navigation",
                "banner",
                "contentinfo",
                "complementary",
                "menu",
                "menubar",
                "search",
                "dialog",
                "alertdialog",
                "toolbar",
            ]
            .iter()
            .any(|r| role.eq_ignore_ascii_case(r))
        } else if attr.eq_ignore_ascii_case("style") {
            (value.contains("none")
                || value.contains("hidden")
                || value.contains("NONE")
                || value.contains("HIDDEN"))
                && style_hides(&value)
        } else if attr.eq_ignore_ascii_case("class") || attr.eq_ignore_ascii_case("id") {
            words_say_boilerplate(&value)
        } else {
            false
        };
        if boiler {
            return true;
        }
    }
    false
}

/// Text laid out in lines: whitespace collapsed, no trailing spaces, no
/// blank lines.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    out: String,
    /// Where the current line starts in `out`.
    line_start: usize,
    space: bool,
    /// For the main content: bytes of text in the line, and how many of
    /// them are link text.
    chars: usize,
    link_chars: usize,
    drop_link_lines: bool,
    /// Not wanted: every call is a no-op (a caller that asked for only one
    /// of the texts pays for neither its layout nor its copy).
    off: bool,
}

impl Lines {
    fn line_empty(&self) -> bool {
        self.out.len() == self.line_start
    }

    fn space(&mut self) {
        self.space = true;
    }

    pub(crate) fn newline(&mut self) {
        self.space = false;
        if self.off || self.line_empty() {
            return;
        }
        // The main content leaves out lines that are mostly link text
        // (menus, tag clouds, "read more" lists).
        if self.drop_link_lines && self.link_chars * 2 > self.chars {
            self.out.truncate(self.line_start);
        } else {
            self.out.push('\n');
            self.line_start = self.out.len();
        }
        self.chars = 0;
        self.link_chars = 0;
    }

    /// Text with whitespace collapsed. Scanned by bytes: ASCII decides
    /// alone, and only other characters are decoded (the text of most
    /// pages is mostly ASCII).
    pub(crate) fn text(&mut self, s: &str, link: bool) {
        let b = s.as_bytes();
        if self.off {
            return;
        }
        if b.is_empty() {
            self.space = false;
            return;
        }
        let mut word: Option<usize> = None;
        let mut i = 0;
        while i < b.len() {
            let (collapsible, len) = if b[i] < 0x80 {
                (b[i] <= b' ' || b[i] == 0x7f, 1)
            } else {
                // `i` is at a character's start: ASCII bytes and whole
                // characters are all that is ever stepped over.
                let c = s[i..].chars().next().unwrap_or(' ');
                (is_collapsible(c), c.len_utf8())
            };
            if collapsible {
                if let Some(start) = word.take() {
                    self.push(&s[start..i], link);
                }
                self.space = true;
            } else if word.is_none() {
                word = Some(i);
            }
            i += len;
        }
        if let Some(start) = word {
            self.push(&s[start..], link);
            self.space = false;
        }
    }

    /// Text inside `<pre>`: spaces kept, line breaks kept (blank lines
    /// still collapse).
    fn pre(&mut self, s: &str, link: bool) {
        if self.off {
            return;
        }
        for (i, line) in s.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            let line = line.trim_end_matches(['\r', ' ', '\t']);
            if line.is_empty() {
                continue;
            }
            self.push(line, link);
            self.space = false;
        }
    }

    /// Non-empty text, after a space when one is pending.
    fn push(&mut self, s: &str, link: bool) {
        if self.space && !self.line_empty() {
            self.out.push(' ');
        }
        self.out.push_str(s);
        self.chars += s.len();
        if link {
            self.link_chars += s.len();
        }
    }

    pub(crate) fn finish(mut self) -> String {
        self.newline();
        if self.out.ends_with('\n') {
            self.out.pop();
        }
        self.out
    }
}

/// Whitespace for collapsing: ASCII whitespace, C0 controls, DEL, C1
/// controls and no-break spaces, and Unicode's other spaces.
fn is_collapsible(c: char) -> bool {
    c <= ' ' || ('\u{7f}'..='\u{a0}').contains(&c) || (c > '\u{a0}' && c.is_whitespace())
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    name: TagName,
    /// This element opened boilerplate (main content skips until it ends).
    boiler: bool,
}

/// Which texts [`html_to_text_parts`] lays out; the title is always
/// found (it costs nothing apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The whole text.
    pub text: bool,
    /// The main content.
    pub main_text: bool,
}

impl Parts {
    /// Both texts.
    pub const ALL: Parts = Parts {
        text: true,
        main_text: true,
    };
}

/// Converts a decoded page to text (see the module docs).
pub fn html_to_text(page: &str) -> Extract {
    html_to_text_parts(page, Parts::ALL)
}

/// [`html_to_text`], laying out only the texts `parts` asks for (the
/// others are left empty): the same single pass, without the other
/// text's lines or, for the whole text alone, the boilerplate tests of
/// each start tag.
pub fn html_to_text_parts(page: &str, parts: Parts) -> Extract {
    let mut text = Lines {
        off: !parts.text,
        ..Lines::default()
    };
    let mut main = Lines {
        drop_link_lines: true,
        off: !parts.main_text,
        ..Lines::default()
    };
    let mut title: Option<String> = None;
    let mut stack: Vec<Frame> = Vec::with_capacity(64);
    // Nesting counters, kept beside the stack so that untracked depth
    // cannot unbalance them.
    let mut boiler = 0usize;
    let mut pre = 0usize;
    let mut link = 0usize;
    let mut svg = 0usize;
    let mut hidden = 0usize;
    let mut article = 0usize;
    let mut in_title = false;

    let close = |frame: Frame,
                 boiler: &mut usize,
                 pre: &mut usize,
                 link: &mut usize,
                 svg: &mut usize,
                 hidden: &mut usize,
                 article: &mut usize| {
        let name = frame.name.as_str();
        if frame.boiler {
            *boiler -= 1;
        }
        match name {
            "pre" | "listing" | "plaintext" => *pre -= 1,
            "a" => *link -= 1,
            "svg" => *svg -= 1,
            "article" | "main" => *article -= 1,
            // Only a title in SVG is ever on the stack.
            "title" => *hidden -= 1,
            _ if is_hidden(name) => *hidden -= 1,
            _ => {}
        }
    };

    for token in Tokenizer::new(page) {
        match token {
            Token::Text(t) => {
                if in_title {
                    if title.is_none() {
                        let mut l = Lines::default();
                        l.text(&decode_entities(t), false);
                        title = Some(l.finish());
                    }
                    // The title is the first line of the whole text.
                    if parts.text {
                        text.text(&decode_entities(t), false);
                    }
                    continue;
                }
                if hidden > 0 {
                    continue;
                }
                if text.off && (main.off || boiler > 0) {
                    continue;
                }
                let t = decode_entities(t);
                if pre > 0 {
                    text.pre(&t, link > 0);
                    if boiler == 0 {
                        main.pre(&t, link > 0);
                    }
                } else {
                    text.text(&t, link > 0);
                    if boiler == 0 {
                        main.text(&t, link > 0);
                    }
                }
            }
            Token::RawText(_) | Token::Comment(_) | Token::Declaration(_) => {}
            Token::Start(tag) => {
                let name = tag.name();
                if name == "title" {
                    // A title in SVG is not the page's; it is text
                    // nowhere (it is a tooltip).
                    if svg == 0 {
                        in_title = true;
                        text.newline();
                    } else if stack.len() < MAX_DEPTH {
                        hidden += 1;
                        stack.push(Frame {
                            name: tag.tag_name(),
                            boiler: false,
                        });
                    }
                    continue;
                }
                let block = is_block(name);
                if block {
                    text.newline();
                    main.newline();
                } else if is_spacing(name) {
                    text.space();
                    main.space();
                }
                // `<div/>` is read as XHTML means it (an empty element),
                // not as HTML does (an open one): pages that write it
                // mean the former.
                if is_void(name) || tag.self_closing() {
                    if name == "br" {
                        // Already a line break as a block element.
                    } else if name == "hr" {
                        text.newline();
                        main.newline();
                    }
                    continue;
                }
                // Implied end tags: a new p, li, dt, dd, tr, td, th or
                // option closes an open one of its kind (or its sibling).
                let closes: &[&str] = match name {
                    "p" => &["p"],
                    "li" => &["li"],
                    "dt" | "dd" => &["dt", "dd"],
                    "tr" => &["tr", "td", "th"],
                    "td" | "th" => &["td", "th"],
                    "option" => &["option"],
                    _ => &[],
                };
                if !closes.is_empty()
                    && let Some(top) = stack.last()
                    && closes.contains(&top.name.as_str())
                    && let Some(frame) = stack.pop()
                {
                    close(
                        frame,
                        &mut boiler,
                        &mut pre,
                        &mut link,
                        &mut svg,
                        &mut hidden,
                        &mut article,
                    );
                }
                if stack.len() >= MAX_DEPTH {
                    continue;
                }
                let is_boiler = parts.main_text && boiler == 0 && is_boilerplate(&tag, article > 0);
                if is_boiler {
                    boiler += 1;
                }
                match name {
                    "pre" | "listing" | "plaintext" => pre += 1,
                    "a" => link += 1,
                    "svg" => svg += 1,
                    "article" | "main" => article += 1,
                    _ if is_hidden(name) => hidden += 1,
                    _ => {}
                }
                stack.push(Frame {
                    name: tag.tag_name(),
                    boiler: is_boiler,
                });
            }
            Token::End(name) => {
                let n = name.as_str();
                if n == "title" && in_title {
                    in_title = false;
                    text.newline();
                    continue;
                }
                if is_block(n) {
                    text.newline();
                    main.newline();
                } else if is_spacing(n) {
                    text.space();
                    main.space();
                }
                // Close up to the matching element, if it is open not too
                // far down (a stray end tag closes nothing).
                if let Some(k) = stack.iter().rev().take(32).position(|f| f.name == name) {
                    for _ in 0..=k {
                        if let Some(frame) = stack.pop() {
                            close(
                                frame,
                                &mut boiler,
                                &mut pre,
                                &mut link,
                                &mut svg,
                                &mut hidden,
                                &mut article,
                            );
                        }
                    }
                }
            }
        }
    }
    Extract {
        title,
        text: text.finish(),
        main_text: main.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(page: &str) -> String {
        html_to_text(page).text
    }

    #[test]
    fn blocks_break_lines_and_whitespace_collapses() {
        assert_eq!(
            text("<p>one\n  two</p><p>three<br>four</p>five<div>six</div>"),
            "one two\nthree\nfour\nfive\nsix"
        );
        assert_eq!(text("a<b>b</b> <i>c</i>\t\u{a0}d\u{1}e"), "ab c d e");
        assert_eq!(
            text("<div><div><p>  x  </p></div>\n\n</div><p></p><p>y</p>"),
            "x\ny"
        );
        // Common Crawl's blocks and spacing elements: a button, a
        // progress bar and a canvas are lines; cite and iframe a space.
        assert_eq!(
            text("a<button>b</button>c<progress>d</progress>e<canvas>f</canvas>g"),
            "a\nb\nc\nd\ne\nf\ng"
        );
        assert_eq!(text("a<cite>b</cite>c<iframe></iframe>d"), "a b c d");
    }

    #[test]
    fn script_style_comments_dropped() {
        assert_eq!(
            text(
                "a<script>var x='</p>';</script>b<style>p{}</style>c<!-- d -->e<template>f</template>g"
            ),
            "abceg"
        );
    }

    #[test]
    fn title_first_line_and_not_from_svg() {
        let e = html_to_text(
            "<html><head><title> A &amp;\n B </title></head><body><svg><title>no</title></svg><p>x</p>",
        );
        assert_eq!(e.title.as_deref(), Some("A & B"));
        assert_eq!(e.text, "A & B\nx");
        assert_eq!(e.main_text, "x");
    }

    #[test]
    fn tables_and_pre() {
        assert_eq!(
            text("<table><tr><th>a</th><th>b</th><tr><td>1<td>2</table>"),
            "a b\n1 2"
        );
        assert_eq!(text("<pre>  a  b\n\n  c</pre>d"), "  a  b\n  c\nd");
    }

    #[test]
    fn main_content_drops_boilerplate() {
        let page = "<body><header><a href=/>Home</a></header><nav><ul><li><a href=/a>A</a></ul></nav>\
            <div class='content'><h1>Title</h1><p>Some text with <a href=x>a link</a> in it.</p>\
            <ul><li><a href=1>one</a><li><a href=2>two</a></ul></div>\
            <div class=\"share-buttons\">Share</div><div style='display: none'>x</div><footer>(c)</footer>";
        let e = html_to_text(page);
        assert_eq!(e.main_text, "Title\nSome text with a link in it.");
        assert!(e.text.starts_with("Home\nA\nTitle"), "{}", e.text);
        assert!(e.text.ends_with("Share\nx\n(c)"), "{}", e.text);
    }

    #[test]
    fn parts_lay_out_only_what_is_asked_the_same_way() {
        let page = "<title>T &amp; t</title><body><nav><a href=/>Home</a></nav><div class=content>\
            <h1>Head</h1><p>Some <b>text</b> &lt;here&gt;<pre> a\n b</pre><a href=1>one</a></div><footer>(c)</footer>";
        let all = html_to_text(page);
        let text = html_to_text_parts(
            page,
            Parts {
                text: true,
                main_text: false,
            },
        );
        let main = html_to_text_parts(
            page,
            Parts {
                text: false,
                main_text: true,
            },
        );
        let none = html_to_text_parts(
            page,
            Parts {
                text: false,
                main_text: false,
            },
        );
        assert_eq!(all.title.as_deref(), Some("T & t"));
        assert_eq!(
            (&text.title, &text.text, text.main_text.as_str()),
            (&all.title, &all.text, "")
        );
        assert_eq!(
            (&main.title, main.text.as_str(), &main.main_text),
            (&all.title, "", &all.main_text)
        );
        assert_eq!(
            (&none.title, none.text.as_str(), none.main_text.as_str()),
            (&all.title, "", "")
        );
        assert!(
            all.main_text.starts_with("Head\nSome text <here>"),
            "{}",
            all.main_text
        );
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let page = "<div>".repeat(100_000) + "x" + &"</div>".repeat(100_000);
        assert_eq!(text(&page), "x");
    }
}
