//! The streaming decoder: stored bytes from any [`Read`] in, decompressed
//! bytes out, one member at a time.
//!
//! The [`Decoder`] owns the input buffer, the output buffer, the warnings and
//! the member boundaries: it sniffs what starts at each boundary, skips
//! damage, and serves the members the parallel engine decoded. The members
//! themselves are decoded by one [`MemberDecoder`] per codec (`plain`,
//! `gzip_member`, `zstd_member`, `lz4_member`), each made once and reused.

use super::gzip::{Fed, GzipHeader, GzipTrailer, HeaderParser};
use super::gzip_member::{GzipMember, KEEP_OUTPUT};
use super::input::Input;
use super::lz4;
use super::lz4_member::Lz4Member;
use super::map::FileMap;
use super::member::{Cx, MemberDecoder, Out, Report, Step};
use super::plain::Plain;
use super::zstd_frame::{self, FrameStart};
use super::zstd_member::ZstdMember;
use super::{Codec, Source};
use crate::io::{AtCursor, ReadAt};
use crate::{Warning, WarningKind};
use std::io::{self, Read};
use std::sync::Arc;

#[cfg(test)]
use super::gzip_member::FAST_OUTPUT;

/// Smallest input buffer: every fixed-size header we probe (LZ4 frame
/// header, zstd frame header and first block header) fits in it.
const MIN_BUFFER: usize = 64;

/// Options of a [`Decoder`].
///
/// ```
/// use warchest::codec::DecoderOptions;
/// let strict = DecoderOptions { lenient: false, ..DecoderOptions::default() };
/// # let _ = strict;
/// ```
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// Recover from damaged members with warnings instead of failing
    /// (default `true`). Lenient: a bad checksum, a truncated member, a
    /// corrupt member or bytes between members are reported through
    /// [`Source::drain_warnings`] and decoding goes on. Strict: each is an
    /// error, and the decoder returns that error from then on.
    pub lenient: bool,
    /// Size of the input buffer in bytes (default 1 MiB, at least 64). The
    /// decoder reads the stored file in pieces of this size, and serves a
    /// plain (uncompressed) file straight from it. An LZ4 frame whose blocks
    /// are larger grows it to one block (at most 4 MiB + 8 bytes).
    pub buffer_size: usize,
    /// Largest zstd window accepted, as a power of two (default 27, i.e.
    /// 128 MiB; clamped to 10..=31). A frame that declares a larger window is
    /// a damaged member (an error when strict) instead of an allocation of
    /// that size.
    pub max_zstd_window_log: u32,
    /// A zstd dictionary for files whose dictionary is kept apart from them
    /// (default none). A dictionary frame in the file (skippable frame
    /// `0x184D2A5D`) replaces it from that frame on.
    pub zstd_dictionary: Option<Vec<u8>>,
    /// Largest zstd dictionary loaded from a dictionary frame, stored or
    /// decompressed, in bytes (default 32 MiB). A larger one is reported as a
    /// damaged member and ignored.
    pub max_zstd_dictionary_size: usize,
    /// Compute and check the checksums the formats carry (default `true`):
    /// the CRC32 of each gzip member, the block and content checksums
    /// (xxHash32) of LZ4 frames. gzip's ISIZE and header CRC16 are checked
    /// either way; zstd checks its own frame checksum always.
    pub verify_checksums: bool,
    /// Inflate gzip members that fit in the input buffer with libdeflate,
    /// about twice as fast as streaming zlib (default `true`). Members that
    /// do not fit, and damaged ones, are streamed either way.
    pub fast_inflate: bool,
    /// Stored offset of the first byte the reader gives (default 0): set it
    /// when the reader was positioned inside a file (`extract --offset`), so
    /// every offset reported stays an offset in the file.
    pub start_offset: u64,
    /// Threads that decompress members ahead of the reader. Used by
    /// decoders over a file: [`Decoder::new_file`] decodes on this many
    /// when it is more than 1, the caller's thread one of them (it runs
    /// members ahead while it would otherwise wait; default 1: everything
    /// on the caller's thread); `new_seekable_threaded` (for `validate`,
    /// which has a checking thread of its own) starts one when it is 1 and
    /// `threads - 1` beside the caller's when it is more. Gzip members, zstd and LZ4 frames of one
    /// file are then decoded in parallel and delivered in order, with the
    /// same bytes, offsets and warnings as on one thread.
    ///
    /// The threads need the `parallel` feature (a rayon pool per decoder).
    /// Without it this option is ignored: everything is decoded on the
    /// caller's thread, with the same output.
    pub threads: usize,
    /// Have the threads that inflate gzip members ahead (see `threads`)
    /// also compute the SHA-1s of each member's WARC block
    /// ([`crate::check::MemberDigests`], read back with
    /// [`Source::member_digests`](super::Source::member_digests)), so that the reading thread need not
    /// hash those bytes (default `false`; `validate` and `check` set it).
    pub member_digests: bool,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            lenient: true,
            buffer_size: 1 << 20,
            max_zstd_window_log: 27,
            zstd_dictionary: None,
            max_zstd_dictionary_size: 32 << 20,
            verify_checksums: true,
            fast_inflate: true,
            start_offset: 0,
            threads: 1,
            member_digests: false,
        }
    }
}

/// What starts at a member boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Gzip,
    Zstd,
    /// A zstd skippable frame, with its magic number.
    Skippable(u32),
    Lz4,
}

/// What the bytes at a position are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Probe {
    /// The start of a member (its header parses).
    Valid(Kind),
    /// Not the start of a member.
    Invalid,
    /// Too few bytes to tell; the magic number, if it matched, says what it
    /// would be.
    Short(Option<Kind>),
}

/// Tells what the bytes at the start of `s` are.
pub(super) fn probe(s: &[u8]) -> Probe {
    let kind = if s.starts_with(&[0x1f, 0x8b, 0x08]) {
        Kind::Gzip
    } else if let Some(m) = zstd_frame::skippable_magic(s) {
        Kind::Skippable(m)
    } else if s.starts_with(&zstd_frame::MAGIC) {
        Kind::Zstd
    } else if s.starts_with(&lz4::MAGIC) {
        Kind::Lz4
    } else if s.len() < 4 && could_be_magic(s) {
        return Probe::Short(None);
    } else {
        return Probe::Invalid;
    };
    let short = Probe::Short(Some(kind));
    match kind {
        Kind::Gzip => match HeaderParser::new().feed(s, None) {
            Ok(Fed::Done(_)) => Probe::Valid(kind),
            Ok(Fed::More) => short,
            Err(_) => Probe::Invalid,
        },
        Kind::Zstd => match zstd_frame::check_frame_start(s) {
            Ok(FrameStart::Ok) => Probe::Valid(kind),
            Ok(FrameStart::Short(_)) => short,
            Err(_) => Probe::Invalid,
        },
        Kind::Skippable(_) if s.len() >= 8 => Probe::Valid(kind),
        Kind::Skippable(_) => short,
        Kind::Lz4 => match lz4::parse_header(s) {
            Ok(lz4::Header::Ok(_)) => Probe::Valid(kind),
            Ok(lz4::Header::Short(_)) => short,
            Err(_) => Probe::Invalid,
        },
    }
}

/// How far whole members run from `s[0]`, one after another, each
/// decoding cleanly, checksums included (read strictly, on a small
/// buffer): the end of the last of them, 0 when the first is not whole.
/// Used only after damage, for a candidate found in bytes already read. A
/// zstd frame made with a dictionary kept apart from the file is not whole.
fn whole_members_run(s: &[u8]) -> u64 {
    let opts = DecoderOptions {
        lenient: false,
        buffer_size: 64 << 10,
        ..DecoderOptions::default()
    };
    let mut d = Decoder::new(s, opts);
    let mut run = 0;
    loop {
        match d.fill_buf() {
            // A member's end: the decoder checked its trailer.
            Ok([]) => {
                run = d.member_end().unwrap_or(run);
                match d.next_member() {
                    Ok(true) => {}
                    Ok(false) | Err(_) => return run,
                }
            }
            Ok(b) => {
                let n = b.len();
                d.consume(n);
            }
            Err(_) => return run,
        }
    }
}

/// The first index `i` in `from..to` of `held` where a member starts from
/// which whole members ([`whole_members_run`]) reach index `reach` or past.
///
/// A run that falls short is passed over whole: a candidate inside it
/// would start a run ending where it ends (a member's own start) or inside
/// one of its whole members. So `held` is decoded about once, however many
/// members it holds (a `.warc.gz` archived as a payload, verbatim in
/// stored blocks, holds one at each of its records).
fn members_reaching(held: &[u8], from: usize, to: usize, reach: usize) -> Option<usize> {
    let mut at = from;
    while let Some(rest) = held.get(at..to.min(held.len())) {
        let i = at + find_magic(rest)?;
        let tail = held.get(i..)?;
        let run = match probe(tail) {
            Probe::Valid(Kind::Gzip | Kind::Zstd | Kind::Lz4) => whole_members_run(tail),
            _ => 0,
        };
        if i as u64 + run >= reach as u64 && run > 0 {
            return Some(i);
        }
        at = i + usize::try_from(run).unwrap_or(usize::MAX).max(1);
    }
    None
}

/// [`members_reaching`] over the bytes `input` still holds, in stored
/// offsets: the first member start from `from` (or the oldest byte held)
/// to before `to` from which whole members reach `reach` or past.
pub(super) fn members_held<R>(input: &Input<R>, from: u64, to: u64, reach: u64) -> Option<u64> {
    let base = input.base;
    let index = |at: u64| usize::try_from(at.saturating_sub(base)).unwrap_or(usize::MAX);
    members_reaching(input.held(), index(from), index(to), index(reach)).map(|i| base + i as u64)
}

/// `s` (shorter than 4 bytes) is the beginning of some magic number.
fn could_be_magic(s: &[u8]) -> bool {
    let skippable = match s.split_first() {
        Some((b, rest)) => b & 0xf0 == 0x50 && [0x2a, 0x4d, 0x18].starts_with(rest),
        None => true,
    };
    skippable
        || [&[0x1f, 0x8b, 0x08][..], &zstd_frame::MAGIC, &lz4::MAGIC]
            .iter()
            .any(|m| m.starts_with(s))
}

/// Index of the first position in `s` where a whole 4-byte magic number
/// starts.
pub(super) fn find_magic(s: &[u8]) -> Option<usize> {
    // Every magic number's third byte is one of three (gzip 0x08, zstd
    // 0x2f, LZ4 and skippable frames 0x4d): memchr3 finds those with SIMD,
    // ten times faster than a byte loop over compressed data, where a job
    // of the parallel engine looks for its first member.
    let mut from = 2;
    while let Some(j) = s
        .get(from..)
        .and_then(|t| memchr::memchr3(0x08, 0x2f, 0x4d, t))
    {
        let i = from + j - 2;
        if s.get(i..i + 4).and_then(Codec::sniff).is_some() {
            return Some(i);
        }
        from += j + 1;
    }
    None
}

/// Where the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first member: nothing read yet.
    Start,
    /// Looking for the next member (left only by an I/O error, to retry).
    Between,
    /// In a member of `codec`, decoded by that codec's [`MemberDecoder`]
    /// (the plain member is served from the input buffer).
    Member,
    /// The current member's end has been seen (`end` is set); decoded bytes
    /// may remain in the output buffer.
    Done,
    /// Past the last member.
    End,
    /// Serving a member decoded by the parallel engine.
    Par,
}

/// Streaming decoder of a stored web archive file: plain, gzip (per record
/// or whole file), zstd (with the `.warc.zst` dictionary frame) or LZ4
/// frames, sniffed member by member. It implements [`Source`].
///
/// Memory stays bounded whatever the input: one input buffer
/// ([`DecoderOptions::buffer_size`]), one output buffer (256 KiB; up to
/// 16 MiB while a large gzip member is inflated whole, given back when the
/// next gzip member starts or the threads' jobs serve it; 4 MiB + 64 KiB for LZ4
/// frames with 4 MiB blocks), the inflate window, and the zstd window (bounded by [`DecoderOptions::max_zstd_window_log`]).
/// Time is linear in the input, also for endless runs of empty members or
/// garbage.
///
/// # Before the first member
///
/// [`Decoder::new`] reads nothing. Until the first call to
/// [`Source::fill_buf`] or [`Source::next_member`] the decoder is *before
/// the first member*: `member_offset()` is 0, `codec()` is
/// [`Codec::None`], `member_pos()` is 0 and `member_end()` is `None`.
/// Either call then positions on the first member:
///
/// - `fill_buf()` positions on the first member and returns its bytes, so a
///   reader may start with `fill_buf()` right away;
/// - `next_member()` positions on the first member (it does not skip it) and
///   returns whether there is one.
///
/// So `fill_buf(), next_member()` and `next_member(), next_member()` both end
/// on the second member. An empty input has no member: `next_member()`
/// returns `false` and `fill_buf()` returns an empty slice.
///
/// # Members
///
/// A gzip member, a zstd frame or an LZ4 frame is one member; zstd
/// skippable frames are not members (the dictionary frame `0x184D2A5D` is
/// loaded, the others skipped). A file whose first bytes are none of these
/// is *plain*: one member at offset 0 running to the end of the input (a
/// whole-file gzip, likewise, is one long member). After a compressed
/// member, bytes that do not start a member are damage: the lenient decoder
/// skips to the next real member start (a magic number whose header parses)
/// with a [`WarningKind::SkippedBytes`] warning, or
/// [`WarningKind::TrailingGarbage`] when none follows; the strict one fails.
///
/// # Ends
///
/// `member_end()` is the stored offset just past the current member (past
/// the gzip trailer, the zstd frame, the LZ4 end mark and content checksum;
/// the input length for the plain member), known once `fill_buf()` has
/// returned an empty slice for it, and `None` before. `member_offset()` and
/// `member_end()` are exact stored offsets: they are what a CDX index
/// records. A damaged member (lenient) ends where the next member found by
/// resynchronising starts (or at the end of the input); a truncated one at
/// the end of the input. After `next_member()` has returned `false`,
/// `member_offset()` and `member_end()` are both the input length and
/// `codec()` is [`Codec::None`].
///
/// # Recovery (lenient mode)
///
/// - gzip CRC32 or ISIZE mismatch, FHCRC mismatch, LZ4 checksum or content
///   size mismatch: [`WarningKind::BadChecksum`]; the member's bytes are
///   kept. A gzip trailer that does not match and holds the start of a
///   member (magic number, method and flags), or whose member's data holds
///   the start of whole members that run on past the trailer, was cut short
///   by those members: [`WarningKind::DamagedMember`], the member ends
///   where the first of them starts.
/// - the input ends inside a member: [`WarningKind::TruncatedMember`]; the
///   member ends with what was decoded. When whole members (checksums
///   too) that run to the end of the input start in the bytes still
///   buffered after the member's first byte, the member was cut short and
///   they were written after it, its data running over them:
///   [`WarningKind::DamagedMember`], and decoding resumes at the first.
/// - corrupt compressed data: [`WarningKind::DamagedMember`]; the member ends
///   with what was decoded, and decoding resumes at the next member start
///   after the damaged member's first byte. The search goes back to that byte
///   when the input buffer still holds it (members smaller than half the
///   buffer), else it starts at the oldest byte still buffered.
///
/// Positions in warnings and errors are stored offsets: the member's start
/// for problems of a member, the first skipped byte for skipped bytes.
///
/// # Formats
///
/// - gzip: the header is parsed here (all RFC 1952 flags; FNAME and FCOMMENT
///   of any length, kept up to [`super::MAX_KEPT_FIELD`] bytes, see
///   [`Decoder::gzip_header`]); the deflate data is inflated with one reused
///   inflater; CRC32 (unless [`DecoderOptions::verify_checksums`] is off),
///   ISIZE and FHCRC are checked ([`Decoder::gzip_trailer`]).
/// - zstd: frames are decoded by one reused zstd context, whose window is
///   limited by [`DecoderOptions::max_zstd_window_log`]. A dictionary frame
///   (skippable frame `0x184D2A5D`, payload a dictionary, raw or itself
///   zstd-compressed) is loaded and used for the frames after it; other
///   skippable frames are skipped. zstd checks the frame checksum itself.
/// - LZ4 frames: the frame descriptor's checksum byte is always checked (a
///   header that fails it is not a frame); block checksums and the content
///   checksum are verified when [`DecoderOptions::verify_checksums`] is on,
///   as is the declared content size (always). Linked blocks are decoded with
///   the 64 KiB of output before them. Frames that need an external
///   dictionary (dictionary id set) are decoded without one, so a block that
///   refers to it is a damaged member. Legacy LZ4 frames are not supported.
///
/// # I/O errors
///
/// An I/O error of the reader is returned as it is, and leaves the decoder
/// where it was: the call may be repeated (after `WouldBlock`, say). Inside
/// a skippable frame or a run of garbage the decoder cannot always take up
/// exactly where it left off; it then goes on at the next member boundary it
/// finds, possibly reporting a shorter skipped range.
pub struct Decoder<R> {
    /// The stored bytes read ahead, and how the reader seeks.
    input: Input<R>,
    /// Decoded bytes of a compressed member.
    out: Out,
    /// Warnings (lenient) and the error that stopped the decoder (strict).
    report: Report,
    /// See [`DecoderOptions::verify_checksums`].
    verify: bool,
    state: State,
    codec: Codec,
    member_offset: u64,
    /// See [`DecoderOptions::start_offset`].
    start_offset: u64,
    member_pos: u64,
    /// Stored end of the current member (valid in `Done` and `End`).
    end: u64,
    /// A compressed member or skippable frame has been seen: non-member
    /// bytes are damage from then on, not a plain file.
    compressed_seen: bool,
    /// The jobs' map of the file faulted (the file shrank while they read
    /// it), found when they stopped serving: said at the end of the input
    /// if the sequential decoder that took over finds no cut of its own
    /// (the jobs may have read past the new end before the cut).
    jobs_saw_shrink: Option<std::io::Error>,
    /// The member decoders, one per codec, reused member after member.
    plain: Plain,
    gzip: GzipMember,
    zstd: ZstdMember,
    lz4: Lz4Member,
    /// Members decoded ahead on other threads (files, `threads > 1`).
    pub(super) par: Option<Box<super::parallel::Engine>>,
}

