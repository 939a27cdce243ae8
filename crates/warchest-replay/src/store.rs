//! The index store of a collection: every capture of its files, kept in an
//! embedded database (redb, as `warchest_ops::dedupe` uses it) so that a
//! collection is indexed once and lookups by URL and time are B-tree range
//! scans, not reads of the files.
//!
//! Tables:
//! - `captures`: `urlkey timestamp SRC OFFSET` (CDXJ order, then the
//!   file and offset in fixed-width hex so keys are unique) -> the index
//!   entry as JSON.
//! - `sources`: source id -> the file (or WACZ member) and how far it has
//!   been indexed.
//! - `record-id-sources`: WARC-Record-ID and source -> where the record
//!   is in that source (revisits name their original by WARC-Refers-To).
//! - `digest-key-sources`: payload digest and source -> the first response
//!   or resource with it in that source (revisits without
//!   WARC-Refers-To).
//!
//!   Both are keyed `KEY\0SRC` (the source in 8 hex digits), so that two
//!   files sharing a record id (a copied file) or a payload have an entry
//!   each, and deleting one source's entries never takes another's. A
//!   lookup takes the first source whose file is there. (Stores from
//!   before kept one entry a key, in `record-ids`, `digest-keys` and, older
//!   still, `digests`: rebuilt into these from the captures when opened,
//!   `upgrade_layout`.)
//! - `stale-sources`: source id -> the mark that a lookup found an entry
//!   of it unreadable ([`Source::stale`]); kept apart from `sources` so
//!   that a sync saving a source cannot unmark it.
//! - `reindex-pending`: the entries of stale sources being indexed again
//!   from their start, each tagged with the attempt that wrote it again
//!   (untagged: not written again yet); what no attempt that succeeded
//!   wrote is deleted once it has, and nothing before.
//! - `reindex-attempts`: source id -> the re-index attempt under way,
//!   there once its `reindex-pending` list is whole (an attempt that
//!   failed leaves both: the next one goes on from them).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::UNIX_EPOCH;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use crate::remote::{self, Fetched, Streamed};
use warchest::archive::{Format, Reader};
use warchest::codec::{Decoder, DecoderOptions};
use warchest::digest::lookup_key;
use warchest::error::{Error, ErrorKind, Result};
use warchest::http::date::{pad_timestamp, pad_timestamp_up, timestamp_seconds};
use warchest::recoveries::{Recoveries, UnparsedHead};
use warchest::warc::ReaderOptions;
use warchest_index::{Entry, IndexOptions, Indexer};
use warchest_wacz::{self as wacz, Section};

const CAPTURES: TableDefinition<&str, &[u8]> = TableDefinition::new("captures");
const SOURCES: TableDefinition<u32, &[u8]> = TableDefinition::new("sources");
/// WARC-Record-ID and source ([`sourced_key`]) to where the record is.
const RECORD_IDS: TableDefinition<&str, &[u8]> = TableDefinition::new("record-id-sources");
/// Payload digest ([`lookup_key`]) and source ([`sourced_key`]) to the
/// first original record with it in that source.
const DIGESTS: TableDefinition<&str, &[u8]> = TableDefinition::new("digest-key-sources");
/// The record-id table of stores from before [`RECORD_IDS`]: one entry a
/// record id (the last source indexed with it).
const OLD_RECORD_IDS: TableDefinition<&str, &[u8]> = TableDefinition::new("record-ids");
/// The digest table of stores from before [`DIGESTS`]: one entry a
/// digest key (the first source indexed with it).
const OLD_DIGEST_KEYS: TableDefinition<&str, &[u8]> = TableDefinition::new("digest-keys");
/// The digest table of stores written before [`lookup_key`]: keyed by the
/// bare upper-cased value.
const OLD_DIGESTS: TableDefinition<&str, &[u8]> = TableDefinition::new("digests");
/// Source id to the generation of its stale mark (a mark set again while
/// the source is indexed again is told from the one that index answers).
const STALE: TableDefinition<u32, u64> = TableDefinition::new("stale-sources");
/// `SRC KIND KEY` (the source in 8 hex digits; `c` a captures key, `r` a
/// record id, `d` a digest key) -> the attempt ([`REINDEX`]) that wrote
/// it again, 8 bytes big-endian, or nothing when none did yet: an entry
/// of a stale source being indexed again from its start.
const PENDING: TableDefinition<&str, &[u8]> = TableDefinition::new("reindex-pending");
/// Source id to the number of the re-index attempt under way: there once
/// the source's [`PENDING`] list is whole, until a re-index succeeded.
const REINDEX: TableDefinition<u32, u64> = TableDefinition::new("reindex-attempts");
/// `next-source-id` -> the least id a new source may get: past every
/// source dropped ([`Store::purge`]), so that no id is given again (links
/// name sources by id: an old one must not show another file's bytes).
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// [`META`]'s key of the least id a new source may get.
const NEXT_SOURCE: &str = "next-source-id";

/// Entries written per transaction while indexing (and rows of the
/// re-index lists listed or deleted): bounds what redb holds uncommitted.
#[cfg(not(test))]
const BATCH: usize = 5000;
/// Small in unit tests, so that a few entries make several batches.
#[cfg(test)]
const BATCH: usize = 3;

/// The buffer of a decoder opened to read one record (the default 1 MiB
/// is for reading whole files).
const RECORD_BUFFER: usize = 64 << 10;

fn db_error(e: impl std::fmt::Display, path: &Path) -> Error {
    Error::new(ErrorKind::Usage(format!("index store: {e}"))).in_file(path)
}

/// A file of the collection, a WARC file inside a WACZ, or an object
/// named by URL (in a store or on an HTTP server).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Source {
    /// Its id in the store.
    pub id: u32,
    /// How it is named: the path, `WACZ#archive/NAME` for a member, or
    /// the URL of an object.
    pub name: String,
    /// The file on disk (for an object, its URL as a path: its last
    /// component is the name CDX lines give).
    pub path: PathBuf,
    /// The object's URL, when the source is one: its records are read by
    /// range requests (`len` is its size when listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The member of a WACZ, when it is one.
    pub entry: Option<String>,
    /// Where its bytes start in the file (0 unless a WACZ member).
    pub start: u64,
    /// Its length when last indexed.
    pub len: u64,
    /// The file's modification time (seconds) when last indexed.
    pub mtime: u64,
    /// Offset up to which its records are indexed.
    pub indexed_to: u64,
    /// Index entries it has given.
    pub entries: u64,
    /// An entry of it in the store was found unreadable by a lookup: its
    /// file is indexed again from its start at the next [`Store::sync`],
    /// its entries kept until that succeeds. The mark is kept in the store
    /// apart from the source (across restarts, and whatever a sync saves
    /// of the source meanwhile); it is cleared only by a re-index that
    /// succeeded. (Stores from before kept it here, in the source's
    /// entry: read, and moved to the mark's table when opened.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// For a source read by URL, the version of its bytes when last
    /// indexed: the object's ETag or Last-Modified (as its listing or HEAD
    /// gave it), or for a WACZ member its CRC-32 in the ZIP's directory.
    /// A source found with another version is indexed again from its
    /// start, though its place and size are the same (an object replaced
    /// by another of the same size). `None` when unknown (a store from
    /// before, a server giving neither): then the size alone tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl Source {
    /// The name a CDX line gives the file: its base name, or for a WACZ
    /// member `WACZNAME#archive/NAME`.
    pub fn cdx_filename(&self) -> String {
        let base = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match &self.entry {
            Some(e) => format!("{base}#{e}"),
            None => base,
        }
    }

    /// Opens its bytes, positioned at `offset` (an offset in the source),
    /// for reading on from there. An object is read by range requests
    /// that start small and grow while reading runs on.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open_at(&self, offset: u64) -> Result<SourceBytes> {
        if let Some(url) = &self.url {
            return self.open_object(url, offset, false);
        }
        Ok(SourceBytes::File(self.open_file_at(offset)?))
    }

    /// The bytes `offset..offset + len` (a record's, as the index gives
    /// them), positioned at `offset`; what follows may or may not be
    /// readable. A local file is opened as by [`Source::open_at`]; of an
    /// object, the range is asked for with one request: fetched whole
    /// when small (so that a fault is known before anything is served),
    /// streamed otherwise.
    ///
    /// # Errors
    /// The file cannot be opened, or the range cannot be fetched (the
    /// error names the URL and the byte offset).
    pub fn open_range(&self, offset: u64, len: u64) -> Result<SourceBytes> {
        let Some(url) = &self.url else {
            return Ok(SourceBytes::File(self.open_file_at(offset)?));
        };
        let named = |e: std::io::Error| Error::from(e).in_file(Path::new(url));
        // Fetched whole only within the process's budget for such bytes,
        // waited for a moment; past it, streamed (memory stays bounded).
        let held = (len <= remote::FETCH_WHOLE)
            .then(|| remote::Budget::global().take(len, remote::BUDGET_WAIT))
            .flatten();
        if let Some(held) = held {
            Ok(SourceBytes::Fetched(
                Fetched::get(url, self.start, offset, len, Some(held)).map_err(named)?,
            ))
        } else {
            Ok(SourceBytes::Streamed(Box::new(
                Streamed::open(url, self.start, offset, len).map_err(named)?,
            )))
        }
    }

    /// The object read by range requests from `offset` on; of a WACZ
    /// member, a window on the WACZ object from the member's start, so that
    /// offsets stay the member's.
    #[cfg(feature = "remote")]
    fn open_object(&self, url: &str, offset: u64, scan: bool) -> Result<SourceBytes> {
        let named = |e: std::io::Error| Error::from(e).in_file(Path::new(url));
        let end = self.start.saturating_add(self.len);
        let f = remote::object(url, end, self.start, scan).map_err(named)?;
        let mut s = Section::new(f, self.start, self.len).map_err(named)?;
        s.seek(SeekFrom::Start(offset)).map_err(named)?;
        Ok(SourceBytes::Object(Box::new(s)))
    }

    #[cfg(not(feature = "remote"))]
    fn open_object(&self, url: &str, offset: u64, _scan: bool) -> Result<SourceBytes> {
        // Fails with the message naming the missing feature.
        Ok(SourceBytes::Fetched(
            Fetched::get(url, self.start, offset, 0, None)
                .map_err(|e| Error::from(e).in_file(Path::new(url)))?,
        ))
    }

    fn open_file_at(&self, offset: u64) -> Result<Section> {
        let f = File::open(&self.path).map_err(|e| Error::from(e).in_file(&self.path))?;
        let len = match &self.entry {
            Some(_) => self.len,
            None => f
                .metadata()
                .map_err(|e| Error::from(e).in_file(&self.path))?
                .len(),
        };
        let mut s =
            Section::new(f, self.start, len).map_err(|e| Error::from(e).in_file(&self.path))?;
        s.seek(SeekFrom::Start(offset))
            .map_err(|e| Error::from(e).in_file(&self.path))?;
        Ok(s)
    }

    /// A reader of its records from `offset` on, its format sniffed there
    /// (every format starts a record in a way the sniffer knows).
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn reader_at(&self, offset: u64) -> Result<Reader<Decoder<SourceBytes>>> {
        self.record_reader(offset, None)
    }

    /// A reader of the record at `offset`, whose stored length the index
    /// gives as `length` (when it does). Of an object, that record is read
    /// with one range request of exactly its bytes (a `.warc.zst` costs
    /// one more, for its dictionary frame); without a length, with small
    /// ranges from `offset` on. Of a local file, as [`Source::reader_at`].
    ///
    /// # Errors
    /// The file cannot be opened or read, or the range cannot be fetched.
    pub fn record_reader(
        &self,
        offset: u64,
        length: Option<u64>,
    ) -> Result<Reader<Decoder<SourceBytes>>> {
        let Some(url) = &self.url else {
            return self.local_reader_at(offset);
        };
        let mut dec = DecoderOptions {
            start_offset: offset,
            buffer_size: RECORD_BUFFER,
            ..DecoderOptions::default()
        };
        if offset > 0 && is_zstd_name(self.entry.as_deref().unwrap_or(url)) {
            // The dictionary frame is at the object's start.
            let mut head = self.open_object(url, 0, false)?;
            let (lo, hi) = warchest::codec::zstd_frame::WINDOW_LOG_RANGE;
            if let Some(dict) = warchest::codec::zstd_frame::file_dictionary(
                &mut head,
                0,
                dec.max_zstd_dictionary_size,
                dec.max_zstd_window_log.clamp(lo, hi),
            )
            .map_err(|e| Error::from(e).in_file(Path::new(url)))?
            {
                dec.zstd_dictionary = Some(dict);
            }
        }
        let bytes = match length {
            Some(len) => self.open_range(offset, len)?,
            None => self.open_object(url, offset, false)?,
        };
        let opts = ReaderOptions {
            decoder: dec.clone(),
            file: Some(PathBuf::from(url)),
            ..ReaderOptions::default()
        };
        // Read forward only: nothing before `offset` was fetched.
        Reader::from_source(Decoder::new(bytes, dec), opts)
    }

    /// A reader for indexing from `offset` on: of an object, a sequential
    /// scan with the default read-ahead.
    fn scan_reader(&self, offset: u64) -> Result<Reader<Decoder<SourceBytes>>> {
        let Some(url) = &self.url else {
            return self.local_reader_at(offset);
        };
        let s = self.open_object(url, offset, true)?;
        let dec = DecoderOptions {
            start_offset: offset,
            ..DecoderOptions::default()
        };
        let opts = ReaderOptions {
            decoder: dec.clone(),
            file: Some(PathBuf::from(url)),
            ..ReaderOptions::default()
        };
        let src =
            Decoder::new_seekable(s, dec).map_err(|e| Error::from(e).in_file(Path::new(url)))?;
        Reader::from_source(src, opts)
    }

    fn local_reader_at(&self, offset: u64) -> Result<Reader<Decoder<SourceBytes>>> {
        let s = SourceBytes::File(self.open_file_at(offset)?);
        let dec = DecoderOptions {
            start_offset: offset,
            buffer_size: RECORD_BUFFER,
            ..DecoderOptions::default()
        };
        let opts = ReaderOptions {
            decoder: dec.clone(),
            file: Some(PathBuf::from(&self.name)),
            ..ReaderOptions::default()
        };
        let src = Decoder::new_seekable(s, dec).map_err(|e| Error::from(e).in_file(&self.path))?;
        Reader::from_source(src, opts)
    }
}

/// Whether `name` is compressed with zstd (whose files may start with a
/// dictionary frame).
fn is_zstd_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".zst") || lower.ends_with(".zstd")
}

/// The bytes of a source, positioned at an offset and read with the
/// source's offsets: a window on a local file (a WACZ member included),
/// or of an object named by URL a record's range fetched with one request,
/// streamed from one request, or the object read by range requests.
#[derive(Debug)]
pub enum SourceBytes {
    /// A local file, or a member of a WACZ.
    File(Section),
    /// A range of an object, fetched whole.
    Fetched(Fetched),
    /// A range of an object, streamed (read in order only).
    Streamed(Box<Streamed>),
    /// An object read through range requests as it is read (of a WACZ
    /// member, a window on the WACZ object).
    #[cfg(feature = "remote")]
    Object(Box<Section<warchest_remote::RemoteFile>>),
}

impl SourceBytes {
    /// The length of what can be read from the start (a file's length, an
    /// object's size; for a range, its end).
    pub fn len(&self) -> u64 {
        match self {
            SourceBytes::File(s) => s.len(),
            SourceBytes::Fetched(f) => f.end(),
            SourceBytes::Streamed(s) => s.end(),
            #[cfg(feature = "remote")]
            SourceBytes::Object(f) => f.len(),
        }
    }

    /// Whether there is nothing to read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Read for SourceBytes {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SourceBytes::File(s) => s.read(buf),
            SourceBytes::Fetched(f) => f.read(buf),
            SourceBytes::Streamed(s) => s.read(buf),
            #[cfg(feature = "remote")]
            SourceBytes::Object(f) => f.read(buf),
        }
    }
}

impl Seek for SourceBytes {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        match self {
            SourceBytes::File(s) => s.seek(to),
            SourceBytes::Fetched(f) => f.seek(to),
            SourceBytes::Streamed(s) => s.seek(to),
            #[cfg(feature = "remote")]
            SourceBytes::Object(f) => f.seek(to),
        }
    }
}

/// A capture: an index entry and the source it is in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Capture {
    /// The source id.
    pub src: u32,
    /// The index entry (`filename` is the source's CDX file name).
    #[serde(flatten)]
    pub entry: Entry,
}

impl Capture {
    /// Whether the record is a revisit.
    pub fn is_revisit(&self) -> bool {
        self.entry
            .record_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("revisit"))
    }

    /// The HTTP status as a number.
    pub fn status(&self) -> Option<u16> {
        self.entry.status.as_deref()?.parse().ok()
    }

    /// Its key in the store, unique and in the order queries give
    /// captures: where [`Query::resume`] starts a query again.
    pub fn key(&self) -> String {
        capture_key(&self.entry, self.src)
    }
}

fn capture_key(e: &Entry, src: u32) -> String {
    format!("{} {} {src:08x}{:016x}", e.urlkey, e.timestamp, e.offset)
}

/// Where a record is: source, offset and, since remote sources, its
/// stored length (so a revisit's original costs one range request too).
fn loc_bytes(src: u32, offset: u64, length: Option<u64>) -> Vec<u8> {
    let mut b = Vec::with_capacity(20);
    b.extend_from_slice(&src.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    if let Some(l) = length {
        b.extend_from_slice(&l.to_le_bytes());
    }
    b
}

/// Reads [`loc_bytes`]; 12 bytes (stores written before lengths were
/// kept) give no length.
fn loc_from(b: &[u8]) -> Option<(u32, u64, Option<u64>)> {
    if b.len() != 12 && b.len() != 20 {
        return None;
    }
    let src = u32::from_le_bytes(b[..4].try_into().ok()?);
    let off = u64::from_le_bytes(b[4..12].try_into().ok()?);
    let len = match b.get(12..20) {
        Some(l) => Some(u64::from_le_bytes(l.try_into().ok()?)),
        None => None,
    };
    Some((src, off, len))
}

/// One item of a range over the captures table.
type RangeItem<'a> = std::result::Result<
    (
        redb::AccessGuard<'a, &'static str>,
        redb::AccessGuard<'a, &'static [u8]>,
    ),
    redb::StorageError,
>;

/// How URLs are matched in a query (pywb's `matchType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchType {
    /// The URL itself.
    Exact,
    /// URLs that start with the URL (its url key, really).
    Prefix,
    /// Every URL of the host.
    Host,
    /// Every URL of the host and its subdomains.
    Domain,
}

impl MatchType {
    /// Parses pywb's names.
    pub fn parse(s: &str) -> Option<MatchType> {
        Some(match s {
            "exact" => MatchType::Exact,
            "prefix" => MatchType::Prefix,
            "host" => MatchType::Host,
            "domain" => MatchType::Domain,
            _ => return None,
        })
    }
}

/// The key range of a query: keys starting with `prefix`, and for a domain
/// query the next character must be `)` or `,`.
#[derive(Debug, Clone)]
pub struct KeyRange {
    prefix: String,
    domain: bool,
}

impl KeyRange {
    /// The range for `url` matched by `m` (pywb's rules: `url/*` means
    /// prefix, `*.host` means domain).
    pub fn new(url: &str, m: MatchType) -> KeyRange {
        let (url, m) = if let Some(u) = url.strip_suffix('*') {
            (u, MatchType::Prefix)
        } else if let Some(u) = url.strip_prefix("*.") {
            (u, MatchType::Domain)
        } else {
            (url, m)
        };
        let key = warchest_index::surt::url_key(&super::archive_url::normalize_target(url));
        let host = key.split(')').next().unwrap_or(&key).to_string();
        match m {
            MatchType::Exact => KeyRange {
                prefix: format!("{key} "),
                domain: false,
            },
            MatchType::Prefix => {
                // `com,example)/a` also matches `com,example)/abc`, as pywb
                // does; a trailing `/` given keeps only what is below.
                let k = if url.ends_with('/') && !key.ends_with('/') {
                    format!("{key}/")
                } else {
                    key
                };
                KeyRange {
                    prefix: k,
                    domain: false,
                }
            }
            MatchType::Host => KeyRange {
                prefix: format!("{host})"),
                domain: false,
            },
            MatchType::Domain => KeyRange {
                prefix: host,
                domain: true,
            },
        }
    }

    /// Keys starting with `prefix` as it is (the start of an index key,
    /// as [`warchest_index::surt::url_key`] makes them).
    pub fn raw(prefix: String) -> KeyRange {
        KeyRange {
            prefix,
            domain: false,
        }
    }

    fn contains(&self, key: &str) -> bool {
        if !key.starts_with(&self.prefix) {
            return false;
        }
        !self.domain || matches!(key.as_bytes().get(self.prefix.len()), Some(b')' | b','))
    }
}

