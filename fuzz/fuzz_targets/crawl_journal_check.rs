//! The checks of the `crawl_journal` fuzz target, shared with the replay of
//! fuzz/regressions/crawl_journal/ in warchest-crawl's tests
//! (crates/warchest-crawl/tests/it/fuzz_regressions.rs).
//!
//! Any bytes as a crawl's frontier journal (`frontier.journal`), read back
//! as a resumed crawl reads it: the first byte picks the file made of the
//! rest: the bytes alone, or after a header of the frontier's epoch (so
//! that its records are replayed), raw or cut into whole records (a
//! 16-bit length each, then a torn tail). The reader accounts for every
//! byte (header, whole records, ignored tail), gives back exactly the
//! records framed, reports damage only with bytes ignored, and allocates
//! nothing a damaged length claims; a change decoded, encoded again,
//! decodes the same. Then the frontier is opened over it (a copy of a
//! small frontier made once, with URIs queued and one in flight): no
//! panic; opening fails only on a journal of its epoch; its notes and
//! lost changes are the reader's; a frontier opened is closed and opened
//! again clean, with the same counts.
use std::path::PathBuf;
use std::sync::OnceLock;

use url::Url;
use warchest_crawl::frontier::{Frontier, Next, journal_path};
use warchest_crawl::fuzzing::{journal_change, journal_header, journal_record, read_journal};
use warchest_crawl::uri::CrawlUri;

/// The largest record the reader takes (`MAX_RECORD` in journal.rs).
const MAX_RECORD: usize = 256 << 20;

struct Template {
    _dir: tempfile::TempDir,
    /// The frontier's database file, closed.
    db: Vec<u8>,
    /// The epoch it holds.
    epoch: u64,
    /// Where each input's frontier is opened.
    path: PathBuf,
}

/// Made once a process: a frontier with URIs queued and one in flight,
/// closed; in memory if /dev/shm is there (opening syncs).
fn template() -> &'static Template {
    static T: OnceLock<Template> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let t = dir.path().join("template.redb");
        let (f, _) = Frontier::open(&t).unwrap();
        let uris: Vec<CrawlUri> = ["http://a.test/", "http://a.test/x", "http://b.test/"]
            .iter()
            .enumerate()
            .map(|(i, u)| CrawlUri::seed(Url::parse(u).unwrap(), i as u32))
            .collect();
        f.add(&uris).unwrap();
        assert!(matches!(f.next().unwrap(), Next::Uri(_)));
        // The journal's header holds the epoch of the open frontier;
        // closing makes a checkpoint, which takes the next one.
        let head = std::fs::read(journal_path(&t)).unwrap();
        let epoch = u64::from_le_bytes(head[4..12].try_into().unwrap()) + 1;
        drop(f);
        let db = std::fs::read(&t).unwrap();
        let path = dir.path().join("f.redb");
        let t = Template {
            _dir: dir,
            db,
            epoch,
            path,
        };
        // The epoch is right: a record of it that does not decode fails
        // the opening (of another epoch, it would not be replayed).
        let mut j = journal_header(t.epoch);
        j.extend_from_slice(&journal_record(&[0xff]));
        assert!(
            open(&t, &j).is_err(),
            "the template's epoch is not {}",
            t.epoch
        );
        t
    })
}

/// Opens the template's frontier with `journal` beside it.
fn open(
    t: &Template,
    journal: &[u8],
) -> Result<(Frontier, u64), warchest_crawl::frontier::FrontierError> {
    std::fs::write(&t.path, &t.db).unwrap();
    std::fs::write(journal_path(&t.path), journal).unwrap();
    let _ = std::fs::remove_file(journal_path(&t.path).with_extension("journal.new"));
    Frontier::open(&t.path)
}

fn check_read(file: &[u8], framed: Option<(&[Vec<u8>], usize)>) {
    let r = read_journal(file);
    let records: u64 = r.records.iter().map(|p| p.len() as u64 + 8).sum();
    let header = if r.epoch.is_some() { 12 } else { 0 };
    assert_eq!(
        header + records + r.torn,
        file.len() as u64,
        "every byte accounted for"
    );
    assert!(r.records.iter().all(|p| p.len() <= MAX_RECORD));
    if let Some((payloads, tail)) = framed {
        assert_eq!(r.records, payloads, "the records framed");
        assert_eq!(r.torn, tail as u64);
    }
    if r.torn == 0 {
        assert!(r.damage.is_none() && !r.lost_changes && r.later == 0);
    } else {
        assert!(r.damage.is_some());
    }
    for p in &r.records {
        if let Some((op, again)) = journal_change(p) {
            assert_eq!(Some(&op), again.as_ref(), "encoded again");
        }
    }
}

/// The target's checks on one input.
pub fn check(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let t = template();
    let mut file = Vec::new();
    let mut payloads = Vec::new();
    let mut tail = 0;
    match first % 3 {
        0 => file.extend_from_slice(rest),
        1 => {
            file = journal_header(t.epoch);
            file.extend_from_slice(rest);
        }
        _ => {
            file = journal_header(t.epoch);
            let mut p = rest;
            while p.len() >= 2 {
                let n = usize::from(u16::from_le_bytes([p[0], p[1]]));
                if n == 0 || p.len() - 2 < n {
                    break;
                }
                payloads.push(p[2..2 + n].to_vec());
                file.extend_from_slice(&journal_record(&p[2..2 + n]));
                p = &p[2 + n..];
            }
            // The rest as a torn tail; one that reads as a record would be
            // taken as one.
            if p.len() < 8 {
                file.extend_from_slice(p);
                tail = p.len();
            }
        }
    }
    let framed = (first % 3 == 2).then_some((&payloads[..], tail));
    check_read(&file, framed);
    let summary = read_journal(&file);
    let path = journal_path(&t.path);
    match open(t, &file) {
        Ok((f, _)) => {
            assert_eq!(!f.opening_notes().is_empty(), summary.damage.is_some());
            assert_eq!(f.lost_changes(), summary.lost_changes);
            let counts = f.counts().unwrap();
            drop(f);
            let (f, requeued) = Frontier::open(&t.path).unwrap();
            assert_eq!(requeued, 0, "nothing in flight after a recovery");
            assert!(f.opening_notes().is_empty() && !f.lost_changes());
            assert_eq!(f.counts().unwrap(), counts, "the same counts reopened");
        }
        Err(e) => {
            assert_eq!(summary.epoch, Some(t.epoch), "{}: {e}", path.display());
        }
    }
}
