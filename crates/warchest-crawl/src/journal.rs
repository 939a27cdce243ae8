//! The frontier's journal (`frontier.journal` beside `frontier.redb`): an
//! append-only file of the frontier's changes since its last checkpoint.
//!
//! Each change (URIs queued, a URI finished or given back for a retry,
//! URLs marked seen) is one record, written with one `write()` while the
//! frontier's redb transaction for it is still open, before the change is
//! visible to any worker. A process killed at any moment leaves its
//! written records in the kernel's page cache, so they are read again on
//! reopening, without an `fsync` on the workers' path; the journal is
//! synced on its own timer (a power loss loses at most that interval).
//! A checkpoint commits redb durably and starts the journal afresh.
//! Records are numbered from 1 after the header; each change stores its
//! record's number (and the epoch) in the database with the change, so a
//! replay applies only the records after what the database holds.
//!
//! Layout: a 12-byte header, `WCFJ` and the epoch (u64, little-endian),
//! then records: payload length (u32 LE), CRC-32 of the payload (u32 LE),
//! payload. The epoch is the frontier's own (its `meta` table): a journal
//! whose epoch is not the database's was already checkpointed (a kill
//! between the checkpoint's commit and the journal's reset), or belongs to
//! another database, and is not replayed. A record cut short or failing
//! its CRC ends the journal: at its end, a torn tail (the change it held
//! had not returned to its worker); in its middle, damage, and the whole
//! records after it are counted (they are not replayed: each change is
//! numbered, and one missing breaks their order).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use crate::frontier::{Outcome, decode_uri, encode_uri};
use crate::uri::CrawlUri;

const MAGIC: &[u8; 4] = b"WCFJ";
const HEADER: usize = 12;
/// A record larger than this is not read back (a damaged length).
const MAX_RECORD: usize = 256 << 20;
/// The most payload bytes hashed looking for whole records after damage
/// (each byte after it may start one): past it, only bytes are reported.
const MAX_SEARCH_HASHED: u64 = 256 << 20;

/// One change to the frontier, as journaled.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// URIs queued (those seen before are skipped again on replay).
    Add(Vec<CrawlUri>),
    /// A lease finished: its queue key and host, how it counts, and the
    /// URIs it found.
    Complete {
        key: Vec<u8>,
        host: String,
        outcome: Outcome,
        found: Vec<CrawlUri>,
    },
    /// A lease given back to its queue (its URI, tries counted).
    Retry {
        key: Vec<u8>,
        host: String,
        uri: CrawlUri,
        delay: Duration,
    },
    /// URLs marked seen.
    MarkSeen(Vec<Url>),
}

fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s);
}

fn put_uris(b: &mut Vec<u8>, uris: &[CrawlUri]) {
    b.extend_from_slice(&(uris.len() as u32).to_le_bytes());
    for u in uris {
        put_bytes(b, &encode_uri(u));
    }
}

/// Encodes a record's payload.
pub(crate) fn encode_add(b: &mut Vec<u8>, uris: &[CrawlUri]) {
    b.push(1);
    put_uris(b, uris);
}

/// Encodes a record's payload.
pub(crate) fn encode_complete(
    b: &mut Vec<u8>,
    key: &[u8],
    host: &str,
    o: &Outcome,
    found: &[CrawlUri],
) {
    b.push(2);
    put_bytes(b, key);
    put_bytes(b, host.as_bytes());
    b.push(u8::from(o.failed) | u8::from(o.page) << 1);
    b.extend_from_slice(&o.bytes.to_le_bytes());
    b.extend_from_slice(&(o.delay.as_millis() as u64).to_le_bytes());
    put_uris(b, found);
}

/// Encodes a record's payload.
pub(crate) fn encode_retry(
    b: &mut Vec<u8>,
    key: &[u8],
    host: &str,
    uri: &CrawlUri,
    delay: Duration,
) {
    b.push(3);
    put_bytes(b, key);
    put_bytes(b, host.as_bytes());
    put_bytes(b, &encode_uri(uri));
    b.extend_from_slice(&(delay.as_millis() as u64).to_le_bytes());
}

