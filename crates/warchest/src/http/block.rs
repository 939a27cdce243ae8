//! The payload digest of a whole `application/http` block, fed in pieces.

use super::{Chunking, HeadFinder, HttpHead, PayloadDigester, PayloadDigests};
use crate::digest::{Algorithm, Sha1Stream};
use crate::limits::Limits;

/// Takes the bytes of an HTTP block as they stream past, finds the end of
/// its head (holding at most [`Limits::max_http_head`] bytes), parses it,
/// and digests the body after it with a [`PayloadDigester`].
///
/// A block whose head does not end (Content-Length cut inside the head, or a
/// head beyond the limit) has an empty payload, as readers that look for
/// the payload after the head's blank line find none.
#[derive(Debug)]
pub struct BlockDigester {
    algorithm: Algorithm,
    limits: Limits,
    /// An unchunked SHA-1 body is hashed on a [`Sha1Stream`] the caller
    /// feeds (beside another stream: `check`'s block digest).
    paired_sha1: bool,
    state: State,
    /// Before the head ends, a head from an earlier block whose buffers
    /// the head is parsed into ([`BlockDigester::set_spare_head`]); after,
    /// the parsed head (`State::Body`'s `parsed`), or else that spare,
    /// given back by [`BlockDigester::finish_with_spare`].
    head: Option<HttpHead>,
}

#[derive(Debug)]
enum State {
    Head {
        buf: Vec<u8>,
        finder: HeadFinder,
    },
    Body {
        /// The head parsed (into `BlockDigester::head`).
        parsed: bool,
        body: Body,
    },
    /// The head passed the limit: the rest is ignored.
    Overlong,
}

#[derive(Debug)]
enum Body {
    /// Not chunked, SHA-1, paired: the payload is the raw body.
    Sha1(Sha1Stream),
    Digester(Box<PayloadDigester>),
}

impl BlockDigester {
    /// A digester using `algorithm` for the payload digests.
    pub fn new(algorithm: Algorithm, limits: Limits) -> Self {
        BlockDigester {
            algorithm,
            limits,
            paired_sha1: false,
            state: State::Head {
                buf: Vec::new(),
                finder: HeadFinder::new(),
            },
            head: None,
        }
    }

    /// The same, except that an unchunked SHA-1 body is left for the
    /// caller to feed to [`BlockDigester::sha1_body`] ([`BlockDigester::feed`]
    /// says from where), so that it can run beside another SHA-1.
    pub(crate) fn paired(algorithm: Algorithm, limits: Limits) -> Self {
        BlockDigester {
            paired_sha1: true,
            ..BlockDigester::new(algorithm, limits)
        }
    }

    /// Gives the digester a head from an earlier block to parse this
    /// block's head into, reusing its buffers (a caller that keeps the
    /// heads of many records, made and freed on different threads, need
    /// not allocate one per record).
    pub fn set_spare_head(&mut self, spare: HttpHead) {
        self.head = Some(spare);
    }

    /// Feeds the next bytes of the block.
    pub fn update(&mut self, data: &[u8]) {
        if let Some(k) = self.feed(data)
            && let Some(s) = self.sha1_body()
        {
            s.update(&data[k..]);
        }
    }

    /// The paired SHA-1 body stream, once the head is behind.
    pub(crate) fn sha1_body(&mut self) -> Option<&mut Sha1Stream> {
        match &mut self.state {
            State::Body {
                body: Body::Sha1(s),
                ..
            } => Some(s),
            _ => None,
        }
    }

    /// Feeds `data`, except to a paired SHA-1 body: then it returns where
    /// in `data` the bytes that body has not been fed begin, for the
    /// caller to feed.
    pub(crate) fn feed(&mut self, data: &[u8]) -> Option<usize> {
        match &mut self.state {
            State::Body { body, .. } => match body {
                Body::Sha1(_) => Some(0),
                Body::Digester(d) => {
                    d.update(data);
                    None
                }
            },
            State::Overlong => None,
            State::Head { buf, finder } => {
                let room = self.limits.max_http_head.saturating_sub(buf.len());
                let take = data.len().min(room.saturating_add(4));
                // Most heads end in the first piece: found and parsed there,
                // the piece (often the whole block) is not copied.
                if buf.is_empty() {
                    let mut first = HeadFinder::new();
                    if let Some(end) = first.find(&data[..take]) {
                        self.state = body(
                            self.algorithm,
                            self.paired_sha1,
                            &self.limits,
                            &mut self.head,
                            &data[..end],
                            &[],
                        );
                        return self.rest(data, end);
                    }
                    // It has looked at the bytes `buf` is about to hold.
                    *finder = first;
                }
                buf.extend_from_slice(&data[..take]);
                match finder.find(buf) {
                    Some(end) => {
                        let (head, first) = buf.split_at(end);
                        self.state = body(
                            self.algorithm,
                            self.paired_sha1,
                            &self.limits,
                            &mut self.head,
                            head,
                            first,
                        );
                        self.rest(data, take)
                    }
                    None => {
                        if buf.len() > self.limits.max_http_head {
                            self.state = State::Overlong;
                        }
                        None
                    }
                }
            }
        }
    }

    /// `data[k..]` is body: fed here, or left to the caller (see `feed`).
    fn rest(&mut self, data: &[u8], k: usize) -> Option<usize> {
        match &mut self.state {
            State::Body {
                body: Body::Digester(d),
                ..
            } => {
                d.update(&data[k..]);
                None
            }
            State::Body {
                body: Body::Sha1(_),
                ..
            } => Some(k),
            _ => None,
        }
    }

