//! One page captured in one tab: load, the scroll beside the network-idle
//! wait, screenshot, text, the other behaviours, links, and the records
//! that hold them.

use std::time::{Duration, Instant};

use serde_json::Value;
use warchest_capture::Recorder;

use crate::page::{Kept, Response, Tab};
use crate::{BrowserError, BrowserOptions};

const SCROLL_JS: &str = include_str!("js/scroll.js");
const HEIGHT_JS: &str = "Math.max(document.documentElement ? document.documentElement.scrollHeight : 0, document.body ? document.body.scrollHeight : 0)";
const MEDIA_JS: &str = include_str!("js/media.js");
pub(crate) const LINKS_JS: &str = include_str!("js/links.js");
pub(crate) const TEXT_JS: &str = include_str!("js/text.js");
const NO_WORKERS_JS: &str = include_str!("js/no-service-workers.js");

/// The most links kept from a page.
pub const MAX_LINKS: usize = 10_000;

/// The most characters of rendered text kept from a page.
pub const MAX_TEXT: usize = 1 << 20;

/// How far a page got (Browsertrix's `loadState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadState {
    /// It failed.
    Failed,
    /// Its document arrived, but its load event did not fire in time.
    ContentLoaded,
    /// Its load event fired.
    FullPageLoaded,
    /// Its behaviours ran.
    BehaviorsDone,
}

/// A behaviour's outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Behavior {
    /// `scroll`, `media`, `idle` or `user`.
    pub name: &'static str,
    /// It ended by itself within its bound.
    pub completed: bool,
    /// How long it ran.
    pub ms: u64,
    /// What it returned or why it stopped.
    pub note: String,
}

/// What became of a page.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PageResult {
    /// The URL asked for.
    pub url: String,
    /// The document's HTTP status.
    pub status: Option<u16>,
    /// Its title.
    pub title: Option<String>,
    /// How far it got.
    pub load_state: LoadState,
    /// Its load event fired within the load bound (false: a page that
    /// never stops loading, taken as it was).
    pub load_event: bool,
    /// The rendered DOM's links (http and https), each once, at most
    /// [`MAX_LINKS`].
    pub links: Vec<String>,
    /// The DOM's links past [`MAX_LINKS`], left out of `links`.
    pub links_dropped: usize,
    /// The http(s) URLs the browser fetched from the network (through the
    /// recording proxy), each once: the HTTP client need not fetch them.
    pub fetched: Vec<String>,
    /// The behaviours run.
    pub behaviors: Vec<Behavior>,
    /// Attempts made (2: it was retried).
    pub attempts: u32,
    /// Milliseconds, attempts included.
    pub ms: u64,
    /// Why it failed, for a failed page.
    pub error: Option<String>,
    /// Events lost by a tracker that fell behind, responses past its
    /// bound, or targets (workers, frames of other sites) past the
    /// [`crate::BrowserOptions::max_targets`] a tab follows: `fetched` may
    /// then lack some URLs.
    pub incomplete: bool,
    /// The page's URLs (of `fetched`) whose exchange the recording proxy
    /// did not record (it answered the browser itself: 502, 403, ...).
    pub not_recorded: Vec<String>,
    /// The media type of the document the tab showed, as Chromium took it
    /// (none: not known). When it is not HTML ([`crate::is_html_type`]:
    /// an image, a PDF, JSON, plain text), the URL was loaded as a
    /// resource: no behaviour ran, and no screenshot, text or metadata
    /// record was written for it.
    pub mime: Option<String>,
}

impl PageResult {
    pub(crate) fn failed(url: &str, error: String, attempts: u32, took: Duration) -> PageResult {
        PageResult {
            url: url.to_string(),
            status: None,
            title: None,
            load_state: LoadState::Failed,
            load_event: false,
            links: Vec::new(),
            links_dropped: 0,
            fetched: Vec::new(),
            behaviors: Vec::new(),
            attempts,
            ms: took.as_millis() as u64,
            error: Some(error),
            incomplete: false,
            not_recorded: Vec::new(),
            mime: None,
        }
    }

