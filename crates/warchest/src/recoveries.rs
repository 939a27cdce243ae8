//! Tallies of what lenient reading recovered from: every recovery counted
//! by kind and by file, the first few kept whole.
//!
//! A lenient read of a damaged archive can meet millions of recoveries
//! (every bare LF of a file written with them): a [`Recoveries`] costs
//! counts, not memory, past its limit. The command line's summary line per
//! file, `derive`'s count of payloads given as stored, and the Python
//! binding's `warnings` all keep their tally in one.
//!
//! A scan of many damaged files finds each file's tally through a map of
//! names (files stay in the order first met): adding a recovery costs the
//! same whether it is the first file's or the ten thousandth's.

use std::collections::HashMap;

use crate::error::{Warning, WarningKind};
use crate::http::{PayloadFallback, PayloadFallbacks};

/// How many recoveries a [`Recoveries`] keeps whole unless told otherwise.
pub const DEFAULT_KEPT: usize = 1000;

/// Something a [`Recoveries`] tallies: where it was met, and its kinds.
pub trait Recovery: Clone {
    /// What kind of recovery it is.
    type Kind: Copy + Eq;

    /// The offset in the file as stored where it was met.
    fn offset(&self) -> u64;

    /// Its kinds (one for a [`Warning`]; a payload may fall back on two).
    fn kinds(&self) -> impl Iterator<Item = Self::Kind>;
}

impl Recovery for Warning {
    type Kind = WarningKind;

    fn offset(&self) -> u64 {
        self.offset
    }

    fn kinds(&self) -> impl Iterator<Item = WarningKind> {
        std::iter::once(self.kind)
    }
}

/// A payload not decoded as its HTTP head says (see
/// [`payload_reader_lenient_noted`](crate::http::payload_reader_lenient_noted)):
/// its record's offset, and what it fell back on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadFallbackAt {
    /// The record's offset in the file, as stored.
    pub offset: u64,
    /// What its payload fell back on.
    pub fallbacks: PayloadFallbacks,
}

impl Recovery for PayloadFallbackAt {
    type Kind = PayloadFallback;

    fn offset(&self) -> u64 {
        self.offset
    }

    fn kinds(&self) -> impl Iterator<Item = PayloadFallback> {
        self.fallbacks.iter()
    }
}

impl Recoveries<Warning> {
    /// One sentence of the counts, kinds in the order first met, and
    /// where the first was when all are in one file: "2 lenient
    /// recoveries: bare-lf (2), the first at offset 28"; `None` when there
    /// are none.
    pub fn summary(&self) -> Option<String> {
        let n = self.total();
        if n == 0 {
            return None;
        }
        let kinds: Vec<String> = self
            .by_kind()
            .iter()
            .map(|(k, c)| format!("{} ({c})", k.name()))
            .collect();
        let what = if n == 1 { "recovery" } else { "recoveries" };
        let mut told = format!("{n} lenient {what}: {}", kinds.join(", "));
        // An offset means something in one file.
        if let [f] = self.by_file() {
            told.push_str(&format!(", the first at offset {}", f.first_offset));
        }
        Some(told)
    }
}

impl Recoveries<PayloadFallbackAt> {
    /// One sentence of the counts, kinds in [`PayloadFallback::ALL`]'s
    /// order: "16 payloads not decoded as their HTTP head says: announced
    /// as chunked but not chunked (16)"; `None` when there are none.
    pub fn summary(&self) -> Option<String> {
        let n = self.total();
        if n == 0 {
            return None;
        }
        let mut kinds = self.by_kind().to_vec();
        kinds.sort();
        let kinds: Vec<String> = kinds
            .iter()
            .map(|(f, k)| format!("{} ({k})", f.describe()))
            .collect();
        let what = if n == 1 {
            "payload not decoded as its HTTP head says"
        } else {
            "payloads not decoded as their HTTP head says"
        };
        Some(format!("{n} {what}: {}", kinds.join(", ")))
    }
}

/// The recoveries of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecoveries {
    /// The file, as the reader named it.
    pub file: String,
    /// How many.
    pub count: u64,
    /// The smallest offset of any.
    pub first_offset: u64,
}

/// Recoveries counted by kind (in the order kinds were first met) and by
/// file (in the order files were), the first [`DEFAULT_KEPT`] (or the
/// limit given) kept whole with their file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recoveries<T: Recovery = Warning> {
    limit: usize,
    total: u64,
    kinds: Vec<(T::Kind, u64)>,
    files: Vec<FileRecoveries>,
    /// The index in `files` of each file, by name.
    index: HashMap<String, usize>,
    /// Each with the index of its file in `files`.
    kept: Vec<(usize, T)>,
}

impl<T: Recovery> Default for Recoveries<T> {
    fn default() -> Self {
        Recoveries::keeping(DEFAULT_KEPT)
    }
}