    /// The parsed head (when it ended and parsed) and the payload digests.
    pub fn finish(self) -> (Option<HttpHead>, PayloadDigests) {
        let (head, digests, _) = self.finish_with_spare();
        (head, digests)
    }

    /// [`BlockDigester::finish`], and, when no head was parsed, a head to
    /// give to the next digester: the one given to
    /// [`BlockDigester::set_spare_head`], untouched when no head was
    /// parsed into it, or else the head a failed parse went into, emptied
    /// (no start line, no fields, no notes; its buffers' capacity kept).
    pub fn finish_with_spare(self) -> (Option<HttpHead>, PayloadDigests, Option<HttpHead>) {
        let empty = || PayloadDigester::new(self.algorithm, false).finish();
        let mut spare = self.head;
        match self.state {
            State::Body { parsed, body } => {
                let digests = match body {
                    Body::Sha1(s) => {
                        let len = s.len();
                        let out = s.finalize();
                        PayloadDigests {
                            algorithm: Algorithm::Sha1,
                            payload: out,
                            raw: out,
                            payload_len: len,
                            raw_len: len,
                            chunking: Chunking::NotChunked,
                            trailing: 0,
                        }
                    }
                    Body::Digester(d) => (*d).finish(),
                };
                match parsed {
                    true => (spare, digests, None),
                    false => (None, digests, spare),
                }
            }
            State::Head { buf, .. } => {
                let mut h = spare.take().unwrap_or_else(HttpHead::empty);
                match h.parse_unterminated_in(&buf, &self.limits) {
                    Ok(()) => (Some(h), empty(), None),
                    // Its buffers are still good to parse into.
                    Err(_) => (None, empty(), Some(h)),
                }
            }
            State::Overlong => (None, empty(), spare),
        }
    }
}

/// The state once the head (`head`, up to its blank line) has ended, fed
/// the first body bytes, `first`. The head is parsed into `spare` (the
/// spare head when there is one), which holds it after (or, when it does
/// not parse, the spare emptied).
fn body(
    alg: Algorithm,
    paired_sha1: bool,
    limits: &Limits,
    spare: &mut Option<HttpHead>,
    head: &[u8],
    first: &[u8],
) -> State {
    let h = spare.get_or_insert_with(HttpHead::empty);
    // What `HttpHead::parse_with_limits` gives on these bytes, which end
    // at the blank line the finder found.
    let parsed = matches!(h.parse_in(head, limits), Some((Ok(()), _)));
    let chunked = parsed && h.is_chunked();
    let mut body = if paired_sha1 && !chunked && alg == Algorithm::Sha1 {
        Body::Sha1(Sha1Stream::new())
    } else {
        Body::Digester(Box::new(PayloadDigester::new(alg, chunked)))
    };
    match &mut body {
        Body::Sha1(s) => s.update(first),
        Body::Digester(d) => d.update(first),
    }
    State::Body { parsed, body }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Hasher;

    #[test]
    fn chunked_body_split_anywhere() {
        let block = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        let want = Hasher::digest(Algorithm::Sha1, b"hello");
        for split in 0..block.len() {
            let mut d = BlockDigester::new(Algorithm::Sha1, Limits::default());
            d.update(&block[..split]);
            d.update(&block[split..]);
            let (head, dig) = d.finish();
            assert_eq!(head.unwrap().status(), Some(200), "split {split}");
            assert_eq!(dig.payload, want, "split {split}");
        }
    }

    #[test]
    fn unterminated_head_has_empty_payload() {
        let mut d = BlockDigester::new(Algorithm::Sha1, Limits::default());
        d.update(b"HTTP/1.1 200 OK\r\nServer: x\r\n");
        let (head, dig) = d.finish();
        assert_eq!(head.unwrap().status(), Some(200));
        assert_eq!(dig.payload, Hasher::digest(Algorithm::Sha1, b""));
    }

    #[test]
    fn overlong_head_is_bounded() {
        let limits = Limits {
            max_http_head: 100,
            ..Limits::default()
        };
        let mut d = BlockDigester::new(Algorithm::Sha1, limits);
        for _ in 0..1000 {
            d.update(&[b'a'; 1000]);
        }
        let (head, dig) = d.finish();
        assert!(head.is_none());
        assert_eq!(dig.raw_len, 0);
    }
}

/// Reads an HTTP head from the start of `block`, consuming exactly its
/// bytes, so that `block` is left at the first byte of the body. Holds at
/// most [`Limits::max_http_head`] bytes.
///
/// Returns `None`, having consumed what it looked at, when the block does
/// not hold a whole head within the limit or the head is not HTTP.
/// [`HeadReader`] does the same for block after block without a new head
/// each time.
///
/// # Errors
/// Reading `block` failed.
pub fn read_head(
    block: &mut impl std::io::BufRead,
    limits: &Limits,
) -> std::io::Result<Option<HttpHead>> {
    let mut r = HeadReader::new();
    Ok(match r.step(block, limits, Keep::Nothing)? {
        true => Some(r.head),
        false => None,
    })
}

