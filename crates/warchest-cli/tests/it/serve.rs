//! `warchest serve` and `warchest wacz` end to end: the server run as a
//! process on a loopback port, asked over HTTP (CDX API, Memento, replay,
//! pages, downloads), WACZ made, checked (by py-wacz too) and served, and a
//! replayed page loaded in headless Chromium.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common;
use common::{bin, fixture, python_has};

pub(crate) const IANA_TS: &str = "20140126200624";

/// A running `warchest serve`, killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    /// The UI origin's address.
    pub(crate) addr: String,
    /// The replay origin's address: archived bytes come only from there.
    pub(crate) replay: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    pub(crate) fn start(paths: &[&Path], db: &Path, extra: &[&str]) -> Server {
        let mut cmd = bin();
        cmd.arg("serve")
            .args(paths)
            .args(["--listen", "127.0.0.1:0", "--index-db"])
            .arg(db)
            .args(extra);
        Server::start_cmd(cmd)
    }

    /// Starts `cmd`, a `warchest serve` listening on port 0.
    pub(crate) fn start_cmd(mut cmd: Command) -> Server {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start warchest serve");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let l2 = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = l2.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let mut r = BufReader::new(stdout);
            let _ = r.read_line(&mut first);
            let _ = tx.send(first);
            // Keep reading so the server never blocks on a full pipe.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        });
        let first = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("serve prints its address");
        // "warchest: listening on http://A (ui), http://B (replay)", or
        // with --replay-host "..., host NAME (replay)": one listener.
        let (addr, replay) = first
            .trim()
            .strip_prefix("warchest: listening on http://")
            .and_then(|a| a.split_once(" (ui), "))
            .and_then(|(a, r)| {
                let r = r.strip_suffix(" (replay)")?;
                Some((a, r.strip_prefix("http://").unwrap_or(a)))
            })
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line {first:?}; log {}",
                    log.lock().unwrap()
                )
            });
        let (addr, replay) = (addr.to_string(), replay.to_string());
        Server {
            child,
            addr,
            replay,
            log,
        }
    }

    /// A GET of the UI origin.
    pub(crate) fn get(&self, path: &str) -> Resp {
        get(&self.addr, path, &[])
    }

    /// A GET of the replay origin.
    pub(crate) fn rget(&self, path: &str) -> Resp {
        get(&self.replay, path, &[])
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The log once it holds `needle`, or as it is after 60 s: the
    /// server's stderr is gathered by a thread of its own, so a line logged
    /// while a response was sent may reach it after the response.
    pub(crate) fn log_with(&self, needle: &str) -> String {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let log = self.log();
            if log.contains(needle) || Instant::now() >= until {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A one-request HTTP/1.1 client (chunked bodies decoded).
pub(crate) fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = all[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let nl = body[i..].windows(2).position(|w| w == b"\r\n").unwrap() + i;
            let size = usize::from_str_radix(std::str::from_utf8(&body[i..nl]).unwrap().trim(), 16)
                .unwrap();
            if size == 0 {
                break;
            }
            out.extend_from_slice(&body[nl + 2..nl + 2 + size]);
            i = nl + 2 + size + 2;
        }
        body = out;
    }
    Resp {
        status,
        headers,
        body,
    }
}

pub(crate) fn iana_server(dir: &tempfile::TempDir) -> Server {
    Server::start(
        &[&fixture("pywb/iana.warc.gz")],
        &dir.path().join("index.redb"),
        &["--poll", "0"],
    )
}

/// Each line of `text` as JSON (the derive tests' rows too).
pub(crate) fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The CDX API's filters answer as pywb's own CDX API does over the same
/// file: pywb started on iana.warc.gz, each query asked of both, the
/// captures (timestamp, URL, MIME type) the same, in the same
/// order. pywb's syntax: none (contains), `=`, `~` (a regular expression
/// from the start), `!`, and an empty filter. Each query finds
/// something: where nothing passes, pywb's CDX API answers with the
/// fuzzy matches its replay falls back to (`=mime:css` gives every
/// capture), which warchest's does not. Then the outputs (text, link,
/// CDXJ with `fl`), byte for byte, and an unknown output refused.
#[test]
fn cdx_filters_and_outputs_answer_as_pywbs_own() {
    if std::env::var_os("WARCHEST_SKIP_PYTHON").is_some() {
        eprintln!("skipped: WARCHEST_SKIP_PYTHON");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let pywb = crate::fidelity::start_pywb(dir.path(), &fixture("pywb/iana.warc.gz"));
    let pywb_addr = format!("127.0.0.1:{}", pywb.port);
    // Not the status: pywb's own index (`wb-manager add`) gives a revisit
    // none, where warchest's, as cdxj-indexer's, gives its HTTP head's.
    let captures = |text: &str| -> Vec<(String, String, String)> {
        json_lines(text)
            .iter()
            .map(|l| {
                let f = |k: &str| l[k].as_str().unwrap_or_default().to_string();
                (f("timestamp"), f("url"), f("mime"))
            })
            .collect()
    };
    let mut compared = 0;
    for (url, filter) in [
        ("www.iana.org/_css/2013.1/screen.css", "mime:css"),
        ("www.iana.org/_css/2013.1/screen.css", "=mime:text/css"),
        ("www.iana.org/_css/2013.1/screen.css", "!mime:revisit"),
        ("www.iana.org/_css/2013.1/screen.css", "~url:https:"),
        ("www.iana.org/_css/2013.1/screen.css", "~mime:.*/revisit$"),
        (
            "www.iana.org/_css/2013.1/screen.css",
            "!~timestamp:2014012620065",
        ),
        ("www.iana.org/*", "~url:.*\\.(png|svg)$"),
        ("www.iana.org/*", "!=mime:warc/revisit"),
        ("www.iana.org/*", "~status:30"),
        ("www.iana.org/*", "mime:javascript"),
        ("www.iana.org/*", ""),
        // pywb's other names of fields, the Internet Archive's among them.
        ("www.iana.org/*", "mimetype:image"),
        ("www.iana.org/*", "!=m:warc/revisit"),
        ("www.iana.org/*", "~u:.*\\.js$"),
        ("www.iana.org/*", "=statuscode:302"),
        ("www.iana.org/*", "~t:2014012620065"),
    ] {
        let q = format!(
            "cdx?url={url}&output=json&filter={}",
            filter
                .bytes()
                .map(|b| if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                })
                .collect::<String>()
        );
        let ours = s.get(&format!("/archive/{q}"));
        let theirs = get(&pywb_addr, &format!("/fid/{q}"), &[]);
        assert_eq!(
            (ours.status, theirs.status),
            (200, 200),
            "{q}: {}",
            theirs.text()
        );
        let (a, b) = (captures(&ours.text()), captures(&theirs.text()));
        assert_eq!(a, b, "{filter} over {url}");
        compared += a.len();
    }
    // The filters found something to compare.
    assert!(compared > 40, "{compared} captures compared");

    // pywb's fuzzy answer: an exact query whose URL has no capture of its
    // own (a cache buster added) answers the captures of the same
    // resource, each marked `is_fuzzy`, in pywb's order; unless
    // `allowFuzzy=false`. The user's filters still apply here (pywb drops
    // them from its fuzzy query; docs/serve.md).
    let busted = "www.iana.org/_css/2013.1/screen.css%3F_%3D1390767400";
    for (q, fuzzy) in [
        (format!("cdx?url={busted}&output=json"), true),
        (format!("cdx?url={busted}&output=json&sort=reverse"), true),
        (format!("cdx?url={busted}&output=json&limit=3"), true),
        (
            format!("cdx?url={busted}&output=json&allowFuzzy=false"),
            false,
        ),
    ] {
        let ours = s.get(&format!("/archive/{q}"));
        let theirs = get(&pywb_addr, &format!("/fid/{q}"), &[]);
        assert_eq!((ours.status, theirs.status), (200, 200), "{q}");
        let (a, b) = (captures(&ours.text()), captures(&theirs.text()));
        assert_eq!(a, b, "{q}");
        assert_eq!(a.is_empty(), !fuzzy, "{q}: {a:?}");
        for l in json_lines(&ours.text()) {
            assert_eq!(l["is_fuzzy"], "1", "{q}: {l}");
        }
    }
    // In text, the mark is the last column.
    let q = format!("/archive/cdx?url={busted}&output=text");
    let text = s.get(&q).text();
    assert!(
        !text.is_empty() && text.lines().all(|l| l.ends_with(" 1")),
        "{q}: {text}"
    );
    let q = format!("/archive/cdx?url={busted}&output=json&filter=mime:image");
    assert_eq!(s.get(&q).text(), "", "{q}");
    // An offset past the URL's own captures answers nothing, not them
    // again as fuzzy ones; the URL's own captures are not marked.
    let css = "www.iana.org/_css/2013.1/screen.css";
    let q = format!("/archive/cdx?url={css}&output=json&offset=1000");
    assert_eq!(s.get(&q).text(), "", "{q}");
    let own = json_lines(&s.get(&format!("/archive/cdx?url={css}&output=json")).text());
    assert!(!own.is_empty() && own.iter().all(|l| l.get("is_fuzzy").is_none()));

    // The outputs, byte for byte, with the fields where the two indexes
    // agree: text (`fl` or `fields`), CDXJ with `fl`, the link format;
    // `-` for a field a capture lacks or nobody knows.
    let css = "www.iana.org/_css/2013.1/screen.css";
    for (q, lines) in [
        (format!("url={css}&output=link"), 16),
        ("url=www.iana.org/&output=link&limit=1".to_string(), 1),
        ("url=nothing.example/&output=link".to_string(), 0),
        (
            "url=www.iana.org/*&output=text&fl=timestamp,url,mime".into(),
            40,
        ),
        (
            format!("url={css}&output=text&fields=url,nope,timestamp"),
            16,
        ),
        ("url=www.iana.org/*&fl=url,mime".into(), 40),
        (
            format!("url={css}&fl=timestamp,mime,urlkey&sort=reverse"),
            16,
        ),
        // pywb's `collapseTime`: one capture a minute and status (not of
        // revisits, whose status the two indexes give differently).
        (
            "url=www.iana.org/*&output=text&fl=timestamp,url,mime&filter=!mime:revisit&collapseTime=12"
                .into(),
            10,
        ),
    ] {
        let ours = s.get(&format!("/archive/cdx?{q}"));
        let theirs = get(&pywb_addr, &format!("/fid/cdx?{q}"), &[]);
        assert_eq!((ours.status, theirs.status), (200, 200), "{q}");
        assert_eq!(
            ours.header("content-type"),
            theirs.header("content-type"),
            "{q}"
        );
        let want = theirs
            .text()
            .replace("collection=\"fid\"", "collection=\"archive\"");
        assert_eq!(ours.text(), want, "{q}");
        assert!(ours.text().lines().count() >= lines, "{q}: {}", ours.text());
    }
    // pywb's `resolveRevisits`: a revisit takes its original's MIME type
    // (and status, where it has one: pywb's index gives a revisit none),
    // and every capture gets the original's length, offset and file or
    // `-`; in the index's order, turned round for `sort=reverse`.
    let resolved = |text: &str| -> Vec<Vec<String>> {
        json_lines(text)
            .iter()
            .map(|l| {
                [
                    "timestamp",
                    "url",
                    "mime",
                    "orig.length",
                    "orig.offset",
                    "orig.filename",
                ]
                .iter()
                .map(|k| l[*k].as_str().unwrap_or("(none)").to_string())
                .collect()
            })
            .collect()
    };
    let mut revisits = 0;
    for q in [
        format!("url={css}&output=json&resolveRevisits=true"),
        "url=www.iana.org/*&output=json&resolveRevisits=true".into(),
        "url=www.iana.org/*&output=json&resolveRevisits=true&sort=reverse&limit=30".into(),
        "url=www.iana.org/*&output=json&resolveRevisits=true&filter=mime:css".into(),
        // The original before `from` still resolves the revisits after.
        format!("url={css}&output=json&resolveRevisits=true&from=201401262007"),
    ] {
        let ours = s.get(&format!("/archive/cdx?{q}"));
        let theirs = get(&pywb_addr, &format!("/fid/cdx?{q}"), &[]);
        assert_eq!((ours.status, theirs.status), (200, 200), "{q}");
        let (a, b) = (resolved(&ours.text()), resolved(&theirs.text()));
        assert_eq!(a, b, "{q}");
        assert!(!a.is_empty(), "{q}");
        revisits += a.iter().filter(|r| r[4] != "-").count();
    }
    assert!(revisits > 30, "{revisits} revisits resolved");
    // A revisit's status is its original's (the response's 200 here).
    let r = s.get(&format!(
        "/archive/cdx?url={css}&output=json&resolveRevisits=true&filter==mime:text/css"
    ));
    let lines = json_lines(&r.text());
    assert_eq!(lines.len(), 16);
    assert!(lines.iter().all(|l| l["status"] == "200"), "{}", r.text());
    // `offset` counts the period's captures, after resolving.
    let from = |q: &str| {
        resolved(
            &s.get(&format!(
                "/archive/cdx?url={css}&output=json&resolveRevisits=true&from=201401262007{q}"
            ))
            .text(),
        )
    };
    let whole = from("");
    assert!(whole.len() > 10 && whole[0][3] != "-");
    assert_eq!(from("&offset=3"), whole[3..]);
    // What it cannot go with is refused, saying why.
    for q in [
        "sort=closest&closest=2014",
        "sort=reverse&limit=-1",
        "output=link",
        "page=0",
    ] {
        let r = s.get(&format!(
            "/archive/cdx?url=www.iana.org/&resolveRevisits=true&{q}"
        ));
        assert_eq!(r.status, 400, "{q}: {}", r.text());
    }
    // An output neither knows is refused by both.
    let q = "cdx?url=www.iana.org/&output=xml";
    assert_eq!(s.get(&format!("/archive/{q}")).status, 400);
    assert_eq!(get(&pywb_addr, &format!("/fid/{q}"), &[]).status, 400);
}

/// The CDX API's pages (pywb's pagination API, which pywb gives a ZipNum
/// index only): blocks of 3,000 captures, five to a page unless
/// `pageSize` says; a page past the last is a 400, which is how
/// cdx_toolkit, iterating over a pywb server's pages, knows it is done.
/// 7,000 captures: three blocks.
#[test]
fn cdx_pages_are_pywbs_pagination_api_and_cdx_toolkit_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut warc = Vec::new();
    for i in 0..7000u32 {
        let http = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx";
        // A second a capture, from 2024-01-01T00:00:00Z.
        let (h, m, sec) = (i / 3600, i / 60 % 60, i % 60);
        warc.extend_from_slice(
            format!(
                "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://pages.example/p{i:05}\r\n\
                 WARC-Date: 2024-01-01T{h:02}:{m:02}:{sec:02}Z\r\n\
                 WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{i:012}>\r\n\
                 Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
                http.len()
            )
            .as_bytes(),
        );
    }
    let file = dir.path().join("pages.warc");
    std::fs::write(&file, &warc).unwrap();
    let s = Server::start(&[&file], &dir.path().join("index.redb"), &["--poll", "0"]);
    let cdx = |q: &str| s.get(&format!("/archive/cdx?url=pages.example/*&{q}"));
    let pages = |q: &str| -> serde_json::Value {
        let r = cdx(&format!("showNumPages=true&{q}"));
        assert_eq!(r.status, 200, "{q}: {}", r.text());
        serde_json::from_slice(&r.body).unwrap()
    };
    assert_eq!(
        pages(""),
        serde_json::json!({"pages": 1, "pageSize": 5, "blocks": 3})
    );
    assert_eq!(
        pages("pageSize=1"),
        serde_json::json!({"pages": 3, "pageSize": 1, "blocks": 3})
    );
    // The period counts: captures of the first 3,000 seconds, one block.
    assert_eq!(pages("pageSize=1&to=20240101004959")["blocks"], 1);
    assert_eq!(
        s.get("/archive/cdx?url=nothing.example/&showNumPages=true")
            .text(),
        r#"{"pages": 0, "pageSize": 5, "blocks": 0}"#
    );

    // The pages, in order, are the whole answer.
    let lines = |q: &str| -> Vec<String> {
        let r = cdx(q);
        assert_eq!(r.status, 200, "{q}: {}", r.text());
        r.text().lines().map(str::to_string).collect()
    };
    let all = lines("output=text&fl=url");
    assert_eq!(all.len(), 7000);
    let mut paged = Vec::new();
    for page in 0..3 {
        let p = lines(&format!("output=text&fl=url&pageSize=1&page={page}"));
        assert_eq!(p.len(), [3000, 3000, 1000][page], "page {page}");
        paged.extend(p);
    }
    assert_eq!(paged, all);
    assert_eq!(lines("output=text&fl=url&page=0").len(), 7000);
    // Past the last page, or not a page: 400; page 0 of nothing: empty.
    for q in ["pageSize=1&page=3", "page=1", "page=x", "pageSize=0&page=0"] {
        assert_eq!(cdx(q).status, 400, "{q}");
    }
    let r = s.get("/archive/cdx?url=nothing.example/&page=0");
    assert_eq!((r.status, r.body.len()), (200, 0));
    // Newest first, filters and limit inside the page.
    assert_eq!(
        lines("output=text&fl=url&sort=reverse&pageSize=1&page=0&limit=2"),
        ["http://pages.example/p06999", "http://pages.example/p06998"]
    );
    // A later page in reverse starts where the one before it ended; an
    // offset counts from the page's start.
    assert_eq!(
        lines("output=text&fl=url&sort=reverse&pageSize=1&page=1&limit=1"),
        ["http://pages.example/p03999"]
    );
    assert_eq!(
        lines("output=text&fl=url&pageSize=1&page=1&offset=2&limit=1"),
        ["http://pages.example/p03002"]
    );
    // The last lines of a page.
    assert_eq!(
        lines("output=text&fl=url&pageSize=1&page=1&limit=-2"),
        ["http://pages.example/p05998", "http://pages.example/p05999"]
    );
    let tens = lines("output=text&fl=url&pageSize=1&page=1&filter=~url:.*0$");
    assert_eq!(tens.len(), 300);
    assert_eq!(tens[0], "http://pages.example/p03000");

    // cdx_toolkit, pointed at the endpoint, reads every page and stops,
    // and fetches a capture's content.
    if !python_has("cdx_toolkit") {
        return;
    }
    let script = r#"
import itertools, sys, cdx_toolkit, cdx_toolkit.myrequests as m
endpoint = sys.argv[1]
# Its politeness (3 s a request to an unknown host) is for public servers.
m.retry_info["127.0.0.1"] = {"next_fetch": 0, "minimum_interval": 0.0}
cdx = cdx_toolkit.CDXFetcher(source=endpoint)
# Bounded: were pages not refused past the last, it would read for ever.
pages = cdx.iter("pages.example/*", pageSize=1)
urls = [c["url"] for c in itertools.islice(pages, 20000)]
print(len(urls), len(set(urls)), urls[0], urls[-1])
print(cdx.get_size_estimate("pages.example/*"))
# A capture's content, both ways it fetches one: replayed (`id_`), and
# the record's bytes as a range of its file (Common Crawl's way).
for kw in ({"wb": sys.argv[2]}, {"warc_download_prefix": sys.argv[3]}):
    caps = cdx_toolkit.CDXFetcher(source=endpoint, **kw).get("pages.example/p00042")
    print(len(caps), caps[0]["url"], caps[0].content)
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            script,
            &format!("http://{}/archive/cdx", s.addr),
            // The replay origin: cdx_toolkit follows no redirect, and the
            // UI origin sends replays there.
            &format!("http://{}/archive", s.replay),
            &format!("http://{}/archive/file", s.replay),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        // Its estimate: (blocks - 1) x 3,000.
        "7000 7000 http://pages.example/p00000 http://pages.example/p06999\n6000\n\
         1 http://pages.example/p00042 b'x'\n1 http://pages.example/p00042 b'x'\n"
    );
}

