//! SHA-1s of an uncompressed WARC file's records, computed on a thread
//! ahead of the one reading the records (`validate -j N` of a plain file).
//!
//! The reading thread of `validate` frames each record, feeds its block
//! to the digests and the probe, and hands it to the checking thread; on a
//! plain file the digests are most of its work, and the file's other cores
//! had nothing to do (a gzip file's members are hashed by the jobs that
//! inflate them: `DecoderOptions::member_digests`). Here a thread walks
//! the same file at offsets, reads each record's stored bytes whole and
//! hashes them ([`MemberDigests::of`]); the reading thread takes the
//! digests of the record it is at ([`Ahead::take`]) and hashes only what
//! came without them. A record the walker has not reached is hashed by
//! the reader, and a walker found behind the reader skips a few MiB past
//! it ([`GAP`]), so the two share the hashing whatever their speeds; the
//! one wait is the reader's for the record the walker is hashing when the
//! reader gets to it, after which the walker skips ahead the same way, so
//! no record is hashed twice. The digests are of the file's own bytes at
//! the record's offset, so they hold however the reader's buffer cuts the block
//! ([`Checker::use_file_digests`](warchest::check::Checker::use_file_digests)
//! checks header length and Content-Length against them).

use std::collections::VecDeque;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use warchest::archive::{Format, Reader};
use warchest::check::MemberDigests;
use warchest::codec::{Codec, Decoder, DecoderOptions};
use warchest::io::{AtCursor, ReadAt};
use warchest::warc::ReaderOptions;

/// Records whose digests wait for the reader, at most.
const QUEUE: usize = 64;
/// Larger records are left to the reader (their bytes would be held
/// whole here).
const MAX_RECORD: u64 = 8 << 20;
/// The walker's read buffer: it seeks past each block.
const BUFFER: usize = 64 << 10;
/// Found behind the reader, or done with a record the reader waited for,
/// the walker skips this far past it: the reader hashes the records in
/// between, the walker those after, and no record is hashed twice (a
/// walker that went on at the reader's heels hashed each record as the
/// reader did: 1.6 times the CPU for no time saved).
const GAP: u64 = 4 << 20;

/// The digests computed ahead, shared by the walker and the reader.
#[derive(Default)]
pub(crate) struct Ahead {
    queue: Mutex<Queue>,
    /// The queue has room again.
    room: Condvar,
    /// The walker is done with the record the reader waits for.
    ready: Condvar,
    /// One past the offset of the record the reader is at (0 before its
    /// first): records before it are left to the reader.
    reader_at: AtomicU64,
    /// The reader waits for the record the walker is hashing
    /// ([`Ahead::ready`]); changed under the lock.
    waiting: AtomicBool,
    stop: AtomicBool,
}

/// What the walker and the reader share under the lock.
#[derive(Default)]
struct Queue {
    /// (record offset, its digests), in file order.
    done: VecDeque<(u64, MemberDigests)>,
    /// The record the walker is reading and hashing now.
    busy: Option<u64>,
}

/// The longest the reader waits for the record the walker is hashing
/// before it hashes the record itself (a bound, not a figure ever met:
/// the walker's largest record is [`MAX_RECORD`]).
const WAIT: Duration = Duration::from_secs(2);

