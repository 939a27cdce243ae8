//! Plain files opened by path are read through a memory map (the `mmap`
//! feature): the same records as the buffered reader, and a file that
//! shrinks under the reader is an error naming file and offset, never a
//! crash (SIGBUS). The jobs of a gzip file read on several threads
//! inflate from such a map too: a file that shrinks under them is
//! reported the same way, and no bytes read as zeros are served.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use warchest::archive::Reader;
use warchest::codec::DecoderOptions;
use warchest::warc::ReaderOptions;

use crate::common;

/// A plain WARC file of `n` records with blocks of 1..`max` bytes.
fn plain_warc(n: usize, max: usize) -> Vec<u8> {
    warc_records(n, max).concat()
}

/// The records of [`plain_warc`], each on its own.
fn warc_records(n: usize, max: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut seed = 7u32;
    for i in 0..n {
        let mut v = Vec::new();
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let len = 1 + (seed >> 8) as usize % max;
        let body: Vec<u8> = (0..len).map(|k| b'a' + ((k + i) % 26) as u8).collect();
        write!(
            v,
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://example.com/{i}\r\n\
             Content-Length: {len}\r\n\r\n"
        )
        .unwrap();
        v.extend(&body);
        v.extend(b"\r\n\r\n");
        out.push(v);
    }
    out
}

/// Every record as (offset, stored length, header, block), and the
/// warnings, read from `r`.
type Listing = (Vec<(u64, Option<u64>, Vec<u8>, Vec<u8>)>, Vec<String>);

fn listing<S: warchest::codec::Source>(mut r: Reader<S>, read_blocks: bool) -> Listing {
    let mut out = Vec::new();
    while let Some(mut rec) = r.next_record().expect("record") {
        let header = rec.raw_header().to_vec();
        let offset = rec.location().offset;
        let block = if read_blocks {
            rec.read_block().expect("block")
        } else {
            Vec::new()
        };
        let end = rec.finish().expect("finish");
        out.push((offset, end.stored_len, header, block));
    }
    let w = r
        .take_warnings()
        .iter()
        .map(|w| format!("{:?} {} {}", w.kind, w.offset, w.message))
        .collect();
    (out, w)
}

/// Reads on to the end (at most 1000 records) or the first error, which
/// it returns; with `blocks`, each record's block is read onto it.
fn read_on<S: warchest::codec::Source>(
    r: &mut Reader<S>,
    mut blocks: Option<&mut Vec<Vec<u8>>>,
) -> Option<String> {
    for _ in 0..1000 {
        let mut rec = match r.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => return None,
            Err(e) => return Some(e.to_string()),
        };
        if let Some(bs) = blocks.as_deref_mut() {
            match rec.read_block() {
                Ok(b) => bs.push(b),
                Err(e) => return Some(e.to_string()),
            }
        }
    }
    None
}

fn opts(buffer_size: usize) -> ReaderOptions {
    ReaderOptions {
        decoder: DecoderOptions {
            buffer_size,
            ..DecoderOptions::default()
        },
        ..ReaderOptions::default()
    }
}

/// A record's offset, stored length and the block bytes read.
type Read1 = (u64, Option<u64>, Vec<u8>);

/// Every third record's block skipped, the others read with `read` calls
/// of 64 KiB (straight from the file into the caller's buffer, the map let
/// go) or of 1,000 bytes (through the reader's buffer), in turns; with
/// `large` false, every read of 1,000 bytes. Each record's offset, stored
/// length and block read, and the warnings.
fn blocks_read_in_turns<R: Read>(
    mut r: Reader<warchest::codec::Decoder<R>>,
    large: bool,
) -> (Vec<Read1>, usize) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while let Some(mut rec) = r.next_record().expect("record") {
        let want = match out.len() % 3 {
            0 => 0,
            1 if large => buf.len(),
            _ => 1000,
        };
        let mut block = Vec::new();
        let mut b = rec.block();
        loop {
            let n = match want {
                0 => 0,
                w => b.read(&mut buf[..w]).expect("read"),
            };
            if n == 0 {
                break;
            }
            block.extend_from_slice(&buf[..n]);
        }
        let offset = rec.location().offset;
        let end = rec.finish().expect("finish");
        out.push((offset, end.stored_len, block));
    }
    (out, r.take_warnings().len())
}

