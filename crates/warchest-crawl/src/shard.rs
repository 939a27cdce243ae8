//! Several crawlers on one crawl: `shard = "K/N"`.
//!
//! Hosts are split by a hash of their SURT host (FNV-1a, stable across
//! machines and builds), so every URL of a host goes to one crawler, which
//! alone keeps its politeness clock and robots.txt. The crawlers share a
//! hand-off prefix: a directory every crawler can write (a shared file
//! system), or an object store prefix (`s3://bucket/prefix`, through
//! warchest-remote; feature `remote`). Under it:
//!
//! - `to-J/from-K/SEQ.jsonl`: a batch of URIs crawler K found for
//!   crawler J, one JSON object a line. Each batch is a new object,
//!   written whole (a rename, or one PUT) and never changed: an object
//!   store has no append. SEQ counts K's batches to J from 1, with no gap
//!   (written one at a time, the next number found by listing on start).
//! - `status/shard-K.json`: K's state (`busy`, `idle` or `ended`) with the
//!   batches it has sent to and read from every other shard.
//!
//! Finishing together (a counting termination check): a crawler with no
//! queued or in-flight work first reads its inbox; finding nothing, it
//! publishes `idle` with its counts and reads every status. The crawl is
//! done when all N crawlers are `idle` (or `ended`: stopped by a budget)
//! and for every pair the batches K sent to J equal those J has read from
//! K. A crawler publishes `busy` *before* it reads new batches, so an
//! `idle` status is never older than the crawler's idleness; a batch
//! written by a busy crawler is counted in its next `idle` status before
//! the receiver's count can include it. So when the check passes, no
//! crawler holds work and no batch is unread, and that cannot change:
//! every crawler sees the same and exits 0 on its own. docs/crawl.md
//! ("Several machines") gives the argument.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use url::Url;

use crate::uri::CrawlUri;

/// The SURT host of `url` (`org,example,www` style, as CDXJ keys write it).
pub fn surt_host(url: &Url) -> String {
    let key = warchest_index::surt::url_key(url.as_str());
    key.split(')').next().unwrap_or("").to_string()
}

/// The shard (1..=n) of `url`'s host.
pub fn shard_of(url: &Url, n: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in surt_host(url).bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % n.max(1) as u64) as u32 + 1
}

/// Where the shards' batches and statuses live.
#[derive(Debug, Clone)]
pub enum Store {
    /// A directory (on a file system every crawler mounts).
    Dir(PathBuf),
    /// An object store prefix, ending with `/`.
    #[cfg(feature = "remote")]
    Remote(String),
}

