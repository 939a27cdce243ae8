//! Replay lookups through the library: the nearest capture in time, self
//! redirects passed over, revisits resolved, and ARC and Web InfoMall files
//! replayed like WARC.

use std::path::{Path, PathBuf};

use warchest_replay::Collection;
use warchest_replay::store::Store;

fn fixture(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures")
        .join(rel);
    assert!(p.exists(), "fixture {} missing", p.display());
    p
}

fn collection(paths: &[PathBuf], db: &Path) -> Collection {
    let store = Store::open(db).unwrap();
    let r = store.sync(paths).unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    Collection {
        name: "c".into(),
        paths: paths.to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::default(),
        served: Default::default(),
    }
}

fn response(uri: &str, date: &str, http: &str) -> Vec<u8> {
    format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{}>\r\nWARC-Date: {date}\r\n\
WARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        uuid_for(uri, date),
        http.len()
    )
    .into_bytes()
}

/// An HTTP 200 response of `body` as text/plain.
fn text_ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn uuid_for(uri: &str, date: &str) -> String {
    let n = uri.len() * 7919 + date.len() * 104_729 + date.bytes().map(usize::from).sum::<usize>();
    format!("00000000-0000-4000-8000-{n:012}")
}

fn payload(coll: &Collection, url: &str, ts: &str) -> (String, Vec<u8>) {
    let cap = coll.find(url, ts, &everyone()).unwrap().expect("a capture");
    let body = coll
        .with_payload(&cap, |p| {
            let mut v = Vec::new();
            p.body.read_to_end(&mut v)?;
            Ok(v)
        })
        .unwrap();
    (cap.entry.timestamp, body)
}

#[test]
fn nearest_capture_and_self_redirects() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let mut data = Vec::new();
    data.extend(response(
        "http://a.example/",
        "2020-01-01T00:00:00Z",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\none",
    ));
    data.extend(response(
        "http://a.example/",
        "2020-06-01T00:00:00Z",
        "HTTP/1.1 301 Moved\r\nLocation: https://a.example/\r\nContent-Length: 0\r\n\r\n",
    ));
    data.extend(response(
        "https://a.example/",
        "2020-06-01T00:00:01Z",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\ntwo",
    ));
    data.extend(response(
        "http://a.example/",
        "2021-01-01T00:00:00Z",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nthree",
    ));
    std::fs::write(&warc, &data).unwrap();
    let coll = collection(&[warc], &dir.path().join("db.redb"));
    assert_eq!(coll.store.len().unwrap(), 4);
    assert_eq!(payload(&coll, "http://a.example/", "2019").1, b"one");
    assert_eq!(payload(&coll, "http://a.example/", "20200201").1, b"one");
    assert_eq!(payload(&coll, "http://a.example/", "2022").1, b"three");
    // In June the redirect to the https URL (the same url key) is nearest:
    // it is passed over for the https capture a second later.
    let (ts, body) = payload(&coll, "http://a.example/", "20200601000000");
    assert_eq!(
        (ts.as_str(), body.as_slice()),
        ("20200601000001", &b"two"[..])
    );
    assert!(
        coll.find("http://b.example/", "2020", &everyone())
            .unwrap()
            .is_none()
    );
}

#[test]
fn revisits_arc_and_infomall() {
    let dir = tempfile::tempdir().unwrap();
    let coll = collection(
        &[
            fixture("pywb/iana.warc.gz"),
            fixture("pywb/example.arc.gz"),
            fixture("tianwang/page.dat"),
        ],
        &dir.path().join("db.redb"),
    );
    // A revisit gets its original's payload, byte for byte.
    let (ts, revisit) = payload(
        &coll,
        "http://www.iana.org/_js/2013.1/jquery.js",
        "20140126200653",
    );
    assert_eq!(ts, "20140126200653");
    let (_, original) = payload(
        &coll,
        "http://www.iana.org/_js/2013.1/jquery.js",
        "20140126200625",
    );
    assert!(original.len() > 10_000);
    assert_eq!(revisit.len(), original.len());
    // ARC and Web InfoMall records replay as HTTP responses.
    let (_, arc) = payload(&coll, "http://example.com/", "2014");
    assert!(String::from_utf8_lossy(&arc).contains("Example Domain"));
    let cap = coll
        .find("http://address.6318.cn/", "2006", &everyone())
        .unwrap()
        .unwrap();
    let status = coll
        .with_payload(&cap, |p| Ok(p.head.as_ref().and_then(|h| h.status())))
        .unwrap();
    assert_eq!(status, Some(200));
}

#[test]
fn grown_files_are_indexed_on_from_where_they_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let warc = data.join("grow.warc");
    std::fs::write(
        &warc,
        response(
            "http://g.example/1",
            "2020-01-01T00:00:00Z",
            &text_ok("first"),
        ),
    )
    .unwrap();
    // Files being written and hidden files are not taken.
    std::fs::write(data.join("x.warc.open"), b"WARC/1.1\r\n").unwrap();
    std::fs::write(data.join(".hidden.warc"), b"WARC/1.1\r\n").unwrap();
    // The directory and the file in it, named twice: one source.
    let coll = collection(&[data.clone(), warc.clone()], &dir.path().join("db.redb"));
    assert_eq!(coll.store.len().unwrap(), 1);
    assert_eq!(coll.store.sources().len(), 1);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&warc)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        &response(
            "http://g.example/2",
            "2020-01-02T00:00:00Z",
            &text_ok("second"),
        ),
    )
    .unwrap();
    drop(f);
    // mtime may not move within the same second: the length does.
    let r = coll.store.sync(std::slice::from_ref(&data)).unwrap();
    assert_eq!((r.new_sources, r.updated_sources, r.entries), (0, 1, 1));
    assert_eq!(coll.store.len().unwrap(), 2);
    assert_eq!(coll.store.sources()[0].entries, 2);
    assert_eq!(payload(&coll, "http://g.example/2", "2020").1, b"second");
    // Nothing new: nothing read.
    let r = coll.store.sync(std::slice::from_ref(&data)).unwrap();
    assert_eq!((r.new_sources, r.updated_sources, r.entries), (0, 0, 0));
}

