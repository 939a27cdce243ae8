//! Servers for the remote tests, started as child processes on 127.0.0.1
//! and killed when dropped: moto's S3 server (a real S3-compatible server
//! from PyPI) and tests/remote/range_server.py (HTTP ranges with faults).
//! Shared with the CLI's tests (`#[path]`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// A child process killed (by its id) when dropped.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request with `Connection: close`: status and body.
pub fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read answer");
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// tests/remote/range_server.py serving a directory.
pub struct RangeServer {
    _child: Owned,
    /// Where it listens.
    pub port: u16,
    /// The directory it serves when it made it ([`RangeServer::serving`]):
    /// removed when dropped, after the server (fields drop in order).
    _dir: Option<tempfile::TempDir>,
}

impl RangeServer {
    /// Serves `root`; a stall lasts `stall` seconds.
    pub fn start(root: &Path, stall: f64) -> RangeServer {
        RangeServer::with_latency(root, stall, 0)
    }

    /// [`RangeServer::start`], every GET of a file answered after
    /// `latency_ms` (a real store's time to first byte).
    #[allow(dead_code)]
    pub fn with_latency(root: &Path, stall: f64, latency_ms: u64) -> RangeServer {
        RangeServer::with_env(root, stall, &[("LATENCY_MS", latency_ms.to_string())])
    }

    /// [`RangeServer::start`] with more of range_server.py's environment.
    #[allow(dead_code)]
    fn with_env(root: &Path, stall: f64, env: &[(&str, String)]) -> RangeServer {
        let mut child = Command::new("python3")
            .arg(repo_root().join("tests/remote/range_server.py"))
            .arg(root)
            .env("STALL_SECONDS", stall.to_string())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("MAX_SECONDS", "300")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start python3 tests/remote/range_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read the port");
        let port = line.trim().parse().expect("port line");
        RangeServer {
            _child: Owned(child),
            port,
            _dir: None,
        }
    }

    /// Serves `files` (name, bytes), written to a directory of its own
    /// that lives as long as the server; a stall lasts `stall` seconds.
    pub fn serving(files: &[(&str, &[u8])], stall: f64) -> RangeServer {
        RangeServer::serving_with_latency(files, stall, 0)
    }

    /// [`RangeServer::serving`], every GET of a file answered after
    /// `latency_ms` ([`RangeServer::with_latency`]).
    pub fn serving_with_latency(
        files: &[(&str, &[u8])],
        stall: f64,
        latency_ms: u64,
    ) -> RangeServer {
        let dir = tempfile::tempdir().expect("temporary directory");
        for (name, bytes) in files {
            std::fs::write(dir.path().join(name), bytes).expect("write a served file");
        }
        let mut srv = RangeServer::with_latency(dir.path(), stall, latency_ms);
        srv._dir = Some(dir);
        srv
    }

    /// [`RangeServer::serving`] with the bodies of every GET together sent
    /// at `rate` bytes a second at most (RATE_BPS): a store short of rate,
    /// whose requests in flight share it.
    #[allow(dead_code)]
    pub fn serving_paced(files: &[(&str, &[u8])], stall: f64, rate: u64) -> RangeServer {
        let dir = tempfile::tempdir().expect("temporary directory");
        for (name, bytes) in files {
            std::fs::write(dir.path().join(name), bytes).expect("write a served file");
        }
        let mut srv = RangeServer::with_env(dir.path(), stall, &[("RATE_BPS", rate.to_string())]);
        srv._dir = Some(dir);
        srv
    }

    /// The URL of `name` under the served directory.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// Queues faults for the next GET requests.
    pub fn faults(&self, names: &[&str]) {
        assert_eq!(
            http(self.port, "POST", "/_faults", &names.join("\n")).0,
            200
        );
    }

    /// Cuts `name` at byte `at`.
    pub fn cut(&self, name: &str, at: u64) {
        let path = format!("/_cut/{name}");
        assert_eq!(http(self.port, "POST", &path, &at.to_string()).0, 200);
    }

