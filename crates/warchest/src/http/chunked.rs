//! The chunked transfer coding (RFC 9112 section 7.1), decoded leniently.
//!
//! Tolerated, because archived responses contain them: upper- and
//! lower-case hex, zero-padded sizes (`00000000`), white space around the
//! size, chunk extensions, LF-only line ends, CR CR LF, empty lines between
//! chunks, a missing final CRLF (or a last-chunk line cut off at the end of
//! the block), and stray line ends after the terminator.
//!
//! Not tolerated, because the bytes then cannot be chunked data: a size line
//! that is not hex, a size that overflows 64 bits, a chunk whose data is
//! not followed by a line end (a wrong chunk size). Those are a
//! [`ChunkedError`]; [`ChunkedReader::lenient`] then passes the rest of the
//! body through raw, as warcio does, and [`sniff_chunked`] tells up front
//! whether a body announced as chunked really is.
//!
//! Nothing is allocated per chunk whatever the sizes say: a chunk of 2^63
//! bytes just counts down as the data arrives.

use std::io::{self, BufRead, Read};

/// The longest size-line prefix (size digits and the white space and CRs
/// around them, not the extension) kept for a raw fallback. Longer is an
/// error: no real size line needs it.
const MAX_SIZE_LINE: usize = 64;

/// What is wrong with chunked data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum ChunkedErrorKind {
    /// A byte that cannot be in a chunk-size line where a size was expected.
    BadSize(u8),
    /// The chunk size does not fit in 64 bits.
    SizeTooLarge,
    /// The chunk-size line (before any extension) is over 64 bytes.
    SizeLineTooLong,
    /// A chunk's data is not followed by a line end: the size is wrong.
    MissingChunkEnd(u8),
}

/// Chunked data could not be decoded; `offset` is where in the chunked
/// bytes (counting from the first byte after the HTTP head) decoding
/// stopped, at the offending byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[error("bad chunked encoding at byte {offset} of the body: {}", describe(*.kind))]
pub struct ChunkedError {
    /// What is wrong.
    pub kind: ChunkedErrorKind,
    /// Offset of the offending byte in the chunked stream.
    pub offset: u64,
}

fn describe(kind: ChunkedErrorKind) -> String {
    match kind {
        ChunkedErrorKind::BadSize(b) => {
            format!("byte {b:#04x} where a hex chunk size was expected")
        }
        ChunkedErrorKind::SizeTooLarge => "chunk size does not fit in 64 bits".into(),
        ChunkedErrorKind::SizeLineTooLong => "chunk size line too long".into(),
        ChunkedErrorKind::MissingChunkEnd(b) => {
            format!(
                "byte {b:#04x} after chunk data where a line end was expected (wrong chunk size)"
            )
        }
    }
}

/// How a chunked body ended, judged at the end of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum ChunkedEnd {
    /// The last chunk and the empty line after it (and any trailer) were seen.
    Complete,
    /// The last chunk (size 0) was seen, but not the empty line that should
    /// follow, or its line was cut off: common, and harmless.
    MissingFinalCrlf,
    /// The input ended before the last chunk: data may be missing.
    Truncated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In a chunk-size line, before any `;`.
    Size,
    /// Saw CR in a size line; expecting LF.
    SizeCr,
    /// In a chunk extension; skipping to LF.
    Ext,
    /// In chunk data; this many bytes to go.
    Data(u64),
    /// After chunk data; expecting CR or LF.
    DataEnd,
    /// After chunk data and CR; expecting LF.
    DataCr,
    /// At the start of a trailer line, or of the final empty line.
    TrailerStart,
    /// Saw CR at the start of a trailer line.
    TrailerCr,
    /// In a trailer field line; skipping to LF.
    Trailer,
    /// The terminator has been seen.
    Done,
    /// An error was returned; it repeats.
    Failed(ChunkedError),
}

