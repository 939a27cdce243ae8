//! `warchest serve` facing hostile clients (issue 18): slow connections,
//! a panicking handler, a reverse proxy's host names, graceful shutdown,
//! and archived scripts kept from the UI and the live web (headless
//! Chromium). Malformed, oversized and foreign-host requests and HTTP/2
//! are the server crate's tests (crates/warchest-serve/tests/it/limits.rs).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{bin, exchange, fixture, trickle_beside};
use crate::serve::{IANA_TS, Server, chromium, get, iana_server, run_chromium};

#[test]
fn slowloris_connections_do_not_hold_up_other_requests() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    // 200 connections, each trickling its request head a byte a second.
    let head = format!("GET / HTTP/1.1\r\nHost: {}\r\nX-Slow: ", s.addr);
    let mut slow: Vec<TcpStream> = (0..200)
        .map(|i| {
            let addr = if i % 2 == 0 { &s.addr } else { &s.replay };
            TcpStream::connect(addr).unwrap()
        })
        .collect();
    // Normal requests on both origins answer at once meanwhile.
    let mut answered = 0;
    trickle_beside(&mut slow, head.as_bytes(), 5, 4, || {
        let cdx = s.get("/archive/cdx?url=http://www.iana.org/&limit=1");
        let raw = s.rget(&format!("/archive/{IANA_TS}id_/http://www.iana.org/"));
        assert_eq!(cdx.status, 200);
        assert_eq!(raw.status, 200);
        answered += 2;
    });
    assert_eq!(answered, 40);
}