/// Large reads of blocks from a mapped file, from a file read through the
/// buffer and from a slice give the blocks written, at the offsets and
/// with the stored lengths small reads give, and no warning.
#[test]
fn large_reads_of_blocks_give_the_blocks_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.warc");
    let records = warc_records(60, 300_000);
    let bytes = records.concat();
    std::fs::write(&path, &bytes).unwrap();
    let want: Vec<Vec<u8>> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let at = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            if i % 3 == 0 {
                Vec::new()
            } else {
                r[at..r.len() - 4].to_vec()
            }
        })
        .collect();
    assert!(want.iter().map(Vec::len).sum::<usize>() > 2_000_000);
    let (small, warnings) = blocks_read_in_turns(Reader::open(&path).unwrap(), false);
    assert_eq!(warnings, 0);
    let blocks: Vec<Vec<u8>> = small.iter().map(|x| x.2.clone()).collect();
    assert!(blocks == want);
    let mut at = 0;
    for (x, r) in small.iter().zip(&records) {
        assert_eq!((x.0, x.1), (at, Some(r.len() as u64)));
        at += r.len() as u64;
    }
    let file = File::open(&path).unwrap();
    for got in [
        blocks_read_in_turns(Reader::open(&path).unwrap(), true),
        blocks_read_in_turns(Reader::with_options(file, opts(1 << 20)).unwrap(), true),
        blocks_read_in_turns(
            Reader::with_options(&bytes[..], opts(100_000)).unwrap(),
            true,
        ),
    ] {
        assert!(got == (small.clone(), 0));
    }
}

/// The mapped reader (by path) and the buffered one (a reader that
/// cannot seek) agree on every plain fixture, blocks read or skipped, with
/// the default window and a tiny one.
#[test]
fn mapped_and_buffered_readers_agree_on_plain_fixtures() {
    let mut seen = 0;
    for path in common::fixture_files(&[".warc", ".arc"]) {
        let mut head = [0u8; 4];
        let n = File::open(&path).unwrap().read(&mut head).unwrap();
        if warchest::codec::Codec::sniff(&head[..n]).is_some() {
            continue;
        }
        seen += 1;
        for read_blocks in [true, false] {
            for size in [1 << 20, 64] {
                let name = path.display();
                let buffered = File::open(&path).unwrap();
                let b = Reader::with_options(buffered, opts(size)).map(|r| listing(r, read_blocks));
                let m = Reader::open_with(&path, opts(size)).map(|r| listing(r, read_blocks));
                match (b, m) {
                    (Ok(b), Ok(m)) => assert_eq!(b, m, "{name} size {size}"),
                    (b, m) => assert_eq!(b.is_ok(), m.is_ok(), "{name}"),
                }
            }
        }
    }
    assert!(seen >= 5, "{seen} plain fixtures");
}

fn truncate(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// A record whose block is `len` bytes of `b'x'`.
fn record_of(len: usize) -> Vec<u8> {
    let mut v = format!(
        "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://example.com/big\r\n\
         Content-Length: {len}\r\n\r\n"
    )
    .into_bytes();
    v.resize(v.len() + len, b'x');
    v.extend(b"\r\n\r\n");
    v
}

/// How a test reads the records before it pauses.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Blocks {
    /// Skipped.
    Skip,
    /// Read whole (`read_block`: large reads, straight into the caller's
    /// buffer, the map let go).
    Read,
    /// One large read of a large block, then skipped: the map is let go,
    /// and the skips after it are sought over.
    OneLargeRead,
}

