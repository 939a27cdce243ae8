//! gzip members (RFC 1952): the header parser and the trailer.
//!
//! The header is parsed incrementally ([`HeaderParser`]) so it may straddle
//! the decoder's input buffer, and even be longer than it (FNAME and FCOMMENT
//! are unbounded). The deflate data itself is inflated by the decoder.

/// FTEXT: the data is probably text.
pub(crate) const FTEXT: u8 = 0x01;
/// FHCRC: a CRC16 of the header follows the header.
pub(crate) const FHCRC: u8 = 0x02;
/// FEXTRA: an extra field (XLEN, then XLEN bytes) follows the fixed part.
pub(crate) const FEXTRA: u8 = 0x04;
/// FNAME: a zero-terminated file name follows.
pub(crate) const FNAME: u8 = 0x08;
/// FCOMMENT: a zero-terminated comment follows.
pub(crate) const FCOMMENT: u8 = 0x10;
/// Flag bits RFC 1952 reserves; a reader must reject a header that sets them.
const FRESERVED: u8 = 0xe0;

/// How many bytes of FNAME or FCOMMENT are kept. The rest is parsed and
/// counted but dropped, so a hostile name cannot make us allocate without
/// bound.
pub const MAX_KEPT_FIELD: usize = 64 * 1024;

/// A parsed gzip member header (RFC 1952 section 2.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GzipHeader {
    /// Header length in bytes as stored, from the magic number to the first
    /// byte of deflate data (FEXTRA, FNAME, FCOMMENT and FHCRC included).
    pub len: u64,
    /// The FLG byte.
    pub flags: u8,
    /// MTIME: modification time in seconds since the epoch, 0 if unknown.
    pub mtime: u32,
    /// XFL: extra flags (2 = best compression, 4 = fastest).
    pub xfl: u8,
    /// OS: the file system the member was written on (255 = unknown).
    pub os: u8,
    /// The FEXTRA field (without XLEN), when FEXTRA is set. Never longer
    /// than 65535 bytes.
    pub extra: Option<Vec<u8>>,
    /// The FNAME field without its terminating zero, when FNAME is set; at
    /// most [`MAX_KEPT_FIELD`] bytes are kept.
    pub name: Option<Vec<u8>>,
    /// The FCOMMENT field without its terminating zero, when FCOMMENT is set;
    /// at most [`MAX_KEPT_FIELD`] bytes are kept.
    pub comment: Option<Vec<u8>>,
    /// True when FNAME or FCOMMENT was longer than [`MAX_KEPT_FIELD`] and
    /// was cut.
    pub fields_truncated: bool,
    /// The stored CRC16 of the header, when FHCRC is set.
    pub header_crc: Option<u16>,
    /// The CRC16 computed over the header bytes before the FHCRC field (the
    /// low 16 bits of their CRC32, as RFC 1952 defines it).
    pub computed_header_crc: u16,
}

impl GzipHeader {
    /// FTEXT is set.
    pub fn is_text(&self) -> bool {
        self.flags & FTEXT != 0
    }

    /// `Some(true)` when FHCRC is present and matches, `Some(false)` when it
    /// does not, `None` without FHCRC.
    pub fn header_crc_ok(&self) -> Option<bool> {
        self.header_crc.map(|c| c == self.computed_header_crc)
    }

    /// The sizes an `sl` subfield of the extra field declares (wget's WARC
    /// writer puts one in every member: 8 bytes, the member's stored length
    /// and its decoded length, little-endian): `(stored, decoded)`. Only a hint,
    /// used to size the whole-member inflate; nothing is checked against it.
    pub(crate) fn sl_sizes(&self) -> Option<(u32, u32)> {
        let mut x = self.extra.as_deref()?;
        // Subfields: SI1 SI2, LEN (2 bytes, little-endian), LEN bytes.
        while let [a, b, l0, l1, rest @ ..] = x {
            let n = usize::from(u16::from_le_bytes([*l0, *l1]));
            let data = rest.get(..n)?;
            if [*a, *b] == *b"sl" {
                let &[s0, s1, s2, s3, d0, d1, d2, d3] = data else {
                    return None;
                };
                return Some((
                    u32::from_le_bytes([s0, s1, s2, s3]),
                    u32::from_le_bytes([d0, d1, d2, d3]),
                ));
            }
            x = rest.get(n..)?;
        }
        None
    }

