//! One uncompressed WARC file read on several threads, for a caller that
//! writes lines per record (`warchest ls -j N`): the file is cut into
//! chunks, each read by a worker from the first confirmed record start at
//! or after its cut ([`find_record_start`](crate::split::find_record_start),
//! the rule of [`split`](crate::split)) into its own output buffer, and the
//! buffers are written in order.
//!
//! The output is exactly that of one sequential read ([`sequential`]), by
//! verification, not by trusting the split rule: a chunk's lines are used
//! only when it starts exactly where the sequential read stands (the
//! "crossing" of the chunk before it: the offset of the first record
//! starting at or after that chunk's end) and nothing odd happened in it
//! (no error, every record plain, no warning but a record's own, whose
//! record number is mapped). Anywhere else (a false or missed candidate,
//! damage, an error) the calling thread reads on sequentially from where
//! the verified output stops, reporting its warnings and errors as a
//! sequential read does, until it is back at a verified chunk's start or
//! at the end. The per-record work is the caller's ([`Lines`]); where
//! warnings go is the caller's too ([`Report`]).
//!
//! Threads: `plan.threads` workers on [`std::thread::scope`], at most
//! twice that many chunks (16 at most) read ahead of the writing thread,
//! each chunk's output bounded: memory stays bounded whatever the file.
//!
//! Sources: a local file by path ([`plan`], [`Input::Path`]), or any
//! source read at offsets with a known length ([`plan_at`],
//! [`Input::At`]: an object in a store, whose reads the source fetches
//! ahead in blocks, or a WARC file stored in a WACZ, a byte range of the
//! ZIP). Both are read the same way, at offsets (a file by `pread`), each
//! chunk into a small buffer, its large payloads sought past.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use crate::Warning;
use crate::archive::{Format, Reader, Record};
use crate::codec::{Codec, Decoder, Source};
use crate::io::{AtCursor, ReadAt};
use crate::warc::{ReaderOptions, RecordEnd};

/// An error of a command's per-record work or of its output.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Smallest file read in chunks: below this one thread is as fast.
const MIN_FILE: u64 = 32 << 20;
/// Chunk sizes, before the knob: about four chunks a thread, within these.
const MIN_CHUNK: u64 = 4 << 20;
const MAX_CHUNK: u64 = 8 << 20;
/// At most this many chunks, whatever the knob says (bounds the plan).
const MAX_CHUNKS: u64 = 1 << 20;
/// A chunk stops early once its output passes this: memory stays bounded
/// (chunks in flight times this) whatever the records look like; the main
/// thread reads on from where it stopped.
const MAX_OUTPUT: usize = 4 << 20;
/// Decoder buffer of a chunk's reader: a payload that runs past what is
/// buffered is sought past, the read after such a seek a small one (16 KiB
/// and 256 KiB cost the same CPU on the benchmark corpus).
const CHUNK_BUFFER: usize = 64 << 10;
/// Output reserved per chunk buffer, as a share of the chunk's bytes
/// (`ls` writes about 2 %, 5 % as JSON, on the benchmark corpus): most
/// buffers then never grow.
const OUTPUT_SHARE: u64 = 16;

/// Where the warnings of a read go, as the read reaches them (in file
/// order, each numbered as in a sequential read from the start).
pub trait Report {
    /// The warnings `warnings` of the file `name`.
    fn warnings(&self, name: &str, warnings: &[Warning]);
}

/// The per-record work of a command that writes lines.
pub trait Lines: Sync {
    /// Appends the lines of `rec` to `out` and finishes the record. On an
    /// error what was appended is dropped by the caller.
    ///
    /// # Errors
    /// The record cannot be read or formatted.
    fn record<S: Source>(
        &self,
        rec: Record<'_, S>,
        out: &mut Vec<u8>,
    ) -> Result<RecordEnd, BoxError>;
}

/// The per-record work of a command that writes lines and keeps counts
/// (`check`'s summary): as [`Lines`], each chunk with counts of its own,
/// added in file order for the chunks whose lines are used.
pub trait Tally: Sync {
    /// The counts.
    type Sum: Default + Send;

    /// As [`Lines::record`], adding the record to `sum` (only once it is
    /// read: on an error what was appended and counted is dropped).
    ///
    /// # Errors
    /// The record cannot be read or formatted.
    fn record<S: Source + Send>(
        &self,
        rec: Record<'_, S>,
        out: &mut Vec<u8>,
        sum: &mut Self::Sum,
    ) -> Result<RecordEnd, BoxError>;

    /// Adds `part`, the counts of the records after those of `total`, to
    /// `total`.
    fn add(&self, total: &mut Self::Sum, part: Self::Sum);

    /// Whether a chunk's counts hold as much as a chunk may (a caller
    /// whose per-record output goes to its counts, as `scan`'s record
    /// batches do, bounds them so): the chunk stops there, as at its
    /// output bound, and the main thread reads on from where it stopped.
    fn full(&self, _sum: &Self::Sum) -> bool {
        false
    }

    /// Whether the records of a chunk, counted in `part` from an empty
    /// sum (read from the chunk's first record as if it were the input's
    /// first), gave the lines that a read on from `total` gives, once
    /// `total` is flushed ([`Tally::flush`]). A caller whose record's lines
    /// depend on the record before (`index` pairs a POST request with its
    /// response) says no where that dependence crosses the chunk's start:
    /// the chunk is then read again in order, on from `total`.
    fn continues(&self, _total: &Self::Sum, _part: &Self::Sum) -> bool {
        true
    }

