//! `warchest serve`: a web server to browse and replay a collection of
//! archive files (WARC, ARC, Web InfoMall, WACZ), as pywb does.
//!
//! The server (`net.rs`) is hyper (HTTP/1.1 keep-alive and h2c) on tokio,
//! a task a connection, with limits on connections, request heads and
//! bodies, time (slow heads, idle and stalled connections) and handlers
//! at once; graceful shutdown ([`StopHandle`], ctrl-c, SIGTERM). The
//! handlers (`handle` and below) are blocking and run on tokio's blocking
//! pool, answering through a `Responder` whose body streams
//! through a bounded channel; a panic in one answers 500.
//!
//! Two origins (docs/serve.md, "Isolation"): the UI (`listen`) and the
//! replay origin (`replay_listen`, or `replay_host` behind a reverse
//! proxy), which alone serves archived bytes; the UI frames replay.
//! Replayed responses carry a Content-Security-Policy that confines them
//! to the replay origin. URLs:
//!
//! | path | what |
//! |---|---|
//! | `/` and `/{coll}/` | the collection: search form, files |
//! | `/{coll}/search?url=U&match=prefix` | URLs found (exact, prefix, host, domain) |
//! | `/{coll}/*/{url}` | the captures of a URL |
//! | `/{coll}/{timestamp}/{url}` | UI: banner and the page in a frame (`mp_`) |
//! | `/{coll}/{timestamp}{modifier}/{url}` | replay origin: replay (`id_`: as archived) |
//! | `/{coll}/{url}` | Memento TimeGate (Accept-Datetime; latest without) |
//! | `/{coll}/timemap/link/{url}` | Memento TimeMap (RFC 7089 link format) |
//! | `/{coll}/cdx?url=U&output=json` | CDX server, as pywb's |
//! | `/cdx/search/cdx?url=U` | the same, at the Internet Archive's path, in its outputs |
//! | `/{coll}/fulltext?q=Q` (`&output=json`) | full-text search (`--search INDEX`): page, or its JSON API |
//! | `/{coll}/record/{src}/{offset}` | a record: headers, payload, validation |
//! | `/{coll}/record/{src}/{offset}/warc` | the record as stored (`application/warc`) |
//! | `/{coll}/record/{src}/{offset}/payload` | its payload |
//! | `/{coll}/file/{src}` | a whole file (`application/warc`) |
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod calendar;
mod cookie;
mod escape;
mod exchange;
mod names;
mod net;
mod pages;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use exchange::{Request, Responder};
pub use net::{BODY_TIMEOUT, GRACE, HEAD_TIMEOUT, STALL};
use warchest::error::{Error, ErrorKind, Result};
use warchest::http::date::{http_date, pad_timestamp, parse_http_date};
use warchest::http::payload_reader;
use warchest_replay::access::{AccessRules, Verdict, Viewer};
use warchest_replay::archive_url::{self, TimeSpec, modifier};
use warchest_replay::rewrite::{Kind, Rewriter, UrlContext, copy_rewritten};
use warchest_replay::store::{Capture, KeyRange, MatchType, Query, Store};
use warchest_replay::{Collection, Payload};

/// The client-side script injected into replayed pages.
pub const CLIENT_JS: &str = include_str!("client.js");

/// The Content-Security-Policy of every rewritten replay response:
/// everything from this server (inline and eval'd scripts included, as
/// archived pages use them), nothing from anywhere else.
const REPLAY_CSP: &str =
    "default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; form-action 'self'";

/// Most CDX lines one API call returns.
const MAX_CDX: usize = 100_000;

/// Captures in one block of the CDX API's pages: a ZipNum block's lines,
/// as Common Crawl's index has them (cdx_toolkit estimates sizes from it).
const CDX_BLOCK: usize = 3000;

/// Blocks a page holds unless `pageSize` says (pywb's `max_blocks`).
const CDX_PAGE_BLOCKS: usize = 5;

/// How `serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: String,
    /// The collection's name in URLs.
    pub collection: String,
    /// Files and directories served.
    pub paths: Vec<PathBuf>,
    /// The index store file (default: [`ServeOptions::default_store`], in
    /// a cache directory, never among the files served).
    pub store: Option<PathBuf>,
    /// A CDXJ index to use instead of reading the files.
    pub cdxj: Option<PathBuf>,
    /// How often the directories are looked at for new files (`None`:
    /// never).
    pub poll: Option<Duration>,
    /// The replay origin's address (`None`: the same IP as `listen`, the
    /// next port; port 0 for port 0). Not bound when `replay_host` is given
    /// and this is not.
    pub replay_listen: Option<String>,
    /// A host name that is the replay origin on the `listen` address
    /// (behind a reverse proxy that sends both names to one port).
    pub replay_host: Option<String>,
    /// Requests handled at once (each on a blocking thread; the others
    /// wait).
    pub threads: usize,
    /// Connections open at once (past it, accepting waits).
    pub max_connections: usize,
    /// Host names (with or without a port) requests may name in `Host`;
    /// empty: `localhost`, `127.0.0.1`, `[::1]` and the address listened
    /// on. Any other Host is refused (421), so a DNS name rebound to this
    /// machine reaches nothing.
    pub allowed_hosts: Vec<String>,
    /// Requests a second each client (by IP address) may make of the CDX
    /// and Memento APIs, bursts of twice that allowed; past it, 429.
    /// `None`: no limit.
    pub rate_limit: Option<u32>,
    /// Fuzzy-matching rules for URLs with no capture of their own
    /// (default: the shipped ones, [`warchest_replay::fuzzy::FuzzyRules::default`]).
    pub fuzzy: warchest_replay::fuzzy::FuzzyRules,
    /// A full-text index (`warchest search-index`) searched at
    /// `/{coll}/fulltext`.
    pub search: Option<PathBuf>,
    /// Which captures are shown, to whom: pywb's access control files and
    /// embargo (default: everything, to everyone).
    pub access: warchest_replay::access::AccessRules,
    /// The files (or directories) `access` was read from: looked at at
    /// each `poll`, and read again when one changed, was added or removed
    /// (a file that no longer reads keeps the rules as they were, and is
    /// logged).
    pub access_files: Vec<PathBuf>,
    /// The request header that names the user of the access rules written
    /// for one user (`X-Pywb-ACL-User` in pywb's deployments). `None`:
    /// every request is the public's. Only for a front end that sets the
    /// header itself and removes any a client sent: a client can send it.
    pub access_user_header: Option<String>,
}

impl ServeOptions {
    /// Options for `paths`, everything else by default (127.0.0.1:8080 and
    /// 127.0.0.1:8081 for replay, collection `archive`, polling every 10
    /// seconds, 64 requests and 4096 connections at once).
    pub fn new(paths: Vec<PathBuf>) -> ServeOptions {
        ServeOptions {
            listen: "127.0.0.1:8080".into(),
            collection: "archive".into(),
            paths,
            store: None,
            cdxj: None,
            poll: Some(Duration::from_secs(10)),
            replay_listen: None,
            replay_host: None,
            threads: 64,
            max_connections: 4096,
            allowed_hosts: Vec::new(),
            rate_limit: None,
            fuzzy: warchest_replay::fuzzy::FuzzyRules::default(),
            search: None,
            access: Default::default(),
            access_files: Vec::new(),
            access_user_header: None,
        }
    }

    /// Where the store goes by default: in the user's cache directory
    /// (`$XDG_CACHE_HOME/warchest/serve/`, else `~/.cache/warchest/serve/`,
    /// else the system's temporary directory), named after the first path
    /// served and keyed by the collection's paths (made absolute), so that
    /// the same paths find their index again and the directories served
    /// are never written to (they are often read-only, or must not change).
    pub fn default_store(&self) -> PathBuf {
        let paths: Vec<PathBuf> = self
            .paths
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect();
        // FNV-1a, 64 bits: stable across runs and builds.
        let mut key: u64 = 0xcbf2_9ce4_8422_2325;
        for p in &paths {
            for &b in p.as_os_str().as_encoded_bytes().iter().chain(&[0u8]) {
                key ^= u64::from(b);
                key = key.wrapping_mul(0x0100_0000_01b3);
            }
        }
        let stem: String = paths
            .first()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "archive".into())
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        cache_dir().join(format!("{stem}-{key:016x}.redb"))
    }
}

/// `$XDG_CACHE_HOME/warchest/serve`, `$HOME/.cache/warchest/serve`, or
/// the system's temporary directory's `warchest-cache/serve`.
fn cache_dir() -> PathBuf {
    let abs = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let base = abs(std::env::var_os("XDG_CACHE_HOME"))
        .or_else(|| abs(std::env::var_os("HOME")).map(|h| h.join(".cache")))
        .map(|c| c.join("warchest"))
        .unwrap_or_else(|| std::env::temp_dir().join("warchest-cache"));
    base.join("serve")
}

/// The state the request handlers share.
struct App {
    coll: Collection,
    /// Lower-case host names a request's Host may name (port stripped).
    hosts: Vec<String>,
    /// Per-client limit of the APIs, if any.
    limiter: Option<RateLimiter>,
    /// Where the two origins are.
    site: Site,
    /// The full-text index, if any.
    search: Option<warchest_search::SearchIndex>,
    /// The header naming the access rules' user, if any.
    user_header: Option<String>,
    /// The access rules in force (replaced whole when their files change).
    access: std::sync::RwLock<Arc<AccessRules>>,
    /// What the rule files looked like when last read.
    access_stamp: std::sync::Mutex<AccessStamp>,
}

/// The rule files' names, lengths and times of change.
type AccessStamp = Vec<(PathBuf, u64, Option<std::time::SystemTime>)>;

/// The addresses of the two origins.
struct Site {
    /// The UI listener's port.
    ui_port: u16,
    /// The replay listener's port, when there is one.
    replay_port: Option<u16>,
    /// The replay origin's host name (lower-case), behind a reverse proxy.
    replay_host: Option<String>,
    /// The UI's host name the replay origin points back to with
    /// `replay_host` (the first `--host` that is not it).
    ui_host: Option<String>,
}

/// A token bucket per client address.
struct RateLimiter {
    per_sec: f64,
    burst: f64,
    clients:
        std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (f64, std::time::Instant)>>,
}

impl RateLimiter {
    /// Clients remembered at most; past it, those idle long enough to have
    /// a full bucket again are forgotten.
    const MAX_CLIENTS: usize = 100_000;

    fn new(per_sec: u32) -> RateLimiter {
        let per_sec = f64::from(per_sec.max(1));
        RateLimiter {
            per_sec,
            burst: per_sec * 2.0,
            clients: Default::default(),
        }
    }

