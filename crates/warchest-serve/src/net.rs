//! The network side of `serve`: hyper (HTTP/1.1 and h2c) on tokio, one task
//! a connection, with the limits a public server needs; the request
//! handlers (blocking: they read archive files) run on tokio's blocking
//! threads and stream their answers through a bounded channel.
//!
//! Limits (docs/serve.md, "Server"):
//! - connections: at most [`Limits::max_connections`] at once (past it,
//!   accepting waits and the kernel's backlog holds the rest);
//! - a request head: at most [`exchange::MAX_HEAD`] bytes (431) and
//!   [`exchange::MAX_FIELDS`] fields (431), arriving within [`HEAD_TIMEOUT`]
//!   however slowly it trickles; the same timeout closes an idle
//!   keep-alive connection;
//! - a request body: at most [`exchange::MAX_BODY`] bytes (413), read within
//!   [`BODY_TIMEOUT`] (408), then dropped (the server answers GET and HEAD);
//! - a connection on which nothing moves for [`STALL`] while a response is
//!   under way (a client that stopped reading) is dropped, which stops its
//!   handler;
//! - handlers: at most [`Limits::handlers`] at once (the others wait);
//! - a handler that panics answers 500 (if nothing was sent yet) and is
//!   logged; the server goes on.
//!
//! Shutdown (ctrl-c, SIGTERM or the [`super::StopHandle`]): listeners close,
//! idle connections close, requests under way finish, for at most
//! [`GRACE`].

use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Body as _;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use warchest_net::{Body, Watched, now_ms};

use super::exchange::{self, Chunk, Exchange, Head, Origin, Request, Responder};
use super::{App, pages, text_html, text_plain};

/// How long a request head may take to arrive, and how long an idle
/// keep-alive connection is kept.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request body may take to arrive.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection may make no progress at all (nothing read, nothing
/// written) before it is dropped, a response under way or not.
pub const STALL: Duration = Duration::from_secs(60);
/// How long shutdown waits for requests under way.
pub const GRACE: Duration = Duration::from_secs(10);
/// Chunks of 64 KiB queued between a handler and its connection.
const QUEUED_CHUNKS: usize = 4;

/// The limits of a running server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Requests handled at once (each on a blocking thread).
    pub handlers: usize,
}

/// A listener and which origin it is.
pub struct Listener {
    /// The bound socket (non-blocking).
    pub socket: std::net::TcpListener,
    /// It is the replay origin's.
    pub replay: bool,
}

/// Serves `listeners` until `stop` turns true (or ctrl-c / SIGTERM).
///
/// # Errors
/// The runtime or the listeners cannot be set up.
pub fn run(
    app: Arc<App>,
    listeners: Vec<Listener>,
    limits: Limits,
    stop: watch::Sender<bool>,
) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("serve")
        .max_blocking_threads(limits.handlers.max(1))
        .build()?;
    rt.block_on(serve(app, listeners, limits, stop))
}

async fn serve(
    app: Arc<App>,
    listeners: Vec<Listener>,
    limits: Limits,
    stop: watch::Sender<bool>,
) -> io::Result<()> {
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(exchange::MAX_HEAD)
        .max_headers(exchange::MAX_FIELDS)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(100)
        .max_header_list_size(exchange::MAX_HEAD as u32)
        .keep_alive_interval(Some(Duration::from_secs(20)))
        .keep_alive_timeout(Duration::from_secs(20));
    let builder = Arc::new(builder);
    let conns = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let handlers = Arc::new(Semaphore::new(limits.handlers.max(1)));
    // Signals stop the server as the handle does.
    {
        let stop = stop.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("stopping: finishing requests under way");
            let _ = stop.send(true);
        });
    }
    let mut tasks = Vec::new();
    for l in listeners {
        let socket = tokio::net::TcpListener::from_std(l.socket)?;
        let ctx = ConnCtx {
            app: app.clone(),
            builder: builder.clone(),
            handlers: handlers.clone(),
            replay: l.replay,
        };
        let stops = stop.subscribe();
        tasks.push(tokio::spawn(warchest_net::accept_loop(
            socket,
            conns.clone(),
            stop.subscribe(),
            "serve",
            move |stream, peer, permit| {
                let ctx = ctx.clone();
                let stop = stops.clone();
                tokio::spawn(async move {
                    serve_connection(ctx, stream, peer, stop).await;
                    drop(permit);
                });
            },
        )));
    }
    for t in tasks {
        let _ = t.await;
    }
    // Every connection holds a permit: all back means all closed.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    if tokio::time::timeout(GRACE, conns.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(
            "stopped with {} connections still open after {} s",
            limits.max_connections.max(1) - conns.available_permits(),
            GRACE.as_secs()
        );
    }
    Ok(())
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// What every connection of a listener shares.
#[derive(Clone)]
struct ConnCtx {
    app: Arc<App>,
    builder: Arc<hyper_util::server::conn::auto::Builder<TokioExecutor>>,
    handlers: Arc<Semaphore>,
    replay: bool,
}

