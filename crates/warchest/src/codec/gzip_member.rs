//! gzip members: the header parsed here, the deflate data inflated whole
//! with libdeflate when it fits or streamed through one reused flate2
//! inflater, the trailer checked.

use super::gzip::{Fed, GzipHeader, GzipTrailer, HeaderParser};
use super::inflate::{FastInflater, Inflated, crc32};
use super::member::{Cx, MemberDecoder, Step};
use crate::WarningKind;
use flate2::{Decompress, FlushDecompress, Status};
use std::io::Read;

/// Output buffer of a streaming step: the most decompressed bytes one
/// `fill_buf` returns.
pub(super) const OUT_SIZE: usize = 256 * 1024;
/// Input buffered for a whole-member libdeflate attempt (at most half the
/// input buffer).
const FAST_INPUT: usize = 256 * 1024;
/// Largest output of a whole-member attempt; bigger members stream. A
/// member that misses the attempt is inflated twice (the attempt is lost),
/// and large records (the corpus's search indexes, 1-15 MiB) are worth
/// inflating whole, as streaming costs more: 16 MiB takes the corpus's
/// largest record whole (docs/performance-history.md, "gzip, round three"). With
/// threads the reading thread inflates such a member while the jobs decode
/// ahead; its buffer is given back as soon as the jobs serve the next
/// member, and the peak of both stayed under the 64 MiB bound
/// (docs/performance-history.md, "gzip, round four").
pub(super) const FAST_OUTPUT: usize = 16 * 1024 * 1024;
/// An output buffer grown past this by a large member is given back when
/// the next gzip member starts (LZ4's largest blocks and their history fit,
/// and so does a job buffer the parallel engine lends the reading thread:
/// its members would otherwise free it and fault a new one in).
pub(super) const KEEP_OUTPUT: usize = 6 * 1024 * 1024;

/// Where in a gzip member the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Header,
    Body,
    Trailer,
}

/// The decoder of gzip members.
pub(super) struct GzipMember {
    phase: Phase,
    /// libdeflate, when whole-member inflation is on.
    fast: Option<FastInflater>,
    /// The whole-member attempt was made for the current member.
    fast_tried: bool,
    /// Largest output of the whole-member attempt.
    fast_max: usize,
    /// The decoded size the current member's `sl` subfield declared, when
    /// it was used.
    hinted: Option<usize>,
    /// A member's `sl` size was false: the writer's hints are not used
    /// from then on (each false one would send its member the slow way).
    distrust_sl: bool,
    inflate: Option<Decompress>,
    /// CRC32 of the member's data so far.
    crc: u32,
    size: u64,
    parser: HeaderParser,
    header: GzipHeader,
    trailer: Option<GzipTrailer>,
    trailer_bytes: [u8; 8],
    trailer_len: usize,
}

