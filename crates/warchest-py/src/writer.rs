//! `WARCWriter`: new records with ids, dates, lengths and digests filled
//! in by the library's writer, one gzip member (or zstd frame) each.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use warchest::warc::{Version, field};
use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions, records};

use crate::io::{Input, PyWriter};
use crate::to_py;

/// Where the records go.
enum Out {
    Local(BufWriter<File>),
    Py(BufWriter<PyWriter>),
    /// An object written by multipart upload: it appears when finished.
    #[cfg(feature = "remote")]
    Remote(Box<warchest_remote::RemoteWriter>),
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Local(w) => w.write(buf),
            Out::Py(w) => w.write(buf),
            #[cfg(feature = "remote")]
            Out::Remote(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Local(w) => w.flush(),
            Out::Py(w) => w.flush(),
            // Flushing an upload would send a part early; `finish` sends
            // what is left.
            #[cfg(feature = "remote")]
            Out::Remote(_) => Ok(()),
        }
    }
}

impl Out {
    /// Flushes a file, completes an upload (the object appears now).
    fn finish(self) -> std::io::Result<()> {
        match self {
            Out::Local(mut w) => w.flush(),
            Out::Py(mut w) => w.flush(),
            #[cfg(feature = "remote")]
            Out::Remote(w) => (*w).finish(),
        }
    }
}

/// Writes WARC records to a path, a URL (`s3://`, `gs://`, `az://`: the
/// object appears when the writer is closed) or a binary file object.
///
/// `compress` is `"gzip"` (default, one member per record), `"zstd"`, `"lz4"` or
/// `None`; `warc_version` is `"1.1"` (default) or `"1.0"`. Records get a
/// WARC-Record-ID, WARC-Date, Content-Length, WARC-Block-Digest and, for
/// HTTP records, WARC-Payload-Digest (sha1, base32) unless given.
#[pyclass(module = "warchest._warchest")]
pub(crate) struct WARCWriter {
    writer: Mutex<Option<Writer<Out>>>,
    version: Version,
    /// Writing to a URL: an exception in a `with` block aborts the upload.
    remote: bool,
}

fn opened(w: &Mutex<Option<Writer<Out>>>) -> std::sync::MutexGuard<'_, Option<Writer<Out>>> {
    w.lock().unwrap_or_else(|p| p.into_inner())
}

fn closed() -> PyErr {
    PyValueError::new_err("the writer is closed")
}

impl WARCWriter {
    /// Writes `rec` with `block` (the GIL released) and says where it went:
    /// offset, stored length, record id and Content-Length.
    fn write_bytes<'py>(
        &self,
        py: Python<'py>,
        rec: &mut NewRecord,
        block: &[u8],
    ) -> PyResult<Bound<'py, PyDict>> {
        let written = py.detach(|| {
            let mut g = opened(&self.writer);
            let w = g.as_mut().ok_or_else(closed)?;
            w.write(rec, Body::Bytes(block)).map_err(to_py)
        })?;
        let d = PyDict::new(py);
        d.set_item("offset", written.offset)?;
        d.set_item("length", written.stored_len)?;
        d.set_item("record_id", written.record_id)?;
        d.set_item("content_length", written.block_len)?;
        Ok(d)
    }
}