/// What a query returns and in which order.
#[derive(Debug, Clone)]
pub struct Query {
    /// Which keys.
    pub range: KeyRange,
    /// Earliest timestamp (padded down), inclusive.
    pub from: Option<String>,
    /// Latest timestamp (padded up), inclusive.
    pub to: Option<String>,
    /// At most this many captures.
    pub limit: usize,
    /// Newest key first.
    pub reverse: bool,
    /// Captures in the range and period passed over before the first one
    /// given, read from their keys alone (a CDX server's page; see
    /// [`Store::count`]).
    pub skip: usize,
    /// Start at this store key ([`Capture::key`]), itself included, in
    /// the query's direction: the captures from it on, or with
    /// [`Query::reverse`] from it back (a CDX server's resumption key).
    /// Any string will do; one outside the range leaves all or nothing.
    pub resume: Option<String>,
}

/// Whether an index key's timestamp is within `from..=to` (both padded);
/// a key without one is let through, to be judged by its capture.
fn key_in_period(k: &str, from: Option<&str>, to: Option<&str>) -> bool {
    // "URLKEY TIMESTAMP SOURCE+OFFSET" (capture_key).
    k.rsplit(' ')
        .nth(1)
        .is_none_or(|ts| !(from.is_some_and(|f| ts < f) || to.is_some_and(|t| ts > t)))
}

/// What one pass over the files found.
#[derive(Debug, Clone, Default)]
pub struct SyncReport {
    /// Sources seen for the first time, and indexed (one whose indexing
    /// failed is in [`SyncReport::failures`] only).
    pub new_sources: usize,
    /// Sources read again because they grew or changed (or were marked
    /// stale), and indexed (one whose indexing failed is in
    /// [`SyncReport::failures`] only).
    pub updated_sources: usize,
    /// Index entries added.
    pub entries: u64,
    /// Files that could not be read, with why.
    pub failures: Vec<String>,
    /// WACZ archive files indexed from the WACZ's own index (read with one
    /// range request) instead of a scan of their bytes.
    pub from_wacz_index: usize,
    /// What was read another way than asked, with why: a WACZ whose own
    /// index is absent, unreadable, has no line for a member or points
    /// outside it (those archive files are then scanned); and, one line a
    /// source, the lenient recoveries met indexing it (their count, kinds
    /// and first offset).
    pub warnings: Vec<String>,
    /// Sources whose file is no longer there (removed from a directory
    /// synced, which is still there; an object a prefix synced no longer
    /// lists; or a member a WACZ no longer holds),
    /// by name: dropped with their captures, so that no lookup lists what
    /// cannot be replayed.
    pub removed: Vec<String>,
    /// The captures of [`SyncReport::removed`], deleted.
    pub removed_entries: u64,
}

/// What [`Store::load_cdxj`] did with the lines of a CDXJ index. Lines
/// that are not CDXJ are damage (the records they stood for cannot be
/// replayed), told apart from lines of files not served (an index of more
/// files than the paths given); blank lines and `!` header lines are
/// neither.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CdxjLoad {
    /// The index, as named (a path or a URL).
    pub index: String,
    /// Index entries loaded.
    pub loaded: u64,
    /// Lines whose `filename` is none of the files served: skipped.
    pub unknown_file: u64,
    /// The first distinct file names of those lines (at most
    /// [`CdxjLoad::EXAMPLES`]).
    pub unknown_files: Vec<String>,
    /// Lines that are not CDXJ (`urlkey timestamp {json}` with a
    /// `filename` and an `offset`): skipped, and their records lost.
    pub unparsable: u64,
    /// The line numbers (from 1) of the first of those (at most
    /// [`CdxjLoad::EXAMPLES`]).
    pub unparsable_lines: Vec<u64>,
}

impl CdxjLoad {
    /// How many examples of each kind of skipped line are kept.
    pub const EXAMPLES: usize = 8;

    /// What was lost, one sentence naming the index and the first line
    /// numbers; `None` when every line was CDXJ.
    pub fn damage(&self) -> Option<String> {
        (self.unparsable > 0).then(|| {
            format!(
                "{}: {} not CDXJ, skipped ({})",
                self.index,
                if self.unparsable == 1 {
                    "1 line is".to_string()
                } else {
                    format!("{} lines are", self.unparsable)
                },
                self.numbers()
            )
        })
    }

    /// "line 3", "lines 3, 6", "lines 1, ..., 8, ..." when there are more.
    fn numbers(&self) -> String {
        let lines: Vec<String> = self.unparsable_lines.iter().map(u64::to_string).collect();
        let more = if self.unparsable > self.unparsable_lines.len() as u64 {
            ", ..."
        } else {
            ""
        };
        let word = if lines.len() == 1 && more.is_empty() {
            "line"
        } else {
            "lines"
        };
        format!("{word} {}{more}", lines.join(", "))
    }
}

/// `n` lines, in words.
fn lines(n: u64) -> String {
    format!("{n} line{}", if n == 1 { "" } else { "s" })
}

/// The summary of the load: lines loaded, and how many of each kind were
/// skipped (the lines not CDXJ by count only: [`Store::load_cdxj`] has
/// said them by number, once).
impl std::fmt::Display for CdxjLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "loaded {} from {}; {} of files not served, skipped",
            lines(self.loaded),
            self.index,
            lines(self.unknown_file)
        )?;
        if !self.unknown_files.is_empty() {
            write!(f, " ({})", self.unknown_files.join(", "))?;
        }
        write!(f, "; {} not CDXJ", lines(self.unparsable))?;
        if self.unparsable > 0 {
            write!(f, ", skipped")?;
        }
        Ok(())
    }
}

/// Entries of the store (the index cache) found unreadable, and what was
/// done about them, since the store was opened. A store is a cache of
/// what the archive files say: what an unreadable entry stood for is read
/// again from the files where the store can tell which file it was of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheDamage {
    /// Source entries that did not decode, found when the store was
    /// opened: each is dropped with the captures, record ids and digests
    /// of its id, so that [`Store::sync`] indexes its file again as a new
    /// source (a file no longer among the paths is not).
    pub sources: u64,
    /// Captures dropped with those sources.
    pub dropped_captures: u64,
    /// Distinct capture entries that did not decode, met by lookups
    /// (past 4096 distinct ones, each meeting counts): passed over, and
    /// their source marked [`Source::stale`] to be indexed again from its
    /// file at the next [`Store::sync`]. A key that does not name its
    /// source cannot be rebuilt: it is counted and said only.
    pub captures: u64,
    /// Distinct record-id and digest entries whose location did not
    /// decode, met by lookups (and, in a store from before entries were
    /// kept by source, found when it was upgraded, and dropped): not
    /// rebuilt, the lookup finds nothing there (or another source's copy).
    pub locations: u64,
    /// The first of them said (at most [`CacheDamage::EXAMPLES`]).
    pub examples: Vec<String>,
}

impl CacheDamage {
    /// How many are said in [`CacheDamage::examples`].
    pub const EXAMPLES: usize = 8;

    /// Unreadable entries met, of every kind.
    pub fn total(&self) -> u64 {
        self.sources + self.captures + self.locations
    }

    fn example(&mut self, what: String) {
        if self.examples.len() < Self::EXAMPLES {
            self.examples.push(what);
        }
    }
}

/// Capture entries that did not decode, met by one lookup.
#[derive(Default)]
struct Unreadable {
    /// Their keys (at most [`SEEN_UNREADABLE`] kept).
    keys: Vec<String>,
    /// Those met past that.
    more: u64,
    /// The sources of those past that (they are indexed again too).
    more_sources: std::collections::BTreeSet<u32>,
}

impl Unreadable {
    fn note(&mut self, key: &str) {
        if self.keys.len() < SEEN_UNREADABLE {
            self.keys.push(key.to_string());
        } else {
            self.more += 1;
            self.more_sources.extend(src_of_key(key));
        }
    }
}

/// The source id a captures key names (`capture_key`: its last field is
/// the source in 8 hex digits and the offset in 16).
fn src_of_key(key: &str) -> Option<u32> {
    let last = key.rsplit(' ').next()?;
    if last.len() != 24 {
        return None;
    }
    u32::from_str_radix(last.get(..8)?, 16).ok()
}

/// Distinct unreadable capture keys remembered, so that a lookup meeting
/// one again does not count it again.
const SEEN_UNREADABLE: usize = 4096;

/// The [`PENDING`] key of the entry `key` of kind `kind` (`c`, `r`, `d`)
/// of source `src`.
fn pending_key(src: u32, kind: char, key: &str) -> String {
    format!("{src:08x} {kind} {key}")
}

/// The [`PENDING`] keys of source `src`: `lo..hi`.
fn pending_range(src: u32) -> (String, String) {
    (format!("{src:08x} "), format!("{src:08x}!"))
}

/// The key of `key` (a record id or a digest key) of source `src` in
/// [`RECORD_IDS`] and [`DIGESTS`]: `KEY\0SRC`, the source in 8 hex digits.
fn sourced_key(key: &str, src: u32) -> String {
    format!("{key}\0{src:08x}")
}

/// The [`sourced_key`]s of `key`, of every source: `lo..hi`.
fn sourced_range(key: &str) -> (String, String) {
    (format!("{key}\0"), format!("{key}\u{1}"))
}

/// The key and the source a [`sourced_key`] names.
fn split_sourced(k: &str) -> Option<(&str, u32)> {
    let (key, src) = k.rsplit_once('\0')?;
    if src.len() != 8 || !src.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((key, u32::from_str_radix(src, 16).ok()?))
}

/// Rebuilds the record-id and digest tables of a store from before
/// [`RECORD_IDS`] and [`DIGESTS`] (one entry a key, [`OLD_RECORD_IDS`],
/// [`OLD_DIGEST_KEYS`], [`OLD_DIGESTS`]) into those, keyed by source: the
/// entries there were are kept (each under the source its location
/// names), and those the captures give that were not there (another
/// source with the same record id or payload) added, as indexing writes
/// them ([`Store::insert`]). Written in batches, the old tables deleted
/// last: an upgrade cut short is made again, whole, at the next open.
/// Returns the old entries whose location did not decode, dropped:
/// counted, the first few named, for the caller to count and say.
fn upgrade_layout(db: &Database, path: &Path) -> Result<Dropped> {
    use redb::TableHandle;
    let r = db.begin_read().map_err(|x| db_error(x, path))?;
    let present: Vec<String> = r
        .list_tables()
        .map_err(|x| db_error(x, path))?
        .map(|h| h.name().to_string())
        .collect();
    let old: Vec<(TableDefinition<&str, &[u8]>, &'static str)> = [
        (OLD_RECORD_IDS, "record-ids"),
        (OLD_DIGEST_KEYS, "digest-keys"),
        (OLD_DIGESTS, "digests"),
    ]
    .into_iter()
    .filter(|(_, name)| present.iter().any(|p| p == name))
    .collect();
    if old.is_empty() {
        return Ok(Dropped::default());
    }
    tracing::info!(
        "index cache {}: record ids and payload digests are now kept by source; \
         rebuilding them from its captures (once)",
        path.display()
    );
    let mut bad = Dropped::default();
    // (table, key, location) to write when absent, in batches.
    let mut batch: Vec<(bool, String, Vec<u8>)> = Vec::with_capacity(BATCH);
    let flush = |batch: &mut Vec<(bool, String, Vec<u8>)>| -> Result<()> {
        let txn = db.begin_write().map_err(|x| db_error(x, path))?;
        {
            let mut ids = txn.open_table(RECORD_IDS).map_err(|x| db_error(x, path))?;
            let mut digests = txn.open_table(DIGESTS).map_err(|x| db_error(x, path))?;
            for (digest, k, loc) in batch.drain(..) {
                let t = if digest { &mut digests } else { &mut ids };
                if t.get(k.as_str()).map_err(|x| db_error(x, path))?.is_none() {
                    t.insert(k.as_str(), loc.as_slice())
                        .map_err(|x| db_error(x, path))?;
                }
            }
        }
        txn.commit().map_err(|x| db_error(x, path))
    };
    // The entries there were first: they keep answering as they did.
    for (def, name) in &old {
        let t = r.open_table(*def).map_err(|x| db_error(x, path))?;
        for item in t.iter().map_err(|x| db_error(x, path))? {
            let (k, v) = item.map_err(|x| db_error(x, path))?;
            let Some((src, _, _)) = loc_from(v.value()) else {
                bad.count += 1;
                if bad.examples.len() < CacheDamage::EXAMPLES {
                    bad.examples.push((*name, k.value().to_string()));
                }
                continue;
            };
            let (digest, key) = match *name {
                "record-ids" => (false, k.value().to_string()),
                // Keyed by the upper-cased value: re-keyed.
                "digests" => (true, lookup_key(k.value())),
                _ => (true, k.value().to_string()),
            };
            batch.push((digest, sourced_key(&key, src), v.value().to_vec()));
            if batch.len() >= BATCH {
                flush(&mut batch)?;
            }
        }
    }
    let caps = r.open_table(CAPTURES).map_err(|x| db_error(x, path))?;
    for item in caps.iter().map_err(|x| db_error(x, path))? {
        let (_, v) = item.map_err(|x| db_error(x, path))?;
        // One that does not decode is met by a lookup, and rebuilt then.
        let Ok(c) = serde_json::from_slice::<Capture>(v.value()) else {
            continue;
        };
        let loc = loc_bytes(c.src, c.entry.offset, c.entry.length);
        if let Some(id) = &c.entry.record_id {
            batch.push((false, sourced_key(id.trim(), c.src), loc.clone()));
        }
        if is_original(&c.entry)
            && let Some(d) = &c.entry.digest
        {
            batch.push((true, sourced_key(&lookup_key(d), c.src), loc));
        }
        if batch.len() >= BATCH {
            flush(&mut batch)?;
        }
    }
    flush(&mut batch)?;
    drop(caps);
    drop(r);
    let txn = db.begin_write().map_err(|x| db_error(x, path))?;
    for (def, _) in old {
        txn.delete_table(def).map_err(|x| db_error(x, path))?;
    }
    txn.commit().map_err(|x| db_error(x, path))?;
    Ok(bad)
}

/// The entries of an older store whose location did not decode, dropped
/// by its upgrade ([`upgrade_layout`]).
#[derive(Debug, Default)]
struct Dropped {
    count: u64,
    /// The first (table, key) of them, at most [`CacheDamage::EXAMPLES`].
    examples: Vec<(&'static str, String)>,
}

/// Whether `e` is of a record a revisit's payload can be read from: a
/// response or a resource.
fn is_original(e: &Entry) -> bool {
    e.record_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("response") || t.eq_ignore_ascii_case("resource"))
}

/// A re-index of a stale source from its start under way
/// ([`Store::reindex_begin`]).
#[derive(Debug)]
struct Reindex {
    id: u32,
    /// The generation of its stale mark when it began, if marked.
    mark: Option<u64>,
    /// Its number ([`REINDEX`]): what it writes again is tagged with it.
    attempt: u64,
}

/// The payload digests a run indexing a source from its start wrote
/// ([`Store::insert`]), kept as 64-bit hashes of their keys (a file of a
/// million records holds some megabytes; two digests of one file sharing
/// a hash, the second keeps the entry an older version of the file gave,
/// as all did before).
#[derive(Default)]
struct FromStart(std::collections::HashSet<u64>);

impl FromStart {
    /// Whether the digest key `k` is met the first time in this run.
    fn first(&mut self, k: &str) -> bool {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        k.hash(&mut h);
        self.0.insert(h.finish())
    }
}

/// Counts `prior`, what the store knew of a source before this sync began
/// on it (taken before anything of the sync registered it), in `report`:
/// new when unknown, changed (indexed again) otherwise, a stale one
/// included. One rule for local files, objects and WACZ members, however
/// they are indexed; called once the source's indexing succeeded (one
/// that failed is a failure of the report, not a source read).
fn count_change(prior: Option<&Source>, report: &mut SyncReport) {
    match prior {
        Some(_) => report.updated_sources += 1,
        None => report.new_sources += 1,
    }
}

/// Where a source read by URL is, and the version of its bytes
/// ([`Source::version`]).
struct Place {
    start: u64,
    len: u64,
    version: Option<String>,
}

/// Whether `s` is at `start` for `len` bytes in `version`: a version
/// unknown on either side is taken as the same (the size alone tells).
fn at_place(s: &Source, start: u64, len: u64, version: &Option<String>) -> bool {
    let same = match (&s.version, version) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    s.start == start && s.len == len && same
}

/// A WACZ member's version: its CRC-32 in the ZIP's central directory
/// (the WACZ replaced by one holding another file of the same size at the
/// same place has another).
#[cfg(feature = "remote")]
fn member_version(m: &wacz::ZipEntry) -> Option<String> {
    Some(format!("crc32 {:08x}", m.crc32))
}

/// `src` to be indexed from its start (a source indexed by a CDXJ given
/// is read from its file from then on).
fn from_start(mut src: Source) -> Source {
    src.indexed_to = 0;
    src.entries = 0;
    if src.mtime == u64::MAX {
        src.mtime = 0;
    }
    src
}

/// The index store.
pub struct Store {
    db: Database,
    path: PathBuf,
    sources: RwLock<Vec<Source>>,
    damage: std::sync::Mutex<CacheDamage>,
    /// Unreadable capture keys met (at most [`SEEN_UNREADABLE`]).
    seen_unreadable: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// The stale marks ([`STALE`]): source id -> generation.
    marks: std::sync::Mutex<BTreeMap<u32, u64>>,
    /// The generation the next mark gets.
    next_mark: std::sync::atomic::AtomicU64,
    /// The least id a new source may get ([`META`]).
    next_source: std::sync::atomic::AtomicU64,
    /// Bumped after every commit: what [`Store::nth_key_stepped`] kept is
    /// of the generation it was read at.
    generation: std::sync::atomic::AtomicU64,
    /// Where the pages of recent queries start ([`Store::nth_key_stepped`]).
    page_starts: std::sync::Mutex<PageStarts>,
    /// Tests only: the keys [`Store::query_keys`] has read.
    #[cfg(test)]
    keys_read: std::sync::atomic::AtomicU64,
    /// Tests only: the calls of [`Store::insert`] to let through before
    /// one fails as the store's error would (`None`: none fails).
    #[cfg(test)]
    fail_insert_after: std::sync::Mutex<Option<u32>>,
}

/// The most bytes of keys [`PageStarts`] keeps, all queries together
/// (a key is about a hundred bytes: some 160,000 page starts, each
/// 3,000 captures apart in a CDX server's pages).
const PAGE_STARTS_BYTES: usize = 16 << 20;