    /// True when the page was captured (whatever its HTTP status).
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// True when the tab's document was a page (HTML, or of no known
    /// type), which gets its screenshot, text and metadata records; false
    /// for a resource loaded in a tab (see [`PageResult::mime`]).
    pub fn is_page(&self) -> bool {
        crate::is_html_type(self.mime.as_deref())
    }
}

fn with_consts(js: &str) -> String {
    js.replace("MAX_LINKS", &MAX_LINKS.to_string())
        .replace("MAX_CHARS", &MAX_TEXT.to_string())
}

/// Runs a behaviour: `expr` evaluated with `bound`.
async fn behave(
    tab: &Tab<'_>,
    name: &'static str,
    expr: &str,
    bound: Duration,
) -> Result<Behavior, BrowserError> {
    let t = Instant::now();
    let r = tab.eval(expr, bound).await;
    let ms = t.elapsed().as_millis() as u64;
    match r {
        Ok(v) => Ok(Behavior {
            name,
            completed: !matches!(v.get("ended"), Some(Value::Bool(false))),
            ms,
            note: v.to_string().chars().take(200).collect(),
        }),
        // A tab gone is the page's failure; anything else the behaviour's.
        Err(e @ (BrowserError::Gone | BrowserError::Crashed)) => Err(e),
        Err(_) if tab.crashed() => Err(BrowserError::Crashed),
        Err(e) => Ok(Behavior {
            name,
            completed: false,
            ms,
            note: e.to_string(),
        }),
    }
}

/// Back to the top of the page, not animated, waiting (ten frames or
/// 500 ms at most) until it is there.
const TOP_JS: &str = "new Promise((r) => {\
 window.scrollTo({ top: 0, left: 0, behavior: 'instant' });\
 let frames = 0;\
 const check = () => (window.scrollY === 0 || ++frames > 10)\
 ? r(window.scrollY) : requestAnimationFrame(check);\
 requestAnimationFrame(check);\
 setTimeout(() => r(window.scrollY), 500);\
})";

/// A network-idle behaviour's note: `note`, and when the wait reached its
/// bound what was still in flight (how many, the first three URLs, each
/// cut at 200 characters), which the page's metadata record then says;
/// when it went idle, how many requests whose end the tab may have missed
/// were taken as ended since the last note ([`Tab::network_idle`]).
fn idle_note(tab: &Tab<'_>, note: &str, idle: bool) -> String {
    if idle {
        // Said, not silent: requests whose end the tab may have missed
        // were taken as ended.
        let n = tab.take_assumed_ended();
        if n == 0 {
            return note.to_string();
        }
        let said = format!(
            "{n} request(s) in flight when the tab fell behind its events taken as ended after {} s without a sign",
            crate::page::UNSURE_QUIET.as_secs()
        );
        return if note.is_empty() {
            said
        } else {
            format!("{note}; {said}")
        };
    }
    let (n, urls) = tab.in_flight(3);
    let urls: Vec<String> = urls.iter().map(|u| u.chars().take(200).collect()).collect();
    let busy = format!("{n} in flight: {}", urls.join(" "));
    if note.is_empty() {
        busy
    } else {
        format!("{note}; {busy}")
    }
}

