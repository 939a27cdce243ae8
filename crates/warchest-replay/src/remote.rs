//! Collections whose files are objects named by URL (`s3://`, `gs://`,
//! `az://`, `http(s)://`): listed once, indexed by one sequential scan with
//! read-ahead, and each record then read with one range request of the
//! offset and length the index holds (feature `remote`, on
//! `warchest-remote`). Without the feature a URL is refused with a message
//! that says so.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;

/// Records up to this size are fetched whole before anything is served:
/// any fault (a cut object, a spent retry budget) is then an error page,
/// never a response cut short. Larger records are streamed from one
/// request (bounded memory); a fault past the retries cuts the response.
pub(crate) const FETCH_WHOLE: u64 = 4 << 20;

/// The bytes of records fetched whole and not yet served, all requests
/// together: without a bound, each thread of the blocking pool could hold
/// [`FETCH_WHOLE`] at once. `WARCHEST_SERVE_FETCH_BUDGET` (bytes) changes it.
pub(crate) const FETCH_BUDGET: u64 = 64 << 20;

/// How long a record waits for the budget before it is streamed instead.
pub(crate) const BUDGET_WAIT: Duration = Duration::from_secs(1);

/// A count of bytes held, bounded, shared by the threads that serve.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// Bytes taken from a [`Budget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    budget: &'static Budget,
    bytes: u64,
}

impl Budget {
    pub(crate) const fn new(limit: u64) -> Budget {
        Budget {
            limit,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The process's budget ([`FETCH_BUDGET`], or the environment's).
    pub(crate) fn global() -> &'static Budget {
        static B: OnceLock<Budget> = OnceLock::new();
        B.get_or_init(|| {
            let limit = match std::env::var("WARCHEST_SERVE_FETCH_BUDGET") {
                Ok(v) => v.trim().parse().unwrap_or_else(|_| {
                    tracing::warn!(
                        "WARCHEST_SERVE_FETCH_BUDGET={v:?} is not a number of bytes; \
                         {FETCH_BUDGET} used"
                    );
                    FETCH_BUDGET
                }),
                Err(_) => FETCH_BUDGET,
            };
            Budget::new(limit)
        })
    }

    /// `bytes` of the budget, waiting up to `wait` for them; `None` when
    /// they are not there in time (or never can be: more than the limit).
    pub(crate) fn take(&'static self, bytes: u64, wait: Duration) -> Option<Held> {
        if bytes > self.limit {
            return None;
        }
        let deadline = Instant::now() + wait;
        // A poisoned lock only means a holder panicked; the count is whole.
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used + bytes > self.limit {
            let left = deadline.checked_duration_since(Instant::now())?;
            used = self
                .freed
                .wait_timeout(used, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *used += bytes;
        Some(Held {
            budget: self,
            bytes,
        })
    }

    #[cfg(test)]
    fn used(&self) -> u64 {
        *self.used.lock().unwrap()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(self.bytes);
        self.budget.freed.notify_all();
    }
}

/// Whether `name` is a URL rather than a path.
pub fn is_remote(name: &str) -> bool {
    #[cfg(feature = "remote")]
    {
        warchest_remote::is_remote(name)
    }
    #[cfg(not(feature = "remote"))]
    {
        let lower = name.to_ascii_lowercase();
        [
            "s3://", "s3a://", "gs://", "az://", "azure://", "abfs://", "abfss://", "http://",
            "https://",
        ]
        .iter()
        .any(|p| lower.starts_with(p))
    }
}

#[cfg(not(feature = "remote"))]
fn unsupported(url: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{url}: built without remote archives (feature `remote` of warchest-replay)"),
    )
}

/// The objects `url` names with their sizes and versions (ETag or
/// Last-Modified, when the store gives one), sorted: every object under a
/// prefix ending in `/`, those a `*` glob in the last component matches,
/// or the object itself.
pub(crate) fn list(url: &str) -> io::Result<Vec<(String, u64, Option<String>)>> {
    #[cfg(feature = "remote")]
    {
        Ok(warchest_remote::list_versions(url)?
            .into_iter()
            .map(|l| (l.url, l.size, l.version))
            .collect())
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(unsupported(url))
    }
}

/// Whether the object `url` is one the glob URL `glob` names
/// (`warchest_remote::glob_names`); without the `remote` feature no
/// object is synced, so none is.
pub(crate) fn glob_names(glob: &str, url: &str) -> bool {
    #[cfg(feature = "remote")]
    {
        warchest_remote::glob_names(glob, url)
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (glob, url);
        false
    }
}

/// Bytes fetched with one request, read and sought as the range
/// `start..start + bytes.len()` of the object (offsets are the object's, or
/// a WACZ member's: from the member's start).
#[derive(Debug)]
pub struct Fetched {
    bytes: Bytes,
    start: u64,
    pos: u64,
    /// Its share of the fetch budget, given back when it is dropped.
    _held: Option<Held>,
}

impl Fetched {
    /// The range `offset..offset + len` of the bytes that start at `base`
    /// in the object at `url` (0, or a WACZ member's start), read with
    /// offsets from `base` (one GET, no HEAD; faults retried within the
    /// budget), holding `held`.
    pub(crate) fn get(
        url: &str,
        base: u64,
        offset: u64,
        len: u64,
        held: Option<Held>,
    ) -> io::Result<Fetched> {
        #[cfg(feature = "remote")]
        {
            Ok(Fetched {
                bytes: warchest_remote::get_range(url, base.saturating_add(offset), len)?,
                start: offset,
                pos: offset,
                _held: held,
            })
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = (base, offset, len, held);
            Err(unsupported(url))
        }
    }
}

/// The object at `url` read from its start (ranges with read-ahead, the
/// first one's answer giving its size): an index given by URL.
pub(crate) fn read_object(url: &str) -> io::Result<Box<dyn Read + Send>> {
    #[cfg(feature = "remote")]
    {
        Ok(Box::new(warchest_remote::open(url)?))
    }
    #[cfg(not(feature = "remote"))]
    {
        Err(unsupported(url))
    }
}

impl Fetched {
    /// The object's offset after the last byte fetched.
    pub fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }
}

