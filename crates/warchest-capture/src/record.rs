//! The recorder: turns captured exchanges into WARC records through a
//! rotating writer (or a pool of them), shared by `warchest capture`,
//! `warchest proxy` and the crawler.
//!
//! Per HTTP exchange, in the order Heritrix and warcprox write them: the
//! `response` (or a `revisit`), the `request` and a `metadata` record, the
//! last two WARC-Concurrent-To the first, all three with the date the
//! request was sent. The three are written under one lock, so they sit
//! together in one file (unless the file rotates between them).
//!
//! A recorder may hold a pool of writers ([`Recorder::with_writers`]), each
//! filling a file of its own in the same directory, as Heritrix's writer
//! pool does: a record goes to the first writer free, so two threads
//! compress and write at once. The files share one serial counter.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use warchest::digest::{Algorithm, Digest};
use warchest::warc::WarcHeader;
use warchest::warc::{DatePrecision, RecordType, TruncatedReason, Version, WarcDate, field};
use warchest::write::{Body, NewRecord, Placed, RotatingOptions, RotatingWriter, records};
use warchest_ops::dedupe::{DigestIndex, IndexEntry, UrlEntry};
use warchest_ops::revisit::{self, Location, Original, RevisitProfile};

use super::CaptureError;
use super::client::Captured;
use super::dns::Lookup;

/// What was written for a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A `response` record.
    Response,
    /// A `revisit` record of this profile.
    Revisit(RevisitProfile),
}

/// What [`Recorder::record_http`] wrote.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The response's (or revisit's) record id.
    pub id: String,
    /// Response or revisit.
    pub kind: Kind,
    /// Records written.
    pub records: u64,
    /// The WARC file the response (or revisit) went to, by its final name,
    /// and the record's offset in it (crawl.log's `warcFilename` and
    /// `warcFileOffset`).
    pub placed: Option<(PathBuf, u64)>,
}

/// An HTTP exchange to record.
pub struct HttpRecord<'a> {
    /// WARC-Target-URI.
    pub target_uri: String,
    /// WARC-IP-Address: the server's address.
    pub ip: Option<IpAddr>,
    /// When the request was sent.
    pub date: time::OffsetDateTime,
    /// The request as sent.
    pub request: Body<'a>,
    /// The response as received.
    pub response: &'a mut Captured,
    /// WARC-Protocol values: `http/1.1`, `tls/1.3`.
    pub protocols: Vec<String>,
    /// WARC-Cipher-Suite of a TLS connection.
    pub cipher_suite: Option<String>,
    /// The metadata record's fields (`fetchTimeMs`, `via`, ...).
    pub metadata: Vec<(String, String)>,
    /// The earlier capture a conditional request was made against: a 304
    /// becomes a server-not-modified revisit of it.
    pub conditional_of: Option<Original>,
}

impl<'a> HttpRecord<'a> {
    /// The record of one exchange made by [`crate::client::fetch`]: its
    /// address, start, request and response, and the protocols it used
    /// (HTTP/1.0, as `client::get_request` asks, and its TLS version).
    pub fn of_exchange(
        target_uri: String,
        x: &'a mut crate::client::Exchange,
        metadata: Vec<(String, String)>,
        conditional_of: Option<Original>,
    ) -> Self {
        let mut protocols = vec!["http/1.0".to_string()];
        protocols.extend(x.tls.0.clone());
        HttpRecord {
            target_uri,
            ip: Some(x.ip),
            date: x.started,
            request: Body::Bytes(&x.request),
            response: &mut x.response,
            protocols,
            cipher_suite: x.tls.1.clone(),
            metadata,
            conditional_of,
        }
    }
}

/// A record as the recorder wrote it, for an index made as the records
/// are written ([`Recorder::set_on_written`]).
pub struct WrittenRecord<'a> {
    /// The header as written (Content-Length, digests and
    /// WARC-Warcinfo-ID added).
    pub header: &'a WarcHeader,
    /// The block when `whole`, else its start: the HTTP head of a response
    /// whose body was spooled.
    pub block: &'a [u8],
    /// Whether `block` is the whole block.
    pub whole: bool,
    /// Where it went: one place, or one a segment.
    pub placed: &'a [Placed],
}

/// Called with the records of one write (an exchange's response, request
/// and metadata; a `dns:` record; a resource...), in the order written,
/// while their writer is held: before the file they went to can close.
pub type OnWritten = Box<dyn Fn(&[WrittenRecord<'_>]) + Send + Sync>;

/// Counts of what was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecorderStats {
    /// Records written (warcinfo not counted).
    pub records: u64,
    /// Response records.
    pub responses: u64,
    /// Revisit records.
    pub revisits: u64,
    /// `dns:` records.
    pub dns: u64,
    /// FTP resource records.
    pub ftp: u64,
    /// Records marked WARC-Truncated (revisits aside).
    pub truncated: u64,
}

/// One writer of the pool, and how many of its closed files were
/// published to [`Recorder::closed_files`].
struct Slot {
    // None once finished: a late proxy connection gets an error.
    w: Option<RotatingWriter>,
    published: usize,
}

/// A writer of the pool, held: its newly closed files are published when
/// it is let go.
struct Held<'a> {
    g: MutexGuard<'a, Slot>,
    closed: &'a Mutex<Vec<PathBuf>>,
    failed: &'a AtomicBool,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let slot = &mut *self.g;
        if let Some(w) = &slot.w {
            if w.failed() {
                self.failed.store(true, Ordering::SeqCst);
            }
            let done = w.closed_files();
            if done.len() > slot.published {
                let mut c = self.closed.lock().unwrap_or_else(|p| p.into_inner());
                c.extend_from_slice(&done[slot.published..]);
                slot.published = done.len();
            }
        }
    }
}

