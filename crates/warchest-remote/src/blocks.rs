//! [`RemoteBlocks`]: an object read at explicit offsets by several threads
//! at once (the format crate's [`ReadAt`]), for the parallel decoder.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::ThreadId;

use warchest::io::ReadAt;

use crate::request::{self, Pieces};
use crate::{Location, Options, runtime};

/// Default bytes per block: one range request each. Each request costs
/// the server too: with s3rver, 8 MiB blocks took about a quarter less of
/// its CPU than 4 MiB ones on the benchmark corpus (docs/performance.md).
pub const BLOCK: usize = 8 << 20;
/// Default blocks each reader fetches ahead of the block it reads.
pub const AHEAD: usize = 2;
/// Bytes of blocks held, when small blocks make `AHEAD + 2` of them less.
const HELD_BYTES: u64 = 16 << 20;
/// Bytes of the object's start kept once read: every reader opened at an
/// offset reads the start for a zstd dictionary frame (a few bytes), and
/// its first block would otherwise be fetched again for each.
const HEAD_KEPT: u64 = 64 << 10;
/// Readers remembered at most (the decoder has one a thread).
const MAX_READERS: usize = 16;
/// A reader that has not read while the readers moved to another block
/// this many times is taken as gone (a thread whose reading is over): its
/// blocks are no longer kept for it.
const STALE_MOVES: u64 = 8;

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

/// One reader of the object: a thread (a chunk's worker, a decoder's job
/// thread, the sequential reader), and the blocks it reads.
struct Reader {
    thread: ThreadId,
    /// The block it reads.
    at: u64,
    /// The block it read before: kept too, as a reader may look a little
    /// ahead and come back (a chunk's start is confirmed by the records
    /// after it).
    before: u64,
    /// `Held::moves` at its last read.
    seen: u64,
}

/// The blocks held and their readers.
#[derive(Default)]
struct Held {
    /// The blocks held, least recently used first.
    blocks: Vec<(u64, Arc<Cell>)>,
    /// The readers, each keeping its own block and the blocks ahead of it.
    readers: Vec<Reader>,
    /// Moves of readers from one block to another: the clock by which a
    /// reader that stopped reading is found.
    moves: u64,
    /// The most bytes held at once (fetched or being fetched).
    peak: u64,
}