/// The keys found at every `step`-th place of recent queries, of one
/// store generation: a CDX server's page N starts at its key without the
/// N pages before it being read again, so reading every page of a range
/// reads its keys about once, not once a page.
#[derive(Default)]
struct PageStarts {
    generation: u64,
    /// Query (its range, period, order, resume and step) -> the keys at
    /// places `step`, `2 * step`, ... of it, as far as read.
    known: HashMap<String, Vec<String>>,
    bytes: usize,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens the store at `path`, creating it when missing.
    ///
    /// # Errors
    /// The file cannot be created or is not a store.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        let db = Database::create(&path).map_err(|e| db_error(e, &path))?;
        let txn = db.begin_write().map_err(|e| db_error(e, &path))?;
        {
            txn.open_table(CAPTURES).map_err(|e| db_error(e, &path))?;
            txn.open_table(RECORD_IDS).map_err(|e| db_error(e, &path))?;
            txn.open_table(DIGESTS).map_err(|e| db_error(e, &path))?;
            txn.open_table(SOURCES).map_err(|e| db_error(e, &path))?;
            txn.open_table(STALE).map_err(|e| db_error(e, &path))?;
            txn.open_table(PENDING).map_err(|e| db_error(e, &path))?;
            txn.open_table(REINDEX).map_err(|e| db_error(e, &path))?;
            txn.open_table(META).map_err(|e| db_error(e, &path))?;
        }
        txn.commit().map_err(|e| db_error(e, &path))?;
        // An older store's revisits must still find their originals
        // without indexing its sources again.
        let bad_locations = upgrade_layout(&db, &path)?;
        let mut sources = Vec::new();
        // Source entries that do not decode: (id, why).
        let mut bad: Vec<(u32, String)> = Vec::new();
        let mut marks = BTreeMap::new();
        // Sources with a re-index attempt numbered.
        let mut attempted = Vec::new();
        let next_source;
        {
            let r = db.begin_read().map_err(|e| db_error(e, &path))?;
            next_source = r
                .open_table(META)
                .map_err(|e| db_error(e, &path))?
                .get(NEXT_SOURCE)
                .map_err(|e| db_error(e, &path))?
                .map_or(0, |v| v.value());
            let t = r.open_table(SOURCES).map_err(|e| db_error(e, &path))?;
            for item in t.iter().map_err(|e| db_error(e, &path))? {
                let (k, v) = item.map_err(|e| db_error(e, &path))?;
                match serde_json::from_slice::<Source>(v.value()) {
                    Ok(s) => sources.push(s),
                    Err(e) => bad.push((k.value(), e.to_string())),
                }
            }
            let t = r.open_table(STALE).map_err(|e| db_error(e, &path))?;
            for item in t.iter().map_err(|e| db_error(e, &path))? {
                let (k, v) = item.map_err(|e| db_error(e, &path))?;
                marks.insert(k.value(), v.value());
            }
            let t = r.open_table(REINDEX).map_err(|e| db_error(e, &path))?;
            for item in t.iter().map_err(|e| db_error(e, &path))? {
                let (k, _) = item.map_err(|e| db_error(e, &path))?;
                attempted.push(k.value());
            }
        }
        sources.sort_by_key(|s| s.id);
        // Saturating: a damaged generation of u64::MAX does not overflow
        // (marks then share it).
        let next_mark = marks.values().max().map_or(0, |g| g.saturating_add(1));
        // Marks kept in the sources' entries by stores from before.
        let legacy: Vec<u32> = sources
            .iter()
            .filter(|s| s.stale && !marks.contains_key(&s.id))
            .map(|s| s.id)
            .collect();
        let store = Store {
            db,
            path,
            sources: RwLock::new(sources),
            damage: Default::default(),
            seen_unreadable: Default::default(),
            marks: std::sync::Mutex::new(marks),
            next_mark: std::sync::atomic::AtomicU64::new(next_mark),
            next_source: std::sync::atomic::AtomicU64::new(next_source),
            generation: Default::default(),
            page_starts: Default::default(),
            #[cfg(test)]
            keys_read: Default::default(),
            #[cfg(test)]
            fail_insert_after: Default::default(),
        };
        for id in legacy {
            store.mark_stale(id)?;
        }
        store.drop_unmarked_attempts(&attempted)?;
        store.note_dropped_by_upgrade(bad_locations);
        store.drop_unreadable_sources(&bad)?;
        Ok(store)
    }

    /// Deletes the re-index attempts (and their lists) of the sources
    /// among `attempted` that are not marked stale: left by a re-index of
    /// a mark held in memory only (its write failed) that failed, before
    /// a restart lost the mark. Kept, every insert of the source would
    /// write a tagged row of a list no re-index ends. The attempts go
    /// first, [`BATCH`] a transaction, then the lists ([`Store::clear_pending`];
    /// rows left by a cut are cleared when the source is next listed).
    fn drop_unmarked_attempts(&self, attempted: &[u32]) -> Result<()> {
        let unmarked: Vec<u32> = {
            let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
            attempted
                .iter()
                .copied()
                .filter(|id| !marks.contains_key(id))
                .collect()
        };
        if unmarked.is_empty() {
            return Ok(());
        }
        let p = &self.path;
        for ids in unmarked.chunks(BATCH) {
            let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
            {
                let mut attempts = txn.open_table(REINDEX).map_err(|e| db_error(e, p))?;
                for id in ids {
                    attempts.remove(*id).map_err(|e| db_error(e, p))?;
                }
            }
            self.commit(txn)?;
        }
        for id in &unmarked {
            self.clear_pending(*id)?;
        }
        tracing::info!(
            "index cache {}: the re-index attempts of {} sources no longer marked stale \
             dropped with their lists",
            self.path.display(),
            unmarked.len()
        );
        Ok(())
    }

    /// Drops the sources `bad` (id, why) whose entries did not decode,
    /// with every capture, record id and digest of theirs (which could not
    /// be told from a new source's given the same id), counting and saying
    /// it: the next [`Store::sync`] indexes their files again as new.
    fn drop_unreadable_sources(&self, bad: &[(u32, String)]) -> Result<()> {
        if bad.is_empty() {
            return Ok(());
        }
        let ids: std::collections::BTreeSet<u32> = bad.iter().map(|(id, _)| *id).collect();
        let dropped = self.purge(&ids)?;
        let mut d = self.damage.lock().unwrap_or_else(|e| e.into_inner());
        d.sources += bad.len() as u64;
        d.dropped_captures += dropped;
        for (id, why) in bad {
            let said = format!(
                "{}: the entry of source {id} is unreadable ({why}); it is dropped with its \
                 captures, and its file indexed again as new at the next sync",
                self.path.display()
            );
            tracing::warn!("index cache {said}");
            d.example(said);
        }
        tracing::warn!(
            "index cache {}: {} unreadable source entries dropped with {dropped} captures",
            self.path.display(),
            bad.len()
        );
        Ok(())
    }

    /// Deletes every capture, record id and digest of the sources `ids`,
    /// their source entries, marks and pending re-index entries; returns
    /// the captures deleted, and forgets them. Reads the whole captures
    /// table: for damage and removed files only.
    fn purge(&self, ids: &std::collections::BTreeSet<u32>) -> Result<u64> {
        let p = &self.path;
        let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
        let mut dropped = 0u64;
        {
            let mut caps = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
            caps.retain(|k, _| {
                let of = src_of_key(k).is_some_and(|s| ids.contains(&s));
                dropped += u64::from(of);
                !of
            })
            .map_err(|e| db_error(e, p))?;
            for table in [RECORD_IDS, DIGESTS] {
                let mut t = txn.open_table(table).map_err(|e| db_error(e, p))?;
                // By the source its key names: another source's entry of
                // the same record id or digest is its own, and kept.
                t.retain(|k, _| !split_sourced(k).is_some_and(|(_, s)| ids.contains(&s)))
                    .map_err(|e| db_error(e, p))?;
            }
            let mut t = txn.open_table(SOURCES).map_err(|e| db_error(e, p))?;
            let mut marks = txn.open_table(STALE).map_err(|e| db_error(e, p))?;
            let mut pending = txn.open_table(PENDING).map_err(|e| db_error(e, p))?;
            let mut attempts = txn.open_table(REINDEX).map_err(|e| db_error(e, p))?;
            // No id dropped is given again.
            if let Some(last) = ids.last() {
                let mut meta = txn.open_table(META).map_err(|e| db_error(e, p))?;
                let floor = meta
                    .get(NEXT_SOURCE)
                    .map_err(|e| db_error(e, p))?
                    .map_or(0, |v| v.value())
                    .max(u64::from(*last) + 1);
                meta.insert(NEXT_SOURCE, floor)
                    .map_err(|e| db_error(e, p))?;
                self.next_source
                    .fetch_max(floor, std::sync::atomic::Ordering::Relaxed);
            }
            for id in ids {
                t.remove(*id).map_err(|e| db_error(e, p))?;
                marks.remove(*id).map_err(|e| db_error(e, p))?;
                attempts.remove(*id).map_err(|e| db_error(e, p))?;
                let (lo, hi) = pending_range(*id);
                pending
                    .retain_in(lo.as_str()..hi.as_str(), |_, _| false)
                    .map_err(|e| db_error(e, p))?;
            }
        }
        self.commit(txn)?;
        self.marks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|id, _| !ids.contains(id));
        if let Ok(mut all) = self.sources.write() {
            all.retain(|s| !ids.contains(&s.id));
        }
        Ok(dropped)
    }

    /// What the store found unreadable of itself since it was opened
    /// ([`CacheDamage`]).
    pub fn cache_damage(&self) -> CacheDamage {
        self.damage
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Counts and says the capture entries `u` a lookup found unreadable,
    /// and marks their sources [`Source::stale`] (their files are indexed
    /// again at the next [`Store::sync`]). An entry met before is not
    /// counted again.
    fn note_unreadable(&self, u: Unreadable) {
        if u.keys.is_empty() && u.more == 0 {
            return;
        }
        let mut new = Vec::new();
        {
            let mut seen = self
                .seen_unreadable
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for k in u.keys {
                if seen.contains(&k) {
                    continue;
                }
                if seen.len() < SEEN_UNREADABLE {
                    seen.insert(k.clone());
                }
                new.push(k);
            }
        }
        let fresh = new.len() as u64 + u.more;
        if fresh == 0 {
            return;
        }
        let mut stale: std::collections::BTreeSet<u32> = u.more_sources;
        {
            let mut d = self.damage.lock().unwrap_or_else(|e| e.into_inner());
            d.captures += fresh;
            for k in &new {
                let src = src_of_key(k);
                let said = match src.and_then(|id| self.source(id)) {
                    Some(s) => format!(
                        "{}: the capture entry {k:?} is unreadable; passed over, and {} \
                         indexed again at the next sync",
                        self.path.display(),
                        s.name
                    ),
                    None => format!(
                        "{}: the capture entry {k:?} is unreadable and names no known \
                         source; passed over, not rebuilt",
                        self.path.display()
                    ),
                };
                tracing::warn!("index cache {said}");
                d.example(said);
                stale.extend(src);
            }
            if u.more > 0 {
                tracing::warn!(
                    "index cache {}: {} more unreadable capture entries passed over",
                    self.path.display(),
                    u.more
                );
            }
        }
        for id in stale {
            if let Some(s) = self.source(id).filter(|s| !s.stale)
                && let Err(e) = self.mark_stale(id)
            {
                tracing::warn!(
                    "index cache: cannot keep the mark that {} is to be indexed again \
                     (marked until the process ends): {e}",
                    s.name
                );
            }
        }
    }

    /// Marks source `id` [`Source::stale`]: in memory first (so the mark
    /// holds in this process whatever happens to the write), then in its
    /// own entry of [`STALE`], which no saving of the source touches.
    fn mark_stale(&self, id: u32) -> Result<()> {
        let g = self
            .next_mark
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.marks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, g);
        let p = &self.path;
        let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
        {
            let mut t = txn.open_table(STALE).map_err(|e| db_error(e, p))?;
            t.insert(id, g).map_err(|e| db_error(e, p))?;
        }
        self.commit(txn)
    }

    /// `s` with its stale mark as the store holds it.
    fn marked(&self, mut s: Source) -> Source {
        s.stale = self
            .marks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&s.id);
        s
    }

    /// Counts and says a record-id or digest entry `key` of `table` whose
    /// location did not decode (once: an entry met again is not counted
    /// again).
    fn note_bad_location(&self, table: &str, key: &str) {
        {
            let mut seen = self
                .seen_unreadable
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let k = format!("{table}\0{key}");
            if seen.contains(&k) {
                return;
            }
            if seen.len() < SEEN_UNREADABLE {
                seen.insert(k);
            }
        }
        let said = format!(
            "{}: the {table} entry {key:?} is unreadable; the lookup finds nothing there",
            self.path.display()
        );
        tracing::warn!("index cache {said}");
        let mut d = self.damage.lock().unwrap_or_else(|e| e.into_inner());
        d.locations += 1;
        d.example(said);
    }

    /// Counts the entries an upgrade dropped ([`upgrade_layout`]) and
    /// says them in one line, naming the first few (kept as examples).
    fn note_dropped_by_upgrade(&self, dropped: Dropped) {
        if dropped.count == 0 {
            return;
        }
        let named: Vec<String> = dropped
            .examples
            .iter()
            .map(|(table, key)| format!("{table} {key:?}"))
            .collect();
        let more = if dropped.count > named.len() as u64 {
            ", ..."
        } else {
            ""
        };
        tracing::warn!(
            "index cache {}: {} record-id or digest entries whose location is unreadable \
             were dropped by the upgrade ({}{more})",
            self.path.display(),
            dropped.count,
            named.join(", ")
        );
        let mut d = self.damage.lock().unwrap_or_else(|e| e.into_inner());
        d.locations += dropped.count;
        for (table, key) in dropped.examples {
            d.example(format!(
                "{}: the {table} entry {key:?} is unreadable; dropped by the upgrade",
                self.path.display()
            ));
        }
    }

    /// The location an entry of `table` at `key` gives, counting one that
    /// does not decode.
    fn location(&self, table: &str, key: &str, v: &[u8]) -> Option<(u32, u64, Option<u64>)> {
        let loc = loc_from(v);
        if loc.is_none() {
            self.note_bad_location(table, key);
        }
        loc
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sources known.
    pub fn sources(&self) -> Vec<Source> {
        let all = self.sources.read().map(|s| s.clone()).unwrap_or_default();
        all.into_iter().map(|s| self.marked(s)).collect()
    }

    /// The source with id `id`.
    pub fn source(&self, id: u32) -> Option<Source> {
        let s = self
            .sources
            .read()
            .ok()?
            .iter()
            .find(|s| s.id == id)
            .cloned()?;
        Some(self.marked(s))
    }

    /// Finds the archive files under `paths` (directories are walked;
    /// hidden files, `.open` files being written and the store itself are
    /// skipped) and indexes what is new: new files, and the records added
    /// to files that grew. A file that changed otherwise is indexed again
    /// from its start. A source whose file is gone from a directory
    /// walked is dropped with its captures ([`SyncReport::removed`]); a
    /// file named in `paths` that is gone is a failure, its captures kept
    /// (a file named is not taken back by its absence).
    ///
    /// # Errors
    /// The store cannot be written (a file that cannot be read is a
    /// failure of the report, not an error).
    pub fn sync(&self, paths: &[PathBuf]) -> Result<SyncReport> {
        let mut report = SyncReport::default();
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        let mut listings = Vec::new();
        // Every object synced, however it was named: one named on its own
        // is not gone because a prefix served beside it does not list it
        // (its name not an archive's).
        let mut synced = std::collections::BTreeSet::new();
        for p in paths {
            if let Some(url) = p.to_str().filter(|u| remote::is_remote(u)) {
                match list_objects(url) {
                    Ok(objects) => {
                        // A listing of a prefix or a glob tells which
                        // objects it names are gone (one of a single
                        // object does not: gone, it is an error).
                        if is_listing(url) {
                            let listed = objects.iter().map(|(u, ..)| u.clone()).collect();
                            listings.push((url.to_string(), listed));
                        }
                        synced.extend(objects.iter().map(|(u, ..)| u.clone()));
                        for (url, size, version) in objects {
                            let r = if wacz::is_wacz(Path::new(&url)) {
                                self.sync_wacz_object(&url, size, &mut report)
                            } else {
                                self.sync_object(&url, size, version, &mut report)
                            };
                            if let Err(e) = r {
                                report.failures.push(format!("{url}: {e}"));
                            }
                        }
                    }
                    Err(e) => report.failures.push(format!("{url}: {e}")),
                }
            } else if p.is_dir() {
                walk(p, &self.path, &mut files, 0);
                dirs.push(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()));
            } else {
                files.push(p.clone());
            }
        }
        // One source per file, however it was named (a directory and a
        // file in it, relative and absolute paths).
        let mut files: Vec<PathBuf> = files
            .into_iter()
            .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
            .collect();
        files.sort();
        files.dedup();
        for f in &files {
            if let Err(e) = self.sync_file(f, &mut report) {
                report.failures.push(format!("{}: {e}", f.display()));
            }
        }
        // A store error dropping them is the sync's failure, not its end:
        // what it did is still reported (and the captures are kept).
        let walked: std::collections::BTreeSet<PathBuf> = files.into_iter().collect();
        if let Err(e) = self.drop_removed(&dirs, &walked, &listings, &synced, &mut report) {
            report.failures.push(format!(
                "{}: the files no longer there could not be dropped ({e}); their captures \
                 are kept, and dropping them is tried again at the next sync",
                self.path.display()
            ));
        }
        Ok(report)
    }

    /// Drops the sources whose file is gone: a local one under `dirs` not
    /// among the files `walked` just now and not found (a file that cannot
    /// be looked at for another reason is kept), an object one of
    /// `listings` (a prefix or a glob, each with the objects listed) names
    /// that it no longer gives and that no other URL `synced`; with their
    /// captures, record ids and digests, counting them in `report`. A file
    /// whose directory holds no archive file the walk found, or an object
    /// of a listing that gave none, keeps its captures, a failure saying
    /// so: an empty mount point looks the same as a directory emptied.
    /// Reads the whole captures table, once a sync that found any.
    fn drop_removed(
        &self,
        dirs: &[PathBuf],
        walked: &std::collections::BTreeSet<PathBuf>,
        listings: &[(String, std::collections::BTreeSet<String>)],
        synced: &std::collections::BTreeSet<String>,
        report: &mut SyncReport,
    ) -> Result<()> {
        // The directories the walk found an archive file in: a source gone
        // from another (one emptied, or a volume under the root unmounted)
        // keeps its captures.
        let full: std::collections::BTreeSet<&Path> =
            walked.iter().filter_map(|f| f.parent()).collect();
        let mut gone: Vec<Source> = Vec::new();
        let mut kept: BTreeMap<String, u64> = BTreeMap::new();
        for s in self.sources() {
            let (place, found) = match &s.url {
                None => {
                    // Walked just now: there (no second look at it).
                    if walked.contains(&s.path) || !dirs.iter().any(|d| s.path.starts_with(d)) {
                        continue;
                    }
                    if !std::fs::symlink_metadata(&s.path)
                        .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
                    {
                        continue;
                    }
                    let parent = s.path.parent().unwrap_or(Path::new("/"));
                    (parent.display().to_string(), full.contains(parent))
                }
                Some(url) => {
                    let Some((given, listed)) = listings.iter().find(|(l, _)| names(l, url)) else {
                        continue;
                    };
                    if synced.contains(url) {
                        continue;
                    }
                    (given.clone(), !listed.is_empty())
                }
            };
            if found {
                gone.push(s);
            } else {
                *kept.entry(place).or_default() += 1;
            }
        }
        for (place, n) in kept {
            report.failures.push(format!(
                "{place}: no archive file found in it, where {n} archive files indexed before were; \
                 their captures are kept (is the directory mounted, the prefix right?)"
            ));
        }
        self.drop_sources(gone, report)
    }

    /// Drops the known archive files of the WACZ `wacz` (sources named
    /// `WACZ#archive/NAME`) that are not among `listed`, as a file removed
    /// is: the WACZ was replaced by one that no longer holds them.
    fn drop_gone_members(
        &self,
        wacz: &str,
        listed: &[&str],
        report: &mut SyncReport,
    ) -> Result<()> {
        let prefix = format!("{wacz}#");
        let gone: Vec<Source> = self
            .sources()
            .into_iter()
            .filter(|s| s.name.starts_with(&prefix) && !listed.contains(&s.name.as_str()))
            .collect();
        self.drop_sources(gone, report)
    }

    /// Drops the sources `gone` (their files no longer there) with their
    /// captures, record ids and digests, naming and counting them in
    /// `report`.
    fn drop_sources(&self, gone: Vec<Source>, report: &mut SyncReport) -> Result<()> {
        if gone.is_empty() {
            return Ok(());
        }
        let ids = gone.iter().map(|s| s.id).collect();
        report.removed_entries += self.purge(&ids)?;
        report.removed.extend(gone.into_iter().map(|s| s.name));
        Ok(())
    }

    fn sync_file(&self, path: &Path, report: &mut SyncReport) -> Result<()> {
        let meta = std::fs::metadata(path).map_err(|e| Error::from(e).in_file(path))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let len = meta.len();
        let candidates: Vec<(String, Option<String>, u64, u64)> = if wacz::is_wacz(path) {
            let known = self.sources();
            let name0 = format!("{}#", path.display());
            let members = || known.iter().filter(|s| s.name.starts_with(&name0));
            if members().any(|s| s.mtime == mtime) && !members().any(|s| s.stale) {
                return Ok(());
            }
            let listed: Vec<_> = wacz::archive_entries(path)?
                .into_iter()
                .map(|e| {
                    (
                        format!("{}#{}", path.display(), e.name),
                        Some(e.name),
                        e.data_start,
                        e.compressed_size,
                    )
                })
                .collect();
            let names: Vec<&str> = listed.iter().map(|(n, ..)| n.as_str()).collect();
            self.drop_gone_members(&path.display().to_string(), &names, report)?;
            listed
        } else {
            vec![(path.display().to_string(), None, 0, len)]
        };
        for (name, entry, start, slen) in candidates {
            let prior = self.known(&name);
            let src = match prior.clone() {
                // An entry of it was found unreadable: indexed again from
                // the file.
                Some(s) if s.stale => Source {
                    len: slen,
                    start,
                    mtime,
                    ..from_start(s)
                },
                Some(s) if s.len == slen && s.mtime == mtime && s.start == start => continue,
                // Indexed by a CDXJ given: that index stands for the file.
                Some(s) if s.mtime == u64::MAX => continue,
                Some(s) => {
                    // Grown in place (a file still being written): read on
                    // from where indexing stopped; otherwise from the start.
                    let s = if slen > s.len && s.start == start && entry.is_none() {
                        s
                    } else {
                        from_start(s)
                    };
                    Source {
                        len: slen,
                        start,
                        mtime,
                        ..s
                    }
                }
                None => Source {
                    id: self.next_id(),
                    name,
                    path: path.to_path_buf(),
                    url: None,
                    entry,
                    start,
                    len: slen,
                    mtime,
                    indexed_to: 0,
                    entries: 0,
                    stale: false,
                    version: None,
                },
            };
            self.index_and_save(src, prior, report)?;
        }
        Ok(())
    }

    /// Indexes `src` from where it stands and saves it, counting it as
    /// new or changed by `prior` (what the store knew of it before this
    /// sync, [`count_change`]) and its entries when that succeeded, its
    /// failure (only) in `report` otherwise.
    /// A stale source keeps its entries until the new index is whole
    /// ([`Store::reindex_begin`]); when that fails, it stays as it was,
    /// marked, to be tried again at the next sync.
    fn index_and_save(
        &self,
        mut src: Source,
        prior: Option<Source>,
        report: &mut SyncReport,
    ) -> Result<()> {
        let had = self.source(src.id);
        // Known (in memory) before its first captures are committed, so a
        // capture a lookup finds always has its file; saved to the database
        // only once indexed, so a crash re-reads it.
        self.remember(&src);
        // A source with entries indexed again from its start (stale, or
        // changed other than by growing: rewritten, recompressed, a WACZ
        // replaced): what its new index does not give again is deleted
        // once it is whole. Listing its entries reads the whole store,
        // paid only when a file changed in place, which archives seldom do;
        // without it, captures at offsets the file no longer has would be
        // listed beside the new ones.
        let reindex = match &had {
            Some(h) if (h.stale || h.entries > 0) && src.indexed_to == 0 => {
                Some(self.reindex_begin(src.id, &src.name)?)
            }
            _ => None,
        };
        let mut recovered = Recoveries::keeping(0);
        let mut unparsed = Recoveries::keeping(0);
        let r = self.index_source(&mut src, &mut recovered, &mut unparsed);
        // Lenient recoveries while indexing: one line for the source, as
        // the command line's summary gives one per file; and one for the
        // captures indexed without status and MIME, as `index` says.
        for told in [recovered.summary(), UnparsedHead::summary(&unparsed)]
            .into_iter()
            .flatten()
        {
            report.warnings.push(format!("{}: {told}", src.name));
        }
        match (r, reindex) {
            (Ok(n), Some(rx)) => {
                self.reindex_end(rx, &src)?;
                report.entries += n;
                count_change(prior.as_ref(), report);
            }
            (Ok(n), None) => {
                self.save_source(&src)?;
                report.entries += n;
                count_change(prior.as_ref(), report);
            }
            (Err(e), Some(_)) => {
                // Kept as it was, and marked: its entries still answer
                // lookups, and the next sync tries again.
                if let Some(h) = prior.or(had) {
                    self.remember(&h);
                }
                report.failures.push(format!(
                    "{}; indexing it again failed: the captures it had are kept, \
                     and it is indexed again at the next sync",
                    named(&src.name, &e)
                ));
            }
            (Err(e), _) => {
                self.save_source(&src)?;
                report.failures.push(named(&src.name, &e));
            }
        }
        Ok(())
    }

    /// Indexes the object at `url` of `size` bytes when it is new or its
    /// size or version (ETag, Last-Modified) changed (objects are replaced
    /// whole, not appended to: a changed one is indexed again from its
    /// start). An object indexed by a CDXJ given stays as that index says.
    fn sync_object(
        &self,
        url: &str,
        size: u64,
        version: Option<String>,
        report: &mut SyncReport,
    ) -> Result<()> {
        let prior = self.known(url);
        let at = Place {
            start: 0,
            len: size,
            version,
        };
        self.sync_remote(url.to_string(), url, None, at, false, prior, report)
    }

    /// Indexes the source `name`: the object at `url` at `at` (a whole
    /// object, or a WACZ member), when it is new or its place, size or
    /// version changed (indexed again from its start then). A source
    /// indexed by a CDXJ given stays as that index says. `force`: indexed
    /// whatever is known of it (a WACZ member its index did not cover,
    /// registered while that index was read). `prior`: what the store knew
    /// of it before this sync (counted by it, as a local file).
    #[allow(clippy::too_many_arguments)]
    fn sync_remote(
        &self,
        name: String,
        url: &str,
        entry: Option<String>,
        at: Place,
        force: bool,
        prior: Option<Source>,
        report: &mut SyncReport,
    ) -> Result<()> {
        let Place {
            start,
            len,
            version,
        } = at;
        let src = match self.known(&name) {
            Some(s)
                if !force
                    && !s.stale
                    && (s.mtime == u64::MAX || at_place(&s, start, len, &version)) =>
            {
                // A version learnt for a source known without one (a
                // store from before versions were kept): kept, so that
                // the next replacement is seen; nothing is read again.
                if s.version.is_none() && version.is_some() && s.mtime != u64::MAX {
                    let s = Source { version, ..s };
                    self.save_source(&s)?;
                    self.remember(&s);
                }
                return Ok(());
            }
            Some(s) => Source {
                start,
                len,
                version,
                ..from_start(s)
            },
            None => Source {
                id: self.next_id(),
                name,
                path: PathBuf::from(url),
                url: Some(url.to_string()),
                entry,
                start,
                len,
                mtime: 0,
                indexed_to: 0,
                entries: 0,
                stale: false,
                version,
            },
        };
        self.index_and_save(src, prior, report)
    }

    /// Indexes the archive files of the WACZ object at `url` of `size`
    /// bytes: its central directory is read by range requests, and each
    /// archive file is a source of its own, read by range at the member's
    /// start (named `URL#archive/NAME`). A member whose place or size
    /// changed is indexed again from its start.
    ///
    /// When the WACZ holds an index (`indexes/index.cdxj`, or
    /// `indexes/index.cdx.gz`), the members to index are indexed from it,
    /// read with one range request, instead of by a scan of their bytes; a
    /// member the index has no line for, and every member when the index
    /// cannot be read, is scanned, with a warning in `report`.
    #[cfg(feature = "remote")]
    fn sync_wacz_object(&self, url: &str, size: u64, report: &mut SyncReport) -> Result<()> {
        let named = |e: std::io::Error| Error::from(e).in_file(Path::new(url));
        // Small ranges: only the directory and the local headers are read.
        let f = remote::object(url, size, 0, false).map_err(named)?;
        let all = wacz::entries_of(f, Path::new(url))?;
        let index = ["indexes/index.cdxj", "indexes/index.cdx.gz"]
            .iter()
            .find_map(|n| all.iter().find(|e| e.name == *n).cloned());
        let members = wacz::archive_entries_of(all, Path::new(url))?;
        let names: Vec<String> = members
            .iter()
            .map(|m| format!("{url}#{}", m.name))
            .collect();
        self.drop_gone_members(
            url,
            &names.iter().map(String::as_str).collect::<Vec<_>>(),
            report,
        )?;
        let stale: Vec<&wacz::ZipEntry> = members
            .iter()
            .filter(|m| {
                self.needs_index(
                    &format!("{url}#{}", m.name),
                    m.data_start,
                    m.compressed_size,
                    &member_version(m),
                )
            })
            .collect();
        // What the store knew of each member before this sync: what they
        // are counted as, whichever way they are indexed.
        let priors: BTreeMap<String, Source> = members
            .iter()
            .filter_map(|m| {
                let name = format!("{url}#{}", m.name);
                self.known(&name).map(|s| (m.name.clone(), s))
            })
            .collect();
        let mut done = std::collections::BTreeSet::new();
        match (&index, stale.is_empty()) {
            (_, true) => {}
            // A store error is the object's failure: what was indexed of
            // it stays counted, and nothing is scanned again.
            (Some(ix), false) => match self.load_wacz_index(url, ix, &stale, &priors, report)? {
                Ok(d) => done = d,
                Err(e) => report.warnings.push(format!(
                    "{url}: its index {} is not used ({e}); its archive files are scanned",
                    ix.name
                )),
            },
            (None, false) => report.warnings.push(format!(
                "{url}: no indexes/index.cdxj or index.cdx.gz; its archive files are scanned"
            )),
        }
        let stale: std::collections::BTreeSet<String> =
            stale.iter().map(|m| m.name.clone()).collect();
        for m in members {
            if done.contains(&m.name) {
                continue;
            }
            let name = format!("{url}#{}", m.name);
            let at = Place {
                start: m.data_start,
                len: m.compressed_size,
                version: member_version(&m),
            };
            let force = stale.contains(&m.name);
            let prior = priors.get(&m.name).cloned();
            self.sync_remote(name, url, Some(m.name), at, force, prior, report)?;
        }
        Ok(())
    }

    /// Whether the source `name` (at `start`, `len` bytes, in `version`)
    /// is to be indexed: new, or moved, resized or of another version (and
    /// not indexed by a CDXJ given).
    #[cfg(feature = "remote")]
    fn needs_index(&self, name: &str, start: u64, len: u64, version: &Option<String>) -> bool {
        match self.known(name) {
            Some(s) => s.stale || !(s.mtime == u64::MAX || at_place(&s, start, len, version)),
            None => true,
        }
    }

    /// Indexes the archive files `stale` of the WACZ object at `url` from
    /// the WACZ's index member `ix` (streamed from one range request,
    /// inflated when deflated in the ZIP, gunzipped when `index.cdx.gz`).
    /// Offsets stay the WARC files' own, as a scan gives them. Returns the
    /// members indexed; a member with no line in the index is left to be
    /// scanned (with a warning), as are all when the index cannot be read
    /// (the inner error). The outer error is the store's (it cannot be
    /// written): the caller fails the object, as a scan's would, and scans
    /// nothing; a member is counted in `report` once saved, so one saved
    /// before such an error is counted once. `priors`: what the store
    /// knew of the members, by name, before this sync; a known member
    /// keeps its entries until its new ones are written (as a scan does,
    /// [`Store::reindex_begin`]).
    ///
    /// On the store's error, the members registered and not saved are put
    /// back as the store knew them before ([`Store::undo_registered`]): a
    /// known one gets its prior place and size back (so the next sync sees
    /// it changed and indexes it again), a new one is forgotten and the
    /// captures written under its id deleted (its id is given again).
    #[cfg(feature = "remote")]
    fn load_wacz_index(
        &self,
        url: &str,
        ix: &wacz::ZipEntry,
        stale: &[&wacz::ZipEntry],
        priors: &BTreeMap<String, Source>,
        report: &mut SyncReport,
    ) -> Result<Result<std::collections::BTreeSet<String>>> {
        let mut registered = Vec::new();
        let r = self.load_wacz_index_registering(url, ix, stale, priors, report, &mut registered);
        if r.is_err() {
            self.undo_registered(registered);
        }
        r
    }

    /// Puts back the sources `registered` (id, what the store knew of it
    /// before, if anything) whose registration in memory was not followed
    /// by their saving: a known one as it was; a new one forgotten, once
    /// the captures, record ids and digests written under its id are
    /// deleted ([`Store::purge`]). When that deletion fails too, the new
    /// one is kept in memory, marked stale (in memory only), so that this
    /// process gives its id to no other file and the next sync indexes it
    /// again from its start, deleting what it does not write again.
    #[cfg(feature = "remote")]
    fn undo_registered(&self, registered: Vec<(u32, Option<Source>)>) {
        let mut new = std::collections::BTreeSet::new();
        for (id, prior) in registered {
            match prior {
                Some(p) => self.remember(&p),
                None => {
                    new.insert(id);
                }
            }
        }
        if new.is_empty() {
            return;
        }
        match self.purge(&new) {
            // Forgotten by the purge.
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(
                    "index cache {}: the captures of {} new sources whose indexing failed \
                     could not be deleted ({e}); they are indexed again at the next sync",
                    self.path.display(),
                    new.len()
                );
                let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
                for id in new {
                    let g = self
                        .next_mark
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    marks.insert(id, g);
                }
            }
        }
    }

    /// [`Store::load_wacz_index`], each member registered in memory noted
    /// in `registered` (id, what the store knew of it before) until saved.
    #[cfg(feature = "remote")]
    fn load_wacz_index_registering(
        &self,
        url: &str,
        ix: &wacz::ZipEntry,
        stale: &[&wacz::ZipEntry],
        priors: &BTreeMap<String, Source>,
        report: &mut SyncReport,
        registered: &mut Vec<(u32, Option<Source>)>,
    ) -> Result<Result<std::collections::BTreeSet<String>>> {
        use std::io::Read;
        let what = format!("{url}#{}", ix.name);
        let named = |e: std::io::Error| Error::from(e).in_file(Path::new(&what));
        let raw = match remote::Streamed::open(url, 0, ix.data_start, ix.compressed_size) {
            Ok(r) => r,
            Err(e) => return Ok(Err(named(e))),
        };
        // WACZ writers deflate the index in the ZIP (inflated with flate2,
        // the zip crate's own inflater); the archive files are stored.
        // The bytes inflated are counted: a cut deflate stream can end
        // without an error, so the count is checked against the size the
        // ZIP gives.
        let inflated = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let raw: Box<dyn Read + Send> = if ix.stored {
            Box::new(raw)
        } else {
            Box::new(Counted {
                inner: flate2::read::DeflateDecoder::new(raw),
                n: inflated.clone(),
            })
        };
        let mut r = match warchest_index::reader::open(raw, &what) {
            Ok(r) => r,
            Err(e) => return Ok(Err(named(e))),
        };
        // The sources of the members to index, by the name index lines give
        // (`NAME`, as py-wacz and `wacz create` write it, or `archive/NAME`).
        let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
        let mut srcs: Vec<(Source, Option<Reindex>)> = Vec::with_capacity(stale.len());
        for (k, m) in stale.iter().enumerate() {
            let name = format!("{url}#{}", m.name);
            let before = self.known(&name);
            let (src, reindex) = match before.clone() {
                Some(s) => {
                    let rx = if s.stale {
                        Some(self.reindex_begin(s.id, &s.name)?)
                    } else {
                        None
                    };
                    let s = Source {
                        start: m.data_start,
                        len: m.compressed_size,
                        version: member_version(m),
                        ..from_start(s)
                    };
                    (s, rx)
                }
                None => (
                    Source {
                        id: self.next_id(),
                        name,
                        path: PathBuf::from(url),
                        url: Some(url.to_string()),
                        entry: Some(m.name.clone()),
                        start: m.data_start,
                        len: m.compressed_size,
                        mtime: 0,
                        indexed_to: 0,
                        entries: 0,
                        stale: false,
                        version: member_version(m),
                    },
                    None,
                ),
            };
            // Known before its captures are committed (and to next_id).
            self.remember(&src);
            registered.push((src.id, before));
            by_name.insert(m.name.clone(), k);
            if let Some(base) = m.name.strip_prefix("archive/") {
                by_name.insert(base.to_string(), k);
            }
            srcs.push((src, reindex));
        }
        let filenames: Vec<String> = srcs.iter().map(|(s, _)| s.cdx_filename()).collect();
        let mut batch: Vec<Vec<Entry>> = vec![Vec::new(); srcs.len()];
        let mut counts = vec![0u64; srcs.len()];
        // Every member is indexed from its start.
        let mut runs: Vec<FromStart> = srcs.iter().map(|_| FromStart::default()).collect();
        let mut outside = 0u64;
        let mut bad = 0u64;
        let mut line = Vec::new();
        let mut number = 0u64;
        // Lines are bounded: a corrupt index cannot exhaust memory.
        loop {
            match warchest_index::reader::next_line(&mut r, &mut line, &mut number) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Ok(Err(named(e))),
            }
            // A line that is not CDXJ (blank lines and `!` comment lines
            // aside) makes the index unreliable: its members are scanned.
            let Some(l) = wacz::CdxjLine::parse(&line) else {
                if !line.trim_ascii().is_empty() && !line.starts_with(b"!") {
                    bad += 1;
                }
                continue;
            };
            // Lines of a member indexed already are passed over.
            let Some(&k) = by_name.get(&l.filename) else {
                continue;
            };
            if l.offset.saturating_add(l.length.unwrap_or(1)) > srcs[k].0.len {
                outside += 1;
                continue;
            }
            batch[k].push(entry_of_line(&l, filenames[k].clone()));
            if batch[k].len() >= BATCH {
                counts[k] += self.insert(srcs[k].0.id, &batch[k], Some(&mut runs[k]))?;
                batch[k].clear();
            }
        }
        let inflated = inflated.load(std::sync::atomic::Ordering::Relaxed);
        if !ix.stored && inflated != ix.size {
            return Ok(Err(named(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "inflated to {inflated} bytes where the ZIP says {}",
                    ix.size
                ),
            ))));
        }
        if bad > 0 {
            return Ok(Err(named(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{bad} lines are not CDXJ"),
            ))));
        }
        if outside > 0 {
            report.warnings.push(format!(
                "{what}: {outside} lines point past the end of their archive file; skipped"
            ));
        }
        let mut done = std::collections::BTreeSet::new();
        for (k, (mut src, reindex)) in srcs.into_iter().enumerate() {
            counts[k] += self.insert(src.id, &batch[k], Some(&mut runs[k]))?;
            if counts[k] == 0 {
                report.warnings.push(format!(
                    "{what}: no line for {}; it is scanned",
                    stale[k].name
                ));
                continue;
            }
            src.indexed_to = src.len;
            src.entries = counts[k];
            match reindex {
                Some(rx) => {
                    self.reindex_end(rx, &src)?;
                }
                None => self.save_source(&src)?,
            }
            registered.retain(|(id, _)| *id != src.id);
            report.entries += counts[k];
            count_change(priors.get(&stale[k].name), report);
            report.from_wacz_index += 1;
            done.insert(stale[k].name.clone());
        }
        Ok(Ok(done))
    }

    #[cfg(not(feature = "remote"))]
    fn sync_wacz_object(&self, url: &str, size: u64, report: &mut SyncReport) -> Result<()> {
        self.sync_object(url, size, None, report)
    }

    /// Begins indexing the stale source `id` (named `name`) again from
    /// its start: its captures, record ids and digests are listed in
    /// [`PENDING`], in batches of [`BATCH`], and the attempt numbered 1
    /// in [`REINDEX`] once the list is whole; each entry written again is
    /// tagged with the attempt ([`Store::insert`]). Nothing is deleted
    /// before the new index is whole ([`Store::reindex_end`]): lookups
    /// keep answering from the entries there are. Listing reads the three
    /// tables whole: when an attempt that failed left its list, the list is
    /// kept (what that attempt wrote is on it too, tagged with its number)
    /// and only the attempt's number goes up.
    fn reindex_begin(&self, id: u32, name: &str) -> Result<Reindex> {
        let mark = self
            .marks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .copied();
        let p = &self.path;
        let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
        let before = {
            let mut attempts = txn.open_table(REINDEX).map_err(|e| db_error(e, p))?;
            // A number that cannot go up (a damaged row) is taken as
            // none: the source is listed again, from attempt 1.
            let before = attempts
                .get(id)
                .map_err(|e| db_error(e, p))?
                .and_then(|a| a.value().checked_add(1));
            if let Some(a) = before {
                attempts.insert(id, a).map_err(|e| db_error(e, p))?;
            }
            before
        };
        self.commit(txn)?;
        if let Some(a) = before {
            tracing::warn!(
                "index cache {}: {name} is indexed again from its start (attempt {a}; its \
                 captures are kept until that succeeds)",
                self.path.display(),
            );
            return Ok(Reindex {
                id,
                mark,
                attempt: a,
            });
        }
        // Rows left by a listing cut short, or by the end of a re-index
        // that succeeded and was cut short after it: not this list's.
        self.clear_pending(id)?;
        let r = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let mut batch: Vec<String> = Vec::with_capacity(BATCH);
        let mut listed = 0u64;
        let flush = |batch: &mut Vec<String>, whole: bool| -> Result<()> {
            let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
            {
                let mut pending = txn.open_table(PENDING).map_err(|e| db_error(e, p))?;
                for k in batch.drain(..) {
                    pending
                        .insert(k.as_str(), [].as_slice())
                        .map_err(|e| db_error(e, p))?;
                }
                if whole {
                    let mut attempts = txn.open_table(REINDEX).map_err(|e| db_error(e, p))?;
                    attempts.insert(id, 1).map_err(|e| db_error(e, p))?;
                }
            }
            self.commit(txn)
        };
        let caps = r.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
        for item in caps.iter().map_err(|e| db_error(e, p))? {
            let (k, _) = item.map_err(|e| db_error(e, p))?;
            if src_of_key(k.value()) == Some(id) {
                batch.push(pending_key(id, 'c', k.value()));
                listed += 1;
                if batch.len() >= BATCH {
                    flush(&mut batch, false)?;
                }
            }
        }
        for (table, kind) in [(RECORD_IDS, 'r'), (DIGESTS, 'd')] {
            let t = r.open_table(table).map_err(|e| db_error(e, p))?;
            for item in t.iter().map_err(|e| db_error(e, p))? {
                let (k, _) = item.map_err(|e| db_error(e, p))?;
                if let Some((key, s)) = split_sourced(k.value())
                    && s == id
                {
                    batch.push(pending_key(id, kind, key));
                    if batch.len() >= BATCH {
                        flush(&mut batch, false)?;
                    }
                }
            }
        }
        flush(&mut batch, true)?;
        if mark.is_some() {
            tracing::warn!(
                "index cache {}: {name} is indexed again from its start (its {listed} \
                 captures are kept until that succeeds)",
                self.path.display()
            );
        }
        Ok(Reindex {
            id,
            mark,
            attempt: 1,
        })
    }

    /// Deletes the [`PENDING`] rows of source `id`, [`BATCH`] a
    /// transaction.
    fn clear_pending(&self, id: u32) -> Result<()> {
        let p = &self.path;
        let (lo, hi) = pending_range(id);
        loop {
            let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
            let n = {
                let mut pending = txn.open_table(PENDING).map_err(|e| db_error(e, p))?;
                let mut keys = Vec::with_capacity(BATCH);
                for item in pending
                    .range(lo.as_str()..hi.as_str())
                    .map_err(|e| db_error(e, p))?
                    .take(BATCH)
                {
                    let (k, _) = item.map_err(|e| db_error(e, p))?;
                    keys.push(k.value().to_string());
                }
                for k in &keys {
                    pending.remove(k.as_str()).map_err(|e| db_error(e, p))?;
                }
                keys.len()
            };
            self.commit(txn)?;
            if n == 0 {
                return Ok(());
            }
        }
    }

    /// Ends the re-index `r` that succeeded: walking its [`PENDING`] list
    /// [`BATCH`] rows a transaction, what it did not write again is
    /// deleted (a record id or digest only the source's own entry); then,
    /// in one transaction, `src` is saved, the attempt ended and the
    /// source's stale mark cleared when it is still the one the re-index
    /// began with (one set again meanwhile, by a lookup that met an
    /// unreadable entry after it began, is kept: indexed again at the next
    /// sync); the list's rows go last. Cut short before that transaction,
    /// the source stays marked and the next sync finishes the job. Returns
    /// the captures deleted.
    fn reindex_end(&self, r: Reindex, src: &Source) -> Result<u64> {
        let p = &self.path;
        let id = r.id;
        let tag = r.attempt.to_be_bytes();
        let (lo, hi) = pending_range(id);
        let mut removed = 0u64;
        // The last row looked at.
        let mut after: Option<String> = None;
        loop {
            let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
            // (row, whether this attempt wrote it again)
            let mut rows: Vec<(String, bool)> = Vec::with_capacity(BATCH);
            {
                let pending = txn.open_table(PENDING).map_err(|e| db_error(e, p))?;
                let from = match &after {
                    Some(k) => std::ops::Bound::Excluded(k.as_str()),
                    None => std::ops::Bound::Included(lo.as_str()),
                };
                let range = pending
                    .range::<&str>((from, std::ops::Bound::Excluded(hi.as_str())))
                    .map_err(|e| db_error(e, p))?;
                for item in range.take(BATCH) {
                    let (k, v) = item.map_err(|e| db_error(e, p))?;
                    rows.push((k.value().to_string(), v.value() == tag.as_slice()));
                }
            }
            if rows.is_empty() {
                let cleared = self.end_attempt(&txn, &r, src)?;
                self.commit(txn)?;
                self.remember(src);
                if cleared {
                    let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
                    if marks.get(&id).copied() == r.mark {
                        marks.remove(&id);
                    }
                }
                break;
            }
            {
                let mut pending = txn.open_table(PENDING).map_err(|e| db_error(e, p))?;
                let mut caps = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
                let mut ids = txn.open_table(RECORD_IDS).map_err(|e| db_error(e, p))?;
                let mut digests = txn.open_table(DIGESTS).map_err(|e| db_error(e, p))?;
                for (k, written) in &rows {
                    if *written {
                        continue;
                    }
                    pending.remove(k.as_str()).map_err(|e| db_error(e, p))?;
                    let Some((kind, key)) = k.get(lo.len()..).and_then(|r| r.split_once(' '))
                    else {
                        continue;
                    };
                    match kind {
                        "c" => {
                            removed +=
                                u64::from(caps.remove(key).map_err(|e| db_error(e, p))?.is_some());
                        }
                        "r" | "d" => {
                            // The source's own entry: another source's of the
                            // same key is another entry.
                            let t = if kind == "r" { &mut ids } else { &mut digests };
                            t.remove(sourced_key(key, id).as_str())
                                .map_err(|e| db_error(e, p))?;
                        }
                        _ => {}
                    }
                }
            }
            self.commit(txn)?;
            after = rows.pop().map(|(k, _)| k);
        }
        // What is left are rows only (of entries written again): the
        // re-index is done whatever happens to them (rows left are not
        // read, and cleared when the source is next listed).
        if let Err(e) = self.clear_pending(id) {
            tracing::warn!(
                "index cache {}: the re-index list of {} is left in the store: {e}",
                self.path.display(),
                src.name
            );
        }
        if r.mark.is_some() {
            // Its entries are new: one found unreadable again is counted
            // again.
            self.seen_unreadable
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|k| src_of_key(k) != Some(id));
        }
        if removed > 0 {
            tracing::info!(
                "index cache {}: {} captures of {} that its new index no longer gives deleted",
                self.path.display(),
                removed,
                src.name
            );
        }
        Ok(removed)
    }

    /// The last step of [`Store::reindex_end`], in `txn`: `src` saved, the
    /// attempt ended, and the stale mark's entry removed when the mark is
    /// still the one `r` began with (whatever the table holds: its write
    /// may have failed, the mark then held in memory only). Returns
    /// whether the mark is answered. (Checked within the write: a lookup
    /// marking the source again sets its mark in memory before it writes
    /// it, so its write comes after this one.)
    fn end_attempt(&self, txn: &redb::WriteTransaction, r: &Reindex, src: &Source) -> Result<bool> {
        let p = &self.path;
        let cleared = r.mark.is_some()
            && self
                .marks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&r.id)
                .copied()
                == r.mark;
        if cleared {
            let mut marks = txn.open_table(STALE).map_err(|e| db_error(e, p))?;
            marks.remove(r.id).map_err(|e| db_error(e, p))?;
        }
        let mut attempts = txn.open_table(REINDEX).map_err(|e| db_error(e, p))?;
        attempts.remove(r.id).map_err(|e| db_error(e, p))?;
        let mut t = txn.open_table(SOURCES).map_err(|e| db_error(e, p))?;
        let v = serde_json::to_vec(&Source {
            stale: false,
            ..src.clone()
        })
        .map_err(std::io::Error::from)?;
        t.insert(src.id, v.as_slice()).map_err(|e| db_error(e, p))?;
        Ok(cleared)
    }

    /// The source named `name`, if it is known.
    fn known(&self, name: &str) -> Option<Source> {
        let s = self
            .sources
            .read()
            .ok()
            .and_then(|s| s.iter().find(|s| s.name == name).cloned())?;
        Some(self.marked(s))
    }

    /// The id a new source gets.
    fn next_id(&self) -> u32 {
        let known = self
            .sources
            .read()
            .ok()
            .and_then(|s| s.iter().map(|s| s.id).max())
            .map_or(0, |m| m + 1);
        let floor = self.next_source.load(std::sync::atomic::Ordering::Relaxed);
        known.max(u32::try_from(floor).unwrap_or(u32::MAX))
    }

    /// Saves `src`'s entry (its stale mark is not in it: [`STALE`]).
    fn save_source(&self, src: &Source) -> Result<()> {
        let txn = self.db.begin_write().map_err(|e| db_error(e, &self.path))?;
        {
            let mut t = txn
                .open_table(SOURCES)
                .map_err(|e| db_error(e, &self.path))?;
            let v = serde_json::to_vec(&Source {
                stale: false,
                ..src.clone()
            })
            .map_err(std::io::Error::from)?;
            t.insert(src.id, v.as_slice())
                .map_err(|e| db_error(e, &self.path))?;
        }
        self.commit(txn)?;
        self.remember(src);
        Ok(())
    }

    /// Puts `src` in the in-memory list of sources (or updates it there).
    fn remember(&self, src: &Source) {
        if let Ok(mut all) = self.sources.write() {
            match all.iter_mut().find(|s| s.id == src.id) {
                Some(s) => *s = src.clone(),
                None => all.push(src.clone()),
            }
        }
    }

    /// Indexes `src` from its `indexed_to` on; returns the entries added.
    /// The reader's recoveries are counted in `recovered` as it goes (a
    /// long scan of a damaged file does not hold them all), the records
    /// whose HTTP head did not parse in `unparsed`.
    fn index_source(
        &self,
        src: &mut Source,
        recovered: &mut Recoveries,
        unparsed: &mut Recoveries<UnparsedHead>,
    ) -> Result<u64> {
        let mut reader = src.scan_reader(src.indexed_to)?;
        if src.indexed_to > 0 && reader.format() != Format::Warc {
            // Only WARC files are read on from the middle; others again.
            src.indexed_to = 0;
            reader = src.scan_reader(0)?;
        }
        let indexer = Indexer::new(src.cdx_filename(), IndexOptions::default());
        let mut run = (src.indexed_to == 0).then(FromStart::default);
        let mut pending: Vec<Entry> = Vec::with_capacity(BATCH);
        let mut added = 0u64;
        let mut end = src.indexed_to;
        let name = src.name.clone();
        let r = indexer.index_noted(
            &mut reader,
            |e| {
                if let Some(l) = e.length {
                    end = end.max(e.offset + l);
                }
                pending.push(e);
                if pending.len() >= BATCH {
                    added += self.insert(src.id, &pending, run.as_mut())?;
                    pending.clear();
                }
                Ok(())
            },
            |ws| recovered.add_all(&name, &ws),
            unparsed,
        );
        added += self.insert(src.id, &pending, run.as_mut())?;
        src.indexed_to = end;
        src.entries += added;
        r.map(|_| added)
    }

    /// Writes `entries` of source `src`. Of a source being indexed again
    /// ([`Store::reindex_begin`]), each entry written is tagged with the
    /// attempt on its pending list (added there when new), and a digest
    /// still pointing at the source's old entries is pointed at the first
    /// new record with it. So is one of a source indexed from its start
    /// (`run`, the digests that run wrote): the first record of the run
    /// with a digest replaces the source's entry of it (from an older
    /// version of the file, when it was rewritten in place), later ones
    /// keep it. Otherwise (a file read on from where it stopped, a CDXJ
    /// loaded) the source's entry of a digest is written when it has none.
    fn insert(&self, src: u32, entries: &[Entry], mut run: Option<&mut FromStart>) -> Result<u64> {
        if entries.is_empty() {
            return Ok(0);
        }
        let p = &self.path;
        #[cfg(test)]
        {
            let mut f = self
                .fail_insert_after
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match *f {
                Some(0) => {
                    *f = None;
                    return Err(db_error("a write failing (test)", p));
                }
                Some(n) => *f = Some(n - 1),
                None => {}
            }
        }
        let txn = self.db.begin_write().map_err(|e| db_error(e, p))?;
        {
            let mut caps = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
            let mut ids = txn.open_table(RECORD_IDS).map_err(|e| db_error(e, p))?;
            let mut digests = txn.open_table(DIGESTS).map_err(|e| db_error(e, p))?;
            let mut pending = txn.open_table(PENDING).map_err(|e| db_error(e, p))?;
            // The re-index attempt under way, if any.
            let tag = txn
                .open_table(REINDEX)
                .map_err(|e| db_error(e, p))?
                .get(src)
                .map_err(|e| db_error(e, p))?
                .map(|a| a.value().to_be_bytes());
            // Tags `key` of `kind` as written by the attempt; whether it
            // is an entry from before the attempt (listed, or written by
            // an attempt that failed), not one it wrote already.
            let mut strike = |kind: char, key: &str| -> Result<bool> {
                let Some(tag) = tag else {
                    return Ok(false);
                };
                Ok(pending
                    .insert(pending_key(src, kind, key).as_str(), tag.as_slice())
                    .map_err(|e| db_error(e, p))?
                    .is_some_and(|was| was.value() != tag.as_slice()))
            };
            for e in entries {
                let cap = Capture {
                    src,
                    entry: e.clone(),
                };
                let v = serde_json::to_vec(&cap).map_err(std::io::Error::from)?;
                let key = capture_key(e, src);
                caps.insert(key.as_str(), v.as_slice())
                    .map_err(|e| db_error(e, p))?;
                strike('c', &key)?;
                let loc = loc_bytes(src, e.offset, e.length);
                if let Some(id) = &e.record_id {
                    ids.insert(sourced_key(id.trim(), src).as_str(), loc.as_slice())
                        .map_err(|e| db_error(e, p))?;
                    strike('r', id.trim())?;
                }
                if is_original(e)
                    && let Some(d) = &e.digest
                {
                    let k = lookup_key(d);
                    let sk = sourced_key(&k, src);
                    let first_of_run = run.as_mut().is_some_and(|r| r.first(&k));
                    if strike('d', &k)?
                        || first_of_run
                        || digests
                            .get(sk.as_str())
                            .map_err(|e| db_error(e, p))?
                            .is_none()
                    {
                        digests
                            .insert(sk.as_str(), loc.as_slice())
                            .map_err(|e| db_error(e, p))?;
                    }
                }
            }
        }
        self.commit(txn)?;
        Ok(entries.len() as u64)
    }

    /// Loads a CDXJ index (as `warchest index` or pywb writes it; a path
    /// or a URL) instead of reading the files: each line's `filename` is
    /// looked for among the sources known by base name (or `WACZ#member`
    /// name). Lines of files not served are counted and skipped; lines that
    /// are not CDXJ are damage: counted apart, their first line numbers
    /// kept, and said here, once, as a warning naming the index
    /// ([`CdxjLoad::damage`]); a caller logging the load's summary (its
    /// `Display`, counts only) does not say them again.
    ///
    /// # Errors
    /// The index cannot be read or the store written.
    pub fn load_cdxj(&self, cdxj: &Path, paths: &[PathBuf]) -> Result<CdxjLoad> {
        use std::io::Read;
        // Register the files without reading them.
        let mut files = Vec::new();
        let mut objects = Vec::new();
        for p in paths {
            if let Some(url) = p.to_str().filter(|u| remote::is_remote(u)) {
                objects.extend(list_objects(url).map_err(|e| Error::from(e).in_file(p))?);
            } else if p.is_dir() {
                walk(p, &self.path, &mut files, 0);
            } else {
                files.push(p.clone());
            }
        }
        // Named as `sync` names them, so polling knows them.
        let files: Vec<(PathBuf, Option<String>, u64)> = files
            .into_iter()
            .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
            .map(|f| {
                let len = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
                (f, None, len)
            })
            .chain(
                objects
                    .into_iter()
                    .map(|(u, size, _)| (PathBuf::from(&u), Some(u), size)),
            )
            .collect();
        let mut by_name: BTreeMap<String, u32> = BTreeMap::new();
        for s in self.sources() {
            by_name.insert(s.cdx_filename(), s.id);
        }
        for (f, url, len) in files {
            let base = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if by_name.contains_key(&base) {
                continue;
            }
            let id = self.next_id();
            let src = Source {
                id,
                name: url.clone().unwrap_or_else(|| f.display().to_string()),
                path: f.clone(),
                url,
                entry: None,
                start: 0,
                len,
                // Marked as indexed: the CDXJ stands for its records.
                mtime: u64::MAX,
                indexed_to: len,
                entries: 0,
                stale: false,
                version: None,
            };
            self.save_source(&src)?;
            by_name.insert(base, id);
        }
        // An index named by URL is read from the object.
        let file: Box<dyn Read + Send> = match cdxj.to_str().filter(|u| remote::is_remote(u)) {
            Some(url) => remote::read_object(url).map_err(|e| Error::from(e).in_file(cdxj))?,
            None => Box::new(File::open(cdxj).map_err(|e| Error::from(e).in_file(cdxj))?),
        };
        // A gzip index (`index.cdx.gz`, Common Crawl's) is decoded as read.
        let name = cdxj.display().to_string();
        let mut r =
            warchest_index::reader::open(file, &name).map_err(|e| Error::from(e).in_file(cdxj))?;
        let mut line = Vec::new();
        let mut number = 0u64;
        let mut load = CdxjLoad {
            index: name,
            ..CdxjLoad::default()
        };
        let mut batch: BTreeMap<u32, Vec<Entry>> = BTreeMap::new();
        while warchest_index::reader::next_line(&mut r, &mut line, &mut number)
            .map_err(|e| Error::from(e).in_file(cdxj))?
        {
            let Some(l) = wacz::CdxjLine::parse(&line) else {
                // Blank lines and `!` header lines are not records.
                if !line.trim_ascii().is_empty() && !line.starts_with(b"!") {
                    load.unparsable += 1;
                    if load.unparsable_lines.len() < CdxjLoad::EXAMPLES {
                        load.unparsable_lines.push(number);
                    }
                }
                continue;
            };
            // A file name given as a path or URL is found by its last
            // component too (`warchest index` of a URL names the URL).
            let found = by_name.get(&l.filename).or_else(|| {
                l.filename
                    .rsplit('/')
                    .next()
                    .and_then(|base| by_name.get(base))
            });
            let Some(&src) = found else {
                load.unknown_file += 1;
                if load.unknown_files.len() < CdxjLoad::EXAMPLES
                    && !load.unknown_files.contains(&l.filename)
                {
                    load.unknown_files.push(l.filename.clone());
                }
                continue;
            };
            let e = entry_of_line(&l, l.filename.clone());
            let b = batch.entry(src).or_default();
            b.push(e);
            if b.len() >= BATCH {
                load.loaded += self.insert(src, b, None)?;
                b.clear();
            }
        }
        for (src, b) in batch {
            load.loaded += self.insert(src, &b, None)?;
        }
        if let Some(d) = load.damage() {
            tracing::warn!("{d}");
        }
        Ok(load)
    }

    /// The captures `q` selects, in key order (or reversed).
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn query(&self, q: &Query, mut each: impl FnMut(Capture) -> bool) -> Result<()> {
        let p = &self.path;
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let t = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
        let Some(range) = keys_resumed(&t, &q.range, q.resume.as_deref(), q.reverse, p)? else {
            return Ok(());
        };
        let from = q.from.as_deref().map(pad_timestamp);
        let to = q.to.as_deref().map(pad_timestamp_up);
        let mut n = 0usize;
        let mut skipped = 0usize;
        let mut unreadable = Unreadable::default();
        let mut visit = |k: &str, v: &[u8]| -> bool {
            if !q.range.contains(k) {
                return true;
            }
            // The key's timestamp (capture_key) first: a capture outside
            // the period costs no decoding, nor one skipped.
            if !key_in_period(k, from.as_deref(), to.as_deref()) {
                return true;
            }
            if skipped < q.skip {
                skipped += 1;
                return true;
            }
            let Ok(c) = serde_json::from_slice::<Capture>(v) else {
                unreadable.note(k);
                return true;
            };
            if from
                .as_deref()
                .is_some_and(|f| c.entry.timestamp.as_str() < f)
                || to
                    .as_deref()
                    .is_some_and(|t| c.entry.timestamp.as_str() > t)
            {
                return true;
            }
            n += 1;
            each(c) && n < q.limit
        };
        let mut failed = None;
        let mut step = |item: RangeItem<'_>| match item {
            Ok((k, v)) => visit(k.value(), v.value()),
            Err(e) => {
                failed = Some(db_error(e, p));
                false
            }
        };
        if q.reverse {
            for item in range.rev() {
                if !step(item) {
                    break;
                }
            }
        } else {
            for item in range {
                if !step(item) {
                    break;
                }
            }
        }
        drop(txn);
        self.note_unreadable(unreadable);
        failed.map_or(Ok(()), Err)
    }

    /// How many captures `q` would give (from its resume on) were it not
    /// for its limit and skip, counted from their keys alone (no capture decoded; one that
    /// cannot be read is counted): how a CDX server counts its pages.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn count(&self, q: &Query) -> Result<usize> {
        let mut n = 0usize;
        self.query_keys(q, |_| {
            n += 1;
            true
        })?;
        Ok(n)
    }

    /// The key of the capture `n` places into what `q` would give (the
    /// first is place 0), in its order and from its [`Query::resume`]
    /// on, its limit and skip aside; `None` when it gives no more than
    /// `n`. Read from the keys alone, as [`Store::count`] counts: a CDX
    /// server's page starts there, found without counting the rest.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn nth_key(&self, q: &Query, n: usize) -> Result<Option<String>> {
        let mut seen = 0usize;
        let mut found = None;
        self.query_keys(q, |k| {
            if seen == n {
                found = Some(k.to_string());
                return false;
            }
            seen += 1;
            true
        })?;
        Ok(found)
    }

    /// What [`Store::nth_key`] gives for `n`, from the keys at every
    /// `step`-th place of `q` kept since the store last changed: a CDX
    /// server's page `n / step` found from where the last page it found
    /// for `q` starts, not from the range's start, so that reading a
    /// range page after page reads its keys about once. The keys passed
    /// are kept (at most 16 MiB of them and of the queries' names, all
    /// queries together; past it, what is kept is dropped and kept again
    /// from this query on). An `n`
    /// that is not a multiple of `step` is found as [`Store::nth_key`]
    /// finds it.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn nth_key_stepped(&self, q: &Query, n: usize, step: usize) -> Result<Option<String>> {
        if n == 0 || step == 0 || !n.is_multiple_of(step) {
            return self.nth_key(q, n);
        }
        Ok(self.walk_steps(q, step, Some(n / step))?.0)
    }

    /// What [`Store::count`] gives, counted from the last of `q`'s keys
    /// at every `step`-th place kept ([`Store::nth_key_stepped`]), and
    /// keeping those it passes: a CDX server's count of pages, after which
    /// any page is found from its own start, whichever is asked first
    /// (a client that shares the pages among workers).
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn count_stepped(&self, q: &Query, step: usize) -> Result<usize> {
        if step == 0 {
            return self.count(q);
        }
        Ok(self.walk_steps(q, step, None)?.1)
    }

    /// Walks `q`'s keys from the last of those at every `step`-th place
    /// kept for it (or from its start), keeping those it passes, until
    /// place `want * step` (the key there, if `q` has it) or, without
    /// `want`, to the end; also gives how many keys `q` has up to where
    /// the walk stopped, counted from its start.
    fn walk_steps(
        &self,
        q: &Query,
        step: usize,
        want: Option<usize>,
    ) -> Result<(Option<String>, usize)> {
        use std::sync::atomic::Ordering;
        let sig = format!(
            "{:?} {:?} {:?} {} {:?} {step}",
            q.range, q.from, q.to, q.reverse, q.resume
        );
        // Read before the keys are: a commit in between makes what is
        // found here of an older generation, never kept as of a newer.
        let generation = self.generation.load(Ordering::Acquire);
        let (have, last) = {
            let Ok(mut kept) = self.page_starts.lock() else {
                return match want {
                    Some(w) => Ok((self.nth_key(q, w.saturating_mul(step))?, 0)),
                    None => Ok((None, self.count(q)?)),
                };
            };
            if kept.generation != generation {
                *kept = PageStarts {
                    generation,
                    ..PageStarts::default()
                };
            }
            let known = kept.known.get(&sig).map(Vec::as_slice).unwrap_or_default();
            if let Some(k) = want.and_then(|w| known.get(w.wrapping_sub(1))) {
                return Ok((Some(k.clone()), 0));
            }
            (known.len(), known.last().cloned())
        };
        // From the last page start known (itself place 0 of the walk), or
        // from the query's own start.
        let mut walk = q.clone();
        if let Some(k) = last {
            walk.resume = Some(k);
        }
        let mut found = Vec::new();
        let mut bytes = 0usize;
        let mut seen = 0usize;
        let mut at = have;
        let mut answer = None;
        self.query_keys(&walk, |k| {
            if seen > 0 && seen.is_multiple_of(step) {
                at += 1;
                if bytes <= PAGE_STARTS_BYTES {
                    bytes += k.len();
                    found.push(k.to_string());
                }
                if Some(at) == want {
                    answer = Some(k.to_string());
                    return false;
                }
            }
            seen += 1;
            true
        })?;
        // Nothing passed, nothing kept: a query of less than a step (most
        // of them) leaves no entry, and every entry's own name counts
        // against the bound, so many queries cannot grow it either.
        if !found.is_empty()
            && let Ok(mut kept) = self.page_starts.lock()
            && kept.generation == generation
        {
            if kept.bytes + bytes + sig.len() > PAGE_STARTS_BYTES {
                kept.known.clear();
                kept.bytes = 0;
            }
            // Kept only where it goes on from what is kept (another
            // request may have gone on first, or the cache been dropped).
            let kept_len = kept.known.get(&sig).map(Vec::len);
            if kept_len.unwrap_or(0) == have {
                let named = if kept_len.is_some() { 0 } else { sig.len() };
                kept.bytes += bytes + named;
                kept.known.entry(sig).or_default().extend(found);
            }
        }
        Ok((answer, have.saturating_mul(step).saturating_add(seen)))
    }

    /// Commits `txn`, then bumps the generation: what
    /// [`Store::nth_key_stepped`] found before is not taken for what is
    /// there after.
    fn commit(&self, txn: redb::WriteTransaction) -> Result<()> {
        let r = txn.commit().map_err(|e| db_error(e, &self.path));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        r
    }

    /// The keys of the captures `q` selects (its range and period, from
    /// its resume on, in its order; its limit and skip aside), read alone:
    /// no capture decoded. `each` returns false to stop.
    fn query_keys(&self, q: &Query, mut each: impl FnMut(&str) -> bool) -> Result<()> {
        let p = &self.path;
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let t = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
        let Some(keys) = keys_resumed(&t, &q.range, q.resume.as_deref(), q.reverse, p)? else {
            return Ok(());
        };
        let from = q.from.as_deref().map(pad_timestamp);
        let to = q.to.as_deref().map(pad_timestamp_up);
        let mut step = |item: RangeItem<'_>| -> Result<bool> {
            let (k, _) = item.map_err(|e| db_error(e, p))?;
            let k = k.value();
            #[cfg(test)]
            self.keys_read
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(
                !(q.range.contains(k) && key_in_period(k, from.as_deref(), to.as_deref()))
                    || each(k),
            )
        };
        if q.reverse {
            for item in keys.rev() {
                if !step(item)? {
                    break;
                }
            }
        } else {
            for item in keys {
                if !step(item)? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// The timestamps of the captures `range` holds, in key order, read
    /// from the keys alone (no capture decoded): what a calendar counts.
    /// `each` returns false to stop.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn timestamps(&self, range: &KeyRange, mut each: impl FnMut(&str) -> bool) -> Result<()> {
        let p = &self.path;
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let t = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
        let keys = keys_of(&t, range, p)?;
        for item in keys {
            let (k, _) = item.map_err(|e| db_error(e, p))?;
            let k = k.value();
            if !range.contains(k) {
                continue;
            }
            // "URLKEY TIMESTAMP SOURCE+OFFSET" (capture_key).
            let Some(ts) = k.rsplit(' ').nth(1) else {
                continue;
            };
            if !each(ts) {
                break;
            }
        }
        Ok(())
    }

    /// The captures of `url` nearest in time to `timestamp` first, among
    /// those `accept` takes; at most `limit` looked at.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn closest(
        &self,
        url: &str,
        timestamp: &str,
        limit: usize,
        mut accept: impl FnMut(&Capture) -> bool,
    ) -> Result<Vec<Capture>> {
        let p = &self.path;
        let key = warchest_index::surt::url_key(url);
        let ts = pad_timestamp(timestamp);
        let target = timestamp_seconds(&ts);
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let t = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
        let lo = format!("{key} ");
        let mid = format!("{key} {ts}");
        let hi = format!("{key}!");
        let mut fwd = t
            .range::<&str>(mid.as_str()..hi.as_str())
            .map_err(|e| db_error(e, p))?;
        let mut back = t
            .range::<&str>(lo.as_str()..mid.as_str())
            .map_err(|e| db_error(e, p))?
            .rev();
        // The next capture that decodes (an unreadable one is passed over
        // and noted, not taken for the end).
        let mut unreadable = Unreadable::default();
        let mut next_f = next_capture(&mut fwd, &mut unreadable, p)?;
        let mut next_b = next_capture(&mut back, &mut unreadable, p)?;
        let mut out = Vec::new();
        let mut seen = 0usize;
        while seen < limit.max(1) * 64 && out.len() < limit {
            let take_f = match (&next_f, &next_b) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(f), Some(b)) => {
                    let df = (timestamp_seconds(&f.entry.timestamp) - target).abs();
                    let db = (timestamp_seconds(&b.entry.timestamp) - target).abs();
                    df <= db
                }
            };
            let c = if take_f {
                let c = next_f.take();
                next_f = next_capture(&mut fwd, &mut unreadable, p)?;
                c
            } else {
                let c = next_b.take();
                next_b = next_capture(&mut back, &mut unreadable, p)?;
                c
            };
            seen += 1;
            if let Some(c) = c
                && accept(&c)
            {
                out.push(c);
            }
        }
        drop((fwd, back));
        drop(t);
        drop(txn);
        self.note_unreadable(unreadable);
        Ok(out)
    }

    /// The capture at `offset` of source `src`, found through its record id
    /// table or a scan of the record (for the record page).
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn location_of_record_id(&self, id: &str) -> Result<Option<(u32, u64)>> {
        Ok(self.record_of_id(id)?.map(|(s, o, _)| (s, o)))
    }

    /// Where the record with WARC-Record-ID `id` is, with its stored
    /// length when the index gave one.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn record_of_id(&self, id: &str) -> Result<Option<(u32, u64, Option<u64>)>> {
        self.first_location(RECORD_IDS, "record-id-sources", id.trim())
    }

    /// Where the record with WARC-Record-ID `id` is in source `src` (a
    /// record id may be in more than one file: a copy), with its stored
    /// length when the index gave one.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn record_of_id_in(&self, id: &str, src: u32) -> Result<Option<(u32, u64, Option<u64>)>> {
        let p = &self.path;
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let t = txn.open_table(RECORD_IDS).map_err(|e| db_error(e, p))?;
        let key = sourced_key(id.trim(), src);
        Ok(t.get(key.as_str())
            .map_err(|e| db_error(e, p))?
            .and_then(|v| self.location("record-id-sources", id.trim(), v.value())))
    }

    /// Where the entry `key` of `table` (named `name`) of the first source
    /// holding one is, a source whose file is there taken before one whose
    /// file is gone (a record id or a payload in two files: a revisit
    /// still finds the copy left when one is removed).
    fn first_location(
        &self,
        table: TableDefinition<&str, &[u8]>,
        name: &str,
        key: &str,
    ) -> Result<Option<(u32, u64, Option<u64>)>> {
        let p = &self.path;
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let t = txn.open_table(table).map_err(|e| db_error(e, p))?;
        let (lo, hi) = sourced_range(key);
        let mut gone = None;
        for item in t
            .range::<&str>(lo.as_str()..hi.as_str())
            .map_err(|e| db_error(e, p))?
        {
            let (k, v) = item.map_err(|e| db_error(e, p))?;
            // A key with `\0` in it is another key.
            if split_sourced(k.value()).is_none_or(|(k, _)| k != key) {
                continue;
            }
            let Some(loc) = self.location(name, key, v.value()) else {
                continue;
            };
            if self.is_there(loc.0) {
                return Ok(Some(loc));
            }
            gone.get_or_insert(loc);
        }
        Ok(gone)
    }

    /// Whether the file of source `id` is there to be read (an object is
    /// taken to be: it is not asked for here).
    fn is_there(&self, id: u32) -> bool {
        self.source(id)
            .is_some_and(|s| s.url.is_some() || s.path.exists())
    }

    /// Where the first response or resource with payload digest `digest` is.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn location_of_digest(&self, digest: &str) -> Result<Option<(u32, u64)>> {
        Ok(self.record_of_digest(digest)?.map(|(s, o, _)| (s, o)))
    }

    /// Where the first response or resource with payload digest `digest`
    /// is, with its stored length when the index gave one.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn record_of_digest(&self, digest: &str) -> Result<Option<(u32, u64, Option<u64>)>> {
        self.first_location(DIGESTS, "digest-key-sources", &lookup_key(digest))
    }

    /// Number of captures.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn len(&self) -> Result<u64> {
        use redb::ReadableTableMetadata;
        let p = &self.path;
        let txn = self.db.begin_read().map_err(|e| db_error(e, p))?;
        let t = txn.open_table(CAPTURES).map_err(|e| db_error(e, p))?;
        t.len().map_err(|e| db_error(e, p))
    }

    /// Whether the store holds no capture.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// The next capture of `it` that decodes; those that do not are noted in