    /// From [`GzipHeader::sl_sizes`], once the header is parsed: the
    /// length of the member's deflate data and its decoded length.
    pub(crate) fn size_hint(&self) -> Option<(usize, usize)> {
        let (stored, decoded) = self.sl_sizes()?;
        let body = u64::from(stored).checked_sub(self.len.checked_add(8)?)?;
        Some((usize::try_from(body).ok()?, usize::try_from(decoded).ok()?))
    }

    /// Forgets the previous member's fields, keeping their allocations.
    fn clear(&mut self) {
        self.len = 0;
        self.flags = 0;
        self.mtime = 0;
        self.xfl = 0;
        self.os = 0;
        for v in [&mut self.extra, &mut self.name, &mut self.comment]
            .into_iter()
            .flatten()
        {
            v.clear();
        }
        self.fields_truncated = false;
        self.header_crc = None;
        self.computed_header_crc = 0;
    }
}

/// The 8-byte trailer of a gzip member, with the values computed while
/// inflating it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GzipTrailer {
    /// CRC32 as stored.
    pub crc32: u32,
    /// ISIZE as stored: the uncompressed length modulo 2^32.
    pub isize: u32,
    /// CRC32 of the inflated data; `None` when checksums were not verified
    /// ([`super::DecoderOptions::verify_checksums`]).
    pub computed_crc32: Option<u32>,
    /// The uncompressed length modulo 2^32.
    pub computed_isize: u32,
}

impl GzipTrailer {
    /// The trailer from its 8 stored bytes and the computed values.
    pub(crate) fn new(bytes: [u8; 8], computed_crc32: Option<u32>, computed_isize: u32) -> Self {
        let [c0, c1, c2, c3, i0, i1, i2, i3] = bytes;
        GzipTrailer {
            crc32: u32::from_le_bytes([c0, c1, c2, c3]),
            isize: u32::from_le_bytes([i0, i1, i2, i3]),
            computed_crc32,
            computed_isize,
        }
    }

    /// True when ISIZE matches and CRC32 matches (or was not computed).
    pub fn is_ok(&self) -> bool {
        self.isize == self.computed_isize && self.computed_crc32.is_none_or(|c| c == self.crc32)
    }
}

/// Where the incremental parser is in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// ID1 ID2 CM FLG MTIME(4) XFL OS: 10 bytes, `n` of them seen.
    Fixed,
    /// XLEN, 2 bytes.
    ExtraLen,
    /// `left` bytes of the extra field.
    Extra,
    /// FNAME up to its zero.
    Name,
    /// FCOMMENT up to its zero.
    Comment,
    /// The 2-byte CRC16.
    Hcrc,
    /// Complete.
    Done,
}

/// Incremental gzip header parser: fed the stored bytes in pieces of any
/// size, it consumes exactly the header.
#[derive(Debug, Clone)]
pub(crate) struct HeaderParser {
    step: Step,
    /// Bytes of the current fixed-size part seen (`Fixed`, `ExtraLen`, `Hcrc`).
    n: usize,
    fixed: [u8; 10],
    /// Bytes of the extra field still to come.
    left: usize,
    /// FLG, kept apart because XLEN and FHCRC reuse `fixed`.
    flags: u8,
    crc: crc32fast::Hasher,
    len: u64,
}

/// What [`HeaderParser::feed`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fed {
    /// The header needs more bytes than were given (all were consumed).
    More,
    /// The header ended after this many of the given bytes.
    Done(usize),
}