#[test]
fn a_panicking_handler_answers_500_and_the_server_goes_on() {
    // The panic route exists in debug builds only, and only with
    // WARCHEST_SERVE_TEST_PANIC set (crates/warchest-serve/src/lib.rs).
    if !cfg!(debug_assertions) {
        eprintln!("skipped: release build (no panic route)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.env("WARCHEST_SERVE_TEST_PANIC", "1")
        .arg("serve")
        .arg(fixture("pywb/iana.warc.gz"))
        .args(["--listen", "127.0.0.1:0", "--poll", "0", "--index-db"])
        .arg(dir.path().join("i.redb"));
    let s = Server::start_cmd(cmd);
    for _ in 0..3 {
        let r = s.get("/_/panic");
        assert_eq!(r.status, 500);
        assert!(r.text().contains("internal error"), "{}", r.text());
        assert_eq!(s.get("/").status, 200);
    }
    let log = s.log_with("request handler panicked: GET /_/panic");
    assert!(
        log.contains("request handler panicked: GET /_/panic"),
        "{log}"
    );
    // Without the variable there is no such route.
    let plain = iana_server(&dir);
    assert_eq!(plain.get("/_/panic").status, 302, "to the replay origin");
    assert_eq!(plain.rget("/_/panic").status, 404);
}

#[test]
fn replay_host_behind_a_reverse_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        &[&fixture("pywb/iana.warc.gz")],
        &dir.path().join("i.redb"),
        &[
            "--poll",
            "0",
            "--host",
            "ui.example",
            "--replay-host",
            "replay.example",
        ],
    );
    assert_eq!(s.addr, s.replay, "one listener");
    let ask = |host: &str, path: &str, extra: &str| {
        exchange(
            &s.addr,
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    let raw = format!("/archive/{IANA_TS}id_/http://www.iana.org/");
    // The UI name sends archived bytes to the replay name.
    let r = ask("ui.example", &raw, "");
    assert!(r.starts_with("HTTP/1.1 302"), "{r}");
    assert!(
        r.to_ascii_lowercase()
            .contains(&format!("location: http://replay.example{raw}")),
        "{r}"
    );
    // The framed page names the replay origin, https behind a TLS proxy.
    let r = ask(
        "ui.example",
        &format!("/archive/{IANA_TS}/http://www.iana.org/"),
        "X-Forwarded-Proto: https\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(
        r.contains(&format!(
            "src=\"https://replay.example/archive/{IANA_TS}mp_/http://www.iana.org/\""
        )),
        "{r}"
    );
    // The replay name serves the bytes, framed only by the UI name.
    let r = ask("replay.example", &raw, "");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let r = ask(
        "replay.example",
        &format!("/archive/{IANA_TS}mp_/http://www.iana.org/"),
        "",
    );
    assert!(
        r.contains("frame-ancestors 'self' http://ui.example"),
        "{r}"
    );
    // And no UI page: to the UI name.
    let r = ask("replay.example", "/archive/", "");
    assert!(r.starts_with("HTTP/1.1 302"), "{r}");
    assert!(
        r.to_ascii_lowercase()
            .contains("location: http://ui.example/archive/"),
        "{r}"
    );
    // Other names: 421.
    assert!(ask("other.example", "/archive/", "").starts_with("HTTP/1.1 421"));
}

/// A WARC of one resource record of `len` bytes, for `url`.
fn big_warc(len: usize, url: &str) -> Vec<u8> {
    let mut w = format!(
        "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: {url}\r\n\
         WARC-Date: 2024-01-02T03:04:05Z\r\n\
         WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {len}\r\n\r\n"
    )
    .into_bytes();
    w.extend((0..len).map(|i| (i % 251) as u8));
    w.extend_from_slice(b"\r\n\r\n");
    w
}

#[test]
fn shutdown_finishes_requests_under_way_and_takes_no_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.warc");
    let warc = big_warc(48 << 20, "http://big.example/");
    std::fs::write(&file, &warc).unwrap();
    let mut s = Server::start(&[&file], &dir.path().join("i.redb"), &["--poll", "0"]);
    // A download under way, read slowly.
    let mut c = TcpStream::connect(&s.replay).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        c,
        "GET /archive/file/0 HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        s.replay
    )
    .unwrap();
    let mut got = vec![0u8; 64 << 10];
    c.read_exact(&mut got).unwrap();
    let status = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // The listeners close soon after.
    let t = Instant::now();
    while TcpStream::connect(&s.addr).is_ok() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "still accepting after stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The download completes, whole.
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    got.extend_from_slice(&rest);
    let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&got[..end]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let body = &got[end..];
    // Length-delimited or chunked; either way every byte of the file.
    let whole = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let nl = body[i..].windows(2).position(|w| w == b"\r\n").unwrap() + i;
            let n = usize::from_str_radix(std::str::from_utf8(&body[i..nl]).unwrap(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&body[nl + 2..nl + 2 + n]);
            i = nl + 2 + n + 2;
        }
        out
    } else {
        body.to_vec()
    };
    assert_eq!(whole.len(), warc.len());
    assert!(whole == warc);
    // And the process ends by itself, cleanly.
    let t = Instant::now();
    let code = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "serve did not stop");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(code.success(), "{code:?}: {}", s.log());
}