/// A push decoder for the chunked transfer coding: feed it bytes as they
/// come, it calls back with the data. Holds no buffer beyond 64 bytes.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Bytes consumed so far.
    pos: u64,
    /// The size being read, its digit count, and whether white space
    /// followed the digits (another digit is then an error).
    size: u64,
    digits: u32,
    after_digits: bool,
    /// The current size line (or data end) as consumed, for a raw fallback.
    line: [u8; MAX_SIZE_LINE],
    line_len: usize,
    chunks: u64,
    decoded: u64,
    stray: u64,
    bare_lf: bool,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder::new()
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body.
    pub fn new() -> Self {
        ChunkedDecoder {
            state: State::Size,
            pos: 0,
            size: 0,
            digits: 0,
            after_digits: false,
            line: [0; MAX_SIZE_LINE],
            line_len: 0,
            chunks: 0,
            decoded: 0,
            stray: 0,
            bare_lf: false,
        }
    }

    /// Decodes `input`, calling `out` with each run of data (never with an
    /// empty slice). Returns how many bytes of `input` were consumed: all of
    /// them, except after the terminator, where consumption stops at the
    /// first byte that is not a stray CR or LF (the caller decides what
    /// such trailing bytes are).
    ///
    /// # Errors
    /// When the bytes are not chunked data. The bytes before
    /// [`ChunkedError::offset`] were consumed (those of the offending line
    /// are in [`pending`](ChunkedDecoder::pending)); the decoder stays
    /// failed and returns the same error for any later input.
    pub fn feed(
        &mut self,
        input: &[u8],
        mut out: impl FnMut(&[u8]),
    ) -> Result<usize, ChunkedError> {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        let mut i = 0;
        let r = loop {
            if i == input.len() {
                break Ok(i);
            }
            if let State::Data(left) = self.state {
                let n = usize::try_from(left)
                    .unwrap_or(usize::MAX)
                    .min(input.len() - i);
                out(&input[i..i + n]);
                i += n;
                self.decoded += n as u64;
                let left = left - n as u64;
                if left == 0 {
                    self.state = State::DataEnd;
                    self.line_len = 0;
                } else {
                    self.state = State::Data(left);
                }
                continue;
            }
            let b = input[i];
            match self.step(b) {
                Ok(true) => i += 1,
                Ok(false) => break Ok(i),
                Err(kind) => {
                    let e = ChunkedError {
                        kind,
                        offset: self.pos + i as u64,
                    };
                    self.state = State::Failed(e);
                    break Err(e);
                }
            }
        };
        match r {
            Ok(n) => {
                self.pos += n as u64;
                Ok(n)
            }
            Err(e) => {
                self.pos = e.offset;
                Err(e)
            }
        }
    }

    fn keep(&mut self, b: u8) -> Result<(), ChunkedErrorKind> {
        if self.line_len == MAX_SIZE_LINE {
            return Err(ChunkedErrorKind::SizeLineTooLong);
        }
        self.line[self.line_len] = b;
        self.line_len += 1;
        Ok(())
    }

    /// Ends a size line: the chunk starts, or it was an empty line.
    fn end_size_line(&mut self, crlf: bool) {
        self.bare_lf |= !crlf;
        self.line_len = 0;
        if self.digits == 0 {
            // An empty line where a size was expected: tolerated, counted.
            self.stray += 1;
            self.after_digits = false;
            self.state = State::Size;
            return;
        }
        self.chunks += 1;
        self.state = if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data(self.size)
        };
        self.size = 0;
        self.digits = 0;
        self.after_digits = false;
    }

    /// Consumes one byte outside chunk data. `Ok(false)`: not consumed.
    fn step(&mut self, b: u8) -> Result<bool, ChunkedErrorKind> {
        match self.state {
            State::Size => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    if self.after_digits {
                        return Err(ChunkedErrorKind::BadSize(b));
                    }
                    if self.size > u64::MAX >> 4 {
                        return Err(ChunkedErrorKind::SizeTooLarge);
                    }
                    self.keep(b)?;
                    // Hex digit value; the match arm guarantees a digit.
                    let v = (b as char).to_digit(16).unwrap_or(0);
                    self.size = (self.size << 4) | u64::from(v);
                    self.digits += 1;
                }
                b' ' | b'\t' => {
                    self.keep(b)?;
                    self.after_digits = self.digits > 0;
                }
                b';' if self.digits > 0 => self.state = State::Ext,
                b'\r' => {
                    self.keep(b)?;
                    self.state = State::SizeCr;
                }
                b'\n' => self.end_size_line(false),
                _ => return Err(ChunkedErrorKind::BadSize(b)),
            },
            State::SizeCr => match b {
                b'\n' => self.end_size_line(true),
                b'\r' => self.keep(b)?,
                _ => return Err(ChunkedErrorKind::BadSize(b)),
            },
            State::Ext => {
                if b == b'\n' {
                    self.end_size_line(true);
                }
            }
            State::Data(_) => {}
            State::DataEnd => match b {
                b'\r' => {
                    self.keep(b)?;
                    self.state = State::DataCr;
                }
                b'\n' => {
                    self.bare_lf = true;
                    self.line_len = 0;
                    self.state = State::Size;
                }
                _ => return Err(ChunkedErrorKind::MissingChunkEnd(b)),
            },
            State::DataCr => match b {
                b'\n' => {
                    self.line_len = 0;
                    self.state = State::Size;
                }
                b'\r' => self.keep(b)?,
                _ => return Err(ChunkedErrorKind::MissingChunkEnd(b)),
            },
            State::TrailerStart => match b {
                b'\r' => self.state = State::TrailerCr,
                b'\n' => self.state = State::Done,
                _ => self.state = State::Trailer,
            },
            State::TrailerCr => match b {
                b'\n' => self.state = State::Done,
                b'\r' => {}
                _ => self.state = State::Trailer,
            },
            State::Trailer => {
                if b == b'\n' {
                    self.state = State::TrailerStart;
                }
            }
            State::Done => {
                if b == b'\r' || b == b'\n' {
                    self.stray += 1;
                } else {
                    return Ok(false);
                }
            }
            // feed() returns before stepping a failed decoder.
            State::Failed(_) => return Ok(false),
        }
        Ok(true)
    }

    /// True once the terminator (last chunk and final empty line) was seen.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// How the body ended, if the input ends now.
    pub fn end(&self) -> ChunkedEnd {
        match self.state {
            State::Done => ChunkedEnd::Complete,
            State::TrailerStart | State::TrailerCr | State::Trailer => ChunkedEnd::MissingFinalCrlf,
            // "0" at the very end, its line end cut off.
            State::Size | State::SizeCr | State::Ext if self.digits > 0 && self.size == 0 => {
                ChunkedEnd::MissingFinalCrlf
            }
            _ => ChunkedEnd::Truncated,
        }
    }

    /// The error, once one was returned.
    pub fn error(&self) -> Option<&ChunkedError> {
        match &self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Bytes consumed so far (after an error: up to the offending byte).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// After an error, the bytes of the offending line consumed before the
    /// offending byte (at most 64): with the unconsumed input they are the
    /// raw rest of the body. Also meaningful mid-line without an error.
    pub fn pending(&self) -> &[u8] {
        &self.line[..self.line_len]
    }

    /// Chunks seen, the last (empty) one included.
    pub fn chunks(&self) -> u64 {
        self.chunks
    }

    /// Data bytes produced.
    pub fn decoded_len(&self) -> u64 {
        self.decoded
    }

    /// Empty lines where a chunk size was expected, and CR or LF bytes after
    /// the terminator: tolerated, counted for reports.
    pub fn stray_line_ends(&self) -> u64 {
        self.stray
    }

    /// True when a line ended in LF without CR.
    pub fn saw_bare_lf(&self) -> bool {
        self.bare_lf
    }
}

