//! The WARC payload digest of an HTTP block.

use crate::digest::{Algorithm, Digest, Hasher, Output};

use super::{ChunkedDecoder, ChunkedEnd, ChunkedError, HttpHead};

/// What the chunked transfer coding of a body turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "state"))]
pub enum Chunking {
    /// The head did not announce `chunked`: payload and raw are the same.
    NotChunked,
    /// Chunked, ended properly.
    Complete,
    /// Chunked; the last chunk was seen but not the final empty line.
    MissingFinalCrlf,
    /// Chunked; the block ended before the last chunk.
    Truncated,
    /// Announced as chunked but not validly chunked. The payload digest is
    /// then the raw digest, as readers that fall back to the raw body
    /// (warcio) compute it.
    Malformed(ChunkedError),
}

/// How a recorded payload digest compares with what was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum PayloadMatch {
    /// It is the digest of the payload (transfer coding removed): correct.
    Payload,
    /// It is the digest of the raw, still chunked, bytes: a common writer
    /// bug, worth a warning rather than an error.
    RawChunked,
    /// It is neither.
    Mismatch,
    /// Not comparable: unknown algorithm, or not the one computed.
    Unchecked,
}

/// The result of a [`PayloadDigester`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadDigests {
    /// The algorithm of both digests.
    pub algorithm: Algorithm,
    /// The payload digest WARC 1.1 section 5.9 defines: chunked transfer
    /// coding removed, content coding kept.
    pub payload: Output,
    /// The digest of the bytes after the head as stored.
    pub raw: Output,
    /// Length of the payload.
    pub payload_len: u64,
    /// Length of the raw bytes.
    pub raw_len: u64,
    /// What the chunking was.
    pub chunking: Chunking,
    /// Bytes after the last chunk that are neither trailer nor stray line
    /// ends; not part of the payload.
    pub trailing: u64,
}

impl PayloadDigests {
    /// Compares a recorded `WARC-Payload-Digest` with the digests.
    pub fn check(&self, recorded: &Digest) -> PayloadMatch {
        if recorded.algorithm() != Some(self.algorithm) {
            PayloadMatch::Unchecked
        } else if recorded.matches(&self.payload) {
            PayloadMatch::Payload
        } else if self.chunking != Chunking::NotChunked && recorded.matches(&self.raw) {
            PayloadMatch::RawChunked
        } else {
            PayloadMatch::Mismatch
        }
    }
}

/// Computes, in one pass over the block bytes *after the HTTP head*, the
/// WARC payload digest (chunked transfer coding removed) and the digest of
/// the raw bytes, so a checker can tell a writer that digested the chunked
/// bytes from a wrong digest.
///
/// Other transfer codings than `chunked` (rare) are not removed. When the
/// body is announced as chunked but is not (see [`Chunking::Malformed`]),
/// the payload digest falls back to the raw digest.
#[derive(Debug, Clone)]
pub struct PayloadDigester {
    algorithm: Algorithm,
    raw: Hasher,
    raw_len: u64,
    chunked: Option<Chunked>,
}

#[derive(Debug, Clone)]
struct Chunked {
    dec: ChunkedDecoder,
    payload: Hasher,
    trailing: u64,
}

impl PayloadDigester {
    /// A digester with `algorithm`; `chunked` when the head announces the
    /// chunked transfer coding.
    pub fn new(algorithm: Algorithm, chunked: bool) -> Self {
        PayloadDigester {
            algorithm,
            raw: Hasher::new(algorithm),
            raw_len: 0,
            chunked: chunked.then(|| Chunked {
                dec: ChunkedDecoder::new(),
                payload: Hasher::new(algorithm),
                trailing: 0,
            }),
        }
    }

    /// A digester for the body that follows `head`.
    pub fn for_head(algorithm: Algorithm, head: &HttpHead) -> Self {
        PayloadDigester::new(algorithm, head.is_chunked())
    }

    /// Feeds the next bytes of the body.
    pub fn update(&mut self, bytes: &[u8]) {
        self.raw.update(bytes);
        self.raw_len += bytes.len() as u64;
        let Some(c) = &mut self.chunked else {
            return;
        };
        if c.dec.error().is_some() {
            return;
        }
        if c.trailing > 0 {
            c.trailing += bytes.len() as u64;
            return;
        }
        let payload = &mut c.payload;
        // An error is kept in the decoder and read back in finish().
        if let Ok(n) = c.dec.feed(bytes, |d| payload.update(d)) {
            c.trailing += (bytes.len() - n) as u64;
        }
    }

