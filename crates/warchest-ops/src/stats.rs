//! Counts and bytes of the records of archives, by record type, MIME type,
//! HTTP status and host: what `warchest stats` prints.
//!
//! [`Stats`] of separate files are merged with [`Stats::merge`], so files
//! can be counted in parallel; merging in file order gives the same result
//! whatever the number of threads.
//!
//! ```
//! use warchest::archive::Reader;
//! use warchest_ops::stats::Stats;
//! let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
//! let mut stats = Stats::new();
//! stats.add_archive(&mut Reader::new(&data[..])?, &Default::default())?;
//! assert_eq!(stats.records, 1);
//! assert_eq!(stats.by_mime["text/plain"].bytes, 2);
//! # Ok::<(), warchest::Error>(())
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

use warchest::Limits;
use warchest::archive;
use warchest::codec::Source;
use warchest::error::Result;

/// Records and block bytes of one group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Number of records.
    pub records: u64,
    /// Their block bytes (what Content-Length counts, as read).
    pub bytes: u64,
}

impl Count {
    fn add(&mut self, other: Count) {
        self.records += other.records;
        self.bytes += other.bytes;
    }
}

/// The key of records that have no value for a table (no Content-Type, no
/// WARC-Type).
pub const NONE_KEY: &str = "(none)";
/// The key that collects the values past [`Stats::max_keys`] distinct ones.
pub const OTHER_KEY: &str = "(other)";
/// Longest key kept, in bytes; longer values are cut (at a character
/// boundary), so a hostile value cannot make a table large.
pub const MAX_KEY_LEN: usize = 256;

/// What is counted of one record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordFacts {
    /// WARC-Type as written.
    pub record_type: Option<String>,
    /// Media type of the payload: the HTTP Content-Type for HTTP blocks,
    /// else the record's Content-Type, lower-cased without parameters.
    pub mime: Option<String>,
    /// HTTP status of a response.
    pub status: Option<u16>,
    /// Host of the target URI, lower-cased.
    pub host: Option<String>,
    /// Block bytes read.
    pub block_bytes: u64,
    /// Length as stored, when known.
    pub stored_len: Option<u64>,
    /// The input ended inside the block.
    pub truncated: bool,
}

impl RecordFacts {
    /// Reads what is counted of `rec` (its HTTP head, when the block is
    /// HTTP) and finishes it.
    ///
    /// # Errors
    /// As reading the record.
    pub fn read<S: Source>(mut rec: archive::Record<'_, S>, limits: &Limits) -> Result<Self> {
        let h = rec.header();
        let record_type = h.record_type_str().map(|s| s.into_owned());
        let host = h
            .target_uri()
            .and_then(|u| crate::filter::uri_host(&u).map(|h| h.to_ascii_lowercase()));
        let is_http = h.is_http();
        let warc_mime = h
            .content_type()
            .and_then(|ct| warchest::http::media_type(ct.as_bytes()));
        let (mime, status) = match rec.http_with(limits)? {
            Some(head) => (
                head.media_type(),
                head.status().filter(|_| head.is_response()),
            ),
            None if is_http => (None, None),
            None => (warc_mime, None),
        };
        let end = rec.finish()?;
        Ok(RecordFacts {
            record_type,
            mime,
            status,
            host,
            block_bytes: end.block_len,
            stored_len: end.stored_len,
            truncated: end.truncated,
        })
    }
}

/// Counts and bytes of records, in total and by group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Files counted.
    pub files: u64,
    /// Records counted.
    pub records: u64,
    /// Block bytes of all records.
    pub block_bytes: u64,
    /// Stored bytes of the records whose stored length is known.
    pub stored_bytes: u64,
    /// Records whose block was cut short by the end of the input.
    pub truncated: u64,
    /// By WARC-Type (every record; [`NONE_KEY`] without one).
    pub by_type: BTreeMap<String, Count>,
    /// By payload media type (every record; [`NONE_KEY`] without one).
    pub by_mime: BTreeMap<String, Count>,
    /// By HTTP status (HTTP responses only).
    pub by_status: BTreeMap<String, Count>,
    /// By target URI host (records with a host only).
    pub by_host: BTreeMap<String, Count>,
    /// Distinct keys kept per table; later new keys are counted under
    /// [`OTHER_KEY`]. Default 100,000.
    #[serde(skip)]
    pub max_keys: usize,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

