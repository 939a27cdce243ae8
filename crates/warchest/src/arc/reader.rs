//! Reading ARC records from a [`Source`].

use crate::error::Diagnostics;
use std::fs::File;
use std::path::Path;

use super::{ArcHeader, ArcVersion, Trust, is_scheme_start};
use crate::codec::{Codec, Decoder, Source};
use crate::error::{Error, ErrorKind, Result, WarningKind};
use crate::fields::Fields;
use crate::framing::{self, Framing, is_line_end};
use crate::pushback::Pushback;
use crate::warc::{ReaderOptions, RecordEnd, RecordLocation, WarcDate, WarcHeader};

/// Where the bytes of a record's block come from next.
enum Ready {
    Prefix,
    Input(usize),
    End,
}

#[derive(Debug)]
struct Current {
    loc: RecordLocation,
    /// Block bytes held in memory (peeked document start; for the
    /// filedesc record, its line and version block).
    prefix: Vec<u8>,
    prefix_pos: usize,
    /// Block bytes still to come from the input.
    remaining: u64,
    /// Block bytes handed out or skipped.
    read: u64,
    truncated: bool,
    cut_at_member: bool,
    cut_end: Option<u64>,
    spans_members: bool,
    filedesc: bool,
}

/// Reads ARC records one at a time.
///
/// Each record is presented as the WARC header its conversion carries
/// ([`Record::header`]; docs/conversion.md has the mapping): the
/// `filedesc://` record as a `metadata` record whose block is the whole
/// filedesc record, the others as `response` (HTTP documents), or
/// `resource` (`dns:` as `text/dns`, other documents with their ARC
/// content-type). [`Record::arc_header`] is the line as written.
///
/// Lenient reading (the default) accepts, each with a
/// [`Warning`](crate::Warning): extra newlines between records and a missing one before a member end
/// ([`WarningKind::BadTrailer`], the latter silently); Archive-length that
/// is not a number (block empty, [`WarningKind::BadContentLength`]) or too
/// large for its gzip member (block cut at the member's end); dates of
/// other than 14 digits ([`WarningKind::BadDate`]); lines that are not
/// records, skipped up to the next line that is one, also when it starts
/// inside a damaged line ([`WarningKind::SkippedBytes`]); the input ending
/// inside a record ([`WarningKind::TruncatedRecord`]). URLs with spaces,
/// `-` and empty fields, CR LF line ends and either kind of version-block
/// length are read without a warning. Strict reading fails on each
/// warning's cause.
pub struct Reader<S> {
    input: Pushback<S>,
    opts: ReaderOptions,
    label: String,
    next_index: u64,
    header: Option<ArcHeader>,
    view: WarcHeader,
    leftovers: Fields,
    cur: Option<Current>,
    last_end: Option<RecordEnd>,
    diag: Diagnostics,
    done: bool,
    file_version: Option<ArcVersion>,
    file_date: Option<WarcDate>,
    after_filedesc: bool,
    /// Newlines already consumed after the last record, for find_start.
    pending_newlines: u64,
    line: Vec<u8>,
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

/// True when `bytes` (after line ends) begin like a URL-record line.
pub(crate) fn looks_like_record_start(bytes: &[u8]) -> bool {
    let b = &bytes[bytes.iter().take_while(|&&c| is_line_end(c)).count()..];
    let word = b.split(|&c| c == b' ').next().unwrap_or_default();
    is_scheme_start(word)
}

/// Where inside a damaged line a record line may start: the first places
/// where a URL scheme begins, in lines short and spaced enough to end in
/// URL-record fields (this bounds the work a hostile line can cause).
fn inner_starts(line: &[u8]) -> impl Iterator<Item = usize> + '_ {
    const SCHEMES: [&[u8]; 5] = [b"http:", b"https:", b"dns:", b"ftp:", b"filedesc:"];
    const MAX_LINE: usize = 64 << 10;
    const MAX_TRIES: usize = 256;
    let plausible = line.len() <= MAX_LINE && line.iter().filter(|&&b| b == b' ').count() >= 4;
    let end = if plausible { line.len() } else { 0 };
    (1..end)
        .filter(move |&p| {
            SCHEMES
                .iter()
                .any(|s| line.len() - p >= s.len() && line[p..p + s.len()].eq_ignore_ascii_case(s))
        })
        .take(MAX_TRIES)
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
            header: None,
            view: WarcHeader::from_fields(crate::warc::Version::V1_1, Fields::new()),
            leftovers: Fields::new(),
            cur: None,
            last_end: None,
            diag,
            done: false,
            file_version: None,
            file_date: None,
            after_filedesc: false,
            pending_newlines: 0,
            line: Vec::new(),
        }
    }

    /// The file's ARC version, from its filedesc record (once read).
    pub fn file_version(&self) -> Option<ArcVersion> {
        self.file_version
    }

    fn warn(&mut self, kind: WarningKind, offset: u64, record: Option<u64>, msg: String) {
        let id = self.view.record_id().map(|s| s.into_owned());
        self.diag.warn(kind, offset, record, id, msg);
    }

    fn error(&self, kind: ErrorKind, offset: u64, record: Option<u64>) -> Error {
        self.diag.error(kind, offset, record, None)
    }

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

    /// Skips line ends up to the next non-empty line. False at the end.
    fn find_start(&mut self) -> Result<bool> {
        // After the filedesc one more newline is usual: the version block
        // length counts the blank line after it or does not.
        let allowed = u64::from(self.after_filedesc);
        self.after_filedesc = false;
        let mut newlines = std::mem::take(&mut self.pending_newlines);
        let at = self.input.stored_pos();
        loop {
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                if !self.input.next_member()? {
                    if newlines > allowed {
                        self.deviation(
                            WarningKind::BadTrailer,
                            at,
                            None,
                            format!("{newlines} extra newlines at the end of the input"),
                        )?;
                    }
                    return Ok(false);
                }
                continue;
            }
            let n = buf.iter().take_while(|&&b| is_line_end(b)).count();
            if n > 0 {
                newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
                self.input.consume(n);
                continue;
            }
            if newlines > allowed {
                self.deviation(
                    WarningKind::BadTrailer,
                    at,
                    None,
                    format!("{newlines} extra newlines between records"),
                )?;
            }
            return Ok(true);
        }
    }

    /// Reads lines up to one that is a URL-record line; what is skipped on
    /// the way is reported.
    fn read_record_line(&mut self) -> Result<Option<(ArcHeader, u64, u64)>> {
        let max = self.opts.limits.max_header_block;
        let mut skipped = 0u64;
        let mut skip_at = None::<u64>;
        let mut trust = Trust::Expected;
        loop {
            let at = self.input.stored_pos();
            let in_member = self.input.member_pos();
            let plain = self.input.codec() == Codec::None;
            let mut line = std::mem::take(&mut self.line);
            line.clear();
            let ended = !self.input.read_line(&mut line, max)?;
            if let Some(start) = skip_at
                && skipped > self.opts.limits.max_resync_scan
                && !line.is_empty()
            {
                // The scan passed its limit with input left: the rest of
                // the input goes unread, an error that says so.
                self.line = line;
                let limit = self.opts.limits.max_resync_scan;
                return Err(self.error(crate::limits::scan_limit(limit), start, None));
            }
            if line.is_empty() && ended {
                self.line = line;
                if self.input.next_member()? {
                    continue;
                }
                if let Some(start) = skip_at {
                    let msg =
                        format!("{skipped} bytes after the last record are not an ARC record");
                    if !self.diag.leniency().trailing_garbage {
                        return Err(self.error(ErrorKind::Syntax(msg), start, None));
                    }
                    self.warn(WarningKind::TrailingGarbage, start, None, msg);
                }
                return Ok(None);
            }
            // A record line ends in LF: a line cut by the end of the input
            // or of its member is not one.
            let complete = line.last() == Some(&b'\n');
            let found = if !complete {
                // Longer than any header: not one.
                None
            } else if trust == Trust::Expected {
                ArcHeader::parse_with(&line, self.file_version, Trust::Expected).map(|h| (h, 0))
            } else {
                ArcHeader::parse_with(&line, self.file_version, Trust::Searching)
                    .map(|h| (h, 0))
                    .or_else(|| {
                        inner_starts(&line).find_map(|p| {
                            ArcHeader::parse_with(&line[p..], self.file_version, Trust::Searching)
                                .map(|h| (h, p))
                        })
                    })
            };
            match found {
                Some((h, p)) => {
                    let offset = if plain { at + p as u64 } else { at };
                    if let Some(start) = skip_at {
                        skipped += p as u64;
                        if !self.diag.leniency().skipped_bytes {
                            self.line = line;
                            return Err(self.error(
                                ErrorKind::Syntax(format!(
                                    "skipped {skipped} bytes that are not an ARC record"
                                )),
                                start,
                                None,
                            ));
                        }
                        self.warn(
                            WarningKind::SkippedBytes,
                            start,
                            None,
                            format!("skipped {skipped} bytes that are not an ARC record"),
                        );
                    }
                    self.line = line;
                    return Ok(Some((h, offset, in_member + p as u64)));
                }
                None => {
                    let knobs = self.diag.leniency();
                    if !knobs.skipped_bytes && !knobs.trailing_garbage {
                        let text =
                            String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
                        self.line = line;
                        return Err(self.error(
                            ErrorKind::Syntax(format!("not an ARC URL-record line: {text:?}")),
                            at,
                            None,
                        ));
                    }
                    skip_at.get_or_insert(at);
                    skipped += line.len() as u64;
                    trust = Trust::Searching;
                    self.line = line;
                }
            }
        }
    }

    fn start_record(&mut self, h: ArcHeader, offset: u64, in_member: u64) -> Result<()> {
        let index = self.next_index;
        self.next_index += 1;
        let codec = self.input.codec();
        let at = crate::view::id_position(
            codec,
            offset,
            in_member,
            self.input.member_offset(),
            &self.opts,
        );
        let rec_id = crate::view::record_id(&self.label, offset, at, "");
        let header_len = h.raw().len() as u64;
        let filedesc = h.is_filedesc();
        let rec = Some(index);
        // Provisional view so that warnings name the record id.
        self.view = crate::view::ViewBuilder::new("", &rec_id).finish();
        let mut cur = Current {
            loc: RecordLocation {
                index,
                offset,
                codec,
                offset_in_member: in_member,
                header_len,
            },
            prefix: Vec::new(),
            prefix_pos: 0,
            remaining: 0,
            read: 0,
            truncated: false,
            cut_at_member: false,
            cut_end: None,
            spans_members: false,
            filedesc,
        };
        let length = h.length();
        if length.is_none() {
            let msg = format!(
                "Archive-length {:?} is not a number; the block is taken as empty",
                String::from_utf8_lossy(h.length_field())
            );
            if !self.diag.leniency().bad_content_length || !filedesc {
                self.deviation(WarningKind::BadContentLength, offset, rec, msg)?;
            } else {
                self.warn(
                    WarningKind::BadContentLength,
                    offset,
                    rec,
                    "Archive-length of the filedesc record is not a number; the version block is read up to its blank line".into(),
                );
            }
        }
        match h.capture_date() {
            Some((_, false)) => {}
            Some((d, true)) => {
                let msg = format!(
                    "Archive-date {:?} has {} digits, not 14; read as {d}",
                    String::from_utf8_lossy(h.date()),
                    h.date().len()
                );
                self.deviation(WarningKind::BadDate, offset, rec, msg)?;
            }
            None => {
                let msg = format!(
                    "Archive-date {:?} is not a date; WARC-Date is the file's date or 1970-01-01",
                    String::from_utf8_lossy(h.date())
                );
                self.deviation(WarningKind::BadDate, offset, rec, msg)?;
            }
        }
        let http;
        if filedesc {
            let mut block = h.raw().to_vec();
            let max = self.opts.limits.max_header_block;
            match length {
                Some(n) if n > max as u64 => {
                    return Err(self.error(
                        ErrorKind::TooLarge {
                            what: "ARC version block",
                            limit: max as u64,
                        },
                        offset,
                        rec,
                    ));
                }
                Some(n) => {
                    let start = block.len();
                    self.input.read_some(&mut block, start + n as usize)?;
                    if block.len() < start + n as usize {
                        let msg = format!(
                            "Archive-length is {n} but the input ends after {} bytes of the version block",
                            block.len() - start
                        );
                        self.deviation(WarningKind::TruncatedRecord, offset, rec, msg)?;
                        cur.truncated = true;
                    }
                }
                None => {
                    // Up to and with the blank line.
                    loop {
                        let before = block.len();
                        let more = self.input.read_line(&mut block, max)?;
                        let line = &block[before..];
                        let blank = line.iter().all(|&b| is_line_end(b));
                        if !more || blank {
                            break;
                        }
                        if block.len() >= max {
                            // Stopped by the bound, not by the block's end:
                            // what follows is read as whatever it is.
                            let msg = format!(
                                "the version block has no numeric length and no blank line within Limits::max_header_block ({max} bytes); it is cut there"
                            );
                            self.deviation(WarningKind::TruncatedRecord, offset, rec, msg)?;
                            cur.truncated = true;
                            break;
                        }
                    }
                }
            }
            let vb = &block[h.raw().len()..];
            self.file_version = match vb.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'2') => Some(ArcVersion::V2),
                Some(b'1') => Some(ArcVersion::V1),
                _ => {
                    self.deviation(
                        WarningKind::Grammar,
                        offset,
                        rec,
                        "the version block does not start with a version number".into(),
                    )?;
                    self.file_version
                }
            };
            self.file_date = h.capture_date().map(|(d, _)| d);
            cur.prefix = block;
            http = false;
        } else {
            cur.remaining = length.unwrap_or(0);
            let want = cur.remaining.min(5) as usize;
            self.input.read_some(&mut cur.prefix, want)?;
            cur.remaining -= cur.prefix.len() as u64;
            http = crate::view::is_http_response(&cur.prefix);
        }
        let block_len = if filedesc {
            cur.prefix.len() as u64
        } else {
            length.unwrap_or(0)
        };
        let (view, left) = super::warc_view(&h, &rec_id, http, self.file_date, block_len);
        self.view = view;
        self.leftovers = left;
        self.header = Some(h);
        self.cur = Some(cur);
        Ok(())
    }

    /// Where the next block bytes come from.
    fn ready(&mut self) -> Result<Ready> {
        loop {
            let Some(cur) = self.cur.as_ref() else {
                return Ok(Ready::End);
            };
            if cur.prefix_pos < cur.prefix.len() {
                return Ok(Ready::Prefix);
            }
            if cur.remaining == 0 {
                return Ok(Ready::End);
            }
            let remaining = cur.remaining;
            let avail = self.input.fill_buf()?.len();
            if avail > 0 {
                return Ok(Ready::Input(
                    usize::try_from(remaining).unwrap_or(usize::MAX).min(avail),
                ));
            }
            self.block_member_end()?;
        }
    }

    /// The member ended inside the block: a wrong Archive-length (the next
    /// member starts a record), a record spanning members, or the end.
    fn block_member_end(&mut self) -> Result<()> {
        let Some(cur) = self.cur.as_ref() else {
            return Ok(());
        };
        let (index, offset, remaining, read, at_start) = (
            cur.loc.index,
            cur.loc.offset,
            cur.remaining,
            cur.read + (cur.prefix.len() - cur.prefix_pos) as u64,
            cur.loc.offset_in_member == 0,
        );
        let declared = read + remaining;
        let compressed = self.input.codec() != Codec::None;
        let member_end = self.input.member_end();
        let more = compressed && self.input.next_member()?;
        if more {
            let next = self.input.peek(256)?;
            let next_is_record = looks_like_record_start(&next);
            if next_is_record && at_start && self.diag.leniency().content_length_resync {
                self.warn(
                    WarningKind::BadContentLength,
                    offset,
                    Some(index),
                    format!(
                        "Archive-length is {declared} but the record's member ends after {read} bytes of document and the next member starts a record; the document is cut there"
                    ),
                );
                if let Some(cur) = self.cur.as_mut() {
                    cur.remaining = 0;
                    cur.cut_at_member = true;
                    cur.cut_end = member_end;
                }
                return Ok(());
            }
            if next_is_record {
                return Err(self.error(
                    ErrorKind::Syntax(format!(
                        "Archive-length is {declared} but the member ends after {read} bytes of document"
                    )),
                    offset,
                    Some(index),
                ));
            }
            if let Some(cur) = self.cur.as_mut()
                && !cur.spans_members
            {
                cur.spans_members = true;
                self.warn(
                    WarningKind::NotRecordAtATime,
                    offset,
                    Some(index),
                    "the record's document spans compressed members".into(),
                );
            }
            return Ok(());
        }
        let msg = format!(
            "Archive-length is {declared} but the input ends after {read} bytes of document"
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
}

impl<S: Source> Framing for Reader<S> {
    fn read_next(&mut self) -> Result<bool> {
        if !self.find_start()? {
            return Ok(false);
        }
        let Some((h, offset, in_member)) = self.read_record_line()? else {
            return Ok(false);
        };
        self.start_record(h, offset, in_member)?;
        Ok(true)
    }

    fn location(&self) -> Option<RecordLocation> {
        self.cur.as_ref().map(|c| c.loc)
    }

    fn drop_current(&mut self) {
        self.cur = None;
    }

    /// Skips the rest of the document and the newline after it.
    fn finish_current(&mut self) -> Result<RecordEnd> {
        while let Some(cur) = self.cur.as_mut() {
            if cur.prefix_pos < cur.prefix.len() {
                cur.read += (cur.prefix.len() - cur.prefix_pos) as u64;
                cur.prefix_pos = cur.prefix.len();
            }
            if cur.remaining == 0 {
                break;
            }
            let want = cur.remaining;
            let n = self.input.skip(want)?;
            if let Some(cur) = self.cur.as_mut() {
                cur.remaining -= n;
                cur.read += n;
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
            let at = self.input.stored_pos();
            match self.input.peek(2)?.as_slice() {
                [b'\n', ..] => self.input.consume(1),
                [b'\r', b'\n'] => self.input.consume(2),
                // A member end separates records well enough (Heritrix
                // files cut into pieces have no newline there).
                [] => {}
                _ if cur.filedesc => {}
                _ => self.deviation(
                    WarningKind::BadTrailer,
                    at,
                    Some(cur.loc.index),
                    "the document is not followed by a newline; Archive-length may be wrong".into(),
                )?,
            }
        }
        self.after_filedesc = cur.filedesc;
        if self.input.codec() != Codec::None && !cur.cut_at_member {
            // Newlines that end a member belong to its record (its stored
            // length runs to the member's end); find_start counts them.
            loop {
                let buf = self.input.fill_buf()?;
                let n = buf.iter().take_while(|&&b| is_line_end(b)).count();
                if n == 0 {
                    break;
                }
                self.pending_newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
                self.input.consume(n);
            }
        }
        let rec_end = framing::record_end(
            &mut self.input,
            &cur.loc,
            cur.cut_end,
            cur.read,
            cur.truncated,
        )?;
        self.last_end = Some(rec_end);
        Ok(rec_end)
    }

    fn block_ready(&mut self) -> Result<()> {
        self.ready().map(|_| ())
    }

    fn block_fill(&mut self) -> Result<&[u8]> {
        match self.ready()? {
            Ready::End => Ok(&[]),
            Ready::Prefix => Ok(self
                .cur
                .as_ref()
                .map(|c| &c.prefix[c.prefix_pos..])
                .unwrap_or_default()),
            Ready::Input(n) => Ok(&self.input.fill_buf()?[..n]),
        }
    }

    fn block_consume(&mut self, n: usize) {
        let Some(cur) = self.cur.as_mut() else {
            return;
        };
        cur.read += n as u64;
        if cur.prefix_pos < cur.prefix.len() {
            cur.prefix_pos = (cur.prefix_pos + n).min(cur.prefix.len());
        } else {
            self.input.consume(n);
            cur.remaining -= n as u64;
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

/// An ARC record being read: its WARC view, its ARC line and its document.
pub type Record<'r, S> = framing::Record<'r, Reader<S>>;

impl<S: Source> Record<'_, S> {
    /// The URL-record line as written, parsed.
    pub fn arc_header(&self) -> Option<&ArcHeader> {
        self.reader.header.as_ref()
    }

    /// The URL-record line as stored, line end included.
    pub fn raw_header(&self) -> &[u8] {
        self.reader.header.as_ref().map_or(&[][..], |h| h.raw())
    }

    /// What the line holds that the WARC header does not (v2 fields; the
    /// raw line when a field had to be changed): conversion writes it into
    /// a metadata record.
    pub fn leftovers(&self) -> &Fields {
        &self.reader.leftovers
    }
}

/// The block of the current ARC record as a stream: the document, or for
/// the filedesc record the line and version block.
pub type BlockReader<'a, S> = framing::BlockReader<'a, Reader<S>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Warning;
    use crate::test_source::MemSource;

    const FILEDESC: &[u8] = b"filedesc://x.arc 127.0.0.1 20140216050221 text/plain 75\n1 0 LiveWeb Capture\nURL IP-address Archive-date Content-type Archive-length\n\n";

    fn rec(url: &str, doc: &[u8]) -> Vec<u8> {
        let mut v = format!("{url} 1.2.3.4 20140216050221 text/html {}\n", doc.len()).into_bytes();
        v.extend_from_slice(doc);
        v.push(b'\n');
        v
    }

    struct Seen {
        types: Vec<String>,
        uris: Vec<String>,
        bodies: Vec<Vec<u8>>,
        offsets: Vec<u64>,
        lens: Vec<Option<u64>>,
        warnings: Vec<Warning>,
    }

    fn read_all<S: Source>(mut r: Reader<S>) -> Result<Seen> {
        let mut s = Seen {
            types: vec![],
            uris: vec![],
            bodies: vec![],
            offsets: vec![],
            lens: vec![],
            warnings: vec![],
        };
        while let Some(mut rec) = r.next_record()? {
            s.types.push(
                rec.header()
                    .record_type_str()
                    .unwrap_or_default()
                    .into_owned(),
            );
            s.uris
                .push(rec.header().target_uri().unwrap_or_default().into_owned());
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

    fn read_with(data: &[u8], leniency: crate::Leniency) -> (Option<Error>, Vec<WarningKind>) {
        crate::test_source::read_with(data, crate::archive::Format::Arc, leniency)
    }

    /// An ARC knob turned off makes its own deviation an error; the other
    /// deviations stay warnings.
    #[test]
    fn arc_knobs_are_independent() {
        let short_date = b"http://a.example/ 1.2.3.4 201402160502 text/html 2\naa\n".to_vec();
        let file = |date: bool, junk: bool| {
            let mut f = FILEDESC.to_vec();
            f.extend(if date {
                short_date.clone()
            } else {
                rec("http://a.example/", b"aa")
            });
            if junk {
                f.extend_from_slice(b"not a record line\n");
            }
            f.extend(rec("http://b.example/", b"bb"));
            f
        };
        let lenient = crate::Leniency::lenient();
        let (err, kinds) = read_with(&file(true, true), lenient);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(kinds, [WarningKind::BadDate, WarningKind::SkippedBytes]);

        let mut no_date = lenient;
        no_date.bad_date = false;
        let (err, kinds) = read_with(&file(true, true), no_date);
        assert!(err.is_some() && kinds.is_empty(), "{kinds:?}");
        let (err, kinds) = read_with(&file(false, true), no_date);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(kinds, [WarningKind::SkippedBytes]);

        let mut no_skip = lenient;
        no_skip.skipped_bytes = false;
        let (err, kinds) = read_with(&file(true, true), no_skip);
        assert!(err.is_some(), "skipped bytes read");
        assert_eq!(kinds, [WarningKind::BadDate]);
        let (err, kinds) = read_with(&file(true, false), no_skip);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(kinds, [WarningKind::BadDate]);
    }

    fn strict<S: Source>(s: S) -> Reader<S> {
        Reader::from_source(s, ReaderOptions::strict())
    }

    const DOC: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html/>";

    #[test]
    fn plain_file_any_chunking() {
        let mut data = FILEDESC.to_vec();
        let second = data.len() as u64;
        let a = rec("http://a/", DOC);
        data.extend(&a);
        let b = rec(
            "dns:a.example",
            b"20140216050221\na.example. 60 IN A 1.2.3.4\n",
        );
        data.extend(&b);
        for chunk in [1, 2, 3, 7, 64, 1 << 20] {
            let s = read_all(strict(MemSource::plain(&data, chunk))).unwrap();
            assert_eq!(s.types, ["metadata", "response", "resource"], "{chunk}");
            assert_eq!(s.uris, ["filedesc://x.arc", "http://a/", "dns:a.example"]);
            // The declared 75 bytes stop before the last newline.
            assert_eq!(s.bodies[0], &FILEDESC[..FILEDESC.len() - 2]);
            assert_eq!(s.bodies[1], DOC);
            assert_eq!(s.offsets, [0, second, second + a.len() as u64]);
            assert_eq!(s.lens[1], Some(a.len() as u64));
            assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        }
    }

    #[test]
    fn gzip_members_and_too_long_length() {
        let a = rec("http://a/", DOC);
        // Declares 10 more bytes than its member holds.
        let s = String::from_utf8(a.clone()).unwrap();
        let bad = s
            .replace(
                &format!(" {}\n", DOC.len()),
                &format!(" {}\n", DOC.len() + 10),
            )
            .into_bytes();
        let b = rec("http://b/", DOC);
        let src = MemSource::members(&[FILEDESC, &bad, &b], 5);
        let ext = src.extents();
        let r = read_all(lenient(src)).unwrap();
        assert_eq!(r.uris, ["filedesc://x.arc", "http://a/", "http://b/"]);
        assert_eq!(r.offsets, [ext[0].0, ext[1].0, ext[2].0]);
        assert_eq!(r.lens[2], Some(ext[2].1 - ext[2].0));
        assert!(
            r.warnings
                .iter()
                .any(|w| w.kind == WarningKind::BadContentLength)
        );
        let src = MemSource::members(&[FILEDESC, &bad, &b], 5);
        assert!(read_all(strict(src)).is_err());
    }

    #[test]
    fn real_world_quirks() {
        // bad.arc's shape: lengths -1 and abc, an 18-digit date; then
        // garbage, a record inside a damaged line, a truncated last record.
        let mut data = b"filedesc://bad.arc.gz 127.0.0.1 20140301000000 text/plain -1\n1 0 Bad Capture\nURL IP-address Archive-date Content-type Archive-length\n\nhttp://example.com/ 93.184.216.119 201404010000000000 text/html -1\n\nhttp://example.com/ 127.0.0.1 20140102000000 text/plain 1\n\n\n\nhttp://example.com/ 93.184.216.119 201404010000000000 text/html abc\n\n".to_vec();
        data.extend(b"some garbage line\nmore\x00garbagehttp://c/ 1.2.3.4 20140216050221 text/plain 3\nabc\n");
        let d = rec("http://d/ with spaces", DOC);
        data.extend(&d[..d.len() - 5]);
        for chunk in [1, 5, 4096] {
            let s = read_all(lenient(MemSource::plain(&data, chunk))).unwrap();
            assert_eq!(
                s.uris,
                [
                    "filedesc://bad.arc.gz",
                    "http://example.com/",
                    "http://example.com/",
                    "http://example.com/",
                    "http://c/",
                    "http://d/%20with%20spaces"
                ],
                "{chunk}"
            );
            assert_eq!(s.bodies[2], b"\n");
            assert_eq!(s.bodies[4], b"abc");
            let kinds: Vec<_> = s.warnings.iter().map(|w| w.kind).collect();
            for k in [
                WarningKind::BadContentLength,
                WarningKind::BadDate,
                WarningKind::SkippedBytes,
                WarningKind::TruncatedRecord,
            ] {
                assert!(kinds.contains(&k), "{k:?} not in {kinds:?}");
            }
            assert!(read_all(strict(MemSource::plain(&data, chunk))).is_err());
        }
        // A header line cut by the end of the input is not a record.
        let mut data = rec("http://a/", DOC);
        data.extend(b"http://www.bt.dk/node/100");
        let s = read_all(lenient(MemSource::plain(&data, 3))).unwrap();
        assert_eq!(s.uris, ["http://a/"]);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.kind == WarningKind::TrailingGarbage)
        );
    }

    #[test]
    fn hostile_lines_take_bounded_time() {
        // Long garbage lines full of URL schemes and spaces, then a record.
        let mut data = rec("http://z/", DOC);
        data.extend(b"<".iter().chain(&b"http: x ".repeat(100_000)));
        data.push(b'\n');
        data.extend(b"<".iter().chain(&b"http:x ".repeat(9_000)));
        data.push(b'\n');
        data.extend(b"<".iter().chain(&b"http:".repeat(200_000)));
        data.push(b'\n');
        data.extend(rec("http://a/", DOC));
        let t = std::time::Instant::now();
        let s = read_all(lenient(MemSource::plain(&data, 1 << 16))).unwrap();
        assert_eq!(s.uris, ["http://z/", "http://a/"]);
        assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    }

    #[test]
    fn leftovers_for_v2_and_altered_lines() {
        let v2 = b"filedesc://x.arc 0.0.0.0 20140216050221 text/plain 200 - - 0 x.arc 76\n2 0 Test\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n";
        let mut data = v2.to_vec();
        data.extend(b"\nhttp://a/ 1.2.3.4 20140216050221 text/html 200 ABC - 120 x.arc 3\nabc\n");
        data.extend(b"http://b/ a.b.c.d 2014021605 text/html - - - - - 3\nabc\n");
        let mut r = lenient(MemSource::plain(&data, 4096));
        r.next_record().unwrap().unwrap().finish().unwrap();
        assert_eq!(r.file_version(), Some(ArcVersion::V2));
        let rec = r.next_record().unwrap().unwrap();
        let names: Vec<String> = rec
            .leftovers()
            .iter()
            .map(|f| f.name_str().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "arc-result-code",
                "arc-checksum",
                "arc-offset",
                "arc-filename"
            ]
        );
        rec.finish().unwrap();
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(
            rec.header().get("WARC-Date").as_deref(),
            Some("2014-02-16T05:00:00Z")
        );
        assert!(rec.header().get("WARC-IP-Address").is_none());
        assert_eq!(
            rec.leftovers().value("arc-header").as_deref(),
            Some("http://b/ a.b.c.d 2014021605 text/html - - - - - 3")
        );
    }

    /// A scan that passes `max_resync_scan` with records left after it
    /// stops the reader with an error naming where the unread rest begins;
    /// damage that ends the input is still trailing garbage.
    #[test]
    fn resync_scan_limit_names_the_unread_rest() {
        let mut data = FILEDESC.to_vec();
        data.extend(rec("http://a/", b"a"));
        let damage_at = data.len() as u64;
        data.extend(b"junk line\n".repeat(10));
        data.extend(rec("http://b/", b"b"));
        data.extend(rec("http://c/", b"c"));
        let opts = |limit| {
            let mut o = ReaderOptions::lenient();
            o.limits.max_resync_scan = limit;
            o
        };
        for chunk in [1, 7, 4096] {
            let r = Reader::from_source(MemSource::plain(&data, chunk), opts(30));
            let e = read_all(r).err().expect("an error, not success");
            assert!(
                matches!(e.kind(), ErrorKind::TooLarge { limit: 30, .. }),
                "{e}"
            );
            assert_eq!(e.position().unwrap().offset, damage_at);
            let r = Reader::from_source(MemSource::plain(&data, chunk), opts(200));
            assert_eq!(read_all(r).unwrap().uris.len(), 4);
        }
        let mut data = FILEDESC.to_vec();
        data.extend(rec("http://a/", b"a"));
        data.extend(b"junk".repeat(30));
        let r = Reader::from_source(MemSource::plain(&data, 4096), opts(30));
        let s = read_all(r).unwrap();
        let kinds: Vec<_> = s.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, [WarningKind::TrailingGarbage]);
    }

    /// A filedesc with a non-numeric length whose version block has no
    /// blank line within `max_header_block`: cut there, with a warning
    /// naming the limit, and the record truncated.
    #[test]
    fn filedesc_version_block_cut_at_the_limit_is_said() {
        let mut data =
            b"filedesc://x.arc 127.0.0.1 20140216050221 text/plain abc\n1 0 LiveWeb Capture\n"
                .to_vec();
        data.extend(b"URL IP-address Archive-date Content-type Archive-length\n".repeat(20));
        data.extend(b"\n");
        data.extend(rec("http://a/", b"a"));
        let opts = |max| {
            let mut o = ReaderOptions::lenient();
            o.limits.max_header_block = max;
            o
        };
        let mut r = Reader::from_source(MemSource::plain(&data, 7), opts(200));
        let mut rec0 = r.next_record().unwrap().unwrap();
        rec0.read_block().unwrap();
        assert!(rec0.finish().unwrap().truncated);
        while let Some(x) = r.next_record().unwrap() {
            x.finish().unwrap();
        }
        let w = r.take_warnings();
        let cut: Vec<_> = w
            .iter()
            .filter(|w| w.kind == WarningKind::TruncatedRecord)
            .collect();
        assert_eq!(cut.len(), 1, "{w:?}");
        assert!(cut[0].message.contains("max_header_block (200 bytes)"));
        // Within the limit: no such warning, not truncated.
        let s = read_all(lenient(MemSource::plain(&data, 7))).unwrap();
        assert_eq!(s.uris, ["filedesc://x.arc", "http://a/"]);
        assert!(
            !s.warnings
                .iter()
                .any(|w| w.kind == WarningKind::TruncatedRecord),
            "{:?}",
            s.warnings
        );
    }
}
