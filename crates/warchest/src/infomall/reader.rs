//! Reading Web InfoMall records from a [`Source`].

use crate::error::Diagnostics;
use std::fs::File;
use std::path::Path;

use flate2::{Decompress, FlushDecompress, Status};

use super::Header;
use crate::codec::{Decoder, Source};
use crate::error::{Error, ErrorKind, Result, WarningKind};
use crate::fields::Fields;
use crate::framing::{self, Framing, is_line_end};
use crate::pushback::Pushback;
use crate::warc::{ReaderOptions, RecordEnd, RecordLocation, WarcHeader};

/// The record start the specification's recovery searches for (section 4).
const START: &[u8] = b"version:";
/// Decompressed bytes held at a time.
const OUT_SIZE: usize = 64 * 1024;
/// Longest gzip header looked for at the start of compressed content.
const MAX_GZIP_HEADER: usize = 4096;

/// How the content is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coding {
    /// As is.
    Stored,
    /// A zlib stream (RFC 1950), as every known writer made it.
    Zlib,
    /// A gzip member (accepted too).
    Gzip,
}

/// The record being read.
#[derive(Debug)]
struct Current {
    loc: RecordLocation,
    /// `length`: stored content bytes.
    length: u64,
    /// Stored content bytes not yet taken from the input.
    left: u64,
    coding: Coding,
    /// `unzip-length`, when present and a number.
    expected: Option<u64>,
    /// Content bytes handed out (decompressed for compressed content).
    produced: u64,
    /// Bytes the decompressor made.
    decoded: u64,
    /// The compressed stream reached its end marker.
    stream_end: bool,
    /// CRC-32 of the inflated bytes, for gzip content's trailer.
    crc: crc32fast::Hasher,
    /// Gzip content whose trailer the input cut: the truncation says it.
    trailer_cut: bool,
    /// No more content will come (end, damage, or truncation).
    stopped: bool,
    /// The end-of-content checks ran.
    checked: bool,
    truncated: bool,
    /// Stored content peeked at to tell HTTP from other content.
    prefix: Vec<u8>,
    prefix_pos: usize,
}

/// Which bytes the block reads next.
enum Ready {
    Prefix,
    Input(usize),
    Out,
    End,
}

/// Reads Web InfoMall records one at a time.
///
/// Each record is presented as the WARC header its conversion carries
/// ([`Record::header`]; docs/conversion.md has the mapping) with the
/// content as block: decompressed, streamed, in bounded memory. The
/// properties as written are [`Record::infomall_header`].
///
/// Lenient reading (the default) accepts, each with a
/// [`Warning`](crate::Warning): CR LF header lines ([`WarningKind::LineEnd`]); properties out of order,
/// in upper case, without a colon, or a missing `url` / `date`
/// ([`WarningKind::Grammar`]); dates that do not parse
/// ([`WarningKind::BadDate`]); a missing or extra blank line after the
/// content ([`WarningKind::BadTrailer`]); bytes that are not a record,
/// skipped up to the next `version:` ([`WarningKind::SkippedBytes`]);
/// content that does not inflate, inflates to another length than
/// `unzip-length`, or is gzip with a trailer (CRC-32, ISIZE) that does not
/// match or is cut short by `length` ([`WarningKind::DamagedContent`]); the input ending inside
/// a record ([`WarningKind::TruncatedRecord`]). A header interrupted by
/// another `version:` line is dropped and reading starts again there. The
/// last record may lack its final blank line. Strict reading fails on each.
pub struct Reader<S> {
    input: Pushback<S>,
    opts: ReaderOptions,
    label: String,
    next_index: u64,
    header: Header,
    view: WarcHeader,
    cur: Option<Current>,
    last_end: Option<RecordEnd>,
    diag: Diagnostics,
    done: bool,
    hbuf: Vec<u8>,
    zlib: Option<Decompress>,
    raw: Option<Decompress>,
    out: Vec<u8>,
    out_start: usize,
    out_end: usize,
}

impl Reader<Decoder<File>> {
    /// Opens the file at `path` for lenient reading.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
        Ok(Reader::with_options(f, ReaderOptions::default().file(path)))
    }
}

framing::reader_api!(input.src);

impl<S: Source> Reader<S> {
    /// A reader over an already built source.
    pub fn from_source(src: S, opts: ReaderOptions) -> Self {
        let diag = Diagnostics::new(opts.file.clone(), opts.effective_leniency());
        Reader {
            input: Pushback::new(src),
            label: crate::view::file_label(&opts),
            opts,
            next_index: 0,
            header: Header::default(),
            view: WarcHeader::from_fields(crate::warc::Version::V1_1, Fields::new()),
            cur: None,
            last_end: None,
            diag,
            done: false,
            hbuf: Vec::new(),
            zlib: None,
            raw: None,
            out: Vec::new(),
            out_start: 0,
            out_end: 0,
        }
    }

    fn warn(&mut self, kind: WarningKind, offset: u64, record: Option<u64>, msg: String) {
        let id = self.view.record_id().map(|s| s.into_owned());
        self.diag.warn(kind, offset, record, id, msg);
    }

    fn error(&self, kind: ErrorKind, offset: u64, record: Option<u64>) -> Error {
        self.diag.error(kind, offset, record, None)
    }

    /// A deviation: a warning when its knob is on, else an error.
    fn deviation(
        &mut self,
        kind: WarningKind,
        offset: u64,
        record: Option<u64>,
        msg: String,
    ) -> Result<()> {
        let id = self.view.record_id().map(|s| s.into_owned());
        self.diag.deviation(kind, offset, record, id, msg)
    }

