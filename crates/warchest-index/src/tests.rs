use super::*;
use warchest::archive::Reader;

fn record(typ: &str, uri: &str, id: &str, extra: &str, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.0\r\nWARC-Type: {typ}\r\nWARC-Record-ID: {id}\r\nWARC-Date: 2014-06-10T00:08:59Z\r\nWARC-Target-URI: {uri}\r\n{extra}Content-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

fn index(data: &[u8], opts: IndexOptions) -> Vec<Entry> {
    let mut reader = Reader::new(data).unwrap();
    Indexer::new("f.warc", opts).entries(&mut reader).unwrap()
}

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: Text/HTML; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";

#[test]
fn response_fields() {
    let data = record(
        "response",
        "<http://www.Example.com/a b>",
        "<urn:uuid:1>",
        "Content-Type: application/http; msgtype=response\r\n",
        RESPONSE,
    );
    let e = &index(&data, IndexOptions::default())[0];
    assert_eq!(e.urlkey, "com,example)/a%20b");
    assert_eq!(e.timestamp, "20140610000859");
    assert_eq!(e.url.as_deref(), Some("http://www.Example.com/a%20b"));
    assert_eq!(e.mime.as_deref(), Some("Text/HTML"));
    assert_eq!(e.status.as_deref(), Some("200"));
    assert_eq!(e.charset.as_deref(), Some("utf-8"));
    // Computed over the de-chunked payload ("hello"), as the spec defines it.
    assert_eq!(
        e.digest.as_deref(),
        Some("VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N")
    );
    assert_eq!(e.offset, 0);
    assert_eq!(e.length, Some(data.len() as u64));
    assert_eq!(e.filename, "f.warc");
}

#[test]
fn recorded_digest_loses_only_a_sha1_label() {
    let mut data = record(
        "resource",
        "http://a/",
        "<urn:uuid:1>",
        "Content-Type: text/plain\r\nWARC-Payload-Digest: sha1:ABC\r\n",
        b"x",
    );
    data.extend(record(
        "resource",
        "http://a/",
        "<urn:uuid:2>",
        "Content-Type: text/plain\r\nWARC-Payload-Digest: sha256:abc\r\n",
        b"x",
    ));
    let es = index(&data, IndexOptions::default());
    assert_eq!(es[0].digest.as_deref(), Some("ABC"));
    assert_eq!(es[1].digest.as_deref(), Some("sha256:abc"));
    assert_eq!(es[0].mime.as_deref(), Some("text/plain"));
    assert_eq!(es[0].status, None);
}

#[test]
fn default_record_selection() {
    let mut data = record(
        "warcinfo",
        "",
        "<urn:uuid:0>",
        "Content-Type: application/warc-fields\r\n",
        b"a: b\r\n",
    );
    data.extend(record(
        "request",
        "http://a/",
        "<urn:uuid:1>",
        "Content-Type: application/http; msgtype=request\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
    ));
    data.extend(record(
        "metadata",
        "http://a/",
        "<urn:uuid:2>",
        "Content-Type: application/warc-fields\r\n",
        b"a: b\r\n",
    ));
    data.extend(record(
        "metadata",
        "metadata://x/log",
        "<urn:uuid:3>",
        "Content-Type: text/plain\r\n",
        b"log",
    ));
    data.extend(record(
        "revisit",
        "http://a/",
        "<urn:uuid:4>",
        "Content-Type: application/http; msgtype=response\r\n",
        b"HTTP/1.1 304 Not Modified\r\n\r\n",
    ));
    let es = index(&data, IndexOptions::default());
    let ids: Vec<_> = es.iter().map(|e| e.record_id.as_deref().unwrap()).collect();
    assert_eq!(ids, ["<urn:uuid:3>", "<urn:uuid:4>"]);
    assert_eq!(es[1].mime.as_deref(), Some("warc/revisit"));
    assert_eq!(es[1].status.as_deref(), Some("304"));
    // Revisits without a digest get none computed.
    assert_eq!(es[1].digest, None);
    let all = index(
        &data,
        IndexOptions {
            all: true,
            ..IndexOptions::default()
        },
    );
    assert_eq!(all.len(), 5);
    assert_eq!(all[0].urlkey, "-");
    assert_eq!(all[0].url.as_deref(), Some(""));
}

#[test]
fn post_request_key_is_appended_to_both() {
    let mut data = record(
        "response",
        "http://httpbin.org/post",
        "<urn:uuid:1>",
        "Content-Type: application/http; msgtype=response\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}",
    );
    data.extend(record(
        "request",
        "http://httpbin.org/post",
        "<urn:uuid:2>",
        "Content-Type: application/http; msgtype=request\r\nWARC-Concurrent-To: <urn:uuid:1>\r\n",
        b"POST /post HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 16\r\n\r\nfoo=bar&test=abc",
    ));
    let es = index(
        &data,
        IndexOptions {
            all: true,
            ..IndexOptions::default()
        },
    );
    assert_eq!(
        es[0].urlkey,
        "org,httpbin)/post?__wb_method=post&foo=bar&test=abc"
    );
    assert_eq!(es[1].urlkey, es[0].urlkey);
    assert_eq!(es[0].method.as_deref(), Some("POST"));
    assert_eq!(es[0].request_body, Some(Some("foo=bar&test=abc".into())));
    assert_eq!(es[1].method, None);
    let plain = index(
        &data,
        IndexOptions {
            post_append: false,
            ..IndexOptions::default()
        },
    );
    assert_eq!(plain[0].urlkey, "org,httpbin)/post");
}

#[test]
fn unpaired_post_keeps_its_plain_key() {
    let data = record(
        "request",
        "http://a/x?y=1",
        "<urn:uuid:2>",
        "Content-Type: application/http; msgtype=request\r\n",
        b"POST /x HTTP/1.1\r\nContent-Length: 1\r\n\r\nz",
    );
    let es = index(
        &data,
        IndexOptions {
            all: true,
            ..IndexOptions::default()
        },
    );
    assert_eq!(es[0].urlkey, "a)/x?y=1");
}

#[test]
fn overlong_http_head_is_not_http() {
    let block = format!("HTTP/1.1 200 OK\r\nX-Long: {}\r\n\r\nbody", "a".repeat(200));
    let data = record(
        "response",
        "http://a/",
        "<urn:uuid:1>",
        "Content-Type: application/http; msgtype=response\r\n",
        block.as_bytes(),
    );
    let limits = Limits {
        max_http_head: 64,
        ..Limits::default()
    };
    let e = &index(
        &data,
        IndexOptions {
            limits,
            ..IndexOptions::default()
        },
    )[0];
    assert_eq!(e.status, None);
    let whole =
        Encoding::Base32.encode(Hasher::digest(Algorithm::Sha1, block.as_bytes()).as_bytes());
    assert_eq!(e.digest.as_deref(), Some(whole.as_str()));
}

fn post_pair(request_head: &str, body: &[u8]) -> Vec<Entry> {
    let mut data = record(
        "request",
        "http://a/p",
        "<urn:uuid:1>",
        "Content-Type: application/http; msgtype=request\r\n",
        &[request_head.as_bytes(), body].concat(),
    );
    data.extend(record(
        "response",
        "http://a/p",
        "<urn:uuid:2>",
        "Content-Type: application/http; msgtype=response\r\nWARC-Concurrent-To: <urn:uuid:1>\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n",
    ));
    index(&data, IndexOptions::default())
}

#[test]
fn post_bodies_are_decoded_before_the_query_is_made() {
    // Chunked and gzip-encoded form body.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, b"x=1&y=2").unwrap();
    let gz = gz.finish().unwrap();
    let mut chunked = format!("{:x}\r\n", gz.len()).into_bytes();
    chunked.extend_from_slice(&gz);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let es = post_pair(
        "POST /p HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n",
        &chunked,
    );
    assert_eq!(es[0].urlkey, "a)/p?__wb_method=post&x=1&y=2");
    assert_eq!(es[0].request_body, Some(Some("x=1&y=2".into())));

    // Cut to Content-Length.
    let es = post_pair(
        "PUT /p HTTP/1.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 2\r\n\r\n",
        b"abcdef",
    );
    assert_eq!(es[0].request_body, Some(Some("__wb_post_data=YWI=".into())));
    assert_eq!(es[0].method.as_deref(), Some("PUT"));

    // A Content-Length python cannot read: null, and no query in the key.
    let es = post_pair("POST /p HTTP/1.1\r\nContent-Length: x\r\n\r\n", b"abc");
    assert_eq!(es[0].request_body, Some(None));
    assert_eq!(es[0].urlkey, "a)/p?__wb_method=post");

    // GET requests change nothing.
    let es = post_pair("GET /p HTTP/1.1\r\n\r\n", b"");
    assert_eq!(es[0].urlkey, "a)/p");
    assert_eq!(es[0].method, None);
}

#[test]
fn json_output_has_key_and_timestamp_first() {
    let data = record(
        "resource",
        "http://a/",
        "<urn:uuid:1>",
        "Content-Type: text/plain\r\n",
        b"x",
    );
    let mut reader = Reader::new(&data[..]).unwrap();
    let mut out = IndexOutput::new(Vec::new(), &Format::Json, false).unwrap();
    Indexer::new("f", IndexOptions::default())
        .index(&mut reader, |e| out.push(&e))
        .unwrap();
    let text = String::from_utf8(out.finish().unwrap()).unwrap();
    assert!(
        text.starts_with("{\"urlkey\": \"a)/\", \"timestamp\": \"20140610000859\", \"url\": \"http://a/\", \"mime\": \"text/plain\""),
        "{text}"
    );
}

mod robustness {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn surt_never_panics(url in "\\PC{0,60}", raw in proptest::collection::vec(any::<u8>(), 0..60)) {
            let _ = surt::surt(&url);
            let _ = surt::surt_bytes(&raw);
            let k = surt::url_key(&url);
            prop_assert!(!k.is_empty() || url.is_empty());
        }

        #[test]
        fn post_queries_never_panic(body in proptest::collection::vec(any::<u8>(), 0..200), which in 0usize..6) {
            let mime = ["application/x-www-form-urlencoded", "multipart/form-data; boundary=b",
                "application/json", "text/plain", "application/x-amf", ""][which];
            let q = post::body_query(mime, &body).unwrap_or_default();
            prop_assert!(q.chars().count() <= post::MAX_QUERY_CHARS);
        }

        #[test]
        fn indexing_arbitrary_blocks_never_panics(
            block in proptest::collection::vec(any::<u8>(), 0..300),
            typ in 0usize..4,
            http in any::<bool>(),
        ) {
            let t = ["response", "request", "revisit", "resource"][typ];
            let ct = if http { "Content-Type: application/http; msgtype=response\r\n" } else { "" };
            let mut data = record(t, "http://a/", "<urn:uuid:1>", ct, &block);
            data.extend(record("request", "http://a/", "<urn:uuid:2>",
                "WARC-Concurrent-To: <urn:uuid:1>\r\n", &[b"POST / HTTP/1.1\r\n\r\n".as_slice(), &block].concat()));
            let mut reader = Reader::new(&data[..]).unwrap();
            let _ = Indexer::new("f", IndexOptions { all: true, ..IndexOptions::default() }).entries(&mut reader);
        }
    }
}

