//! Writing WARC records: new ones with their ids, dates, lengths and digests
//! filled in, and existing ones copied untouched, each compressed on its own
//! (one gzip member or zstd frame per record, as ISO 28500 Annex A advises).
//!
//! Digests are header fields, so they must be known before the block is
//! written. A body given as bytes or as a seekable stream is read twice (once
//! to digest, once to copy); a body of unknown length from a plain `Read` is
//! spooled to memory, and past [`WriterOptions::spool_threshold`] to a
//! temporary file, while it is digested. Memory stays bounded either way.

use std::io::{self, Read, Seek, SeekFrom, Write};

pub mod atomic;
#[cfg(feature = "identify")]
pub mod identify;
pub mod records;
pub mod rotate;
pub mod truncate;

pub use rotate::{Oversize, Placed, RotatingOptions, RotatingWriter, sync_dir};
pub use truncate::{CaptureLimits, LimitedReader};

use crate::digest::{Algorithm, Digest, Hasher};
use crate::error::{Error, ErrorKind, Result};
use crate::fields::Fields;
use crate::warc::{DatePrecision, PayloadKind, RecordType, Version, WarcDate, WarcHeader, field};

/// How each record is compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Not compressed.
    None,
    /// One gzip member per record, at this level (0-9).
    Gzip(u32),
    /// One zstd frame per record (the `zstd` feature; without it
    /// [`Writer::new`] refuses it).
    Zstd {
        /// Compression level (1-22).
        level: i32,
        /// A dictionary, written at the start of the file in the
        /// `.warc.zst` dictionary frame and used for every frame.
        dictionary: Option<Vec<u8>>,
    },
    /// One LZ4 frame per record (independent 256 KiB blocks, content size
    /// and content checksum in each frame; the `lz4` feature, without which
    /// [`Writer::new`] refuses it).
    Lz4,
}

impl Compression {
    /// The file name suffix: `.warc`, `.warc.gz`, `.warc.zst` or `.warc.lz4`.
    pub fn extension(&self) -> &'static str {
        match self {
            Compression::None => ".warc",
            Compression::Gzip(_) => ".warc.gz",
            Compression::Zstd { .. } => ".warc.zst",
            Compression::Lz4 => ".warc.lz4",
        }
    }
}

impl Default for Compression {
    fn default() -> Self {
        Compression::Gzip(6)
    }
}

/// How a [`Writer`] writes.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Per-record compression (default gzip level 6).
    pub compression: Compression,
    /// The digest algorithm for WARC-Block-Digest and WARC-Payload-Digest,
    /// or `None` to write no digests (default sha1, the convention readers
    /// and indexes expect).
    pub digest: Option<Algorithm>,
    /// Bodies of unknown length are spooled in memory up to this many bytes,
    /// then to a temporary file. Default 8 MiB.
    pub spool_threshold: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression: Compression::default(),
            digest: Some(Algorithm::Sha1),
            spool_threshold: 8 << 20,
        }
    }
}

/// Where a written record went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Offset of the record (its gzip member or zstd frame) in the output.
    pub offset: u64,
    /// Length of the record as stored.
    pub stored_len: u64,
    /// Its WARC-Record-ID.
    pub record_id: String,
    /// Its block length (Content-Length).
    pub block_len: u64,
}

/// A new record's header under construction. WARC-Type, WARC-Record-ID and
/// WARC-Date are filled when it is made; [`Writer::write`] adds
/// Content-Length and the digests.
#[derive(Debug, Clone)]
pub struct NewRecord {
    header: WarcHeader,
}

/// A fresh `<urn:uuid:...>` record id.
pub fn new_record_id() -> String {
    format!("<urn:uuid:{}>", crate::uuid::Uuid::new_v4())
}

impl NewRecord {
    /// A WARC/1.1 record of type `record_type`, with a new record id and the
    /// current time (microseconds).
    pub fn new(record_type: RecordType) -> NewRecord {
        NewRecord::with_version(record_type, Version::V1_1)
    }

    /// A record of the given version. WARC 1.0 dates have whole seconds.
    pub fn with_version(record_type: RecordType, version: Version) -> NewRecord {
        let mut fields = Fields::with_start_line(version.to_string().as_bytes());
        let precision = if version >= Version::V1_1 {
            DatePrecision::Fraction(6)
        } else {
            DatePrecision::Second
        };
        // Infallible: fixed names, values without line breaks.
        let _ = fields.append(field::TYPE, record_type.as_str());
        let _ = fields.append(field::RECORD_ID, new_record_id());
        let _ = fields.append(field::DATE, WarcDate::now(precision).to_string());
        NewRecord {
            header: WarcHeader::from_fields(version, fields),
        }
    }

    /// A record of an unknown type (`WARC-Type` as given).
    ///
    /// # Errors
    /// A type that is not a valid field value.
    pub fn with_type_name(type_name: &str, version: Version) -> Result<NewRecord> {
        let mut r = NewRecord::with_version(RecordType::Other, version);
        r.set(field::TYPE, type_name)?;
        Ok(r)
    }

