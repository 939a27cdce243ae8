//! `warchest-bench TOOL WORKLOAD FILE`: one timed pass, one line of output
//! (`seconds records content_bytes`), so the driver script can take medians
//! over alternating runs of each tool.
//!
//! Workloads:
//! - `skip`: iterate every record, headers parsed, payloads skipped;
//! - `read`: also parse HTTP heads and read every payload;
//! - `digest`: verify block and payload digests (warchest only; FastWARC's
//!   digest check freezes records, so `read` is its comparison point).

use std::fs::File;
use std::io::{BufReader, Read};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: warchest-bench warchest|fastwarc skip|read|digest FILE");
        std::process::exit(2);
    }
    let (tool, work, path) = (&args[1], &args[2], &args[3]);
    let start = Instant::now();
    let (records, bytes) = match (tool.as_str(), work.as_str()) {
        ("warchest", w) => warchest_run(w, path),
        ("fastwarc", w) => fastwarc_run(w, path),
        _ => {
            eprintln!("unknown tool {tool}");
            std::process::exit(2);
        }
    };
    println!("{:.4} {records} {bytes}", start.elapsed().as_secs_f64());
}

fn warchest_run(work: &str, path: &str) -> (u64, u64) {
    use warchest::archive::Reader;
    let mut r = Reader::open(path).expect("open");
    let limits = warchest::Limits::default();
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 16];
    // One head for every record (no allocation per head).
    let mut heads = warchest::http::HeadReader::new();
    while let Some(mut rec) = r.next_record().expect("read") {
        n += 1;
        bytes += rec.header().content_length().unwrap_or(0);
        match work {
            "skip" => {}
            "read" => {
                let http = rec.header().is_http();
                let mut block = rec.block();
                if http {
                    let _ = heads.read(&mut block, &limits).expect("head");
                }
                while block.read(&mut buf).expect("payload") > 0 {}
            }
            "digest" => {
                let c = warchest::check::check_record(&mut rec, &limits).expect("check");
                std::hint::black_box(c);
            }
            other => panic!("unknown workload {other}"),
        }
    }
    (n, bytes)
}

fn fastwarc_run(work: &str, path: &str) -> (u64, u64) {
    use fastwarc::warc::iter::ArchiveIterator;
    use fastwarc::warc::record::SharedWarcRecord;
    let file = BufReader::with_capacity(1 << 20, File::open(path).expect("open"));
    let read = work == "read";
    let it = ArchiveIterator::new(file)
        .with_parse_http(read)
        .with_inplace(true);
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 16];
    for rec in it {
        let Ok(rec) = rec else { continue };
        n += 1;
        rec.with_mut(|r| {
            bytes += r.content_length();
            if read {
                if let Some(reader) = r.reader_mut() {
                    while reader.read(&mut buf).unwrap_or(0) > 0 {}
                }
            }
        });
    }
    (n, bytes)
}
