//! Reading WARC records from a [`Source`].

use crate::error::Diagnostics;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::header::{Version, WarcHeader};
use crate::codec::{Codec, Decoder, DecoderOptions, Source};
use crate::error::{Error, ErrorKind, Result, Warning, WarningKind};
use crate::fields::{FieldIssue, Fields};
use crate::framing::{self, Framing, is_line_end};
use crate::leniency::Leniency;
use crate::limits::{Limits, scan_limit};

/// How a [`Reader`] reads.
#[derive(Debug, Clone, Default)]
pub struct ReaderOptions {
    /// Strict: the grammar as written, the first deviation is an error.
    /// Shorthand for [`Leniency::strict`]: when set it wins over
    /// [`leniency`](ReaderOptions::leniency). Lenient (the default): the
    /// knobs of `leniency` say which recoveries the reader makes, each
    /// reported as a [`Warning`].
    pub strict: bool,
    /// Which deviations the reader recovers from, one knob each
    /// ([`Leniency::lenient`] by default).
    pub leniency: Leniency,
    /// Bounds on buffered structures.
    pub limits: Limits,
    /// The file name, used in errors and warnings.
    pub file: Option<PathBuf>,
    /// Options for the decompression layer (when the reader builds one).
    pub decoder: DecoderOptions,
}

impl ReaderOptions {
    /// Lenient reading (the default).
    pub fn lenient() -> Self {
        ReaderOptions::default()
    }

    /// Strict reading: the first deviation from the grammar is an error
    /// ([`Leniency::strict`], and a strict decoder).
    pub fn strict() -> Self {
        let mut o = ReaderOptions {
            strict: true,
            leniency: Leniency::strict(),
            ..ReaderOptions::default()
        };
        o.decoder.lenient = false;
        o
    }

    /// Reading with these knobs (the decoder stays lenient).
    pub fn with_leniency(leniency: Leniency) -> Self {
        ReaderOptions {
            leniency,
            ..ReaderOptions::default()
        }
    }

    /// The knobs the readers apply: [`Leniency::strict`] when
    /// [`strict`](ReaderOptions::strict) is set, else
    /// [`leniency`](ReaderOptions::leniency).
    pub fn effective_leniency(&self) -> Leniency {
        if self.strict {
            Leniency::strict()
        } else {
            self.leniency
        }
    }

    /// Sets the file name used in messages.
    pub fn file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }
}

/// Where a record is, in the file as stored and in its member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecordLocation {
    /// Zero-based number of the record in the file.
    pub index: u64,
    /// Offset of the record in the file as stored: where its gzip member or
    /// zstd/LZ4 frame starts for compressed files (what CDX indexes record),
    /// where its version line starts for plain files.
    pub offset: u64,
    /// The compression of the member the record starts in.
    pub codec: Codec,
    /// Offset of the record's first byte within the decompressed member
    /// (0 for record-at-a-time compressed files).
    pub offset_in_member: u64,
    /// Length of the header block, version line to blank line.
    pub header_len: u64,
}

/// What [`Record::finish`] learned when the record was read to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecordEnd {
    /// Length of the record as stored: its member(s) for compressed files,
    /// version line to the end of the trailer for plain ones. `None` when the
    /// record shares a member with the next one (whole-file gzip).
    pub stored_len: Option<u64>,
    /// Block bytes actually present (less than Content-Length when truncated).
    pub block_len: u64,
    /// True when the input ended before Content-Length bytes of block.
    pub truncated: bool,
}

/// The state of the record being read.
#[derive(Debug)]
struct Current {
    loc: RecordLocation,
    /// Block bytes not yet read.
    remaining: u64,
    /// Block bytes read.
    read: u64,
    truncated: bool,
    /// The block ended at a member end before Content-Length (lenient).
    cut_at_member: bool,
    /// Stored end remembered when the block was cut at a member end.
    cut_end: Option<u64>,
    spans_members: bool,
}

impl Current {
    /// `n` block bytes were read.
    fn advance(&mut self, n: u64) {
        self.remaining -= n;
        self.read += n;
    }
}

/// Reads WARC records one at a time.
///
/// ```
/// use warchest::warc::Reader;
/// let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n";
/// let mut reader = Reader::new(&data[..]);
/// while let Some(mut record) = reader.next_record()? {
///     assert_eq!(record.header().content_length(), Some(5));
///     let mut body = String::new();
///     std::io::Read::read_to_string(&mut record.block(), &mut body)?;
///     assert_eq!(body, "hello");
/// }
/// # Ok::<(), warchest::Error>(())
/// ```
pub struct Reader<S> {
    src: S,
    opts: ReaderOptions,
    next_index: u64,
    header: WarcHeader,
    cur: Option<Current>,
    last_end: Option<RecordEnd>,
    diag: Diagnostics,
    issues: Vec<FieldIssue>,
    /// Bytes already taken from the source that begin the next record (found
    /// by resynchronisation across a buffer boundary).
    carry: Vec<u8>,
    done: bool,
}

impl Reader<Decoder<File>> {
    /// Opens the file at `path` for lenient reading.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Reader::open_with(path, ReaderOptions::default())
    }

    /// Opens the file at `path` with `opts` (its file name is filled in).
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open_with(path: impl AsRef<Path>, opts: ReaderOptions) -> Result<Self> {
        let (f, opts) = open_file(path.as_ref(), opts)?;
        let src = Decoder::new_file(f, opts.decoder.clone())
            .map_err(|e| Error::from(e).in_file(path.as_ref()))?;
        Ok(Reader::from_source(src, opts))
    }
}

/// Opens `path` for a reader, naming it in `opts` unless a name is set.
pub fn open_file(path: &Path, mut opts: ReaderOptions) -> Result<(File, ReaderOptions)> {
    let f = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    if opts.file.is_none() {
        opts.file = Some(path.to_path_buf());
    }
    Ok((f, opts))
}

/// True when `buf` starts with `WARC/` (any letter case, as JWAT accepts).
fn is_record_start(buf: &[u8]) -> bool {
    buf.len() >= 5 && buf[..5].eq_ignore_ascii_case(b"WARC/")
}

framing::reader_api!(src);

/// How gathering a header block across reads ended.
enum Gathered {
    /// Whole, up to its blank line.
    Whole,
    /// The input ended inside it (lenient; warned).
    Cut,
    /// Over the limit; the record is given up (lenient; warned).
    TooLarge,
}

impl<S: Source> Reader<S> {
    /// A reader over an already built source.
    pub fn from_source(src: S, opts: ReaderOptions) -> Self {
        let diag = Diagnostics::new(opts.file.clone(), opts.effective_leniency());
        Reader {
            src,
            opts,
            next_index: 0,
            header: WarcHeader::from_fields(Version::V1_1, Fields::new()),
            cur: None,
            last_end: None,
            diag,
            issues: Vec::new(),
            carry: Vec::new(),
            done: false,
        }
    }