    /// Takes one token for `ip`; false when it has none left.
    fn allow(&self, ip: std::net::IpAddr) -> bool {
        let now = std::time::Instant::now();
        let Ok(mut clients) = self.clients.lock() else {
            return true;
        };
        if clients.len() >= Self::MAX_CLIENTS {
            let full = std::time::Duration::from_secs_f64(self.burst / self.per_sec);
            clients.retain(|_, (_, at)| now.duration_since(*at) < full);
        }
        let (tokens, at) = clients.entry(ip).or_insert((self.burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * self.per_sec).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl App {
    /// True when `host` (a Host header, port included) names this server.
    /// A request without Host (HTTP/1.0) is taken as for this server.
    fn serves_host(&self, host: Option<&str>) -> bool {
        let Some(h) = host else {
            return true;
        };
        let h = h.trim().to_ascii_lowercase();
        let name = match h.strip_prefix('[') {
            Some(v6) => v6
                .split(']')
                .next()
                .map(|a| format!("[{a}]"))
                .unwrap_or_default(),
            None => h.split(':').next().unwrap_or("").to_string(),
        };
        self.hosts.iter().any(|a| *a == name || *a == h)
    }

    /// The access rules in force.
    fn rules(&self) -> Arc<AccessRules> {
        match self.access.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// `rules` as the sender of `req` sees them: the user its header
    /// names, when the server was told which header a front end sets; else
    /// the public.
    fn viewer<'a>(&self, rules: &'a AccessRules, req: &'a Request) -> Viewer<'a> {
        let user = self
            .user_header
            .as_deref()
            .and_then(|h| req.header(h))
            .map(str::trim)
            .filter(|u| !u.is_empty());
        rules.viewer(user)
    }

    /// Reads the access rule files again when one changed since last read
    /// (`files`: where they were read from). A file that does not read
    /// keeps the rules in force, and says why.
    fn reload_access(&self, files: &[PathBuf]) {
        if files.is_empty() {
            return;
        }
        let now = AccessRules::stamp(files);
        {
            let Ok(mut last) = self.access_stamp.lock() else {
                return;
            };
            if *last == now {
                return;
            }
            *last = now;
        }
        match self.rules().reloaded(files) {
            Ok(r) => {
                tracing::info!("access rules read again: {} rule(s)", r.len());
                if let Ok(mut w) = self.access.write() {
                    *w = Arc::new(r);
                }
            }
            Err(e) => tracing::error!(
                "access rules changed but do not read; the rules read before stay in force: {e}"
            ),
        }
    }
}

/// The hosts allowed by default, and those of the addresses listened on;
/// the replay host always.
fn allowed_hosts(opts: &ServeOptions, local: &[SocketAddr]) -> Vec<String> {
    let mut hosts: Vec<String> = opts
        .allowed_hosts
        .iter()
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    if hosts.is_empty() {
        hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
        for a in local {
            hosts.push(match a.ip() {
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                v4 => v4.to_string(),
            });
        }
    }
    if let Some(h) = &opts.replay_host {
        hosts.push(h.trim().to_ascii_lowercase());
    }
    hosts
}

/// A bound server, its collection indexed.
pub struct Server {
    listener: TcpListener,
    replay_listener: Option<TcpListener>,
    app: Arc<App>,
    opts: ServeOptions,
    stop: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("opts", &self.opts).finish()
    }
}

/// Stops a running [`Server`] gracefully: no new connections, requests
/// under way finish (for at most [`GRACE`]), then [`Server::run`] returns.
#[derive(Debug, Clone)]
pub struct StopHandle(tokio::sync::watch::Sender<bool>);

impl StopHandle {
    /// Asks the server to stop.
    pub fn stop(&self) {
        // Kept even when `run` has not subscribed yet (a stop right after
        // `bind`): `send` drops the value when no one listens.
        self.0.send_replace(true);
    }
}

/// The address of the replay listener by default: the UI's IP, the next
/// port (port 0, an ephemeral one, stays 0).
fn default_replay_listen(listen: &str) -> Result<String> {
    let bad = || {
        Error::new(ErrorKind::Usage(format!(
            "cannot tell the replay address from {listen}: give --replay-listen"
        )))
    };
    let (host, port) = listen.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let next = match port {
        0 => 0,
        p => p.checked_add(1).ok_or_else(bad)?,
    };
    Ok(format!("{host}:{next}"))
}

fn bind(addr: &str) -> Result<TcpListener> {
    let l = TcpListener::bind(addr)
        .map_err(|e| Error::new(ErrorKind::Usage(format!("cannot listen on {addr}: {e}"))))?;
    // tokio takes it over in `run`.
    l.set_nonblocking(true)?;
    Ok(l)
}

/// What [`Server::answer`] gives: the response a client would get.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The header fields, in the handler's order, without those the
    /// connection adds (`Date`, `Connection`, and `Content-Length` but on
    /// a HEAD answer, whose handler gives the length a GET would have).
    pub headers: Vec<(String, String)>,
    /// The body, its first `max_body` bytes at most.
    pub body: Vec<u8>,
    /// The body went past the limit and was cut there (a streaming
    /// handler then sees the client go away), or the handler cut it.
    pub cut: bool,
}

impl Answer {
    /// The first value of header field `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    /// Answers one request in process, without a connection: the same
    /// handlers, host check and origins as a request reaching the UI's
    /// listener (or the replay origin's, `to_replay`; without a listener
    /// of its own the Host names the origin, as on the one listener),
    /// header names in any case, keeping at most `max_body` bytes of the
    /// body. What hyper refuses on a connection is refused here too: 400
    /// for a method, target, header name or value that is not HTTP's,
    /// 413 for a declared body over 1 MiB (as served). A handler's
    /// panic is not caught here (a served request's is, and answers 500):
    /// this is for tests and fuzzing, which must see it.
    ///
    /// # Panics
    /// Called from within an async runtime (it blocks on the handler's
    /// channels), or when a handler panics.
    pub fn answer(
        &self,
        to_replay: bool,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        max_body: usize,
    ) -> Answer {
        let replay = self.replay_listener.as_ref().filter(|_| to_replay);
        let to_replay = replay.is_some();
        let local = replay.unwrap_or(&self.listener);
        net::answer(
            &self.app,
            to_replay,
            local.local_addr().ok(),
            method,
            target,
            headers,
            max_body,
        )
    }

    /// Opens (or creates) the store, indexes what is new in the files (or
    /// loads the CDXJ given), and binds the addresses (the UI's and the
    /// replay origin's).
    ///
    /// # Errors
    /// The store cannot be opened, or an address cannot be bound.
    pub fn bind(opts: ServeOptions) -> Result<Server> {
        // The full-text index first: a wrong path fails before indexing.
        let search = match &opts.search {
            Some(p) => Some(
                warchest_search::SearchIndex::open(p)
                    .map_err(|e| Error::new(ErrorKind::Usage(format!("--search: {e}"))))?,
            ),
            None => None,
        };
        let store_path = match &opts.store {
            Some(p) => p.clone(),
            None => {
                let p = opts.default_store();
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        warchest::Error::from(std::io::Error::new(
                            e.kind(),
                            format!("cannot create the index cache {}: {e}", dir.display()),
                        ))
                    })?;
                }
                tracing::info!("index in {}", p.display());
                p
            }
        };
        // Unreadable entries of the store are said (warnings) by the store
        // as it meets them; counted on the collection page.
        let store = Store::open(&store_path)?;
        if let Some(cdxj) = &opts.cdxj {
            let load = store.load_cdxj(cdxj, &opts.paths)?;
            // Lines that are not CDXJ were said once, as a warning, by the
            // store (the index and their line numbers); the summary only
            // counts them (a warning too then, so it is not missed).
            if load.unparsable > 0 {
                tracing::warn!("{load}");
            } else {
                tracing::info!("{load}");
            }
        } else {
            let r = store.sync(&opts.paths)?;
            for f in r.failures.iter().chain(&r.warnings) {
                tracing::warn!("{f}");
            }
            say_removed(&r);
            tracing::info!(
                "indexed {} new and {} changed files: {} entries ({} WACZ archive files from the WACZ's own index)",
                r.new_sources,
                r.updated_sources,
                r.entries,
                r.from_wacz_index
            );
        }
        let listener = bind(&opts.listen)?;
        let replay_listen = match (&opts.replay_listen, &opts.replay_host) {
            (Some(a), _) => Some(a.clone()),
            (None, Some(_)) => None,
            (None, None) => Some(default_replay_listen(&opts.listen)?),
        };
        let replay_listener = replay_listen.as_deref().map(bind).transpose()?;
        let coll = Collection {
            name: opts.collection.clone(),
            paths: opts.paths.clone(),
            store,
            fuzzy: opts.fuzzy.clone(),
            served: Default::default(),
        };
        let mut local = vec![listener.local_addr()?];
        if let Some(r) = &replay_listener {
            local.push(r.local_addr()?);
        }
        let hosts = allowed_hosts(&opts, &local);
        let replay_host = opts
            .replay_host
            .as_ref()
            .map(|h| h.trim().to_ascii_lowercase());
        let site = Site {
            ui_port: local[0].port(),
            replay_port: local.get(1).map(SocketAddr::port),
            ui_host: opts
                .allowed_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .find(|h| Some(h) != replay_host.as_ref()),
            replay_host,
        };
        Ok(Server {
            listener,
            replay_listener,
            app: Arc::new(App {
                coll,
                hosts,
                limiter: opts.rate_limit.map(RateLimiter::new),
                site,
                search,
                user_header: opts
                    .access_user_header
                    .as_deref()
                    .map(str::to_ascii_lowercase),
                access: std::sync::RwLock::new(Arc::new(opts.access.clone())),
                access_stamp: std::sync::Mutex::new(AccessRules::stamp(&opts.access_files)),
            }),
            opts,
            stop: tokio::sync::watch::Sender::new(false),
        })
    }

    /// The UI's address.
    ///
    /// # Errors
    /// The socket cannot say.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The replay origin's address, when it has a listener of its own.
    ///
    /// # Errors
    /// The socket cannot say.
    pub fn replay_addr(&self) -> io::Result<Option<SocketAddr>> {
        self.replay_listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()
    }

    /// A handle that stops [`Server::run`] gracefully.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.stop.clone())
    }

    /// Serves until stopped (the stop handle, ctrl-c or SIGTERM); the
    /// files are looked at for new ones every `poll`.
    ///
    /// # Errors
    /// The runtime or the listeners cannot be set up.
    pub fn run(self) -> Result<()> {
        if let Some(every) = self.opts.poll {
            let app = self.app.clone();
            let mut stop = self.stop.subscribe();
            let access_files = self.opts.access_files.clone();
            std::thread::spawn(move || {
                while !*stop.borrow_and_update() {
                    std::thread::sleep(every);
                    app.reload_access(&access_files);
                    match app.coll.store.sync(&app.coll.paths) {
                        Ok(r) => {
                            for f in r.failures.iter().chain(&r.warnings) {
                                tracing::warn!("{f}");
                            }
                            say_removed(&r);
                            if r.new_sources + r.updated_sources > 0 {
                                tracing::info!(
                                    "picked up {} new and {} changed files: {} entries",
                                    r.new_sources,
                                    r.updated_sources,
                                    r.entries
                                );
                            }
                        }
                        Err(e) => tracing::warn!("indexing new files: {e}"),
                    }
                }
            });
        }
        let mut listeners = vec![net::Listener {
            socket: self.listener,
            replay: false,
        }];
        if let Some(r) = self.replay_listener {
            listeners.push(net::Listener {
                socket: r,
                replay: true,
            });
        }
        let limits = net::Limits {
            max_connections: self.opts.max_connections.max(1),
            handlers: self.opts.threads.max(1),
        };
        net::run(self.app, listeners, limits, self.stop)?;
        Ok(())
    }
}

/// Says which files a sync found gone, and the captures dropped with them.
fn say_removed(r: &warchest_replay::store::SyncReport) {
    if r.removed.is_empty() {
        return;
    }
    for name in &r.removed {
        tracing::warn!("{name}: no longer there; its captures are dropped");
    }
    let n = r.removed.len();
    let files = if n == 1 { "file" } else { "files" };
    tracing::warn!(
        "{n} {files} no longer there: {} captures dropped",
        r.removed_entries
    );
}

fn text_plain() -> Vec<(String, String)> {
    vec![("Content-Type".into(), "text/plain; charset=utf-8".into())]
}

fn text_html() -> Vec<(String, String)> {
    vec![("Content-Type".into(), "text/html; charset=utf-8".into())]
}

type HResult = std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn handle(app: &App, req: &Request, resp: &mut Responder<'_>) -> HResult {
    if !app.serves_host(req.header("host")) {
        resp.source = "error";
        resp.keep_alive = false;
        resp.send(
            421,
            &text_plain(),
            b"this server does not serve that host\n",
        )?;
        return Ok(());
    }
    if req.method != "GET" && req.method != "HEAD" {
        resp.source = "error";
        resp.keep_alive = false;
        let mut h = text_plain();
        h.push(("Allow".into(), "GET, HEAD".into()));
        resp.send(405, &h, b"only GET and HEAD\n")?;
        return Ok(());
    }
    let path = req.path();
    let coll = &app.coll;
    let rules = app.rules();
    let who = app.viewer(&rules, req);
    // A way for the tests to see that a panicking handler costs one
    // answer (500), not the server: debug builds only, and only when asked
    // for in the environment.
    if cfg!(debug_assertions)
        && path == "/_/panic"
        && std::env::var_os("WARCHEST_SERVE_TEST_PANIC").is_some()
    {
        panic!("a panic asked for (WARCHEST_SERVE_TEST_PANIC)");
    }
    if req.origin.replay {
        return handle_replay_origin(app, req, resp);
    }
    // The UI origin never serves archived bytes, nor scripts for them:
    // those are the replay origin's.
    if path.starts_with("/_/") {
        return to_other_origin(resp, &req.origin.replay_base, &req.target);
    }
    if path == "/" {
        resp.source = "page";
        let body = pages::home(coll, app.search.is_some(), who.sees_all())?;
        resp.send(200, &text_html(), body.as_bytes())?;
        return Ok(());
    }
    // The Internet Archive's CDX server at its own path, for clients
    // written against it (their base URL changed): this server's
    // collection, in that server's outputs.
    if path == IA_CDX_PATH {
        resp.source = "api";
        if limited(app, req, resp)? {
            return Ok(());
        }
        return cdx_api(coll, &who, req, resp, CdxFlavor::InternetArchive);
    }
    // The target after the collection is taken raw (its query included):
    // it is an archived URL, not this server's.
    let raw = &req.target[1..];
    let (cname, rest) = raw.split_once('/').unwrap_or((raw, ""));
    let cname = cname.split('?').next().unwrap_or(cname);
    if cname != coll.name {
        resp.source = "miss";
        let body = pages::error_page(
            404,
            &format!("no collection {cname:?}; this server has {:?}", coll.name),
        );
        resp.send(404, &text_html(), body.as_bytes())?;
        return Ok(());
    }
    let sub = rest.split('?').next().unwrap_or("");
    if rest.is_empty() || sub.is_empty() {
        resp.source = "page";
        let body = pages::home(coll, app.search.is_some(), who.sees_all())?;
        resp.send(200, &text_html(), body.as_bytes())?;
        return Ok(());
    }
    if sub == "search" {
        resp.source = "page";
        return search(coll, &who, app.search.is_some(), req, resp);
    }
    if sub == "fulltext" {
        resp.source = if req.param("output").is_some_and(|o| o == "json") {
            if limited(app, req, resp)? {
                return Ok(());
            }
            "api"
        } else {
            "page"
        };
        return fulltext(app, &who, req, resp);
    }
    if sub == "cdx" {
        resp.source = "api";
        if limited(app, req, resp)? {
            return Ok(());
        }
        return cdx_api(coll, &who, req, resp, CdxFlavor::Pywb);
    }
    if let Some(u) = rest.strip_prefix("timemap/link/") {
        resp.source = "api";
        if limited(app, req, resp)? {
            return Ok(());
        }
        return timemap(coll, &who, req, resp, u);
    }
    if let Some(r) = sub.strip_prefix("record/") {
        if r.ends_with("/warc") || r.ends_with("/payload") {
            return to_other_origin(resp, &req.origin.replay_base, &req.target);
        }
        resp.source = "page";
        return pages::record(coll, &who, req, resp, r);
    }
    if sub.starts_with("file/") {
        return to_other_origin(resp, &req.origin.replay_base, &req.target);
    }
    let (first, after) = rest.split_once('/').unwrap_or((rest, ""));
    if first == "*"
        || (first.ends_with('*') && TimeSpec::parse(first.trim_end_matches('*')).is_some())
    {
        resp.source = "page";
        // `*` is all; `2019*`, `201903*`... a period (the calendar's pages).
        let period = first.trim_end_matches('*');
        let body = calendar::captures(coll, &who, &archive_url::normalize_target(after), period)?;
        resp.send(200, &text_html(), body.as_bytes())?;
        return Ok(());
    }
    if let Some(ts) = TimeSpec::parse(first)
        && !after.is_empty()
    {
        if !ts.modifier.is_empty() {
            return to_other_origin(resp, &req.origin.replay_base, &req.target);
        }
        return framed(coll, &who, req, resp, &ts, after);
    }
    if limited(app, req, resp)? {
        return Ok(());
    }
    timegate(coll, &who, req, resp, rest)
}

