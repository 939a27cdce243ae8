//! Many ranges fetched with few requests: ranges that follow each other in
//! the same object, less than a gap apart, are read with one request whose
//! answer is streamed and cut into the ranges (the bytes between them are
//! read and dropped).
//!
//! Only neighbours in the order given are merged, so the results are handed
//! back in that order without holding any beyond the requests in flight.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Buf, Bytes, BytesMut};
use tokio::sync::Semaphore;

use crate::request::{Ends, Failure, copy_error, next_piece, remote_error, start_range};
use crate::{Location, Options, RangeRequest, runtime};

/// The largest gap between two ranges read with one request by default:
/// object_store's own default for `get_ranges`
/// (`object_store::OBJECT_STORE_COALESCE_DEFAULT`, 1 MiB), the point
/// where reading the gap costs about what another request's latency does.
pub const DEFAULT_MAX_GAP: u64 = object_store::OBJECT_STORE_COALESCE_DEFAULT;

/// The longest span one merged request covers by default (a single range
/// longer than this is still read whole, with a request of its own).
pub const DEFAULT_MAX_REQUEST: u64 = 8 << 20;

/// The bytes of ranges fetched but not yet handed over, by default.
pub const DEFAULT_MEMORY: u64 = 64 << 20;

/// How [`fetch_ranges_with`] fetches.
#[derive(Clone, Debug)]
pub struct FetchPlan {
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Ranges of the same object at most this many bytes apart are read
    /// with one request; 0 makes one request per range.
    pub max_gap: u64,
    /// The longest span of one merged request.
    pub max_request: u64,
    /// The bytes of requests in flight and results not yet handed over: a
    /// request waits while they are spent (a single range longer than this
    /// still goes, alone).
    pub memory: u64,
}

impl Default for FetchPlan {
    fn default() -> Self {
        FetchPlan {
            concurrency: 16,
            max_gap: DEFAULT_MAX_GAP,
            max_request: DEFAULT_MAX_REQUEST,
            memory: DEFAULT_MEMORY,
        }
    }
}

/// What a fetch cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Requests started, retries included.
    pub requests: u64,
    /// Bytes received, the gaps between merged ranges included.
    pub bytes_read: u64,
}

/// Ranges read with one request: consecutive requests of one object.
struct Group {
    location: Location,
    /// The index of its first range among all requests.
    first: usize,
    /// (offset, length) of each range, in order, none overlapping.
    parts: Vec<(u64, u64)>,
    start: u64,
    end: u64,
}

/// Cuts the requests into groups, in order.
struct Groups<I: Iterator<Item = RangeRequest>> {
    requests: std::iter::Peekable<I>,
    next_index: usize,
    plan: FetchPlan,
}

impl<I: Iterator<Item = RangeRequest>> Iterator for Groups<I> {
    type Item = Group;

    fn next(&mut self) -> Option<Group> {
        let r = self.requests.next()?;
        let first = self.next_index;
        self.next_index += 1;
        let start = r.offset;
        // An overflowing range is left to the request, which reports it.
        let mut end = r.offset.saturating_add(r.len);
        let mut parts = vec![(r.offset, r.len)];
        // A range of no bytes costs no request and joins nothing.
        while r.len > 0 && self.plan.max_gap > 0 {
            let Some(n) = self.requests.peek() else { break };
            let joins = n.len > 0
                && n.offset >= end
                && n.offset - end <= self.plan.max_gap
                && n.offset.saturating_add(n.len) - start <= self.plan.max_request
                && n.location.url() == r.location.url();
            if !joins {
                break;
            }
            end = n.offset + n.len;
            parts.push((n.offset, n.len));
            self.requests.next();
            self.next_index += 1;
        }
        Some(Group {
            location: r.location,
            first,
            parts,
            start,
            end,
        })
    }
}

/// Counters shared by the requests, and the objects known unreadable.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    /// The objects found missing, refused, without ranges or redirecting
    /// in a loop, by URL, with their error: no further request is made
    /// for them, each of their ranges gets the error at once.
    gone: std::sync::Mutex<std::collections::HashMap<String, io::Error>>,
}

impl Counters {
    /// The error of `url` when it is known unreadable.
    fn gone(&self, url: &str) -> Option<io::Error> {
        let g = self.gone.lock().unwrap_or_else(|e| e.into_inner());
        g.get(url).map(copy_error)
    }

    /// Remembers `e` for `url` when it holds for the whole object.
    fn note(&self, url: &str, e: &io::Error) {
        if remote_error(e).is_some_and(|r| r.whole_object()) {
            let mut g = self.gone.lock().unwrap_or_else(|e| e.into_inner());
            g.entry(url.to_string()).or_insert_with(|| copy_error(e));
        }
    }
}