/// [`read_head`] that hands back the bytes it consumed when no head is
/// found, to be read before the rest of `block` (as [`read_head_or_bytes`]
/// does, without taking a head cut short by the block's end): for
/// [`Record::http`](crate::archive::Record::http), whose block must stay
/// whole when it does not start with a head.
pub(crate) fn read_head_keeping(
    block: &mut impl std::io::BufRead,
    limits: &Limits,
) -> std::io::Result<Result<HttpHead, Vec<u8>>> {
    head_or_bytes(block, limits, Keep::Bytes)
}

/// As [`read_head`], for readers that must not lose the bytes of a block
/// that is not HTTP (warcio-style iterators hand the whole block over
/// then): when no head is found, the bytes consumed are handed back to be
/// read before the rest of `block`. A head cut short by the end of the
/// block is parsed as it is, as warcio does.
///
/// # Errors
/// Reading `block` failed.
pub fn read_head_or_bytes(
    block: &mut impl std::io::BufRead,
    limits: &Limits,
) -> std::io::Result<Result<HttpHead, Vec<u8>>> {
    head_or_bytes(block, limits, Keep::BytesAndCutHead)
}

/// The head of `block`, or the bytes looked at for it, `keep` saying how.
fn head_or_bytes(
    block: &mut impl std::io::BufRead,
    limits: &Limits,
    keep: Keep,
) -> std::io::Result<Result<HttpHead, Vec<u8>>> {
    let mut r = HeadReader::new();
    Ok(match r.step(block, limits, keep)? {
        true => Ok(r.head),
        false => Err(r.bytes),
    })
}

/// Reads the HTTP heads of block after block into the same head and
/// buffers: what [`read_head`] does, without a new head (and its
/// allocations) for each block. For a loop over records that looks at
/// each head and moves on.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let limits = warchest::Limits::default();
/// let mut heads = warchest::http::HeadReader::new();
/// let mut block: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
/// let head = heads.read(&mut block, &limits)?.expect("a head");
/// assert_eq!(head.status(), Some(200));
/// assert_eq!(block, b"hi");
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct HeadReader {
    head: HttpHead,
    /// A head that spans the block's first chunk is gathered here (and,
    /// for [`read_head_or_bytes`], the bytes of a block that is not HTTP).
    bytes: Vec<u8>,
}

impl Default for HeadReader {
    fn default() -> Self {
        HeadReader::new()
    }
}

impl HeadReader {
    /// A reader with empty buffers.
    pub fn new() -> Self {
        HeadReader {
            head: HttpHead::empty(),
            bytes: Vec::new(),
        }
    }

    /// [`read_head`] into this reader's head: the head of `block`,
    /// consumed from it, or `None` as [`read_head`] says.
    ///
    /// # Errors
    /// Reading `block` failed.
    pub fn read(
        &mut self,
        block: &mut impl std::io::BufRead,
        limits: &Limits,
    ) -> std::io::Result<Option<&HttpHead>> {
        Ok(match self.step(block, limits, Keep::Nothing)? {
            true => Some(&self.head),
            false => None,
        })
    }

    /// The one implementation of [`read_head`], [`read_head_keeping`] and
    /// [`read_head_or_bytes`] (`keep`: what to do when no head is found).
    /// True when `self.head` holds the head.
    fn step(
        &mut self,
        block: &mut impl std::io::BufRead,
        limits: &Limits,
        keep: Keep,
    ) -> std::io::Result<bool> {
        let or_bytes = keep != Keep::Nothing;
        self.bytes.clear();
        // The head usually lies whole in the first chunk: found and parsed
        // there in one walk, only the head copied (into the head). The
        // walk looks at what the general path below would gather first.
        let chunk = block.fill_buf()?;
        let take = chunk.len().min(limits.max_http_head.saturating_add(4));
        if let Some((parsed, end)) = self.head.parse_in(&chunk[..take], limits) {
            if parsed.is_err() && or_bytes {
                self.bytes.extend_from_slice(&chunk[..end]);
            }
            block.consume(end);
            return Ok(parsed.is_ok());
        }
        let mut finder = HeadFinder::new();
        loop {
            let chunk = block.fill_buf()?;
            if chunk.is_empty() {
                return Ok(keep == Keep::BytesAndCutHead
                    && !self.bytes.is_empty()
                    && self.head.parse_unterminated_in(&self.bytes, limits).is_ok());
            }
            match take_head_bytes(&mut self.bytes, &mut finder, chunk, limits) {
                Step::Found(end, consumed) => {
                    block.consume(consumed);
                    return Ok(matches!(
                        self.head.parse_in(&self.bytes[..end], limits),
                        Some((Ok(()), _))
                    ));
                }
                Step::More(consumed) => block.consume(consumed),
                Step::Overlong(consumed) => {
                    block.consume(consumed);
                    return Ok(false);
                }
            }
        }
    }
}

/// What [`HeadReader::step`] keeps when no head is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Nothing: what was looked at is consumed ([`read_head`]).
    Nothing,
    /// The bytes consumed, in `bytes` ([`read_head_keeping`]).
    Bytes,
    /// Those bytes, and a head cut short by the block's end is parsed as
    /// it is ([`read_head_or_bytes`], as warcio does).
    BytesAndCutHead,
}

enum Step {
    /// The head ends at `buf[..0]`; `.1` bytes of the chunk belong to it.
    Found(usize, usize),
    /// No end yet; the chunk's first `.0` bytes were taken.
    More(usize),
    /// No end within the limit; `.0` bytes taken.
    Overlong(usize),
}

