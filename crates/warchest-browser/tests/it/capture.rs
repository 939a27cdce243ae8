//! Pages captured in the browser through the recording proxy: what is
//! recorded, and pages that hang, crash or scroll forever ending within
//! their bounds while the run goes on.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{Rig, recorder, records};
use crate::{Site, chromium};

const HTML: &str = "text/html; charset=utf-8";

/// A page that builds itself with script: a link and an image only
/// script names, and an image below the fold loaded lazily.
fn scripted() -> Vec<u8> {
    b"<!doctype html><html><head><title>scripted</title></head><body>\
<h1>Scripted page</h1><div style=\"height:3000px\">tall</div>\
<img loading=\"lazy\" src=\"/lazy.svg\" width=\"10\" height=\"10\">\
<script>\
const a=document.createElement('a');a.href='/only-script-'+(6*7)+'.html';a.textContent='built';document.body.appendChild(a);\
const i=new Image();i.src='/by-script.svg';document.body.appendChild(i);\
fetch('/api/data.json').then(r=>r.json()).then(d=>{document.querySelector('h1').textContent=d.title;});\
</script></body></html>"
        .to_vec()
}

/// A page that grows whenever it is scrolled to its end.
fn endless() -> Vec<u8> {
    b"<!doctype html><html><head><title>endless</title></head><body><div id=\"f\"></div><script>\
let n=0;function more(){for(let k=0;k<5;k++){const d=document.createElement('div');d.style.height='400px';d.textContent='item '+(n++);document.getElementById('f').appendChild(d);}}\
more();addEventListener('scroll',()=>{if(innerHeight+scrollY>=document.body.scrollHeight-10)more();});\
</script></body></html>"
        .to_vec()
}

fn svg() -> Vec<u8> {
    b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><rect width=\"10\" height=\"10\" fill=\"red\"/></svg>".to_vec()
}

pub fn site() -> Site {
    Site::start(vec![
        ("/", (200, HTML, Some(scripted()))),
        ("/lazy.svg", (200, "image/svg+xml", Some(svg()))),
        ("/by-script.svg", (200, "image/svg+xml", Some(svg()))),
        ("/api/data.json", (200, "application/json", Some(b"{\"title\":\"Built by script\"}".to_vec()))),
        ("/endless", (200, HTML, Some(endless()))),
        ("/slow", (200, HTML, None)),
        ("/busy", (200, HTML, Some(b"<!doctype html><title>busy</title><script>setTimeout(()=>{for(;;){}},50)</script>".to_vec()))),
    ])
}

#[test]
fn a_scripted_page_is_recorded_through_the_proxy() {
    let Some(exe) = chromium() else { return };
    let s = site();
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        // The user's own behaviour: an async script whose work is awaited.
        o.behaviors = Some(
            "new Promise(r => setTimeout(() => { const a = document.createElement('a'); \
a.href = '/from-behavior.html'; document.body.appendChild(a); r(1); }, 300))"
                .into(),
        );
    });
    let url = format!("{}/", s.base);
    let p = b.capture(&url);
    let files = b.finish();
    assert!(p.ok(), "{p:?}");
    assert_eq!(p.status, Some(200), "{p:?}");
    assert_eq!(p.title.as_deref(), Some("scripted"));
    // The link only script builds, found in the rendered DOM.
    let built = format!("{}/only-script-42.html", s.base);
    assert!(p.links.contains(&built), "{:?}", p.links);
    let user = p.behaviors.iter().find(|b| b.name == "user").unwrap();
    assert!(user.completed, "{user:?}");
    assert!(
        p.links.contains(&format!("{}/from-behavior.html", s.base)),
        "{:?}",
        p.links
    );
    // What script and scrolling asked for went through the proxy.
    for path in ["/", "/by-script.svg", "/api/data.json", "/lazy.svg"] {
        let u = format!("{}{path}", s.base);
        assert!(p.fetched.contains(&u), "{u} not in {:?}", p.fetched);
    }
    let recs = records(&files);
    let responses: Vec<&str> = recs
        .iter()
        .filter(|r| r.0 == "response")
        .map(|r| r.1.as_str())
        .collect();
    for u in &p.fetched {
        assert!(
            responses.contains(&u.as_str()),
            "{u} not recorded: {responses:?}"
        );
    }
    let view = recs
        .iter()
        .find(|r| r.1 == format!("urn:view:{url}"))
        .expect("a screenshot record");
    assert_eq!(
        (view.0.as_str(), view.2.as_str()),
        ("resource", "image/png")
    );
    assert!(view.3.starts_with(b"\x89PNG\r\n\x1a\n"));
    let text = recs
        .iter()
        .find(|r| r.1 == format!("urn:text:{url}"))
        .expect("a text record");
    assert!(String::from_utf8_lossy(&text.3).contains("Built by script"));
    let meta = recs
        .iter()
        .find(|r| {
            r.0 == "metadata" && r.1 == url && String::from_utf8_lossy(&r.3).contains("outlink:")
        })
        .expect("the page's metadata record");
    assert!(String::from_utf8_lossy(&meta.3).contains(&format!("outlink: {built} L a/@href")));
}