/// Writes captured exchanges; see the module documentation.
pub struct Recorder {
    /// The pool of writers (one unless [`Recorder::with_writers`]).
    writers: Vec<Mutex<Slot>>,
    /// Files closed so far, by every writer, in the order they closed.
    closed: Mutex<Vec<PathBuf>>,
    /// A writer's sync or close failed (see [`Recorder::failed`]).
    failed: AtomicBool,
    /// Which writer a caller waits for when all are busy.
    spread: AtomicU64,
    index: Option<DigestIndex>,
    digest: Algorithm,
    dns_seen: Mutex<HashSet<String>>,
    stats: Mutex<RecorderStats>,
    version: Version,
    on_written: Option<OnWritten>,
}

fn warc_date(dt: time::OffsetDateTime) -> WarcDate {
    WarcDate::from_datetime(dt, DatePrecision::Fraction(6))
        .unwrap_or_else(|| WarcDate::now(DatePrecision::Fraction(6)))
}

impl Recorder {
    /// A recorder writing to `dir`, deduplicating against `index` when
    /// given (identical payloads become revisits; URLs are remembered for
    /// conditional requests).
    ///
    /// # Errors
    /// The directory cannot be made.
    pub fn new(
        dir: &Path,
        opts: RotatingOptions,
        index: Option<DigestIndex>,
    ) -> Result<Recorder, CaptureError> {
        Self::with_writers(dir, opts, index, 1)
    }

    /// [`Recorder::new`] with a pool of `writers` writers (at least one),
    /// each filling a file of its own in `dir` at the same time; their
    /// files take their serials from one counter, starting at
    /// `opts.first_serial` (unless `opts.shared_serial` is given). A
    /// record goes to the first writer free: with several threads
    /// recording, the compression of their records runs in parallel. The
    /// records of one exchange still sit together in one file.
    ///
    /// # Errors
    /// The directory cannot be made.
    pub fn with_writers(
        dir: &Path,
        mut opts: RotatingOptions,
        index: Option<DigestIndex>,
        writers: usize,
    ) -> Result<Recorder, CaptureError> {
        let digest = opts.writer.digest.unwrap_or(Algorithm::Sha1);
        let version = opts.version;
        std::fs::create_dir_all(dir).map_err(|e| CaptureError::Io(dir.display().to_string(), e))?;
        // Absolute, because the index names files by absolute path.
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let n = writers.max(1);
        if n > 1 && opts.shared_serial.is_none() {
            opts.shared_serial = Some(Arc::new(AtomicU64::new(opts.first_serial)));
        }
        let writers = (0..n)
            .map(|_| {
                Ok(Mutex::new(Slot {
                    w: Some(RotatingWriter::new(&dir, opts.clone())?),
                    published: 0,
                }))
            })
            .collect::<Result<Vec<_>, CaptureError>>()?;
        Ok(Recorder {
            writers,
            closed: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            spread: AtomicU64::new(0),
            index,
            digest,
            dns_seen: Mutex::new(HashSet::new()),
            stats: Mutex::new(RecorderStats::default()),
            version,
            on_written: None,
        })
    }

    /// Calls `f` with every record written from now on (see [`OnWritten`]):
    /// a crawl makes its CDXJ from them instead of reading each closed
    /// file again.
    pub fn set_on_written(&mut self, f: OnWritten) {
        self.on_written = Some(f);
    }

