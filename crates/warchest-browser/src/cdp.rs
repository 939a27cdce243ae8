//! A small Chrome DevTools Protocol client: JSON messages over the
//! browser's WebSocket (tokio-tungstenite), commands matched to their
//! answers by id, events fanned out to subscribers. docs/crawl.md
//! ("Browser capture") says why this and not chromiumoxide: warchest sends
//! a few dozen of CDP's methods, and a typed client of the whole protocol
//! costs the workspace's test build minutes.
//!
//! Bounded: every command waits at most its timeout; events go through a
//! broadcast channel of [`EVENT_BUFFER`] (a subscriber that falls behind
//! loses the oldest, and is told); a message larger than
//! [`MAX_MESSAGE`] closes the connection. A target attached paused at its
//! start is also kept aside until a subscriber takes it ([`Sender::take`]),
//! so that one whose event a subscriber lost can still be found and let
//! run ([`Sender::take_lost`]); at most [`MAX_PAUSED`] are kept.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::BrowserError;

/// Events queued for each subscriber before the oldest are dropped.
pub const EVENT_BUFFER: usize = 8192;

/// The most targets attached paused and not yet taken kept aside
/// ([`Sender::take_lost`]); past it, one whose event is lost cannot be
/// found again.
pub const MAX_PAUSED: usize = 65_536;

/// The largest message taken from the browser (a full-page screenshot in
/// base64 is the largest there is).
pub const MAX_MESSAGE: usize = 256 << 20;

/// A CDP event: its method, parameters and the session it came from
/// (`None`: the browser's own).
#[derive(Debug, Clone)]
pub struct Event {
    /// `Network.requestWillBeSent`, ...
    pub method: String,
    /// The event's parameters.
    pub params: Value,
    /// The flat-mode session id of the target it came from.
    pub session: Option<String>,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, BrowserError>>>>>;

/// A target attached paused at its start (`Target.attachedToTarget` with
/// `waitingForDebugger`), as kept aside for [`Sender::take_lost`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// Its flat-mode session.
    pub session: String,
    /// The session it was attached under (`""`: the browser's own).
    pub parent: String,
    /// Its type (`iframe`, `worker`, `shared_worker`, ...).
    pub kind: String,
}

/// The targets attached paused that no subscriber has taken yet, and
/// those taken by [`Sender::take_lost`] whose event may still come.
#[derive(Default)]
struct Paused {
    waiting: HashMap<String, Attached>,
    found: HashSet<String>,
}

impl Paused {
    /// What the reading task does with each event, before subscribers see
    /// it: a target attached paused is kept aside, one detached forgotten.
    fn saw(&mut self, method: &str, params: &Value, session: Option<&str>) {
        let Some(child) = params["sessionId"].as_str() else {
            return;
        };
        match method {
            "Target.attachedToTarget"
                if params["waitingForDebugger"] == Value::Bool(true)
                    && self.waiting.len() < MAX_PAUSED =>
            {
                self.waiting.insert(
                    child.to_string(),
                    Attached {
                        session: child.to_string(),
                        parent: session.unwrap_or_default().to_string(),
                        kind: params
                            .pointer("/targetInfo/type")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                    },
                );
            }
            "Target.detachedFromTarget" => {
                self.waiting.remove(child);
                self.found.remove(child);
            }
            _ => {}
        }
    }

    fn take(&mut self, session: &str) -> bool {
        self.waiting.remove(session);
        !self.found.remove(session)
    }

    fn take_lost(&mut self, parents: &HashSet<String>) -> Vec<Attached> {
        let lost: Vec<String> = self
            .waiting
            .values()
            .filter(|a| parents.contains(&a.parent))
            .map(|a| a.session.clone())
            .collect();
        let mut out = Vec::with_capacity(lost.len());
        for s in lost {
            if let Some(a) = self.waiting.remove(&s) {
                self.found.insert(s);
                out.push(a);
            }
        }
        out
    }
}

/// A connection to a browser's DevTools endpoint.
pub struct Cdp {
    out: mpsc::Sender<Message>,
    pending: Pending,
    events: broadcast::Sender<Event>,
    next: Arc<AtomicU64>,
    closed: Arc<AtomicBool>,
    paused: Arc<Mutex<Paused>>,
}

/// Sends commands to a [`Cdp`]'s browser without waiting for their
/// answers (which are dropped): for a task that answers events while
/// nobody awaits, such as resuming a target paused at its start.
#[derive(Clone)]
pub struct Sender {
    out: mpsc::Sender<Message>,
    next: Arc<AtomicU64>,
    paused: Arc<Mutex<Paused>>,
}

