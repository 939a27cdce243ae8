//! Whole-member inflation with libdeflate.
//!
//! libdeflate inflates about twice as fast as zlib (docs/performance.md),
//! but only whole buffers: it must be given the complete deflate stream and
//! room for all its output. A gzip member of a WARC file is usually small
//! (a record), so the decoder tries this first when the member may fit in
//! its input buffer, and streams with zlib-rs when it does not (or when the
//! data is damaged, so the streaming path reports where).
//!
//! Without the `libdeflate` feature the same whole-buffer attempt is made
//! with flate2 (zlib-rs): the same results, without the speed-up.
//!
//! With libdeflate, the one module of the library with `unsafe`: the FFI
//! calls, each with its safety argument.
#![cfg_attr(feature = "libdeflate", allow(unsafe_code))]

#[cfg(feature = "libdeflate")]
use std::ptr::NonNull;

#[cfg(feature = "libdeflate")]
use libdeflate_sys::{
    libdeflate_alloc_decompressor, libdeflate_decompressor, libdeflate_deflate_decompress_ex,
    libdeflate_free_decompressor, libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE,
    libdeflate_result_LIBDEFLATE_SUCCESS,
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

    /// Inflates the raw deflate stream at the start of `input` into `out`.
    pub(crate) fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> Inflated {
        let mut used = 0usize;
        let mut made = 0usize;
        // SAFETY: `self.d` is a live decompressor (freed only in Drop); the
        // input and output pointers and lengths come from live slices that
        // outlive the call and do not overlap (one is shared, one is &mut);
        // libdeflate writes at most `out.len()` bytes and the two out-params
        // point to locals.
        let r = unsafe {
            libdeflate_deflate_decompress_ex(
                self.d.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                &mut used,
                &mut made,
            )
        };
        #[allow(non_upper_case_globals)]
        match r {
            libdeflate_result_LIBDEFLATE_SUCCESS if used <= input.len() && made <= out.len() => {
                Inflated::Done { used, made }
            }
            libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE => Inflated::NoRoom,
            _ => Inflated::Invalid,
        }
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

    /// Inflates the raw deflate stream at the start of `input` into `out`.
    pub(crate) fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> Inflated {
        self.d.reset(false);
        let r = self
            .d
            .decompress(input, out, flate2::FlushDecompress::Finish);
        let used = usize::try_from(self.d.total_in()).unwrap_or(usize::MAX);
        let made = usize::try_from(self.d.total_out()).unwrap_or(usize::MAX);
        match r {
            Ok(flate2::Status::StreamEnd) if used <= input.len() && made <= out.len() => {
                Inflated::Done { used, made }
            }
            // Stopped short of the end with the output full: more room may
            // finish it (else it is invalid, and the retry says so).
            Ok(_) if made == out.len() => Inflated::NoRoom,
            _ => Inflated::Invalid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn inflates_and_reports_the_end() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut input = deflate(&data);
        let len = input.len();
        input.extend_from_slice(b"TRAILER AND MORE");
        let mut f = FastInflater::new().unwrap();
        let mut out = vec![0u8; 200_000];
        assert_eq!(
            f.inflate(&input, &mut out),
            Inflated::Done {
                used: len,
                made: data.len()
            }
        );
        assert_eq!(&out[..data.len()], &data[..]);
        let mut small = vec![0u8; 1000];
        assert_eq!(f.inflate(&input, &mut small), Inflated::NoRoom);
        assert_eq!(f.inflate(&input[..len / 2], &mut out), Inflated::Invalid);
        assert_eq!(f.inflate(b"\xff\xff\xff\xff", &mut out), Inflated::Invalid);
        assert_eq!(f.inflate(&[], &mut out), Inflated::Invalid);
    }
}