    /// Skips line ends and damage up to the next `version:`. False at the
    /// end of the input.
    fn find_start(&mut self) -> Result<bool> {
        let mut blank = 0u64;
        let blank_at = self.input.stored_pos();
        loop {
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                if !self.input.next_member()? {
                    if blank > 0 {
                        self.deviation(
                            WarningKind::BadTrailer,
                            blank_at,
                            None,
                            format!("{blank} extra line-end bytes at the end of the input"),
                        )?;
                    }
                    return Ok(false);
                }
                continue;
            }
            let n = buf.iter().take_while(|&&b| is_line_end(b)).count();
            if n > 0 {
                blank += n as u64;
                self.input.consume(n);
                continue;
            }
            if blank > 0 {
                self.deviation(
                    WarningKind::BadTrailer,
                    blank_at,
                    None,
                    format!("{blank} extra line-end bytes between records"),
                )?;
                blank = 0;
            }
            if self.input.peek(START.len())? == START {
                return Ok(true);
            }
            let start = self.input.stored_pos();
            let knobs = *self.diag.leniency();
            let not_a_record = || ErrorKind::Syntax("expected a record header (`version:`)".into());
            if !knobs.skipped_bytes && !knobs.trailing_garbage {
                return Err(self.error(not_a_record(), start, None));
            }
            let (skipped, found) = self
                .input
                .skip_to(START, self.opts.limits.max_resync_scan)?;
            let limit = self.opts.limits.max_resync_scan;
            if found && skipped > limit {
                // Found past the limit (in a buffer that began within it):
                // the same error as any buffer size would give.
                return Err(self.error(crate::limits::scan_limit(limit), start, None));
            }
            if found && !knobs.skipped_bytes {
                return Err(self.error(not_a_record(), start, None));
            }
            if found {
                self.warn(
                    WarningKind::SkippedBytes,
                    start,
                    None,
                    format!("skipped {skipped} bytes that are not a Web InfoMall record"),
                );
                return Ok(true);
            }
            if !self.input.fill_buf()?.is_empty() {
                // The scan passed its limit with the member not done: the
                // rest of the input goes unread, an error that says so.
                return Err(self.error(crate::limits::scan_limit(limit), start, None));
            }
            let more = self.input.next_member()?;
            let kind = if more {
                WarningKind::SkippedBytes
            } else {
                WarningKind::TrailingGarbage
            };
            if !knobs.allows(kind) {
                return Err(self.error(not_a_record(), start, None));
            }
            self.warn(
                kind,
                start,
                None,
                format!("{skipped} bytes that are not a Web InfoMall record were skipped"),
            );
            if !more {
                return Ok(false);
            }
        }
    }

    /// Reads a header at `version:`. `Some(true)`: a record; `Some(false)`:
    /// not a record after all, look again; `None`: the input ended.
    fn read_header(&mut self) -> Result<Option<bool>> {
        let index = self.next_index;
        let codec = self.input.codec();
        let in_member = self.input.member_pos();
        let offset = self.input.stored_pos();
        let max = self.opts.limits.max_header_block;
        let mut buf = std::mem::take(&mut self.hbuf);
        buf.clear();
        let outcome = self.read_header_block(&mut buf, max, offset);
        let found = match outcome {
            Ok(f) => f,
            Err(e) => {
                self.hbuf = buf;
                return Err(e);
            }
        };
        if found != Some(true) {
            self.hbuf = buf;
            return Ok(found);
        }
        let header_len = buf.len() as u64;
        let mut issues = Vec::new();
        let fields = match Fields::parse(buf, 0, false, self.opts.limits.max_fields, &mut issues) {
            Ok(f) => f,
            Err(e) => {
                self.deviation(
                    WarningKind::Grammar,
                    offset,
                    None,
                    format!("not a record header: {e}"),
                )?;
                return Ok(Some(false));
            }
        };
        self.next_index += 1;
        // Old header buffer back for reuse.
        let old = std::mem::replace(&mut self.header, Header { fields });
        self.hbuf = old.fields.into_bytes();
        let at = crate::view::id_position(
            codec,
            offset,
            in_member,
            self.input.member_offset(),
            &self.opts,
        );
        let rec_id = crate::view::record_id(&self.label, offset, at, "");
        // Provisional view so warnings name the record id.
        self.view = self.header.warc_view(&rec_id, false, 0);
        self.check_grammar(&issues, offset, index)?;
        let length = match self.header.length() {
            Some(n) => n,
            None => {
                let msg = match self.header.get(super::property::LENGTH) {
                    Some(v) => format!(
                        "length {:?} is not a number; the content is skipped up to the next record",
                        String::from_utf8_lossy(&v)
                    ),
                    None => "no length property; the content is skipped up to the next record"
                        .to_string(),
                };
                if !self.diag.leniency().bad_content_length {
                    return Err(self.error(ErrorKind::Syntax(msg), offset, Some(index)));
                }
                self.warn(WarningKind::BadContentLength, offset, Some(index), msg);
                0
            }
        };
        let unzip = self.header.unzip_length();
        if let Some(None) = unzip {
            let v = self
                .header
                .get(super::property::UNZIP_LENGTH)
                .unwrap_or_default();
            self.deviation(
                WarningKind::Grammar,
                offset,
                Some(index),
                format!(
                    "unzip-length {:?} is not a number",
                    String::from_utf8_lossy(&v)
                ),
            )?;
        }
        let mut cur = Current {
            loc: RecordLocation {
                index,
                offset,
                codec,
                offset_in_member: in_member,
                header_len,
            },
            length,
            left: length,
            coding: Coding::Stored,
            expected: unzip.flatten(),
            produced: 0,
            decoded: 0,
            stream_end: false,
            stopped: false,
            checked: false,
            truncated: false,
            prefix: Vec::new(),
            prefix_pos: 0,
            crc: crc32fast::Hasher::new(),
            trailer_cut: false,
        };
        if unzip.is_some() {
            cur.coding = self.sniff_coding(&mut cur, offset, index)?;
        }
        self.cur = Some(cur);
        let (http, content_length) = self.peek_content()?;
        self.view = self.header.warc_view(&rec_id, http, content_length);
        Ok(Some(true))
    }

    /// Reads the header block into `buf`. `Some(true)` when complete.
    fn read_header_block(
        &mut self,
        buf: &mut Vec<u8>,
        max: usize,
        offset: u64,
    ) -> Result<Option<bool>> {
        loop {
            let chunk = self.input.fill_buf()?;
            if chunk.is_empty() {
                let more = self.input.next_member()?;
                let msg = format!(
                    "the {} ends inside a record header, after {} bytes",
                    if more { "compressed member" } else { "input" },
                    buf.len()
                );
                if !self.diag.leniency().truncated_record {
                    return Err(self.error(ErrorKind::Truncated(msg), offset, None));
                }
                self.warn(WarningKind::TruncatedRecord, offset, None, msg);
                return Ok(if more { Some(false) } else { None });
            }
            // Another record start (`version:` at a line start) before the
            // blank line means this header is damaged: reading stops there,
            // so that the next attempt starts at it and nothing is read
            // twice (a run of starts costs linear time).
            let interrupted = memchr::memmem::find_iter(chunk, START).find(|&p| {
                if p == 0 {
                    buf.last() == Some(&b'\n')
                } else {
                    chunk[p - 1] == b'\n'
                }
            });
            let scan_to = interrupted.unwrap_or(chunk.len());
            let end = framing::header_end(buf, &chunk[..scan_to]);
            if let (None, Some(p)) = (end, interrupted)
                && buf.len() + p <= max
            {
                buf.extend_from_slice(&chunk[..p]);
                self.input.consume(p);
                let msg = format!(
                    "the record header at offset {offset} is interrupted by another `version:` after {} bytes; that part is skipped",
                    buf.len()
                );
                self.deviation(WarningKind::Grammar, offset, None, msg)?;
                return Ok(Some(false));
            }
            let take = end.unwrap_or(chunk.len());
            if buf.len() + take > max {
                if !self.diag.leniency().grammar {
                    return Err(self.error(
                        ErrorKind::TooLarge {
                            what: "Web InfoMall record header",
                            limit: max as u64,
                        },
                        offset,
                        None,
                    ));
                }
                // No blank line within the limit: not a header. No other
                // `version:` is inside (see below) but for one cut at the end.
                self.warn(
                    WarningKind::Grammar,
                    offset,
                    None,
                    format!("no blank line within {max} bytes of `version:`: not a record header"),
                );
                let keep = buf.len().saturating_sub(START.len()).max(1);
                let rest = buf.get(keep..).unwrap_or_default().to_vec();
                self.input.unread(&rest);
                return Ok(Some(false));
            }
            let before = buf.len();
            buf.extend_from_slice(&chunk[..take]);
            self.input.consume(take);
            // A start cut in two by the end of the last buffer.
            let from = before.saturating_sub(START.len());
            if let Some(q) = memchr::memmem::find(&buf[from..], b"\nversion:") {
                let at = from + q + 1;
                self.input.unread(&buf[at..]);
                buf.truncate(at);
                let msg = format!(
                    "the record header at offset {offset} is interrupted by another `version:` after {at} bytes; that part is skipped"
                );
                self.deviation(WarningKind::Grammar, offset, None, msg)?;
                return Ok(Some(false));
            }
            if end.is_some() {
                return Ok(Some(true));
            }
        }
    }

    /// Reports how the header strays from the specification's section 2.
    fn check_grammar(
        &mut self,
        issues: &[crate::fields::FieldIssue],
        offset: u64,
        index: u64,
    ) -> Result<()> {
        let rec = Some(index);
        for is in issues {
            let what = match is.kind {
                WarningKind::LineWithoutColon => "a header line without a colon was ignored",
                WarningKind::SpaceBeforeColon => "white space before a property's colon",
                WarningKind::BadFieldName => "a property name with unexpected characters",
                _ => continue,
            };
            self.deviation(WarningKind::Grammar, offset, rec, what.to_string())?;
        }
        if self.header.as_bytes().contains(&b'\r') {
            self.deviation(
                WarningKind::LineEnd,
                offset,
                rec,
                "header lines end in CR LF; the format's line end is LF".into(),
            )?;
        }
        let h = &self.header;
        let mut problems = Vec::new();
        if h.fields
            .iter()
            .any(|f| f.name().iter().any(u8::is_ascii_uppercase))
        {
            problems.push("property names are not all lower case".to_string());
        }
        // Names are lower-case words (rule 7); anything else in a name is
        // most likely damage.
        if let Some(f) = h.fields.iter().find(|f| {
            !f.name()
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        }) {
            problems.push(format!("property name {:?} is not a word", f.name_str()));
        }
        match h.fields.iter().last() {
            Some(f) if f.is(super::property::LENGTH) => {}
            Some(f) => problems.push(format!(
                "the last property is {:?}, not length",
                f.name_str()
            )),
            None => {}
        }
        if h.url().is_none() {
            problems.push("no url property".into());
        }
        let date = match h.date_value() {
            None => Some("no date property; WARC-Date is 1970-01-01".to_string()),
            Some(v) if h.date().is_none() => Some(format!(
                "date {:?} does not parse; WARC-Date is 1970-01-01",
                String::from_utf8_lossy(&v)
            )),
            Some(_) => None,
        };
        for p in problems {
            self.deviation(WarningKind::Grammar, offset, rec, p)?;
        }
        if let Some(msg) = date {
            self.deviation(WarningKind::BadDate, offset, rec, msg)?;
        }
        Ok(())
    }

    /// Tells zlib from gzip from anything else at the start of content
    /// that has `unzip-length`.
    fn sniff_coding(&mut self, cur: &mut Current, offset: u64, index: u64) -> Result<Coding> {
        let want = usize::try_from(cur.left.min(MAX_GZIP_HEADER as u64)).unwrap_or(0);
        let head = self.input.peek(want.min(3))?;
        if head.len() >= 2 {
            let (cmf, flg) = (head[0], head[1]);
            if cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
            {
                return Ok(Coding::Zlib);
            }
            if head.len() >= 3 && head[..3] == [0x1f, 0x8b, 0x08] {
                let head = self.input.peek(want)?;
                if let Ok(Some(h)) = crate::codec::parse_gzip_header(&head) {
                    let n = h.len.min(cur.left);
                    self.input.skip(n)?;
                    cur.left -= n;
                    return Ok(Coding::Gzip);
                }
            }
        }
        if cur.length > 0 {
            self.deviation(
                WarningKind::DamagedContent,
                offset,
                Some(index),
                "unzip-length is present but the content is neither zlib nor gzip; it is kept as stored".into(),
            )?;
        }
        Ok(Coding::Stored)
    }

    /// Looks at the first content bytes: is it HTTP? Also gives the
    /// content length the WARC view declares.
    fn peek_content(&mut self) -> Result<(bool, u64)> {
        let Some(coding) = self.cur.as_ref().map(|c| c.coding) else {
            return Ok((false, 0));
        };
        if coding == Coding::Stored {
            let mut prefix = Vec::new();
            let want = self.cur.as_ref().map_or(0, |c| c.left.min(5) as usize);
            self.input.read_some(&mut prefix, want)?;
            let http = crate::view::is_http_response(&prefix);
            if let Some(c) = self.cur.as_mut() {
                c.left -= prefix.len() as u64;
                c.prefix = prefix;
                return Ok((http, c.length));
            }
            return Ok((http, 0));
        }
        self.out_start = 0;
        self.out_end = 0;
        while self.out_end - self.out_start < 5 && !self.cur.as_ref().is_none_or(|c| c.stopped) {
            self.decode_step()?;
        }
        let http = crate::view::is_http_response(&self.out[self.out_start..self.out_end]);
        let len = self
            .cur
            .as_ref()
            .map_or(0, |c| c.expected.unwrap_or(c.length));
        Ok((http, len))
    }

    /// Inflates more content into the output buffer.
    fn decode_step(&mut self) -> Result<()> {
        let truncation_is_error = !self.diag.leniency().truncated_record;
        let Some(cur) = self.cur.as_mut() else {
            return Ok(());
        };
        if cur.stopped {
            return Ok(());
        }
        let (index, offset) = (cur.loc.index, cur.loc.offset);
        if cur.left == 0 {
            cur.stopped = true;
            let msg = format!(
                "the content ends before its {} stream does, after {} decompressed bytes",
                if cur.coding == Coding::Gzip {
                    "gzip"
                } else {
                    "zlib"
                },
                cur.decoded
            );
            return self.deviation(WarningKind::DamagedContent, offset, Some(index), msg);
        }
        if self.out.len() < OUT_SIZE {
            self.out.resize(OUT_SIZE, 0);
        }
        if self.out_start > 0 {
            self.out.copy_within(self.out_start..self.out_end, 0);
            self.out_end -= self.out_start;
            self.out_start = 0;
        }
        if self.out_end == self.out.len() {
            return Ok(());
        }
        let input = self.input.fill_buf()?;
        if input.is_empty() {
            cur.stopped = true;
            cur.truncated = true;
            let msg = format!(
                "length is {} but the input ends after {} content bytes",
                cur.length,
                cur.length - cur.left
            );
            if truncation_is_error {
                return Err(self.error(ErrorKind::Truncated(msg), offset, Some(index)));
            }
            self.warn(WarningKind::TruncatedRecord, offset, Some(index), msg);
            return Ok(());
        }
        let take = usize::try_from(cur.left)
            .unwrap_or(usize::MAX)
            .min(input.len());
        let dec = match cur.coding {
            Coding::Gzip => self.raw.get_or_insert_with(|| Decompress::new(false)),
            _ => self.zlib.get_or_insert_with(|| Decompress::new(true)),
        };
        let (before_in, before_out) = (dec.total_in(), dec.total_out());
        let status = dec.decompress(
            &input[..take],
            &mut self.out[self.out_end..],
            FlushDecompress::None,
        );
        let used = (dec.total_in() - before_in) as usize;
        let made = (dec.total_out() - before_out) as usize;
        self.input.consume(used);
        cur.left -= used as u64;
        cur.decoded += made as u64;
        if cur.coding == Coding::Gzip {
            cur.crc.update(&self.out[self.out_end..self.out_end + made]);
        }
        self.out_end += made;
        match status {
            Ok(Status::StreamEnd) => {
                cur.stream_end = true;
                cur.stopped = true;
                if cur.coding == Coding::Gzip {
                    return self.check_gzip_trailer();
                }
            }
            Ok(_) if used == 0 && made == 0 => {
                cur.stopped = true;
                let msg = "the compressed content makes no progress".to_string();
                return self.deviation(WarningKind::DamagedContent, offset, Some(index), msg);
            }
            Ok(_) => {}
            Err(e) => {
                cur.stopped = true;
                let msg = format!(
                    "the compressed content does not inflate after {} bytes: {e}",
                    cur.decoded
                );
                return self.deviation(WarningKind::DamagedContent, offset, Some(index), msg);
            }
        }
        Ok(())
    }

    /// At the end of gzip content's deflate stream: its 8-byte trailer,
    /// CRC-32 and ISIZE (RFC 1952), against what was inflated. A trailer
    /// cut by `length` or not matching is damaged content; one cut by the
    /// end of the input is left to the truncation check.
    fn check_gzip_trailer(&mut self) -> Result<()> {
        let Some(cur) = self.cur.as_mut() else {
            return Ok(());
        };
        let (index, offset) = (cur.loc.index, cur.loc.offset);
        let want = cur.left.min(8) as usize;
        let mut t = Vec::with_capacity(8);
        self.input.read_some(&mut t, want)?;
        cur.left -= t.len() as u64;
        if t.len() < want {
            cur.trailer_cut = true;
            return Ok(());
        }
        let msg = if t.len() < 8 {
            format!(
                "the gzip trailer is cut: length leaves {} of its 8 bytes",
                t.len()
            )
        } else {
            let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
            let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
            let got_crc = cur.crc.clone().finalize();
            let got_size = cur.decoded as u32;
            if crc == got_crc && isize == got_size {
                return Ok(());
            }
            format!(
                "the gzip trailer does not match the content: CRC-32 {crc:08x}, ISIZE {isize}; inflated {got_crc:08x}, {got_size} bytes (mod 2^32)"
            )
        };
        self.deviation(WarningKind::DamagedContent, offset, Some(index), msg)
    }

    /// The checks made once all the content has been handed out.
    fn check_end(&mut self) -> Result<()> {
        let Some(cur) = self.cur.as_mut() else {
            return Ok(());
        };
        if cur.checked {
            return Ok(());
        }
        cur.checked = true;
        if cur.truncated {
            return Ok(());
        }
        let (index, offset) = (cur.loc.index, cur.loc.offset);
        let Some(expected) = cur.expected else {
            return Ok(());
        };
        let got = if cur.coding == Coding::Stored {
            cur.length
        } else {
            cur.decoded
        };
        if got == expected {
            return Ok(());
        }
        let msg = if cur.length == 0 {
            format!(
                "length is 0 but unzip-length is {expected}: the writer failed to compress this page (a known failure of the PKU crawler); the record is empty"
            )
        } else {
            format!("unzip-length is {expected} but the content decompresses to {got} bytes")
        };
        self.deviation(WarningKind::DamagedContent, offset, Some(index), msg)
    }

    /// Which bytes the block reads next.
    fn ready(&mut self) -> Result<Ready> {
        loop {
            let Some(cur) = self.cur.as_ref() else {
                return Ok(Ready::End);
            };
            if cur.coding == Coding::Stored {
                if cur.prefix_pos < cur.prefix.len() {
                    return Ok(Ready::Prefix);
                }
                if cur.left == 0 {
                    self.check_end()?;
                    return Ok(Ready::End);
                }
                let left = cur.left;
                let avail = self.input.fill_buf()?.len();
                if avail > 0 {
                    return Ok(Ready::Input(
                        usize::try_from(left).unwrap_or(usize::MAX).min(avail),
                    ));
                }
                // The input ended inside the content.
                let (index, offset, length) = (cur.loc.index, cur.loc.offset, cur.length);
                let msg = format!(
                    "length is {length} but the input ends after {} content bytes",
                    length - left
                );
                if !self.diag.leniency().truncated_record {
                    return Err(self.error(ErrorKind::Truncated(msg), offset, Some(index)));
                }
                self.warn(WarningKind::TruncatedRecord, offset, Some(index), msg);
                if let Some(c) = self.cur.as_mut() {
                    c.left = 0;
                    c.truncated = true;
                }
                continue;
            }
            if self.out_start < self.out_end {
                return Ok(Ready::Out);
            }
            if cur.stopped {
                self.check_end()?;
                return Ok(Ready::End);
            }
            self.decode_step()?;
        }
    }

    /// The blank line (one LF) after the content.
    fn read_trailer(&mut self, cur: &Current) -> Result<()> {
        let at = self.input.stored_pos();
        let p = self.input.peek(2)?;
        match p.as_slice() {
            [b'\n', ..] => self.input.consume(1),
            [b'\r', b'\n'] => {
                self.input.consume(2);
                self.deviation(
                    WarningKind::LineEnd,
                    at,
                    Some(cur.loc.index),
                    "the blank line after the content is CR LF, not LF".into(),
                )?;
            }
            // The last record may lack its blank line.
            [] => {}
            _ => {
                self.deviation(
                    WarningKind::BadTrailer,
                    at,
                    Some(cur.loc.index),
                    "the content is not followed by a blank line; length may be wrong".into(),
                )?;
            }
        }
        Ok(())
    }
}

