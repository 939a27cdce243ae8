//! Archives where they live: objects in S3 (and S3-compatible stores),
//! Google Cloud Storage, Azure Blob Storage and on HTTP(S) servers, read as
//! seekable files through range requests and written by multipart upload.
//!
//! The format crate reads any `Read + Seek` source; this crate supplies one
//! for a URL, on Apache Arrow's `object_store` clients, so that the format
//! crate stays free of an HTTP stack and an async runtime.
//!
//! - [`Location::parse`] recognises `s3://BUCKET/KEY`, `gs://BUCKET/KEY`,
//!   `az://CONTAINER/KEY` (and `azure://`, `abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/KEY`,
//!   `https://ACCOUNT.blob.core.windows.net/CONTAINER/KEY`) and `http(s)://` URLs.
//! - [`open`] gives a [`RemoteFile`]: `Read + Seek`, its size known from the
//!   answer to its first range request, read through range requests with
//!   read-ahead.
//! - [`open_blocks`] gives a [`RemoteBlocks`]: the object read at explicit
//!   offsets by several threads at once (`warchest::io::ReadAt`), in blocks
//!   fetched concurrently ahead of a scan, for the parallel decoder.
//! - [`get_range`] fetches one byte range with exactly one request (when no
//!   fault forces a retry); [`open_range`] streams one.
//! - [`fetch_ranges`] fetches many ranges concurrently, handed back in order,
//!   neighbouring ranges of one object read with one request
//!   ([`fetch_ranges_with`] and [`FetchPlan`] say how).
//! - [`list`] lists a prefix or a `*` glob in the last component.
//! - [`create`] gives a [`RemoteWriter`]: the object appears only when
//!   [`RemoteWriter::finish`] completes; dropped unfinished, nothing appears.
//!
//! Every request is retried with exponential backoff on 5xx answers,
//! connection errors, stalls and short bodies, within a retry budget
//! ([`Options`]); an error names the URL and the byte offset, and an object
//! shorter than its size is an error, never a shorter archive.
//!
//! The blocking API runs on one Tokio runtime shared by the process
//! ([`runtime`]); it must not be called from inside an async task.

mod blocks;
mod coalesce;
mod file;
mod location;
mod plain;
mod request;
mod writer;

use std::io::{self, Write as _};
use std::sync::OnceLock;
use std::time::Duration;

pub use blocks::{
    AHEAD, AHEAD_BYTES, AHEAD_MAX_BYTES, BLOCK, BUDGET, BUDGET_MAX, RemoteBlocks, SEED_RATE,
    print_stats,
};
pub use coalesce::{
    DEFAULT_MAX_GAP, DEFAULT_MAX_REQUEST, DEFAULT_MEMORY, FetchPlan, FetchStats, fetch_ranges_with,
};
pub use file::{RangeReader, RemoteFile};
pub use location::{Location, Scheme, is_remote};
pub use request::{Listed, Problem, RemoteError, remote_error};
pub use writer::RemoteWriter;

use bytes::Bytes;

/// How requests are made: the retry budget, timeouts and read sizes.
///
/// [`Options::from_env`] reads the `WARCHEST_REMOTE_*` variables, which is
/// how the command line and the tests set them.
#[derive(Clone, Debug)]
pub struct Options {
    /// Retries of one request before its error is returned (the budget is
    /// per request: a long scan survives many separate faults).
    pub retries: u32,
    /// The first pause before a retry; doubled at each retry up to
    /// [`Options::max_backoff`].
    pub backoff: Duration,
    /// The longest pause between retries.
    pub max_backoff: Duration,
    /// How long a request may wait for its answer or for its next bytes
    /// before it counts as stalled (and is retried).
    pub timeout: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// The largest range one sequential read asks for (read-ahead starts
    /// at [`Options::min_chunk`] and doubles while reads go on as a scan,
    /// a skip forward into the read-ahead included, and the reader waits
    /// for its ranges).
    pub chunk: usize,
    /// The first range after a seek elsewhere.
    pub min_chunk: usize,
    /// The size of each part of a multipart upload (at least 5 MiB for S3).
    pub part_size: usize,
    /// Parts of one upload in flight at once.
    pub upload_concurrency: usize,
    /// The most a plain-HTTP connection reads at a time (hyper's
    /// `max_buf_size`, at least 16 KiB): a body's pieces, and the
    /// connection's buffer, stay under twice this (docs/remote.md, "The
    /// transport of plain-HTTP reads").
    pub read_buf: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            retries: 8,
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            chunk: 8 << 20,
            min_chunk: 1 << 20,
            part_size: 16 << 20,
            upload_concurrency: 4,
            read_buf: plain::READ_BUF,
        }
    }
}

