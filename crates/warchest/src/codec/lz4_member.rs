//! LZ4 frames: the frame descriptor, blocks (independent or linked to the
//! 64 KiB before them), block and content checksums.

use super::lz4::{self, FrameDescriptor, Xxh32};
use super::member::{Cx, MemberDecoder, Step};
use crate::WarningKind;
use std::io::Read;

/// Where in an LZ4 frame the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Header,
    Blocks,
}

/// The decoder of LZ4 frames.
#[derive(Debug)]
pub(super) struct Lz4Member {
    phase: Phase,
    frame: Option<FrameDescriptor>,
    hash: Xxh32,
    size: u64,
}

impl Default for Lz4Member {
    fn default() -> Self {
        Lz4Member {
            phase: Phase::Header,
            frame: None,
            hash: Xxh32::new(0),
            size: 0,
        }
    }
}

impl Lz4Member {
    /// Forgets the frame in progress (the decoder moved elsewhere).
    pub(super) fn abandon(&mut self) {
        self.frame = None;
    }

    fn header_step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        let need = match lz4::parse_header(cx.input.bytes()) {
            Ok(lz4::Header::Ok(d)) => {
                cx.input.advance(d.header_len);
                self.frame = Some(d);
                self.hash = Xxh32::new(0);
                self.size = 0;
                cx.out.clear();
                self.phase = Phase::Blocks;
                return Ok(Step::Going);
            }
            Ok(lz4::Header::Short(n)) => n,
            Err(e) => return Ok(Step::Damaged(e.to_owned())),
        };
        if !cx.ensure(need)? {
            return Ok(Step::Truncated("inside the frame header"));
        }
        Ok(Step::Going)
    }

    fn block_step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        let Some(d) = self.frame else {
            return Ok(Step::Damaged("LZ4 frame without a header".to_owned()));
        };
        if !cx.ensure(4)? {
            return Ok(Step::Truncated("before the end mark"));
        }
        let word_at = |b: &[u8], at: usize| {
            b.get(at..at + 4)
                .and_then(|w| w.try_into().ok())
                .map_or(0, u32::from_le_bytes)
        };
        let word = word_at(cx.input.bytes(), 0);
        if word == 0 {
            let n = if d.content_checksum { 8 } else { 4 };
            if !cx.ensure(n)? {
                return Ok(Step::Truncated("inside the content checksum"));
            }
            let stored = d.content_checksum.then(|| word_at(cx.input.bytes(), 4));
            cx.input.advance(n);
            cx.finish();
            if let Some(c) = d.content_size
                && c != self.size
            {
                let msg = format!(
                    "the LZ4 frame at stored offset {} declares {c} bytes of content and holds {}",
                    cx.member_offset, self.size
                );
                cx.problem(WarningKind::BadChecksum, msg)?;
            }
            if let Some(s) = stored
                && cx.verify
                && s != self.hash.finish()
            {
                let msg = format!(
                    "the content checksum of the LZ4 frame at stored offset {} does not match",
                    cx.member_offset
                );
                cx.problem(WarningKind::BadChecksum, msg)?;
            }
            return Ok(Step::Going);
        }
        let raw = word & 0x8000_0000 != 0;
        let size = (word & 0x7fff_ffff) as usize;
        if size > d.block_max {
            return Ok(Step::Damaged(format!(
                "LZ4 block of {size} bytes, more than the frame's maximum of {}",
                d.block_max
            )));
        }
        let total = 4 + size + if d.block_checksum { 4 } else { 0 };
        if !cx.ensure(total)? {
            return Ok(Step::Truncated("inside a block"));
        }
        if d.block_checksum && cx.verify {
            let input = cx.input.bytes();
            let block = input.get(4..4 + size).unwrap_or_default();
            if lz4::xxh32(block, 0) != word_at(input, 4 + size) {
                let msg = format!(
                    "the checksum of the LZ4 block at stored offset {} does not match",
                    cx.input.pos()
                );
                cx.problem(WarningKind::BadChecksum, msg)?;
            }
        }
        let out = &mut *cx.out;
        // Room for one block after the history linked blocks may refer to.
        if d.independent {
            out.end = 0;
        } else if out.end + d.block_max > out.buf.len() {
            let keep = out.end.min(lz4::HISTORY);
            out.buf.copy_within(out.end - keep..out.end, 0);
            out.end = keep;
        }
        out.start = out.end;
        let need_out = out.end + d.block_max;
        if out.buf.len() < need_out {
            out.buf.resize(need_out, 0);
        }
        let block = cx.input.bytes().get(4..4 + size).unwrap_or_default();
        let (history, rest) = out.buf.split_at_mut(out.end);
        let dst = rest.get_mut(..d.block_max).unwrap_or_default();
        let made = if raw {
            dst.get_mut(..size)
                .map(|o| o.copy_from_slice(block))
                .map(|_| size)
                .ok_or_else(|| "stored block larger than the output".to_owned())
        } else if d.independent {
            lz4::decompress_block(block, dst, None)
        } else {
            let dict = history
                .get(history.len().saturating_sub(lz4::HISTORY)..)
                .unwrap_or_default();
            lz4::decompress_block(block, dst, Some(dict))
        };
        let made = match made {
            Ok(n) => n.min(d.block_max),
            Err(e) => return Ok(Step::Damaged(format!("corrupt LZ4 block ({e})"))),
        };
        if cx.verify && d.content_checksum {
            self.hash
                .update(out.buf.get(out.end..out.end + made).unwrap_or_default());
        }
        self.size += made as u64;
        out.end += made;
        cx.input.advance(total);
        Ok(Step::Going)
    }
}

impl MemberDecoder for Lz4Member {
    /// Fails when LZ4 is not compiled in: not a damaged member to skip, the
    /// data is there and this build cannot read it.
    fn begin<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<()> {
        if !lz4::SUPPORTED {
            return Err(cx.report.fail(
                cx.codec,
                cx.member_offset,
                lz4::NOT_COMPILED_IN.to_owned(),
            ));
        }
        self.frame = None;
        self.phase = Phase::Header;
        Ok(())
    }

    fn step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        match self.phase {
            Phase::Header => self.header_step(cx),
            Phase::Blocks => self.block_step(cx),
        }
    }
}
