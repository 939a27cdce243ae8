//! One tab: opened as a flat-mode CDP session, its network and lifecycle
//! events tracked, driven (navigate, evaluate, screenshot), closed. Shared
//! by capture and QA.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;

use crate::BrowserError;
use crate::cdp::{Cdp, Sender};

/// The viewport every page is shown in, capture and QA alike, so that
/// their screenshots compare pixel for pixel.
pub const VIEWPORT: (u32, u32) = (1280, 800);

/// The most responses a page's tracker keeps (past it, they are counted
/// only).
pub const MAX_RESPONSES: usize = 20_000;

/// How long one CDP command may take.
pub const COMMAND: Duration = Duration::from_secs(10);

/// The longest a wait goes without looking again: a browser that is gone
/// sends no event to wake it.
const LOOK_AGAIN: Duration = Duration::from_millis(200);

/// How long a request in flight when its tab fell behind may give no sign
/// (no event naming it) before it is taken as ended: its end may have been
/// among the events lost, and would hold every idle wait to its bound.
pub const UNSURE_QUIET: Duration = Duration::from_secs(2);

/// The most targets (workers, frames of other sites) a tab follows the
/// network of at once, by default ([`crate::BrowserOptions::max_targets`]);
/// those past it are let run all the same, unfollowed (without the tab's
/// init scripts), and the page is marked incomplete.
pub const MAX_TARGETS: usize = 256;

/// The targets a page starts (a dedicated worker, a frame of another
/// site) are attached to, paused at their start until [`attached`] has
/// turned their network events on. Their requests are the page's: a
/// worker's script is asked for in the page's session but answered in the
/// worker's, so without this the page never looked idle (every page with
/// a worker waited out the idle bound twice: 20 s).
fn auto_attach() -> Value {
    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true})
}

/// Sets up a target attached under a tab (its network events on; when
/// `tracked`, the tab's `init` scripts for a frame's documents and the
/// same for the targets it starts), then lets it run. The answers are
/// not waited for: the commands to a session are carried out in order, so
/// all this is in place before it runs.
async fn attached(
    sender: &Sender,
    session: &str,
    tracked: bool,
    bypass_workers: bool,
    init: &[String],
) {
    // Network events even from a target not followed: the answer to the
    // page's own request for its document or script comes in its session
    // (without it, that request stayed in flight, and the page waited out
    // its idle bound).
    let mut commands = vec![("Network.enable", json!({}))];
    if tracked {
        if bypass_workers {
            commands.push(("Network.setBypassServiceWorker", json!({"bypass": true})));
        }
        if !init.is_empty() {
            // The scripts are taken for a frame's documents once its Page
            // domain is on.
            commands.push(("Page.enable", json!({})));
        }
        for s in init {
            commands.push((
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": s}),
            ));
        }
        commands.push(("Target.setAutoAttach", auto_attach()));
    }
    commands.push(("Runtime.runIfWaitingForDebugger", json!({})));
    for (method, params) in commands {
        // A target that has no such domain (or is gone) answers with an
        // error, dropped: it still gets the command that lets it run.
        if sender.send(method, params, Some(session)).await.is_err() {
            return;
        }
    }
}

/// Follows the shared workers of `cdp`'s browser: they belong to the
/// browser, not to a page, so no tab's auto-attach reaches them, but a
/// page's request for a shared worker's script is answered in the
/// worker's session. Each is attached at its start, its network events
/// turned on, then let run; a tab takes the answers to its own requests
/// from any session (see [`Tab::open`]). Any other target paused here (a
/// browser that did not take the filter) is let run and detached.
///
/// # Errors
/// The browser did not answer.
pub async fn follow_shared_workers(cdp: &Cdp) -> Result<(), BrowserError> {
    let mut events = cdp.events();
    let sender = cdp.sender();
    tokio::spawn(async move {
        // The browser's own session, under which its shared workers are
        // attached ([`cdp::Attached::parent`]).
        let browser: HashSet<String> = [String::new()].into();
        loop {
            let e = match events.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(_)) => {
                    // Those whose start was among the events lost.
                    for a in sender.take_lost(&browser) {
                        shared_worker_attached(&sender, &a.session, &a.kind).await;
                    }
                    continue;
                }
                Err(RecvError::Closed) => break,
            };
            // Only the targets paused for us: attaching a tab's target
            // (Tab::open) is announced here too, not paused.
            if e.session.is_some()
                || e.method != "Target.attachedToTarget"
                || e.params["waitingForDebugger"] != Value::Bool(true)
            {
                continue;
            }
            let Some(child) = e.params["sessionId"].as_str() else {
                continue;
            };
            if sender.take(child) {
                let kind = e.params.pointer("/targetInfo/type").and_then(Value::as_str);
                shared_worker_attached(&sender, child, kind.unwrap_or_default()).await;
            }
        }
    });
    let mut params = auto_attach();
    params["filter"] = json!([{"type": "shared_worker"}]);
    cdp.call("Target.setAutoAttach", params, None, COMMAND)
        .await?;
    Ok(())
}

