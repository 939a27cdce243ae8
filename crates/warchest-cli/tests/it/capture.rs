//! `warchest capture` and `warchest proxy` against servers started here on
//! loopback: plain and TLS (self-signed), chunked, gzip-coded, redirecting,
//! slow, dropping the connection, a DNS responder and pyftpdlib. Nothing
//! reaches beyond 127.0.0.1.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use common::{bin, extract_payload, first_line, noise, python_has, run};
use warchest::archive::Reader;
use warchest::check::check_record;
use warchest::digest::{Algorithm, Digest, Hasher};
use warchest::warc::RecordType;

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

pub(crate) const HELLO: &[u8] = b"<html><body>hello, archive</body></html>\n";

/// What the test site serves, by path.
pub(crate) fn pages() -> HashMap<&'static str, Vec<u8>> {
    let mut m = HashMap::new();
    m.insert("/", HELLO.to_vec());
    m.insert("/copy", HELLO.to_vec());
    m.insert("/big", noise(300_000, 7));
    m.insert("/chunked", noise(50_000, 11));
    m.insert("/gzip", b"compressible text ".repeat(500));
    m.insert("/slow", noise(5_000, 3));
    m.insert("/drop", noise(10_000, 5));
    m
}

/// The loopback test server: one thread per connection, one request per
/// connection. Counts the requests per path.
pub(crate) struct Site {
    pub(crate) addr: SocketAddr,
    pub(crate) hits: Arc<Mutex<Vec<String>>>,
    /// Closed (false) until a test opens it: `/gated` sends its head, then
    /// holds `/slow`'s body until then (60 s at most); `/gated-head` holds
    /// its head too.
    pub(crate) gate: Arc<std::sync::atomic::AtomicBool>,
}

fn serve_one(
    mut s: impl Read + Write,
    hits: &Mutex<Vec<String>>,
    gate: &std::sync::atomic::AtomicBool,
) {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    // Read the body (a POST's), so that closing does not reset.
    let body_len: usize = text
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = vec![0u8; body_len];
    if s.read_exact(&mut body).is_err() {
        return;
    }
    let path = text.split(' ').nth(1).unwrap_or("/").to_string();
    hits.lock().unwrap().push(path.clone());
    let site = pages();
    let lower = text.to_ascii_lowercase();
    let w = |s: &mut dyn Write, b: &[u8]| {
        let _ = s.write_all(b);
        let _ = s.flush();
    };
    match path.split('?').next().unwrap_or("/") {
        "/robots.txt" => {
            let body = "User-agent: *\nDisallow: /private\n";
            w(&mut s, format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
        }
        "/redirect" => w(&mut s, b"HTTP/1.1 302 Found\r\nLocation: /hop\r\nContent-Length: 0\r\n\r\n"),
        "/hop" => w(&mut s, b"HTTP/1.1 301 Moved\r\nLocation: http://127.0.0.1:1/never\r\nContent-Length: 3\r\n\r\nbye"),
        "/" | "/copy" => {
            if lower.contains("if-none-match: \"v1\"") {
                w(&mut s, b"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n");
                return;
            }
            let body = &site["/"];
            let mut out = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"v1\"\r\nLast-Modified: Sat, 01 Jan 2022 00:00:00 GMT\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            out.extend_from_slice(body);
            w(&mut s, &out);
        }
        // As a server must (RFC 9112 section 7.1): chunked to HTTP/1.1
        // clients only; to an HTTP/1.0 one the body runs to the close.
        "/chunked" if text.lines().next().is_some_and(|l| l.trim_end().ends_with("HTTP/1.0")) => {
            let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n".to_vec();
            out.extend_from_slice(&site["/chunked"]);
            w(&mut s, &out);
        }
        "/chunked" => {
            let body = &site["/chunked"];
            w(&mut s, b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
            for c in body.chunks(7_000) {
                let mut out = format!("{:x}\r\n", c.len()).into_bytes();
                out.extend_from_slice(c);
                out.extend_from_slice(b"\r\n");
                w(&mut s, &out);
            }
            w(&mut s, b"0\r\n\r\n");
        }
        "/gzip" => {
            let body = gzip(&site["/gzip"]);
            let mut out = format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            out.extend_from_slice(&body);
            w(&mut s, &out);
        }
        "/big" => {
            let body = &site["/big"];
            let mut out = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            out.extend_from_slice(body);
            w(&mut s, &out);
        }
        "/slow" => {
            let body = &site["/slow"];
            w(&mut s, format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
            for c in body.chunks(100) {
                std::thread::sleep(Duration::from_millis(100));
                if s.write_all(c).and_then(|_| s.flush()).is_err() {
                    return;
                }
            }
        }
        // The head sent, the body held until the gate opens; or (`/gated-head`)
        // nothing sent until then.
        p @ ("/gated" | "/gated-head") => {
            let body = &site["/slow"];
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            if p == "/gated" {
                w(&mut s, head.as_bytes());
            }
            let t0 = std::time::Instant::now();
            while !gate.load(std::sync::atomic::Ordering::SeqCst) {
                if t0.elapsed() > Duration::from_secs(60) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if p == "/gated-head" {
                w(&mut s, head.as_bytes());
            }
            w(&mut s, body);
        }
        "/drop" => {
            let body = &site["/drop"];
            let mut out = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            out.extend_from_slice(&body[..1000]);
            w(&mut s, &out);
        }
        _ => w(&mut s, b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"),
    }
}

pub(crate) fn start_site(tls: Option<Arc<rustls::ServerConfig>>) -> Site {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let hits = Arc::new(Mutex::new(Vec::new()));
    let h = hits.clone();
    let gate = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let g = gate.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let h = h.clone();
            let g = g.clone();
            let tls = tls.clone();
            std::thread::spawn(move || match tls {
                None => serve_one(s, &h, &g),
                Some(cfg) => {
                    let conn = rustls::ServerConnection::new(cfg).unwrap();
                    let mut st = rustls::StreamOwned::new(conn, s);
                    serve_one(&mut st, &h, &g);
                    st.conn.send_close_notify();
                    let _ = st.flush();
                }
            });
        }
    });
    Site { addr, hits, gate }
}

pub(crate) fn tls_config(names: &[&str]) -> (Arc<rustls::ServerConfig>, String) {
    let (cert, key, pem) = warchest_capture::tls::self_signed(names).unwrap();
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.into()],
        rustls::pki_types::PrivateKeyDer::try_from(key).unwrap(),
    )
    .unwrap();
    (Arc::new(cfg), pem)
}

