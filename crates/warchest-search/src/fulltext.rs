//! The index on disk: its schema, building it (on every core, with a
//! bounded memory budget) and extending it with new archive files.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use sha1::{Digest, Sha1};
use tantivy::schema::{
    DateOptions, FAST, INDEXED, NumericOptions, STORED, STRING, Schema, TEXT, TextFieldIndexing,
    TextOptions,
};
use tantivy::{DateTime, Index, IndexWriter, TantivyDocument, Term};
use warchest::archive::Reader;
use warchest::codec::Source;
use warchest::recoveries::{PayloadFallbackAt, Recoveries};

use crate::Error;
use crate::doc::{self, Capture, Document, Skip};

/// The fields of the index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub text: tantivy::schema::Field,
    pub title: tantivy::schema::Field,
    pub url: tantivy::schema::Field,
    pub url_words: tantivy::schema::Field,
    pub host: tantivy::schema::Field,
    pub surt: tantivy::schema::Field,
    pub date: tantivy::schema::Field,
    pub year: tantivy::schema::Field,
    pub month: tantivy::schema::Field,
    pub timestamp: tantivy::schema::Field,
    pub mime: tantivy::schema::Field,
    pub status: tantivy::schema::Field,
    pub language: tantivy::schema::Field,
    pub file: tantivy::schema::Field,
    pub offset: tantivy::schema::Field,
    pub record_type: tantivy::schema::Field,
}

/// The schema: text and title are searched (words lower-cased, no
/// stemming: archives are in every language); url is searched by its
/// words too; host, SURT, type, language, file and status are exact
/// terms; host, year, month, type and language are fast fields for the
/// facets and the date histogram.
fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let facet = STRING | STORED | FAST;
    let f = Fields {
        text: b.add_text_field("text", TEXT | STORED),
        title: b.add_text_field("title", TEXT | STORED),
        url: b.add_text_field("url", STRING | STORED),
        url_words: b.add_text_field(
            "url_words",
            TextOptions::default().set_indexing_options(TextFieldIndexing::default()),
        ),
        host: b.add_text_field("host", facet.clone()),
        surt: b.add_text_field("surt", STRING | STORED),
        date: b.add_date_field(
            "date",
            DateOptions::default().set_indexed().set_stored().set_fast(),
        ),
        year: b.add_u64_field("year", INDEXED | STORED | FAST),
        month: b.add_u64_field("month", NumericOptions::default().set_fast()),
        timestamp: b.add_text_field("timestamp", STRING | STORED),
        mime: b.add_text_field("mime", facet.clone()),
        status: b.add_u64_field("status", INDEXED | STORED | FAST),
        language: b.add_text_field("language", facet.clone()),
        file: b.add_text_field("file", facet),
        offset: b.add_u64_field("offset", STORED),
        record_type: b.add_text_field("record_type", STRING | STORED),
    };
    (b.build(), f)
}

/// An archive file in the index, known by its name, its size and the
/// SHA-1 of its first MiB: the same name with the same size and head is
/// the same file (not indexed twice); the same name with another size or
/// head is another file (refused: replay links name files by name).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexedFile {
    /// The name documents give (the file's base name, as replay and CDXJ
    /// name it).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Hex SHA-1 of its first [`HEAD_BYTES`] bytes.
    pub head_sha1: String,
    /// Documents indexed from it.
    #[serde(default)]
    pub documents: u64,
}

/// How much of a file [`IndexedFile::identify`] digests.
pub const HEAD_BYTES: u64 = 1 << 20;

impl IndexedFile {
    /// A file named `name` of `size` bytes whose bytes `r` reads from the
    /// start (only the first [`HEAD_BYTES`] are read).
    ///
    /// # Errors
    /// Reading failed.
    pub fn identify(name: &str, size: u64, r: impl Read) -> std::io::Result<IndexedFile> {
        let mut h = Sha1::new();
        let mut r = r.take(HEAD_BYTES);
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            h.update(&buf[..n]);
        }
        Ok(IndexedFile {
            name: name.to_string(),
            size,
            head_sha1: data_encoding::HEXLOWER.encode(&h.finalize()),
            documents: 0,
        })
    }
}

