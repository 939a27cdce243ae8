//! Capturing: fetching HTTP, HTTPS, DNS and FTP into WARC records (ISO
//! 28500 section 1: "store both the payload content and control
//! information"), as `warchest capture` and as the recording proxy of
//! `warchest proxy`. See docs/capture.md.
//!
//! - [`client`]: an HTTP client (HTTP/1.0 requests) that keeps the bytes as sent and received;
//! - [`tls`]: rustls client settings and the proxy's certificate authority;
//! - [`dns`]: a DNS client whose answers become `dns:` records;
//! - `ftp`: a passive-mode FTP client;
//! - `robots`: robots.txt rules;
//! - [`Recorder`]: the recorder, writing request, response, revisit and
//!   metadata records through the rotating writer;
//! - [`Capturer`]: the crawl of a list of URLs (workers, redirects,
//!   politeness, robots.txt);
//! - [`proxy`]: the recording proxy.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use warchest::write::{CaptureLimits, RotatingOptions};
use warchest_ops::dedupe::DigestIndex;
use warchest_ops::revisit::Original;

pub mod client;
pub mod dns;
mod ftp;
pub mod proxy;
mod record;
pub mod robots;
pub mod tls;
mod wire_url;

/// The parsers of the private `ftp` module, for the fuzz targets
/// (fuzz/fuzz_targets/capture_wire.rs) to feed any bytes to: a server's
/// control replies and its passive-mode answers; and the two helpers the
/// target and the unit tests share to read an answer in any pieces
/// ([`fuzzing::Pieces`]) and see what was forwarded
/// ([`fuzzing::Collect`]). Not an API: hidden, and free to change.
#[doc(hidden)]
pub mod fuzzing {
    use std::io::BufRead;

    use super::CaptureError;

    /// One FTP reply read from `r` as the client reads it: (code, text);
    /// the lines read are appended to `log`.
    ///
    /// # Errors
    /// As the client's: the connection's end, a line that is no reply, a
    /// reply too long.
    pub fn ftp_reply(
        r: &mut dyn BufRead,
        log: &mut Vec<u8>,
    ) -> Result<(u16, String), CaptureError> {
        super::ftp::read_reply(r, log)
    }

    /// The port of an `EPSV` reply's text.
    pub fn ftp_epsv(text: &str) -> Option<u16> {
        super::ftp::parse_epsv(text)
    }

    /// The port of a `PASV` reply's text.
    pub fn ftp_pasv(text: &str) -> Option<u16> {
        super::ftp::parse_pasv(text)
    }

    /// A connection that hands out at most `.1` bytes a read, as a
    /// network may hand out what a server sent: the fuzz target's and the
    /// unit tests' way of reading one answer in any pieces.
    pub struct Pieces<'a>(pub &'a [u8], pub usize);

    impl std::io::Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// What a [`Forward`](crate::client::Forward) was given: the status,
    /// then the body.
    #[derive(Default, Debug, PartialEq)]
    pub struct Collect {
        /// The forwarded head's status.
        pub status: Option<u16>,
        /// The forwarded body's bytes.
        pub body: Vec<u8>,
    }

    impl crate::client::Forward for Collect {
        fn head(&mut self, head: &warchest::http::HttpHead) -> std::io::Result<()> {
            self.status = head.status();
            Ok(())
        }
        fn body(&mut self, data: &[u8]) -> std::io::Result<()> {
            self.body.extend_from_slice(data);
            Ok(())
        }
    }
}

pub use record::{
    Hold, HttpRecord, Kind, OnWritten, Recorded, Recorder, RecorderStats, WrittenRecord,
};
pub use wire_url::Url;

/// How much of each message in flight is held in memory before it is
/// spooled to a temporary file: small, since `-j N` fetches (or proxied
/// exchanges) are in flight at once.
pub const SPOOL_IN_MEMORY: usize = 1 << 20;

