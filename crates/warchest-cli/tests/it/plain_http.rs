//! Archives on plain HTTP servers as a new user meets them (issue 34):
//! Python's own `http.server` (no byte ranges: a Range request gets the
//! whole file with 200, and an HTML error page for a missing file), a
//! missing object under `fetch`, a redirect loop, and errors said in the
//! toolkit's words (the URL, the status and the byte offset).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::{bin, fixture};
use crate::remote::servers::RangeServer;

/// Python's `http.server` serving `root` on 127.0.0.1 (a free port), its
/// request log in a file; killed when dropped.
struct PlainServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl PlainServer {
    fn start(root: &Path, log: PathBuf) -> PlainServer {
        let script = "import functools, http.server, sys\n\
            h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n\
            s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), h)\n\
            print(s.server_address[1], flush=True)\n\
            s.serve_forever()\n";
        let mut child = Command::new("python3")
            .args(["-u", "-c", script])
            .arg(root)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("port");
        PlainServer { child, port, log }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The GET requests logged so far.
    fn gets(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"GET "))
            .count()
    }
}

impl Drop for PlainServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs warchest with short remote timeouts and a few retries.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin()
        .args(args)
        .env("WARCHEST_REMOTE_TIMEOUT", "5")
        .env("WARCHEST_REMOTE_RETRIES", "4")
        .env("WARCHEST_REMOTE_BACKOFF_MS", "10")
        .output()
        .expect("run warchest");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// object_store's wording, which must never reach the user.
fn assert_own_words(err: &str) {
    for leak in [
        "Object at location",
        "Error performing",
        "non-2xx",
        "Generic",
        "Range request not supported",
        "<html",
        "<!DOCTYPE",
    ] {
        assert!(!err.contains(leak), "{leak:?} in: {err}");
    }
}

/// A directory holding copies of the fixtures `names`.
fn served(names: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for n in names {
        std::fs::copy(
            fixture(n),
            tmp.path().join(Path::new(n).file_name().unwrap()),
        )
        .unwrap();
    }
    tmp
}

#[test]
fn fetch_of_a_missing_object_is_one_line_one_request_and_no_output() {
    let tmp = served(&["pywb/iana.warc.gz"]);
    let (rc, idx, err) = run(&["index", &fixture("pywb/iana.warc.gz").display().to_string()]);
    assert_eq!(rc, 0, "{err}");
    let n = idx.lines().count();
    assert!(n >= 5, "{n} records");
    let cdxj = tmp.path().join("i.cdxj");
    std::fs::write(&cdxj, &idx).unwrap();
    let srv = PlainServer::start(tmp.path(), tmp.path().join("log"));
    // As after a typo: the prefix names a folder where the file is not.
    let prefix = format!("{}nonexist/", srv.base());
    let missing = format!("{prefix}iana.warc.gz");
    let fetch = |out: &Path, extra: &[&str]| {
        let cdxj = cdxj.display().to_string();
        let out = out.display().to_string();
        let mut a = vec!["fetch", &cdxj, "--prefix", &prefix, "-o", &out];
        a.extend_from_slice(extra);
        run(&a)
    };
    let out = tmp.path().join("o.warc.gz");
    let (rc, _, err) = fetch(&out, &[]);
    assert_eq!(rc, 1, "{err}");
    assert_own_words(&err);
    let want = format!("warchest: {missing}: 404 Not Found: {n} records not fetched");
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("nonexist"))
            .collect::<Vec<_>>(),
        [want.as_str()],
        "{err}"
    );
    assert!(
        err.contains(&format!("fetched 0 of {n} records")),
        "the summary: {err}"
    );
    assert!(err.lines().count() <= 4, "{err}");
    assert!(!out.exists(), "an output of nothing fetched");
    assert!(!tmp.path().join("o.warc.gz.open").exists());
    assert_eq!(srv.gets(), 1, "one request: the object is known missing");

    // One request per record asked for: once the object is known missing,
    // none more than were already in flight (two).
    let before = srv.gets();
    let (rc, _, err) = fetch(
        &tmp.path().join("p.warc.gz"),
        &["--max-gap", "0", "-j", "2"],
    );
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains(&want), "{err}");
    let made = srv.gets() - before;
    assert!((1..=2).contains(&made), "{made} requests for {n} records");
}

