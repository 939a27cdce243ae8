//! The archive files inside a WACZ, read in place: the binding's one home
//! for opening a `FILE.wacz`. `ArchiveIterator` reads them one after the
//! other as one record source ([`WaczSource`]); `scan`, `check` and
//! `index` read each as the file it is ([`archive_files`],
//! [`ArchiveFile::open`]), named `FILE.wacz#archive/NAME` as the `warchest`
//! command names them.

use std::path::{Path, PathBuf};

use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest::warc::{ReaderOptions, RecordEnd};
use warchest::{Error, ErrorKind, Limits, Result, Warning};
use warchest_wacz::{Section, ZipEntry};

use crate::iter::{Next, RecordSource};

/// Whether `path` is read as a WACZ (by its extension, as the command
/// line and `ArchiveIterator` decide).
pub(crate) fn is_wacz(path: &Path) -> bool {
    warchest_wacz::is_wacz(path)
}

/// An archive file stored in a WACZ.
pub(crate) struct ArchiveFile {
    /// `FILE.wacz#archive/NAME`, the name the command line gives it: what
    /// rows, warnings and errors name.
    pub(crate) name: String,
    wacz: PathBuf,
    entry: ZipEntry,
}

impl ArchiveFile {
    /// A reader of its records, read where they lie in the ZIP (offsets its
    /// own); errors name it.
    ///
    /// # Errors
    /// The WACZ cannot be opened, or the file's first bytes cannot be read.
    pub(crate) fn open(&self, opts: ReaderOptions) -> Result<Reader<Decoder<Section>>> {
        let mut opts = opts.file(&self.name);
        // The decoding threads read a file of their own: paths only.
        opts.decoder.threads = 1;
        let section = self.section()?;
        let src = Decoder::new_seekable(section, opts.decoder.clone())
            .map_err(|e| Error::from(e).in_file(Path::new(&self.name)))?;
        Reader::from_source(src, opts)
    }

    /// Its bytes, a window on the ZIP file, read as the file they are
    /// (what `validate` reads).
    ///
    /// # Errors
    /// The WACZ cannot be opened.
    pub(crate) fn section(&self) -> Result<Section> {
        warchest_wacz::open_entry(&self.wacz, &self.entry)
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
    if entries.is_empty() {
        return Err(Error::new(ErrorKind::Usage(
            "a WACZ with no archive file (nothing under archive/)".into(),
        ))
        .in_file(path));
    }
    let shown = path.to_string_lossy();
    Ok(entries
        .into_iter()
        .map(|entry| ArchiveFile {
            name: format!("{shown}#{}", entry.name),
            wacz: path.to_path_buf(),
            entry,
        })
        .collect())
}

/// The WACZ's archive files (`archive/...`, stored in the ZIP), each read
/// as the file it is, offsets its own.
pub(crate) struct WaczSource {
    files: std::vec::IntoIter<ArchiveFile>,
    current: Option<Reader<Decoder<Section>>>,
    opts: ReaderOptions,
    /// Warnings of archive files read to their end, not yet drained: they
    /// would go with their reader otherwise.
    finished: Vec<Warning>,
}

impl WaczSource {
    /// Lists the archive files of the WACZ at `path`.
    ///
    /// # Errors
    /// As [`archive_files`].
    pub(crate) fn open(path: &Path, opts: ReaderOptions) -> Result<WaczSource> {
        Ok(WaczSource {
            files: archive_files(path)?.into_iter(),
            current: None,
            opts,
            finished: Vec::new(),
        })
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
