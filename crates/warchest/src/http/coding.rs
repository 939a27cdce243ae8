//! Content and transfer codings, and readers that undo them.

use std::fmt;
use std::io::{self, BufReader, Cursor, Read};

use super::{ChunkedReader, HttpError};

/// One content or transfer coding, as named in `Content-Encoding` or
/// `Transfer-Encoding`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Coding {
    /// `identity` (or an empty name): no coding.
    Identity,
    /// `chunked` (a transfer coding only).
    Chunked,
    /// `gzip` or `x-gzip`.
    Gzip,
    /// `deflate`: zlib-wrapped as RFC 9110 says, or raw deflate as some
    /// servers send; told apart by the first two bytes.
    Deflate,
    /// `br`.
    Brotli,
    /// `zstd`.
    Zstd,
    /// `compress` or `x-compress` (LZW): recognised, not decoded.
    Compress,
    /// Any other name, lower-case.
    Other(String),
}

impl Coding {
    /// The coding a list element names: trimmed, ASCII case ignored,
    /// parameters after `;` dropped.
    pub fn parse(token: &[u8]) -> Coding {
        let end = memchr::memchr(b';', token).unwrap_or(token.len());
        let t = super::trim(&token[..end]).to_ascii_lowercase();
        match &t[..] {
            b"" | b"identity" => Coding::Identity,
            b"chunked" => Coding::Chunked,
            b"gzip" | b"x-gzip" => Coding::Gzip,
            b"deflate" | b"x-deflate" => Coding::Deflate,
            b"br" => Coding::Brotli,
            b"zstd" => Coding::Zstd,
            b"compress" | b"x-compress" => Coding::Compress,
            _ => Coding::Other(String::from_utf8_lossy(&t).into_owned()),
        }
    }

    /// The canonical lower-case name.
    pub fn name(&self) -> &str {
        match self {
            Coding::Identity => "identity",
            Coding::Chunked => "chunked",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
            Coding::Compress => "compress",
            Coding::Other(s) => s,
        }
    }

    /// True when [`decode_content`] can undo it (`br` and `zstd` only with
    /// the `brotli` and `zstd` features).
    pub fn is_supported(&self) -> bool {
        !matches!(self, Coding::Compress | Coding::Other(_)) && self.missing_feature().is_none()
    }

    /// The Cargo feature this build lacks to decode it (`brotli` for `br`,
    /// `zstd` for `zstd`), if any.
    pub fn missing_feature(&self) -> Option<&'static str> {
        match self {
            Coding::Brotli if !cfg!(feature = "brotli") => Some("brotli"),
            Coding::Zstd if !cfg!(feature = "zstd") => Some("zstd"),
            _ => None,
        }
    }
}

impl fmt::Display for Coding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One decoder on top of `$r` (shared by both functions below, so the
/// list of codings lives once). Unsupported codings were refused before.
macro_rules! stack {
    ($r:ident, $c:ident) => {
        match $c {
            Coding::Chunked => Box::new(ChunkedReader::lenient(BufReader::new($r))),
            Coding::Gzip => Box::new(flate2::read::MultiGzDecoder::new($r)),
            Coding::Deflate => Box::new(Deflate::Sniffing(Some($r))),
            #[cfg(feature = "brotli")]
            Coding::Brotli => Box::new(brotli_decompressor::Decompressor::new($r, 8192)),
            #[cfg(feature = "zstd")]
            Coding::Zstd => Box::new(zstd::stream::read::Decoder::new($r)?),
            // Without their features br and zstd were refused before, as
            // compress and unknown names were.
            #[cfg(not(feature = "brotli"))]
            Coding::Brotli => $r,
            #[cfg(not(feature = "zstd"))]
            Coding::Zstd => $r,
            Coding::Identity | Coding::Compress | Coding::Other(_) => $r,
        }
    };
}

/// A reader that undoes `codings`, listed in the order they were applied
/// (the order of the header: `Content-Encoding: gzip, br` is decoded br
/// first, then gzip). `identity` is skipped; `chunked` is removed with a
/// lenient [`ChunkedReader`], so a whole `Transfer-Encoding` chain works
/// too.
///
/// Decoders: gzip with any number of members; deflate, zlib-wrapped or raw;
/// brotli; zstd with any number of frames (window up to zstd's default
/// 128 MiB limit, so memory stays bounded). Corrupt data is an `io::Error`
/// from `read`; a caller that wants the raw body then can re-read it.
///
/// # Errors
/// [`HttpError::UnsupportedCoding`] for `compress` and unknown names, and
/// [`HttpError::NotCompiledIn`] for `br` or `zstd` without their features,
/// before anything is read; [`HttpError::Io`] if a decoder cannot be set up.
pub fn decode_content<'a, R: Read + 'a>(
    reader: R,
    codings: &[Coding],
) -> Result<Box<dyn Read + 'a>, HttpError> {
    check_codings(codings)?;
    let mut r: Box<dyn Read + 'a> = Box::new(reader);
    for c in codings.iter().rev() {
        r = stack!(r, c);
    }
    Ok(r)
}