impl<S: Source> Framing for Reader<S> {
    fn read_next(&mut self) -> Result<bool> {
        loop {
            if !self.find_start()? {
                return Ok(false);
            }
            match self.read_header()? {
                Some(true) => return Ok(true),
                Some(false) => continue,
                None => return Ok(false),
            }
        }
    }

    fn location(&self) -> Option<RecordLocation> {
        self.cur.as_ref().map(|c| c.loc)
    }

    fn drop_current(&mut self) {
        self.cur = None;
    }

    /// Skips the rest of the content and the blank line after it.
    fn finish_current(&mut self) -> Result<RecordEnd> {
        let Some(cur) = self.cur.as_ref() else {
            return Ok(self.last_end.unwrap_or(RecordEnd {
                stored_len: None,
                block_len: 0,
                truncated: false,
            }));
        };
        let (index, offset) = (cur.loc.index, cur.loc.offset);
        // Content fully handed out: the end checks run (they may have).
        let drained = self.out_start == self.out_end;
        if cur.stopped && drained {
            self.check_end()?;
        }
        let Some(cur) = self.cur.as_ref() else {
            return Err(Error::new(ErrorKind::Usage("no record".into())));
        };
        if cur.stream_end && cur.left > 0 && !cur.trailer_cut {
            let msg = format!(
                "{} stored bytes follow the end of the compressed stream",
                cur.left
            );
            self.deviation(WarningKind::DamagedContent, offset, Some(index), msg)?;
        }
        let Some(cur) = self.cur.as_mut() else {
            return Err(Error::new(ErrorKind::Usage("no record".into())));
        };
        let left = cur.left;
        let skipped = self.input.skip(left)?;
        cur.left -= skipped;
        if skipped < left && !cur.truncated {
            cur.truncated = true;
            let msg = format!(
                "length is {} but the input ends after {} content bytes",
                cur.length,
                cur.length - cur.left
            );
            if !self.diag.leniency().truncated_record {
                return Err(self.error(ErrorKind::Truncated(msg), offset, Some(index)));
            }
            self.warn(WarningKind::TruncatedRecord, offset, Some(index), msg);
        }
        let Some(cur) = self.cur.take() else {
            return Err(Error::new(ErrorKind::Usage("no record".into())));
        };
        self.out_start = 0;
        self.out_end = 0;
        if cur.coding == Coding::Zlib
            && let Some(d) = self.zlib.as_mut()
        {
            d.reset(true);
        }
        if cur.coding == Coding::Gzip
            && let Some(d) = self.raw.as_mut()
        {
            d.reset(false);
        }
        if !cur.truncated {
            self.read_trailer(&cur)?;
        }
        let block_len = match cur.coding {
            Coding::Stored => cur.length - cur.left,
            // Compressed content skipped before its end, all of it there:
            // how much of it was decoded depends on how much input was
            // buffered when its head was peeked at, so that count would
            // differ between a stream and a seekable file. The declared
            // length is the same either way (a compressed record always
            // has one; strict reading requires it to be a number). Cut
            // short, what was decoded is what is there.
            _ if !cur.stopped && !cur.truncated => cur.expected.unwrap_or(cur.decoded),
            _ => cur.decoded,
        };
        let rec_end =
            framing::record_end(&mut self.input, &cur.loc, None, block_len, cur.truncated)?;
        self.last_end = Some(rec_end);
        Ok(rec_end)
    }

