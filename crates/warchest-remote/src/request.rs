//! Single requests with the retry budget: HEAD, one range, listing.

use std::io;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::{GetOptions, GetRange, ObjectStoreExt};

use crate::location::glob_match;
use crate::{Location, Options, Scheme};

/// Why one attempt failed, and whether another may succeed.
pub(crate) struct Failure {
    pub(crate) kind: io::ErrorKind,
    pub(crate) message: String,
    pub(crate) retry: bool,
    pub(crate) problem: Problem,
}

impl Failure {
    pub(crate) fn retryable(kind: io::ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            retry: true,
            problem: Problem::Other,
        }
    }

    pub(crate) fn fatal(kind: io::ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            retry: false,
            problem: Problem::Other,
        }
    }

    /// The error for `url` at byte `offset` after `retries` retries.
    pub(crate) fn into_error(self, url: &str, offset: u64, retries: u32) -> io::Error {
        let after = match (self.retry, retries) {
            (_, 0) => String::new(),
            (true, n) => format!(" (retry budget spent: {n} retries)"),
            (false, n) => format!(" (after {n} retries)"),
        };
        let message = if self.problem == Problem::NoRanges {
            // One line that says what the server lacks and what needed it.
            format!(
                "{} does not support byte ranges: needed for reading {url} from byte {offset} (random access)",
                server_of(url)
            )
        } else {
            format!("{url}: at byte {offset}: {}{after}", self.message)
        };
        io::Error::new(
            self.kind,
            RemoteError {
                url: url.to_string(),
                offset,
                problem: self.problem,
                message,
            },
        )
    }
}

/// `scheme://host[:port]` of `url` (the URL itself when it has none).
fn server_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) if u.has_host() => u.origin().ascii_serialization(),
        _ => url.to_string(),
    }
}

/// What kind of failure a [`RemoteError`] is, beyond its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The server answered with this HTTP status: its code and status
    /// line (`404 Not Found`).
    Status(u16, String),
    /// The server answers a range request with the whole object (a plain
    /// file server): reading at an offset is not possible.
    NoRanges,
    /// Redirects went round in a loop (or past reqwest's limit of 10).
    RedirectLoop,
    /// Anything else: the network, a stall, a cut body, a bad answer.
    Other,
}

/// The error of a remote read, in the toolkit's words: the URL, the byte
/// offset and what went wrong (for an HTTP error, the status line and a
/// short excerpt of the body, never the whole body). It is the inner error
/// of the `io::Error`s this crate returns; [`remote_error`] finds it.
#[derive(Clone, Debug)]
pub struct RemoteError {
    url: String,
    offset: u64,
    problem: Problem,
    message: String,
}

impl RemoteError {
    /// The object's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The byte the read was at.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// What kind of failure it is.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Whether every read of the object would fail alike: it is missing or
    /// refused (401, 403, 404, 410), its server answers no ranges, or its
    /// redirects loop. Asking again for another range of it is pointless.
    pub fn whole_object(&self) -> bool {
        match &self.problem {
            Problem::Status(s, _) => matches!(s, 401 | 403 | 404 | 410),
            Problem::NoRanges | Problem::RedirectLoop => true,
            Problem::Other => false,
        }
    }

