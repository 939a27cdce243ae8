//! Salvaging the intact records of a damaged file: WARC (plain, gzip,
//! zstd), ARC and Web InfoMall.
//!
//! Recovery runs in two stages.
//!
//! 1. *Decompression.* A compressed file is inflated member by member into
//!    a temporary file by the lenient [`Decoder`], which resynchronises on
//!    member headers after damage (bit flips, a member whose start is
//!    missing, garbage between members, a cut-off tail). Members that were
//!    damaged (corrupt data, bad CRC, truncated) are remembered: no record
//!    that overlaps one is trusted unless its own digest proves it. Stored
//!    bytes that no member could be read from are reported as lost.
//! 2. *Records.* The decompressed bytes are searched for record starts
//!    (`WARC/<digit>`, `version:`, an ARC URL-record line). A start is
//!    accepted when it is *confirmed*: its record's own checksum verifies
//!    (a WARC block digest; a Web InfoMall zlib stream that inflates to
//!    `unzip-length`; the CRC of a whole compressed member that holds
//!    exactly the record), or the records that follow it are well framed, one
//!    after the other: three records for Web InfoMall (its specification's
//!    section 4), two for ARC and WARC records without digests, fewer when
//!    the file ends first (the report says so). A record at the very start
//!    of the input needs no confirmation. From a confirmed start,
//!    records are read in sequence; each intact one is written to the
//!    output as stored (its bytes, compressed per record when asked); the
//!    first damaged one ends the sequence, and the search goes on from the
//!    byte after its start.
//!
//! A record is intact when it is complete, its framing holds (lengths,
//! trailer, header grammar), its digests do not fail (WARC), its content
//! inflates to its declared length (Web InfoMall), and, when it overlaps a
//! damaged compressed member, its block digest verifies. Damaged records
//! are written only with [`RecoverOptions::keep_damaged`]. Every range of
//! bytes that yielded no intact record is reported with the records known
//! to be lost in it.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use warchest::io::read_up_to;

use serde::Serialize;

use warchest::archive::{Format, FormatRecord as AnyRecord, Reader as AnyReader};
use warchest::check::{DigestStatus, check_record};
use warchest::codec::{Codec, Decoder, DecoderOptions, Source};
use warchest::error::{Error, ErrorKind, Result, WarningKind};
use warchest::warc::ReaderOptions;

/// Per-record compression of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OutputCompression {
    /// As stored in the (decompressed) input.
    #[default]
    None,
    /// One gzip member per record.
    Gzip,
    /// One zstd frame per record.
    Zstd,
}

/// How [`recover`] works.
#[derive(Debug, Clone, Default)]
pub struct RecoverOptions {
    /// Write damaged records too (as they are, possibly cut short).
    pub keep_damaged: bool,
    /// The format, when known; sniffed from the bytes otherwise.
    pub format: Option<Format>,
    /// Compression of the output records.
    pub compression: OutputCompression,
}

/// A record known to be lost (or kept damaged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LostRecord {
    /// Offset of its start, in the file as stored (its member's start for
    /// compressed files).
    pub offset: u64,
    /// Its target URI, when its header could be read.
    pub target_uri: Option<String>,
    /// Why it is not intact.
    pub reason: String,
    /// True when it was written anyway (`keep_damaged`).
    pub kept: bool,
}

/// A range of the input that gave no intact record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedRange {
    /// First stored byte of the range.
    pub start: u64,
    /// Stored offset just past it.
    pub end: u64,
    /// The range in the decompressed bytes, for compressed inputs.
    pub decompressed: Option<(u64, u64)>,
    /// Records that started in the range and were not intact.
    pub lost: Vec<LostRecord>,
    /// What was found there.
    pub note: String,
}

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoverReport {
    /// The format read.
    pub format: Option<Format>,
    /// True when the input was compressed.
    pub compressed: bool,
    /// Intact records written.
    pub records_written: u64,
    /// Damaged records written (with `keep_damaged`).
    pub damaged_written: u64,
    /// Damaged records not written.
    pub records_lost: u64,
    /// Every damaged range, in file order.
    pub ranges: Vec<DamagedRange>,
    /// Starts accepted on weaker evidence than the rule asks (a run cut
    /// short by the end of the file), as sentences.
    pub notes: Vec<String>,
}