/// The scroll behaviour: passes of `js/scroll.js` down to the end of the
/// page, each followed by network idle (what the scroll made the page
/// load), while the page grew, within the behaviour's bound; then back to
/// the top. Completed: the height stopped growing within the bound.
async fn scroll(tab: &Tab<'_>, o: &BrowserOptions) -> Result<Behavior, BrowserError> {
    let t = Instant::now();
    let end = t + o.behavior_timeout;
    let (mut passes, mut steps, mut height, mut ended) = (0u64, 0u64, 0u64, false);
    let mut stopped = None;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let js = SCROLL_JS.replace("MAX_MS", &left.as_millis().to_string());
        let v = match tab.eval(&js, left + Duration::from_secs(2)).await {
            Ok(v) => v,
            Err(e @ (BrowserError::Gone | BrowserError::Crashed)) => return Err(e),
            Err(_) if tab.crashed() => return Err(BrowserError::Crashed),
            Err(e) => {
                stopped = Some(e.to_string());
                break;
            }
        };
        passes += 1;
        steps += v["steps"].as_u64().unwrap_or(0);
        height = v["height"].as_u64().unwrap_or(0);
        if v["bottom"] != Value::Bool(true) {
            break;
        }
        // Quiet counted from the end of the pass: what the last steps
        // asked for is waited for.
        tab.mark_activity();
        let left = end.saturating_duration_since(Instant::now());
        tab.network_idle(o.idle_quiet, left.min(o.idle_timeout))
            .await;
        // A height that could not be read is not the end of the page.
        let now = match tab.eval(HEIGHT_JS, crate::page::COMMAND).await {
            Ok(v) => v.as_u64().unwrap_or(0),
            Err(e @ (BrowserError::Gone | BrowserError::Crashed)) => return Err(e),
            Err(_) if tab.crashed() => return Err(BrowserError::Crashed),
            Err(e) => {
                stopped = Some(e.to_string());
                break;
            }
        };
        if now <= height {
            ended = true;
            break;
        }
    }
    // Instantly (CSS `scroll-behavior: smooth`, which Bootstrap 5 sets,
    // animates a plain scrollTo, and the screenshot follows), then a few
    // frames at most until the page is at its top.
    let _ = tab.eval(TOP_JS, crate::page::COMMAND).await;
    if tab.crashed() {
        return Err(BrowserError::Crashed);
    }
    Ok(Behavior {
        name: "scroll",
        completed: ended,
        ms: t.elapsed().as_millis() as u64,
        note: stopped.unwrap_or_else(|| {
            serde_json::json!({"passes": passes, "steps": steps, "height": height, "ended": ended})
                .to_string()
        }),
    })
}

/// A new capture tab of `cdp`'s browser: service workers blocked.
///
/// # Errors
/// The browser did not answer.
pub(crate) async fn open_tab(
    cdp: &crate::cdp::Cdp,
    max_targets: usize,
) -> Result<Tab<'_>, BrowserError> {
    Tab::open(cdp, &[NO_WORKERS_JS], true, max_targets).await
}

/// Pages a tab is used for before a new one is opened (Browsertrix
/// Crawler's `MAX_REUSE`): a new tab costs a target, a session and its
/// set-up (about 150 ms a page on the bench's machine), while a renderer
/// used for many pages keeps their history.
pub const TAB_REUSE: usize = 5;

/// Loads `url` in `kept` (a tab an earlier page left open, its tracker
/// emptied) or a new tab of `cdp`'s browser, and records what it made of
/// it (the proxy records what it fetched). The tab comes back to be kept
/// unless the page failed, did not fire its load event, or the tab served
/// [`TAB_REUSE`] pages.
pub(crate) async fn capture_page(
    cdp: &crate::cdp::Cdp,
    url: &str,
    o: &BrowserOptions,
    recorder: &Recorder,
    kept: Option<(Kept, usize)>,
    early: Option<&tokio::sync::mpsc::Sender<crate::Early>>,
) -> (Result<PageResult, BrowserError>, Option<(Kept, usize)>) {
    let date = time::OffsetDateTime::now_utc();
    let t = Instant::now();
    let (tab, uses, how) = match kept {
        Some((k, n)) => (Tab::resume(cdp, k), n, "reuse"),
        None => match open_tab(cdp, o.max_targets).await {
            Ok(t) => (t, 0, "open"),
            Err(e) => return (Err(e), None),
        },
    };
    let mut phases = Phases::default();
    phases.lap(how, t);
    let r = drive(&tab, url, o, recorder, date, &mut phases, early).await;
    let t = Instant::now();
    // Only a tab whose page loaded fully and failed nothing: a page still
    // loading could fire its load event into the next page's tracker.
    let whole = r.as_ref().is_ok_and(|p| p.load_event);
    let kept = if whole && !tab.crashed() && uses + 1 < TAB_REUSE {
        Some((tab.keep(), uses + 1))
    } else {
        tab.close().await;
        None
    };
    phases.lap("close", t);
    tracing::debug!(target: "warchest_browser::timing", "{url}: {}", phases.0.join(" "));
    (r, kept)
}