impl Store {
    /// The store for `handoff` (a directory, or an object store URL), or
    /// `DIR/handoff` when none is given.
    ///
    /// # Errors
    /// A URL given to a build without the `remote` feature.
    pub fn new(dir: &Path, handoff: Option<&Path>) -> io::Result<Store> {
        let Some(h) = handoff else {
            return Ok(Store::Dir(dir.join("handoff")));
        };
        let s = h.to_string_lossy();
        if s.contains("://") {
            #[cfg(feature = "remote")]
            {
                let mut p = s.into_owned();
                if !p.ends_with('/') {
                    p.push('/');
                }
                return Ok(Store::Remote(p));
            }
            #[cfg(not(feature = "remote"))]
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("handoff {s}: built without the `remote` feature"),
            ));
        }
        Ok(Store::Dir(h.to_path_buf()))
    }

    /// Writes `rel` whole: after a kill it appears complete or not at all
    /// (a directory's file is renamed into place, not synced: after a
    /// power loss it may be empty or missing, docs/crawl.md).
    fn put(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        match self {
            Store::Dir(d) => {
                let p = d.join(rel);
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let tmp = p.with_extension(format!("tmp{}", std::process::id()));
                // Renamed whole, not synced: a batch goes out for nearly
                // every page fetched, under the hand-off's lock, and two
                // syncs each would hold every worker behind the disk. A
                // kill loses nothing (the page cache keeps the file); a
                // power loss may lose the last batches, as the pages
                // fetched since the last checkpoint are lost anyway.
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, &p)
            }
            #[cfg(feature = "remote")]
            Store::Remote(prefix) => {
                let mut w = warchest_remote::create(&format!("{prefix}{rel}"))?;
                io::Write::write_all(&mut w, bytes)?;
                w.finish()
            }
        }
    }

    /// The names directly under `rel/` (`rel` has no trailing slash), with
    /// their sizes; none when it does not exist.
    fn list(&self, rel: &str) -> io::Result<Vec<(String, u64)>> {
        match self {
            Store::Dir(d) => {
                let rd = match std::fs::read_dir(d.join(rel)) {
                    Ok(rd) => rd,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(e),
                };
                let mut out = Vec::new();
                for e in rd {
                    let e = e?;
                    let len = e.metadata()?.len();
                    out.push((e.file_name().to_string_lossy().into_owned(), len));
                }
                Ok(out)
            }
            #[cfg(feature = "remote")]
            Store::Remote(prefix) => {
                let base = format!("{prefix}{rel}/");
                Ok(warchest_remote::list(&base)?
                    .into_iter()
                    .filter_map(|(u, n)| {
                        let name = u.strip_prefix(&base)?;
                        (!name.contains('/')).then(|| (name.to_string(), n))
                    })
                    .collect())
            }
        }
    }

    /// The bytes of `rel`, `len` long (as listed).
    fn get(&self, rel: &str, len: u64) -> io::Result<Vec<u8>> {
        match self {
            Store::Dir(d) => {
                // A file is read to its end (the length is for ranges).
                let _ = len;
                std::fs::read(d.join(rel))
            }
            #[cfg(feature = "remote")]
            Store::Remote(prefix) => {
                if len == 0 {
                    return Ok(Vec::new());
                }
                Ok(warchest_remote::get_range(&format!("{prefix}{rel}"), 0, len)?.to_vec())
            }
        }
    }

    /// Where `rel` is, for messages.
    fn show(&self, rel: &str) -> String {
        match self {
            Store::Dir(d) => d.join(rel).display().to_string(),
            #[cfg(feature = "remote")]
            Store::Remote(prefix) => format!("{prefix}{rel}"),
        }
    }
}

/// A crawler's state as the others see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Holding work, or about to read batches.
    #[default]
    Busy,
    /// No queued or in-flight work, every batch seen read.
    Idle,
    /// Stopped by a budget: it reads no more batches.
    Ended,
}

/// `status/shard-K.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Status {
    /// K.
    pub shard: u32,
    /// N.
    pub of: u32,
    /// The state.
    pub state: State,
    /// Batches written to each shard.
    pub sent: BTreeMap<u32, u64>,
    /// Batches read from each shard.
    pub received: BTreeMap<u32, u64>,
}

/// Whether `all` (every shard's status) says the whole crawl is done: all
/// N present and idle or ended, and every batch sent to an idle shard read.
pub fn all_done(all: &[Status], n: u32) -> bool {
    let by: BTreeMap<u32, &Status> = all.iter().map(|s| (s.shard, s)).collect();
    if (1..=n).any(|k| by.get(&k).is_none_or(|s| s.state == State::Busy)) {
        return false;
    }
    by.values().all(|from| {
        from.sent.iter().all(|(to, &sent)| {
            by.get(to).is_none_or(|t| {
                t.state == State::Ended || t.received.get(&from.shard).copied().unwrap_or(0) == sent
            })
        })
    })
}

fn batch_name(seq: u64) -> String {
    format!("{seq:010}.jsonl")
}

fn batch_seq(name: &str) -> Option<u64> {
    let n = name.strip_suffix(".jsonl")?;
    (n.len() == 10 && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| n.parse().ok())
        .flatten()
}

/// How often a crawler with nothing to do looks at the others.
const CHECK_EVERY: Duration = Duration::from_millis(200);

