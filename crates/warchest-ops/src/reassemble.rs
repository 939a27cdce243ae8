//! Segmented records put back together (WARC 1.1 section 7): "the content
//! blocks of all records with the same WARC-Segment-Origin-ID value are
//! collected and appended, in WARC-Segment-Number order, to the origin
//! record's content block. The resulting assembled record adopts as its
//! Content-Length the WARC-Segment-Total-Length value. It also adopts any
//! WARC-Truncated reason of the final segment."
//!
//! [`Segments::scan`] reads the headers of the files given (blocks are
//! skipped) and groups the segments by origin; [`Segments::open`] streams
//! the logical record's block segment by segment, file by file, and checks
//! the payload digest of the whole (the origin segment carries it) as the
//! bytes pass. Memory stays bounded whatever the record's size.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use warchest::io::read_up_to;

use warchest::Limits;
use warchest::check::{Checker, DigestStatus, RecordCheck};
use warchest::codec::{Decoder, DecoderOptions};
use warchest::digest::{Algorithm, Digest, Hasher};
use warchest::error::{Error, ErrorKind, Result};
use warchest::warc::{self, ReaderOptions, RecordType, TruncatedReason, WarcHeader, field};

/// One segment of a series: where it is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRef {
    /// The file.
    pub file: PathBuf,
    /// Its offset as stored.
    pub offset: u64,
    /// Its WARC-Segment-Number.
    pub number: u64,
    /// Its block length (Content-Length).
    pub block_len: u64,
    /// Its WARC-Record-ID.
    pub record_id: String,
}

/// The segments of one logical record found so far.
#[derive(Debug, Clone)]
pub struct Series {
    /// The record id of the first segment (WARC-Segment-Origin-ID of the
    /// others).
    pub origin_id: String,
    /// The first segment and its header, once found.
    pub origin: Option<(SegmentRef, WarcHeader)>,
    /// The continuation records, in segment number order.
    pub continuations: Vec<SegmentRef>,
    /// WARC-Segment-Total-Length of the last segment, once found.
    pub total_length: Option<u64>,
    /// WARC-Truncated of the last segment.
    pub truncated: Option<TruncatedReason>,
}

impl Series {
    /// Why the series cannot be reassembled, or `Ok` when it is whole:
    /// the origin and segments 2..=n present once each, a total length on
    /// the last that equals the sum of the blocks.
    ///
    /// # Errors
    /// A message naming what is missing or inconsistent.
    pub fn complete(&self) -> std::result::Result<(), String> {
        if self.origin.is_none() {
            return Err(format!("origin segment {} not found", self.origin_id));
        }
        for (i, c) in self.continuations.iter().enumerate() {
            let want = i as u64 + 2;
            if c.number != want {
                return Err(if c.number > want {
                    format!("segment {want} of {} not found", self.origin_id)
                } else {
                    format!("segment {} of {} appears twice", c.number, self.origin_id)
                });
            }
        }
        let Some(total) = self.total_length else {
            return Err(format!(
                "last segment of {} (with WARC-Segment-Total-Length) not found",
                self.origin_id
            ));
        };
        let sum: u64 = self.parts().map(|p| p.block_len).sum();
        if sum != total {
            return Err(format!(
                "segments of {} hold {sum} bytes, WARC-Segment-Total-Length says {total}",
                self.origin_id
            ));
        }
        Ok(())
    }

    /// Every segment in order, the origin first.
    pub fn parts(&self) -> impl Iterator<Item = &SegmentRef> {
        self.origin
            .iter()
            .map(|(r, _)| r)
            .chain(&self.continuations)
    }

    /// The logical record's header: the origin's, with Content-Length the
    /// total length, the segment number and the origin's block digest
    /// removed, and the last segment's WARC-Truncated.
    pub fn logical_header(&self) -> Option<WarcHeader> {
        let (_, h) = self.origin.as_ref()?;
        let mut h = h.clone();
        let total = self
            .total_length
            .unwrap_or_else(|| self.parts().map(|p| p.block_len).sum());
        {
            let mut f = h.fields_mut();
            f.remove(field::SEGMENT_NUMBER);
            f.remove(field::BLOCK_DIGEST);
            f.remove(field::TRUNCATED);
            if let Some(t) = &self.truncated {
                let _ = f.set(field::TRUNCATED, t.as_str());
            }
            let _ = f.set(field::CONTENT_LENGTH, total.to_string());
        }
        Some(h)
    }
}

/// Segment series found in a set of files.
#[derive(Debug, Default)]
pub struct Segments {
    series: Vec<Series>,
    by_origin: HashMap<String, usize>,
}