/// `collapse` (the Internet Archive's CDX server's; pywb ignores it): the
/// first of each run of adjacent lines with the same field, or the same
/// first N characters of it, after the filters and before the limit. And
/// its `limit=-N`, the last N lines.
#[test]
fn cdx_collapse_keeps_the_first_line_of_each_run_and_a_negative_limit_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let fields = |fl: &str, q: &str| -> Vec<Vec<String>> {
        let r = s.get(&format!(
            "/archive/cdx?url=www.iana.org/*&output=text&fl={fl}&{q}"
        ));
        assert_eq!(r.status, 200, "{q}: {}", r.text());
        r.text()
            .lines()
            .map(|l| l.split(' ').map(str::to_string).collect())
            .collect()
    };
    let lines = |q: &str| fields("urlkey,timestamp,digest,mime", q);
    let all = lines("");
    // What each collapse keeps, worked out from the whole answer.
    let runs = |rows: &[Vec<String>], key: &dyn Fn(&[String]) -> String| {
        let mut out: Vec<Vec<String>> = Vec::new();
        let mut last = None;
        for r in rows {
            let k = key(r);
            if last.as_ref() != Some(&k) {
                out.push(r.clone());
            }
            last = Some(k);
        }
        out
    };
    let by_url = runs(&all, &|r| r[0].clone());
    assert!(all.len() > 100 && by_url.len() > 20 && by_url.len() < all.len() / 2);
    assert_eq!(lines("collapse=urlkey"), by_url);
    // The Internet Archive's names for the fields, and a prefix of one.
    let by_minute = runs(&all, &|r| r[1][..12].to_string());
    assert!(by_minute.len() < all.len());
    assert_eq!(lines("collapse=timestamp:12"), by_minute);
    let by_digest = runs(&all, &|r| r[2].clone());
    assert_eq!(lines("collapse=digest"), by_digest);
    let by_type = runs(&all, &|r| r[3].clone());
    assert_eq!(lines("collapse=mimetype"), by_type);
    // In turn: one line a URL, then of those one a minute.
    let both = runs(&by_url, &|r| r[1][..12].to_string());
    assert_eq!(lines("collapse=urlkey&collapse=timestamp:12"), both);
    // After the filters, before the limit.
    let html: Vec<_> = all
        .iter()
        .filter(|r| r[3] == "text/html")
        .cloned()
        .collect();
    let first = runs(&html, &|r| r[0].clone());
    assert_eq!(
        lines("filter==mime:text/html&collapse=urlkey&limit=3"),
        first[..3]
    );
    // `limit=-N`: the last N lines of the same answer, in its order.
    let tail = |v: &[Vec<String>], n: usize| v[v.len() - n..].to_vec();
    assert_eq!(lines("limit=-3"), tail(&all, 3));
    assert_eq!(lines("limit=-1"), tail(&all, 1));
    let mut newest = all.clone();
    newest.reverse();
    assert_eq!(lines("sort=reverse&limit=-2"), tail(&newest, 2));
    assert_eq!(lines("filter==mime:text/html&limit=-4"), tail(&html, 4));
    assert_eq!(lines("collapse=urlkey&limit=-5"), tail(&by_url, 5));
    assert_eq!(lines(&format!("limit=-{}", all.len() + 5)), all);
    // pywb's `collapseTime=N`: the first N digits of the timestamp and
    // the status, together.
    let with_status = |q: &str| fields("timestamp,status,url", q);
    let every = with_status("");
    let minute_status = runs(&every, &|r| format!("{} {}", &r[0][..12], r[1]));
    assert!(minute_status.len() < every.len());
    assert!(minute_status.len() > runs(&every, &|r| r[0][..12].to_string()).len());
    assert_eq!(with_status("collapseTime=12"), minute_status);
    assert_eq!(
        s.get("/archive/cdx?url=www.iana.org/&collapseTime=x")
            .status,
        400
    );
    for bad in ["nope", "timestamp:x"] {
        let r = s.get(&format!("/archive/cdx?url=www.iana.org/*&collapse={bad}"));
        assert_eq!(r.status, 400, "{bad}");
        assert!(r.text().contains("collapse="), "{}", r.text());
    }
}

