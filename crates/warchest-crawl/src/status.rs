//! `status-listen`: the crawl's state over HTTP while it runs, on hyper:
//! `GET /status` as JSON, `GET /metrics` in Prometheus' text format.
//! One connection at a time (a monitor polls; nothing here is heavy).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};

/// What the server answers: (JSON status, Prometheus metrics).
pub type Snapshot<'a> = &'a (dyn Fn() -> (String, String) + Sync);

/// Serves `snapshot` on `listener` until `done` is set.
///
/// # Errors
/// The runtime cannot start.
pub fn serve(
    listener: std::net::TcpListener,
    snapshot: Snapshot<'_>,
    done: &AtomicBool,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    rt.block_on(async {
        let l = tokio::net::TcpListener::from_std(listener)?;
        while !done.load(Ordering::Relaxed) {
            let Ok(accepted) = tokio::time::timeout(Duration::from_millis(200), l.accept()).await
            else {
                continue;
            };
            let Ok((stream, _)) = accepted else { continue };
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc =
                hyper::service::service_fn(|req: Request<hyper::body::Incoming>| async move {
                    let (json, metrics) = snapshot();
                    let (status, ct, body) = match req.uri().path() {
                        "/status" => (StatusCode::OK, "application/json", json),
                        "/metrics" => (StatusCode::OK, "text/plain; version=0.0.4", metrics),
                        _ => (
                            StatusCode::NOT_FOUND,
                            "text/plain",
                            "try /status or /metrics\n".into(),
                        ),
                    };
                    Response::builder()
                        .status(status)
                        .header("Content-Type", ct)
                        .body(Full::new(Bytes::from(body)))
                });
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, svc);
            // Bounded: a client that stalls is dropped.
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
        Ok::<(), std::io::Error>(())
    })
}

/// Binds `addr` (port 0: any free port).
///
/// # Errors
/// The address cannot be bound.
pub fn bind(addr: &str) -> std::io::Result<(std::net::TcpListener, SocketAddr)> {
    let l = std::net::TcpListener::bind(addr)?;
    let a = l.local_addr()?;
    Ok((l, a))
}
