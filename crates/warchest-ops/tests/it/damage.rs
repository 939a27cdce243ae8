//! The damage harness: every archive fixture (WARC plain, gzip, LZ4 and
//! zstd; ARC plain and gzip; Web InfoMall) gets seeded random damage (bit
//! flips, a cut at any offset, inserted and deleted byte ranges, a zeroed
//! 512-byte sector), and each damaged copy goes through what `ls`, `check`,
//! `validate`, `index` and `recover` do, under a timeout, in a child process
//! under a memory cap:
//!
//! - no panic, no hang;
//! - every error and warning names an offset inside the file;
//! - `recover` finds every record whose bytes the damage left intact (and
//!   that the rules of `docs/recover.md` can confirm), and nothing that was
//!   not in the undamaged file.
//!
//! The normal suite runs a few hundred cases. More, and the benchmark corpus
//! when `WARCHEST_CORPUS` names it, with
//! `cargo test --release -p warchest --test damage -- --ignored`.
//!
//! It generalises the fixed cases of `recover.rs` to every fixture.

use crate::common;
use common::Rng;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use warchest::archive::{Format, Reader};
use warchest::check::check_record;
use warchest::{Error, Limits};
use warchest_index::{IndexOptions, Indexer};
use warchest_ops::recover::{RecoverOptions, recover};
use warchest_validate::{Options as ValidateOptions, Validator};

/// Set in the child process that runs the cases.
const CHILD: &str = "WARCHEST_DAMAGE_CHILD";
/// Address-space cap of the child (`prlimit --as`).
const MEMORY_CAP: u64 = 4 << 30;
/// Peak resident memory the cases may reach.
const MAX_RSS_MIB: u64 = 512;
/// Longest one damaged file may take through all five operations.
const CASE_TIMEOUT: Duration = Duration::from_secs(120);

/// One kind of damage, in the undamaged file's offsets.
#[derive(Debug, Clone)]
enum Damage {
    /// Bits flipped at these offsets.
    Flips(Vec<(u64, u8)>),
    /// The file cut at this length.
    Cut(u64),
    /// Random bytes inserted before this offset.
    Insert(u64, Vec<u8>),
    /// A byte range deleted.
    Delete(u64, u64),
    /// A 512-byte sector (aligned) overwritten with zeros.
    ZeroSector(u64),
}

impl Damage {
    fn random(rng: &mut Rng, len: u64) -> Damage {
        let at = rng.below(len);
        match rng.below(5) {
            0 => {
                let n = 1 + rng.below(8);
                let mut flips: Vec<_> = (0..n)
                    .map(|_| (rng.below(len), 1u8 << rng.below(8)))
                    .collect();
                // Two flips of one bit at one offset would cancel.
                flips.sort();
                flips.dedup_by_key(|f| f.0);
                Damage::Flips(flips)
            }
            1 => Damage::Cut(at),
            2 => {
                let n = 1 + rng.below(600);
                Damage::Insert(at, (0..n).map(|_| rng.next() as u8).collect())
            }
            3 => Damage::Delete(at, (at + 1 + rng.below(2000)).min(len)),
            _ => Damage::ZeroSector(at / 512 * 512),
        }
    }

    fn apply(&self, data: &[u8]) -> Vec<u8> {
        let mut d = data.to_vec();
        match self {
            Damage::Flips(f) => {
                for &(at, bit) in f {
                    d[at as usize] ^= bit;
                }
            }
            Damage::Cut(at) => d.truncate(*at as usize),
            Damage::Insert(at, bytes) => {
                d.splice(*at as usize..*at as usize, bytes.iter().copied());
            }
            Damage::Delete(a, b) => {
                d.drain(*a as usize..*b as usize);
            }
            Damage::ZeroSector(at) => {
                let end = (*at as usize + 512).min(d.len());
                d[*at as usize..end].fill(0);
            }
        }
        d
    }

    /// The ranges of the undamaged file the damage touches; a cut touches
    /// everything from it on.
    fn hit(&self) -> Vec<(u64, u64)> {
        match self {
            Damage::Flips(f) => f.iter().map(|&(a, _)| (a, a + 1)).collect(),
            Damage::Cut(at) => vec![(*at, u64::MAX)],
            // Bytes before a record's first byte leave it whole; inside it
            // they do not.
            Damage::Insert(at, _) => vec![(*at, *at + 1)],
            Damage::Delete(a, b) => vec![(*a, *b)],
            Damage::ZeroSector(at) => vec![(*at, *at + 512)],
        }
    }

