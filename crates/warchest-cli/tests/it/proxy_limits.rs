//! `warchest proxy` facing hostile clients (issue 18), as serve_limits.rs
//! does for `warchest serve`: slow connections, oversized and malformed
//! requests, a failing server, a panicking handler and a shutdown under
//! way. The servers are capture.rs's loopback test sites.

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use crate::capture::{
    HELLO, ProxyProc, files_in, pages, read_response, records, response, sigterm, start_site,
    validate,
};
use crate::common::{bin, exchange, no_address_dns, trickle_beside};

/// A GET of `url` through the proxy at `addr`: the head and the body
/// (`None` when cut short).
fn get(addr: SocketAddr, url: &str, host: &str) -> (String, Option<Vec<u8>>) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        c,
        "GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    read_response(&mut BufReader::new(c), false)
}

#[test]
fn proxy_slowloris_connections_do_not_hold_up_other_requests() {
    let site = start_site(None);
    let host = site.addr.to_string();
    let work = tempfile::tempdir().unwrap();
    // A 3 s timeout: the request head deadline is 3 s.
    let p = ProxyProc::start_cmd(
        &work.path().join("o"),
        &work.path().join("ca.pem"),
        &["--timeout", "3"],
        bin(),
        Stdio::null(),
    );
    // 200 connections, each trickling its request head a byte a second.
    let head = format!("GET http://{host}/ HTTP/1.1\r\nHost: {host}\r\nX-Slow: ");
    let mut slow: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(p.addr).unwrap())
        .collect();
    // Ten that send nothing, and one kept alive after a request, idle.
    let mut idle: Vec<TcpStream> = (0..10)
        .map(|_| TcpStream::connect(p.addr).unwrap())
        .collect();
    let mut kept = TcpStream::connect(p.addr).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(kept, "GET http://{host}/ HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
    let (h, body) = read_response(&mut BufReader::new(kept.try_clone().unwrap()), false);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    assert_eq!(body.as_deref(), Some(HELLO));
    idle.push(kept);
    // A normal request through the proxy answers at once meanwhile.
    let mut answered = 0;
    trickle_beside(&mut slow, head.as_bytes(), 6, 2, || {
        let (h, body) = get(p.addr, &format!("http://{host}/"), &host);
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        assert_eq!(body.as_deref(), Some(HELLO));
        answered += 1;
    });
    assert_eq!(answered, 12);
    // The slow heads were cut at the deadline (3 s), not served for as
    // long as bytes kept coming, and the idle connections closed: every
    // one of them is closed by now (6 s).
    for c in slow.iter_mut().step_by(20).chain(idle.iter_mut()) {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 512];
        let closed = match c.read(&mut b) {
            Ok(0) => true,
            Ok(_) => c.read(&mut b).map(|n| n == 0).unwrap_or(true),
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        };
        assert!(closed, "a trickling or idle client is still connected");
    }
    p.stop();
}

