//! Reading, writing and validating WACZ: the archive files inside one are
//! read in place by every reading command, by replay and by Python's
//! `ArchiveIterator`; `warchest wacz` creates and validates them. Over the
//! format crate and `warchest-index` only (docs/architecture.md).
//!
//! WACZ 1.1.1 (Web Archive Collection Zipped): a ZIP file holding WARC files
//! (`archive/`), their index (`indexes/index.cdxj`), the list of pages
//! (`pages/pages.jsonl`), and a frictionless data package
//! (`datapackage.json`, every file with its size and SHA-256) whose own hash
//! is in `datapackage-digest.json`.
//!
//! The WARC files are stored, not deflated, so that a record can be read in
//! place at its offset: [`Section`] is a window on the ZIP file that reads
//! like the WARC file on its own, offsets included. [`create`] writes a WACZ
//! from archive files, [`validate`] checks one (the same checks py-wacz's
//! `wacz validate` makes, plus the index pointing at records).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use warchest::archive::Reader;
use warchest::codec::{Decoder, DecoderOptions};
use warchest::error::{Error, ErrorKind, Result, Warning};
use warchest::recoveries::Recoveries;
use warchest::warc::ReaderOptions;
use warchest_index::{Entry, Format, IndexOptions, IndexOutput, Indexer, UnparsedHead};

/// The WACZ version written.
pub const WACZ_VERSION: &str = "1.1.1";

fn wacz_error(path: &Path, msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Syntax(msg.into())).in_file(path)
}

fn zip_error(path: &Path, e: zip::result::ZipError) -> Error {
    match e {
        zip::result::ZipError::Io(e) => Error::from(e).in_file(path),
        e => wacz_error(path, format!("not a readable ZIP file: {e}")),
    }
}

/// A window on a file: bytes `start..start + len`, read and sought as if
/// they were a file of their own (a WARC file stored in a WACZ).
/// Of any reader that seeks: a local file, or an object read by range
/// requests (a WACZ named by URL).
#[derive(Debug)]
pub struct Section<R = File> {
    file: R,
    start: u64,
    len: u64,
    pos: u64,
}

impl<R: Read + Seek> Section<R> {
    /// The bytes `start..start + len` of `file`, positioned at their start.
    ///
    /// # Errors
    /// Seeking failed.
    pub fn new(mut file: R, start: u64, len: u64) -> io::Result<Section<R>> {
        file.seek(SeekFrom::Start(start))?;
        Ok(Section {
            file,
            start,
            len,
            pos: 0,
        })
    }

    /// The length of the window.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<R: Read + Seek> Read for Section<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let want = (buf.len() as u64).min(left) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read(&mut buf[..want])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for Section<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        // Past the end reads nothing, as with a file.
        self.file
            .seek(SeekFrom::Start(self.start.saturating_add(target)))?;
        self.pos = target;
        Ok(target)
    }
}

/// One file inside a ZIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipEntry {
    /// Its path in the ZIP (`archive/data.warc.gz`).
    pub name: String,
    /// Where its (compressed) data starts in the ZIP file.
    pub data_start: u64,
    /// Its stored size.
    pub compressed_size: u64,
    /// Its size once decompressed.
    pub size: u64,
    /// Stored without compression (readable in place).
    pub stored: bool,
    /// Its CRC-32, as the central directory gives it.
    pub crc32: u32,
}

/// Whether `path` names a WACZ file (by its extension).
pub fn is_wacz(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("wacz"))
}

/// The files in the ZIP at `path`, in the order of its central directory.
///
/// # Errors
/// The file cannot be read or is not a ZIP file.
pub fn entries(path: &Path) -> Result<Vec<ZipEntry>> {
    let f = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    entries_of(BufReader::new(f), path)
}

/// The files in the ZIP that `r` reads (a local file, or an object read by
/// range requests), in the order of its central directory; `name` (its
/// path or URL) is what errors name. Only the central directory and each
/// file's local header are read.
///
/// # Errors
/// The ZIP cannot be read or is not a ZIP file.
pub fn entries_of<R: Read + Seek>(r: R, name: &Path) -> Result<Vec<ZipEntry>> {
    let path = name;
    let mut zip = zip::ZipArchive::new(r).map_err(|e| zip_error(path, e))?;
    let mut found = Vec::with_capacity(zip.len());
    for i in 0..zip.len() {
        let z = zip.by_index_raw(i).map_err(|e| zip_error(path, e))?;
        if z.is_dir() {
            continue;
        }
        found.push((
            z.name().map_err(|e| zip_error(path, e))?.into_owned(),
            z.header_start(),
            z.compressed_size(),
            z.size(),
            z.compression() == zip::CompressionMethod::Stored,
            z.crc32(),
        ));
    }
    // The same reader then reads the local headers.
    let mut raw = zip.into_inner();
    let mut out = Vec::with_capacity(found.len());
    for (name, header_start, compressed_size, size, stored, crc32) in found {
        let data_start =
            local_data_start(&mut raw, header_start).map_err(|e| Error::from(e).in_file(path))?;
        out.push(ZipEntry {
            name,
            data_start,
            compressed_size,
            size,
            stored,
            crc32,
        });
    }
    Ok(out)
}

/// Where a file's data starts: after its local header, whose name and
/// extra field lengths may differ from the central directory's.
fn local_data_start(r: &mut (impl Read + Seek), header_start: u64) -> io::Result<u64> {
    r.seek(SeekFrom::Start(header_start))?;
    let mut h = [0u8; 30];
    r.read_exact(&mut h)?;
    if h[..4] != [0x50, 0x4b, 0x03, 0x04] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no local file header where the central directory points",
        ));
    }
    let name_len = u64::from(u16::from_le_bytes([h[26], h[27]]));
    let extra_len = u64::from(u16::from_le_bytes([h[28], h[29]]));
    Ok(header_start + 30 + name_len + extra_len)
}

/// The archive files of the WACZ at `path` (the files under `archive/`).
///
/// # Errors
/// The WACZ cannot be read, or an archive file is compressed in the ZIP
/// (it could not be read in place).
pub fn archive_entries(path: &Path) -> Result<Vec<ZipEntry>> {
    archive_entries_of(entries(path)?, path)
}

/// The archive files of the WACZ at `path`, at least one: a WACZ with
/// nothing under `archive/` is an error, as every reader of the toolkit
/// refuses it (no archive read is not an empty archive).
///
/// # Errors
/// As [`archive_entries`], and a WACZ with no archive file.
pub fn some_archive_entries(path: &Path) -> Result<Vec<ZipEntry>> {
    some_of(archive_entries(path)?, path)
}

/// `entries`, the archive entries of the WACZ `path` names (a path or a
/// URL as a path), when there is one: a WACZ with none is an error.
///
/// # Errors
/// `entries` is empty.
pub fn some_of(entries: Vec<ZipEntry>, path: &Path) -> Result<Vec<ZipEntry>> {
    if entries.is_empty() {
        return Err(Error::new(ErrorKind::Usage(
            "a WACZ with no archive file (nothing under archive/)".into(),
        ))
        .in_file(path));
    }
    Ok(entries)
}

/// The archive files (under `archive/`) among a WACZ's `entries` (as
/// [`entries_of`] gives them); `path` is what errors name.
///
/// # Errors
/// An archive file is compressed in the ZIP (it could not be read in
/// place).
pub fn archive_entries_of(entries: Vec<ZipEntry>, path: &Path) -> Result<Vec<ZipEntry>> {
    let mut v = Vec::new();
    for e in entries {
        if e.name.starts_with("archive/") && e.name.len() > "archive/".len() {
            if !e.stored {
                return Err(wacz_error(
                    path,
                    format!(
                        "{} is compressed in the ZIP; WACZ stores WARC files",
                        e.name
                    ),
                ));
            }
            v.push(e);
        }
    }
    Ok(v)
}

/// Opens a stored entry as a [`Section`] of the ZIP file.
///
/// # Errors
/// The file cannot be opened.
pub fn open_entry(path: &Path, entry: &ZipEntry) -> Result<Section> {
    let f = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    Section::new(f, entry.data_start, entry.compressed_size)
        .map_err(|e| Error::from(e).in_file(path))
}

/// Splits a name of the form `FILE.wacz#archive/ENTRY` (how the commands
/// name a WARC file inside a WACZ) into the WACZ path and the entry name.
/// `None` for any other name, and when a file of that very name exists.
pub fn split_member_name(name: &str) -> Option<(&str, &str)> {
    let split = split_at_wacz(name)?;
    if Path::new(name).exists() {
        return None;
    }
    Some(split)
}