/// A read on two threads of a server without ranges asks once more than
/// a read on one (the range probe of the read at offsets), not once per
/// layer: plain files (which would be read in chunks) and gzip files.
#[test]
fn a_server_without_ranges_is_probed_once_more_on_two_threads() {
    let names = ["warcio/example.warc", "warcio/example.warc.gz"];
    let tmp = served(&names);
    let srv = PlainServer::start(tmp.path(), tmp.path().join("log"));
    for name in names {
        let file = Path::new(name).file_name().unwrap().to_str().unwrap();
        let url = format!("{}{file}", srv.base());
        let mut made = Vec::new();
        for jobs in ["1", "2"] {
            let before = srv.gets();
            let (rc, out, err) = run(&["ls", "-j", jobs, &url]);
            assert!(rc == 0 && !out.is_empty(), "{url}: {err}");
            made.push(srv.gets() - before);
        }
        assert_eq!(
            made[1],
            made[0] + 1,
            "{url}: GETs with -j 1, -j 2: {made:?}"
        );
    }
    // The probe's blocks, given up for streaming, print no stats line.
    let url = format!("{}example.warc.gz", srv.base());
    let out = bin()
        .args(["ls", "-j", "2", &url])
        .env("WARCHEST_REMOTE_STATS", "1")
        .output()
        .expect("run warchest");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("remote blocks of"), "{err}");
}

