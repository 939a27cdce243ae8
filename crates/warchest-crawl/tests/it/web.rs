//! A small web on loopback for the engine's tests: a few hosts (a.test,
//! b.test, c.test and others for single tests) on one port, told apart by
//! the Host header, with every request recorded. (The generated many-host test web of the rules'
//! `testweb` module serves the larger crawls.)

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running server.
pub struct Web {
    pub port: u16,
    pub log: Arc<Mutex<Vec<String>>>,
    /// URLs answered 304 Not Modified (a conditional request matched).
    pub not_modified: Arc<Mutex<Vec<String>>>,
    /// Requests held while listed here (`host/path`, as `e.test/hold`):
    /// each waits for its entry to go (at most 60 s) before it is answered,
    /// so a test can hold a crawl at a known point, whatever the machine's
    /// speed.
    pub held: Arc<Mutex<Vec<String>>>,
}

impl Web {
    /// `http://HOST:PORT` + path.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    /// Every request served, as `http://host:port/path`, in order.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Holds requests of `key` (`host/path`) until [`Web::release`].
    pub fn hold(&self, key: &str) {
        self.held.lock().unwrap().push(key.to_string());
    }

    /// Lets every held request go.
    pub fn release(&self) {
        self.held.lock().unwrap().clear();
    }

    /// The `resolve` table of a crawl configuration.
    pub fn resolve_toml(&self) -> String {
        "resolve-only = true\n[resolve]\n\"a.test\" = \"127.0.0.1\"\n\"b.test\" = \"127.0.0.1\"\n\"c.test\" = \"127.0.0.1\"\n\"d.test\" = \"127.0.0.1\"\n\"e.test\" = \"127.0.0.1\"\n".into()
    }
}

/// Pages of d.test's tree.
pub const GEN: usize = 60;

pub const SAME: &str = "<html><body>the same page twice</body></html>";

