//! Deduplication: responses whose payload was already archived rewritten as
//! identical-payload-digest revisits (WARC 1.1 section 6.7.2; ISO 28500
//! Annex D use case three).
//!
//! The payload digests seen are kept in a [`DigestIndex`], an embedded
//! database file (redb: one file, crash-safe transactions, B-trees on disk)
//! that persists between runs and holds millions of digests without
//! holding them in memory. Each entry says where the original is, so a
//! revisit can later be resolved to its payload ([`crate::revisit`]).
//!
//! A payload is identified by the digest warchest computes over it (the
//! entity body with transfer coding removed), not by the digest a record
//! claims: a response whose recorded WARC-Payload-Digest is wrong is copied
//! as it is and never stands as an original.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use crate::revisit::{self, Location, Original};
use warchest::Limits;
use warchest::digest::{Algorithm, Digest};
use warchest::error::{Error, ErrorKind, Result, Warning};
use warchest::http::{BlockDigester, PayloadMatch};
use warchest::warc::{self, PayloadKind, RecordType, WarcHeader};
use warchest::write::{Body, RotatingOptions, RotatingWriter};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("payload-digests");
/// The last capture of each URL, for conditional requests (`warchest
/// capture --conditional`).
const URLS: TableDefinition<&str, &[u8]> = TableDefinition::new("captured-urls");

/// What the index holds for a URL captured before: the response, where it
/// is, and the validators its server sent (ETag, Last-Modified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlEntry {
    /// The response record and its file.
    pub entry: IndexEntry,
    /// Its ETag header, if any.
    pub etag: Option<String>,
    /// Its Last-Modified header, if any.
    pub last_modified: Option<String>,
}

impl UrlEntry {
    fn encode(&self) -> Vec<u8> {
        let inner = self.entry.encode();
        let mut out = Vec::with_capacity(inner.len() + 64);
        out.extend_from_slice(&(inner.len() as u32).to_le_bytes());
        out.extend_from_slice(&inner);
        for s in [&self.etag, &self.last_modified] {
            match s {
                Some(s) => {
                    out.push(1);
                    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
                None => out.push(0),
            }
        }
        out
    }

    fn decode(b: &[u8]) -> Option<UrlEntry> {
        let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let entry = IndexEntry::decode(b.get(4..4usize.checked_add(n)?)?)?;
        let mut rest = b.get(4 + n..)?;
        let mut opt = || -> Option<Option<String>> {
            let (&flag, r) = rest.split_first()?;
            rest = r;
            if flag == 0 {
                return Some(None);
            }
            let n = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            let s = String::from_utf8_lossy(rest.get(4..4usize.checked_add(n)?)?).into_owned();
            rest = rest.get(4 + n..)?;
            Some(Some(s))
        };
        let etag = opt()?;
        let last_modified = opt()?;
        Some(UrlEntry {
            entry,
            etag,
            last_modified,
        })
    }
}

/// What the index holds for a digest: the original and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The original record.
    pub original: Original,
    /// Its file and offset.
    pub location: Location,
}

impl IndexEntry {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let file = self.location.file.to_string_lossy();
        for s in [
            self.original.record_id.as_str(),
            self.original.target_uri.as_str(),
            self.original.date.as_str(),
            self.original.payload_digest.as_str(),
            file.as_ref(),
        ] {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        out.extend_from_slice(&self.location.offset.to_le_bytes());
        out
    }

    fn decode(mut b: &[u8]) -> Option<IndexEntry> {
        let mut take = |n: usize| -> Option<&[u8]> {
            let (h, t) = (b.get(..n)?, b.get(n..)?);
            b = t;
            Some(h)
        };
        let mut s = Vec::with_capacity(5);
        for _ in 0..5 {
            let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
            s.push(String::from_utf8_lossy(take(len)?).into_owned());
        }
        let offset = u64::from_le_bytes(take(8)?.try_into().ok()?);
        let mut s = s.into_iter();
        Some(IndexEntry {
            original: Original {
                record_id: s.next()?,
                target_uri: s.next()?,
                date: s.next()?,
                payload_digest: s.next()?,
            },
            location: Location {
                file: PathBuf::from(s.next()?),
                offset,
            },
        })
    }
}

fn db_error(e: impl std::fmt::Display, path: &Path) -> Error {
    Error::new(ErrorKind::Io(io::Error::other(format!(
        "digest index: {e}"
    ))))
    .in_file(path)
}

/// The digest index's page cache: past it, lookups read the file (the
/// system's page cache), and memory stays bounded however many digests a
/// crawl or `dedupe` records.
pub const CACHE_BYTES: usize = 64 << 20;

/// Payload digests seen, in an embedded database file.
pub struct DigestIndex {
    db: Database,
    path: PathBuf,
    // Keeps a temporary index's directory until the index is dropped.
    _temp: Option<tempfile::TempDir>,
    // Commits are not synced; the owner calls `sync` (see `deferred`).
    deferred: bool,
    // A deferred commit was made since the last sync: set once the commit
    // is made, so a sync that swaps it clear covers every commit that set
    // it, and a commit after that swap sets it again. (Set before the
    // commit, a sync could take redb's writer first, clear it, and leave
    // the commit that follows unsynced.)
    dirty: AtomicBool,
    // Deferred: the write transaction kept open across batches, committed
    // (unsynced) every `OPEN_BATCHES` batches or `OPEN_MS`, and at each
    // sync. Every write and read goes through it.
    open: Mutex<Open>,
    // What opening replayed from a journal left by an earlier process:
    // whole records, and bytes of a cut last record (ignored).
    replayed: (u64, u64),
}

/// A deferred index's open write transaction.
#[derive(Default)]
struct Open {
    txn: Option<redb::WriteTransaction>,
    batches: u32,
    since: Option<Instant>,
    /// The journal ([`DigestIndex::open_deferred`]): each batch's entries,
    /// appended with one write as it commits, emptied at each sync.
    journal: Option<(PathBuf, fs::File)>,
    /// The journal's length: its whole records.
    jlen: u64,
    /// The open transaction was dropped after an error (its commit
    /// failed, a batch was dropped part way, a batch's journal write
    /// failed): redb is back at its last commit, and the next transaction
    /// first replays the journal (every batch since the last sync, the
    /// failed one's excepted).
    rebuild: bool,
    /// The transaction was dropped and there is no journal to rebuild it
    /// from, or the rebuild failed: every batch and sync fails.
    broken: Option<String>,
    /// A sync made every entry durable but could not empty the journal:
    /// it is emptied before the next record is appended (or by the next
    /// sync); until then no batch is journaled (each fails).
    stale: bool,
    /// Test seam: the next journal write writes this many bytes, then
    /// fails.
    #[cfg(test)]
    cut: Option<usize>,
}

