//! A writer killed in the middle of a record: the files it closed are
//! whole and valid, and every complete record of its `NAME.open` file reads
//! and checks with the lenient reader, and `recover` salvages exactly those.
//!
//! The test runs itself as the child process (selected by an environment
//! variable), so that the writer can be killed with SIGKILL.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::noise;

use warchest::archive::Reader;
use warchest::check::{DigestStatus, check_record};
use warchest::warc::RecordType;
use warchest::write::{Body, NewRecord, RotatingOptions, RotatingWriter};

const CHILD_ENV: &str = "WARCHEST_CRASH_CHILD_DIR";

/// A body that, on its second pass (the writer digests, then copies),
/// stops after `stall_at` bytes and waits to be killed.
struct Stalling {
    data: Vec<u8>,
    pos: usize,
    passes: u32,
    stall_at: usize,
}

impl Read for Stalling {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos == 0 {
            self.passes += 1;
        }
        if self.passes >= 2 && self.pos >= self.stall_at {
            println!("\nWARCHEST-CHILD-STALLED");
            io::stdout().flush()?;
            let start = Instant::now();
            // Killed long before; the limit only keeps an orphan from
            // living forever.
            while start.elapsed() < Duration::from_secs(120) {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::process::exit(3);
        }
        let n = buf.len().min(self.data.len() - self.pos).min(64 << 10);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Seek for Stalling {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let p = match to {
            SeekFrom::Start(p) => p as i64,
            SeekFrom::End(d) => self.data.len() as i64 + d,
            SeekFrom::Current(d) => self.pos as i64 + d,
        };
        self.pos = p.clamp(0, self.data.len() as i64) as usize;
        Ok(self.pos as u64)
    }
}

fn child(dir: &Path) {
    let opts = RotatingOptions {
        prefix: "crash".into(),
        crawlhost: "host".into(),
        max_size: 1 << 20,
        ..RotatingOptions::default()
    };
    let mut w = RotatingWriter::new(dir, opts).unwrap();
    for i in 0..12 {
        let mut rec = NewRecord::new(RecordType::Resource);
        rec.set("WARC-Target-URI", format!("http://example.com/{i}"))
            .unwrap();
        w.write(&mut rec, Body::Bytes(&noise(200_000, i + 1)))
            .unwrap();
    }
    // A fresh file: two whole records, then one cut by the kill.
    w.rotate().unwrap();
    for i in 0..2 {
        let mut rec = NewRecord::new(RecordType::Resource);
        rec.set("WARC-Target-URI", format!("http://example.com/open/{i}"))
            .unwrap();
        w.write(&mut rec, Body::Bytes(&noise(100_000, 100 + i)))
            .unwrap();
    }
    let mut body = Stalling {
        data: noise(700_000, 999),
        pos: 0,
        passes: 0,
        stall_at: 600_000,
    };
    let mut rec = NewRecord::new(RecordType::Resource);
    w.write(
        &mut rec,
        Body::Seekable {
            reader: &mut body,
            len: None,
        },
    )
    .unwrap();
    unreachable!("the body stalls");
}

#[test]
fn killed_writer_leaves_valid_and_recoverable_files() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args([
            &common::test_path(
                module_path!(),
                "killed_writer_leaves_valid_and_recoverable_files",
            ),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = proc.stdout.take().unwrap();
    let mut stalled = false;
    for line in BufReader::new(out).lines() {
        if line.unwrap().contains("WARCHEST-CHILD-STALLED") {
            stalled = true;
            break;
        }
    }
    proc.kill().unwrap();
    proc.wait().unwrap();
    assert!(stalled, "the child writer did not reach the stalled record");

    let mut closed = Vec::new();
    let mut open = Vec::new();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".open") {
            open.push(p);
        } else {
            closed.push(p);
        }
    }
    closed.sort();
    assert!(closed.len() >= 2, "{closed:?}");
    assert_eq!(open.len(), 1, "{open:?}");

    // Closed files: whole, every digest valid, no warning.
    let mut records = 0;
    for f in &closed {
        let mut r = Reader::open(f).unwrap();
        while let Some(mut rec) = r.next_record().unwrap() {
            let c = check_record(&mut rec, &Default::default()).unwrap();
            assert_eq!(c.block, DigestStatus::Valid);
            assert!(!rec.finish().unwrap().truncated);
            records += 1;
        }
        assert!(r.take_warnings().is_empty(), "{}", f.display());
    }
    assert_eq!(
        records,
        12 + closed.len(),
        "12 resources and a warcinfo per file"
    );

    // The .open file: its warcinfo and two records whole and valid; the
    // record being written when the writer died is cut, and reported so.
    let mut r = Reader::open(&open[0]).unwrap();
    let mut whole = Vec::new();
    let mut cut = 0;
    while let Ok(Some(mut rec)) = r.next_record() {
        let t = rec.header().record_type();
        let c = check_record(&mut rec, &Default::default());
        let end = rec.finish();
        match (c, end) {
            (Ok(c), Ok(end)) if !end.truncated => {
                assert_eq!(c.block, DigestStatus::Valid);
                whole.push(t);
            }
            _ => cut += 1,
        }
    }
    assert_eq!(
        whole,
        [
            RecordType::Warcinfo,
            RecordType::Resource,
            RecordType::Resource
        ]
    );
    assert_eq!(cut, 1, "the record cut by the kill");
    assert!(!r.take_warnings().is_empty(), "the cut is reported");

    // And `recover` salvages exactly the intact records of the .open file,
    // reporting the cut one as lost.
    let mut out = Vec::new();
    let report = warchest_ops::recover::recover(&open[0], &mut out, &Default::default()).unwrap();
    assert_eq!(report.records_written, 3, "{report:?}");
    assert_eq!(report.records_lost, 1, "{report:?}");
    let mut r = Reader::new(&out[..]).unwrap();
    let mut types = Vec::new();
    while let Some(mut rec) = r.next_record().unwrap() {
        types.push(rec.header().record_type());
        let c = check_record(&mut rec, &Default::default()).unwrap();
        assert_eq!(c.block, DigestStatus::Valid);
    }
    assert_eq!(types, whole);
}