/// Appends the head's share of `chunk` to `buf` (never more than the limit
/// plus the 4 bytes of a blank line) and looks for the head's end. On
/// `Found`, `buf` is cut to the head.
fn take_head_bytes(
    buf: &mut Vec<u8>,
    finder: &mut HeadFinder,
    chunk: &[u8],
    limits: &Limits,
) -> Step {
    let before = buf.len();
    let room = limits.max_http_head.saturating_sub(before);
    let take = chunk.len().min(room.saturating_add(4));
    buf.extend_from_slice(&chunk[..take]);
    match finder.find(buf) {
        Some(end) => {
            buf.truncate(end);
            Step::Found(end, end - before)
        }
        None if buf.len() > limits.max_http_head => Step::Overlong(take),
        None => Step::More(take),
    }
}

/// The payload of an HTTP message whose head has been read from `body`:
/// transfer coding (chunked) removed, and with `decode` the content coding
/// (gzip, deflate, br, zstd) too. A body announced as chunked but not
/// chunked is passed through as stored, as warcio does.
///
/// # Errors
/// With `decode`, a content coding warchest cannot decode.
pub fn payload_reader<'a, R: std::io::BufRead + 'a>(
    body: R,
    head: &HttpHead,
    decode: bool,
) -> Result<Box<dyn std::io::Read + 'a>, super::HttpError> {
    let mut codings = Vec::new();
    if decode {
        codings.extend(head.content_encoding());
    }
    codings.extend(head.transfer_encoding());
    super::decode_content(body, &codings)
}

/// [`payload_reader`] for a body that can move between threads.
///
/// # Errors
/// As [`payload_reader`].
pub fn payload_reader_send<'a, R: std::io::BufRead + Send + 'a>(
    body: R,
    head: &HttpHead,
    decode: bool,
) -> Result<Box<dyn std::io::Read + Send + 'a>, super::HttpError> {
    let mut codings = Vec::new();
    if decode {
        codings.extend(head.content_encoding());
    }
    codings.extend(head.transfer_encoding());
    super::coding::decode_content_send(body, &codings)
}

/// The payload of an HTTP message whose head has been read from `body`,
/// decoded as far as it can be, never failing on the codings: the transfer
/// coding is removed when warchest knows it (else the body is given as
/// stored), then the content coding; a content coding that is unknown, or
/// whose data does not decode before the first decoded byte (an empty body
/// with `Content-Encoding: gzip`, as revisits have; a body that was not
/// compressed after all), leaves the de-chunked bytes as they are. This is
/// what warcio's `content_stream()` gives.
///
/// [`payload_reader_lenient_noted`] gives the same bytes and tells what
/// the reader fell back on, at every chunked stage of a transfer coding
/// chain (`identity, chunked`, `chunked, chunked`, `gzip, chunked`).
pub fn payload_reader_lenient<'a, R: std::io::BufRead + Send + 'a>(
    body: R,
    head: &HttpHead,
) -> Box<dyn std::io::Read + Send + 'a> {
    payload_reader_lenient_noted(body, head).0
}

/// [`payload_reader_lenient`], with the [`PayloadNotes`] that say, once
/// the reader has been read, which [`PayloadFallback`]s it took (none for
/// a payload decoded as its head says).
///
/// ```
/// use std::io::Read;
/// use warchest::http::{HttpHead, PayloadFallback, payload_reader_lenient_noted};
///
/// let head = HttpHead::parse(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n")
///     .unwrap()
///     .unwrap()
///     .0;
/// let (mut r, notes) = payload_reader_lenient_noted(&b"not gzip"[..], &head);
/// let mut body = Vec::new();
/// r.read_to_end(&mut body).unwrap();
/// assert_eq!(body, b"not gzip");
/// assert!(notes.get().contains(PayloadFallback::ContentUndecoded));
/// ```
pub fn payload_reader_lenient_noted<'a, R: std::io::BufRead + Send + 'a>(
    mut body: R,
    head: &HttpHead,
) -> (Box<dyn std::io::Read + Send + 'a>, PayloadNotes) {
    let notes = PayloadNotes::default();
    // Notes a fallback on the first byte given, so an empty body (which
    // comes out the same either way) notes nothing; and any read error.
    let noted = |inner: Box<dyn std::io::Read + Send + 'a>, on_bytes| {
        let r: Box<dyn std::io::Read + Send + 'a> = Box::new(Noted {
            inner,
            notes: notes.clone(),
            on_bytes,
        });
        (r, notes.clone())
    };
    let mut transfer = head.transfer_encoding();
    // `identity` changes nothing: gone, so `identity, chunked` is plain
    // chunking below.
    transfer.retain(|c| *c != super::Coding::Identity);
    // Codings it cannot undo, or more than it will stack: the body as
    // stored (lenient, as for any other undecodable body).
    if !transfer.iter().all(|c| c.is_supported())
        || transfer.len() + head.content_encoding().len() > super::coding::MAX_CODINGS
    {
        return noted(Box::new(body), Some(PayloadFallback::TransferKept));
    }
    // A body announced as chunked that is not (its first line is no chunk
    // size) is given whole, as warcio gives it, stray line ends included.
    if transfer.contains(&super::Coding::Chunked)
        && body.fill_buf().ok().and_then(super::sniff_chunked) == Some(false)
    {
        transfer.retain(|c| *c != super::Coding::Chunked);
        notes.set(PayloadFallback::NotChunked);
    }
    // Chunking is undone here, not in decode_content_send, so the reader
    // can say how it ended, at every chunked stage of a chain; the same
    // lenient reader, so the same bytes. The last coding applied is undone
    // first: straight on `body` when it is chunked (nearly every chunked
    // body: no buffer added).
    let (first, rest): (Box<dyn std::io::Read + Send + 'a>, &[super::Coding]) =
        match transfer.split_last() {
            Some((super::Coding::Chunked, rest)) => (
                Box::new(ChunkNoting {
                    inner: super::ChunkedReader::lenient(body),
                    notes: notes.clone(),
                }),
                rest,
            ),
            _ => (Box::new(body), &transfer[..]),
        };
    let mut raw = first;
    for c in rest.iter().rev() {
        raw = if *c == super::Coding::Chunked {
            Box::new(ChunkNoting {
                inner: super::ChunkedReader::lenient(std::io::BufReader::new(raw)),
                notes: notes.clone(),
            })
        } else {
            match super::coding::decode_content_send(raw, std::slice::from_ref(c)) {
                Ok(r) => r,
                // Unreachable: the codings were checked above.
                Err(_) => return noted(Box::new(std::io::empty()), None),
            }
        };
    }
    let content = head.content_encoding();
    let content: Vec<_> = content
        .into_iter()
        .filter(|c| *c != super::Coding::Identity)
        .collect();
    if content.is_empty() {
        return noted(raw, None);
    }
    if !content.iter().all(|c| c.is_supported()) {
        return noted(raw, Some(PayloadFallback::ContentUnknown));
    }
    noted(Box::new(Fallback::new(raw, &content, notes.clone())), None)
}

