//! The frontier: what is queued, what is in flight and what was seen, on
//! disk in one redb database (`frontier.redb` in the crawl directory).
//!
//! Every change is journaled (`journal.rs`: one `write()` to
//! `frontier.journal`) and then applied to one write transaction kept
//! open across many changes, committed without a sync by the change or
//! take that finds it holding 1,024 changes or 100 ms old (an idle
//! frontier leaves it open until its next change or checkpoint), so
//! redb's fixed cost a commit is paid once for many URIs. A `kill -9` at
//! any moment loses nothing queued: on reopening, the journal's changes
//! since the last checkpoint are replayed over the database, and the URIs
//! that were in flight go back to their queues (they are fetched again;
//! nothing else is). Each change writes its journal position (epoch,
//! record number) in its own transaction, and the replay skips the
//! records the database already holds: after a normal close redb has made
//! its unsynced commits durable. No worker waits for a sync: the journal
//! is synced on its own every second (what a power loss may lose), and a
//! checkpoint (the open transaction committed, the companion synced: the
//! crawl's open WARC file and its dedupe index; then the new epoch
//! committed durably and the journal started afresh) comes every
//! `checkpoint-interval` (10 s) or 16 MiB of journal, and when the crawl
//! ends. Memory does not grow with the
//! frontier: queues, the seen set and the ready list are B-trees on disk.
//!
//! Taking a URI is not journaled: lost with a kill, the URI is still in
//! its queue, where an in-flight one is put back anyway.
//!
//! Layout (all keys and values bytes):
//! - `queue`: `host \0 level:u16 class:u8 seq:u64` -> URI. One queue per
//!   host (its key prefix); within it, breadth first by link hops
//!   (`level`), and at one level embeds and redirects (`class` 0) before
//!   pages (`class` 1), so a page's embeds come before the next page.
//! - `hosts`: `host` -> state (queued count, URIs in flight, next slot,
//!   budgets).
//! - `ready`: `when_ms:u64 host` -> (): the hosts with queued URIs and
//!   fewer in flight than the per-host limit ([`Frontier::set_per_host`],
//!   the `host-parallel` key; 1 by default), by the time they may next be
//!   asked.
//! - `seen`: URL -> (): every URL queued as a link (or as anything, in a
//!   frontier made before `seen_embed`), and every URL a browser fetched
//!   ([`Frontier::mark_seen`]).
//! - `seen_embed`: URL -> (): the URLs queued first as no link (an embed,
//!   a URL in script text, a redirect of such), kept apart so that a link
//!   naming one later is noted in `linked` (it makes the URL a page) and a
//!   link naming any other seen URL writes nothing. A frontier made before
//!   this table (no `SPLIT` in `meta`) keeps every URL in `seen`.
//! - `linked`: URL -> (): the URLs of `seen_embed` a link or sitemap entry
//!   named later; consulted when such a URL is taken
//!   ([`CrawlUri::take_page_standing`]).
//! - `inflight`: queue key -> URI: taken, not finished.
//! - `meta`: name -> u64 counters, the journal's epoch and the position
//!   of the last change applied (`journal_at_epoch`, `journal_at`), and
//!   the frontier's format version (`format`, [`FORMAT_VERSION`]; none in
//!   a frontier made before it): a frontier of a newer format is refused,
//!   where an older binary would misread it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use url::Url;

use crate::journal::{self, Journal, Op};
use crate::uri::{CrawlUri, Hop};

const QUEUE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("queue");
const HOSTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("hosts");
const READY: TableDefinition<&[u8], ()> = TableDefinition::new("ready");
const SEEN: TableDefinition<&[u8], ()> = TableDefinition::new("seen");
/// URLs queued first as no link (see the module documentation).
const SEEN_EMBED: TableDefinition<&[u8], ()> = TableDefinition::new("seen_embed");
/// URLs queued first as no link (an embed, a script's URL) that a link or
/// sitemap entry named later: they are pages when fetched (docs/crawl.md,
/// "Pages and resources"). At most one entry a URL of `seen_embed`, so it
/// is bounded as the seen URLs are. (In a frontier made before
/// `seen_embed`, any seen URL a link named again.)
const LINKED: TableDefinition<&[u8], ()> = TableDefinition::new("linked");
const INFLIGHT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("inflight");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The frontier's tables, each opened once for a change: opening and
/// closing a redb table costs a lookup in, and a write to, the
/// transaction's table tree, and a URI's change used about 17 opens.
struct Tables<'t> {
    queue: redb::Table<'t, &'static [u8], &'static [u8]>,
    hosts: redb::Table<'t, &'static [u8], &'static [u8]>,
    ready: redb::Table<'t, &'static [u8], ()>,
    seen: redb::Table<'t, &'static [u8], ()>,
    seen_embed: redb::Table<'t, &'static [u8], ()>,
    linked: redb::Table<'t, &'static [u8], ()>,
    inflight: redb::Table<'t, &'static [u8], &'static [u8]>,
    meta: redb::Table<'t, &'static str, u64>,
}
/// The journal's epoch (`meta`): a journal of another epoch is not
/// replayed.
const EPOCH: &str = "journal_epoch";
/// The journal position of the last change applied (`meta`): its epoch
/// and record number (from 1), written in the change's own transaction.
/// A commit redb made durable without a checkpoint (an unsynced one,
/// which redb makes durable when the database is closed normally, as
/// after a failed change or a failed checkpoint) holds the changes up to
/// it: the replay skips them, where applying them again would count
/// them twice.
const AT_EPOCH: &str = "journal_at_epoch";
const AT: &str = "journal_at";
/// Set (`meta`, 1) in a frontier made with `seen_embed`: its seen URLs
/// queued first as no link are there, not in `seen`.
const SPLIT: &str = "seen_embed";
/// The frontier's format version (`meta`), written when a frontier is
/// made. A frontier without it was made before it, and is read by its
/// other marks ([`SPLIT`], the epoch) as before.
const FORMAT: &str = "format";
/// The frontier format this version makes, and the newest it reads: one
/// with the `seen_embed` table and the journal. A frontier of a higher
/// version (a change of its tables' meaning by a later version) is
/// refused on opening: read by the rules of this one, it would be
/// misread with no error, as an older binary misreads `seen_embed`,
/// which it does not know.
pub const FORMAT_VERSION: u64 = 1;

/// The frontier database's page cache.
const CACHE_BYTES: usize = 64 << 20;

/// A frontier error, naming the database.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path}: {msg}")]
pub struct FrontierError {
    /// "frontier", or "dedupe index" for its companion's sync.
    what: &'static str,
    path: PathBuf,
    msg: String,
}

type Result<T> = std::result::Result<T, FrontierError>;

/// Counters kept with the frontier (they survive a resume).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// URIs waiting in queues.
    pub queued: u64,
    /// URIs taken and not finished.
    pub in_flight: u64,
    /// URIs finished (whatever the outcome).
    pub done: u64,
    /// Finished with an error or a status of 400 or more.
    pub failed: u64,
    /// Pages (HTML documents) fetched.
    pub pages: u64,
    /// Response bytes received.
    pub bytes: u64,
    /// URLs ever queued (the seen set).
    pub seen: u64,
}

/// A host's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct HostState {
    queued: u64,
    /// URIs in flight (one byte on disk: the per-host limit is at most
    /// 64; a frontier written before the limit stored 0 or 1 here).
    busy: u8,
    /// Milliseconds since the epoch when it may next be asked.
    next_ms: u64,
    pages: u64,
    bytes: u64,
}

impl HostState {
    fn encode(&self) -> [u8; 33] {
        let mut b = [0u8; 33];
        b[..8].copy_from_slice(&self.queued.to_be_bytes());
        b[8] = self.busy;
        b[9..17].copy_from_slice(&self.next_ms.to_be_bytes());
        b[17..25].copy_from_slice(&self.pages.to_be_bytes());
        b[25..33].copy_from_slice(&self.bytes.to_be_bytes());
        b
    }
    fn decode(b: &[u8]) -> HostState {
        let u = |r: std::ops::Range<usize>| {
            b.get(r)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_be_bytes)
                .unwrap_or(0)
        };
        HostState {
            queued: u(0..8),
            busy: b.get(8).copied().unwrap_or(0),
            next_ms: u(9..17),
            pages: u(17..25),
            bytes: u(25..33),
        }
    }
}

/// A URI taken from the frontier: give it back with [`Frontier::complete`]
/// or [`Frontier::retry`].
#[derive(Debug, Clone)]
pub struct Lease {
    /// The URI to fetch.
    pub uri: CrawlUri,
    /// Its host key.
    pub host: String,
    key: Vec<u8>,
}

/// What [`Frontier::next`] found.
#[derive(Debug)]
pub enum Next {
    /// A URI to fetch now.
    Uri(Box<Lease>),
    /// Nothing may be fetched before this long (politeness).
    Wait(Duration),
    /// Nothing queued; URIs may still be in flight.
    Empty,
}

/// How a finished URI counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// It failed (error or status >= 400).
    pub failed: bool,
    /// It was a page.
    pub page: bool,
    /// Bytes received.
    pub bytes: u64,
    /// Wait this long before the host's next fetch.
    pub delay: Duration,
}

/// The host key of a URL: `host` or `host:port` (one queue, one
/// connection and one politeness clock per key).
pub fn host_key(u: &Url) -> String {
    let host = u.host_str().unwrap_or("");
    match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The URI as stored: `seed \n hops \n via \n url`, then `\n tries`
/// when it was tried before (a URL holds no newline).
pub(crate) fn encode_uri(u: &CrawlUri) -> Vec<u8> {
    let via = u.via.as_ref().map(|v| v.as_str()).unwrap_or("");
    let mut s = format!("{}\n{}\n{}\n{}", u.seed, u.hops, via, u.url.as_str());
    if u.tries > 0 {
        s.push('\n');
        s.push_str(&u.tries.to_string());
    }
    s.into_bytes()
}

pub(crate) fn decode_uri(b: &[u8]) -> Option<CrawlUri> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.splitn(5, '\n');
    let seed = it.next()?.parse().ok()?;
    let hops = it.next()?.to_string();
    let via = it.next()?;
    let url = Url::parse(it.next()?).ok()?;
    let tries = match it.next() {
        Some(t) => t.parse().ok()?,
        None => 0,
    };
    Some(CrawlUri {
        url,
        hops,
        via: if via.is_empty() {
            None
        } else {
            Url::parse(via).ok()
        },
        seed,
        tries,
    })
}

/// The queue position of a URI within its host: link hops, then embeds
/// and redirects before pages.
fn order(u: &CrawlUri) -> (u16, u8) {
    let level = u16::try_from(u.links_hops()).unwrap_or(u16::MAX);
    let class = match u.last_hop() {
        Some(Hop::Link) | Some(Hop::Inferred) | None => 1,
        Some(_) => 0,
    };
    (level, class)
}

fn queue_key(host: &str, u: &CrawlUri, seq: u64) -> Vec<u8> {
    let (level, class) = order(u);
    let mut k = Vec::with_capacity(host.len() + 12);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k.extend_from_slice(&level.to_be_bytes());
    k.push(class);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// A URI to queue, its bytes made before the frontier's lock is taken
/// (the lock covers only the table edits): its host key, its queue key
/// (the sequence number, the last 8 bytes, is set under the lock) and
/// its stored form.
pub(crate) struct Queued<'a> {
    url: &'a str,
    host: String,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Reached by a link or sitemap entry (`CrawlUri::reached_as_page`).
    linked: bool,
}

/// [`Queued`] forms of `uris`.
pub(crate) fn prepare(uris: &[CrawlUri]) -> Vec<Queued<'_>> {
    uris.iter()
        .map(|u| {
            let host = host_key(&u.url);
            Queued {
                url: u.url.as_str(),
                key: queue_key(&host, u, 0),
                host,
                value: encode_uri(u),
                linked: u.reached_as_page(),
            }
        })
        .collect()
}

fn ready_key(when: u64, host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + host.len());
    k.extend_from_slice(&when.to_be_bytes());
    k.extend_from_slice(host.as_bytes());
    k
}

/// A database synced before each of the frontier's checkpoints (the
/// crawl's dedupe index): its sync returns whether it had anything to
/// make durable.
pub type Companion = Box<dyn Fn() -> std::result::Result<bool, String> + Send + Sync>;

/// How often the journal is synced (what a power loss may lose).
const SYNC_EVERY: Duration = Duration::from_secs(1);
/// A checkpoint (redb committed durably, the journal started afresh) at
/// least this often...
const CHECKPOINT_EVERY: Duration = Duration::from_secs(10);
/// ...or once the journal holds this much.
pub const CHECKPOINT_BYTES: u64 = 16 << 20;

