//! Compression: bytes as stored -> decompressed bytes, member by member.
//!
//! A web archive file is a sequence of *members*: gzip members, zstd frames or
//! LZ4 frames, each compressed on its own, or one plain (uncompressed) run of
//! bytes. The record layers above read decompressed bytes through the
//! [`Source`] trait, which also tells them where in the stored file the
//! current member starts and ends: that is the offset and length a CDX index
//! records for a record.
//!
//! The codec of each member is sniffed from its magic bytes, never from a file
//! name. [`Decoder`] is the streaming implementation over any [`Read`]: it
//! owns the input and sniffs each member, and hands the member to the decoder
//! of its codec (`plain`, `gzip_member`, `zstd_member`, `lz4_member`, behind
//! the crate-private `member::MemberDecoder` trait). With the `parallel`
//! feature, a decoder over a file can decode members ahead on a rayon pool
//! (`parallel`).

use std::io::Read;

mod decoder;
mod gzip;
mod gzip_member;
mod inflate;
mod input;
mod lz4;
mod lz4_member;
mod map;
mod member;
#[cfg(feature = "parallel")]
mod parallel;
#[cfg(not(feature = "parallel"))]
mod parallel_off;
#[cfg(not(feature = "parallel"))]
use parallel_off as parallel;
mod plain;
pub mod zstd_frame;
mod zstd_member;

pub use decoder::{Decoder, DecoderOptions};
pub use gzip::{GzipHeader, GzipTrailer, MAX_KEPT_FIELD, parse_gzip_header};
#[cfg(feature = "libdeflate")]
pub(crate) use inflate::FastDeflater;
#[cfg(feature = "lz4")]
pub(crate) use lz4::{MAGIC as LZ4_MAGIC, Xxh32, xxh32};
pub(crate) use map::prefetch;

/// The compression of one member, as sniffed from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum Codec {
    /// Not compressed.
    None,
    /// A gzip member (RFC 1952).
    Gzip,
    /// A zstd frame (RFC 8878), possibly using the file's dictionary.
    Zstd,
    /// An LZ4 frame (the LZ4 frame format, magic `04 22 4D 18`).
    Lz4,
}

impl Codec {
    /// Sniffs the codec from the first bytes of a member. `None` when the
    /// bytes are not the magic number of a known compressed format (which
    /// includes too few bytes to tell).
    pub fn sniff(bytes: &[u8]) -> Option<Codec> {
        match bytes {
            [0x1f, 0x8b, 0x08, ..] => Some(Codec::Gzip),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Some(Codec::Zstd),
            // Skippable frames 0x184D2A50..=0x184D2A5F; 0x184D2A5D is the
            // .warc.zst dictionary frame.
            [b0, 0x2a, 0x4d, 0x18, ..] if b0 & 0xf0 == 0x50 => Some(Codec::Zstd),
            [0x04, 0x22, 0x4d, 0x18, ..] => Some(Codec::Lz4),
            _ => None,
        }
    }

    /// The lower-case name used in reports (`none`, `gzip`, `zstd`, `lz4`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
        }
    }
}

/// A member or frame is corrupt, truncated, or breaks a limit.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{codec} member at offset {offset}: {message}")]
pub struct CodecError {
    /// The codec of the member.
    pub codec: &'static str,
    /// Stored offset of the member's start.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

/// Decompressed bytes of a stored file, member by member.
///
/// `fill_buf` never returns bytes of two members in one slice: an empty slice
/// means the current member is exhausted (or the input ended), and the caller
/// decides whether to go on with [`Source::next_member`]. This is what lets the
/// record layer tell which member a record starts in and ends in.
pub trait Source {
    /// Decompressed bytes of the current member not yet consumed. Empty when
    /// the member is exhausted.
    ///
    /// # Errors
    /// A corrupt member in strict mode, or an I/O error.
    fn fill_buf(&mut self) -> crate::Result<&[u8]>;

    /// Marks `n` bytes of the last `fill_buf` as consumed.
    fn consume(&mut self, n: usize);

