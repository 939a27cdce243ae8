//! A WARC file's CDXJ made from its records as they are written, instead
//! of reading the closed file again (decompressing it all: about 5 % of a
//! crawl's CPU).
//!
//! The recorder calls [`WrittenRows::note`] with each write's records
//! (their headers as written, their blocks or the HTTP heads of spooled
//! responses, where they went), while their writer is held. The records
//! of one write are indexed together by `warchest index`'s own indexer
//! over their uncompressed bytes in memory (so a POST request pairs with
//! its response as in the file), with each entry's offset and length set
//! to where the record went. When the file closes, [`WrittenRows::take`]
//! gives its lines, the same bytes as `warchest index` of the file, or
//! `None` when they cannot be trusted, and the file is read again:
//! a record segmented (its segments carry headers of their own), a
//! record the index would read past its head (no payload digest, a
//! request's body not at hand), or records that do not tile the file from
//! its warcinfo to its end (one written past the recorder's notice).
//! The indexing runs under the writer's lock (the rows are complete before
//! the file can close), off the file's decompression: a write's records
//! are indexed from bytes in memory.

use std::collections::HashMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use warchest::warc::{RecordType, field};
use warchest_capture::WrittenRecord;
use warchest_index::{Format, IndexOptions, IndexOutput, Indexer};

/// The rows of the files being written; see the module documentation.
#[derive(Default)]
pub(crate) struct WrittenRows {
    files: Mutex<HashMap<PathBuf, FileRows>>,
}

/// Rows of a file kept in memory up to this size, then in a temporary
/// file: a 1 GB WARC file of small pages has some 100,000 rows (40 MB).
const ROWS_IN_MEMORY: usize = 1 << 20;

struct FileRows {
    /// The CDXJ lines so far, each ended by a newline.
    lines: tempfile::SpooledTempFile,
    /// `(offset, stored length)` of every record noted.
    spans: Vec<(u64, u64)>,
    /// A record of it could not be indexed from its write (or its rows
    /// could not be kept).
    broken: bool,
}

impl Default for FileRows {
    fn default() -> Self {
        FileRows {
            lines: tempfile::SpooledTempFile::new(ROWS_IN_MEMORY),
            spans: Vec::new(),
            broken: false,
        }
    }
}

