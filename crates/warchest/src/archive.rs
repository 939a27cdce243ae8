//! Any web archive, its format sniffed from the first decompressed bytes.
//!
//! Commands that work on every format (ls, extract, index, stats, check)
//! read through [`Reader`]: every record, whatever its format, is seen as a
//! WARC header (for ARC and Web InfoMall records, the header their
//! conversion to WARC would carry: the mapping lives in their modules) plus
//! a streamed block. Format-specific readers stay available for what only
//! one format has.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

use crate::codec::{Decoder, Source};
use crate::error::{Error, Result, Warning};
use crate::fields::Fields;
use crate::warc::{self, ReaderOptions, RecordEnd, RecordLocation, WarcHeader};
use crate::{arc, infomall};

/// The formats warchest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum Format {
    /// WARC, any version.
    Warc,
    /// ARC v1 or v2 (Internet Archive).
    Arc,
    /// Web InfoMall (Tianwang) page storage.
    InfoMall,
}

impl Format {
    /// Sniffs the format from the first decompressed bytes of a file
    /// (leading white space skipped). `None` when no format is recognised.
    /// An ARC file without its filedesc record is recognised by a first
    /// line that is a URL-record line.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
        let b = &bytes[start..];
        let starts = |p: &[u8]| b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p);
        if starts(b"WARC/") {
            Some(Format::Warc)
        } else if starts(b"filedesc://") {
            Some(Format::Arc)
        } else if starts(b"version:") {
            Some(Format::InfoMall)
        } else {
            let line_end = b.iter().position(|&c| c == b'\n')?;
            // As sure as when searching through damage: a numeric date and
            // length, not just five words.
            arc::ArcHeader::parse_with(&b[..=line_end], None, arc::Trust::Searching)
                .map(|_| Format::Arc)
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Warc => "warc",
            Format::Arc => "arc",
            Format::InfoMall => "infomall",
        }
    }
}

// Boxed: the readers differ in size by hundreds of bytes.
enum Inner<S> {
    Warc(Box<warc::Reader<S>>),
    Arc(Box<arc::Reader<S>>),
    InfoMall(Box<infomall::Reader<S>>),
}

/// Reads records of any format.
pub struct Reader<S> {
    inner: Inner<S>,
    format: Format,
}

impl<R: Read> Reader<Decoder<R>> {
    /// A lenient reader over `reader`, compression and format sniffed.
    ///
    /// # Errors
    /// Reading the first bytes failed.
    pub fn new(reader: R) -> Result<Self> {
        Reader::with_options(reader, ReaderOptions::default())
    }

    /// A reader over `reader` with `opts`.
    ///
    /// # Errors
    /// Reading the first bytes failed.
    pub fn with_options(reader: R, opts: ReaderOptions) -> Result<Self> {
        let src = Decoder::new(reader, opts.decoder.clone());
        Reader::from_source(src, opts)
    }
}

impl Reader<Decoder<File>> {
    /// Opens the file at `path` for lenient reading.
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Reader::open_with(path, ReaderOptions::default())
    }

    /// Opens the file at `path` with `opts` (its file name filled in).
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn open_with(path: impl AsRef<Path>, opts: ReaderOptions) -> Result<Self> {
        let (f, opts) = warc::open_file(path.as_ref(), opts)?;
        // Seekable: skipped payloads of plain files are sought past.
        let src = Decoder::new_file(f, opts.decoder.clone())
            .map_err(|e| Error::from(e).in_file(path.as_ref()))?;
        Reader::from_source(src, opts)
    }
}

impl<S: Source> Reader<S> {
    /// A reader over a source; the format is sniffed from its first bytes
    /// (WARC when nothing is recognised: the WARC reader then reports what
    /// it skips).
    ///
    /// # Errors
    /// Reading the first bytes failed.
    pub fn from_source(mut src: S, opts: ReaderOptions) -> Result<Self> {
        let file = opts.file.clone();
        let locate = |e: Error| match &file {
            Some(f) => e.in_file(f),
            None => e,
        };
        let format = Format::sniff(src.fill_buf().map_err(locate)?).unwrap_or(Format::Warc);
        let inner = match format {
            Format::Arc => Inner::Arc(Box::new(arc::Reader::from_source(src, opts))),
            Format::InfoMall => Inner::InfoMall(Box::new(infomall::Reader::from_source(src, opts))),
            Format::Warc => Inner::Warc(Box::new(warc::Reader::from_source(src, opts))),
        };
        Ok(Reader { inner, format })
    }

