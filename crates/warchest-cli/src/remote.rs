//! Archives named by URL (`s3://`, `gs://`, `az://`, `http(s)://`): the
//! command line's side of `warchest-remote`, behind the `remote` feature.
//! Without it, a URL is refused with a message that says so.

use std::io;

/// Whether `name` is a URL rather than a path.
pub fn is_remote(name: &str) -> bool {
    #[cfg(feature = "remote")]
    {
        warchest_remote::is_remote(name)
    }
    #[cfg(not(feature = "remote"))]
    {
        [
            "s3://", "gs://", "az://", "azure://", "abfs://", "abfss://", "http://", "https://",
        ]
        .iter()
        .any(|p| name.starts_with(p))
    }
}

#[cfg(not(feature = "remote"))]
fn unsupported(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{name}: this warchest was built without remote archives (feature `remote`)"),
    )
}

/// The object opened for reading.
#[cfg(feature = "remote")]
pub type File = warchest_remote::RemoteFile;

/// Opens the object at `url` (its size from the answer to its first range
/// request, or a HEAD).
#[cfg(feature = "remote")]
pub fn open(url: &str) -> io::Result<File> {
    warchest_remote::open(url)
}

/// Opens the object at `url` for reading at offsets by several threads
/// (one range request per block, the first one's answer giving its size;
/// a HEAD when that answer does not); `None` when its server answers no
/// byte ranges, found by reading the first block (which a decoder reads
/// first anyway: it is kept; a server that answered the first block's
/// request with the whole object has it kept as that block's error). A
/// sequential read then streams the object ([`open`] does) instead.
#[cfg(feature = "remote")]
pub fn open_blocks(url: &str) -> io::Result<Option<warchest_remote::RemoteBlocks>> {
    let mut b = warchest_remote::open_blocks(url)?;
    let mut first = [0u8; 1];
    match warchest::io::ReadAt::read_at(&b, &mut first, 0) {
        Err(e)
            if warchest_remote::remote_error(&e)
                .is_some_and(|r| *r.problem() == warchest_remote::Problem::NoRanges) =>
        {
            // Streamed instead: no stats line for blocks not read.
            b.set_stats(false);
            Ok(None)
        }
        _ => Ok(Some(b)),
    }
}

/// Prints the stats line (`WARCHEST_REMOTE_STATS`) of each object read at
/// offsets whose line is not printed yet: called when the command is over,
/// as a decoding pool thread may hold an object until the process exits.
pub fn print_stats() {
    #[cfg(feature = "remote")]
    warchest_remote::print_stats();
}

/// [`open_blocks`] as the format crate's positional-read source (without
/// the `remote` feature: the error that says so).
pub fn open_read_at(url: &str) -> io::Result<Option<std::sync::Arc<dyn warchest::io::ReadAt>>> {
    #[cfg(feature = "remote")]
    {
        Ok(open_blocks(url)?.map(|b| std::sync::Arc::new(b) as _))
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(unsupported(url))
    }
}

/// The objects a URL names (a prefix or `*` glob lists several); a URL that
/// cannot be listed stays as it is, for opening to report.
pub fn expand(url: &str) -> Vec<String> {
    #[cfg(feature = "remote")]
    {
        match warchest_remote::list(url) {
            Ok(v) if !v.is_empty() => v.into_iter().map(|(u, _)| u).collect(),
            _ => vec![url.to_string()],
        }
    }
    #[cfg(not(feature = "remote"))]
    {
        vec![url.to_string()]
    }
}

/// The archive files of the WACZ object at `url`: its central directory
/// and local headers read in small ranges (`warchest_remote::open_small`,
/// as `serve` and the Python binding read them), once a run (a command
/// reads an object as it was when it began).
///
/// # Errors
/// The object cannot be read, is not a ZIP, or an archive file is
/// compressed in it.
pub fn wacz_archive_entries(url: &str) -> warchest::Result<Vec<warchest_wacz::ZipEntry>> {
    wacz_listing(url).map(|(_, entries)| entries)
}

