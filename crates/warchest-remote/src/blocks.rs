//! [`RemoteBlocks`]: an object read at explicit offsets by several threads
//! at once (the format crate's [`ReadAt`]), for the parallel decoder.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use warchest::io::ReadAt;

use crate::request::{self, Pieces};
use crate::{Location, Options, runtime};

/// Default bytes per block: one range request each. Each request costs
/// the server too: with s3rver, 8 MiB blocks took about a quarter less of
/// its CPU than 4 MiB ones on the benchmark corpus (docs/performance.md).
pub const BLOCK: usize = 8 << 20;
/// Default blocks fetched ahead of the furthest one asked for.
pub const AHEAD: usize = 2;
/// Bytes of blocks held, when small blocks make `AHEAD + 2` of them less:
/// the decoder's jobs and its reading thread read up to a few MiB apart.
const HELD_BYTES: u64 = 16 << 20;

/// A block's bytes, or its error (copied for each reader).
type Answer = Result<Arc<Pieces>, io::Error>;

/// One block: empty while its request runs, then its bytes (as the body's
/// pieces came, never joined: no copy) or its error (copied for each
/// reader with `copy_error`, as `io::Error` is not `Clone`).
#[derive(Default)]
struct Cell {
    got: Mutex<Option<Answer>>,
    ready: Condvar,
}

impl Cell {
    fn set(&self, r: io::Result<Pieces>) {
        *lock(&self.got) = Some(r.map(Arc::new));
        self.ready.notify_all();
    }

    /// Waits for the block's request (which has its own timeouts and retry
    /// budget, so the wait ends).
    fn wait(&self) -> io::Result<Arc<Pieces>> {
        let mut g = lock(&self.got);
        loop {
            match &*g {
                Some(Ok(b)) => return Ok(Arc::clone(b)),
                Some(Err(e)) => return Err(request::copy_error(e)),
                None => g = self.ready.wait(g).unwrap_or_else(PoisonError::into_inner),
            }
        }
    }

    fn pending(&self) -> bool {
        lock(&self.got).is_none()
    }
}

/// Sets its cell when dropped unset: a request task cancelled (the
/// runtime shutting down) or panicking must not leave readers waiting.
struct SetOnDrop(Arc<Cell>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        if self.0.pending() {
            self.0.set(Err(io::Error::other(
                "the block's request ended without an answer",
            )));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The blocks held, most recently used last.
#[derive(Default)]
struct Held {
    blocks: Vec<(u64, Arc<Cell>)>,
    /// The furthest block asked for: read-ahead runs from there.
    furthest: Option<u64>,
}

/// An object read at explicit offsets ([`ReadAt`]), by several threads at
/// once: what the parallel decoder's jobs read when a remote archive is
/// scanned with more than one thread.
///
/// The object is cut into blocks of [`BLOCK`] bytes, each fetched by one
/// range request (with [`Options`]' retries, resumed where a fault cut it).
/// A read of a block not held fetches it; a read at or next to the
/// furthest block asked for (a scan going on) also starts requests for the
/// [`AHEAD`] blocks after it, concurrently. At most `AHEAD + 2` blocks
/// (or 16 MiB of smaller blocks) are held, least recently used dropped
/// first, and a block whose request is still running is never dropped;
/// each thread waiting for a block not yet in the cache adds at most one:
/// memory is bounded by `(AHEAD + 2 + threads) * BLOCK` (56 MiB with the
/// default 8 MiB blocks, two decoding threads and the reading one; 32 MiB
/// held in the cache). A block that cannot be read within the retry budget,
/// and an object found shorter than its size when opened (cut or
/// replaced), are errors naming the URL and the offset; the error is kept,
/// so every reader of that block sees it.
pub struct RemoteBlocks {
    loc: Location,
    opts: Options,
    size: u64,
    block: u64,
    ahead: u64,
    held: Mutex<Held>,
    requests: AtomicU64,
}

impl std::fmt::Debug for RemoteBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteBlocks")
            .field("url", &self.loc.url())
            .field("size", &self.size)
            .field("block", &self.block)
            .finish_non_exhaustive()
    }
}