    /// A reader over a source whose format is known (no sniffing): used
    /// where reading starts at an arbitrary offset, as recovery does.
    pub fn from_source_as(src: S, opts: ReaderOptions, format: Format) -> Self {
        let inner = match format {
            Format::Arc => Inner::Arc(Box::new(arc::Reader::from_source(src, opts))),
            Format::InfoMall => Inner::InfoMall(Box::new(infomall::Reader::from_source(src, opts))),
            Format::Warc => Inner::Warc(Box::new(warc::Reader::from_source(src, opts))),
        };
        Reader { inner, format }
    }

    /// The format of the file.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The next record; what the caller leaves unread of the previous one is
    /// skipped. `Ok(None)` at the end.
    ///
    /// # Errors
    /// As [`warc::Reader::next_record`] and its peers.
    pub fn next_record(&mut self) -> Result<Option<Record<'_, S>>> {
        match &mut self.inner {
            Inner::Warc(r) => Ok(r.next_record()?.map(Record::Warc)),
            Inner::Arc(r) => Ok(r.next_record()?.map(Record::Arc)),
            Inner::InfoMall(r) => Ok(r.next_record()?.map(Record::InfoMall)),
        }
    }

    /// The warnings collected so far.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        match &mut self.inner {
            Inner::Warc(r) => r.take_warnings(),
            Inner::Arc(r) => r.take_warnings(),
            Inner::InfoMall(r) => r.take_warnings(),
        }
    }

    /// The block of the record last returned by
    /// [`next_record`](Reader::next_record), from where reading stopped,
    /// when that record was dropped unfinished: lets a type that owns the
    /// reader (a Python iterator) stream a block without holding the
    /// borrowed [`Record`]. `None` when there is no such record.
    pub fn current_block(&mut self) -> Option<Block<'_, S>> {
        match &mut self.inner {
            Inner::Warc(r) => r.current_block().map(Block::Warc),
            Inner::Arc(r) => r.current_block().map(Block::Arc),
            Inner::InfoMall(r) => r.current_block().map(Block::InfoMall),
        }
    }

    /// Finishes the record last returned by
    /// [`next_record`](Reader::next_record) when it was dropped unfinished
    /// (skipping what is left of it) and says how it ended; `Ok(None)` when
    /// there is no such record.
    ///
    /// # Errors
    /// As [`Record::finish`].
    pub fn finish_record(&mut self) -> Result<Option<RecordEnd>> {
        match &mut self.inner {
            Inner::Warc(r) => r.finish_record(),
            Inner::Arc(r) => r.finish_record(),
            Inner::InfoMall(r) => r.finish_record(),
        }
    }

    /// The WARC reader, when the file is WARC.
    pub fn as_warc(&mut self) -> Option<&mut warc::Reader<S>> {
        match &mut self.inner {
            Inner::Warc(r) => Some(r.as_mut()),
            _ => None,
        }
    }

    /// The ARC reader, when the file is ARC.
    pub fn as_arc(&mut self) -> Option<&mut arc::Reader<S>> {
        match &mut self.inner {
            Inner::Arc(r) => Some(r.as_mut()),
            _ => None,
        }
    }

    /// The Web InfoMall reader, when the file is Web InfoMall.
    pub fn as_infomall(&mut self) -> Option<&mut infomall::Reader<S>> {
        match &mut self.inner {
            Inner::InfoMall(r) => Some(r.as_mut()),
            _ => None,
        }
    }
}