#[test]
fn a_server_without_ranges_is_streamed_by_sequential_reads() {
    let names = [
        "warcio/example.warc.gz",
        "warcio/example.warc",
        "warcio/example.arc.gz",
    ];
    let tmp = served(&names);
    let srv = PlainServer::start(tmp.path(), tmp.path().join("log"));
    let local_dir = format!("{}/", tmp.path().display());
    for name in names {
        let file = Path::new(name).file_name().unwrap().to_str().unwrap();
        let url = format!("{}{file}", srv.base());
        let local = tmp.path().join(file).display().to_string();
        for cmd in [
            &["ls"][..],
            &["ls", "-j", "2"],
            &["index"],
            &["check"],
            &["validate"],
            &["stats"],
        ] {
            let (rc, rout, rerr) = run(&[cmd, &[url.as_str()]].concat());
            let (lc, lout, _) = run(&[cmd, &[local.as_str()]].concat());
            assert_eq!(rc, lc, "{cmd:?} {url}: {rerr}");
            assert!(!lout.is_empty(), "{cmd:?} {local}");
            assert_eq!(
                rout.replace(&srv.base(), &local_dir),
                lout,
                "{cmd:?} {url}: {rerr}"
            );
        }
    }
    // Writing commands read the URL as well.
    let url = format!("{}example.warc.gz", srv.base());
    let out = tmp.path().join("f.warc.gz").display().to_string();
    let (rc, _, err) = run(&["filter", &url, "-o", &out, "warc-type == \"response\""]);
    assert_eq!(rc, 0, "{err}");
    let (rc, ls, _) = run(&["ls", &out]);
    assert!(rc == 0 && ls.contains("response"), "{ls}");
    let arc = format!("{}example.arc.gz", srv.base());
    let out = tmp.path().join("c.warc.gz").display().to_string();
    let (rc, _, err) = run(&["convert", &arc, "-o", &out]);
    assert_eq!(rc, 0, "{err}");

    // Random access needs ranges: one line saying so.
    let (rc, _, err) = run(&["extract", &url, "--offset", "1000", "--length", "500"]);
    assert_ne!(rc, 0);
    assert_own_words(&err);
    let server = format!("http://127.0.0.1:{}", srv.port);
    let line = format!("{server} does not support byte ranges: needed for");
    assert!(err.contains(&line), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // fetch: one line for the object.
    let (_, idx, _) = run(&[
        "index",
        &fixture("warcio/example.warc.gz").display().to_string(),
    ]);
    let cdxj = tmp.path().join("i.cdxj");
    std::fs::write(&cdxj, &idx).unwrap();
    let out = tmp.path().join("o.warc.gz");
    let (rc, _, err) = run(&[
        "fetch",
        &cdxj.display().to_string(),
        "--prefix",
        &srv.base(),
        "-o",
        &out.display().to_string(),
    ]);
    assert_eq!(rc, 1, "{err}");
    assert_own_words(&err);
    let want = format!(
        "warchest: {url}: {server} does not support byte ranges: needed for fetch: {} records not fetched",
        idx.lines().count()
    );
    assert!(err.lines().any(|l| l == want), "{err}");
    assert!(!out.exists());
}

#[test]
fn http_errors_name_the_url_the_status_and_the_offset_in_few_words() {
    let tmp = served(&["warcio/example.warc.gz"]);
    let srv = PlainServer::start(tmp.path(), tmp.path().join("log"));
    let url = format!("{}nonexist/example.warc.gz", srv.base());
    // HEAD, then nothing: the status line.
    let (rc, _, err) = run(&["ls", &url]);
    assert_ne!(rc, 0);
    assert_own_words(&err);
    assert!(err.contains(&url) && err.contains("404 Not Found"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A GET of a range: the status line and a short excerpt of the HTML
    // error page, on one line, at the byte asked for.
    let (rc, _, err) = run(&["extract", &url, "--offset", "123", "--length", "100"]);
    assert_ne!(rc, 0);
    assert_own_words(&err);
    assert!(
        err.contains(&format!("{url}: at byte 123: 404 Not Found (\"")),
        "{err}"
    );
    assert!(err.contains("File not found"), "the excerpt: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.len() < 400, "{err}");
}

#[test]
fn a_redirect_loop_is_one_error_not_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url("_loop/a");
    let (rc, _, err) = run(&["ls", &url]);
    assert_ne!(rc, 0);
    assert_own_words(&err);
    assert!(
        err.contains("redirect loop") && err.contains("_loop/"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (gets, heads) = srv.count();
    // One round of redirects (reqwest follows ten), not one per retry.
    assert!(gets + heads <= 12, "{gets} GET, {heads} HEAD");
}

/// A proxy in the environment is honoured for plain-HTTP reads, by one
/// thread and by blocks, as reqwest honours it: the direct transport of
/// the remote crate steps aside when `HTTP_PROXY` is set (docs/remote.md,
/// "The transport of plain-HTTP reads"). Through a proxy that is not
/// there, the read cannot connect and the server sees no request; without
/// it, the same read works.
#[test]
fn a_proxy_in_the_environment_is_used_for_plain_http() {
    let tmp = served(&["warcio/example.warc.gz"]);
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url("example.warc.gz");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for j in ["1", "2"] {
        let out = bin()
            .args(["ls", "-j", j, &url])
            .env("HTTP_PROXY", format!("http://127.0.0.1:{closed}"))
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .env("WARCHEST_REMOTE_RETRIES", "1")
            .env("WARCHEST_REMOTE_BACKOFF_MS", "10")
            .output()
            .expect("run warchest");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "-j {j}: {err}");
        assert!(err.contains("cannot connect"), "-j {j}: {err}");
    }
    assert_eq!(
        srv.count(),
        (0, 0),
        "requests reached the server, not the proxy"
    );
    let (rc, out, err) = run(&["ls", "-j", "2", &url]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.lines().count() > 1, "{out}");
}
