//! Small I/O helpers shared by the modules that read files directly, and
//! [`ReadAt`]: a source read at explicit offsets by several threads at once
//! (a file, or an object in a store that a crate of its own supplies).

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

/// Bytes read at explicit offsets, by several threads at once: what the
/// parallel decoder's jobs read (see [`crate::codec::Decoder::new_read_at`]).
/// A [`std::fs::File`] is one; `warchest-remote` supplies one over an object
/// in a store, so that this crate needs no HTTP stack.
pub trait ReadAt: Send + Sync {
    /// Reads into `buf` from byte `pos`; how many bytes were read (0 at or
    /// past the end; fewer than asked is not the end). An error should name
    /// the source and the offset.
    ///
    /// # Errors
    /// The bytes cannot be read.
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize>;

    /// The source's length in bytes.
    ///
    /// # Errors
    /// The length cannot be found.
    fn size(&self) -> io::Result<u64>;

    /// Bytes from `pos` on that the source holds in memory already, lent
    /// without a copy: at most `len` of them, fewer where what it holds
    /// ends (a block's end), or `None` when it holds none there, cannot
    /// read them, or is read by copying (a file: the default). A parallel
    /// decoder's job reads its chunk this way when it can (an object's
    /// block, fetched ahead), and by [`ReadAt::read_at`] otherwise, which
    /// also reports any error.
    fn lend(&self, pos: u64, len: usize) -> Option<Lent> {
        let _ = (pos, len);
        None
    }

    /// True when the source fetches ahead of its readers into buffers of
    /// its own (an object in a store, read in blocks): a parallel decoder
    /// over it then keeps fewer decoded bytes in flight, as the blocks
    /// fetched ahead already hold its read-ahead (docs/performance-history.md,
    /// round fifteen). False by default (a file).
    fn fetches_ahead(&self) -> bool {
        false
    }
}

/// Bytes lent by a [`ReadAt`] ([`ReadAt::lend`]): a range of a buffer the
/// source keeps alive (and does not reuse) while this is held.
#[derive(Clone)]
pub struct Lent {
    buf: Arc<dyn AsRef<[u8]> + Send + Sync>,
    from: usize,
    to: usize,
}

impl std::fmt::Debug for Lent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lent")
            .field("from", &self.from)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

impl Lent {
    /// Bytes `from..to` of `buf` (cut to its length).
    pub fn new(buf: Arc<dyn AsRef<[u8]> + Send + Sync>, from: usize, to: usize) -> Lent {
        let len = (*buf).as_ref().len();
        let to = to.min(len);
        Lent {
            buf,
            from: from.min(to),
            to,
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        (*self.buf)
            .as_ref()
            .get(self.from..self.to)
            .unwrap_or_default()
    }
}

impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        #[cfg(unix)]
        return std::os::unix::fs::FileExt::read_at(self, buf, pos);
        #[cfg(windows)]
        return std::os::windows::fs::FileExt::seek_read(self, buf, pos);
        #[cfg(not(any(unix, windows)))]
        {
            let _ = (buf, pos);
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no positioned reads on this platform",
            ))
        }
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// Bytes `start..start + len` of a [`ReadAt`], read at offsets as a
/// source of their own (a WARC file stored in a ZIP, such as a WACZ's
/// archive files): offsets are the window's, reads stop at its end.
#[derive(Clone)]
pub struct Slice {
    src: Arc<dyn ReadAt>,
    start: u64,
    len: u64,
}

impl std::fmt::Debug for Slice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slice")
            .field("start", &self.start)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Slice {
    /// The bytes `start..start + len` of `src`.
    pub fn new(src: Arc<dyn ReadAt>, start: u64, len: u64) -> Slice {
        Slice { src, start, len }
    }
}

impl ReadAt for Slice {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        let left = self.len.saturating_sub(pos);
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if want == 0 {
            return Ok(0);
        }
        let at = self
            .start
            .checked_add(pos)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset out of range"))?;
        self.src.read_at(&mut buf[..want], at)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    fn lend(&self, pos: u64, len: usize) -> Option<Lent> {
        let left = usize::try_from(self.len.saturating_sub(pos)).unwrap_or(usize::MAX);
        let want = left.min(len);
        if want == 0 {
            return None;
        }
        self.src.lend(self.start.checked_add(pos)?, want)
    }

    fn fetches_ahead(&self) -> bool {
        self.src.fetches_ahead()
    }
}

/// A [`ReadAt`] read as a stream: `Read + Seek` with a position of its own
/// (the reading thread's view of a source its jobs share). A read error
/// that does not name the source is given its name and offset.
pub struct AtCursor {
    src: Arc<dyn ReadAt>,
    name: Arc<str>,
    pos: u64,
}

impl std::fmt::Debug for AtCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtCursor")
            .field("name", &self.name)
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

impl AtCursor {
    /// A cursor over `src`, called `name` in messages, at byte `pos`.
    pub fn new(src: Arc<dyn ReadAt>, name: &str, pos: u64) -> AtCursor {
        AtCursor {
            src,
            name: name.into(),
            pos,
        }
    }

    /// The source.
    pub fn source(&self) -> &Arc<dyn ReadAt> {
        &self.src
    }

    /// The name given to the source.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn locate(&self, e: io::Error) -> io::Error {
        if self.name.is_empty() || e.to_string().contains(&*self.name) {
            return e;
        }
        io::Error::new(
            e.kind(),
            format!("{}: at byte {}: {e}", self.name, self.pos),
        )
    }
}