/// An object read at explicit offsets ([`ReadAt`]), by several threads at
/// once: what the parallel decoder's jobs read when a remote archive is
/// scanned with more than one thread.
///
/// The object is cut into blocks of [`BLOCK`] bytes, each fetched by one
/// range request (with [`Options`]' retries, resumed where a fault cut it).
/// Each reading thread is a reader with a read-ahead of its own: a read
/// in block `i` fetches `i` when no reader holds it and starts the
/// requests for the [`AHEAD`] blocks after it, concurrently, so that a
/// reader scanning on finds its next blocks fetched (the latency of a
/// request is hidden while decoding `AHEAD` blocks takes longer than one
/// request). A block is fetched once for all readers while it is held.
/// A reader's own block, the one it read before and the blocks ahead of
/// it are *its own*: no
/// other reader's read-ahead drops them (the chunks of a plain file are
/// read far apart, and a cache shared by recency dropped one reader's
/// blocks for another's). Room is made from the other blocks, least
/// recently used first, never one whose request is still running. At most
/// `AHEAD + 2` blocks (or 16 MiB of smaller blocks) are held as a rule:
/// 32 MiB with the default 8 MiB blocks, as before read-ahead was per
/// reader; a read-ahead that finds no room is not started. Only a reader's own
/// block, fetched even when no room can be made, and the one it read
/// before go past it: memory is bounded by `(AHEAD + 2 + 2 * readers) *
/// BLOCK` ([`RemoteBlocks::peak_bytes`] tells what was held). A thread
/// that has not read while the readers moved on eight times is taken as
/// gone, and its blocks become the others' room. A block that
/// cannot be read within the retry budget, and an object found shorter
/// than its size when opened (cut or replaced), are errors naming the URL
/// and the offset; the error is kept, so every reader of that block sees
/// it.
pub struct RemoteBlocks {
    loc: Location,
    opts: Options,
    size: u64,
    block: u64,
    ahead: u64,
    /// Bytes of blocks held as a rule.
    held_bytes: u64,
    held: Mutex<Held>,
    /// The object's first bytes ([`HEAD_KEPT`]), once block 0 is read.
    head: OnceLock<Vec<u8>>,
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
            held_bytes: HELD_BYTES,
            held: Mutex::new(Held::default()),
            head: OnceLock::new(),
            requests: AtomicU64::new(0),
        }
    }

    /// The same with blocks of `block` bytes (at least 4 KiB) and `ahead`
    /// blocks read ahead by each reader (at most 16).
    #[must_use]
    pub fn with_blocks(mut self, block: usize, ahead: usize) -> RemoteBlocks {
        self.block = (block as u64).clamp(4096, 1 << 30);
        self.ahead = ahead.min(16) as u64;
        self
    }

    /// The same holding `bytes` of blocks as a rule (default 16 MiB), or
    /// `ahead + 2` blocks when that is more.
    #[must_use]
    pub fn with_held_bytes(mut self, bytes: u64) -> RemoteBlocks {
        self.held_bytes = bytes;
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

    /// The most bytes of blocks held at once so far (fetched or being
    /// fetched): what the memory bound bounds.
    pub fn peak_bytes(&self) -> u64 {
        lock(&self.held).peak
    }

    /// Blocks held at most, besides readers' own blocks fetched when no
    /// room could be made.
    fn cap(&self) -> usize {
        let by_bytes = usize::try_from(self.held_bytes / self.block).unwrap_or(usize::MAX);
        (self.ahead as usize + 2).max(by_bytes)
    }

    fn blocks(&self) -> u64 {
        self.size.div_ceil(self.block)
    }

    /// The bytes of block `i`.
    fn len_of(&self, i: u64) -> u64 {
        self.block.min(self.size.saturating_sub(i * self.block))
    }

    /// Starts the request for block `i`.
    fn spawn(&self, i: u64) -> Arc<Cell> {
        let cell = Arc::new(Cell::default());
        let start = i * self.block;
        let len = self.len_of(i);
        let (loc, opts, size) = (self.loc.clone(), self.opts.clone(), self.size);
        let guard = SetOnDrop(Arc::clone(&cell));
        self.requests.fetch_add(1, Ordering::Relaxed);
        runtime().spawn(async move {
            let got = request::fetch_pieces(&loc, &opts, start, len, Some(size)).await;
            guard.0.set(got);
        });
        cell
    }

    /// Notes that the calling thread reads block `i`; readers gone (see
    /// [`STALE_MOVES`]) are forgotten.
    fn note_reader(&self, h: &mut Held, i: u64) {
        let me = std::thread::current().id();
        if let Some(r) = h.readers.iter_mut().find(|r| r.thread == me) {
            if r.at != i {
                h.moves += 1;
                r.before = r.at;
                r.at = i;
            }
            r.seen = h.moves;
        } else {
            h.moves += 1;
            if h.readers.len() >= MAX_READERS
                && let Some(old) = (0..h.readers.len()).min_by_key(|&k| h.readers[k].seen)
            {
                // The one that read longest ago.
                h.readers.swap_remove(old);
            }
            h.readers.push(Reader {
                thread: me,
                at: i,
                before: i,
                seen: h.moves,
            });
        }
        let now = h.moves;
        h.readers.retain(|r| now - r.seen <= STALE_MOVES);
    }

    /// Whether block `k` is a reader's own: the block it reads, the one it
    /// read before, or one of the blocks ahead of it.
    fn kept(&self, h: &Held, k: u64) -> bool {
        h.readers
            .iter()
            .any(|r| k == r.before || (k >= r.at && k - r.at <= self.ahead))
    }

    /// Drops blocks no reader keeps, least recently used first and never
    /// one still being fetched, until `more` blocks fit within the cap;
    /// whether they do.
    fn make_room(&self, h: &mut Held, more: usize) -> bool {
        let mut at = 0;
        while h.blocks.len() + more > self.cap() {
            let Some(k) = (at..h.blocks.len()).find(|&k| {
                let (b, c) = &h.blocks[k];
                !self.kept(h, *b) && !c.pending()
            }) else {
                return false;
            };
            h.blocks.remove(k);
            at = k;
        }
        true
    }

    /// Block `i` (which is before the end), fetched or waited for; the
    /// calling thread's read-ahead started.
    fn get(&self, i: u64) -> io::Result<Arc<Pieces>> {
        let cell = {
            let mut h = lock(&self.held);
            self.note_reader(&mut h, i);
            let cell = match h.blocks.iter().position(|(k, _)| *k == i) {
                Some(at) => {
                    let e = h.blocks.remove(at);
                    let c = Arc::clone(&e.1);
                    h.blocks.push(e);
                    c
                }
                None => {
                    // Its own block: fetched even when no room is made.
                    self.make_room(&mut h, 1);
                    let c = self.spawn(i);
                    h.blocks.push((i, Arc::clone(&c)));
                    c
                }
            };
            let last = i
                .saturating_add(self.ahead)
                .min(self.blocks().saturating_sub(1));
            for k in i + 1..=last {
                if h.blocks.iter().any(|(b, _)| *b == k) {
                    continue;
                }
                if !self.make_room(&mut h, 1) {
                    break;
                }
                let c = self.spawn(k);
                h.blocks.push((k, c));
            }
            let bytes = h.blocks.iter().map(|(k, _)| self.len_of(*k)).sum();
            h.peak = h.peak.max(bytes);
            cell
        };
        cell.wait()
    }
}