/// `NAME.wacz#ENTRY` split at its first `.wacz#` into the WACZ's name and
/// the entry's, whatever the extension's case (a `.WACZ` is a WACZ, as
/// [`is_wacz`] says, and its archive files are named after it): no look
/// at the disk, so a URL (`URL.wacz#archive/NAME`) splits too.
pub fn split_at_wacz(name: &str) -> Option<(&str, &str)> {
    const MARK: &str = ".wacz#";
    let at = name
        .as_bytes()
        .windows(MARK.len())
        .position(|w| w.eq_ignore_ascii_case(MARK.as_bytes()))?;
    let end = at + ".wacz".len();
    Some((&name[..end], &name[end + 1..]))
}

/// The error for a WACZ read by URL that is no longer the size it was
/// listed at (`listed` bytes; `now` now): replaced since its directory was
/// read, so its archive files are not read at the offsets the directory
/// gave (the new bytes do not keep them). Names the WACZ.
pub fn replaced_since_listed(wacz: &Path, listed: u64, now: u64) -> Error {
    Error::new(warchest::ErrorKind::Usage(format!(
        "the WACZ is {now} bytes, not the {listed} it was listed at: it was replaced since, and \
         its archive files are no longer where its directory said"
    )))
    .in_file(wacz)
}

/// Opens `FILE.wacz#ENTRY` (see [`split_member_name`]) as a [`Section`].
///
/// # Errors
/// The WACZ cannot be read or has no such stored entry.
pub fn open_member(wacz: &Path, entry: &str) -> Result<Section> {
    let all = entries(wacz)?;
    let e = all
        .iter()
        .find(|e| e.name == entry)
        .ok_or_else(|| wacz_error(wacz, format!("no entry {entry} in the WACZ")))?;
    if !e.stored {
        return Err(wacz_error(
            wacz,
            format!("{entry} is compressed in the ZIP"),
        ));
    }
    open_entry(wacz, e)
}

/// Opens `FILE.wacz#ENTRY` (see [`split_member_name`]) as a source read
/// at offsets by several threads at once: the entry's bytes, a range of
/// the ZIP file (what the parallel readers of the format crate read).
///
/// # Errors
/// As [`open_member`].
pub fn open_member_at(wacz: &Path, entry: &str) -> Result<warchest::io::Slice> {
    let s = open_member(wacz, entry)?;
    let (start, len) = (s.start, s.len);
    let f: std::sync::Arc<dyn warchest::io::ReadAt> = std::sync::Arc::new(s.file);
    Ok(warchest::io::Slice::new(f, start, len))
}

/// What [`create`] writes besides the archive files.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// `title` of the data package.
    pub title: Option<String>,
    /// `description` of the data package.
    pub description: Option<String>,
    /// The pages as the crawler decided them: a json-pages-1.0 file (a
    /// crawl's `pages/pages.jsonl`) whose rows are listed as they are (its
    /// header line replaced), as Browsertrix Crawler hands its pages to
    /// its WACZ. None: found in each crawl's input files (those whose
    /// first record is one warcinfo block naming an `isPartOf`; a file
    /// with none is a crawl of its own): the pages a browser captured, by their screenshots
    /// (`resource` records at `urn:view:URL`) when its files hold any;
    /// else their HTML responses with status 200 (a frame's, or a fragment a script fetched, too:
    /// the responses alone do not tell a page from what a page loaded).
    /// Either way, rows with no capture in the inputs are left out.
    pub pages: Option<PathBuf>,
    /// Read the inputs strictly (`warchest --strict`): a problem the
    /// lenient reader would recover from is an error instead.
    pub strict: bool,
}

/// What [`create`] wrote.
#[derive(Debug, Clone, Default)]
pub struct CreateReport {
    /// Archive files stored.
    pub archives: usize,
    /// Index lines written.
    pub index_entries: u64,
    /// Pages listed.
    pub pages: u64,
    /// Page rows left out: their URL has no capture (a `response`,
    /// `resource` or `revisit` record) in the archive files, as py-wacz
    /// keeps only the rows that match one.
    pub pages_without_capture: u64,
    /// The first [`MAX_NAMED`] of those rows' URLs.
    pub pages_without_capture_named: Vec<String>,
    /// Page rows left out as a URL's second row (the first is kept).
    pub pages_repeated: u64,
    /// More URLs were captured than [`MAX_CAPTURED`]: the pages were
    /// listed unchecked.
    pub pages_unchecked: bool,
    /// With no pages given: the rows found by the screenshots of the
    /// crawls whose input files have any (`urn:view:` records)...
    pub found_by_screenshots: Found,
    /// ...and by the HTML responses (status 200) of the others.
    pub found_by_html: Found,
    /// The lenient reader's recoveries in the input files, counted by
    /// kind and file, the first
    /// [`DEFAULT_KEPT`](warchest::recoveries::DEFAULT_KEPT) kept whole (all are
    /// handed to the caller of [`create_with`] as each file is read).
    pub recoveries: Recoveries,
    /// Records indexed without status and MIME because their HTTP head
    /// did not parse, by archive file (its base name), the first
    /// [`DEFAULT_KEPT`](warchest::recoveries::DEFAULT_KEPT) kept.
    pub unparsed_heads: Recoveries<UnparsedHead>,
}

/// Pages found in the input files by one rule (before those with no
/// capture are left out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    /// Input files the rule was used for (that gave a page).
    pub files: usize,
    /// Rows it gave.
    pub pages: u64,
}

/// The most captured URLs remembered to check the pages against (a
/// 16-byte hash each); past it the pages are listed unchecked, and the
/// report says so. A hash set's table is about 17 bytes a slot, at most
/// twice the entries, and the old table is held while it doubles: up to
/// about 400 MiB at this bound, and as much again for the page rows'
/// URLs (each URL listed once).
pub const MAX_CAPTURED: usize = 1 << 23;
/// The most URLs of left-out pages the report names.
pub const MAX_NAMED: usize = 1000;

/// The URLs captured in the archive files, each as a 16-byte hash.
#[derive(Default)]
struct Captured {
    set: HashSet<[u8; 16]>,
    over: bool,
}

impl Captured {
    fn key(url: &str) -> [u8; 16] {
        let d = Sha256::digest(url.as_bytes());
        let mut k = [0; 16];
        k.copy_from_slice(&d[..16]);
        k
    }

    /// Notes `e`'s URL when it is a capture: a response, resource or
    /// revisit record (an ARC or Web InfoMall record, with no WARC-Type,
    /// is a response).
    fn add(&mut self, e: &Entry) {
        let capture = e.record_type.as_deref().is_none_or(|t| {
            ["response", "resource", "revisit"]
                .iter()
                .any(|c| t.eq_ignore_ascii_case(c))
        });
        let Some(url) = e.url.as_deref().filter(|_| capture && !self.over) else {
            return;
        };
        if self.set.len() >= MAX_CAPTURED {
            self.over = true;
            self.set = HashSet::new();
            return;
        }
        self.set.insert(Captured::key(url));
    }

    /// Whether `url` was captured (always, once over the bound).
    fn has(&self, url: &str) -> bool {
        self.over || self.set.contains(&Captured::key(url))
    }
}

struct Resource {
    name: String,
    path: String,
    hash: String,
    bytes: u64,
}

/// Writes `inputs` (WARC, ARC or Web InfoMall files, any compression) as
/// the WACZ `out`: each file stored under `archive/` with its base name,
/// indexed into `indexes/index.cdxj` (sorted CDXJ, as `warchest index`
/// writes it), the pages in `pages/pages.jsonl` (see
/// [`CreateOptions::pages`]), and the data package with SHA-256 hashes.
///
/// Memory stays bounded: files are copied and hashed as streams, index
/// lines are sorted with spilling, pages are spooled. The ZIP is written
/// as [`open_name`] and renamed to `out` once whole (replacing a file
/// there); a failed run removes it, and leaves `out` as it was.
///
/// # Errors
/// An input cannot be read, two inputs have the same base name, or the
/// output cannot be written.
pub fn create<P: AsRef<Path>>(
    inputs: &[P],
    out: &Path,
    opts: &CreateOptions,
) -> Result<CreateReport> {
    create_with(inputs, out, opts, &mut |_, _| {})
}

/// The name a WACZ is written under until it is whole: `OUT.open`.
pub fn open_name(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".open");
    PathBuf::from(name)
}