impl std::fmt::Debug for GzipMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GzipMember")
            .field("phase", &self.phase)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl GzipMember {
    /// `fast_inflate`: try libdeflate on members that fit in the input
    /// buffer ([`super::DecoderOptions::fast_inflate`]).
    pub(super) fn new(fast_inflate: bool) -> Self {
        GzipMember {
            phase: Phase::Header,
            fast: if fast_inflate {
                FastInflater::new()
            } else {
                None
            },
            fast_tried: false,
            fast_max: FAST_OUTPUT,
            hinted: None,
            distrust_sl: false,
            inflate: None,
            crc: 0,
            size: 0,
            parser: HeaderParser::new(),
            header: GzipHeader::default(),
            trailer: None,
            trailer_bytes: [0; 8],
            trailer_len: 0,
        }
    }

    /// Whole-member inflation with libdeflate is on.
    pub(super) fn fast_inflate(&self) -> bool {
        self.fast.is_some()
    }

    /// Sets the largest output of a whole-member attempt (at least
    /// [`OUT_SIZE`]): smaller where other buffers share the memory bound.
    #[cfg(any(feature = "parallel", test))]
    pub(super) fn set_fast_max(&mut self, n: usize) {
        self.fast_max = n.max(OUT_SIZE);
    }

    /// Forgets the last member's header and trailer (at every member
    /// boundary, whatever the next member's codec).
    pub(super) fn forget(&mut self) {
        self.trailer = None;
        self.header.len = 0;
    }

    /// The current member's header, once parsed (its length is set when
    /// the parser is done, and cleared by [`GzipMember::forget`]).
    pub(super) fn header(&self) -> Option<&GzipHeader> {
        (self.header.len > 0).then_some(&self.header)
    }

    /// The current member's trailer, once read.
    pub(super) fn trailer(&self) -> Option<&GzipTrailer> {
        self.trailer.as_ref()
    }

    fn header_step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        if cx.input.avail() == 0 && !cx.ensure(1)? {
            return Ok(Step::Truncated("inside the header"));
        }
        match self.parser.feed(cx.input.bytes(), Some(&mut self.header)) {
            Ok(Fed::More) => cx.input.drop_buffered(),
            Ok(Fed::Done(k)) => {
                cx.input.advance(k);
                if cx.out.buf.capacity() > KEEP_OUTPUT {
                    cx.out.buf = Vec::new();
                }
                self.inflate
                    .get_or_insert_with(|| Decompress::new(false))
                    .reset(false);
                self.crc = 0;
                self.size = 0;
                cx.out.clear();
                self.fast_tried = false;
                self.hinted = None;
                self.phase = Phase::Body;
                if self.header.header_crc_ok() == Some(false) {
                    let msg = format!(
                        "the header CRC16 of the gzip member at stored offset {} is {:04x}, the \
                         header's is {:04x}",
                        cx.member_offset,
                        self.header.header_crc.unwrap_or_default(),
                        self.header.computed_header_crc
                    );
                    cx.problem(WarningKind::BadChecksum, msg)?;
                }
            }
            Err(e) => return Ok(Step::Damaged(format!("bad gzip header: {e}"))),
        }
        Ok(Step::Going)
    }

    fn body_step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        if !self.fast_tried && self.fast.is_some() {
            self.fast_tried = true;
            if self.whole_member(cx)? {
                return Ok(Step::Going);
            }
        }
        if !cx.step_start(OUT_SIZE)? {
            return Ok(Step::Truncated("inside the deflate data"));
        }
        let inflate = self.inflate.get_or_insert_with(|| Decompress::new(false));
        let (in0, out0) = (inflate.total_in(), inflate.total_out());
        let input = cx.input.bytes();
        let r = inflate.decompress(input, &mut cx.out.buf, FlushDecompress::None);
        let used = usize::try_from(inflate.total_in() - in0)
            .unwrap_or(0)
            .min(input.len());
        let made = usize::try_from(inflate.total_out() - out0)
            .unwrap_or(0)
            .min(cx.out.buf.len());
        cx.input.advance(used);
        cx.out.end = made;
        self.size += made as u64;
        if cx.verify {
            self.crc = crc32(self.crc, cx.out.buf.get(..made).unwrap_or_default());
        }
        Ok(match r {
            Ok(Status::StreamEnd) => {
                self.trailer_len = 0;
                self.phase = Phase::Trailer;
                Step::Going
            }
            Ok(_) if used == 0 && made == 0 => Step::Damaged("inflate makes no progress".into()),
            Ok(_) => Step::Going,
            Err(e) => Step::Damaged(format!(
                "corrupt deflate data ({})",
                e.message().unwrap_or("invalid data")
            )),
        })
    }

    /// Tries to inflate the whole member body at once with libdeflate.
    /// `true` when done (output ready, trailer next); `false` leaves
    /// everything as it was for the streaming path.
    fn whole_member<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<bool> {
        // An `sl` subfield (wget puts one in every member) gives the
        // member's sizes: the input and output it needs are known, so a
        // large or very compressible member is not inflated once in vain
        // into too small a buffer. A false hint costs only speed: too
        // little room is retried as below, and the stream takes the rest.
        let hint = if self.distrust_sl {
            None
        } else {
            self.header.size_hint()
        };
        self.hinted = hint.map(|(_, decoded)| decoded);
        if let Some((_, decoded)) = hint
            && decoded > self.fast_max
        {
            return Ok(false);
        }
        // Members are mostly far smaller than this; bigger ones stream.
        let mut want = FAST_INPUT.min(cx.input.capacity() / 2);
        if let Some((body, _)) = hint {
            want = want.max(body.saturating_add(8).min(cx.input.capacity()));
        }
        if cx.input.avail() < want {
            // At the end of the input fewer bytes are fine.
            cx.ensure(want)?;
        }
        let Some(fast) = self.fast.as_mut() else {
            return Ok(false);
        };
        let guess = match hint {
            // libdeflate needs no spare room; ISIZE is the same modulo 2^32.
            Some((_, decoded)) => decoded,
            None => cx.input.avail().saturating_mul(4),
        };
        let mut room = guess.clamp(OUT_SIZE, self.fast_max);
        let mut grown = false;
        loop {
            // Inflated into the buffer's spare capacity: pages are touched
            // only as written, so reserving FAST_OUTPUT costs little; in
            // huge pages when the buffer grows (a large member: 2 MiB a
            // fault, not 4 KiB). Exact: a doubled capacity would pass
            // KEEP_OUTPUT, and the buffer be given back and its pages
            // zeroed again for the next large member (4 % of a gzip read).
            cx.out.clear();
            cx.out.buf.clear();
            let had = cx.out.buf.capacity();
            cx.out.buf.reserve_exact(room);
            if cx.out.buf.capacity() != had {
                super::inflate::advise_huge(&mut cx.out.buf);
            }
            match fast.inflate_append(cx.input.bytes(), &mut cx.out.buf, room) {
                Inflated::Done { used, made } => {
                    cx.input.advance(used);
                    cx.out.end = made;
                    self.size = made as u64;
                    if cx.verify {
                        self.crc = crc32(0, cx.out.buf.get(..made).unwrap_or_default());
                    }
                    self.trailer_len = 0;
                    self.phase = Phase::Trailer;
                    return Ok(true);
                }
                // Too little room, or cut off by the end of what was
                // buffered (or damaged): once more, with all the room and
                // as much input as the buffer holds, since streaming a
                // large member with zlib-rs costs more than libdeflate
                // (docs/performance-history.md, issue 20).
                r @ (Inflated::NoRoom | Inflated::Invalid) if !grown => {
                    let all = cx.input.capacity();
                    let more_input = !cx.input.eof && cx.input.avail() < all;
                    if r == Inflated::Invalid && !more_input {
                        return Ok(false);
                    }
                    grown = true;
                    room = self.fast_max;
                    if more_input {
                        cx.ensure(all)?;
                    }
                }
                _ => return Ok(false),
            }
        }
    }

    fn trailer_step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        while self.trailer_len < 8 {
            if cx.input.avail() == 0 && !cx.ensure(1)? {
                return Ok(Step::Truncated("inside the trailer"));
            }
            let k = (8 - self.trailer_len).min(cx.input.avail());
            if let (Some(dst), Some(src)) = (
                self.trailer_bytes
                    .get_mut(self.trailer_len..self.trailer_len + k),
                cx.input.bytes().get(..k),
            ) {
                dst.copy_from_slice(src);
            }
            self.trailer_len += k;
            cx.input.advance(k);
        }
        let crc = cx.verify.then_some(self.crc);
        let t = GzipTrailer::new(self.trailer_bytes, crc, self.size as u32);
        if !t.is_ok()
            && cx.report.lenient
            && let Some(k) = member_in_trailer(cx)?
        {
            // The member was cut inside its trailer (or just before it) and
            // another written after it: it ends where that one starts.
            cx.input.advance(k);
            cx.finish();
            let msg = format!(
                "the trailer of the gzip member at stored offset {} does not match its data, \
                 and a member starts {k} bytes into it, at stored offset {}: the member was \
                 cut short there; it ends with the bytes decoded so far, unchecked, and \
                 decoding resumes at stored offset {}",
                cx.member_offset,
                cx.input.pos(),
                cx.input.pos(),
            );
            cx.problem(WarningKind::DamagedMember, msg)?;
            return Ok(Step::Going);
        }
        if !t.is_ok()
            && cx.report.lenient
            && let Some(next) = members_run_over(cx)?
        {
            let trailer_end = cx.input.pos();
            cx.input.set_pos(next);
            cx.finish();
            let msg = format!(
                "the trailer of the gzip member at stored offset {} does not match its data, \
                 and whole members from stored offset {next} inside it run on past its end \
                 ({trailer_end}): the member was cut short there; it ends with the bytes \
                 decoded so far, and decoding resumes at stored offset {next}",
                cx.member_offset,
            );
            cx.problem(WarningKind::DamagedMember, msg)?;
            return Ok(Step::Going);
        }
        if self
            .hinted
            .is_some_and(|d| d as u64 != self.size & u64::from(u32::MAX))
        {
            self.distrust_sl = true;
        }
        self.trailer = Some(t);
        cx.finish();
        if !t.is_ok() {
            let msg = format!(
                "the gzip member at stored offset {} has CRC32 {:08x} and ISIZE {} in its \
                 trailer, its data has CRC32 {} and size {} (mod 2^32)",
                cx.member_offset,
                t.crc32,
                t.isize,
                t.computed_crc32
                    .map_or("unchecked".to_owned(), |c| format!("{c:08x}")),
                t.computed_isize
            );
            cx.problem(WarningKind::BadChecksum, msg)?;
        }
        Ok(Step::Going)
    }
}

