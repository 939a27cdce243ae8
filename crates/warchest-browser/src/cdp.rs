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
//! [`MAX_MESSAGE`] closes the connection.

use std::collections::HashMap;
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

/// A connection to a browser's DevTools endpoint.
pub struct Cdp {
    out: mpsc::Sender<Message>,
    pending: Pending,
    events: broadcast::Sender<Event>,
    next: Arc<AtomicU64>,
    closed: Arc<AtomicBool>,
}

/// Sends commands to a [`Cdp`]'s browser without waiting for their
/// answers (which are dropped): for a task that answers events while
/// nobody awaits, such as resuming a target paused at its start.
#[derive(Clone)]
pub struct Sender {
    out: mpsc::Sender<Message>,
    next: Arc<AtomicU64>,
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
    /// Connects to `ws_url` (`ws://127.0.0.1:PORT/devtools/browser/ID`).
    ///
    /// # Errors
    /// The WebSocket cannot be opened within `timeout`.
    pub async fn connect(ws_url: &str, timeout: Duration) -> Result<Cdp, BrowserError> {
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
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let closed = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let (p, ev, c) = (pending.clone(), events.clone(), closed.clone());
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
                    let _ = ev.send(Event {
                        method: method.to_string(),
                        session: v
                            .get("sessionId")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        params: v.get_mut("params").map(Value::take).unwrap_or(Value::Null),
                    });
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