/// What the index knows of a file about to be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// Not in the index.
    New,
    /// Already indexed: same name, size and head.
    Same,
    /// Another file of that name is indexed.
    Conflict(IndexedFile),
}

/// What the index's commit payload holds: the files indexed so far.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Manifest {
    /// Format of this manifest.
    warchest_search: u32,
    files: Vec<IndexedFile>,
}

const MANIFEST_VERSION: u32 = 1;

/// A search index in a directory.
pub struct SearchIndex {
    pub(crate) index: Index,
    pub(crate) fields: Fields,
    dir: PathBuf,
    files: Vec<IndexedFile>,
    /// One reader for every search (made at the first): it sees a commit
    /// made after it was opened (`search-index` extending the index while
    /// a server searches it) shortly after it is made.
    reader: std::sync::OnceLock<tantivy::IndexReader>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("dir", &self.dir)
            .field("files", &self.files.len())
            .finish()
    }
}

impl SearchIndex {
    /// Opens the index in `dir`, or creates one there when `dir` is
    /// missing or empty.
    ///
    /// # Errors
    /// `dir` holds something that is not a warchest search index, or it
    /// cannot be read or created.
    pub fn create_or_open(dir: &Path) -> Result<SearchIndex, Error> {
        let empty = match std::fs::read_dir(dir) {
            Ok(mut it) => it.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                true
            }
            Err(e) => return Err(Error::io(dir, e)),
        };
        if !empty {
            return SearchIndex::open(dir);
        }
        let (schema, fields) = schema();
        let index = Index::create_in_dir(dir, schema).map_err(|e| Error::index(dir, e))?;
        Ok(SearchIndex {
            index,
            fields,
            dir: dir.to_path_buf(),
            files: Vec::new(),
            reader: std::sync::OnceLock::new(),
        })
    }

    /// Opens the index in `dir`.
    ///
    /// # Errors
    /// `dir` holds no warchest search index, or one of another schema.
    pub fn open(dir: &Path) -> Result<SearchIndex, Error> {
        if !dir.join("meta.json").is_file() {
            return Err(Error::NotAnIndex(dir.to_path_buf()));
        }
        let index = Index::open_in_dir(dir).map_err(|e| Error::index(dir, e))?;
        let (want, fields) = schema();
        if index.schema() != want {
            return Err(Error::NotAnIndex(dir.to_path_buf()));
        }
        let metas = index.load_metas().map_err(|e| Error::index(dir, e))?;
        let files = match metas.payload {
            Some(p) => {
                let m: Manifest =
                    serde_json::from_str(&p).map_err(|_| Error::NotAnIndex(dir.to_path_buf()))?;
                if m.warchest_search != MANIFEST_VERSION {
                    return Err(Error::NotAnIndex(dir.to_path_buf()));
                }
                m.files
            }
            None => Vec::new(),
        };
        Ok(SearchIndex {
            index,
            fields,
            dir: dir.to_path_buf(),
            files,
            reader: std::sync::OnceLock::new(),
        })
    }

    /// The reader searches use.
    pub(crate) fn reader(&self) -> Result<&tantivy::IndexReader, Error> {
        if let Some(r) = self.reader.get() {
            return Ok(r);
        }
        let r = self
            .index
            .reader()
            .map_err(|e| Error::index(&self.dir, e))?;
        // Two first searches at once: one reader is kept, the other dropped.
        Ok(self.reader.get_or_init(|| r))
    }

    /// The directory of the index.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files indexed, in the order they were added.
    pub fn files(&self) -> &[IndexedFile] {
        &self.files
    }

    /// What the index knows of `file`.
    pub fn known(&self, file: &IndexedFile) -> Known {
        match self.files.iter().find(|f| f.name == file.name) {
            None => Known::New,
            Some(f) if f.size == file.size && f.head_sha1 == file.head_sha1 => Known::Same,
            Some(f) => Known::Conflict(f.clone()),
        }
    }

    /// A writer adding documents, on `opts.threads` threads within
    /// `opts.memory` bytes (tantivy's indexing buffers).
    ///
    /// # Errors
    /// Another writer holds the index's lock.
    pub fn writer(&self, opts: &WriterOptions) -> Result<Writer<'_>, Error> {
        let threads = opts.writer_threads();
        let budget = opts.memory.max(MIN_MEMORY_PER_THREAD * threads);
        let w = self
            .index
            .writer_with_num_threads(threads, budget)
            .map_err(|e| Error::index(&self.dir, e))?;
        Ok(Writer {
            index: self,
            writer: w,
            added: Mutex::new(Vec::new()),
            docs: AtomicU64::new(0),
        })
    }
}