    /// The source, mutably. Reading from it directly desynchronises the reader.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.src
    }

    /// The source back.
    pub fn into_inner(self) -> S {
        self.src
    }

    /// Numbers the next record `n` (and the ones after it `n + 1`, ...) in
    /// warnings and errors: for a reader started inside a file at a record
    /// whose number in a read from the start is known (`ls` on several
    /// threads resumes a sequential read this way), so that its messages
    /// name records as that read would.
    pub fn set_next_record_number(&mut self, n: u64) {
        self.next_index = n;
    }

    /// The number the next record will have in warnings and errors: the
    /// records read so far, those given up included (a header block over
    /// the limit), plus the first number.
    pub fn next_record_number(&self) -> u64 {
        self.next_index
    }

    /// Offset in the stored file of the current read position, as precise as
    /// the codec allows (member start for compressed members).
    fn stored_pos(&self) -> u64 {
        framing::stored_pos(&self.src)
    }

    fn warn(&mut self, kind: WarningKind, offset: u64, record: Option<u64>, msg: String) {
        let id = self.header.record_id().map(|s| s.into_owned());
        self.diag.warn(kind, offset, record, id, msg);
    }

    fn error(&self, kind: ErrorKind, offset: u64, record: Option<u64>) -> Error {
        self.diag.error(
            kind,
            offset,
            record,
            self.header.record_id().map(|s| s.into_owned()),
        )
    }

    /// Skips CR/LF and damage up to the next record start. Returns false at
    /// the end of the input.
    fn find_start(&mut self) -> Result<bool> {
        if !self.carry.is_empty() {
            return Ok(true);
        }
        let mut blank = 0u64;
        let blank_at = self.stored_pos();
        // Where a plain member was last ended for compressed bytes: a
        // member header that only looks valid leaves the decoder plain at
        // the same place, and ending it again would loop without end.
        let mut plain_ended_at = None;
        loop {
            let buf = self.src.fill_buf()?;
            let len = buf.len();
            let n = buf.iter().take_while(|&&b| is_line_end(b)).count();
            let starts = is_record_start(buf)
                || (n == 0 && len < 5 && b"WARC/"[..len].eq_ignore_ascii_case(buf));
            if len == 0 {
                if !self.src.next_member()? {
                    if blank > 0 && self.diag.leniency().bad_trailer {
                        // Extra line ends at the very end: harmless, but said.
                        self.warn(
                            WarningKind::BadTrailer,
                            blank_at,
                            None,
                            format!("{blank} extra line-end bytes at the end of the input"),
                        );
                    }
                    return Ok(false);
                }
                continue;
            }
            if n > 0 {
                blank += n as u64;
                self.src.consume(n);
                continue;
            }
            if blank > 0 {
                if !self.diag.leniency().bad_trailer {
                    return Err(self.error(
                        ErrorKind::Syntax(format!(
                            "{blank} unexpected line-end bytes before a record"
                        )),
                        blank_at,
                        None,
                    ));
                }
                self.warn(
                    WarningKind::BadTrailer,
                    blank_at,
                    None,
                    format!("{blank} extra line-end bytes between records"),
                );
            }
            if starts && len < 5 {
                // Fewer than five bytes held, the start of `WARC/`: a record
                // start split across reads, or damage that begins so
                // (`WARC-Record-ID: ...`). Five bytes decide.
                return self.split_start();
            }
            if starts {
                return Ok(true);
            }
            // Compressed members after plain records (gzip appended to a
            // plain file, iipc/jwarc#53): read on in the new member.
            let here = self.stored_pos();
            let compressed = self.src.codec() == Codec::None
                && plain_ended_at != Some(here)
                && crate::codec::Codec::sniff(self.src.fill_buf()?).is_some();
            if compressed && self.src.end_plain_member() {
                plain_ended_at = Some(here);
                if !self.diag.leniency().not_record_at_a_time {
                    return Err(self.error(
                        ErrorKind::Syntax("compressed members follow plain records".into()),
                        self.stored_pos(),
                        None,
                    ));
                }
                let at = self.stored_pos();
                self.warn(
                    WarningKind::NotRecordAtATime,
                    at,
                    None,
                    "compressed members follow plain records; reading on in them".into(),
                );
                blank = 0;
                continue;
            }
            return self.resync();
        }
    }

    /// A record seems to start where fewer than five bytes are held (see
    /// [`Reader::find_start`]): up to five are read, across reads of this
    /// member. A record start (or a prefix of one the member ends in, which
    /// the header gathers on across members, as before) goes to `carry`,
    /// which the header takes as its first bytes; anything else is damage,
    /// resynchronised from there. The member is not left here, so the
    /// record's offset is still its own member's.
    #[cold]
    fn split_start(&mut self) -> Result<bool> {
        let mut head = [0u8; 5];
        let mut k = 0;
        while k < head.len() {
            let buf = self.src.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let take = (head.len() - k).min(buf.len());
            head[k..k + take].copy_from_slice(&buf[..take]);
            self.src.consume(take);
            k += take;
        }
        if head[..k].eq_ignore_ascii_case(&b"WARC/"[..k]) {
            self.carry.clear();
            self.carry.extend_from_slice(&head[..k]);
            return Ok(true);
        }
        self.resync_from(&head[..k])
    }

    /// Lenient: scans forward for the next `WARC/<digit>`, reporting what it
    /// skipped. An error when neither [`Leniency::skipped_bytes`] nor
    /// [`Leniency::trailing_garbage`] is on, or when the one for what the
    /// scan found is off.
    fn resync(&mut self) -> Result<bool> {
        self.resync_from(&[])
    }

    /// [`Reader::resync`] from bytes `pre` already consumed (at most five,
    /// not a record start): they count as skipped, and a match may begin
    /// in their tail.
    fn resync_from(&mut self, pre: &[u8]) -> Result<bool> {
        let start = self.stored_pos().saturating_sub(pre.len() as u64);
        let knobs = *self.diag.leniency();
        let not_a_record = || ErrorKind::Syntax("expected a WARC version line".into());
        if !knobs.skipped_bytes && !knobs.trailing_garbage {
            return Err(self.error(not_a_record(), start, None));
        }
        // Match `WARC/` and a digit byte by byte across buffers; `m` counts
        // the bytes matched so far. No byte of the pattern repeats its first,
        // so a mismatch restarts the match at the current byte.
        const PAT: &[u8; 5] = b"WARC/";
        let mut consumed = pre.len() as u64;
        let mut m = 0usize;
        // The bytes matched so far, as written (any case).
        let mut matched = [0u8; 6];
        // The longest tail of `pre` after its first byte that the match
        // below would have reached (`pre` itself is no record start).
        for j in 1..pre.len() {
            let tail = &pre[j..];
            let fits = tail.len() < matched.len()
                && matches!(tail[0], b'W' | b'w')
                && tail[1..].iter().zip(&PAT[1..]).all(|(a, b)| a == b);
            if fits {
                matched[..tail.len()].copy_from_slice(tail);
                m = tail.len();
                break;
            }
        }
        let found = loop {
            let buf = self.src.fill_buf()?;
            if buf.is_empty() {
                m = 0;
                if !self.src.next_member()? {
                    break false;
                }
                continue;
            }
            let mut i = 0;
            let mut found_at: Option<isize> = None;
            while i < buf.len() {
                if m == 0 {
                    match memchr::memchr2(b'W', b'w', &buf[i..]) {
                        Some(k) => {
                            matched[0] = buf[i + k];
                            i += k + 1;
                            m = 1;
                        }
                        None => i = buf.len(),
                    }
                    continue;
                }
                let b = buf[i];
                let ok = if m < 5 {
                    b == PAT[m]
                } else {
                    b.is_ascii_digit()
                };
                if ok {
                    matched[m] = b;
                    m += 1;
                    i += 1;
                    if m == 6 {
                        found_at = Some(i as isize - 6);
                        break;
                    }
                } else {
                    m = 0;
                }
            }
            match found_at {
                Some(at) if at >= 0 => {
                    self.src.consume(at as usize);
                    consumed += at as u64;
                    break true;
                }
                Some(at) => {
                    // The match began in earlier buffers, already consumed.
                    let k = at.unsigned_abs();
                    self.carry.clear();
                    self.carry.extend_from_slice(&matched[..k]);
                    break true;
                }
                None => {
                    let len = buf.len();
                    self.src.consume(len);
                    consumed += len as u64;
                }
            }
            if consumed > self.opts.limits.max_resync_scan {
                // Given up with input left: not trailing garbage, and the
                // rest of the input goes unread, so an error names it.
                let limit = self.opts.limits.max_resync_scan;
                if !self.src.fill_buf()?.is_empty() || self.src.next_member()? {
                    return Err(self.error(scan_limit(limit), start, None));
                }
                break false;
            }
        };
        let skipped = consumed - self.carry.len() as u64;
        if found && skipped > self.opts.limits.max_resync_scan {
            // Found in a buffer that began within the limit but past it:
            // the same error as any buffer size would give.
            self.carry.clear();
            let limit = self.opts.limits.max_resync_scan;
            return Err(self.error(scan_limit(limit), start, None));
        }
        if (found && !knobs.skipped_bytes) || (!found && skipped > 0 && !knobs.trailing_garbage) {
            self.carry.clear();
            return Err(self.error(not_a_record(), start, None));
        }
        if found {
            self.warn(
                WarningKind::SkippedBytes,
                start,
                None,
                format!("skipped {skipped} bytes that are not a WARC record"),
            );
        } else if skipped > 0 {
            self.warn(
                WarningKind::TrailingGarbage,
                start,
                None,
                format!("{skipped} bytes after the last record are not a WARC record"),
            );
        }
        Ok(found)
    }

    /// Reads the header block into `self.header` and starts the record.
    /// False when the input ends inside the header (lenient); `None` when
    /// the header block is over [`Limits::max_header_block`] and the record
    /// was given up (lenient, [`Leniency::skipped_bytes`]).
    ///
    /// The steps, each a method below: where the record starts; its header
    /// block, parsed where the source holds it whole (the usual case) or
    /// gathered across reads and parsed then; the version line; warnings
    /// about members and header lines; the target URI's brackets; the
    /// block's length; the next header asked for early.
    fn read_header(&mut self) -> Result<Option<bool>> {
        let index = self.next_index;
        self.next_index += 1;
        let (codec, in_member, offset) = self.record_start();
        let mut fields = std::mem::take(&mut self.header.fields);
        self.issues.clear();
        let mut spans_members = false;
        // Bytes the source holds after a header parsed in place: looking at
        // them needs no read. `None`: the header was gathered.
        let held_after = if self.carry.is_empty() {
            self.header_in_place(&mut fields)?
        } else {
            None
        };
        let in_place = held_after.is_some();
        if !in_place {
            match self.gather_header(&mut fields, offset, index, &mut spans_members)? {
                Gathered::Whole => {}
                Gathered::Cut => {
                    self.header.fields = fields;
                    return Ok(Some(false));
                }
                Gathered::TooLarge => {
                    self.header.fields = fields;
                    return Ok(None);
                }
            }
        }
        let header_len = fields.as_bytes().len() as u64;
        let (version, first_nl) = {
            let buf = fields.as_bytes();
            let first_nl = memchr::memchr(b'\n', buf).unwrap_or(buf.len());
            let line = &buf[..first_nl];
            (
                Version::parse_line(line.strip_suffix(b"\r").unwrap_or(line)),
                first_nl,
            )
        };
        let parsed = if in_place {
            Ok(())
        } else {
            self.issues.clear();
            fields.reparse(
                first_nl + 1,
                self.diag.leniency(),
                self.opts.limits.max_fields,
                &mut self.issues,
            )
        };
        self.header.fields = fields;
        if let Err(e) = parsed {
            return Err(self.error(ErrorKind::Syntax(e.to_string()), offset, Some(index)));
        }
        let version = self.check_version(version, offset, index)?;
        self.header.version = version;
        self.header.refresh();
        self.member_warnings(codec, in_member, spans_members, offset, index);
        self.field_warnings(codec, offset, index);
        self.check_target_uri(version, offset, index)?;
        let remaining = self.block_length(offset, index)?;
        if let Some(held_after) = held_after {
            self.prefetch_next(remaining, held_after);
        }
        self.cur = Some(Current {
            loc: RecordLocation {
                index,
                offset,
                codec,
                offset_in_member: in_member,
                header_len,
            },
            remaining,
            read: 0,
            truncated: false,
            cut_at_member: false,
            cut_end: None,
            spans_members,
        });
        Ok(Some(true))
    }

    /// Where the record about to be read starts: the codec, how far into
    /// its member, and the stored offset (the member's start for a
    /// compressed member, the exact byte for a plain file).
    #[inline(always)]
    fn record_start(&mut self) -> (Codec, u64, u64) {
        let codec = self.src.codec();
        let carry_len = self.carry.len() as u64;
        let in_member = self.src.member_pos().saturating_sub(carry_len);
        let offset = if codec == Codec::None {
            self.src.member_offset() + in_member
        } else {
            self.src.member_offset()
        };
        (codec, in_member, offset)
    }

    /// The usual header, whole in the source's buffer: found and parsed in
    /// one walk over it and consumed. `Some(bytes held after it)`, or
    /// `None` (with `fields` and the issues cleared) when the buffer does
    /// not hold it whole: [`gather_header`](Self::gather_header) then
    /// finds its end, copies it and parses the copy, which gives the same
    /// fields and issues.
    #[inline(always)]
    fn header_in_place(&mut self, fields: &mut Fields) -> Result<Option<usize>> {
        fields.buf_mut().clear();
        let chunk = self.src.fill_buf()?;
        let held = chunk.len();
        let parsed = fields.parse_block_in(
            chunk,
            self.diag.leniency(),
            self.opts.limits.max_fields,
            self.opts.limits.max_header_block,
            &mut self.issues,
        );
        match parsed {
            Some(n) => {
                self.src.consume(n);
                Ok(Some(held - n))
            }
            None => {
                fields.buf_mut().clear();
                self.issues.clear();
                Ok(None)
            }
        }
    }

    /// Copies the header block into `fields`' buffer (after what was
    /// carried over from the search for the record's start), across reads
    /// and members, up to its blank line.
    fn gather_header(
        &mut self,
        fields: &mut Fields,
        offset: u64,
        index: u64,
        spans_members: &mut bool,
    ) -> Result<Gathered> {
        let max = self.opts.limits.max_header_block;
        let buf = fields.buf_mut();
        buf.clear();
        buf.append(&mut self.carry);
        loop {
            let chunk = self.src.fill_buf()?;
            if chunk.is_empty() {
                if !self.src.next_member()? {
                    return self.header_cut(buf.len(), offset, index);
                }
                *spans_members = true;
                continue;
            }
            let end = framing::header_end(buf, chunk);
            let take = end.unwrap_or(chunk.len());
            if buf.len() + take > max {
                // What was read of the header is dropped: memory stays
                // bounded by the limit.
                buf.clear();
                return self.header_too_large(offset, index);
            }
            buf.extend_from_slice(&chunk[..take]);
            self.src.consume(take);
            if end.is_some() {
                return Ok(Gathered::Whole);
            }
        }
    }

    /// The input ended inside a header block of `len` bytes: an error, or
    /// (lenient) a warning and the end of reading, since nothing of the
    /// record can be read.
    #[cold]
    fn header_cut(&mut self, len: usize, offset: u64, index: u64) -> Result<Gathered> {
        let e = self.error(
            ErrorKind::Truncated(format!(
                "the header block ends after {len} bytes, without its blank line"
            )),
            offset,
            Some(index),
        );
        if !self.diag.leniency().truncated_record {
            return Err(e);
        }
        let mut w = Warning::new(
            WarningKind::TruncatedRecord,
            offset,
            format!("the input ends inside a header block, after {len} bytes"),
        );
        w.record = Some(index);
        self.diag.push(w);
        Ok(Gathered::Cut)
    }

    /// A header block over [`Limits::max_header_block`]: an error, or
    /// (lenient) the record is lost, not the rest of the input: the caller
    /// resynchronises at the next record start, streaming over the rest.
    #[cold]
    fn header_too_large(&mut self, offset: u64, index: u64) -> Result<Gathered> {
        let max = self.opts.limits.max_header_block;
        if !self.diag.leniency().skipped_bytes {
            return Err(self.error(
                ErrorKind::TooLarge {
                    what: "WARC header block",
                    limit: max as u64,
                },
                offset,
                Some(index),
            ));
        }
        let mut w = Warning::new(
            WarningKind::SkippedBytes,
            offset,
            format!(
                "the WARC header block is longer than the limit of {max} bytes; the record is skipped up to the next record"
            ),
        );
        w.record = Some(index);
        self.diag.push(w);
        Ok(Gathered::TooLarge)
    }

    /// The version line's version: an unknown one is read as 1.1 with a
    /// warning (an error in strict mode), a bad line is an error.
    #[inline(always)]
    fn check_version(
        &mut self,
        version: Option<Version>,
        offset: u64,
        index: u64,
    ) -> Result<Version> {
        match version {
            Some(v) if v.is_known() => Ok(v),
            Some(v) => self.unknown_version(v, offset, index),
            None => Err(self.error(
                ErrorKind::Syntax(format!("bad version line {:?}", self.version_line())),
                offset,
                Some(index),
            )),
        }
    }

    #[cold]
    fn unknown_version(&mut self, v: Version, offset: u64, index: u64) -> Result<Version> {
        if !self.diag.leniency().unknown_version {
            return Err(self.error(
                ErrorKind::Syntax(format!("unknown WARC version {:?}", self.version_line())),
                offset,
                Some(index),
            ));
        }
        let msg = format!(
            "unknown WARC version {:?}, read as 1.1",
            self.version_line()
        );
        self.warn(WarningKind::UnknownVersion, offset, Some(index), msg);
        Ok(v)
    }

    /// Warnings for a record that does not start a member of its own or
    /// whose header spans members. Without the knob, records sharing a
    /// member are read without a word, as strict reading always did.
    #[inline(always)]
    fn member_warnings(
        &mut self,
        codec: Codec,
        in_member: u64,
        spans_members: bool,
        offset: u64,
        index: u64,
    ) {
        if !self.diag.leniency().not_record_at_a_time {
            return;
        }
        if codec != Codec::None && in_member != 0 {
            self.warn(
                WarningKind::NotRecordAtATime,
                offset,
                Some(index),
                format!(
                    "record starts {in_member} bytes into a {} member: the file is not compressed record at a time",
                    codec.name()
                ),
            );
        }
        if spans_members {
            self.warn(
                WarningKind::NotRecordAtATime,
                offset,
                Some(index),
                "the header block spans compressed members".into(),
            );
        }
    }

    /// The header lines' issues as warnings, with the stored offset as
    /// precise as the codec allows.
    #[inline(always)]
    fn field_warnings(&mut self, codec: Codec, offset: u64, index: u64) {
        if self.issues.is_empty() {
            return;
        }
        let issues = std::mem::take(&mut self.issues);
        for is in &issues {
            let at = if codec == Codec::None {
                offset + is.offset as u64
            } else {
                offset
            };
            let what = match is.kind {
                WarningKind::BareLf => "header lines end in LF without CR",
                WarningKind::SpaceBeforeColon => "white space before a field's colon",
                WarningKind::LineWithoutColon => "a header line without a colon was ignored",
                WarningKind::BadFieldName => "a field name is not a token",
                _ => "odd header line",
            };
            self.warn(is.kind, at, Some(index), what.to_string());
        }
        self.issues = issues;
    }

    /// A WARC 1.1 WARC-Target-URI inside `<...>` (1.0's grammar): a
    /// warning (the brackets are removed when the value is read), an error
    /// in strict mode.
    #[inline(always)]
    fn check_target_uri(&mut self, version: Version, offset: u64, index: u64) -> Result<()> {
        if version < Version::V1_1 {
            return Ok(());
        }
        let Some(uri) = self.header.fields.get(super::field::TARGET_URI) else {
            return Ok(());
        };
        let v = uri.value();
        if !(v.starts_with(b"<") && v.ends_with(b">")) {
            return Ok(());
        }
        if !self.diag.leniency().bracketed_uri {
            return Err(self.error(
                ErrorKind::Syntax("WARC-Target-URI inside <...> in a WARC 1.1 record".into()),
                offset,
                Some(index),
            ));
        }
        self.warn(
            WarningKind::BracketedUri,
            offset,
            Some(index),
            "WARC-Target-URI inside <...>; brackets removed".into(),
        );
        Ok(())
    }

    /// The block's length from Content-Length; a missing or bad one is an
    /// error, or (lenient) a warning and an empty block, the rest skipped
    /// up to the next record.
    #[inline(always)]
    fn block_length(&mut self, offset: u64, index: u64) -> Result<u64> {
        match self.header.content_length() {
            Some(n) => Ok(n),
            None => self.bad_content_length(offset, index),
        }
    }

    #[cold]
    fn bad_content_length(&mut self, offset: u64, index: u64) -> Result<u64> {
        let msg = match self.header.fields.value(super::field::CONTENT_LENGTH) {
            Some(v) => format!("Content-Length {v:?} is not a number"),
            None => "no Content-Length".to_string(),
        };
        if !self.diag.leniency().bad_content_length {
            return Err(self.error(ErrorKind::Syntax(msg), offset, Some(index)));
        }
        self.warn(
            WarningKind::BadContentLength,
            offset,
            Some(index),
            format!("{msg}; the block is skipped up to the next record"),
        );
        Ok(0)
    }

    /// The trailer and the next header, asked for now when the source
    /// holds them (`held_after` bytes follow the header): in a file read
    /// through a map they are not in the cache (a skipped payload lies
    /// between), and the wait for them overlaps the caller's work on this
    /// record instead of stalling the skip to the trailer.
    #[inline(always)]
    fn prefetch_next(&mut self, remaining: u64, held_after: usize) {
        if let Ok(at) = usize::try_from(remaining)
            && at < held_after
            && let Ok(held) = self.src.fill_buf()
            && let Some(next) = held.get(at..)
        {
            crate::codec::prefetch(next);
        }
    }

    /// The current header's version line as text, for messages (made only
    /// when one is needed: no allocation per record).
    fn version_line(&self) -> String {
        let line = self.header.fields.start_line();
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        String::from_utf8_lossy(line).into_owned()
    }

    /// The member ended inside the block: go on into the next member, or
    /// decide that Content-Length was wrong, or that the input is truncated.
    fn block_member_end(&mut self) -> Result<()> {
        let Some(cur) = self.cur.as_ref() else {
            return Ok(());
        };
        let (index, offset, remaining, read, at_start) = (
            cur.loc.index,
            cur.loc.offset,
            cur.remaining,
            cur.read,
            cur.loc.offset_in_member == 0,
        );
        let compressed = self.src.codec() != Codec::None;
        let member_end = self.src.member_end();
        let more = compressed && self.src.next_member()?;
        if more {
            // A record-at-a-time file whose next member starts a record: the
            // Content-Length was too large, not the record split.
            let next_is_record = is_record_start(self.src.fill_buf()?);
            let resync = self.diag.leniency().content_length_resync;
            if next_is_record && at_start && resync {
                self.warn(
                    WarningKind::BadContentLength,
                    offset,
                    Some(index),
                    format!(
                        "Content-Length is {} but the record's member ends after {read} block bytes and the next member starts a record; block cut there",
                        read + remaining
                    ),
                );
                if let Some(cur) = self.cur.as_mut() {
                    cur.remaining = 0;
                    cur.cut_at_member = true;
                    cur.cut_end = member_end;
                }
                return Ok(());
            }
            if next_is_record && !resync {
                return Err(self.error(
                    ErrorKind::Syntax(format!(
                        "Content-Length is {} but the member ends after {read} block bytes",
                        read + remaining
                    )),
                    offset,
                    Some(index),
                ));
            }
            if let Some(cur) = self.cur.as_mut()
                && !cur.spans_members
            {
                cur.spans_members = true;
                let msg = "the record's block spans compressed members".to_string();
                self.warn(WarningKind::NotRecordAtATime, offset, Some(index), msg);
            }
            return Ok(());
        }
        // The input ended inside the block.
        let msg = format!(
            "Content-Length is {} but the input ends after {read} block bytes",
            read + remaining
        );
        if !self.diag.leniency().truncated_record {
            return Err(self.error(ErrorKind::Truncated(msg), offset, Some(index)));
        }
        self.warn(WarningKind::TruncatedRecord, offset, Some(index), msg);
        if let Some(cur) = self.cur.as_mut() {
            cur.remaining = 0;
            cur.truncated = true;
        }
        Ok(())
    }

    /// Reads the CRLF CRLF after a block, within the current member.
    fn read_trailer(&mut self, cur: &Current) -> Result<()> {
        // The usual trailer, whole in the buffer: no byte-by-byte walk.
        if self.src.fill_buf()?.starts_with(b"\r\n\r\n") {
            self.src.consume(4);
            return Ok(());
        }
        let at = self.stored_pos();
        let mut seen = [0u8; 4];
        let mut n = 0usize;
        loop {
            let buf = self.src.fill_buf()?;
            if buf.is_empty() || n >= 4 {
                break;
            }
            let k = buf
                .iter()
                .take(4 - n)
                .take_while(|&&b| is_line_end(b))
                .count();
            seen[n..n + k].copy_from_slice(&buf[..k]);
            n += k;
            self.src.consume(k);
            if k == 0 {
                break;
            }
        }
        if &seen[..n] == b"\r\n\r\n" {
            return Ok(());
        }
        let found = match n {
            0 => "no trailer".to_string(),
            _ => format!("trailer {:?}", String::from_utf8_lossy(&seen[..n])),
        };
        let msg =
            format!("record not followed by CRLF CRLF ({found}); Content-Length may be wrong");
        if !self.diag.leniency().bad_trailer {
            return Err(self.error(ErrorKind::Syntax(msg), at, Some(cur.loc.index)));
        }
        self.warn(WarningKind::BadTrailer, at, Some(cur.loc.index), msg);
        Ok(())
    }

    /// An iterator of owned records (each block read into memory).
    pub fn into_records(self) -> Records<S> {
        Records { reader: self }
    }
}

