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

/// The preferences a fresh profile starts with: WebRTC may not send UDP
/// beside the proxy. An HTTP proxy cannot carry UDP, so by default
/// Chromium sends a page's STUN, TURN and peer traffic directly, to any
/// address, unrecorded and outside the crawl's scope. Chromium 156 ignores
/// the command-line switch (`--force-webrtc-ip-handling-policy`, kept for
/// older versions) and obeys this preference: without it a page's STUN
/// request to a loopback UDP port arrived, with it none did.
pub const PREFERENCES: &str = r#"{"webrtc":{"ip_handling_policy":"disable_non_proxied_udp","multiple_routes_enabled":false,"nonproxied_udp_enabled":false}}"#;

/// Writes [`PREFERENCES`] into the fresh profile `dir`.
///
/// # Errors
/// The file cannot be written.
pub fn prepare_profile(dir: &Path) -> std::io::Result<()> {
    let default = dir.join("Default");
    std::fs::create_dir_all(&default)?;
    std::fs::write(default.join("Preferences"), PREFERENCES)
}

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
    /// Events queued for each of the connection's subscribers
    /// ([`crate::cdp::EVENT_BUFFER`]; [`crate::BrowserOptions::event_buffer`]).
    pub event_buffer: usize,
}

/// A running Chromium.
pub struct Chromium {
    child: Child,
    /// The DevTools connection.
    pub cdp: Cdp,
    // Removed when dropped, after the process is killed.
    _profile: tempfile::TempDir,
}

impl Launch {
    /// The command line's arguments, with `profile` as the user data
    /// directory.
    pub fn args(&self, profile: &Path) -> Vec<String> {
        let mut a: Vec<String> = FLAGS[..FLAGS.len() - 1]
            .iter()
            .map(|f| f.to_string())
            .collect();
        a.push(format!("--user-data-dir={}", profile.display()));
        a.extend(self.extra.iter().cloned());
        if let Some(p) = &self.proxy {
            // Loopback too: without `<-loopback>` Chromium goes direct to
            // 127.0.0.1 and nothing would be recorded.
            a.push(format!("--proxy-server=http://{p}"));
            a.push("--proxy-bypass-list=<-loopback>".into());
            // WebRTC's UDP cannot go through an HTTP proxy: see
            // PREFERENCES, which is what Chromium 156 obeys; these are
            // for versions that read the switch. QUIC is off in FLAGS
            // for the same reason.
            a.push("--force-webrtc-ip-handling-policy=disable_non_proxied_udp".into());
            a.push("--enforce-webrtc-ip-permission-check".into());
        }
        if !self.spki.is_empty() {
            a.push(format!(
                "--ignore-certificate-errors-spki-list={}",
                self.spki.join(",")
            ));
        }
        a.push(FLAGS[FLAGS.len() - 1].into());
        a
    }
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
        prepare_profile(profile.path())
            .map_err(|e| BrowserError::Io(profile.path().display().to_string(), e))?;
        let mut cmd = Command::new(&l.exe);
        cmd.args(l.args(profile.path()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so that killing it takes its helpers
        // too: killed alone, the browser leaves its crash handlers
        // running, and they write into the profile after it is removed.
        #[cfg(unix)]
        cmd.process_group(0);
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
        let cdp = Cdp::connect(&ws, l.timeout, l.event_buffer).await?;
        // Not fatal: without it a page that starts a shared worker only
        // waits out its idle bound.
        if let Err(e) = crate::page::follow_shared_workers(&cdp).await {
            tracing::warn!("chromium: shared workers are not followed: {e}");
        }
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

    /// The profile directory (removed when this is dropped).
    pub fn profile(&self) -> &Path {
        self._profile.path()
    }

    /// Kills the process and its helpers, and waits for it.
    pub async fn kill(mut self) {
        self.kill_group();
        let _ = self.child.kill().await;
    }

    /// SIGKILL to the browser's process group (see `launch`), while its
    /// leader has not been reaped: after that the group id could name
    /// another process's group.
    fn kill_group(&mut self) {
        #[cfg(unix)]
        if let (Ok(None), Some(pid)) = (self.child.try_wait(), self.child.id())
            && let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // Before the profile directory (a field) is removed.
        self.kill_group();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A browser behind the recording proxy keeps all its traffic on it:
    /// proxied (loopback too), no QUIC, no WebRTC UDP beside the proxy.
    #[test]
    fn proxied_browsers_send_nothing_beside_the_proxy() {
        let l = Launch {
            exe: "chromium".into(),
            proxy: Some("127.0.0.1:9".into()),
            spki: vec!["AAAA".into()],
            extra: vec!["--window-size=800,600".into()],
            timeout: Duration::from_secs(1),
            event_buffer: crate::cdp::EVENT_BUFFER,
        };
        let a = l.args(Path::new("/tmp/p"));
        for want in [
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            "--disable-quic",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--enforce-webrtc-ip-permission-check",
            "--ignore-certificate-errors-spki-list=AAAA",
            "--user-data-dir=/tmp/p",
            "--window-size=800,600",
        ] {
            assert!(a.iter().any(|x| x == want), "{want} missing: {a:?}");
        }
        // The page to open comes last; every other argument is a flag.
        assert_eq!(a.last().map(String::as_str), Some("about:blank"));
        assert!(a[..a.len() - 1].iter().all(|x| x.starts_with("--")));
        let dir = tempfile::tempdir().unwrap();
        prepare_profile(dir.path()).unwrap();
        let prefs = std::fs::read_to_string(dir.path().join("Default/Preferences")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&prefs).unwrap();
        assert_eq!(v["webrtc"]["ip_handling_policy"], "disable_non_proxied_udp");
        // QA's browser (no proxy) replays from loopback directly.
        let direct = Launch { proxy: None, ..l };
        let a = direct.args(Path::new("/tmp/p"));
        assert!(!a.iter().any(|x| x.starts_with("--proxy-server")));
    }
}
