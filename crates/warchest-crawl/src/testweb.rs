//! A generated web on loopback for the crawl tests and the benchmark.
//!
//! Many virtual hosts (`*.test`, told apart by the `Host` header) answer
//! on one loopback address and port; `reset.test` has an address of its
//! own (127.0.0.2 when it can be bound). Crawlers map the names with a
//! hosts map: [`TestWeb::hosts`]. Every request served is recorded
//! ([`TestWeb::served`]), so tests can tell what was fetched, when, and
//! how often.
//!
//! The server is a small HTTP/1.x responder on tokio sockets rather than
//! hyper: the test web must misbehave on the wire in ways hyper will not
//! (chunked answers to HTTP/1.0 requests, as some servers send them;
//! connections reset mid-request), and it writes each answer's bytes as
//! given.
//!
//! Hosts:
//! - `site0.test` ... `siteN.test` (the size knob: [`TestWebConfig::sites`]
//!   × [`TestWebConfig::pages`]): pages in a binary tree (`/` is page 0,
//!   page j links pages 2j+1 and 2j+2), each with an image and the site's
//!   style sheet (which `@import`s another and names a background
//!   image), a link to the next site, and a link robots.txt disallows.
//! - `robots-disallow.test`, `robots-wild.test` (`*` and `$`),
//!   `robots-delay.test` (Crawl-delay: 1), `robots-5xx.test`,
//!   `robots-missing.test`: robots.txt variants.
//! - `ratelimit.test`: every URL answers 429 with `Retry-After: 1` the
//!   first time, then 200.
//! - `redirect.test`: a chain of redirects (301, 302, 307), a loop, a
//!   relative `Location`, and a redirect to another host.
//! - `calendar.test`: endless months, by path and by query.
//! - `slow.test`: every answer after [`TestWebConfig::slow_delay`].
//! - `reset.test`: every connection reset.
//! - `encoding.test`: chunked, gzip, gzip and chunked, and a response of
//!   [`TestWebConfig::big_size`] bytes.
//! - `html.test`: broken HTML, srcset and picture, CSS `@import`, meta
//!   refresh, `base href`, a windows-1252 page, percent-encoded URLs.
//! - `sitemap.test`: robots.txt `Sitemap:`, a sitemap index, a plain and a
//!   gzipped sitemap, pages only the sitemaps name.
//! - `hub.test`: a page linking the root of every host.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

/// The size and timing of a test web.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestWebConfig {
    /// Generated site hosts (`site0.test`...).
    pub sites: usize,
    /// Pages per site (at least 1).
    pub pages: usize,
    /// How long `slow.test` waits before each answer.
    pub slow_delay: Duration,
    /// The size of `encoding.test/big.bin`, in bytes.
    pub big_size: usize,
    /// Serve the special hosts (robots, redirects, traps...) besides the
    /// generated sites.
    pub special: bool,
    /// Close a kept-alive connection, without a word, after this many
    /// answers on it (0: never), as a server's keep-alive limit or idle
    /// timeout does while the client sends its next request.
    pub keep_alive_max: u32,
}

impl Default for TestWebConfig {
    fn default() -> TestWebConfig {
        TestWebConfig {
            sites: 3,
            pages: 10,
            slow_delay: Duration::from_millis(300),
            big_size: 2 << 20,
            special: true,
            keep_alive_max: 0,
        }
    }
}

/// One request the test web answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The `Host` header's name (no port), lower case; the reset host's
    /// requests are `reset.test`.
    pub host: String,
    /// The request target as sent (`/path?query`).
    pub target: String,
    /// The method.
    pub method: String,
    /// The HTTP version (`HTTP/1.0`, `HTTP/1.1`).
    pub version: String,
    /// The status answered (0: the connection was reset).
    pub status: u16,
    /// When the request was read, since the web started.
    pub at: Duration,
}

/// The most requests recorded (more are counted only).
pub const MAX_SERVED_LOG: usize = 4_000_000;
/// The longest request head read.
const MAX_HEAD: usize = 16 << 10;
/// How long an idle connection is kept.
const IDLE: Duration = Duration::from_secs(10);

/// The special hosts, in the order the hub links them.
pub const SPECIAL_HOSTS: [&str; 13] = [
    "robots-disallow.test",
    "robots-wild.test",
    "robots-delay.test",
    "robots-5xx.test",
    "robots-missing.test",
    "ratelimit.test",
    "redirect.test",
    "calendar.test",
    "slow.test",
    "reset.test",
    "encoding.test",
    "html.test",
    "sitemap.test",
];

#[derive(Debug, Default)]
struct Log {
    served: Vec<Served>,
    dropped: u64,
    /// Requests per ratelimit.test target (the only host that answers by
    /// it; bounded by [`MAX_SERVED_LOG`] targets).
    counts: BTreeMap<String, u32>,
}

