//! What the WARC, ARC and Web InfoMall readers share: a record being read
//! ([`Record`]) and its block as a stream ([`BlockReader`]), generic over the
//! format's reader. They are used through each format's aliases:
//! [`warc::Record`](crate::warc::Record),
//! [`arc::Record`](crate::arc::Record),
//! [`infomall::Record`](crate::infomall::Record) and their `BlockReader`s.
//!
//! Inside the crate, each reader implements a trait for how the next header
//! is read, how block bytes are handed out and what ends a record; the record
//! state machine (next record, the current block, finishing a record, fusing
//! after an error) lives here once. Everything is generic (static dispatch):
//! this is the hot path.

use std::io::{self, BufRead, Read};

use crate::codec::{Codec, Source};
use crate::error::{Error, Result};
use crate::warc::{RecordEnd, RecordLocation, WarcHeader};

pub(crate) use sealed::Framing;

// Public in a private module: no one outside the crate can name, implement
// or call it, yet it can bound the public `Record` and `BlockReader`.
mod sealed {
    use crate::error::{Error, Result};
    use crate::warc::{RecordEnd, RecordLocation, WarcHeader};

    /// A format's record framing, as the shared state machine drives it.
    pub trait Framing {
        /// Reads the next record's header (the previous record is finished).
        /// False at the end of the input.
        fn read_next(&mut self) -> Result<bool>;

        /// Where the current record is; `None` when there is none.
        fn location(&self) -> Option<RecordLocation>;

        /// Forgets the current record (after an error).
        fn drop_current(&mut self);

        /// Skips what is left of the current record's block and what ends the
        /// record, and says how it ended.
        fn finish_current(&mut self) -> Result<RecordEnd>;

        /// Makes block bytes of the current record ready (reading, inflating),
        /// which may fail.
        fn block_ready(&mut self) -> Result<()>;

        /// The block bytes made ready; empty at the block's end.
        fn block_fill(&mut self) -> Result<&[u8]>;

        /// Marks `n` bytes of the last `block_fill` as read.
        fn block_consume(&mut self, n: usize);

        /// Reads block bytes straight into `out` when the source can
        /// ([`crate::codec::Source::read_direct`]); `None` otherwise (the
        /// default), and the caller goes through `block_fill`.
        fn block_read_direct(&mut self, out: &mut [u8]) -> Result<Option<usize>> {
            let _ = out;
            Ok(None)
        }

        /// The record's header as WARC fields.
        fn view(&self) -> &WarcHeader;

        /// Stops the reader for good (after an error or the end).
        fn fuse(&mut self);

        /// True once [`Framing::fuse`] was called.
        fn is_fused(&self) -> bool;

        /// Names the reader's file in `e`.
        fn locate(&self, e: Error) -> Error;
    }
}

/// The public methods every format's `Reader<S>` has, written once for the
/// three (`warc`, `arc`, `infomall`): constructors over a `Read`, the
/// accessors and the record state machine above. `$src` is the path of the
/// reader's source among its fields; `Reader`, `Record` and `BlockReader`
/// are the calling module's.
macro_rules! reader_api {
    ($($src:ident).+) => {
        impl<R: ::std::io::Read> Reader<$crate::codec::Decoder<R>> {
            /// A lenient reader over `reader`, compression sniffed from the bytes.
            pub fn new(reader: R) -> Self {
                Reader::with_options(reader, $crate::warc::ReaderOptions::default())
            }

            /// A reader over `reader` with `opts`.
            pub fn with_options(reader: R, opts: $crate::warc::ReaderOptions) -> Self {
                let src = $crate::codec::Decoder::new(reader, opts.decoder.clone());
                Reader::from_source(src, opts)
            }
        }

        impl<S: $crate::codec::Source> Reader<S> {
            /// The source.
            pub fn get_ref(&self) -> &S {
                &self.$($src).+
            }

            /// The options.
            pub fn options(&self) -> &$crate::warc::ReaderOptions {
                &self.opts
            }

            /// Takes the warnings collected so far (lenient recoveries, each
            /// with its offset and record).
            pub fn take_warnings(&mut self) -> Vec<$crate::error::Warning> {
                let src = &mut self.$($src).+;
                self.diag.take(|w| src.drain_warnings(w))
            }

            /// Tells the source that payloads are read whole from here on
            /// ([`Source::prefer_reads`]($crate::codec::Source::prefer_reads));
            /// what is read does not change.
            ///
            /// # Errors
            /// As [`Source::prefer_reads`]($crate::codec::Source::prefer_reads).
            pub fn prefer_reads(&mut self) -> $crate::error::Result<bool> {
                $crate::codec::Source::prefer_reads(&mut self.$($src).+)
            }

            /// What the last finished record's end looked like (set when it
            /// was finished explicitly or by reading the next one).
            pub fn last_end(&self) -> Option<$crate::warc::RecordEnd> {
                self.last_end
            }

            /// Reads the next record's header; its block is then read
            /// through the returned [`Record`]. What the caller leaves
            /// unread is skipped by the next call. `Ok(None)` at the end of
            /// the input; after an error the reader is fused and returns
            /// `Ok(None)`.
            ///
            /// # Errors
            /// I/O errors, corrupt compression (strict), and in strict mode
            /// any deviation from the format's grammar; in lenient mode a
            /// header block beyond [`Limits::max_header_block`]($crate::Limits).
            pub fn next_record(&mut self) -> $crate::error::Result<Option<Record<'_, S>>> {
                $crate::framing::next_record(self)
            }

            /// The block of the record last returned by
            /// [`next_record`](Reader::next_record), from where reading
            /// stopped, when that record was dropped unfinished. Lets a type
            /// that owns the reader stream a block without holding the
            /// borrowed [`Record`].
            pub fn current_block(&mut self) -> Option<BlockReader<'_, S>> {
                $crate::framing::current_block(self)
            }

            /// Finishes the record last returned by
            /// [`next_record`](Reader::next_record) when it was dropped
            /// unfinished, as [`Record::finish`] does; `Ok(None)` when there
            /// is none.
            ///
            /// # Errors
            /// As [`Reader::next_record`].
            pub fn finish_record(
                &mut self,
            ) -> $crate::error::Result<Option<$crate::warc::RecordEnd>> {
                $crate::framing::finish_record(self)
            }
        }
    };
}
pub(crate) use reader_api;

