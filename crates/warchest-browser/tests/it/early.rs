//! What a page gives before it ends (`Browsers::capture_early`): given
//! off the page's path, after redirects, and for two captures of one URL
//! at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use warchest_browser::Early;

use crate::common::{Rig, records};
use crate::{Site, chromium};

const HTML: &str = "text/html; charset=utf-8";

fn page(body: &str) -> Option<Vec<u8>> {
    Some(format!("<!doctype html><html><body>{body}</body></html>").into_bytes())
}

/// `browsers` browsers recording into `dir`, quick, with neither scroll
/// nor media (a page is its load, 500 ms of quiet and its records).
fn start(exe: std::path::PathBuf, dir: &std::path::Path, browsers: usize) -> Rig {
    Rig::start(exe, dir, |o| {
        o.scroll = false;
        o.media = false;
        o.browsers = browsers;
    })
}

/// The early messages' kinds and URLs: `document URL` or `links L1 L2...`.
fn kinds(got: &[Early]) -> Vec<String> {
    got.iter()
        .map(|e| match e {
            Early::Document { url, .. } => format!("document {url}"),
            Early::Links(l) => format!("links {}", l.join(" ")),
            _ => "other".into(),
        })
        .collect()
}

/// A callback that blocks holds none of the page's steps back: its first
/// call waits until the page has ended (its load, 500 ms of quiet,
/// screenshot, text and records), and every message still reaches the
/// callback (none lost) before `capture_early` returns. Were the callback
/// on the page's path, the page could not end while it waits, and the wait
/// would run out. The first message is the document or the DOM's links:
/// the proxy's exchange thread sends the one, the page the other, in
/// either order (the links came first once at a load of 20).
#[test]
fn a_slow_early_callback_does_not_hold_the_page_back() {
    let Some(exe) = chromium() else { return };
    let s = Site::start(vec![(
        "/",
        (200, HTML, page("<title>p</title><a href=\"/a.html\">a</a>")),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let b = start(exe, dir.path(), 1);
    let url = format!("{}/", s.base);
    // A bound only for the failure: the page's own bound and then some.
    let bound = Duration::from_secs(60);
    let (mut got, mut waited) = (Vec::new(), None);
    let p = b.capture_early(&url, &mut |e| {
        if got.is_empty() {
            let t = Instant::now();
            while b.pages_ended() == 0 && t.elapsed() < bound {
                std::thread::sleep(Duration::from_millis(20));
            }
            waited = Some((b.pages_ended(), t.elapsed()));
        }
        got.push(e);
    });
    b.finish();
    assert!(p.ok(), "{p:?}");
    let (ended, w) = waited.unwrap();
    assert_eq!(
        ended, 1,
        "the page did not end while its callback waited {w:?}"
    );
    let k = kinds(&got);
    assert_eq!(k.len(), 2, "{k:?}");
    assert!(k.contains(&format!("document {url}")), "{k:?}");
    assert!(
        k.iter()
            .any(|l| l.starts_with("links ") && l.contains(&format!("{}/a.html", s.base))),
        "{k:?}"
    );
}

/// A URL that redirects gives the document its redirects led to, early,
/// with the DOM's links; a `Location` with a fragment is awaited without
/// it (no request carries one). The target is slow (1 s: 300 ms left
/// little margin on a loaded machine), so the hook files it before its
/// exchange ends on even a busy machine; the messages may come in either
/// order.
#[test]
fn a_redirected_page_gives_its_document_early() {
    let Some(exe) = chromium() else { return };
    let s = Site::start(vec![
        ("/r", (302, HTML, Some(b"/r2".to_vec()))),
        ("/r2", (301, HTML, Some(b"/home?wait=1000#main".to_vec()))),
        (
            "/home",
            (
                200,
                HTML,
                page("<title>home</title><a href=\"/a.html\">a</a>"),
            ),
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let b = start(exe, dir.path(), 1);
    let mut got = Vec::new();
    let p = b.capture_early(&format!("{}/r", s.base), &mut |e| got.push(e));
    b.finish();
    assert!(p.ok(), "{p:?}");
    let k = kinds(&got);
    let home = format!("{}/home?wait=1000", s.base);
    let doc = got.iter().find_map(|e| match e {
        Early::Document { url, body, .. } if *url == home => Some(body),
        _ => None,
    });
    let Some(body) = doc else {
        panic!("no document {home}: {k:?}");
    };
    assert!(String::from_utf8_lossy(body).contains("/a.html"));
    assert!(
        k.iter()
            .any(|l| l.starts_with("links ") && l.contains("/a.html")),
        "{k:?}"
    );
}

/// Two captures of one URL at once (two tabs): each ends, each has its
/// document early, and the URL is recorded twice, each capture whole (its
/// exchange, screenshot, text and metadata).
#[test]
fn two_captures_of_one_url_at_once_both_end_and_are_recorded() {
    let Some(exe) = chromium() else { return };
    let s = Site::start(vec![(
        "/",
        (
            200,
            HTML,
            page("<title>twice</title><a href=\"/a.html\">a</a>"),
        ),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let Rig { browsers: b, rec } = start(exe, dir.path(), 2);
    let url = format!("{}/", s.base);
    let (done_tx, done) = std::sync::mpsc::channel();
    // Detached threads, the time bound on this one: a capture that hung
    // fails the test here (a scope would join the hung thread first).
    let b = Arc::new(b);
    let captures: Vec<_> = (0..2)
        .map(|_| {
            let (b, url, done_tx) = (b.clone(), url.clone(), done_tx.clone());
            std::thread::spawn(move || {
                let mut got = Vec::new();
                let p = b.capture_early(&url, &mut |e| got.push(e));
                let _ = done_tx.send((p, kinds(&got)));
            })
        })
        .collect();
    // Never a hang: both end within their page bound and then some.
    for _ in 0..2 {
        let (p, k) = done
            .recv_timeout(Duration::from_secs(60))
            .expect("a capture of the URL did not end");
        assert!(p.ok(), "{p:?}");
        assert!(k.contains(&format!("document {url}")), "{k:?}");
        assert!(k.iter().any(|l| l.starts_with("links ")), "{k:?}");
    }
    // Both sent their result: what is left of them is their return.
    for c in captures {
        c.join().unwrap();
    }
    let Ok(b) = Arc::try_unwrap(b) else {
        panic!("a capture still holds the browsers");
    };
    b.finish().unwrap();
    let files = rec.finish().unwrap();
    assert_eq!(s.requests().iter().filter(|p| *p == "/").count(), 2);
    let recs = records(&files);
    let of = |kind: &[&str], uri: &str| {
        recs.iter()
            .filter(|r| kind.contains(&r.0.as_str()) && r.1 == uri)
            .count()
    };
    // The second exchange's payload is the first's: a revisit, or a
    // response when both were written before either was indexed.
    assert_eq!(of(&["response", "revisit"], &url), 2);
    assert_eq!(of(&["resource"], &format!("urn:view:{url}")), 2);
    assert_eq!(of(&["resource"], &format!("urn:text:{url}")), 2);
    // The page's own metadata records (the proxy writes one beside each
    // exchange too).
    let pages = recs
        .iter()
        .filter(|r| {
            r.0 == "metadata" && r.1 == url && String::from_utf8_lossy(&r.3).contains("outlink:")
        })
        .count();
    assert_eq!(pages, 2);
}

/// A document longer than `MAX_EARLY_DOCUMENT` is handed on cut, and says
/// so (`DocumentCut::Size`), so that its page's crawl.log line tells the
/// links past the cut were not looked for; a whole one says nothing.
#[test]
fn a_document_past_the_early_bound_says_it_was_cut() {
    use warchest_browser::{DocumentCut, MAX_EARLY_DOCUMENT};
    let Some(exe) = chromium() else { return };
    let filler = "x".repeat(MAX_EARLY_DOCUMENT as usize);
    let s = Site::start(vec![
        ("/big", (200, HTML, page(&format!("<p>{filler}</p>")))),
        ("/small", (200, HTML, page("<a href=\"/a.html\">a</a>"))),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let b = start(exe, dir.path(), 1);
    for (path, want) in [("/big", Some(DocumentCut::Size)), ("/small", None)] {
        let url = format!("{}{path}", s.base);
        let mut got = Vec::new();
        let p = b.capture_early(&url, &mut |e| got.push(e));
        assert!(p.ok(), "{p:?}");
        let doc = got.iter().find_map(|e| match e {
            Early::Document { body, cut, .. } => Some((body.len(), cut.clone())),
            _ => None,
        });
        let (len, cut) = doc.unwrap_or_else(|| panic!("no document {url}: {:?}", kinds(&got)));
        assert_eq!(cut, want, "{path}");
        if want.is_some() {
            assert_eq!(len as u64, MAX_EARLY_DOCUMENT, "{path}");
        }
    }
    b.finish();
}