#[test]
fn hanging_crashing_and_endless_pages_end_within_their_bounds() {
    let Some(exe) = chromium() else { return };
    let s = site();
    let dir = tempfile::tempdir().unwrap();
    let (mut page_timeout, mut behavior_timeout) = Default::default();
    let b = Rig::start(exe, dir.path(), |o| {
        // The load and behaviour bounds are under test here, not the
        // page's: a page bound with room to spare keeps a loaded machine's
        // slow page from being cut and retried (quick's 12 s was tripped
        // at load 23).
        o.page_timeout = Duration::from_secs(60);
        (page_timeout, behavior_timeout) = (o.page_timeout, o.behavior_timeout);
    });
    let urls: Vec<String> = vec![
        format!("{}/slow", s.base),
        "chrome://crash".into(),
        format!("{}/endless", s.base),
        format!("{}/", s.base),
    ];
    let start = Instant::now();
    let pages = b.capture_all(&urls, &|_| {});
    let took = start.elapsed();
    let files = b.finish();
    // The slow page: taken as it was when its load bound passed.
    let slow = &pages[0];
    assert!(slow.ok(), "{slow:?}");
    assert!(!slow.load_event, "{slow:?}");
    assert_eq!(slow.attempts, 1, "{slow:?}");
    // Its network never went idle, and what held it is named: in the
    // result, and in the page's metadata record.
    let pending = format!("1 in flight: {}/slow", s.base);
    let idle = slow.behaviors.iter().find(|b| b.name == "idle").unwrap();
    assert!(!idle.completed && idle.note.contains(&pending), "{idle:?}");
    let meta = records(&files)
        .into_iter()
        .find(|r| r.0 == "metadata" && r.1 == urls[0])
        .expect("the slow page's metadata record");
    let meta = String::from_utf8_lossy(&meta.3).into_owned();
    assert!(
        meta.lines()
            .any(|l| l.starts_with("behavior: idle stopped") && l.contains(&pending)),
        "{meta}"
    );
    // The crashing tab: retried once, then failed; the run went on.
    let crash = &pages[1];
    assert!(!crash.ok(), "{crash:?}");
    assert_eq!(crash.attempts, 2);
    // The endless scroll: stopped by its bound.
    let endless = &pages[2];
    assert!(endless.ok(), "{endless:?}");
    let scroll = endless
        .behaviors
        .iter()
        .find(|b| b.name == "scroll")
        .unwrap();
    assert!(!scroll.completed, "{scroll:?}");
    // Near its own bound (3 s), far from the page's (60 s), which would
    // have ended an unbounded scroll.
    assert!(
        u128::from(scroll.ms) < behavior_timeout.as_millis() * 5,
        "{scroll:?}"
    );
    assert!(pages[3].ok(), "{:?}", pages[3]);
    // Each within the page bound (the crash twice).
    assert!(took < page_timeout * 5, "{took:?}");
    assert!(
        crash.error.as_deref().is_some_and(|e| e.contains("crash")),
        "{crash:?}"
    );
}

#[test]
fn a_hung_browser_is_restarted_and_the_run_goes_on() {
    let Some(exe) = chromium() else { return };
    let s = site();
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        // The page bound ends the hung page; the next page must fit in it
        // too, so not so short that a loaded machine cannot capture a page
        // in it.
        o.page_timeout = Duration::from_secs(8);
        o.load_timeout = Duration::from_secs(1);
        o.idle_timeout = Duration::from_secs(1);
    });
    let urls = vec![format!("{}/busy", s.base), format!("{}/", s.base)];
    let start = Instant::now();
    let pages = b.capture_all(&urls, &|_| {});
    let took = start.elapsed();
    let restarts = b.restarts();
    b.finish();
    // A script that never yields: the page bound passes, the browser is
    // restarted, the page retried once, then failed.
    assert!(!pages[0].ok(), "{:?}", pages[0]);
    assert!(
        pages[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("page timeout")),
        "{:?}",
        pages[0]
    );
    assert_eq!(pages[0].attempts, 2);
    assert!(restarts >= 2, "{restarts}");
    assert!(pages[1].ok(), "{:?}", pages[1]);
    // Only a hang's bound: the page bound is asserted by the error above
    // (30 s was tripped at load 23: each restart starts a Chromium).
    assert!(took < Duration::from_secs(120), "{took:?}");
}

