//! Issue 30: `capture --browser` and `qa` on the fidelity site of
//! fidelity.rs, served live from loopback: what the page loaded in
//! Chromium is in the archive, the replay looks like the capture, and QA
//! says so; the same capture without --browser, QA says what is missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{bin, files_in, no_address_dns, run};
use crate::fidelity::{extra_headers, site};
use crate::serve::chromium;

/// The fidelity site served live: every path asked for is recorded.
pub(crate) struct Live {
    pub(crate) addr: String,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Live {
    fn start() -> Live {
        Live::start_with(|_| Vec::new())
    }

    /// The fidelity site and the pages `extra` gives for its address.
    pub(crate) fn start_with(extra: impl Fn(&str) -> Vec<(String, &'static str, Vec<u8>)>) -> Live {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        l.set_nonblocking(true).unwrap();
        let mut all = site(&addr);
        all.extend(extra(&addr));
        let pages = Arc::new(all);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            // Bounded in time; long enough for the ignored 1,000-page
            // browser crawl (the server stops with its Live).
            while !stop2.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(3600) {
                match l.accept() {
                    Ok((s, _)) => {
                        let (pages, seen) = (pages.clone(), seen2.clone());
                        std::thread::spawn(move || answer(s, &pages, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Live { addr, seen, stop }
    }

    /// Every path served (more than 20) is a response record's target
    /// in `files` (query strings aside).
    pub(crate) fn all_archived(&self, files: &[std::path::PathBuf]) {
        let archived = responses(files);
        let served = self.paths();
        assert!(served.len() > 20, "{served:?}");
        for p in &served {
            let u = format!("http://{}{p}", self.addr);
            assert!(
                archived
                    .iter()
                    .any(|a| a.split('?').next() == Some(u.as_str())),
                "{u} was loaded live but is not archived: {archived:?}"
            );
        }
    }

    /// The paths served (query strings dropped), each once.
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(|p| p.split('?').next().unwrap_or("").to_string())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The path a test server's client asks for (its request head read,
/// within 5 s and 64 KiB); `None`: the client went away.
pub(crate) fn request_path(s: &mut TcpStream) -> Option<String> {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 65536 {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    Some(head.split_whitespace().nth(1).unwrap_or("/").to_string())
}

fn answer(mut s: TcpStream, pages: &[(String, &'static str, Vec<u8>)], seen: &Mutex<Vec<String>>) {
    let Some(path) = request_path(&mut s) else {
        return;
    };
    seen.lock().unwrap().push(path.clone());
    let bare = path.split('?').next().unwrap_or("/");
    match pages.iter().find(|(p, _, _)| p == bare) {
        Some((p, ctype, body)) => {
            let _ = s.write_all(
                format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: {ctype}\r\n{}Content-Length: {}\r\n\r\n",
                    extra_headers(p),
                    body.len()
                )
                .as_bytes(),
            );
            let _ = s.write_all(body);
        }
        None => {
            let _ = s.write_all(
                b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nnot found\n",
            );
        }
    }
}

/// `f` passes `warchest check` and `validate`, and `warcio check -v`.
/// (FastWARC's payload check is left out: it fails every `resource`
/// record that carries WARC-Payload-Digest, which warcio, jwarc and
/// warchest write; docs/crawl.md.)
pub(crate) fn verifies(f: &Path) {
    for cmd in ["check", "validate"] {
        let (code, out, err) = run(bin().arg(cmd).arg(f));
        assert_eq!(code, 0, "{cmd}: {}{err}", String::from_utf8_lossy(&out));
    }
    match std::process::Command::new("warcio")
        .args(["check", "-v"])
        .arg(f)
        .output()
    {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success(),
                "warcio check: {text}{}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(!text.contains("fail"), "{text}");
            assert!(text.contains("digest pass"), "{text}");
        }
        Err(e) => eprintln!("warcio not run: {e}"),
    }
}

/// The target URIs of the response records in `files`.
pub(crate) fn responses(files: &[std::path::PathBuf]) -> Vec<String> {
    let mut v = Vec::new();
    for f in files {
        let mut r = warchest::warc::Reader::open(f).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            let h = rec.header();
            if h.get("WARC-Type").as_deref() == Some("response") {
                v.push(h.get("WARC-Target-URI").unwrap_or_default().to_string());
            }
        }
    }
    v
}

pub(crate) fn qa(dir: &Path, report: &Path) -> (i32, serde_json::Value, String) {
    qa_with(dir, report, &[])
}

/// [`qa`] with `more` flags.
pub(crate) fn qa_with(
    dir: &Path,
    report: &Path,
    more: &[&str],
) -> (i32, serde_json::Value, String) {
    let (code, out, err) = run(bin()
        .arg("qa")
        .arg(dir)
        .arg("-o")
        .arg(report)
        .args(["--json", "--page-timeout", "40"])
        .args(more));
    let v = serde_json::from_slice(&out).unwrap_or(serde_json::Value::Null);
    (code, v, err)
}

#[test]
fn the_fidelity_site_captured_with_a_browser_replays_and_passes_qa() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let live = Live::start();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let url = format!("http://{}/", live.addr);
    let (code, _, err) = run(bin()
        .arg("capture")
        .args(["--browser", &url, "--page-timeout", "40", "--no-media"])
        // Chromium's own requests are looked up on loopback only.
        .args(["--dns-server", &no_address_dns()])
        .arg("--chromium")
        .arg(&exe)
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 0, "{err}");
    let files = files_in(&out);
    // Every resource the live page loaded in the browser is in the
    // archive (the favicon is the browser's own request).
    live.all_archived(&files);
    for f in &files {
        verifies(f);
    }
    // The replay, in serve: as the capture looked (at most 3 % of pixels
    // differ), nothing missing, nothing leaving the archive.
    let (code, v, err) = qa(&out, &work.path().join("qa"));
    let page = &v["reports"][0];
    assert_eq!(v["pages"], 1, "{v:#}{err}");
    assert!(
        page["screenshot_match"].as_f64().unwrap() >= 0.97,
        "{page:#}"
    );
    assert!(page["text_match"].as_f64().unwrap() >= 0.9, "{page:#}");
    assert_eq!(page["missing"], serde_json::json!([]), "{page:#}");
    assert_eq!(page["left_archive"], serde_json::json!([]), "{page:#}");
    assert_eq!(code, 0, "{page:#}{err}");
    let html = std::fs::read_to_string(work.path().join("qa/index.html")).unwrap();
    assert!(html.contains("00000-capture.png") && html.contains("00000-replay.png"));
}

#[test]
fn without_a_browser_qa_reports_what_is_missing() {
    let Some(_) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let live = Live::start();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let url = format!("http://{}/", live.addr);
    let (code, _, err) = run(bin()
        .arg("capture")
        .arg(&url)
        .arg("--ignore-robots")
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 0, "{err}");
    let (code, v, err) = qa(&out, &work.path().join("qa"));
    assert_eq!(code, 1, "{v:#}{err}");
    let page = &v["reports"][0];
    assert_eq!(page["good"], false, "{page:#}");
    // The frames the page names, and what their scripts load, were never
    // fetched by the HTTP capture.
    let missing: Vec<&str> = page["missing"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    let fetch = format!("http://{}/m/fetch.html", live.addr);
    assert!(missing.contains(&fetch.as_str()), "{missing:?}");
    assert!(page["screenshot_match"].is_null(), "{page:#}");
}

/// HTTPS pages go through the recording proxy too: the browser accepts
/// the proxy's certificates by our CA's key (trusted for that browser
/// only), and the proxy verifies the server as `capture` does (here by
/// --ca-cert).
#[test]
fn https_pages_are_recorded_through_the_proxy() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let (cfg, pem) = crate::capture::tls_config(&["127.0.0.1"]);
    let site = crate::capture::start_site(Some(cfg));
    let work = tempfile::tempdir().unwrap();
    let ca = work.path().join("server.pem");
    std::fs::write(&ca, pem).unwrap();
    let out = work.path().join("out");
    let url = format!("https://127.0.0.1:{}/", site.addr.port());
    let (code, _, err) = run(bin()
        .arg("-w")
        .arg("capture")
        .args([
            "--browser",
            &url,
            "--page-timeout",
            "20",
            "--no-media",
            "--no-scroll",
            // Chromium's own requests are looked up on loopback only.
            "--dns-server",
            &no_address_dns(),
        ])
        .arg("--chromium")
        .arg(&exe)
        .arg("--ca-cert")
        .arg(&ca)
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("200 {url}")), "{err}");
    let files = files_in(&out);
    let archived = responses(&files);
    assert!(archived.contains(&url), "{archived:?}");
    // QA reads a WACZ as well as a directory.
    let wacz = work.path().join("c.wacz");
    let (code, _, err) = run(bin()
        .args(["wacz", "create"])
        .args(&files)
        .arg("-o")
        .arg(&wacz));
    assert_eq!(code, 0, "{err}");
    let (code, v, err) = qa(&wacz, &work.path().join("qa"));
    assert_eq!(code, 0, "{v:#}{err}");
    assert_eq!(v["good"], 1, "{v:#}");
}

/// A page's resource the recording proxy could not fetch (a closed port)
/// is named on the page's line, counted in the end line as the page's, and
/// makes the exit status 1; the browser's own requests, if any, are counted
/// apart and do not.
#[test]
fn a_resource_the_proxy_did_not_record_is_the_pages_loss() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let img = format!("http://{closed}/gone.png");
    let html = format!("<!doctype html><title>t</title><p>text</p><img src=\"{img}\">");
    let live = Live::start_with(move |_| {
        vec![(
            "/lossy.html".to_string(),
            "text/html",
            html.clone().into_bytes(),
        )]
    });
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let url = format!("http://{}/lossy.html", live.addr);
    let (code, _, err) = run(bin()
        .arg("-w")
        .arg("capture")
        .args(["--browser", &url, "--page-timeout", "20", "--no-media"])
        // Chromium's own requests (its updater, its clock) are looked up
        // on loopback, never on the network.
        .args(["--dns-server", &no_address_dns()])
        .arg("--chromium")
        .arg(&exe)
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with(&format!("200 {url} ")) && l.ends_with(" (1 not recorded)")),
        "{err}"
    );
    assert!(
        err.contains(&format!("not recorded (connect): GET {img}: ")),
        "{err}"
    );
    let end = err
        .lines()
        .find(|l| l.contains("not recorded (") && l.contains("exchange"))
        .unwrap_or_else(|| panic!("no end line: {err}"));
    assert!(end.contains("connect 1"), "{end}");
    assert!(end.contains("; 1 of the pages"), "{end}");
    assert!(!responses(&files_in(&out)).contains(&img));
}

/// `qa --max-pages` checks that many pages and says how many it left out
/// of how many the archive has.
#[test]
fn qa_says_how_many_pages_max_pages_left_unchecked() {
    let Some(_) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let live = Live::start();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    // Three HTML pages captured over HTTP: the archive's pages are its
    // HTML responses.
    let urls: Vec<String> = ["/", "/m/fetch.html", "/m/xhr.html"]
        .iter()
        .map(|p| format!("http://{}{p}", live.addr))
        .collect();
    let (code, _, err) = run(bin()
        .arg("capture")
        .args(&urls)
        .arg("--ignore-robots")
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 0, "{err}");
    let (_, out_json, err) = run(bin()
        .arg("qa")
        .arg(&out)
        .arg("-o")
        .arg(work.path().join("qa"))
        .args(["--json", "--page-timeout", "40", "--max-pages", "1"]));
    let v: serde_json::Value = serde_json::from_slice(&out_json).unwrap_or_default();
    assert_eq!(v["pages"], 1, "{v:#}{err}");
    let found = v["found"].as_u64().unwrap();
    assert!(found >= 2, "{v:#}");
    assert_eq!(v["unchecked"].as_u64(), Some(found - 1), "{v:#}");
    assert!(
        err.contains(&format!(
            "{} of {found} pages not checked (--max-pages 1)",
            found - 1
        )),
        "{err}"
    );
}