/// A DNS responder answering 127.0.0.1 (TTL 123) for every name.
fn start_dns() -> (SocketAddr, Arc<AtomicUsize>) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            c.fetch_add(1, Ordering::SeqCst);
            if let Some(a) = warchest_capture::dns::encode_answer(
                &buf[..n],
                &["127.0.0.1".parse().unwrap()],
                123,
            ) {
                let _ = sock.send_to(&a, from);
            }
        }
    });
    (addr, count)
}

/// The WARC files in `dir`, sorted.
pub(crate) fn files_in(dir: &Path) -> Vec<PathBuf> {
    common::files_in(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".warc"))
        .collect()
}

pub(crate) struct Rec {
    pub(crate) kind: RecordType,
    pub(crate) uri: String,
    pub(crate) fields: Vec<(String, String)>,
    pub(crate) block: Vec<u8>,
    file: PathBuf,
    offset: u64,
}

impl Rec {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn id(&self) -> &str {
        self.get("WARC-Record-ID").unwrap()
    }
}

/// Every record of `files`; each must pass `check` (block and payload
/// digests) with no lenient-reading warning.
pub(crate) fn records(files: &[PathBuf]) -> Vec<Rec> {
    let mut out = Vec::new();
    for f in files {
        assert!(!f.to_string_lossy().ends_with(".open"), "{}", f.display());
        let mut r = Reader::open(f).unwrap();
        while let Some(mut rec) = r.next_record().unwrap() {
            let c = check_record(&mut rec, &Default::default()).unwrap();
            assert!(c.is_ok(), "{}: {c:?}", f.display());
        }
        assert!(r.take_warnings().is_empty(), "{}", f.display());
        let mut r = Reader::open(f).unwrap();
        while let Some(mut rec) = r.next_record().unwrap() {
            let h = rec.header().clone();
            let fields = h
                .fields()
                .iter()
                .map(|x| {
                    (
                        x.name_str().into_owned(),
                        String::from_utf8_lossy(&x.value()).trim().to_string(),
                    )
                })
                .collect();
            out.push(Rec {
                kind: h.record_type(),
                uri: h.target_uri().map(|s| s.into_owned()).unwrap_or_default(),
                fields,
                offset: rec.location().offset,
                block: rec.read_block().unwrap(),
                file: f.clone(),
            });
        }
    }
    out
}

pub(crate) fn validate(files: &[PathBuf]) {
    let (code, out, err) = run(bin().arg("validate").args(files));
    let text = String::from_utf8_lossy(&out).into_owned();
    assert_eq!(code, 0, "{text}{err}");
    // Not even a "should" missed.
    assert!(
        !text.contains("WARN") && !text.contains("warning:"),
        "{text}"
    );
    for line in text.lines().filter(|l| l.contains(" records")) {
        assert!(line.contains(" 0 warnings"), "{text}");
    }
    if python_has("warcio") {
        // warcio digests the payload of a chunked response still chunked,
        // where WARC 1.1 section 6.3.2 removes the transfer coding: its
        // payload-digest complaints about chunked responses are expected,
        // any other problem is not.
        let script = "import sys\nfrom warcio.archiveiterator import ArchiveIterator\nn=0\nfor r in ArchiveIterator(open(sys.argv[1],'rb'), check_digests='log'):\n    r.content_stream().read(); n+=1\n    te = r.http_headers.get_header('Transfer-Encoding') if r.http_headers else None\n    for p in r.digest_checker.problems:\n        if not (te and 'chunked' in te.lower() and p.startswith('payload digest failed')):\n            print('PROBLEM', r.rec_headers.get_header('WARC-Target-URI'), p)\nprint(n)";
        for f in files {
            let out = Command::new("python3")
                .args(["-c", script])
                .arg(f)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success() && !text.contains("PROBLEM"),
                "warcio on {}: {text}{}",
                f.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            let n: usize = text.trim().parse().unwrap();
            assert_eq!(
                n,
                Reader::open(f)
                    .map(|mut r| {
                        let mut k = 0;
                        while r.next_record().unwrap().is_some() {
                            k += 1;
                        }
                        k
                    })
                    .unwrap(),
                "{}",
                f.display()
            );
        }
    }
}

fn sha1(b: &[u8]) -> String {
    Digest::new(
        Algorithm::Sha1,
        Hasher::digest(Algorithm::Sha1, b).as_bytes(),
    )
    .to_string()
}

pub(crate) fn response<'a>(recs: &'a [Rec], uri: &str) -> &'a Rec {
    recs.iter()
        .find(|r| r.uri == uri && matches!(r.kind, RecordType::Response | RecordType::Revisit))
        .unwrap_or_else(|| panic!("no response for {uri}"))
}