/// Milliseconds of each phase of a page, for the timing log
/// (`WARCHEST_LOG=warchest_browser::timing=debug`).
#[derive(Default)]
struct Phases(Vec<String>);

impl Phases {
    fn lap(&mut self, name: &str, since: Instant) -> Instant {
        self.0
            .push(format!("{name} {}ms", since.elapsed().as_millis()));
        Instant::now()
    }
}

async fn drive(
    tab: &Tab<'_>,
    url: &str,
    o: &BrowserOptions,
    recorder: &Recorder,
    date: time::OffsetDateTime,
    ph: &mut Phases,
    early: Option<&tokio::sync::mpsc::Sender<crate::Early>>,
) -> Result<PageResult, BrowserError> {
    let start = Instant::now();
    let loaded = tab.navigate(url, o.load_timeout).await?;
    let lap = ph.lap("load", start);
    let mime = tab.document_type();
    if !crate::is_html_type(mime.as_deref()) {
        // Not a page: what Browsertrix Crawler does with a page URL that
        // is not HTML (it fetches it directly, and for one loaded in the
        // browser skips every post-load step): its response is recorded
        // (by the proxy), and nothing is derived from it.
        let idle = tab.network_idle(o.idle_quiet, o.idle_timeout).await;
        ph.lap("idle", lap);
        let (status, fetched, incomplete) = outcome(tab, url);
        return Ok(PageResult {
            url: url.to_string(),
            status,
            title: None,
            load_state: if loaded {
                LoadState::FullPageLoaded
            } else {
                LoadState::ContentLoaded
            },
            load_event: loaded,
            links: Vec::new(),
            links_dropped: 0,
            fetched,
            behaviors: vec![Behavior {
                name: "idle",
                completed: idle,
                ms: lap.elapsed().as_millis() as u64,
                note: idle_note(tab, "not a page: no other step", idle),
            }],
            attempts: 1,
            ms: start.elapsed().as_millis() as u64,
            error: None,
            incomplete,
            not_recorded: Vec::new(),
            mime,
        });
    }
    let mut behaviors = Vec::new();
    // The DOM's links as loaded go out at once (a crawl's other tabs
    // start on them), read while the network goes idle.
    let links_js = with_consts(LINKS_JS);
    let early_links = async {
        if let Some(tx) = early
            && let Ok(v) = tab.eval(&links_js, crate::page::COMMAND).await
        {
            // Not what the page asked for already, answered or still in
            // flight (a lightbox's image, a CSS background, a fetch the
            // script started): another tab would load it as a page before
            // this page's end marks it fetched, where the end would not
            // queue it. Left to the end, which decides on what the page
            // fetched in all.
            let requested = tab.requested();
            let (mut links, _) = links_of(v);
            links.retain(|u| !requested.contains(u.as_str()));
            // Not waited for when the queue is full (the callback behind):
            // that wait would count against the page's time bound. The
            // page's result has the same links.
            if let Err(tokio::sync::mpsc::error::TrySendError::Full(_)) =
                tx.try_send(crate::Early::Links(links))
            {
                tracing::debug!("{url}: the early queue is full; the DOM's links come at the end");
            }
        }
    };
    // The scroll starts at the load event, while the load's network-idle
    // clock runs, not after it: its passes each end in network idle
    // counted from the end of the pass (and waiting for the load's
    // requests still in flight), so the page's end is both the scroll
    // ended and 500 ms of quiet measured across it. Without a scroll,
    // load then network idle, as before.
    let idle_lap = lap;
    let idle = async {
        let idle = tab.network_idle(o.idle_quiet, o.idle_timeout).await;
        (idle, idle_lap.elapsed().as_millis() as u64)
    };
    let scrolled = async {
        if o.scroll {
            Some(scroll(tab, o).await)
        } else {
            None
        }
    };
    let ((idle, idle_ms), scrolled, ()) = tokio::join!(idle, scrolled, early_links);
    behaviors.push(Behavior {
        name: "idle",
        completed: idle,
        ms: idle_ms,
        note: idle_note(
            tab,
            if o.scroll {
                "after load, across the scroll"
            } else {
                ""
            },
            idle,
        ),
    });
    if let Some(s) = scrolled {
        behaviors.push(s?);
    }
    let lap = ph.lap(if o.scroll { "idle+scroll" } else { "idle" }, lap);
    if tab.crashed() {
        return Err(BrowserError::Crashed);
    }
    // The view (the top of the page, scrolled back) and the text once the
    // page loaded, went idle and was scrolled, before media and the user's
    // script. The three are asked at once.
    let text_js = with_consts(TEXT_JS);
    let (png, text, title) = tokio::join!(
        tab.screenshot(),
        tab.eval(&text_js, crate::page::COMMAND),
        tab.eval("document.title", crate::page::COMMAND),
    );
    let png = png?;
    let text = text?.as_str().unwrap_or("").to_string();
    let title = title
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|t| !t.is_empty());
    let mut lap = ph.lap("view+text", lap);
    if o.media {
        let m = behave(tab, "media", MEDIA_JS, o.behavior_timeout).await?;
        if m.note != "0" {
            // Media started: its requests may begin a moment later.
            tab.mark_activity();
        }
        behaviors.push(m);
        lap = ph.lap("media", lap);
    }
    if let Some(user) = &o.behaviors {
        behaviors.push(behave(tab, "user", user, o.behavior_timeout).await?);
        tab.mark_activity();
        lap = ph.lap("user", lap);
    }
    if behaviors.len() > 1 {
        let t = Instant::now();
        let idle = tab.network_idle(o.idle_quiet, o.idle_timeout).await;
        behaviors.push(Behavior {
            name: "idle",
            completed: idle,
            ms: t.elapsed().as_millis() as u64,
            note: idle_note(tab, "after the behaviours", idle),
        });
        lap = ph.lap("idle", lap);
    }
    if tab.crashed() {
        return Err(BrowserError::Crashed);
    }
    let (links, links_dropped) = links_of(tab.eval(&links_js, crate::page::COMMAND).await?);
    ph.lap("links", lap);
    let (status, fetched, incomplete) = outcome(tab, url);
    let load_state = if behaviors.len() > 1 {
        LoadState::BehaviorsDone
    } else if loaded {
        LoadState::FullPageLoaded
    } else {
        LoadState::ContentLoaded
    };
    let records_start = Instant::now();
    let view = format!("urn:view:{url}");
    let text_uri = format!("urn:text:{url}");
    let mut fields: Vec<(String, String)> = vec![
        ("browser".into(), "warchest (headless Chromium)".into()),
        ("load-state".into(), format!("{load_state:?}")),
        ("load-event".into(), loaded.to_string()),
        ("screenshot".into(), view.clone()),
        ("text".into(), text_uri.clone()),
        ("resources".into(), fetched.len().to_string()),
        (
            "duration-ms".into(),
            start.elapsed().as_millis().to_string(),
        ),
    ];
    if let Some(t) = &title {
        fields.push(("title".into(), t.replace(['\r', '\n'], " ")));
    }
    for b in &behaviors {
        let mut line = format!(
            "{} {} {}ms",
            b.name,
            if b.completed { "completed" } else { "stopped" },
            b.ms
        );
        // Why the network never went idle: what was still in flight.
        if b.name == "idle" && !b.completed {
            line.push_str(&format!(" ({})", b.note.replace(['\r', '\n'], " ")));
        }
        fields.push(("behavior".into(), line));
    }
    // Heritrix's outlink lines: URL, hop (L: a link), context.
    for l in &links {
        fields.push(("outlink".into(), format!("{l} L a/@href")));
    }
    // The three under one writer of the pool: a URI's records sit together
    // in one file, WARC-Concurrent-To naming a record beside them.
    let mut h = recorder.hold()?;
    let view_id = h.record_resource(&view, date, "image/png", &png, &[])?;
    h.record_resource(
        &text_uri,
        date,
        "text/plain; charset=utf-8",
        text.as_bytes(),
        &[("WARC-Concurrent-To", &view_id)],
    )?;
    h.record_metadata(url, date, &fields, Some(&view_id))?;
    drop(h);
    ph.lap("records", records_start);
    Ok(PageResult {
        url: url.to_string(),
        status,
        title,
        load_state,
        load_event: loaded,
        links,
        links_dropped,
        fetched,
        behaviors,
        attempts: 1,
        ms: start.elapsed().as_millis() as u64,
        error: None,
        incomplete,
        not_recorded: Vec::new(),
        mime,
    })
}

