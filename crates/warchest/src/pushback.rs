//! A [`Source`] with a push-back buffer, for the ARC and Web InfoMall
//! readers: after a header turned out not to be one, the bytes already taken
//! are given back and searched again for the next record start.
//!
//! Pushed-back bytes always come from the current member, and are dropped
//! when the reader moves to the next member, so member offsets stay exact.

use crate::codec::{Codec, Source};
use crate::error::{Result, Warning};

pub(crate) struct Pushback<S> {
    pub(crate) src: S,
    back: Vec<u8>,
    back_pos: usize,
}

impl<S: Source> Pushback<S> {
    pub(crate) fn new(src: S) -> Self {
        Pushback {
            src,
            back: Vec::new(),
            back_pos: 0,
        }
    }

    fn pending(&self) -> usize {
        self.back.len() - self.back_pos
    }

    pub(crate) fn fill_buf(&mut self) -> Result<&[u8]> {
        if self.back_pos < self.back.len() {
            return Ok(&self.back[self.back_pos..]);
        }
        self.src.fill_buf()
    }

    pub(crate) fn consume(&mut self, n: usize) {
        if self.back_pos < self.back.len() {
            self.back_pos = (self.back_pos + n).min(self.back.len());
            if self.back_pos == self.back.len() {
                self.back.clear();
                self.back_pos = 0;
            }
        } else {
            self.src.consume(n);
        }
    }

    /// Gives `bytes` back: they are read again before anything else.
    pub(crate) fn unread(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut v = Vec::with_capacity(bytes.len() + self.pending());
        v.extend_from_slice(bytes);
        v.extend_from_slice(&self.back[self.back_pos..]);
        self.back = v;
        self.back_pos = 0;
    }

    pub(crate) fn next_member(&mut self) -> Result<bool> {
        self.back.clear();
        self.back_pos = 0;
        self.src.next_member()
    }

    /// Decompressed bytes of the current member consumed so far.
    pub(crate) fn member_pos(&self) -> u64 {
        self.src.member_pos().saturating_sub(self.pending() as u64)
    }

    pub(crate) fn codec(&self) -> Codec {
        self.src.codec()
    }

    /// Stored offset where the current member starts.
    pub(crate) fn member_offset(&self) -> u64 {
        self.src.member_offset()
    }

    pub(crate) fn member_end(&self) -> Option<u64> {
        if self.pending() > 0 {
            None
        } else {
            self.src.member_end()
        }
    }

    /// Stored offset of the read position, as precise as the codec allows
    /// (the member start for compressed members).
    pub(crate) fn stored_pos(&self) -> u64 {
        if self.src.codec() == Codec::None {
            self.src.member_offset() + self.member_pos()
        } else {
            self.src.member_offset()
        }
    }

    pub(crate) fn drain_warnings(&mut self, out: &mut Vec<Warning>) {
        self.src.drain_warnings(out);
    }

    /// Skips up to `n` bytes of the current member; how many were skipped.
    pub(crate) fn skip(&mut self, mut n: u64) -> Result<u64> {
        let mut done = 0;
        while n > 0 && self.pending() > 0 {
            let k = self.pending().min(usize::try_from(n).unwrap_or(usize::MAX));
            self.consume(k);
            n -= k as u64;
            done += k as u64;
        }
        if n > 0 {
            done += self.src.skip(n)?;
        }
        Ok(done)
    }

    /// Reads up to `want` bytes of the current member into `out`; fewer only
    /// at the member's end.
    pub(crate) fn read_some(&mut self, out: &mut Vec<u8>, want: usize) -> Result<()> {
        while out.len() < want {
            let buf = self.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let k = buf.len().min(want - out.len());
            out.extend_from_slice(&buf[..k]);
            self.consume(k);
        }
        Ok(())
    }

    /// Reads one line (through its LF) into `line`, within the current
    /// member. Returns false when the member ended first (what was there is
    /// in `line`), and stops (returning true with no LF at the end of
    /// `line`) once `max` bytes are taken.
    pub(crate) fn read_line(&mut self, line: &mut Vec<u8>, max: usize) -> Result<bool> {
        loop {
            let buf = self.fill_buf()?;
            if buf.is_empty() {
                return Ok(false);
            }
            let room = max.saturating_sub(line.len());
            if room == 0 {
                return Ok(true);
            }
            let window = &buf[..buf.len().min(room)];
            match memchr::memchr(b'\n', window) {
                Some(i) => {
                    line.extend_from_slice(&window[..=i]);
                    self.consume(i + 1);
                    return Ok(true);
                }
                None => {
                    let k = window.len();
                    line.extend_from_slice(window);
                    self.consume(k);
                }
            }
        }
    }