#[test]
fn arc_filedesc_only_with_all() {
    let data: &[u8] = b"filedesc://x.arc 0.0.0.0 20140216050221 text/plain 55\n1 0 Example\nURL IP-address Archive-date Content-type Archive-length\n\nhttp://example.com/ 93.184.216.119 20140216050221 text/html 19\nHTTP/1.0 200 OK\r\n\r\n\n";
    let urls = |opts| -> Vec<String> {
        index(data, opts)
            .into_iter()
            .map(|e| e.url.unwrap_or_default())
            .collect()
    };
    assert_eq!(urls(IndexOptions::default()), ["http://example.com/"]);
    let all = IndexOptions {
        all: true,
        ..IndexOptions::default()
    };
    assert_eq!(urls(all), ["filedesc://x.arc", "http://example.com/"]);
}

/// index_noting hands the reader's warnings over as the scan goes (each
/// damaged record's before the next is read), so a long scan does not
/// hold them all; every warning is handed over once, and index alone
/// leaves them with the reader.
#[test]
fn index_noting_takes_warnings_as_it_goes() {
    // Each a record whose header lines end in bare LFs.
    let bare = |uri: &str| {
        let r = String::from_utf8(record("resource", uri, "<urn:uuid:9>", "", b"x")).unwrap();
        let (head, rest) = r.split_once("\r\n\r\n").unwrap();
        format!("{}\n\n{rest}", head.replace("\r\n", "\n")).into_bytes()
    };
    let mut data = bare("http://a.test/1");
    data.extend(bare("http://a.test/2"));
    data.extend(bare("http://a.test/3"));
    let mut reader = Reader::new(&data[..]).unwrap();
    let (mut batches, mut entries) = (Vec::new(), 0);
    Indexer::new("f.warc", IndexOptions::default())
        .index_noting(
            &mut reader,
            |_| {
                entries += 1;
                Ok(())
            },
            |ws| batches.push(ws.len()),
        )
        .unwrap();
    assert_eq!(entries, 3);
    assert!(batches.len() >= 3, "{batches:?}");
    assert_eq!(batches.iter().sum::<usize>(), 3, "{batches:?}");
    assert!(reader.take_warnings().is_empty());
    let mut reader = Reader::new(&data[..]).unwrap();
    Indexer::new("f.warc", IndexOptions::default())
        .entries(&mut reader)
        .unwrap();
    assert_eq!(reader.take_warnings().len(), 3);
}

