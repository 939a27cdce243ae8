//! Serves the generated test web until stdin closes (or for `--seconds N`),
//! for bench/ and for trying a crawl by hand.
//!
//! ```text
//! cargo run -p warchest-crawl --features testweb --example testweb -- \
//!     --sites 50 --pages 400 [--no-special] [--slow-ms 300] [--seconds N]
//! ```
//!
//! Prints, one a line: `addr ADDR`, `resolve HOST:ADDR` for every host, and
//! `seed URL` for every site root; on exit, `served N` on stderr.

use std::io::BufRead;
use std::time::Duration;

use warchest_crawl::testweb::{TestWeb, TestWebConfig};

fn main() {
    let mut cfg = TestWebConfig::default();
    let mut seconds: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |what: &str| -> u64 {
            match args.next().and_then(|v| v.parse().ok()) {
                Some(v) => v,
                None => {
                    eprintln!("testweb: {what} needs a number");
                    std::process::exit(2);
                }
            }
        };
        match a.as_str() {
            "--sites" => cfg.sites = num("--sites") as usize,
            "--pages" => cfg.pages = num("--pages") as usize,
            "--slow-ms" => cfg.slow_delay = Duration::from_millis(num("--slow-ms")),
            "--big-bytes" => cfg.big_size = num("--big-bytes") as usize,
            "--seconds" => seconds = Some(num("--seconds")),
            "--no-special" => cfg.special = false,
            _ => {
                eprintln!(
                    "usage: testweb [--sites N] [--pages N] [--slow-ms N] [--big-bytes N] [--no-special] [--seconds N]"
                );
                std::process::exit(2);
            }
        }
    }
    let web = match TestWeb::start(cfg) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("testweb: cannot start: {e}");
            std::process::exit(1);
        }
    };
    println!("addr {}", web.addr());
    for (h, a) in web.hosts() {
        println!("resolve {h}:{a}");
    }
    for s in web.seeds() {
        println!("seed {s}");
    }
    match seconds {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => for _ in std::io::stdin().lock().lines() {},
    }
    eprintln!("served {}", web.served().len() as u64 + web.dropped());
}