impl RecoverReport {
    /// True when nothing was damaged.
    pub fn is_clean(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// Warning kinds that mean a record's framing or content is not as
/// declared.
fn is_damage(k: WarningKind) -> bool {
    matches!(
        k,
        WarningKind::DamagedContent
            | WarningKind::BadContentLength
            | WarningKind::TruncatedRecord
            | WarningKind::BadTrailer
            | WarningKind::Grammar
            | WarningKind::DamagedMember
            | WarningKind::TruncatedMember
            | WarningKind::BadChecksum
    )
}

/// The decompressed input: a file, and how its offsets map to stored ones.
struct Plain {
    path: PathBuf,
    len: u64,
    /// Keeps a temporary file alive.
    _temp: Option<tempfile::TempPath>,
    /// (plain start, stored start, stored end) per member, in a temporary
    /// file of 24-byte entries so that its size does not grow memory.
    map: Option<(File, u64)>,
    /// Decompressed ranges of damaged members.
    tainted: Vec<(u64, u64)>,
}

impl Plain {
    fn entry(&self, i: u64) -> Result<(u64, u64, u64)> {
        let Some((f, _)) = &self.map else {
            return Ok((0, 0, 0));
        };
        let mut f = f;
        let mut b = [0u8; 24];
        f.seek(SeekFrom::Start(i * 24))?;
        f.read_exact(&mut b)?;
        let n = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().unwrap_or([0; 8]));
        Ok((n(0), n(8), n(16)))
    }

    /// The stored extent of the member holding decompressed offset `p`
    /// (`p` itself for plain inputs).
    fn stored(&self, p: u64) -> Result<(u64, u64)> {
        let Some((_, count)) = &self.map else {
            return Ok((p, p));
        };
        let Some(i) = self.index_at(*count, p)? else {
            return Ok((0, 0));
        };
        let (_, s, e) = self.entry(i)?;
        Ok((s, e))
    }

    /// The index of the last of `count` map entries starting at or before
    /// decompressed offset `p` (the first when none does); `None` when
    /// the map is empty. A binary search over the entries on disk.
    fn index_at(&self, count: u64, p: u64) -> Result<Option<u64>> {
        let (mut lo, mut hi) = (0u64, count);
        if hi == 0 {
            return Ok(None);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.entry(mid)?.0 <= p {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Some(lo))
    }

    /// The decompressed extent of the member holding decompressed offset
    /// `p`, for compressed inputs.
    fn member(&self, p: u64) -> Result<Option<(u64, u64)>> {
        let Some((_, count)) = &self.map else {
            return Ok(None);
        };
        let Some(lo) = self.index_at(*count, p)? else {
            return Ok(None);
        };
        let start = self.entry(lo)?.0;
        let end = if lo + 1 < *count {
            self.entry(lo + 1)?.0
        } else {
            self.len
        };
        Ok(Some((start, end)))
    }

    fn is_tainted(&self, start: u64, end: u64) -> bool {
        self.tainted.iter().any(|&(s, e)| s < end && start < e)
    }

    fn open_at(&self, pos: u64) -> Result<BufReader<File>> {
        let mut f = File::open(&self.path)?;
        f.seek(SeekFrom::Start(pos))?;
        Ok(BufReader::with_capacity(64 << 10, f))
    }

    fn read_range(&self, start: u64, max: usize) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        self.open_at(start)?.take(max as u64).read_to_end(&mut v)?;
        Ok(v)
    }
}

/// Signature of a record start in the first bytes; for files whose start
/// is damaged, the first signature found.
fn sniff_format(head: &[u8]) -> Option<Format> {
    if let Some(f) = Format::sniff(head) {
        return Some(f);
    }
    let at = |p: &[u8]| memchr::memmem::find(head, p);
    [
        (at(b"WARC/1."), Format::Warc),
        (at(b"WARC/0."), Format::Warc),
        (at(b"version:"), Format::InfoMall),
        (at(b"filedesc://"), Format::Arc),
    ]
    .into_iter()
    .filter_map(|(p, f)| p.map(|p| (p, f)))
    .min_by_key(|(p, _)| *p)
    .map(|(_, f)| f)
    .or_else(|| {
        head.split(|&b| b == b'\n')
            .any(|l| {
                warchest::arc::ArcHeader::parse_with(l, None, warchest::arc::Trust::Searching)
                    .is_some()
            })
            .then_some(Format::Arc)
    })
}

/// The first offset in `from..to` of `f` where a gzip member header that
/// parses, or a zstd frame's magic number, starts.
fn member_header_in(f: &mut File, from: u64, to: u64) -> Result<Option<u64>> {
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK];
    let mut at = from;
    while at < to {
        f.seek(SeekFrom::Start(at))?;
        let want = (to - at).min(CHUNK as u64) as usize;
        let n = read_up_to(f, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        for (i, _) in chunk
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, 0x1f | 0x28))
        {
            let here = at + i as u64;
            // The header may run past this chunk: read it on its own.
            let mut head = [0u8; 1024];
            f.seek(SeekFrom::Start(here))?;
            let m = read_up_to(f, &mut head)?;
            let h = &head[..m];
            let ok = match Codec::sniff(h) {
                Some(Codec::Gzip) => matches!(warchest::codec::parse_gzip_header(h), Ok(Some(_))),
                Some(Codec::Zstd) => true,
                _ => false,
            };
            if ok {
                return Ok(Some(here));
            }
        }
        at += n as u64;
    }
    Ok(None)
}

