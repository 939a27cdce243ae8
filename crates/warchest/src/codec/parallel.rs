//! Decompressing one file on several threads, members delivered in order.
//!
//! The stored file is cut into chunks of [`CHUNK`] bytes. A *job* decodes
//! the members that start in one chunk, on a worker thread, into one buffer:
//! it begins at the first *candidate* in the chunk (a magic number whose
//! header parses and whose member then decodes cleanly, checksums included)
//! and goes on member after member until one starts past the chunk. Members
//! are only found this way: gzip has no index of where they start.
//!
//! The reading thread (the [`super::Decoder`] that owns the engine) serves
//! a job's members only when the job starts exactly where the members before
//! it ended, so a candidate found by chance inside compressed data can never
//! produce a record. Everything else is left to the reading thread's own
//! sequential decoder: a damaged member (its warnings and recovery are the
//! sequential ones, byte for byte), a member too big for a job's buffer
//! (streamed in constant memory as before), a skippable frame, a job that
//! starts elsewhere. At each member boundary the sequential decoder reaches,
//! it hands back to the jobs if one starts there.
//!
//! Jobs run on a rayon thread pool of the engine's own, with
//! [`DecoderOptions::threads`] - 1 threads (at least one; built on the first
//! compressed member): the engine's reading thread blocks on its jobs, so
//! they must not queue behind work of the caller's (such as a rayon pool
//! reading several files at once). A job takes a [`Worker`] from the
//! engine's idle ones (one per pool thread at most, made once) and gives it
//! back. Each job carries a flag that whoever runs it sets first: when the
//! job the reading thread needs next has not been started by the pool, the
//! reading thread runs it (or a later one) itself with a worker of its own,
//! instead of blocking; so it is the `threads`-th thread, and the pool has
//! one fewer (one thread a core, not one more than the cores).
//!
//! A job reads its chunk and [`SLACK`] bytes once (more when a member's
//! `sl` subfield says it runs past them): lent by the source when it holds
//! them (a local file's read-only map, [`Engine::set_map`]: no copy; an
//! object's block fetched ahead), read into the worker's buffer
//! otherwise. A job over a map that faulted because the file shrank
//! serves nothing (the bytes past the new end read as zeros, `map.rs`);
//! the reading thread reads the file itself and reports it. gzip members are decoded
//! from those bytes on the *direct path*: header parsed, deflate data
//! inflated whole by libdeflate into the spare capacity of the job's buffer
//! (no copy), CRC32, ISIZE and header CRC checked as the sequential decoder
//! checks them; more is read when a member runs past the bytes read. Other
//! members (zstd, LZ4, a gzip header longer than the bytes read, a member
//! past [`MAX_DIRECT_INPUT`]) go through the worker's [`Decoder`], made on
//! the first one.
//!
//! Memory: at most [`Engine::depth`] jobs are in flight, each holding at most
//! `job_cap` decoded bytes, plus per worker (one per pool thread and the
//! reading thread's) the bytes read for a job (usually [`CHUNK`] +
//! [`SLACK`], at most [`MAX_DIRECT_INPUT`] more; none over a map, whose
//! pages behind the jobs are dropped from the process in steps of
//! [`FORGET_STEP`]) and, once a job needed it, a decoder. At most
//! `depth + 1` job buffers exist at once: while the reading thread decodes
//! members itself, it borrows an idle one as its output buffer
//! ([`Engine::lend_output`]), so that a member larger than a job is
//! inflated into pages already resident, not into a buffer of its own
//! beside the jobs'.
//!
//! This module is compiled with the `parallel` feature (rayon); without it,
//! `parallel_off` stands in and everything is decoded on the reading thread.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::decoder::{Kind, Probe, find_magic, probe};
use super::gzip::{Fed, HeaderParser};
use super::inflate::{FastInflater, Inflated, crc32};
use super::map::FileMap;
use super::{Codec, Decoder, DecoderOptions, GzipHeader, GzipTrailer, Source};
use crate::check::MemberDigests;
use crate::io::{AtCursor, Lent, ReadAt};

/// Stored bytes per job. Small enough that a few jobs in flight stay far
/// below the memory bound, large enough that the hand-over costs nothing.
const CHUNK: u64 = 256 * 1024;
/// Decoded bytes all jobs in flight may hold together.
const BUDGET: usize = 24 << 20;
/// [`BUDGET`] over a source that fetches ahead into its own buffers
/// ([`ReadAt::fetches_ahead`]: a remote object's blocks, up to 12 MiB):
/// over HTTP at `-j 2`, 16 MiB took 8-13 MiB off the peak at the same
/// speed, where over a file (whose read-ahead is the page cache's) it cost
/// 2 % of the time (docs/performance-history.md, round fifteen).
const BUDGET_BESIDE_FETCHES: usize = 16 << 20;
/// Largest decoded size of one job.
const MAX_JOB: usize = 6 << 20;
// A job buffer lent to the reading thread is not freed by its next gzip
// member's start ([`Engine::lend_output`]).
const _: () = assert!(MAX_JOB <= super::gzip_member::KEEP_OUTPUT);
/// Candidates a job tries before giving up on its chunk.
const MAX_CANDIDATES: usize = 16;
/// Bytes read past a chunk's end, so that the member that starts last in
/// the chunk is mostly read with it (and a header near the end parses).
const SLACK: u64 = 64 * 1024;
/// Spare headers kept with a job buffer at most (a job of small members
/// has a few hundred).
const MAX_SPARE: usize = 1024;
/// A spare header is kept only when its FEXTRA, FNAME and FCOMMENT hold at
/// most this many bytes together (wget's `sl` extra is 20), so that the
/// spares of a buffer stay within 256 KiB whatever the headers hold (each
/// field may be 64 KiB).
const SPARE_FIELD_BYTES: usize = 256;

/// Whether a header is small enough to keep as a spare.
fn small_header(h: &GzipHeader) -> bool {
    let cap = |v: &Option<Vec<u8>>| v.as_ref().map_or(0, Vec::capacity);
    cap(&h.extra) + cap(&h.name) + cap(&h.comment) <= SPARE_FIELD_BYTES
}
/// [`SLACK`] when the `sl` sizes say how far the last member runs: enough
/// for its header (and the next one's, when it ends just past the chunk).
const SMALL_SLACK: u64 = 4 * 1024;
/// Most stored bytes one gzip member may take on the direct path (past
/// that, the job's decoder streams it).
const MAX_DIRECT_INPUT: usize = 4 << 20;
/// Pages of the file's map behind every job are dropped from the process
/// in steps of this many bytes (resident memory, not the page cache).
const FORGET_STEP: u64 = 1 << 20;

/// A worker's view of the shared source: a cursor of its own over the
/// one handle (unnamed: a job's read error is not reported by the job,
/// the reading thread reads those bytes again and names it).
pub(crate) type Pread = AtCursor;

/// The bytes a worker holds for its job: lent by the source, or read into
/// its buffer (fields apart, so that the direct path's state can be
/// borrowed beside them).
fn held<'a>(scan: &'a [u8], lent: &'a Option<Lent>, filled: usize) -> &'a [u8] {
    let all = match lent {
        Some(l) => l.bytes(),
        None => scan,
    };
    all.get(..filled).unwrap_or_default()
}

/// One member decoded by a job.
#[derive(Debug)]
struct Member {
    offset: u64,
    end: u64,
    codec: Codec,
    /// Its bytes: `data[from..to]` of the job.
    from: usize,
    to: usize,
    gz_header: Option<GzipHeader>,
    gz_trailer: Option<GzipTrailer>,
    /// Its WARC block's SHA-1s, with `member_digests`.
    digests: Option<MemberDigests>,
}

/// What a job gives back.
#[derive(Debug, Default)]
struct Done {
    /// Stored offset of its first member (the candidate it settled on), or
    /// `None` when no candidate in its chunk decoded.
    start: Option<u64>,
    members: Vec<Member>,
    data: Vec<u8>,
    /// Headers of served members, for the next job with this buffer to
    /// parse into: their fields' allocations are reused, not made by one
    /// thread and freed by the other at every member.
    spare: Vec<GzipHeader>,
}