/// Finishes the current record, if any, and reads the next header;
/// `Ok(None)` at the end of the input. After an error the reader is fused.
pub(crate) fn next_record<R: Framing>(r: &mut R) -> Result<Option<Record<'_, R>>> {
    if r.is_fused() {
        return Ok(None);
    }
    let next = if r.location().is_some() {
        r.finish_current().and_then(|_| r.read_next())
    } else {
        r.read_next()
    };
    match next {
        Ok(true) => Ok(Some(Record { reader: r })),
        Ok(false) => {
            r.fuse();
            Ok(None)
        }
        Err(e) => {
            r.fuse();
            r.drop_current();
            Err(r.locate(e))
        }
    }
}

/// The current record's block, from where reading stopped.
pub(crate) fn current_block<R: Framing>(r: &mut R) -> Option<BlockReader<'_, R>> {
    r.location()?;
    Some(BlockReader { reader: r })
}

/// Finishes the current record, if any.
pub(crate) fn finish_record<R: Framing>(r: &mut R) -> Result<Option<RecordEnd>> {
    if r.location().is_none() {
        return Ok(None);
    }
    finish(r).map(Some)
}

/// Finishes the current record; an error fuses the reader.
fn finish<R: Framing>(r: &mut R) -> Result<RecordEnd> {
    r.finish_current().map_err(|e| {
        r.fuse();
        r.locate(e)
    })
}

/// A record being read: its header, location and streamed block.
///
/// Dropping it without reading the block is fine: the next `next_record`
/// skips what is left.
pub struct Record<'r, R> {
    pub(crate) reader: &'r mut R,
}

impl<R: Framing> Record<'_, R> {
    /// The header: the WARC header block, or for ARC and Web InfoMall
    /// records the WARC header their conversion carries.
    pub fn header(&self) -> &WarcHeader {
        self.reader.view()
    }

    /// Where the record is: its offset is where its member starts in a
    /// compressed file, where its header starts in a plain one.
    pub fn location(&self) -> RecordLocation {
        self.reader.location().unwrap_or(RecordLocation {
            index: 0,
            offset: 0,
            codec: Codec::None,
            offset_in_member: 0,
            header_len: 0,
        })
    }

    /// The block, streamed from where reading stopped (for ARC the document,
    /// or for the filedesc record its line and version block; for Web
    /// InfoMall the content, decompressed). Implements [`Read`] and
    /// [`BufRead`].
    pub fn block(&mut self) -> BlockReader<'_, R> {
        BlockReader {
            reader: self.reader,
        }
    }

    /// Reads the rest of the block into memory (the caller asks for it).
    ///
    /// # Errors
    /// As reading the block.
    pub fn read_block(&mut self) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        self.block().read_to_end(&mut v).map_err(Error::from)?;
        Ok(v)
    }

    /// Skips the rest of the block and what ends the record, and says how
    /// the record ended (its stored length among others).
    ///
    /// # Errors
    /// As the reader's `next_record`.
    pub fn finish(self) -> Result<RecordEnd> {
        finish(self.reader)
    }

    /// The reader, for access to its warnings and options.
    pub fn reader(&self) -> &R {
        self.reader
    }
}