/// A file rewritten other than by growing (here: a record taken out, the
/// others moved) is indexed again from its start, and the captures its
/// new index does not give (at offsets the file no longer has) deleted.
#[test]
fn a_file_rewritten_keeps_no_capture_of_its_old_version() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let jan = response("http://r.test/", "2024-01-01T00:00:00Z", &text_ok("jan"));
    let jun = response("http://r.test/", "2024-06-01T00:00:00Z", &text_ok("jun"));
    let jul = response("http://r.test/", "2024-07-01T00:00:00Z", &text_ok("jul"));
    std::fs::write(&warc, [jan.clone(), jun, jul.clone()].concat()).unwrap();
    let paths = [warc.clone()];
    let coll = collection(&paths, &dir.path().join("db.redb"));
    assert_eq!(coll.store.len().unwrap(), 3);
    std::fs::write(&warc, [jul, jan].concat()).unwrap();
    let r = coll.store.sync(&paths).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!((r.updated_sources, r.entries), (1, 2), "{r:?}");
    assert_eq!(
        coll.store.len().unwrap(),
        2,
        "the old version's captures deleted"
    );
    assert_eq!(payload(&coll, "http://r.test/", "20240101").1, b"jan");
    assert_eq!(payload(&coll, "http://r.test/", "20240701").1, b"jul");
    // June is gone: the nearest capture is another.
    let (ts, _) = payload(&coll, "http://r.test/", "20240601");
    assert_ne!(ts, "20240601000000");
}

#[test]
fn fuzzy_matching_finds_the_nearest_capture_of_the_same_resource() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("f.warc");
    let mut data = Vec::new();
    for (uri, date, body) in [
        (
            "http://f.example/api?id=1&_=1577836800000",
            "2020-01-01T00:00:00Z",
            "old",
        ),
        (
            "http://f.example/api?_=1590969600000&id=1",
            "2020-06-01T00:00:00Z",
            "new",
        ),
        (
            "http://f.example/api?id=2&_=1590969600000",
            "2020-06-01T00:00:00Z",
            "two",
        ),
        (
            "http://f.example/p;jsessionid=A1?x=1",
            "2020-06-01T00:00:00Z",
            "sess",
        ),
    ] {
        data.extend(response(
            uri,
            date,
            &format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        ));
    }
    std::fs::write(&warc, &data).unwrap();
    let mut coll = collection(&[warc], &dir.path().join("db.redb"));
    let body = |c: &Collection, u: &str, ts: &str| {
        c.find(u, ts, &everyone()).unwrap().map(|cap| cap.entry.url)
    };
    // The exact URL first; else the nearest in time of the same resource.
    assert_eq!(
        body(&coll, "http://f.example/api?id=1&_=1577836800000", "2021")
            .unwrap()
            .as_deref(),
        Some("http://f.example/api?id=1&_=1577836800000")
    );
    assert_eq!(
        body(&coll, "http://f.example/api?id=1&_=1700000000000", "2021")
            .unwrap()
            .as_deref(),
        Some("http://f.example/api?_=1590969600000&id=1")
    );
    assert_eq!(
        body(&coll, "http://f.example/api?id=1&_=1", "2019")
            .unwrap()
            .as_deref(),
        Some("http://f.example/api?id=1&_=1577836800000")
    );
    assert_eq!(
        body(&coll, "http://f.example/api?id=2", "2019")
            .unwrap()
            .as_deref(),
        Some("http://f.example/api?id=2&_=1590969600000")
    );
    assert!(body(&coll, "http://f.example/api?id=3&_=1", "2020").is_none());
    // Only the same path: not the paths below it.
    assert!(body(&coll, "http://f.example/?_=1", "2020").is_none());
    assert!(body(&coll, "http://f.example/ap?id=1&_=1", "2020").is_none());
    assert_eq!(
        body(&coll, "http://f.example/p;jsessionid=ZZ?x=1", "2020")
            .unwrap()
            .as_deref(),
        Some("http://f.example/p;jsessionid=A1?x=1")
    );
    // Off: only exact URLs.
    coll.fuzzy = warchest_replay::fuzzy::FuzzyRules::none();
    assert!(body(&coll, "http://f.example/api?id=1&_=1700000000000", "2021").is_none());
}

/// A log written by `tracing` while `f` runs on this thread.
fn logged<R>(f: impl FnOnce() -> R) -> (R, String) {
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let w = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || w.clone())
        .finish();
    let r = tracing::subscriber::with_default(sub, f);
    let text = String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned();
    (r, text)
}

/// A response whose block holds no HTTP head is indexed (without status
/// and MIME) and said, one line for its file, as `warchest index` says it.
#[test]
fn a_record_whose_http_head_does_not_parse_is_said_when_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("odd.warc");
    let http = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    let mut bytes = response("http://a.test/", "2024-01-01T00:00:00Z", http);
    let odd_at = bytes.len();
    bytes.extend(response(
        "http://a.test/odd",
        "2024-01-01T00:00:01Z",
        "no head here",
    ));
    std::fs::write(&warc, &bytes).unwrap();
    let store = Store::open(dir.path().join("db")).unwrap();
    let report = store.sync(std::slice::from_ref(&warc)).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.entries, 2);
    assert_eq!(
        report.warnings,
        [format!(
            "{}: 1 record whose HTTP head did not parse: indexed without status and MIME, the \
             first at offset {odd_at}",
            warc.display()
        )]
    );
}