/// The proxy's filter (a crawl's scope) refuses a request before reading
/// its body: a POST declaring 100 MB, of which the client sends only a
/// few bytes, gets its 403 at once (not after the body's timeout), and
/// nothing reaches the server; an allowed request still goes through.
#[test]
fn a_refused_request_is_answered_before_its_body_is_read() {
    use std::io::Write as _;
    use std::net::TcpStream;
    use std::sync::atomic::{AtomicBool, Ordering};
    use warchest_capture::proxy::{Proxy, UrlFilter};

    let s = site();
    let dir = tempfile::tempdir().unwrap();
    let (rec, mut opts) = recorder(&dir.path().join("out"), dir.path());
    // A body timeout far past the bound below: a body read first would
    // take all of it (and the client gives up at 20 s, with no answer).
    opts.fetch.timeout = Duration::from_secs(60);
    opts.access.filter = Some(UrlFilter(Arc::new(|u: &str| {
        if u.contains("/refused") {
            Err("out of scope".into())
        } else {
            Ok(())
        }
    })));
    let proxy = Proxy::bind("127.0.0.1:0".parse().unwrap(), rec.clone(), opts).unwrap();
    let addr = proxy.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let serving = std::thread::spawn(move || proxy.serve(&stop2));
    let ask = |head: String, body: &[u8]| -> (String, Duration) {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let t0 = Instant::now();
        c.write_all(head.as_bytes()).unwrap();
        c.write_all(body).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        (String::from_utf8_lossy(&got).into_owned(), t0.elapsed())
    };
    let (answer, took) = ask(
        format!(
            "POST {}/refused HTTP/1.1\r\nHost: {}\r\nContent-Length: 100000000\r\n\r\n",
            s.base,
            &s.base["http://".len()..]
        ),
        b"only a few bytes",
    );
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    // The proxy's body timeout is 60 s: a body read first would take it.
    assert!(took < Duration::from_secs(15), "{took:?}");
    let (answer, _) = ask(
        format!(
            "GET {}/api/data.json HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            s.base,
            &s.base["http://".len()..]
        ),
        b"",
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    stop.store(true, Ordering::Relaxed);
    serving.join().unwrap().unwrap();
    rec.finish().unwrap();
    assert_eq!(s.requests(), ["/api/data.json"]);
}

/// A page's WebRTC does not go beside the proxy: its STUN request to a
/// UDP port on loopback never arrives (without the profile's WebRTC
/// policy, Chromium sends it directly).
#[test]
fn webrtc_sends_no_udp_beside_the_proxy() {
    let Some(exe) = chromium() else { return };
    let udp = std::net::UdpSocket::bind("127.0.0.2:0").unwrap();
    let port = udp.local_addr().unwrap().port();
    let page = format!(
        "<!doctype html><title>webrtc</title><p>peer</p><script>\
const pc=new RTCPeerConnection({{iceServers:[{{urls:'stun:127.0.0.2:{port}'}}]}});\
pc.createDataChannel('x');pc.createOffer().then(o=>pc.setLocalDescription(o));</script>"
    );
    let s = crate::Site::start(vec![("/rtc", (200, HTML, Some(page.into_bytes())))]);
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        // Time for ICE gathering (it sent within a second when allowed).
        o.behaviors = Some("new Promise(r => setTimeout(r, 2500))".into());
    });
    let p = b.capture(&format!("{}/rtc", s.base));
    b.finish();
    assert!(p.ok(), "{p:?}");
    udp.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    let got = udp.recv_from(&mut buf);
    assert!(got.is_err(), "a UDP datagram from {:?}", got.map(|g| g.1));
}

/// Under a crawl's resolve-only (`ResolverOptions::loopback_only`), the
/// recording proxy holds names to 127.0.0.0/8 as the crawl's HTTP client
/// does: `localhost` reaches a server on 127.0.0.1, and a name whose only
/// address is `::1` is refused by the resolver. The control (the rule
/// off) shows the same name passing the resolver with `::1`; the proxy's
/// deny list (`::/0`, in both runs) then refuses it, so that no request of
/// this test ever leaves 127.0.0.0/8.
#[test]
fn the_proxy_holds_localhost_to_127_under_resolve_only() {
    use std::io::Write as _;
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use warchest_capture::proxy::Proxy;

    // A server on 127.0.0.1, answering every connection.
    let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = v4.local_addr().unwrap().port();
    v4.set_nonblocking(true).unwrap();
    let reached = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (r2, d2) = (reached.clone(), done.clone());
    let server = std::thread::spawn(move || {
        let start = Instant::now();
        while !d2.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
            match v4.accept() {
                Ok((mut s, _)) => {
                    r2.fetch_add(1, Ordering::SeqCst);
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let (mut head, mut b) = (Vec::new(), [0u8; 1024]);
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut b) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&b[..n]),
                        }
                    }
                    let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nv4");
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    let ask = |held: bool, host: &str| -> String {
        let dir = tempfile::tempdir().unwrap();
        let (rec, mut opts) = recorder(&dir.path().join("out"), dir.path());
        // As `crawl --browser` sets it: every address allowed, the
        // resolver holding the crawl's rule; and, for this test only,
        // no IPv6 destination at all.
        opts.access.allow = vec!["0.0.0.0/0".parse().unwrap(), "::/0".parse().unwrap()];
        opts.access.deny = vec!["::/0".parse().unwrap()];
        opts.resolver.loopback_only = held;
        opts.resolver
            .overrides
            .insert("v6-only.test".into(), vec!["::1".parse().unwrap()]);
        let proxy = Proxy::bind("127.0.0.1:0".parse().unwrap(), rec.clone(), opts).unwrap();
        let addr = proxy.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let serving = std::thread::spawn(move || proxy.serve(&stop2));
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.write_all(
            format!("GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got);
        stop.store(true, Ordering::Relaxed);
        serving.join().unwrap().unwrap();
        rec.finish().unwrap();
        String::from_utf8_lossy(&got).into_owned()
    };
    // Held: localhost is 127.0.0.1 (whatever order the system gives ::1
    // in), which answers.
    let answer = ask(true, "localhost");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("v4"), "{answer}");
    assert_eq!(reached.load(Ordering::SeqCst), 1);
    // Held: a name of ::1 alone has no address the crawl may reach.
    let answer = ask(true, "v6-only.test");
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(answer.contains("127.0.0.0/8"), "{answer}");
    // The control: without the rule the resolver hands ::1 on (the check
    // above can fail); the deny list, not the rule, stops it here.
    let answer = ask(false, "v6-only.test");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("::1"), "{answer}");
    assert_eq!(
        reached.load(Ordering::SeqCst),
        1,
        "only the first request reached a server"
    );
    done.store(true, Ordering::Relaxed);
    server.join().unwrap();
}

