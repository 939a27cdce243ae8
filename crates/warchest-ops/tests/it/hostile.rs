//! Hostile input: bytes made to exhaust memory or time. Each case runs in a
//! child process (this test binary again, with one test selected) so that
//! its peak memory (VmHWM) is its own and a hang is caught by a timeout; the
//! inputs are generated while they are read, never stored.
//!
//! Every case ends in bounded time and memory with a clear error that names
//! the offset, or, where reading on is right, with a warning and the rest of
//! the input read.

use crate::common;
use std::io::{self, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use warchest::archive::Reader;
use warchest::codec::{Decoder, DecoderOptions, Source};
use warchest::warc::ReaderOptions;
use warchest::{Error, ErrorKind, Limits};

/// Set in the child: run the case itself.
const CHILD: &str = "WARCHEST_HOSTILE_CHILD";
/// Peak memory a case may reach (the test harness itself takes a few MiB).
const MAX_RSS_MIB: u64 = 96;

/// Runs `case` in a child process with `timeout`; the child runs it and
/// checks its own peak memory.
fn isolated(name: &str, timeout: Duration, case: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        case();
        if let Some(kib) = common::peak_rss_kib() {
            eprintln!("{name}: peak RSS {kib} KiB");
            assert!(kib < MAX_RSS_MIB * 1024, "{name}: peak RSS {kib} KiB");
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            &common::test_path(module_path!(), name),
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .arg("--include-ignored")
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // Output is drained on threads so a chatty child cannot block on a
    // full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t2 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = t1.join().unwrap() + &t2.join().unwrap();
    match status {
        None => panic!("{name}: no end after {timeout:?}\n{out}"),
        Some(s) => assert!(s.success(), "{name}: {s}\n{out}"),
    }
    // The child runs exactly one test: it must say so.
    assert!(out.contains("1 passed"), "{name}: case not run\n{out}");
    eprintln!("{name}: {:?}", start.elapsed());
}

/// Bytes produced as they are read: a prefix, a piece repeated `count`
/// times, a suffix.
struct Repeat {
    parts: Vec<(Vec<u8>, u64)>,
    part: usize,
    done: u64,
    pos: usize,
}

impl Repeat {
    fn new(parts: Vec<(Vec<u8>, u64)>) -> Self {
        Repeat {
            parts,
            part: 0,
            done: 0,
            pos: 0,
        }
    }
}

impl Read for Repeat {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() && self.part < self.parts.len() {
            let (piece, count) = &self.parts[self.part];
            if self.done == *count || piece.is_empty() {
                self.part += 1;
                self.done = 0;
                self.pos = 0;
                continue;
            }
            let k = (piece.len() - self.pos).min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&piece[self.pos..self.pos + k]);
            n += k;
            self.pos += k;
            if self.pos == piece.len() {
                self.pos = 0;
                self.done += 1;
            }
        }
        Ok(n)
    }
}

fn once(b: &[u8]) -> (Vec<u8>, u64) {
    (b.to_vec(), 1)
}

const RECORD: &[u8] = b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\nWARC-Date: 2026-01-01T00:00:00Z\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n";

/// What reading every record (skipping the blocks, as `ls` does) gave.
#[derive(Debug, Default)]
struct Outcome {
    records: Vec<(u64, Option<u64>)>,
    warnings: Vec<warchest::Warning>,
    error: Option<Error>,
}

fn read_all(input: impl Read, opts: ReaderOptions) -> Outcome {
    let mut o = Outcome::default();
    let mut r = match Reader::with_options(input, opts) {
        Ok(r) => r,
        Err(e) => {
            o.error = Some(e);
            return o;
        }
    };
    loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                let at = rec.location().offset;
                let len = rec.header().content_length();
                o.records.push((at, len));
                if let Err(e) = rec.finish() {
                    o.error = Some(e);
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                o.error = Some(e);
                break;
            }
        }
        // Warnings are taken as they come, as the commands do.
        let w = r.take_warnings();
        assert!(o.warnings.len() < 100_000, "warnings without end");
        o.warnings.extend(w);
    }
    o.warnings.extend(r.take_warnings());
    o
}