#[pymethods]
impl WARCWriter {
    #[new]
    #[pyo3(signature = (target, compress = Some("gzip".to_string()), warc_version = "1.1"))]
    fn new(
        target: &Bound<'_, PyAny>,
        compress: Option<String>,
        warc_version: &str,
    ) -> PyResult<Self> {
        let compression = match compress.as_deref() {
            None | Some("none") => Compression::None,
            Some("gzip") => Compression::Gzip(6),
            Some("zstd") => Compression::Zstd {
                level: 3,
                dictionary: None,
            },
            Some("lz4") => Compression::Lz4,
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "compress must be 'gzip', 'zstd', 'lz4' or None, not {other:?}"
                )));
            }
        };
        let version = match warc_version {
            "1.1" => Version::V1_1,
            "1.0" => Version::V1_0,
            other => {
                return Err(PyValueError::new_err(format!(
                    "warc_version must be '1.1' or '1.0', not {other:?}"
                )));
            }
        };
        let input = Input::from_py(target);
        let remote = matches!(input, Ok(Input::Url(_)));
        let out = match input {
            Ok(Input::Path(p)) => Out::Local(BufWriter::new(
                File::create(&p).map_err(|e| crate::path_io_to_py(e, &p))?,
            )),
            #[cfg(feature = "remote")]
            Ok(Input::Url(u)) => Out::Remote(Box::new(
                target
                    .py()
                    .detach(|| warchest_remote::create(&u))
                    .map_err(crate::io_to_py)?,
            )),
            #[cfg(not(feature = "remote"))]
            Ok(Input::Url(u)) => return Err(crate::io::no_remote(&u)),
            _ => {
                if !target.hasattr("write")? {
                    return Err(PyTypeError::new_err(
                        "expected a path, a URL or a binary file object with write()",
                    ));
                }
                Out::Py(BufWriter::with_capacity(
                    256 << 10,
                    PyWriter::new(target.clone().unbind()),
                ))
            }
        };
        let opts = WriterOptions {
            compression,
            ..WriterOptions::default()
        };
        let w = Writer::new(out, opts).map_err(to_py)?;
        Ok(WARCWriter {
            writer: Mutex::new(Some(w)),
            version,
            remote,
        })
    }

    /// Writes one record and returns where it went: a dict with `offset`,
    /// `length` (stored), `record_id` and `content_length`.
    ///
    /// `payload` is `bytes` or a binary file object. For `response` and
    /// `request` records, `http_headers` (a list of `(name, value)`) and
    /// `http_statusline` (`"HTTP/1.1 200 OK"`, `"GET / HTTP/1.1"`) make the
    /// HTTP head written before the payload, and the record's Content-Type
    /// defaults to `application/http; msgtype=...`. `warc_headers` adds or
    /// replaces WARC fields (a dict or a list of pairs).
    #[pyo3(signature = (rec_type, target_uri = None, payload = None, content_type = None,
        http_headers = None, http_statusline = None, warc_headers = None))]
    #[allow(clippy::too_many_arguments)]
    fn write_record<'py>(
        &self,
        py: Python<'py>,
        rec_type: &str,
        target_uri: Option<&str>,
        payload: Option<&Bound<'py, PyAny>>,
        content_type: Option<&str>,
        http_headers: Option<Vec<(String, String)>>,
        http_statusline: Option<&str>,
        warc_headers: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let bad = |e: warchest::Error| PyValueError::new_err(e.to_string());
        let mut rec = NewRecord::with_type_name(rec_type, self.version).map_err(bad)?;
        if let Some(u) = target_uri {
            rec.set(field::TARGET_URI, u).map_err(bad)?;
        }
        let mut block = Vec::new();
        let http = http_headers.is_some() || http_statusline.is_some();
        if http {
            let line = http_statusline.unwrap_or(if rec_type == "request" {
                "GET / HTTP/1.1"
            } else {
                "HTTP/1.1 200 OK"
            });
            if line.contains(['\r', '\n']) {
                return Err(PyValueError::new_err("http_statusline holds a line break"));
            }
            block.extend_from_slice(line.as_bytes());
            block.extend_from_slice(b"\r\n");
            for (n, v) in http_headers.unwrap_or_default() {
                if n.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) {
                    return Err(PyValueError::new_err(format!(
                        "bad HTTP header {n:?}: names hold no colon and neither holds a line break"
                    )));
                }
                block.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
            }
            block.extend_from_slice(b"\r\n");
        }
        let ct = match content_type {
            Some(c) => Some(c.to_string()),
            None if http => Some(format!(
                "application/http; msgtype={}",
                if rec_type == "request" {
                    "request"
                } else {
                    "response"
                }
            )),
            None => None,
        };
        if let Some(c) = ct {
            rec.set(field::CONTENT_TYPE, c).map_err(bad)?;
        }
        if let Some(h) = warc_headers {
            let pairs: Vec<(String, String)> = if let Ok(d) = h.cast::<PyDict>() {
                d.iter()
                    .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
                    .collect::<PyResult<_>>()?
            } else {
                h.extract()?
            };
            for (n, v) in pairs {
                rec.set(&n, v).map_err(bad)?;
            }
        }
        match payload {
            None => {}
            Some(p) => {
                if let Ok(b) = p.cast::<PyBytes>() {
                    block.extend_from_slice(b.as_bytes());
                } else if p.hasattr("read")? {
                    // Read in Python-sized pieces; the writer needs the
                    // length and digests before the block anyway.
                    loop {
                        let chunk = p.call_method1("read", (1usize << 20,))?;
                        let chunk = chunk.cast::<PyBytes>().map_err(|_| {
                            PyTypeError::new_err("payload.read() must return bytes")
                        })?;
                        if chunk.as_bytes().is_empty() {
                            break;
                        }
                        block.extend_from_slice(chunk.as_bytes());
                    }
                } else {
                    return Err(PyTypeError::new_err(
                        "payload must be bytes or a binary file object",
                    ));
                }
            }
        }
        self.write_bytes(py, &mut rec, &block)
    }

    /// Writes a warcinfo record: `software`, `format` and `conformsTo` are
    /// added to `fields` (a dict or a list of pairs) when missing.
    #[pyo3(signature = (filename = None, fields = None))]
    fn write_warcinfo<'py>(
        &self,
        py: Python<'py>,
        filename: Option<&str>,
        fields: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let pairs: Vec<(String, String)> = match fields {
            None => Vec::new(),
            Some(f) => match f.cast::<PyDict>() {
                Ok(d) => d
                    .iter()
                    .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
                    .collect::<PyResult<_>>()?,
                Err(_) => f.extract()?,
            },
        };
        let (mut rec, block) = records::warcinfo(self.version, filename, &pairs)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.write_bytes(py, &mut rec, &block)
    }

    /// Bytes written so far.
    #[getter]
    fn position(&self) -> PyResult<u64> {
        opened(&self.writer)
            .as_ref()
            .map(|w| w.position())
            .ok_or_else(closed)
    }

    /// Flushes and closes the output (a file object passed in is flushed,
    /// not closed). Writing to a URL, the object appears now, whole (its
    /// multipart upload is completed last).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let w = opened(&self.writer).take();
        if let Some(w) = w {
            py.detach(|| -> PyResult<()> {
                let out = w.finish().map_err(to_py)?;
                out.finish().map_err(crate::io_to_py)?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Drops the output unfinished: an upload to a URL is aborted and no
    /// object appears; a local file keeps what was written so far.
    fn abort(&self) {
        drop(opened(&self.writer).take());
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes the writer; when the block raised and the writer writes to
    /// a URL, aborts it instead (the object then never appears).
    #[pyo3(signature = (exc_type = None, *_args))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _args: &Bound<'_, PyTuple>,
    ) -> PyResult<bool> {
        match exc_type {
            Some(t) if self.remote && !t.is_none() => self.abort(),
            _ => self.close(py)?,
        }
        Ok(false)
    }
}
