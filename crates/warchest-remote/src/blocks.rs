//! [`RemoteBlocks`]: an object read at explicit offsets by several threads
//! at once (the format crate's [`ReadAt`]), for the parallel decoder.

use std::io::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use warchest::io::{Lent, ReadAt};

use crate::request;
use crate::{Location, Options, runtime};

/// Default bytes per block: one range request each. Smaller blocks hold
/// less memory for the same read-ahead; each request costs the server
/// something too (docs/remote.md, "Several threads").
pub const BLOCK: usize = 1 << 20;
/// Fewest blocks each reader fetches ahead of the block it reads.
pub const AHEAD: usize = 4;
/// Bytes each reader fetches ahead at the default block size: the
/// read-ahead depth follows the bytes, not the blocks
/// ([`RemoteBlocks::ahead_for`]), so that smaller blocks (less memory held
/// while the fetches keep up) hide as much latency as larger ones.
pub const AHEAD_BYTES: u64 = 8 << 20;
/// Bytes the read-ahead may grow to, from [`AHEAD_BYTES`], a block at a
/// time while a reader scanning on finds its block still on its way with
/// every block of its read-ahead already asked for. The depth is one for
/// all the readers of an object (each reads that many blocks ahead of its
/// own block), grown by whichever reader finds that: at a
/// store's latency L a reader decoding at R needs about `R x L` bytes on
/// their way (10 MiB at 20 ms and the 460 MB/s two cores inflate), more
/// than a fixed 8 MiB. The budget ([`BUDGET_MAX`]) still bounds the
/// bytes held: with two readers it, not the depth, stops the growth.
pub const AHEAD_MAX_BYTES: u64 = 16 << 20;
/// Default bytes of blocks held at most at first, all readers together:
/// blocks fetched, being fetched and being read from
/// (`WARCHEST_REMOTE_BUDGET`). The budget grows from there, a block at a
/// time, while the fetches' latency is what the readers wait for and the
/// blocks come faster for each block more (docs/remote.md, "The s3rver
/// `-j 2` row"), up to [`BUDGET_MAX`].
pub const BUDGET: u64 = 4 << 20;
/// Default bytes the budget may grow to (`WARCHEST_REMOTE_BUDGET_MAX`):
/// about what 20 ms a request at two cores' decoding rate needs on its
/// way (9-10 MiB at 460 MB/s) besides the blocks being read. 16 MiB, with
/// the read-ahead deepening, made no faster 20 ms row than 12 and held
/// 10 MiB more at its peak (a connection and its read buffer a request in
/// flight besides the blocks: docs/performance-history.md, "Round fourteen",
/// remote); 24 MiB, once, a server slow for want of CPU (s3rver on the
/// same cores) grew to without gain. A store fast enough never grows the
/// budget.
pub const BUDGET_MAX: u64 = 12 << 20;
/// Bytes a second the readers are taken to decode at when the first
/// answer's wait seeds the budget ([`RemoteBlocks::open_with`]): two
/// cores inflating gzip (370-460 MB/s measured; docs/remote.md). Too
/// high only starts the budget nearer its cap, which a store that slow
/// grows it to anyway.
pub const SEED_RATE: u64 = 460_000_000;
/// Bytes of the object's start kept once read: every reader opened at an
/// offset reads the start for a zstd dictionary frame (a few bytes), and
/// its first block would otherwise be fetched again for each.
const HEAD_KEPT: u64 = 64 << 10;
/// Readers remembered at most (the decoder has one a thread).
const MAX_READERS: usize = 64;
/// A reader that has not read while the readers moved to another block
/// this many times *for each reader there is* is taken as gone (a thread
/// whose reading is over): its blocks are no longer kept for it. Scaled by
/// the readers, so that with many readers a slow one (a large record
/// being decoded) keeps its blocks while each of the others moves on a
/// few blocks.
const STALE_MOVES: u64 = 8;
/// How long a reader waiting for a buffer sleeps at most before looking
/// again (a block whose request ends is put among the held ones, which
/// room can then be made from; that wakes the waiters too, as does a job
/// letting go of a block lent to it).
const ROOM_POLL: Duration = Duration::from_millis(20);
/// The budget's growth for latency stops once this many growths in a row
/// brought the blocks no faster ([`Pool::grow_paced`]): a store whose
/// rate, not its latency, is the limit (s3rver, one Node thread short of
/// CPU beside two decoding threads, took the budget to its cap with every
/// block in flight sharing the same 250-275 MB/s). Two, not one, so that
/// one window slowed by the decoding (a run of large records) does not
/// stop it.
const FLAT_GROWTHS: u8 = 2;
/// How much faster the blocks must arrive after a growth than the fastest
/// pace measured before it, as a fraction of that pace, for the growth to
/// have paid. A store limited by latency gains about a block's share of
/// the blocks in flight (1/10 at ten blocks on their way); 1/20 is below
/// that and above the spread of one window's pace on a steady store.
const GAIN: f64 = 0.05;

/// A block's bytes, in one of the pool's buffers, which goes back to the
/// pool when the last reader lets go of the block.
struct Block {
    buf: Vec<u8>,
    pool: Arc<Pool>,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("len", &self.buf.len())
            .finish_non_exhaustive()
    }
}

/// What a job borrows when the block is lent ([`ReadAt::lend`]): the
/// buffer stays the block's (not reused) while the job holds it.
impl AsRef<[u8]> for Block {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

/// A block lent to a job: when the job lets go of it, the readers waiting
/// for room are woken (the block, no longer in use, may now be evicted),
/// not left to sleep out [`ROOM_POLL`].
struct LentBlock(Option<Arc<Block>>);

impl AsRef<[u8]> for LentBlock {
    fn as_ref(&self) -> &[u8] {
        self.0.as_deref().map_or(&[], |b| b.buf.as_slice())
    }
}

impl Drop for LentBlock {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            let pool = Arc::clone(&b.pool);
            drop(b);
            pool.back.notify_all();
        }
    }
}

/// The block buffers: at most `max`, each of `size` bytes' capacity,
/// allocated on first need and reused for block after block (one
/// allocation each, its pages touched once: no page faults per block).
/// The bound on memory is this count, whatever the readers do; it grows
/// (`grow`) up to `cap`, never past it, and never shrinks.
struct Pool {
    state: Mutex<PoolState>,
    back: Condvar,
    cap: usize,
    size: usize,
    /// Bytes of blocks fetched whole so far: the pace that
    /// [`Pool::grow_paced`] measures.
    arrived: AtomicU64,
}

#[derive(Default)]
struct PoolState {
    /// Buffers allowed now (the budget in blocks).
    max: usize,
    free: Vec<Vec<u8>>,
    /// Buffers allocated (free or in use).
    alive: usize,
    /// The most in use at once.
    peak: usize,
    /// Buffers in use now.
    used: usize,
    /// The pace of the blocks ([`Pool::grow_paced`]): when the window now
    /// measured started (none before growth was first asked for) and the
    /// bytes arrived by then.
    since: Option<Instant>,
    from: u64,
    /// The fastest pace measured, bytes a second (0 before the first).
    pace: f64,
    /// Growths in a row that brought the blocks no faster.
    flat: u8,
}

impl PoolState {
    /// Whether the budget may grow for latency now, `arrived` bytes
    /// fetched whole so far, blocks of `size` bytes
    /// ([`Pool::grow_paced`]): the end of a window (a turn of the pool
    /// arrived since it started) whose pace was not the
    /// [`FLAT_GROWTHS`]th in a row no faster than the fastest before it.
    fn paced(&mut self, now: Instant, arrived: u64, size: u64) -> bool {
        if self.flat >= FLAT_GROWTHS {
            return false;
        }
        let Some(since) = self.since else {
            self.since = Some(now);
            self.from = arrived;
            return false;
        };
        let bytes = arrived.saturating_sub(self.from);
        if bytes < (self.max as u64).saturating_mul(size) {
            return false;
        }
        let secs = now.duration_since(since).as_secs_f64().max(1e-9);
        let pace = bytes as f64 / secs;
        if self.pace > 0.0 && pace < self.pace * (1.0 + GAIN) {
            self.flat += 1;
        } else {
            self.flat = 0;
        }
        self.pace = self.pace.max(pace);
        self.since = Some(now);
        self.from = arrived;
        self.flat < FLAT_GROWTHS
    }
}

impl Pool {
    /// A pool of buffers of `block` bytes: `budget` bytes of them at
    /// first, growing up to `cap` bytes (whole blocks, at least one; the
    /// cap never below the start).
    fn new(budget: u64, cap: u64, block: u64) -> Arc<Pool> {
        let max = buffers(budget, block);
        Arc::new(Pool {
            state: Mutex::new(PoolState {
                max,
                ..PoolState::default()
            }),
            back: Condvar::new(),
            cap: buffers(cap, block).max(max),
            size: usize::try_from(block).unwrap_or(usize::MAX),
            arrived: AtomicU64::new(0),
        })
    }

    /// The first buffer of a pool none was taken from yet (an object just
    /// opened: [`RemoteBlocks::open_with`]): always within the budget, as a
    /// pool allows one buffer at least ([`buffers`]): [`Pool::try_take`]
    /// cannot fail there.
    fn take_first(&self) -> Vec<u8> {
        self.try_take()
            .expect("a pool none was taken from allows one buffer")
    }

