//! warchest-browser's integration tests: real headless Chromium, a real
//! loopback HTTP server, the real recording proxy. Skipped (with a line on
//! stderr) when WARCHEST_SKIP_BROWSER is set.

mod capture;
mod common;
mod early;
/// The recording proxy's loopback options, shared with the capture tests.
#[path = "../../../warchest-capture/tests/it/loopback.rs"]
mod loopback;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Chromium to test with, or None when the browser tests are skipped.
pub fn chromium() -> Option<PathBuf> {
    if std::env::var_os("WARCHEST_SKIP_BROWSER").is_some() {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return None;
    }
    let p = warchest_browser::chrome::find_on_path()
        .or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.exists()));
    assert!(
        p.is_some(),
        "headless Chromium is needed (apt-get install chromium), or set WARCHEST_SKIP_BROWSER=1"
    );
    p
}

/// What a path answers: status, content type, body; `None` body: a
/// response that never ends (a few bytes, then silence until the server
/// stops). A 3xx's body is its `Location`, sent with no body. A request
/// whose query is `wait=MS` is answered MS milliseconds later.
pub type Route = (u16, &'static str, Option<Vec<u8>>);

/// A loopback HTTP/1.x server with fixed routes that records every request
/// path; a thread a connection, stopped when dropped.
pub struct Site {
    pub base: String,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Site {
    pub fn start(routes: Vec<(&'static str, Route)>) -> Site {
        Site::start_on("127.0.0.1", routes)
    }

    /// [`Site::start`] on another loopback address (`127.0.0.2`: another
    /// site to the browser, whose frames it runs as targets of their own).
    pub fn start_on(ip: &str, routes: Vec<(&'static str, Route)>) -> Site {
        let l = TcpListener::bind((ip, 0)).unwrap();
        l.set_nonblocking(true).unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let routes = Arc::new(routes);
        let (seen2, stop2) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while !stop2.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(300) {
                match l.accept() {
                    Ok((s, _)) => {
                        let (routes, seen, stop) = (routes.clone(), seen2.clone(), stop2.clone());
                        std::thread::spawn(move || serve(s, &routes, &seen, &stop));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Site { base, seen, stop }
    }

    /// The paths asked for so far.
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut s: TcpStream, routes: &[(&str, Route)], seen: &Mutex<Vec<String>>, stop: &AtomicBool) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 65536 {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    seen.lock().unwrap().push(path.clone());
    let bare = path.split('?').next().unwrap_or("/");
    // `?wait=MS`: the answer comes that much later.
    if let Some(ms) = path
        .split_once("?wait=")
        .and_then(|(_, ms)| ms.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms.min(10_000)));
    }
    let Some((_, (status, ctype, body))) = routes.iter().find(|(p, _)| *p == bare) else {
        let _ = s.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nnot found\n");
        return;
    };
    match body {
        Some(to) if (300..400).contains(status) => {
            let _ = s.write_all(
                format!(
                    "HTTP/1.0 {status} X\r\nLocation: {}\r\nContent-Length: 0\r\n\r\n",
                    String::from_utf8_lossy(to)
                )
                .as_bytes(),
            );
        }
        Some(b) => {
            let _ = s.write_all(
                format!(
                    "HTTP/1.0 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
                    b.len()
                )
                .as_bytes(),
            );
            let _ = s.write_all(b);
        }
        None => {
            // Never ends: a little now, then nothing until the server
            // stops (bounded: a minute).
            let _ = s.write_all(format!("HTTP/1.0 {status} X\r\nContent-Type: {ctype}\r\n\r\n<!doctype html><title>slow</title><p>loading").as_bytes());
            let start = Instant::now();
            while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(100));
                if s.write_all(b" ").is_err() {
                    return;
                }
            }
        }
    }
}