/// The journal of a deferred index at `path`: `dedupe.redb` ->
/// `dedupe.journal`.
pub fn journal_path(path: &Path) -> PathBuf {
    path.with_extension("journal")
}

/// A journal record's entries: `tag:u8 key_len:u32 key value_len:u32
/// value` (tag 0: a digest's entry, inserted if absent; 1: a URL's).
fn journal_entry(buf: &mut Vec<u8>, tag: u8, key: &str, value: &[u8]) {
    buf.push(tag);
    buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
    buf.extend_from_slice(key.as_bytes());
    buf.extend_from_slice(&(value.len() as u32).to_le_bytes());
    buf.extend_from_slice(value);
}

fn crc(b: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(b);
    c.sum()
}

/// The whole records of a journal (`len:u32 crc:u32 payload`), up to the
/// first cut or damaged one (a write cut by a kill), and the bytes after
/// them.
fn journal_records(data: &[u8]) -> (Vec<&[u8]>, u64) {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(h) = data.get(at..at + 8) {
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let sum = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        let Some(p) = data.get(at + 8..at + 8 + len) else {
            break;
        };
        if crc(p) != sum {
            break;
        }
        out.push(p);
        at += 8 + len;
    }
    (out, (data.len() - at) as u64)
}

/// A journal's bytes (none when there is no journal).
fn read_journal(jp: &Path) -> Result<Vec<u8>> {
    match fs::read(jp) {
        Ok(d) => Ok(d),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(db_error(e, jp)),
    }
}

/// Applies a journal's records in `txn`, in order: digests inserted if
/// absent, URLs replaced. Replaying records that a commit already holds
/// changes nothing (a URL's last entry is the last one either way).
fn replay(txn: &redb::WriteTransaction, records: &[&[u8]], p: &Path, jp: &Path) -> Result<()> {
    let mut digests = txn.open_table(TABLE).map_err(|e| db_error(e, p))?;
    let mut urls = txn.open_table(URLS).map_err(|e| db_error(e, p))?;
    for (i, r) in records.iter().enumerate() {
        let ops = journal_ops(r).ok_or_else(|| {
            db_error(
                format!("record {} of {} does not decode", i + 1, records.len()),
                jp,
            )
        })?;
        for (tag, k, v) in ops {
            if tag == 1 {
                urls.insert(k, v).map_err(|e| db_error(e, p))?;
            } else if digests.get(k).map_err(|e| db_error(e, p))?.is_none() {
                digests.insert(k, v).map_err(|e| db_error(e, p))?;
            }
        }
    }
    Ok(())
}

/// The entries of one journal record, or `None` when it does not decode.
fn journal_ops(mut p: &[u8]) -> Option<Vec<(u8, &str, &[u8])>> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (a, b) = (p.get(..n)?, p.get(n..)?);
        *p = b;
        Some(a)
    }
    let mut out = Vec::new();
    while !p.is_empty() {
        let tag = take(&mut p, 1)?[0];
        let kl = u32::from_le_bytes(take(&mut p, 4)?.try_into().ok()?) as usize;
        let key = std::str::from_utf8(take(&mut p, kl)?).ok()?;
        let vl = u32::from_le_bytes(take(&mut p, 4)?.try_into().ok()?) as usize;
        let v = take(&mut p, vl)?;
        if tag > 1 {
            return None;
        }
        out.push((tag, key, v));
    }
    Some(out)
}

/// A deferred index commits its open transaction after this many
/// batches...
const OPEN_BATCHES: u32 = 1024;
/// ...or once it is this old (milliseconds).
const OPEN_MS: u128 = 100;

