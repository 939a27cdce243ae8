//! Write errors (a full disk) surface as errors, never as a silently short
//! file, and no file is left under its final name half-written.
//!
//! - [`Writer`] over a sink that fails with ENOSPC after N bytes, for N
//!   across the whole output, with every compression: some call returns the
//!   error; a run that succeeds wrote every byte.
//! - [`RotatingWriter`] in a child process whose file size limit
//!   (RLIMIT_FSIZE, SIGXFSZ ignored) makes a real file's write fail: the
//!   error names the file; every file under its final name is whole and
//!   checks; the file being written keeps its `.open` name.

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::Command;

use crate::common;
use common::noise;

use warchest::archive::Reader;
use warchest::check::check_record;
use warchest::warc::RecordType;
use warchest::write::{
    Body, Compression, NewRecord, Oversize, RotatingOptions, RotatingWriter, Writer, WriterOptions,
};

/// A sink that takes `room` bytes, then fails like a full disk.
struct Full {
    data: Vec<u8>,
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.room - self.data.len();
        if left == 0 {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = left.min(buf.len());
        self.data.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A sink that takes at most 7 bytes a call: short writes are no error.
struct Dribble(Vec<u8>);

impl Write for Dribble {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(7);
        self.0.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn bodies() -> Vec<Vec<u8>> {
    vec![
        b"hello".to_vec(),
        noise(70_000, 1),
        vec![b'a'; 300_000],
        Vec::new(),
        noise(5_000, 2),
    ]
}

/// Writes the records and finishes: the first error, or the sink.
fn write_all<W: Write>(out: W, c: &Compression) -> Result<W, warchest::Error> {
    let mut w = Writer::new(
        out,
        WriterOptions {
            compression: c.clone(),
            ..WriterOptions::default()
        },
    )?;
    for (i, b) in bodies().iter().enumerate() {
        // Fixed ids and dates: every run writes the same bytes.
        let mut rec = NewRecord::new(RecordType::Resource);
        rec.set("WARC-Target-URI", format!("http://example.com/{i}"))?
            .set(
                "WARC-Record-ID",
                format!("<urn:uuid:00000000-0000-4000-8000-{i:012}>"),
            )?
            .set("WARC-Date", "2026-01-01T00:00:00Z")?;
        w.write(&mut rec, Body::Bytes(b))?;
    }
    w.finish()
}

#[test]
fn writer_reports_a_full_disk_at_any_byte() {
    for c in common::compressions() {
        let full = write_all(Vec::new(), &c).unwrap();
        assert!(
            Reader::new(&full[..])
                .unwrap()
                .next_record()
                .unwrap()
                .is_some()
        );
        // Short writes are no error: the same bytes come out.
        let dribbled = write_all(Dribble(Vec::new()), &c).unwrap().0;
        assert_eq!(dribbled, full, "{c:?}");
        let n = |d: &[u8]| {
            let mut r = Reader::new(d).unwrap();
            let mut k = 0;
            while let Some(rec) = r.next_record().unwrap() {
                rec.finish().unwrap();
                k += 1;
            }
            k
        };
        assert_eq!(n(&dribbled), 5);
        // Cut points spread over the whole output, and the edges.
        let len = full.len();
        let mut cuts: Vec<usize> = (0..64).map(|i| i * len / 64).collect();
        cuts.extend([1, 2, len - 1]);
        for room in cuts {
            match write_all(
                Full {
                    data: Vec::new(),
                    room,
                },
                &c,
            ) {
                Ok(sink) => panic!(
                    "{c:?}: a disk full after {room} of {len} bytes went unnoticed ({} written)",
                    sink.data.len()
                ),
                Err(e) => {
                    assert!(e.is_io_error(), "{c:?} at {room}: {e}");
                    assert!(
                        e.to_string().contains("No space left"),
                        "{c:?} at {room}: {e}"
                    );
                }
            }
        }
    }
}

const CHILD: &str = "WARCHEST_DISK_FULL_CHILD";
/// The child's file size limit, in bytes.
const FSIZE: u64 = 200_000;

/// The child: writes records into rotating files until the size limit
/// stops it, and prints the error.
fn child(dir: &Path) {
    let mut w = RotatingWriter::new(
        dir,
        RotatingOptions {
            max_size: 150_000,
            prefix: "full".into(),
            crawlhost: "test".into(),
            oversize: Oversize::OwnFile,
            ..RotatingOptions::default()
        },
    )
    .unwrap();
    for i in 0..1000u64 {
        let mut rec = NewRecord::new(RecordType::Resource);
        rec.set("WARC-Target-URI", format!("http://example.com/{i}"))
            .unwrap();
        // Records of 60 KB, two to a file, until one larger than the size
        // limit: it gets a file of its own, and the disk fills in it.
        let body = noise(if i == 5 { 260_000 } else { 60_000 }, i + 1);
        if let Err(e) = w.write(&mut rec, Body::Bytes(&body)) {
            println!("\nERROR: {e}");
            return;
        }
    }
    match w.finish() {
        Ok(_) => println!("\nNO ERROR"),
        Err(e) => println!("\nERROR: {e}"),
    }
}

#[test]
fn rotating_writer_on_a_full_disk() {
    if let Some(dir) = std::env::var_os(CHILD) {
        child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    // The shell only ignores SIGXFSZ (inherited through exec), so that a
    // write past the limit fails with EFBIG instead of killing the child.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; exec prlimit --fsize={FSIZE} -- \"$0\" \"$@\""
        ))
        .arg(exe)
        .args([
            &common::test_path(module_path!(), "rotating_writer_on_a_full_disk"),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.find("ERROR").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("child said nothing: {stdout}"));
    assert!(line.starts_with("ERROR: "), "{line}");
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let open: Vec<_> = names
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "open"))
        .collect();
    assert_eq!(open.len(), 1, "{names:?}");
    // The error names the file that was being written.
    let open_name = open[0].file_name().unwrap().to_string_lossy();
    assert!(
        line.contains(&*open_name),
        "{line} does not name {open_name}"
    );
    assert!(
        line.contains("too large") || line.contains("File too large"),
        "{line}"
    );
    // Every file under its final name is whole: records read and check
    // with no warning.
    let closed: Vec<_> = names.iter().filter(|p| !open.contains(p)).collect();
    assert!(!closed.is_empty(), "{names:?}");
    for p in closed {
        let mut r = Reader::open(p).unwrap();
        let mut n = 0;
        while let Some(mut rec) = r.next_record().unwrap() {
            let c = check_record(&mut rec, &Default::default()).unwrap();
            assert!(c.is_ok(), "{}: {c:?}", p.display());
            assert!(!rec.finish().unwrap().truncated);
            n += 1;
        }
        assert!(n >= 2, "{}: {n} records", p.display());
        assert!(r.take_warnings().is_empty(), "{}", p.display());
        assert!(std::fs::metadata(p).unwrap().len() <= FSIZE);
    }
    // The open file holds whole records up to where the disk filled.
    let mut r = Reader::open(open[0]).unwrap();
    let mut whole = 0;
    while let Ok(Some(mut rec)) = r.next_record() {
        let mut b = Vec::new();
        let _ = rec.block().read_to_end(&mut b);
        match rec.finish() {
            Ok(end) if !end.truncated => whole += 1,
            _ => break,
        }
    }
    assert!(whole >= 1, "the open file's warcinfo record is whole");
}