impl Sender {
    /// Sends `method` with `params` to the target of `session` (the
    /// browser's own with `None`); commands to one session are carried
    /// out in the order sent.
    ///
    /// # Errors
    /// The connection is gone.
    pub async fn send(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<(), BrowserError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.out
            .send(command(id, method, params, session))
            .await
            .map_err(|_| BrowserError::Gone)
    }

    /// Takes the target of `session`, attached paused, as its
    /// `Target.attachedToTarget` event comes to a subscriber: true when it
    /// is this subscriber's to set up and let run; false when
    /// [`Sender::take_lost`] already gave it out (the event came after a
    /// lag that did not lose it).
    pub fn take(&self, session: &str) -> bool {
        self.paused.lock().map_or(true, |mut p| p.take(session))
    }

    /// After a subscriber lagged: the targets attached paused under any of
    /// `parents` that no subscriber has taken, since their events may be
    /// among those lost. Each is given out once (its event, if it still
    /// comes, is then refused by [`Sender::take`]). A target still paused
    /// runs no code, so setting it up now is as good as at its event.
    pub fn take_lost(&self, parents: &HashSet<String>) -> Vec<Attached> {
        self.paused
            .lock()
            .map(|mut p| p.take_lost(parents))
            .unwrap_or_default()
    }
}

/// A command's message: its id, method and parameters, to `session`'s
/// target (the browser's own with `None`).
fn command(id: u64, method: &str, params: Value, session: Option<&str>) -> Message {
    let mut msg = json!({"id": id, "method": method, "params": params});
    if let Some(s) = session {
        msg["sessionId"] = json!(s);
    }
    Message::text(msg.to_string())
}

