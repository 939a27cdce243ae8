//! Objects read as files: [`RemoteFile`] (seekable, with read-ahead) and
//! [`RangeReader`] (one range, streamed).

use std::io::{self, Read, Seek, SeekFrom, Write};

use bytes::Bytes;
use futures_util::stream::BoxStream;
use tokio::task::JoinHandle;

use crate::request::{self, Failure, Problem, remote_error};
use crate::{Location, Options, runtime};

/// A range being fetched ahead of the reader.
struct Prefetch {
    start: u64,
    end: u64,
    task: JoinHandle<io::Result<Vec<u8>>>,
}

/// An object read as a file: `Read + Seek`, its size from the answer to its
/// first range request (or a HEAD), its bytes from range requests.
///
/// Sequential reading asks for ranges that double from
/// [`Options::min_chunk`] up to [`Options::chunk`], with the next range
/// fetched while the current one is read; a range grows only when the
/// reader waits for it (a reader slower than its store keeps small ranges
/// and holds less). A skip forward into the range
/// fetched ahead, or just past it, goes on as a scan (a reader skipping
/// payloads); any other seek outside what is held starts again at the
/// small size. At most two ranges are held, so memory
/// is bounded by twice [`Options::chunk`]: two buffers, each range's body
/// copied into one as it comes and the buffers reused range after range
/// (no allocation, and no fresh pages, per range). A range that cannot be read
/// within the retry budget, and an object that turns out shorter than its
/// size, are errors naming the URL and offset.
pub struct RemoteFile {
    loc: Location,
    opts: Options,
    size: u64,
    pos: u64,
    /// The range held.
    buf: Vec<u8>,
    /// The buffer of the range read before, for the next request.
    spare: Vec<u8>,
    buf_start: u64,
    next_len: usize,
    prefetch: Option<Prefetch>,
    requests: u64,
    /// The bytes the range requests asked for.
    asked: u64,
    /// Read-aheads dropped before they were read (a seek elsewhere).
    abandoned: u64,
    /// Whether dropping it prints the stats line (`WARCHEST_REMOTE_STATS`).
    stats: bool,
    /// Whether a range has been read: the whole object is streamed
    /// instead only when the first read, at byte 0, finds that the server
    /// answers no ranges.
    ranged: bool,
    /// The object streamed whole from its start (its server answers no
    /// ranges).
    whole: Option<Whole>,
    /// Retries spent on the whole stream.
    whole_retries: u32,
    /// The first range's request, at opening, was answered with the whole
    /// object: a read from byte 0 streams it at once, without asking for
    /// a range again.
    no_ranges: bool,
}

/// The object's body streamed from byte 0, for a server that answers no
/// range requests: read in order, a seek forward reads and drops.
struct Whole {
    body: BoxStream<'static, object_store::Result<Bytes>>,
    /// The piece held and where it starts in the object.
    piece: Bytes,
    piece_start: u64,
}

impl std::fmt::Debug for RemoteFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteFile")
            .field("url", &self.loc.url())
            .field("size", &self.size)
            .field("pos", &self.pos)
            .finish()
    }
}

impl RemoteFile {
    /// Opens `loc` with one request: a range request for its first
    /// [`Options::min_chunk`] bytes, whose answer gives the size
    /// (`Content-Range: bytes 0-N/SIZE`) and whose body is the first range
    /// read, still arriving when this returns. A HEAD and then that range
    /// cost two round trips before the first byte (40 ms at 20 ms a
    /// request); every caller reads from byte 0 first (the format is
    /// sniffed there), so the range is the one its first read would ask
    /// for. When that request fails otherwise than for the whole object (a
    /// server answering ranges with the whole object, an empty object's
    /// 416, an answer without the total, a 5xx, the network), the object is
    /// opened with a HEAD as before, and read as before: a server without
    /// ranges then streams it whole from the first read.
    ///
    /// # Errors
    /// The first request finds the object missing or refused (401, 403,
    /// 404, 410) or its redirects looping; the HEAD request, made when the
    /// first failed otherwise, fails within the retry budget.
    pub fn open(loc: Location, opts: Options) -> io::Result<RemoteFile> {
        let want = opts.min_chunk.max(1) as u64;
        match runtime().block_on(request::open_first(&loc, &opts, want))? {
            request::Opened::Range(size, body) => {
                let mut f = RemoteFile::open_sized(loc, opts, size);
                if size == 0 {
                    // Nothing to read: the answer is all there is.
                    f.requests = 1;
                } else {
                    f.prefetch = Some(f.spawn_with(0, want.min(size), Some(body)));
                }
                Ok(f)
            }
            request::Opened::Head(size, no_ranges) => {
                let mut f = RemoteFile::open_sized(loc, opts, size);
                f.requests = 2; // the range and the HEAD
                f.no_ranges = no_ranges.is_some();
                Ok(f)
            }
        }
    }

