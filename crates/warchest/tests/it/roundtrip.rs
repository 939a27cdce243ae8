//! Property tests: records written by warchest read back the same, whatever
//! the fields, bodies, compression and read buffer size.

use std::io::Read;

use proptest::prelude::*;
use warchest::archive::Reader;
use warchest::check::{DigestStatus, check_record};
use warchest::codec::DecoderOptions;
use warchest::warc::{ReaderOptions, RecordType};
use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions};

fn record_type() -> impl Strategy<Value = RecordType> {
    prop_oneof![
        Just(RecordType::Warcinfo),
        Just(RecordType::Response),
        Just(RecordType::Resource),
        Just(RecordType::Request),
        Just(RecordType::Metadata),
        Just(RecordType::Revisit),
        Just(RecordType::Conversion),
        Just(RecordType::Continuation),
    ]
}

/// Extension fields: token names, values of any bytes but CR and LF.
fn extra_fields() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    prop::collection::vec(
        (
            "X-[A-Za-z0-9-]{1,12}",
            prop::collection::vec(
                any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'),
                0..40,
            ),
        ),
        0..6,
    )
}

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        (0u32..=9).prop_map(Compression::Gzip),
        (1i32..=5).prop_map(|level| Compression::Zstd {
            level,
            dictionary: None
        }),
    ]
}

#[derive(Debug, Clone)]
struct Rec {
    typ: RecordType,
    uri: Option<String>,
    fields: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        record_type(),
        prop::option::of("(http|https|dns|urn):[a-zA-Z0-9/._~%?=&-]{0,60}"),
        extra_fields(),
        prop::collection::vec(any::<u8>(), 0..3000),
    )
        .prop_map(|(typ, uri, fields, body)| Rec {
            typ,
            uri,
            fields,
            body,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn write_then_read_gives_the_same_records(
        recs in prop::collection::vec(rec(), 1..8),
        comp in compression(),
        buffer_size in 64usize..5000,
        streamed in any::<bool>(),
    ) {
        let mut w = Writer::new(Vec::new(), WriterOptions { compression: comp, ..WriterOptions::default() }).unwrap();
        let mut written = Vec::new();
        for r in &recs {
            let mut nr = NewRecord::new(r.typ);
            if let Some(u) = &r.uri {
                nr.set("WARC-Target-URI", u).unwrap();
            }
            for (n, v) in &r.fields {
                nr.append(n, v).unwrap();
            }
            let mut src = &r.body[..];
            let body = if streamed {
                Body::Stream { reader: &mut src, len: None }
            } else {
                Body::Bytes(&r.body)
            };
            let info = w.write(&mut nr, body).unwrap();
            written.push((nr.header().as_bytes().to_vec(), info));
        }
        let data = w.finish().unwrap();

        let mut opts = ReaderOptions::strict();
        opts.decoder = DecoderOptions { buffer_size, lenient: false, ..DecoderOptions::default() };
        let mut reader = Reader::with_options(&data[..], opts).unwrap();
        for (i, r) in recs.iter().enumerate() {
            let mut rec = reader.next_record().unwrap().expect("a record");
            prop_assert_eq!(rec.header().as_bytes(), &written[i].0[..]);
            prop_assert_eq!(rec.header().record_type(), r.typ);
            prop_assert_eq!(rec.header().target_uri().map(|s| s.into_owned()), r.uri.clone());
            for (n, v) in &r.fields {
                // The grammar drops the space and tab (and only those) around a value.
                let lws = |b: &u8| *b == b' ' || *b == b'\t';
                let start = v.iter().position(|b| !lws(b)).unwrap_or(v.len());
                let end = v.iter().rposition(|b| !lws(b)).map_or(start, |i| i + 1);
                let trimmed = &v[start..end.max(start)];
                prop_assert!(rec.header().fields().get_all(n).any(|f| f.raw_value() == &v[..]
                    || f.value().as_ref() == trimmed));
            }
            prop_assert_eq!(rec.location().offset, written[i].1.offset);
            let c = check_record(&mut rec, &Default::default()).unwrap();
            prop_assert_eq!(&c.block, &DigestStatus::Valid);
            prop_assert!(c.payload.is_ok());
            prop_assert_eq!(c.block_len, r.body.len() as u64);
            let end = rec.finish().unwrap();
            prop_assert_eq!(end.stored_len, Some(written[i].1.stored_len));
        }
        prop_assert!(reader.next_record().unwrap().is_none());
        prop_assert!(reader.take_warnings().is_empty());
    }

    /// Bodies read through the block reader in pieces of any size equal what
    /// was written.
    #[test]
    fn block_reads_in_any_pieces(body in prop::collection::vec(any::<u8>(), 0..20000), piece in 1usize..999) {
        let mut w = Writer::new(Vec::new(), WriterOptions::default()).unwrap();
        w.write(&mut NewRecord::new(RecordType::Resource), Body::Bytes(&body)).unwrap();
        let data = w.finish().unwrap();
        let mut reader = Reader::new(&data[..]).unwrap();
        let mut rec = reader.next_record().unwrap().unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; piece];
        let mut block = rec.block();
        loop {
            let n = block.read(&mut buf).unwrap();
            if n == 0 { break; }
            got.extend_from_slice(&buf[..n]);
        }
        prop_assert_eq!(got, body);
    }

    /// Any bytes at all: lenient reading never panics and never loops.
    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..4000), prefix in any::<bool>()) {
        let mut input = Vec::new();
        if prefix {
            input.extend_from_slice(b"WARC/1.1\r\nContent-Length: 10\r\n\r\n");
        }
        input.extend_from_slice(&data);
        if let Ok(mut reader) = Reader::new(&input[..]) {
            let mut n = 0;
            while let Ok(Some(mut rec)) = reader.next_record() {
                let _ = check_record(&mut rec, &Default::default());
                n += 1;
                prop_assert!(n <= input.len() + 1);
            }
        }
    }
}