impl Done {
    /// Stored offset just past its last member.
    fn end(&self) -> Option<u64> {
        self.members.last().map(|m| m.end)
    }
}

/// The engine is compiled in (the `parallel` feature).
pub(crate) const ENABLED: bool = true;

/// Work for a worker.
struct Job {
    /// The chunk: members starting in `a..b` are the job's.
    a: u64,
    b: u64,
    /// `a` is a member start already (no candidate search).
    known: bool,
    dict: Option<Arc<Vec<u8>>>,
    /// Set by whoever runs the job: a pool thread, or the reading thread
    /// when it would otherwise wait.
    slot: Arc<AtomicBool>,
    /// Where a pool thread sends what it decoded (`None` in the copy the
    /// reading thread keeps).
    reply: Option<mpsc::SyncSender<Done>>,
}

struct Pending {
    a: u64,
    /// The job itself, for the reading thread to run when no pool thread
    /// has claimed it yet.
    job: Job,
    rx: mpsc::Receiver<Done>,
    result: Option<Done>,
}

/// What a job decodes with, kept between jobs.
struct Worker {
    /// The decoder of members the direct path does not take (zstd, LZ4,
    /// long gzip headers and members), made on the first one.
    dec: Option<Decoder<Pread>>,
    /// The zstd dictionary `dec` has.
    dict: Option<Arc<Vec<u8>>>,
    /// The stored bytes from the job's chunk start on: the chunk and
    /// [`SLACK`], more when a member runs past them.
    /// Only `scan[..filled]` is this job's: the rest is left from earlier
    /// jobs, so that the buffer is zeroed once, not at every job.
    scan: Vec<u8>,
    filled: usize,
    /// The job's bytes lent by the source instead of `scan` (an object's
    /// block, fetched ahead: no copy), when the whole first read lay in
    /// what the source holds; copied into `scan` only when the job reads
    /// past it. Let go of when the job ends.
    lent: Option<Lent>,
    /// A member's `sl` size was false: this worker uses the hints no more.
    distrust_sl: bool,
    /// A member's `sl` size was true: a member declared too large for the
    /// job is left to the reading thread without inflating it. (Before
    /// that, it is inflated, so that a writer declaring false sizes cannot
    /// keep every member from the jobs.)
    sl_confirmed: bool,
    /// `scan` reaches the end of the file.
    eof: bool,
    /// The direct gzip path: whole members inflated from `scan` straight
    /// into the job's buffer (`None` when `fast_inflate` is off).
    direct: Option<Direct>,
}

/// The direct gzip path's state.
struct Direct {
    inflater: FastInflater,
    parser: HeaderParser,
    header: GzipHeader,
}

impl Worker {
    fn new(opts: &DecoderOptions) -> Self {
        let direct = if opts.fast_inflate {
            FastInflater::new().map(|inflater| Direct {
                inflater,
                parser: HeaderParser::new(),
                header: GzipHeader::default(),
            })
        } else {
            None
        };
        Worker {
            dec: None,
            dict: None,
            scan: Vec::new(),
            filled: 0,
            lent: None,
            distrust_sl: false,
            sl_confirmed: false,
            eof: false,
            direct,
        }
    }

    /// Reads `more` stored bytes onto the end of `scan` (whose first byte
    /// is at `base`); `false` when none could be read.
    fn extend(&mut self, shared: &Shared, base: u64, more: usize) -> bool {
        if self.eof {
            return false;
        }
        if (self.filled == 0 || self.lent.is_some())
            && let Some(got) = self.lend_mapped(shared, base, more)
        {
            return got;
        }
        let file = &shared.file;
        if self.filled == 0 {
            // The first read of a job: lent whole, when the source holds
            // all of it (fewer bytes than asked only at the file's end).
            if let Some(l) = file.lend(base, more) {
                let n = l.bytes().len();
                let at_end = file.size().is_ok_and(|len| base + n as u64 >= len);
                if n > 0 && (n == more || at_end) {
                    self.filled = n;
                    self.eof = n < more;
                    self.lent = Some(l);
                    return true;
                }
            }
        } else {
            // Reading on past the bytes lent: they are copied first.
            self.unlend();
        }
        let have = self.filled;
        let want = have.saturating_add(more);
        if self.scan.len() < want {
            self.scan.resize(want, 0);
        }
        let mut r = Pread::new(Arc::clone(file), "", base + have as u64);
        // A read error reads nothing: the job stops there, and the reading
        // thread decodes what follows itself and reports the error.
        let got = match self.scan.get_mut(have..want) {
            Some(dst) => crate::io::read_up_to(&mut r, dst).unwrap_or(0),
            None => 0,
        };
        self.filled = have + got;
        if got < more {
            self.eof = true;
        }
        got > 0
    }

    /// Lends the job's bytes from the file's map, `more` past those held
    /// (no copy, at the first read or reading on): `None` when there is no
    /// map or it does not hold `base`, and the bytes are read instead.
    fn lend_mapped(&mut self, shared: &Shared, base: u64, more: usize) -> Option<bool> {
        let map = shared.map.as_ref()?;
        if base >= shared.len {
            return None;
        }
        let want = base
            .saturating_add(self.filled as u64)
            .saturating_add(more as u64);
        let end = want.min(shared.len);
        let from = usize::try_from(base).ok()?;
        let to = usize::try_from(end).ok()?;
        let got = to.saturating_sub(from + self.filled);
        self.lent = Some(Lent::new(Arc::clone(map) as _, from, to));
        self.filled = to - from;
        if end < want {
            self.eof = true;
        }
        Some(got > 0)
    }

    /// Copies the bytes lent into `scan` and gives the source's block back
    /// (`filled` and `held` unchanged): before reading on past them, and
    /// before the generic decoder reads other blocks, so that a job never
    /// holds a block while it waits for another (the source's pool keeps
    /// one block per reader, not more).
    fn unlend(&mut self) {
        let Some(l) = self.lent.take() else {
            return;
        };
        let b = l.bytes();
        if self.scan.len() < b.len() {
            self.scan.resize(b.len(), 0);
        }
        if let Some(dst) = self.scan.get_mut(..b.len()) {
            dst.copy_from_slice(b);
        }
    }

    /// A member that ran far past its chunk grew the read buffer: the
    /// memory past a usual job's bytes is given back. Shrunk, not freed:
    /// the usual part stays resident and written, so that the next job
    /// neither faults its pages in (zeroed by the kernel) nor zero-fills
    /// them again in [`Worker::extend`].
    fn trim_scan(&mut self) {
        let usual = usize::try_from(CHUNK + SLACK).unwrap_or(usize::MAX);
        if self.scan.len() > 2 * usual {
            self.scan.truncate(usual);
            self.scan.shrink_to(usual);
            self.filled = 0;
        }
    }

    /// The generic decoder, with the job's zstd dictionary.
    fn decoder(
        &mut self,
        shared: &Shared,
        dict: Option<&Arc<Vec<u8>>>,
    ) -> Option<&mut Decoder<Pread>> {
        if self.dec.is_none() {
            let reader = Pread::new(Arc::clone(&shared.file), "", 0);
            let mut dec = Decoder::new_seekable(reader, shared.opts.clone()).ok()?;
            // A member larger than a job is the reading thread's anyway.
            dec.set_whole_member_max(shared.cap);
            self.dec = Some(dec);
            self.dict = None;
        }
        let same = match (&self.dict, dict) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y),
            (None, None) => true,
            _ => false,
        };
        let dec = self.dec.as_mut()?;
        if !same {
            self.dict = dict.cloned();
            dec.set_zstd_dictionary(dict.map(|d| d.as_slice()));
        }
        Some(dec)
    }
}