    fn block_ready(&mut self) -> Result<()> {
        self.ready().map(|_| ())
    }

    fn block_fill(&mut self) -> Result<&[u8]> {
        match self.ready()? {
            Ready::End => Ok(&[]),
            Ready::Prefix => {
                let c = self.cur.as_ref().map(|c| &c.prefix[c.prefix_pos..]);
                Ok(c.unwrap_or_default())
            }
            Ready::Input(n) => Ok(&self.input.fill_buf()?[..n]),
            Ready::Out => Ok(&self.out[self.out_start..self.out_end]),
        }
    }

    fn block_consume(&mut self, n: usize) {
        let Some(cur) = self.cur.as_mut() else {
            return;
        };
        cur.produced += n as u64;
        if cur.coding != Coding::Stored {
            self.out_start = (self.out_start + n).min(self.out_end);
        } else if cur.prefix_pos < cur.prefix.len() {
            cur.prefix_pos = (cur.prefix_pos + n).min(cur.prefix.len());
        } else {
            self.input.consume(n);
            cur.left -= n as u64;
        }
    }

    fn view(&self) -> &WarcHeader {
        &self.view
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

/// A Web InfoMall record being read: its WARC view, its properties and its
/// content.
pub type Record<'r, S> = framing::Record<'r, Reader<S>>;

impl<S: Source> Record<'_, S> {
    /// The properties as written.
    pub fn infomall_header(&self) -> &Header {
        &self.reader.header
    }

    /// The header as stored, `version` to blank line.
    pub fn raw_header(&self) -> &[u8] {
        self.reader.header.as_bytes()
    }

    /// How the content is stored.
    pub(crate) fn coding(&self) -> Coding {
        self.reader
            .cur
            .as_ref()
            .map_or(Coding::Stored, |c| c.coding)
    }

    /// `length`: the stored content length as declared.
    pub fn stored_length(&self) -> u64 {
        self.reader.cur.as_ref().map_or(0, |c| c.length)
    }

    /// True when the content is compressed (and decompressed on reading).
    pub fn is_compressed(&self) -> bool {
        self.coding() != Coding::Stored
    }
}

/// The content of the current Web InfoMall record as a stream
/// (decompressed).
pub type BlockReader<'a, S> = framing::BlockReader<'a, Reader<S>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Warning;
    use crate::test_source::MemSource;
    use std::io::Write;