    /// Sets a field (replacing the first of that name, removing the others).
    ///
    /// # Errors
    /// A name that is not a token or a value with a line break.
    pub fn set(&mut self, name: &str, value: impl AsRef<[u8]>) -> Result<&mut Self> {
        self.header
            .fields_mut()
            .set(name, value)
            .map_err(|e| field_error(name, e))?;
        Ok(self)
    }

    /// Adds a field, keeping others of the same name (WARC-Concurrent-To).
    ///
    /// # Errors
    /// As [`NewRecord::set`].
    pub fn append(&mut self, name: &str, value: impl AsRef<[u8]>) -> Result<&mut Self> {
        self.header
            .fields_mut()
            .append(name, value)
            .map_err(|e| field_error(name, e))?;
        Ok(self)
    }

    /// A record from an existing header (its fields kept as they are;
    /// [`Writer::write`] replaces Content-Length and fills missing digests).
    pub fn from_header(header: WarcHeader) -> NewRecord {
        NewRecord { header }
    }

    /// Removes every field named `name`.
    pub fn remove(&mut self, name: &str) -> &mut Self {
        self.header.fields_mut().remove(name);
        self
    }

    /// Sets WARC-Truncated (section 5.13).
    pub fn truncated(&mut self, reason: &crate::warc::TruncatedReason) -> &mut Self {
        // Infallible for the named reasons; `Other` values with a line
        // break are refused by `set` and left out.
        let _ = self.set(field::TRUNCATED, reason.as_str());
        self
    }

    /// The header, to be written (what [`Writer::write`] completes).
    pub fn into_header(self) -> WarcHeader {
        self.header
    }

    /// Sets WARC-Date.
    pub fn date(&mut self, date: WarcDate) -> &mut Self {
        let _ = self.header.fields_mut().set(field::DATE, date.to_string());
        self
    }

    /// The header so far.
    pub fn header(&self) -> &WarcHeader {
        &self.header
    }

    /// The record id.
    pub fn record_id(&self) -> String {
        self.header
            .record_id()
            .map(|s| s.into_owned())
            .unwrap_or_default()
    }
}

fn field_error(name: &str, e: crate::fields::FieldError) -> Error {
    Error::new(ErrorKind::Field {
        name: name.to_string(),
        message: e.to_string(),
    })
}

/// Counts what passes into the underlying writer.
struct Counting<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The per-record compressor, kept between records so its state is reused.
// One a writer, made once and never moved on a hot path: boxing the gzip
// state (the largest without zstd and LZ4) would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Compressor {
    None,
    Gzip {
        level: u32,
        deflate: flate2::Compress,
        crc: crc32fast::Hasher,
        size: u32,
        buf: Vec<u8>,
        /// Deflates a member of at most [`WHOLE_MAX`] bytes in one call.
        #[cfg(feature = "libdeflate")]
        fast: Option<crate::codec::FastDeflater>,
        /// The member's bytes, gathered for `fast`.
        whole: Vec<u8>,
        /// The member is gathered in `whole`, not streamed through `deflate`.
        gathering: bool,
    },
    #[cfg(feature = "zstd")]
    Zstd {
        enc: Box<zstd::stream::raw::Encoder<'static>>,
        buf: Vec<u8>,
    },
    #[cfg(feature = "lz4")]
    Lz4 {
        /// The block being gathered (up to `LZ4_BLOCK` bytes).
        block: Vec<u8>,
        /// One compressed block.
        out: Vec<u8>,
        hash: crate::codec::Xxh32,
    },
}

/// LZ4 block size: large enough for most records to be one block, small
/// enough to keep the writer's buffers small.
#[cfg(feature = "lz4")]
const LZ4_BLOCK: usize = 256 << 10;

/// Writes one LZ4 block: compressed, or stored when that is not smaller.
#[cfg(feature = "lz4")]
fn lz4_block<W: Write>(out: &mut W, data: &[u8], buf: &mut [u8]) -> io::Result<()> {
    let n = lz4_flex::block::compress_into(data, buf).map_err(io::Error::other)?;
    if n < data.len() {
        out.write_all(&(n as u32).to_le_bytes())?;
        out.write_all(&buf[..n])
    } else {
        out.write_all(&(data.len() as u32 | 0x8000_0000).to_le_bytes())?;
        out.write_all(data)
    }
}

const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff];

/// The largest gzip member gathered and deflated in one call (libdeflate);
/// a larger one is streamed through zlib-rs, so the gathered bytes stay
/// bounded.
const WHOLE_MAX: usize = 256 << 10;

/// Streams `data` through zlib-rs's `deflate` (no flush), writing what it
/// makes.
fn deflate_stream<W: Write>(
    deflate: &mut flate2::Compress,
    buf: &mut Vec<u8>,
    out: &mut W,
    mut data: &[u8],
) -> io::Result<()> {
    while !data.is_empty() {
        let before_in = deflate.total_in();
        let before_out = deflate.total_out();
        buf.clear();
        deflate
            .compress_vec(data, buf, flate2::FlushCompress::None)
            .map_err(io::Error::other)?;
        let used = (deflate.total_in() - before_in) as usize;
        data = &data[used..];
        if deflate.total_out() > before_out {
            out.write_all(buf)?;
        }
    }
    Ok(())
}