async fn serve_connection(
    ctx: ConnCtx,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) {
    let epoch = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let local = stream.local_addr().ok();
    let io = Watched::new(stream, last.clone(), epoch);
    let svc_ctx = ctx.clone();
    let service = hyper::service::service_fn(move |req| {
        let ctx = svc_ctx.clone();
        async move { Ok::<_, Infallible>(respond(ctx, peer.ip(), local, req).await) }
    });
    let conn = ctx.builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut closing = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!("connection from {peer}: {e}");
                }
                break;
            }
            _ = stop.changed(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            _ = tick.tick() => {
                let quiet = Duration::from_millis(
                    now_ms(epoch).saturating_sub(last.load(Ordering::Relaxed)),
                );
                if quiet > STALL {
                    tracing::info!("connection from {peer}: nothing moved for {} s, dropped", STALL.as_secs());
                    break;
                }
                // HTTP/1.1 idle connections are closed by the head timeout;
                // this closes idle HTTP/2 ones (and lets a request under way
                // finish first).
                if quiet > HEAD_TIMEOUT && !closing {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    }
}

/// A response made here, not by a handler.
fn simple(status: u16, msg: &str, close: bool) -> hyper::Response<Body> {
    let head = Head {
        status,
        reason: exchange::reason(status).into(),
        headers: text_plain(),
        body: Some(msg.as_bytes().to_vec()),
        close,
    };
    to_response(head, None, false)
}

/// The name of the host a request names (Host, or the authority of an
/// HTTP/2 request), port excluded, when it is made of host-name characters.
fn host_name(host: &str) -> Option<&str> {
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next()?
    } else {
        host.split(':').next()?
    };
    (!name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b)))
    .then_some(name)
}

/// The origin a request came to, from its `Host` and a proxy's
/// `X-Forwarded-Proto` (names lower-case): [`origin`].
fn request_origin(
    app: &App,
    replay_listener: bool,
    headers: &[(String, String)],
    local: Option<SocketAddr>,
) -> Origin {
    let value = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let proto = match value("x-forwarded-proto") {
        Some(p) if p.trim().eq_ignore_ascii_case("https") => "https",
        _ => "http",
    };
    origin(app, replay_listener, value("host"), local, proto)
}

/// The origins as seen by the client of a request with this Host.
fn origin(
    app: &App,
    replay_listener: bool,
    host: Option<&str>,
    local: Option<SocketAddr>,
    proto: &str,
) -> Origin {
    let local_name = match local.map(|a| a.ip()) {
        Some(IpAddr::V6(v6)) => format!("[{v6}]"),
        Some(ip) => ip.to_string(),
        None => "localhost".into(),
    };
    let name = host
        .and_then(host_name)
        .unwrap_or(&local_name)
        .to_ascii_lowercase();
    let site = &app.site;
    match &site.replay_host {
        Some(rh) if !replay_listener => {
            let replay = name == *rh;
            let ui_name = if replay {
                site.ui_host.clone().unwrap_or_else(|| "localhost".into())
            } else {
                host.unwrap_or(&name).to_ascii_lowercase()
            };
            Origin {
                replay,
                ui: format!("{proto}://{ui_name}"),
                replay_base: format!("{proto}://{rh}"),
            }
        }
        _ => Origin {
            replay: replay_listener,
            ui: format!("http://{name}:{}", site.ui_port),
            replay_base: match site.replay_port {
                Some(p) => format!("http://{name}:{p}"),
                None => format!("http://{name}:{}", site.ui_port),
            },
        },
    }
}