/// [`create`], handing the lenient reader's recoveries in each input to
/// `on_warnings` (the input, its warnings) as they are met, those before
/// an error too; [`CreateReport::recoveries`] counts them.
///
/// # Errors
/// As [`create`].
pub fn create_with<P: AsRef<Path>>(
    inputs: &[P],
    out: &Path,
    opts: &CreateOptions,
    on_warnings: &mut dyn FnMut(&Path, &[Warning]),
) -> Result<CreateReport> {
    // Refused before the long indexing, as `OpenFile::create` refuses it:
    // the whole ZIP would be written, then fail at its rename.
    if out.is_dir() {
        return Err(Error::new(ErrorKind::Usage(
            "is a directory; the output is a file".into(),
        ))
        .in_file(out));
    }
    let mut report = CreateReport::default();
    let mut names = BTreeSet::new();
    let mut index = IndexOutput::new(tempfile::SpooledTempFile::new(8 << 20), &Format::Cdxj, true)?;
    // Found in the records when no pages are given: HTML responses, and
    // pages a browser captured (their `urn:view:` screenshots).
    // Chosen per crawl: the files one crawl run wrote (`crawl_of`; a
    // file with no warcinfo is a crawl of its own) give their
    // screenshots when any of them has one, else their HTML responses.
    // Per crawl, not per file: a crawl's pool of writers may put a
    // page's frame in a file that holds no screenshot.
    let mut found = FoundPages::default();
    let mut captured = Captured::default();
    // Opened before the long indexing: a wrong name fails at once.
    let given = match &opts.pages {
        Some(p) => Some((p, File::open(p).map_err(|e| Error::from(e).in_file(p))?)),
        None => None,
    };
    for input in inputs {
        let input = input.as_ref();
        let base = input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| wacz_error(input, "not a file name"))?;
        if !names.insert(base.clone()) {
            return Err(wacz_error(
                input,
                format!("two inputs are named {base}; WACZ names archive files by base name"),
            ));
        }
        let ropts = if opts.strict {
            ReaderOptions::strict()
        } else {
            ReaderOptions::lenient()
        };
        let mut reader = Reader::open_with(input, ropts.file(input))?;
        let indexer = Indexer::new(base.clone(), IndexOptions::default());
        let detect = opts.pages.is_none();
        let crawl = if detect {
            found.crawl(crawl_of(input))
        } else {
            0
        };
        let (html, viewed) = (&mut found.html, &mut found.viewed);
        let (html_before, viewed_before) = (html.n, viewed.n);
        // The reader's recoveries are taken as it goes (a file of
        // millions costs counts, not memory), those before an error too.
        let name = input.to_string_lossy();
        let recoveries = &mut report.recoveries;
        let entries = &mut report.index_entries;
        let unparsed = &mut report.unparsed_heads;
        // A file not compressed record at a time cannot be indexed (its
        // entries would all point at a member's start): refused, as
        // `warchest index` refuses it, the read stopped there.
        let read = indexer.index_addressable(
            &mut reader,
            &name,
            |e| {
                index.push(&e)?;
                captured.add(&e);
                if detect && is_page(&e) {
                    html.push(crawl, e.url.as_deref().unwrap_or_default(), &e.timestamp)?;
                } else if let Some(url) = viewed_page(&e).filter(|_| detect) {
                    viewed.push(crawl, url, &e.timestamp)?;
                }
                *entries += 1;
                Ok(())
            },
            |ws| {
                recoveries.add_all(&name, &ws);
                on_warnings(input, &ws);
            },
            unparsed,
        );
        if let Err(refusal) = read? {
            return Err(Error::new(warchest::ErrorKind::Usage(refusal.to_string())));
        }
        report.archives += 1;
        if detect {
            let (h, v) = (html.n - html_before, viewed.n - viewed_before);
            found.file_read(crawl, h, v);
        }
    }
    let detected = found.choose(&mut report)?;

    let (rows, from): (Box<dyn Read>, PathBuf) = match given {
        Some((p, f)) => (Box::new(f), p.clone()),
        None => (Box::new(detected), PathBuf::from("(pages found)")),
    };
    let mut pages = tempfile::SpooledTempFile::new(8 << 20);
    let copied = copy_pages(&from, rows, &captured, &mut pages)?;
    if copied.rows > 0 && copied.kept == 0 && opts.pages.is_some() {
        return Err(wacz_error(
            &from,
            format!(
                "none of its {} pages has a capture in the archive files (first: {})",
                copied.rows,
                copied.named.first().map_or("", |u| u.as_str())
            ),
        ));
    }
    report.pages = copied.kept;
    report.pages_repeated = copied.repeated;
    report.pages_without_capture = copied.rows - copied.kept - copied.repeated;
    report.pages_without_capture_named = copied.named;
    report.pages_unchecked = captured.over;
    let main_page = copied.main;
    // The captured URLs are not needed past this: given back before the
    // ZIP is written.
    drop(captured);

    // Written as OUT.open and given its name once whole: a run that fails
    // part way leaves no ZIP that looks whole under the name.
    let open = open_name(out);
    let file = File::create(&open).map_err(|e| Error::from(e).in_file(&open))?;
    // A failed run removes its part: a ZIP cut short is of no use, and the
    // error (naming the file it met, else the one written) is the news.
    let written = (|| -> Result<File> {
        let mut zip = zip::ZipWriter::new(io::BufWriter::with_capacity(1 << 16, file));
        let zerr = |e: zip::result::ZipError| match e {
            zip::result::ZipError::Io(e) => Error::from(e).in_file(&open),
            e => wacz_error(&open, format!("writing the ZIP: {e}")),
        };
        // Entries dated now (ZIP's default is 1980).
        let now = time::OffsetDateTime::now_utc();
        let when = zip::DateTime::from_date_and_time(
            u16::try_from(now.year()).unwrap_or(1980),
            u8::from(now.month()),
            now.day(),
            now.hour(),
            now.minute(),
            now.second(),
        )
        .unwrap_or_default();
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .last_modified_time(when)
            .large_file(true);
        let deflated = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(when)
            .large_file(true);
        let mut resources = Vec::new();
        for input in inputs {
            let input = input.as_ref();
            let base = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let path = format!("archive/{base}");
            zip.start_file(path.as_str(), stored).map_err(zerr)?;
            let f = File::open(input).map_err(|e| Error::from(e).in_file(input))?;
            let (bytes, hash) = copy_hashed(f, &mut zip)?;
            resources.push(Resource {
                name: base.to_lowercase(),
                path,
                hash,
                bytes,
            });
        }

        let mut index_spool = index.finish()?;
        index_spool.rewind()?;
        zip.start_file("indexes/index.cdxj", deflated)
            .map_err(zerr)?;
        let (bytes, hash) = copy_hashed(index_spool, &mut zip)?;
        resources.push(Resource {
            name: "index.cdxj".into(),
            path: "indexes/index.cdxj".into(),
            hash,
            bytes,
        });

        pages.rewind()?;
        let header =
            b"{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All Pages\"}\n";
        zip.start_file("pages/pages.jsonl", deflated)
            .map_err(zerr)?;
        let (bytes, hash) = copy_hashed(io::Cursor::new(&header[..]).chain(pages), &mut zip)?;
        resources.push(Resource {
            name: "pages.jsonl".into(),
            path: "pages/pages.jsonl".into(),
            hash,
            bytes,
        });

        let mut package = serde_json::Map::new();
        package.insert("profile".into(), "data-package".into());
        package.insert(
            "resources".into(),
            resources
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "name": r.name, "path": r.path, "hash": r.hash, "bytes": r.bytes,
                    })
                })
                .collect(),
        );
        if let Some(t) = &opts.title {
            package.insert("title".into(), t.clone().into());
        }
        if let Some(d) = &opts.description {
            package.insert("description".into(), d.clone().into());
        }
        if let Some((url, ts)) = main_page {
            package.insert("mainPageURL".into(), url.into());
            package.insert("mainPageDate".into(), ts.into());
        }
        package.insert("created".into(), now_iso().into());
        package.insert("wacz_version".into(), WACZ_VERSION.into());
        package.insert(
            "software".into(),
            format!("warchest {}", env!("CARGO_PKG_VERSION")).into(),
        );
        let package_bytes = serde_json::to_vec_pretty(&package).map_err(io::Error::from)?;
        zip.start_file("datapackage.json", deflated).map_err(zerr)?;
        zip.write_all(&package_bytes)?;
        let digest = serde_json::json!({
            "path": "datapackage.json",
            "hash": format!("sha256:{}", hex(&Sha256::digest(&package_bytes))),
        });
        zip.start_file("datapackage-digest.json", deflated)
            .map_err(zerr)?;
        zip.write_all(&serde_json::to_vec_pretty(&digest).map_err(io::Error::from)?)?;
        let w = zip.finish().map_err(zerr)?;
        w.into_inner()
            .map_err(|e| Error::from(e.into_error()).in_file(&open))
    })();
    match written.and_then(|file| warchest::write::atomic::commit(&file, &open, out)) {
        Ok(()) => Ok(report),
        Err(e) => {
            let _ = std::fs::remove_file(&open);
            Err(e.in_file(&open))
        }
    }
}

/// The longest line read from a pages file (a row with the page's text
/// can be long; past this it is not a row).
const MAX_PAGE_LINE: u64 = 16 << 20;

