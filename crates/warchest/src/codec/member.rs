//! The interface between the [`super::Decoder`] and the decoder of each
//! codec's members (`plain`, `gzip_member`, `zstd_member`, `lz4_member`).
//!
//! The `Decoder` owns the input buffer, the output buffer, the warnings and
//! the member boundaries: it sniffs what starts at a boundary, resynchronises
//! after damage and serves the parallel engine's members. A codec's
//! [`MemberDecoder`] owns what decoding one member of that codec needs
//! (inflater, zstd context, LZ4 frame descriptor, checksums) and turns the
//! input into output through a [`Cx`], one step at a time.

use super::input::Input;
use super::{Codec, CodecError};
use crate::{Warning, WarningKind};
use std::io::Read;

/// Warnings kept between two `drain_warnings` calls; past this they are
/// counted, not stored, so a caller that never drains stays bounded.
pub(super) const MAX_PENDING_WARNINGS: usize = 4096;

/// The output buffer: `buf[start..end]` is decoded and not consumed. One
/// per decoder, reused by every codec and member.
#[derive(Debug, Default)]
pub(super) struct Out {
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Out {
    /// The decoded bytes not consumed.
    #[inline]
    pub(super) fn bytes(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or_default()
    }

    /// Forgets the decoded bytes.
    #[inline]
    pub(super) fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Empties the buffer and makes it at least `n` bytes long.
    pub(super) fn prepare(&mut self, n: usize) {
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        self.clear();
    }

    /// Consumes up to `n` bytes, returning how many.
    #[inline]
    pub(super) fn consume(&mut self, n: usize) -> usize {
        let k = n.min(self.end - self.start);
        self.start += k;
        k
    }
}

/// Recoveries (lenient) and the error that stopped a strict decoder.
#[derive(Debug)]
pub(super) struct Report {
    pub(super) lenient: bool,
    warnings: Vec<Warning>,
    dropped: u64,
    /// The error that stopped the decoder, returned again on each call.
    pub(super) failed: Option<CodecError>,
}

impl Report {
    pub(super) fn new(lenient: bool) -> Self {
        Report {
            lenient,
            warnings: Vec::new(),
            dropped: 0,
            failed: None,
        }
    }

    /// Records a recovery (lenient) or fails (strict).
    pub(super) fn problem(
        &mut self,
        codec: Codec,
        kind: WarningKind,
        offset: u64,
        message: String,
    ) -> crate::Result<()> {
        if self.lenient {
            if self.warnings.len() < MAX_PENDING_WARNINGS {
                self.warnings.push(Warning::new(kind, offset, message));
            } else {
                self.dropped += 1;
            }
            Ok(())
        } else {
            Err(self.fail(codec, offset, message))
        }
    }

    /// Stops the decoder with an error.
    pub(super) fn fail(&mut self, codec: Codec, offset: u64, message: String) -> crate::Error {
        let e = CodecError {
            codec: codec.name(),
            offset,
            message,
        };
        self.failed = Some(e.clone());
        e.into()
    }

    /// The error that stopped the decoder, if any.
    #[inline]
    pub(super) fn check(&self) -> crate::Result<()> {
        match &self.failed {
            Some(e) => Err(e.clone().into()),
            None => Ok(()),
        }
    }