/// The processes whose command line names `dir` (Chromium's, for the
/// profile it was given).
fn processes_naming(dir: &Path) -> usize {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .filter(|c| String::from_utf8_lossy(c).contains(&needle))
                .count()
        })
        .unwrap_or(0)
}

/// A killed browser takes all its processes with it, and its profile is
/// removed and stays removed: killed alone, its crash handlers lived on
/// and wrote into the removed profile.
#[test]
fn a_killed_browser_leaves_no_process_or_profile() {
    let Some(exe) = chromium() else { return };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let launch = warchest_browser::chrome::Launch {
            exe,
            proxy: None,
            spki: Vec::new(),
            extra: Vec::new(),
            timeout: Duration::from_secs(30),
            event_buffer: warchest_browser::cdp::EVENT_BUFFER,
        };
        // Killed, and dropped as a run that stops early drops it.
        for kill in [true, false] {
            let b = warchest_browser::chrome::Chromium::launch(&launch)
                .await
                .unwrap();
            let profile = b.profile().to_path_buf();
            assert!(processes_naming(&profile) > 1, "a browser and its helpers");
            if kill {
                b.kill().await;
            } else {
                drop(b);
            }
            let start = Instant::now();
            // Polled with a bound for a loaded machine (5 s, then a fixed
            // 500 ms for the profile, were tight there).
            while (processes_naming(&profile) > 0 || profile.exists())
                && start.elapsed() < Duration::from_secs(60)
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(processes_naming(&profile), 0, "processes left behind");
            assert!(!profile.exists(), "{} left behind", profile.display());
        }
    });
}

/// A kept tab sent to another fragment of the page it shows (a
/// same-document navigation, for which no load event comes) has it
/// loaded at once, not after the load timeout.
#[test]
fn a_fragment_of_a_kept_tabs_page_is_loaded_at_once() {
    let Some(exe) = chromium() else { return };
    let s = site();
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        o.browsers = 1;
        // A load bound far past the bound below (a loaded machine can take
        // seconds to capture the page, but not the load bound).
        o.load_timeout = Duration::from_secs(60);
        o.page_timeout = Duration::from_secs(120);
    });
    let url = format!("{}/", s.base);
    let first = b.capture(&url);
    assert!(first.ok() && first.load_event, "{first:?}");
    let t = Instant::now();
    let p = b.capture(&format!("{url}#again"));
    let took = t.elapsed();
    b.finish();
    assert!(p.load_event, "{p:?}");
    assert!(took < Duration::from_secs(40), "{took:?}");
}