/// Where the first compressed member starts, when the file is compressed
/// (possibly after a damaged start).
fn compressed_start(head: &[u8]) -> Option<usize> {
    if Codec::sniff(head).is_some() {
        return Some(0);
    }
    if Format::sniff(head).is_some() {
        return None;
    }
    for (k, _) in head
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b, 0x1f | 0x28))
    {
        let s = &head[k..];
        let ok = match Codec::sniff(s) {
            Some(Codec::Gzip) => matches!(warchest::codec::parse_gzip_header(s), Ok(Some(_))),
            Some(Codec::Zstd) => s.len() >= 6,
            _ => false,
        };
        if ok {
            // A record start before it means a plain file with a payload
            // that happens to be compressed.
            let before = &head[..k];
            if sniff_format(before).is_some() {
                return None;
            }
            return Some(k);
        }
    }
    None
}

/// A write error of the temporary file the input is decompressed into,
/// naming it: a full disk there is no fault of the input or the output.
fn temp_error(e: io::Error, path: &Path) -> Error {
    Error::from(io::Error::new(
        e.kind(),
        format!("temporary file {}: {e}", path.display()),
    ))
}

fn codec_note(kind: WarningKind) -> &'static str {
    match kind {
        WarningKind::SkippedBytes => "stored bytes that are not a compressed member",
        WarningKind::TrailingGarbage => "stored bytes after the last compressed member",
        _ => "damaged compressed data",
    }
}

