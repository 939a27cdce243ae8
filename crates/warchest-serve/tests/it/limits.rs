//! The server facing hostile clients (issue 18): malformed and oversized
//! requests, foreign hosts, HTTP/2 and keep-alive, and a stop that ends
//! `run`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::{Running, exchange, get};

#[test]
fn malformed_and_oversized_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = Running::iana(&dir);
    // Two different Content-Length values (RFC 9112 6.3): 400, and nothing
    // after them taken for a second request.
    let r = exchange(
        &s.addr,
        format!(
            "GET / HTTP/1.1\r\nHost: {}\r\nContent-Length: 1\r\nContent-Length: 30\r\n\r\n\
             GET /archive/cdx?url=x HTTP/1.1\r\n\r\n",
            s.addr
        )
        .as_bytes(),
    );
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    assert_eq!(r.matches("HTTP/1.1 ").count(), 1, "{r}");
    // A head over 32 KiB in one field, or too many fields: 431.
    let r = exchange(
        &s.replay,
        format!(
            "GET / HTTP/1.1\r\nHost: {}\r\nX-Big: {}\r\n\r\n",
            s.replay,
            "b".repeat(40_000)
        )
        .as_bytes(),
    );
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    let mut many = format!("GET / HTTP/1.1\r\nHost: {}\r\n", s.addr);
    for i in 0..150 {
        many.push_str(&format!("X-F{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let r = exchange(&s.addr, many.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    // A body over 1 MiB: 413.
    let r = exchange(
        &s.addr,
        format!(
            "GET / HTTP/1.1\r\nHost: {}\r\nContent-Length: 5000000\r\n\r\n",
            s.addr
        )
        .as_bytes(),
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    // Still serving.
    assert!(get(&s.addr, "/").starts_with("HTTP/1.1 200"));
}

#[test]
fn foreign_hosts_are_refused_on_both_origins() {
    let dir = tempfile::tempdir().unwrap();
    let s = Running::iana(&dir);
    for addr in [&s.addr, &s.replay] {
        let r = exchange(
            addr,
            b"GET /archive/20140126200624id_/http://www.iana.org/ HTTP/1.1\r\n\
              Host: rebound.example\r\nConnection: close\r\n\r\n",
        );
        assert!(r.starts_with("HTTP/1.1 421"), "{addr}: {r}");
        assert!(!r.contains("rebound"), "{r}");
    }
}

#[test]
fn http2_prior_knowledge_and_keep_alive() {
    let dir = tempfile::tempdir().unwrap();
    let s = Running::iana(&dir);
    // Two requests on one connection.
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    for _ in 0..2 {
        write!(c, "HEAD / HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr).unwrap();
        let mut buf = [0u8; 4096];
        let n = c.read(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(!text.to_ascii_lowercase().contains("connection: close"));
    }
    // h2c with prior knowledge: the server answers the preface with its
    // SETTINGS frame (type 4).
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .unwrap();
    let mut frame = [0u8; 9];
    c.read_exact(&mut frame).unwrap();
    assert_eq!(frame[3], 4, "a SETTINGS frame: {frame:?}");
}

#[test]
fn the_stop_handle_ends_run_and_the_listeners() {
    let dir = tempfile::tempdir().unwrap();
    let s = Running::iana(&dir);
    let (addr, replay) = (s.addr.clone(), s.replay.clone());
    let raw = get(&replay, "/archive/20140126200624id_/http://www.iana.org/");
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    s.stop().expect("run returns Ok once stopped");
    for a in [&addr, &replay] {
        assert!(TcpStream::connect(a).is_err(), "{a} still accepts");
    }
}

/// A stop asked for as soon as the server runs (before it listens for
/// stops) is not lost: `run` returns, within the grace period.
#[test]
fn a_stop_right_after_start_is_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let s = Running::iana(&dir);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(s.stop().is_ok()));
    let stopped = rx.recv_timeout(warchest_serve::GRACE + std::time::Duration::from_secs(30));
    assert_eq!(stopped, Ok(true), "run did not return once stopped");
}