/// Why a capture failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// A URL that cannot be fetched.
    #[error("bad URL {0}")]
    Url(String),
    /// A network or file error, with what it was about.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// TLS set-up or handshake failed.
    #[error("TLS: {0}")]
    Tls(String),
    /// A host could not be resolved.
    #[error("DNS: {0}")]
    Dns(String),
    /// The server's answer is not usable HTTP.
    #[error("HTTP: {0}")]
    Http(String),
    /// The FTP server refused or failed.
    #[error("FTP: {0}")]
    Ftp(String),
    /// Writing the WARC files or the index failed.
    #[error(transparent)]
    Warc(#[from] warchest::Error),
    /// Nothing answered for the origin's robots.txt (DNS, refused
    /// connection, timeout): RFC 9309 disallows everything there, and the
    /// URL was not captured. An error, not a skip by the site's rules: the
    /// host could not be reached, and a run that reached none of its URLs
    /// must not end as a success.
    #[error("{0}")]
    RobotsUnreachable(String),
    /// A redirect not followed (past `max_redirects`, or to a scheme
    /// redirects are not followed to): its target was not captured.
    #[error("{0}")]
    NotFollowed(String),
}

/// How a capture runs.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// The output files.
    pub output: RotatingOptions,
    /// The User-Agent header; it names warchest.
    pub user_agent: String,
    /// The robots.txt product token (`warchest`).
    pub robots_agent: String,
    /// Size and time limits of each response body.
    pub limits: CaptureLimits,
    /// Connect and read timeout.
    pub timeout: Duration,
    /// Redirects followed from each URL given.
    pub max_redirects: u32,
    /// Accept any server certificate.
    pub insecure: bool,
    /// More trusted roots (PEM files).
    pub ca_certs: Vec<PathBuf>,
    /// DNS settings.
    pub resolver: dns::ResolverOptions,
    /// The dedupe index (`warchest dedupe`'s database).
    pub dedupe_index: Option<PathBuf>,
    /// Ask with If-None-Match / If-Modified-Since for URLs in the index.
    pub conditional: bool,
    /// Obey robots.txt.
    pub robots: bool,
    /// How long an origin's robots.txt answer holds before it is fetched
    /// again: the crawler's policy (24 hours for rules or a 4xx). Its
    /// `unreachable_ttl` is the back-off after a robots.txt that could not
    /// be read (a 5xx, a 429, no answer): the origin is disallowed that
    /// long (10 minutes by default), then robots.txt is asked again, so a
    /// passing failure does not disallow it for the rest of a long run.
    pub robots_policy: robots::RobotsPolicy,
    /// Wait between two requests to one host.
    pub delay: Duration,
    /// Parallel connections.
    pub jobs: usize,
    /// Set (by a signal handler) to stop after the fetches under way: the
    /// files are then closed properly.
    pub stop: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            output: RotatingOptions {
                prefix: "capture".into(),
                ..RotatingOptions::default()
            },
            user_agent: default_user_agent(),
            robots_agent: "warchest".into(),
            limits: CaptureLimits::default(),
            timeout: Duration::from_secs(30),
            max_redirects: 10,
            insecure: false,
            ca_certs: Vec::new(),
            resolver: dns::ResolverOptions::default(),
            dedupe_index: None,
            conditional: false,
            robots: true,
            robots_policy: robots::RobotsPolicy::default(),
            delay: Duration::ZERO,
            jobs: 1,
            stop: None,
        }
    }
}

/// `warchest/VERSION (+https://example.invalid/warchest)`.
pub fn default_user_agent() -> String {
    format!(
        "warchest/{} (+{})",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_REPOSITORY")
    )
}

/// What happened to one URL (a hop of a redirect chain is its own event).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    /// The URL.
    pub url: String,
    /// The HTTP status, or 226 for a completed FTP retrieval.
    pub status: Option<u16>,
    /// Bytes of the response block.
    pub bytes: u64,
    /// `response`, `revisit`, `resource`, `robots-disallowed` or `error`.
    pub outcome: String,
    /// WARC-Truncated, if set.
    pub truncated: Option<String>,
    /// Milliseconds from connecting to the end of the response.
    pub ms: u64,
    /// The error, for `error`.
    pub error: Option<String>,
    /// Why, for `robots-disallowed`: the rules, or robots.txt could not
    /// be read (then everything there is disallowed, RFC 9309).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The most URLs not fetched a [`Summary`] names; past it they are
/// counted only.
pub const NAMED_NOT_FETCHED: usize = 1000;