/// The replay origin: archived bytes (replay, records, payloads, files)
/// and the scripts replay needs; everything else is the UI's.
fn handle_replay_origin(app: &App, req: &Request, resp: &mut Responder<'_>) -> HResult {
    let coll = &app.coll;
    if req.path() == "/_/client.js" {
        resp.source = "static";
        let h = vec![
            (
                "Content-Type".into(),
                "application/javascript; charset=utf-8".into(),
            ),
            ("Cache-Control".into(), "max-age=3600".into()),
        ];
        resp.send(200, &h, CLIENT_JS.as_bytes())?;
        return Ok(());
    }
    let raw = &req.target[1..];
    let (cname, rest) = raw.split_once('/').unwrap_or((raw, ""));
    let sub = rest.split('?').next().unwrap_or("");
    let rules = app.rules();
    let who = app.viewer(&rules, req);
    if cname == coll.name {
        if let Some(r) = sub.strip_prefix("record/")
            && (r.ends_with("/warc") || r.ends_with("/payload"))
        {
            resp.source = "page";
            return pages::record(coll, &who, req, resp, r);
        }
        if let Some(r) = sub.strip_prefix("file/") {
            resp.source = "archive";
            return download_file(coll, &who, resp, r);
        }
        let (first, after) = rest.split_once('/').unwrap_or((rest, ""));
        if let Some(mut ts) = TimeSpec::parse(first)
            && !after.is_empty()
        {
            if ts.modifier.is_empty() {
                match req.header("sec-fetch-dest") {
                    // A browser opening a page at the top: the UI's
                    // framed page, so the banner is the UI's.
                    Some("document") => {
                        return to_other_origin(resp, &req.origin.ui, &req.target);
                    }
                    // Inside the UI's frame: the page without a banner.
                    Some("iframe") | Some("frame") => ts.modifier = "mp_".into(),
                    // Other clients get the page with its banner.
                    _ => {}
                }
            }
            return replay(coll, &who, req, resp, &ts, after);
        }
    }
    if req.path() == "/_/panic" {
        resp.source = "miss";
        resp.send(404, &text_plain(), b"not here\n")?;
        return Ok(());
    }
    // A replayed page's request that escaped rewriting (a root-relative
    // path outside the collection): into the archive, by its Referer
    // (escape.rs). Replayed pages live on this origin, so only here.
    if cname != coll.name
        && let Some(loc) = escape::escaped_request(
            &coll.name,
            &req.target,
            req.header("referer"),
            req.header("host"),
            req.header("sec-fetch-dest"),
        )
    {
        resp.source = "archive";
        return redirect(resp, &loc, vec![]);
    }
    // The UI's pages are not served here.
    to_other_origin(resp, &req.origin.ui, &req.target)
}

/// A redirect (302) to the same target on the other origin.
fn to_other_origin(resp: &mut Responder<'_>, base: &str, target: &str) -> HResult {
    resp.source = "origin";
    redirect(resp, &format!("{base}{target}"), vec![])
}

/// The capture of `target` nearest `timestamp` that `who` may see; when
/// there is none, a 404 page is sent and `None` returned, and when the
/// access rules block it, a 451 page ([`blocked`]).
fn find_or_404(
    coll: &Collection,
    who: &Viewer<'_>,
    resp: &mut Responder<'_>,
    target: &str,
    timestamp: &str,
) -> std::result::Result<Option<Capture>, Box<dyn std::error::Error + Send + Sync>> {
    let found = coll.find(target, timestamp, who)?;
    match &found {
        None => {
            resp.source = "miss";
            let body = pages::not_archived(coll, target);
            resp.send(404, &text_html(), body.as_bytes())?;
        }
        Some(c) if who.of(c) == Verdict::Block => {
            blocked(resp, target)?;
            return Ok(None);
        }
        Some(_) => {}
    }
    Ok(found)
}

/// The answer for content the access rules block: 451 (RFC 7725), as
/// pywb's.
fn blocked(resp: &mut Responder<'_>, what: &str) -> HResult {
    resp.source = "blocked";
    let body = pages::error_page(451, &format!("access to {what} is blocked in this archive"));
    resp.send(451, &text_html(), body.as_bytes())?;
    Ok(())
}

/// A top-level replay URL on the UI origin: the banner and a frame with
/// the page from the replay origin (`mp_`), as pywb's framed replay.
fn framed(
    coll: &Collection,
    who: &Viewer<'_>,
    req: &Request,
    resp: &mut Responder<'_>,
    ts: &TimeSpec,
    raw_url: &str,
) -> HResult {
    let target = archive_url::normalize_target(raw_url);
    let Some(cap) = find_or_404(coll, who, resp, &target, &ts.timestamp)? else {
        return Ok(());
    };
    let links = ("Link".to_string(), memento_links(req, &coll.name, &target));
    // Asked for at another time: to the capture's own, as replay does.
    if pad_timestamp(&ts.timestamp) != cap.entry.timestamp {
        resp.source = "frame";
        let loc = format!("/{}/{}/{target}", coll.name, cap.entry.timestamp);
        return redirect(resp, &loc, vec![links]);
    }
    let src = format!(
        "{}/{}/{}mp_/{target}",
        req.origin.replay_base, coll.name, cap.entry.timestamp
    );
    let base = cap.entry.url.clone().unwrap_or(target.clone());
    let body = pages::frame(&coll.name, &cap, &base, &src, &req.origin.replay_base);
    let mut h = text_html();
    h.push(("Memento-Datetime".into(), http_date(&cap.entry.timestamp)));
    h.push(links);
    // The UI page runs no archived script; it frames only the replay
    // origin.
    h.push((
        "Content-Security-Policy".into(),
        format!(
            "default-src 'self' 'unsafe-inline'; frame-src {}; frame-ancestors 'self'",
            req.origin.replay_base
        ),
    ));
    resp.source = "frame";
    resp.send(200, &h, body.as_bytes())?;
    Ok(())
}

/// Answers 429 when the client is over its rate limit; true if it did.
fn limited(app: &App, req: &Request, resp: &mut Responder<'_>) -> Result<bool> {
    let (Some(limiter), Some(ip)) = (&app.limiter, req.peer) else {
        return Ok(false);
    };
    if limiter.allow(ip) {
        return Ok(false);
    }
    resp.source = "limited";
    let mut h = text_plain();
    h.push(("Retry-After".into(), "1".into()));
    resp.send(429, &h, b"too many requests: slow down\n")?;
    Ok(true)
}