impl Compressor {
    /// Starts a member for a record of `total` uncompressed bytes.
    fn begin<W: Write>(&mut self, out: &mut W, total: u64) -> io::Result<()> {
        // Only zstd and LZ4 frames declare the size; gzip takes the one-call
        // path by it.
        #[cfg(not(any(feature = "zstd", feature = "lz4")))]
        let _ = total;
        match self {
            Compressor::None => Ok(()),
            Compressor::Gzip {
                level,
                deflate,
                crc,
                size,
                #[cfg(feature = "libdeflate")]
                fast,
                whole,
                gathering,
                ..
            } => {
                // A member whose size is known to be small is gathered and
                // deflated whole with libdeflate (zlib-rs's reset and
                // Huffman trees cost most of a small member's deflate).
                #[cfg(feature = "libdeflate")]
                {
                    *gathering = total <= WHOLE_MAX as u64;
                    if *gathering && fast.is_none() {
                        // Taken at the first such member: a writer that
                        // makes none holds no compressor.
                        *fast = crate::codec::FastDeflater::new(*level);
                    }
                    *gathering &= fast.is_some();
                }
                if *gathering {
                    whole.clear();
                } else {
                    deflate.reset();
                }
                *crc = crc32fast::Hasher::new();
                *size = 0;
                let mut h = GZIP_HEADER;
                // XFL: 2 for maximum compression, 4 for fastest (RFC 1952).
                h[8] = match *level {
                    9 => 2,
                    0 | 1 => 4,
                    _ => 0,
                };
                out.write_all(&h)
            }
            #[cfg(feature = "zstd")]
            Compressor::Zstd { enc, .. } => {
                use zstd::stream::raw::Operation;
                enc.reinit()?;
                // The WARC-zstd convention wants the content size in each
                // frame header; the record's size is known up front.
                enc.set_pledged_src_size(Some(total))
            }
            #[cfg(feature = "lz4")]
            Compressor::Lz4 { block, hash, .. } => {
                block.clear();
                *hash = crate::codec::Xxh32::new(0);
                // FLG: version 01, independent blocks, content size,
                // content checksum; BD: 256 KiB blocks.
                let mut h = [0u8; 19];
                h[..4].copy_from_slice(&crate::codec::LZ4_MAGIC);
                h[4] = 0x6c;
                h[5] = 0x50;
                h[6..14].copy_from_slice(&total.to_le_bytes());
                h[14] = (crate::codec::xxh32(&h[4..14], 0) >> 8) as u8;
                out.write_all(&h[..15])
            }
        }
    }

    fn write<W: Write>(&mut self, out: &mut W, data: &[u8]) -> io::Result<()> {
        match self {
            Compressor::None => out.write_all(data),
            Compressor::Gzip {
                deflate,
                crc,
                size,
                buf,
                whole,
                gathering,
                ..
            } => {
                crc.update(data);
                *size = size.wrapping_add(data.len() as u32);
                if *gathering {
                    if whole.len() + data.len() <= WHOLE_MAX {
                        whole.extend_from_slice(data);
                        return Ok(());
                    }
                    // More than the member's size said: streamed from here,
                    // the bytes gathered first.
                    *gathering = false;
                    deflate.reset();
                    deflate_stream(deflate, buf, out, whole)?;
                    whole.clear();
                }
                deflate_stream(deflate, buf, out, data)
            }
            #[cfg(feature = "zstd")]
            Compressor::Zstd { enc, buf } => {
                use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
                let mut input = InBuffer::around(data);
                while input.pos < input.src.len() {
                    let mut output = OutBuffer::around(&mut buf[..]);
                    enc.run(&mut input, &mut output)?;
                    let n = output.pos();
                    out.write_all(&buf[..n])?;
                }
                Ok(())
            }
            #[cfg(feature = "lz4")]
            Compressor::Lz4 {
                block,
                out: buf,
                hash,
            } => {
                hash.update(data);
                let mut data = data;
                while !data.is_empty() {
                    let k = (LZ4_BLOCK - block.len()).min(data.len());
                    block.extend_from_slice(&data[..k]);
                    data = &data[k..];
                    if block.len() == LZ4_BLOCK {
                        lz4_block(out, block, buf)?;
                        block.clear();
                    }
                }
                Ok(())
            }
        }
    }