/// What the jobs share with the engine.
struct Shared {
    file: Arc<dyn ReadAt>,
    /// The file's length (the engine's).
    len: u64,
    /// The file mapped read-only (a local regular file, [`Engine::set_map`]):
    /// jobs lend their bytes from it instead of reading them.
    map: Option<Arc<FileMap>>,
    /// Options of the jobs' decoders.
    opts: DecoderOptions,
    /// Decoded bytes one job may hold.
    cap: usize,
    /// Decoders of finished jobs, for the next ones.
    idle: Mutex<Vec<Worker>>,
    /// Buffers of served jobs, for the next ones.
    pool: Mutex<Vec<Done>>,
    cancel: AtomicBool,
    /// Jobs that kept the bytes lent by the source (tests).
    #[cfg(test)]
    kept: std::sync::atomic::AtomicU64,
    /// Generic decoder runs while a lent block was held (tests: none).
    #[cfg(test)]
    generic_lent: std::sync::atomic::AtomicU64,
}

/// Threads of the pool for `threads`: the reading thread runs jobs too
/// when it would otherwise wait, so with two or more it is one of them
/// (one thread per core, not one more than the cores).
fn pool_threads(threads: usize) -> usize {
    if threads >= 2 { threads - 1 } else { 1 }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The parallel side of a [`Decoder`] over a file.
pub(crate) struct Engine {
    len: u64,
    threads: usize,
    /// Jobs in flight at most.
    depth: usize,
    shared: Arc<Shared>,
    /// The jobs' threads, made on the first job.
    workers: Option<rayon::ThreadPool>,
    /// The workers could not be started: sequential from then on.
    broken: bool,
    pending: VecDeque<Pending>,
    /// Where the next job's chunk begins.
    next_a: u64,
    dict: Option<Arc<Vec<u8>>>,
    /// The job being served, its member and the position in its data.
    cur: Option<Done>,
    idx: usize,
    pos: usize,
    /// Members served from jobs (tests check the jobs were used).
    served: u64,
    /// The reading thread's own worker, for the jobs it runs itself.
    own: Option<Worker>,
    /// The map's pages below this are dropped from the process.
    forgotten: u64,
    /// A job buffer lent to the reading thread as its output buffer while
    /// it decodes members itself ([`Engine::lend_output`]), holding the
    /// reading thread's own buffer meanwhile.
    lent_out: Option<Done>,
    /// Job buffers lent to the reading thread (tests).
    #[cfg(test)]
    outputs_lent: u64,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("threads", &self.threads)
            .field("pending", &self.pending.len())
            .field("next_a", &self.next_a)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `file` (of `len` bytes) with `threads` workers; none
    /// is started before the first compressed member. Always `Some` (the
    /// stand-in without the `parallel` feature gives `None`).
    pub(crate) fn new(
        file: Arc<dyn ReadAt>,
        len: u64,
        threads: usize,
        opts: &DecoderOptions,
    ) -> Option<Self> {
        let depth = (2 * threads).clamp(2, threads + 4);
        let budget = if file.fetches_ahead() {
            BUDGET_BESIDE_FETCHES
        } else {
            BUDGET
        };
        let job_cap = (budget / depth).min(MAX_JOB);
        let worker_opts = DecoderOptions {
            // Each job restarts its decoder, which then fills its input
            // buffer: half the default halves that read-ahead, and still
            // holds the 256 KiB a whole-member inflate wants.
            buffer_size: opts.buffer_size.min(512 * 1024),
            lenient: false,
            threads: 1,
            start_offset: 0,
            zstd_dictionary: None,
            ..opts.clone()
        };
        Some(Engine {
            len,
            threads,
            depth,
            shared: Arc::new(Shared {
                file,
                len,
                map: None,
                opts: worker_opts,
                cap: job_cap,
                idle: Mutex::new(Vec::new()),
                pool: Mutex::new(Vec::new()),
                cancel: AtomicBool::new(false),
                #[cfg(test)]
                kept: Default::default(),
                #[cfg(test)]
                generic_lent: Default::default(),
            }),
            workers: None,
            broken: false,
            pending: VecDeque::new(),
            next_a: 0,
            dict: opts.zstd_dictionary.clone().map(Arc::new),
            cur: None,
            idx: 0,
            pos: 0,
            served: 0,
            own: None,
            forgotten: 0,
            lent_out: None,
            #[cfg(test)]
            outputs_lent: 0,
        })
    }

    /// Gives the jobs a read-only map of the file to inflate from, in
    /// place of reading each chunk into a buffer (before the first job;
    /// `false` when too late, or the map is shorter than the file).
    pub(crate) fn set_map(&mut self, map: FileMap) -> bool {
        if map.bytes().len() as u64 >= self.len
            && let Some(shared) = Arc::get_mut(&mut self.shared)
        {
            shared.map = Some(Arc::new(map));
            return true;
        }
        false
    }

    /// Lends an idle job buffer to the reading thread as its output
    /// buffer `out` (whose own is kept until [`Engine::take_output`]), for
    /// the members it decodes itself: a member larger than a job is then
    /// inflated into pages a job already made resident, and its buffer is
    /// not one more beside the jobs' (nothing when no buffer is idle).
    pub(crate) fn lend_output(&mut self, out: &mut Vec<u8>) {
        if self.lent_out.is_some() || out.capacity() >= self.shared.cap {
            return;
        }
        let Some(mut d) = lock(&self.shared.pool).pop() else {
            return;
        };
        std::mem::swap(out, &mut d.data);
        self.lent_out = Some(d);
        #[cfg(test)]
        {
            self.outputs_lent += 1;
        }
    }

    /// The jobs serve again: the buffer lent by [`Engine::lend_output`]
    /// goes back to them (cut back to a job's size: the pages a larger
    /// member grew it by are given back), and `out` is the reading
    /// thread's own again. `false` when none was lent.
    pub(crate) fn take_output(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(mut d) = self.lent_out.take() else {
            return false;
        };
        std::mem::swap(out, &mut d.data);
        d.data.clear();
        if d.data.capacity() > self.shared.cap {
            d.data.shrink_to(self.shared.cap);
        }
        self.recycle(d);
        true
    }

    /// Drops the map's pages behind every job in flight from the process:
    /// resident memory stays that of the jobs' bytes, not of the whole
    /// file read so far (a page read again faults back in).
    fn forget_behind(&mut self) {
        let Some(map) = &self.shared.map else {
            return;
        };
        let low = self.pending.front().map_or(self.next_a, |q| q.a);
        if low >= self.forgotten.saturating_add(FORGET_STEP)
            && let (Ok(a), Ok(b)) = (usize::try_from(self.forgotten), usize::try_from(low))
        {
            self.forgotten = map.forget(a, b) as u64;
        }
    }

    fn start_workers(&mut self) {
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(pool_threads(self.threads))
            .thread_name(|i| format!("warchest-inflate-{i}"))
            // A job that panics drops its reply, and the reading thread
            // decodes its chunk itself (rayon would abort the process).
            .panic_handler(|_| {})
            .build();
        match built {
            Ok(p) => self.workers = Some(p),
            // No threads (resources exhausted): the reading thread decodes
            // alone.
            Err(_) => self.broken = true,
        }
    }

    /// A zstd dictionary frame was loaded at the reading thread: jobs in
    /// flight decoded with the old one are dropped.
    pub(crate) fn new_dictionary(&mut self, dict: Vec<u8>) {
        self.pending.clear();
        self.dict = Some(Arc::new(dict));
    }

    /// Dispatches jobs until `depth` are in flight. `p` is the reading
    /// thread's position, a member boundary.
    fn top_up(&mut self, p: u64) {
        if self.broken {
            return;
        }
        if self.pending.is_empty() && self.next_a <= p {
            self.next_a = p;
        }
        while self.pending.len() < self.depth && self.next_a < self.len {
            if self.workers.is_none() {
                self.start_workers();
            }
            let Some(workers) = &self.workers else {
                self.broken = true;
                return;
            };
            let a = self.next_a;
            let b = a.saturating_add(CHUNK).min(self.len);
            let (reply, rx) = mpsc::sync_channel(1);
            let slot = Arc::new(AtomicBool::new(false));
            let job = Job {
                a,
                b,
                known: a == p,
                dict: self.dict.clone(),
                slot: Arc::clone(&slot),
                reply: Some(reply),
            };
            let shared = Arc::clone(&self.shared);
            workers.spawn(move || run(&shared, job));
            self.pending.push_back(Pending {
                a,
                job: Job {
                    a,
                    b,
                    known: a == p,
                    dict: self.dict.clone(),
                    slot,
                    reply: None,
                },
                rx,
                result: None,
            });
            self.next_a = b;
        }
        self.forget_behind();
    }

    fn recycle(&self, mut d: Done) {
        d.start = None;
        d.data.clear();
        // Bounded: only the direct path takes spare headers back.
        let room = MAX_SPARE.saturating_sub(d.spare.len());
        let headers = d
            .members
            .drain(..)
            .filter_map(|m| m.gz_header)
            .filter(small_header);
        d.spare.extend(headers.take(room));
        let mut pool = lock(&self.shared.pool);
        if pool.len() < self.depth + self.threads {
            pool.push(d);
        }
    }

    /// The reading thread is at member boundary `p` (a real member starts
    /// there): serve the job that starts there, if any. `false` leaves it
    /// to the sequential decoder.
    pub(crate) fn at_boundary(&mut self, p: u64) -> bool {
        if let Some(d) = self.cur.take() {
            self.recycle(d);
        }
        loop {
            self.top_up(p);
            let Some(front) = self.pending.front_mut() else {
                return false;
            };
            if front.a > p {
                return false;
            }
            self.wait_front();
            let Some(front) = self.pending.front_mut() else {
                return false;
            };
            let usable = front
                .result
                .as_ref()
                .is_some_and(|d| d.start == Some(p) && !d.members.is_empty());
            let ahead = front
                .result
                .as_ref()
                .and_then(|d| d.start)
                .is_some_and(|s| s > p);
            if ahead && !usable {
                // Damage at `p` the sequential decoder goes through may
                // lead it to this job's start.
                return false;
            }
            let Some(front) = self.pending.pop_front() else {
                return false;
            };
            let Some(done) = front.result else { continue };
            if usable {
                self.served += done.members.len() as u64;
                self.cur = Some(done);
                self.idx = 0;
                self.pos = 0;
                self.top_up(p);
                return true;
            }
            self.recycle(done);
        }
    }

    /// Waits for the front job's result; meanwhile the reading thread
    /// runs the front job itself if no pool thread has started it, or
    /// else a later job none has started, rather than block.
    fn wait_front(&mut self) {
        loop {
            let Some(front) = self.pending.front_mut() else {
                return;
            };
            if front.result.is_some() {
                return;
            }
            match front.rx.try_recv() {
                Ok(d) => {
                    front.result = Some(d);
                    return;
                }
                // The worker is gone: nothing from this job.
                Err(mpsc::TryRecvError::Disconnected) => {
                    front.result = Some(Done::default());
                    return;
                }
                Err(mpsc::TryRecvError::Empty) => {}
            }
            let unclaimed = self
                .pending
                .iter()
                .position(|q| q.result.is_none() && !q.job.slot.swap(true, Ordering::AcqRel));
            let Some(i) = unclaimed else {
                // All started on the pool: wait for the front one.
                let Some(front) = self.pending.front_mut() else {
                    return;
                };
                front.result = Some(front.rx.recv().unwrap_or_default());
                return;
            };
            let mut w = self
                .own
                .take()
                .unwrap_or_else(|| Worker::new(&self.shared.opts));
            if let Some(q) = self.pending.get_mut(i) {
                // As on the pool: a job that panics gives nothing, and the
                // sequential decoder decodes its chunk.
                let shared = &self.shared;
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_claimed(shared, &q.job, &mut w)
                }));
                q.result = Some(run.unwrap_or_default());
            }
            // A job that panicked left its state: the source's block goes
            // back now, not at the next job.
            w.lent = None;
            w.filled = 0;
            self.own = Some(w);
        }
    }

    #[cfg(test)]
    pub(crate) fn served(&self) -> u64 {
        self.served
    }

    /// Jobs that kept the bytes lent by the source.
    #[cfg(test)]
    pub(crate) fn lends_kept(&self) -> u64 {
        self.shared.kept.load(Ordering::Relaxed)
    }

    /// Generic decoder runs while a job held a lent block (should be none).
    #[cfg(test)]
    pub(crate) fn generic_lent(&self) -> u64 {
        self.shared.generic_lent.load(Ordering::Relaxed)
    }

    /// Job buffers lent to the reading thread so far, and whether one is
    /// lent now.
    #[cfg(test)]
    pub(crate) fn outputs_lent(&self) -> (u64, bool) {
        (self.outputs_lent, self.lent_out.is_some())
    }

    /// The map's pages below this were dropped from the process.
    #[cfg(test)]
    pub(crate) fn forgotten(&self) -> u64 {
        self.forgotten
    }

    fn member(&self) -> Option<&Member> {
        self.cur.as_ref().and_then(|d| d.members.get(self.idx))
    }

    /// An error when a job's read of the file's map faulted because the
    /// file shrank (`map.rs`); `Ok` without a map.
    pub(crate) fn map_check(&self) -> std::io::Result<()> {
        self.shared.map.as_ref().map_or(Ok(()), |m| m.check())
    }

    /// Moves to the next member: `Ok` when it is served from a job, `Err`
    /// with the boundary where the sequential decoder must take over.
    pub(crate) fn advance(&mut self) -> Result<(), u64> {
        let Some(d) = self.cur.as_ref() else {
            return Err(0);
        };
        if let Some(m) = d.members.get(self.idx + 1) {
            self.idx += 1;
            self.pos = m.from;
            return Ok(());
        }
        let end = d.end().unwrap_or(0);
        if self.at_boundary(end) {
            Ok(())
        } else {
            Err(end)
        }
    }

    pub(crate) fn fill(&self) -> &[u8] {
        match (self.cur.as_ref(), self.member()) {
            (Some(d), Some(m)) => d.data.get(self.pos..m.to).unwrap_or_default(),
            _ => &[],
        }
    }

    pub(crate) fn consume(&mut self, n: usize) -> usize {
        let to = self.member().map_or(self.pos, |m| m.to);
        let k = n.min(to - self.pos);
        self.pos += k;
        k
    }

    pub(crate) fn skip(&mut self, n: u64) -> u64 {
        self.consume(usize::try_from(n).unwrap_or(usize::MAX)) as u64
    }

    pub(crate) fn member_offset(&self) -> u64 {
        self.member().map_or(0, |m| m.offset)
    }

    pub(crate) fn codec(&self) -> Codec {
        self.member().map_or(Codec::None, |m| m.codec)
    }

    pub(crate) fn member_pos(&self) -> u64 {
        self.member().map_or(0, |m| (self.pos - m.from) as u64)
    }

    pub(crate) fn member_end(&self) -> Option<u64> {
        self.member()
            .and_then(|m| (self.pos == m.to).then_some(m.end))
    }

    pub(crate) fn gzip_header(&self) -> Option<&GzipHeader> {
        self.member().and_then(|m| m.gz_header.as_ref())
    }

    pub(crate) fn member_digests(&self) -> Option<&MemberDigests> {
        self.member().and_then(|m| m.digests.as_ref())
    }

    pub(crate) fn gzip_trailer(&self) -> Option<&GzipTrailer> {
        self.member()
            .filter(|m| self.pos == m.to)
            .and_then(|m| m.gz_trailer.as_ref())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Jobs not started return at once; the pool's threads end when
        // the last job has (dropping the pool does not wait for them).
        self.shared.cancel.store(true, Ordering::Relaxed);
        self.pending.clear();
        self.workers = None;
    }
}

