//! Commands on archives named by URL: a real S3-compatible server (moto)
//! and an HTTP server with ranges and faults, each result compared with
//! the same command on the local file.

use std::path::Path;
use std::process::Command;

use crate::common::{bin, fixture};

#[path = "../../../warchest-remote/tests/it/servers.rs"]
pub(crate) mod servers;
use servers::{Moto, RangeServer};

const NAMES: &[&str] = &[
    "example.warc.gz",
    "example.warc",
    "example.arc.gz",
    "example-iana.org-chunked.warc",
];

/// Runs warchest with `env` (the server's) and short remote timeouts.
fn run_env(env: &[(&'static str, String)], args: &[&str]) -> (i32, String, String) {
    let mut c: Command = bin();
    c.args(args)
        .env("WARCHEST_REMOTE_TIMEOUT", "3")
        .env("WARCHEST_REMOTE_RETRIES", "4")
        .env("WARCHEST_REMOTE_BACKOFF_MS", "10");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run warchest");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn commands_on_s3_match_the_local_files() {
    let moto = Moto::start();
    let env = moto.env();
    let dir = fixture("warcio/example.warc.gz")
        .parent()
        .unwrap()
        .to_path_buf();
    let files: Vec<_> = NAMES
        .iter()
        .map(|n| (format!("crawl/{n}"), dir.join(n)))
        .collect();
    moto.upload("bucket", &files);
    let local_dir = format!("{}/", dir.display());
    let same = |remote_out: &str| remote_out.replace("s3://bucket/crawl/", &local_dir);

    for name in NAMES {
        let url = format!("s3://bucket/crawl/{name}");
        let local = dir.join(name).display().to_string();
        for cmd in [
            &["ls"][..],
            &["index"],
            &["check"],
            &["validate"],
            &["stats"],
            &["ls", "--json"],
        ] {
            let mut r: Vec<&str> = cmd.to_vec();
            r.push(&url);
            let mut l: Vec<&str> = cmd.to_vec();
            l.push(&local);
            let (rc, rout, rerr) = run_env(&env, &r);
            let (lc, lout, _) = run_env(&[], &l);
            assert_eq!(rc, lc, "{cmd:?} {url}: {rerr}");
            assert_eq!(same(&rout), lout, "{cmd:?} {url}: {rerr}");
        }
    }

    // A prefix and a glob are every object they list, as the local files.
    let (rc, rout, rerr) = run_env(&env, &["ls", "s3://bucket/crawl/"]);
    assert_eq!(rc, 0, "{rerr}");
    let mut sorted: Vec<_> = NAMES.to_vec();
    sorted.sort();
    let locals: Vec<String> = sorted
        .iter()
        .map(|n| dir.join(n).display().to_string())
        .collect();
    let mut largs = vec!["ls"];
    largs.extend(locals.iter().map(String::as_str));
    let (_, lout, _) = run_env(&[], &largs);
    assert_eq!(same(&rout), lout);
    let (rc, rout, rerr) = run_env(&env, &["ls", "s3://bucket/crawl/*.warc.gz"]);
    assert_eq!(rc, 0, "{rerr}");
    let (_, lout, _) = run_env(
        &[],
        &["ls", &dir.join("example.warc.gz").display().to_string()],
    );
    assert_eq!(same(&rout), lout);

    // extract by offset and length, as from the local file.
    let (_, idx, _) = run_env(
        &[],
        &["index", &dir.join("example.warc.gz").display().to_string()],
    );
    let first = idx.lines().next().unwrap();
    let v: serde_json::Value = serde_json::from_str(first.splitn(3, ' ').nth(2).unwrap()).unwrap();
    let (off, len) = (v["offset"].as_str().unwrap(), v["length"].as_str().unwrap());
    let (rc, rout, rerr) = run_env(
        &env,
        &[
            "extract",
            "s3://bucket/crawl/example.warc.gz",
            "--offset",
            off,
            "--length",
            len,
            "--payload",
        ],
    );
    assert_eq!(rc, 0, "{rerr}");
    let (_, lout, _) = run_env(
        &[],
        &[
            "extract",
            &dir.join("example.warc.gz").display().to_string(),
            "--offset",
            off,
            "--payload",
        ],
    );
    assert!(!lout.is_empty());
    assert_eq!(rout, lout);

    // filter and fetch write to the bucket; the objects read back as the
    // same records.
    let tmp = tempfile::tempdir().unwrap();
    let local_out = tmp.path().join("f.warc.gz");
    let (rc, _, rerr) = run_env(
        &env,
        &[
            "filter",
            "s3://bucket/crawl/example.warc.gz",
            "-o",
            "s3://bucket/out/f.warc.gz",
            "warc-type == \"response\"",
        ],
    );
    assert_eq!(rc, 0, "{rerr}");
    let (rc, _, _) = run_env(
        &[],
        &[
            "filter",
            &dir.join("example.warc.gz").display().to_string(),
            "-o",
            &local_out.display().to_string(),
            "warc-type == \"response\"",
        ],
    );
    assert_eq!(rc, 0);
    let ls_cols = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split('\t').skip(2).take(3).collect::<Vec<_>>().join("\t"))
            .collect()
    };
    let (rc, rout, rerr) = run_env(&env, &["ls", "s3://bucket/out/f.warc.gz"]);
    assert_eq!(rc, 0, "{rerr}");
    let (_, lout, _) = run_env(&[], &["ls", &local_out.display().to_string()]);
    assert_eq!(ls_cols(&rout), ls_cols(&lout));
    assert!(ls_cols(&rout).iter().any(|l| l.contains("response")));

    // convert writes to the bucket too: the same records as locally.
    let local_conv = tmp.path().join("c.warc.gz");
    let (rc, _, rerr) = run_env(
        &env,
        &[
            "convert",
            "s3://bucket/crawl/example.arc.gz",
            "-o",
            "s3://bucket/out/c.warc.gz",
        ],
    );
    assert_eq!(rc, 0, "{rerr}");
    let (rc, _, _) = run_env(
        &[],
        &[
            "convert",
            &dir.join("example.arc.gz").display().to_string(),
            "-o",
            &local_conv.display().to_string(),
        ],
    );
    assert_eq!(rc, 0);
    let (rc, rout, rerr) = run_env(&env, &["ls", "s3://bucket/out/c.warc.gz"]);
    assert_eq!(rc, 0, "{rerr}");
    let (_, lout, _) = run_env(&[], &["ls", &local_conv.display().to_string()]);
    assert_eq!(ls_cols(&rout), ls_cols(&lout));
    assert!(ls_cols(&rout).len() > 1);

    // fetch: every record of an index over the bucket, byte for byte.
    let cdxj = tmp.path().join("all.cdxj");
    std::fs::write(&cdxj, &idx).unwrap();
    let (rc, _, rerr) = run_env(
        &env,
        &[
            "fetch",
            &cdxj.display().to_string(),
            "--prefix",
            "s3://bucket/crawl/",
            "-j",
            "4",
            "-o",
            "s3://bucket/out/fetched.warc.gz",
        ],
    );
    assert_eq!(rc, 0, "{rerr}");
    let fetched = fetch_object(&env, "s3://bucket/out/fetched.warc.gz", tmp.path());
    let source = std::fs::read(dir.join("example.warc.gz")).unwrap();
    let mut want = Vec::new();
    for line in idx.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let o: usize = v["offset"].as_str().unwrap().parse().unwrap();
        let l: usize = v["length"].as_str().unwrap().parse().unwrap();
        want.extend_from_slice(&source[o..o + l]);
    }
    assert!(fetched.len() > want.len());
    assert!(
        fetched.ends_with(&want),
        "fetched records differ from the stored ones"
    );
    // The records lie next to each other: one request for them all, and
    // the same records with --max-gap 0, one request each.
    assert!(rerr.contains("with 1 requests"), "{rerr}");
    let one = tmp.path().join("one-by-one.warc.gz");
    let (rc, _, rerr) = run_env(
        &env,
        &[
            "fetch",
            &cdxj.display().to_string(),
            "--prefix",
            "s3://bucket/crawl/",
            "--max-gap",
            "0",
            "-o",
            &one.display().to_string(),
        ],
    );
    assert_eq!(rc, 0, "{rerr}");
    let n = idx.lines().count();
    assert!(rerr.contains(&format!("with {n} requests")), "{rerr}");
    assert!(std::fs::read(&one).unwrap().ends_with(&want));
    // Its first record is a warcinfo naming the index.
    let (rc, info, _) = run_env(
        &env,
        &[
            "extract",
            "s3://bucket/out/fetched.warc.gz",
            "--offset",
            "0",
        ],
    );
    assert_eq!(rc, 0);
    assert!(
        info.contains("WARC-Type: warcinfo") && info.contains("all.cdxj"),
        "{info}"
    );
}