/// A record of any format.
#[non_exhaustive]
pub enum Record<'r, S> {
    /// A WARC record.
    Warc(warc::Record<'r, S>),
    /// An ARC record.
    Arc(arc::Record<'r, S>),
    /// A Web InfoMall record.
    InfoMall(infomall::Record<'r, S>),
}

impl<S: Source> Record<'_, S> {
    /// The record's header as WARC fields (for ARC and InfoMall, the header
    /// its WARC conversion carries).
    pub fn header(&self) -> &WarcHeader {
        match self {
            Record::Warc(r) => r.header(),
            Record::Arc(r) => r.header(),
            Record::InfoMall(r) => r.header(),
        }
    }

    /// The record's header as stored: the WARC header block, the ARC
    /// URL-record line, the Web InfoMall properties.
    pub fn raw_header(&self) -> &[u8] {
        match self {
            Record::Warc(r) => r.header().as_bytes(),
            Record::Arc(r) => r.raw_header(),
            Record::InfoMall(r) => r.raw_header(),
        }
    }

    /// What the source record holds that its WARC header does not (ARC v2
    /// fields, Web InfoMall `origin` and unknown properties...): conversion
    /// to WARC writes them into a metadata record. Empty for WARC records.
    pub fn leftovers(&self) -> Fields {
        match self {
            Record::Warc(_) => Fields::new(),
            Record::Arc(r) => r.leftovers().clone(),
            Record::InfoMall(r) => r.infomall_header().leftovers(),
        }
    }

    /// Where the record is.
    pub fn location(&self) -> RecordLocation {
        match self {
            Record::Warc(r) => r.location(),
            Record::Arc(r) => r.location(),
            Record::InfoMall(r) => r.location(),
        }
    }

    /// The source the record is read from: for a [`Decoder`], the member
    /// the reader is in (a validator reads the gzip header of the member a
    /// record starts). Reading from it would desynchronise the reader.
    pub fn source(&self) -> &S {
        match self {
            Record::Warc(r) => r.reader().get_ref(),
            Record::Arc(r) => r.reader().get_ref(),
            Record::InfoMall(r) => r.reader().get_ref(),
        }
    }

    /// The format of the record.
    pub fn format(&self) -> Format {
        match self {
            Record::Warc(_) => Format::Warc,
            Record::Arc(_) => Format::Arc,
            Record::InfoMall(_) => Format::InfoMall,
        }
    }

    /// The block, streamed.
    pub fn block(&mut self) -> Block<'_, S> {
        match self {
            Record::Warc(r) => Block::Warc(r.block()),
            Record::Arc(r) => Block::Arc(r.block()),
            Record::InfoMall(r) => Block::InfoMall(r.block()),
        }
    }

    /// Reads the rest of the block into memory.
    ///
    /// # Errors
    /// As reading the block.
    pub fn read_block(&mut self) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        self.block().read_to_end(&mut v).map_err(Error::from)?;
        Ok(v)
    }

    /// Skips what is left and says how the record ended.
    ///
    /// # Errors
    /// As reading the block.
    pub fn finish(self) -> Result<RecordEnd> {
        match self {
            Record::Warc(r) => r.finish(),
            Record::Arc(r) => r.finish(),
            Record::InfoMall(r) => r.finish(),
        }
    }
}

/// The block of a record of any format.
#[non_exhaustive]
pub enum Block<'a, S> {
    /// A WARC block.
    Warc(warc::BlockReader<'a, S>),
    /// An ARC document.
    Arc(arc::BlockReader<'a, S>),
    /// A Web InfoMall record's content, decompressed.
    InfoMall(infomall::BlockReader<'a, S>),
}

impl<S: Source> Read for Block<'_, S> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self {
            Block::Warc(b) => b.read(out),
            Block::Arc(b) => b.read(out),
            Block::InfoMall(b) => b.read(out),
        }
    }
}

impl<S: Source> BufRead for Block<'_, S> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Block::Warc(b) => b.fill_buf(),
            Block::Arc(b) => b.fill_buf(),
            Block::InfoMall(b) => b.fill_buf(),
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            Block::Warc(b) => b.consume(n),
            Block::Arc(b) => b.consume(n),
            Block::InfoMall(b) => b.consume(n),
        }
    }
}