/// Hands the checkpoint back if the caller making it unwinds.
struct Turn<'a>(&'a AtomicBool);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Commit the open write transaction (unsynced) after this many changes...
const BATCH_CHANGES: u32 = 1024;
/// ...or once it is this old (milliseconds).
const BATCH_MS: u64 = 100;

/// The journal and redb's one write transaction, kept open across many
/// changes (see [`Frontier::change`]), under one lock.
struct Log {
    j: Journal,
    /// The write transaction every change, take and read goes into.
    txn: Option<redb::WriteTransaction>,
    /// Changes in `txn`, and when it was opened (ms from `started`).
    pending: u32,
    opened_ms: u64,
    /// A change is being applied (set again when one unwinds).
    in_change: bool,
    /// A change failed part way: `txn` was dropped (aborted), so redb no
    /// longer holds what the journal says; nothing more is applied or
    /// committed, and reopening replays the journal.
    broken: Option<String>,
}

/// The frontier; see the module documentation. Shared by the workers:
/// every change goes through one lock (the journal and redb's writer).
pub struct Frontier {
    db: Database,
    path: PathBuf,
    /// The journal and the open write transaction.
    journal: Mutex<Log>,
    /// A second handle on the journal, synced without its lock.
    journal_file: std::fs::File,
    started: Instant,
    /// Milliseconds from `started` of the last journal sync and
    /// checkpoint.
    synced_ms: AtomicU64,
    checkpoint_ms: AtomicU64,
    /// Someone is syncing the journal / making a checkpoint.
    syncing: AtomicBool,
    checkpointing: AtomicBool,
    /// Checkpoint when the journal is this old or this large.
    checkpoint_every: Duration,
    checkpoint_bytes: u64,
    /// Commit the open transaction once it is this old ([`BATCH_MS`];
    /// longer in tests that need it left open).
    batch_ms: u64,
    /// A checkpoint or sync that failed after its change was applied:
    /// the change returned Ok, and this is reported by the next
    /// [`Frontier::sync_if_due`] (the crawl's ticker stops the crawl on it).
    failed_after: Mutex<Option<FrontierError>>,
    /// The companion and its file (named in its errors).
    companion: Option<(PathBuf, Companion)>,
    /// Run by a checkpoint before it takes the journal's lock
    /// ([`Frontier::set_presync`]).
    presync: Option<Companion>,
    /// URIs of one host in flight at once.
    per_host: u8,
    /// The seen URLs queued first as no link are in `seen_embed` (a
    /// frontier made with it, [`SPLIT`]); false for an older frontier,
    /// whose `linked` notes any seen URL a link names again.
    split: bool,
    /// The journal found on opening was replayed and replaced: until then
    /// dropping the frontier must not checkpoint nor remove the journal
    /// (a failed replay leaves it for the next open to fail on too).
    ready: bool,
    /// What opening found amiss (a journal cut or damaged).
    notes: Vec<String>,
    /// See [`Frontier::lost_changes`].
    lost_changes: bool,
}