impl Segments {
    /// Reads the headers of every record of `files` and groups the
    /// segments.
    ///
    /// # Errors
    /// A file cannot be read.
    pub fn scan<P: AsRef<Path>>(files: &[P]) -> Result<Segments> {
        let mut s = Segments::default();
        for f in files {
            s.add_file(f.as_ref())?;
        }
        Ok(s)
    }

    /// Adds the segments of one more file. Its recoveries are not handed
    /// over: `reassemble` and `unpack` read each file again, record by
    /// record, and report them there (handing them here too would count
    /// each twice).
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        let mut r = warc::Reader::open(path)?;
        while let Some(rec) = r.next_record()? {
            let h = rec.header();
            let is_cont = h.record_type() == RecordType::Continuation;
            let number = h.segment_number();
            if !is_cont && number.is_none() {
                continue;
            }
            let id = h
                .record_id()
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            let r = SegmentRef {
                file: path.to_path_buf(),
                offset: rec.location().offset,
                number: number.flatten().unwrap_or(0),
                block_len: h.content_length().unwrap_or(0),
                record_id: id.clone(),
            };
            if is_cont {
                let origin = h
                    .segment_origin_id()
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default();
                let total = h.segment_total_length().flatten();
                let truncated = h.truncated();
                let s = self.entry(&origin);
                if let Some(t) = total {
                    s.total_length = Some(t);
                    s.truncated = truncated;
                }
                let at = s.continuations.partition_point(|c| c.number <= r.number);
                s.continuations.insert(at, r);
            } else {
                let h = h.clone();
                let s = self.entry(&id);
                if s.origin.is_none() {
                    s.origin = Some((r, h));
                }
            }
        }
        Ok(())
    }

    fn entry(&mut self, origin: &str) -> &mut Series {
        let i = *self.by_origin.entry(origin.to_string()).or_insert_with(|| {
            self.series.push(Series {
                origin_id: origin.to_string(),
                origin: None,
                continuations: Vec::new(),
                total_length: None,
                truncated: None,
            });
            self.series.len() - 1
        });
        &mut self.series[i]
    }

    /// The series of an origin record id.
    pub fn get(&self, origin_id: &str) -> Option<&Series> {
        self.by_origin
            .get(origin_id.trim())
            .map(|&i| &self.series[i])
    }

    /// Every series, in the order their first segment was met.
    pub fn iter(&self) -> impl Iterator<Item = &Series> {
        self.series.iter()
    }

    /// True when no segment was found.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The logical record of `origin_id`, its block streamed from the
    /// segments.
    ///
    /// # Errors
    /// The series is unknown or incomplete ([`Series::complete`]).
    pub fn open(&self, origin_id: &str) -> Result<LogicalRecord> {
        let s = self.get(origin_id).ok_or_else(|| {
            Error::new(ErrorKind::Usage(format!(
                "no segments of {origin_id} found"
            )))
        })?;
        s.complete().map_err(|m| Error::new(ErrorKind::Syntax(m)))?;
        let header = s.logical_header().ok_or_else(|| {
            Error::new(ErrorKind::Syntax(format!(
                "origin of {origin_id} not found"
            )))
        })?;
        Ok(LogicalRecord::new(header, s.parts().cloned().collect()))
    }
}

/// Opens a reader positioned at the record at `offset` of `path`. A zstd
/// dictionary frame at the start of the file is loaded first, so that
/// records of `.warc.zst` files with a dictionary can be read in place.
///
/// # Errors
/// The file cannot be opened or read.
pub fn open_at(path: &Path, offset: u64) -> Result<warc::Reader<Decoder<File>>> {
    let locate = |e: io::Error| Error::from(e).in_file(path);
    let mut f = File::open(path).map_err(locate)?;
    let mut opts = ReaderOptions::default().file(path);
    if offset > 0 {
        let mut head = [0u8; 8];
        let n = read_up_to(&mut f, &mut head).map_err(locate)?;
        if n == 8 && head[..4] == 0x184D_2A5Du32.to_le_bytes() {
            let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
            if len <= opts.decoder.max_zstd_dictionary_size {
                let mut dict = vec![0u8; len];
                if read_up_to(&mut f, &mut dict).map_err(locate)? == len {
                    opts.decoder.zstd_dictionary = Some(dict);
                }
            }
        }
    }
    f.seek(SeekFrom::Start(offset)).map_err(locate)?;
    opts.decoder = DecoderOptions {
        start_offset: offset,
        ..opts.decoder
    };
    Ok(warc::Reader::with_options(f, opts))
}

