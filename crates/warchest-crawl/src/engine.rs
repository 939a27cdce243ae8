//! The crawl engine: seeds into the frontier, workers taking URIs from it
//! (one per host at a time, or `host-parallel`), each fetched with the capture crate's
//! wire-exact HTTP/1.0 client and recorded through its recorder (rotating
//! WARC files), links extracted, scoped and queued again.
//!
//! Workers are OS threads (`workers`, default 8), as capture's are: the
//! client is blocking, a crawl is bound by politeness and the network,
//! and a thread per connection keeps the fetch path plain. The frontier
//! holds a host busy while one of its URIs is in flight, so there is one
//! connection per host (`host-parallel` N: up to N).
//!
//! A crawl directory holds everything (`--resume DIR` needs nothing else):
//!
//! ```text
//! crawl.toml          the configuration (flags laid over --config)
//! frontier.redb       queues, seen set, in-flight, counters
//! frontier.journal    its changes since the last checkpoint (while running)
//! dedupe.redb         payload digests and URL validators (revisits)
//! dedupe.journal      its entries since the last checkpoint (while running)
//! archive/            WARC files (Annex B names)
//! indexes/index.cdxj  CDXJ of each closed WARC file
//! pages/pages.jsonl   the pages: seeds and link targets (docs/crawl.md)
//! logs/crawl.log      Heritrix's crawl.log
//! logs/scope.log      rejected URIs and the rule that rejected them
//! ```

use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use url::Url;
use warchest::write::{CaptureLimits, RotatingOptions};
use warchest_capture::client::{self as chttp, FetchOptions, ReadOptions};
use warchest_capture::{CaptureError, HttpRecord, Kind, Recorder, dns, tls};
use warchest_ops::dedupe::DigestIndex;
use warchest_ops::revisit::RevisitProfile;

use crate::config::{CrawlConfig, OutputFormat, RobotsMode, SAVED_CONFIG};
use crate::frontier::{self, Frontier, Lease, Next};
use crate::links::{Extracted, Extractor};
use crate::render::PageRenderer;
use crate::robots::{self, Robots, RobotsCache, RobotsPolicy, RobotsStep, robots_url};
use crate::scope::Scope;
use crate::sidecar::{LineLog, LogLine, PAGES_HEADER, iso_time};
use crate::uri::{CrawlUri, Hop};

/// Why a crawl could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrawlError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The scope rules are unusable.
    #[error("scope: {0}")]
    Scope(String),
    /// The frontier failed.
    #[error(transparent)]
    Frontier(#[from] frontier::FrontierError),
    /// Writing WARC files or the dedupe index failed.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A file of the crawl directory.
    #[error("{0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    /// The WARC library.
    #[error(transparent)]
    Warc(#[from] warchest::Error),
    /// Closing the WARC files at the end of a run failed; the files that
    /// were closed (by the other writers, or by rotation) are indexed all
    /// the same, and named here.
    #[error(
        "closing the WARC files failed: {error}; closed and indexed: {}; closed, not indexed: {}",
        names(.closed),
        names(.unindexed)
    )]
    Closing {
        /// The first error (any further one is logged).
        error: Box<CrawlError>,
        /// The files closed this run and indexed.
        closed: Vec<PathBuf>,
        /// The files closed this run whose indexing failed (each logged).
        unindexed: Vec<PathBuf>,
    },
}

/// The files of a [`CrawlError::Closing`], kept to one short line: a long
/// run closes hundreds (all of them are in `indexed.txt` and the log).
fn names(files: &[PathBuf]) -> String {
    const SHOWN: usize = 8;
    if files.is_empty() {
        return "none".into();
    }
    let cut = if files.len() > SHOWN { 3 } else { files.len() };
    let mut s = files[..cut]
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if cut < files.len() {
        s.push_str(&format!(" and {} more", files.len() - cut));
    }
    s
}

/// What reading the hand-off can fail on: the hand-off itself (its
/// directory or object store), or the frontier the URIs go to.
#[derive(Debug)]
enum Handed {
    Io(std::io::Error),
    Frontier(frontier::FrontierError),
}

impl From<std::io::Error> for Handed {
    fn from(e: std::io::Error) -> Handed {
        Handed::Io(e)
    }
}

/// [`Recorder::sync_data`], then the Web InfoMall file's: the
/// checkpoint's sync of the output files.
fn sync_warc(
    rec: &Recorder,
    im: Option<&crate::infomall::InfomallFiles>,
) -> Result<(), CaptureError> {
    #[cfg(test)]
    if tests::FAIL_HANDLE.with(|f| f.replace(false)) {
        return Err(CaptureError::Io(
            "a WARC file's handle".into(),
            std::io::Error::from_raw_os_error(24),
        ));
    }
    rec.sync_data()?;
    if let Some(im) = im {
        im.sync_data()?;
    }
    #[cfg(test)]
    tests::ON_SYNC.with(|f| {
        if let Some(f) = f.borrow_mut().as_mut() {
            f();
        }
    });
    Ok(())
}

fn io_at(p: &Path) -> impl FnOnce(std::io::Error) -> CrawlError + '_ {
    move |e| CrawlError::Io(p.to_path_buf(), e)
}

/// Lines the side logs (scope.log, progress.log) could not take. They
/// are no record of what was archived, so a full disk there does not stop
/// the crawl: each log's failures are counted, the first warned of, and
/// the count is in the summary's notes.
#[derive(Debug, Default)]
struct SideLogLoss(Mutex<Vec<(PathBuf, u64, String)>>);

impl SideLogLoss {
    fn note(&self, path: &Path, e: &std::io::Error) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match v.iter_mut().find(|(p, ..)| p == path) {
            Some((_, n, _)) => *n += 1,
            None => {
                tracing::warn!(
                    "{}: {e} (its lines are lost until it can be written; counted in the summary)",
                    path.display()
                );
                v.push((path.to_path_buf(), 1, e.to_string()));
            }
        }
    }

    /// One note a log that lost lines.
    fn notes(&self) -> Vec<String> {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.iter()
            .map(|(p, n, e)| {
                format!(
                    "{}: {n} lines could not be written (the first: {e})",
                    p.display()
                )
            })
            .collect()
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// Nothing left to fetch.
    Finished,
    /// Stopped by a signal (or the caller): resumable.
    Interrupted,
    /// A budget (pages, bytes, time) was reached: resumable with a larger one.
    Budget,
}

/// What a run did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    /// Why it ended.
    pub ending: Ending,
    /// The frontier's counters at the end.
    pub counts: frontier::Counts,
    /// WARC files closed by this run.
    pub files: Vec<PathBuf>,
    /// URIs put back in their queues when the run began (in flight when
    /// the last run was killed).
    pub requeued: u64,
    /// `.open` files of an earlier run closed when this one began, and
    /// what their recovery said.
    pub recovered: Vec<String>,
    /// What opening the crawl read besides (CDXJ dedupe indexes loaded).
    pub notes: Vec<String>,
    /// The frontier's journal was damaged in its middle and whole changes
    /// after the damage were discarded (its note says how many): URIs
    /// queued or finished may be lost.
    pub journal_lost: bool,
    /// WARC files whose CDXJ this run made from their records as they
    /// were written; the others it indexed were read again.
    pub indexed_as_written: u64,
    /// URIs this run whose link extraction stopped before the payload's
    /// end (crawl.log's `linksStopped:` annotation).
    pub links_stopped: u64,
    /// Links this run left out over the bounds (crawl.log's `dol:N`).
    pub links_dropped: u64,
    /// With a browser: the exchanges its recording proxy did not record
    /// (refused by the crawl's scope, or lost).
    pub unrecorded: Option<warchest_capture::proxy::UnrecordedSummary>,
}

/// Live counters for progress displays and the status server.
#[derive(Debug, Default)]
pub struct Live {
    /// URIs finished this run.
    pub done: AtomicU64,
    /// Of which failed.
    pub failed: AtomicU64,
    /// Pages this run.
    pub pages: AtomicU64,
    /// Bytes received this run.
    pub bytes: AtomicU64,
    /// Workers fetching now (hosts active).
    pub active: AtomicU64,
    /// URIs whose link extraction stopped early.
    pub links_stopped: AtomicU64,
    /// Links left out over the bounds.
    pub links_dropped: AtomicU64,
}

/// A crawl, opened on its directory.
pub struct Crawl {
    dir: PathBuf,
    cfg: CrawlConfig,
    frontier: Frontier,
    recorder: Arc<Recorder>,
    /// `format = infomall`: responses go here instead of the recorder.
    infomall: Option<Arc<crate::infomall::InfomallFiles>>,
    /// Pages loaded in a browser (`--browser`), when set.
    renderer: Option<Box<dyn PageRenderer>>,
    /// URLs the browser fetched this run, for URIs queued before it did
    /// (those queued later are kept out by the frontier's seen set).
    browser_fetched: Mutex<HashSet<String>>,
    resolver: dns::Resolver,
    resolver_opts: dns::ResolverOptions,
    fetch: FetchOptions,
    scope: Arc<Scope>,
    robots: Mutex<RobotsCache>,
    /// robots.txt URLs being fetched now: with `host-parallel` above one,
    /// the other workers of a host wait for that one fetch.
    robots_fetching: (Mutex<HashSet<String>>, std::sync::Condvar),
    /// Workers waiting now for another worker's robots.txt fetch.
    robots_waiting: std::sync::atomic::AtomicUsize,
    robots_policy: RobotsPolicy,
    crawl_log: LineLog,
    scope_log: LineLog,
    /// Lines scope.log and progress.log could not take.
    side_lost: SideLogLoss,
    /// The exclusion file's last reread error (none: its last reread
    /// worked), and the errors warned of (each once).
    exclusions_error: Mutex<(Option<String>, HashSet<String>)>,
    pages: LineLog,
    cdxj: LineLog,
    indexed: Mutex<Vec<PathBuf>>,
    /// The CDXJ rows of the files being written (written.rs).
    written: Arc<crate::written::WrittenRows>,
    /// Files indexed from `written`.
    indexed_as_written: AtomicU64,
    seeds: Vec<Url>,
    /// Connections kept open between a host's fetches (keep-alive).
    conns: KeptConns,
    stop: std::sync::Arc<AtomicBool>,
    budget_hit: AtomicBool,
    started: Instant,
    requeued: u64,
    recovered: Vec<String>,
    notes: Vec<String>,
    shard: Option<(u32, u32)>,
    /// The hand-off to and from the other shards (`shard = "K/N"`).
    handoff: Option<crate::shard::Handoff>,
    /// The status server's socket, bound when the crawl opens.
    status: Mutex<Option<std::net::TcpListener>>,
    /// Where the status server listens.
    pub status_addr: Option<std::net::SocketAddr>,
    /// Counters of this run.
    pub live: Live,
}

/// One line of progress: queued, done, failed, pages/s, bytes/s, hosts
/// active, and an ETA when a page budget is known. When the frontier's
/// counters cannot be read the line says so, with this run's own counts,
/// rather than show zeros.
pub fn progress_line(c: &Crawl, since: Instant, max_pages: u64) -> String {
    let secs = since.elapsed().as_secs_f64().max(0.001);
    let n = match c.counts() {
        Ok(n) => n,
        Err(e) => {
            return format!(
                "frontier counters unreadable ({e}); this run: done {} failed {} pages {} hosts active {}",
                c.live.done.load(Ordering::Relaxed),
                c.live.failed.load(Ordering::Relaxed),
                c.live.pages.load(Ordering::Relaxed),
                c.live.active.load(Ordering::Relaxed)
            );
        }
    };
    let pages = c.live.pages.load(Ordering::Relaxed);
    let rate = pages as f64 / secs;
    let bps = c.live.bytes.load(Ordering::Relaxed) as f64 / secs;
    let mut line = format!(
        "queued {} done {} failed {} pages {} ({:.1}/s) {:.0} KB/s hosts active {}",
        n.queued,
        n.done,
        n.failed,
        n.pages,
        rate,
        bps / 1000.0,
        c.live.active.load(Ordering::Relaxed)
    );
    if max_pages > 0 && rate > 0.0 {
        let left = max_pages.saturating_sub(n.pages) as f64 / rate;
        line.push_str(&format!(" ETA {}s", left.round() as u64));
    }
    line
}

/// The files of a crawl directory.
pub fn archive_dir(dir: &Path) -> PathBuf {
    dir.join("archive")
}