/// `unreadable` and passed over (not taken for the end of the range).
fn next_capture<'a>(
    it: &mut impl Iterator<Item = RangeItem<'a>>,
    unreadable: &mut Unreadable,
    p: &Path,
) -> Result<Option<Capture>> {
    for item in it {
        let (k, v) = item.map_err(|e| db_error(e, p))?;
        match serde_json::from_slice(v.value()) {
            Ok(c) => return Ok(Some(c)),
            Err(_) => unreadable.note(k.value()),
        }
    }
    Ok(None)
}

/// The captures table's entries whose keys start with `range`'s prefix
/// (a domain range's keys still to be tested with [`KeyRange::contains`]).
fn keys_of<'t>(
    t: &'t redb::ReadOnlyTable<&'static str, &'static [u8]>,
    range: &KeyRange,
    p: &Path,
) -> Result<redb::Range<'t, &'static str, &'static [u8]>> {
    let start = range.prefix.as_str();
    match upper_bound(start) {
        Some(e) => t.range::<&str>(start..e.as_str()),
        None => t.range::<&str>(start..),
    }
    .map_err(|e| db_error(e, p))
}

/// The keys of `range` from `resume` on (forwards) or back (`reverse`),
/// `resume` included; `None` where none can be (the key is past the
/// range's end in the query's direction).
fn keys_resumed<'t>(
    t: &'t redb::ReadOnlyTable<&'static str, &'static [u8]>,
    range: &KeyRange,
    resume: Option<&str>,
    reverse: bool,
    p: &Path,
) -> Result<Option<redb::Range<'t, &'static str, &'static [u8]>>> {
    let Some(k) = resume else {
        return keys_of(t, range, p).map(Some);
    };
    let start = range.prefix.as_str();
    let end = upper_bound(start);
    let r = if reverse {
        // Keys from the range's start up to `k`, read backwards.
        if k < start {
            return Ok(None);
        }
        match &end {
            Some(e) if k >= e.as_str() => t.range::<&str>(start..e.as_str()),
            _ => t.range::<&str>(start..=k),
        }
    } else {
        let from = k.max(start);
        match &end {
            Some(e) if from >= e.as_str() => return Ok(None),
            Some(e) => t.range::<&str>(from..e.as_str()),
            None => t.range::<&str>(from..),
        }
    };
    r.map(Some).map_err(|e| db_error(e, p))
}

