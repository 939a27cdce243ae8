//! Copying records into new files, one compressed member per record:
//! what `warchest recompress`, `filter`, `concat` and `split` do.
//!
//! A [`Copier`] reads records from any [`archive::Reader`] (plain, gzip per
//! record or whole file, zstd, LZ4), optionally keeps only those a
//! [`Filter`] selects, and writes each with [`Writer::write_raw`]: the
//! header block and block bytes are the input's, only the compression
//! changes. Each record is first compressed into a *stage* (memory, then a
//! temporary file past [`CopyOptions::spool_threshold`]) so that its stored
//! length is known before it is placed: a [`RecordSink`] then puts it in one
//! output ([`WriteSink`]), a part for later ordered merging ([`PartSink`]),
//! or the current file of a split ([`SplitSink`]), and a record whose block
//! turns out shorter than its Content-Length (a truncated last record, a
//! member that ended early) is dropped whole instead of leaving a broken
//! member behind.
//!
//! ```
//! use warchest::archive::Reader;
//! use warchest_ops::copy::{Copier, CopyOptions, CopyReport, WriteSink};
//! use warchest::write::Compression;
//! let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
//! let mut copier = Copier::new(CopyOptions::new(Compression::Gzip(6)))?;
//! let mut sink = WriteSink::new(Vec::new(), copier.preamble())?;
//! let mut report = CopyReport::default();
//! copier.copy_archive(&mut Reader::new(&data[..])?, &mut sink, &mut report)?;
//! assert_eq!(report.records_written, 1);
//! let gz = sink.into_inner();
//! assert_eq!(&gz[..2], b"\x1f\x8b");
//! # Ok::<(), warchest::Error>(())
//! ```

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::filter::{Filter, Subject};
use warchest::Limits;
use warchest::archive::{self, Format};
use warchest::codec::Source;
use warchest::error::{Error, ErrorKind, Result};
use warchest::recoveries::{Recoveries, UnparsedHead};
use warchest::warc::WarcHeader;
use warchest::write::{Compression, Writer, WriterOptions};

/// How records are copied.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    /// The compression of each output record.
    pub compression: Compression,
    /// Limits for reading HTTP heads (filters on HTTP fields).
    pub limits: Limits,
    /// A record's compressed bytes are staged in memory up to this many
    /// bytes, then in a temporary file. Default 8 MiB.
    pub spool_threshold: usize,
}

impl CopyOptions {
    /// Options with `compression` and the defaults.
    pub fn new(compression: Compression) -> Self {
        CopyOptions {
            compression,
            limits: Limits::default(),
            spool_threshold: 8 << 20,
        }
    }
}

/// A record that was read but not copied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Its number in the input (0-based).
    pub index: u64,
    /// Its stored offset in the input.
    pub offset: u64,
    /// Its WARC-Record-ID.
    pub record_id: Option<String>,
    /// Why.
    pub reason: String,
}

/// Most [`Dropped`] entries a report keeps; the rest are only counted.
pub const MAX_DROPPED_KEPT: usize = 1000;

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Records read from the inputs.
    pub records_read: u64,
    /// Records the filter kept (all, without one).
    pub records_selected: u64,
    /// Records written.
    pub records_written: u64,
    /// Stored bytes of the records written (not counting a dictionary frame).
    pub bytes_written: u64,
    /// Records dropped because they could not be copied whole.
    pub dropped_count: u64,
    /// The first [`MAX_DROPPED_KEPT`] of them.
    pub dropped: Vec<Dropped>,
    /// Records whose HTTP head a filter looked for and could not read (not
    /// an HTTP message, or a head past the limit): its `:status` and
    /// `http:*` tests saw no head. Counted under the file name "" (the
    /// caller names its file); in JSON, their number.
    #[serde(serialize_with = "serialize_total")]
    pub unparsed_heads: Recoveries<UnparsedHead>,
}

/// A tally as its total.
fn serialize_total<S: serde::Serializer>(
    r: &Recoveries<UnparsedHead>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(r.total())
}

impl CopyReport {
    /// Adds the counts of `other`.
    pub fn merge(&mut self, other: &CopyReport) {
        self.records_read += other.records_read;
        self.records_selected += other.records_selected;
        self.records_written += other.records_written;
        self.bytes_written += other.bytes_written;
        self.dropped_count += other.dropped_count;
        let room = MAX_DROPPED_KEPT.saturating_sub(self.dropped.len());
        self.dropped
            .extend(other.dropped.iter().take(room).cloned());
        self.unparsed_heads.append(other.unparsed_heads.clone());
    }

    fn drop_record(&mut self, d: Dropped) {
        self.dropped_count += 1;
        if self.dropped.len() < MAX_DROPPED_KEPT {
            self.dropped.push(d);
        }
    }
}

