//! `format = infomall`: the crawl written as Web InfoMall records.

use std::io::Read;

use crate::crawl::{config, crawl};
use crate::web;
use warchest_crawl::engine::Ending;

#[test]
fn an_infomall_crawl_writes_rotating_web_infomall_files() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let s = crawl(
        &dir,
        &config(
            &w,
            "format = \"infomall\"\nwarc-size = 600\nmax-size = 10000",
        ),
    );
    assert_eq!(s.ending, Ending::Finished);
    let mut names: Vec<String> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.iter().all(|n| n.ends_with(".dat")),
        "only Web InfoMall files: {names:?}"
    );
    // Rotated: files stay near warc-size (a record larger has its own).
    assert!(names.len() >= 3, "{names:?}");
    let files: Vec<_> = names.iter().map(|n| dir.join("archive").join(n)).collect();
    assert_eq!(s.files.len(), files.len());

    // Read back: each record's properties and content.
    let mut by_url = std::collections::BTreeMap::new();
    for f in &files {
        let mut r = warchest::infomall::Reader::open(f).unwrap();
        while let Some(mut rec) = r.next_record().unwrap() {
            let h = rec.infomall_header().clone();
            let get = |v: Option<std::borrow::Cow<'_, [u8]>>| {
                v.map(|b| String::from_utf8_lossy(&b).into_owned())
            };
            let url = get(h.url()).unwrap();
            let mut content = Vec::new();
            rec.block().read_to_end(&mut content).unwrap();
            assert!(rec.is_compressed(), "{url}: zlib, as Tianwang stored it");
            assert!(h.date().is_some(), "{url}: date {:?}", get(h.date_value()));
            assert_eq!(get(h.ip()).as_deref(), Some("127.0.0.1"), "{url}");
            by_url.insert(url, (get(h.origin()), content));
        }
    }
    let home = w.url("a.test", "/");
    let (origin, content) = &by_url[&home];
    assert_eq!(origin, &None);
    let text = String::from_utf8_lossy(content);
    assert!(text.starts_with("HTTP/1.0 200"), "{text}");
    assert!(text.contains("<title>Home</title>"), "{text}");
    // Reached by a redirect: origin names the URL that redirected.
    let (origin, content) = &by_url[&w.url("a.test", "/p1new")];
    assert_eq!(origin.as_deref(), Some(w.url("a.test", "/old").as_str()));
    assert!(String::from_utf8_lossy(content).contains("moved here"));
    // Every URL fetched is there (robots.txt included), nothing else.
    let fetched: std::collections::BTreeSet<String> = w.requests().into_iter().collect();
    assert_eq!(
        by_url
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        fetched
    );
    // What `warchest ls` and `validate` read: the library's readers.
    let mut n = 0;
    for f in &files {
        let mut r = warchest::archive::Reader::open(f).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            assert!(rec.header().target_uri().is_some());
            n += 1;
        }
    }
    assert_eq!(n, by_url.len());
    let report = warchest_validate::validate_files(&files, &warchest_validate::Options::default());
    assert_eq!(report.summary.errors(), 0, "{:#?}", report.findings);
    // Indexed as the crawl went.
    let cdxj = std::fs::read_to_string(dir.join("indexes/index.cdxj")).unwrap();
    assert_eq!(cdxj.lines().count(), n, "{cdxj}");
    assert!(cdxj.contains(".dat\""), "{cdxj}");
    // crawl.log's extras name each fetch's file and the record's offset,
    // where its record begins (as for WARC files).
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let mut named = 0;
    for l in log.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let Some(x) = f.get(12) else { continue };
        let x: serde_json::Value = serde_json::from_str(x).unwrap();
        let Some(name) = x["warcFilename"].as_str() else {
            continue;
        };
        assert!(name.ends_with(".dat"), "{l}");
        let offset = x["warcFileOffset"].as_u64().unwrap();
        let mut file = std::fs::File::open(dir.join("archive").join(name)).unwrap();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(offset)).unwrap();
        let mut r = warchest::infomall::Reader::new(file);
        let rec = r.next_record().unwrap().unwrap();
        let url = rec.infomall_header().url().unwrap();
        assert_eq!(String::from_utf8_lossy(&url), f[3], "{l}");
        named += 1;
    }
    assert_eq!(named, by_url.len(), "{log}");
}