/// A file with damage the lenient reader recovers from: a record whose
/// WARC header lines end in bare LFs, and a last record cut short. Its
/// index says so (one line in the sync report, counted as the scan went),
/// and serving either record logs a warning with the source, offset and
/// kinds once the payload was handed over, and counts it in the
/// collection's `served`; the clean record logs and counts nothing.
#[test]
fn damage_is_reported_when_indexed_and_when_served() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("damaged.warc");
    let http = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    let mut bytes = response("http://a.test/", "2024-01-01T00:00:00Z", http);
    let bare_at = bytes.len();
    let bare =
        String::from_utf8(response("http://a.test/b", "2024-01-01T00:00:01Z", http)).unwrap();
    let (head, body) = bare.split_once("\r\n\r\n").unwrap();
    bytes.extend_from_slice(format!("{}\n\n{body}", head.replace("\r\n", "\n")).as_bytes());
    let cut_at = bytes.len();
    let cut = response("http://a.test/c", "2024-01-01T00:00:02Z", http);
    bytes.extend_from_slice(&cut[..cut.len() - 8]);
    std::fs::write(&warc, &bytes).unwrap();

    let store = Store::open(dir.path().join("db")).unwrap();
    let report = store.sync(std::slice::from_ref(&warc)).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    let w = &report.warnings[0];
    assert!(w.contains("damaged.warc: "), "{w}");
    assert!(w.contains("lenient recoveries"), "{w}");
    assert!(w.contains("bare-lf"), "{w}");
    assert!(w.contains("truncated-record"), "{w}");
    assert!(w.contains("the first at offset "), "{w}");
    // Indexed already: a second pass reads nothing, says nothing.
    assert!(
        store
            .sync(std::slice::from_ref(&warc))
            .unwrap()
            .warnings
            .is_empty()
    );
    let coll = Collection {
        name: "c".into(),
        paths: vec![warc.clone()],
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::default(),
        served: Default::default(),
    };

    let ((_, body), log) = logged(|| payload(&coll, "http://a.test/", "20240101000000"));
    assert_eq!(body, b"hello");
    assert!(log.is_empty(), "{log}");
    assert_eq!(coll.served.damaged(), 0);

    let ((_, body), log) = logged(|| payload(&coll, "http://a.test/b", "20240101000001"));
    assert_eq!(body, b"hello");
    assert!(log.contains("record served damaged"), "{log}");
    assert!(log.contains(&format!("offset={bare_at}")), "{log}");
    assert!(log.contains("bare-lf"), "{log}");
    assert!(log.contains("damaged.warc"), "{log}");
    assert_eq!(coll.served.damaged(), 1);

    let ((_, body), log) = logged(|| payload(&coll, "http://a.test/c", "20240101000002"));
    assert_eq!(body, b"hello"[..body.len()]);
    assert!(log.contains("record served damaged"), "{log}");
    assert!(log.contains(&format!("offset={cut_at}")), "{log}");
    assert!(log.contains("truncated: the record ends"), "{log}");
    // The sentence record_damage gives, as the record page says it too.
    assert!(log.contains("block bytes present)"), "{log}");
    let src = coll.store.sources()[0].clone();
    let mut reader = src.reader_at(cut_at as u64).unwrap();
    let end = {
        let mut rec = reader.next_record().unwrap().expect("the cut record");
        std::io::copy(&mut rec.payload(false).unwrap(), &mut std::io::sink()).unwrap();
        rec.finish()
    };
    let said = warchest_replay::record_damage(&src.name, Some(&end), &mut reader);
    assert_eq!(said.len(), 2, "{said:?}");
    for d in &said {
        assert!(log.contains(d.as_str()), "{d} not in {log}");
    }
    // Counted as served, not per record: served again, counted again.
    assert_eq!(coll.served.damaged(), 2);
    payload(&coll, "http://a.test/c", "20240101000002");
    assert_eq!(coll.served.damaged(), 3);
    assert_eq!(coll.served.undecodable(), 0);
}

/// A CDXJ index with damage: a line that is not CDXJ, one without an
/// offset, a line of a file not served, and a blank and a `!` header line
/// (neither). The damage is counted apart from the lines of other files,
/// its line numbers named, and said as a warning naming the index.
#[test]
fn cdxj_lines_that_do_not_parse_are_damage_told_from_unknown_files() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let http = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
    std::fs::write(
        &warc,
        response("http://a.test/", "2024-01-01T00:00:00Z", http),
    )
    .unwrap();
    let line = |file: &str, offset: &str| {
        format!(
            "test,a)/ 20240101000000 {{\"url\": \"http://a.test/\", \"mime\": \"text/plain\", \
             \"status\": \"200\", \"filename\": \"{file}\"{offset}}}\n"
        )
    };
    let cdxj = dir.path().join("index.cdxj");
    let text = [
        "!OpenWayback-CDXJ 1.0\n".to_string(),
        line("a.warc", ", \"offset\": \"0\""),
        "this is not an index line\n".into(),
        line("elsewhere.warc.gz", ", \"offset\": \"0\""),
        "\n".into(),
        line("a.warc", ""),
        line("elsewhere.warc.gz", ", \"offset\": \"9\""),
    ]
    .concat();
    std::fs::write(&cdxj, text).unwrap();
    let store = Store::open(dir.path().join("db")).unwrap();
    let (load, log) = logged(|| store.load_cdxj(&cdxj, std::slice::from_ref(&warc)).unwrap());
    assert_eq!(load.loaded, 1, "{load:?}");
    assert_eq!(load.unknown_file, 2, "{load:?}");
    assert_eq!(load.unknown_files, ["elsewhere.warc.gz"], "{load:?}");
    assert_eq!(load.unparsable, 2, "{load:?}");
    assert_eq!(load.unparsable_lines, [3, 6], "{load:?}");
    let said = load.damage().expect("damage said");
    assert!(said.contains("index.cdxj"), "{said}");
    assert!(said.contains("2 lines are not CDXJ"), "{said}");
    assert!(said.contains("lines 3, 6"), "{said}");
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains(&said), "{log}");
    assert_eq!(store.len().unwrap(), 1);
    // A whole index says nothing.
    let clean = dir.path().join("clean.cdxj");
    std::fs::write(&clean, line("a.warc", ", \"offset\": \"0\"")).unwrap();
    let (load, log) = logged(|| {
        store
            .load_cdxj(&clean, std::slice::from_ref(&warc))
            .unwrap()
    });
    assert_eq!((load.loaded, load.unparsable, load.unknown_file), (1, 0, 0));
    assert!(load.damage().is_none());
    assert!(!log.contains("WARN"), "{log}");
}

use redb::ReadableTable as _;

const SOURCES: redb::TableDefinition<u32, &[u8]> = redb::TableDefinition::new("sources");
const CAPTURES: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("captures");

/// Overwrites entries of the store at `db` (closed) with bytes that are
/// not what they stand for.
fn corrupt(db: &Path, f: impl FnOnce(&redb::WriteTransaction)) {
    let d = redb::Database::create(db).unwrap();
    let txn = d.begin_write().unwrap();
    f(&txn);
    txn.commit().unwrap();
}

/// A source entry of the index cache that does not decode is counted and
/// said when the store is opened; its captures are dropped with it (so
/// that a new source given its id is not mistaken for it), and the next
/// sync indexes its file again: nothing it stood for is lost.
#[test]
fn an_unreadable_source_entry_is_said_and_its_file_indexed_again() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.warc");
    let b = dir.path().join("b.warc");
    std::fs::write(
        &a,
        response("http://a.test/", "2024-01-01T00:00:00Z", &text_ok("aa")),
    )
    .unwrap();
    let mut bytes = response("http://b.test/", "2024-01-01T00:00:00Z", &text_ok("bb"));
    bytes.extend(response(
        "http://b.test/2",
        "2024-01-01T00:00:00Z",
        &text_ok("b2"),
    ));
    std::fs::write(&b, bytes).unwrap();
    let db = dir.path().join("db.redb");
    let paths = [a.clone(), b.clone()];
    drop(collection(&paths, &db));
    corrupt(&db, |txn| {
        let mut t = txn.open_table(SOURCES).unwrap();
        t.insert(1, b"{not a source".as_slice()).unwrap();
    });

    let (store, log) = logged(|| Store::open(&db).unwrap());
    let d = store.cache_damage();
    assert_eq!(
        (d.sources, d.dropped_captures, d.total()),
        (1, 2, 1),
        "{d:?}"
    );
    assert!(d.examples[0].contains("source 1"), "{d:?}");
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains("the entry of source 1 is unreadable"), "{log}");
    assert_eq!(store.sources().len(), 1);
    assert_eq!(store.len().unwrap(), 1, "b.warc's captures dropped");

    let r = store.sync(&paths).unwrap();
    assert_eq!((r.new_sources, r.entries), (1, 2), "{r:?}");
    let coll = Collection {
        name: "c".into(),
        paths: paths.to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::default(),
        served: Default::default(),
    };
    assert_eq!(payload(&coll, "http://b.test/2", "2024").1, b"b2");
    assert_eq!(payload(&coll, "http://a.test/", "2024").1, b"aa");
}