impl<S: Source> Framing for Reader<S> {
    fn read_next(&mut self) -> Result<bool> {
        loop {
            if !self.find_start()? {
                return Ok(false);
            }
            if let Some(started) = self.read_header()? {
                return Ok(started);
            }
        }
    }

    fn location(&self) -> Option<RecordLocation> {
        self.cur.as_ref().map(|c| c.loc)
    }

    fn drop_current(&mut self) {
        self.cur = None;
    }

    /// Skips the rest of the block and the trailer; sets `last_end`.
    fn finish_current(&mut self) -> Result<RecordEnd> {
        // Skip the block.
        while let Some(cur) = self.cur.as_ref() {
            if cur.remaining == 0 {
                break;
            }
            let want = cur.remaining;
            let n = self.src.skip(want)?;
            if let Some(cur) = self.cur.as_mut() {
                cur.advance(n);
            }
            if n < want {
                self.block_member_end()?;
            }
        }
        let Some(cur) = self.cur.take() else {
            return Ok(self.last_end.unwrap_or(RecordEnd {
                stored_len: None,
                block_len: 0,
                truncated: false,
            }));
        };
        if !cur.truncated && !cur.cut_at_member {
            self.read_trailer(&cur)?;
        }
        let rec_end = framing::record_end(
            &mut self.src,
            &cur.loc,
            cur.cut_end,
            cur.read,
            cur.truncated,
        )?;
        self.last_end = Some(rec_end);
        Ok(rec_end)
    }

