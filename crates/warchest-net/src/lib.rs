//! The server plumbing that `warchest serve` (crate `warchest-serve`) and
//! `warchest proxy` (crate `warchest-capture`) share: the accept loop with
//! its connection limit, a socket that notes when bytes last moved (the
//! stall watch), and a response body that is whole or streamed from a
//! blocking handler.
//!
//! It is a crate of its own because the capture crate must not depend on
//! the replay crate (docs/architecture.md); it needs tokio and the
//! `http-body` trait only (hyper's own body trait).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

/// Accepts connections on `socket` until `stop` turns true, at most as many
/// open at once as `conns` has permits (past it, accepting waits and the
/// kernel's backlog holds the rest).
///
/// Each accepted stream (with `TCP_NODELAY` set) is handed to `spawn` with
/// its peer and its permit, which the connection must hold until it ends.
/// Accept errors (out of file descriptors, most often) are logged with
/// `label` and retried after 100 ms, not in a spin.
pub async fn accept_loop<F>(
    socket: TcpListener,
    conns: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
    label: &str,
    mut spawn: F,
) where
    F: FnMut(TcpStream, SocketAddr, OwnedSemaphorePermit),
{
    loop {
        if *stop.borrow() {
            break;
        }
        let permit = tokio::select! {
            p = conns.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = stop.changed() => break,
        };
        let accepted = tokio::select! {
            a = socket.accept() => a,
            _ = stop.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("{label}: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        spawn(stream, peer, permit);
    }
}

/// The message of a handler's panic (what `catch_unwind` returned), empty
/// when the payload is neither a `&str` nor a `String`.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Milliseconds since `epoch`, for a connection's last activity.
pub fn now_ms(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A stream that notes when bytes last moved, in milliseconds since an
/// epoch ([`now_ms`]), so that a watcher can drop a connection on which
/// nothing moves (a client that stopped reading or writing); and, when
/// asked ([`Watched::counting_reads`]), how many bytes were read from it.
/// A client's socket, or the TLS inside a tunnel through it.
pub struct Watched<I = TcpStream> {
    inner: I,
    last: Arc<AtomicU64>,
    epoch: Instant,
    read: Option<Arc<AtomicU64>>,
}

impl<I> Watched<I> {
    /// Wraps `inner`; every read or write of at least one byte stores
    /// `now_ms(epoch)` in `last`.
    pub fn new(inner: I, last: Arc<AtomicU64>, epoch: Instant) -> Self {
        Self {
            inner,
            last,
            epoch,
            read: None,
        }
    }

    /// Adds the bytes read to `read` as well.
    pub fn counting_reads(mut self, read: Arc<AtomicU64>) -> Self {
        self.read = Some(read);
        self
    }

    fn touch(&self) {
        self.last.store(now_ms(self.epoch), Ordering::Relaxed);
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        let n = buf.filled().len().saturating_sub(before);
        if n > 0 {
            this.touch();
            if let Some(read) = &this.read {
                read.fetch_add(n as u64, Ordering::SeqCst);
            }
        }
        r
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.touch();
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A piece of a streamed body, sent by a handler to its connection.
#[derive(Debug)]
pub enum Chunk {
    /// Bytes of the body.
    Data(Bytes),
    /// The body is whole. Without it, a closed channel cuts the response
    /// so that the client cannot take it for complete.
    End,
}

/// Where a streamed body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamState {
    /// Chunks may come.
    Open,
    /// The handler stopped without ending the body: the error is held
    /// back one poll, so that hyper sends what it has buffered first.
    Cutting,
    /// Ended, whole or cut.
    Done,
}

/// A response body: whole, or streamed from a handler through a bounded
/// channel.
pub enum Body {
    /// The whole body (`None` once sent).
    Full(Option<Bytes>),
    /// Chunks from a handler, and how far the stream is.
    Stream(mpsc::Receiver<Chunk>, StreamState),
}

impl Body {
    /// A body streamed from `rx`.
    pub fn stream(rx: mpsc::Receiver<Chunk>) -> Self {
        Body::Stream(rx, StreamState::Open)
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx, state) => match *state {
                StreamState::Done => Poll::Ready(None),
                StreamState::Cutting => {
                    *state = StreamState::Done;
                    Poll::Ready(Some(Err(io::Error::other("response cut short"))))
                }
                StreamState::Open => match rx.poll_recv(cx) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(Some(Chunk::Data(d))) => Poll::Ready(Some(Ok(Frame::data(d)))),
                    Poll::Ready(Some(Chunk::End)) => {
                        *state = StreamState::Done;
                        Poll::Ready(None)
                    }
                    Poll::Ready(None) => {
                        // hyper flushes when the body is pending, and drops
                        // its buffer when the body fails: the bytes before
                        // the cut go out first.
                        *state = StreamState::Cutting;
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                },
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Full(b) => b.is_none(),
            Body::Stream(_, state) => *state == StreamState::Done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(..) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;

    #[test]
    fn bodies_cut_short_end_in_an_error_after_their_bytes() {
        let (tx, rx) = mpsc::channel(2);
        tx.try_send(Chunk::Data(Bytes::from_static(b"ab"))).unwrap();
        drop(tx);
        let mut b = Body::stream(rx);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut poll = || Pin::new(&mut b).poll_frame(&mut cx);
        assert!(matches!(poll(), Poll::Ready(Some(Ok(_)))));
        // Pending once (hyper flushes), then the error, then the end.
        assert!(poll().is_pending());
        assert!(matches!(poll(), Poll::Ready(Some(Err(_)))));
        assert!(matches!(poll(), Poll::Ready(None)));
    }

    #[test]
    fn whole_streams_end_without_an_error() {
        let (tx, rx) = mpsc::channel(2);
        tx.try_send(Chunk::Data(Bytes::from_static(b"ab"))).unwrap();
        tx.try_send(Chunk::End).unwrap();
        let mut b = Body::stream(rx);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut poll = || Pin::new(&mut b).poll_frame(&mut cx);
        assert!(matches!(poll(), Poll::Ready(Some(Ok(_)))));
        assert!(matches!(poll(), Poll::Ready(None)));
        assert!(b.is_end_stream());
    }

    #[test]
    fn panic_messages_are_read_from_str_and_string() {
        let p = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "plain");
        let n = 3;
        let p = std::panic::catch_unwind(|| panic!("formatted {n}")).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "formatted 3");
        let p = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "");
    }

    #[test]
    fn full_bodies_say_their_size() {
        let b = Body::Full(Some(Bytes::from_static(b"abc")));
        assert_eq!(b.size_hint().exact(), Some(3));
        assert!(!b.is_end_stream());
        assert!(Body::Full(None).is_end_stream());
    }
}