/// What [`copy_pages`] copied.
struct Copied {
    /// Rows read (the header and blank lines not counted).
    rows: u64,
    /// Rows written: those with a capture, each URL once.
    kept: u64,
    /// Rows left out as a URL's second row (a crawl killed after writing
    /// a row and resumed writes its URL's row again).
    repeated: u64,
    /// The first [`MAX_NAMED`] URLs of the rows left out.
    named: Vec<String>,
    /// The main page (the first seed, else the first row) as `(url, ts)`.
    main: Option<(String, String)>,
}

/// Copies the rows of the json-pages-1.0 text `r` (the file `path`) to
/// `out`, its header and blank lines left out, and the rows whose URL
/// has no capture (`captured`).
fn copy_pages(
    path: &Path,
    r: impl Read,
    captured: &Captured,
    out: &mut impl Write,
) -> Result<Copied> {
    let mut r = BufReader::new(r);
    let mut c = Copied {
        rows: 0,
        kept: 0,
        repeated: 0,
        named: Vec::new(),
        main: None,
    };
    let (mut first, mut seed) = (None, None);
    // The URLs listed (16-byte hashes, bounded as the captures are).
    let mut listed = HashSet::new();
    let mut line = Vec::new();
    for number in 1u64.. {
        line.clear();
        let got = (&mut r)
            .take(MAX_PAGE_LINE + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::from(e).in_file(path))?;
        if got == 0 {
            break;
        }
        let bad = |why: &str| wacz_error(path, format!("line {number}: {why}"));
        if got as u64 > MAX_PAGE_LINE {
            return Err(bad("longer than 16 MiB"));
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let row: serde_json::Value =
            serde_json::from_slice(text).map_err(|e| bad(&format!("not JSON: {e}")))?;
        if row.get("format").is_some() {
            continue;
        }
        let Some(url) = row.get("url").and_then(|u| u.as_str()) else {
            return Err(bad("a page without a url"));
        };
        let Some(ts) = row.get("ts").and_then(|t| t.as_str()) else {
            return Err(bad("a page without a ts"));
        };
        c.rows += 1;
        if listed.len() < MAX_CAPTURED && !listed.insert(Captured::key(url)) {
            c.repeated += 1;
            continue;
        }
        if !captured.has(url) {
            if c.named.len() < MAX_NAMED {
                c.named.push(url.to_string());
            }
            continue;
        }
        let main = || Some((url.to_string(), ts.to_string()));
        if first.is_none() {
            first = main();
        }
        if seed.is_none() && row.get("seed").and_then(|s| s.as_bool()) == Some(true) {
            seed = main();
        }
        out.write_all(text)?;
        out.write_all(b"\n")?;
        c.kept += 1;
    }
    c.main = seed.or(first);
    Ok(c)
}

/// Page rows spooled as they are found, counted; each row after the
/// number of the crawl it was found in and a tab.
struct PageSpool {
    rows: tempfile::SpooledTempFile,
    n: u64,
}

impl Default for PageSpool {
    fn default() -> PageSpool {
        PageSpool {
            rows: tempfile::SpooledTempFile::new(8 << 20),
            n: 0,
        }
    }
}

impl PageSpool {
    /// A row of `url` captured at `timestamp` (14 digits), found in the
    /// crawl numbered `crawl`.
    fn push(&mut self, crawl: usize, url: &str, timestamp: &str) -> io::Result<()> {
        let ts = iso_date(timestamp);
        let line = serde_json::json!({
            "id": uuid::Uuid::new_v4().simple().to_string(),
            "url": url,
            "ts": ts,
        });
        write!(self.rows, "{crawl}\t")?;
        serde_json::to_writer(&mut self.rows, &line).map_err(io::Error::from)?;
        self.rows.write_all(b"\n")?;
        self.n += 1;
        Ok(())
    }

    /// Copies to `out` the rows found in the crawls `keep` says yes to,
    /// without their crawl numbers; how many.
    fn copy_kept(mut self, keep: impl Fn(usize) -> bool, out: &mut impl Write) -> io::Result<u64> {
        self.rows.rewind()?;
        let (mut line, mut copied) = (Vec::new(), 0);
        let mut rows = BufReader::new(self.rows);
        while rows.read_until(b'\n', &mut line)? > 0 {
            let tab = line.iter().position(|&b| b == b'\t').unwrap_or(0);
            let crawl = std::str::from_utf8(&line[..tab])
                .ok()
                .and_then(|n| n.parse().ok());
            if crawl.is_some_and(&keep) {
                out.write_all(&line[tab + 1..])?;
                copied += 1;
            }
            line.clear();
        }
        Ok(copied)
    }
}

/// The pages found in the input files by both rules, and for each crawl
/// (the files one crawl wrote) how many each rule found.
#[derive(Default)]
struct FoundPages {
    html: PageSpool,
    viewed: PageSpool,
    /// The crawls named by their files' `isPartOf`, by number.
    named: HashMap<String, usize>,
    /// Per crawl number: files that gave a page by each rule, and pages
    /// found by screenshots.
    crawls: Vec<CrawlCounts>,
}

/// What was found in one crawl's files.
#[derive(Default, Clone, Copy)]
struct CrawlCounts {
    html_files: usize,
    viewed_files: usize,
    viewed: u64,
}

impl FoundPages {
    /// The number of the crawl named `name`; a new one for `None` (a
    /// file that names no crawl is one of its own).
    fn crawl(&mut self, name: Option<String>) -> usize {
        let next = self.crawls.len();
        let n = match name {
            Some(name) => *self.named.entry(name).or_insert(next),
            None => next,
        };
        if n == next {
            self.crawls.push(CrawlCounts::default());
        }
        n
    }

    /// A file of crawl `crawl` was read: `html` pages were found by its
    /// HTML responses, `viewed` by its screenshots.
    fn file_read(&mut self, crawl: usize, html: u64, viewed: u64) {
        let c = &mut self.crawls[crawl];
        c.html_files += usize::from(html > 0);
        c.viewed_files += usize::from(viewed > 0);
        c.viewed += viewed;
    }

    /// The pages, each crawl's by one rule: a browser's pages are the
    /// ones it screenshotted, not the HTML fragments and frames they
    /// loaded, nor a URL a tab loaded that was not HTML; a crawl with no
    /// screenshots gives its HTML responses.
    fn choose(self, report: &mut CreateReport) -> io::Result<tempfile::SpooledTempFile> {
        let crawls = &self.crawls;
        let by_screenshots = |n: usize| crawls.get(n).is_some_and(|c| c.viewed > 0);
        for (n, c) in crawls.iter().enumerate() {
            if by_screenshots(n) {
                report.found_by_screenshots.files += c.viewed_files;
            } else {
                report.found_by_html.files += c.html_files;
            }
        }
        let mut out = tempfile::SpooledTempFile::new(8 << 20);
        report.found_by_screenshots.pages += self.viewed.copy_kept(by_screenshots, &mut out)?;
        report.found_by_html.pages += self.html.copy_kept(|n| !by_screenshots(n), &mut out)?;
        out.rewind()?;
        Ok(out)
    }
}

/// The crawl run an archive file is part of: its first record is a
/// warcinfo record that names an `isPartOf` (warchest's crawler names its
/// prefix there, as ISO 28500 suggests), and the files of one run have
/// the same warcinfo block (a crawl's fields and configuration: two
/// crawls with one prefix, one with a browser and one without, differ).
/// Given as the block's SHA-256. None for a file with no such record, or
/// whose first record does not read: its indexing, which reads it again,
/// says why.
fn crawl_of(input: &Path) -> Option<String> {
    /// A warcinfo block longer than this is no crawler's.
    const MAX_WARCINFO: u64 = 1 << 20;
    let mut reader = Reader::open_with(input, ReaderOptions::default().file(input)).ok()?;
    let mut rec = reader.next_record().ok()??;
    if rec.header().record_type() != warchest::warc::RecordType::Warcinfo {
        return None;
    }
    let mut block = Vec::new();
    (&mut rec.block())
        .take(MAX_WARCINFO)
        .read_to_end(&mut block)
        .ok()?;
    let (fields, _) = warchest::fields::Fields::parse_warc_fields(&block).ok()?;
    let part_of = fields.get("isPartOf")?.value();
    if part_of.trim_ascii().is_empty() {
        return None;
    }
    Some(hex(&Sha256::digest(&block)))
}

/// The page a browser's screenshot (`resource` record at `urn:view:URL`,
/// as warchest and Browsertrix write them) shows.
fn viewed_page(e: &Entry) -> Option<&str> {
    e.record_type
        .as_deref()
        .filter(|t| t.eq_ignore_ascii_case("resource"))?;
    e.url
        .as_deref()?
        .strip_prefix("urn:view:")
        .filter(|u| u.starts_with("http"))
}

fn is_page(e: &Entry) -> bool {
    e.status.as_deref() == Some("200")
        && e.record_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("response"))
        && warchest::http::is_html_type(e.mime.as_deref(), false)
        && e.url.as_deref().is_some_and(|u| u.starts_with("http"))
}