/// [`wacz_archive_entries`] and the object's size when it was listed: an
/// archive file is read where the directory of that version put it, so a
/// WACZ replaced since (another size) is refused, not read at offsets its
/// new bytes do not keep.
///
/// # Errors
/// As [`wacz_archive_entries`].
pub fn wacz_listing(url: &str) -> warchest::Result<(u64, Vec<warchest_wacz::ZipEntry>)> {
    let name = std::path::Path::new(url);
    #[cfg(feature = "remote")]
    {
        type Listed = (String, u64, Vec<warchest_wacz::ZipEntry>);
        // Listed once a run: each archive file opened, on each thread,
        // would list the WACZ again (a HEAD and a few ranges each).
        static LISTED: std::sync::Mutex<Vec<Listed>> = std::sync::Mutex::new(Vec::new());
        let listed = |l: &[Listed]| {
            l.iter()
                .find(|(u, _, _)| u == url)
                .map(|(_, size, e)| (*size, e.clone()))
        };
        if let Some(e) = listed(&LISTED.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(e);
        }
        let f = warchest_remote::open_small(url, None)
            .map_err(|e| warchest::Error::from(e).in_file(name))?;
        let size = f.size();
        let entries = warchest_wacz::archive_entries_of(warchest_wacz::entries_of(f, name)?, name)?;
        LISTED.lock().unwrap_or_else(|e| e.into_inner()).push((
            url.to_string(),
            size,
            entries.clone(),
        ));
        Ok((size, entries))
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(warchest::Error::from(unsupported(url)).in_file(name))
    }
}

/// A plain stream over the object at `url`.
pub fn open_stream(url: &str) -> io::Result<Box<dyn io::Read + Send>> {
    #[cfg(feature = "remote")]
    {
        Ok(Box::new(warchest_remote::open(url)?))
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(unsupported(url))
    }
}

/// A seekable reader over the object at `url`.
pub trait ReadSeek: io::Read + io::Seek + Send {}
impl<T: io::Read + io::Seek + Send> ReadSeek for T {}

/// Opens `url` as a seekable stream (ranges, the first one's answer giving
/// its size).
pub fn open_seekable(url: &str) -> io::Result<Box<dyn ReadSeek>> {
    #[cfg(feature = "remote")]
    {
        Ok(Box::new(warchest_remote::open(url)?))
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(unsupported(url))
    }
}

/// A stream over bytes `offset..offset + len` of `url`: one request.
pub fn open_range(url: &str, offset: u64, len: u64) -> io::Result<Box<dyn io::Read + Send>> {
    #[cfg(feature = "remote")]
    {
        Ok(Box::new(warchest_remote::open_range(url, offset, len)?))
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (offset, len);
        Err(unsupported(url))
    }
}

/// The object's size (one HEAD request).
pub fn size(url: &str) -> io::Result<u64> {
    #[cfg(feature = "remote")]
    {
        warchest_remote::size(url)
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(unsupported(url))
    }
}

/// An object being written: it appears only on [`Writer::finish`]; dropped
/// unfinished, nothing appears.
pub struct Writer {
    #[cfg(feature = "remote")]
    inner: warchest_remote::RemoteWriter,
}

impl Writer {
    /// Starts writing `url`.
    pub fn create(url: &str) -> io::Result<Writer> {
        #[cfg(feature = "remote")]
        {
            Ok(Writer {
                inner: warchest_remote::create(url)?,
            })
        }
        #[cfg(not(feature = "remote"))]
        {
            Err(unsupported(url))
        }
    }

    /// Completes the object.
    pub fn finish(self) -> io::Result<()> {
        #[cfg(feature = "remote")]
        {
            self.inner.finish()
        }
        #[cfg(not(feature = "remote"))]
        {
            Ok(())
        }
    }
}

impl io::Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        #[cfg(feature = "remote")]
        {
            self.inner.write(buf)
        }
        #[cfg(not(feature = "remote"))]
        {
            Ok(buf.len())
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