/// Closes `.open` WARC files an earlier run left (killed): the intact
/// records are written under the final name, a cut last record dropped
/// and reported. Returns one line per file.
fn close_open_files(archive: &Path) -> Result<Vec<String>, CrawlError> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(archive) else {
        return Ok(out);
    };
    let mut opens: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "open"))
        .collect();
    opens.sort();
    for p in opens {
        let fin = p.with_extension("");
        // Killed between creating the file and flushing its first records:
        // nothing whole was written (the URIs in flight go back to their
        // queues), so there is nothing to keep. An empty file left under
        // the final name would fail every reader ("no record").
        let len = std::fs::metadata(&p).map_err(io_at(&p))?.len();
        if len == 0 {
            std::fs::remove_file(&p).map_err(io_at(&p))?;
            out.push(format!("{}: empty, removed", p.display()));
            continue;
        }
        let f = std::fs::File::create(&fin).map_err(io_at(&fin))?;
        // Records compressed as the writer compressed them (one gzip
        // member each for `.warc.gz`).
        let gz = fin.to_string_lossy().ends_with(".gz");
        let opts = warchest_ops::recover::RecoverOptions {
            compression: if gz {
                warchest_ops::recover::OutputCompression::Gzip
            } else {
                warchest_ops::recover::OutputCompression::None
            },
            ..Default::default()
        };
        let report = match warchest_ops::recover::recover(&p, std::io::BufWriter::new(f), &opts) {
            Ok(r) => r,
            Err(e) => {
                // No record start at all (a few bytes of a first gzip
                // header): nothing whole to keep.
                remove_cut(&p, &fin)?;
                out.push(format!("{}: no whole record, removed ({e})", p.display()));
                continue;
            }
        };
        if report.records_written == 0 {
            // Only a cut first record (the warcinfo, or the first
            // response): its URI was in flight and is fetched again.
            remove_cut(&p, &fin)?;
            out.push(format!(
                "{}: no whole record ({} cut), removed",
                p.display(),
                report.records_lost
            ));
            continue;
        }
        let line = if report.is_clean() {
            format!("{}: closed, every record whole", fin.display())
        } else {
            format!(
                "{}: closed; {} records kept, {} damaged records dropped ({} damaged ranges: a cut record at its end)",
                fin.display(),
                report.records_written,
                report.records_lost,
                report.ranges.len()
            )
        };
        std::fs::remove_file(&p).map_err(io_at(&p))?;
        out.push(line);
    }
    Ok(out)
}

/// A host's connections left open by its last fetches, at most `cap` in
/// all (one a host unless `host-parallel` lets more fetches at once); a
/// connection idle longer than [`KEPT_IDLE`] is closed, not used.
struct KeptConns {
    /// The connections by host key, and how many in all.
    by_host: Mutex<(HashMap<String, Vec<chttp::Kept>>, usize)>,
    cap: usize,
}

/// The longest a kept connection is used after (servers close idle ones
/// after 5 s to a few minutes; one closed meanwhile is replaced).
const KEPT_IDLE: Duration = Duration::from_secs(4);

impl KeptConns {
    fn new(cap: usize) -> KeptConns {
        KeptConns {
            by_host: Mutex::new((HashMap::new(), 0)),
            cap,
        }
    }

    fn take(&self, host: &str) -> Option<chttp::Kept> {
        let mut g = self.by_host.lock().unwrap_or_else(|p| p.into_inner());
        let (m, n) = &mut *g;
        let v = m.get_mut(host)?;
        let k = v.pop();
        if v.is_empty() {
            m.remove(host);
        }
        *n -= usize::from(k.is_some());
        k.filter(|k| k.idle() < KEPT_IDLE)
    }

    fn put(&self, host: String, k: chttp::Kept) {
        let mut g = self.by_host.lock().unwrap_or_else(|p| p.into_inner());
        let (m, n) = &mut *g;
        if *n >= self.cap {
            // Full: the idle ones go first; still full, this one closes.
            m.retain(|_, v| {
                v.retain(|k| k.idle() < KEPT_IDLE);
                !v.is_empty()
            });
            *n = m.values().map(Vec::len).sum();
            if *n >= self.cap {
                return;
            }
        }
        m.entry(host).or_default().push(k);
        *n += 1;
    }
}

/// Makes the database `path` when missing: `make` builds it under a
/// temporary name, which is renamed when whole
/// ([`warchest::write::atomic::commit_path`]: synced first, the directory
/// after). A kill while a database
/// file was being created (or copied) would otherwise leave one that does
/// not open.
fn create_whole(
    path: &Path,
    make: impl FnOnce(&Path) -> Result<(), CrawlError>,
) -> Result<(), CrawlError> {
    if path.exists() {
        return Ok(());
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    if tmp.exists() {
        std::fs::remove_file(&tmp).map_err(io_at(&tmp))?;
    }
    make(&tmp)?;
    // Synced, renamed and the name synced: a power loss after this must
    // not take the name back (and with it the file on resume).
    warchest::write::atomic::commit_path(&tmp, path)?;
    Ok(())
}

/// Writes the configuration `--resume` reads: to a temporary file, synced,
/// then renamed over `crawl.toml` and the directory synced
/// ([`warchest::write::atomic::write_whole`]), so a kill (or a power loss)
/// at any moment leaves the old one or the new one whole (a kill while it was written in place once
/// left it empty, and the next run a crawl with no seeds). Unchanged, it
/// is not written at all.
fn save_config(dir: &Path, saved: &str) -> Result<(), CrawlError> {
    let path = dir.join(SAVED_CONFIG);
    if std::fs::read_to_string(&path).is_ok_and(|old| old == saved) {
        return Ok(());
    }
    let tmp = dir.join(format!("{SAVED_CONFIG}.tmp"));
    warchest::write::atomic::write_whole(&path, &tmp, saved.as_bytes())?;
    Ok(())
}

/// The list of WARC files indexed, each with the CDXJ's length after it.
const INDEXED: &str = "indexes/indexed.txt";

/// Cuts `indexes/index.cdxj` back to the length recorded after the last
/// file listed in `indexes/indexed.txt`: lines beyond it are of a file
/// whose indexing a kill interrupted, indexed again on this open. (A list
/// written before lengths were recorded is left as it is.)
fn repair_index(dir: &Path) -> Result<(), CrawlError> {
    let listed = dir.join(INDEXED);
    let cdxj = dir.join("indexes/index.cdxj");
    // A torn last line (no newline) is the kill's: its file is indexed again.
    crate::sidecar::cut_torn_line(&listed).map_err(io_at(&listed))?;
    let Ok(text) = std::fs::read_to_string(&listed) else {
        // Nothing indexed yet: whatever the CDXJ holds is a cut run's.
        if std::fs::metadata(&cdxj).is_ok_and(|m| m.len() > 0) {
            truncate(&cdxj, 0)?;
        }
        return Ok(());
    };
    let last = text.lines().next_back();
    let end = match last {
        None => Some(0),
        Some(l) => l.rsplit_once('\t').and_then(|(_, n)| n.parse::<u64>().ok()),
    };
    if let Some(end) = end
        && std::fs::metadata(&cdxj).is_ok_and(|m| m.len() > end)
    {
        truncate(&cdxj, end)?;
    }
    Ok(())
}

fn truncate(p: &Path, len: u64) -> Result<(), CrawlError> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .and_then(|f| f.set_len(len))
        .map_err(io_at(p))
}

/// Removes a killed run's `.open` file that held no whole record, and
/// what recovering it began under the final name.
fn remove_cut(open: &Path, fin: &Path) -> Result<(), CrawlError> {
    std::fs::remove_file(fin).map_err(io_at(fin))?;
    std::fs::remove_file(open).map_err(io_at(open))
}