/// A capture entry that does not decode no longer ends a lookup: it is
/// passed over (the capture next in time is found), counted once however
/// often it is met, said, and its source is marked to be indexed again,
/// which the next sync does (across a restart too): the capture is back.
#[test]
fn an_unreadable_capture_entry_is_passed_over_counted_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let mut bytes = response("http://a.test/", "2024-01-01T00:00:00Z", &text_ok("old"));
    bytes.extend(response(
        "http://a.test/",
        "2024-06-01T00:00:00Z",
        &text_ok("new"),
    ));
    bytes.extend(response(
        "http://a.test/",
        "2024-07-01T00:00:00Z",
        &text_ok("jul"),
    ));
    std::fs::write(&warc, bytes).unwrap();
    let db = dir.path().join("db.redb");
    let paths = [warc.clone()];
    drop(collection(&paths, &db));
    // The June capture's entry: its key kept, its value not JSON.
    corrupt(&db, |txn| {
        let mut t = txn.open_table(CAPTURES).unwrap();
        let key = {
            let mut keys = t.iter().unwrap().map(|i| i.unwrap().0.value().to_string());
            keys.find(|k| k.contains(" 20240601"))
                .expect("the June capture")
        };
        t.insert(key.as_str(), b"\xff\x00".as_slice()).unwrap();
    });

    let store = Store::open(&db).unwrap();
    assert_eq!(store.cache_damage().total(), 0, "found by lookups");
    let coll = Collection {
        name: "c".into(),
        paths: paths.to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::none(),
        served: Default::default(),
    };
    let (found, log) = logged(|| {
        coll.find("http://a.test/", "20240601", &everyone())
            .unwrap()
    });
    // Not taken for the end of the later captures: July is nearer than
    // January.
    assert_eq!(
        found.expect("the July capture").entry.timestamp,
        "20240701000000"
    );
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains("is unreadable"), "{log}");
    assert!(
        log.contains("a.warc indexed again at the next sync"),
        "{log}"
    );
    // Met again: not counted again.
    coll.find("http://a.test/", "2025", &everyone()).unwrap();
    let mut n = 0;
    coll.store
        .query(
            &warchest_replay::store::Query {
                range: warchest_replay::store::KeyRange::raw(String::new()),
                from: None,
                to: None,
                limit: 100,
                reverse: false,
                skip: 0,
                resume: None,
            },
            |_| {
                n += 1;
                true
            },
        )
        .unwrap();
    assert_eq!(n, 2, "the unreadable entry is not a capture");
    let d = coll.store.cache_damage();
    assert_eq!((d.captures, d.total()), (1, 1), "{d:?}");
    assert!(coll.store.sources()[0].stale);

    // The mark outlives the process; the sync rebuilds the source.
    let Collection { store, .. } = coll;
    drop(store);
    let store = Store::open(&db).unwrap();
    assert!(store.sources()[0].stale);
    let r = store.sync(&paths).unwrap();
    assert_eq!((r.updated_sources, r.entries), (1, 3), "{r:?}");
    assert!(!store.sources()[0].stale);
    assert_eq!(store.sources()[0].entries, 3);
    let coll = Collection {
        name: "c".into(),
        paths: paths.to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::none(),
        served: Default::default(),
    };
    assert_eq!(payload(&coll, "http://a.test/", "20240601").1, b"new");
    assert_eq!(coll.store.cache_damage().total(), 0);
}

/// A source marked stale whose file then fails to index keeps the
/// captures it had (lookups still answer from them) and its mark, and
/// the failure is in the sync's report (not counted as a changed file,
/// at every sync that tries again); once its file indexes again, the
/// captures its new index no longer gives are deleted, and only those.
#[cfg(unix)]
#[test]
fn a_failed_re_index_keeps_the_old_captures_and_the_mark() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let jan = response("http://a.test/", "2024-01-01T00:00:00Z", &text_ok("jan"));
    let jun = response("http://a.test/", "2024-06-01T00:00:00Z", &text_ok("jun"));
    let jul = response("http://a.test/", "2024-07-01T00:00:00Z", &text_ok("jul"));
    std::fs::write(&warc, [jan.clone(), jun, jul.clone()].concat()).unwrap();
    let db = dir.path().join("db.redb");
    let paths = [warc.clone()];
    drop(collection(&paths, &db));
    corrupt(&db, |txn| {
        let mut t = txn.open_table(CAPTURES).unwrap();
        let key = {
            let mut keys = t.iter().unwrap().map(|i| i.unwrap().0.value().to_string());
            keys.find(|k| k.contains(" 20240601"))
                .expect("the June capture")
        };
        t.insert(key.as_str(), b"\xff\x00".as_slice()).unwrap();
    });
    let store = Store::open(&db).unwrap();
    let coll = Collection {
        name: "c".into(),
        paths: paths.to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::none(),
        served: Default::default(),
    };
    coll.find("http://a.test/", "20240601", &everyone())
        .unwrap();
    assert!(coll.store.sources()[0].stale);

    // The file cannot be read now (the reader recovers from any bytes; a
    // pipe cannot be read at an offset): indexing it again fails. Held
    // open for writing too, so that opening it to read does not wait.
    std::fs::remove_file(&warc).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&warc)
        .status()
        .unwrap();
    assert!(made.success());
    let pipe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&warc)
        .unwrap();
    let r = coll.store.sync(&paths).unwrap();
    // A failure, not a changed file (serve's poll said "picked up 0 new
    // and 1 changed files" beside the failure, at every poll).
    assert_eq!(
        (r.new_sources, r.updated_sources, r.entries),
        (0, 0, 0),
        "{r:?}"
    );
    assert_eq!(r.failures.len(), 1, "{r:?}");
    assert!(r.failures[0].contains("a.warc"), "{r:?}");
    assert!(r.failures[0].contains("captures it had are kept"), "{r:?}");
    assert_eq!(coll.store.len().unwrap(), 3, "nothing deleted");
    let s = &coll.store.sources()[0];
    assert!(s.stale, "still marked: {s:?}");
    assert_eq!(s.entries, 3, "as it was: {s:?}");
    let found = coll
        .find("http://a.test/", "20240101", &everyone())
        .unwrap();
    assert_eq!(found.expect("January").entry.timestamp, "20240101000000");
    let found = coll
        .find("http://a.test/", "20240801", &everyone())
        .unwrap();
    assert_eq!(found.expect("July").entry.timestamp, "20240701000000");
    // Tried again, and said again, at the next sync.
    let r = coll.store.sync(&paths).unwrap();
    assert_eq!((r.updated_sources, r.failures.len()), (0, 1), "{r:?}");

    // Across a restart too; then the file indexes: June is gone from it.
    let Collection { store, .. } = coll;
    drop(store);
    let store = Store::open(&db).unwrap();
    assert!(store.sources()[0].stale);
    drop(pipe);
    std::fs::remove_file(&warc).unwrap();
    std::fs::write(&warc, [jan, jul].concat()).unwrap();
    let r = store.sync(&paths).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!((r.updated_sources, r.entries), (1, 2), "{r:?}");
    assert!(!store.sources()[0].stale);
    assert_eq!(
        store.len().unwrap(),
        2,
        "June's and July's old entries deleted"
    );
    let coll = Collection {
        name: "c".into(),
        paths: paths.to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::none(),
        served: Default::default(),
    };
    assert_eq!(payload(&coll, "http://a.test/", "20240601").1, b"jul");
    assert_eq!(payload(&coll, "http://a.test/", "20240101").1, b"jan");
    assert_eq!(
        coll.store.cache_damage().total(),
        0,
        "the entry written again"
    );
}