/// The page's screenshot shows its top after the scroll, even where CSS
/// makes scrolling smooth (Bootstrap 5 sets `scroll-behavior: smooth` on
/// `:root`): there the way back up is animated, and a screenshot right
/// after it catches the page partway up. This headless Chromium applies
/// the CSS at once, so the page's script animates `scrollTo` as the CSS
/// does elsewhere (and as smooth-scroll scripts do), unless it is asked
/// for `behavior: 'instant'`.
#[test]
fn the_screenshot_shows_the_top_of_a_smooth_scrolling_page() {
    let Some(exe) = chromium() else { return };
    let page = b"<!doctype html><html><head><title>smooth</title><style>\
:root{scroll-behavior:smooth}body{margin:0}#top{height:300px;background:#f00}\
.rest{height:12000px;background:#00f}</style></head><body><div id=top></div>\
<div class=rest></div><script>\
const orig=window.scrollTo.bind(window);\
window.scrollTo=function(a,b){const o=typeof a==='object'?a:{left:a,top:b};\
if(o.behavior==='instant')return orig(o);\
const from=window.scrollY,to=o.top||0,t0=performance.now();\
const f=(t)=>{const k=Math.min(1,(t-t0)/800);orig(0,from+(to-from)*k);if(k<1)requestAnimationFrame(f);};\
requestAnimationFrame(f);};</script></body></html>"
        .to_vec();
    let s = Site::start(vec![("/", (200, HTML, Some(page)))]);
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        o.behavior_timeout = Duration::from_secs(6);
    });
    let url = format!("{}/", s.base);
    let p = b.capture(&url);
    let files = b.finish();
    assert!(p.ok(), "{p:?}");
    let scroll = p.behaviors.iter().find(|b| b.name == "scroll").unwrap();
    assert!(scroll.note.contains("\"steps\""), "{scroll:?}");
    let recs = records(&files);
    let view = recs
        .iter()
        .find(|r| r.1 == format!("urn:view:{url}"))
        .expect("a screenshot record");
    let mut d = png::Decoder::new(std::io::Cursor::new(&view.3));
    d.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut r = d.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let row = info.line_size;
    // Near the top-left corner and just above the red block's end.
    for y in [10usize, 280] {
        let px = &buf[y * row + 10 * channels..][..3];
        assert!(
            px[0] > 200 && px[1] < 60 && px[2] < 60,
            "pixel (10, {y}) is {px:?}, not the page red top: {scroll:?}"
        );
    }
}

/// A one-page PDF (Chromium shows it in its viewer).
fn pdf() -> Vec<u8> {
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]\
/Count 1>>endobj 3 0 obj<</Type/Page/MediaBox[0 0 3 3]/Parent 2 0 R>>endobj\n\
trailer<</Root 1 0 R>>\n%%EOF\n"
        .to_vec()
}

/// A URL whose document is not HTML (JSON, an image, plain text, a PDF), loaded
/// in a tab, is a resource: its response is recorded, and it gets none of
/// a page's derivatives (screenshot, text, metadata record), as
/// Browsertrix Crawler does with such a page URL. An HTML and an XHTML
/// page loaded in the same run get all three.
#[test]
fn a_url_whose_document_is_not_html_gets_no_page_records() {
    let Some(exe) = chromium() else { return };
    let xhtml = b"<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\">\
<head><title>xhtml</title></head><body><p>an XHTML page</p></body></html>"
        .to_vec();
    let s = Site::start(vec![
        (
            "/",
            (
                200,
                HTML,
                Some(b"<!doctype html><title>home</title><p>home".to_vec()),
            ),
        ),
        ("/page.xhtml", (200, "application/xhtml+xml", Some(xhtml))),
        (
            "/data",
            (200, "application/json", Some(b"{\"a\": 1}".to_vec())),
        ),
        ("/pic", (200, "image/svg+xml", Some(svg()))),
        (
            "/notes",
            (
                200,
                "text/plain; charset=utf-8",
                Some(b"plain notes".to_vec()),
            ),
        ),
        ("/doc", (200, "application/pdf", Some(pdf()))),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        o.browsers = 1;
        o.scroll = false;
        o.media = false;
    });
    let urls: Vec<String> = ["/", "/page.xhtml", "/data", "/pic", "/notes", "/doc"]
        .iter()
        .map(|p| format!("{}{p}", s.base))
        .collect();
    let got = b.capture_all(&urls, &|_| {});
    let files = b.finish();
    let recs = records(&files);
    let has = |t: &str, u: &str| recs.iter().any(|r| r.0 == t && r.1 == u);
    // The page's own metadata record (each exchange has one too: its
    // fetch time).
    let page_meta = |u: &str| {
        recs.iter().any(|r| {
            r.0 == "metadata" && r.1 == u && String::from_utf8_lossy(&r.3).contains("load-state:")
        })
    };
    for (p, (url, mime)) in got.iter().zip(urls.iter().zip([
        "text/html",
        "application/xhtml+xml",
        "application/json",
        "image/svg+xml",
        "text/plain",
        "application/pdf",
    ])) {
        assert!(p.ok(), "{p:?}");
        assert_eq!(p.status, Some(200), "{p:?}");
        assert_eq!(p.mime.as_deref(), Some(mime), "{p:?}");
        assert!(has("response", url), "{url}: its response is recorded");
        let page = mime.contains("html");
        assert_eq!(p.is_page(), page, "{p:?}");
        for derived in [format!("urn:view:{url}"), format!("urn:text:{url}")] {
            assert_eq!(has("resource", &derived), page, "{derived}");
        }
        assert_eq!(page_meta(url), page, "{url}: the page's metadata record");
        if !page {
            // No behaviour ran on it, only the wait for its body.
            let names: Vec<&str> = p.behaviors.iter().map(|b| b.name).collect();
            assert_eq!(names, ["idle"], "{p:?}");
        }
    }
}