impl Read for AtCursor {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self
            .src
            .read_at(buf, self.pos)
            .map_err(|e| self.locate(e))?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for AtCursor {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let bad = || io::Error::new(io::ErrorKind::InvalidInput, "seek out of range");
        self.pos = match to {
            SeekFrom::Start(n) => n,
            SeekFrom::Current(d) => self.pos.checked_add_signed(d).ok_or_else(bad)?,
            SeekFrom::End(d) => {
                let len = self.src.size().map_err(|e| self.locate(e))?;
                len.checked_add_signed(d).ok_or_else(bad)?
            }
        };
        Ok(self.pos)
    }
}

/// Reads until `buf` is full or the input ends; how many bytes were read.
/// Interrupted reads are retried; other errors are returned.
pub fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One byte a read, with an interruption before each.
    struct Trickle<'a>(&'a [u8], bool);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 = !self.1;
            if self.1 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let Some((&b, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = b;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn a_slice_reads_its_window_only() {
        struct Mem(Vec<u8>);
        impl ReadAt for Mem {
            fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
                let from = usize::try_from(pos).unwrap().min(self.0.len());
                let n = buf.len().min(self.0.len() - from);
                buf[..n].copy_from_slice(&self.0[from..from + n]);
                Ok(n)
            }
            fn size(&self) -> io::Result<u64> {
                Ok(self.0.len() as u64)
            }
        }
        let s = Slice::new(Arc::new(Mem(b"zipHEADwarc bytesTAIL".to_vec())), 7, 10);
        assert_eq!(s.size().unwrap(), 10);
        let mut buf = [0u8; 32];
        let n = s.read_at(&mut buf, 0).unwrap();
        assert_eq!(&buf[..n], b"warc bytes");
        let n = s.read_at(&mut buf, 5).unwrap();
        assert_eq!(&buf[..n], b"bytes");
        assert_eq!(s.read_at(&mut buf, 10).unwrap(), 0);
        assert_eq!(s.read_at(&mut buf, u64::MAX).unwrap(), 0);
        // A source that lends: the window's offsets and end, forwarded.
        struct Lending(Arc<Vec<u8>>);
        impl ReadAt for Lending {
            fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
                Err(io::Error::other("copying"))
            }
            fn size(&self) -> io::Result<u64> {
                Ok(self.0.len() as u64)
            }
            fn lend(&self, pos: u64, len: usize) -> Option<Lent> {
                let from = usize::try_from(pos).ok()?;
                Some(Lent::new(self.0.clone(), from, from.saturating_add(len)))
            }
            fn fetches_ahead(&self) -> bool {
                true
            }
        }
        assert!(s.lend(0, 4).is_none(), "a copying source lends nothing");
        assert!(!s.fetches_ahead());
        let l = Slice::new(
            Arc::new(Lending(Arc::new(b"zipHEADwarc bytesTAIL".to_vec()))),
            7,
            10,
        );
        assert_eq!(l.lend(0, 4).unwrap().bytes(), b"warc");
        assert_eq!(l.lend(5, 100).unwrap().bytes(), b"bytes");
        assert!(l.lend(10, 4).is_none());
        // And whether it fetches ahead (the decoding jobs' budget).
        assert!(l.fetches_ahead());
        assert_eq!(Lent::new(Arc::new(vec![1u8, 2]), 1, 9).bytes(), [2]);
        assert!(Lent::new(Arc::new(vec![1u8, 2]), 5, 9).bytes().is_empty());
        let mut c = AtCursor::new(Arc::new(s), "w.wacz#archive/x.warc", 0);
        let mut all = Vec::new();
        c.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"warc bytes");
    }

    #[test]
    fn cursor_reads_seeks_and_names_its_errors() {
        struct Failing;
        impl ReadAt for Failing {
            fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
                Err(io::Error::other("boom"))
            }
            fn size(&self) -> io::Result<u64> {
                Ok(10)
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let f: Arc<dyn ReadAt> = Arc::new(std::fs::File::open(&p).unwrap());
        assert_eq!(f.size().unwrap(), 10);
        let mut c = AtCursor::new(f, "f", 3);
        let mut buf = [0u8; 4];
        assert_eq!(read_up_to(&mut c, &mut buf).unwrap(), 4);
        assert_eq!(&buf, b"3456");
        assert_eq!(c.seek(SeekFrom::End(-2)).unwrap(), 8);
        assert_eq!(read_up_to(&mut c, &mut buf).unwrap(), 2);
        assert_eq!(&buf[..2], b"89");
        assert!(c.seek(SeekFrom::Current(-20)).is_err());
        let mut c = AtCursor::new(Arc::new(Failing), "s3://b/k", 7);
        let e = c.read(&mut buf).unwrap_err().to_string();
        assert_eq!(e, "s3://b/k: at byte 7: boom");
    }

    #[test]
    fn fills_across_short_and_interrupted_reads() {
        let mut buf = [0u8; 4];
        assert_eq!(
            read_up_to(&mut Trickle(b"abcdef", false), &mut buf).unwrap(),
            4
        );
        assert_eq!(&buf, b"abcd");
        let mut buf = [0u8; 8];
        assert_eq!(read_up_to(&mut Trickle(b"xy", false), &mut buf).unwrap(), 2);
        assert_eq!(&buf[..2], b"xy");
    }
}