/// Tantivy's least buffer for one indexing thread (15 MB), rounded up.
const MIN_MEMORY_PER_THREAD: usize = 16 << 20;

/// How a [`Writer`] works.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Threads: the files read at once, and tantivy's indexing threads (at
    /// most 8, tantivy's limit). Default: one per core.
    pub threads: usize,
    /// Memory for tantivy's indexing buffers, in bytes, all threads
    /// together (at least 16 MiB a thread). Default 256 MiB.
    pub memory: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory: 256 << 20,
        }
    }
}

impl WriterOptions {
    fn writer_threads(&self) -> usize {
        self.threads
            .clamp(1, 8)
            .min((self.memory / MIN_MEMORY_PER_THREAD).max(1))
    }
}

/// Counts of what reading one archive gave.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AddStats {
    /// Records read.
    pub records: u64,
    /// Documents added.
    pub documents: u64,
    /// Documents with text (HTML and plain-text payloads).
    pub with_text: u64,
    /// Documents whose payload or text was cut (8 MiB payload, 512 KiB
    /// text).
    pub cut: u64,
    /// Documents whose URL was longer than [`MAX_URL`](crate::doc::MAX_URL)
    /// and is indexed cut there (its replay link does not lead to it).
    pub urls_cut: u64,
    /// Revisits (no payload of their own: not indexed).
    pub revisits: u64,
    /// Responses and resources without WARC-Target-URI (not indexed).
    pub no_url: u64,
    /// Other records (requests, metadata, warcinfo...: not indexed).
    pub other: u64,
    /// Documents read from a file that then failed, and taken out again.
    pub dropped: u64,
    /// Documents whose payload was not decoded as its HTTP head says: its
    /// text was taken from what the lenient decoder gave (bytes as stored,
    /// what decoded before an error), as `warchest derive` takes it. By
    /// kind and file, the first 1000 kept with their offsets; in JSON,
    /// their number.
    #[serde(rename = "payload_fallbacks", serialize_with = "serialize_total")]
    pub fallbacks: Recoveries<PayloadFallbackAt>,
}

/// A tally as its total.
fn serialize_total<S: serde::Serializer>(
    r: &Recoveries<PayloadFallbackAt>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(r.total())
}

impl AddStats {
    /// Adds `o`'s counts to these.
    pub fn merge(&mut self, o: &AddStats) {
        self.records += o.records;
        self.documents += o.documents;
        self.with_text += o.with_text;
        self.cut += o.cut;
        self.urls_cut += o.urls_cut;
        self.revisits += o.revisits;
        self.no_url += o.no_url;
        self.other += o.other;
        self.dropped += o.dropped;
        self.fallbacks.append(o.fallbacks.clone());
    }
}

/// Captures read before their text is extracted on every core.
const BATCH_DOCS: usize = 256;
/// Payload bytes read before their text is extracted.
const BATCH_BYTES: usize = 32 << 20;

/// Adds documents to a [`SearchIndex`]; nothing is visible (nor the files
/// recorded) until [`Writer::commit`]. Shared by threads: each may add
/// another archive at once.
pub struct Writer<'a> {
    index: &'a SearchIndex,
    writer: IndexWriter<TantivyDocument>,
    added: Mutex<Vec<IndexedFile>>,
    docs: AtomicU64,
}