impl Read for Fetched {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let end = self.start + self.bytes.len() as u64;
        if self.pos >= end || out.is_empty() {
            return Ok(0);
        }
        let at = (self.pos - self.start) as usize;
        let n = out.len().min(self.bytes.len() - at);
        out[..n].copy_from_slice(&self.bytes[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Fetched {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let end = self.start + self.bytes.len() as u64;
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => end.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match target {
            Some(t) if t >= self.start && t <= end => {
                self.pos = t;
                Ok(t)
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("seek outside the range fetched ({}..{end})", self.start),
            )),
        }
    }
}

/// One range of an object streamed from one request (a fault resumes
/// where it stopped, within the retry budget); it can be "sought" only to
/// where it is.
pub struct Streamed {
    #[cfg(feature = "remote")]
    inner: warchest_remote::RangeReader,
    pos: u64,
    end: u64,
}

impl Streamed {
    /// The range `offset..offset + len` of the bytes that start at `base`
    /// in the object at `url`, read with offsets from `base`; the request
    /// is made at the first read.
    pub(crate) fn open(url: &str, base: u64, offset: u64, len: u64) -> io::Result<Streamed> {
        #[cfg(feature = "remote")]
        {
            Ok(Streamed {
                inner: warchest_remote::open_range(url, base.saturating_add(offset), len)?,
                pos: offset,
                end: offset.saturating_add(len),
            })
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = (base, offset, len);
            Err(unsupported(url))
        }
    }
}

impl Streamed {
    /// The object's offset after the range's last byte.
    pub fn end(&self) -> u64 {
        self.end
    }
}

impl std::fmt::Debug for Streamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streamed").field("pos", &self.pos).finish()
    }
}

impl Read for Streamed {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        #[cfg(feature = "remote")]
        {
            let n = self.inner.read(out)?;
            self.pos += n as u64;
            Ok(n)
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = out;
            Ok(0)
        }
    }
}

impl Seek for Streamed {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(_) => None,
        };
        if target == Some(self.pos) {
            return Ok(self.pos);
        }
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a streamed range is read in order",
        ))
    }
}

/// An object read as a file of `size` bytes (known from the listing that
/// indexed it: no HEAD), positioned at `offset`. `scan`: a whole-file
/// read, with the default read-ahead (ranges doubling up to 16 MiB, the
/// next fetched while one is read); otherwise small first ranges, for
/// reading one record whose length is not known.
#[cfg(feature = "remote")]
pub(crate) fn object(
    url: &str,
    size: u64,
    offset: u64,
    scan: bool,
) -> io::Result<warchest_remote::RemoteFile> {
    let mut f = if scan {
        let loc = warchest_remote::Location::parse(url)?;
        warchest_remote::RemoteFile::open_sized(loc, warchest_remote::Options::from_env(), size)
    } else {
        warchest_remote::open_small(url, Some(size))?
    };
    f.seek(SeekFrom::Start(offset))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetched_bytes_read_and_seek_at_the_objects_offsets() {
        let mut f = Fetched {
            bytes: Bytes::from_static(b"abcdef"),
            start: 100,
            pos: 100,
            _held: None,
        };
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        assert_eq!(s, "abcdef");
        assert_eq!(f.seek(SeekFrom::Start(102)).unwrap(), 102);
        let mut b = [0u8; 2];
        f.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"cd");
        assert_eq!(f.seek(SeekFrom::End(0)).unwrap(), 106);
        assert_eq!(f.read(&mut b).unwrap(), 0);
        assert!(f.seek(SeekFrom::Start(99)).is_err());
        assert!(f.seek(SeekFrom::Start(107)).is_err());
    }

    #[test]
    fn the_budget_bounds_the_bytes_held_and_wakes_a_waiter() {
        static B: Budget = Budget::new(100);
        let a = B.take(60, Duration::ZERO).unwrap();
        assert_eq!(B.used(), 60);
        // Not there, and not coming in time.
        assert!(B.take(50, Duration::from_millis(20)).is_none());
        // More than the whole budget never is.
        assert!(B.take(101, Duration::from_secs(5)).is_none());
        let b = B.take(40, Duration::ZERO).unwrap();
        assert_eq!(B.used(), 100);
        // A waiter gets its bytes when a holder gives them back.
        let waiter = std::thread::spawn(|| B.take(30, Duration::from_secs(10)).map(|h| h.bytes));
        std::thread::sleep(Duration::from_millis(50));
        drop(a);
        assert_eq!(waiter.join().unwrap(), Some(30));
        drop(b);
        assert_eq!(B.used(), 0, "every byte given back");
    }

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_remote("s3://bucket/a.warc.gz"));
        assert!(is_remote("https://example.com/a.warc.gz"));
        assert!(!is_remote("/data/a.warc.gz"));
        assert!(!is_remote("crawl/s3.warc"));
    }
}
