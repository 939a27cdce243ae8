//! Named fields: `Name: value` lines as in WARC headers, `application/warc-fields`
//! blocks and HTTP headers.
//!
//! [`Fields`] keeps the block's raw bytes and the span of each field in them:
//! order, case, repeats, continuation lines and non-UTF-8 bytes all survive,
//! so an untouched block is written back byte for byte. Lookups are
//! case-insensitive linear scans (a record has a dozen fields; a map would
//! cost more than it saves). Values are unfolded and decoded only on request.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::WarningKind;
use crate::leniency::Leniency;

/// Where one field sits in the raw block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    /// Start of the field's first line.
    line: u32,
    /// End of the name (before any white space and the colon).
    name_end: u32,
    /// Start of the value (after the colon and leading white space).
    value: u32,
    /// End of the value: end of the last continuation line, before its line end.
    value_end: u32,
    /// End of the field's last line, after its line end.
    line_end: u32,
    /// True when the value goes on over continuation lines: only then has
    /// [`Field::value`] anything to unfold (no search of every value).
    folded: bool,
}

/// Something odd in a field block that a lenient parser accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldIssue {
    /// Which rule was relaxed.
    pub kind: WarningKind,
    /// Byte offset in the raw block.
    pub offset: usize,
}

/// An ordered list of named fields over one raw byte buffer.
#[derive(Default, PartialEq, Eq)]
pub struct Fields {
    buf: Vec<u8>,
    /// Start of the first field line (after a start line such as `WARC/1.1`).
    start: usize,
    /// End of the field lines: the start of the terminating blank line, or
    /// the end of the buffer when there is none.
    end: usize,
    spans: Vec<Span>,
}

// Written out for `clone_from`: a copy made into a kept `Fields` reuses its
// two buffers, so a caller copying every record's header (validate hands
// each one to another thread) allocates nothing once warmed up. A buffer
// too small grows to the source's size exactly, not to twice its own (as
// `Vec::clone_from` would): kept copies then hold the largest header they
// held, no more, and `heap_bytes` tells a keeper what that is.
impl Clone for Fields {
    fn clone(&self) -> Fields {
        Fields {
            buf: self.buf.clone(),
            start: self.start,
            end: self.end,
            spans: self.spans.clone(),
        }
    }

    fn clone_from(&mut self, source: &Fields) {
        copy_exact(&mut self.buf, &source.buf);
        self.start = source.start;
        self.end = source.end;
        copy_exact(&mut self.spans, &source.spans);
    }
}

/// `src` copied into `dst`'s allocation, grown to `src`'s length exactly
/// when it is too small.
fn copy_exact<T: Copy>(dst: &mut Vec<T>, src: &[T]) {
    dst.clear();
    dst.reserve_exact(src.len());
    dst.extend_from_slice(src);
}

impl std::fmt::Debug for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut l = f.debug_list();
        for field in self.iter() {
            l.entry(&(
                String::from_utf8_lossy(field.name()),
                String::from_utf8_lossy(field.raw_value()),
            ));
        }
        l.finish()
    }
}

/// One field: its name and raw value as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    name: &'a [u8],
    raw_value: &'a [u8],
    raw_line: &'a [u8],
    /// The value holds line ends (continuation lines).
    folded: bool,
}

impl<'a> Field<'a> {
    /// The name as written (case kept).
    pub fn name(&self) -> &'a [u8] {
        self.name
    }

    /// The name as text (names are ASCII tokens; anything else is replaced).
    pub fn name_str(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.name)
    }

    /// True when the name equals `name`, ignoring ASCII case.
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name.as_bytes())
    }

    /// The value as stored: from after the colon's white space to the end of
    /// the last continuation line, line ends included between lines.
    pub fn raw_value(&self) -> &'a [u8] {
        self.raw_value
    }

    /// The whole field as stored, name, colon, value and line ends.
    pub fn raw_line(&self) -> &'a [u8] {
        self.raw_line
    }

    /// The value unfolded (each line end plus the white space after it becomes
    /// one space) with trailing white space removed. Borrowed when there is
    /// nothing to unfold.
    pub fn value(&self) -> Cow<'a, [u8]> {
        let v = trim_end(self.raw_value);
        if !self.folded || memchr::memchr(b'\n', v).is_none() {
            return Cow::Borrowed(v);
        }
        let mut out = Vec::with_capacity(v.len());
        let mut rest = v;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            out.extend_from_slice(trim_end(&rest[..nl]));
            rest = trim_start(&rest[nl + 1..]);
            // A value may begin on a continuation line: no space before it.
            if !out.is_empty() {
                out.push(b' ');
            }
        }
        out.extend_from_slice(rest);
        Cow::Owned(out)
    }

    /// The unfolded value as text: UTF-8, or ISO-8859-1 when the bytes are
    /// not UTF-8 (what old writers and HTTP servers meant), so no byte is
    /// replaced or lost.
    pub fn value_str(&self) -> Cow<'a, str> {
        match self.value() {
            Cow::Borrowed(b) => match std::str::from_utf8(b) {
                Ok(s) => Cow::Borrowed(s),
                Err(_) => Cow::Owned(latin1(b)),
            },
            Cow::Owned(v) => Cow::Owned(match String::from_utf8(v) {
                Ok(s) => s,
                Err(e) => latin1(e.as_bytes()),
            }),
        }
    }

    /// The unfolded value with RFC 2047 encoded-words (`=?charset?B|Q?...?=`)
    /// decoded, as WARC 1.1 section 4 asks readers to understand them.
    pub fn value_decoded(&self) -> Cow<'a, str> {
        match self.value_str() {
            Cow::Borrowed(s) => decode_encoded_words(s),
            Cow::Owned(s) => Cow::Owned(decode_encoded_words(&s).into_owned()),
        }
    }
}

/// A deviation from the grammar at `offset`: an error when the leniency
/// does not allow it (`allowed` off), else recorded in `issues` as `kind`.
fn deviation(
    allowed: bool,
    what: &'static str,
    kind: WarningKind,
    offset: usize,
    issues: &mut Vec<FieldIssue>,
) -> Result<(), FieldError> {
    if !allowed {
        return Err(FieldError::Strict { what, offset });
    }
    issues.push(FieldIssue { kind, offset });
    Ok(())
}

/// Where [`walk`] stopped.
struct Walked {
    /// The start of the blank line, or the end of the buffer.
    end: usize,
    /// Just past the blank line's LF, when there is one.
    blank_end: Option<usize>,
}