impl Options {
    /// The defaults, changed by these environment variables when set:
    /// `WARCHEST_REMOTE_RETRIES` (count), `WARCHEST_REMOTE_BACKOFF_MS`,
    /// `WARCHEST_REMOTE_TIMEOUT` and `WARCHEST_REMOTE_CONNECT_TIMEOUT`
    /// (seconds, fractions allowed), `WARCHEST_REMOTE_CHUNK`,
    /// `WARCHEST_REMOTE_MIN_CHUNK` and `WARCHEST_REMOTE_PART_SIZE` (bytes),
    /// `WARCHEST_REMOTE_READ_BUF` (a byte count as the size flags read it:
    /// `256KiB`).
    /// A value that does not parse is ignored with a warning.
    pub fn from_env() -> Options {
        let mut o = Options::default();
        fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
            let v = std::env::var(name).ok()?;
            match v.trim().parse() {
                Ok(x) => Some(x),
                Err(_) => {
                    tracing::warn!("{name}={v:?} is not a valid value; ignored");
                    None
                }
            }
        }
        let secs = |name: &str| {
            var::<f64>(name)
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e6)
                .map(Duration::from_secs_f64)
        };
        if let Some(n) = var("WARCHEST_REMOTE_RETRIES") {
            o.retries = n;
        }
        if let Some(ms) = var::<u64>("WARCHEST_REMOTE_BACKOFF_MS") {
            o.backoff = Duration::from_millis(ms);
        }
        if let Some(d) = secs("WARCHEST_REMOTE_TIMEOUT") {
            o.timeout = d;
        }
        if let Some(d) = secs("WARCHEST_REMOTE_CONNECT_TIMEOUT") {
            o.connect_timeout = d;
        }
        if let Some(n) = var::<usize>("WARCHEST_REMOTE_CHUNK") {
            o.chunk = n.clamp(4096, 1 << 30);
        }
        if let Some(n) = var::<usize>("WARCHEST_REMOTE_MIN_CHUNK") {
            o.min_chunk = n.clamp(4096, 1 << 30);
        }
        if let Some(n) = var::<usize>("WARCHEST_REMOTE_PART_SIZE") {
            o.part_size = n.clamp(5 << 20, 1 << 30);
        }
        if let Some(n) = size_knob("WARCHEST_REMOTE_READ_BUF") {
            o.read_buf = usize::try_from(n).unwrap_or(usize::MAX);
        }
        o.min_chunk = o.min_chunk.min(o.chunk);
        o
    }

    /// The pause before retry number `attempt` (0 for the first retry):
    /// exponential, capped, with up to a quarter added at random so that
    /// concurrent readers do not retry in step.
    pub(crate) fn backoff_for(&self, attempt: u32) -> Duration {
        let base = self
            .backoff
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_backoff);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        base + base / 4 * (nanos % 1000) / 1000
    }
}

/// The Tokio runtime every blocking call of this crate runs on: ONE worker
/// thread. Requests wait on the network, not on the CPU, so the read-ahead's
/// several requests in flight all fit on it; a second worker only added a
/// malloc arena, a thread and wake-ups (docs/remote.md, "The runtime").
/// Blocking threads (name resolution) are few and made only when asked for.
/// Made at first use, together with the TLS crypto provider (ring).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        install_crypto();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            .thread_name("warchest-remote")
            .enable_all()
            .build()
            // Without a runtime nothing remote can work; this fails only
            // when the process cannot make threads at all.
            .expect("cannot start the runtime for remote archives")
    })
}

/// Installs ring as the process's TLS crypto provider, once: reqwest is
/// built without one of its own (its default, aws-lc-rs, needs cmake).
/// Another crate may have installed one already, which is then kept.
pub(crate) fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Opens `url` for reading: the request for its first range gives its size
/// ([`RemoteFile::open`]; a HEAD when that answer does not), then range
/// requests as it is read.
pub fn open(url: &str) -> io::Result<RemoteFile> {
    RemoteFile::open(Location::parse(url)?, Options::from_env())
}