/// A killed infomall crawl's `.open` file (whole records and a cut last
/// one) is closed on resume as a WARC file is: the whole records kept
/// under the final name, the cut one dropped and reported.
#[test]
fn an_infomall_crawl_resumes_over_a_cut_open_file() {
    use crate::crawl::resume;
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let s = crawl(&dir, &config(&w, "format = \"infomall\"\nmax-pages = 2"));
    assert_eq!(s.ending, Ending::Budget);
    let archive = dir.join("archive");
    let f = s.files[0].clone();
    let whole = std::fs::read(&f).unwrap();
    let mut r = warchest::infomall::Reader::open(&f).unwrap();
    let mut n = 0;
    while r.next_record().unwrap().is_some() {
        n += 1;
    }
    assert!(n >= 2, "{n}");
    // The same records again and half of the first once more.
    let mut cut = whole.clone();
    cut.extend_from_slice(&whole[..whole.len() / (2 * n)]);
    let name = "crawl-20260101000000-00090-x.dat";
    std::fs::write(archive.join(format!("{name}.open")), &cut).unwrap();
    let s = resume(&dir, |t| t.replace("max-pages = 2", "max-pages = 0"));
    assert_eq!(s.ending, Ending::Finished);
    assert!(
        s.recovered
            .iter()
            .any(|l| l.contains(name) && l.contains("dropped")),
        "{:#?}",
        s.recovered
    );
    let kept = std::fs::read(archive.join(name)).unwrap();
    assert_eq!(kept, whole, "the whole records, byte for byte");
    assert!(!archive.join(format!("{name}.open")).exists());
    let files: Vec<_> = std::fs::read_dir(&archive)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let report = warchest_validate::validate_files(&files, &warchest_validate::Options::default());
    assert_eq!(report.summary.errors(), 0, "{:#?}", report.findings);
}

#[test]
fn an_infomall_crawl_refuses_what_the_format_cannot_hold() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    for (extra, why) in [
        ("recrawl = \"/nonexistent\"", "recrawl"),
        ("dedupe-index = \"/nonexistent.cdxj\"", "dedupe-index"),
        ("browser = true", "browser"),
        // A WACZ holds the crawl's WARC files: none has its responses.
        ("wacz = true", "wacz"),
    ] {
        let toml = config(&w, &format!("format = \"infomall\"\n{extra}"));
        let cfg = warchest_crawl::config::CrawlConfig::from_toml(&toml).unwrap();
        let err = match warchest_crawl::engine::Crawl::open(
            &out.path().join(why),
            cfg,
            &toml,
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        ) {
            Ok(_) => panic!("{extra}: opened"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(why), "{extra}: {err}");
    }
}

/// `Recorder::finish` failing at the end of an InfoMall crawl (one of the
/// recorder's `.open` files removed once every URI is done) while the
/// InfoMall files close: those are still indexed and named in the error.
/// Their close handed them over once, and the error path used to ask the
/// emptied list again (none named).
#[test]
fn a_failed_close_of_the_recorder_still_names_the_infomall_files() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let (err, _) = crate::crawl::run_losing_a_writers_file(
        &dir,
        &config(
            &w,
            "format = \"infomall\"\nwarc-size = 3000\nmax-size = 10000\nwarc-writers = 2",
        ),
        &|_| {},
    );
    assert!(err.contains("closing the WARC files failed"), "{err}");
    let dats: Vec<String> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".dat"))
        .collect();
    assert!(dats.len() >= 2, "rotated: {dats:?}");
    let listed = std::fs::read_to_string(dir.join("indexes/indexed.txt")).unwrap_or_default();
    for d in &dats {
        assert!(err.contains(d.as_str()), "{d} named: {err}");
        assert!(
            listed.lines().any(|l| l.starts_with(&format!("{d}\t"))),
            "{d} indexed: {listed:?}"
        );
    }
    assert!(err.contains("closed, not indexed: none"), "{err}");
}
