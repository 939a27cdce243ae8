//! Bodies stopped at a size or time limit, or by a dropped connection, and
//! the WARC-Truncated reason that says so (WARC 1.1 section 5.13: "the
//! Content-Length shall be the length of the block actually stored").

use std::io::{self, Read};
use std::time::{Duration, Instant};

use crate::warc::TruncatedReason;

/// When a capture stops reading a body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureLimits {
    /// Keep at most this many bytes (`length`).
    pub max_len: Option<u64>,
    /// Stop reading after this long (`time`). Checked between reads: a
    /// source that blocks needs its own read timeout, whose
    /// `TimedOut` error also ends the body with `time`.
    pub max_time: Option<Duration>,
}

/// A reader that ends a body at the [`CaptureLimits`], or when the source
/// fails as a dropped connection does, and remembers why.
///
/// A source error of kind `ConnectionReset`, `ConnectionAborted`,
/// `BrokenPipe` or `UnexpectedEof` ends the body with `disconnect`;
/// `TimedOut` and `WouldBlock` with `time`. Other errors pass through, and
/// so does any error carrying a warchest [`Error`](crate::Error) (a body
/// read from an archive): that is the archive failing, not the peer.
#[derive(Debug)]
pub struct LimitedReader<R> {
    inner: R,
    limits: CaptureLimits,
    deadline: Option<Instant>,
    read: u64,
    reason: Option<TruncatedReason>,
    done: bool,
}

impl<R: Read> LimitedReader<R> {
    /// Starts the clock now.
    pub fn new(inner: R, limits: CaptureLimits) -> Self {
        LimitedReader {
            inner,
            limits,
            deadline: limits.max_time.map(|d| Instant::now() + d),
            read: 0,
            reason: None,
            done: false,
        }
    }

    /// Why the body was cut, once reading has ended; `None` when it ended
    /// by itself.
    pub fn truncated(&self) -> Option<&TruncatedReason> {
        self.reason.as_ref()
    }

    /// Bytes given so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The source.
    pub fn into_inner(self) -> R {
        self.inner
    }

    fn stop(&mut self, reason: TruncatedReason) -> io::Result<usize> {
        self.reason = Some(reason);
        self.done = true;
        Ok(0)
    }
}

impl<R: Read> Read for LimitedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return self.stop(TruncatedReason::Time);
        }
        let want = match self.limits.max_len {
            Some(max) if self.read >= max => {
                // At the limit: one more byte tells a body of exactly the
                // limit from a longer one.
                let mut probe = [0u8; 1];
                return match self.inner.read(&mut probe) {
                    Ok(0) => {
                        self.done = true;
                        Ok(0)
                    }
                    Ok(_) => self.stop(TruncatedReason::Length),
                    Err(e) => self.failed(e),
                };
            }
            Some(max) => buf
                .len()
                .min(usize::try_from(max - self.read).unwrap_or(usize::MAX)),
            None => buf.len(),
        };
        match self.inner.read(&mut buf[..want]) {
            Ok(0) => {
                self.done = true;
                Ok(0)
            }
            Ok(n) => {
                self.read += n as u64;
                Ok(n)
            }
            Err(e) => self.failed(e),
        }
    }
}

impl<R: Read> LimitedReader<R> {
    fn failed(&mut self, e: io::Error) -> io::Result<usize> {
        use io::ErrorKind as K;
        // A located archive error keeps its I/O kind (a remote WARC cut
        // off is ConnectionReset too), yet no capture was cut short.
        if crate::Error::carried_by(&e).is_some() {
            return Err(e);
        }
        match e.kind() {
            K::Interrupted => Err(e),
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                self.stop(TruncatedReason::Disconnect)
            }
            K::TimedOut | K::WouldBlock => self.stop(TruncatedReason::Time),
            _ => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(r: &mut impl Read) -> Vec<u8> {
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn length_limit_only_when_there_is_more() {
        let data = [1u8; 100];
        let lim = CaptureLimits {
            max_len: Some(100),
            ..Default::default()
        };
        let mut r = LimitedReader::new(&data[..], lim);
        assert_eq!(drain(&mut r).len(), 100);
        assert_eq!(r.truncated(), None);
        let lim = CaptureLimits {
            max_len: Some(40),
            ..Default::default()
        };
        let mut r = LimitedReader::new(&data[..], lim);
        assert_eq!(drain(&mut r).len(), 40);
        assert_eq!(r.truncated(), Some(&TruncatedReason::Length));
    }

    struct Dropping(u32);
    impl Read for Dropping {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"));
            }
            self.0 -= 1;
            buf[0] = b'x';
            Ok(1)
        }
    }

    #[test]
    fn disconnect_and_time() {
        let mut r = LimitedReader::new(Dropping(3), CaptureLimits::default());
        assert_eq!(drain(&mut r), b"xxx");
        assert_eq!(r.truncated(), Some(&TruncatedReason::Disconnect));
        let lim = CaptureLimits {
            max_time: Some(Duration::ZERO),
            ..Default::default()
        };
        let mut r = LimitedReader::new(&b"abc"[..], lim);
        assert_eq!(drain(&mut r), b"");
        assert_eq!(r.truncated(), Some(&TruncatedReason::Time));
        // Other errors are errors.
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk"))
            }
        }
        let mut r = LimitedReader::new(Broken, CaptureLimits::default());
        assert!(r.read(&mut [0u8; 4]).is_err());
        // An archive's read failure, even of a disconnect's kind, is an
        // error: no WARC-Truncated for it.
        struct ArchiveCut;
        impl Read for ArchiveCut {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                let e = crate::Error::from(io::Error::from(io::ErrorKind::ConnectionReset));
                Err(e.at(crate::Position::at(7)).in_file("a.warc").into())
            }
        }
        let mut r = LimitedReader::new(ArchiveCut, CaptureLimits::default());
        let e = r.read(&mut [0u8; 4]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(r.truncated(), None);
    }
}
