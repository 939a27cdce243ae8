//! ARC and Web InfoMall files read through the format-agnostic reader:
//! the real Tianwang crawl (page.dat) and every ARC fixture, the latter
//! compared with warcio's reading (record count, offsets, URLs).
//!
//! Set WARCHEST_SKIP_PYTHON=1 to skip the warcio comparison where Python or
//! warcio is missing; CI never sets it.

use crate::common;

use std::io::Read;
use std::process::Command;

use serde_json::Value;
use warchest::archive::{Format, Reader};

fn page_dat() -> std::path::PathBuf {
    common::fixture("tianwang/page.dat")
}

#[test]
fn page_dat_all_654_records() {
    let mut r = Reader::open(page_dat()).unwrap();
    assert_eq!(r.format(), Format::InfoMall);
    let mut n = 0;
    let mut last_offset = None;
    while let Some(mut rec) = r.next_record().unwrap() {
        let h = rec.header().clone();
        assert_eq!(h.record_type_str().as_deref(), Some("response"));
        let uri = h.target_uri().unwrap().into_owned();
        assert!(uri.starts_with("http://address.6318.cn/"), "{uri}");
        assert!(h.get("WARC-IP-Address").is_some());
        assert!(h.get("WARC-Date").unwrap().starts_with("2006-02-28T"));
        let loc = rec.location();
        assert!(last_offset < Some(loc.offset));
        last_offset = Some(loc.offset);
        // The raw header is the record as stored.
        assert!(rec.raw_header().starts_with(b"version: 1.0\nurl: "));
        let mut block = Vec::new();
        rec.block().read_to_end(&mut block).unwrap();
        assert_eq!(Some(block.len() as u64), h.content_length(), "{uri}");
        assert!(block.starts_with(b"HTTP/1."), "{uri}");
        let end = rec.finish().unwrap();
        assert!(!end.truncated);
        assert!(end.stored_len.is_some());
        n += 1;
    }
    assert_eq!(n, 654);
    let w = r.take_warnings();
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn page_dat_cut_inside_a_header() {
    // Like TPlatform's runtime/page.dat: 25 records, then the 26th cut
    // after its date line.
    let data = std::fs::read(page_dat()).unwrap();
    let mut starts = Vec::new();
    let mut r = Reader::new(&data[..]).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        starts.push(rec.location().offset as usize);
    }
    let s26 = starts[25];
    let cut = s26 + memchr::memmem::find(&data[s26..], b"\nip: ").unwrap() + 1;
    let mut r = Reader::new(&data[..cut]).unwrap();
    let mut n = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        rec.read_block().unwrap();
        n += 1;
    }
    assert_eq!(n, 25);
    let w = r.take_warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].kind, warchest::WarningKind::TruncatedRecord);
    assert_eq!(w[0].offset, s26 as u64);
}

/// warcio's records, and whether it failed part way.
fn warcio_arc(path: &std::path::Path) -> (Vec<Value>, bool) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/differential/warcio_arc_records.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .expect("run python3");
    let failed = out.status.code() == Some(3);
    assert!(
        out.status.success() || failed,
        "warcio script failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .filter(|v| v.get("failed").is_none())
        .collect();
    (recs, failed)
}

/// ARC files warcio gives up on part way, with warchest's record count
/// and why it differs.
const WARCIO_STOPS: &[(&str, usize, &str)] = &[(
    "invalid-arcfile-record-then-garbage.arc",
    1,
    "the file ends in a cut URL-record line: warcio fails on it, warchest reports trailing garbage",
)];

