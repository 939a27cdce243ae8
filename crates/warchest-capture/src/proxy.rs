//! The recording proxy (`warchest proxy`), as warcprox does it: every
//! exchange that passes is forwarded and recorded through the same
//! [`Recorder`] as `warchest capture`.
//!
//! Plain HTTP comes as absolute-form requests (`GET http://host/ HTTP/1.1`);
//! HTTPS as `CONNECT host:port`, answered by a TLS handshake with a
//! certificate for that host signed on the fly by the proxy's CA, after
//! which the requests inside are read, forwarded over a TLS connection of
//! the proxy's own, and recorded with `https://` target URIs.
//!
//! Two sides (docs/capture.md, "Proxy"):
//! - the client's side is hyper (HTTP/1.1 with keep-alive) on tokio, one
//!   task a connection, with the limits of a server facing the network:
//!   at most [`MAX_CONNECTIONS`] at once, a request head of at most
//!   [`MAX_HEAD`] bytes and [`MAX_FIELDS`] fields (431) arriving within
//!   [`HEAD_DEADLINE`] (or the timeout, when shorter) however slowly it
//!   trickles, idle keep-alive connections closed after the same time, a
//!   connection on which nothing moves for [`STALL`] dropped, malformed
//!   heads and conflicting `Content-Length`s refused (400), a handler that
//!   panics answering 500 while the proxy goes on, and a graceful
//!   shutdown. CONNECT is a hyper upgrade; the tunnel is TLS by
//!   tokio-rustls with hyper serving HTTP inside it again.
//! - the server's side is the capture client ([`super::client`]), blocking
//!   and wire-exact (what is recorded must be the bytes that crossed the
//!   wire, which hyper would normalise), on tokio's blocking threads. It
//!   asks in HTTP/1.0, as `capture` does, so that no transfer coding comes
//!   back and the payload digest verifies in warcio and FastWARC as in
//!   warchest. The response streams to the client through a bounded
//!   channel as it is read; hyper frames it for the client.

use std::convert::Infallible;
use std::io::{self, Seek, SeekFrom, Write};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};
use warchest::http::HttpHead;
use warchest::write::Body;
use warchest_net::{Body as ProxyBody, Chunk, Watched, now_ms};

use super::client::{self, Forward, Framing, Tee};
use super::record::{HttpRecord, Recorder};
use super::tls::CertAuthority;
use super::wire_url::{Scheme, Url};
use super::{CaptureError, dns};

/// How the proxy runs.
#[derive(Clone)]
pub struct ProxyOptions {
    /// Upstream connections: TLS settings, timeout, and how responses are
    /// read (limits apply to what is recorded and passed on alike).
    pub fetch: client::FetchOptions,
    /// The CA that signs per-host certificates for CONNECT.
    pub ca: Arc<CertAuthority>,
    /// How upstream hosts are resolved.
    pub resolver: dns::ResolverOptions,
    /// Who may use the proxy, and for which destinations.
    pub access: Access,
}

/// Who may use a proxy and where it may connect: without this, a proxy on
/// a reachable address is an open relay into the networks behind it.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// Basic credentials (user, password) every request must carry in
    /// `Proxy-Authorization`; `None`: none asked (a loopback proxy).
    pub credentials: Option<(String, String)>,
    /// Destinations allowed although they are in a range denied by default
    /// ([`is_internal`]): the test servers of a loopback crawl, an intranet.
    pub allow: Vec<ipnet::IpNet>,
    /// Further destinations denied.
    pub deny: Vec<ipnet::IpNet>,
    /// Asked about each request's URL before its body is read and before
    /// any lookup or connection (a crawl's scope and `resolve-only`); a
    /// refusal answers 403 with its reason at once, and nothing is
    /// fetched or recorded.
    pub filter: Option<UrlFilter>,
}

/// A check of a request's URL (`Err`: why it is refused).
pub type UrlCheck = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// Told of each exchange the proxy recorded: its target URI and the
/// captured response (head parsed, block as received). Called on the
/// exchange's thread once the record is written and the client's copy
/// ended, so it delays neither; it should return quickly.
pub type ResponseCheck = dyn Fn(&str, &mut client::Captured) + Send + Sync;

/// Told of each redirect (3xx with a `Location`) as its head comes from
/// upstream, before the client has a byte of it: the target URI and the
/// `Location` value. A browser follows a redirect as soon as it has the
/// head, so a hook that awaits the target (a browser's capture awaiting
/// its page's document) must know of it before then. It should return
/// quickly: the client waits for it.
pub type RedirectCheck = dyn Fn(&str, &str) + Send + Sync;

/// A shared [`RedirectCheck`], for [`Proxy::on_redirect`].
#[derive(Clone)]
pub struct RedirectHook(pub Arc<RedirectCheck>);

impl std::fmt::Debug for RedirectHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedirectHook")
    }
}

/// A shared [`ResponseCheck`], for [`Proxy::on_response`].
#[derive(Clone)]
pub struct ResponseHook(pub Arc<ResponseCheck>);

impl std::fmt::Debug for ResponseHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseHook")
    }
}

/// A shared [`UrlCheck`], for [`Access::filter`].
#[derive(Clone)]
pub struct UrlFilter(pub Arc<UrlCheck>);

impl std::fmt::Debug for UrlFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UrlFilter")
    }
}

impl Access {
    /// True when the proxy may connect to `ip`: not in `deny`, and either
    /// outside the internal ranges or inside `allow`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        if self.deny.iter().any(|n| n.contains(&ip)) {
            return false;
        }
        !is_internal(ip) || self.allow.iter().any(|n| n.contains(&ip))
    }

    /// True when `header` (a `Proxy-Authorization` value, if any) carries
    /// the credentials, or none are asked.
    pub fn admits(&self, header: Option<&[u8]>) -> bool {
        let Some((user, password)) = &self.credentials else {
            return true;
        };
        let Some(v) = header else {
            return false;
        };
        let v = String::from_utf8_lossy(v);
        let mut parts = v.split_ascii_whitespace();
        let (Some(scheme), Some(token), None) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case("basic") {
            return false;
        }
        let Ok(decoded) = data_encoding::BASE64.decode(token.as_bytes()) else {
            return false;
        };
        decoded == format!("{user}:{password}").as_bytes()
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The ranges a proxy does not connect to unless allowed: loopback,
/// private (RFC 1918, RFC 6598 shared, IPv6 unique local), link-local,
/// unspecified, broadcast and multicast.
pub fn is_internal(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
        }
    }
}

/// Why the proxy did not record an exchange a client asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotRecorded {
    /// Refused by [`Access::filter`]: what the user asked for (a crawl's
    /// scope), so not a loss.
    Refused,
    /// The destination's name did not resolve.
    Dns,
    /// No connection to the destination (refused, timed out, TLS).
    Connect,
    /// The destination is in a range the proxy does not connect to, or
    /// has no address.
    Denied,
    /// The destination is the proxy itself.
    Loop,
    /// The server closed the connection without a response.
    NoResponse,
    /// The client's connection ended in the middle of a request head.
    ClientGone,
    /// The request body did not arrive whole (cut, too slow, too large).
    RequestBody,
    /// A request the proxy cannot forward (its target).
    BadRequest,
    /// Sending, reading or recording failed after the connection (logged
    /// at warn), or the handler panicked.
    Failed,
}

impl NotRecorded {
    /// Every reason, in the order a summary names them.
    pub const ALL: [NotRecorded; 10] = [
        NotRecorded::Refused,
        NotRecorded::Dns,
        NotRecorded::Connect,
        NotRecorded::Denied,
        NotRecorded::Loop,
        NotRecorded::NoResponse,
        NotRecorded::ClientGone,
        NotRecorded::RequestBody,
        NotRecorded::BadRequest,
        NotRecorded::Failed,
    ];

    /// The reason as a summary names it.
    pub fn label(self) -> &'static str {
        match self {
            NotRecorded::Refused => "refused",
            NotRecorded::Dns => "DNS",
            NotRecorded::Connect => "connect",
            NotRecorded::Denied => "denied",
            NotRecorded::Loop => "loop",
            NotRecorded::NoResponse => "no response",
            NotRecorded::ClientGone => "client gone",
            NotRecorded::RequestBody => "request body",
            NotRecorded::BadRequest => "bad request",
            NotRecorded::Failed => "failed",
        }
    }

    /// Whether an exchange not recorded for this reason is lost: all but
    /// the refusals a filter the user set made.
    pub fn is_loss(self) -> bool {
        self != NotRecorded::Refused
    }
}

/// The most exchanges not recorded that [`Unrecorded`] names; past it
/// they are counted only.
pub const NAMED_UNRECORDED: usize = 1000;

/// The longest [`Missed::what`] kept, in bytes (longer ones are cut and
/// end in `...`), so that the names kept stay small.
const MAX_NAME: usize = 2048;