    /// What went wrong, short, without the URL and offset: the status
    /// line, `SERVER does not support byte ranges`, or the message.
    pub fn summary(&self) -> String {
        match &self.problem {
            Problem::Status(_, line) => line.clone(),
            Problem::NoRanges => format!("{} does not support byte ranges", server_of(&self.url)),
            _ => self.message.clone(),
        }
    }
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RemoteError {}

/// The [`RemoteError`] inside `e`, when `e` came from this crate.
pub fn remote_error(e: &io::Error) -> Option<&RemoteError> {
    e.get_ref()?.downcast_ref::<RemoteError>()
}

/// The same error again (`io::Error` is not `Clone`): kind, message and
/// the [`RemoteError`] inside when there is one.
pub(crate) fn copy_error(e: &io::Error) -> io::Error {
    match remote_error(e) {
        Some(r) => io::Error::new(e.kind(), r.clone()),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

/// At most this many characters of an error body are shown.
const EXCERPT: usize = 100;

/// A short excerpt of an error body: markup dropped, white space
/// collapsed, at most [`EXCERPT`] characters (an HTML error page becomes
/// its text, on one line).
pub(crate) fn excerpt(body: &str) -> String {
    let mut out = String::new();
    let (mut in_tag, mut space, mut n) = (false, false, 0);
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                space = true;
                continue;
            }
            '>' if in_tag => {
                in_tag = false;
                continue;
            }
            _ if in_tag => continue,
            c if c.is_whitespace() || c.is_control() => {
                space = true;
                continue;
            }
            _ => {}
        }
        if n >= EXCERPT {
            out.push('…');
            break;
        }
        if space && !out.is_empty() {
            out.push(' ');
            n += 1;
        }
        space = false;
        out.push(c);
        n += 1;
    }
    out
}

/// Sorts an error of the store into retryable or not, and says it in the
/// toolkit's words (object_store's own wording, with its timings and the
/// whole error body, never reaches the user): a missing object, refused
/// credentials, a 4xx answer, a server without ranges or a redirect loop
/// will not change by asking again; 5xx answers, 408/429 and transport
/// errors may.
pub(crate) fn classify(e: object_store::Error) -> Failure {
    use object_store::Error as E;
    // The chain of sources, for what object_store does not export.
    let mut chain: Vec<&(dyn std::error::Error + 'static)> = vec![&e];
    while let Some(s) = chain.last().and_then(|s| s.source()) {
        if chain.len() > 16 {
            break;
        }
        chain.push(s);
    }
    let texts: Vec<String> = chain.iter().map(|s| s.to_string()).collect();
    if texts
        .iter()
        .any(|t| t.contains("Range request not supported"))
    {
        return Failure {
            problem: Problem::NoRanges,
            ..Failure::fatal(io::ErrorKind::Unsupported, "no byte ranges")
        };
    }
    if let Some(r) = chain
        .iter()
        .find_map(|s| s.downcast_ref::<reqwest::Error>())
        .filter(|r| r.is_redirect())
    {
        let last = r
            .url()
            .map_or(String::new(), |u| format!(", the last to {u}"));
        return Failure {
            problem: Problem::RedirectLoop,
            ..Failure::fatal(
                io::ErrorKind::Other,
                format!("redirect loop: more than 10 redirects{last}; not followed further"),
            )
        };
    }
    // object_store's RequestError::Status: "...: 404 Not Found: BODY".
    const STATUS: &str = "Server returned non-2xx status code: ";
    let status = texts.iter().find_map(|t| {
        let rest = t.strip_prefix(STATUS)?;
        let (line, body) = rest.split_once(": ").unwrap_or((rest, ""));
        let code: u16 = line.get(..3)?.parse().ok()?;
        Some((code, line.trim().to_string(), excerpt(body)))
    });
    if let Some((code, line, body)) = status {
        let kind = match code {
            404 | 410 => io::ErrorKind::NotFound,
            401 | 403 => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::Other,
        };
        let message = if body.is_empty() {
            line.clone()
        } else {
            format!("{line} (\"{body}\")")
        };
        let retry = !(400..500).contains(&code) || code == 408 || code == 429;
        let retry = retry && !(300..400).contains(&code);
        return Failure {
            kind,
            message,
            retry,
            problem: Problem::Status(code, line),
        };
    }
    let (kind, what) = match &e {
        E::NotFound { .. } => (io::ErrorKind::NotFound, Some("not found")),
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => {
            (io::ErrorKind::PermissionDenied, Some("access denied"))
        }
        E::InvalidPath { .. }
        | E::NotSupported { .. }
        | E::NotImplemented { .. }
        | E::UnknownConfigurationKey { .. }
        | E::Precondition { .. }
        | E::NotModified { .. }
        | E::AlreadyExists { .. } => (io::ErrorKind::Other, None),
        _ => {
            // A transport error: what the network said (the innermost
            // message), after what kind of failure it was.
            let what = chain
                .iter()
                .find_map(|s| s.downcast_ref::<object_store::client::HttpError>())
                .map(|h| match h.kind() {
                    object_store::client::HttpErrorKind::Connect => "cannot connect",
                    object_store::client::HttpErrorKind::Timeout => "timed out",
                    object_store::client::HttpErrorKind::Interrupted
                    | object_store::client::HttpErrorKind::Request => "the connection broke",
                    object_store::client::HttpErrorKind::Decode => "a bad answer",
                    _ => "the request failed",
                });
            let inner = texts.last().cloned().unwrap_or_default();
            let message = match what {
                Some(w) if !inner.is_empty() => format!("{w}: {}", excerpt(&inner)),
                _ => error_chain(&e),
            };
            return Failure::retryable(io::ErrorKind::Other, message);
        }
    };
    match what {
        Some(w) => Failure::fatal(kind, w),
        None => Failure::fatal(kind, error_chain(&e)),
    }
}

/// The error's message followed by its sources' (deduplicated), on one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    let mut depth = 0;
    while let Some(s) = src {
        let m = s.to_string();
        if !out.contains(&m) {
            out.push_str(": ");
            out.push_str(&m);
        }
        depth += 1;
        if depth > 16 {
            break;
        }
        src = s.source();
    }
    out
}