/// The Internet Archive's resumption key, `offset` and counters: an
/// answer read in parts with `showResumeKey` and `resumeKey` is the whole
/// answer, whatever the filters, collapses and order; `offset` passes
/// over captures before the filters, as the Internet Archive's does; the
/// counters are worked out here from the whole answer.
#[test]
fn cdx_resumption_keys_read_an_answer_in_parts_and_counters_count_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let get = |q: &str| {
        // The fields compared, unless the query names its own.
        let fl = if q.contains("fl=") {
            ""
        } else {
            "&fl=urlkey,timestamp,digest,mime"
        };
        let r = s.get(&format!(
            "/archive/cdx?url=www.iana.org/*&output=text{fl}&{q}"
        ));
        assert_eq!(r.status, 200, "{q}: {}", r.text());
        r.text()
    };
    let rows = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split(' ').map(str::to_string).collect())
            .collect()
    };
    let all = rows(&get(""));
    assert!(all.len() > 100);

    // Parts of 7 lines, each key sent back as printed (the query's own
    // decoding makes it the key) or encoded once more (as a client's
    // URL library does): the parts are the answer, and the last part has
    // no key.
    let in_parts = |q: &str, encode_again: bool| -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut key: Option<String> = None;
        for _ in 0..200 {
            let mut url = format!("{q}&limit=7&showResumeKey=true");
            if let Some(k) = &key {
                let k = if encode_again {
                    k.replace('%', "%25").replace('+', "%2B")
                } else {
                    k.clone()
                };
                url.push_str(&format!("&resumeKey={k}"));
            }
            let text = get(&url);
            match text.split_once("\n\n") {
                Some((lines, k)) => {
                    let part = rows(lines);
                    assert_eq!(part.len(), 7, "{url}");
                    out.extend(part);
                    let k = k.trim_end_matches('\n');
                    assert!(!k.is_empty() && !k.contains([' ', '\n']), "{k:?}");
                    key = Some(k.to_string());
                }
                None => {
                    let part = rows(&text);
                    assert!(part.len() <= 7, "{url}");
                    out.extend(part);
                    return out;
                }
            }
        }
        panic!("{q}: no last part in 200");
    };
    assert_eq!(in_parts("", false), all);
    assert_eq!(in_parts("", true), all);
    let mut newest = all.clone();
    newest.reverse();
    assert_eq!(in_parts("sort=reverse", true), newest);
    // A collapse goes on across the parts as in one answer.
    let html_urls = rows(&get("filter==mime:text/html&collapse=urlkey"));
    assert!(html_urls.len() > 14);
    assert_eq!(
        in_parts("filter==mime:text/html&collapse=urlkey", false),
        html_urls
    );
    // An answer that ends at its limit has no key.
    let n = all.len();
    assert!(!get(&format!("limit={n}&showResumeKey=true")).contains("\n\n"));
    // JSON: the key is the last line's object.
    let r = s.get("/archive/cdx?url=www.iana.org/*&output=json&limit=2&showResumeKey=true");
    let json = json_lines(&r.text());
    assert_eq!(json.len(), 3, "{}", r.text());
    let key = json[2]["resumeKey"].as_str().unwrap().to_string();
    let r = s.get(&format!(
        "/archive/cdx?url=www.iana.org/*&output=json&limit=1&resumeKey={key}"
    ));
    let next = json_lines(&r.text());
    assert_eq!(next.len(), 1);
    assert_eq!(next[0]["timestamp"], all[2][1]);
    // The Internet Archive's shape of key, a URL key and a timestamp one
    // past a capture's: the captures after it.
    let ia = format!("{} {}", all[9][0], all[9][1].parse::<u64>().unwrap() + 1);
    let after: Vec<_> = all[10..]
        .iter()
        .filter(|r| r[0] != all[9][0] || r[1] > all[9][1])
        .take(3)
        .cloned()
        .collect();
    let ia = ia.replace(' ', "+").replace(',', "%2C").replace(')', "%29");
    assert_eq!(rows(&get(&format!("limit=3&resumeKey={ia}"))), after);

    // `fl` takes the Internet Archive's names, and answers under them.
    assert_eq!(
        get("fl=original,statuscode,mimetype&limit=20"),
        get("fl=url,status,mime&limit=20")
    );
    let r = s.get("/archive/cdx?url=www.iana.org/*&output=json&limit=1&fl=original,t");
    let l = &json_lines(&r.text())[0];
    assert_eq!(
        (l["original"].as_str(), l["t"].as_str()),
        (Some("http://www.iana.org/"), Some(all[0][1].as_str()))
    );

    // `offset`: captures passed over before the filters.
    assert_eq!(rows(&get("offset=5&limit=3")), all[5..8]);
    let html_after: Vec<_> = all[40..]
        .iter()
        .filter(|r| r[3] == "text/html")
        .cloned()
        .collect();
    assert_eq!(rows(&get("offset=40&filter==mime:text/html")), html_after);

    // `dupecount`: the lines before with the same digest.
    let dupes = rows(&get("showDupeCount=true&fl=digest,dupecount"));
    assert_eq!(dupes.len(), all.len());
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    let mut repeated = 0;
    for (d, a) in dupes.iter().zip(&all) {
        let n = seen.entry(a[2].as_str()).or_default();
        assert_eq!(
            (d[0].as_str(), d[1].parse::<usize>().unwrap()),
            (a[2].as_str(), *n)
        );
        repeated += usize::from(*n > 0);
        *n += 1;
    }
    assert!(repeated > 10);
    // Without `fl`, the counter follows the fields; in JSON, as a string.
    let r = s.get("/archive/cdx?url=www.iana.org/*&output=json&limit=3&showDupeCount=true");
    let json = json_lines(&r.text());
    assert_eq!(json.len(), 3);
    for (l, d) in json.iter().zip(&dupes) {
        assert_eq!(l["dupecount"], d[1].as_str(), "{l}");
    }
    let r = s.get("/archive/cdx?url=www.iana.org/*&limit=1&showDupeCount=true");
    assert!(
        r.text().ends_with(", \"dupecount\": \"0\"}\n"),
        "{}",
        r.text()
    );

    // The groups of `collapse=urlkey`: each URL's first capture, with
    // how many of its captures were passed over and the last's timestamp.
    let mut groups: Vec<(Vec<String>, usize, String)> = Vec::new();
    for r in &all {
        match groups.last_mut() {
            Some((first, skipped, end)) if first[0] == r[0] => {
                *skipped += 1;
                *end = r[1].clone();
            }
            _ => groups.push((r.clone(), 0, r[1].clone())),
        }
    }
    let want: Vec<Vec<String>> = groups
        .iter()
        .map(|(f, n, end)| {
            vec![
                f[0].clone(),
                n.to_string(),
                (n + 1).to_string(),
                end.clone(),
            ]
        })
        .collect();
    assert!(want.iter().any(|w| w[1] != "0"));
    let q = "collapse=urlkey&showSkipCount=true&showGroupCount=true&lastSkipTimestamp=true\
             &fl=urlkey,skipcount,groupcount,endtimestamp";
    assert_eq!(rows(&get(q)), want);
    // At a limit, the last line's group is still counted to its end.
    assert_eq!(rows(&get(&format!("{q}&limit=4"))), want[..4]);
    assert_eq!(rows(&get(&format!("{q}&limit=-2"))), want[want.len() - 2..]);

    // What cannot go together, or is not a number: 400, saying why.
    for q in [
        "sort=closest&closest=2014&offset=1",
        "page=0&showResumeKey=true",
        "limit=-2&resumeKey=x",
        "output=link&showDupeCount=true",
        "offset=x",
    ] {
        let r = s.get(&format!("/archive/cdx?url=www.iana.org/&{q}"));
        assert_eq!(r.status, 400, "{q}: {}", r.text());
    }
}