/// A reader paused in the middle of a plain file that is then cut short
/// (before or after where it stands) goes on with an error that names the
/// file and says it shrank; the process does not die of SIGBUS. Mapped,
/// the map's guards say so; a reader that let the map go (a large read)
/// says so where the file ends before the length it had.
#[test]
fn a_file_that_shrinks_under_a_paused_reader_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = record_of(40_000);
    data.extend(plain_warc(400, 20_000));
    assert!(data.len() > 3 << 20);
    let mut kinds = Vec::new();
    for (cut, blocks) in [
        (0.5, Blocks::Skip),
        (0.5, Blocks::Read),
        (0.05, Blocks::Skip),
        (0.2, Blocks::Read),
        (0.5, Blocks::OneLargeRead),
        (0.05, Blocks::OneLargeRead),
    ] {
        let path = dir.path().join("shrinking.warc");
        std::fs::write(&path, &data).unwrap();
        let mut r = Reader::open(&path).unwrap();
        let mut n = 0;
        while n < 60 {
            let mut rec = r.next_record().unwrap().unwrap();
            match blocks {
                Blocks::Skip => {}
                Blocks::Read => {
                    rec.read_block().unwrap();
                }
                Blocks::OneLargeRead if n == 0 => {
                    let got = rec.block().read(&mut [0u8; 64 << 10]).unwrap();
                    assert!(got >= 16 << 10, "{got}");
                }
                Blocks::OneLargeRead => {}
            }
            n += 1;
        }
        // Paused mid-file, the current record's block partly read.
        let mut rec = r.next_record().unwrap().unwrap();
        let mut some = [0u8; 10];
        rec.block().read_exact(&mut some).unwrap();
        let len = (data.len() as f64 * cut) as u64;
        truncate(&path, len);
        let mut read = Vec::new();
        let err = read_on(&mut r, (blocks == Blocks::Read).then_some(&mut read));
        let e = err.unwrap_or_else(|| panic!("{blocks:?} cut at {len}: no error"));
        assert!(e.contains("shrank"), "{e}");
        assert!(e.contains("shrinking.warc"), "{e}");
        // After the error the reader is done, not crashed.
        assert!(matches!(r.next_record(), Ok(None) | Err(_)));
        kinds.push(e.contains("read as zeros"));
    }
    // Both guards of the map were met: the size check when the window
    // grows (cut past it), the SIGBUS handler (cut inside the window
    // already checked).
    assert!(kinds.contains(&true) && kinds.contains(&false), "{kinds:?}");
}

/// Records appended while the reader is paused are read: the map grows
/// with the file, and a reader that let the map go (a large read) skips
/// into what was appended.
#[test]
fn records_appended_to_a_mapped_file_are_read() {
    for large_read in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("growing.warc");
        let mut first = record_of(40_000);
        first.extend(plain_warc(50, 3000));
        std::fs::write(&path, &first).unwrap();
        let mut r = Reader::open_with(&path, opts(4096)).unwrap();
        for i in 0..50 {
            let mut rec = r.next_record().unwrap().unwrap();
            if large_read && i == 0 {
                let got = rec.block().read(&mut [0u8; 64 << 10]).unwrap();
                assert!(got >= 16 << 10, "{got}");
            }
        }
        let more = [plain_warc(30, 3000), record_of(50_000)].concat();
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&more)
            .unwrap();
        let mut n = 50;
        while r.next_record().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 82, "large read {large_read}");
        assert!(r.take_warnings().is_empty(), "large read {large_read}");
    }
}