    pub(crate) fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn record(url: &str, content: &[u8], compress: bool) -> Vec<u8> {
        let mut v =
            format!("version: 1.0\nurl: {url}\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nip: 1.2.3.4\n")
                .into_bytes();
        let stored = if compress {
            zlib(content)
        } else {
            content.to_vec()
        };
        if compress {
            v.extend(format!("unzip-length: {}\n", content.len()).bytes());
        }
        v.extend(format!("length: {}\n\n", stored.len()).bytes());
        v.extend(&stored);
        v.push(b'\n');
        v
    }

    fn read_with(data: &[u8], leniency: crate::Leniency) -> (Option<Error>, Vec<WarningKind>) {
        crate::test_source::read_with(data, crate::archive::Format::InfoMall, leniency)
    }

    /// A Web InfoMall knob turned off makes its own deviation an error; the
    /// other deviations stay warnings.
    #[test]
    fn infomall_knobs_are_independent() {
        let bad_date = String::from_utf8(record("http://a.example/", b"aa", false))
            .unwrap()
            .replace("Tue, 28 Feb 2006 05:42:09 GMT", "yesterday");
        let crlf = String::from_utf8(record("http://b.example/", b"bb", false))
            .unwrap()
            .replacen("\nurl:", "\r\nurl:", 1);
        let clean = String::from_utf8(record("http://c.example/", b"cc", false)).unwrap();
        let file = |parts: &[&str]| parts.concat().into_bytes();
        let lenient = crate::Leniency::lenient();
        let (err, all) = read_with(&file(&[&bad_date, &crlf, &clean]), lenient);
        assert!(err.is_none(), "{err:?}");
        assert!(all.contains(&WarningKind::BadDate), "{all:?}");
        assert!(all.contains(&WarningKind::LineEnd), "{all:?}");
        type Knob = fn(&mut crate::Leniency);
        let knobs: [(Knob, WarningKind, &str); 2] = [
            (|l| l.bad_date = false, WarningKind::BadDate, &bad_date),
            (|l| l.line_end = false, WarningKind::LineEnd, &crlf),
        ];
        for (off, kind, part) in knobs {
            let mut l = lenient;
            off(&mut l);
            let first = all.iter().position(|&k| k == kind).unwrap();
            let (err, kinds) = read_with(&file(&[&bad_date, &crlf, &clean]), l);
            assert!(err.is_some(), "{kind:?} off: no error");
            assert_eq!(kinds, all[..first], "{kind:?} off");
            // Without that record the others' warnings are all there.
            let rest: Vec<&str> = [&bad_date, &crlf, &clean]
                .into_iter()
                .map(String::as_str)
                .filter(|p| *p != part)
                .collect();
            let (err, kinds) = read_with(&file(&rest), l);
            assert!(err.is_none(), "{kind:?} off: {err:?}");
            let others: Vec<_> = all.iter().copied().filter(|&k| k != kind).collect();
            assert_eq!(kinds, others, "{kind:?} off");
        }
    }