/// What a run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// URLs given.
    pub urls: u64,
    /// Exchanges fetched: the URLs given and their redirect hops, so not
    /// to be taken from `urls` to tell what was left.
    pub fetched: u64,
    /// URLs (and redirect targets) that failed.
    pub failed: u64,
    /// URLs robots.txt kept us from.
    pub disallowed: u64,
    /// URLs given that were never attempted: the run was stopped (SIGINT,
    /// SIGTERM), or a write failed first (then this summary is
    /// [`RunFailed::summary`]). Each was left whole (none of its
    /// exchanges made).
    pub not_fetched: u64,
    /// The first [`NAMED_NOT_FETCHED`] of them.
    pub not_fetched_urls: Vec<String>,
    /// The run was stopped before its end ([`CaptureOptions::stop`]); a
    /// run that ended on a write error is told by [`RunFailed`] instead.
    pub interrupted: bool,
    /// The records written.
    pub records: RecorderStats,
    /// The files written.
    pub files: Vec<PathBuf>,
}

/// A run ended by an error writing its output: the error, and what was
/// lost to it, named, as a stop's summary names it.
#[derive(Debug, thiserror::Error)]
#[error("writing the capture's output failed")]
pub struct RunFailed {
    /// The first write error.
    #[source]
    pub error: CaptureError,
    /// The URLs given whose records could not be written: the one that
    /// met `error`, and any other a worker had under way that failed to
    /// write too (at most one a worker); none when the error was closing
    /// the files once every URL was attempted.
    pub unwritten: Vec<String>,
    /// What the run did up to the error, with the URLs never attempted
    /// ([`Summary::not_fetched`]); `files` holds the files closed.
    pub summary: Summary,
    /// Closing the files after `error` failed too: what was written last
    /// may be lost, and a file may be left unclosed.
    pub close_error: Option<CaptureError>,
}

/// An origin's robots.txt rules and the reason given for a URL they
/// disallow (which says when robots.txt could not be read); `Err` with the
/// reason when nothing answered at all: each URL there is then an error
/// ([`CaptureError::RobotsUnreachable`]). Kept as long as
/// [`CaptureOptions::robots_policy`] says.
type OriginRobots = Result<(robots::Robots, String), String>;

/// An origin's robots.txt state: `None` until first asked, then the last
/// answer until it expires. Locked while robots.txt is fetched, so one
/// worker fetches and the others wait.
type OriginCell = Arc<Mutex<Option<robots::Kept<OriginRobots>>>>;

/// A crawl of a list of URLs into one series of WARC files.
pub struct Capturer {
    opts: CaptureOptions,
    recorder: Recorder,
    resolver: dns::Resolver,
    fetch: client::FetchOptions,
    robots: Mutex<HashMap<String, OriginCell>>,
    next_slot: Mutex<HashMap<String, Instant>>,
}

impl Capturer {
    /// A capturer writing to `dir`.
    ///
    /// # Errors
    /// The index, the directory or the TLS settings cannot be set up.
    pub fn new(dir: &std::path::Path, opts: CaptureOptions) -> Result<Capturer, CaptureError> {
        let index = match &opts.dedupe_index {
            Some(p) => Some(DigestIndex::open(p)?),
            None if opts.conditional => {
                return Err(CaptureError::Url(
                    "--conditional needs --dedupe-index (where earlier captures are remembered)"
                        .into(),
                ));
            }
            None => None,
        };
        let mut output = opts.output.clone();
        let robots = if opts.robots { "obey" } else { "ignore" };
        add_missing(
            &mut output.warcinfo,
            &[
                ("http-header-user-agent", opts.user_agent.as_str()),
                ("robots", robots),
            ],
        );
        let recorder = Recorder::new(dir, output, index)?;
        let roots: Vec<&std::path::Path> = opts.ca_certs.iter().map(|p| p.as_path()).collect();
        let fetch = client::FetchOptions {
            tls: tls::client_config(opts.insecure, &roots)?,
            timeout: opts.timeout,
            read: client::ReadOptions {
                limits: opts.limits,
                digest: recorder.digest(),
                spool_threshold: SPOOL_IN_MEMORY.min(opts.output.writer.spool_threshold),
                max_head: warchest::Limits::default().max_http_head,
            },
        };
        Ok(Capturer {
            resolver: dns::Resolver::new(opts.resolver.clone()),
            opts,
            recorder,
            fetch,
            robots: Mutex::new(HashMap::new()),
            next_slot: Mutex::new(HashMap::new()),
        })
    }