/// Runs `job` on a pool thread, with an idle worker or a new one, and
/// sends what it decoded back (unless the reading thread took the job).
fn run(shared: &Shared, job: Job) {
    if shared.cancel.load(Ordering::Relaxed) || job.slot.swap(true, Ordering::AcqRel) {
        return;
    }
    let idle = lock(&shared.idle).pop();
    let mut w = idle.unwrap_or_else(|| Worker::new(&shared.opts));
    let done = run_claimed(shared, &job, &mut w);
    lock(&shared.idle).push(w);
    // The reading thread may have gone on without this job.
    if let Some(reply) = &job.reply {
        let _ = reply.send(done);
    }
}

/// Decodes a claimed job with `w`.
fn run_claimed(shared: &Shared, job: &Job, w: &mut Worker) -> Done {
    let mut done = lock(&shared.pool).pop().unwrap_or_default();
    // Reserved, not touched: pages are only made resident as written,
    // and the buffer never moves while it fills. Huge pages: the buffers'
    // high-water mark (about 24 MB) faulted in 2 MiB steps, not 4 KiB.
    let had = done.data.capacity();
    done.data.reserve(shared.cap);
    if done.data.capacity() != had {
        super::inflate::advise_huge(&mut done.data);
    }
    run_job(shared, job, w, &mut done);
    // The file shrank under its map while the job read it: the bytes past
    // its new end read as zeros (`map.rs`), so nothing of the job is
    // served; the reading thread reads the file itself and says so.
    if shared.map.as_ref().is_some_and(|m| m.check().is_err()) {
        done.start = None;
        done.members.clear();
    }
    if shared.opts.member_digests {
        // On the thread that inflated them (the pool's, mostly), so the
        // reading thread need not hash these bytes.
        for m in &mut done.members {
            m.digests = done.data.get(m.from..m.to).and_then(MemberDigests::of);
        }
    }
    // The source's block goes back to it (its buffer is reused).
    w.lent = None;
    w.trim_scan();
    done
}