/// One record's stored bytes, ready to be placed.
pub struct StagedRecord<'a> {
    /// How many bytes.
    pub len: u64,
    /// The record's WARC-Date as a 14-digit number (`yyyymmddhhmmss`), when
    /// it has a valid one.
    pub timestamp: Option<u64>,
    /// A warcinfo record (a split file that does not open with one is
    /// given a new one).
    pub warcinfo: bool,
    /// The bytes: exactly `len` of them.
    pub bytes: &'a mut dyn Read,
}

/// Where staged records go.
pub trait RecordSink {
    /// Places one record.
    ///
    /// # Errors
    /// Writing failed.
    fn put(&mut self, rec: StagedRecord<'_>) -> Result<()>;
}

/// Copies exactly `len` bytes of `from` to `to`.
fn copy_exact(from: &mut dyn Read, to: &mut dyn Write, len: u64) -> Result<()> {
    let n = io::copy(&mut from.take(len), to)?;
    if n != len {
        return Err(Error::new(ErrorKind::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("staged record ended after {n} of {len} bytes"),
        ))));
    }
    Ok(())
}

/// A sink that appends every record to one output (a file, standard
/// output, a `Vec`), after the preamble (the dictionary frame, if any).
pub struct WriteSink<W> {
    out: W,
    len: u64,
}

impl<W: Write> WriteSink<W> {
    /// A sink over `out`, which gets `preamble` first.
    ///
    /// # Errors
    /// Writing the preamble failed.
    pub fn new(mut out: W, preamble: &[u8]) -> Result<Self> {
        out.write_all(preamble)?;
        Ok(WriteSink {
            out,
            len: preamble.len() as u64,
        })
    }

    /// Bytes written so far, preamble included.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The output, mutably.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the output.
    ///
    /// # Errors
    /// Flushing failed.
    pub fn finish(mut self) -> Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// The output, unflushed.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> RecordSink for WriteSink<W> {
    fn put(&mut self, rec: StagedRecord<'_>) -> Result<()> {
        copy_exact(rec.bytes, &mut self.out, rec.len)?;
        self.len += rec.len;
        Ok(())
    }
}

/// Records of one input staged in a temporary file, to be replayed into
/// another sink in order: how inputs are copied in parallel while the
/// output keeps the inputs' order. Keeps 16 bytes per record in memory.
pub struct PartSink {
    file: File,
    records: Vec<(u64, Option<u64>, bool)>,
}

impl PartSink {
    /// A part in a new temporary file in `dir` (the system's temporary
    /// directory when `None`).
    ///
    /// # Errors
    /// The file cannot be made.
    pub fn new(dir: Option<&Path>) -> Result<Self> {
        let file = match dir {
            Some(d) => tempfile::tempfile_in(d)?,
            None => tempfile::tempfile()?,
        };
        Ok(PartSink {
            file,
            records: Vec::new(),
        })
    }

    /// Records in the part.
    pub fn records(&self) -> usize {
        self.records.len()
    }

    /// Puts every record of the part into `sink`, in order.
    ///
    /// # Errors
    /// Reading the part or writing the sink failed.
    pub fn replay(mut self, sink: &mut dyn RecordSink) -> Result<()> {
        self.file.seek(SeekFrom::Start(0))?;
        let mut r = io::BufReader::with_capacity(1 << 16, &mut self.file);
        for &(len, timestamp, warcinfo) in &self.records {
            sink.put(StagedRecord {
                len,
                timestamp,
                warcinfo,
                bytes: &mut (&mut r).take(len),
            })?;
        }
        Ok(())
    }
}

impl RecordSink for PartSink {
    fn put(&mut self, rec: StagedRecord<'_>) -> Result<()> {
        copy_exact(rec.bytes, &mut self.file, rec.len)?;
        self.records.push((rec.len, rec.timestamp, rec.warcinfo));
        Ok(())
    }
}

/// What tells one file from another: on Unix its device and inode (a hard
/// link or another spelling of the path is the same file), elsewhere its
/// canonical path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileId(#[cfg(unix)] (u64, u64), #[cfg(not(unix))] PathBuf);

/// The [`FileId`] of the file at `p`; `None` when there is none.
pub fn file_id(p: &Path) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p)
            .ok()
            .map(|m| FileId((m.dev(), m.ino())))
    }
    #[cfg(not(unix))]
    {
        std::fs::canonicalize(p).ok().map(FileId)
    }
}

/// Whether `a` and `b` are the same file ([`FileId`]). A path that does
/// not exist is the same as nothing (writing it truncates no existing
/// file).
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((file_id(a), file_id(b)), (Some(x), Some(y)) if x == y)
}

/// The first of `inputs` that writing `output` through an [`OpenFile`]
/// would overwrite: the same file as `output` or as `output.open`.
pub fn output_overwrites<'a, P: AsRef<Path>>(output: &Path, inputs: &'a [P]) -> Option<&'a P> {
    let mut open = output.as_os_str().to_owned();
    open.push(".open");
    let open = PathBuf::from(open);
    inputs.iter().find(|i| {
        let i = i.as_ref();
        i == output || same_file(i, output) || same_file(i, &open)
    })
}