/// Refuses a frontier whose format ([`FORMAT`]) is newer than
/// [`FORMAT_VERSION`]; one without it (made before it) passes.
fn check_format(db: &Database) -> std::result::Result<(), String> {
    let txn = db.begin_read().map_err(|e| e.to_string())?;
    let meta = match txn.open_table(META) {
        Ok(m) => m,
        // A new database: no table yet.
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    match meta.get(FORMAT).map_err(|e| e.to_string())? {
        Some(v) if v.value() > FORMAT_VERSION => Err(format!(
            "format version {}, newer than this warchest reads (version {FORMAT_VERSION} \
             at most): a later version made it, and only such a version can go on with it",
            v.value()
        )),
        _ => Ok(()),
    }
}

/// The journal of the frontier at `path`: `frontier.redb` ->
/// `frontier.journal`.
pub fn journal_path(path: &Path) -> PathBuf {
    path.with_extension("journal")
}

impl Log {
    fn new(j: Journal) -> Log {
        Log {
            j,
            txn: None,
            pending: 0,
            opened_ms: 0,
            in_change: false,
            broken: None,
        }
    }
}

impl Frontier {
    /// What opening found amiss, a line each: the journal's bytes that
    /// were ignored, and whether whole changes were among them.
    pub fn opening_notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether opening discarded whole changes of a journal damaged in
    /// its middle (not only the change a kill cut at its end).
    pub fn lost_changes(&self) -> bool {
        self.lost_changes
    }

    /// Opens (or creates) the frontier at `path`. The journal's changes
    /// since the last checkpoint are replayed, then URIs left in flight by
    /// an earlier run go back to their queues; the number is returned.
    ///
    /// # Errors
    /// The database cannot be opened or is not a frontier, its format is
    /// newer than [`FORMAT_VERSION`] (nothing is read or written then), or
    /// the journal cannot be read or written.
    pub fn open(path: &Path) -> Result<(Frontier, u64)> {
        let err = |e: &dyn std::fmt::Display| FrontierError {
            what: "frontier",
            path: path.to_path_buf(),
            msg: e.to_string(),
        };
        // redb's page cache defaults to 1 GiB and grows with the frontier
        // (about 0.4 KiB a queued URL measured): bounded, memory stays
        // within the 256 MiB target whatever the frontier's size.
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .create(path)
            .map_err(|e| err(&e))?;
        // Before the journal is read or anything written: a newer
        // version's frontier (and journal) are left as they are.
        check_format(&db).map_err(|e| err(&e))?;
        let jpath = journal_path(path);
        let jerr = |e: &dyn std::fmt::Display| FrontierError {
            what: "frontier journal",
            path: jpath.clone(),
            msg: e.to_string(),
        };
        let old = journal::read(&jpath).map_err(|e| jerr(&e))?;
        // A placeholder journal until the replay's commit is durable: the
        // old one stays on disk until then.
        let scratch = jpath.with_extension("journal.new");
        let j = Journal::create(&scratch, 0).map_err(|e| jerr(&e))?;
        let journal_file = j.handle().map_err(|e| jerr(&e))?;
        let mut f = Frontier {
            db,
            path: path.to_path_buf(),
            journal: Mutex::new(Log::new(j)),
            journal_file,
            started: Instant::now(),
            synced_ms: AtomicU64::new(0),
            checkpoint_ms: AtomicU64::new(0),
            syncing: AtomicBool::new(false),
            checkpointing: AtomicBool::new(false),
            checkpoint_every: CHECKPOINT_EVERY,
            checkpoint_bytes: CHECKPOINT_BYTES,
            batch_ms: BATCH_MS,
            failed_after: Mutex::new(None),
            notes: Vec::new(),
            lost_changes: false,
            companion: None,
            presync: None,
            per_host: 1,
            split: false,
            ready: false,
        };
        let (requeued, epoch) = f.replay_and_recover(&old)?;
        // The new journal replaces the old one only now: a kill before
        // leaves the old one, whose epoch the database no longer has.
        let j = Journal::create(&jpath, epoch).map_err(|e| jerr(&e))?;
        f.journal_file = j.handle().map_err(|e| jerr(&e))?;
        f.journal = Mutex::new(Log::new(j));
        f.ready = true;
        let _ = std::fs::remove_file(&scratch);
        if let Some(d) = old.damage() {
            let note = format!("{}: {d}", jpath.display());
            tracing::warn!("{note}");
            f.notes.push(note);
        }
        f.lost_changes = old.lost_changes();
        Ok((f, requeued))
    }

    /// Syncs `c` (the database at `path`) before each checkpoint: what the
    /// frontier's checkpoint says was fetched is then in `c` too.
    pub fn set_companion(&mut self, path: &Path, c: Companion) {
        self.companion = Some((path.to_path_buf(), c));
    }

    /// Runs `c` at the start of each checkpoint, before the frontier's
    /// lock is taken: the slow part of the companion's sync (the crawl's:
    /// the WARC files' `fdatasync`), so that no worker waits for it; the
    /// companion, called under the lock, then syncs only what was written
    /// meanwhile. A failure fails the checkpoint, named as the
    /// companion's.
    pub fn set_presync(&mut self, c: Companion) {
        self.presync = Some(c);
    }

    /// Sets how often a checkpoint is made: at least every `every`, or
    /// once the journal holds `bytes` (10 s and 16 MiB by default).
    pub fn set_checkpoint(&mut self, every: Duration, bytes: u64) {
        self.checkpoint_every = every;
        self.checkpoint_bytes = bytes;
    }

    fn ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn lock_journal(&self) -> std::sync::MutexGuard<'_, Log> {
        // A panic while it was held (a companion's, during a checkpoint)
        // left the journal whole: records are appended with one write,
        // and the checkpoint resets it only after its commit. A panic
        // inside a change leaves `in_change` set: `change` refuses then.
        self.journal.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn jerr(&self, j: &Journal, e: impl std::fmt::Display) -> FrontierError {
        FrontierError {
            what: "frontier journal",
            path: j.path().to_path_buf(),
            msg: e.to_string(),
        }
    }

    /// A change cut by a panic (its unwinding left `in_change` set) broke
    /// the frontier: its transaction, half applied, is dropped, so no read
    /// sees it and nothing commits it.
    fn cut_by_panic(g: &mut Log) {
        if g.in_change {
            g.txn = None;
            g.in_change = false;
            g.broken
                .get_or_insert_with(|| "a change was cut by a panic".into());
        }
    }

    /// The open write transaction, begun (unsynced) if none is; refused
    /// when the frontier is broken.
    fn open_txn<'a>(&self, g: &'a mut Log) -> Result<&'a redb::WriteTransaction> {
        Self::cut_by_panic(g);
        if let Some(m) = &g.broken {
            return Err(self.err(format!(
                "an earlier change failed part way ({m}); \
                 reopening the frontier replays its journal"
            )));
        }
        if g.txn.is_none() {
            let mut txn = self.db.begin_write().map_err(|e| self.err(e))?;
            // Lost with a kill: the journal holds every change (taking a
            // URI, not journaled, leaves it in its queue).
            txn.set_durability(redb::Durability::None)
                .map_err(|e| self.err(e))?;
            g.txn = Some(txn);
            g.pending = 0;
            g.opened_ms = self.ms();
        }
        g.txn
            .as_ref()
            .ok_or_else(|| self.err("no write transaction"))
    }

    /// `f` in the open write transaction (begun if none is), committed
    /// unsynced once it holds [`BATCH_CHANGES`] changes or is
    /// [`BATCH_MS`] old: redb's fixed cost a commit (table roots,
    /// checksums, dirty pages written) is paid once for many URIs, where
    /// it was paid for each. A change that fails (or unwinds) part way
    /// breaks the frontier: the transaction is dropped, so redb is back at
    /// its last commit; every later change, take and read fails, no
    /// checkpoint is made, and reopening replays the journal's records
    /// after the position that commit holds ([`AT`]).
    fn change<T>(
        &self,
        g: &mut Log,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<T>,
    ) -> Result<T> {
        self.open_txn(g)?;
        g.in_change = true;
        let r = match g.txn.as_ref() {
            Some(txn) => f(txn),
            None => Err(self.err("no write transaction")),
        };
        g.in_change = false;
        match r {
            Ok(v) => {
                g.pending += 1;
                if g.pending >= BATCH_CHANGES
                    || self.ms().saturating_sub(g.opened_ms) >= self.batch_ms
                {
                    self.commit_open(g)?;
                }
                Ok(v)
            }
            Err(e) => {
                g.txn = None;
                g.broken = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Commits the open write transaction, if any (unsynced).
    fn commit_open(&self, g: &mut Log) -> Result<()> {
        Self::cut_by_panic(g);
        if let Some(m) = &g.broken {
            return Err(self.err(format!(
                "an earlier change failed part way ({m}); \
                 reopening the frontier replays its journal"
            )));
        }
        if let Some(txn) = g.txn.take()
            && let Err(e) = txn.commit()
        {
            g.broken = Some(e.to_string());
            return Err(self.err(e));
        }
        g.pending = 0;
        Ok(())
    }

    /// A read in the open write transaction (so it sees every change).
    fn read<T>(&self, f: impl FnOnce(&redb::WriteTransaction) -> Result<T>) -> Result<T> {
        let mut g = self.lock_journal();
        let txn = self.open_txn(&mut g)?;
        f(txn)
    }

    /// One journaled change: its record (`record` writes the payload)
    /// appended to the journal, then `apply` in the open write transaction
    /// ([`Frontier::change`]) with the record's position ([`AT`]), both
    /// under the journal's lock, so no worker sees the change before the
    /// journal holds it. A failed append applies nothing; an error means
    /// nothing was applied. Survives a `kill -9` once this returns; a
    /// power loss, once the journal's next sync or checkpoint is made. A
    /// checkpoint or sync due after the change that fails does not fail
    /// the change (it was applied): it is kept for
    /// [`Frontier::sync_if_due`] to report.
    fn journaled<T>(
        &self,
        record: impl FnOnce(&mut Vec<u8>),
        apply: impl FnOnce(&redb::WriteTransaction) -> Result<T>,
    ) -> Result<T> {
        // The record's bytes are made before the lock: only the append
        // and the table edits are under it.
        let mut payload = Vec::with_capacity(256);
        record(&mut payload);
        let mut g = self.lock_journal();
        // Refused before it is journaled: a broken frontier takes nothing.
        self.open_txn(&mut g)?;
        let mut appended = g.j.append(&payload);
        if appended.is_err() && g.j.is_broken() {
            // A failed write whose undoing failed too: no change could be
            // journaled until the next checkpoint, which a crawl makes
            // only every `checkpoint-interval`. One now (everything so
            // far durable in redb, the journal started afresh) lets the
            // crawl go on; if it fails too, the first error is reported.
            if self.checkpoint_locked(&mut g).is_ok() {
                appended = g.j.append(&payload);
            }
        }
        appended.map_err(|e| self.jerr(&g.j, e))?;
        let at = (g.j.epoch, g.j.records);
        let r = self.change(&mut g, |txn| {
            let r = apply(txn)?;
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            meta.insert(AT_EPOCH, at.0).map_err(|e| self.err(e))?;
            meta.insert(AT, at.1).map_err(|e| self.err(e))?;
            Ok(r)
        })?;
        let big = g.j.bytes >= self.checkpoint_bytes;
        drop(g);
        let now = self.ms();
        let after = if big
            || now.saturating_sub(self.checkpoint_ms.load(Ordering::Relaxed))
                >= self.checkpoint_every.as_millis() as u64
        {
            self.checkpoint_if_free()
        } else {
            self.sync_now_if_due()
        };
        if let Err(e) = after {
            // Not retried by every later change (the crawl's ticker stops
            // the crawl on it: sync_if_due).
            self.checkpoint_ms.store(now, Ordering::Relaxed);
            *self.failed_after.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
        Ok(r)
    }

    /// Syncs the journal when its last sync is a second old (unless
    /// another caller is syncing it). Called after each change and by the
    /// crawl's ticker, so that changes made before a quiet spell (every
    /// worker in a long fetch) are synced too.
    ///
    /// # Errors
    /// The sync failed, or a checkpoint or sync a change made after it
    /// was applied failed since the last call (reported once).
    pub fn sync_if_due(&self) -> Result<()> {
        let earlier = self
            .failed_after
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let r = self.sync_now_if_due();
        match earlier {
            Some(e) => Err(e),
            None => r,
        }
    }

    fn sync_now_if_due(&self) -> Result<()> {
        let now = self.ms();
        if now.saturating_sub(self.synced_ms.load(Ordering::Relaxed))
            < SYNC_EVERY.as_millis() as u64
            || self.syncing.swap(true, Ordering::SeqCst)
        {
            return Ok(());
        }
        let _turn = Turn(&self.syncing);
        // Outside every lock: the other workers go on appending.
        let r = self.journal_file.sync_data();
        self.synced_ms.store(now, Ordering::Relaxed);
        r.map_err(|e| FrontierError {
            what: "frontier journal",
            path: journal_path(&self.path),
            msg: format!("syncing it: {e}"),
        })
    }

    /// A checkpoint, unless another caller is making one.
    fn checkpoint_if_free(&self) -> Result<()> {
        if self.checkpointing.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let _turn = Turn(&self.checkpointing);
        self.checkpoint_now()
    }

    /// Makes a checkpoint: the companion synced, then every change so far
    /// committed durably in redb, and the journal started afresh. Made on
    /// its own every 10 s (or 16 MiB of journal) and at the end of a run.
    ///
    /// # Errors
    /// The companion's sync, the commit or the journal's reset failed.
    pub fn checkpoint(&self) -> Result<()> {
        self.checkpoint_now()
    }

    fn checkpoint_now(&self) -> Result<()> {
        // Outside the lock: the workers go on meanwhile.
        if let Some(p) = &self.presync {
            p().map_err(|e| FrontierError {
                what: "dedupe index",
                path: self
                    .companion
                    .as_ref()
                    .map_or_else(|| self.path.clone(), |(p, _)| p.clone()),
                msg: format!("syncing before the frontier's checkpoint: {e}"),
            })?;
        }
        let mut g = self.lock_journal();
        self.checkpoint_locked(&mut g)
    }

    /// [`Frontier::checkpoint`], the journal's lock held.
    fn checkpoint_locked(&self, g: &mut Log) -> Result<()> {
        // Refused when broken: redb is behind the journal.
        self.commit_open(g)?;
        if let Some((path, c)) = &self.companion {
            c().map_err(|e| FrontierError {
                what: "dedupe index",
                path: path.clone(),
                msg: format!("syncing it before the frontier's checkpoint: {e}"),
            })?;
        }
        let epoch = g.j.epoch.wrapping_add(1);
        let txn = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            meta.insert(EPOCH, epoch).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))?;
        // A kill here leaves a journal of the old epoch: not replayed.
        let reset = g.j.reset(epoch);
        reset.map_err(|e| self.jerr(&g.j, e))?;
        let now = self.ms();
        self.checkpoint_ms.store(now, Ordering::Relaxed);
        self.synced_ms.store(now, Ordering::Relaxed);
        Ok(())
    }

    /// Replays `old` (the journal found on opening, when its epoch is the
    /// database's), puts every in-flight URI back, and commits it all
    /// durably under a new epoch, which is returned with the number of
    /// URIs put back.
    fn replay_and_recover(&mut self, old: &journal::Read0) -> Result<(u64, u64)> {
        let txn = self.db.begin_write().map_err(|e| self.err(e))?;
        let current = {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let current = meta.get(EPOCH).map_err(|e| self.err(e))?.map(|g| g.value());
            // Known before the replay, which applies changes as this
            // frontier's kind does. Only a new frontier is split, and gets
            // the format version: one made before the journal has no epoch
            // either, and its URLs are all in `seen`; an older frontier is
            // not upgraded (it keeps its rule, and no version).
            let new = current.is_none() && {
                let seen = txn.open_table(SEEN).map_err(|e| self.err(e))?;
                seen.first().map_err(|e| self.err(e))?.is_none()
            };
            if new {
                meta.insert(SPLIT, 1).map_err(|e| self.err(e))?;
                meta.insert(FORMAT, FORMAT_VERSION)
                    .map_err(|e| self.err(e))?;
            }
            self.split = meta.get(SPLIT).map_err(|e| self.err(e))?.is_some();
            current
        };
        if let (Some(e), Some(je)) = (current, old.epoch)
            && e == je
        {
            // Changes a commit made durable without a checkpoint already
            // holds (see [`AT`]) are not applied again.
            let meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let got = |k| -> Result<Option<u64>> {
                Ok(meta.get(k).map_err(|e| self.err(e))?.map(|g| g.value()))
            };
            let done = match (got(AT_EPOCH)?, got(AT)?) {
                (Some(ae), Some(n)) if ae == je => n,
                _ => 0,
            };
            drop(meta);
            for (i, p) in old.records.iter().enumerate() {
                if (i as u64) < done {
                    continue;
                }
                let op = journal::decode(p).ok_or_else(|| FrontierError {
                    what: "frontier journal",
                    path: journal_path(&self.path),
                    msg: format!(
                        "record {} of {} does not decode (written by another version?)",
                        i + 1,
                        old.records.len()
                    ),
                })?;
                self.apply(&txn, op)?;
            }
        }
        let n = self.recover_in(&txn)?;
        // A new database takes an epoch no leftover journal can have.
        let epoch = match current {
            Some(e) => e.wrapping_add(1),
            None => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1),
        };
        {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            meta.insert(EPOCH, epoch).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))?;
        Ok((n, epoch))
    }

    /// Applies one journaled change again.
    fn apply(&self, txn: &redb::WriteTransaction, op: Op) -> Result<()> {
        match op {
            Op::Add(uris) => {
                self.add_in(&mut self.tables(txn)?, &mut prepare(&uris))?;
            }
            Op::Complete {
                key,
                host,
                outcome,
                found,
            } => {
                self.complete_in(
                    &mut self.tables(txn)?,
                    &key,
                    &host,
                    outcome,
                    &mut prepare(&found),
                )?;
            }
            Op::Retry {
                key,
                host,
                uri,
                delay,
            } => self.retry_in(&mut self.tables(txn)?, &key, &host, &uri, delay)?,
            Op::MarkSeen(urls) => {
                self.mark_seen_in(txn, &urls)?;
            }
        }
        Ok(())
    }

    /// Opens the frontier's tables in `txn`, once for a change.
    fn tables<'t>(&self, txn: &'t redb::WriteTransaction) -> Result<Tables<'t>> {
        Ok(Tables {
            queue: txn.open_table(QUEUE).map_err(|e| self.err(e))?,
            hosts: txn.open_table(HOSTS).map_err(|e| self.err(e))?,
            ready: txn.open_table(READY).map_err(|e| self.err(e))?,
            seen: txn.open_table(SEEN).map_err(|e| self.err(e))?,
            seen_embed: txn.open_table(SEEN_EMBED).map_err(|e| self.err(e))?,
            linked: txn.open_table(LINKED).map_err(|e| self.err(e))?,
            inflight: txn.open_table(INFLIGHT).map_err(|e| self.err(e))?,
            meta: txn.open_table(META).map_err(|e| self.err(e))?,
        })
    }

    /// Lets up to `n` URIs of one host be in flight at once (1 to 64; 1,
    /// one connection per host, is the default). Politeness delays still
    /// hold: a fetch's end puts the host's next start back by its delay.
    pub fn set_per_host(&mut self, n: u32) {
        self.per_host = u8::try_from(n.clamp(1, 64)).unwrap_or(1);
    }

    /// Whether a host in state `st` belongs in the ready list.
    fn is_ready(&self, st: &HostState) -> bool {
        st.queued > 0 && st.busy < self.per_host
    }

    fn err(&self, e: impl std::fmt::Display) -> FrontierError {
        FrontierError {
            what: "frontier",
            path: self.path.clone(),
            msg: e.to_string(),
        }
    }

    /// Puts every in-flight URI back and frees every host.
    fn recover_in(&self, txn: &redb::WriteTransaction) -> Result<u64> {
        let mut n = 0;
        {
            let mut queue = txn.open_table(QUEUE).map_err(|e| self.err(e))?;
            let mut hosts = txn.open_table(HOSTS).map_err(|e| self.err(e))?;
            let mut ready = txn.open_table(READY).map_err(|e| self.err(e))?;
            let mut inflight = txn.open_table(INFLIGHT).map_err(|e| self.err(e))?;
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            txn.open_table(SEEN).map_err(|e| self.err(e))?;
            txn.open_table(SEEN_EMBED).map_err(|e| self.err(e))?;
            txn.open_table(LINKED).map_err(|e| self.err(e))?;
            while let Some((k, v)) = inflight.pop_first().map_err(|e| self.err(e))? {
                let (k, v) = (k.value().to_vec(), v.value().to_vec());
                queue
                    .insert(k.as_slice(), v.as_slice())
                    .map_err(|e| self.err(e))?;
                let host_end = k.iter().position(|&b| b == 0).unwrap_or(k.len());
                let host = &k[..host_end];
                let mut st = hosts
                    .get(host)
                    .map_err(|e| self.err(e))?
                    .map(|g| HostState::decode(g.value()))
                    .unwrap_or_default();
                st.queued += 1;
                hosts
                    .insert(host, st.encode().as_slice())
                    .map_err(|e| self.err(e))?;
                n += 1;
            }
            // Every busy host is free again, and every host with a queue
            // is ready (the ready list is rebuilt whole).
            ready.retain(|_, _| false).map_err(|e| self.err(e))?;
            // A host row that cannot be read fails the recovery: skipped,
            // its queue would never be ready again.
            let mut all: Vec<(Vec<u8>, HostState)> = Vec::new();
            for r in hosts.iter().map_err(|e| self.err(e))? {
                let (k, v) = r.map_err(|e| self.err(e))?;
                let st = HostState::decode(v.value());
                if st.queued > 0 || st.busy > 0 {
                    all.push((k.value().to_vec(), st));
                }
            }
            for (h, mut st) in all {
                st.busy = 0;
                hosts
                    .insert(h.as_slice(), st.encode().as_slice())
                    .map_err(|e| self.err(e))?;
                if st.queued > 0 {
                    let host = String::from_utf8_lossy(&h).into_owned();
                    ready
                        .insert(ready_key(st.next_ms, &host).as_slice(), ())
                        .map_err(|e| self.err(e))?;
                }
            }
            let inf = meta
                .get("in_flight")
                .map_err(|e| self.err(e))?
                .map(|g| g.value());
            if inf.is_some() {
                meta.insert("in_flight", 0).map_err(|e| self.err(e))?;
                let q = meta
                    .get("queued")
                    .map_err(|e| self.err(e))?
                    .map(|g| g.value())
                    .unwrap_or(0);
                meta.insert("queued", q + n).map_err(|e| self.err(e))?;
            }
        }
        Ok(n)
    }

    /// Queues `uris` not seen before; returns how many were new.
    /// Journaled when this returns (it survives a kill; a power loss,
    /// after the journal's next sync).
    ///
    /// # Errors
    /// The database or the journal failed.
    pub fn add(&self, uris: &[CrawlUri]) -> Result<u64> {
        let mut q = prepare(uris);
        self.journaled(
            |b| journal::encode_add(b, uris),
            |txn| self.add_in(&mut self.tables(txn)?, &mut q),
        )
    }

    fn add_in(&self, t: &mut Tables<'_>, uris: &mut [Queued<'_>]) -> Result<u64> {
        let Tables {
            queue,
            hosts,
            ready,
            seen,
            seen_embed,
            linked,
            meta,
            ..
        } = t;
        let get = |m: &redb::Table<&str, u64>, k: &str| -> Result<u64> {
            Ok(m.get(k)
                .map_err(|e| self.err(e))?
                .map(|g| g.value())
                .unwrap_or(0))
        };
        let mut seq = get(meta, "seq")?;
        let mut added = 0;
        let has = |t: &redb::Table<&[u8], ()>, k: &[u8]| -> Result<bool> {
            Ok(t.get(k).map_err(|e| self.err(e))?.is_some())
        };
        for u in uris {
            let key = u.url.as_bytes();
            // The table a URL of this kind is likeliest in is read first:
            // most URIs found name a URL seen already, as the same kind.
            let (in_seen, in_embed) = if !self.split {
                (has(seen, key)?, false)
            } else if u.linked {
                let s = has(seen, key)?;
                (s, !s && has(seen_embed, key)?)
            } else {
                let e = has(seen_embed, key)?;
                (!e && has(seen, key)?, e)
            };
            if in_seen || in_embed {
                // A link naming a URL queued first as no link makes it a
                // page if it is not fetched yet; naming any other URL
                // changes nothing, and writes nothing. Most repeated links
                // name a URL noted already: a read, not a write of the
                // table's page, for those.
                if u.linked
                    && (in_embed || !self.split)
                    && linked.get(key).map_err(|e| self.err(e))?.is_none()
                {
                    linked.insert(key, ()).map_err(|e| self.err(e))?;
                }
                continue;
            }
            if u.linked || !self.split {
                seen.insert(key, ()).map_err(|e| self.err(e))?;
            } else {
                seen_embed.insert(key, ()).map_err(|e| self.err(e))?;
            }
            let host = &u.host;
            seq += 1;
            let n = u.key.len();
            u.key[n - 8..].copy_from_slice(&seq.to_be_bytes());
            queue
                .insert(u.key.as_slice(), u.value.as_slice())
                .map_err(|e| self.err(e))?;
            let mut st = hosts
                .get(host.as_bytes())
                .map_err(|e| self.err(e))?
                .map(|g| HostState::decode(g.value()))
                .unwrap_or_default();
            let was_ready = self.is_ready(&st);
            st.queued += 1;
            if !was_ready && self.is_ready(&st) {
                ready
                    .insert(ready_key(st.next_ms, host).as_slice(), ())
                    .map_err(|e| self.err(e))?;
            }
            hosts
                .insert(host.as_bytes(), st.encode().as_slice())
                .map_err(|e| self.err(e))?;
            added += 1;
        }
        meta.insert("seq", seq).map_err(|e| self.err(e))?;
        let q = get(meta, "queued")?;
        meta.insert("queued", q + added).map_err(|e| self.err(e))?;
        let s = get(meta, "seen")?;
        meta.insert("seen", s + added).map_err(|e| self.err(e))?;
        Ok(added)
    }

    /// Takes the next URI of the host that has waited longest past its
    /// politeness slot.
    ///
    /// # Errors
    /// The database failed.
    pub fn next(&self) -> Result<Next> {
        // Not journaled: if a kill loses it, the URI is still in its
        // queue, as an in-flight one would be put back.
        let mut g = self.lock_journal();
        Ok(self
            .change(&mut g, |txn| self.next_in(&mut self.tables(txn)?))?
            .0)
    }

    /// [`Frontier::next`] in `txn`; also whether it changed anything.
    fn next_in(&self, t: &mut Tables<'_>) -> Result<(Next, bool)> {
        let now = now_ms();
        let lease = {
            let Tables {
                queue,
                hosts,
                ready,
                linked,
                inflight,
                meta,
                ..
            } = t;
            let first = ready
                .first()
                .map_err(|e| self.err(e))?
                .map(|(k, _)| k.value().to_vec());
            let Some(rk) = first else {
                return Ok((Next::Empty, false));
            };
            let when = u64::from_be_bytes(rk[..8].try_into().unwrap_or([0; 8]));
            if when > now {
                return Ok((Next::Wait(Duration::from_millis(when - now)), false));
            }
            let host = String::from_utf8_lossy(&rk[8..]).into_owned();
            ready.remove(rk.as_slice()).map_err(|e| self.err(e))?;
            let mut lo = host.as_bytes().to_vec();
            lo.push(0);
            let mut hi = host.as_bytes().to_vec();
            hi.push(1);
            let item = queue
                .range(lo.as_slice()..hi.as_slice())
                .map_err(|e| self.err(e))?
                .next()
                .transpose()
                .map_err(|e| self.err(e))?
                .map(|(k, v)| (k.value().to_vec(), v.value().to_vec()));
            let mut st = hosts
                .get(host.as_bytes())
                .map_err(|e| self.err(e))?
                .map(|g| HostState::decode(g.value()))
                .unwrap_or_default();
            let Some((k, v)) = item else {
                // A ready host with an empty queue: drop it.
                st.queued = 0;
                hosts
                    .insert(host.as_bytes(), st.encode().as_slice())
                    .map_err(|e| self.err(e))?;
                return Ok((Next::Wait(Duration::ZERO), true));
            };
            queue.remove(k.as_slice()).map_err(|e| self.err(e))?;
            inflight
                .insert(k.as_slice(), v.as_slice())
                .map_err(|e| self.err(e))?;
            st.queued = st.queued.saturating_sub(1);
            st.busy = st.busy.saturating_add(1);
            // Below its limit, the host stays ready at its slot (passed).
            if self.is_ready(&st) {
                ready
                    .insert(ready_key(st.next_ms, &host).as_slice(), ())
                    .map_err(|e| self.err(e))?;
            }
            hosts
                .insert(host.as_bytes(), st.encode().as_slice())
                .map_err(|e| self.err(e))?;
            let bump = |m: &mut redb::Table<&str, u64>, k: &str, d: i64| -> Result<()> {
                let v = m
                    .get(k)
                    .map_err(|e| self.err(e))?
                    .map(|g| g.value())
                    .unwrap_or(0);
                m.insert(k, v.saturating_add_signed(d))
                    .map_err(|e| self.err(e))?;
                Ok(())
            };
            bump(meta, "queued", -1)?;
            bump(meta, "in_flight", 1)?;
            let mut uri = decode_uri(&v).ok_or_else(|| self.err("a queued URI does not decode"))?;
            // A URI queued as no link that a link named since is a page:
            // its lease says so, once, here, so that the fetch, the
            // browser and a redirect's target need not ask. Only such a
            // URI is looked up; the queue keeps what was queued, and a
            // resume asks again.
            if !uri.reached_as_page()
                && linked
                    .get(uri.url.as_str().as_bytes())
                    .map_err(|e| self.err(e))?
                    .is_some()
            {
                uri.take_page_standing();
            }
            Lease { uri, host, key: k }
        };
        Ok((Next::Uri(Box::new(lease)), true))
    }

    /// [`Frontier::complete`], then, in the same transaction, the next URI
    /// to fetch when one may be fetched now: one commit for both, where
    /// [`Frontier::complete`] then [`Frontier::next`] make two. Taking it
    /// is not journaled, as [`Frontier::next`]'s is not. Give back a URI
    /// that will not be fetched with [`Frontier::put_back`].
    ///
    /// # Errors
    /// The database or the journal failed.
    pub fn complete_and_next(
        &self,
        lease: &Lease,
        outcome: Outcome,
        found: &[CrawlUri],
    ) -> Result<(u64, Option<Lease>)> {
        let mut q = prepare(found);
        self.journaled(
            |b| journal::encode_complete(b, &lease.key, &lease.host, &outcome, found),
            |txn| {
                let mut t = self.tables(txn)?;
                let n = self.complete_in(&mut t, &lease.key, &lease.host, outcome, &mut q)?;
                let next = match self.next_in(&mut t)?.0 {
                    Next::Uri(l) => Some(*l),
                    _ => None,
                };
                Ok((n, next))
            },
        )
    }

    /// Gives back a URI taken and not fetched (the crawl stopped): to its
    /// queue, its host free, as a resume would put it back. Not journaled:
    /// lost with a kill, the URI is still in flight and goes back then.
    ///
    /// # Errors
    /// The database failed.
    pub fn put_back(&self, lease: &Lease) -> Result<()> {
        let mut g = self.lock_journal();
        self.change(&mut g, |txn| {
            self.retry_in(
                &mut self.tables(txn)?,
                &lease.key,
                &lease.host,
                &lease.uri,
                Duration::ZERO,
            )
        })
    }

    /// Finishes a lease: the host is free after `outcome.delay`, the
    /// counters move, and `found` (URIs the fetch discovered, already
    /// scoped) are queued, all in one transaction, journaled when this
    /// returns. Returns how many of `found` were new.
    ///
    /// # Errors
    /// The database or the journal failed.
    pub fn complete(&self, lease: &Lease, outcome: Outcome, found: &[CrawlUri]) -> Result<u64> {
        let mut q = prepare(found);
        self.journaled(
            |b| journal::encode_complete(b, &lease.key, &lease.host, &outcome, found),
            |txn| {
                self.complete_in(
                    &mut self.tables(txn)?,
                    &lease.key,
                    &lease.host,
                    outcome,
                    &mut q,
                )
            },
        )
    }

    /// Takes the URI at queue key `key` out of the in-flight table, or, when
    /// a journal's replay finds it still queued (its taking was not
    /// committed durably), out of its queue.
    fn take_back(&self, t: &mut Tables<'_>, key: &[u8], host: &str) -> Result<()> {
        let Tables {
            queue,
            hosts,
            inflight,
            meta,
            ..
        } = t;
        let counter = if inflight.remove(key).map_err(|e| self.err(e))?.is_some() {
            "in_flight"
        } else {
            if queue.remove(key).map_err(|e| self.err(e))?.is_none() {
                return Ok(());
            }
            let mut st = hosts
                .get(host.as_bytes())
                .map_err(|e| self.err(e))?
                .map(|g| HostState::decode(g.value()))
                .unwrap_or_default();
            st.queued = st.queued.saturating_sub(1);
            hosts
                .insert(host.as_bytes(), st.encode().as_slice())
                .map_err(|e| self.err(e))?;
            "queued"
        };
        let v = meta
            .get(counter)
            .map_err(|e| self.err(e))?
            .map(|g| g.value())
            .unwrap_or(0);
        meta.insert(counter, v.saturating_sub(1))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn complete_in(
        &self,
        t: &mut Tables<'_>,
        key: &[u8],
        host: &str,
        outcome: Outcome,
        found: &mut [Queued<'_>],
    ) -> Result<u64> {
        self.take_back(t, key, host)?;
        {
            let meta = &mut t.meta;
            let bump = |m: &mut redb::Table<&str, u64>, k: &str, d: u64| -> Result<()> {
                let v = m
                    .get(k)
                    .map_err(|e| self.err(e))?
                    .map(|g| g.value())
                    .unwrap_or(0);
                m.insert(k, v.saturating_add(d)).map_err(|e| self.err(e))?;
                Ok(())
            };
            bump(meta, "done", 1)?;
            bump(meta, "failed", outcome.failed as u64)?;
            bump(meta, "pages", outcome.page as u64)?;
            bump(meta, "bytes", outcome.bytes)?;
        }
        self.release(t, host, outcome.delay, |st| {
            st.pages += outcome.page as u64;
            // Saturating as the counters are: a replayed outcome may
            // hold any count.
            st.bytes = st.bytes.saturating_add(outcome.bytes);
        })?;
        self.add_in(t, found)
    }

    /// Gives a lease back to its queue (a retry), the host asked again
    /// after `delay`; `uri` carries its tries so far
    /// ([`CrawlUri::tries`]), which a resume keeps. Journaled when this
    /// returns.
    ///
    /// # Errors
    /// The database or the journal failed.
    pub fn retry(&self, lease: &Lease, uri: &CrawlUri, delay: Duration) -> Result<()> {
        self.journaled(
            |b| journal::encode_retry(b, &lease.key, &lease.host, uri, delay),
            |txn| self.retry_in(&mut self.tables(txn)?, &lease.key, &lease.host, uri, delay),
        )
    }

    fn retry_in(
        &self,
        t: &mut Tables<'_>,
        key: &[u8],
        host: &str,
        uri: &CrawlUri,
        delay: Duration,
    ) -> Result<()> {
        self.take_back(t, key, host)?;
        {
            t.queue
                .insert(key, encode_uri(uri).as_slice())
                .map_err(|e| self.err(e))?;
            let meta = &mut t.meta;
            let v = meta
                .get("queued")
                .map_err(|e| self.err(e))?
                .map(|g| g.value())
                .unwrap_or(0);
            meta.insert("queued", v + 1).map_err(|e| self.err(e))?;
        }
        self.release(t, host, delay, |st| st.queued += 1)
    }

    fn release(
        &self,
        t: &mut Tables<'_>,
        host: &str,
        delay: Duration,
        f: impl FnOnce(&mut HostState),
    ) -> Result<()> {
        let Tables { hosts, ready, .. } = t;
        let mut st = hosts
            .get(host.as_bytes())
            .map_err(|e| self.err(e))?
            .map(|g| HostState::decode(g.value()))
            .unwrap_or_default();
        if self.is_ready(&st) {
            // Ready already (another of its URIs is in flight): its slot
            // moves.
            ready
                .remove(ready_key(st.next_ms, host).as_slice())
                .map_err(|e| self.err(e))?;
        }
        f(&mut st);
        st.busy = st.busy.saturating_sub(1);
        // A replayed delay may be any: a record that passes its CRC yet
        // holds one past what the clock counts saturates (the host waits)
        // rather than overflowing.
        let delay = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        st.next_ms = now_ms().saturating_add(delay);
        if self.is_ready(&st) {
            ready
                .insert(ready_key(st.next_ms, host).as_slice(), ())
                .map_err(|e| self.err(e))?;
        }
        hosts
            .insert(host.as_bytes(), st.encode().as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Pages and bytes fetched from `host` so far (its budgets).
    ///
    /// # Errors
    /// The database failed.
    pub fn host_usage(&self, host: &str) -> Result<(u64, u64)> {
        self.read(|txn| {
            let hosts = txn.open_table(HOSTS).map_err(|e| self.err(e))?;
            let st = hosts
                .get(host.as_bytes())
                .map_err(|e| self.err(e))?
                .map(|g| HostState::decode(g.value()))
                .unwrap_or_default();
            Ok((st.pages, st.bytes))
        })
    }

    /// Marks `urls` seen without queuing them (a browser fetched them:
    /// they are never fetched again); returns how many were new.
    /// Journaled when this returns.
    ///
    /// # Errors
    /// The database or the journal failed.
    pub fn mark_seen(&self, urls: &[Url]) -> Result<u64> {
        self.journaled(
            |b| journal::encode_mark_seen(b, urls),
            |txn| self.mark_seen_in(txn, urls),
        )
    }

    fn mark_seen_in(&self, txn: &redb::WriteTransaction, urls: &[Url]) -> Result<u64> {
        let mut n = 0;
        let mut seen = txn.open_table(SEEN).map_err(|e| self.err(e))?;
        let embed = txn.open_table(SEEN_EMBED).map_err(|e| self.err(e))?;
        for u in urls {
            let key = u.as_str().as_bytes();
            // Into `seen` even when queued as an embed: fetched, a link
            // naming it later changes nothing.
            if seen.insert(key, ()).map_err(|e| self.err(e))?.is_none()
                && embed.get(key).map_err(|e| self.err(e))?.is_none()
            {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Whether `url` was ever queued.
    ///
    /// # Errors
    /// The database failed.
    pub fn seen(&self, url: &Url) -> Result<bool> {
        Ok(self.holds(SEEN, url)? || self.holds(SEEN_EMBED, url)?)
    }

    /// Whether the set `table` holds `url`.
    fn holds(&self, table: TableDefinition<&[u8], ()>, url: &Url) -> Result<bool> {
        self.read(|txn| {
            let t = txn.open_table(table).map_err(|e| self.err(e))?;
            Ok(t.get(url.as_str().as_bytes())
                .map_err(|e| self.err(e))?
                .is_some())
        })
    }

    /// Breaks the frontier as a change that fails part way (a disk error
    /// in its table edits) does: every later change, take and read,
    /// counters included, fails until the frontier is reopened. For the
    /// engine's tests of a frontier that cannot be read.
    #[cfg(test)]
    pub(crate) fn fail_a_change(&self) {
        let mut g = self.lock_journal();
        let failed = self.change(&mut g, |_| Err::<(), _>(self.err("a disk error (test)")));
        assert!(failed.is_err());
    }

    /// Whether `url`, queued first as no link (an embed, a URL in script
    /// text), was named by a link or sitemap entry later (tests: the
    /// crawl asks the table once, when it takes the URI).
    #[cfg(test)]
    fn linked_later(&self, url: &Url) -> Result<bool> {
        self.holds(LINKED, url)
    }

    /// The counters.
    ///
    /// # Errors
    /// The database failed.
    pub fn counts(&self) -> Result<Counts> {
        self.read(|txn| {
            // Opening it in the write transaction makes it: the open made
            // every table (`recover_in`).
            let meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let g = |k: &str| -> Result<u64> {
                Ok(meta
                    .get(k)
                    .map_err(|e| self.err(e))?
                    .map(|g| g.value())
                    .unwrap_or(0))
            };
            Ok(Counts {
                queued: g("queued")?,
                in_flight: g("in_flight")?,
                done: g("done")?,
                failed: g("failed")?,
                pages: g("pages")?,
                bytes: g("bytes")?,
                seen: g("seen")?,
            })
        })
    }

    /// Hosts with queued URIs (for the progress display).
    ///
    /// # Errors
    /// The database failed.
    pub fn hosts_waiting(&self) -> Result<u64> {
        self.read(|txn| {
            let ready = txn.open_table(READY).map_err(|e| self.err(e))?;
            use redb::ReadableTableMetadata;
            ready.len().map_err(|e| self.err(e))
        })
    }
}

impl Drop for Frontier {
    /// A last checkpoint; the journal, empty then, is removed (a missing
    /// journal has nothing to replay).
    fn drop(&mut self) {
        if !self.ready {
            // The replay failed (or its new journal could not be made):
            // the old journal stays, the scratch one goes.
            let _ = std::fs::remove_file(journal_path(&self.path).with_extension("journal.new"));
            return;
        }
        match self.checkpoint_now() {
            Ok(()) => {
                let _ = std::fs::remove_file(journal_path(&self.path));
            }
            Err(e) => tracing::warn!("closing the frontier: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> CrawlUri {
        CrawlUri::seed(Url::parse(s).unwrap(), 0)
    }

    fn take(f: &Frontier) -> Lease {
        match f.next().unwrap() {
            Next::Uri(l) => *l,
            other => panic!("expected a URI, got {other:?}"),
        }
    }

    /// The number of entries of the `linked` table.
    fn linked_len(f: &Frontier) -> usize {
        f.read(|txn| {
            let t = txn.open_table(LINKED).map_err(|e| f.err(e))?;
            Ok(t.iter().map_err(|e| f.err(e))?.count())
        })
        .unwrap()
    }

    /// The frontier's format version ([`FORMAT`] in `meta`), if any.
    fn format_of(f: &Frontier) -> Option<u64> {
        f.read(|txn| {
            let meta = txn.open_table(META).map_err(|e| f.err(e))?;
            Ok(meta.get(FORMAT).map_err(|e| f.err(e))?.map(|g| g.value()))
        })
        .unwrap()
    }

    /// A new frontier gets the format version, kept across a reopen; one
    /// of a newer version is refused with an error naming the file, its
    /// version and this binary's, before anything is read or written: a
    /// second open fails the same way, the file and the journal the newer
    /// version left are as they were, and no scratch journal is left.
    #[test]
    fn a_frontier_of_a_newer_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        {
            let (f, _) = Frontier::open(&path).unwrap();
            assert_eq!(format_of(&f), Some(FORMAT_VERSION));
            f.add(&[uri("http://a.test/")]).unwrap();
        }
        {
            let (f, _) = Frontier::open(&path).unwrap();
            assert_eq!(format_of(&f), Some(FORMAT_VERSION));
            assert_eq!(f.counts().unwrap().queued, 1);
        }
        let newer = FORMAT_VERSION + 1;
        {
            // As a later version would leave it: its format, and a
            // journal of its own.
            let db = Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META).unwrap().insert(FORMAT, newer).unwrap();
            txn.commit().unwrap();
        }
        let mut j = Journal::create(&journal_path(&path), 7).unwrap();
        j.append(&[200, 1, 2, 3]).unwrap();
        drop(j);
        // Its `meta` (redb itself marks the file open and closed).
        let meta = || -> Vec<(String, u64)> {
            let db = Database::open(&path).unwrap();
            let txn = db.begin_read().unwrap();
            let t = txn.open_table(META).unwrap();
            t.iter()
                .unwrap()
                .map(|r| r.unwrap())
                .map(|(k, v)| (k.value().to_string(), v.value()))
                .collect()
        };
        let (before, journal) = (meta(), std::fs::read(journal_path(&path)).unwrap());
        assert!(before.contains(&(FORMAT.to_string(), newer)));
        for _ in 0..2 {
            let e = Frontier::open(&path).err().expect("refused").to_string();
            assert!(e.contains(&path.display().to_string()), "{e}");
            assert!(e.contains(&format!("format version {newer},")), "{e}");
            assert!(
                e.contains(&format!("(version {FORMAT_VERSION} at most)")),
                "{e}"
            );
            assert!(meta() == before, "nothing written");
            assert!(std::fs::read(journal_path(&path)).unwrap() == journal);
            assert!(!journal_path(&path).with_extension("journal.new").exists());
        }
        // Its own version, or an older one, opens (the journal, of another
        // epoch, is not replayed).
        {
            let db = Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert(FORMAT, FORMAT_VERSION)
                .unwrap();
            txn.commit().unwrap();
        }
        let (f, _) = Frontier::open(&path).unwrap();
        assert_eq!(f.counts().unwrap().queued, 1);
    }

    /// A link naming a seen URL writes to `linked` only when it changes
    /// the URL's standing: one queued first as an embed, not one queued
    /// as a link or a seed. The embed's lease then has a page's hops, and
    /// so has its redirect's target, also after a reopen.
    #[test]
    fn linked_notes_only_urls_queued_first_as_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        let (f, _) = Frontier::open(&path).unwrap();
        let at = |p: &str| Url::parse(&format!("http://a.test/{p}")).unwrap();
        let seed = uri("http://a.test/");
        let other = seed.child(at("o"), Hop::Link);
        f.add(&[
            seed.clone(),
            seed.child(at("p"), Hop::Link),
            seed.child(at("f"), Hop::Embed),
        ])
        .unwrap();
        // Named again: the seed and the page by links, the frame by an
        // embed: nothing changes, nothing is written.
        let again = [
            other.child(at(""), Hop::Link),
            other.child(at("p"), Hop::Link),
            other.child(at("p"), Hop::Inferred),
            other.child(at("f"), Hop::Embed),
        ];
        assert_eq!(f.add(&again).unwrap(), 0);
        assert_eq!(linked_len(&f), 0);
        assert!(f.seen(&at("f")).unwrap() && f.seen(&at("p")).unwrap());
        // The frame named by a link, twice: one entry.
        let link = other.child(at("f"), Hop::Link);
        assert_eq!(f.add(&[link.clone(), link]).unwrap(), 0);
        assert_eq!(linked_len(&f), 1);
        assert!(f.linked_later(&at("f")).unwrap());
        assert_eq!(f.counts().unwrap().seen, 3);
        drop(f);
        let (f, _) = Frontier::open(&path).unwrap();
        assert_eq!(linked_len(&f), 1);
        // The frame comes first (an embed of level 0), a page now.
        let l = take(&f);
        assert_eq!(l.uri.url, at("f"));
        assert_eq!(l.uri.hops, "L");
        assert!(l.uri.reached_as_page());
        let to = l.uri.child(at("t"), Hop::Redirect);
        assert!(to.reached_as_page());
        f.complete(&l, Outcome::default(), &[to]).unwrap();
        // Named by a link again: its entry is there, nothing is written.
        f.add(&[other.child(at("f"), Hop::Link)]).unwrap();
        assert_eq!(linked_len(&f), 1);
    }

    /// A frontier made before `seen_embed` (no [`SPLIT`] in `meta`, nor
    /// a [`FORMAT`]) keeps its seen URLs in `seen` and notes every seen
    /// URL a link names again, as it did: an embed queued then still
    /// becomes a page. It is not upgraded: no version is written.
    #[test]
    fn a_frontier_made_before_seen_embed_notes_every_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        let at = |p: &str| Url::parse(&format!("http://a.test/{p}")).unwrap();
        let seed = uri("http://a.test/");
        {
            let (f, _) = Frontier::open(&path).unwrap();
            assert!(f.split);
            f.checkpoint().unwrap();
        }
        {
            // As an older version made it.
            let db = Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            let mut meta = txn.open_table(META).unwrap();
            for k in [SPLIT, FORMAT] {
                meta.remove(k).unwrap();
            }
            drop(meta);
            txn.commit().unwrap();
        }
        let (f, _) = Frontier::open(&path).unwrap();
        assert!(!f.split);
        assert_eq!(format_of(&f), None);
        f.add(&[seed.clone(), seed.child(at("f"), Hop::Embed)])
            .unwrap();
        f.add(&[
            seed.child(at(""), Hop::Link),
            seed.child(at("f"), Hop::Link),
        ])
        .unwrap();
        assert_eq!(linked_len(&f), 2);
        let l = take(&f);
        assert_eq!((l.uri.url.clone(), l.uri.hops.as_str()), (at("f"), "L"));
    }

    /// A frontier made before the journal (no epoch, no [`SPLIT`], its
    /// URLs in `seen`) is no new frontier: it keeps the old rule, so an
    /// embed it queued, linked later, becomes a page.
    #[test]
    fn a_frontier_made_before_the_journal_keeps_the_old_rule() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        let at = |p: &str| Url::parse(&format!("http://a.test/{p}")).unwrap();
        let seed = uri("http://a.test/");
        {
            let (f, _) = Frontier::open(&path).unwrap();
            f.add(std::slice::from_ref(&seed)).unwrap();
            f.checkpoint().unwrap();
        }
        {
            // As a version before the journal made it: the embed in
            // `seen`, nothing about the journal or the split in `meta`.
            let db = Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(SEEN)
                .unwrap()
                .insert(at("f").as_str().as_bytes(), ())
                .unwrap();
            let mut meta = txn.open_table(META).unwrap();
            for k in [SPLIT, FORMAT, EPOCH, AT_EPOCH, AT] {
                meta.remove(k).unwrap();
            }
            drop(meta);
            txn.commit().unwrap();
        }
        let (f, _) = Frontier::open(&path).unwrap();
        assert!(!f.split);
        assert_eq!(format_of(&f), None, "not upgraded");
        f.add(&[seed.child(at("f"), Hop::Link)]).unwrap();
        assert_eq!(linked_len(&f), 1);
        drop(f);
        // Still so once it has an epoch (this open gave it one).
        let (f, _) = Frontier::open(&path).unwrap();
        assert!(!f.split);
        assert_eq!(format_of(&f), None);
    }

    /// The split is known before the journal is replayed: a change
    /// replayed after a kill (a page finished with the frame it embeds)
    /// is applied by the split rule, the frame into `seen_embed`, so a
    /// link naming it later makes it a page. Read after the replay, the
    /// split would have the replay put the frame in `seen`, where a link
    /// changes nothing, and the frame would be fetched as an embed.
    #[test]
    fn the_split_is_known_before_the_journal_is_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let (p, snap) = (dir.path().join("f.redb"), dir.path().join("snap.redb"));
        let at = |p: &str| Url::parse(&format!("http://a.test/{p}")).unwrap();
        let seed = uri("http://a.test/");
        let frame = seed.child(at("frame"), Hop::Embed);
        {
            let (mut f, _) = Frontier::open(&p).unwrap();
            assert!(f.split);
            f.set_checkpoint(Duration::from_secs(3600), u64::MAX);
            f.batch_ms = u64::MAX;
            f.add(std::slice::from_ref(&seed)).unwrap();
            let l = take(&f);
            f.checkpoint().unwrap();
            // The database as a kill after this change leaves it: its
            // last checkpoint (the change is in the open transaction
            // only), and the journal holding the change.
            std::fs::copy(&p, &snap).unwrap();
            let page = Outcome {
                page: true,
                ..Outcome::default()
            };
            f.complete(&l, page, std::slice::from_ref(&frame)).unwrap();
            std::fs::copy(journal_path(&p), journal_path(&snap)).unwrap();
        }
        // The control: the database alone has not the change.
        let bare = dir.path().join("bare.redb");
        std::fs::copy(&snap, &bare).unwrap();
        {
            let (b, back) = Frontier::open(&bare).unwrap();
            assert_eq!(back, 1, "the seed was in flight");
            assert!(!b.seen(&frame.url).unwrap());
        }
        let (f, back) = Frontier::open(&snap).unwrap();
        assert_eq!(back, 0, "the replay finished the seed");
        assert!(f.split);
        assert_eq!(f.counts().unwrap().done, 1);
        assert!(
            f.holds(SEEN_EMBED, &frame.url).unwrap(),
            "replayed as split"
        );
        assert!(!f.holds(SEEN, &frame.url).unwrap());
        // Linked from another page: a page when taken.
        let other = seed.child(at("other"), Hop::Link);
        f.add(&[other.child(at("frame"), Hop::Link)]).unwrap();
        assert_eq!(linked_len(&f), 1);
        let l = take(&f);
        assert_eq!((l.uri.url.clone(), l.uri.hops.as_str()), (at("frame"), "L"));
        assert!(l.uri.reached_as_page());
    }

    #[test]
    fn breadth_first_embeds_first_and_seen_once() {
        let dir = tempfile::tempdir().unwrap();
        let (f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        assert_eq!(
            f.add(&[uri("http://a.test/"), uri("http://a.test/")])
                .unwrap(),
            1
        );
        let l = take(&f);
        assert_eq!(l.uri.url.as_str(), "http://a.test/");
        // The host is busy: nothing else from it until completed.
        assert!(matches!(f.next().unwrap(), Next::Empty));
        let p1 = l
            .uri
            .child(Url::parse("http://a.test/p1").unwrap(), Hop::Link);
        let p2 = l
            .uri
            .child(Url::parse("http://a.test/p2").unwrap(), Hop::Link);
        let e = l
            .uri
            .child(Url::parse("http://a.test/e.png").unwrap(), Hop::Embed);
        let out = Outcome::default();
        assert_eq!(f.complete(&l, out, &[p1.clone(), p2, e, p1]).unwrap(), 3);
        let order: Vec<String> = (0..3)
            .map(|_| {
                let l = take(&f);
                f.complete(&l, out, &[]).unwrap();
                l.uri.url.path().to_string()
            })
            .collect();
        assert_eq!(order, ["/e.png", "/p1", "/p2"]);
        assert!(matches!(f.next().unwrap(), Next::Empty));
        let c = f.counts().unwrap();
        assert_eq!((c.queued, c.in_flight, c.done, c.seen), (0, 0, 4, 4));
    }

    #[test]
    fn a_host_has_up_to_its_limit_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let (mut f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.set_per_host(2);
        let urls = ["http://a.test/1", "http://a.test/2", "http://a.test/3"];
        f.add(&urls.map(uri)).unwrap();
        let (l1, l2) = (take(&f), take(&f));
        assert_eq!(l1.host, l2.host);
        // Two in flight: the third waits for one of them.
        assert!(matches!(f.next().unwrap(), Next::Empty));
        f.complete(&l1, Outcome::default(), &[]).unwrap();
        let l3 = take(&f);
        assert_eq!(l3.uri.url.as_str(), urls[2]);
        // A fetch's end still puts the host's next start back by its delay.
        f.add(&[uri("http://a.test/4"), uri("http://a.test/5")])
            .unwrap();
        let out = Outcome {
            delay: Duration::from_secs(60),
            ..Outcome::default()
        };
        f.complete(&l2, out, &[]).unwrap();
        assert!(matches!(f.next().unwrap(), Next::Wait(d) if d > Duration::from_secs(50)));
        f.complete(&l3, out, &[]).unwrap();
        assert!(matches!(f.next().unwrap(), Next::Wait(d) if d > Duration::from_secs(50)));
        // One ready entry for the host, however its state moved.
        assert_eq!(f.hosts_waiting().unwrap(), 1);
        let c = f.counts().unwrap();
        assert_eq!((c.queued, c.in_flight, c.done), (2, 0, 3));
    }

    /// Finishing a URI takes the next one in the same transaction (the
    /// host that has waited longest first); a URI given back goes to its
    /// queue with its host free.
    #[test]
    fn complete_and_next_takes_the_next_uri_and_put_back_returns_it() {
        let dir = tempfile::tempdir().unwrap();
        let (f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.add(&[
            uri("http://a.test/1"),
            uri("http://b.test/1"),
            uri("http://a.test/2"),
        ])
        .unwrap();
        let l = take(&f);
        assert_eq!(l.uri.url.as_str(), "http://a.test/1");
        let (_, n) = f.complete_and_next(&l, Outcome::default(), &[]).unwrap();
        let n = n.expect("a URI ready now");
        assert_eq!(n.uri.url.as_str(), "http://b.test/1");
        let c = f.counts().unwrap();
        assert_eq!((c.done, c.in_flight, c.queued), (1, 1, 1));
        f.put_back(&n).unwrap();
        let c = f.counts().unwrap();
        assert_eq!((c.done, c.in_flight, c.queued), (1, 0, 2));
        let mut got: Vec<String> = (0..2).map(|_| take(&f).uri.url.to_string()).collect();
        got.sort();
        assert_eq!(got, ["http://a.test/2", "http://b.test/1"]);
        // Both hosts busy: nothing to take.
        assert!(matches!(f.next().unwrap(), Next::Empty));
    }

    #[test]
    fn politeness_delay_holds_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let (f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.add(&[uri("http://a.test/1"), uri("http://a.test/2")])
            .unwrap();
        let l = take(&f);
        let out = Outcome {
            delay: Duration::from_secs(60),
            ..Outcome::default()
        };
        f.complete(&l, out, &[]).unwrap();
        assert!(matches!(f.next().unwrap(), Next::Wait(d) if d > Duration::from_secs(50)));
    }

    #[test]
    fn reopening_requeues_what_was_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        {
            let (f, _) = Frontier::open(&p).unwrap();
            f.add(&[uri("http://a.test/1"), uri("http://b.test/2")])
                .unwrap();
            let _l = take(&f);
            // Dropped without completing: as after a kill.
        }
        let (f, requeued) = Frontier::open(&p).unwrap();
        assert_eq!(requeued, 1);
        let c = f.counts().unwrap();
        assert_eq!((c.queued, c.in_flight), (2, 0));
        let mut got = vec![take(&f).uri.url.to_string(), take(&f).uri.url.to_string()];
        got.sort();
        assert_eq!(got, ["http://a.test/1", "http://b.test/2"]);
    }

    /// A checkpoint fails naming the companion's file, not the frontier's,
    /// with the companion's "disk full".
    fn fails_as_the_companion(f: &Frontier, idx: &Path) {
        let e = f.checkpoint().unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("dedupe index {}: ", idx.display())),
            "{e}"
        );
        assert!(e.contains("disk full"), "{e}");
    }

    /// A checkpoint syncs the companion (the dedupe index) first, and only
    /// a checkpoint does: `add`, `complete`, `retry` and `mark_seen` are
    /// journaled without it; a failed companion sync names the
    /// companion's file, not the frontier's, and fails the checkpoint.
    #[test]
    fn a_checkpoint_syncs_the_companion_first() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let (mut f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.set_checkpoint(Duration::from_secs(3600), u64::MAX);
        let calls = Arc::new(AtomicU64::new(0));
        let fail = Arc::new(AtomicBool::new(false));
        let (c, x) = (calls.clone(), fail.clone());
        let idx = dir.path().join("dedupe.redb");
        f.set_companion(
            &idx,
            Box::new(move || {
                c.fetch_add(1, Ordering::SeqCst);
                if x.load(Ordering::SeqCst) {
                    Err("disk full".into())
                } else {
                    Ok(true)
                }
            }),
        );
        let n = || calls.load(Ordering::SeqCst);
        f.add(&[uri("http://a.test/1"), uri("http://a.test/2")])
            .unwrap();
        let l = take(&f);
        f.retry(&l, &l.uri, Duration::ZERO).unwrap();
        f.mark_seen(&[Url::parse("http://b.test/").unwrap()])
            .unwrap();
        let l = take(&f);
        f.complete(&l, Outcome::default(), &[]).unwrap();
        assert_eq!(n(), 0, "no change waits for a sync");
        f.checkpoint().unwrap();
        assert_eq!(n(), 1, "the checkpoint syncs the companion");
        fail.store(true, Ordering::SeqCst);
        fails_as_the_companion(&f, &idx);
        fail.store(false, Ordering::SeqCst);
    }

    /// A checkpoint is made on its own once the journal is older than its
    /// interval or larger than its size, and starts the journal afresh.
    #[test]
    fn checkpoints_come_by_time_and_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        let (mut f, _) = Frontier::open(&p).unwrap();
        let jlen = || std::fs::metadata(journal_path(&p)).unwrap().len();
        f.set_checkpoint(Duration::from_secs(3600), 2_000);
        f.add(&[uri("http://a.test/1")]).unwrap();
        let one = jlen();
        assert!(one > 12, "the change is journaled");
        let epoch = || journal::read(&journal_path(&p)).unwrap().epoch.unwrap();
        let e0 = epoch();
        // Records of about 40 bytes: 100 of them pass 2,000.
        for i in 2..100 {
            f.add(&[uri(&format!("http://a.test/{i}"))]).unwrap();
        }
        // A checkpoint gives the journal the next epoch.
        assert!(epoch() > e0, "reset by size");
        assert!(jlen() < 2_000 + one, "{}", jlen());
        // No change for a second: the ticker's call syncs the journal.
        // Synced just now, as far as the rule goes: the adds above may have
        // synced at any point (a slow machine takes over a second for
        // them), and the second could run out between them and this call.
        f.synced_ms.store(f.ms(), Ordering::Relaxed);
        let synced = f.synced_ms.load(Ordering::Relaxed);
        f.sync_if_due().unwrap();
        assert_eq!(f.synced_ms.load(Ordering::Relaxed), synced, "not due yet");
        std::thread::sleep(SYNC_EVERY + Duration::from_millis(50));
        f.sync_if_due().unwrap();
        assert!(
            f.synced_ms.load(Ordering::Relaxed) > synced,
            "synced when due"
        );
        f.set_checkpoint(Duration::ZERO, u64::MAX);
        f.add(&[uri("http://a.test/x")]).unwrap();
        assert_eq!(jlen(), 12, "reset by time: the header alone");
        drop(f);
        assert!(!journal_path(&p).exists(), "closed: no journal left");
        let (f, _) = Frontier::open(&p).unwrap();
        assert_eq!(f.counts().unwrap().queued, 100);
    }

    /// A journal whose replay fails (a record that does not decode) makes
    /// the open fail and stays on disk: the next open fails the same way,
    /// rather than opening with the journal's changes lost.
    #[test]
    fn a_failed_replay_keeps_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        let (f, _) = Frontier::open(&p).unwrap();
        f.add(&[uri("http://a.test/1")]).unwrap();
        let epoch = journal::read(&journal_path(&p)).unwrap().epoch.unwrap();
        drop(f);
        // The checkpoint on closing took the next epoch: a journal of it
        // is replayed, and its one record does not decode.
        let mut j = Journal::create(&journal_path(&p), epoch + 1).unwrap();
        j.append(&[99, 1, 2, 3]).unwrap();
        drop(j);
        let bad = std::fs::read(journal_path(&p)).unwrap();
        for _ in 0..2 {
            let e = Frontier::open(&p).err().expect("the replay fails");
            assert!(e.to_string().contains("does not decode"), "{e}");
            assert!(e.to_string().contains(".journal: record 1 of 1"), "{e}");
            assert_eq!(
                std::fs::read(journal_path(&p)).unwrap(),
                bad,
                "the journal is left as it was"
            );
        }
    }

    /// A journal damaged in its middle is said apart from a torn tail:
    /// the first change is replayed, the two whole ones after the damage
    /// are counted in the opening's notes, not passed off as a cut last
    /// change.
    #[test]
    fn journal_damage_is_told_from_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        let (f, _) = Frontier::open(&p).unwrap();
        let epoch = journal::read(&journal_path(&p)).unwrap().epoch.unwrap();
        drop(f);
        let mut j = Journal::create(&journal_path(&p), epoch + 1).unwrap();
        for u in [
            "http://a.test/1",
            "http://a.test/2",
            "http://a.test/3",
            "http://a.test/4",
        ] {
            let mut b = Vec::new();
            journal::encode_add(&mut b, &[uri(u)]);
            j.append(&b).unwrap();
        }
        drop(j);
        let mut data = std::fs::read(journal_path(&p)).unwrap();
        let whole = data.clone();
        // The second record's first payload byte (header 12, record 8 + n).
        let first = u32::from_le_bytes(data[12..16].try_into().unwrap()) as usize;
        data[12 + 8 + first + 8] ^= 0xff;
        std::fs::write(journal_path(&p), &data).unwrap();
        let (f, _) = Frontier::open(&p).unwrap();
        assert_eq!(f.counts().unwrap().seen, 1, "the change before the damage");
        let notes = f.opening_notes().to_vec();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("in its middle: 2 whole changes"),
            "{notes:?}"
        );
        // Changes were lost: the crawl's summary says so (exit 1).
        assert!(f.lost_changes());
        drop(f);
        // A torn tail is said as one.
        let (f, _) = Frontier::open(&p).unwrap();
        let epoch = journal::read(&journal_path(&p)).unwrap().epoch.unwrap();
        drop(f);
        let mut j = Journal::create(&journal_path(&p), epoch + 1).unwrap();
        let mut b = Vec::new();
        journal::encode_add(&mut b, &[uri("http://a.test/5")]);
        j.append(&b).unwrap();
        drop(j);
        let mut data = std::fs::read(journal_path(&p)).unwrap();
        data.extend_from_slice(&whole[12..20]);
        std::fs::write(journal_path(&p), &data).unwrap();
        let (f, _) = Frontier::open(&p).unwrap();
        let notes = f.opening_notes().to_vec();
        assert!(
            notes.len() == 1 && notes[0].contains("a change cut by a kill"),
            "{notes:?}"
        );
        // A kill's cut change had not returned to its worker: nothing lost.
        assert!(!f.lost_changes());
    }

    /// What the crawl_journal fuzz target found: a journaled delay past
    /// what the clock counts (u64::MAX ms) overflowed `now + delay` on
    /// replay. It saturates: the host waits, and nothing panics; so do a
    /// host's bytes (which two outcomes of u64::MAX bytes overflowed).
    #[test]
    fn a_replayed_delay_past_the_clock_saturates() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        let (f, _) = Frontier::open(&p).unwrap();
        f.add(&[uri("http://a.test/1")]).unwrap();
        let Next::Uri(lease) = f.next().unwrap() else {
            panic!("no lease")
        };
        let epoch = journal::read(&journal_path(&p)).unwrap().epoch.unwrap();
        drop(f);
        let mut j = Journal::create(&journal_path(&p), epoch + 1).unwrap();
        let mut b = Vec::new();
        let forever = Duration::from_millis(u64::MAX);
        journal::encode_retry(&mut b, &lease.key, &lease.host, &lease.uri, forever);
        j.append(&b).unwrap();
        drop(j);
        let (f, requeued) = Frontier::open(&p).unwrap();
        assert_eq!(requeued, 0, "the replayed retry gave the lease back");
        assert!(f.opening_notes().is_empty());
        assert!(matches!(f.next().unwrap(), Next::Wait(_)));
        assert_eq!(f.counts().unwrap().queued, 1);
        drop(f);
        let (f, _) = Frontier::open(&p).unwrap();
        let epoch = journal::read(&journal_path(&p)).unwrap().epoch.unwrap();
        drop(f);
        let mut j = Journal::create(&journal_path(&p), epoch + 1).unwrap();
        let all = Outcome {
            bytes: u64::MAX,
            delay: forever,
            ..Outcome::default()
        };
        for _ in 0..2 {
            let mut b = Vec::new();
            journal::encode_complete(&mut b, &lease.key, &lease.host, &all, &[]);
            j.append(&b).unwrap();
        }
        drop(j);
        let (f, _) = Frontier::open(&p).unwrap();
        assert_eq!(f.counts().unwrap().bytes, u64::MAX);
        assert_eq!(f.host_usage("a.test").unwrap().1, u64::MAX);
    }

    /// A checkpoint runs its presync before it takes the frontier's lock
    /// (another thread reads and changes the frontier meanwhile), and
    /// before the companion; a failed presync fails the checkpoint, named
    /// as the companion's.
    #[test]
    fn a_checkpoint_runs_its_presync_outside_the_lock_before_the_companion() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::{Arc, OnceLock, Weak};
        let dir = tempfile::tempdir().unwrap();
        let (mut f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.set_checkpoint(Duration::from_secs(3600), u64::MAX);
        let me: Arc<OnceLock<Weak<Frontier>>> = Arc::new(OnceLock::new());
        let order = Arc::new(Mutex::new(Vec::<String>::new()));
        let fail = Arc::new(AtomicBool::new(false));
        let added = Arc::new(AtomicU64::new(0));
        let (m, o, x, a) = (me.clone(), order.clone(), fail.clone(), added.clone());
        f.set_presync(Box::new(move || {
            if x.load(Ordering::SeqCst) {
                return Err("disk full".into());
            }
            // None once the frontier is being dropped (its last checkpoint).
            let Some(fr) = m.get().and_then(Weak::upgrade) else {
                return Ok(true);
            };
            let a = a.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            // Another worker's change: it waits if the lock is held.
            std::thread::spawn(move || {
                let n = a.fetch_add(1, Ordering::SeqCst);
                let r = fr.add(&[uri(&format!("http://c.test/{n}"))]);
                let _ = tx.send(r.is_ok());
            });
            let ok = rx.recv_timeout(Duration::from_secs(60));
            o.lock().unwrap().push(format!("presync {ok:?}"));
            Ok(true)
        }));
        let o = order.clone();
        let idx = dir.path().join("dedupe.redb");
        f.set_companion(
            &idx,
            Box::new(move || {
                o.lock().unwrap().push("companion".into());
                Ok(true)
            }),
        );
        let f = Arc::new(f);
        me.set(Arc::downgrade(&f)).unwrap();
        f.checkpoint().unwrap();
        assert_eq!(
            *order.lock().unwrap(),
            ["presync Ok(true)", "companion"],
            "the presync's change was made while it ran, before the companion"
        );
        assert_eq!(f.counts().unwrap().queued, 1);
        fail.store(true, Ordering::SeqCst);
        fails_as_the_companion(&f, &idx);
        assert_eq!(order.lock().unwrap().len(), 2, "no companion after it");
        fail.store(false, Ordering::SeqCst);
    }

    /// A companion that panics during a checkpoint hands it back: the next
    /// change and the next checkpoint go through.
    #[test]
    fn a_panic_while_checkpointing_leaves_no_change_waiting() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let (mut f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.set_checkpoint(Duration::ZERO, u64::MAX);
        let panic = Arc::new(AtomicBool::new(true));
        let p = panic.clone();
        f.set_companion(
            &dir.path().join("dedupe.redb"),
            Box::new(move || {
                assert!(!p.load(Ordering::SeqCst), "the companion's sync panicked");
                Ok(true)
            }),
        );
        let f = Arc::new(f);
        let hit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f.add(&[uri("http://a.test/1")])
        }));
        assert!(hit.is_err(), "the first change's checkpoint panics");
        panic.store(false, Ordering::SeqCst);
        let (tx, rx) = std::sync::mpsc::channel();
        let g = f.clone();
        std::thread::spawn(move || tx.send(g.add(&[uri("http://a.test/2")]).is_ok()));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(60)),
            Ok(true),
            "the next change returns"
        );
        f.checkpoint().unwrap();
        assert_eq!(f.counts().unwrap().queued, 2);
    }

    /// A journal whose failed write could not be undone gets a checkpoint
    /// at once: the change goes through, journaled in the fresh journal,
    /// where every change used to fail until the next checkpoint.
    #[test]
    fn a_broken_journal_is_mended_by_a_checkpoint_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        let (mut f, _) = Frontier::open(&p).unwrap();
        f.set_checkpoint(Duration::from_secs(3600), u64::MAX);
        f.add(&[uri("http://a.test/1")]).unwrap();
        let e0 = journal::read(&journal_path(&p)).unwrap().epoch.unwrap();
        f.lock_journal().j.break_for_test();
        f.add(&[uri("http://a.test/2")]).unwrap();
        let r = journal::read(&journal_path(&p)).unwrap();
        assert_eq!(r.epoch, Some(e0 + 1), "a checkpoint was made");
        assert_eq!(r.records.len(), 1, "the change is in the fresh journal");
        assert_eq!(f.counts().unwrap().queued, 2);
        drop(f);
        let (f, _) = Frontier::open(&p).unwrap();
        assert_eq!(f.counts().unwrap().queued, 2);
    }

    /// Changes go into one write transaction kept open, which reads see:
    /// a URI queued is seen and counted before any commit, and a change
    /// that fails part way breaks the frontier (nothing more is applied,
    /// no checkpoint) until reopening replays the journal.
    #[test]
    fn changes_share_an_open_transaction_and_a_failed_one_breaks_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        let (mut f, _) = Frontier::open(&p).unwrap();
        f.set_checkpoint(Duration::from_secs(3600), u64::MAX);
        // Not committed by age, however slow the machine.
        f.batch_ms = u64::MAX;
        f.add(&[uri("http://a.test/1")]).unwrap();
        assert!(f.lock_journal().txn.is_some(), "left open");
        assert!(f.seen(&Url::parse("http://a.test/1").unwrap()).unwrap());
        assert_eq!(f.counts().unwrap().queued, 1);
        let l = take(&f);
        let e = f
            .journaled(
                |b| journal::encode_complete(b, &l.key, &l.host, &Outcome::default(), &[]),
                |txn| {
                    f.complete_in(
                        &mut f.tables(txn)?,
                        &l.key,
                        &l.host,
                        Outcome::default(),
                        &mut [],
                    )?;
                    Err::<(), _>(f.err("a disk error (test)"))
                },
            )
            .unwrap_err();
        assert!(e.to_string().contains("disk error"), "{e}");
        let e = f.add(&[uri("http://a.test/2")]).unwrap_err();
        assert!(e.to_string().contains("failed part way"), "{e}");
        assert!(
            f.checkpoint().is_err(),
            "no checkpoint of a broken frontier"
        );
        drop(f);
        // The journal holds the change that failed: the replay makes it.
        let (f, back) = Frontier::open(&p).unwrap();
        assert_eq!(back, 0, "finished by the replay, not put back");
        let c = f.counts().unwrap();
        assert_eq!((c.done, c.queued, c.in_flight), (1, 0, 0), "{c:?}");
    }

    /// A failed change whose frontier is then closed normally: redb makes
    /// the open transaction's earlier unsynced commits durable on closing
    /// (a failed checkpoint, refused by a broken frontier or failed in its
    /// companion, leaves them so too). Reopening replays only the
    /// journal's changes after them: nothing is counted twice, nothing
    /// queued is lost, and the host's budgets are not spent twice.
    #[test]
    fn a_closed_frontier_replays_only_what_its_commits_lack() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        for companion_fails in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("f.redb");
            let (mut f, _) = Frontier::open(&p).unwrap();
            f.set_checkpoint(Duration::from_secs(3600), u64::MAX);
            f.batch_ms = u64::MAX;
            let fail = Arc::new(AtomicBool::new(false));
            let x = fail.clone();
            f.set_companion(
                &dir.path().join("dedupe.redb"),
                Box::new(move || {
                    if x.load(Ordering::SeqCst) {
                        Err("disk full".into())
                    } else {
                        Ok(true)
                    }
                }),
            );
            let urls = ["http://a.test/1", "http://a.test/2", "http://a.test/3"];
            f.add(&urls.map(uri)).unwrap();
            let page = Outcome {
                page: true,
                bytes: 10,
                ..Outcome::default()
            };
            let l = take(&f);
            f.complete(&l, page, &[]).unwrap();
            // Committed unsynced, as every 1,024 changes or 100 ms.
            f.commit_open(&mut f.lock_journal()).unwrap();
            let l = take(&f);
            if companion_fails {
                f.complete(&l, page, &[]).unwrap();
                fail.store(true, Ordering::SeqCst);
                assert!(f.checkpoint().is_err(), "the companion fails");
            } else {
                f.journaled(
                    |b| journal::encode_complete(b, &l.key, &l.host, &page, &[]),
                    |_| Err::<(), _>(f.err("a disk error (test)")),
                )
                .unwrap_err();
            }
            // A normal close: its checkpoint fails too.
            drop(f);
            // The control: the database alone holds the committed change
            // (else a full replay would pass this test as well).
            let bare = dir.path().join("bare.redb");
            std::fs::copy(&p, &bare).unwrap();
            {
                let (b, _) = Frontier::open(&bare).unwrap();
                assert!(b.counts().unwrap().done >= 1, "redb kept the commit");
            }
            let (f, back) = Frontier::open(&p).unwrap();
            assert_eq!(back, 0, "nothing was in flight");
            let c = f.counts().unwrap();
            assert_eq!(
                (c.done, c.pages, c.bytes, c.queued, c.in_flight),
                (2, 2, 20, 1, 0),
                "companion fails: {companion_fails}: {c:?}"
            );
            assert_eq!(f.host_usage("a.test").unwrap(), (2, 20));
            assert_eq!(take(&f).uri.url.as_str(), urls[2], "still queued");
        }
    }

    /// A checkpoint that fails after its change was applied does not fail
    /// the change (its caller would take it as not made): the next
    /// [`Frontier::sync_if_due`] reports it, once.
    #[test]
    fn a_failed_checkpoint_after_a_change_is_reported_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (mut f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.set_checkpoint(Duration::ZERO, u64::MAX);
        f.set_companion(
            &dir.path().join("dedupe.redb"),
            Box::new(|| Err("disk full".into())),
        );
        f.add(&[uri("http://a.test/1"), uri("http://a.test/2")])
            .unwrap();
        let l = take(&f);
        let (_, next) = f.complete_and_next(&l, Outcome::default(), &[]).unwrap();
        let next = next.expect("the next URI, taken with the change");
        assert_eq!(f.counts().unwrap().done, 1);
        let e = f.sync_if_due().unwrap_err().to_string();
        assert!(e.contains("disk full"), "{e}");
        assert!(f.sync_if_due().is_ok(), "reported once");
        f.complete(&next, Outcome::default(), &[]).unwrap();
        assert_eq!(f.counts().unwrap().done, 2);
    }

    /// A change cut by a panic breaks the frontier for reads too: they
    /// would see its half-applied transaction.
    #[test]
    fn a_change_cut_by_a_panic_is_read_by_nobody() {
        let dir = tempfile::tempdir().unwrap();
        let (f, _) = Frontier::open(&dir.path().join("f.redb")).unwrap();
        f.add(&[uri("http://a.test/1")]).unwrap();
        let hit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f.journaled(
                |b| journal::encode_add(b, &[uri("http://a.test/2")]),
                |txn| {
                    f.add_in(&mut f.tables(txn)?, &mut prepare(&[uri("http://a.test/2")]))?;
                    panic!("a worker's bug (test)");
                    #[allow(unreachable_code)]
                    Ok(())
                },
            )
        }));
        assert!(hit.is_err());
        let e = f.counts().unwrap_err().to_string();
        assert!(e.contains("cut by a panic"), "{e}");
        assert!(f.seen(&Url::parse("http://a.test/2").unwrap()).is_err());
        assert!(f.add(&[uri("http://a.test/3")]).is_err());
    }

    /// The child of [`a_killed_frontier_keeps_its_journaled_changes`]:
    /// changes after the opening's checkpoint, one unsynced commit of
    /// some of them, then `abort()` (no destructor runs, as after
    /// `kill -9`).
    #[test]
    fn killed_child() {
        let Ok(p) = std::env::var("WARCHEST_FRONTIER_CHILD") else {
            return;
        };
        let stale = std::env::var("WARCHEST_FRONTIER_STALE").is_ok();
        let p = PathBuf::from(p);
        let (mut f, _) = Frontier::open(&p).unwrap();
        f.set_checkpoint(Duration::from_secs(3600), u64::MAX);
        if stale {
            // A checkpoint whose journal reset a kill prevented: the old
            // journal is put back after it.
            f.add(&[uri("http://a.test/1")]).unwrap();
            let l = take(&f);
            f.complete(&l, Outcome::default(), &[]).unwrap();
            let old = std::fs::read(journal_path(&p)).unwrap();
            f.checkpoint().unwrap();
            std::fs::write(journal_path(&p), old).unwrap();
            std::process::abort();
        }
        f.add(&[uri("http://a.test/1"), uri("http://b.test/1")])
            .unwrap();
        let l = take(&f);
        let found = l
            .uri
            .child(Url::parse("http://a.test/3").unwrap(), Hop::Link);
        f.complete(
            &l,
            Outcome {
                page: true,
                bytes: 10,
                ..Outcome::default()
            },
            &[found],
        )
        .unwrap();
        // An unsynced commit (as every 1,024 changes or 100 ms): a kill
        // rolls it back.
        f.commit_open(&mut f.lock_journal()).unwrap();
        let l = take(&f);
        let mut again = l.uri.clone();
        again.tries = 2;
        f.retry(&l, &again, Duration::ZERO).unwrap();
        // Taken, in flight at the kill.
        let _l = take(&f);
        std::process::abort();
    }

    fn run_child(p: &Path, stale: bool) {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "frontier::tests::killed_child", "--nocapture"])
            .env("WARCHEST_FRONTIER_CHILD", p)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if stale {
            cmd.env("WARCHEST_FRONTIER_STALE", "1");
        }
        let st = cmd.status().unwrap();
        assert!(!st.success(), "the child aborts");
    }

    /// A process killed after journaled changes: reopening replays them
    /// (redb's own unsynced commit is lost with the process, as the copy
    /// without its journal shows), the URI in flight goes back to its
    /// queue, and a retried URI keeps its tries. A journal whose
    /// checkpoint was committed is not replayed twice.
    #[test]
    fn a_killed_frontier_keeps_its_journaled_changes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.redb");
        run_child(&p, false);
        // The control: the database alone has none of the changes.
        let bare = dir.path().join("bare.redb");
        std::fs::copy(&p, &bare).unwrap();
        {
            let (f, _) = Frontier::open(&bare).unwrap();
            assert_eq!(f.counts().unwrap().seen, 0, "redb alone lost them");
        }
        let (f, _) = Frontier::open(&p).unwrap();
        let c = f.counts().unwrap();
        assert_eq!(
            (c.seen, c.done, c.pages, c.bytes, c.queued, c.in_flight),
            (3, 1, 1, 10, 2, 0),
            "{c:?}"
        );
        let mut got: Vec<(String, u32)> = (0..2)
            .map(|_| {
                let l = take(&f);
                (l.uri.url.to_string(), l.uri.tries)
            })
            .collect();
        got.sort();
        assert!(matches!(f.next().unwrap(), Next::Empty));
        assert_eq!(got.len(), 2);
        assert!(got.iter().any(|(_, t)| *t == 2), "tries kept: {got:?}");
        drop(f);
        let p = dir.path().join("g.redb");
        run_child(&p, true);
        let (f, _) = Frontier::open(&p).unwrap();
        let c = f.counts().unwrap();
        assert_eq!((c.seen, c.done, c.queued), (1, 1, 0), "{c:?}");
    }

    #[test]
    fn uris_round_trip() {
        let s = uri("http://a.test/");
        let c = s.child(Url::parse("http://b.test/x?y=1").unwrap(), Hop::Embed);
        assert_eq!(decode_uri(&encode_uri(&c)), Some(c.clone()));
        assert_eq!(decode_uri(&encode_uri(&s)), Some(s));
        let mut t = c;
        t.tries = 3;
        assert_eq!(decode_uri(&encode_uri(&t)), Some(t));
        assert_eq!(decode_uri(b"garbage"), None);
    }
}
