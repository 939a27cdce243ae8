//! The record page says what is wrong with a damaged record's payload:
//! a record cut short ("truncated"), a payload that does not decode (the
//! error), the lenient recoveries reading it; a whole record says nothing.
//! The collection page counts the damaged records served.

use crate::{Running, get};

fn response(uri: &str, http: &str) -> Vec<u8> {
    format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{:012}>\r\n\
WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: {uri}\r\n\
Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        uri.len(),
        http.len()
    )
    .into_bytes()
}

/// The `payload-damage` list of a record page ("" when there is none).
fn damage(page: &str) -> &str {
    page.split_once("<ul id=\"payload-damage\">")
        .and_then(|(_, r)| r.split_once("</ul>"))
        .map_or("", |(d, _)| d)
}

#[test]
fn the_record_page_says_what_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("damaged.warc");
    let plain = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    let mut bytes = response("http://a.test/", plain);
    // A gzip-encoded payload that is not gzip.
    let not_gzip = bytes.len();
    bytes.extend(response(
        "http://a.test/z",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n\r\nnot gzip at all",
    ));
    // Header lines ending in bare LFs.
    let bare_at = bytes.len();
    let r = String::from_utf8(response("http://a.test/b", plain)).unwrap();
    let (head, rest) = r.split_once("\r\n\r\n").unwrap();
    bytes.extend(format!("{}\n\n{rest}", head.replace("\r\n", "\n")).into_bytes());
    // Cut short, last.
    let cut_at = bytes.len();
    let cut = response("http://a.test/c", plain);
    bytes.extend_from_slice(&cut[..cut.len() - 7]);
    std::fs::write(&warc, &bytes).unwrap();

    let s = Running::start(&[&warc], &dir.path().join("index.redb"));
    let page = |off: usize| {
        let p = get(&s.addr, &format!("/archive/record/0/{off}"));
        assert!(p.starts_with("HTTP/1.1 200"), "{p}");
        p
    };
    let p = page(0);
    assert!(p.contains("hello"), "{p}");
    assert_eq!(damage(&p), "", "{p}");

    let p = page(not_gzip);
    let d = damage(&p);
    assert!(d.contains("did not decode"), "{p}");

    let p = page(bare_at);
    let d = damage(&p);
    assert!(d.contains("1 lenient recovery: bare-lf (1)"), "{p}");
    assert!(!d.contains("truncated"), "{p}");

    let p = page(cut_at);
    let d = damage(&p);
    assert!(
        d.contains("truncated: the record ends before its Content-Length"),
        "{p}"
    );
    assert!(d.contains("truncated-record"), "{p}");
    assert!(p.contains("<pre id=\"payload-text\">he</pre>"), "{p}");
    s.stop().unwrap();
}