    /// A buffer, when one is free or may still be allocated.
    fn try_take(&self) -> Option<Vec<u8>> {
        let mut s = lock(&self.state);
        let b = match s.free.pop() {
            Some(b) => b,
            None if s.alive < s.max => {
                s.alive += 1;
                Vec::with_capacity(self.size)
            }
            None => return None,
        };
        s.used += 1;
        s.peak = s.peak.max(s.used);
        Some(b)
    }

    fn give(&self, mut b: Vec<u8>) {
        b.clear();
        let mut s = lock(&self.state);
        s.used -= 1;
        s.free.push(b);
        drop(s);
        self.back.notify_all();
    }

    /// Buffers free or not yet allocated.
    fn available(&self) -> usize {
        let s = lock(&self.state);
        s.free.len() + s.max.saturating_sub(s.alive)
    }

    /// One buffer more allowed, unless at the cap or at `floor` buffers,
    /// whichever is more: whether it grew. (The floor is one buffer more
    /// than the readers: with fewer, a reader's block could only take the
    /// room of another's, and each would fetch its block again.)
    fn grow(&self, floor: usize) -> bool {
        let mut s = lock(&self.state);
        if s.max >= self.cap.max(floor) {
            return false;
        }
        s.max += 1;
        true
    }

    /// [`Pool::grow`] for latency: one buffer more, as there, but only
    /// while the growths pay. The pace of the blocks (bytes fetched whole
    /// a second) is measured over a window of a turn of the pool (the
    /// budget's bytes arrived) at each budget; a growth is allowed at the
    /// end of a window unless [`FLAT_GROWTHS`] windows in a row were no
    /// faster (by [`GAIN`]) than the fastest before them, after which
    /// the budget stays where it is. More blocks in flight hide a store's
    /// latency, and pay for that; a store short of rate shares the same
    /// bytes a second among them, and they are only memory held. The
    /// first ask starts the first window and grows nothing: the pace at
    /// the budget the object started with is the first measured. Below
    /// `floor` it grows as `grow` does, unmeasured.
    fn grow_paced(&self, floor: usize) -> bool {
        let mut s = lock(&self.state);
        if s.max < floor {
            drop(s);
            return self.grow(floor);
        }
        if s.max >= self.cap.max(floor) {
            return false;
        }
        let arrived = self.arrived.load(Ordering::Relaxed);
        if !s.paced(Instant::now(), arrived, self.size as u64) {
            return false;
        }
        s.max += 1;
        true
    }

    /// Buffers allowed now.
    fn max(&self) -> usize {
        lock(&self.state).max
    }

    /// Waits until a buffer is free or `ROOM_POLL` has passed.
    fn wait(&self) {
        let s = lock(&self.state);
        if s.free.is_empty() && s.alive >= s.max {
            drop(
                self.back
                    .wait_timeout(s, ROOM_POLL)
                    .unwrap_or_else(PoisonError::into_inner),
            );
        }
    }
}

/// A block's bytes, or its error (copied for each reader).
type Answer = Result<Arc<Block>, io::Error>;

/// One block: empty while its request runs, then its bytes or its error
/// (copied for each reader with `copy_error`, as `io::Error` is not
/// `Clone`).
#[derive(Default)]
struct Cell {
    got: Mutex<Option<Answer>>,
    /// Shared, so that the request's task lets go of the cell before it
    /// wakes the readers (see [`SetOnDrop::set`]).
    ready: Arc<Condvar>,
    /// Whether its request was started by a reader scanning on (a read
    /// that moved from the block before): only then could a deeper
    /// read-ahead have started it sooner. A reader's first read, or a
    /// jump, starts its read-ahead all at once, so its blocks found on
    /// their way say nothing of the depth.
    scanned: bool,
}

impl Cell {
    fn set(&self, r: io::Result<Block>) {
        *lock(&self.got) = Some(r.map(Arc::new));
        self.ready.notify_all();
    }

    /// Waits for the block's request (which has its own timeouts and retry
    /// budget, so the wait ends).
    fn wait(&self) -> io::Result<Arc<Block>> {
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

    fn failed(&self) -> bool {
        matches!(*lock(&self.got), Some(Err(_)))
    }
}

/// Whether dropping `c` from the held blocks frees its buffer now: its
/// request is over and nothing but the held list refers to the cell or
/// its block (a reader waiting for it or copying from it, the request's
/// task not yet ended). Under the held lock these counts only fall, so a
/// block found idle stays idle. Dropping a block still referenced lost
/// its bytes and freed nothing.
fn idle(c: &Arc<Cell>) -> bool {
    Arc::strong_count(c) == 1
        && match &*lock(&c.got) {
            Some(Ok(b)) => Arc::strong_count(b) == 1,
            Some(Err(_)) => true,
            None => false,
        }
}

/// Sets its cell when dropped unset: a request task cancelled (the
/// runtime shutting down) or panicking must not leave readers waiting.
/// It holds the cell weakly: a request's task refers to its cell only
/// while setting it, so a block set is [`idle`] at once, not when the
/// task's thread next runs (on a loaded machine, many reads later).
struct SetOnDrop(std::sync::Weak<Cell>);

impl SetOnDrop {
    /// Sets the cell, unless no one holds it any longer (the block, with
    /// its buffer, is then dropped), and lets go of it before waking its
    /// readers: a reader woken may look for room at once, and find this
    /// block idle.
    fn set(&self, r: io::Result<Block>) {
        if let Some(c) = self.0.upgrade() {
            let ready = Arc::clone(&c.ready);
            *lock(&c.got) = Some(r.map(Arc::new));
            drop(c);
            ready.notify_all();
        }
    }
}

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.upgrade()
            && c.pending()
        {
            c.set(Err(io::Error::other(
                "the block's request ended without an answer",
            )));
        }
    }
}

/// A block's request, made under the held lock and started after it is
/// let go of: starting it wakes the runtime's thread, which then ran while
/// the reader still held the lock, and the other decoding thread waited
/// for the lock meanwhile: 25-27 sleeps a gzip `ls -j 2` over nginx
/// (docs/performance-history.md, "Round thirteen", remote `ls -j 2`). Dropped
/// unstarted, its cell gets an error ([`SetOnDrop`]).
struct Launch {
    start: u64,
    len: u64,
    loc: Location,
    opts: Options,
    size: u64,
    counters: Arc<Counters>,
    guard: SetOnDrop,
    block: Block,
    /// The answer already on its way, for the first block fetched at
    /// opening ([`RemoteBlocks::open_with`]): its body is read instead of
    /// a request made.
    first: Option<request::Body>,
}

impl Launch {
    /// Starts the request on the runtime.
    fn start(self) {
        let Launch {
            start,
            len,
            loc,
            opts,
            size,
            counters,
            guard,
            mut block,
            first,
        } = self;
        runtime().spawn(async move {
            let mut sink = Noted {
                buf: &mut block.buf,
                largest: &counters.largest_piece,
            };
            let got =
                request::fetch_into(&loc, &opts, start, len, Some(size), &mut sink, first).await;
            // A failed block's buffer goes back to the pool at once.
            let pool = Arc::clone(&block.pool);
            if got.is_ok() {
                pool.arrived.fetch_add(len, Ordering::Relaxed);
            }
            guard.set(got.map(|()| block));
            // Its buffer may now be made room from by a reader waiting,
            // once this task no longer refers to it.
            drop(guard);
            pool.back.notify_all();
        });
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
    /// The block it read before: kept too once a reader came back
    /// ([`Held::looks_back`]); a move from it to the next block is a scan,
    /// which may grow the budget.
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
    /// Whether a reader ever came back to a block before the one it was in
    /// (a chunk reader of an uncompressed object confirms a chunk's start
    /// by the records after it, then comes back): only then do readers
    /// keep the block they read before. The decoding job threads of a
    /// gzip object only move on, and their blocks before were 1-2 MiB of
    /// the blocks held at `-j 2`. Counted for the object, not a reader: a
    /// reader forgotten (gone stale) and come again would lose its block
    /// before at its first look back each time.
    looks_back: bool,
    /// Blocks each reader reads ahead now: from `RemoteBlocks::ahead` up
    /// to `RemoteBlocks::ahead_max` ([`AHEAD_MAX_BYTES`]). One depth for
    /// all the readers, grown by any of them (not a depth a reader). Its
    /// only home: the readers use it under this lock, and the stats line
    /// takes the lock once to print it ([`Meter::print`]).
    depth: u64,
}

/// Which held blocks room may be made from, in the order tried.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Give {
    /// Blocks no reader keeps (a read-ahead takes room from these only).
    Unkept,
    /// Also the blocks readers keep ahead of themselves or read before.
    Kept,
    /// Also the blocks readers are in (fetched again if read again): a
    /// reader's own block needs a buffer, and every buffer is held.
    Any,
}