/// Runs `attempt` until it succeeds, fails for good or the budget is spent.
async fn with_retries<T, F, Fut>(
    loc: &Location,
    opts: &Options,
    offset: u64,
    mut attempt: F,
) -> io::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let mut n = 0;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(f) if f.retry && n < opts.retries => {
                tracing::debug!("{}: at byte {offset}: {}; retrying", loc.url(), f.message);
                tokio::time::sleep(opts.backoff_for(n)).await;
                n += 1;
            }
            Err(f) => return Err(f.into_error(loc.url(), offset, n)),
        }
    }
}

/// The object's size, from a HEAD request.
pub(crate) async fn head(loc: &Location, opts: &Options) -> io::Result<u64> {
    Ok(head_listed(loc, opts).await?.size)
}

/// [`head`], with the object's version ([`Listed`]).
async fn head_listed(loc: &Location, opts: &Options) -> io::Result<Listed> {
    with_retries(loc, opts, 0, || async {
        match tokio::time::timeout(opts.timeout, loc.store().head(loc.key())).await {
            Err(_) => Err(Failure::retryable(
                io::ErrorKind::TimedOut,
                format!("no answer to HEAD in {:?}", opts.timeout),
            )),
            Ok(Err(e)) => Err(classify(e)),
            Ok(Ok(meta)) => Ok(Listed::of(loc.url().to_string(), &meta)),
        }
    })
    .await
}

/// A body as object_store streams it.
pub(crate) type Body = BoxStream<'static, object_store::Result<Bytes>>;

/// How much of the range asked for an answer must hold ([`start_range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ends {
    /// All of it: the object is known to hold the whole range, and an
    /// answer ending before its end is an error.
    AsAsked,
    /// Up to the object's end, which may come first: the object's size is
    /// not known yet (the first block's request, made at opening in place
    /// of a HEAD, asks for a block of an object that may be smaller).
    /// object_store has already checked the answer's `Content-Range`
    /// against the range asked for, cut at the size it gives.
    AtObjectEnd,
}

/// How an object opened with the request for its first bytes
/// ([`open_first`]).
pub(crate) enum Opened {
    /// The range's answer: the object's size (from its `Content-Range`)
    /// and the body, its first bytes (fewer at the object's end).
    Range(u64, Body),
    /// The answer was no range with a size: the object's size from a HEAD
    /// made after it, and, when its server answers no ranges, that
    /// answer's error.
    Head(u64, Option<io::Error>),
}