/// The UI origin as the client reaches it (Memento links, TimeMaps).
fn host_prefix(req: &Request) -> String {
    if !req.origin.ui.is_empty() {
        return req.origin.ui.clone();
    }
    let host = req
        .header("host")
        .filter(|h| {
            h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    format!("http://{host}")
}

fn memento_links(req: &Request, coll: &str, target: &str) -> String {
    let h = host_prefix(req);
    format!(
        "<{target}>; rel=\"original\", <{h}/{coll}/{target}>; rel=\"timegate\", \
         <{h}/{coll}/timemap/link/{target}>; rel=\"timemap\"; type=\"application/link-format\""
    )
}

fn redirect(resp: &mut Responder<'_>, location: &str, extra: Vec<(String, String)>) -> HResult {
    let mut h = text_html();
    h.push(("Location".into(), location.to_string()));
    h.extend(extra);
    let body = format!(
        "<a href=\"{}\">{}</a>\n",
        exchange::escape(location),
        exchange::escape(location)
    );
    resp.send(302, &h, body.as_bytes())?;
    Ok(())
}

/// TimeGate (RFC 7089 section 4.1): `/{coll}/{url}`, the memento nearest
/// to Accept-Datetime (the latest without one), by a 302.
fn timegate(
    coll: &Collection,
    who: &Viewer<'_>,
    req: &Request,
    resp: &mut Responder<'_>,
    raw_url: &str,
) -> HResult {
    resp.source = "api";
    let target = archive_url::normalize_target(raw_url);
    let want = match req.header("accept-datetime") {
        Some(d) => match parse_http_date(d) {
            Some(ts) => ts,
            None => {
                resp.send(400, &text_plain(), b"Accept-Datetime is not an HTTP date\n")?;
                return Ok(());
            }
        },
        None => warchest::http::date::pad_timestamp_up(""),
    };
    let Some(cap) = coll.find(&target, &want, who)? else {
        resp.source = "miss";
        let body = pages::not_archived(coll, &target);
        resp.send(404, &text_html(), body.as_bytes())?;
        return Ok(());
    };
    let loc = format!("/{}/{}/{target}", coll.name, cap.entry.timestamp);
    let extra = vec![
        ("Vary".into(), "accept-datetime".into()),
        ("Link".into(), memento_links(req, &coll.name, &target)),
    ];
    redirect(resp, &loc, extra)
}

/// TimeMap (RFC 7089 section 5): every memento of the URL, link format.
fn timemap(
    coll: &Collection,
    who: &Viewer<'_>,
    req: &Request,
    resp: &mut Responder<'_>,
    raw_url: &str,
) -> HResult {
    let target = archive_url::normalize_target(raw_url);
    let h = host_prefix(req);
    let mut caps = Vec::new();
    coll.store.query(
        &Query {
            range: KeyRange::new(&target, MatchType::Exact),
            from: None,
            to: None,
            limit: MAX_CDX,
            reverse: false,
            skip: 0,
            resume: None,
        },
        |c| {
            if who.sees(&c) {
                caps.push((c.entry.timestamp.clone(), c.entry.url.clone()));
            }
            true
        },
    )?;
    if caps.is_empty() {
        resp.source = "miss";
        resp.send(404, &text_plain(), b"no mementos\n")?;
        return Ok(());
    }
    let name = &coll.name;
    let mut out = String::new();
    out.push_str(&format!("<{target}>; rel=\"original\",\n"));
    out.push_str(&format!(
        "<{h}/{name}/timemap/link/{target}>; rel=\"self\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\",\n",
        http_date(&caps[0].0),
        http_date(&caps[caps.len() - 1].0)
    ));
    out.push_str(&format!("<{h}/{name}/{target}>; rel=\"timegate\""));
    let n = caps.len();
    for (i, (ts, _)) in caps.iter().enumerate() {
        let rel = match (i == 0, i + 1 == n) {
            (true, true) => "first last memento",
            (true, false) => "first memento",
            (false, true) => "last memento",
            _ => "memento",
        };
        out.push_str(&format!(
            ",\n<{h}/{name}/{ts}/{target}>; rel=\"{rel}\"; datetime=\"{}\"",
            http_date(ts)
        ));
    }
    out.push('\n');
    let hdr = vec![("Content-Type".into(), "application/link-format".into())];
    resp.send(200, &hdr, out.as_bytes())?;
    Ok(())
}

/// The CDX server: pywb's parameters (`url`, `matchType`, `limit`,
/// `from`, `to`, `sort=reverse|closest`, `closest`,
/// `output=cdxj|json|text|link`, `fl` or `fields`, `filter`,
/// `collapseTime`, `resolveRevisits`, `allowFuzzy` (the fuzzy answer of
/// an exact query that answered nothing), the pagination API's `page`,
/// `pageSize`, `showNumPages`), and the Internet
/// Archive's `collapse`, `offset`, `fastLatest`, `showResumeKey`/`resumeKey`
/// and counters (`showDupeCount`, `showSkipCount`, `showGroupCount`,
/// `lastSkipTimestamp`); at [`IA_CDX_PATH`], in the Internet Archive's
/// outputs ([`CdxFlavor`]).
fn cdx_api(
    coll: &Collection,
    who: &Viewer<'_>,
    req: &Request,
    resp: &mut Responder<'_>,
    flavor: CdxFlavor,
) -> HResult {
    let ia = flavor == CdxFlavor::InternetArchive;
    let Some(u) = req.param("url").filter(|u| !u.is_empty()) else {
        resp.send(400, &text_plain(), b"the url parameter is required\n")?;
        return Ok(());
    };
    let m = match req.param("matchType").or_else(|| req.param("matchtype")) {
        Some(s) => match MatchType::parse(&s) {
            Some(m) => m,
            None => {
                resp.send(
                    400,
                    &text_plain(),
                    b"matchType: exact, prefix, host or domain\n",
                )?;
                return Ok(());
            }
        },
        None => MatchType::Exact,
    };
    // `limit=-N`: the last N lines of the answer (the Internet Archive's;
    // `limit=-1` is the latest capture).
    let (limit, last) = match req.param("limit") {
        Some(l) => match l.trim().parse::<i64>() {
            Ok(n) => ((n.unsigned_abs() as usize).min(MAX_CDX), n < 0),
            Err(_) => {
                resp.send(400, &text_plain(), b"limit must be a number\n")?;
                return Ok(());
            }
        },
        None => (MAX_CDX, false),
    };
    // The Internet Archive's `fastLatest=true`: the latest captures, no
    // more than `limit` (either sign) of them, the latest alone without
    // one; read from the end as `limit=-N` is.
    let (limit, last) = if flag(req, "fastLatest") {
        let n = if req.param("limit").is_some() {
            limit
        } else {
            1
        };
        (n, true)
    } else {
        (limit, last)
    };
    let output = match (req.param("output"), ia) {
        (None, false) => CdxOutput::Cdxj,
        // The Internet Archive's: text unless JSON (its arrays) is asked for.
        (None, true) => CdxOutput::Text,
        (Some(o), true) => match o.as_str() {
            "json" => CdxOutput::Rows,
            "text" => CdxOutput::Text,
            _ => {
                let msg = format!("output={o} not supported (json, or none for text)\n");
                resp.send(400, &text_plain(), msg.as_bytes())?;
                return Ok(());
            }
        },
        (Some(o), false) => match CdxOutput::parse(&o) {
            Some(o) => o,
            None => {
                let msg = format!("output={o} not supported (cdxj, json, text or link)\n");
                resp.send(400, &text_plain(), msg.as_bytes())?;
                return Ok(());
            }
        },
    };
    // pywb takes `fields` first, then `fl`.
    let mut fields: Option<Vec<String>> =
        req.param("fields").or_else(|| req.param("fl")).map(|f| {
            f.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        });
    let sort = req.param("sort").unwrap_or_default();
    let mut filters = Vec::new();
    for f in req.params("filter") {
        match CdxFilter::parse(&f) {
            Ok(f) => filters.push(f),
            Err(why) => {
                resp.send(
                    400,
                    &text_plain(),
                    format!("filter={f}: {why}\n").as_bytes(),
                )?;
                return Ok(());
            }
        }
    }
    // pywb's `collapseTime` first (pywb has no other), then the Internet
    // Archive's `collapse`s in turn.
    let asked = req
        .param("collapseTime")
        .map(|n| ("collapseTime", n, Collapse::time as fn(&str) -> _))
        .into_iter()
        .chain(
            req.params("collapse")
                .into_iter()
                .map(|f| ("collapse", f, Collapse::parse as fn(&str) -> _)),
        );
    let mut collapses = Vec::new();
    for (name, value, parse) in asked {
        match parse(&value) {
            Ok(c) => collapses.push(c),
            Err(why) => {
                let msg = format!("{name}={value}: {why}\n");
                resp.send(400, &text_plain(), msg.as_bytes())?;
                return Ok(());
            }
        }
    }
    // The Internet Archive's `offset`, resumption key and counters.
    let offset = match req.param("offset").map(|o| o.trim().parse::<usize>()) {
        None => 0,
        Some(Ok(o)) => o,
        Some(Err(_)) => {
            resp.send(400, &text_plain(), b"offset must be a number from 0\n")?;
            return Ok(());
        }
    };
    let show_resume = flag(req, "showResumeKey");
    let resume = req
        .param("resumeKey")
        .filter(|k| !k.is_empty())
        .map(|k| resume_key_of(&k));
    let mut counters = CdxCounters::new(req);
    if ia && fields.is_none() {
        // Its seven fields, then the counters asked for.
        fields = Some(
            IA_CDX_FIELDS
                .into_iter()
                .chain(counters.names())
                .map(str::to_string)
                .collect(),
        );
    }
    // pywb's `resolveRevisits`: resolved in the index's order, before the
    // filters, as pywb does; with `sort=reverse` the answer is read in
    // that order and turned round (pywb's way too).
    let mut resolver = flag(req, "resolveRevisits").then(|| RevisitResolver {
        from: req.param("from").map(|f| pad_timestamp(&f)),
        to: req
            .param("to")
            .map(|t| warchest::http::date::pad_timestamp_up(&t)),
        offset,
        ..RevisitResolver::default()
    });
    let turn_round = resolver.is_some() && sort == "reverse";
    // Pages (pywb's pagination API, which pywb gives a ZipNum index only):
    // asked for by `page` or `showNumPages`, never otherwise.
    let page = match req.param("page").map(|p| p.trim().parse::<usize>()) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(_)) => {
            resp.send(400, &text_plain(), b"page must be a number from 0\n")?;
            return Ok(());
        }
    };
    let page_size = match req.param("pageSize").map(|p| p.trim().parse::<usize>()) {
        None => CDX_PAGE_BLOCKS,
        Some(Ok(n)) if (1..=MAX_CDX / CDX_BLOCK).contains(&n) => n,
        Some(_) => {
            let msg = format!(
                "pageSize must be a number of blocks from 1 to {}\n",
                MAX_CDX / CDX_BLOCK
            );
            resp.send(400, &text_plain(), msg.as_bytes())?;
            return Ok(());
        }
    };
    let show_pages = req.param("showNumPages").is_some_and(|v| v == "true");
    let paged = page.is_some() || show_pages;
    let refused = if sort == "closest"
        && (offset > 0
            || show_resume
            || resume.is_some()
            || counters.counts()
            || resolver.is_some())
    {
        Some(
            "offset, resumption keys, counters and resolveRevisits are not taken with sort=closest",
        )
    } else if (show_resume || resume.is_some()) && (last || paged) {
        Some(
            "a resumption key reads an answer in parts from its start: not with pages or a negative limit",
        )
    } else if resolver.is_some() && paged {
        Some("resolveRevisits reads the index from the query's start: not with pages")
    } else if output == CdxOutput::Link && (show_resume || counters.counts() || resolver.is_some())
    {
        Some("the link format has no place for a resumption key, counters or resolved revisits")
    } else if turn_round
        && (last || show_resume || resume.is_some() || counters.counts() || !collapses.is_empty())
    {
        Some(
            "resolveRevisits with sort=reverse reads the index in its order and turns the answer round: not with a negative limit, resumption keys, counters or collapses",
        )
    } else {
        None
    };
    if let Some(why) = refused {
        resp.send(400, &text_plain(), format!("{why}\n").as_bytes())?;
        return Ok(());
    }
    // With `resolveRevisits` the originals before `from` are read too, and
    // the period and offset applied after (pywb clamps after resolving).
    let resolving = resolver.is_some();
    let mut q = Query {
        range: KeyRange::new(&u, m),
        from: req.param("from").filter(|_| !resolving),
        to: req.param("to").filter(|_| !resolving),
        // Filtered and collapsed lines do not count: the limit is
        // applied as lines are answered, and the captures read are
        // bounded there.
        limit: usize::MAX,
        reverse: sort == "reverse" && !turn_round,
        // The Internet Archive's `offset` passes over captures before the
        // filters, as its server does.
        skip: if resolving { 0 } else { offset },
        resume,
    };
    let count_pages = |q: &Query| -> Result<(usize, usize)> {
        // Keeping the block starts it passes: a client that shares the
        // pages among workers asks for far pages first.
        let blocks = coll.store.count_stepped(q, CDX_BLOCK)?.div_ceil(CDX_BLOCK);
        Ok((blocks, blocks.div_ceil(page_size)))
    };
    if show_pages {
        let (blocks, pages) = count_pages(&q)?;
        if ia {
            // The Internet Archive's answer: the number alone.
            resp.send(200, &text_plain(), format!("{pages}\n").as_bytes())?;
            return Ok(());
        }
        let body =
            format!("{{\"pages\": {pages}, \"pageSize\": {page_size}, \"blocks\": {blocks}}}");
        resp.send(200, &application_json(), body.as_bytes())?;
        return Ok(());
    }
    if let Some(page) = page {
        let window = page_size * CDX_BLOCK;
        // A page after the first starts at its first capture, found from
        // the keys alone without counting the rest. A page past the last
        // has none and is refused (counted then, to say which is last),
        // which is how pywb's clients (cdx_toolkit) know they are done;
        // page 0 of nothing is empty. `sort=closest` is one page.
        if page > 0 {
            let start = if sort == "closest" {
                None
            } else {
                // From the last page start found for this query, kept
                // until the store changes: cdx_toolkit reads every page in
                // turn, and each would read all the keys before it.
                coll.store
                    .nth_key_stepped(&q, page.saturating_mul(window), CDX_BLOCK)?
            };
            let Some(start) = start else {
                let last = if sort == "closest" {
                    0
                } else {
                    count_pages(&q)?.1.saturating_sub(1)
                };
                let msg = format!("page={page}: the first page is 0, the last {last}\n");
                resp.send(400, &text_plain(), msg.as_bytes())?;
                return Ok(());
            };
            q.resume = Some(start);
        }
        // The page's captures; an offset (`q.skip`) passes over the first
        // of them.
        q.limit = window.saturating_sub(offset);
    }
    // pywb's fuzzy answer, for an exact query that answered nothing.
    let fuzzy = m == MatchType::Exact
        && !ia
        && !paged
        && q.resume.is_none()
        && offset == 0
        && !resolving
        && !counters.counts()
        && req
            .param("allowFuzzy")
            .is_none_or(|_| flag(req, "allowFuzzy"));
    let h = vec![("Content-Type".into(), output.content_type().to_string())];
    // Lines are written as the store gives them, not gathered first.
    let mut body = resp.stream(200, "OK", &h)?;
    // Lines answered (a write that failed among them).
    let answered = std::cell::Cell::new(0usize);
    let mut werr: Option<io::Error> = None;
    let mut first = true;
    // A blocked capture's line says so (`"access": "block"`, as pywb's),
    // where lines name their fields.
    let says_access = matches!(output, CdxOutput::Cdxj | CdxOutput::Json)
        || fields
            .as_deref()
            .is_some_and(|f| f.iter().any(|k| k == "access"));
    let mut write_line = |c: &Capture, extra: &[(&'static str, String)]| -> bool {
        let with_access: Vec<(&'static str, String)>;
        let extra = if says_access && !who.sees_all() && who.of(c) == Verdict::Block {
            with_access = extra
                .iter()
                .cloned()
                .chain([("access", "block".to_string())])
                .collect();
            &with_access[..]
        } else {
            extra
        };
        let mut line = Vec::new();
        answered.set(answered.get() + 1);
        // Link lines are joined by a comma; the last has none. The
        // Internet Archive's arrays are one JSON array, its first row
        // the fields' names.
        if output == CdxOutput::Link && !first {
            line.extend_from_slice(b",\n");
        }
        if output == CdxOutput::Rows {
            rows_before(first, fields.as_deref(), &mut line);
        }
        first = false;
        cdx_line(c, output, fields.as_deref(), &coll.name, extra, &mut line);
        match body.write_all(&line) {
            Ok(()) => true,
            Err(e) => {
                werr = Some(e);
                false
            }
        }
    };
    // Where the answer would go on past its limit (a resumption key).
    let mut next: Option<String> = None;
    if sort == "closest" {
        let ts = cdx_closest(req);
        let found = coll
            .store
            .closest(&archive_url::normalize_target(&u), &ts, limit, |c| {
                accepted(&filters, c) && who.sees(c)
            })?;
        // Collapsed in the order answered, nearest first.
        for c in &found {
            if kept(&[], &mut collapses, c) && !write_line(c, &[]) {
                break;
            }
        }
    } else if limit > 0 && (last || turn_round) {
        let mut tail = std::collections::VecDeque::new();
        if collapses.is_empty()
            && page.is_none()
            && offset == 0
            && !counters.counts()
            && resolver.is_none()
        {
            // From the other end: the first N found there, turned round.
            q.reverse = !q.reverse;
            let mut reads = 0usize;
            coll.store.query(&q, |c| {
                reads += 1;
                if accepted(&filters, &c) && who.sees(&c) {
                    tail.push_front((c, Vec::new()));
                }
                tail.len() < limit && reads < CDX_READ_LIMIT
            })?;
        } else {
            // A run collapses to its first line, a page and an offset are
            // counted from the start, and so are the counters: read
            // forwards, keeping the last N.
            let mut keep_last = |line: (Capture, Extras)| {
                if tail.len() == limit {
                    tail.pop_front();
                }
                tail.push_back(line);
            };
            let mut reads = 0usize;
            coll.store.query(&q, |mut c| {
                reads += 1;
                // Not there for this viewer: not even a skip counted.
                if !who.sees(&c) {
                    return reads < CDX_READ_LIMIT;
                }
                let Some(extra) = resolve(&mut resolver, &mut c) else {
                    return reads < CDX_READ_LIMIT;
                };
                if kept(&filters, &mut collapses, &c) {
                    if let Some(line) = counters.kept(c, extra) {
                        keep_last(line);
                    }
                } else {
                    counters.passed(&c);
                }
                reads < CDX_READ_LIMIT
            })?;
            if let Some(line) = counters.finish() {
                keep_last(line);
            }
        }
        if turn_round {
            tail.make_contiguous().reverse();
        }
        for (c, extra) in &tail {
            if !write_line(c, extra) {
                break;
            }
        }
    } else if limit > 0 {
        // Past the limit the read goes on to the next line that would
        // have been answered, for a resumption key or the last group's
        // counts.
        let look_ahead = show_resume || counters.grouped();
        let mut n = 0usize;
        let mut reads = 0usize;
        let mut stopped = false;
        coll.store.query(&q, |mut c| {
            reads += 1;
            if reads > CDX_READ_LIMIT {
                next = Some(c.key());
                return false;
            }
            if !who.sees(&c) {
                return true;
            }
            let Some(extra) = resolve(&mut resolver, &mut c) else {
                return true;
            };
            let keep = kept(&filters, &mut collapses, &c);
            if n == limit {
                if keep {
                    next = Some(c.key());
                    return false;
                }
                counters.passed(&c);
                return true;
            }
            if keep {
                n += 1;
                if let Some((c, extra)) = counters.kept(c, extra)
                    && !write_line(&c, &extra)
                {
                    stopped = true;
                    return false;
                }
            } else {
                counters.passed(&c);
            }
            n < limit || look_ahead
        })?;
        if !stopped && let Some((c, extra)) = counters.finish() {
            write_line(&c, &extra);
        }
    }
    if fuzzy && answered.get() == 0 && limit > 0 {
        let found = fuzzy_answer(coll, who, &u, req)?;
        let marked = [("is_fuzzy", "1".to_string())];
        let mut lines = found
            .into_iter()
            .filter(|c| kept(&filters, &mut collapses, c))
            .collect::<Vec<_>>();
        if last {
            lines.drain(..lines.len().saturating_sub(limit));
        }
        for c in lines.iter().take(limit) {
            if !write_line(c, &marked) {
                break;
            }
        }
    }
    if show_resume
        && werr.is_none()
        && let Some(k) = next
    {
        let k: String = form_urlencoded::byte_serialize(k.as_bytes()).collect();
        let line = match output {
            CdxOutput::Json => format!("{{\"resumeKey\": \"{k}\"}}\n"),
            // After the last row: an empty one, then the key's.
            CdxOutput::Rows => {
                let mut l = Vec::new();
                rows_before(first, fields.as_deref(), &mut l);
                first = false;
                l.extend_from_slice(b"[],\n");
                json_row(&[k], &mut l);
                String::from_utf8_lossy(&l).into_owned()
            }
            _ => format!("\n{k}\n"),
        };
        werr = body.write_all(line.as_bytes()).err();
    }
    // The link format's last line ends with a newline only; the Internet
    // Archive's arrays close theirs (no row at all: `[]`).
    if output == CdxOutput::Link && !first && werr.is_none() {
        werr = body.write_all(b"\n").err();
    }
    if output == CdxOutput::Rows && werr.is_none() {
        werr = body.write_all(if first { b"[]\n" } else { b"]\n" }).err();
    }
    if let Some(e) = werr {
        return Err(e.into());
    }
    body.finish()?;
    Ok(())
}

/// pywb's fuzzy answer to the CDX API's exact query `url` that answered
/// nothing: the captures the collection's fuzzy rules take for the same
/// resource ([`Collection::fuzzy_matches`]: the replay's, at most 10,000
/// looked at), within `from` and `to`, in the index's order, turned
/// round for `sort=reverse`, nearest first for `sort=closest`.
fn fuzzy_answer(
    coll: &Collection,
    who: &Viewer<'_>,
    url: &str,
    req: &Request,
) -> Result<Vec<Capture>> {
    let mut found = Vec::new();
    coll.fuzzy_matches(
        &archive_url::normalize_target(url),
        req.param("from"),
        req.param("to"),
        who,
        |c| found.push(c),
    )?;
    match req.param("sort").as_deref() {
        Some("reverse") => found.reverse(),
        Some("closest") => {
            let at = warchest::http::date::timestamp_seconds(&pad_timestamp(&cdx_closest(req)));
            found.sort_by_key(|c| {
                (warchest::http::date::timestamp_seconds(&c.entry.timestamp) - at).abs()
            });
        }
        _ => {}
    }
    Ok(found)
}

/// The CDX API's `closest=` timestamp for `sort=closest`: now when not
/// given.
fn cdx_closest(req: &Request) -> String {
    req.param("closest")
        .unwrap_or_else(|| warchest::http::date::pad_timestamp_up(""))
}

/// The CDX API's `output=`, pywb's four.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CdxOutput {
    /// `urlkey timestamp {JSON}` (the default).
    Cdxj,
    /// One JSON object a line.
    Json,
    /// Space-separated values: of the fields `fl=` names, or of all.
    Text,
    /// Memento link format (RFC 7089): the original URL of each capture
    /// with its datetime, as pywb's API gives them.
    Link,
    /// The Internet Archive's JSON: one array of rows, each an array of
    /// strings, the first the fields' names.
    Rows,
}

/// Whose CDX server an answer follows: pywb's (`/{coll}/cdx`) or the
/// Internet Archive's ([`IA_CDX_PATH`]): the same queries, its outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CdxFlavor {
    Pywb,
    InternetArchive,
}