/// The Internet Archive's CDX server at its own path, for clients written
/// against it: the same captures as pywb's API, in the
/// Internet Archive's outputs. Text: its seven fields, space-separated.
/// `output=json`: one array, its first row the fields' names, the others a
/// capture's values; a resumption key after an empty row; `[]` for no
/// capture. `showNumPages`: the number alone. No fuzzy answer (that
/// server has none), and pywb's other outputs refused.
#[test]
fn cdx_at_the_internet_archives_path_answers_in_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let q = "url=www.iana.org/*&limit=20";
    let text = s.get(&format!("/cdx/search/cdx?{q}"));
    assert_eq!(text.status, 200, "{}", text.text());
    assert_eq!(text.header("content-type"), Some("text/plain"));
    let pywb = s.get(&format!(
        "/archive/cdx?{q}&output=text&fl=urlkey,timestamp,original,mimetype,statuscode,digest,length"
    ));
    assert_eq!(text.text(), pywb.text());
    let lines: Vec<String> = text.text().lines().map(String::from).collect();
    assert_eq!(lines.len(), 20);
    assert!(lines.iter().all(|l| l.split(' ').count() == 7), "{lines:?}");

    let rows = |r: &Resp| -> Vec<Vec<String>> {
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect()
            })
            .collect()
    };
    let json = rows(&s.get(&format!("/cdx/search/cdx?{q}&output=json")));
    assert_eq!(
        json[0].join(" "),
        "urlkey timestamp original mimetype statuscode digest length"
    );
    assert_eq!(json.len(), 21);
    for (row, line) in json[1..].iter().zip(&lines) {
        assert_eq!(&row.join(" "), line);
    }
    // Fields named, and counters after the seven.
    let two = rows(&s.get(&format!(
        "/cdx/search/cdx?{q}&output=json&fl=timestamp,mimetype"
    )));
    assert_eq!(two[0], ["timestamp", "mimetype"]);
    assert!(two[1..].iter().all(|r| r.len() == 2));
    assert_eq!(two[1], [json[1][1].clone(), json[1][3].clone()]);
    let counted = rows(&s.get(
        "/cdx/search/cdx?url=www.iana.org/*&output=json&collapse=urlkey&showSkipCount=true&lastSkipTimestamp=true&limit=5",
    ));
    assert_eq!(&counted[0][7..], ["skipcount", "endtimestamp"]);
    assert!(counted[1..].iter().all(|r| r.len() == 9), "{counted:?}");
    // A resumption key: an empty row, then the key's; the next part
    // follows on.
    let part =
        rows(&s.get("/cdx/search/cdx?url=www.iana.org/*&output=json&limit=5&showResumeKey=true"));
    assert_eq!(part.len(), 8, "{part:?}");
    assert_eq!(&part[1..6], &json[1..6]);
    assert!(part[6].is_empty());
    // Sent back as printed (encoded once), as the Internet Archive says.
    let key = &part[7][0];
    let next = rows(&s.get(&format!(
        "/cdx/search/cdx?url=www.iana.org/*&output=json&limit=5&resumeKey={key}"
    )));
    assert_eq!(&next[1..], &json[6..11]);
    // Nothing: `[]`, and no fuzzy answer: pywb's API answers this cache
    // buster with the captures of the URL without it.
    let buster = "url=http://www.iana.org/_css/2013.1/screen.css%3F_%3D1390767400";
    let r = s.get(&format!("/cdx/search/cdx?{buster}&output=json"));
    assert_eq!(r.text(), "[]\n");
    let fuzzy = s.get(&format!("/archive/cdx?{buster}&output=json"));
    assert!(fuzzy.text().contains("is_fuzzy"), "{}", fuzzy.text());
    // fastLatest: the latest captures, as a negative limit gives them;
    // without a limit, the latest alone.
    let url = "url=www.iana.org/_css/2013.1/fonts/opensans-bold.ttf";
    let latest = |q: &str| s.get(&format!("/cdx/search/cdx?{url}&{q}")).text();
    let all = latest("");
    assert!(all.lines().count() > 3);
    assert_eq!(latest("fastLatest=true&limit=3"), latest("limit=-3"));
    assert_eq!(latest("fastLatest=true&limit=-3"), latest("limit=-3"));
    assert_eq!(latest("fastLatest=true"), latest("limit=-1"));
    assert_eq!(
        latest("limit=-1"),
        format!("{}\n", all.lines().last().unwrap())
    );
    // Pages: the number alone.
    let r = s.get("/cdx/search/cdx?url=www.iana.org/*&showNumPages=true");
    assert_eq!(r.text(), "1\n");
    let r = s.get("/cdx/search/cdx?url=www.iana.org/&output=cdxj");
    assert_eq!(r.status, 400);
}