impl Writer<'_> {
    /// Adds the captures of `reader` (the archive `file`, already checked
    /// with [`SearchIndex::known`]), extracting their text on rayon's
    /// threads.
    ///
    /// The file is recorded only when the whole archive was read: after an
    /// error, the documents added from it are deleted again (counted in
    /// [`AddStats::dropped`]), so the index holds all of a file or none.
    ///
    /// # Errors
    /// Reading the archive failed, or the index could not take a document.
    pub fn add_archive<S: Source + Send>(
        &self,
        reader: &mut Reader<S>,
        file: IndexedFile,
        stats: &mut AddStats,
    ) -> Result<(), Error> {
        let mut batch: Vec<Capture> = Vec::new();
        let mut bytes = 0;
        let before = stats.documents;
        let res = (|| -> Result<(), Error> {
            loop {
                let mut rec = match reader.next_record() {
                    Ok(Some(r)) => r,
                    Ok(None) => break,
                    Err(e) => return Err(Error::Archive(e)),
                };
                stats.records += 1;
                match doc::capture(&mut rec, &file.name).map_err(Error::Archive)? {
                    Ok(c) => {
                        bytes += c.payload.as_ref().map_or(0, Vec::len);
                        if !c.fallbacks.is_empty() {
                            stats.fallbacks.add(
                                &file.name,
                                PayloadFallbackAt {
                                    offset: c.doc.offset,
                                    fallbacks: c.fallbacks,
                                },
                            );
                        }
                        batch.push(c);
                    }
                    Err(Skip::Revisit) => stats.revisits += 1,
                    Err(Skip::NoUrl) => stats.no_url += 1,
                    Err(Skip::Type) => stats.other += 1,
                }
                if batch.len() >= BATCH_DOCS || bytes >= BATCH_BYTES {
                    self.add_batch(std::mem::take(&mut batch), stats)?;
                    bytes = 0;
                }
            }
            self.add_batch(std::mem::take(&mut batch), stats)
        })();
        if let Err(e) = res {
            // The file is not recorded, so that it can be given again once
            // mended: its documents go too, or they would be there twice.
            // Those added, and those read but not yet added.
            let added = stats.documents - before + batch.len() as u64;
            self.writer
                .delete_term(Term::from_field_text(self.index.fields.file, &file.name));
            stats.documents = before;
            stats.dropped += added;
            return Err(e);
        }
        let mut file = file;
        file.documents = stats.documents - before;
        self.added
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(file);
        Ok(())
    }

    fn add_batch(&self, batch: Vec<Capture>, stats: &mut AddStats) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        let docs: Vec<Document> = batch.into_par_iter().map(Capture::into_document).collect();
        for d in &docs {
            stats.documents += 1;
            stats.with_text += u64::from(!d.text.is_empty());
            stats.cut += u64::from(d.cut);
            stats.urls_cut += u64::from(d.url_cut);
            self.add_document(d)?;
        }
        Ok(())
    }

    /// Adds one document.
    ///
    /// # Errors
    /// The index could not take it.
    pub fn add_document(&self, d: &Document) -> Result<(), Error> {
        let f = &self.index.fields;
        let mut t = TantivyDocument::default();
        t.add_text(f.text, &d.text);
        t.add_text(f.title, &d.title);
        t.add_text(f.url, &d.url);
        t.add_text(f.url_words, &d.url);
        t.add_text(f.host, &d.host);
        t.add_text(f.surt, &d.surt);
        t.add_text(f.timestamp, &d.timestamp);
        if let Some(ms) = d.date_millis {
            t.add_date(f.date, DateTime::from_timestamp_millis(ms));
            if let Some((y, m)) = year_month(ms) {
                t.add_u64(f.year, y);
                t.add_u64(f.month, y * 100 + m);
            }
        }
        if !d.mime.is_empty() {
            t.add_text(f.mime, &d.mime);
        }
        if let Some(s) = d.status {
            t.add_u64(f.status, u64::from(s));
        }
        if let Some(l) = &d.language {
            t.add_text(f.language, l);
        }
        t.add_text(f.file, &d.file);
        t.add_u64(f.offset, d.offset);
        t.add_text(f.record_type, &d.record_type);
        self.writer
            .add_document(t)
            .map_err(|e| Error::index(&self.index.dir, e))?;
        self.docs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Commits the documents added and records the files added with
    /// them, in one step: after a crash, the index is as it was at the
    /// last commit, files and documents alike. Returns the files now in
    /// the index.
    ///
    /// # Errors
    /// Writing the index failed.
    pub fn commit(mut self) -> Result<Vec<IndexedFile>, Error> {
        let dir = &self.index.dir;
        let mut files = self.index.files.clone();
        files.extend(
            self.added
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let manifest = Manifest {
            warchest_search: MANIFEST_VERSION,
            files,
        };
        let payload = serde_json::to_string(&manifest).map_err(|e| Error::io(dir, e.into()))?;
        let mut prepared = self
            .writer
            .prepare_commit()
            .map_err(|e| Error::index(dir, e))?;
        prepared.set_payload(&payload);
        prepared.commit().map_err(|e| Error::index(dir, e))?;
        self.writer
            .wait_merging_threads()
            .map_err(|e| Error::index(dir, e))?;
        Ok(manifest.files)
    }
}

/// Year and month (1-12) of a time in milliseconds since 1970.
pub(crate) fn year_month(ms: i64) -> Option<(u64, u64)> {
    let t = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)).ok()?;
    let y = u64::try_from(t.year()).ok()?;
    Some((y, u64::from(u8::from(t.month()))))
}

