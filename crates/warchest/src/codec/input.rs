//! The decoder's input: the stored bytes read from the caller's reader into
//! one buffer, and the seeks the reader may allow. A plain file opened by
//! path is served from a memory map instead ([`super::map`]), and so is a
//! compressed one decoded on the reading thread where the map is the
//! cheaper way: the window `start..end` then indexes the map, and
//! refilling it moves its end without reading or copying anything.

use super::map::FileMap;
use crate::Position;
use std::io::{self, Read};

/// Seeks a reader (forward by, or to, a number of bytes).
pub(super) type SeekFn<R> = fn(&mut R, u64) -> io::Result<()>;

/// Measures the bytes a reader has left from where it stands.
pub(super) type RestFn<R> = fn(&mut R) -> io::Result<u64>;

/// Stored bytes read ahead from a reader.
///
/// `buf[start..end]` is read and not consumed; `buf[0]` is at stored offset
/// `base`. The codecs take their input from it and consume it; the plain
/// member is served straight from it.
pub(super) struct Input<R> {
    pub(super) inner: R,
    pub(super) buf: Vec<u8>,
    /// Size of the buffer as made: a map's refill window.
    cap: usize,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) base: u64,
    pub(super) eof: bool,
    /// Seeks the reader forward, for readers that can: plain payloads are
    /// then skipped without being read. Set by `Decoder::new_seekable`.
    pub(super) seek_forward: Option<SeekFn<R>>,
    /// Seeks the reader to an absolute position, for readers that can: the
    /// parallel engine hands members back to the sequential path there.
    pub(super) seek_to: Option<SeekFn<R>>,
    /// Measures what the reader has left, for readers that can: a skip
    /// past `len` measures it again (the file grew).
    pub(super) rest: Option<RestFn<R>>,
    /// Position of the reader where stored offset `start_offset` is.
    pub(super) inner_origin: u64,
    /// Stored length of the input, when known (seekable inputs): skips stop
    /// there, so a truncated record is still seen as truncated.
    pub(super) len: Option<u64>,
    /// The file mapped (see the module's documentation): `start`, `end` index
    /// it, `base` is 0 and `buf` is unused. Bytes below `end` have been
    /// checked to be inside the file.
    map: Option<FileMap>,
    /// The most one read asks for: [`AFTER_SEEK`] right after a skip sought
    /// past a payload, where the next record's head is what is wanted,
    /// doubled by each read after it up to the buffer's size. A scan that
    /// skips payloads then copies little more than the heads out of the
    /// page cache; one that reads them soon reads whole buffers again.
    read_cap: usize,
}

/// The first read after a seek past a payload: most records' heads (WARC
/// header and HTTP head) fit, and on the benchmark corpus (7 KiB a
/// record) a scan of a plain file that skips payloads copies a quarter of
/// the bytes it did with whole-buffer reads, for 10 % less CPU; 4 and 16
/// KiB cost more (docs/performance-history.md, round seventeen).
const AFTER_SEEK: usize = 8 << 10;

impl<R> Input<R> {
    /// An input of `size` bytes of buffer whose first byte is at stored
    /// offset `base`.
    pub(super) fn new(inner: R, size: usize, base: u64) -> Self {
        Input {
            inner,
            buf: vec![0; size],
            cap: size,
            start: 0,
            end: 0,
            base,
            eof: false,
            seek_forward: None,
            seek_to: None,
            rest: None,
            inner_origin: 0,
            len: None,
            map: None,
            read_cap: usize::MAX,
        }
    }

    /// Serves the input from `map`, a map of the whole file whose stored
    /// offsets are its file offsets, from stored offset `at` on (the
    /// buffer is dropped: nothing was read into it yet).
    pub(super) fn use_map(&mut self, map: FileMap, at: u64) {
        let Ok(at) = usize::try_from(at) else {
            return;
        };
        self.buf = Vec::new();
        self.base = 0;
        self.start = at;
        self.end = at;
        self.eof = false;
        self.map = Some(map);
    }

    /// An error when a read of the mapped file faulted because the file
    /// shrank ([`super::map`]); nothing to check for a buffer.
    #[inline]
    pub(super) fn check_map(&self) -> crate::Result<()> {
        match &self.map {
            Some(m) => m
                .check()
                .map_err(|e| crate::Error::from(e).at(Position::at(self.pos()))),
            None => Ok(()),
        }
    }

    /// [`Input::check_map`], and the file's size taken again: damage, or an
    /// end, met in a mapped file may be bytes past a new end read as zeros
    /// before any fault was taken.
    pub(super) fn check_map_size(&mut self) -> crate::Result<()> {
        let at = self.pos();
        match self.map.as_mut() {
            Some(m) => m
                .refresh()
                .map(drop)
                .map_err(|e| crate::Error::from(e).at(Position::at(at))),
            None => Ok(()),
        }
    }