/// Opens `url` for reading at explicit offsets by several threads (one
/// range request per block, the first one's answer giving the size:
/// [`RemoteBlocks::open_with`]; a HEAD when that fails). The block
/// size is `WARCHEST_REMOTE_BLOCK` bytes when set (at least 4 KiB), else
/// [`BLOCK`]. The bytes of blocks held at most, all threads together,
/// start at [`BUDGET`] and grow while the readers wait for fetches, up to
/// `WARCHEST_REMOTE_BUDGET_MAX` when set, else [`BUDGET_MAX`] (unset, at
/// least two blocks to start and, at the cap, a reader's block, the one
/// before and its read-ahead, so that large blocks still get read ahead:
/// [`RemoteBlocks::default_budget`]). Each reader reads
/// [`RemoteBlocks::ahead_for`] blocks ahead ([`AHEAD_BYTES`] of them) at
/// first, deepening while the latency is the limit up to
/// [`RemoteBlocks::ahead_max_for`] ([`AHEAD_MAX_BYTES`]; one depth for
/// all the readers). `WARCHEST_REMOTE_BUDGET` sets where the budget
/// starts (at least one block); set alone, it is a fixed budget that does
/// not grow, and the read-ahead's depth is fixed too. The three take a
/// byte count as the command's size flags do ([`warchest::size`]): `K`,
/// `M`, `G` are powers of 1000 (`8M` is 8,000,000 bytes), `KiB`, `MiB`,
/// `GiB` powers of 1024 (`8MiB` is 8,388,608); one that cannot be read is
/// said once on stderr, with why, and the default used.
pub fn open_blocks(url: &str) -> io::Result<RemoteBlocks> {
    let knob = size_knob;
    let block = knob("WARCHEST_REMOTE_BLOCK").map_or(BLOCK, |v| v as usize);
    let (budget, max) = (
        knob("WARCHEST_REMOTE_BUDGET"),
        knob("WARCHEST_REMOTE_BUDGET_MAX"),
    );
    RemoteBlocks::open_with(Location::parse(url)?, Options::from_env(), |b| {
        set_up_blocks(b, block, budget, max)
    })
}

/// `b` set up as [`open_blocks`] sets it up: blocks of `block` bytes, the
/// budget from `WARCHEST_REMOTE_BUDGET` and `WARCHEST_REMOTE_BUDGET_MAX`
/// (`budget`, `max`) or the defaults. A fixed budget (`budget` alone)
/// keeps the read-ahead's depth fixed too: it asks for the bytes held
/// not to move, and a depth grown past what they hold would only make the
/// readers' read-aheads take each other's room.
fn set_up_blocks(
    b: RemoteBlocks,
    block: usize,
    budget: Option<u64>,
    max: Option<u64>,
) -> RemoteBlocks {
    let (start, cap) = RemoteBlocks::default_budget(block as u64);
    // `with_blocks` sets a fixed depth: the depth's cap comes after it.
    let b = b
        .with_blocks(block, RemoteBlocks::ahead_for(block as u64))
        .with_budget(budget.unwrap_or(start));
    match (budget, max) {
        (Some(_), None) => b,
        (_, max) => b
            .with_budget_max(max.unwrap_or(cap))
            .with_ahead_max(RemoteBlocks::ahead_max_for(block as u64)),
    }
}

/// The byte count in the environment variable `name`
/// ([`warchest::size::parse_size`], as the command's size flags read it);
/// `None` when unset or empty, and when it cannot be read, which is said
/// once a process on stderr (the default is used).
fn size_knob(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    match size_knob_value(&v) {
        Ok(got) => got,
        Err(e) => {
            if first_warning(name) {
                let _ = writeln!(
                    io::stderr(),
                    "warchest: {name}={v:?} is not a byte count (such as 8388608, 8MiB or 8MB): {e}; the default is used"
                );
            }
            None
        }
    }
}

/// A size knob's value: `None` when empty (unset), else the byte count.
fn size_knob_value(v: &str) -> Result<Option<u64>, warchest::size::ParseSizeError> {
    if v.trim().is_empty() {
        return Ok(None);
    }
    warchest::size::parse_size(v).map(Some)
}

/// Whether this is the first warning about `name` in this process.
fn first_warning(name: &str) -> bool {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut w = WARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if w.iter().any(|n| n == name) {
        return false;
    }
    w.push(name.to_owned());
    true
}

/// The size of the object at `url` (one HEAD request).
pub fn size(url: &str) -> io::Result<u64> {
    size_of(&Location::parse(url)?)
}