/// `check_record` takes the SHA-1s the decoding jobs computed
/// (`DecoderOptions::member_digests`, as `check -j N` and `validate` read)
/// and gives every record the statuses hashing on one thread gives:
/// wrong block and payload digests, chunked bodies; and the jobs did
/// hash most records.
#[test]
fn check_record_with_the_jobs_digests_gives_the_same_statuses() {
    use warchest::codec::{Decoder, Source as _};
    use warchest::digest::{Algorithm, Digest, Hasher};
    let sha1 =
        |b: &[u8]| Digest::new(Algorithm::Sha1, &Hasher::digest(Algorithm::Sha1, b)).to_string();
    let opts = WriterOptions {
        compression: Compression::Gzip(1),
        ..Default::default()
    };
    let mut w = Writer::new(Vec::new(), opts).unwrap();
    let mut seed = 7u64;
    for i in 0..2000u64 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let payload: Vec<u8> = (0..100 + (seed >> 33) % 3000)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b'a' + ((seed >> 33) % 26) as u8
            })
            .collect();
        let block = if i % 13 == 0 {
            let mut b = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            b.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
            b.extend_from_slice(&payload);
            b.extend_from_slice(b"\r\n0\r\n\r\n");
            b
        } else {
            let mut b = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".to_vec();
            b.extend_from_slice(&payload);
            b
        };
        let mut r = NewRecord::new(RecordType::Response);
        r.set("WARC-Target-URI", format!("http://example.com/{i}"))
            .unwrap();
        r.set("Content-Type", "application/http; msgtype=response")
            .unwrap();
        let bd = if i % 7 == 3 {
            b"other".to_vec()
        } else {
            block.clone()
        };
        let pd = if i % 11 == 5 {
            b"other".to_vec()
        } else {
            payload
        };
        r.set("WARC-Block-Digest", sha1(&bd)).unwrap();
        r.set("WARC-Payload-Digest", sha1(&pd)).unwrap();
        w.write(&mut r, Body::Bytes(&block)).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("responses.warc.gz");
    let gz = w.finish().unwrap();
    // Several of the parallel decoder's jobs' chunks (256 KiB).
    assert!(gz.len() > 1 << 20, "{} bytes", gz.len());
    std::fs::write(&path, gz).unwrap();
    let statuses = |threads: usize, jobs: bool| {
        let dopts = DecoderOptions {
            threads,
            member_digests: jobs,
            ..Default::default()
        };
        let f = std::fs::File::open(&path).unwrap();
        let shared = f.try_clone().unwrap();
        let dec = Decoder::new_seekable_threaded(f, Some(shared), dopts).unwrap();
        let mut reader = Reader::from_source(dec, Default::default()).unwrap();
        let (mut got, mut hashed) = (Vec::new(), 0);
        while let Some(mut rec) = reader.next_record().unwrap() {
            hashed += usize::from(rec.source().member_digests().is_some());
            let c = check_record(&mut rec, &Default::default()).unwrap();
            got.push((c.block, c.payload));
            rec.finish().unwrap();
        }
        (got, hashed)
    };
    let (one, none) = statuses(1, false);
    assert_eq!(none, 0);
    let bad = |f: fn(&(DigestStatus, DigestStatus)) -> &DigestStatus| {
        one.iter()
            .filter(|s| matches!(f(s), DigestStatus::Invalid { .. }))
            .count()
    };
    assert_eq!(one.len(), 2000);
    assert_eq!(bad(|s| &s.0), 2000 / 7 + 1);
    assert_eq!(bad(|s| &s.1), 2000 / 11 + 1);
    let (two, hashed) = statuses(2, true);
    assert_eq!(two, one);
    if cfg!(feature = "parallel") {
        assert!(hashed > 1000, "{hashed} of 2000 hashed by the jobs");
    } else {
        // No jobs without the parallel decoder: all hashed on one thread.
        assert_eq!(hashed, 0);
    }
}
