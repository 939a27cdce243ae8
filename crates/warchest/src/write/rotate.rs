//! A writer of a series of WARC files: a new file when the next record would
//! pass a size limit, each named and opened as ISO 28500 Annex B recommends
//! and each starting with a warcinfo record; records too large for any file
//! are segmented (section 7) or given a file of their own.
//!
//! A file is written as `NAME.open` and renamed to `NAME` once it is
//! complete and synced, so no reader sees a half-written file under its
//! final name; after a crash the `.open` file holds every record written
//! before it, each a whole gzip member or zstd frame.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::warc::{DatePrecision, RecordType, Version, WarcDate, WarcHeader, field};

use super::{
    Body, BodyDigester, CaptureLimits, Compression, NewRecord, ReadSeek, Writer, WriterOptions,
    Written, records,
};

/// The target size of a WARC file Annex B recommends: 1 GB (10^9 bytes).
pub const DEFAULT_MAX_SIZE: u64 = 1_000_000_000;

/// What to do with a record that does not fit in an empty file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Oversize {
    /// Split it into segments (section 7): the first in a new file after
    /// its warcinfo, filled to the limit, then `continuation` records in
    /// the files after it. Warcinfo, request, metadata, revisit and
    /// continuation records are never segmented (section 7 advises against
    /// the first four); they get a file of their own.
    Segment,
    /// Put it, whole, in a file of its own, larger than the limit (Annex B:
    /// "placed in oversized WARC files").
    OwnFile,
}

/// How a [`RotatingWriter`] names, fills and describes its files.
#[derive(Debug, Clone)]
pub struct RotatingOptions {
    /// The first part of each file name: the project or crawl (Annex B
    /// `Prefix`). Default `warchest`. Characters other than ASCII letters,
    /// digits, `.`, `_` and `-` become `_`.
    pub prefix: String,
    /// The last part: the host writing the file (`Crawlhost`). Default this
    /// machine's host name.
    pub crawlhost: String,
    /// The serial number of the first file (default 0); each new file
    /// takes the next one.
    pub first_serial: u64,
    /// Serials are zero-padded to this many digits (default 5).
    pub serial_digits: usize,
    /// A new file is started when the next record would make the current
    /// one larger than this many bytes as stored. Default 10^9.
    pub max_size: u64,
    /// Compression, digests and spooling of every record.
    pub writer: WriterOptions,
    /// The version of the warcinfo records (default 1.1). Records given
    /// to the writer keep their own version line.
    pub version: Version,
    /// The fields of each file's warcinfo block, in order (`operator`,
    /// `isPartOf`, `description`, `robots`, `http-header-user-agent`...);
    /// `software`, `hostname`, `format` and `conformsTo` are added when
    /// missing.
    pub warcinfo: Vec<(String, String)>,
    /// Give every new record (not records copied with
    /// [`RotatingWriter::write_raw`]) a WARC-Warcinfo-ID naming its file's
    /// warcinfo record, unless it has one. Default true.
    pub link_warcinfo: bool,
    /// Records larger than a file.
    pub oversize: Oversize,
    /// Fill WARC-Identified-Payload-Type of new records from the payload's
    /// first bytes (see `write::identify`), unless already set. Default
    /// false. Needs the `identify` feature: without it
    /// [`RotatingWriter::new`] refuses `true`.
    pub identify_payload_type: bool,
    /// Sync each file to disk before renaming it. Default true.
    pub sync: bool,
    /// A serial counter shared by several writers filling one directory
    /// at once (a crawler's pool of writers, as Heritrix's writers share
    /// one serial number): each new file takes the counter's next value,
    /// so no two files of the pool share a serial. `None` (the default):
    /// the writer counts from `first_serial` on its own.
    pub shared_serial: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl Default for RotatingOptions {
    fn default() -> Self {
        RotatingOptions {
            prefix: "warchest".into(),
            crawlhost: hostname(),
            first_serial: 0,
            serial_digits: 5,
            max_size: DEFAULT_MAX_SIZE,
            writer: WriterOptions::default(),
            version: Version::V1_1,
            warcinfo: Vec::new(),
            link_warcinfo: true,
            oversize: Oversize::Segment,
            identify_payload_type: false,
            sync: true,
            shared_serial: None,
        }
    }
}

/// This machine's host name (`localhost` when it cannot be told).
pub fn hostname() -> String {
    let from_file = |p: &str| {
        fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    from_file("/proc/sys/kernel/hostname")
        .or_else(|| from_file("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .or_else(|| std::env::var("COMPUTERNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".into())
}

/// Keeps a file name part to ASCII letters, digits, `.`, `_` and `-`, so
/// that no prefix or host name can reach outside the output directory.
pub fn sanitize_name_part(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let out = out.trim_start_matches('.').to_string();
    if out.is_empty() { "_".into() } else { out }
}

/// An Annex B file name: `Prefix-Timestamp-Serial-Crawlhost` and the
/// suffix, the timestamp 14 digits UTC, the serial zero-padded.
pub fn file_name(
    prefix: &str,
    timestamp14: &str,
    serial: u64,
    digits: usize,
    crawlhost: &str,
    ext: &str,
) -> String {
    format!(
        "{}-{}-{:0digits$}-{}{}",
        sanitize_name_part(prefix),
        timestamp14,
        serial,
        sanitize_name_part(crawlhost),
        ext,
    )
}

/// Where a record, or one segment of it, was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The file, by its final name (it is `NAME.open` until closed).
    pub path: PathBuf,
    /// Offset, stored length, record id and block length.
    pub written: Written,
}

struct OpenFile {
    path: PathBuf,
    open_path: PathBuf,
    w: Writer<BufWriter<File>>,
    warcinfo_id: String,
    /// Records after the warcinfo.
    records: u64,
}

/// Writes records to a series of files in one directory; see the module
/// documentation.
///
/// ```
/// use warchest::write::{RotatingWriter, RotatingOptions, NewRecord, Body};
/// use warchest::warc::RecordType;
/// let dir = tempfile::tempdir()?;
/// let mut w = RotatingWriter::new(dir.path(), RotatingOptions {
///     prefix: "test".into(),
///     crawlhost: "host.example".into(),
///     warcinfo: vec![("operator".into(), "Jane <jane@example.org>".into())],
///     ..RotatingOptions::default()
/// })?;
/// let mut rec = NewRecord::new(RecordType::Resource);
/// rec.set("WARC-Target-URI", "file:///hello.txt")?.set("Content-Type", "text/plain")?;
/// w.write(&mut rec, Body::Bytes(b"hello"))?;
/// let files = w.finish()?;
/// let name = files[0].file_name().unwrap().to_str().unwrap();
/// assert!(name.starts_with("test-") && name.ends_with("-00000-host.example.warc.gz"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RotatingWriter {
    dir: PathBuf,
    opts: RotatingOptions,
    serial: u64,
    cur: Option<OpenFile>,
    stage: Writer<tempfile::SpooledTempFile>,
    /// Stored length of the last warcinfo record written.
    warcinfo_len: Option<u64>,
    done: Vec<PathBuf>,
    /// A sync or a close of one of the files failed (see
    /// [`RotatingWriter::failed`]).
    failed: bool,
}

/// A body that can be read again from its start.
enum Replay<'a> {
    Bytes(&'a [u8]),
    Seek {
        r: &'a mut dyn ReadSeek,
        start: u64,
        len: u64,
    },
    Spool(tempfile::SpooledTempFile, u64),
}

impl Replay<'_> {
    fn len(&self) -> u64 {
        match self {
            Replay::Bytes(b) => b.len() as u64,
            Replay::Seek { len, .. } | Replay::Spool(_, len) => *len,
        }
    }

    /// The part `off..off+len` as a body (the whole when `off` is 0 and
    /// `len` the length).
    fn part(&mut self, off: u64, len: u64) -> Result<Body<'_>> {
        Ok(match self {
            Replay::Bytes(b) => {
                let s = usize::try_from(off).unwrap_or(usize::MAX).min(b.len());
                let e = usize::try_from(off.saturating_add(len))
                    .unwrap_or(usize::MAX)
                    .min(b.len());
                Body::Bytes(&b[s..e])
            }
            Replay::Seek { r, start, .. } => {
                r.seek(SeekFrom::Start(*start + off))?;
                Body::Seekable {
                    reader: &mut **r,
                    len: Some(len),
                }
            }
            Replay::Spool(f, _) => {
                f.seek(SeekFrom::Start(off))?;
                Body::Seekable {
                    reader: f,
                    len: Some(len),
                }
            }
        })
    }