/// A target paused under the browser's own session: a shared worker is
/// followed and let run; anything else (a browser that did not take the
/// filter) is let run and detached.
async fn shared_worker_attached(sender: &Sender, child: &str, kind: &str) {
    if kind == "shared_worker" {
        attached(sender, child, true, false, &[]).await;
    } else {
        let _ = sender
            .send("Runtime.runIfWaitingForDebugger", json!({}), Some(child))
            .await;
        let _ = sender
            .send("Target.detachFromTarget", json!({"sessionId": child}), None)
            .await;
    }
}

/// What a wait found: done, or look again at the next event (or at the
/// time given, when one is).
enum Look<T> {
    Done(T),
    Until(Option<Instant>),
}

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
    /// Every http(s) URL asked for, never overwritten: `urls` is keyed by
    /// request id, which a redirect's hops share, so it keeps only the
    /// last hop.
    asked: HashSet<String>,
    last_change: Option<Instant>,
    responses: Vec<Response>,
    failures: Vec<Failure>,
    dropped: u64,
    loaded: bool,
    crashed: bool,
    lagged: bool,
    /// Requests in flight when the tracker fell behind (their end may have
    /// been lost), with the last time an event named them.
    unsure: std::collections::HashMap<String, Instant>,
    /// Of those, how many were taken as ended ([`UNSURE_QUIET`]) and not
    /// yet told ([`Tab::take_assumed_ended`]).
    assumed_ended: u64,
    /// Targets (workers, frames of other sites) past the most a tab
    /// follows ([`MAX_TARGETS`]), let run unfollowed: what they asked for
    /// is not seen.
    unfollowed: u64,
    /// The media type of the document the main frame last committed to
    /// (`Page.frameNavigated`): Chromium's, from its `Content-Type` or
    /// sniffed when it has none.
    document_type: Option<String>,
}