/// [`size`] of a parsed location.
fn size_of(loc: &Location) -> io::Result<u64> {
    runtime().block_on(request::head(loc, &Options::from_env()))
}

/// The first range of a read whose extent is small and not known
/// beforehand (a ZIP's central directory and local headers, one record
/// opened by offset): 64 KiB, growing while the reading runs on.
pub const SMALL_FIRST_RANGE: usize = 64 << 10;

/// The object at `url` read as a file for small reads at scattered
/// offsets: its ranges start at [`SMALL_FIRST_RANGE`], not at the MiB a
/// scan starts with. `size`: known already (a listing), or `None` for one
/// HEAD request.
///
/// # Errors
/// The URL does not parse, or its size cannot be had.
pub fn open_small(url: &str, size: Option<u64>) -> io::Result<RemoteFile> {
    let loc = Location::parse(url)?;
    let size = match size {
        Some(s) => s,
        None => size_of(&loc)?,
    };
    let mut opts = Options::from_env();
    opts.min_chunk = opts.min_chunk.min(SMALL_FIRST_RANGE);
    Ok(RemoteFile::open_sized(loc, opts, size))
}

/// The `len` bytes at `offset` of the object at `url`, with exactly one
/// request unless a fault makes it retry. A range past the object's end is
/// an error naming the URL and offset.
pub fn get_range(url: &str, offset: u64, len: u64) -> io::Result<Bytes> {
    let loc = Location::parse(url)?;
    let opts = Options::from_env();
    runtime().block_on(request::get_range(&loc, &opts, offset, len))
}

/// [`get_range`] for a parsed location, with `opts`.
pub fn get_range_with(loc: &Location, opts: &Options, offset: u64, len: u64) -> io::Result<Bytes> {
    runtime().block_on(request::get_range(loc, opts, offset, len))
}

/// [`list`] for a parsed location, with `opts`.
pub fn list_with(loc: &Location, opts: &Options) -> io::Result<Vec<(String, u64)>> {
    Ok(unversioned(runtime().block_on(request::list(loc, opts))?))
}

fn unversioned(all: Vec<Listed>) -> Vec<(String, u64)> {
    all.into_iter().map(|l| (l.url, l.size)).collect()
}

/// A reader over the `len` bytes at `offset` of the object at `url`,
/// streamed from one request (a fault resumes where it stopped).
pub fn open_range(url: &str, offset: u64, len: u64) -> io::Result<RangeReader> {
    Ok(RangeReader::new(
        Location::parse(url)?,
        Options::from_env(),
        offset,
        len,
    ))
}

/// One range to fetch with [`fetch_ranges`].
#[derive(Clone, Debug)]
pub struct RangeRequest {
    /// The object.
    pub location: Location,
    /// The first byte.
    pub offset: u64,
    /// How many bytes.
    pub len: u64,
}

/// Fetches `requests` with at most `concurrency` requests in flight,
/// handing each result to `each` in the order of `requests` (with its
/// index); ranges of one object less than [`DEFAULT_MAX_GAP`] apart are read
/// with one request. A range that cannot be fetched is handed over as its
/// error and the rest go on; an error returned by `each` stops the fetch
/// and is returned. Memory is bounded by [`DEFAULT_MEMORY`]. See
/// [`fetch_ranges_with`].
pub fn fetch_ranges<I, F>(requests: I, concurrency: usize, each: F) -> io::Result<()>
where
    I: IntoIterator<Item = RangeRequest>,
    F: FnMut(usize, io::Result<Bytes>) -> io::Result<()>,
{
    let plan = FetchPlan {
        concurrency,
        ..FetchPlan::default()
    };
    fetch_ranges_with(requests, &plan, &Options::from_env(), each).map(|_| ())
}

/// The objects at `url` with their sizes, sorted by URL: every object under
/// a prefix that ends with `/`; the objects matching a last component with
/// `*` or `?` (a `*` does not cross a `/`); otherwise the object itself,
/// or, when there is none, every object under `url/`. HTTP(S) servers
/// cannot be listed: an `http(s)://` URL is one object.
pub fn list(url: &str) -> io::Result<Vec<(String, u64)>> {
    Ok(unversioned(list_versions(url)?))
}