#[test]
fn cdx_api_answers_as_pywb() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let r = s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json");
    assert_eq!(r.status, 200);
    let lines = json_lines(&r.text());
    // One response, then fifteen revisits of it.
    assert_eq!(lines.len(), 16, "{}", r.text());
    for l in &lines {
        assert_eq!(l["urlkey"], "org,iana)/_css/2013.1/screen.css");
        assert!(
            l["url"]
                .as_str()
                .unwrap()
                .ends_with("://www.iana.org/_css/2013.1/screen.css")
        );
        assert_eq!(l["filename"], "iana.warc.gz");
        assert!(l["offset"].as_str().unwrap().parse::<u64>().is_ok());
        assert_eq!(l["digest"], "BUAEPXZNN44AIX3NLXON4QDV6OY2H5QD");
    }
    assert_eq!(lines[0]["mime"], "text/css");
    assert_eq!(lines[1]["mime"], "warc/revisit");
    assert_eq!(lines[0]["timestamp"], "20140126200625");
    assert!(
        lines
            .windows(2)
            .all(|w| w[0]["timestamp"].as_str() <= w[1]["timestamp"].as_str())
    );
    // The same entries `warchest index` writes.
    let out = bin()
        .arg("index")
        .arg(fixture("pywb/iana.warc.gz"))
        .output()
        .unwrap();
    let index = String::from_utf8(out.stdout).unwrap();
    for l in &lines {
        let want = format!(
            "org,iana)/_css/2013.1/screen.css {} ",
            l["timestamp"].as_str().unwrap()
        );
        let line = index
            .lines()
            .find(|x| x.starts_with(&want))
            .expect("in the index");
        assert!(line.contains(&format!(
            "\"offset\": \"{}\"",
            l["offset"].as_str().unwrap()
        )));
    }
    // Reverse order, limit, fields, time range, prefix and host matching.
    let rev = json_lines(
        &s.get(
            "/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&sort=reverse",
        )
        .text(),
    );
    assert_eq!(rev[0]["timestamp"], lines[15]["timestamp"]);
    assert_eq!(rev.len(), 16);
    let one = json_lines(&s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&limit=1&fl=timestamp,status").text());
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].as_object().unwrap().len(), 2);
    assert_eq!(one[0]["status"], "200");
    let late = json_lines(&s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&from=20140126200630").text());
    assert_eq!(late.len(), 15);
    assert_eq!(late[0]["timestamp"], "20140126200653");
    let range = json_lines(&s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&from=20140126200630&to=20140126200710").text());
    assert_eq!(range.len(), 2);
    let closest = json_lines(&s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&sort=closest&closest=20140126200707&limit=2").text());
    assert_eq!(closest[0]["timestamp"], "20140126200706");
    assert_eq!(closest.len(), 2);
    let prefix = json_lines(
        &s.get("/archive/cdx?url=http://www.iana.org/_css/&matchType=prefix&output=json")
            .text(),
    );
    assert!(prefix.len() > 2);
    assert!(
        prefix
            .iter()
            .all(|l| l["urlkey"].as_str().unwrap().starts_with("org,iana)/_css/"))
    );
    let star = json_lines(
        &s.get("/archive/cdx?url=www.iana.org/_css/*&output=json")
            .text(),
    );
    assert_eq!(star.len(), prefix.len());
    let host = json_lines(
        &s.get("/archive/cdx?url=iana.org&matchType=host&output=json")
            .text(),
    );
    assert!(host.len() > prefix.len());
    let domain = json_lines(&s.get("/archive/cdx?url=*.iana.org&output=json").text());
    assert_eq!(domain.len(), host.len());
    // Filters as pywb's: containing, equal (`=`), a regular expression
    // from the start (`~`), negated (`!`); the limit counts what passes.
    let fl = json_lines(&s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&filter=!mime:warc/revisit").text());
    assert_eq!(fl.len(), 1);
    assert_eq!(fl[0]["mime"], "text/css");
    let css = "/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json";
    assert_eq!(
        json_lines(&s.get(&format!("{css}&filter=mime:css")).text()).len(),
        1
    );
    assert_eq!(
        json_lines(&s.get(&format!("{css}&filter==mime:css")).text()).len(),
        0
    );
    assert_eq!(
        json_lines(&s.get(&format!("{css}&filter==mime:text/css")).text()).len(),
        1
    );
    assert_eq!(
        json_lines(&s.get(&format!("{css}&filter=~mime:.*/revisit$")).text()).len(),
        15
    );
    assert_eq!(
        json_lines(&s.get(&format!("{css}&filter=!~mime:text/")).text()).len(),
        15
    );
    let bad = s.get(&format!("{css}&filter=~mime:("));
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("filter=~mime:("), "{}", bad.text());
    // Without a field, the whole line (as pywb's).
    assert_eq!(
        json_lines(&s.get(&format!("{css}&filter=text/css")).text()).len(),
        1
    );
    let fl = json_lines(&s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&filter=mime:warc/revisit&filter=~url:https:&limit=5").text());
    assert_eq!(fl.len(), 1, "one revisit of the https URL");
    let fl = json_lines(&s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json&filter=mime:warc/revisit&limit=3").text());
    assert_eq!(fl.len(), 3);
    assert!(fl.iter().all(|l| l["mime"] == "warc/revisit"));
    // CDXJ by default.
    let cdxj = s.get("/archive/cdx?url=http://www.iana.org/");
    assert!(cdxj.text().starts_with("org,iana)/ 20140126200624 {\"url\": \"http://www.iana.org/\", \"mime\": \"text/html\", \"status\": \"200\""), "{}", cdxj.text());
    // Bad input.
    assert_eq!(s.get("/archive/cdx").status, 400);
    assert_eq!(s.get("/archive/cdx?url=x&matchType=bogus").status, 400);
    assert_eq!(s.get("/archive/cdx?url=x&limit=many").status, 400);
}

#[test]
fn memento_timegate_and_timemap() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let r = get(
        &s.addr,
        "/archive/http://www.iana.org/_css/2013.1/screen.css",
        &[("Accept-Datetime", "Sun, 26 Jan 2014 20:06:50 GMT")],
    );
    assert_eq!(r.status, 302);
    assert_eq!(r.header("Vary"), Some("accept-datetime"));
    assert_eq!(
        r.header("Location"),
        Some("/archive/20140126200653/http://www.iana.org/_css/2013.1/screen.css")
    );
    let link = r.header("Link").unwrap();
    assert!(
        link.contains("<http://www.iana.org/_css/2013.1/screen.css>; rel=\"original\""),
        "{link}"
    );
    assert!(link.contains("rel=\"timemap\""), "{link}");
    let early = get(
        &s.addr,
        "/archive/http://www.iana.org/_css/2013.1/screen.css",
        &[("Accept-Datetime", "Wed, 01 Jan 2014 00:00:00 GMT")],
    );
    assert_eq!(
        early.header("Location"),
        Some("/archive/20140126200625/http://www.iana.org/_css/2013.1/screen.css")
    );
    let bad = get(
        &s.addr,
        "/archive/http://www.iana.org/",
        &[("Accept-Datetime", "soon")],
    );
    assert_eq!(bad.status, 400);

    let tm = s.get("/archive/timemap/link/http://www.iana.org/_css/2013.1/screen.css");
    assert_eq!(tm.status, 200);
    assert_eq!(tm.header("Content-Type"), Some("application/link-format"));
    let t = tm.text();
    assert!(
        t.starts_with("<http://www.iana.org/_css/2013.1/screen.css>; rel=\"original\",\n"),
        "{t}"
    );
    assert!(t.contains("rel=\"self\"; type=\"application/link-format\"; from=\"Sun, 26 Jan 2014 20:06:25 GMT\"; until=\"Sun, 26 Jan 2014 20:13:07 GMT\""), "{t}");
    assert!(t.contains(&format!("<http://{}/archive/20140126200625/http://www.iana.org/_css/2013.1/screen.css>; rel=\"first memento\"; datetime=\"Sun, 26 Jan 2014 20:06:25 GMT\"", s.addr)), "{t}");
    assert!(
        t.contains("rel=\"last memento\"; datetime=\"Sun, 26 Jan 2014 20:13:07 GMT\""),
        "{t}"
    );
    assert_eq!(t.matches("memento\"").count(), 16);
    assert_eq!(
        s.get("/archive/timemap/link/http://nowhere.example/")
            .status,
        404
    );
}

#[test]
fn replays_pages_with_rewritten_links_and_banner() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let r = s.rget(&format!("/archive/{IANA_TS}/http://www.iana.org/"));
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Memento-Datetime"),
        Some("Sun, 26 Jan 2014 20:06:24 GMT")
    );
    assert!(r.header("Content-Type").unwrap().starts_with("text/html"));
    let html = r.text();
    assert!(html.contains("id=\"warchest-banner\""), "banner");
    assert!(
        html.contains(
            "captured <time id=\"warchest-banner-date\" datetime=\"2014-01-26T20:06:24Z\">"
        )
    );
    assert!(html.contains("<script src=\"/_/client.js\"></script>"));
    assert!(
        html.contains(&format!(
            "/archive/{IANA_TS}cs_/http://www.iana.org/_css/2013.1/screen.css"
        )),
        "stylesheet rewritten"
    );
    assert!(
        html.contains(&format!(
            "/archive/{IANA_TS}js_/http://www.iana.org/_js/2013.1/jquery.js"
        )),
        "script rewritten"
    );
    assert!(
        html.contains(&format!("/archive/{IANA_TS}/http://www.iana.org/domains")),
        "link rewritten"
    );
    assert!(
        !html.contains("href=\"/_css/"),
        "no root-relative link left"
    );
    // The raw capture is the archived payload, byte for byte.
    let raw = s.rget(&format!("/archive/{IANA_TS}id_/http://www.iana.org/"));
    let out = bin()
        .args(["extract", "--payload", "--offset"])
        .arg(cdx_offset(&s, "http://www.iana.org/", IANA_TS))
        .arg(fixture("pywb/iana.warc.gz"))
        .output()
        .unwrap();
    assert_eq!(raw.body, out.stdout);
    // CSS: url() rewritten; another time redirects to the capture's.
    let css = s.rget("/archive/20140126200625cs_/http://www.iana.org/_css/2013.1/screen.css");
    assert_eq!(css.status, 200);
    assert!(
        css.text()
            .contains("url(/archive/20140126200625im_/http://www.iana.org/_css/2013.1/fonts/")
            || css
                .text()
                .contains("url('/archive/20140126200625im_/http://www.iana.org/_css/2013.1/fonts/")
            || css.text().contains(
                "url(\"/archive/20140126200625im_/http://www.iana.org/_css/2013.1/fonts/"
            ),
        "{}",
        css.text()
    );
    let redirect = s.rget("/archive/2014/http://www.iana.org/");
    assert_eq!(redirect.status, 302);
    assert_eq!(
        redirect.header("Location"),
        Some(&*format!("/archive/{IANA_TS}/http://www.iana.org/"))
    );
    // A revisit is served with its original's payload.
    let revisit = s.rget("/archive/20140126200653js_/http://www.iana.org/_js/2013.1/jquery.js");
    assert_eq!(revisit.status, 200);
    assert_eq!(
        revisit.header("Memento-Datetime"),
        Some("Sun, 26 Jan 2014 20:06:53 GMT")
    );
    let original = s.rget("/archive/20140126200625id_/http://www.iana.org/_js/2013.1/jquery.js");
    assert!(original.body.len() > 10_000);
    let revisit_raw = s.rget("/archive/20140126200653id_/http://www.iana.org/_js/2013.1/jquery.js");
    assert_eq!(revisit_raw.body, original.body);
    // Not archived.
    let miss = s.rget("/archive/2014/http://nowhere.example/");
    assert_eq!(miss.status, 404);
    assert!(miss.text().contains("no capture"));
    let line = format!("access: GET /archive/{IANA_TS}/http://www.iana.org/ 200 from=archive");
    let log = s.log_with(&line);
    assert!(log.contains(&line), "{log}");
}

fn cdx_offset(s: &Server, url: &str, ts: &str) -> String {
    let lines = json_lines(&s.get(&format!("/archive/cdx?url={url}&output=json")).text());
    let l = lines
        .iter()
        .find(|l| l["timestamp"] == ts)
        .expect("capture");
    l["offset"].as_str().unwrap().to_string()
}

#[test]
fn pages_search_captures_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let home = s.get("/");
    assert_eq!(home.status, 200);
    assert!(home.text().contains("iana.warc.gz"));
    let found = s.get("/archive/search?url=iana.org&match=host");
    assert_eq!(found.status, 200);
    let t = found.text();
    assert!(
        t.contains("href=\"/archive/*/http://www.iana.org/\""),
        "{t}"
    );
    assert!(t.contains("http://www.iana.org/_css/2013.1/screen.css"));
    let prefix = s
        .get("/archive/search?url=http://www.iana.org/_css/&match=prefix")
        .text();
    assert!(prefix.contains("screen.css") && !prefix.contains("jquery.js"));
    let exact = s.get("/archive/search?url=http://www.iana.org/&match=exact");
    assert_eq!(exact.status, 302);
    let caps = s
        .get("/archive/*/http://www.iana.org/_css/2013.1/screen.css")
        .text();
    assert!(caps.contains("16 captures"), "{caps}");
    assert!(caps.contains("/archive/20140126200653/http://www.iana.org/_css/2013.1/screen.css"));

    let off = cdx_offset(
        &s,
        "http://www.iana.org/_img/2013.1/iana-logo-homepage.png",
        "20140126200625",
    );
    let rec = s.get(&format!("/archive/record/0/{off}"));
    assert_eq!(rec.status, 200);
    let t = rec.text();
    assert!(t.contains("WARC-Type: response"), "{t}");
    assert!(t.contains("Content-Type: image/png"));
    assert!(t.contains("id=\"payload-image\""));
    assert!(t.contains("id=\"findings\""));
    let png = s.rget(&format!("/archive/record/0/{off}/payload"));
    assert_eq!(png.header("Content-Type"), Some("image/png"));
    assert!(png.body.starts_with(b"\x89PNG"));
    // The record downloads as stored: the bytes of the file at its offset.
    let warc = s.rget(&format!("/archive/record/0/{off}/warc"));
    assert_eq!(warc.header("Content-Type"), Some("application/warc"));
    let file = std::fs::read(fixture("pywb/iana.warc.gz")).unwrap();
    let o: usize = off.parse().unwrap();
    assert_eq!(&file[o..o + warc.body.len()], &warc.body[..]);
    let mut gz = flate2::read::GzDecoder::new(&warc.body[..]);
    let mut text = Vec::new();
    gz.read_to_end(&mut text).unwrap();
    assert!(text.starts_with(b"WARC/1.0\r\n"));
    let whole = s.rget("/archive/file/0");
    assert_eq!(whole.body, file);
    // A text record shows its payload; a bad request is refused.
    let off = cdx_offset(
        &s,
        "http://www.iana.org/_css/2013.1/screen.css",
        "20140126200625",
    );
    assert!(
        s.get(&format!("/archive/record/0/{off}"))
            .text()
            .contains("id=\"payload-text\"")
    );
    assert_eq!(s.get("/archive/record/0/1").status, 404);
    assert_eq!(s.get("/archive/record/99/0").status, 404);
    assert_eq!(s.get("/other/").status, 404);
}