impl RemoteBlocks {
    /// Opens `loc` (one HEAD request for its size).
    ///
    /// # Errors
    /// The HEAD request fails within the retry budget.
    pub fn open(loc: Location, opts: Options) -> io::Result<RemoteBlocks> {
        let size = runtime().block_on(request::head(&loc, &opts))?;
        let b = RemoteBlocks::open_sized(loc, opts, size);
        b.requests.store(1, Ordering::Relaxed);
        Ok(b)
    }

    /// `loc` read as `size` bytes, the size known already (no request).
    pub fn open_sized(loc: Location, opts: Options, size: u64) -> RemoteBlocks {
        RemoteBlocks {
            loc,
            opts,
            size,
            block: BLOCK as u64,
            ahead: AHEAD as u64,
            held: Mutex::new(Held::default()),
            requests: AtomicU64::new(0),
        }
    }

    /// The same with blocks of `block` bytes (at least 4 KiB) and `ahead`
    /// blocks read ahead (at most 16).
    #[must_use]
    pub fn with_blocks(mut self, block: usize, ahead: usize) -> RemoteBlocks {
        self.block = (block as u64).clamp(4096, 1 << 30);
        self.ahead = ahead.min(16) as u64;
        self
    }

    /// The URL.
    pub fn url(&self) -> &str {
        self.loc.url()
    }

    /// The requests made so far (HEAD and ranges, retries not counted).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Blocks held at most (besides one per waiting thread).
    fn cap(&self) -> usize {
        let by_bytes = usize::try_from(HELD_BYTES / self.block).unwrap_or(usize::MAX);
        (self.ahead as usize + 2).max(by_bytes)
    }

    fn blocks(&self) -> u64 {
        self.size.div_ceil(self.block)
    }

    /// Starts the request for block `i`.
    fn spawn(&self, i: u64) -> Arc<Cell> {
        let cell = Arc::new(Cell::default());
        let start = i * self.block;
        let len = self.block.min(self.size - start);
        let (loc, opts, size) = (self.loc.clone(), self.opts.clone(), self.size);
        let guard = SetOnDrop(Arc::clone(&cell));
        self.requests.fetch_add(1, Ordering::Relaxed);
        runtime().spawn(async move {
            let got = request::fetch_pieces(&loc, &opts, start, len, Some(size)).await;
            guard.0.set(got);
        });
        cell
    }

    /// Block `i` (which is before the end), fetched or waited for.
    fn get(&self, i: u64) -> io::Result<Arc<Pieces>> {
        let cell = {
            let mut h = lock(&self.held);
            let cell = match h.blocks.iter().position(|(k, _)| *k == i) {
                Some(at) => {
                    let e = h.blocks.remove(at);
                    let c = Arc::clone(&e.1);
                    h.blocks.push(e);
                    c
                }
                None => {
                    let c = self.spawn(i);
                    h.blocks.push((i, Arc::clone(&c)));
                    c
                }
            };
            let scan = h.furthest.is_none_or(|f| i + 1 >= f);
            h.furthest = Some(h.furthest.map_or(i, |f| f.max(i)));
            self.evict(&mut h, i);
            if scan {
                let last = i
                    .saturating_add(self.ahead)
                    .min(self.blocks().saturating_sub(1));
                for k in i + 1..=last {
                    if h.blocks.iter().any(|(b, _)| *b == k) {
                        continue;
                    }
                    if h.blocks.len() >= self.cap() {
                        break;
                    }
                    let c = self.spawn(k);
                    // Ahead of use: first in line to be dropped would be
                    // wrong, so it goes with the recent ones.
                    h.blocks.push((k, c));
                }
            }
            cell
        };
        cell.wait()
    }

    /// Drops the least recently used finished blocks (never `keep`) until
    /// at most [`RemoteBlocks::cap`] are held, or only running ones are.
    fn evict(&self, h: &mut Held, keep: u64) {
        let mut at = 0;
        while h.blocks.len() > self.cap() && at < h.blocks.len() {
            let (k, c) = &h.blocks[at];
            if *k != keep && !c.pending() {
                h.blocks.remove(at);
            } else {
                at += 1;
            }
        }
    }
}