    /// A short description for messages.
    fn describe(&self) -> String {
        match self {
            Damage::Insert(at, b) => format!("Insert({at}, {} bytes)", b.len()),
            d => format!("{d:?}"),
        }
    }

    /// True when the damage leaves the bytes as they were (zeros over zeros).
    fn is_noop(&self, data: &[u8]) -> bool {
        match self {
            Damage::ZeroSector(at) => data[*at as usize..(*at as usize + 512).min(data.len())]
                .iter()
                .all(|&b| b == 0),
            Damage::Cut(at) => *at as usize >= data.len(),
            Damage::Delete(a, b) => a == b,
            _ => false,
        }
    }
}

/// A record of the undamaged file: its stored extent and its content.
#[derive(Debug, Clone)]
struct Rec {
    start: u64,
    end: u64,
    raw_header: Vec<u8>,
    block: Vec<u8>,
    /// It carries its own check (a WARC block digest, a Web InfoMall zlib
    /// stream) that confirms its start without the records after it.
    self_checked: bool,
    /// The file ends before its declared length: its block is what was there.
    truncated: bool,
}

/// Every record the lenient reader finds, with its stored extent (to the
/// next member or the end of the file for records that share a member).
fn records(data: &[u8]) -> Vec<Rec> {
    let mut r = Reader::new(data).unwrap();
    let format = r.format();
    let mut v: Vec<Rec> = Vec::new();
    while let Ok(Some(mut rec)) = r.next_record() {
        let start = rec.location().offset;
        let raw_header = rec.raw_header().to_vec();
        let h = rec.header();
        let self_checked = match format {
            Format::Warc => h.block_digest().is_some(),
            Format::InfoMall => memchr::memmem::find(&raw_header, b"unzip-length:").is_some(),
            _ => false,
        };
        let mut block = Vec::new();
        if rec.block().read_to_end(&mut block).is_err() {
            break;
        }
        let Ok(end) = rec.finish() else { break };
        let truncated = end.truncated;
        let end = match end.stored_len {
            Some(n) => start + n,
            None => data.len() as u64,
        };
        v.push(Rec {
            start,
            end,
            raw_header,
            block,
            self_checked,
            truncated,
        });
    }
    // Records sharing a member: each reaches to where the next member
    // starts, or the end.
    for i in 0..v.len() {
        if i + 1 < v.len() && v[i + 1].start == v[i].start {
            v[i].end = data.len() as u64;
        }
    }
    v
}

/// Records of a recovered output (a plain or compressed file of whole
/// records).
fn recovered(out: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut r = Reader::new(out).unwrap();
    let mut v = Vec::new();
    while let Some(mut rec) = r.next_record().unwrap() {
        let h = rec.raw_header().to_vec();
        let b = rec.read_block().unwrap();
        v.push((h, b));
        rec.finish().unwrap();
    }
    v
}

/// A fixture read in: its records, and which of them `recover` gives
/// back from the undamaged file.
struct Subject {
    name: String,
    data: Vec<u8>,
    orig: Vec<Rec>,
    /// `recover` of the undamaged file returns this record.
    base: Vec<bool>,
    /// How many consecutive well-framed records confirm a start
    /// (docs/recover.md).
    confirm: usize,
    /// `recover` reads the file (not LZ4).
    recoverable: bool,
    format: Format,
}

fn subject(name: String, data: Vec<u8>) -> Subject {
    let orig = records(&data);
    let format = Reader::new(&data[..]).unwrap().format();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("undamaged");
    std::fs::write(&p, &data).unwrap();
    let mut out = Vec::new();
    let (recoverable, base) = match recover(&p, &mut out, &RecoverOptions::default()) {
        Ok(_) => {
            let got = recovered(&out);
            let mut base = vec![false; orig.len()];
            let mut i = 0;
            for g in &got {
                if let Some(k) =
                    (i..orig.len()).find(|&k| orig[k].raw_header == g.0 && orig[k].block == g.1)
                {
                    base[k] = true;
                    i = k + 1;
                }
            }
            (true, base)
        }
        Err(_) => (false, vec![false; orig.len()]),
    };
    Subject {
        name,
        data,
        orig,
        base,
        confirm: if format == Format::InfoMall { 3 } else { 2 },
        recoverable,
        format,
    }
}