impl Cdp {
    /// Connects to `ws_url` (`ws://127.0.0.1:PORT/devtools/browser/ID`),
    /// queueing at most `event_buffer` events for each subscriber
    /// ([`EVENT_BUFFER`] unless a test wants subscribers to fall behind).
    ///
    /// # Errors
    /// The WebSocket cannot be opened within `timeout`.
    pub async fn connect(
        ws_url: &str,
        timeout: Duration,
        event_buffer: usize,
    ) -> Result<Cdp, BrowserError> {
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(MAX_MESSAGE);
        config.max_frame_size = Some(MAX_MESSAGE);
        let (ws, _) = tokio::time::timeout(
            timeout,
            tokio_tungstenite::connect_async_with_config(ws_url, Some(config), false),
        )
        .await
        .map_err(|_| BrowserError::Cdp(format!("{ws_url}: no WebSocket within {timeout:?}")))?
        .map_err(|e| BrowserError::Cdp(format!("{ws_url}: {e}")))?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut rx) = mpsc::channel::<Message>(256);
        let pending: Pending = Arc::default();
        let (events, _) = broadcast::channel(event_buffer.max(1));
        let closed = Arc::new(AtomicBool::new(false));
        let paused: Arc<Mutex<Paused>> = Arc::default();
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let (p, ev, c, held) = (
            pending.clone(),
            events.clone(),
            closed.clone(),
            paused.clone(),
        );
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.next().await {
                let text = match m {
                    Message::Text(t) => t,
                    Message::Close(_) => break,
                    _ => continue,
                };
                let Ok(mut v) = serde_json::from_str::<Value>(text.as_str()) else {
                    tracing::debug!("CDP: a message that is not JSON");
                    continue;
                };
                if let Some(id) = v.get("id").and_then(Value::as_u64) {
                    let waiter = p.lock().ok().and_then(|mut m| m.remove(&id));
                    if let Some(w) = waiter {
                        let r = match v.get("error") {
                            Some(e) => Err(BrowserError::Cdp(
                                e.get("message")
                                    .and_then(Value::as_str)
                                    .unwrap_or("error")
                                    .to_string(),
                            )),
                            None => Ok(v.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
                        };
                        let _ = w.send(r);
                    }
                } else if let Some(method) = v.get("method").and_then(Value::as_str) {
                    let e = Event {
                        method: method.to_string(),
                        session: v
                            .get("sessionId")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        params: v.get_mut("params").map(Value::take).unwrap_or(Value::Null),
                    };
                    if e.method.starts_with("Target.")
                        && let Ok(mut h) = held.lock()
                    {
                        h.saw(&e.method, &e.params, e.session.as_deref());
                    }
                    let _ = ev.send(e);
                }
            }
            c.store(true, Ordering::SeqCst);
            // Whoever still waits learns the browser is gone.
            if let Ok(mut m) = p.lock() {
                m.clear();
            }
        });
        Ok(Cdp {
            out,
            pending,
            events,
            next: Arc::new(AtomicU64::new(1)),
            closed,
            paused,
        })
    }

    /// True once the browser closed the connection (it exited or crashed).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// A [`Sender`] of commands whose answers nobody waits for.
    pub fn sender(&self) -> Sender {
        Sender {
            out: self.out.clone(),
            next: self.next.clone(),
            paused: self.paused.clone(),
        }
    }

    /// A receiver of every event from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Sends `method` with `params` (to the target of `session`, if given)
    /// and waits at most `timeout` for its result.
    ///
    /// # Errors
    /// The browser answered with an error, did not answer in time, or is
    /// gone.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, BrowserError> {
        if self.is_closed() {
            return Err(BrowserError::Gone);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut m) = self.pending.lock() {
            m.insert(id, tx);
        }
        let sent = self.out.send(command(id, method, params, session)).await;
        if sent.is_err() {
            self.forget(id);
            return Err(BrowserError::Gone);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r.map_err(|e| match e {
                BrowserError::Cdp(m) => BrowserError::Cdp(format!("{method}: {m}")),
                e => e,
            }),
            Ok(Err(_)) => Err(BrowserError::Gone),
            Err(_) => {
                self.forget(id);
                Err(BrowserError::Timeout(format!("{method} ({timeout:?})")))
            }
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut m) = self.pending.lock() {
            m.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `child` (of `kind`) attached under `parent`, paused or not.
    fn attach(p: &mut Paused, child: &str, kind: &str, waiting: bool, parent: Option<&str>) {
        let params = json!({"sessionId": child, "waitingForDebugger": waiting,
                            "targetInfo": {"type": kind}});
        p.saw("Target.attachedToTarget", &params, parent);
    }

    #[test]
    fn a_paused_target_is_given_out_once() {
        let mut p = Paused::default();
        attach(&mut p, "w1", "worker", true, Some("tab"));
        attach(&mut p, "f1", "iframe", true, Some("tab"));
        attach(&mut p, "o1", "worker", true, Some("other"));
        // Not paused, or the browser's own: not kept under a tab.
        attach(&mut p, "n1", "worker", false, Some("tab"));
        attach(&mut p, "s1", "shared_worker", true, None);
        // Its event came: this subscriber's.
        assert!(p.take("w1"));
        // A lag: what is left under the tab's sessions, once.
        let tab: HashSet<String> = ["tab".to_string()].into();
        let lost = p.take_lost(&tab);
        assert_eq!(
            lost,
            [Attached {
                session: "f1".into(),
                parent: "tab".into(),
                kind: "iframe".into()
            }]
        );
        assert!(p.take_lost(&tab).is_empty());
        // Its event still came, after the lag: already given out.
        assert!(!p.take("f1"));
        // And only once refused: the set does not grow.
        assert!(p.found.is_empty());
        // Another tab's, and the browser's shared worker, are theirs.
        let browser: HashSet<String> = [String::new()].into();
        assert_eq!(p.take_lost(&browser)[0].session, "s1");
        assert!(p.take("o1"));
        assert!(p.waiting.is_empty());
    }

    #[test]
    fn a_detached_target_is_forgotten_and_the_kept_are_bounded() {
        let mut p = Paused::default();
        attach(&mut p, "w1", "worker", true, Some("tab"));
        attach(&mut p, "w2", "worker", true, Some("tab"));
        let tab: HashSet<String> = ["tab".to_string()].into();
        assert_eq!(p.take_lost(&tab).len(), 2);
        let detach = |p: &mut Paused, child: &str| {
            p.saw(
                "Target.detachedFromTarget",
                &json!({"sessionId": child}),
                Some("tab"),
            );
        };
        detach(&mut p, "w1");
        attach(&mut p, "w3", "worker", true, Some("tab"));
        detach(&mut p, "w3");
        assert!(p.waiting.is_empty());
        assert_eq!(p.found.len(), 1);
        for i in 0..MAX_PAUSED + 10 {
            attach(&mut p, &format!("x{i}"), "worker", true, Some("tab"));
        }
        assert_eq!(p.waiting.len(), MAX_PAUSED);
    }
}