    /// `loc` read as a file of `size` bytes, the size known already (from
    /// a listing, or an index built earlier): no HEAD request. An object
    /// found shorter than `size` when read is an error, as for
    /// [`RemoteFile::open`].
    pub fn open_sized(loc: Location, opts: Options, size: u64) -> RemoteFile {
        RemoteFile {
            next_len: opts.min_chunk,
            loc,
            opts,
            size,
            pos: 0,
            buf: Vec::new(),
            spare: Vec::new(),
            buf_start: 0,
            prefetch: None,
            requests: 0,
            asked: 0,
            abandoned: 0,
            stats: crate::blocks::stats_wanted(
                std::env::var_os("WARCHEST_REMOTE_STATS").as_deref(),
            ),
            ranged: false,
            whole: None,
            whole_retries: 0,
            no_ranges: false,
        }
    }

    /// Whether the object is streamed whole because its server answers
    /// no range requests (a plain file server such as Python's
    /// `http.server`).
    pub fn streamed_whole(&self) -> bool {
        self.whole.is_some()
    }

    /// [`Read::read`] from the whole stream: pieces before the position
    /// are dropped; a position before the piece held starts the stream
    /// again (a reader that reads in order never does). A fault starts it
    /// again within the retry budget.
    fn read_whole(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(w) = self.whole.as_mut() else {
                self.requests += 1;
                match runtime().block_on(request::start_whole(&self.loc, &self.opts)) {
                    Ok(body) => {
                        self.whole = Some(Whole {
                            body,
                            piece: Bytes::new(),
                            piece_start: 0,
                        })
                    }
                    Err(f) if f.retry && self.whole_retries < self.opts.retries => {
                        std::thread::sleep(self.opts.backoff_for(self.whole_retries));
                        self.whole_retries += 1;
                    }
                    Err(f) => return Err(f.into_error(self.loc.url(), 0, self.whole_retries)),
                }
                continue;
            };
            if self.pos < w.piece_start {
                self.whole = None;
                continue;
            }
            let end = w.piece_start + w.piece.len() as u64;
            if self.pos < end {
                let at = (self.pos - w.piece_start) as usize;
                let n = out.len().min(w.piece.len() - at);
                out[..n].copy_from_slice(&w.piece[at..at + n]);
                self.pos += n as u64;
                return Ok(n);
            }
            let got = runtime().block_on(request::next_piece(&mut w.body, &self.opts));
            match got {
                Ok(Some(b)) => {
                    w.piece_start = end;
                    w.piece = b;
                }
                Ok(None) if end >= self.size => return Ok(0),
                Ok(None) => {
                    return Err(Failure::fatal(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the object ended at byte {end}, shorter than the {} bytes it had when opened (cut or replaced)",
                            self.size
                        ),
                    )
                    .into_error(self.loc.url(), end, self.whole_retries));
                }
                Err(f) if f.retry && self.whole_retries < self.opts.retries => {
                    tracing::debug!("{}: at byte {end}: {}; retrying", self.loc.url(), f.message);
                    std::thread::sleep(self.opts.backoff_for(self.whole_retries));
                    self.whole_retries += 1;
                    self.whole = None;
                }
                Err(f) => return Err(f.into_error(self.loc.url(), end, self.whole_retries)),
            }
        }
    }

    /// The object's size when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The URL.
    pub fn url(&self) -> &str {
        self.loc.url()
    }

    /// The requests made so far (ranges, and the HEAD when one was made;
    /// retries not counted).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The bytes the range requests asked for so far.
    pub fn bytes_asked(&self) -> u64 {
        self.asked
    }

    fn spawn(&mut self, start: u64, end: u64) -> Prefetch {
        self.spawn_with(start, end, None)
    }

    /// [`RemoteFile::spawn`], the range's answer already started when
    /// `first` is given (its body: [`RemoteFile::open`]).
    fn spawn_with(&mut self, start: u64, end: u64, first: Option<request::Body>) -> Prefetch {
        let (loc, opts, size) = (self.loc.clone(), self.opts.clone(), self.size);
        self.requests += 1;
        self.asked += end - start;
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        // Our own range's length (the object's size known): room for all
        // of it at once, not grown by copies.
        buf.reserve(usize::try_from(end - start).unwrap_or(0));
        Prefetch {
            start,
            end,
            task: runtime().spawn(async move {
                request::fetch_into(&loc, &opts, start, end - start, Some(size), &mut buf, first)
                    .await?;
                Ok(buf)
            }),
        }
    }

    /// Makes `buf` hold the byte at `pos` (which is before the end).
    ///
    /// A scan goes on, its ranges growing and the next one fetched ahead,
    /// when the read is at the end of the range held, lands in the range
    /// fetched ahead, or skips forward past it by no more than the next
    /// range's length: a reader skipping payloads (`ls`, a scan without
    /// the payload column) is still a scan. Counting only reads on from
    /// the held range, every skip across a range's end started again at
    /// 1 MiB with nothing fetched ahead: a scan of the 738 MB plain corpus
    /// made 526 requests, where 8 MiB ranges make about a hundred. Any
    /// other seek (backwards, or far ahead: an index lookup) starts again
    /// at [`Options::min_chunk`] and fetches nothing ahead.
    fn fill(&mut self) -> io::Result<()> {
        let pos = self.pos;
        let held_end = self.buf_start + self.buf.len() as u64;
        let sequential = pos == held_end;
        // Where the scan's bytes asked for end (the read-ahead's end).
        let asked_end = self.prefetch.as_ref().map_or(held_end, |p| p.end);
        let pending = match self.prefetch.take() {
            Some(p) if p.start <= pos && pos < p.end => Some(p),
            Some(p) => {
                p.task.abort();
                self.abandoned += 1;
                None
            }
            None => None,
        };
        let scanning = sequential
            || pending.is_some()
            || (self.ranged
                && pos >= asked_end
                && pos > held_end
                && pos - asked_end <= self.next_len as u64);
        if !scanning {
            self.next_len = self.opts.min_chunk;
        }
        // Whether the read waits for its range: none was on its way, or
        // the one fetched ahead has not all come yet. (The first range is
        // always waited for, so a scan's second range is twice the first:
        // grown only from 1 MiB, ranges came in 1 MiB pieces that a
        // moment's delay of the fetching thread grew at random.)
        let waits = pending.as_ref().is_none_or(|p| !p.task.is_finished());
        let p = match pending {
            Some(p) => p,
            None => {
                // Never an empty range, whatever the options say: an empty
                // buffer would read as the end of the object.
                let end = pos
                    .saturating_add(self.next_len.max(1) as u64)
                    .min(self.size);
                self.spawn(pos, end)
            }
        };
        let start = p.start;
        let bytes = runtime().block_on(p.task).map_err(|e| {
            Failure::fatal(io::ErrorKind::Other, format!("read task failed: {e}")).into_error(
                self.loc.url(),
                start,
                0,
            )
        })??;
        self.ranged = true;
        self.spare = std::mem::replace(&mut self.buf, bytes);
        self.buf_start = start;
        // Read-ahead only while reading runs on: a reader that seeks about
        // (an index lookup) is not charged for ranges it will not read.
        let end = start + self.buf.len() as u64;
        if scanning || start == 0 {
            // The ranges grow only while the reader catches up with them:
            // a reader slower than the store (a gzip scan from a server on
            // the same machine) keeps small ranges, and so holds less.
            if waits {
                self.next_len = (self.next_len.saturating_mul(2)).min(self.opts.chunk);
            }
            if end < self.size {
                let next_end = end
                    .saturating_add(self.next_len.max(1) as u64)
                    .min(self.size);
                self.prefetch = Some(self.spawn(end, next_end));
            }
        }
        Ok(())
    }
}