/// [`decode_content`] for a reader that can move between threads, as a
/// Python stream read with the interpreter lock released must.
///
/// # Errors
/// As [`decode_content`].
pub fn decode_content_send<'a, R: Read + Send + 'a>(
    reader: R,
    codings: &[Coding],
) -> Result<Box<dyn Read + Send + 'a>, HttpError> {
    check_codings(codings)?;
    let mut r: Box<dyn Read + Send + 'a> = Box::new(reader);
    for c in codings.iter().rev() {
        r = stack!(r, c);
    }
    Ok(r)
}

/// The most codings one body is decoded through (transfer and content
/// codings together). Each is a reader stacked on the one before, so a
/// head naming thousands (`Transfer-Encoding: chunked` repeated 20,000
/// times) would otherwise nest readers as deep as the stack; no real server
/// applies more than a few.
pub const MAX_CODINGS: usize = 8;

fn check_codings(codings: &[Coding]) -> Result<(), HttpError> {
    let applied = codings.iter().filter(|c| **c != Coding::Identity).count();
    if applied > MAX_CODINGS {
        return Err(HttpError::TooManyCodings {
            count: applied,
            limit: MAX_CODINGS,
        });
    }
    match codings.iter().find(|c| !c.is_supported()) {
        Some(bad) => Err(match (bad, bad.missing_feature()) {
            (Coding::Brotli, Some(feature)) => HttpError::NotCompiledIn {
                coding: "br",
                feature,
            },
            (Coding::Zstd, Some(feature)) => HttpError::NotCompiledIn {
                coding: "zstd",
                feature,
            },
            _ => HttpError::UnsupportedCoding(bad.name().to_owned()),
        }),
        None => Ok(()),
    }
}

type Peeked<R> = io::Chain<Cursor<Vec<u8>>, R>;

/// `deflate`: decides between zlib and raw deflate on the first read.
enum Deflate<R> {
    Sniffing(Option<R>),
    Zlib(flate2::read::ZlibDecoder<Peeked<R>>),
    Raw(flate2::read::DeflateDecoder<Peeked<R>>),
}