/// A file written as `NAME.open` and renamed to `NAME` when complete, so
/// that a crawler or a reader never takes a half-written file for a whole
/// one.
pub struct OpenFile {
    path: PathBuf,
    open: PathBuf,
    file: io::BufWriter<File>,
}

impl OpenFile {
    /// Creates (or truncates) `PATH.open`.
    ///
    /// # Errors
    /// The file cannot be created, or `PATH` is a directory.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        // Refused before anything is written: the whole output would be
        // left as `.open`, its rename over a directory failing at the end.
        if path.is_dir() {
            return Err(Error::new(ErrorKind::Usage(
                "is a directory; the output is a file".into(),
            ))
            .in_file(&path));
        }
        let mut open = path.clone().into_os_string();
        open.push(".open");
        let open = PathBuf::from(open);
        let file = File::create(&open).map_err(|e| Error::from(e).in_file(&open))?;
        Ok(OpenFile {
            path,
            open,
            file: io::BufWriter::with_capacity(1 << 16, file),
        })
    }

    /// The name it gets when complete.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The name it has while written.
    pub fn open_path(&self) -> &Path {
        &self.open
    }

    /// Flushes, syncs and renames it to its final name, and syncs the
    /// directory ([`warchest::write::atomic::commit`]), as the rotating
    /// writer closes its files.
    ///
    /// # Errors
    /// Flushing, syncing or renaming failed.
    pub fn finish(mut self) -> Result<PathBuf> {
        self.file
            .flush()
            .map_err(|e| Error::from(e).in_file(&self.open))?;
        warchest::write::atomic::commit(self.file.get_ref(), &self.open, &self.path)?;
        Ok(self.path)
    }
}

impl OpenFile {
    /// The error `e` naming the file, so that a full disk is reported
    /// against the output and not the input being copied.
    fn named(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.open.display()))
    }
}

impl Write for OpenFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf).map_err(|e| self.named(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().map_err(|e| self.named(e))
    }
}

/// How the files of a split are named: `Prefix-Timestamp-Serial-Crawlhost`
/// and the extension, as the WARC specification's annex on file naming
/// recommends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitNaming {
    /// What the files are of (a crawl, a project).
    pub prefix: String,
    /// The machine that wrote them.
    pub crawl_host: String,
    /// `.warc.gz`, `.warc.zst` or `.warc` (see [`Compression::extension`](warchest::write::Compression::extension)).
    pub extension: String,
}

impl SplitNaming {
    /// The name of file number `serial` (zero-padded to 5 digits) begun at
    /// `timestamp` (14 digits, UTC), as the rotating writer names its files
    /// ([`warchest::write::rotate::file_name`]): characters other than ASCII
    /// letters, digits, `.`, `_` and `-` in the prefix and host become `_`
    /// and leading dots are dropped, so a name is always one path component
    /// and never a hidden file.
    pub fn file_name(&self, timestamp: u64, serial: u64) -> String {
        warchest::write::rotate::file_name(
            &self.prefix,
            &format!("{timestamp:014}"),
            serial,
            5,
            &self.crawl_host,
            &self.extension,
        )
    }
}

/// The current time as a 14-digit UTC timestamp.
pub fn now_timestamp() -> u64 {
    let now = time::OffsetDateTime::now_utc();
    let d = warchest::warc::WarcDate::from_datetime(now, warchest::warc::DatePrecision::Second);
    d.and_then(|d| d.timestamp14().parse().ok()).unwrap_or(0)
}

/// A sink that writes records into a series of files of at most
/// `max_size` bytes each: a record is never cut, and a record larger than
/// the limit goes alone into a file of its own (the only case where a file
/// exceeds the limit). Each file starts with the preamble (the dictionary
/// frame, if any), which counts toward its size.
///
/// Each file is named with its own timestamp: the WARC-Date of its first
/// record (the current time when that record has no valid date), so names
/// are the same on every run; the serial keeps the series' order.
///
/// With [`with_warcinfo`](SplitSink::with_warcinfo), a file whose first
/// record is not a warcinfo record opens with a new one. An existing file
/// of the same name is an error unless [`force`](SplitSink::force) is set.
///
/// Files go to a directory ([`SplitSink::new`]) or to any
/// [`SplitTarget`] ([`SplitSink::to_target`]: a bucket, where each object
/// appears only when complete).
pub struct SplitSink {
    target: Box<dyn SplitTarget>,
    naming: SplitNaming,
    max_size: u64,
    preamble: Vec<u8>,
    serial: u64,
    warcinfo: Option<SplitWarcinfo>,
    force: bool,
    current: Option<(Box<dyn SplitFile>, u64, u64)>,
    done: Vec<(PathBuf, u64, u64)>,
}

/// Where a split puts its files: a directory ([`DirTarget`]), or another
/// place whose files appear only when complete (a bucket).
pub trait SplitTarget {
    /// What file `name` is called there (as [`SplitSink::finish`] lists it).
    fn path(&self, name: &str) -> PathBuf;
    /// Whether a file `name` is there already.
    ///
    /// # Errors
    /// The place cannot be asked.
    fn exists(&self, name: &str) -> Result<bool>;
    /// Starts writing file `name`; it appears when
    /// [`SplitFile::finish`] returns.
    ///
    /// # Errors
    /// The file cannot be created.
    fn create(&mut self, name: &str) -> Result<Box<dyn SplitFile>>;
}

