//! `Server::answer`: a request answered in process gives what the same
//! request over a socket gives (status, content type, body), on both
//! origins, and a body past the limit is cut and said to be.

use warchest_serve::{ServeOptions, Server};

use crate::common;

/// The status, `Content-Type` and body of an HTTP/1.0 answer (no chunks).
fn parts(raw: &[u8]) -> (u16, Option<String>, Vec<u8>) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole head");
    let head = String::from_utf8_lossy(&raw[..end]);
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let ctype = head.lines().find_map(|l| {
        l.split_once(':')
            .filter(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.trim().to_string())
    });
    (status, ctype, raw[end + 4..].to_vec())
}

/// The raw answer to `GET target` (HTTP/1.0, closed after) on `addr`.
fn over_socket(addr: &str, method: &str, target: &str, host: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let req = format!("{method} {target} HTTP/1.0\r\nHost: {host}\r\n\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    out
}

/// pywb's IANA capture served on loopback ports, its index in `dir`.
fn bound(dir: &tempfile::TempDir) -> Server {
    let mut opts = ServeOptions::new(vec![common::fixture("pywb/iana.warc.gz")]);
    opts.listen = "127.0.0.1:0".into();
    opts.store = Some(dir.path().join("index.redb"));
    opts.poll = None;
    Server::bind(opts).unwrap()
}

#[test]
fn answers_in_process_as_over_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let server = bound(&dir);
    let ui = server.local_addr().unwrap().to_string();
    let replay = server.replay_addr().unwrap().unwrap().to_string();
    let cases: &[(bool, &str, &str, u16)] = &[
        (false, "GET", "/", 200),
        (false, "GET", "/archive/cdx?url=iana.org&output=json", 200),
        (
            false,
            "GET",
            "/archive/cdx?url=iana.org&filter=~status:30.",
            200,
        ),
        (
            false,
            "GET",
            "/archive/timemap/link/http://www.iana.org/",
            200,
        ),
        (false, "GET", "/nothing/here", 404),
        (false, "POST", "/", 405),
        (
            true,
            "GET",
            "/archive/20140126200624id_/http://www.iana.org/",
            200,
        ),
        (
            true,
            "GET",
            "/archive/20140126200624mp_/http://www.iana.org/",
            200,
        ),
        (
            true,
            "HEAD",
            "/archive/20140126200624id_/http://www.iana.org/",
            200,
        ),
        (
            true,
            "GET",
            "/archive/20140126200624id_/http://nowhere.example/",
            404,
        ),
    ];
    // Served on a thread of its own, asked over sockets, while `answer`
    // is asked on this one: `run` takes the server, so the in-process
    // answers come first.
    let mine: Vec<_> = cases
        .iter()
        .map(|&(to_replay, method, target, _)| {
            let host = if to_replay { &replay } else { &ui };
            server.answer(to_replay, method, target, &[("Host", host)], 1 << 24)
        })
        .collect();
    let stop = server.stop_handle();
    let run = std::thread::spawn(move || server.run());
    for (&(to_replay, method, target, want), a) in cases.iter().zip(&mine) {
        let addr = if to_replay { &replay } else { &ui };
        let (status, ctype, body) = parts(&over_socket(addr, method, target, addr));
        assert_eq!(a.status, want, "{method} {target}: in process");
        assert_eq!(status, want, "{method} {target}: over the socket");
        assert_eq!(
            a.header("content-type").map(str::to_string),
            ctype,
            "{target}"
        );
        assert!(!a.cut, "{target}");
        // Pages naming the time they were made aside, the bytes are the
        // same.
        if !target.starts_with("/archive/timemap") && target != "/" {
            assert_eq!(a.body, body, "{method} {target}: the body");
        }
    }
    stop.stop();
    run.join().unwrap().unwrap();
}

/// What a client cannot send (a target with a fragment or a space, a
/// body too large) is refused in process as hyper refuses it over a
/// socket; a HEAD so refused has no body, as no HEAD answer has (the
/// fuzz target found one that had).
#[test]
fn a_head_refused_in_process_has_no_body() {
    let dir = tempfile::tempdir().unwrap();
    let server = bound(&dir);
    let big = [("Content-Length", "999999999999")];
    for (target, headers, want) in [
        ("/archive/2014id_/http://b.example/#t", &[][..], 400),
        ("/a b", &[][..], 400),
        ("/", &big[..], 413),
    ] {
        let get = server.answer(false, "GET", target, headers, 1 << 20);
        assert_eq!(get.status, want, "{target}");
        assert!(!get.body.is_empty(), "{target}");
        let head = server.answer(false, "HEAD", target, headers, 1 << 20);
        assert_eq!(head.status, want, "{target}");
        assert!(head.body.is_empty(), "{target}: {:?}", head.body);
    }
}