    /// Moves the warnings into `out`; `pos` is where a note about dropped
    /// warnings is placed.
    pub(super) fn drain(&mut self, out: &mut Vec<Warning>, pos: u64) {
        out.append(&mut self.warnings);
        if self.dropped > 0 {
            out.push(Warning::new(
                WarningKind::Other,
                pos,
                format!(
                    "{} more decoder warnings were dropped (more than {MAX_PENDING_WARNINGS} \
                     between two drains)",
                    self.dropped
                ),
            ));
            self.dropped = 0;
        }
    }
}

/// What a member decoder works with: the decoder's buffers and report, and
/// where the current member starts.
pub(super) struct Cx<'a, R> {
    pub(super) input: &'a mut Input<R>,
    pub(super) out: &'a mut Out,
    pub(super) report: &'a mut Report,
    /// The codec named by errors, and the stored start of the current
    /// member (or skippable frame).
    pub(super) codec: Codec,
    pub(super) member_offset: u64,
    /// Inside a compressed member: its start, kept buffered while it fits
    /// in half the buffer (see [`Cx::ensure`]).
    pub(super) keep: Option<u64>,
    /// [`super::DecoderOptions::verify_checksums`].
    pub(super) verify: bool,
    /// Set by [`Cx::finish`]: the stored end of the member.
    pub(super) ended: Option<u64>,
}

impl<R: Read> Cx<'_, R> {
    /// Makes at least `n` unconsumed input bytes available (`false` when
    /// the input ends first). A compressed member's first bytes stay
    /// buffered while they fit in half the buffer, for resynchronising.
    pub(super) fn ensure(&mut self, n: usize) -> crate::Result<bool> {
        self.input.ensure(n, self.keep)
    }

    /// Before a streaming step: input to decompress (`false` when the input
    /// has ended: the member is truncated), and the output buffer emptied
    /// and at least `out_size` long.
    pub(super) fn step_start(&mut self, out_size: usize) -> crate::Result<bool> {
        if self.input.avail() == 0 && !self.ensure(1)? {
            return Ok(false);
        }
        self.out.prepare(out_size);
        Ok(true)
    }

    /// Records a recovery of the current member (lenient) or fails
    /// (strict), at the member's start.
    pub(super) fn problem(&mut self, kind: WarningKind, message: String) -> crate::Result<()> {
        // A mapped file that shrank had bytes past its new end read as
        // zeros: that is what happened, not what the codec saw.
        self.input.check_map_size()?;
        self.report
            .problem(self.codec, kind, self.member_offset, message)
    }

    /// The current member ends at the current input position.
    pub(super) fn finish(&mut self) {
        self.ended = Some(self.input.pos());
    }
}

/// How a step went, besides errors.
#[derive(Debug)]
pub(super) enum Step {
    /// Output was made, input used, or the member ended ([`Cx::finish`]).
    Going,
    /// The input ends in the member, `inside` what (a phrase: "inside the
    /// trailer").
    Truncated(&'static str),
    /// The member's data is corrupt: what is wrong.
    Damaged(String),
}

/// The decoder of one codec's members. A value lives as long as the
/// [`super::Decoder`] and is reused for each member of its codec, so what it
/// allocates (inflater, zstd context) is allocated once.
pub(super) trait MemberDecoder {
    /// A member of this codec starts at the input's position.
    ///
    /// # Errors
    /// The codec cannot decode it (a zstd context cannot be made).
    fn begin<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<()>;

    /// Decodes some more of the current member into the output buffer
    /// (whose bytes have been consumed), or reads the member's end and calls
    /// [`Cx::finish`]: each call consumes input, produces output or moves on.
    ///
    /// # Errors
    /// A problem in strict mode, or an I/O error.
    fn step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step>;

    /// The decoded bytes of the current member not consumed.
    #[inline]
    fn data<'a, R>(&self, input: &'a Input<R>, out: &'a Out) -> &'a [u8] {
        let _ = input;
        out.bytes()
    }

    /// Consumes up to `n` decoded bytes, returning how many.
    #[inline]
    fn consume<R>(&mut self, input: &mut Input<R>, out: &mut Out, n: usize) -> usize {
        let _ = input;
        out.consume(n)
    }

    /// Skips `n` decoded bytes without decoding them, when the codec and
    /// the input allow (`None`: read through them instead).
    ///
    /// # Errors
    /// The seek fails.
    fn skip<R: Read>(&mut self, input: &mut Input<R>, n: u64) -> crate::Result<Option<u64>> {
        let _ = (input, n);
        Ok(None)
    }
}
