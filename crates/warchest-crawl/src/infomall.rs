//! `format = infomall`: the crawl's responses as Web InfoMall records
//! (the format crate's writer), in rotating files named as the WARC files
//! are (Annex B: `PREFIX-TIMESTAMP-SERIAL-HOST.dat`), each written as
//! `NAME.open` and renamed when closed, so a killed run's file is closed
//! by the same recovery as a WARC file's.
//!
//! A record is `url` (the URL fetched), `origin` (the URL whose redirect
//! led to it), `date` (RFC 1123), `ip`, and the HTTP response as received,
//! zlib-compressed as Tianwang's crawlers stored it. The format has no
//! request, metadata, dns or revisit records: those are not written (the
//! crawl log keeps each URI's outlinks count, hops and digest).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use warchest::infomall::{Properties, Writer, format_date};
use warchest::warc::{DatePrecision, WarcDate};
use warchest::write::rotate::{file_name, hostname};

/// The file name extension (Tianwang's `page.dat`).
pub const EXT: &str = ".dat";

struct Open {
    path: PathBuf,
    open_path: PathBuf,
    w: Writer<BufWriter<File>>,
    /// A second handle of the file, for [`InfomallFiles::sync_data`].
    file: File,
}

struct Inner {
    cur: Option<Open>,
    serial: u64,
    closed: Vec<PathBuf>,
    /// An `fdatasync` failed: never retried (see
    /// [`InfomallFiles::sync_data`]).
    failed: bool,
}

/// Rotating Web InfoMall files.
pub struct InfomallFiles {
    dir: PathBuf,
    prefix: String,
    max_size: u64,
    inner: Mutex<Inner>,
}

/// One record's properties.
pub struct Capture<'a> {
    /// The URL fetched.
    pub url: &'a str,
    /// The URL that redirected to it.
    pub origin: Option<&'a str>,
    /// When it was fetched.
    pub date: time::OffsetDateTime,
    /// The server's address.
    pub ip: Option<std::net::IpAddr>,
}

/// [`warchest::write::sync_dir`]; a test can make it fail.
fn sync_dir(dir: &Path) -> warchest::Result<()> {
    #[cfg(test)]
    if tests::FAIL_DIR_SYNC.with(|f| f.get()) {
        return Err(warchest::Error::from(std::io::Error::other("injected")).in_file(dir));
    }
    warchest::write::sync_dir(dir)
}

fn lock_err() -> warchest::Error {
    warchest::Error::from(std::io::Error::other("a crawl thread panicked"))
}

impl InfomallFiles {
    /// Files in `dir`, named from `prefix`, serials from `first_serial`,
    /// each closed before it passes `max_size` bytes (a record larger than
    /// that has a file of its own). No file is made before a record.
    pub fn new(dir: &Path, prefix: &str, first_serial: u64, max_size: u64) -> InfomallFiles {
        InfomallFiles {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            max_size: max_size.max(1),
            inner: Mutex::new(Inner {
                cur: None,
                serial: first_serial,
                closed: Vec::new(),
                failed: false,
            }),
        }
    }

    /// Writes one record whose content is what `content` gives (`len`
    /// bytes: the rotation decides on it before compressing). Returns the
    /// file (its final name) and the record's offset in it, as crawl.log's
    /// extras name them.
    ///
    /// # Errors
    /// A property that cannot be written (a URL with a line break), I/O.
    pub fn write(
        &self,
        c: &Capture<'_>,
        content: &mut dyn Read,
        len: u64,
    ) -> warchest::Result<(PathBuf, u64)> {
        let date = WarcDate::from_datetime(c.date, DatePrecision::Second)
            .unwrap_or_else(|| WarcDate::now(DatePrecision::Second));
        let mut props = Properties::new(c.url.as_bytes(), format_date(&date).into_bytes());
        props.origin = c.origin.map(|o| o.as_bytes().to_vec());
        props.ip = Some(
            c.ip.map(|i| i.to_string())
                .unwrap_or_else(|| "unknown".into())
                .into_bytes(),
        );
        let mut g = self.inner.lock().map_err(|_| lock_err())?;
        if let Some(o) = &g.cur
            && o.w.position() > 0
            && o.w.position().saturating_add(len) > self.max_size
        {
            self.close(&mut g)?;
        }
        if g.cur.is_none() {
            let stamp = WarcDate::now(DatePrecision::Second).timestamp14();
            let host = hostname();
            // A name taken (same second, an earlier run) is not overwritten.
            let (path, open_path) = loop {
                let name = file_name(&self.prefix, &stamp, g.serial, 5, &host, EXT);
                g.serial += 1;
                let path = self.dir.join(&name);
                let open_path = self.dir.join(format!("{name}.open"));
                if !path.exists() && !open_path.exists() {
                    break (path, open_path);
                }
            };
            let f = File::create_new(&open_path)
                .map_err(|e| warchest::Error::from(e).in_file(&open_path))?;
            // The new name durable, as the WARC writer's (docs/crawl.md).
            sync_dir(&self.dir)?;
            let file = f
                .try_clone()
                .map_err(|e| warchest::Error::from(e).in_file(&open_path))?;
            g.cur = Some(Open {
                path,
                open_path,
                w: Writer::new(BufWriter::new(f)),
                file,
            });
        }
        let o = g.cur.as_mut().ok_or_else(lock_err)?;
        let offset =
            o.w.write(&props, content, true)
                .map_err(|e| e.in_file(&o.open_path))?;
        Ok((o.path.clone(), offset))
    }