    fn end<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        match self {
            Compressor::None => Ok(()),
            Compressor::Gzip {
                deflate,
                crc,
                size,
                buf,
                #[cfg(feature = "libdeflate")]
                fast,
                whole,
                gathering,
                ..
            } => {
                let mut done = false;
                if *gathering {
                    *gathering = false;
                    buf.clear();
                    #[cfg(feature = "libdeflate")]
                    if let Some(f) = fast
                        && f.deflate_append(whole, buf)
                    {
                        out.write_all(buf)?;
                        done = true;
                    }
                    if !done {
                        deflate.reset();
                        deflate_stream(deflate, buf, out, whole)?;
                    }
                    whole.clear();
                }
                while !done {
                    buf.clear();
                    let status = deflate
                        .compress_vec(&[], buf, flate2::FlushCompress::Finish)
                        .map_err(io::Error::other)?;
                    out.write_all(buf)?;
                    done = status == flate2::Status::StreamEnd;
                }
                let crc = std::mem::replace(crc, crc32fast::Hasher::new()).finalize();
                out.write_all(&crc.to_le_bytes())?;
                out.write_all(&size.to_le_bytes())
            }
            #[cfg(feature = "zstd")]
            Compressor::Zstd { enc, buf } => {
                use zstd::stream::raw::{Operation, OutBuffer};
                loop {
                    let mut output = OutBuffer::around(&mut buf[..]);
                    let left = enc.finish(&mut output, true)?;
                    let n = output.pos();
                    out.write_all(&buf[..n])?;
                    if left == 0 {
                        break;
                    }
                }
                Ok(())
            }
            #[cfg(feature = "lz4")]
            Compressor::Lz4 {
                block,
                out: buf,
                hash,
            } => {
                if !block.is_empty() {
                    lz4_block(out, block, buf)?;
                    block.clear();
                }
                out.write_all(&0u32.to_le_bytes())?;
                out.write_all(&hash.finish().to_le_bytes())
            }
        }
    }
}

/// The body of a new record.
pub enum Body<'a> {
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// A stream that can be rewound: read once to digest, once to copy.
    /// `len` bytes from its current position, or to its end when `None`.
    Seekable {
        /// The stream.
        reader: &'a mut dyn ReadSeek,
        /// How many bytes, if known.
        len: Option<u64>,
    },
    /// A stream read once. With `len` known and digests off it is copied
    /// straight through; otherwise it is spooled while digested.
    Stream {
        /// The stream.
        reader: &'a mut dyn Read,
        /// How many bytes, if known.
        len: Option<u64>,
    },
}

/// `Read + Seek`, for [`Body::Seekable`].
pub trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// Writes WARC records to any `Write`.
///
/// ```
/// use warchest::write::{Writer, WriterOptions, NewRecord, Body};
/// use warchest::warc::{RecordType, Reader};
/// let mut out = Vec::new();
/// let mut w = Writer::new(&mut out, WriterOptions::default())?;
/// let mut rec = NewRecord::new(RecordType::Resource);
/// rec.set("WARC-Target-URI", "file:///hello.txt")?.set("Content-Type", "text/plain")?;
/// w.write(&mut rec, Body::Bytes(b"hello"))?;
/// w.finish()?;
/// let mut r = Reader::new(&out[..]);
/// let mut rec = r.next_record()?.expect("one record");
/// assert!(rec.header().block_digest().is_some());
/// assert_eq!(rec.read_block()?, b"hello");
/// # Ok::<(), warchest::Error>(())
/// ```
pub struct Writer<W: Write> {
    out: Counting<W>,
    opts: WriterOptions,
    comp: Compressor,
}

impl<W: Write> Writer<W> {
    /// A writer to `out`. With a zstd dictionary, its frame is written first.
    ///
    /// # Errors
    /// Writing the dictionary frame failed, or the zstd context could not be
    /// made; [`ErrorKind::NotCompiledIn`] for zstd or LZ4 compression
    /// without the `zstd` or `lz4` feature (before anything is written).
    pub fn new(out: W, opts: WriterOptions) -> Result<Self> {
        // Written to here only for a zstd dictionary.
        #[cfg_attr(not(feature = "zstd"), allow(unused_mut))]
        let mut out = Counting {
            inner: out,
            count: 0,
        };
        let comp = match &opts.compression {
            Compression::None => Compressor::None,
            Compression::Gzip(level) => Compressor::Gzip {
                level: (*level).min(9),
                deflate: flate2::Compress::new(flate2::Compression::new((*level).min(9)), false),
                crc: crc32fast::Hasher::new(),
                size: 0,
                buf: Vec::with_capacity(64 << 10),
                #[cfg(feature = "libdeflate")]
                fast: None,
                whole: Vec::new(),
                gathering: false,
            },
            #[cfg(not(feature = "zstd"))]
            Compression::Zstd { .. } => {
                return Err(Error::new(ErrorKind::NotCompiledIn {
                    what: "zstd",
                    feature: "zstd",
                }));
            }
            #[cfg(not(feature = "lz4"))]
            Compression::Lz4 => {
                return Err(Error::new(ErrorKind::NotCompiledIn {
                    what: "LZ4",
                    feature: "lz4",
                }));
            }
            #[cfg(feature = "zstd")]
            Compression::Zstd { level, dictionary } => {
                let enc = match dictionary {
                    Some(d) => {
                        let len = u32::try_from(d.len()).map_err(|_| {
                            Error::new(ErrorKind::Usage("zstd dictionary too large".into()))
                        })?;
                        out.write_all(&0x184D_2A5Du32.to_le_bytes())?;
                        out.write_all(&len.to_le_bytes())?;
                        out.write_all(d)?;
                        zstd::stream::raw::Encoder::with_dictionary(*level, d)?
                    }
                    None => zstd::stream::raw::Encoder::new(*level)?,
                };
                let mut enc = enc;
                // Every frame carries its content checksum (WARC-zstd).
                enc.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
                enc.set_parameter(zstd::stream::raw::CParameter::ContentSizeFlag(true))?;
                Compressor::Zstd {
                    enc: Box::new(enc),
                    buf: vec![0; zstd::zstd_safe::CCtx::out_size()],
                }
            }
            #[cfg(feature = "lz4")]
            Compression::Lz4 => Compressor::Lz4 {
                block: Vec::with_capacity(LZ4_BLOCK),
                out: vec![0; lz4_flex::block::get_maximum_output_size(LZ4_BLOCK)],
                hash: crate::codec::Xxh32::new(0),
            },
        };
        Ok(Writer { out, opts, comp })
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.out.count
    }