#[test]
fn bad_requests_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let big = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(40_000));
    let _ = c.write_all(big.as_bytes());
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 431"), "{out}");
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.write_all(b"BREW /pot HTTP/1.1\r\n\r\n").unwrap();
    let mut out = String::new();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = c.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 405"), "{out}");
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.write_all(b"garbage\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    // Still serving.
    assert_eq!(s.get("/").status, 200);
}

#[test]
fn new_files_are_picked_up() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::copy(
        fixture("pywb/example.warc.gz"),
        data.join("example.warc.gz"),
    )
    .unwrap();
    let s = Server::start(&[&data], &dir.path().join("i.redb"), &["--poll", "1"]);
    assert_eq!(
        json_lines(
            &s.get("/archive/cdx?url=http://www.iana.org/&output=json")
                .text()
        )
        .len(),
        0
    );
    std::fs::copy(fixture("pywb/iana.warc.gz"), data.join("iana.warc.gz.open")).unwrap();
    std::fs::rename(data.join("iana.warc.gz.open"), data.join("iana.warc.gz")).unwrap();
    let start = Instant::now();
    loop {
        let n = json_lines(
            &s.get("/archive/cdx?url=http://www.iana.org/&output=json")
                .text(),
        )
        .len();
        if n == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not picked up: {}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        s.rget(&format!("/archive/{IANA_TS}/http://www.iana.org/"))
            .status,
        200
    );
    // Removed from the directory: dropped at a poll, named and counted,
    // its captures no longer listed; the other file's kept.
    let example = |s: &Server| {
        json_lines(
            &s.get("/archive/cdx?url=http://example.com/&matchType=domain&output=json")
                .text(),
        )
        .len()
    };
    let examples = example(&s);
    assert!(examples > 0);
    std::fs::remove_file(data.join("iana.warc.gz")).unwrap();
    let log = s.log_with("no longer there: ");
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("iana.warc.gz: no longer there")),
        "{log}"
    );
    assert!(log.contains("1 file no longer there: "), "{log}");
    assert!(
        json_lines(
            &s.get("/archive/cdx?url=http://www.iana.org/&output=json")
                .text()
        )
        .is_empty()
    );
    assert_eq!(example(&s), examples);
}

#[test]
fn serves_from_a_cdxj_index() {
    let dir = tempfile::tempdir().unwrap();
    let cdxj = dir.path().join("iana.cdxj");
    let out = bin()
        .args(["index", "--sort", "-o"])
        .arg(&cdxj)
        .arg(fixture("pywb/iana.warc.gz"))
        .output()
        .unwrap();
    assert!(out.status.success());
    // Damage in the index: a line that is not CDXJ (line N), and a line
    // of a file not served (not damage, counted apart).
    let mut text = std::fs::read_to_string(&cdxj).unwrap();
    let bad_line = text.lines().count() + 1;
    text.push_str("org,iana)/ 2014 this is not json\n");
    text.push_str(
        "org,iana)/ 20140126200624 {\"url\": \"http://www.iana.org/\", \"filename\": \"gone.warc.gz\", \"offset\": \"0\"}\n",
    );
    std::fs::write(&cdxj, text).unwrap();
    let s = Server::start(
        &[&fixture("pywb/iana.warc.gz")],
        &dir.path().join("c.redb"),
        &["--poll", "0", "--cdxj", cdxj.to_str().unwrap()],
    );
    // Said on stderr by default, at warn, naming the index and the line.
    let log = s.log_with("of files not served");
    let said = format!("iana.cdxj: 1 line is not CDXJ, skipped (line {bad_line})");
    assert!(
        log.lines().any(|l| l.contains("WARN") && l.contains(&said)),
        "{log}"
    );
    assert!(
        log.lines().any(|l| l.contains("WARN")
            && l.contains("1 line of files not served, skipped (gone.warc.gz); 1 line not CDXJ")),
        "{log}"
    );
    let lines = json_lines(
        &s.get("/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json")
            .text(),
    );
    assert_eq!(lines.len(), 16);
    let r = s.rget(&format!("/archive/{IANA_TS}/http://www.iana.org/"));
    assert_eq!(r.status, 200);
    assert!(r.text().contains("warchest-banner"));
    // Revisits found through the index alone (same URL and digest).
    let revisit = s.rget("/archive/20140126200653id_/http://www.iana.org/_js/2013.1/jquery.js");
    assert_eq!(revisit.status, 200);
    assert!(revisit.body.len() > 10_000);
}

/// `warchest wacz create --title IANA` of the pywb fixtures iana.warc.gz and
/// example.warc.gz into `wacz`, asserting that it succeeds.
pub(crate) fn create_iana_wacz(wacz: &std::path::Path) {
    let out = bin()
        .args(["wacz", "create", "--title", "IANA"])
        .arg(fixture("pywb/iana.warc.gz"))
        .arg(fixture("pywb/example.warc.gz"))
        .arg("-o")
        .arg(wacz)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn wacz_create_validate_read_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    let wacz = dir.path().join("iana.wacz");
    create_iana_wacz(&wacz);
    let out = bin()
        .args(["wacz", "validate"])
        .arg(&wacz)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("valid (4 resources"), "{text}");
    if python_has("wacz") {
        let out = Command::new("python3")
            .args(["-m", "wacz", "validate", "-f"])
            .arg(&wacz)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "py-wacz: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("Validation succeeded"), "{text}");
    }
    // Reading commands take the WACZ: its WARC files, offsets as inside.
    let ls = bin().arg("ls").arg(&wacz).output().unwrap();
    let ls = String::from_utf8(ls.stdout).unwrap();
    assert!(ls.contains("http://www.iana.org/_css/2013.1/screen.css"));
    let idx = bin().arg("index").arg(&wacz).output().unwrap();
    let direct = bin()
        .arg("index")
        .arg(fixture("pywb/iana.warc.gz"))
        .output()
        .unwrap();
    let idx = String::from_utf8(idx.stdout).unwrap();
    for line in String::from_utf8(direct.stdout).unwrap().lines() {
        assert!(idx.contains(line), "{line}");
    }
    let check = bin().arg("check").arg(&wacz).output().unwrap();
    assert_ne!(
        check.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("iana.wacz#archive/iana.warc.gz"));
    let off = idx
        .lines()
        .find(|l| l.starts_with("org,iana)/ "))
        .and_then(|l| l.split("\"offset\": \"").nth(1))
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let ex = bin()
        .args(["extract", "--headers", "--offset", &off])
        .arg(format!("{}#archive/iana.warc.gz", wacz.display()))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&ex.stdout).contains("WARC-Target-URI: http://www.iana.org/"));
    // A damaged WACZ is found out.
    let mut bytes = std::fs::read(&wacz).unwrap();
    let at = bytes
        .windows(20)
        .position(|w| w == b"archive/iana.warc.gz")
        .unwrap();
    bytes[at + 500] ^= 0x20;
    let bad = dir.path().join("bad.wacz");
    std::fs::write(&bad, &bytes).unwrap();
    let out = bin().args(["wacz", "validate"]).arg(&bad).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Served: the pages replay from inside the WACZ.
    let s = Server::start(&[&wacz], &dir.path().join("w.redb"), &["--poll", "0"]);
    let r = s.rget(&format!("/archive/{IANA_TS}/http://www.iana.org/"));
    assert_eq!(r.status, 200);
    assert!(r.text().contains("warchest-banner"));
    let css = s.rget("/archive/20140126200625id_/http://www.iana.org/_css/2013.1/screen.css");
    assert_eq!(css.status, 200);
    assert!(css.text().contains("font-family"));
}

/// Decodes an 8-bit RGB or RGBA PNG (what Chromium writes) into rows.
pub(crate) fn png_pixels(png: &[u8]) -> (usize, usize, usize, Vec<u8>) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    let mut i = 8;
    let (mut w, mut h, mut channels) = (0usize, 0usize, 0usize);
    let mut idat = Vec::new();
    while i + 8 <= png.len() {
        let len = u32::from_be_bytes(png[i..i + 4].try_into().unwrap()) as usize;
        let kind = &png[i + 4..i + 8];
        let data = &png[i + 8..i + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "8-bit");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    c => panic!("colour type {c}"),
                };
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        i += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = w * channels;
    let mut out = vec![0u8; h * stride];
    for y in 0..h {
        let f = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= channels {
                out[y * stride + x - channels] as i32
            } else {
                0
            };
            let b = if y > 0 {
                out[(y - 1) * stride + x] as i32
            } else {
                0
            };
            let c = if x >= channels && y > 0 {
                out[(y - 1) * stride + x - channels] as i32
            } else {
                0
            };
            let pred = match f {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                4 => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => panic!("filter {f}"),
            };
            out[y * stride + x] = (line[x] as i32 + pred) as u8;
        }
    }
    (w, h, channels, out)
}