/// The Internet Archive's CDX server's path (`web.archive.org/cdx/search/cdx`).
const IA_CDX_PATH: &str = "/cdx/search/cdx";

/// The fields the Internet Archive's CDX server answers unless `fl=`
/// names others.
const IA_CDX_FIELDS: [&str; 7] = [
    "urlkey",
    "timestamp",
    "original",
    "mimetype",
    "statuscode",
    "digest",
    "length",
];

/// What comes before a row of the Internet Archive's arrays: the array's
/// opening and its first row, the fields' names, before the first; a
/// separator before every row.
fn rows_before(first: bool, fields: Option<&[String]>, line: &mut Vec<u8>) {
    if first {
        line.push(b'[');
        json_row(fields.unwrap_or_default(), line);
    }
    line.extend_from_slice(b",\n");
}

/// Writes `values` as a JSON array of strings.
fn json_row<S: AsRef<str>>(values: &[S], line: &mut Vec<u8>) {
    line.push(b'[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            line.extend_from_slice(b", ");
        }
        warchest_index::py_json_str(v.as_ref(), line);
    }
    line.push(b']');
}

impl CdxOutput {
    fn parse(s: &str) -> Option<CdxOutput> {
        Some(match s {
            "cdxj" => CdxOutput::Cdxj,
            "json" => CdxOutput::Json,
            "text" => CdxOutput::Text,
            "link" => CdxOutput::Link,
            _ => return None,
        })
    }

    /// pywb's types, but for JSON, whose registered name is
    /// `application/x-ndjson` (pywb says `text/x-ndjson`).
    fn content_type(self) -> &'static str {
        match self {
            CdxOutput::Cdxj => "text/x-cdxj",
            CdxOutput::Json => "application/x-ndjson",
            CdxOutput::Text => "text/plain",
            CdxOutput::Link => "application/link-format",
            CdxOutput::Rows => "application/json",
        }
    }
}

/// The full-text search page and its JSON API (`output=json`): the
/// request from the query string (`q`, `page`, `n`, `host`, `year`,
/// `mime`, `language`), bounded as `warchest search`'s.
fn fulltext(app: &App, who: &Viewer<'_>, req: &Request, resp: &mut Responder<'_>) -> HResult {
    let coll = &app.coll.name;
    let json = req.param("output").is_some_and(|o| o == "json");
    let Some(index) = &app.search else {
        let msg = "this server has no full-text index (serve --search INDEX)";
        if json {
            let body = serde_json::json!({ "error": msg }).to_string();
            resp.send(404, &application_json(), body.as_bytes())?;
        } else {
            let body = pages::error_page(404, msg);
            resp.send(404, &text_html(), body.as_bytes())?;
        }
        return Ok(());
    };
    let r = warchest_search::web::request_from_query(req.query());
    let action = format!("/{coll}/fulltext");
    let asked = !r.query.trim().is_empty()
        || r.host.is_some()
        || r.year.is_some()
        || r.mime.is_some()
        || r.language.is_some();
    if !json && !asked {
        let body = pages::fulltext_page(coll, &warchest_search::web::form_html(&action, ""));
        resp.send(200, &text_html(), body.as_bytes())?;
        return Ok(());
    }
    // Under access rules, only what the viewer is shown whole: hits,
    // counts, facets and histogram alike.
    let searched = if who.sees_all() {
        index.search(&r)
    } else {
        match who.allowed() {
            Some(region) => index.search_in(&r, &region),
            None => {
                let msg = "the access rules are too many to search within";
                resp.send(503, &text_plain(), format!("{msg}\n").as_bytes())?;
                return Ok(());
            }
        }
    };
    match searched {
        Ok(found) => {
            if json {
                let body = serde_json::to_vec(&found)?;
                resp.send(200, &application_json(), &body)?;
            } else {
                let html =
                    warchest_search::web::results_html(&action, &format!("/{coll}/"), &found);
                let body = pages::fulltext_page(coll, &html);
                resp.send(200, &text_html(), body.as_bytes())?;
            }
        }
        // A request out of bounds or a query that does not parse: 400,
        // saying why; anything else is the server's.
        Err(e) => {
            let status = if matches!(e, warchest_search::Error::Query(_)) {
                400
            } else {
                500
            };
            if json {
                let body = serde_json::json!({ "error": e.to_string() }).to_string();
                resp.send(status, &application_json(), body.as_bytes())?;
            } else {
                let form = warchest_search::web::form_html(&action, &r.query);
                let body = pages::fulltext_page(
                    coll,
                    &format!(
                        "{form}<p class=\"error\">{}</p>",
                        exchange::escape(&e.to_string())
                    ),
                );
                resp.send(status, &text_html(), body.as_bytes())?;
            }
        }
    }
    Ok(())
}

fn application_json() -> Vec<(String, String)> {
    vec![("Content-Type".into(), "application/json".into())]
}

/// Whether every filter accepts `c`: its fields made once for all the
/// filters, and not at all when there are none.
fn accepted(filters: &[CdxFilter], c: &Capture) -> bool {
    kept(filters, &mut [], c)
}