/// Whether `prefix`, the start of a body announced as chunked, is chunked:
/// `Some(true)` when its first size line is complete and valid,
/// `Some(false)` when it cannot be chunked data, `None` when the prefix
/// is too short to tell. Looks at no more than `prefix`; allocates nothing.
pub fn sniff_chunked(prefix: &[u8]) -> Option<bool> {
    let mut d = ChunkedDecoder::new();
    match d.feed(prefix, |_| {}) {
        Err(_) => Some(false),
        Ok(_) if d.chunks() > 0 => Some(true),
        Ok(_) => None,
    }
}

#[derive(Debug)]
enum Mode {
    Chunked,
    /// Passing the body through raw after a failure: first `pending[at..]`.
    Raw {
        pending: [u8; MAX_SIZE_LINE],
        len: usize,
        at: usize,
    },
    Done,
}

/// A [`Read`] that removes the chunked transfer coding from a [`BufRead`].
///
/// [`new`](ChunkedReader::new) fails reads on malformed chunking
/// (`InvalidData`) and on truncation (`UnexpectedEof`).
/// [`lenient`](ChunkedReader::lenient) does what warcio does: from the
/// point where the data stops being chunked it passes the bytes through
/// raw (so a body that was never chunked comes out whole), and a truncated
/// body just ends; [`decoder`](ChunkedReader::decoder) and
/// [`fell_back`](ChunkedReader::fell_back) tell what happened.
///
/// Bytes after the terminator are left unread in the inner reader.
#[derive(Debug)]
pub struct ChunkedReader<R> {
    inner: R,
    dec: ChunkedDecoder,
    lenient: bool,
    mode: Mode,
}