impl<R: Read> Read for Deflate<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Deflate::Sniffing(slot) = self {
            let Some(mut inner) = slot.take() else {
                return Err(io::Error::other("deflate reader failed earlier"));
            };
            let mut head = [0u8; 2];
            let mut n = 0;
            while n < 2 {
                match inner.read(&mut head[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k.min(2 - n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            // A zlib header: CM 8, window <= 32K, and the check bits.
            let zlib = n == 2
                && head[0] & 0x0f == 8
                && head[0] >> 4 <= 7
                && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0;
            let peeked = Cursor::new(head[..n].to_vec()).chain(inner);
            *self = if zlib {
                Deflate::Zlib(flate2::read::ZlibDecoder::new(peeked))
            } else {
                Deflate::Raw(flate2::read::DeflateDecoder::new(peeked))
            };
        }
        match self {
            Deflate::Zlib(d) => d.read(buf),
            Deflate::Raw(d) => d.read(buf),
            Deflate::Sniffing(_) => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn thousands_of_codings_are_refused_not_stacked() {
        let many = vec![Coding::Chunked; 20_001];
        match decode_content(&b"0\r\n\r\n"[..], &many) {
            Err(HttpError::TooManyCodings { count, limit }) => {
                assert_eq!((count, limit), (20_001, MAX_CODINGS));
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("20,001 codings accepted"),
        }
        // Identity is no layer; the limit itself is fine.
        let mut ok = vec![Coding::Identity; 100];
        ok.extend(vec![Coding::Chunked; MAX_CODINGS]);
        assert!(decode_content(&b""[..], &ok).is_ok());
    }

    const TEXT: &[u8] = b"hello hello hello brotli";
    // brotli-compressed TEXT (made with the reference encoder).
    #[cfg(feature = "brotli")]
    const BROTLI: &str = "1b1700f88d946ede445586d66c20696fd31049e2a903569a78b46806";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(mut r: impl Read) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        r.read_to_end(&mut v)?;
        Ok(v)
    }

    #[test]
    fn parse_names() {
        for (t, c) in [
            (&b"gzip"[..], Coding::Gzip),
            (b" X-GZIP ", Coding::Gzip),
            (b"Chunked", Coding::Chunked),
            (b"br", Coding::Brotli),
            (b"deflate", Coding::Deflate),
            (b"zstd", Coding::Zstd),
            (b"identity", Coding::Identity),
            (b"", Coding::Identity),
            (b"gzip;q=1", Coding::Gzip),
            (b"x-compress", Coding::Compress),
            (b"Snappy", Coding::Other("snappy".into())),
        ] {
            assert_eq!(Coding::parse(t), c, "{:?}", String::from_utf8_lossy(t));
        }
        assert_eq!(Coding::Brotli.to_string(), "br");
        assert!(!Coding::Compress.is_supported());
    }

    #[test]
    fn decoders() {
        // gzip, two members.
        let mut two = gzip(b"first ");
        two.extend(gzip(b"second"));
        let out = read_all(decode_content(&two[..], &[Coding::Gzip]).unwrap()).unwrap();
        assert_eq!(out, b"first second");

        // deflate, zlib-wrapped and raw.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(TEXT).unwrap();
        let z = z.finish().unwrap();
        assert_eq!(
            read_all(decode_content(&z[..], &[Coding::Deflate]).unwrap()).unwrap(),
            TEXT
        );
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        d.write_all(TEXT).unwrap();
        let d = d.finish().unwrap();
        assert_eq!(
            read_all(decode_content(&d[..], &[Coding::Deflate]).unwrap()).unwrap(),
            TEXT
        );
        // Read one byte at a time: the two-byte sniff copes.
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(b.len()).min(1);
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        for data in [&z, &d] {
            let r = decode_content(OneByte(data), &[Coding::Deflate]).unwrap();
            assert_eq!(read_all(r).unwrap(), TEXT);
        }

        // brotli.
        #[cfg(feature = "brotli")]
        {
            let br = data_encoding::HEXLOWER.decode(BROTLI.as_bytes()).unwrap();
            assert_eq!(
                read_all(decode_content(&br[..], &[Coding::Brotli]).unwrap()).unwrap(),
                TEXT
            );
        }

        // zstd, two frames.
        #[cfg(feature = "zstd")]
        {
            let mut zs = zstd::encode_all(&b"one "[..], 3).unwrap();
            zs.extend(zstd::encode_all(&b"two"[..], 3).unwrap());
            assert_eq!(
                read_all(decode_content(&zs[..], &[Coding::Zstd]).unwrap()).unwrap(),
                b"one two"
            );
        }

        // identity and empty chain.
        assert_eq!(read_all(decode_content(TEXT, &[]).unwrap()).unwrap(), TEXT);
        assert_eq!(
            read_all(decode_content(TEXT, &[Coding::Identity]).unwrap()).unwrap(),
            TEXT
        );
    }

    #[test]
    fn chain_order() {
        // `Content-Encoding: deflate, gzip`: deflate applied first, so gzip
        // is undone first. (No brotli encoder here to test `gzip, br`.)
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(TEXT).unwrap();
        let both = gzip(&z.finish().unwrap());
        let r = decode_content(&both[..], &[Coding::Deflate, Coding::Gzip]).unwrap();
        assert_eq!(read_all(r).unwrap(), TEXT);
        // Reversed order fails: it is not deflate on the outside.
        let r = decode_content(&both[..], &[Coding::Gzip, Coding::Deflate]).unwrap();
        assert!(read_all(r).map_or(true, |v| v != TEXT));
        // A transfer chain: gzip, then chunked.
        let g = gzip(TEXT);
        let mut chunked = format!("{:x}\r\n", g.len()).into_bytes();
        chunked.extend_from_slice(&g);
        chunked.extend_from_slice(b"\r\n0\r\n\r\n");
        let r = decode_content(&chunked[..], &[Coding::Gzip, Coding::Chunked]).unwrap();
        assert_eq!(read_all(r).unwrap(), TEXT);
    }

    #[test]
    fn unsupported_and_corrupt() {
        for c in [Coding::Compress, Coding::Other("snappy".into())] {
            match decode_content(TEXT, &[Coding::Gzip, c.clone()]) {
                Err(HttpError::UnsupportedCoding(n)) => assert_eq!(n, c.name()),
                other => panic!("{c}: {:?}", other.map(|_| ())),
            }
        }
        for c in [Coding::Gzip, Coding::Deflate, Coding::Brotli, Coding::Zstd] {
            if !c.is_supported() {
                continue;
            }
            let r = decode_content(
                &b"definitely not compressed data"[..],
                std::slice::from_ref(&c),
            )
            .unwrap();
            assert!(read_all(r).is_err(), "{c}");
        }
    }

    /// br and zstd without their features: refused before anything is
    /// read, with the feature named, never passed through undecoded.
    #[test]
    fn codings_of_features_that_are_off() {
        for (c, feature, on) in [
            (Coding::Brotli, "brotli", cfg!(feature = "brotli")),
            (Coding::Zstd, "zstd", cfg!(feature = "zstd")),
        ] {
            assert_eq!(c.is_supported(), on, "{c}");
            assert_eq!(c.missing_feature(), (!on).then_some(feature), "{c}");
            let r = decode_content(TEXT, &[Coding::Gzip, c.clone()]);
            if on {
                assert!(r.is_ok(), "{c}");
                continue;
            }
            let e = r.err().unwrap();
            assert!(
                matches!(e, HttpError::NotCompiledIn { feature: f, .. } if f == feature),
                "{c}: {e}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("support not compiled in (feature {feature})")),
                "{msg}"
            );
            let e = crate::Error::from(e);
            assert!(
                matches!(e.kind(), crate::ErrorKind::NotCompiledIn { .. }),
                "{e}"
            );
        }
        assert_eq!(Coding::Gzip.missing_feature(), None);
        assert_eq!(Coding::Compress.missing_feature(), None);
    }
}