/// An HTTP server on loopback that counts the connections made to it (it
/// stands for the live web), for `secs` seconds.
fn live_server(secs: u64) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            match l.accept() {
                Ok((mut c, _)) => {
                    h.fetch_add(1, Ordering::SeqCst);
                    let _ = c.write_all(
                        b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\n\
                          Content-Length: 4\r\nConnection: close\r\n\r\nlive",
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    (addr, hits)
}

#[test]
fn chromium_keeps_archived_scripts_from_the_ui_and_the_live_web() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let (live, hits) = live_server(150);
    let dir = tempfile::tempdir().unwrap();
    // An archived page whose script tries to read the UI (the page's
    // referrer is the UI origin) and the live server, with a fetch taken
    // from a fresh frame, and to reach into the top page (`window['top']`:
    // replay shows a plain `window.top` as the page itself, js_location.rs,
    // and the real one is what is probed); then it adds an
    // image and a frame from the live server by markup (no client hook
    // sees those). It reports what happened to its own origin. The client
    // script may divert a fetch into the archive instead of letting CSP
    // block it: either way nothing may come from the UI or the live server.
    let html = format!(
        "<!doctype html><html><head><title>probe</title></head><body><p>probe</p><script>\n\
         var f = document.createElement('iframe'); document.body.appendChild(f);\n\
         var raw = f.contentWindow.fetch.bind(f.contentWindow);\n\
         var ui = document.referrer || 'http://127.0.0.1:1/';\n\
         function probe(u) {{ return raw(u).then(function (r) {{ return 'status' + r.status + ' ' + r.url; }}, function () {{ return 'blocked'; }}); }}\n\
         var top_ = 'blocked'; try {{ top_ = 'read' + window['top'].document.body.innerHTML.length; }} catch (e) {{}}\n\
         document.body.insertAdjacentHTML('beforeend', '<img src=\"http://{live}/img.png\"><iframe src=\"http://{live}/frame\"></iframe>');\n\
         Promise.all([probe(ui + 'archive/'), probe('http://{live}/live')]).then(function (v) {{\n\
           var e = encodeURIComponent;\n\
           setTimeout(function () {{ fetch('/_/report?ui=' + e(v[0]) + '&live=' + e(v[1]) + '&top=' + top_ + '&asked=' + e(ui)); }}, 500);\n\
         }});\n\
         </script></body></html>"
    );
    let http = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{html}",
        html.len()
    );
    let warc = format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://probe.example/\r\n\
         WARC-Date: 2024-01-02T03:04:05Z\r\n\
         WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000003>\r\n\
         Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        http.len()
    );
    let file = dir.path().join("probe.warc");
    std::fs::write(&file, warc).unwrap();
    let s = Server::start(&[&file], &dir.path().join("i.redb"), &["--poll", "0"]);
    let page = format!(
        "http://{}/archive/20240102030405/http://probe.example/",
        s.addr
    );
    let out = run_chromium(
        &exe,
        &dir.path().join("p"),
        &[
            "--virtual-time-budget=8000".into(),
            "--dump-dom".into(),
            page,
        ],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("warchest-frame"), "{dom}");
    // The report arrives (the page ran), and says both were blocked.
    let t = Instant::now();
    let report = loop {
        let log = s.log();
        if let Some(l) = log.lines().find(|l| l.contains("report?ui=")) {
            break l.to_string();
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no report from the page: {log}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let field = |name: &str| {
        let v = report
            .split(&format!("{name}="))
            .nth(1)
            .and_then(|r| r.split(['&', ' ']).next())
            .unwrap_or_else(|| panic!("no {name} in {report}"));
        v.replace("%3A", ":")
            .replace("%2F", "/")
            .replace("%20", " ")
    };
    let (ui, live_seen, top) = (field("ui"), field("live"), field("top"));
    // Blocked, or answered by the replay origin (diverted into the
    // archive): never by the UI or the live server.
    let replay_origin = format!("http://{}/", s.replay);
    for v in [&ui, &live_seen] {
        assert!(
            v == "blocked" || v.contains(&format!(" {replay_origin}")),
            "{v}: {report}"
        );
    }
    assert_eq!(top, "blocked", "{report}");
    // It did ask the UI origin (its address came from the referrer).
    assert_eq!(field("asked"), format!("http://{}/", s.addr), "{report}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the live server was reached"
    );
    // The UI origin was asked for nothing but the framed page.
    let log = s.log();
    let read = log.lines().find(|l| l.contains("access: GET /archive/ "));
    assert!(read.is_none(), "the UI was read: {read:?}");
    // The replay origin itself is fine to fetch (not a vacuous block).
    assert_eq!(
        get(
            &s.replay,
            "/archive/20240102030405id_/http://probe.example/",
            &[]
        )
        .status,
        200
    );
}