impl DigestIndex {
    /// Opens the index at `path`, creating it when missing. A journal left
    /// beside it by a deferred index whose process was killed
    /// ([`DigestIndex::open_deferred`]) is replayed, committed durably and
    /// removed: its entries are not lost, and no later open replays them
    /// over newer ones. A cut last record is ignored with a warning on
    /// stderr ([`DigestIndex::replayed`] counts it).
    ///
    /// # Errors
    /// The file cannot be created or is not a digest index, or the
    /// journal cannot be read, does not decode or cannot be removed.
    pub fn open(path: impl AsRef<Path>) -> Result<DigestIndex> {
        let path = path.as_ref().to_path_buf();
        // redb keeps the pages it writes in its cache, up to 1 GiB by
        // default: the index's file, as it grows, stayed in memory (a
        // crawl grew about 7 KB a page with it). Bounded as the
        // frontier's is.
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| db_error(e, &path))?;
        let idx = DigestIndex {
            db,
            path,
            _temp: None,
            deferred: false,
            dirty: AtomicBool::new(false),
            open: Mutex::new(Open::default()),
            replayed: (0, 0),
        };
        // Make the table exist so that lookups before any insert work.
        let txn = idx.db.begin_write().map_err(|e| db_error(e, &idx.path))?;
        txn.open_table(TABLE).map_err(|e| db_error(e, &idx.path))?;
        txn.open_table(URLS).map_err(|e| db_error(e, &idx.path))?;
        txn.commit().map_err(|e| db_error(e, &idx.path))?;
        let jp = journal_path(&idx.path);
        let mut idx = idx;
        if jp.exists() {
            idx.replayed = idx.replay_journal(&jp)?;
            // Durable in the database: the journal is not needed.
            fs::remove_file(&jp).map_err(|e| db_error(e, &jp))?;
        }
        Ok(idx)
    }

    /// Replays the journal at `jp` (its whole records) in one durable
    /// commit; returns the records replayed and the bytes of a cut last
    /// record, which is warned about on stderr.
    fn replay_journal(&self, jp: &Path) -> Result<(u64, u64)> {
        let data = read_journal(jp)?;
        let (records, torn) = journal_records(&data);
        if !records.is_empty() {
            let p = &self.path;
            let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
            replay(&txn, &records, p, jp)?;
            txn.commit().map_err(|e| db_error(e, p))?;
        }
        if torn > 0 {
            // Not `eprintln!`, which panics on a closed standard error.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "warning: {}: {torn} bytes of a cut last record ignored \
                 (a write cut by a kill: its entries are not in the index)",
                jp.display()
            );
        }
        Ok((records.len() as u64, torn))
    }

    /// What opening replayed from a journal an earlier process left: its
    /// whole records, and the bytes of a cut last record (ignored, and
    /// warned about on stderr).
    pub fn replayed(&self) -> (u64, u64) {
        self.replayed
    }

    /// Copies the index at `src` to `dst` (a new file) with the entries of
    /// the journal beside `src`, which is left as it is: a copy of a
    /// killed crawl's index (`--recrawl`) loses none of its entries since
    /// its last checkpoint.
    ///
    /// # Errors
    /// `src` cannot be read, or `dst` written.
    pub fn copy(src: &Path, dst: &Path) -> Result<()> {
        fs::copy(src, dst).map_err(|e| Error::from(e).in_file(src))?;
        let idx = DigestIndex::open(dst)?;
        let jp = journal_path(src);
        if jp.exists() {
            idx.replay_journal(&jp)?;
        }
        Ok(())
    }

    /// An index in a temporary directory, removed when dropped (for
    /// deduplicating within the files of one run).
    ///
    /// # Errors
    /// The temporary file cannot be made.
    pub fn temporary() -> Result<DigestIndex> {
        let dir = tempfile::tempdir()?;
        let mut idx = DigestIndex::open(dir.path().join("digests.redb"))?;
        idx._temp = Some(dir);
        Ok(idx)
    }

    /// Commits from now on are not synced to disk, each one: they become
    /// durable at the next [`DigestIndex::sync`], which the owner calls
    /// (a crawl syncs once for a group of fetches, not once a fetch).
    /// Without a journal ([`DigestIndex::open_deferred`] keeps one), a
    /// process killed before it loses the entries since the last sync:
    /// later duplicates of those payloads are then written whole, never
    /// as revisits of a record that is not there. Batches go into one
    /// write transaction kept open, committed when a batch commits and
    /// the transaction holds 1,024 batches or is 100 ms old, and at each
    /// sync (redb's fixed cost a commit is paid once for many fetches);
    /// lookups read it, so they see every batch. An error drops it (see
    /// [`DigestIndex::open_deferred`]); without a journal the index then
    /// fails every later batch and sync.
    pub fn deferred(mut self) -> DigestIndex {
        self.deferred = true;
        self
    }

    /// Opens the index at `path` deferred ([`DigestIndex::deferred`]),
    /// with a journal beside it (`NAME.journal`): each batch's entries are
    /// appended to it (one `write()`) as the batch commits (they went into
    /// the open transaction before), so a process killed at any moment
    /// loses none of the batches that committed: opening replays the
    /// journal found (its whole records; [`DigestIndex::open`]), commits
    /// durably and empties it. A sync empties it too. A power loss may
    /// lose the journal's last seconds (it is not synced).
    ///
    /// An error in the open transaction (its commit fails, a batch is
    /// dropped part way after an insert, a batch's journal write fails)
    /// drops the transaction; the next one first replays the journal, so
    /// the other batches are kept and only the failed one (which returned
    /// the error) is lost. A failed journal write is cut back off the
    /// file; if that fails too, a sync is made at once (it empties the
    /// journal), and if that fails, the index fails every later batch. A
    /// sync whose commit is durable but which cannot empty the journal
    /// loses nothing: the journal is emptied before the next append (each
    /// batch fails, not journaled, until it can be) or by the next sync.
    ///
    /// # Errors
    /// The database or the journal cannot be opened, read or written.
    pub fn open_deferred(path: impl AsRef<Path>) -> Result<DigestIndex> {
        let path = path.as_ref();
        // Replays (and removes) a journal found.
        let idx = DigestIndex::open(path)?;
        let jp = journal_path(path);
        let jerr = |e: &dyn std::fmt::Display| db_error(e, &jp);
        let f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&jp)
            .map_err(|e| jerr(&e))?;
        // Replayed and durable: the journal starts empty.
        f.set_len(0).map_err(|e| jerr(&e))?;
        let idx = idx.deferred();
        {
            let mut o = idx.lock_open();
            o.journal = Some((jp, f));
            o.jlen = 0;
        }
        Ok(idx)
    }

    /// Makes every batch committed so far durable: the open transaction
    /// committed (rebuilt from the journal first when an error dropped
    /// it), then one synced commit, and the journal emptied. Returns
    /// false, having written nothing, when no batch was committed since
    /// the last sync and no transaction is open (a checkpoint then pays
    /// no `fsync` for an index that did not change); an open transaction
    /// (lookups open one too) is committed whatever was written to it.
    ///
    /// # Errors
    /// Writing the database or emptying the journal failed, or the index
    /// is broken (see [`DigestIndex::open_deferred`]).
    pub fn sync(&self) -> Result<bool> {
        // A batch in progress holds the lock: nothing of it is this sync's
        // to cover (its commit marks the index again), and with nothing
        // committed since the last sync, the sync does not wait for it.
        if self.deferred
            && !self.dirty.load(Ordering::SeqCst)
            && matches!(
                self.open.try_lock(),
                Err(std::sync::TryLockError::WouldBlock)
            )
        {
            return Ok(false);
        }
        let mut open = self.lock_open();
        self.sync_locked(&mut open)
    }

    /// [`DigestIndex::sync`] after `before`, both under the open
    /// transaction's lock: no batch commits between them. A crawl syncs
    /// its open WARC file in `before`, so that no entry made durable
    /// names a record written after that file's sync. `before`'s error
    /// is the outer one (the index then not synced).
    ///
    /// # Errors
    /// `before` failed (outer), or as [`DigestIndex::sync`] (inner).
    pub fn sync_with<E>(
        &self,
        before: impl FnOnce() -> std::result::Result<(), E>,
    ) -> std::result::Result<Result<bool>, E> {
        let mut open = self.lock_open();
        before()?;
        Ok(self.sync_locked(&mut open))
    }

    /// [`DigestIndex::sync`], the open transaction's lock held (no batch
    /// runs: `dirty` and the open transaction are read together).
    fn sync_locked(&self, open: &mut Open) -> Result<bool> {
        self.check_broken(open)?;
        let dirty = self.dirty.swap(false, Ordering::SeqCst);
        // An open transaction is committed whatever `dirty` says: a batch
        // dropped part way leaves inserts in it.
        if self.deferred && !dirty && open.txn.is_none() && !open.rebuild && !open.stale {
            return Ok(false);
        }
        let p = &self.path;
        let r = (|| -> Result<()> {
            if open.rebuild {
                self.ensure_txn(open)?;
            }
            // The open transaction first (redb has one writer).
            if let Some(t) = open.txn.take()
                && let Err(e) = t.commit()
            {
                self.drop_txn(open, &e);
                return Err(db_error(e, p));
            }
            let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
            txn.commit().map_err(|e| db_error(e, p))?;
            // Durable in the database: the journal's entries are not
            // needed. Failing to empty it loses nothing (replaying them is
            // idempotent): retried before the next append.
            if let Some((_, f)) = &open.journal {
                match f.set_len(0) {
                    Ok(()) => {
                        open.jlen = 0;
                        open.stale = false;
                    }
                    Err(_) => open.stale = true,
                }
            }
            Ok(())
        })();
        if r.is_err() {
            // Still to be made durable.
            self.dirty.store(true, Ordering::SeqCst);
        }
        r.map(|()| true)
    }

    fn lock_open(&self) -> MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_broken(&self, open: &Open) -> Result<()> {
        match &open.broken {
            Some(m) => Err(db_error(
                format!(
                    "an earlier write failed and its transaction could not be \
                     rebuilt ({m}); the entries since the last sync are lost"
                ),
                &self.path,
            )),
            None => Ok(()),
        }
    }

    /// Drops the open transaction after an error `why`: the next one
    /// replays the journal first, or, with no journal, the index is
    /// broken.
    fn drop_txn(&self, open: &mut Open, why: &dyn std::fmt::Display) {
        open.txn = None;
        if open.journal.is_some() {
            open.rebuild = true;
        } else {
            open.broken.get_or_insert_with(|| why.to_string());
        }
    }

    /// Begins the open transaction if none is, replaying the journal's
    /// whole records into it when an error dropped the last one.
    fn ensure_txn(&self, open: &mut Open) -> Result<()> {
        self.check_broken(open)?;
        if open.txn.is_some() {
            return Ok(());
        }
        let txn = self.begin_write()?;
        if open.rebuild {
            let r = match &open.journal {
                Some((jp, _)) => read_journal(jp).and_then(|data| {
                    let whole = data.get(..open.jlen as usize).unwrap_or(&data);
                    replay(&txn, &journal_records(whole).0, &self.path, jp)
                }),
                None => Err(db_error("no journal to rebuild from", &self.path)),
            };
            if let Err(e) = r {
                open.broken = Some(e.to_string());
                return Err(e);
            }
            open.rebuild = false;
        }
        open.txn = Some(txn);
        open.batches = 0;
        open.since = Some(Instant::now());
        Ok(())
    }

    /// A deferred index's open transaction, begun (unsynced) if none is.
    fn shared(&self) -> Result<MutexGuard<'_, Open>> {
        let mut open = self.lock_open();
        self.ensure_txn(&mut open)?;
        Ok(open)
    }

    /// The value of `key` in table `def` (the open transaction's, when
    /// deferred), and the table's length.
    fn lookup(
        &self,
        def: TableDefinition<&str, &[u8]>,
        key: Option<&str>,
    ) -> Result<(Option<Vec<u8>>, u64)> {
        fn get<T: ReadableTable<&'static str, &'static [u8]>>(
            t: &T,
            key: Option<&str>,
            p: &Path,
        ) -> Result<(Option<Vec<u8>>, u64)> {
            match key {
                Some(k) => Ok((
                    t.get(k)
                        .map_err(|e| db_error(e, p))?
                        .map(|g| g.value().to_vec()),
                    0,
                )),
                None => Ok((None, t.len().map_err(|e| db_error(e, p))?)),
            }
        }
        let p = &self.path;
        if self.deferred {
            let open = self.shared()?;
            let txn = open
                .txn
                .as_ref()
                .ok_or_else(|| db_error("no open transaction", p))?;
            let t = txn.open_table(def).map_err(|e| db_error(e, p))?;
            return get(&t, key, p);
        }
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        match txn.open_table(def) {
            Ok(t) => get(&t, key, p),
            // An index made before URLs were kept.
            Err(redb::TableError::TableDoesNotExist(_)) => Ok((None, 0)),
            Err(e) => Err(db_error(e, p)),
        }
    }

    fn begin_write(&self) -> Result<redb::WriteTransaction> {
        let p = &self.path;
        let mut txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
        if self.deferred {
            txn.set_durability(redb::Durability::None)
                .map_err(|e| db_error(e, p))?;
        }
        Ok(txn)
    }

    /// Commits a transaction of [`DigestIndex::begin_write`], marking the
    /// index as having something to sync when deferred.
    fn commit(&self, txn: redb::WriteTransaction) -> Result<()> {
        txn.commit().map_err(|e| db_error(e, &self.path))?;
        if self.deferred {
            self.dirty.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many digests it holds.
    ///
    /// # Errors
    /// Reading the database failed.
    pub fn len(&self) -> Result<u64> {
        Ok(self.lookup(TABLE, None)?.1)
    }

    /// True when it holds no digest.
    ///
    /// # Errors
    /// Reading the database failed.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The entry for a payload digest.
    ///
    /// # Errors
    /// Reading the database failed.
    pub fn get(&self, digest: &Digest) -> Result<Option<IndexEntry>> {
        let v = self.lookup(TABLE, Some(digest.lookup_key().as_str()))?.0;
        Ok(v.and_then(|v| IndexEntry::decode(&v)))
    }

    /// A batch of lookups and inserts, committed together (one
    /// transaction: inserts are seen by later lookups of the batch).
    ///
    /// # Errors
    /// The database cannot start a transaction.
    pub fn batch(&self) -> Result<Batch<'_>> {
        let txn = if self.deferred {
            Txn::Shared(self.shared()?)
        } else {
            Txn::Own(Box::new(self.begin_write()?))
        };
        Ok(Batch {
            txn: Some(txn),
            index: self,
            log: Vec::new(),
            wrote: false,
        })
    }

    /// Where the original of an identical-payload-digest `revisit` is,
    /// by its payload digest; when the revisit names its original
    /// (WARC-Refers-To), the entry must be that record.
    ///
    /// # Errors
    /// Reading the database failed.
    pub fn locate(&self, revisit: &WarcHeader) -> Result<Option<Location>> {
        let Some(Ok(d)) = revisit.parsed_payload_digest() else {
            return Ok(None);
        };
        let Some(e) = self.get(&d)? else {
            return Ok(None);
        };
        if let Some(id) = revisit.refers_to()
            && id.trim() != e.original.record_id
        {
            return Ok(None);
        }
        Ok(Some(e.location))
    }
}