/// The context of the current member's decoder: `Cx` over the decoder's
/// buffers and report.
macro_rules! cx {
    ($d:ident) => {
        Cx {
            input: &mut $d.input,
            out: &mut $d.out,
            report: &mut $d.report,
            codec: $d.codec,
            member_offset: $d.member_offset,
            keep: ($d.state == State::Member && $d.codec != Codec::None)
                .then_some($d.member_offset),
            verify: $d.verify,
            ended: None,
        }
    };
}

/// Evaluates `$e` with `$m` bound to the current codec's member decoder
/// (static dispatch).
macro_rules! with_member {
    ($d:ident, $m:ident => $e:expr) => {
        match $d.codec {
            Codec::None => {
                let $m = &mut $d.plain;
                $e
            }
            Codec::Gzip => {
                let $m = &mut $d.gzip;
                $e
            }
            Codec::Zstd => {
                let $m = &mut $d.zstd;
                $e
            }
            Codec::Lz4 => {
                let $m = &mut $d.lz4;
                $e
            }
        }
    };
}

impl<R> std::fmt::Debug for Decoder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("state", &self.state)
            .field("codec", &self.codec)
            .field("member_offset", &self.member_offset)
            .field("member_pos", &self.member_pos)
            .field("stored_pos", &self.input.pos())
            .finish_non_exhaustive()
    }
}

impl<R: Read + io::Seek> Decoder<R> {
    /// A decoder over a seekable input (a file): payloads of plain members
    /// that the reader skips are sought past instead of read. The input is
    /// used from its current position, which is `opts.start_offset`.
    ///
    /// # Errors
    /// The input's length cannot be found.
    ///
    /// Started inside a file (`opts.start_offset` > 0, the file's start
    /// being `start_offset` bytes before the current position), the file's
    /// first frame is read first: when it is a zstd dictionary frame, its
    /// dictionary is loaded, as a reader from the start would have.
    pub fn new_seekable(mut inner: R, mut opts: DecoderOptions) -> io::Result<Self> {
        let here = inner.stream_position()?;
        let end = inner.seek(io::SeekFrom::End(0))?;
        inner.seek(io::SeekFrom::Start(here))?;
        if opts.start_offset > 0
            && let Some(origin) = here.checked_sub(opts.start_offset)
        {
            let (lo, hi) = zstd_frame::WINDOW_LOG_RANGE;
            if let Some(dict) = zstd_frame::file_dictionary(
                &mut inner,
                origin,
                opts.max_zstd_dictionary_size,
                opts.max_zstd_window_log.clamp(lo, hi),
            )? {
                opts.zstd_dictionary = Some(dict);
            }
        }
        let mut d = Decoder::new(inner, opts);
        d.input.len = Some(d.start_offset + end.saturating_sub(here));
        d.input.seek_forward = Some(|r, n| {
            let n = i64::try_from(n).map_err(|_| io::Error::other("seek too far"))?;
            r.seek(io::SeekFrom::Current(n)).map(|_| ())
        });
        d.input.inner_origin = here;
        d.input.seek_to = Some(|r, at| r.seek(io::SeekFrom::Start(at)).map(|_| ()));
        d.input.rest = Some(|r| {
            let here = r.stream_position()?;
            let end = r.seek(io::SeekFrom::End(0))?;
            r.seek(io::SeekFrom::Start(here))?;
            Ok(end.saturating_sub(here))
        });
        Ok(d)
    }
}

impl<R: Read + io::Seek> Decoder<R> {
    /// As [`Decoder::new_seekable`], and members are decoded ahead on
    /// [`DecoderOptions::threads`] threads (besides the caller's) reading
    /// `file`, a second handle to the file `inner` reads (none, or no
    /// threads: on the caller's thread only). For an input that
    /// wraps the file, such as one that watches the bytes read: what the
    /// threads decode never passes through `inner`. Without the `parallel`
    /// feature everything is decoded on the caller's thread.
    ///
    /// # Errors
    /// The input's length cannot be found.
    pub fn new_seekable_threaded(
        inner: R,
        file: Option<std::fs::File>,
        opts: DecoderOptions,
    ) -> io::Result<Self> {
        let map = file
            .as_ref()
            .filter(|_| opts.threads > 1 && super::parallel::ENABLED)
            .and_then(FileMap::new);
        let file = file.map(|f| Arc::new(f) as Arc<dyn ReadAt>);
        let mut d = Decoder::new_seekable_shared(inner, file, opts)?;
        if let (Some(p), Some(map)) = (d.par.as_mut(), map) {
            p.set_map(map);
        }
        Ok(d)
    }

    /// [`Decoder::new_seekable_threaded`] with the threads reading `file`,
    /// any [`ReadAt`] holding the bytes `inner` reads (an object in a
    /// store, say, whose `inner` watches the bytes read).
    ///
    /// # Errors
    /// The input's length cannot be found.
    pub fn new_seekable_shared(
        inner: R,
        file: Option<Arc<dyn ReadAt>>,
        opts: DecoderOptions,
    ) -> io::Result<Self> {
        let (threads, member_digests) = (opts.threads, opts.member_digests);
        let mut d = Decoder::new_seekable(inner, opts)?;
        let par_file = file.filter(|_| threads > 0);
        if let (Some(f), Some(len)) = (par_file, d.input.len) {
            let len = len - d.start_offset + d.input.inner_origin;
            let (max_window_log, max_dict, dict) = d.zstd.options();
            let opts = DecoderOptions {
                lenient: d.report.lenient,
                verify_checksums: d.verify,
                max_zstd_window_log: max_window_log,
                max_zstd_dictionary_size: max_dict,
                zstd_dictionary: dict.cloned(),
                fast_inflate: d.gzip.fast_inflate(),
                buffer_size: d.input.capacity(),
                member_digests,
                ..DecoderOptions::default()
            };
            if d.start_offset == d.input.inner_origin {
                d.par = super::parallel::Engine::new(f, len, threads, &opts).map(Box::new);
            }
        }
        Ok(d)
    }
}

impl Decoder<AtCursor> {
    /// A decoder over any [`ReadAt`] source (an object in a store, say),
    /// called `name` in messages, read from `opts.start_offset`: as
    /// [`Decoder::new_file`] over a file, it decodes members on
    /// [`DecoderOptions::threads`] threads that read `src` themselves when
    /// that is more than one (and the `parallel` feature is on), and on
    /// the caller's thread only otherwise. The output (bytes, offsets,
    /// warnings) is the same either way.
    ///
    /// # Errors
    /// The source's length cannot be found.
    pub fn new_read_at(src: Arc<dyn ReadAt>, name: &str, opts: DecoderOptions) -> io::Result<Self> {
        let cursor = AtCursor::new(Arc::clone(&src), name, opts.start_offset);
        let shared = (opts.threads > 1 && super::parallel::ENABLED).then_some(src);
        Decoder::new_seekable_shared(cursor, shared, opts)
    }
}

impl Decoder<std::fs::File> {
    /// A decoder over a file, as [`Decoder::new_seekable`], that decodes
    /// members on [`DecoderOptions::threads`] threads when that is more
    /// than one (and the `parallel` feature is on).
    ///
    /// # Errors
    /// The file's length cannot be found, or its handle cannot be shared
    /// with the threads.
    pub fn new_file(file: std::fs::File, opts: DecoderOptions) -> io::Result<Self> {
        let par_file = if opts.threads > 1 && super::parallel::ENABLED {
            Some(file.try_clone()?)
        } else {
            None
        };
        let map = FileMap::new(&file);
        let par_file = par_file.map(|f| Arc::new(f) as Arc<dyn ReadAt>);
        let mut d = Decoder::new_seekable_shared(file, par_file, opts)?;
        // A plain file read from its start is served from a memory map (the
        // `mmap` feature). So is a compressed one decoded on this thread
        // where the page cache makes the map's faults cheaper than the
        // copies of `read` calls and of moving the buffer's unread tail
        // ([`FileMap::cheap_to_read`]; docs/performance-history.md, round
        // twenty-one); otherwise its codec reads through the buffer and,
        // decoded on threads, its jobs inflate from the map.
        let at = d.start_offset;
        if let Some(mut map) = map {
            let here = d.input.inner_origin == at;
            let plain = here
                && usize::try_from(at).is_ok_and(|i| {
                    let b = map.bytes();
                    Codec::sniff(
                        b.get(i..i.saturating_add(4).min(b.len()))
                            .unwrap_or_default(),
                    )
                    .is_none()
                });
            if plain || (here && d.par.is_none() && map.cheap_to_read()) {
                d.input.use_map(map, at);
            } else if let Some(p) = d.par.as_mut() {
                p.set_map(map);
            }
        }
        Ok(d)
    }
}

impl<R: Read> Decoder<R> {
    /// A decoder over `inner`, before its first member (see the type's
    /// documentation). Reads nothing yet.
    pub fn new(inner: R, opts: DecoderOptions) -> Self {
        let (lo, hi) = zstd_frame::WINDOW_LOG_RANGE;
        Decoder {
            input: Input::new(inner, opts.buffer_size.max(MIN_BUFFER), opts.start_offset),
            out: Out::default(),
            report: Report::new(opts.lenient),
            verify: opts.verify_checksums,
            state: State::Start,
            codec: Codec::None,
            member_offset: opts.start_offset,
            start_offset: opts.start_offset,
            member_pos: 0,
            end: opts.start_offset,
            compressed_seen: false,
            jobs_saw_shrink: None,
            plain: Plain,
            gzip: GzipMember::new(opts.fast_inflate),
            zstd: ZstdMember::new(
                opts.max_zstd_window_log.clamp(lo, hi),
                opts.max_zstd_dictionary_size,
                opts.zstd_dictionary,
            ),
            lz4: Lz4Member::default(),
            par: None,
        }
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.input.inner
    }