/// Encodes a record's payload.
pub(crate) fn encode_mark_seen(b: &mut Vec<u8>, urls: &[Url]) {
    b.push(4);
    b.extend_from_slice(&(urls.len() as u32).to_le_bytes());
    for u in urls {
        put_bytes(b, u.as_str().as_bytes());
    }
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn uris(&mut self) -> Option<Vec<CrawlUri>> {
        let n = self.u32()? as usize;
        let mut v = Vec::with_capacity(n.min(self.0.len() / 4));
        for _ in 0..n {
            v.push(decode_uri(self.bytes()?)?);
        }
        Some(v)
    }
}

/// Decodes a record's payload (`None`: not a record this version wrote).
pub(crate) fn decode(p: &[u8]) -> Option<Op> {
    let mut c = Cursor(p);
    let op = match c.u8()? {
        1 => Op::Add(c.uris()?),
        2 => {
            let key = c.bytes()?.to_vec();
            let host = String::from_utf8(c.bytes()?.to_vec()).ok()?;
            let flags = c.u8()?;
            let bytes = c.u64()?;
            let delay = Duration::from_millis(c.u64()?);
            let found = c.uris()?;
            Op::Complete {
                key,
                host,
                outcome: Outcome {
                    failed: flags & 1 != 0,
                    page: flags & 2 != 0,
                    bytes,
                    delay,
                },
                found,
            }
        }
        3 => {
            let key = c.bytes()?.to_vec();
            let host = String::from_utf8(c.bytes()?.to_vec()).ok()?;
            let uri = decode_uri(c.bytes()?)?;
            let delay = Duration::from_millis(c.u64()?);
            Op::Retry {
                key,
                host,
                uri,
                delay,
            }
        }
        4 => {
            let n = c.u32()? as usize;
            let mut v = Vec::with_capacity(n.min(c.0.len() / 4));
            for _ in 0..n {
                v.push(Url::parse(std::str::from_utf8(c.bytes()?).ok()?).ok()?);
            }
            Op::MarkSeen(v)
        }
        _ => return None,
    };
    c.0.is_empty().then_some(op)
}

/// What reading a journal found.
#[derive(Debug, Default)]
pub(crate) struct Read0 {
    /// The header's epoch (`None`: no header: a missing or empty file).
    pub epoch: Option<u64>,
    /// The records' payloads, in order.
    pub records: Vec<Vec<u8>>,
    /// Bytes after the last whole record read (a torn tail, or damage and
    /// what follows it), ignored.
    pub torn: u64,
    /// Whole records found in the ignored bytes: the journal was damaged
    /// in its middle, not cut at its end.
    pub later: u64,
    /// The ignored bytes were searched to their end for whole records
    /// (false: the search's bound stopped it, and `later` is a floor).
    pub searched: bool,
}

impl Read0 {
    /// Whether whole changes (or bytes that may hold some) were discarded:
    /// damage, not the change a kill cut at the end.
    pub fn lost_changes(&self) -> bool {
        self.torn > 0 && (self.later > 0 || !self.searched)
    }

    /// What was ignored, for a person, or `None` when nothing was.
    pub fn damage(&self) -> Option<String> {
        if self.torn == 0 {
            return None;
        }
        Some(match (self.later, self.searched) {
            (0, true) => format!(
                "{} bytes after the last whole change ignored (a change cut by a kill, \
                 which had not returned to its worker)",
                self.torn
            ),
            (0, false) => format!(
                "damaged: {} bytes after the last whole change discarded (too many to \
                 search whole for later changes)",
                self.torn
            ),
            (n, complete) => format!(
                "damaged in its middle: {}{n} whole changes after the damage discarded \
                 ({} bytes); what they did to the frontier (URIs queued, finished, seen) \
                 is lost",
                if complete { "" } else { "at least " },
                self.torn
            ),
        })
    }
}