/// The bytes of an object, through `warchest fetch`-free means: a filter
/// with no expression would rewrite, so a plain extract of ranges is not
/// enough; boto3 is used instead.
fn fetch_object(env: &[(&'static str, String)], url: &str, tmp: &Path) -> Vec<u8> {
    let key = url.trim_start_matches("s3://bucket/");
    let endpoint = &env
        .iter()
        .find(|(k, _)| *k == "AWS_ENDPOINT_URL")
        .unwrap()
        .1;
    let dest = tmp.join("object");
    let script = format!(
        "import boto3\nboto3.client('s3', endpoint_url='{endpoint}', aws_access_key_id='testing', aws_secret_access_key='testing', region_name='us-east-1').download_file('bucket', '{key}', {:?})\n",
        dest.display().to_string()
    );
    let st = Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::read(dest).unwrap()
}

#[test]
fn extract_by_offset_and_length_is_one_request_and_faults_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("warcio/example.warc.gz");
    std::fs::copy(&src, tmp.path().join("example.warc.gz")).unwrap();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url("example.warc.gz");
    let (_, idx, _) = run_env(&[], &["index", &src.display().to_string()]);
    let line = idx.lines().next().unwrap();
    let v: serde_json::Value = serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
    let (off, len) = (v["offset"].as_str().unwrap(), v["length"].as_str().unwrap());
    srv.reset_count();
    let (rc, out, err) = run_env(
        &[],
        &[
            "extract",
            &url,
            "--offset",
            off,
            "--length",
            len,
            "--headers",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(out.starts_with("WARC/1.0\r\n"), "{out}");
    assert_eq!(
        srv.count(),
        (1, 0),
        "extract with --length costs one GET, no HEAD"
    );

    // ls through faults: the same listing as the local file.
    srv.faults(&["503", "reset", "short"]);
    let (rc, rout, err) = run_env(&[], &["ls", &url]);
    assert_eq!(rc, 0, "{err}");
    let (_, lout, _) = run_env(&[], &["ls", &src.display().to_string()]);
    assert_eq!(rout, lout);

    // A cut object fails, naming the URL and the offset.
    srv.cut("example.warc.gz", 2000);
    let (rc, _, err) = run_env(&[], &["ls", &url]);
    assert_ne!(rc, 0);
    assert!(err.contains(&url) && err.contains("at byte 2000"), "{err}");

    // fetch: a record that cannot be fetched is named, the rest are written.
    let cdxj = tmp.path().join("i.cdxj");
    let mut lines: Vec<String> = idx.lines().map(str::to_string).collect();
    lines.push(lines[0].replace("example.warc.gz", "missing.warc.gz"));
    std::fs::write(&cdxj, lines.join("\n")).unwrap();
    let out = tmp.path().join("o.warc.gz");
    let base = format!("http://127.0.0.1:{}/", srv.port);
    srv.cut("example.warc.gz", 1 << 40);
    let (rc, _, err) = run_env(
        &[],
        &[
            "fetch",
            &cdxj.display().to_string(),
            "--prefix",
            &base,
            "-o",
            &out.display().to_string(),
            "--status",
            "200",
        ],
    );
    assert_eq!(rc, 1, "{err}");
    assert!(
        err.contains("missing.warc.gz") && err.contains("not fetched"),
        "{err}"
    );
    let (rc, ls, err) = run_env(&[], &["ls", &out.display().to_string()]);
    assert_eq!(rc, 0, "{err}");
    let want = idx
        .lines()
        .filter(|l| l.contains("\"status\": \"200\""))
        .count();
    assert_eq!(ls.lines().count(), 1 + want, "{ls}");
}

#[test]
fn fetch_by_cc_index_parquet_equals_fetch_by_cdxj() {
    crate::common::python_has("pyarrow");
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("warcio/example.warc.gz");
    std::fs::copy(&src, tmp.path().join("example.warc.gz")).unwrap();
    let (_, idx, _) = run_env(&[], &["index", &src.display().to_string()]);
    let cdxj = tmp.path().join("i.cdxj");
    std::fs::write(&cdxj, &idx).unwrap();
    // The same rows as a table with Common Crawl's column names and types.
    let parquet = tmp.path().join("cc.parquet");
    let script = format!(
        r#"
import json, datetime, pyarrow as pa, pyarrow.parquet as pq
rows = []
for line in open({cdxj:?}):
    surt, ts, js = line.split(' ', 2)
    j = json.loads(js)
    rows.append(dict(url=j['url'], url_surtkey=surt, warc_filename=j['filename'],
        warc_record_offset=int(j['offset']), warc_record_length=int(j['length']),
        content_mime_type=j.get('mime'), fetch_status=int(j['status']) if j.get('status', '-').isdigit() else None,
        fetch_time=datetime.datetime.strptime(ts, '%Y%m%d%H%M%S')))
schema = pa.schema([('url', pa.string()), ('url_surtkey', pa.string()), ('warc_filename', pa.string()),
    ('warc_record_offset', pa.int32()), ('warc_record_length', pa.int32()), ('content_mime_type', pa.string()),
    ('fetch_status', pa.int16()), ('fetch_time', pa.timestamp('ms'))])
pq.write_table(pa.Table.from_pylist(rows, schema=schema), {parquet:?})
"#,
        cdxj = cdxj.display().to_string(),
        parquet = parquet.display().to_string()
    );
    let st = Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(st.success());
    let srv = RangeServer::start(tmp.path(), 5.0);
    let base = format!("http://127.0.0.1:{}/", srv.port);
    let sel = ["--status", "200", "--from", "2017", "--to", "201703"];
    let fetch = |index: &str, out: &str| {
        let mut a = vec!["fetch", index, "--prefix", &base, "-o", out];
        a.extend(sel);
        let (rc, _, err) = run_env(&[], &a);
        assert_eq!(rc, 0, "{index}: {err}");
        let (_, ls, _) = run_env(&[], &["ls", out]);
        // The records after the warcinfo (whose length names the index):
        // stored lengths, types, dates and URIs.
        ls.lines()
            .skip(1)
            .map(|l| l.split_once('\t').map_or("", |x| x.1).to_string())
            .collect::<Vec<_>>()
    };
    let by_cdxj = fetch(
        &cdxj.display().to_string(),
        &tmp.path().join("a.warc.gz").display().to_string(),
    );
    let by_parquet = fetch(
        &parquet.display().to_string(),
        &tmp.path().join("b.warc.gz").display().to_string(),
    );
    let by_remote_parquet = fetch(
        &srv.url("cc.parquet"),
        &tmp.path().join("c.warc.gz").display().to_string(),
    );
    assert!(!by_cdxj.is_empty());
    assert_eq!(by_parquet, by_cdxj);
    assert_eq!(by_remote_parquet, by_cdxj);
}

/// The index lines of `file` (`warchest index`).
fn index_lines(file: &Path) -> Vec<String> {
    let (rc, out, err) = run_env(&[], &["index", &file.display().to_string()]);
    assert_eq!(rc, 0, "{err}");
    out.lines().map(str::to_string).collect()
}

/// The offset and length of the capture of `url` at `ts` in `lines`.
fn offset_length(lines: &[String], url: &str, ts: &str) -> (u64, u64) {
    for l in lines {
        let mut parts = l.splitn(3, ' ');
        let (_, t, js) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
        let v: serde_json::Value = serde_json::from_str(js).unwrap();
        if t == ts && v["url"].as_str() == Some(url) {
            let n = |k: &str| v[k].as_str().unwrap().parse().unwrap();
            return (n("offset"), n("length"));
        }
    }
    panic!("no capture of {url} at {ts}");
}

/// `serve` of one local file or WACZ, with its index in `db`: the side
/// the remote one is compared with.
fn serve_file(path: &Path, db: &Path) -> crate::serve::Server {
    serve_env(&[], &[&path.display().to_string()], db)
}

/// `warchest serve` of `paths` with `env` (a server's) and short remote
/// timeouts, its index in `db`, no polling.
/// The stored bytes of the records that CDXJ `lines` list in `file`, in
/// the lines' order: what `fetch` writes after its warcinfo.
fn indexed_bytes(file: &Path, lines: &[String]) -> Vec<u8> {
    let data = std::fs::read(file).unwrap();
    let mut want = Vec::new();
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let n = |k: &str| v[k].as_str().unwrap().parse::<usize>().unwrap();
        want.extend_from_slice(&data[n("offset")..n("offset") + n("length")]);
    }
    want
}

fn serve_env(env: &[(&'static str, String)], paths: &[&str], db: &Path) -> crate::serve::Server {
    let mut cmd = bin();
    cmd.arg("serve")
        .args(paths)
        .args(["--listen", "127.0.0.1:0", "--poll", "0", "--index-db"])
        .arg(db)
        .env("WARCHEST_REMOTE_TIMEOUT", "3")
        .env("WARCHEST_REMOTE_RETRIES", "3")
        .env("WARCHEST_REMOTE_BACKOFF_MS", "10");
    for (k, v) in env {
        cmd.env(k, v);
    }
    crate::serve::Server::start_cmd(cmd)
}

/// A page's body with the server's own addresses taken out, so that two
/// servers' rewritten pages compare.
fn without_addresses(s: &crate::serve::Server, body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .replace(&s.replay, "REPLAY")
        .replace(&s.addr, "UI")
}

const IANA_HOME: &str = "/archive/20140126200624id_/http://www.iana.org/";
const IANA_CSS: &str = "/archive/20140126200625id_/http://www.iana.org/_css/2013.1/screen.css";
/// A revisit: its payload is read from the original's record.
const IANA_REVISIT: &str = "/archive/20140126200653id_/http://www.iana.org/_js/2013.1/jquery.js";

#[test]
fn serve_over_s3_answers_as_over_the_local_files() {
    let moto = Moto::start();
    let env = moto.env();
    let iana = fixture("pywb/iana.warc.gz");
    let example = fixture("pywb/example.warc.gz");
    let tmp = tempfile::tempdir().unwrap();
    let note = tmp.path().join("index.cdxj");
    std::fs::write(&note, "not an archive\n").unwrap();
    moto.upload(
        "bucket",
        &[
            ("crawl/iana.warc.gz".into(), iana.clone()),
            ("crawl/example.warc.gz".into(), example.clone()),
            // Under the prefix, but not an archive: skipped, as a walked
            // directory's other files are.
            ("crawl/index.cdxj".into(), note),
        ],
    );
    let (iana_s, example_s) = (iana.display().to_string(), example.display().to_string());
    let local = serve_env(&[], &[&iana_s, &example_s], &tmp.path().join("l.redb"));
    let remote = serve_env(&env, &["s3://bucket/crawl/"], &tmp.path().join("r.redb"));

    // The CDX API: the same captures (file names are base names).
    let cdx = "/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json";
    let (l, r) = (local.get(cdx), remote.get(cdx));
    assert_eq!(r.status, 200, "{}", remote.log());
    assert_eq!(r.text(), l.text());
    assert!(r.text().lines().count() > 5, "{}", r.text());

    // Raw captures, a revisit (its original read by range too) and a
    // rewritten page: the same bytes.
    for path in [IANA_HOME, IANA_CSS, IANA_REVISIT] {
        let (l, r) = (local.rget(path), remote.rget(path));
        assert_eq!(r.status, 200, "{path}: {} {}", r.text(), remote.log());
        assert_eq!(l.status, 200, "{path}");
        assert!(!r.body.is_empty());
        assert!(r.body == l.body, "{path}: bodies differ");
    }
    let page = "/archive/20140126200624/http://www.iana.org/";
    let (l, r) = (local.rget(page), remote.rget(page));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("warchest-banner"));
    assert_eq!(
        without_addresses(&remote, &r.body),
        without_addresses(&local, &l.body)
    );

    // A record download: the record's stored bytes, as from the local file
    // (sources are numbered in name order: example 0, iana 1).
    let (off, len) = offset_length(
        &index_lines(&iana),
        "http://www.iana.org/",
        "20140126200624",
    );
    let path = format!("/archive/record/1/{off}/warc");
    let (l, r) = (local.rget(&path), remote.rget(&path));
    assert_eq!(r.status, 200, "{}", r.text());
    let stored = std::fs::read(&iana).unwrap();
    assert_eq!(l.body, &stored[off as usize..(off + len) as usize]);
    assert!(r.body == l.body, "record downloads differ");
    // The record page names the object, relative to the prefix served.
    let r = remote.get(&format!("/archive/record/1/{off}"));
    assert_eq!(r.status, 200);
    assert!(r.text().contains("iana.warc.gz at offset"), "{}", r.text());
    assert!(!r.text().contains("s3://bucket/crawl/iana.warc.gz"));
    // And the whole file.
    let r = remote.rget("/archive/file/1");
    assert_eq!(r.status, 200);
    assert!(r.body == stored, "file download differs");

    // An object deleted from the prefix: dropped with its captures when
    // the prefix is synced again (here, at the next start), named and
    // counted; the other object's captures kept.
    let example_url = "/archive/cdx?url=http://example.com/&matchType=domain&output=json";
    let examples = remote.get(example_url).text();
    assert!(!examples.trim().is_empty());
    drop(remote);
    moto.delete("bucket", "crawl/iana.warc.gz");
    let remote = serve_env(&env, &["s3://bucket/crawl/"], &tmp.path().join("r.redb"));
    let log = remote.log_with("no longer there: ");
    assert!(
        log.contains("s3://bucket/crawl/iana.warc.gz: no longer there"),
        "{log}"
    );
    assert!(log.contains("1 file no longer there"), "{log}");
    assert!(remote.get(cdx).text().trim().is_empty());
    assert_eq!(remote.get(example_url).text(), examples);
}

/// What a glob no longer lists is dropped as what a prefix no longer
/// lists is; an object named on its own under a prefix served, whose name
/// is not an archive's (the prefix's listing leaves it out), is kept with
/// its captures, start after start.
#[test]
fn serve_drops_what_a_glob_no_longer_lists_and_keeps_an_object_named_on_its_own() {
    let moto = Moto::start();
    let env = moto.env();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.warc.gz");
    moto.upload(
        "bucket",
        &[
            ("crawl/iana.warc.gz".into(), fixture("pywb/iana.warc.gz")),
            ("crawl/sample.data".into(), sample),
            ("g/a.warc.gz".into(), fixture("pywb/example.warc.gz")),
            ("g/b.warc.gz".into(), fixture("pywb/iana.warc.gz")),
        ],
    );
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.redb");
    let args = [
        "s3://bucket/crawl/",
        "s3://bucket/crawl/sample.data",
        "s3://bucket/g/*.warc.gz",
    ];
    // The sample's captures (2026): from the object named on its own.
    let sample_cdx = "/archive/cdx?url=http://example.com/&output=json&from=2026";
    let iana_cdx = "/archive/cdx?url=http://www.iana.org/&output=json";
    let remote = serve_env(&env, &args, &db);
    let captures = remote.get(sample_cdx).text();
    assert!(
        captures.contains("sample.data"),
        "{captures} {}",
        remote.log()
    );
    let iana = remote.get(iana_cdx).text();
    assert!(iana.contains("b.warc.gz"), "{iana}");
    drop(remote);
    moto.delete("bucket", "g/b.warc.gz");
    let remote = serve_env(&env, &args, &db);
    let log = remote.log_with("no longer there: ");
    assert!(
        log.contains("s3://bucket/g/b.warc.gz: no longer there"),
        "{log}"
    );
    assert!(log.contains("1 file no longer there"), "{log}");
    assert!(!log.contains("sample.data: no longer there"), "{log}");
    assert_eq!(remote.get(sample_cdx).text(), captures);
    let iana = remote.get(iana_cdx).text();
    assert!(
        !iana.contains("b.warc.gz") && iana.contains("iana.warc.gz"),
        "{iana}"
    );
}

#[test]
fn serve_over_http_reads_a_record_with_one_request_retries_and_names_a_cut_object() {
    let tmp = tempfile::tempdir().unwrap();
    let iana = fixture("pywb/iana.warc.gz");
    std::fs::copy(&iana, tmp.path().join("iana.warc.gz")).unwrap();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url("iana.warc.gz");
    let local = serve_file(&iana, &tmp.path().join("l.redb"));
    let remote = serve_env(&[], &[&url], &tmp.path().join("r.redb"));

    // One replayed record, one GET (no HEAD: the size is in the index).
    srv.reset_count();
    let r = remote.rget(IANA_CSS);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(srv.count(), (1, 0), "a record costs one range request");
    assert!(r.body == local.rget(IANA_CSS).body);

    // A fault (503, then a connection reset mid-body) is retried: the
    // same bytes.
    srv.faults(&["503", "reset"]);
    let r = remote.rget(IANA_HOME);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.body == local.rget(IANA_HOME).body);

    // The object cut inside the style sheet's record: an error page naming
    // the URL and the byte where the bytes stopped, never a shorter record
    // with 200.
    let (off, len) = offset_length(
        &index_lines(&iana),
        "http://www.iana.org/_css/2013.1/screen.css",
        "20140126200625",
    );
    let cut = off + len / 2;
    srv.cut("iana.warc.gz", cut);
    let r = remote.rget(IANA_CSS);
    assert_eq!(r.status, 502, "{}", r.text());
    let text = r.text();
    assert!(
        text.contains(&url) && text.contains(&format!("at byte {cut}")),
        "{text}"
    );
    let r = remote.rget(&format!("/archive/record/0/{off}/warc"));
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains(&url), "{}", r.text());
    // The record's page too: the object's failure, not damage in it.
    let r = remote.get(&format!("/archive/record/0/{off}"));
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains(&url), "{}", r.text());
    // Records before the cut are still served.
    let r = remote.rget(IANA_HOME);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The objects in `bucket` under `prefix`, and whether an upload is still
/// pending anywhere in it.
fn objects_under(moto: &Moto, bucket: &str, prefix: &str) -> (Vec<String>, bool) {
    let keys = moto.keys(bucket);
    let pending = keys.iter().any(|k| k.starts_with("UPLOAD "));
    let mut objects: Vec<String> = keys.into_iter().filter(|k| k.starts_with(prefix)).collect();
    objects.sort();
    (objects, pending)
}

#[test]
fn split_and_recompress_write_objects_to_a_bucket_as_files_locally() {
    let moto = Moto::start();
    let env = moto.env();
    let tmp = tempfile::tempdir().unwrap();
    let inputs = [
        fixture("warcio/example.warc"),
        fixture("warcio/example-iana.org-chunked.warc"),
        fixture("pywb/example-extra.warc"),
    ];
    let inputs: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    moto.upload(
        "bucket",
        &[("keep/x".into(), fixture("warcio/example.warc"))],
    );

    // split: the same files, sizes and record counts; objects only, no
    // upload left pending.
    let split_args = |out: &str| -> Vec<String> {
        let mut a: Vec<String> = vec!["split".into()];
        a.extend(inputs.iter().cloned());
        a.extend(
            [
                "--max-size",
                "6KB",
                "--prefix",
                "part",
                "--host",
                "h",
                "-o",
                out,
            ]
            .map(String::from),
        );
        a
    };
    let local_dir = tmp.path().join("split");
    let la = split_args(&local_dir.display().to_string());
    let (rc, lout, err) = run_env(&[], &la.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(rc, 0, "{err}");
    let ra = split_args("s3://bucket/split/");
    let (rc, rout, err) = run_env(&env, &ra.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(rc, 0, "{err}");
    let local_listing = lout.replace(&format!("{}/", local_dir.display()), "");
    let remote_listing = rout.replace("s3://bucket/split/", "");
    assert_eq!(remote_listing, local_listing);
    assert!(remote_listing.lines().count() >= 3, "{remote_listing}");
    let (objects, pending) = objects_under(&moto, "bucket", "split/");
    assert!(!pending, "an upload was left pending");
    let names: Vec<String> = remote_listing
        .lines()
        .map(|l| format!("split/{}", l.split('\t').next().unwrap()))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(objects, sorted);
    // Each object reads as its local file (the new warcinfo records
    // differ by their ids and dates only: the two runs may fall in
    // different seconds, so a warcinfo's date is not compared).
    let cols = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| {
                let mut c: Vec<&str> = l.split('\t').skip(2).take(3).collect();
                if c.first() == Some(&"warcinfo") && c.len() > 1 {
                    c[1] = "-";
                }
                c.join("\t")
            })
            .collect()
    };
    for line in local_listing.lines() {
        let name = line.split('\t').next().unwrap();
        let (rc, r, err) = run_env(&env, &["ls", &format!("s3://bucket/split/{name}")]);
        assert_eq!(rc, 0, "{err}");
        let (_, l, _) = run_env(&[], &["ls", &local_dir.join(name).display().to_string()]);
        assert_eq!(cols(&r), cols(&l), "{name}");
    }
    // An existing object is not replaced without --force.
    let (rc, _, err) = run_env(&env, &ra.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ne!(rc, 0);
    assert!(
        err.contains("s3://bucket/split/") && err.contains("exists"),
        "{err}"
    );

    // recompress of several inputs to a prefix: the same bytes as the
    // local outputs.
    let local_rc = tmp.path().join("rc");
    let mut la = vec!["recompress".to_string()];
    la.extend(inputs.iter().cloned());
    la.extend(["-o".to_string(), local_rc.display().to_string()]);
    let (rc, _, err) = run_env(&[], &la.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(rc, 0, "{err}");
    let mut ra = vec!["recompress".to_string()];
    ra.extend(inputs.iter().cloned());
    ra.extend(["-o".to_string(), "s3://bucket/rc/".to_string()]);
    ra.extend(["-j".to_string(), "2".to_string()]);
    let (rc, _, err) = run_env(&env, &ra.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(rc, 0, "{err}");
    let (objects, pending) = objects_under(&moto, "bucket", "rc/");
    assert!(!pending);
    let mut want: Vec<String> = std::fs::read_dir(&local_rc)
        .unwrap()
        .map(|e| format!("rc/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    want.sort();
    assert_eq!(objects, want);
    assert_eq!(objects.len(), inputs.len());
    for key in &objects {
        let got = fetch_object(&env, &format!("s3://bucket/{key}"), tmp.path());
        let local = std::fs::read(local_rc.join(key.trim_start_matches("rc/"))).unwrap();
        assert!(got == local, "{key} differs from the local output");
    }
    // An input that cannot be read: its object does not appear, the others
    // do, nothing is left pending.
    let mut ra = vec!["recompress".to_string(), inputs[0].clone()];
    ra.push(tmp.path().join("missing.warc").display().to_string());
    ra.extend(["-o".to_string(), "s3://bucket/rc2/".to_string()]);
    let (rc, _, err) = run_env(&env, &ra.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ne!(rc, 0, "{err}");
    let (objects, pending) = objects_under(&moto, "bucket", "rc2/");
    assert!(!pending);
    assert_eq!(objects, vec!["rc2/example.warc.gz".to_string()], "{err}");
}

#[test]
fn fetch_coalesces_neighbouring_records_into_fewer_requests_with_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("pywb/iana.warc.gz");
    std::fs::copy(&src, tmp.path().join("iana.warc.gz")).unwrap();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let base = format!("http://127.0.0.1:{}/", srv.port);
    // Every other record, in the file's order: gaps between them.
    let lines: Vec<String> = index_lines(&src).into_iter().step_by(2).collect();
    assert!(lines.len() >= 4);
    let cdxj = tmp.path().join("i.cdxj");
    std::fs::write(&cdxj, lines.join("\n")).unwrap();
    let fetch = |out: &str, extra: &[&str]| {
        let out = tmp.path().join(out);
        let cdxj = cdxj.display().to_string();
        let out_s = out.display().to_string();
        let mut a = vec!["fetch", &cdxj, "--prefix", &base, "-o", &out_s];
        a.extend_from_slice(extra);
        srv.reset_count();
        let (rc, _, err) = run_env(&[], &a);
        assert_eq!(rc, 0, "{err}");
        (std::fs::read(out).unwrap(), srv.count().0, err)
    };
    let (one_by_one, gets0, err0) = fetch("a.warc.gz", &["--max-gap", "0"]);
    let (merged, gets, err) = fetch("b.warc.gz", &[]);
    assert_eq!(
        gets0,
        lines.len() as u64,
        "--max-gap 0: a request per record"
    );
    assert_eq!(gets, 1, "the default gap merges them all");
    assert!(err0.contains(&format!("with {gets0} requests")), "{err0}");
    assert!(err.contains("with 1 requests"), "{err}");
    // The stored records, in the index's order, after the warcinfo.
    let want = indexed_bytes(&src, &lines);
    assert!(one_by_one.ends_with(&want), "--max-gap 0 output differs");
    assert!(merged.ends_with(&want), "coalesced output differs");
    let (rc, ls, err) = run_env(
        &[],
        &["ls", &tmp.path().join("b.warc.gz").display().to_string()],
    );
    assert_eq!(rc, 0, "{err}");
    assert_eq!(ls.lines().count(), 1 + lines.len(), "{ls}");

    // A reset mid-merged-request is resumed: the same bytes, one more GET.
    srv.faults(&["reset"]);
    let (again, gets, err) = fetch("c.warc.gz", &[]);
    // (The warcinfo before them is compressed anew each time: its length
    // may differ by a byte or two, its date being another.)
    assert!(again.ends_with(&want), "{err}");
    assert_eq!(gets, 2, "{err}");
}

#[test]
fn serve_loads_cdxj_from_a_url_and_serves_within_a_fetch_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let iana = fixture("pywb/iana.warc.gz");
    std::fs::copy(&iana, tmp.path().join("iana.warc.gz")).unwrap();
    std::fs::write(tmp.path().join("iana.cdxj"), index_lines(&iana).join("\n")).unwrap();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url("iana.warc.gz");
    let local = serve_file(&iana, &tmp.path().join("l.redb"));
    // The index read from its URL: the archive itself is not scanned.
    srv.reset_count();
    let cdxj = srv.url("iana.cdxj");
    let remote = serve_env(&[], &[&url, "--cdxj", &cdxj], &tmp.path().join("r.redb"));
    let (gets, _) = srv.count();
    let cdxj_len = std::fs::metadata(tmp.path().join("iana.cdxj"))
        .unwrap()
        .len();
    assert!(gets <= 2, "{gets} GETs to load a {cdxj_len}-byte index");
    srv.reset_count();
    let r = remote.rget(IANA_CSS);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.body == local.rget(IANA_CSS).body);
    assert_eq!(srv.count().0, 1, "one range request for the record");
    // A budget smaller than any record: each is streamed from its one
    // request instead of fetched whole, with the same bytes.
    let tight = serve_env(
        &[("WARCHEST_SERVE_FETCH_BUDGET", "1".to_string())],
        &[&url, "--cdxj", &cdxj],
        &tmp.path().join("t.redb"),
    );
    for page in [IANA_HOME, IANA_CSS, IANA_REVISIT] {
        let r = tight.rget(page);
        assert_eq!(r.status, 200, "{page}: {}", r.text());
        assert!(r.body == local.rget(page).body, "{page} differs");
    }
}

/// The reading commands read a WACZ named by URL (HTTP, S3, a prefix
/// holding it) as its archive files, as they read the local WACZ: its
/// directory by small ranges, each archive file where it lies. They used
/// to read the ZIP's bytes and find no record.
#[test]
fn reading_commands_read_a_wacz_by_url_as_the_local_one() {
    let tmp = tempfile::tempdir().unwrap();
    let wacz = tmp.path().join("iana.wacz");
    crate::serve::create_iana_wacz(&wacz);
    let local = wacz.to_string_lossy().into_owned();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let moto = Moto::start();
    let env = moto.env();
    moto.upload("bucket", &[("w/iana.wacz".into(), wacz.clone())]);
    let member = "#archive/iana.warc.gz";
    for (url, env) in [
        (srv.url("iana.wacz"), &[][..]),
        ("s3://bucket/w/iana.wacz".to_string(), &env[..]),
        ("s3://bucket/w/".to_string(), &env[..]),
    ] {
        let named = |s: &str| s.replace(&local, "L");
        let object = url.trim_end_matches('/').to_string()
            + if url.ends_with('/') { "/iana.wacz" } else { "" };
        for args in [
            vec!["ls"],
            vec!["ls", "-j", "2"],
            vec!["index"],
            vec!["check"],
            vec!["validate", "-j", "2"],
        ] {
            let (lc, lo, le) = run_env(&[], &[&args[..], &[local.as_str()]].concat());
            let (rc, ro, re) = run_env(env, &[&args[..], &[url.as_str()]].concat());
            assert_eq!(rc, lc, "{args:?} {url}: {re}");
            assert_ne!(rc, 2, "{args:?} {url}: {re}");
            assert!(!lo.is_empty(), "{args:?}");
            assert_eq!(
                named(&ro.replace(&object, "L")),
                named(&lo),
                "{args:?} {url}: {re} / {le}"
            );
        }
        // One record by its offset in the archive file, as from the local
        // WACZ's archive file.
        let (lc, lo, _) = run_env(
            &[],
            &["extract", &format!("{local}{member}"), "--offset", "0"],
        );
        let (rc, ro, re) = run_env(
            env,
            &["extract", &format!("{object}{member}"), "--offset", "0"],
        );
        assert_eq!((lc, rc), (0, 0), "{re}");
        assert!(ro == lo && ro.starts_with("WARC/"), "{url}");
    }
    // The WACZ is listed once a run (one HEAD), however many times its
    // archive file is opened (the expansion, each thread).
    srv.reset_count();
    let (c, _, e) = run_env(&[], &["ls", "-j", "2", &srv.url("iana.wacz")]);
    assert_eq!(c, 0, "{e}");
    assert_eq!(srv.count().1, 1, "{:?}", srv.log());
    // A command that reads files on disk refuses it, naming itself.
    let (c, _, e) = run_env(
        &[],
        &["dedupe", &srv.url("iana.wacz"), "-o", "/nonexistent"],
    );
    assert_eq!(c, 2);
    assert!(
        e.contains("`warchest dedupe` reads archive files on disk"),
        "{e}"
    );
}

#[test]
fn serve_of_a_wacz_by_url_answers_as_of_the_local_wacz() {
    let tmp = tempfile::tempdir().unwrap();
    let iana = fixture("pywb/iana.warc.gz");
    let wacz = tmp.path().join("iana.wacz");
    crate::serve::create_iana_wacz(&wacz);
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url("iana.wacz");
    let local = serve_file(&wacz, &tmp.path().join("l.redb"));
    let remote = serve_env(&[], &[&url], &tmp.path().join("r.redb"));

    // The CDX API: the same captures, named `iana.wacz#archive/NAME`.
    let cdx = "/archive/cdx?url=http://www.iana.org/_css/2013.1/screen.css&output=json";
    let (l, r) = (local.get(cdx), remote.get(cdx));
    assert_eq!(r.status, 200, "{}", remote.log());
    assert_eq!(r.text(), l.text());
    assert!(
        r.text().contains("iana.wacz#archive/iana.warc.gz") && r.text().lines().count() > 5,
        "{}",
        r.text()
    );

    // A raw capture, read with one range request at the member's start
    // plus the record's offset; a revisit (its original read too).
    srv.reset_count();
    let r = remote.rget(IANA_CSS);
    assert_eq!(r.status, 200, "{} {}", r.text(), remote.log());
    assert_eq!(srv.count(), (1, 0), "a record costs one range request");
    assert!(r.body == local.rget(IANA_CSS).body, "bodies differ");
    for path in [IANA_HOME, IANA_REVISIT] {
        let (l, r) = (local.rget(path), remote.rget(path));
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert!(
            !r.body.is_empty() && r.body == l.body,
            "{path}: bodies differ"
        );
    }

    // A record download: the record's bytes as stored in the WARC file
    // (offsets are the member's), as from the local WACZ.
    let (off, len) = offset_length(
        &index_lines(&iana),
        "http://www.iana.org/",
        "20140126200624",
    );
    let stored = std::fs::read(&iana).unwrap();
    let want = &stored[off as usize..(off + len) as usize];
    let id = (0..2)
        .find(|id| local.rget(&format!("/archive/record/{id}/{off}/warc")).body == want)
        .expect("the record, downloaded from the local WACZ");
    let r = remote.rget(&format!("/archive/record/{id}/{off}/warc"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.body == want, "record downloads differ");

    // From S3, by a prefix that holds the WACZ: the same.
    let moto = Moto::start();
    let env = moto.env();
    moto.upload("bucket", &[("w/iana.wacz".into(), wacz.clone())]);
    let s3 = serve_env(&env, &["s3://bucket/w/"], &tmp.path().join("s.redb"));
    let (l, r) = (local.get(cdx), s3.get(cdx));
    assert_eq!(r.status, 200, "{}", s3.log());
    assert_eq!(r.text(), l.text());
    let r = s3.rget(IANA_CSS);
    assert_eq!(r.status, 200, "{} {}", r.text(), s3.log());
    assert!(r.body == local.rget(IANA_CSS).body, "bodies differ (S3)");
    let r = s3.rget(&format!("/archive/record/{id}/{off}/warc"));
    assert!(r.body == want, "record downloads differ (S3)");
}

/// `lines` as a gzip file of one member per `per` lines (as Common Crawl's
/// `cdx-*.gz` and py-wacz's `index.cdx.gz` are written).
fn gzip_members(lines: &[String], per: usize) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    for chunk in lines.chunks(per) {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        for l in chunk {
            writeln!(e, "{l}").unwrap();
        }
        out.extend(e.finish().unwrap());
    }
    out
}

#[test]
fn fetch_and_serve_read_a_gzip_index_as_the_plain_one() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("pywb/iana.warc.gz");
    std::fs::copy(&src, tmp.path().join("iana.warc.gz")).unwrap();
    let lines = index_lines(&src);
    std::fs::write(tmp.path().join("i.cdxj"), lines.join("\n") + "\n").unwrap();
    // Named without .gz: the magic bytes tell, not the name.
    std::fs::write(tmp.path().join("i.idx"), gzip_members(&lines, 7)).unwrap();
    let mut bad = gzip_members(&lines, 7);
    let n = bad.len();
    bad[n / 2] ^= 0x55;
    bad[n / 2 + 1] ^= 0x55;
    std::fs::write(tmp.path().join("bad.cdxj.gz"), &bad).unwrap();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let moto = Moto::start();
    let env = moto.env();
    moto.upload(
        "bucket",
        &[
            (
                "c/iana.warc.gz".to_string(),
                tmp.path().join("iana.warc.gz"),
            ),
            ("c/i.idx".to_string(), tmp.path().join("i.idx")),
            ("c/bad.cdxj.gz".to_string(), tmp.path().join("bad.cdxj.gz")),
        ],
    );
    // The stored records, in the index's order: what every fetch writes
    // after its warcinfo (which names the index, so differs).
    let want = indexed_bytes(&src, &lines);
    let local_dir = format!("{}/", tmp.path().display());
    let fetch = |index: String, out: &str| {
        let out = tmp.path().join(out);
        let out_s = out.display().to_string();
        let a = ["fetch", &index, "--prefix", &local_dir, "-o", &out_s];
        let (rc, _, err) = run_env(&env, &a);
        assert_eq!(rc, 0, "{index}: {err}");
        assert!(
            err.contains(&format!("{} records selected", lines.len())),
            "{err}"
        );
        let got = std::fs::read(out).unwrap();
        assert!(got.ends_with(&want), "{index}: fetched records differ");
        got.len()
    };
    let plain = fetch(format!("{local_dir}i.cdxj"), "plain.warc.gz");
    for (i, index) in [
        format!("{local_dir}i.idx"),
        srv.url("i.idx"),
        "s3://bucket/c/i.idx".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let len = fetch(index.clone(), &format!("gz{i}.warc.gz"));
        // Only the warcinfo's index name differs.
        assert!(len.abs_diff(plain) < 200, "{index}: {len} vs {plain} bytes");
    }
    // A corrupt gzip index is an error naming it and the line, never a
    // shorter selection.
    for index in [
        format!("{local_dir}bad.cdxj.gz"),
        srv.url("bad.cdxj.gz"),
        "s3://bucket/c/bad.cdxj.gz".to_string(),
    ] {
        let out = tmp.path().join("bad.warc.gz").display().to_string();
        let (rc, _, err) = run_env(&env, &["fetch", &index, "-o", &out]);
        assert_ne!(rc, 0, "{index}: {err}");
        assert!(
            err.contains("bad.cdxj.gz") && err.contains("line") && err.contains("gzip"),
            "{index}: {err}"
        );
        assert!(!Path::new(&out).exists(), "{index}: an output was written");
    }

    // serve --cdxj takes the gzip index too, by URL: the same capture.
    let local = serve_file(&src, &tmp.path().join("l.redb"));
    let remote = serve_env(
        &[],
        &[&srv.url("iana.warc.gz"), "--cdxj", &srv.url("i.idx")],
        &tmp.path().join("r.redb"),
    );
    let r = remote.rget(IANA_CSS);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.body == local.rget(IANA_CSS).body);
}

/// Copies the ZIP `from` to `to` without its `indexes/` members, adding
/// `extra` (name, bytes) members, each as it was stored (python's zipfile:
/// another writer than ours).
fn rezip(from: &Path, to: &Path, extra: &[(&str, &[u8])]) {
    let dir = to.parent().unwrap();
    let mut files = Vec::new();
    for (i, (name, bytes)) in extra.iter().enumerate() {
        let p = dir.join(format!("extra{i}"));
        std::fs::write(&p, bytes).unwrap();
        files.push(format!("({name:?}, {:?})", p.display().to_string()));
    }
    let script = format!(
        r#"
import zipfile
src = zipfile.ZipFile({from:?})
with zipfile.ZipFile({to:?}, 'w') as out:
    for i in src.infolist():
        if not i.filename.startswith('indexes/'):
            out.writestr(i, src.read(i.filename), compress_type=i.compress_type)
    for name, path in [{files}]:
        out.write(path, name, compress_type=zipfile.ZIP_DEFLATED)
"#,
        from = from.display().to_string(),
        to = to.display().to_string(),
        files = files.join(", ")
    );
    let st = Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn serve_of_a_wacz_by_url_uses_its_own_index_with_far_fewer_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let iana = fixture("pywb/iana.warc.gz");
    let example = fixture("pywb/example.warc.gz");
    let wacz = tmp.path().join("cdxj.wacz");
    crate::serve::create_iana_wacz(&wacz);
    // The same WACZ with no index, with its index as py-wacz's
    // `index.cdx.gz` (gzip members of lines), and with a cut one.
    let lines: Vec<String> = [&iana, &example]
        .iter()
        .flat_map(|f| index_lines(f))
        .collect();
    let gz = gzip_members(&lines, 50);
    rezip(&wacz, &tmp.path().join("none.wacz"), &[]);
    rezip(
        &wacz,
        &tmp.path().join("gz.wacz"),
        &[("indexes/index.cdx.gz", &gz)],
    );
    rezip(
        &wacz,
        &tmp.path().join("cut.wacz"),
        &[("indexes/index.cdx.gz", &gz[..gz.len() * 2 / 3])],
    );
    // And with a line of its index that is not CDXJ.
    let mut garbled = lines.join("\n").into_bytes();
    garbled.extend_from_slice(b"\nthis is not an index line\n");
    rezip(
        &wacz,
        &tmp.path().join("garbled.wacz"),
        &[("indexes/index.cdxj", &garbled)],
    );
    let srv = RangeServer::start(tmp.path(), 5.0);
    let local = serve_file(&wacz, &tmp.path().join("l.redb"));
    // Small ranges, so that a scan's requests show against the index's
    // one (the fixtures are small beside real WACZ files).
    let small = [
        ("WARCHEST_REMOTE_MIN_CHUNK", "16384".to_string()),
        ("WARCHEST_REMOTE_CHUNK", "16384".to_string()),
    ];
    let mut gets = Vec::new();
    let mut servers = Vec::new();
    for name in [
        "cdxj.wacz",
        "gz.wacz",
        "none.wacz",
        "cut.wacz",
        "garbled.wacz",
    ] {
        srv.reset_count();
        let s = serve_env(
            &small,
            &[&srv.url(name)],
            &tmp.path().join(format!("{name}.redb")),
        );
        gets.push(srv.count().0);
        servers.push((name, s));
    }
    eprintln!("GETs to index cdxj.wacz, gz.wacz, none.wacz, cut.wacz, garbled.wacz: {gets:?}");
    let size = std::fs::metadata(&iana).unwrap().len() + std::fs::metadata(&example).unwrap().len();
    // A scan reads every byte of the archive files in 16 KiB ranges; the
    // index is one range request, besides the ZIP directory's few. A
    // scan's count varies by a request or so between runs (read-ahead
    // races the end of the file), so every count is held to the scan's
    // floor, never to another run's count (6 and 6 against 55 to 56, a
    // floor of 48, on 29 November 2026).
    let floor = size / 16384;
    assert!(gets[2] >= floor, "{gets:?}");
    assert!(gets[0] * 5 < floor, "index.cdxj: {gets:?}");
    assert!(gets[1] * 5 < floor, "index.cdx.gz: {gets:?}");
    // The cut index is not used (with a warning), its files scanned.
    assert!(gets[3] >= floor, "{gets:?}");
    // The log is gathered by a thread of its own: waited for.
    let log = servers[3].1.log_with("scanned");
    assert!(
        log.contains("index.cdx.gz is not used") && log.contains("scanned"),
        "{log}"
    );
    let log = servers[2].1.log_with("no indexes/index.cdxj");
    assert!(log.contains("no indexes/index.cdxj"), "{log}");
    // An index with a line that is not CDXJ is not trusted either.
    assert!(gets[4] >= floor, "{gets:?}");
    let log = servers[4].1.log_with("scanned");
    assert!(
        log.contains("index.cdxj is not used") && log.contains("1 lines are not CDXJ"),
        "{log}"
    );

    // The same CDX API answers and captures, whichever way indexed (the
    // WACZ's name aside).
    let cdx = [
        "/archive/cdx?url=http://www.iana.org/*&output=json",
        "/archive/cdx?url=http://example.com/*&output=json",
    ];
    for q in cdx {
        let want = local.get(q).text().replace("cdxj.wacz#", "W#");
        assert!(want.lines().count() >= 2, "{want}");
        for (name, s) in &servers {
            let r = s.get(q);
            assert_eq!(r.status, 200, "{name}: {}", s.log());
            assert_eq!(
                r.text().replace(&format!("{name}#"), "W#"),
                want,
                "{name}: {q}"
            );
        }
    }
    for page in [IANA_HOME, IANA_CSS, IANA_REVISIT] {
        let want = local.rget(page).body;
        for (name, s) in &servers {
            srv.reset_count();
            let r = s.rget(page);
            assert_eq!(r.status, 200, "{name} {page}: {}", r.text());
            assert!(r.body == want, "{name} {page}: bodies differ");
        }
    }
    // A record is still one range request (member start + its offset).
    srv.reset_count();
    assert_eq!(servers[0].1.rget(IANA_CSS).status, 200);
    assert_eq!(srv.count(), (1, 0), "a record costs one range request");
}