    // `block_fill` up to its first `fill_buf` that has bytes, without the
    // second call it makes to return them: `BlockReader::fill_buf` calls
    // this and then `block_fill`, which asked the source four times a read
    // (three now; each is a call through the decoder's state checks).
    fn block_ready(&mut self) -> Result<()> {
        loop {
            let Some(cur) = self.cur.as_ref() else {
                return Ok(());
            };
            if cur.remaining == 0 || !self.src.fill_buf()?.is_empty() {
                return Ok(());
            }
            self.block_member_end()?;
        }
    }

    /// Fills with block bytes of the current record; empty at its end.
    fn block_fill(&mut self) -> Result<&[u8]> {
        loop {
            let Some(cur) = self.cur.as_ref() else {
                return Ok(&[]);
            };
            if cur.remaining == 0 {
                return Ok(&[]);
            }
            let remaining = cur.remaining;
            let avail = self.src.fill_buf()?.len();
            if avail > 0 {
                let n = usize::try_from(remaining).unwrap_or(usize::MAX).min(avail);
                let buf = self.src.fill_buf()?;
                return Ok(&buf[..n]);
            }
            self.block_member_end()?;
        }
    }

    fn block_consume(&mut self, n: usize) {
        self.src.consume(n);
        if let Some(cur) = self.cur.as_mut() {
            cur.advance(n as u64);
        }
    }

