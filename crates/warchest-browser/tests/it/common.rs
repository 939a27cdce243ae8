//! The set-up the capture tests share: a recorder and the recording
//! proxy's options, quick browser options, and [`Rig`], a capture's whole
//! set-up (recorder, proxy, browsers) and its end.

use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use warchest::write::RotatingOptions;
use warchest_browser::{BrowserOptions, Browsers};
use warchest_capture::Recorder;
use warchest_capture::proxy::ProxyOptions;

/// A recorder and proxy options for a capture into `dir`, the proxy
/// allowed to loopback (the test web).
pub fn recorder(dir: &Path, ca_dir: &Path) -> (Arc<Recorder>, ProxyOptions) {
    let rotating = RotatingOptions {
        prefix: "browser".into(),
        ..RotatingOptions::default()
    };
    let recorder = Arc::new(Recorder::new(dir, rotating, None).unwrap());
    let opts = crate::loopback::loopback_options(ca_dir);
    (recorder, opts)
}

/// Short bounds, so that each bounded page costs seconds.
pub fn quick(exe: PathBuf) -> BrowserOptions {
    let mut o = BrowserOptions::new(exe);
    o.page_timeout = Duration::from_secs(12);
    o.load_timeout = Duration::from_secs(3);
    o.behavior_timeout = Duration::from_secs(3);
    o.idle_timeout = Duration::from_secs(2);
    o
}

/// (WARC-Type, WARC-Target-URI, Content-Type, block) of every record.
pub fn records(files: &[PathBuf]) -> Vec<(String, String, String, Vec<u8>)> {
    let mut out = Vec::new();
    for f in files {
        let mut r = warchest::warc::Reader::open(f).unwrap();
        while let Some(mut rec) = r.next_record().unwrap() {
            let h = rec.header();
            let get = |n: &str| h.get(n).map(|v| v.to_string()).unwrap_or_default();
            let (t, u, c) = (
                get("WARC-Type"),
                get("WARC-Target-URI"),
                get("Content-Type"),
            );
            let mut b = Vec::new();
            rec.block().read_to_end(&mut b).unwrap();
            out.push((t, u, c, b));
        }
    }
    out
}

/// A capture's set-up: a recorder writing into `DIR/out`, the recording
/// proxy (its CA in `DIR`), and browsers started with [`quick`] options as
/// `tune` changes them. Derefs to the browsers; [`Rig::finish`] ends them,
/// then the recorder.
pub struct Rig {
    /// The browsers.
    pub browsers: Browsers,
    /// Their recorder.
    pub rec: Arc<Recorder>,
}

impl Rig {
    /// Starts browsers on `exe` recording into `dir`.
    pub fn start(exe: PathBuf, dir: &Path, tune: impl FnOnce(&mut BrowserOptions)) -> Rig {
        let (rec, proxy) = recorder(&dir.join("out"), dir);
        let mut o = quick(exe);
        tune(&mut o);
        let browsers = Browsers::start(o, rec.clone(), proxy).unwrap();
        Rig { browsers, rec }
    }

    /// Ends the browsers, then the recorder: the files written.
    pub fn finish(self) -> Vec<PathBuf> {
        self.browsers.finish().unwrap();
        self.rec.finish().unwrap()
    }
}

impl Deref for Rig {
    type Target = Browsers;

    fn deref(&self) -> &Browsers {
        &self.browsers
    }
}
