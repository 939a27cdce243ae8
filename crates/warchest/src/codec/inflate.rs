//! Whole-member inflation with libdeflate.
//!
//! libdeflate inflates about twice as fast as zlib (docs/performance-history.md),
//! but only whole buffers: it must be given the complete deflate stream and
//! room for all its output. A gzip member of a WARC file is usually small
//! (a record), so the decoder tries this first when the member may fit in
//! its input buffer, and streams with zlib-rs when it does not (or when the
//! data is damaged, so the streaming path reports where).
//!
//! Without the `libdeflate` feature the same whole-buffer attempt is made
//! with flate2 (zlib-rs): the same results, without the speed-up.
//!
//! The writer deflates a small gzip member with libdeflate too
//! ([`FastDeflater`]): its bytes are gathered and compressed in one call.
//!
//! With libdeflate, the one module of the library with `unsafe`: the FFI
//! calls, each with its safety argument (and, on Linux, the `madvise` of
//! `advise_huge`).
#![cfg_attr(feature = "libdeflate", allow(unsafe_code))]

#[cfg(feature = "libdeflate")]
use std::ptr::NonNull;

#[cfg(feature = "libdeflate")]
use libdeflate_sys::{
    libdeflate_alloc_compressor, libdeflate_alloc_decompressor, libdeflate_compressor,
    libdeflate_crc32, libdeflate_decompressor, libdeflate_deflate_compress,
    libdeflate_deflate_compress_bound, libdeflate_deflate_decompress_ex,
    libdeflate_free_compressor, libdeflate_free_decompressor,
    libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE, libdeflate_result_LIBDEFLATE_SUCCESS,
};

/// What one attempt gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inflated {
    /// The stream ended: input bytes used, output bytes made.
    Done { used: usize, made: usize },
    /// The output buffer is too small for the whole stream.
    NoRoom,
    /// Not a complete valid deflate stream in the input (damaged, or cut
    /// off by the end of the buffer).
    Invalid,
}

/// A libdeflate decompressor, reused across members.
#[cfg(feature = "libdeflate")]
pub(crate) struct FastInflater {
    d: NonNull<libdeflate_decompressor>,
}

// SAFETY: a libdeflate decompressor has no thread affinity; it is only
// used through &mut self, never shared.
#[cfg(feature = "libdeflate")]
unsafe impl Send for FastInflater {}

#[cfg(feature = "libdeflate")]
impl FastInflater {
    /// A decompressor, or `None` when libdeflate cannot allocate one.
    pub(crate) fn new() -> Option<Self> {
        // SAFETY: no preconditions; returns null on allocation failure.
        let d = unsafe { libdeflate_alloc_decompressor() };
        NonNull::new(d).map(|d| FastInflater { d })
    }
}

#[cfg(feature = "libdeflate")]
impl FastInflater {
    /// Inflates the raw deflate stream at the start of `input` onto the end
    /// of `out`, into its spare capacity (at most `max` bytes; the caller
    /// reserves): no copy, and no page of the spare capacity is touched
    /// beyond what libdeflate writes. `out` is unchanged unless `Done`.
    pub(crate) fn inflate_append(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max: usize,
    ) -> Inflated {
        let len = out.len();
        let spare = out.spare_capacity_mut();
        let room = spare.len().min(max);
        let mut used = 0usize;
        let mut made = 0usize;
        // SAFETY: as in `inflate`; the output is the first `room` bytes of
        // the vector's spare capacity, which libdeflate only writes (it
        // never reads output it has not written), at most `room` bytes.
        let r = unsafe {
            libdeflate_deflate_decompress_ex(
                self.d.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                spare.as_mut_ptr().cast(),
                room,
                &mut used,
                &mut made,
            )
        };
        #[allow(non_upper_case_globals)]
        match r {
            libdeflate_result_LIBDEFLATE_SUCCESS if used <= input.len() && made <= room => {
                // SAFETY: libdeflate initialised the first `made` bytes of
                // the spare capacity (its contract for a success), and
                // `len + made` is within the capacity since `made <= room`.
                unsafe { out.set_len(len + made) };
                Inflated::Done { used, made }
            }
            libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE => Inflated::NoRoom,
            _ => Inflated::Invalid,
        }
    }
}

/// Asks the kernel to back the 2 MiB-aligned part of `buf`'s capacity
/// with transparent huge pages (where THP is in `madvise` mode): a large
/// output buffer written once per member or job then takes one page fault
/// per 2 MiB instead of one per 4 KiB. Advice only: nothing is touched,
/// and a refusal changes nothing.
#[cfg(all(target_os = "linux", any(feature = "mmap", feature = "parallel")))]
#[allow(unsafe_code)] // also without libdeflate, when the module allows none
pub(crate) fn advise_huge(buf: &mut Vec<u8>) {
    const HUGE: usize = 2 << 20;
    let start = buf.as_mut_ptr() as usize;
    let end = start.saturating_add(buf.capacity());
    let a = start.div_ceil(HUGE).saturating_mul(HUGE);
    let b = end / HUGE * HUGE;
    if b > a {
        // SAFETY: `a..b` lies within the vector's allocation, which stays
        // alive and in place during the call; MADV_HUGEPAGE changes no
        // byte of it and no mapping's protection, only how later faults
        // are served. Its result is ignored: a refusal is harmless.
        unsafe {
            libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
        }
    }
}

