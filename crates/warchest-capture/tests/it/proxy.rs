//! The recording proxy's count of exchanges not recorded, against a
//! server on 127.0.0.1.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use warchest_capture::Recorder;
use warchest_capture::proxy::{Proxy, ProxyOptions};

/// A server whose first connection is closed without a response and
/// whose later ones get a 200.
fn flaky_site() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (i, c) in l.incoming().take(8).enumerate() {
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
            if i > 0 {
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            }
        }
    });
    port
}

/// A recorder writing under `dir`, and proxy options allowing loopback
/// only.
fn recording(dir: &std::path::Path) -> (Arc<Recorder>, ProxyOptions) {
    let recorder = Arc::new(
        Recorder::new(
            &dir.join("out"),
            warchest::write::RotatingOptions::default(),
            None,
        )
        .unwrap(),
    );
    let opts = crate::loopback::loopback_options(dir);
    (recorder, opts)
}

/// The status line of `GET url` through the proxy at `proxy`.
fn get(proxy: std::net::SocketAddr, url: &str) -> String {
    let mut c = TcpStream::connect(proxy).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    write!(
        c,
        "GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A URL lost once (the server closed without a response) and then
/// recorded (as a page's retry would) is no longer a loss to claim: the
/// page that claims it finds nothing, and the summary counts the loss as
/// superseded.
#[test]
fn a_loss_then_a_recording_of_its_url_leaves_nothing_to_claim() {
    let port = flaky_site();
    let dir = tempfile::tempdir().unwrap();
    let (recorder, opts) = recording(dir.path());
    let proxy = Proxy::bind("127.0.0.1:0".parse().unwrap(), recorder.clone(), opts).unwrap();
    let addr = proxy.local_addr().unwrap();
    let unrecorded = proxy.unrecorded();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let serving = std::thread::spawn(move || proxy.serve(&stop2));
    let url = format!("http://127.0.0.1:{port}/img.png");
    assert!(get(addr, &url).contains(" 502 "), "the first is lost");
    let s = unrecorded.summary();
    assert_eq!((s.lost(), s.superseded), (1, 0));
    assert!(get(addr, &url).contains(" 200 "), "the second is recorded");
    stop.store(true, Ordering::Relaxed);
    serving.join().unwrap().unwrap();
    recorder.finish().unwrap();
    assert!(unrecorded.claim([url.as_str()]).is_empty());
    let s = unrecorded.summary();
    assert_eq!((s.lost(), s.superseded, s.claimed), (1, 1, 0));
    assert_eq!(s.lost_by_pages(), 0);
}

/// A redirect is told to the redirect hook before the client has a byte
/// of it: a browser follows a redirect as soon as it has the head, and
/// the hook must have filed its target (to await the target's document)
/// by then. The hook here is slow; the client, once it has the redirect,
/// finds the hook done.
#[test]
fn a_redirect_is_told_to_the_hook_before_the_client_has_it() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().take(2) {
            let Ok(mut c) = c else { return };
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut req = Vec::new();
            let mut b = [0u8; 1];
            while !req.ends_with(b"\r\n\r\n") && c.read(&mut b).unwrap_or(0) == 1 {
                req.push(b[0]);
            }
            let _ = c.write_all(
                b"HTTP/1.1 302 Found\r\nLocation: /there\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (recorder, opts) = recording(dir.path());
    let told = Arc::new(std::sync::Mutex::new(None));
    let t = told.clone();
    let hook = warchest_capture::proxy::RedirectHook(Arc::new(move |uri: &str, to: &str| {
        std::thread::sleep(Duration::from_millis(300));
        *t.lock().unwrap() = Some((uri.to_string(), to.to_string()));
    }));
    let proxy = Proxy::bind("127.0.0.1:0".parse().unwrap(), recorder.clone(), opts)
        .unwrap()
        .on_redirect(hook);
    let addr = proxy.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let serving = std::thread::spawn(move || proxy.serve(&stop2));
    let url = format!("http://127.0.0.1:{port}/r");
    let status = get(addr, &url);
    assert!(status.contains(" 302 "), "{status}");
    assert_eq!(
        told.lock().unwrap().clone(),
        Some((url, "/there".to_string())),
        "the client had the redirect first"
    );
    stop.store(true, Ordering::Relaxed);
    serving.join().unwrap().unwrap();
    recorder.finish().unwrap();
}