/// The DOM's links past the bound are counted, not dropped without a
/// word: a page of MAX_LINKS + 3 distinct links (one named twice, and a
/// `mailto:` that is no link) gives MAX_LINKS and 3 dropped. Static: no
/// wait in it depends on timing.
#[test]
fn links_past_the_bound_are_counted() {
    let Some(exe) = chromium() else { return };
    let n = warchest_browser::MAX_LINKS + 3;
    let mut page =
        String::from("<!doctype html><title>many</title><a href=/l0>x</a><a href=mailto:a@b>m</a>");
    for i in 0..n {
        page.push_str(&format!("<a href=/l{i}>{i}</a>"));
    }
    let s = Site::start(vec![("/many", (200, HTML, Some(page.into_bytes())))]);
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |_| {});
    let p = b.capture(&format!("{}/many", s.base));
    b.finish();
    assert!(p.ok(), "{p:?}");
    assert_eq!(
        (p.links.len(), p.links_dropped),
        (warchest_browser::MAX_LINKS, 3)
    );
}

/// A page starting more targets than its tab follows (eight frames of
/// another site, against four) is captured, goes idle (the frames past
/// the bound are let run with their network events on, so the answers to
/// the page's own requests for them are taken: without that, those stayed
/// in flight and the page waited out its idle bound), and is marked
/// incomplete: what the unfollowed frames ask for is not seen. Under the
/// bound it is not.
#[test]
fn frames_past_those_a_tab_follows_make_the_page_incomplete() {
    let Some(exe) = chromium() else { return };
    let other = Site::start_on(
        "127.0.0.2",
        vec![("/f", (200, HTML, Some(b"<!doctype html><p>f</p>".to_vec())))],
    );
    let frames = |n: usize| -> Vec<u8> {
        let mut page = String::from("<!doctype html><title>frames</title>");
        for i in 0..n {
            page.push_str(&format!("<iframe src=\"{}/f?i={i}\"></iframe>", other.base));
        }
        page.into_bytes()
    };
    let s = Site::start(vec![
        ("/many", (200, HTML, Some(frames(8)))),
        ("/few", (200, HTML, Some(frames(3)))),
    ]);
    let dir = tempfile::tempdir().unwrap();
    // An idle bound no quiet page comes near: a page that never goes idle
    // fails the assertion below, not a timing.
    let b = Rig::start(exe, dir.path(), |o| {
        o.idle_timeout = Duration::from_secs(8);
        o.max_targets = 4;
    });
    let many = b.capture(&format!("{}/many", s.base));
    let few = b.capture(&format!("{}/few", s.base));
    b.finish();
    assert!(many.ok(), "{many:?}");
    assert!(many.incomplete, "{many:?}");
    let idle = many.behaviors.iter().find(|b| b.name == "idle").unwrap();
    assert!(idle.completed, "the page never went idle: {idle:?}");
    let asked = other
        .requests()
        .iter()
        .filter(|r| r.starts_with("/f?i="))
        .count();
    assert_eq!(asked, 8 + 3, "{:?}", other.requests());
    assert!(few.ok(), "{few:?}");
    assert!(!few.incomplete, "{few:?}");
    let idle = few.behaviors.iter().find(|b| b.name == "idle").unwrap();
    assert!(idle.completed, "{idle:?}");
}

/// Another site (127.0.0.2): `/frame.html`, a page running `script`, and a
/// worker's script `/fw.js` that asks for `/frame-worker.json`.
fn frame_site(script: &str) -> Site {
    Site::start_on(
        "127.0.0.2",
        vec![
            (
                "/frame.html",
                (
                    200,
                    HTML,
                    Some(format!("<!doctype html><p>frame</p>{script}").into_bytes()),
                ),
            ),
            (
                "/fw.js",
                (
                    200,
                    "text/javascript",
                    Some(b"fetch('/frame-worker.json')".to_vec()),
                ),
            ),
            (
                "/frame-worker.json",
                (200, "application/json", Some(b"{}".to_vec())),
            ),
        ],
    )
}