    /// Bytes of the map handed back to the kernel (tests).
    #[cfg(all(test, target_os = "linux", feature = "mmap"))]
    pub(super) fn released(&self) -> usize {
        self.map.as_ref().map_or(0, FileMap::released)
    }

    /// True when the input is served from a memory map.
    #[cfg(test)]
    pub(super) fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    /// Stored offset of the first byte not consumed.
    #[inline]
    pub(super) fn pos(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Bytes read and not consumed.
    #[inline]
    pub(super) fn avail(&self) -> usize {
        self.end - self.start
    }

    /// The bytes read and not consumed.
    #[inline]
    pub(super) fn bytes(&self) -> &[u8] {
        let all = match &self.map {
            Some(m) => m.bytes(),
            None => &self.buf,
        };
        all.get(self.start..self.end).unwrap_or_default()
    }

    /// Every byte still held, read or not: index 0 is stored offset `base`
    /// (a map's, 0), the last is the one before `end`.
    pub(super) fn held(&self) -> &[u8] {
        let all = match &self.map {
            Some(m) => m.bytes(),
            None => &self.buf,
        };
        all.get(..self.end).unwrap_or_default()
    }

    /// Size of the buffer (for a map, the window a refill opens).
    #[inline]
    pub(super) fn capacity(&self) -> usize {
        if self.map.is_some() {
            self.cap
        } else {
            self.buf.len()
        }
    }

    /// Consumes `n` bytes (at most what is buffered).
    #[inline]
    pub(super) fn advance(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// Moves the next byte to read to stored offset `at`, back or forward
    /// among the bytes still held (clamped to them): where a damaged
    /// member is found to end, or a search for the next starts.
    pub(super) fn set_pos(&mut self, at: u64) {
        self.start = usize::try_from(at.saturating_sub(self.base))
            .unwrap_or(usize::MAX)
            .min(self.end);
    }

    /// Consumes everything buffered.
    pub(super) fn drop_buffered(&mut self) {
        self.start = self.end;
    }

    /// Forgets everything buffered: the next byte read is at stored offset
    /// `base`.
    pub(super) fn reset_at(&mut self, base: u64) {
        self.eof = false;
        if self.map.is_some() {
            let at = usize::try_from(base).unwrap_or(usize::MAX);
            self.start = at;
            self.end = at;
            return;
        }
        self.start = 0;
        self.end = 0;
        self.base = base;
    }
}

impl<R: Read> Input<R> {
    /// Moves the unconsumed input to the front of the buffer. `member`, the
    /// stored start of a compressed member being decoded, is kept too when
    /// it fits in half the buffer with `need` more bytes, so resynchronising
    /// after damage can search from the member's start.
    fn compact(&mut self, need: usize, member: Option<u64>) {
        let cap = self.buf.len();
        let mut keep = self.start;
        if let Some(ms) = member
            .and_then(|m| m.checked_sub(self.base))
            .and_then(|d| usize::try_from(d).ok())
            && ms < keep
            && (self.end - ms).saturating_add(need) <= cap / 2
        {
            keep = ms;
        }
        if keep > 0 {
            self.buf.copy_within(keep..self.end, 0);
            self.start -= keep;
            self.end -= keep;
            self.base += keep as u64;
        }
    }

    /// Makes at least `n` unconsumed bytes available. `false` when the input
    /// ends first. Grows the buffer only when `n` exceeds it (callers bound
    /// `n`). `member` is as for [`Input::compact`].
    pub(super) fn ensure(&mut self, n: usize, member: Option<u64>) -> crate::Result<bool> {
        if self.map.is_some() {
            return self.ensure_mapped(n);
        }
        while self.avail() < n {
            if self.eof {
                return Ok(false);
            }
            let need = n - self.avail();
            let cap = self.buf.len();
            if cap - self.end < need.max(cap / 8) {
                self.compact(need, member);
                if self.buf.len() - self.end < need {
                    self.buf.resize(self.end + need, 0);
                }
            }
            self.read_some()?;
        }
        Ok(true)
    }

    /// [`Input::ensure`] on a map: the window grows to at least `n` bytes
    /// (a buffer's worth when that is more) below the file's size, checked
    /// now, so that no byte past the file's end is ever touched.
    fn ensure_mapped(&mut self, n: usize) -> crate::Result<bool> {
        if self.avail() >= n {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        let Some(map) = self.map.as_mut() else {
            return Ok(false);
        };
        // What was consumed a while ago is not read again in a scan: its
        // pages leave the process (a resync or seek back faults them in).
        map.release(self.start.saturating_sub(1 << 20));
        let size = map
            .refresh()
            .map_err(|e| crate::Error::from(e).at(Position::at(self.start as u64)))?;
        let want = self.start.saturating_add(n.max(self.cap));
        self.end = want.min(size).max(self.end);
        if self.avail() >= n {
            return Ok(true);
        }
        self.eof = true;
        Ok(false)
    }

    /// Reads plain bytes straight into `out` when nothing is buffered: a
    /// large read of a payload then costs the kernel's copy alone, not a
    /// second one out of the buffer. A map is kept only where its faults
    /// cost less than that copy, and given up otherwise
    /// ([`Input::settle_for_reads`]). `None` when the map is kept, bytes are
    /// buffered, the input ended or a map cannot be given up: the caller
    /// reads through the buffer (or the map).
    pub(super) fn read_direct(&mut self, out: &mut [u8]) -> crate::Result<Option<usize>> {
        if self.map.is_some() && !self.settle_for_reads()? {
            return Ok(None);
        }
        if self.avail() > 0 || self.eof || out.is_empty() {
            return Ok(None);
        }
        let at = self.pos();
        let n = loop {
            match self.inner.read(out) {
                Ok(n) => break n.min(out.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(crate::Error::from(e).at(Position::at(at))),
            }
        };
        // The end (or a truncation) is found, and reported, the usual way.
        if n == 0 {
            return Ok(None);
        }
        self.base = at + n as u64;
        self.start = 0;
        self.end = 0;
        Ok(Some(n))
    }

    /// The caller reads payloads from here on: a map is kept when the page
    /// cache holds the file so that the map's faults cost less than `read`
    /// calls ([`FileMap::cheap_to_read`]), and given up for good otherwise
    /// ([`Input::unmap`]; docs/performance-history.md, rounds fourteen and
    /// fifteen). `true` when the map was given up.
    pub(super) fn settle_for_reads(&mut self) -> crate::Result<bool> {
        if self.map.as_mut().is_none_or(FileMap::cheap_to_read) {
            return Ok(false);
        }
        self.unmap()
    }

    /// Serves the rest of a mapped file through the buffer: the reader is
    /// sought to where the map was read to, and the map is let go. `false`
    /// when nothing is mapped or the reader cannot seek (the map is kept).
    pub(super) fn unmap(&mut self) -> crate::Result<bool> {
        // Map offsets are the reader's ([`Input::use_map`] is only given a
        // file read from its start offset).
        let at = self.pos();
        let (Some(seek), Some(map)) = (self.seek_to, self.map.as_mut()) else {
            return Ok(false);
        };
        let size = map
            .refresh()
            .map_err(|e| crate::Error::from(e).at(Position::at(at)))?;
        seek(&mut self.inner, at).map_err(|e| crate::Error::from(e).at(Position::at(at)))?;
        // The file's size now bounds skips from here ([`Input::seek_skip`]
        // measures it again when one would pass it).
        self.len = Some(size as u64);
        self.map = None;
        self.buf = vec![0; self.cap];
        self.base = at;
        self.start = 0;
        self.end = 0;
        self.eof = false;
        Ok(true)
    }

    /// One read into the free end of the buffer (which is not empty).
    fn read_some(&mut self) -> crate::Result<usize> {
        loop {
            let free = self.buf.get_mut(self.end..).unwrap_or_default();
            let room = free.len().min(self.read_cap);
            let free = &mut free[..room];
            match self.inner.read(free) {
                Ok(n) => {
                    self.read_cap = self.read_cap.saturating_mul(2);
                    // A reader claiming more than it was given is ignored
                    // beyond the buffer.
                    let n = n.min(room);
                    if n == 0 {
                        self.eof = true;
                        self.shrank()?;
                    }
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let at = self.base + self.end as u64;
                    return Err(crate::Error::from(e).at(Position::at(at)));
                }
            }
        }
    }

    /// The input's length now, for a reader at stored offset `at` that can
    /// measure it; `None` when it cannot.
    fn measure(&mut self, at: u64) -> crate::Result<Option<u64>> {
        let Some(rest) = self.rest else {
            return Ok(None);
        };
        let n = rest(&mut self.inner).map_err(|e| crate::Error::from(e).at(Position::at(at)))?;
        Ok(Some(at.saturating_add(n)))
    }

    /// An error when the input ended before the length it had when it was
    /// measured: the file shrank while it was read (a read past a skip
    /// sought beyond its new end, or a read of bytes no longer there).
    fn shrank(&self) -> crate::Result<()> {
        let at = self.base + self.end as u64;
        match self.len {
            Some(len) if at < len => Err(crate::Error::from(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file shrank while it was being read: it had {len} bytes, it ends at {at} now or before"),
            ))
            .at(Position::at(at))),
            _ => Ok(()),
        }
    }

    /// Skips `n` bytes, seeking past what is buffered when the reader can
    /// seek and its length is known; never beyond the input's end. `None`
    /// when it cannot seek or `n` is buffered (the caller reads instead).
    pub(super) fn seek_skip(&mut self, n: u64) -> crate::Result<Option<u64>> {
        let avail = self.avail() as u64;
        if let Some(map) = &self.map {
            if n <= avail {
                return Ok(None);
            }
            // Nothing is touched: the window's end is checked again (fstat)
            // when it next grows.
            let to = (self.start as u64)
                .saturating_add(n)
                .min(map.bytes().len() as u64);
            let k = to - self.start as u64;
            self.start = usize::try_from(to).unwrap_or(usize::MAX);
            self.end = self.end.max(self.start);
            return Ok(Some(k));
        }
        let (Some(seek), Some(len)) = (self.seek_forward, self.len) else {
            return Ok(None);
        };
        if n <= avail {
            return Ok(None);
        }
        let at = self.base + self.end as u64;
        let mut len = len;
        if at.saturating_add(n - avail) > len
            && let Some(now) = self.measure(at)?
        {
            // The file grew since it was measured: the skip goes on into
            // what was appended.
            len = now;
            self.len = Some(now);
        }
        let rest = (n - avail).min(len.saturating_sub(at));
        seek(&mut self.inner, rest).map_err(|e| crate::Error::from(e).at(Position::at(at)))?;
        self.base = at + rest;
        self.start = 0;
        self.end = 0;
        self.read_cap = AFTER_SEEK;
        Ok(Some(avail + rest))
    }

    /// Goes on reading at stored offset `at`, with nothing buffered;
    /// `start_offset` is the stored offset of the reader's `inner_origin`.
    ///
    /// # Errors
    /// The reader cannot seek, or the seek fails.
    pub(super) fn seek_to(&mut self, at: u64, start_offset: u64) -> crate::Result<()> {
        let Some(seek) = self.seek_to else {
            return Err(crate::Error::from(io::Error::new(
                io::ErrorKind::Unsupported,
                "the input cannot seek",
            )));
        };
        let inner_at = at
            .checked_sub(start_offset)
            .and_then(|d| d.checked_add(self.inner_origin))
            .ok_or_else(|| crate::Error::from(io::Error::other("restart before the start")))?;
        seek(&mut self.inner, inner_at).map_err(|e| crate::Error::from(e).at(Position::at(at)))?;
        self.reset_at(at);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader over bytes that notes how much each read asked for.
    struct Noting {
        data: Vec<u8>,
        pos: usize,
        asks: Vec<usize>,
    }

    impl Read for Noting {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.asks.push(buf.len());
            let rest = self.data.get(self.pos..).unwrap_or_default();
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            self.pos += n;
            Ok(n)
        }
    }

    #[test]
    fn a_read_after_a_seek_past_a_payload_is_small_and_grows_again() {
        let r = Noting {
            data: vec![b'x'; 1 << 20],
            pos: 0,
            asks: Vec::new(),
        };
        let mut input = Input::new(r, 64 << 10, 0);
        input.seek_forward = Some(|r, n| {
            r.pos += usize::try_from(n).map_err(io::Error::other)?;
            Ok(())
        });
        input.len = Some(1 << 20);
        assert!(input.ensure(1, None).unwrap());
        assert_eq!(
            input.inner.asks,
            [64 << 10],
            "a whole buffer before any seek"
        );
        // A skip past what is buffered seeks; the next read asks for little.
        assert_eq!(input.seek_skip(100_000).unwrap(), Some(100_000));
        assert_eq!(input.pos(), 100_000);
        for _ in 0..3 {
            input.drop_buffered();
            assert!(input.ensure(1, None).unwrap());
        }
        // Each read after it asks for twice as much (the buffer's free end
        // allowing), so a scan that reads payloads soon reads whole buffers.
        assert_eq!(
            input.inner.asks[1..],
            [AFTER_SEEK, 2 * AFTER_SEEK, 4 * AFTER_SEEK]
        );
        // The first two reads' bytes were consumed, the third's are buffered.
        assert_eq!(input.pos(), 100_000 + 3 * AFTER_SEEK as u64);
        assert_eq!(input.avail(), 4 * AFTER_SEEK);
    }
}