/// A gzip file read on two threads (jobs inflating from its map) that is
/// cut short while the reader is paused: every record served before the
/// end is the file's own, and the reader ends with an error or a warning
/// about the cut member, never with bytes read as zeros and never by
/// SIGBUS.
#[test]
fn a_gzip_file_that_shrinks_under_its_jobs_is_reported() {
    use flate2::write::GzEncoder;
    let dir = tempfile::tempdir().unwrap();
    // Incompressible blocks, so that the file spans many jobs' chunks.
    let records: Vec<Vec<u8>> = warc_records(300, 30_000)
        .into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            let noise = common::noise(r.len(), i as u64 + 1);
            let head = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let n = r.len() - head - 4;
            r[head..head + n].copy_from_slice(&noise[..n]);
            r
        })
        .collect();
    let gz: Vec<u8> = records
        .iter()
        .flat_map(|r| {
            let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(r).unwrap();
            e.finish().unwrap()
        })
        .collect();
    assert!(gz.len() > 3 << 20);
    let two = ReaderOptions {
        decoder: DecoderOptions {
            threads: 2,
            ..DecoderOptions::default()
        },
        ..ReaderOptions::default()
    };
    for cut in [0.3, 0.6] {
        let path = dir.path().join("shrinking.warc.gz");
        std::fs::write(&path, &gz).unwrap();
        let mut r = Reader::open_with(&path, two.clone()).unwrap();
        let mut seen = Vec::new();
        for _ in 0..40 {
            let mut rec = r.next_record().unwrap().unwrap();
            seen.push(rec.read_block().unwrap());
        }
        let len = (gz.len() as f64 * cut) as u64;
        truncate(&path, len);
        let err = read_on(&mut r, Some(&mut seen));
        let warned = r.take_warnings().iter().any(|w| {
            matches!(
                w.kind,
                warchest::WarningKind::TruncatedMember | warchest::WarningKind::DamagedMember
            )
        });
        assert!(err.is_some() || warned, "cut at {len}: nothing said");
        assert!(seen.len() < records.len(), "cut at {len}");
        // Every record read whole is the file's own (the last one may be
        // the cut one, its block shorter).
        for (i, b) in seen.iter().enumerate() {
            let r = &records[i];
            let head = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let want = &r[head..r.len() - 4];
            if i + 1 < seen.len() {
                assert_eq!(b.as_slice(), want, "record {i}, cut at {len}");
            } else {
                assert!(want.starts_with(b), "record {i}, cut at {len}");
            }
        }
    }
}

/// Whether `path` is mapped into this process now.
#[cfg(target_os = "linux")]
fn mapped(path: &Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.contains(path.to_str().unwrap())
}