/// A member of a WACZ read by URL that a lookup marked stale is indexed
/// again and counted as a changed source, never a new one, whichever way
/// it is read: from the WACZ's own index, or scanned when that index
/// cannot be used (where it used to be counted as new). The counts agree
/// with a local file's.
#[cfg(feature = "remote")]
#[test]
fn a_stale_member_of_a_wacz_by_url_is_counted_as_changed() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let mut bytes = response("http://a.test/", "2024-01-01T00:00:00Z", &text_ok("jan"));
    bytes.extend(response(
        "http://a.test/",
        "2024-06-01T00:00:00Z",
        &text_ok("jun"),
    ));
    bytes.extend(response(
        "http://a.test/",
        "2024-07-01T00:00:00Z",
        &text_ok("jul"),
    ));
    std::fs::write(&warc, bytes).unwrap();
    let good = dir.path().join("good.wacz");
    warchest_wacz::create(&[&warc], &good, &Default::default()).unwrap();
    let good = std::fs::read(&good).unwrap();
    // The same WACZ, its index's deflated bytes damaged: not used, its
    // archive file scanned.
    let ix = warchest_wacz::entries_of(std::io::Cursor::new(&good), Path::new("good.wacz"))
        .unwrap()
        .into_iter()
        .find(|e| e.name == "indexes/index.cdxj")
        .expect("an index");
    assert!(!ix.stored, "deflated");
    let mut bad = good.clone();
    let mid = (ix.data_start + ix.compressed_size / 2) as usize;
    for b in &mut bad[mid..mid + 4] {
        *b ^= 0xff;
    }
    let srv = crate::servers::RangeServer::serving(
        &[("good.wacz", good.as_slice()), ("bad.wacz", bad.as_slice())],
        0.0,
    );
    let urls = [
        PathBuf::from(srv.url("good.wacz")),
        PathBuf::from(srv.url("bad.wacz")),
    ];
    let db = dir.path().join("db.redb");
    let store = Store::open(&db).unwrap();
    let r = store.sync(&urls).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!(
        (
            r.new_sources,
            r.updated_sources,
            r.from_wacz_index,
            r.entries
        ),
        (2, 0, 1, 6),
        "{r:?}"
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("bad.wacz") && w.contains("scanned")),
        "{r:?}"
    );
    drop(store);
    corrupt(&db, |txn| {
        let mut t = txn.open_table(CAPTURES).unwrap();
        let keys: Vec<String> = t
            .iter()
            .unwrap()
            .map(|i| i.unwrap().0.value().to_string())
            .filter(|k| k.contains(" 20240601"))
            .collect();
        assert_eq!(keys.len(), 2, "June, of each WACZ");
        for k in keys {
            t.insert(k.as_str(), b"\xff\x00".as_slice()).unwrap();
        }
    });
    let store = Store::open(&db).unwrap();
    let mut n = 0;
    store
        .query(
            &warchest_replay::store::Query {
                range: warchest_replay::store::KeyRange::raw(String::new()),
                from: None,
                to: None,
                limit: 100,
                reverse: false,
                skip: 0,
                resume: None,
            },
            |_| {
                n += 1;
                true
            },
        )
        .unwrap();
    assert_eq!(n, 4);
    assert!(
        store.sources().iter().all(|s| s.stale),
        "{:?}",
        store.sources()
    );

    let r = store.sync(&urls).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!(
        (
            r.new_sources,
            r.updated_sources,
            r.from_wacz_index,
            r.entries
        ),
        (0, 2, 1, 6),
        "{r:?}"
    );
    assert!(
        store.sources().iter().all(|s| !s.stale),
        "{:?}",
        store.sources()
    );
    assert_eq!(store.sources().len(), 2);
    assert_eq!(store.len().unwrap(), 6);
}

/// A record of type `ty` at `uri` whose WARC-Payload-Digest is `digest`,
/// its block `http` (a revisit's: the HTTP head only).
fn with_digest(ty: &str, uri: &str, date: &str, digest: &str, http: &str) -> Vec<u8> {
    let profile = if ty == "revisit" {
        "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\n"
    } else {
        ""
    };
    format!(
        "WARC/1.1\r\nWARC-Type: {ty}\r\nWARC-Record-ID: <urn:uuid:{}>\r\nWARC-Date: {date}\r\n\
WARC-Target-URI: {uri}\r\n{profile}WARC-Payload-Digest: {digest}\r\n\
Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        uuid_for(uri, date),
        http.len()
    )
    .into_bytes()
}

