//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `../shared/fixtures`, beside the repository. The tests need it: CI
/// checks the repository out with shared/ beside it.
pub fn fixtures() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    assert!(
        dir.is_dir(),
        "fixtures not found at {}: clone the repository with shared/ beside it",
        dir.display()
    );
    dir.canonicalize().expect("fixtures dir")
}

/// Every fixture file whose name ends in one of `exts`, sorted.
pub fn fixture_files(exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = fixtures();
    for sub in std::fs::read_dir(&root).expect("read fixtures") {
        let sub = sub.expect("entry").path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).expect("read fixture dir") {
            let f = f.expect("entry").path();
            let name = f
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            if f.is_file() && exts.iter().any(|e| name.ends_with(e)) {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

/// Every WARC fixture (plain, gzip, LZ4, and the whole-file gzip `.bad` ones).
pub fn warc_fixtures() -> Vec<PathBuf> {
    fixture_files(&[
        ".warc",
        ".warc.gz",
        ".warc.lz4",
        ".warc.zst",
        ".warc.gz.bad",
    ])
}

/// A fixture by its path under fixtures/.
pub fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

/// A WARC/1.1 response record of `uri` at `date` (a WARC-Date): an HTTP
/// 200 of `body` as text/plain; `n` makes its record id.
pub fn text_response(n: usize, uri: &str, date: &str, body: &str) -> Vec<u8> {
    let http = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{n:012}>\r\n\
WARC-Date: {date}\r\nWARC-Target-URI: {uri}\r\n\
Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        http.len()
    )
    .into_bytes()
}

/// True when python3 can import `module` (a peer of the differential tests);
/// fails the test with a clear message when it cannot, unless
/// WARCHEST_SKIP_PYTHON is set (then false: the caller skips).
pub fn python_has(module: &str) -> bool {
    if std::env::var_os("WARCHEST_SKIP_PYTHON").is_some() {
        return false;
    }
    let ok = std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with {module} is needed (pip install -r tests/requirements.txt), or set WARCHEST_SKIP_PYTHON=1"
    );
    true
}

/// Deterministic incompressible bytes (xorshift64 from `seed`).
pub fn noise(n: usize, mut seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.extend_from_slice(&seed.to_le_bytes());
    }
    v.truncate(n);
    v
}

/// xorshift64*: a small seeded generator, enough for damage patterns
/// (the same seed gives the same cases on every machine).
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The per-record compressions the writer tests go through.
pub fn compressions() -> Vec<warchest::write::Compression> {
    use warchest::write::Compression;
    vec![
        Compression::None,
        Compression::Gzip(6),
        Compression::Zstd {
            level: 3,
            dictionary: None,
        },
    ]
}

/// The name the test harness knows test `name` of module `module` by
/// (`module_path!()` of the test: the binary's own name dropped), so a test
/// can run itself again in a child process with `--exact`.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, m)) => format!("{m}::{name}"),
        None => name.to_string(),
    }
}

/// This process's peak resident memory (VmHWM), where /proc tells it.
pub fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