/// An open tab.
pub struct Tab<'a> {
    cdp: &'a Cdp,
    session: String,
    target: String,
    track: Arc<Mutex<Track>>,
    // Woken at each event the tracker takes: waits end when their
    // condition holds, not at the next turn of a polling interval.
    wake: Arc<Notify>,
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
        max_targets: usize,
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
        let wake = Arc::new(Notify::new());
        let mut events = cdp.events();
        let (t, s, w) = (track.clone(), session.clone(), wake.clone());
        let sender = cdp.sender();
        let scripts: Vec<String> = init.iter().map(|s| s.to_string()).collect();
        let watcher = tokio::spawn(async move {
            // The sessions of the targets attached under the tab's own.
            let mut sessions: HashSet<String> = HashSet::new();
            // A target attached paused under the tab: followed while fewer
            // than `max_targets` are, then let run.
            let follow = async |sessions: &mut HashSet<String>, child: &str, kind: &str| {
                let tracked = sessions.len() < max_targets;
                if tracked {
                    sessions.insert(child.to_string());
                } else if let Ok(mut t) = t.lock() {
                    t.unfollowed += 1;
                    if t.unfollowed == 1 {
                        tracing::warn!(
                            "a page started more than {max_targets} workers and frames of other sites: the rest are not followed (their requests are not counted as the page's; it is marked incomplete)"
                        );
                    }
                }
                let init: &[String] = if kind == "iframe" { &scripts } else { &[] };
                attached(&sender, child, tracked, bypass_workers, init).await;
            };
            loop {
                let e = match events.recv().await {
                    Ok(e) => e,
                    Err(RecvError::Lagged(_)) => {
                        if let Ok(mut t) = t.lock() {
                            t.lagged = true;
                            // Their ends may be among the events lost.
                            let now = Instant::now();
                            let ids: Vec<String> = t.inflight.drain().collect();
                            t.unsure.extend(ids.into_iter().map(|id| (id, now)));
                        }
                        // A worker or frame whose start was among the
                        // events lost stays paused until someone lets it
                        // run: set up as at its event (and any paused
                        // under those, a worker in a frame). Bounded: each
                        // is given out once.
                        loop {
                            let mut under = sessions.clone();
                            under.insert(s.clone());
                            let lost = sender.take_lost(&under);
                            if lost.is_empty() {
                                break;
                            }
                            tracing::warn!(
                                "a tab fell behind the browser's events (the page is marked incomplete): {} worker(s) or frame(s) whose start may have been among those lost were set up and let run",
                                lost.len()
                            );
                            for a in lost {
                                follow(&mut sessions, &a.session, &a.kind).await;
                            }
                        }
                        continue;
                    }
                    Err(RecvError::Closed) => break,
                };
                let Some(from) = e.session.as_deref() else {
                    continue;
                };
                let own = from == s;
                if !own && !sessions.contains(from) {
                    // A request of the page answered in a target not under
                    // the tab: a shared worker's script, answered in the
                    // worker's session ([`follow_shared_workers`]).
                    let answer = matches!(
                        e.method.as_str(),
                        "Network.responseReceived"
                            | "Network.loadingFinished"
                            | "Network.loadingFailed"
                    );
                    let ours = answer
                        && e.params["requestId"].as_str().is_some_and(|id| {
                            t.lock()
                                .is_ok_and(|t| t.inflight.contains(id) || t.unsure.contains_key(id))
                        });
                    if !ours {
                        continue;
                    }
                }
                match e.method.as_str() {
                    "Target.attachedToTarget" => {
                        if let Some(child) = e.params["sessionId"].as_str()
                            && sender.take(child)
                        {
                            let kind = e.params.pointer("/targetInfo/type").and_then(Value::as_str);
                            follow(&mut sessions, child, kind.unwrap_or_default()).await;
                        }
                        continue;
                    }
                    "Target.detachedFromTarget" => {
                        if let Some(child) = e.params["sessionId"].as_str() {
                            sessions.remove(child);
                        }
                        continue;
                    }
                    // Only the network of the targets under the tab: a
                    // frame's load event or navigation is not the page's.
                    m if !own && !m.starts_with("Network.") => continue,
                    _ => {}
                }
                {
                    let Ok(mut t) = t.lock() else { break };
                    observe(&mut t, &e.method, &e.params);
                }
                w.notify_waiters();
            }
        });
        let tab = Tab {
            cdp,
            session,
            target,
            track,
            wake,
            watcher,
        };
        // Sent at once and answered in order: one round trip, not eight.
        let mut setup: Vec<(&str, Value)> = [
            "Page.enable",
            "Network.enable",
            "Runtime.enable",
            "Inspector.enable",
        ]
        .iter()
        .map(|m| (*m, json!({})))
        .collect();
        if bypass_workers {
            setup.push(("Network.setBypassServiceWorker", json!({"bypass": true})));
        }
        setup.push(("Target.setAutoAttach", auto_attach()));
        setup.push((
            "Emulation.setDeviceMetricsOverride",
            json!({"width": VIEWPORT.0, "height": VIEWPORT.1, "deviceScaleFactor": 1, "mobile": false}),
        ));
        for s in init {
            setup.push((
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": s}),
            ));
        }
        futures_util::future::try_join_all(setup.into_iter().map(|(m, p)| tab.call(m, p))).await?;
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
        // No loader: a same-document navigation (another fragment of the
        // page a kept tab shows, which had fired its load event). No load
        // event comes for it.
        if r.get("loaderId").is_none() {
            return Ok(true);
        }
        let cdp = self.cdp;
        let got = self
            .wait(bound, |t| {
                if t.crashed {
                    Look::Done(Err(BrowserError::Crashed))
                } else if t.loaded {
                    Look::Done(Ok(true))
                } else if cdp.is_closed() {
                    Look::Done(Err(BrowserError::Gone))
                } else {
                    Look::Until(None)
                }
            })
            .await;
        match got {
            Some(r) => r,
            None if self.track.lock().is_err() => Err(BrowserError::Gone),
            None => Ok(false),
        }
    }

    /// Waits until no request has been in flight for `quiet`, at most
    /// `bound`; true when the network went idle. Quiet is counted from
    /// the last request that started or ended, or from
    /// [`Tab::mark_activity`]. A request in flight when the tab fell
    /// behind its events counts until it ends or gives no sign for
    /// [`UNSURE_QUIET`]; then it is taken as ended, and counted
    /// ([`Tab::take_assumed_ended`]).
    pub async fn network_idle(&self, quiet: Duration, bound: Duration) -> bool {
        let idle = self
            .wait(bound, |t| {
                if t.crashed {
                    return Look::Done(false);
                }
                if !t.inflight.is_empty() {
                    return Look::Until(None);
                }
                if let Some(last) = t.unsure.values().max()
                    && last.elapsed() < UNSURE_QUIET
                {
                    return Look::Until(Some(*last + UNSURE_QUIET));
                }
                match t.last_change {
                    Some(l) if l.elapsed() < quiet => Look::Until(Some(l + quiet)),
                    _ => Look::Done(true),
                }
            })
            .await;
        if idle == Some(true)
            && let Ok(mut t) = self.track.lock()
            && !t.unsure.is_empty()
        {
            let n = t.unsure.len() as u64;
            t.unsure.clear();
            t.assumed_ended += n;
            tracing::debug!(target: "warchest_browser::timing", "{n} request(s) in flight when the tab fell behind taken as ended");
        }
        idle.unwrap_or_else(|| {
            let (n, busy) = self.in_flight(8);
            tracing::debug!(target: "warchest_browser::timing", "not idle after {bound:?}: {n} in flight, {busy:?}");
            false
        })
    }

    /// How many requests are in flight, and the URLs of the first `max`
    /// of them (in URL order; `?` for one whose URL was not kept). Those
    /// whose end may have been lost ([`Tab::network_idle`]) count.
    pub fn in_flight(&self, max: usize) -> (usize, Vec<String>) {
        let Ok(t) = self.track.lock() else {
            return (0, Vec::new());
        };
        let mut urls: Vec<&str> = t
            .inflight
            .iter()
            .chain(t.unsure.keys())
            .map(|id| t.urls.get(id).map_or("?", String::as_str))
            .collect();
        urls.sort_unstable();
        let first = urls.iter().take(max).map(|u| u.to_string()).collect();
        (urls.len(), first)
    }

    /// Requests in flight when the tab fell behind its events that
    /// [`Tab::network_idle`] took as ended since this was last asked,
    /// giving no sign for [`UNSURE_QUIET`] (their end may have been among
    /// the events lost): each is told once.
    pub fn take_assumed_ended(&self) -> u64 {
        self.track
            .lock()
            .map_or(0, |mut t| std::mem::take(&mut t.assumed_ended))
    }

    /// Counts the network's quiet from now: after a behaviour that may
    /// start requests a moment later (a scroll, media started), so that
    /// [`Tab::network_idle`] waits for them.
    pub fn mark_activity(&self) {
        if let Ok(mut t) = self.track.lock() {
            t.last_change = Some(Instant::now());
        }
    }

    /// Waits at most `bound` for `look` to be done, looking again at each
    /// event the tab's tracker takes, at the time `look` asks, and at
    /// least every [`LOOK_AGAIN`]. None: the bound passed (or the tracker
    /// is gone).
    async fn wait<T>(&self, bound: Duration, mut look: impl FnMut(&Track) -> Look<T>) -> Option<T> {
        let end = Instant::now() + bound;
        loop {
            // Registered before looking: an event between the look and
            // the sleep still wakes it.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let next = match look(&*self.track.lock().ok()?) {
                Look::Done(v) => return Some(v),
                Look::Until(at) => at,
            };
            let now = Instant::now();
            if now >= end {
                return None;
            }
            let at = next.unwrap_or(end).min(end).min(now + LOOK_AGAIN);
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(at.into()) => {}
            }
        }
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
    /// [`MAX_RESPONSES`] counted, and whether events were lost (a tracker
    /// that fell behind, or targets past the most a tab follows).
    pub fn seen(&self) -> (Vec<Response>, Vec<Failure>, u64, bool) {
        match self.track.lock() {
            Ok(t) => (
                t.responses.clone(),
                t.failures.clone(),
                t.dropped,
                t.lagged || t.unfollowed > 0,
            ),
            Err(_) => (Vec::new(), Vec::new(), 0, true),
        }
    }

    /// The http(s) URLs the page asked for so far, answered or still in
    /// flight, each hop of a redirect among them (at most
    /// [`MAX_RESPONSES`] asked for), and those it was answered from.
    pub fn requested(&self) -> HashSet<String> {
        match self.track.lock() {
            Ok(t) => requested(&t),
            Err(_) => HashSet::new(),
        }
    }

    /// The media type of the document the tab's main frame shows, as
    /// Chromium took it (none: not known, as after a same-document
    /// navigation, which commits no new document).
    pub fn document_type(&self) -> Option<String> {
        self.track.lock().ok().and_then(|t| t.document_type.clone())
    }

    /// Keeps the tab open for another page ([`Tab::resume`]): its parts,
    /// free of the borrow of the connection.
    pub fn keep(self) -> Kept {
        Kept {
            session: self.session,
            target: self.target,
            track: self.track,
            wake: self.wake,
            watcher: Some(self.watcher),
        }
    }

    /// A kept tab of `cdp`'s browser, its tracker emptied for a new page.
    pub fn resume(cdp: &'a Cdp, mut k: Kept) -> Tab<'a> {
        if let Ok(mut t) = k.track.lock() {
            *t = Track::default();
        }
        let watcher = k.watcher.take().unwrap_or_else(|| tokio::spawn(async {}));
        Tab {
            cdp,
            session: std::mem::take(&mut k.session),
            target: std::mem::take(&mut k.target),
            track: k.track.clone(),
            wake: k.wake.clone(),
            watcher,
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

/// A tab kept open between pages, without its browser's connection
/// ([`Tab::keep`], [`Tab::resume`]). Dropped, it stops tracking (the tab
/// itself closes with its browser).
pub struct Kept {
    session: String,
    target: String,
    track: Arc<Mutex<Track>>,
    wake: Arc<Notify>,
    watcher: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(w) = self.watcher.take() {
            w.abort();
        }
    }
}

/// [`Tab::requested`] of a tab's tracker.
fn requested(t: &Track) -> HashSet<String> {
    t.asked
        .iter()
        .cloned()
        .chain(t.responses.iter().map(|r| r.url.clone()))
        .collect()
}

fn observe(t: &mut Track, method: &str, p: &Value) {
    let id = || p["requestId"].as_str().unwrap_or("").to_string();
    // A request whose end may have been lost gives a sign of life (its
    // response, its data, a redirect's next hop).
    if !t.unsure.is_empty()
        && let Some(at) = p["requestId"].as_str().and_then(|i| t.unsure.get_mut(i))
    {
        *at = Instant::now();
    }
    match method {
        "Network.requestWillBeSent" => {
            let url = p
                .pointer("/request/url")
                .and_then(Value::as_str)
                .unwrap_or("");
            if url.starts_with("http") {
                t.unsure.remove(&id());
                t.inflight.insert(id());
                if t.urls.len() < MAX_RESPONSES {
                    t.urls.insert(id(), url.to_string());
                }
                if t.asked.len() < MAX_RESPONSES {
                    t.asked.insert(url.to_string());
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
            t.unsure.remove(&id());
            t.last_change = Some(Instant::now());
        }
        "Network.loadingFailed" => {
            let rid = id();
            t.inflight.remove(&rid);
            t.unsure.remove(&rid);
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
        // The main frame (the one without a parent) committed a document.
        "Page.frameNavigated" if p.pointer("/frame/parentId").is_none() => {
            t.document_type = p
                .pointer("/frame/mimeType")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        "Page.loadEventFired" => t.loaded = true,
        "Inspector.targetCrashed" => t.crashed = true,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{Track, observe, requested};
    use serde_json::json;

    /// A redirect's hops share their request id: every URL asked for is
    /// kept, the first hop's too.
    #[test]
    fn requested_keeps_every_hop_of_a_redirect() {
        let mut t = Track::default();
        let sent = |url: &str| json!({"requestId": "7", "request": {"url": url}});
        observe(
            &mut t,
            "Network.requestWillBeSent",
            &sent("http://a.test/img?id=1"),
        );
        observe(
            &mut t,
            "Network.requestWillBeSent",
            &sent("http://a.test/cdn/1.jpg"),
        );
        observe(
            &mut t,
            "Network.requestWillBeSent",
            &sent("data:image/png,x"),
        );
        let r = requested(&t);
        assert!(r.contains("http://a.test/img?id=1"), "{r:?}");
        assert!(r.contains("http://a.test/cdn/1.jpg"), "{r:?}");
        assert_eq!(r.len(), 2, "{r:?}");
    }

    /// The document's type is the main frame's; a frame inside the page
    /// (an iframe, which has a parent) does not change it.
    #[test]
    fn the_document_type_is_the_main_frames() {
        let mut t = Track::default();
        let nav = |f: serde_json::Value| json!({ "frame": f });
        observe(
            &mut t,
            "Page.frameNavigated",
            &nav(json!({"id": "M", "mimeType": "image/png"})),
        );
        observe(
            &mut t,
            "Page.frameNavigated",
            &nav(json!({"id": "F", "parentId": "M", "mimeType": "text/html"})),
        );
        assert_eq!(t.document_type.as_deref(), Some("image/png"));
    }
}