impl Drop for DigestIndex {
    /// A deferred index's open transaction is committed, durably. Its
    /// owner syncs it before (a crawl's last checkpoint), where an error
    /// is reported; this one only catches an owner that did not.
    fn drop(&mut self) {
        if self.deferred && self.sync().is_ok() {
            // Empty now: a clean close leaves no journal.
            if let Some((jp, _)) = self.lock_open().journal.take() {
                let _ = fs::remove_file(jp);
            }
        }
    }
}

impl DigestIndex {
    /// The last capture of `uri` recorded with [`DigestIndex::put_url`].
    ///
    /// # Errors
    /// Reading the database failed.
    pub fn get_url(&self, uri: &str) -> Result<Option<UrlEntry>> {
        let v = self.lookup(URLS, Some(uri))?.0;
        Ok(v.and_then(|v| UrlEntry::decode(&v)))
    }

    /// Records the capture of `uri` (replacing an earlier one).
    ///
    /// # Errors
    /// Writing the database failed.
    pub fn put_url(&self, uri: &str, entry: &UrlEntry) -> Result<()> {
        let mut b = self.batch()?;
        b.put_url(uri, entry)?;
        b.commit()
    }
}

/// Lookups and inserts in one transaction of a [`DigestIndex`] (a
/// deferred index's open one, held while the batch lives).
pub struct Batch<'a> {
    /// `None` once committed.
    txn: Option<Txn<'a>>,
    index: &'a DigestIndex,
    /// Its entries for the journal (a journaled deferred index).
    log: Vec<u8>,
    /// It wrote to the transaction (or tried to).
    wrote: bool,
}

