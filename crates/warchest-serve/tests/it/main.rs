//! The integration tests of `warchest-serve`, one binary (docs/testing.md):
//! the server run in this process on loopback ports and asked over raw
//! TCP. The end-to-end tests of the `warchest serve` command (the process,
//! its log and signals, WACZ, Chromium) are the CLI's
//! (crates/warchest-cli/tests/it/serve.rs and serve_limits.rs).

mod access;
mod answer;
#[path = "../../../warchest/tests/it/common.rs"]
mod common;
mod damage;
mod limits;

use std::io::{Read, Write};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use warchest_serve::{ServeOptions, Server, StopHandle};

/// A server running on a thread of this process, stopped when dropped.
pub struct Running {
    /// The UI origin's address.
    pub addr: String,
    /// The replay origin's address.
    pub replay: String,
    stop: StopHandle,
    thread: Option<JoinHandle<warchest::Result<()>>>,
}

impl Running {
    /// Serves `paths` on loopback ports, the index in `db`, no polling.
    pub fn start(paths: &[&Path], db: &Path) -> Running {
        let mut opts = ServeOptions::new(paths.iter().map(|p| p.to_path_buf()).collect());
        opts.listen = "127.0.0.1:0".into();
        opts.store = Some(db.to_path_buf());
        opts.poll = None;
        Running::from_server(Server::bind(opts).expect("bind the server"))
    }

    /// Runs `server` on a thread.
    pub fn from_server(server: Server) -> Running {
        let addr = server.local_addr().unwrap().to_string();
        let replay = server.replay_addr().unwrap().expect("a replay listener");
        let stop = server.stop_handle();
        let thread = std::thread::spawn(move || server.run());
        Running {
            addr,
            replay: replay.to_string(),
            stop,
            thread: Some(thread),
        }
    }

    /// The served IANA capture (pywb's fixture).
    pub fn iana(dir: &tempfile::TempDir) -> Running {
        Running::start(
            &[&common::fixture("pywb/iana.warc.gz")],
            &dir.path().join("index.redb"),
        )
    }

    /// Stops the server and waits for `run` to return.
    pub fn stop(mut self) -> warchest::Result<()> {
        self.stop.stop();
        self.thread
            .take()
            .expect("running")
            .join()
            .expect("no panic")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sends `raw` to `addr` and reads the answer to the end (30 s at most).
pub fn exchange(addr: &str, raw: &[u8]) -> String {
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = c.write_all(raw);
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `GET path` on `addr`, the connection closed after it.
pub fn get(addr: &str, path: &str) -> String {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}