/// What the field walk tells a caller about each line it passes, so that
/// a caller that checks lines (HTTP heads note line ends, folding and
/// UTF-8) does it in the same pass. The WARC header's walk passes `()`,
/// which compiles to nothing.
pub(crate) trait LineSeen {
    /// The line starting at `buf[start]`: its content ends at
    /// `content_end` (before the CRs of its line end), its LF is at `lf`
    /// (`None`: the buffer ended first, `content_end` is its end). A blank
    /// line has `content_end == start`.
    fn line(&mut self, buf: &[u8], start: usize, content_end: usize, lf: Option<usize>);
}

impl LineSeen for () {
    #[inline(always)]
    fn line(&mut self, _: &[u8], _: usize, _: usize, _: Option<usize>) {}
}

/// The field lines of `buf` from `start` up to the first blank line (or
/// the end), as spans into `buf`; see [`Fields::parse`]. `buf` is shorter
/// than 4 GiB. `seen` is told about every line walked, the blank line
/// included.
fn walk<O: LineSeen>(
    buf: &[u8],
    start: usize,
    spans: &mut Vec<Span>,
    leniency: &Leniency,
    max_fields: usize,
    issues: &mut Vec<FieldIssue>,
    seen: &mut O,
) -> Result<Walked, FieldError> {
    let len = buf.len();
    let mut pos = start;
    let mut end = len;
    let mut blank_end = None;
    let mut bare_lf_reported = false;
    let line_ends = LineEnds::new();
    while pos < len {
        let lf = line_ends.find(&buf[pos..]).map(|i| pos + i);
        let (content_end, line_end) = match lf {
            Some(nl) => {
                let crlf = nl > pos && buf[nl - 1] == b'\r';
                if !crlf && !bare_lf_reported {
                    deviation(
                        leniency.bare_lf,
                        "line end without CR",
                        WarningKind::BareLf,
                        nl,
                        issues,
                    )?;
                    bare_lf_reported = true;
                }
                // Strip every CR before the LF: CR CR LF line ends occur
                // (the CR already seen is not looked at again).
                let mut ce = nl;
                if crlf {
                    ce -= 1;
                    while ce > pos && buf[ce - 1] == b'\r' {
                        ce -= 1;
                    }
                }
                (ce, nl + 1)
            }
            None => (len, len),
        };
        seen.line(buf, pos, content_end, lf);
        if content_end == pos {
            end = pos;
            blank_end = (line_end > pos).then_some(line_end);
            break;
        }
        if is_ws(buf[pos]) {
            // A continuation line (LWS): extends the previous field.
            if let Some(last) = spans.last_mut() {
                last.value_end = content_end as u32;
                last.line_end = line_end as u32;
                last.folded = true;
            } else {
                deviation(
                    leniency.line_without_colon,
                    "continuation line before any field",
                    WarningKind::LineWithoutColon,
                    pos,
                    issues,
                )?;
            }
            pos = line_end;
            continue;
        }
        let line = &buf[pos..content_end];
        // The usual line: a token name right before the colon, found in
        // one pass over the name; anything else takes the careful path.
        // (An index loop: `take_while().count()` cost twice as much; eight
        // bytes at a time, letters, digits and `-` told by word arithmetic,
        // cost more than this for names of a dozen bytes.)
        let mut token_len = 0;
        while let Some(&b) = line.get(token_len) {
            if !TOKEN[usize::from(b)] {
                break;
            }
            token_len += 1;
        }
        let colon = if token_len > 0 && line.get(token_len) == Some(&b':') {
            token_len
        } else {
            let Some(colon) = memchr::memchr(b':', line) else {
                deviation(
                    leniency.line_without_colon,
                    "line without a colon",
                    WarningKind::LineWithoutColon,
                    pos,
                    issues,
                )?;
                pos = line_end;
                continue;
            };
            let name = trim_end(&line[..colon]);
            if name.len() != colon {
                deviation(
                    leniency.space_before_colon,
                    "white space before colon",
                    WarningKind::SpaceBeforeColon,
                    pos + name.len(),
                    issues,
                )?;
            }
            if name.is_empty() || !name.iter().all(|&b| is_token_char(b)) {
                deviation(
                    leniency.bad_field_name,
                    "field name is not a token",
                    WarningKind::BadFieldName,
                    pos,
                    issues,
                )?;
            }
            colon
        };
        let name = trim_end(&line[..colon]);
        let mut value_start = pos + colon + 1;
        while value_start < content_end && is_ws(buf[value_start]) {
            value_start += 1;
        }
        if spans.len() >= max_fields {
            return Err(FieldError::TooMany(max_fields));
        }
        spans.push(Span {
            line: pos as u32,
            name_end: (pos + name.len()) as u32,
            value: value_start as u32,
            value_end: content_end as u32,
            line_end: line_end as u32,
            folded: false,
        });
        pos = line_end;
    }
    Ok(Walked { end, blank_end })
}

/// Finds each line's LF in [`walk`]: memchr's searcher made once a
/// walk, not once a line (its dispatch and set-up cost about a quarter of
/// the search of a header line).
struct LineEnds {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::One>,
}

impl LineEnds {
    #[inline]
    fn new() -> Self {
        LineEnds {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::One::new(b'\n'),
        }
    }

    /// The offset of the first LF in `hay`.
    #[inline]
    fn find(&self, hay: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(one) = &self.avx2 {
            return one.find(hay);
        }
        memchr::memchr(b'\n', hay)
    }
}

/// ISO-8859-1 bytes as text: each byte is the code point of the same value.
fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