    /// The digests.
    pub fn finish(self) -> PayloadDigests {
        let raw = self.raw.finalize();
        let (payload, payload_len, chunking, trailing) = match self.chunked {
            None => (raw, self.raw_len, Chunking::NotChunked, 0),
            Some(c) => match c.dec.error() {
                Some(e) => (raw, self.raw_len, Chunking::Malformed(*e), 0),
                None => {
                    let chunking = match c.dec.end() {
                        ChunkedEnd::Complete => Chunking::Complete,
                        ChunkedEnd::MissingFinalCrlf => Chunking::MissingFinalCrlf,
                        ChunkedEnd::Truncated => Chunking::Truncated,
                    };
                    (
                        c.payload.finalize(),
                        c.dec.decoded_len(),
                        chunking,
                        c.trailing,
                    )
                }
            },
        };
        PayloadDigests {
            algorithm: self.algorithm,
            payload,
            raw,
            payload_len,
            raw_len: self.raw_len,
            chunking,
            trailing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &[u8], chunked: bool, piece: usize) -> PayloadDigests {
        let mut d = PayloadDigester::new(Algorithm::Sha1, chunked);
        for p in body.chunks(piece.max(1)) {
            d.update(p);
        }
        d.finish()
    }

    fn sha1(b: &[u8]) -> Output {
        Hasher::digest(Algorithm::Sha1, b)
    }

    #[test]
    fn chunked_and_raw() {
        let body = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        for piece in [1, 2, 7, 1000] {
            let r = run(body, true, piece);
            assert_eq!(r.payload, sha1(b"hello world"), "{piece}");
            assert_eq!(r.raw, sha1(body));
            assert_eq!(r.payload_len, 11);
            assert_eq!(r.raw_len, body.len() as u64);
            assert_eq!(r.chunking, Chunking::Complete);
            let good = Digest::new(Algorithm::Sha1, &sha1(b"hello world"));
            assert_eq!(r.check(&good), PayloadMatch::Payload);
            let raw = Digest::new(Algorithm::Sha1, &sha1(body));
            assert_eq!(r.check(&raw), PayloadMatch::RawChunked);
            let other = Digest::new(Algorithm::Sha1, &sha1(b"x"));
            assert_eq!(r.check(&other), PayloadMatch::Mismatch);
            let s256 = Digest::new(Algorithm::Sha256, &Hasher::digest(Algorithm::Sha256, b""));
            assert_eq!(r.check(&s256), PayloadMatch::Unchecked);
            assert_eq!(
                r.check(&Digest::parse("foo:bar").unwrap()),
                PayloadMatch::Unchecked
            );
        }
    }

    #[test]
    fn not_chunked_is_raw() {
        let r = run(b"plain body", false, 3);
        assert_eq!(r.payload, r.raw);
        assert_eq!(r.payload, sha1(b"plain body"));
        assert_eq!(r.chunking, Chunking::NotChunked);
        // The raw digest never counts as "raw chunked" for an unchunked body.
        let d = Digest::new(Algorithm::Sha1, &sha1(b"plain body"));
        assert_eq!(r.check(&d), PayloadMatch::Payload);
    }

    #[test]
    fn malformed_falls_back_to_raw() {
        for piece in [1, 4, 100] {
            let r = run(b"<html>not chunked</html>", true, piece);
            assert_eq!(r.payload, sha1(b"<html>not chunked</html>"));
            assert!(matches!(r.chunking, Chunking::Malformed(e) if e.offset == 0));
            assert_eq!(r.payload_len, r.raw_len);
        }
    }

    #[test]
    fn trailing_truncated_and_missing_crlf() {
        let r = run(b"3\r\nabc\r\n0\r\n\r\n\r\nJUNK", true, 5);
        assert_eq!(r.payload, sha1(b"abc"));
        assert_eq!(r.trailing, 4);
        assert_eq!(r.chunking, Chunking::Complete);
        let r = run(b"3\r\nabc\r\n0\r\n", true, 1);
        assert_eq!(r.chunking, Chunking::MissingFinalCrlf);
        assert_eq!(r.payload, sha1(b"abc"));
        let r = run(b"8000000000000000\r\nabc", true, 2);
        assert_eq!(r.chunking, Chunking::Truncated);
        assert_eq!(r.payload, sha1(b"abc"));
    }
}