    /// The underlying reader. Reading from it directly loses the decoder's
    /// place.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.input.inner
    }

    /// The underlying reader; input the decoder had buffered is lost.
    pub fn into_inner(self) -> R {
        self.input.inner
    }

    /// The header of the current member when it is a gzip member whose
    /// header has been parsed (for a validator: flags, MTIME, FNAME ...).
    pub fn gzip_header(&self) -> Option<&GzipHeader> {
        if let (State::Par, Some(p)) = (self.state, &self.par) {
            return p.gzip_header();
        }
        let here = matches!(self.state, State::Member | State::Done);
        (self.codec == Codec::Gzip && here)
            .then(|| self.gzip.header())
            .flatten()
    }

    /// The trailer of the current gzip member with the computed CRC32 and
    /// size, once the member's end has been read.
    pub fn gzip_trailer(&self) -> Option<&GzipTrailer> {
        if let (State::Par, Some(p)) = (self.state, &self.par) {
            return p.gzip_trailer();
        }
        if self.codec == Codec::Gzip && self.state == State::Done {
            self.gzip.trailer()
        } else {
            None
        }
    }

    /// Goes on reading at stored offset `at`, a member boundary, before the
    /// member there (as after [`Source::next_member`] had found it), with
    /// nothing buffered. Compressed members have been seen before it, so
    /// bytes that are not a member there are damage, not a plain file.
    ///
    /// # Errors
    /// The input cannot seek, or the seek fails.
    pub(crate) fn restart_at(&mut self, at: u64) -> crate::Result<()> {
        self.input.seek_to(at, self.start_offset)?;
        self.out.clear();
        self.state = State::Between;
        self.member_offset = at;
        self.member_pos = 0;
        self.end = at;
        self.compressed_seen = true;
        self.report.failed = None;
        self.zstd.abandon();
        self.lz4.abandon();
        Ok(())
    }

    /// [`Decoder::enter_member`], then at the end of the input the error
    /// of a file that shrank under the jobs' map, if they saw one: never
    /// a clean end for a file cut while it was read.
    fn enter_member_after_jobs(&mut self) -> crate::Result<bool> {
        let more = self.enter_member()?;
        if !more && let Some(e) = self.jobs_saw_shrink.take() {
            return Err(crate::Error::from(e).at(crate::Position::at(self.input.pos())));
        }
        Ok(more)
    }

    /// The jobs serve the member and a large member's output buffer is
    /// still held (or a job buffer is still lent to this thread).
    #[cfg(all(test, feature = "parallel"))]
    pub(super) fn large_output_beside_jobs(&self) -> bool {
        let lent = self.par.as_ref().is_some_and(|p| p.outputs_lent().1);
        self.state == State::Par && (self.out.buf.capacity() > KEEP_OUTPUT || lent)
    }

    /// Sets the largest output of a whole-member gzip attempt (a worker of
    /// the parallel engine: no more than a job holds).
    #[cfg(feature = "parallel")]
    pub(crate) fn set_whole_member_max(&mut self, n: usize) {
        self.gzip.set_fast_max(n);
    }

    /// Replaces the zstd dictionary (a worker of the parallel engine is
    /// given the one the reading thread loaded).
    #[cfg(feature = "parallel")]
    pub(crate) fn set_zstd_dictionary(&mut self, dict: Option<&[u8]>) {
        self.zstd.set_dictionary(dict);
    }

    /// Makes at least `n` unconsumed input bytes available (see
    /// [`Input::ensure`]); a compressed member being decoded keeps its
    /// first bytes buffered while they fit.
    fn ensure(&mut self, n: usize) -> crate::Result<bool> {
        let keep = (self.state == State::Member && self.codec != Codec::None)
            .then_some(self.member_offset);
        self.input.ensure(n, keep)
    }

    /// Records a recovery (lenient) or fails (strict).
    fn problem(&mut self, kind: WarningKind, offset: u64, message: String) -> crate::Result<()> {
        // As in `Cx::problem`.
        self.input.check_map_size()?;
        self.report.problem(self.codec, kind, offset, message)
    }

    /// Fails whatever the leniency: the error that stops the decoder, or,
    /// as in `Cx::problem`, the one of a mapped file that shrank.
    fn fail(&mut self, offset: u64, message: String) -> crate::Error {
        match self.input.check_map_size() {
            Ok(()) => self.report.fail(self.codec, offset, message),
            Err(e) => e,
        }
    }

    /// The current member's end has been seen at the current position.
    fn finish_member(&mut self) {
        self.state = State::Done;
        self.end = self.input.pos();
    }

    /// Past the last member.
    fn at_end(&mut self) {
        self.state = State::End;
        self.codec = Codec::None;
        self.member_offset = self.input.pos();
        self.end = self.member_offset;
        self.member_pos = 0;
        self.out.clear();
    }

    /// The input ended inside the current member.
    fn truncated(&mut self, what: &str) -> crate::Result<()> {
        if self.report.lenient
            && let Some(next) = self.whole_members_inside()
        {
            return self.cut_before(what, next);
        }
        // Whatever is left is part of the truncated member.
        self.input.drop_buffered();
        self.finish_member();
        let msg = format!(
            "the input ends {what} of the {} member starting at stored offset {}; \
             the member ends with the bytes decoded so far",
            self.codec.name(),
            self.member_offset
        );
        self.problem(WarningKind::TruncatedMember, self.member_offset, msg)
    }

    /// Where, among the bytes still buffered after the current member's
    /// first byte, whole members start that run to the end of the input,
    /// each decoding cleanly (checksums too): the stored offset of the
    /// first.
    ///
    /// The input ended inside the current member, and that member's data
    /// may have run over members written after it: a member cut short and
    /// then other members appended (a writer restarted on the same file, a
    /// cut file concatenated with others). Compressed data read as
    /// compressed data of another member does not always fail before the
    /// input ends. Only the bytes buffered are searched (all of a member
    /// under half the buffer, else what was read last). From a candidate,
    /// whole members must run to the end: a magic number met by chance in
    /// the member's own data (about one position in 10^8 passes the header
    /// checks) decodes to nothing whole, and a gzip file archived in the
    /// record (a payload kept in stored blocks, verbatim) is followed by
    /// the rest of the record, not by members; either would otherwise turn
    /// a plain truncation into damage.
    fn whole_members_inside(&self) -> Option<u64> {
        let end = self.input.base + self.input.held().len() as u64;
        members_held(&self.input, self.member_offset + 1, end, end)
    }

    /// Ends the current member, whose input ran to the end, at `next`, where
    /// [`Decoder::whole_members_inside`] found whole members from there to
    /// the end: the member was cut there, and decoding resumes there.
    fn cut_before(&mut self, what: &str, next: u64) -> crate::Result<()> {
        let start = self.member_offset;
        self.state = State::Done;
        self.input.set_pos(next);
        self.end = self.input.pos();
        let msg = format!(
            "the input ends {what} of the {} member starting at stored offset {start}, and whole \
             members from stored offset {next} inside it run to the end: the member was cut \
             short there; it ends with the bytes decoded so far (those read past \
             the cut are not its own) and decoding resumes at stored offset {next}",
            self.codec.name(),
        );
        self.problem(WarningKind::DamagedMember, start, msg)
    }

    /// The current member is corrupt: fail (strict), or end it and find the
    /// next member start after its first byte (lenient).
    fn damaged(&mut self, what: &str) -> crate::Result<()> {
        let seen = self.input.pos();
        let start = self.member_offset;
        if !self.report.lenient {
            let msg = format!("{what} (stored offset {seen})");
            return Err(self.fail(start, msg));
        }
        // Leave the member first so that compaction no longer keeps it.
        self.state = State::Done;
        self.input.set_pos(start + 1);
        self.seek_valid()?;
        self.end = self.input.pos();
        let next = if self.input.avail() == 0 && self.input.eof {
            "no member follows".to_owned()
        } else {
            format!("decoding resumes at stored offset {}", self.end)
        };
        let skipped = self.end.saturating_sub(seen);
        let msg = format!(
            "{what} at about stored offset {seen}; the member ends with the bytes decoded \
             so far, {skipped} stored bytes after that point were skipped, {next}"
        );
        self.problem(WarningKind::DamagedMember, start, msg)
    }

    /// Scans from the input position for the next position where a member
    /// really starts (magic number and a header that parses), leaving the
    /// input there; at the end of the input, leaves it at the end and
    /// returns `None`. Garbage before the position is dropped from the
    /// buffer.
    fn seek_valid(&mut self) -> crate::Result<Option<Kind>> {
        loop {
            match find_magic(self.input.bytes()) {
                Some(j) => {
                    self.input.start += j;
                    match probe(self.input.bytes()) {
                        Probe::Valid(k) => return Ok(Some(k)),
                        Probe::Invalid => self.input.start += 1,
                        Probe::Short(k) => {
                            if self.input.avail() >= self.input.capacity() {
                                // A header longer than the buffer: accept it,
                                // the member decoder parses it incrementally.
                                if let Some(k) = k {
                                    return Ok(Some(k));
                                }
                                self.input.start += 1;
                            } else if !self.ensure(self.input.avail() + 1)? {
                                // Cut short by the end of the input: not a
                                // header that parses.
                                self.input.start += 1;
                            }
                        }
                    }
                }
                None => {
                    // Keep 3 bytes: a magic number may straddle the refill.
                    let input = &mut self.input;
                    input.start = input.end.saturating_sub(3).max(input.start);
                    if !self.ensure(self.input.avail() + 1)? {
                        self.input.drop_buffered();
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// What starts exactly at the input position, reading as much as the
    /// probe needs. A recognised magic number cut short by the end of the
    /// input (or with a header longer than the buffer) counts as a member
    /// start: its decoder reports the truncation.
    fn probe_here(&mut self) -> crate::Result<Option<Kind>> {
        loop {
            match probe(self.input.bytes()) {
                Probe::Valid(k) => return Ok(Some(k)),
                Probe::Invalid => return Ok(None),
                Probe::Short(k) => {
                    let avail = self.input.avail();
                    if avail < self.input.capacity() && self.ensure(avail + 1)? {
                        continue;
                    }
                    return Ok(k);
                }
            }
        }
    }

    /// Positions on the member that starts at the input position (or after
    /// garbage, or after skippable frames). `false` at the end of the input.
    fn enter_member(&mut self) -> crate::Result<bool> {
        self.state = State::Between;
        self.out.clear();
        self.member_pos = 0;
        self.gzip.forget();
        loop {
            let boundary = self.input.pos();
            let kind = match self.probe_here()? {
                Some(k) => k,
                None if self.input.avail() == 0 => {
                    self.at_end();
                    return Ok(false);
                }
                None if !self.compressed_seen && boundary == self.start_offset => {
                    self.codec = Codec::None;
                    self.member_offset = self.start_offset;
                    self.state = State::Member;
                    return Ok(true);
                }
                None => {
                    if !self.report.lenient {
                        let msg = format!(
                            "the bytes at stored offset {boundary} do not start a gzip \
                             member, zstd frame or LZ4 frame"
                        );
                        return Err(self.fail(boundary, msg));
                    }
                    self.input.start += 1;
                    let found = self.seek_valid()?;
                    let to = self.input.pos();
                    let len = to - boundary;
                    match found {
                        Some(k) => {
                            let msg = format!(
                                "skipped {len} bytes at stored offsets {boundary}..{to} that \
                                 do not start a gzip member, zstd frame or LZ4 frame"
                            );
                            self.problem(WarningKind::SkippedBytes, boundary, msg)?;
                            k
                        }
                        None => {
                            let msg = format!(
                                "{len} bytes at stored offsets {boundary}..{to} after the last \
                                 member are not a gzip member, zstd frame or LZ4 frame"
                            );
                            self.problem(WarningKind::TrailingGarbage, boundary, msg)?;
                            self.at_end();
                            return Ok(false);
                        }
                    }
                }
            };
            self.compressed_seen = true;
            self.member_offset = self.input.pos();
            if !matches!(kind, Kind::Skippable(_))
                && let Some(p) = self.par.as_mut()
                && p.at_boundary(self.member_offset)
            {
                // A large member's buffer is not needed while the jobs
                // serve: given back now (a job buffer lent, to the jobs),
                // not at the next member the reading thread decodes, so
                // that it does not stay beside the job buffers.
                if !p.take_output(&mut self.out.buf) && self.out.buf.capacity() > KEEP_OUTPUT {
                    self.out.buf = Vec::new();
                }
                self.state = State::Par;
                return Ok(true);
            }
            self.codec = match kind {
                Kind::Skippable(magic) => {
                    let mut cx = cx!(self);
                    let dict = self.zstd.skippable_frame(&mut cx, magic)?;
                    if let (Some(dict), Some(p)) = (dict, self.par.as_mut()) {
                        p.new_dictionary(dict);
                    }
                    continue;
                }
                Kind::Gzip => Codec::Gzip,
                Kind::Zstd => Codec::Zstd,
                Kind::Lz4 => Codec::Lz4,
            };
            // Decoded here, beside the jobs: into an idle job buffer.
            if let Some(p) = self.par.as_mut() {
                p.lend_output(&mut self.out.buf);
            }
            let mut cx = cx!(self);
            with_member!(self, m => m.begin(&mut cx))?;
            self.state = State::Member;
            return Ok(true);
        }
    }

    /// Decodes some more of the current member (whose decoded bytes have
    /// been consumed), or moves it on: each call consumes input, produces
    /// output or changes the state. Nothing outside a member.
    fn step(&mut self) -> crate::Result<()> {
        if self.state != State::Member {
            return Ok(());
        }
        let mut cx = cx!(self);
        let r = with_member!(self, m => m.step(&mut cx));
        if let Some(end) = cx.ended {
            self.state = State::Done;
            self.end = end;
        }
        match r? {
            Step::Going => Ok(()),
            Step::Truncated(inside) => self.truncated(inside),
            Step::Damaged(what) => self.damaged(&what),
        }
    }

    #[cfg(test)]
    fn buffer_sizes(&self) -> (usize, usize) {
        (self.input.capacity(), self.out.buf.len())
    }
}

impl<R: Read> Source for Decoder<R> {
    fn member_digests(&self) -> Option<&crate::check::MemberDigests> {
        match (self.state, &self.par) {
            (State::Par, Some(p)) => p.member_digests(),
            _ => None,
        }
    }

    fn fill_buf(&mut self) -> crate::Result<&[u8]> {
        self.report.check()?;
        self.input.check_map()?;
        if self.state == State::Par {
            return Ok(self.par.as_deref().map_or(&[][..], |p| p.fill()));
        }
        if matches!(self.state, State::Start | State::Between) {
            self.enter_member()?;
        }
        while self.state == State::Member
            && with_member!(self, m => m.data(&self.input, &self.out).is_empty())
        {
            self.step()?;
        }
        Ok(match self.state {
            State::Member => with_member!(self, m => m.data(&self.input, &self.out)),
            State::Done if self.codec != Codec::None => self.out.bytes(),
            State::Par => self.par.as_deref().map_or(&[][..], |p| p.fill()),
            State::Start | State::Between | State::Done | State::End => &[],
        })
    }

    fn end_plain_member(&mut self) -> bool {
        if self.state != State::Member || self.codec != Codec::None {
            return false;
        }
        self.end = self.input.pos();
        self.state = State::Between;
        true
    }

    fn consume(&mut self, n: usize) {
        let k = match self.state {
            State::Par => self.par.as_mut().map_or(0, |p| p.consume(n)),
            State::Member => with_member!(self, m => m.consume(&mut self.input, &mut self.out, n)),
            State::Done if self.codec != Codec::None => self.out.consume(n),
            State::Start | State::Between | State::Done | State::End => 0,
        };
        self.member_pos += k as u64;
    }

    fn next_member(&mut self) -> crate::Result<bool> {
        self.report.check()?;
        if let (State::Par, Some(p)) = (self.state, self.par.as_mut()) {
            return match p.advance() {
                Ok(()) => Ok(true),
                Err(end) => {
                    self.jobs_saw_shrink = p.map_check().err();
                    self.restart_at(end)?;
                    self.enter_member_after_jobs()
                }
            };
        }
        match self.state {
            State::Start | State::Between => return self.enter_member_after_jobs(),
            State::End => return Ok(false),
            State::Member | State::Done if self.codec == Codec::None => {
                // The plain member runs to the end of the input.
                loop {
                    self.input.drop_buffered();
                    if !self.ensure(1)? {
                        break;
                    }
                }
                self.at_end();
                return Ok(false);
            }
            _ => {}
        }
        while self.state != State::Done {
            self.out.start = self.out.end;
            self.step()?;
        }
        self.enter_member()
    }

    fn member_offset(&self) -> u64 {
        if let (State::Par, Some(p)) = (self.state, &self.par) {
            return p.member_offset();
        }
        self.member_offset
    }

    fn codec(&self) -> Codec {
        if let (State::Par, Some(p)) = (self.state, &self.par) {
            return p.codec();
        }
        self.codec
    }

    fn member_pos(&self) -> u64 {
        if let (State::Par, Some(p)) = (self.state, &self.par) {
            return p.member_pos();
        }
        self.member_pos
    }

    fn member_end(&self) -> Option<u64> {
        match self.state {
            State::Par => self.par.as_ref().and_then(|p| p.member_end()),
            State::End => Some(self.end),
            State::Done if self.codec == Codec::None || self.out.start == self.out.end => {
                Some(self.end)
            }
            _ => None,
        }
    }

    fn prefer_reads(&mut self) -> crate::Result<bool> {
        // A compressed file is only mapped where the map is the cheaper way
        // (`Decoder::new_file`): it stays.
        self.input.settle_for_reads()
    }

    fn read_direct(&mut self, out: &mut [u8]) -> crate::Result<Option<usize>> {
        if self.state != State::Member || self.codec != Codec::None {
            return Ok(None);
        }
        self.report.check()?;
        self.input.check_map()?;
        let n = self.input.read_direct(out)?;
        if let Some(n) = n {
            self.member_pos += n as u64;
        }
        Ok(n)
    }

    fn skip(&mut self, n: u64) -> crate::Result<u64> {
        if let (State::Par, Some(p)) = (self.state, self.par.as_mut()) {
            return Ok(p.skip(n));
        }
        if self.state == State::Member
            && let Some(k) = with_member!(self, m => m.skip(&mut self.input, n))?
        {
            self.member_pos += k;
            return Ok(k);
        }
        let mut done = 0;
        let mut left = n;
        while left > 0 {
            let avail = self.fill_buf()?.len();
            if avail == 0 {
                break;
            }
            let k = avail.min(usize::try_from(left).unwrap_or(usize::MAX));
            self.consume(k);
            left -= k as u64;
            done += k as u64;
        }
        Ok(done)
    }

    fn drain_warnings(&mut self, out: &mut Vec<Warning>) {
        self.report.drain(out, self.input.pos());
    }
}

#[cfg(test)]
mod tests {
    use super::super::{gzip, parse_gzip_header};
    use super::*;
    use crate::Error;
    use flate2::Compression;
    use flate2::write::{DeflateEncoder, GzEncoder};
    use std::io::Write;

    /// `find_magic` finds what a plain scan of every 4-byte window finds:
    /// over bytes full of magic numbers' pieces, whole ones, and ones cut
    /// by the end of the slice.
    #[test]
    fn find_magic_is_the_first_window_that_sniffs() {
        let naive = |s: &[u8]| s.windows(4).position(|w| Codec::sniff(w).is_some());
        let pieces: [&[u8]; 9] = [
            &[0x1f, 0x8b, 0x08, 0x00],
            &[0x28, 0xb5, 0x2f, 0xfd],
            &[0x04, 0x22, 0x4d, 0x18],
            &[0x5d, 0x2a, 0x4d, 0x18],
            &[0x4f, 0x2a, 0x4d, 0x18],
            &[0x1f, 0x8b, 0x07],
            &[0x08, 0x2f, 0x4d],
            &[0x4d, 0x4d, 0x08],
            &[0x00, 0x61],
        ];
        let mut seed = 0x9e37_79b9_u32;
        for round in 0..2000 {
            let mut s = Vec::new();
            for _ in 0..(round % 40) {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                // Mostly the harmless pieces, sometimes a whole magic.
                let k = (seed % 64) as usize;
                s.extend_from_slice(pieces[if k < 5 { k } else { 5 + k % 4 }]);
            }
            for cut in [
                s.len(),
                s.len().saturating_sub(1),
                s.len().saturating_sub(3),
            ] {
                let t = &s[..cut];
                assert_eq!(find_magic(t), naive(t), "{t:x?}");
            }
        }
    }

    /// One decoded member.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct M {
        offset: u64,
        end: Option<u64>,
        codec: Codec,
        data: Vec<u8>,
    }

    /// A reader handing out at most `step` bytes per read, with an
    /// `Interrupted` error now and then: headers and trailers straddle reads.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        calls: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(7) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "again"));
            }
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zst(data: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(data, 3).unwrap()
    }

    fn strict() -> DecoderOptions {
        DecoderOptions {
            lenient: false,
            ..DecoderOptions::default()
        }
    }

    fn small(buffer_size: usize) -> DecoderOptions {
        DecoderOptions {
            buffer_size,
            ..DecoderOptions::default()
        }
    }

    fn read_member<R: Read>(d: &mut Decoder<R>) -> crate::Result<Vec<u8>> {
        let mut v = Vec::new();
        loop {
            let b = d.fill_buf()?;
            if b.is_empty() {
                return Ok(v);
            }
            let n = b.len();
            v.extend_from_slice(b);
            d.consume(n);
        }
    }

    fn collect<R: Read>(d: &mut Decoder<R>, out: &mut Vec<M>) -> crate::Result<()> {
        while d.next_member()? {
            let data = read_member(d)?;
            assert_eq!(
                d.member_pos(),
                data.len() as u64,
                "member_pos counts the bytes read"
            );
            out.push(M {
                offset: d.member_offset(),
                end: d.member_end(),
                codec: d.codec(),
                data,
            });
        }
        // Past the end: an empty member at the input's end.
        assert_eq!(d.member_end(), Some(d.member_offset()));
        assert_eq!(d.codec(), Codec::None);
        assert!(d.fill_buf()?.is_empty());
        assert!(!d.next_member()?);
        Ok(())
    }

    fn decode_reader<R: Read>(
        r: R,
        o: DecoderOptions,
    ) -> (Vec<M>, crate::Result<()>, Vec<Warning>) {
        let mut d = Decoder::new(r, o);
        let mut v = Vec::new();
        let res = collect(&mut d, &mut v);
        let mut w = Vec::new();
        d.drain_warnings(&mut w);
        (v, res, w)
    }

    fn decode(input: &[u8], o: DecoderOptions) -> (Vec<M>, crate::Result<()>, Vec<Warning>) {
        decode_reader(input, o)
    }

    /// Decodes `input` cleanly (no warnings, no error) in several ways that
    /// must agree: default buffer, tiny buffer, trickling reader.
    fn decode_clean(input: &[u8]) -> Vec<M> {
        let (a, r, w) = decode(input, DecoderOptions::default());
        r.unwrap();
        assert!(w.is_empty(), "{w:?}");
        for (step, buf) in [(1, 64), (3, 64), (5, 100), (4096, 1000)] {
            let t = Trickle {
                data: input,
                step,
                calls: 0,
            };
            let (b, r, w) = decode_reader(t, small(buf));
            r.unwrap();
            assert!(w.is_empty(), "{w:?}");
            assert_eq!(a, b, "step {step} buffer {buf}");
        }
        a
    }

    fn records() -> Vec<Vec<u8>> {
        (0..12)
            .map(|i| {
                let body = "x".repeat(i * 997 % 5000);
                format!(
                    "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: {}\r\n\r\n{body}\r\n\r\n",
                    body.len()
                )
                .into_bytes()
            })
            .chain([Vec::new()])
            .collect()
    }

    /// Members made by `f` from `parts`, concatenated, with their offsets.
    fn concat(parts: &[Vec<u8>], f: impl Fn(&[u8]) -> Vec<u8>) -> (Vec<u8>, Vec<u64>) {
        let mut file = Vec::new();
        let mut offsets = Vec::new();
        for p in parts {
            offsets.push(file.len() as u64);
            file.extend(f(p));
        }
        (file, offsets)
    }

    fn check_members(ms: &[M], parts: &[Vec<u8>], offsets: &[u64], total: usize, codec: Codec) {
        assert_eq!(ms.len(), parts.len());
        for (i, m) in ms.iter().enumerate() {
            assert_eq!(m.codec, codec);
            assert_eq!(m.offset, offsets[i], "member {i} offset");
            let end = offsets.get(i + 1).copied().unwrap_or(total as u64);
            assert_eq!(m.end, Some(end), "member {i} end");
            assert_eq!(m.data, parts[i], "member {i} data");
        }
    }

    fn kinds(w: &[Warning]) -> Vec<WarningKind> {
        w.iter().map(|w| w.kind).collect()
    }

    fn codec_offset(e: &Error) -> u64 {
        match e.kind() {
            crate::ErrorKind::Codec(c) => c.offset,
            k => panic!("not a codec error: {k:?}"),
        }
    }

    #[test]
    fn multi_member_gzip_offsets_exact() {
        let parts = records();
        let (file, offsets) = concat(&parts, gz);
        let ms = decode_clean(&file);
        check_members(&ms, &parts, &offsets, file.len(), Codec::Gzip);
    }

    #[test]
    fn before_the_first_member_and_fill_buf_first() {
        let parts = records();
        let (file, offsets) = concat(&parts, gz);
        let mut d = Decoder::new(&file[..], DecoderOptions::default());
        assert_eq!(
            (d.member_offset(), d.codec(), d.member_pos(), d.member_end()),
            (0, Codec::None, 0, None)
        );
        // fill_buf positions on the first member itself.
        assert_eq!(read_member(&mut d).unwrap(), parts[0]);
        assert_eq!(d.codec(), Codec::Gzip);
        assert_eq!(d.member_end(), Some(offsets[1]));
        assert!(d.gzip_trailer().is_some_and(|t| t.is_ok()));
        assert!(d.next_member().unwrap());
        assert_eq!(d.member_offset(), offsets[1]);
        assert_eq!(read_member(&mut d).unwrap(), parts[1]);
        // next_member before any read enters the first member.
        let mut d = Decoder::new(&file[..], DecoderOptions::default());
        assert!(d.next_member().unwrap());
        assert_eq!(d.member_offset(), 0);
        assert!(d.next_member().unwrap());
        assert_eq!(d.member_offset(), offsets[1]);
    }

    #[test]
    fn next_member_skips_the_rest_of_a_member() {
        let parts = records();
        let (file, offsets) = concat(&parts, gz);
        let mut d = Decoder::new(&file[..], small(64));
        assert!(d.next_member().unwrap());
        let first = d.fill_buf().unwrap().len().min(5);
        d.consume(first);
        assert_eq!(d.member_end(), None);
        assert!(d.next_member().unwrap());
        assert_eq!(d.member_offset(), offsets[1]);
        assert_eq!(d.skip(10).unwrap(), 10);
        assert_eq!(d.member_pos(), 10);
        assert_eq!(read_member(&mut d).unwrap(), parts[1][10..]);
    }

    #[test]
    fn whole_file_gzip_is_one_member() {
        let parts = records();
        let all: Vec<u8> = parts
            .iter()
            .flatten()
            .copied()
            .collect::<Vec<u8>>()
            .repeat(40);
        let file = gz(&all);
        let ms = decode_clean(&file);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].data, all);
        assert_eq!(ms[0].end, Some(file.len() as u64));
    }

    #[test]
    fn plain_file_is_one_member() {
        let all: Vec<u8> = records().concat();
        let ms = decode_clean(&all);
        assert_eq!(
            ms,
            vec![M {
                offset: 0,
                end: Some(all.len() as u64),
                codec: Codec::None,
                data: all.clone()
            }]
        );
        // Plain bytes after the start are never damage, even magic numbers.
        let mut odd = b"WARC/1.0\r\n".to_vec();
        odd.extend(gz(b"inner"));
        let ms = decode_clean(&odd);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].data, odd);
        // A one-byte file, and skipping through a plain file.
        assert_eq!(decode_clean(b"W")[0].data, b"W");
        let mut d = Decoder::new(&all[..], small(64));
        assert_eq!(d.skip(1000).unwrap(), 1000);
        assert_eq!(d.member_pos(), 1000);
        assert_eq!(read_member(&mut d).unwrap(), all[1000..]);
        assert_eq!(d.member_end(), Some(all.len() as u64));
    }

    #[test]
    fn empty_input_has_no_member() {
        let mut d = Decoder::new(&b""[..], DecoderOptions::default());
        assert!(d.fill_buf().unwrap().is_empty());
        assert!(!d.next_member().unwrap());
        assert_eq!(d.member_end(), Some(0));
        let (ms, r, w) = decode(b"", strict());
        assert!(ms.is_empty() && r.is_ok() && w.is_empty());
    }

    /// A gzip member with every optional header field.
    fn gz_full(data: &[u8], name: &[u8], hcrc_ok: bool) -> Vec<u8> {
        let flags = gzip::FTEXT | gzip::FHCRC | gzip::FEXTRA | gzip::FNAME | gzip::FCOMMENT;
        let mut m = vec![0x1f, 0x8b, 8, flags, 1, 2, 3, 4, 0, 3];
        let extra = b"WA\x04\x00abcd";
        m.extend((extra.len() as u16).to_le_bytes());
        m.extend(extra);
        m.extend(name);
        m.push(0);
        m.extend(b"a comment");
        m.push(0);
        let mut crc16 = (crc32fast::hash(&m) & 0xffff) as u16;
        if !hcrc_ok {
            crc16 ^= 1;
        }
        m.extend(crc16.to_le_bytes());
        let mut e = DeflateEncoder::new(m, Compression::default());
        e.write_all(data).unwrap();
        let mut m = e.finish().unwrap();
        m.extend(crc32fast::hash(data).to_le_bytes());
        m.extend((data.len() as u32).to_le_bytes());
        m
    }

    #[test]
    fn gzip_header_fields_and_straddling() {
        let long_name = vec![b'n'; 300];
        for name in [&b"file.warc"[..], &long_name] {
            let one = gz_full(b"payload one", name, true);
            let mut file = one.clone();
            file.extend(gz_full(b"payload two", name, true));
            let ms = decode_clean(&file);
            assert_eq!(ms.len(), 2);
            assert_eq!(ms[1].offset, one.len() as u64);
            assert_eq!(ms[1].data, b"payload two");
            for buf in [64, 1 << 20] {
                let mut d = Decoder::new(&file[..], small(buf));
                assert!(d.next_member().unwrap());
                assert!(d.gzip_header().is_none(), "not parsed before reading");
                read_member(&mut d).unwrap();
                let h = d.gzip_header().expect("header of a gzip member");
                assert_eq!(h.name.as_deref(), Some(name));
                assert_eq!(h.comment.as_deref(), Some(&b"a comment"[..]));
                assert_eq!(h.extra.as_deref(), Some(&b"WA\x04\x00abcd"[..]));
                assert_eq!(
                    (h.mtime, h.xfl, h.os, h.is_text()),
                    (0x0403_0201, 0, 3, true)
                );
                assert_eq!(h.header_crc_ok(), Some(true));
                assert_eq!(h.len, 10 + 2 + 8 + name.len() as u64 + 1 + 10 + 2);
            }
            // The same header through the public parser, whole and cut.
            let h = parse_gzip_header(&one).unwrap().unwrap();
            assert_eq!(h.name.as_deref(), Some(name));
            let hl = h.len as usize;
            assert_eq!(parse_gzip_header(&one[..hl - 1]).unwrap(), None);
            assert_eq!(parse_gzip_header(&one[..hl]).unwrap().unwrap().len, h.len);
        }
        assert!(parse_gzip_header(&[0x1f, 0x8b, 8, 0x20, 0, 0, 0, 0, 0, 3]).is_err());
        assert!(parse_gzip_header(&[0x1f, 0x8b, 7]).is_err());
        assert_eq!(parse_gzip_header(&[0x1f, 0x8b]).unwrap(), None);
    }

    #[test]
    fn bad_header_crc_is_a_checksum_warning() {
        let file = gz_full(b"data", b"n", false);
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms[0].data, b"data");
        assert_eq!(kinds(&w), [WarningKind::BadChecksum]);
        let (_, r, _) = decode(&file, strict());
        assert!(r.is_err());
    }

    #[test]
    fn crc_and_isize_mismatch() {
        let parts = records();
        let (mut file, offsets) = concat(&parts[..3], gz);
        let crc_at = offsets[2] as usize - 8;
        file[crc_at] ^= 0x55;
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        check_members(&ms, &parts[..3], &offsets, file.len(), Codec::Gzip);
        assert_eq!(kinds(&w), [WarningKind::BadChecksum]);
        assert_eq!(w[0].offset, offsets[1]);
        let (ms, r, _) = decode(&file, strict());
        assert_eq!(codec_offset(&r.unwrap_err()), offsets[1]);
        assert_eq!(ms.len(), 1, "the first member still decodes");
        // ISIZE alone.
        let (mut file, _) = concat(&parts[..2], gz);
        let last = file.len() - 1;
        file[last] ^= 1;
        let (_, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(kinds(&w), [WarningKind::BadChecksum]);
        // Not checking checksums still checks ISIZE, but not CRC32.
        let unchecked = DecoderOptions {
            verify_checksums: false,
            ..DecoderOptions::default()
        };
        let (_, _, w) = decode(&file, unchecked.clone());
        assert_eq!(kinds(&w), [WarningKind::BadChecksum]);
        let (mut file, _) = concat(&parts[..2], gz);
        let crc_at = file.len() - 8;
        file[crc_at] ^= 1;
        let (_, r, w) = decode(&file, unchecked);
        assert!(r.is_ok() && w.is_empty());
    }

    #[test]
    fn truncated_members() {
        let parts = records();
        let (file, offsets) = concat(&parts[..4], gz);
        let last = offsets[3] as usize;
        // Inside the deflate data, inside the trailer, inside the header.
        for cut in [
            last + (file.len() - last) / 2,
            file.len() - 3,
            last + 5,
            last + 3,
        ] {
            let input = &file[..cut];
            let (ms, r, w) = decode(input, DecoderOptions::default());
            r.unwrap();
            assert_eq!(ms.len(), 4, "cut {cut}");
            assert_eq!(kinds(&w), [WarningKind::TruncatedMember], "cut {cut}");
            assert_eq!(w[0].offset, offsets[3]);
            assert!(parts[3].starts_with(&ms[3].data));
            assert_eq!(ms[3].end, Some(cut as u64));
            if cut == file.len() - 3 {
                assert_eq!(ms[3].data, parts[3], "all data before the trailer");
            }
            let (ms, r, _) = decode(input, strict());
            assert_eq!(codec_offset(&r.unwrap_err()), offsets[3]);
            assert_eq!(ms.len(), 3);
        }
    }

    /// A member cut short with others written after it, whose deflate data
    /// runs over them to the end of the input without failing (here a
    /// stored block, whose length reaches past them): the members written
    /// after the cut are still read, from where the first of them starts.
    #[test]
    fn a_cut_member_run_over_members_after_it_ends_where_they_start() {
        let parts = records();
        let first = gz(&parts[0]);
        let mut e = GzEncoder::new(Vec::new(), Compression::none());
        let big: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        e.write_all(&big).unwrap();
        let stored = e.finish().unwrap();
        let cut = &stored[..stored.len() / 2];
        let (after, after_offsets) = concat(&parts[1..4], gz);
        let mut file = first.clone();
        file.extend(cut);
        let at = file.len() as u64;
        file.extend(&after);
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms.len(), 5);
        assert_eq!(ms[1].offset, first.len() as u64);
        assert_eq!(
            ms[1].end,
            Some(at),
            "the cut member ends where the next starts"
        );
        assert!(ms[1].data.starts_with(&big[..1000]));
        for (i, m) in ms[2..].iter().enumerate() {
            assert_eq!(m.offset, at + after_offsets[i]);
            assert_eq!(m.data, parts[i + 1]);
        }
        assert_eq!(kinds(&w), [WarningKind::DamagedMember]);
        assert_eq!(w[0].offset, first.len() as u64);
        assert!(
            w[0].message
                .contains(&format!("resumes at stored offset {at}"))
        );
        // The members after the cut, themselves cut: no whole members to
        // the end, so a truncated member as before.
        let (ms, r, w) = decode(&file[..file.len() - 5], DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms.len(), 2);
        assert_eq!(kinds(&w), [WarningKind::TruncatedMember]);
        // Strict: the cut member is still an error, at its start.
        let (ms, r, _) = decode(&file, strict());
        assert_eq!(codec_offset(&r.unwrap_err()), first.len() as u64);
        assert_eq!(ms.len(), 1);
        // Nothing after the cut: a truncated member, as before; and a magic
        // number in its data that does not start a whole member (a header
        // and nothing more) does not change that.
        let mut file = first.clone();
        file.extend(cut);
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms.len(), 2);
        assert_eq!(kinds(&w), [WarningKind::TruncatedMember]);
        let mut fake = stored.clone();
        fake.splice(1000..1000, gz(b"x")[..10].iter().copied());
        let mut file = first.clone();
        file.extend(&fake[..fake.len() / 2]);
        let (_, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(kinds(&w), [WarningKind::TruncatedMember]);
        // A gzip file archived in the record, kept verbatim in a stored
        // block, and the record cut after it: a whole member inside, but
        // the rest of the record, not members, after it.
        let mut payload = big[..3000].to_vec();
        payload.extend(gz(b"an archived gzip file"));
        // And an archived .warc.gz: a member at each of its records, the
        // candidates passed over as one run.
        for p in parts.iter().cycle().take(300) {
            payload.extend(gz(p));
        }
        payload.extend(&big[..3000]);
        let mut e = GzEncoder::new(Vec::new(), Compression::none());
        e.write_all(&payload).unwrap();
        let stored = e.finish().unwrap();
        let mut file = first.clone();
        file.extend(&stored[..stored.len() - 1000]);
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms.len(), 2);
        assert!(payload.starts_with(&ms[1].data));
        assert_eq!(kinds(&w), [WarningKind::TruncatedMember]);
    }

    /// A member cut inside its trailer (or just before it) with another
    /// written after it: its deflate data ended, so the next member's first
    /// bytes were read as its trailer, which then does not match. It ends
    /// where the next member starts, and that member is read whole.
    #[test]
    fn a_member_cut_in_its_trailer_ends_where_the_next_starts() {
        let parts = records();
        let (a, b, c) = (gz(&parts[0]), gz(&parts[1]), gz(&parts[2]));
        for k in 0..8 {
            let mut file = a.clone();
            file.extend(&b[..b.len() - 8 + k]);
            let at = file.len() as u64;
            file.extend(&c);
            for o in [DecoderOptions::default(), small(64)] {
                let (ms, r, w) = decode(&file, o);
                r.unwrap();
                assert_eq!(ms.len(), 3, "cut {k} bytes into the trailer");
                assert_eq!(ms[1].data, parts[1]);
                assert_eq!(ms[1].end, Some(at));
                assert_eq!((ms[2].offset, &ms[2].data), (at, &parts[2]));
                assert_eq!(kinds(&w), [WarningKind::DamagedMember], "cut at {k}");
                assert_eq!(w[0].offset, a.len() as u64);
                assert!(w[0].message.contains(&format!("{k} bytes into it")));
            }
            let (_, r, _) = decode(&file, strict());
            assert_eq!(codec_offset(&r.unwrap_err()), a.len() as u64);
        }
    }

    /// A gzip member of one final stored block holding `data`, whole.
    fn stored_member(data: &[u8]) -> Vec<u8> {
        stored_blocks_member(&[data])
    }

    /// A gzip member of `blocks`, each a stored block, the last final.
    fn stored_blocks_member(blocks: &[&[u8]]) -> Vec<u8> {
        let mut m = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        for (i, data) in blocks.iter().enumerate() {
            let n = u16::try_from(data.len()).unwrap();
            m.push(u8::from(i + 1 == blocks.len()));
            m.extend(n.to_le_bytes());
            m.extend((!n).to_le_bytes());
            m.extend(*data);
        }
        let all = blocks.concat();
        m.extend(crc32fast::hash(&all).to_le_bytes());
        m.extend((all.len() as u32).to_le_bytes());
        m
    }

    /// A member cut inside its final stored block, with more members
    /// written after it than the rest of the block's length: the block
    /// ends inside them, the next 8 bytes read as its trailer fail, and
    /// reading on after them would lose the members the block ran over.
    /// Whole members run from inside the member past its trailer: it ends
    /// where they start. A member damaged in place (a bit flipped) that
    /// holds a whole gzip file verbatim keeps the old rule.
    #[test]
    fn a_cut_stored_block_run_over_members_after_it_ends_where_they_start() {
        let parts = records();
        let first = gz(&parts[0]);
        let body: Vec<u8> = (0..400u32).map(|i| (i * 7 % 251) as u8).collect();
        let stored = stored_member(&body);
        let (after, after_offsets) = concat(&parts[1..6], gz);
        assert!(after.len() > 400, "the block ends inside what follows");
        let mut file = first.clone();
        file.extend(&stored[..115]);
        let at = file.len() as u64;
        file.extend(&after);
        for o in [DecoderOptions::default(), small(4096)] {
            let (ms, r, w) = decode(&file, o);
            r.unwrap();
            assert_eq!(ms.len(), 7);
            assert_eq!(ms[1].end, Some(at));
            for (i, m) in ms[2..].iter().enumerate() {
                assert_eq!((m.offset, &m.data), (at + after_offsets[i], &parts[i + 1]));
            }
            assert_eq!(kinds(&w), [WarningKind::DamagedMember]);
            assert_eq!(w[0].offset, first.len() as u64);
            assert!(
                w[0].message.contains("run on past its end"),
                "{}",
                w[0].message
            );
        }
        // Damaged in place: a whole gzip file inside, then the rest of the
        // record, and a bit flipped; the member is kept whole.
        let mut body = body.clone();
        body.splice(100..100, gz(b"an archived gzip file"));
        let mut stored = stored_member(&body);
        stored[300] ^= 4;
        let mut file = first.clone();
        file.extend(&stored);
        file.extend(&after);
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms.len(), 7);
        assert_eq!(ms[1].data.len(), body.len());
        assert_eq!(kinds(&w), [WarningKind::BadChecksum]);
    }

    #[test]
    fn garbage_between_members_is_skipped_exactly() {
        let a = gz(b"first record");
        let b = gz(b"second record");
        // Garbage with magic numbers whose headers do not parse.
        let junk: &[u8] =
            b"junk\x1f\x8b\x08\xe0more\x28\xb5\x2f\xfd\x08xx\x04\x22\x4d\x18\x40\x40\x00tail";
        let mut file = a.clone();
        file.extend(junk);
        file.extend(&b);
        for o in [DecoderOptions::default(), small(64)] {
            let (ms, r, w) = decode(&file, o);
            r.unwrap();
            assert_eq!(ms.len(), 2);
            assert_eq!(
                ms[0].end,
                Some(a.len() as u64),
                "garbage is not part of the member"
            );
            assert_eq!(ms[1].offset, (a.len() + junk.len()) as u64);
            assert_eq!(ms[1].data, b"second record");
            assert_eq!(kinds(&w), [WarningKind::SkippedBytes]);
            assert_eq!(w[0].offset, a.len() as u64);
            let range = format!("{}..{}", a.len(), a.len() + junk.len());
            assert!(w[0].message.contains(&range), "{}", w[0].message);
        }
        let (ms, r, _) = decode(&file, strict());
        assert_eq!(codec_offset(&r.unwrap_err()), a.len() as u64);
        assert_eq!(ms.len(), 1);
    }

    #[test]
    fn trailing_garbage() {
        let a = gz(b"only record");
        let mut file = a.clone();
        file.extend(b"\0\0\0\nxyz");
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms.len(), 1);
        assert_eq!(kinds(&w), [WarningKind::TrailingGarbage]);
        assert_eq!(w[0].offset, a.len() as u64);
        assert!(w[0].message.starts_with("7 bytes"), "{}", w[0].message);
        let (_, r, _) = decode(&file, strict());
        assert_eq!(codec_offset(&r.unwrap_err()), a.len() as u64);
    }

    #[test]
    fn corrupt_deflate_resyncs_to_the_next_member() {
        let parts = records();
        let (mut file, offsets) = concat(&parts[..4], gz);
        // BFINAL=1, BTYPE=11 (reserved): inflate fails on the first block.
        file[offsets[1] as usize + 10] = 0x07;
        for o in [DecoderOptions::default(), small(64)] {
            let (ms, r, w) = decode(&file, o);
            r.unwrap();
            assert_eq!(kinds(&w), [WarningKind::DamagedMember]);
            assert_eq!(w[0].offset, offsets[1]);
            assert_eq!(ms.len(), 4);
            assert_eq!(ms[1].offset, offsets[1]);
            assert_eq!(
                ms[1].end,
                Some(offsets[2]),
                "damaged member ends at the next one"
            );
            check_members(
                &ms[2..],
                &parts[2..4],
                &offsets[2..],
                file.len(),
                Codec::Gzip,
            );
        }
        let (ms, r, _) = decode(&file, strict());
        assert_eq!(codec_offset(&r.unwrap_err()), offsets[1]);
        assert_eq!(ms.len(), 1);
        // Damage in the last member: it runs to the end.
        let (mut file, offsets) = concat(&parts[..2], gz);
        file[offsets[1] as usize + 10] = 0x07;
        let (ms, _, w) = decode(&file, DecoderOptions::default());
        assert_eq!(kinds(&w), [WarningKind::DamagedMember]);
        assert_eq!(ms[1].end, Some(file.len() as u64));
    }

    #[test]
    fn empty_gzip_members_in_linear_time() {
        let one = gz(b"");
        let n = 100_000;
        let file = one.repeat(n);
        let mut d = Decoder::new(&file[..], DecoderOptions::default());
        let mut count = 0u64;
        while d.next_member().unwrap() {
            assert!(d.fill_buf().unwrap().is_empty());
            assert_eq!(d.member_offset(), count * one.len() as u64);
            assert_eq!(d.member_end(), Some((count + 1) * one.len() as u64));
            count += 1;
        }
        assert_eq!(count, n as u64);
        assert_eq!(d.buffer_sizes().0, 1 << 20, "the input buffer did not grow");
    }

    /// Whole-member output buffers are reserved exactly: a large member
    /// after a smaller one does not double the buffer past what is kept
    /// between members (it would be given back, and the next large
    /// member's pages zeroed again).
    #[test]
    fn a_large_members_buffer_is_reserved_exactly() {
        let member = |n: usize| {
            let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            super::super::gz_sl(&data, |s| s, n as u32)
        };
        let (a, b) = (7 << 19, 4 << 20);
        let file = [member(a), member(b)].concat();
        let mut d = Decoder::new(&file[..], DecoderOptions::default());
        for want in [a, b] {
            // One `fill_buf`: the member inflated whole.
            assert_eq!(d.fill_buf().unwrap().len(), want);
            assert!(
                d.out.buf.capacity() < KEEP_OUTPUT,
                "{}",
                d.out.buf.capacity()
            );
            assert!(d.next_member().unwrap() || want == b);
        }
    }

    /// A member of 14 MiB is inflated whole by a decoder alone (one
    /// `fill_buf` gives all of it: the whole-member attempt took it, no
    /// second inflate), and streamed under a smaller bound
    /// (`set_fast_max`).
    #[test]
    fn large_members_are_inflated_whole_when_memory_allows() {
        let data: Vec<u8> = (0..14usize << 20)
            .map(|i| (i % 251) as u8 ^ (i >> 12) as u8)
            .collect();
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        e.write_all(&data).unwrap();
        let file = e.finish().unwrap();
        // A bound below the member's 14 MiB streams it.
        for (max, whole) in [(None, true), (Some(12 << 20), false)] {
            let mut d = Decoder::new(&file[..], DecoderOptions::default());
            if let Some(n) = max {
                d.gzip.set_fast_max(n);
            }
            let mut got = Vec::new();
            let first = d.fill_buf().unwrap().len();
            loop {
                let b = d.fill_buf().unwrap();
                if b.is_empty() {
                    break;
                }
                got.extend_from_slice(b);
                let n = b.len();
                d.consume(n);
            }
            assert_eq!(got, data, "{max:?}");
            assert_eq!(first == data.len(), whole, "{max:?}: first piece {first}");
            assert!(d.gzip_trailer().is_some_and(|t| t.is_ok()));
        }
    }

    #[test]
    fn one_gib_of_zeros_streams_in_bounded_memory() {
        let chunk = vec![0u8; 1 << 20];
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        for _ in 0..1024 {
            e.write_all(&chunk).unwrap();
        }
        let file = e.finish().unwrap();
        eprintln!("1 GiB of zeros: {} bytes gzipped", file.len());
        assert!(file.len() < 16 << 20);
        let mut d = Decoder::new(&file[..], DecoderOptions::default());
        let mut total = 0u64;
        let mut biggest = 0;
        loop {
            let b = d.fill_buf().unwrap();
            if b.is_empty() {
                break;
            }
            let n = b.len();
            biggest = biggest.max(n);
            total += n as u64;
            d.consume(n);
        }
        assert_eq!(total, 1 << 30);
        assert_eq!(d.member_end(), Some(file.len() as u64));
        // The whole-member attempt may use up to FAST_OUTPUT; no more.
        assert!(biggest <= FAST_OUTPUT);
        let (inb, outb) = d.buffer_sizes();
        assert!(inb <= 1 << 20 && outb <= FAST_OUTPUT, "{inb} {outb}");
        let t = d.gzip_trailer().expect("trailer read");
        assert!(t.is_ok() && t.computed_isize == 1 << 30, "{t:?}");
        let mut w = Vec::new();
        d.drain_warnings(&mut w);
        assert!(w.is_empty());
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn multi_frame_zstd_offsets_exact() {
        let parts = records();
        let (file, offsets) = concat(&parts, zst);
        let ms = decode_clean(&file);
        check_members(&ms, &parts, &offsets, file.len(), Codec::Zstd);
        // A frame bigger than the output buffer, then a small one.
        let big: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i % 251) as u8 ^ (i >> 12) as u8)
            .collect();
        let parts = vec![big, b"small".to_vec()];
        let (file, offsets) = concat(&parts, zst);
        let (ms, r, w) = decode(&file, small(4096));
        r.unwrap();
        assert!(w.is_empty());
        check_members(&ms, &parts, &offsets, file.len(), Codec::Zstd);
    }

    fn skippable(magic: u32, payload: &[u8]) -> Vec<u8> {
        let mut f = magic.to_le_bytes().to_vec();
        f.extend((payload.len() as u32).to_le_bytes());
        f.extend(payload);
        f
    }

    #[cfg(feature = "zstd")]
    fn zst_dict(data: &[u8], dict: &[u8]) -> Vec<u8> {
        zstd::bulk::Compressor::with_dictionary(3, dict)
            .unwrap()
            .compress(data)
            .unwrap()
    }

    /// A seekable decoder started inside a file whose first frame is the
    /// dictionary frame loads that dictionary first: every frame decodes
    /// from its own offset, as from the start.
    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_dictionary_frame_at_an_offset() {
        let parts = records();
        let dict = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: ".repeat(20);
        for payload in [dict.clone(), zst(&dict)] {
            let frame = skippable(zstd_frame::DICT_FRAME_MAGIC, &payload);
            let (rest, offsets) = concat(&parts, |p| zst_dict(p, &dict));
            let mut file = frame.clone();
            file.extend(&rest);
            for (i, o) in offsets.iter().enumerate() {
                let at = o + frame.len() as u64;
                let mut c = std::io::Cursor::new(&file[..]);
                c.set_position(at);
                let opts = DecoderOptions {
                    start_offset: at,
                    lenient: false,
                    ..DecoderOptions::default()
                };
                let mut d = Decoder::new_seekable(c, opts).unwrap();
                assert!(d.next_member().unwrap());
                assert_eq!(d.member_offset(), at);
                assert_eq!(read_member(&mut d).unwrap(), parts[i], "frame {i}");
            }
        }
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_dictionary_frame() {
        let parts = records();
        let samples: Vec<Vec<u8>> = (0..400)
            .map(|i| format!("WARC/1.1\r\nWARC-Record-ID: <urn:uuid:{i:08}>\r\nWARC-Type: response\r\nContent-Length: {}\r\n\r\n", i * 31).into_bytes())
            .collect();
        let trained = zstd::dict::from_samples(&samples, 2048).unwrap();
        let raw_content = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: ".repeat(20);
        for dict in [trained, raw_content] {
            for payload in [dict.clone(), zst(&dict)] {
                let frame = skippable(zstd_frame::DICT_FRAME_MAGIC, &payload);
                let (rest, offsets) = concat(&parts, |p| zst_dict(p, &dict));
                let mut file = frame.clone();
                file.extend(&rest);
                let offsets: Vec<u64> = offsets.iter().map(|o| o + frame.len() as u64).collect();
                let ms = decode_clean(&file);
                check_members(&ms, &parts, &offsets, file.len(), Codec::Zstd);
                // Without the frame, the caller's dictionary does it.
                let with = DecoderOptions {
                    zstd_dictionary: Some(dict.clone()),
                    ..DecoderOptions::default()
                };
                let (ms, r, w) = decode(&rest, with);
                r.unwrap();
                assert!(w.is_empty(), "{w:?}");
                assert_eq!(ms.iter().map(|m| m.data.clone()).collect::<Vec<_>>(), parts);
            }
        }
        // Other skippable frames are skipped, and not members.
        let mut file = skippable(0x184D_2A50, b"anything");
        file.extend(zst(b"x"));
        let ms = decode_clean(&file);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].offset, 16);
        // A dictionary frame over the limit is ignored, with a warning.
        let dict = b"some dictionary bytes".repeat(10);
        let mut file = skippable(zstd_frame::DICT_FRAME_MAGIC, &dict);
        file.extend(zst_dict(b"needs the dictionary", &dict));
        let limited = DecoderOptions {
            max_zstd_dictionary_size: 100,
            ..DecoderOptions::default()
        };
        let (_, r, w) = decode(&file, limited);
        r.unwrap();
        assert_eq!(w.first().map(|w| w.kind), Some(WarningKind::DamagedMember));
    }

    /// A zstd frame with window log `log`, holding `hello` in a raw block.
    #[cfg(feature = "zstd")]
    fn windowed_frame(log: u8) -> Vec<u8> {
        let mut f = zstd_frame::MAGIC.to_vec();
        f.push(0x00); // no content size, not single segment, no checksum
        f.push((log - 10) << 3);
        f.extend([(5 << 3) | 1, 0, 0]); // last raw block, 5 bytes
        f.extend(b"hello");
        f
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_huge_window_is_rejected() {
        let f = windowed_frame(23);
        let ms = decode_clean(&f);
        assert_eq!(ms[0].data, b"hello");
        let limited = DecoderOptions {
            max_zstd_window_log: 22,
            ..strict()
        };
        let (_, r, _) = decode(&f, limited);
        let e = r.unwrap_err();
        assert_eq!(codec_offset(&e), 0);
        assert!(e.to_string().contains("window"), "{e}");
        let mut file = windowed_frame(30);
        file.extend(zst(b"after"));
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(kinds(&w), [WarningKind::DamagedMember]);
        assert_eq!(ms.last().map(|m| &m.data[..]), Some(&b"after"[..]));
        assert_eq!(
            ms.last().map(|m| m.offset),
            Some(windowed_frame(30).len() as u64)
        );
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_truncated_and_corrupt() {
        let parts = records();
        // With the frame checksum, so that any corruption is seen.
        let zst_sum = |p: &[u8]| {
            let mut c = zstd::bulk::Compressor::new(3).unwrap();
            c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
                .unwrap();
            c.compress(p).unwrap()
        };
        let (file, offsets) = concat(&parts[..3], zst_sum);
        let cut = &file[..file.len() - 4];
        let (ms, r, w) = decode(cut, DecoderOptions::default());
        r.unwrap();
        assert_eq!(kinds(&w), [WarningKind::TruncatedMember]);
        assert_eq!(ms[2].end, Some(cut.len() as u64));
        let (_, r, _) = decode(cut, strict());
        assert_eq!(codec_offset(&r.unwrap_err()), offsets[2]);
        let mut bad = file.clone();
        let mid = offsets[1] as usize + (offsets[2] - offsets[1]) as usize / 2;
        for b in &mut bad[mid..mid + 8] {
            *b ^= 0xa5;
        }
        let (ms, r, w) = decode(&bad, DecoderOptions::default());
        r.unwrap();
        assert!(kinds(&w).contains(&WarningKind::DamagedMember), "{w:?}");
        assert_eq!(ms.last().map(|m| m.offset), Some(offsets[2]));
        assert_eq!(ms.last().map(|m| &m.data), Some(&parts[2]));
    }

    /// An LZ4 frame made with the block API. `bd` is the block size code
    /// (4..=7).
    fn lz4_frame(
        data: &[u8],
        bd: u8,
        linked: bool,
        block_sum: bool,
        content_sum: bool,
        size: bool,
    ) -> Vec<u8> {
        let block_max = [64 << 10, 256 << 10, 1 << 20, 4 << 20][usize::from(bd - 4)];
        let flg = 0x40
            | if linked { 0 } else { 0x20 }
            | if block_sum { 0x10 } else { 0 }
            | if size { 0x08 } else { 0 }
            | if content_sum { 0x04 } else { 0 };
        let mut f = lz4::MAGIC.to_vec();
        f.extend([flg, bd << 4]);
        if size {
            f.extend((data.len() as u64).to_le_bytes());
        }
        let hc = (lz4::xxh32(&f[4..], 0) >> 8) as u8;
        f.push(hc);
        let mut at = 0usize;
        for chunk in data.chunks(block_max) {
            let packed = if linked {
                lz4_flex::block::compress_with_dict(
                    chunk,
                    &data[at.saturating_sub(lz4::HISTORY)..at],
                )
            } else {
                lz4_flex::block::compress(chunk)
            };
            let (word, block) = if packed.len() < chunk.len() {
                (packed.len() as u32, &packed[..])
            } else {
                (chunk.len() as u32 | 0x8000_0000, chunk)
            };
            f.extend(word.to_le_bytes());
            f.extend(block);
            if block_sum {
                f.extend(lz4::xxh32(block, 0).to_le_bytes());
            }
            at += chunk.len();
        }
        f.extend([0; 4]);
        if content_sum {
            f.extend(lz4::xxh32(data, 0).to_le_bytes());
        }
        f
    }

    #[cfg(feature = "lz4")]
    fn mixed_data(n: usize) -> Vec<u8> {
        let text = records().concat();
        let mut seed = 0x1234_5678u32;
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            // Text (compressible, with long-distance repeats) and runs of
            // noise (stored blocks).
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            if seed.is_multiple_of(5) {
                for _ in 0..3000 {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    v.push((seed >> 16) as u8);
                }
            } else {
                v.extend(&text[..(seed as usize >> 8) % text.len()]);
            }
        }
        v.truncate(n);
        v
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn lz4_frames_offsets_exact() {
        let parts = vec![
            mixed_data(300_000),
            Vec::new(),
            b"tiny".to_vec(),
            vec![0; 70_000],
            mixed_data(100_000)
                .iter()
                .map(|b| b.wrapping_add(1))
                .collect(),
        ];
        for (bd, linked, bs, cs, size) in [
            (4, true, true, true, true),
            (4, false, false, false, false),
            (5, true, false, true, false),
            (7, false, true, false, true),
        ] {
            let (file, offsets) = concat(&parts, |p| lz4_frame(p, bd, linked, bs, cs, size));
            let ms = decode_clean(&file);
            check_members(&ms, &parts, &offsets, file.len(), Codec::Lz4);
        }
        // Corrupt content checksum, block checksum, truncation.
        let (file, offsets) = concat(&parts[..1], |p| lz4_frame(p, 4, true, true, true, true));
        let mut bad = file.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let (ms, r, w) = decode(&bad, DecoderOptions::default());
        r.unwrap();
        assert_eq!(ms[0].data, parts[0]);
        assert_eq!(kinds(&w), [WarningKind::BadChecksum]);
        assert_eq!(w[0].offset, offsets[0]);
        let (_, r, _) = decode(&bad, strict());
        assert!(r.is_err());
        let cut = &file[..file.len() / 2];
        let (ms, r, w) = decode(cut, DecoderOptions::default());
        r.unwrap();
        assert_eq!(kinds(&w), [WarningKind::TruncatedMember]);
        assert!(parts[0].starts_with(&ms[0].data) && !ms[0].data.is_empty());
        let mut bad = file.clone();
        bad[100] ^= 0x10;
        let (_, r, w) = decode(&bad, DecoderOptions::default());
        r.unwrap();
        assert!(kinds(&w).contains(&WarningKind::BadChecksum), "{w:?}");
    }

    #[cfg(all(feature = "zstd", feature = "lz4"))]
    #[test]
    fn mixed_codecs_in_one_file() {
        let parts = records();
        let mut file = Vec::new();
        let mut offsets = Vec::new();
        let mut codecs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            offsets.push(file.len() as u64);
            let (m, c) = match i % 3 {
                0 => (gz(p), Codec::Gzip),
                1 => (zst(p), Codec::Zstd),
                _ => (lz4_frame(p, 4, true, false, true, false), Codec::Lz4),
            };
            file.extend(m);
            codecs.push(c);
        }
        let ms = decode_clean(&file);
        assert_eq!(ms.iter().map(|m| m.codec).collect::<Vec<_>>(), codecs);
        for (i, m) in ms.iter().enumerate() {
            assert_eq!(m.offset, offsets[i]);
            assert_eq!(m.data, parts[i]);
        }
    }

    /// A zstd or LZ4 frame (or a zstd dictionary frame) without its
    /// feature: an error that names the feature, lenient or strict, after
    /// the members before it; never a panic, never skipped as damage.
    #[test]
    fn codecs_not_compiled_in_are_errors() {
        let parts = records();
        let zstd_msg = "zstd support not compiled in (feature zstd)";
        let lz4_msg = "LZ4 support not compiled in (feature lz4)";
        let zstd_on = cfg!(feature = "zstd");
        let mut cases = vec![
            (zst(&parts[1]), zstd_msg, zstd_on),
            (
                lz4_frame(&parts[1], 4, true, true, true, true),
                lz4_msg,
                cfg!(feature = "lz4"),
            ),
        ];
        if !zstd_on {
            let dict = skippable(zstd_frame::DICT_FRAME_MAGIC, b"a raw zstd dictionary");
            cases.push((dict, zstd_msg, false));
        }
        for (frame, msg, on) in cases {
            let mut file = gz(&parts[0]);
            file.extend(&frame);
            file.extend(gz(&parts[2]));
            for o in [DecoderOptions::default(), strict(), small(64)] {
                let (ms, r, w) = decode(&file, o.clone());
                assert!(w.is_empty(), "{w:?}");
                if on {
                    r.unwrap();
                    assert_eq!(ms.len(), 3);
                    continue;
                }
                let e = r.unwrap_err();
                assert!(e.to_string().contains(msg), "{e}");
                assert_eq!(ms.len(), 1, "{e}");
                assert_eq!(ms[0].data, parts[0]);
                // And it stays failed.
                let mut d = Decoder::new(&file[..], o);
                let mut v = Vec::new();
                assert!(collect(&mut d, &mut v).is_err());
                assert!(d.next_member().is_err());
                assert!(d.fill_buf().is_err());
            }
        }
        // Other skippable frames are skipped, with the feature or not.
        let mut file = skippable(0x184D_2A50, b"not a dictionary");
        file.extend(gz(&parts[0]));
        let ms = decode_clean(&file);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].data, parts[0]);
    }

    /// `parts` as gzip, zstd and LZ4 members in turn; `linked` says which
    /// LZ4 frames have linked blocks, by index.
    fn mixed_members(parts: &[Vec<u8>], linked: impl Fn(usize) -> bool) -> Vec<u8> {
        let mut file = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            file.extend(match i % 3 {
                0 => gz(p),
                1 => zst(p),
                _ => lz4_frame(p, 4, linked(i), true, true, true),
            });
        }
        file
    }

    #[test]
    fn damaged_inputs_never_panic_and_stay_bounded() {
        let parts = records();
        let file = mixed_members(&parts, |i| i % 2 == 0);
        let total: usize = parts.iter().map(Vec::len).sum();
        let mut seed = 99u64;
        for round in 0..300 {
            let mut bad = file.clone();
            for _ in 0..1 + round % 4 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let at = (seed >> 33) as usize % bad.len();
                bad[at] ^= (seed >> 20) as u8 | 1;
            }
            if round % 5 == 0 {
                bad.truncate((seed >> 40) as usize % bad.len());
            }
            for o in [DecoderOptions::default(), strict(), small(64)] {
                let (ms, _, _) = decode(&bad, o);
                let out: usize = ms.iter().map(|m| m.data.len()).sum();
                // Resync may decode some bytes twice; never much more.
                assert!(out <= 3 * total + (1 << 20), "round {round}: {out}");
                for w in ms.windows(2) {
                    assert!(w[0].offset < w[1].offset);
                    assert!(
                        w[0].end.is_some_and(|e| e <= w[1].offset),
                        "{:?}",
                        (w[0].end, w[1].offset)
                    );
                }
                for m in &ms {
                    assert!(m.end.is_some_and(|e| e > m.offset && e <= bad.len() as u64));
                }
            }
        }
    }

    /// A reader failing with a (non-`Interrupted`) error every few calls.
    #[cfg(all(feature = "zstd", feature = "lz4"))]
    struct Flaky<'a> {
        data: &'a [u8],
        calls: usize,
    }

    #[cfg(all(feature = "zstd", feature = "lz4"))]
    impl Read for Flaky<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(io::Error::other("flaky"));
            }
            let n = 7.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// Retries each call until it does not fail with an I/O error.
    #[cfg(all(feature = "zstd", feature = "lz4"))]
    fn retry<T>(mut f: impl FnMut() -> crate::Result<T>) -> T {
        for _ in 0..1000 {
            match f() {
                Ok(v) => return v,
                Err(e) => assert!(e.is_io_error(), "{e}"),
            }
        }
        panic!("no progress")
    }

    /// Every member of `input`, read through [`Flaky`] with a buffer of
    /// `buffer` bytes, each failed call repeated; and the warnings.
    #[cfg(all(feature = "zstd", feature = "lz4"))]
    fn read_flaky(input: &[u8], buffer: usize) -> (Vec<M>, Vec<Warning>) {
        let mut d = Decoder::new(
            Flaky {
                data: input,
                calls: 0,
            },
            small(buffer),
        );
        let mut ms = Vec::new();
        while retry(|| d.next_member()) {
            let mut data = Vec::new();
            loop {
                let chunk = retry(|| d.fill_buf().map(<[u8]>::to_vec));
                if chunk.is_empty() {
                    break;
                }
                data.extend_from_slice(&chunk);
                d.consume(chunk.len());
            }
            ms.push(M {
                offset: d.member_offset(),
                end: d.member_end(),
                codec: d.codec(),
                data,
            });
        }
        let mut w = Vec::new();
        d.drain_warnings(&mut w);
        (ms, w)
    }

    /// The recoveries of a member cut in its trailer or in a stored block,
    /// which read back or ahead, give the same members and warnings when
    /// reads fail now and then and are repeated.
    #[cfg(all(feature = "zstd", feature = "lz4"))]
    #[test]
    fn io_errors_in_a_cut_members_recovery_can_be_retried() {
        let parts = records();
        let (a, b, c) = (gz(&parts[0]), gz(&parts[1]), gz(&parts[2]));
        let (after, _) = concat(&parts[1..6], gz);
        let body: Vec<u8> = (0..400u32).map(|i| (i * 7 % 251) as u8).collect();
        let stored = stored_member(&body);
        // The stored block's case needs the cut member's start still
        // buffered when its trailer fails: not in 64 bytes.
        let mut files = Vec::new();
        for k in 0..8 {
            files.push(([&a[..], &b[..b.len() - 8 + k], &c].concat(), 64));
        }
        files.push(([&a[..], &stored[..115], &after].concat(), 4096));
        for (file, buffer) in files {
            let (want, r, want_w) = decode(&file, small(buffer));
            r.unwrap();
            assert_eq!(kinds(&want_w), [WarningKind::DamagedMember]);
            let (ms, w) = read_flaky(&file, buffer);
            assert_eq!(ms, want);
            assert_eq!(w, want_w);
        }
    }

    #[cfg(all(feature = "zstd", feature = "lz4"))]
    #[test]
    fn io_errors_can_be_retried() {
        let parts = records();
        let file = mixed_members(&parts, |_| true);
        let clean = decode_clean(&file);
        for input in [&file[..], &parts.concat()[..]] {
            let (ms, w) = read_flaky(input, 64);
            assert!(w.is_empty(), "{w:?}");
            if input.len() == file.len() {
                assert_eq!(ms, clean);
            } else {
                assert_eq!(ms.len(), 1);
                assert_eq!(ms[0].data, input);
            }
        }
    }

    #[test]
    fn damage_seen_late_resyncs_from_the_member_start() {
        // A member cut short runs into the next one: inflate reads the next
        // member's bytes as its own and fails only there. The next member
        // is found again by searching from the damaged member's start.
        let parts = records();
        let a = gz(&parts[5]);
        let b = gz(&parts[6]);
        let c = gz(&parts[7]);
        let mut file = a[..a.len() / 2].to_vec();
        let b_at = file.len() as u64;
        file.extend(&b);
        file.extend(&c);
        let (ms, r, w) = decode(&file, DecoderOptions::default());
        r.unwrap();
        assert_eq!(
            w.first().map(|w| (w.kind, w.offset)),
            Some((WarningKind::DamagedMember, 0))
        );
        assert_eq!(ms.len(), 3, "{w:?}");
        assert_eq!(ms[0].end, Some(b_at));
        assert_eq!((ms[1].offset, &ms[1].data), (b_at, &parts[6]));
        assert_eq!(ms[2].data, parts[7]);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn lz4_blocks_larger_than_the_input_buffer() {
        let mut seed = 5u32;
        let data: Vec<u8> = (0..5_000_000)
            .map(|i| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                if i % 3 == 0 { (seed >> 24) as u8 } else { b'a' }
            })
            .collect();
        let frame = lz4_frame(&data, 7, true, true, true, true);
        let mut d = Decoder::new(&frame[..], DecoderOptions::default());
        assert_eq!(read_member(&mut d).unwrap(), data);
        assert_eq!(d.member_end(), Some(frame.len() as u64));
        let (inb, outb) = d.buffer_sizes();
        assert!(inb > 1 << 20 && inb <= lz4::MAX_BLOCK + 8, "{inb}");
        assert!(outb <= lz4::MAX_BLOCK + lz4::HISTORY, "{outb}");
    }

    fn fixture(path: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures")
            .join(path);
        std::fs::read(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
    }

    fn all_bytes(ms: &[M]) -> Vec<u8> {
        ms.iter().flat_map(|m| m.data.iter().copied()).collect()
    }

    fn multigz(file: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        flate2::read::MultiGzDecoder::new(file)
            .read_to_end(&mut v)
            .unwrap();
        v
    }

    fn contiguous(ms: &[M], len: usize) {
        assert_eq!(ms.first().map(|m| m.offset), Some(0));
        for w in ms.windows(2) {
            assert_eq!(w[0].end, Some(w[1].offset));
        }
        assert_eq!(ms.last().and_then(|m| m.end), Some(len as u64));
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn resiliparse_fixtures_agree() {
        for name in ["warcfile.warc", "block-sized-records.warc"] {
            let gzf = fixture(&format!("resiliparse/{name}.gz"));
            let lzf = fixture(&format!("resiliparse/{name}.lz4"));
            let g = decode_clean(&gzf);
            let l = decode_clean(&lzf);
            contiguous(&g, gzf.len());
            contiguous(&l, lzf.len());
            assert!(g.iter().all(|m| m.codec == Codec::Gzip));
            assert!(l.iter().all(|m| m.codec == Codec::Lz4));
            let gb = all_bytes(&g);
            assert_eq!(gb, multigz(&gzf));
            assert_eq!(gb, all_bytes(&l));
            assert!(gb.starts_with(b"WARC/1."));
            if name == "block-sized-records.warc" {
                assert_eq!(gb, fixture("resiliparse/block-sized-records.warc"));
            }
        }
    }

    /// Members of a file read with `new_file`, which maps plain files (and
    /// compressed ones where the map is the cheaper).
    fn decode_file(path: &std::path::Path, o: DecoderOptions) -> (Vec<M>, bool) {
        let (v, res, _, mapped) = decode_file_all(path, o);
        res.unwrap();
        (v, mapped)
    }

    /// [`decode_file`] up to an error, with the error and the warnings.
    fn decode_file_all(
        path: &std::path::Path,
        o: DecoderOptions,
    ) -> (Vec<M>, crate::Result<()>, Vec<Warning>, bool) {
        let f = std::fs::File::open(path).unwrap();
        let mut d = Decoder::new_file(f, o).unwrap();
        let mapped = d.input.is_mapped();
        let mut v = Vec::new();
        let res = collect(&mut d, &mut v);
        let mut w = Vec::new();
        d.drain_warnings(&mut w);
        (v, res, w, mapped)
    }

    /// Runs `f` with every map first asked on this thread whether it is the
    /// cheaper way to read answering `cheap`.
    #[cfg(all(target_os = "linux", feature = "mmap"))]
    fn maps_cheap<T>(cheap: bool, f: impl FnOnce() -> T) -> T {
        super::super::map::CHEAP_ON_THIS_THREAD.set(Some(cheap));
        let t = f();
        super::super::map::CHEAP_ON_THIS_THREAD.set(None);
        t
    }

    /// A compressed file decoded on the caller's thread is read from its
    /// map where the map is the cheaper way, through the buffer otherwise,
    /// and on threads its jobs have the map; damaged or not, the mapped
    /// read gives what a reader gives: members, their ends, the error and
    /// the warnings.
    #[cfg(all(target_os = "linux", feature = "mmap"))]
    #[test]
    fn compressed_files_are_mapped_where_cheaper_and_decode_as_from_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("members.warc.gz");
        let parts = records();
        let file = mixed_members(&parts, |i| i % 2 == 0);
        std::fs::write(&path, &file).unwrap();
        for cheap in [false, true] {
            let (_, mapped) = maps_cheap(cheap, || decode_file(&path, small(64)));
            assert_eq!(mapped, cheap);
        }
        let threads = DecoderOptions {
            threads: 2,
            ..DecoderOptions::default()
        };
        let (_, mapped) = maps_cheap(true, || decode_file(&path, threads));
        let engine = super::super::parallel::ENABLED;
        assert_eq!(mapped, !engine, "on threads, the jobs have the map");
        let mut seed = 7u64;
        for round in 0..150 {
            let mut bad = file.clone();
            for _ in 0..round % 4 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let at = (seed >> 33) as usize % bad.len();
                bad[at] ^= (seed >> 20) as u8 | 1;
            }
            if round % 5 == 4 {
                bad.truncate((seed >> 40) as usize % bad.len());
            }
            std::fs::write(&path, &bad).unwrap();
            for o in [DecoderOptions::default(), strict(), small(64)] {
                let (want, want_res, want_w) = decode(&bad, o.clone());
                let (got, res, w, mapped) = maps_cheap(true, || decode_file_all(&path, o.clone()));
                assert!(mapped || bad.is_empty(), "round {round}");
                assert!(got == want, "round {round}: members differ");
                assert_eq!(
                    res.map_err(|e| e.to_string()),
                    want_res.map_err(|e| e.to_string()),
                    "round {round}"
                );
                // Where a decompressor notices damage (the messages' "at
                // about") moves with the input it is given at once, which
                // a map and a small buffer (grown or not) do not share.
                let what = |w: &[Warning]| w.iter().map(|w| (w.kind, w.offset)).collect::<Vec<_>>();
                assert_eq!(what(&w), what(&want_w), "round {round}");
                if o.buffer_size >= bad.len() {
                    assert_eq!(
                        inflaters_words_out(w),
                        inflaters_words_out(want_w),
                        "round {round}"
                    );
                }
            }
        }
    }

    /// A compressed file read from its map that shrinks under a paused
    /// reader is an error saying so, lenient or strict, whether the cut is
    /// inside the window the reader checked (its bytes past the cut are
    /// read as zeros, then the size check or the fault's flag tells) or
    /// past it; never a crash, nor damage reported for it.
    #[cfg(all(target_os = "linux", feature = "mmap"))]
    #[test]
    fn a_mapped_compressed_file_that_shrinks_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinking.warc.gz");
        let mut parts = noisy_records(200, 30_000);
        let mut seed = 1u64;
        parts[20] = records()[0].clone();
        parts[20].extend((0..400_000).map(|_| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            b'0' + (seed >> 58) as u8
        }));
        let mut members: Vec<Vec<u8>> = parts.iter().map(|p| gz(p)).collect();
        // Member 21 is stored, in two blocks, the first holding an archived
        // gzip file: a member start that a resync finds before a cut.
        let mut first = records()[1].clone();
        first.extend(gz(b"an archived file"));
        first.extend(vec![b'x'; 60_000]);
        members[21] = stored_blocks_member(&[&first, b"the second block"]);
        let offsets: Vec<u64> = members
            .iter()
            .scan(0, |at, m| {
                let here = *at;
                *at += m.len() as u64;
                Some(here)
            })
            .collect();
        let file = members.concat();
        assert!(offsets[21] - offsets[20] > 100_000);
        /// Where the reader pauses before the file is cut.
        #[derive(Debug, Clone, Copy)]
        enum Pause {
            /// After 20 members; the file cut 200 KiB on, past the window
            /// of a 16 KiB buffer (the size check when the window moves).
            PastTheWindow,
            /// Inside the large member; the file cut 100 bytes on, inside
            /// the window (the bytes after read as zeros).
            InsideAMember,
            /// After a member, with 300 KB or more in the window; the file
            /// cut inside the next member's trailer, which then reads as
            /// zeros and would be a checksum warning.
            BeforeATrailer,
            /// As `BeforeATrailer`; the file cut 2 bytes into the next
            /// member, whose header then reads as no member's (strict:
            /// the decoder's own failure).
            BeforeAHeader,
            /// After 21 members, inflated by zlib-rs alone; the file cut
            /// inside the stored member's first block, past the archived
            /// file, so that the next block's header reads as zeros: a
            /// damaged member, and a resync to the archived file.
            BeforeAResync,
        }
        for lenient in [true, false] {
            for pause in [
                Pause::PastTheWindow,
                Pause::InsideAMember,
                Pause::BeforeATrailer,
                Pause::BeforeAHeader,
                Pause::BeforeAResync,
            ] {
                let case = format!("{lenient} {pause:?}");
                std::fs::write(&path, &file).unwrap();
                let f = std::fs::File::open(&path).unwrap();
                let o = DecoderOptions {
                    lenient,
                    buffer_size: match pause {
                        Pause::PastTheWindow => 16 << 10,
                        _ => 1 << 20,
                    },
                    fast_inflate: !matches!(pause, Pause::BeforeAResync),
                    ..DecoderOptions::default()
                };
                let mut d = maps_cheap(true, || Decoder::new_file(f, o).unwrap());
                assert!(d.input.is_mapped());
                let mut read = 0;
                let first_read = if matches!(pause, Pause::BeforeAResync) {
                    21
                } else {
                    20
                };
                while read < first_read
                    || matches!(pause, Pause::BeforeATrailer | Pause::BeforeAHeader)
                        && d.input.avail() < 300_000
                {
                    assert!(d.next_member().unwrap(), "{case}");
                    read_member(&mut d).unwrap();
                    read += 1;
                }
                assert_eq!(d.member_end(), Some(offsets[read]), "{case}");
                let cut = match pause {
                    Pause::PastTheWindow => offsets[read] + (200 << 10),
                    Pause::InsideAMember => {
                        assert!(d.next_member().unwrap());
                        let n = d.fill_buf().unwrap().len();
                        d.consume(n);
                        d.input.pos() + 100
                    }
                    Pause::BeforeATrailer => offsets[read + 1] - 4,
                    Pause::BeforeAHeader => offsets[read] + 2,
                    Pause::BeforeAResync => offsets[read] + 40_000,
                };
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(cut)
                    .unwrap();
                let err = loop {
                    let more = read_member(&mut d).and_then(|_| d.next_member());
                    match more {
                        Ok(true) => {}
                        Ok(false) => panic!("{case}: read to the end"),
                        Err(e) => break e.to_string(),
                    }
                };
                let mut w = Vec::new();
                d.drain_warnings(&mut w);
                assert!(err.contains("shrank"), "{case}: {err}");
                assert!(w.is_empty(), "{case}: {w:?}");
            }
        }
    }

    /// `warnings` with the inflater's own words taken out of their
    /// messages: zlib-rs names the same damage differently by how much
    /// input it was given at once ("repeated call with bad state" for a
    /// member's whole input, "invalid distance too far back" for 83 bytes
    /// of it), and a map gives as much as a buffer of the same size may
    /// have grown to hold.
    #[cfg(all(target_os = "linux", feature = "mmap"))]
    fn inflaters_words_out(mut warnings: Vec<Warning>) -> Vec<Warning> {
        for w in &mut warnings {
            if let Some(rest) = w.message.strip_prefix("corrupt deflate data (")
                && let Some((_, after)) = rest.split_once(')')
            {
                w.message = format!("corrupt deflate data{after}");
            }
        }
        warnings
    }

    /// Bytes in memory read at offsets, failing from `fail_at` on; with
    /// `lend`, lent in blocks of that size (as an object's blocks are).
    struct Mem {
        data: Arc<Vec<u8>>,
        fail_at: u64,
        lend: Option<usize>,
    }

    fn mem(data: &[u8], fail_at: u64, lend: Option<usize>) -> Arc<Mem> {
        Arc::new(Mem {
            data: Arc::new(data.to_vec()),
            fail_at,
            lend,
        })
    }

    impl ReadAt for Mem {
        fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
            if pos >= self.fail_at {
                return Err(io::Error::other("the network is down"));
            }
            let start = usize::try_from(pos)
                .unwrap_or(usize::MAX)
                .min(self.data.len());
            let end = start.saturating_add(buf.len()).min(self.data.len());
            buf[..end - start].copy_from_slice(&self.data[start..end]);
            Ok(end - start)
        }

        fn size(&self) -> io::Result<u64> {
            Ok(self.data.len() as u64)
        }

        fn lend(&self, pos: u64, len: usize) -> Option<crate::io::Lent> {
            let block = self.lend?;
            let from = usize::try_from(pos).ok()?;
            let to = (from / block + 1) * block;
            let to = to.min(from.saturating_add(len));
            if to as u64 > self.fail_at || from >= self.data.len() {
                return None;
            }
            Some(crate::io::Lent::new(self.data.clone(), from, to))
        }
    }

    /// `n` records, each followed by `len` bytes of noise.
    fn noisy_records(n: u32, len: u32) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut r = records()[i as usize % 4].clone();
                r.extend(
                    (0..len).map(|k| (k.wrapping_mul(2_654_435_761).wrapping_add(i) >> 13) as u8),
                );
                r
            })
            .collect()
    }

    /// A `ReadAt` source decodes as the same bytes read in order, on one
    /// thread or several (whose jobs then serve members), and a read error
    /// names the source and the offset.
    #[test]
    fn read_at_sources_decode_as_a_reader_on_any_thread_count() {
        // Members big enough that several jobs' chunks hold some.
        let parts: Vec<Vec<u8>> = noisy_records(60, 20_000)
            .into_iter()
            // Incompressible members of 100-200 KB: some run past the bytes
            // lent to their job, which are then copied.
            .chain((0..8u64).map(|i| {
                let mut r = records()[i as usize % 4].clone();
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ i;
                r.extend((0..100_000 + i * 13_000).map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                }));
                r
            }))
            .collect();
        // The big members spread among the small ones.
        let mut parts = parts;
        for i in 0..8 {
            let big = parts.remove(60);
            parts.insert(4 + i * 8, big);
        }
        let (file, _) = concat(&parts, gz);
        let want = decode_clean(&file);
        // Members served by jobs when copied, per thread count: a job given
        // lent bytes must serve the same ones.
        #[cfg(feature = "parallel")]
        let mut copied = std::collections::HashMap::new();
        // Lent in blocks (the jobs' chunks within a block and across two,
        // read past the bytes lent), or copied.
        for lend in [None, Some(700_000), Some(1 << 20)] {
            for threads in [1, 2, 3] {
                let src = mem(&file, u64::MAX, lend);
                let opts = DecoderOptions {
                    threads,
                    ..DecoderOptions::default()
                };
                let mut d = Decoder::new_read_at(src.clone(), "mem://x", opts).unwrap();
                let mut got = Vec::new();
                collect(&mut d, &mut got).unwrap();
                assert_eq!(got, want, "threads {threads}, {lend:?}");
                #[cfg(feature = "parallel")]
                {
                    let served = d.par.as_ref().map_or(0, |p| p.served());
                    assert_eq!(served > 0, threads > 1, "threads {threads}: {served}");
                    let kept = d.par.as_ref().map_or(0, |p| p.lends_kept());
                    assert_eq!(kept > 0, threads > 1 && lend.is_some(), "{lend:?}");
                    let generic = d.par.as_ref().map_or(0, |p| p.generic_lent());
                    assert_eq!(generic, 0, "{lend:?}");
                    match lend {
                        None => {
                            copied.insert(threads, served);
                        }
                        Some(_) => assert_eq!(
                            Some(&served),
                            copied.get(&threads),
                            "threads {threads}, {lend:?}: members served"
                        ),
                    }
                }
            }
        }
        for (threads, lend) in [(1, None), (2, None), (2, Some(300_000))] {
            let src = mem(&file, file.len() as u64 / 2, lend);
            let opts = DecoderOptions {
                threads,
                lenient: false,
                ..DecoderOptions::default()
            };
            let mut d = Decoder::new_read_at(src, "mem://x", opts).unwrap();
            let mut got = Vec::new();
            let e = collect(&mut d, &mut got).unwrap_err().to_string();
            assert!(e.contains("mem://x: at byte "), "{e}");
            assert!(e.contains("the network is down"), "{e}");
            assert!(got.len() < want.len());
        }
    }

    /// Members the direct gzip path does not take (zstd, gzip headers
    /// longer than the bytes read) go to the generic decoder, which reads
    /// through the source: the job's lent block is given back first, so
    /// that a job never holds a block while it waits for another.
    #[cfg(feature = "parallel")]
    #[test]
    fn the_generic_path_holds_no_lent_block() {
        let parts = noisy_records(40, 30_000);
        let (file, _) = concat(&parts, zst);
        let want = decode_clean(&file);
        for threads in [2, 3] {
            let src = mem(&file, u64::MAX, Some(1 << 20));
            let opts = DecoderOptions {
                threads,
                ..DecoderOptions::default()
            };
            let mut d = Decoder::new_read_at(src, "mem://x", opts).unwrap();
            let mut got = Vec::new();
            collect(&mut d, &mut got).unwrap();
            assert_eq!(got, want, "threads {threads}");
            let p = d.par.as_ref().unwrap();
            assert!(p.served() > 0, "threads {threads}");
            assert!(p.lends_kept() > 0, "threads {threads}");
            assert_eq!(p.generic_lent(), 0, "threads {threads}");
        }
    }

    #[test]
    fn plain_files_are_mapped_and_decode_as_from_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let plain = records().concat();
        let mut appended = plain.clone();
        appended.extend(gz(&records()[3]));
        let (gzip, _) = concat(&records(), gz);
        for (name, data, want_map) in [
            ("plain.warc", &plain, true),
            ("appended.warc", &appended, true),
            ("members.warc.gz", &gzip, false),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, data).unwrap();
            let want = decode_clean(data);
            for size in [64, 100, 1 << 20] {
                let (got, mapped) = decode_file(&path, small(size));
                assert_eq!(
                    mapped,
                    want_map && cfg!(all(target_os = "linux", feature = "mmap"))
                );
                assert_eq!(got, want, "{name} {size}");
            }
        }
        // Skips go past the window without reading, never past the end.
        let path = dir.path().join("plain.warc");
        let f = std::fs::File::open(&path).unwrap();
        let mut d = Decoder::new_file(f, small(64)).unwrap();
        assert!(!d.fill_buf().unwrap().is_empty());
        assert_eq!(d.skip(1000).unwrap(), 1000);
        assert_eq!(d.member_pos(), 1000);
        assert_eq!(d.fill_buf().unwrap()[..], plain[1000..1000 + 64]);
        let rest = (plain.len() - 1000) as u64;
        assert_eq!(d.skip(u64::MAX).unwrap(), rest);
        assert!(d.fill_buf().unwrap().is_empty());
        assert_eq!(d.member_end(), Some(plain.len() as u64));
    }

    /// Direct reads of a plain file (a mapped one or one read through the
    /// buffer) give the file's bytes, mixed with buffered reads and skips;
    /// the first one lets the map go unless the map is the cheaper way
    /// (never for a file this small, forced here), and none is made while
    /// bytes are buffered or in a compressed member.
    #[test]
    fn direct_reads_give_the_files_bytes_and_let_the_map_go() {
        let mapping = cfg!(all(target_os = "linux", feature = "mmap"));
        let keeps: &[bool] = if mapping { &[false, true] } else { &[false] };
        for &keep in keeps {
            #[cfg(all(target_os = "linux", feature = "mmap"))]
            maps_cheap(keep, || direct_reads_give_the_files_bytes(keep));
            #[cfg(not(all(target_os = "linux", feature = "mmap")))]
            direct_reads_give_the_files_bytes(keep);
        }
    }

    fn direct_reads_give_the_files_bytes(keep: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.warc");
        let data: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        for size in [64, 100_000, 1 << 20] {
            let f = std::fs::File::open(&path).unwrap();
            let mut d = Decoder::new_file(f, small(size)).unwrap();
            let mapped = d.input.is_mapped();
            assert_eq!(mapped, cfg!(all(target_os = "linux", feature = "mmap")));
            let mut got = Vec::new();
            let mut out = vec![0u8; 70_000];
            let mut turn = 0u32;
            let mut direct = 0;
            loop {
                turn += 1;
                if turn.is_multiple_of(7) {
                    let k = d.skip(12_345).unwrap();
                    let at = got.len();
                    got.extend_from_slice(&data[at..at + k as usize]);
                    continue;
                }
                if turn.is_multiple_of(3) {
                    let b = d.fill_buf().unwrap();
                    if b.is_empty() {
                        break;
                    }
                    let n = b.len().min(5_000);
                    got.extend_from_slice(&b[..n]);
                    d.consume(n);
                    continue;
                }
                match d.read_direct(&mut out).unwrap() {
                    Some(n) => {
                        assert!(!keep, "{size}: a kept map is read through the window");
                        assert!(n > 0 && n <= out.len());
                        assert!(!d.input.is_mapped(), "{size}");
                        got.extend_from_slice(&out[..n]);
                        direct += 1;
                    }
                    None => {
                        // Only while bytes are buffered, or at the end.
                        let b = d.fill_buf().unwrap();
                        if b.is_empty() {
                            break;
                        }
                        let n = b.len();
                        got.extend_from_slice(b);
                        d.consume(n);
                    }
                }
                assert_eq!(d.member_pos(), got.len() as u64, "{size}");
            }
            assert_eq!(got.len(), data.len(), "{size}");
            assert!(got == data, "{size}");
            if keep {
                assert!(d.input.is_mapped(), "{size}");
            } else {
                assert!(direct >= 2, "{size}: {direct} direct reads");
            }
            assert_eq!(d.member_end(), Some(data.len() as u64));
        }
        // Compressed members are never read directly.
        let (gzip, _) = concat(&records(), gz);
        let path = dir.path().join("members.warc.gz");
        std::fs::write(&path, &gzip).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let mut d = Decoder::new_file(f, small(1 << 20)).unwrap();
        assert!(!d.fill_buf().unwrap().is_empty());
        d.consume(1);
        assert_eq!(d.read_direct(&mut [0u8; 1 << 16]).unwrap(), None);
    }

    /// A scan through a mapped file hands consumed pages back, so its
    /// resident memory does not grow with the file; the bytes are the file's.
    #[cfg(all(target_os = "linux", feature = "mmap"))]
    #[test]
    fn a_mapped_scan_releases_what_it_consumed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.warc");
        let data: Vec<u8> = (0..24u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let mut d = Decoder::new_file(f, small(1 << 20)).unwrap();
        let mut got = Vec::with_capacity(data.len());
        loop {
            let b = d.fill_buf().unwrap();
            if b.is_empty() {
                break;
            }
            let n = b.len().min(100_000);
            got.extend_from_slice(&b[..n]);
            d.consume(n);
        }
        assert!(got == data, "bytes differ");
        assert!(
            d.input.released() >= 16 << 20,
            "released {}",
            d.input.released()
        );
    }

    #[test]
    fn pywb_whole_file_gzip_and_other_gzip_fixtures() {
        let f = fixture("pywb/example-bad.warc.gz.bad");
        let ms = decode_clean(&f);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].end, Some(f.len() as u64));
        assert_eq!(ms[0].data, multigz(&f));
        for name in [
            "pywb/example.warc.gz",
            "pywb/iana.warc.gz",
            "warcio/example.warc.gz",
            "warcat/at.warc.gz",
        ] {
            let f = fixture(name);
            let ms = decode_clean(&f);
            contiguous(&ms, f.len());
            assert_eq!(all_bytes(&ms), multigz(&f), "{name}");
        }
    }
}