/// `20140126200624` as `2014-01-26T20:06:24Z`.
pub fn iso_date(ts: &str) -> String {
    let b = ts.as_bytes();
    if b.len() < 14 || !b[..14].iter().all(u8::is_ascii_digit) {
        return ts.to_string();
    }
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &ts[..4],
        &ts[4..6],
        &ts[6..8],
        &ts[8..10],
        &ts[10..12],
        &ts[12..14]
    )
}

fn now_iso() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

fn hex(b: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(b)
}

/// Copies `r` to `w`, returning the byte count and `sha256:HEX`.
fn copy_hashed(mut r: impl Read, w: &mut impl Write) -> Result<(u64, String)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        h.update(&buf[..k]);
        w.write_all(&buf[..k])?;
        n += k as u64;
    }
    Ok((n, format!("sha256:{}", hex(&h.finalize()))))
}

/// What [`validate`] found wrong with a WACZ: one sentence per problem.
#[derive(Debug, Clone, Default)]
pub struct ValidationReport {
    /// Problems, in the order found.
    pub problems: Vec<String>,
    /// Files listed in the data package.
    pub resources: usize,
    /// Index lines checked against the records they point at.
    pub index_entries_checked: u64,
    /// Remarks that are not problems (an optional part that is absent).
    pub notes: Vec<String>,
}

impl ValidationReport {
    /// No problem found.
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Most index lines checked against their records (the rest are counted
/// as not checked): each check opens the record.
const MAX_INDEX_CHECKS: u64 = 100_000;

/// Checks the WACZ at `path`: `datapackage.json` present with a
/// `wacz_version` and resources; every file in the ZIP listed and every
/// listed file present with its size and hash (SHA-256 or MD5); the hash
/// of `datapackage.json` in `datapackage-digest.json`; archive files
/// stored; an index (`indexes/index.cdxj`, `.cdx`, `.cdx.gz`) and
/// `pages/pages.jsonl` with its header; and each CDXJ line pointing at a
/// record of its file with its URL.
///
/// # Errors
/// The file cannot be read or is not a ZIP file (problems inside it are
/// the report's).
pub fn validate(path: &Path) -> Result<ValidationReport> {
    let mut rep = ValidationReport::default();
    let all = entries(path)?;
    let by_name: BTreeMap<&str, &ZipEntry> = all.iter().map(|e| (e.name.as_str(), e)).collect();
    let f = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    let mut zip = zip::ZipArchive::new(BufReader::new(f)).map_err(|e| zip_error(path, e))?;

    let Some(package_bytes) = read_small(&mut zip, path, "datapackage.json", &mut rep)? else {
        rep.problems.push("datapackage.json is missing".into());
        return Ok(rep);
    };
    let package: serde_json::Value = match serde_json::from_slice(&package_bytes) {
        Ok(v) => v,
        Err(e) => {
            rep.problems
                .push(format!("datapackage.json is not JSON: {e}"));
            return Ok(rep);
        }
    };
    if package
        .get("wacz_version")
        .and_then(|v| v.as_str())
        .is_none()
    {
        rep.problems
            .push("datapackage.json has no wacz_version".into());
    }
    let resources = package
        .get("resources")
        .and_then(|r| r.as_array())
        .cloned()
        .unwrap_or_default();
    if resources.is_empty() {
        rep.problems
            .push("datapackage.json lists no resources".into());
    }
    rep.resources = resources.len();
    let mut listed = BTreeSet::new();
    for r in &resources {
        let (Some(rpath), Some(hash)) = (
            r.get("path").and_then(|v| v.as_str()),
            r.get("hash").and_then(|v| v.as_str()),
        ) else {
            rep.problems
                .push(format!("resource without path or hash: {r}"));
            continue;
        };
        listed.insert(rpath.to_string());
        if let Some(name) = r.get("name").and_then(|v| v.as_str())
            && !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._/".contains(&b))
        {
            rep.problems.push(format!(
                "resource name {name:?} is not lower-case letters, digits and -._/ (frictionless)"
            ));
        }
        if !by_name.contains_key(rpath) {
            rep.problems
                .push(format!("{rpath} is listed in datapackage.json but missing"));
            continue;
        }
        // A file that cannot be read whole (a CRC error in the ZIP) is a
        // problem of this WACZ, not a failure to check it.
        let hashed = match hash_entry(&mut zip, path, rpath, hash) {
            Ok(h) => h,
            Err(e) => {
                rep.problems.push(format!("{rpath}: cannot be read: {e}"));
                continue;
            }
        };
        match hashed {
            Some((bytes, ok)) => {
                if !ok {
                    rep.problems
                        .push(format!("{rpath}: hash is not the one listed ({hash})"));
                }
                if let Some(b) = r.get("bytes").and_then(|v| v.as_u64())
                    && b != bytes
                {
                    rep.problems
                        .push(format!("{rpath}: {bytes} bytes, datapackage.json says {b}"));
                }
            }
            None => rep
                .problems
                .push(format!("{rpath}: hash {hash} is not sha256: or md5:")),
        }
    }
    for e in &all {
        if e.name != "datapackage.json"
            && e.name != "datapackage-digest.json"
            && !listed.contains(&e.name)
        {
            rep.problems
                .push(format!("{} is not listed in datapackage.json", e.name));
        }
        if e.name.starts_with("archive/") && !e.stored {
            rep.problems.push(format!(
                "{} is compressed; archive files must be stored",
                e.name
            ));
        }
    }
    match read_small(&mut zip, path, "datapackage-digest.json", &mut rep)? {
        None => rep
            .problems
            .push("datapackage-digest.json is missing".into()),
        Some(b) => {
            let want = serde_json::from_slice::<serde_json::Value>(&b)
                .ok()
                .and_then(|v| v.get("hash").and_then(|h| h.as_str()).map(str::to_owned));
            let have = format!("sha256:{}", hex(&Sha256::digest(&package_bytes)));
            if want.as_deref() != Some(have.as_str()) {
                rep.problems.push(format!(
                    "datapackage-digest.json: hash {} is not datapackage.json's {have}",
                    want.as_deref().unwrap_or("(none)")
                ));
            }
        }
    }
    let index_name = [
        "indexes/index.cdxj",
        "indexes/index.cdx",
        "indexes/index.cdx.gz",
    ]
    .into_iter()
    .find(|n| by_name.contains_key(n));
    if index_name.is_none() {
        rep.problems
            .push("no index: indexes/index.cdxj, index.cdx or index.cdx.gz".into());
    }
    match first_line(&mut zip, path, "pages/pages.jsonl")? {
        // The WACZ spec does not require pages (py-wacz writes none by
        // default): a note, not a problem.
        None => rep
            .notes
            .push("no pages/pages.jsonl (optional): no page list".into()),
        Some(first) => {
            let format = serde_json::from_slice::<serde_json::Value>(&first)
                .ok()
                .and_then(|v| v.get("format").and_then(|f| f.as_str()).map(str::to_owned));
            if format.as_deref() != Some("json-pages-1.0") {
                rep.problems
                    .push("pages/pages.jsonl does not start with a json-pages-1.0 header".into());
            }
        }
    }
    if index_name == Some("indexes/index.cdxj") {
        check_index(path, &mut zip, &by_name, &mut rep)?;
    } else if index_name == Some("indexes/index.cdx.gz") {
        check_compressed_index(path, &mut zip, &by_name, &mut rep)?;
    }
    Ok(rep)
}

/// The first line of an entry (its header; at most 1 MiB read), `None`
/// when absent: only the header is checked, and the rows after it may be
/// long (a crawl's rows can carry the page's text) and many.
fn first_line(
    zip: &mut zip::ZipArchive<BufReader<File>>,
    path: &Path,
    name: &str,
) -> Result<Option<Vec<u8>>> {
    let f = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(zip_error(path, e)),
    };
    let mut line = Vec::new();
    BufReader::new(f.take(1 << 20))
        .read_until(b'\n', &mut line)
        .map_err(|e| Error::from(e).in_file(path))?;
    Ok(Some(line))
}

/// Reads a small entry (at most 64 MiB) whole; `None` when absent.
fn read_small(
    zip: &mut zip::ZipArchive<BufReader<File>>,
    path: &Path,
    name: &str,
    rep: &mut ValidationReport,
) -> Result<Option<Vec<u8>>> {
    const MAX: u64 = 64 << 20;
    let mut f = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(zip_error(path, e)),
    };
    let mut v = Vec::new();
    (&mut f)
        .take(MAX + 1)
        .read_to_end(&mut v)
        .map_err(|e| Error::from(e).in_file(path))?;
    if v.len() as u64 > MAX {
        rep.problems.push(format!(
            "{name} is larger than {MAX} bytes; not checked whole"
        ));
        v.truncate(MAX as usize);
    }
    Ok(Some(v))
}