/// After a trailer that does not match: where, among its 8 bytes, a member
/// starts whose header parses (its offset in the trailer). The input is left
/// at the trailer's first byte when one does, after the trailer otherwise.
/// Not searched when the trailer's first bytes are no longer buffered.
///
/// A member written over the end of one cut short leaves the cut member's
/// deflate data ended (its last block was whole) and part of the new
/// member's header read as its trailer; read on after the 8 bytes, the new
/// member's first record would be lost as skipped bytes. A CRC that fails
/// with a header in its trailer's bytes is that, not chance.
fn member_in_trailer<R: Read>(cx: &mut Cx<'_, R>) -> crate::Result<Option<usize>> {
    /// Bytes of a member's start the probe is given (the trailer and these
    /// fit the smallest input buffer, which is not grown for this). A
    /// header longer than that counts by its first bytes: magic number,
    /// method and flags.
    const LOOK: usize = 32;
    if cx.input.start < 8 {
        return Ok(None);
    }
    cx.input.start -= 8;
    if let Err(e) = cx.ensure(8 + LOOK) {
        // As it was: the call may be repeated after an I/O error.
        cx.input.advance(8);
        return Err(e);
    }
    let bytes = cx.input.bytes();
    let found = (0..8).find(|&k| {
        use super::decoder::{Kind, Probe, probe};
        bytes.get(k..).is_some_and(|b| {
            matches!(
                probe(b),
                Probe::Valid(Kind::Gzip | Kind::Zstd | Kind::Lz4)
                    | Probe::Short(Some(Kind::Gzip | Kind::Zstd | Kind::Lz4))
            )
        })
    });
    if found.is_none() {
        cx.input.advance(8);
    }
    Ok(found)
}