fn page(host: &str, path: &str, port: u16) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let html = |s: String| {
        (
            200,
            vec![(
                "Content-Type".to_string(),
                "text/html; charset=utf-8".to_string(),
            )],
            s.into_bytes(),
        )
    };
    let other = |ct: &str, b: Vec<u8>| (200, vec![("Content-Type".to_string(), ct.to_string())], b);
    let nf = || {
        (
            404,
            vec![("Content-Type".to_string(), "text/plain".to_string())],
            b"not found".to_vec(),
        )
    };
    let moved = |to: String| (301, vec![("Location".to_string(), to)], Vec::new());
    match (host, path) {
        ("a.test", "/robots.txt") => other("text/plain", b"User-agent: *\nDisallow: /private\n".to_vec()),
        ("a.test", "/") => html(format!(
            "<html><head><title>Home</title><link rel=stylesheet href=/style.css></head><body>\
             <a href=/p1>one</a> <a href=/p2>two</a> <a href=/p3>three</a> <a href=/private/secret>no</a>\
             <a href=http://b.test:{port}/>away</a> <img src=http://c.test:{port}/img.png> <a href=/big>big</a>\
             </body></html>"
        )),
        ("a.test", "/p1") => html("<html><title>One</title><a href=/>home</a><a href=/p2>two</a><a href=/old>old</a></html>".into()),
        ("a.test", "/p2") | ("a.test", "/p3") => html(SAME.into()),
        ("a.test", "/old") => (301, vec![("Location".to_string(), "/p1new".to_string())], Vec::new()),
        ("a.test", "/p1new") => html("<html><title>New</title>moved here</html>".into()),
        ("a.test", "/style.css") => other("text/css", b"body { background: url(/bg.png) }".to_vec()),
        ("a.test", "/bg.png") => other("image/png", vec![0x89, b'P', b'N', b'G', 1, 2, 3]),
        ("a.test", "/big") => other("application/octet-stream", vec![b'x'; 100_000]),
        ("c.test", "/img.png") => other("image/png", vec![0x89, b'P', b'N', b'G', 9, 9]),
        ("b.test", "/") => html("<html>elsewhere</html>".into()),
        // A page with a frame, a fragment its script fetches, and a link.
        ("e.test", "/frames/") => html(
            "<html><title>Frames</title><iframe src=/frames/frame.html></iframe>\
             <a href=/frames/linked.html>linked</a>\
             <script>fetch(\"/frames/frag.html\")</script></html>"
                .into(),
        ),
        // Frames that are linked too: x.html by the page itself, y.html
        // by the frame f.html (fetched before y.html, an embed of the
        // same depth queued earlier), f.html by later.html (fetched after
        // f.html: it stays a frame).
        // A frame (r) that another frame (f.html, fetched first) links
        // to, and that redirects to t.html: the link's page standing
        // carries over the redirect.
        ("e.test", "/relinked/") => html(
            "<html><title>Relinked</title><iframe src=/relinked/f.html></iframe>\
             <iframe src=/relinked/r></iframe></html>"
                .into(),
        ),
        ("e.test", "/relinked/f.html") => html("<html><a href=/relinked/r>r</a></html>".into()),
        ("e.test", "/relinked/r") => (
            302,
            vec![("Location".to_string(), "/relinked/t.html".to_string())],
            Vec::new(),
        ),
        ("e.test", "/relinked/t.html") => html("<html><title>T</title>moved here</html>".into()),
        // The kill test of a frame's page standing: x.html, a frame of
        // /kill/ queued behind /kill/held (which the test holds), is
        // linked by b.test's linker, which /kill/ links to.
        ("e.test", "/kill/") => html(format!(
            "<html><iframe src=/kill/held></iframe><iframe src=/kill/x.html></iframe>\
             <a href=http://b.test:{port}/kill/linker>linker</a></html>"
        )),
        ("e.test", "/kill/held" | "/kill/x.html") => {
            html(format!("<html><title>{path}</title>{path}</html>"))
        }
        ("b.test", "/kill/") => html("<html>b.test's seed</html>".into()),
        ("b.test", "/kill/linker") => html(format!(
            "<html><a href=http://e.test:{port}/kill/x.html>x</a><a href=/kill/after>after</a></html>"
        )),
        ("b.test", "/kill/after") => html("<html>after</html>".into()),
        // Pages of the other HTML types: XHTML, and a Content-Type
        // written without its `;`.
        ("e.test", "/types/") => html(
            "<html><a href=/types/x.xhtml>x</a><a href=/types/nosemi.html>n</a></html>".into(),
        ),
        ("e.test", "/types/x.xhtml") => other(
            "application/xhtml+xml",
            b"<html xmlns=\"http://www.w3.org/1999/xhtml\"><title>X</title></html>".to_vec(),
        ),
        ("e.test", "/types/nosemi.html") => other(
            "Text/HTML charset=UTF-8",
            b"<html><title>N</title></html>".to_vec(),
        ),
        ("e.test", "/framed/") => html(
            "<html><title>Framed</title><iframe src=/framed/f.html></iframe>\
             <iframe src=/framed/x.html></iframe><iframe src=/framed/y.html></iframe>\
             <a href=/framed/x.html>x</a><a href=/framed/later.html>later</a></html>"
                .into(),
        ),
        ("e.test", "/framed/f.html") => html("<html><a href=/framed/y.html>y</a></html>".into()),
        ("e.test", "/framed/later.html") => {
            html("<html><a href=/framed/f.html>the frame</a></html>".into())
        }
        ("e.test", "/framed/x.html" | "/framed/y.html") => {
            html(format!("<html><title>{path}</title>{path}</html>"))
        }
        ("e.test", "/frames/frame.html" | "/frames/frag.html" | "/frames/linked.html") => {
            html(format!("<html><title>{path}</title>{path}</html>"))
        }
        // robots.txt moved: r.test's redirects twice (relative Locations),
        // s.test's once (an absolute one); the rules at the end keep
        // /secret/ out (each host's its own bytes, so neither is recorded
        // as a revisit of the other).
        ("r.test", "/robots.txt") => moved("/robots-moved.txt".into()),
        ("r.test", "/robots-moved.txt") => moved("/rules/robots.txt".into()),
        ("s.test", "/robots.txt") => moved(format!("http://s.test:{port}/rules/robots.txt")),
        ("r.test" | "s.test", "/rules/robots.txt") => {
            other("text/plain", format!("# {host}\nUser-agent: *\nDisallow: /secret/\n").into_bytes())
        }
        // robots.txt gzip-encoded: gz-ok.test's whole (its rules keep
        // /secret/ out), gz-bad.test's not gzip at all, gz-cut.test's cut
        // short (the rules of its first half would allow /secret/).
        ("gz-ok.test" | "gz-bad.test" | "gz-cut.test", "/robots.txt") => {
            let rules = format!("# {host}\nUser-agent: *\nAllow: /\n\n# padding\nDisallow: /secret/\n");
            let z = gzip(rules.as_bytes());
            let body = match host {
                "gz-ok.test" => z,
                "gz-bad.test" => rules.into_bytes(),
                _ => z[..z.len() / 2].to_vec(),
            };
            let (s, mut h, b) = other("text/plain", body);
            h.push(("Content-Encoding".to_string(), "gzip".to_string()));
            (s, h, b)
        }
        ("r.test" | "s.test" | "gz-ok.test" | "gz-bad.test" | "gz-cut.test", "/") => html(
            "<html><title>Moved rules</title><a href=/open.html>open</a>\
             <a href=/secret/page.html>secret</a></html>"
                .into(),
        ),
        (
            "r.test" | "s.test" | "gz-ok.test" | "gz-bad.test" | "gz-cut.test",
            "/open.html" | "/secret/page.html",
        ) => {
            html(format!("<html><title>{path}</title>{path}</html>"))
        }
        // Links cut short: a gzipped page cut in its middle (the link
        // before the cut is found, the one after is not), and a page of
        // more links than the test's `max-links-per-page = 4`.
        ("cut.test", "/") => html("<html><a href=/cut.html>c</a><a href=/many.html>m</a></html>".into()),
        ("cut.test", "/cut.html") => {
            // Letters that do not compress away, so the cut falls
            // between the two links.
            let mut x: u32 = 7;
            let pad: String = (0..20_000)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    char::from(b'a' + ((x >> 16) % 26) as u8)
                })
                .collect();
            let page = format!("<html><a href=/c1>1</a><p>{pad}</p><a href=/c2>2</a></html>");
            let z = gzip(page.as_bytes());
            let (s, mut h, _) = html(String::new());
            h.push(("Content-Encoding".to_string(), "gzip".to_string()));
            (s, h, z[..z.len() / 2].to_vec())
        }
        ("cut.test", "/many.html") => {
            html((0..10).map(|i| format!("<a href=/m{i}>{i}</a>")).collect())
        }
        // Extraction stopped, or a body cut (links_stopped.rs): a page
        // longer than the test's `max-extract-bytes = 1024` (a link
        // before the bound, one after), and a page whose server declares
        // more bytes than it sends and closes the connection (a link
        // before the cut).
        ("stop.test", "/size.html") => html(format!(
            "<html><a href=/s1>1</a><p>{}</p><a href=/s2>2</a></html>",
            "x".repeat(4096)
        )),
        ("stop.test", "/cut.html") => {
            let (s, mut h, _) = html(String::new());
            h.push(("Content-Length".to_string(), "100000".to_string()));
            (s, h, b"<html><a href=/t1>1</a><p>the rest never comes".to_vec())
        }
        ("stop.test", "/s1" | "/t1") => html("<html>here</html>".into()),
        // A tree of GEN pages on d.test: page i links to 2i+1 and 2i+2.
        ("d.test", p) if p.starts_with("/gen/") => {
            match p[5..].parse::<usize>() {
                Ok(i) if i < GEN => {
                    let mut b = format!("<html><title>gen {i}</title>");
                    for c in [2 * i + 1, 2 * i + 2].into_iter().filter(|&c| c < GEN) {
                        b.push_str(&format!("<a href=/gen/{c}>{c}</a>"));
                    }
                    html(b)
                }
                _ => nf(),
            }
        }
        _ => nf(),
    }
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// a.test's validators, for recrawls: an ETag on its pages, a
/// Last-Modified on everything else it serves with 200.
fn validator(host: &str, path: &str, ct: &str) -> Option<(&'static str, String)> {
    if host != "a.test" {
        return None;
    }
    Some(if ct.starts_with("text/html") {
        ("ETag", format!("\"v1{}\"", path.replace('/', "-")))
    } else {
        ("Last-Modified", "Sat, 01 Nov 2025 10:00:00 GMT".to_string())
    })
}