impl ReadAt for RemoteBlocks {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        if buf.is_empty() || pos >= self.size {
            return Ok(0);
        }
        let i = pos / self.block;
        let bytes = self.get(i)?;
        let n = bytes.copy_at(pos - i * self.block, buf);
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: at byte {pos}: no bytes where the object's size says there are",
                    self.loc.url()
                ),
            ));
        }
        Ok(n)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u64 = 4 << 20;

    /// An object on a server nobody listens on: only blocks never fetched
    /// would be asked for, so the cache logic is tested without requests.
    fn unreachable(size: u64) -> RemoteBlocks {
        let loc = Location::parse("http://127.0.0.1:9/x").unwrap();
        RemoteBlocks::open_sized(loc, Options::default(), size).with_blocks(B as usize, 1)
    }

    fn ready(b: &RemoteBlocks, i: u64, fill: u8) {
        let c = Arc::new(Cell::default());
        let len = b.block.min(b.size - i * b.block) as usize;
        let mut p = Pieces::default();
        // In two pieces, as a body comes: reads cross them.
        let half = len / 2;
        p.push(bytes::Bytes::from(vec![fill; half]));
        p.push(bytes::Bytes::from(vec![fill; len - half]));
        c.set(Ok(p));
        lock(&b.held).blocks.push((i, c));
    }

    #[test]
    fn held_blocks_serve_reads_across_boundaries_and_the_end() {
        let b = unreachable(3 * B + 100);
        for i in 0..4 {
            ready(&b, i, i as u8);
        }
        lock(&b.held).furthest = Some(3);
        let mut buf = vec![0u8; B as usize + 1000];
        // A read stops at its block's end; the next block follows.
        assert_eq!(b.read_at(&mut buf, B - 96).unwrap(), 96);
        assert!(buf[..96].iter().all(|&x| x == 0));
        assert_eq!(b.read_at(&mut buf, B).unwrap(), B as usize);
        assert!(buf[..B as usize].iter().all(|&x| x == 1));
        assert_eq!(b.read_at(&mut buf, 3 * B + 50).unwrap(), 50);
        assert_eq!(b.read_at(&mut buf, 3 * B + 100).unwrap(), 0);
        assert_eq!(b.read_at(&mut buf, u64::MAX).unwrap(), 0);
        assert_eq!(b.requests(), 0);
        assert_eq!(b.size().unwrap(), 3 * B + 100);
    }

    #[test]
    fn eviction_keeps_the_bound_and_never_drops_running_blocks() {
        let b = unreachable(100 * B);
        for i in 0..6 {
            ready(&b, i, 0);
        }
        // A running block stays whatever its age.
        lock(&b.held)
            .blocks
            .insert(0, (50, Arc::new(Cell::default())));
        let mut h = lock(&b.held);
        b.evict(&mut h, 5);
        let kept: Vec<u64> = h.blocks.iter().map(|(k, _)| *k).collect();
        assert_eq!(kept, vec![50, 3, 4, 5]);
        assert_eq!(h.blocks.len(), b.cap());
    }

    #[test]
    fn a_request_dropped_unanswered_wakes_its_readers_with_an_error() {
        let c = Arc::new(Cell::default());
        drop(SetOnDrop(Arc::clone(&c)));
        let e = c.wait().unwrap_err().to_string();
        assert!(e.contains("without an answer"), "{e}");
        // An answered cell keeps its answer.
        let c = Arc::new(Cell::default());
        let g = SetOnDrop(Arc::clone(&c));
        let mut p = Pieces::default();
        p.push(bytes::Bytes::from_static(b"ab"));
        g.0.set(Ok(p));
        drop(g);
        assert_eq!(c.wait().unwrap().len(), 2);
    }

    #[test]
    fn an_error_is_kept_and_seen_by_every_reader() {
        let b = unreachable(2 * B);
        let c = Arc::new(Cell::default());
        c.set(Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("http://127.0.0.1:9/x: at byte {B}: cut"),
        )));
        lock(&b.held).blocks.push((1, c));
        lock(&b.held).furthest = Some(1);
        let mut buf = [0u8; 10];
        for _ in 0..2 {
            let e = b.read_at(&mut buf, B + 5000).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
            assert!(e.to_string().contains(&format!("at byte {B}")), "{e}");
        }
    }
}