/// A record whose HTTP head does not parse is indexed as before (no
/// status, no MIME: cdxj-indexer's entry) and counted by index_noted, at
/// its offset and under the indexer's file name; an empty revisit block
/// (no head to parse) and a request that is not indexed are not counted,
/// and plain index counts nothing anywhere.
#[test]
fn index_noted_counts_records_whose_http_head_did_not_parse() {
    let http = "Content-Type: application/http; msgtype=response\r\n";
    let mut data = record("response", "http://a.test/", "<urn:uuid:1>", http, RESPONSE);
    let bad_at = data.len() as u64;
    data.extend(record(
        "response",
        "http://a.test/bad",
        "<urn:uuid:2>",
        http,
        b"hello world\r\n\r\nbody",
    ));
    data.extend(record("revisit", "http://a.test/", "<urn:uuid:3>", "", b""));
    data.extend(record(
        "request",
        "http://a.test/req",
        "<urn:uuid:4>",
        "",
        b"hello world\r\n\r\n",
    ));
    let mut reader = Reader::new(&data[..]).unwrap();
    let (mut entries, mut warned) = (Vec::new(), 0);
    let mut unparsed = Recoveries::new();
    Indexer::new("f.warc", IndexOptions::default())
        .index_noted(
            &mut reader,
            |e| {
                entries.push(e);
                Ok(())
            },
            |ws| warned += ws.len(),
            &mut unparsed,
        )
        .unwrap();
    assert_eq!(warned, 0);
    assert_eq!(entries.len(), 3);
    // The entry itself is as it was.
    assert_eq!(entries, index(&data, IndexOptions::default()));
    let bad = &entries[1];
    assert_eq!(bad.offset, bad_at);
    assert_eq!((bad.status.as_deref(), bad.mime.as_deref()), (None, None));
    assert_eq!(unparsed.total(), 1);
    let kept: Vec<_> = unparsed.kept().map(|(f, u)| (f, u.offset)).collect();
    assert_eq!(kept, [("f.warc", bad_at)]);
    assert_eq!(
        UnparsedHead::summary(&unparsed),
        Some(format!(
            "1 record whose HTTP head did not parse: indexed without status and MIME, \
             the first at offset {bad_at}"
        ))
    );
    // With --all the request is indexed, and its head counted too.
    let mut reader = Reader::new(&data[..]).unwrap();
    let mut all = Recoveries::new();
    let opts = IndexOptions {
        all: true,
        ..IndexOptions::default()
    };
    Indexer::new("f.warc", opts)
        .index_noted(&mut reader, |_| Ok(()), |_| {}, &mut all)
        .unwrap();
    assert_eq!(all.total(), 2);
    let mut two = all.clone();
    two.add("g.warc", UnparsedHead { offset: 1 });
    assert_eq!(
        UnparsedHead::summary(&two),
        Some(format!(
            "3 records whose HTTP head did not parse: indexed without status and MIME, \
             the first in f.warc at offset {bad_at}"
        ))
    );
    assert_eq!(UnparsedHead::summary(&Recoveries::new()), None);
}