/// The smallest string greater than every string starting with `prefix`.
fn upper_bound(prefix: &str) -> Option<String> {
    let mut b = prefix.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < 0x7f {
            b.push(last + 1);
            return String::from_utf8(b).ok();
        }
    }
    None
}

/// The index entry a CDXJ line stands for, its file named `filename`. The
/// record type is not in a CDXJ line: a revisit is told by its MIME type
/// (`warc/revisit`, as the indexer writes it), anything else is taken for a
/// response.
fn entry_of_line(l: &wacz::CdxjLine, filename: String) -> Entry {
    let text = |k: &str| l.text(k);
    let mime = text("mime");
    let status = text("status");
    let record_type = record_type_of_line(mime.as_deref(), status.is_some());
    Entry {
        urlkey: l.urlkey.clone(),
        timestamp: l.timestamp.clone(),
        url: Some(l.url.clone()),
        mime,
        status,
        digest: text("digest"),
        length: l.length,
        offset: l.offset,
        filename,
        method: text("method"),
        request_body: l
            .json
            .get("requestBody")
            .map(|v| v.as_str().map(str::to_owned)),
        record_type: Some(record_type.into()),
        ..Entry::default()
    }
}

/// A reader that counts the bytes read through it.
#[cfg(feature = "remote")]
struct Counted<R> {
    inner: R,
    n: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

#[cfg(feature = "remote")]
impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n
            .fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(k)
    }
}