    /// GET and HEAD requests to files so far.
    pub fn count(&self) -> (u64, u64) {
        let (_, body) = http(self.port, "GET", "/_count", "");
        let mut it = body.split_whitespace().map(|n| n.parse().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    }

    /// The GET and HEAD requests to files so far, in order: "METHOD PATH
    /// RANGE" ("-" without a Range header).
    pub fn log(&self) -> Vec<String> {
        let (_, body) = http(self.port, "GET", "/_log", "");
        body.lines().map(str::to_string).collect()
    }

    /// Sets the counts to zero and empties the log.
    pub fn reset_count(&self) {
        http(self.port, "POST", "/_reset_count", "");
    }

    /// The User-Agent values the server has seen, each once ("-": none).
    pub fn agents(&self) -> Vec<String> {
        let (_, body) = http(self.port, "GET", "/_agents", "");
        body.lines().map(str::to_string).collect()
    }
}

/// A free port on 127.0.0.1 for a server a child process binds (moto,
/// pywb: they cannot report a port of their own choosing). Bound, then
/// released for the server; taken below the kernel's ephemeral range
/// (32768-60999 on Linux), from which every `bind(0)` and every outgoing
/// connection takes its port: a port of that range, once released, could
/// be taken by another test's listener or connection before the child
/// binds it (tests run on threads of one process). Ports handed out are
/// remembered, so that two tests of a binary never get the same one.
pub fn free_port() -> u16 {
    use std::sync::Mutex;
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    const FROM: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    // A start of its own for each process, so that two test binaries at
    // once do not walk the same ports.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let start = (std::process::id() ^ nanos) % SPAN;
    for i in 0..SPAN {
        let port = (FROM + (start + i * 7919) % SPAN) as u16;
        if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free port in {FROM}..{}", FROM + SPAN)
}

/// Waits (60 s at most, then panics) until `child` accepts connections
/// on 127.0.0.1:`port`. An error when the child exits first (its port
/// taken meanwhile, a module missing): the caller may try another port.
pub fn wait_listening(child: &mut Child, port: u16, what: &str) -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!("{what} exited ({st}) before listening on {port}"));
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            // Once more: a child that exited (its port held by another
            // process, which answered) is not the server.
            if let Ok(Some(st)) = child.try_wait() {
                return Err(format!("{what} exited ({st}); port {port} is another's"));
            }
            return Ok(());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{what} did not listen on {port} in 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// moto's S3 server, with a bucket.
pub struct Moto {
    _child: Owned,
    /// Where it listens.
    pub port: u16,
}

impl Moto {
    /// Starts the server (waiting at most 60 s for it to answer; on
    /// another port when it exits first, 3 tries).
    pub fn start() -> Moto {
        let mut failures = Vec::new();
        for _ in 0..3 {
            let port = free_port();
            // stderr to a file, not a pipe: moto logs every request there,
            // and a pipe nobody reads would fill and stop it.
            let mut err = tempfile::tempfile().expect("temporary file");
            let child = Command::new("python3")
                .args([
                    "-m",
                    "moto.server",
                    "-H",
                    "127.0.0.1",
                    "-p",
                    &port.to_string(),
                ])
                .stdout(Stdio::null())
                .stderr(err.try_clone().expect("temporary file"))
                .spawn()
                .expect("start python3 -m moto.server (pip install 'moto[server]')");
            let mut child = Owned(child);
            match wait_listening(&mut child.0, port, "moto") {
                Ok(()) => {
                    return Moto {
                        _child: child,
                        port,
                    };
                }
                Err(e) => {
                    use std::io::Seek;
                    let mut text = String::new();
                    let _ = err.rewind();
                    let _ = err.read_to_string(&mut text);
                    failures.push(format!("{e}: {text}"));
                }
            }
        }
        panic!("moto did not start: {failures:#?}")
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a client needs for this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// Creates `bucket` and uploads `files` as `(key, local path)` with
    /// boto3 (moto's own dependency): the objects are put by another
    /// client than the one under test.
    pub fn upload(&self, bucket: &str, files: &[(String, PathBuf)]) {
        let mut script = format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='testing', aws_secret_access_key='testing', region_name='us-east-1')\ns3.create_bucket(Bucket='{bucket}')\n",
            self.endpoint()
        );
        for (key, path) in files {
            script.push_str(&format!(
                "s3.upload_file({:?}, '{bucket}', {key:?})\n",
                path.display().to_string()
            ));
        }
        let st = Command::new("python3")
            .args(["-c", &script])
            .status()
            .expect("python3");
        assert!(st.success(), "boto3 upload failed");
    }

    /// Deletes `key` from `bucket` (through boto3).
    pub fn delete(&self, bucket: &str, key: &str) {
        let script = format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='testing', aws_secret_access_key='testing', region_name='us-east-1')\ns3.delete_object(Bucket='{bucket}', Key={key:?})\n",
            self.endpoint()
        );
        let st = Command::new("python3")
            .args(["-c", &script])
            .status()
            .expect("python3");
        assert!(st.success(), "boto3 delete failed");
    }

    /// The keys in `bucket` (through boto3).
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        let script = format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='testing', aws_secret_access_key='testing', region_name='us-east-1')\nfor o in s3.list_objects_v2(Bucket='{bucket}').get('Contents', []): print(o['Key'])\nfor u in s3.list_multipart_uploads(Bucket='{bucket}').get('Uploads', []): print('UPLOAD', u['Key'])\n",
            self.endpoint()
        );
        let out = Command::new("python3")
            .args(["-c", &script])
            .output()
            .expect("python3");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Sets a file's modification time: [`RangeServer`]'s ETag and
/// Last-Modified come from it.
pub fn set_mtime(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}