/// Without libc: no advice.
#[cfg(not(all(target_os = "linux", any(feature = "mmap", feature = "parallel"))))]
pub(crate) fn advise_huge(_buf: &mut Vec<u8>) {}

/// The CRC32 (gzip's) of `data` continuing `crc`: libdeflate's, which
/// folds with the widest carry-less multiply the CPU has (VPCLMULQDQ on
/// AVX-512 and AVX2 machines), faster than crc32fast's SSE folding.
#[cfg(feature = "libdeflate")]
pub(crate) fn crc32(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: reads `data.len()` bytes from a live slice.
    unsafe { libdeflate_crc32(crc, data.as_ptr().cast(), data.len()) }
}

/// The CRC32 (gzip's) of `data` continuing `crc`.
#[cfg(not(feature = "libdeflate"))]
pub(crate) fn crc32(crc: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.update(data);
    h.finalize()
}

/// A libdeflate compressor, reused across members: the writer deflates a
/// member whose bytes it has gathered in one call. For a crawl's small
/// records (about 1 KiB) that took about 40 % less CPU than zlib-rs's
/// streaming deflate at the same level, whose per-member reset and
/// Huffman trees cost most (docs/performance-history.md, "Round thirteen
/// (...): the crawl's CPU a URL").
#[cfg(feature = "libdeflate")]
pub(crate) struct FastDeflater {
    c: NonNull<libdeflate_compressor>,
}

// SAFETY: a libdeflate compressor has no thread affinity; it is only used
// through &mut self, never shared.
#[cfg(feature = "libdeflate")]
unsafe impl Send for FastDeflater {}

#[cfg(feature = "libdeflate")]
impl FastDeflater {
    /// A compressor at `level` (0-9, as zlib's), or `None` when libdeflate
    /// cannot allocate one.
    pub(crate) fn new(level: u32) -> Option<Self> {
        let level = i32::try_from(level.min(9)).ok()?;
        // SAFETY: a level in libdeflate's range (0-12); returns null on an
        // allocation failure.
        let c = unsafe { libdeflate_alloc_compressor(level) };
        NonNull::new(c).map(|c| FastDeflater { c })
    }

    /// Deflates `input` whole (one raw deflate stream, final block set)
    /// onto the end of `out`, into its spare capacity (reserved here to
    /// libdeflate's bound). False, and `out` unchanged, when libdeflate
    /// made nothing (it cannot, given its bound: the caller then streams).
    pub(crate) fn deflate_append(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        // SAFETY: a live compressor; the bound depends on the length only.
        let bound = unsafe { libdeflate_deflate_compress_bound(self.c.as_ptr(), input.len()) };
        out.reserve(bound);
        let len = out.len();
        let spare = out.spare_capacity_mut();
        let room = spare.len();
        // SAFETY: reads `input.len()` bytes of a live slice and writes at
        // most `room` bytes into the vector's spare capacity (never reading
        // it); returns how many it wrote, 0 when they did not fit.
        let made = unsafe {
            libdeflate_deflate_compress(
                self.c.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                spare.as_mut_ptr().cast(),
                room,
            )
        };
        if made == 0 || made > room {
            return false;
        }
        // SAFETY: libdeflate initialised the first `made` bytes of the spare
        // capacity, and `len + made` is within the capacity.
        unsafe { out.set_len(len + made) };
        true
    }
}

#[cfg(feature = "libdeflate")]
impl Drop for FastDeflater {
    fn drop(&mut self) {
        // SAFETY: allocated by libdeflate_alloc_compressor, freed once.
        unsafe { libdeflate_free_compressor(self.c.as_ptr()) }
    }
}

#[cfg(feature = "libdeflate")]
impl Drop for FastInflater {
    fn drop(&mut self) {
        // SAFETY: allocated by libdeflate_alloc_decompressor, freed once.
        unsafe { libdeflate_free_decompressor(self.d.as_ptr()) }
    }
}

/// A raw-deflate inflater (flate2), reused across members.
#[cfg(not(feature = "libdeflate"))]
pub(crate) struct FastInflater {
    d: flate2::Decompress,
}

#[cfg(not(feature = "libdeflate"))]
impl FastInflater {
    /// A decompressor (always made; `Option` as with libdeflate).
    pub(crate) fn new() -> Option<Self> {
        Some(FastInflater {
            d: flate2::Decompress::new(false),
        })
    }
}