    /// Captures `urls` with [`CaptureOptions::jobs`] workers, reporting each
    /// fetch to `progress`; returns what was done and the files written.
    ///
    /// # Errors
    /// Writing failed: the workers take no more URLs, and [`RunFailed`]
    /// names the URLs whose records were lost and those never attempted
    /// (a URL that cannot be fetched is an [`Event`], not an error).
    pub fn run(
        self,
        urls: Vec<String>,
        progress: &(dyn Fn(&Event) + Sync),
    ) -> Result<Summary, Box<RunFailed>> {
        let total = urls.len() as u64;
        let queue = Mutex::new(urls.into_iter().collect::<VecDeque<_>>());
        let summary = Mutex::new(Summary {
            urls: total,
            ..Summary::default()
        });
        let fatal: Mutex<Option<CaptureError>> = Mutex::new(None);
        // URLs whose records a write error lost.
        let unwritten: Mutex<Vec<String>> = Mutex::new(Vec::new());
        // URLs taken from the queue and then not attempted (a stop seen
        // after taking one): counted with what the queue still holds.
        let dropped: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let jobs = self.opts.jobs.clamp(1, 256);
        std::thread::scope(|s| {
            for _ in 0..jobs {
                s.spawn(|| {
                    loop {
                        let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                        let Some(u) = next else { break };
                        if fatal.lock().map(|f| f.is_some()).unwrap_or(true) || self.stopped() {
                            if let Ok(mut d) = dropped.lock() {
                                d.push(u);
                            }
                            break;
                        }
                        let events = match self.capture_one(&u) {
                            Ok(ev) => ev,
                            Err(e @ CaptureError::Warc(_)) => {
                                // The first error is the run's; a later one
                                // (another worker's) still loses its URL.
                                if let Ok(mut f) = fatal.lock() {
                                    f.get_or_insert(e);
                                }
                                if let Ok(mut w) = unwritten.lock() {
                                    w.push(u);
                                }
                                break;
                            }
                            Err(e) => vec![error_event(&u, &e)],
                        };
                        if let Ok(mut sm) = summary.lock() {
                            for ev in &events {
                                match ev.outcome.as_str() {
                                    "error" => sm.failed += 1,
                                    "robots-disallowed" => sm.disallowed += 1,
                                    _ => sm.fetched += 1,
                                }
                            }
                        }
                        for ev in &events {
                            progress(ev);
                        }
                    }
                });
            }
        });
        let mut summary = summary.into_inner().unwrap_or_default();
        // Each worker drops at most one: this list holds at most `jobs`.
        let dropped = dropped.into_inner().unwrap_or_default();
        let left = queue.into_inner().unwrap_or_default();
        summary.not_fetched = (dropped.len() + left.len()) as u64;
        summary.not_fetched_urls = dropped
            .into_iter()
            .chain(left)
            .take(NAMED_NOT_FETCHED)
            .collect();
        summary.interrupted = self.stopped();
        summary.records = self.recorder.stats();
        // Close what can be closed, whatever happened: a write error
        // during the run is the news, and one from closing is said too.
        let (files, close_error) = match self.recorder.finish() {
            Ok(files) => (files, None),
            Err(e) => (self.recorder.closed_files(), Some(e)),
        };
        summary.files = files;
        let (error, unwritten, close_error) = match (fatal.into_inner().ok().flatten(), close_error)
        {
            (Some(error), close_error) => (
                error,
                unwritten.into_inner().unwrap_or_default(),
                close_error,
            ),
            // Every URL was attempted: closing lost what was written
            // last, which no URL can be named for.
            (None, Some(error)) => (error, Vec::new(), None),
            (None, None) => return Ok(summary),
        };
        Err(Box::new(RunFailed {
            error,
            unwritten,
            summary,
            close_error,
        }))
    }