/// Two files holding the same payload (one digest) under two URLs, the
/// second with a revisit of a third URL naming that digest only (no
/// WARC-Refers-To): it is resolved by the digest alone. Returns the two
/// files.
fn two_copies_of_one_payload(dir: &Path) -> [PathBuf; 2] {
    let digest = "sha1:2JMP4CVSAE4FWVP3VO7UHL6ELBWXHEGK";
    let body = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nsame";
    let a = dir.join("a.warc");
    let b = dir.join("b.warc");
    std::fs::write(
        &a,
        with_digest(
            "response",
            "http://a.test/",
            "2024-01-01T00:00:00Z",
            digest,
            body,
        ),
    )
    .unwrap();
    let mut bytes = with_digest(
        "response",
        "http://b.test/",
        "2024-02-01T00:00:00Z",
        digest,
        body,
    );
    bytes.extend(with_digest(
        "revisit",
        "http://c.test/",
        "2024-03-01T00:00:00Z",
        digest,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\n",
    ));
    std::fs::write(&b, bytes).unwrap();
    [a, b]
}

/// The file first indexed with a payload digest is removed; a sync of the
/// other file alone (which keeps the removed one's source: it is in no
/// directory synced) and a revisit
/// whose original is found by that digest alone: it is resolved to the
/// copy in the file still there.
#[test]
fn a_revisit_resolves_to_the_copy_still_there_when_a_file_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let paths = two_copies_of_one_payload(dir.path());
    let db = dir.path().join("db.redb");
    let coll = collection(&paths, &db);
    assert_eq!(payload(&coll, "http://c.test/", "2024").1, b"same");
    std::fs::remove_file(&paths[0]).unwrap();
    let r = coll.store.sync(&paths[1..]).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!(payload(&coll, "http://c.test/", "2024").1, b"same");
}

/// A file removed from a directory served is dropped at the next sync,
/// with its captures (named and counted), so that no lookup lists a
/// capture that cannot be replayed; a revisit its file held an original
/// of resolves to the copy left. A file named on its own that is gone is
/// a failure, its captures kept.
#[test]
fn a_file_removed_from_a_directory_is_dropped_with_its_captures() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let [a, b] = two_copies_of_one_payload(&data);
    let db = dir.path().join("db.redb");
    let coll = collection(std::slice::from_ref(&data), &db);
    assert_eq!(coll.store.len().unwrap(), 3);
    std::fs::remove_file(&a).unwrap();
    let r = coll.store.sync(std::slice::from_ref(&data)).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!(r.removed.len(), 1, "{r:?}");
    assert!(r.removed[0].ends_with("a.warc"), "{r:?}");
    assert_eq!(r.removed_entries, 1, "{r:?}");
    assert_eq!(coll.store.len().unwrap(), 2);
    let sources = coll.store.sources();
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert!(sources[0].name.ends_with("b.warc"), "{sources:?}");
    assert!(
        coll.find("http://a.test/", "2024", &everyone())
            .unwrap()
            .is_none()
    );
    assert_eq!(payload(&coll, "http://c.test/", "2024").1, b"same");
    // Nothing more to drop at the next sync.
    let r = coll.store.sync(std::slice::from_ref(&data)).unwrap();
    assert!(r.removed.is_empty() && r.removed_entries == 0, "{r:?}");
    // b.warc named on its own, then gone: a failure, its captures kept.
    let r = coll.store.sync(std::slice::from_ref(&b)).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    std::fs::remove_file(&b).unwrap();
    let r = coll.store.sync(std::slice::from_ref(&b)).unwrap();
    assert_eq!(r.failures.len(), 1, "{r:?}");
    assert!(r.removed.is_empty(), "{r:?}");
    assert_eq!(coll.store.len().unwrap(), 2);
    // A directory with no archive file left (an empty mount point looks
    // the same): a failure naming it, the captures kept.
    let r = coll.store.sync(std::slice::from_ref(&data)).unwrap();
    assert_eq!(r.failures.len(), 1, "{r:?}");
    assert!(r.failures[0].contains("is the directory mounted"), "{r:?}");
    assert!(r.removed.is_empty(), "{r:?}");
    assert_eq!(coll.store.len().unwrap(), 2);
    // Across a restart, the store has forgotten a.warc.
    let Collection { store, .. } = coll;
    drop(store);
    let store = Store::open(&db).unwrap();
    assert_eq!(store.sources().len(), 1);
    assert_eq!(store.len().unwrap(), 2);
}

/// A dropped source's id is never given to another file, across a
/// restart too (links name sources by id); a file gone from a directory
/// with no archive file left (a volume under the directory served,
/// unmounted) keeps its captures, a failure saying so.
#[test]
fn a_dropped_source_s_id_is_not_given_again() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let sub = data.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let [_, b] = two_one_record_files(&data);
    let db = dir.path().join("db.redb");
    let coll = collection(std::slice::from_ref(&data), &db);
    let id_of = |store: &Store, name: &str| {
        store
            .sources()
            .iter()
            .find(|s| s.name.ends_with(name))
            .map(|s| s.id)
    };
    let b_id = id_of(&coll.store, "b.warc").unwrap();
    assert!(
        b_id > id_of(&coll.store, "a.warc").unwrap(),
        "b has the largest id"
    );
    std::fs::remove_file(&b).unwrap();
    let r = coll.store.sync(std::slice::from_ref(&data)).unwrap();
    assert_eq!(r.removed.len(), 1, "{r:?}");
    let c = data.join("c.warc");
    std::fs::write(
        &c,
        response("http://c.test/", "2024-01-01T00:00:00Z", &text_ok("c")),
    )
    .unwrap();
    coll.store.sync(std::slice::from_ref(&data)).unwrap();
    let c_id = id_of(&coll.store, "c.warc").unwrap();
    assert!(c_id > b_id, "{c_id} {b_id}");
    // Across a restart: the store keeps the least id a new one may get.
    let Collection { store, .. } = coll;
    drop(store);
    std::fs::remove_file(&c).unwrap();
    let store = Store::open(&db).unwrap();
    let r = store.sync(std::slice::from_ref(&data)).unwrap();
    assert_eq!(r.removed.len(), 1, "{r:?}");
    let d = data.join("d.warc");
    std::fs::write(
        &d,
        response("http://d.test/", "2024-01-01T00:00:00Z", &text_ok("d")),
    )
    .unwrap();
    store.sync(std::slice::from_ref(&data)).unwrap();
    assert!(id_of(&store, "d.warc").unwrap() > c_id);
    // A subdirectory's only file gone: kept, the failure naming it.
    let e = sub.join("e.warc");
    std::fs::write(
        &e,
        response("http://e.test/", "2024-01-01T00:00:00Z", &text_ok("e")),
    )
    .unwrap();
    store.sync(std::slice::from_ref(&data)).unwrap();
    let before = store.len().unwrap();
    std::fs::remove_file(&e).unwrap();
    let r = store.sync(std::slice::from_ref(&data)).unwrap();
    assert!(r.removed.is_empty(), "{r:?}");
    assert_eq!(r.failures.len(), 1, "{r:?}");
    assert!(
        r.failures[0].contains("sub: no archive file found"),
        "{r:?}"
    );
    assert_eq!(store.len().unwrap(), before);
}