impl ReadAt for RemoteBlocks {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        if buf.is_empty() || pos >= self.size {
            return Ok(0);
        }
        // A look at the start: no reader moves, no block fetched again.
        if let Some(head) = self.head.get()
            && let Some(from) = usize::try_from(pos).ok().filter(|&p| p < head.len())
        {
            let n = buf.len().min(head.len() - from);
            buf[..n].copy_from_slice(&head[from..from + n]);
            return Ok(n);
        }
        let i = pos / self.block;
        let bytes = self.get(i)?;
        if i == 0 {
            self.head.get_or_init(|| {
                let mut head = vec![0u8; self.len_of(0).min(HEAD_KEPT) as usize];
                let n = bytes.copy_at(0, &mut head);
                head.truncate(n);
                head
            });
        }
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
        assert_eq!(b.peak_bytes(), 3 * B + 100);
        // The object's start, once read, is kept for the readers that look
        // at it: no block fetched again, no reader moved there.
        lock(&b.held).blocks.retain(|(k, _)| *k != 0);
        let mut small = [1u8; 10];
        assert_eq!(b.read_at(&mut small, 100).unwrap(), 10);
        assert_eq!(small, [0u8; 10]);
        assert_eq!(b.requests(), 0);
        assert!(lock(&b.held).readers.iter().all(|r| r.at == 3));
    }

    /// A reader in block 0 that is not the test's thread.
    fn other_reader() -> Reader {
        let thread = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        Reader {
            thread,
            at: 0,
            before: 0,
            seen: 0,
        }
    }

    #[test]
    fn room_is_made_from_blocks_no_reader_keeps_never_running_ones() {
        let b = unreachable(100 * B);
        assert_eq!(b.cap(), 4);
        for i in 0..6 {
            ready(&b, i, 0);
        }
        // A running block stays whatever its age.
        lock(&b.held)
            .blocks
            .insert(0, (50, Arc::new(Cell::default())));
        let mut h = lock(&b.held);
        // Another reader in block 0 keeps 0 and 1 (one block ahead); this
        // thread, in block 5, keeps 5 and 6.
        h.readers.push(other_reader());
        b.note_reader(&mut h, 5);
        assert!(b.make_room(&mut h, 0));
        let kept: Vec<u64> = h.blocks.iter().map(|(k, _)| *k).collect();
        assert_eq!(kept, vec![50, 0, 1, 5]);
        // Nothing left to drop: no room for one more.
        assert!(!b.make_room(&mut h, 1));
        assert_eq!(h.blocks.len(), 4);
    }

    #[test]
    fn a_reader_that_stopped_reading_keeps_nothing_once_the_others_moved_on() {
        let b = unreachable(100 * B);
        let mut h = lock(&b.held);
        h.readers.push(other_reader());
        assert!(b.kept(&h, 1));
        // Reading on within one block is no move.
        b.note_reader(&mut h, 20);
        b.note_reader(&mut h, 20);
        for i in 21..21 + STALE_MOVES {
            assert!(b.kept(&h, 0), "at {i}");
            b.note_reader(&mut h, i);
        }
        assert!(!b.kept(&h, 0) && !b.kept(&h, 1));
        assert_eq!(h.readers.len(), 1);
        // This reader keeps its block, the one before and the one ahead
        // only; after a look ahead and back, the block looked at too.
        let at = 20 + STALE_MOVES;
        assert!(b.kept(&h, at) && b.kept(&h, at + 1) && !b.kept(&h, at + 2));
        assert!(b.kept(&h, at - 1) && !b.kept(&h, at - 2));
        b.note_reader(&mut h, at + 5);
        b.note_reader(&mut h, at);
        assert!(b.kept(&h, at + 5) && b.kept(&h, at) && !b.kept(&h, at - 1));
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
        let mut buf = [0u8; 10];
        for _ in 0..2 {
            let e = b.read_at(&mut buf, B + 5000).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
            assert!(e.to_string().contains(&format!("at byte {B}")), "{e}");
        }
    }
}