/// How decoding from a candidate ended.
enum Outcome {
    /// Members were decoded (or none, see `Done::members`).
    Stopped,
    /// The first member alone does not fit in a job.
    TooBig,
}

fn run_job(shared: &Shared, job: &Job, w: &mut Worker, done: &mut Done) {
    // The chunk and its slack, read once: the candidate search and the
    // direct path work on these bytes.
    w.filled = 0;
    w.eof = false;
    w.lent = None;
    // Once the `sl` sizes proved true, the member that runs past the chunk
    // is read to its declared end (`direct_member`): the slack is only for
    // its header, not 64 KiB read and copied again by the next job.
    let slack = if w.sl_confirmed && !w.distrust_sl {
        SMALL_SLACK
    } else {
        SLACK
    };
    let want = usize::try_from((job.b - job.a).saturating_add(slack)).unwrap_or(0);
    w.extend(shared, job.a, want);
    #[cfg(test)]
    if w.lent.is_some() {
        shared.kept.fetch_add(1, Ordering::Relaxed);
    }
    if job.known {
        done.start = Some(job.a);
        decode_from(shared, job, w, job.a, done);
        return;
    }
    // Candidates: magic numbers whose header parses, in a..b.
    let chunk_len = usize::try_from(job.b - job.a).unwrap_or(0).min(w.filled);
    let mut at = 0;
    let mut tries = 0;
    while at < chunk_len && tries < MAX_CANDIDATES {
        let bytes = held(&w.scan, &w.lent, w.filled);
        let Some(j) = find_magic(bytes.get(at..).unwrap_or_default()) else {
            return;
        };
        let c = at + j;
        if c >= chunk_len {
            return;
        }
        at = c + 1;
        let real = match probe(bytes.get(c..).unwrap_or_default()) {
            Probe::Valid(k) | Probe::Short(Some(k)) => !matches!(k, Kind::Skippable(_)),
            _ => false,
        };
        if !real {
            continue;
        }
        tries += 1;
        let start = job.a + c as u64;
        match decode_from(shared, job, w, start, done) {
            Outcome::TooBig => {
                done.start = Some(start);
                return;
            }
            Outcome::Stopped if !done.members.is_empty() => {
                done.start = Some(start);
                return;
            }
            Outcome::Stopped => {}
        }
    }
}

/// Decodes the members from `start` on while they start before the
/// chunk's end and fit in the job, stopping before anything that is not a
/// clean member directly following the last: gzip members on the direct
/// path while it takes them, then the generic decoder.
fn decode_from(shared: &Shared, job: &Job, w: &mut Worker, start: u64, done: &mut Done) -> Outcome {
    let mut expected = start;
    if w.direct.is_some() {
        loop {
            if !done.members.is_empty() && expected >= job.b {
                return Outcome::Stopped;
            }
            match direct_member(shared, job.a, expected, w, done) {
                Direct1::Member(end) => expected = end,
                Direct1::Stop => return Outcome::Stopped,
                Direct1::TooBig if done.members.is_empty() => return Outcome::TooBig,
                Direct1::TooBig => return Outcome::Stopped,
                Direct1::Other => break,
            }
        }
    }
    // The generic decoder reads through the source, maybe other blocks:
    // the job's block goes back first (bytes lent from the file's map are
    // no block: kept).
    if shared.map.is_none() {
        w.unlend();
    }
    #[cfg(test)]
    if w.lent.is_some() && shared.map.is_none() {
        shared.generic_lent.fetch_add(1, Ordering::Relaxed);
    }
    let Some(dec) = w.decoder(shared, job.dict.as_ref()) else {
        return Outcome::Stopped;
    };
    decode_generic(dec, expected, job.b, shared.cap, done)
}

/// What the direct path made of one member.
enum Direct1 {
    /// A clean gzip member, ending here.
    Member(u64),
    /// Damage, a checksum that does not match, the end of the file: the
    /// reading thread's decoder takes over there.
    Stop,
    /// The member does not fit in the job's buffer.
    TooBig,
    /// Not a gzip member, or one the direct path does not take (a header
    /// longer than the bytes read, a member past [`MAX_DIRECT_INPUT`]).
    Other,
}

/// Decodes the gzip member at stored offset `at` straight from the bytes
/// read into the job's buffer: its header parsed, its deflate data
/// inflated whole by libdeflate onto the buffer's end, its CRC32, ISIZE
/// and header CRC checked as the sequential decoder checks them.
fn direct_member(shared: &Shared, base: u64, at: u64, w: &mut Worker, done: &mut Done) -> Direct1 {
    let Some(d) = w.direct.as_mut() else {
        return Direct1::Other;
    };
    let Some(rel) = at
        .checked_sub(base)
        .and_then(|r| usize::try_from(r).ok())
        .filter(|&r| r < w.filled)
    else {
        return Direct1::Stop;
    };
    let s = held(&w.scan, &w.lent, w.filled)
        .get(rel..)
        .unwrap_or_default();
    if !s.starts_with(&[0x1f, 0x8b, 0x08]) {
        return Direct1::Other;
    }
    d.parser.reset();
    let body = match d.parser.feed(s, Some(&mut d.header)) {
        Ok(Fed::Done(k)) => rel + k,
        Ok(Fed::More) => return Direct1::Other,
        Err(_) => return Direct1::Stop,
    };
    if d.header.header_crc_ok() == Some(false) {
        return Direct1::Stop;
    }
    let from = done.data.len();
    let room = shared.cap.saturating_sub(from);
    // The sizes the header's `sl` subfield declares: a member that cannot
    // fit is not inflated in vain, and one that runs past the bytes read
    // is read whole at once rather than inflated again after each read
    // (a false hint costs only speed: the checks below are the same).
    let hint = if w.distrust_sl {
        None
    } else {
        d.header.size_hint()
    };
    if let Some((len, decoded)) = hint {
        if decoded > room && w.sl_confirmed {
            return Direct1::TooBig;
        }
        let need = body.saturating_add(len).saturating_add(8);
        if need > w.filled && len < MAX_DIRECT_INPUT {
            w.extend(shared, base, need - w.filled);
        }
    }
    let (used, made) = loop {
        let Some(d) = w.direct.as_mut() else {
            return Direct1::Other;
        };
        let input = held(&w.scan, &w.lent, w.filled)
            .get(body..)
            .unwrap_or_default();
        match d.inflater.inflate_append(input, &mut done.data, room) {
            Inflated::Done { used, made } => break (used, made),
            Inflated::NoRoom => return Direct1::TooBig,
            Inflated::Invalid => {
                // Damaged, or cut off by the end of the bytes read: read
                // more (doubling) and try again, up to a bound.
                let have = w.filled - body;
                if w.eof {
                    return Direct1::Stop;
                }
                if have >= MAX_DIRECT_INPUT {
                    return Direct1::Other;
                }
                let more = have.max(CHUNK as usize).min(MAX_DIRECT_INPUT - have);
                if !w.extend(shared, base, more) {
                    return Direct1::Stop;
                }
            }
        }
    };
    match hint {
        Some((_, decoded)) if decoded != made => w.distrust_sl = true,
        Some(_) => w.sl_confirmed = true,
        None => {}
    }
    let t = body + used;
    if w.filled < t + 8 && !w.extend(shared, base, 8) {
        done.data.truncate(from);
        return Direct1::Stop;
    }
    let Some(&[c0, c1, c2, c3, i0, i1, i2, i3]) = held(&w.scan, &w.lent, w.filled).get(t..t + 8)
    else {
        done.data.truncate(from);
        return Direct1::Stop;
    };
    let crc = shared
        .opts
        .verify_checksums
        .then(|| crc32(0, done.data.get(from..).unwrap_or_default()));
    let trailer = GzipTrailer::new([c0, c1, c2, c3, i0, i1, i2, i3], crc, made as u32);
    if !trailer.is_ok() {
        done.data.truncate(from);
        return Direct1::Stop;
    }
    let end = base + (t + 8) as u64;
    // The parsed header goes to the member whole; the next one is parsed
    // into a served member's (its allocations reused).
    let header = w.direct.as_mut().map(|d| {
        let next = done.spare.pop().unwrap_or_default();
        std::mem::replace(&mut d.header, next)
    });
    done.members.push(Member {
        offset: at,
        end,
        codec: Codec::Gzip,
        from,
        to: done.data.len(),
        gz_header: header,
        gz_trailer: Some(trailer),
        digests: None,
    });
    Direct1::Member(end)
}

