//! The archive files inside a WACZ, read in place: the binding's one home
//! for opening a `FILE.wacz`, local or named by URL. `ArchiveIterator`
//! reads them one after the other as one record source ([`WaczSource`]);
//! `scan`, `check`, `index`, `validate` and `convert` read each as the
//! file it is ([`archive_files`], [`ArchiveFile::open`]), named
//! `FILE.wacz#archive/NAME` as the `warchest` command names them. A WACZ
//! named by URL (all six: [`archive_files_of`], [`archive_files_at`]) is
//! read by range requests, its central directory and each archive file
//! where it lies in the object, as `warchest serve` reads one.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest::warc::{ReaderOptions, RecordEnd};
use warchest::{Error, Limits, Result, Warning};
use warchest_wacz::{Section, ZipEntry};

use crate::io::Target;
use crate::iter::{Next, RecordSource};

/// Whether `path` (a path or a URL) is read as a WACZ (by its extension,
/// as the command line, `warchest serve` and `ArchiveIterator` decide).
pub(crate) fn is_wacz(path: &Path) -> bool {
    warchest_wacz::is_wacz(path)
}

/// The bytes of a WACZ, read and sought as a file: a local file, or an
/// object named by URL read by range requests.
pub(crate) enum Zip {
    File(File),
    /// Boxed: a remote file is several hundred bytes.
    #[cfg(feature = "remote")]
    Remote(Box<warchest_remote::RemoteFile>),
}

impl Read for Zip {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Zip::File(f) => f.read(buf),
            #[cfg(feature = "remote")]
            Zip::Remote(f) => f.read(buf),
        }
    }
}

impl Seek for Zip {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match self {
            Zip::File(f) => f.seek(to),
            #[cfg(feature = "remote")]
            Zip::Remote(f) => f.seek(to),
        }
    }
}

/// The bytes an archive file's records are read from: its window on the
/// WACZ, decoded.
pub(crate) type ArchiveSource = Decoder<Section<Zip>>;

/// Where a WACZ is.
#[derive(Clone)]
enum Wacz {
    Path(PathBuf),
    /// An object, and its size when listed (each archive file opened
    /// checks it: one HEAD).
    #[cfg(feature = "remote")]
    Url(String, u64),
}

impl Wacz {
    /// Its bytes, from the start.
    fn open(&self) -> Result<Zip> {
        match self {
            Wacz::Path(p) => File::open(p)
                .map(Zip::File)
                .map_err(|e| Error::from(e).in_file(p)),
            #[cfg(feature = "remote")]
            Wacz::Url(url, size) => {
                let loc = warchest_remote::Location::parse(url)?;
                let opts = warchest_remote::Options::from_env();
                // One HEAD: a WACZ replaced since it was listed is refused,
                // not read at the offsets its old directory gave.
                // (Its error names the URL.)
                let now = warchest_remote::size(url)?;
                if now != *size {
                    return Err(warchest_wacz::replaced_since_listed(
                        Path::new(url),
                        *size,
                        now,
                    ));
                }
                Ok(Zip::Remote(Box::new(
                    warchest_remote::RemoteFile::open_sized(loc, opts, now),
                )))
            }
        }
    }

    /// What errors name it.
    fn name(&self) -> &Path {
        match self {
            Wacz::Path(p) => p,
            #[cfg(feature = "remote")]
            Wacz::Url(url, _) => Path::new(url),
        }
    }
}

/// An archive file stored in a WACZ.
pub(crate) struct ArchiveFile {
    /// `FILE.wacz#archive/NAME` (`URL#archive/NAME` for a WACZ named by
    /// URL), the name the command line gives it: what rows, warnings and
    /// errors name.
    pub(crate) name: String,
    wacz: Wacz,
    entry: ZipEntry,
}