#[test]
fn a_body_past_the_limit_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let server = bound(&dir);
    let target = "/archive/20140126200624id_/http://www.iana.org/_css/2013.1/screen.css";
    let whole = server.answer(true, "GET", target, &[], 1 << 24);
    assert_eq!(whole.status, 200);
    assert!(!whole.cut);
    assert!(whole.body.len() > 1000, "{}", whole.body.len());
    let cut = server.answer(true, "GET", target, &[], 100);
    assert_eq!(cut.status, 200);
    assert!(cut.cut);
    assert_eq!(cut.body, whole.body[..100]);
    // A whole (not streamed) answer is kept to the limit too.
    let page = server.answer(false, "GET", "/", &[], 1 << 24);
    assert!(!page.cut && page.body.len() > 64, "{}", page.body.len());
    let short = server.answer(false, "GET", "/", &[], 64);
    assert!(short.cut);
    assert_eq!(short.body, page.body[..64]);
    // What a connection refuses is refused before any handler (a target
    // that is not a path or not HTTP's, a bad method, header name or
    // value, a body declared too large), and a foreign Host by the host
    // check, as over a socket.
    let status = |method: &str, target: &str, headers: &[(&str, &str)]| {
        server.answer(false, method, target, headers, 10).status
    };
    assert_eq!(status("GET", "http://x/", &[]), 400);
    assert_eq!(status("GET", "/a b", &[]), 400);
    assert_eq!(status("G T", "/", &[]), 400);
    assert_eq!(status("GET", "/", &[("a b", "1")]), 400);
    assert_eq!(status("GET", "/", &[("x", "a\nb")]), 400);
    assert_eq!(status("GET", "/", &[("Content-Length", "2000000")]), 413);
    assert_eq!(status("GET", "/", &[("X-Any", "fine")]), 200);
    let foreign = [("Host", "rebound.example")];
    assert_eq!(server.answer(false, "GET", "/", &foreign, 10).status, 421);
    assert_eq!(server.answer(true, "GET", target, &foreign, 10).status, 421);
}

/// The archived page's charset reaches the rewriter: on a windows-1252
/// page (its Content-Type says so, or only its `<meta>` does) a query's
/// `é` is linked as `%E9`, the URL the crawler archives and a browser
/// asks for; on a UTF-8 page as `%C3%A9`.
#[test]
fn rewritten_links_keep_the_pages_charset() {
    let dir = tempfile::tempdir().unwrap();
    let mut warc = Vec::new();
    for (path, ctype, body) in [
        (
            "latin",
            "text/html; charset=windows-1252",
            &b"<a href=\"/s?q=caf\xe9\">x</a>"[..],
        ),
        (
            "meta",
            "text/html",
            b"<meta charset=windows-1252><a href=\"/s?q=caf&eacute;\">x</a>",
        ),
        (
            "utf8",
            "text/html; charset=utf-8",
            "<a href=\"/s?q=caf\u{e9}\">x</a>".as_bytes(),
        ),
    ] {
        let mut http = format!("HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n\r\n").into_bytes();
        http.extend_from_slice(body);
        warc.extend_from_slice(
            format!(
                "WARC/1.1\r\nWARC-Type: response\r\nWARC-Date: 2014-01-26T20:06:24Z\r\n\
                 WARC-Target-URI: http://a.example/{path}\r\n\
                 Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
                http.len()
            )
            .as_bytes(),
        );
        warc.extend_from_slice(&http);
        warc.extend_from_slice(b"\r\n\r\n");
    }
    let file = dir.path().join("pages.warc");
    std::fs::write(&file, &warc).unwrap();
    let mut opts = ServeOptions::new(vec![file]);
    opts.listen = "127.0.0.1:0".into();
    opts.store = Some(dir.path().join("index.redb"));
    opts.poll = None;
    let server = Server::bind(opts).unwrap();
    for (path, want) in [
        ("latin", "q=caf%E9"),
        ("meta", "q=caf%E9"),
        ("utf8", "q=caf%C3%A9"),
    ] {
        let target = format!("/archive/20140126200624mp_/http://a.example/{path}");
        let a = server.answer(true, "GET", &target, &[], 1 << 20);
        assert_eq!(a.status, 200, "{path}");
        let body = String::from_utf8_lossy(&a.body);
        assert!(
            body.contains(&format!("http://a.example/s?{want}\"")),
            "{path}: {body}"
        );
    }
}