/// The block of the current record as a stream.
pub struct BlockReader<'a, R> {
    reader: &'a mut R,
}

/// The size from which a read of a record's block is a large one: a read
/// into a buffer of at least this many bytes (and with at least that many
/// left in the block) goes straight from a plain file into the caller's
/// buffer when nothing is buffered (one copy, not two), and a plain file's
/// memory map is let go for good before it, as [`Source::prefer_reads`]
/// lets it go. Smaller reads are served from the reader's buffer (or map).
///
/// Public so that a caller reading payloads whole into buffers of its own
/// (the Python binding) can tell the reader so (`prefer_reads`) from the
/// same size on as the library itself would: one threshold, not two that
/// could drift apart.
pub const DIRECT_READ: usize = 16 << 10;

impl<R: Framing> Read for BlockReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.len() >= DIRECT_READ {
            let r = &mut *self.reader;
            match r.block_read_direct(out) {
                Ok(Some(n)) => return Ok(n),
                Ok(None) => {}
                Err(e) => {
                    let e = r.locate(e);
                    r.fuse();
                    return Err(e.into());
                }
            }
        }
        read_buffered(self, out)
    }
}

impl<R: Framing> BufRead for BlockReader<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let r = &mut *self.reader;
        if let Err(e) = r.block_ready() {
            let e = r.locate(e);
            r.fuse();
            return Err(e.into());
        }
        // Made ready above: this hands out the same bytes without failing.
        r.block_fill().map_err(io::Error::from)
    }

    fn consume(&mut self, n: usize) {
        self.reader.block_consume(n);
    }
}

/// `Read::read` for a type whose reading is its `BufRead`.
pub fn read_buffered<R: BufRead + ?Sized>(r: &mut R, out: &mut [u8]) -> io::Result<usize> {
    let buf = r.fill_buf()?;
    let n = buf.len().min(out.len());
    out[..n].copy_from_slice(&buf[..n]);
    r.consume(n);
    Ok(n)
}

/// True for CR and LF.
pub(crate) fn is_line_end(b: u8) -> bool {
    b == b'\r' || b == b'\n'
}

/// Offset in the stored file of the read position, as precise as the codec
/// allows (the member start for compressed members).
pub(crate) fn stored_pos<S: Source>(src: &S) -> u64 {
    if src.codec() == Codec::None {
        src.member_offset() + src.member_pos()
    } else {
        src.member_offset()
    }
}

/// How a record read up to here ended: its stored length runs to `cut_end`
/// when its block was cut at a member end, else to the read position in a
/// plain file, or to the end of its member once that is reached; `None`
/// when the member goes on (whole-file gzip).
pub(crate) fn record_end<S: Source>(
    src: &mut S,
    loc: &RecordLocation,
    cut_end: Option<u64>,
    block_len: u64,
    truncated: bool,
) -> Result<RecordEnd> {
    let end = if let Some(e) = cut_end {
        Some(e)
    } else if src.codec() == Codec::None {
        Some(src.member_offset() + src.member_pos())
    } else if src.fill_buf()?.is_empty() {
        src.member_end()
    } else {
        None
    };
    Ok(RecordEnd {
        stored_len: end.and_then(|e| e.checked_sub(loc.offset)),
        block_len,
        truncated,
    })
}

/// Where the blank line that ends a header block ends in `chunk`: the index
/// just past its LF. `before` holds the header bytes taken from earlier
/// chunks, for a blank line that begins there. A blank line is LF, any CRs
/// (fewer than 63: CR CR LF line ends are seen), LF.
pub(crate) fn header_end(before: &[u8], chunk: &[u8]) -> Option<usize> {
    if before.is_empty()
        && let Some(end) = crlf_blank_line(chunk)
    {
        return Some(end);
    }
    header_end_by_lines(before, chunk)
}

/// [`header_end`] for the usual header (CRLF line ends, the start in
/// `chunk`) in three vector searches instead of a step per line: the
/// first LF CR LF in the first 8 KiB, when no other kind of blank line
/// (LF LF, LF CR CR ...) comes before it. `None`: not sure, look line by
/// line.
fn crlf_blank_line(chunk: &[u8]) -> Option<usize> {
    use memchr::memmem::Finder;
    static FINDERS: std::sync::LazyLock<[Finder<'static>; 3]> = std::sync::LazyLock::new(|| {
        [
            Finder::new(b"\n\r\n"),
            Finder::new(b"\n\n"),
            Finder::new(b"\n\r\r"),
        ]
    });
    let [crlf, lf, crcr] = &*FINDERS;
    let scan = chunk.get(..chunk.len().min(8192))?;
    let p = crlf.find(scan)?;
    let earlier_lf = lf.find(scan.get(..p + 1)?).is_some();
    let earlier_crcr = crcr.find(scan.get(..p + 2)?).is_some();
    (!earlier_lf && !earlier_crcr).then_some(p + 3)
}