impl Crawl {
    /// Opens the crawl in `dir` with `cfg` (a new crawl saves `cfg` there;
    /// a resumed one passes the saved one). Closes `.open` files a killed
    /// run left, indexes WARC files not indexed yet, and puts URIs left in
    /// flight back in their queues.
    ///
    /// # Errors
    /// The directory, frontier, index or configuration is unusable.
    pub fn open(
        dir: &Path,
        cfg: CrawlConfig,
        saved: &str,
        stop: std::sync::Arc<AtomicBool>,
    ) -> Result<Crawl, CrawlError> {
        std::fs::create_dir_all(dir).map_err(io_at(dir))?;
        save_config(dir, saved)?;
        let e = &cfg.engine;
        if e.format == OutputFormat::Infomall && (e.recrawl.is_some() || e.dedupe_index.is_some()) {
            return Err(crate::config::ConfigError(
                "format = infomall has no revisit records: it cannot be given recrawl or dedupe-index".into(),
            )
            .into());
        }
        // The browser's traffic is recorded as WARC request and response
        // records by the proxy's recorder: mixed into a Web InfoMall crawl
        // it would be a second format in one directory.
        if e.format == OutputFormat::Infomall && cfg.render.browser {
            return Err(crate::config::ConfigError(
                "format = infomall cannot be given browser: the browser's traffic is recorded as WARC".into(),
            )
            .into());
        }
        // `wacz` packs the crawl's WARC files: a Web InfoMall crawl has
        // none with its responses, so its WACZ would list no capture.
        if e.format == OutputFormat::Infomall && e.wacz {
            return Err(crate::config::ConfigError(
                "format = infomall cannot be given wacz: a WACZ holds WARC files (convert the .dat files with `warchest convert`, then `warchest wacz create`)".into(),
            )
            .into());
        }
        let seeds: Vec<Url> = e
            .seeds
            .iter()
            .map(|s| {
                Url::parse(s.trim())
                    .map_err(|err| crate::config::ConfigError(format!("seed {s}: {err}")))
            })
            .collect::<Result<_, _>>()?;
        let shard = e
            .shard
            .as_deref()
            .map(crate::config::parse_shard)
            .transpose()?;
        let handoff = match shard {
            None => None,
            Some(me) => {
                let at = e.handoff.clone().unwrap_or_else(|| dir.join("handoff"));
                let store = crate::shard::Store::new(dir, e.handoff.as_deref())
                    .map_err(|err| CrawlError::Io(at.clone(), err))?;
                Some(
                    crate::shard::Handoff::open(dir, store, me)
                        .map_err(|err| CrawlError::Io(at, err))?,
                )
            }
        };
        let scope = Scope::new(&cfg.scope, &seeds).map_err(|e| CrawlError::Scope(e.to_string()))?;
        let archive = archive_dir(dir);
        std::fs::create_dir_all(&archive).map_err(io_at(&archive))?;
        let recovered = close_open_files(&archive)?;
        // The dedupe index: the user's (shared between crawls), an earlier
        // crawl's copy (--recrawl), or the crawl's own (which earlier
        // crawls' CDXJ indexes, given as the dedupe index, are loaded into).
        let cdxj = e
            .dedupe_index
            .as_deref()
            .filter(|p| crate::dedupe::is_cdxj(p));
        let idx_path = match &e.dedupe_index {
            Some(p) if cdxj.is_none() => p.clone(),
            _ => dir.join("dedupe.redb"),
        };
        if let Some(old) = &e.recrawl {
            let src = old.join("dedupe.redb");
            // With the entries of its journal (a killed crawl's).
            create_whole(&idx_path, |tmp| {
                DigestIndex::copy(&src, tmp)?;
                Ok(())
            })?;
        }
        create_whole(&idx_path, |tmp| {
            DigestIndex::open(tmp)?;
            Ok(())
        })?;
        // Its commits are synced at the frontier's checkpoints.
        let index = DigestIndex::open_deferred(&idx_path)?;
        let mut notes = Vec::new();
        if let Some(p) = cdxj {
            let n = crate::dedupe::load(&index, p)?;
            index.sync()?;
            notes.push(format!(
                "dedupe index {}: {} captures ({} digests new), {} lines skipped (not 2xx, revisits, no digest), {} not CDXJ",
                p.display(),
                n.captures,
                n.added,
                n.skipped,
                n.malformed
            ));
        }
        let existing = next_serial(&archive, &e.prefix);
        let mut warcinfo = vec![
            (
                "software".to_string(),
                format!("warchest-crawl/{}", env!("CARGO_PKG_VERSION")),
            ),
            ("http-header-user-agent".to_string(), e.user_agent.clone()),
            (
                "robots".to_string(),
                match e.robots {
                    RobotsMode::Obey => "obey",
                    RobotsMode::Ignore => "ignore",
                }
                .to_string(),
            ),
            ("isPartOf".to_string(), e.prefix.clone()),
        ];
        if let Some(o) = &e.operator {
            warcinfo.push(("operator".into(), o.clone()));
        }
        if let Some(d) = &e.description {
            warcinfo.push(("description".into(), d.clone()));
        }
        for s in &seeds {
            warcinfo.push(("seed".into(), s.to_string()));
        }
        // The configuration, one key a line (warc-fields values are one line).
        for line in saved.lines().map(str::trim).filter(|l| !l.is_empty()) {
            warcinfo.push(("crawl-config".into(), line.to_string()));
        }
        let output = RotatingOptions {
            prefix: e.prefix.clone(),
            first_serial: existing,
            max_size: e.warc_size,
            warcinfo,
            ..RotatingOptions::default()
        };
        let infomall = (e.format == OutputFormat::Infomall).then(|| {
            Arc::new(crate::infomall::InfomallFiles::new(
                &archive,
                &e.prefix,
                existing,
                e.warc_size,
            ))
        });
        let mut recorder = Recorder::with_writers(&archive, output, Some(index), e.warc_writers)?;
        // The CDXJ made from the records as they are written.
        let written = Arc::new(crate::written::WrittenRows::default());
        let w = written.clone();
        recorder.set_on_written(Box::new(move |recs| w.note(recs)));
        let recorder = Arc::new(recorder);
        let limits = CaptureLimits {
            max_len: (e.max_size > 0).then_some(e.max_size),
            max_time: None,
        };
        let fetch = FetchOptions {
            tls: tls::client_config(false, &[])?,
            timeout: Duration::from_secs_f64(e.timeout),
            read: ReadOptions {
                limits,
                digest: recorder.digest(),
                spool_threshold: warchest_capture::SPOOL_IN_MEMORY,
                max_head: warchest::Limits::default().max_http_head,
            },
        };
        let mut overrides = HashMap::new();
        for (h, a) in &e.resolve {
            let addrs = crate::config::resolve_addrs(a).map_err(|err| {
                crate::config::ConfigError(format!("resolve {h} = {a}: {}", err.0))
            })?;
            // resolve-only promises 127.0.0.0/8 and the table: an address
            // outside it in the table would break that promise.
            if e.resolve_only
                && let Some(a) = addrs.iter().find(|a| !crate::config::test_loopback(**a))
            {
                return Err(crate::config::ConfigError(format!(
                    "resolve {h} = {a}: resolve-only reaches 127.0.0.0/8 only"
                ))
                .into());
            }
            overrides.insert(h.to_ascii_lowercase(), addrs);
        }
        let resolver_opts = dns::ResolverOptions {
            overrides,
            // The resolver holds every answer to 127.0.0.0/8 (`localhost`
            // is 127.0.0.1 and ::1): the HTTP client's and, through
            // `fetch_options`, a browser proxy's.
            loopback_only: e.resolve_only,
            ..dns::ResolverOptions::default()
        };
        let resolver = dns::Resolver::new(resolver_opts.clone());
        let frontier_path = dir.join("frontier.redb");
        create_whole(&frontier_path, |tmp| {
            Frontier::open(tmp)?;
            Ok(())
        })?;
        let (mut frontier, requeued) = Frontier::open(&frontier_path)?;
        notes.extend(frontier.opening_notes().iter().cloned());
        // The dedupe index is synced before each checkpoint of the
        // frontier (frontier.rs).
        // The open WARC file first: the entries made durable point into it
        // (a power loss must not keep an entry whose record it lost).
        // The bulk of the WARC files' fdatasync, before the checkpoint
        // takes any lock (the frontier's, the index's; each writer's only
        // to take its file's handle): the workers fetch, record and finish
        // URIs meanwhile. The companion then syncs, under the locks, only
        // what they wrote in between. A failed fdatasync (or close) is
        // never retried: the recorder remembers it and fails every later
        // sync (a later fdatasync may succeed although the pages the first
        // failed to write are lost). Another error (a flush, a handle that
        // could not be made: no file descriptor left) fails this checkpoint
        // only.
        // The Web InfoMall file likewise (its URIs counted done by the
        // checkpoint).
        let (rec, im) = (recorder.clone(), infomall.clone());
        frontier.set_presync(Box::new(move || {
            sync_warc(&rec, im.as_deref())
                .map(|()| true)
                .map_err(|e| e.to_string())
        }));
        let (rec, im) = (recorder.clone(), infomall.clone());
        frontier.set_companion(
            &idx_path,
            Box::new(move || match rec.index() {
                // The WARC files synced under the index's lock: no batch
                // naming a later record gets in between (lock order:
                // frontier, index, writer; the writers' locks only to take
                // the files' handles). The presync has synced all but what
                // came since.
                Some(i) => match i.sync_with(|| sync_warc(&rec, im.as_deref())) {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                },
                None => Ok(false),
            }),
        );
        frontier.set_per_host(cfg.politeness.host_parallel);
        frontier.set_checkpoint(
            crate::politeness::secs(cfg.engine.checkpoint_interval),
            frontier::CHECKPOINT_BYTES,
        );
        let (status, status_addr) = match &e.status_listen {
            None => (None, None),
            #[cfg(feature = "status")]
            Some(a) => {
                let (l, addr) =
                    crate::status::bind(a).map_err(|err| CrawlError::Io(PathBuf::from(a), err))?;
                (Some(l), Some(addr))
            }
            #[cfg(not(feature = "status"))]
            Some(_) => {
                return Err(crate::config::ConfigError(
                    "status-listen: built without the `status` feature".into(),
                )
                .into());
            }
        };
        let open_log = |rel: &str| {
            let p = dir.join(rel);
            LineLog::open(&p).map_err(|e| CrawlError::Io(p, e))
        };
        repair_index(dir)?;
        let pages = open_log("pages/pages.jsonl")?;
        if pages.is_empty() {
            pages.line(PAGES_HEADER).map_err(io_at(pages.path()))?;
        }
        let crawl = Crawl {
            crawl_log: open_log("logs/crawl.log")?,
            scope_log: open_log("logs/scope.log")?,
            side_lost: SideLogLoss::default(),
            exclusions_error: Mutex::new((None, HashSet::new())),
            cdxj: open_log("indexes/index.cdxj")?,
            pages,
            indexed: Mutex::new(Vec::new()),
            written,
            indexed_as_written: AtomicU64::new(0),
            dir: dir.to_path_buf(),
            frontier,
            recorder,
            infomall,
            renderer: None,
            browser_fetched: Mutex::new(HashSet::new()),
            resolver,
            resolver_opts,
            fetch,
            scope: Arc::new(scope),
            robots: Mutex::new(RobotsCache::new(10_000)),
            robots_fetching: (Mutex::new(HashSet::new()), std::sync::Condvar::new()),
            robots_waiting: std::sync::atomic::AtomicUsize::new(0),
            robots_policy: RobotsPolicy::default(),
            conns: KeptConns::new(cfg.engine.workers.max(1) * 2 + 16),
            seeds,
            stop,
            budget_hit: AtomicBool::new(false),
            started: Instant::now(),
            requeued,
            recovered,
            notes,
            shard,
            handoff,
            status: Mutex::new(status),
            status_addr,
            live: Live::default(),
            cfg,
        };
        crawl.index_new_files()?;
        // Seeds (again, on resume: the seen set keeps them once).
        let seeds: Vec<CrawlUri> = crawl
            .seeds
            .iter()
            .enumerate()
            .map(|(i, u)| CrawlUri::seed(u.clone(), i as u32))
            .filter(|u| crawl.mine(&u.url))
            .collect();
        crawl.frontier.add(&seeds)?;
        crawl.read_handoffs()?;
        Ok(crawl)
    }