impl Drop for Batch<'_> {
    /// A batch of a deferred index dropped uncommitted after a write (an
    /// error part way) drops the open transaction: its inserts, not
    /// journaled, must not be committed with the other batches (which the
    /// next transaction replays from the journal).
    fn drop(&mut self) {
        if self.wrote
            && let Some(Txn::Shared(o)) = &mut self.txn
        {
            self.index.drop_txn(o, &"a batch was dropped part way");
        }
    }
}

enum Txn<'a> {
    Own(Box<redb::WriteTransaction>),
    Shared(MutexGuard<'a, Open>),
}

impl Batch<'_> {
    fn journaled(&self) -> bool {
        matches!(&self.txn, Some(Txn::Shared(o)) if o.journal.is_some())
    }

    fn txn(&self) -> Result<&redb::WriteTransaction> {
        let none = || db_error("no open transaction", &self.index.path);
        match &self.txn {
            Some(Txn::Own(t)) => Ok(t),
            Some(Txn::Shared(o)) => o.txn.as_ref().ok_or_else(none),
            None => Err(none()),
        }
    }

    /// The entry for a digest, inserts of this batch included.
    ///
    /// # Errors
    /// Reading the database failed.
    pub fn get(&self, digest: &Digest) -> Result<Option<IndexEntry>> {
        let p = &self.index.path;
        let t = self.txn()?.open_table(TABLE).map_err(|e| db_error(e, p))?;
        let v = t
            .get(digest.lookup_key().as_str())
            .map_err(|e| db_error(e, p))?;
        Ok(v.and_then(|g| IndexEntry::decode(g.value())))
    }

    /// Records `entry` for `digest` (the first original stays: an existing
    /// entry is not replaced).
    ///
    /// # Errors
    /// Writing the database failed.
    pub fn insert_if_absent(&mut self, digest: &Digest, entry: &IndexEntry) -> Result<bool> {
        let p = &self.index.path;
        let key = digest.lookup_key();
        let v = entry.encode();
        self.wrote = true;
        {
            let mut t = self.txn()?.open_table(TABLE).map_err(|e| db_error(e, p))?;
            if t.get(key.as_str()).map_err(|e| db_error(e, p))?.is_some() {
                return Ok(false);
            }
            t.insert(key.as_str(), v.as_slice())
                .map_err(|e| db_error(e, p))?;
        }
        if self.journaled() {
            journal_entry(&mut self.log, 0, &key, &v);
        }
        Ok(true)
    }

    /// Records the capture of `uri` in this batch (as
    /// [`DigestIndex::put_url`], without a transaction of its own).
    ///
    /// # Errors
    /// Writing the database failed.
    pub fn put_url(&mut self, uri: &str, entry: &UrlEntry) -> Result<()> {
        let p = &self.index.path;
        let v = entry.encode();
        self.wrote = true;
        {
            let mut t = self.txn()?.open_table(URLS).map_err(|e| db_error(e, p))?;
            t.insert(uri, v.as_slice()).map_err(|e| db_error(e, p))?;
        }
        if self.journaled() {
            journal_entry(&mut self.log, 1, uri, &v);
        }
        Ok(())
    }

    /// Commits the batch.
    ///
    /// # Errors
    /// Writing the database failed.
    pub fn commit(mut self) -> Result<()> {
        let index = self.index;
        match self.txn.take() {
            None => Err(db_error("no open transaction", &index.path)),
            Some(Txn::Own(t)) => index.commit(*t),
            Some(Txn::Shared(mut o)) => index.commit_shared(&mut o, &self.log),
        }
    }
}

impl DigestIndex {
    /// Commits a batch of the open transaction: its entries journaled,
    /// the transaction committed (unsynced) when due.
    fn commit_shared(&self, o: &mut Open, log: &[u8]) -> Result<()> {
        if !log.is_empty()
            && let Some((jp, f)) = &mut o.journal
        {
            // One write: a kill cuts at most this record, which the
            // replay's CRC check drops.
            if o.stale {
                // Records appended after a tail that is not a record's
                // would not be read back.
                if let Err(e) = f.set_len(0) {
                    let e = db_error(
                        format!(
                            "emptying the journal (its entries are durable): {e}; \
                             the batch is not journaled"
                        ),
                        jp,
                    );
                    self.drop_txn(o, &e);
                    return Err(e);
                }
                o.jlen = 0;
                o.stale = false;
            }
            let mut rec = Vec::with_capacity(8 + log.len());
            rec.extend_from_slice(&(log.len() as u32).to_le_bytes());
            rec.extend_from_slice(&crc(log).to_le_bytes());
            rec.extend_from_slice(log);
            #[cfg(test)]
            let cut = o.cut.take();
            #[cfg(not(test))]
            let cut = None;
            if let Err(e) = write_record(f, &rec, cut) {
                let e = db_error(e, jp);
                // Cut back, so records appended later are read back.
                let cut = f.set_len(o.jlen);
                // The batch's inserts are not journaled: the transaction
                // holding them is dropped, the others' rebuilt.
                self.drop_txn(o, &e);
                if cut.is_err() {
                    // The journal's end is not a record's: a sync now
                    // makes everything durable and empties it.
                    if let Err(s) = self.sync_locked(o) {
                        o.broken.get_or_insert_with(|| s.to_string());
                    }
                }
                return Err(e);
            }
            o.jlen += rec.len() as u64;
        }
        o.batches += 1;
        // Something to sync from now: the sync commits it.
        self.dirty.store(true, Ordering::SeqCst);
        let due = o.batches >= OPEN_BATCHES
            || o.since.is_some_and(|t| t.elapsed().as_millis() >= OPEN_MS);
        if due
            && let Some(t) = o.txn.take()
            && let Err(e) = t.commit()
        {
            self.drop_txn(o, &e);
            return Err(db_error(e, &self.path));
        }
        Ok(())
    }
}