fn assert_located(e: &Error, what: &str) {
    assert!(e.position().is_some(), "{what}: error without offset: {e}");
    assert!(e.to_string().contains("offset"), "{what}: {e}");
}

fn too_large(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::TooLarge { .. })
}

// ---------------------------------------------------------------- lengths

#[test]
fn content_length_huge_or_negative() {
    isolated(
        "content_length_huge_or_negative",
        Duration::from_secs(60),
        || {
            for cl in [
                "9223372036854775808",
                "18446744073709551615",
                "18446744073709551616",
                "-1",
                "-9223372036854775808",
                "1e9",
            ] {
                let rec = format!(
                    "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: {cl}\r\n\r\nabc\r\n\r\n"
                );
                let mut input = rec.into_bytes();
                input.extend_from_slice(RECORD);
                let strict = read_all(&input[..], ReaderOptions::strict());
                let e = strict.error.expect("strict reading fails");
                assert_located(&e, cl);
                let lenient = read_all(&input[..], ReaderOptions::lenient());
                // Lenient: the length is not believed (an error or a
                // warning at the record), and nothing is allocated for it.
                match &lenient.error {
                    Some(e) => assert_located(e, cl),
                    None => assert!(!lenient.warnings.is_empty(), "{cl}: {lenient:?}"),
                }
            }
        },
    );
}

// ---------------------------------------------------------- header blocks

#[test]
fn header_block_without_end() {
    isolated("header_block_without_end", Duration::from_secs(120), || {
        // 200 MB of header lines and no blank line.
        let input = || {
            Repeat::new(vec![
                once(b"WARC/1.1\r\nWARC-Type: resource\r\n"),
                (b"X-Filler: 0123456789abcdef\r\n".to_vec(), 7_000_000),
            ])
        };
        let strict = read_all(input(), ReaderOptions::strict());
        let e = strict.error.expect("strict: error");
        assert!(too_large(&e), "{e}");
        assert_located(&e, "strict");
        let lenient = read_all(input(), ReaderOptions::lenient());
        assert!(lenient.records.is_empty(), "{:?}", lenient.records);
        match lenient.error {
            Some(e) => assert_located(&e, "lenient"),
            None => assert!(!lenient.warnings.is_empty()),
        }
    });
}

#[test]
fn header_line_of_100_mb() {
    isolated("header_line_of_100_mb", Duration::from_secs(120), || {
        let input = || {
            Repeat::new(vec![
                once(b"WARC/1.1\r\nWARC-Type: resource\r\nX-Long: "),
                (vec![b'a'; 1 << 16], 1600),
                once(b"\r\nContent-Length: 0\r\n\r\n\r\n\r\n"),
                once(RECORD),
            ])
        };
        let strict = read_all(input(), ReaderOptions::strict());
        let e = strict.error.expect("strict: error");
        assert!(too_large(&e), "{e}");
        assert_eq!(e.position().unwrap().offset, 0, "{e}");
        // Lenient: the record is lost with a warning or an error naming
        // offset 0; when reading goes on, the good record after it is found.
        let lenient = read_all(input(), ReaderOptions::lenient());
        match &lenient.error {
            Some(e) => assert_located(e, "lenient"),
            None => {
                assert!(!lenient.warnings.is_empty());
                assert_eq!(lenient.records.len(), 1, "{:?}", lenient.records);
                assert_eq!(lenient.records[0].1, Some(5));
            }
        }
    });
}

#[test]
fn millions_of_continuation_lines() {
    isolated(
        "millions_of_continuation_lines",
        Duration::from_secs(120),
        || {
            // Three million: far past the header block limit.
            let input = Repeat::new(vec![
                once(b"WARC/1.1\r\nWARC-Type: resource\r\nX-Folded: a\r\n"),
                (b" b\r\n".to_vec(), 3_000_000),
                once(b"Content-Length: 0\r\n\r\n\r\n\r\n"),
            ]);
            let e = read_all(input, ReaderOptions::strict())
                .error
                .expect("too large");
            assert!(too_large(&e), "{e}");
            assert_located(&e, "continuations");
            // Just under the limit: read, in time linear in its size.
            let n = 200_000;
            let input = Repeat::new(vec![
                once(b"WARC/1.1\r\nWARC-Type: resource\r\nX-Folded: a\r\n"),
                (b" b\r\n".to_vec(), n),
                once(b"Content-Length: 0\r\n\r\n\r\n\r\n"),
            ]);
            let start = Instant::now();
            let mut r = Reader::with_options(input, ReaderOptions::lenient()).unwrap();
            let rec = r.next_record().unwrap().unwrap();
            let v = rec
                .header()
                .fields()
                .value_bytes("X-Folded")
                .unwrap()
                .into_owned();
            assert!(v.len() as u64 >= 2 * n, "{}", v.len());
            assert!(start.elapsed() < Duration::from_secs(30));
        },
    );
}