    struct Seen {
        uris: Vec<String>,
        bodies: Vec<Vec<u8>>,
        types: Vec<String>,
        offsets: Vec<u64>,
        lens: Vec<Option<u64>>,
        warnings: Vec<Warning>,
    }

    fn read_all<S: Source>(mut r: Reader<S>) -> Result<Seen> {
        let mut s = Seen {
            uris: vec![],
            bodies: vec![],
            types: vec![],
            offsets: vec![],
            lens: vec![],
            warnings: vec![],
        };
        while let Some(mut rec) = r.next_record()? {
            s.uris
                .push(rec.header().target_uri().unwrap_or_default().into_owned());
            s.types.push(
                rec.header()
                    .record_type_str()
                    .unwrap_or_default()
                    .into_owned(),
            );
            s.offsets.push(rec.location().offset);
            s.bodies.push(rec.read_block()?);
            s.lens.push(rec.finish()?.stored_len);
        }
        s.warnings = r.take_warnings();
        Ok(s)
    }

    fn lenient(data: &[u8], chunk: usize) -> Reader<MemSource> {
        Reader::from_source(MemSource::plain(data, chunk), ReaderOptions::lenient())
    }

    fn strict(data: &[u8], chunk: usize) -> Reader<MemSource> {
        Reader::from_source(MemSource::plain(data, chunk), ReaderOptions::strict())
    }