pub(crate) fn chromium() -> Option<PathBuf> {
    if std::env::var_os("WARCHEST_SKIP_BROWSER").is_some() {
        return None;
    }
    let p = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    assert!(
        p.is_some(),
        "headless Chromium is needed (apt-get install chromium), or set WARCHEST_SKIP_BROWSER=1"
    );
    p
}

pub(crate) fn run_chromium(exe: &Path, profile: &Path, args: &[String]) -> std::process::Output {
    let mut cmd = Command::new(exe);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-default-browser-check",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--no-pings",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .stdin(Stdio::null());
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn chromium_replays_from_the_archive_only() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    // The UI's page: the banner, and the page framed from the replay
    // origin.
    let page = format!("http://{}/archive/{IANA_TS}/http://www.iana.org/", s.addr);
    let framed = format!(
        "http://{}/archive/{IANA_TS}mp_/http://www.iana.org/",
        s.replay
    );
    let out = run_chromium(
        &exe,
        &dir.path().join("p1"),
        &[
            "--virtual-time-budget=5000".into(),
            "--dump-dom".into(),
            page.clone(),
        ],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("id=\"warchest-banner\""),
        "{dom}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dom.contains(&format!("src=\"{framed}\"")), "{dom}");
    // The DOM of the framed page after its scripts ran.
    let out = run_chromium(
        &exe,
        &dir.path().join("p1b"),
        &[
            "--virtual-time-budget=5000".into(),
            "--dump-dom".into(),
            framed.clone(),
        ],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("Internet Assigned Numbers Authority"), "{dom}");
    // Screenshot and network log.
    let shot = dir.path().join("shot.png");
    let netlog = dir.path().join("net.json");
    let out = run_chromium(
        &exe,
        &dir.path().join("p2"),
        &[
            "--virtual-time-budget=5000".into(),
            "--window-size=1024,768".into(),
            format!("--screenshot={}", shot.display()),
            format!("--log-net-log={}", netlog.display()),
            page.clone(),
        ],
    );
    let png = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let (w, h, ch, px) = png_pixels(&png);
    assert_eq!((w, h), (1024, 768));
    // Not blank: many distinct colours; the banner's dark blue across the
    // top rows.
    let mut colours = std::collections::BTreeSet::new();
    for p in px.chunks(ch) {
        colours.insert((p[0], p[1], p[2]));
    }
    assert!(colours.len() > 50, "{} colours", colours.len());
    let banner_px = (0..w)
        .filter(|&x| {
            let p = &px[3 * w * ch + x * ch..];
            (p[0], p[1], p[2]) == (0x1d, 0x35, 0x57)
        })
        .count();
    assert!(
        banner_px > w / 2,
        "banner colour in {banner_px} of {w} pixels of row 3"
    );
    // Every request the page made went to the server. Chromium's own
    // service requests (update checks, account lookups to Google hosts,
    // which flags do not all silence) are in the log too, and are not the
    // page's: nothing of the archived site may go anywhere but here.
    let log = std::fs::read_to_string(&netlog).unwrap_or_default();
    let ours = format!("http://{}/", s.addr);
    let replay_origin = format!("http://{}/", s.replay);
    let mut urls = Vec::new();
    for piece in log.split("\"url\":\"").skip(1) {
        let u = piece.split('"').next().unwrap_or("");
        if u.starts_with("http") || u.starts_with("ws") {
            urls.push(u.to_string());
        }
    }
    assert!(
        urls.iter().any(|u| u.starts_with(&ours)),
        "no request to the server in the net log"
    );
    let browser_own = |u: &str| {
        let host = u
            .split("://")
            .nth(1)
            .and_then(|r| r.split(['/', ':', '?']).next())
            .unwrap_or("");
        ["google.com", "googleapis.com", "gvt1.com", "gstatic.com"]
            .iter()
            .any(|d| host == *d || host.ends_with(&format!(".{d}")))
    };
    for u in &urls {
        assert!(
            u.starts_with(&ours) || u.starts_with(&replay_origin) || browser_own(u),
            "a request left the server: {u}"
        );
    }
    // And the server answered them from the archive: the stylesheet and
    // images among them.
    let log = s.log();
    let access: Vec<&str> = log.lines().filter(|l| l.contains("access: GET")).collect();
    assert!(
        access
            .iter()
            .any(|l| l.contains("cs_/http://www.iana.org/_css/2013.1/screen.css 200 from=archive")),
        "{log}"
    );
    assert!(
        access
            .iter()
            .any(|l| l.contains("im_/http://www.iana.org/_img/") && l.contains("200 from=archive")),
        "{log}"
    );
    for l in &access {
        assert!(
            l.contains(" from=archive")
                || l.contains(" from=static")
                || l.contains(" from=frame")
                || l.contains("/favicon.ico"),
            "not answered from the archive: {l}"
        );
    }
    // The search page finds the page.
    let out = run_chromium(
        &exe,
        &dir.path().join("p3"),
        &[
            "--dump-dom".into(),
            format!("http://{}/archive/search?url=iana.org&match=host", s.addr),
        ],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("href=\"/archive/*/http://www.iana.org/\""),
        "{dom}"
    );
}

#[test]
fn a_record_with_twenty_thousand_codings_does_not_bring_serve_down() {
    // One response record whose HTTP head names `chunked` 20,001
    // times in one Transfer-Encoding field: reading its payload used to overflow the
    // stack and abort the whole server.
    let dir = tempfile::tempdir().unwrap();
    let mut http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n".to_vec();
    http.extend_from_slice(b"Transfer-Encoding: chunked");
    http.extend_from_slice(&b", chunked".repeat(20_000));
    http.extend_from_slice(b"\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
    let mut warc = format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/\r\n\
         WARC-Date: 2024-01-02T03:04:05Z\r\n\
         WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n\
         Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
        http.len()
    )
    .into_bytes();
    warc.extend_from_slice(&http);
    warc.extend_from_slice(b"\r\n\r\n");
    let file = dir.path().join("codings.warc");
    std::fs::write(&file, &warc).unwrap();
    let s = Server::start(&[&file], &dir.path().join("index.redb"), &["--poll", "0"]);
    for path in [
        "/archive/20240102030405id_/http://a.example/",
        "/archive/20240102030405/http://a.example/",
        "/archive/record/0/0/payload",
    ] {
        // An error page that says why, not a crash or a response cut short.
        let r = s.rget(path);
        assert!(r.status >= 400, "{path}: {}", r.status);
        assert!(r.text().contains("codings"), "{path}: {}", r.text());
        assert_eq!(s.get("/").status, 200, "after {path}");
    }
    // The record's page is still shown, its header and download link, and
    // says why its payload has no preview.
    let page = s.get("/archive/record/0/0");
    assert_eq!(page.status, 200);
    let text = page.text();
    assert!(
        text.contains("payload-damage")
            && text.contains("could not be decoded")
            && text.contains("codings"),
        "{text}"
    );
    assert_eq!(s.get("/").status, 200, "after the record page");
    // The record as stored is still there to download.
    let raw = s.rget("/archive/record/0/0/warc");
    assert_eq!(raw.status, 200);
    assert_eq!(raw.body, warc);
}