/// After a trailer that does not match and holds no member start: where,
/// inside the member's data still buffered, a member starts from which
/// whole members run on past the trailer's end (the input is there). The
/// member was cut there, and its data ran over members written after it
/// until a stored block's length (or a block that happened to decode)
/// ended it; read on after the trailer, those members would be lost as
/// skipped bytes. Whole members must run past the trailer: a gzip file
/// archived in the record (kept verbatim in a stored block) is followed by
/// the rest of the record, and a member damaged in place (a bit flipped)
/// holds nothing that runs on. At most a quarter of the buffer is read
/// ahead for the run to cross the trailer's end.
fn members_run_over<R: Read>(cx: &mut Cx<'_, R>) -> crate::Result<Option<u64>> {
    let ahead = cx.input.capacity() / 4;
    cx.ensure(ahead)?;
    let pos = cx.input.pos();
    let Some(trailer) = pos.checked_sub(8) else {
        return Ok(None);
    };
    Ok(super::decoder::members_held(
        cx.input,
        cx.member_offset + 1,
        trailer,
        pos,
    ))
}

impl MemberDecoder for GzipMember {
    fn begin<R: Read>(&mut self, _cx: &mut Cx<'_, R>) -> crate::Result<()> {
        self.parser.reset();
        self.phase = Phase::Header;
        Ok(())
    }

    fn step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        match self.phase {
            Phase::Header => self.header_step(cx),
            Phase::Body => self.body_step(cx),
            Phase::Trailer => self.trailer_step(cx),
        }
    }
}