impl HeaderParser {
    pub(crate) fn new() -> Self {
        HeaderParser {
            step: Step::Fixed,
            n: 0,
            fixed: [0; 10],
            left: 0,
            flags: 0,
            crc: crc32fast::Hasher::new(),
            len: 0,
        }
    }

    /// Starts over for a new member.
    pub(crate) fn reset(&mut self) {
        self.step = Step::Fixed;
        self.n = 0;
        self.left = 0;
        self.flags = 0;
        self.crc.reset();
        self.len = 0;
    }

    /// Parses the header from `input`, which continues the bytes fed so far.
    /// Fields go into `out` when given (cleared on the first byte), which
    /// lets a probe check a header without keeping anything.
    ///
    /// # Errors
    /// A header that is not gzip or that RFC 1952 says to reject.
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        mut out: Option<&mut GzipHeader>,
    ) -> Result<Fed, &'static str> {
        // Nearly every member of a WARC file has a 10-byte header, with at
        // most an extra field (FEXTRA: wget's and warcio's `sl` subfield):
        // parsed at once when it is all in `input`, without the steps.
        if self.step == Step::Fixed
            && self.n == 0
            && let Some(f) = input.first_chunk::<10>()
            && f[..3] == [0x1f, 0x8b, 8]
            && f[3] & !(FTEXT | FEXTRA) == 0
        {
            let len = if f[3] & FEXTRA == 0 {
                Some(10)
            } else {
                input
                    .get(10..12)
                    .map(|x| 12 + usize::from(u16::from_le_bytes([x[0], x[1]])))
            };
            if let Some(len) = len
                && let Some(head) = input.get(..len)
            {
                if let Some(h) = out {
                    h.clear();
                    h.flags = f[3];
                    h.mtime = u32::from_le_bytes([f[4], f[5], f[6], f[7]]);
                    h.xfl = f[8];
                    h.os = f[9];
                    h.extra = (f[3] & FEXTRA != 0).then(|| {
                        let mut v = h.extra.take().unwrap_or_default();
                        v.extend_from_slice(head.get(12..).unwrap_or_default());
                        v
                    });
                    h.name = None;
                    h.comment = None;
                    h.computed_header_crc = (super::inflate::crc32(0, head) & 0xffff) as u16;
                    h.len = len as u64;
                }
                self.flags = f[3];
                self.len = len as u64;
                self.step = Step::Done;
                return Ok(Fed::Done(len));
            }
        }
        let mut i = 0;
        while self.step != Step::Done {
            let rest = input.get(i..).unwrap_or_default();
            if rest.is_empty() {
                return Ok(Fed::More);
            }
            let used = match self.step {
                Step::Fixed => {
                    if self.n == 0
                        && let Some(h) = out.as_deref_mut()
                    {
                        h.clear();
                    }
                    let k = (self.fixed.len() - self.n).min(rest.len());
                    self.fixed[self.n..self.n + k].copy_from_slice(&rest[..k]);
                    self.n += k;
                    // Reject as early as possible: a probe scanning garbage
                    // should not need ten bytes to say no.
                    let seen = &self.fixed[..self.n];
                    if seen.first().is_some_and(|&b| b != 0x1f)
                        || seen.get(1).is_some_and(|&b| b != 0x8b)
                    {
                        return Err("not a gzip member (bad magic number)");
                    }
                    if seen.get(2).is_some_and(|&b| b != 8) {
                        return Err("compression method is not deflate");
                    }
                    if seen.get(3).is_some_and(|&b| b & FRESERVED != 0) {
                        return Err("reserved header flags are set");
                    }
                    if self.n == self.fixed.len() {
                        let f = self.fixed;
                        self.flags = f[3];
                        if let Some(h) = out.as_deref_mut() {
                            h.flags = f[3];
                            h.mtime = u32::from_le_bytes([f[4], f[5], f[6], f[7]]);
                            h.xfl = f[8];
                            h.os = f[9];
                            h.extra =
                                (f[3] & FEXTRA != 0).then(|| h.extra.take().unwrap_or_default());
                            h.name = (f[3] & FNAME != 0).then(|| h.name.take().unwrap_or_default());
                            h.comment = (f[3] & FCOMMENT != 0)
                                .then(|| h.comment.take().unwrap_or_default());
                        }
                        self.n = 0;
                        self.step = self.after(Step::Fixed);
                    }
                    k
                }
                Step::ExtraLen => {
                    let k = (2 - self.n).min(rest.len());
                    self.fixed[self.n..self.n + k].copy_from_slice(&rest[..k]);
                    self.n += k;
                    if self.n == 2 {
                        self.left = usize::from(u16::from_le_bytes([self.fixed[0], self.fixed[1]]));
                        self.n = 0;
                        self.step = if self.left == 0 {
                            self.after(Step::Extra)
                        } else {
                            Step::Extra
                        };
                    }
                    k
                }
                Step::Extra => {
                    let k = self.left.min(rest.len());
                    if let Some(v) = out.as_deref_mut().and_then(|h| h.extra.as_mut()) {
                        v.extend_from_slice(&rest[..k]);
                    }
                    self.left -= k;
                    if self.left == 0 {
                        self.step = self.after(Step::Extra);
                    }
                    k
                }
                Step::Name | Step::Comment => {
                    let end = memchr::memchr(0, rest);
                    let k = end.map_or(rest.len(), |e| e + 1);
                    let text = &rest[..end.unwrap_or(rest.len())];
                    if let Some(h) = out.as_deref_mut() {
                        let field = if self.step == Step::Name {
                            h.name.as_mut()
                        } else {
                            h.comment.as_mut()
                        };
                        if let Some(v) = field {
                            let room = MAX_KEPT_FIELD.saturating_sub(v.len());
                            if text.len() > room {
                                h.fields_truncated = true;
                            }
                            v.extend_from_slice(&text[..text.len().min(room)]);
                        }
                    }
                    if end.is_some() {
                        self.step = self.after(self.step);
                    }
                    k
                }
                Step::Hcrc => {
                    let k = (2 - self.n).min(rest.len());
                    self.fixed[self.n..self.n + k].copy_from_slice(&rest[..k]);
                    self.n += k;
                    if self.n == 2 {
                        if let Some(h) = out.as_deref_mut() {
                            h.header_crc = Some(u16::from_le_bytes([self.fixed[0], self.fixed[1]]));
                        }
                        self.step = Step::Done;
                    }
                    // The CRC16 covers the bytes before itself only.
                    i += k;
                    self.len += k as u64;
                    continue;
                }
                Step::Done => 0,
            };
            self.crc.update(&rest[..used]);
            i += used;
            self.len += used as u64;
            if matches!(self.step, Step::Hcrc | Step::Done)
                && let Some(h) = out.as_deref_mut()
            {
                // Low 16 bits of the CRC32 so far (RFC 1952 2.3.1, FHCRC).
                h.computed_header_crc = (self.crc.clone().finalize() & 0xffff) as u16;
            }
        }
        if let Some(h) = out {
            h.len = self.len;
        }
        Ok(Fed::Done(i))
    }

    /// The step that follows `step`, given the flags.
    fn after(&self, step: Step) -> Step {
        let flags = self.flags;
        let order = [
            (Step::ExtraLen, FEXTRA),
            (Step::Name, FNAME),
            (Step::Comment, FCOMMENT),
            (Step::Hcrc, FHCRC),
        ];
        let from = match step {
            Step::Fixed => 0,
            Step::ExtraLen | Step::Extra => 1,
            Step::Name => 2,
            Step::Comment => 3,
            Step::Hcrc | Step::Done => 4,
        };
        order
            .iter()
            .skip(from)
            .find(|(_, bit)| flags & bit != 0)
            .map_or(Step::Done, |(s, _)| *s)
    }
}