    fn noted(&self, recs: &[WrittenRecord<'_>]) {
        if let Some(f) = &self.on_written {
            f(recs);
        }
    }

    /// The dedupe index, if any.
    pub fn index(&self) -> Option<&DigestIndex> {
        self.index.as_ref()
    }

    /// The digest algorithm of payload digests.
    pub fn digest(&self) -> Algorithm {
        self.digest
    }

    /// What was written so far.
    pub fn stats(&self) -> RecorderStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    fn count(&self, f: impl FnOnce(&mut RecorderStats)) {
        if let Ok(mut s) = self.stats.lock() {
            f(&mut s);
        }
    }

    /// Flushes the open file (see [`RotatingWriter::flush`]); returns the
    /// files closed so far.
    ///
    /// # Errors
    /// The write failed, or the recorder is closed.
    pub fn flush(&self) -> Result<Vec<PathBuf>, CaptureError> {
        for i in 0..self.writers.len() {
            let mut guard = self.lock_at(i)?;
            Self::writer(&mut guard)?.flush()?;
        }
        Ok(self.closed_files())
    }

    /// The files closed so far by every writer of the pool, in the order
    /// they were closed, without waiting for a writer (a record written
    /// with a dedupe index is flushed before its writer is let go, so a
    /// crawl needs no [`Recorder::flush`] per URI).
    pub fn closed_files(&self) -> Vec<PathBuf> {
        self.closed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether a writer's sync or close failed (a rotation's sync, a
    /// rename, an `fdatasync` of [`Recorder::sync_data`], a close of
    /// [`Recorder::finish`]): records written may be lost on a power loss,
    /// also in a file closed since (left as `NAME.open`). It stays set, and
    /// [`Recorder::sync_data`] fails from then on: a crawl's checkpoint
    /// must not make durable the dedupe entries that point at them.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Flushes and syncs (`fdatasync`) every writer's open file: what was
    /// written before the call survives a power loss. A writer's lock is
    /// held only to flush its buffer and take a second handle of its file
    /// ([`RotatingWriter::sync_handle`]); the syncs run with every writer
    /// free, so a crawl's checkpoint does not stall the threads recording.
    /// A closed recorder has nothing to sync.
    ///
    /// # Errors
    /// The write or the sync failed, now or earlier ([`Recorder::failed`]).
    pub fn sync_data(&self) -> Result<(), CaptureError> {
        self.sync_data_with(|| {})
    }

    /// [`Recorder::sync_data`], `between` run after every handle is taken
    /// and before the syncs (a test writes through the pool there).
    fn sync_data_with(&self, between: impl FnOnce()) -> Result<(), CaptureError> {
        let r = self.sync_files(between);
        if self.failed() {
            return Err(r.err().unwrap_or_else(|| {
                CaptureError::Http("an earlier sync or close of a WARC file failed".into())
            }));
        }
        r
    }

    fn sync_files(&self, between: impl FnOnce()) -> Result<(), CaptureError> {
        let mut files = Vec::with_capacity(self.writers.len());
        for i in 0..self.writers.len() {
            if let Some(w) = self.lock_at(i)?.g.w.as_mut()
                && let Some(h) = w.sync_handle()?
            {
                files.push(h);
            }
        }
        between();
        for (path, f) in files {
            f.sync_data().map_err(|e| {
                self.failed.store(true, Ordering::SeqCst);
                CaptureError::Io(path.display().to_string(), e)
            })?;
        }
        Ok(())
    }

    /// Closes the last file of every writer; returns every file written.
    ///
    /// # Errors
    /// Closing a file failed: the first error is returned, every further
    /// one logged (`tracing::warn!`); each writer is closed even after
    /// another failed, and the files closed stay listed by
    /// [`Recorder::closed_files`].
    pub fn finish(&self) -> Result<Vec<PathBuf>, CaptureError> {
        let mut files = Vec::new();
        let mut first_err = None;
        for i in 0..self.writers.len() {
            let taken = self.lock_at(i).map(|mut h| h.g.w.take());
            let err = match taken {
                Ok(Some(w)) => match w.finish() {
                    Ok(f) => {
                        files.extend(f);
                        None
                    }
                    Err(e) => {
                        self.failed.store(true, Ordering::SeqCst);
                        Some(CaptureError::from(e))
                    }
                },
                Ok(None) => None,
                Err(e) => Some(e),
            };
            match (err, &first_err) {
                (Some(e), None) => first_err = Some(e),
                (Some(e), Some(_)) => {
                    tracing::warn!("closing WARC writer {i} of the recorder failed as well: {e}")
                }
                (None, _) => {}
            }
        }
        // The files the last closes made, listed with those rotation closed.
        {
            let mut c = self.closed.lock().unwrap_or_else(|p| p.into_inner());
            for f in &files {
                if !c.contains(f) {
                    c.push(f.clone());
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        // In name order (Annex B names: timestamp, then serial).
        files.sort();
        Ok(files)
    }

    /// The first writer of the pool that is free, else one to wait for.
    fn lock(&self) -> Result<Held<'_>, CaptureError> {
        if self.writers.len() > 1 {
            for slot in &self.writers {
                match slot.try_lock() {
                    Ok(g) => return Ok(self.held(g)),
                    Err(TryLockError::WouldBlock) => {}
                    Err(TryLockError::Poisoned(_)) => {
                        return Err(CaptureError::Http("a capture thread panicked".into()));
                    }
                }
            }
        }
        // All busy: wait for one, spreading the waiters over the pool.
        let i = (self.spread.fetch_add(1, Ordering::Relaxed) % self.writers.len() as u64) as usize;
        self.lock_at(i)
    }

    fn lock_at(&self, i: usize) -> Result<Held<'_>, CaptureError> {
        self.writers[i]
            .lock()
            .map(|g| self.held(g))
            .map_err(|_| CaptureError::Http("a capture thread panicked".into()))
    }

    fn held<'a>(&'a self, g: MutexGuard<'a, Slot>) -> Held<'a> {
        Held {
            g,
            closed: &self.closed,
            failed: &self.failed,
        }
    }

    fn writer<'a>(g: &'a mut Held<'_>) -> Result<&'a mut RotatingWriter, CaptureError> {
        g.g.w
            .as_mut()
            .ok_or_else(|| CaptureError::Http("the recorder is closed".into()))
    }

    fn new_record(
        &self,
        t: RecordType,
        uri: &str,
        date: WarcDate,
    ) -> Result<NewRecord, CaptureError> {
        let mut r = NewRecord::with_version(t, self.version);
        r.set(field::TARGET_URI, uri)?;
        r.date(date);
        Ok(r)
    }

    /// Writes the response (or revisit), request and metadata records of
    /// an exchange.
    ///
    /// # Errors
    /// Writing failed, or the index failed.
    pub fn record_http(&self, x: HttpRecord<'_>) -> Result<Recorded, CaptureError> {
        let date = warc_date(x.date);
        let resp = &mut *x.response;
        let status = resp.head.status().unwrap_or(0);
        let payload = Digest::new(resp.payload.algorithm, resp.payload.payload.as_bytes());
        let usable = (200..300).contains(&status)
            && resp.truncated.is_none()
            && resp.payload.payload_len > 0;
        let duplicate = match &self.index {
            Some(idx) if usable => idx.get(&payload)?,
            _ => None,
        };
        let (mut rec, kind) = if let (304, Some(orig)) = (status, &x.conditional_of) {
            let mut r = revisit::server_not_modified(&x.target_uri, Some(orig), self.version)?;
            r.date(date);
            (r, Kind::Revisit(RevisitProfile::ServerNotModified))
        } else if let Some(d) = &duplicate {
            let mut r =
                revisit::identical_payload_digest(&x.target_uri, &d.original, self.version)?;
            r.date(date);
            (r, Kind::Revisit(RevisitProfile::IdenticalPayloadDigest))
        } else {
            let mut r = self.new_record(RecordType::Response, &x.target_uri, date)?;
            r.set(field::CONTENT_TYPE, "application/http; msgtype=response")?;
            if let Some(t) = &resp.truncated {
                r.truncated(t);
            }
            (r, Kind::Response)
        };
        if let Some(ip) = x.ip {
            rec.set(field::IP_ADDRESS, ip.to_string())?;
        }
        for p in &x.protocols {
            rec.append(field::PROTOCOL, p)?;
        }
        if let Some(c) = &x.cipher_suite {
            rec.set(field::CIPHER_SUITE, c)?;
        }
        let id = rec.record_id();
        // The request and metadata records are made before the writer is
        // taken: the lock covers the writing only.
        let mut req = self.new_record(RecordType::Request, &x.target_uri, date)?;
        req.set(field::CONTENT_TYPE, "application/http; msgtype=request")?;
        req.set(field::CONCURRENT_TO, &id)?;
        if let Some(ip) = x.ip {
            req.set(field::IP_ADDRESS, ip.to_string())?;
        }
        for p in &x.protocols {
            req.append(field::PROTOCOL, p)?;
        }
        if let Some(c) = &x.cipher_suite {
            req.set(field::CIPHER_SUITE, c)?;
        }
        let mut meta = if x.metadata.is_empty() {
            None
        } else {
            let mut m = self.new_record(RecordType::Metadata, &x.target_uri, date)?;
            m.set(field::CONTENT_TYPE, records::WARC_FIELDS)?;
            m.set(field::CONCURRENT_TO, &id)?;
            let block =
                records::warc_fields(x.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
            Some((m, block))
        };
        let mut guard = self.lock()?;
        let w = Self::writer(&mut guard)?;
        resp.block
            .seek(SeekFrom::Start(0))
            .map_err(|e| CaptureError::Io("spool".into(), e))?;
        // The head only for an identical-payload revisit: the payload is
        // the original's.
        let head_only = matches!(kind, Kind::Revisit(RevisitProfile::IdenticalPayloadDigest));
        let placed = if head_only {
            let head = resp.head.raw().to_vec();
            w.write(&mut rec, Body::Bytes(&head))?
        } else {
            w.write(
                &mut rec,
                Body::Seekable {
                    reader: &mut resp.block,
                    len: Some(resp.len),
                },
            )?
        };
        let at = placed.first().map(|p| (p.path.clone(), p.written.offset));
        let mut records = 1;
        let req_block = match &x.request {
            Body::Bytes(b) => Some(*b),
            _ => None,
        };
        let placed_req = w.write(&mut req, x.request)?;
        records += 1;
        let placed_meta = match &mut meta {
            Some((m, block)) => {
                records += 1;
                w.write(m, Body::Bytes(block))?
            }
            None => Vec::new(),
        };
        if self.on_written.is_some() {
            let head = resp.head.raw();
            let mut noted = vec![
                WrittenRecord {
                    header: rec.header(),
                    block: head,
                    whole: head_only || head.len() as u64 == resp.len,
                    placed: &placed,
                },
                WrittenRecord {
                    header: req.header(),
                    block: req_block.unwrap_or_default(),
                    whole: req_block.is_some(),
                    placed: &placed_req,
                },
            ];
            if let Some((m, block)) = &meta {
                noted.push(WrittenRecord {
                    header: m.header(),
                    block,
                    whole: true,
                    placed: &placed_meta,
                });
            }
            self.noted(&noted);
        }
        // The records reach the file before the index names the response:
        // a sync of the index by another worker's group commit would
        // otherwise make an entry durable whose record a kill could still
        // lose, and the refetch would be written as a revisit of nothing.
        // One write for the exchange's records; the index's transaction
        // runs after the writer is free for the other workers.
        if self.index.is_some() {
            w.flush()?;
        }
        drop(guard);
        // Index an original, and remember the URL for conditional requests,
        // in one transaction.
        if let Some(idx) = &self.index
            && (200..300).contains(&status)
            && resp.truncated.is_none()
        {
            let entry = match (&kind, &duplicate, placed.first()) {
                (Kind::Response, _, Some(p)) => {
                    Original::from_header(rec.header()).map(|o| IndexEntry {
                        original: o,
                        location: Location {
                            file: p.path.clone(),
                            offset: p.written.offset,
                        },
                    })
                }
                (_, Some(d), _) => Some(d.clone()),
                _ => None,
            };
            if let Some(entry) = entry {
                let text = |n: &str| {
                    resp.head
                        .header(n)
                        .map(|v| String::from_utf8_lossy(&v).trim().to_string())
                        .filter(|v| !v.is_empty() && !v.contains(['\r', '\n']))
                };
                let mut b = idx.batch()?;
                if kind == Kind::Response && usable {
                    b.insert_if_absent(&payload, &entry)?;
                }
                b.put_url(
                    &x.target_uri,
                    &UrlEntry {
                        entry,
                        etag: text("ETag"),
                        last_modified: text("Last-Modified"),
                    },
                )?;
                b.commit()?;
            }
        }
        let truncated = resp.truncated.is_some() && kind == Kind::Response;
        self.count(|s| {
            s.records += records;
            match kind {
                Kind::Response => s.responses += 1,
                Kind::Revisit(_) => s.revisits += 1,
            }
            if truncated {
                s.truncated += 1;
            }
        });
        Ok(Recorded {
            id,
            kind,
            records,
            placed: at,
        })
    }

    /// Writes a `dns:` record of a lookup (section 6.4.4: a `resource`
    /// record of type `text/dns`), once per host per run.
    ///
    /// # Errors
    /// Writing failed.
    pub fn record_dns(&self, l: &Lookup) -> Result<bool, CaptureError> {
        if let Ok(mut seen) = self.dns_seen.lock()
            && !seen.insert(l.host.clone())
        {
            return Ok(false);
        }
        let mut rec = self.new_record(
            RecordType::Resource,
            &format!("dns:{}", l.host),
            warc_date(l.date),
        )?;
        rec.set(field::CONTENT_TYPE, "text/dns")?;
        rec.set(field::IP_ADDRESS, l.server.ip().to_string())?;
        let text = l.to_text();
        let mut guard = self.lock()?;
        let w = Self::writer(&mut guard)?;
        let placed = w.write(&mut rec, Body::Bytes(text.as_bytes()))?;
        self.noted(&[WrittenRecord {
            header: rec.header(),
            block: text.as_bytes(),
            whole: true,
            placed: &placed,
        }]);
        // In the file before its writer is let go, as an exchange's are
        // (a crawl marks a URI done without flushing every writer).
        if self.index.is_some() {
            w.flush()?;
        }
        drop(guard);
        self.count(|s| {
            s.records += 1;
            s.dns += 1;
        });
        Ok(true)
    }

    /// Writes a `resource` record of `block` (section 6.4.3): what a
    /// browser made of a page (a screenshot at `urn:view:URL`, its text at
    /// `urn:text:URL`), with more `fields`; returns its record id. Records
    /// that must sit together in one file are written through
    /// [`Recorder::hold`].
    ///
    /// # Errors
    /// Writing failed.
    pub fn record_resource(
        &self,
        uri: &str,
        date: time::OffsetDateTime,
        content_type: &str,
        block: &[u8],
        fields: &[(&str, &str)],
    ) -> Result<String, CaptureError> {
        self.hold()?
            .record_resource(uri, date, content_type, block, fields)
    }

    /// Writes a `metadata` record of `fields` (`application/warc-fields`)
    /// about `uri`: a browser's page (its outlinks, what it loaded),
    /// WARC-Concurrent-To `concurrent_to` when given. Records that must sit
    /// together in one file are written through [`Recorder::hold`].
    ///
    /// # Errors
    /// Writing failed.
    pub fn record_metadata(
        &self,
        uri: &str,
        date: time::OffsetDateTime,
        fields: &[(String, String)],
        concurrent_to: Option<&str>,
    ) -> Result<String, CaptureError> {
        self.hold()?
            .record_metadata(uri, date, fields, concurrent_to)
    }

    /// One writer of the pool, held until the [`Hold`] is dropped: the
    /// records written through it sit together in one file (unless the
    /// file rotates between them), as a browser's page records (its
    /// screenshot, text and metadata, WARC-Concurrent-To each other) must.
    /// Other threads write through the pool's other writers meanwhile.
    ///
    /// # Errors
    /// A capture thread panicked holding the writer.
    pub fn hold(&self) -> Result<Hold<'_>, CaptureError> {
        Ok(Hold {
            r: self,
            g: self.lock()?,
        })
    }

    /// Writes an FTP retrieval (section 6.4.3): the file (or directory
    /// listing) as a `resource` record of `content_type`, and the control conversation in a `metadata` record
    /// WARC-Concurrent-To it.
    ///
    /// # Errors
    /// Writing failed.
    #[allow(clippy::too_many_arguments)]
    pub fn record_ftp(
        &self,
        uri: &str,
        ip: Option<IpAddr>,
        date: time::OffsetDateTime,
        file: &mut (impl Read + Seek),
        len: u64,
        truncated: Option<&TruncatedReason>,
        control: &[u8],
        content_type: &str,
    ) -> Result<String, CaptureError> {
        let date = warc_date(date);
        let mut rec = self.new_record(RecordType::Resource, uri, date)?;
        rec.set(field::CONTENT_TYPE, content_type)?;
        if let Some(ip) = ip {
            rec.set(field::IP_ADDRESS, ip.to_string())?;
        }
        if let Some(t) = truncated {
            rec.truncated(t);
        }
        let id = rec.record_id();
        let mut m = self.new_record(RecordType::Metadata, uri, date)?;
        m.set(field::CONTENT_TYPE, "text/x-ftp-control-conversation")?;
        m.set(field::CONCURRENT_TO, &id)?;
        if let Some(ip) = ip {
            m.set(field::IP_ADDRESS, ip.to_string())?;
        }
        let mut guard = self.lock()?;
        let w = Self::writer(&mut guard)?;
        let placed = w.write(
            &mut rec,
            Body::Seekable {
                reader: file,
                len: Some(len),
            },
        )?;
        let placed_m = w.write(&mut m, Body::Bytes(control))?;
        self.noted(&[
            WrittenRecord {
                header: rec.header(),
                block: &[],
                whole: len == 0,
                placed: &placed,
            },
            WrittenRecord {
                header: m.header(),
                block: control,
                whole: true,
                placed: &placed_m,
            },
        ]);
        if self.index.is_some() {
            w.flush()?;
        }
        drop(guard);
        self.count(|s| {
            s.records += 2;
            s.ftp += 1;
            if truncated.is_some() {
                s.truncated += 1;
            }
        });
        Ok(id)
    }
}

/// A writer of a [`Recorder`]'s pool, held: see [`Recorder::hold`].
pub struct Hold<'a> {
    r: &'a Recorder,
    g: Held<'a>,
}

impl Hold<'_> {
    /// [`Recorder::record_resource`] through the held writer.
    ///
    /// # Errors
    /// Writing failed, or the recorder is closed.
    pub fn record_resource(
        &mut self,
        uri: &str,
        date: time::OffsetDateTime,
        content_type: &str,
        block: &[u8],
        fields: &[(&str, &str)],
    ) -> Result<String, CaptureError> {
        let mut rec = self
            .r
            .new_record(RecordType::Resource, uri, warc_date(date))?;
        rec.set(field::CONTENT_TYPE, content_type)?;
        for (k, v) in fields {
            rec.append(k, v)?;
        }
        self.put(&mut rec, block)
    }

    /// [`Recorder::record_metadata`] through the held writer.
    ///
    /// # Errors
    /// Writing failed, or the recorder is closed.
    pub fn record_metadata(
        &mut self,
        uri: &str,
        date: time::OffsetDateTime,
        fields: &[(String, String)],
        concurrent_to: Option<&str>,
    ) -> Result<String, CaptureError> {
        let mut m = self
            .r
            .new_record(RecordType::Metadata, uri, warc_date(date))?;
        m.set(field::CONTENT_TYPE, records::WARC_FIELDS)?;
        if let Some(c) = concurrent_to {
            m.set(field::CONCURRENT_TO, c)?;
        }
        let block = records::warc_fields(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        self.put(&mut m, &block)
    }

    /// Writes `rec` and counts it; with a dedupe index the record is in the
    /// file before the writer is let go (see [`Recorder::closed_files`]).
    fn put(&mut self, rec: &mut NewRecord, block: &[u8]) -> Result<String, CaptureError> {
        let id = rec.record_id();
        let w = Recorder::writer(&mut self.g)?;
        let placed = w.write(rec, Body::Bytes(block))?;
        self.r.noted(&[WrittenRecord {
            header: rec.header(),
            block,
            whole: true,
            placed: &placed,
        }]);
        if self.r.index.is_some() {
            w.flush()?;
        }
        self.r.count(|s| s.records += 1);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(file name, serial, target URIs of its records after the warcinfo)`.
    fn contents(files: &[PathBuf]) -> Vec<(String, u64, Vec<String>)> {
        files
            .iter()
            .map(|f| {
                let name = f.file_name().unwrap().to_str().unwrap().to_string();
                // prefix-TIMESTAMP-SERIAL-host.warc.gz
                let serial = name.split('-').nth(2).unwrap().parse().unwrap();
                let mut r = warchest::archive::Reader::open(f).unwrap();
                let mut uris = Vec::new();
                let mut first = true;
                while let Some(rec) = r.next_record().unwrap() {
                    let t = rec.header().record_type();
                    assert_eq!(t == RecordType::Warcinfo, first, "{name}: warcinfo first");
                    first = false;
                    if let Some(u) = rec.header().target_uri() {
                        uris.push(u.into_owned());
                    }
                }
                (name, serial, uris)
            })
            .collect()
    }

    fn pool(dir: &Path, n: usize, max_size: u64) -> Recorder {
        let opts = RotatingOptions {
            prefix: "pool".into(),
            crawlhost: "host".into(),
            first_serial: 7,
            max_size,
            ..RotatingOptions::default()
        };
        Recorder::with_writers(dir, opts, None, n).unwrap()
    }

    fn resource(r: &Recorder, uri: &str) {
        r.record_resource(
            uri,
            time::OffsetDateTime::now_utc(),
            "text/plain",
            b"x",
            &[],
        )
        .unwrap();
    }

    /// A pool of two: `urn:a` written by writer 0 (serial 7), `urn:b` by
    /// writer 1 (serial 8), writer 0 being held.
    fn a_and_b(dir: &Path) -> Recorder {
        let r = pool(dir, 2, 1 << 30);
        resource(&r, "urn:a");
        {
            let _busy = r.lock_at(0).unwrap();
            resource(&r, "urn:b");
        }
        r
    }

    /// A record goes to the first free writer: with writer 0 held, to
    /// writer 1, in a file of its own whose serial is the next of the one
    /// counter (two files opened in the same second never share a name).
    #[test]
    fn a_busy_writer_passes_the_record_to_the_next_with_the_next_serial() {
        let dir = tempfile::tempdir().unwrap();
        let r = a_and_b(dir.path());
        resource(&r, "urn:c");
        let files = r.finish().unwrap();
        let mut got = contents(&files);
        got.sort_by_key(|(_, s, _)| *s);
        let got: Vec<(u64, Vec<String>)> = got.into_iter().map(|(_, s, u)| (s, u)).collect();
        assert_eq!(
            got,
            [
                (7, vec!["urn:a".to_string(), "urn:c".to_string()]),
                (8, vec!["urn:b".to_string()]),
            ]
        );
        // A finished recorder refuses records.
        assert!(
            r.record_resource(
                "urn:d",
                time::OffsetDateTime::now_utc(),
                "text/plain",
                b"",
                &[]
            )
            .is_err()
        );
    }

    /// Threads recording at once through a pool: every record lands
    /// whole, once, in a file that begins with its warcinfo; serials are
    /// distinct; files closed by rotation are listed as they close.
    #[test]
    fn a_pool_written_by_threads_loses_and_repeats_no_record() {
        let dir = tempfile::tempdir().unwrap();
        // Small files: every few records a writer rotates.
        let r = pool(dir.path(), 2, 2_000);
        std::thread::scope(|s| {
            for t in 0..4 {
                let r = &r;
                s.spawn(move || {
                    for i in 0..25 {
                        resource(r, &format!("urn:{t}:{i}"));
                    }
                });
            }
        });
        let closed = r.closed_files();
        assert!(!closed.is_empty(), "rotated files are listed");
        let files = r.finish().unwrap();
        assert!(closed.iter().all(|c| files.contains(c)));
        let got = contents(&files);
        let mut serials: Vec<u64> = got.iter().map(|(_, s, _)| *s).collect();
        serials.sort();
        serials.dedup();
        assert_eq!(serials.len(), files.len(), "one serial a file");
        let mut uris: Vec<String> = got.into_iter().flat_map(|(_, _, u)| u).collect();
        uris.sort();
        let mut want: Vec<String> = (0..4)
            .flat_map(|t| (0..25).map(move |i| format!("urn:{t}:{i}")))
            .collect();
        want.sort();
        assert_eq!(uris, want);
    }

    /// A held writer keeps a page's records in its one file while another
    /// record, written meanwhile, goes to the pool's other writer; the
    /// metadata and the text, WARC-Concurrent-To the view, sit beside it.
    #[test]
    fn records_written_under_one_hold_sit_in_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let r = pool(dir.path(), 2, 1 << 30);
        let now = time::OffsetDateTime::now_utc();
        {
            let mut h = r.hold().unwrap();
            let view = h
                .record_resource("urn:view:p", now, "image/png", b"png", &[])
                .unwrap();
            resource(&r, "urn:other");
            h.record_resource(
                "urn:text:p",
                now,
                "text/plain",
                b"t",
                &[("WARC-Concurrent-To", &view)],
            )
            .unwrap();
            h.record_metadata("p", now, &[("a".into(), "b".into())], Some(&view))
                .unwrap();
        }
        assert_eq!(r.stats().records, 4);
        let files = r.finish().unwrap();
        let mut got = contents(&files);
        got.sort_by_key(|(_, s, _)| *s);
        let got: Vec<Vec<String>> = got.into_iter().map(|(_, _, u)| u).collect();
        assert_eq!(
            got,
            [
                vec![
                    "urn:view:p".to_string(),
                    "urn:text:p".to_string(),
                    "p".to_string()
                ],
                vec!["urn:other".to_string()],
            ]
        );
    }

    /// `sync_data` holds no writer while it syncs: between taking the
    /// files' handles and syncing them, another thread writes through both
    /// writers of the pool.
    #[test]
    fn sync_data_lets_the_writers_go_before_it_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let r = Arc::new(a_and_b(dir.path()));
        let mut wrote = false;
        r.sync_data_with(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            let r2 = r.clone();
            std::thread::spawn(move || {
                let date = warc_date(time::OffsetDateTime::now_utc());
                for i in 0..2 {
                    let mut rec = r2
                        .new_record(RecordType::Resource, "urn:during", date)
                        .unwrap();
                    let mut h = r2.lock_at(i).unwrap();
                    Recorder::writer(&mut h)
                        .unwrap()
                        .write(&mut rec, Body::Bytes(b"d"))
                        .unwrap();
                }
                let _ = tx.send(());
            });
            // A writer held through the syncs would keep it waiting.
            wrote = rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok();
        })
        .unwrap();
        assert!(wrote, "both writers were free while the files synced");
        let files = r.finish().unwrap();
        let uris: Vec<String> = contents(&files)
            .into_iter()
            .flat_map(|(_, _, u)| u)
            .collect();
        assert_eq!(
            uris.iter().filter(|u| *u == "urn:during").count(),
            2,
            "{uris:?}"
        );
    }

    /// A writer whose file cannot be closed (its `.open` file is gone) makes
    /// `finish` fail, but the other writer is still closed and its file
    /// listed by `closed_files`.
    #[test]
    fn a_failed_close_keeps_the_other_writers_files() {
        let dir = tempfile::tempdir().unwrap();
        let r = a_and_b(dir.path());
        // Writer 0 opened serial 7, writer 1 serial 8.
        let open: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(open.len(), 2);
        let lost = open
            .iter()
            .find(|p| p.to_str().unwrap().contains("-00007-"))
            .unwrap();
        std::fs::remove_file(lost).unwrap();
        assert!(r.finish().is_err());
        let kept = r.closed_files();
        assert_eq!(kept.len(), 1);
        assert_eq!(contents(&kept)[0].1, 8);
        assert_eq!(contents(&kept)[0].2, ["urn:b"]);
    }

    /// The one file in `dir`.
    fn the_file(dir: &Path) -> PathBuf {
        let files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    /// A rotation whose close fails part way (here its rename: the final
    /// name is taken; a failed sync leaves the writer in the same state)
    /// leaves the file as `NAME.open` while the writer goes on: the
    /// recorder remembers it, and every later `sync_data` fails, so a
    /// crawl's checkpoint does not make durable dedupe entries that point
    /// into that file. It used to sync only the new file and succeed.
    #[test]
    fn a_failed_close_at_a_rotation_fails_every_later_sync() {
        let dir = tempfile::tempdir().unwrap();
        // Small files: a few records each.
        let r = pool(dir.path(), 1, 2000);
        resource(&r, "urn:a");
        let open = [the_file(dir.path())];
        std::fs::write(open[0].with_extension(""), b"").unwrap();
        r.sync_data().unwrap();
        assert!(!r.failed());
        let now = time::OffsetDateTime::now_utc();
        // Records until one rotates.
        let failed = (0..100).find(|_| {
            r.record_resource("urn:b", now, "text/plain", b"x", &[])
                .is_err()
        });
        assert!(failed.is_some(), "a rotation came");
        assert!(r.failed());
        resource(&r, "urn:c");
        assert!(r.sync_data().is_err(), "the failed close is not forgotten");
        assert!(r.sync_data().is_err(), "nor later");
    }

    /// `sync_data` flushes each writer's buffer before it syncs: the
    /// record written (no dedupe index, so not flushed by the write) is
    /// in the file when it returns.
    #[test]
    fn sync_data_flushes_before_it_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let r = pool(dir.path(), 1, 1 << 20);
        resource(&r, "urn:a");
        let open = [the_file(dir.path())];
        let before = std::fs::metadata(&open[0]).unwrap().len();
        r.sync_data().unwrap();
        let after = std::fs::metadata(&open[0]).unwrap().len();
        assert!(after > before, "flushed: {before} then {after}");
        let files = r.finish().unwrap();
        assert_eq!(std::fs::metadata(&files[0]).unwrap().len(), after);
    }
}