fn is_ws(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim_end(mut b: &[u8]) -> &[u8] {
    while let [rest @ .., last] = b {
        if is_ws(*last) || *last == b'\r' || *last == b'\n' {
            b = rest;
        } else {
            break;
        }
    }
    b
}

fn trim_start(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if is_ws(*first) {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// True for the characters RFC 9110 allows in a token (field names).
pub fn is_token_char(b: u8) -> bool {
    TOKEN[usize::from(b)]
}

/// [`is_token_char`] as a table: one load per byte of a name.
static TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = matches!(b as u8,
            b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' |
            b'^' | b'_' | b'`' | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z');
        b += 1;
    }
    t
};

/// Why a field block could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// A strict parse met something a lenient one would accept.
    #[error("{what} at byte {offset} of the header block")]
    Strict {
        /// The rule broken.
        what: &'static str,
        /// Byte offset in the block.
        offset: usize,
    },
    /// More fields than [`crate::Limits::max_fields`].
    #[error("more than {0} fields")]
    TooMany(usize),
    /// A value given to a setter holds CR or LF (header injection).
    #[error("field value holds a line break")]
    LineBreakInValue,
    /// A name given to a setter is not a token.
    #[error("field name {0:?} is not a token")]
    BadName(String),
    /// The block is larger than 4 GiB.
    #[error("field block larger than 4 GiB")]
    TooLarge,
}

impl Fields {
    /// An empty field list with no start line.
    pub fn new() -> Self {
        Fields::default()
    }

    /// Parses `buf[start..]` as field lines. The block ends at the first
    /// empty line (which stays in the raw bytes) or at the end of `buf`.
    ///
    /// Lenient parsing accepts bare LF, lines without a colon (kept raw,
    /// not listed), white space before the colon and names outside the token
    /// grammar, pushing a [`FieldIssue`] for each; strict parsing fails on
    /// the first.
    ///
    /// # Errors
    /// In strict mode, the first deviation; in both modes, more than
    /// `max_fields` fields.
    pub fn parse(
        buf: Vec<u8>,
        start: usize,
        strict: bool,
        max_fields: usize,
        issues: &mut Vec<FieldIssue>,
    ) -> Result<Fields, FieldError> {
        let mut f = Fields {
            buf,
            start: 0,
            end: 0,
            // A head has about a dozen fields: one allocation, not five.
            spans: Vec::with_capacity(16),
        };
        let leniency = if strict {
            Leniency::strict()
        } else {
            Leniency::lenient()
        };
        f.reparse(start, &leniency, max_fields, issues)?;
        Ok(f)
    }

    /// Parses an `application/warc-fields` block (no start line).
    ///
    /// # Errors
    /// As [`Fields::parse`], lenient.
    pub fn parse_warc_fields(block: &[u8]) -> Result<(Fields, Vec<FieldIssue>), FieldError> {
        let mut issues = Vec::new();
        let f = Fields::parse(block.to_vec(), 0, false, usize::MAX, &mut issues)?;
        Ok((f, issues))
    }

    /// Re-parses the current buffer from `start`; lets a reader reuse the
    /// allocation of the previous record. Each deviation is an issue when
    /// its knob in `leniency` is on, else an error.
    pub(crate) fn reparse(
        &mut self,
        start: usize,
        leniency: &Leniency,
        max_fields: usize,
        issues: &mut Vec<FieldIssue>,
    ) -> Result<(), FieldError> {
        if u32::try_from(self.buf.len()).is_err() {
            return Err(FieldError::TooLarge);
        }
        self.spans.clear();
        let start = start.min(self.buf.len());
        self.start = start;
        let walked = walk(
            &self.buf,
            start,
            &mut self.spans,
            leniency,
            max_fields,
            issues,
            &mut (),
        )?;
        self.end = walked.end;
        Ok(())
    }

    /// Parses a header block at the start of `chunk` (a start line, field
    /// lines, a blank line of CR* LF with fewer than 63 CRs) in the same
    /// walk that finds its end, and keeps a copy of its bytes: what
    /// finding the end first and then [`Fields::reparse`] over the copy
    /// would give, fields and issues alike, in one pass. `None` when that
    /// is not sure: no blank line within `chunk` or `max_len` bytes, or a
    /// deviation a strict `leniency` rejects (the caller then takes the
    /// general path, which says what is wrong); `self` and `issues` are
    /// then left to the caller to reset. `Some(n)`: the block is
    /// `chunk[..n]`.
    pub(crate) fn parse_block_in(
        &mut self,
        chunk: &[u8],
        leniency: &Leniency,
        max_fields: usize,
        max_len: usize,
        issues: &mut Vec<FieldIssue>,
    ) -> Option<usize> {
        let chunk = chunk.get(..chunk.len().min(max_len).min(u32::MAX as usize))?;
        let first_nl = memchr::memchr(b'\n', chunk)?;
        self.buf.clear();
        self.spans.clear();
        let walked = walk(
            chunk,
            first_nl + 1,
            &mut self.spans,
            leniency,
            max_fields,
            issues,
            &mut (),
        )
        .ok()?;
        let block_end = walked.blank_end?;
        // The end search stops at blank lines of fewer than 63 CRs.
        if block_end - walked.end > 63 {
            return None;
        }
        self.buf.extend_from_slice(&chunk[..block_end]);
        self.start = first_nl + 1;
        self.end = walked.end;
        Some(block_end)
    }

    /// Walks the field lines of `chunk` from `start` up to the first
    /// blank line, leniently, telling `seen` about each line, and keeps
    /// their spans; the bytes are not kept: [`Fields::keep`] copies the
    /// block once its end is known. Returns (start of the blank line or
    /// the end of `chunk`, just past the blank line when there is one).
    /// What [`Fields::parse`] of the block would give, fields and issues
    /// alike. (HTTP heads: parsed where they lie in one pass.)
    pub(crate) fn walk_in<O: LineSeen>(
        &mut self,
        chunk: &[u8],
        start: usize,
        max_fields: usize,
        issues: &mut Vec<FieldIssue>,
        seen: &mut O,
    ) -> Result<(usize, Option<usize>), FieldError> {
        if u32::try_from(chunk.len()).is_err() {
            return Err(FieldError::TooLarge);
        }
        self.buf.clear();
        self.spans.clear();
        // A head has about a dozen fields: one allocation, not five.
        self.spans.reserve(16);
        let start = start.min(chunk.len());
        let walked = walk(
            chunk,
            start,
            &mut self.spans,
            &Leniency::lenient(),
            max_fields,
            issues,
            seen,
        )?;
        self.start = start;
        self.end = walked.end;
        Ok((walked.end, walked.blank_end))
    }

    /// Empties the list (no start line, no fields), keeping the buffers'
    /// capacity: what [`Fields::new`] gives, to parse into again.
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
        self.start = 0;
        self.end = 0;
    }

    /// Keeps `block` as the bytes of the fields [`Fields::walk_in`] just
    /// walked: the chunk it walked, cut at or after the blank line.
    pub(crate) fn keep(&mut self, block: &[u8]) {
        self.buf.clear();
        self.buf.extend_from_slice(block);
    }

    fn field(&self, s: &Span) -> Field<'_> {
        Field {
            name: &self.buf[s.line as usize..s.name_end as usize],
            raw_value: &self.buf[s.value as usize..s.value_end as usize],
            raw_line: &self.buf[s.line as usize..s.line_end as usize],
            folded: s.folded,
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are no fields.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The fields in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Field<'_>> + '_ {
        self.spans.iter().map(|s| self.field(s))
    }

    /// The first field named `name` (ASCII case ignored).
    pub fn get(&self, name: &str) -> Option<Field<'_>> {
        self.spans
            .iter()
            .find(|s| self.name_is(s, name.as_bytes()))
            .map(|s| self.field(s))
    }

    /// The first field of each of `names`, in one pass over the fields
    /// (names are compared by length first): for a reader that wants
    /// several fields of every record, N lookups for the price of one.
    /// Inlined, so that constant names are compared as constants (every
    /// record's WARC-Type and Content-Length: out of line it cost `ls` 2.4 M
    /// instructions more on the plain slice).
    #[inline]
    pub fn get_many<const N: usize>(&self, names: [&str; N]) -> [Option<Field<'_>>; N] {
        let mut found = [None; N];
        let mut left = N;
        // The lengths asked for, a bit each (below 64): a field of any
        // other length is passed over at once (most of a header's).
        let mut lens = 0u64;
        let mut long = false;
        for name in names {
            if name.len() < 64 {
                lens |= 1 << name.len();
            } else {
                long = true;
            }
        }
        for s in &self.spans {
            let len = (s.name_end - s.line) as usize;
            let asked = if len < 64 { lens >> len & 1 == 1 } else { long };
            if !asked {
                continue;
            }
            for (slot, name) in found.iter_mut().zip(names) {
                if slot.is_none() && name.len() == len && self.name_is(s, name.as_bytes()) {
                    *slot = Some(self.field(s));
                    left -= 1;
                }
            }
            if left == 0 {
                break;
            }
        }
        found
    }

    /// True when the span's name is `name`, ASCII case ignored; the length
    /// is compared first, without slicing the other parts of the field.
    #[inline]
    fn name_is(&self, s: &Span, name: &[u8]) -> bool {
        if (s.name_end - s.line) as usize != name.len() {
            return false;
        }
        let Some(n) = self.buf.get(s.line as usize..s.name_end as usize) else {
            return false;
        };
        // Names of 8 to 16 bytes (nearly all) are two overlapping 8-byte
        // words: equal as written (the usual case) in two compares, told
        // apart from names of the same length (`WARC-Type`, `WARC-Date`)
        // by the words with the case bit set (a fold that can merge more
        // names, never tell apart two equal but for case), and only the
        // rest compared byte by byte, case ignored.
        if let (Some(a0), Some(b0), Some(a1), Some(b1)) = (
            n.first_chunk::<8>(),
            name.first_chunk::<8>(),
            n.last_chunk::<8>(),
            name.last_chunk::<8>(),
        ) && n.len() <= 16
        {
            let (a0, b0) = (u64::from_le_bytes(*a0), u64::from_le_bytes(*b0));
            let (a1, b1) = (u64::from_le_bytes(*a1), u64::from_le_bytes(*b1));
            if a0 == b0 && a1 == b1 {
                return true;
            }
            const CASE: u64 = 0x2020_2020_2020_2020;
            if (a0 | CASE) != (b0 | CASE) || (a1 | CASE) != (b1 | CASE) {
                return false;
            }
            return n.eq_ignore_ascii_case(name);
        }
        n == name || n.eq_ignore_ascii_case(name)
    }

    /// Every field named `name`, in order.
    pub fn get_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = Field<'s>> + 's {
        self.spans
            .iter()
            .filter(move |s| self.name_is(s, name.as_bytes()))
            .map(|s| self.field(s))
    }

    /// The unfolded value of the first field named `name`, as text.
    pub fn value(&self, name: &str) -> Option<Cow<'_, str>> {
        self.get(name).map(|f| f.value_str())
    }

    /// The unfolded value of the first field named `name`, as bytes.
    pub fn value_bytes(&self, name: &str) -> Option<Cow<'_, [u8]>> {
        self.get(name).map(|f| f.value())
    }

    /// True when a field named `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The bytes before the first field (a start line such as `WARC/1.1\r\n`).
    pub fn start_line(&self) -> &[u8] {
        &self.buf[..self.start]
    }

    /// The whole raw block: start line, fields and the terminating blank line.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes this value holds on the heap (its buffers' capacity, which
    /// can exceed what they hold): what a cache of kept copies bounds.
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity() + self.spans.capacity() * std::mem::size_of::<Span>()
    }

    /// The raw field lines only (no start line, no blank line).
    pub fn field_bytes(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Writes the raw block as stored.
    ///
    /// # Errors
    /// Those of `w`.
    pub fn write_to<W: Write>(&self, mut w: W) -> io::Result<()> {
        w.write_all(&self.buf)
    }

    /// Gives the raw buffer back (for reuse).
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Mutable access to the buffer for a reader that fills it and then calls
    /// `reparse`.
    pub(crate) fn buf_mut(&mut self) -> &mut Vec<u8> {
        self.spans.clear();
        self.start = 0;
        self.end = 0;
        &mut self.buf
    }

    fn check_new(name: &str, value: &[u8]) -> Result<(), FieldError> {
        if name.is_empty() || !name.bytes().all(is_token_char) {
            return Err(FieldError::BadName(name.to_string()));
        }
        if value.contains(&b'\r') || value.contains(&b'\n') {
            return Err(FieldError::LineBreakInValue);
        }
        Ok(())
    }

    /// The terminator style to keep: the block's own line end.
    fn eol(&self) -> &'static [u8] {
        // The fields' line end is their first line break's (the first
        // field's own end may be a fold's, or missing); none: CRLF.
        match self.buf[self.start..self.end]
            .iter()
            .position(|&b| b == b'\n')
        {
            Some(i) if i == 0 || self.buf[self.start + i - 1] != b'\r' => b"\n",
            _ => b"\r\n",
        }
    }

    /// Replaces the bytes `range` of the buffer, shifting the spans after it.
    fn splice(&mut self, range: std::ops::Range<usize>, with: &[u8]) -> Result<(), FieldError> {
        let delta = with.len() as i64 - (range.end - range.start) as i64;
        if u32::try_from(self.buf.len() as i64 + delta).is_err() {
            return Err(FieldError::TooLarge);
        }
        let at = range.start;
        self.buf.splice(range, with.iter().copied());
        let shift = |v: &mut u32| {
            if *v as usize >= at {
                *v = (*v as i64 + delta) as u32;
            }
        };
        for s in &mut self.spans {
            if s.line as usize > at {
                shift(&mut s.line);
                shift(&mut s.name_end);
                shift(&mut s.value);
                shift(&mut s.value_end);
                shift(&mut s.line_end);
            }
        }
        if self.end > at || (self.end == at && delta > 0) {
            self.end = (self.end as i64 + delta) as usize;
        }
        Ok(())
    }

    /// Appends a field after the last one (before the blank line, if any).
    /// A last field without its line end is given one first, so that the
    /// new field is a line of its own; a last line that is no field and
    /// has no line end stays last, the new field before it.
    ///
    /// # Errors
    /// A name that is not a token, or a value holding CR or LF.
    pub fn append(&mut self, name: &str, value: impl AsRef<[u8]>) -> Result<(), FieldError> {
        let value = value.as_ref();
        Fields::check_new(name, value)?;
        let eol = self.eol();
        let end = self.end;
        // A last line without its line end (a warc-fields block written
        // without one, a head cut short): the new field would run on from
        // it. A field, or a line continuing one, is ended first; another
        // line that is no field stays last as it is, the new field put
        // before it (ended, a lone CR would become the blank line that
        // ends the block).
        let (at, lead): (usize, &[u8]) = if end == self.start || self.buf[end - 1] == b'\n' {
            (end, b"")
        } else {
            let line = self.buf[self.start..end]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(self.start, |i| self.start + i + 1);
            let a_field = self
                .spans
                .last()
                .is_some_and(|s| s.line_end as usize == end);
            if a_field || matches!(self.buf[line], b' ' | b'\t') {
                (end, eol)
            } else {
                (line, b"")
            }
        };
        let mut line = Vec::with_capacity(lead.len() + name.len() + value.len() + 4);
        line.extend_from_slice(lead);
        line.extend_from_slice(name.as_bytes());
        line.extend_from_slice(b": ");
        line.extend_from_slice(value);
        line.extend_from_slice(eol);
        self.splice(at..at, &line)?;
        let base = (at + lead.len()) as u32;
        self.spans.push(Span {
            line: base,
            name_end: base + name.len() as u32,
            value: base + name.len() as u32 + 2,
            value_end: base + (name.len() + 2 + value.len()) as u32,
            line_end: (at + line.len()) as u32,
            folded: false,
        });
        self.end = end + line.len();
        Ok(())
    }

    /// Removes every field named `name`; returns how many were removed.
    pub fn remove(&mut self, name: &str) -> usize {
        let mut removed = 0;
        while let Some(i) = self.spans.iter().position(|s| {
            self.buf[s.line as usize..s.name_end as usize].eq_ignore_ascii_case(name.as_bytes())
        }) {
            let s = self.spans.remove(i);
            // Cannot fail: the buffer only shrinks.
            let _ = self.splice(s.line as usize..s.line_end as usize, &[]);
            removed += 1;
        }
        removed
    }

    /// Sets `name` to `value`: the first field of that name is replaced in
    /// place (its position kept), later ones removed; appended when absent.
    ///
    /// # Errors
    /// As [`Fields::append`].
    pub fn set(&mut self, name: &str, value: impl AsRef<[u8]>) -> Result<(), FieldError> {
        let value = value.as_ref();
        Fields::check_new(name, value)?;
        let Some(i) = self.spans.iter().position(|s| {
            self.buf[s.line as usize..s.name_end as usize].eq_ignore_ascii_case(name.as_bytes())
        }) else {
            return self.append(name, value);
        };
        let s = self.spans[i];
        let old_len = s.value_end - s.value;
        self.splice(s.value as usize..s.value_end as usize, value)?;
        let grow = value.len() as i64 - old_len as i64;
        let sp = &mut self.spans[i];
        sp.value_end = (sp.value_end as i64 + grow) as u32;
        sp.line_end = (sp.line_end as i64 + grow) as u32;
        // The new value is one line (no line breaks: checked above).
        sp.folded = false;
        // Later fields of the same name go.
        let later: Vec<Span> = self.spans[i + 1..]
            .iter()
            .filter(|s| {
                self.buf[s.line as usize..s.name_end as usize].eq_ignore_ascii_case(name.as_bytes())
            })
            .copied()
            .collect();
        for s in later.into_iter().rev() {
            if let Some(j) = self.spans.iter().position(|x| *x == s) {
                self.spans.remove(j);
                let _ = self.splice(s.line as usize..s.line_end as usize, &[]);
            }
        }
        Ok(())
    }

    /// A block with start line `start_line` (without its line end) and no
    /// fields yet, ending in a blank line: the shape of a WARC header block.
    pub fn with_start_line(start_line: &[u8]) -> Self {
        let mut buf = Vec::with_capacity(512);
        buf.extend_from_slice(start_line);
        buf.extend_from_slice(b"\r\n");
        let start = buf.len();
        buf.extend_from_slice(b"\r\n");
        Fields {
            buf,
            start,
            end: start,
            spans: Vec::new(),
        }
    }
}