/// Opens `loc` with a request for its first `want` bytes instead of a
/// HEAD (one round trip before the first byte, not two): the answer gives
/// the size and its body is the first range read. When that request fails
/// otherwise than for the whole object (a server answering ranges with
/// the whole object, an empty object's 416, an answer without the total,
/// a 5xx, the network), a HEAD gives the size as before. The first request
/// is made once (no retries); its body, read by [`fetch_into`], resumes
/// from where it stops within the retry budget.
///
/// # Errors
/// The first request finds the object missing or refused (401, 403, 404,
/// 410) or its redirects looping (the HEAD's answer would be the same);
/// the HEAD, made when the first failed otherwise, fails within the retry
/// budget.
pub(crate) async fn open_first(loc: &Location, opts: &Options, want: u64) -> io::Result<Opened> {
    match start_range(loc, opts, 0, want.max(1), None, Ends::AtObjectEnd).await {
        Ok((size, body)) => Ok(Opened::Range(size, body)),
        Err(f) => {
            tracing::debug!(
                "{}: the first range's request: {}; asking with HEAD",
                loc.url(),
                f.message
            );
            let no_ranges = f.problem == Problem::NoRanges;
            let e = f.into_error(loc.url(), 0, 0);
            if !no_ranges && remote_error(&e).is_some_and(|r| r.whole_object()) {
                return Err(e);
            }
            let size = head(loc, opts).await?;
            Ok(Opened::Head(size, no_ranges.then_some(e)))
        }
    }
}

/// Starts a request for bytes `start..end`; checks that the answer is that
/// range (or, with [`Ends::AtObjectEnd`], its part before the object's
/// end) of an object of `size` bytes (when known). The object's size, from
/// the answer's `Content-Range` (`bytes A-B/SIZE`, which object_store reads
/// for HTTP and S3 alike), and the body.
pub(crate) async fn start_range(
    loc: &Location,
    opts: &Options,
    start: u64,
    end: u64,
    size: Option<u64>,
    ends: Ends,
) -> Result<(u64, Body), Failure> {
    let options = GetOptions {
        range: Some(GetRange::Bounded(start..end)),
        ..Default::default()
    };
    let got =
        match tokio::time::timeout(opts.timeout, loc.store().get_opts(loc.key(), options)).await {
            Err(_) => {
                return Err(Failure::retryable(
                    io::ErrorKind::TimedOut,
                    format!("no answer in {:?}", opts.timeout),
                ));
            }
            Ok(Err(e)) => return Err(classify(e)),
            Ok(Ok(g)) => g,
        };
    if let Some(size) = size
        && got.meta.size < size
    {
        return Err(Failure::fatal(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the object is now {} bytes, shorter than the {size} it had when opened (cut or replaced)",
                got.meta.size
            ),
        ));
    }
    if got.range.start != start {
        return Err(Failure::fatal(
            io::ErrorKind::InvalidData,
            format!(
                "asked for bytes {start}..{end}, the answer starts at {}",
                got.range.start
            ),
        ));
    }
    if ends == Ends::AsAsked && got.range.end < end {
        return Err(Failure::fatal(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the object ends at byte {}, before the end of the range asked for ({end})",
                got.range.end
            ),
        ));
    }
    Ok((got.meta.size, got.into_stream()))
}

/// Starts a request for the whole object, without a range (for a server
/// that answers none).
pub(crate) async fn start_whole(loc: &Location, opts: &Options) -> Result<Body, Failure> {
    let get = loc.store().get_opts(loc.key(), GetOptions::default());
    match tokio::time::timeout(opts.timeout, get).await {
        Err(_) => Err(Failure::retryable(
            io::ErrorKind::TimedOut,
            format!("no answer in {:?}", opts.timeout),
        )),
        Ok(Err(e)) => Err(classify(e)),
        Ok(Ok(g)) => Ok(g.into_stream()),
    }
}