    /// How many workers wait now for another worker's fetch of their
    /// host's robots.txt (a stop lets them go at once).
    pub fn robots_waiters(&self) -> usize {
        self.robots_waiting
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The configuration.
    pub fn config(&self) -> &CrawlConfig {
        &self.cfg
    }

    /// The recorder every fetch is written through (WARC files, dedupe
    /// index): a [`PageRenderer`]'s recording proxy writes through it too.
    pub fn recorder(&self) -> Arc<Recorder> {
        self.recorder.clone()
    }

    /// How the crawl fetches and resolves (`resolve` table, timeout, TLS,
    /// limits): a browser's recording proxy fetches the same way.
    pub fn fetch_options(&self) -> (FetchOptions, dns::ResolverOptions) {
        (self.fetch.clone(), self.resolver_opts.clone())
    }

    /// Loads pages in a browser from now on (`--browser`); see
    /// [`crate::render`].
    pub fn set_renderer(&mut self, r: Box<dyn PageRenderer>) {
        self.renderer = Some(r);
    }

    /// The check a browser's recording proxy makes before it connects:
    /// the URL's host is reachable (`resolve-only`), and the scope accepts
    /// the URL as an embed of a seed (the transclusion rules, so that a
    /// page's resources on other hosts are fetched as the HTTP crawl
    /// fetches them). `Err` says why not.
    pub fn embed_filter(&self) -> Arc<warchest_capture::proxy::UrlCheck> {
        let scope = self.scope.clone();
        let engine = self.cfg.engine.clone();
        let seed = self.seeds.first().cloned();
        Arc::new(move |u: &str| {
            let url = Url::parse(u).map_err(|e| format!("not a URL: {e}"))?;
            let host = url.host_str().unwrap_or("");
            if !engine.may_reach(host) {
                return Err(format!("{host}: not in the resolve table (resolve-only)"));
            }
            let seed = seed.clone().ok_or("no seed")?;
            let v = scope.decide(&CrawlUri::seed(seed, 0).child(url, Hop::Embed));
            if v.accepted {
                Ok(())
            } else {
                Err(format!("out of the crawl's scope ({})", v.rule))
            }
        })
    }

    /// The crawl directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The frontier (counters for progress displays).
    pub fn frontier(&self) -> &Frontier {
        &self.frontier
    }

    /// Whether `url` belongs to this crawler's shard.
    fn mine(&self, url: &Url) -> bool {
        match self.shard {
            None => true,
            Some((k, n)) => crate::shard::shard_of(url, n) == k,
        }
    }

    /// Queues the URIs other shards handed to this one.
    fn read_handoffs(&self) -> Result<u64, CrawlError> {
        let Some(h) = &self.handoff else {
            return Ok(0);
        };
        let n = h
            .receive(|u| self.queue_handed(u))
            .map_err(|e| self.handed_error(e))?;
        Ok(n as u64)
    }

    /// Queues URIs read from the hand-off: a frontier error stays one, so
    /// that it is reported under the frontier, not the hand-off prefix.
    fn queue_handed(&self, uris: &[CrawlUri]) -> Result<(), Handed> {
        self.frontier
            .add(uris)
            .map(|_| ())
            .map_err(Handed::Frontier)
    }

    /// A hand-off error named by where it happened.
    fn handed_error(&self, e: Handed) -> CrawlError {
        match e {
            Handed::Frontier(f) => CrawlError::Frontier(f),
            Handed::Io(io) => CrawlError::Io(self.handoff_at(), io),
        }
    }

    /// The hand-off prefix, for messages.
    fn handoff_at(&self) -> PathBuf {
        self.cfg
            .engine
            .handoff
            .clone()
            .unwrap_or_else(|| self.dir.join("handoff"))
    }

    /// With shards, when this crawler has nothing to do: whether every
    /// shard is done (shard.rs); without, true.
    fn all_shards_done(&self) -> Result<bool, CrawlError> {
        let Some(h) = &self.handoff else {
            return Ok(true);
        };
        let quiet = || {
            self.live.active.load(Ordering::SeqCst) == 0
                && self
                    .frontier
                    .counts()
                    .is_ok_and(|c| c.queued == 0 && c.in_flight == 0)
        };
        h.try_finish(quiet, |u| self.queue_handed(u))
            .map_err(|e| self.handed_error(e))
    }

    /// The state as JSON and as Prometheus metrics (`status-listen`).
    ///
    /// When the frontier's counters cannot be read, `counts` is null and
    /// `counts_error` says why, and the metrics leave the frontier's
    /// gauges out (`warchest_crawl_counts_error` is 1): no zeros passed
    /// off as counts.
    pub fn snapshot(&self) -> (String, String) {
        let counted = self.counts().map_err(|e| e.to_string());
        let active = self.live.active.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        let json = serde_json::json!({
            "counts": counted.as_ref().ok(),
            "counts_error": counted.as_ref().err(),
            "hosts_active": active,
            "seconds": secs,
            "pages_this_run": self.live.pages.load(Ordering::Relaxed),
            "bytes_this_run": self.live.bytes.load(Ordering::Relaxed),
            // Summary::links_stopped and links_dropped, as they grow.
            "links_stopped_this_run": self.live.links_stopped.load(Ordering::Relaxed),
            "links_dropped_this_run": self.live.links_dropped.load(Ordering::Relaxed),
            "stopping": self.stopped(),
            "exclusion_file_error": self
                .exclusions_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .0
                .clone(),
        })
        .to_string();
        let mut m = String::new();
        let mut gauges = vec![
            ("hosts_active", "Hosts being fetched now", active),
            (
                "links_stopped",
                "URIs this run whose link extraction stopped early",
                self.live.links_stopped.load(Ordering::Relaxed),
            ),
            (
                "links_dropped",
                "Links this run left out over the bounds",
                self.live.links_dropped.load(Ordering::Relaxed),
            ),
        ];
        match &counted {
            Ok(c) => gauges.extend([
                ("queued", "URIs waiting in queues", c.queued),
                ("in_flight", "URIs being fetched", c.in_flight),
                ("done", "URIs finished", c.done),
                ("failed", "URIs failed (network errors)", c.failed),
                ("pages", "HTML pages fetched", c.pages),
                ("bytes", "Response bytes received", c.bytes),
                ("seen", "URLs ever queued", c.seen),
            ]),
            Err(_) => gauges.push((
                "counts_error",
                "1: the frontier's counters could not be read",
                1,
            )),
        }
        for (name, help, v) in gauges {
            m.push_str(&format!(
                "# HELP warchest_crawl_{name} {help}\n# TYPE warchest_crawl_{name} gauge\nwarchest_crawl_{name} {v}\n"
            ));
        }
        (json, m)
    }

    /// Indexes the WARC files in archive/ not yet in the CDXJ.
    fn index_new_files(&self) -> Result<(), CrawlError> {
        let listed = self.dir.join(INDEXED);
        let done: Vec<String> = std::fs::read_to_string(&listed)
            .unwrap_or_default()
            .lines()
            .map(|l| l.split('\t').next().unwrap_or(l).to_string())
            .collect();
        let mut files: Vec<PathBuf> = std::fs::read_dir(archive_dir(&self.dir))
            .map_err(io_at(&self.dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                (n.ends_with(".warc.gz")
                    || n.ends_with(".warc")
                    || n.ends_with(crate::infomall::EXT))
                    && !done.iter().any(|d| d == n)
            })
            .collect();
        files.sort();
        for f in files {
            self.index_file(&f)?;
        }
        Ok(())
    }

    /// Appends the CDXJ of one closed WARC file to `indexes/index.cdxj`,
    /// then lists the file in `indexes/indexed.txt` with the CDXJ's length
    /// after it: a run killed between the two leaves lines that
    /// [`repair_index`] cuts off on the next open, before the file is
    /// indexed again. One file at a time (the lock), so the lengths are in
    /// order.
    fn index_file(&self, path: &Path) -> Result<(), CrawlError> {
        use warchest_index::{Format, IndexOptions, IndexOutput, Indexer};
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let mut ix = self.indexed.lock().unwrap_or_else(|p| p.into_inner());
        if ix.iter().any(|p| p == path) {
            return Ok(());
        }
        ix.push(path.to_path_buf());
        match self.written.take(path) {
            Some(mut rows) => {
                self.indexed_as_written.fetch_add(1, Ordering::Relaxed);
                self.cdxj
                    .copy_lines(&mut rows)
                    .map_err(io_at(self.cdxj.path()))?;
            }
            None => {
                // A file of an earlier run, or one whose rows cannot be
                // trusted (written.rs): read again.
                let mut reader = warchest::archive::Reader::open(path)?;
                // Spooled and copied as the written rows are: a large file's
                // rows are not held whole (each ends with its newline).
                let spool = tempfile::SpooledTempFile::new(1 << 20);
                let mut out = IndexOutput::new(spool, &Format::Cdxj, false)?;
                Indexer::new(name.clone(), IndexOptions::default())
                    .index(&mut reader, |e| out.push(&e))?;
                let mut rows = out.finish()?;
                rows.rewind().map_err(io_at(path))?;
                self.cdxj
                    .copy_lines(&mut rows)
                    .map_err(io_at(self.cdxj.path()))?;
            }
        }
        let end = std::fs::metadata(self.cdxj.path())
            .map_err(io_at(self.cdxj.path()))?
            .len();
        let listed = self.dir.join(INDEXED);
        let log = LineLog::open(&listed).map_err(io_at(&listed))?;
        log.line(&format!("{name}\t{end}"))
            .map_err(io_at(&listed))?;
        Ok(())
    }

    /// Closes every WARC file (the recorder's writers, the Web InfoMall
    /// files) and indexes each; returns them. When a close fails, every
    /// other file is still closed, the files closed this run are indexed
    /// all the same (they used to wait for a resume), and the error
    /// ([`CrawlError::Closing`]) names them.
    fn close_and_index(&self) -> Result<Vec<PathBuf>, CrawlError> {
        let mut failed: Option<CrawlError> = None;
        let mut fail = |e: CrawlError| match &failed {
            None => failed = Some(e),
            Some(_) => tracing::warn!("closing the WARC files failed as well: {e}"),
        };
        let mut files = self.recorder.finish().unwrap_or_else(|e| {
            fail(e.into());
            Vec::new()
        });
        if let Some(im) = &self.infomall {
            match im.finish() {
                Ok(f) => files.extend(f),
                Err(e) => {
                    fail(e.into());
                    // The files it closed before (a failed finish keeps
                    // them listed).
                    match im.flush() {
                        Ok(f) => files.extend(f),
                        Err(e) => fail(e.into()),
                    }
                }
            }
        }
        let Some(error) = failed else {
            for f in &files {
                self.index_file(f)?;
            }
            return Ok(files);
        };
        // Every file closed this run: by rotation or by a close that
        // worked (the recorder's), and the InfoMall files gathered above
        // (a successful finish hands them over once).
        let mut closed = self.recorder.closed_files();
        closed.extend(files);
        closed.sort();
        closed.dedup();
        let mut unindexed = Vec::new();
        closed.retain(|f| match self.index_file(f) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("indexing {} after a failed close: {e}", f.display());
                unindexed.push(f.clone());
                false
            }
        });
        Err(CrawlError::Closing {
            error: Box::new(error),
            closed,
            unindexed,
        })
    }

    fn log_scope(&self, uri: &CrawlUri, rule: &str) {
        let r = self.scope_log.line(&format!(
            "{} {} {} {} {rule}",
            iso_time(time::OffsetDateTime::now_utc()),
            uri.url,
            if uri.hops.is_empty() { "-" } else { &uri.hops },
            uri.via.as_ref().map(|v| v.as_str()).unwrap_or("-"),
        ));
        if let Err(e) = r {
            self.side_lost.note(self.scope_log.path(), &e);
        }
    }

    /// A line of logs/progress.log, opened for each line (a line a
    /// minute), so an unwritable log is tried again next time.
    fn log_progress(&self, text: &str) {
        let p = self.dir.join("logs/progress.log");
        if let Err(e) = LineLog::open(&p).and_then(|l| {
            l.line(&format!(
                "{} {text}",
                iso_time(time::OffsetDateTime::now_utc())
            ))
        }) {
            self.side_lost.note(&p, &e);
        }
    }

    /// Rereads the exclusion file if it changed. On an error the
    /// exclusions read before stay in force; each distinct error is
    /// warned of once (the file is tried again every second) and the last
    /// one is in the status JSON until a reread works. True when it
    /// warned.
    fn reload_exclusions(&self) -> bool {
        let r = self.scope.reload_exclusions();
        let mut g = self
            .exclusions_error
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (last, warned) = &mut *g;
        match r {
            Ok(_) => {
                *last = None;
                false
            }
            Err(e) => {
                let msg = e.to_string();
                // Bounded: a file rewritten with a new error each second
                // for hours is warned of again past this.
                if warned.len() >= 64 {
                    warned.clear();
                }
                let new = warned.insert(msg.clone());
                if new {
                    tracing::warn!(
                        "the exclusion file: {msg}; the exclusions read before stay in force"
                    );
                }
                *last = Some(msg);
                new
            }
        }
    }

    /// The frontier's counters.
    fn counts(&self) -> Result<frontier::Counts, CrawlError> {
        Ok(self.frontier.counts()?)
    }

    /// Whether a budget (time, pages, bytes) is reached.
    ///
    /// # Errors
    /// The frontier's counters cannot be read: the crawl stops on it
    /// rather than go on with its budgets unenforced.
    fn budget_reached(&self) -> Result<bool, CrawlError> {
        let e = &self.cfg.engine;
        if e.max_time > 0.0 && self.started.elapsed().as_secs_f64() >= e.max_time {
            return Ok(true);
        }
        // The counters are read (under the frontier's lock) only when a
        // budget needs them: every worker asks before each URI.
        if e.max_pages == 0 && e.max_bytes == 0 {
            return Ok(false);
        }
        let c = self.counts()?;
        Ok((e.max_pages > 0 && c.pages >= e.max_pages)
            || (e.max_bytes > 0 && c.bytes >= e.max_bytes))
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.budget_hit.load(Ordering::Relaxed)
    }

    /// Crawls until the frontier is empty, a budget is reached or `stop`
    /// is set; then closes the files. `tick` is called about every 200 ms
    /// (progress displays).
    ///
    /// # Errors
    /// Writing failed (a URL that cannot be fetched is logged, not an error).
    pub fn run(self, tick: &(dyn Fn(&Crawl) + Sync)) -> Result<Summary, CrawlError> {
        let fatal: Mutex<Option<CrawlError>> = Mutex::new(None);
        let workers = self.cfg.engine.workers.max(1);
        let idle = AtomicU64::new(0);
        let finished = AtomicBool::new(false);
        let workers_done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(workers);
            for t in 0..workers {
                let fatal = &fatal;
                let idle = &idle;
                let finished = &finished;
                let me = &self;
                handles.push(s.spawn(move || {
                    let mut was_idle = false;
                    // A URI taken with the last one's end, not yet fetched.
                    let mut held: Option<Lease> = None;
                    loop {
                        let stop = me.stopped() || finished.load(Ordering::Relaxed);
                        let budget = match stop {
                            true => false,
                            false => match me.budget_reached() {
                                Ok(b) => b,
                                Err(e) => {
                                    if let Some(l) = held.take()
                                        && let Err(pe) = me.frontier.put_back(&l)
                                    {
                                        tracing::warn!("putting back a URI: {pe}");
                                    }
                                    if let Ok(mut f) = fatal.lock() {
                                        f.get_or_insert(e);
                                    }
                                    me.stop.store(true, Ordering::Relaxed);
                                    break;
                                }
                            },
                        };
                        if stop || budget {
                            if budget {
                                me.budget_hit.store(true, Ordering::Relaxed);
                            }
                            if let Some(l) = held.take()
                                && let Err(e) = me.frontier.put_back(&l)
                                && let Ok(mut f) = fatal.lock()
                            {
                                f.get_or_insert(e.into());
                            }
                            break;
                        }
                        let next = match held.take() {
                            Some(l) => Ok(Next::Uri(Box::new(l))),
                            None => me.frontier.next(),
                        };
                        let next = match next {
                            Ok(n) => n,
                            Err(e) => {
                                if let Ok(mut f) = fatal.lock() {
                                    f.get_or_insert(e.into());
                                }
                                me.stop.store(true, Ordering::Relaxed);
                                break;
                            }
                        };
                        match next {
                            Next::Uri(lease) => {
                                let lease = *lease;
                                if was_idle {
                                    idle.fetch_sub(1, Ordering::SeqCst);
                                    was_idle = false;
                                }
                                me.live.active.fetch_add(1, Ordering::Relaxed);
                                let r = me.process(t + 1, &lease);
                                me.live.active.fetch_sub(1, Ordering::Relaxed);
                                match r {
                                    Ok(n) => held = n,
                                    Err(e) => {
                                        if let Ok(mut f) = fatal.lock() {
                                            f.get_or_insert(e);
                                        }
                                        me.stop.store(true, Ordering::Relaxed);
                                        break;
                                    }
                                }
                            }
                            Next::Wait(d) => {
                                std::thread::sleep(
                                    d.clamp(Duration::from_millis(1), Duration::from_millis(100)),
                                );
                            }
                            Next::Empty => {
                                if !was_idle {
                                    idle.fetch_add(1, Ordering::SeqCst);
                                    was_idle = true;
                                }
                                // Done when every worker is idle and none
                                // holds a URI (its links may still come).
                                if idle.load(Ordering::SeqCst) == workers as u64
                                    && me.live.active.load(Ordering::SeqCst) == 0
                                    && me
                                        .frontier
                                        .counts()
                                        .map(|c| c.queued == 0 && c.in_flight == 0)
                                        .unwrap_or(false)
                                {
                                    match me.all_shards_done() {
                                        Ok(true) => {
                                            finished.store(true, Ordering::Relaxed);
                                            break;
                                        }
                                        Ok(false) => {}
                                        Err(e) => {
                                            if let Ok(mut f) = fatal.lock() {
                                                f.get_or_insert(e);
                                            }
                                            me.stop.store(true, Ordering::Relaxed);
                                            break;
                                        }
                                    }
                                }
                                std::thread::sleep(Duration::from_millis(20));
                            }
                        }
                    }
                }));
            }
            #[cfg(feature = "status")]
            if let Some(l) = self.status.lock().ok().and_then(|mut g| g.take()) {
                let me = &self;
                let done = &workers_done;
                s.spawn(move || {
                    let snap = || me.snapshot();
                    if let Err(e) = crate::status::serve(l, &snap, done) {
                        tracing::warn!("status server: {e}");
                    }
                });
            }
            // The ticker: progress and the exclusion file's rereading.
            let me = &self;
            let finished = &finished;
            let idle = &idle;
            let fatal = &fatal;
            s.spawn(move || {
                let mut last_reload = Instant::now();
                let mut last_stats = Instant::now();
                let every = Duration::from_secs_f64(me.cfg.engine.stats_interval);
                loop {
                    tick(me);
                    // The journal's once-a-second sync, also when no
                    // change comes (every worker in a long fetch).
                    // A failed sync or checkpoint is fatal (the engine's
                    // promise: nothing durable names a lost record).
                    if let Err(e) = me.frontier.sync_if_due() {
                        if let Ok(mut f) = fatal.lock() {
                            f.get_or_insert(e.into());
                        }
                        me.stop.store(true, Ordering::Relaxed);
                    }
                    if last_stats.elapsed() >= every {
                        me.log_progress(&progress_line(me, me.started, me.cfg.engine.max_pages));
                        last_stats = Instant::now();
                    }
                    if last_reload.elapsed() > Duration::from_secs(1) {
                        me.reload_exclusions();
                        if let Err(e) = me.read_handoffs() {
                            tracing::warn!("hand-off: {e}");
                        }
                        last_reload = Instant::now();
                    }
                    if finished.load(Ordering::Relaxed)
                        || me.stop.load(Ordering::Relaxed)
                        || me.budget_hit.load(Ordering::Relaxed)
                        || me.handoff.is_none()
                            && me.live.active.load(Ordering::Relaxed) == 0
                            && idle.load(Ordering::SeqCst) == workers as u64
                    {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
            for h in handles {
                let _ = h.join();
            }
            workers_done.store(true, Ordering::Relaxed);
        });
        tick(&self);
        // Every change so far committed durably (also after a stop: the
        // checkpoint SIGINT and SIGTERM promise).
        let checkpoint = self.frontier.checkpoint();
        // The run's last stats line, whatever its length.
        self.log_progress(&format!(
            "{} (end of run)",
            progress_line(&self, self.started, self.cfg.engine.max_pages)
        ));
        if let Some(r) = &self.renderer
            && let Err(e) = r.finish()
        {
            tracing::warn!("closing the browsers: {e}");
        }
        let unrecorded = self.renderer.as_ref().and_then(|r| r.unrecorded());
        let fatal = fatal
            .into_inner()
            .ok()
            .flatten()
            .or(checkpoint.err().map(CrawlError::from));
        if let Some(e) = fatal {
            if self.recorder.failed() || self.infomall.as_ref().is_some_and(|im| im.failed()) {
                // A WARC file's sync or close failed: closing now would
                // sync again (which may succeed although the pages the
                // first failed to write are lost), rename and index from
                // the rows in memory. The `.open` files are left as they
                // are: a resume reads their records back and keeps what is
                // whole.
                tracing::warn!("a WARC file's sync failed: the .open files are left for a resume");
            } else if let Err(c) = self.close_and_index() {
                // The files are closed and indexed all the same (what a
                // resume would do first).
                tracing::warn!("after the crawl's error: {c}");
            }
            return Err(e);
        }
        let files = self.close_and_index()?;
        let ending = if self.stop.load(Ordering::Relaxed) {
            Ending::Interrupted
        } else if self.budget_hit.load(Ordering::Relaxed) {
            // The other shards finish without this one.
            if let Some(h) = &self.handoff {
                h.end().map_err(|e| CrawlError::Io(self.handoff_at(), e))?;
            }
            Ending::Budget
        } else {
            Ending::Finished
        };
        Ok(Summary {
            ending,
            counts: self.frontier.counts()?,
            files,
            requeued: self.requeued,
            recovered: self.recovered.clone(),
            journal_lost: self.frontier.lost_changes(),
            notes: self
                .notes
                .iter()
                .cloned()
                .chain(self.side_lost.notes())
                .collect(),
            indexed_as_written: self.indexed_as_written.load(Ordering::Relaxed),
            links_stopped: self.live.links_stopped.load(Ordering::Relaxed),
            links_dropped: self.live.links_dropped.load(Ordering::Relaxed),
            unrecorded,
        })
    }

    /// One URI: budgets, robots.txt, the fetch, its links.
    fn process(&self, thread: usize, lease: &Lease) -> Result<Option<Lease>, CrawlError> {
        let uri = &lease.uri;
        let e = &self.cfg.engine;
        // Per-host budgets.
        if e.max_pages_per_host > 0 || e.max_bytes_per_host > 0 {
            let (p, b) = self.frontier.host_usage(&lease.host)?;
            if (e.max_pages_per_host > 0 && p >= e.max_pages_per_host)
                || (e.max_bytes_per_host > 0 && b >= e.max_bytes_per_host)
            {
                self.log_outcome(thread, uri, -5003, None, vec!["Q:host-budget".into()])?;
                self.frontier
                    .complete(lease, frontier::Outcome::default(), &[])?;
                return Ok(None);
            }
        }
        // robots.txt, fetched as a prerequisite, cached per host.
        let mut crawl_delay = None;
        if e.robots == RobotsMode::Obey {
            let Some(robots) = self.robots_for(thread, uri)? else {
                // Stopped while waiting for another worker's fetch of
                // robots.txt: nothing was fetched; the URI goes back to
                // its queue.
                self.frontier.put_back(lease)?;
                return Ok(None);
            };
            crawl_delay = robots.crawl_delay();
            if !robots.allowed(&uri.url) {
                // Refused because robots.txt did not decode, not by its
                // rules: said on the URL's line.
                let ann = match robots.undecoded() {
                    Some(_) => vec!["robots:undecodable".to_string()],
                    None => Vec::new(),
                };
                self.log_outcome(thread, uri, -9998, None, ann)?;
                self.frontier
                    .complete(lease, frontier::Outcome::default(), &[])?;
                self.live.done.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
        }
        if let Some(r) = self.renderer.as_deref()
            && self.by_browser(thread, lease, r, crawl_delay)?
        {
            return Ok(None);
        }
        let t0 = Instant::now();
        let fetched = self.fetch_page(uri);
        let elapsed = t0.elapsed();
        let delay = self.cfg.politeness.next_fetch_delay(elapsed, crawl_delay);
        // Tries of this URI so far, this one included (429 and 503 are
        // tried again): Heritrix's `Nt` annotation when above one.
        let tries = uri.tries.saturating_add(1);
        let f = match fetched {
            Ok(f) => f,
            Err(CaptureError::Warc(w)) => return Err(w.into()),
            Err(err) => {
                let code = error_code(&err);
                let mut ann = vec![format!("err={err}").replace(' ', "_")];
                ann.extend(Self::finish_tries(tries));
                self.log_outcome(thread, uri, code, None, ann)?;
                let (_, next) = self.frontier.complete_and_next(
                    lease,
                    frontier::Outcome {
                        failed: true,
                        delay,
                        ..Default::default()
                    },
                    &[],
                )?;
                self.live.done.fetch_add(1, Ordering::Relaxed);
                self.live.failed.fetch_add(1, Ordering::Relaxed);
                return Ok(next);
            }
        };
        self.live.bytes.fetch_add(f.body_len, Ordering::Relaxed);
        // 429 / 503: Retry-After, or backoff; bounded attempts.
        if matches!(f.status, 429 | 503) {
            let headers = f.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()));
            // Retry number `tries` (the first retry follows the first try).
            if let Some(wait) =
                self.cfg
                    .politeness
                    .retry_after(f.status, headers, tries, SystemTime::now())
            {
                let mut again = uri.clone();
                again.tries = tries;
                self.frontier.retry(lease, &again, wait.max(delay))?;
                return Ok(None);
            }
        }
        // An HTML document is a page only where the crawl reached it as
        // one: not an embedded frame's, nor a URL a script names, unless
        // a link named it too before it was fetched (the frontier gave
        // such a lease a page's hops when it was taken).
        // (Untyped is no page here: the HTTP client does not sniff.)
        let page = warchest::http::is_html_type(f.content_type.as_deref(), false)
            && (200..300).contains(&f.status)
            && uri.reached_as_page();
        // Links: from the headers (Location, Link, Refresh) and the body.
        let from_headers = crate::links::headers::extract_headers(
            &uri.url,
            f.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())),
        );
        let dropped = from_headers.dropped + f.extracted.dropped;
        let mut links = from_headers.links;
        let nofollow = f.extracted.nofollow && e.robots == RobotsMode::Obey;
        links.extend(
            f.extracted
                .links
                .iter()
                .filter(|l| {
                    // meta robots nofollow: no links followed, embeds still fetched.
                    !(nofollow && l.hop == Hop::Link)
                })
                .cloned(),
        );
        let found = self.scoped(uri, &links)?;
        let mut ann = Vec::new();
        match f.kind {
            Kind::Revisit(RevisitProfile::IdenticalPayloadDigest) => {
                ann.push("duplicate:digest".to_string())
            }
            Kind::Revisit(RevisitProfile::ServerNotModified) => {
                ann.push("duplicate:server-not-modified".to_string())
            }
            _ => {}
        }
        if let Some(t) = &f.truncated {
            ann.push(match t.as_str() {
                "length" => "lenTrunc".to_string(),
                "time" => "timeTrunc".to_string(),
                o => format!("{o}Trunc"),
            });
        }
        ann.extend(self.links_cut(uri, dropped, f.extracted.stopped.as_ref()));
        ann.extend(Self::finish_tries(tries));
        let seed = self.seeds.get(uri.seed as usize).map(|s| s.to_string());
        let mut line = fetch_line(uri, &f, thread, seed.as_deref());
        line.annotations = ann;
        self.log_line(&line)?;
        if page {
            self.page_row(
                uri,
                f.extracted.title.as_deref(),
                f.started,
                &crate::sidecar::mime_column(f.content_type.as_deref()),
                f.status.into(),
                1,
            )?;
        }
        self.flush_records()?;
        // The next URI taken in the same transaction: one commit, not two.
        let (_, next) = self.frontier.complete_and_next(
            lease,
            frontier::Outcome {
                failed: false,
                page,
                bytes: f.body_len,
                delay,
            },
            &found,
        )?;
        self.live.done.fetch_add(1, Ordering::Relaxed);
        Ok(next)
    }

    /// The annotations of links left out (`dol:N`) and of an extraction
    /// that stopped early (`linksStopped:WHY`), counted for the summary.
    fn links_cut(
        &self,
        uri: &CrawlUri,
        dropped: usize,
        stopped: Option<&crate::links::Stopped>,
    ) -> Vec<String> {
        let mut ann = Vec::new();
        if dropped > 0 {
            self.live
                .links_dropped
                .fetch_add(dropped as u64, Ordering::Relaxed);
            ann.push(format!("dol:{dropped}"));
        }
        if let Some(s) = stopped {
            // Each is on its crawl.log line and counted in the summary; a
            // warning a page would drown the others on a large crawl.
            tracing::info!("{}: link extraction stopped: {}", uri.url, s.detail);
            self.live.links_stopped.fetch_add(1, Ordering::Relaxed);
            ann.push(format!("linksStopped:{}", s.why.as_str()));
        }
        ann
    }

    /// Heritrix's `Nt` annotation when a URI took more than one try.
    fn finish_tries(tries: u32) -> Option<String> {
        (tries > 1).then(|| format!("{tries}t"))
    }

    /// A crawl.log line, dated now.
    fn log_line(&self, line: &LogLine) -> Result<(), CrawlError> {
        self.crawl_log
            .line(&line.format(time::OffsetDateTime::now_utc()))
            .map_err(io_at(self.crawl_log.path()))
    }

    /// A pages.jsonl row (Browsertrix's columns).
    fn page_row(
        &self,
        uri: &CrawlUri,
        title: Option<&str>,
        ts: time::OffsetDateTime,
        mime: &str,
        status: i32,
        load_state: u8,
    ) -> Result<(), CrawlError> {
        let row = serde_json::json!({
            "id": uuid::Uuid::new_v4().to_string(),
            "url": uri.url.as_str(),
            "title": title.unwrap_or_default(),
            "ts": iso_time(ts),
            "mime": mime,
            "status": status,
            "depth": uri.links_hops(),
            // A seed, after its redirects too (Browsertrix marks the
            // seed's final URL).
            "seed": uri.hops.bytes().all(|c| c == b'R'),
            "loadState": load_state,
        });
        self.pages
            .line(&row.to_string())
            .map_err(io_at(self.pages.path()))?;
        // The progress line's pages are HTML pages, as the budgets count
        // them (a browser crawl's row of a resource loaded in a tab is not
        // one).
        if warchest::http::is_html_type(Some(mime), false) {
            self.live.pages.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Records on disk (and closed files indexed) before a URI is marked
    /// done.
    fn flush_records(&self) -> Result<(), CrawlError> {
        // Every record the recorder writes for a crawl (exchanges, dns,
        // FTP, a browser's resource and metadata records) is flushed before
        // its writer is let go (the crawl always has a dedupe index), so
        // no writer is waited for here.
        let mut closed = self.recorder.closed_files();
        if let Some(im) = &self.infomall {
            closed.extend(im.flush()?);
        }
        for c in closed {
            self.index_file(&c)?;
        }
        Ok(())
    }

    /// The links of `uri` the crawl follows: in scope, this shard's (others
    /// handed off), redirects bounded; each rejection logged.
    fn scoped(
        &self,
        uri: &CrawlUri,
        links: &[crate::links::Link],
    ) -> Result<Vec<CrawlUri>, CrawlError> {
        let e = &self.cfg.engine;
        let mut found = Vec::new();
        let mut handed = Vec::new();
        let redirects = uri.hops.chars().rev().take_while(|&c| c == 'R').count() as u32;
        for l in links {
            if !matches!(l.url.scheme(), "http" | "https") {
                continue;
            }
            if l.hop == Hop::Redirect && redirects >= e.max_redirects {
                self.log_scope(&uri.child(l.url.clone(), l.hop), "max-redirects");
                continue;
            }
            let child = uri.child(l.url.clone(), l.hop);
            let v = self.scope.decide(&child);
            if !v.accepted {
                self.log_scope(&child, v.rule);
                continue;
            }
            if !self.mine(&child.url) {
                handed.push(child);
                continue;
            }
            found.push(child);
        }
        // Written before the URI is marked done (shard.rs: a busy
        // crawler's batches are counted in its next idle status).
        if let Some(h) = &self.handoff {
            h.send(&handed)
                .map_err(|err| CrawlError::Io(self.handoff_at(), err))?;
        }
        Ok(found)
    }

    /// `--browser`: a URI the browser fetched already is done; a page is
    /// loaded in the browser, its rendered links followed, what it fetched
    /// marked seen. False: the HTTP client is to fetch it (not a page, or
    /// the browser failed before fetching it).
    fn by_browser(
        &self,
        thread: usize,
        lease: &Lease,
        r: &dyn PageRenderer,
        crawl_delay: Option<Duration>,
    ) -> Result<bool, CrawlError> {
        let uri = &lease.uri;
        let seen = |u: &str| self.browser_fetched.lock().is_ok_and(|s| s.contains(u));
        if seen(uri.url.as_str()) {
            self.log_outcome(thread, uri, -5003, None, vec!["browser-fetched".into()])?;
            self.frontier
                .complete(lease, frontier::Outcome::default(), &[])?;
            self.live.done.fetch_add(1, Ordering::Relaxed);
            return Ok(true);
        }
        // A resource goes to the HTTP client without asking the frontier
        // anything: a link that named it after it was queued gave its
        // lease a page's hops when it was taken.
        if !crate::render::is_page(&uri.hops) {
            return Ok(false);
        }
        let t0 = Instant::now();
        let started = time::OffsetDateTime::now_utc();
        // Links given early are queued at once (the other tabs start on
        // them); the page's own links at its end skip those.
        let mut fed = std::collections::HashSet::new();
        let mut early = |urls: Vec<Url>| {
            let mut links: Vec<crate::links::Link> = urls
                .into_iter()
                .filter(|u| !fed.contains(u))
                .map(|url| crate::links::Link {
                    url,
                    hop: Hop::Link,
                    context: "browser/a",
                })
                .collect();
            links.dedup_by(|a, b| a.url == b.url);
            if links.is_empty() {
                return;
            }
            match self
                .scoped(uri, &links)
                .and_then(|found| Ok(self.frontier.add(&found)?))
            {
                Ok(_) => fed.extend(links.into_iter().map(|l| l.url)),
                // Left to the page's end, which queues them again.
                Err(e) => tracing::warn!("{}: queuing the links found early: {e}", uri.url),
            }
        };
        let got = r.render_early(&uri.url, &mut early);
        // The browser's records on disk before its URLs are marked seen:
        // a kill between the two must not leave a URL seen whose records
        // resume then cuts away.
        self.flush_records()?;
        self.frontier.mark_seen(&got.fetched)?;
        if let Ok(mut s) = self.browser_fetched.lock() {
            // Bounded: past it a URI queued before the browser fetched it
            // may be fetched again (a revisit), which costs only a fetch.
            if s.len() > 200_000 {
                s.clear();
            }
            s.extend(got.fetched.iter().map(|u| u.to_string()));
        }
        if got.error.is_some() && !seen(uri.url.as_str()) {
            tracing::warn!(
                "{}: the browser failed ({}); fetched with the HTTP client",
                uri.url,
                got.error.as_deref().unwrap_or("")
            );
            return Ok(false);
        }
        let links: Vec<crate::links::Link> = got
            .links
            .iter()
            .filter(|u| !fed.contains(*u))
            .map(|u| crate::links::Link {
                url: u.clone(),
                hop: Hop::Link,
                context: "browser/a",
            })
            .collect();
        let found = self.scoped(uri, &links)?;
        let status = got.status.map_or(-1, i32::from);
        let answered = (200..300).contains(&status);
        // Told apart by its own record: a URL whose document is not HTML
        // is a resource a tab loaded (no screenshot or text), listed in
        // pages.jsonl with its type as Browsertrix lists such a page URL,
        // and not counted as a page by the budgets.
        let page = answered && got.not_html.is_none();
        let mime = got
            .not_html
            .as_deref()
            .map(|c| crate::sidecar::mime_column(Some(c)));
        let seed = self.seeds.get(uri.seed as usize).map(|s| s.to_string());
        let mut ann = vec![
            "browser".to_string(),
            format!("resources:{}", got.fetched.len()),
        ];
        if let Some(e) = &got.error {
            ann.push(format!("err={e}").replace(' ', "_"));
        }
        // Dropped before nofollow or scope: what the page had.
        ann.extend(self.links_cut(uri, got.links_dropped, got.links_stopped.as_ref()));
        if got.tracker_incomplete {
            // Its resources and links may be short: said on its line, as
            // capture --browser's page line says `(tracker incomplete)`.
            ann.push("trackerIncomplete".to_string());
        }
        let line = LogLine {
            status,
            size: None,
            uri: uri.url.as_str(),
            hops: &uri.hops,
            via: uri.via.as_ref().map(|v| v.as_str()),
            mime: mime.as_deref(),
            thread,
            fetch: Some((started, got.ms)),
            digest: None,
            seed: seed.as_deref(),
            annotations: ann,
            extra: None,
        };
        self.log_line(&line)?;
        if answered {
            self.page_row(
                uri,
                got.title.as_deref(),
                started,
                mime.as_deref().unwrap_or("text/html"),
                status,
                got.load_state,
            )?;
        }
        self.flush_records()?;
        let delay = self
            .cfg
            .politeness
            .next_fetch_delay(t0.elapsed(), crawl_delay);
        self.frontier.complete(
            lease,
            frontier::Outcome {
                failed: !page && got.error.is_some(),
                page,
                bytes: 0,
                delay,
            },
            &found,
        )?;
        self.live.done.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// A crawl.log line for a URI that was not fetched (or failed).
    fn log_outcome(
        &self,
        thread: usize,
        uri: &CrawlUri,
        code: i32,
        mime: Option<&str>,
        ann: Vec<String>,
    ) -> Result<(), CrawlError> {
        let seed = self.seeds.get(uri.seed as usize).map(|s| s.to_string());
        let line = LogLine {
            status: code,
            size: None,
            uri: uri.url.as_str(),
            hops: &uri.hops,
            via: uri.via.as_ref().map(|v| v.as_str()),
            mime,
            thread,
            fetch: None,
            digest: None,
            seed: seed.as_deref(),
            annotations: ann,
            extra: None,
        };
        // Fatal as on the success path: crawl.log names every URI's end.
        self.log_line(&line)
    }

    /// The robots.txt rules of `uri`'s host, fetching and recording
    /// robots.txt when not cached (following up to five redirects).
    /// `None`: the crawl was stopped while this worker waited for another
    /// one's fetch of the same robots.txt.
    fn robots_for(&self, thread: usize, uri: &CrawlUri) -> Result<Option<Robots>, CrawlError> {
        let cached = || {
            self.robots
                .lock()
                .ok()
                .and_then(|c| c.get(&uri.url, Instant::now()).cloned())
        };
        if let Some(r) = cached() {
            return Ok(Some(r));
        }
        let Some(r_url) = robots_url(&uri.url) else {
            return Ok(Some(Robots::allow_all()));
        };
        // One fetch of a host's robots.txt at a time: a worker that finds
        // it being fetched waits for it, then reads the cache.
        let (fetching, done) = &self.robots_fetching;
        let key = r_url.to_string();
        {
            let mut f = fetching.lock().unwrap_or_else(|p| p.into_inner());
            // Counted while waiting (every way out of the loop uncounts).
            struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
            impl Drop for Waiting<'_> {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let mut waiting = None;
            while f.contains(&key) {
                if waiting.is_none() {
                    self.robots_waiting
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    waiting = Some(Waiting(&self.robots_waiting));
                }
                if self.stopped() {
                    return Ok(None);
                }
                f = done
                    .wait_timeout(f, Duration::from_millis(100))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            drop(waiting);
            if let Some(r) = cached() {
                return Ok(Some(r));
            }
            f.insert(key.clone());
        }
        // Whatever way this returns, the waiting workers are let go.
        struct Fetching<'a>(&'a (Mutex<HashSet<String>>, std::sync::Condvar), String);
        impl Drop for Fetching<'_> {
            fn drop(&mut self) {
                let mut f = self.0.0.lock().unwrap_or_else(|p| p.into_inner());
                f.remove(&self.1);
                self.0.1.notify_all();
            }
        }
        let fetch_turn = Fetching(&self.robots_fetching, key);
        let now = Instant::now();
        // The fetch loop is capture's (robots::fetch_robots): each request
        // is a CrawlUri of its own, a P hop then R hops, logged.
        let mut ru = uri.child(r_url.clone(), Hop::Prerequisite);
        let (robots, ttl) = robots::fetch_robots(
            r_url,
            &self.cfg.engine.robots_agent,
            &self.robots_policy,
            |u: &Url| -> Result<_, CrawlError> {
                match self.fetch_page(&ru) {
                    Ok(f) => {
                        self.log_line(&fetch_line(&ru, &f, thread, None))?;
                        if (300..400).contains(&f.status)
                            && let Some((_, loc)) = f
                                .headers
                                .iter()
                                .find(|(n, _)| n.eq_ignore_ascii_case("location"))
                            && let Ok(next) = u.join(String::from_utf8_lossy(loc).trim())
                        {
                            // The next request is a hop of its own.
                            ru = ru.child(next.clone(), Hop::Redirect);
                            return Ok(RobotsStep::Redirect(next));
                        }
                        match f.robots_body {
                            Some(Err(why)) => {
                                tracing::warn!(
                                    "{u}: robots.txt answered {} but could not be decoded \
                                     ({why}): everything disallowed, asked again after {:?}",
                                    f.status,
                                    self.robots_policy.unreachable_ttl
                                );
                                Ok(RobotsStep::Undecodable(why))
                            }
                            body => Ok(RobotsStep::Answer {
                                status: f.status,
                                body: body.and_then(Result::ok).unwrap_or_default(),
                            }),
                        }
                    }
                    Err(CaptureError::Warc(w)) => Err(w.into()),
                    Err(err) => {
                        self.log_outcome(
                            thread,
                            &ru,
                            error_code(&err),
                            None,
                            vec!["robots".into()],
                        )?;
                        Ok(RobotsStep::Unreachable)
                    }
                }
            },
        )?;
        if let Ok(mut c) = self.robots.lock() {
            c.insert(&uri.url, robots.clone(), now, ttl);
        }
        // The answer is in the cache: the waiting workers need not wait
        // for the sitemaps' commit below too.
        drop(fetch_turn);
        // robots.txt Sitemap: lines are inferred links of the host.
        let maps: Vec<CrawlUri> = robots
            .sitemaps()
            .iter()
            .map(|u| ru.child(u.clone(), Hop::Inferred))
            .filter(|c| {
                let v = self.scope.decide(c);
                if !v.accepted {
                    self.log_scope(c, v.rule);
                }
                v.accepted && self.mine(&c.url)
            })
            .collect();
        if !maps.is_empty() {
            self.frontier.add(&maps)?;
        }
        Ok(Some(robots))
    }

    /// The addresses of `host`; with `resolve-only`, a host outside the
    /// `resolve` table that is not a loopback address is refused before
    /// any lookup.
    fn resolve(&self, host: &str) -> Result<dns::Resolved, CaptureError> {
        if !self.cfg.engine.may_reach(host) {
            return Err(CaptureError::Dns(format!(
                "{host}: not in the resolve table (resolve-only)"
            )));
        }
        // resolve-only: the resolver keeps 127.0.0.0/8 only
        // (`ResolverOptions::loopback_only`).
        self.resolver.resolve(host)
    }

    /// Fetches and records one URI: the one place a page is fetched (a
    /// browser could take its place). Extracts links from the payload.
    fn fetch_page(&self, uri: &CrawlUri) -> Result<FetchedPage, CaptureError> {
        let url = warchest_capture::Url::parse(uri.url.as_str())?;
        let resolved = self.resolve(&url.host)?;
        if let Some(l) = &resolved.lookup
            && self.infomall.is_none()
        {
            self.recorder.record_dns(l)?;
        }
        let target = uri.url.to_string();
        // robots.txt: a prerequisite, or a redirect from one.
        let want_robots = uri.hops.trim_end_matches('R').ends_with('P');
        // robots.txt is always asked for whole: its rules are needed now.
        let (extra, conditional_of) = match self.recorder.index() {
            Some(idx) if self.cfg.engine.recrawl.is_some() && !want_robots => {
                warchest_capture::conditional(idx, &target)?
            }
            _ => (Vec::new(), None),
        };
        let mut x = if self.cfg.politeness.keep_alive {
            // The scheme too: http and https on one port are two servers.
            let key = format!("{}://{}", uri.url.scheme(), frontier::host_key(&uri.url));
            let request = chttp::get_request_keep_alive(&url, &self.cfg.engine.user_agent, &extra);
            let kept = self.conns.take(&key);
            let (x, kept) = chttp::fetch_keep(&url, &resolved.addrs, request, &self.fetch, kept)?;
            if let Some(k) = kept {
                self.conns.put(key, k);
            }
            x
        } else {
            let request = chttp::get_request(&url, &self.cfg.engine.user_agent, &extra);
            chttp::fetch(&url, &resolved.addrs, request, &self.fetch)?
        };
        let status = x.response.head.status().unwrap_or(0);
        let content_type = x
            .response
            .head
            .content_type()
            .map(|c| String::from_utf8_lossy(&c).trim().to_string());
        let headers: Vec<(String, Vec<u8>)> = x
            .response
            .head
            .fields()
            .iter()
            .map(|f| (f.name_str().into_owned(), f.value().into_owned()))
            .collect();
        // The payload, content coding removed, through the extractor; a
        // 2xx robots.txt's decoded by the rule capture uses, so a body
        // that does not decode is said to, not read as empty rules.
        let mut robots_body = None;
        let mut read_stopped = None;
        let mut extractor = Extractor::new(&uri.url, content_type.as_deref(), &self.cfg.extract);
        if want_robots {
            if (200..300).contains(&status) {
                let head_len = x.response.head.raw().len() as u64;
                let truncated = x.response.truncated.as_ref().map(|t| t.as_str());
                robots_body = Some(match x.response.block.seek(SeekFrom::Start(head_len)) {
                    Ok(_) => robots::decode_body(
                        BufReader::new(&mut x.response.block),
                        &x.response.head,
                        truncated,
                    ),
                    Err(e) => Err(format!("reading the recorded body: {e}")),
                });
            }
        } else if (200..300).contains(&status) {
            let head_len = x.response.head.raw().len() as u64;
            read_stopped = feed_payload(&mut x.response, head_len, &mut extractor);
        }
        let mut extracted = if want_robots {
            Extracted::default()
        } else {
            extractor.finish()
        };
        // The reader's stop comes first: the extractor saw only what came
        // before it.
        if let Some(s) = read_stopped {
            extracted.stopped = Some(s);
        }
        // A 304 to a recrawl's conditional request has no body: the links
        // are the earlier crawl's copy's, so the recrawl goes as deep.
        if status == 304
            && conditional_of.is_some()
            && let Some(idx) = self.recorder.index()
            && let Some(prev) = idx.get_url(&target)?
        {
            extracted = self
                .extract_original(uri, &prev.entry)
                .unwrap_or_else(|err| {
                    tracing::warn!("{}: the earlier copy's links: {err}", uri.url);
                    Extracted {
                        stopped: Some(crate::links::Stopped::new(
                            crate::links::StopReason::Read,
                            format!("the earlier copy's payload: {err}"),
                        )),
                        ..Extracted::default()
                    }
                });
        }
        let ms = x.elapsed.as_millis() as u64;
        let mut meta = vec![("fetchTimeMs".to_string(), ms.to_string())];
        if let Some(v) = &uri.via {
            meta.push(("via".to_string(), v.to_string()));
        }
        if !uri.hops.is_empty() {
            meta.push(("hopsFromSeed".to_string(), uri.hops.clone()));
        }
        if let Some(s) = self.seeds.get(uri.seed as usize) {
            meta.push(("sourceTag".to_string(), s.to_string()));
        }
        // Heritrix's outlink lines: URL, hop letter, context.
        for l in &extracted.links {
            meta.push((
                "outlink".to_string(),
                format!("{} {} {}", l.url, l.hop.letter(), l.context),
            ));
        }
        let truncated = x
            .response
            .truncated
            .as_ref()
            .map(|t| t.as_str().to_string());
        let body_len = x.response.len - x.response.head.raw().len() as u64;
        let digest = warchest::digest::Digest::new(
            x.response.payload.algorithm,
            x.response.payload.payload.as_bytes(),
        )
        .to_string();
        let content_size = x.response.len;
        let placed;
        let kind = if let Some(im) = &self.infomall {
            // Web InfoMall: the response as received; origin is the URL
            // whose redirect led here.
            let origin = uri
                .via
                .as_ref()
                .filter(|_| uri.hops.ends_with('R'))
                .map(|v| v.as_str());
            x.response
                .block
                .seek(SeekFrom::Start(0))
                .map_err(|e| CaptureError::Io("spool".into(), e))?;
            let len = x.response.len;
            placed = Some(im.write(
                &crate::infomall::Capture {
                    url: &target,
                    origin,
                    date: x.started,
                    ip: Some(x.ip),
                },
                &mut (&mut x.response.block).take(len),
                len,
            )?);
            Kind::Response
        } else {
            let r = self.recorder.record_http(HttpRecord::of_exchange(
                target,
                &mut x,
                meta,
                conditional_of,
            ))?;
            placed = r.placed;
            r.kind
        };
        Ok(FetchedPage {
            status,
            content_type,
            body_len,
            digest: Some(digest),
            started: x.started,
            ms,
            ip: Some(x.ip),
            kind,
            truncated,
            extracted,
            headers,
            robots_body,
            content_size,
            placed,
        })
    }
}

impl Crawl {
    /// The links of an earlier crawl's copy of `uri` (a recrawl's 304):
    /// its payload read in place, checked against its digest, decoded.
    fn extract_original(
        &self,
        uri: &CrawlUri,
        e: &warchest_ops::dedupe::IndexEntry,
    ) -> Result<Extracted, warchest::Error> {
        let rec = warchest_ops::revisit::identical_payload_digest(
            &e.original.target_uri,
            &e.original,
            warchest::warc::Version::V1_1,
        )?;
        let p = warchest_ops::revisit::payload_at(&e.location, rec.header(), true)?;
        let ct = p
            .http_head()
            .and_then(|h| h.content_type())
            .map(|c| String::from_utf8_lossy(&c).trim().to_string());
        // At most `max-extract-bytes` go to the extractor (it stops
        // there, as for a fresh fetch); the rest is still read, for the
        // digest check.
        struct Feed(Extractor);
        impl std::io::Write for Feed {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.write(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut feed = Feed(Extractor::new(&uri.url, ct.as_deref(), &self.cfg.extract));
        p.copy_to(&mut feed)?;
        Ok(feed.0.finish())
    }
}

/// Feeds the recorded payload of `resp` (its HTTP head `head_len` bytes),
/// content coding undone, to `extractor`, until its end or the
/// extractor's bound (`max-extract-bytes`, whose stop the extractor
/// gives); why reading stopped before the payload's end otherwise.
fn feed_payload(
    resp: &mut chttp::Captured,
    head_len: u64,
    extractor: &mut Extractor,
) -> Option<crate::links::Stopped> {
    use crate::links::{StopReason, Stopped};
    if let Err(e) = resp.block.seek(SeekFrom::Start(head_len)) {
        return Some(Stopped::new(
            StopReason::Read,
            format!("reading the recorded body: {e}"),
        ));
    }
    let body = BufReader::new(&mut resp.block);
    let mut r = match warchest::http::payload_reader(body, &resp.head, true) {
        Ok(r) => r,
        Err(e) => return Some(Stopped::new(StopReason::Decode, e.to_string())),
    };
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match r.read(&mut buf) {
            // Past `max-extract-bytes` the extractor's own stop says so.
            Ok(0) => return None,
            Err(e) => return Some(Stopped::new(StopReason::Decode, e.to_string())),
            Ok(n) => {
                extractor.write(&buf[..n]);
                if extractor.is_past_bound() {
                    return None;
                }
            }
        }
    }
}

/// One fetch's result, as the engine needs it (a browser fetching the
/// page could fill the same).
struct FetchedPage {
    status: u16,
    content_type: Option<String>,
    body_len: u64,
    digest: Option<String>,
    started: time::OffsetDateTime,
    ms: u64,
    #[allow(dead_code)]
    ip: Option<std::net::IpAddr>,
    kind: Kind,
    truncated: Option<String>,
    extracted: Extracted,
    headers: Vec<(String, Vec<u8>)>,
    /// A 2xx robots.txt's decoded body, or why it did not decode.
    robots_body: Option<Result<Vec<u8>, String>>,
    /// The record's length as received, HTTP head included.
    content_size: u64,
    /// The WARC file (final name) and offset of the response or revisit.
    placed: Option<(PathBuf, u64)>,
}

/// The crawl.log line of a fetch (annotations left to the caller).
fn fetch_line<'a>(
    uri: &'a CrawlUri,
    f: &'a FetchedPage,
    thread: usize,
    seed: Option<&'a str>,
) -> LogLine<'a> {
    LogLine {
        status: f.status as i32,
        size: Some(f.body_len),
        uri: uri.url.as_str(),
        hops: &uri.hops,
        via: uri.via.as_ref().map(|v| v.as_str()),
        mime: f.content_type.as_deref(),
        thread,
        fetch: Some((f.started, f.ms)),
        digest: f.digest.as_deref(),
        seed,
        annotations: Vec::new(),
        extra: Some(log_extra(f.content_size, f.placed.as_ref())),
    }
}

