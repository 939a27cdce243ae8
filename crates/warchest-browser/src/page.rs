//! One tab: opened as a flat-mode CDP session, its network and lifecycle
//! events tracked, driven (navigate, evaluate, screenshot), closed. Shared
//! by capture and QA.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::BrowserError;
use crate::cdp::Cdp;

/// The viewport every page is shown in, capture and QA alike, so that
/// their screenshots compare pixel for pixel.
pub const VIEWPORT: (u32, u32) = (1280, 800);

/// The most responses a page's tracker keeps (past it, they are counted
/// only).
pub const MAX_RESPONSES: usize = 20_000;

/// How long one CDP command may take.
pub const COMMAND: Duration = Duration::from_secs(10);

/// A response the page received.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Response {
    /// Its URL.
    pub url: String,
    /// Its status.
    pub status: u16,
    /// Served from the browser's cache or a service worker, not the
    /// network.
    pub cached: bool,
    /// It carries `Memento-Datetime`: a replay of an archived response
    /// (whatever its status), not the replay's "not in the archive".
    pub memento: bool,
}

/// A request that failed, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Failure {
    /// Its URL.
    pub url: String,
    /// Chromium's reason (`net::ERR_...`, `csp`, ...).
    pub reason: String,
}

#[derive(Default)]
struct Track {
    inflight: HashSet<String>,
    urls: std::collections::HashMap<String, String>,
    last_change: Option<Instant>,
    responses: Vec<Response>,
    failures: Vec<Failure>,
    dropped: u64,
    loaded: bool,
    crashed: bool,
    lagged: bool,
}

/// An open tab.
pub struct Tab<'a> {
    cdp: &'a Cdp,
    session: String,
    target: String,
    track: Arc<Mutex<Track>>,
    watcher: tokio::task::JoinHandle<()>,
}

