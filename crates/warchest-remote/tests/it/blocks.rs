//! `RemoteBlocks`: an object read at offsets by several threads at once, in
//! blocks fetched ahead, over HTTP and S3, through faults and a cut object.

use std::sync::Arc;

use warchest::io::ReadAt;
use warchest_remote::{Location, RemoteBlocks};

use crate::servers::RangeServer;
use crate::{fixture, quick};

/// Pieces read by one thread: (offset, bytes).
type Pieces = Vec<(u64, Vec<u8>)>;

/// Reads the whole source on `threads` threads at once, each taking every
/// `threads`-th piece of `piece` bytes, in order (as the decoder's jobs
/// walk a file): the bytes put together.
fn read_interleaved(src: &Arc<RemoteBlocks>, threads: u64, piece: u64) -> std::io::Result<Vec<u8>> {
    let size = src.size()?;
    let mut out = vec![0u8; size as usize];
    let results: Vec<std::io::Result<Pieces>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let src = Arc::clone(src);
                s.spawn(move || {
                    let mut got = Vec::new();
                    let mut at = t * piece;
                    while at < size {
                        let mut buf = vec![0u8; piece.min(size - at) as usize];
                        let mut n = 0;
                        while n < buf.len() {
                            let k = src.read_at(&mut buf[n..], at + n as u64)?;
                            assert!(k > 0, "no bytes at {}", at + n as u64);
                            n += k;
                        }
                        got.push((at, buf));
                        at += threads * piece;
                    }
                    Ok(got)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in results {
        for (at, b) in r? {
            out[at as usize..at as usize + b.len()].copy_from_slice(&b);
        }
    }
    Ok(out)
}

fn open(url: &str, block: usize) -> Arc<RemoteBlocks> {
    let opts = quick();
    let loc = Location::parse_with(url, &opts).unwrap();
    Arc::new(RemoteBlocks::open(loc, opts).unwrap().with_blocks(block, 2))
}

#[test]
fn threads_reading_blocks_over_http_get_the_bytes_through_faults_and_a_cut_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = std::fs::read(fixture("pywb/iana.warc.gz")).unwrap();
    std::fs::write(dir.path().join("iana.warc.gz"), &data).unwrap();
    let srv = RangeServer::start(dir.path(), 5.0);
    let url = srv.url("iana.warc.gz");

    let src = open(&url, 64 << 10);
    assert!(read_interleaved(&src, 3, 20_000).unwrap() == data);
    let (gets, heads) = srv.count();
    assert_eq!(heads, 1);
    let blocks = data.len().div_ceil(64 << 10) as u64;
    // Each block once (a few dropped and fetched again at most), not one
    // request per read.
    assert!(
        (blocks..=blocks + 6).contains(&gets),
        "{gets} GETs, {blocks} blocks"
    );
    assert_eq!(src.requests(), gets + 1);

    // Faults are retried: the same bytes.
    srv.faults(&["503", "reset", "500", "short"]);
    let src = open(&url, 64 << 10);
    assert!(read_interleaved(&src, 2, 50_000).unwrap() == data);

    // A cut object: an error naming the URL and the byte, for every
    // thread that needs that block, never fewer bytes.
    let cut = 300_001;
    srv.cut("iana.warc.gz", cut);
    let src = open(&url, 64 << 10);
    let e = read_interleaved(&src, 2, 30_000).unwrap_err().to_string();
    assert!(
        e.contains(&url) && e.contains(&format!("at byte {cut}")),
        "{e}"
    );
}

/// Over S3 (called by `s3::s3_reads_lists_and_writes`, which owns the
/// process's S3 endpoint): `url`, a copy of `path`, read by threads in
/// blocks, gives its bytes, and decodes as the local file.
pub fn blocks_over_s3_match_the_file(url: &str, path: &std::path::Path) {
    let data = std::fs::read(path).unwrap();
    let opts = quick();
    let loc = Location::parse_with(url, &opts).unwrap();
    let src = Arc::new(
        RemoteBlocks::open(loc, opts)
            .unwrap()
            .with_blocks(100_000, 3),
    );
    assert!(read_interleaved(&src, 4, 33_333).unwrap() == data, "{url}");

    use warchest::archive::Reader;
    use warchest::codec::Decoder;
    use warchest::warc::ReaderOptions;
    let ropts = ReaderOptions::lenient();
    let dec = Decoder::new_read_at(src, url, ropts.decoder.clone()).unwrap();
    let remote = crate::record_spans_of(Reader::from_source(dec, ropts).unwrap());
    let local = crate::record_spans(std::fs::File::open(path).unwrap());
    assert!(local.len() > 10);
    assert_eq!(remote, local);
}