#[test]
fn captures_http_with_digests_redirects_robots_and_limits() {
    let site = start_site(None);
    let base = format!("http://127.0.0.1:{}", site.addr.port());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let urls = [
        "/",
        "/chunked",
        "/gzip",
        "/redirect",
        "/private",
        "/big",
        "/slow",
        "/drop",
    ]
    .map(|p| format!("{base}{p}"));
    let (code, _, err) = run(bin().arg("capture").args(&urls).arg("-o").arg(&out).args([
        "--max-size",
        "100000",
        "--max-time",
        "1",
        "--timeout",
        "5",
        "-j",
        "3",
        "--warc-size",
        "120KB",
    ]));
    // /hop's redirect to port 1 fails: exit 1, the rest recorded.
    assert_eq!(code, 1, "{err}");
    let files = files_in(&out);
    // Rotated at --warc-size, each file opening with its warcinfo.
    assert!(
        files.len() >= 2,
        "{files:?} {:?}",
        files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .collect::<Vec<_>>()
    );
    for f in &files {
        assert!(
            std::fs::metadata(f).unwrap().len() <= 150_000,
            "{}",
            f.display()
        );
        assert_eq!(
            records(std::slice::from_ref(f))[0].kind,
            RecordType::Warcinfo
        );
    }
    validate(&files);
    let recs = records(&files);
    // The summary counts every record written, the warcinfo records too.
    let said: usize = err
        .lines()
        .find_map(|l| {
            l.split("; ")
                .nth(1)?
                .split(" records (")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no record count: {err}"));
    assert_eq!(said, recs.len(), "{err}");
    assert!(
        err.contains(&format!(" records ({} warcinfo, ", files.len())),
        "{err}"
    );
    assert_eq!(recs[0].kind, RecordType::Warcinfo);
    let info = String::from_utf8_lossy(&recs[0].block).into_owned();
    assert!(info.contains("http-header-user-agent: warchest/"), "{info}");
    let site_bodies = pages();

    // Payload digests are those of the served entities (chunking removed,
    // content coding kept); IP address and the three records tied together.
    for (p, served) in [
        ("/", site_bodies["/"].clone()),
        ("/chunked", site_bodies["/chunked"].clone()),
        ("/gzip", gzip(&site_bodies["/gzip"])),
    ] {
        let r = response(&recs, &format!("{base}{p}"));
        assert_eq!(r.kind, RecordType::Response);
        assert_eq!(r.get("WARC-Payload-Digest").unwrap(), sha1(&served), "{p}");
        assert_eq!(r.get("WARC-IP-Address"), Some("127.0.0.1"));
        assert!(r.get("WARC-Truncated").is_none(), "{p}");
        let req = recs
            .iter()
            .find(|x| x.kind == RecordType::Request && x.get("WARC-Concurrent-To") == Some(r.id()))
            .unwrap();
        let req_text = String::from_utf8_lossy(&req.block).into_owned();
        assert!(
            req_text.starts_with(&format!("GET {p} HTTP/1.0\r\n")),
            "{req_text}"
        );
        assert!(req_text.contains("User-Agent: warchest/"));
        let meta = recs
            .iter()
            .find(|x| x.kind == RecordType::Metadata && x.get("WARC-Concurrent-To") == Some(r.id()))
            .unwrap();
        assert!(String::from_utf8_lossy(&meta.block).contains("fetchTimeMs: "));
    }
    // Asked in HTTP/1.0, the server that chunks for HTTP/1.1 clients sends
    // the body as it is: stored as it came, no transfer coding.
    let r = response(&recs, &format!("{base}/chunked"));
    let head = String::from_utf8_lossy(&r.block[..200]).into_owned();
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding"),
        "{head}"
    );
    // Redirects: each hop recorded, its metadata naming where it came from.
    let hop = response(&recs, &format!("{base}/hop"));
    let meta = recs
        .iter()
        .find(|x| x.kind == RecordType::Metadata && x.get("WARC-Concurrent-To") == Some(hop.id()))
        .unwrap();
    let m = String::from_utf8_lossy(&meta.block).into_owned();
    assert!(
        m.contains(&format!("via: {base}/redirect\r\n")) && m.contains("hopsFromSeed: R\r\n"),
        "{m}"
    );
    // robots.txt fetched once, recorded, and obeyed.
    let hits = site.hits.lock().unwrap().clone();
    assert_eq!(
        hits.iter().filter(|p| *p == "/robots.txt").count(),
        1,
        "{hits:?}"
    );
    assert!(!hits.contains(&"/private".to_string()));
    response(&recs, &format!("{base}/robots.txt"));
    assert!(
        err.contains(&format!("robots-disallowed {base}/private")),
        "{err}"
    );
    // Limits: length, time, disconnect.
    let t = |p: &str| {
        response(&recs, &format!("{base}{p}"))
            .get("WARC-Truncated")
            .map(str::to_string)
    };
    assert_eq!(t("/big").as_deref(), Some("length"));
    assert_eq!(t("/slow").as_deref(), Some("time"));
    assert_eq!(t("/drop").as_deref(), Some("disconnect"));
    let big = response(&recs, &format!("{base}/big"));
    let head_len = big.block.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(big.block.len() - head_len, 100_000);
    assert_eq!(&big.block[head_len..], &site_bodies["/big"][..100_000]);
    let drop = response(&recs, &format!("{base}/drop"));
    assert!(drop.block.ends_with(&site_bodies["/drop"][..1000]));
    let _ = (drop.file.clone(), drop.offset);
}

#[test]
fn dns_lookups_are_recorded_once_per_host() {
    let site = start_site(None);
    let (dns, queries) = start_dns();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let port = site.addr.port();
    let t0 = std::time::Instant::now();
    let (code, stdout, err) = run(bin()
        .arg("capture")
        .arg(format!("http://www.example.test:{port}/"))
        .arg(format!("http://www.example.test:{port}/copy"))
        .arg("-o")
        .arg(&out)
        .args([
            "--json",
            "--ignore-robots",
            "-j",
            "2",
            "--delay",
            "0.5",
            "--dns-server",
        ])
        .arg(dns.to_string()));
    assert_eq!(code, 0, "{err}");
    // --json: one line per fetch.
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e["status"] == 200 && e["outcome"] == "response")
    );
    // Two workers, one host: the politeness delay keeps them apart.
    assert!(
        t0.elapsed() >= Duration::from_millis(500),
        "{:?}",
        t0.elapsed()
    );
    assert!(queries.load(Ordering::SeqCst) >= 1);
    let files = files_in(&out);
    validate(&files);
    let recs = records(&files);
    let dns_recs: Vec<&Rec> = recs.iter().filter(|r| r.uri.starts_with("dns:")).collect();
    assert_eq!(dns_recs.len(), 1);
    let d = dns_recs[0];
    assert_eq!(d.uri, "dns:www.example.test");
    assert_eq!(d.kind, RecordType::Resource);
    assert_eq!(d.get("Content-Type"), Some("text/dns"));
    assert_eq!(d.get("WARC-IP-Address"), Some("127.0.0.1"));
    let text = String::from_utf8_lossy(&d.block).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0].len(), 14, "{text}");
    assert_eq!(lines[1], "www.example.test.\t123\tIN\tA\t127.0.0.1");
    response(&recs, &format!("http://www.example.test:{port}/copy"));
}