/// How many whole records (CRC good, not empty) follow damage at
/// `data[from..]`, each found by trying every offset until one fits, then
/// following the records from it; and whether the search reached the end
/// (bounded by [`MAX_SEARCH_HASHED`]).
fn records_after(data: &[u8], from: usize) -> (u64, bool) {
    let mut hashed: u64 = 0;
    let mut found = 0;
    let mut p = from;
    while p <= data.len() && data.len() - p >= 8 {
        let len = u32::from_le_bytes(data[p..p + 4].try_into().unwrap_or([0; 4])) as usize;
        let crc = u32::from_le_bytes(data[p + 4..p + 8].try_into().unwrap_or([0; 4]));
        if (1..=MAX_RECORD).contains(&len) && data.len() - p - 8 >= len {
            hashed += len as u64;
            if hashed > MAX_SEARCH_HASHED {
                return (found, false);
            }
            if crc32fast::hash(&data[p + 8..p + 8 + len]) == crc {
                found += 1;
                p += 8 + len;
                continue;
            }
        }
        p += 1;
    }
    (found, true)
}

/// Reads the journal at `path` (a missing file is an empty one).
pub(crate) fn read(path: &Path) -> std::io::Result<Read0> {
    let mut data = Vec::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut data)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Read0::default()),
        Err(e) => return Err(e),
    }
    Ok(parse(&data))
}

/// Reads a journal's bytes (a file's whole content, the header included).
pub(crate) fn parse(data: &[u8]) -> Read0 {
    let mut out = Read0 {
        searched: true,
        ..Read0::default()
    };
    if data.len() < HEADER || &data[..4] != MAGIC {
        out.torn = data.len() as u64;
        // A header damaged, not missing: records may follow it.
        if data.len() >= HEADER {
            (out.later, out.searched) = records_after(data, HEADER);
        }
        return out;
    }
    out.epoch = Some(u64::from_le_bytes(data[4..12].try_into().unwrap_or([0; 8])));
    let mut at = HEADER;
    while data.len() - at >= 8 {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap_or([0; 4])) as usize;
        let crc = u32::from_le_bytes(data[at + 4..at + 8].try_into().unwrap_or([0; 4]));
        if len > MAX_RECORD || data.len() - at - 8 < len {
            break;
        }
        let p = &data[at + 8..at + 8 + len];
        if crc32fast::hash(p) != crc {
            break;
        }
        out.records.push(p.to_vec());
        at += 8 + len;
    }
    out.torn = (data.len() - at) as u64;
    if out.torn > 0 {
        (out.later, out.searched) = records_after(data, at + 1);
    }
    out
}

/// A record's frame: its length, its CRC-32, the payload (as
/// [`Journal::append`] writes it).
fn frame(out: &mut Vec<u8>, len: u32, payload: &[u8]) {
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Encodes `op` as its record's payload.
pub(crate) fn encode(b: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Add(uris) => encode_add(b, uris),
        Op::Complete {
            key,
            host,
            outcome,
            found,
        } => encode_complete(b, key, host, outcome, found),
        Op::Retry {
            key,
            host,
            uri,
            delay,
        } => encode_retry(b, key, host, uri, *delay),
        Op::MarkSeen(urls) => encode_mark_seen(b, urls),
    }
}

/// What the fuzz target (fuzz/fuzz_targets/crawl_journal.rs) reads a
/// journal with, through `crate::fuzzing`.
pub(crate) mod fuzz {
    use super::*;

    /// A journal file's header for `epoch`.
    pub fn header(epoch: u64) -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        h.extend_from_slice(&epoch.to_le_bytes());
        h
    }

    /// `payload` framed as a whole record (its length cut to 32 bits:
    /// the target's payloads are at most 64 KiB).
    pub fn record(payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(payload.len() + 8);
        frame(&mut out, payload.len() as u32, payload);
        out
    }
}