    /// The options.
    pub fn options(&self) -> &WriterOptions {
        &self.opts
    }

    /// Writes a new record: Content-Length, WARC-Block-Digest and (for
    /// HTTP responses and requests, resources and conversions)
    /// WARC-Payload-Digest are set from the body unless already present.
    ///
    /// # Errors
    /// I/O errors of the body or the output.
    pub fn write(&mut self, rec: &mut NewRecord, body: Body<'_>) -> Result<Written> {
        match body {
            Body::Bytes(b) => {
                let mut d = self.digester(rec);
                if let Some(d) = &mut d {
                    d.update(b);
                }
                self.fill_fields(rec, b.len() as u64, d)?;
                self.emit(&rec.header, &mut &b[..], b.len() as u64)
            }
            Body::Seekable { reader, len } => {
                let start = reader.stream_position()?;
                let len = match len {
                    Some(l) => l,
                    None => reader.seek(SeekFrom::End(0))? - start,
                };
                reader.seek(SeekFrom::Start(start))?;
                let mut d = self.digester(rec);
                if let Some(d) = &mut d {
                    let got = copy_n(&mut *reader, len, |chunk| {
                        d.update(chunk);
                        Ok(())
                    })?;
                    if got != len {
                        return Err(short_body(len, got));
                    }
                    reader.seek(SeekFrom::Start(start))?;
                }
                self.fill_fields(rec, len, d)?;
                self.emit(&rec.header, &mut reader.take(len), len)
            }
            Body::Stream { reader, len } => {
                let mut d = self.digester(rec);
                if let (Some(len), None) = (len, &d) {
                    self.fill_fields(rec, len, None)?;
                    return self.emit(&rec.header, &mut reader.take(len), len);
                }
                let mut spool = tempfile::SpooledTempFile::new(self.opts.spool_threshold);
                let mut total = 0u64;
                copy_n(&mut *reader, len.unwrap_or(u64::MAX), |chunk| {
                    if let Some(d) = &mut d {
                        d.update(chunk);
                    }
                    total += chunk.len() as u64;
                    spool.write_all(chunk)
                })?;
                if let Some(l) = len
                    && total != l
                {
                    return Err(short_body(l, total));
                }
                spool.seek(SeekFrom::Start(0))?;
                self.fill_fields(rec, total, d)?;
                self.emit(&rec.header, &mut spool, total)
            }
        }
    }

    /// Writes a record whose body is read from `body` until it ends or a
    /// [`CaptureLimits`] stops it; a body cut short gets WARC-Truncated
    /// (`length`, `time` or `disconnect`). The body is spooled (memory,
    /// then a temporary file) so that Content-Length and the digests can
    /// precede it.
    ///
    /// # Errors
    /// I/O errors of the body (other than a dropped connection) or the output.
    pub fn write_limited(
        &mut self,
        rec: &mut NewRecord,
        body: &mut dyn Read,
        limits: CaptureLimits,
    ) -> Result<Written> {
        let (mut spool, len) = spool_limited(rec, body, limits, self.opts.spool_threshold)?;
        self.write(
            rec,
            Body::Seekable {
                reader: &mut spool,
                len: Some(len),
            },
        )
    }

    fn set_len(&self, rec: &mut NewRecord, len: u64) -> Result<()> {
        rec.set(field::CONTENT_LENGTH, len.to_string())?;
        Ok(())
    }

    /// Sets the digests from `d` (unless present) and Content-Length.
    fn fill_fields(&self, rec: &mut NewRecord, len: u64, d: Option<BodyDigester>) -> Result<()> {
        if let Some(d) = d {
            let (block, payload) = d.finish();
            if !rec.header.fields().contains(field::BLOCK_DIGEST) {
                rec.set(field::BLOCK_DIGEST, block.to_string())?;
            }
            if let Some(p) = payload
                && !rec.header.fields().contains(field::PAYLOAD_DIGEST)
            {
                rec.set(field::PAYLOAD_DIGEST, p.to_string())?;
            }
        }
        // Content-Length last, as most writers put it.
        rec.header.fields_mut().remove(field::CONTENT_LENGTH);
        self.set_len(rec, len)
    }

    /// A digester for `rec` when it lacks digests and digests are wanted.
    fn digester(&self, rec: &NewRecord) -> Option<BodyDigester> {
        let alg = self.opts.digest?;
        missing_digests(&rec.header).then(|| BodyDigester::new(rec.header.payload_kind(), alg))
    }