#[test]
fn arc_records_match_warcio() {
    if !common::python_has("warcio") {
        return;
    }
    let files = common::fixture_files(&[".arc", ".arc.gz"]);
    assert!(files.len() >= 10, "{files:?}");
    for path in files {
        let mut r = Reader::open(&path).unwrap();
        assert_eq!(r.format(), Format::Arc, "{}", path.display());
        let mut ours = Vec::new();
        while let Some(mut rec) = r.next_record().expect("lenient read succeeds") {
            let h = rec.header();
            ours.push((
                rec.location().offset,
                h.target_uri().map(|s| s.into_owned()),
                h.get("WARC-Date").map(|s| s.into_owned()),
            ));
            rec.read_block().unwrap();
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (theirs, failed) = warcio_arc(&path);
        if let Some((_, n, why)) = WARCIO_STOPS.iter().find(|(f, _, _)| *f == name) {
            assert!(failed, "{name}: warcio no longer fails");
            assert_eq!(ours.len(), *n, "{name}: {why}");
            assert_eq!(theirs.len(), *n, "{name}");
        } else {
            assert!(!failed, "warcio failed on {name}");
            assert_eq!(ours.len(), theirs.len(), "record count of {name}");
        }
        for (o, t) in ours.iter().zip(&theirs) {
            let s = |k: &str| t[k].as_str().map(str::to_string);
            assert_eq!(o.0, t["offset"].as_u64().unwrap(), "offset in {name}");
            // warcio names the filedesc record by its WARC-Filename.
            let uri = match s("type").as_deref() {
                Some("warcinfo") => s("filename").map(|f| format!("filedesc://{f}")),
                _ => s("target_uri"),
            };
            // The filedesc's URL as written may hold a path warcio drops
            // (dashed fields: `filedesc://`).
            assert_eq!(o.1, uri, "URL at {} in {name}", o.0);
            // Dates agree where the ARC date has 14 digits (warcio pads
            // short ones to the end of the period, warchest to its start).
            if let (Some(ours), Some(theirs)) = (&o.2, s("date"))
                && !theirs.starts_with("1900")
                && !theirs.starts_with("2999")
            {
                assert_eq!(ours, &theirs, "date at {} in {name}", o.0);
            }
        }
    }
}

#[test]
fn gzip_and_plain_arc_give_the_same_records() {
    let read = |p: &str| {
        let mut r = Reader::open(common::fixture(p)).unwrap();
        let mut v = Vec::new();
        while let Some(mut rec) = r.next_record().unwrap() {
            v.push((
                rec.header().target_uri().map(|s| s.into_owned()),
                rec.read_block().unwrap(),
            ));
        }
        v
    };
    let plain = read("warcio/example.arc");
    assert_eq!(plain.len(), 2);
    assert_eq!(plain, read("warcio/example.arc.gz"));
}

/// Web InfoMall records whose zlib content is skipped unread end with the
/// same block length however the file is read: a stream or a seekable
/// source, a 64-byte buffer or the default. It is the declared
/// `unzip-length`, as a full read of the content gives on this crawl; it
/// was the count of bytes decoded while the content's head was peeked at,
/// which depends on how much input was buffered then.
#[test]
fn infomall_content_skipped_unread_has_its_declared_length() {
    use std::io::Cursor;
    use warchest::codec::Decoder;
    use warchest::warc::ReaderOptions;
    let data = std::fs::read(page_dat()).unwrap();
    let data = &data[..];
    fn list<S: warchest::codec::Source>(mut r: Reader<S>) -> Vec<(u64, Option<u64>)> {
        let mut v = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            let declared = rec.header().content_length();
            let end = rec.finish().unwrap();
            v.push((end.block_len, declared));
        }
        v
    }
    let ends = |opts: ReaderOptions, seekable: bool| {
        if seekable {
            let src = Decoder::new_seekable(Cursor::new(data), opts.decoder.clone()).unwrap();
            list(Reader::from_source_as(src, opts, Format::InfoMall))
        } else {
            let src = Decoder::new(data, opts.decoder.clone());
            list(Reader::from_source_as(src, opts, Format::InfoMall))
        }
    };
    let mut small = ReaderOptions::strict();
    small.decoder.buffer_size = 64;
    let want = ends(ReaderOptions::strict(), false);
    assert_eq!(want.len(), 654);
    for (len, declared) in &want {
        assert_eq!(Some(*len), *declared);
    }
    assert_eq!(ends(ReaderOptions::strict(), true), want);
    assert_eq!(ends(small.clone(), true), want);
    assert_eq!(ends(small, false), want);
    // Cut short inside the second record's content: read leniently and
    // skipped, it is truncated, and its block length is what was
    // decoded, less than it declares.
    let mut r = Reader::with_options(&data[..13_431 + 2_000], ReaderOptions::lenient()).unwrap();
    let first = r.next_record().unwrap().unwrap().finish().unwrap();
    assert!(!first.truncated);
    let rec = r.next_record().unwrap().unwrap();
    let declared = rec.header().content_length().unwrap();
    let end = rec.finish().unwrap();
    assert!(end.truncated);
    assert!(end.block_len < declared, "{} of {declared}", end.block_len);
}

/// Mutated ARC and Web InfoMall files, read leniently and strictly, block
/// by block: errors are fine, panics are not, and lenient reading always
/// gets to the end.
#[test]
fn mutations_never_panic() {
    let inputs: Vec<Vec<u8>> = [
        "tianwang/page.dat",
        "jwat/small_BNF.arc",
        "warcio/example.arc.gz",
        "warcio/bad.arc",
    ]
    .iter()
    .map(|p| {
        let mut d = std::fs::read(common::fixture(p)).unwrap();
        d.truncate(40_000);
        d
    })
    .collect();
    let mut seed = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // WARCHEST_MUTATION_ROUNDS=20000 for a longer run.
    let rounds = std::env::var("WARCHEST_MUTATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    for round in 0..rounds {
        let base = &inputs[round % inputs.len()];
        let mut d = base.clone();
        for _ in 0..1 + next() % 8 {
            let at = (next() % d.len() as u64) as usize;
            match next() % 4 {
                0 => d[at] = next() as u8,
                1 => d[at] = b"\n\r: 0-"[(next() % 6) as usize],
                2 => {
                    let n = (next() % 64) as usize;
                    d.drain(at..(at + n).min(d.len()));
                }
                _ => d.truncate(at),
            }
            if d.is_empty() {
                d.push(b'v');
            }
        }
        for strict in [false, true] {
            let opts = if strict {
                warchest::warc::ReaderOptions::strict()
            } else {
                warchest::warc::ReaderOptions::lenient()
            };
            let Ok(mut r) = Reader::with_options(&d[..], opts) else {
                continue;
            };
            let mut n = 0;
            loop {
                match r.next_record() {
                    Ok(Some(mut rec)) => {
                        let _ = std::io::copy(&mut rec.block(), &mut std::io::sink());
                        let _ = rec.finish();
                        n += 1;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        assert!(strict, "lenient reading failed in round {round}: {e}");
                        break;
                    }
                }
                assert!(n < 100_000);
            }
            r.take_warnings();
        }
    }
}
