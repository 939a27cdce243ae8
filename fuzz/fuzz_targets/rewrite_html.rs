//! The replay rewriter over any bytes as HTML, CSS and JavaScript: no
//! panic, the same output fed whole and in pieces (the first byte picks
//! the piece size, and the page's charset from its Content-Type: none,
//! UTF-8, windows-1252 or Shift_JIS).
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest_replay::archive_url::content_type_encoding;
use warchest_replay::rewrite::{Kind, Rewriter, UrlContext};

/// Content-Types whose charsets the first byte's two high bits pick.
const TYPES: [&[u8]; 4] = [
    b"text/html",
    b"text/html; charset=utf-8",
    b"text/html; charset=windows-1252",
    b"text/html; charset=shift_jis",
];

fn run(kind: Kind, data: &[u8], piece: usize, ctype: &[u8]) -> Vec<u8> {
    let ctx = UrlContext {
        prefix: "/c/".into(),
        abs_prefix: "http://h:1/c/".into(),
        timestamp: "2014".into(),
        base: "http://ex.com/dir/page.html".into(),
        encoding: content_type_encoding(ctype),
    };
    let mut rw = Rewriter::new(
        kind,
        ctx,
        Some("<script>X</script>".into()),
        Some("<b>".into()),
    )
    .without_gathering();
    let mut out = Vec::new();
    for ch in data.chunks(piece) {
        rw.feed(ch, &mut out);
    }
    rw.finish(&mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let piece = usize::from(first % 64) + 1;
    let ctype = TYPES[usize::from(first >> 6)];
    for kind in [Kind::Html, Kind::Css, Kind::Js] {
        let whole = run(kind, body, body.len().max(1), ctype);
        assert_eq!(
            whole,
            run(kind, body, piece, ctype),
            "{kind:?} in pieces of {piece}"
        );
    }
});
