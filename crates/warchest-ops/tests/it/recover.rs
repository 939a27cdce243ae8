//! `recover` on damaged copies of real files: page.dat (Web InfoMall) cut
//! at random offsets and with random byte ranges overwritten, a gzip WARC
//! with damaged members, a zstd WARC, ARC and uncompressed Web InfoMall.
//! Every record the damage does not touch must come back, byte for byte;
//! nothing may come back that was not there.
//!
//! The normal suite runs a few dozen seeded cases; more run with
//! `cargo test -p warchest --test recover -- --ignored`.

use crate::common;
use common::Rng;

use std::io::{Read, Write};
use std::path::Path;

use warchest::archive::{Format, Reader};
use warchest_ops::recover::{OutputCompression, RecoverOptions, RecoverReport, recover};

/// A record of a file: its stored extent and its raw bytes (for plain
/// files) and decompressed block.
#[derive(Debug, Clone)]
struct Rec {
    start: u64,
    end: u64,
    raw_header: Vec<u8>,
    block: Vec<u8>,
}

fn records(data: &[u8]) -> Vec<Rec> {
    let mut r = Reader::new(data).unwrap();
    let mut v = Vec::new();
    while let Some(mut rec) = r.next_record().unwrap() {
        let start = rec.location().offset;
        let raw_header = rec.raw_header().to_vec();
        let mut block = Vec::new();
        rec.block().read_to_end(&mut block).unwrap();
        let end = rec.finish().unwrap();
        v.push(Rec {
            start,
            end: start + end.stored_len.unwrap(),
            raw_header,
            block,
        });
    }
    v
}

fn run_recover(data: &[u8], opts: &RecoverOptions) -> (Vec<u8>, RecoverReport) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("damaged");
    std::fs::write(&p, data).unwrap();
    let mut out = Vec::new();
    let rep = recover(&p, &mut out, opts).unwrap();
    (out, rep)
}

/// Checks the recovered records against the originals: in order, each
/// equal to an original (header and block), every untouched original
/// present. A touched record may come back only if its content verified;
/// then its block must still be the original's.
fn check_recovered(orig: &[Rec], touched: &[bool], out: &[u8], what: &str) {
    let got = records(out);
    let mut i = 0;
    for g in &got {
        let same = |o: &Rec| o.raw_header == g.raw_header && o.block == g.block;
        let k = (i..orig.len())
            .find(|&k| same(&orig[k]))
            .or_else(|| (i..orig.len()).find(|&k| touched[k] && orig[k].block == g.block));
        let Some(k) = k else {
            panic!(
                "{what}: recovered record {:?} is not one of the originals",
                String::from_utf8_lossy(&g.raw_header)
            );
        };
        for j in i..k {
            assert!(
                touched[j],
                "{what}: untouched record {j} at {} missing",
                orig[j].start
            );
        }
        i = k + 1;
    }
    for j in i..orig.len() {
        assert!(
            touched[j],
            "{what}: untouched record {j} at {} missing (tail)",
            orig[j].start
        );
    }
}

/// Damages `data`: up to `ranges` random ranges overwritten with random
/// bytes, and maybe a cut. Returns the damaged bytes and the damaged
/// extents.
fn damage(rng: &mut Rng, data: &[u8], ranges: u64, max_len: u64) -> (Vec<u8>, Vec<(u64, u64)>) {
    let mut d = data.to_vec();
    let mut hit = Vec::new();
    for _ in 0..1 + rng.below(ranges) {
        let a = rng.below(d.len() as u64);
        let n = 1 + rng.below(max_len);
        let b = (a + n).min(d.len() as u64);
        for x in &mut d[a as usize..b as usize] {
            *x = rng.next() as u8;
        }
        hit.push((a, b));
    }
    if rng.below(2) == 0 {
        let cut = rng.below(d.len() as u64);
        d.truncate(cut as usize);
        hit.push((cut, u64::MAX));
    }
    (d, hit)
}

fn touched(orig: &[Rec], hit: &[(u64, u64)]) -> Vec<bool> {
    orig.iter()
        .map(|r| hit.iter().any(|&(a, b)| a < r.end && r.start < b))
        .collect()
}