    fn stopped(&self) -> bool {
        self.opts
            .stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// One URL given: its fetch and the redirects after it.
    fn capture_one(&self, text: &str) -> Result<Vec<Event>, CaptureError> {
        let mut url = Url::parse(text)?;
        if url.scheme == wire_url::Scheme::Ftp {
            return self.capture_ftp(&url).map(|e| vec![e]);
        }
        let mut events = Vec::new();
        let mut via: Option<String> = None;
        let mut hop = 0;
        loop {
            let (ev, location) = match self.capture_http(&url, via.as_deref(), hop) {
                Ok(x) => x,
                Err(e @ CaptureError::Warc(_)) => return Err(e),
                Err(e) => {
                    events.push(error_event(&url.to_string(), &e));
                    break;
                }
            };
            events.push(ev);
            let Some(loc) = location else { break };
            let next = match url.join(&loc) {
                Ok(next) => next,
                Err(e) => {
                    events.push(error_event(&loc, &e));
                    break;
                }
            };
            // A redirect not followed is a target not captured: an error
            // naming it, counted failed, never a silent end of the chain.
            if next.scheme == wire_url::Scheme::Ftp {
                let e = CaptureError::NotFollowed(format!(
                    "redirect to {} not followed: {next}",
                    next.scheme.as_str()
                ));
                events.push(error_event(&next.to_string(), &e));
                break;
            }
            if hop >= self.opts.max_redirects {
                let e =
                    CaptureError::NotFollowed(format!("too many redirects: {next} not fetched"));
                events.push(error_event(&next.to_string(), &e));
                break;
            }
            via = Some(url.to_string());
            url = next;
            hop += 1;
        }
        Ok(events)
    }

    fn resolve(&self, host: &str) -> Result<Vec<std::net::IpAddr>, CaptureError> {
        let r = self.resolver.resolve(host)?;
        if let Some(l) = &r.lookup {
            self.recorder.record_dns(l)?;
        }
        Ok(r.addrs)
    }

    /// Waits until `host` may be asked again, and books the next slot
    /// (per host, whatever the scheme or port: it is one server's load).
    fn polite(&self, host: &str) {
        if self.opts.delay.is_zero() {
            return;
        }
        let wait = {
            let Ok(mut m) = self.next_slot.lock() else {
                return;
            };
            let now = Instant::now();
            let slot = m.get(host).copied().unwrap_or(now).max(now);
            m.insert(host.to_string(), slot + self.opts.delay);
            if m.len() > 100_000 {
                m.retain(|_, t| *t > now);
            }
            slot - now
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }

    /// Why robots.txt keeps us from `url` (`None`: it does not), fetching
    /// (and recording) its origin's /robots.txt the first time and again
    /// once the last answer has expired ([`CaptureOptions::robots_policy`]),
    /// through the loop the crawler uses too ([`robots::fetch_robots`]).
    ///
    /// # Errors
    /// [`CaptureError::RobotsUnreachable`] when nothing answered for
    /// robots.txt; a failure to record its fetch.
    fn robots_refusal(&self, url: &Url) -> Result<Option<String>, CaptureError> {
        let cell = {
            let Ok(mut m) = self.robots.lock() else {
                return Ok(None);
            };
            m.entry(url.origin()).or_default().clone()
        };
        // Held while fetching, so one worker fetches and the others wait.
        let mut slot = cell
            .lock()
            .map_err(|_| CaptureError::Http("poisoned".into()))?;
        let fresh = slot
            .as_ref()
            .is_some_and(|k| k.get(Instant::now()).is_some());
        if !fresh {
            let mut r = url.clone();
            r.path_and_query = "/robots.txt".into();
            // What the last request gave: the reason given for every URL
            // of the origin when robots.txt could not be read.
            let mut last = String::new();
            // The last request got no answer at all (that step ends the
            // loop: everything is then disallowed).
            let mut no_answer = false;
            let (rules, ttl) = robots::fetch_robots(
                r,
                &self.opts.robots_agent,
                &self.opts.robots_policy,
                |r: &Url| match self.fetch_and_record(r, true, &[]) {
                    Ok((_, text, status, loc)) => {
                        let next = loc
                            .filter(|_| (300..400).contains(&status))
                            .and_then(|l| r.join(&l).ok())
                            .filter(|n| n.scheme != wire_url::Scheme::Ftp);
                        if let Some(next) = next {
                            last = format!(
                                "{r} redirected more than {} times",
                                robots::MAX_ROBOTS_REDIRECTS
                            );
                            return Ok(robots::RobotsStep::Redirect(next));
                        }
                        last = format!("{r} answered {status}");
                        match text {
                            Some(Err(why)) => {
                                last = format!("{r} answered {status}: {why}");
                                Ok(robots::RobotsStep::Undecodable(why))
                            }
                            body => Ok(robots::RobotsStep::Answer {
                                status,
                                body: body.and_then(Result::ok).unwrap_or_default(),
                            }),
                        }
                    }
                    Err(e @ CaptureError::Warc(_)) => Err(e),
                    Err(e) => {
                        last = format!("{r}: {e}");
                        no_answer = true;
                        Ok(robots::RobotsStep::Unreachable)
                    }
                },
            )?;
            let why = if rules.undecoded().is_some() {
                // Rules read from bytes that did not decode would be
                // garbage or cut short: treated as unreachable (RFC 9309
                // 2.3.1.4), with a reason saying so.
                let why = format!(
                    "robots.txt could not be decoded ({last}): everything \
                     disallowed, asked again after {ttl:?}"
                );
                tracing::warn!("{}: {why}", url.origin());
                why
            } else if rules.is_disallow_all() {
                // RFC 9309 2.3.1.4: an unreachable robots.txt disallows
                // everything; said here once per failed fetch and on each URL's
                // event.
                let why = format!(
                    "robots.txt unreachable ({last}): everything disallowed, \
                     asked again after {ttl:?}"
                );
                tracing::warn!("{}: {why}", url.origin());
                why
            } else {
                "disallowed by robots.txt".to_string()
            };
            let state = if no_answer {
                Err(why)
            } else {
                Ok((rules, why))
            };
            // Timed from the answer, so the back-off is a full one however
            // long the fetch took.
            *slot = Some(robots::Kept::new(state, Instant::now(), ttl));
        }
        match slot.as_ref().map(robots::Kept::value) {
            None => Ok(None),
            Some(Err(why)) => Err(CaptureError::RobotsUnreachable(why.clone())),
            // The rules match on the url crate's view of the URL (its path
            // and query as a browser would send them).
            Some(Ok((rules, why))) => {
                let allowed =
                    ::url::Url::parse(&url.to_string()).map_or(true, |u| rules.allowed(&u));
                Ok((!allowed).then(|| why.clone()))
            }
        }
    }

    fn capture_http(
        &self,
        url: &Url,
        via: Option<&str>,
        hop: u32,
    ) -> Result<(Event, Option<String>), CaptureError> {
        if self.opts.robots
            && let Some(why) = self.robots_refusal(url)?
        {
            return Ok((
                Event {
                    url: url.to_string(),
                    status: None,
                    bytes: 0,
                    outcome: "robots-disallowed".into(),
                    truncated: None,
                    ms: 0,
                    error: None,
                    reason: Some(why),
                },
                None,
            ));
        }
        let mut meta = Vec::new();
        if let Some(v) = via {
            meta.push(("via".to_string(), v.to_string()));
        }
        if hop > 0 {
            meta.push(("hopsFromSeed".to_string(), "R".repeat(hop as usize)));
        }
        let (ev, _, _, location) = self.fetch_and_record(url, false, &meta)?;
        Ok((ev, location))
    }

    /// Fetches and records one URL. Returns the event, the decoded body
    /// of a 2xx when `want_body` (robots.txt; an error when it did not
    /// decode, [`robots::decode_body`]), the status and a redirect's
    /// Location.
    #[allow(clippy::type_complexity)]
    fn fetch_and_record(
        &self,
        url: &Url,
        want_body: bool,
        meta: &[(String, String)],
    ) -> Result<(Event, Option<Result<Vec<u8>, String>>, u16, Option<String>), CaptureError> {
        let addrs = self.resolve(&url.host)?;
        self.polite(&url.host);
        let target = url.to_string();
        let (extra, conditional_of) = match self.recorder.index() {
            Some(idx) if self.opts.conditional => conditional(idx, &target)?,
            _ => (Vec::new(), None),
        };
        let request = client::get_request(url, &self.opts.user_agent, &extra);
        let mut x = client::fetch(url, &addrs, request, &self.fetch)?;
        let status = x.response.head.status().unwrap_or(0);
        let location = if (300..400).contains(&status) && status != 304 {
            x.response
                .head
                .header("Location")
                .map(|l| String::from_utf8_lossy(&l).trim().to_string())
                .filter(|l| !l.is_empty())
        } else {
            None
        };
        let robots_text = if want_body && (200..300).contains(&status) {
            Some(robots_body(&mut x.response))
        } else {
            None
        };
        let ms = x.elapsed.as_millis() as u64;
        let mut meta = meta.to_vec();
        meta.insert(0, ("fetchTimeMs".to_string(), ms.to_string()));
        // Interim responses (103 Early Hints...) are not in the response
        // record, whose block is one message; their status lines are here.
        meta.extend(
            x.interim
                .iter()
                .map(|l| ("interimResponse".to_string(), l.clone())),
        );
        let truncated = x
            .response
            .truncated
            .as_ref()
            .map(|t| t.as_str().to_string());
        let bytes = x.response.len;
        let recorded = self.recorder.record_http(record::HttpRecord::of_exchange(
            target.clone(),
            &mut x,
            meta,
            conditional_of,
        ))?;
        let outcome = match recorded.kind {
            Kind::Response => "response",
            Kind::Revisit(_) => "revisit",
        };
        Ok((
            Event {
                url: target,
                status: Some(status),
                bytes,
                outcome: outcome.into(),
                truncated,
                ms,
                error: None,
                reason: None,
            },
            robots_text,
            status,
            location,
        ))
    }

    fn capture_ftp(&self, url: &Url) -> Result<Event, CaptureError> {
        let addrs = self.resolve(&url.host)?;
        self.polite(&url.host);
        let t0 = Instant::now();
        let mut got = ftp::retrieve(
            url,
            &addrs,
            &ftp::FtpOptions {
                timeout: self.opts.timeout,
                limits: self.opts.limits,
                spool_threshold: SPOOL_IN_MEMORY.min(self.opts.output.writer.spool_threshold),
            },
        )?;
        let target = url.to_string();
        self.recorder.record_ftp(
            &target,
            Some(got.ip),
            got.started,
            &mut got.file,
            got.len,
            got.truncated.as_ref(),
            &got.control,
            if got.listing {
                "text/plain"
            } else {
                "application/octet-stream"
            },
        )?;
        Ok(Event {
            url: target,
            status: Some(226),
            bytes: got.len,
            outcome: "resource".into(),
            truncated: got.truncated.map(|t| t.as_str().to_string()),
            ms: t0.elapsed().as_millis() as u64,
            error: None,
            reason: None,
        })
    }
}

/// Header fields of a conditional request, and the capture it is made
/// against.
pub type Conditional = (Vec<(String, String)>, Option<Original>);

/// The If-None-Match / If-Modified-Since fields of a conditional request
/// for `target`, from its last capture in `index`, and that capture (a 304
/// becomes a server-not-modified revisit of it). None when `target` was
/// not captured or its server sent no validators.
///
/// # Errors
/// The index failed.
pub fn conditional(index: &DigestIndex, target: &str) -> Result<Conditional, CaptureError> {
    let mut extra = Vec::new();
    let Some(prev) = index.get_url(target)? else {
        return Ok((extra, None));
    };
    if let Some(e) = &prev.etag {
        extra.push(("If-None-Match".to_string(), e.clone()));
    }
    if let Some(l) = &prev.last_modified {
        extra.push(("If-Modified-Since".to_string(), l.clone()));
    }
    let of = (!extra.is_empty()).then(|| prev.entry.original.clone());
    Ok((extra, of))
}

fn error_event(url: &str, e: &CaptureError) -> Event {
    Event {
        url: url.to_string(),
        status: None,
        bytes: 0,
        outcome: "error".into(),
        truncated: None,
        ms: 0,
        error: Some(e.to_string()),
        reason: None,
    }
}

/// The decoded body of a captured robots.txt, at most
/// [`robots::MAX_ROBOTS`], or why it could not be decoded
/// ([`robots::decode_body`]).
fn robots_body(c: &mut client::Captured) -> Result<Vec<u8>, String> {
    use std::io::{BufReader, Seek, SeekFrom};
    c.block
        .seek(SeekFrom::Start(c.head.raw().len() as u64))
        .map_err(|e| format!("reading the recorded body: {e}"))?;
    let truncated = c.truncated.as_ref().map(|t| t.as_str());
    robots::decode_body(BufReader::new(&mut c.block), &c.head, truncated)
}

/// Adds each of `fields` that `warcinfo` does not name yet: the caller's
/// own values stand.
fn add_missing(warcinfo: &mut Vec<(String, String)>, fields: &[(&str, &str)]) {
    for &(name, value) in fields {
        if !warcinfo.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            warcinfo.push((name.into(), value.into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warcinfo_keeps_the_callers_fields_and_adds_the_others() {
        let mut w = vec![("HTTP-Header-User-Agent".to_string(), "mine".to_string())];
        add_missing(
            &mut w,
            &[("http-header-user-agent", "default"), ("robots", "obey")],
        );
        assert_eq!(
            w,
            [
                ("HTTP-Header-User-Agent".to_string(), "mine".to_string()),
                ("robots".to_string(), "obey".to_string())
            ]
        );
    }
}