/// The status of the page's document, the URLs the tab fetched from the
/// network (each once, sorted), and whether its tracker lost any.
fn outcome(tab: &Tab<'_>, url: &str) -> (Option<u16>, Vec<String>, bool) {
    let (responses, _failures, dropped, lagged) = tab.seen();
    let status = document_status(&responses, url);
    let mut fetched: Vec<String> = responses
        .iter()
        .filter(|r| !r.cached)
        .map(|r| r.url.clone())
        .collect();
    fetched.sort();
    fetched.dedup();
    (status, fetched, dropped > 0 || lagged)
}

/// The links `js/links.js` returned, and how many it found past them
/// (or past [`MAX_LINKS`] here).
fn links_of(v: Value) -> (Vec<String>, usize) {
    let found = v.get("found").and_then(Value::as_u64).unwrap_or(0);
    let all: Vec<String> = match v.get("links") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let found = (found as usize).max(all.len());
    let mut links = all;
    links.truncate(MAX_LINKS);
    let dropped = found - links.len();
    (links, dropped)
}

/// The status of the page's own document: the response to its URL (after
/// redirects Chromium reports the last hop's under it), else the first.
pub(crate) fn document_status(responses: &[Response], url: &str) -> Option<u16> {
    responses
        .iter()
        .find(|r| r.url == url)
        .or(responses.first())
        .map(|r| r.status)
}

#[cfg(test)]
mod links_tests {
    use super::*;

    /// The links past the bound are the count `links.js` gives less the
    /// links it returned; more than the bound returned are cut and
    /// counted too.
    #[test]
    fn links_past_the_bound_are_counted() {
        let v = serde_json::json!({"links": ["http://a/1", "http://a/2"], "found": 7});
        assert_eq!(
            links_of(v),
            (vec!["http://a/1".to_string(), "http://a/2".to_string()], 5)
        );
        let many: Vec<String> = (0..MAX_LINKS + 3)
            .map(|i| format!("http://a/{i}"))
            .collect();
        let (l, d) = links_of(serde_json::json!({ "links": many, "found": MAX_LINKS + 3 }));
        assert_eq!((l.len(), d), (MAX_LINKS, 3));
        let (l, d) = links_of(serde_json::json!({ "links": many }));
        assert_eq!((l.len(), d), (MAX_LINKS, 3));
        assert_eq!(links_of(serde_json::json!(null)), (Vec::new(), 0));
    }
}