/// A file of a split being written.
pub trait SplitFile: Write {
    /// Its name while written, for errors.
    fn open_path(&self) -> &Path;
    /// Completes it; returns its name.
    ///
    /// # Errors
    /// Completing it failed (nothing then appears under the name).
    fn finish(self: Box<Self>) -> Result<PathBuf>;
}

/// A directory: files written as `NAME.open` and renamed when complete.
#[derive(Debug, Clone)]
pub struct DirTarget(pub PathBuf);

impl SplitTarget for DirTarget {
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.0.join(name).exists())
    }

    fn create(&mut self, name: &str) -> Result<Box<dyn SplitFile>> {
        Ok(Box::new(OpenFile::create(self.0.join(name))?))
    }
}

impl SplitFile for OpenFile {
    fn open_path(&self) -> &Path {
        OpenFile::open_path(self)
    }

    fn finish(self: Box<Self>) -> Result<PathBuf> {
        OpenFile::finish(*self)
    }
}

/// What a split writes as the warcinfo record of a file that lacks one.
struct SplitWarcinfo {
    compression: Compression,
    version: warchest::warc::Version,
    fields: Vec<(String, String)>,
}

impl SplitWarcinfo {
    /// The stored bytes of a new warcinfo record for the file `name`.
    fn record(&self, name: &str) -> Result<Vec<u8>> {
        let mut w = Writer::new(
            Vec::new(),
            WriterOptions {
                compression: self.compression.clone(),
                ..WriterOptions::default()
            },
        )?;
        // The dictionary frame (if any) is the file's preamble, not ours.
        let skip = w.get_ref().len();
        let (mut rec, block) =
            warchest::write::records::warcinfo(self.version, Some(name), &self.fields)?;
        w.write(&mut rec, warchest::write::Body::Bytes(&block))?;
        let mut v = w.finish()?;
        v.drain(..skip);
        Ok(v)
    }
}

impl SplitSink {
    /// Files go to `dir`, numbered from `first_serial`.
    pub fn new(
        dir: impl Into<PathBuf>,
        naming: SplitNaming,
        max_size: u64,
        preamble: &[u8],
        first_serial: u64,
    ) -> Self {
        Self::to_target(
            Box::new(DirTarget(dir.into())),
            naming,
            max_size,
            preamble,
            first_serial,
        )
    }

    /// Files go to `target`, numbered from `first_serial`.
    pub fn to_target(
        target: Box<dyn SplitTarget>,
        naming: SplitNaming,
        max_size: u64,
        preamble: &[u8],
        first_serial: u64,
    ) -> Self {
        SplitSink {
            target,
            naming,
            max_size,
            preamble: preamble.to_vec(),
            serial: first_serial,
            warcinfo: None,
            force: false,
            current: None,
            done: Vec::new(),
        }
    }

    /// Opens every file whose first record is not a warcinfo record with a
    /// new warcinfo record (WARC-Filename the file's name, `fields` in its
    /// block), compressed with `compression` (that of the records).
    pub fn with_warcinfo(
        mut self,
        compression: Compression,
        version: warchest::warc::Version,
        fields: Vec<(String, String)>,
    ) -> Self {
        self.warcinfo = Some(SplitWarcinfo {
            compression,
            version,
            fields,
        });
        self
    }

    /// Replaces existing files of the same names (default: an error).
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Completes the last file; returns every file written with its size
    /// and record count, in order.
    ///
    /// # Errors
    /// Completing the last file failed.
    pub fn finish(mut self) -> Result<Vec<(PathBuf, u64, u64)>> {
        self.close()?;
        Ok(self.done)
    }

    fn close(&mut self) -> Result<()> {
        if let Some((f, size, records)) = self.current.take() {
            let p = f.finish()?;
            self.done.push((p, size, records));
        }
        Ok(())
    }
}

impl RecordSink for SplitSink {
    fn put(&mut self, rec: StagedRecord<'_>) -> Result<()> {
        if let Some((_, size, records)) = &self.current
            && *records > 0
            && size.saturating_add(rec.len) > self.max_size
        {
            self.close()?;
        }
        if self.current.is_none() {
            // Each file its own first record's date.
            let ts = rec.timestamp.unwrap_or_else(now_timestamp);
            let name = self.naming.file_name(ts, self.serial);
            self.serial += 1;
            if !self.force && self.target.exists(&name)? {
                return Err(Error::new(ErrorKind::Usage(format!(
                    "{} exists; --force replaces it",
                    self.target.path(&name).display()
                ))));
            }
            let mut f = self.target.create(&name)?;
            f.write_all(&self.preamble)?;
            let mut size = self.preamble.len() as u64;
            let mut records = 0;
            if let Some(info) = &self.warcinfo
                && !rec.warcinfo
            {
                let bytes = info.record(&name)?;
                f.write_all(&bytes)?;
                size += bytes.len() as u64;
                records += 1;
            }
            self.current = Some((f, size, records));
        }
        if let Some((f, size, records)) = &mut self.current {
            copy_exact(rec.bytes, f, rec.len).map_err(|e| e.in_file(f.open_path()))?;
            *size += rec.len;
            *records += 1;
        }
        Ok(())
    }
}