impl<T: Recovery> Recoveries<T> {
    /// An empty tally keeping the first [`DEFAULT_KEPT`] whole.
    pub fn new() -> Self {
        Recoveries::default()
    }

    /// An empty tally keeping the first `limit` whole (0: counts only).
    pub fn keeping(limit: usize) -> Self {
        Recoveries {
            limit,
            total: 0,
            kinds: Vec::new(),
            files: Vec::new(),
            index: HashMap::new(),
            kept: Vec::new(),
        }
    }

    /// Counts `r`, met in `file`, and keeps it while there is room.
    pub fn add(&mut self, file: &str, r: T) {
        let at = self.count(file, &r);
        if self.kept.len() < self.limit {
            self.kept.push((at, r));
        }
    }

    /// [`Recoveries::add`] for each of `rs`, each cloned only if kept.
    pub fn add_all<'a>(&mut self, file: &str, rs: impl IntoIterator<Item = &'a T>)
    where
        T: 'a,
    {
        // One file for all of them: looked up once.
        let mut at = None;
        for r in rs {
            let i = match at {
                Some(i) => {
                    self.count_in(i, r);
                    i
                }
                None => *at.insert(self.count(file, r)),
            };
            if self.kept.len() < self.limit {
                self.kept.push((i, r.clone()));
            }
        }
    }

    /// Adds `other`'s counts to these, and its kept recoveries while there
    /// is room.
    pub fn append(&mut self, other: Recoveries<T>) {
        let mut index = Vec::with_capacity(other.files.len());
        for f in &other.files {
            index.push(self.file_index(&f.file, f.first_offset, f.count));
        }
        for (k, n) in other.kinds {
            self.count_kind(k, n);
        }
        self.total += other.total;
        let room = self.limit.saturating_sub(self.kept.len());
        self.kept.extend(
            other
                .kept
                .into_iter()
                .take(room)
                .map(|(i, r)| (index[i], r)),
        );
    }

    /// The same recoveries, all as met in `file` (a reader that names its
    /// file otherwise than its caller does).
    pub fn in_file(self, file: &str) -> Recoveries<T> {
        let files = match self.files.iter().map(|f| f.first_offset).min() {
            Some(first_offset) => vec![FileRecoveries {
                file: file.to_string(),
                count: self.total,
                first_offset,
            }],
            None => Vec::new(),
        };
        let index = files.iter().map(|f| (f.file.clone(), 0)).collect();
        Recoveries {
            files,
            index,
            kept: self.kept.into_iter().map(|(_, r)| (0, r)).collect(),
            ..self
        }
    }

    /// Takes everything out, leaving an empty tally with the same limit.
    pub fn take(&mut self) -> Recoveries<T> {
        std::mem::replace(self, Recoveries::keeping(self.limit))
    }

    /// How many recoveries were counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Counts per kind, kinds in the order first met.
    pub fn by_kind(&self) -> &[(T::Kind, u64)] {
        &self.kinds
    }

    /// Counts per file, files in the order first met.
    pub fn by_file(&self) -> &[FileRecoveries] {
        &self.files
    }

    /// The recoveries kept whole, in the order met, each with its file.
    pub fn kept(&self) -> impl ExactSizeIterator<Item = (&str, &T)> {
        self.kept
            .iter()
            .map(|(i, r)| (self.files[*i].file.as_str(), r))
    }

    /// The index of `file` in `files`, its count raised by `n` and its
    /// first offset lowered to `offset`. The file last met is looked at
    /// first (reads meet one file after another), then the map of names:
    /// never a walk over the files.
    fn file_index(&mut self, file: &str, offset: u64, n: u64) -> usize {
        let found = match self.files.last() {
            Some(f) if f.file == file => Some(self.files.len() - 1),
            _ => self.index.get(file).copied(),
        };
        let i = found.unwrap_or_else(|| {
            let i = self.files.len();
            self.files.push(FileRecoveries {
                file: file.to_string(),
                count: 0,
                first_offset: offset,
            });
            self.index.insert(file.to_string(), i);
            i
        });
        let f = &mut self.files[i];
        f.count += n;
        f.first_offset = f.first_offset.min(offset);
        i
    }

    /// Counts `r` (in `file`, by kind, in all); its file's index.
    fn count(&mut self, file: &str, r: &T) -> usize {
        let i = self.file_index(file, r.offset(), 0);
        self.count_in(i, r);
        i
    }

    /// Counts `r`, met in the file at index `i` of `files`.
    fn count_in(&mut self, i: usize, r: &T) {
        for k in r.kinds() {
            self.count_kind(k, 1);
        }
        self.total += 1;
        let f = &mut self.files[i];
        f.count += 1;
        f.first_offset = f.first_offset.min(r.offset());
    }

    fn count_kind(&mut self, k: T::Kind, n: u64) {
        match self.kinds.iter_mut().find(|(kind, _)| *kind == k) {
            Some((_, c)) => *c += n,
            None => self.kinds.push((k, n)),
        }
    }
}

