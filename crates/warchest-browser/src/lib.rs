//! Capturing pages as a browser sees them, and checking their replay.
//!
//! - [`Browsers`]: headless Chromium processes we start and supervise,
//!   each page in a tab whose traffic goes through warchest's own
//!   recording proxy (`warchest_capture::proxy`, in process), so that
//!   what the browser fetched is recorded wire-exact by the same
//!   [`Recorder`] (writer, files and dedupe index) as the HTTP capture.
//!   Per page: behaviours each with a time bound (scroll, media, network
//!   idle, the user's own script), a PNG screenshot at `urn:view:URL`, the
//!   rendered text at `urn:text:URL`, the rendered DOM's links returned and
//!   written in the page's metadata record. A tab or browser that crashes
//!   or hangs is restarted and the page retried once, then reported
//!   failed.
//! - [`qa`]: `warchest qa`: every captured page replayed through
//!   `warchest serve` in Chromium and compared with the capture.
//! - [`cdp`]: the DevTools protocol client; [`chrome`]: the process.
//!
//! docs/crawl.md ("Browser capture", "QA") has the design.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cdp;
pub mod chrome;
mod grab;
pub mod page;
pub mod qa;

use std::collections::{BTreeSet, HashMap};
use std::io::{Read as _, Seek as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::Digest as _;
use tokio::sync::Semaphore;
use warchest_capture::Recorder;
use warchest_capture::proxy::{Proxy, ProxyOptions, RedirectHook, ResponseHook};

pub use grab::{Behavior, LoadState, MAX_LINKS, PageResult};

/// What a page gives before it ends ([`Browsers::capture_early`]), so that
/// a crawl's other tabs need not wait for its end to have work.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Early {
    /// The page's document (a 2xx HTML response ([`is_html_type`]) to its URL, or,
    /// when that URL redirects, to where its HTTP redirects led), as the
    /// recording proxy recorded it: its payload, codings undone, at most
    /// [`MAX_EARLY_DOCUMENT`] bytes.
    Document {
        /// The document's URL.
        url: String,
        /// Its `Content-Type`.
        content_type: Option<String>,
        /// Its payload.
        body: Vec<u8>,
        /// Why `body` is not the whole payload, when it is not.
        cut: Option<DocumentCut>,
    },
    /// The rendered DOM's links (http and https) once the page's load
    /// event fired (or its load bound passed).
    Links(Vec<String>),
    /// The page's URL (or where its redirects led) answered 2xx with
    /// something that is not HTML (an image, JSON...; [`is_html_type`]),
    /// as the proxy recorded it: the URL is a resource loaded in a tab,
    /// which gets no screenshot, text or metadata record (a crawl lists
    /// it with that type, as Browsertrix lists a page URL it fetched
    /// directly).
    NotHtml {
        /// The document's URL.
        url: String,
        /// Its `Content-Type`.
        content_type: Option<String>,
    },
}

/// Browsers started at once when a run begins (more at once only slow
/// each other on a small machine).
const LAUNCHES_AT_ONCE: usize = 2;

/// Why an [`Early::Document`]'s body is not its whole payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentCut {
    /// The payload is longer than [`MAX_EARLY_DOCUMENT`]: its first bytes.
    Size,
    /// The payload stopped decoding (its content coding): the bytes before.
    Decode(String),
    /// The recorded payload could not be read back: no bytes.
    Read(String),
}

/// The most bytes of a page's document handed on as [`Early::Document`].
pub const MAX_EARLY_DOCUMENT: u64 = 4 << 20;

/// What a page gave early and its callback has not yet taken, at most
/// (each a message; a document is at most [`MAX_EARLY_DOCUMENT`] bytes):
/// past it the proxy's exchange thread waits with a document, and the
/// page leaves its DOM's early links out, so a slow callback costs memory
/// no further.
const EARLY_QUEUE: usize = 4;

/// Pages whose early findings are awaited, by URL.
/// Keyed by [`waiting_key`]; each capture of the URL under way has its
/// own sender, also under the URLs its document's HTTP redirects led to.
type Waiting = Arc<Mutex<HashMap<String, Vec<Sender>>>>;

/// A capture's end of its early queue.
type Sender = tokio::sync::mpsc::Sender<Early>;