impl<'a> Tab<'a> {
    /// Opens a blank tab with our viewport, network tracking on, and
    /// `init` scripts run in every document before its own.
    ///
    /// # Errors
    /// The browser did not answer.
    pub async fn open(
        cdp: &'a Cdp,
        init: &[&str],
        bypass_workers: bool,
    ) -> Result<Tab<'a>, BrowserError> {
        let target = cdp
            .call(
                "Target.createTarget",
                json!({"url": "about:blank"}),
                None,
                COMMAND,
            )
            .await?["targetId"]
            .as_str()
            .ok_or_else(|| BrowserError::Cdp("Target.createTarget: no targetId".into()))?
            .to_string();
        let session = cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
                None,
                COMMAND,
            )
            .await?["sessionId"]
            .as_str()
            .ok_or_else(|| BrowserError::Cdp("Target.attachToTarget: no sessionId".into()))?
            .to_string();
        let track = Arc::new(Mutex::new(Track::default()));
        let mut events = cdp.events();
        let (t, s) = (track.clone(), session.clone());
        let watcher = tokio::spawn(async move {
            loop {
                let e = match events.recv().await {
                    Ok(e) => e,
                    Err(RecvError::Lagged(_)) => {
                        if let Ok(mut t) = t.lock() {
                            t.lagged = true;
                        }
                        continue;
                    }
                    Err(RecvError::Closed) => break,
                };
                if e.session.as_deref() != Some(s.as_str()) {
                    continue;
                }
                let Ok(mut t) = t.lock() else { break };
                observe(&mut t, &e.method, &e.params);
            }
        });
        let tab = Tab {
            cdp,
            session,
            target,
            track,
            watcher,
        };
        for m in [
            "Page.enable",
            "Network.enable",
            "Runtime.enable",
            "Inspector.enable",
        ] {
            tab.call(m, json!({})).await?;
        }
        if bypass_workers {
            tab.call("Network.setBypassServiceWorker", json!({"bypass": true}))
                .await?;
        }
        tab.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": VIEWPORT.0, "height": VIEWPORT.1, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await?;
        for s in init {
            tab.call(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": s}),
            )
            .await?;
        }
        Ok(tab)
    }

    /// Sends a command to this tab.
    ///
    /// # Errors
    /// As [`Cdp::call`].
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        self.cdp
            .call(method, params, Some(&self.session), COMMAND)
            .await
    }

    /// True once the tab's renderer crashed.
    pub fn crashed(&self) -> bool {
        self.track.lock().map(|t| t.crashed).unwrap_or(true)
    }

    /// Navigates to `url` and waits for its load event at most `bound`:
    /// Ok(true) when it fired, Ok(false) when the page is still loading
    /// (what arrived is captured all the same).
    ///
    /// # Errors
    /// The navigation failed at once (`net::ERR_...`), or the tab crashed.
    pub async fn navigate(&self, url: &str, bound: Duration) -> Result<bool, BrowserError> {
        if let Ok(mut t) = self.track.lock() {
            t.loaded = false;
        }
        let r = self.call("Page.navigate", json!({"url": url})).await?;
        if let Some(e) = r.get("errorText").and_then(Value::as_str) {
            return Err(BrowserError::Page(format!("{url}: {e}")));
        }
        let until = Instant::now() + bound;
        while Instant::now() < until {
            {
                let t = self.track.lock().map_err(|_| BrowserError::Gone)?;
                if t.crashed {
                    return Err(BrowserError::Crashed);
                }
                if t.loaded {
                    return Ok(true);
                }
            }
            if self.cdp.is_closed() {
                return Err(BrowserError::Gone);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(false)
    }

    /// Waits until no request has been in flight for `quiet`, at most
    /// `bound`; true when the network went idle.
    pub async fn network_idle(&self, quiet: Duration, bound: Duration) -> bool {
        let until = Instant::now() + bound;
        while Instant::now() < until {
            {
                let Ok(t) = self.track.lock() else {
                    return false;
                };
                if t.crashed {
                    return false;
                }
                let since = t.last_change.map_or(Duration::MAX, |l| l.elapsed());
                if t.inflight.is_empty() && since >= quiet {
                    return true;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// Evaluates `expr` in the page, awaiting a promise it returns, for
    /// at most `bound`; its value (JSON).
    ///
    /// # Errors
    /// The script threw, or took longer than `bound`, or the tab crashed.
    pub async fn eval(&self, expr: &str, bound: Duration) -> Result<Value, BrowserError> {
        let r = self
            .cdp
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": expr,
                    "awaitPromise": true,
                    "returnByValue": true,
                    "userGesture": true,
                    "timeout": bound.as_millis() as u64,
                }),
                Some(&self.session),
                bound + COMMAND,
            )
            .await?;
        if let Some(ex) = r.get("exceptionDetails") {
            let text = ex
                .pointer("/exception/description")
                .or_else(|| ex.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("exception");
            return Err(BrowserError::Page(format!("script: {text}")));
        }
        Ok(r.pointer("/result/value").cloned().unwrap_or(Value::Null))
    }

    /// A PNG of the viewport.
    ///
    /// # Errors
    /// The browser did not answer, or sent no image.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        let r = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": false}),
            )
            .await?;
        let b64 = r["data"]
            .as_str()
            .ok_or_else(|| BrowserError::Cdp("Page.captureScreenshot: no data".into()))?;
        data_encoding::BASE64
            .decode(b64.as_bytes())
            .map_err(|e| BrowserError::Cdp(format!("Page.captureScreenshot: {e}")))
    }

    /// The responses and failures seen so far, responses past
    /// [`MAX_RESPONSES`] counted, and whether events were lost.
    pub fn seen(&self) -> (Vec<Response>, Vec<Failure>, u64, bool) {
        match self.track.lock() {
            Ok(t) => (t.responses.clone(), t.failures.clone(), t.dropped, t.lagged),
            Err(_) => (Vec::new(), Vec::new(), 0, true),
        }
    }

    /// Closes the tab (at most [`COMMAND`]).
    pub async fn close(self) {
        self.watcher.abort();
        let _ = self
            .cdp
            .call(
                "Target.closeTarget",
                json!({"targetId": self.target}),
                None,
                COMMAND,
            )
            .await;
    }
}

fn observe(t: &mut Track, method: &str, p: &Value) {
    let id = || p["requestId"].as_str().unwrap_or("").to_string();
    match method {
        "Network.requestWillBeSent" => {
            let url = p
                .pointer("/request/url")
                .and_then(Value::as_str)
                .unwrap_or("");
            if url.starts_with("http") {
                t.inflight.insert(id());
                if t.urls.len() < MAX_RESPONSES {
                    t.urls.insert(id(), url.to_string());
                }
                t.last_change = Some(Instant::now());
            }
        }
        "Network.responseReceived" => {
            let r = &p["response"];
            let url = r["url"].as_str().unwrap_or("");
            if !url.starts_with("http") {
                return;
            }
            if t.responses.len() >= MAX_RESPONSES {
                t.dropped += 1;
                return;
            }
            let flag = |k: &str| r[k].as_bool().unwrap_or(false);
            t.responses.push(Response {
                url: url.to_string(),
                status: r["status"].as_u64().unwrap_or(0) as u16,
                memento: r["headers"]
                    .as_object()
                    .is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case("memento-datetime"))),
                cached: flag("fromDiskCache")
                    || flag("fromServiceWorker")
                    || flag("fromPrefetchCache")
                    || flag("fromMemoryCache"),
            });
        }
        "Network.loadingFinished" => {
            t.inflight.remove(&id());
            t.last_change = Some(Instant::now());
        }
        "Network.loadingFailed" => {
            let rid = id();
            t.inflight.remove(&rid);
            t.last_change = Some(Instant::now());
            let reason = p["blockedReason"]
                .as_str()
                .or_else(|| p["errorText"].as_str())
                .unwrap_or("failed")
                .to_string();
            if let Some(url) = t.urls.get(&rid).cloned()
                && t.failures.len() < MAX_RESPONSES
            {
                t.failures.push(Failure { url, reason });
            }
        }
        "Page.loadEventFired" => t.loaded = true,
        "Inspector.targetCrashed" => t.crashed = true,
        _ => {}
    }
}