impl ArchiveFile {
    /// A reader of its records, read where they lie in the ZIP (offsets its
    /// own); errors name it.
    ///
    /// # Errors
    /// The WACZ cannot be opened, or the file's first bytes cannot be read.
    pub(crate) fn open(&self, opts: ReaderOptions) -> Result<Reader<ArchiveSource>> {
        let mut opts = opts.file(&self.name);
        // The decoding threads read a file of their own: paths only.
        opts.decoder.threads = 1;
        let section = self.section()?;
        let src = Decoder::new_seekable(section, opts.decoder.clone())
            .map_err(|e| Error::from(e).in_file(Path::new(&self.name)))?;
        Reader::from_source(src, opts)
    }

    /// Its size as stored in the ZIP (read in place: its own size).
    pub(crate) fn stored_size(&self) -> u64 {
        self.entry.compressed_size
    }

    /// Its bytes, a window on the ZIP, read as the file they are (what
    /// `validate` reads).
    ///
    /// # Errors
    /// The WACZ cannot be opened.
    pub(crate) fn section(&self) -> Result<Section<Zip>> {
        let zip = self.wacz.open()?;
        Section::new(zip, self.entry.data_start, self.entry.compressed_size)
            .map_err(|e| Error::from(e).in_file(self.wacz.name()))
    }
}

/// The archive files (`archive/...`) of the WACZ at `path`, in the ZIP's
/// order.
///
/// # Errors
/// The WACZ cannot be read (not a ZIP), an archive file is compressed in
/// the ZIP (it could not be read in place), or it has none: a WACZ with
/// nothing under `archive/` is refused, as the command line refuses it
/// (no archive read is not an empty archive).
pub(crate) fn archive_files(path: &Path) -> Result<Vec<ArchiveFile>> {
    let entries = warchest_wacz::archive_entries(path)?;
    named(entries, Wacz::Path(path.to_path_buf()))
}

/// [`archive_files`] of the WACZ object at `url`: its size (one HEAD),
/// then its central directory and each file's local header by range
/// requests (`warchest_wacz::entries_of` over the object read as a file,
/// the ZIP reading of a local WACZ). Each archive file is then read by
/// range where it lies, named `URL#archive/NAME`.
///
/// # Errors
/// The object cannot be read (missing, or on a server that answers no
/// byte ranges: a ZIP is read from its end), or as [`archive_files`].
#[cfg(feature = "remote")]
pub(crate) fn archive_files_at(url: &str) -> Result<Vec<ArchiveFile>> {
    let name = Path::new(url);
    let size = warchest_remote::size(url)?;
    // Small ranges: only the directory and the local headers are read.
    let f = warchest_remote::open_small(url, Some(size))?;
    let entries = warchest_wacz::entries_of(f, name)?;
    let entries = warchest_wacz::archive_entries_of(entries, name)?;
    named(entries, Wacz::Url(url.to_string(), size))
}

/// Whether `target` is read as a WACZ (by its extension), local or by
/// URL, or as one archive file of one (`FILE.wacz#archive/NAME`, the name
/// rows and warnings give it, as the command line reads such a name).
pub(crate) fn is_wacz_target(target: &Target) -> bool {
    is_member(target)
        || match target {
            Target::Path(p) => is_wacz(p),
            Target::Url(u) => is_wacz(Path::new(u)),
        }
}

/// Whether `target` names one archive file of a WACZ
/// (`FILE.wacz#archive/NAME`).
pub(crate) fn is_member(target: &Target) -> bool {
    member_of(target).is_some()
}

/// The WACZ and the archive file that `target` names when it is of the
/// form `FILE.wacz#ENTRY` (`URL.wacz#ENTRY`), split as the command line
/// splits it (`warchest_wacz::split_member_name`: not when a local file
/// of that very name exists).
fn member_of(target: &Target) -> Option<(Target, &str)> {
    match target {
        Target::Path(p) => {
            let (wacz, entry) = warchest_wacz::split_member_name(p.to_str()?)?;
            Some((Target::Path(PathBuf::from(wacz)), entry))
        }
        Target::Url(u) => {
            let (wacz, entry) = warchest_wacz::split_at_wacz(u)?;
            Some((Target::Url(wacz.to_string()), entry))
        }
    }
}