#[test]
fn https_with_a_self_signed_certificate() {
    let (cfg, pem) = tls_config(&["localhost", "127.0.0.1"]);
    let site = start_site(Some(cfg));
    let work = tempfile::tempdir().unwrap();
    let url = format!("https://localhost:{}/chunked", site.addr.port());
    let resolve = ["--resolve", "localhost=127.0.0.1", "--ignore-robots"];
    // Refused without --insecure...
    let (code, _, err) = run(bin()
        .arg("capture")
        .arg(&url)
        .arg("-o")
        .arg(work.path().join("a"))
        .args(resolve));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("TLS"), "{err}");
    // ...accepted with it, or with the certificate trusted.
    let ca = work.path().join("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    for (dir, flags) in [
        ("b", vec!["--insecure".to_string()]),
        ("c", vec!["--ca-cert".to_string(), ca.display().to_string()]),
    ] {
        let out = work.path().join(dir);
        let (code, _, err) = run(bin()
            .arg("capture")
            .arg(&url)
            .arg("-o")
            .arg(&out)
            .args(resolve)
            .args(&flags));
        assert_eq!(code, 0, "{err}");
        let files = files_in(&out);
        validate(&files);
        let recs = records(&files);
        let r = response(&recs, &url);
        assert_eq!(
            r.get("WARC-Payload-Digest").unwrap(),
            sha1(&pages()["/chunked"])
        );
        let protos: Vec<&str> = r
            .fields
            .iter()
            .filter(|(k, _)| k == "WARC-Protocol")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(protos, ["http/1.0", "tls/1.3"]);
        assert!(r.get("WARC-Cipher-Suite").unwrap().starts_with("TLS_"));
    }
}

#[test]
fn dedupe_and_conditional_revisits_resolve() {
    let site = start_site(None);
    let base = format!("http://127.0.0.1:{}", site.addr.port());
    let work = tempfile::tempdir().unwrap();
    let index = work.path().join("digests.redb");
    let cap = |dir: &str, urls: &[&str], extra: &[&str]| {
        let out = work.path().join(dir);
        let (code, _, err) = run(bin()
            .arg("capture")
            .args(urls.iter().map(|u| format!("{base}{u}")))
            .arg("-o")
            .arg(&out)
            .arg("--dedupe-index")
            .arg(&index)
            .arg("--ignore-robots")
            .args(extra));
        assert_eq!(code, 0, "{err}");
        files_in(&out)
    };
    // /copy serves the same payload as /: an identical-payload-digest
    // revisit. The URLs come from a file this time.
    let list = work.path().join("urls.txt");
    std::fs::write(
        &list,
        format!("# seeds\n{base}/\n\n{base}/copy  # same payload\n"),
    )
    .unwrap();
    let list_arg = list.display().to_string();
    let first = cap("one", &[], &["-i", &list_arg]);
    // Second run: / again, conditionally: the server says 304.
    let second = cap("two", &["/", "/big"], &["--conditional"]);
    let mut all = first.clone();
    all.extend(second.clone());
    validate(&all);
    let recs = records(&all);
    let orig = recs
        .iter()
        .find(|r| r.uri == format!("{base}/") && r.kind == RecordType::Response)
        .unwrap();
    let copy = response(&recs, &format!("{base}/copy"));
    assert_eq!(copy.kind, RecordType::Revisit);
    assert!(
        copy.get("WARC-Profile")
            .unwrap()
            .ends_with("/revisit/identical-payload-digest")
    );
    assert_eq!(copy.get("WARC-Refers-To"), Some(orig.id()));
    let not_mod = recs
        .iter()
        .find(|r| {
            r.file.starts_with(work.path().join("two"))
                && r.uri == format!("{base}/")
                && r.kind == RecordType::Revisit
        })
        .expect("a server-not-modified revisit");
    assert!(
        not_mod
            .get("WARC-Profile")
            .unwrap()
            .ends_with("/revisit/server-not-modified")
    );
    assert_eq!(not_mod.get("WARC-Refers-To"), Some(orig.id()));
    assert!(String::from_utf8_lossy(&not_mod.block).starts_with("HTTP/1.1 304"));
    let hits = site.hits.lock().unwrap().clone();
    assert!(hits.iter().filter(|p| *p == "/").count() == 2);
    // Both revisits resolve to the original's payload.
    let mut how = vec![std::ffi::OsStr::new("--resolve-revisit")];
    how.extend(all.iter().map(|p| p.as_os_str()));
    for rv in [copy, not_mod] {
        let (code, payload, err) = extract_payload(&rv.file, rv.offset, &how);
        assert_eq!(code, 0, "{err}");
        assert_eq!(payload, HELLO);
    }
}