/// `WARCHEST_NO_MMAP=1` turns the maps off (run in a child process with
/// it set): a plain file, and the jobs of a gzip file read on two threads,
/// are read through buffers, with the same records. Without it both files
/// are mapped while read.
#[cfg(target_os = "linux")]
#[test]
fn warchest_no_mmap_reads_every_file_through_a_buffer() {
    const VAR: &str = "WARCHEST_NO_MMAP";
    let off = std::env::var_os(VAR).is_some();
    if !off {
        let name = common::test_path(
            module_path!(),
            "warchest_no_mmap_reads_every_file_through_a_buffer",
        );
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--test-threads=1"])
            .env(VAR, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains("1 passed"),
            "the child ran no test: {stdout}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let records = warc_records(50, 3000);
    let plain = dir.path().join("mapped.warc");
    std::fs::write(&plain, records.concat()).unwrap();
    let gz = dir.path().join("mapped.warc.gz");
    let members: Vec<u8> = records
        .iter()
        .flat_map(|r| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(r).unwrap();
            e.finish().unwrap()
        })
        .collect();
    std::fs::write(&gz, members).unwrap();
    let two = ReaderOptions {
        decoder: DecoderOptions {
            threads: 2,
            ..DecoderOptions::default()
        },
        ..ReaderOptions::default()
    };
    let maps = !off && cfg!(feature = "mmap");
    for (path, want) in [(&plain, maps), (&gz, maps && cfg!(feature = "parallel"))] {
        let r = Reader::open_with(path, two.clone()).unwrap();
        assert_eq!(
            mapped(path),
            want,
            "{} with {VAR} set: {off}",
            path.display()
        );
        let (recs, warnings) = listing(r, true);
        assert_eq!(recs.len(), 50);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}

/// `prefer_reads` in the middle of a block lets a plain file's map go (the
/// next block reads come from `read` calls) and changes nothing read: the
/// rest of that block, the next records, offsets and stored lengths are
/// those of a reader that kept the map. A second call has nothing to let
/// go.
#[cfg(target_os = "linux")]
#[test]
fn prefer_reads_lets_the_map_go_and_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefer.warc");
    std::fs::write(&path, plain_warc(40, 50_000)).unwrap();
    let kept = listing(Reader::open(&path).unwrap(), true);
    assert_eq!(kept.0.len(), 40);

    let mut r = Reader::open(&path).unwrap();
    assert_eq!(mapped(&path), cfg!(feature = "mmap"));
    let mut out = Vec::new();
    for i in 0..40 {
        let mut rec = r.next_record().unwrap().unwrap();
        let header = rec.raw_header().to_vec();
        let offset = rec.location().offset;
        let mut block = vec![0u8; 7];
        let n = rec.block().read(&mut block).unwrap();
        block.truncate(n);
        drop(rec);
        if i == 5 {
            // Half-way through a block, after reads through the map (small
            // ones: a large one would let it go).
            assert_eq!(mapped(&path), cfg!(feature = "mmap"));
            assert_eq!(r.prefer_reads().unwrap(), cfg!(feature = "mmap"));
            assert!(!mapped(&path));
            assert!(!r.prefer_reads().unwrap());
        }
        let mut b = r.current_block().unwrap();
        let mut buf = [0u8; 1000];
        loop {
            let n = b.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            block.extend_from_slice(&buf[..n]);
        }
        let end = r.finish_record().unwrap().unwrap();
        out.push((offset, end.stored_len, header, block));
    }
    assert!(r.next_record().unwrap().is_none());
    assert!(out == kept.0, "records differ after the map was let go");
}

/// A read of a block into a buffer of [`DIRECT_READ`] bytes is a large
/// one: it lets a plain file's map go (as `prefer_reads` does); reads one
/// byte shorter are served from the map. The Python binding tells its
/// reader `prefer_reads` from that same public size on, so this is the one
/// threshold both act on. The bytes read are the block's either way.
///
/// [`DIRECT_READ`]: warchest::framing::DIRECT_READ
#[cfg(target_os = "linux")]
#[test]
fn a_block_read_of_direct_read_bytes_lets_the_map_go_and_a_shorter_one_does_not() {
    use warchest::framing::DIRECT_READ;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("direct.warc");
    let len = 4 * DIRECT_READ;
    std::fs::write(&path, [record_of(len), record_of(len)].concat()).unwrap();
    let mut r = Reader::open(&path).unwrap();
    let mut rec = r.next_record().unwrap().unwrap();
    let mut block = rec.block();
    let mut buf = vec![0u8; DIRECT_READ];
    let mut got = 0;
    for _ in 0..2 {
        let n = block.read(&mut buf[..DIRECT_READ - 1]).unwrap();
        assert!(n > 0);
        assert!(buf[..n].iter().all(|&b| b == b'x'));
        got += n;
        assert_eq!(mapped(&path), cfg!(feature = "mmap"), "after {got} bytes");
    }
    let n = block.read(&mut buf).unwrap();
    assert!(n > 0);
    assert!(buf[..n].iter().all(|&b| b == b'x'));
    got += n;
    assert!(!mapped(&path), "a read of DIRECT_READ bytes keeps the map");
    loop {
        let n = block.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert!(buf[..n].iter().all(|&b| b == b'x'));
        got += n;
    }
    assert_eq!(got, len);
    drop(rec);
    let mut rec = r.next_record().unwrap().unwrap();
    assert_eq!(rec.read_block().unwrap(), vec![b'x'; len]);
    drop(rec);
    assert!(r.next_record().unwrap().is_none());
}