    /// Appends to `out` the lines `sum` holds back (a record kept to be
    /// paired with the next one), emptying it of them: before the lines of
    /// a chunk that [`Tally::continues`] on from it, at the end of the
    /// input, and before an error is returned.
    fn flush(&self, _sum: &mut Self::Sum, _out: &mut Vec<u8>) {}
}

/// Warnings gathered as a read reaches them.
impl Report for std::cell::RefCell<Vec<Warning>> {
    fn warnings(&self, _: &str, warnings: &[Warning]) {
        self.borrow_mut().extend_from_slice(warnings);
    }
}

/// Warnings counted (the first kept) as a read reaches them.
impl Report for std::cell::RefCell<crate::recoveries::Recoveries> {
    fn warnings(&self, name: &str, warnings: &[Warning]) {
        if !warnings.is_empty() {
            self.borrow_mut().add_all(name, warnings);
        }
    }
}

/// [`Lines`] as a [`Tally`] with no counts.
struct NoSum<'a, L>(&'a L);

impl<L: Lines> Tally for NoSum<'_, L> {
    type Sum = ();

    fn record<S: Source + Send>(
        &self,
        rec: Record<'_, S>,
        out: &mut Vec<u8>,
        _: &mut (),
    ) -> Result<RecordEnd, BoxError> {
        self.0.record(rec, out)
    }

    fn add(&self, _: &mut (), _: ()) {}
}

/// How far a sequential read got: records written and the offset of the
/// last one.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Records written.
    pub records: u64,
    /// Offset of the last record written.
    pub last: Option<u64>,
    /// The WARC reader's number for the next record (records given up
    /// count too), which its warnings and errors name.
    pub next_number: u64,
}

/// Reads `reader` record by record, as one thread does: each record's
/// lines to `out`, then the warnings collected while reading it to `g`. After each
/// record whose stored length is known, `hand_over` is asked with the
/// offset where the next record should start; when it says yes the read
/// stops there (`Ok(Some(offset))`). `Ok(None)` at the end of the input.
///
/// # Errors
/// A record that cannot be read (after reporting the warnings
/// collected), a record's work, or writing.
pub fn sequential<S: Source, L: Lines>(
    g: &dyn Report,
    name: &str,
    lines: &L,
    reader: &mut Reader<S>,
    out: &mut dyn Write,
    progress: &mut Progress,
    hand_over: impl FnMut(u64) -> bool,
) -> Result<Option<u64>, BoxError> {
    let record = |rec: Record<'_, S>, buf: &mut Vec<u8>, _: &mut ()| lines.record(rec, buf);
    let mut hand_over = hand_over;
    sequential_by(g, name, record, reader, out, progress, &mut (), |n, _| {
        hand_over(n)
    })
}

/// [`sequential`] for a [`Tally`]: each record also counted in `sum`. The
/// lines `sum` holds back at the end ([`Tally::flush`]) are the caller's
/// to write.
///
/// # Errors
/// As [`sequential`].
#[allow(clippy::too_many_arguments)]
pub fn sequential_tally<S: Source + Send, T: Tally>(
    g: &dyn Report,
    name: &str,
    lines: &T,
    reader: &mut Reader<S>,
    out: &mut dyn Write,
    progress: &mut Progress,
    sum: &mut T::Sum,
    hand_over: impl FnMut(u64) -> bool,
) -> Result<Option<u64>, BoxError> {
    let record =
        |rec: Record<'_, S>, buf: &mut Vec<u8>, sum: &mut T::Sum| lines.record(rec, buf, sum);
    let mut hand_over = hand_over;
    sequential_by(g, name, record, reader, out, progress, sum, |n, _| {
        hand_over(n)
    })
}

/// [`sequential`] and [`sequential_tally`], each record's work done by
/// `record` (a [`Tally`] needs its sources `Send`, a [`Lines`] does not);
/// `hand_over` also sees the counts so far.
#[allow(clippy::too_many_arguments)]
fn sequential_by<S: Source, M>(
    g: &dyn Report,
    name: &str,
    mut record: impl FnMut(Record<'_, S>, &mut Vec<u8>, &mut M) -> Result<RecordEnd, BoxError>,
    reader: &mut Reader<S>,
    out: &mut dyn Write,
    progress: &mut Progress,
    sum: &mut M,
    mut hand_over: impl FnMut(u64, &M) -> bool,
) -> Result<Option<u64>, BoxError> {
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    loop {
        let rec = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                g.warnings(name, &reader.take_warnings());
                return Err(e.into());
            }
        };
        progress.records += 1;
        let offset = rec.location().offset;
        buf.clear();
        let end = record(rec, &mut buf, sum)?;
        out.write_all(&buf)?;
        progress.last = Some(offset);
        if let Some(w) = reader.as_warc() {
            progress.next_number = w.next_record_number();
        }
        g.warnings(name, &reader.take_warnings());
        if let Some(next) = end.stored_len.and_then(|n| offset.checked_add(n))
            && hand_over(next, sum)
        {
            return Ok(Some(next));
        }
    }
    g.warnings(name, &reader.take_warnings());
    Ok(None)
}