/// One line of the CDX API, as pywb writes it from an index line. Without
/// `fl=` it is the index line itself, from the index crate's one encoder:
/// CDXJ (pywb passes the index line through), or with `output=json` the
/// object with `urlkey` and `timestamp` first (pywb re-encodes it with
/// `json.dumps`), so a capture is answered as `warchest index` writes it.
/// With `fl=` only the fields named, in that order: after the line's key
/// as CDXJ (whose JSON has no `urlkey` or `timestamp`), or as a JSON
/// object. Text is the values of the fields named, or of all, separated
/// by spaces; a field named that this capture lacks, or a `null`, is `-`
/// (as pywb 2.10 writes them; it gives no error for a field it does not
/// know either). A link line is the capture's memento in collection
/// `coll`, without the comma that joins it to the next. A field `fl=`
/// names by another name the filters take ([`cdx_field_name`]: the
/// Internet Archive's `original`, `mimetype`, `statuscode`...) is that
/// field, given under the name asked (pywb answers `-` for it). `extra` are the
/// Internet Archive's counters (`dupecount`...), after the capture's own
/// fields, or where `fl=` names them (the link format has none). Appended
/// to `line`.
fn cdx_line(
    c: &Capture,
    output: CdxOutput,
    fields: Option<&[String]>,
    coll: &str,
    extra: &[(&'static str, String)],
    line: &mut Vec<u8>,
) {
    match (output, fields) {
        (CdxOutput::Link, _) => {
            let url = c.entry.url.as_deref().unwrap_or_default();
            line.extend_from_slice(
                format!(
                    "<{url}>; rel=\"memento\"; datetime=\"{}\"; collection=\"{coll}\"",
                    http_date(&c.entry.timestamp)
                )
                .as_bytes(),
            );
        }
        (CdxOutput::Text | CdxOutput::Rows, fields) => {
            let obj = cdx_object(c);
            let text =
                |v: &warchest_index::FieldValue<'_>| v.text().unwrap_or("-".into()).into_owned();
            let values: Vec<String> = match fields {
                Some(fields) => fields
                    .iter()
                    .map(
                        |k| match obj.iter().find(|(n, _)| *n == cdx_field_name(k)) {
                            Some((_, v)) => text(v),
                            None => extra
                                .iter()
                                .find(|(n, _)| n == k)
                                .map_or("-".into(), |(_, v)| v.clone()),
                        },
                    )
                    .collect(),
                None => obj
                    .iter()
                    .map(|(_, v)| text(v))
                    .chain(extra.iter().map(|(_, v)| v.clone()))
                    .collect(),
            };
            if output == CdxOutput::Rows {
                json_row(&values, line);
            } else {
                line.extend_from_slice(values.join(" ").as_bytes());
                line.push(b'\n');
            }
        }
        (CdxOutput::Cdxj | CdxOutput::Json, None) => {
            let format = if output == CdxOutput::Cdxj {
                warchest_index::Format::Cdxj
            } else {
                warchest_index::Format::Json
            };
            let start = line.len();
            warchest_index::Encoder::new(&format).encode(&c.entry, line);
            // The counters go inside the line's object, at its end.
            if !extra.is_empty() && line[start..].ends_with(b"}\n") {
                line.truncate(line.len() - 2);
                for (k, v) in extra {
                    line.extend_from_slice(b", ");
                    warchest_index::py_json_str(k, line);
                    line.extend_from_slice(b": ");
                    warchest_index::py_json_str(v, line);
                }
                line.extend_from_slice(b"}\n");
            }
        }
        (CdxOutput::Cdxj | CdxOutput::Json, Some(fields)) => {
            let cdxj = output == CdxOutput::Cdxj;
            if cdxj {
                line.extend_from_slice(c.entry.urlkey.as_bytes());
                line.push(b' ');
                line.extend_from_slice(c.entry.timestamp.as_bytes());
                line.push(b' ');
            }
            let obj = warchest_index::entry_fields(&c.entry, !cdxj).collect::<Vec<_>>();
            line.push(b'{');
            let mut first = true;
            for k in fields {
                let found = obj.iter().find(|(n, _)| *n == cdx_field_name(k));
                let counter = extra.iter().find(|(n, _)| n == k);
                if found.is_none() && counter.is_none() {
                    continue;
                }
                if !first {
                    line.extend_from_slice(b", ");
                }
                first = false;
                warchest_index::py_json_str(k, line);
                line.extend_from_slice(b": ");
                match (found, counter) {
                    (Some((_, v)), _) => v.write_json(line),
                    (None, Some((_, v))) => warchest_index::py_json_str(v, line),
                    (None, None) => {}
                }
            }
            line.extend_from_slice(b"}\n");
        }
    }
}

/// The index's name of a field a CDX query names: pywb's other names
/// (`CDXObject.CDX_ALT_FIELDS`), which its filters take, among them the
/// Internet Archive's `original`, `mimetype` and `statuscode`, and the
/// one letters `u`, `m`, `l`, `o`, `d`, `t`, `k`, `f`. `s` is the length,
/// as in pywb, whose table names it twice and keeps the last. Another
/// name is itself.
fn cdx_field_name(name: &str) -> &str {
    match name {
        "u" | "original" => "url",
        "statuscode" => "status",
        "m" | "mimetype" => "mime",
        "l" | "s" => "length",
        "o" => "offset",
        "d" => "digest",
        "t" => "timestamp",
        "k" => "urlkey",
        "f" => "filename",
        n => n,
    }
}

/// A `filter=` of pywb's CDX server: `[!][=|~]FIELD:EXPRESSION`, the
/// field containing the expression, equal to it (`=`), or matched by it
/// as a regular expression from its start (`~`, as Python's `re.match`);
/// `!` negates. Without `FIELD:`, the whole CDXJ line is tested (as pywb
/// tests its CDX object's text).
struct CdxFilter {
    /// `None`: the whole line.
    field: Option<String>,
    test: FilterTest,
    negate: bool,
}

enum FilterTest {
    Contains(String),
    Equals(String),
    /// Anchored at the start.
    Matches(regex::Regex),
}

/// The most a `~` filter's compiled expression may take (the regex
/// crate's size limit): a request cannot make the server build a huge
/// automaton.
const FILTER_REGEX_LIMIT: usize = 1 << 20;

impl CdxFilter {
    /// # Errors
    /// A `~` expression that is not a regular expression the regex crate
    /// takes (or past its size limit): said, never dropped.
    fn parse(s: &str) -> Result<CdxFilter, String> {
        let (negate, s) = match s.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let (op, s) = match s.as_bytes().first() {
            Some(b'=') => ('=', &s[1..]),
            Some(b'~') => ('~', &s[1..]),
            _ => (' ', s),
        };
        let (field, expr) = match s.split_once(':') {
            Some((f, e)) => (Some(cdx_field_name(f).to_string()), e),
            None => (None, s),
        };
        let test = match op {
            '=' => FilterTest::Equals(expr.to_string()),
            '~' => FilterTest::Matches(
                regex::RegexBuilder::new(&format!("^(?:{expr})"))
                    .size_limit(FILTER_REGEX_LIMIT)
                    .build()
                    .map_err(|e| format!("not a regular expression: {e}"))?,
            ),
            _ => FilterTest::Contains(expr.to_string()),
        };
        Ok(CdxFilter {
            field,
            test,
            negate,
        })
    }

    /// A field missing or `null` is matched as empty; `line` is the whole
    /// CDXJ line, for a filter without a field.
    fn accepts(&self, fields: &[(&str, warchest_index::FieldValue<'_>)], line: &str) -> bool {
        let v = match &self.field {
            Some(name) => fields
                .iter()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.text())
                .unwrap_or_default(),
            None => line.into(),
        };
        let v = v.as_ref();
        let hit = match &self.test {
            FilterTest::Contains(e) => v.contains(e.as_str()),
            FilterTest::Equals(e) => v == e,
            FilterTest::Matches(r) => r.is_match(v),
        };
        hit != self.negate
    }
}

/// A `collapse=FIELD[:N]` of the Internet Archive's CDX server: of
/// adjacent lines (in the answer's order, after the filters) whose field,
/// or its first N characters, is the same, only the first is kept
/// (`collapse=urlkey`: one capture a URL; `collapse=timestamp:10`: one an
/// hour). Several apply in turn, each to the lines the ones before kept.
struct Collapse {
    field: &'static str,
    chars: Option<usize>,
    /// pywb's `collapseTime`: the status is compared too.
    with_status: bool,
    /// The last kept capture's value; `None` before the first.
    last: Option<String>,
    /// This capture's value, made in place (no allocation a capture).
    this: String,
}

impl Collapse {
    /// # Errors
    /// A field the index does not have (the other names pywb's filters
    /// take, the Internet Archive's `original`, `mimetype` and
    /// `statuscode` among them, are taken: [`cdx_field_name`]), or an N
    /// that is not a number.
    fn parse(s: &str) -> Result<Collapse, String> {
        let (name, chars) = match s.split_once(':') {
            Some((f, n)) => match n.trim().parse::<usize>() {
                Ok(n) => (f, Some(n)),
                Err(_) => return Err(format!("{n:?} is not a number of characters")),
            },
            None => (s, None),
        };
        let name = cdx_field_name(name.trim());
        let Some(field) = warchest_index::entry_field_names().find(|f| *f == name) else {
            let known = warchest_index::entry_field_names().collect::<Vec<_>>();
            return Err(format!(
                "no field {name:?} (the fields are {})",
                known.join(", ")
            ));
        };
        Ok(Collapse {
            field,
            chars,
            with_status: false,
            last: None,
            this: String::new(),
        })
    }

    /// pywb's `collapseTime=N`: of adjacent lines whose timestamp's first
    /// N digits and status are the same, the first.
    ///
    /// # Errors
    /// N is not a number.
    fn time(n: &str) -> Result<Collapse, String> {
        let chars = n
            .trim()
            .parse::<usize>()
            .map_err(|_| format!("{n:?} is not a number of digits"))?;
        Ok(Collapse {
            field: "timestamp",
            chars: Some(chars),
            with_status: true,
            last: None,
            this: String::new(),
        })
    }

    /// Whether the capture is kept: its value (empty where it has none)
    /// differs from the last kept one's.
    fn keep(&mut self, fields: &[(&str, warchest_index::FieldValue<'_>)]) -> bool {
        let field = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| v.text())
                .unwrap_or_default()
        };
        let text = field(self.field);
        self.this.clear();
        self.this
            .push_str(match self.chars.and_then(|n| text.char_indices().nth(n)) {
                Some((end, _)) => &text[..end],
                None => &text,
            });
        if self.with_status {
            self.this.push(' ');
            self.this.push_str(&field("status"));
        }
        // A repeat, the common case of a collapse, costs no allocation.
        if self.last.as_deref() == Some(self.this.as_str()) {
            return false;
        }
        let last = self.last.get_or_insert_with(String::new);
        std::mem::swap(last, &mut self.this);
        true
    }
}

/// Whether a capture is answered: the filters take it, then each
/// collapse (the capture's fields gathered once for both).
fn kept(filters: &[CdxFilter], collapses: &mut [Collapse], c: &Capture) -> bool {
    if filters.is_empty() && collapses.is_empty() {
        return true;
    }
    let fields = cdx_object(c);
    // The CDXJ line, only for a filter of the whole line.
    let line = if filters.iter().any(|f| f.field.is_none()) {
        let mut l = Vec::new();
        cdx_line(c, CdxOutput::Cdxj, None, "", &[], &mut l);
        String::from_utf8_lossy(l.trim_ascii_end()).into_owned()
    } else {
        String::new()
    };
    filters.iter().all(|f| f.accepts(&fields, &line))
        && collapses.iter_mut().all(|k| k.keep(&fields))
}

/// The most captures one CDX answer reads (past the filters and
/// collapses); a resumption key goes on from there.
const CDX_READ_LIMIT: usize = MAX_CDX * 10;

/// A boolean query parameter as the Internet Archive's server reads one
/// (Spring's: `true`, `on`, `yes` or `1`).
fn flag(req: &Request, name: &str) -> bool {
    req.param(name).is_some_and(|v| {
        ["true", "on", "yes", "1"]
            .iter()
            .any(|t| v.trim().eq_ignore_ascii_case(t))
    })
}

/// The store key a `resumeKey=` names. The key is answered
/// percent-encoded (as the Internet Archive's are, spaces as `+`), and a
/// client sends it back encoded once more (then it arrives as printed,
/// with no space) or as it was printed (then the query's decoding has
/// already made it the key, which has spaces).
fn resume_key_of(param: &str) -> String {
    if param.contains(' ') {
        return param.to_string();
    }
    // The printed key has no `&` or `=` left unencoded: one pair.
    form_urlencoded::parse(param.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// The counters a CDX line may carry, by name, with their values.
type Extras = Vec<(&'static str, String)>;

/// The Internet Archive's counters over the lines of an answer:
/// `dupecount` (`showDupeCount`: the lines before this one with its
/// digest), and for the group of captures read from this line to the
/// next one answered, those the filters and collapses passed over:
/// `skipcount` (`showSkipCount`: how many), `groupcount`
/// (`showGroupCount`: the line and those) and `endtimestamp`
/// (`lastSkipTimestamp`: the last one's timestamp, the line's own when
/// none). A line with group counts is written once its group ends.
struct CdxCounters {
    dupes: Option<std::collections::HashMap<String, usize>>,
    skip: bool,
    group: bool,
    end: bool,
    /// The line answered last, its group still open.
    pending: Option<(Capture, Extras)>,
    skipped: usize,
    last_timestamp: String,
}

impl CdxCounters {
    fn new(req: &Request) -> CdxCounters {
        CdxCounters {
            dupes: flag(req, "showDupeCount").then(Default::default),
            skip: flag(req, "showSkipCount"),
            group: flag(req, "showGroupCount"),
            end: flag(req, "lastSkipTimestamp"),
            pending: None,
            skipped: 0,
            last_timestamp: String::new(),
        }
    }

    /// The fields the counters asked for add to a line, in their order
    /// there ([`CdxCounters::kept`], [`CdxCounters::finish`]).
    fn names(&self) -> impl Iterator<Item = &'static str> {
        [
            (self.dupes.is_some(), "dupecount"),
            (self.skip, "skipcount"),
            (self.group, "groupcount"),
            (self.end, "endtimestamp"),
        ]
        .into_iter()
        .filter_map(|(asked, name)| asked.then_some(name))
    }

    /// Whether any counter was asked for.
    fn counts(&self) -> bool {
        self.dupes.is_some() || self.grouped()
    }

    /// Whether a line waits for its group's end.
    fn grouped(&self) -> bool {
        self.skip || self.group || self.end
    }

    /// A capture answered, with the fields it has so far: the line ready
    /// to write, if any (with group counts, the one before it, whose
    /// group this ends).
    fn kept(&mut self, c: Capture, mut extra: Extras) -> Option<(Capture, Extras)> {
        if let Some(d) = &mut self.dupes {
            let n = d
                .entry(c.entry.digest.clone().unwrap_or_default())
                .or_insert(0);
            extra.push(("dupecount", n.to_string()));
            *n += 1;
        }
        if !self.grouped() {
            return Some((c, extra));
        }
        let done = self.finish();
        self.last_timestamp.clone_from(&c.entry.timestamp);
        self.pending = Some((c, extra));
        done
    }

    /// A capture read and not answered: counted in the open group.
    fn passed(&mut self, c: &Capture) {
        if self.pending.is_some() {
            self.skipped += 1;
            self.last_timestamp.clone_from(&c.entry.timestamp);
        }
    }

    /// The open group ended: its line, with the group's counts.
    fn finish(&mut self) -> Option<(Capture, Extras)> {
        let (c, mut extra) = self.pending.take()?;
        if self.skip {
            extra.push(("skipcount", self.skipped.to_string()));
        }
        if self.group {
            extra.push(("groupcount", (self.skipped + 1).to_string()));
        }
        if self.end {
            extra.push(("endtimestamp", self.last_timestamp.clone()));
        }
        self.skipped = 0;
        Some((c, extra))
    }
}

/// pywb's `resolveRevisits=true`: a revisit whose digest an earlier
/// capture of the answer's that is not a revisit has takes that one's
/// `mime` and `status`, and gets `orig.length`, `orig.offset` and
/// `orig.filename`, its record's; any other capture gets `-` for each
/// (pywb's `cdx_resolve_revisits`).
/// It reads the query's range whole, and applies the period (`from`,
/// `to`) and `offset` itself, after resolving, as pywb clamps after it
/// resolves: an original from before `from` resolves its revisits.
#[derive(Default)]
struct RevisitResolver {
    /// By digest: the first capture not a revisit, its mime, status,
    /// length, offset and file.
    originals: std::collections::HashMap<String, [String; 5]>,
    /// The period, padded.
    from: Option<String>,
    to: Option<String>,
    /// Captures of the period still to pass over.
    offset: usize,
}

/// The most originals [`RevisitResolver`] keeps, as many as an answer
/// has lines: about 300 bytes each, some 30 MB at most for a request
/// (an answer reads up to [`CDX_READ_LIMIT`] captures, which would be ten
/// times that). A revisit of an original past them stays unresolved.
const RESOLVE_DIGESTS: usize = MAX_CDX;

/// Resolves `c` if asked (see [`RevisitResolver`]): its extra fields, or
/// `None` when it is outside the period or passed over by the offset.
fn resolve(resolver: &mut Option<RevisitResolver>, c: &mut Capture) -> Option<Extras> {
    let Some(r) = resolver else {
        return Some(Extras::new());
    };
    let e = &mut c.entry;
    let revisit = e.mime.as_deref() == Some("warc/revisit")
        || e.record_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("revisit"));
    let found = match e.digest.as_deref().filter(|d| !d.is_empty()) {
        Some(d) => {
            if !revisit && !r.originals.contains_key(d) && r.originals.len() < RESOLVE_DIGESTS {
                let text = |v: &Option<String>| v.clone().unwrap_or_default();
                let orig = [
                    text(&e.mime),
                    text(&e.status),
                    e.length.map_or("-".into(), |l| l.to_string()),
                    e.offset.to_string(),
                    e.filename.clone(),
                ];
                r.originals.insert(d.to_string(), orig);
                None
            } else if revisit {
                r.originals.get(d)
            } else {
                None
            }
        }
        None => None,
    };
    let orig: [String; 3] = match found {
        Some([mime, status, length, offset, filename]) => {
            // As pywb: the revisit's own fields are the original's.
            if e.mime.is_some() {
                e.mime = Some(mime.clone());
            }
            if e.status.is_some() {
                e.status = Some(status.clone());
            }
            [length.clone(), offset.clone(), filename.clone()]
        }
        None => ["-".into(), "-".into(), "-".into()],
    };
    let ts = e.timestamp.as_str();
    if r.from.as_deref().is_some_and(|f| ts < f) || r.to.as_deref().is_some_and(|t| ts > t) {
        return None;
    }
    if r.offset > 0 {
        r.offset -= 1;
        return None;
    }
    let [length, offset, filename] = orig;
    Some(vec![
        ("orig.length", length),
        ("orig.offset", offset),
        ("orig.filename", filename),
    ])
}

/// A capture as pywb's CDX server gives it: the index's fields
/// ([`warchest_index::entry_fields`], the one list the index lines are
/// written from) with `urlkey` and `timestamp` first, in the index line's
/// order, every value a string but `null` (a POST whose body gave no
/// query, cdxj-indexer's `"requestBody": null`).
fn cdx_object(c: &Capture) -> Vec<(&'static str, warchest_index::FieldValue<'_>)> {
    warchest_index::entry_fields(&c.entry, true).collect()
}

fn search(
    coll: &Collection,
    who: &Viewer<'_>,
    fulltext: bool,
    req: &Request,
    resp: &mut Responder<'_>,
) -> HResult {
    let q = req.param("url").unwrap_or_default();
    let m = req
        .param("match")
        .and_then(|m| MatchType::parse(&m))
        .unwrap_or(MatchType::Prefix);
    if q.trim().is_empty() {
        let body = pages::home(coll, fulltext, who.sees_all())?;
        resp.send(200, &text_html(), body.as_bytes())?;
        return Ok(());
    }
    if m == MatchType::Exact {
        let loc = format!(
            "/{}/*/{}",
            coll.name,
            archive_url::normalize_target(q.trim())
        );
        return redirect(resp, &loc, vec![]);
    }
    let body = pages::search_results(coll, who, q.trim(), m)?;
    resp.send(200, &text_html(), body.as_bytes())?;
    Ok(())
}

fn download_file(
    coll: &Collection,
    who: &Viewer<'_>,
    resp: &mut Responder<'_>,
    rest: &str,
) -> HResult {
    // A whole file holds every capture in it, whatever the rules say of
    // each: with rules, no file is served whole.
    if !who.sees_all() {
        resp.source = "blocked";
        resp.send(
            403,
            &text_plain(),
            b"this archive has access rules: whole files are not served\n",
        )?;
        return Ok(());
    }
    let Some(src) = names::Names::of(coll).find(coll, rest) else {
        resp.source = "miss";
        resp.send(404, &text_plain(), b"no such file\n")?;
        return Ok(());
    };
    let mut section = src.open_at(0)?;
    let name = src
        .entry
        .as_deref()
        .and_then(|e| e.rsplit('/').next())
        .map(str::to_owned)
        .or_else(|| {
            src.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "archive.warc".into());
    let h = vec![
        ("Content-Type".into(), "application/warc".into()),
        (
            "Content-Disposition".into(),
            format!("attachment; filename=\"{}\"", name.replace('"', "")),
        ),
    ];
    let len = section.len();
    let mut body = resp.stream(200, "OK", &h)?;
    io::copy(&mut (&mut section).take(len), &mut body)?;
    body.finish()?;
    Ok(())
}

/// Response headers kept as they are; the others are sent as
/// `X-Archive-Orig-NAME`, so that the archived site's policies (cookies,
/// CSP, HSTS, frame options) do not apply to the archive.
const KEPT_HEADERS: [&str; 7] = [
    "content-type",
    "content-disposition",
    "content-language",
    "last-modified",
    "etag",
    "access-control-allow-origin",
    "content-range",
];

/// One replay: what was asked for and the capture that answers it.
struct Replay<'a> {
    coll: &'a Collection,
    req: &'a Request,
    ts: &'a TimeSpec,
    /// The URL asked for, normalized.
    target: &'a str,
    cap: &'a Capture,
}

/// How a capture's payload is served, from the modifier asked for and the
/// archived head.
struct Treatment {
    /// `id_`: the bytes as archived, sandboxed.
    raw: bool,
    /// A service worker's script (`sw_`).
    sw: bool,
    /// What the payload is rewritten as (`None`: sent as stored).
    kind: Option<Kind>,
    /// The archived response names a Content-Encoding.
    encoded: bool,
    /// The media type ("" when unknown).
    mime: String,
    /// The encoding the archived Content-Type's charset names (`None`
    /// without one): the rewriter encodes queries in it, as the crawler
    /// did.
    encoding: Option<&'static encoding_rs::Encoding>,
}

/// Replays a capture: 404 without one; a page asked for at another time
/// is redirected to its capture's timestamp; else the capture is streamed
/// ([`send_capture`]), and one that cannot be read answers an error page
/// ([`replay_failed`]).
fn replay(
    coll: &Collection,
    who: &Viewer<'_>,
    req: &Request,
    resp: &mut Responder<'_>,
    ts: &TimeSpec,
    raw_url: &str,
) -> HResult {
    let target = archive_url::normalize_target(raw_url);
    let Some(cap) = find_or_404(coll, who, resp, &target, &ts.timestamp)? else {
        return Ok(());
    };
    // A page asked for at another time is redirected to its capture's
    // timestamp (the banner and links then name the capture shown), as
    // pywb does; embedded resources are served from the nearest capture.
    if ts.modifier.is_empty() && pad_timestamp(&ts.timestamp) != cap.entry.timestamp {
        resp.source = "archive";
        let loc = format!("/{}/{}/{target}", coll.name, cap.entry.timestamp);
        return redirect(
            resp,
            &loc,
            vec![("Link".into(), memento_links(req, &coll.name, &target))],
        );
    }
    let r = Replay {
        coll,
        req,
        ts,
        target: &target,
        cap: &cap,
    };
    match coll.with_payload(&cap, |p| send_capture(&r, p, resp)) {
        Ok(()) => Ok(()),
        Err(e) if resp.status.is_none() => replay_failed(coll, &cap, resp, &e),
        Err(e) => Err(Box::new(e)),
    }
}

/// Streams a capture: its status, the response headers, and the payload
/// as stored or rewritten.
fn send_capture(r: &Replay<'_>, mut p: Payload<'_>, resp: &mut Responder<'_>) -> Result<()> {
    let map_io = |e: io::Error| Error::from(e);
    let (status, reason) = archived_status(&p);
    let t = treatment(r.ts, &p);
    let headers = response_headers(r, &p, &t);
    resp.source = "archive";
    let payload = payload_to_send(r, &mut p, &t).inspect_err(|_| {
        r.coll.served.count_undecodable();
    })?;
    let mut payload = ReadWatch::new(payload);
    let mut body = resp.stream(status, &reason, &headers).map_err(map_io)?;
    let sent = match t.kind {
        None => io::copy(&mut payload, &mut body).map(|_| ()),
        Some(k) => write_rewritten(r, k, &t, &mut payload, &mut body),
    };
    // The payload failed to read as it was sent (a coding that is not
    // what it says, or that cannot be undone to its end): counted, not
    // only logged. A client gone away is a write error, not counted.
    if sent.is_err() && payload.failed {
        r.coll.served.count_undecodable();
    }
    sent.map_err(map_io)?;
    body.finish().map_err(map_io)?;
    Ok(())
}

/// A reader that remembers whether a read failed, so that a copy's error
/// can be told to be the payload's rather than the client's.
pub(crate) struct ReadWatch<R> {
    inner: R,
    /// A read returned an error.
    pub(crate) failed: bool,
}

impl<R> ReadWatch<R> {
    pub(crate) fn new(inner: R) -> ReadWatch<R> {
        ReadWatch {
            inner,
            failed: false,
        }
    }
}

impl<R: Read> Read for ReadWatch<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|_| self.failed = true)
    }
}

/// The archived status and reason (200 OK for a record with no HTTP
/// head).
fn archived_status(p: &Payload<'_>) -> (u16, String) {
    match &p.head {
        Some(h) => (
            h.status().unwrap_or(200),
            String::from_utf8_lossy(h.reason()).into_owned(),
        ),
        None => (200, "OK".into()),
    }
}

/// The media type of an archived payload: its HTTP head's, else (a
/// record with no head, such as a resource) the record's own
/// Content-Type. Replay and the record pages both type a payload so.
fn payload_media_type(
    head: Option<&warchest::http::HttpHead>,
    record: &warchest::warc::WarcHeader,
) -> Option<String> {
    match head {
        Some(h) => h.media_type(),
        None => record
            .content_type()
            .and_then(|c| warchest::http::media_type_str(&c)),
    }
}

/// Whether and as what the payload is rewritten: as its modifier or media
/// type says, unless asked for as archived (`id_`), in a coding that
/// cannot be undone, or in UTF-16 (which ASCII inserts would break).
fn treatment(ts: &TimeSpec, p: &Payload<'_>) -> Treatment {
    let mime = payload_media_type(p.head.as_ref(), &p.source_header).unwrap_or_default();
    let raw = ts.modifier == modifier::IDENTITY;
    let kind = if raw {
        None
    } else {
        match ts.modifier.as_str() {
            "js_" if !mime.starts_with("image/") => Some(Kind::Js),
            // A service worker's script is JavaScript whatever it was
            // archived as (the browser takes no other type).
            modifier::SERVICE_WORKER => Some(Kind::Js),
            "cs_" if !mime.starts_with("image/") => Some(Kind::Css),
            _ => Kind::of_media_type(&mime),
        }
    };
    let encoded = p
        .head
        .as_ref()
        .is_some_and(|h| !h.content_encoding().is_empty());
    let decodable = p
        .head
        .as_ref()
        .is_none_or(|h| h.content_encoding().iter().all(|c| c.is_supported()));
    // UTF-16 pages would be broken by ASCII inserts: served as they are.
    let utf16 = p
        .head
        .as_ref()
        .and_then(|h| h.content_type())
        .is_some_and(|c| {
            String::from_utf8_lossy(&c)
                .to_ascii_lowercase()
                .contains("utf-16")
        });
    // The Content-Type the payload is typed by (the one the crawler read
    // a page's charset from).
    let encoding = match &p.head {
        Some(h) => h
            .content_type()
            .and_then(|c| archive_url::content_type_encoding(&c)),
        None => p
            .source_header
            .content_type()
            .and_then(|c| archive_url::content_type_encoding(c.as_bytes())),
    };
    Treatment {
        raw,
        sw: ts.modifier == modifier::SERVICE_WORKER,
        kind: if decodable && !utf16 { kind } else { None },
        encoded,
        mime,
        encoding,
    }
}

/// The headers of a replayed response: the archived ones
/// ([`archived_headers`]), its type ([`type_headers`]), then isolation and
/// Memento ([`replay_headers`]).
fn response_headers(r: &Replay<'_>, p: &Payload<'_>, t: &Treatment) -> Vec<(String, String)> {
    let (mut headers, has_type) = archived_headers(r, p, t);
    type_headers(r, t, has_type, &mut headers);
    headers.extend(replay_headers(r, t.raw));
    headers
}

/// The archived response's headers as replayed, and whether they name a
/// Content-Type: framing headers dropped, Location into the archive,
/// Set-Cookie into the replay origin's jar, [`KEPT_HEADERS`] as they are
/// and the others as `X-Archive-Orig-NAME`. A record with no HTTP head
/// gets its WARC Content-Type.
fn archived_headers(
    r: &Replay<'_>,
    p: &Payload<'_>,
    t: &Treatment,
) -> (Vec<(String, String)>, bool) {
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut has_type = false;
    let Some(h) = &p.head else {
        if !t.mime.is_empty() {
            has_type = true;
            headers.push((
                "Content-Type".into(),
                p.source_header
                    .content_type()
                    .map(|c| c.into_owned())
                    .unwrap_or(t.mime.clone()),
            ));
        }
        return (headers, has_type);
    };
    for f in h.fields().iter() {
        let name = String::from_utf8_lossy(f.name()).into_owned();
        let lower = name.to_ascii_lowercase();
        let value = String::from_utf8_lossy(&f.value()).into_owned();
        match lower.as_str() {
            "content-length" | "transfer-encoding" | "connection" | "keep-alive" => {}
            "content-encoding" => {
                if t.kind.is_none() {
                    headers.push((name, value));
                }
            }
            "location" => headers.push(("Location".into(), archived_location(r, t.raw, value))),
            // Cookies kept for the archived host and path in the replay
            // origin's jar (cookie.rs); the original is kept as
            // X-Archive-Orig-Set-Cookie too.
            "set-cookie" if !t.raw => {
                if let Some(v) = replayed_cookie(r, &value) {
                    headers.push(("Set-Cookie".into(), v));
                }
                headers.push((format!("X-Archive-Orig-{name}"), value));
            }
            l if KEPT_HEADERS.contains(&l) => {
                has_type |= l == "content-type";
                headers.push((name, value));
            }
            _ => headers.push((format!("X-Archive-Orig-{name}"), value)),
        }
    }
    (headers, has_type)
}

/// An archived Location as a replay URL at the time asked for (`id_`
/// kept); one that is not an absolute http(s) URL once resolved stays as
/// it is.
fn archived_location(r: &Replay<'_>, raw: bool, value: String) -> String {
    let base = r.cap.entry.url.as_deref().unwrap_or(r.target);
    let m = if raw { modifier::IDENTITY } else { "" };
    archive_url::resolve(base, &value)
        .filter(|a| a.starts_with("http"))
        .map(|a| format!("/{}/{}{m}/{a}", r.coll.name, r.ts.timestamp))
        .unwrap_or(value)
}

/// An archived Set-Cookie as the replay origin sets it (cookie.rs);
/// `None`, with a warning, when it cannot be.
fn replayed_cookie(r: &Replay<'_>, value: &str) -> Option<String> {
    let url = r.cap.entry.url.as_deref().unwrap_or(r.target);
    match cookie::rewrite(value, url, &r.cap.entry.timestamp, &r.coll.name) {
        Ok(v) => Some(v),
        Err(why) => {
            tracing::warn!(
                "{url} (capture {}): Set-Cookie not replayed: {why}",
                r.cap.entry.timestamp
            );
            None
        }
    }
}

/// The Content-Type: a service worker's script is JavaScript, with the
/// scope it may have ([`sw_allowed`]); a rewritten payload archived with
/// no type is HTML.
fn type_headers(
    r: &Replay<'_>,
    t: &Treatment,
    has_type: bool,
    headers: &mut Vec<(String, String)>,
) {
    if t.sw {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
        headers.push((
            "Content-Type".into(),
            "application/javascript; charset=utf-8".into(),
        ));
        // Its scope may be the archived site's pages at this time (the
        // client asks for the archived scope), on the registering page's
        // kind of replay URL: nothing wider.
        if let Some(allowed) = sw_allowed(
            &r.coll.name,
            &r.ts.timestamp,
            r.target,
            r.req.header("referer"),
        ) {
            headers.push(("Service-Worker-Allowed".into(), allowed));
        }
    } else if !has_type && t.kind.is_some() {
        headers.push(("Content-Type".into(), "text/html".into()));
    }
}

/// Isolation, Memento and caching headers of every replayed response.
fn replay_headers(r: &Replay<'_>, raw: bool) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    // Isolation (docs/serve.md): a replayed page may load only from this
    // server, so what rewriting misses fails instead of reaching the live
    // web; a raw (`id_`) document is sandboxed (an origin of its own, no
    // scripts), so archived HTML never runs as this server.
    if raw {
        headers.push(("Content-Security-Policy".into(), "sandbox".into()));
        headers.push(("X-Content-Type-Options".into(), "nosniff".into()));
    } else {
        // Framed by the UI origin, and by archived pages (frames).
        headers.push((
            "Content-Security-Policy".into(),
            format!("{REPLAY_CSP}; frame-ancestors 'self' {}", r.req.origin.ui),
        ));
    }
    let (coll, ts, target) = (&r.coll.name, &r.cap.entry.timestamp, r.target);
    headers.push(("Memento-Datetime".into(), http_date(ts)));
    headers.push((
        "Link".into(),
        format!(
            "{}, <{}/{coll}/{ts}/{target}>; rel=\"memento\"; datetime=\"{}\"",
            memento_links(r.req, coll, target),
            host_prefix(r.req),
            http_date(ts)
        ),
    ));
    headers.push(("Cache-Control".into(), "no-cache".into()));
    headers
}

/// The payload to send: its codings undone when it is rewritten (a coding
/// that cannot be undone is known before the response starts: an error
/// page, not a response cut short), and a JSONP response found for
/// another callback name calling the one asked for (fuzzy matching,
/// docs/serve.md).
fn payload_to_send<'p>(
    r: &Replay<'_>,
    p: &'p mut Payload<'_>,
    t: &Treatment,
) -> Result<Box<dyn Read + 'p>> {
    let payload: Box<dyn Read + 'p> = match &p.head {
        Some(h) => payload_reader(&mut *p.body, h, t.kind.is_some() && t.encoded)
            .map_err(|e| Error::new(ErrorKind::Syntax(e.to_string())))?,
        None => Box::new(&mut *p.body),
    };
    let rename = r
        .cap
        .entry
        .url
        .as_deref()
        .and_then(|u| r.coll.fuzzy.jsonp_rename(r.target, u))
        .filter(|_| t.kind.is_some() || !t.encoded);
    Ok(match rename {
        Some((old, new)) => Box::new(warchest_replay::fuzzy::JsonpRename::new(
            payload, &old, &new,
        )),
        None => payload,
    })
}