    const PAGE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hello</html>";

    #[test]
    fn compressed_and_stored_records_any_chunking() {
        let a = record("http://a/", PAGE, true);
        let b = record("http://b/", b"not http at all", false);
        let mut data = a.clone();
        data.extend(&b);
        for chunk in [1, 2, 3, 5, 7, 64, 1 << 20] {
            let s = read_all(strict(&data, chunk)).unwrap();
            assert_eq!(s.uris, ["http://a/", "http://b/"], "chunk {chunk}");
            assert_eq!(s.bodies[0], PAGE, "chunk {chunk}");
            assert_eq!(s.bodies[1], b"not http at all");
            assert_eq!(s.types, ["response", "resource"]);
            assert_eq!(s.offsets, [0, a.len() as u64]);
            assert_eq!(s.lens, [Some(a.len() as u64), Some(b.len() as u64)]);
            assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        }
    }

    #[test]
    fn view_header_fields() {
        let data = record("http://a/ b", PAGE, true);
        let mut r = lenient(&data, 100);
        let rec = r.next_record().unwrap().unwrap();
        let h = rec.header();
        assert_eq!(h.get("WARC-Date").as_deref(), Some("2006-02-28T05:42:09Z"));
        assert_eq!(h.target_uri().as_deref(), Some("http://a/%20b"));
        assert_eq!(h.get("WARC-IP-Address").as_deref(), Some("1.2.3.4"));
        assert_eq!(h.content_length(), Some(PAGE.len() as u64));
        assert_eq!(
            h.content_type().as_deref(),
            Some("application/http; msgtype=response")
        );
        assert!(rec.is_compressed());
    }