/// An object read at explicit offsets ([`ReadAt`]), by several threads at
/// once: what the parallel decoder's jobs read when a remote archive is
/// scanned with more than one thread.
///
/// The object is cut into blocks of [`BLOCK`] bytes, each fetched by one
/// range request (with [`Options`]' retries, resumed where a fault cut it)
/// straight into a buffer of a pool: the body is copied once, as it
/// comes, and the buffers are reused. **The pool holds at most
/// [`BUDGET`] bytes of buffers** (`with_budget`), all readers together:
/// blocks fetched, being fetched and being read from; that is the bound
/// on the blocks' memory, whatever the readers do, except that the pool
/// may always hold one buffer for each reader and one more (with fewer, a
/// reader's block takes another's current block, and they refetch in
/// turn).
///
/// Each reading thread is a reader with a read-ahead of its own: a read
/// in block `i` fetches `i` when it is not held and starts the requests
/// for the blocks after it ([`AHEAD_BYTES`] of them at first),
/// concurrently, so that a reader scanning on finds its next blocks
/// fetched (the latency of a request is hidden while decoding them takes
/// longer than one request). The read-ahead deepens by a block, up to
/// [`AHEAD_MAX_BYTES`], each time a reader scanning on finds its block
/// still on its way with the whole read-ahead asked for: one depth for
/// all the readers, which any of them deepens. A
/// block is fetched once for all readers while it is held. A reader's own
/// block, the one it read before (once a reader came back to a block
/// behind it: the chunk readers of an uncompressed object do, a gzip
/// object's decoding jobs never) and the blocks ahead of it are *its
/// own*: no other reader's read-ahead drops them (the chunks of a plain
/// file are read far apart, and a cache shared by recency dropped one
/// reader's blocks for another's). A read-ahead takes a free buffer, or
/// one of a block no reader keeps (least recently used first, never one
/// still being fetched), or is not started. A reader's own block takes
/// room from the others' kept blocks too when it must, and waits for a
/// buffer when every one is being fetched or read from. A thread that has
/// not read while the readers moved on eight blocks each is taken as gone,
/// and its blocks become the others' room. A block that cannot be read
/// within the retry budget, and an object found shorter than its size
/// when opened (cut or replaced), are errors naming the URL and the
/// offset; the error is kept, so every reader of that block sees it.
pub struct RemoteBlocks {
    loc: Location,
    opts: Options,
    size: u64,
    block: u64,
    /// Blocks each reader reads ahead at first.
    ahead: u64,
    /// Blocks the read-ahead may grow to (`ahead` when fixed).
    ahead_max: u64,
    /// Shared with the stats line's meter (weakly), which reads the depth.
    held: Arc<Mutex<Held>>,
    pool: Arc<Pool>,
    /// The object's first bytes ([`HEAD_KEPT`]), once block 0 is read.
    head: OnceLock<Vec<u8>>,
    counters: Arc<Counters>,
    /// Whether the stats line is printed (`WARCHEST_REMOTE_STATS`).
    stats: bool,
    /// The stats line's meter, made and listed ([`print_stats`]) on the
    /// first read when `stats` is on.
    meter: OnceLock<Arc<Meter>>,
}

/// What the stats line counts.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    /// Reads that found their block still on its way and waited for it,
    /// and the time they waited (nanoseconds).
    waits: AtomicU64,
    waited_ns: AtomicU64,
    /// The most readers remembered at once (the pool's floor is one
    /// buffer more).
    most_readers: AtomicUsize,
    /// The longest piece of a body received: the HTTP client's read
    /// buffer bounds it.
    largest_piece: AtomicUsize,
    /// How long the first block's answer took to come (nanoseconds; 0
    /// when opened otherwise).
    first_ns: AtomicU64,
}

/// A block's buffer as the sink of its request, noting the longest piece.
struct Noted<'a> {
    buf: &'a mut Vec<u8>,
    largest: &'a AtomicUsize,
}

impl request::Sink for Noted<'_> {
    fn len(&self) -> u64 {
        self.buf.len() as u64
    }

    fn push(&mut self, b: bytes::Bytes) {
        self.largest.fetch_max(b.len(), Ordering::Relaxed);
        request::Sink::push(self.buf, b);
    }
}

/// One object's stats line, printed once: by [`print_stats`], which the
/// command line calls when its command is over, or when the object is
/// dropped, whichever comes first. (Printed on drop only, it was missing
/// with `-j 2` whenever the process exited while a decoding pool thread
/// still held the object.) It holds the pool and the held blocks weakly:
/// a line not printed keeps no buffer alive.
struct Meter {
    url: String,
    block: u64,
    blocks: u64,
    counters: Arc<Counters>,
    pool: Weak<Pool>,
    /// For the read-ahead's depth ([`Held::depth`]).
    held: Weak<Mutex<Held>>,
    printed: AtomicBool,
}

/// Held while a stats line is written ([`Meter::print`]).
static PRINTING: Mutex<()> = Mutex::new(());

/// The meters whose line is not printed yet.
fn meters() -> &'static Mutex<Vec<Arc<Meter>>> {
    static METERS: OnceLock<Mutex<Vec<Arc<Meter>>>> = OnceLock::new();
    METERS.get_or_init(Default::default)
}

impl Meter {
    /// The line, unless printed already: formatted whole and written in
    /// one call, under [`PRINTING`], so that the command line's last call
    /// ([`print_stats`]) waits for a line a pool thread is writing and the
    /// process never ends mid-line. Its error ignored: a closed stderr
    /// must not panic (this runs in a drop).
    fn print(&self) {
        let _one_at_a_time = lock(&PRINTING);
        if self.printed.swap(true, Ordering::AcqRel) {
            return;
        }
        let c = &self.counters;
        let (max, cap, peak, pace, flat) = self.pool.upgrade().map_or((0, 0, 0, 0.0, 0), |p| {
            let s = lock(&p.state);
            (
                s.max as u64,
                p.cap as u64,
                s.peak as u64,
                s.pace / 1e6,
                s.flat,
            )
        });
        let pace = match (pace > 0.0, flat >= FLAT_GROWTHS) {
            (false, _) => String::new(),
            (true, false) => format!(", pace {pace:.0} MB/s at most"),
            (true, true) => {
                format!(", pace {pace:.0} MB/s at most, growth stopped (no faster for it)")
            }
        };
        let depth = self.held.upgrade().map_or(0, |h| lock(&h).depth);
        let readers = c.most_readers.load(Ordering::Relaxed);
        let waited = c.waited_ns.load(Ordering::Relaxed) as f64 / 1e6;
        let first = c.first_ns.load(Ordering::Relaxed) as f64 / 1e6;
        let line = format!(
            "warchest: remote blocks of {}: {} requests, {} blocks of {} bytes, budget reached {} bytes (cap {} bytes, or {} blocks if more: one for each of the {} readers and one), {} bytes held at most, {} reads waited {waited:.1} ms, read-ahead {} blocks a reader, first answer {first:.1} ms{pace}\n",
            self.url,
            c.requests.load(Ordering::Relaxed),
            self.blocks,
            self.block,
            max * self.block,
            cap * self.block,
            readers + 1,
            readers,
            peak * self.block,
            c.waits.load(Ordering::Relaxed),
            depth,
        );
        let _ = io::stderr().write_all(line.as_bytes());
    }

    /// Prints the line and takes it off the list.
    fn finish(this: &Arc<Meter>) {
        this.print();
        lock(meters()).retain(|m| !Arc::ptr_eq(m, this));
    }
}

/// Prints the stats line (`WARCHEST_REMOTE_STATS`) of every object read
/// at offsets whose line is not printed yet, the objects still open
/// included: the command line calls it when its command is over, as a
/// decoding pool thread may hold an object until after the process
/// exits. Each object's line is printed once.
pub fn print_stats() {
    let left = std::mem::take(&mut *lock(meters()));
    for m in left {
        m.print();
    }
}

impl std::fmt::Debug for RemoteBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteBlocks")
            .field("url", &self.loc.url())
            .field("size", &self.size)
            .field("block", &self.block)
            .field("buffers", &self.pool.max())
            .field("cap", &self.pool.cap)
            .finish_non_exhaustive()
    }
}

impl Drop for RemoteBlocks {
    /// With `WARCHEST_REMOTE_STATS` on (set, not empty, not `0`), one line on
    /// stderr, unless [`print_stats`] printed it: requests, the budget
    /// reached and what bounds it, the bytes held at most and the waits
    /// (for measuring; nothing else reads it).
    fn drop(&mut self) {
        if self.stats {
            Meter::finish(self.meter());
        }
    }
}

