//! Helpers shared by the CLI integration tests: running the binary, temp
//! output listings, servers started as child processes, and (from the
//! library's tests, the same file) fixtures, the Python check and noise.
// Each test file uses a part of them.
#![allow(dead_code, unused_imports)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

// One file for both crates' tests: fixtures are found the same way from
// either crate directory.
#[path = "../../../warchest/tests/it/common.rs"]
mod library;
pub use library::{fixture, fixture_files, fixtures, noise, python_has, text_response};

/// The path of the `warchest` binary built for these tests.
pub fn bin_path() -> &'static str {
    env!("CARGO_BIN_EXE_warchest")
}

/// A command running the `warchest` binary.
pub fn bin() -> Command {
    Command::new(bin_path())
}

/// Runs `cmd` to its end: exit code (-1 when killed), stdout, stderr.
pub fn run(cmd: &mut Command) -> (i32, Vec<u8>, String) {
    let out = cmd.output().expect("run warchest");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `warchest` with `args` to its end.
pub fn warchest<A: AsRef<OsStr>>(args: &[A]) -> Output {
    bin().args(args).output().expect("run warchest")
}

/// The files in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// The first line a started server prints on stdout (where it listens),
/// without its line end. Its stdout must be piped; it is taken.
pub fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout piped"))
        .read_line(&mut line)
        .expect("read the server's first line");
    line.trim().to_string()
}

/// Runs `warchest extract FILE --offset OFFSET --payload EXTRA...` to its end.
pub fn extract_payload<I, A>(file: &Path, offset: u64, extra: I) -> (i32, Vec<u8>, String)
where
    I: IntoIterator<Item = A>,
    A: AsRef<OsStr>,
{
    run(bin()
        .arg("extract")
        .arg(file)
        .arg("--offset")
        .arg(offset.to_string())
        .arg("--payload")
        .args(extra))
}

/// Sends `raw` on a new connection to a server (serve or proxy) and reads
/// the answer (until the server closes, or 30 s).
pub fn exchange(addr: impl std::net::ToSocketAddrs, raw: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let _ = c.write_all(raw);
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Trickles `head` into every one of `slow`, a byte a connection a second,
/// for `seconds` seconds (slowloris); each second, calls `request` (a
/// normal request, which asserts its answer) `per_second` times, and
/// asserts that none took 2 s or more beside the slow connections.
pub fn trickle_beside(
    slow: &mut [std::net::TcpStream],
    head: &[u8],
    seconds: usize,
    per_second: usize,
    mut request: impl FnMut(),
) {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let mut worst = Duration::ZERO;
    let start = Instant::now();
    for second in 0..seconds {
        for c in slow.iter_mut() {
            let _ = c.write_all(&[head[second % head.len()]]);
        }
        for _ in 0..per_second {
            let t = Instant::now();
            request();
            worst = worst.max(t.elapsed());
        }
        let next = Duration::from_secs(second as u64 + 1);
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    assert!(
        worst < Duration::from_secs(2),
        "a request took {worst:?} beside the slow connections"
    );
}

/// A DNS server on 127.0.0.1 that knows no address of any name (an empty
/// NOERROR answer to every query), for `--dns-server`: a lookup then
/// fails without reaching the network (the resolver falls back to the
/// system's only when no server answers). Answers at most 64 queries,
/// waiting at most 60 s for each, then stops.
pub fn no_address_dns() -> String {
    let dns = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = dns.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        dns.set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let mut b = [0u8; 512];
        for _ in 0..64 {
            let Ok((n, from)) = dns.recv_from(&mut b) else {
                return;
            };
            if n < 12 {
                continue;
            }
            let mut answer = b[..n].to_vec();
            answer[2] |= 0x80; // a response
            answer[3] = 0x80; // recursion available, NOERROR, no answers
            let _ = dns.send_to(&answer, from);
        }
    });
    addr
}