impl<R: BufRead> ChunkedReader<R> {
    /// A strict reader.
    pub fn new(inner: R) -> Self {
        ChunkedReader {
            inner,
            dec: ChunkedDecoder::new(),
            lenient: false,
            mode: Mode::Chunked,
        }
    }

    /// A lenient reader (see the type's documentation).
    pub fn lenient(inner: R) -> Self {
        ChunkedReader {
            lenient: true,
            ..ChunkedReader::new(inner)
        }
    }

    /// The decoder, for its counters and [`ChunkedDecoder::end`].
    pub fn decoder(&self) -> &ChunkedDecoder {
        &self.dec
    }

    /// When a lenient reader gave up on chunking, why.
    pub fn fell_back(&self) -> Option<&ChunkedError> {
        match self.mode {
            Mode::Raw { .. } => self.dec.error(),
            _ => None,
        }
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader; reading from it desynchronises the decoder.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader, positioned after what was consumed.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: BufRead> Read for ChunkedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match &mut self.mode {
                Mode::Done => return Ok(0),
                Mode::Raw { pending, len, at } => {
                    if *at < *len {
                        let n = (*len - *at).min(buf.len());
                        buf[..n].copy_from_slice(&pending[*at..*at + n]);
                        *at += n;
                        return Ok(n);
                    }
                    return self.inner.read(buf);
                }
                Mode::Chunked => {}
            }
            let avail = self.inner.fill_buf()?;
            if avail.is_empty() {
                self.mode = Mode::Done;
                if !self.lenient && self.dec.end() == ChunkedEnd::Truncated {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "chunked body ends before its last chunk",
                    ));
                }
                return Ok(0);
            }
            // Data out is never more than input in, so this bounds the copy.
            let take = avail.len().min(buf.len());
            let before = self.dec.position();
            let mut written = 0;
            let r = self.dec.feed(&avail[..take], |d| {
                buf[written..written + d.len()].copy_from_slice(d);
                written += d.len();
            });
            match r {
                Ok(consumed) => {
                    self.inner.consume(consumed);
                    if self.dec.is_done() && consumed < take {
                        self.mode = Mode::Done;
                    }
                }
                Err(e) => {
                    let consumed = usize::try_from(e.offset - before).unwrap_or(take).min(take);
                    self.inner.consume(consumed);
                    if self.lenient {
                        let mut pending = [0; MAX_SIZE_LINE];
                        let p = self.dec.pending();
                        pending[..p.len()].copy_from_slice(p);
                        self.mode = Mode::Raw {
                            pending,
                            len: p.len(),
                            at: 0,
                        };
                    } else if written == 0 {
                        return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                    }
                    // Otherwise the data decoded first is returned now and
                    // the error (which repeats) on the next call.
                }
            }
            if written > 0 {
                return Ok(written);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_whole(input: &[u8]) -> (Result<Vec<u8>, ChunkedError>, ChunkedDecoder, usize) {
        let mut d = ChunkedDecoder::new();
        let mut out = Vec::new();
        let r = d.feed(input, |b| {
            assert!(!b.is_empty());
            out.extend_from_slice(b)
        });
        let n = *r.as_ref().unwrap_or(&0);
        (r.map(|_| out), d, n)
    }

    fn decode_bytewise(input: &[u8]) -> (Result<Vec<u8>, ChunkedError>, ChunkedDecoder) {
        let mut d = ChunkedDecoder::new();
        let mut out = Vec::new();
        for b in input {
            match d.feed(std::slice::from_ref(b), |b| out.extend_from_slice(b)) {
                Ok(_) => {}
                Err(e) => return (Err(e), d),
            }
        }
        (Ok(out), d)
    }

    fn decode_reader(input: &[u8], cap: usize, buf: usize, lenient: bool) -> io::Result<Vec<u8>> {
        let inner = io::BufReader::with_capacity(cap, input);
        let mut r = if lenient {
            ChunkedReader::lenient(inner)
        } else {
            ChunkedReader::new(inner)
        };
        let mut out = Vec::new();
        let mut b = vec![0; buf];
        loop {
            let n = r.read(&mut b)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&b[..n]);
        }
    }

    #[test]
    fn good_inputs_all_ways() {
        let cases: &[(&[u8], &[u8], ChunkedEnd)] = &[
            (
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                b"hello world",
                ChunkedEnd::Complete,
            ),
            (
                b"A\r\n0123456789\r\n0\r\n\r\n",
                b"0123456789",
                ChunkedEnd::Complete,
            ),
            (
                b"a\r\n0123456789\r\n0\r\n\r\n",
                b"0123456789",
                ChunkedEnd::Complete,
            ),
            (
                b"0000000a\r\n0123456789\r\n00000000\r\n\r\n",
                b"0123456789",
                ChunkedEnd::Complete,
            ),
            (
                b"5;name=val;x\r\nhello\r\n0;end\r\n\r\n",
                b"hello",
                ChunkedEnd::Complete,
            ),
            (
                b"5 \r\nhello\r\n 0\t\r\n\r\n",
                b"hello",
                ChunkedEnd::Complete,
            ),
            (b"5\nhello\n0\n\n", b"hello", ChunkedEnd::Complete),
            (
                b"5\r\nhello\r\n0\r\n",
                b"hello",
                ChunkedEnd::MissingFinalCrlf,
            ),
            (b"5\r\nhello\r\n0", b"hello", ChunkedEnd::MissingFinalCrlf),
            (
                b"5\r\nhello\r\n0\r\n\r\n\r\n",
                b"hello",
                ChunkedEnd::Complete,
            ),
            (
                b"5\r\nhello\r\n\r\n0\r\n\r\n",
                b"hello",
                ChunkedEnd::Complete,
            ),
            (
                b"5\r\r\nhello\r\r\n0\r\r\n\r\r\n",
                b"hello",
                ChunkedEnd::Complete,
            ),
            (
                b"5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n",
                b"hello",
                ChunkedEnd::Complete,
            ),
            (
                b"5\r\nhello\r\n0\r\nX-Trailer: 1\r\n",
                b"hello",
                ChunkedEnd::MissingFinalCrlf,
            ),
            (b"5\r\nhel", b"hel", ChunkedEnd::Truncated),
            (b"5\r\nhello\r\n", b"hello", ChunkedEnd::Truncated),
            (b"", b"", ChunkedEnd::Truncated),
            // warcat bad_http_chunked_content.warc: "aa\r" is 3 bytes, then LF.
            (b"3\r\naa\r\n0\r\n\r\n", b"aa\r", ChunkedEnd::Complete),
        ];
        for &(input, want, end) in cases {
            let name = String::from_utf8_lossy(input);
            let (r, d, n) = decode_whole(input);
            assert_eq!(r.as_deref(), Ok(want), "{name}");
            assert_eq!(n, input.len(), "{name}");
            assert_eq!(d.end(), end, "{name}");
            assert_eq!(d.decoded_len(), want.len() as u64);
            let (r, d) = decode_bytewise(input);
            assert_eq!(r.as_deref(), Ok(want), "bytewise {name}");
            assert_eq!(d.end(), end, "bytewise {name}");
            for (cap, buf) in [(1, 1), (1, 100), (3, 2), (7, 5), (8192, 8192)] {
                let strict = decode_reader(input, cap, buf, false);
                if end == ChunkedEnd::Truncated {
                    assert_eq!(
                        strict.unwrap_err().kind(),
                        io::ErrorKind::UnexpectedEof,
                        "{name}"
                    );
                } else {
                    assert_eq!(strict.unwrap(), want, "reader {cap}/{buf} {name}");
                }
                assert_eq!(
                    decode_reader(input, cap, buf, true).unwrap(),
                    want,
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn counters() {
        let (r, d, _) = decode_whole(b"5\nhello\r\n\r\n3\r\nabc\r\n0\r\n\r\n\r\n\n");
        assert_eq!(r.unwrap(), b"helloabc");
        assert_eq!(d.chunks(), 3);
        assert_eq!(d.stray_line_ends(), 1 + 3);
        assert!(d.saw_bare_lf());
        assert!(d.is_done());
        let (_, d, _) = decode_whole(b"0\r\n\r\n");
        assert!(!d.saw_bare_lf());
        assert_eq!(d.stray_line_ends(), 0);
    }

    #[test]
    fn stops_after_terminator() {
        let input = b"3\r\nabc\r\n0\r\n\r\n\r\nNEXT";
        let (r, d, n) = {
            let mut d = ChunkedDecoder::new();
            let mut out = Vec::new();
            let n = d.feed(input, |b| out.extend_from_slice(b)).unwrap();
            (out, d, n)
        };
        assert_eq!(r, b"abc");
        assert_eq!(&input[n..], b"NEXT");
        assert_eq!(d.end(), ChunkedEnd::Complete);
        // Feeding more after the end consumes nothing.
        let mut d = d;
        assert_eq!(d.feed(b"more", |_| panic!("no data after the end")), Ok(0));
        // The reader leaves them in the inner reader.
        let mut r = ChunkedReader::new(&input[..]);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abc");
        assert_eq!(r.into_inner(), b"NEXT");
    }

    #[test]
    fn errors() {
        let cases: &[(&[u8], ChunkedErrorKind, u64, &[u8])] = &[
            (b"<html>", ChunkedErrorKind::BadSize(b'<'), 0, b""),
            (b"\r\n<html>", ChunkedErrorKind::BadSize(b'<'), 2, b""),
            (b"12 34\r\n", ChunkedErrorKind::BadSize(b'3'), 3, b"12 "),
            (b"5\rX", ChunkedErrorKind::BadSize(b'X'), 2, b"5\r"),
            (b";ext\r\n", ChunkedErrorKind::BadSize(b';'), 0, b""),
            (
                b"3\r\nabcd\r\n0\r\n\r\n",
                ChunkedErrorKind::MissingChunkEnd(b'd'),
                6,
                b"",
            ),
            (
                b"3\r\nabc\rd",
                ChunkedErrorKind::MissingChunkEnd(b'd'),
                7,
                b"\r",
            ),
            (
                b"10000000000000000\r\n",
                ChunkedErrorKind::SizeTooLarge,
                16,
                b"1000000000000000",
            ),
        ];
        for &(input, kind, offset, pending) in cases {
            let name = String::from_utf8_lossy(input);
            let (r, d, _) = decode_whole(input);
            let e = r.unwrap_err();
            assert_eq!((e.kind, e.offset), (kind, offset), "{name}");
            assert_eq!(d.position(), offset, "{name}");
            assert_eq!(d.pending(), pending, "{name}");
            assert_eq!(d.error(), Some(&e));
            let (r, d) = decode_bytewise(input);
            assert_eq!(r.unwrap_err(), e, "bytewise {name}");
            assert_eq!(d.pending(), pending, "bytewise {name}");
            // The error repeats.
            let mut d = d;
            assert_eq!(d.feed(b"0\r\n\r\n", |_| {}), Err(e));
            assert!(!e.to_string().is_empty());
            assert_eq!(
                decode_reader(input, 3, 4, false).unwrap_err().kind(),
                io::ErrorKind::InvalidData,
                "{name}"
            );
        }
        let long = [b' '; 100];
        let (r, _, _) = decode_whole(&long);
        assert_eq!(r.unwrap_err().kind, ChunkedErrorKind::SizeLineTooLong);
    }

    #[test]
    fn huge_size_allocates_nothing() {
        // 2^63 announced, a few bytes present: decoding streams them.
        let input = b"8000000000000000\r\nabc";
        let (r, d, _) = decode_whole(input);
        assert_eq!(r.unwrap(), b"abc");
        assert_eq!(d.end(), ChunkedEnd::Truncated);
        assert_eq!(decode_reader(input, 4, 2, true).unwrap(), b"abc");
        let (r, _, _) = decode_whole(b"ffffffffffffffff\r\nxy");
        assert_eq!(r.unwrap(), b"xy");
        let (r, _, _) = decode_whole(b"000000000000000000000000ffffffffffffffff\r\nxy");
        assert_eq!(r.unwrap(), b"xy");
    }

    #[test]
    fn lenient_reader_falls_back_to_raw() {
        // Never chunked: the whole body comes through.
        let body = b"<!doctype html>\n<p>hi</p>\n";
        for (cap, buf) in [(1, 1), (4, 3), (100, 100)] {
            assert_eq!(decode_reader(body, cap, buf, true).unwrap(), body);
        }
        // A size line that goes wrong part way: its bytes are not lost.
        let body = b"12 34 is not a size\r\n";
        assert_eq!(decode_reader(body, 2, 5, true).unwrap(), body);
        // A wrong chunk size: the data decoded so far, then the rest raw.
        let body = b"3\r\nabcdef\r\n0\r\n\r\n";
        assert_eq!(
            decode_reader(body, 8192, 8192, true).unwrap(),
            b"abcdef\r\n0\r\n\r\n"
        );
        assert_eq!(
            decode_reader(body, 1, 1, true).unwrap(),
            b"abcdef\r\n0\r\n\r\n"
        );
        let mut r = ChunkedReader::lenient(&b"xyz"[..]);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"xyz");
        assert_eq!(r.fell_back().map(|e| e.offset), Some(0));
        // Strict: data before the error is returned, then the error.
        let mut r = ChunkedReader::new(&body[..]);
        let mut buf = [0u8; 64];
        assert_eq!(r.read(&mut buf).unwrap(), 3);
        assert_eq!(
            r.read(&mut buf).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    #[test]
    fn sniff() {
        assert_eq!(sniff_chunked(b"1c37\r\n<!doctype"), Some(true));
        assert_eq!(sniff_chunked(b"0\r\n\r\n"), Some(true));
        assert_eq!(sniff_chunked(b"<!doctype html>"), Some(false));
        assert_eq!(sniff_chunked(b"{\"a\": 1}"), Some(false));
        assert_eq!(sniff_chunked(b"1c3"), None);
        assert_eq!(sniff_chunked(b""), None);
        // Hex-looking text fails on its first non-hex byte.
        assert_eq!(sniff_chunked(b"deadbeef cafe\r\n"), Some(false));
    }
}
