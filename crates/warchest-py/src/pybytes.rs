//! A Python `bytes` object filled in place, without being zeroed first:
//! the crate's one `unsafe` module.
//!
//! Why: PyO3's safe `PyBytes::new_with` zeroes the object before handing
//! it out, and for payloads read to the end that memset measured 8.5 % of
//! all instructions of an iteration (callgrind, docs/performance-history.md,
//! issue 20), more than the copy that then overwrites it. Here the object
//! is made uninitialised (`PyBytes_FromStringAndSize(NULL, n)`, CPython's
//! documented way) and filled only by copying slices into it, so no
//! uninitialised byte is ever seen as a slice or by Python.

use std::marker::PhantomData;

use pyo3::exceptions::PyOverflowError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The buffer of a new `bytes` object being filled from its start.
pub(crate) struct Filling<'a> {
    ptr: *mut u8,
    len: usize,
    filled: usize,
    _buffer: PhantomData<&'a mut [u8]>,
}

// SAFETY: the buffer belongs to an object no other code can reach until
// `new_filled` returns (it is neither returned nor tracked by the garbage
// collector before), so filling it on another thread, or with the
// interpreter lock released, races with nothing.
unsafe impl Send for Filling<'_> {}

impl Filling<'_> {
    /// Bytes still to fill.
    pub(crate) fn room(&self) -> usize {
        self.len - self.filled
    }

    /// Copies as much of `src` as fits; returns how many bytes.
    pub(crate) fn push(&mut self, src: &[u8]) -> usize {
        let n = src.len().min(self.room());
        // SAFETY: `ptr` is valid for writes of `len` bytes (the object's
        // buffer) and `filled + n <= len`; `src` cannot overlap a buffer
        // nothing else can see.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(self.filled), n) };
        self.filled += n;
        n
    }
}

/// A `bytes` object of `len` bytes filled by `fill` (through
/// [`Filling::push`]), and what `fill` returned. When `fill` leaves it
/// short (the source ended early), the result is a copy of what was
/// filled; an error drops the object unread.
pub(crate) fn new_filled<'py, T>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut Filling<'_>) -> PyResult<T>,
) -> PyResult<(Bound<'py, PyBytes>, T)> {
    let size = ffi::Py_ssize_t::try_from(len)
        .map_err(|_| PyOverflowError::new_err("payload too large for a bytes object"))?;
    // SAFETY: a null pointer asks CPython for an object whose contents are
    // left uninitialised; the result is a new reference or null with an
    // exception set, which `from_owned_ptr_or_err` turns into an error.
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyBytes_FromStringAndSize(std::ptr::null(), size))?
    };
    let obj = obj.cast_into::<PyBytes>()?;
    // SAFETY: `obj` is a bytes object; its buffer holds `len` bytes (and
    // CPython's terminating NUL, already written).
    let ptr = unsafe { ffi::PyBytes_AsString(obj.as_ptr()) }.cast::<u8>();
    if ptr.is_null() {
        return Err(PyErr::fetch(py));
    }
    let mut out = Filling {
        ptr,
        len,
        filled: 0,
        _buffer: PhantomData,
    };
    let r = fill(&mut out)?;
    if out.filled == len {
        return Ok((obj, r));
    }
    // SAFETY: the first `filled` bytes were written by `push`; the object
    // is alive (held by `obj`) while the slice is read.
    let done = unsafe { std::slice::from_raw_parts(ptr, out.filled) };
    Ok((PyBytes::new(py, done), r))
}