fn page_dat_cases(seed: u64, cases: usize) {
    let data = std::fs::read(common::fixture("tianwang/page.dat")).unwrap();
    let orig = records(&data);
    assert_eq!(orig.len(), 654);
    let mut rng = Rng(seed);
    for case in 0..cases {
        let (d, hit) = damage(&mut rng, &data, 4, 6000);
        let t = touched(&orig, &hit);
        let (out, rep) = run_recover(&d, &RecoverOptions::default());
        assert_eq!(rep.format, Some(Format::InfoMall));
        let what = format!("seed {seed} case {case} damage {hit:?}");
        check_recovered(&orig, &t, &out, &what);
        assert!(!rep.ranges.is_empty(), "{what}: damage not reported");
        // Every damaged range covers some damage.
        for r in &rep.ranges {
            // A range may end at a cut (the end of the damaged file).
            assert!(
                hit.iter().any(
                    |&(a, b)| a < r.end.max(r.start + 1) + u64::from(b == u64::MAX) && r.start < b
                ),
                "{what}: reported range {r:?} holds no damage"
            );
        }
    }
}

#[test]
fn page_dat_clean_is_recovered_whole() {
    let path = common::fixture("tianwang/page.dat");
    let mut out = Vec::new();
    let rep = recover(&path, &mut out, &RecoverOptions::default()).unwrap();
    assert!(rep.is_clean(), "{rep:?}");
    assert_eq!(rep.records_written, 654);
    assert_eq!(out, std::fs::read(&path).unwrap());
}

#[test]
fn page_dat_random_damage() {
    page_dat_cases(0x5eed_0001, 24);
}

#[test]
#[ignore = "long: several hundred damaged copies of page.dat"]
fn page_dat_random_damage_many() {
    for seed in 1..=20 {
        page_dat_cases(seed * 7919, 25);
    }
}

#[test]
fn page_dat_small_flips_in_headers() {
    // One byte changed in a header's structure: that record (only) is
    // lost, and the report names it.
    let data = std::fs::read(common::fixture("tianwang/page.dat")).unwrap();
    let orig = records(&data);
    for (k, pat) in [
        (3usize, &b"length: "[..]),
        (100, b"\n\n"),
        (400, b"version"),
    ] {
        let r = &orig[k];
        let at = r.start as usize + memchr::memmem::find(&data[r.start as usize..], pat).unwrap();
        let mut d = data.clone();
        d[at] = b'#';
        let (out, rep) = run_recover(&d, &RecoverOptions::default());
        let mut t = vec![false; orig.len()];
        t[k] = true;
        check_recovered(&orig, &t, &out, &format!("record {k}"));
        assert_eq!(rep.records_written, 653, "record {k}: {rep:?}");
        assert_eq!(rep.ranges.len(), 1, "{rep:?}");
        assert!(rep.ranges[0].start <= r.start && r.start < rep.ranges[0].end);
    }
}

#[test]
fn keep_damaged_writes_the_damaged_record() {
    let data = std::fs::read(common::fixture("tianwang/page.dat")).unwrap();
    let orig = records(&data);
    let mut d = data.clone();
    // Corrupt the compressed content of record 10.
    let at = (orig[10].start + orig[10].raw_header.len() as u64 + 100) as usize;
    for x in &mut d[at..at + 50] {
        *x ^= 0x55;
    }
    let (out, rep) = run_recover(&d, &RecoverOptions::default());
    assert_eq!(rep.records_written, 653);
    assert_eq!(rep.records_lost, 1);
    assert_eq!(rep.ranges[0].lost[0].offset, orig[10].start);
    assert!(rep.ranges[0].lost[0].target_uri.is_some());
    assert_eq!(records(&out).len(), 653);
    let opts = RecoverOptions {
        keep_damaged: true,
        ..RecoverOptions::default()
    };
    let (out, rep) = run_recover(&d, &opts);
    assert_eq!((rep.records_written, rep.damaged_written), (653, 1));
    assert!(rep.ranges[0].lost[0].kept);
    assert_eq!(out.len(), data.len());
}

/// Uncompressed Web InfoMall: only the three-record rule confirms a start.
#[test]
fn uncompressed_infomall_three_record_rule() {
    let mut data = Vec::new();
    let mut w = warchest::infomall::Writer::new(&mut data);
    for i in 0..8 {
        let p = warchest::infomall::Properties::new(
            format!("http://example.com/{i}"),
            "Tue, 28 Feb 2006 05:42:09 GMT",
        );
        let body = format!("HTTP/1.0 200 OK\r\n\r\n<p>page {i}</p>\nversion: in text\n");
        w.write(&p, &mut body.as_bytes(), false).unwrap();
    }
    w.finish().unwrap();
    let orig = records(&data);
    assert_eq!(orig.len(), 8);
    // Garbage over the start of record 2's header.
    let mut d = data.clone();
    let s = orig[2].start as usize;
    d[s..s + 20].copy_from_slice(&[b'x'; 20]);
    let (out, rep) = run_recover(&d, &RecoverOptions::default());
    let mut t = vec![false; 8];
    t[2] = true;
    check_recovered(&orig, &t, &out, "uncompressed");
    assert_eq!(rep.records_written, 7);
    assert!(rep.notes.is_empty(), "{:?}", rep.notes);
    // Only two records after the damage: accepted, with a note.
    let s6 = orig[6].start as usize;
    let mut d = data.clone();
    d[s6 - 30..s6 + 5].copy_from_slice(&[b'y'; 35]);
    let (out, rep) = run_recover(&d, &RecoverOptions::default());
    let mut t = vec![false; 8];
    t[5] = true;
    t[6] = true;
    check_recovered(&orig, &t, &out, "short run");
    assert_eq!(rep.notes.len(), 1, "{rep:?}");
    assert!(rep.notes[0].contains("1 consecutive"), "{:?}", rep.notes);
}

