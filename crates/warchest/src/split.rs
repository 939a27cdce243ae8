//! Byte-range splits of uncompressed archives: where records start after
//! an arbitrary offset, so that a large file can be read by several tasks
//! at once (the Spark data source's `splitSize`).
//!
//! A range `[start, end)` of a file gives the records from the first
//! *record boundary* at or after `start` up to, not including, the first
//! record boundary at or after `end` (offset 0 is a boundary; so is the end
//! of the file). Both ends are found by the same rule, so the ranges of any
//! split of a file meet exactly where the next range begins: together they
//! give every record of a whole-file read once. In a well-formed file this
//! is the Hadoop split rule, the records whose start lies in `[start, end)`;
//! where the rule rejects a real record start (damage near it), the range
//! before reads on to the next boundary instead, and nothing is lost.
//!
//! A boundary is a candidate that is *confirmed* (see
//! [`find_record_start`]): a line in a payload that reads `WARC/1.0` (an
//! archived WARC file, a text about WARC) is not one unless everything
//! around it frames like records do. Compressed files (gzip, zstd, LZ4,
//! sniffed from their first bytes, not their names) are not split: the
//! range that starts at 0 gives the whole file and every other range
//! nothing. See docs/python.md ("Byte ranges") for the rule's limits.

use crate::io::read_up_to;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

use crate::archive::{Format, Reader as AnyReader, record_candidate};
use crate::codec::{Codec, Decoder, DecoderOptions};
use crate::error::{Error, Result, WarningKind};
use crate::warc::ReaderOptions;

/// Records that must follow a candidate, each starting exactly where the
/// one before ends, to confirm it (fewer when the file ends first). A
/// payload that holds an uncompressed WARC file fools the rule only when
/// more than this many of its records follow the candidate inside it;
/// each link costs one header read and a seek past the block.
pub const CHAIN: usize = 8;

/// Bytes searched for candidates per read.
const WINDOW: usize = 64 << 10;
/// Look-ahead past a window, for a candidate that starts near its end.
const OVERLAP: usize = 16 << 10;
/// Decoder buffer of a confirming reader: small, since it is refilled after
/// every seek past a block.
const CONFIRM_BUFFER: usize = 16 << 10;

/// True when the first bytes of a file say it is compressed (and so cannot
/// be split).
pub fn is_compressed(head: &[u8]) -> bool {
    Codec::sniff(head).is_some()
}

/// The ranges of `split_size` bytes (the last one shorter) that cover a
/// file of `len` bytes; one range `0..len` when `split_size` is 0 or not
/// less than `len`.
pub fn plan(len: u64, split_size: u64) -> Vec<Range<u64>> {
    if split_size == 0 || len <= split_size {
        return vec![Range { start: 0, end: len }];
    }
    let mut v = Vec::with_capacity(usize::try_from(len.div_ceil(split_size)).unwrap_or(0));
    let mut at = 0;
    while at < len {
        let end = at.saturating_add(split_size).min(len);
        v.push(at..end);
        at = end;
    }
    v
}

/// The ranges to read the file at `path` in: [`plan`] for an uncompressed
/// file, one range over the whole file for a compressed one.
///
/// # Errors
/// The file cannot be opened or read.
pub fn plan_file(path: impl AsRef<Path>, split_size: u64) -> Result<Vec<Range<u64>>> {
    let path = path.as_ref();
    let mut f = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    let len = f
        .metadata()
        .map_err(|e| Error::from(e).in_file(path))?
        .len();
    let mut head = [0u8; 8];
    let n = read_up_to(&mut f, &mut head).map_err(|e| Error::from(e).in_file(path))?;
    if is_compressed(&head[..n]) {
        return Ok(vec![Range { start: 0, end: len }]);
    }
    Ok(plan(len, split_size))
}

/// The format of an uncompressed input, sniffed from its first bytes as
/// [`archive::Reader`](crate::archive::Reader) does (WARC when nothing is
/// recognised).
///
/// # Errors
/// Reading failed.
pub fn sniff_format<R: Read + Seek>(input: &mut R) -> Result<Format> {
    input.seek(SeekFrom::Start(0))?;
    let mut head = vec![0u8; OVERLAP];
    let n = read_up_to(input, &mut head)?;
    Ok(Format::sniff(&head[..n]).unwrap_or(Format::Warc))
}

/// Where the records of `range` start and stop in an uncompressed input:
/// `begin..stop`, record boundaries (see the module documentation; `stop`
/// is `u64::MAX` when no boundary follows `range.end`). `None` when no
/// record starts in it.
///
/// # Errors
/// Reading failed.
pub fn bounds<R: Read + Seek>(
    input: &mut R,
    format: Format,
    range: Range<u64>,
    opts: &ReaderOptions,
) -> Result<Option<Range<u64>>> {
    if range.start >= range.end {
        return Ok(None);
    }
    let begin = if range.start == 0 {
        0
    } else {
        match find_record_start(input, format, range.start, range.end, opts)? {
            Some(b) => b,
            None => return Ok(None),
        }
    };
    let stop = find_record_start(input, format, range.end, u64::MAX, opts)?.unwrap_or(u64::MAX);
    if stop <= begin {
        return Ok(None);
    }
    Ok(Some(begin..stop))
}