/// The next piece of a body, or `None` at its end; a stall is a timeout.
pub(crate) async fn next_piece(
    stream: &mut Body,
    opts: &Options,
) -> Result<Option<Bytes>, Failure> {
    match tokio::time::timeout(opts.timeout, stream.next()).await {
        Err(_) => Err(Failure::retryable(
            io::ErrorKind::TimedOut,
            format!("no bytes for {:?} (stalled)", opts.timeout),
        )),
        Ok(None) => Ok(None),
        Ok(Some(Err(e))) => {
            // A body cut by the server or the network: the part read is
            // kept and the rest asked for again.
            let mut f = classify(e);
            f.retry = true;
            Err(f)
        }
        Ok(Some(Ok(b))) => Ok(Some(b)),
    }
}

/// The bytes of one range as the body's pieces arrived: kept as they are,
/// not joined, so that a range that came in one piece costs no copy
/// ([`fetch`]). Pieces smaller than
/// [`SMALL_PIECE`] are copied together into parts of about that size, so
/// that a server sending tiny pieces costs no bookkeeping per piece (nor
/// holds the larger buffers they were cut from).
#[derive(Debug, Default, Clone)]
pub(crate) struct Pieces {
    parts: Vec<Bytes>,
    /// Where each part starts in the range.
    starts: Vec<u64>,
    /// Small pieces not yet made a part; they start at `tail_start`.
    tail: BytesMut,
    tail_start: u64,
    len: u64,
}

/// Pieces under this size are joined into parts of about this size.
const SMALL_PIECE: usize = 16 * 1024;

impl Pieces {
    /// Appends a piece of the body.
    pub(crate) fn push(&mut self, b: Bytes) {
        if b.is_empty() {
            return;
        }
        if b.len() < SMALL_PIECE {
            if self.tail.is_empty() {
                self.tail_start = self.len;
            }
            self.tail.extend_from_slice(&b);
            self.len += b.len() as u64;
            if self.tail.len() >= SMALL_PIECE {
                self.seal();
            }
            return;
        }
        self.seal();
        self.starts.push(self.len);
        self.len += b.len() as u64;
        self.parts.push(b);
    }

    /// Makes the small pieces held in `tail` a part.
    fn seal(&mut self) {
        if !self.tail.is_empty() {
            self.starts.push(self.tail_start);
            self.parts.push(self.tail.split().freeze());
        }
    }

    /// The bytes held.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Copies the bytes from `pos` on into `buf`, as many as fit or are
    /// held; how many (0 at or past the end). (The readers of blocks and
    /// ranges copy each body into a buffer of their own now; the tests
    /// read the parts' layout with it.)
    #[cfg(test)]
    pub(crate) fn copy_at(&self, mut pos: u64, buf: &mut [u8]) -> usize {
        if pos >= self.len {
            return 0;
        }
        let mut n = 0;
        let sealed = if self.tail.is_empty() {
            self.len
        } else {
            self.tail_start
        };
        // The part holding `pos`: the last one starting at or before it.
        let mut i = self.starts.partition_point(|&s| s <= pos).saturating_sub(1);
        while pos < sealed && n < buf.len() && i < self.parts.len() {
            let part = &self.parts[i];
            let at = (pos - self.starts[i]) as usize;
            let k = (buf.len() - n).min(part.len() - at);
            buf[n..n + k].copy_from_slice(&part[at..at + k]);
            n += k;
            pos += k as u64;
            i += 1;
        }
        if n < buf.len() && pos >= sealed && !self.tail.is_empty() {
            let at = (pos - self.tail_start) as usize;
            let k = (buf.len() - n).min(self.tail.len() - at);
            buf[n..n + k].copy_from_slice(&self.tail[at..at + k]);
            n += k;
        }
        n
    }

    /// The bytes as one buffer: the one part itself when the body came in
    /// one piece, else joined (a copy).
    pub(crate) fn into_bytes(mut self) -> Bytes {
        self.seal();
        match self.parts.len() {
            0 => Bytes::new(),
            1 => self.parts.pop().unwrap_or_default(),
            _ => {
                let mut out = BytesMut::with_capacity(self.len as usize);
                for p in &self.parts {
                    out.extend_from_slice(p);
                }
                out.freeze()
            }
        }
    }
}