/// A way a lenient payload reader ([`payload_reader_lenient_noted`]) gave
/// other bytes than a payload decoded as its head says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PayloadFallback {
    /// A transfer coding warchest does not know (or more codings than
    /// [`MAX_CODINGS`](super::MAX_CODINGS)): the body given as stored.
    TransferKept,
    /// Announced as chunked but not chunked: the body given whole.
    NotChunked,
    /// Chunked at first, then not (a bad chunk size line): the rest of
    /// the body given as stored after the chunks before.
    ChunkingAbandoned,
    /// A content coding warchest does not know: the de-chunked bytes
    /// given as stored.
    ContentUnknown,
    /// The content coding did not decode before its first byte (a body
    /// not compressed after all): the de-chunked bytes given as stored.
    ContentUndecoded,
    /// The body was cut short (a truncated record: before its last chunk,
    /// or inside its compressed data): it ends where its data ends.
    CutShort,
    /// A read error ended the payload (the reader returned it).
    ReadError,
}

impl PayloadFallback {
    /// Every fallback, in the order reports list them.
    pub const ALL: [PayloadFallback; 7] = [
        PayloadFallback::TransferKept,
        PayloadFallback::NotChunked,
        PayloadFallback::ChunkingAbandoned,
        PayloadFallback::ContentUnknown,
        PayloadFallback::ContentUndecoded,
        PayloadFallback::CutShort,
        PayloadFallback::ReadError,
    ];

    /// The kebab-case name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            PayloadFallback::TransferKept => "transfer-coding-kept",
            PayloadFallback::NotChunked => "not-chunked",
            PayloadFallback::ChunkingAbandoned => "chunking-abandoned",
            PayloadFallback::ContentUnknown => "content-coding-unknown",
            PayloadFallback::ContentUndecoded => "content-coding-undecoded",
            PayloadFallback::CutShort => "cut-short",
            PayloadFallback::ReadError => "read-error",
        }
    }

    /// A short phrase for messages: "content coding did not decode".
    pub fn describe(self) -> &'static str {
        match self {
            PayloadFallback::TransferKept => "transfer coding unknown, body as stored",
            PayloadFallback::NotChunked => "announced as chunked but not chunked",
            PayloadFallback::ChunkingAbandoned => "chunking given up, the rest as stored",
            PayloadFallback::ContentUnknown => "content coding unknown, bytes as stored",
            PayloadFallback::ContentUndecoded => "content coding did not decode, bytes as stored",
            PayloadFallback::CutShort => "body cut short",
            PayloadFallback::ReadError => "a read error ended it",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl std::fmt::Display for PayloadFallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// A set of [`PayloadFallback`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PayloadFallbacks(u8);

impl PayloadFallbacks {
    /// No fallback: the payload was decoded as its head says.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `f` is in the set.
    pub fn contains(self, f: PayloadFallback) -> bool {
        self.0 & f.bit() != 0
    }

    /// Adds `f`.
    pub fn insert(&mut self, f: PayloadFallback) {
        self.0 |= f.bit();
    }

    /// Takes `f` out.
    pub fn remove(&mut self, f: PayloadFallback) {
        self.0 &= !f.bit();
    }

    /// The fallbacks in the set, in [`PayloadFallback::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = PayloadFallback> {
        PayloadFallback::ALL
            .into_iter()
            .filter(move |f| self.contains(*f))
    }
}

/// What a reader from [`payload_reader_lenient_noted`] fell back on so
/// far; shared with the reader, so it can be asked after reading (or
/// while).
#[derive(Debug, Clone, Default)]
pub struct PayloadNotes(std::sync::Arc<std::sync::atomic::AtomicU8>);