#[test]
fn ftp_file_as_resource_with_control_conversation() {
    if !python_has("pyftpdlib") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("ftproot");
    std::fs::create_dir(&root).unwrap();
    let data = noise(70_000, 9);
    std::fs::write(root.join("file.bin"), &data).unwrap();
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import sys, logging\nlogging.disable(logging.CRITICAL)\nfrom pyftpdlib.authorizers import DummyAuthorizer\nfrom pyftpdlib.handlers import FTPHandler\nfrom pyftpdlib.servers import FTPServer\na=DummyAuthorizer(); a.add_anonymous(sys.argv[1])\nFTPHandler.authorizer=a\ns=FTPServer(('127.0.0.1',0),FTPHandler)\nprint(s.socket.getsockname()[1], flush=True)\ns.serve_forever()",
        ])
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let port: u16 = first_line(&mut child).parse().unwrap();
    let out = work.path().join("out");
    let url = format!("ftp://127.0.0.1:{port}/file.bin");
    let (code, _, err) = run(bin().arg("capture").arg(&url).arg("-o").arg(&out));
    let (code2, _, err2) = run(bin()
        .arg("capture")
        .arg(&url)
        .arg("-o")
        .arg(work.path().join("cut"))
        .args(["--max-size", "1000"]));
    let dir_url = format!("ftp://127.0.0.1:{port}/");
    let (code3, _, err3) = run(bin()
        .arg("capture")
        .arg(&dir_url)
        .arg("-o")
        .arg(work.path().join("dir")));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code, 0, "{err}");
    assert_eq!(code2, 0, "{err2}");
    assert_eq!(code3, 0, "{err3}");
    let dir = records(&files_in(&work.path().join("dir")));
    let listing = dir.iter().find(|r| r.uri == dir_url).unwrap();
    assert_eq!(listing.get("Content-Type"), Some("text/plain"));
    assert!(String::from_utf8_lossy(&listing.block).contains("file.bin"));
    let files = files_in(&out);
    validate(&files);
    let recs = records(&files);
    let r = recs
        .iter()
        .find(|r| r.uri == url && r.kind == RecordType::Resource)
        .unwrap();
    assert_eq!(r.block, data);
    assert_eq!(r.get("WARC-Payload-Digest").unwrap(), sha1(&data));
    let m = recs
        .iter()
        .find(|x| x.kind == RecordType::Metadata && x.get("WARC-Concurrent-To") == Some(r.id()))
        .unwrap();
    let conv = String::from_utf8_lossy(&m.block).into_owned();
    assert!(conv.starts_with("220"), "{conv}");
    assert!(
        conv.contains("USER anonymous\r\n") && conv.contains("RETR /file.bin\r\n"),
        "{conv}"
    );
    assert!(conv.contains("\r\n226"), "{conv}");
    let cut = records(&files_in(&work.path().join("cut")));
    let r = cut.iter().find(|r| r.uri == url).unwrap();
    assert_eq!(r.block, &data[..1000]);
    assert_eq!(r.get("WARC-Truncated"), Some("length"));
}

/// Sends `GET target` to `addr` (a proxy takes an absolute-form target, a
/// server a path) and returns the raw response bytes.
pub(crate) fn get_raw(addr: SocketAddr, target: &str, host: &str) -> Vec<u8> {
    get_raw_version(addr, target, host, "1.1")
}

/// [`get_raw`] in HTTP/`version`.
fn get_raw_version(addr: SocketAddr, target: &str, host: &str, version: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {target} HTTP/{version}\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out
}

/// One HTTP/1.x response read from `r`: its head (text) and its body,
/// framed by Content-Length, chunked, or the end of the connection; the
/// body is `None` when it was cut short.
pub(crate) fn read_response(r: &mut impl BufRead, head_request: bool) -> (String, Option<Vec<u8>>) {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return (head, None);
        }
        head.push_str(&line);
        if line == "\r\n" && !head.starts_with("HTTP/1.1 1") {
            break;
        }
        if line == "\r\n" {
            // An interim response: the final one follows.
            head.clear();
        }
    }
    let lower = head.to_ascii_lowercase();
    let field = |name: &str| {
        lower
            .lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    let status = head.split(' ').nth(1).unwrap_or("");
    if head_request || status == "204" || status == "304" {
        return (head, Some(Vec::new()));
    }
    let mut body = Vec::new();
    if field("transfer-encoding:").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            if r.read_line(&mut size).unwrap_or(0) == 0 {
                return (head, None);
            }
            let Ok(n) = usize::from_str_radix(size.trim().split(';').next().unwrap(), 16) else {
                return (head, None);
            };
            let mut chunk = vec![0u8; n + 2];
            if r.read_exact(&mut chunk).is_err() {
                return (head, None);
            }
            if n == 0 {
                return (head, Some(body));
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    if let Some(n) = field("content-length:") {
        let n: usize = n.parse().unwrap();
        body.resize(n, 0);
        let ok = r.read_exact(&mut body).is_ok();
        return (head, ok.then_some(body));
    }
    let _ = r.read_to_end(&mut body);
    (head, Some(body))
}

/// The body of `wire` (a response as a server sent it), its framing
/// removed.
fn body_of(wire: &[u8]) -> Vec<u8> {
    read_response(&mut &wire[..], false).1.unwrap()
}

/// SIGTERM through the shell's kill builtin (no libc binding needed).
pub(crate) fn sigterm(child: &Child) {
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -TERM {}", child.id()))
        .status()
        .unwrap();
    assert!(st.success());
}

pub(crate) struct ProxyProc {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
}

impl ProxyProc {
    fn start(out: &Path, ca: &Path) -> ProxyProc {
        let index = out.with_extension("redb");
        let extra = ["--insecure", "--dedupe-index", index.to_str().unwrap()];
        Self::start_cmd(out, ca, &extra, bin(), Stdio::null())
    }

    /// `warchest proxy` on a free loopback port, allowed to reach the test
    /// sites (loopback, which a proxy denies by default), recording to
    /// `out`, with `extra` flags on `cmd` (which may carry more flags and
    /// environment), its standard error to `stderr`.
    pub(crate) fn start_cmd(
        out: &Path,
        ca: &Path,
        extra: &[&str],
        mut cmd: Command,
        stderr: Stdio,
    ) -> ProxyProc {
        let mut child = cmd
            .args(["proxy", "--listen", "127.0.0.1:0"])
            .args(["--allow-dest", "127.0.0.0/8", "--ca"])
            .arg(ca)
            .args(extra)
            .arg("-o")
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let addr = first_line(&mut child)
            .strip_prefix("listening on ")
            .unwrap()
            .parse()
            .unwrap();
        ProxyProc { child, addr }
    }

    pub(crate) fn stop(mut self) {
        sigterm(&self.child);
        let st = self.child.wait().unwrap();
        assert!(st.success(), "{st:?}");
    }
}

/// A CONNECT tunnel through the proxy at `proxy` to `localhost:port`,
/// the client trusting the proxy's CA in `ca`: the TLS stream inside.
fn tunnel(
    proxy: SocketAddr,
    ca: &Path,
    port: u16,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    let ca_pem = std::fs::read(ca).unwrap();
    use rustls::pki_types::pem::PemObject;
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(&ca_pem) {
        roots.add(c.unwrap()).unwrap();
    }
    let ccfg = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );
    let mut s = TcpStream::connect(proxy).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n"
    )
    .unwrap();
    // The head, byte by byte: the TLS handshake follows at once.
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1);
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200 Connection established\r\n"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let conn = rustls::ClientConnection::new(ccfg, "localhost".try_into().unwrap()).unwrap();
    rustls::StreamOwned::new(conn, s)
}