/// The WARC-Type of a CDXJ line's record, which the line does not say:
/// cdxj-indexer and pywb index responses, revisits, resources and
/// metadata (requests only joined to their POST responses). A revisit's
/// `mime` is `warc/revisit`; a line with an HTTP `status` is a response;
/// a line without one typed `application/warc-fields` is taken for
/// metadata (Heritrix's, with the page's own URL and time), which replay
/// must not pick for the page; the rest (screenshots, text, DNS) are
/// served as resources, their bytes as stored.
fn record_type_of_line(mime: Option<&str>, status: bool) -> &'static str {
    match mime {
        Some(m) if m.eq_ignore_ascii_case("warc/revisit") => "revisit",
        _ if status => "response",
        Some(m) if m.eq_ignore_ascii_case("application/warc-fields") => "metadata",
        _ => "resource",
    }
}

/// Whether the URL `url` names objects by a listing (a prefix, `/` at
/// the end, or a glob, a `*` in its last component), not one object.
fn is_listing(url: &str) -> bool {
    url.ends_with('/') || url.rsplit('/').next().unwrap_or("").contains('*')
}

/// Whether the object `url` is one the listing `listing` ([`is_listing`])
/// names: under the prefix, or matched by the glob; with an archive's name
/// ([`list_objects`] lists no other).
fn names(listing: &str, url: &str) -> bool {
    let under = if listing.ends_with('/') {
        url.starts_with(listing)
    } else {
        remote::glob_names(listing, url)
    };
    under && is_archive_name(url.rsplit('/').next().unwrap_or(""))
}

/// The objects a URL names, with their sizes and versions: under a prefix (`/` at the
/// end) or matched by a glob only those with an archive's name, as a
/// directory is walked; a URL of one object is that object.
fn list_objects(url: &str) -> std::io::Result<Vec<(String, u64, Option<String>)>> {
    let last = url.rsplit('/').next().unwrap_or("");
    let many = is_listing(url) || last.contains('?');
    let mut all = remote::list(url)?;
    if many || all.len() > 1 {
        all.retain(|(u, ..)| is_archive_name(u.rsplit('/').next().unwrap_or("")));
    }
    Ok(all)
}

/// Whether a file in a walked directory is an archive file.
pub fn is_archive_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with('.') || lower.ends_with(".open") {
        return false;
    }
    let mut base = lower.as_str();
    for c in [".gz", ".zst", ".lz4"] {
        if let Some(b) = base.strip_suffix(c) {
            base = b;
            break;
        }
    }
    [".warc", ".arc", ".wacz", ".dat"]
        .iter()
        .any(|e| base.ends_with(e))
}

/// Archive files under `dir`, recursively (at most 32 levels), sorted.
fn walk(dir: &Path, store: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 32 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut items: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    items.sort();
    for p in items {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') || p == store {
            continue;
        }
        if p.is_dir() {
            walk(&p, store, out, depth + 1);
        } else if is_archive_name(&name) {
            out.push(p);
        }
    }
}

/// The HTTP server with ranges of warchest-remote's tests.
#[cfg(all(test, feature = "remote"))]
#[path = "../../warchest-remote/tests/it/servers.rs"]
mod test_servers;