    /// Writes header, `len` bytes of `block` and the trailer as one member.
    fn emit(&mut self, header: &WarcHeader, block: &mut dyn Read, len: u64) -> Result<Written> {
        let offset = self.out.count;
        let total = header.as_bytes().len() as u64 + len + 4;
        self.comp.begin(&mut self.out, total)?;
        self.comp.write(&mut self.out, header.as_bytes())?;
        let comp = &mut self.comp;
        let out = &mut self.out;
        let copied = copy_n(block, len, |chunk| comp.write(out, chunk))?;
        if copied != len {
            return Err(Error::new(ErrorKind::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("block ended after {copied} of {len} bytes"),
            ))));
        }
        self.comp.write(&mut self.out, b"\r\n\r\n")?;
        self.comp.end(&mut self.out)?;
        Ok(Written {
            offset,
            stored_len: self.out.count - offset,
            record_id: header
                .record_id()
                .map(|s| s.into_owned())
                .unwrap_or_default(),
            block_len: len,
        })
    }

    /// Writes an existing record untouched: its header bytes as read, then
    /// its block (`Content-Length` bytes, or what `block` gives when the
    /// header has no valid length). With no compression the output is
    /// byte-identical to a well-formed input record.
    ///
    /// # Errors
    /// I/O errors, or a block shorter than its Content-Length.
    pub fn write_raw(&mut self, header: &WarcHeader, block: &mut dyn Read) -> Result<Written> {
        match header.content_length() {
            Some(len) => self.emit(header, block, len),
            None => {
                let mut spool = tempfile::SpooledTempFile::new(self.opts.spool_threshold);
                let n = io::copy(block, &mut spool)?;
                spool.seek(SeekFrom::Start(0))?;
                self.emit(header, &mut spool, n)
            }
        }
    }

    /// Copies `n` bytes of records already encoded the way this writer
    /// encodes them (staged elsewhere) to the output, counting them.
    pub(crate) fn copy_stored(&mut self, stored: &mut dyn Read) -> io::Result<u64> {
        io::copy(stored, &mut self.out)
    }

    /// Flushes and returns the output.
    ///
    /// # Errors
    /// Flushing failed.
    pub fn finish(mut self) -> Result<W> {
        self.out.flush()?;
        Ok(self.out.inner)
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        &self.out.inner
    }

    /// The output, mutably (writing to it directly breaks the offsets).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out.inner
    }
}

/// Reads `body` through a [`LimitedReader`] into a spool, marks `rec`
/// truncated when it was cut, and returns the spool (rewound) and its length.
pub(crate) fn spool_limited(
    rec: &mut NewRecord,
    body: &mut dyn Read,
    limits: CaptureLimits,
    threshold: usize,
) -> Result<(tempfile::SpooledTempFile, u64)> {
    let mut spool = tempfile::SpooledTempFile::new(threshold);
    let mut limited = LimitedReader::new(body, limits);
    let len = io::copy(&mut limited, &mut spool)?;
    if let Some(reason) = limited.truncated() {
        rec.truncated(&reason.clone());
    }
    spool.seek(SeekFrom::Start(0))?;
    Ok((spool, len))
}

fn short_body(declared: u64, got: u64) -> Error {
    Error::new(ErrorKind::Io(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("body declared {declared} bytes but gave {got}"),
    )))
}