/// The environment knob (tests) that forces the chunk size in bytes of
/// every chunked read, whatever the file's size: `warchest ls -j`,
/// `check -j` and Python's `scan` read it, through [`knob`].
pub const KNOB: &str = "WARCHEST_PLAIN_CHUNK";

/// The chunk size [`KNOB`] forces, for [`plan`] and [`plan_at`]'s `chunk`;
/// `None` when it is not set (or not a number).
pub fn knob() -> Option<u64> {
    std::env::var(KNOB).ok().and_then(|k| k.trim().parse().ok())
}

/// The chunk size for a file of `len` bytes read on `threads`; `None` when
/// it is read on one thread. `knob` (the test knob's value) forces a size.
fn chunk_size(len: u64, threads: usize, knob: Option<u64>) -> Option<u64> {
    if threads <= 1 || len == 0 {
        return None;
    }
    let floor = len.div_ceil(MAX_CHUNKS);
    if let Some(k) = knob.filter(|&k| k > 0) {
        return Some(k.max(floor));
    }
    if len < MIN_FILE {
        return None;
    }
    let per = len / (threads as u64 * 4);
    Some(per.clamp(MIN_CHUNK, MAX_CHUNK).max(floor))
}

/// How one file is read in chunks.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The file's size when planned.
    pub len: u64,
    /// Bytes a chunk.
    pub chunk: u64,
    /// Workers.
    pub threads: usize,
}

/// The plan when `path` is an uncompressed WARC file (sniffed from its
/// first bytes, not its name) worth reading on `threads`; `None` for
/// anything else (compressed, ARC and Web InfoMall files, not a regular
/// file, files that cannot be read), which the caller reads sequentially.
/// `chunk` forces a chunk size (tests: tiny chunks on small files).
pub fn plan(path: &Path, threads: usize, chunk: Option<u64>) -> Option<Plan> {
    if threads <= 1 {
        return None;
    }
    let mut f = File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let len = meta.len();
    let chunk = chunk_size(len, threads, chunk)?;
    let mut head = vec![0u8; HEAD];
    let n = crate::io::read_up_to(&mut f, &mut head).ok()?;
    plain_warc(&head[..n]).then_some(Plan {
        len,
        chunk,
        threads,
    })
}

/// Bytes sniffed at the start of a source.
const HEAD: usize = 16 << 10;

/// Whether `head`, a source's first bytes, starts an uncompressed WARC
/// file.
fn plain_warc(head: &[u8]) -> bool {
    Codec::sniff(head).is_none() && Format::sniff(head).unwrap_or(Format::Warc) == Format::Warc
}

/// [`plan`] for a source read at offsets (its length from
/// [`ReadAt::size`]): `None` for anything but an uncompressed WARC file
/// worth reading on `threads`, and when its first bytes cannot be read.
pub fn plan_at(src: &dyn ReadAt, threads: usize, chunk: Option<u64>) -> Option<Plan> {
    if threads <= 1 {
        return None;
    }
    let len = src.size().ok()?;
    let chunk = chunk_size(len, threads, chunk)?;
    let mut head = vec![0u8; HEAD.min(usize::try_from(len).unwrap_or(HEAD))];
    let mut n = 0;
    while n < head.len() {
        match src.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    plain_warc(&head[..n]).then_some(Plan {
        len,
        chunk,
        threads,
    })
}

/// Where a chunked read's bytes come from, read at offsets (a local file
/// by `pread`, an object in a store, a WARC file in a WACZ) and called
/// `name` in messages: how its readers are opened.
struct Origin<'a> {
    src: &'a Arc<dyn ReadAt>,
    name: &'a str,
}

/// A chunk's reader.
type Src = Decoder<AtCursor>;

impl Origin<'_> {
    /// A reader at `offset` (a record start), one thread, offsets in the
    /// whole source, records read as WARC.
    ///
    /// Read at offsets, not mapped: with two or more threads on one map,
    /// the faults, the pages mapped around them and the pages dropped
    /// behind each reader (`MADV_DONTNEED`, seen by every thread) cost
    /// 12 % more CPU than `read` calls, and twice the memory; and `pread`
    /// at the reader's own position, not `lseek` and `read`, saves a
    /// system call a payload sought past (docs/performance-history.md,
    /// round fourteen, plain files; round seventeen).
    fn open_at(&self, offset: u64, opts: &ReaderOptions) -> Result<Reader<Src>, BoxError> {
        let opts = chunk_options(offset, opts);
        let src = Decoder::new_read_at(Arc::clone(self.src), self.name, opts.decoder.clone())?;
        Ok(Reader::from_source_as(src, opts, Format::Warc))
    }

    /// A reader from the start, as a sequential read opens it.
    fn open_start(&self, opts: ReaderOptions) -> Result<Reader<Src>, BoxError> {
        let locate = |e: std::io::Error| crate::Error::from(e).in_file(Path::new(self.name));
        let src = Decoder::new_read_at(Arc::clone(self.src), self.name, opts.decoder.clone())
            .map_err(locate)?;
        Ok(Reader::from_source(src, opts)?)
    }

    /// The first confirmed record start in `cut..end`.
    fn find_start(&self, cut: u64, end: u64, opts: &ReaderOptions) -> crate::Result<Option<u64>> {
        let mut c = AtCursor::new(Arc::clone(self.src), self.name, 0);
        crate::split::find_record_start(&mut c, Format::Warc, cut, end, opts)
    }
}