#[test]
fn hosts_listen_address_and_isolation_headers() {
    let dir = tempfile::tempdir().unwrap();
    // A non-loopback address needs --public.
    let out = bin()
        .args(["serve", "--listen", "0.0.0.0:0", "--index-db"])
        .arg(dir.path().join("x.redb"))
        .arg(fixture("pywb/iana.warc.gz"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public"));
    let s = iana_server(&dir);
    // A foreign Host (DNS rebinding) is refused and not echoed.
    let with_host = |path: &str, host: &str| {
        let mut c = TcpStream::connect(&s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            c,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out
    };
    let r = with_host(
        &format!("/archive/{IANA_TS}/http://www.iana.org/"),
        "evil.example:80",
    );
    assert!(r.starts_with("HTTP/1.1 421"), "{r}");
    assert!(!r.contains("evil"), "{r}");
    let port = s.addr.rsplit(':').next().unwrap();
    let r = with_host("/", &format!("localhost:{port}"));
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    // Replay may load only from this server; raw documents are sandboxed.
    let page = s.rget(&format!("/archive/{IANA_TS}/http://www.iana.org/"));
    let csp = page.header("Content-Security-Policy").unwrap_or_default();
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    let raw = s.rget(&format!("/archive/{IANA_TS}id_/http://www.iana.org/"));
    assert_eq!(raw.status, 200);
    assert_eq!(raw.header("Content-Security-Policy"), Some("sandbox"));
    assert_eq!(raw.header("X-Content-Type-Options"), Some("nosniff"));
}

#[test]
fn apis_are_rate_limited_per_client() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        &[&fixture("pywb/iana.warc.gz")],
        &dir.path().join("index.redb"),
        &["--poll", "0", "--rate-limit", "2"],
    );
    // A burst of 4 (twice the rate) is allowed; more in the same instant
    // is not, and says when to come back. Asked until refused, up to 60
    // times: 12 asked at once were refused only while each took under a
    // third of a second (the tokens refill at 2 a second), which a loaded
    // machine need not give; 60 leave it half a second each.
    let mut codes: Vec<u16> = Vec::new();
    let mut refused = None;
    let t0 = std::time::Instant::now();
    while codes.len() < 60 && refused.is_none() {
        let r = s.get("/archive/cdx?url=http://www.iana.org/&limit=1");
        codes.push(r.status);
        if r.status == 429 {
            refused = Some(r);
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let ok = codes.iter().filter(|&&c| c == 200).count();
    assert!(ok >= 4, "{codes:?}");
    // No more than the burst and what the rate refilled meanwhile (the
    // limiter's burst is twice the rate: crates/warchest-serve/src/lib.rs).
    let most = 4 + (2.0 * elapsed).ceil() as usize + 1;
    assert!(ok <= most, "{ok} answered in {elapsed:.2} s: {codes:?}");
    let refused = refused.unwrap_or_else(|| panic!("never refused: {codes:?}"));
    assert_eq!(refused.header("Retry-After"), Some("1"));
    // Pages and replay are not limited.
    assert_eq!(s.get("/").status, 200);
    assert_eq!(
        s.rget(&format!("/archive/{IANA_TS}id_/http://www.iana.org/"))
            .status,
        200
    );
}

#[test]
fn search_page_says_what_was_asked_and_counts_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    let home = s.get("/").text();
    assert!(home.contains(" captures in 1 file.</p>"), "{home}");
    let host = s.get("/archive/search?url=iana.org&match=host").text();
    assert!(host.contains("<option value=\"host\" selected>"), "{host}");
    assert!(
        !host.contains("<option value=\"prefix\" selected>"),
        "{host}"
    );
    assert!(
        host.contains(" URLs of the host <code>iana.org</code>"),
        "{host}"
    );
    let domain = s.get("/archive/search?url=iana.org&match=domain").text();
    assert!(
        domain.contains("<option value=\"domain\" selected>"),
        "{domain}"
    );
    assert!(!domain.contains("starting with <code>"), "{domain}");
    let prefix = s
        .get("/archive/search?url=http://www.iana.org/_css/&match=prefix")
        .text();
    assert!(
        prefix.contains("<option value=\"prefix\" selected>"),
        "{prefix}"
    );
    assert!(
        prefix.contains(" URLs starting with <code>http://www.iana.org/_css/</code>"),
        "{prefix}"
    );
    let single = s
        .get("/archive/search?url=http://www.iana.org/_css/2013.1/screen.css&match=prefix")
        .text();
    assert!(
        single.contains("<p id=\"count\">1 URL starting with <code>"),
        "{single}"
    );
    let one = s
        .get("/archive/*/http://www.iana.org/_img/2013.1/iana-logo-homepage.png")
        .text();
    assert!(one.contains("<p id=\"count\">1 capture of "), "{one}");
}

#[test]
fn the_index_goes_to_the_cache_not_into_the_served_directory() {
    let data = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("pywb/example.warc.gz"),
        data.path().join("a.warc.gz"),
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.env("XDG_CACHE_HOME", cache.path())
        .arg("serve")
        .arg(data.path())
        .args(["--listen", "127.0.0.1:0", "--poll", "0"]);
    let s = Server::start_cmd(cmd);
    assert_eq!(s.get("/").status, 200);
    // Nothing written among the files served.
    let served: Vec<_> = common::files_in(data.path());
    assert_eq!(served, vec![data.path().join("a.warc.gz")], "{served:?}");
    // One store in the cache, keyed by the collection's path.
    let stores = common::files_in(&cache.path().join("warchest/serve"));
    assert_eq!(stores.len(), 1, "{stores:?}");
    let name = stores[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.ends_with(".redb"), "{name}");
    drop(s);
    // The same path finds the same store again.
    let mut cmd = bin();
    cmd.env("XDG_CACHE_HOME", cache.path())
        .arg("serve")
        .arg(data.path())
        .args(["--listen", "127.0.0.1:0", "--poll", "0"]);
    let s = Server::start_cmd(cmd);
    assert_eq!(s.get("/").status, 200);
    assert_eq!(
        common::files_in(&cache.path().join("warchest/serve")).len(),
        1
    );
}

#[test]
fn log_lines_have_no_colour_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let s = iana_server(&dir);
    assert_eq!(s.get("/").status, 200);
    // Standard error is a pipe: the log lines carry no colour codes. (The
    // log is gathered by a thread: waited for, as a busy machine lags.)
    let log = s.log_with("INFO");
    assert!(log.contains("INFO"), "{log:?}");
    assert!(!log.contains('\u{1b}'), "{log:?}");
}

/// A WACZ made by py-wacz with its default options: no pages, and a
/// compressed index (`indexes/index.cdx.gz` with `indexes/index.idx`).
/// Valid (pages are optional in the WACZ spec), and the entries of the
/// compressed index are checked against their records.
#[test]
fn wacz_validate_accepts_py_wacz_defaults_and_checks_compressed_index() {
    if !python_has("wacz") {
        eprintln!("skipped: py-wacz is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wacz = dir.path().join("example.wacz");
    let out = Command::new("python3")
        .args(["-m", "wacz", "create", "-o"])
        .arg(&wacz)
        .arg(fixture("pywb/example.warc.gz"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "py-wacz: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = warchest_wacz::entries(&wacz).unwrap();
    assert!(names.iter().any(|e| e.name == "indexes/index.idx"));
    assert!(!names.iter().any(|e| e.name == "pages/pages.jsonl"));

    let out = bin()
        .args(["wacz", "validate"])
        .arg(&wacz)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let checked: u64 = text
        .split(" index entries checked")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count: {text}"));
    assert!(checked > 0, "{text}");
}

/// Issue 19: a `.warc.zst` written with a trained dictionary (its
/// dictionary frame first) replays through `serve`: reading a record at
/// its offset finds the dictionary frame, as a full read does. Each
/// capture equals the one served from the original gzip file.
#[test]
fn serves_from_a_zstd_file_with_a_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let zst_dir = dir.path().join("zst");
    std::fs::create_dir(&zst_dir).unwrap();
    let zst = crate::tools::dict_zst(
        fixture("pywb/iana.warc.gz").to_str().unwrap(),
        &zst_dir.join("iana-dict.warc.zst"),
        &[],
    );
    let plain = iana_server(&dir);
    let dict = Server::start(&[&zst], &dir.path().join("zst.redb"), &["--poll", "0"]);
    for (ts, url) in [
        (IANA_TS, "http://www.iana.org/"),
        (
            "20140126200625",
            "http://www.iana.org/_css/2013.1/screen.css",
        ),
        ("20140126200625", "http://www.iana.org/_js/2013.1/jquery.js"),
        ("20140126200653", "http://www.iana.org/_js/2013.1/jquery.js"),
        (
            "20140126200625",
            "http://www.iana.org/_img/2013.1/iana-logo-homepage.png",
        ),
    ] {
        let want = plain.rget(&format!("/archive/{ts}id_/{url}"));
        assert_eq!(want.status, 200, "{url}");
        let got = dict.rget(&format!("/archive/{ts}id_/{url}"));
        assert_eq!(got.status, 200, "{ts} {url}: {}", got.text());
        assert!(!got.body.is_empty(), "{url}");
        assert_eq!(got.body, want.body, "{ts} {url}");
        // Not the dictionary's own frame: the record sits past it.
        let off: u64 = cdx_offset(&dict, url, ts).parse().unwrap();
        assert!(off > 0, "{url}");
    }
}

/// `--acl`, `--acl-user-header` and the embargo options: pywb's rule file
/// read, said on stderr, applied to the API and replay; a rule file or an
/// option that is wrong stops serve before it listens, saying where.
#[test]
fn access_control_options() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.aclj");
    std::fs::write(
        &rules,
        "org,iana)/ - {\"access\": \"block\"}\n\
         org,iana)/_css - {\"access\": \"exclude\"}\n\
         org,iana)/ - {\"access\": \"allow\", \"user\": \"staff\"}\n",
    )
    .unwrap();
    let acl = rules.to_str().unwrap();
    let s = Server::start(
        &[&fixture("pywb/iana.warc.gz")],
        &dir.path().join("index.redb"),
        &[
            "--poll",
            "0",
            "--acl",
            acl,
            "--acl-user-header",
            "X-Pywb-ACL-User",
            "--embargo-before",
            "2000",
        ],
    );
    assert!(
        s.log_with("access control")
            .contains("access control: 3 rule(s), default allow, an embargo"),
        "{}",
        s.log()
    );
    let css = s.get("/archive/cdx?url=www.iana.org/_css/2013.1/screen.css");
    assert_eq!(css.status, 200);
    assert_eq!(css.text(), "", "excluded");
    let page = format!("/archive/{IANA_TS}id_/http://www.iana.org/");
    assert_eq!(s.rget(&page).status, 451);
    let staff = get(&s.replay, &page, &[("X-Pywb-ACL-User", "staff")]);
    assert_eq!(staff.status, 200);
    drop(s);

    // Changed while serving: read again at the next look (--poll); a file
    // that then does not read leaves the rules in force, and says why.
    let s = Server::start(
        &[&fixture("pywb/iana.warc.gz")],
        &dir.path().join("index.redb"),
        &["--poll", "1", "--acl", acl],
    );
    assert_eq!(s.rget(&page).status, 451);
    std::fs::write(&rules, "org,iana)/_css - {\"access\": \"exclude\"}\n").unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while s.rget(&page).status != 200 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(s.rget(&page).status, 200, "{}", s.log());
    assert!(
        s.log_with("read again")
            .contains("access rules read again: 1 rule(s)")
    );
    std::fs::write(
        &rules,
        "org,iana)/ - {\"access\": \"exclude\"}\nnot a rule\n",
    )
    .unwrap();
    let log = s.log_with("do not read");
    assert!(log.contains("rules.aclj:2: the rule is not JSON"), "{log}");
    assert_eq!(s.rget(&page).status, 200, "the rules before stay");
    drop(s);

    std::fs::write(&rules, "org,iana)/ - {\"access\": \"hidden\"}\n").unwrap();
    let iana = fixture("pywb/iana.warc.gz");
    let db = dir.path().join("index.redb");
    for (extra, said) in [
        (vec!["--acl", acl], "rules.aclj:1: access is allow"),
        (
            vec!["--embargo-newer", "1x"],
            "--embargo-newer 1x: a period",
        ),
        (
            vec!["--embargo-after", "soon"],
            "--embargo-after soon: a timestamp",
        ),
    ] {
        let out = bin()
            .arg("serve")
            .arg(&iana)
            .args(["--listen", "127.0.0.1:0", "--index-db"])
            .arg(&db)
            .args(&extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?}");
        assert!(err.contains(said), "{extra:?}: {err}");
    }
}