fn serve(
    mut s: TcpStream,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
    not_modified: Arc<Mutex<Vec<String>>>,
    held: Arc<Mutex<Vec<String>>>,
) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut r = BufReader::new(match s.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut first = String::new();
    if r.read_line(&mut first).is_err() {
        return;
    }
    let mut host = String::new();
    let mut asked: Vec<String> = Vec::new();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap_or(0) == 0 {
            // The connection closed before the request ended (a crawler
            // killed while sending it): nothing was asked, nothing logged.
            return;
        }
        if l == "\r\n" || l == "\n" {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("host") {
                host = v.trim().to_string();
            } else if k.eq_ignore_ascii_case("if-none-match")
                || k.eq_ignore_ascii_case("if-modified-since")
            {
                asked.push(v.trim().to_string());
            }
        }
    }
    let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
    let name = host.split(':').next().unwrap_or("").to_string();
    log.lock().unwrap().push(format!("http://{host}{path}"));
    let key = format!("{name}{path}");
    let t0 = std::time::Instant::now();
    while held.lock().unwrap().contains(&key) && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (mut status, mut headers, mut body) = page(&name, &path, port);
    let ct = headers
        .iter()
        .find(|(k, _)| k == "Content-Type")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    if status == 200
        && let Some((k, v)) = validator(&name, &path, &ct)
    {
        if asked.contains(&v) {
            not_modified
                .lock()
                .unwrap()
                .push(format!("http://{host}{path}"));
            (status, headers, body) = (304, Vec::new(), Vec::new());
        }
        headers.push((k.to_string(), v));
    }
    // A page may declare its own length (more than it sends: a body cut
    // by the server's closing the connection).
    let mut out = format!("HTTP/1.0 {status} X\r\n");
    if !headers.iter().any(|(k, _)| k == "Content-Length") {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    // One write, no Nagle: a head and a body in two small writes would wait
    // for the client's delayed ACK (40 ms a response).
    let _ = s.set_nodelay(true);
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    let _ = s.write_all(&bytes);
}

/// Starts the server on 127.0.0.1 (any port); it runs until the test ends.
pub fn start() -> Web {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let not_modified = Arc::new(Mutex::new(Vec::new()));
    let held = Arc::new(Mutex::new(Vec::new()));
    let (lg, nm, hd) = (log.clone(), not_modified.clone(), held.clone());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let (lg, nm, hd) = (lg.clone(), nm.clone(), hd.clone());
            std::thread::spawn(move || serve(s, port, lg, nm, hd));
        }
    });
    Web {
        port,
        log,
        not_modified,
        held,
    }
}