/// Adds many archives at once: `open` opens each (by name) as a reader and
/// its identity; files already indexed are skipped, files conflicting
/// with one indexed are reported, the others read on every core.
/// Returns, per name, what became of it: its counts, the reader's
/// warnings (lenient recoveries), and whether it was indexed.
pub fn add_archives<S, O>(writer: &Writer<'_>, names: &[String], open: O) -> Vec<ArchiveOutcome>
where
    S: Source + Send,
    O: Fn(&str) -> Result<(Reader<S>, IndexedFile), Error> + Sync,
{
    let known = Mutex::new(Vec::<IndexedFile>::new());
    names
        .par_iter()
        .map(|name| {
            let mut stats = AddStats::default();
            let mut warnings = Vec::new();
            let res = (|| {
                let (mut reader, file) = open(name)?;
                match writer.index.known(&file) {
                    Known::Same => return Ok(Added::AlreadyIndexed),
                    Known::Conflict(f) => return Err(Error::Conflict(Box::new(f))),
                    Known::New => {}
                }
                {
                    // The same file given twice in one run.
                    let mut k = known
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if let Some(f) = k.iter().find(|f| f.name == file.name) {
                        if f.size == file.size && f.head_sha1 == file.head_sha1 {
                            return Ok(Added::AlreadyIndexed);
                        }
                        return Err(Error::Conflict(Box::new(f.clone())));
                    }
                    k.push(file.clone());
                }
                let res = writer.add_archive(&mut reader, file, &mut stats);
                warnings = reader.take_warnings();
                res.map(|()| Added::Indexed)
            })();
            ArchiveOutcome {
                stats,
                warnings,
                result: res,
            }
        })
        .collect()
}

/// What [`add_archives`] did with one file.
#[derive(Debug)]
pub struct ArchiveOutcome {
    /// What was read and added.
    pub stats: AddStats,
    /// The lenient reader's recoveries.
    pub warnings: Vec<warchest::Warning>,
    /// Indexed, skipped, or why not.
    pub result: Result<Added, Error>,
}

/// What [`add_archives`] did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// Read and indexed.
    Indexed,
    /// Skipped: already in the index.
    AlreadyIndexed,
}