/// The per-record compressed bytes of one record.
struct Stage {
    spool: tempfile::SpooledTempFile,
    threshold: usize,
    len: u64,
}

impl Stage {
    fn new(threshold: usize) -> Self {
        Stage {
            spool: tempfile::SpooledTempFile::new(threshold),
            threshold,
            len: 0,
        }
    }

    fn clear(&mut self) -> io::Result<()> {
        if self.spool.is_rolled() {
            // Back to memory after a large record.
            self.spool = tempfile::SpooledTempFile::new(self.threshold);
        } else {
            self.spool.set_len(0)?;
            self.spool.seek(SeekFrom::Start(0))?;
        }
        self.len = 0;
        Ok(())
    }

    /// Moves the staged bytes out (into `out`), leaving the stage empty.
    fn take_all(&mut self) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0));
        self.spool.seek(SeekFrom::Start(0))?;
        self.spool.read_to_end(&mut v)?;
        self.clear()?;
        Ok(v)
    }
}

impl Write for Stage {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.spool.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A block reader that keeps the bytes consumed through it (the HTTP head a
/// filter read), so they can be written back before the rest of the block.
struct Keep<'a, R> {
    inner: R,
    kept: &'a mut Vec<u8>,
}

impl<R: BufRead> Read for Keep<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        warchest::framing::read_buffered(self, out)
    }
}

impl<R: BufRead> BufRead for Keep<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        // The bytes of the last fill_buf, returned again without reading.
        if let Ok(buf) = self.inner.fill_buf() {
            self.kept.extend_from_slice(&buf[..n.min(buf.len())]);
        }
        self.inner.consume(n);
    }
}

/// Counts what passes and whether the end was reached.
struct Counted<R> {
    inner: R,
    n: u64,
    eof: bool,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(out)?;
        if k == 0 && !out.is_empty() {
            self.eof = true;
        }
        self.n += k as u64;
        Ok(k)
    }
}

/// Copies records, each compressed on its own, into [`RecordSink`]s.
pub struct Copier {
    writer: Writer<Stage>,
    preamble: Vec<u8>,
    limits: Limits,
    filter: Option<Filter>,
}

impl Copier {
    /// A copier writing with `opts`.
    ///
    /// # Errors
    /// The compressor cannot be made (a zstd dictionary zstd rejects).
    pub fn new(opts: CopyOptions) -> Result<Self> {
        let stage = Stage::new(opts.spool_threshold);
        let mut writer = Writer::new(
            stage,
            WriterOptions {
                compression: opts.compression,
                // write_raw never adds digests; records are copied as they are.
                digest: None,
                spool_threshold: opts.spool_threshold,
            },
        )?;
        // The writer put the dictionary frame (if any) first: that is the
        // preamble every output file starts with.
        let preamble = writer.get_mut().take_all()?;
        Ok(Copier {
            writer,
            preamble,
            limits: opts.limits,
            filter: None,
        })
    }

    /// Copies only the records `filter` matches.
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// What each output file must start with: the `.warc.zst` dictionary
    /// frame when compressing with a dictionary, else nothing.
    pub fn preamble(&self) -> &[u8] {
        &self.preamble
    }

    /// Copies every (selected) record of `reader` into `sink`, counting in
    /// `report`. Records whose block is shorter than their Content-Length
    /// are dropped and listed in the report.
    ///
    /// # Errors
    /// Reading the input (an error the lenient reader does not recover
    /// from) or writing the output failed; ARC and Web InfoMall input (this
    /// writes WARC records as they are, it does not convert).
    pub fn copy_archive<S: Source>(
        &mut self,
        reader: &mut archive::Reader<S>,
        sink: &mut dyn RecordSink,
        report: &mut CopyReport,
    ) -> Result<()> {
        if reader.format() != Format::Warc {
            return Err(Error::new(ErrorKind::Usage(format!(
                "the input is {}, not WARC: records are copied as they are, not converted",
                reader.format().name()
            ))));
        }
        while let Some(rec) = reader.next_record()? {
            self.copy_record(rec, sink, report)?;
        }
        Ok(())
    }