/// Hashes an entry as decompressed: `(bytes, hash matches)`, `None` for an
/// unknown algorithm.
fn hash_entry(
    zip: &mut zip::ZipArchive<BufReader<File>>,
    path: &Path,
    name: &str,
    hash: &str,
) -> Result<Option<(u64, bool)>> {
    let Some((algo, want)) = hash.split_once(':') else {
        return Ok(None);
    };
    let mut f = zip.by_name(name).map_err(|e| zip_error(path, e))?;
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    let mut sha = Sha256::new();
    let mut md5 = md5::Md5::new();
    let use_sha = match algo {
        "sha256" => true,
        "md5" => false,
        _ => return Ok(None),
    };
    loop {
        let k = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from(e).in_file(path)),
        };
        if use_sha {
            sha.update(&buf[..k]);
        } else {
            md5.update(&buf[..k]);
        }
        n += k as u64;
    }
    let have = if use_sha {
        hex(&sha.finalize())
    } else {
        hex(&md5.finalize())
    };
    Ok(Some((n, have.eq_ignore_ascii_case(want))))
}

/// Each CDXJ line names a file under `archive/` and an offset where a
/// record of its URL starts.
fn check_index(
    path: &Path,
    zip: &mut zip::ZipArchive<BufReader<File>>,
    by_name: &BTreeMap<&str, &ZipEntry>,
    rep: &mut ValidationReport,
) -> Result<()> {
    let f = zip
        .by_name("indexes/index.cdxj")
        .map_err(|e| zip_error(path, e))?;
    let mut lines = BufReader::new(f);
    let mut line = Vec::new();
    let mut bad = 0u64;
    let mut number = 0;
    // Lines are bounded so that a corrupt index cannot exhaust memory.
    while warchest_index::reader::next_line(&mut lines, &mut line, &mut number)
        .map_err(|e| Error::from(e).in_file(path))?
    {
        if rep.index_entries_checked >= MAX_INDEX_CHECKS {
            break;
        }
        check_index_line(path, by_name, rep, &line, &mut bad);
    }
    if bad > 10 {
        rep.problems
            .push(format!("{} more index problems", bad - 10));
    }
    Ok(())
}

/// Checks one CDXJ line of an index: it parses, names a file under
/// `archive/`, and a record of its URL starts at its offset there.
fn check_index_line(
    path: &Path,
    by_name: &BTreeMap<&str, &ZipEntry>,
    rep: &mut ValidationReport,
    line: &[u8],
    bad: &mut u64,
) {
    let Some(cdx) = CdxjLine::parse(line) else {
        *bad += 1;
        if *bad <= 10 {
            rep.problems.push(format!(
                "index line is not CDXJ: {}",
                String::from_utf8_lossy(line).trim_end()
            ));
        }
        return;
    };
    rep.index_entries_checked += 1;
    let name = format!("archive/{}", cdx.filename);
    let Some(e) = by_name.get(name.as_str()) else {
        *bad += 1;
        if *bad <= 10 {
            rep.problems
                .push(format!("index names {}, not in archive/", cdx.filename));
        }
        return;
    };
    if !e.stored {
        return;
    }
    let found = record_url_at(path, e, cdx.offset);
    if found.as_deref() != Some(cdx.url.as_str()) {
        *bad += 1;
        if *bad <= 10 {
            rep.problems.push(format!(
                "index: no record of {} at offset {} of {}",
                cdx.url, cdx.offset, cdx.filename
            ));
        }
    }
}

/// A compressed index: `indexes/index.idx` lists the blocks of
/// `indexes/index.cdx.gz` (`urlkey timestamp {"offset", "length", ...}`
/// after a `!meta` line); each block is a gzip member of CDXJ lines, whose
/// first key is the block's. Each block must decompress, and each of its
/// lines is checked as a line of `index.cdxj` is.
fn check_compressed_index(
    path: &Path,
    zip: &mut zip::ZipArchive<BufReader<File>>,
    by_name: &BTreeMap<&str, &ZipEntry>,
    rep: &mut ValidationReport,
) -> Result<()> {
    /// Largest block read (a block is normally some 3000 lines).
    const MAX_BLOCK: u64 = 64 << 20;
    let Some(idx) = read_small(zip, path, "indexes/index.idx", rep)? else {
        rep.problems
            .push("indexes/index.cdx.gz without indexes/index.idx".into());
        return Ok(());
    };
    let mut blocks: Vec<(u64, u64, String)> = Vec::new();
    for line in idx.split(|&c| c == b'\n') {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if text.is_empty() || text.starts_with('!') {
            continue;
        }
        let parsed = text.splitn(3, ' ').nth(2).and_then(|json| {
            let v: serde_json::Value = serde_json::from_str(json).ok()?;
            let num = |k: &str| match v.get(k)? {
                serde_json::Value::Number(n) => n.as_u64(),
                serde_json::Value::String(s) => s.parse().ok(),
                _ => None,
            };
            Some((num("offset")?, num("length")?))
        });
        match parsed {
            Some((offset, length)) => {
                let key = text.split(' ').next().unwrap_or_default().to_string();
                blocks.push((offset, length, key));
            }
            None => rep
                .problems
                .push(format!("indexes/index.idx: line is not a block: {text}")),
        }
    }
    if blocks.is_empty() {
        rep.problems.push("indexes/index.idx lists no block".into());
        return Ok(());
    }
    blocks.sort();
    let f = zip
        .by_name("indexes/index.cdx.gz")
        .map_err(|e| zip_error(path, e))?;
    let mut r = BufReader::new(f);
    let mut at = 0u64;
    let mut bad = 0u64;
    for (offset, length, key) in blocks {
        if rep.index_entries_checked >= MAX_INDEX_CHECKS {
            break;
        }
        if offset < at || length > MAX_BLOCK {
            rep.problems.push(format!(
                "indexes/index.idx: block at {offset} ({length} bytes) overlaps another or is too large"
            ));
            continue;
        }
        let need = offset - at;
        let skipped = io::copy(&mut (&mut r).take(need), &mut io::sink())
            .map_err(|e| Error::from(e).in_file(path))?;
        let mut block = Vec::new();
        (&mut r)
            .take(length)
            .read_to_end(&mut block)
            .map_err(|e| Error::from(e).in_file(path))?;
        if skipped < need || (block.len() as u64) < length {
            rep.problems.push(format!(
                "indexes/index.idx: block at {offset} ({length} bytes) ends past the end of index.cdx.gz"
            ));
            break;
        }
        at = offset + length;
        let lines = match gunzip_block(&block) {
            Ok(v) => v,
            Err(e) => {
                rep.problems.push(format!(
                    "indexes/index.cdx.gz: block at {offset} is not a gzip member: {e}"
                ));
                continue;
            }
        };
        let first_key = lines.split(|&c| c == b' ').next().unwrap_or_default();
        if first_key != key.as_bytes() {
            rep.problems.push(format!(
                "indexes/index.cdx.gz: block at {offset} starts with {}, index.idx says {key}",
                String::from_utf8_lossy(first_key)
            ));
        }
        for line in lines.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            if rep.index_entries_checked >= MAX_INDEX_CHECKS {
                break;
            }
            check_index_line(path, by_name, rep, line, &mut bad);
        }
    }
    if bad > 10 {
        rep.problems
            .push(format!("{} more index problems", bad - 10));
    }
    Ok(())
}

/// The decompressed bytes of a block of a compressed index: gzip members
/// only, each whole (strict).
fn gunzip_block(block: &[u8]) -> Result<Vec<u8>> {
    use warchest::codec::{Codec, Source};
    let mut d = Decoder::new(
        block,
        DecoderOptions {
            lenient: false,
            ..DecoderOptions::default()
        },
    );
    let mut out = Vec::new();
    while d.next_member()? {
        if d.codec() != Codec::Gzip {
            return Err(Error::new(ErrorKind::Syntax("not gzip".into())));
        }
        loop {
            let b = d.fill_buf()?;
            if b.is_empty() {
                break;
            }
            let n = b.len();
            if out.len() + n > 1 << 28 {
                return Err(Error::new(ErrorKind::Syntax(
                    "decompresses to more than 256 MiB".into(),
                )));
            }
            out.extend_from_slice(b);
            d.consume(n);
        }
    }
    Ok(out)
}