/// A dedicated worker's script is asked for in the page's session and
/// answered in the worker's, and so is a shared worker's (a target of the
/// browser's, not the page's); a frame of another site (another loopback
/// address) is a target of its own, whose document is answered there too.
/// Both are followed: the page goes idle (it never did, and waited out its
/// idle bound twice), and what the worker and the frame asked for is the
/// page's. The frame gets the tab's init scripts: it cannot register a
/// service worker either.
#[test]
fn requests_of_a_worker_and_of_a_frame_of_another_site_are_the_pages() {
    let Some(exe) = chromium() else { return };
    let other = frame_site(
        "<script>new Worker('/fw.js');\
navigator.serviceWorker.register('/sw.js').then(()=>fetch('/sw?registered'),\
e=>fetch(String(e.message).includes('blocked during capture')?'/sw?blocked':'/sw?other'));</script>",
    );
    let page = format!(
        "<!doctype html><title>worker</title><p id=r>pending</p>\
<iframe src=\"{}/frame.html\"></iframe><script>\
const w=new Worker('/w.js');w.onmessage=e=>{{document.getElementById('r').textContent=e.data;}};\
const sw=new SharedWorker('/shared.js');sw.port.start();\
</script>",
        other.base
    );
    let s = Site::start(vec![
        ("/", (200, HTML, Some(page.into_bytes()))),
        (
            "/w.js",
            (
                200,
                "text/javascript",
                Some(
                    b"fetch('/from-worker.json').then(r=>r.text()).then(t=>postMessage(t))"
                        .to_vec(),
                ),
            ),
        ),
        (
            "/from-worker.json",
            (200, "application/json", Some(b"\"worker ok\"".to_vec())),
        ),
        (
            "/shared.js",
            (
                200,
                "text/javascript",
                Some(b"onconnect=()=>fetch('/from-shared.json')".to_vec()),
            ),
        ),
        (
            "/from-shared.json",
            (200, "application/json", Some(b"{}".to_vec())),
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    // An idle bound no quiet page comes near: a page that never goes idle
    // fails the assertion below, not a timing.
    let b = Rig::start(exe, dir.path(), |o| o.idle_timeout = Duration::from_secs(8));
    let url = format!("{}/", s.base);
    let p = b.capture(&url);
    let files = b.finish();
    assert!(p.ok(), "{p:?}");
    let idle = p.behaviors.iter().find(|b| b.name == "idle").unwrap();
    assert!(idle.completed, "the page never went idle: {idle:?}");
    for u in [
        format!("{}/w.js", s.base),
        format!("{}/from-worker.json", s.base),
        format!("{}/shared.js", s.base),
        format!("{}/frame.html", other.base),
        format!("{}/fw.js", other.base),
        format!("{}/frame-worker.json", other.base),
    ] {
        assert!(p.fetched.contains(&u), "{u} not in {:?}", p.fetched);
    }
    // The shared worker ran (it was let run once attached).
    assert!(
        s.requests().iter().any(|r| r == "/from-shared.json"),
        "{:?}",
        s.requests()
    );
    assert!(
        other.requests().iter().any(|r| r == "/sw?blocked"),
        "{:?}",
        other.requests()
    );
    let recs = records(&files);
    assert!(
        recs.iter()
            .any(|r| r.0 == "response" && r.1 == format!("{}/from-worker.json", s.base)),
        "the worker's fetch is not recorded"
    );
    let text = recs
        .iter()
        .find(|r| r.1 == format!("urn:text:{url}"))
        .expect("a text record");
    assert!(String::from_utf8_lossy(&text.3).contains("worker ok"));
}

/// A tab that falls behind the browser's events loses the oldest: when the
/// start of a worker or of a frame of another site is among them, that
/// target, attached paused, is still set up and let run (it stayed paused
/// for good, its requests never made). Each tab may queue only two events
/// here, and the page starts four workers and a frame (itself starting a
/// worker) as a hundred requests of its own begin, so the tab falls
/// behind; the page is then marked incomplete, as any lost event marks
/// it. Without the change, five runs in six lost a worker's start. The
/// burst is kept small: the workers' own requests wait behind it for the
/// browser's connections to the proxy.
#[test]
fn a_worker_started_while_the_tab_fell_behind_still_runs() {
    let Some(exe) = chromium() else { return };
    let other = frame_site("<script>new Worker('/fw.js');</script>");
    let page = format!(
        "<!doctype html><title>behind</title><script>\
for(let i=1;i<=4;i++)new Worker('/w'+i+'.js');\
document.documentElement.insertAdjacentHTML('beforeend','<iframe src=\"{}/frame.html\"></iframe>');\
for(let i=0;i<100;i++)fetch('/b?i='+i);</script>",
        other.base
    );
    let mut routes = vec![
        ("/", (200, HTML, Some(page.into_bytes()))),
        ("/b", (200, "text/plain", Some(b"b".to_vec()))),
    ];
    // Each worker's script, and what it asks for.
    const WORKERS: [(&str, &str); 4] = [
        ("/w1.js", "/from-worker-1.json"),
        ("/w2.js", "/from-worker-2.json"),
        ("/w3.js", "/from-worker-3.json"),
        ("/w4.js", "/from-worker-4.json"),
    ];
    for (script, asks) in WORKERS {
        let js = format!("fetch('{asks}')").into_bytes();
        routes.push((script, (200, "text/javascript", Some(js))));
        routes.push((asks, (200, "application/json", Some(b"{}".to_vec()))));
    }
    let s = Site::start(routes);
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        o.event_buffer = 2;
        // Short: this test is about the attaches, not the waits.
        o.idle_timeout = Duration::from_secs(2);
    });
    let p = b.capture(&format!("{}/", s.base));
    b.finish();
    assert!(p.ok(), "{p:?}");
    assert!(p.incomplete, "the tab never fell behind: {p:?}");
    let asked = s.requests();
    for (_, w) in WORKERS {
        assert!(
            asked.iter().any(|r| r == w),
            "{w} never asked for: {:?} {:?}; asked: {:?}",
            p.behaviors,
            p.fetched
                .iter()
                .filter(|u| !u.contains("/b?"))
                .collect::<Vec<_>>(),
            asked
                .iter()
                .filter(|u| !u.contains("/b?"))
                .collect::<Vec<_>>()
        );
    }
    assert!(
        other.requests().iter().any(|r| r == "/frame-worker.json"),
        "{:?}",
        other.requests()
    );
}

/// Requests whose end was among the events a tab lost do not hold the
/// network-idle waits to their bound: once they give no sign for
/// `UNSURE_QUIET` they are taken as ended, and the idle behaviour says how
/// many. A page of 150 fetches with a two-event buffer, the idle bound 30 s.
#[test]
fn requests_whose_end_was_lost_do_not_hold_idle_to_its_bound() {
    let Some(exe) = chromium() else { return };
    let page = "<!doctype html><title>many</title><script>\
for(let i=0;i<150;i++)fetch('/b?i='+i);</script>";
    let s = Site::start(vec![
        ("/", (200, HTML, Some(page.as_bytes().to_vec()))),
        ("/b", (200, "text/plain", Some(b"b".to_vec()))),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |o| {
        o.event_buffer = 2;
        o.idle_timeout = Duration::from_secs(30);
        o.scroll = false;
    });
    let t = std::time::Instant::now();
    let p = b.capture(&format!("{}/", s.base));
    let took = t.elapsed();
    b.finish();
    assert!(p.ok(), "{p:?}");
    assert!(p.incomplete, "the tab never fell behind: {p:?}");
    let idle: Vec<_> = p.behaviors.iter().filter(|x| x.name == "idle").collect();
    assert!(!idle.is_empty(), "{:?}", p.behaviors);
    for x in &idle {
        assert!(x.completed, "idle ran to its bound: {x:?}");
        assert!(x.ms < 20_000, "{x:?}");
    }
    assert!(
        took < Duration::from_secs(25),
        "{took:?}: {:?}",
        p.behaviors
    );
    let said = idle.iter().any(|x| x.note.contains("taken as ended"));
    eprintln!("taken as ended said: {said}; {:?}", p.behaviors);
}

/// A request cut in its head has no URL: while a page is open it may be
/// that page's, and counts as the pages' loss; once no page is open it is
/// no page's (the browser's own, or a page's that had ended), as an
/// unclaimed loss of a known URL is. Two clients cut their heads on the
/// recording proxy, one while a page waits for a slow image, one after.
#[test]
fn a_request_cut_with_no_page_open_is_no_pages_loss() {
    use std::io::Write as _;
    use std::net::TcpStream;
    use warchest_capture::proxy::NotRecorded;

    let Some(exe) = chromium() else { return };
    let page = b"<!doctype html><title>waits</title><img src=\"/pic.svg?wait=1500\">".to_vec();
    let s = Site::start(vec![
        ("/waits", (200, HTML, Some(page))),
        ("/pic.svg", (200, "image/svg+xml", Some(svg()))),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let b = Rig::start(exe, dir.path(), |_| {});
    let cut = || {
        let mut c = TcpStream::connect(b.proxy_addr()).unwrap();
        c.write_all(b"GET http://127.0.0.1:9/x HTTP/1.1\r\nHo")
            .unwrap();
    };
    let url = format!("{}/waits", s.base);
    let gone = || {
        let s = b.unrecorded().summary();
        s.counts
            .iter()
            .find(|(r, _)| *r == NotRecorded::ClientGone)
            .map_or(0, |(_, n)| *n)
    };
    let noted = |n: u64| {
        let t0 = Instant::now();
        while gone() < n {
            assert!(t0.elapsed() < Duration::from_secs(20), "cut {n} not noted");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let p = std::thread::scope(|t| {
        let capturing = t.spawn(|| b.capture(&url));
        let t0 = Instant::now();
        while !s.requests().iter().any(|r| r.starts_with("/pic.svg")) {
            assert!(t0.elapsed() < Duration::from_secs(30), "no image asked for");
            std::thread::sleep(Duration::from_millis(10));
        }
        cut();
        // Noted while the page still waits for its image.
        noted(1);
        capturing.join().unwrap()
    });
    assert!(p.ok(), "{p:?}");
    assert!(p.ms >= 1500, "{p:?}");
    cut();
    // Noted before the proxy stops (it may not have taken the connection
    // yet).
    noted(2);
    let unrecorded = b.unrecorded();
    b.finish();
    let sum = unrecorded.summary();
    let named = sum
        .named
        .iter()
        .filter(|m| m.reason == NotRecorded::ClientGone)
        .count();
    assert!(named >= 2, "{sum:?}");
    // The one while the page was open is the pages'; the one after is not.
    assert!(sum.unattributed >= 1 && sum.outside_pages >= 1, "{sum:?}");
    assert!(
        sum.lost_by_pages() >= 1 && sum.browsers_own() >= 1,
        "{sum:?}"
    );
}
