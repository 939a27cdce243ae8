//! Small I/O helpers shared by the modules that read files directly.

use std::io::{self, Read};

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