#[test]
fn many_fields() {
    isolated("many_fields", Duration::from_secs(60), || {
        let input = Repeat::new(vec![
            once(b"WARC/1.1\r\nWARC-Type: resource\r\n"),
            (b"A: b\r\n".to_vec(), 100_000),
            once(b"Content-Length: 0\r\n\r\n\r\n\r\n"),
        ]);
        let e = read_all(input, ReaderOptions::strict())
            .error
            .expect("too many fields");
        assert!(e.to_string().contains("10000 fields"), "{e}");
        assert_located(&e, "fields");
    });
}

#[test]
fn limits_are_configurable() {
    isolated("limits_are_configurable", Duration::from_secs(60), || {
        // A 2 MiB header block: over the default, read with a higher limit.
        let input = || {
            Repeat::new(vec![
                once(b"WARC/1.1\r\nWARC-Type: resource\r\nX-Long: "),
                (vec![b'a'; 1 << 16], 32),
                once(b"\r\nContent-Length: 0\r\n\r\n\r\n\r\n"),
            ])
        };
        let e = read_all(input(), ReaderOptions::strict())
            .error
            .expect("over the default limit");
        assert!(
            matches!(e.kind(), ErrorKind::TooLarge { limit, .. } if *limit == 1 << 20),
            "{e}"
        );
        let mut opts = ReaderOptions::strict();
        opts.limits = Limits {
            max_header_block: 4 << 20,
            ..Limits::default()
        };
        let o = read_all(input(), opts);
        assert!(o.error.is_none(), "{:?}", o.error);
        assert_eq!(o.records.len(), 1);
    });
}

// ------------------------------------------------------------ compression

/// One MiB of zeros as raw deflate, full-flushed: its back-references reach
/// only into itself, so it can be repeated inside any stream.
fn zero_mib_deflate() -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let mut c = Compress::new(Compression::best(), false);
    let mut piece = Vec::with_capacity(8 << 10);
    c.compress_vec(&vec![0u8; 1 << 20], &mut piece, FlushCompress::Full)
        .unwrap();
    assert_eq!(c.total_in(), 1 << 20, "one MiB in one call");
    piece
}

/// A gzip member holding `prefix`, `mib` MiB of zeros and `suffix`,
/// generated as it is read. Returns the member's parts.
fn zero_gzip_member(prefix: &[u8], mib: u64, suffix: &[u8]) -> Vec<(Vec<u8>, u64)> {
    use flate2::{Compress, Compression, FlushCompress};
    let mut c = Compress::new(Compression::best(), false);
    let mut head = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let mut pre = Vec::with_capacity(2 * prefix.len() + 1024);
    c.compress_vec(prefix, &mut pre, FlushCompress::Full)
        .unwrap();
    head.extend_from_slice(&pre);
    let piece = zero_mib_deflate();
    let mut tail = Vec::with_capacity(2 * suffix.len() + 1024);
    // A fresh stream state for the suffix: the pieces in between are
    // independent of it only after a full flush, so the suffix is
    // compressed stored (no back-references).
    let mut s = Compress::new(Compression::none(), false);
    s.compress_vec(suffix, &mut tail, FlushCompress::Finish)
        .unwrap();
    let mut crc = crc32fast::Hasher::new();
    crc.update(prefix);
    let mut zero_mib = crc32fast::Hasher::new();
    zero_mib.update(&vec![0u8; 1 << 20]);
    for _ in 0..mib {
        crc.combine(&zero_mib);
    }
    crc.update(suffix);
    let len = prefix.len() as u64 + (mib << 20) + suffix.len() as u64;
    tail.extend_from_slice(&crc.finalize().to_le_bytes());
    tail.extend_from_slice(&(len as u32).to_le_bytes());
    vec![(head, 1), (piece, mib), (tail, 1)]
}