impl WrittenRows {
    /// Notes the records of one write (see [`warchest_capture::OnWritten`]).
    /// A rotation between them puts them in two files: each file's part is
    /// indexed on its own, as `warchest index` of each file does (no pair
    /// spans two writes: a request pairs with the response it is
    /// WARC-Concurrent-To).
    pub(crate) fn note(&self, recs: &[WrittenRecord<'_>]) {
        if recs.iter().any(|r| r.placed.len() != 1) {
            // Segmented: the segments carry headers of their own.
            let mut m = self.files.lock().unwrap_or_else(|p| p.into_inner());
            for p in recs.iter().flat_map(|r| r.placed) {
                m.entry(p.path.clone()).or_default().broken = true;
            }
            return;
        }
        // Indexed before the lock: the other writer's records meanwhile.
        let parts: Vec<_> = recs
            .chunk_by(|a, b| a.placed[0].path == b.placed[0].path)
            .map(|part| (part, lines_of(part, &part[0].placed[0].path)))
            .collect();
        let mut m = self.files.lock().unwrap_or_else(|p| p.into_inner());
        for (part, lines) in parts {
            let f = m.entry(part[0].placed[0].path.clone()).or_default();
            match lines {
                Some(lines) => {
                    use std::io::Write as _;
                    for l in lines {
                        if f.lines
                            .write_all(l.as_bytes())
                            .and_then(|()| f.lines.write_all(b"\n"))
                            .is_err()
                        {
                            f.broken = true;
                        }
                    }
                    f.spans.extend(
                        part.iter()
                            .map(|r| (r.placed[0].written.offset, r.placed[0].written.stored_len)),
                    );
                }
                None => f.broken = true,
            }
        }
    }

    /// The CDXJ lines of the closed file `path` (whole lines, each ended
    /// by a newline, read from where they were kept: they are not all
    /// brought into memory at once, which made the crawl's peak at its
    /// end), forgotten here; `None` when it is to be read again (see the
    /// module documentation).
    pub(crate) fn take(&self, path: &Path) -> Option<impl Read + use<>> {
        let f = self
            .files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(path)?;
        if f.broken {
            return None;
        }
        let mut spans = f.spans;
        spans.sort_unstable();
        let (first, _) = *spans.first()?;
        let (last, len) = *spans.last()?;
        if spans.windows(2).any(|w| w[0].0 + w[0].1 != w[1].0)
            || std::fs::metadata(path).ok()?.len() != last + len
        {
            return None;
        }
        // Only the file's warcinfo record before the first noted one.
        let mut r =
            warchest::archive::Reader::open_with(path, reader_options(WARCINFO_BUFFER)).ok()?;
        let info = r.next_record().ok()??;
        if info.header().record_type() != RecordType::Warcinfo || info.location().offset != 0 {
            return None;
        }
        if info.finish().ok()?.stored_len? != first {
            return None;
        }
        let mut lines = f.lines;
        lines.seek(std::io::SeekFrom::Start(0)).ok()?;
        Some(lines)
    }
}

/// The CDXJ lines of one write's records, all in the file `path`.
fn lines_of(recs: &[WrittenRecord<'_>], path: &Path) -> Option<Vec<String>> {
    let mut bytes = Vec::new();
    let mut at = HashMap::new();
    for r in recs {
        let mut h = r.header.clone();
        if !r.whole {
            // The indexer reads a request's body (POST) and computes a
            // missing payload digest: neither is at hand.
            if h.record_type() == RecordType::Request || h.get(field::PAYLOAD_DIGEST).is_none() {
                return None;
            }
            h.fields_mut()
                .set(field::CONTENT_LENGTH, r.block.len().to_string())
                .ok()?;
        }
        bytes.extend_from_slice(h.as_bytes());
        bytes.extend_from_slice(r.block);
        bytes.extend_from_slice(b"\r\n\r\n");
        let w = &r.placed[0].written;
        at.insert(h.record_id()?.into_owned(), (w.offset, w.stored_len));
    }
    let name = path.file_name()?.to_str()?;
    let mut reader =
        warchest::archive::Reader::with_options(&bytes[..], reader_options(bytes.len())).ok()?;
    let entries = Indexer::new(name, IndexOptions::default())
        .entries(&mut reader)
        .ok()?;
    let mut out = IndexOutput::new(Vec::new(), &Format::Cdxj, false).ok()?;
    for mut e in entries {
        let (offset, len) = *at.get(e.record_id.as_deref()?)?;
        e.offset = offset;
        e.length = Some(len);
        out.push(&e).ok()?;
    }
    let text = String::from_utf8(out.finish().ok()?).ok()?;
    Some(
        text.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// Options of the reader over one write's bytes: an input buffer the size
/// of those bytes, not the decoder's default 1 MiB. That buffer was zeroed
/// for every write on 50 worker threads, and glibc kept such blocks in
/// each thread's arena (up to 16 on two cores): with the rows' copies at
/// the close, 35 MiB of the crawl row's peak RSS and some 20 % of its CPU
/// (docs/crawl.md, "Memory").
fn reader_options(len: usize) -> warchest::warc::ReaderOptions {
    let mut opts = warchest::warc::ReaderOptions::default();
    opts.decoder.buffer_size = len.clamp(MIN_BUFFER, MAX_BUFFER);
    opts
}

/// The input buffer of the reader of a closed file's warcinfo record.
const WARCINFO_BUFFER: usize = 64 << 10;
/// The smallest input buffer of a write's reader.
const MIN_BUFFER: usize = 4 << 10;
/// The largest (the decoder's default): a larger write is read in pieces.
const MAX_BUFFER: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    /// A write's reader buffers about that write, not 1 MiB: the crawl
    /// zeroed 1 MiB for each of its writes (docs/crawl.md, "Memory").
    #[test]
    fn a_writes_reader_buffer_is_the_size_of_the_write() {
        let size = |len| reader_options(len).decoder.buffer_size;
        assert_eq!(size(0), MIN_BUFFER);
        assert_eq!(size(700), MIN_BUFFER);
        assert_eq!(size(30_000), 30_000);
        assert_eq!(size(50 << 20), MAX_BUFFER);
        assert!(MAX_BUFFER <= warchest::codec::DecoderOptions::default().buffer_size);
    }
}