/// Reads `parts` (of one object, in order, not overlapping) with one
/// request, resuming after a fault at the next byte still wanted; each
/// complete range is pushed to `out`. On an error that cannot be retried,
/// the index (in `parts`) of the range it stopped in, with the error.
async fn read_merged(
    loc: &Location,
    opts: &Options,
    parts: &[(u64, u64)],
    counters: &Counters,
    out: &mut Vec<io::Result<Bytes>>,
) -> Result<(), (usize, io::Error)> {
    let Some(&(start, _)) = parts.first() else {
        return Ok(());
    };
    let Some(end) = parts.last().and_then(|&(o, l)| o.checked_add(l)) else {
        let e = io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: range at {start} overflows", loc.url()),
        );
        return Err((0, e));
    };
    let total: u64 = parts.iter().map(|p| p.1).sum();
    if total == 0 {
        out.extend(parts.iter().map(|_| Ok(Bytes::new())));
        return Ok(());
    }
    // One allocation for the group's records, grown as bytes arrive (an
    // index's wrong length costs only what the server sends); each record
    // is split off it without a copy.
    let mut buf = BytesMut::with_capacity(total.min(8 << 20) as usize);
    let mut k = 0;
    let mut pos = start;
    let mut retries = 0u32;
    loop {
        if let Some(e) = counters.gone(loc.url()) {
            return Err((k, e));
        }
        let res = async {
            counters.requests.fetch_add(1, Ordering::Relaxed);
            let (_, mut stream) = start_range(loc, opts, pos, end, None, Ends::AsAsked).await?;
            while let Some(mut piece) = next_piece(&mut stream, opts).await? {
                counters
                    .bytes
                    .fetch_add(piece.len() as u64, Ordering::Relaxed);
                while !piece.is_empty() {
                    let Some(&(off, len)) = parts.get(k) else {
                        return Err(Failure::fatal(
                            io::ErrorKind::InvalidData,
                            format!(
                                "the server sent more than the {} bytes asked for",
                                end - start
                            ),
                        ));
                    };
                    if pos < off {
                        // Between two records: read and dropped.
                        let skip = (off - pos).min(piece.len() as u64) as usize;
                        piece.advance(skip);
                        pos += skip as u64;
                        continue;
                    }
                    let take = (off + len - pos).min(piece.len() as u64) as usize;
                    buf.extend_from_slice(&piece[..take]);
                    piece.advance(take);
                    pos += take as u64;
                    if pos == off + len {
                        out.push(Ok(buf.split().freeze()));
                        k += 1;
                    }
                }
            }
            if k < parts.len() {
                return Err(Failure::retryable(
                    io::ErrorKind::UnexpectedEof,
                    format!("the answer ended at byte {pos}, before byte {end} asked for"),
                ));
            }
            Ok(())
        }
        .await;
        match res {
            Ok(()) => return Ok(()),
            Err(f) if f.retry && retries < opts.retries => {
                tracing::debug!("{}: at byte {pos}: {}; retrying", loc.url(), f.message);
                tokio::time::sleep(opts.backoff_for(retries)).await;
                retries += 1;
                // Resumed at the next byte wanted, skipping a gap.
                if let Some(&(off, _)) = parts.get(k) {
                    pos = pos.max(off);
                }
            }
            Err(f) => {
                let e = f.into_error(loc.url(), pos, retries);
                counters.note(loc.url(), &e);
                return Err((k, e));
            }
        }
    }
}

/// The results of a group's ranges, in order. When the merged request
/// fails for good, the ranges it did not deliver are asked for one by one,
/// so that each lost range has its own error (and a fault confined to one
/// record loses only that record); when the error holds for the whole
/// object (missing, refused, no ranges), they get it without a request.
async fn fetch_group(g: &Group, opts: &Options, counters: &Counters) -> Vec<io::Result<Bytes>> {
    let mut out = Vec::with_capacity(g.parts.len());
    match read_merged(&g.location, opts, &g.parts, counters, &mut out).await {
        Ok(()) => {}
        Err((_, e)) if g.parts.len() == 1 => out.push(Err(e)),
        Err((k, e)) => {
            tracing::debug!(
                "{e}; the {} ranges left asked for one by one",
                g.parts.len() - k
            );
            for p in &g.parts[k..] {
                if let Err((_, e)) = read_merged(
                    &g.location,
                    opts,
                    std::slice::from_ref(p),
                    counters,
                    &mut out,
                )
                .await
                {
                    out.push(Err(e));
                }
            }
        }
    }
    out
}