#[cfg(not(feature = "libdeflate"))]
impl FastInflater {
    /// Inflates the raw deflate stream at the start of `input` onto the end
    /// of `out`, into its spare capacity (at most `max` bytes; the caller
    /// reserves). `out` is unchanged unless `Done`.
    pub(crate) fn inflate_append(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max: usize,
    ) -> Inflated {
        let len = out.len();
        self.d.reset(false);
        let r = self
            .d
            .decompress_vec(input, out, flate2::FlushDecompress::Finish);
        let used = usize::try_from(self.d.total_in()).unwrap_or(usize::MAX);
        let made = out.len() - len;
        match r {
            Ok(flate2::Status::StreamEnd) if used <= input.len() && made <= max => {
                Inflated::Done { used, made }
            }
            Ok(flate2::Status::StreamEnd) => {
                out.truncate(len);
                Inflated::NoRoom
            }
            Ok(_) if out.len() == out.capacity() => {
                out.truncate(len);
                Inflated::NoRoom
            }
            _ => {
                out.truncate(len);
                Inflated::Invalid
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A compressor's raw deflate stream inflates back to its input.
    #[cfg(feature = "libdeflate")]
    #[test]
    fn a_deflated_buffer_inflates_back() {
        let mut c = FastDeflater::new(6).unwrap();
        let mut out = b"kept".to_vec();
        assert!(c.deflate_append(b"hello hello hello", &mut out));
        assert_eq!(&out[..4], b"kept");
        let mut d = flate2::read::DeflateDecoder::new(&out[4..]);
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut d, &mut back).unwrap();
        assert_eq!(back, b"hello hello hello");
    }

    fn deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn huge_page_advice_changes_no_byte() {
        // Empty, smaller than a huge page, and several huge pages (with an
        // unaligned start): advice only, then filled through libdeflate's
        // path (the spare capacity) and read back.
        let data: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
        let z = deflate(&data);
        for cap in [0, 4096, 6 << 20] {
            let mut out = Vec::with_capacity(cap);
            out.push(7u8);
            advise_huge(&mut out);
            assert_eq!(out, [7]);
            let mut f = FastInflater::new().unwrap();
            out.reserve(data.len());
            let r = f.inflate_append(&z, &mut out, data.len());
            assert_eq!(
                r,
                Inflated::Done {
                    used: z.len(),
                    made: data.len()
                }
            );
            assert_eq!(out.first(), Some(&7));
            assert!(out.get(1..) == Some(&data[..]));
        }
    }

    #[test]
    fn inflates_and_reports_the_end() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut input = deflate(&data);
        let len = input.len();
        input.extend_from_slice(b"TRAILER AND MORE");
        let mut f = FastInflater::new().unwrap();
        let mut out = Vec::with_capacity(200_000);
        assert_eq!(
            f.inflate_append(&input, &mut out, 200_000),
            Inflated::Done {
                used: len,
                made: data.len()
            }
        );
        assert_eq!(out, data);
        let mut small = Vec::with_capacity(1000);
        assert_eq!(f.inflate_append(&input, &mut small, 1000), Inflated::NoRoom);
        let mut out = Vec::with_capacity(200_000);
        assert_eq!(
            f.inflate_append(&input[..len / 2], &mut out, 200_000),
            Inflated::Invalid
        );
        assert_eq!(
            f.inflate_append(b"\xff\xff\xff\xff", &mut out, 200_000),
            Inflated::Invalid
        );
        assert_eq!(f.inflate_append(&[], &mut out, 200_000), Inflated::Invalid);
        assert!(out.is_empty());
    }

    #[test]
    fn inflates_onto_a_vector_in_place() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let input = deflate(&data);
        let mut f = FastInflater::new().unwrap();
        let mut out = b"before".to_vec();
        out.reserve(200_000);
        assert_eq!(
            f.inflate_append(&input, &mut out, 200_000),
            Inflated::Done {
                used: input.len(),
                made: data.len()
            }
        );
        assert_eq!(&out[..6], b"before");
        assert_eq!(&out[6..], &data[..]);
        // Too little room, or damage: the vector is as it was.
        let mut small = b"x".to_vec();
        small.reserve(50_000);
        assert_eq!(
            f.inflate_append(&input, &mut small, 50_000),
            Inflated::NoRoom
        );
        assert_eq!(small, b"x");
        assert_eq!(
            f.inflate_append(&input[..input.len() / 2], &mut small, 50_000),
            Inflated::Invalid
        );
        assert_eq!(small, b"x");
        assert_eq!(crc32(0, &data), crc32fast::hash(&data));
        let (a, b) = data.split_at(777);
        assert_eq!(crc32(crc32(0, a), b), crc32fast::hash(&data));
    }
}
