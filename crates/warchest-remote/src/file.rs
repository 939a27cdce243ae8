//! Objects read as files: [`RemoteFile`] (seekable, with read-ahead) and
//! [`RangeReader`] (one range, streamed).

use std::io::{self, Read, Seek, SeekFrom};

use bytes::Bytes;
use futures_util::stream::BoxStream;
use tokio::task::JoinHandle;

use crate::request::{self, Failure, Pieces};
use crate::{Location, Options, runtime};

/// A range being fetched ahead of the reader.
struct Prefetch {
    start: u64,
    end: u64,
    task: JoinHandle<io::Result<Pieces>>,
}

/// An object read as a file: `Read + Seek`, its size from one HEAD request,
/// its bytes from range requests.
///
/// Sequential reading asks for ranges that double from
/// [`Options::min_chunk`] up to [`Options::chunk`], with the next range
/// fetched while the current one is read; a seek outside what is held
/// starts again at the small size. At most two ranges are held, so memory
/// is bounded by twice [`Options::chunk`]. A range that cannot be read
/// within the retry budget, and an object that turns out shorter than its
/// size, are errors naming the URL and offset.
pub struct RemoteFile {
    loc: Location,
    opts: Options,
    size: u64,
    pos: u64,
    /// The range held, as its body's pieces came (never joined).
    buf: Pieces,
    buf_start: u64,
    next_len: usize,
    prefetch: Option<Prefetch>,
    requests: u64,
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
    /// Opens `loc` (one HEAD request).
    pub fn open(loc: Location, opts: Options) -> io::Result<RemoteFile> {
        let size = runtime().block_on(request::head(&loc, &opts))?;
        let mut f = RemoteFile::open_sized(loc, opts, size);
        f.requests = 1; // the HEAD
        Ok(f)
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
            buf: Pieces::default(),
            buf_start: 0,
            prefetch: None,
            requests: 0,
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

    /// The requests made so far (HEAD and ranges, retries not counted).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    fn spawn(&mut self, start: u64, end: u64) -> Prefetch {
        let (loc, opts, size) = (self.loc.clone(), self.opts.clone(), self.size);
        self.requests += 1;
        Prefetch {
            start,
            end,
            task: runtime().spawn(async move {
                request::fetch_pieces(&loc, &opts, start, end - start, Some(size)).await
            }),
        }
    }

    /// Makes `buf` hold the byte at `pos` (which is before the end).
    fn fill(&mut self) -> io::Result<()> {
        let pos = self.pos;
        let sequential = pos == self.buf_start + self.buf.len();
        let pending = match self.prefetch.take() {
            Some(p) if p.start <= pos && pos < p.end => Some(p),
            Some(p) => {
                p.task.abort();
                None
            }
            None => None,
        };
        if !sequential {
            self.next_len = self.opts.min_chunk;
        }
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
            Failure {
                kind: io::ErrorKind::Other,
                message: format!("read task failed: {e}"),
                retry: false,
            }
            .into_error(self.loc.url(), start, 0)
        })??;
        self.buf = bytes;
        self.buf_start = start;
        // Read-ahead only while reading runs on: a reader that seeks about
        // (an index lookup) is not charged for ranges it will not read.
        let end = start + self.buf.len();
        if sequential || start == 0 {
            self.next_len = (self.next_len.saturating_mul(2)).min(self.opts.chunk);
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
        let in_buf = self.pos >= self.buf_start && self.pos < self.buf_start + self.buf.len();
        if !in_buf {
            self.fill()?;
        }
        if self.pos < self.buf_start || self.pos >= self.buf_start + self.buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: at byte {}: no bytes where the object's size says there are",
                    self.loc.url(),
                    self.pos
                ),
            ));
        }
        let n = self.buf.copy_at(self.pos - self.buf_start, out);
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
    fn drop(&mut self) {
        if let Some(p) = self.prefetch.take() {
            p.task.abort();
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
                    self.stream =
                        Some(request::start_range(&self.loc, &self.opts, pos, end, None).await?);
                }
                let stream = self.stream.as_mut().expect("just set");
                match request::next_piece(stream, &self.opts).await? {
                    Some(b) if b.len() as u64 > end - pos => Err(Failure {
                        kind: io::ErrorKind::InvalidData,
                        message: "the server sent more than the range asked for".into(),
                        retry: false,
                    }),
                    Some(b) => Ok(b),
                    None => Err(Failure {
                        kind: io::ErrorKind::UnexpectedEof,
                        message: format!(
                            "the answer ended {} bytes before the range's end",
                            end - pos
                        ),
                        retry: true,
                    }),
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
