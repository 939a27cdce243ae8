//! The archive files inside a WACZ, read in place one after the other, as
//! one record source for `ArchiveIterator` (as the `warchest` command reads
//! `FILE.wacz`).

use std::path::{Path, PathBuf};

use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest::warc::{ReaderOptions, RecordEnd};
use warchest::{Limits, Result, Warning};
use warchest_wacz::{Section, ZipEntry};

use crate::iter::{Next, RecordSource};

/// The WACZ's archive files (`archive/...`, stored in the ZIP), each read
/// as the file it is, offsets its own.
pub(crate) struct WaczSource {
    path: PathBuf,
    entries: std::vec::IntoIter<ZipEntry>,
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
    /// The WACZ cannot be read, or an archive file in it is compressed in
    /// the ZIP (it could not be read in place).
    pub(crate) fn open(path: &Path, mut opts: ReaderOptions) -> Result<WaczSource> {
        let entries = warchest_wacz::archive_entries(path)?;
        // The decoding threads read a file of their own: paths only.
        opts.decoder.threads = 1;
        Ok(WaczSource {
            path: path.to_path_buf(),
            entries: entries.into_iter(),
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
            let Some(e) = self.entries.next() else {
                self.current = None;
                return Ok(None);
            };
            let section = warchest_wacz::open_entry(&self.path, &e)?;
            let src = Decoder::new_seekable(section, self.opts.decoder.clone())?;
            self.current = Some(Reader::from_source(src, self.opts.clone())?);
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