fn record_url_at(path: &Path, e: &ZipEntry, offset: u64) -> Option<String> {
    let mut s = open_entry(path, e).ok()?;
    s.seek(SeekFrom::Start(offset)).ok()?;
    let opts = DecoderOptions {
        start_offset: offset,
        buffer_size: 1 << 16,
        ..DecoderOptions::default()
    };
    let mut r = Reader::from_source(
        Decoder::new_seekable(s, opts.clone()).ok()?,
        ReaderOptions {
            decoder: opts,
            ..ReaderOptions::default()
        },
    )
    .ok()?;
    let rec = r.next_record().ok()??;
    if rec.location().offset != offset {
        return None;
    }
    let uri = rec.header().target_uri()?;
    Some(uri.replace(' ', "%20"))
}

pub use warchest_index::reader::CdxjLine;

/// The path a `FILE.wacz#ENTRY` name stands for, for messages.
pub fn member_path(wacz: &Path, entry: &str) -> PathBuf {
    PathBuf::from(format!("{}#{entry}", wacz.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_name_splits_at_its_first_wacz_mark_in_any_case() {
        assert_eq!(
            split_at_wacz("d/S.WACZ#archive/a.warc.gz"),
            Some(("d/S.WACZ", "archive/a.warc.gz"))
        );
        assert_eq!(
            split_at_wacz("s3://b/x.Wacz#archive/y.wacz#z"),
            Some(("s3://b/x.Wacz", "archive/y.wacz#z"))
        );
        assert_eq!(split_at_wacz("a.wacz"), None);
        assert_eq!(split_at_wacz("a.warc.gz#x"), None);
        // Not split on a byte inside a character.
        assert_eq!(split_at_wacz("é.wacz#"), Some(("é.wacz", "")));
    }

    #[test]
    fn section_reads_and_seeks_inside_its_window() {
        let mut t = tempfile::tempfile().unwrap();
        t.write_all(b"0123456789").unwrap();
        let mut s = Section::new(t, 3, 4).unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        assert_eq!(v, b"3456");
        assert_eq!(s.seek(SeekFrom::End(-1)).unwrap(), 3);
        v.clear();
        s.read_to_end(&mut v).unwrap();
        assert_eq!(v, b"6");
        assert!(s.seek(SeekFrom::Current(-10)).is_err());
    }

    /// A WARC response record of `url`: 200, HTML.
    fn html_response(url: &str) -> Vec<u8> {
        let http = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\n<p>x";
        record(
            "response",
            url,
            "",
            "application/http; msgtype=response",
            http,
        )
    }

    /// A WARC record: its type, target, further header lines (each ending
    /// in CRLF), content type and block.
    fn record(typ: &str, url: &str, more: &str, content_type: &str, block: &str) -> Vec<u8> {
        format!(
            "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Target-URI: {url}\r\n\
WARC-Date: 2026-11-29T06:00:00Z\r\nWARC-Record-ID: <urn:uuid:{}>\r\n{more}\
Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{block}\r\n\r\n",
            uuid::Uuid::new_v4(),
            block.len()
        )
        .into_bytes()
    }

    /// The rows of the WACZ's pages/pages.jsonl after its header.
    fn wacz_pages(wacz: &Path) -> Vec<serde_json::Value> {
        let mut z = zip::ZipArchive::new(File::open(wacz).unwrap()).unwrap();
        let mut text = String::new();
        z.by_name("pages/pages.jsonl")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let mut lines = text.lines();
        assert!(lines.next().unwrap().contains("json-pages-1.0"), "{text}");
        lines.map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The main page is the first seed row, not the first row; and the
    /// pages file may be larger than the 64 MiB an entry is read whole to
    /// (rows with the page's text): the WACZ is still valid, since only the
    /// header line is read to check it.
    #[test]
    fn the_first_seed_is_the_main_page_and_a_large_pages_file_validates() {
        let d = tempfile::tempdir().unwrap();
        let warc = d.path().join("a.warc");
        let urls: Vec<String> = (0..6).map(|i| format!("http://a.test/{i}")).collect();
        let b: Vec<u8> = urls.iter().flat_map(|u| html_response(u)).collect();
        std::fs::write(&warc, b).unwrap();
        let text = "word ".repeat((12 << 20) / 5); // 12 MiB a row: 72 MiB in all
        let mut rows = String::new();
        for (i, u) in urls.iter().enumerate() {
            let row = serde_json::json!({
                "url": u, "ts": "2026-11-29T06:00:00Z", "seed": i == 2, "text": text,
            });
            rows.push_str(&format!("{row}\n"));
        }
        let pages = d.path().join("pages.jsonl");
        std::fs::write(&pages, rows).unwrap();
        let out = d.path().join("big.wacz");
        let o = CreateOptions {
            pages: Some(pages),
            ..CreateOptions::default()
        };
        assert_eq!(create(&[&warc], &out, &o).unwrap().pages, 6);
        let mut z = zip::ZipArchive::new(File::open(&out).unwrap()).unwrap();
        let mut package = String::new();
        z.by_name("datapackage.json")
            .unwrap()
            .read_to_string(&mut package)
            .unwrap();
        let package: serde_json::Value = serde_json::from_str(&package).unwrap();
        assert_eq!(package["mainPageURL"], "http://a.test/2", "{package}");
        let rep = validate(&out).unwrap();
        assert!(rep.is_valid(), "{:?}", rep.problems);
    }

    /// Given the crawl's pages, the WACZ lists those (a fragment a page
    /// fetched, an HTML response too, is not listed); without, every
    /// HTML response is.
    #[test]
    fn the_pages_given_are_the_ones_listed() {
        let d = tempfile::tempdir().unwrap();
        let warc = d.path().join("a.warc");
        let mut b = html_response("http://a.test/");
        b.extend(html_response("http://a.test/frag.html"));
        std::fs::write(&warc, b).unwrap();
        let pages = d.path().join("pages.jsonl");
        std::fs::write(
            &pages,
            "{\"format\":\"json-pages-1.0\",\"id\":\"pages\"}\n\n\
{\"url\":\"http://a.test/\",\"ts\":\"2026-11-29T06:00:00.000Z\",\"seed\":true,\"title\":\"A\"}\n",
        )
        .unwrap();
        let out = d.path().join("given.wacz");
        let o = CreateOptions {
            pages: Some(pages.clone()),
            ..CreateOptions::default()
        };
        let r = create(&[&warc], &out, &o).unwrap();
        assert_eq!(r.pages, 1);
        let rows = wacz_pages(&out);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0]["title"], "A");
        assert!(validate(&out).unwrap().is_valid());
        let out = d.path().join("detected.wacz");
        let r = create(&[&warc], &out, &CreateOptions::default()).unwrap();
        assert_eq!(r.pages, 2);
        assert_eq!(wacz_pages(&out).len(), 2);
        // A browser's capture: its screenshots name the pages, not the
        // fragment its page fetched.
        let mut b = html_response("http://a.test/");
        b.extend(html_response("http://a.test/frag.html"));
        b.extend(screenshot("http://a.test/"));
        let browser = d.path().join("b.warc");
        std::fs::write(&browser, b).unwrap();
        let out = d.path().join("viewed.wacz");
        let r = create(&[&browser], &out, &CreateOptions::default()).unwrap();
        assert_eq!(r.pages, 1);
        let rows = wacz_pages(&out);
        assert_eq!(rows[0]["url"], "http://a.test/", "{rows:?}");
        assert_eq!(rows[0]["ts"], "2026-11-29T06:00:01Z", "{rows:?}");
        // A row that is not JSON is an error naming the file and line.
        std::fs::write(
            &pages,
            "{\"url\":\"http://a.test/\",\"ts\":\"2026-11-29T06:00:00Z\"}\nnot json\n",
        )
        .unwrap();
        let e = create(&[&warc], &d.path().join("bad.wacz"), &o).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        // So is a row without its ts.
        std::fs::write(&pages, "\n{\"url\":\"http://a.test/\"}\n").unwrap();
        let e = create(&[&warc], &d.path().join("bad.wacz"), &o).unwrap_err();
        assert!(e.to_string().contains("line 2: a page without a ts"), "{e}");
    }

    /// A screenshot record of the page `url`, as a browser writes it.
    fn screenshot(url: &str) -> Vec<u8> {
        let r = record(
            "resource",
            &format!("urn:view:{url}"),
            "",
            "image/png",
            "\u{89}PNG",
        );
        // Dated a second after the page's response.
        let r = String::from_utf8(r).unwrap();
        r.replacen("06:00:00Z", "06:00:01Z", 1).into_bytes()
    }

    /// A response whose HTTP head does not parse is packaged and indexed
    /// (without status and MIME) and counted, not silent.
    #[test]
    fn a_record_whose_http_head_does_not_parse_is_counted() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("odd.warc");
        let odd = record(
            "response",
            "http://o.test/odd",
            "",
            "application/http; msgtype=response",
            "not an HTTP head at all",
        );
        let good = html_response("http://o.test/");
        std::fs::write(&f, [good.clone(), odd].concat()).unwrap();
        let out = d.path().join("odd.wacz");
        let r = create(&[&f], &out, &CreateOptions::default()).unwrap();
        assert_eq!(r.index_entries, 2, "{r:?}");
        assert_eq!(r.unparsed_heads.total(), 1, "{r:?}");
        let by_file = r.unparsed_heads.by_file();
        assert_eq!(by_file[0].file, "odd.warc");
        assert_eq!(by_file[0].first_offset, good.len() as u64);
        assert!(validate(&out).unwrap().is_valid());
    }

    /// A crawl's files are one capture (their warcinfo, naming an
    /// `isPartOf`, the same): a
    /// browser crawl's frame in a file of its own (its pool of writers
    /// put it there) is no page, since another file of that crawl holds
    /// screenshots; a file of another crawl with no screenshots gives
    /// its HTML responses.
    #[test]
    fn pages_are_found_per_crawl() {
        let d = tempfile::tempdir().unwrap();
        let warcinfo = |crawl: &str| {
            let fields = format!("software: warchest-crawl\r\nisPartOf: {crawl}\r\n");
            record("warcinfo", "", "", "application/warc-fields", &fields)
        };
        let write = |name: &str, parts: &[Vec<u8>]| {
            let p = d.path().join(name);
            std::fs::write(&p, parts.concat()).unwrap();
            p
        };
        let shots = write(
            "b-0.warc",
            &[
                warcinfo("b"),
                html_response("http://b.test/"),
                screenshot("http://b.test/"),
            ],
        );
        let frame = write(
            "b-1.warc",
            &[warcinfo("b"), html_response("http://b.test/frame.html")],
        );
        let other = write(
            "c-0.warc",
            &[warcinfo("c"), html_response("http://c.test/")],
        );
        let out = d.path().join("crawls.wacz");
        // In either order: a crawl's rule is known once all its files are read.
        for inputs in [[&frame, &shots, &other], [&shots, &other, &frame]] {
            let r = create(&inputs, &out, &CreateOptions::default()).unwrap();
            let found = |files, pages| Found { files, pages };
            assert_eq!(r.found_by_screenshots, found(1, 1), "{r:?}");
            assert_eq!(r.found_by_html, found(1, 1), "{r:?}");
            let urls: BTreeSet<String> = wacz_pages(&out)
                .iter()
                .map(|p| p["url"].as_str().unwrap().to_string())
                .collect();
            let want: BTreeSet<String> = ["http://b.test/", "http://c.test/"]
                .map(String::from)
                .into();
            assert_eq!(urls, want);
        }
        // Two crawls with one prefix, one with a browser and one without,
        // are two crawls: their warcinfo blocks differ.
        assert_eq!(crawl_of(&shots), crawl_of(&frame));
        assert_ne!(crawl_of(&shots), crawl_of(&other));
        let plain = |crawl: &str| {
            let fields = format!("software: warchest-crawl\r\nisPartOf: {crawl}\r\nseed: x\r\n");
            record("warcinfo", "", "", "application/warc-fields", &fields)
        };
        let b_plain = write(
            "b-plain.warc",
            &[plain("b"), html_response("http://b.test/2.html")],
        );
        assert!(crawl_of(&b_plain).is_some());
        assert_ne!(crawl_of(&b_plain), crawl_of(&shots));
        let r = create(&[&shots, &b_plain], &out, &CreateOptions::default()).unwrap();
        assert_eq!(r.pages, 2, "{r:?}");
        // No warcinfo, an empty isPartOf, no file: no crawl.
        let bare = write("bare.warc", &[html_response("http://d.test/")]);
        let empty = write("empty.warc", &[warcinfo(" ")]);
        for f in [bare, empty, d.path().join("missing.warc")] {
            assert_eq!(crawl_of(&f), None, "{}", f.display());
        }
    }

    /// With no pages given, each input file's pages are found on their
    /// own: a browser capture's by its screenshots, a plain capture's by
    /// its HTML responses, in one WACZ.
    #[test]
    fn pages_are_found_per_input_file() {
        let d = tempfile::tempdir().unwrap();
        let browser = d.path().join("browser.warc");
        let mut b = html_response("http://b.test/");
        b.extend(html_response("http://b.test/frag.html"));
        b.extend(screenshot("http://b.test/"));
        std::fs::write(&browser, b).unwrap();
        let plain = d.path().join("plain.warc");
        let mut b = html_response("http://p.test/");
        b.extend(html_response("http://p.test/2.html"));
        std::fs::write(&plain, b).unwrap();
        let out = d.path().join("both.wacz");
        let r = create(&[&browser, &plain], &out, &CreateOptions::default()).unwrap();
        let found = |files, pages| Found { files, pages };
        assert_eq!(r.found_by_screenshots, found(1, 1), "{r:?}");
        assert_eq!(r.found_by_html, found(1, 2), "{r:?}");
        assert_eq!(r.pages, 3);
        let urls: BTreeSet<String> = wacz_pages(&out)
            .iter()
            .map(|p| p["url"].as_str().unwrap().to_string())
            .collect();
        let want: BTreeSet<String> = ["http://b.test/", "http://p.test/", "http://p.test/2.html"]
            .map(String::from)
            .into();
        assert_eq!(urls, want);
        assert!(validate(&out).unwrap().is_valid());
    }

    /// A WARC revisit record of `url` (its original elsewhere).
    fn revisit(url: &str) -> Vec<u8> {
        let http = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
        let more = format!(
            "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\n\
WARC-Refers-To-Target-URI: {url}\r\nWARC-Refers-To-Date: 2026-11-28T06:00:00Z\r\n\
WARC-Payload-Digest: sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n"
        );
        record(
            "revisit",
            url,
            &more,
            "application/http; msgtype=response",
            http,
        )
    }

    /// A page row whose URL has no capture in the archive files is left
    /// out, counted and named; a revisit is a capture; a pages file none
    /// of whose rows has a capture is an error.
    #[test]
    fn pages_without_a_capture_are_left_out() {
        let d = tempfile::tempdir().unwrap();
        let warc = d.path().join("a.warc");
        let mut b = html_response("http://a.test/");
        b.extend(revisit("http://a.test/again"));
        std::fs::write(&warc, b).unwrap();
        let pages = d.path().join("pages.jsonl");
        let row = |u: &str| format!("{{\"url\":\"{u}\",\"ts\":\"2026-11-29T06:00:00Z\"}}\n");
        std::fs::write(
            &pages,
            format!(
                "{{\"format\":\"json-pages-1.0\",\"id\":\"pages\"}}\n{}{}{}{}",
                row("http://a.test/elsewhere"),
                row("http://a.test/"),
                row("http://a.test/again"),
                // Written again after a kill and a resume.
                row("http://a.test/")
            ),
        )
        .unwrap();
        let o = CreateOptions {
            pages: Some(pages.clone()),
            ..CreateOptions::default()
        };
        let out = d.path().join("a.wacz");
        let r = create(&[&warc], &out, &o).unwrap();
        assert_eq!((r.pages, r.pages_without_capture), (2, 1), "{r:?}");
        assert_eq!(r.pages_repeated, 1, "{r:?}");
        assert_eq!(r.pages_without_capture_named, ["http://a.test/elsewhere"]);
        let urls: Vec<String> = wacz_pages(&out)
            .iter()
            .map(|p| p["url"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(urls, ["http://a.test/", "http://a.test/again"]);
        assert!(validate(&out).unwrap().is_valid());
        // No row with a capture: an error naming the file.
        std::fs::write(&pages, row("http://b.test/")).unwrap();
        let e = create(&[&warc], &d.path().join("b.wacz"), &o).unwrap_err();
        assert!(e.to_string().contains("pages.jsonl"), "{e}");
        assert!(e.to_string().contains("none of its 1 pages"), "{e}");
        // A pages file that is not there fails before any indexing.
        std::fs::remove_file(&pages).unwrap();
        assert!(create(&[&warc], &d.path().join("c.wacz"), &o).is_err());
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso_date("20140126200624"), "2014-01-26T20:06:24Z");
        assert_eq!(iso_date("-"), "-");
    }

    #[test]
    fn cdxj_lines() {
        let l = CdxjLine::parse(
            b"com,example)/ 20140126200624 {\"url\": \"http://example.com/\", \"offset\": \"10\", \"filename\": \"a.warc.gz\"}\n",
        )
        .unwrap();
        assert_eq!(l.offset, 10);
        assert_eq!(l.filename, "a.warc.gz");
        assert!(CdxjLine::parse(b"com,example)/ 2014 {}").is_none());
        assert!(CdxjLine::parse(b"garbage").is_none());
    }
}