/// Writes a journal record; `cut` (a test seam): write this many bytes,
/// then fail.
fn write_record(f: &mut fs::File, rec: &[u8], cut: Option<usize>) -> io::Result<()> {
    if let Some(n) = cut {
        io::Write::write_all(f, &rec[..n.min(rec.len())])?;
        return Err(io::Error::other("a write cut short (test)"));
    }
    io::Write::write_all(f, rec)
}

/// How [`dedupe`] runs.
#[derive(Debug, Clone)]
pub struct DedupeOptions {
    /// The output files: names, size, compression, warcinfo.
    pub output: RotatingOptions,
    /// Payloads shorter than this many bytes are kept (default 1: an empty
    /// payload is kept, there being nothing to save).
    pub min_payload: u64,
}

impl Default for DedupeOptions {
    fn default() -> Self {
        DedupeOptions {
            output: RotatingOptions {
                link_warcinfo: false,
                ..RotatingOptions::default()
            },
            min_payload: 1,
        }
    }
}

/// What a [`dedupe`] run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DedupeStats {
    /// Records read.
    pub records: u64,
    /// HTTP responses considered.
    pub responses: u64,
    /// Responses rewritten as revisits.
    pub revisits: u64,
    /// Responses whose recorded payload digest is not the payload's (kept
    /// as they are, not indexed).
    pub digest_mismatches: u64,
    /// New digests added to the index.
    pub indexed: u64,
    /// Size of the input files.
    pub bytes_in: u64,
    /// Size of the output files.
    pub bytes_out: u64,
    /// Recoveries the lenient reader made in the inputs (each handed to
    /// the `on_warnings` of [`dedupe_with`]).
    pub recoveries: u64,
}

impl DedupeStats {
    /// Bytes saved (input minus output; 0 when the output is larger).
    pub fn bytes_saved(&self) -> u64 {
        self.bytes_in.saturating_sub(self.bytes_out)
    }
}

/// Copies `inputs` to new files in `out_dir`, rewriting each HTTP response
/// whose payload digest is in `index` (from an earlier run, or an earlier
/// record of this one) as an identical-payload-digest revisit; the others
/// are copied untouched, and the responses among them indexed.
///
/// # Errors
/// An input cannot be read, an output cannot be written, the index fails.
pub fn dedupe<P: AsRef<Path>>(
    inputs: &[P],
    out_dir: &Path,
    index: &DigestIndex,
    opts: &DedupeOptions,
) -> Result<(DedupeStats, Vec<PathBuf>)> {
    dedupe_with(inputs, out_dir, index, opts, &mut |_, _| {})
}

/// [`dedupe`], handing the lenient reader's recoveries in each input to
/// `on_warnings` (the input, its warnings) as they are made; their number
/// is [`DedupeStats::recoveries`].
///
/// # Errors
/// As [`dedupe`].
pub fn dedupe_with<P: AsRef<Path>>(
    inputs: &[P],
    out_dir: &Path,
    index: &DigestIndex,
    opts: &DedupeOptions,
    on_warnings: &mut dyn FnMut(&Path, &[Warning]),
) -> Result<(DedupeStats, Vec<PathBuf>)> {
    let mut stats = DedupeStats::default();
    let mut w = RotatingWriter::new(out_dir, opts.output.clone())?;
    let out_abs = fs::canonicalize(out_dir).unwrap_or_else(|_| out_dir.to_path_buf());
    for input in inputs {
        let input = input.as_ref();
        stats.bytes_in += fs::metadata(input)
            .map_err(|e| Error::from(e).in_file(input))?
            .len();
        let mut batch = index.batch()?;
        let mut r = warc::Reader::open(input)?;
        let mut report = |r: &mut warc::Reader<_>, stats: &mut DedupeStats| {
            let w = r.take_warnings();
            if !w.is_empty() {
                stats.recoveries += w.len() as u64;
                on_warnings(input, &w);
            }
        };
        loop {
            // Taken as the reading goes: a damaged file's warnings are not
            // all held at once.
            report(&mut r, &mut stats);
            let Some(mut rec) = r.next_record()? else {
                break;
            };
            stats.records += 1;
            let at = rec.location().offset;
            let h = rec.header().clone();
            if !candidate(&h) {
                w.write_raw(&h, &mut rec.block())
                    .map_err(|e| of_input(e, input, at))?;
                continue;
            }
            stats.responses += 1;
            // Spool the block while digesting its payload: it is written
            // either whole or as a revisit of its head.
            let alg = h
                .parsed_payload_digest()
                .and_then(|d| d.ok())
                .and_then(|d| d.algorithm())
                .unwrap_or(Algorithm::Sha1);
            let mut spool = tempfile::SpooledTempFile::new(opts.output.writer.spool_threshold);
            let mut dig = BlockDigester::new(alg, Limits::default());
            let mut block = rec.block();
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = match block.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e.into()),
                };
                dig.update(&buf[..n]);
                io::Write::write_all(&mut spool, &buf[..n])?;
            }
            spool.seek(SeekFrom::Start(0))?;
            let (head, digests) = dig.finish();
            let recorded_ok = match h.parsed_payload_digest() {
                Some(Ok(d)) => matches!(
                    digests.check(&d),
                    PayloadMatch::Payload | PayloadMatch::RawChunked
                ),
                Some(Err(_)) => false,
                None => true,
            };
            let (Some(head), true) = (head, recorded_ok) else {
                if !recorded_ok {
                    stats.digest_mismatches += 1;
                }
                w.write_raw(&h, &mut spool)
                    .map_err(|e| of_input(e, input, at))?;
                continue;
            };
            let digest = Digest::new(alg, digests.payload.as_bytes());
            if digests.payload_len >= opts.min_payload
                && let Some(entry) = batch.get(&digest)?
            {
                let mut rev = revisit::from_duplicate(&h, &entry.original)?;
                rev.set(warchest::warc::field::PAYLOAD_DIGEST, digest.to_string())?;
                w.write(&mut rev, Body::Bytes(head.raw()))?;
                stats.revisits += 1;
                continue;
            }
            let placed = w
                .write_raw(&h, &mut spool)
                .map_err(|e| of_input(e, input, at))?;
            if let (Some(p), Some(mut original)) = (placed.first(), Original::from_header(&h)) {
                original.payload_digest = digest.to_string();
                let file = match p.path.file_name() {
                    Some(n) => out_abs.join(n),
                    None => p.path.clone(),
                };
                let entry = IndexEntry {
                    original,
                    location: Location {
                        file,
                        offset: p.written.offset,
                    },
                };
                if digests.payload_len >= opts.min_payload
                    && batch.insert_if_absent(&digest, &entry)?
                {
                    stats.indexed += 1;
                }
            }
        }
        report(&mut r, &mut stats);
        batch.commit()?;
    }
    let files = w.finish()?;
    for f in &files {
        stats.bytes_out += fs::metadata(f)
            .map_err(|e| Error::from(e).in_file(f))?
            .len();
    }
    Ok((stats, files))
}