    fn block_read_direct(&mut self, out: &mut [u8]) -> Result<Option<usize>> {
        let Some(cur) = self.cur.as_ref() else {
            return Ok(None);
        };
        // Only a large piece: a small block (or a payload's last bytes)
        // comes with the trailer and the next header in one refill, and a
        // mapped file keeps its map for it.
        let k = usize::try_from(cur.remaining)
            .unwrap_or(usize::MAX)
            .min(out.len());
        let Some(into) = out.get_mut(..k).filter(|o| o.len() >= framing::DIRECT_READ) else {
            return Ok(None);
        };
        let Some(n) = self.src.read_direct(into)? else {
            return Ok(None);
        };
        if let Some(cur) = self.cur.as_mut() {
            cur.advance(n as u64);
        }
        Ok(Some(n))
    }

    fn view(&self) -> &WarcHeader {
        &self.header
    }

    fn fuse(&mut self) {
        self.done = true;
    }

    fn is_fused(&self) -> bool {
        self.done
    }

    fn locate(&self, e: Error) -> Error {
        self.diag.locate(e)
    }
}

/// A WARC record being read: its header, location and streamed block.
///
/// Dropping it without reading the block is fine: the next
/// [`Reader::next_record`] skips what is left.
pub type Record<'r, S> = framing::Record<'r, Reader<S>>;