/// The first place in `buf[from..scan]` where a record of `format` may
/// start (an index into `buf`): `WARC/<digit>` in any letter case (as the
/// reader takes a version line), `version:`, or a line that parses as an
/// ARC URL-record line (at a line start, or a URL inside a damaged line).
/// Bytes of `buf` past `scan` are look-ahead for a candidate near the end,
/// and `buf[..from]` look-behind for the line-start test. Used by recovery
/// and by byte-range splits (`split`), so that both search alike.
pub fn record_candidate(format: Format, buf: &[u8], from: usize, scan: usize) -> Option<usize> {
    // An ARC header line is looked for within this many bytes.
    const LINE_MAX: usize = 16 << 10;
    let scan = scan.min(buf.len());
    if from >= scan {
        return None;
    }
    match format {
        Format::Warc => memchr::memchr2_iter(b'W', b'w', &buf[from..scan])
            .map(|p| p + from)
            .find(|&p| {
                buf.get(p..p + 5)
                    .is_some_and(|w| w.eq_ignore_ascii_case(b"WARC/"))
                    && buf.get(p + 5).is_some_and(u8::is_ascii_digit)
            }),
        Format::InfoMall => {
            memchr::memmem::find(&buf[from..(scan + 7).min(buf.len())], b"version:")
                .map(|p| p + from)
                .filter(|&p| p < scan)
        }
        Format::Arc => (from..scan).find(|&p| {
            let rest = &buf[p..];
            if !rest[0].is_ascii_alphabetic() {
                return false;
            }
            let line_start = p == 0 || buf[p - 1] == b'\n';
            let url = [&b"http:"[..], b"https:", b"dns:", b"ftp:", b"filedesc:"]
                .iter()
                .any(|s| rest.starts_with(s));
            if !line_start && !url {
                return false;
            }
            let Some(nl) = memchr::memchr(b'\n', &rest[..rest.len().min(LINE_MAX)]) else {
                return false;
            };
            arc::ArcHeader::parse_with(&rest[..=nl], None, arc::Trust::Searching).is_some()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_formats() {
        assert_eq!(Format::sniff(b"WARC/1.0\r\n"), Some(Format::Warc));
        assert_eq!(Format::sniff(b"\r\nwarc/1.0\r\n"), Some(Format::Warc));
        assert_eq!(
            Format::sniff(b"filedesc://x.arc 0.0.0.0 2005 text/plain 70\n"),
            Some(Format::Arc)
        );
        assert_eq!(
            Format::sniff(b"version: 1.0\nurl: http://a/\n"),
            Some(Format::InfoMall)
        );
        assert_eq!(
            Format::sniff(b"http://a/ 1.2.3.4 20140216050221 text/html 10\nHTTP/1.0"),
            Some(Format::Arc)
        );
        assert_eq!(Format::sniff(b"<html>"), None);
        assert_eq!(Format::sniff(b""), None);
    }

    #[test]
    fn streams_the_current_block_without_the_record() {
        let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n\
WARC/1.1\r\nWARC-Type: metadata\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
        let mut r = Reader::new(&data[..]).unwrap();
        assert!(r.current_block().is_none());
        assert!(r.next_record().unwrap().is_some());
        let mut two = [0u8; 2];
        r.current_block().unwrap().read_exact(&mut two).unwrap();
        assert_eq!(&two, b"he");
        let end = r.finish_record().unwrap().unwrap();
        assert_eq!(end.block_len, 5);
        assert_eq!(end.stored_len, Some(61));
        assert!(r.current_block().is_none());
        assert!(r.finish_record().unwrap().is_none());
        let mut rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.location().offset, 61);
        assert_eq!(rec.read_block().unwrap(), b"hi");
    }

    #[test]
    fn reads_warc_through_the_generic_reader() {
        let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
        let mut r = Reader::new(&data[..]).unwrap();
        assert_eq!(r.format(), Format::Warc);
        let mut rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.read_block().unwrap(), b"hi");
        assert_eq!(rec.finish().unwrap().stored_len, Some(data.len() as u64));
        assert!(r.next_record().unwrap().is_none());
    }
}