    /// Copies one record (if selected) into `sink`.
    ///
    /// # Errors
    /// As [`Copier::copy_archive`].
    pub fn copy_record<S: Source>(
        &mut self,
        mut rec: archive::Record<'_, S>,
        sink: &mut dyn RecordSink,
        report: &mut CopyReport,
    ) -> Result<()> {
        report.records_read += 1;
        let header: WarcHeader = rec.header().clone();
        let loc = rec.location();
        let mut head_bytes = Vec::new();
        if let Some(f) = &self.filter {
            let limits = self.limits;
            // The rule every reader of HTTP heads follows (index, scan).
            let is_http = archive::may_have_http_head(&header);
            let mut block = rec.block();
            let kept = &mut head_bytes;
            // A head looked for and not read: the HTTP tests saw none.
            let mut unread = false;
            let mut load = || {
                if !is_http {
                    return None;
                }
                let mut keep = Keep {
                    inner: &mut block,
                    kept: &mut *kept,
                };
                match warchest::http::read_head(&mut keep, &limits) {
                    Ok(Some(head)) => Some(head),
                    // Bytes that are no head (a read error is the copy's
                    // to meet and say).
                    Ok(None) => {
                        unread = !keep.kept.is_empty();
                        None
                    }
                    Err(_) => None,
                }
            };
            let mut subject = Subject::new(&header).location(loc).http_loader(&mut load);
            let matched = f.matches(&mut subject);
            drop(subject);
            if unread {
                report
                    .unparsed_heads
                    .add("", UnparsedHead { offset: loc.offset });
            }
            if !matched {
                rec.finish()?;
                return Ok(());
            }
        }
        report.records_selected += 1;
        let timestamp = header
            .date()
            .and_then(|d| d.ok())
            .and_then(|d| d.timestamp14().parse::<u64>().ok());
        let declared = header.content_length();
        let written = {
            let mut block = Counted {
                inner: (&head_bytes[..]).chain(rec.block()),
                n: 0,
                eof: false,
            };
            let w = self.writer.write_raw(&header, &mut block);
            (w, block.n, block.eof)
        };
        match written {
            (Ok(_), _, _) => {}
            (Err(e), n, true) if declared.is_some_and(|d| n < d) && !is_input_error(&e) => {
                self.writer.get_mut().clear()?;
                let end = rec.finish()?;
                let why = if end.truncated {
                    "the input ends inside it"
                } else {
                    "its member ends before its Content-Length"
                };
                report.drop_record(Dropped {
                    index: loc.index,
                    offset: loc.offset,
                    record_id: header.record_id().map(|s| s.into_owned()),
                    reason: format!(
                        "block has {n} of its {} bytes ({why}); not copied",
                        declared.unwrap_or(0)
                    ),
                });
                return Ok(());
            }
            (Err(e), _, _) => {
                self.writer.get_mut().clear()?;
                return Err(e);
            }
        }
        rec.finish()?;
        let stage = self.writer.get_mut();
        let len = stage.len;
        stage.spool.seek(SeekFrom::Start(0))?;
        let put = sink.put(StagedRecord {
            len,
            timestamp,
            warcinfo: header.record_type() == warchest::warc::RecordType::Warcinfo,
            bytes: &mut stage.spool,
        });
        stage.clear()?;
        put?;
        report.records_written += 1;
        report.bytes_written += len;
        Ok(())
    }
}

/// True when the error came from the input (a reader error wrapped in the
/// block's io::Error), not from the block simply ending.
fn is_input_error(e: &Error) -> bool {
    !matches!(e.kind(), ErrorKind::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof)
}

/// How a zstd dictionary is trained from an input's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DictTraining {
    /// Largest dictionary, in bytes. Default 112,640 (zstd's default).
    pub max_size: usize,
    /// Memory for samples, in bytes. Default 16 MiB.
    pub sample_budget: usize,
    /// Largest sample: the first this many bytes of a record (its header,
    /// then its block). Default 16 KiB.
    pub max_sample: usize,
}

impl Default for DictTraining {
    fn default() -> Self {
        DictTraining {
            max_size: 112_640,
            sample_budget: 16 << 20,
            max_sample: 16 << 10,
        }
    }
}

/// SplitMix64: a small deterministic generator, so the same input always
/// gives the same sample and dictionary.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Trains a zstd dictionary on samples of the records of `reader`: the
/// start of each record (header block, then block) as it will be
/// compressed, chosen by reservoir sampling when there are more records
/// than fit in [`DictTraining::sample_budget`].
///
/// # Errors
/// Reading failed, or zstd could not train a dictionary (too little input:
/// the message says how much there was).
pub fn train_dictionary<S: Source>(
    reader: &mut archive::Reader<S>,
    opts: &DictTraining,
) -> Result<Vec<u8>> {
    let max_sample = opts.max_sample.max(64);
    let slots = (opts.sample_budget / max_sample).max(1);
    let mut samples: Vec<Vec<u8>> = Vec::new();
    let mut rng = Rng(0x5741_5243_4845_5354);
    let mut seen = 0u64;
    while let Some(mut rec) = reader.next_record()? {
        seen += 1;
        let slot = if samples.len() < slots {
            Some(samples.len())
        } else {
            let j = rng.next() % seen;
            usize::try_from(j).ok().filter(|&j| j < slots)
        };
        let Some(slot) = slot else {
            rec.finish()?;
            continue;
        };
        let h = rec.header().as_bytes();
        let mut s = h[..h.len().min(max_sample)].to_vec();
        let room = (max_sample - s.len()) as u64;
        rec.block().take(room).read_to_end(&mut s)?;
        rec.finish()?;
        if slot == samples.len() {
            samples.push(s);
        } else {
            samples[slot] = s;
        }
    }
    let total: usize = samples.iter().map(Vec::len).sum();
    // zstd wants much more sample data than dictionary.
    let size = opts.max_size.min(total / 8).max(256);
    zstd::dict::from_samples(&samples, size).map_err(|e| {
        Error::new(ErrorKind::Usage(format!(
            "cannot train a zstd dictionary from {} samples of {seen} records ({total} bytes): {e}",
            samples.len()
        )))
    })
}