/// The archive files of the WACZ `target` names, local or by URL (as
/// [`archive_files`] and [`archive_files_at`] list them).
///
/// # Errors
/// As those; a URL in a build without the `remote` feature (which refuses
/// URLs before asking this).
pub(crate) fn archive_files_of(target: &Target) -> Result<Vec<ArchiveFile>> {
    // One archive file, named as rows name it: that one alone.
    if let Some((wacz, entry)) = member_of(target) {
        let name = match &wacz {
            Target::Path(p) => p.clone(),
            Target::Url(u) => PathBuf::from(u),
        };
        return archive_files_of(&wacz)?
            .into_iter()
            .find(|f| f.entry.name == entry)
            .map(|f| vec![f])
            .ok_or_else(|| {
                Error::new(warchest::ErrorKind::Usage(format!(
                    "no archive file {entry} in the WACZ"
                )))
                .in_file(name)
            });
    }
    match target {
        Target::Path(p) => archive_files(p),
        #[cfg(feature = "remote")]
        Target::Url(u) => archive_files_at(u),
        #[cfg(not(feature = "remote"))]
        Target::Url(u) => Err(Error::new(warchest::ErrorKind::Usage(format!(
            "{u}: this build of warchest reads local files only"
        )))),
    }
}

/// The archive files of `wacz`, `entries` its archive entries, named
/// `WACZ#archive/NAME`; none is an error.
fn named(entries: Vec<ZipEntry>, wacz: Wacz) -> Result<Vec<ArchiveFile>> {
    let entries = warchest_wacz::some_of(entries, wacz.name())?;
    let shown = wacz.name().to_string_lossy().into_owned();
    Ok(entries
        .into_iter()
        .map(|entry| ArchiveFile {
            name: format!("{shown}#{}", entry.name),
            wacz: wacz.clone(),
            entry,
        })
        .collect())
}

/// The WACZ's archive files (`archive/...`, stored in the ZIP), each read
/// as the file it is, offsets its own.
pub(crate) struct WaczSource {
    files: std::vec::IntoIter<ArchiveFile>,
    current: Option<Reader<ArchiveSource>>,
    opts: ReaderOptions,
    /// Warnings of archive files read to their end, not yet drained: they
    /// would go with their reader otherwise.
    finished: Vec<Warning>,
}

impl WaczSource {
    /// The archive files `files` (of [`archive_files`] or
    /// [`archive_files_at`]), read one after the other.
    pub(crate) fn new(files: Vec<ArchiveFile>, opts: ReaderOptions) -> WaczSource {
        WaczSource {
            files: files.into_iter(),
            current: None,
            opts,
            finished: Vec::new(),
        }
    }
}

impl RecordSource for WaczSource {
    fn next(&mut self, parse_http: bool, limits: &Limits) -> Result<Option<Next>> {
        loop {
            if let Some(r) = &mut self.current
                && let Some(n) = RecordSource::next(r, parse_http, limits)?
            {
                return Ok(Some(n));
            }
            if let Some(r) = &mut self.current {
                self.finished.append(&mut r.take_warnings());
            }
            let Some(f) = self.files.next() else {
                self.current = None;
                return Ok(None);
            };
            self.current = Some(f.open(self.opts.clone())?);
        }
    }

    fn read_block(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.current {
            Some(r) => RecordSource::read_block(r, buf),
            None => Ok(0),
        }
    }

    fn block_chunk(&mut self, take: &mut dyn FnMut(&[u8]) -> usize) -> std::io::Result<usize> {
        match &mut self.current {
            Some(r) => RecordSource::block_chunk(r, take),
            None => Ok(0),
        }
    }

    fn finish(&mut self) -> Result<Option<RecordEnd>> {
        match &mut self.current {
            Some(r) => RecordSource::finish(r),
            None => Ok(None),
        }
    }

    fn drain_warnings(&mut self, out: &mut Vec<Warning>) {
        out.append(&mut self.finished);
        if let Some(r) = &mut self.current {
            RecordSource::drain_warnings(r, out);
        }
    }
}