/// The options of a chunk's reader at `offset`: one thread, a small
/// buffer.
fn chunk_options(offset: u64, opts: &ReaderOptions) -> ReaderOptions {
    let mut opts = opts.clone();
    opts.decoder.start_offset = offset;
    opts.decoder.threads = 1;
    // Not the default 1 MiB: the buffer is made (zeroed) per chunk, and
    // a payload past it is sought over rather than copied.
    opts.decoder.buffer_size = CHUNK_BUFFER;
    opts
}

/// What a worker found in one chunk, and its records' counts.
#[derive(Debug, Default)]
struct Chunk<M> {
    /// Where its reading started: 0 for the first chunk, else the first
    /// confirmed record start in its range (`None`: none there).
    start: Option<u64>,
    /// Nothing odd happened: no error, every record plain, no warning
    /// but those of a record (numbered from 0 at `start`, none between
    /// records), no record given up.
    ok: bool,
    /// The warnings of its records, in order, numbered from 0.
    warnings: Vec<Warning>,
    /// The lines of its records.
    out: Vec<u8>,
    /// Records written to `out`, and the offset of the last.
    progress: Progress,
    /// The offset of the first record at or after its end (or where it
    /// stopped early); `None` when the input ended.
    crossing: Option<u64>,
    /// The counts of its records.
    sum: M,
}

/// The WARC reader's number for its next record.
fn numbered<S: Source>(reader: &mut Reader<S>) -> Option<u64> {
    reader.as_warc().map(|w| w.next_record_number())
}

/// Reads chunk `range` (cut at `range.0`, ending at `range.1`) into `out`
/// (an empty buffer); the chunk cut at 0 starts there, as `-j 1` does.
fn read_chunk<L: Tally>(
    lines: &L,
    origin: &Origin<'_>,
    opts: &ReaderOptions,
    range: (u64, u64),
    abort: &AtomicBool,
    out: Vec<u8>,
) -> Chunk<L::Sum> {
    let (cut, end) = range;
    let mut c = Chunk {
        out,
        ..Chunk::default()
    };
    let want = usize::try_from((end - cut) / OUTPUT_SHARE)
        .unwrap_or(MAX_OUTPUT)
        .min(MAX_OUTPUT);
    c.out.reserve(want);
    let start = if cut == 0 {
        0
    } else {
        match origin.find_start(cut, end, opts) {
            Ok(Some(s)) => s,
            _ => return c,
        }
    };
    c.start = Some(start);
    let Ok(mut reader) = origin.open_at(start, opts) else {
        return c;
    };
    loop {
        if abort.load(Ordering::Relaxed) {
            return c;
        }
        let rec = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => {
                c.crossing = None;
                c.ok = reader.take_warnings().is_empty()
                    && numbered(&mut reader) == Some(c.progress.records);
                return c;
            }
            Err(_) => return c,
        };
        let loc = rec.location();
        if loc.codec != Codec::None {
            return c;
        }
        if loc.offset >= end || c.out.len() >= MAX_OUTPUT || lines.full(&c.sum) {
            drop(rec);
            c.crossing = Some(loc.offset);
            // The warnings of the crossing record's header are the next
            // chunk's (its reader reads them again); any other is not.
            let n = c.progress.records;
            c.ok = reader.take_warnings().iter().all(|w| w.record == Some(n))
                && numbered(&mut reader) == Some(n + 1);
            return c;
        }
        let at = c.out.len();
        if lines.record(rec, &mut c.out, &mut c.sum).is_err() {
            c.out.truncate(at);
            return c;
        }
        c.progress.records += 1;
        c.progress.last = Some(loc.offset);
        // A record's own warnings name it by number, which the main thread
        // maps; one between records (bytes skipped) depends on what came
        // before, as only a sequential read sees it.
        let ws = reader.take_warnings();
        if ws.iter().any(|w| w.record.is_none()) {
            return c;
        }
        c.warnings.extend(ws);
    }
}

/// The chunks' results, handed from the workers to the main thread in
/// order, at most `window` ahead of the main thread.
struct Shared<M> {
    state: Mutex<State<M>>,
    changed: Condvar,
    abort: AtomicBool,
    /// Output buffers written out, for the next chunks: fresh ones would
    /// cost a page fault per 4 KiB each time.
    pool: Mutex<Vec<Vec<u8>>>,
}

struct State<M> {
    /// The next chunk a worker takes.
    next: usize,
    /// Chunks below this are released by the main thread.
    released: usize,
    /// Results by chunk number modulo the window.
    slots: Vec<Option<Chunk<M>>>,
}

impl<M> Shared<M> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<M>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An empty output buffer, reused when one was given back.
    fn buffer(&self) -> Vec<u8> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        pool.pop().unwrap_or_default()
    }

    /// Gives `buf` back for another chunk.
    fn give_back(&self, mut buf: Vec<u8>) {
        buf.clear();
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        pool.push(buf);
    }
}