    /// Consumes bytes up to the first occurrence of `pat` in the current
    /// member (leaving the match to be read next). Returns how many bytes
    /// were skipped and whether `pat` was found (false: the member ended, or
    /// more than `limit` bytes were skipped). The first byte of `pat` must
    /// not occur again in it (true of `version:`), so a failed partial match
    /// never hides the start of another.
    pub(crate) fn skip_to(&mut self, pat: &[u8], limit: u64) -> Result<(u64, bool)> {
        debug_assert!(!pat.is_empty() && !pat[1..].contains(&pat[0]));
        let mut skipped = 0u64;
        // Bytes already consumed that match the start of `pat`.
        let mut m = 0usize;
        loop {
            let buf = self.fill_buf()?;
            let len = buf.len();
            if len == 0 {
                return Ok((skipped + m as u64, false));
            }
            let mut i = 0;
            while m > 0 && i < len {
                if buf[i] == pat[m] {
                    m += 1;
                    i += 1;
                    if m == pat.len() {
                        self.consume(i);
                        self.unread(pat);
                        return Ok((skipped, true));
                    }
                } else {
                    skipped += m as u64;
                    m = 0;
                }
            }
            if m > 0 {
                self.consume(len);
                continue;
            }
            let rest = &buf[i..];
            if let Some(k) = memchr::memmem::find(rest, pat) {
                self.consume(i + k);
                return Ok((skipped + k as u64, true));
            }
            // A match may begin in the last bytes.
            let from = rest.len().saturating_sub(pat.len() - 1);
            let partial = rest[from..]
                .iter()
                .rposition(|&b| b == pat[0])
                .map(|q| from + q)
                .filter(|&p| pat.starts_with(&rest[p..]));
            match partial {
                Some(p) => {
                    m = rest.len() - p;
                    skipped += p as u64;
                }
                None => skipped += rest.len() as u64,
            }
            self.consume(len);
            if skipped > limit {
                return Ok((skipped + m as u64, false));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_source::MemSource;

    #[test]
    fn skip_to_across_buffers() {
        let data = b"xxxxversion: 1.0\nabc";
        for chunk in 1..data.len() {
            let mut p = Pushback::new(MemSource::plain(data, chunk));
            let (n, found) = p.skip_to(b"version:", u64::MAX).unwrap();
            assert!(found, "chunk {chunk}");
            assert_eq!(n, 4, "chunk {chunk}");
            assert_eq!(p.member_pos(), 4);
            let mut line = Vec::new();
            p.read_line(&mut line, 100).unwrap();
            assert_eq!(line, b"version: 1.0\n", "chunk {chunk}");
        }
        let mut p = Pushback::new(MemSource::plain(b"no match here", 3));
        assert_eq!(p.skip_to(b"version:", u64::MAX).unwrap(), (13, false));
        // A broken partial match before the real one.
        let data = b"versioversion:";
        for chunk in 1..data.len() {
            let mut p = Pushback::new(MemSource::plain(data, chunk));
            assert_eq!(
                p.skip_to(b"version:", u64::MAX).unwrap(),
                (6, true),
                "chunk {chunk}"
            );
            let mut rest = Vec::new();
            p.read_some(&mut rest, 100).unwrap();
            assert_eq!(rest, b"version:");
        }
        let mut p = Pushback::new(MemSource::plain(b"xxversi", 2));
        assert_eq!(p.skip_to(b"version:", u64::MAX).unwrap(), (7, false));
    }

    #[test]
    fn unread_then_read_again() {
        let mut p = Pushback::new(MemSource::plain(b"abcdef", 2));
        let mut v = Vec::new();
        p.read_some(&mut v, 4).unwrap();
        assert_eq!(v, b"abcd");
        p.unread(b"cd");
        assert_eq!(p.member_pos(), 2);
        let mut w = Vec::new();
        p.read_some(&mut w, 10).unwrap();
        assert_eq!(w, b"cdef");
    }
}