/// Writes `payload` rewritten as `k` (links kept in the archive): a page
/// gets the client script in its head and, at the top, the banner; a
/// service worker's script runs the client script first.
fn write_rewritten(
    r: &Replay<'_>,
    k: Kind,
    t: &Treatment,
    payload: &mut dyn Read,
    body: &mut dyn Write,
) -> io::Result<()> {
    let (coll, cap) = (&r.coll.name, r.cap);
    let ctx = UrlContext {
        prefix: format!("/{coll}/"),
        // Absolute URLs in scripts stay on the replay origin.
        abs_prefix: format!("{}/{coll}/", r.req.origin.replay_base),
        timestamp: cap.entry.timestamp.clone(),
        base: cap.entry.url.clone().unwrap_or(r.target.to_string()),
        encoding: t.encoding,
    };
    let top = r.ts.modifier.is_empty();
    let (insert, banner) = if k == Kind::Html {
        (
            Some(pages::head_insert(coll, cap, &ctx.base, &r.req.origin.ui)),
            top.then(|| pages::banner(coll, cap, &ctx.base)),
        )
    } else {
        (None, None)
    };
    if t.sw {
        // The client script runs first in the worker, with the worker's
        // archived URL and the page's time.
        let prelude = pages::worker_prelude(coll, &pad_timestamp(&r.ts.timestamp), &ctx.base);
        body.write_all(prelude.as_bytes())?;
        body.write_all(CLIENT_JS.as_bytes())?;
        body.write_all(b"\n")?;
    }
    let mut rw = Rewriter::new(k, ctx, insert, banner);
    copy_rewritten(&mut rw, payload, body)?;
    Ok(())
}

