//! The URLs of a `srcset` (or `imagesrcset`) value.

use std::ops::Range;

/// Where each image candidate's URL lies in a `srcset` value (character
/// references already decoded), in order, found as HTML's "parse a srcset
/// attribute" finds them:
///
/// - candidates are separated by commas and ASCII white space;
/// - a URL is a run of characters other than white space, commas inside
///   it kept (`a,b.jpg 1x` names `a,b.jpg`), commas at its end not part of
///   it (`a.jpg,b.jpg` is one URL; `a.jpg, b.jpg` two);
/// - the descriptors after a URL run to the next comma outside
///   parentheses.
///
/// Every candidate's URL is given, whatever its descriptors: a candidate
/// the spec would drop for bad descriptors (`a.jpg 1x 2x`) is still a URL
/// the page names, to archive and to rewrite. Byte ranges, so that a
/// rewriter can replace each URL and keep the rest byte for byte. Lazy and
/// linear: no allocation, each byte looked at once.
pub fn srcset_urls(value: &str) -> SrcsetUrls<'_> {
    SrcsetUrls {
        b: value.as_bytes(),
        i: 0,
    }
}

/// The iterator of [`srcset_urls`].
#[derive(Debug, Clone)]
pub struct SrcsetUrls<'a> {
    b: &'a [u8],
    i: usize,
}

impl Iterator for SrcsetUrls<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let b = self.b;
        let mut i = self.i;
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        if i >= b.len() {
            self.i = i;
            return None;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut end = i;
        // Not empty: the run started with a byte that is not a comma.
        while end > start + 1 && b[end - 1] == b',' {
            end -= 1;
        }
        if end == i {
            // No comma ended the URL: its descriptors do, outside
            // parentheses (a parenthesis does not nest in the spec's
            // tokenizer: the first `)` closes).
            let mut in_parens = false;
            while i < b.len() {
                match b[i] {
                    b'(' => in_parens = true,
                    b')' => in_parens = false,
                    b',' if !in_parens => {
                        i += 1;
                        break;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        self.i = i;
        // Both ends follow or precede ASCII bytes: char boundaries.
        Some(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(s: &str) -> Vec<&str> {
        srcset_urls(s).map(|r| &s[r]).collect()
    }

    #[test]
    fn candidates() {
        assert_eq!(urls("a.png 1x, b.png 2x"), ["a.png", "b.png"]);
        assert_eq!(urls("a.png,b.png"), ["a.png,b.png"]);
        assert_eq!(urls("a.png, b.png"), ["a.png", "b.png"]);
        assert_eq!(urls("a.png,, ,b.png,"), ["a.png", "b.png"]);
        assert_eq!(
            urls("x.jpg?w=1,2 100w, y.jpg 200w"),
            ["x.jpg?w=1,2", "y.jpg"]
        );
        assert_eq!(urls("  "), Vec::<&str>::new());
        assert_eq!(urls(""), Vec::<&str>::new());
        assert_eq!(urls(",,,"), Vec::<&str>::new());
        assert_eq!(urls("\ta.png\n1x\r\n,\x0cb.png"), ["a.png", "b.png"]);
    }

    /// The case replay's old split on every comma got wrong: a comma
    /// inside a URL.
    #[test]
    fn a_comma_inside_a_url() {
        let s = "a,b.jpg 1x, /c.jpg?x=1,2 2x";
        let got: Vec<_> = srcset_urls(s).collect();
        assert_eq!(got, [0..7, 12..24]);
        assert_eq!(urls(s), ["a,b.jpg", "/c.jpg?x=1,2"]);
    }

    #[test]
    fn descriptors_with_parentheses_and_odd_ones() {
        assert_eq!(urls("a.png f(1,2) 1x, b.png"), ["a.png", "b.png"]);
        // An unclosed parenthesis runs to the end.
        assert_eq!(urls("a.png (1x, b.png"), ["a.png"]);
        // `)` outside parentheses is a descriptor character.
        assert_eq!(urls("a.png ) 1x, b.png"), ["a.png", "b.png"]);
        // Descriptors the spec would refuse: the URL all the same.
        assert_eq!(urls("a.png 1x 2x, b.png foo"), ["a.png", "b.png"]);
    }

    #[test]
    fn non_ascii_and_no_panic() {
        assert_eq!(urls("é.png 1x,ü,.png"), ["é.png", "ü,.png"]);
        for s in ["(", ")", ",(", "a (", "é", "a ,", " , é ( , ) ,"] {
            for r in srcset_urls(s) {
                assert!(!s[r].is_empty());
            }
        }
    }
}