/// Decodes RFC 2047 encoded-words (`=?charset?B?...?=`, `=?charset?Q?...?=`)
/// in `s`. White space between two adjacent encoded-words is dropped, as the
/// RFC says. Words in unknown charsets or with bad encodings stay as written.
pub fn decode_encoded_words(s: &str) -> Cow<'_, str> {
    if !s.contains("=?") {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut last_was_word = false;
    let mut pending_ws = "";
    while !rest.is_empty() {
        if let Some(start) = rest.find("=?") {
            let (before, at) = rest.split_at(start);
            match decode_one_word(at) {
                Some((text, used)) => {
                    if !(last_was_word && before.trim().is_empty()) {
                        out.push_str(pending_ws);
                        out.push_str(before);
                    }
                    out.push_str(&text);
                    rest = &at[used..];
                    last_was_word = true;
                    // Hold white space back until we know what follows it.
                    let ws_len = rest.len() - rest.trim_start().len();
                    pending_ws = &rest[..ws_len];
                    rest = &rest[ws_len..];
                }
                None => {
                    out.push_str(pending_ws);
                    pending_ws = "";
                    out.push_str(before);
                    out.push_str("=?");
                    rest = &at[2..];
                    last_was_word = false;
                }
            }
        } else {
            out.push_str(pending_ws);
            pending_ws = "";
            out.push_str(rest);
            rest = "";
        }
    }
    out.push_str(pending_ws);
    Cow::Owned(out)
}