/// Copies up to `n` bytes of `r` to `f` in 64 KiB pieces; returns how many.
pub(crate) fn copy_n(
    r: &mut (impl Read + ?Sized),
    n: u64,
    mut f: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut done = 0u64;
    while done < n {
        let want = usize::try_from(n - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let k = match r.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        f(&buf[..k])?;
        done += k as u64;
    }
    Ok(done)
}

fn missing_digests(h: &WarcHeader) -> bool {
    !h.fields().contains(field::BLOCK_DIGEST)
        || (h.payload_kind() != PayloadKind::None && !h.fields().contains(field::PAYLOAD_DIGEST))
}

/// Computes block and payload digests of a block fed in pieces.
pub(crate) struct BodyDigester {
    block: Hasher,
    payload: Payload,
}

enum Payload {
    None,
    Whole(Box<Hasher>),
    Http(Box<crate::http::BlockDigester>),
}

impl BodyDigester {
    pub(crate) fn new(plan: PayloadKind, alg: Algorithm) -> Self {
        BodyDigester {
            block: Hasher::new(alg),
            payload: match plan {
                PayloadKind::None => Payload::None,
                PayloadKind::Block => Payload::Whole(Box::new(Hasher::new(alg))),
                PayloadKind::HttpBody => Payload::Http(Box::new(crate::http::BlockDigester::new(
                    alg,
                    crate::Limits::default(),
                ))),
            },
        }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        self.block.update(data);
        match &mut self.payload {
            Payload::None => {}
            Payload::Whole(h) => h.update(data),
            Payload::Http(d) => d.update(data),
        }
    }

    /// The block digest and, when the record has one, the payload digest.
    pub(crate) fn finish(self) -> (Digest, Option<Digest>) {
        let alg = self.block.algorithm();
        let block = Digest::new(alg, &self.block.finalize());
        let payload = match self.payload {
            Payload::None => None,
            Payload::Whole(h) => Some(Digest::new(alg, &h.finalize())),
            Payload::Http(d) => Some(Digest::new(alg, &d.finish().1.payload)),
        };
        (block, payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_all(opts: WriterOptions, bodies: &[Vec<u8>]) -> (Vec<u8>, Vec<Written>) {
        let mut w = Writer::new(Vec::new(), opts).unwrap();
        let mut out = Vec::new();
        for b in bodies {
            let mut rec = NewRecord::new(RecordType::Resource);
            rec.set("WARC-Target-URI", "http://example.com/x").unwrap();
            out.push(w.write(&mut rec, Body::Bytes(b)).unwrap());
        }
        (w.finish().unwrap(), out)
    }

    fn bodies() -> Vec<Vec<u8>> {
        (0..200)
            .map(|i| {
                format!("<html><body>page {i} of a site with repeated boilerplate</body></html>")
                    .into_bytes()
            })
            .collect()
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_with_dictionary_frame() {
        use crate::archive::Reader;
        use crate::check::{DigestStatus, check_record};
        let samples = bodies();
        let dict = zstd::dict::from_samples(&samples, 4096).unwrap();
        let opts = WriterOptions {
            compression: Compression::Zstd {
                level: 3,
                dictionary: Some(dict.clone()),
            },
            ..WriterOptions::default()
        };
        let (data, written) = write_all(opts, &samples);
        // The dictionary frame comes first: magic, size, dictionary.
        assert_eq!(&data[..4], &0x184D_2A5Du32.to_le_bytes());
        assert_eq!(&data[4..8], &(dict.len() as u32).to_le_bytes());
        assert_eq!(written[0].offset, 8 + dict.len() as u64);
        let mut r = Reader::new(&data[..]).unwrap();
        let mut n = 0;
        while let Some(mut rec) = r.next_record().unwrap() {
            assert_eq!(rec.location().offset, written[n].offset);
            let c = check_record(&mut rec, &Default::default()).unwrap();
            assert_eq!(c.block, DigestStatus::Valid);
            n += 1;
        }
        assert_eq!(n, samples.len());
        assert!(r.take_warnings().is_empty());
        // And the dictionary pays: the records take less room with it.
        let (plain, _) = write_all(
            WriterOptions {
                compression: Compression::Zstd {
                    level: 3,
                    dictionary: None,
                },
                ..WriterOptions::default()
            },
            &samples,
        );
        let records = data.len() - 8 - dict.len();
        assert!(records < plain.len(), "{records} vs {}", plain.len());
    }

    #[test]
    fn offsets_and_lengths_chain_for_every_compression() {
        for compression in [
            Compression::None,
            Compression::Gzip(1),
            Compression::Gzip(9),
            #[cfg(feature = "zstd")]
            Compression::Zstd {
                level: 1,
                dictionary: None,
            },
            #[cfg(feature = "lz4")]
            Compression::Lz4,
        ] {
            let (data, written) = write_all(
                WriterOptions {
                    compression: compression.clone(),
                    ..WriterOptions::default()
                },
                &bodies()[..5],
            );
            let mut at = 0;
            for w in &written {
                assert_eq!(w.offset, at, "{compression:?}");
                at += w.stored_len;
            }
            assert_eq!(at, data.len() as u64);
        }
    }

    /// Inflates one gzip member with flate2 (not the reader under test):
    /// (the bytes, the member's length).
    fn gunzip_member(data: &[u8]) -> (Vec<u8>, usize) {
        let mut d = flate2::bufread::GzDecoder::new(data);
        let mut out = Vec::new();
        io::Read::read_to_end(&mut d, &mut out).unwrap();
        let rest = d.into_inner().len();
        (out, data.len() - rest)
    }

    /// Small members (deflated whole by libdeflate) and a member over
    /// `WHOLE_MAX` (streamed by zlib-rs) written in turn through one writer
    /// each inflate to their record, with gzip's CRC and size checked, and
    /// the reader reads every record back.
    #[test]
    fn gzip_members_small_and_large_read_back() {
        let mut big = Vec::with_capacity(WHOLE_MAX + 10_000);
        let mut x = 1u32;
        while big.len() < WHOLE_MAX + 10_000 {
            // Not too compressible, so the member really spans blocks.
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            big.extend_from_slice(format!("{} ", x >> 16).as_bytes());
        }
        let mut all = bodies()[..3].to_vec();
        all.push(big.clone());
        all.push(bodies()[3].clone());
        all.push(Vec::new());
        let (data, written) = write_all(
            WriterOptions {
                compression: Compression::Gzip(6),
                ..WriterOptions::default()
            },
            &all,
        );
        for (w, body) in written.iter().zip(&all) {
            let at = w.offset as usize;
            let (rec, len) = gunzip_member(&data[at..]);
            assert_eq!(len as u64, w.stored_len);
            assert!(rec.ends_with(&[&body[..], b"\r\n\r\n"].concat()));
        }
        let mut r = crate::archive::Reader::new(&data[..]).unwrap();
        let mut n = 0;
        while let Some(mut rec) = r.next_record().unwrap() {
            assert_eq!(rec.read_block().unwrap(), all[n]);
            n += 1;
        }
        assert_eq!(n, all.len());
    }

    /// A small member is deflated in one call by libdeflate (the same
    /// bytes as libdeflate gives for the record), not streamed by zlib-rs.
    #[cfg(feature = "libdeflate")]
    #[test]
    fn a_small_gzip_member_is_deflated_whole_by_libdeflate() {
        let body = bodies()[7].clone();
        let (data, written) = write_all(
            WriterOptions {
                compression: Compression::Gzip(6),
                ..WriterOptions::default()
            },
            std::slice::from_ref(&body),
        );
        let member = &data[..written[0].stored_len as usize];
        let (rec, _) = gunzip_member(member);
        let mut expect = Vec::new();
        assert!(
            crate::codec::FastDeflater::new(6)
                .unwrap()
                .deflate_append(&rec, &mut expect)
        );
        // Header (10 bytes), deflate stream, CRC and size (8 bytes).
        assert_eq!(&member[10..member.len() - 8], &expect[..]);
    }

    /// A member that turns out larger than `begin` was told (past
    /// `WHOLE_MAX`) is streamed from there, its gathered start first: one
    /// valid member of every byte, the gathered bytes bounded.
    #[test]
    fn a_member_larger_than_announced_is_streamed_whole() {
        let mut c = match Writer::new(Vec::new(), WriterOptions::default())
            .unwrap()
            .comp
        {
            c @ Compressor::Gzip { .. } => c,
            _ => unreachable!("gzip is the default"),
        };
        let mut out = Vec::new();
        let part: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        c.begin(&mut out, 100).unwrap();
        let mut sent = Vec::new();
        for _ in 0..(WHOLE_MAX / part.len() + 2) {
            c.write(&mut out, &part).unwrap();
            sent.extend_from_slice(&part);
            if let Compressor::Gzip { whole, .. } = &c {
                assert!(whole.len() <= WHOLE_MAX);
            }
        }
        c.end(&mut out).unwrap();
        let (back, len) = gunzip_member(&out);
        assert_eq!(len, out.len());
        assert_eq!(back, sent);
        // And the next member, small, is right too.
        let mut next = Vec::new();
        c.begin(&mut next, 5).unwrap();
        c.write(&mut next, b"hello").unwrap();
        c.end(&mut next).unwrap();
        assert_eq!(gunzip_member(&next).0, b"hello");
    }

    /// zstd and LZ4 without their features: refused when the writer is
    /// made, before a byte is written.
    #[test]
    fn compressions_not_compiled_in_are_refused() {
        for (compression, feature, on) in [
            (
                Compression::Zstd {
                    level: 3,
                    dictionary: Some(b"dictionary".to_vec()),
                },
                "zstd",
                cfg!(feature = "zstd"),
            ),
            (Compression::Lz4, "lz4", cfg!(feature = "lz4")),
        ] {
            let mut out = Vec::new();
            let opts = WriterOptions {
                compression,
                ..WriterOptions::default()
            };
            match Writer::new(&mut out, opts) {
                Ok(_) => assert!(on, "{feature}"),
                Err(e) => {
                    assert!(!on, "{feature}: {e}");
                    assert!(
                        matches!(e.kind(), ErrorKind::NotCompiledIn { feature: f, .. } if *f == feature),
                        "{e}"
                    );
                    assert!(
                        e.to_string()
                            .ends_with(&format!("support not compiled in (feature {feature})")),
                        "{e}"
                    );
                    assert!(out.is_empty());
                }
            }
        }
    }

    #[test]
    fn dates_follow_the_version() {
        let r11 = NewRecord::new(RecordType::Resource);
        let d = r11.header().date().unwrap().unwrap();
        assert_eq!(d.precision, DatePrecision::Fraction(6));
        let r10 = NewRecord::with_version(RecordType::Resource, Version::V1_0);
        assert_eq!(
            r10.header().date().unwrap().unwrap().precision,
            DatePrecision::Second
        );
        assert!(r10.header().as_bytes().starts_with(b"WARC/1.0\r\n"));
        let id = r11.record_id();
        assert!(id.starts_with("<urn:uuid:") && id.ends_with('>'), "{id}");
    }

    #[test]
    fn stream_bodies_spool_and_declared_lengths_are_checked() {
        let mut w = Writer::new(
            Vec::new(),
            WriterOptions {
                spool_threshold: 16,
                ..WriterOptions::default()
            },
        )
        .unwrap();
        let body = vec![7u8; 1000];
        let mut src = &body[..];
        let mut rec = NewRecord::new(RecordType::Resource);
        let info = w
            .write(
                &mut rec,
                Body::Stream {
                    reader: &mut src,
                    len: None,
                },
            )
            .unwrap();
        assert_eq!(info.block_len, 1000);
        assert!(rec.header().block_digest().is_some());
        let mut short = &body[..10];
        let mut rec = NewRecord::new(RecordType::Resource);
        assert!(
            w.write(
                &mut rec,
                Body::Stream {
                    reader: &mut short,
                    len: Some(20)
                }
            )
            .is_err()
        );
        // A seekable body is read twice, not spooled.
        let mut cur = std::io::Cursor::new(body.clone());
        let mut rec = NewRecord::new(RecordType::Resource);
        let info = w
            .write(
                &mut rec,
                Body::Seekable {
                    reader: &mut cur,
                    len: None,
                },
            )
            .unwrap();
        assert_eq!(info.block_len, 1000);
    }
}