/// Stage 1: the input decompressed (or the input itself when plain).
fn prepare(path: &Path, report: &mut RecoverReport) -> Result<Plain> {
    let mut f = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    let mut head = Vec::new();
    (&mut f).take(1 << 20).read_to_end(&mut head)?;
    let total = f.metadata()?.len();
    let Some(k) = compressed_start(&head) else {
        return Ok(Plain {
            path: path.to_path_buf(),
            len: total,
            _temp: None,
            map: None,
            tainted: Vec::new(),
        });
    };
    report.compressed = true;
    if k > 0 {
        report.ranges.push(DamagedRange {
            start: 0,
            end: k as u64,
            decompressed: None,
            lost: Vec::new(),
            note: "stored bytes before the first compressed member".into(),
        });
    }
    let temp = tempfile::NamedTempFile::new()?;
    let (out_file, temp_path) = temp.into_parts();
    let mut out = io::BufWriter::new(out_file);
    let mut map = io::BufWriter::new(tempfile::tempfile()?);
    let mut count = 0u64;
    let mut pos = 0u64;
    let mut tainted = Vec::new();
    let mut warnings = Vec::new();
    let mut from = Some(k as u64);
    let mut dec = None;
    // Its own handle: a clone would share the decoder's file offset.
    let mut scan = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    // A damaged member can swallow the members after it: random bytes
    // inflate for a while, and on through the next members' bytes to the
    // end of the input. Such a member is cut where the first member header
    // inside it starts, and decoding starts again there.
    while let Some(at) = from.take() {
        let mut input = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
        input.seek(SeekFrom::Start(at))?;
        let opts = DecoderOptions {
            start_offset: at,
            ..DecoderOptions::default()
        };
        let d = dec.insert(Decoder::new(BufReader::new(input), opts));
        while d.next_member()? {
            // Damage between members is reported on entering the next one.
            d.drain_warnings(&mut warnings);
            for w in warnings.drain(..) {
                let end = if w.kind == WarningKind::TrailingGarbage {
                    total
                } else {
                    d.member_offset()
                };
                report.ranges.push(DamagedRange {
                    start: w.offset,
                    end,
                    decompressed: None,
                    lost: Vec::new(),
                    note: codec_note(w.kind).into(),
                });
            }
            let start = pos;
            let stored = d.member_offset();
            loop {
                let buf = d.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                let n = buf.len();
                out.write_all(buf).map_err(|e| temp_error(e, &temp_path))?;
                d.consume(n);
                pos += n as u64;
            }
            let mut end = d.member_end().unwrap_or(total);
            d.drain_warnings(&mut warnings);
            // A gzip member is one deflate stream: bytes of other members
            // can only be in it by running on.
            let ran_on = d.codec() == Codec::Gzip
                && warnings.iter().any(|w| {
                    matches!(
                        w.kind,
                        WarningKind::DamagedMember
                            | WarningKind::TruncatedMember
                            | WarningKind::BadChecksum
                    )
                });
            if ran_on && let Some(next) = member_header_in(&mut scan, stored + 1, end)? {
                end = next;
                from = Some(next);
            }
            map.write_all(&start.to_le_bytes())?;
            map.write_all(&stored.to_le_bytes())?;
            map.write_all(&end.to_le_bytes())?;
            count += 1;
            for w in warnings.drain(..) {
                match w.kind {
                    WarningKind::DamagedMember
                    | WarningKind::TruncatedMember
                    | WarningKind::BadChecksum
                        if pos == start =>
                    {
                        // Nothing came out of it, so no record will be found
                        // lost in it: the member itself is the damage.
                        report.ranges.push(DamagedRange {
                            start: stored,
                            end,
                            decompressed: None,
                            lost: Vec::new(),
                            note: codec_note(w.kind).into(),
                        })
                    }
                    WarningKind::DamagedMember
                    | WarningKind::TruncatedMember
                    | WarningKind::BadChecksum => tainted.push((start, pos.max(start + 1))),
                    WarningKind::SkippedBytes | WarningKind::TrailingGarbage if from.is_none() => {
                        report.ranges.push(DamagedRange {
                            start: w.offset,
                            end: total,
                            decompressed: None,
                            lost: Vec::new(),
                            note: codec_note(w.kind).into(),
                        })
                    }
                    _ => {}
                }
            }
            if from.is_some() {
                break;
            }
        }
    }
    let Some(mut dec) = dec else {
        return Err(Error::new(ErrorKind::Usage("no compressed member".into())));
    };
    dec.drain_warnings(&mut warnings);
    for w in warnings.drain(..) {
        if matches!(
            w.kind,
            WarningKind::SkippedBytes | WarningKind::TrailingGarbage
        ) {
            report.ranges.push(DamagedRange {
                start: w.offset,
                end: total,
                decompressed: None,
                lost: Vec::new(),
                note: codec_note(w.kind).into(),
            });
        }
    }
    out.flush().map_err(|e| temp_error(e, &temp_path))?;
    let map_file = map.into_inner().map_err(|e| Error::from(e.into_error()))?;
    Ok(Plain {
        path: temp_path.to_path_buf(),
        len: pos,
        _temp: Some(temp_path),
        map: Some((map_file, count)),
        tainted,
    })
}