/// crawl.log's last column, as Heritrix writes it with its WARC writer:
/// `contentSize` (the response as received, head included), and the
/// WARC file's name and the record's offset in it.
fn log_extra(content_size: u64, placed: Option<&(PathBuf, u64)>) -> serde_json::Value {
    let mut x = serde_json::Map::new();
    x.insert("contentSize".into(), content_size.into());
    if let Some((file, offset)) = placed {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        x.insert("warcFilename".into(), name.unwrap_or_default().into());
        x.insert("warcFileOffset".into(), (*offset).into());
    }
    serde_json::Value::Object(x)
}

/// Heritrix's negative status codes for fetch failures.
fn error_code(e: &CaptureError) -> i32 {
    match e {
        CaptureError::Dns(_) => -1,
        CaptureError::Io(_, io) => match io.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => -4,
            std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::NotFound
            | std::io::ErrorKind::AddrNotAvailable => -2,
            _ => -3,
        },
        CaptureError::Tls(_) => -2,
        CaptureError::Http(_) => -3,
        CaptureError::Url(_) => -7,
        _ => -5,
    }
}

/// The serial a resumed crawl's next file takes: one past the highest
/// serial among `dir`'s files of `prefix` (`.open` ones too), 0 when there
/// are none. Not the number of files: with a pool of writers an empty
/// `.open` file of a lower serial may have been removed while a higher one
/// stayed, and a count would hand out a serial already taken.
fn next_serial(dir: &Path, prefix: &str) -> u64 {
    let prefix = warchest::write::rotate::sanitize_name_part(prefix);
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| serial_of(&e.file_name().to_string_lossy(), &prefix))
        .map(|s| s.saturating_add(1))
        .max()
        .unwrap_or(0)
}