/// Parses a complete gzip header at the start of `bytes`.
///
/// Returns `Ok(None)` when `bytes` ends before the header does, and the
/// header (whose [`GzipHeader::len`] says where the deflate data starts)
/// otherwise. A FHCRC mismatch is not an error here: see
/// [`GzipHeader::header_crc_ok`].
///
/// # Errors
/// Not a gzip header (magic number, compression method), or reserved flags
/// set.
pub fn parse_gzip_header(bytes: &[u8]) -> Result<Option<GzipHeader>, String> {
    let mut parser = HeaderParser::new();
    let mut header = GzipHeader::default();
    match parser.feed(bytes, Some(&mut header)) {
        Ok(Fed::Done(_)) => Ok(Some(header)),
        Ok(Fed::More) => Ok(None),
        Err(e) => Err(e.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-go parse of a bare or FEXTRA-only header gives what the
    /// steps give when the bytes come one at a time.
    #[test]
    fn quick_headers_parse_as_the_steps_do() {
        let bare = vec![0x1f, 0x8b, 8, FTEXT, 1, 2, 3, 4, 0, 3];
        let mut extra = vec![0x1f, 0x8b, 8, FEXTRA, 9, 8, 7, 6, 2, 255];
        extra.extend(8u16.to_le_bytes());
        extra.extend(b"sl\x04\x00abcd");
        for head in [bare, extra] {
            let mut whole = head.clone();
            whole.extend(b"deflate data");
            let mut p = HeaderParser::new();
            let mut quick = GzipHeader::default();
            assert_eq!(p.feed(&whole, Some(&mut quick)), Ok(Fed::Done(head.len())));
            let mut p = HeaderParser::new();
            let mut steps = GzipHeader::default();
            for (i, b) in head.iter().enumerate() {
                let want = if i + 1 == head.len() {
                    Fed::Done(1)
                } else {
                    Fed::More
                };
                assert_eq!(p.feed(&[*b], Some(&mut steps)), Ok(want), "byte {i}");
            }
            assert_eq!(quick, steps);
            assert_eq!(quick.len, head.len() as u64);
            assert_eq!(
                quick.computed_header_crc,
                (crc32fast::hash(&head) & 0xffff) as u16
            );
            // Cut inside the extra field: the steps take over.
            if head.len() > 10 {
                let mut p = HeaderParser::new();
                assert_eq!(p.feed(&head[..14], None), Ok(Fed::More));
                assert_eq!(p.feed(&whole[14..], None), Ok(Fed::Done(head.len() - 14)));
            }
        }
    }

    /// The `sl` subfield is found among others; anything malformed gives
    /// no hint.
    #[test]
    fn sl_subfield_sizes() {
        let header = |extra: &[u8], len: u64| GzipHeader {
            len,
            extra: Some(extra.to_vec()),
            ..GzipHeader::default()
        };
        let mut sl = b"sl\x08\x00".to_vec();
        sl.extend(438u32.to_le_bytes());
        sl.extend(566u32.to_le_bytes());
        let h = header(&sl, 22);
        assert_eq!(h.sl_sizes(), Some((438, 566)));
        assert_eq!(h.size_hint(), Some((438 - 22 - 8, 566)));
        let mut two = b"ab\x02\x00xy".to_vec();
        two.extend(&sl);
        assert_eq!(header(&two, 28).sl_sizes(), Some((438, 566)));
        // Stored length shorter than the header and trailer.
        assert_eq!(header(&sl, 431).size_hint(), None);
        for bad in [
            &b"sl\x04\x00abcd"[..],
            &sl[..sl.len() - 1],
            &b"ab\x09\x00xy"[..],
            &b"s"[..],
            &[][..],
        ] {
            assert_eq!(header(bad, 20).sl_sizes(), None, "{bad:?}");
        }
        assert_eq!(GzipHeader::default().sl_sizes(), None);
    }
}