/// A whole-file gzip is refused a record or two in, not read to its end
/// first; a file gzipped record at a time is indexed whole.
#[test]
fn index_addressable_stops_where_a_file_is_found_not_record_at_a_time() {
    use std::io::Write;
    let gz = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    };
    let records: Vec<Vec<u8>> = (0..40)
        .map(|i| {
            let uri = format!("http://a.test/{i}");
            record("resource", &uri, &format!("<urn:uuid:{i}>"), "", b"x")
        })
        .collect();
    let run = |data: &[u8]| {
        let mut reader = Reader::new(data).unwrap();
        let (mut entries, mut warned) = (0u64, 0usize);
        let r = Indexer::new("f.warc.gz", IndexOptions::default())
            .index_addressable(
                &mut reader,
                "f.warc.gz",
                |_| {
                    entries += 1;
                    Ok(())
                },
                |ws| warned += ws.len(),
                &mut Recoveries::new(),
            )
            .unwrap();
        (r, entries, warned)
    };
    let (r, entries, warned) = run(&gz(&records.concat()));
    let refusal = r.unwrap_err();
    assert_eq!(refusal.name, "f.warc.gz");
    assert!(entries <= 2, "{entries} entries before the refusal");
    assert!(warned >= 1, "the warning is handed on too");
    let per_record: Vec<u8> = records.iter().flat_map(|r| gz(r)).collect();
    let (r, entries, _) = run(&per_record);
    assert_eq!(r.unwrap(), 40);
    assert_eq!(entries, 40);
}