impl PayloadNotes {
    /// The fallbacks taken so far.
    pub fn get(&self) -> PayloadFallbacks {
        PayloadFallbacks(self.0.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn set(&self, f: PayloadFallback) {
        self.0
            .fetch_or(f.bit(), std::sync::atomic::Ordering::Relaxed);
    }
}

/// A lenient chunked reader that notes where it gave up on chunking, and
/// a body that ended before its last chunk.
struct ChunkNoting<R> {
    inner: super::ChunkedReader<R>,
    notes: PayloadNotes,
}

impl<R: std::io::BufRead> std::io::Read for ChunkNoting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.inner.fell_back().is_some() {
            self.notes.set(PayloadFallback::ChunkingAbandoned);
        } else if n == 0
            && !buf.is_empty()
            && self.inner.decoder().end() == super::ChunkedEnd::Truncated
            // An empty body lacks its last chunk too, but comes out the
            // same: nothing is missing that was there.
            && self.inner.decoder().position() > 0
        {
            self.notes.set(PayloadFallback::CutShort);
        }
        Ok(n)
    }
}

/// The reader handed out: notes `on_bytes` at its first byte, and errors.
struct Noted<'a> {
    inner: Box<dyn std::io::Read + Send + 'a>,
    notes: PayloadNotes,
    on_bytes: Option<PayloadFallback>,
}

impl std::io::Read for Noted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                if n > 0
                    && let Some(f) = self.on_bytes.take()
                {
                    self.notes.set(f);
                }
                Ok(n)
            }
            Err(e) => {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    self.notes.set(PayloadFallback::ReadError);
                }
                Err(e)
            }
        }
    }
}

/// Raw bytes a decoder took before its first output, kept (up to
/// [`FALLBACK_LIMIT`]) so they can be handed out instead if it fails.
struct Tap<R> {
    inner: R,
    log: Vec<u8>,
    recording: bool,
}

/// Most raw bytes kept while waiting for a decoder's first output.
const FALLBACK_LIMIT: usize = 1 << 20;

type SharedTap<'a> = std::sync::Arc<std::sync::Mutex<Tap<Box<dyn std::io::Read + Send + 'a>>>>;

struct TapReader<'a>(SharedTap<'a>);

impl std::io::Read for TapReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = t.inner.read(buf)?;
        if t.recording {
            if t.log.len() + n > FALLBACK_LIMIT {
                t.recording = false;
                t.log = Vec::new();
            } else {
                t.log.extend_from_slice(&buf[..n]);
            }
        }
        Ok(n)
    }
}

struct Fallback<'a> {
    tap: SharedTap<'a>,
    decoder: Option<Box<dyn std::io::Read + Send + 'a>>,
    /// Raw bytes to hand out after a failed start, then the rest.
    replay: Option<std::io::Cursor<Vec<u8>>>,
    /// The decoder gave bytes.
    produced: bool,
    notes: PayloadNotes,
}

impl<'a> Fallback<'a> {
    fn new(
        raw: Box<dyn std::io::Read + Send + 'a>,
        codings: &[super::Coding],
        notes: PayloadNotes,
    ) -> Self {
        let tap = std::sync::Arc::new(std::sync::Mutex::new(Tap {
            inner: raw,
            log: Vec::new(),
            recording: true,
        }));
        let decoder = super::coding::decode_content_send(TapReader(tap.clone()), codings).ok();
        let replay = decoder.is_none().then(|| std::io::Cursor::new(Vec::new()));
        Fallback {
            tap,
            decoder,
            replay,
            produced: false,
            notes,
        }
    }
}