/// The records `recover` must find in the damaged copy: those it finds in
/// the undamaged file, untouched, and confirmable: the first record of the
/// file, a record with its own check, a record followed by enough
/// untouched records, or by untouched records to the end of the file. The
/// records after a confirmed one in its untouched run are read in sequence.
fn expected(s: &Subject, touched: &[bool]) -> Vec<bool> {
    let n = s.orig.len();
    let ok = |k: usize| s.base[k] && !touched[k];
    let mut want = vec![false; n];
    let mut k = 0;
    while k < n {
        if !ok(k) {
            k += 1;
            continue;
        }
        let mut run_end = k;
        while run_end < n && ok(run_end) {
            run_end += 1;
        }
        let to_eof = run_end == n;
        let mut j = k;
        while j < run_end {
            let confirmable =
                j == 0 || s.orig[j].self_checked || run_end - j >= s.confirm || to_eof;
            if confirmable {
                want[j..run_end].fill(true);
                break;
            }
            j += 1;
        }
        k = run_end;
    }
    want
}

fn assert_error_located(e: &Error, len: u64, what: &str) {
    let p = e
        .position()
        .unwrap_or_else(|| panic!("{what}: error without offset: {e}"));
    assert!(
        p.offset <= len,
        "{what}: offset {} past the end: {e}",
        p.offset
    );
}