fn gzip_warc_fixture() -> Vec<u8> {
    std::fs::read(common::fixture("pywb/iana.warc.gz")).unwrap()
}

/// Member extents of a record-at-a-time file.
fn member_records(data: &[u8]) -> Vec<Rec> {
    records(data)
}

#[test]
fn gzip_warc_damaged_members() {
    let data = gzip_warc_fixture();
    let orig = member_records(&data);
    assert!(orig.len() > 300);
    let mut rng = Rng(42);
    for case in 0..6 {
        let mut d = data.clone();
        let mut hit = Vec::new();
        // A flipped byte inside a member, and a destroyed member header.
        let a = &orig[(rng.below(orig.len() as u64 - 2) + 1) as usize];
        let x = a.start + 20 + rng.below(a.end - a.start - 30);
        d[x as usize] ^= 0x01;
        hit.push((x, x + 1));
        let b = &orig[(rng.below(orig.len() as u64 - 2) + 1) as usize];
        d[b.start as usize] = 0;
        d[b.start as usize + 1] = 0;
        hit.push((b.start, b.start + 2));
        if case % 2 == 1 {
            let cut = data.len() as u64 - rng.below(20_000);
            d.truncate(cut as usize);
            hit.push((cut, u64::MAX));
        }
        let t = touched(&orig, &hit);
        let opts = RecoverOptions {
            compression: OutputCompression::Gzip,
            ..RecoverOptions::default()
        };
        let (out, rep) = run_recover(&d, &opts);
        assert_eq!(rep.format, Some(Format::Warc));
        assert!(rep.compressed);
        check_recovered(&orig, &t, &out, &format!("iana case {case} {hit:?}"));
        // The output is record-at-a-time gzip, and its digests verify.
        let mut r = Reader::new(&out[..]).unwrap();
        while let Some(mut rec) = r.next_record().unwrap() {
            let c = warchest::check::check_record(&mut rec, &warchest::Limits::default()).unwrap();
            assert!(c.is_ok());
            assert!(rec.finish().unwrap().stored_len.is_some());
        }
        assert!(!rep.ranges.is_empty());
    }
}

#[test]
fn zstd_warc_damaged_frame() {
    // page.dat converted to a zstd WARC, one frame damaged.
    let data = crate::zstd_warc_of("tianwang/page.dat");
    let orig = records(&data);
    assert_eq!(orig.len(), 655);
    let k = 300;
    let mut d = data.clone();
    let mid = ((orig[k].start + orig[k].end) / 2) as usize;
    for x in &mut d[mid..mid + 40] {
        *x = 0xaa;
    }
    let (out, rep) = run_recover(&d, &RecoverOptions::default());
    let mut t = vec![false; orig.len()];
    t[k] = true;
    check_recovered(&orig, &t, &out, "zstd");
    assert_eq!(rep.records_written, 654);
}

#[test]
fn plain_warc_overwritten_block_and_header() {
    // A plain WARC with digests (small_BNF.arc converted): one block
    // overwritten (its digest fails), one header destroyed.
    let mut r = Reader::open(common::fixture("jwat/small_BNF.arc")).unwrap();
    let mut w = warchest::write::Writer::new(
        Vec::new(),
        warchest::write::WriterOptions {
            compression: warchest::write::Compression::None,
            ..Default::default()
        },
    )
    .unwrap();
    let mut report = warchest_ops::convert::Report::default();
    warchest_ops::convert::to_warc(
        &mut r,
        "small_BNF.arc",
        &mut w,
        &Default::default(),
        &mut report,
    )
    .unwrap();
    let data = w.finish().unwrap();
    let orig = records(&data);
    assert_eq!(orig.len(), 7);
    let mut d = data.clone();
    let b3 = (orig[3].end - 200) as usize;
    d[b3..b3 + 10].copy_from_slice(b"XXXXXXXXXX");
    let h5 = orig[5].start as usize;
    d[h5..h5 + 8].copy_from_slice(b"garbage!");
    let (out, rep) = run_recover(&d, &RecoverOptions::default());
    let t = touched(
        &orig,
        &[(b3 as u64, b3 as u64 + 10), (h5 as u64, h5 as u64 + 8)],
    );
    check_recovered(&orig, &t, &out, "plain warc");
    assert_eq!(rep.records_written, 5);
    assert_eq!(rep.ranges.len(), 2, "{rep:?}");
    assert!(rep.ranges[0].lost[0].reason.contains("digest"), "{rep:?}");
}

