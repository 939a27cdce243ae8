//! What a run leaves out is counted and named: URLs a stop left in the
//! queue, the redirect past `max_redirects`, a redirect to FTP. Against a
//! site on 127.0.0.1 that answers at most 64 connections.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use warchest_capture::{CaptureOptions, Capturer, Event, Summary};

/// `/r/N` redirects to `/r/N+1`, `/ftp` to an `ftp://` URL, anything
/// else is a 200.
fn site() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().take(64) {
            let Ok(mut c) = c else { return };
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut req = Vec::new();
            let mut b = [0u8; 1];
            while !req.ends_with(b"\r\n\r\n") {
                if c.read(&mut b).unwrap_or(0) == 0 {
                    break;
                }
                req.push(b[0]);
            }
            let head = String::from_utf8_lossy(&req);
            let target = head.split(' ').nth(1).unwrap_or("").to_string();
            let loc = if let Some(n) = target.strip_prefix("/r/") {
                let n: u32 = n.parse().unwrap_or(0);
                Some(format!("/r/{}", n + 1))
            } else if target == "/ftp" {
                Some(format!("ftp://127.0.0.1:{port}/file"))
            } else {
                None
            };
            let _ = match loc {
                Some(l) => write!(
                    c,
                    "HTTP/1.1 302 Found\r\nLocation: {l}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n"
                ),
                None => write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\
                     Connection: close\r\n\r\npage"
                ),
            };
        }
    });
    port
}

/// Runs `urls` with one worker, robots.txt ignored; with `stop`, it is
/// set at the first event.
fn run(
    urls: Vec<String>,
    max_redirects: u32,
    stop: Option<Arc<AtomicBool>>,
) -> (Vec<Event>, Summary) {
    let dir = tempfile::tempdir().unwrap();
    let opts = CaptureOptions {
        timeout: Duration::from_secs(5),
        jobs: 1,
        robots: false,
        max_redirects,
        stop: stop.clone(),
        ..CaptureOptions::default()
    };
    let events = Mutex::new(Vec::new());
    let summary = Capturer::new(dir.path(), opts)
        .unwrap()
        .run(urls, &|e: &Event| {
            events.lock().unwrap().push(e.clone());
            // A stop after the first URL's event: as Ctrl-C between two.
            if let Some(s) = &stop {
                s.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
    (events.into_inner().unwrap(), summary)
}

#[test]
fn a_stop_counts_and_names_the_urls_never_fetched() {
    let port = site();
    let urls: Vec<String> = (0..5)
        .map(|i| format!("http://127.0.0.1:{port}/p{i}"))
        .collect();
    let (events, s) = run(urls.clone(), 10, Some(Arc::new(AtomicBool::new(false))));
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].url, urls[0]);
    assert!(s.interrupted);
    // The URL taken from the queue when the stop was seen, and the three
    // still queued.
    assert_eq!(s.not_fetched, 4);
    assert_eq!(s.not_fetched_urls, urls[1..]);
    assert_eq!((s.fetched, s.failed), (1, 0));
    // Without a stop nothing is left.
    let (_, s) = run(urls, 10, None);
    assert_eq!((s.not_fetched, s.fetched), (0, 5));
    assert!(!s.interrupted);
}

/// A write error ends the run, and what it lost is named as a stop's
/// is: the URL whose records could not be written, and the URLs never
/// attempted (they used to go uncounted, the summary dropped).
#[test]
fn a_write_error_names_the_url_it_lost_and_those_never_fetched() {
    let port = site();
    let urls: Vec<String> = (0..4)
        .map(|i| format!("http://127.0.0.1:{port}/w{i}"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let opts = CaptureOptions {
        timeout: Duration::from_secs(5),
        jobs: 1,
        robots: false,
        ..CaptureOptions::default()
    };
    let capturer = Capturer::new(&out, opts).unwrap();
    // The first file is made at the first record: gone, its directory
    // makes that write fail.
    std::fs::remove_dir_all(&out).unwrap();
    let events = Mutex::new(Vec::new());
    let failed = capturer
        .run(urls.clone(), &|e: &Event| {
            events.lock().unwrap().push(e.clone())
        })
        .expect_err("the records cannot be written");
    assert!(events.into_inner().unwrap().is_empty());
    assert!(
        matches!(failed.error, warchest_capture::CaptureError::Warc(_)),
        "{:?}",
        failed.error
    );
    assert_eq!(failed.unwritten, urls[..1]);
    let s = &failed.summary;
    assert_eq!(s.not_fetched, 3);
    assert_eq!(s.not_fetched_urls, urls[1..]);
    assert!(!s.interrupted);
    assert_eq!((s.fetched, s.failed, s.records.records), (0, 0, 0));
}

#[test]
fn the_redirect_past_the_limit_and_one_to_ftp_are_errors_naming_their_target() {
    let port = site();
    let start = format!("http://127.0.0.1:{port}/r/0");
    let (events, s) = run(vec![start], 2, None);
    // /r/0, /r/1, /r/2 fetched (two redirects followed); /r/3 is not.
    let urls: Vec<&str> = events.iter().map(|e| e.url.as_str()).collect();
    let third = format!("http://127.0.0.1:{port}/r/3");
    assert_eq!(urls.len(), 4, "{urls:?}");
    assert_eq!(urls[3], third);
    assert_eq!(events[3].outcome, "error");
    assert_eq!(
        events[3].error.as_deref(),
        Some(format!("too many redirects: {third} not fetched").as_str())
    );
    assert_eq!((s.fetched, s.failed), (3, 1));
    let (events, s) = run(vec![format!("http://127.0.0.1:{port}/ftp")], 10, None);
    let ftp = format!("ftp://127.0.0.1:{port}/file");
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1].url, ftp);
    assert_eq!(events[1].outcome, "error");
    assert_eq!(
        events[1].error.as_deref(),
        Some(format!("redirect to ftp not followed: {ftp}").as_str())
    );
    assert_eq!((s.fetched, s.failed), (1, 1));
}