/// `ls` and `check`: every record read, its block digested; errors and
/// warnings located inside the file; records inside the file.
fn ls_and_check(d: &[u8], what: &str) {
    let len = d.len() as u64;
    let mut r = match Reader::new(d) {
        Ok(r) => r,
        Err(e) => return assert_error_located(&e, len, what),
    };
    loop {
        match r.next_record() {
            Ok(Some(mut rec)) => {
                let at = rec.location().offset;
                assert!(at < len.max(1), "{what}: record at {at}, file of {len}");
                let _ = check_record(&mut rec, &Limits::default());
                if let Err(e) = rec.finish() {
                    assert_error_located(&e, len, what);
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                assert_error_located(&e, len, what);
                break;
            }
        }
        for w in r.take_warnings() {
            assert!(w.offset <= len, "{what}: warning past the end: {w}");
        }
    }
    for w in r.take_warnings() {
        assert!(w.offset <= len, "{what}: warning past the end: {w}");
    }
}

fn validate(d: &[u8], what: &str) {
    let len = d.len() as u64;
    let mut v = Validator::new(ValidateOptions::default());
    let mut findings = Vec::new();
    let r = v.validate_reader("damaged", d, &mut |f| findings.push(f));
    if let Err(e) = r {
        assert_error_located(&e, len, what);
    }
    for f in &findings {
        if let Some(o) = f.offset {
            assert!(o <= len, "{what}: finding past the end: {f}");
        }
    }
    let _ = v.finish(&mut |_| {});
}

fn index(d: &[u8], what: &str) {
    let len = d.len() as u64;
    let Ok(mut r) = Reader::new(d) else { return };
    let ix = Indexer::new("damaged", IndexOptions::default());
    let mut entries = Vec::new();
    if let Err(e) = ix.index(&mut r, |e| {
        entries.push(e);
        Ok(())
    }) {
        assert_error_located(&e, len, what);
    }
    for e in &entries {
        assert!(e.offset < len, "{what}: entry at {} past the end", e.offset);
    }
}

fn recover_check(s: &Subject, damage: &Damage, d: &[u8], what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("damaged");
    std::fs::write(&p, d).unwrap();
    let mut out = Vec::new();
    // The format given, as a user would when the damage hides it.
    let opts = RecoverOptions {
        format: Some(s.format),
        ..RecoverOptions::default()
    };
    let rep = match recover(&p, &mut out, &opts) {
        Ok(r) => r,
        Err(e) => {
            // Only a file with nothing recognisable left may fail.
            assert!(
                !s.recoverable || d.len() < 1024 || s.orig.is_empty(),
                "{what}: recover failed: {e}"
            );
            return;
        }
    };
    for r in &rep.ranges {
        assert!(r.start <= r.end, "{what}: range {r:?}");
        assert!(
            r.start <= d.len() as u64,
            "{what}: range {r:?} past the end"
        );
    }
    if !s.recoverable {
        return;
    }
    let mut hit = damage.hit();
    // Bytes deleted inside a record without a checksum: read by its length,
    // it takes in as many bytes of what follows it, which nothing can tell
    // (docs/recover.md, "What cannot be told"); the file may then look whole.
    let mut untellable = false;
    if let Damage::Delete(a, b) = damage {
        for r in &s.orig {
            if r.start <= *a && *a < r.end && !r.self_checked {
                hit.push((r.end, r.end + (b - a)));
                untellable = true;
            }
        }
    }
    let touched: Vec<bool> = s
        .orig
        .iter()
        .map(|r| hit.iter().any(|&(a, b)| a < r.end && r.start < b))
        .collect();
    let want = expected(s, &touched);
    let got = recovered(&out);
    // In order, each recovered record one of the originals, or a touched
    // one whose damage no check can see (docs/recover.md, "What cannot be
    // told"): its block whole and its header damaged (no format checks
    // header values), or, without a checksum over the block, bytes of both
    // changed in place. Damage that changes the block's length breaks the
    // framing and must not come back, except in a record the file had cut
    // short: bytes inserted into it can make up its declared length.
    let similar = |k: usize, g: &(Vec<u8>, Vec<u8>)| {
        let o = &s.orig[k];
        touched[k]
            && (o.block == g.1
                || (!o.self_checked
                    && o.raw_header.len() == g.0.len()
                    && (o.block.len() == g.1.len()
                        || (o.truncated && g.1.len() > o.block.len())
                        // An ARC filedesc record's block holds its own
                        // line; with its name damaged the line is only
                        // the header of an ordinary record.
                        || o.raw_header.len() + g.1.len() == o.block.len())))
    };
    let mut found = vec![false; s.orig.len()];
    // A record came back changed: its block proven by its digest, or
    // damage no check can see. recover then reports no damage for it (it
    // does not look at the header of a record whose digest verifies).
    let mut altered = false;
    let mut i = 0;
    for g in &got {
        // Files hold identical records: an untouched one is the better
        // match.
        let exact = |k: usize| s.orig[k].raw_header == g.0 && s.orig[k].block == g.1;
        let k = (i..s.orig.len())
            .find(|&k| exact(k) && !touched[k])
            .or_else(|| (i..s.orig.len()).find(|&k| exact(k)))
            .or_else(|| (i..s.orig.len()).find(|&k| similar(k, g)));
        let Some(k) = k else {
            panic!(
                "{what}: recovered record {:?} is not in the undamaged file",
                String::from_utf8_lossy(&g.0[..g.0.len().min(200)])
            );
        };
        if let Some(j) = (i..k).find(|&j| want[j]) {
            panic!(
                "{what}: intact record {j} at {} not recovered",
                s.orig[j].start
            );
        }
        found[k] = true;
        altered |= !exact(k);
        i = k + 1;
    }
    if let Some(j) = (i..s.orig.len()).find(|&j| want[j]) {
        panic!(
            "{what}: intact record {j} at {} not recovered (tail)",
            s.orig[j].start
        );
    }
    // A record lost is reported, unless the file was cut before it (a cut
    // between records leaves a file that looks whole).
    let gone = |k: usize| matches!(damage, Damage::Cut(at) if s.orig[k].start >= *at);
    if !untellable
        && !altered
        && !looks_whole(d)
        && (0..s.orig.len()).any(|k| s.base[k] && !found[k] && !gone(k))
    {
        assert!(!rep.is_clean(), "{what}: records lost, no damage reported");
    }
}

/// True when the damaged copy reads as a whole file: no warning, no error,
/// no digest that fails. Damage can leave one (a deleted run of records
/// that ends where an identical record begins); nothing can tell.
fn looks_whole(d: &[u8]) -> bool {
    let Ok(mut r) = Reader::new(d) else {
        return false;
    };
    loop {
        match r.next_record() {
            Ok(Some(mut rec)) => {
                let ok = check_record(&mut rec, &Limits::default()).is_ok_and(|c| c.is_ok());
                if !ok || rec.finish().map_or(true, |e| e.truncated) {
                    return false;
                }
            }
            Ok(None) => return r.take_warnings().is_empty(),
            Err(_) => return false,
        }
    }
}

/// Runs the five operations over one damaged copy on a worker thread and
/// fails on a panic or when it takes longer than [`CASE_TIMEOUT`].
fn run_case(s: &std::sync::Arc<Subject>, damage: Damage) {
    let what = format!("{}: {}", s.name, damage.describe());
    let (tx, rx) = mpsc::channel();
    let s2 = s.clone();
    let what2 = what.clone();
    let worker = std::thread::spawn(move || {
        let d = damage.apply(&s2.data);
        ls_and_check(&d, &what2);
        validate(&d, &what2);
        index(&d, &what2);
        recover_check(&s2, &damage, &d, &what2);
        let _ = tx.send(());
    });
    match rx.recv_timeout(CASE_TIMEOUT) {
        Ok(()) => worker.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = worker.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no end after {CASE_TIMEOUT:?}"),
    }
}

/// Every archive fixture, plus what the fixtures lack: a zstd WARC with
/// digests (page.dat converted) and uncompressed Web InfoMall.
fn subjects() -> Vec<Subject> {
    let mut v: Vec<Subject> = common::fixture_files(&[
        ".warc",
        ".warc.gz",
        ".warc.lz4",
        ".warc.zst",
        ".gz.bad",
        ".arc",
        ".arc.gz",
        ".dat",
    ])
    .into_iter()
    .map(|p| {
        let name = p
            .strip_prefix(common::fixtures())
            .unwrap_or(&p)
            .display()
            .to_string();
        subject(name, std::fs::read(&p).unwrap())
    })
    .collect();
    v.push(subject("(zstd WARC)".into(), zstd_warc()));
    v.push(subject("(plain Web InfoMall)".into(), plain_infomall()));
    v
}

fn zstd_warc() -> Vec<u8> {
    crate::zstd_warc_of("jwat/small_BNF.arc")
}

fn plain_infomall() -> Vec<u8> {
    let mut data = Vec::new();
    let mut w = warchest::infomall::Writer::new(&mut data);
    for i in 0..12 {
        let p = warchest::infomall::Properties::new(
            format!("http://example.com/{i}"),
            "Tue, 28 Feb 2006 05:42:09 GMT",
        );
        let body = format!("HTTP/1.0 200 OK\r\n\r\n<p>page {i}</p>\nversion: in text\n");
        w.write(&p, &mut body.as_bytes(), false).unwrap();
    }
    w.finish().unwrap();
    data
}

/// `cases` damaged copies of each subject, seeded by `seed`.
fn run_all(subjects: Vec<Subject>, seed: u64, cases: usize) {
    let start = Instant::now();
    let mut n = 0;
    // Replays the cases of the subjects whose name contains this, with the
    // same seeds (a subject's seed depends on its place in the list).
    let only = std::env::var("WARCHEST_DAMAGE_ONLY").ok();
    for (i, s) in subjects.into_iter().enumerate() {
        if only.as_ref().is_some_and(|o| !s.name.contains(o.as_str())) {
            continue;
        }
        assert!(!s.data.is_empty(), "{}", s.name);
        let s = std::sync::Arc::new(s);
        let mut rng = Rng(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for _ in 0..cases {
            let d = Damage::random(&mut rng, s.data.len() as u64);
            if d.is_noop(&s.data) {
                continue;
            }
            run_case(&s, d);
            n += 1;
        }
    }
    eprintln!("{n} damaged files in {:?}", start.elapsed());
    assert!(n > 0);
}

/// Runs test `name` of this binary again in a child process under the
/// memory cap; in the child, runs `body` and checks the peak memory.
fn capped(name: &str, timeout: Duration, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        body();
        if let Some(kib) = common::peak_rss_kib() {
            eprintln!("peak RSS {kib} KiB");
            assert!(kib < MAX_RSS_MIB << 10, "peak RSS {kib} KiB");
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("prlimit")
        .arg(format!("--as={MEMORY_CAP}"))
        .arg("--")
        .arg(exe)
        .args([
            &common::test_path(module_path!(), name),
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .args(["--include-ignored"])
        .env(CHILD, "1")
        .spawn()
        .expect("prlimit (util-linux) runs the cases");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("{name}: no end after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{name}: {status}");
}

#[test]
fn damaged_fixtures() {
    capped("damaged_fixtures", Duration::from_secs(900), || {
        run_all(subjects(), 0xda3a_6e01, 5);
    });
}

#[test]
#[ignore = "long: thousands of damaged copies of every fixture, and the corpus"]
fn damaged_fixtures_many() {
    capped(
        "damaged_fixtures_many",
        Duration::from_secs(6 * 3600),
        || {
            run_all(subjects(), 0xda3a_6e02, 60);
            if let Some(p) = std::env::var_os("WARCHEST_CORPUS") {
                corpus(Path::new(&p));
            }
        },
    );
}

/// The corpus: too large to damage whole in memory many times; its first
/// 8 MiB, cut at a member boundary, damaged 40 times.
fn corpus(path: &Path) {
    let mut f = std::fs::File::open(path).unwrap();
    let mut head = vec![0u8; 8 << 20];
    let n = read_up_to(&mut f, &mut head);
    head.truncate(n);
    let recs = records(&head);
    // Keep only the whole records.
    let end = recs
        .iter()
        .rev()
        .nth(1)
        .map_or(head.len() as u64, |r| r.end);
    head.truncate(end as usize);
    let name: PathBuf = path.file_name().unwrap_or_default().into();
    run_all(vec![subject(name.display().to_string(), head)], 0xc0de, 40);
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}