/// a.warc and b.warc in `dir`, each one response (of http://a.test/ and
/// http://b.test/, bodies "a" and "b").
fn two_one_record_files(dir: &Path) -> [PathBuf; 2] {
    ["a", "b"].map(|n| {
        let p = dir.join(format!("{n}.warc"));
        let uri = format!("http://{n}.test/");
        std::fs::write(&p, response(&uri, "2024-01-01T00:00:00Z", &text_ok(n))).unwrap();
        p
    })
}

/// A WACZ replaced by one that no longer holds one of its archive files:
/// that member is dropped with its captures at the next sync (named and
/// counted), the member still there indexed again.
#[test]
fn a_member_a_replaced_wacz_no_longer_holds_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b] = two_one_record_files(dir.path());
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let wacz = data.join("c.wacz");
    warchest_wacz::create(&[&a, &b], &wacz, &Default::default()).unwrap();
    let coll = collection(std::slice::from_ref(&data), &dir.path().join("db.redb"));
    assert_eq!(coll.store.sources().len(), 2);
    assert!(
        coll.find("http://b.test/", "2024", &everyone())
            .unwrap()
            .is_some()
    );
    std::fs::remove_file(&wacz).unwrap();
    warchest_wacz::create(&[&a], &wacz, &Default::default()).unwrap();
    // A modification time of its own (the one before may be the same
    // second).
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&wacz)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let r = coll.store.sync(std::slice::from_ref(&data)).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!(r.removed.len(), 1, "{r:?}");
    assert!(r.removed[0].ends_with("#archive/b.warc"), "{r:?}");
    assert_eq!(r.removed_entries, 1, "{r:?}");
    assert_eq!(coll.store.sources().len(), 1);
    assert_eq!(coll.store.len().unwrap(), 1);
    assert!(
        coll.find("http://b.test/", "2024", &everyone())
            .unwrap()
            .is_none()
    );
    assert_eq!(payload(&coll, "http://a.test/", "2024").1, b"a");
}

/// A WACZ by URL replaced by one that no longer holds one of its archive
/// files: that member is dropped at the next sync, as for a local WACZ.
#[cfg(feature = "remote")]
#[test]
fn a_member_a_replaced_wacz_by_url_no_longer_holds_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b] = two_one_record_files(dir.path());
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    let wacz = served.join("c.wacz");
    warchest_wacz::create(&[&a, &b], &wacz, &Default::default()).unwrap();
    let srv = crate::servers::RangeServer::start(&served, 5.0);
    let url = PathBuf::from(srv.url("c.wacz"));
    let coll = collection(std::slice::from_ref(&url), &dir.path().join("db.redb"));
    assert_eq!(coll.store.sources().len(), 2);
    std::fs::remove_file(&wacz).unwrap();
    warchest_wacz::create(&[&a], &wacz, &Default::default()).unwrap();
    let r = coll.store.sync(std::slice::from_ref(&url)).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!(r.removed.len(), 1, "{r:?}");
    assert!(r.removed[0].ends_with("c.wacz#archive/b.warc"), "{r:?}");
    assert_eq!(r.removed_entries, 1, "{r:?}");
    assert_eq!(coll.store.sources().len(), 1);
    assert!(
        coll.find("http://b.test/", "2024", &everyone())
            .unwrap()
            .is_none()
    );
    assert_eq!(payload(&coll, "http://a.test/", "2024").1, b"a");
}

/// ZIP's CRC-32 (IEEE), bit by bit.
#[cfg(feature = "remote")]
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// An object by URL replaced by another of the same size (its ETag
/// another) is indexed again at the next sync, its old captures gone; a
/// WACZ by URL replaced by one holding an archive file of the same size at
/// the same place, told by the member's CRC-32, too. Unchanged, neither is
/// read again.
#[cfg(feature = "remote")]
#[test]
fn objects_by_url_replaced_by_others_of_the_same_size_are_indexed_again() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    let warc = served.join("a.warc");
    let record = |body: &str| response("http://r.test/", "2024-01-01T00:00:00Z", &text_ok(body));
    std::fs::write(&warc, record("jan")).unwrap();
    crate::servers::set_mtime(&warc, 1_700_000_000);
    // The WACZ's archive file, written apart.
    let member = dir.path().join("m.warc");
    let page = |body: &str| response("http://w.test/", "2024-01-01T00:00:00Z", &text_ok(body));
    std::fs::write(&member, page("one")).unwrap();
    let wacz = served.join("c.wacz");
    warchest_wacz::create(&[&member], &wacz, &Default::default()).unwrap();
    let srv = crate::servers::RangeServer::start(&served, 5.0);
    let urls = [
        PathBuf::from(srv.url("a.warc")),
        PathBuf::from(srv.url("c.wacz")),
    ];
    let coll = collection(&urls, &dir.path().join("db.redb"));
    assert_eq!(payload(&coll, "http://r.test/", "2024").1, b"jan");
    assert_eq!(payload(&coll, "http://w.test/", "2024").1, b"one");

    let r = coll.store.sync(&urls).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!((r.updated_sources, r.entries), (0, 0), "{r:?}");
    let versions = |store: &Store| -> Vec<Option<String>> {
        store.sources().into_iter().map(|s| s.version).collect()
    };
    assert!(
        versions(&coll.store).iter().all(Option::is_some),
        "{:?}",
        coll.store.sources()
    );

    // A store from before versions were kept: its sources learn theirs at
    // the next sync, nothing read again.
    let db = dir.path().join("db.redb");
    drop(coll);
    corrupt(&db, |txn| {
        let mut t = txn.open_table(SOURCES).unwrap();
        let all: Vec<(u32, Vec<u8>)> = t
            .iter()
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.value(), v.value().to_vec())
            })
            .collect();
        for (k, v) in all {
            let mut src: serde_json::Value = serde_json::from_slice(&v).unwrap();
            assert!(src.as_object_mut().unwrap().remove("version").is_some());
            t.insert(k, serde_json::to_vec(&src).unwrap().as_slice())
                .unwrap();
        }
    });
    let store = Store::open(&db).unwrap();
    assert!(versions(&store).iter().all(Option::is_none));
    let r = store.sync(&urls).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!((r.updated_sources, r.entries), (0, 0), "{r:?}");
    assert!(
        versions(&store).iter().all(Option::is_some),
        "{:?}",
        store.sources()
    );
    drop(store);
    let coll = collection(&urls, &db);
    assert!(
        versions(&coll.store).iter().all(Option::is_some),
        "kept in the store"
    );

    std::fs::write(&warc, record("feb")).unwrap();
    crate::servers::set_mtime(&warc, 1_700_000_060);
    // The WACZ's archive file changed in place, its CRC-32 with it (in
    // its local header and the central directory): every size and place
    // the same (a WACZ written again compresses its other files to other
    // sizes). Its index's lines still fit.
    let (old, new) = (page("one"), page("two"));
    let mut zip = std::fs::read(&wacz).unwrap();
    let at = zip.windows(old.len()).position(|w| w == old).unwrap();
    zip[at..at + new.len()].copy_from_slice(&new);
    let (old_crc, new_crc) = (crc32(&old).to_le_bytes(), crc32(&new).to_le_bytes());
    let mut patched = 0;
    for i in 0..zip.len() - 3 {
        if zip[i..i + 4] == old_crc {
            zip[i..i + 4].copy_from_slice(&new_crc);
            patched += 1;
        }
    }
    assert_eq!(patched, 2, "the CRC in the local header and the directory");
    std::fs::write(&wacz, &zip).unwrap();
    let r = coll.store.sync(&urls).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!((r.updated_sources, r.entries), (2, 2), "{r:?}");
    assert_eq!(coll.store.len().unwrap(), 2, "the old captures deleted");
    assert_eq!(payload(&coll, "http://r.test/", "2024").1, b"feb");
    assert_eq!(payload(&coll, "http://w.test/", "2024").1, b"two");
}