impl std::io::Read for Fallback<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(r) = &mut self.replay {
            let mut n = r.read(buf)?;
            if n == 0 && !buf.is_empty() {
                let mut t = self.tap.lock().unwrap_or_else(|p| p.into_inner());
                n = t.inner.read(buf)?;
            }
            // Only bytes given as stored are a fallback: an empty body
            // (a revisit's) is empty decoded or not.
            if n > 0 {
                self.notes.set(PayloadFallback::ContentUndecoded);
            }
            return Ok(n);
        }
        let Some(d) = self.decoder.as_mut() else {
            return Ok(0);
        };
        match d.read(buf) {
            Ok(n) => {
                if n > 0 {
                    self.produced = true;
                    let mut t = self.tap.lock().unwrap_or_else(|p| p.into_inner());
                    t.recording = false;
                    t.log = Vec::new();
                }
                Ok(n)
            }
            Err(e) => {
                let mut t = self.tap.lock().unwrap_or_else(|p| p.into_inner());
                if !t.recording {
                    // A body cut short after it decoded (a truncated
                    // record) ends where the data ends, as in warcio. An
                    // end that is the archive's own failure (a file that
                    // shrank, a remote source cut off: our Error inside,
                    // which keeps its I/O kind) is no such end.
                    if e.kind() == std::io::ErrorKind::UnexpectedEof
                        && self.produced
                        && crate::Error::carried_by(&e).is_none()
                    {
                        self.notes.set(PayloadFallback::CutShort);
                        return Ok(0);
                    }
                    return Err(e);
                }
                // Nothing decoded yet: the body was not what its coding
                // said. Hand out the raw bytes instead.
                t.recording = false;
                let log = std::mem::take(&mut t.log);
                drop(t);
                self.decoder = None;
                self.replay = Some(std::io::Cursor::new(log));
                self.read(buf)
            }
        }
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;
    use std::io::{BufReader, Read};

    #[test]
    fn head_then_decoded_payload() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, b"hello world").unwrap();
        let body = gz.finish().unwrap();
        let mut block = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            body.len()
        )
        .into_bytes();
        block.extend(&body);
        block.extend(b"\r\n0\r\n\r\n");
        for cap in [1, 7, 4096] {
            let mut r = BufReader::with_capacity(cap, &block[..]);
            let head = read_head(&mut r, &Limits::default()).unwrap().unwrap();
            assert_eq!(head.status(), Some(200));
            let mut raw = Vec::new();
            payload_reader(&mut r, &head, false)
                .unwrap()
                .read_to_end(&mut raw)
                .unwrap();
            assert_eq!(raw, body, "de-chunked only, cap {cap}");
            let mut r = BufReader::with_capacity(cap, &block[..]);
            let head = read_head(&mut r, &Limits::default()).unwrap().unwrap();
            let mut text = String::new();
            payload_reader(&mut r, &head, true)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "hello world");
        }
    }

    #[test]
    fn no_head_within_limit() {
        let limits = Limits {
            max_http_head: 10,
            ..Limits::default()
        };
        let data = vec![b'a'; 1000];
        let mut r = &data[..];
        assert!(read_head(&mut r, &limits).unwrap().is_none());
    }

    #[test]
    fn bytes_that_are_not_http_are_handed_back() {
        for cap in [1, 3, 4096] {
            let data = b"just some text\r\n\r\nand more";
            let mut r = BufReader::with_capacity(cap, &data[..]);
            let back = read_head_or_bytes(&mut r, &Limits::default())
                .unwrap()
                .unwrap_err();
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).unwrap();
            assert_eq!([back, rest].concat(), data, "cap {cap}");

            let data = b"HTTP/1.0 404 Not Found\r\nA: b\r\n\r\nbody";
            let mut r = BufReader::with_capacity(cap, &data[..]);
            let head = read_head_or_bytes(&mut r, &Limits::default())
                .unwrap()
                .unwrap();
            assert_eq!(head.status(), Some(404));
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).unwrap();
            assert_eq!(rest, b"body", "cap {cap}");

            // Cut short before the blank line: parsed as it is.
            let data = b"HTTP/1.1 204 No Content\r\nA: b\r\n";
            let mut r = BufReader::with_capacity(cap, &data[..]);
            let head = read_head_or_bytes(&mut r, &Limits::default())
                .unwrap()
                .unwrap();
            assert_eq!(head.status(), Some(204));
        }
        let mut empty: &[u8] = b"";
        assert!(
            read_head_or_bytes(&mut empty, &Limits::default())
                .unwrap()
                .unwrap_err()
                .is_empty()
        );
    }

    #[test]
    fn lenient_payloads_fall_back_to_the_bytes_as_stored() {
        let parse = |h: &[u8]| HttpHead::parse(h).unwrap().unwrap().0;
        let gz = parse(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n");
        let read = |r: &mut dyn Read| {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map(|_| v)
        };
        // Empty body (a revisit's), and a body that is not gzip at all.
        assert_eq!(
            read(&mut payload_reader_lenient(&b""[..], &gz)).unwrap(),
            b""
        );
        assert_eq!(
            read(&mut payload_reader_lenient(&b"plain text"[..], &gz)).unwrap(),
            b"plain text"
        );
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, b"hello").unwrap();
        let body = enc.finish().unwrap();
        assert_eq!(
            read(&mut payload_reader_lenient(&body[..], &gz)).unwrap(),
            b"hello"
        );
        // Cut short: what decoded, then the end.
        let cut = &body[..body.len() - 6];
        let got = read(&mut payload_reader_lenient(cut, &gz)).unwrap();
        assert!(b"hello".starts_with(&got));
        let not_chunked = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(
            read(&mut payload_reader_lenient(&b"\n<html>"[..], &not_chunked)).unwrap(),
            b"\n<html>"
        );
        // Cut short by a failure of the archive, not by its end: an error.
        let failing = BufReader::new(cut.chain(Shrank));
        let e = read(&mut payload_reader_lenient(failing, &gz)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("a.warc: offset 99"), "{e}");
        let odd = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: rot13\r\n\r\n");
        assert_eq!(
            read(&mut payload_reader_lenient(&b"abc"[..], &odd)).unwrap(),
            b"abc"
        );
    }

    /// The cases above, each with what the reader notes it fell back on.
    #[test]
    fn lenient_payloads_note_their_fallbacks() {
        use PayloadFallback::*;
        let parse = |h: &[u8]| HttpHead::parse(h).unwrap().unwrap().0;
        let gz = parse(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n");
        // The bytes read (or the error) and the notes after reading.
        fn noted<R: std::io::BufRead + Send>(
            body: R,
            head: &HttpHead,
        ) -> (std::io::Result<Vec<u8>>, Vec<PayloadFallback>) {
            let (mut r, notes) = payload_reader_lenient_noted(body, head);
            let mut v = Vec::new();
            let got = r.read_to_end(&mut v).map(|_| v);
            (got, notes.get().iter().collect())
        }
        // An empty body comes out the same decoded or not: nothing noted.
        let (got, notes) = noted(&b""[..], &gz);
        assert_eq!(got.unwrap(), b"");
        assert_eq!(notes, []);
        let (got, notes) = noted(&b"plain text"[..], &gz);
        assert_eq!(got.unwrap(), b"plain text");
        assert_eq!(notes, [ContentUndecoded]);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, b"hello").unwrap();
        let body = enc.finish().unwrap();
        let (got, notes) = noted(&body[..], &gz);
        assert_eq!(got.unwrap(), b"hello");
        assert_eq!(notes, []);
        let cut = &body[..body.len() - 6];
        let (got, notes) = noted(cut, &gz);
        assert!(b"hello".starts_with(&got.unwrap()));
        assert_eq!(notes, [CutShort]);
        let not_chunked = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let (got, notes) = noted(&b"\n<html>"[..], &not_chunked);
        assert_eq!(got.unwrap(), b"\n<html>");
        assert_eq!(notes, [NotChunked]);
        let failing = BufReader::new(cut.chain(Shrank));
        let (got, notes) = noted(failing, &gz);
        assert_eq!(got.unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);
        assert_eq!(notes, [ReadError]);
        let odd = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: rot13\r\n\r\n");
        let (got, notes) = noted(&b"abc"[..], &odd);
        assert_eq!(got.unwrap(), b"abc");
        assert_eq!(notes, [TransferKept]);
        let unknown = parse(b"HTTP/1.1 200 OK\r\nContent-Encoding: x-rot13\r\n\r\n");
        let (got, notes) = noted(&b"abc"[..], &unknown);
        assert_eq!(got.unwrap(), b"abc");
        assert_eq!(notes, [ContentUnknown]);
        // Clean gzip inside clean chunking: nothing noted.
        let both = parse(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        let mut chunked = format!("{:x}\r\n", body.len()).into_bytes();
        chunked.extend(&body);
        chunked.extend(b"\r\n0\r\n\r\n");
        for cap in [1, 7, 4096] {
            let (got, notes) = noted(BufReader::with_capacity(cap, &chunked[..]), &both);
            assert_eq!(got.unwrap(), b"hello", "cap {cap}");
            assert_eq!(notes, [], "cap {cap}");
        }
        // Chunking: cut before its last chunk; given up after a chunk (seen
        // whole, the sniff finds it is not chunked: given whole); a missing
        // final line end (harmless) and an empty body note nothing.
        let chunked_only = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let odd: &[u8] = b"3\r\nabc\r\nzz\r\nrest";
        for (body, cap, want, notes_want) in [
            (&b"5\r\nhel"[..], 1, &b"hel"[..], &[CutShort][..]),
            (b"5\r\nhel", 4096, b"hel", &[CutShort]),
            (odd, 1, b"abczz\r\nrest", &[ChunkingAbandoned]),
            (odd, 4096, odd, &[NotChunked]),
            (b"3\r\nabc\r\n0\r\n", 1, b"abc", &[]),
            (b"3\r\nabc\r\n0\r\n", 4096, b"abc", &[]),
            (b"", 1, b"", &[]),
        ] {
            let (got, notes) = noted(BufReader::with_capacity(cap, body), &chunked_only);
            assert_eq!(got.unwrap(), want, "{body:?} cap {cap}");
            assert_eq!(notes, notes_want, "{body:?} cap {cap}");
            // The same bytes as the stack of decoders gives, which undid
            // chunking before.
            if notes_want != [NotChunked] {
                let mut plain = Vec::new();
                let chunked = [crate::http::Coding::Chunked];
                crate::http::decode_content_send(BufReader::with_capacity(cap, body), &chunked)
                    .unwrap()
                    .read_to_end(&mut plain)
                    .unwrap();
                assert_eq!(plain, want, "{body:?} cap {cap}");
            }
        }
        // A chain with chunked in it notes the same: `identity, chunked`
        // (identity kept by transfer_encoding) and `chunked, chunked`.
        let id_chunked = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity, chunked\r\n\r\n");
        assert_eq!(
            id_chunked.transfer_encoding(),
            [crate::http::Coding::Identity, crate::http::Coding::Chunked]
        );
        for (body, cap, want, notes_want) in [
            (&b"5\r\nhel"[..], 4096, &b"hel"[..], &[CutShort][..]),
            (odd, 1, b"abczz\r\nrest", &[ChunkingAbandoned]),
            (b"3\r\nabc\r\n0\r\n\r\n", 1, b"abc", &[]),
        ] {
            let (got, notes) = noted(BufReader::with_capacity(cap, body), &id_chunked);
            assert_eq!(got.unwrap(), want, "{body:?} cap {cap}");
            assert_eq!(notes, notes_want, "{body:?} cap {cap}");
        }
        let twice = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n");
        // Clean outer chunking around inner chunking cut short.
        let inner = b"5\r\nhel";
        let mut outer = format!("{:x}\r\n", inner.len()).into_bytes();
        outer.extend(inner);
        outer.extend(b"\r\n0\r\n\r\n");
        let (got, notes) = noted(&outer[..], &twice);
        assert_eq!(got.unwrap(), b"hel");
        assert_eq!(notes, [CutShort]);
        // Chunked, then not gzip inside: the de-chunked bytes, noted.
        let (got, notes) = noted(&b"3\r\nabc\r\n0\r\n\r\n"[..], &both);
        assert_eq!(got.unwrap(), b"abc");
        assert_eq!(notes, [ContentUndecoded]);
    }

    /// A source whose file shrank under the reader: the error a record's
    /// block gives then.
    struct Shrank;

    impl Read for Shrank {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            let e = crate::Error::from(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file shrank while it was being read",
            ));
            Err(e.at(crate::Position::at(99)).in_file("a.warc").into())
        }
    }
}
