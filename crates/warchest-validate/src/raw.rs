//! A byte cursor over a [`Source`], across its members, for the formats
//! whose readers are not in [`warchest::archive`] yet (ARC, Web InfoMall):
//! their rules run over the decompressed bytes with it.

use warchest::codec::{Codec, Source};
use warchest::error::Result;

/// Reads the decompressed bytes of every member in turn.
pub(crate) struct Cursor<'a, S> {
    src: &'a mut S,
    /// Decompressed bytes consumed, over all members.
    pub consumed: u64,
}

impl<'a, S: Source> Cursor<'a, S> {
    pub(crate) fn new(src: &'a mut S) -> Self {
        Cursor { src, consumed: 0 }
    }

    /// Stored offset of the next byte, as precise as the codec allows (the
    /// member start for compressed members).
    pub(crate) fn pos(&self) -> u64 {
        if self.src.codec() == Codec::None {
            self.src.member_offset() + self.src.member_pos()
        } else {
            self.src.member_offset()
        }
    }

    /// The codec of the current member.
    pub(crate) fn codec(&self) -> Codec {
        self.src.codec()
    }

    /// The next bytes, moving to the next member at a member's end; empty
    /// at the end of the input.
    pub(crate) fn fill(&mut self) -> Result<&[u8]> {
        loop {
            if !self.src.fill_buf()?.is_empty() {
                return self.src.fill_buf();
            }
            if !self.src.next_member()? {
                return Ok(&[]);
            }
        }
    }

    pub(crate) fn consume(&mut self, n: usize) {
        self.src.consume(n);
        self.consumed += n as u64;
    }

    /// The next byte, not consumed.
    pub(crate) fn peek(&mut self) -> Result<Option<u8>> {
        Ok(self.fill()?.first().copied())
    }

    /// Reads a line up to and including LF into `line` (cleared first).
    /// At most `max` bytes are kept; the rest of a longer line is consumed
    /// and counted. Returns the line's length, 0 at the end of the input.
    pub(crate) fn read_line(&mut self, line: &mut Vec<u8>, max: usize) -> Result<u64> {
        line.clear();
        let mut total = 0u64;
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(total);
            }
            let (take, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let room = max.saturating_sub(line.len()).min(take);
            line.extend_from_slice(&buf[..room]);
            self.consume(take);
            total += take as u64;
            if done {
                return Ok(total);
            }
        }
    }

    /// Passes the next `n` bytes (fewer at the end of the input) to `f`;
    /// returns how many there were.
    pub(crate) fn take(&mut self, n: u64, mut f: impl FnMut(&[u8])) -> Result<u64> {
        let mut done = 0;
        while done < n {
            let buf = self.fill()?;
            if buf.is_empty() {
                break;
            }
            let k = usize::try_from(n - done)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            f(&buf[..k]);
            self.consume(k);
            done += k as u64;
        }
        Ok(done)
    }

    /// True when `starts` is true of the next line's first `probe` bytes
    /// (as far as the buffer holds them), which are not consumed. Call at
    /// a line start.
    pub(crate) fn next_line_is(
        &mut self,
        probe: usize,
        starts: impl FnOnce(&[u8]) -> bool,
    ) -> Result<bool> {
        let buf = self.fill()?;
        let end = memchr::memchr(b'\n', buf).map_or(buf.len(), |i| i + 1);
        Ok(!buf.is_empty() && starts(&buf[..end.min(probe)]))
    }

    /// Skips bytes up to the start of the next line for which `starts`
    /// is true (or the end of the input); returns how many were skipped.
    /// Only the first `probe` bytes of each line are looked at.
    pub(crate) fn skip_to_line(
        &mut self,
        probe: usize,
        mut starts: impl FnMut(&[u8]) -> bool,
    ) -> Result<u64> {
        let mut skipped = 0;
        let mut at_line_start = true;
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(skipped);
            }
            if at_line_start {
                // Look at the line's beginning without consuming it; a
                // beginning split across buffers is looked at as far as
                // it goes.
                let end = memchr::memchr(b'\n', buf).map_or(buf.len(), |i| i + 1);
                if starts(&buf[..end.min(probe)]) {
                    return Ok(skipped);
                }
            }
            let (take, nl) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            self.consume(take);
            skipped += take as u64;
            at_line_start = nl;
        }
    }
}