impl<S: Source> Record<'_, S> {
    /// Block bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.reader.cur.as_ref().map_or(0, |c| c.remaining)
    }

    /// Reads the whole record into an [`OwnedRecord`].
    ///
    /// # Errors
    /// As reading the block.
    pub fn into_owned(mut self) -> Result<OwnedRecord> {
        let block = self.read_block()?;
        let header = self.reader.header.clone();
        let location = self.location();
        let end = self.finish()?;
        Ok(OwnedRecord {
            header,
            block,
            location,
            end,
        })
    }
}

/// The block of the current WARC record as a stream ([`Read`](std::io::Read) and
/// [`BufRead`](std::io::BufRead)).
pub type BlockReader<'a, S> = framing::BlockReader<'a, Reader<S>>;

/// A record read whole into memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedRecord {
    /// The header block.
    pub header: WarcHeader,
    /// The block.
    pub block: Vec<u8>,
    /// Where it was.
    pub location: RecordLocation,
    /// How it ended.
    pub end: RecordEnd,
}

/// Iterator of [`OwnedRecord`]s; see [`Reader::into_records`].
pub struct Records<S> {
    reader: Reader<S>,
}

impl<S> Records<S> {
    /// The reader, for its warnings.
    pub fn reader_mut(&mut self) -> &mut Reader<S> {
        &mut self.reader
    }
}