#[test]
fn proxy_passes_responses_on_and_records_them_as_received() {
    let site = start_site(None);
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let ca = work.path().join("ca.pem");
    let p = ProxyProc::start(&out, &ca);
    let host = format!("127.0.0.1:{}", site.addr.port());
    // The client gets the status, the fields and the body the server
    // sent; hyper frames it for the client's connection.
    for path in ["/", "/chunked", "/gzip"] {
        let got = get_raw(p.addr, &format!("http://{host}{path}"), &host);
        let direct = get_raw(site.addr, path, &host);
        let (head, body) = read_response(&mut &got[..], false);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {head}");
        assert_eq!(body.unwrap(), body_of(&direct), "{path}");
        if path == "/gzip" {
            assert!(head.contains("Content-Encoding: gzip\r\n"), "{head}");
        }
    }
    // A POST with Expect: 100-continue: the proxy says go ahead, the body
    // is forwarded and recorded in the request record.
    let mut s = TcpStream::connect(p.addr).unwrap();
    write!(s, "POST http://{host}/form HTTP/1.1\r\nHost: {host}\r\nContent-Length: 7\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n").unwrap();
    let mut cont = [0u8; 25];
    s.read_exact(&mut cont).unwrap();
    assert_eq!(&cont, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"a=1&b=2").unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert!(
        got.starts_with(b"HTTP/1.1 404"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // A request for the proxy itself is refused, not looped.
    let me = format!("127.0.0.1:{}", p.addr.port());
    let got = get_raw(p.addr, &format!("http://{me}/"), &me);
    assert!(
        got.starts_with(b"HTTP/1.1 508 "),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // Three requests on one kept-alive client connection, one of them
    // answered to the end of the upstream connection (chunked to the
    // client).
    let mut s = TcpStream::connect(p.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for path in ["/copy", "/chunked", "/gzip"] {
        write!(
            s,
            "GET http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n\r\n"
        )
        .unwrap();
        let (head, body) = read_response(&mut r, false);
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
        assert!(
            !head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
        let want = match path {
            "/gzip" => gzip(&pages()["/gzip"]),
            "/chunked" => pages()["/chunked"].clone(),
            _ => HELLO.to_vec(),
        };
        assert_eq!(body.unwrap(), want, "{path}");
    }
    drop((s, r));
    // HTTPS by CONNECT, the client trusting the proxy's CA.
    let (cfg, _) = tls_config(&["localhost"]);
    let tls_site = start_site(Some(cfg));
    // The proxy resolves localhost itself (system resolver: loopback).
    let tport = tls_site.addr.port();
    let mut t = tunnel(p.addr, &ca, tport);
    write!(
        t,
        "GET /gzip HTTP/1.1\r\nHost: localhost:{tport}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let _ = t.read_to_end(&mut got);
    let body = gzip(&pages()["/gzip"]);
    assert!(
        got.ends_with(&body),
        "{}",
        String::from_utf8_lossy(&got[..got.len().min(200)])
    );
    p.stop();
    let files = files_in(&out);
    validate(&files);
    let recs = records(&files);
    // Recorded as the server sent them to an HTTP/1.0 request: what the
    // proxy asks upstream.
    for path in ["/", "/chunked", "/gzip"] {
        let r = response(&recs, &format!("http://{host}{path}"));
        assert_eq!(
            r.block,
            get_raw_version(site.addr, path, &host, "1.0"),
            "{path}"
        );
        assert_eq!(r.get("WARC-Protocol"), Some("http/1.0"), "{path}");
    }
    let form = recs
        .iter()
        .find(|r| r.kind == RecordType::Request && r.uri == format!("http://{host}/form"))
        .unwrap();
    let text = String::from_utf8_lossy(&form.block);
    assert!(text.starts_with("POST /form HTTP/1.0\r\n"), "{text}");
    assert!(text.contains(&format!("\r\nHost: {host}\r\n")), "{text}");
    assert!(text.contains("\r\nContent-Length: 7\r\n"), "{text}");
    assert!(!text.to_ascii_lowercase().contains("expect:"), "{text}");
    assert!(
        text.ends_with("\r\nConnection: close\r\n\r\na=1&b=2"),
        "{text}"
    );
    // /copy's payload is /'s: a revisit, though the client got it whole.
    let copy = response(&recs, &format!("http://{host}/copy"));
    assert_eq!(copy.kind, RecordType::Revisit);
    assert_eq!(
        copy.get("WARC-Refers-To"),
        Some(response(&recs, &format!("http://{host}/")).id())
    );
    // The HTTPS /gzip, recorded from inside the CONNECT tunnel, has the
    // payload of the plain /gzip before it.
    let r = response(&recs, &format!("https://localhost:{tport}/gzip"));
    assert_eq!(r.get("WARC-Payload-Digest").unwrap(), sha1(&body));
    assert_eq!(r.kind, RecordType::Revisit);
    let plain = response(&recs, &format!("http://{host}/gzip"));
    assert_eq!(plain.kind, RecordType::Response);
    assert_eq!(r.get("WARC-Refers-To"), Some(plain.id()));
    assert!(plain.block.ends_with(&body));
    assert!(r.get("WARC-Cipher-Suite").is_some());
    let protocols: Vec<&str> = r
        .fields
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("WARC-Protocol"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(protocols, ["http/1.0", "tls/1.3"]);
}

#[test]
fn sigterm_stops_a_capture_with_its_files_closed() {
    let site = start_site(None);
    let base = format!("http://127.0.0.1:{}", site.addr.port());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let child = bin()
        .arg("-w")
        .arg("capture")
        .args((0..5).map(|i| format!("{base}/slow?{i}")))
        .arg("-o")
        .arg(&out)
        .args(["--ignore-robots", "--max-time", "2"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first fetch is under way (the handler is set by then).
    for _ in 0..200 {
        if !site.hits.lock().unwrap().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!site.hits.lock().unwrap().is_empty(), "no fetch began");
    sigterm(&child);
    let t0 = std::time::Instant::now();
    let done = child.wait_with_output().unwrap();
    // The fetch under way ends; no new one starts: one response record
    // (below). The time bound only catches a hang: a loaded machine can take
    // seconds to close the files (--max-time itself is tested above).
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    // The four URLs never fetched are counted, named (-w), and the run is
    // not a success.
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{err}");
    assert!(
        err.contains("\n4 URLs not fetched (interrupted)\n"),
        "{err}"
    );
    for i in 1..5 {
        assert!(
            err.contains(&format!("not fetched: {base}/slow?{i}\n")),
            "{err}"
        );
    }
    assert!(
        !err.contains(&format!("not fetched: {base}/slow?0\n")),
        "{err}"
    );
    let files = files_in(&out);
    validate(&files);
    let recs = records(&files);
    let slow: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.kind == RecordType::Response)
        .collect();
    assert_eq!(slow.len(), 1, "one fetch was under way");
    // With no clock: the fetch under way was cut by --max-time 2 (its body
    // takes 5 s), not waited for whole after the signal.
    assert_eq!(
        slow[0].get("WARC-Truncated"),
        Some("time"),
        "the slow fetch kept past --max-time"
    );
    assert_eq!(
        site.hits.lock().unwrap().len(),
        1,
        "no fetch after the signal"
    );
}

/// A write error ends the run with exit 2, and what it lost is named
/// first: the URL whose records could not be written, and the URLs never
/// attempted. The output is a directory of /proc, where no file can be
/// made (root included), so the first record's file fails.
#[test]
fn a_write_error_names_what_the_capture_lost() {
    let site = start_site(None);
    let base = format!("http://127.0.0.1:{}", site.addr.port());
    let done = bin()
        .arg("-w")
        .arg("capture")
        .args([
            format!("{base}/"),
            format!("{base}/copy"),
            format!("{base}/hop"),
        ])
        .args(["-o", "/proc/self", "--ignore-robots"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("not written: {base}/\n")), "{err}");
    assert!(
        err.contains("\n2 URLs not fetched (the output failed)\n"),
        "{err}"
    );
    for u in ["/copy", "/hop"] {
        assert!(err.contains(&format!("not fetched: {base}{u}\n")), "{err}");
    }
    assert!(err.contains("warchest: "), "{err}");
    // What the run did is said as at a run's end, before what it lost.
    let counts = err.find("3 URLs: ").expect(&err);
    assert!(counts < err.find("not written: ").unwrap(), "{err}");
    assert_eq!(site.hits.lock().unwrap().as_slice(), ["/"]);
}

/// `--json`'s lines are written from the capture's progress callback: a
/// standard output that cannot take them (a full disk) fails the run,
/// naming it, as every other command's output does, though the records
/// are written.
#[test]
fn json_lines_that_cannot_be_written_fail_the_capture() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full");
        return;
    };
    let site = start_site(None);
    let url = format!("http://127.0.0.1:{}/", site.addr.port());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let done = bin()
        .arg("capture")
        .arg(&url)
        .arg("-o")
        .arg(&out)
        .args(["--json", "--ignore-robots"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{err}");
    assert!(err.contains("warchest: stdout: "), "{err}");
    let files = files_in(&out);
    validate(&files);
    assert!(
        records(&files)
            .iter()
            .any(|r| r.kind == RecordType::Response && r.uri == url),
        "{err}"
    );
}

#[test]
fn proxy_is_no_open_relay() {
    let site = start_site(None);
    let work = tempfile::tempdir().unwrap();
    let ca = work.path().join("ca.pem");
    // A non-loopback address is refused without --public.
    let out = bin()
        .args(["proxy", "--listen", "0.0.0.0:0", "-o"])
        .arg(work.path().join("o1"))
        .arg("--ca")
        .arg(&ca)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--public"),
        "{out:?}"
    );
    let start = |extra: &[&str]| {
        let mut child = bin()
            .args(["proxy", "--listen", "127.0.0.1:0", "--ca"])
            .arg(&ca)
            .args(extra)
            .arg("-o")
            .arg(work.path().join(format!("o{}", extra.len())))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr: SocketAddr = first_line(&mut child)
            .strip_prefix("listening on ")
            .unwrap()
            .parse()
            .unwrap();
        (child, addr)
    };
    let ask = |addr: SocketAddr, auth: Option<&str>| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut req = format!(
            "GET http://127.0.0.1:{}/ HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            site.addr.port(),
            site.addr.port()
        );
        if let Some(a) = auth {
            req.push_str(&format!("Proxy-Authorization: {a}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let mut resp = String::new();
        let _ = s.read_to_string(&mut resp);
        resp
    };
    // Loopback destinations are denied by default, inside a CONNECT
    // tunnel too (the request in it is checked when it is forwarded).
    let (mut c, addr) = start(&[]);
    let r = ask(addr, None);
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    let mut t = tunnel(addr, &ca, site.addr.port());
    write!(
        t,
        "GET / HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\n\r\n",
        site.addr.port()
    )
    .unwrap();
    let mut r = Vec::new();
    let _ = t.read_to_end(&mut r);
    let r = String::from_utf8_lossy(&r);
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    assert!(r.contains("--allow-dest"), "{r}");
    assert!(site.hits.lock().unwrap().is_empty(), "the site was reached");
    sigterm(&c);
    c.wait().unwrap();
    // Credentials asked: 407 without them, through with them.
    let (mut c, addr) = start(&["--allow-dest", "127.0.0.0/8", "--auth", "u:pw"]);
    let r = ask(addr, None);
    assert!(r.starts_with("HTTP/1.1 407"), "{r}");
    assert!(r.contains("Proxy-Authenticate: Basic"), "{r}");
    assert!(ask(addr, Some("Basic dTp3cm9uZw==")).starts_with("HTTP/1.1 407"));
    // base64("u:pw") = "dTpwdw=="
    let r = ask(addr, Some("Basic dTpwdw=="));
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    // A CONNECT without them: 407 too, no tunnel.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n")
        .unwrap();
    // (The connection stays open for a retry with credentials.)
    let (r, _) = read_response(&mut BufReader::new(s), false);
    assert!(r.starts_with("HTTP/1.1 407"), "{r}");
    sigterm(&c);
    c.wait().unwrap();
}

/// Issue 19: a capture of a server that chunks its responses (to HTTP/1.1
/// clients) verifies in the tools users run: warcio, FastWARC and
/// warchest's own `check` and `validate` all accept every digest, the
/// payload digest with no exception for chunked bodies. The capture asks
/// in HTTP/1.0, so the body comes without transfer coding.
#[test]
fn a_chunking_server_captured_verifies_in_warcio_and_fastwarc() {
    let site = start_site(None);
    let base = format!("http://127.0.0.1:{}", site.addr.port());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let (code, _, err) = run(bin()
        .arg("capture")
        .args([format!("{base}/chunked"), format!("{base}/")])
        .arg("-o")
        .arg(&out)
        .args(["--timeout", "10"]));
    assert_eq!(code, 0, "{err}");
    let files = files_in(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let f = &files[0];
    let recs = records(&files);
    let r = response(&recs, &format!("{base}/chunked"));
    assert_eq!(
        r.get("WARC-Payload-Digest").unwrap(),
        sha1(&pages()["/chunked"])
    );
    verifies_everywhere(f);
}

/// `f` passes `warchest check` and `validate` (no payload-digest exception
/// for chunked bodies), `warcio check -v` and `fastwarc check
/// --verify-payloads`.
fn verifies_everywhere(f: &Path) {
    let (code, out, err) = run(bin().arg("check").arg(f));
    assert_eq!(code, 0, "{}{err}", String::from_utf8_lossy(&out));
    let (code, out, err) = run(bin().arg("validate").arg(f));
    let text = String::from_utf8_lossy(&out);
    assert_eq!(code, 0, "{text}{err}");
    assert!(!text.contains("payload-chunked"), "{text}");
    if python_has("warcio") {
        // warcio's own command: every digest, payload ones included.
        let text = peer_check("warcio", &["check", "-v"], f);
        assert!(!text.contains("fail"), "{text}");
        assert!(text.contains("digest pass"), "{text}");
    }
    if python_has("fastwarc") {
        peer_check("fastwarc", &["check", "--verify-payloads", "-q"], f);
    }
}

/// Runs a peer's checking command on `f`, asserts it succeeds, and returns
/// what it printed.
fn peer_check(tool: &str, args: &[&str], f: &Path) -> String {
    let o = Command::new(tool).args(args).arg(f).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{tool} {}: {text}{}",
        args[0],
        String::from_utf8_lossy(&o.stderr)
    );
    text
}

/// Issue 18: the proxy asks upstream in HTTP/1.0 as capture does, so a
/// server that chunks for HTTP/1.1 clients sends the entity as it is, and
/// what the proxy records verifies in warcio and FastWARC as in warchest;
/// the HTTP/1.1 client still gets the body (chunked by the proxy).
#[test]
fn a_chunking_server_proxied_verifies_in_warcio_and_fastwarc() {
    let site = start_site(None);
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let p = ProxyProc::start_cmd(
        &out,
        &work.path().join("ca.pem"),
        &["--timeout", "10"],
        bin(),
        Stdio::null(),
    );
    let host = format!("127.0.0.1:{}", site.addr.port());
    let mut s = TcpStream::connect(p.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for path in ["/chunked", "/"] {
        write!(
            s,
            "GET http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n\r\n"
        )
        .unwrap();
        let (head, body) = read_response(&mut r, false);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let want = if path == "/" {
            HELLO.to_vec()
        } else {
            pages()["/chunked"].clone()
        };
        assert_eq!(body.unwrap(), want, "{path}");
    }
    drop((s, r));
    p.stop();
    let files = files_in(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let recs = records(&files);
    let r = response(&recs, &format!("http://{host}/chunked"));
    assert!(
        !String::from_utf8_lossy(&r.block[..200])
            .to_ascii_lowercase()
            .contains("chunked"),
        "recorded chunked"
    );
    assert_eq!(
        r.get("WARC-Payload-Digest").unwrap(),
        sha1(&pages()["/chunked"])
    );
    let req = recs
        .iter()
        .find(|r| r.kind == RecordType::Request && r.uri == format!("http://{host}/chunked"))
        .unwrap();
    assert!(req.block.starts_with(b"GET /chunked HTTP/1.0\r\n"));
    verifies_everywhere(&files[0]);
}
