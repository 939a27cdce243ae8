//! One page captured in one tab: load, behaviours, screenshot, text,
//! links, and the records that hold them.

use std::time::{Duration, Instant};

use serde_json::Value;
use warchest_capture::Recorder;

use crate::page::{Response, Tab};
use crate::{BrowserError, BrowserOptions};

const SCROLL_JS: &str = include_str!("js/scroll.js");
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
    /// The rendered DOM's links (http and https), each once.
    pub links: Vec<String>,
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
    /// Events lost by a tracker that fell behind, or responses past its
    /// bound: `fetched` may then lack some URLs.
    pub incomplete: bool,
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
            fetched: Vec::new(),
            behaviors: Vec::new(),
            attempts,
            ms: took.as_millis() as u64,
            error: Some(error),
            incomplete: false,
        }
    }

    /// True when the page was captured (whatever its HTTP status).
    pub fn ok(&self) -> bool {
        self.error.is_none()
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

/// Loads `url` in a new tab of `cdp`'s browser and records what it made
/// of it (the proxy records what it fetched).
pub(crate) async fn capture_page(
    cdp: &crate::cdp::Cdp,
    url: &str,
    o: &BrowserOptions,
    recorder: &Recorder,
) -> Result<PageResult, BrowserError> {
    let date = time::OffsetDateTime::now_utc();
    let tab = Tab::open(cdp, &[NO_WORKERS_JS], true).await?;
    let r = drive(&tab, url, o, recorder, date).await;
    tab.close().await;
    r
}

async fn drive(
    tab: &Tab<'_>,
    url: &str,
    o: &BrowserOptions,
    recorder: &Recorder,
    date: time::OffsetDateTime,
) -> Result<PageResult, BrowserError> {
    let start = Instant::now();
    let loaded = tab.navigate(url, o.load_timeout).await?;
    let mut behaviors = Vec::new();
    let t = Instant::now();
    let idle = tab.network_idle(o.idle_quiet, o.idle_timeout).await;
    behaviors.push(Behavior {
        name: "idle",
        completed: idle,
        ms: t.elapsed().as_millis() as u64,
        note: String::new(),
    });
    if tab.crashed() {
        return Err(BrowserError::Crashed);
    }
    // As Browsertrix: the view and the text as loaded, before behaviours
    // change them (QA compares them with a replay loaded the same way).
    let png = tab.screenshot().await?;
    let text = tab
        .eval(&with_consts(TEXT_JS), crate::page::COMMAND)
        .await?
        .as_str()
        .unwrap_or("")
        .to_string();
    let title = tab
        .eval("document.title", crate::page::COMMAND)
        .await
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|t| !t.is_empty());
    if o.scroll {
        let js = SCROLL_JS.replace("MAX_MS", &o.behavior_timeout.as_millis().to_string());
        behaviors.push(
            behave(
                tab,
                "scroll",
                &js,
                o.behavior_timeout + Duration::from_secs(2),
            )
            .await?,
        );
    }
    if o.media {
        behaviors.push(behave(tab, "media", MEDIA_JS, o.behavior_timeout).await?);
    }
    if let Some(user) = &o.behaviors {
        behaviors.push(behave(tab, "user", user, o.behavior_timeout).await?);
    }
    if behaviors.len() > 1 {
        let t = Instant::now();
        let idle = tab.network_idle(o.idle_quiet, o.idle_timeout).await;
        behaviors.push(Behavior {
            name: "idle",
            completed: idle,
            ms: t.elapsed().as_millis() as u64,
            note: "after the behaviours".into(),
        });
    }
    if tab.crashed() {
        return Err(BrowserError::Crashed);
    }
    let links: Vec<String> = match tab
        .eval(&with_consts(LINKS_JS), crate::page::COMMAND)
        .await?
    {
        Value::Array(a) => a
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .take(MAX_LINKS)
            .collect(),
        _ => Vec::new(),
    };
    let (responses, _failures, dropped, lagged) = tab.seen();
    let status = document_status(&responses, url);
    let mut fetched: Vec<String> = responses
        .iter()
        .filter(|r| !r.cached)
        .map(|r| r.url.clone())
        .collect();
    fetched.sort();
    fetched.dedup();
    let load_state = if behaviors.len() > 1 {
        LoadState::BehaviorsDone
    } else if loaded {
        LoadState::FullPageLoaded
    } else {
        LoadState::ContentLoaded
    };
    let view = format!("urn:view:{url}");
    let text_uri = format!("urn:text:{url}");
    let view_id = recorder.record_resource(&view, date, "image/png", &png, &[])?;
    recorder.record_resource(
        &text_uri,
        date,
        "text/plain; charset=utf-8",
        text.as_bytes(),
        &[("WARC-Concurrent-To", &view_id)],
    )?;
    let mut fields: Vec<(String, String)> = vec![
        ("browser".into(), "warchest (headless Chromium)".into()),
        ("load-state".into(), format!("{load_state:?}")),
        ("load-event".into(), loaded.to_string()),
        ("screenshot".into(), view),
        ("text".into(), text_uri),
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
        fields.push((
            "behavior".into(),
            format!(
                "{} {} {}ms",
                b.name,
                if b.completed { "completed" } else { "stopped" },
                b.ms
            ),
        ));
    }
    // Heritrix's outlink lines: URL, hop (L: a link), context.
    for l in &links {
        fields.push(("outlink".into(), format!("{l} L a/@href")));
    }
    recorder.record_metadata(url, date, &fields, Some(&view_id))?;
    Ok(PageResult {
        url: url.to_string(),
        status,
        title,
        load_state,
        load_event: loaded,
        links,
        fetched,
        behaviors,
        attempts: 1,
        ms: start.elapsed().as_millis() as u64,
        error: None,
        incomplete: dropped > 0 || lagged,
    })
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