fn bump(table: &mut BTreeMap<String, Count>, key: &str, c: Count, max_keys: usize) {
    let key = cut(key);
    if let Some(v) = table.get_mut(key) {
        v.add(c);
    } else if table.len() < max_keys {
        table.insert(key.to_string(), c);
    } else {
        table.entry(OTHER_KEY.to_string()).or_default().add(c);
    }
}

fn cut(s: &str) -> &str {
    if s.len() <= MAX_KEY_LEN {
        return s;
    }
    let mut end = MAX_KEY_LEN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Self {
        Stats {
            files: 0,
            records: 0,
            block_bytes: 0,
            stored_bytes: 0,
            truncated: 0,
            by_type: BTreeMap::new(),
            by_mime: BTreeMap::new(),
            by_status: BTreeMap::new(),
            by_host: BTreeMap::new(),
            max_keys: 100_000,
        }
    }

    /// Counts one record.
    pub fn add(&mut self, r: &RecordFacts) {
        let c = Count {
            records: 1,
            bytes: r.block_bytes,
        };
        self.records += 1;
        self.block_bytes += r.block_bytes;
        self.stored_bytes += r.stored_len.unwrap_or(0);
        self.truncated += u64::from(r.truncated);
        let m = self.max_keys;
        bump(
            &mut self.by_type,
            r.record_type.as_deref().unwrap_or(NONE_KEY),
            c,
            m,
        );
        bump(
            &mut self.by_mime,
            r.mime.as_deref().unwrap_or(NONE_KEY),
            c,
            m,
        );
        if let Some(s) = r.status {
            bump(&mut self.by_status, &s.to_string(), c, m);
        }
        if let Some(h) = &r.host {
            bump(&mut self.by_host, h, c, m);
        }
    }

    /// Reads every record of an archive and counts it (and the file).
    ///
    /// # Errors
    /// As reading the archive; what was counted before stays counted.
    pub fn add_archive<S: Source>(
        &mut self,
        reader: &mut archive::Reader<S>,
        limits: &Limits,
    ) -> Result<()> {
        self.files += 1;
        while let Some(rec) = reader.next_record()? {
            let facts = RecordFacts::read(rec, limits)?;
            self.add(&facts);
        }
        Ok(())
    }

    /// Whether [`Stats::merge`] of `part`, records counted from empty
    /// statistics (a chunk of a file counted on its own thread), gives what
    /// counting the same records on from these gives. It does unless a
    /// table would pass [`Stats::max_keys`] within the merge (or did in
    /// `part`): which keys then go to [`OTHER_KEY`] depends on the order
    /// the records came in, which a table does not keep. A table already
    /// full takes every new key as [`OTHER_KEY`] either way.
    pub fn merges_as_read(&self, part: &Stats) -> bool {
        let m = self.max_keys;
        [
            (&self.by_type, &part.by_type),
            (&self.by_mime, &part.by_mime),
            (&self.by_status, &part.by_status),
            (&self.by_host, &part.by_host),
        ]
        .into_iter()
        .all(|(mine, theirs)| {
            if theirs.contains_key(OTHER_KEY) || theirs.len() > m {
                return false;
            }
            if mine.len() >= m {
                return true;
            }
            let new = theirs.keys().filter(|k| !mine.contains_key(*k)).count();
            mine.len() + new <= m
        })
    }

    /// Adds the counts of `other` (statistics of other files).
    pub fn merge(&mut self, other: &Stats) {
        self.files += other.files;
        self.records += other.records;
        self.block_bytes += other.block_bytes;
        self.stored_bytes += other.stored_bytes;
        self.truncated += other.truncated;
        let m = self.max_keys;
        for (mine, theirs) in [
            (&mut self.by_type, &other.by_type),
            (&mut self.by_mime, &other.by_mime),
            (&mut self.by_status, &other.by_status),
            (&mut self.by_host, &other.by_host),
        ] {
            for (k, c) in theirs {
                bump(mine, k, *c, m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(
        t: &str,
        mime: Option<&str>,
        status: Option<u16>,
        host: Option<&str>,
        n: u64,
    ) -> RecordFacts {
        RecordFacts {
            record_type: Some(t.into()),
            mime: mime.map(Into::into),
            status,
            host: host.map(Into::into),
            block_bytes: n,
            stored_len: Some(n + 100),
            truncated: false,
        }
    }

    #[test]
    fn counts_and_merges_in_any_grouping() {
        let all = [
            facts("response", Some("text/html"), Some(200), Some("a.com"), 10),
            facts("request", None, None, Some("a.com"), 5),
            facts("response", Some("image/png"), Some(404), Some("b.com"), 7),
            facts("warcinfo", Some("application/warc-fields"), None, None, 3),
        ];
        let mut one = Stats::new();
        all.iter().for_each(|f| one.add(f));
        assert_eq!(one.records, 4);
        assert_eq!(one.block_bytes, 25);
        assert_eq!(one.stored_bytes, 425);
        assert_eq!(
            one.by_type["response"],
            Count {
                records: 2,
                bytes: 17
            }
        );
        assert_eq!(
            one.by_mime[NONE_KEY],
            Count {
                records: 1,
                bytes: 5
            }
        );
        assert_eq!(
            one.by_status["404"],
            Count {
                records: 1,
                bytes: 7
            }
        );
        assert_eq!(
            one.by_host["a.com"],
            Count {
                records: 2,
                bytes: 15
            }
        );
        // Every record is in exactly one type and one MIME group.
        for t in [&one.by_type, &one.by_mime] {
            assert_eq!(t.values().map(|c| c.records).sum::<u64>(), one.records);
            assert_eq!(t.values().map(|c| c.bytes).sum::<u64>(), one.block_bytes);
        }
        let (mut a, mut b) = (Stats::new(), Stats::new());
        all[..1].iter().for_each(|f| a.add(f));
        all[1..].iter().for_each(|f| b.add(f));
        a.merge(&b);
        assert_eq!(a, one);
    }

    #[test]
    fn tables_are_bounded() {
        let mut s = Stats::new();
        s.max_keys = 2;
        for h in ["a", "b", "c", "d"] {
            s.add(&facts("response", None, None, Some(h), 1));
        }
        let long = "x".repeat(10_000);
        s.add(&facts(&long, None, None, None, 1));
        assert_eq!(s.by_host.len(), 3);
        assert_eq!(s.by_host[OTHER_KEY].records, 2);
        assert!(s.by_type.keys().all(|k| k.len() <= MAX_KEY_LEN));
    }

    /// Records counted in two parts and merged give the counts of one
    /// read wherever `merges_as_read` says so, at a bound of a few keys.
    #[test]
    fn parts_merge_as_one_read_where_they_may() {
        let hosts = ["a", "b", "c", "d", "e"];
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let (mut merged, mut refused) = (0, 0);
        for _ in 0..2000 {
            let len = 1 + next(10) as usize;
            let recs: Vec<RecordFacts> = (0..len)
                .map(|_| {
                    facts(
                        "response",
                        Some("text/html"),
                        Some(200),
                        Some(hosts[next(5) as usize]),
                        3,
                    )
                })
                .collect();
            let cut = next(len as u64 + 1) as usize;
            let bound = 1 + next(4) as usize;
            let fresh = || Stats {
                max_keys: bound,
                ..Stats::new()
            };
            let mut whole = fresh();
            recs.iter().for_each(|r| whole.add(r));
            let (mut total, mut part) = (fresh(), fresh());
            recs[..cut].iter().for_each(|r| total.add(r));
            recs[cut..].iter().for_each(|r| part.add(r));
            if total.merges_as_read(&part) {
                total.merge(&part);
                assert_eq!(total, whole, "{recs:?} cut {cut} bound {bound}");
                merged += 1;
            } else {
                refused += 1;
            }
        }
        assert!(merged > 500 && refused > 100, "{merged} {refused}");
    }
}