async fn respond(
    ctx: ConnCtx,
    peer: IpAddr,
    local: Option<SocketAddr>,
    req: hyper::Request<Incoming>,
) -> hyper::Response<Body> {
    let (parts, body) = req.into_parts();
    let http10 = parts.version == hyper::Version::HTTP_10;
    let h2 = parts.version == hyper::Version::HTTP_2;
    let mut headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    if !headers.iter().any(|(n, _)| n == "host")
        && let Some(a) = parts.uri.authority()
    {
        headers.push(("host".into(), a.as_str().to_string()));
    }
    let target = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    if !target.starts_with('/') {
        return simple(400, "bad request target\n", true);
    }
    // Bodies are bounded, then dropped: the server answers GET and HEAD.
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > exchange::MAX_BODY) {
        return simple(413, "request body too large\n", true);
    }
    if !body.is_end_stream() {
        let limited = http_body_util::Limited::new(body, exchange::MAX_BODY as usize);
        match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => return simple(413, "request body too large\n", true),
            Err(_) => return simple(408, "request body too slow\n", true),
        }
    }
    let origin = request_origin(&ctx.app, ctx.replay, &headers, local);
    let req = Request {
        method: parts.method.as_str().to_string(),
        target,
        http10,
        headers,
        peer: Some(peer),
        origin,
    };
    // At most `handlers` at once; the others wait here, costing a task.
    let Ok(permit) = ctx.handlers.clone().acquire_owned().await else {
        return simple(503, "shutting down\n", true);
    };
    let (htx, hrx) = oneshot::channel();
    let (btx, brx) = mpsc::channel(QUEUED_CHUNKS);
    let app = ctx.app.clone();
    let head_only = req.method == "HEAD";
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut ex = Exchange::new(htx, btx);
        run_handler(&app, &req, &mut ex);
    });
    match hrx.await {
        Ok(head) => {
            let stream = head.body.is_none().then_some(brx);
            to_response(head, stream, h2 || http10 || head_only)
        }
        Err(_) => {
            // No head: the blocking task could not run at all.
            let e = job.await.err().map(|e| e.to_string()).unwrap_or_default();
            tracing::error!("request handler did not answer: {e}");
            simple(500, "internal error\n", true)
        }
    }
}

/// Runs the handler for one request, answers 500 when it fails (or
/// panics) before answering, and writes the access log line.
fn run_handler(app: &App, req: &Request, ex: &mut Exchange) {
    run_handler_with(app, req, ex, true);
}

/// [`run_handler`], with a panic caught (the server) or let through
/// (`Server::answer`: tests and fuzzing must see it).
fn run_handler_with(app: &App, req: &Request, ex: &mut Exchange, catch: bool) {
    let mut resp = Responder::new(ex, req);
    let mut run = || {
        let r = super::handle(app, req, &mut resp);
        (r, resp.status, resp.source)
    };
    let result = if catch {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
    } else {
        Ok(run())
    };
    let (status, source, error) = match result {
        Ok((Ok(()), status, source)) => (status, source, None),
        Ok((Err(e), status, source)) => (status, source, Some(e.to_string())),
        Err(panic) => {
            let msg = warchest_net::panic_message(panic.as_ref());
            tracing::error!(
                "request handler panicked: {} {}: {msg}",
                req.method,
                req.target
            );
            (None, "error", Some(format!("internal error: {msg}")))
        }
    };
    let status = match (&error, status, ex.head_sent()) {
        (Some(e), _, false) => {
            let mut resp = Responder::new(ex, req);
            let body = pages::error_page(500, e);
            let _ = resp.send(500, &text_html(), body.as_bytes());
            tracing::warn!("{} {}: {e}", req.method, req.target);
            Some(500)
        }
        (Some(e), status, true) => {
            // The head was out: only cutting the response tells the client.
            tracing::warn!("{} {}: {e} (response cut)", req.method, req.target);
            tracing::info!(
                "access: {} {} {} from={source} cut",
                req.method,
                req.target,
                status.unwrap_or(0)
            );
            return;
        }
        (None, status, _) => status,
    };
    tracing::info!(
        "access: {} {} {} from={source}",
        req.method,
        req.target,
        status.unwrap_or(0)
    );
}