    #[test]
    fn unread_content_is_skipped_and_ids_are_stable() {
        let mut data = record("http://a/", PAGE, true);
        data.extend(record("http://b/", PAGE, false));
        let ids = |d: &[u8]| {
            let mut r = Reader::from_source(
                MemSource::plain(d, 9),
                ReaderOptions::lenient().file("/x/page.dat"),
            );
            let mut v = Vec::new();
            while let Some(rec) = r.next_record().unwrap() {
                v.push(rec.header().record_id().unwrap().into_owned());
            }
            v
        };
        let a = ids(&data);
        assert_eq!(a.len(), 2);
        assert_eq!(a, ids(&data));
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn recoveries_are_warnings() {
        // Garbage, a header interrupted by another, CR LF lines, a wrong
        // unzip-length, a missing blank line, the tail cut.
        let mut data = b"garbage\n".to_vec();
        data.extend(b"version: 1.0\nurl: http://lost/\nversion: 1.0\nurl: http://c/\r\ndate: Tue, 28 Feb 2006 05:42:09 GMT\r\nlength: 2\r\n\r\nhi\n");
        let z = zlib(PAGE);
        let mut bad = format!(
            "version: 1.0\nurl: http://d/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nunzip-length: 5\nlength: {}\n\n",
            z.len()
        )
        .into_bytes();
        // No blank line after the content.
        bad.extend(&z);
        data.extend(&bad);
        let e = record("http://e/", PAGE, false);
        data.extend(&e[..e.len() - 10]);
        for chunk in [1, 4, 4096] {
            let s = read_all(lenient(&data, chunk)).unwrap();
            assert_eq!(
                s.uris,
                ["http://c/", "http://d/", "http://e/"],
                "chunk {chunk}"
            );
            assert_eq!(s.bodies[0], b"hi");
            assert_eq!(s.bodies[1], PAGE);
            let kinds: Vec<_> = s.warnings.iter().map(|w| w.kind).collect();
            for k in [
                WarningKind::SkippedBytes,
                WarningKind::Grammar,
                WarningKind::LineEnd,
                WarningKind::DamagedContent,
                WarningKind::TruncatedRecord,
            ] {
                assert!(kinds.contains(&k), "{k:?} missing in {kinds:?}");
            }
            assert!(read_all(strict(&data, chunk)).is_err());
        }
    }

    #[test]
    fn damaged_zlib_content() {
        let mut data = record("http://a/", PAGE, true);
        let k = memchr::memmem::find(&data, b"\n\n").unwrap() + 12;
        data[k] ^= 0xff;
        data[k + 1] ^= 0xff;
        data.extend(record("http://b/", PAGE, true));
        let s = read_all(lenient(&data, 16)).unwrap();
        assert_eq!(s.uris, ["http://a/", "http://b/"]);
        assert_ne!(s.bodies[0], PAGE);
        assert_eq!(s.bodies[1], PAGE);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.kind == WarningKind::DamagedContent && w.record == Some(0)),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn length_zero_with_unzip_length() {
        let data = b"version: 1.0\nurl: http://a/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nunzip-length: 40\nlength: 0\n\n\n";
        let s = read_all(lenient(data, 3)).unwrap();
        assert_eq!(s.bodies, [Vec::<u8>::new()]);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.message.contains("failed to compress"))
        );
    }

    #[test]
    fn runs_of_starts_take_linear_time() {
        // Two MiB of `version:` lines and no blank line: no record, and
        // each byte is looked at a bounded number of times.
        let mut data = b"version:\n".repeat(230_000);
        data.extend(record("http://b/", PAGE, true));
        let t = std::time::Instant::now();
        let s = read_all(lenient(&data, 1 << 16)).unwrap();
        assert_eq!(s.uris, ["http://b/"]);
        assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    }

    #[test]
    fn header_limit_is_not_a_header() {
        let mut opts = ReaderOptions::lenient();
        opts.limits.max_header_block = 200;
        let mut data = format!("version: 1.0\nurl: {}\n", "a".repeat(300)).into_bytes();
        data.extend(record("http://b/", PAGE, true));
        let s = read_all(Reader::from_source(MemSource::plain(&data, 7), opts)).unwrap();
        assert_eq!(s.uris, ["http://b/"]);
    }

    /// A scan that passes `max_resync_scan` with records left after it
    /// stops the reader with an error naming where the unread rest begins;
    /// damage that ends the input is still trailing garbage.
    #[test]
    fn resync_scan_limit_names_the_unread_rest() {
        let mut data = record("http://a/", PAGE, false);
        let damage_at = data.len() as u64;
        data.extend(b"x".repeat(100));
        data.extend(record("http://b/", PAGE, false));
        data.extend(record("http://c/", PAGE, true));
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
            let r = Reader::from_source(MemSource::plain(&data, chunk), opts(200));
            assert_eq!(read_all(r).unwrap().uris.len(), 3);
        }
        let mut data = record("http://a/", PAGE, false);
        data.extend(b"x".repeat(100));
        let r = Reader::from_source(MemSource::plain(&data, 4096), opts(10));
        let s = read_all(r).unwrap();
        let kinds: Vec<_> = s.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, [WarningKind::TrailingGarbage]);
    }

    /// A record whose content is a gzip member (not zlib).
    fn gzip_record(url: &str, content: &[u8], edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(content).unwrap();
        let mut z = e.finish().unwrap();
        edit(&mut z);
        let mut v = format!(
            "version: 1.0\nurl: {url}\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nunzip-length: {}\nlength: {}\n\n",
            content.len(),
            z.len()
        )
        .into_bytes();
        v.extend(&z);
        v.push(b'\n');
        v
    }

    /// Gzip content's trailer is checked: CRC-32 and ISIZE against what
    /// was inflated, and a trailer cut by `length` said to be cut.
    #[test]
    fn gzip_content_trailer_is_checked() {
        let damaged = |s: &Seen| -> Vec<String> {
            s.warnings
                .iter()
                .filter(|w| w.kind == WarningKind::DamagedContent)
                .map(|w| w.message.clone())
                .collect()
        };
        for chunk in [1, 5, 4096] {
            // Good: no warning, and a record after it read.
            let mut data = gzip_record("http://a/", PAGE, |_| {});
            data.extend(record("http://b/", PAGE, true));
            let s = read_all(lenient(&data, chunk)).unwrap();
            assert_eq!(s.bodies, [PAGE, PAGE], "chunk {chunk}");
            assert!(s.warnings.is_empty(), "{:?}", s.warnings);
            // A flipped CRC byte, then a flipped ISIZE byte.
            for back in [8, 3] {
                let mut data = gzip_record("http://a/", PAGE, |z| {
                    let k = z.len() - back;
                    z[k] ^= 1;
                });
                data.extend(record("http://b/", PAGE, true));
                let s = read_all(lenient(&data, chunk)).unwrap();
                assert_eq!(s.bodies, [PAGE, PAGE], "chunk {chunk}");
                let d = damaged(&s);
                assert_eq!(d.len(), 1, "{d:?}");
                assert!(d[0].contains("trailer does not match"), "{d:?}");
                assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
                assert!(read_all(strict(&data, chunk)).is_err());
            }
            // A trailer cut to 3 bytes by length.
            let mut data = gzip_record("http://a/", PAGE, |z| z.truncate(z.len() - 5));
            data.extend(record("http://b/", PAGE, true));
            let s = read_all(lenient(&data, chunk)).unwrap();
            assert_eq!(s.uris, ["http://a/", "http://b/"]);
            let d = damaged(&s);
            assert_eq!(d.len(), 1, "{d:?}");
            assert!(
                d[0].contains("trailer is cut") && d[0].contains("3 of"),
                "{d:?}"
            );
            // Cut by the end of the input: a truncated record, no more.
            let data = gzip_record("http://a/", PAGE, |_| {});
            let cut = &data[..data.len() - 5];
            let s = read_all(lenient(cut, chunk)).unwrap();
            let kinds: Vec<_> = s.warnings.iter().map(|w| w.kind).collect();
            assert_eq!(kinds, [WarningKind::TruncatedRecord], "{:?}", s.warnings);
        }
    }
}