/// Chunked indexing's carry: records indexed in two parts, the second
/// from an empty carry, give the entries of one read whenever
/// [`Indexer::continues`] says so, and it says so where pairing did not
/// cross the cut.
mod carry {
    use super::*;
    use proptest::prelude::*;

    /// A record of a little crawl: request or response (or a resource),
    /// of one of two URIs, concurrent to an earlier record or not, its
    /// request a GET or a POST.
    fn crawl(spec: &[(u8, u8, Option<u8>, bool)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (i, &(typ, uri, to, post)) in spec.iter().enumerate() {
            let uri = ["http://a.example/x", "http://a.example/y?q=1"][uri as usize % 2];
            let id = format!("<urn:uuid:{i}>");
            let to = to
                .map(|d| i.checked_sub(usize::from(d % 3) + 1))
                .and_then(|j| j.map(|j| format!("WARC-Concurrent-To: <urn:uuid:{j}>\r\n")))
                .unwrap_or_default();
            let (t, ct, block): (&str, &str, Vec<u8>) = match typ % 3 {
                0 => (
                    "request",
                    "Content-Type: application/http; msgtype=request\r\n",
                    if post {
                        b"POST /x HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\nfoo=bar".to_vec()
                    } else {
                        b"GET /x HTTP/1.1\r\nHost: a.example\r\n\r\n".to_vec()
                    },
                ),
                1 => (
                    "response",
                    "Content-Type: application/http; msgtype=response\r\n",
                    RESPONSE.to_vec(),
                ),
                _ => ("resource", "Content-Type: text/plain\r\n", b"r".to_vec()),
            };
            data.extend(record(t, uri, &id, &format!("{ct}{to}"), &block));
        }
        data
    }

    /// The entries of `reader`'s records `from..to`, from `carry`; those
    /// still held stay in it.
    fn part(
        ix: &Indexer,
        data: &[u8],
        range: std::ops::Range<usize>,
        carry: &mut Carry,
    ) -> Vec<Entry> {
        let mut reader = Reader::new(data).unwrap();
        let mut out = Vec::new();
        for n in 0..range.end {
            let rec = reader.next_record().unwrap().unwrap();
            if n < range.start {
                rec.finish().unwrap();
                continue;
            }
            ix.step(rec, carry, None, |e| {
                out.push(e);
                Ok(())
            })
            .unwrap();
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn parts_continue_as_one_read(
            spec in proptest::collection::vec((
                prop_oneof![3 => 0u8..2, 1 => Just(2u8)],
                prop_oneof![4 => Just(0u8), 1 => Just(1u8)],
                prop_oneof![3 => Just(Some(0u8)), 1 => Just(None), 1 => (1u8..3).prop_map(Some)],
                any::<bool>(),
            ), 1..12),
            cut in 0usize..12,
            post_append in any::<bool>(),
        ) {
            let cut = cut.min(spec.len());
            let data = crawl(&spec);
            let opts = IndexOptions { all: true, post_append, ..IndexOptions::default() };
            let ix = Indexer::new("f.warc", opts.clone());
            let whole = index(&data, opts);
            let mut total = Carry::default();
            let mut got = part(&ix, &data, 0..cut, &mut total);
            let mut next = Carry::default();
            let rest = part(&ix, &data, cut..spec.len(), &mut next);
            if ix.continues(&total, &next) {
                ix.flush(&mut total, |e| { got.push(e); Ok(()) }).unwrap();
                got.extend(rest);
                total.append(next);
                ix.flush(&mut total, |e| { got.push(e); Ok(()) }).unwrap();
                prop_assert_eq!(&got, &whole);
            } else {
                // Refused only where the record held pairs with the next.
                let held = total.held.as_ref().map(|h| &h.pairing);
                prop_assert!(held.zip(next.first.as_ref()).is_some_and(|(h, f)| paired(h, f)));
            }
        }
    }

    /// A crawl of GET pairs (request, then its response) cut between the
    /// two records of a pair continues: pairing them changes no entry.
    #[test]
    fn a_get_pair_cut_in_two_continues() {
        let ix = Indexer::new(
            "f.warc",
            IndexOptions {
                all: true,
                ..IndexOptions::default()
            },
        );
        // Whether the records of `spec` after the first continue the part
        // that holds the first.
        let cut_after_first = |spec: &[(u8, u8, Option<u8>, bool)]| {
            let data = crawl(spec);
            let mut total = Carry::default();
            part(&ix, &data, 0..1, &mut total);
            let mut next = Carry::default();
            part(&ix, &data, 1..spec.len(), &mut next);
            ix.continues(&total, &next)
        };
        assert!(cut_after_first(&[
            (0, 0, None, false),
            (1, 0, Some(0), false),
            (0, 1, None, false),
            (1, 1, Some(0), false),
        ]));
        // The same cut through a POST pair does not.
        assert!(!cut_after_first(&[
            (0, 0, None, true),
            (1, 0, Some(0), false),
            (0, 1, None, false),
        ]));
        // Nor one where the chunk paired the response with the next
        // request (a POST), which a read from the start gives its own
        // response.
        assert!(!cut_after_first(&[
            (0, 0, None, false),
            (1, 0, Some(0), false),
            (0, 0, Some(0), true),
            (1, 0, Some(0), false),
        ]));
    }
}
