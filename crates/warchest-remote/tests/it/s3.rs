//! Reading, listing and writing in a real S3-compatible server (moto).

use std::io::{Read, Write};

use warchest_remote::{Location, RemoteFile, RemoteWriter};

use crate::servers::Moto;
use crate::{fixture, quick, record_spans};

/// One test for the whole S3 surface: the endpoint is process-wide
/// configuration (AWS_ENDPOINT_URL), so one server serves it all.
#[test]
fn s3_reads_lists_and_writes() {
    let moto = Moto::start();
    for (k, v) in moto.env() {
        // SAFETY: set before this test binary's only S3 client is made;
        // the other tests read no AWS_* variable.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(k, v)
        };
    }
    let names = ["example.warc.gz", "example.warc", "example.arc.gz"];
    let files: Vec<_> = names
        .iter()
        .map(|n| (format!("crawl/{n}"), fixture(&format!("warcio/{n}"))))
        .collect();
    moto.upload("bucket", &files);

    // Whole objects and their records, as the local files.
    for (key, path) in &files {
        let url = format!("s3://bucket/{key}");
        let opts = quick();
        let mut f =
            RemoteFile::open(Location::parse_with(&url, &opts).unwrap(), opts.clone()).unwrap();
        let local = std::fs::read(path).unwrap();
        assert_eq!(f.size(), local.len() as u64);
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert!(got == local, "{url}");
        let f = RemoteFile::open(Location::parse_with(&url, &opts).unwrap(), opts).unwrap();
        assert_eq!(
            record_spans(f),
            record_spans(std::fs::File::open(path).unwrap()),
            "{url}"
        );
        let r = warchest_remote::get_range(&url, 3, 40).unwrap();
        assert_eq!(&r[..], &local[3..43]);
    }

    // Listing: a prefix, a glob, one object.
    let listed = warchest_remote::list("s3://bucket/crawl/").unwrap();
    let want: Vec<_> = {
        let mut v: Vec<_> = files
            .iter()
            .map(|(k, p)| {
                (
                    format!("s3://bucket/{k}"),
                    std::fs::metadata(p).unwrap().len(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(listed, want);
    let gz = warchest_remote::list("s3://bucket/crawl/*.gz").unwrap();
    assert_eq!(gz.len(), 2, "{gz:?}");
    assert!(gz.iter().all(|(u, _)| u.ends_with(".gz")));
    assert_eq!(warchest_remote::list("s3://bucket/crawl").unwrap(), want);
    let e = warchest_remote::list("s3://bucket/nothing/here").unwrap_err();
    assert!(e.to_string().contains("s3://bucket/nothing/here"), "{e}");
    // Each object listed has a version (its ETag), the same from a
    // listing and from a HEAD of the object alone.
    let versions = warchest_remote::list_versions("s3://bucket/crawl/").unwrap();
    assert_eq!(
        versions
            .iter()
            .map(|l| (l.url.clone(), l.size))
            .collect::<Vec<_>>(),
        want
    );
    for l in &versions {
        assert!(l.version.is_some(), "{l:?}");
        assert_eq!(
            warchest_remote::list_versions(&l.url).unwrap(),
            std::slice::from_ref(l)
        );
    }

    // Writing: a small object (one PUT) and a multipart one, each present
    // only after finish; one dropped unfinished leaves nothing.
    let mut opts = quick();
    opts.part_size = 5 << 20;
    let small = b"WARC/1.1\r\n".repeat(10);
    let mut w = RemoteWriter::new(
        Location::parse_with("s3://bucket/out/small.warc", &opts).unwrap(),
        opts.clone(),
    )
    .unwrap();
    w.write_all(&small).unwrap();
    assert!(!moto.keys("bucket").iter().any(|k| k.contains("out/small")));
    w.finish().unwrap();
    assert_eq!(
        &warchest_remote::get_range("s3://bucket/out/small.warc", 0, small.len() as u64).unwrap()[..],
        &small[..]
    );
    // Replaced by an object of the same size: another version.
    let before = warchest_remote::list_versions("s3://bucket/out/small.warc").unwrap();
    let mut w = RemoteWriter::new(
        Location::parse_with("s3://bucket/out/small.warc", &opts).unwrap(),
        opts.clone(),
    )
    .unwrap();
    w.write_all(&b"WARC/1.0\r\n".repeat(10)).unwrap();
    w.finish().unwrap();
    let after = warchest_remote::list_versions("s3://bucket/out/small.warc").unwrap();
    assert_eq!(
        (after[0].size, &after[0].url),
        (before[0].size, &before[0].url)
    );
    assert_ne!(after[0].version, before[0].version, "{before:?} {after:?}");
    assert!(after[0].version.is_some(), "{after:?}");

    let big: Vec<u8> = (0..(12u32 << 20)).map(|i| (i % 251) as u8).collect();
    let mut w = RemoteWriter::new(
        Location::parse_with("s3://bucket/out/big.warc", &opts).unwrap(),
        opts.clone(),
    )
    .unwrap();
    for piece in big.chunks(1 << 20) {
        w.write_all(piece).unwrap();
    }
    let keys = moto.keys("bucket");
    assert!(!keys.contains(&"out/big.warc".to_string()), "{keys:?}");
    assert!(
        keys.contains(&"UPLOAD out/big.warc".to_string()),
        "{keys:?}"
    );
    w.finish().unwrap();
    let mut f = warchest_remote::open("s3://bucket/out/big.warc").unwrap();
    let mut got = Vec::new();
    f.read_to_end(&mut got).unwrap();
    assert!(got == big, "multipart object differs");

    let mut w = RemoteWriter::new(
        Location::parse_with("s3://bucket/out/dropped.warc", &opts).unwrap(),
        opts,
    )
    .unwrap();
    w.write_all(&big).unwrap();
    drop(w);
    let keys = moto.keys("bucket");
    assert!(!keys.iter().any(|k| k.contains("dropped")), "{keys:?}");

    // Read at offsets by several threads, in blocks (the parallel scan).
    let iana = fixture("pywb/iana.warc.gz");
    moto.upload(
        "bucket",
        &[("crawl/iana.warc.gz".to_string(), iana.clone())],
    );
    crate::blocks::blocks_over_s3_match_the_file("s3://bucket/crawl/iana.warc.gz", &iana);
}