#[test]
fn proxy_refuses_oversized_heads_and_conflicting_lengths() {
    let site = start_site(None);
    let host = site.addr.to_string();
    let work = tempfile::tempdir().unwrap();
    let p = ProxyProc::start_cmd(
        &work.path().join("o"),
        &work.path().join("ca.pem"),
        &[],
        bin(),
        Stdio::null(),
    );
    // Two different Content-Length values (RFC 9112 section 6.3): 400,
    // and nothing after them taken for a second request.
    let r = exchange(
        p.addr,
        format!(
            "POST http://{host}/ HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1\r\n\
             Content-Length: 40\r\n\r\nGET http://{host}/smuggled HTTP/1.1\r\n\r\n"
        )
        .as_bytes(),
    );
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    assert_eq!(r.matches("HTTP/1.1 ").count(), 1, "{r}");
    // A head over 64 KiB in one field, or too many fields: 431.
    let r = exchange(
        p.addr,
        format!(
            "GET http://{host}/ HTTP/1.1\r\nHost: {host}\r\nX-Big: {}\r\n\r\n",
            "b".repeat(70_000)
        )
        .as_bytes(),
    );
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    let mut many = format!("GET http://{host}/ HTTP/1.1\r\nHost: {host}\r\n");
    for i in 0..150 {
        many.push_str(&format!("X-F{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let r = exchange(p.addr, many.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    // A request body over 256 MiB: 413, before any of it is read.
    let r = exchange(
        p.addr,
        format!(
            "POST http://{host}/ HTTP/1.1\r\nHost: {host}\r\nContent-Length: 300000000\r\n\r\n"
        )
        .as_bytes(),
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    // Not HTTP at all: 400.
    let r = exchange(p.addr, b"\x16\x03\x01 hello\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    // Still serving; none of those reached the server.
    let (h, body) = get(p.addr, &format!("http://{host}/"), &host);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    assert_eq!(body.as_deref(), Some(HELLO));
    assert_eq!(*site.hits.lock().unwrap(), ["/"]);
    p.stop();
}

#[test]
fn proxy_answers_failures_and_panics_and_goes_on() {
    let site = start_site(None);
    let host = site.addr.to_string();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("o");
    let log = work.path().join("log");
    // The panic path exists in debug builds only, and only with
    // WARCHEST_PROXY_TEST_PANIC set (crates/warchest-capture/src/proxy.rs).
    let mut cmd = bin();
    cmd.env("WARCHEST_PROXY_TEST_PANIC", "1");
    // The timeout bounds how long a stopped proxy waits for the exchanges
    // under way (and a body's silence): longer than every wait of this
    // test (60 s each), so the held `/gated` response below is never cut
    // by it, however long the machine takes to close the listener after
    // SIGTERM. No exchange here waits for it: the failures are at once.
    let p = ProxyProc::start_cmd(
        &out,
        &work.path().join("ca.pem"),
        &["--timeout", "150"],
        cmd,
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let ok = |p: &ProxyProc| {
        let (h, body) = get(p.addr, &format!("http://{host}/"), &host);
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        assert_eq!(body.as_deref(), Some(HELLO));
    };
    // A server that is not there: 502 naming it.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (h, body) = get(p.addr, &format!("http://{closed}/"), &closed.to_string());
    assert!(h.starts_with("HTTP/1.1 502"), "{h}");
    let text = String::from_utf8_lossy(body.as_deref().unwrap()).into_owned();
    assert!(text.contains(&closed.to_string()), "{text}");
    ok(&p);
    // A server that drops the connection inside the body: the client's
    // copy is cut too (it cannot take it for whole).
    let (h, body) = get(p.addr, &format!("http://{host}/drop"), &host);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    assert!(h.contains("Content-Length: 10000\r\n"), "{h}");
    assert_eq!(body, None, "a cut body passed on as whole");
    ok(&p);
    // A panicking exchange answers 500, and the proxy goes on.
    if cfg!(debug_assertions) {
        for _ in 0..3 {
            let (h, _) = get(p.addr, &format!("http://{host}/_warchest/panic"), &host);
            assert!(h.starts_with("HTTP/1.1 500"), "{h}");
            ok(&p);
        }
    }
    // SIGTERM while a response is under way: no new connection, the
    // response completes, the record is written, exit 0. The site holds
    // the body of `/gated` until the test has seen the listener closed, so
    // the listener closes while the response is under way by construction.
    let slow = {
        let (addr, host) = (p.addr, host.clone());
        std::thread::spawn(move || get(addr, &format!("http://{host}/gated"), &host))
    };
    let t0 = std::time::Instant::now();
    while !site.hits.lock().unwrap().iter().any(|h| h == "/gated") {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "/gated never reached the site"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut child = p.child;
    sigterm(&child);
    let t0 = std::time::Instant::now();
    while TcpStream::connect(p.addr).is_ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "new connections after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !slow.is_finished(),
        "the response ended before its body was let go"
    );
    site.gate.store(true, std::sync::atomic::Ordering::SeqCst);
    let (h, body) = slow.join().unwrap();
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    assert_eq!(body.as_deref(), Some(&pages()["/slow"][..]));
    let st = child.wait().unwrap();
    assert!(st.success(), "{st:?}");
    let log = std::fs::read_to_string(&log).unwrap();
    if cfg!(debug_assertions) {
        assert!(
            log.contains("proxy request handler panicked: GET http://"),
            "{log}"
        );
    }
    let files = files_in(&out);
    validate(&files);
    let recs = records(&files);
    let drop = response(&recs, &format!("http://{host}/drop"));
    assert_eq!(drop.get("WARC-Truncated"), Some("disconnect"));
    let slow = response(&recs, &format!("http://{host}/gated"));
    assert!(slow.block.ends_with(&pages()["/slow"]));
    // Only what reached a server is recorded: no record of the panic path
    // or of the closed port.
    assert!(!recs.iter().any(|r| r.uri.contains("/_warchest/")));
    assert!(!recs.iter().any(|r| r.uri.contains(&closed.to_string())));
}

#[test]
fn proxy_counts_and_names_the_exchanges_it_did_not_record() {
    let site = start_site(None);
    let host = site.addr.to_string();
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("log");
    // A server that takes the connection and closes it unanswered, once.
    let mute = TcpListener::bind("127.0.0.1:0").unwrap();
    let mute_addr = mute.local_addr().unwrap();
    let muted = std::thread::spawn(move || {
        let (mut c, _) = mute.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut b = [0u8; 4096];
        let _ = c.read(&mut b);
    });
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // Lookups fail without the network: a loopback DNS server that knows
    // no address.
    let dns_addr = no_address_dns();
    let mut cmd = bin();
    cmd.arg("-w");
    let p = ProxyProc::start_cmd(
        &work.path().join("o"),
        &work.path().join("ca.pem"),
        &["--deny-dest", "127.0.0.2/32", "--dns-server", &dns_addr],
        cmd,
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let status = |url: &str, host: &str| get(p.addr, url, host).0;
    assert!(status(&format!("http://{host}/"), &host).starts_with("HTTP/1.1 200"));
    let refused = format!("http://{closed}/gone");
    assert!(status(&refused, &closed.to_string()).starts_with("HTTP/1.1 502"));
    let denied = format!("http://127.0.0.2:{}/", site.addr.port());
    assert!(status(&denied, "127.0.0.2").starts_with("HTTP/1.1 403"));
    let looped = format!("http://{}/self", p.addr);
    assert!(status(&looped, &p.addr.to_string()).starts_with("HTTP/1.1 508"));
    assert!(status("http://nohost.test/x", "nohost.test").starts_with("HTTP/1.1 502"));
    let mute_url = format!("http://{mute_addr}/mute");
    assert!(status(&mute_url, &mute_addr.to_string()).starts_with("HTTP/1.1 502"));
    muted.join().unwrap();
    // A body over the limit, refused before it is read.
    let r = exchange(
        p.addr,
        format!(
            "POST http://{host}/big HTTP/1.1\r\nHost: {host}\r\nContent-Length: 300000000\r\n\r\n"
        )
        .as_bytes(),
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    // A client that leaves in the middle of its request head: named with
    // how much of it came.
    let half = format!("GET http://{host}/half HTTP/1.1\r\nHost: {host}\r\nX-A: ");
    let mut c = TcpStream::connect(p.addr).unwrap();
    c.write_all(half.as_bytes()).unwrap();
    c.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(c);
    // A client that leaves once its request is with the server, before
    // the answer comes (a tab closed on a slow image): the exchange goes
    // on and is recorded, no loss. (hyper ends such a connection with the
    // error of a request head cut, which was counted as one.)
    let left = format!("http://{host}/gated-head?left");
    let mut c = TcpStream::connect(p.addr).unwrap();
    write!(c, "GET {left} HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
    c.flush().unwrap();
    let t0 = std::time::Instant::now();
    while !site
        .hits
        .lock()
        .unwrap()
        .iter()
        .any(|h| h == "/gated-head?left")
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "never asked for");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(c);
    // One that leaves in the middle of its request body: lost, and named
    // by its URL; nothing of it goes to the server.
    let mut c = TcpStream::connect(p.addr).unwrap();
    write!(
        c,
        "POST http://{host}/cut HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\n0123456789"
    )
    .unwrap();
    c.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(c);
    std::thread::sleep(Duration::from_millis(300));
    site.gate.store(true, std::sync::atomic::Ordering::SeqCst);
    // A round trip after them, so that the proxy has seen them leave
    // before it is stopped.
    assert!(status(&format!("http://{host}/"), &host).starts_with("HTTP/1.1 200"));
    // The proxy's own clients were told: a service's run is not failed.
    p.stop();
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains(
            "8 exchanges not recorded (DNS 1, connect 1, denied 1, loop 1, no response 1, \
             client gone 1, request body 2)"
        ),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "not recorded (request body): POST http://{host}/cut: "
        )),
        "{log}"
    );
    assert!(!site.hits.lock().unwrap().iter().any(|h| h == "/cut"));
    let recs = records(&files_in(&work.path().join("o")));
    let kept = response(&recs, &left);
    assert!(kept.block.ends_with(&pages()["/slow"]), "{left} cut");
    assert_eq!(kept.get("WARC-Truncated"), None);
    let gone = log
        .lines()
        .find(|l| l.contains("not recorded (client gone): a request from 127.0.0.1:"))
        .unwrap_or_else(|| panic!("no client gone in {log}"));
    assert!(
        gone.ends_with(&format!(
            ": connection closed before message completed, {} bytes of it read",
            half.len()
        )),
        "{gone}"
    );
    for named in [
        "not recorded (DNS): GET http://nohost.test/x: DNS: nohost.test: no address".to_string(),
        format!("not recorded (connect): GET {refused}: "),
        format!("not recorded (denied): GET {denied}: "),
        format!("not recorded (loop): GET {looped}: "),
        format!("not recorded (no response): GET {mute_url}: "),
        format!("not recorded (request body): POST http://{host}/big: "),
        "not recorded (client gone): a request from 127.0.0.1:".to_string(),
    ] {
        assert!(log.contains(&named), "{named} not in {log}");
    }
    // The exchanges that were recorded are not counted.
    assert!(!log.contains(&format!("GET http://{host}/:")), "{log}");
}