struct Shared {
    cfg: TestWebConfig,
    port: u16,
    reset_port: u16,
    start: Instant,
    log: Mutex<Log>,
    /// Connections accepted.
    connections: std::sync::atomic::AtomicU64,
    /// While set, `slow.test` holds its answers (see [`TestWeb::hold_slow`]).
    hold_slow: std::sync::atomic::AtomicBool,
}

/// A running test web; stopped when dropped.
pub struct TestWeb {
    shared: Arc<Shared>,
    addr: SocketAddr,
    reset_addr: SocketAddr,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for TestWeb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestWeb")
            .field("addr", &self.addr)
            .field("reset_addr", &self.reset_addr)
            .finish()
    }
}

impl TestWeb {
    /// Starts a test web on loopback.
    ///
    /// # Errors
    /// A listener cannot be bound, or the runtime cannot start.
    pub fn start(cfg: TestWebConfig) -> io::Result<TestWeb> {
        let main = StdListener::bind("127.0.0.1:0")?;
        // Its own address where the system has one (Linux routes all of
        // 127.0.0.0/8 to lo), else another port on 127.0.0.1.
        let reset =
            StdListener::bind("127.0.0.2:0").or_else(|_| StdListener::bind("127.0.0.1:0"))?;
        main.set_nonblocking(true)?;
        reset.set_nonblocking(true)?;
        let addr = main.local_addr()?;
        let reset_addr = reset.local_addr()?;
        let shared = Arc::new(Shared {
            cfg: TestWebConfig {
                pages: cfg.pages.max(1),
                ..cfg
            },
            port: addr.port(),
            reset_port: reset_addr.port(),
            start: Instant::now(),
            log: Mutex::default(),
            connections: Default::default(),
            hold_slow: Default::default(),
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("testweb")
            .enable_all()
            .build()?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("testweb".into())
            .spawn(move || {
                rt.block_on(async move {
                    let (Ok(main), Ok(reset)) =
                        (TcpListener::from_std(main), TcpListener::from_std(reset))
                    else {
                        return;
                    };
                    let a =
                        tokio::spawn(accept_loop(main, Arc::clone(&sh), false, stopped.clone()));
                    let b = tokio::spawn(accept_loop(reset, sh, true, stopped));
                    let _ = a.await;
                    let _ = b.await;
                });
                rt.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(TestWeb {
            shared,
            addr,
            reset_addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address every host but `reset.test` answers on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port of `host`'s URLs.
    pub fn port_of(&self, host: &str) -> u16 {
        if host == "reset.test" {
            self.reset_addr.port()
        } else {
            self.addr.port()
        }
    }

    /// `http://HOST:PORT` + `path`.
    pub fn url(&self, host: &str, path: &str) -> Url {
        Url::parse(&format!("http://{host}:{}{path}", self.port_of(host)))
            .unwrap_or_else(|_| unreachable_url())
    }

    /// Every host name with the address it answers on: the crawler's hosts
    /// map (`--resolve HOST:ADDR`).
    pub fn hosts(&self) -> Vec<(String, SocketAddr)> {
        let mut out: Vec<(String, SocketAddr)> = (0..self.shared.cfg.sites)
            .map(|i| (format!("site{i}.test"), self.addr))
            .collect();
        if self.shared.cfg.special {
            out.push(("hub.test".into(), self.addr));
            for h in SPECIAL_HOSTS {
                let a = if h == "reset.test" {
                    self.reset_addr
                } else {
                    self.addr
                };
                out.push((h.to_string(), a));
            }
        }
        out
    }

    /// The generated sites' roots: the seeds of a whole-web crawl.
    pub fn seeds(&self) -> Vec<Url> {
        (0..self.shared.cfg.sites)
            .map(|i| self.url(&format!("site{i}.test"), "/"))
            .collect()
    }

    /// Every URL of the generated sites a complete crawl (seeded with
    /// [`TestWeb::seeds`], robots obeyed) fetches: robots.txt, pages,
    /// images and style sheets.
    pub fn site_urls(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for i in 0..self.shared.cfg.sites {
            let h = format!("site{i}.test");
            for p in [
                "/",
                "/robots.txt",
                "/s/site.css",
                "/s/base.css",
                "/img/bg.png",
            ] {
                out.insert(self.url(&h, p).to_string());
            }
            for j in 0..self.shared.cfg.pages {
                if j > 0 {
                    out.insert(self.url(&h, &format!("/p/{j}.html")).to_string());
                }
                out.insert(self.url(&h, &format!("/img/{j}.png")).to_string());
            }
        }
        out
    }

    /// URLs of the generated sites no crawl that obeys robots.txt fetches.
    pub fn site_disallowed(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for i in 0..self.shared.cfg.sites {
            for j in 0..self.shared.cfg.pages {
                out.insert(
                    self.url(&format!("site{i}.test"), &format!("/nofetch/{j}.html"))
                        .to_string(),
                );
            }
        }
        out
    }

    /// What a crawl of a special host's root with the default settings
    /// (robots obeyed, trap rules on, `max-size` below `big_size`) must
    /// fetch, and must not: (must, must not), full URLs.
    pub fn expected(&self, host: &str) -> (BTreeSet<String>, BTreeSet<String>) {
        let (must, must_not): (&[&str], &[&str]) = match host {
            "robots-disallow.test" => (
                &["/robots.txt", "/", "/public/1.html"],
                &["/private/secret.html", "/not-for-warchest.html"],
            ),
            "robots-wild.test" => (
                &[
                    "/robots.txt",
                    "/",
                    "/a.pdf?x=1",
                    "/docs/b.pdf",
                    "/list?page=2",
                ],
                &["/a.pdf", "/list?session=3"],
            ),
            "robots-delay.test" => (&["/robots.txt", "/", "/1.html", "/2.html", "/3.html"], &[]),
            "robots-5xx.test" => (&["/robots.txt"], &["/", "/a.html"]),
            "robots-missing.test" => (&["/robots.txt", "/", "/a.html"], &[]),
            "ratelimit.test" => (&["/", "/a.html", "/b.html"], &[]),
            "redirect.test" => (
                &[
                    "/",
                    "/chain/1",
                    "/chain/2",
                    "/chain/3",
                    "/final.html",
                    "/loop/a",
                    "/loop/b",
                    "/relative",
                    "/rel/target.html",
                ],
                &[],
            ),
            "calendar.test" => (
                &[
                    "/",
                    "/cal/2026/11/",
                    "/cal/2026/12/",
                    "/events?month=2026-11",
                ],
                &["/cal/1990/01/", "/cal/2090/01/", "/events?month=1990-01"],
            ),
            "slow.test" => (&["/", "/1.html", "/2.html"], &[]),
            "reset.test" => (&[], &[]),
            "encoding.test" => (
                &[
                    "/",
                    "/chunked.html",
                    "/from-chunked.html",
                    "/gzip.html",
                    "/from-gzip.html",
                    "/gzip-chunked.css",
                    "/from-css.png",
                    "/big.bin",
                ],
                &[],
            ),
            "html.test" => (
                &[
                    "/",
                    "/broken-1.html",
                    "/broken-2.html",
                    "/img/a.png",
                    "/img/a-2x.png",
                    "/img/a-3x.png",
                    "/img/p.webp",
                    "/img/p-2x.webp",
                    "/style.css",
                    "/imported.css",
                    "/bg.png",
                    "/imported-bg.png",
                    "/refresh.html",
                    "/refreshed.html",
                    "/base.html",
                    "/basedir/target.html",
                    "/latin1.html",
                    "/caf%C3%A9.html?q=%E9",
                    "/pct.html",
                    "/a%20b/c%2Fd.html",
                    "/%7Euser/",
                    "/sp%20ace.html",
                ],
                &["/target.html"],
            ),
            "sitemap.test" => (
                &[
                    "/robots.txt",
                    "/sitemap-index.xml",
                    "/sitemap-1.xml",
                    "/sitemap-2.xml.gz",
                    "/from-sitemap-1.html",
                    "/from-sitemap-2.html",
                    "/from-sitemap-gz.html",
                ],
                &[],
            ),
            _ => (&[], &[]),
        };
        let set = |paths: &[&str]| {
            paths
                .iter()
                .map(|p| self.url(host, p).to_string())
                .collect()
        };
        (set(must), set(must_not))
    }

    /// Every request answered so far, in order.
    pub fn served(&self) -> Vec<Served> {
        lock(&self.shared.log).served.clone()
    }

    /// While `on`, `slow.test` holds each answer (after its request is
    /// recorded and [`TestWebConfig::slow_delay`] has passed) until it is
    /// called again with `false`, 60 s at most: a test lets an answer go
    /// at the moment it chooses, not after a guessed time.
    pub fn hold_slow(&self, on: bool) {
        self.shared
            .hold_slow
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// The URLs answered so far (`http://host:port/target`), in order,
    /// repeats kept.
    pub fn served_urls(&self) -> Vec<String> {
        lock(&self.shared.log)
            .served
            .iter()
            .map(|s| format!("http://{}:{}{}", s.host, self.port_of(&s.host), s.target))
            .collect()
    }

    /// URLs answered more than once, with their counts.
    pub fn served_twice(&self) -> BTreeMap<String, usize> {
        let mut n: BTreeMap<String, usize> = BTreeMap::new();
        for u in self.served_urls() {
            *n.entry(u).or_default() += 1;
        }
        n.retain(|_, c| *c > 1);
        n
    }

    /// Connections accepted so far (both listeners).
    pub fn connections(&self) -> u64 {
        self.shared
            .connections
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Requests not recorded because the log was full.
    pub fn dropped(&self) -> u64 {
        lock(&self.shared.log).dropped
    }

    /// Forgets the requests recorded (and ratelimit.test's counts).
    pub fn clear(&self) {
        let mut l = lock(&self.shared.log);
        *l = Log::default();
    }
}

fn unreachable_url() -> Url {
    // Host names here are ours and valid; keep a value rather than panic.
    Url::parse("http://invalid.test/").expect("static URL")
}

impl Drop for TestWeb {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock(l: &Mutex<Log>) -> std::sync::MutexGuard<'_, Log> {
    l.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn accept_loop(
    l: TcpListener,
    sh: Arc<Shared>,
    reset: bool,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            r = l.accept() => {
                let Ok((sock, _)) = r else { continue };
                sh.connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                // Answers go out in one or a few writes; without this,
                // Nagle's algorithm and delayed ACKs hold a keep-alive
                // answer's second write back by 40 ms.
                let _ = sock.set_nodelay(true);
                let sh = Arc::clone(&sh);
                tokio::spawn(async move {
                    let _ = if reset {
                        reset_conn(sock, &sh).await
                    } else {
                        serve_conn(sock, &sh).await
                    };
                });
            }
        }
    }
}

/// Reads a request head and resets the connection (RST, no answer).
async fn reset_conn(mut sock: TcpStream, sh: &Shared) -> io::Result<()> {
    let mut buf = Vec::new();
    if let Ok(Some(req)) = tokio::time::timeout(IDLE, read_head(&mut sock, &mut buf)).await? {
        record(sh, "reset.test", &req, 0);
    }
    sock.set_zero_linger()?;
    drop(sock);
    Ok(())
}

/// A parsed request head.
struct Request {
    method: String,
    target: String,
    version: String,
    host: String,
    keep_alive: bool,
}

/// Reads one request head; `None` at a clean end of the connection.
async fn read_head(sock: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<Request>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = buf.drain(..end + 4).collect();
            return Ok(parse_head(&head));
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::other("request head too long"));
        }
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn parse_head(head: &[u8]) -> Option<Request> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let version = first.next().unwrap_or("HTTP/1.0").to_string();
    let mut host = String::new();
    let mut conn = String::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("host") {
                host = v.trim().to_ascii_lowercase();
            } else if k.trim().eq_ignore_ascii_case("connection") {
                conn = v.trim().to_ascii_lowercase();
            }
        }
    }
    if let Some(i) = host.rfind(':')
        && host[i + 1..].bytes().all(|b| b.is_ascii_digit())
    {
        host.truncate(i);
    }
    let keep_alive = if version == "HTTP/1.1" {
        !conn.contains("close")
    } else {
        conn.contains("keep-alive")
    };
    // An absolute-form target (a proxy request): keep only path and query.
    let target = match Url::parse(&target) {
        Ok(u) if target.starts_with("http") => {
            if host.is_empty() {
                host = u.host_str().unwrap_or("").to_string();
            }
            u[url::Position::BeforePath..url::Position::AfterQuery].to_string()
        }
        _ => target,
    };
    Some(Request {
        method,
        target,
        version,
        host,
        keep_alive,
    })
}

fn record(sh: &Shared, host: &str, req: &Request, status: u16) {
    let mut l = lock(&sh.log);
    if host == "ratelimit.test" && l.counts.len() < MAX_SERVED_LOG {
        *l.counts.entry(req.target.clone()).or_default() += 1;
    }
    if l.served.len() < MAX_SERVED_LOG {
        l.served.push(Served {
            host: host.to_string(),
            target: req.target.clone(),
            method: req.method.clone(),
            version: req.version.clone(),
            status,
            at: sh.start.elapsed(),
        });
    } else {
        l.dropped += 1;
    }
}

async fn serve_conn(mut sock: TcpStream, sh: &Shared) -> io::Result<()> {
    let mut buf = Vec::new();
    let mut answered = 0u32;
    loop {
        if sh.cfg.keep_alive_max > 0 && answered >= sh.cfg.keep_alive_max {
            // Closed without notice, whatever the last answer said.
            return Ok(());
        }
        let Ok(head) = tokio::time::timeout(IDLE, read_head(&mut sock, &mut buf)).await else {
            return Ok(());
        };
        let Some(req) = head? else {
            return Ok(());
        };
        let prior = lock(&sh.log).counts.get(&req.target).copied().unwrap_or(0);
        let resp = if req.method == "GET" || req.method == "HEAD" {
            route(sh, &req.host, &req.target, prior)
        } else {
            Resp::text(405, "text/plain", "GET only\n")
        };
        record(sh, &req.host, &req, resp.status);
        if req.host == "slow.test" {
            tokio::time::sleep(sh.cfg.slow_delay).await;
            let t0 = Instant::now();
            while sh.hold_slow.load(std::sync::atomic::Ordering::SeqCst)
                && t0.elapsed() < Duration::from_secs(60)
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let keep = req.keep_alive && !resp.close_delimited();
        resp.write(&mut sock, req.method == "HEAD", keep).await?;
        answered += 1;
        if !keep {
            sock.shutdown().await?;
            return Ok(());
        }
    }
}

/// An answer.
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

enum Body {
    /// With Content-Length.
    Bytes(Vec<u8>),
    /// Transfer-Encoding: chunked, in these chunks.
    Chunked(Vec<Vec<u8>>),
    /// `n` bytes of a repeating pattern, with Content-Length.
    Big(usize),
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

impl Resp {
    fn text(status: u16, ct: &str, body: &str) -> Resp {
        Resp::bytes(status, ct, body.as_bytes().to_vec())
    }

    fn bytes(status: u16, ct: &str, body: Vec<u8>) -> Resp {
        Resp {
            status,
            headers: vec![("Content-Type".into(), ct.into())],
            body: Body::Bytes(body),
        }
    }

    fn html(body: &str) -> Resp {
        Resp::text(200, "text/html; charset=utf-8", body)
    }

    fn redirect(status: u16, location: &str) -> Resp {
        let mut r = Resp::text(status, "text/html", "<a href=\"moved\">moved</a>\n");
        r.headers.push(("Location".into(), location.into()));
        r
    }

    fn not_found() -> Resp {
        Resp::text(404, "text/plain", "not found\n")
    }

    fn header(mut self, k: &str, v: &str) -> Resp {
        self.headers.push((k.into(), v.into()));
        self
    }

    fn close_delimited(&self) -> bool {
        false
    }

    async fn write(&self, sock: &mut TcpStream, head_only: bool, keep: bool) -> io::Result<()> {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        match &self.body {
            Body::Bytes(b) => head.push_str(&format!("Content-Length: {}\r\n", b.len())),
            Body::Big(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
            Body::Chunked(_) => head.push_str("Transfer-Encoding: chunked\r\n"),
        }
        head.push_str(if keep {
            "Connection: keep-alive\r\n\r\n"
        } else {
            "Connection: close\r\n\r\n"
        });
        if head_only {
            return sock.write_all(head.as_bytes()).await;
        }
        match &self.body {
            Body::Bytes(b) => {
                // Head and body in one write.
                let mut all = head.into_bytes();
                all.extend_from_slice(b);
                sock.write_all(&all).await?;
            }
            Body::Chunked(chunks) => {
                sock.write_all(head.as_bytes()).await?;
                for c in chunks.iter().filter(|c| !c.is_empty()) {
                    sock.write_all(format!("{:x}\r\n", c.len()).as_bytes())
                        .await?;
                    sock.write_all(c).await?;
                    sock.write_all(b"\r\n").await?;
                }
                sock.write_all(b"0\r\n\r\n").await?;
            }
            Body::Big(n) => {
                sock.write_all(head.as_bytes()).await?;
                let block: Vec<u8> = (0..64 << 10).map(|i| b'a' + (i % 26) as u8).collect();
                let mut left = *n;
                while left > 0 {
                    let k = left.min(block.len());
                    sock.write_all(&block[..k]).await?;
                    left -= k;
                }
            }
        }
        sock.flush().await
    }
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = g.write_all(b);
    g.finish().unwrap_or_default()
}

/// Splits `b` into pieces of about `n` bytes.
fn pieces(b: &[u8], n: usize) -> Vec<Vec<u8>> {
    b.chunks(n.max(1)).map(<[u8]>::to_vec).collect()
}

fn route(sh: &Shared, host: &str, target: &str, prior: u32) -> Resp {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if let Some(i) = host
        .strip_prefix("site")
        .and_then(|r| r.strip_suffix(".test"))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&i| i < sh.cfg.sites)
    {
        return site(sh, i, path);
    }
    if !sh.cfg.special {
        return Resp::not_found();
    }
    let port = sh.port;
    match host {
        "hub.test" if path == "/" => {
            let mut s = String::from("<html><body><h1>hub</h1>\n");
            for (i, h) in SPECIAL_HOSTS.iter().enumerate() {
                let p = if *h == "reset.test" {
                    sh.reset_port
                } else {
                    port
                };
                s.push_str(&format!("<a href=\"http://{h}:{p}/\">{i}</a>\n"));
            }
            if sh.cfg.sites > 0 {
                s.push_str(&format!(
                    "<a href=\"http://site0.test:{port}/\">site0</a>\n"
                ));
            }
            Resp::html(&s)
        }
        "robots-disallow.test" => match path {
            "/robots.txt" => Resp::text(
                200,
                "text/plain",
                "User-agent: *\nDisallow: /private/\n\nUser-agent: warchest\nDisallow: /private/\nDisallow: /not-for-warchest\n",
            ),
            "/" => Resp::html(
                "<a href=/public/1.html>p</a><a href=/private/secret.html>s</a><a href=/not-for-warchest.html>n</a>",
            ),
            "/public/1.html" | "/private/secret.html" | "/not-for-warchest.html" => {
                Resp::html("<p>leaf</p>")
            }
            _ => Resp::not_found(),
        },
        "robots-wild.test" => match path {
            "/robots.txt" => Resp::text(
                200,
                "text/plain",
                "User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?session=\nAllow: /docs/*.pdf$\n",
            ),
            "/" => Resp::html(
                "<a href=/a.pdf>1</a><a href=/a.pdf?x=1>2</a><a href=/docs/b.pdf>3</a>\
<a href=/list?session=3>4</a><a href=/list?page=2>5</a>",
            ),
            "/a.pdf" | "/docs/b.pdf" => Resp::text(200, "application/pdf", "%PDF-1.4\n"),
            "/list" => Resp::html("<p>list</p>"),
            _ => Resp::not_found(),
        },
        "robots-delay.test" => match path {
            "/robots.txt" => Resp::text(200, "text/plain", "User-agent: *\nCrawl-delay: 1\n"),
            "/" => Resp::html("<a href=/1.html>1</a><a href=/2.html>2</a><a href=/3.html>3</a>"),
            "/1.html" | "/2.html" | "/3.html" => Resp::html("<p>leaf</p>"),
            _ => Resp::not_found(),
        },
        "robots-5xx.test" => match path {
            "/robots.txt" => Resp::text(503, "text/plain", "down\n").header("Retry-After", "1"),
            "/" => Resp::html("<a href=/a.html>a</a>"),
            "/a.html" => Resp::html("<p>leaf</p>"),
            _ => Resp::not_found(),
        },
        "robots-missing.test" | "ratelimit.test" | "slow.test" => {
            // robots.txt answers at once: a 429 for it would disallow the
            // whole host for a while (RFC 9309 reads it as unreachable).
            if host == "ratelimit.test" && prior == 0 && path != "/robots.txt" {
                return Resp::text(429, "text/plain", "slow down\n").header("Retry-After", "1");
            }
            match path {
                "/robots.txt" => Resp::not_found(),
                "/" if host == "robots-missing.test" => Resp::html("<a href=/a.html>a</a>"),
                "/" if host == "ratelimit.test" => {
                    Resp::html("<a href=/a.html>a</a><a href=/b.html>b</a>")
                }
                "/" => Resp::html("<a href=/1.html>1</a><a href=/2.html>2</a>"),
                "/a.html" | "/b.html" | "/1.html" | "/2.html" => Resp::html("<p>leaf</p>"),
                _ => Resp::not_found(),
            }
        }
        "redirect.test" => match path {
            "/robots.txt" => Resp::not_found(),
            "/" => Resp::html(
                "<a href=/chain/1>c</a><a href=/loop/a>l</a><a href=/relative>r</a><a href=/to-other>o</a>",
            ),
            "/chain/1" => Resp::redirect(301, "/chain/2"),
            "/chain/2" => Resp::redirect(302, &format!("http://redirect.test:{port}/chain/3")),
            "/chain/3" => Resp::redirect(307, "/final.html"),
            "/final.html" | "/rel/target.html" => Resp::html("<p>final</p>"),
            "/loop/a" => Resp::redirect(302, "/loop/b"),
            "/loop/b" => Resp::redirect(302, "/loop/a"),
            "/relative" => Resp::redirect(302, "rel/target.html"),
            "/to-other" if sh.cfg.sites > 0 => {
                Resp::redirect(302, &format!("http://site0.test:{port}/"))
            }
            _ => Resp::not_found(),
        },
        "calendar.test" => calendar(path, query),
        "encoding.test" => encoding(sh, path),
        "html.test" => html_host(path),
        "sitemap.test" => sitemap_host(port, path),
        _ => Resp::not_found(),
    }
}

fn site(sh: &Shared, i: usize, path: &str) -> Resp {
    let n = sh.cfg.pages;
    let port = sh.port;
    let page = if path == "/" {
        Some(0)
    } else {
        path.strip_prefix("/p/")
            .and_then(|p| p.strip_suffix(".html"))
            .and_then(|j| j.parse::<usize>().ok())
            .filter(|&j| j > 0 && j < n)
    };
    if let Some(j) = page {
        let mut s = format!(
            "<!doctype html><html><head><title>site {i} page {j}</title>\
<link rel=stylesheet href=/s/site.css></head><body>\n<img src=/img/{j}.png alt=''>\n"
        );
        for c in [2 * j + 1, 2 * j + 2] {
            if c < n {
                s.push_str(&format!("<a href=/p/{c}.html>page {c}</a>\n"));
            }
        }
        s.push_str(&format!("<a href=/nofetch/{j}.html>robots says no</a>\n"));
        if j == 0 && sh.cfg.sites > 1 {
            let next = (i + 1) % sh.cfg.sites;
            s.push_str(&format!(
                "<a href=http://site{next}.test:{port}/>next site</a>\n"
            ));
        }
        s.push_str("</body></html>\n");
        return Resp::html(&s);
    }
    match path {
        "/robots.txt" => Resp::text(200, "text/plain", "User-agent: *\nDisallow: /nofetch/\n"),
        "/s/site.css" => Resp::text(
            200,
            "text/css",
            "@import \"base.css\";\nbody { background: url(/img/bg.png) }\n",
        ),
        "/s/base.css" => Resp::text(200, "text/css", "p { margin: 0 }\n"),
        p if p.starts_with("/img/") && p.ends_with(".png") => {
            Resp::bytes(200, "image/png", b"\x89PNG\r\n\x1a\n".to_vec())
        }
        p if p.starts_with("/nofetch/") => Resp::html("<p>should not be fetched</p>"),
        _ => Resp::not_found(),
    }
}

/// `YYYY-MM` (or `YYYY`, `MM` path parts) shifted by `d` months.
fn month_shift(y: i32, m: i32, d: i32) -> (i32, i32) {
    let t = y * 12 + (m - 1) + d;
    (t.div_euclid(12), t.rem_euclid(12) + 1)
}

fn calendar(path: &str, query: &str) -> Resp {
    if path == "/robots.txt" {
        return Resp::not_found();
    }
    if path == "/" {
        return Resp::html(
            "<a href=/cal/2026/11/>calendar</a><a href=/events?month=2026-11>events</a>",
        );
    }
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ym = match (parts.as_slice(), path) {
        (["cal", y, m], _) => y.parse::<i32>().ok().zip(m.parse::<i32>().ok()),
        (_, "/events") => query
            .strip_prefix("month=")
            .and_then(|v| v.split_once('-'))
            .and_then(|(y, m)| y.parse::<i32>().ok().zip(m.parse::<i32>().ok())),
        _ => None,
    };
    let Some((y, m)) = ym.filter(|(y, m)| (1..=9999).contains(y) && (1..=12).contains(m)) else {
        return Resp::not_found();
    };
    let (py, pm) = month_shift(y, m, -1);
    let (ny, nm) = month_shift(y, m, 1);
    let body = if path == "/events" {
        format!(
            "<h1>{y}-{m:02}</h1><a href=\"/events?month={py}-{pm:02}\">prev</a> \
<a href=\"/events?month={ny}-{nm:02}\">next</a>"
        )
    } else {
        format!(
            "<h1>{y}-{m:02}</h1><a href=\"/cal/{py}/{pm:02}/\">prev</a> \
<a href=\"/cal/{ny}/{nm:02}/\">next</a>"
        )
    };
    Resp::html(&body)
}

fn encoding(sh: &Shared, path: &str) -> Resp {
    match path {
        "/robots.txt" => Resp::not_found(),
        "/" => Resp::html(
            "<a href=/chunked.html>c</a><a href=/gzip.html>g</a>\
<link rel=stylesheet href=/gzip-chunked.css><a href=/big.bin>big</a>",
        ),
        "/chunked.html" => {
            let page =
                b"<html><body><p>in pieces</p><a href=/from-chunked.html>next</a></body></html>\n";
            Resp {
                status: 200,
                headers: vec![("Content-Type".into(), "text/html".into())],
                body: Body::Chunked(pieces(page, 7)),
            }
        }
        "/gzip.html" => {
            let page = b"<html><body><a href=/from-gzip.html>next</a></body></html>\n";
            Resp::bytes(200, "text/html", gzip(page)).header("Content-Encoding", "gzip")
        }
        "/gzip-chunked.css" => Resp {
            status: 200,
            headers: vec![
                ("Content-Type".into(), "text/css".into()),
                ("Content-Encoding".into(), "gzip".into()),
            ],
            body: Body::Chunked(pieces(
                &gzip(b"body { background: url(/from-css.png) }\n"),
                10,
            )),
        },
        "/from-chunked.html" | "/from-gzip.html" => Resp::html("<p>leaf</p>"),
        "/from-css.png" => Resp::bytes(200, "image/png", b"\x89PNG\r\n\x1a\n".to_vec()),
        "/big.bin" => Resp {
            status: 200,
            headers: vec![("Content-Type".into(), "application/octet-stream".into())],
            body: Body::Big(sh.cfg.big_size),
        },
        _ => Resp::not_found(),
    }
}

fn html_host(path: &str) -> Resp {
    match path {
        "/robots.txt" => Resp::not_found(),
        "/" => Resp::html(
            "<html><head><title>broken & co</title><link rel=stylesheet href=\"/style.css\">\n\
<body><p>unclosed <b>bold <i>italic\n\
<a href=/broken-1.html>one</a><div><table><tr><td><a href='/broken-2.html'>two\n\
<img src=/img/a.png srcset=\"/img/a-2x.png 2x, /img/a-3x.png 3x\">\n\
<picture><source srcset=\"/img/p.webp 1x, /img/p-2x.webp 2x\"><img src=/img/a.png></picture>\n\
<a href=/refresh.html>r</a><a href=/base.html>b</a><a href=/latin1.html>l</a>\
<a href=/pct.html>p</a>\n<p <a href=\"/never\">",
        ),
        "/broken-1.html"
        | "/broken-2.html"
        | "/refreshed.html"
        | "/basedir/target.html"
        | "/caf%C3%A9.html"
        | "/a%20b/c%2Fd.html"
        | "/%7Euser/"
        | "/sp%20ace.html" => Resp::html("<p>leaf</p>"),
        "/target.html" => Resp::html("<p>base href ignored</p>"),
        "/style.css" => Resp::text(
            200,
            "text/css",
            "@import \"imported.css\";\nh1 { background: url('bg.png') }\n",
        ),
        "/imported.css" => Resp::text(200, "text/css", "p { background: url(/imported-bg.png) }\n"),
        "/bg.png" | "/imported-bg.png" | "/img/a.png" | "/img/a-2x.png" | "/img/a-3x.png"
        | "/img/p.webp" | "/img/p-2x.webp" => {
            Resp::bytes(200, "image/png", b"\x89PNG\r\n\x1a\n".to_vec())
        }
        "/refresh.html" => {
            Resp::html("<meta http-equiv=\"refresh\" content=\"0; url=/refreshed.html\">")
        }
        "/base.html" => {
            Resp::html("<head><base href=\"/basedir/\"></head><a href=\"target.html\">t</a>")
        }
        "/latin1.html" => Resp::bytes(
            200,
            "text/html; charset=windows-1252",
            b"<html><body><a href=\"caf\xe9.html?q=\xe9\">caf\xe9</a></body></html>".to_vec(),
        ),
        "/pct.html" => Resp::html(
            "<a href=\"/a%20b/c%2Fd.html\">1</a><a href=\"/%7Euser/\">2</a><a href=\"/sp ace.html\">3</a>",
        ),
        _ => Resp::not_found(),
    }
}

fn sitemap_host(port: u16, path: &str) -> Resp {
    let base = format!("http://sitemap.test:{port}");
    match path {
        "/robots.txt" => Resp::text(
            200,
            "text/plain",
            &format!("User-agent: *\nAllow: /\n\nSitemap: {base}/sitemap-index.xml\n"),
        ),
        "/" => Resp::html("<p>nothing linked here: see the sitemaps</p>"),
        "/sitemap-index.xml" => Resp::text(
            200,
            "application/xml",
            &format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
<sitemap><loc>{base}/sitemap-1.xml</loc></sitemap>\n\
<sitemap><loc>{base}/sitemap-2.xml.gz</loc></sitemap>\n</sitemapindex>\n"
            ),
        ),
        "/sitemap-1.xml" => Resp::text(
            200,
            "application/xml",
            &format!(
                "<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
<url><loc>{base}/from-sitemap-1.html</loc></url>\n<url><loc>{base}/from-sitemap-2.html</loc></url>\n</urlset>\n"
            ),
        ),
        "/sitemap-2.xml.gz" => Resp::bytes(
            200,
            "application/x-gzip",
            gzip(
                format!(
                    "<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
<url><loc>{base}/from-sitemap-gz.html</loc></url>\n</urlset>\n"
                )
                .as_bytes(),
            ),
        ),
        "/from-sitemap-1.html" | "/from-sitemap-2.html" | "/from-sitemap-gz.html" => {
            Resp::html("<p>only in a sitemap</p>")
        }
        _ => Resp::not_found(),
    }
}