impl Ahead {
    /// The digests of the record at `offset`, if the walker got there
    /// first; the reader is at `offset` from now on. When the walker is
    /// hashing that very record, the reader waits for it rather than hash
    /// it a second time: the walker started first, so it ends first, and
    /// its next record tells it to skip ahead ([`GAP`]). Without the wait,
    /// each time the reader caught up with the walker, the record between
    /// them (most often a large one: they hold most of the time) was
    /// hashed by both, half again the hashing of the file.
    pub(crate) fn take(&self, offset: u64) -> Option<MemberDigests> {
        self.reader_at
            .fetch_max(offset.saturating_add(1), Ordering::Relaxed);
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        // Only a full queue can have the walker waiting: a wake-up is a
        // system call, not to be paid on every record.
        let full = q.done.len() >= QUEUE;
        while q.done.front().is_some_and(|(at, _)| *at < offset) {
            q.done.pop_front();
        }
        if q.done.front().is_none_or(|(at, _)| *at != offset) && q.busy == Some(offset) {
            // Every record before the one waited for was popped: a walker
            // waiting for room to queue it must hear of it first.
            self.made_room(full, &q);
            let until = Instant::now() + WAIT;
            self.waiting.store(true, Ordering::Relaxed);
            while q.busy == Some(offset) && !self.stop.load(Ordering::Relaxed) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                q = match self.ready.wait_timeout(q, left) {
                    Ok((q, _)) => q,
                    Err(e) => e.into_inner().0,
                };
            }
            self.waiting.store(false, Ordering::Relaxed);
        }
        // The walker may have filled the queue while the reader waited.
        let full = full || q.done.len() >= QUEUE;
        let found = match q.done.front() {
            Some((at, _)) if *at == offset => q.done.pop_front().map(|(_, d)| d),
            _ => None,
        };
        self.made_room(full, &q);
        found
    }

    /// Wakes a walker waiting for room when the queue, full before, has
    /// room now.
    fn made_room(&self, was_full: bool, q: &Queue) {
        if was_full && q.done.len() < QUEUE {
            self.room.notify_one();
        }
    }

    /// Tells the walker to stop (the reader is done).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let _q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        self.room.notify_all();
        self.ready.notify_all();
    }

    /// The walker is done with the record at `busy` (hashed or not);
    /// `true` when the reader waits for it.
    fn leave(&self, q: &mut Queue) -> bool {
        q.busy = None;
        let waiting = self.waiting.load(Ordering::Relaxed);
        if waiting {
            self.ready.notify_one();
        }
        waiting
    }

    /// Walks the uncompressed WARC file `src` (`name` in messages) from its
    /// start, queueing each record's digests, until its end, a record it
    /// cannot read (the reader hashes from there on), or [`Ahead::stop`].
    pub(crate) fn walk(&self, src: Arc<dyn ReadAt>, name: &str, limits: warchest::Limits) {
        let mut opts = ReaderOptions::lenient();
        opts.limits = limits;
        opts.decoder = DecoderOptions {
            threads: 1,
            buffer_size: BUFFER,
            ..opts.decoder
        };
        let Ok(d) = Decoder::new_read_at(Arc::clone(&src), name, opts.decoder.clone()) else {
            return;
        };
        let mut reader = Reader::from_source_as(d, opts, Format::Warc);
        let mut buf = Vec::new();
        // Records before this are left to the reader.
        let mut skip_to = 0u64;
        while !self.stop.load(Ordering::Relaxed) {
            let rec = match reader.next_record() {
                Ok(Some(r)) => r,
                _ => return,
            };
            let loc = rec.location();
            let len = rec
                .header()
                .content_length()
                .and_then(|n| n.checked_add(loc.header_len + 4));
            let reader_at = self.reader_at.load(Ordering::Relaxed);
            if loc.offset < reader_at {
                skip_to = skip_to.max(reader_at.saturating_add(GAP));
            }
            let wanted = loc.offset >= skip_to && loc.codec == Codec::None;
            // Dropped unread: the reader seeks past the block.
            if rec.finish().is_err() {
                return;
            }
            reader.take_warnings();
            let Some(len) = len.filter(|&n| wanted && n <= MAX_RECORD) else {
                continue;
            };
            {
                let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                // Checked under the lock: a reader that got here first
                // hashes the record itself, one that comes later waits.
                if loc.offset < self.reader_at.load(Ordering::Relaxed) {
                    continue;
                }
                q.busy = Some(loc.offset);
            }
            buf.resize(len as usize, 0);
            let mut at = AtCursor::new(Arc::clone(&src), name, loc.offset);
            // Hashed when the reader waits for it or has not got to it
            // (it may have while the bytes were read, and not waited).
            let hash = at.read_exact(&mut buf).is_ok()
                && (self.waiting.load(Ordering::Relaxed)
                    || loc.offset >= self.reader_at.load(Ordering::Relaxed));
            let digests = hash.then(|| MemberDigests::of(&buf)).flatten();
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(d) = digests {
                // A reader waiting for this record has popped every one
                // before it and woken the walker (`Ahead::made_room`).
                while q.done.len() >= QUEUE && !self.stop.load(Ordering::Relaxed) {
                    q = self.room.wait(q).unwrap_or_else(|e| e.into_inner());
                }
                q.done.push_back((loc.offset, d));
            }
            // The reader caught up: it hashes the next few MiB, the walker
            // the records past them (else the two would go on in step, the
            // reader waiting for each record).
            if self.leave(&mut q) {
                skip_to = skip_to.max(loc.offset.saturating_add(GAP));
            }
        }
    }
}