/// What a chunked read did (for tests and tracing).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Trace {
    /// Chunks planned.
    pub chunks: usize,
    /// Chunks whose lines were used.
    pub used: usize,
    /// Chunks passed over by verified output that had a confirmed start:
    /// a candidate inside a record (an archived WARC file, say), since
    /// verified chunks read every record start in between.
    pub false_starts: usize,
    /// Sequential reads from a place no verified chunk started at.
    pub sequential_runs: u64,
    /// Records those reads wrote.
    pub sequential_records: u64,
}

/// Reads the uncompressed WARC file `name` from `input` as `plan` says
/// (see [`plan`] for a local file, [`plan_at`] for a source read at
/// offsets: an object in a store, its reads fetched ahead in blocks by the
/// source, or a WARC file stored in a WACZ), writing to `out` what
/// [`sequential`] over the whole file would write, in the same order, with
/// the same warnings (to `g`), errors and outcome: the records written,
/// and what was done.
///
/// # Errors
/// As [`sequential`].
pub fn read<L: Lines>(
    g: &dyn Report,
    name: &str,
    input: Input<'_>,
    lines: &L,
    opts: &ReaderOptions,
    plan: Plan,
    out: &mut dyn Write,
) -> (Result<u64, BoxError>, Trace) {
    read_tally(g, name, input, &NoSum(lines), opts, plan, out, &mut ())
}

/// Where a chunked read's bytes come from, for [`read`] and [`read_tally`].
#[derive(Clone, Copy)]
pub enum Input<'a> {
    /// A local file, by path (planned with [`plan`]).
    Path(&'a Path),
    /// A source read at offsets (planned with [`plan_at`]).
    At(&'a Arc<dyn ReadAt>),
}

/// [`read`] for a [`Tally`]: also counts the records written into `sum`
/// (an empty one: `Default`), as [`sequential_tally`] over the whole input
/// counts them, those before an error too; the lines it holds back are
/// written ([`Tally::flush`]) at the end and before an error is returned.
///
/// # Errors
/// As [`sequential`].
#[allow(clippy::too_many_arguments)]
pub fn read_tally<T: Tally>(
    g: &dyn Report,
    name: &str,
    input: Input<'_>,
    tally: &T,
    opts: &ReaderOptions,
    plan: Plan,
    out: &mut dyn Write,
    sum: &mut T::Sum,
) -> (Result<u64, BoxError>, Trace) {
    match input {
        Input::Path(p) => {
            let src: Arc<dyn ReadAt> = match File::open(p) {
                Ok(f) => Arc::new(f),
                Err(e) => {
                    let e = crate::Error::from(e).in_file(p);
                    return (Err(e.into()), Trace::default());
                }
            };
            // Read errors name the file, as a read opened by path does.
            let named;
            let opts = if opts.file.is_none() {
                named = opts.clone().file(p);
                &named
            } else {
                opts
            };
            let origin = Origin { src: &src, name };
            run(g, name, &origin, tally, opts, plan, out, sum)
        }
        Input::At(src) => run(g, name, &Origin { src, name }, tally, opts, plan, out, sum),
    }
}

#[allow(clippy::too_many_arguments)]
fn run<L: Tally>(
    g: &dyn Report,
    name: &str,
    origin: &Origin<'_>,
    lines: &L,
    opts: &ReaderOptions,
    plan: Plan,
    out: &mut dyn Write,
    sum: &mut L::Sum,
) -> (Result<u64, BoxError>, Trace) {
    let Plan {
        len,
        chunk,
        threads,
    } = plan;
    let chunk = chunk.max(1);
    let count = usize::try_from(len.div_ceil(chunk)).unwrap_or(usize::MAX);
    let range = |k: usize| {
        let cut = k as u64 * chunk;
        (cut, cut.saturating_add(chunk).min(len))
    };
    let window = (threads * 2).clamp(2, 16);
    let shared = Shared {
        state: Mutex::new(State {
            next: 0,
            released: 0,
            slots: (0..window).map(|_| None).collect(),
        }),
        changed: Condvar::new(),
        abort: AtomicBool::new(false),
        pool: Mutex::new(Vec::new()),
    };
    let mut trace = Trace {
        chunks: count,
        ..Trace::default()
    };
    let result = std::thread::scope(|s| {
        // No more workers than chunks may be in flight.
        for _ in 0..threads.min(window).clamp(1, count.max(1)) {
            s.spawn(|| worker(&shared, lines, origin, opts, count, window, &range));
        }
        let r = merge(
            g, name, origin, lines, opts, &shared, count, window, &range, out, sum, &mut trace,
        );
        // Set under the lock: a worker checks it under the lock before it
        // waits, so the notice cannot fall between its check and its wait
        // (that lost wake-up left a worker waiting, and the read hung).
        {
            let _st = shared.lock();
            shared.abort.store(true, Ordering::Relaxed);
        }
        shared.changed.notify_all();
        r
    });
    // What the counts hold back goes out last, or before the error (the
    // records it stands for were read before it).
    let mut held = Vec::new();
    lines.flush(sum, &mut held);
    let wrote = out.write_all(&held).map_err(BoxError::from);
    (result.and_then(|n| wrote.map(|()| n)), trace)
}

/// A worker: takes the next chunk when it is within the window, reads it,
/// hands its result over; until every chunk is taken or the read aborted.
fn worker<L: Tally>(
    shared: &Shared<L::Sum>,
    lines: &L,
    origin: &Origin<'_>,
    opts: &ReaderOptions,
    count: usize,
    window: usize,
    range: &(dyn Fn(usize) -> (u64, u64) + Sync),
) {
    loop {
        let k = {
            let mut st = shared.lock();
            loop {
                if shared.abort.load(Ordering::Relaxed) || st.next >= count {
                    return;
                }
                if st.next < st.released + window {
                    break;
                }
                st = shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            st.next += 1;
            st.next - 1
        };
        let c = read_chunk(
            lines,
            origin,
            opts,
            range(k),
            &shared.abort,
            shared.buffer(),
        );
        shared.lock().slots[k % window] = Some(c);
        shared.changed.notify_all();
    }
}

/// The main thread's side: chunk results in order, fetched once each.
struct Fetch<'a, M> {
    shared: &'a Shared<M>,
    window: usize,
    /// Chunk number of `held[0]`.
    first: usize,
    held: std::collections::VecDeque<Chunk<M>>,
}

impl<M: Default> Fetch<'_, M> {
    /// Chunk `k`'s result (`k` not released), waiting for it.
    fn get(&mut self, k: usize) -> &Chunk<M> {
        while self.first + self.held.len() <= k {
            let want = self.first + self.held.len();
            let mut st = self.shared.lock();
            let c = loop {
                if let Some(c) = st.slots[want % self.window].take() {
                    break c;
                }
                st = self
                    .shared
                    .changed
                    .wait(st)
                    .unwrap_or_else(|e| e.into_inner());
            };
            drop(st);
            self.held.push_back(c);
        }
        &self.held[k - self.first]
    }

    /// Releases chunk `k`, the oldest held (fetching it first), so that
    /// workers may go on to the next; its output buffer is given back, the
    /// rest returned.
    fn release(&mut self, k: usize) -> Chunk<M> {
        self.get(k);
        let mut c = self.held.pop_front().unwrap_or_default();
        self.shared.give_back(std::mem::take(&mut c.out));
        self.first = k + 1;
        self.shared.lock().released = self.first;
        self.shared.changed.notify_all();
        c
    }
}