/// What examining one record found.
#[derive(Debug, Clone)]
struct Verdict {
    offset: u64,
    /// Decompressed offset just past its block (before the trailer).
    body_end: u64,
    /// Decompressed offset just past its trailer.
    end: u64,
    intact: bool,
    /// Its own checksum proves its content.
    verified: bool,
    /// Its framing holds (what a chain link needs).
    framed: bool,
    reason: String,
    uri: Option<String>,
}

/// The records a confirmed start leads to must follow one another.
const MAX_GAP: u64 = 64;

struct Recovery<'a, W: Write> {
    plain: &'a Plain,
    format: Format,
    opts: &'a RecoverOptions,
    out: W,
    report: RecoverReport,
    /// Records found and not intact while searching for a start.
    pending_lost: Vec<LostRecord>,
    label: Option<PathBuf>,
}

impl<W: Write> Recovery<'_, W> {
    fn reader_at(&self, pos: u64) -> Result<AnyReader<Decoder<BufReader<File>>>> {
        let dopts = DecoderOptions {
            start_offset: pos,
            buffer_size: 256 << 10,
            ..DecoderOptions::default()
        };
        let ropts = ReaderOptions {
            file: self.label.clone(),
            decoder: dopts.clone(),
            ..ReaderOptions::lenient()
        };
        let src = Decoder::new(self.plain.open_at(pos)?, dopts);
        Ok(AnyReader::from_source_as(src, ropts, self.format))
    }

    /// True when the bytes `[from, to)` are only line ends.
    fn only_newlines(&self, from: u64, to: u64) -> Result<bool> {
        if to < from || to - from > MAX_GAP {
            return Ok(to == from);
        }
        let b = self.plain.read_range(from, (to - from) as usize)?;
        Ok(b.iter().all(|&c| c == b'\r' || c == b'\n'))
    }

    /// The verdict on the record at `offset` when reading it failed: not
    /// intact, and nothing after it holds.
    fn unreadable(&self, offset: u64, e: &warchest::Error, uri: Option<String>) -> Verdict {
        Verdict {
            offset,
            body_end: self.plain.len,
            end: self.plain.len,
            intact: false,
            verified: false,
            framed: false,
            reason: e.to_string(),
            uri,
        }
    }

    /// Reads and checks the next record of `r`.
    fn examine(&self, r: &mut AnyReader<Decoder<BufReader<File>>>) -> Result<Option<Verdict>> {
        let mut rec = match r.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) | Err(_) => return Ok(None),
        };
        let h = rec.header().clone();
        // Zeroed sectors and other overwrites put control bytes where no
        // writer puts them: in the header.
        let controls = rec
            .raw_header()
            .iter()
            .any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\r' | b'\n'));
        let loc = rec.location();
        let uri = h.target_uri().map(|u| u.into_owned());
        let mut reason = Vec::new();
        let mut verified = false;
        let mut digest_ok = true;
        let (filedesc, stored_len, compressed) = match rec.as_format() {
            AnyRecord::Arc(a) => (a.arc_header().is_some_and(|h| h.is_filedesc()), None, false),
            AnyRecord::InfoMall(i) => (false, Some(i.stored_length()), i.is_compressed()),
            _ => (false, None, false),
        };
        if self.format == Format::Warc {
            let c = match check_record(&mut rec, &warchest::Limits::default()) {
                Ok(c) => c,
                Err(e) => return Ok(Some(self.unreadable(loc.offset, &e, uri))),
            };
            verified = c.block == DigestStatus::Valid && c.payload.is_ok();
            if !c.is_ok() {
                digest_ok = false;
                reason.push("a digest does not match".to_string());
            }
        } else if let Err(e) = io::copy(&mut rec.block(), &mut io::sink()) {
            reason.push(e.to_string());
            digest_ok = false;
        }
        let end = match rec.finish() {
            Ok(e) => e,
            Err(e) => return Ok(Some(self.unreadable(loc.offset, &e, uri))),
        };
        let mut framed = true;
        let mut content_bad = false;
        for w in r.take_warnings() {
            if w.record == Some(loc.index) && is_damage(w.kind) {
                if w.kind == WarningKind::DamagedContent {
                    content_bad = true;
                } else {
                    framed = false;
                }
                reason.push(w.message);
            }
        }
        if end.truncated {
            framed = false;
            reason.push("the input ends inside it".into());
        }
        if controls && !verified {
            framed = false;
            reason.push("its header holds control bytes".into());
        }
        // Without a digest, a WARC header is all there is to go by: lost
        // bytes can join a header to the HTTP head in its block, whose
        // Content-Length then frames a record that never was. Such a header
        // has lost its id or its date.
        if self.format == Format::Warc
            && !verified
            && (!h.record_id().is_some_and(|id| id_is_whole(&id))
                || !matches!(h.date(), Some(Ok(_))))
        {
            // (An id that runs on into joined bytes is not whole.)
            framed = false;
            reason.push("its header has no whole WARC-Record-ID or no valid WARC-Date".into());
        }
        if compressed && !content_bad && framed && digest_ok {
            verified = true;
        }
        // A record that is exactly one whole compressed member, its CRC or
        // checksum valid, is proved by it as a block digest would: the
        // member boundary is its start, the checksum its bytes. (Without
        // this, the one intact record between two damaged members of a
        // record-at-a-time file had no run of records to confirm it, and
        // was neither written nor reported.)
        if !verified
            && framed
            && !content_bad
            && digest_ok
            && !end.truncated
            && let Some((ms, me)) = self.plain.member(loc.offset)?
            && ms == loc.offset
            && !self.plain.is_tainted(ms, me)
        {
            let rec_end = end.stored_len.map(|l| loc.offset + l).unwrap_or(u64::MAX);
            // Line ends left in the member after the record are its own.
            if rec_end <= me && self.only_newlines(rec_end, me)? {
                verified = true;
            }
        }
        let body_end = match (self.format, stored_len) {
            (Format::InfoMall, Some(n)) => loc.offset + loc.header_len + n,
            (Format::Arc, _) if filedesc => loc.offset + end.block_len,
            _ => loc.offset + loc.header_len + end.block_len,
        }
        .min(self.plain.len);
        let stored_end = end
            .stored_len
            .map_or(self.plain.len, |l| loc.offset + l)
            .max(body_end);
        let mut intact = framed && !content_bad && digest_ok;
        if self.format == Format::Warc && verified {
            // The block digest proves the content; a trailer or length
            // oddity does not matter then.
            intact = !end.truncated && digest_ok;
        }
        if intact && !verified && self.plain.is_tainted(loc.offset, stored_end) {
            intact = false;
            reason.push("it lies in a damaged compressed member".into());
        }
        // A block digest proves the block, not the header: a header that
        // starts in what a damaged member gave may be junk joined to the
        // next record's header.
        if intact
            && self
                .plain
                .is_tainted(loc.offset, loc.offset + loc.header_len.max(1))
        {
            intact = false;
            reason.push("its header lies in a damaged compressed member".into());
        }
        Ok(Some(Verdict {
            offset: loc.offset,
            body_end,
            end: stored_end,
            intact,
            verified,
            framed: framed || verified,
            reason: reason.join("; "),
            uri,
        }))
    }

    fn lost(&self, v: &Verdict, kept: bool) -> Result<LostRecord> {
        Ok(LostRecord {
            offset: self.plain.stored(v.offset)?.0,
            target_uri: v.uri.clone(),
            reason: v.reason.clone(),
            kept,
        })
    }

    /// Records needed after a start to confirm it, when it does not verify
    /// itself.
    fn run_needed(&self) -> usize {
        match self.format {
            Format::InfoMall => 3,
            _ => 2,
        }
    }

    /// Is `cand` a confirmed record start?
    fn confirm(&mut self, cand: u64) -> Result<bool> {
        let mut r = self.reader_at(cand)?;
        let Some(first) = self.examine(&mut r)? else {
            return Ok(false);
        };
        if first.offset != cand {
            return Ok(false);
        }
        if !first.intact {
            if first.framed || first.uri.is_some() {
                let l = self.lost(&first, false)?;
                if !self.pending_lost.iter().any(|x| x.offset == l.offset) {
                    self.pending_lost.push(l);
                }
            }
            return Ok(false);
        }
        // The start of the input is a record start by definition, as the
        // end of the input ends a run.
        if first.verified || cand == 0 {
            return Ok(true);
        }
        let need = self.run_needed();
        let mut prev_end = first.end;
        for i in 1..need {
            let Some(next) = self.examine(&mut r)? else {
                // The file ends: accept the shorter run, and say so.
                let tail = self.plain.read_range(prev_end, MAX_GAP as usize + 1)?;
                if !tail.iter().all(|&c| c == b'\r' || c == b'\n') {
                    return Ok(false);
                }
                let at = match self.plain.map {
                    Some(_) => format!(
                        "decompressed offset {cand} (member at {})",
                        self.plain.stored(cand)?.0
                    ),
                    None => format!("offset {cand}"),
                };
                self.report.notes.push(format!(
                    "the records from {at} were accepted after {i} consecutive record(s) instead of {need}: the file ends there"
                ));
                return Ok(true);
            };
            if !self.only_newlines(prev_end, next.offset)? || !next.framed {
                return Ok(false);
            }
            prev_end = next.end;
        }
        Ok(true)
    }

    /// The next confirmed start at or after `from`.
    fn find_start(&mut self, from: u64) -> Result<Option<u64>> {
        let mut at = from;
        while let Some(c) = self.next_candidate(at)? {
            if self.confirm(c)? {
                return Ok(Some(c));
            }
            at = c + 1;
        }
        Ok(None)
    }

    /// The next place at or after `from` where a record of the format may
    /// start.
    fn next_candidate(&self, from: u64) -> Result<Option<u64>> {
        const WINDOW: usize = 64 << 10;
        const OVERLAP: usize = 16 << 10;
        let mut at = from;
        loop {
            if at >= self.plain.len {
                return Ok(None);
            }
            let buf = self.plain.read_range(at, WINDOW + OVERLAP)?;
            let last = buf.len() <= WINDOW;
            let scan = buf.len().min(WINDOW);
            let found = warchest::archive::record_candidate(self.format, &buf, 0, scan);
            if let Some(p) = found {
                return Ok(Some(at + p as u64));
            }
            if last {
                return Ok(None);
            }
            at += WINDOW as u64;
        }
    }

    /// Writes the record at `[start, body_end)` and its trailer.
    fn write_record(&mut self, start: u64, body_end: u64) -> Result<()> {
        let trailer: &[u8] = match self.format {
            Format::Warc => b"\r\n\r\n",
            _ => b"\n",
        };
        let mut src = self
            .plain
            .open_at(start)?
            .take(body_end.saturating_sub(start));
        match self.opts.compression {
            OutputCompression::None => {
                io::copy(&mut src, &mut self.out)?;
                self.out.write_all(trailer)?;
            }
            OutputCompression::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(&mut self.out, flate2::Compression::default());
                io::copy(&mut src, &mut e)?;
                e.write_all(trailer)?;
                e.finish()?;
            }
            OutputCompression::Zstd => {
                let mut e = zstd::stream::write::Encoder::new(&mut self.out, 3)?;
                io::copy(&mut src, &mut e)?;
                e.write_all(trailer)?;
                e.finish()?;
            }
        }
        Ok(())
    }

    /// Reads records in sequence from the confirmed start `s`; returns where
    /// the damage that ended the sequence starts, and where to search on.
    fn extract_from(&mut self, s: u64) -> Result<Option<(u64, u64)>> {
        let mut r = self.reader_at(s)?;
        let mut prev_end = s;
        loop {
            let Some(v) = self.examine(&mut r)? else {
                // Only line ends may follow the last record.
                let tail = self.plain.read_range(prev_end, MAX_GAP as usize + 1)?;
                if prev_end < self.plain.len && !tail.iter().all(|&c| c == b'\r' || c == b'\n') {
                    return Ok(Some((prev_end, prev_end.max(s + 1))));
                }
                return Ok(None);
            };
            if v.offset != prev_end && !self.only_newlines(prev_end, v.offset)? {
                return Ok(Some((prev_end, prev_end.max(s + 1))));
            }
            if v.intact {
                self.write_record(v.offset, v.body_end)?;
                self.report.records_written += 1;
                prev_end = v.end;
                continue;
            }
            let keep = self.opts.keep_damaged;
            if keep {
                self.write_record(v.offset, v.body_end)?;
                self.report.damaged_written += 1;
            }
            let l = self.lost(&v, keep)?;
            self.pending_lost.push(l);
            return Ok(Some((v.offset, v.offset + 1)));
        }
    }

    fn close_range(&mut self, start: u64, end: u64) -> Result<()> {
        if end <= start && self.pending_lost.is_empty() {
            return Ok(());
        }
        let lost = std::mem::take(&mut self.pending_lost);
        let (s0, _) = self.plain.stored(start)?;
        let (_, e1) = if end > start {
            self.plain.stored(end - 1)?
        } else {
            self.plain.stored(start)?
        };
        let compressed = self.plain.map.is_some();
        let (s, e) = if compressed { (s0, e1) } else { (start, end) };
        let note = if lost.is_empty() {
            "bytes that are not an intact record".to_string()
        } else {
            format!("{} damaged record(s)", lost.len())
        };
        self.report.ranges.push(DamagedRange {
            start: s,
            end: e,
            decompressed: compressed.then_some((start, end)),
            lost,
            note,
        });
        Ok(())
    }

    fn run(&mut self) -> Result<()> {
        let mut pos = 0u64;
        // Start of the damage being walked through, if any.
        let mut damage: Option<u64> = None;
        loop {
            let Some(s) = self.find_start(pos)? else {
                let from = damage.unwrap_or(pos);
                let tail = self.plain.read_range(from, MAX_GAP as usize + 1)?;
                let blank = tail.iter().all(|&c| c == b'\r' || c == b'\n');
                let damaged = from < self.plain.len && (!blank || damage.is_some());
                if damaged || !self.pending_lost.is_empty() {
                    self.close_range(from, self.plain.len)?;
                }
                return Ok(());
            };
            let from = damage.take().unwrap_or(pos);
            let garbage = s > from && !self.only_newlines(from, s)?;
            if garbage || !self.pending_lost.is_empty() {
                self.close_range(from, s)?;
            }
            match self.extract_from(s)? {
                None => return Ok(()),
                Some((damage_at, next)) => {
                    damage = Some(damage_at);
                    pos = next;
                }
            }
        }
    }
}