fn bomb_record(mib: u64) -> Vec<(Vec<u8>, u64)> {
    let head = format!(
        "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r\nWARC-Date: 2026-01-01T00:00:00Z\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        mib << 20
    );
    let mut parts = zero_gzip_member(head.as_bytes(), mib, b"\r\n\r\n");
    let good = zero_gzip_member(RECORD, 0, b"");
    parts.extend(good);
    parts
}

fn gzip_bomb(mib: u64) {
    // A record of zeros: listed (its block skipped, inflated as a stream),
    // then the next member's record.
    let o = read_all(Repeat::new(bomb_record(mib)), ReaderOptions::strict());
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.records.len(), 2, "{:?}", o.records);
    assert_eq!(o.records[0].1, Some(mib << 20));
    // Zeros where a header should be: the lenient reader scans past them
    // to the record after, in bounded memory.
    let mut parts = zero_gzip_member(b"", mib, b"");
    parts.extend(zero_gzip_member(RECORD, 0, b""));
    let o = read_all(Repeat::new(parts), ReaderOptions::lenient());
    assert_eq!(o.records.len(), 1, "{o:?}");
    assert_eq!(o.records[0].1, Some(5));
}

#[test]
fn gzip_member_of_10_gib_zeros() {
    // About 10 MiB stored; streamed twice (about 10 s).
    isolated(
        "gzip_member_of_10_gib_zeros",
        Duration::from_secs(900),
        || gzip_bomb(10 << 10),
    );
}

#[test]
fn gzip_bomb_is_really_1000_to_1() {
    // The generator's own check: the stored member is about a thousandth
    // of what it inflates to, and inflates to exactly that.
    let parts = zero_gzip_member(b"x", 64, b"y");
    let stored: u64 = parts.iter().map(|(p, n)| p.len() as u64 * n).sum();
    assert!(stored * 900 < 64 << 20, "{stored}");
    let mut d = flate2::read::GzDecoder::new(Repeat::new(parts));
    let mut n = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    let mut first = None;
    loop {
        let k = d.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        first.get_or_insert(buf[0]);
        n += k as u64;
    }
    assert_eq!(first, Some(b'x'));
    assert_eq!(n, (64 << 20) + 2);
}

const EMPTY_GZIP: [u8; 20] = [
    0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn millions_of_empty_gzip_members() {
    isolated(
        "millions_of_empty_gzip_members",
        Duration::from_secs(300),
        || {
            // A million empty members (20 MB), then a record: found, in
            // time linear in the input and constant memory.
            let mut parts = vec![(EMPTY_GZIP.to_vec(), 1_000_000)];
            parts.extend(zero_gzip_member(RECORD, 0, b""));
            for opts in [ReaderOptions::lenient(), ReaderOptions::strict()] {
                let o = read_all(Repeat::new(parts.clone()), opts);
                assert!(o.error.is_none(), "{:?}", o.error);
                assert_eq!(o.records.len(), 1, "{o:?}");
                assert_eq!(o.records[0].0, 20_000_000);
            }
            // The decoder alone, member by member: each is visited, none
            // holds a byte.
            let mut d = Decoder::new(
                Repeat::new(vec![(EMPTY_GZIP.to_vec(), 1_000_000)]),
                DecoderOptions::default(),
            );
            let mut members = 0;
            while d.next_member().unwrap() {
                assert!(d.fill_buf().unwrap().is_empty());
                members += 1;
            }
            assert!(members <= 1_000_000, "{members}");
        },
    );
}

/// A zstd frame header declaring a window of 2^`log` bytes (single
/// segment off), then a raw block of "abc" (last).
fn zstd_frame_with_window(log: u32) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd];
    f.push(0x00); // frame header descriptor: no size, no checksum, no dict
    // Window descriptor: exponent (log - 10) in the high five bits.
    let exp = log.saturating_sub(10).min(31) as u8;
    f.push(exp << 3);
    // Block header: last block, raw, size 3.
    let bh: u32 = 1 | (3 << 3);
    f.extend_from_slice(&bh.to_le_bytes()[..3]);
    f.extend_from_slice(b"abc");
    f
}