/// Writes the chunks' lines where they are verified and reads sequentially
/// where they are not; the records written. What `sum` holds back at the
/// end is left there.
#[allow(clippy::too_many_arguments)]
fn merge<L: Tally>(
    g: &dyn Report,
    name: &str,
    origin: &Origin<'_>,
    lines: &L,
    opts: &ReaderOptions,
    shared: &Shared<L::Sum>,
    count: usize,
    window: usize,
    range: &dyn Fn(usize) -> (u64, u64),
    out: &mut dyn Write,
    sum: &mut L::Sum,
    trace: &mut Trace,
) -> Result<u64, BoxError> {
    let mut fetch = Fetch {
        shared,
        window,
        first: 0,
        held: std::collections::VecDeque::new(),
    };
    // Where the sequential read stands: the next record's offset, `None`
    // at the end of the input.
    let mut pos = Some(0u64);
    let mut progress = Progress::default();
    let mut held = Vec::new();
    let mut k = 0usize;
    while let Some(p) = pos {
        if k < count {
            let (_, end) = range(k);
            if p >= end {
                // Verified output went past this chunk's start.
                if fetch.release(k).start.is_some() {
                    trace.false_starts += 1;
                }
                k += 1;
                continue;
            }
            let c = fetch.get(k);
            if c.ok && c.start == Some(p) && lines.continues(sum, &c.sum) {
                held.clear();
                lines.flush(sum, &mut held);
                out.write_all(&held)?;
                out.write_all(&c.out)?;
                let c = fetch.release(k);
                // Its records' warnings, numbered as from the file's start.
                let base = progress.next_number;
                let warnings: Vec<Warning> = c
                    .warnings
                    .into_iter()
                    .map(|mut w| {
                        w.record = w.record.map(|r| r.saturating_add(base));
                        w
                    })
                    .collect();
                g.warnings(name, &warnings);
                progress.next_number = base.saturating_add(c.progress.records);
                lines.add(sum, c.sum);
                progress.records += c.progress.records;
                if c.progress.last.is_some() {
                    progress.last = c.progress.last;
                }
                pos = c.crossing;
                trace.used += 1;
                k += 1;
                continue;
            }
        }
        // Sequentially from `p`, as `-j 1` reads, to the next verified
        // chunk start or the end.
        trace.sequential_runs += 1;
        let before = progress.records;
        let mut reader = resume(origin, opts, p, progress)?;
        let hand_over = |next, sum: &L::Sum| {
            while k < count && range(k).1 <= next {
                fetch.release(k);
                k += 1;
            }
            if k >= count || range(k).0 > next {
                return false;
            }
            let c = fetch.get(k);
            c.ok && c.start == Some(next) && lines.continues(sum, &c.sum)
        };
        let record =
            |rec: Record<'_, Src>, buf: &mut Vec<u8>, sum: &mut L::Sum| lines.record(rec, buf, sum);
        let stopped = sequential_by(
            g,
            name,
            record,
            &mut reader,
            out,
            &mut progress,
            sum,
            hand_over,
        );
        trace.sequential_records += progress.records - before;
        pos = stopped?;
    }
    Ok(progress.records)
}