/// Calls [`Ahead::stop`] when dropped.
pub(crate) struct StopOnDrop<'a>(pub(crate) &'a Ahead);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use warchest::check::Checker;
    use warchest::digest::{Algorithm, Encoding, Hasher};

    fn sha1(b: &[u8]) -> String {
        let mut h = Hasher::new(Algorithm::Sha1);
        h.update(b);
        format!("sha1:{}", Encoding::Base32.encode(&h.finalize()))
    }

    fn record(typ: &str, block: &[u8], block_digest: &str, payload: Option<&str>) -> Vec<u8> {
        let ct = if typ == "response" {
            "application/http; msgtype=response"
        } else {
            "text/plain"
        };
        let payload = payload
            .map(|p| format!("WARC-Payload-Digest: {p}\r\n"))
            .unwrap_or_default();
        let mut r = format!(
            "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Target-URI: http://example.com/\r\n\
             Content-Type: {ct}\r\nWARC-Block-Digest: {block_digest}\r\n{payload}\
             Content-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        r.extend_from_slice(block);
        r.extend_from_slice(b"\r\n\r\n");
        r
    }

    /// Records whose digests are right, wrong, over a chunked body (its
    /// payload de-chunked, or raw), over a head longer than a piece, and
    /// a SHA-256 one (not hashed ahead).
    fn records() -> Vec<u8> {
        let body: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let plain = [
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".as_slice(),
            &body,
        ]
        .concat();
        let chunked_body = [b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".as_slice()].concat();
        let chunked = [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".as_slice(),
            &chunked_body,
        ]
        .concat();
        let long_head = [
            b"HTTP/1.1 200 OK\r\nX-Long: ".as_slice(),
            &[b'x'; 700],
            b"\r\n\r\n",
            &body[..100],
        ]
        .concat();
        let mut v = Vec::new();
        v.extend(record(
            "response",
            &plain,
            &sha1(&plain),
            Some(&sha1(&body)),
        ));
        v.extend(record(
            "response",
            &chunked,
            &sha1(&chunked),
            Some(&sha1(b"hello world")),
        ));
        v.extend(record(
            "response",
            &chunked,
            &sha1(&chunked),
            Some(&sha1(&chunked_body)),
        ));
        v.extend(record(
            "response",
            &plain,
            &sha1(b"other"),
            Some(&sha1(&body)),
        ));
        v.extend(record(
            "response",
            &plain,
            &sha1(&plain),
            Some(&sha1(b"other")),
        ));
        v.extend(record("resource", &body, &sha1(&body), Some(&sha1(&body))));
        v.extend(record(
            "response",
            &long_head,
            &sha1(&long_head),
            Some(&sha1(&body[..100])),
        ));
        v.extend(record(
            "resource",
            &body,
            "sha256:abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd",
            None,
        ));
        v
    }

    /// Each record checked with and without its digests hashed ahead, its
    /// block fed in pieces of `piece` bytes: the same results; `short`
    /// bytes fewer fed to the one hashed ahead.
    fn compare(data: &[u8], piece: usize, short: usize) -> (usize, Vec<(String, String)>) {
        let src: Arc<dyn ReadAt> = Arc::new(Mem(data.to_vec()));
        let ahead = Ahead::default();
        ahead.walk(src, "t.warc", warchest::Limits::default());
        let mut reader = Reader::new(data).unwrap();
        let (mut used, mut results) = (0, Vec::new());
        while let Some(mut rec) = reader.next_record().unwrap() {
            let loc = rec.location();
            let h = rec.header().clone();
            let pre = ahead.take(loc.offset);
            used += usize::from(pre.is_some());
            let mut here = Checker::new(&h, &warchest::Limits::default());
            let mut there = Checker::new(&h, &warchest::Limits::default());
            there.use_file_digests(&h, loc.header_len, pre.as_ref());
            let mut block = Vec::new();
            rec.block().read_to_end_into(&mut block);
            for p in block.chunks(piece) {
                here.update(p);
            }
            for p in block[..block.len().saturating_sub(short)].chunks(piece) {
                there.update(p);
            }
            let (a, b) = (here.finish(), there.finish());
            if short == 0 {
                assert_eq!(
                    (&a.block, &a.payload),
                    (&b.block, &b.payload),
                    "piece {piece}"
                );
            }
            results.push((format!("{:?}", b.block), format!("{:?}", b.payload)));
        }
        (used, results)
    }

    /// A file in memory.
    struct Mem(Vec<u8>);

    impl ReadAt for Mem {
        fn read_at(&self, buf: &mut [u8], pos: u64) -> std::io::Result<usize> {
            let rest = self.0.get(pos as usize..).unwrap_or_default();
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            Ok(n)
        }

        fn size(&self) -> std::io::Result<u64> {
            Ok(self.0.len() as u64)
        }
    }

    trait ReadAll {
        fn read_to_end_into(&mut self, out: &mut Vec<u8>);
    }

    impl<B: BufRead> ReadAll for B {
        fn read_to_end_into(&mut self, out: &mut Vec<u8>) {
            loop {
                let buf = self.fill_buf().unwrap();
                if buf.is_empty() {
                    return;
                }
                out.extend_from_slice(buf);
                let n = buf.len();
                self.consume(n);
            }
        }
    }

    #[test]
    fn digests_hashed_ahead_give_the_reader_s_results_in_any_pieces() {
        let data = records();
        for piece in [1, 7, 64, 1000, 1 << 20] {
            let (used, results) = compare(&data, piece, 0);
            // Every SHA-1 record was hashed ahead, the SHA-256 one not.
            assert_eq!(used, 7, "piece {piece}");
            let valid = results.iter().filter(|r| r.0 == "Valid").count();
            assert_eq!(valid, 6, "{results:?}");
            assert!(
                results[1].1 == "Valid" && results[2].1 == "ValidRawChunked",
                "{results:?}"
            );
            assert!(results[3].0.starts_with("Invalid") && results[4].1.starts_with("Invalid"));
        }
    }

    /// A file in memory whose read of one record's bytes, whole, waits
    /// until the test opens it.
    struct Gated {
        data: Mem,
        at: u64,
        /// (the read is waiting, the gate is open)
        state: Mutex<(bool, bool)>,
        changed: Condvar,
    }

    impl ReadAt for Gated {
        fn read_at(&self, buf: &mut [u8], pos: u64) -> std::io::Result<usize> {
            if pos == self.at {
                let mut s = self.state.lock().unwrap();
                s.0 = true;
                self.changed.notify_all();
                while !s.1 {
                    s = self.changed.wait(s).unwrap();
                }
            }
            self.data.read_at(buf, pos)
        }

        fn size(&self) -> std::io::Result<u64> {
            self.data.size()
        }
    }

    /// Waits, a bounded time, until `f` holds.
    fn until(what: &str, f: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < end, "{what}: not within 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The reader at the record the walker is hashing waits for the
    /// walker's digests instead of hashing the record a second time.
    #[test]
    fn the_reader_waits_for_the_record_the_walker_is_hashing() {
        let data = records();
        let mut reader = Reader::new(data.as_slice()).unwrap();
        let mut offsets = Vec::new();
        while let Some(rec) = reader.next_record().unwrap() {
            offsets.push(rec.location().offset);
        }
        // The file is read whole by the walker's first read, so only the
        // read of this record's own bytes comes at its offset.
        let at = offsets[2];
        assert!(at > 0 && data.len() < BUFFER);
        let src = Arc::new(Gated {
            data: Mem(data.clone()),
            at,
            state: Mutex::new((false, false)),
            changed: Condvar::new(),
        });
        let ahead = Arc::new(Ahead::default());
        let walker = {
            let (ahead, src) = (Arc::clone(&ahead), Arc::clone(&src));
            std::thread::spawn(move || ahead.walk(src, "t.warc", warchest::Limits::default()))
        };
        until("the walker reads the record", || {
            src.state.lock().unwrap().0
        });
        let taker = {
            let ahead = Arc::clone(&ahead);
            std::thread::spawn(move || ahead.take(at))
        };
        until("the reader waits", || ahead.waiting.load(Ordering::Relaxed));
        {
            let mut s = src.state.lock().unwrap();
            s.1 = true;
            src.changed.notify_all();
        }
        let got = taker.join().unwrap();
        assert!(
            got.is_some(),
            "the reader got no digests: it would hash the record again"
        );
        ahead.stop();
        walker.join().unwrap();
    }

    /// A walker waiting for room in a full queue is woken by the reader's
    /// taking the first record, and the record it held comes with its
    /// digests.
    #[test]
    fn the_reader_makes_room_for_a_walker_that_waits() {
        let all = records();
        let first_len = {
            let mut r = Reader::new(all.as_slice()).unwrap();
            let _ = r.next_record().unwrap().unwrap();
            r.next_record().unwrap().unwrap().location().offset as usize
        };
        let first = all[..first_len].to_vec();
        let data: Vec<u8> = first.repeat(QUEUE + 6);
        let offsets: Vec<u64> = (0..QUEUE as u64 + 6)
            .map(|i| i * first.len() as u64)
            .collect();
        let src: Arc<dyn ReadAt> = Arc::new(Mem(data));
        let ahead = Arc::new(Ahead::default());
        let walker = {
            let ahead = Arc::clone(&ahead);
            std::thread::spawn(move || ahead.walk(src, "t.warc", warchest::Limits::default()))
        };
        until(
            "the queue fills and the walker waits with the next record",
            || {
                let q = ahead.queue.lock().unwrap();
                q.done.len() == QUEUE && q.busy == Some(offsets[QUEUE])
            },
        );
        // The queued records and the one the walker holds (records after
        // it may be reached by the reader first).
        let start = Instant::now();
        for &at in &offsets[..=QUEUE] {
            assert!(ahead.take(at).is_some(), "record at {at}: no digests");
        }
        // No wait ran into its bound (each would take WAIT).
        assert!(start.elapsed() < WAIT, "{:?}", start.elapsed());
        ahead.stop();
        walker.join().unwrap();
    }

    #[test]
    fn a_block_shorter_than_what_was_hashed_ahead_is_not_taken_as_valid() {
        let (_, results) = compare(&records(), 64, 3);
        for r in &results[..7] {
            assert!(r.0.contains("not computed"), "{results:?}");
        }
        // The payload hashed ahead too (the unchunked body) is not known
        // either.
        assert!(results[0].1.contains("not computed"), "{results:?}");
    }
}