impl Read for RemoteFile {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() || self.pos >= self.size {
            return Ok(0);
        }
        if self.whole.is_some() || (self.no_ranges && self.pos == 0) {
            return self.read_whole(out);
        }
        let in_buf =
            self.pos >= self.buf_start && self.pos < self.buf_start + self.buf.len() as u64;
        if !in_buf {
            match self.fill() {
                Ok(()) => {}
                // A server without ranges, read from the start: the whole
                // object streamed instead (a sequential read needs no
                // ranges). Reading that starts elsewhere fails.
                Err(e)
                    if !self.ranged
                        && self.pos == 0
                        && remote_error(&e).is_some_and(|r| *r.problem() == Problem::NoRanges) =>
                {
                    tracing::debug!("{}: no byte ranges; streaming the whole object", self.url());
                    return self.read_whole(out);
                }
                Err(e) => return Err(e),
            }
        }
        if self.pos < self.buf_start || self.pos >= self.buf_start + self.buf.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: at byte {}: no bytes where the object's size says there are",
                    self.loc.url(),
                    self.pos
                ),
            ));
        }
        let at = (self.pos - self.buf_start) as usize;
        let n = out.len().min(self.buf.len() - at);
        out[..n].copy_from_slice(&self.buf[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for RemoteFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        // Past the end is allowed, as for files; reading there gives 0.
        self.pos = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: seek before the start", self.loc.url()),
            )
        })?;
        Ok(self.pos)
    }
}