/// The collection page once it says `needle` (or as it is after 30 s):
/// a record is counted once its response has been sent, so the count may
/// come a moment after the answer.
fn home_saying(addr: &str, needle: &str) -> String {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let p = get(addr, "/archive/");
        if p.contains(needle) || std::time::Instant::now() >= until {
            return p;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The `served-damage` paragraph of the collection page.
fn served(page: &str) -> &str {
    page.split_once("<p id=\"served-damage\">")
        .and_then(|(_, r)| r.split_once("</p>"))
        .map_or("", |(d, _)| d)
}

/// Damaged records served (replayed, or their payload sent) and payloads
/// that could not be decoded are counted apart, per collection, on the
/// collection page; a whole record counts nothing.
#[test]
fn the_collection_page_counts_damaged_records_served() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("damaged.warc");
    let plain = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    let mut bytes = response("http://a.test/", plain);
    // Header lines ending in bare LFs.
    let bare_at = bytes.len();
    let r = String::from_utf8(response("http://a.test/b", plain)).unwrap();
    let (head, rest) = r.split_once("\r\n\r\n").unwrap();
    bytes.extend(format!("{}\n\n{rest}", head.replace("\r\n", "\n")).into_bytes());
    // A page said to be gzip-encoded that is not gzip: rewriting must
    // decode it.
    bytes.extend(response(
        "http://a.test/z",
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n<p>not gzip at all</p>",
    ));
    std::fs::write(&warc, &bytes).unwrap();
    let s = Running::start(&[&warc], &dir.path().join("index.redb"));
    let none = "0 records served damaged (truncated, or read with lenient recoveries), \
                0 payloads that could not be decoded.";
    assert!(served(&get(&s.addr, "/archive/")).contains(none));

    let r = get(&s.replay, "/archive/20240101000000id_/http://a.test/");
    assert!(r.starts_with("HTTP/1.1 200") && r.contains("hello"), "{r}");
    let r = get(&s.replay, "/archive/20240101000000id_/http://a.test/b");
    assert!(r.starts_with("HTTP/1.1 200") && r.contains("hello"), "{r}");
    let p = home_saying(&s.addr, "1 record served damaged");
    assert!(served(&p).contains("1 record served damaged"), "{p}");
    assert!(served(&p).contains("0 payloads that"), "{p}");

    // Its payload alone, from the record page's link.
    let r = get(&s.replay, &format!("/archive/record/0/{bare_at}/payload"));
    assert!(r.starts_with("HTTP/1.1 200") && r.contains("hello"), "{r}");
    let p = home_saying(&s.addr, "2 records served damaged");
    assert!(served(&p).contains("2 records served damaged"), "{p}");

    // The page that does not decode: not damaged as a record, counted as
    // a payload that could not be decoded.
    let r = get(&s.replay, "/archive/20240101000000mp_/http://a.test/z");
    assert!(!r.contains("not gzip at all"), "{r}");
    let p = home_saying(&s.addr, "1 payload that could not be decoded");
    assert!(served(&p).contains("2 records served damaged"), "{p}");
    assert!(
        served(&p).contains("1 payload that could not be decoded"),
        "{p}"
    );
    assert!(
        p.contains("<p id=\"index-damage\">Unreadable entries in the index cache: 0 "),
        "{p}"
    );
    s.stop().unwrap();
}

/// An index store whose entry of a file does not decode: serve says it
/// and counts it on the collection page, and the file is indexed again
/// as it starts, so its captures replay.
#[test]
fn an_unreadable_store_entry_is_counted_and_its_file_indexed_again() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let plain = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    std::fs::write(&warc, response("http://a.test/", plain)).unwrap();
    let db = dir.path().join("index.redb");
    Running::start(&[&warc], &db).stop().unwrap();
    {
        let sources: redb::TableDefinition<u32, &[u8]> = redb::TableDefinition::new("sources");
        let d = redb::Database::create(&db).unwrap();
        let txn = d.begin_write().unwrap();
        txn.open_table(sources)
            .unwrap()
            .insert(0, b"not json".as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let s = Running::start(&[&warc], &db);
    let p = get(&s.addr, "/archive/");
    assert!(
        p.contains(
            "<p id=\"index-damage\">Unreadable entries in the index cache: 1 \
             (1 sources, 0 captures, 0 record locations).</p>"
        ),
        "{p}"
    );
    assert!(p.contains("1 capture in 1 file"), "{p}");
    let r = get(&s.replay, "/archive/20240101000000id_/http://a.test/");
    assert!(r.starts_with("HTTP/1.1 200") && r.contains("hello"), "{r}");
    s.stop().unwrap();
}

/// What `f` logs (its thread's events, as text), and what it returns.
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

/// The lines of a `--cdxj` index that are not CDXJ are said once, as a
/// warning naming the index and their line numbers; the load's summary
/// counts them without saying them again.
#[test]
fn a_cdxj_line_that_is_not_cdxj_is_told_once() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let plain = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    std::fs::write(&warc, response("http://a.test/", plain)).unwrap();
    let cdxj = dir.path().join("index.cdxj");
    std::fs::write(
        &cdxj,
        "test,a)/ 20240101000000 {\"url\": \"http://a.test/\", \"mime\": \"text/plain\", \
         \"status\": \"200\", \"filename\": \"a.warc\", \"offset\": \"0\"}\n\
         not an index line\n\
         \n\
         neither is this\n",
    )
    .unwrap();
    let mut opts = warchest_serve::ServeOptions::new(vec![warc]);
    opts.listen = "127.0.0.1:0".into();
    opts.store = Some(dir.path().join("index.redb"));
    opts.poll = None;
    opts.cdxj = Some(cdxj);
    let (server, log) = logged(|| warchest_serve::Server::bind(opts).expect("bind the server"));
    drop(server);
    assert_eq!(log.matches("lines 2, 4").count(), 1, "{log}");
    let told = log
        .lines()
        .find(|l| l.contains("lines 2, 4"))
        .expect("told");
    assert!(told.contains("WARN"), "{log}");
    assert!(told.contains("index.cdxj: 2 lines are not CDXJ"), "{log}");
    // The summary: counts only.
    assert!(log.contains("2 lines not CDXJ, skipped"), "{log}");
    assert!(log.contains("loaded 1 line from"), "{log}");
}