/// [`list`], each object with its version ([`Listed::version`]: its ETag
/// or Last-Modified), for telling an object replaced by another of the
/// same size (a listing's entries carry them; an `http(s)://` URL's come
/// from its HEAD).
pub fn list_versions(url: &str) -> io::Result<Vec<Listed>> {
    let loc = Location::parse(url)?;
    let opts = Options::from_env();
    runtime().block_on(request::list(&loc, &opts))
}

/// Whether the object `url` is one the glob URL `glob` names (its last
/// component has a `*`, as [`list`] takes it): the same directory, and a
/// last component the pattern matches. What a listing of `glob` that no
/// longer gives `url` says is gone.
pub fn glob_names(glob: &str, url: &str) -> bool {
    let (Some((gdir, pattern)), Some((dir, name))) = (glob.rsplit_once('/'), url.rsplit_once('/'))
    else {
        return false;
    };
    pattern.contains('*') && gdir == dir && location::glob_match(pattern, name)
}

/// Creates the object at `url` for writing. It appears only when
/// [`RemoteWriter::finish`] succeeds.
pub fn create(url: &str) -> io::Result<RemoteWriter> {
    RemoteWriter::new(Location::parse(url)?, Options::from_env())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_names_the_objects_of_its_directory_it_matches() {
        let g = "s3://b/crawl/*.warc.gz";
        assert!(glob_names(g, "s3://b/crawl/a.warc.gz"));
        assert!(!glob_names(g, "s3://b/crawl/a.warc"));
        assert!(!glob_names(g, "s3://b/crawl/sub/a.warc.gz"));
        assert!(!glob_names(g, "s3://b/other/a.warc.gz"));
        // A prefix or an object is not a glob.
        assert!(!glob_names("s3://b/crawl/", "s3://b/crawl/a.warc.gz"));
        assert!(!glob_names(
            "s3://b/crawl/a.warc.gz",
            "s3://b/crawl/a.warc.gz"
        ));
    }

    /// An unreadable size is warned about once a variable
    /// (`first_warning`); the sizes themselves are the format crate's
    /// (`warchest::size`, tested there; the CLI's test sets the variables).
    #[test]
    fn an_unreadable_size_knob_is_warned_about_once() {
        assert!(first_warning("WARCHEST_REMOTE_TEST_KNOB"));
        assert!(!first_warning("WARCHEST_REMOTE_TEST_KNOB"));
    }

    /// The knobs' set-up: by default the budget and the read-ahead grow
    /// (4 to 12 MiB, 8 to 16 blocks of 1 MiB); a budget set alone is fixed
    /// and so is the depth; set with a cap, both grow again.
    #[test]
    fn a_fixed_budget_keeps_a_fixed_read_ahead() {
        const M: u64 = 1 << 20;
        let loc = Location::parse("http://127.0.0.1:9/x").unwrap();
        let sized = || RemoteBlocks::open_sized(loc.clone(), Options::default(), 100 * M);
        let got = |b: RemoteBlocks| {
            (
                b.budget(),
                b.budget_max(),
                b.read_ahead(),
                b.read_ahead_max(),
            )
        };
        let b = set_up_blocks(sized(), BLOCK, None, None);
        assert_eq!(got(b), (4 * M, 12 * M, 8, 16));
        let b = set_up_blocks(sized(), BLOCK, Some(6 * M), None);
        assert_eq!(got(b), (6 * M, 6 * M, 8, 8));
        let b = set_up_blocks(sized(), BLOCK, Some(6 * M), Some(20 * M));
        assert_eq!(got(b), (6 * M, 20 * M, 8, 16));
        let b = set_up_blocks(sized(), 2 << 20, None, Some(20 * M));
        assert_eq!(got(b), (4 * M, 20 * M, 4, 8));
    }

    /// A knob's value reads as the command's sizes do: `M` is 1,000,000
    /// bytes, `MiB` 1,048,576; empty is unset; a bad one says why.
    #[test]
    fn size_knob_values_read_as_sizes() {
        assert_eq!(size_knob_value("1M"), Ok(Some(1_000_000)));
        assert_eq!(size_knob_value("1MiB"), Ok(Some(1_048_576)));
        assert_eq!(size_knob_value("8388608"), Ok(Some(8 << 20)));
        assert_eq!(size_knob_value(" "), Ok(None));
        assert_eq!(size_knob_value(""), Ok(None));
        let e = size_knob_value("8 megabytes").unwrap_err().to_string();
        assert!(e.contains("unit"), "{e}");
    }
}