    /// Moves to the next member, skipping what is left of the current one.
    /// Returns `false` at the end of the input.
    ///
    /// # Errors
    /// A damaged member header in strict mode, or an I/O error.
    fn next_member(&mut self) -> crate::Result<bool>;

    /// Stored offset where the current member starts.
    fn member_offset(&self) -> u64;

    /// The codec of the current member.
    fn codec(&self) -> Codec;

    /// Decompressed bytes of the current member consumed so far.
    fn member_pos(&self) -> u64;

    /// Stored offset just past the current member, once its end has been
    /// reached (`fill_buf` returned empty); `None` before that.
    fn member_end(&self) -> Option<u64>;

    /// In a plain member, ends it at the current position so that what
    /// follows is sniffed as a new member: the reader calls this when
    /// compressed members follow plain records (gzip appended to a plain
    /// file). Returns `false` when not in a plain member or not supported.
    fn end_plain_member(&mut self) -> bool {
        false
    }

    /// Moves recoveries made since the last call into `out` (lenient mode).
    fn drain_warnings(&mut self, out: &mut Vec<crate::Warning>);

    /// The SHA-1s a decoding job computed over the current member's WARC
    /// block ([`DecoderOptions::member_digests`]), so that the reading
    /// thread need not hash it ([`crate::check::Checker::use_job_digests`]);
    /// `None` where no job did (the default).
    fn member_digests(&self) -> Option<&crate::check::MemberDigests> {
        None
    }

    /// Reads bytes of the current member straight into `out`, when the
    /// source can do it without a copy of its own (a plain member with
    /// nothing buffered: one `read` into `out`), as `fill_buf`, a copy and
    /// `consume` would; at most `out.len()` bytes. `None` when it cannot
    /// (the default): the caller goes through [`Source::fill_buf`].
    ///
    /// # Errors
    /// As [`Source::fill_buf`].
    fn read_direct(&mut self, out: &mut [u8]) -> crate::Result<Option<usize>> {
        let _ = out;
        Ok(None)
    }

    /// Tells the source that its caller reads payloads whole from here on,
    /// each into a buffer of its own (as a Python loop does): a plain file
    /// served from a memory map is then read with `read` calls, unless the
    /// page cache holds it so that the map is the cheaper. Once every page
    /// is touched, a map costs from a fifth less to a fifth more than those
    /// calls, by how the page cache holds the file
    /// (docs/performance-history.md, round fifteen), which the source
    /// measures once by the faults of a MiB of the file. What is read does
    /// not change.
    /// `true` when the source changed how it reads; the default does
    /// nothing.
    ///
    /// # Errors
    /// The file cannot be sought to where the map was read to.
    fn prefer_reads(&mut self) -> crate::Result<bool> {
        Ok(false)
    }

    /// Skips up to `n` decompressed bytes of the current member, returning
    /// how many were skipped (fewer only at the member's end). Implementations
    /// may seek instead of reading.
    ///
    /// # Errors
    /// As [`Source::fill_buf`].
    fn skip(&mut self, mut n: u64) -> crate::Result<u64> {
        let mut done = 0;
        while n > 0 {
            let avail = self.fill_buf()?.len();
            if avail == 0 {
                break;
            }
            let k = avail.min(usize::try_from(n).unwrap_or(usize::MAX));
            self.consume(k);
            n -= k as u64;
            done += k as u64;
        }
        Ok(done)
    }
}

/// Opens `reader` as a [`Decoder`] with default (lenient) options.
pub fn decode<R: Read>(reader: R) -> Decoder<R> {
    Decoder::new(reader, DecoderOptions::default())
}

/// A gzip member with an `sl` subfield (stored and decoded length), the
/// sizes patched in after compression (tests).
#[cfg(test)]
fn gz_sl(data: &[u8], stored: impl Fn(u32) -> u32, decoded: u32) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::GzBuilder::new()
        .extra(b"sl\x08\x00\0\0\0\0\0\0\0\0".to_vec())
        .write(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    let mut m = e.finish().unwrap();
    assert_eq!(&m[12..14], b"sl");
    let s = stored(m.len() as u32).to_le_bytes();
    m[16..20].copy_from_slice(&s);
    m[20..24].copy_from_slice(&decoded.to_le_bytes());
    m
}