    fn whole(&mut self) -> Result<Body<'_>> {
        let len = self.len();
        self.part(0, len)
    }

    /// Up to `n` bytes from the start, for identification.
    #[cfg(feature = "identify")]
    fn prefix(&mut self, n: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let take = (n as u64).min(self.len());
        match self.part(0, take)? {
            Body::Bytes(b) => out.extend_from_slice(b),
            Body::Seekable { reader, .. } => {
                reader.take(take).read_to_end(&mut out)?;
            }
            Body::Stream { .. } => {}
        }
        Ok(out)
    }
}

impl RotatingWriter {
    /// A writer of files in `dir` (created if missing). No file is made
    /// until the first record.
    ///
    /// # Errors
    /// The directory cannot be created, the options are unusable (a
    /// `max_size` of 0), or the zstd context cannot be made;
    /// [`ErrorKind::NotCompiledIn`] for a compression or
    /// `identify_payload_type` whose feature is off.
    pub fn new(dir: impl AsRef<Path>, opts: RotatingOptions) -> Result<Self> {
        if opts.identify_payload_type && !cfg!(feature = "identify") {
            return Err(Error::new(ErrorKind::NotCompiledIn {
                what: "payload type identification",
                feature: "identify",
            }));
        }
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| Error::from(e).in_file(&dir))?;
        if opts.max_size == 0 {
            return Err(Error::new(ErrorKind::Usage(
                "max size must be above 0".into(),
            )));
        }
        let mut stage = Writer::new(
            tempfile::SpooledTempFile::new(opts.writer.spool_threshold),
            opts.writer.clone(),
        )?;
        // A zstd dictionary frame belongs at the start of each file, not in
        // the staged record.
        stage.get_mut().set_len(0)?;
        Ok(RotatingWriter {
            dir,
            serial: opts.first_serial,
            opts,
            cur: None,
            stage,
            warcinfo_len: None,
            done: Vec::new(),
            failed: false,
        })
    }

    /// The options.
    pub fn options(&self) -> &RotatingOptions {
        &self.opts
    }

    /// The files closed so far, by their final names.
    pub fn closed_files(&self) -> &[PathBuf] {
        &self.done
    }

    /// Whether a sync or a close of one of this writer's files failed (an
    /// `fdatasync`, the close's sync, its rename or the directory's sync):
    /// records written may then not survive a power loss although the
    /// call that wrote them returned (a failed close leaves its file as
    /// `NAME.open`, and the writer goes on with a new file). Whoever makes
    /// durable what points into the files (a crawl's dedupe index) checks
    /// this first; it stays set.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// The file being written (its final name), if one is open.
    pub fn current_file(&self) -> Option<&Path> {
        self.cur.as_ref().map(|f| f.path.as_path())
    }

    /// The WARC-Record-ID of the open file's warcinfo record, opening a
    /// file if none is.
    ///
    /// # Errors
    /// As opening a file.
    pub fn warcinfo_id(&mut self) -> Result<String> {
        self.ensure_open()?;
        Ok(self
            .cur
            .as_ref()
            .map(|f| f.warcinfo_id.clone())
            .unwrap_or_default())
    }

    /// Writes a new record (see [`Writer::write`]) where it fits: in the
    /// open file, in a new one, or segmented across new ones.
    ///
    /// A body given as a stream is spooled first, so that the record can be
    /// written again into the next file if it turns out not to fit.
    ///
    /// # Errors
    /// I/O errors of the body or the files (named in the error).
    pub fn write(&mut self, rec: &mut NewRecord, body: Body<'_>) -> Result<Vec<Placed>> {
        let mut replay = match body {
            Body::Bytes(b) => Replay::Bytes(b),
            Body::Seekable { reader, len } => {
                let start = reader.stream_position()?;
                let len = match len {
                    Some(l) => l,
                    None => reader.seek(SeekFrom::End(0))? - start,
                };
                Replay::Seek {
                    r: reader,
                    start,
                    len,
                }
            }
            Body::Stream { reader, len } => {
                let mut spool = tempfile::SpooledTempFile::new(self.opts.writer.spool_threshold);
                let got = io::copy(&mut reader.take(len.unwrap_or(u64::MAX)), &mut spool)?;
                if let Some(l) = len
                    && got != l
                {
                    return Err(super::short_body(l, got));
                }
                Replay::Spool(spool, got)
            }
        };
        self.write_replay(rec, &mut replay)
    }

    /// Writes a record whose body ends at the [`CaptureLimits`] or a
    /// dropped connection, marked with WARC-Truncated when cut (see
    /// [`Writer::write_limited`]).
    ///
    /// # Errors
    /// As [`RotatingWriter::write`].
    pub fn write_limited(
        &mut self,
        rec: &mut NewRecord,
        body: &mut dyn Read,
        limits: CaptureLimits,
    ) -> Result<Vec<Placed>> {
        let (spool, len) =
            super::spool_limited(rec, body, limits, self.opts.writer.spool_threshold)?;
        self.write_replay(rec, &mut Replay::Spool(spool, len))
    }

    /// Copies an existing record untouched (no WARC-Warcinfo-ID is added:
    /// the header is written as read) into the file where it fits. A
    /// record too large for any file is segmented when the options say so:
    /// its segments then carry new headers (section 7).
    ///
    /// # Errors
    /// As [`RotatingWriter::write`]; a block shorter than its Content-Length.
    pub fn write_raw(&mut self, header: &WarcHeader, block: &mut dyn Read) -> Result<Vec<Placed>> {
        self.ensure_open()?;
        let fresh = self.fresh_room();
        let segmentable = self.segmentable(header.record_type());
        let known = header.content_length();
        let upper = known.map(|l| self.bound(header.as_bytes().len() as u64 + l + 4));
        if let Some(u) = upper {
            if u <= self.room() {
                return self.direct_raw(header, block);
            }
            if u <= fresh {
                self.rotate()?;
                return self.direct_raw(header, block);
            }
        }
        if !segmentable {
            // Measure it compressed: it may fit after all.
            let s = self.stage_raw(header, block)?;
            return self.place_staged(s, header);
        }
        let mut spool = tempfile::SpooledTempFile::new(self.opts.writer.spool_threshold);
        let len = match known {
            Some(l) => {
                let got = io::copy(&mut block.take(l), &mut spool)?;
                if got != l {
                    return Err(super::short_body(l, got));
                }
                l
            }
            None => io::copy(block, &mut spool)?,
        };
        let mut replay = Replay::Spool(spool, len);
        let mut staged_header = header.clone();
        if known.is_none() {
            // Without a valid length the copy is given one.
            staged_header
                .fields_mut()
                .set(field::CONTENT_LENGTH, len.to_string())
                .map_err(|e| Error::new(ErrorKind::Usage(e.to_string())))?;
        }
        let body = replay.whole()?;
        let s = self.stage_raw(&staged_header, &mut body_reader(body))?;
        if s <= self.room() || (self.has_records() && s <= fresh) {
            return self.place_staged(s, &staged_header);
        }
        // Too large for any file: segment it under a new header.
        let mut rec = NewRecord::from_header(staged_header);
        rec.remove(field::CONTENT_LENGTH)
            .remove(field::BLOCK_DIGEST);
        self.segment(&mut rec, &mut replay, false)
    }

    /// Flushes the open file's buffer, so that every record written so far
    /// is in the file (a crawler does this before it marks a URI done: a
    /// `kill -9` after it loses none of that URI's records).
    ///
    /// # Errors
    /// The write failed.
    pub fn flush(&mut self) -> Result<()> {
        use std::io::Write as _;
        if let Some(f) = self.cur.as_mut() {
            f.w.get_mut()
                .flush()
                .map_err(|e| Error::from(e).in_file(&f.open_path))?;
        }
        Ok(())
    }

    /// [`RotatingWriter::flush`], then `fdatasync` of the open file: every
    /// record written so far survives a power loss (a crawl does this
    /// before it makes durable the dedupe entries that point into the
    /// file).
    ///
    /// # Errors
    /// The write or the sync failed.
    pub fn sync_data(&mut self) -> Result<()> {
        self.flush()?;
        if let Some(f) = self.cur.as_ref()
            && let Err(e) = f.w.get_ref().get_ref().sync_data()
        {
            self.failed = true;
            return Err(Error::from(e).in_file(&f.open_path));
        }
        Ok(())
    }

    /// [`RotatingWriter::flush`], then a second handle of the open file,
    /// with the file's name (as `NAME.open`); `None` when no file is open.
    /// An `fdatasync` of the handle made later, without this writer
    /// (another thread writes on meanwhile), makes every record written
    /// before this call durable, also if the file is closed in between: a
    /// crawl's checkpoint syncs so, outside the writer's lock.
    ///
    /// # Errors
    /// The write failed, or the handle could not be made.
    pub fn sync_handle(&mut self) -> Result<Option<(PathBuf, File)>> {
        self.flush()?;
        let Some(f) = self.cur.as_ref() else {
            return Ok(None);
        };
        let h =
            f.w.get_ref()
                .get_ref()
                .try_clone()
                .map_err(|e| Error::from(e).in_file(&f.open_path))?;
        Ok(Some((f.open_path.clone(), h)))
    }

    /// Closes the open file (renaming it to its final name); the next
    /// record starts a new one.
    ///
    /// # Errors
    /// Flushing, syncing or renaming failed.
    pub fn rotate(&mut self) -> Result<()> {
        let Some(f) = self.cur.take() else {
            return Ok(());
        };
        // The file is no longer this writer's: whatever fails now leaves
        // it behind (as `NAME.open`, or not durably renamed).
        let r = self.close(f);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn close(&mut self, f: OpenFile) -> Result<()> {
        let OpenFile {
            path, open_path, w, ..
        } = f;
        let name = |e: Error| e.in_file(&open_path);
        let buf = w.finish().map_err(name)?;
        let file = buf
            .into_inner()
            .map_err(|e| Error::from(e.into_error()).in_file(&open_path))?;
        if self.opts.sync {
            #[cfg(test)]
            if FAIL_FILE_SYNC.with(|f| f.get()) {
                return Err(
                    Error::from(io::Error::other("injected sync failure")).in_file(&open_path)
                );
            }
            file.sync_all()
                .map_err(|e| Error::from(e).in_file(&open_path))?;
        }
        drop(file);
        if path.exists() {
            return Err(Error::new(ErrorKind::Usage(format!(
                "{} exists: not replaced",
                path.display()
            ))));
        }
        fs::rename(&open_path, &path).map_err(|e| Error::from(e).in_file(&open_path))?;
        // Listed as soon as it has its final name: a failed directory sync
        // below must not leave a closed file unlisted (not indexed, not
        // named in the error).
        self.done.push(path);
        if self.opts.sync {
            // Makes the rename itself durable: a crash after it must not
            // bring the `.open` name back.
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Closes the open file and returns every file written, in order.
    /// A writer dropped without `finish` (or after an error) leaves its
    /// open file as `NAME.open`: incomplete, but every record in it whole
    /// up to the last one being written.
    ///
    /// # Errors
    /// As [`RotatingWriter::rotate`].
    pub fn finish(mut self) -> Result<Vec<PathBuf>> {
        self.rotate()?;
        Ok(std::mem::take(&mut self.done))
    }

    // --- placing records -------------------------------------------------

    fn write_replay(
        &mut self,
        rec: &mut NewRecord,
        replay: &mut Replay<'_>,
    ) -> Result<Vec<Placed>> {
        self.ensure_open()?;
        #[cfg(feature = "identify")]
        if self.opts.identify_payload_type
            && !rec.header.fields().contains(field::IDENTIFIED_PAYLOAD_TYPE)
        {
            let start = replay.prefix(64 << 10)?;
            if let Some(t) = super::identify::identify_block(&rec.header, &start) {
                rec.set(field::IDENTIFIED_PAYLOAD_TYPE, t)?;
            }
        }
        let linked = self.opts.link_warcinfo
            && rec.header.record_type() != RecordType::Warcinfo
            && !rec.header.fields().contains(field::WARCINFO_ID);
        if linked {
            self.link(rec)?;
        }
        let len = replay.len();
        let upper = self.bound(rec.header.as_bytes().len() as u64 + HEADER_SLACK + len + 4);
        let fresh = self.fresh_room();
        if upper <= self.room() {
            return self.direct(rec, replay);
        }
        if upper <= fresh {
            self.rotate()?;
            self.ensure_open()?;
            if linked {
                self.link(rec)?;
            }
            return self.direct(rec, replay);
        }
        // It may still fit once compressed: measure it.
        let s = self.stage_new(rec, replay)?;
        if s <= self.room() {
            return self.copy_stage(rec.header(), s);
        }
        if self.has_records() && s <= fresh + 1024 {
            self.rotate()?;
            self.ensure_open()?;
            if linked {
                self.link(rec)?;
            }
            let s = self.stage_new(rec, replay)?;
            if s <= self.room() {
                return self.copy_stage(rec.header(), s);
            }
        }
        if self.segmentable(rec.header.record_type()) {
            // The stage computed the digests of the whole record: the
            // segments need new block digests and the whole's payload digest.
            rec.remove(field::BLOCK_DIGEST)
                .remove(field::CONTENT_LENGTH);
            return self.segment(rec, replay, linked);
        }
        if self.has_records() {
            self.rotate()?;
            self.ensure_open()?;
            if linked {
                self.link(rec)?;
            }
        }
        self.direct(rec, replay)
    }

    /// Places a raw record of stored length `s` from the stage.
    fn place_staged(&mut self, s: u64, header: &WarcHeader) -> Result<Vec<Placed>> {
        if s > self.room() && self.has_records() {
            self.rotate()?;
            self.ensure_open()?;
        }
        self.copy_stage(header, s)
    }

    fn segmentable(&self, t: RecordType) -> bool {
        self.opts.oversize == Oversize::Segment
            && !matches!(
                t,
                RecordType::Warcinfo
                    | RecordType::Request
                    | RecordType::Metadata
                    | RecordType::Revisit
                    | RecordType::Continuation
            )
    }

    /// Splits `rec` into segments (section 7). `rec` has no Content-Length
    /// or block digest; its payload digest, when missing, is computed over
    /// the whole body first, since the first segment carries the logical
    /// record's.
    ///
    /// Continuation records carry only what section 7 asks of them (type,
    /// id, date, target URI, segment fields, block digest): "segments other
    /// than the first should not contain other optional fields". With
    /// `linked`, the first segment's WARC-Warcinfo-ID names its file's
    /// warcinfo record.
    fn segment(
        &mut self,
        rec: &mut NewRecord,
        replay: &mut Replay<'_>,
        linked: bool,
    ) -> Result<Vec<Placed>> {
        let total = replay.len();
        if let Some(alg) = self.opts.writer.digest
            && rec.header.payload_kind() != crate::warc::PayloadKind::None
            && !rec.header.fields().contains(field::PAYLOAD_DIGEST)
        {
            let mut d = BodyDigester::new(rec.header.payload_kind(), alg);
            match replay.whole()? {
                Body::Bytes(b) => d.update(b),
                Body::Seekable { reader, len } => {
                    super::copy_n(reader, len.unwrap_or(u64::MAX), |c| {
                        d.update(c);
                        Ok(())
                    })?;
                }
                Body::Stream { .. } => {}
            }
            if let (_, Some(p)) = d.finish() {
                rec.set(field::PAYLOAD_DIGEST, p.to_string())?;
            }
        }
        // Section 7: the origin segment goes in a new file, preceded only
        // by its warcinfo record.
        if self.has_records() {
            self.rotate()?;
        }
        self.ensure_open()?;
        if linked {
            self.link(rec)?;
        }
        // The reason a body was truncated goes on the last segment.
        let truncated = rec.header.get(field::TRUNCATED).map(|s| s.into_owned());
        rec.remove(field::TRUNCATED);
        let origin_id = rec.record_id();
        let uri = rec.header.target_uri().map(|s| s.into_owned());
        let date = rec.header.get(field::DATE).map(|s| s.into_owned());
        let version = rec.header.version();
        rec.set(field::SEGMENT_NUMBER, "1")?;
        let mut placed = Vec::new();
        let mut off = 0u64;
        let mut number = 1u64;
        loop {
            let mut seg = if number == 1 {
                rec.clone()
            } else {
                let mut c = NewRecord::with_version(RecordType::Continuation, version);
                if let Some(u) = &uri {
                    c.set(field::TARGET_URI, u)?;
                }
                if let Some(d) = &date {
                    c.set(field::DATE, d)?;
                }
                c.set(field::SEGMENT_ORIGIN_ID, &origin_id)?;
                c.set(field::SEGMENT_NUMBER, number.to_string())?;
                c
            };
            // Room for the Content-Length, the block digest and, on the
            // last segment, the total length and truncation reason.
            let fixed = seg.header.as_bytes().len() as u64 + HEADER_SLACK + 4;
            let room = self.room();
            let fit = self.max_block(fixed, room);
            if fit == 0 {
                return Err(Error::new(ErrorKind::Usage(format!(
                    "max size {} leaves no room for a segment of a record (header {} bytes)",
                    self.opts.max_size, fixed
                ))));
            }
            let len = fit.min(total - off);
            let last = off + len == total;
            if last && number == 1 {
                // It fits whole after all (the estimates before were
                // generous): a lone first segment would be a broken series.
                seg.remove(field::SEGMENT_NUMBER);
                if let Some(t) = &truncated {
                    seg.set(field::TRUNCATED, t)?;
                }
            }
            if last && number > 1 {
                seg.set(field::SEGMENT_TOTAL_LENGTH, total.to_string())?;
                if let Some(t) = &truncated {
                    seg.set(field::TRUNCATED, t)?;
                }
            }
            let body = replay.part(off, len)?;
            let path = self.cur_path();
            let w = self.cur_writer()?;
            let written = w.write(&mut seg, body).map_err(|e| e.in_file(&path))?;
            placed.push(Placed { path, written });
            self.bump();
            off += len;
            if last {
                return Ok(placed);
            }
            number += 1;
            self.rotate()?;
            self.ensure_open()?;
        }
    }

    /// The largest block that, with `fixed` other bytes, surely fits in
    /// `room` bytes as stored.
    fn max_block(&self, fixed: u64, room: u64) -> u64 {
        if self.bound(fixed) > room {
            return 0;
        }
        let (mut lo, mut hi) = (0u64, room);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.bound(fixed + mid) <= room {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// An upper bound of the stored size of `n` bytes once compressed.
    fn bound(&self, n: u64) -> u64 {
        match &self.opts.writer.compression {
            Compression::None => n,
            // Level 1 (zlib-rs's "quick" strategy) codes with the fixed
            // Huffman table only: up to 9 bits a byte. Other levels fall
            // back to stored blocks (zlib's deflateBound). Plus the gzip
            // header and trailer, and a margin.
            Compression::Gzip(1) => n + (n >> 3) + (n >> 6) + 5 + 18 + 64,
            Compression::Gzip(_) => n + (n >> 12) + (n >> 14) + (n >> 25) + 13 + 18 + 64,
            // ZSTD_COMPRESSBOUND, plus the frame header.
            Compression::Zstd { .. } => {
                let small = if n < (128 << 10) {
                    ((128 << 10) - n) >> 11
                } else {
                    0
                };
                n + (n >> 8) + small + 64
            }
            // Blocks that do not shrink are stored: each at most 4 bytes
            // longer; plus the frame header, end mark and checksum.
            Compression::Lz4 => n + 4 * n.div_ceil(256 << 10) + 23 + 64,
        }
    }

    fn room(&self) -> u64 {
        self.cur
            .as_ref()
            .map_or(0, |f| self.opts.max_size.saturating_sub(f.w.position()))
    }

    /// The room in a new file after its warcinfo record (estimated from
    /// the last one, with margin).
    fn fresh_room(&self) -> u64 {
        let info = self.warcinfo_len.unwrap_or(4096) + 256;
        self.opts.max_size.saturating_sub(info)
    }

    fn has_records(&self) -> bool {
        self.cur.as_ref().is_some_and(|f| f.records > 0)
    }

    fn bump(&mut self) {
        if let Some(f) = &mut self.cur {
            f.records += 1;
        }
    }

    fn cur_path(&self) -> PathBuf {
        self.cur
            .as_ref()
            .map(|f| f.path.clone())
            .unwrap_or_default()
    }

    fn cur_writer(&mut self) -> Result<&mut Writer<BufWriter<File>>> {
        self.ensure_open()?;
        match &mut self.cur {
            Some(f) => Ok(&mut f.w),
            None => Err(Error::new(ErrorKind::Usage("no open file".into()))),
        }
    }

    fn link(&mut self, rec: &mut NewRecord) -> Result<()> {
        let id = self.warcinfo_id()?;
        rec.set(field::WARCINFO_ID, id)?;
        Ok(())
    }

    fn direct(&mut self, rec: &mut NewRecord, replay: &mut Replay<'_>) -> Result<Vec<Placed>> {
        let path = self.cur_path();
        let body = replay.whole()?;
        let w = self.cur_writer()?;
        let written = w.write(rec, body).map_err(|e| e.in_file(&path))?;
        self.bump();
        Ok(vec![Placed { path, written }])
    }

    fn direct_raw(&mut self, header: &WarcHeader, block: &mut dyn Read) -> Result<Vec<Placed>> {
        let path = self.cur_path();
        let w = self.cur_writer()?;
        let written = w.write_raw(header, block).map_err(|e| e.in_file(&path))?;
        self.bump();
        Ok(vec![Placed { path, written }])
    }

    fn reset_stage(&mut self) -> Result<()> {
        let st = self.stage.get_mut();
        st.set_len(0)?;
        st.seek(SeekFrom::Start(0))?;
        Ok(())
    }

    fn stage_new(&mut self, rec: &mut NewRecord, replay: &mut Replay<'_>) -> Result<u64> {
        self.reset_stage()?;
        let body = replay.whole()?;
        let w = self.stage.write(rec, body)?;
        Ok(w.stored_len)
    }

    fn stage_raw(&mut self, header: &WarcHeader, block: &mut dyn Read) -> Result<u64> {
        self.reset_stage()?;
        let w = self.stage.write_raw(header, block)?;
        Ok(w.stored_len)
    }

    /// Copies the staged record (`s` bytes) to the open file.
    fn copy_stage(&mut self, header: &WarcHeader, s: u64) -> Result<Vec<Placed>> {
        self.ensure_open()?;
        let path = self.cur_path();
        let Some(f) = &mut self.cur else {
            return Err(Error::new(ErrorKind::Usage("no open file".into())));
        };
        let offset = f.w.position();
        let st = self.stage.get_mut();
        st.seek(SeekFrom::Start(0))?;
        let copied =
            f.w.copy_stored(&mut st.take(s))
                .map_err(|e| Error::from(e).in_file(&path))?;
        if copied != s {
            return Err(super::short_body(s, copied));
        }
        f.records += 1;
        Ok(vec![Placed {
            path,
            written: Written {
                offset,
                stored_len: s,
                record_id: header
                    .record_id()
                    .map(|s| s.into_owned())
                    .unwrap_or_default(),
                block_len: header.content_length().unwrap_or(0),
            },
        }])
    }

    /// Opens the next file, with its warcinfo record, unless one is open.
    fn ensure_open(&mut self) -> Result<()> {
        if self.cur.is_some() {
            return Ok(());
        }
        let ext = self.opts.writer.compression.extension();
        let stamp = WarcDate::now(DatePrecision::Second).timestamp14();
        // A name taken (same second, same serial, an earlier run) is not
        // overwritten: the next serial is tried.
        let (path, open_path, file) = loop {
            let serial = match &self.opts.shared_serial {
                Some(s) => s.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                None => {
                    self.serial += 1;
                    self.serial - 1
                }
            };
            let name = file_name(
                &self.opts.prefix,
                &stamp,
                serial,
                self.opts.serial_digits,
                &self.opts.crawlhost,
                ext,
            );
            let path = self.dir.join(&name);
            let open_path = self.dir.join(format!("{name}.open"));
            if path.exists() {
                continue;
            }
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&open_path)
            {
                Ok(f) => break (path, open_path, f),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::from(e).in_file(&open_path)),
            }
        };
        if self.opts.sync {
            // The new name durable before any record in the file counts:
            // a crawl's checkpoint syncs the file's data, which is no use
            // if a power loss takes the directory entry that names it.
            sync_dir(&self.dir)?;
        }
        let mut w = Writer::new(
            BufWriter::with_capacity(256 << 10, file),
            self.opts.writer.clone(),
        )
        .map_err(|e| e.in_file(&open_path))?;
        let mut fields = self.opts.warcinfo.clone();
        if !fields
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("hostname"))
        {
            fields.push(("hostname".into(), self.opts.crawlhost.clone()));
        }
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let (mut info, block) = records::warcinfo(self.opts.version, Some(&file_name), &fields)?;
        let written = w
            .write(&mut info, Body::Bytes(&block))
            .map_err(|e| e.in_file(&open_path))?;
        self.warcinfo_len = Some(written.stored_len);
        self.cur = Some(OpenFile {
            path,
            open_path,
            w,
            warcinfo_id: info.record_id(),
            records: 0,
        });
        Ok(())
    }
}

/// Syncs the directory `dir` itself (`fsync` of the directory), so that a
/// file created or renamed in it survives a power loss under its new name.
/// Where the platform or file system cannot sync a directory (Windows
/// cannot open one as a file; some file systems answer `EINVAL` to the
/// sync), nothing is done.
///
/// # Errors
/// The directory cannot be opened (`EMFILE`, `EACCES`...; outside
/// Windows), or the sync failed (an I/O error).
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(test)]
    if FAIL_DIR_SYNC.with(|f| f.get()) {
        return Err(Error::from(io::Error::other("injected directory sync failure")).in_file(dir));
    }
    if cfg!(windows) {
        return Ok(());
    }
    let d = File::open(dir).map_err(|e| Error::from(e).in_file(dir))?;
    match d.sync_all() {
        Ok(()) => {
            #[cfg(test)]
            DIR_SYNCS.with(|n| n.set(n.get() + 1));
            Ok(())
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(Error::from(e).in_file(dir)),
    }
}