/// Whether a value of `WARCHEST_REMOTE_STATS` turns the stats line on:
/// set, not empty and not `0`.
pub(crate) fn stats_wanted(v: Option<&std::ffi::OsStr>) -> bool {
    v.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Buffers of `block` bytes that fit in `budget` (at least one).
fn buffers(budget: u64, block: u64) -> usize {
    usize::try_from(budget / block.max(1))
        .unwrap_or(usize::MAX)
        .max(1)
}

impl RemoteBlocks {
    /// Opens `loc` set up by `setup` (the `with_*` methods, which it is
    /// given the object with, its size not known yet) with one request:
    /// a range request for the first block, whose answer gives the size
    /// (`Content-Range: bytes 0-N/SIZE`) and whose body becomes block 0,
    /// still arriving when this returns (the first read finds it on its
    /// way, and starts its read-ahead at once). A HEAD and then block 0
    /// cost two round trips before any byte: 40 ms at 20 ms a request.
    /// When that request fails otherwise than for the whole object (a
    /// server answering ranges with the whole object, an empty object's
    /// 416, an answer without the total, a 5xx, the network), the object
    /// is opened with a HEAD for its size, and block 0 fetched when first
    /// read; a server without ranges keeps that answer's error as block
    /// 0's, which is what the first read of block 0 would get again.
    ///
    /// # Errors
    /// The first request finds the object missing or refused (401, 403,
    /// 404, 410) or its redirects looping; the HEAD request, made when
    /// the first failed otherwise, fails within the retry budget.
    pub fn open_with(
        loc: Location,
        opts: Options,
        setup: impl FnOnce(RemoteBlocks) -> RemoteBlocks,
    ) -> io::Result<RemoteBlocks> {
        let mut b = setup(RemoteBlocks::open_sized(loc, opts, 0));
        // Made (with the TLS provider) before the clock starts: a process's
        // first remote read builds it, which is no part of the store's
        // latency.
        let rt = runtime();
        let t = std::time::Instant::now();
        match rt.block_on(request::open_first(&b.loc, &b.opts, b.block))? {
            request::Opened::Range(size, body) => {
                b.size = size;
                b.seed(t.elapsed());
                // Block 0 is the answer's body (an empty block for an
                // empty object, never read).
                let (cell, mut launch) = b.spawn(0, b.pool.take_first(), false);
                launch.first = Some(body);
                lock(&b.held).blocks.push((0, cell));
                launch.start();
            }
            request::Opened::Head(size, no_ranges) => {
                b.size = size;
                b.counters.requests.store(2, Ordering::Relaxed);
                // A server without ranges: that answer's error is block
                // 0's, which its first read would get again.
                if let Some(e) = no_ranges.filter(|_| size > 0) {
                    let cell = Arc::new(Cell::default());
                    cell.set(Err(e));
                    lock(&b.held).blocks.push((0, cell));
                }
            }
        }
        Ok(b)
    }

    /// Starts the budget and the read-ahead where the first answer's wait
    /// says they will grow to: about `R x L` bytes on their way
    /// ([`SEED_RATE`] times the wait for the answer's head) and a block
    /// for each of two readers, whole blocks, within the cap (a fixed
    /// budget does not grow). At 20 ms a request (about 22 ms to the
    /// answer's head) that is the 12 MiB cap and ten blocks of 1 MiB
    /// ahead, which the growth, a block a read that waited, reached only
    /// after some 20-40 reads had waited; a fast store (nginx on loopback
    /// answers in about 1 ms: one block) starts where it did. The wait
    /// counts the connection's setup too (name lookup, TCP's handshake
    /// and, over https, TLS's: on a cold connection two or three round
    /// trips besides the request's), so an https store seeds up to 2-3x
    /// its `R x L`: within the cap, which a store that slow grows the
    /// budget to anyway.
    fn seed(&self, wait: Duration) {
        self.counters.first_ns.store(
            u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let bytes = u64::try_from(u128::from(SEED_RATE) * wait.as_nanos() / 1_000_000_000)
            .unwrap_or(u64::MAX);
        let blocks = bytes.div_ceil(self.block.max(1));
        while (self.pool.max() as u64) < blocks.saturating_add(2) && self.pool.grow(0) {}
        let depth = blocks.clamp(self.ahead, self.ahead_max);
        let mut h = lock(&self.held);
        h.depth = h.depth.max(depth);
    }

    /// `loc` read as `size` bytes, the size known already (no request).
    pub fn open_sized(loc: Location, opts: Options, size: u64) -> RemoteBlocks {
        RemoteBlocks {
            loc,
            opts,
            size,
            block: BLOCK as u64,
            ahead: RemoteBlocks::ahead_for(BLOCK as u64) as u64,
            ahead_max: RemoteBlocks::ahead_max_for(BLOCK as u64) as u64,
            held: Arc::new(Mutex::new(Held {
                depth: RemoteBlocks::ahead_for(BLOCK as u64) as u64,
                ..Held::default()
            })),
            pool: Pool::new(BUDGET, BUDGET_MAX, BLOCK as u64),
            head: OnceLock::new(),
            counters: Arc::default(),
            stats: stats_wanted(std::env::var_os("WARCHEST_REMOTE_STATS").as_deref()),
            meter: OnceLock::new(),
        }
    }

    /// The same with blocks of `block` bytes (at least 4 KiB) and `ahead`
    /// blocks read ahead by each reader (at most 16, a fixed depth, whatever
    /// [`RemoteBlocks::with_ahead_max`] set before:
    /// [`RemoteBlocks::with_ahead_max`] after this lets it grow), within
    /// the same budget of bytes and the same cap (at least one block
    /// each).
    #[must_use]
    pub fn with_blocks(self, block: usize, ahead: usize) -> RemoteBlocks {
        let (budget, cap) = (self.budget(), self.budget_max());
        let mut b = self.with_pool(budget, cap, (block as u64).clamp(4096, 1 << 30));
        b.ahead = ahead.min(16) as u64;
        b.ahead_max = b.ahead;
        lock(&b.held).depth = b.ahead;
        b
    }

    /// The same with a read-ahead that may grow up to `blocks` blocks a
    /// reader (at most 32; never below the depth it starts at), a block
    /// at a time while a reader scanning on finds its block still on its
    /// way with its whole read-ahead asked for. The depth is one for all
    /// the readers, whichever grows it. Call it after
    /// [`RemoteBlocks::with_blocks`], which sets a fixed depth again.
    #[must_use]
    pub fn with_ahead_max(mut self, blocks: usize) -> RemoteBlocks {
        self.ahead_max = (blocks.min(32) as u64).max(self.ahead);
        self
    }

    /// The same holding at most `bytes` of blocks, all readers together,
    /// at least one block: a *fixed* budget, which does not grow (the cap
    /// is `bytes` too; [`RemoteBlocks::with_budget_max`] after this lets
    /// it grow).
    ///
    /// One floor stands above any budget: the pool may hold one block for
    /// each reader and one more (at most 65 blocks, with the 64 readers
    /// remembered), so the bytes held are bounded by the larger of the
    /// budget and `(readers + 1)` blocks. A budget below that is not
    /// enforced, on purpose: a reader whose block could only take the room
    /// of the block another reader is in either fetches in turn with it
    /// (each takes the other's block at its next read: 155 requests for
    /// 64 blocks with sixteen readers), or, made to wait for a buffer,
    /// waits for a reader that may itself be waiting for it (the decoder's
    /// reading thread waits for the job a pool thread reads), for ever.
    #[must_use]
    pub fn with_budget(self, bytes: u64) -> RemoteBlocks {
        let block = self.block;
        self.with_pool(bytes, bytes, block)
    }

    /// The same with a budget that may grow up to `bytes` (default
    /// [`BUDGET_MAX`]; never below the budget it starts at).
    #[must_use]
    pub fn with_budget_max(self, bytes: u64) -> RemoteBlocks {
        let (budget, block) = (self.budget(), self.block);
        self.with_pool(budget, bytes, block)
    }

    /// The default budget's start and cap for blocks of `block` bytes:
    /// [`BUDGET`] and [`BUDGET_MAX`], but at least two blocks to start
    /// and room for a reader's block, the one before and its read-ahead
    /// ([`RemoteBlocks::ahead_for`]) at the cap, so that large blocks
    /// (8 MiB) still get read ahead.
    pub fn default_budget(block: u64) -> (u64, u64) {
        let block = block.clamp(4096, 1 << 30);
        (
            BUDGET.max(2 * block),
            BUDGET_MAX.max((Self::ahead_for(block) as u64 + 2) * block),
        )
    }

    /// The default read-ahead for blocks of `block` bytes: [`AHEAD_BYTES`]
    /// of blocks, at least [`AHEAD`] and at most 16 (8 for 1 MiB blocks,
    /// 4 for 2 MiB). At a store's latency L a reader decoding at R needs
    /// about `R x L` bytes on their way, whatever the block size.
    pub fn ahead_for(block: u64) -> usize {
        usize::try_from(AHEAD_BYTES / block.max(1))
            .unwrap_or(16)
            .clamp(AHEAD, 16)
    }

    /// The most blocks a reader's read-ahead may grow to for blocks of
    /// `block` bytes: [`AHEAD_MAX_BYTES`] of them, at least
    /// [`RemoteBlocks::ahead_for`] and at most 32 (16 for 1 MiB blocks, 8
    /// for 2 MiB).
    pub fn ahead_max_for(block: u64) -> usize {
        usize::try_from(AHEAD_MAX_BYTES / block.max(1))
            .unwrap_or(32)
            .clamp(Self::ahead_for(block), 32)
    }

    fn with_pool(mut self, budget: u64, cap: u64, block: u64) -> RemoteBlocks {
        self.block = block;
        self.pool = Pool::new(budget, cap, block);
        self
    }

    /// The bytes of blocks held at most now: the budget, rounded down to
    /// whole blocks (at least one). It starts at [`BUDGET`] (or
    /// `with_budget`'s) and grows up to [`RemoteBlocks::budget_max`].
    pub fn budget(&self) -> u64 {
        self.pool.max() as u64 * self.block
    }

    /// The bytes the budget may grow to, in whole blocks.
    pub fn budget_max(&self) -> u64 {
        self.pool.cap as u64 * self.block
    }

    /// Whether dropping it prints the stats line on stderr (on when
    /// `WARCHEST_REMOTE_STATS` is set, not empty and not `0`): off for an
    /// object its caller reads another way instead (a server that answers
    /// no ranges is streamed).
    pub fn set_stats(&mut self, on: bool) {
        if !on && let Some(m) = self.meter.get() {
            m.printed.store(true, Ordering::Release);
            lock(meters()).retain(|x| !Arc::ptr_eq(x, m));
        }
        self.stats = on;
    }

    /// The stats line's meter, made and listed for [`print_stats`] on the
    /// first call.
    fn meter(&self) -> &Arc<Meter> {
        self.meter.get_or_init(|| {
            let m = Arc::new(Meter {
                url: self.loc.url().to_string(),
                block: self.block,
                blocks: self.blocks(),
                counters: Arc::clone(&self.counters),
                pool: Arc::downgrade(&self.pool),
                held: Arc::downgrade(&self.held),
                printed: AtomicBool::new(false),
            });
            lock(meters()).push(Arc::clone(&m));
            m
        })
    }

    /// The URL.
    pub fn url(&self) -> &str {
        self.loc.url()
    }

    /// The requests made so far (ranges, and the HEAD when opening made
    /// one; retries not counted).
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Reads that waited for their block's request (it was on its way, or
    /// not started), and how long they waited in all: what read-ahead did
    /// not hide.
    pub fn waits(&self) -> (u64, Duration) {
        (
            self.counters.waits.load(Ordering::Relaxed),
            Duration::from_nanos(self.counters.waited_ns.load(Ordering::Relaxed)),
        )
    }

    /// Whether the budget's growth for latency stopped because two growths
    /// in a row brought the blocks no faster (docs/remote.md, "The s3rver
    /// `-j 2` row"): the budget then stays where it is for this object.
    pub fn growth_stopped(&self) -> bool {
        lock(&self.pool.state).flat >= FLAT_GROWTHS
    }

    /// Blocks each reader reads ahead now: [`RemoteBlocks::ahead_for`] at
    /// first (or where the first answer's wait seeded it), grown a block
    /// at a time (up to [`RemoteBlocks::with_ahead_max`]'s) each time a
    /// reader scanning on found its block still on its way with its whole
    /// read-ahead asked for. One depth for all the readers.
    pub fn read_ahead(&self) -> usize {
        usize::try_from(lock(&self.held).depth).unwrap_or(usize::MAX)
    }

    /// The most blocks the read-ahead may grow to
    /// ([`RemoteBlocks::with_ahead_max`]; the depth it starts at when
    /// fixed).
    pub fn read_ahead_max(&self) -> usize {
        usize::try_from(self.ahead_max).unwrap_or(usize::MAX)
    }

    /// How long the first block's answer took to come (its status and
    /// headers), which seeded the budget and the read-ahead, when opened
    /// with [`RemoteBlocks::open_with`] and that request was answered;
    /// else `None`.
    pub fn first_answer(&self) -> Option<Duration> {
        let ns = self.counters.first_ns.load(Ordering::Relaxed);
        (ns > 0).then(|| Duration::from_nanos(ns))
    }

    /// The longest piece of a response body received so far: over plain
    /// HTTP at most twice the HTTP client's read buffer ([`Options::read_buf`]; docs/remote.md,
    /// "What a remote read holds").
    pub fn largest_piece(&self) -> usize {
        self.counters.largest_piece.load(Ordering::Relaxed)
    }

    /// The most bytes of blocks held at once so far (buffers fetched,
    /// being fetched or being read from, counted as they are taken from
    /// the pool): what [`RemoteBlocks::budget`] bounds.
    pub fn peak_bytes(&self) -> u64 {
        lock(&self.pool.state).peak as u64 * self.block
    }

    fn blocks(&self) -> u64 {
        self.size.div_ceil(self.block)
    }

    /// The bytes of block `i`.
    fn len_of(&self, i: u64) -> u64 {
        self.block.min(self.size.saturating_sub(i * self.block))
    }

    /// The request for block `i` into `buf`: its cell, to be put among the
    /// held blocks, and its [`Launch`], to be started once the held lock
    /// is let go of ([`Launch::start`]).
    fn spawn(&self, i: u64, buf: Vec<u8>, scanned: bool) -> (Arc<Cell>, Launch) {
        let cell = Arc::new(Cell {
            scanned,
            ..Cell::default()
        });
        let launch = Launch {
            start: i * self.block,
            len: self.len_of(i),
            loc: self.loc.clone(),
            opts: self.opts.clone(),
            size: self.size,
            counters: Arc::clone(&self.counters),
            guard: SetOnDrop(Arc::downgrade(&cell)),
            block: Block {
                buf,
                pool: Arc::clone(&self.pool),
            },
            first: None,
        };
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        (cell, launch)
    }

    /// Notes that thread `me` reads block `i`; readers gone (see
    /// [`STALE_MOVES`]) are forgotten.
    fn note_reader(&self, h: &mut Held, me: ThreadId, i: u64) {
        if let Some(r) = h.readers.iter_mut().find(|r| r.thread == me) {
            if r.at != i {
                h.moves += 1;
                h.looks_back |= i < r.at;
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
            self.counters
                .most_readers
                .fetch_max(h.readers.len(), Ordering::Relaxed);
        }
        let (now, stale) = (h.moves, STALE_MOVES * h.readers.len() as u64);
        h.readers.retain(|r| now - r.seen <= stale);
    }

    /// How strongly block `k` is kept: `Any` when a reader is in it,
    /// `Kept` when a reader has it ahead or read it before and looks back,
    /// else `Unkept` (what [`Give`] level may drop it).
    fn kept(&self, h: &Held, k: u64) -> Give {
        let mut most = Give::Unkept;
        for r in &h.readers {
            if k == r.at {
                return Give::Any;
            }
            if (k == r.before && h.looks_back) || (k > r.at && k - r.at <= h.depth) {
                most = Give::Kept;
            }
        }
        most
    }

    /// Drops held blocks that `give` allows, only ones whose buffer comes
    /// back at once ([`idle`]: never one being fetched, waited for or
    /// copied from), until one buffer is free; whether one is.
    /// Unkept blocks go least recently used first; kept ones the most
    /// speculative first (a block read before, then the one furthest ahead
    /// of its reader), so that a reader's next block stays.
    fn make_room(&self, h: &mut Held, give: Give) -> Option<Vec<u8>> {
        loop {
            if let Some(b) = self.pool.try_take() {
                return Some(b);
            }
            let droppable = |k: &u64, c: &Arc<Cell>| self.kept(h, *k) <= give && idle(c);
            let k = h
                .blocks
                .iter()
                .position(|(k, c)| droppable(k, c) && self.kept(h, *k) == Give::Unkept)
                .or_else(|| {
                    (0..h.blocks.len())
                        .filter(|&x| {
                            let (k, c) = &h.blocks[x];
                            droppable(k, c)
                        })
                        // The first (least recently used) of the furthest.
                        .min_by_key(|&x| std::cmp::Reverse(self.distance(h, h.blocks[x].0)))
                })?;
            h.blocks.remove(k);
        }
    }

    /// How far block `k` is ahead of the nearest reader it is ahead of
    /// (`ahead + 1` when it is only a block read before; 0 when a reader
    /// is in it).
    fn distance(&self, h: &Held, k: u64) -> u64 {
        h.readers
            .iter()
            .filter(|r| k >= r.at && k - r.at <= h.depth)
            .map(|r| k - r.at)
            .min()
            .unwrap_or(h.depth + 1)
    }

    /// A buffer for a read-ahead of the reader in block `i`: a free one,
    /// while one stays free for each other reader, not reading near `i`,
    /// whose next block is not held (it needs one soon, and would
    /// otherwise take one of this reader's blocks), or one of a block no
    /// reader keeps.
    fn ahead_room(&self, h: &mut Held, me: ThreadId, i: u64) -> Option<Vec<u8>> {
        let depth = h.depth;
        let near = |at: u64| at + 1 >= i && at <= i + depth;
        let last = self.blocks().saturating_sub(1);
        let reserve = h
            .readers
            .iter()
            .filter(|r| {
                r.thread != me
                    && !near(r.at)
                    && r.at < last
                    && !h.blocks.iter().any(|(k, _)| *k == r.at + 1)
            })
            .count();
        loop {
            if self.pool.available() > reserve
                && let Some(b) = self.pool.try_take()
            {
                return Some(b);
            }
            let k = h
                .blocks
                .iter()
                .position(|(k, c)| self.kept(h, *k) == Give::Unkept && idle(c))?;
            h.blocks.remove(k);
            if let Some(b) = self.pool.try_take() {
                return Some(b);
            }
        }
    }

    /// Block `i` (which is before the end), fetched or waited for; the
    /// calling thread's read-ahead started.
    fn get(&self, i: u64) -> io::Result<Arc<Block>> {
        if self.stats {
            self.meter();
        }
        // The requests this call makes, started once the held lock is let
        // go of (the loop's end drops it): the reader's own block first.
        let mut launches = Vec::new();
        let cell = loop {
            let mut h = lock(&self.held);
            let me = std::thread::current().id();
            self.note_reader(&mut h, me, i);
            // Whether this reader waits for a block it would have had
            // fetched ahead: one on its way, or the next one in its scan
            // that the read-ahead found no buffer for.
            let next = h
                .readers
                .iter()
                .any(|r| r.thread == me && r.at == i && r.before + 1 == i);
            let mut caught_up = next;
            let mut on_way = false;
            let cell = match h.blocks.iter().position(|(k, _)| *k == i) {
                Some(at) => {
                    let e = h.blocks.remove(at);
                    let c = Arc::clone(&e.1);
                    h.blocks.push(e);
                    // Only a reader scanning on (from the block before)
                    // that finds its block on its way has caught up. A
                    // reader's first read, or a jump, that lands on a
                    // block another reader started is no sign of latency:
                    // at the start of a read the second decoding thread
                    // always finds block 0 on its way, and grew the
                    // budget by a block on every object.
                    caught_up = next && c.pending();
                    // The depth fell short only if a deeper read-ahead
                    // would have asked for the block sooner: not for one
                    // a reader's first read or a jump asked for together
                    // with the blocks after it (the first step of every
                    // scan found its block so, and deepened the
                    // read-ahead by a block on every object).
                    on_way = caught_up && c.scanned;
                    // A block that failed is the reader's answer: no
                    // read-ahead for a reader that stops here (a server
                    // without ranges would answer each with the whole
                    // object).
                    if c.failed() {
                        break c;
                    }
                    c
                }
                None => {
                    // Its own block: room from the others' blocks too,
                    // when there is no other way.
                    let buf = [Give::Unkept, Give::Kept]
                        .into_iter()
                        .find_map(|g| self.make_room(&mut h, g));
                    // Else one buffer more: while there are fewer than one
                    // for each reader and one more (whatever the budget),
                    // or when this reader caught up with its scan and the
                    // budget may grow. Only then a block another reader is
                    // in (it would fetch it again, and take another's),
                    // else wait for a buffer, then look again.
                    let floor = h.readers.len() + 1;
                    let buf = match buf {
                        Some(b) => Some(b),
                        None if (next || self.pool.max() < floor)
                            && self.pool.grow_paced(floor) =>
                        {
                            continue;
                        }
                        None => self.make_room(&mut h, Give::Any),
                    };
                    let Some(buf) = buf else {
                        drop(h);
                        self.pool.wait();
                        continue;
                    };
                    let (c, launch) = self.spawn(i, buf, next);
                    launches.push(launch);
                    h.blocks.push((i, Arc::clone(&c)));
                    c
                }
            };
            let end = self.blocks().saturating_sub(1);
            // The read-ahead grows by a block when this reader scanning on
            // finds its block on its way while the read-ahead its last
            // read asked for (up to `i - 1 + depth`) is all asked for: its
            // depth, not the budget, is what fell short of the latency.
            if on_way
                && h.depth < self.ahead_max
                && i.saturating_add(h.depth) < end
                && (i + 1..i + h.depth).all(|k| h.blocks.iter().any(|(b, _)| *b == k))
            {
                h.depth += 1;
            }
            let last = i.saturating_add(h.depth).min(end);
            // The budget grows by a block, once a call, when this reader
            // caught up with its read-ahead (its block still on its way,
            // or the next block of its scan not fetched at all) while the
            // read-ahead finds no buffer: the fetches' latency, not the
            // decoding, is the limit. A reader slower than the fetches
            // finds its block fetched, and a reader jumping to a block
            // not held (a new chunk) waits for one request whatever the
            // budget: neither grows it. Nor a store whose blocks came no
            // faster for the last growths ([`Pool::grow_paced`]).
            let mut may_grow = caught_up;
            for k in i + 1..=last {
                if h.blocks.iter().any(|(b, _)| *b == k) {
                    continue;
                }
                let buf = match self.ahead_room(&mut h, me, i) {
                    Some(buf) => buf,
                    None if may_grow && self.pool.grow_paced(0) => {
                        may_grow = false;
                        match self.ahead_room(&mut h, me, i) {
                            Some(buf) => buf,
                            None => break,
                        }
                    }
                    None => break,
                };
                let (c, launch) = self.spawn(k, buf, next);
                launches.push(launch);
                h.blocks.push((k, c));
            }
            break cell;
        };
        for launch in launches {
            launch.start();
        }
        if !cell.pending() {
            return cell.wait();
        }
        let t = std::time::Instant::now();
        let got = cell.wait();
        self.counters.waits.fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counters.waited_ns.fetch_add(ns, Ordering::Relaxed);
        got
    }
}

impl RemoteBlocks {
    /// Keeps the object's first bytes ([`HEAD_KEPT`]) from block 0.
    fn keep_head(&self, block: &Block) {
        self.head.get_or_init(|| {
            let n = block.buf.len().min(HEAD_KEPT as usize);
            block.buf[..n].to_vec()
        });
    }
}

/// Copies the bytes of `block` from `at` on into `buf`: how many.
fn copy_at(block: &Block, at: u64, buf: &mut [u8]) -> usize {
    let Some(from) = usize::try_from(at).ok().filter(|&a| a < block.buf.len()) else {
        return 0;
    };
    let n = buf.len().min(block.buf.len() - from);
    buf[..n].copy_from_slice(&block.buf[from..from + n]);
    n
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
            self.keep_head(&bytes);
        }
        let n = copy_at(&bytes, pos - i * self.block, buf);
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

    fn fetches_ahead(&self) -> bool {
        true
    }

    /// The block's own bytes, lent to a decoding job instead of copied into
    /// its buffer (one copy of every byte fewer): at most to the block's
    /// end. A block that failed lends nothing; `read_at` then reports it.
    fn lend(&self, pos: u64, len: usize) -> Option<Lent> {
        if len == 0 || pos >= self.size {
            return None;
        }
        let i = pos / self.block;
        let bytes = self.get(i).ok()?;
        if i == 0 {
            self.keep_head(&bytes);
        }
        let from = usize::try_from(pos - i * self.block).ok()?;
        if from >= bytes.buf.len() {
            return None;
        }
        let lent = Arc::new(LentBlock(Some(bytes)));
        Some(Lent::new(lent, from, from.saturating_add(len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u64 = 4 << 20;

    /// An object on a server nobody listens on: only blocks never fetched
    /// would be asked for, so the cache logic is tested without requests.
    fn unreachable(size: u64, budget: u64) -> RemoteBlocks {
        let loc = Location::parse("http://127.0.0.1:9/x").unwrap();
        RemoteBlocks::open_sized(loc, Options::default(), size)
            .with_blocks(B as usize, 1)
            .with_budget(budget)
    }

    /// Block `i` held as fetched, filled with `fill`, in a buffer of the
    /// pool's.
    fn ready(b: &RemoteBlocks, i: u64, fill: u8) {
        let c = Arc::new(Cell::default());
        let mut buf = b.pool.try_take().expect("a buffer within the budget");
        buf.resize(b.len_of(i) as usize, fill);
        c.set(Ok(Block {
            buf,
            pool: Arc::clone(&b.pool),
        }));
        lock(&b.held).blocks.push((i, c));
    }

    fn held(b: &RemoteBlocks) -> Vec<u64> {
        held_in(&lock(&b.held))
    }

    /// A job letting go of a lent block wakes a reader waiting for room
    /// (the block is still held by the cache: no buffer goes back, only
    /// the lend ends).
    #[test]
    fn a_lent_block_let_go_of_wakes_the_readers_waiting_for_room() {
        let pool = Pool::new(B, B, B);
        let block = Arc::new(Block {
            buf: pool.try_take().unwrap(),
            pool: Arc::clone(&pool),
        });
        let lent = Lent::new(Arc::new(LentBlock(Some(Arc::clone(&block)))), 0, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                let s = lock(&pool.state);
                tx.send(()).unwrap();
                let (_s, r) = pool.back.wait_timeout(s, Duration::from_secs(20)).unwrap();
                r.timed_out()
            })
        };
        rx.recv().unwrap();
        // Taken once the waiter waits (it lets go of the lock only then).
        drop(lock(&pool.state));
        drop(lent);
        assert!(!waiter.join().unwrap(), "the waiter slept out its wait");
        assert_eq!(Arc::strong_count(&block), 1);
    }

    #[test]
    fn held_blocks_serve_reads_across_boundaries_and_the_end() {
        let b = unreachable(3 * B + 100, 4 * B);
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
        // Buffers are counted whole, the last block's too.
        assert_eq!(b.peak_bytes(), 4 * B);
        assert_eq!(b.budget(), 4 * B);
        // The object's start, once read, is kept for the readers that look
        // at it: no block fetched again, no reader moved there.
        lock(&b.held).blocks.retain(|(k, _)| *k != 0);
        let mut small = [1u8; 10];
        assert_eq!(b.read_at(&mut small, 100).unwrap(), 10);
        assert_eq!(small, [0u8; 10]);
        assert_eq!(b.requests(), 0);
        assert!(lock(&b.held).readers.iter().all(|r| r.at == 3));
    }

    /// Thread ids of `n` threads other than the test's.
    fn other_threads(n: usize) -> Vec<ThreadId> {
        (0..n)
            .map(|_| {
                std::thread::spawn(|| std::thread::current().id())
                    .join()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn room_is_made_from_unkept_blocks_then_kept_ones_never_running_ones() {
        let b = unreachable(100 * B, 7 * B);
        for i in 0..6 {
            ready(&b, i, 0);
        }
        // A running block stays whatever its age (its buffer is the 7th).
        let running = Arc::new(Cell::default());
        let _buf = b.pool.try_take().unwrap();
        lock(&b.held).blocks.insert(0, (50, running));
        assert!(b.pool.try_take().is_none());
        let me = std::thread::current().id();
        let mut h = lock(&b.held);
        // Another reader in block 0 keeps 0 and 1 (one block ahead); this
        // thread, in block 5, keeps 5 and 6.
        let other = other_threads(1)[0];
        b.note_reader(&mut h, other, 0);
        b.note_reader(&mut h, me, 5);
        // Each buffer taken is kept, so the next call must make room again.
        let mut taken = Vec::new();
        for want in [
            vec![50, 0, 1, 3, 4, 5],
            vec![50, 0, 1, 4, 5],
            vec![50, 0, 1, 5],
        ] {
            taken.push(b.make_room(&mut h, Give::Unkept).expect("an unkept block"));
            assert_eq!(h.blocks.iter().map(|(k, _)| *k).collect::<Vec<_>>(), want);
        }
        assert!(b.make_room(&mut h, Give::Unkept).is_none());
        // A reader's own block may take a kept block's room (1: ahead of
        // the other reader), then a block a reader is in (0, the least
        // recently used), never the running one.
        taken.push(b.make_room(&mut h, Give::Kept).unwrap());
        assert_eq!(
            h.blocks.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            vec![50, 0, 5]
        );
        assert!(b.make_room(&mut h, Give::Kept).is_none());
        taken.push(b.make_room(&mut h, Give::Any).unwrap());
        assert_eq!(
            h.blocks.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            vec![50, 5]
        );
    }

    /// A read-ahead leaves a buffer free for another reader far away whose
    /// next block is not held, and none for a reader near (the readers of a
    /// gzip object walk it together and share their read-ahead); a
    /// reader's own block takes the most speculative kept block first.
    #[test]
    fn a_read_ahead_leaves_room_for_a_far_reader_and_the_furthest_ahead_goes_first() {
        let b = unreachable(100 * B, 4 * B);
        let me = std::thread::current().id();
        let other = other_threads(1)[0];
        let mut h = lock(&b.held);
        b.note_reader(&mut h, other, 50);
        b.note_reader(&mut h, me, 0);
        let mut taken = Vec::new();
        for _ in 0..3 {
            taken.push(b.ahead_room(&mut h, me, 0).expect("room"));
        }
        // One left: the far reader's.
        assert_eq!(b.pool.available(), 1);
        assert!(b.ahead_room(&mut h, me, 0).is_none());
        // Near this reader, the other takes no reserve.
        b.note_reader(&mut h, other, 1);
        assert!(b.ahead_room(&mut h, me, 0).is_some());
        drop(h);
        drop(taken);
        // Three blocks ahead of this reader, fetched in order (1 least
        // recently used): the furthest goes first, the next block last.
        let loc = Location::parse("http://127.0.0.1:9/x").unwrap();
        let b = RemoteBlocks::open_sized(loc, Options::default(), 100 * B)
            .with_blocks(B as usize, 3)
            .with_budget(3 * B);
        for i in 1..=3 {
            ready(&b, i, 0);
        }
        let mut h = lock(&b.held);
        b.note_reader(&mut h, me, 0);
        let _room = b.make_room(&mut h, Give::Kept).unwrap();
        assert_eq!(held_in(&h), vec![1, 2]);
        let _more = b.make_room(&mut h, Give::Kept).unwrap();
        assert_eq!(held_in(&h), vec![1]);
    }

    fn held_in(h: &Held) -> Vec<u64> {
        h.blocks.iter().map(|(k, _)| *k).collect()
    }

    #[test]
    fn a_reader_that_stopped_reading_keeps_nothing_once_the_others_moved_on() {
        let b = unreachable(100 * B, 8 * B);
        let me = std::thread::current().id();
        let other = other_threads(1)[0];
        let mut h = lock(&b.held);
        b.note_reader(&mut h, other, 0);
        assert_eq!(b.kept(&h, 1), Give::Kept);
        // Reading on within one block is no move.
        b.note_reader(&mut h, me, 20);
        b.note_reader(&mut h, me, 20);
        // Two readers: the other is gone after 2 x STALE_MOVES moves.
        for i in 21..21 + 2 * STALE_MOVES {
            assert_eq!(b.kept(&h, 0), Give::Any, "at {i}");
            b.note_reader(&mut h, me, i);
        }
        assert_eq!(b.kept(&h, 0), Give::Unkept);
        assert_eq!(b.kept(&h, 1), Give::Unkept);
        assert_eq!(h.readers.len(), 1);
        // This reader keeps its block and the one ahead only: no reader
        // came back yet, so not the block it read before (gzip job
        // threads); after a look ahead and back, the block looked at too,
        // and from then on each block a reader read before.
        let at = 20 + 2 * STALE_MOVES;
        assert_eq!(b.kept(&h, at), Give::Any);
        assert_eq!(b.kept(&h, at + 1), Give::Kept);
        assert_eq!(b.kept(&h, at + 2), Give::Unkept);
        assert_eq!(b.kept(&h, at - 1), Give::Unkept);
        assert_eq!(b.kept(&h, at - 2), Give::Unkept);
        b.note_reader(&mut h, me, at + 5);
        b.note_reader(&mut h, me, at);
        assert_eq!(b.kept(&h, at + 5), Give::Kept);
        assert_eq!(b.kept(&h, at - 1), Give::Unkept);
        b.note_reader(&mut h, me, at + 1);
        assert_eq!(b.kept(&h, at), Give::Kept);
    }

    /// With nine readers, one slow (decoding a large record) keeps its
    /// blocks while the eight others move on eight blocks each: with a
    /// count of moves not scaled by the readers, it was taken as gone
    /// after the others' first eight moves, one block each.
    #[test]
    fn a_slow_reader_among_nine_keeps_its_blocks_while_each_other_moves_eight() {
        let b = unreachable(1000 * B, 8 * B);
        let me = std::thread::current().id();
        let others = other_threads(8);
        let mut h = lock(&b.held);
        b.note_reader(&mut h, me, 500);
        for (k, &t) in others.iter().enumerate() {
            b.note_reader(&mut h, t, 10 * k as u64);
        }
        for step in 1..=STALE_MOVES {
            for (k, &t) in others.iter().enumerate() {
                b.note_reader(&mut h, t, 10 * k as u64 + step);
                assert_eq!(b.kept(&h, 500), Give::Any, "step {step}, reader {k}");
                assert_eq!(b.kept(&h, 501), Give::Kept);
            }
        }
        assert_eq!(h.readers.len(), 9);
        // Gone only once the others moved on well past that.
        for step in STALE_MOVES + 1..=STALE_MOVES + 2 {
            for (k, &t) in others.iter().enumerate() {
                b.note_reader(&mut h, t, 10 * k as u64 + step);
            }
        }
        assert_eq!(b.kept(&h, 500), Give::Unkept);
        assert_eq!(h.readers.len(), 8);
    }

    #[test]
    fn the_pool_grows_a_buffer_at_a_time_up_to_its_cap_and_a_fixed_budget_does_not() {
        let p = Pool::new(2 * B, 4 * B + 100, B);
        assert_eq!((p.max(), p.cap), (2, 4));
        let _held: Vec<_> = (0..2).map(|_| p.try_take().unwrap()).collect();
        assert!(p.try_take().is_none());
        assert!(p.grow(0));
        assert!(p.try_take().is_some());
        assert!(p.grow(0));
        assert!(!p.grow(0), "past the cap");
        assert_eq!(p.max(), 4);
        // Past the cap up to the floor (one buffer a reader and one).
        assert!(p.grow(5));
        assert!(!p.grow(5));
        assert_eq!(p.max(), 5);
        // A cap below the start is the start.
        assert_eq!(Pool::new(3 * B, B, B).cap, 3);
        let b = unreachable(100 * B, 5 * B);
        assert_eq!((b.budget(), b.budget_max()), (5 * B, 5 * B));
        assert!(!b.pool.grow(0));
        let b = b.with_budget_max(9 * B);
        assert_eq!((b.budget(), b.budget_max()), (5 * B, 9 * B));
        // Other blocks keep the start and the cap, in bytes.
        let b = b.with_blocks(B as usize / 2, 1);
        assert_eq!((b.budget(), b.budget_max()), (5 * B, 9 * B));
    }

    /// The budget grows for latency only while the blocks come faster for
    /// it: windows of a turn of the pool, each measured at its budget.
    /// A store whose rate is fixed (every block in flight shares it)
    /// stops the growth after two windows no faster; one whose blocks
    /// come faster with each block more in flight grows window after
    /// window; one slow window among faster ones does not stop it.
    #[test]
    fn the_budget_grows_for_latency_only_while_the_blocks_come_faster() {
        let ms = Duration::from_millis;
        // `rates[k]` bytes a millisecond in window k; the budget it ends at.
        let run = |rates: &[u64]| {
            let p = Pool::new(4 * B, 64 * B, B);
            let t0 = Instant::now();
            let (mut t, mut arrived) = (t0, 0u64);
            let mut s = lock(&p.state);
            // The first ask starts the first window and grows nothing.
            assert!(!s.paced(t, arrived, B));
            for &rate in rates {
                let turn = s.max as u64 * B;
                // Half a turn in: not a window yet.
                assert!(!s.paced(t + ms(1), arrived + turn / 2, B));
                t += ms(turn / rate);
                arrived += turn;
                if s.paced(t, arrived, B) {
                    s.max += 1;
                }
            }
            (s.max, s.flat)
        };
        let b = B / 1000;
        // A fixed rate: the first window is the pace to beat; the next two
        // are no faster, and the budget stays where the second ended.
        assert_eq!(run(&[100 * b; 6]), (6, FLAT_GROWTHS));
        // A latency-bound store: each block more in flight is faster.
        let rising: Vec<u64> = (4..14).map(|n| n * 10 * b).collect();
        assert_eq!(run(&rising), (14, 0));
        // A 3 % gain is within a window's spread: no faster.
        assert_eq!(
            run(&[100 * b, 103 * b, 103 * b, 200 * b]),
            (6, FLAT_GROWTHS)
        );
        // One slow window between faster ones.
        let (max, flat) = run(&[100 * b, 120 * b, 90 * b, 150 * b, 180 * b]);
        assert_eq!((max, flat), (9, 0));
    }

    /// The read-ahead follows the bytes: 8 MiB of blocks, at least four,
    /// at most sixteen; the default cap holds a reader's block, the one
    /// before and its read-ahead.
    #[test]
    fn the_read_ahead_depth_follows_the_block_size() {
        const M: u64 = 1 << 20;
        assert_eq!(RemoteBlocks::ahead_for(BLOCK as u64), 8);
        assert_eq!(RemoteBlocks::ahead_for(2 * M), 4);
        assert_eq!(RemoteBlocks::ahead_for(8 * M), 4);
        assert_eq!(RemoteBlocks::ahead_for(256 << 10), 16);
        assert_eq!(RemoteBlocks::ahead_for(0), 16);
        // The most it may grow to: 16 MiB of blocks, never below the start.
        assert_eq!(RemoteBlocks::ahead_max_for(BLOCK as u64), 16);
        assert_eq!(RemoteBlocks::ahead_max_for(2 * M), 8);
        assert_eq!(RemoteBlocks::ahead_max_for(8 * M), 4);
        assert_eq!(RemoteBlocks::ahead_max_for(256 << 10), 32);
        assert_eq!(RemoteBlocks::default_budget(M), (4 * M, 12 * M));
        assert_eq!(RemoteBlocks::default_budget(8 * M), (16 * M, 48 * M));
        let loc = Location::parse("http://127.0.0.1:9/x").unwrap();
        let b = RemoteBlocks::open_sized(loc, Options::default(), 100 * M);
        assert_eq!((b.block, b.ahead, b.ahead_max), (M, 8, 16));
        assert_eq!(b.read_ahead(), 8);
        assert_eq!((b.budget(), b.budget_max()), (BUDGET, BUDGET_MAX));
    }

    /// The first answer's wait seeds the budget and the read-ahead: the
    /// nginx row's first answers (0.7-1.7 ms) leave them where they start;
    /// 22 ms (20 ms a request) starts them at the cap and ten blocks; a
    /// fixed budget and depth stay fixed. The depth's cap is the one
    /// `with_ahead_max` set after `with_blocks`, which resets it.
    #[test]
    fn the_first_answers_wait_seeds_nothing_for_a_fast_store() {
        const M: u64 = 1 << 20;
        let loc = Location::parse("http://127.0.0.1:9/x").unwrap();
        let sized = || RemoteBlocks::open_sized(loc.clone(), Options::default(), 100 * M);
        let growing = || {
            sized()
                .with_blocks(BLOCK, 8)
                .with_ahead_max(16)
                .with_budget(BUDGET)
                .with_budget_max(BUDGET_MAX)
        };
        for us in [700, 1700, 4000] {
            let b = growing();
            b.seed(Duration::from_micros(us));
            assert_eq!((b.budget(), b.read_ahead()), (4 * M, 8), "{us} us");
            assert_eq!(b.first_answer(), Some(Duration::from_micros(us)));
        }
        let b = growing();
        b.seed(Duration::from_millis(22));
        assert_eq!((b.budget(), b.read_ahead()), (12 * M, 10));
        let fixed = sized().with_blocks(BLOCK, 8).with_budget(BUDGET);
        fixed.seed(Duration::from_millis(22));
        assert_eq!((fixed.budget(), fixed.read_ahead()), (4 * M, 8));
        let reset = sized().with_ahead_max(16).with_blocks(BLOCK, 8);
        assert_eq!(reset.read_ahead_max(), 8);
        assert_eq!(sized().first_answer(), None);
    }

    /// `WARCHEST_REMOTE_STATS=0` or an empty value leaves the line off.
    #[test]
    fn the_stats_line_is_on_for_a_set_value_other_than_empty_or_zero() {
        use std::ffi::OsStr;
        assert!(!stats_wanted(None));
        assert!(!stats_wanted(Some(OsStr::new(""))));
        assert!(!stats_wanted(Some(OsStr::new("0"))));
        assert!(stats_wanted(Some(OsStr::new("1"))));
        assert!(stats_wanted(Some(OsStr::new("yes"))));
    }

    /// The stats line is printed once: by `print_stats` (the command
    /// line's end) while the object is still held, then not again when it
    /// is dropped; an object whose line is turned off is not listed.
    #[test]
    fn the_stats_line_is_listed_on_the_first_read_and_printed_once() {
        let listed = |m: &Arc<Meter>| lock(meters()).iter().any(|x| Arc::ptr_eq(x, m));
        let mut b = unreachable(2 * B, 2 * B);
        b.stats = true;
        ready(&b, 0, 7);
        let mut buf = [0u8; 4];
        assert_eq!(b.read_at(&mut buf, 10).unwrap(), 4);
        let m = Arc::clone(b.meter.get().expect("listed on the first read"));
        assert!(listed(&m) && !m.printed.load(Ordering::Acquire));
        print_stats();
        assert!(!listed(&m) && m.printed.load(Ordering::Acquire));
        drop(b);
        assert!(!listed(&m));
        // Turned off (a server without ranges, streamed instead).
        let mut b = unreachable(2 * B, 2 * B);
        b.stats = true;
        ready(&b, 0, 7);
        b.read_at(&mut buf, 0).unwrap();
        let m = Arc::clone(b.meter.get().unwrap());
        b.set_stats(false);
        assert!(!listed(&m) && m.printed.load(Ordering::Acquire));
    }

    #[test]
    fn a_request_dropped_unanswered_wakes_its_readers_with_an_error() {
        let c = Arc::new(Cell::default());
        drop(SetOnDrop(Arc::downgrade(&c)));
        let e = c.wait().unwrap_err().to_string();
        assert!(e.contains("without an answer"), "{e}");
        // An answered cell keeps its answer; its buffer goes back to the
        // pool when the last reader lets go.
        let b = unreachable(2 * B, B);
        let c = Arc::new(Cell::default());
        let g = SetOnDrop(Arc::downgrade(&c));
        let mut buf = b.pool.try_take().unwrap();
        buf.extend_from_slice(b"ab");
        g.set(Ok(Block {
            buf,
            pool: Arc::clone(&b.pool),
        }));
        drop(g);
        let got = c.wait().unwrap();
        assert_eq!(got.buf.len(), 2);
        assert!(b.pool.try_take().is_none());
        drop((got, c));
        assert!(b.pool.try_take().is_some());
    }

    /// A block's request is made only when its launch is started (after
    /// the held lock is let go of), not when the block is put among the
    /// held ones; a launch dropped unstarted wakes its readers with an
    /// error.
    #[test]
    fn a_blocks_request_is_sent_when_started_not_when_made() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/x", listener.local_addr().unwrap());
        let b = RemoteBlocks::open_sized(Location::parse(&url).unwrap(), Options::default(), B)
            .with_blocks(B as usize, 1)
            .with_budget(2 * B);
        let (cell, launch) = b.spawn(0, b.pool.try_take().unwrap(), false);
        std::thread::sleep(Duration::from_millis(100));
        let e = listener.accept().map(|_| ()).unwrap_err();
        assert_eq!(
            e.kind(),
            io::ErrorKind::WouldBlock,
            "a request before start"
        );
        assert!(cell.pending());
        launch.start();
        let t = std::time::Instant::now();
        let conn = loop {
            match listener.accept() {
                Ok(c) => break c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(t.elapsed() < Duration::from_secs(20), "no request");
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        };
        drop(conn);
        // Unstarted: the cell is set, its readers are not left waiting.
        let (cell, launch) = b.spawn(1, b.pool.try_take().unwrap(), false);
        drop(launch);
        let e = cell.wait().unwrap_err().to_string();
        assert!(e.contains("without an answer"), "{e}");
    }

    #[test]
    fn an_error_is_kept_and_seen_by_every_reader() {
        let b = unreachable(2 * B, 2 * B);
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
        assert!(held(&b).contains(&1));
    }
}