impl Drop for RemoteFile {
    /// With `WARCHEST_REMOTE_STATS` on, one line on stderr for an object
    /// read by ranges: its requests (a HEAD, when one was made, included),
    /// the bytes they asked for and the read-aheads dropped unread (for
    /// measuring).
    fn drop(&mut self) {
        if let Some(p) = self.prefetch.take() {
            p.task.abort();
            self.abandoned += 1;
        }
        if self.stats && self.ranged && self.whole.is_none() {
            // `writeln!`, its error ignored: a closed stderr must not
            // panic in a drop (`eprintln!` would).
            let _ = writeln!(
                io::stderr(),
                "warchest: remote ranges of {}: {} requests, {} bytes asked, {} read-aheads dropped unread",
                self.loc.url(),
                self.requests,
                self.asked,
                self.abandoned
            );
        }
    }
}

/// One range of an object, streamed from one request: a fault resumes with
/// a request for the rest, within the retry budget.
pub struct RangeReader {
    loc: Location,
    opts: Options,
    pos: u64,
    end: u64,
    stream: Option<BoxStream<'static, object_store::Result<Bytes>>>,
    piece: Bytes,
    retries: u32,
}

impl RangeReader {
    /// A reader over bytes `offset..offset + len` of `loc`; the request is
    /// made at the first read.
    pub fn new(loc: Location, opts: Options, offset: u64, len: u64) -> RangeReader {
        RangeReader {
            loc,
            opts,
            pos: offset,
            end: offset.saturating_add(len),
            stream: None,
            piece: Bytes::new(),
            retries: 0,
        }
    }

    /// The next piece of the body, `None` at the range's end.
    fn next(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            if self.pos >= self.end {
                return Ok(None);
            }
            let (pos, end) = (self.pos, self.end);
            let res = runtime().block_on(async {
                if self.stream.is_none() {
                    let ends = request::Ends::AsAsked;
                    let (_, body) =
                        request::start_range(&self.loc, &self.opts, pos, end, None, ends).await?;
                    self.stream = Some(body);
                }
                let stream = self.stream.as_mut().expect("just set");
                match request::next_piece(stream, &self.opts).await? {
                    Some(b) if b.len() as u64 > end - pos => Err(Failure::fatal(
                        io::ErrorKind::InvalidData,
                        "the server sent more than the range asked for",
                    )),
                    Some(b) => Ok(b),
                    None => Err(Failure::retryable(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the answer ended {} bytes before the range's end",
                            end - pos
                        ),
                    )),
                }
            });
            match res {
                Ok(b) => return Ok(Some(b)),
                Err(f) if f.retry && self.retries < self.opts.retries => {
                    self.stream = None;
                    let pause = self.opts.backoff_for(self.retries);
                    self.retries += 1;
                    std::thread::sleep(pause);
                }
                Err(f) => {
                    self.stream = None;
                    return Err(f.into_error(self.loc.url(), self.pos, self.retries));
                }
            }
        }
    }
}

impl Read for RangeReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        while self.piece.is_empty() {
            match self.next()? {
                Some(b) => self.piece = b,
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.piece.len());
        out[..n].copy_from_slice(&self.piece[..n]);
        self.piece = self.piece.slice(n..);
        self.pos += n as u64;
        Ok(n)
    }
}