/// Decodes the members from `start` on with the generic decoder while
/// they start before `b` and fit in `cap`, stopping before anything that
/// is not a clean member directly following the last.
fn decode_generic(
    dec: &mut Decoder<Pread>,
    start: u64,
    b: u64,
    cap: usize,
    done: &mut Done,
) -> Outcome {
    if dec.restart_at(start).is_err() {
        return Outcome::Stopped;
    }
    let mut expected = start;
    loop {
        if !done.members.is_empty() && expected >= b {
            return Outcome::Stopped;
        }
        match dec.next_member() {
            Ok(true) if dec.member_offset() == expected => {}
            _ => return Outcome::Stopped,
        }
        let from = done.data.len();
        loop {
            let buf = match dec.fill_buf() {
                Ok(b) => b,
                Err(_) => {
                    done.data.truncate(from);
                    return Outcome::Stopped;
                }
            };
            if buf.is_empty() {
                break;
            }
            if done.data.len() + buf.len() > cap {
                done.data.truncate(from);
                return if done.members.is_empty() {
                    Outcome::TooBig
                } else {
                    Outcome::Stopped
                };
            }
            done.data.extend_from_slice(buf);
            let n = buf.len();
            dec.consume(n);
        }
        let Some(end) = dec.member_end() else {
            done.data.truncate(from);
            return Outcome::Stopped;
        };
        done.members.push(Member {
            offset: expected,
            end,
            codec: dec.codec(),
            from,
            to: done.data.len(),
            gz_header: dec.gzip_header().cloned(),
            gz_trailer: dec.gzip_trailer().copied(),
            digests: None,
        });
        expected = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs over a source that fetches ahead into its own buffers (a
    /// remote object) hold 16 MiB together, over a file 24 MiB: each job's
    /// cap is that over the jobs in flight.
    #[test]
    fn jobs_hold_less_beside_a_source_that_fetches_ahead() {
        struct Fetching(bool);
        impl ReadAt for Fetching {
            fn read_at(&self, _: &mut [u8], _: u64) -> std::io::Result<usize> {
                Ok(0)
            }
            fn size(&self) -> std::io::Result<u64> {
                Ok(1 << 30)
            }
            fn fetches_ahead(&self) -> bool {
                self.0
            }
        }
        let opts = DecoderOptions::default();
        for (fetches, budget) in [(false, BUDGET), (true, BUDGET_BESIDE_FETCHES)] {
            for threads in [2, 4] {
                let e = Engine::new(Arc::new(Fetching(fetches)), 1 << 30, threads, &opts).unwrap();
                assert_eq!(e.shared.cap, (budget / e.depth).min(MAX_JOB));
                assert_eq!(e.shared.cap * e.depth, budget, "{threads} threads");
            }
        }
        let f = tempfile::tempfile().unwrap();
        assert!(!f.fetches_ahead());
    }

    /// A read buffer grown by a member far past its chunk is shrunk to a
    /// usual job's bytes, not freed (its pages are reused by the next
    /// job); one grown less is left as it is.
    #[test]
    fn a_grown_read_buffer_is_shrunk_not_freed() {
        let usual = (CHUNK + SLACK) as usize;
        let mut w = Worker::new(&DecoderOptions::default());
        w.scan = vec![7; 3 * usual];
        w.filled = 3 * usual;
        w.trim_scan();
        assert_eq!(w.scan.len(), usual);
        assert!(w.scan.capacity() >= usual && w.scan.capacity() < 3 * usual);
        assert_eq!(w.filled, 0);
        assert!(w.scan.iter().all(|&b| b == 7));
        w.scan = vec![0; 2 * usual];
        w.filled = 100;
        w.trim_scan();
        assert_eq!((w.scan.len(), w.filled), (2 * usual, 100));
    }

    /// Spare headers are kept only when small: a header's three fields may
    /// hold 192 KiB, and up to `MAX_SPARE` spares sit with each buffer.
    #[test]
    fn only_small_headers_are_kept_as_spares() {
        let mut h = GzipHeader {
            extra: Some(b"sl\x10\x00".repeat(5)),
            name: Some(b"a.warc".to_vec()),
            ..GzipHeader::default()
        };
        assert!(small_header(&h));
        assert!(small_header(&GzipHeader::default()));
        h.comment = Some(vec![b'c'; 65_535]);
        assert!(!small_header(&h));
        h.comment = None;
        h.extra = Some(Vec::with_capacity(SPARE_FIELD_BYTES + 1));
        assert!(!small_header(&h));
    }
    use crate::Warning;
    use std::io::{Seek, SeekFrom, Write};

    /// One decoded member: offset, end, codec, bytes, and the gzip trailer's
    /// stored CRC32 when there is one.
    type M = (u64, Option<u64>, Codec, Vec<u8>, Option<u32>);

    fn decode_file(bytes: &[u8], threads: usize, lenient: bool) -> (Vec<M>, bool, Vec<Warning>) {
        decode_file_served(bytes, threads, lenient).0
    }

    fn decode_file_served(
        bytes: &[u8],
        threads: usize,
        lenient: bool,
    ) -> ((Vec<M>, bool, Vec<Warning>), u64) {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let opts = DecoderOptions {
            threads,
            lenient,
            ..DecoderOptions::default()
        };
        let mut d = Decoder::new_file(f, opts).unwrap();
        let mut ms = Vec::new();
        let mut ok = true;
        'outer: loop {
            match d.next_member() {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => {
                    ok = false;
                    break;
                }
            }
            let mut data = Vec::new();
            loop {
                let Ok(b) = d.fill_buf() else {
                    ok = false;
                    break 'outer;
                };
                if b.is_empty() {
                    break;
                }
                // Read in odd pieces so that consume is exercised.
                let n = b.len().min(777);
                data.extend_from_slice(&b[..n]);
                d.consume(n);
            }
            assert_eq!(d.member_pos(), data.len() as u64);
            let crc = d.gzip_trailer().map(|t| t.crc32);
            ms.push((d.member_offset(), d.member_end(), d.codec(), data, crc));
        }
        let mut w = Vec::new();
        d.drain_warnings(&mut w);
        let served = d.par.as_ref().map_or(0, |p| p.served());
        ((ms, ok, w), served)
    }

    /// Threads 2 and 3 give exactly what one thread gives.
    fn same_as_sequential(bytes: &[u8]) -> Vec<M> {
        let (one, ok1, w1) = decode_file(bytes, 1, true);
        for t in [2, 3] {
            let (par, ok, w) = decode_file(bytes, t, true);
            assert_eq!(ok, ok1);
            assert_eq!(w, w1, "threads {t}");
            assert_eq!(par.len(), one.len(), "threads {t}");
            for (a, b) in par.iter().zip(&one) {
                assert_eq!(a, b, "threads {t}, member at {}", b.0);
            }
        }
        let (strict1, s1, _) = decode_file(bytes, 1, false);
        let (strict2, s2, _) = decode_file(bytes, 2, false);
        assert_eq!((strict2, s2), (strict1, s1), "strict");
        one
    }

    /// Pseudo-random bytes: they do not compress, so members stay large
    /// enough to spread over many chunks.
    fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut s = seed | 1;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                if i % 4 == 0 { b'a' } else { s as u8 }
            })
            .collect()
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn parts() -> Vec<Vec<u8>> {
        (0..300u32)
            .map(|i| noise(1000 + (i as usize * 7919) % 30_000, i))
            .collect()
    }

    /// Jobs over a local file lend their bytes from its map (no copy) and
    /// drop its pages behind them; a job that read past the end of a file
    /// that shrank under the map (those bytes read as zeros) serves
    /// nothing, nor does any job after it: the reading thread reads on.
    #[cfg(all(target_os = "linux", feature = "mmap"))]
    #[test]
    fn jobs_read_the_files_map_and_serve_nothing_once_it_shrank() {
        let file = parts()
            .iter()
            .flat_map(|p| gz(p))
            .collect::<Vec<u8>>()
            .repeat(2);
        let len = file.len() as u64;
        assert!(len > 2 * FORGET_STEP + 8 * CHUNK, "{len}");
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&file).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let opts = DecoderOptions {
            threads: 2,
            ..DecoderOptions::default()
        };
        let mut d = Decoder::new_file(f.try_clone().unwrap(), opts.clone()).unwrap();
        let mut n = 0;
        while d.next_member().unwrap() {
            while !d.fill_buf().unwrap().is_empty() {
                let k = d.fill_buf().unwrap().len();
                d.consume(k);
            }
            n += 1;
        }
        assert_eq!(n, 600);
        let p = d.par.as_ref().unwrap();
        assert!(p.served() > 500, "{}", p.served());
        assert!(p.lends_kept() > 20, "{}", p.lends_kept());
        // Dropped up to the last jobs' chunks, in steps.
        assert!(
            p.forgotten() + FORGET_STEP + 8 * CHUNK >= len,
            "{}",
            p.forgotten()
        );

        let map = FileMap::new(&f).unwrap();
        let mut e = Engine::new(Arc::new(f.try_clone().unwrap()), len, 2, &opts).unwrap();
        assert!(e.set_map(map));
        let job = |a| Job {
            a,
            b: a + CHUNK,
            known: false,
            dict: None,
            slot: Arc::new(AtomicBool::new(true)),
            reply: None,
        };
        let mut w = Worker::new(&e.shared.opts);
        let before = run_claimed(&e.shared, &job(CHUNK), &mut w);
        assert!(before.members.len() > 5, "{}", before.members.len());
        assert!(before.start.is_some_and(|s| s >= CHUNK));
        // Too late for another map once a job may hold this one.
        let held = Arc::clone(&e.shared);
        assert!(!e.set_map(FileMap::new(&f).unwrap()));
        drop(held);
        f.set_len(2 * CHUNK).unwrap();
        for a in [4 * CHUNK, CHUNK] {
            let after = run_claimed(&e.shared, &job(a), &mut w);
            assert!(
                after.members.is_empty() && after.start.is_none(),
                "job at {a}"
            );
        }
        let m = e.shared.map.as_ref().unwrap();
        assert!(m.check().is_err());
    }

    #[test]
    fn gzip_members_in_parallel_match_one_thread() {
        let file: Vec<u8> = parts().iter().flat_map(|p| gz(p)).collect();
        assert!(file.len() > 8 * CHUNK as usize);
        let ms = same_as_sequential(&file);
        assert_eq!(ms.len(), 300);
        // Nearly all from the jobs (the first member of the file and of
        // each job the sequential path could not hand over excepted).
        let served = decode_file_served(&file, 2, true).1;
        assert!(served > 250, "{served}");
        assert_eq!(ms[299].3, parts()[299]);
    }

    fn zstd_file() -> Vec<u8> {
        parts()
            .iter()
            .flat_map(|p| zstd::stream::encode_all(&p[..], 1).unwrap())
            .collect()
    }

    fn lz4_file() -> Vec<u8> {
        parts()
            .iter()
            .flat_map(|p| {
                // Independent 64 KiB blocks, no checksums.
                let mut f = super::super::lz4::MAGIC.to_vec();
                f.extend([0x60, 0x40]);
                f.push((super::super::lz4::xxh32(&f[4..], 0) >> 8) as u8);
                for chunk in p.chunks(64 << 10) {
                    let c = lz4_flex::block::compress(chunk);
                    f.extend((c.len() as u32).to_le_bytes());
                    f.extend(c);
                }
                f.extend([0; 4]);
                f
            })
            .collect()
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_frames_in_parallel_match_one_thread() {
        assert_eq!(same_as_sequential(&zstd_file()).len(), 300);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn lz4_frames_in_parallel_match_one_thread() {
        assert_eq!(same_as_sequential(&lz4_file()).len(), 300);
    }

    /// A codec that is not compiled in stops the reading thread with the
    /// error, lenient or not, threads or not: nothing is skipped quietly.
    #[test]
    fn codecs_not_compiled_in_stop_every_thread_count() {
        for (file, on) in [
            (zstd_file(), cfg!(feature = "zstd")),
            (lz4_file(), cfg!(feature = "lz4")),
        ] {
            for threads in [1, 2] {
                for lenient in [true, false] {
                    let (ms, ok, w) = decode_file(&file, threads, lenient);
                    assert_eq!(ok, on, "threads {threads} lenient {lenient}");
                    assert_eq!(ms.len(), if on { 300 } else { 0 });
                    assert!(w.is_empty(), "{w:?}");
                }
            }
        }
    }

    #[test]
    fn damage_big_members_and_false_candidates_fall_back_exactly() {
        let ps = parts();
        let mut file = Vec::new();
        for (i, p) in ps.iter().enumerate() {
            let mut m = gz(p);
            match i {
                // A corrupt member in the middle of a chunk.
                40 => {
                    let mid = m.len() / 2;
                    m[mid] ^= 0x55;
                }
                // A member larger than any job may hold: streamed.
                90 => m = gz(&noise(MAX_JOB + 100_000, 7)),
                // gzip members stored inside a member (level 0): real
                // headers at candidate positions that are not boundaries.
                150 => {
                    let inner: Vec<u8> = ps[..40].iter().flat_map(|p| gz(p)).collect();
                    let mut e =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
                    e.write_all(&inner).unwrap();
                    m = e.finish().unwrap();
                }
                // Garbage between members.
                200 => {
                    m.splice(0..0, *b"not a member");
                }
                _ => {}
            }
            file.extend(m);
        }
        // A truncated last member.
        file.truncate(file.len() - 100);
        let ms = same_as_sequential(&file);
        assert!(ms.len() >= 299, "{}", ms.len());
        let served = decode_file_served(&file, 2, true).1;
        assert!(served > 150, "{served}");
    }

    /// Members larger than a chunk's slack (read further by the direct
    /// path), with the checksums unchecked and with whole-member inflation
    /// off (the generic decoder in every job): as one thread.
    #[test]
    fn members_past_the_slack_and_options_match_one_thread() {
        let parts: Vec<Vec<u8>> = (0..24u32)
            .map(|i| noise(20_000 + (i as usize * 104_729) % 600_000, i + 7))
            .collect();
        let file: Vec<u8> = parts.iter().flat_map(|p| gz(p)).collect();
        assert!(file.len() > 16 * CHUNK as usize);
        let ms = same_as_sequential(&file);
        assert_eq!(ms.len(), parts.len());
        for (m, p) in ms.iter().zip(&parts) {
            assert_eq!(&m.3, p);
        }
        let served = decode_file_served(&file, 2, true).1;
        assert!(served >= 12, "{served}");
        for opts in [
            DecoderOptions {
                verify_checksums: false,
                ..DecoderOptions::default()
            },
            DecoderOptions {
                fast_inflate: false,
                ..DecoderOptions::default()
            },
        ] {
            let decode = |threads| {
                let mut f = tempfile::tempfile().unwrap();
                f.write_all(&file).unwrap();
                f.seek(SeekFrom::Start(0)).unwrap();
                let o = DecoderOptions {
                    threads,
                    ..opts.clone()
                };
                let mut d = Decoder::new_file(f, o).unwrap();
                let mut out = Vec::new();
                while d.next_member().unwrap() {
                    let mut data = Vec::new();
                    loop {
                        let b = d.fill_buf().unwrap();
                        if b.is_empty() {
                            break;
                        }
                        data.extend_from_slice(b);
                        let n = b.len();
                        d.consume(n);
                    }
                    let t = d.gzip_trailer().copied();
                    out.push((d.member_offset(), d.member_end(), data, t));
                }
                let served = d.par.as_ref().map_or(0, |p| p.served());
                (out, served)
            };
            let (one, _) = decode(1);
            let (two, served) = decode(2);
            assert_eq!(one, two, "{opts:?}");
            assert_eq!(one.len(), parts.len());
            assert!(served >= 12, "{opts:?}: {served}");
            let checked = one
                .iter()
                .all(|m| m.3.is_some_and(|t| t.computed_crc32.is_some()));
            assert_eq!(checked, opts.verify_checksums, "{opts:?}");
        }
    }

    /// The `sl` sizes are only a hint: true ones, and false ones (too
    /// small or too large, a stored length off either way; a file of each,
    /// as the first false one turns the hints off), give the same members
    /// on one and more threads, every one decoded.
    #[test]
    fn sl_size_hints_true_or_false_decode_the_same() {
        let ps: Vec<Vec<u8>> = (0..48u32)
            .map(|i| noise(1000 + (i as usize * 7919) % 60_000, i + 3))
            .collect();
        let big = noise(MAX_JOB + 50_000, 11);
        type Hint = fn(u32, u32) -> (u32, u32);
        let kinds: [Hint; 5] = [
            |s, n| (s, n),
            |s, n| (s, n / 3),
            |s, _| (s, u32::MAX),
            |s, n| (s / 2, n),
            |s, _| (s.saturating_mul(7), 0),
        ];
        for (k, hint) in kinds.iter().enumerate() {
            let mut want: Vec<&Vec<u8>> = Vec::new();
            let mut file = Vec::new();
            for (i, p) in ps.iter().enumerate() {
                // A member larger than a job early in the file (declared
                // as it is, smaller, larger).
                let p = if i == 7 && k < 3 { &big } else { p };
                let n = p.len() as u32;
                file.extend(super::super::gz_sl(p, |s| hint(s, n).0, hint(0, n).1));
                want.push(p);
            }
            let ms = same_as_sequential(&file);
            assert_eq!(ms.len(), want.len(), "kind {k}");
            for (m, p) in ms.iter().zip(&want) {
                assert_eq!(&m.3, *p, "kind {k}, member at {}", m.0);
            }
            let ((_, ok, w), served) = decode_file_served(&file, 2, false);
            assert!(ok && w.is_empty(), "kind {k}: {w:?}");
            assert!(served > 15, "kind {k}: {served}");
        }
    }

    /// Members over several chunks, some larger than a job: the reading
    /// thread's large-member buffer is given back when the jobs serve
    /// again, and everything (headers too) is as on one thread.
    #[test]
    fn large_members_beside_jobs_match_one_thread() {
        let ps: Vec<Vec<u8>> = (0..60u32)
            .map(|i| match i % 15 {
                // 1.3 MB stored: five chunks, in a job's room.
                4 => noise(1_300_000, i),
                // Larger than a job: the reading thread's.
                11 => noise(MAX_JOB + 200_000, i),
                _ => noise(1000 + (i as usize * 7919) % 40_000, i),
            })
            .collect();
        let file: Vec<u8> = ps
            .iter()
            .flat_map(|p| super::super::gz_sl(p, |s| s, p.len() as u32))
            .collect();
        let ms = same_as_sequential(&file);
        assert_eq!(ms.len(), ps.len());
        for (m, p) in ms.iter().zip(&ps) {
            assert_eq!(&m.3, p);
        }
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&file).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let opts = |threads| DecoderOptions {
            threads,
            ..DecoderOptions::default()
        };
        let mut one = Decoder::new(&file[..], opts(1));
        let mut d = Decoder::new_file(f, opts(2)).unwrap();
        let mut big_buffer_kept = 0;
        while d.next_member().unwrap() {
            assert!(one.next_member().unwrap());
            if d.large_output_beside_jobs() {
                big_buffer_kept += 1;
            }

            loop {
                let n = d.fill_buf().unwrap().len();
                if n == 0 {
                    break;
                }
                d.consume(n);
            }
            while !one.fill_buf().unwrap().is_empty() {
                let n = one.fill_buf().unwrap().len();
                one.consume(n);
            }
            assert_eq!(d.gzip_header(), one.gzip_header(), "{}", d.member_offset());
            assert_eq!(d.gzip_trailer(), one.gzip_trailer());
        }
        assert!(!one.next_member().unwrap());
        assert_eq!(big_buffer_kept, 0);
        let served = d.par.as_ref().map_or(0, |p| p.served());
        assert!(served >= 40, "served {served}");
        // The members larger than a job were inflated into an idle job
        // buffer, given back whenever the jobs served.
        let lent = d.par.as_ref().map_or(0, |p| p.outputs_lent().0);
        assert!(lent >= 4, "lent {lent}");
    }

    /// Headers of every kind (name, comment, extra field, none) served by
    /// the jobs are the ones one thread parses: a header parsed into a
    /// served member's keeps nothing of it.
    #[test]
    fn job_headers_match_one_thread() {
        let ps = parts();
        let file: Vec<u8> = ps
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                let mut b = flate2::GzBuilder::new().mtime(i as u32);
                if i % 2 == 0 {
                    b = b.filename(format!("name-{i}"));
                }
                if i % 3 == 0 {
                    b = b.comment(vec![b'c'; i % 50]);
                }
                if i % 5 < 2 {
                    b = b.extra(vec![b'x'; i % 7]);
                }
                let mut e = b.write(Vec::new(), flate2::Compression::fast());
                e.write_all(p).unwrap();
                e.finish().unwrap()
            })
            .collect();
        let headers = |threads| {
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(&file).unwrap();
            f.seek(SeekFrom::Start(0)).unwrap();
            let o = DecoderOptions {
                threads,
                ..DecoderOptions::default()
            };
            let mut d = Decoder::new_file(f, o).unwrap();
            let mut hs = Vec::new();
            while d.next_member().unwrap() {
                loop {
                    let n = d.fill_buf().unwrap().len();
                    if n == 0 {
                        break;
                    }
                    d.consume(n);
                }
                hs.push(d.gzip_header().cloned());
            }
            let served = d.par.as_ref().map_or(0, |p| p.served());
            (hs, served)
        };
        let (one, _) = headers(1);
        let (two, served) = headers(2);
        assert_eq!(one.len(), ps.len());
        assert_eq!(two, one);
        assert!(served > 250, "{served}");
    }

    #[test]
    fn plain_files_and_whole_file_gzip_stay_sequential() {
        let plain = noise(3 * CHUNK as usize, 3);
        let ms = same_as_sequential(&plain);
        assert_eq!(ms.len(), 1);
        let one = gz(&noise(4 * CHUNK as usize, 4));
        assert_eq!(same_as_sequential(&one).len(), 1);
    }
}