/// [`header_end`] line by line.
fn header_end_by_lines(before: &[u8], chunk: &[u8]) -> Option<usize> {
    for nl in memchr::memchr_iter(b'\n', chunk) {
        // Byte k places before chunk[nl], looking into `before` when needed.
        let at = |k: usize| -> Option<u8> {
            if nl >= k {
                Some(chunk[nl - k])
            } else {
                before.len().checked_sub(k - nl).map(|i| before[i])
            }
        };
        let mut k = 1;
        while at(k) == Some(b'\r') {
            k += 1;
        }
        if k < 64 && at(k) == Some(b'\n') {
            return Some(nl + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{header_end, header_end_by_lines};

    /// 1 to `most` of `pieces`, picked by a linear congruential step of
    /// `seed` (repeatable, no dependency), joined.
    fn mix(pieces: &[&[u8]], seed: &mut u64, most: u64) -> Vec<u8> {
        let mut v = Vec::new();
        for _ in 0..1 + *seed % most {
            *seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1442695040888963407);
            v.extend_from_slice(pieces[(*seed >> 33) as usize % pieces.len()]);
        }
        v
    }

    /// The vector search and the line-by-line one agree on every mix of
    /// line ends, split anywhere.
    #[test]
    fn header_end_fast_path_agrees_with_the_line_walk() {
        let pieces: [&[u8]; 8] = [
            b"WARC/1.1",
            b"\r\n",
            b"\n",
            b"\r",
            b"A: b",
            b"\r\r\n",
            b"x",
            b"\r\n\r\n",
        ];
        let mut seed = 1u64;
        for _ in 0..20_000 {
            let v = mix(&pieces, &mut seed, 12);
            let cut = (seed >> 40) as usize % (v.len() + 1);
            let (before, chunk) = v.split_at(cut);
            assert_eq!(
                header_end(before, chunk),
                header_end_by_lines(before, chunk),
                "{:?}",
                String::from_utf8_lossy(&v)
            );
            assert_eq!(header_end(&[], &v), header_end_by_lines(&[], &v));
        }
        // Long runs of CRs are no blank line.
        let mut v = b"A: b\n".to_vec();
        v.extend([b'\r'; 70]);
        v.extend(b"\nB: c\r\n\r\n");
        assert_eq!(header_end(&[], &v), Some(v.len()));
    }

    /// The one-walk parse of a header in the buffer gives what finding its
    /// end and parsing a copy gives: the same end, fields and issues.
    #[test]
    fn header_parsed_in_place_agrees_with_end_then_parse() {
        use crate::fields::Fields;
        use crate::leniency::Leniency;
        let pieces: [&[u8]; 10] = [
            b"WARC/1.1",
            b"\r\n",
            b"\n",
            b"\r",
            b"A: b",
            b"\r\r\n",
            b" x",
            b"\r\n\r\n",
            b"no colon",
            b"Bad Name : v",
        ];
        let mut seed = 7u64;
        let mut in_place = 0;
        for _ in 0..20_000 {
            let v = mix(&pieces, &mut seed, 14);
            for (lenient, strict) in [(Leniency::lenient(), false), (Leniency::strict(), true)] {
                let mut fast = Fields::new();
                let mut fast_issues = Vec::new();
                let Some(n) =
                    fast.parse_block_in(&v, &lenient, usize::MAX, usize::MAX, &mut fast_issues)
                else {
                    continue;
                };
                in_place += 1;
                let what = String::from_utf8_lossy(&v);
                assert_eq!(header_end(&[], &v), Some(n), "{what:?}");
                let first_nl = memchr::memchr(b'\n', &v).unwrap_or(v.len());
                let mut issues = Vec::new();
                let slow = Fields::parse(
                    v[..n].to_vec(),
                    first_nl + 1,
                    strict,
                    usize::MAX,
                    &mut issues,
                )
                .expect("the general parse fails where the walk did not");
                assert_eq!(fast, slow, "{what:?}");
                assert_eq!(fast_issues, issues, "{what:?}");
            }
        }
        assert!(in_place > 5_000, "{in_place}");
    }
}