/// Answers a capture that could not be read before anything was sent: an
/// object that cannot be read (a spent retry budget, a cut object) is the
/// store's failure (`pages::remote_failure`), else 404.
fn replay_failed(coll: &Collection, cap: &Capture, resp: &mut Responder<'_>, e: &Error) -> HResult {
    let remote = coll.store.source(cap.src).is_some_and(|s| s.url.is_some());
    if remote && pages::is_io(e) {
        return pages::remote_failure(resp, e);
    }
    resp.source = "miss";
    let body = pages::error_page(404, &format!("cannot replay this capture: {e}"));
    resp.send(404, &text_html(), body.as_bytes())?;
    Ok(())
}

/// The `Service-Worker-Allowed` of a service worker's script `target`
/// asked for at `ts`: the archived origin of the script on the replay
/// URLs of the registering page's kind (`mp_`, `if_` or none, from its
/// `Referer`; `mp_` without one), `/{coll}/{ts}{mod}/{scheme}://{host}/`.
fn sw_allowed(coll: &str, ts: &str, target: &str, referer: Option<&str>) -> Option<String> {
    let (scheme, rest) = target.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        return None;
    }
    let m = referer
        .and_then(|r| r.split_once(&format!("/{coll}/")))
        .and_then(|(_, r)| r.split_once('/'))
        .and_then(|(spec, _)| TimeSpec::parse(spec))
        .map(|t| t.modifier)
        .filter(|m| matches!(m.as_str(), "" | "mp_" | "if_" | "fr_"))
        .unwrap_or_else(|| modifier::PAGE.to_string());
    Some(format!("/{coll}/{ts}{m}/{scheme}://{host}/"))
}

#[cfg(test)]
mod sw_tests {
    use super::sw_allowed;

    #[test]
    fn service_workers_are_held_to_their_archived_origin() {
        let r =
            Some("http://127.0.0.1:8081/archive/20121120120000if_/http://site.example/m/sw.html");
        assert_eq!(
            sw_allowed(
                "archive",
                "20121120120000",
                "http://site.example/sw/sw.js",
                r
            )
            .as_deref(),
            Some("/archive/20121120120000if_/http://site.example/")
        );
        assert_eq!(
            sw_allowed(
                "archive",
                "20121120120000",
                "https://site.example:8443/sw.js?v=1",
                None
            )
            .as_deref(),
            Some("/archive/20121120120000mp_/https://site.example:8443/")
        );
        // A Referer that is not a page: the default.
        assert_eq!(
            sw_allowed(
                "archive",
                "2012",
                "http://s.example/x.js",
                Some("http://h/archive/2012js_/http://s.example/a.js")
            )
            .as_deref(),
            Some("/archive/2012mp_/http://s.example/")
        );
        assert_eq!(
            sw_allowed("archive", "2012", "ftp://s.example/x.js", None),
            None
        );
    }
}

#[cfg(test)]
mod cdx_tests {
    use super::{Capture, CdxFilter, CdxOutput, accepted};
    use warchest_index::{Encoder, Entry, Format, entry_fields};

    fn capture(url: &str, request_body: Option<Option<String>>) -> Capture {
        Capture {
            src: 0,
            entry: Entry {
                urlkey: "com,example)/caf%c3%a9".into(),
                timestamp: "20240101000000".into(),
                url: Some(url.into()),
                mime: Some("text/html".into()),
                status: Some("200".into()),
                digest: Some("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ".into()),
                length: Some(10),
                offset: 0,
                filename: "a.warc.gz".into(),
                request_body,
                ..Entry::default()
            },
        }
    }

    /// What `warchest index` writes for the entry, in `format`.
    fn indexed(c: &Capture, format: &Format) -> String {
        let mut out = Vec::new();
        Encoder::new(format).encode(&c.entry, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// One CDX API line of `c`, as text.
    fn cdx_line(c: &Capture, o: CdxOutput, fields: Option<&[String]>) -> String {
        let mut out = Vec::new();
        super::cdx_line(c, o, fields, "c", &[], &mut out);
        String::from_utf8(out).unwrap()
    }

    /// `resolveRevisits` keeps at most [`super::RESOLVE_DIGESTS`]
    /// originals: a revisit of one kept takes its fields, one past the
    /// bound stays `-`.
    #[test]
    fn resolved_revisits_keep_a_bounded_number_of_originals() {
        let orig = |digest: &str| {
            let mut c = capture("http://example.com/", None);
            c.entry.digest = Some(digest.into());
            c
        };
        let revisit = |digest: &str| {
            let mut c = orig(digest);
            c.entry.mime = Some("warc/revisit".into());
            c
        };
        let mut r = Some(super::RevisitResolver::default());
        let resolve = |r: &mut Option<super::RevisitResolver>, mut c: Capture| {
            let extra = super::resolve(r, &mut c).unwrap();
            (c.entry.mime.unwrap_or_default(), extra[1].1.clone())
        };
        resolve(&mut r, orig("A"));
        assert_eq!(
            resolve(&mut r, revisit("A")),
            ("text/html".into(), "0".into())
        );
        for i in 1..super::RESOLVE_DIGESTS {
            resolve(&mut r, orig(&format!("D{i}")));
        }
        resolve(&mut r, orig("B"));
        assert_eq!(
            resolve(&mut r, revisit("B")),
            ("warc/revisit".into(), "-".into())
        );
        assert_eq!(resolve(&mut r, revisit("A")).1, "0");
    }

    /// A resumption key comes back as printed (the query's decoding has
    /// made it the key) or encoded once more; the Internet Archive's
    /// example key reads as its URL key and timestamp.
    #[test]
    fn resumption_keys_are_read_either_way_they_come_back() {
        let key = "org,example)/a+b%20c 20240101000000 00000001000000000000abcd";
        let printed: String = form_urlencoded::byte_serialize(key.as_bytes()).collect();
        assert!(!printed.contains([' ', ',', '&', '=']), "{printed}");
        assert_eq!(super::resume_key_of(&printed), key);
        assert_eq!(super::resume_key_of(key), key);
        assert_eq!(
            super::resume_key_of("org%2Carchive%29%2F+19980109140106%21"),
            "org,archive)/ 19980109140106!"
        );
    }

    #[test]
    fn cdx_lines_are_the_index_lines() {
        // A non-ASCII URL is written `\uXXXX`, as json.dumps and the index.
        let c = capture("http://example.com/caf\u{e9}", None);
        let line = cdx_line(&c, CdxOutput::Cdxj, None);
        assert_eq!(
            line,
            "com,example)/caf%c3%a9 20240101000000 {\"url\": \"http://example.com/caf\\u00e9\", \
             \"mime\": \"text/html\", \"status\": \"200\", \
             \"digest\": \"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\", \"length\": \"10\", \
             \"offset\": \"0\", \"filename\": \"a.warc.gz\"}\n"
        );
        assert_eq!(line, indexed(&c, &Format::Cdxj));
        let json = cdx_line(&c, CdxOutput::Json, None);
        assert!(json.starts_with(
            "{\"urlkey\": \"com,example)/caf%c3%a9\", \"timestamp\": \"20240101000000\", \
             \"url\": \"http://example.com/caf\\u00e9\""
        ));
        assert_eq!(json, indexed(&c, &Format::Json));

        // A POST whose body gave no query keeps its `"requestBody": null`.
        let mut post = capture("http://example.com/caf\u{e9}", Some(None));
        post.entry.method = Some("POST".into());
        let line = cdx_line(&post, CdxOutput::Cdxj, None);
        assert!(line.ends_with("\"requestBody\": null, \"method\": \"POST\"}\n"));
        assert_eq!(line, indexed(&post, &Format::Cdxj));

        // Text without `fl=`: every value the capture has, in the index's
        // order, `-` for a null.
        let text = cdx_line(&post, CdxOutput::Text, None);
        assert_eq!(
            text,
            "com,example)/caf%c3%a9 20240101000000 http://example.com/caf\u{e9} text/html 200 \
             sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ 10 0 a.warc.gz - POST\n"
        );

        // `fl=`: the fields named, in that order, with the same escaping;
        // JSON leaves out a field it does not have, as pywb.
        let fl = ["url".to_string(), "requestBody".into(), "nope".into()];
        let line = |o| cdx_line(&post, o, Some(&fl));
        assert_eq!(
            line(CdxOutput::Json),
            "{\"url\": \"http://example.com/caf\\u00e9\", \"requestBody\": null}\n"
        );
        // CDXJ: after the key, whose fields its JSON never repeats.
        let fl = ["timestamp".to_string(), "url".into(), "method".into()];
        let line = |o| cdx_line(&post, o, Some(&fl));
        assert_eq!(
            line(CdxOutput::Cdxj),
            "com,example)/caf%c3%a9 20240101000000 \
             {\"url\": \"http://example.com/caf\\u00e9\", \"method\": \"POST\"}\n"
        );
        assert_eq!(
            line(CdxOutput::Json),
            "{\"timestamp\": \"20240101000000\", \"url\": \"http://example.com/caf\\u00e9\", \
             \"method\": \"POST\"}\n"
        );
        // Text: the values, raw; `-` for what this capture lacks or null.
        let fl = [
            "timestamp".to_string(),
            "status".into(),
            "requestBody".into(),
            "method".into(),
        ];
        let mut get = capture("http://example.com/caf\u{e9}", None);
        get.entry.status = None;
        let text = |c: &Capture| cdx_line(c, CdxOutput::Text, Some(&fl));
        assert_eq!(text(&post), "20240101000000 200 - POST\n");
        assert_eq!(text(&get), "20240101000000 - - -\n");

        // Link: a memento a line, its original URL and date (the comma
        // joining the lines is cdx_api's: the pywb test compares them).
        assert_eq!(
            cdx_line(&get, CdxOutput::Link, None),
            "<http://example.com/caf\u{e9}>; rel=\"memento\"; \
             datetime=\"Mon, 01 Jan 2024 00:00:00 GMT\"; collection=\"c\""
        );
    }

    #[test]
    fn cdx_fields_are_the_index_fields() {
        // Every field the index writes is answered by `fl=`, with the same
        // names, order and values: `fl=` naming all of them is the JSON line.
        let mut post = capture("http://example.com/caf\u{e9}", Some(None));
        post.entry.method = Some("POST".into());
        for c in [capture("http://example.com/", None), post] {
            let all: Vec<String> = entry_fields(&c.entry, true)
                .map(|(n, _)| n.to_string())
                .collect();
            assert!(all.len() >= 9, "{all:?}");
            let line = cdx_line(&c, CdxOutput::Json, Some(&all));
            assert_eq!(line, indexed(&c, &Format::Json));
        }
    }

    #[test]
    fn cdx_filters_see_the_index_fields() {
        let mut c = capture("http://example.com/a", Some(None));
        c.entry.length = Some(1234);
        let f = |s: &str| vec![CdxFilter::parse(s).unwrap()];
        // A number is matched as its digits, a string as itself.
        assert!(accepted(&f("=length:1234"), &c));
        assert!(!accepted(&f("=length:123"), &c));
        assert!(accepted(&f("length:23"), &c));
        assert!(accepted(&f("=offset:0"), &c));
        assert!(accepted(&f("=urlkey:com,example)/caf%c3%a9"), &c));
        assert!(accepted(&f("!=status:404"), &c));
        assert!(!accepted(&f("=mime:text/plain"), &c));
        // `null` and a field the capture lacks are matched as empty.
        assert!(accepted(&f("=requestBody:"), &c));
        assert!(accepted(&f("=method:"), &c));
        assert!(!accepted(&f("!=method:"), &c));
        assert!(accepted(&[], &c));
    }

    /// pywb's three kinds of filter (its CDXJ server API): none, the
    /// field contains the expression; `=`, it is the expression; `~`, a
    /// regular expression matches from its start (as `re.match`, so not
    /// only at its end); `!` before any of them negates. A filter that
    /// cannot be read is an error, not a filter dropped.
    #[test]
    fn cdx_filters_are_pywbs_contains_exact_and_regex() {
        let mut c = capture("http://example.com/a", Some(None));
        c.entry.length = Some(1234);
        let f = |s: &str| vec![CdxFilter::parse(s).unwrap()];
        assert!(accepted(&f("length:23"), &c));
        assert!(!accepted(&f("!length:23"), &c));
        assert!(!accepted(&f("=length:23"), &c));
        assert!(accepted(&f("=length:1234"), &c));
        assert!(
            accepted(&f("~length:12"), &c),
            "re.match needs no full match"
        );
        assert!(!accepted(&f("~length:23"), &c), "anchored at the start");
        assert!(accepted(&f("~length:.*34$"), &c));
        assert!(
            accepted(&f("~length:1[0-9]+|x"), &c),
            "alternatives anchored"
        );
        assert!(!accepted(&f("~length:x|34"), &c));
        assert!(accepted(&f("!~length:2"), &c));
        for bad in ["~length:(", "!~length:[z-a]", "~("] {
            assert!(CdxFilter::parse(bad).is_err(), "{bad}");
        }
        // Without a field, the whole CDXJ line.
        // (A `:` in the expression would make what is before it a field,
        // as in pywb.)
        assert!(accepted(&f("\"1234\", \"offset\""), &c));
        assert!(!accepted(&f("\"1235\""), &c));
        assert!(accepted(&f("~com,example\\)/"), &c));
        assert!(!accepted(&f("=com,example)/"), &c));
        assert!(accepted(&f(""), &c));
        // A huge automaton is refused, not built.
        assert!(CdxFilter::parse("~length:(a{1000}){1000}").is_err());
    }
}