/// The bytes `offset..offset + len` of the object, resuming after a fault
/// where the last attempt stopped. `size`, when known, is the object's size
/// when it was opened: an object that has become shorter is an error.
pub(crate) async fn fetch(
    loc: &Location,
    opts: &Options,
    offset: u64,
    len: u64,
    size: Option<u64>,
) -> io::Result<Bytes> {
    Ok(fetch_pieces(loc, opts, offset, len, size)
        .await?
        .into_bytes())
}

/// Where the bytes of a range go as they arrive.
pub(crate) trait Sink {
    /// The bytes received so far.
    fn len(&self) -> u64;
    /// Appends a piece of the body.
    fn push(&mut self, b: Bytes);
}

impl Sink for Pieces {
    fn len(&self) -> u64 {
        Pieces::len(self)
    }

    fn push(&mut self, b: Bytes) {
        Pieces::push(self, b);
    }
}

/// A buffer the body is copied into as it comes: the body's pieces are
/// dropped at once, so the HTTP client reuses its read buffer in place,
/// and a buffer reused for block after block costs no fresh pages.
impl Sink for Vec<u8> {
    fn len(&self) -> u64 {
        Vec::len(self) as u64
    }

    fn push(&mut self, b: Bytes) {
        self.extend_from_slice(&b);
    }
}

/// [`fetch`], the bytes kept as the pieces they came in.
pub(crate) async fn fetch_pieces(
    loc: &Location,
    opts: &Options,
    offset: u64,
    len: u64,
    size: Option<u64>,
) -> io::Result<Pieces> {
    let mut out = Pieces::default();
    fetch_into(loc, opts, offset, len, size, &mut out, None).await?;
    Ok(out)
}

/// [`fetch`] into `out`, which receives exactly the `len` bytes when this
/// returns `Ok` (what it holds when called is the range's start, as a
/// cut body's bytes are: the request resumes after them). `first`, when
/// given, is the body of a request for the range already answered (the
/// first block's, made at opening): read as the first attempt, no request
/// made for it; what it lacks (cut, stalled) is asked for again from
/// where it stopped, as for any attempt. With `first`, `out` is empty when
/// called (that body starts at `offset`).
pub(crate) async fn fetch_into<S: Sink + Send>(
    loc: &Location,
    opts: &Options,
    offset: u64,
    len: u64,
    size: Option<u64>,
    out: &mut S,
    mut first: Option<Body>,
) -> io::Result<()> {
    let end = offset.checked_add(len).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: range at {offset} overflows", loc.url()),
        )
    })?;
    if len == 0 {
        return Ok(());
    }
    debug_assert!(
        first.is_none() || out.len() == 0,
        "a first body after bytes held"
    );
    // Grown as bytes arrive: a wrong length in an index costs no memory
    // beyond what the server actually sends.
    let mut retries = 0u32;
    loop {
        let at = offset + out.len();
        let res = async {
            let mut stream = match first.take() {
                Some(body) => body,
                None => {
                    start_range(loc, opts, at, end, size, Ends::AsAsked)
                        .await?
                        .1
                }
            };
            while let Some(piece) = next_piece(&mut stream, opts).await? {
                let room = end - offset - out.len();
                if piece.len() as u64 > room {
                    return Err(Failure::fatal(
                        io::ErrorKind::InvalidData,
                        format!("the server sent more than the {len} bytes asked for"),
                    ));
                }
                out.push(piece);
            }
            if out.len() < len {
                return Err(Failure::retryable(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the answer ended after {} of the {} bytes asked for",
                        offset + out.len() - at,
                        end - at
                    ),
                ));
            }
            Ok(())
        }
        .await;
        match res {
            Ok(()) => return Ok(()),
            Err(f) if f.retry && retries < opts.retries => {
                tracing::debug!(
                    "{}: at byte {}: {}; retrying",
                    loc.url(),
                    offset + out.len(),
                    f.message
                );
                tokio::time::sleep(opts.backoff_for(retries)).await;
                retries += 1;
            }
            Err(f) => return Err(f.into_error(loc.url(), offset + out.len(), retries)),
        }
    }
}