#[test]
fn zstd_frame_declaring_a_huge_window() {
    isolated(
        "zstd_frame_declaring_a_huge_window",
        Duration::from_secs(60),
        || {
            // The generator is right: a small window decodes.
            let small = zstd_frame_with_window(20);
            let mut ok = Decoder::new(&small[..], DecoderOptions::default());
            assert_eq!(ok.fill_buf().unwrap(), b"abc");
            for log in [31, 40, 41] {
                let mut frame = zstd_frame_with_window(log);
                frame.extend(zstd::encode_all(RECORD, 3).unwrap());
                let strict = read_all(&frame[..], ReaderOptions::strict());
                let e = strict.error.expect("strict: error");
                assert_located(&e, "zstd window");
                let lenient = read_all(&frame[..], ReaderOptions::lenient());
                assert!(lenient.error.is_none(), "{:?}", lenient.error);
                assert_eq!(lenient.records.len(), 1, "{lenient:?}");
                assert!(!lenient.warnings.is_empty());
            }
        },
    );
}

// ------------------------------------------------------------------- HTTP

#[test]
fn chunked_bodies_with_absurd_sizes() {
    isolated(
        "chunked_bodies_with_absurd_sizes",
        Duration::from_secs(60),
        || {
            use warchest::http::{payload_reader, read_head};
            let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
            for body in [
                &b"FFFFFFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n"[..],
                b"7FFFFFFFFFFFFFFF\r\nabc",
                b"FFFFFFFFFFFFFFFF\r\nabc\r\n",
                b"-5\r\nabc\r\n0\r\n\r\n",
                &[b'0'; 100_000],
            ] {
                let mut msg = head.to_vec();
                msg.extend_from_slice(body);
                let mut r = &msg[..];
                let h = read_head(&mut r, &Limits::default()).unwrap().unwrap();
                let Ok(mut p) = payload_reader(r, &h, true) else {
                    continue;
                };
                let mut out = Vec::new();
                // An error or the bytes there are: never more than the input.
                let _ = p.read_to_end(&mut out);
                assert!(out.len() <= body.len(), "{}", out.len());
            }
            // A chunk-size line without end (50 MB of digits): not chunked
            // data, so passed through as stored (as warcio does), streamed.
            let mut msg = head.to_vec();
            let body_len = 50 << 20;
            msg.extend(std::iter::repeat_n(b'1', body_len));
            let mut r = &msg[..];
            let h = read_head(&mut r, &Limits::default()).unwrap().unwrap();
            let mut p = payload_reader(r, &h, true).unwrap();
            let n = io::copy(&mut p, &mut io::sink()).unwrap();
            assert_eq!(n, body_len as u64);
        },
    );
}

#[test]
fn http_head_without_end() {
    isolated("http_head_without_end", Duration::from_secs(60), || {
        use warchest::http::read_head;
        let mut input = io::BufReader::new(Repeat::new(vec![
            once(b"HTTP/1.1 200 OK\r\n"),
            (b"X-Header: value\r\n".to_vec(), 10_000_000),
        ]));
        // Not a head within the limit: no head (the block is then taken
        // as it is), having held at most the limit.
        let start = Instant::now();
        assert!(read_head(&mut input, &Limits::default()).unwrap().is_none());
        assert!(start.elapsed() < Duration::from_secs(20));
    });
}

// --------------------------------------------------------------- InfoMall