/// The first RFC 2047 encoded word of `s` that cannot be decoded, and why:
/// a token shaped like one (`=?charset?B|Q?`...) whose charset is unknown,
/// whose encoding is neither B nor Q, whose text is not valid in its
/// encoding, or which is not closed by `?=`. Such a word is shown as
/// written by [`decode_encoded_words`]. Text that merely contains `=?`
/// (not followed by `charset?X?`) is not an encoded word and passes.
pub fn malformed_encoded_word(s: &str) -> Option<(&str, &'static str)> {
    let mut rest = s;
    while let Some(start) = rest.find("=?") {
        let at = &rest[start..];
        // The word runs to the next white space (encoded words hold none).
        let len = at
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(at.len());
        let word = &at[..len];
        rest = &at[2..];
        let inner = &word[2..];
        let Some(q1) = inner.find('?') else {
            continue;
        };
        let charset = &inner[..q1];
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-^_`{|}~".contains(c);
        if charset.is_empty() || !charset.chars().all(token) {
            continue;
        }
        let after = &inner[q1 + 1..];
        let mut enc = after.chars();
        let (Some(e), Some('?')) = (enc.next(), enc.next()) else {
            continue;
        };
        // Shaped as an encoded word from here on.
        if !after[e.len_utf8() + 1..].contains("?=") {
            return Some((word, "it is not closed by ?="));
        }
        if !matches!(e, 'B' | 'b' | 'Q' | 'q') {
            return Some((word, "its encoding is neither B nor Q"));
        }
        let label = charset.split('*').next().unwrap_or(charset);
        if decode_charset(label, b"").is_none() {
            return Some((word, "its charset is unknown"));
        }
        if decode_one_word(word).is_none() {
            return Some((word, "its text is not valid in its encoding"));
        }
    }
    None
}

/// Decodes one encoded-word at the start of `s`; returns the text and the
/// number of bytes used.
fn decode_one_word(s: &str) -> Option<(String, usize)> {
    let inner = s.strip_prefix("=?")?;
    let q1 = inner.find('?')?;
    let charset = &inner[..q1];
    let after = &inner[q1 + 1..];
    let q2 = after.find('?')?;
    let enc = &after[..q2];
    let text_and_rest = &after[q2 + 1..];
    let end = text_and_rest.find("?=")?;
    let text = &text_and_rest[..end];
    if text.contains(' ') {
        return None;
    }
    let bytes = match enc {
        "B" | "b" => data_encoding::BASE64
            .decode(text.as_bytes())
            .or_else(|_| data_encoding::BASE64_NOPAD.decode(text.trim_end_matches('=').as_bytes()))
            .ok()?,
        "Q" | "q" => {
            let mut v = Vec::with_capacity(text.len());
            let b = text.as_bytes();
            let mut i = 0;
            while i < b.len() {
                match b[i] {
                    b'_' => v.push(b' '),
                    b'=' if i + 2 < b.len() => {
                        let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok()?;
                        v.push(u8::from_str_radix(hex, 16).ok()?);
                        i += 2;
                    }
                    b'=' => return None,
                    c => v.push(c),
                }
                i += 1;
            }
            v
        }
        _ => return None,
    };
    // RFC 2231 allows a language after '*': "utf-8*en".
    let label = charset.split('*').next().unwrap_or(charset);
    let text = decode_charset(label, &bytes)?;
    Some((text, 2 + q1 + 1 + q2 + 1 + end + 2))
}

/// `bytes` in the charset `label` names (WHATWG labels, with a BOM
/// overriding as the Encoding Standard's decode does); `None` when the
/// label is unknown.
#[cfg(feature = "charset")]
fn decode_charset(label: &str, bytes: &[u8]) -> Option<String> {
    let encoding = encoding_rs::Encoding::for_label(label.as_bytes())?;
    let (text, _, _) = encoding.decode(bytes);
    Some(text.into_owned())
}

/// `bytes` in the charset `label` names, without the `charset` feature:
/// UTF-8 only (as encoding_rs decodes it: a UTF-8 BOM dropped, bad
/// sequences replaced), and `us-ascii` when the bytes are ASCII. Any other
/// charset (or a UTF-16 BOM) is `None`, so the encoded word stays as
/// written rather than being decoded wrongly.
#[cfg(not(feature = "charset"))]
fn decode_charset(label: &str, bytes: &[u8]) -> Option<String> {
    let l = label.trim_matches(|c: char| c.is_ascii_whitespace());
    let utf8 = [
        "utf-8",
        "utf8",
        "unicode-1-1-utf-8",
        "unicode11utf8",
        "unicode20utf8",
        "x-unicode20utf8",
    ]
    .iter()
    .any(|n| l.eq_ignore_ascii_case(n));
    if utf8 {
        if bytes.starts_with(&[0xfe, 0xff]) || bytes.starts_with(&[0xff, 0xfe]) {
            return None;
        }
        let bytes = bytes.strip_prefix(&[0xef, 0xbb, 0xbf][..]).unwrap_or(bytes);
        return Some(String::from_utf8_lossy(bytes).into_owned());
    }
    let ascii = ["us-ascii", "ascii"]
        .iter()
        .any(|n| l.eq_ignore_ascii_case(n));
    (ascii && bytes.is_ascii()).then(|| String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    /// A block whose last line has no line end (a field, or a line
    /// without a colon): a field appended or set is a line of its own,
    /// which a parse of the edited bytes finds, the last line's value
    /// unchanged.
    #[test]
    fn a_field_appended_after_an_unended_last_line_is_a_line_of_its_own() {
        use super::Fields;
        // The block, its fields, and its bytes once the field is removed
        // again: a last field (or its continuation) keeps the line end it
        // was given, and the rest is as it was.
        for (block, fields, after) in [
            (&b"a: 1\r\nb: 2"[..], 2, &b"a: 1\r\nb: 2\r\n"[..]),
            (b"a: 1\nb: 2", 2, b"a: 1\nb: 2\n"),
            (b"a: 1\r\n more", 1, b"a: 1\r\n more\r\n"),
            (b"a: 1\r\nno colon", 1, b"a: 1\r\nno colon"),
            (b"a: 1\n\r", 1, b"a: 1\n\r"),
            (b"a: 1\r\n", 1, b"a: 1\r\n"),
        ] {
            let mut issues = Vec::new();
            let mut f = Fields::parse(block.to_vec(), 0, false, 100, &mut issues).unwrap();
            assert_eq!(f.len(), fields);
            f.set("C", "3").unwrap();
            assert_eq!(f.value("c").as_deref(), Some("3"));
            let g = Fields::parse(f.as_bytes().to_vec(), 0, false, 100, &mut issues).unwrap();
            let edited = String::from_utf8_lossy(f.as_bytes()).into_owned();
            assert_eq!(g.len(), fields + 1, "{edited:?}");
            assert_eq!(g.value("C").as_deref(), Some("3"), "{edited:?}");
            assert_eq!(g.value("a"), f.value("a"), "{edited:?}");
            if fields == 2 {
                assert_eq!(g.value("b").as_deref(), Some("2"));
            }
            f.remove("c");
            assert_eq!(f.as_bytes(), after, "{edited:?}");
        }
    }

    use super::*;

    fn parse(s: &[u8], start: usize) -> (Fields, Vec<FieldIssue>) {
        let mut issues = Vec::new();
        let f = Fields::parse(s.to_vec(), start, false, 1000, &mut issues).unwrap();
        (f, issues)
    }

    #[test]
    fn clone_from_copies_exactly_into_the_kept_buffers() {
        let (long, _) = parse(b"WARC/1.1\r\nA: 1\r\nB: two\r\n folded\r\nC: 3\r\n\r\n", 10);
        let (short, _) = parse(b"WARC/1.0\r\nx-y:  z\r\n\r\n", 10);
        let mut kept = long.clone();
        assert!(kept == long);
        let before = kept.as_bytes().as_ptr();
        kept.clone_from(&short);
        assert!(kept == short);
        assert_eq!(kept.as_bytes(), short.as_bytes());
        // No allocation: the longer block's buffer holds the copy.
        assert_eq!(kept.as_bytes().as_ptr(), before);
        let names: Vec<&[u8]> = kept.iter().map(|f| f.name()).collect();
        assert_eq!(names, [&b"x-y"[..]]);
        kept.clone_from(&long);
        assert!(kept == long);
        assert_eq!(
            kept.get("b").map(|f| f.value().into_owned()),
            long.get("b").map(|f| f.value().into_owned())
        );
    }

    /// A kept copy grows to the header copied into it exactly: with
    /// `Vec::clone_from` a block a little longer than the last would
    /// double the buffer, and kept copies would hold twice the largest.
    #[test]
    fn clone_from_grows_kept_buffers_exactly() {
        let (short, _) = parse(b"WARC/1.1\r\nA: 1\r\nB: 22\r\n\r\n", 10);
        let (long, _) = parse(b"WARC/1.1\r\nA: 1\r\nB: 22\r\nC: 333\r\nD: 4\r\n\r\n", 10);
        let mut kept = short.clone();
        assert_eq!(kept.heap_bytes(), short.clone().heap_bytes());
        kept.clone_from(&long);
        assert!(kept == long);
        assert_eq!(kept.heap_bytes(), long.clone().heap_bytes());
        // A smaller copy reuses the buffers: the capacity stays.
        kept.clone_from(&short);
        assert!(kept == short);
        assert_eq!(kept.heap_bytes(), long.clone().heap_bytes());
    }

    /// The walk's LF searcher finds what memchr finds: every LF place in
    /// haystacks on both sides of the AVX2 search's 32- and 64-byte steps,
    /// with other line-end bytes around it, and none.
    #[test]
    fn line_ends_are_memchrs() {
        let ends = LineEnds::new();
        for len in 0..140 {
            let mut hay: Vec<u8> = (0..len).map(|i| b"ab\r:\t "[i % 6]).collect();
            assert_eq!(ends.find(&hay), None, "{len}");
            for at in 0..len {
                hay[at] = b'\n';
                assert_eq!(ends.find(&hay), memchr::memchr(b'\n', &hay), "{len} {at}");
                assert_eq!(ends.find(&hay[at..]), Some(0));
                hay[at] = b'x';
            }
        }
    }

    /// `get_many` finds what `get` finds for each name: the first field,
    /// names of one length told apart, case ignored (also for names the
    /// eight-byte reject folds together, `^` and `~`), names of 64 bytes
    /// and more too (past the lengths' mask).
    #[test]
    fn get_many_agrees_with_get() {
        let block = b"X\r\nWARC-Date: d\r\nwarc-type: t\r\nWARC-Type: u\r\nContent-Length: 1\r\nWARC-Record-ID: i\r\nLong-Name-^-Here: a\r\nLONG-NAME-~-HERE: b\r\n\r\n";
        let (f, _) = parse(block, 3);
        let names = [
            "WARC-Type",
            "WARC-Date",
            "content-length",
            "WARC-Record-ID",
            "Long-Name-~-Here",
            "long-name-^-here",
            "Missing",
            "WARC-Date",
        ];
        let many = f.get_many(names);
        for (name, got) in names.iter().zip(many) {
            assert_eq!(got, f.get(name), "{name}");
        }
        assert_eq!(many[0].map(|f| f.raw_value()), Some(&b"t"[..]));
        assert_eq!(many[4].map(|f| f.raw_value()), Some(&b"b"[..]));
        assert_eq!(many[5].map(|f| f.raw_value()), Some(&b"a"[..]));
        assert!(many[6].is_none());
        // Names of 64 bytes and more are looked for too (past the lengths' mask).
        let long = "L".repeat(70);
        let block = format!("X\r\nA: 1\r\n{long}: 2\r\n{}: 3\r\n\r\n", "M".repeat(64));
        let (f, _) = parse(block.as_bytes(), 3);
        let [a, l, m, none] = f.get_many(["a", &long.to_lowercase(), &"m".repeat(64), "B"]);
        assert_eq!(a.map(|f| f.raw_value()), Some(&b"1"[..]));
        assert_eq!(l.map(|f| f.raw_value()), Some(&b"2"[..]));
        assert_eq!(m.map(|f| f.raw_value()), Some(&b"3"[..]));
        assert!(none.is_none());
    }

    /// Only values with continuation lines are unfolded (owned); the
    /// others are borrowed, also after `set` replaced a folded value.
    #[test]
    fn only_folded_values_are_unfolded() {
        let block = b"X\r\nA: one\r\nB: two\r\n  three\r\nC: four\r\n \r\n\r\n";
        let (mut f, _) = parse(block, 3);
        assert!(matches!(f.get("A").unwrap().value(), Cow::Borrowed(b"one")));
        assert_eq!(&*f.get("B").unwrap().value(), b"two three");
        assert!(matches!(f.get("B").unwrap().value(), Cow::Owned(_)));
        // A continuation of white space only: nothing to unfold.
        assert!(matches!(
            f.get("C").unwrap().value(),
            Cow::Borrowed(b"four")
        ));
        f.set("B", "five").unwrap();
        assert!(matches!(
            f.get("B").unwrap().value(),
            Cow::Borrowed(b"five")
        ));
    }

    #[test]
    fn parses_order_case_repeats() {
        let block = b"WARC/1.1\r\nWARC-Type: response\r\nwarc-concurrent-to: <a>\r\nWARC-Concurrent-To:  <b>  \r\nContent-Length: 5\r\n\r\n";
        let (f, issues) = parse(block, 10);
        assert!(issues.is_empty());
        assert_eq!(f.len(), 4);
        assert_eq!(f.start_line(), b"WARC/1.1\r\n");
        assert_eq!(f.value("warc-type").unwrap(), "response");
        let all: Vec<_> = f
            .get_all("WARC-CONCURRENT-TO")
            .map(|x| x.value_str().into_owned())
            .collect();
        assert_eq!(all, ["<a>", "<b>"]);
        assert_eq!(f.iter().nth(1).unwrap().name(), b"warc-concurrent-to");
        assert_eq!(f.as_bytes(), block);
        assert_eq!(f.field_bytes(), &block[10..block.len() - 2]);
    }

    #[test]
    fn continuation_lines_unfold() {
        let block = b"A: one\r\n  two\r\n\tthree\r\nB: x\r\n";
        let (f, _) = parse(block, 0);
        assert_eq!(f.len(), 2);
        assert_eq!(f.value("a").unwrap(), "one two three");
        assert_eq!(f.get("a").unwrap().raw_value(), b"one\r\n  two\r\n\tthree");
        assert_eq!(f.value("b").unwrap(), "x");
        let (f, _) = parse(b"WARC-Type: \r\n\twarcinfo\r\n", 0);
        assert_eq!(f.value("warc-type").unwrap(), "warcinfo");
    }

    #[test]
    fn lenient_issues_and_strict_errors() {
        let block = b"A : 1\nno colon here\nB: 2\n\n";
        let (f, issues) = parse(block, 0);
        assert_eq!(f.len(), 2);
        let kinds: Vec<_> = issues.iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            [
                WarningKind::BareLf,
                WarningKind::SpaceBeforeColon,
                WarningKind::LineWithoutColon
            ]
        );
        assert_eq!(f.value("A").unwrap(), "1");
        let mut v = Vec::new();
        assert!(Fields::parse(block.to_vec(), 0, true, 100, &mut v).is_err());
        assert!(Fields::parse(b"A: 1\r\nB: 2\r\n".to_vec(), 0, true, 1, &mut v).is_err());
    }

    #[test]
    fn non_utf8_kept_as_bytes() {
        let block = b"X-Name: caf\xe9\r\n";
        let (f, _) = parse(block, 0);
        assert_eq!(&*f.value_bytes("x-name").unwrap(), b"caf\xe9");
        assert_eq!(f.value("x-name").unwrap(), "café");
    }

    #[test]
    fn set_append_remove_keep_raw_consistent() {
        let block = b"WARC/1.0\r\nA: 1\r\nB: 2\r\nA: 3\r\n\r\n";
        let (mut f, _) = parse(block, 10);
        f.set("a", "long value").unwrap();
        assert_eq!(f.as_bytes(), b"WARC/1.0\r\nA: long value\r\nB: 2\r\n\r\n");
        f.append("C", "4").unwrap();
        assert_eq!(
            f.as_bytes(),
            b"WARC/1.0\r\nA: long value\r\nB: 2\r\nC: 4\r\n\r\n"
        );
        assert_eq!(f.remove("b"), 1);
        assert_eq!(f.as_bytes(), b"WARC/1.0\r\nA: long value\r\nC: 4\r\n\r\n");
        assert_eq!(f.value("c").unwrap(), "4");
        assert_eq!(f.value("a").unwrap(), "long value");
        // The result re-parses to the same fields.
        let (g, _) = parse(f.as_bytes(), 10);
        assert_eq!(g, f);
        assert_eq!(
            f.set("D", "a\r\nB: injected"),
            Err(FieldError::LineBreakInValue)
        );
        assert!(f.append("bad name", "x").is_err());
    }

    #[test]
    fn with_start_line_builds_a_block() {
        let mut f = Fields::with_start_line(b"WARC/1.1");
        f.append("WARC-Type", "resource").unwrap();
        f.append("Content-Length", "0").unwrap();
        assert_eq!(
            f.as_bytes(),
            b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 0\r\n\r\n"
        );
        let (g, _) = parse(f.as_bytes(), 10);
        assert_eq!(g.len(), 2);
    }

    #[test]
    fn warc_fields_block() {
        let (f, issues) =
            Fields::parse_warc_fields(b"software: x\r\nformat: WARC File Format 1.1\r\n").unwrap();
        assert!(issues.is_empty());
        assert_eq!(f.value("format").unwrap(), "WARC File Format 1.1");
    }

    #[test]
    fn encoded_words() {
        assert_eq!(decode_encoded_words("plain"), "plain");
        assert_eq!(decode_encoded_words("=?UTF-8?B?Y2Fmw6k=?="), "café");
        // Other charsets need the `charset` feature; without it the word
        // stays as written.
        let latin1 = "=?ISO-8859-1?Q?caf=E9_au_lait?=";
        let want = if cfg!(feature = "charset") {
            "café au lait"
        } else {
            latin1
        };
        assert_eq!(decode_encoded_words(latin1), want);
        assert_eq!(decode_encoded_words("=?us-ascii?Q?plain?="), "plain");
        assert_eq!(
            decode_encoded_words("=?utf-8?B?77u/Y2Fmw6k=?="),
            "café",
            "a UTF-8 BOM is dropped"
        );
        assert_eq!(
            decode_encoded_words("a =?utf-8?q?x?= =?utf-8?q?y?= b"),
            "a xy b"
        );
        assert_eq!(decode_encoded_words("=?bogus?Q?x?="), "=?bogus?Q?x?=");
        // The ones that cannot be decoded are found, with the reason.
        assert_eq!(malformed_encoded_word("=?UTF-8?B?Y2Fmw6k=?= plain"), None);
        assert_eq!(malformed_encoded_word("a=?b and ?x=?y"), None);
        assert_eq!(malformed_encoded_word("http://a/?q=?x"), None);
        assert_eq!(
            malformed_encoded_word("=?utf-8?é?"),
            Some(("=?utf-8?é?", "it is not closed by ?="))
        );
        assert_eq!(
            malformed_encoded_word("x =?utf-8?Q?bad=Z?= y"),
            Some(("=?utf-8?Q?bad=Z?=", "its text is not valid in its encoding"))
        );
        assert_eq!(
            malformed_encoded_word("=?utf-8?B?!!!?="),
            Some(("=?utf-8?B?!!!?=", "its text is not valid in its encoding"))
        );
        assert_eq!(
            malformed_encoded_word("=?utf-8?X?abc?="),
            Some(("=?utf-8?X?abc?=", "its encoding is neither B nor Q"))
        );
        assert_eq!(
            malformed_encoded_word("=?utf-8?B?Y2Fm"),
            Some(("=?utf-8?B?Y2Fm", "it is not closed by ?="))
        );
        if cfg!(feature = "charset") {
            assert_eq!(
                malformed_encoded_word("=?bogus?Q?x?="),
                Some(("=?bogus?Q?x?=", "its charset is unknown"))
            );
        }
        assert_eq!(
            decode_encoded_words("=?utf-8?Q?bad=Z?="),
            "=?utf-8?Q?bad=Z?="
        );
    }
}
