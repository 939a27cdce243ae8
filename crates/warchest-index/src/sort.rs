//! Sorting more records than fit in memory: sorted runs spilled to
//! temporary files, then merged.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};

/// Default memory for the records held before a run is spilled: 256 MiB.
pub const DEFAULT_MEMORY: usize = 256 << 20;

/// Most runs merged at once; more are merged in several passes.
const FAN_IN: usize = 64;

/// Per-record bookkeeping counted against the memory budget.
const OVERHEAD: usize = 32;

/// Sorts byte strings in byte order (`LC_ALL=C sort`) with bounded memory.
///
/// ```
/// use warchest_index::sort::ExternalSorter;
/// let mut s = ExternalSorter::new(16); // tiny budget: every record spills
/// for r in ["b", "a", "c", "a"] {
///     s.push(r.as_bytes())?;
/// }
/// let mut out = Vec::new();
/// s.finish(true, |r| { out.push(String::from_utf8_lossy(r).into_owned()); Ok(()) })?;
/// assert_eq!(out, ["a", "b", "c"]);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ExternalSorter {
    memory: usize,
    held: Vec<Vec<u8>>,
    held_bytes: usize,
    runs: Vec<File>,
}

impl ExternalSorter {
    /// A sorter spilling a run whenever about `memory` bytes are held.
    pub fn new(memory: usize) -> Self {
        ExternalSorter {
            memory: memory.max(1),
            held: Vec::new(),
            held_bytes: 0,
            runs: Vec::new(),
        }
    }

    /// Adds a record.
    ///
    /// # Errors
    /// Writing a run to a temporary file failed.
    pub fn push(&mut self, rec: &[u8]) -> io::Result<()> {
        self.held.push(rec.to_vec());
        self.held_bytes += rec.len() + OVERHEAD;
        if self.held_bytes >= self.memory {
            self.spill()?;
        }
        Ok(())
    }

    /// The number of runs spilled so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    fn spill(&mut self) -> io::Result<()> {
        let mut held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        held.sort_unstable();
        let mut f = tempfile::tempfile()?;
        {
            let mut w = BufWriter::with_capacity(1 << 16, &mut f);
            for r in &held {
                write_record(&mut w, r)?;
            }
            w.flush()?;
        }
        f.rewind()?;
        self.runs.push(f);
        if self.runs.len() >= 2 * FAN_IN {
            // Keep the number of open temporary files bounded.
            let oldest: Vec<File> = self.runs.drain(..FAN_IN).collect();
            let merged = merge_to_file(oldest)?;
            self.runs.insert(0, merged);
        }
        Ok(())
    }

    /// Calls `out` with every record in order; `dedup` drops a record equal
    /// to the one before it.
    ///
    /// # Errors
    /// Reading back a run failed, or `out` failed.
    pub fn finish(
        mut self,
        dedup: bool,
        mut out: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut last: Option<Vec<u8>> = None;
        let mut emit = |r: &[u8]| -> io::Result<()> {
            if dedup && last.as_deref() == Some(r) {
                return Ok(());
            }
            out(r)?;
            if dedup {
                last = Some(r.to_vec());
            }
            Ok(())
        };
        if self.runs.is_empty() {
            self.held.sort_unstable();
            for r in &self.held {
                emit(r)?;
            }
            return Ok(());
        }
        if !self.held.is_empty() {
            self.spill()?;
        }
        let mut runs = std::mem::take(&mut self.runs);
        while runs.len() > FAN_IN {
            let rest = runs.split_off(FAN_IN);
            let merged = merge_to_file(std::mem::replace(&mut runs, rest))?;
            runs.push(merged);
        }
        merge(&mut runs, emit)
    }
}

/// Merges sorted runs into one new run.
fn merge_to_file(mut runs: Vec<File>) -> io::Result<File> {
    let mut f = tempfile::tempfile()?;
    {
        let mut w = BufWriter::with_capacity(1 << 16, &mut f);
        merge(&mut runs, |r| write_record(&mut w, r))?;
        w.flush()?;
    }
    f.rewind()?;
    Ok(f)
}

fn write_record(w: &mut impl Write, r: &[u8]) -> io::Result<()> {
    let len = u32::try_from(r.len()).map_err(|_| io::Error::other("sort record over 4 GiB"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(r)
}

fn read_record(r: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    buf.clear();
    // The length was written by this process; it is still read in pieces so
    // a damaged temporary file cannot ask for a huge allocation at once.
    let got = r.take(len as u64).read_to_end(buf)?;
    if got != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "sort run truncated",
        ));
    }
    Ok(true)
}

fn merge(runs: &mut [File], mut out: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
    let mut readers: Vec<BufReader<&mut File>> = runs
        .iter_mut()
        .map(|f| BufReader::with_capacity(1 << 16, f))
        .collect();
    let mut heap = BinaryHeap::new();
    for (i, r) in readers.iter_mut().enumerate() {
        let mut buf = Vec::new();
        if read_record(r, &mut buf)? {
            heap.push(Reverse((buf, i)));
        }
    }
    while let Some(Reverse((rec, i))) = heap.pop() {
        out(&rec)?;
        let mut buf = rec;
        if read_record(&mut readers[i], &mut buf)? {
            heap.push(Reverse((buf, i)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(memory: usize, input: &[Vec<u8>], dedup: bool) -> (Vec<Vec<u8>>, usize) {
        let mut s = ExternalSorter::new(memory);
        for r in input {
            s.push(r).unwrap();
        }
        let runs = s.runs();
        let mut out = Vec::new();
        s.finish(dedup, |r| {
            out.push(r.to_vec());
            Ok(())
        })
        .unwrap();
        (out, runs)
    }

    #[test]
    fn spilled_and_in_memory_sorts_agree_with_std_sort() {
        // A fixed pseudo-random sequence, with repeats and shared prefixes.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let input: Vec<Vec<u8>> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("k{} {}", x % 1000, x % 7).into_bytes()
            })
            .collect();
        let mut want = input.clone();
        want.sort();
        let (mem, runs) = sorted(usize::MAX, &input, false);
        assert_eq!(runs, 0);
        assert_eq!(mem, want);
        // Small budget: more than FAN_IN runs, so a multi-pass merge, and
        // never more than 2 * FAN_IN runs open at once.
        let (spilled, runs) = sorted(2000, &input, false);
        assert!(runs > FAN_IN && runs < 2 * FAN_IN, "{runs} runs");
        let (one_each, runs) = sorted(1, &input, false);
        assert!(runs < 2 * FAN_IN, "{runs} runs");
        assert_eq!(one_each, want);
        assert_eq!(spilled, want);
        want.dedup();
        assert_eq!(sorted(2000, &input, true).0, want);
    }

    #[test]
    fn byte_order_not_locale_order() {
        let input = vec![
            b"b".to_vec(),
            b"B".to_vec(),
            b"a b".to_vec(),
            b"a".to_vec(),
            b"a\t".to_vec(),
        ];
        let (out, _) = sorted(usize::MAX, &input, false);
        assert_eq!(
            out,
            vec![
                b"B".to_vec(),
                b"a".to_vec(),
                b"a\t".to_vec(),
                b"a b".to_vec(),
                b"b".to_vec()
            ]
        );
    }
}