#[test]
fn infomall_lengths_beyond_the_file() {
    isolated(
        "infomall_lengths_beyond_the_file",
        Duration::from_secs(60),
        || {
            for (unzip, length) in [
                ("99999999999999999", "20"),
                ("10", "99999999999999999"),
                ("18446744073709551615", "18446744073709551615"),
                ("5", "-1"),
            ] {
                let mut input = format!(
                    "version: 1.0\nurl: http://example.com/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nunzip-length: {unzip}\nlength: {length}\n\n"
                )
                .into_bytes();
                input.extend_from_slice(&zstd_free_zlib(b"hello hello hello"));
                input.extend_from_slice(b"\n");
                for opts in [ReaderOptions::lenient(), ReaderOptions::strict()] {
                    let strict = opts.strict;
                    let mut r = Reader::with_options(&input[..], opts).unwrap();
                    let mut problem = None;
                    loop {
                        match r.next_record() {
                            Ok(Some(mut rec)) => {
                                let mut sink = Vec::new();
                                if let Err(e) = rec.block().read_to_end(&mut sink) {
                                    problem = Some(e.to_string());
                                    break;
                                }
                                assert!(sink.len() < 1 << 20);
                                match rec.finish() {
                                    Ok(end) if end.truncated => {
                                        problem = Some("truncated".into());
                                    }
                                    Ok(_) => {}
                                    Err(e) => {
                                        assert_located(&e, length);
                                        problem = Some(e.to_string());
                                        break;
                                    }
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                assert_located(&e, length);
                                problem = Some(e.to_string());
                                break;
                            }
                        }
                    }
                    let warnings = r.take_warnings();
                    assert!(
                        problem.is_some() || !warnings.is_empty(),
                        "{unzip}/{length} strict={strict}: no error, no warning"
                    );
                    for w in &warnings {
                        assert!(w.to_string().contains("offset"), "{w}");
                    }
                }
            }
        },
    );
}

fn zstd_free_zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

// ----------------------------------------------------------------- filter

#[test]
fn filter_expressions_deep_or_huge() {
    isolated(
        "filter_expressions_deep_or_huge",
        Duration::from_secs(60),
        || {
            use warchest_ops::filter::Filter;
            let deep = "(".repeat(1_000_000) + ":status == 200" + &")".repeat(1_000_000);
            assert!(Filter::parse(&deep).is_err());
            let nots = "!".repeat(1_000_000) + ":status == 200";
            assert!(Filter::parse(&nots).is_err());
            let huge = [":status == 200"; 1000].join(" && ").repeat(1000);
            assert!(Filter::parse(&huge).is_err());
            let regex = format!(":uri =~ \"{}\"", "(a*)*".repeat(10_000));
            assert!(Filter::parse(&regex).is_err());
            // Within the limits: accepted.
            let ok = "(".repeat(30) + ":status == 200" + &")".repeat(30);
            assert!(Filter::parse(&ok).is_ok());
            let ok = [":status == 200"; 500].join(" || ");
            assert!(Filter::parse(&ok).is_ok());
        },
    );
}

#[test]
fn twenty_thousand_transfer_codings() {
    isolated(
        "twenty_thousand_transfer_codings",
        Duration::from_secs(60),
        || {
            // One response whose head names `chunked` 20,001 times in
            // one Transfer-Encoding field (180 KB): decoding it stacked one reader per
            // coding and overflowed the stack of whoever read the payload.
            let mut http = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n".to_vec();
            http.extend_from_slice(b"Transfer-Encoding: chunked");
            http.extend_from_slice(&b", chunked".repeat(20_000));
            http.extend_from_slice(b"\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
            let mut rec = format!(
                "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/\r\n\
                 Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
                http.len()
            )
            .into_bytes();
            rec.extend_from_slice(&http);
            rec.extend_from_slice(b"\r\n\r\n");
            let limits = Limits::default();
            let mut reader = warchest::archive::Reader::new(&rec[..]).unwrap();
            let mut r = reader.next_record().unwrap().unwrap();
            let head = r
                .http_with(&limits)
                .unwrap()
                .expect("the head parses")
                .clone();
            assert_eq!(head.transfer_encoding().len(), 20_001);
            // The strict path refuses before reading; the lenient one gives
            // the body as stored.
            match r.payload(true) {
                Err(e) => assert!(e.to_string().contains("codings"), "{e}"),
                Ok(_) => panic!("20,001 codings stacked"),
            }
            let mut body = Vec::new();
            warchest::http::payload_reader_lenient(r.block(), &head)
                .read_to_end(&mut body)
                .unwrap();
            assert_eq!(body, b"2\r\nhi\r\n0\r\n\r\n");
        },
    );
}