/// Takes a capture's sender out of every URL it waits under (its own and
/// its redirects' targets) when dropped: its callback's loop ends once no
/// sender is left, even after a panic.
struct Unwait<'a> {
    waiting: &'a Waiting,
    tx: Option<tokio::sync::mpsc::Sender<Early>>,
}

impl Drop for Unwait<'_> {
    fn drop(&mut self) {
        let Some(tx) = self.tx.take() else {
            return;
        };
        let mut w = match self.waiting.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        // Only this capture's: another of the URL may still run.
        w.retain(|_, v| {
            v.retain(|t| !t.same_channel(&tx));
            !v.is_empty()
        });
    }
}

/// A browser's index, taken from the free list, put back when dropped.
struct FreeSlot<'a> {
    free: &'a Mutex<Vec<usize>>,
    i: usize,
}

impl Drop for FreeSlot<'_> {
    fn drop(&mut self) {
        let mut f = match self.free.lock() {
            Ok(f) => f,
            Err(p) => p.into_inner(),
        };
        f.push(self.i);
    }
}

/// A URL as the pages waiting for it are keyed: parsed and serialised
/// (the proxy's and the caller's spellings of one URL meet), without its
/// fragment (no request carries one: a page `/#top` or a `Location:
/// /home#main` is fetched as `/` or `/home`), the text as it is when it
/// does not parse.
fn waiting_key(u: &str) -> String {
    url::Url::parse(u).map_or_else(
        |_| u.to_string(),
        |mut u| {
            u.set_fragment(None);
            String::from(u)
        },
    )
}