/// The serial of an Annex B file name `PREFIX-TIMESTAMP-SERIAL-HOST...`
/// (`prefix` as sanitized for names; the timestamp 14 digits), or `None`
/// for a name not of that form.
fn serial_of(name: &str, prefix: &str) -> Option<u64> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    let (stamp, rest) = rest.split_once('-')?;
    let (serial, _) = rest.split_once('-')?;
    if stamp.len() != 14 || !digits(stamp) || !digits(serial) {
        return None;
    }
    serial.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn closing_names_few_files_whole_and_many_in_short() {
        let files = |n: usize| -> Vec<PathBuf> {
            (0..n)
                .map(|i| PathBuf::from(format!("a-{i}.warc.gz")))
                .collect()
        };
        assert_eq!(super::names(&[]), "none");
        assert_eq!(super::names(&files(2)), "a-0.warc.gz, a-1.warc.gz");
        assert_eq!(super::names(&files(8)).matches(".warc.gz").count(), 8);
        assert_eq!(
            super::names(&files(300)),
            "a-0.warc.gz, a-1.warc.gz, a-2.warc.gz and 297 more"
        );
    }

    use super::*;

    thread_local! {
        /// When set, the next checkpoint sync of the WARC files fails as
        /// a handle that could not be made would (`EMFILE`), not a sync.
        pub(super) static FAIL_HANDLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// Called after each checkpoint sync of the output files.
        pub(super) static ON_SYNC: std::cell::RefCell<Option<Box<dyn FnMut()>>> = const { std::cell::RefCell::new(None) };
    }

    /// A crawl in `dir` configured by `toml`, opened (not run).
    /// A bad reread of the exclusion file keeps the exclusions in force,
    /// is warned of once however often it is tried, and is shown in the
    /// status JSON until a reread works.
    #[test]
    fn a_bad_exclusion_file_is_warned_of_once_and_shown() {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("crawl");
        let ex = out.path().join("exclude.txt");
        std::fs::write(&ex, "/spam/\n").unwrap();
        let toml = format!(
            "seeds = [\"http://a.test/\"]\nexclusion-file = \"{}\"\n",
            ex.display()
        );
        let c = open_crawl(&dir, &toml);
        let status =
            |c: &Crawl| -> serde_json::Value { serde_json::from_str(&c.snapshot().0).unwrap() };
        assert_eq!(status(&c)["exclusion_file_error"], serde_json::Value::Null);
        std::fs::write(&ex, "(\n").unwrap();
        assert!(c.reload_exclusions(), "the first failure is warned of");
        assert!(!c.reload_exclusions(), "the same failure again is not");
        let shown = status(&c)["exclusion_file_error"].clone();
        assert!(
            shown.as_str().is_some_and(|e| e.contains("exclude.txt")),
            "{shown}"
        );
        let spam = CrawlUri::seed(Url::parse("http://a.test/").unwrap(), 0)
            .child(Url::parse("http://a.test/spam/1").unwrap(), Hop::Link);
        assert!(!c.scope.decide(&spam).accepted, "the old exclusions hold");
        std::fs::write(&ex, "/other/\n").unwrap();
        assert!(!c.reload_exclusions());
        assert_eq!(status(&c)["exclusion_file_error"], serde_json::Value::Null);
        assert!(c.scope.decide(&spam).accepted);
    }

    /// Budgets whose counters cannot be read stop the crawl with an
    /// error; they used to read as "not reached", and the crawl went on
    /// past them. The counters are unreadable as after a change that
    /// failed part way (a disk error): the frontier refuses every read.
    #[test]
    fn unreadable_counters_fail_the_budget_check() {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("crawl");
        let c = open_crawl(&dir, "seeds = [\"http://a.test/\"]\nmax-pages = 5\n");
        assert!(!c.budget_reached().unwrap());
        c.frontier().fail_a_change();
        let err = c.budget_reached().expect_err("the counters are unreadable");
        assert!(err.to_string().contains("failed part way"), "{err}");
        // The progress line and the status say so, with no zeros.
        let line = progress_line(&c, Instant::now(), 5);
        assert!(line.starts_with("frontier counters unreadable"), "{line}");
        let (json, metrics) = c.snapshot();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["counts"], serde_json::Value::Null, "{v}");
        assert!(v["counts_error"].as_str().is_some(), "{v}");
        assert!(
            metrics.contains("warchest_crawl_counts_error 1"),
            "{metrics}"
        );
        assert!(!metrics.contains("warchest_crawl_done"), "{metrics}");
        // The run stops on it at once, before any fetch.
        let err = c.run(&|_| {}).expect_err("the budget cannot be checked");
        assert!(err.to_string().contains("failed part way"), "{err}");
    }

    fn open_crawl(dir: &Path, toml: &str) -> Crawl {
        let cfg = CrawlConfig::from_toml(toml).unwrap();
        Crawl::open(dir, cfg, toml, Arc::new(AtomicBool::new(false))).unwrap()
    }

    /// A record written between the presync and the companion is synced
    /// by the companion, before the dedupe index's durable commit: the
    /// length of the `.open` file at each sync (what was flushed to it,
    /// and synced: nothing else writes meanwhile) is noted, and the last
    /// sync's covers the record. Removing the companion's sync fails this.
    #[test]
    fn the_companion_syncs_what_was_written_after_the_presync() {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("crawl");
        let toml = "seeds = [\"http://a.test/\"]\nwarc-writers = 1\n";
        let c = open_crawl(&dir, toml);
        let rec = c.recorder();
        let now = time::OffsetDateTime::now_utc();
        rec.record_resource("urn:test:a", now, "text/plain", b"a", &[])
            .unwrap();
        let open_len = {
            let archive = archive_dir(&dir);
            move || -> u64 {
                std::fs::read_dir(&archive)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|x| x == "open"))
                    .map(|p| std::fs::metadata(p).unwrap().len())
                    .sum()
            }
        };
        let synced = Arc::new(Mutex::new(Vec::new()));
        let (s, r, len) = (synced.clone(), rec.clone(), open_len.clone());
        ON_SYNC.with(|f| {
            *f.borrow_mut() = Some(Box::new(move || {
                let mut s = s.lock().unwrap();
                s.push(len());
                if s.len() == 1 {
                    // After the presync, before the companion.
                    r.record_resource("urn:test:b", now, "text/plain", b"b", &[])
                        .unwrap();
                }
            }))
        });
        c.frontier().checkpoint().unwrap();
        ON_SYNC.with(|f| f.borrow_mut().take());
        let synced = synced.lock().unwrap().clone();
        rec.flush().unwrap();
        let end = open_len();
        assert_eq!(synced.len(), 2, "the presync and the companion");
        assert!(
            synced[0] < end,
            "b written after the presync: {synced:?} {end}"
        );
        assert_eq!(synced[1], end, "the companion synced b: {synced:?}");
    }

    /// A checkpoint syncs the open Web InfoMall file too (its URIs are
    /// counted done): it used to sync only the recorder's WARC files.
    #[test]
    fn a_checkpoint_syncs_the_open_infomall_file() {
        let out = tempfile::tempdir().unwrap();
        let toml = "seeds = [\"http://a.test/\"]\nformat = \"infomall\"\n";
        let c = open_crawl(&out.path().join("crawl"), toml);
        let im = c.infomall.as_ref().unwrap();
        let cap = crate::infomall::Capture {
            url: "http://a.test/",
            origin: None,
            date: time::OffsetDateTime::now_utc(),
            ip: None,
        };
        im.write(&cap, &mut &b"HTTP/1.1 200 OK\r\n\r\nx"[..], 20)
            .unwrap();
        let syncs = || crate::infomall::tests::SYNCS.with(|n| n.get());
        let before = syncs();
        c.frontier().checkpoint().unwrap();
        assert_eq!(syncs() - before, 2, "by the presync and the companion");
    }

    /// A checkpoint whose WARC sync fails on something else than the
    /// fdatasync (a handle that could not be made, `EMFILE`) fails that
    /// checkpoint only: the next one syncs and commits. Such an error
    /// used to be latched like a failed fdatasync, failing every later
    /// checkpoint.
    #[test]
    fn a_checkpoint_failing_on_a_handle_not_a_sync_does_not_fail_the_next() {
        let out = tempfile::tempdir().unwrap();
        let toml = "seeds = [\"http://a.test/\"]\n";
        let c = open_crawl(&out.path().join("crawl"), toml);
        c.recorder()
            .record_resource(
                "urn:test:a",
                time::OffsetDateTime::now_utc(),
                "text/plain",
                b"a",
                &[],
            )
            .unwrap();
        FAIL_HANDLE.with(|f| f.set(true));
        assert!(c.frontier().checkpoint().is_err());
        c.frontier().checkpoint().unwrap();
        assert!(!c.recorder().failed());
    }

    #[test]
    fn serial_of_reads_annex_b_names_of_the_prefix_only() {
        let p = "crawl";
        assert_eq!(
            serial_of("crawl-20261129021900-00007-host.warc.gz", p),
            Some(7)
        );
        assert_eq!(
            serial_of("crawl-20261129021900-00012-host.warc.gz.open", p),
            Some(12)
        );
        assert_eq!(serial_of("crawl-20261129021900-00003-host.dat", p), Some(3));
        // A prefix with dashes of its own.
        assert_eq!(
            serial_of("my-crawl-20261129021900-00004-h-1.warc.gz", "my-crawl"),
            Some(4)
        );
        // Another prefix, a short stamp, a serial not all digits, no host.
        assert_eq!(
            serial_of("other-20261129021900-00009-host.warc.gz", p),
            None
        );
        assert_eq!(
            serial_of("crawlx-20261129021900-00009-host.warc.gz", p),
            None
        );
        assert_eq!(serial_of("crawl-2026112902190-00009-host.warc.gz", p), None);
        assert_eq!(
            serial_of("crawl-20261129021900-+0009-host.warc.gz", p),
            None
        );
        assert_eq!(serial_of("crawl-20261129021900-00009", p), None);
        assert_eq!(serial_of("crawl.cdxj", p), None);
    }

    /// Serial 1's empty `.open` file was removed while serial 2's stayed:
    /// two files, but the next serial is 3, not 2.
    #[test]
    fn next_serial_is_past_the_highest_not_the_count() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(next_serial(dir.path(), "crawl"), 0);
        for n in [
            "crawl-20261129021900-00000-host.warc.gz",
            "crawl-20261129021901-00002-host.warc.gz.open",
            "other-20261129021901-00009-host.warc.gz",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        assert_eq!(next_serial(dir.path(), "crawl"), 3);
        assert_eq!(next_serial(dir.path().join("absent").as_path(), "crawl"), 0);
    }
}