/// The first confirmed record start at or after `from` and before
/// `until`, in an uncompressed input of `format`.
///
/// A candidate is a record start the format's searches in recovery also
/// look for (`WARC/<digit>` for WARC) at the start of a line. It is
/// confirmed when the reader, started there, reads a record that starts
/// exactly there and whose framing holds (its header parses, with a
/// Content-Length, and for WARC a WARC-Type and a WARC-Record-ID; the block
/// is complete; it ends in its trailer, CRLF CRLF for WARC), and [`CHAIN`] more such records follow, each starting exactly
/// where the one before ends; reaching the end of the input exactly where
/// a record ends also confirms. Cosmetic deviations (bare LF lines, bracketed
/// URIs, non-UTF-8 values) do not matter; framing ones do. Work per
/// candidate is bounded: at most `CHAIN + 1` header blocks of at most the
/// limit in `opts`, and seeks past their blocks.
///
/// # Errors
/// Reading failed.
pub fn find_record_start<R: Read + Seek>(
    input: &mut R,
    format: Format,
    from: u64,
    until: u64,
    opts: &ReaderOptions,
) -> Result<Option<u64>> {
    let len = input.seek(SeekFrom::End(0))?;
    let until = until.min(len);
    if from == 0 && until > 0 && confirm(input, format, 0, opts)? {
        return Ok(Some(0));
    }
    // One byte before `from` is read too, for the line-start test.
    let mut at = from.max(1);
    let mut buf = vec![0u8; WINDOW + OVERLAP + 1];
    while at < until {
        let base = at - 1;
        input.seek(SeekFrom::Start(base))?;
        let n = read_up_to(input, &mut buf)?;
        if n <= 1 {
            return Ok(None);
        }
        let data = &buf[..n];
        // The last read is searched to its end; others up to the overlap.
        let last = n < buf.len();
        let scan = if last { n } else { WINDOW + 1 };
        let mut i = 1;
        while let Some(p) = record_candidate(format, data, i, scan) {
            let pos = base + p as u64;
            if pos >= until {
                return Ok(None);
            }
            let line_start = data[p - 1] == b'\n';
            if (line_start || format == Format::Arc) && confirm(input, format, pos, opts)? {
                return Ok(Some(pos));
            }
            i = p + 1;
        }
        if last {
            return Ok(None);
        }
        at = base + scan as u64;
    }
    Ok(None)
}

/// True when a warning means the record's framing does not hold.
fn breaks_framing(kind: WarningKind) -> bool {
    !matches!(
        kind,
        WarningKind::BareLf
            | WarningKind::BracketedUri
            | WarningKind::SpaceBeforeColon
            | WarningKind::BadFieldName
            | WarningKind::NonUtf8
            | WarningKind::BadDate
            | WarningKind::LineEnd
    )
}

/// Is `pos` a confirmed record start? See [`find_record_start`].
fn confirm<R: Read + Seek>(
    input: &mut R,
    format: Format,
    pos: u64,
    opts: &ReaderOptions,
) -> Result<bool> {
    let dopts = DecoderOptions {
        start_offset: pos,
        buffer_size: CONFIRM_BUFFER,
        threads: 1,
        ..opts.decoder.clone()
    };
    let len = input.seek(SeekFrom::End(0))?;
    input.seek(SeekFrom::Start(pos))?;
    let src = Decoder::new_seekable(&mut *input, dopts.clone())?;
    let ropts = ReaderOptions {
        decoder: dopts,
        limits: opts.limits,
        ..ReaderOptions::lenient()
    };
    let mut r = AnyReader::from_source_as(src, ropts, format);
    let mut expect = pos;
    for links in 0..=CHAIN {
        let rec = match r.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => {
                // The end of the input, right after the last trailer: not
                // even line ends may follow, or a WARC file archived in
                // the file's last record (its trailer after the archived
                // file's end) would confirm.
                let clean = r.take_warnings().iter().all(|w| !breaks_framing(w.kind));
                return Ok(links > 0 && clean && expect == len);
            }
            Err(_) => return Ok(false),
        };
        let loc = rec.location();
        if loc.offset != expect || loc.codec != Codec::None {
            return Ok(false);
        }
        // A WARC record names its type and id (ISO 28500 5.2, 5.5): a
        // bare "WARC/1.1" and Content-Length in a payload, ending where the
        // file ends, is not one.
        let h = rec.header();
        if format == Format::Warc
            && !(h.fields().contains("WARC-Type") && h.fields().contains("WARC-Record-ID"))
        {
            return Ok(false);
        }
        let end = match rec.finish() {
            Ok(e) => e,
            Err(_) => return Ok(false),
        };
        let Some(stored) = end.stored_len else {
            return Ok(false);
        };
        if end.truncated || r.take_warnings().iter().any(|w| breaks_framing(w.kind)) {
            return Ok(false);
        }
        expect = loc.offset.saturating_add(stored);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_the_file() {
        assert_eq!(plan(10, 0), vec![0..10]);
        assert_eq!(plan(10, 10), vec![0..10]);
        assert_eq!(plan(10, 4), vec![0..4, 4..8, 8..10]);
        assert_eq!(plan(0, 4), vec![0..0]);
        assert_eq!(plan(3, 1).len(), 3);
    }
}