/// A source dropped (its entry unreadable when the store was opened) whose
/// file is gone takes its own digest entries with it, not those of another
/// file holding the same payload: a revisit found by that digest alone
/// still resolves to the copy in the file still there.
#[test]
fn dropping_a_source_keeps_the_digests_of_another_file_with_the_same_payload() {
    let dir = tempfile::tempdir().unwrap();
    let paths = two_copies_of_one_payload(dir.path());
    let db = dir.path().join("db.redb");
    drop(collection(&paths, &db));
    // a.warc, indexed first, is source 0.
    corrupt(&db, |txn| {
        let mut t = txn.open_table(SOURCES).unwrap();
        t.insert(0, b"{not a source".as_slice()).unwrap();
    });
    std::fs::remove_file(&paths[0]).unwrap();
    let store = Store::open(&db).unwrap();
    assert_eq!(store.cache_damage().sources, 1);
    let r = store.sync(&paths[1..]).unwrap();
    assert!(r.failures.is_empty(), "{r:?}");
    assert_eq!(r.new_sources, 0, "{r:?}");
    let coll = Collection {
        name: "c".into(),
        paths: paths[1..].to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::none(),
        served: Default::default(),
    };
    assert_eq!(payload(&coll, "http://c.test/", "2024").1, b"same");
}

/// The public's view of a collection with no access rules.
fn everyone() -> warchest_replay::access::Viewer<'static> {
    static OPEN: std::sync::OnceLock<warchest_replay::access::AccessRules> =
        std::sync::OnceLock::new();
    OPEN.get_or_init(warchest_replay::access::AccessRules::allow_all)
        .viewer(None)
}

/// Access rules in the lookups: an excluded capture is not found (the
/// nearest one the viewer may see is), an exact and a fuzzy lookup alike;
/// a blocked one is found (its content is the server's to refuse); a
/// user's own rule and the embargo apply to that user and to captures of
/// their time only.
#[test]
fn access_rules_hide_excluded_captures_from_lookups() {
    use warchest_replay::access::{AccessRules, Embargo, Verdict, When};
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let mut bytes = Vec::new();
    for (uri, date) in [
        ("http://a.test/", "2024-01-01T00:00:00Z"),
        ("http://a.test/", "2024-06-01T00:00:00Z"),
        ("http://a.test/secret/x", "2024-06-01T00:00:00Z"),
        ("http://a.test/blocked", "2024-06-01T00:00:00Z"),
        ("http://a.test/p?cb=1", "2024-06-01T00:00:00Z"),
    ] {
        bytes.extend(response(uri, date, &text_ok(uri)));
    }
    std::fs::write(&warc, bytes).unwrap();
    let coll = collection(&[warc], &dir.path().join("db.redb"));
    let rules = AccessRules::parse(
        "test,a)/secret - {\"access\": \"exclude\"}\n\
         test,a)/secret - {\"access\": \"allow\", \"user\": \"staff\"}\n\
         test,a)/blocked - {\"access\": \"block\"}\n\
         test,a)/p - {\"access\": \"exclude\"}\n",
        "rules.aclj",
    )
    .unwrap()
    .with_embargo(Some(Embargo {
        when: vec![When::After(When::at("20240301").unwrap())],
        verdict: Verdict::Exclude,
    }));
    let public = rules.viewer(None);
    let staff = rules.viewer(Some("staff"));
    let ts = |c: Option<warchest_replay::store::Capture>| c.map(|c| c.entry.timestamp);
    // The June capture is embargoed: the January one is the nearest left.
    assert_eq!(
        ts(coll.find("http://a.test/", "20240601", &public).unwrap()).as_deref(),
        Some("20240101000000")
    );
    assert_eq!(
        ts(coll
            .find("http://a.test/", "20240601", &everyone())
            .unwrap())
        .as_deref(),
        Some("20240601000000")
    );
    assert!(
        coll.find("http://a.test/secret/x", "2024", &public)
            .unwrap()
            .is_none()
    );
    // The staff rule allows, but not past the embargo.
    assert!(
        coll.find("http://a.test/secret/x", "2024", &staff)
            .unwrap()
            .is_none()
    );
    let blocked = coll.find("http://a.test/blocked", "2024", &staff).unwrap();
    assert!(blocked.is_none(), "embargoed for staff too");
    // Fuzzy: `cb` is a cache buster, the capture of `?cb=1` is excluded.
    assert!(
        coll.find("http://a.test/p?cb=2", "2024", &everyone())
            .unwrap()
            .is_some()
    );
    assert!(
        coll.find("http://a.test/p?cb=2", "2024", &public)
            .unwrap()
            .is_none()
    );

    // Without the embargo: blocked is found and judged blocked.
    let rules = rules.with_embargo(None);
    let public = rules.viewer(None);
    let c = coll
        .find("http://a.test/blocked", "2024", &public)
        .unwrap()
        .expect("listed");
    assert_eq!(public.of(&c), Verdict::Block);
    assert!(
        coll.find("http://a.test/secret/x", "2024", &public)
            .unwrap()
            .is_none()
    );
    let staff = rules.viewer(Some("staff"));
    let c = coll
        .find("http://a.test/secret/x", "2024", &staff)
        .unwrap()
        .expect("staff's");
    assert_eq!(staff.of(&c), Verdict::Allow);
}