/// The open journal: appended to by the frontier's changes, reset by its
/// checkpoints.
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    /// The epoch its header holds.
    pub epoch: u64,
    /// Bytes of records since the header.
    pub bytes: u64,
    /// Records since the header: the last one appended is record
    /// `records` (from 1), the position the frontier stores with the
    /// change it holds.
    pub records: u64,
    frame: Vec<u8>,
    /// A failed write could not be undone (or a reset failed): the file's
    /// end is not a record's, so nothing more is appended until a reset
    /// succeeds.
    broken: bool,
    /// Test seam: the next append writes this many bytes, then fails.
    #[cfg(test)]
    cut: Option<usize>,
}

impl Journal {
    /// Creates (or empties) the journal at `path` for `epoch`.
    pub fn create(path: &Path, epoch: u64) -> std::io::Result<Journal> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let mut j = Journal {
            path: path.to_path_buf(),
            file,
            epoch,
            bytes: 0,
            records: 0,
            frame: Vec::with_capacity(4096),
            broken: true,
            #[cfg(test)]
            cut: None,
        };
        j.reset(epoch)?;
        Ok(j)
    }

    /// Empties the journal and writes the header of `epoch`.
    ///
    /// Until it has succeeded, appends are refused: a failed `set_len`
    /// would leave an old epoch's records, a failed header write a file
    /// with no header.
    pub fn reset(&mut self, epoch: u64) -> std::io::Result<()> {
        self.broken = true;
        self.file.set_len(0)?;
        let mut h = [0u8; HEADER];
        h[..4].copy_from_slice(MAGIC);
        h[4..].copy_from_slice(&epoch.to_le_bytes());
        self.file.write_all(&h)?;
        self.epoch = epoch;
        self.bytes = 0;
        self.records = 0;
        self.broken = false;
        Ok(())
    }

    /// Whether a failed write could not be undone: appends are refused
    /// until a [`reset`](Self::reset).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Breaks it as a failed write whose undoing failed does.
    #[cfg(test)]
    pub(crate) fn break_for_test(&mut self) {
        self.broken = true;
    }

    /// Appends one record, whole, with one `write()` (unless the kernel
    /// cuts it short, when the rest follows).
    ///
    /// A failed write (a full disk) is cut back off the file, so that the
    /// records appended after it are read back; when that fails too, every
    /// later append fails until a [`reset`](Self::reset) succeeds.
    ///
    /// # Errors
    /// The write failed, the journal is broken by an earlier failure, or
    /// the record is larger than a reader accepts.
    pub fn append(&mut self, payload: &[u8]) -> std::io::Result<()> {
        if self.broken {
            return Err(std::io::Error::other(
                "an earlier write to it failed and could not be undone: \
                 no change is journaled until the next checkpoint",
            ));
        }
        // The reader stops at a longer record (a damaged length), and
        // every record after it would be lost.
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|&l| l as usize <= MAX_RECORD)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "a change of {} bytes, more than a record holds ({MAX_RECORD})",
                        payload.len()
                    ),
                )
            })?;
        self.frame.clear();
        frame(&mut self.frame, len, payload);
        if let Err(e) = self.write_frame() {
            if self.file.set_len(HEADER as u64 + self.bytes).is_err() {
                self.broken = true;
            }
            return Err(e);
        }
        self.bytes += self.frame.len() as u64;
        self.records += 1;
        Ok(())
    }

    fn write_frame(&mut self) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(n) = self.cut.take() {
            self.file
                .write_all(&self.frame[..n.min(self.frame.len())])?;
            return Err(std::io::Error::other("a write cut short (test)"));
        }
        self.file.write_all(&self.frame)
    }

    /// A second handle on the file, to sync it without the journal's lock.
    pub fn handle(&self) -> std::io::Result<File> {
        self.file.try_clone()
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uri::Hop;

    fn uri(s: &str) -> CrawlUri {
        CrawlUri::seed(Url::parse(s).unwrap(), 0)
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_ends_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.journal");
        let s = uri("http://a.test/");
        let c = s.child(Url::parse("http://b.test/x?y=1").unwrap(), Hop::Embed);
        let ops = vec![
            Op::Add(vec![s.clone(), c.clone()]),
            Op::Complete {
                key: b"a.test\0k".to_vec(),
                host: "a.test".into(),
                outcome: Outcome {
                    failed: true,
                    page: true,
                    bytes: 123,
                    delay: Duration::from_millis(4567),
                },
                found: vec![c.clone()],
            },
            Op::Retry {
                key: b"b.test\0k".to_vec(),
                host: "b.test".into(),
                uri: c.clone(),
                delay: Duration::from_millis(9),
            },
            Op::MarkSeen(vec![Url::parse("http://c.test/").unwrap()]),
        ];
        let mut j = Journal::create(&p, 77).unwrap();
        for op in &ops {
            let mut b = Vec::new();
            match op {
                Op::Add(u) => encode_add(&mut b, u),
                Op::Complete {
                    key,
                    host,
                    outcome,
                    found,
                } => encode_complete(&mut b, key, host, outcome, found),
                Op::Retry {
                    key,
                    host,
                    uri,
                    delay,
                } => encode_retry(&mut b, key, host, uri, *delay),
                Op::MarkSeen(u) => encode_mark_seen(&mut b, u),
            }
            j.append(&b).unwrap();
        }
        let r = read(&p).unwrap();
        assert_eq!(r.epoch, Some(77));
        assert_eq!(r.torn, 0);
        let back: Vec<Op> = r.records.iter().map(|p| decode(p).unwrap()).collect();
        assert_eq!(back, ops);
        // A cut last record: the others are read, the tail counted.
        let len = std::fs::metadata(&p).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - 3)
            .unwrap();
        let r = read(&p).unwrap();
        assert_eq!(r.records.len(), 3);
        assert!(r.torn > 0);
        assert_eq!((r.later, r.searched), (0, true));
        assert!(r.damage().unwrap().contains("a change cut by a kill"));
        // A flipped byte in a record: its CRC ends the journal there.
        let mut data = std::fs::read(&p).unwrap();
        data[HEADER + 9] ^= 0xff;
        std::fs::write(&p, &data).unwrap();
        let r = read(&p).unwrap();
        assert_eq!(r.records.len(), 0);
        // The two whole records after it are found and counted, the cut
        // fourth is not.
        assert_eq!((r.later, r.searched), (2, true));
        let d = r.damage().unwrap();
        assert!(d.contains("in its middle: 2 whole changes"), "{d}");
        // Reset: the header alone, the new epoch.
        j.reset(78).unwrap();
        let r = read(&p).unwrap();
        assert_eq!((r.epoch, r.records.len(), r.torn), (Some(78), 0, 0));
        assert!(read(&dir.path().join("none")).unwrap().epoch.is_none());
    }

    /// A write that fails part way is cut back off: the records appended
    /// after it are read back. One whose undoing fails too (a read-only
    /// handle stands in for the failing disk) refuses every append until
    /// a reset; a record larger than a reader takes is refused.
    #[test]
    fn a_failed_write_loses_no_later_record() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.journal");
        let mut j = Journal::create(&p, 5).unwrap();
        j.append(b"one").unwrap();
        j.cut = Some(6);
        assert!(j.append(b"two, cut").is_err());
        j.append(b"three").unwrap();
        let r = read(&p).unwrap();
        assert_eq!(r.records, vec![b"one".to_vec(), b"three".to_vec()]);
        assert_eq!(r.torn, 0);

        let writable = std::mem::replace(&mut j.file, File::open(&p).unwrap());
        assert!(j.append(b"four").is_err(), "a read-only handle");
        j.file = writable;
        let e = j.append(b"five").unwrap_err();
        assert!(e.to_string().contains("could not be undone"), "{e}");
        assert_eq!(read(&p).unwrap().records.len(), 2);
        j.reset(6).unwrap();
        j.append(b"six").unwrap();
        let r = read(&p).unwrap();
        assert_eq!((r.epoch, r.records), (Some(6), vec![b"six".to_vec()]));
        let e = j.append(&vec![0; MAX_RECORD + 1]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert_eq!(read(&p).unwrap().records.len(), 1);
    }
}