impl<S: Source> Iterator for Records<S> {
    type Item = Result<OwnedRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.next_record() {
            Ok(Some(rec)) => Some(rec.into_owned()),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::warc::RecordType;

    use crate::test_source::MemSource;

    pub(crate) fn rec(typ: &str, body: &str) -> Vec<u8> {
        format!(
            "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Record-ID: <urn:uuid:{typ}>\r\nContent-Length: {}\r\n\r\n{body}\r\n\r\n",
            body.len()
        )
        .into_bytes()
    }

    struct Seen {
        types: Vec<RecordType>,
        bodies: Vec<Vec<u8>>,
        offsets: Vec<u64>,
        lens: Vec<Option<u64>>,
        warnings: Vec<Warning>,
    }

    impl Seen {
        /// Whether a warning of `kind` was given.
        fn warned(&self, kind: WarningKind) -> bool {
            self.warnings.iter().any(|w| w.kind == kind)
        }
    }

    fn read_all<S: Source>(mut r: Reader<S>) -> Result<Seen> {
        let mut s = Seen {
            types: vec![],
            bodies: vec![],
            offsets: vec![],
            lens: vec![],
            warnings: vec![],
        };
        while let Some(mut rec) = r.next_record()? {
            s.types.push(rec.header().record_type());
            s.offsets.push(rec.location().offset);
            s.bodies.push(rec.read_block()?);
            s.lens.push(rec.finish()?.stored_len);
        }
        s.warnings = r.take_warnings();
        Ok(s)
    }

    fn lenient<S: Source>(s: S) -> Reader<S> {
        Reader::from_source(s, ReaderOptions::lenient())
    }

    fn strict<S: Source>(s: S) -> Reader<S> {
        Reader::from_source(s, ReaderOptions::strict())
    }

    fn read_with(data: &[u8], leniency: crate::Leniency) -> (Option<Error>, Vec<WarningKind>) {
        crate::test_source::read_with(data, crate::archive::Format::Warc, leniency)
    }

    /// One deviation per knob, each in its own stretch of a file; turning
    /// one knob off makes exactly its deviation an error, while the others
    /// stay warnings.
    #[test]
    fn each_knob_governs_its_own_recovery() {
        type Knob = fn(&mut Leniency);
        let ok = |extra: &str| {
            format!("WARC/1.1\r\nWARC-Type: resource\r\n{extra}Content-Length: 2\r\n\r\nhi\r\n\r\n")
        };
        // (knob off, what it reports, the stretch of file that needs it)
        let middle: Vec<(Knob, WarningKind, String)> = vec![
            (
                |l| l.skipped_bytes = false,
                WarningKind::SkippedBytes,
                "not a record\r\n".into(),
            ),
            (
                |l| l.bare_lf = false,
                WarningKind::BareLf,
                "WARC/1.1\nWARC-Type: resource\nContent-Length: 2\n\nhi\r\n\r\n".into(),
            ),
            (
                |l| l.space_before_colon = false,
                WarningKind::SpaceBeforeColon,
                ok("WARC-Date : 2020-01-01T00:00:00Z\r\n"),
            ),
            (
                |l| l.line_without_colon = false,
                WarningKind::LineWithoutColon,
                ok("no colon here\r\n"),
            ),
            (
                |l| l.bad_field_name = false,
                WarningKind::BadFieldName,
                ok("Bad(Name): x\r\n"),
            ),
            (
                |l| l.bracketed_uri = false,
                WarningKind::BracketedUri,
                ok("WARC-Target-URI: <http://example.com/>\r\n"),
            ),
            (
                |l| l.unknown_version = false,
                WarningKind::UnknownVersion,
                ok("").replacen("WARC/1.1", "WARC/2.5", 1),
            ),
            (
                |l| l.bad_content_length = false,
                WarningKind::BadContentLength,
                ok("").replacen(
                    "Content-Length: 2\r\n\r\nhi",
                    "Content-Length: two\r\n\r\n",
                    1,
                ),
            ),
            (
                |l| l.bad_trailer = false,
                WarningKind::BadTrailer,
                ok("").replacen("hi\r\n\r\n", "hi\r\n", 1),
            ),
        ];
        let tails: Vec<(Knob, WarningKind, String)> = vec![
            (
                |l| l.truncated_record = false,
                WarningKind::TruncatedRecord,
                ok("").replacen(
                    "Content-Length: 2\r\n\r\nhi\r\n\r\n",
                    "Content-Length: 99\r\n\r\nhi",
                    1,
                ),
            ),
            (
                |l| l.trailing_garbage = false,
                WarningKind::TrailingGarbage,
                "no record follows".into(),
            ),
        ];
        for tail in &tails {
            let all: Vec<_> = middle.iter().chain([tail]).collect();
            let file = |skip: Option<usize>| {
                let mut f = ok("");
                for (i, (_, _, part)) in all.iter().enumerate() {
                    if Some(i) != skip {
                        f.push_str(part);
                    }
                }
                f.into_bytes()
            };
            // Everything on: one warning per stretch, in order.
            let (err, kinds) = read_with(&file(None), Leniency::lenient());
            assert!(err.is_none(), "{err:?}");
            let want: Vec<_> = all.iter().map(|k| k.1).collect();
            assert_eq!(kinds, want);
            // Everything off: the first stretch is an error.
            let (err, kinds) = read_with(&file(None), Leniency::strict());
            assert!(err.is_some() && kinds.is_empty(), "{kinds:?}");
            for (i, (off, kind, _)) in all.iter().enumerate() {
                let mut l = Leniency::lenient();
                off(&mut l);
                assert!(!l.allows(*kind) && !l.is_strict());
                // An error at its own stretch, the ones before it warnings.
                let (err, kinds) = read_with(&file(None), l);
                assert!(err.is_some(), "{kind:?} off: no error");
                assert_eq!(kinds, want[..i], "{kind:?} off");
                // Without its stretch, the file reads with the others' warnings.
                let (err, kinds) = read_with(&file(Some(i)), l);
                assert!(err.is_none(), "{kind:?} off: {err:?}");
                let mut others = want.clone();
                others.remove(i);
                assert_eq!(kinds, others, "{kind:?} off");
            }
        }
    }

    /// `strict: true` is shorthand for the strict preset, whatever
    /// `leniency` says.
    #[test]
    fn strict_flag_wins_over_knobs() {
        let o = ReaderOptions {
            strict: true,
            ..ReaderOptions::default()
        };
        assert!(o.effective_leniency().is_strict());
        assert!(ReaderOptions::strict().effective_leniency().is_strict());
        assert_eq!(
            ReaderOptions::default().effective_leniency(),
            Leniency::lenient()
        );
        assert_eq!(Leniency::default(), Leniency::lenient());
    }

    #[test]
    fn plain_records_any_chunking() {
        let mut data = rec("warcinfo", "software: x\r\n");
        let second = data.len() as u64;
        data.extend(rec("response", "HTTP/1.1 200 OK\r\n\r\nhi"));
        for chunk in [1, 2, 3, 7, 64, 1 << 20] {
            let s = read_all(strict(MemSource::plain(&data, chunk))).unwrap();
            assert_eq!(
                s.types,
                [RecordType::Warcinfo, RecordType::Response],
                "{chunk}"
            );
            assert_eq!(s.bodies[1], b"HTTP/1.1 200 OK\r\n\r\nhi");
            assert_eq!(s.offsets, [0, second]);
            assert_eq!(s.lens, [Some(second), Some(data.len() as u64 - second)]);
            assert!(s.warnings.is_empty());
        }
    }

    #[test]
    fn member_offsets_are_member_starts() {
        let a = rec("request", "GET / HTTP/1.1\r\n\r\n");
        let b = rec("response", "HTTP/1.1 200 OK\r\n\r\nbody");
        let src = MemSource::members(&[&a, &b], 5);
        let ends = src.extents();
        let s = read_all(strict(src)).unwrap();
        assert_eq!(s.offsets, [ends[0].0, ends[1].0]);
        assert_eq!(
            s.lens,
            [Some(ends[0].1 - ends[0].0), Some(ends[1].1 - ends[1].0)]
        );
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn whole_file_member_has_no_stored_len() {
        let mut all = rec("request", "a");
        all.extend(rec("response", "b"));
        let s = read_all(lenient(MemSource::members(&[&all], 4096))).unwrap();
        assert_eq!(s.offsets, [0, 0]);
        assert_eq!(s.lens[0], None);
        assert!(s.lens[1].is_some());
        assert!(s.warned(WarningKind::NotRecordAtATime));
    }

    #[test]
    fn lenient_recoveries_are_reported() {
        // Bare LF, a bad trailer, garbage between records, a truncated last record.
        let mut data = b"WARC/1.0\nWARC-Type: resource\nContent-Length: 3\n\nabc\n\n".to_vec();
        data.extend(b"garbage here\r\n");
        data.extend(rec("metadata", "m"));
        data.extend(b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 100\r\n\r\nshort");
        for chunk in [1, 3, 4096] {
            let s = read_all(lenient(MemSource::plain(&data, chunk))).unwrap();
            assert_eq!(
                s.types,
                [
                    RecordType::Resource,
                    RecordType::Metadata,
                    RecordType::Resource
                ]
            );
            assert_eq!(s.bodies[0], b"abc");
            assert_eq!(s.bodies[2], b"short");
            let kinds: Vec<_> = s.warnings.iter().map(|w| w.kind).collect();
            assert!(kinds.contains(&WarningKind::BareLf), "{kinds:?}");
            assert!(kinds.contains(&WarningKind::BadTrailer), "{kinds:?}");
            assert!(kinds.contains(&WarningKind::SkippedBytes), "{kinds:?}");
            assert!(kinds.contains(&WarningKind::TruncatedRecord), "{kinds:?}");
            let skipped = s
                .warnings
                .iter()
                .find(|w| w.kind == WarningKind::SkippedBytes)
                .unwrap();
            assert!(skipped.message.contains("14 bytes"), "{}", skipped.message);
            // Strict fails on the first of them.
            assert!(read_all(strict(MemSource::plain(&data, chunk))).is_err());
        }
    }

    #[test]
    fn wrong_content_length_in_gzip_member_is_cut() {
        let mut a = rec("response", "0123456789");
        // Claim 20 bytes: the member holds only 10 of them.
        let s = String::from_utf8(a.clone())
            .unwrap()
            .replace("Content-Length: 10", "Content-Length: 20");
        a = s.into_bytes();
        let b = rec("request", "x");
        let r = read_all(lenient(MemSource::members(&[&a, &b], 4096))).unwrap();
        assert_eq!(r.types, [RecordType::Response, RecordType::Request]);
        // The 4 trailer bytes are read as block before the member ends.
        assert_eq!(r.bodies[0], b"0123456789\r\n\r\n");
        assert!(r.warned(WarningKind::BadContentLength));
        assert!(read_all(strict(MemSource::members(&[&a, &b], 4096))).is_err());
    }

    #[test]
    fn header_limit_and_missing_content_length() {
        let mut opts = ReaderOptions::strict();
        opts.limits.max_header_block = 64;
        let big = format!("WARC/1.1\r\nX: {}\r\n\r\n", "a".repeat(100));
        let mut r = Reader::from_source(MemSource::plain(big.as_bytes(), 7), opts);
        let e = r.next_record().err().unwrap();
        assert!(matches!(e.kind(), ErrorKind::TooLarge { .. }));
        assert_eq!(e.position().unwrap().offset, 0);
        // Fused after the error.
        assert!(r.next_record().unwrap().is_none());

        let mut data = b"WARC/1.1\r\nWARC-Type: resource\r\n\r\nlost body\r\n\r\n".to_vec();
        data.extend(rec("metadata", "m"));
        let s = read_all(lenient(MemSource::plain(&data, 5))).unwrap();
        assert_eq!(s.types, [RecordType::Resource, RecordType::Metadata]);
        assert!(s.warned(WarningKind::BadContentLength));
    }

    /// Issue 19: one header line over the limit loses its record, not the
    /// records after it (lenient); strict reading stops there.
    #[test]
    fn header_over_the_limit_resyncs_at_the_next_record() {
        let bad = format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nX-Long: {}\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n",
            "a".repeat(2 << 20)
        )
        .into_bytes();
        let (a, c, d) = (
            rec("warcinfo", "i"),
            rec("response", "r"),
            rec("metadata", "m"),
        );
        let plain = [a.clone(), bad.clone(), c.clone(), d.clone()].concat();
        // The bad record's stored offset: after the first record, or after
        // its member (stored as 20 bytes by MemSource::members).
        let sources = || {
            [
                ("plain", a.len() as u64, MemSource::plain(&plain, 4096)),
                ("members", 20, MemSource::members(&[&a, &bad, &c, &d], 4096)),
            ]
        };
        for (name, bad_at, src) in sources() {
            let s = read_all(lenient(src)).unwrap();
            assert_eq!(
                s.types,
                [
                    RecordType::Warcinfo,
                    RecordType::Response,
                    RecordType::Metadata
                ],
                "{name}"
            );
            let w = &s.warnings[0];
            assert_eq!(w.kind, WarningKind::SkippedBytes, "{name}: {w:?}");
            assert_eq!(w.offset, bad_at, "{name}: {w:?}");
            assert!(w.message.contains("longer than the limit"), "{name}: {w:?}");
        }
        for (name, bad_at, src) in sources() {
            let e = read_all(strict(src)).err().expect(name);
            assert!(
                matches!(e.kind(), ErrorKind::TooLarge { .. }),
                "{name}: {e}"
            );
            assert_eq!(e.position().unwrap().offset, bad_at, "{name}: {e}");
        }
    }

    #[test]
    fn resync_across_buffer_boundary() {
        let mut data = b"xxWAR".to_vec();
        data.extend(b"Z WARC");
        let start = data.len();
        data.extend(rec("resource", "r"));
        for chunk in [1, 2, 3, 5, 6, 7, 100] {
            let s = read_all(lenient(MemSource::plain(&data, chunk))).unwrap();
            assert_eq!(s.types, [RecordType::Resource], "chunk {chunk}");
            assert_eq!(s.offsets, [start as u64], "chunk {chunk}");
        }
    }

    #[test]
    fn a_false_start_split_across_reads_is_skipped_not_an_error() {
        // A record whose Content-Length is short by the trailer, so that
        // what follows it begins `WARC` but not `WARC/` (as another
        // record's header line would), then a record.
        let first = rec("resource", "a");
        let mut data = first.clone();
        let cut = data.len() - 4;
        data.truncate(cut);
        data.extend(b"WARC-Record-ID: <urn:x>\r\n\r\n");
        let start = data.len();
        data.extend(rec("resource", "b"));
        for chunk in [1, 2, 3, 4, 5, 6, 7, 100, 4096] {
            let s = read_all(lenient(MemSource::plain(&data, chunk)))
                .unwrap_or_else(|e| panic!("chunk {chunk}: {e}"));
            assert_eq!(s.offsets, [0, start as u64], "chunk {chunk}");
            assert!(
                s.warned(WarningKind::SkippedBytes),
                "chunk {chunk}: {:?}",
                s.warnings
            );
        }
        // A real start split so still reads, at its offset, and a prefix
        // the input ends in is still a cut header.
        let two = [first.clone(), rec("resource", "b")].concat();
        for chunk in [1, 2, 3, 4, 5, 6, 100] {
            let s = read_all(lenient(MemSource::plain(&two, chunk))).unwrap();
            assert_eq!(s.offsets, [0, first.len() as u64], "chunk {chunk}");
            assert!(s.warnings.is_empty(), "chunk {chunk}: {:?}", s.warnings);
        }
        let cut_end = [first.clone(), b"WAR".to_vec()].concat();
        let s = read_all(lenient(MemSource::plain(&cut_end, 1))).unwrap();
        assert_eq!(s.offsets, [0]);
        assert!(s.warned(WarningKind::TruncatedRecord), "{:?}", s.warnings);
    }

    #[test]
    fn gzip_appended_to_a_plain_file() {
        use std::io::Write;
        let mut data = rec("warcinfo", "a");
        let plain_len = data.len() as u64;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&rec("response", "b")).unwrap();
        data.extend(gz.finish().unwrap());
        let r = Reader::new(&data[..]);
        let s = read_all(r).unwrap();
        assert_eq!(s.types, [RecordType::Warcinfo, RecordType::Response]);
        assert_eq!(s.offsets, [0, plain_len]);
        assert_eq!(
            s.lens,
            [Some(plain_len), Some(data.len() as u64 - plain_len)]
        );
        assert!(s.warned(WarningKind::NotRecordAtATime));
        let r = Reader::with_options(&data[..], ReaderOptions::strict());
        assert!(read_all(r).is_err());
    }

    /// Counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        read: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl<R: std::io::Read> std::io::Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read.set(self.read.get() + n as u64);
            Ok(n)
        }
    }

    impl<R: std::io::Seek> std::io::Seek for Counting<R> {
        fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    #[test]
    fn seekable_plain_input_seeks_past_payloads() {
        let body = "x".repeat(3 << 20);
        let mut data = Vec::new();
        for _ in 0..4 {
            data.extend(rec("resource", &body));
        }
        // The last record is cut short.
        data.extend(rec("resource", &body));
        data.truncate(data.len() - (1 << 20));
        let read = std::rc::Rc::new(std::cell::Cell::new(0));
        let src = Counting {
            inner: std::io::Cursor::new(data.clone()),
            read: read.clone(),
        };
        let opts = ReaderOptions::lenient();
        let dec = Decoder::new_seekable(src, opts.decoder.clone()).unwrap();
        let mut r = Reader::from_source(dec, opts);
        let mut seen = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            let off = rec.location().offset;
            let end = rec.finish().unwrap();
            seen.push((off, end.stored_len, end.truncated));
        }
        // The same as reading every byte.
        let mut plain = Reader::new(&data[..]);
        let mut want = Vec::new();
        while let Some(rec) = plain.next_record().unwrap() {
            let off = rec.location().offset;
            let end = rec.finish().unwrap();
            want.push((off, end.stored_len, end.truncated));
        }
        assert_eq!(seen, want);
        assert_eq!(seen.len(), 5);
        assert!(seen[4].2, "the cut record is truncated");
        assert!(
            r.take_warnings()
                .iter()
                .any(|w| w.kind == WarningKind::TruncatedRecord)
        );
        // Far less than the 14 MiB were read.
        assert!(read.get() < 6 << 20, "{} bytes read", read.get());
    }

    #[test]
    fn truncated_header_ends_reading() {
        let mut data = rec("resource", "r");
        data.extend(b"WARC/1.1\r\nWARC-Type: res");
        let s = read_all(lenient(MemSource::plain(&data, 4))).unwrap();
        assert_eq!(s.types.len(), 1);
        assert!(s.warned(WarningKind::TruncatedRecord));
        let e = read_all(strict(MemSource::plain(&data, 4))).err().unwrap();
        assert!(matches!(e.kind(), ErrorKind::Truncated(_)));
    }

    /// A scan that passes `max_resync_scan` with records left after it
    /// stops the reader with an error naming where the unread rest begins;
    /// never a trailing-garbage warning. Damage that ends the input is
    /// still trailing garbage.
    #[test]
    fn resync_scan_limit_names_the_unread_rest() {
        let mut data = rec("resource", "a");
        let damage_at = data.len() as u64;
        data.extend(b"x".repeat(100));
        data.extend(rec("metadata", "b"));
        data.extend(rec("resource", "c"));
        let opts = |limit| {
            let mut o = ReaderOptions::lenient();
            o.limits.max_resync_scan = limit;
            o
        };
        for chunk in [1, 7, 4096] {
            let r = Reader::from_source(MemSource::plain(&data, chunk), opts(10));
            let e = read_all(r).err().expect("an error, not success");
            assert!(
                matches!(e.kind(), ErrorKind::TooLarge { limit: 10, .. }),
                "{e}"
            );
            assert_eq!(e.position().unwrap().offset, damage_at);
            assert!(e.to_string().contains("not read"), "{e}");
            // A limit the damage fits in: everything read.
            let r = Reader::from_source(MemSource::plain(&data, chunk), opts(200));
            assert_eq!(read_all(r).unwrap().bodies.len(), 3);
        }
        // Across gzip members too.
        let (a, b) = (rec("resource", "a"), rec("metadata", "b"));
        let junk = b"x".repeat(100);
        let src = MemSource::members(&[&a, &junk, &b], 3);
        let e = read_all(Reader::from_source(src, opts(10))).err().unwrap();
        assert!(matches!(e.kind(), ErrorKind::TooLarge { .. }), "{e}");
        // Damage to the end of the input: trailing garbage, however long.
        let mut data = rec("resource", "a");
        data.extend(b"x".repeat(100));
        let r = Reader::from_source(MemSource::plain(&data, 4096), opts(10));
        let s = read_all(r).unwrap();
        assert_eq!(s.warnings.len(), 1);
        assert_eq!(s.warnings[0].kind, WarningKind::TrailingGarbage);
    }
}