/// `s` cut to its first [`MAX_NAME`] bytes (at a character), `...` after.
fn cut_name(mut s: String) -> String {
    if s.len() > MAX_NAME {
        let mut cut = MAX_NAME;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// The most distinct URLs of lost exchanges [`Unrecorded`] keeps for
/// [`Unrecorded::claim`]; past it a loss cannot be told to be a page's and
/// is counted as one.
pub const KEPT_LOST_URLS: usize = 100_000;

/// One exchange not recorded.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Missed {
    /// Why.
    pub reason: NotRecorded,
    /// Its method and URL (`GET http://host/`), or, when the request never
    /// arrived whole, the connection it came on.
    pub what: String,
    /// What went wrong, as the client was told or the log says.
    pub why: String,
}

/// The exchanges a proxy did not record, counted by reason as they
/// happen, the first [`NAMED_UNRECORDED`] named. Shared with the
/// proxy's owner ([`Proxy::unrecorded`]), which reads it at the end.
///
/// A browser's own requests (its updater, its clock, its account checks)
/// pass through the proxy too: [`Unrecorded::claim`] tells the lost
/// exchanges a page asked for from those.
///
/// A loss is kept by its URL until a page claims it, or, for a lost GET,
/// until a GET of the same URL is recorded ([`Unrecorded::recorded`]): the
/// archive then holds what that request answers, so the earlier loss is
/// superseded (counted as such, not dropped) and a page that claims the
/// URL later (a retry of the page that lost it) finds nothing to claim.
/// A lost exchange of another method (a POST, whose body may differ) is
/// never superseded. A loss already claimed
/// stays its page's: that page's line said so when it ended.
#[derive(Debug, Default)]
pub struct Unrecorded {
    counts: [AtomicU64; NotRecorded::ALL.len()],
    named: std::sync::Mutex<Vec<Missed>>,
    /// URLs of lost exchanges not claimed by a page yet (at most
    /// [`KEPT_LOST_URLS`]), with how many times each was lost: kept as
    /// 64-bit hashes, so that long URLs (a head may be 64 KiB) cannot
    /// make the table large.
    lost_urls: std::sync::Mutex<std::collections::HashMap<u64, LostUrl>>,
    /// Losses whose URL is not kept: none known, or past the bound.
    unattributed: AtomicU64,
    /// Losses claimed by a page.
    claimed: AtomicU64,
    /// Losses whose URL an exchange recorded later.
    superseded: AtomicU64,
    /// Lost GETs held in `lost_urls`: while none is, a recording has
    /// nothing to supersede and takes no lock (most exchanges).
    held_gets: AtomicU64,
    /// Pages whose browser tracker lost events (see
    /// [`Unrecorded::tracker_incomplete`]).
    incomplete_pages: AtomicU64,
    /// Set by [`Unrecorded::track_pages`]: a browser runner says when its
    /// pages are open.
    tracks_pages: AtomicBool,
    /// Pages open now ([`Unrecorded::page_open`]).
    open_pages: AtomicU64,
    /// Losses of no known URL noted while pages were tracked and none was
    /// open: no page's.
    outside_pages: AtomicU64,
}

/// A page open in a browser, from before its first request until its
/// losses are claimed ([`Unrecorded::page_open`]); closed when dropped.
#[derive(Debug)]
pub struct OpenPage(Arc<Unrecorded>);

impl Drop for OpenPage {
    fn drop(&mut self) {
        self.0.open_pages.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Unrecorded {
    /// Counts one exchange not recorded (and names it, while there is
    /// room); logged at debug, as the summary will name it. `exchange`:
    /// its method and URL, when the request got that far.
    pub fn note(
        &self,
        reason: NotRecorded,
        what: String,
        exchange: Option<(&str, &str)>,
        why: &str,
    ) {
        self.counts[reason as usize].fetch_add(1, Ordering::Relaxed);
        if reason.is_loss() {
            let mut kept = self.lost_urls.lock().unwrap_or_else(|e| e.into_inner());
            match exchange {
                Some((method, url))
                    if kept.contains_key(&url_key(url)) || kept.len() < KEPT_LOST_URLS =>
                {
                    let e = kept.entry(url_key(url)).or_default();
                    if method.eq_ignore_ascii_case("GET") {
                        e.gets += 1;
                        self.held_gets.fetch_add(1, Ordering::SeqCst);
                    } else {
                        e.others += 1;
                    }
                }
                _ if self.tracks_pages.load(Ordering::SeqCst)
                    && self.open_pages.load(Ordering::SeqCst) == 0 =>
                {
                    self.outside_pages.fetch_add(1, Ordering::Relaxed);
                }
                _ => {
                    self.unattributed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let why = why.trim_end();
        tracing::debug!("not recorded ({}): {what}: {why}", reason.label());
        let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        if named.len() < NAMED_UNRECORDED {
            // Names are for reading: the first 2 KiB of a long URL (or of
            // an error quoting one) say which.
            named.push(Missed {
                reason,
                what: cut_name(what),
                why: cut_name(why.to_string()),
            });
        }
    }

    /// The URLs among `urls` (a page's, as its browser tab saw them
    /// answered) whose exchange was lost, each once, now counted as that
    /// page's. The proxy notes a loss before its client sees the answer,
    /// so a page that saw its answers finds its losses here.
    pub fn claim<'a>(&self, urls: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut kept = self.lost_urls.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for u in urls {
            if let Some(n) = kept.remove(&url_key(u)) {
                self.claimed.fetch_add(n.gets + n.others, Ordering::Relaxed);
                self.held_gets.fetch_sub(n.gets, Ordering::SeqCst);
                out.push(u.to_string());
            }
        }
        out
    }

    /// Called when an exchange (`method`, `url`) was recorded: for a GET,
    /// the lost GETs of `url` not claimed yet are superseded, since the
    /// archive now holds what that request answers. Only earlier losses:
    /// one after this recording is kept for claiming as any other. A
    /// recording of another method supersedes nothing (a POST's body may
    /// differ), nor is a lost exchange of another method superseded.
    pub fn recorded(&self, method: &str, url: &str) {
        // A loss is noted (and counted here) before its client sees the
        // answer, so one earlier than this recording is seen.
        if !method.eq_ignore_ascii_case("GET") || self.held_gets.load(Ordering::SeqCst) == 0 {
            return;
        }
        let key = url_key(url);
        let mut kept = self.lost_urls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = kept.get_mut(&key) {
            self.superseded.fetch_add(n.gets, Ordering::Relaxed);
            self.held_gets.fetch_sub(n.gets, Ordering::SeqCst);
            n.gets = 0;
            if n.others == 0 {
                kept.remove(&key);
            }
        }
    }

    /// Counts a page whose browser tracker lost events: its list of URLs
    /// may be short, so it may not have claimed all of its losses. Once
    /// one page was, no unclaimed loss can be told to be the browser's
    /// own ([`UnrecordedSummary::lost_by_pages`]).
    pub fn tracker_incomplete(&self) {
        self.incomplete_pages.fetch_add(1, Ordering::Relaxed);
    }

    /// Says that a browser runner tells when its pages are open
    /// ([`Unrecorded::page_open`]): from now on a loss of no known URL (a
    /// request cut in its head) noted while no page is open is no page's,
    /// as a loss of a known URL no page claims is not
    /// ([`UnrecordedSummary::outside_pages`]). Until then every such loss
    /// may have been a page's.
    pub fn track_pages(&self) {
        self.tracks_pages.store(true, Ordering::SeqCst);
    }

    /// A page is open until the guard is dropped: taken before the page's
    /// first request, dropped after it claimed its losses. Pages are
    /// tracked from then on, if [`Unrecorded::track_pages`] was not called
    /// before.
    pub fn page_open(self: &Arc<Self>) -> OpenPage {
        self.track_pages();
        self.open_pages.fetch_add(1, Ordering::SeqCst);
        OpenPage(self.clone())
    }

    /// What was counted so far.
    pub fn summary(&self) -> UnrecordedSummary {
        let counts = NotRecorded::ALL
            .iter()
            .map(|r| (*r, self.counts[*r as usize].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let named = self.named.lock().unwrap_or_else(|e| e.into_inner()).clone();
        UnrecordedSummary {
            counts,
            named,
            claimed: self.claimed.load(Ordering::Relaxed),
            unattributed: self.unattributed.load(Ordering::Relaxed),
            superseded: self.superseded.load(Ordering::Relaxed),
            incomplete_pages: self.incomplete_pages.load(Ordering::Relaxed),
            outside_pages: self.outside_pages.load(Ordering::Relaxed),
        }
    }
}

/// How often one URL's exchange was lost, not yet claimed: GETs, which a
/// later recorded GET supersedes, and any other method, which nothing
/// does.
#[derive(Debug, Default, Clone, Copy)]
struct LostUrl {
    gets: u64,
    others: u64,
}

/// A URL's key in [`Unrecorded`]'s table of lost URLs: the same for the
/// same text within a process (std's hasher with its fixed keys).
fn url_key(url: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    url.hash(&mut h);
    h.finish()
}

/// A snapshot of [`Unrecorded`].
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct UnrecordedSummary {
    /// The reasons that occurred, with how many exchanges each.
    pub counts: Vec<(NotRecorded, u64)>,
    /// The first [`NAMED_UNRECORDED`] exchanges, in the order they ended.
    pub named: Vec<Missed>,
    /// Lost exchanges a page claimed ([`Unrecorded::claim`]).
    pub claimed: u64,
    /// Lost exchanges whose URL was not kept (a request cut before its
    /// head ended, or past [`KEPT_LOST_URLS`]): nobody can tell whose.
    pub unattributed: u64,
    /// Lost exchanges whose URL a later exchange recorded
    /// ([`Unrecorded::recorded`]): the archive holds the URL. Part of
    /// [`UnrecordedSummary::lost`], none of
    /// [`UnrecordedSummary::lost_by_pages`].
    pub superseded: u64,
    /// Pages whose browser tracker lost events
    /// ([`Unrecorded::tracker_incomplete`]).
    pub incomplete_pages: u64,
    /// Lost exchanges of no known URL (as [`UnrecordedSummary::unattributed`])
    /// that ended while a browser runner had no page open
    /// ([`Unrecorded::track_pages`]): a browser's own, or a page's that
    /// had ended, as an unclaimed loss of a known URL is. Part of
    /// [`UnrecordedSummary::browsers_own`].
    pub outside_pages: u64,
}

impl UnrecordedSummary {
    /// Exchanges not recorded, for any reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }

    /// Exchanges lost: not recorded for a reason other than a refusal
    /// (those [`UnrecordedSummary::superseded`] included).
    pub fn lost(&self) -> u64 {
        self.counts
            .iter()
            .filter(|(r, _)| r.is_loss())
            .map(|(_, n)| n)
            .sum()
    }

    /// Lost exchanges that were, or may have been, a page's: claimed by a
    /// page, or of no known URL while a page was open (or pages were not
    /// tracked); and when a page's tracker lost events
    /// ([`UnrecordedSummary::incomplete_pages`]), every loss not
    /// superseded nor outside the pages, since that page's list of URLs
    /// may be short and its losses left unclaimed. The rest of [`UnrecordedSummary::lost`],
    /// less the superseded, were a browser's own requests
    /// ([`UnrecordedSummary::browsers_own`]).
    pub fn lost_by_pages(&self) -> u64 {
        if self.incomplete_pages > 0 {
            self.lost()
                .saturating_sub(self.superseded)
                .saturating_sub(self.outside_pages)
        } else {
            self.claimed + self.unattributed
        }
    }

    /// Lost exchanges told to be a browser's own requests (or a page's
    /// the browser no longer tracked when they ended): neither a page's
    /// ([`UnrecordedSummary::lost_by_pages`]) nor superseded.
    pub fn browsers_own(&self) -> u64 {
        self.lost()
            .saturating_sub(self.superseded)
            .saturating_sub(self.lost_by_pages())
    }

    /// Exchanges counted but not named (past [`NAMED_UNRECORDED`]).
    pub fn unnamed(&self) -> u64 {
        self.total().saturating_sub(self.named.len() as u64)
    }

    /// `N exchanges not recorded (refused a, DNS b)`, the nonzero reasons
    /// only; `None` when every exchange was recorded.
    pub fn line(&self) -> Option<String> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let reasons: Vec<String> = self
            .counts
            .iter()
            .map(|(r, n)| format!("{} {n}", r.label()))
            .collect();
        Some(format!(
            "{total} exchange{} not recorded ({})",
            if total == 1 { "" } else { "s" },
            reasons.join(", ")
        ))
    }

    /// One line an exchange, `not recorded (reason): what: why`, then how
    /// many more were not named.
    pub fn listing(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .named
            .iter()
            .map(|m| format!("not recorded ({}): {}: {}", m.reason.label(), m.what, m.why))
            .collect();
        let more = self.unnamed();
        if more > 0 {
            out.push(format!("... and {more} more exchanges not recorded"));
        }
        out
    }
}

/// The most client connections open at once (CONNECT tunnels included);
/// past it, accepting waits and the kernel's backlog holds the rest.
pub const MAX_CONNECTIONS: usize = 1024;

/// Longest time a client's request head may take to arrive, however
/// slowly its bytes trickle (less when the timeout is shorter); also how
/// long an idle keep-alive connection is kept, and how long a CONNECT
/// tunnel's TLS handshake may take.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(20);

/// The longest request head (start line and fields) taken from a client:
/// more is refused with 431. Browsers send a few KiB; servers commonly
/// allow 8 to 64 KiB.
pub const MAX_HEAD: usize = 64 << 10;

/// The most fields in a client's request head (431 past it).
pub const MAX_FIELDS: usize = 100;

/// How long a client connection may see no byte move in either direction,
/// an exchange under way or not (a client that stopped reading), before
/// it is dropped; never less than twice the timeout, so that a slow
/// server is not taken for a stalled client.
pub const STALL: Duration = Duration::from_secs(60);

/// The largest request body forwarded (413 past it): it is spooled
/// whole (memory, then a temporary file) before it goes upstream with its
/// length.
pub const MAX_REQUEST_BODY: u64 = 256 << 20;

/// Upstream exchanges run at once, each on a blocking thread (the others
/// wait for one).
pub const MAX_EXCHANGES: usize = 512;

/// Pieces of a response body (64 KiB each) queued between the upstream
/// reader and the client's connection.
const QUEUED_CHUNKS: usize = 4;

/// The path that makes a debug build's proxy panic when
/// `WARCHEST_PROXY_TEST_PANIC` is set, to test that a panic answers 500.
const TEST_PANIC_PATH: &str = "/_warchest/panic";

/// A listening recording proxy.
pub struct Proxy {
    listener: std::net::TcpListener,
    recorder: Arc<Recorder>,
    opts: ProxyOptions,
    resolver: Arc<dns::Resolver>,
    on_response: Option<ResponseHook>,
    on_redirect: Option<RedirectHook>,
    unrecorded: Arc<Unrecorded>,
}

/// What every connection and exchange shares.
struct Shared {
    recorder: Arc<Recorder>,
    opts: ProxyOptions,
    resolver: Arc<dns::Resolver>,
    on_response: Option<ResponseHook>,
    on_redirect: Option<RedirectHook>,
    /// The exchanges not recorded, by reason.
    unrecorded: Arc<Unrecorded>,
    /// The proxy's own address, so a request for it is refused.
    me: SocketAddr,
    /// Upstream exchanges under way (shutdown waits for them).
    busy: Arc<AtomicUsize>,
    /// hyper's settings for client connections (and tunnels).
    http1: hyper::server::conn::http1::Builder,
    /// How long a request head may take.
    head_deadline: Duration,
    /// How long a connection may see nothing move.
    stall: Duration,
}

impl Proxy {
    /// Listens on `addr`.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn bind(
        addr: SocketAddr,
        recorder: Arc<Recorder>,
        opts: ProxyOptions,
    ) -> Result<Proxy, CaptureError> {
        let listener =
            std::net::TcpListener::bind(addr).map_err(|e| CaptureError::Io(addr.to_string(), e))?;
        Ok(Proxy {
            listener,
            recorder,
            resolver: Arc::new(dns::Resolver::new(opts.resolver.clone())),
            opts,
            on_response: None,
            on_redirect: None,
            unrecorded: Arc::default(),
        })
    }

    /// The exchanges this proxy does not record, counted as they end:
    /// taken before [`Proxy::serve`], read once it returned.
    pub fn unrecorded(&self) -> Arc<Unrecorded> {
        self.unrecorded.clone()
    }

    /// Calls `hook` with each response recorded (a browser's capture
    /// reads its page's document as soon as it is recorded).
    pub fn on_response(mut self, hook: ResponseHook) -> Proxy {
        self.on_response = Some(hook);
        self
    }

    /// Calls `hook` with each redirect as its head comes, before the
    /// client has it ([`RedirectCheck`]).
    pub fn on_redirect(mut self, hook: RedirectHook) -> Proxy {
        self.on_redirect = Some(hook);
        self
    }

    /// The address listened on (with the port the system chose for port 0).
    ///
    /// # Errors
    /// The socket cannot tell.
    pub fn local_addr(&self) -> Result<SocketAddr, CaptureError> {
        self.listener
            .local_addr()
            .map_err(|e| CaptureError::Io("listener".into(), e))
    }

    /// Serves until `stop` is set (checked every 100 ms), each client
    /// connection a task; then stops accepting (the port is closed),
    /// closes idle connections and waits for the exchanges under way (at
    /// most the timeout) before returning, so that their records are
    /// written.
    ///
    /// # Errors
    /// The runtime or the listener cannot be set up.
    pub fn serve(self, stop: &AtomicBool) -> Result<(), CaptureError> {
        let io_err = |what: &str, e| CaptureError::Io(what.into(), e);
        let me = self.local_addr()?;
        // Owned by the accept loop, so that the port closes when it ends.
        let listener = self.listener;
        listener
            .set_nonblocking(true)
            .map_err(|e| io_err("listener", e))?;
        let timeout = self.opts.fetch.timeout;
        let head_deadline = timeout.min(HEAD_DEADLINE);
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(head_deadline)
            // Room for a whole head and the first bytes of a body.
            .max_buf_size(MAX_HEAD * 2)
            .max_header_size(MAX_HEAD)
            .max_headers(MAX_FIELDS)
            .title_case_headers(true)
            .keep_alive(true);
        let shared = Arc::new(Shared {
            recorder: self.recorder,
            opts: self.opts,
            resolver: self.resolver,
            on_response: self.on_response,
            on_redirect: self.on_redirect,
            unrecorded: self.unrecorded,
            me,
            busy: Arc::default(),
            http1,
            head_deadline,
            stall: STALL.max(timeout.saturating_mul(2)),
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("proxy")
            .max_blocking_threads(MAX_EXCHANGES)
            .build()
            .map_err(|e| io_err("tokio runtime", e))?;
        let result = rt.block_on(async {
            let socket =
                tokio::net::TcpListener::from_std(listener).map_err(|e| io_err("listener", e))?;
            let (tx, rx) = watch::channel(false);
            let conns = Arc::new(Semaphore::new(MAX_CONNECTIONS));
            let shared_c = shared.clone();
            let stops = rx.clone();
            let accepting = tokio::spawn(warchest_net::accept_loop(
                socket,
                conns.clone(),
                rx,
                "proxy",
                move |stream, peer, permit| {
                    let epoch = Instant::now();
                    let conn = Conn {
                        shared: shared_c.clone(),
                        peer,
                        tunnel: None,
                        last: Arc::new(AtomicU64::new(0)),
                        epoch,
                        _permit: Arc::new(permit),
                        stop: stops.clone(),
                        under_way: Arc::default(),
                        reads: Arc::default(),
                    };
                    let io = Watched::new(stream, conn.last.clone(), epoch)
                        .counting_reads(conn.reads.total.clone());
                    tokio::spawn(serve_http(conn, io, true));
                },
            ));
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            tracing::info!("proxy stopping: finishing the exchanges under way");
            let _ = tx.send(true);
            let _ = accepting.await;
            // Every connection holds a permit: all back means all closed.
            let until = tokio::time::Instant::now() + timeout;
            let all = u32::try_from(MAX_CONNECTIONS).unwrap_or(u32::MAX);
            if tokio::time::timeout_at(until, conns.acquire_many(all))
                .await
                .is_err()
            {
                tracing::warn!(
                    "proxy stopped with {} connections still open",
                    MAX_CONNECTIONS - conns.available_permits()
                );
            }
            // Exchanges whose client left go on to write their records.
            while shared.busy.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(())
        });
        rt.shutdown_timeout(Duration::from_secs(1));
        result
    }
}

/// One client connection, or one CONNECT tunnel inside it.
#[derive(Clone)]
struct Conn {
    shared: Arc<Shared>,
    peer: SocketAddr,
    /// Inside a CONNECT tunnel: requests are for `https://` this authority.
    tunnel: Option<Arc<Url>>,
    /// When a byte last moved on the client's socket (ms since `epoch`).
    last: Arc<AtomicU64>,
    epoch: Instant,
    /// The connection's place among [`MAX_CONNECTIONS`], held by its
    /// tunnel too.
    _permit: Arc<OwnedSemaphorePermit>,
    stop: watch::Receiver<bool>,
    /// Requests of this connection whose exchange is under way: from the
    /// head handed over until the answer's body is sent or dropped (a
    /// [`Counted`] the body holds). A connection that ends while one is owes no loss of
    /// its own: the exchange goes on to its record, or counts its loss
    /// where it happens (a request body cut, a failed fetch).
    under_way: Arc<AtomicUsize>,
    /// Bytes read from this connection's stream, and how many had been
    /// when its last answer ended.
    reads: Arc<Reads>,
}

/// Bytes read from a client's stream (counted by its [`Watched`]), and
/// how many had been when its last answer ended (was sent whole or dropped). A
/// connection hyper ends in the middle of a message with no exchange
/// under way left either in a request head, whose bytes came after that
/// answer, or while the last bytes of that answer were still being sent,
/// with nothing read since: that exchange is recorded, so it owes no
/// loss ([`unanswered`]).
#[derive(Debug, Default)]
struct Reads {
    total: Arc<AtomicU64>,
    at_answer: AtomicU64,
}

/// The bytes of a request a connection ended with, not answered, when
/// hyper ends it in the middle of a message with no exchange under way:
/// `None` when nothing came after its last answer (its client left as
/// that answer's last bytes were sent).
fn unanswered(reads: &Reads) -> Option<u64> {
    let n = reads
        .total
        .load(Ordering::SeqCst)
        .saturating_sub(reads.at_answer.load(Ordering::SeqCst));
    (n > 0).then_some(n)
}

/// One thing counted under way in a counter while alive: an upstream
/// exchange in [`Shared::busy`], a client's request in
/// [`Conn::under_way`].
struct Counted(Arc<AtomicUsize>);

impl Counted {
    fn new(n: &Arc<AtomicUsize>) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Counted(n.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An answer's body, holding its request's place in [`Conn::under_way`]
/// until hyper has sent it whole or dropped it (the connection's end is
/// seen first).
struct Answer {
    body: ProxyBody,
    _under_way: Counted,
    reads: Arc<Reads>,
}

impl Drop for Answer {
    fn drop(&mut self) {
        let read = self.reads.total.load(Ordering::SeqCst);
        self.reads.at_answer.store(read, Ordering::SeqCst);
    }
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, io::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves HTTP/1.1 on `io` for `conn` until it ends: a client's socket
/// with upgrades (for CONNECT), or the TLS inside a CONNECT tunnel without.
async fn serve_http<I>(conn: Conn, io: I, upgrades: bool)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let c = conn.clone();
    let service = hyper::service::service_fn(move |req| {
        let c = c.clone();
        async move { Ok::<_, Infallible>(respond_boxed(c, req).await) }
    });
    let http = conn
        .shared
        .http1
        .serve_connection(TokioIo::new(io), service);
    // The two connection types differ; the watch is the same.
    if upgrades {
        let http = http.with_upgrades();
        tokio::pin!(http);
        watch_connection(&conn, http, |h| h.graceful_shutdown()).await;
    } else {
        tokio::pin!(http);
        watch_connection(&conn, http, |h| h.graceful_shutdown()).await;
    }
}

/// Drives a connection to its end; shuts it down gracefully when the proxy
/// stops, and drops it when nothing has moved for the stall time.
async fn watch_connection<F>(conn: &Conn, mut http: Pin<&mut F>, shutdown: impl Fn(Pin<&mut F>))
where
    F: Future<Output = hyper::Result<()>>,
{
    let mut stop = conn.stop.clone();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut closing = *stop.borrow();
    if closing {
        shutdown(http.as_mut());
    }
    loop {
        tokio::select! {
            r = http.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!("proxy client {}: {e}", conn.peer);
                    // A request whose head began but never ended; an idle
                    // connection closed is no loss (hyper ends it Ok), nor
                    // is a header timeout, which also ends idle ones.
                    // hyper says the same of a client that left while its
                    // exchange was under way (a tab closed on a slow
                    // image), or while its answer's last bytes were being
                    // sent: that exchange is recorded all the same.
                    if e.is_incomplete_message() && conn.under_way.load(Ordering::SeqCst) == 0 {
                        if let Some(n) = unanswered(&conn.reads) {
                            conn.shared.unrecorded.note(
                                NotRecorded::ClientGone,
                                format!("a request from {}", conn.peer),
                                None,
                                &format!("{e}, {n} bytes of it read"),
                            );
                        } else {
                            tracing::debug!(
                                "proxy client {}: left as its last answer was sent",
                                conn.peer
                            );
                        }
                    }
                }
                break;
            }
            _ = stop.changed(), if !closing => {
                shutdown(http.as_mut());
                closing = true;
            }
            _ = tick.tick() => {
                let quiet = Duration::from_millis(
                    now_ms(conn.epoch).saturating_sub(conn.last.load(Ordering::Relaxed)),
                );
                if quiet > conn.shared.stall {
                    tracing::info!(
                        "proxy client {}: nothing moved for {} s, dropped",
                        conn.peer,
                        conn.shared.stall.as_secs()
                    );
                    break;
                }
            }
        }
    }
}

/// A short text answer of the proxy's own.
fn simple(status: StatusCode, text: &str) -> Response<ProxyBody> {
    let mut r = Response::new(ProxyBody::Full(Some(Bytes::copy_from_slice(
        text.as_bytes(),
    ))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// [`respond`] as a boxed future: a tunnel's requests are answered by
/// the function that opened it, and the future's type cannot contain
/// itself.
fn respond_boxed(
    c: Conn,
    req: Request<Incoming>,
) -> Pin<Box<dyn Future<Output = Response<Answer>> + Send>> {
    // Under way from the head's arrival: the connection may end before
    // the answer does.
    let under_way = Counted::new(&c.under_way);
    Box::pin(async move {
        let reads = c.reads.clone();
        respond(c, req).await.map(|body| Answer {
            body,
            _under_way: under_way,
            reads,
        })
    })
}

/// Answers one request of a client: refused, a CONNECT tunnel opened, or
/// an exchange with the server.
async fn respond(c: Conn, mut req: Request<Incoming>) -> Response<ProxyBody> {
    let shared = c.shared.clone();
    // Inside a CONNECT tunnel the client was admitted at the CONNECT.
    if c.tunnel.is_none()
        && !shared.opts.access.admits(
            req.headers()
                .get(hyper::header::PROXY_AUTHORIZATION)
                .map(|v| v.as_bytes()),
        )
    {
        let mut r = simple(
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            "proxy credentials needed\n",
        );
        r.headers_mut().insert(
            hyper::header::PROXY_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Basic realm=\"warchest proxy\""),
        );
        return r;
    }
    if req.method() == Method::CONNECT {
        return open_tunnel(c, &mut req).await;
    }
    let url = match target_url(&c, &req) {
        Ok(u) => u,
        Err(why) => {
            shared.unrecorded.note(
                NotRecorded::BadRequest,
                format!("{} {}", req.method(), req.uri()),
                Some((req.method().as_str(), &req.uri().to_string())),
                why,
            );
            return simple(StatusCode::BAD_REQUEST, why);
        }
    };
    // Refused before a byte of the body is read: a client is not kept
    // sending (nor the proxy spooling) a body that goes nowhere.
    if let Some(f) = &shared.opts.access.filter
        && let Err(why) = (f.0)(&url.to_string())
    {
        tracing::info!("proxy client {}: {url}: refused: {why}", c.peer);
        shared.unrecorded.note(
            NotRecorded::Refused,
            format!("{} {url}", req.method()),
            None,
            &why,
        );
        return simple(StatusCode::FORBIDDEN, &format!("{url}: {why}\n"));
    }
    exchange(c, req, url).await
}

/// The URL a request is for: its absolute-form target, its path in a
/// tunnel's `https://` origin, or (origin-form outside a tunnel) its path
/// on the host its Host names.
fn target_url(c: &Conn, req: &Request<Incoming>) -> Result<Url, &'static str> {
    let uri = req.uri();
    let pq = uri.path_and_query().map_or("/", |p| p.as_str());
    let url = match (uri.scheme_str(), uri.authority(), &c.tunnel) {
        (Some(scheme), Some(auth), _) => Url::parse(&format!("{scheme}://{auth}{pq}")),
        (_, _, Some(base)) if pq.starts_with('/') => {
            let mut u = Url::clone(base);
            u.path_and_query = pq.to_string();
            Ok(u)
        }
        (None, None, None) if pq.starts_with('/') => {
            let host = req
                .headers()
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .ok_or("a request in origin form without Host: no destination\n")?;
            Url::parse(&format!("http://{}{pq}", host.trim()))
        }
        _ => return Err("cannot proxy this request target\n"),
    };
    match url {
        Ok(u) if u.scheme != Scheme::Ftp => Ok(u),
        _ => Err("cannot proxy this request target\n"),
    }
}

/// CONNECT: answers 200, then (once hyper hands the connection over) makes
/// the TLS handshake as the host, with a certificate from the proxy's CA,
/// and serves the requests inside.
async fn open_tunnel(c: Conn, req: &mut Request<Incoming>) -> Response<ProxyBody> {
    if c.tunnel.is_some() {
        return simple(StatusCode::BAD_REQUEST, "CONNECT inside CONNECT\n");
    }
    let Some(url) = req
        .uri()
        .authority()
        .and_then(|a| Url::parse(&format!("https://{a}/")).ok())
    else {
        return simple(StatusCode::BAD_REQUEST, "bad CONNECT target\n");
    };
    // Signing a certificate is CPU work: off the connection tasks.
    let ca = c.shared.opts.ca.clone();
    let host = url.host.clone();
    let cfg = match tokio::task::spawn_blocking(move || ca.server_config(&host)).await {
        Ok(Ok(cfg)) => cfg,
        Ok(Err(e)) => {
            tracing::warn!("proxy: a certificate for {}: {e}", url.host);
            return simple(StatusCode::BAD_GATEWAY, &format!("{e}\n"));
        }
        Err(e) => {
            tracing::error!("proxy: signing a certificate for {}: {e}", url.host);
            return simple(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n");
        }
    };
    let upgrade = hyper::upgrade::on(req);
    let deadline = c.shared.head_deadline;
    tokio::spawn(async move {
        let upgraded = match tokio::time::timeout(deadline, upgrade).await {
            Ok(Ok(u)) => u,
            Ok(Err(e)) => {
                tracing::debug!("proxy client {}: CONNECT: {e}", c.peer);
                return;
            }
            Err(_) => return,
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
        let tls =
            match tokio::time::timeout(deadline, acceptor.accept(TokioIo::new(upgraded))).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    tracing::warn!(
                        "proxy client {}: TLS handshake for {}: {e}",
                        c.peer,
                        url.host
                    );
                    return;
                }
                Err(_) => {
                    tracing::warn!(
                        "proxy client {}: TLS handshake for {} took over {} s",
                        c.peer,
                        url.host,
                        deadline.as_secs()
                    );
                    return;
                }
            };
        let inner = Conn {
            tunnel: Some(Arc::new(url)),
            under_way: Arc::default(),
            reads: Arc::default(),
            ..c
        };
        // The plaintext's bytes are the requests'.
        let tls = Watched::new(tls, inner.last.clone(), inner.epoch)
            .counting_reads(inner.reads.total.clone());
        serve_http(inner, tls, false).await;
    });
    let mut r = Response::new(ProxyBody::Full(None));
    if let Ok(reason) = hyper::ext::ReasonPhrase::try_from(&b"Connection established"[..]) {
        r.extensions_mut().insert(reason);
    }
    r
}

/// A piece of a request body, from the client's connection to the
/// exchange's blocking half. The body is whole only at [`Piece::End`]: a
/// channel closed without it was dropped with its connection (the client
/// left in the middle of the body).
enum Piece {
    Data(Bytes),
    End,
    /// Refused or cut: the status and why.
    Cut(StatusCode, String),
}

/// What an exchange's blocking half is given.
struct Job {
    url: Url,
    method: Method,
    /// The request head to send, but for its Content-Length, Connection
    /// and the empty line that ends it.
    head: Vec<u8>,
    /// The client's request declared a body.
    declares_body: bool,
    /// The request body as the client's connection hands it over.
    body: mpsc::Receiver<Piece>,
    peer: SocketAddr,
}

/// A request forwarded: the body passed on to the blocking half as it
/// arrives (each piece within the timeout), then its answer awaited.
async fn exchange(c: Conn, req: Request<Incoming>, url: Url) -> Response<ProxyBody> {
    let (parts, mut body) = req.into_parts();
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY) {
        c.shared.unrecorded.note(
            NotRecorded::RequestBody,
            format!("{} {url}", parts.method),
            Some((parts.method.as_str(), &url.to_string())),
            &format!("over {MAX_REQUEST_BODY} bytes"),
        );
        return simple(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("request bodies are at most {MAX_REQUEST_BODY} bytes here\n"),
        );
    }
    let absolute = parts.uri.scheme().is_some();
    let (head, declares_body) = upstream_head(&parts, &url, absolute);
    let (btx, brx) = mpsc::channel(QUEUED_CHUNKS);
    let (htx, hrx) = oneshot::channel();
    let job = Job {
        url,
        method: parts.method.clone(),
        head,
        declares_body,
        body: brx,
        peer: c.peer,
    };
    let what = format!("{} {}", job.method, job.url);
    let target = job.url.to_string();
    let method = job.method.as_str().to_owned();
    let shared = c.shared.clone();
    let task = tokio::task::spawn_blocking(move || {
        let mut fwd = Fwd {
            head: Some(htx),
            body: None,
            held: None,
            method: job.method.clone(),
        };
        run_exchange(&shared, job, &mut fwd);
    });
    let timeout = c.shared.opts.fetch.timeout;
    let mut received = 0u64;
    loop {
        let (status, why) = match tokio::time::timeout(timeout, body.frame()).await {
            Ok(None) => {
                let _ = btx.send(Piece::End).await;
                break;
            }
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => {
                    received += data.len() as u64;
                    if received > MAX_REQUEST_BODY {
                        (
                            StatusCode::PAYLOAD_TOO_LARGE,
                            format!("over {MAX_REQUEST_BODY} bytes"),
                        )
                    } else if btx.send(Piece::Data(data)).await.is_err() {
                        break;
                    } else {
                        continue;
                    }
                }
                // Trailers: not forwarded (the body goes as HTTP/1.0).
                Err(_) => continue,
            },
            Ok(Some(Err(e))) => (StatusCode::BAD_REQUEST, e.to_string()),
            Err(_) => (
                StatusCode::REQUEST_TIMEOUT,
                format!("no byte of it for {} s", timeout.as_secs_f64()),
            ),
        };
        let _ = btx.send(Piece::Cut(status, why)).await;
        break;
    }
    drop(btx);
    match hrx.await {
        Ok(r) => r,
        Err(_) => {
            // No answer at all: the blocking task could not run.
            let e = task.await.err().map(|e| e.to_string()).unwrap_or_default();
            tracing::error!("proxy: an exchange did not answer: {e}");
            c.shared.unrecorded.note(
                NotRecorded::Failed,
                what,
                Some((&method, &target)),
                &format!("no answer: {e}"),
            );
            simple(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n")
        }
    }
}

/// Fields not forwarded upstream: hop-by-hop ones (RFC 9110 section
/// 7.6.1), the proxy's own, and the body's framing, which the proxy sets
/// (the body is sent whole with its Content-Length, in HTTP/1.0).
const NOT_FORWARDED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "http2-settings",
    "content-length",
    "expect",
];

/// `content-type` as `Content-Type`: hyper hands field names over in lower
/// case, and servers are used to browsers' spelling.
fn title_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut up = true;
    for ch in name.chars() {
        out.push(if up { ch.to_ascii_uppercase() } else { ch });
        up = ch == '-';
    }
    out
}

/// The names a message's Connection fields list (hop-by-hop too).
fn connection_tokens<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<String> {
    values
        .flat_map(|v| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The request head sent upstream, without its Content-Length and
/// Connection and the empty line: the start line in origin form and
/// HTTP/1.0 (so that no transfer coding comes back), then the client's
/// fields in its order (repeats together), end-to-end ones only. Host is
/// the target's for an absolute-form request (RFC 9112 section 3.2.2), the
/// client's otherwise. Also whether the client declared a body.
fn upstream_head(parts: &http::request::Parts, url: &Url, absolute: bool) -> (Vec<u8>, bool) {
    let mut head = Vec::new();
    head.extend_from_slice(parts.method.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(url.path_and_query.as_bytes());
    head.extend_from_slice(b" HTTP/1.0\r\n");
    let h = &parts.headers;
    let named = connection_tokens(
        h.get_all(hyper::header::CONNECTION)
            .iter()
            .chain(h.get_all("proxy-connection").iter())
            .map(|v| v.as_bytes()),
    );
    if !h.contains_key(hyper::header::HOST) {
        head.extend_from_slice(format!("Host: {}\r\n", url.authority()).as_bytes());
    }
    let mut host_done = false;
    for (name, value) in h {
        let n = name.as_str();
        if NOT_FORWARDED.contains(&n) || named.iter().any(|t| t == n) {
            continue;
        }
        if n == "host" && absolute {
            if !host_done {
                head.extend_from_slice(format!("Host: {}\r\n", url.authority()).as_bytes());
            }
            host_done = true;
            continue;
        }
        head.extend_from_slice(title_case(n).as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    let declares_body = h.contains_key(hyper::header::CONTENT_LENGTH)
        || h.contains_key(hyper::header::TRANSFER_ENCODING);
    (head, declares_body)
}

/// Fields of a response not passed to the client: hop-by-hop ones and the
/// framing, which hyper sets for the client's connection.
const NOT_PASSED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// The client's response for an upstream response head: its status,
/// reason and end-to-end fields; Content-Length as the body is framed
/// (hyper chunks the rest for HTTP/1.1 clients, or closes).
fn client_response(
    head: &HttpHead,
    method: &Method,
    body: ProxyBody,
) -> Result<Response<ProxyBody>, String> {
    let code = head.status().unwrap_or(0);
    let status = StatusCode::from_u16(code)
        .ok()
        .filter(|s| s.as_u16() >= 200 || *s == StatusCode::SWITCHING_PROTOCOLS)
        .ok_or_else(|| format!("the server answered status {code}\n"))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Err("the server switched protocols, which this proxy does not pass on\n".into());
    }
    let framing = client::response_framing(head, method.as_str().as_bytes());
    let named = connection_tokens(
        head.header_all("Connection")
            .collect::<Vec<_>>()
            .iter()
            .map(|v| &v[..]),
    );
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let map = r.headers_mut();
    for f in head.headers() {
        let name = f.name_str().to_ascii_lowercase();
        if NOT_PASSED.contains(&name.as_str()) || named.contains(&name) {
            continue;
        }
        // A value folded over lines is one line; no control characters.
        let value: Vec<u8> = f
            .value()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .filter(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
            .collect();
        match (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_bytes(value.trim_ascii()),
        ) {
            (Ok(n), Ok(v)) => {
                map.append(n, v);
            }
            _ => tracing::debug!("proxy: response field {name:?} cannot be passed on: left out"),
        }
    }
    let length = match framing {
        Framing::Length(n) => Some(n),
        // A HEAD or 304 answer says what the body would be.
        Framing::Empty if status != StatusCode::NO_CONTENT => head.content_length(),
        _ => None,
    };
    if let Some(n) = length {
        map.insert(
            hyper::header::CONTENT_LENGTH,
            hyper::header::HeaderValue::from(n),
        );
    }
    let reason = head.reason().trim_ascii();
    if status.canonical_reason().map(str::as_bytes) != Some(reason)
        && !reason.is_empty()
        && let Ok(r2) = hyper::ext::ReasonPhrase::try_from(reason)
    {
        r.extensions_mut().insert(r2);
    }
    Ok(r)
}

/// The client's end of an exchange: the response head once, over a
/// one-shot channel, then the body through a bounded one. The last piece
/// read is held back until the exchange is recorded, so that a client
/// that has a response whole knows it is in the WARC file (and in the
/// dedupe index, for its next request).
struct Fwd {
    head: Option<oneshot::Sender<Response<ProxyBody>>>,
    body: Option<mpsc::Sender<Chunk>>,
    held: Option<Bytes>,
    method: Method,
}

impl Fwd {
    /// Answers with a text of the proxy's own, if nothing was sent yet.
    fn fail(&mut self, status: StatusCode, text: &str) {
        if let Some(tx) = self.head.take() {
            let _ = tx.send(simple(status, text));
        }
    }

    /// Sends the piece held back, then ends the body whole.
    fn end(&mut self) {
        if let Some(tx) = self.body.take() {
            if let Some(last) = self.held.take() {
                let _ = tx.blocking_send(Chunk::Data(last));
            }
            let _ = tx.blocking_send(Chunk::End);
        }
    }

    /// Sends the piece held back, then drops the body unfinished: the
    /// client sees it cut.
    fn cut(&mut self) {
        if let Some(tx) = self.body.take()
            && let Some(last) = self.held.take()
        {
            let _ = tx.blocking_send(Chunk::Data(last));
        }
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the client is gone")
}

impl Forward for Fwd {
    fn head(&mut self, head: &HttpHead) -> io::Result<()> {
        let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
        match client_response(head, &self.method, ProxyBody::stream(rx)) {
            Ok(r) => {
                let sent = self.head.take().is_some_and(|h| h.send(r).is_ok());
                if !sent {
                    return Err(gone());
                }
                self.body = Some(tx);
                Ok(())
            }
            Err(why) => {
                self.fail(StatusCode::BAD_GATEWAY, &why);
                Err(io::Error::other(why))
            }
        }
    }

    fn body(&mut self, data: &[u8]) -> io::Result<()> {
        let Some(tx) = &self.body else {
            return Err(gone());
        };
        match self.held.replace(Bytes::copy_from_slice(data)) {
            Some(previous) => tx.blocking_send(Chunk::Data(previous)).map_err(|_| gone()),
            None => Ok(()),
        }
    }
}

/// Whether `ip:port` is the proxy itself (a request that would loop).
fn is_self(me: SocketAddr, ip: IpAddr, port: u16) -> bool {
    port == me.port()
        && (ip == me.ip()
            || me.ip().is_unspecified()
            || (ip.is_loopback() && me.ip().is_loopback()))
}

/// Runs an exchange on a blocking thread: a failure before the response
/// head answers 502 (500 for a panic, which is logged), one after it cuts
/// the response; the proxy goes on either way.
fn run_exchange(shared: &Shared, job: Job, fwd: &mut Fwd) {
    let _busy = Counted::new(&shared.busy);
    let what = format!("{} {}", job.method, job.url);
    let target = job.url.to_string();
    let method = job.method.as_str().to_owned();
    let peer = job.peer;
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| forward(shared, job, fwd)));
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!("proxy client {peer}: {what}: {e}");
            shared.unrecorded.note(
                NotRecorded::Failed,
                what,
                Some((&method, &target)),
                &e.to_string(),
            );
            fwd.fail(StatusCode::BAD_GATEWAY, &format!("{e}\n"));
            fwd.cut();
        }
        Err(panic) => {
            let msg = warchest_net::panic_message(panic.as_ref());
            tracing::error!("proxy request handler panicked: {what}: {msg}");
            shared.unrecorded.note(
                NotRecorded::Failed,
                what,
                Some((&method, &target)),
                &format!("panicked: {msg}"),
            );
            fwd.fail(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n");
            fwd.cut();
        }
    }
}

/// The exchange: the request body spooled, the destination resolved and
/// checked, the request sent, the response read (wire-exact) while it
/// streams to the client, then recorded.
fn forward(shared: &Shared, mut job: Job, fwd: &mut Fwd) -> Result<(), CaptureError> {
    let opts = &shared.opts;
    let url = &job.url;
    let what = format!("{} {url}", job.method);
    let target = url.to_string();
    let verb = job.method.as_str().to_owned();
    // Counted before the client is answered: a browser's page that saw
    // the answer finds the loss when it claims its URLs.
    let lose = |fwd: &mut Fwd, reason, status, text: &str| {
        shared
            .unrecorded
            .note(reason, what.clone(), Some((&verb, &target)), text);
        fwd.fail(status, text);
    };
    if cfg!(debug_assertions)
        && url.path() == TEST_PANIC_PATH
        && std::env::var_os("WARCHEST_PROXY_TEST_PANIC").is_some()
    {
        panic!("a panic asked for (WARCHEST_PROXY_TEST_PANIC)");
    }
    let spool_err = |e| CaptureError::Io("spooling the request".into(), e);
    // The request body, spooled (bounded memory), so that it goes upstream
    // with its length.
    let mut body = tempfile::SpooledTempFile::new(opts.fetch.read.spool_threshold);
    let mut body_len = 0u64;
    loop {
        let (status, e) = match job.body.blocking_recv() {
            Some(Piece::Data(d)) => {
                body.write_all(&d).map_err(spool_err)?;
                body_len += d.len() as u64;
                continue;
            }
            Some(Piece::End) => break,
            Some(Piece::Cut(status, e)) => (status, e),
            // Dropped with the client's connection: the client is gone,
            // and so is the rest of the body.
            None => (
                StatusCode::BAD_REQUEST,
                "the client left before it ended".to_string(),
            ),
        };
        tracing::info!("proxy client {}: {url}: the request body: {e}", job.peer);
        lose(
            fwd,
            NotRecorded::RequestBody,
            status,
            &format!("the request body: {e}\n"),
        );
        return Ok(());
    }
    // What is sent upstream, and recorded as the request.
    let mut upstream_req = tempfile::SpooledTempFile::new(opts.fetch.read.spool_threshold);
    let mut head = std::mem::take(&mut job.head);
    if job.declares_body || body_len > 0 {
        head.extend_from_slice(format!("Content-Length: {body_len}\r\n").as_bytes());
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    upstream_req.write_all(&head).map_err(spool_err)?;
    body.seek(SeekFrom::Start(0)).map_err(spool_err)?;
    io::copy(&mut body, &mut upstream_req).map_err(spool_err)?;
    let up_len = head.len() as u64 + body_len;
    drop(body);
    let started = time::OffsetDateTime::now_utc();
    let t0 = Instant::now();
    let addrs = match shared.resolver.resolve(&url.host) {
        Ok(r) => {
            if let Some(l) = &r.lookup {
                shared.recorder.record_dns(l)?;
            }
            r.addrs
        }
        Err(e) => {
            lose(
                fwd,
                NotRecorded::Dns,
                StatusCode::BAD_GATEWAY,
                &format!("{e}\n"),
            );
            return Ok(());
        }
    };
    // Only the permitted addresses are tried (a name may resolve to both
    // a public and a loopback address); none: refused.
    let denied = addrs.first().copied();
    let addrs: Vec<_> = addrs
        .into_iter()
        .filter(|ip| opts.access.permits(*ip))
        .collect();
    if addrs.is_empty() {
        let why = match denied {
            Some(ip) => format!(
                "{} resolves to {ip}, in a range this proxy does not connect to \
                 (loopback, private, link-local); --allow-dest allows it\n",
                url.host
            ),
            None => format!("{} has no address\n", url.host),
        };
        let reason = if denied.is_some() {
            NotRecorded::Denied
        } else {
            NotRecorded::Dns
        };
        lose(fwd, reason, StatusCode::FORBIDDEN, &why);
        return Ok(());
    }
    if addrs
        .iter()
        .any(|ip| is_self(shared.me, *ip, url.port_or_default()))
    {
        lose(
            fwd,
            NotRecorded::Loop,
            StatusCode::LOOP_DETECTED,
            "a request for the proxy itself\n",
        );
        return Ok(());
    }
    let timeout = opts.fetch.timeout;
    let (mut up, ip) = match client::connect(url, &addrs, &opts.fetch.tls, timeout) {
        Ok(x) => x,
        Err(e) => {
            lose(
                fwd,
                NotRecorded::Connect,
                StatusCode::BAD_GATEWAY,
                &format!("{e}\n"),
            );
            return Ok(());
        }
    };
    upstream_req
        .seek(SeekFrom::Start(0))
        .and_then(|_| io::copy(&mut upstream_req, &mut up))
        .and_then(|_| up.flush())
        .map_err(|e| CaptureError::Io(url.to_string(), e))?;
    let tls = up.tls_info();
    let mut rbuf = Vec::new();
    let Some((rlen, interim)) =
        client::read_response_head(&mut up, &mut rbuf, opts.fetch.read.max_head)?
    else {
        lose(
            fwd,
            NotRecorded::NoResponse,
            StatusCode::BAD_GATEWAY,
            "the server closed the connection without a response\n",
        );
        return Ok(());
    };
    let method = job.method.as_str().as_bytes().to_vec();
    let mut resp = client::capture_message(
        &mut up,
        rbuf,
        rlen,
        |h| {
            // Before the head goes to the client, who follows a redirect
            // at once.
            if let Some(hook) = &shared.on_redirect
                && h.status().is_some_and(|s| (300..400).contains(&s))
                && let Some(l) = h.header("location")
            {
                (hook.0)(&target, &String::from_utf8_lossy(&l));
            }
            client::response_framing(h, &method)
        },
        &opts.fetch.read,
        &mut Tee::to(fwd),
    )?;
    drop(up);
    let whole = resp.complete && resp.truncated.is_none();
    let mut protocols = vec!["http/1.0".to_string()];
    if let Some(p) = tls.0.clone() {
        protocols.push(p);
    }
    upstream_req
        .seek(SeekFrom::Start(0))
        .map_err(|e| CaptureError::Io("spool".into(), e))?;
    let recorded = shared.recorder.record_http(HttpRecord {
        target_uri: target.clone(),
        ip: Some(ip),
        date: started,
        request: Body::Seekable {
            reader: &mut upstream_req,
            len: Some(up_len),
        },
        response: &mut resp,
        protocols,
        cipher_suite: tls.1,
        metadata: vec![
            (
                "fetchTimeMs".to_string(),
                t0.elapsed().as_millis().to_string(),
            ),
            ("proxied".to_string(), "true".to_string()),
        ]
        .into_iter()
        .chain(
            interim
                .into_iter()
                .map(|l| ("interimResponse".to_string(), l)),
        )
        .collect(),
        conditional_of: None,
    });
    // A record that failed is counted (and logged) before the client's
    // copy ends, as `lose` does; the copy ends as the response was read,
    // whole or cut.
    let failed = recorded.err();
    if let Some(e) = &failed {
        tracing::warn!("proxy client {}: {what}: {e}", job.peer);
        shared.unrecorded.note(
            NotRecorded::Failed,
            what.clone(),
            Some((&verb, &target)),
            &e.to_string(),
        );
    } else {
        // Also before the copy ends: a page that then claims this URL (the
        // retry of a page whose first attempt lost it) finds no loss.
        shared.unrecorded.recorded(&verb, &target);
    }
    if whole {
        fwd.end();
    } else {
        fwd.cut();
    }
    if failed.is_some() {
        return Ok(());
    }
    if let Some(h) = &shared.on_response {
        (h.0)(&target, &mut resp);
    }
    Ok(())
}

#[cfg(test)]
mod access_tests {
    use super::*;

    #[test]
    fn internal_ranges_are_denied_unless_allowed() {
        let a = Access::default();
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!a.permits(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "172.32.0.1"] {
            assert!(a.permits(ip.parse().unwrap()), "{ip}");
        }
        let a = Access {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            deny: vec!["93.184.216.0/24".parse().unwrap()],
            ..Access::default()
        };
        assert!(a.permits("127.0.0.2".parse().unwrap()));
        assert!(!a.permits("10.0.0.1".parse().unwrap()));
        assert!(!a.permits("93.184.216.34".parse().unwrap()));
    }

    #[test]
    fn credentials() {
        let open = Access::default();
        assert!(open.admits(None));
        let a = Access {
            credentials: Some(("u".into(), "p:w".into())),
            ..Access::default()
        };
        assert!(!a.admits(None));
        // base64("u:p:w") = "dTpwOnc="
        assert!(a.admits(Some(b"Basic dTpwOnc=")));
        assert!(a.admits(Some(b"basic  dTpwOnc=")));
        assert!(!a.admits(Some(b"Basic dTpw")));
        assert!(!a.admits(Some(b"Bearer dTpwOnc=")));
        assert!(!a.admits(Some(b"Basic !!!")));
    }
}

#[cfg(test)]
mod forwarding_tests {
    use super::*;

    fn parts(req: http::request::Builder) -> http::request::Parts {
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn upstream_requests_are_http_1_0_without_hop_by_hop_fields() {
        let url = Url::parse("http://example.org:8080/a?b=c").unwrap();
        let p = parts(
            Request::builder()
                .method("POST")
                .uri("http://example.org:8080/a?b=c")
                .header("host", "elsewhere.example")
                .header("user-agent", "UA/1")
                .header("proxy-authorization", "Basic x")
                .header("proxy-connection", "keep-alive")
                .header("connection", "keep-alive, x-hop")
                .header("x-hop", "1")
                .header("accept", "a")
                .header("accept", "b")
                .header("content-length", "3")
                .header("expect", "100-continue")
                .header("te", "trailers")
                .header("dnt", "1"),
        );
        let (head, declares_body) = upstream_head(&p, &url, true);
        assert!(declares_body);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "POST /a?b=c HTTP/1.0\r\nHost: example.org:8080\r\nUser-Agent: UA/1\r\n\
             Accept: a\r\nAccept: b\r\nDnt: 1\r\n"
        );
        // Origin form (a tunnel): the client's Host stays; none: the
        // target's.
        let url = Url::parse("https://example.org/x").unwrap();
        let p = parts(Request::builder().uri("/x").header("host", "example.org"));
        let (head, declares_body) = upstream_head(&p, &url, false);
        assert!(!declares_body);
        assert_eq!(head, b"GET /x HTTP/1.0\r\nHost: example.org\r\n");
        let p = parts(Request::builder().uri("/x"));
        assert_eq!(
            upstream_head(&p, &url, false).0,
            b"GET /x HTTP/1.0\r\nHost: example.org\r\n"
        );
        assert_eq!(title_case("x-forwarded-for"), "X-Forwarded-For");
    }

    fn head(text: &[u8]) -> HttpHead {
        HttpHead::parse(text).unwrap().unwrap().0
    }

    fn passed(text: &[u8], method: Method) -> Response<ProxyBody> {
        client_response(&head(text), &method, ProxyBody::Full(None)).unwrap()
    }

    #[test]
    fn client_responses_keep_end_to_end_fields_and_reframe() {
        let r = passed(
            b"HTTP/1.1 200 Fine\r\nContent-Type: text/html\r\nConnection: close, x-hop\r\n\
              X-Hop: 1\r\nKeep-Alive: timeout=5\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\
              Transfer-Encoding: chunked\r\nContent-Length: 99\r\nX-Folded: a\r\n b\r\n\r\n",
            Method::GET,
        );
        assert_eq!(r.status(), 200);
        let h = r.headers();
        assert_eq!(h["content-type"], "text/html");
        assert_eq!(h.get_all("set-cookie").iter().count(), 2);
        // Chunked upstream: hyper frames it for the client, so no length.
        for gone in [
            "connection",
            "x-hop",
            "keep-alive",
            "transfer-encoding",
            "content-length",
        ] {
            assert!(!h.contains_key(gone), "{gone}");
        }
        assert_eq!(h["x-folded"], "a b");
        assert_eq!(
            r.extensions()
                .get::<hyper::ext::ReasonPhrase>()
                .map(|p| p.as_bytes()),
            Some(&b"Fine"[..])
        );
        // A length the body is framed by, and a HEAD answer's, stay.
        let r = passed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", Method::GET);
        assert_eq!(r.headers()["content-length"], "5");
        assert!(r.extensions().get::<hyper::ext::ReasonPhrase>().is_none());
        let r = passed(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
            Method::HEAD,
        );
        assert_eq!(r.headers()["content-length"], "5");
        // Statuses that cannot be passed on.
        for bad in [
            &b"HTTP/1.1 101 Switching\r\nUpgrade: x\r\n\r\n"[..],
            b"HTTP/1.1 99 X\r\n\r\n",
        ] {
            assert!(client_response(&head(bad), &Method::GET, ProxyBody::Full(None)).is_err());
        }
    }
}

#[cfg(test)]
mod unrecorded_tests {
    use super::*;

    #[test]
    fn the_line_names_the_nonzero_reasons_and_refusals_are_no_loss() {
        let u = Unrecorded::default();
        assert_eq!(u.summary().line(), None);
        assert_eq!(u.summary().lost(), 0);
        u.note(
            NotRecorded::Refused,
            "GET http://a.test/x".into(),
            None,
            "out of scope\n",
        );
        let s = u.summary();
        assert_eq!(
            s.line().as_deref(),
            Some("1 exchange not recorded (refused 1)")
        );
        assert_eq!(s.lost(), 0);
        let note = |r, m: &str, url: &str, why: &str| {
            u.note(r, format!("{m} {url}"), Some((m, url)), why);
        };
        note(
            NotRecorded::Dns,
            "GET",
            "http://b.test/",
            "b.test: no address",
        );
        note(NotRecorded::Connect, "GET", "http://c.test/", "refused");
        note(NotRecorded::Connect, "POST", "http://c.test/f", "refused");
        let s = u.summary();
        assert_eq!(
            s.line().as_deref(),
            Some("4 exchanges not recorded (refused 1, DNS 1, connect 2)")
        );
        assert_eq!(s.lost(), 3);
        assert_eq!(
            s.listing(),
            [
                "not recorded (refused): GET http://a.test/x: out of scope",
                "not recorded (DNS): GET http://b.test/: b.test: no address",
                "not recorded (connect): GET http://c.test/: refused",
                "not recorded (connect): POST http://c.test/f: refused",
            ]
        );
    }

    #[test]
    fn past_the_named_ones_they_are_counted() {
        let u = Unrecorded::default();
        for i in 0..NAMED_UNRECORDED + 5 {
            let url = format!("http://a.test/{i}");
            u.note(
                NotRecorded::NoResponse,
                format!("GET {url}"),
                Some(("GET", &url)),
                "x",
            );
        }
        let s = u.summary();
        assert_eq!(s.total(), NAMED_UNRECORDED as u64 + 5);
        assert_eq!(s.named.len(), NAMED_UNRECORDED);
        let l = s.listing();
        assert_eq!(l.len(), NAMED_UNRECORDED + 1);
        assert_eq!(l[0], "not recorded (no response): GET http://a.test/0: x");
        assert_eq!(l[NAMED_UNRECORDED], "... and 5 more exchanges not recorded");
    }

    #[test]
    fn a_long_name_is_cut_but_its_url_is_claimed_whole() {
        let u = Unrecorded::default();
        let url = format!("http://a.test/?q={}", "é".repeat(5000));
        u.note(
            NotRecorded::Dns,
            format!("GET {url}"),
            Some(("GET", &url)),
            "x",
        );
        let s = u.summary();
        assert!(s.named[0].what.len() <= MAX_NAME + 3);
        assert!(s.named[0].what.ends_with("..."));
        assert_eq!(u.claim([url.as_str()]), vec![url]);
    }

    #[test]
    fn a_page_claims_its_losses_once_and_the_rest_are_the_browsers() {
        let u = Unrecorded::default();
        let note = |r, url: &str| u.note(r, format!("GET {url}"), Some(("GET", url)), "x");
        note(NotRecorded::Connect, "http://a.test/img.png");
        note(NotRecorded::Connect, "http://a.test/img.png");
        note(NotRecorded::Dns, "https://update.example/ping");
        note(NotRecorded::Refused, "http://out.test/");
        // Refusals are no loss, so nothing to claim.
        assert!(u.claim(["http://out.test/"]).is_empty());
        let page = ["http://a.test/", "http://a.test/img.png"];
        assert_eq!(u.claim(page), ["http://a.test/img.png"]);
        assert!(u.claim(page).is_empty(), "claimed twice");
        let s = u.summary();
        assert_eq!((s.lost(), s.claimed, s.unattributed), (3, 2, 0));
        assert_eq!(s.lost_by_pages(), 2);
        // A request cut before its head ended has no URL: anyone's.
        u.note(NotRecorded::ClientGone, "a request".into(), None, "cut");
        assert_eq!(u.summary().lost_by_pages(), 3);
    }

    /// A page's failed first attempt lost a URL its retry then recorded:
    /// the retry claims nothing (the run lost nothing of it), and the
    /// loss is counted superseded, not dropped.
    #[test]
    fn a_recording_supersedes_an_earlier_loss_of_its_url() {
        let u = Unrecorded::default();
        let note = |url: &str| {
            u.note(
                NotRecorded::NoResponse,
                format!("GET {url}"),
                Some(("GET", url)),
                "x",
            )
        };
        note("http://a.test/img.png");
        note("http://a.test/img.png");
        note("http://a.test/gone.css");
        u.recorded("GET", "http://a.test/img.png");
        // Recording a URL never lost changes nothing.
        u.recorded("GET", "http://a.test/other");
        let page = [
            "http://a.test/",
            "http://a.test/img.png",
            "http://a.test/gone.css",
        ];
        assert_eq!(u.claim(page), ["http://a.test/gone.css"]);
        let s = u.summary();
        assert_eq!((s.lost(), s.claimed, s.superseded), (3, 1, 2));
        assert_eq!((s.lost_by_pages(), s.browsers_own()), (1, 0));
        // A loss after the recording is kept for claiming again.
        note("http://a.test/img.png");
        assert_eq!(u.claim(page), ["http://a.test/img.png"]);
        assert_eq!(u.summary().lost_by_pages(), 2);
    }

    /// Only a recorded GET supersedes, and only lost GETs: a lost POST
    /// (its body may differ) stays to be claimed whatever is recorded of
    /// its URL, and a recorded POST supersedes no lost GET.
    #[test]
    fn only_a_recorded_get_supersedes_and_only_lost_gets() {
        let u = Unrecorded::default();
        let url = "http://a.test/api/save";
        let note = |m: &str| {
            u.note(
                NotRecorded::NoResponse,
                format!("{m} {url}"),
                Some((m, url)),
                "x",
            )
        };
        note("POST");
        note("GET");
        u.recorded("POST", url);
        assert_eq!(u.summary().superseded, 0);
        u.recorded("get", url);
        assert_eq!(u.summary().superseded, 1);
        // The POST's loss is still there to be claimed.
        assert_eq!(u.claim([url]), [url]);
        let s = u.summary();
        assert_eq!((s.lost(), s.claimed, s.superseded), (2, 1, 1));
        assert_eq!((s.lost_by_pages(), s.browsers_own()), (1, 0));
    }

    /// Once a browser runner tracks its pages, a request cut in its head
    /// (no URL) while no page is open is no page's; while one is, it may
    /// be; and a page whose tracker lost events does not make it one.
    #[test]
    fn a_cut_head_outside_the_pages_is_the_browsers() {
        let u = Arc::new(Unrecorded::default());
        let cut = || u.note(NotRecorded::ClientGone, "a request".into(), None, "cut");
        // Untracked (a proxy without pages): anyone's.
        cut();
        assert_eq!(u.summary().lost_by_pages(), 1);
        u.track_pages();
        cut();
        let s = u.summary();
        assert_eq!((s.unattributed, s.outside_pages), (1, 1));
        assert_eq!((s.lost_by_pages(), s.browsers_own()), (1, 1));
        let page = u.page_open();
        let other = u.page_open();
        cut();
        drop(page);
        // Another page is still open.
        cut();
        drop(other);
        cut();
        let s = u.summary();
        assert_eq!((s.lost(), s.unattributed, s.outside_pages), (5, 3, 2));
        assert_eq!((s.lost_by_pages(), s.browsers_own()), (3, 2));
        u.tracker_incomplete();
        let s = u.summary();
        assert_eq!((s.lost_by_pages(), s.browsers_own()), (3, 2));
    }

    /// The bytes a connection read since its last answer ended are those
    /// of a request it did not answer.
    #[test]
    fn a_request_not_answered_is_what_came_after_the_last_answer() {
        let r = Reads::default();
        assert_eq!(unanswered(&r), None);
        r.total.store(40, Ordering::SeqCst);
        assert_eq!(unanswered(&r), Some(40));
        r.at_answer.store(40, Ordering::SeqCst);
        assert_eq!(unanswered(&r), None);
        r.total.store(57, Ordering::SeqCst);
        assert_eq!(unanswered(&r), Some(17));
    }

    /// A page whose tracker lost events may have left its losses
    /// unclaimed: then none is taken for the browser's own, and the
    /// unclaimed count as the pages' (so a browser run fails on them).
    #[test]
    fn after_an_incomplete_tracker_unclaimed_losses_are_the_pages() {
        let u = Unrecorded::default();
        let note = |url: &str| {
            u.note(
                NotRecorded::Connect,
                format!("GET {url}"),
                Some(("GET", url)),
                "x",
            )
        };
        note("http://a.test/img.png");
        note("https://update.example/ping");
        note("http://a.test/later.png");
        u.recorded("GET", "http://a.test/later.png");
        assert_eq!(u.claim(["http://a.test/img.png"]).len(), 1);
        let s = u.summary();
        assert_eq!((s.lost_by_pages(), s.browsers_own()), (1, 1));
        u.tracker_incomplete();
        let s = u.summary();
        assert_eq!(s.incomplete_pages, 1);
        // The superseded one stays no page's loss.
        assert_eq!((s.lost(), s.superseded), (3, 1));
        assert_eq!((s.lost_by_pages(), s.browsers_own()), (2, 0));
    }
}