#[cfg(test)]
thread_local! {
    /// Directory syncs made (and returned `Ok`) by this thread (tests).
    pub(super) static DIR_SYNCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// While set, a directory sync fails on this thread (tests).
    static FAIL_DIR_SYNC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// While set, a close's file sync fails on this thread (tests).
    static FAIL_FILE_SYNC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What a header may grow by when the writer adds Content-Length, the
/// digests (sha512 in base32 is the longest) and the segment fields.
const HEADER_SLACK: u64 = 512;

fn body_reader(body: Body<'_>) -> Box<dyn Read + '_> {
    match body {
        Body::Bytes(b) => Box::new(b),
        Body::Seekable { reader, len } => Box::new(reader.take(len.unwrap_or(u64::MAX))),
        Body::Stream { reader, len } => Box::new(reader.take(len.unwrap_or(u64::MAX))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    fn opts(host: &str, counter: &Arc<AtomicU64>) -> RotatingOptions {
        RotatingOptions {
            prefix: "pool".into(),
            crawlhost: host.into(),
            first_serial: 7,
            shared_serial: Some(Arc::clone(counter)),
            ..RotatingOptions::default()
        }
    }

    fn write_one(w: &mut RotatingWriter) {
        let mut r = NewRecord::new(RecordType::Resource);
        r.set(field::TARGET_URI, "urn:x").unwrap();
        w.write(&mut r, Body::Bytes(b"x")).unwrap();
    }

    fn serial(f: &Path) -> u64 {
        // pool-TIMESTAMP-SERIAL-host.warc.gz
        let name = f.file_name().unwrap().to_str().unwrap();
        name.split('-').nth(2).unwrap().parse().unwrap()
    }

    /// The directory is synced after a new `.open` file is made (its
    /// name survives a power loss, so a checkpoint's sync of its data is
    /// of use), and again after the rename to the final name; with
    /// `sync = false`, never.
    #[test]
    fn a_new_file_and_its_rename_sync_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let syncs = || DIR_SYNCS.with(|n| n.get());
        let counter = Arc::new(AtomicU64::new(0));
        let mut w = RotatingWriter::new(dir.path(), opts("a", &counter)).unwrap();
        let before = syncs();
        write_one(&mut w);
        assert!(w.current_file().is_some());
        assert_eq!(syncs() - before, 1, "the new .open file's entry synced");
        write_one(&mut w);
        assert_eq!(syncs() - before, 1, "no sync for a record in the same file");
        let files = w.finish().unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(syncs() - before, 2, "the rename synced");
        let mut w = RotatingWriter::new(
            dir.path(),
            RotatingOptions {
                sync: false,
                ..opts("b", &counter)
            },
        )
        .unwrap();
        let before = syncs();
        write_one(&mut w);
        w.finish().unwrap();
        assert_eq!(syncs(), before, "sync = false syncs nothing");
    }

    /// A close whose sync fails leaves its file as `NAME.open`, and the
    /// writer says so ([`RotatingWriter::failed`], which a crawl checks
    /// before its dedupe index's durable commit), also once it has gone on
    /// to a new file.
    #[test]
    fn a_failed_sync_at_a_rotation_marks_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let counter = Arc::new(AtomicU64::new(0));
        let mut w = RotatingWriter::new(dir.path(), opts("a", &counter)).unwrap();
        write_one(&mut w);
        assert!(!w.failed());
        FAIL_FILE_SYNC.with(|f| f.set(true));
        let r = w.rotate();
        FAIL_FILE_SYNC.with(|f| f.set(false));
        assert!(r.is_err());
        assert!(w.failed(), "the failed sync is remembered");
        write_one(&mut w);
        assert!(w.failed(), "still, with a new file open");
        assert_eq!(w.closed_files().len(), 0);
        let open = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "open")
            })
            .count();
        assert_eq!(open, 2, "the failed file left as .open, and the new one");
    }

    /// A directory that cannot be opened is an error, not a silent no-op
    /// (it used to be skipped: `EMFILE` or `EACCES` left the entry not
    /// durable with no error).
    #[test]
    fn a_directory_that_cannot_be_opened_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(sync_dir(&dir.path().join("gone")).is_err());
        let before = DIR_SYNCS.with(|n| n.get());
        sync_dir(dir.path()).unwrap();
        assert_eq!(DIR_SYNCS.with(|n| n.get()), before + 1);
    }

    /// A directory sync failing after the rename: the file, under its
    /// final name with its data synced, is listed as closed all the same
    /// (so it is indexed and named in the error), and the writer is
    /// marked. It used to be left out of the list.
    #[test]
    fn a_failed_directory_sync_after_the_rename_still_lists_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let counter = Arc::new(AtomicU64::new(0));
        let mut w = RotatingWriter::new(dir.path(), opts("a", &counter)).unwrap();
        write_one(&mut w);
        let path = w.current_file().unwrap().to_path_buf();
        FAIL_DIR_SYNC.with(|f| f.set(true));
        let r = w.rotate();
        FAIL_DIR_SYNC.with(|f| f.set(false));
        assert!(r.is_err());
        assert!(path.exists(), "renamed");
        assert_eq!(w.closed_files(), [path], "listed as closed");
        assert!(w.failed());
    }

    /// Two writers on one counter: the first's file takes 7 and is closed
    /// before the second opens one, which takes 8, and the counter reads 9.
    /// The two name different hosts, so no taken name could push the
    /// second past 7: only the counter does.
    #[test]
    fn writers_sharing_a_counter_take_its_serials_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        let counter = Arc::new(AtomicU64::new(7));
        let mut a = RotatingWriter::new(dir.path(), opts("a", &counter)).unwrap();
        let mut b = RotatingWriter::new(dir.path(), opts("b", &counter)).unwrap();
        write_one(&mut a);
        let fa = a.finish().unwrap();
        write_one(&mut b);
        let fb = b.finish().unwrap();
        assert_eq!(fa.len(), 1);
        assert_eq!(fb.len(), 1);
        assert_eq!(serial(&fa[0]), 7);
        assert_eq!(serial(&fb[0]), 8);
        assert_eq!(counter.load(Ordering::Relaxed), 9);
    }
}