#[test]
fn arc_garbage_in_the_middle() {
    let data = std::fs::read(common::fixture("jwat/small_BNF.arc")).unwrap();
    let orig = records(&data);
    assert_eq!(orig.len(), 6);
    let mut d = data.clone();
    // Over the end of record 2 and the URL line of record 3.
    let s = orig[3].start as usize;
    for x in &mut d[s - 10..s + 30] {
        *x = b'z';
    }
    let (out, rep) = run_recover(&d, &RecoverOptions::default());
    let t = touched(&orig, &[(s as u64 - 10, s as u64 + 30)]);
    assert_eq!(t.iter().filter(|&&x| x).count(), 2);
    check_recovered(&orig, &t, &out, "arc");
    assert_eq!(rep.records_written, 4);
    let clean = run_recover(&data, &RecoverOptions::default());
    assert!(clean.1.is_clean(), "{:?}", clean.1);
    assert_eq!(clean.0, data);
}

#[test]
fn recovered_output_is_a_valid_file() {
    // Recovering a clean plain WARC gives it back; an ARC.gz too (as
    // plain ARC records).
    let p = common::fixture("warcio/example.warc");
    let mut out = Vec::new();
    let rep = recover(&p, &mut out, &RecoverOptions::default()).unwrap();
    assert!(rep.is_clean(), "{rep:?}");
    assert_eq!(
        records(&out).len(),
        records(&std::fs::read(&p).unwrap()).len()
    );
    let p = common::fixture("warcio/example.arc.gz");
    let mut out = Vec::new();
    let rep = recover(Path::new(&p), &mut out, &RecoverOptions::default()).unwrap();
    assert!(rep.is_clean(), "{rep:?}");
    let got = records(&out);
    assert_eq!(got.len(), 2);
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&out).unwrap();
}

/// Issue 19: one bit flipped in each of two records with one whole record
/// between them, near the end of a per-record gzip WARC. The record in
/// between (a whole member with a valid CRC that parses as a complete
/// record) is intact and written; every record not written is listed as
/// lost at its member's offset.
#[test]
fn gzip_warc_intact_record_between_two_flips() {
    let data = gzip_warc_fixture();
    let orig = member_records(&data);
    let n = orig.len();
    let mut failures = Vec::new();
    for first in [n - 3, n - 4, n - 5, n - 8, n / 2] {
        for frac in [2u64, 3, 5] {
            let (a, b) = (&orig[first], &orig[first + 2]);
            let mut d = data.clone();
            // A bit in the deflate data of each member (past its 10-byte
            // gzip header, before its 8-byte trailer).
            let xa = a.start + 10 + (a.end - a.start - 18) / frac;
            let xb = b.start + 10 + (b.end - b.start - 18) / frac;
            d[xa as usize] ^= 0x10;
            d[xb as usize] ^= 0x10;
            let opts = RecoverOptions {
                compression: OutputCompression::Gzip,
                ..RecoverOptions::default()
            };
            let (out, rep) = run_recover(&d, &opts);
            let mut t = vec![false; n];
            t[first] = true;
            t[first + 2] = true;
            check_recovered(&orig, &t, &out, &format!("flips at {xa} and {xb}"));
            let got = records(&out);
            let lost: Vec<u64> = rep
                .ranges
                .iter()
                .flat_map(|r| &r.lost)
                .map(|l| l.offset)
                .collect();
            let middle = &orig[first + 1];
            if !got
                .iter()
                .any(|g| g.raw_header == middle.raw_header && g.block == middle.block)
            {
                failures.push(format!(
                    "flips at {xa}, {xb}: the intact record at {} was not written",
                    middle.start
                ));
            }
            // Every record not written is listed.
            for o in &orig {
                let written = got
                    .iter()
                    .any(|g| g.raw_header == o.raw_header && g.block == o.block);
                if !written && !lost.contains(&o.start) {
                    failures.push(format!("flips at {xa}, {xb}: the record at {} is neither written nor listed as lost ({:?})", o.start, rep.ranges));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