    fn close(&self, g: &mut Inner) -> warchest::Result<()> {
        if let Some(o) = g.cur.take() {
            let mut out = o.w.finish()?;
            out.flush()?;
            out.get_ref()
                .sync_all()
                .map_err(|e| warchest::Error::from(e).in_file(&o.open_path))?;
            drop(out);
            std::fs::rename(&o.open_path, &o.path)
                .map_err(|e| warchest::Error::from(e).in_file(&o.open_path))?;
            // Listed before the directory's sync: a failed sync must not
            // leave a closed file unlisted (not indexed, not named).
            g.closed.push(o.path);
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Flushes the open file; returns the files closed so far.
    ///
    /// # Errors
    /// The write failed.
    pub fn flush(&self) -> warchest::Result<Vec<PathBuf>> {
        let mut g = self.inner.lock().map_err(|_| lock_err())?;
        if let Some(o) = g.cur.as_mut() {
            o.w.flush().map_err(|e| e.in_file(&o.open_path))?;
        }
        Ok(g.closed.clone())
    }

    /// Flushes the open file and syncs its data (`fdatasync`), the lock
    /// held only to flush and take a handle: every record written before
    /// the call survives a power loss (a crawl's checkpoint, which counts
    /// their URIs done, does this as it syncs the WARC files). A failed
    /// sync fails every later one (a later `fdatasync` may succeed
    /// although the pages the first failed to write are lost).
    ///
    /// # Errors
    /// The write or the sync failed, now or earlier.
    pub fn sync_data(&self) -> warchest::Result<()> {
        let (path, h) = {
            let mut g = self.inner.lock().map_err(|_| lock_err())?;
            if g.failed {
                return Err(warchest::Error::from(std::io::Error::other(
                    "an earlier sync of a Web InfoMall file failed",
                )));
            }
            let Some(o) = g.cur.as_mut() else {
                return Ok(());
            };
            o.w.flush().map_err(|e| e.in_file(&o.open_path))?;
            let h = o
                .file
                .try_clone()
                .map_err(|e| warchest::Error::from(e).in_file(&o.open_path))?;
            (o.open_path.clone(), h)
        };
        if let Err(e) = h.sync_data() {
            if let Ok(mut g) = self.inner.lock() {
                g.failed = true;
            }
            return Err(warchest::Error::from(e).in_file(&path));
        }
        #[cfg(test)]
        tests::SYNCS.with(|n| n.set(n.get() + 1));
        Ok(())
    }

    /// Whether a sync of [`InfomallFiles::sync_data`] failed.
    pub fn failed(&self) -> bool {
        self.inner.lock().map_or(true, |g| g.failed)
    }

    /// Closes the open file; returns every file written.
    ///
    /// # Errors
    /// Closing failed.
    pub fn finish(&self) -> warchest::Result<Vec<PathBuf>> {
        let mut g = self.inner.lock().map_err(|_| lock_err())?;
        self.close(&mut g)?;
        Ok(std::mem::take(&mut g.closed))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    thread_local! {
        /// While set, a directory sync fails on this thread.
        pub(super) static FAIL_DIR_SYNC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// Data syncs of an open file made by this thread.
        pub(crate) static SYNCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// A directory sync failing after a close's rename: the file, under
    /// its final name, is listed as closed all the same (so it is indexed
    /// and named in the error). It used to be left out.
    #[test]
    fn a_failed_directory_sync_after_the_rename_still_lists_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let im = InfomallFiles::new(dir.path(), "im", 0, 1 << 20);
        let c = Capture {
            url: "http://a.test/",
            origin: None,
            date: time::OffsetDateTime::now_utc(),
            ip: None,
        };
        let (path, _) = im
            .write(&c, &mut &b"HTTP/1.1 200 OK\r\n\r\nx"[..], 20)
            .unwrap();
        FAIL_DIR_SYNC.with(|f| f.set(true));
        let r = im.finish();
        FAIL_DIR_SYNC.with(|f| f.set(false));
        assert!(r.is_err());
        assert!(path.exists(), "renamed");
        assert_eq!(im.flush().unwrap(), [path], "listed as closed");
    }
}