/// `e` as one line naming `name`: as it is when it names it already (an
/// error met reading the file does), else with the name before it.
fn named(name: &str, e: &impl std::fmt::Display) -> String {
    let said = e.to_string();
    if said.contains(name) {
        said
    } else {
        format!("{name}: {said}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// A WARC response record of `uri` at `date` (`2024-01-01T00:00:00Z`)
    /// with record id `n` and `body` as its HTTP payload.
    fn response_record(uri: &str, date: &str, n: u32, body: &str) -> Vec<u8> {
        let http = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        format!(
            "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{n:012}>\r\n\
             WARC-Date: {date}\r\nWARC-Target-URI: {uri}\r\n\
             Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
            http.len()
        )
        .into_bytes()
    }

    fn all_captures(store: &Store) -> Vec<Capture> {
        let mut out = Vec::new();
        store
            .query(
                &Query {
                    range: KeyRange::raw(String::new()),
                    from: None,
                    to: None,
                    limit: usize::MAX,
                    reverse: false,
                    skip: 0,
                    resume: None,
                },
                |c| {
                    out.push(c);
                    true
                },
            )
            .unwrap();
        out
    }

    /// A store of `http://a.test/0` to `/{days - 1}`, one a day from 1
    /// January 2024, and `http://b.test/` on the first day, in `dir`.
    fn daily_store(dir: &Path, days: u32) -> Store {
        let warc = dir.join("a.warc");
        let mut bytes = Vec::new();
        for i in 0..days {
            let date = format!("2024-01-{:02}T00:00:00Z", i + 1);
            bytes.extend(response_record(
                &format!("http://a.test/{i}"),
                &date,
                i,
                "x",
            ));
        }
        bytes.extend(response_record(
            "http://b.test/",
            "2024-01-01T00:00:00Z",
            99,
            "x",
        ));
        std::fs::write(&warc, &bytes).unwrap();
        let store = Store::open(dir.join("db.redb")).unwrap();
        store.sync(std::slice::from_ref(&warc)).unwrap();
        store
    }

    /// `count` is what a query without limit or skip gives, from the keys
    /// alone; `skip` passes over that many of them, in the query's order
    /// and period, before the first capture given.
    #[test]
    fn count_and_skip_are_the_querys_own_captures() {
        let dir = tempfile::tempdir().unwrap();
        let store = daily_store(dir.path(), 10);
        let q = |from: Option<&str>, skip, reverse| Query {
            range: KeyRange::new("http://a.test/*", MatchType::Prefix),
            from: from.map(str::to_string),
            to: Some("20240108".into()),
            limit: 3,
            reverse,
            skip,
            resume: None,
        };
        let urls = |q: &Query| {
            let mut out = Vec::new();
            store
                .query(q, |c| {
                    out.push(c.entry.url.unwrap_or_default());
                    true
                })
                .unwrap();
            out
        };
        // Days 1 to 8 of the ten, the other host not counted.
        assert_eq!(store.count(&q(None, 0, false)).unwrap(), 8);
        assert_eq!(store.count(&q(Some("20240103"), 5, true)).unwrap(), 6);
        assert_eq!(
            urls(&q(None, 3, false)),
            ["http://a.test/3", "http://a.test/4", "http://a.test/5"]
        );
        assert_eq!(urls(&q(None, 7, false)), ["http://a.test/7"]);
        assert!(urls(&q(None, 8, false)).is_empty());
        // In reverse, skipped from the newest; the period before the skip.
        assert_eq!(
            urls(&q(Some("20240103"), 4, true)),
            ["http://a.test/3", "http://a.test/2"]
        );
    }

    /// A query resumed at a capture's key starts there, that capture
    /// included, in its own direction; a key outside the range gives all
    /// or nothing, never a panic of the table's range.
    #[test]
    fn a_query_resumes_at_a_captures_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = daily_store(dir.path(), 6);
        let q = |resume: Option<String>, reverse| Query {
            range: KeyRange::new("http://a.test/*", MatchType::Prefix),
            from: None,
            to: None,
            limit: 2,
            reverse,
            skip: 0,
            resume,
        };
        let got = |q: &Query| {
            let mut out = Vec::new();
            store
                .query(q, |c| {
                    out.push(c);
                    true
                })
                .unwrap();
            out
        };
        let urls = |caps: &[Capture]| {
            caps.iter()
                .map(|c| c.entry.url.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        let all = got(&Query {
            limit: 100,
            ..q(None, false)
        });
        assert_eq!(all.len(), 6);
        let keys: Vec<String> = all.iter().map(Capture::key).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            urls(&got(&q(Some(keys[2].clone()), false))),
            ["http://a.test/2", "http://a.test/3"]
        );
        assert_eq!(
            urls(&got(&q(Some(keys[2].clone()), true))),
            ["http://a.test/2", "http://a.test/1"]
        );
        // The n-th key, in the query's order and from its resume on.
        let nth = |q: &Query, n| store.nth_key(q, n).unwrap();
        assert_eq!(nth(&q(None, false), 4).as_ref(), Some(&keys[4]));
        assert_eq!(nth(&q(None, true), 1).as_ref(), Some(&keys[4]));
        assert_eq!(
            nth(&q(Some(keys[2].clone()), false), 1).as_ref(),
            Some(&keys[3])
        );
        assert_eq!(nth(&q(None, false), 6), None);
        assert_eq!(nth(&q(Some("zz".into()), false), 0), None);
        // The Internet Archive's shape, a URL key and a timestamp past
        // the last one answered: the captures after it.
        let ia = format!("{} 20240104000001", all[3].entry.urlkey);
        assert_eq!(
            urls(&got(&q(Some(ia), false))),
            ["http://a.test/4", "http://a.test/5"]
        );
        // Before the range: all of it forwards, nothing backwards; past
        // it: nothing forwards, all of it backwards.
        assert_eq!(got(&q(Some("a".into()), false)).len(), 2);
        assert!(got(&q(Some("a".into()), true)).is_empty());
        assert!(got(&q(Some("zz".into()), false)).is_empty());
        assert_eq!(
            urls(&got(&q(Some("zz".into()), true))),
            ["http://a.test/5", "http://a.test/4"]
        );
    }

    /// The n-th key found from the page starts kept is the one counted
    /// from the start, forwards and backwards, in a period, from a resume,
    /// past the end and out of turn; reading every page in turn reads the
    /// keys about once; a count keeps the page starts, after which a far
    /// page reads no key before it; a sync that adds captures drops what
    /// was kept.
    #[test]
    fn page_starts_kept_give_the_nth_key_and_read_the_keys_once() {
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().unwrap();
        let store = daily_store(dir.path(), 28);
        let q = |reverse, from: Option<&str>, resume: Option<String>| Query {
            range: KeyRange::new("http://a.test/*", MatchType::Prefix),
            from: from.map(str::to_string),
            to: None,
            limit: usize::MAX,
            reverse,
            skip: 0,
            resume,
        };
        let all = store.count(&q(false, None, None)).unwrap();
        assert_eq!(all, 28);
        let third = store.nth_key(&q(false, None, None), 3).unwrap();
        for query in [
            q(false, None, None),
            q(true, None, None),
            q(false, Some("20240110"), None),
            q(true, Some("20240105"), None),
            q(false, None, third),
        ] {
            // Out of turn: far first, then near, past the end, again.
            for n in [21, 3, 9, 27, 30, 33, 6, 21, 0, 4] {
                assert_eq!(
                    store.nth_key_stepped(&query, n, 3).unwrap(),
                    store.nth_key(&query, n).unwrap(),
                    "{query:?} {n}"
                );
            }
        }
        // Every page in turn, after the store changed (nothing kept): the
        // keys are read about once, where counting from the start each
        // time reads 3 + 6 + ... + 27 of them.
        let read = || store.keys_read.load(Ordering::Relaxed);
        store.generation.fetch_add(1, Ordering::AcqRel);
        let before = read();
        let fwd = q(false, None, None);
        for page in 1..=9 {
            assert_eq!(
                store.nth_key_stepped(&fwd, page * 3, 3).unwrap(),
                store.nth_key(&fwd, page * 3).unwrap()
            );
        }
        // Each check above reads its own keys: (3 + 6 + ... + 27) + 28.
        let counted = (1..=9).map(|p| p * 3 + 1).sum::<usize>() as u64;
        let stepped = read() - before - counted;
        assert!(stepped <= 28 + 9, "{stepped} keys read for 9 pages");
        // Counted after a change: equal to `count`, every key read once,
        // and a far page then found from its own block's start.
        store.generation.fetch_add(1, Ordering::AcqRel);
        for query in [q(false, None, None), q(true, Some("20240105"), None)] {
            let before = read();
            let n = store.count_stepped(&query, 3).unwrap();
            let stepped = read() - before;
            let before = read();
            assert_eq!(n, store.count(&query).unwrap(), "{query:?}");
            // The range's keys once, as `count` reads them.
            assert_eq!(stepped, read() - before);
            let before = read();
            let far = store.nth_key_stepped(&query, 21, 3).unwrap();
            assert_eq!(read(), before, "a kept page start is not read again");
            assert_eq!(far, store.nth_key(&query, 21).unwrap());
            // Counted again: from the last start kept, its block alone
            // (and, in a period, the keys outside it the range holds
            // past that start).
            let before = read();
            assert_eq!(store.count_stepped(&query, 3).unwrap(), n);
            let again = read() - before;
            assert!(again < stepped, "{again} keys of {stepped}");
            if query.from.is_none() {
                assert!(again <= 3, "{again} keys");
            }
        }
        // Queries of less than a step keep nothing: many of them cannot
        // grow what is kept.
        let entries = store.page_starts.lock().unwrap().known.len();
        for i in 0..50 {
            let one = Query {
                range: KeyRange::new(&format!("http://a.test/{i}"), MatchType::Exact),
                ..q(false, None, None)
            };
            assert_eq!(store.count_stepped(&one, 3).unwrap(), usize::from(i < 28));
        }
        assert_eq!(store.page_starts.lock().unwrap().known.len(), entries);
        // A sync that finds nothing new commits nothing: what is kept
        // stays (a server's `--poll`).
        let generation = store.generation.load(Ordering::Acquire);
        store.sync(&[dir.path().join("a.warc")]).unwrap();
        assert_eq!(store.generation.load(Ordering::Acquire), generation);
        // A sync that adds captures to the range: found again, not kept.
        let page = store.nth_key_stepped(&fwd, 3, 3).unwrap().unwrap();
        let more = dir.path().join("b.warc");
        std::fs::write(
            &more,
            response_record("http://a.test/0", "2023-12-31T00:00:00Z", 200, "x"),
        )
        .unwrap();
        let warcs = [dir.path().join("a.warc"), more];
        store.sync(&warcs).unwrap();
        let now = store.nth_key_stepped(&fwd, 3, 3).unwrap().unwrap();
        assert_eq!(Some(&now), store.nth_key(&fwd, 3).unwrap().as_ref());
        assert_ne!(now, page);
    }

    /// A file rewritten in place, its payload now at another offset, and
    /// indexed again from its start: revisits of that payload resolve to
    /// its new place (the source's digest entry is written again), and to
    /// the first record of the new version holding it.
    #[test]
    fn a_file_indexed_again_from_its_start_points_its_digests_at_the_new_records() {
        let dir = tempfile::tempdir().unwrap();
        let warc = dir.path().join("a.warc");
        let mut v1 = response_record("http://a.test/", "2024-01-01T00:00:00Z", 1, "x");
        v1.extend(response_record(
            "http://b.test/",
            "2024-01-01T00:00:00Z",
            2,
            &"b".repeat(1000),
        ));
        std::fs::write(&warc, &v1).unwrap();
        let store = Store::open(dir.path().join("db.redb")).unwrap();
        let r = store.sync(std::slice::from_ref(&warc)).unwrap();
        assert_eq!((r.new_sources, r.entries), (1, 2), "{r:?}");
        let digest = all_captures(&store)
            .into_iter()
            .find(|c| c.entry.url.as_deref() == Some("http://a.test/"))
            .and_then(|c| c.entry.digest)
            .expect("a digest");
        let id = store.sources()[0].id;
        assert_eq!(store.location_of_digest(&digest).unwrap(), Some((id, 0)));

        // Shorter: indexed again from its start, not read on.
        let mut v2 = response_record("http://c.test/", "2024-02-01T00:00:00Z", 3, "y");
        let moved = v2.len() as u64;
        v2.extend(response_record(
            "http://a.test/",
            "2024-02-01T00:00:00Z",
            4,
            "x",
        ));
        v2.extend(response_record(
            "http://d.test/",
            "2024-02-01T00:00:00Z",
            5,
            "x",
        ));
        assert!(v2.len() < v1.len());
        std::fs::write(&warc, &v2).unwrap();
        let r = store.sync(std::slice::from_ref(&warc)).unwrap();
        assert_eq!((r.updated_sources, r.entries), (1, 3), "{r:?}");
        assert_eq!(
            store.location_of_digest(&digest).unwrap(),
            Some((id, moved)),
            "the first record of the new version with the payload"
        );
    }

    /// A store error while a WACZ's own index is read fails the WACZ and
    /// leaves nothing of its new member behind (not in memory, no
    /// captures under its id): the next sync indexes it, and counts it.
    #[cfg(feature = "remote")]
    #[test]
    fn a_wacz_member_whose_indexing_failed_on_a_store_error_is_indexed_at_the_next_sync() {
        let dir = tempfile::tempdir().unwrap();
        let warc = dir.path().join("a.warc");
        let mut bytes = Vec::new();
        for (k, date) in [
            "2024-01-01T00:00:00Z",
            "2024-02-01T00:00:00Z",
            "2024-03-01T00:00:00Z",
            "2024-04-01T00:00:00Z",
        ]
        .iter()
        .enumerate()
        {
            bytes.extend(response_record("http://a.test/", date, k as u32, "x"));
        }
        std::fs::write(&warc, bytes).unwrap();
        let wacz = dir.path().join("a.wacz");
        warchest_wacz::create(&[&warc], &wacz, &Default::default()).unwrap();
        let wacz = std::fs::read(&wacz).unwrap();
        let srv = test_servers::RangeServer::serving(&[("a.wacz", wacz.as_slice())], 0.0);
        let urls = [PathBuf::from(srv.url("a.wacz"))];
        let store = Store::open(dir.path().join("db.redb")).unwrap();
        // The first batch (BATCH is 3 in tests) is written, the last fails.
        *store.fail_insert_after.lock().unwrap() = Some(1);
        let r = store.sync(&urls).unwrap();
        assert_eq!(r.failures.len(), 1, "{r:?}");
        assert_eq!((r.new_sources, r.from_wacz_index), (0, 0), "{r:?}");
        assert!(store.sources().is_empty(), "{:?}", store.sources());
        assert!(
            all_captures(&store).is_empty(),
            "the batch written is deleted"
        );

        let r = store.sync(&urls).unwrap();
        assert!(r.failures.is_empty(), "{r:?}");
        assert_eq!(
            (
                r.new_sources,
                r.updated_sources,
                r.from_wacz_index,
                r.entries
            ),
            (1, 0, 1, 4),
            "{r:?}"
        );
        assert_eq!(store.sources().len(), 1);
        let id = store.sources()[0].id;
        let caps = all_captures(&store);
        assert_eq!(caps.len(), 4);
        assert!(caps.iter().all(|c| c.src == id));
    }

    #[test]
    fn a_cdxj_line_s_record_type_is_told_from_its_mime_and_status() {
        let ty = |line: &str| {
            let l = wacz::CdxjLine::parse(line.as_bytes()).expect("a CDXJ line");
            entry_of_line(&l, l.filename.clone()).record_type.unwrap()
        };
        let line = |json: &str| {
            format!(
                "com,example)/ 20140126200624 {{\"url\": \"http://example.com/\", \"filename\": \"a.warc.gz\", \"offset\": \"0\", \"length\": \"10\"{json}}}"
            )
        };
        assert_eq!(
            ty(&line(r#", "mime": "text/html", "status": "200""#)),
            "response"
        );
        assert_eq!(
            ty(&line(r#", "mime": "warc/revisit", "status": "200""#)),
            "revisit"
        );
        assert_eq!(
            ty(&line(r#", "mime": "Application/WARC-Fields""#)),
            "metadata"
        );
        assert_eq!(ty(&line(r#", "mime": "image/png""#)), "resource");
        assert_eq!(ty(&line("")), "resource");
    }

    #[test]
    fn key_ranges() {
        let r = KeyRange::new("http://example.com/", MatchType::Exact);
        assert!(r.contains("com,example)/ 2014"));
        assert!(!r.contains("com,example)/a 2014"));
        let r = KeyRange::new("example.com/a*", MatchType::Exact);
        assert!(r.contains("com,example)/abc 2014"));
        let r = KeyRange::new("example.com", MatchType::Host);
        assert!(r.contains("com,example)/x 2014"));
        assert!(!r.contains("com,example,www2)/x 2014"));
        let r = KeyRange::new("example.com", MatchType::Domain);
        assert!(r.contains("com,example,sub)/x 2014"));
        assert!(r.contains("com,example)/x 2014"));
        assert!(!r.contains("com,examples)/x 2014"));
    }

    #[test]
    fn names_and_bounds() {
        assert!(is_archive_name("a.warc.gz"));
        assert!(is_archive_name("b.WACZ"));
        assert!(!is_archive_name("a.warc.gz.open"));
        assert!(!is_archive_name("index.cdxj"));
        assert_eq!(upper_bound("ab").as_deref(), Some("ac"));
    }

    #[test]
    fn a_revisit_finds_its_original_whatever_the_digest_s_writing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("index.redb")).unwrap();
        // The original as pywb's index writes it: base32, no label.
        let original = Entry {
            urlkey: "com,example)/".into(),
            timestamp: "20240101000000".into(),
            digest: Some("3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ".into()),
            offset: 7,
            length: Some(100),
            record_type: Some("response".into()),
            ..Entry::default()
        };
        store.insert(0, &[original], None).unwrap();
        // A revisit's WARC-Payload-Digest in hex, or another label case.
        for asked in [
            "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
            "Sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            "SHA1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
        ] {
            assert_eq!(
                store.record_of_digest(asked).unwrap(),
                Some((0, 7, Some(100))),
                "{asked}"
            );
        }
        assert_eq!(store.record_of_digest("sha1:abc").unwrap(), None);
    }

    #[test]
    fn a_capture_key_names_its_source() {
        let e = Entry {
            urlkey: "com,example)/a b".into(),
            timestamp: "20240101000000".into(),
            offset: 0x1234,
            ..Entry::default()
        };
        assert_eq!(src_of_key(&capture_key(&e, 0xab)), Some(0xab));
        assert_eq!(src_of_key(&capture_key(&e, u32::MAX)), Some(u32::MAX));
        assert_eq!(src_of_key("com,example)/ 20240101000000 zz"), None);
        assert_eq!(src_of_key(""), None);
    }

    #[test]
    fn a_location_that_does_not_decode_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        {
            let db = Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(RECORD_IDS).unwrap();
                let bad = sourced_key("<urn:uuid:bad>", 0);
                t.insert(bad.as_str(), [1u8, 2, 3].as_slice()).unwrap();
                let good = sourced_key("<urn:uuid:good>", 0);
                t.insert(good.as_str(), loc_bytes(0, 5, Some(9)).as_slice())
                    .unwrap();
            }
            txn.commit().unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store.record_of_id("<urn:uuid:good>").unwrap(),
            Some((0, 5, Some(9)))
        );
        assert_eq!(store.cache_damage().total(), 0);
        assert_eq!(store.record_of_id("<urn:uuid:bad>").unwrap(), None);
        let d = store.cache_damage();
        assert_eq!((d.locations, d.total()), (1, 1));
        // Met again: not counted again.
        assert_eq!(store.record_of_id("<urn:uuid:bad>").unwrap(), None);
        assert_eq!(store.cache_damage().locations, 1);
        assert!(d.examples[0].contains("record-id-sources"), "{d:?}");
        assert!(d.examples[0].contains("<urn:uuid:bad>"), "{d:?}");
    }

    #[test]
    fn a_cdxj_load_says_its_damage_with_line_numbers() {
        let mut l = CdxjLoad {
            index: "x/index.cdxj".into(),
            ..CdxjLoad::default()
        };
        assert_eq!(l.damage(), None);
        l.unparsable = 1;
        l.unparsable_lines = vec![7];
        assert_eq!(
            l.damage().as_deref(),
            Some("x/index.cdxj: 1 line is not CDXJ, skipped (line 7)")
        );
        l.unparsable = 10;
        l.unparsable_lines = (1..=8).collect();
        assert_eq!(
            l.damage().as_deref(),
            Some(
                "x/index.cdxj: 10 lines are not CDXJ, skipped (lines 1, 2, 3, 4, 5, 6, 7, 8, ...)"
            )
        );
        l.unknown_file = 1;
        l.unknown_files = vec!["gone.warc.gz".into()];
        // The summary counts them; their numbers are the damage's alone.
        assert_eq!(
            l.to_string(),
            "loaded 0 lines from x/index.cdxj; 1 line of files not served, skipped \
             (gone.warc.gz); 10 lines not CDXJ, skipped"
        );
    }

    /// A source as a sync knows it, with `entries` captures written.
    fn indexed(store: &Store, entries: u64) -> Source {
        let src = Source {
            id: store.next_id(),
            name: "/x/a.warc".into(),
            path: "/x/a.warc".into(),
            url: None,
            entry: None,
            start: 0,
            len: 100,
            mtime: 1,
            indexed_to: 100,
            entries,
            stale: false,
            version: None,
        };
        store.save_source(&src).unwrap();
        src
    }

    /// The race of a lookup's mark with a sync's save, in its losing
    /// order: the sync read the source unmarked, a lookup marked it, the
    /// sync saved its copy. The mark holds, and across a restart.
    #[test]
    fn a_sync_saving_its_copy_of_a_source_keeps_a_mark_set_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let store = Store::open(&path).unwrap();
        let src = indexed(&store, 3);
        let copy = store.known(&src.name).unwrap();
        assert!(!copy.stale);
        store.mark_stale(src.id).unwrap();
        store
            .save_source(&Source {
                indexed_to: 120,
                len: 120,
                ..copy
            })
            .unwrap();
        let now = store.source(src.id).unwrap();
        assert!(now.stale, "{now:?}");
        assert_eq!(now.len, 120, "the sync's save is kept too");
        drop(store);
        let store = Store::open(&path).unwrap();
        assert!(store.source(src.id).unwrap().stale);
    }

    /// A re-index clears the mark it answers, not one set while it ran; a
    /// store from before, whose mark is in the source's entry, keeps it.
    #[test]
    fn a_re_index_clears_only_the_mark_it_began_with() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let store = Store::open(&path).unwrap();
        let src = indexed(&store, 0);
        store.mark_stale(src.id).unwrap();
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        store.mark_stale(src.id).unwrap();
        store.reindex_end(r, &src).unwrap();
        assert!(store.source(src.id).unwrap().stale, "marked meanwhile");
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        store.reindex_end(r, &src).unwrap();
        assert!(!store.source(src.id).unwrap().stale);
        drop(store);
        let store = Store::open(&path).unwrap();
        assert!(!store.source(src.id).unwrap().stale);
        drop(store);

        // The mark as stores from before kept it.
        {
            let db = Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(SOURCES).unwrap();
                let v = serde_json::to_vec(&Source {
                    stale: true,
                    ..src.clone()
                })
                .unwrap();
                t.insert(src.id, v.as_slice()).unwrap();
            }
            txn.commit().unwrap();
        }
        let store = Store::open(&path).unwrap();
        store.save_source(&src).unwrap();
        assert!(store.source(src.id).unwrap().stale);
    }

    /// A source indexed again is counted as changed however it came to be
    /// (marked stale, its file or object changed, indexed to nothing
    /// before), whether a local file, an object or a WACZ member; new when
    /// it was unknown before the sync.
    #[test]
    fn a_source_indexed_again_is_counted_as_changed() {
        let count = |prior: Option<Source>| {
            let mut r = SyncReport::default();
            count_change(prior.as_ref(), &mut r);
            (r.new_sources, r.updated_sources)
        };
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("index.redb")).unwrap();
        let src = indexed(&store, 2);
        assert_eq!(count(None), (1, 0));
        assert_eq!(count(Some(src.clone())), (0, 1));
        let empty = Source {
            indexed_to: 0,
            entries: 0,
            ..src.clone()
        };
        assert_eq!(count(Some(empty.clone())), (0, 1));
        assert_eq!(
            count(Some(Source {
                stale: true,
                ..empty
            })),
            (0, 1)
        );
    }

    /// The entries a re-index does not write again are deleted when it
    /// ends, and only those; a record id another source took is kept.
    #[test]
    fn a_re_index_deletes_only_what_it_did_not_write_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("index.redb")).unwrap();
        let src = indexed(&store, 3);
        let entry = |ts: &str, offset: u64, id: &str| Entry {
            urlkey: "com,example)/".into(),
            timestamp: ts.into(),
            offset,
            length: Some(10),
            record_id: Some(id.into()),
            record_type: Some("response".into()),
            digest: Some(format!("sha1:{}", "A".repeat(31) + &ts[5..6])),
            ..Entry::default()
        };
        let a = entry("20240101000000", 0, "<urn:a>");
        let b = entry("20240201000000", 10, "<urn:b>");
        let c = entry("20240301000000", 20, "<urn:c>");
        store
            .insert(src.id, &[a.clone(), b.clone(), c], None)
            .unwrap();
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        // Another source writes <urn:c> meanwhile.
        store
            .insert(src.id + 1, &[entry("20240401000000", 0, "<urn:c>")], None)
            .unwrap();
        let moved = Entry { offset: 40, ..b };
        store.insert(src.id, &[a, moved], None).unwrap();
        assert_eq!(store.len().unwrap(), 5, "nothing deleted before the end");
        assert_eq!(store.reindex_end(r, &src).unwrap(), 2);
        assert_eq!(store.len().unwrap(), 3);
        assert_eq!(
            store.record_of_id("<urn:b>").unwrap(),
            Some((src.id, 40, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:c>").unwrap(),
            Some((src.id + 1, 0, Some(10)))
        );
        // A digest follows its record; one no longer given is deleted.
        let digest = |d: char| format!("sha1:{}{d}", "A".repeat(31));
        assert_eq!(
            store.record_of_digest(&digest('2')).unwrap(),
            Some((src.id, 40, Some(10)))
        );
        assert_eq!(store.record_of_digest(&digest('3')).unwrap(), None);
        assert_eq!(
            store.record_of_digest(&digest('4')).unwrap(),
            Some((src.id + 1, 0, Some(10)))
        );
    }

    /// A stale mark whose write to its table failed ("marked until the
    /// process ends") is held in memory only; one re-index that succeeds
    /// answers it (it used to be kept, and the source indexed again at
    /// every sync, as the table had no generation to match).
    #[test]
    fn a_mark_held_in_memory_only_is_cleared_by_a_re_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let store = Store::open(&path).unwrap();
        let src = indexed(&store, 0);
        // As mark_stale leaves it when its write fails.
        store
            .marks
            .lock()
            .unwrap()
            .insert(src.id, store.next_mark.fetch_add(1, Ordering::Relaxed));
        assert!(store.source(src.id).unwrap().stale);
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        assert!(r.mark.is_some());
        store.reindex_end(r, &src).unwrap();
        assert!(!store.source(src.id).unwrap().stale);
        assert_eq!(rows(&store, STALE), 0);
        // Nothing left to answer: the next one does nothing to the mark.
        store.mark_stale(src.id).unwrap();
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        store.reindex_end(r, &src).unwrap();
        assert!(!store.source(src.id).unwrap().stale);
        assert_eq!(rows(&store, STALE), 0);
    }

    /// Rows of `table`.
    fn rows<K: redb::Key + 'static, V: redb::Value + 'static>(
        store: &Store,
        table: TableDefinition<K, V>,
    ) -> u64 {
        let r = store.db.begin_read().unwrap();
        redb::ReadableTableMetadata::len(&r.open_table(table).unwrap()).unwrap()
    }

    /// The capture keys of the store, in order.
    fn capture_keys(store: &Store) -> Vec<String> {
        let r = store.db.begin_read().unwrap();
        let t = r.open_table(CAPTURES).unwrap();
        t.iter()
            .unwrap()
            .map(|i| i.unwrap().0.value().to_string())
            .collect()
    }

    /// A response at `offset` with record id `<urn:N>` and a digest of its
    /// own, `n` its number.
    fn numbered(n: u64, offset: u64) -> Entry {
        original(offset, &format!("<urn:{n}>"), &format!("sha1:{n:032}"))
    }

    /// A re-index of more entries than [`BATCH`]: its list is written and
    /// its leftovers deleted a batch at a time, and it ends with exactly
    /// the entries the new index gave (captures, record ids, digests),
    /// its list and its attempt gone.
    #[test]
    fn a_re_index_of_many_entries_goes_by_batches_and_ends_exact() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("index.redb")).unwrap();
        let src = indexed(&store, 8);
        let old: Vec<Entry> = (0..8).map(|n| numbered(n, n * 10)).collect();
        store.insert(src.id, &old, None).unwrap();
        // Another source, with one record of the same id: kept.
        store.insert(src.id + 1, &[numbered(3, 5)], None).unwrap();
        store.mark_stale(src.id).unwrap();
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        // Each entry listed: its capture, record id and digest.
        assert_eq!(rows(&store, PENDING), 24);
        assert!(24 > 3 * BATCH as u64, "several batches");
        // The new index: 0..5 again (2 moved), 5..8 gone, 20..23 new.
        let new: Vec<Entry> = (0..5)
            .map(|n| numbered(n, if n == 2 { 205 } else { n * 10 }))
            .chain((20..23).map(|n| numbered(n, n * 10)))
            .collect();
        for chunk in new.chunks(BATCH) {
            store.insert(src.id, chunk, None).unwrap();
        }
        store.reindex_end(r, &src).unwrap();
        let mut want: Vec<String> = new.iter().map(|e| capture_key(e, src.id)).collect();
        want.push(capture_key(&numbered(3, 5), src.id + 1));
        want.sort();
        assert_eq!(capture_keys(&store), want);
        for n in 0..23 {
            let id = format!("<urn:{n}>");
            let digest = format!("sha1:{n:032}");
            let at = new.iter().find(|e| e.record_id.as_deref() == Some(&id));
            let loc = at.map(|e| (src.id, e.offset, Some(10)));
            assert_eq!(store.record_of_id_in(&id, src.id).unwrap(), loc, "{id}");
            if n != 3 {
                assert_eq!(store.record_of_digest(&digest).unwrap(), loc, "{digest}");
            }
        }
        assert_eq!(
            store.record_of_id_in("<urn:3>", src.id + 1).unwrap(),
            Some((src.id + 1, 5, Some(10)))
        );
        assert_eq!(rows(&store, PENDING), 0);
        assert_eq!(rows(&store, REINDEX), 0);
        assert!(!store.source(src.id).unwrap().stale);
    }

    /// A re-index that fails leaves its list and its attempt; the next
    /// one keeps that list (not listing the store again) and ends with the
    /// entries it wrote only: those of the old index it did not write
    /// again, and those the failed attempt wrote that it did not, deleted.
    /// A re-index attempt whose mark was lost (held in memory only) is
    /// dropped with its list at the next open: later inserts of the
    /// source write no pending rows.
    #[test]
    fn an_attempt_without_its_mark_is_dropped_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let store = Store::open(&path).unwrap();
        let src = indexed(&store, 3);
        let other = Source {
            id: src.id + 1,
            name: "/x/b.warc".into(),
            ..src.clone()
        };
        store.save_source(&other).unwrap();
        let (a, b, c) = (numbered(1, 0), numbered(2, 10), numbered(3, 20));
        store
            .insert(src.id, &[a.clone(), b.clone(), c.clone()], None)
            .unwrap();
        store
            .insert(other.id, std::slice::from_ref(&a), None)
            .unwrap();
        store.mark_stale(src.id).unwrap();
        store.mark_stale(other.id).unwrap();
        // Both re-indexes begun and failed (not ended).
        store.reindex_begin(src.id, &src.name).unwrap();
        store.reindex_begin(other.id, &other.name).unwrap();
        assert_eq!((rows(&store, REINDEX), rows(&store, PENDING)), (2, 9 + 3));
        // `src`'s mark was held in memory only.
        let txn = store.db.begin_write().unwrap();
        txn.open_table(STALE).unwrap().remove(src.id).unwrap();
        txn.commit().unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert!(!store.source(src.id).unwrap().stale);
        assert_eq!(
            (rows(&store, REINDEX), rows(&store, PENDING)),
            (1, 3),
            "the marked one's attempt and list kept"
        );
        store.insert(src.id, &[a, b, c], None).unwrap();
        assert_eq!(rows(&store, PENDING), 3, "no row written for src");
    }

    /// A damaged attempt number or mark generation (u64::MAX) does not
    /// overflow: the attempt is taken as none (the source listed again,
    /// attempt 1), the mark still holds across a restart.
    #[test]
    fn a_damaged_attempt_or_mark_of_u64_max_does_not_overflow() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let store = Store::open(&path).unwrap();
        let src = indexed(&store, 1);
        store.insert(src.id, &[numbered(1, 0)], None).unwrap();
        store.mark_stale(src.id).unwrap();
        let txn = store.db.begin_write().unwrap();
        {
            let mut t = txn.open_table(REINDEX).unwrap();
            t.insert(src.id, u64::MAX).unwrap();
            let mut t = txn.open_table(STALE).unwrap();
            t.insert(src.id, u64::MAX).unwrap();
        }
        txn.commit().unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert!(store.source(src.id).unwrap().stale);
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        assert_eq!(r.attempt, 1);
        assert_eq!(
            rows(&store, PENDING),
            3,
            "listed again: the capture, id, digest"
        );
        let txn = store.db.begin_read().unwrap();
        let t = txn.open_table(REINDEX).unwrap();
        assert_eq!(t.get(src.id).unwrap().map(|a| a.value()), Some(1));
    }

    #[test]
    fn a_re_index_after_one_that_failed_goes_on_from_its_list() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("index.redb")).unwrap();
        let src = indexed(&store, 3);
        let (a, b, c) = (numbered(1, 0), numbered(2, 10), numbered(3, 20));
        store
            .insert(src.id, &[a.clone(), b.clone(), c], None)
            .unwrap();
        store.mark_stale(src.id).unwrap();
        let failed = store.reindex_begin(src.id, &src.name).unwrap();
        assert_eq!(failed.attempt, 1);
        // It writes `a` and `x` (the file as it was then), and fails: it
        // is not ended.
        let x = numbered(9, 90);
        store.insert(src.id, &[a.clone(), x.clone()], None).unwrap();
        assert_eq!(rows(&store, PENDING), 9 + 3, "the list, and x's rows");
        assert_eq!(rows(&store, REINDEX), 1);
        // A capture the list does not hold: were the store listed again,
        // it would be listed.
        store
            .db
            .begin_write()
            .map(|txn| {
                txn.open_table(CAPTURES)
                    .unwrap()
                    .insert(
                        capture_key(&numbered(8, 80), src.id).as_str(),
                        [].as_slice(),
                    )
                    .unwrap();
                txn.commit().unwrap();
            })
            .unwrap();
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        assert_eq!(r.attempt, 2);
        assert_eq!(rows(&store, PENDING), 12, "the list kept");
        // The file now: `a` and `b`.
        store.insert(src.id, &[a.clone(), b.clone()], None).unwrap();
        store.reindex_end(r, &src).unwrap();
        let mut want = vec![
            capture_key(&a, src.id),
            capture_key(&b, src.id),
            // Not on the list: left.
            capture_key(&numbered(8, 80), src.id),
        ];
        want.sort();
        assert_eq!(capture_keys(&store), want);
        assert_eq!(store.record_of_id("<urn:9>").unwrap(), None, "x's");
        assert_eq!(store.record_of_id("<urn:3>").unwrap(), None);
        assert_eq!(
            store.record_of_digest(&format!("sha1:{:032}", 9)).unwrap(),
            None
        );
        assert_eq!(
            store.record_of_id("<urn:2>").unwrap(),
            Some((src.id, 10, Some(10)))
        );
        assert_eq!(rows(&store, PENDING), 0);
        assert_eq!(rows(&store, REINDEX), 0);
        assert!(!store.source(src.id).unwrap().stale);
        // A later mark lists the store again.
        store.mark_stale(src.id).unwrap();
        let r = store.reindex_begin(src.id, &src.name).unwrap();
        assert_eq!(r.attempt, 1);
        assert_eq!(rows(&store, PENDING), 3 + 2 + 2);
    }

    /// A response at `offset` with record id `id` and payload digest
    /// `digest`.
    fn original(offset: u64, id: &str, digest: &str) -> Entry {
        Entry {
            urlkey: "com,example)/".into(),
            timestamp: "20240101000000".into(),
            offset,
            length: Some(10),
            record_id: Some(id.into()),
            record_type: Some("response".into()),
            digest: Some(digest.into()),
            ..Entry::default()
        }
    }

    /// Three files holding one record (copies: one record id, one
    /// payload digest). Deleting the entries of one of them, by a
    /// re-index that no longer finds the record or by dropping the source,
    /// leaves the others' entries: the record id and the digest still
    /// resolve, to a copy left, until the last copy is gone.
    #[test]
    fn deleting_one_source_s_entries_keeps_another_s() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("index.redb")).unwrap();
        let digest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
        let e = original(7, "<urn:x>", digest);
        for src in 0..3 {
            store.insert(src, std::slice::from_ref(&e), None).unwrap();
        }
        assert_eq!(
            store.record_of_digest(digest).unwrap(),
            Some((0, 7, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:x>").unwrap(),
            Some((0, 7, Some(10)))
        );
        // Source 0's file changed: its new index has no such record.
        let r = store.reindex_begin(0, "a").unwrap();
        store
            .insert(0, &[original(9, "<urn:y>", "sha1:OTHER")], None)
            .unwrap();
        let a = Source {
            id: 0,
            ..indexed(&store, 1)
        };
        store.reindex_end(r, &a).unwrap();
        assert_eq!(
            store.record_of_digest(digest).unwrap(),
            Some((1, 7, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:x>").unwrap(),
            Some((1, 7, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:y>").unwrap(),
            Some((0, 9, Some(10)))
        );
        assert_eq!(
            store.record_of_id_in("<urn:x>", 2).unwrap(),
            Some((2, 7, Some(10)))
        );
        assert_eq!(store.record_of_id_in("<urn:x>", 0).unwrap(), None);
        // Source 1 dropped (its entry was unreadable).
        store.purge(&[1].into()).unwrap();
        assert_eq!(
            store.record_of_digest(digest).unwrap(),
            Some((2, 7, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:x>").unwrap(),
            Some((2, 7, Some(10)))
        );
        store.purge(&[2].into()).unwrap();
        assert_eq!(store.record_of_digest(digest).unwrap(), None);
        assert_eq!(store.record_of_id("<urn:x>").unwrap(), None);
        assert_eq!(
            store.record_of_id("<urn:y>").unwrap(),
            Some((0, 9, Some(10)))
        );
    }

    /// A lookup takes a source whose file is there before one whose file
    /// is gone; with none there, the first (reading it says what is
    /// wrong).
    #[test]
    fn a_lookup_takes_a_copy_whose_file_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("index.redb")).unwrap();
        let there = dir.path().join("b.warc");
        std::fs::write(&there, b"").unwrap();
        let gone = Source {
            path: dir.path().join("a.warc"),
            ..indexed(&store, 1)
        };
        store.save_source(&gone).unwrap();
        let kept = Source {
            id: 1,
            path: there.clone(),
            ..gone.clone()
        };
        store.save_source(&kept).unwrap();
        let digest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
        for src in [0, 1] {
            store
                .insert(src, &[original(src.into(), "<urn:x>", digest)], None)
                .unwrap();
        }
        assert_eq!(
            store.record_of_digest(digest).unwrap(),
            Some((1, 1, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:x>").unwrap(),
            Some((1, 1, Some(10)))
        );
        std::fs::remove_file(&there).unwrap();
        assert_eq!(
            store.record_of_digest(digest).unwrap(),
            Some((0, 0, Some(10)))
        );
    }

    /// A store written with one record-id and digest entry a key is
    /// upgraded when opened: its entries kept, those its captures give for
    /// other sources added (so dropping the source an old entry named
    /// keeps the other copy's), an old entry that does not decode counted,
    /// the old tables deleted (once).
    #[test]
    fn a_store_with_one_entry_a_key_is_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let digest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
        {
            let db = Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut caps = txn.open_table(CAPTURES).unwrap();
                for src in [0, 1] {
                    let e = Entry {
                        timestamp: format!("2024010100000{src}"),
                        ..original(7, "<urn:x>", digest)
                    };
                    let v = serde_json::to_vec(&Capture {
                        src,
                        entry: e.clone(),
                    })
                    .unwrap();
                    caps.insert(capture_key(&e, src).as_str(), v.as_slice())
                        .unwrap();
                }
                // As the layout before wrote them: the last source of a
                // record id, the first of a digest.
                let mut ids = txn.open_table(OLD_RECORD_IDS).unwrap();
                ids.insert("<urn:x>", loc_bytes(1, 7, Some(10)).as_slice())
                    .unwrap();
                // More than are named: counted, the first named.
                for n in 0..CacheDamage::EXAMPLES + 3 {
                    ids.insert(format!("<urn:bad{n:02}>").as_str(), [1u8].as_slice())
                        .unwrap();
                }
                let mut keys = txn.open_table(OLD_DIGEST_KEYS).unwrap();
                let k = lookup_key(digest);
                keys.insert(k.as_str(), loc_bytes(0, 7, Some(10)).as_slice())
                    .unwrap();
            }
            txn.commit().unwrap();
        }
        let store = Store::open(&path).unwrap();
        let d = store.cache_damage();
        let bad = CacheDamage::EXAMPLES as u64 + 3;
        assert_eq!((d.locations, d.total()), (bad, bad), "{d:?}");
        assert_eq!(d.examples.len(), CacheDamage::EXAMPLES, "{d:?}");
        assert!(d.examples[0].contains("<urn:bad00>"), "{d:?}");
        assert!(
            d.examples
                .iter()
                .all(|e| e.contains("dropped by the upgrade")),
            "{d:?}"
        );
        assert_eq!(
            store.record_of_digest(digest).unwrap(),
            Some((0, 7, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:x>").unwrap(),
            Some((0, 7, Some(10)))
        );
        store.purge(&[0].into()).unwrap();
        assert_eq!(
            store.record_of_digest(digest).unwrap(),
            Some((1, 7, Some(10)))
        );
        assert_eq!(
            store.record_of_id("<urn:x>").unwrap(),
            Some((1, 7, Some(10)))
        );
        drop(store);
        {
            use redb::TableHandle;
            let db = Database::create(&path).unwrap();
            let r = db.begin_read().unwrap();
            let names: Vec<String> = r
                .list_tables()
                .unwrap()
                .map(|h| h.name().to_string())
                .collect();
            assert!(
                !names
                    .iter()
                    .any(|n| n == "record-ids" || n == "digest-keys")
            );
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.cache_damage().total(), 0, "upgraded once");
        assert_eq!(
            store.record_of_id("<urn:x>").unwrap(),
            Some((1, 7, Some(10)))
        );
    }

    #[test]
    fn an_older_store_s_digests_are_re_keyed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        {
            let db = Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(OLD_DIGESTS).unwrap();
                t.insert(
                    "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
                    loc_bytes(2, 9, None).as_slice(),
                )
                .unwrap();
            }
            txn.commit().unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store
                .record_of_digest("sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709")
                .unwrap(),
            Some((2, 9, None))
        );
        drop(store);
        // Once: the old table is gone, the new one kept.
        let store = Store::open(&path).unwrap();
        assert!(
            store
                .location_of_digest("3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
                .unwrap()
                .is_some()
        );
    }
}