struct Counters {
    sent: BTreeMap<u32, u64>,
    received: BTreeMap<u32, u64>,
    /// The status last written.
    published: Option<Status>,
    last_check: Option<Instant>,
}

/// One crawler's side of the hand-off: sending, reading, the status and
/// the termination check. Its methods are serialized by one lock.
pub struct Handoff {
    store: Store,
    me: u32,
    n: u32,
    /// `handoff-read.json` in the crawl directory: batches read per shard.
    read_state: PathBuf,
    c: Mutex<Counters>,
}

impl Handoff {
    /// Opens shard `me` of `n` on `store`: the batches sent so far are
    /// counted from the store, those read from `DIR/handoff-read.json`.
    /// Publishes `busy`.
    ///
    /// # Errors
    /// The store cannot be listed or written.
    pub fn open(dir: &Path, store: Store, (me, n): (u32, u32)) -> io::Result<Handoff> {
        let read_state = dir.join("handoff-read.json");
        // Written whole (a rename), so anything but a missing file is an
        // error to name, not a reason to read every batch again unsaid.
        let received: BTreeMap<u32, u64> = match std::fs::read(&read_state) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", read_state.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{}: {e}", read_state.display()),
                ));
            }
        };
        let mut sent = BTreeMap::new();
        for to in (1..=n).filter(|&j| j != me) {
            let last = store
                .list(&format!("to-{to}/from-{me}"))?
                .iter()
                .filter_map(|(name, _)| batch_seq(name))
                .max()
                .unwrap_or(0);
            sent.insert(to, last);
        }
        let h = Handoff {
            store,
            me,
            n,
            read_state,
            c: Mutex::new(Counters {
                sent,
                received,
                published: None,
                last_check: None,
            }),
        };
        let mut c = h.lock();
        h.publish(&mut c, State::Busy)?;
        drop(c);
        Ok(h)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.c.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes this crawler's status, unless it is the one last written.
    fn publish(&self, c: &mut Counters, state: State) -> io::Result<()> {
        let s = Status {
            shard: self.me,
            of: self.n,
            state,
            sent: c.sent.clone(),
            received: c.received.clone(),
        };
        if c.published.as_ref() == Some(&s) {
            return Ok(());
        }
        let body = serde_json::to_vec(&s).map_err(io::Error::other)?;
        self.store
            .put(&format!("status/shard-{}.json", self.me), &body)?;
        c.published = Some(s);
        Ok(())
    }

    /// Sends `uris` (each of another shard) to their shards, one batch per
    /// shard.
    ///
    /// # Errors
    /// A batch cannot be written.
    pub fn send(&self, uris: &[CrawlUri]) -> io::Result<()> {
        if uris.is_empty() {
            return Ok(());
        }
        let mut by: BTreeMap<u32, String> = BTreeMap::new();
        for u in uris {
            let line = serde_json::json!({
                "url": u.url.as_str(),
                "hops": u.hops,
                "via": u.via.as_ref().map(|v| v.as_str()),
                "seed": u.seed,
            });
            let b = by.entry(shard_of(&u.url, self.n)).or_default();
            b.push_str(&line.to_string());
            b.push('\n');
        }
        let mut c = self.lock();
        for (to, text) in by {
            let seq = c.sent.get(&to).copied().unwrap_or(0) + 1;
            let rel = format!("to-{to}/from-{}/{}", self.me, batch_name(seq));
            self.store
                .put(&rel, text.as_bytes())
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.store.show(&rel))))?;
            c.sent.insert(to, seq);
        }
        Ok(())
    }

    /// Reads the batches not read yet and hands their URIs to `queue`
    /// (which must have stored them when it returns `Ok`); returns how
    /// many URIs were read.
    ///
    /// # Errors
    /// The store cannot be read, or `queue` failed (nothing is counted
    /// read then: the batches are read again).
    pub fn receive<E: From<io::Error>>(
        &self,
        queue: impl FnMut(&[CrawlUri]) -> Result<(), E>,
    ) -> Result<usize, E> {
        let mut c = self.lock();
        self.receive_in(&mut c, queue)
    }

    fn receive_in<E: From<io::Error>>(
        &self,
        c: &mut Counters,
        mut queue: impl FnMut(&[CrawlUri]) -> Result<(), E>,
    ) -> Result<usize, E> {
        if c.published
            .as_ref()
            .is_some_and(|s| s.state == State::Ended)
        {
            return Ok(0);
        }
        let mut new: Vec<(u32, u64, String, u64)> = Vec::new();
        for from in (1..=self.n).filter(|&k| k != self.me) {
            let dir = format!("to-{}/from-{from}", self.me);
            let mut got: Vec<(u64, u64)> = self
                .store
                .list(&dir)?
                .iter()
                .filter_map(|(name, len)| Some((batch_seq(name)?, *len)))
                .collect();
            got.sort();
            let mut next = c.received.get(&from).copied().unwrap_or(0) + 1;
            for (seq, len) in got {
                // In order, without a gap (a sender writes one at a time).
                if seq < next {
                    continue;
                }
                if seq > next {
                    break;
                }
                new.push((from, seq, format!("{dir}/{}", batch_name(seq)), len));
                next += 1;
            }
        }
        if new.is_empty() {
            return Ok(0);
        }
        // Busy before the batches are taken: an idle status is never stale.
        self.publish(c, State::Busy)?;
        let mut uris = Vec::new();
        for (_, _, rel, len) in &new {
            let text = self.store.get(rel, *len)?;
            for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
                    tracing::warn!("{}: a line that is not JSON, skipped", self.store.show(rel));
                    continue;
                };
                let Some(url) = v["url"].as_str().and_then(|u| Url::parse(u).ok()) else {
                    tracing::warn!("{}: a line with no URL, skipped", self.store.show(rel));
                    continue;
                };
                uris.push(CrawlUri {
                    url,
                    hops: v["hops"].as_str().unwrap_or("").to_string(),
                    via: v["via"].as_str().and_then(|u| Url::parse(u).ok()),
                    seed: v["seed"].as_u64().unwrap_or(0) as u32,
                    tries: 0,
                });
            }
        }
        queue(&uris)?;
        for (from, seq, _, _) in &new {
            c.received.insert(*from, *seq);
        }
        let tmp = self.read_state.with_extension("tmp");
        let state = serde_json::to_vec(&c.received).map_err(io::Error::other)?;
        warchest::write::atomic::write_whole(&self.read_state, &tmp, &state)
            .map_err(io::Error::from)?;
        Ok(uris.len())
    }

    /// Called when this crawler has no queued or in-flight work: reads the
    /// inbox, publishes `idle` and checks whether every crawler is done.
    /// `quiet` says whether the crawler still has nothing to do (checked
    /// under the lock that `receive` takes). At most once per 200 ms;
    /// false in between.
    ///
    /// # Errors
    /// The store cannot be read or written, or `queue` failed.
    pub fn try_finish<E: From<io::Error>>(
        &self,
        quiet: impl Fn() -> bool,
        queue: impl FnMut(&[CrawlUri]) -> Result<(), E>,
    ) -> Result<bool, E> {
        let mut c = self.lock();
        if c.last_check.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return Ok(false);
        }
        c.last_check = Some(Instant::now());
        if !quiet() || self.receive_in(&mut c, queue)? > 0 {
            return Ok(false);
        }
        self.publish(&mut c, State::Idle)?;
        Ok(all_done(&self.statuses()?, self.n))
    }

    /// Publishes `ended`: this crawler stopped on a budget and reads no
    /// more; the others finish without it.
    ///
    /// # Errors
    /// The status cannot be written.
    pub fn end(&self) -> io::Result<()> {
        let mut c = self.lock();
        self.publish(&mut c, State::Ended)
    }

    /// Every status written so far.
    ///
    /// # Errors
    /// The store cannot be read; a status that is not JSON.
    pub fn statuses(&self) -> io::Result<Vec<Status>> {
        // A status rewritten between the listing and the read is read
        // torn (an object store's listed length is the old one): not JSON,
        // or a range past its end. Listed and read again, a few times.
        let mut tries = 0;
        let all = loop {
            match self.read_statuses() {
                Err(e) if tries < 5 => {
                    tries += 1;
                    tracing::debug!("hand-off statuses read again: {e}");
                    std::thread::sleep(Duration::from_millis(20 * tries));
                }
                r => break r?,
            }
        };
        if let Some(s) = all.iter().find(|s| s.of != self.n) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: shard {}/{} shares the hand-off with this {}/{}",
                    self.store.show(&format!("status/shard-{}.json", s.shard)),
                    s.shard,
                    s.of,
                    self.me,
                    self.n
                ),
            ));
        }
        Ok(all)
    }

    fn read_statuses(&self) -> io::Result<Vec<Status>> {
        let mut out = Vec::new();
        for (name, len) in self.store.list("status")? {
            if !(name.starts_with("shard-") && name.ends_with(".json")) {
                continue;
            }
            let rel = format!("status/{name}");
            let b = self.store.get(&rel, len)?;
            let s: Status = serde_json::from_slice(&b).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", self.store.show(&rel)),
                )
            })?;
            out.push(s);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_one_shard() {
        let a = Url::parse("http://www.example.org/a").unwrap();
        let b = Url::parse("https://www.example.org/b?x").unwrap();
        for n in 1..5 {
            assert_eq!(shard_of(&a, n), shard_of(&b, n));
            assert!((1..=n).contains(&shard_of(&a, n)));
        }
        let hosts: std::collections::HashSet<u32> = (0..50)
            .map(|i| shard_of(&Url::parse(&format!("http://h{i}.test/")).unwrap(), 2))
            .collect();
        assert_eq!(hosts.len(), 2, "hosts spread over both shards");
    }

    fn uri_for(shard: u32) -> CrawlUri {
        let u = (0..100)
            .map(|i| Url::parse(&format!("http://h{i}.test/x")).unwrap())
            .find(|u| shard_of(u, 2) == shard)
            .unwrap();
        CrawlUri::seed(Url::parse("http://h0.test/").unwrap(), 0).child(u, crate::uri::Hop::Link)
    }

    fn queue_into(v: &mut Vec<CrawlUri>) -> impl FnMut(&[CrawlUri]) -> io::Result<()> + '_ {
        |u| {
            v.extend_from_slice(u);
            Ok(())
        }
    }

    #[test]
    fn handed_off_uris_are_read_once_and_counted() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::Dir(d.path().join("h"));
        let a = Handoff::open(&d.path().join("a"), store.clone(), (1, 2)).unwrap();
        std::fs::create_dir_all(d.path().join("b")).unwrap();
        let b = Handoff::open(&d.path().join("b"), store.clone(), (2, 2)).unwrap();
        let uri = uri_for(2);
        a.send(std::slice::from_ref(&uri)).unwrap();
        let mut got = Vec::new();
        assert_eq!(b.receive(queue_into(&mut got)).unwrap(), 1);
        assert_eq!(got, vec![uri.clone()]);
        assert_eq!(b.receive(queue_into(&mut got)).unwrap(), 0);
        // Reopened, each side keeps its count: the next batch is number 2
        // and is the only one read.
        drop((a, b));
        let a = Handoff::open(&d.path().join("a"), store.clone(), (1, 2)).unwrap();
        let b = Handoff::open(&d.path().join("b"), store, (2, 2)).unwrap();
        a.send(std::slice::from_ref(&uri)).unwrap();
        assert!(d.path().join("h/to-2/from-1/0000000002.jsonl").exists());
        let mut again = Vec::new();
        assert_eq!(b.receive(queue_into(&mut again)).unwrap(), 1);
    }

    #[test]
    fn done_only_when_every_shard_is_idle_and_every_batch_read() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::Dir(d.path().join("h"));
        std::fs::create_dir_all(d.path().join("a")).unwrap();
        std::fs::create_dir_all(d.path().join("b")).unwrap();
        let a = Handoff::open(&d.path().join("a"), store.clone(), (1, 2)).unwrap();
        let none = |_: &[CrawlUri]| -> io::Result<()> { Ok(()) };
        // a, busy, hands a URI to b; then has nothing to do, but b has
        // not started: a waits for it.
        a.send(&[uri_for(2)]).unwrap();
        assert!(!a.try_finish(|| true, none).unwrap());
        let b = Handoff::open(&d.path().join("b"), store, (2, 2)).unwrap();
        std::thread::sleep(CHECK_EVERY);
        assert!(!a.try_finish(|| true, none).unwrap(), "b busy");
        assert!(!b.try_finish(|| false, none).unwrap(), "b not quiet");
        std::thread::sleep(CHECK_EVERY);
        let mut got = Vec::new();
        // b's check reads the batch first, and is busy again.
        assert!(!b.try_finish(|| true, queue_into(&mut got)).unwrap());
        assert_eq!(got.len(), 1);
        let st = a.statuses().unwrap();
        assert!(st.iter().any(|s| s.shard == 2 && s.state == State::Busy));
        assert!(
            st.iter()
                .any(|s| s.shard == 1 && s.state == State::Idle && s.sent[&2] == 1)
        );
        std::thread::sleep(CHECK_EVERY);
        assert!(!a.try_finish(|| true, none).unwrap(), "b still busy");
        std::thread::sleep(CHECK_EVERY);
        assert!(b.try_finish(|| true, none).unwrap());
        std::thread::sleep(CHECK_EVERY);
        assert!(a.try_finish(|| true, none).unwrap());
    }

    #[test]
    fn a_corrupt_read_state_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::Dir(d.path().join("h"));
        std::fs::write(d.path().join("handoff-read.json"), b"{not json").unwrap();
        let err = match Handoff::open(d.path(), store, (1, 2)) {
            Ok(_) => panic!("opened over a corrupt handoff-read.json"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("handoff-read.json"), "{err}");
    }

    #[test]
    fn a_bad_status_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::Dir(d.path().join("h"));
        let a = Handoff::open(d.path(), store, (1, 2)).unwrap();
        std::fs::write(d.path().join("h/status/shard-2.json"), b"{\"shard\": 2, ").unwrap();
        let e = a.statuses().unwrap_err().to_string();
        assert!(e.contains("shard-2.json"), "{e}");
        std::fs::write(
            d.path().join("h/status/shard-2.json"),
            br#"{"shard":2,"of":3,"state":"idle","sent":{},"received":{}}"#,
        )
        .unwrap();
        let e = a.statuses().unwrap_err().to_string();
        assert!(e.contains("shard 2/3 shares the hand-off"), "{e}");
    }

    #[test]
    fn the_count_check() {
        let st = |shard, state, sent: &[(u32, u64)], received: &[(u32, u64)]| Status {
            shard,
            of: 2,
            state,
            sent: sent.iter().copied().collect(),
            received: received.iter().copied().collect(),
        };
        let a = st(1, State::Idle, &[(2, 3)], &[(2, 1)]);
        let b = st(2, State::Idle, &[(1, 1)], &[(1, 3)]);
        assert!(all_done(&[a.clone(), b.clone()], 2));
        assert!(!all_done(std::slice::from_ref(&a), 2), "one missing");
        let b_behind = st(2, State::Idle, &[(1, 1)], &[(1, 2)]);
        assert!(
            !all_done(&[a.clone(), b_behind.clone()], 2),
            "a batch unread"
        );
        let b_ended = Status {
            state: State::Ended,
            ..b_behind
        };
        assert!(
            all_done(&[a.clone(), b_ended], 2),
            "an ended shard reads no more"
        );
        let a_ahead = st(1, State::Idle, &[(2, 3)], &[(2, 0)]);
        assert!(!all_done(&[a_ahead, b.clone()], 2), "b's batch unread by a");
        let b_busy = Status {
            state: State::Busy,
            ..b
        };
        assert!(!all_done(&[a, b_busy], 2));
    }
}