/// Fetches `requests` as `plan` says, each request made with `opts`'s
/// retries and timeouts, handing each result to `each` in the
/// order of `requests` (with its index). Neighbouring ranges of one object
/// are read with one request (see [`FetchPlan::max_gap`]). A range that
/// cannot be fetched is handed over as its error, naming the URL and the
/// byte, and the rest go on; an error returned by `each` stops the fetch
/// and is returned. Memory is bounded by [`FetchPlan::memory`] (or by the
/// longest range, when longer).
pub fn fetch_ranges_with<I, F>(
    requests: I,
    plan: &FetchPlan,
    opts: &Options,
    mut each: F,
) -> io::Result<FetchStats>
where
    I: IntoIterator<Item = RangeRequest>,
    F: FnMut(usize, io::Result<Bytes>) -> io::Result<()>,
{
    let opts = Arc::new(opts.clone());
    let counters = Arc::new(Counters::default());
    let rt = runtime();
    let concurrency = plan.concurrency.max(1);
    // Permits are KiB of memory.
    let budget = (plan.memory.div_ceil(1024)).clamp(1, u32::MAX as u64 >> 4) as u32;
    let sem = Arc::new(Semaphore::new(budget as usize));
    let mut groups = Groups {
        requests: requests.into_iter().peekable(),
        next_index: 0,
        plan: plan.clone(),
    };
    rt.block_on(async {
        let mut pending: Option<Group> = None;
        let mut inflight = VecDeque::new();
        loop {
            // Started in order, so the oldest request always holds its
            // memory and the fetch always moves on.
            while inflight.len() < concurrency {
                let Some(g) = pending.take().or_else(|| groups.next()) else {
                    break;
                };
                let units =
                    (g.end.saturating_sub(g.start).div_ceil(1024)).clamp(1, budget as u64) as u32;
                let permit = match sem.clone().try_acquire_many_owned(units) {
                    Ok(p) => p,
                    Err(_) if inflight.is_empty() => sem
                        .clone()
                        .acquire_many_owned(units)
                        .await
                        .map_err(|e| io::Error::other(format!("fetch budget: {e}")))?,
                    Err(_) => {
                        pending = Some(g);
                        break;
                    }
                };
                let (first, n) = (g.first, g.parts.len());
                let (opts, counters) = (opts.clone(), counters.clone());
                // Spawned, so that requests run on the worker threads
                // while the caller's callback runs here.
                let task = rt.spawn(async move { fetch_group(&g, &opts, &counters).await });
                inflight.push_back((first, n, task, permit));
            }
            let Some((first, n, task, permit)) = inflight.pop_front() else {
                break;
            };
            let results = match task.await {
                Ok(r) => r,
                Err(e) => (0..n)
                    .map(|_| Err(io::Error::other(format!("fetch task failed: {e}"))))
                    .collect(),
            };
            for (i, r) in results.into_iter().enumerate() {
                each(first + i, r)?;
            }
            drop(permit);
        }
        Ok::<(), io::Error>(())
    })?;
    Ok(FetchStats {
        requests: counters.requests.load(Ordering::Relaxed),
        bytes_read: counters.bytes.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(ranges: &[(&str, u64, u64)], max_gap: u64, max_request: u64) -> Vec<Vec<usize>> {
        let reqs: Vec<RangeRequest> = ranges
            .iter()
            .map(|&(u, offset, len)| RangeRequest {
                location: Location::parse(u).unwrap(),
                offset,
                len,
            })
            .collect();
        let g = Groups {
            requests: reqs.into_iter().peekable(),
            next_index: 0,
            plan: FetchPlan {
                max_gap,
                max_request,
                ..FetchPlan::default()
            },
        };
        g.map(|g| (g.first..g.first + g.parts.len()).collect())
            .collect()
    }

    #[test]
    fn neighbours_of_one_object_are_merged_in_order() {
        let a = "http://127.0.0.1:1/a";
        let b = "http://127.0.0.1:1/b";
        let r = [
            (a, 0, 10),
            (a, 15, 10),  // gap 5: joins
            (a, 100, 10), // gap 75: too far for 50
            (a, 50, 10),  // backwards: starts a group
            (b, 60, 10),  // another object
            (b, 70, 0),   // no bytes: alone
            (b, 70, 10),
            (b, 80, 100), // span 110 > 100: alone
        ];
        assert_eq!(
            groups(&r, 50, 100),
            vec![
                vec![0, 1],
                vec![2],
                vec![3],
                vec![4],
                vec![5],
                vec![6],
                vec![7]
            ]
        );
        // Adjacent ranges merge with any gap allowed; 0 turns it off.
        let r = [(a, 0, 10), (a, 10, 10), (a, 20, 10)];
        assert_eq!(groups(&r, 1, 100), vec![vec![0, 1, 2]]);
        assert_eq!(groups(&r, 0, 100), vec![vec![0], vec![1], vec![2]]);
    }
}
