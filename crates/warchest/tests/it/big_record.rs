//! A 4 GiB record, generated on the fly (never stored), is read, digested and
//! copied through the writer with peak memory (VmHWM of this test process)
//! under 64 MiB. Its own test binary, so nothing else runs in the process.

use crate::common;
use std::io::{self, Read, Write};

use warchest::archive::Reader;
use warchest::digest::{Algorithm, DigestReader};
use warchest::write::{Compression, Writer, WriterOptions};

const BODY: u64 = 4 << 30;

/// A WARC record of BODY bytes of a repeating pattern, produced as it is read.
struct Synth {
    head: Vec<u8>,
    pattern: Vec<u8>,
    pos: u64,
    total: u64,
}

impl Synth {
    fn new() -> Self {
        let head = format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n\
WARC-Date: 2026-11-22T00:00:00Z\r\nContent-Type: application/octet-stream\r\nContent-Length: {BODY}\r\n\r\n"
        )
        .into_bytes();
        let total = head.len() as u64 + BODY + 4;
        let pattern = (0..PATTERN as u64).map(pattern).collect();
        Synth {
            head,
            pattern,
            pos: 0,
            total,
        }
    }
}

/// The body repeats this many bytes (a power of two).
const PATTERN: usize = 1 << 16;

fn pattern(at: u64) -> u8 {
    (at.wrapping_mul(2654435761) >> 13) as u8
}

impl Read for Synth {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let head = self.head.len() as u64;
        let p = self.pos;
        let n = if p < head {
            let k = ((head - p) as usize).min(buf.len());
            buf[..k].copy_from_slice(&self.head[p as usize..p as usize + k]);
            k
        } else if p < head + BODY {
            // Copy from the pattern table, at most to its end.
            let off = ((p - head) as usize) & (PATTERN - 1);
            let k = (PATTERN - off)
                .min(buf.len())
                .min((head + BODY - p) as usize);
            buf[..k].copy_from_slice(&self.pattern[off..off + k]);
            k
        } else {
            let left = (self.total - p) as usize;
            let k = left.min(buf.len());
            let trailer = b"\r\n\r\n";
            buf[..k].copy_from_slice(&trailer[4 - left..4 - left + k]);
            k
        };
        self.pos += n as u64;
        Ok(n)
    }
}

/// Counts what the writer emits.
struct Sink {
    len: u64,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.len += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Set in the child process that runs the 4 GiB case alone, so that its
/// peak memory is its own and not that of tests running beside it.
const CHILD: &str = "WARCHEST_BIG_RECORD_CHILD";

#[test]
fn four_gib_record_in_constant_memory() {
    if std::env::var_os(CHILD).is_none() {
        let name = common::test_path(module_path!(), "four_gib_record_in_constant_memory");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("1 passed"),
            "the child ran no test: {stdout}"
        );
        return;
    }
    let mut reader = Reader::new(Synth::new()).unwrap();
    let mut rec = reader.next_record().unwrap().unwrap();
    assert_eq!(rec.header().content_length(), Some(BODY));
    let header = rec.header().clone();
    let mut w = Writer::new(
        Sink { len: 0 },
        WriterOptions {
            compression: Compression::None,
            digest: None,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    let mut block = DigestReader::with_algorithms(rec.block(), &[Algorithm::Sha1]);
    let written = w.write_raw(&header, &mut block).unwrap();
    assert_eq!(block.bytes_read(), BODY);
    let (_, digests) = block.finish();
    // The same digest computed apart, over the pattern table repeated.
    let table: Vec<u8> = (0..PATTERN as u64).map(pattern).collect();
    let mut want = warchest::digest::Hasher::new(Algorithm::Sha1);
    for _ in 0..BODY / PATTERN as u64 {
        want.update(&table);
    }
    assert_eq!(digests, vec![want.finalize()]);
    assert_eq!(written.block_len, BODY);
    let end = rec.finish().unwrap();
    assert_eq!(end.block_len, BODY);
    assert!(!end.truncated);
    let sink = w.finish().unwrap();
    assert_eq!(sink.len, header.as_bytes().len() as u64 + BODY + 4);
    assert!(reader.next_record().unwrap().is_none());
    assert!(reader.take_warnings().is_empty());
    if let Some(kib) = common::peak_rss_kib() {
        assert!(kib < 64 * 1024, "peak RSS {kib} KiB");
        eprintln!("peak RSS {kib} KiB for a 4 GiB record");
    }
}