/// A reassembled record: the logical header and its block, read segment
/// after segment. Reading checks each segment's length and, at the end,
/// the payload digest of the whole: a mismatch is an `InvalidData` error
/// from the last `read`, so a copy never ends silently wrong.
pub struct LogicalRecord {
    header: WarcHeader,
    parts: Vec<SegmentRef>,
    next: usize,
    cur: Option<(Box<warc::Reader<Decoder<File>>>, u64)>,
    checker: Option<Checker>,
    block: Hasher,
    result: Option<RecordCheck>,
    read: u64,
}

impl LogicalRecord {
    fn new(header: WarcHeader, parts: Vec<SegmentRef>) -> Self {
        let alg = header
            .parsed_payload_digest()
            .and_then(|d| d.ok())
            .and_then(|d| d.algorithm())
            .unwrap_or(Algorithm::Sha1);
        LogicalRecord {
            checker: Some(Checker::new(&header, &Limits::default())),
            header,
            parts,
            next: 0,
            cur: None,
            block: Hasher::new(alg),
            result: None,
            read: 0,
        }
    }

    /// The logical header (see [`Series::logical_header`]).
    pub fn header(&self) -> &WarcHeader {
        &self.header
    }

    /// Where its segments are.
    pub fn parts(&self) -> &[SegmentRef] {
        &self.parts
    }

    /// The digest check of the whole, once the block has been read to its
    /// end.
    pub fn check(&self) -> Option<&RecordCheck> {
        self.result.as_ref()
    }

    /// The block digest of the whole, once the block has been read to its
    /// end (in the payload digest's algorithm, sha1 when it has none).
    pub fn block_digest(&self) -> Option<Digest> {
        self.result.as_ref()?;
        let h = self.block.clone();
        Some(Digest::new(h.algorithm(), &h.finalize()))
    }

    /// Reads the whole block to `sink`, and returns the check.
    ///
    /// # Errors
    /// A segment cannot be read, or the payload digest does not match.
    pub fn copy_to(&mut self, sink: &mut impl io::Write) -> Result<RecordCheck> {
        io::copy(self, sink)?;
        self.result
            .clone()
            .ok_or_else(|| Error::new(ErrorKind::Usage("block not read to its end".into())))
    }

    fn open_next(&mut self) -> io::Result<bool> {
        let Some(part) = self.parts.get(self.next) else {
            return Ok(false);
        };
        self.next += 1;
        let mut r = open_at(&part.file, part.offset)?;
        let found = r.next_record()?.map(|rec| {
            (
                rec.location().offset,
                rec.header().record_id().map(|s| s.trim().to_string()),
            )
        });
        match found {
            Some((off, Some(id))) if off == part.offset && id == part.record_id => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: segment {} ({}) not found at offset {}",
                        part.file.display(),
                        part.number,
                        part.record_id,
                        part.offset
                    ),
                ));
            }
        }
        self.cur = Some((Box::new(r), part.block_len));
        Ok(true)
    }

    fn finish(&mut self) -> io::Result<()> {
        let Some(c) = self.checker.take() else {
            return Ok(());
        };
        let result = c.finish();
        let bad = match &result.payload {
            DigestStatus::Invalid { recorded, computed } => Some(format!(
                "payload digest of reassembled {} is {computed}, WARC-Payload-Digest says {recorded}",
                self.header.record_id().unwrap_or_default()
            )),
            _ => None,
        };
        self.result = Some(result);
        match bad {
            Some(m) => Err(io::Error::new(io::ErrorKind::InvalidData, m)),
            None => Ok(()),
        }
    }
}

impl Read for LogicalRecord {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.cur.is_none() && !self.open_next()? {
                self.finish()?;
                return Ok(0);
            }
            let Some((reader, left)) = self.cur.as_mut() else {
                continue;
            };
            let Some(mut block) = reader.current_block() else {
                self.cur = None;
                continue;
            };
            let buf = block.fill_buf()?;
            if buf.is_empty() {
                if *left > 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "segment {} of {} ends {left} bytes before its Content-Length",
                            self.next,
                            self.header.record_id().unwrap_or_default()
                        ),
                    ));
                }
                self.cur = None;
                continue;
            }
            let n = buf.len().min(out.len());
            out[..n].copy_from_slice(&buf[..n]);
            block.consume(n);
            *left = left.saturating_sub(n as u64);
            self.block.update(&out[..n]);
            if let Some(c) = &mut self.checker {
                c.update(&out[..n]);
            }
            self.read += n as u64;
            return Ok(n);
        }
    }
}