/// A record whose block ends before its Content-Length (cut short by the
/// end of the file) is the input's fault: the error names the input and
/// the record's offset. Other errors (the output's) are left as they are.
fn of_input(e: Error, input: &Path, offset: u64) -> Error {
    match e.kind() {
        ErrorKind::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
            e.in_file(input).at(warchest::error::Position::at(offset))
        }
        _ => e,
    }
}

/// A response that can be deduplicated: HTTP, whole (not a segment, not
/// truncated).
fn candidate(h: &WarcHeader) -> bool {
    h.record_type() == RecordType::Response
        && h.payload_kind() == PayloadKind::HttpBody
        && h.segment_number().is_none()
        && h.truncated().is_none()
        && h.content_length().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_entry(etag: Option<&str>) -> UrlEntry {
        UrlEntry {
            entry: IndexEntry {
                original: Original {
                    record_id: "<urn:uuid:1>".into(),
                    target_uri: "http://a/".into(),
                    date: "2026-01-01T00:00:00Z".into(),
                    payload_digest: "sha1:X".into(),
                },
                location: Location {
                    file: PathBuf::from("/x.warc.gz"),
                    offset: 42,
                },
            },
            etag: etag.map(str::to_string),
            last_modified: None,
        }
    }

    /// A deferred index syncs only when a commit was made since its last
    /// sync (a crawl's group commit pays no fsync for an unchanged index);
    /// a batch's URL entry is read back like `put_url`'s.
    #[test]
    fn a_deferred_index_syncs_only_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        let idx = DigestIndex::open(dir.path().join("d.redb"))
            .unwrap()
            .deferred();
        assert!(!idx.sync().unwrap(), "nothing written yet");
        let e = url_entry(None);
        let mut b = idx.batch().unwrap();
        b.put_url("http://a/", &e).unwrap();
        b.commit().unwrap();
        assert_eq!(idx.get_url("http://a/").unwrap(), Some(e.clone()));
        assert!(idx.sync().unwrap(), "a commit to make durable");
        assert!(!idx.sync().unwrap(), "synced already");
        idx.put_url("http://b/", &e).unwrap();
        assert!(idx.sync().unwrap());
        // Not deferred: every commit is durable, a sync always commits.
        let plain = DigestIndex::temporary().unwrap();
        assert!(plain.sync().unwrap());
    }

    /// A sync while a batch is open covers nothing of it and does not
    /// wait for it; the batch's commit marks the index again, so the next
    /// sync makes it durable. (With the mark set as a transaction began, a
    /// sync could clear it, take redb's writer first, and leave the commit
    /// after it unsynced.)
    #[test]
    fn a_commit_after_a_sync_is_synced_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let idx = DigestIndex::open(dir.path().join("d.redb"))
            .unwrap()
            .deferred();
        let mut b = idx.batch().unwrap();
        b.put_url("http://a/", &url_entry(None)).unwrap();
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let idx = &idx;
            s.spawn(move || tx.send(idx.sync().unwrap()).unwrap());
            // A bound only for the failure (a sync held up by the batch):
            // a loaded machine can take seconds to start the thread.
            let during = rx.recv_timeout(std::time::Duration::from_secs(60));
            b.commit().unwrap();
            assert_eq!(during, Ok(false), "a sync during the batch");
        });
        assert!(idx.sync().unwrap(), "the batch's commit to make durable");
    }

    fn digest(n: u8) -> Digest {
        Digest::new(Algorithm::Sha1, &[n; 20])
    }

    fn put(idx: &DigestIndex, n: u8) -> Result<()> {
        let mut b = idx.batch()?;
        b.insert_if_absent(&digest(n), &url_entry(None).entry)?;
        b.commit()
    }

    /// A batch whose journal write fails is cut back off the journal and
    /// its inserts dropped with the open transaction; the other batches,
    /// before and after it, are kept (the next transaction replays the
    /// journal) and read back from the journal after a kill. A batch
    /// dropped part way is dropped so too.
    #[test]
    fn a_failed_batch_loses_no_other_batch() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.redb");
        let idx = DigestIndex::open_deferred(&p).unwrap();
        put(&idx, 1).unwrap();
        idx.lock_open().cut = Some(5);
        let e = put(&idx, 2).unwrap_err().to_string();
        assert!(e.contains("cut short"), "{e}");
        put(&idx, 3).unwrap();
        let mut b = idx.batch().unwrap();
        b.put_url("http://dropped/", &url_entry(None)).unwrap();
        drop(b);
        assert!(idx.get(&digest(1)).unwrap().is_some());
        assert!(idx.get(&digest(2)).unwrap().is_none(), "the failed batch");
        assert!(idx.get(&digest(3)).unwrap().is_some());
        assert!(idx.get_url("http://dropped/").unwrap().is_none());
        let data = fs::read(journal_path(&p)).unwrap();
        let (records, torn) = journal_records(&data);
        assert_eq!((records.len(), torn), (2, 0), "1 and 3, whole");
        assert!(idx.sync().unwrap());
        drop(idx);
        let idx = DigestIndex::open(&p).unwrap();
        assert_eq!(idx.len().unwrap(), 2);
    }

    /// A failed journal write that cannot be cut back (a read-only handle
    /// stands in for the failing disk) forces a sync, which makes every
    /// entry durable; the journal it cannot empty does not break the
    /// index: batches fail (not journaled) until the journal can be
    /// emptied, then go on.
    #[test]
    fn a_journal_that_cannot_be_emptied_is_emptied_later() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.redb");
        let idx = DigestIndex::open_deferred(&p).unwrap();
        put(&idx, 1).unwrap();
        let writable = {
            let mut o = idx.lock_open();
            let ro = fs::File::open(journal_path(&p)).unwrap();
            let (jp, f) = o.journal.take().unwrap();
            o.journal = Some((jp, ro));
            f
        };
        assert!(put(&idx, 2).is_err());
        let e = put(&idx, 3).unwrap_err().to_string();
        assert!(e.contains("its entries are durable"), "{e}");
        assert!(idx.sync().is_ok(), "durable, the journal still to empty");
        {
            let mut o = idx.lock_open();
            let (jp, _) = o.journal.take().unwrap();
            o.journal = Some((jp, writable));
        }
        put(&idx, 4).unwrap();
        assert!(idx.sync().unwrap());
        assert_eq!(fs::metadata(journal_path(&p)).unwrap().len(), 0);
        drop(idx);
        let idx = DigestIndex::open(&p).unwrap();
        assert_eq!(idx.replayed(), (0, 0));
        assert!(idx.get(&digest(1)).unwrap().is_some());
        assert!(idx.get(&digest(4)).unwrap().is_some());
        assert_eq!(idx.len().unwrap(), 2);
    }

    /// The child of [`a_killed_deferred_index_keeps_its_journaled_entries`]:
    /// batches committed into the open transaction (none synced), then
    /// `abort()` (no destructor runs, as after `kill -9`), with a cut
    /// record at the journal's end.
    #[test]
    fn killed_index_child() {
        let Ok(p) = std::env::var("WARCHEST_DEDUPE_CHILD") else {
            return;
        };
        let journaled = std::env::var("WARCHEST_DEDUPE_BARE").is_err();
        let idx = if journaled {
            DigestIndex::open_deferred(&p).unwrap()
        } else {
            DigestIndex::open(&p).unwrap().deferred()
        };
        let d = Digest::parse("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ").unwrap();
        let mut b = idx.batch().unwrap();
        assert!(b.insert_if_absent(&d, &url_entry(None).entry).unwrap());
        b.put_url("http://a/", &url_entry(Some("\"v1\""))).unwrap();
        b.commit().unwrap();
        idx.put_url("http://b/", &url_entry(None)).unwrap();
        if journaled {
            let mut f = fs::OpenOptions::new()
                .append(true)
                .open(journal_path(Path::new(&p)))
                .unwrap();
            io::Write::write_all(&mut f, &[200, 0, 0, 0, 1, 2]).unwrap();
        }
        std::process::abort();
    }

    fn run_index_child(p: &Path, bare: bool) {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "dedupe::tests::killed_index_child",
            "--nocapture",
        ])
        .env("WARCHEST_DEDUPE_CHILD", p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
        if bare {
            cmd.env("WARCHEST_DEDUPE_BARE", "1");
        }
        assert!(!cmd.status().unwrap().success(), "the child aborts");
    }

    /// A crawl's index killed before any sync: without the journal its
    /// entries are gone (redb's open transaction dies with the process);
    /// with it, reopening replays them (a cut last record is dropped) and
    /// empties the journal.
    #[test]
    fn a_killed_deferred_index_keeps_its_journaled_entries() {
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("bare.redb");
        run_index_child(&bare, true);
        let idx = DigestIndex::open(&bare).unwrap();
        assert_eq!(idx.len().unwrap(), 0, "lost without a journal");
        let p = dir.path().join("d.redb");
        run_index_child(&p, false);
        assert!(fs::metadata(journal_path(&p)).unwrap().len() > 6);
        // A copy (`--recrawl`) takes the journal's entries, leaving it.
        let copy = dir.path().join("copy.redb");
        DigestIndex::copy(&p, &copy).unwrap();
        assert!(fs::metadata(journal_path(&p)).unwrap().len() > 6);
        assert_eq!(DigestIndex::open(&copy).unwrap().len().unwrap(), 1);
        let idx = DigestIndex::open_deferred(&p).unwrap();
        assert_eq!(idx.replayed(), (2, 6), "two records, a cut one counted");
        assert_eq!(fs::metadata(journal_path(&p)).unwrap().len(), 0);
        let d = Digest::parse("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ").unwrap();
        assert_eq!(idx.get(&d).unwrap(), Some(url_entry(None).entry));
        assert_eq!(
            idx.get_url("http://a/").unwrap(),
            Some(url_entry(Some("\"v1\"")))
        );
        assert_eq!(idx.get_url("http://b/").unwrap(), Some(url_entry(None)));
        drop(idx);
        // Durable: a plain open finds them.
        assert_eq!(DigestIndex::open(&p).unwrap().len().unwrap(), 1);
        // A plain open replays a journal left too, and removes it.
        let q = dir.path().join("q.redb");
        run_index_child(&q, false);
        let idx = DigestIndex::open(&q).unwrap();
        assert_eq!(idx.replayed(), (2, 6));
        assert_eq!(idx.len().unwrap(), 1);
        assert!(!journal_path(&q).exists());
    }

    #[test]
    fn url_entries_round_trip() {
        let idx = DigestIndex::temporary().unwrap();
        assert_eq!(idx.get_url("http://a/").unwrap(), None);
        let e = url_entry(Some("\"v1\""));
        idx.put_url("http://a/", &e).unwrap();
        assert_eq!(idx.get_url("http://a/").unwrap(), Some(e.clone()));
        let enc = e.encode();
        for n in 0..enc.len() {
            // Cut short: no entry, no panic.
            assert_eq!(UrlEntry::decode(&enc[..n]), None);
        }
    }

    #[test]
    fn entries_round_trip_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx.redb");
        let d = Digest::parse("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ").unwrap();
        let e = IndexEntry {
            original: Original {
                record_id: "<urn:uuid:1>".into(),
                target_uri: "http://example.com/".into(),
                date: "2020-01-01T00:00:00Z".into(),
                payload_digest: d.to_string(),
            },
            location: Location {
                file: "/a/b.warc.gz".into(),
                offset: 1234,
            },
        };
        {
            let idx = DigestIndex::open(&path).unwrap();
            let mut b = idx.batch().unwrap();
            assert!(b.insert_if_absent(&d, &e).unwrap());
            assert_eq!(b.get(&d).unwrap().as_ref(), Some(&e));
            assert!(!b.insert_if_absent(&d, &e).unwrap());
            b.commit().unwrap();
        }
        let idx = DigestIndex::open(&path).unwrap();
        assert_eq!(idx.len().unwrap(), 1);
        // The same digest in base16 finds the entry.
        let hex = Digest::parse("sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709").unwrap();
        assert_eq!(idx.get(&hex).unwrap(), Some(e));
        assert!(IndexEntry::decode(b"\x01").is_none());
    }
}