/// An awaited page (keyed `key`) answered with a redirect to `location`:
/// its captures under way await where it leads too (the browser follows
/// it, and its document is there). Called as the redirect's head comes,
/// before the browser has it ([`redirect_hook`]), so the target's answer
/// is always later. Only http(s) targets; captures that ended (their
/// receiver gone) are not filed.
fn follow_redirect(w: &mut HashMap<String, Vec<Sender>>, key: &str, location: &str) {
    let Some(txs) = w.get(key) else {
        return;
    };
    let txs: Vec<Sender> = txs.iter().filter(|t| !t.is_closed()).cloned().collect();
    let to = url::Url::parse(key)
        .ok()
        .and_then(|u| u.join(location.trim()).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"));
    let Some(to) = to else {
        return;
    };
    if txs.is_empty() {
        return;
    }
    // A chain is as long as the browser follows it (20 hops in Chromium);
    // a loop adds nothing twice.
    let v = w.entry(waiting_key(to.as_str())).or_default();
    for tx in txs {
        if !v.iter().any(|t| t.same_channel(&tx)) {
            v.push(tx);
        }
    }
}

/// Whether a document of `content_type` (a `Content-Type` value, or a
/// bare media type) is a page: HTML or XHTML, as Browsertrix Crawler's
/// `HTML_TYPES`, or no type at all (the browser sniffs it, and Browsertrix
/// loads it as a page too). Anything else loaded in a tab (an image, a
/// PDF, JSON, plain text) is a resource: it gets no page derivatives
/// (docs/crawl.md, "What a tab makes of a URL").
pub fn is_html_type(content_type: Option<&str>) -> bool {
    warchest::http::is_html_type(content_type, true)
}

/// The proxy's redirect hook: an awaited page answered with a redirect
/// files its captures under the target ([`follow_redirect`]) before the
/// browser has the redirect's head, so the target's document, recorded
/// after, is found awaited.
fn redirect_hook(waiting: Waiting) -> RedirectHook {
    RedirectHook(Arc::new(move |uri, location| {
        // Looked up and filed under one guard: a capture's `Unwait` runs
        // wholly before (its sender is not found) or wholly after (it takes
        // the target's entry out too), so no sender of an ended capture is
        // left filed, keeping its callback's loop waiting for ever.
        if let Ok(mut w) = waiting.lock() {
            follow_redirect(&mut w, &waiting_key(uri), location);
        }
    }))
}

/// The proxy's hook: a recorded 2xx HTML response ([`is_html_type`]) to
/// a page that is awaited goes to its capture; any other 2xx answer is
/// told as [`Early::NotHtml`].
fn document_hook(waiting: Waiting) -> ResponseHook {
    ResponseHook(Arc::new(move |uri, resp| {
        let key = waiting_key(uri);
        let status = resp.head.status().unwrap_or(0);
        // Redirects were filed as their heads came (`redirect_hook`).
        if (300..400).contains(&status) {
            return;
        }
        let Some(txs) = waiting.lock().ok().and_then(|w| w.get(&key).cloned()) else {
            return;
        };
        let content_type = resp
            .head
            .content_type()
            .map(|c| String::from_utf8_lossy(&c).trim().to_string());
        let html = is_html_type(content_type.as_deref());
        if !(200..300).contains(&status) {
            return;
        }
        if !html {
            for tx in txs {
                let _ = tx.blocking_send(Early::NotHtml {
                    url: uri.to_string(),
                    content_type: content_type.clone(),
                });
            }
            return;
        }
        // What could be read of the payload, and why not all: the page's
        // DOM links still come at its end either way.
        let mut payload = Vec::new();
        let head_len = resp.head.raw().len() as u64;
        let cut = match resp.block.seek(std::io::SeekFrom::Start(head_len)) {
            Err(e) => Some(DocumentCut::Read(e.to_string())),
            Ok(_) => {
                let body = std::io::BufReader::new(&mut resp.block);
                match warchest::http::payload_reader(body, &resp.head, true) {
                    Err(e) => Some(DocumentCut::Decode(e.to_string())),
                    // One byte past the bound tells a cut from a payload
                    // of exactly the bound.
                    Ok(r) => match r.take(MAX_EARLY_DOCUMENT + 1).read_to_end(&mut payload) {
                        Err(e) => {
                            payload.truncate(MAX_EARLY_DOCUMENT as usize);
                            Some(DocumentCut::Decode(e.to_string()))
                        }
                        Ok(_) if payload.len() as u64 > MAX_EARLY_DOCUMENT => {
                            payload.truncate(MAX_EARLY_DOCUMENT as usize);
                            Some(DocumentCut::Size)
                        }
                        Ok(_) => None,
                    },
                }
            }
        };
        for tx in txs {
            // Waits while the capture's callback is behind (back-pressure
            // on this exchange's thread, whose client has its copy); an
            // error: that capture ended.
            let _ = tx.blocking_send(Early::Document {
                url: uri.to_string(),
                content_type: content_type.clone(),
                body: payload.clone(),
                cut: cut.clone(),
            });
        }
    }))
}

/// What went wrong with a browser or a page.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// The browser could not be started.
    #[error("starting the browser: {0}")]
    Launch(String),
    /// The DevTools protocol failed.
    #[error("DevTools: {0}")]
    Cdp(String),
    /// The browser closed its connection (it exited or crashed).
    #[error("the browser is gone")]
    Gone,
    /// The tab's renderer crashed.
    #[error("the tab crashed")]
    Crashed,
    /// Something took longer than its bound.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The page failed (a network error, a script that threw).
    #[error("{0}")]
    Page(String),
    /// A file or process error, with what it was about.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// Recording failed.
    #[error(transparent)]
    Capture(#[from] warchest_capture::CaptureError),
    /// Reading an archive failed.
    #[error(transparent)]
    Warc(#[from] warchest::Error),
}

/// How pages are captured.
#[derive(Debug, Clone)]
pub struct BrowserOptions {
    /// The Chromium executable ([`chrome::find_on_path`] when the user
    /// names none).
    pub chromium: PathBuf,
    /// Browsers (one tab each) at once.
    pub browsers: usize,
    /// The bound of a whole page: load, behaviours, screenshot, text,
    /// links. A page past it is a hang: its browser is restarted.
    pub page_timeout: Duration,
    /// How long the load event is waited for; past it the page is taken
    /// as it is (a page that never stops loading).
    pub load_timeout: Duration,
    /// The bound of each behaviour (scroll, media, the user's script).
    pub behavior_timeout: Duration,
    /// How long the network must be quiet to be idle.
    pub idle_quiet: Duration,
    /// The longest wait for network idle (after load and after the
    /// behaviours).
    pub idle_timeout: Duration,
    /// Scroll to the end (lazy loading triggered).
    pub scroll: bool,
    /// Start audio and video.
    pub media: bool,
    /// The user's own behaviour script, run in each page (an expression;
    /// a promise it returns is awaited).
    pub behaviors: Option<String>,
    /// A browser is restarted after this many pages (memory stays
    /// bounded over long crawls).
    pub pages_per_browser: usize,
    /// More Chromium flags.
    pub extra_flags: Vec<String>,
    /// The most targets a page starts (dedicated workers, frames of other
    /// sites) whose requests its tab follows at once; past it, they run
    /// unfollowed and the page is marked incomplete
    /// ([`PageResult::incomplete`]).
    pub max_targets: usize,
    /// The DevTools events queued for each tab ([`cdp::EVENT_BUFFER`]).
    /// A tab that falls further behind loses the oldest and the page is
    /// marked incomplete; a worker or frame whose start was among them is
    /// still set up and let run. Small only in tests.
    pub event_buffer: usize,
}

impl BrowserOptions {
    /// Defaults for `chromium`: one browser, 60 s a page, 30 s to load,
    /// 15 s a behaviour, 500 ms of quiet within at most 10 s, scroll and
    /// media on, a restart every 100 pages.
    pub fn new(chromium: PathBuf) -> BrowserOptions {
        BrowserOptions {
            chromium,
            browsers: 1,
            page_timeout: Duration::from_secs(60),
            load_timeout: Duration::from_secs(30),
            behavior_timeout: Duration::from_secs(15),
            idle_quiet: Duration::from_millis(500),
            idle_timeout: Duration::from_secs(10),
            scroll: true,
            media: true,
            behaviors: None,
            pages_per_browser: 100,
            extra_flags: Vec::new(),
            max_targets: page::MAX_TARGETS,
            event_buffer: cdp::EVENT_BUFFER,
        }
    }
}

struct Slot {
    browser: Option<chrome::Chromium>,
    pages: usize,
    // When its last page ended: the timing log's hand-off (the time the
    // tab waited for its next page).
    last_end: Option<Instant>,
    // The tab the last page left open, and the pages it served.
    tab: Option<(page::Kept, usize)>,
}

/// Supervised browsers capturing pages through an in-process recording
/// proxy; see the crate documentation. Its methods block; call them from
/// any thread (a crawler's workers).
pub struct Browsers {
    rt: tokio::runtime::Runtime,
    opts: BrowserOptions,
    launch: chrome::Launch,
    recorder: Arc<Recorder>,
    slots: Arc<Vec<tokio::sync::Mutex<Slot>>>,
    free: Mutex<Vec<usize>>,
    permits: Arc<Semaphore>,
    proxy_stop: Arc<AtomicBool>,
    proxy: Option<std::thread::JoinHandle<Result<(), warchest_capture::CaptureError>>>,
    proxy_addr: SocketAddr,
    unrecorded: Arc<warchest_capture::proxy::Unrecorded>,
    restarts: std::sync::atomic::AtomicU64,
    ended: std::sync::atomic::AtomicU64,
    waiting: Waiting,
    // The browsers started with the run, and the flag that stops it
    // starting more once `finish` began.
    launcher: Option<tokio::task::JoinHandle<()>>,
    closing: Arc<AtomicBool>,
}

impl Browsers {
    /// Starts the recording proxy on a loopback port, writing through
    /// `recorder`, and the browsers, all at once (one that fails to start
    /// is tried again at its first page).
    ///
    /// # Errors
    /// The proxy or the runtime cannot be set up.
    pub fn start(
        opts: BrowserOptions,
        recorder: Arc<Recorder>,
        proxy: ProxyOptions,
    ) -> Result<Browsers, BrowserError> {
        let spki = data_encoding::BASE64.encode(&sha2::Sha256::digest(proxy.ca.spki_der()));
        let waiting = Waiting::default();
        let p = Proxy::bind(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            recorder.clone(),
            proxy,
        )?
        .on_response(document_hook(waiting.clone()))
        .on_redirect(redirect_hook(waiting.clone()));
        let proxy_addr = p.local_addr()?;
        let unrecorded = p.unrecorded();
        // Before the browsers start: what they lose with no page open is
        // their own.
        unrecorded.track_pages();
        let proxy_stop = Arc::new(AtomicBool::new(false));
        let stop = proxy_stop.clone();
        let handle = std::thread::Builder::new()
            .name("browser-proxy".into())
            .spawn(move || p.serve(&stop))
            .map_err(|e| BrowserError::Io("proxy thread".into(), e))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("browser")
            .build()
            .map_err(|e| BrowserError::Io("tokio runtime".into(), e))?;
        let n = opts.browsers.max(1);
        let launch = chrome::Launch {
            exe: opts.chromium.clone(),
            proxy: Some(proxy_addr.to_string()),
            spki: vec![spki],
            extra: opts.extra_flags.clone(),
            timeout: Duration::from_secs(30),
            event_buffer: opts.event_buffer,
        };
        let slots: Arc<Vec<_>> = Arc::new(
            (0..n)
                .map(|_| {
                    tokio::sync::Mutex::new(Slot {
                        browser: None,
                        pages: 0,
                        last_end: None,
                        tab: None,
                    })
                })
                .collect(),
        );
        // The browsers start now, each holding its slot, two at a time
        // (one after the other, a crawl's second tab waited a browser's
        // start, about a second, for links its first page gave early),
        // each with its first tab open: a fresh browser's first target
        // takes longest (its first renderer). A slot a page holds already
        // starts its own; one that fails to start is tried again at its
        // first page.
        let (all, l) = (slots.clone(), launch.clone());
        let max_targets = opts.max_targets;
        let closing = Arc::new(AtomicBool::new(false));
        let stop = closing.clone();
        let launcher = rt.spawn(async move {
            use futures_util::StreamExt as _;
            let (l, stop) = (&l, &stop);
            futures_util::stream::iter(all.iter())
                .for_each_concurrent(LAUNCHES_AT_ONCE, |s| async move {
                    let Ok(mut slot) = s.try_lock() else {
                        return;
                    };
                    // Looked at under the slot's lock: `finish` sets it
                    // before it takes the slots.
                    if stop.load(Ordering::SeqCst) || slot.browser.is_some() {
                        return;
                    }
                    match chrome::Chromium::launch(l).await {
                        Ok(b) => {
                            if let Ok(t) = grab::open_tab(&b.cdp, max_targets).await {
                                slot.tab = Some((t.keep(), 0));
                            }
                            slot.browser = Some(b);
                        }
                        Err(e) => tracing::warn!("{e}; tried again at its first page"),
                    }
                })
                .await;
        });
        Ok(Browsers {
            rt,
            launch,
            recorder,
            slots,
            free: Mutex::new((0..n).rev().collect()),
            permits: Arc::new(Semaphore::new(n)),
            opts,
            proxy_stop,
            proxy: Some(handle),
            proxy_addr,
            unrecorded,
            restarts: std::sync::atomic::AtomicU64::new(0),
            ended: std::sync::atomic::AtomicU64::new(0),
            waiting,
            launcher: Some(launcher),
            closing,
        })
    }

    /// The recording proxy's address.
    pub fn proxy_addr(&self) -> SocketAddr {
        self.proxy_addr
    }

    /// The exchanges the recording proxy did not record: taken before
    /// [`Browsers::finish`] and read after it, which waits for the
    /// exchanges under way.
    pub fn unrecorded(&self) -> Arc<warchest_capture::proxy::Unrecorded> {
        self.unrecorded.clone()
    }

    /// Browsers restarted so far (crashes, hangs, and the restart every
    /// [`BrowserOptions::pages_per_browser`] pages).
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Pages the browsers ended so far (captured, or failed after their
    /// attempts; a page's records are written when it counts), for
    /// progress.
    pub fn pages_ended(&self) -> u64 {
        self.ended.load(Ordering::Relaxed)
    }

    /// Captures one page (blocking): retried once in a fresh tab (and a
    /// fresh browser after a hang or a browser crash), then reported
    /// failed.
    pub fn capture(&self, url: &str) -> PageResult {
        self.rt.block_on(self.capture_async(url, None))
    }

    /// [`Browsers::capture`], calling `early` (on the calling thread)
    /// with what the page gives before it ends: its document as soon as
    /// the proxy recorded it (after HTTP redirects, the document they led
    /// to), and the rendered DOM's links once it loaded. A crawl feeds its
    /// frontier with them, so that its other tabs start before this page
    /// ends.
    ///
    /// The page is driven on a thread of its own, `early` on the calling
    /// thread from a queue of four messages: a slow callback (link
    /// extraction, frontier writes) delays none of the page's steps. When
    /// the queue is full, a document waits on the proxy's exchange thread
    /// (the browser has its copy) rather than be dropped, while the DOM's
    /// early links are left out (the same links come with the page's
    /// result), so a stuck callback never eats the page's time bound.
    /// Every message sent before the page ended is given to `early`
    /// before this returns.
    pub fn capture_early(&self, url: &str, early: &mut dyn FnMut(Early)) -> PageResult {
        let (tx, rx) = tokio::sync::mpsc::channel(EARLY_QUEUE);
        if let Ok(mut w) = self.waiting.lock() {
            w.entry(waiting_key(url)).or_default().push(tx.clone());
        }
        let unwait = Unwait {
            waiting: &self.waiting,
            tx: Some(tx),
        };
        std::thread::scope(|scope| {
            // Owned here: a callback that panics drops it as it unwinds, so
            // the page's senders fail rather than wait on a full queue
            // while the scope joins the page's thread.
            let mut rx = rx;
            let page = std::thread::Builder::new()
                .name("browser-page".into())
                .spawn_scoped(scope, move || {
                    let r = self
                        .rt
                        .block_on(self.capture_async(url, unwait.tx.as_ref()));
                    // The last senders go (the proxy's hook may hold a
                    // clone a moment longer): the loop below ends.
                    drop(unwait);
                    r
                });
            let page = match page {
                Ok(p) => p,
                Err(e) => {
                    return PageResult::failed(
                        url,
                        format!("starting the page's thread: {e}"),
                        0,
                        Duration::ZERO,
                    );
                }
            };
            while let Some(e) = rx.blocking_recv() {
                early(e);
            }
            page.join().unwrap_or_else(|p| {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!("{url}: the page's thread panicked: {why}");
                PageResult::failed(
                    url,
                    format!("the page's thread panicked: {why}"),
                    0,
                    Duration::ZERO,
                )
            })
        })
    }

    /// Captures `urls`, [`BrowserOptions::browsers`] at once, calling
    /// `each` as each page ends; the results in the order given.
    pub fn capture_all(
        &self,
        urls: &[String],
        each: &(dyn Fn(&PageResult) + Sync),
    ) -> Vec<PageResult> {
        self.rt.block_on(async {
            let futs = urls.iter().map(|u| async move {
                let r = self.capture_async(u, None).await;
                each(&r);
                r
            });
            futures_util::future::join_all(futs).await
        })
    }

    async fn capture_async(
        &self,
        url: &str,
        early: Option<&tokio::sync::mpsc::Sender<Early>>,
    ) -> PageResult {
        let Ok(_permit) = self.permits.clone().acquire_owned().await else {
            return PageResult::failed(url, "shutting down".into(), 0, Duration::ZERO);
        };
        let Some(i) = self.free.lock().ok().and_then(|mut f| f.pop()) else {
            return PageResult::failed(url, "no free browser".into(), 0, Duration::ZERO);
        };
        // Given back however this ends (a panic too): a lost index would
        // leave its browser unused for the rest of the run.
        let _free = FreeSlot {
            free: &self.free,
            i,
        };
        let start = Instant::now();
        let mut slot = self.slots[i].lock().await;
        // The page is open until its losses are claimed: a request cut in
        // its head (no URL) meanwhile may be its.
        let _open = self.unrecorded.page_open();
        if let Some(e) = slot.last_end {
            tracing::debug!(
                target: "warchest_browser::timing",
                "{url}: tab {i} waited {}ms for it",
                e.elapsed().as_millis()
            );
        }
        let mut last = String::new();
        let mut result = None;
        for attempt in 1..=2u32 {
            let pages = slot.pages;
            let restart = match &mut slot.browser {
                Some(b) => !b.alive() || pages >= self.opts.pages_per_browser,
                None => true,
            };
            if restart {
                // A kept tab goes with its browser.
                slot.tab = None;
                if let Some(b) = slot.browser.take() {
                    self.restarts.fetch_add(1, Ordering::Relaxed);
                    b.kill().await;
                }
                match chrome::Chromium::launch(&self.launch).await {
                    Ok(b) => {
                        slot.browser = Some(b);
                        slot.pages = 0;
                    }
                    Err(e) => {
                        last = e.to_string();
                        continue;
                    }
                }
            }
            slot.pages += 1;
            let kept = slot.tab.take();
            let Some(b) = slot.browser.as_ref() else {
                continue;
            };
            let run = grab::capture_page(&b.cdp, url, &self.opts, &self.recorder, kept, early);
            match tokio::time::timeout(self.opts.page_timeout, run).await {
                Ok((Ok(mut r), kept)) => {
                    slot.tab = kept;
                    // The proxy counted each loss before the tab saw its
                    // answer, so the page's are there by now.
                    r.not_recorded = self.unrecorded.claim(r.fetched.iter().map(String::as_str));
                    if r.incomplete {
                        // Its list may be short: its losses may be left
                        // unclaimed, so none can pass for the browser's.
                        self.unrecorded.tracker_incomplete();
                    }
                    r.attempts = attempt;
                    r.ms = start.elapsed().as_millis() as u64;
                    result = Some(r);
                    break;
                }
                Ok((Err(e), _)) => {
                    tracing::warn!("{url}: attempt {attempt}: {e}");
                    last = e.to_string();
                    if matches!(e, BrowserError::Gone | BrowserError::Timeout(_)) {
                        // A browser that does not answer is restarted.
                        if let Some(b) = slot.browser.take() {
                            self.restarts.fetch_add(1, Ordering::Relaxed);
                            b.kill().await;
                        }
                    }
                }
                Err(_) => {
                    tracing::warn!(
                        "{url}: attempt {attempt}: the page took more than {:?}; its browser is restarted",
                        self.opts.page_timeout
                    );
                    last = format!("page timeout ({:?})", self.opts.page_timeout);
                    if let Some(b) = slot.browser.take() {
                        self.restarts.fetch_add(1, Ordering::Relaxed);
                        b.kill().await;
                    }
                }
            }
        }
        slot.last_end = Some(Instant::now());
        drop(slot);
        self.ended.fetch_add(1, Ordering::Relaxed);
        result.unwrap_or_else(|| PageResult::failed(url, last, 2, start.elapsed()))
    }

    /// Closes the browsers and stops the proxy once its exchanges under
    /// way are written. The recorder is the caller's to finish.
    ///
    /// # Errors
    /// The proxy failed.
    pub fn finish(mut self) -> Result<(), BrowserError> {
        let slots = self.slots.clone();
        // No browser starts from now on; one starting is waited for (at
        // most its launch bound) and closed with the others.
        self.closing.store(true, Ordering::SeqCst);
        let launcher = self.launcher.take();
        let browsers: Vec<chrome::Chromium> = self.rt.block_on(async {
            if let Some(l) = launcher {
                let _ = l.await;
            }
            let mut all = Vec::new();
            for s in slots.iter() {
                let mut slot = s.lock().await;
                slot.tab = None;
                all.extend(slot.browser.take());
            }
            all
        });
        // Killed, and their profiles removed, each on a thread of its own:
        // one after the other they took 0.3-0.6 s each at the end of a
        // run (a profile is a few hundred files).
        let rt = self.rt.handle();
        std::thread::scope(|scope| {
            for b in browsers {
                scope.spawn(move || rt.block_on(b.kill()));
            }
        });
        self.proxy_stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.proxy.take() {
            match h.join() {
                Ok(r) => r?,
                Err(_) => return Err(BrowserError::Page("the proxy thread panicked".into())),
            }
        }
        Ok(())
    }
}

impl Drop for Browsers {
    fn drop(&mut self) {
        self.proxy_stop.store(true, Ordering::SeqCst);
    }
}

/// The set of URLs the browsers fetched from the network (through the
/// proxy, so recorded) in `pages`: what the HTTP client need not fetch
/// again.
pub fn fetched(pages: &[PageResult]) -> BTreeSet<String> {
    pages
        .iter()
        .flat_map(|p| p.fetched.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{
        Early, FreeSlot, Sender, Unwait, Waiting, follow_redirect, is_html_type, waiting_key,
    };
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// A browser's index goes back to the free list even when the page
    /// that held it panicked.
    #[test]
    fn a_browser_is_freed_after_a_panic() {
        let free = Mutex::new(vec![0, 1]);
        let i = free.lock().unwrap().pop().unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _free = FreeSlot { free: &free, i };
            panic!("a page");
        }));
        assert!(r.is_err());
        assert_eq!(*free.lock().unwrap(), vec![0, 1]);
    }

    fn queue() -> (Sender, tokio::sync::mpsc::Receiver<Early>) {
        tokio::sync::mpsc::channel(1)
    }

    /// A redirect of an awaited page files its capture under the target,
    /// relative `Location` joined; a capture that ended is not filed (its
    /// loop would wait for ever on a sender nothing takes out).
    #[test]
    fn a_redirect_files_live_captures_under_its_target() {
        let mut w = HashMap::new();
        let (live, _rx) = queue();
        let (ended, rx) = queue();
        drop(rx);
        w.insert(
            "http://a.test/r".to_string(),
            vec![live.clone(), ended.clone()],
        );
        follow_redirect(&mut w, "http://a.test/r", " /home ");
        let v = &w["http://a.test/home"];
        assert_eq!(v.len(), 1);
        assert!(v[0].same_channel(&live));
        // Filed once, however often the redirect is seen (a loop).
        follow_redirect(&mut w, "http://a.test/r", "/home");
        assert_eq!(w["http://a.test/home"].len(), 1);
        // A fragment is not part of what is fetched.
        let (other, _rx2) = queue();
        w.insert("http://a.test/f".to_string(), vec![other.clone()]);
        follow_redirect(&mut w, "http://a.test/f", "/home#main");
        assert_eq!(w["http://a.test/home"].len(), 2);
        assert!(!w.contains_key("http://a.test/home#main"));
        w.remove("http://a.test/f");
        // Not an http(s) target; not an awaited page.
        follow_redirect(&mut w, "http://a.test/r", "ftp://a.test/x");
        follow_redirect(&mut w, "http://a.test/other", "/elsewhere");
        assert_eq!(w.len(), 2);
        // Only ended captures: nothing filed.
        let mut w = HashMap::new();
        w.insert("http://a.test/r".to_string(), vec![ended]);
        follow_redirect(&mut w, "http://a.test/r", "/home");
        assert!(!w.contains_key("http://a.test/home"));
    }

    /// Once a capture's `Unwait` has run, a redirect of its URL files
    /// nothing of it (the hook looks up and files under one guard).
    #[test]
    fn a_redirect_after_a_capture_ended_files_nothing() {
        let waiting: Waiting = Arc::new(Mutex::new(HashMap::new()));
        let (tx, _rx) = queue();
        waiting
            .lock()
            .unwrap()
            .insert("http://a.test/r".to_string(), vec![tx.clone()]);
        drop(Unwait {
            waiting: &waiting,
            tx: Some(tx),
        });
        follow_redirect(&mut waiting.lock().unwrap(), "http://a.test/r", "/home");
        assert!(waiting.lock().unwrap().is_empty());
    }

    #[test]
    fn pages_are_html_xhtml_or_untyped() {
        for c in [
            Some("text/html"),
            Some("Text/HTML; charset=utf-8"),
            Some("application/xhtml+xml"),
            // A header written without its `;` (the crawl's rule too).
            Some("text/html charset=UTF-8"),
            Some(""),
            None,
        ] {
            assert!(is_html_type(c), "{c:?}");
        }
        for c in [
            "application/json",
            "image/png",
            "application/pdf",
            "text/plain; charset=utf-8",
            "text/htmlx",
        ] {
            assert!(!is_html_type(Some(c)), "{c}");
        }
    }

    #[test]
    fn waiting_keys_meet_across_spellings() {
        assert_eq!(
            waiting_key("HTTP://Example.ORG:80/a b?x=é"),
            waiting_key("http://example.org/a%20b?x=%C3%A9")
        );
        assert_eq!(waiting_key("not a url"), "not a url");
        assert_eq!(waiting_key("http://a.test/home#main"), "http://a.test/home");
    }
}