/// Recovers the intact records of the file at `path` into `out`: same
/// format, records as stored (compressed per record as
/// [`RecoverOptions::compression`] says). See the module documentation.
///
/// # Errors
/// I/O errors; no record start at all (the format cannot be told).
pub fn recover<W: Write>(path: &Path, out: W, opts: &RecoverOptions) -> Result<RecoverReport> {
    let mut report = RecoverReport::default();
    let plain = prepare(path, &mut report)?;
    let head = plain.read_range(0, 1 << 20)?;
    let Some(format) = opts.format.or_else(|| sniff_format(&head)) else {
        return Err(Error::new(ErrorKind::Syntax(
            "no WARC, ARC or Web InfoMall record start found in the first MiB; give the format"
                .into(),
        ))
        .in_file(path));
    };
    report.format = Some(format);
    let mut rec = Recovery {
        plain: &plain,
        format,
        opts,
        out,
        report,
        pending_lost: Vec::new(),
        label: Some(path.to_path_buf()),
    };
    rec.run()?;
    rec.out.flush()?;
    let mut report = rec.report;
    report.records_lost = report
        .ranges
        .iter()
        .flat_map(|r| &r.lost)
        .filter(|l| !l.kept)
        .count() as u64;
    report.ranges.sort_by_key(|r| (r.start, r.end));
    Ok(report)
}

/// A WARC-Record-ID that is one token: a URI with no white space, in angle
/// brackets when it opens with one.
fn id_is_whole(id: &str) -> bool {
    let id = id.trim();
    !id.is_empty()
        && !id.bytes().any(|b| b.is_ascii_whitespace())
        && (!id.starts_with('<') || id.ends_with('>'))
}