/// A record whose HTTP head did not parse: a block that should start with
/// one (a response, request or revisit with an HTTP URL, or an
/// `application/http` Content-Type) and is not empty, but does not (not an
/// HTTP message, or a head past
/// [`Limits::max_http_head`](crate::Limits::max_http_head)). What the
/// head would have given is missing: warchest-index's entry lacks status
/// and MIME (as cdxj-indexer's does), a scan's HTTP columns are null, a
/// filter's HTTP tests see no head. Each command counts them so that the
/// gap is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnparsedHead {
    /// The record's offset in the file, as stored.
    pub offset: u64,
}

impl Recovery for UnparsedHead {
    /// One kind only: the head did not parse.
    type Kind = ();

    fn offset(&self) -> u64 {
        self.offset
    }

    fn kinds(&self) -> impl Iterator<Item = ()> {
        std::iter::once(())
    }
}

impl UnparsedHead {
    /// One sentence of the count, as the index says it: "2 records whose
    /// HTTP head did not parse: indexed without status and MIME, the first
    /// at offset 310" (with the file named when there are several); `None`
    /// when there are none.
    pub fn summary(tally: &Recoveries<UnparsedHead>) -> Option<String> {
        Self::summary_as(tally, "indexed without status and MIME")
    }

    /// [`UnparsedHead::summary`] saying what became of the records
    /// (`consequence`: "their HTTP columns are null" for a scan).
    pub fn summary_as(tally: &Recoveries<UnparsedHead>, consequence: &str) -> Option<String> {
        let n = tally.total();
        if n == 0 {
            return None;
        }
        let what = if n == 1 {
            "record whose HTTP head did not parse"
        } else {
            "records whose HTTP head did not parse"
        };
        let mut told = format!("{n} {what}: {consequence}");
        match tally.by_file() {
            [] => {}
            [f] => told.push_str(&format!(", the first at offset {}", f.first_offset)),
            [f, ..] => told.push_str(&format!(
                ", the first in {} at offset {}",
                f.file, f.first_offset
            )),
        }
        Some(told)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(kind: WarningKind, offset: u64) -> Warning {
        Warning::new(kind, offset, "x")
    }

    #[test]
    fn counts_every_one_and_keeps_the_first() {
        let mut r = Recoveries::keeping(2);
        r.add("a", w(WarningKind::BareLf, 30));
        r.add("a", w(WarningKind::BareLf, 10));
        r.add("b", w(WarningKind::DamagedMember, 5));
        r.add("a", w(WarningKind::BadTrailer, 40));
        assert_eq!(r.total(), 4);
        assert_eq!(
            r.by_kind(),
            [
                (WarningKind::BareLf, 2),
                (WarningKind::DamagedMember, 1),
                (WarningKind::BadTrailer, 1)
            ]
        );
        let files: Vec<_> = r
            .by_file()
            .iter()
            .map(|f| (f.file.as_str(), f.count, f.first_offset))
            .collect();
        assert_eq!(files, [("a", 3, 10), ("b", 1, 5)]);
        let kept: Vec<_> = r.kept().map(|(f, w)| (f, w.offset)).collect();
        assert_eq!(kept, [("a", 30), ("a", 10)]);
        assert_eq!(
            r.summary().as_deref(),
            Some("4 lenient recoveries: bare-lf (2), damaged-member (1), bad-trailer (1)")
        );
        let mut one = Recoveries::new();
        one.add("a", w(WarningKind::BareLf, 30));
        assert_eq!(
            one.summary().as_deref(),
            Some("1 lenient recovery: bare-lf (1), the first at offset 30")
        );
        assert_eq!(Recoveries::<Warning>::new().summary(), None);
    }

    #[test]
    fn append_merges_files_and_keeps_within_the_limit() {
        let mut a = Recoveries::keeping(3);
        a.add("x", w(WarningKind::BareLf, 7));
        a.add("y", w(WarningKind::BareLf, 8));
        let mut b = Recoveries::new();
        b.add("y", w(WarningKind::SkippedBytes, 2));
        b.add("z", w(WarningKind::BareLf, 9));
        b.add("z", w(WarningKind::BareLf, 10));
        a.append(b);
        assert_eq!(a.total(), 5);
        assert_eq!(
            a.by_kind(),
            [(WarningKind::BareLf, 4), (WarningKind::SkippedBytes, 1)]
        );
        let files: Vec<_> = a
            .by_file()
            .iter()
            .map(|f| (f.file.as_str(), f.count, f.first_offset))
            .collect();
        assert_eq!(files, [("x", 1, 7), ("y", 2, 2), ("z", 2, 9)]);
        let kept: Vec<_> = a.kept().map(|(f, w)| (f, w.offset)).collect();
        assert_eq!(kept, [("x", 7), ("y", 8), ("y", 2)]);
        let taken = a.take();
        assert!(a.is_empty() && a.kept().len() == 0 && a.by_file().is_empty());
        assert_eq!(taken.total(), 5);
    }

    /// The map of names agrees with the files: each file once, at its
    /// place in the order met.
    fn assert_indexed<T: Recovery>(r: &Recoveries<T>) {
        assert_eq!(r.index.len(), r.files.len());
        for (i, f) in r.files.iter().enumerate() {
            assert_eq!(r.index.get(&f.file), Some(&i), "{}", f.file);
        }
    }

    fn files<T: Recovery>(r: &Recoveries<T>) -> Vec<(String, u64, u64)> {
        r.by_file()
            .iter()
            .map(|f| (f.file.clone(), f.count, f.first_offset))
            .collect()
    }

    /// Files met in turn (never the file last met, the case the lookup
    /// takes first) are each found by name: one entry a file, in the order
    /// first met, through add, add_all, append, in_file and take.
    #[test]
    fn files_are_found_by_name_and_kept_in_the_order_met() {
        let n = 2000u64;
        let mut r = Recoveries::keeping(3);
        for round in 0..2 {
            for i in 0..n {
                r.add(&format!("f{i}"), w(WarningKind::BareLf, 10 * round + i));
            }
        }
        assert_indexed(&r);
        assert_eq!(r.total(), 2 * n);
        let want: Vec<_> = (0..n).map(|i| (format!("f{i}"), 2, i)).collect();
        assert_eq!(files(&r), want);
        let kept: Vec<_> = r.kept().map(|(f, w)| (f, w.offset)).collect();
        assert_eq!(kept, [("f0", 0), ("f1", 1), ("f2", 2)]);

        // add_all into a file met long ago, then one not met yet.
        let ws = [w(WarningKind::BareLf, 1), w(WarningKind::BareLf, 2)];
        r.add_all("f7", &ws);
        r.add_all("g", &ws);
        assert_indexed(&r);
        assert_eq!(r.by_file().len(), n as usize + 1);
        assert_eq!(r.by_file()[7].count, 4);
        assert_eq!(r.by_file()[7].first_offset, 1);
        assert_eq!(r.by_file().last().unwrap().file, "g");

        // append: its files found in these, new ones after them.
        let mut other = Recoveries::new();
        other.add("h", w(WarningKind::SkippedBytes, 5));
        other.add("f3", w(WarningKind::SkippedBytes, 0));
        r.append(other);
        assert_indexed(&r);
        assert_eq!(r.by_file().len(), n as usize + 2);
        assert_eq!(r.by_file()[3].count, 3);
        assert_eq!(r.by_file().last().unwrap().file, "h");

        // in_file: one file, found again by its new name.
        let mut one = r.clone().in_file("all");
        assert_indexed(&one);
        one.add("all", w(WarningKind::BareLf, 99));
        one.add("f0", w(WarningKind::BareLf, 99));
        assert_indexed(&one);
        assert_eq!(
            files(&one),
            [("all".to_string(), 2 * n + 7, 0), ("f0".to_string(), 1, 99)]
        );

        // take: nothing of the old names left.
        let taken = r.take();
        assert_indexed(&r);
        r.add("f5", w(WarningKind::BareLf, 1));
        assert_indexed(&r);
        assert_eq!(files(&r), [("f5".to_string(), 1, 1)]);
        assert_eq!(taken.by_file().len(), n as usize + 2);
    }

    #[test]
    fn a_payload_counts_once_and_each_of_its_fallbacks() {
        let mut f = PayloadFallbacks::default();
        f.insert(PayloadFallback::ChunkingAbandoned);
        f.insert(PayloadFallback::ContentUndecoded);
        let mut r = Recoveries::keeping(0);
        r.add(
            "a",
            PayloadFallbackAt {
                offset: 3,
                fallbacks: f,
            },
        );
        assert_eq!(r.total(), 1);
        assert_eq!(r.kept().len(), 0);
        assert_eq!(
            r.summary().as_deref(),
            Some(
                "1 payload not decoded as its HTTP head says: chunking given up, the rest \
                 as stored (1), content coding did not decode, bytes as stored (1)"
            )
        );
        assert_eq!(Recoveries::<PayloadFallbackAt>::new().summary(), None);
        assert_eq!(
            r.by_kind(),
            [
                (PayloadFallback::ChunkingAbandoned, 1),
                (PayloadFallback::ContentUndecoded, 1)
            ]
        );
    }
}
