//! A headless Chromium we start and supervise: a fresh profile in a
//! temporary directory, the DevTools endpoint read from its stderr, killed
//! (and its profile removed) when dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::BrowserError;
use crate::cdp::Cdp;

/// The flags every browser of ours gets (GUIDE.md's, and those that keep a
/// headless browser quiet and repeatable).
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--no-pings",
    // Chromium's own traffic (sign-in, updates, translation, hints) would
    // go through the recording proxy.
    "--disable-extensions",
    "--disable-component-extensions-with-background-pages",
    "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,SigninInterception",
    "--no-service-autorun",
    "--password-store=basic",
    "--autoplay-policy=no-user-gesture-required",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
    "about:blank",
];

/// How a browser is started.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The Chromium executable.
    pub exe: PathBuf,
    /// The recording proxy, `127.0.0.1:PORT` (`None`: direct).
    pub proxy: Option<String>,
    /// Base64 SHA-256 hashes of SubjectPublicKeyInfos whose certificates
    /// this browser accepts although untrusted: our CA's, so that it is
    /// trusted by this browser only.
    pub spki: Vec<String>,
    /// More flags.
    pub extra: Vec<String>,
    /// How long the browser may take to start.
    pub timeout: Duration,
}

/// A running Chromium.
pub struct Chromium {
    child: Child,
    /// The DevTools connection.
    pub cdp: Cdp,
    // Removed when dropped, after the process is killed.
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts a browser with a fresh profile and connects to it.
    ///
    /// # Errors
    /// It cannot be started, or does not open its DevTools endpoint in
    /// time.
    pub async fn launch(l: &Launch) -> Result<Chromium, BrowserError> {
        let profile = tempfile::Builder::new()
            .prefix("warchest-chromium-")
            .tempdir()
            .map_err(|e| BrowserError::Io("profile directory".into(), e))?;
        let mut cmd = Command::new(&l.exe);
        cmd.args(&FLAGS[..FLAGS.len() - 1])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(&l.extra);
        if let Some(p) = &l.proxy {
            // Loopback too: without `<-loopback>` Chromium goes direct to
            // 127.0.0.1 and nothing would be recorded.
            cmd.arg(format!("--proxy-server=http://{p}"))
                .arg("--proxy-bypass-list=<-loopback>");
        }
        if !l.spki.is_empty() {
            cmd.arg(format!(
                "--ignore-certificate-errors-spki-list={}",
                l.spki.join(",")
            ));
        }
        cmd.arg(FLAGS[FLAGS.len() - 1])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| BrowserError::Io(l.exe.display().to_string(), e))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| BrowserError::Cdp("no stderr".into()))?;
        let mut lines = BufReader::new(stderr).lines();
        let found = tokio::time::timeout(l.timeout, async {
            let mut said = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return Ok(url.trim().to_string());
                }
                if said.len() < 20 {
                    said.push(line);
                }
            }
            Err(said.join("\n"))
        })
        .await;
        let ws = match found {
            Ok(Ok(ws)) => ws,
            Ok(Err(said)) => {
                let _ = child.kill().await;
                return Err(BrowserError::Launch(format!(
                    "{} exited before it listened: {said}",
                    l.exe.display()
                )));
            }
            Err(_) => {
                let _ = child.kill().await;
                return Err(BrowserError::Launch(format!(
                    "{} did not listen within {:?}",
                    l.exe.display(),
                    l.timeout
                )));
            }
        };
        // The rest of stderr is drained (a full pipe would block it).
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!("chromium: {line}");
            }
        });
        let cdp = Cdp::connect(&ws, l.timeout).await?;
        Ok(Chromium {
            child,
            cdp,
            _profile: profile,
        })
    }

    /// True while the process runs and its connection is open.
    pub fn alive(&mut self) -> bool {
        !self.cdp.is_closed() && matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process and waits for it.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Chromium on PATH: `chromium`, `chromium-browser`, `google-chrome`,
/// `google-chrome-stable`, or `chrome`, first found.
pub fn find_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome",
    ];
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| is_executable(p))
    })
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}