/// [`fetch`] for a range given by offset and length, the object's size
/// unknown (one request: no HEAD).
pub(crate) async fn get_range(
    loc: &Location,
    opts: &Options,
    offset: u64,
    len: u64,
) -> io::Result<Bytes> {
    fetch(loc, opts, offset, len, None).await
}

/// See [`crate::list_versions`].
pub(crate) async fn list(loc: &Location, opts: &Options) -> io::Result<Vec<Listed>> {
    if loc.scheme() == Scheme::Http {
        return Ok(vec![head_listed(loc, opts).await?]);
    }
    let key = loc.key().as_ref().to_string();
    let raw = loc.url();
    let last = raw.rsplit('/').next().unwrap_or("");
    let glob = last.contains('*');
    let mut out = Vec::new();
    if glob {
        // The directory part is listed and the last component matched.
        let (dir, pattern) = key.rsplit_once('/').unwrap_or(("", key.as_str()));
        let prefix = object_store::path::Path::from(dir);
        for meta in list_all(loc, opts, &prefix).await? {
            let name = meta.location.as_ref();
            let rest = if dir.is_empty() {
                name
            } else {
                match name.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) {
                    Some(r) => r,
                    None => continue,
                }
            };
            if !rest.contains('/') && glob_match(pattern, rest) {
                out.push(Listed::of(
                    loc.with_key(meta.location.clone()).url().to_string(),
                    &meta,
                ));
            }
        }
    } else if raw.ends_with('/') || key.is_empty() {
        for meta in list_all(loc, opts, loc.key()).await? {
            out.push(Listed::of(
                loc.with_key(meta.location.clone()).url().to_string(),
                &meta,
            ));
        }
    } else {
        match head_listed(loc, opts).await {
            Ok(one) => out.push(one),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                for meta in list_all(loc, opts, loc.key()).await? {
                    out.push(Listed::of(
                        loc.with_key(meta.location.clone()).url().to_string(),
                        &meta,
                    ));
                }
                if out.is_empty() {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("{}: no such object, and no object under it", loc.url()),
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
    out.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(out)
}

/// An object a listing (or a HEAD) found: its URL, size and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The object's URL.
    pub url: String,
    /// Its size in bytes.
    pub size: u64,
    /// What tells this version of the object from another of the same
    /// name and size: its ETag, else its Last-Modified time (`modified
    /// RFC3339`); `None` when the store gives neither. An object replaced
    /// by another of the same size gets another version (a store's ETag
    /// is new at each upload; a Last-Modified, at each second).
    pub version: Option<String>,
}

impl Listed {
    fn of(url: String, meta: &object_store::ObjectMeta) -> Listed {
        // object_store gives the epoch when a server sent no
        // Last-Modified: that is no version.
        let modified = (meta.last_modified.timestamp() != 0)
            .then(|| format!("modified {}", meta.last_modified.to_rfc3339()));
        Listed {
            url,
            size: meta.size,
            version: meta.e_tag.clone().or(modified),
        }
    }
}

/// Every object under `prefix` (a whole listing is retried on failure).
async fn list_all(
    loc: &Location,
    opts: &Options,
    prefix: &object_store::path::Path,
) -> io::Result<Vec<object_store::ObjectMeta>> {
    with_retries(loc, opts, 0, || async {
        let mut stream = loc.store().list(Some(prefix));
        let mut all = Vec::new();
        loop {
            match tokio::time::timeout(opts.timeout, stream.next()).await {
                Err(_) => {
                    return Err(Failure::retryable(
                        io::ErrorKind::TimedOut,
                        format!("listing stalled for {:?}", opts.timeout),
                    ));
                }
                Ok(None) => return Ok(all),
                Ok(Some(Err(e))) => return Err(classify(e)),
                Ok(Some(Ok(m))) => all.push(m),
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An HTML error page becomes its text on one short line.
    #[test]
    fn error_bodies_are_cut_to_a_short_excerpt() {
        let page = "<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: 404</p>\n        <p>Message: File not found.</p>\n    </body>\n</html>\n";
        assert_eq!(
            excerpt(page),
            "Error response Error response Error code: 404 Message: File not found."
        );
        let long = "x".repeat(5000);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT + 1, "{e}");
        assert!(e.ends_with('…'));
        assert_eq!(excerpt("  \r\n\t "), "");
        assert_eq!(excerpt("a\nb"), "a b");
    }

    #[test]
    fn no_ranges_is_one_line_naming_the_server() {
        let f = Failure {
            problem: Problem::NoRanges,
            ..Failure::fatal(io::ErrorKind::Unsupported, "no byte ranges")
        };
        let e = f.into_error("http://127.0.0.1:8000/a/x.warc.gz", 1234, 0);
        assert_eq!(
            e.to_string(),
            "http://127.0.0.1:8000 does not support byte ranges: needed for reading http://127.0.0.1:8000/a/x.warc.gz from byte 1234 (random access)"
        );
        let r = remote_error(&e).expect("a RemoteError inside");
        assert!(r.whole_object());
        assert_eq!(r.offset(), 1234);
        assert!(remote_error(&copy_error(&e)).is_some());
    }

    #[test]
    fn pieces_copy_across_parts_from_any_offset() {
        let mut p = Pieces::default();
        for part in [&b"abc"[..], b"", b"d", b"efgh"] {
            p.push(Bytes::copy_from_slice(part));
        }
        assert_eq!(p.len(), 8);
        let all = b"abcdefgh";
        for pos in 0..=9u64 {
            for n in 0..10 {
                let mut buf = vec![0u8; n];
                let k = p.copy_at(pos, &mut buf);
                let want =
                    &all[(pos as usize).min(8)..][..n.min(8usize.saturating_sub(pos as usize))];
                assert_eq!(&buf[..k], want, "at {pos}, {n} bytes");
            }
        }
        assert_eq!(&p.clone().into_bytes()[..], all);
        let mut one = Pieces::default();
        one.push(Bytes::from_static(b"xy"));
        assert_eq!(&one.into_bytes()[..], b"xy");
        assert!(Pieces::default().into_bytes().is_empty());
    }

    /// Tiny pieces are joined into parts of about `SMALL_PIECE` bytes,
    /// large ones kept as they are; the bytes read the same from anywhere.
    #[test]
    fn small_pieces_are_joined() {
        let big = SMALL_PIECE * 2;
        let all: Vec<u8> = (0..SMALL_PIECE * 5 + 7).map(|i| (i % 251) as u8).collect();
        let mut p = Pieces::default();
        // One byte at a time, then a large piece, then one byte at a time.
        let (a, rest) = all.split_at(SMALL_PIECE + 100);
        let (b, c) = rest.split_at(big);
        for &x in a {
            p.push(Bytes::copy_from_slice(&[x]));
        }
        p.push(Bytes::copy_from_slice(b));
        for &x in c {
            p.push(Bytes::copy_from_slice(&[x]));
        }
        assert_eq!(p.len(), all.len() as u64);
        assert!(p.parts.len() <= 6, "{} parts", p.parts.len());
        for pos in (0..all.len() as u64 + 2).step_by(997) {
            for n in [0, 1, 5000, SMALL_PIECE * 3] {
                let mut buf = vec![0u8; n];
                let k = p.copy_at(pos, &mut buf);
                let from = (pos as usize).min(all.len());
                let want = &all[from..(from + n).min(all.len())];
                assert_eq!(&buf[..k], want, "at {pos}, {n} bytes");
            }
        }
        assert!(p.into_bytes() == all);
    }
}