/// A reader in the state of a sequential read of `origin` from its start
/// that has just finished the record at `progress.last` (numbered
/// `progress.next_number - 1`), the next one starting at `pos`; a reader from
/// the start when no record was written. The record before is read again
/// (warnings dropped: they were reported) so that the reader knows it, and
/// records are numbered as from the start.
fn resume(
    origin: &Origin<'_>,
    opts: &ReaderOptions,
    pos: u64,
    progress: Progress,
) -> Result<Reader<Src>, BoxError> {
    let from_start = || -> Result<Reader<Src>, BoxError> {
        let mut o = opts.clone();
        o.decoder.threads = 1;
        origin.open_start(o)
    };
    let Some(last) = progress.last else {
        return from_start();
    };
    let index = progress.next_number.saturating_sub(1);
    let primed = origin.open_at(last, opts).ok().and_then(|mut r| {
        if let Some(w) = r.as_warc() {
            w.set_next_record_number(index);
        }
        let rec = r.next_record().ok()??;
        if rec.location().offset != last {
            return None;
        }
        let end = rec.finish().ok()?;
        r.take_warnings();
        (end.stored_len.and_then(|n| last.checked_add(n)) == Some(pos)).then_some(r)
    });
    if let Some(r) = primed {
        return Ok(r);
    }
    // Anything unexpected: read from the start, dropping what was written,
    // up to the same place.
    let mut r = from_start()?;
    loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                let at = rec.location().offset;
                rec.finish()?;
                if at >= last {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => return Err(e.into()),
        }
    }
    r.take_warnings();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Offset and stored length of each record.
    struct Offsets;

    impl Lines for Offsets {
        fn record<S: Source>(
            &self,
            rec: Record<'_, S>,
            out: &mut Vec<u8>,
        ) -> Result<RecordEnd, BoxError> {
            let offset = rec.location().offset;
            let end = rec.finish()?;
            writeln!(out, "{offset} {:?} {}", end.stored_len, end.truncated)?;
            Ok(end)
        }
    }

    fn record(n: usize, body: &[u8]) -> Vec<u8> {
        let mut v = format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{n:012}>\r\n\
             WARC-Target-URI: http://example.com/{n}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        v.extend_from_slice(body);
        v.extend_from_slice(b"\r\n\r\n");
        v
    }

    fn records(from: usize, count: usize) -> Vec<u8> {
        (from..from + count)
            .flat_map(|n| record(n, format!("body {n} {}", "x".repeat(n % 37)).as_bytes()))
            .collect()
    }

    /// Warnings dropped, as `ls` without `-w` prints none.
    struct Quiet;

    impl Report for Quiet {
        fn warnings(&self, _: &str, _: &[Warning]) {}
    }

    const G: Quiet = Quiet;

    /// The sequential read's output and result, and the chunked read's
    /// with its trace, of `data` in chunks of `chunk` bytes.
    fn both(data: &[u8], chunk: u64) -> (Vec<u8>, bool, Vec<u8>, bool, Trace) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.warc");
        std::fs::write(&path, data).unwrap();
        let name = path.to_str().unwrap();
        let opts = ReaderOptions::lenient().file(name);
        let mut seq = Vec::new();
        let mut r = Reader::open_with(name, opts.clone()).unwrap();
        let mut p = Progress::default();
        let ok1 = sequential(&G, name, &Offsets, &mut r, &mut seq, &mut p, |_| false).is_ok();
        let mut par = Vec::new();
        let (res, trace) = read(
            &G,
            name,
            Input::Path(&path),
            &Offsets,
            &opts,
            Plan {
                len: data.len() as u64,
                chunk,
                threads: 3,
            },
            &mut par,
        );
        if let Ok(n) = res {
            assert_eq!(n, p.records);
        }
        (seq, ok1, par, res.is_ok(), trace)
    }

    /// `count` records, `junk` after the first `at` of them.
    fn with_junk(count: usize, at: usize, junk: &[u8]) -> Vec<u8> {
        let mut data = records(0, at);
        data.extend_from_slice(junk);
        data.extend(records(at, count - at));
        data
    }

    /// Both reads of `data` give the same lines; the chunked read's trace
    /// and its lines.
    fn same(data: &[u8], chunk: u64) -> (Trace, Vec<u8>) {
        let (seq, _, par, _, t) = both(data, chunk);
        assert_eq!(String::from_utf8_lossy(&par), String::from_utf8_lossy(&seq));
        (t, seq)
    }

    #[test]
    fn clean_file_uses_every_chunk_start() {
        let data = records(0, 80);
        let (seq, ok1, par, ok2, t) = both(&data, 700);
        assert!(ok1 && ok2);
        assert_eq!(String::from_utf8_lossy(&par), String::from_utf8_lossy(&seq));
        assert_eq!(seq.iter().filter(|&&b| b == b'\n').count(), 80);
        assert_eq!(t.sequential_runs, 0, "{t:?}");
        assert!(t.used >= 10, "{t:?}");
    }

    #[test]
    fn an_archived_warc_file_gives_false_starts_that_are_passed_over() {
        let mut data = records(0, 3);
        data.extend(record(100, &records(200, 30)));
        data.extend(records(3, 3));
        let (t, seq) = same(&data, 400);
        assert_eq!(seq.iter().filter(|&&b| b == b'\n').count(), 7);
        assert!(t.false_starts >= 3, "{t:?}");
    }

    #[test]
    fn damage_is_read_sequentially_and_chunks_used_again_after_it() {
        // Junk between records.
        let (t, _) = same(&with_junk(60, 20, b"junk that is not a record\r\n"), 500);
        assert!(t.sequential_runs >= 1, "{t:?}");
        assert!(t.used > t.chunks / 2, "{t:?}");
        // A Content-Length too large by 7.
        let mut data = records(0, 20);
        let mut bad = record(20, b"a body of some length");
        let at = bad.windows(4).position(|w| w == b": 21").unwrap();
        bad[at + 2..at + 4].copy_from_slice(b"28");
        data.extend(bad);
        data.extend(records(21, 40));
        let (t, _) = same(&data, 500);
        assert!(t.sequential_runs >= 1, "{t:?}");
        // A truncated last record.
        let mut data = records(0, 30);
        let last = record(30, &[b'z'; 300]);
        data.extend_from_slice(&last[..200]);
        let (t, seq) = same(&data, 500);
        assert!(seq.ends_with(b"true\n"));
        assert!(t.sequential_runs >= 1, "{t:?}");
    }

    #[test]
    fn strict_errors_stop_both_reads_alike() {
        let data = with_junk(40, 20, b"junk\r\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.warc");
        std::fs::write(&path, &data).unwrap();
        let name = path.to_str().unwrap();
        let g = Quiet;
        let opts = ReaderOptions::strict().file(name);
        let mut seq = Vec::new();
        let mut r = Reader::open_with(name, opts.clone()).unwrap();
        let e1 = sequential(
            &g,
            name,
            &Offsets,
            &mut r,
            &mut seq,
            &mut Progress::default(),
            |_| false,
        )
        .unwrap_err()
        .to_string();
        let mut par = Vec::new();
        let (res, _) = read(
            &g,
            name,
            Input::Path(std::path::Path::new(name)),
            &Offsets,
            &opts,
            Plan {
                len: data.len() as u64,
                chunk: 300,
                threads: 2,
            },
            &mut par,
        );
        assert_eq!(res.unwrap_err().to_string(), e1);
        assert_eq!(par, seq);
    }

    /// A source read at offsets: a window on a file, after 1000 bytes of
    /// something else (a WARC file stored in a ZIP), with damage; read in
    /// chunks it gives what one thread gives from it, with its offsets.
    #[test]
    fn a_window_read_at_offsets_reads_as_the_file() {
        let data = with_junk(60, 20, b"junk that is not a record\r\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.zip");
        let mut zip = vec![b'P'; 1000];
        zip.extend_from_slice(&data);
        zip.extend_from_slice(b"trailing central directory");
        std::fs::write(&path, &zip).unwrap();
        let f: Arc<dyn ReadAt> = Arc::new(File::open(&path).unwrap());
        let src: Arc<dyn ReadAt> = Arc::new(crate::io::Slice::new(f, 1000, data.len() as u64));
        let name = "z.zip#archive/t.warc";
        let opts = ReaderOptions::lenient().file(name);
        // One thread, as the sequential read opens the window.
        let d = Decoder::new_read_at(Arc::clone(&src), name, opts.decoder.clone()).unwrap();
        let mut r = Reader::from_source(d, opts.clone()).unwrap();
        let mut seq = Vec::new();
        let mut p = Progress::default();
        sequential(&G, name, &Offsets, &mut r, &mut seq, &mut p, |_| false).unwrap();
        assert_eq!(p.records, 60);
        assert!(plan_at(&*src, 1, Some(500)).is_none());
        let plan = plan_at(&*src, 3, Some(500)).unwrap();
        assert_eq!(plan.len, data.len() as u64);
        let mut par = Vec::new();
        let (res, t) = read(&G, name, Input::At(&src), &Offsets, &opts, plan, &mut par);
        assert_eq!(res.unwrap(), 60);
        assert_eq!(String::from_utf8_lossy(&par), String::from_utf8_lossy(&seq));
        assert!(t.used > t.chunks / 2 && t.sequential_runs >= 1, "{t:?}");
        // A compressed source is not planned.
        let gz = dir.path().join("t.warc.gz");
        let mut bytes = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        bytes.extend_from_slice(&data);
        std::fs::write(&gz, &bytes).unwrap();
        let gz: Arc<dyn ReadAt> = Arc::new(File::open(&gz).unwrap());
        assert!(plan_at(&*gz, 3, Some(500)).is_none());
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(chunk_size(1 << 30, 1, None), None);
        assert_eq!(chunk_size(MIN_FILE - 1, 4, None), None);
        assert_eq!(chunk_size(MIN_FILE - 1, 4, Some(100)), Some(100));
        assert_eq!(chunk_size(740 << 20, 2, None), Some(MAX_CHUNK));
        assert_eq!(chunk_size(64 << 20, 4, None), Some(MIN_CHUNK));
        assert_eq!(chunk_size(40 << 20, 2, None), Some(5 << 20));
        assert_eq!(chunk_size(0, 4, Some(1)), None);
        // The plan stays bounded whatever the knob says.
        assert_eq!(chunk_size(1 << 40, 2, Some(1)), Some(1 << 20));
    }
}
