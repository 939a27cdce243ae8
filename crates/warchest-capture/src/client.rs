//! A small HTTP/1.1 client that keeps the exact bytes: the request as sent,
//! the response as received (chunked and content-coded bodies as they came
//! off the wire), spooled to memory then a temporary file so a large body
//! never sits in memory whole.
//!
//! Blocking `std::net` and one connection per request (`Connection:
//! close`): a capture is bound by the network, and this keeps the client
//! short and its compile time low.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use warchest::digest::Algorithm;
use warchest::http::{ChunkedDecoder, HeadFinder, HttpHead, PayloadDigester, PayloadDigests};
use warchest::warc::TruncatedReason;
use warchest::write::{CaptureLimits, LimitedReader};

use super::CaptureError;
use super::wire_url::{Scheme, Url};

/// A connection: plain TCP or TLS over it.
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS client side.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    /// The TCP socket underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
        }
    }

    /// WARC-Protocol and WARC-Cipher-Suite values of a TLS connection.
    pub fn tls_info(&self) -> (Option<String>, Option<String>) {
        match self {
            Stream::Plain(_) => (None, None),
            Stream::Tls(s) => super::tls::describe(&s.conn),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// Opens a connection to the first of `addrs` that answers, with TLS for
/// `https`. Returns the stream and the address connected to.
///
/// # Errors
/// No address answered, or the TLS handshake failed.
pub fn connect(
    url: &Url,
    addrs: &[IpAddr],
    tls: &Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> Result<(Stream, IpAddr), CaptureError> {
    let port = url.port_or_default();
    let mut last = None;
    for ip in addrs {
        match TcpStream::connect_timeout(&SocketAddr::new(*ip, port), timeout) {
            Ok(s) => {
                s.set_read_timeout(Some(timeout))
                    .and_then(|_| s.set_write_timeout(Some(timeout)))
                    .map_err(|e| CaptureError::Io(url.to_string(), e))?;
                let _ = s.set_nodelay(true);
                let stream = if url.scheme == Scheme::Https {
                    let name = super::tls::server_name(&url.host)?;
                    let conn = rustls::ClientConnection::new(tls.clone(), name)
                        .map_err(|e| CaptureError::Tls(e.to_string()))?;
                    let mut st = rustls::StreamOwned::new(conn, s);
                    // Handshake now, so that a certificate error is told
                    // as such rather than as a failed write.
                    while st.conn.is_handshaking() {
                        st.conn
                            .complete_io(&mut st.sock)
                            .map_err(|e| CaptureError::Tls(format!("{}: {e}", url.authority())))?;
                    }
                    Stream::Tls(Box::new(st))
                } else {
                    Stream::Plain(s)
                };
                return Ok((stream, *ip));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(CaptureError::Io(
        url.authority(),
        last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")),
    ))
}

/// A GET request for `url`, as a crawler sends it: Host, User-Agent,
/// Accept, Accept-Encoding, Connection: close, then `extra` fields.
///
/// The request is HTTP/1.0, so that no transfer coding is applied to the
/// response (RFC 9112 section 7.1: a server must not send chunked to an
/// HTTP/1.0 client). Then the payload is the same bytes whichever way a
/// reader takes "entity-body": WARC 1.1 section 6.3.2 removes the transfer
/// coding before digesting, warcio, JWAT and FastWARC digest the body as
/// transferred, and the WARC-Payload-Digest verifies in all of them
/// (docs/capture.md). One request a connection loses nothing by it: the
/// client closes each connection anyway.
pub fn get_request(url: &Url, user_agent: &str, extra: &[(String, String)]) -> Vec<u8> {
    request_with(url, user_agent, extra, "close")
}

/// [`get_request`] asking to keep the connection (`Connection:
/// keep-alive`, HTTP/1.0's persistent connections): for [`fetch_keep`].
pub fn get_request_keep_alive(url: &Url, user_agent: &str, extra: &[(String, String)]) -> Vec<u8> {
    request_with(url, user_agent, extra, "keep-alive")
}

fn request_with(
    url: &Url,
    user_agent: &str,
    extra: &[(String, String)],
    connection: &str,
) -> Vec<u8> {
    let mut r = format!(
        "GET {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: {user_agent}\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: {connection}\r\n",
        url.path_and_query,
        url.authority()
    );
    for (k, v) in extra {
        r.push_str(k);
        r.push_str(": ");
        r.push_str(v);
        r.push_str("\r\n");
    }
    r.push_str("\r\n");
    r.into_bytes()
}

/// How a message body is delimited (RFC 9112 section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    Empty,
    /// Content-Length bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// To the end of the connection.
    Close,
}

/// The framing of a response to a request of `method`.
pub fn response_framing(head: &HttpHead, method: &[u8]) -> Framing {
    let status = head.status().unwrap_or(200);
    if method.eq_ignore_ascii_case(b"HEAD")
        || (100..200).contains(&status)
        || status == 204
        || status == 304
    {
        Framing::Empty
    } else if head.is_chunked() {
        Framing::Chunked
    } else if let Some(n) = head.content_length() {
        Framing::Length(n)
    } else {
        Framing::Close
    }
}

/// The framing of a request body.
pub fn request_framing(head: &HttpHead) -> Framing {
    if head.is_chunked() {
        Framing::Chunked
    } else {
        match head.content_length() {
            Some(0) | None => Framing::Empty,
            Some(n) => Framing::Length(n),
        }
    }
}

/// Reads a message head from `conn` into `buf` (cleared first). Returns
/// the head's length (bytes after it are the start of the body), or `None`
/// when the connection ended before any byte.
///
/// # Errors
/// A head longer than `max`, a connection ended inside the head, or I/O.
pub fn read_head(
    conn: &mut dyn Read,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<Option<usize>, CaptureError> {
    buf.clear();
    fill_head(conn, buf, max)
}

/// [`read_head`] for a buffer that may already hold bytes of the head.
fn fill_head(
    conn: &mut dyn Read,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<Option<usize>, CaptureError> {
    // A head longer than `max` is refused wherever it ends: found in one
    // read past `max` as well as not found within it (which one depends on
    // how the bytes come).
    let too_long = || CaptureError::Http(format!("HTTP head longer than {max} bytes"));
    let mut finder = HeadFinder::new();
    if let Some(end) = finder.find(buf) {
        return if end > max {
            Err(too_long())
        } else {
            Ok(Some(end))
        };
    }
    let mut chunk = [0u8; 8192];
    loop {
        let n = match conn.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if buf.is_empty() && is_disconnect(&e) => return Ok(None),
            Err(e) => return Err(CaptureError::Io("reading an HTTP head".into(), e)),
        };
        if n == 0 {
            if buf.iter().all(|b| b.is_ascii_whitespace()) {
                return Ok(None);
            }
            return Err(CaptureError::Http(
                "the connection ended inside the HTTP head".into(),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = finder.find(buf) {
            return if end > max {
                Err(too_long())
            } else {
                Ok(Some(end))
            };
        }
        if buf.len() > max {
            return Err(too_long());
        }
    }
}

/// The most interim (1xx) responses accepted before the final one.
const MAX_INTERIM: usize = 16;

/// Reads the head of the final response into `buf` (cleared first),
/// setting interim responses (`100 Continue`, `103 Early Hints`; not
/// `101`) aside and returning their status lines: they are not part of the
/// recorded response, whose block must be one HTTP message.
///
/// # Errors
/// As [`read_head`]; more than 16 interim responses.
pub fn read_response_head(
    conn: &mut dyn Read,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<Option<(usize, Vec<String>)>, CaptureError> {
    buf.clear();
    let mut interim = Vec::new();
    loop {
        let Some(end) = fill_head(conn, buf, max)? else {
            if interim.is_empty() {
                return Ok(None);
            }
            return Err(CaptureError::Http(
                "the connection ended after an interim response".into(),
            ));
        };
        let head = HttpHead::parse(&buf[..end]).ok().flatten().map(|(h, _)| h);
        match head.as_ref().and_then(|h| h.status()) {
            Some(s) if (100..200).contains(&s) && s != 101 => {
                if interim.len() >= MAX_INTERIM {
                    return Err(CaptureError::Http("too many interim responses".into()));
                }
                let line = head
                    .map(|h| String::from_utf8_lossy(h.start_line()).trim().to_string())
                    .unwrap_or_default();
                interim.push(line);
                buf.drain(..end);
            }
            _ => return Ok(Some((end, interim))),
        }
    }
}

fn is_disconnect(e: &io::Error) -> bool {
    use io::ErrorKind as K;
    matches!(
        e.kind(),
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
    )
}

/// The raw bytes of a body, ended by its framing. A connection that ends
/// before the framing does is an `UnexpectedEof` error (a [`LimitedReader`]
/// turns it into WARC-Truncated `disconnect`); for a body delimited by the
/// end of the connection, the end is the end (TLS without close_notify
/// included, as browsers take it).
pub struct FramedBody<'a> {
    pending: Vec<u8>,
    pos: usize,
    conn: &'a mut dyn Read,
    framing: Framing,
    left: u64,
    chunked: ChunkedDecoder,
    done: bool,
    /// Bytes past the body's end were received with it.
    extra: bool,
}

impl<'a> FramedBody<'a> {
    /// A body whose first bytes, already read with the head, are `pending`.
    pub fn new(pending: Vec<u8>, conn: &'a mut dyn Read, framing: Framing) -> Self {
        let left = match framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        FramedBody {
            pending,
            pos: 0,
            conn,
            framing,
            left,
            chunked: ChunkedDecoder::new(),
            done: framing == Framing::Empty || framing == Framing::Length(0),
            extra: false,
        }
    }

    /// True when the body ended by its framing, not by the connection's
    /// end (a chunked body that did not parse is read to the end), and no
    /// byte past it was received: the connection may carry another
    /// response.
    pub fn reusable(&self) -> bool {
        self.done && self.framing != Framing::Close && !self.extra && self.pos >= self.pending.len()
    }

    /// True when the body ended as its framing says (not cut short).
    pub fn complete(&self) -> bool {
        self.done
    }
}

impl Read for FramedBody<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let want = match self.framing {
            Framing::Length(_) => buf
                .len()
                .min(usize::try_from(self.left).unwrap_or(usize::MAX)),
            _ => buf.len(),
        };
        let n = if self.pos < self.pending.len() {
            let n = want.min(self.pending.len() - self.pos);
            buf[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
            self.pos += n;
            n
        } else {
            match self.conn.read(&mut buf[..want]) {
                Ok(0) if self.framing == Framing::Close => {
                    self.done = true;
                    return Ok(0);
                }
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the connection ended before the body",
                    ));
                }
                Ok(n) => n,
                Err(e)
                    if self.framing == Framing::Close
                        && e.kind() == io::ErrorKind::UnexpectedEof =>
                {
                    self.done = true;
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
        };
        match self.framing {
            Framing::Length(_) => {
                self.left -= n as u64;
                if self.left == 0 {
                    self.done = true;
                }
                Ok(n)
            }
            Framing::Chunked => {
                let before = self.chunked.clone();
                match self.chunked.feed(&buf[..n], |_| {}) {
                    Ok(used) => {
                        if self.chunked.is_done() {
                            // The body ends with its terminator. The line
                            // ends the decoder takes past it (stray ones,
                            // tolerated) are not the body's: whether they
                            // came with the terminator's read is chance.
                            let end = terminator_end(before, &buf[..used]);
                            self.done = true;
                            self.extra = end < n;
                            // Bytes past the terminator belong to no one
                            // (one request per connection).
                            return Ok(end);
                        }
                        Ok(n)
                    }
                    Err(_) => {
                        // Announced chunked but not: take the rest of the
                        // connection, as lenient readers do.
                        self.framing = Framing::Close;
                        Ok(n)
                    }
                }
            }
            Framing::Close => Ok(n),
            Framing::Empty => Ok(0),
        }
    }
}

/// Where the terminator of a chunked body ends in `bytes`, which take the
/// decoder `d` to its end: a byte at a time from there, so that the line
/// ends it takes past the terminator are left out.
fn terminator_end(mut d: ChunkedDecoder, bytes: &[u8]) -> usize {
    for (i, b) in bytes.chunks(1).enumerate() {
        if d.feed(b, |_| {}).is_err() || d.is_done() {
            return i + 1;
        }
    }
    bytes.len()
}

/// A message (response, or a proxied request) as received: the bytes,
/// spooled, and what was learnt reading them.
pub struct Captured {
    /// The head, parsed.
    pub head: HttpHead,
    /// Head and body as received (rewound).
    pub block: tempfile::SpooledTempFile,
    /// Length of `block`.
    pub len: u64,
    /// Digests of the body (payload: chunking removed).
    pub payload: PayloadDigests,
    /// Why the body was cut, if it was.
    pub truncated: Option<TruncatedReason>,
    /// The body ended as its framing said.
    pub complete: bool,
    /// The body ended by its framing (not the connection's end) with no
    /// byte received past it: see [`FramedBody::reusable`].
    pub reusable: bool,
}

/// Where a message goes as it is read, besides the record: the proxy's
/// client, through an HTTP server that does the client's framing itself.
pub trait Forward {
    /// The message's head, parsed, before any byte of its body.
    ///
    /// # Errors
    /// The receiver is gone: nothing more is forwarded.
    fn head(&mut self, head: &HttpHead) -> io::Result<()>;
    /// Bytes of the body as they arrive, the transfer coding removed (the
    /// content coding kept).
    ///
    /// # Errors
    /// As for [`Forward::head`].
    fn body(&mut self, data: &[u8]) -> io::Result<()>;
}

/// A [`Forward`] while it works, taking the chunked transfer coding off
/// the body. A failed forward stops the copying, not the recording.
pub struct Tee<'a> {
    out: Option<&'a mut dyn Forward>,
    /// Set for a chunked body; dropped (the rest passed raw) when the body
    /// turns out not to be chunked, as [`FramedBody`] then reads it.
    chunked: Option<ChunkedDecoder>,
    /// Body bytes seen so far, to place a chunked decoding error.
    seen: u64,
}

impl<'a> Tee<'a> {
    /// Forwards to `out`.
    pub fn to(out: &'a mut dyn Forward) -> Self {
        Tee {
            out: Some(out),
            chunked: None,
            seen: 0,
        }
    }
    /// Forwards nowhere.
    pub fn none() -> Self {
        Tee {
            out: None,
            chunked: None,
            seen: 0,
        }
    }
    fn head(&mut self, head: &HttpHead, framing: Framing) {
        if framing == Framing::Chunked {
            self.chunked = Some(ChunkedDecoder::new());
        }
        if let Some(o) = &mut self.out
            && o.head(head).is_err()
        {
            self.out = None;
        }
    }
    fn body(&mut self, b: &[u8]) {
        let before = self.seen;
        self.seen += b.len() as u64;
        let Some(o) = &mut self.out else {
            return;
        };
        let mut failed = false;
        let r = match &mut self.chunked {
            None => o.body(b),
            Some(d) => {
                let mut r = Ok(());
                match d.feed(b, |data| {
                    if r.is_ok() {
                        r = o.body(data);
                    }
                }) {
                    Ok(_) => r,
                    Err(e) => {
                        // Not chunked after all: the rest goes as it is,
                        // from the offending line on.
                        failed = true;
                        let at = usize::try_from(e.offset.saturating_sub(before))
                            .unwrap_or(b.len())
                            .min(b.len());
                        r.and_then(|_| o.body(d.pending()))
                            .and_then(|_| o.body(&b[at..]))
                    }
                }
            }
        };
        if failed {
            self.chunked = None;
        }
        if r.is_err() {
            self.out = None;
        }
    }
    /// True while forwarding still works.
    pub fn alive(&self) -> bool {
        self.out.is_some()
    }
}

/// How messages are read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Size and time limits of the body.
    pub limits: CaptureLimits,
    /// The digest algorithm.
    pub digest: Algorithm,
    /// Spool in memory up to this many bytes, then to a temporary file.
    pub spool_threshold: usize,
    /// The longest head accepted.
    pub max_head: usize,
}

/// Reads a message from `conn`: the head (already read into `buf` up to
/// `head_len`, bytes after it being the body's start) and the body as
/// `framing` delimits it, within the limits.
///
/// # Errors
/// The head does not parse, or I/O errors other than those that end a
/// body as truncated.
pub fn capture_message(
    conn: &mut dyn Read,
    mut buf: Vec<u8>,
    head_len: usize,
    framing: impl FnOnce(&HttpHead) -> Framing,
    opts: &ReadOptions,
    tee: &mut Tee<'_>,
) -> Result<Captured, CaptureError> {
    let head = match HttpHead::parse(&buf[..head_len]) {
        Ok(Some((h, _))) => h,
        Ok(None) => return Err(CaptureError::Http("incomplete HTTP head".into())),
        Err(e) => return Err(CaptureError::Http(e.to_string())),
    };
    let framing = framing(&head);
    let pending = buf.split_off(head_len);
    let mut spool = tempfile::SpooledTempFile::new(opts.spool_threshold);
    let io_err = |e| CaptureError::Io("spooling".into(), e);
    spool.write_all(&buf).map_err(io_err)?;
    tee.head(&head, framing);
    let mut digester = PayloadDigester::new(opts.digest, framing == Framing::Chunked);
    let mut body = FramedBody::new(pending, conn, framing);
    let mut limited = LimitedReader::new(&mut body, opts.limits);
    let mut chunk = vec![0u8; 64 << 10];
    let mut len = buf.len() as u64;
    loop {
        let n = match limited.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CaptureError::Io("reading an HTTP body".into(), e)),
        };
        spool.write_all(&chunk[..n]).map_err(io_err)?;
        digester.update(&chunk[..n]);
        tee.body(&chunk[..n]);
        len += n as u64;
    }
    let truncated = limited.truncated().cloned();
    let complete = body.complete();
    let reusable = body.reusable();
    spool.seek(SeekFrom::Start(0)).map_err(io_err)?;
    Ok(Captured {
        head,
        block: spool,
        len,
        payload: digester.finish(),
        truncated,
        complete,
        reusable,
    })
}

/// One HTTP exchange as made by [`fetch`].
pub struct Exchange {
    /// The URL fetched.
    pub url: Url,
    /// The address connected to.
    pub ip: IpAddr,
    /// The request, as sent.
    pub request: Vec<u8>,
    /// The response, as received.
    pub response: Captured,
    /// When the request was sent.
    pub started: time::OffsetDateTime,
    /// From connecting to the end of the response.
    pub elapsed: Duration,
    /// WARC-Protocol values (`tls/1.3`), WARC-Cipher-Suite.
    pub tls: (Option<String>, Option<String>),
    /// Status lines of interim (1xx) responses before the final one.
    pub interim: Vec<String>,
}

/// Settings of [`fetch`].
#[derive(Clone)]
pub struct FetchOptions {
    /// TLS configuration.
    pub tls: Arc<rustls::ClientConfig>,
    /// Connect, read and write timeout.
    pub timeout: Duration,
    /// How the response is read.
    pub read: ReadOptions,
}

/// Sends `request` to `url` at one of `addrs` and captures the response.
///
/// # Errors
/// Connecting, sending, or a response that is not HTTP.
pub fn fetch(
    url: &Url,
    addrs: &[IpAddr],
    request: Vec<u8>,
    opts: &FetchOptions,
) -> Result<Exchange, CaptureError> {
    fetch_keep(url, addrs, request, opts, None).map(|(x, _)| x)
}

/// A connection left open by a response (HTTP keep-alive), for the next
/// request to the same host and port.
pub struct Kept {
    stream: Stream,
    /// What it was opened for: a TLS stream serves only `https`, and only
    /// the host its certificate was checked for.
    scheme: Scheme,
    host: String,
    ip: IpAddr,
    port: u16,
    idle_since: Instant,
}

impl Kept {
    /// How long it has been idle.
    pub fn idle(&self) -> Duration {
        self.idle_since.elapsed()
    }

    /// Whether it can carry a request for `url` at one of `addrs`.
    fn serves(&self, url: &Url, addrs: &[IpAddr]) -> bool {
        self.scheme == url.scheme
            && self.host == url.host
            && self.port == url.port_or_default()
            && addrs.contains(&self.ip)
    }

    /// Whether it is idle and open: nothing waiting to be read (bytes the
    /// server sent after its response, such as a body with a 304 or an
    /// unsolicited 408, would be read as the next response) and not closed
    /// by the server.
    ///
    /// On a TLS connection the records waiting are read and processed
    /// first: a TLS 1.3 server may send a session ticket (or a key update)
    /// after its response, which carries no data, and the connection stays
    /// usable (it used to be dropped for it, costing a new connection and
    /// handshake). Only data, or the server's close, makes it not quiet.
    fn quiet(&mut self) -> bool {
        if self.stream.tcp().set_nonblocking(true).is_err() {
            return false;
        }
        let quiet = match &mut self.stream {
            Stream::Plain(tcp) => {
                matches!(tcp.peek(&mut [0u8; 1]), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            }
            Stream::Tls(s) => tls_quiet(s),
        };
        self.stream.tcp().set_nonblocking(false).is_ok() && quiet
    }
}

/// [`Kept::quiet`] of a TLS connection, its socket non-blocking: reads
/// what waits (a bounded number of records) and processes it; quiet when
/// that gave no data and no close.
fn tls_quiet(s: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>) -> bool {
    for _ in 0..64 {
        let st = match s.conn.process_new_packets() {
            Ok(st) => st,
            Err(_) => return false,
        };
        if st.plaintext_bytes_to_read() > 0 || st.peer_has_closed() {
            return false;
        }
        match s.conn.read_tls(&mut s.sock) {
            // The server closed it.
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
    // Still more records after that many: not an idle connection.
    false
}

/// Whether a response leaves its connection open: the server said
/// `Connection: keep-alive` (an HTTP/1.0 client's persistent connection,
/// RFC 9112 section 9.3) and not `close`.
fn keeps_alive(head: &HttpHead) -> bool {
    let mut keep = false;
    for v in head.header_all("connection") {
        for t in v.split(|&b| b == b',') {
            let t = t.trim_ascii();
            if t.eq_ignore_ascii_case(b"close") {
                return false;
            }
            keep |= t.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    keep
}

/// [`fetch`] over `kept`, a connection an earlier exchange with the same
/// host left open, when it is to one of `addrs`; otherwise over a new one.
/// Returns the connection for the next request when the response leaves
/// it open (it asked to, and its body ended as its framing said).
///
/// A kept connection is used only for the scheme, host and port it was
/// opened for, and only when nothing is waiting on it. One that the server
/// closed or reset before the first byte of the response (an idle
/// connection it dropped, as servers do) is replaced by a new one and a
/// `GET` or `HEAD` sent again, once: the server may have acted on the
/// request, which is why other methods are not retried but fail.
///
/// # Errors
/// As [`fetch`].
pub fn fetch_keep(
    url: &Url,
    addrs: &[IpAddr],
    request: Vec<u8>,
    opts: &FetchOptions,
    kept: Option<Kept>,
) -> Result<(Exchange, Option<Kept>), CaptureError> {
    let port = url.port_or_default();
    let mut reuse = kept
        .filter(|k| k.serves(url, addrs))
        .and_then(|mut k| k.quiet().then_some(k));
    let method = request
        .split(|&b| b == b' ')
        .next()
        .unwrap_or(b"GET")
        .to_vec();
    let retry = method == b"GET" || method == b"HEAD";
    loop {
        let t0 = Instant::now();
        let started = time::OffsetDateTime::now_utc();
        let (mut conn, ip, fresh) = match reuse.take() {
            Some(k) => (k.stream, k.ip, false),
            None => {
                let (c, ip) = connect(url, addrs, &opts.tls, opts.timeout)?;
                (c, ip, true)
            }
        };
        if let Err(e) = conn.write_all(&request).and_then(|_| conn.flush()) {
            if fresh || !retry {
                return Err(CaptureError::Io(url.to_string(), e));
            }
            continue;
        }
        let tls = conn.tls_info();
        let mut buf = Vec::new();
        let (head_len, interim) = match read_response_head(&mut conn, &mut buf, opts.read.max_head)?
        {
            Some(h) => h,
            // The kept connection was closed before any byte: again on
            // a new one.
            None if !fresh && retry => continue,
            None => {
                return Err(CaptureError::Http(format!(
                    "{url}: the server closed the connection without a response"
                )));
            }
        };
        let mut framing = Framing::Close;
        let response = capture_message(
            &mut conn,
            buf,
            head_len,
            |h| {
                framing = response_framing(h, &method);
                framing
            },
            &opts.read,
            &mut Tee::none(),
        )?;
        // `reusable`, not `framing`: a chunked body that did not parse was
        // read to the connection's end.
        let keep = framing != Framing::Close
            && response.reusable
            && response.truncated.is_none()
            && keeps_alive(&response.head);
        let elapsed = t0.elapsed();
        let kept = keep.then(|| Kept {
            stream: conn,
            scheme: url.scheme,
            host: url.host.clone(),
            ip,
            port,
            idle_since: Instant::now(),
        });
        return Ok((
            Exchange {
                url: url.clone(),
                ip,
                request,
                response,
                started,
                elapsed,
                tls,
                interim,
            },
            kept,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::{Collect, Pieces};

    fn body(pending: &[u8], rest: &[u8], framing: Framing) -> (Vec<u8>, bool, io::Result<()>) {
        let mut conn = rest;
        let mut b = FramedBody::new(pending.to_vec(), &mut conn, framing);
        let mut out = Vec::new();
        let r = b.read_to_end(&mut out).map(|_| ());
        (out, b.complete(), r)
    }

    #[test]
    fn framing_ends_bodies() {
        let (o, c, r) = body(b"he", b"llo world", Framing::Length(5));
        assert_eq!((o.as_slice(), c, r.is_ok()), (&b"hello"[..], true, true));
        let (o, c, r) = body(b"", b"3\r\nabc\r\n0\r\n\r\nNEXT", Framing::Chunked);
        assert_eq!(o, b"3\r\nabc\r\n0\r\n\r\n");
        assert!(c && r.is_ok());
        let (o, c, r) = body(b"x", b"yz", Framing::Close);
        assert_eq!((o.as_slice(), c, r.is_ok()), (&b"xyz"[..], true, true));
        let (o, c, r) = body(b"", b"abc", Framing::Length(10));
        assert_eq!(o, b"abc");
        assert!(!c);
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        let (o, c, _) = body(b"", b"<html>", Framing::Chunked);
        assert_eq!((o.as_slice(), c), (&b"<html>"[..], true));
    }

    /// What the capture_wire fuzz target found: line ends after a chunked
    /// body's terminator were part of the body when they came in the
    /// terminator's read, and not when they came after it. The body ends
    /// with its terminator, however the bytes come; the line ends past it
    /// received with it make its connection not reusable.
    #[test]
    fn a_chunked_body_ends_at_its_terminator_in_any_pieces() {
        let wire = b"3\r\nabc\r\n0\r\n\r\n\r\n\r\n";
        for piece in [1, 2, 3, 5, 7, 64] {
            let mut conn = Pieces(wire, piece);
            let mut b = FramedBody::new(Vec::new(), &mut conn, Framing::Chunked);
            let mut out = Vec::new();
            let mut buf = [0u8; 64];
            loop {
                let n = b.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            assert_eq!(out, b"3\r\nabc\r\n0\r\n\r\n", "pieces of {piece}");
            assert!(b.complete());
            // Only pieces of 1 end a read at the terminator (13 bytes).
            assert_eq!(b.reusable(), piece == 1, "pieces of {piece}");
        }
        // From the bytes read with the head too.
        let (o, c, r) = body(b"0\r\n\r\n\r\n", b"", Framing::Chunked);
        assert_eq!(
            (o.as_slice(), c, r.is_ok()),
            (&b"0\r\n\r\n"[..], true, true)
        );
    }

    #[test]
    fn captures_a_truncated_chunked_response() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nwo";
        let mut conn = &wire[..];
        let mut buf = Vec::new();
        let n = read_head(&mut conn, &mut buf, 1 << 16).unwrap().unwrap();
        let opts = read_opts();
        let c = capture_message(
            &mut conn,
            buf,
            n,
            |h| response_framing(h, b"GET"),
            &opts,
            &mut Tee::none(),
        )
        .unwrap();
        assert_eq!(c.len, wire.len() as u64);
        assert_eq!(c.truncated, Some(TruncatedReason::Disconnect));
        assert!(!c.complete);
        assert_eq!(c.payload.payload_len, 7);
    }

    /// A body announced chunked that does not parse is read to the
    /// connection's end: complete, but its connection is not reusable.
    #[test]
    fn a_bad_chunked_body_leaves_no_reusable_connection() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nnot chunked at all";
        let mut conn = &wire[..];
        let mut buf = Vec::new();
        let n = read_head(&mut conn, &mut buf, 1 << 16).unwrap().unwrap();
        let opts = read_opts();
        let mut framing = Framing::Close;
        let c = capture_message(
            &mut conn,
            buf,
            n,
            |h| {
                framing = response_framing(h, b"GET");
                framing
            },
            &opts,
            &mut Tee::none(),
        )
        .unwrap();
        assert_eq!(framing, Framing::Chunked);
        assert_eq!(c.len, wire.len() as u64);
        assert!(c.complete && !c.reusable);
    }

    /// Only an answer that says `keep-alive` (and not `close`) leaves its
    /// connection open to an HTTP/1.0 client.
    #[test]
    fn keep_alive_is_what_the_server_says() {
        let head = |h: &str| HttpHead::parse(h.as_bytes()).unwrap().unwrap().0;
        assert!(keeps_alive(&head(
            "HTTP/1.1 200 OK\r\nConnection: Keep-Alive\r\n\r\n"
        )));
        assert!(keeps_alive(&head(
            "HTTP/1.0 200 OK\r\nconnection: foo, keep-alive\r\n\r\n"
        )));
        assert!(!keeps_alive(&head("HTTP/1.1 200 OK\r\n\r\n")));
        assert!(!keeps_alive(&head(
            "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n"
        )));
    }

    /// What the capture_wire fuzz target found: a head longer than the
    /// limit was taken when it came in one read, and refused when it came
    /// in pieces. It is refused both ways.
    #[test]
    fn a_head_past_the_limit_is_refused_however_it_comes() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Long: aaaaaaaaaaaaaaaa\r\n\r\nok";
        let mut buf = Vec::new();
        let whole = read_response_head(&mut &wire[..], &mut buf, 40);
        assert!(whole.is_err(), "read whole");
        let mut conn = io::Read::chain(&wire[..20], &wire[20..]);
        assert!(read_head(&mut conn, &mut buf, 40).is_err(), "read in two");
        // At the limit exactly, taken.
        let head_len = wire.len() - 2;
        let (n, _) = read_response_head(&mut &wire[..], &mut buf, head_len)
            .unwrap()
            .unwrap();
        assert_eq!(n, head_len);
    }

    #[test]
    fn interim_responses_are_set_aside() {
        let wire = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut conn = &wire[..];
        let mut buf = Vec::new();
        let (n, interim) = read_response_head(&mut conn, &mut buf, 1 << 16)
            .unwrap()
            .unwrap();
        assert_eq!(interim, ["HTTP/1.1 103 Early Hints"]);
        assert!(buf.starts_with(b"HTTP/1.1 200 OK\r\n"));
        assert_eq!(&buf[n..], b"ok");
        let endless = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(20);
        let mut conn = &endless[..];
        assert!(read_response_head(&mut conn, &mut buf, 1 << 16).is_err());
    }

    #[test]
    fn hostile_responses_end_without_panic() {
        let good = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        let mut cases: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
        cases.push(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nx".to_vec());
        cases.push(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nx"
                .to_vec(),
        );
        cases.push(b"\x00\xff garbage \r\n\r\n".to_vec());
        cases.push(vec![b'a'; 100_000]);
        let opts = ReadOptions {
            limits: CaptureLimits {
                max_len: Some(1 << 20),
                max_time: None,
            },
            digest: Algorithm::Sha1,
            spool_threshold: 1 << 16,
            max_head: 1 << 12,
        };
        for c in cases {
            let mut conn = &c[..];
            let mut buf = Vec::new();
            if let Ok(Some((n, _))) = read_response_head(&mut conn, &mut buf, opts.max_head)
                && let Ok(m) = capture_message(
                    &mut conn,
                    buf,
                    n,
                    |h| response_framing(h, b"GET"),
                    &opts,
                    &mut Tee::none(),
                )
            {
                assert!(m.len <= c.len() as u64);
            }
        }
    }

    /// The forwarded body of `wire` read in pieces of `piece` bytes, and
    /// the recorded block.
    fn forwarded(wire: &[u8], piece: usize) -> (Collect, Vec<u8>) {
        let mut conn = Pieces(wire, piece);
        let mut buf = Vec::new();
        let n = read_head(&mut conn, &mut buf, 1 << 16).unwrap().unwrap();
        let opts = read_opts();
        let mut got = Collect::default();
        let mut c = capture_message(
            &mut conn,
            buf,
            n,
            |h| response_framing(h, b"GET"),
            &opts,
            &mut Tee::to(&mut got),
        )
        .unwrap();
        let mut block = Vec::new();
        c.block.read_to_end(&mut block).unwrap();
        (got, block)
    }

    #[test]
    fn forwarded_bodies_lose_the_chunked_coding_records_keep_it() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n";
        for piece in [1, 3, 7, 1 << 16] {
            let (got, block) = forwarded(wire, piece);
            assert_eq!(got.status, Some(200));
            assert_eq!(got.body, b"hello world", "pieces of {piece}");
            assert_eq!(block, wire);
        }
        // Announced chunked but not: forwarded as it came, as it is read.
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n<html>not chunked</html>";
        for piece in [1, 4, 1 << 16] {
            let (got, _) = forwarded(wire, piece);
            assert_eq!(got.body, b"<html>not chunked</html>", "pieces of {piece}");
        }
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef";
        assert_eq!(forwarded(wire, 2).0.body, b"abc");
    }

    #[test]
    fn request_has_host_and_agent() {
        let u = Url::parse("http://h:8080/p?q").unwrap();
        let r = get_request(
            &u,
            "warchest/1",
            &[("If-None-Match".into(), "\"x\"".into())],
        );
        let t = String::from_utf8(r).unwrap();
        assert!(t.starts_with("GET /p?q HTTP/1.0\r\nHost: h:8080\r\nUser-Agent: warchest/1\r\n"));
        assert!(t.ends_with("If-None-Match: \"x\"\r\n\r\n"));
    }

    /// Set once the scripted server has sent `/304`'s stray response.
    static STRAY_SENT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Set by the test once its `/304` request has returned: the scripted
    /// server sends the stray response only then.
    static READ_304: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// A loopback server answering each request by its path: `/keep` with
    /// a kept connection, `/304` a 304 then (later) a stray response,
    /// `/extra` a body with a stray response right after it, anything
    /// else `RIGHT`; stray responses say `WRONG`. Non-HTTP bytes (a TLS
    /// hello) close the connection. Returns its port.
    fn scripted_server() -> u16 {
        use std::net::TcpListener;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for c in l.incoming().take(8) {
                let Ok(mut c) = c else { return };
                std::thread::spawn(move || {
                    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    const STRAY: &[u8] =
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nWRONG";
                    for _ in 0..4 {
                        let mut req = Vec::new();
                        let mut b = [0u8; 1];
                        while !req.ends_with(b"\r\n\r\n") {
                            if c.read(&mut b).unwrap_or(0) == 0
                                || (req.len() == 4 && &req[..] != b"GET ")
                            {
                                return;
                            }
                            req.push(b[0]);
                        }
                        let path = req.split(|&b| b == b' ').nth(1).unwrap_or(b"").to_vec();
                        let w = match &path[..] {
                            b"/keep" => c.write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok",
                            ),
                            // The stray response once the test has read
                            // the 304 alone (told by READ_304, not guessed
                            // by a sleep), then told.
                            b"/304" => c
                                .write_all(b"HTTP/1.1 304 Not Modified\r\nConnection: keep-alive\r\n\r\n")
                                .and_then(|_| {
                                    let t0 = std::time::Instant::now();
                                    while !READ_304.load(std::sync::atomic::Ordering::SeqCst) {
                                        if t0.elapsed() > Duration::from_secs(60) {
                                            return Err(std::io::ErrorKind::TimedOut.into());
                                        }
                                        std::thread::sleep(Duration::from_millis(10));
                                    }
                                    c.write_all(STRAY)
                                })
                                .map(|_| STRAY_SENT.store(true, std::sync::atomic::Ordering::SeqCst)),
                            b"/extra" => c.write_all(
                                &[
                                    &b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"[..],
                                    STRAY,
                                ]
                                .concat(),
                            ),
                            _ => c.write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nRIGHT",
                            ),
                        };
                        if w.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        port
    }

    fn fetch_opts() -> FetchOptions {
        FetchOptions {
            tls: crate::tls::client_config(true, &[]).unwrap(),
            timeout: Duration::from_secs(5),
            read: read_opts(),
        }
    }

    fn read_opts() -> ReadOptions {
        ReadOptions {
            limits: CaptureLimits::default(),
            digest: Algorithm::Sha1,
            spool_threshold: 1024,
            max_head: 1 << 16,
        }
    }

    fn get(url: &str, kept: Option<Kept>) -> Result<(Vec<u8>, Option<Kept>), CaptureError> {
        let u = Url::parse(url).unwrap();
        let req = get_request_keep_alive(&u, "t", &[]);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let (mut x, k) = fetch_keep(&u, &[lo], req, &fetch_opts(), kept)?;
        let mut block = Vec::new();
        x.response.block.read_to_end(&mut block).unwrap();
        Ok((block, k))
    }

    /// A connection kept for `http` is not used for `https` on the same
    /// host and port (nor the other way): the request goes to a new TLS
    /// connection, which this plain server refuses.
    #[test]
    fn a_kept_connection_serves_only_its_scheme() {
        let port = scripted_server();
        let (b, k) = get(&format!("http://127.0.0.1:{port}/keep"), None).unwrap();
        assert!(b.ends_with(b"ok"));
        let k = k.expect("kept");
        let r = get(&format!("https://127.0.0.1:{port}/x"), Some(k));
        assert!(r.is_err(), "an https request over the plain connection");
    }

    /// Bytes a server sends after a response (a body with a 304, more
    /// than Content-Length) are not read as the next URL's response: the
    /// connection is not kept, or not used again.
    #[test]
    fn stray_bytes_after_a_response_end_its_connection() {
        let port = scripted_server();
        let (b, k) = get(&format!("http://127.0.0.1:{port}/extra"), None).unwrap();
        assert!(
            b.ends_with(b"\r\n\r\nok"),
            "{}",
            String::from_utf8_lossy(&b)
        );
        assert!(k.is_none(), "bytes past the body: not kept");
        let (_, k) = get(&format!("http://127.0.0.1:{port}/304"), None).unwrap();
        assert!(k.is_some(), "the 304 alone looks reusable");
        READ_304.store(true, std::sync::atomic::Ordering::SeqCst);
        // Once the stray bytes are sent and have reached the kept
        // connection (not after a fixed time).
        let mut k = k;
        let t0 = std::time::Instant::now();
        while !STRAY_SENT.load(std::sync::atomic::Ordering::SeqCst)
            || k.as_mut().is_some_and(|k| k.quiet())
        {
            assert!(t0.elapsed() < Duration::from_secs(60), "no stray response");
            std::thread::sleep(Duration::from_millis(10));
        }
        let (b, _) = get(&format!("http://127.0.0.1:{port}/next"), k).unwrap();
        assert!(b.ends_with(b"RIGHT"), "{}", String::from_utf8_lossy(&b));
        // A quiet kept connection is used again.
        let (_, k) = get(&format!("http://127.0.0.1:{port}/keep"), None).unwrap();
        let (b, k) = get(&format!("http://127.0.0.1:{port}/next"), k).unwrap();
        assert!(b.ends_with(b"RIGHT"));
        assert!(k.is_some());
    }

    /// A TLS 1.3 server that sends a post-handshake message after each
    /// response, once `go` is set (the client has read the response):
    /// `refresh_traffic_keys`, a key update. rustls's server sends its
    /// session tickets with the handshake; a late ticket from another
    /// server is the same kind of record, one that carries no data.
    /// Counts the connections it accepts; `sent` counts the messages sent.
    /// Returns its port.
    fn late_tls_server(
        accepted: Arc<std::sync::atomic::AtomicU64>,
        go: Arc<std::sync::atomic::AtomicBool>,
        sent: Arc<std::sync::atomic::AtomicU64>,
    ) -> u16 {
        use std::net::TcpListener;
        use std::sync::atomic::Ordering::SeqCst;
        let (cert, key, _) = crate::tls::self_signed(&["localhost"]).unwrap();
        let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.into()],
            rustls::pki_types::PrivateKeyDer::try_from(key).unwrap(),
        )
        .unwrap();
        let cfg = Arc::new(cfg);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for c in l.incoming().take(4) {
                let Ok(c) = c else { return };
                accepted.fetch_add(1, SeqCst);
                let (cfg, go, sent) = (cfg.clone(), go.clone(), sent.clone());
                std::thread::spawn(move || {
                    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                    let conn = rustls::ServerConnection::new(cfg).unwrap();
                    let mut s = rustls::StreamOwned::new(conn, c);
                    for _ in 0..4 {
                        let mut req = Vec::new();
                        let mut b = [0u8; 1];
                        while !req.ends_with(b"\r\n\r\n") {
                            if s.read(&mut b).unwrap_or(0) == 0 {
                                return;
                            }
                            req.push(b[0]);
                        }
                        let ok = s
                            .write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok",
                            )
                            .and_then(|()| s.flush());
                        let t0 = Instant::now();
                        while !go.swap(false, SeqCst) {
                            if t0.elapsed() > Duration::from_secs(60) {
                                return;
                            }
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        if ok.is_err() || s.conn.refresh_traffic_keys().is_err() {
                            return;
                        }
                        while s.conn.wants_write() {
                            if s.conn.write_tls(&mut s.sock).is_err() {
                                return;
                            }
                        }
                        sent.fetch_add(1, SeqCst);
                    }
                });
            }
        });
        port
    }

    /// A TLS record that arrives on a kept connection after its response
    /// and carries no data (a late session ticket, a key update) is read
    /// and the connection used again: the next request goes over it, not
    /// over a new connection (it used to be dropped for it).
    #[test]
    fn a_late_tls_message_after_a_response_keeps_the_connection() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
        let (accepted, sent) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let go = Arc::new(AtomicBool::new(false));
        let port = late_tls_server(accepted.clone(), go.clone(), sent.clone());
        let (b, k) = get(&format!("https://127.0.0.1:{port}/a"), None).unwrap();
        assert!(b.ends_with(b"ok"));
        let k = k.expect("kept");
        // The response read: now the late message.
        go.store(true, SeqCst);
        // Once the message has reached this side's socket (not after a
        // fixed time).
        let t0 = Instant::now();
        loop {
            let tcp = k.stream.tcp();
            tcp.set_nonblocking(true).unwrap();
            let waiting = tcp.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0);
            tcp.set_nonblocking(false).unwrap();
            if sent.load(SeqCst) >= 1 && waiting {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "no late message");
            std::thread::sleep(Duration::from_millis(5));
        }
        let (b, k) = get(&format!("https://127.0.0.1:{port}/b"), Some(k)).unwrap();
        assert!(b.ends_with(b"ok"));
        assert!(k.is_some());
        assert_eq!(
            accepted.load(SeqCst),
            1,
            "the second request over the kept connection"
        );
    }
}