#[cfg(test)]
mod same_file_tests {
    use super::*;

    #[test]
    fn the_same_file_by_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.warc");
        let b = dir.path().join("b.warc");
        std::fs::write(&a, "x").unwrap();
        std::fs::write(&b, "x").unwrap();
        let dotted = dir.path().join(".").join("a.warc");
        assert!(same_file(&a, &dotted));
        assert!(!same_file(&a, &b));
        // Not there: not the same as anything, itself included.
        let none = dir.path().join("none.warc");
        assert!(!same_file(&none, &none));
        #[cfg(unix)]
        {
            let link = dir.path().join("link.warc");
            std::fs::hard_link(&a, &link).unwrap();
            assert!(same_file(&a, &link));
        }
        // The output itself, another name of it, or its .open file.
        assert_eq!(output_overwrites(&a, &[&b, &dotted]), Some(&&dotted));
        assert_eq!(output_overwrites(&none, &[&a, &none]), Some(&&none));
        let open = dir.path().join("c.warc.open");
        std::fs::write(&open, "x").unwrap();
        assert_eq!(
            output_overwrites(&dir.path().join("c.warc"), &[&a, &open]),
            Some(&&open)
        );
        assert_eq!(
            output_overwrites(&dir.path().join("c.warc"), &[&a, &b]),
            None
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u32, body: &str) -> Vec<u8> {
        format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:x:{id}>\r\nWARC-Date: 2020-01-0{}T00:00:00Z\r\nContent-Length: {}\r\n\r\n{body}\r\n\r\n",
            id % 9 + 1,
            body.len()
        )
        .into_bytes()
    }

    /// Copies the archive `data` through `copier` into memory, after the
    /// copier's preamble: what was written and the report.
    fn copy_all(copier: &mut Copier, data: &[u8]) -> (Vec<u8>, CopyReport) {
        let mut sink = WriteSink::new(Vec::new(), copier.preamble()).unwrap();
        let mut report = CopyReport::default();
        copier
            .copy_archive(
                &mut archive::Reader::new(data).unwrap(),
                &mut sink,
                &mut report,
            )
            .unwrap();
        (sink.into_inner(), report)
    }

    /// A directory given as the output is refused before anything is
    /// written (the whole output was left as `.open`, its rename failing).
    #[test]
    fn a_directory_is_no_output_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = OpenFile::create(dir.path()).err().expect("refused");
        assert!(e.to_string().contains("is a directory"), "{e}");
        let mut open = dir.path().as_os_str().to_owned();
        open.push(".open");
        assert!(!std::path::Path::new(&open).exists());
    }

    #[test]
    fn names_follow_the_annex() {
        let n = SplitNaming {
            prefix: "crawl/1".into(),
            crawl_host: "..".into(),
            extension: ".warc.gz".into(),
        };
        assert_eq!(
            n.file_name(20200102030405, 7),
            "crawl_1-20200102030405-00007-_.warc.gz"
        );
        assert_eq!(
            n.file_name(1, 123456),
            "crawl_1-00000000000001-123456-_.warc.gz"
        );
        // The rotating writer's rule: leading dots go, nothing is empty.
        let n = SplitNaming {
            prefix: ".hidden".into(),
            crawl_host: String::new(),
            extension: ".warc".into(),
        };
        assert_eq!(n.file_name(1, 1), "hidden-00000000000001-00001-_.warc");
    }

    #[test]
    fn split_never_exceeds_and_puts_big_records_alone() {
        let dir = tempfile::tempdir().unwrap();
        let naming = SplitNaming {
            prefix: "t".into(),
            crawl_host: "h".into(),
            extension: ".warc".into(),
        };
        let mut s = SplitSink::new(dir.path(), naming, 100, b"", 0);
        for len in [40u64, 50, 20, 150, 60, 100, 1] {
            let data = vec![b'x'; len as usize];
            s.put(StagedRecord {
                len,
                timestamp: Some(20200101000000),
                warcinfo: false,
                bytes: &mut &data[..],
            })
            .unwrap();
        }
        let files = s.finish().unwrap();
        let sizes: Vec<(u64, u64)> = files.iter().map(|f| (f.1, f.2)).collect();
        assert_eq!(
            sizes,
            vec![(90, 2), (20, 1), (150, 1), (60, 1), (100, 1), (1, 1)]
        );
        for (i, (p, size, _)) in files.iter().enumerate() {
            assert_eq!(std::fs::metadata(p).unwrap().len(), *size);
            assert!(p.ends_with(format!("t-20200101000000-{i:05}-h.warc")));
        }
        // Nothing left open.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), files.len());
    }

    #[test]
    fn truncated_record_is_dropped_whole() {
        let mut data = record(1, "hello");
        let mut last = record(2, "a longer body");
        last.truncate(last.len() - 8);
        data.extend(&last);
        for c in [Compression::None, Compression::Gzip(1)] {
            let mut copier = Copier::new(CopyOptions::new(c.clone())).unwrap();
            let (out, report) = copy_all(&mut copier, &data);
            assert_eq!(report.records_read, 2);
            assert_eq!(report.records_written, 1);
            assert_eq!(report.dropped_count, 1);
            assert!(
                report.dropped[0]
                    .reason
                    .contains("the input ends inside it"),
                "{:?}",
                report.dropped
            );
            assert_eq!(report.bytes_written, out.len() as u64);
            if c == Compression::None {
                assert_eq!(out, record(1, "hello"));
            }
        }
    }

    #[test]
    fn filter_keeps_the_http_head_bytes() {
        let http = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>";
        let mk = |status: &str| {
            let b = http.replace("200 OK", status);
            format!(
                "WARC/1.1\r\nWARC-Type: response\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{b}\r\n\r\n",
                b.len()
            )
            .into_bytes()
        };
        let mut data = mk("404 Not Found");
        data.extend(mk("200 OK"));
        data.extend(record(3, "x"));
        let f = Filter::parse(":status == 200 || :type == \"resource\"").unwrap();
        let mut copier = Copier::new(CopyOptions::new(Compression::None))
            .unwrap()
            .with_filter(f);
        let (out, report) = copy_all(&mut copier, &data);
        let mut want = mk("200 OK");
        want.extend(record(3, "x"));
        assert_eq!(out, want);
        assert_eq!((report.records_read, report.records_selected), (3, 2));
    }

    /// The filter reads a head where the index does
    /// (`archive::may_have_http_head`): a response of an `http:` URI whose
    /// Content-Type is not `application/http` (as some tools write) too.
    #[test]
    fn filter_reads_heads_where_the_index_does() {
        let mk = |uri: &str, block: &str| {
            format!(
                "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nContent-Length: {}\r\n\r\n{block}\r\n\r\n",
                block.len()
            )
            .into_bytes()
        };
        let ok = "HTTP/1.1 200 OK\r\n\r\nhi";
        let mut data = mk("HTTP://a.test/", ok);
        data.extend(mk("http://a.test/odd", "not http at all"));
        data.extend(mk("urn:x:1", ok));
        let f = Filter::parse(":status == 200").unwrap();
        let mut copier = Copier::new(CopyOptions::new(Compression::None))
            .unwrap()
            .with_filter(f);
        let (out, report) = copy_all(&mut copier, &data);
        assert_eq!(out, mk("HTTP://a.test/", ok));
        assert_eq!((report.records_read, report.records_selected), (3, 1));
        // The second one was read for a head and had none; the third,
        // of no HTTP URI, was not read for one.
        let offsets: Vec<u64> = report
            .unparsed_heads
            .kept()
            .map(|(_, u)| u.offset)
            .collect();
        assert_eq!(offsets, [mk("HTTP://a.test/", ok).len() as u64]);
    }

    #[test]
    fn zstd_dictionary_is_the_preamble() {
        let mut data = Vec::new();
        for i in 0..300 {
            data.extend(record(
                i,
                &format!("<html><body>page number {i} of the site</body></html>"),
            ));
        }
        let dict = train_dictionary(
            &mut archive::Reader::new(&data[..]).unwrap(),
            &DictTraining::default(),
        )
        .unwrap();
        assert!(!dict.is_empty());
        let c = Compression::Zstd {
            level: 3,
            dictionary: Some(dict.clone()),
        };
        let mut copier = Copier::new(CopyOptions::new(c)).unwrap();
        assert_eq!(&copier.preamble()[..4], &0x184D_2A5Du32.to_le_bytes());
        assert_eq!(copier.preamble().len(), dict.len() + 8);
        let (out, _) = copy_all(&mut copier, &data);
        let mut r = archive::Reader::new(&out[..]).unwrap();
        let mut back = Vec::new();
        while let Some(mut rec) = r.next_record().unwrap() {
            back.extend(rec.header().as_bytes());
            back.extend(rec.read_block().unwrap());
            back.extend(b"\r\n\r\n");
        }
        assert_eq!(back, data);
        assert!(r.take_warnings().is_empty());
        // Too little input is an error that says how little.
        let e = train_dictionary(
            &mut archive::Reader::new(&record(1, "x")[..]).unwrap(),
            &DictTraining::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("1 samples of 1 records"), "{e}");
    }
}