/// One request answered in process (`Server::answer`): the request as
/// the connection's task makes it from hyper's (names lower-case, `host`
/// deciding the origin), answered on a thread of its own as on a blocking
/// thread, its streamed body read here up to `max_body` bytes (then the
/// channel is dropped, as a client going away drops it).
pub(crate) fn answer(
    app: &App,
    to_replay: bool,
    local: Option<SocketAddr>,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    max_body: usize,
) -> super::Answer {
    // A HEAD answer has no body, whoever answers (hyper, for the server).
    let whole = |status: u16, body: &str| super::Answer {
        status,
        headers: text_plain(),
        body: if method == "HEAD" {
            Vec::new()
        } else {
            body.as_bytes().to_vec()
        },
        cut: false,
    };
    // What hyper refuses before a handler sees it is refused here too, so
    // that a fuzzer finds only what a client can send: a method, target,
    // header name or value that is not HTTP's, a body too large.
    let target_ok = target.starts_with('/')
        && hyper::http::uri::PathAndQuery::try_from(target).is_ok_and(|p| p.as_str() == target);
    if !target_ok || hyper::Method::from_bytes(method.as_bytes()).is_err() {
        return whole(400, "bad request\n");
    }
    let mut lower = Vec::with_capacity(headers.len());
    for (n, v) in headers {
        let name = hyper::header::HeaderName::from_bytes(n.as_bytes());
        let value = hyper::header::HeaderValue::from_str(v);
        let (Ok(name), Ok(_)) = (name, value) else {
            return whole(400, "bad request\n");
        };
        lower.push((name.as_str().to_string(), (*v).to_string()));
    }
    let declared = lower
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > exchange::MAX_BODY) {
        return whole(413, "request body too large\n");
    }
    let headers = lower;
    let origin = request_origin(app, to_replay, &headers, local);
    let req = Request {
        method: method.to_string(),
        target: target.to_string(),
        http10: false,
        headers,
        peer: Some(IpAddr::from([127, 0, 0, 1])),
        origin,
    };
    let (htx, hrx) = oneshot::channel();
    let (btx, mut brx) = mpsc::channel(QUEUED_CHUNKS);
    std::thread::scope(|s| {
        let handler = s.spawn(|| {
            let mut ex = Exchange::new(htx, btx);
            run_handler_with(app, &req, &mut ex, false);
        });
        let answer = match hrx.blocking_recv() {
            Err(_) => whole(500, "the handler sent no answer\n"),
            Ok(head) => {
                let mut a = super::Answer {
                    status: head.status,
                    headers: head.headers,
                    body: Vec::new(),
                    cut: false,
                };
                // Whole or streamed, at most `max_body` bytes are kept.
                let keep = |a: &mut super::Answer, d: &[u8]| {
                    let room = max_body - a.body.len();
                    a.body.extend_from_slice(&d[..d.len().min(room)]);
                    a.cut |= d.len() > room;
                };
                match head.body {
                    Some(b) => keep(&mut a, &b),
                    None => loop {
                        match brx.blocking_recv() {
                            Some(Chunk::Data(d)) => {
                                keep(&mut a, &d);
                                if a.cut {
                                    break;
                                }
                            }
                            Some(Chunk::End) => break,
                            // A body the handler cut.
                            None => {
                                a.cut = true;
                                break;
                            }
                        }
                    },
                }
                a
            }
        };
        // A handler still writing finds the client gone and stops.
        drop(brx);
        if let Err(panic) = handler.join() {
            std::panic::resume_unwind(panic);
        }
        answer
    })
}

/// hyper's response for a handler's head (and body channel).
fn to_response(
    head: Head,
    stream: Option<mpsc::Receiver<Chunk>>,
    no_conn_header: bool,
) -> hyper::Response<Body> {
    let status = hyper::StatusCode::from_u16(head.status).unwrap_or_else(|_| {
        tracing::warn!("status {} cannot be sent: 502 instead", head.status);
        hyper::StatusCode::BAD_GATEWAY
    });
    let body = match (head.body, stream) {
        (Some(b), _) => Body::Full(Some(Bytes::from(b))),
        (None, Some(rx)) => Body::stream(rx),
        (None, None) => Body::Full(None),
    };
    let mut resp = hyper::Response::new(body);
    *resp.status_mut() = status;
    let map = resp.headers_mut();
    for (n, v) in &head.headers {
        let lower = n.to_ascii_lowercase();
        // Framing and the connection are hyper's business.
        if matches!(
            lower.as_str(),
            "transfer-encoding" | "connection" | "keep-alive"
        ) {
            continue;
        }
        // Values come from archived responses: no control characters.
        let v: Vec<u8> = v
            .bytes()
            .filter(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
            .collect();
        match (
            hyper::header::HeaderName::from_bytes(n.as_bytes()),
            hyper::header::HeaderValue::from_bytes(&v),
        ) {
            (Ok(n), Ok(v)) => {
                map.append(n, v);
            }
            _ => tracing::debug!("header {n:?} cannot be sent: left out"),
        }
    }
    if head.close && !no_conn_header {
        map.insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    if status.canonical_reason() != Some(head.reason.as_str())
        && !head.reason.is_empty()
        && let Ok(r) = hyper::ext::ReasonPhrase::try_from(head.reason.as_bytes())
    {
        resp.extensions_mut().insert(r);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        assert_eq!(host_name("a.example:8080"), Some("a.example"));
        assert_eq!(host_name("[::1]:80"), Some("[::1]"));
        assert_eq!(host_name("a b"), None);
        assert_eq!(host_name(":80"), None);
    }
}
