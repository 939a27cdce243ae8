//! The web pages of `serve`: collection, search results, captures of a URL,
//! a record (headers, payload, validation findings), and what replay
//! inserts into archived pages (the client script and the banner).

use std::fmt::Write as _;
use std::io::{self, Read, Seek};

use super::exchange::{Request, Responder, escape};
use super::names::Names;
use super::{HResult, text_html, text_plain};
use warchest::archive::Record;
use warchest::codec::Source;
use warchest::http::HttpHead;
use warchest::warc::WarcHeader;
use warchest_replay::Collection;
use warchest_replay::access::{Verdict, Viewer};
use warchest_replay::store::{Capture, KeyRange, MatchType, Query};
use warchest_validate::{Options, Validator};
use warchest_wacz::iso_date;

/// Most captures listed on one page.
const MAX_LISTED: usize = 10_000;
/// Most distinct URLs listed in search results.
const MAX_URLS: usize = 1000;
/// Payload text shown on a record page.
const PREVIEW: u64 = 64 << 10;

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1b1b1b}\
header{background:#1d3557;color:#fff;padding:10px 18px}header a{color:#fff;text-decoration:none;font-weight:bold}\
main{padding:12px 18px}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}\
pre{background:#f4f4f4;padding:8px;overflow:auto;max-height:40em;white-space:pre-wrap;word-break:break-all}\
input[type=text]{width:32em}.error{color:#a00}.warning{color:#a60}";

pub(super) fn page(coll: &str, title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t} - warchest</title>\
<style>{STYLE}</style></head><body><header><a href=\"/{c}/\">warchest · {c}</a></header><main>\
<h1>{t}</h1>{body}</main></body></html>",
        t = escape(title),
        c = escape(coll),
    )
}

/// The search form, `selected` the match type shown chosen.
fn search_form_with(coll: &str, value: &str, selected: MatchType) -> String {
    let opt = |v: &str, label: &str| {
        let sel = if MatchType::parse(v) == Some(selected) {
            " selected"
        } else {
            ""
        };
        format!("<option value=\"{v}\"{sel}>{label}</option>")
    };
    format!(
        "<form action=\"/{c}/search\" method=\"get\" id=\"search\"><input type=\"text\" name=\"url\" value=\"{v}\" \
placeholder=\"URL, URL prefix or host\"> <select name=\"match\">{}{}{}{}</select> <button>Search</button></form>",
        opt("exact", "this URL"),
        opt("prefix", "URLs starting with"),
        opt("host", "host"),
        opt("domain", "domain and subdomains"),
        c = escape(coll),
        v = escape(value),
    )
}

/// The search form as a page opens it: a URL prefix search.
pub(super) fn search_form(coll: &str, value: &str) -> String {
    search_form_with(coll, value, MatchType::Prefix)
}

/// `n` and the noun, plural unless `n` is 1: "1 file", "2 files".
pub(super) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What a search of `m` asked for, before the query: "URLs starting with".
fn asked(m: MatchType) -> &'static str {
    match m {
        MatchType::Exact => "matching exactly",
        MatchType::Prefix => "starting with",
        MatchType::Host => "of the host",
        MatchType::Domain => "of the domain (and subdomains)",
    }
}

/// The collection page.
/// The collection's page: the search forms, its files and counts; the
/// files' download links only when no access rule is set (whole files are
/// then not served).
pub(super) fn home(coll: &Collection, fulltext: bool, downloads: bool) -> warchest::Result<String> {
    let mut b = search_form(&coll.name, "");
    if fulltext {
        b.push_str(&warchest_search::web::form_html(
            &format!("/{}/fulltext", coll.name),
            "",
        ));
    }
    let n = coll.store.len()?;
    let _ = write!(
        b,
        "<p>{} in {}.</p>",
        count(n, "capture", "captures"),
        count(coll.store.sources().len() as u64, "file", "files")
    );
    b.push_str("<table><tr><th>file</th><th>entries</th><th></th></tr>");
    // Named relative to the roots served: the page never shows where the
    // files are on the server.
    let names = Names::of(coll);
    for s in coll.store.sources() {
        let link = if downloads {
            format!(
                "<a href=\"/{}/file/{}\">download</a>",
                escape(&coll.name),
                escape(&names.href(s.id))
            )
        } else {
            String::new()
        };
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{link}</td></tr>",
            escape(&names.name(s.id)),
            s.entries,
        );
    }
    b.push_str("</table>");
    // What was served damaged, and what the index cache found unreadable
    // of itself (both also logged as warnings when met).
    let _ = write!(
        b,
        "<p id=\"served-damage\">Since the server started: {} served damaged \
(truncated, or read with lenient recoveries), {} that could not be decoded.</p>",
        count(coll.served.damaged(), "record", "records"),
        count(coll.served.undecodable(), "payload", "payloads"),
    );
    let d = coll.store.cache_damage();
    let _ = write!(
        b,
        "<p id=\"index-damage\">Unreadable entries in the index cache: {} \
({} sources, {} captures, {} record locations).</p>",
        d.total(),
        d.sources,
        d.captures,
        d.locations
    );
    Ok(page(&coll.name, "Collection", &b))
}

/// The full-text search page around `body` (the form, the results).
pub(super) fn fulltext_page(coll: &str, body: &str) -> String {
    page(coll, "Full-text search", body)
}

/// The URLs matching a search.
pub(super) fn search_results(
    coll: &Collection,
    who: &Viewer<'_>,
    q: &str,
    m: MatchType,
) -> warchest::Result<String> {
    let mut rows: Vec<(String, String, u64, String, String)> = Vec::new();
    let mut truncated = false;
    coll.store.query(
        &Query {
            range: KeyRange::new(q, m),
            from: None,
            to: None,
            limit: MAX_LISTED * 10,
            reverse: false,
            skip: 0,
            resume: None,
        },
        |c| {
            if !who.sees(&c) {
                return true;
            }
            let url = c.entry.url.clone().unwrap_or_default();
            match rows.last_mut() {
                Some(r) if r.0 == c.entry.urlkey => {
                    r.2 += 1;
                    r.4 = c.entry.timestamp.clone();
                }
                _ => {
                    if rows.len() >= MAX_URLS {
                        truncated = true;
                        return false;
                    }
                    rows.push((
                        c.entry.urlkey.clone(),
                        url,
                        1,
                        c.entry.timestamp.clone(),
                        c.entry.timestamp.clone(),
                    ));
                }
            }
            true
        },
    )?;
    let mut b = search_form_with(&coll.name, q, m);
    let _ = write!(
        b,
        "<p id=\"count\">{}{} {} <code>{}</code>.</p>",
        count(rows.len() as u64, "URL", "URLs"),
        if truncated { " (the first ones)" } else { "" },
        asked(m),
        escape(q)
    );
    b.push_str(
        "<table id=\"results\"><tr><th>URL</th><th>captures</th><th>first</th><th>last</th></tr>",
    );
    for (_, u, n, first, last) in &rows {
        let _ = write!(
            b,
            "<tr><td><a href=\"/{c}/*/{ue}\">{ut}</a></td><td>{n}</td><td>{}</td><td>{}</td></tr>",
            iso_date(first),
            iso_date(last),
            c = escape(&coll.name),
            ue = escape(u),
            ut = escape(u),
        );
    }
    b.push_str("</table>");
    Ok(page(&coll.name, &format!("Search: {q}"), &b))
}

/// The page for a URL the collection does not have.
pub(super) fn not_archived(coll: &Collection, target: &str) -> String {
    let b = format!(
        "<p>The collection has no capture of <code>{}</code>.</p>{}",
        escape(target),
        search_form(&coll.name, target)
    );
    page(&coll.name, "Not in the archive", &b)
}

/// An error page.
pub(super) fn error_page(status: u16, msg: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{status}</title></head>\
<body><h1>{status}</h1><p>{}</p></body></html>",
        escape(msg)
    )
}

/// What goes at the start of a replayed page's head: the capture's facts
/// and the client script. `ui` is the UI origin the client tells of its
/// navigation when the UI frames it (the banner follows).
pub(crate) fn head_insert(coll: &str, cap: &Capture, base: &str, ui: &str) -> String {
    let cfg = serde_json::json!({
        "prefix": format!("/{coll}/"),
        "timestamp": cap.entry.timestamp,
        "url": base,
        "collection": coll,
        "ui": ui,
        "record": format!("/{coll}/record/{}/{}", cap.src, cap.entry.offset),
    });
    // `</script>` inside the JSON would end the element.
    let cfg = cfg.to_string().replace('<', "\\u003c");
    format!("<script>window.__warchest={cfg};</script><script src=\"/_/client.js\"></script>")
}

/// What goes before a service worker's script: its configuration (the
/// worker's archived URL `url`, the time `timestamp` its requests are
/// replayed at); the client script follows.
pub(crate) fn worker_prelude(coll: &str, timestamp: &str, url: &str) -> String {
    let cfg = serde_json::json!({
        "prefix": format!("/{coll}/"),
        "timestamp": timestamp,
        "url": url,
        "collection": coll,
    });
    format!("self.__warchest={cfg};\n")
}

/// The banner at the top of a replayed page.
pub(crate) fn banner(coll: &str, cap: &Capture, base: &str) -> String {
    let c = escape(coll);
    let u = escape(base);
    format!(
        "<div id=\"warchest-banner\" style=\"all:initial;display:block;position:relative;z-index:2147483647;\
background:#1d3557;color:#fff;font:14px/1.5 system-ui,sans-serif;padding:8px 14px;margin:0;text-align:left\">\
<span style=\"all:unset;font-weight:bold\">warchest archive</span> · \
<span id=\"warchest-banner-url\">{u}</span> · captured <time id=\"warchest-banner-date\" datetime=\"{iso}\">{iso}</time> \
· collection {c} · <a id=\"warchest-banner-captures\" style=\"color:#ffd166\" href=\"/{c}/*/{u}\">all captures</a> \
· <a id=\"warchest-banner-record\" style=\"color:#ffd166\" href=\"/{c}/record/{src}/{off}\">record</a></div>",
        iso = iso_date(&cap.entry.timestamp),
        src = cap.src,
        off = cap.entry.offset,
    )
}

/// The script of the UI's framed page: the banner, the title and the
/// address follow the page in the frame, which tells them (client.js,
/// `tellUi`) by `postMessage`. Only messages from the frame, sent from the
/// replay origin, are read; what they say is put in as text.
const FOLLOW_JS: &str = "(function(){var R=document.currentScript.dataset.replay,\
C=document.currentScript.dataset.coll;\
window.addEventListener('message',function(e){var f=document.getElementById('warchest-frame');\
if(e.origin!==R||!f||e.source!==f.contentWindow)return;var d=e.data;\
if(!d||d.warchest!=='location'||typeof d.url!=='string'||!/^https?:\\/\\//i.test(d.url)\
||!/^[0-9]{14}$/.test(d.timestamp))return;\
var t=d.timestamp,iso=t.slice(0,4)+'-'+t.slice(4,6)+'-'+t.slice(6,8)+'T'+t.slice(8,10)+':'+t.slice(10,12)+':'+t.slice(12,14)+'Z';\
var u=document.getElementById('warchest-banner-url');if(u)u.textContent=d.url;\
var w=document.getElementById('warchest-banner-date');if(w){w.textContent=iso;w.setAttribute('datetime',iso);}\
var a=document.getElementById('warchest-banner-captures');if(a)a.setAttribute('href','/'+C+'/*/'+d.url);\
var r=document.getElementById('warchest-banner-record');\
if(r&&typeof d.record==='string'&&/^\\/[^\\/]+\\/record\\/[0-9]+\\/[0-9]+$/.test(d.record))r.setAttribute('href',d.record);\
document.title=d.url+' - warchest';\
try{history.replaceState(null,'','/'+C+'/'+t+'/'+d.url);}catch(x){}});})();";

/// The UI's page for a top-level replay URL: the banner, and the page
/// itself in a frame from the replay origin (`src`, on `replay_base`).
pub(crate) fn frame(coll: &str, cap: &Capture, base: &str, src: &str, replay_base: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{u} - warchest</title>\
<style>html,body{{margin:0;height:100%}}body{{display:flex;flex-direction:column}}\
#warchest-frame{{flex:1;border:0;width:100%}}</style>\
<script data-replay=\"{r}\" data-coll=\"{c}\">{FOLLOW_JS}</script></head><body>{banner}\
<iframe id=\"warchest-frame\" src=\"{s}\"></iframe></body></html>",
        u = escape(base),
        banner = banner(coll, cap, base),
        s = escape(src),
        r = escape(replay_base),
        c = escape(coll),
    )
}

/// `/{coll}/record/{src}/{offset}[/warc|/payload]`.
pub(super) fn record(
    coll: &Collection,
    who: &Viewer<'_>,
    _req: &Request,
    resp: &mut Responder<'_>,
    rest: &str,
) -> HResult {
    // NAME/OFFSET[/warc|/payload], the name holding `/` perhaps.
    let (head, what) = match rest.rsplit_once('/') {
        Some((h, w)) if w == "warc" || w == "payload" => (h, w),
        _ => (rest, ""),
    };
    let (src, off) = head.rsplit_once('/').unwrap_or((head, ""));
    let names = Names::of(coll);
    let (Some(src), Ok(off)) = (names.find(coll, src), off.parse::<u64>()) else {
        resp.source = "miss";
        resp.send(404, &text_plain(), b"no such record\n")?;
        return Ok(());
    };
    // An offset where no record starts may read as damage: not found.
    let mut reader = match src.reader_at(off) {
        Ok(r) => r,
        Err(e) if src.url.is_some() => return remote_failure(resp, &e),
        Err(_) => {
            resp.source = "miss";
            resp.send(404, &text_plain(), b"no record at this offset\n")?;
            return Ok(());
        }
    };
    let mut rec = match reader.next_record() {
        Ok(Some(rec)) => rec,
        Err(e) if src.url.is_some() && is_io(&e) => return remote_failure(resp, &e),
        _ => {
            resp.source = "miss";
            resp.send(404, &text_plain(), b"no record at this offset\n")?;
            return Ok(());
        }
    };
    if rec.location().offset != off {
        resp.source = "miss";
        resp.send(404, &text_plain(), b"no record starts at this offset\n")?;
        return Ok(());
    }
    let header = rec.header().clone();
    // Judged as its capture is: by its target URI and date (a record with
    // neither, a warcinfo, is no capture of anything).
    if !who.sees_all()
        && let Some(uri) = header.target_uri()
    {
        let ts = header
            .date()
            .and_then(|d| d.ok())
            .map(|d| d.timestamp14())
            .unwrap_or_default();
        match who.verdict(&warchest_index::surt::url_key(&uri), &ts) {
            Verdict::Allow => {}
            Verdict::Block => return super::blocked(resp, "this record"),
            Verdict::Exclude => {
                resp.source = "miss";
                resp.send(404, &text_plain(), b"no record at this offset\n")?;
                return Ok(());
            }
        }
    }
    let raw_header = String::from_utf8_lossy(rec.raw_header()).into_owned();
    match what {
        "warc" => {
            // Of an object, the index's length when it has the record (no
            // reading of the record to learn it); else the record's own.
            // (Whole-record downloads and validation need the length.)
            let mut length = src
                .url
                .as_ref()
                .and_then(|_| header.record_id())
                .and_then(|id| coll.store.record_of_id_in(&id, src.id).ok().flatten())
                .filter(|(_, o, _)| *o == off)
                .and_then(|(_, _, l)| l);
            if length.is_none() {
                length = rec.finish()?.stored_len;
            }
            let Some(len) = length else {
                resp.source = "miss";
                resp.send(
                    404,
                    &text_plain(),
                    b"this record has no stored length of its own (whole-file compression)\n",
                )?;
                return Ok(());
            };
            resp.source = "archive";
            let gz = src.name.ends_with(".gz") || src.name.contains(".gz#");
            let h = vec![
                ("Content-Type".into(), "application/warc".into()),
                (
                    "Content-Disposition".into(),
                    format!(
                        "attachment; filename=\"record-{off}.warc{}\"",
                        if gz { ".gz" } else { "" }
                    ),
                ),
            ];
            // Of an object, one range request (fetched before the head
            // is sent unless large).
            let mut s = match src.open_range(off, len) {
                Ok(s) => s,
                Err(e) if src.url.is_some() => return remote_failure(resp, &e),
                Err(e) => return Err(Box::new(e)),
            };
            let mut body = resp.stream(200, "OK", &h)?;
            io::copy(&mut (&mut s).take(len), &mut body)?;
            body.finish()?;
            Ok(())
        }
        "payload" => {
            resp.source = "archive";
            let (head, mime) = head_and_media_type(&mut rec, &header)?;
            let mime = mime.unwrap_or_else(|| "application/octet-stream".into());
            let mut h = vec![("Content-Type".to_string(), mime)];
            for c in head.iter().flat_map(|hd| hd.content_encoding()) {
                h.push(("Content-Encoding".into(), c.name().to_string()));
            }
            let payload = rec.payload(false).map_err(|e| {
                coll.served.count_undecodable();
                io::Error::new(io::ErrorKind::InvalidData, e.to_string())
            })?;
            let mut payload = super::ReadWatch::new(payload);
            h.push(("X-Content-Type-Options".into(), "nosniff".into()));
            // An archived document opened here runs in an origin of its
            // own, without scripts: never as this server.
            h.push(("Content-Security-Policy".into(), "sandbox".into()));
            let mut body = resp.stream(200, "OK", &h)?;
            let sent = io::copy(&mut payload, &mut body);
            let failed = payload.failed;
            drop(payload);
            if let Err(e) = sent {
                // The payload stopped the copy (its transfer coding, or
                // the record): counted, and what the record's reading met
                // said. A client gone away is neither.
                if failed {
                    coll.served.count_undecodable();
                    if warchest_replay::report_damage(
                        &src.name,
                        off,
                        Some(rec.finish()),
                        &mut reader,
                    ) {
                        coll.served.count_damaged();
                    }
                }
                return Err(Box::new(e));
            }
            body.finish()?;
            // Sent by now: a damaged record is said in the log, and counted.
            if warchest_replay::report_damage(&src.name, off, Some(rec.finish()), &mut reader) {
                coll.served.count_damaged();
            }
            Ok(())
        }
        "" => {
            let (head, mime) = head_and_media_type(&mut rec, &header)?;
            let mime = mime.unwrap_or_default();
            let mut preview = String::new();
            let textual = mime.starts_with("text/")
                || mime.contains("json")
                || mime.contains("javascript")
                || mime.contains("xml");
            // What the page must say of the record's damage: the preview
            // is otherwise shown as if whole.
            let mut damage = Vec::new();
            if textual {
                match rec.payload(true) {
                    Ok(mut payload) => {
                        let mut buf = Vec::new();
                        // A payload that fails to decode is shown as far
                        // as it went, and the error said.
                        if let Err(e) = (&mut payload).take(PREVIEW).read_to_end(&mut buf) {
                            damage.push(format!(
                                "the payload did not decode to its end ({e}): shown as far as it went"
                            ));
                        }
                        preview = String::from_utf8_lossy(&buf).into_owned();
                    }
                    Err(e) => damage.push(format!("the payload could not be decoded: {e}")),
                }
            }
            // Said as the log says a damaged record served: one reasoning.
            // A remote source that cannot be read on is the store's or the
            // network's failure (502), not damage in the archive.
            let end = rec.finish();
            if let Err(e) = &end
                && src.url.is_some()
                && is_io(e)
            {
                return remote_failure(resp, e);
            }
            damage.extend(warchest_replay::record_damage(
                &src.name,
                Some(&end),
                &mut reader,
            ));
            let length = end.ok().and_then(|e| e.stored_len);
            let body = record_page(
                coll,
                &src,
                off,
                &header,
                &raw_header,
                head.as_ref(),
                &mime,
                textual,
                &preview,
                &damage,
                length,
            )?;
            resp.source = "page";
            resp.send(200, &text_html(), body.as_bytes())?;
            Ok(())
        }
        _ => {
            resp.source = "miss";
            resp.send(404, &text_plain(), b"no such view\n")?;
            Ok(())
        }
    }
}

/// Whether `e` is a failure to read bytes (of a remote source: the store
/// or the network), rather than bytes that are not a record.
pub(super) fn is_io(e: &warchest::Error) -> bool {
    matches!(e.kind(), warchest::error::ErrorKind::Io(_))
}

/// A remote source could not be read: 502 with what failed (the URL and
/// byte offset are in the message), never a record cut short.
pub(super) fn remote_failure(resp: &mut Responder<'_>, e: &warchest::Error) -> HResult {
    resp.source = "error";
    let body = error_page(502, &format!("cannot read the archive: {e}"));
    resp.send(502, &text_html(), body.as_bytes())?;
    Ok(())
}

/// The HTTP head at the start of a record's block ([`Record::http`]), and
/// the media type of what follows: the head's, else the record's.
fn head_and_media_type<S: Source>(
    rec: &mut Record<'_, S>,
    header: &WarcHeader,
) -> warchest::Result<(Option<HttpHead>, Option<String>)> {
    let head = rec.http()?.cloned();
    let mime = super::payload_media_type(head.as_ref(), header);
    Ok((head, mime))
}

#[allow(clippy::too_many_arguments)]
fn record_page(
    coll: &Collection,
    src: &warchest_replay::store::Source,
    off: u64,
    header: &warchest::warc::WarcHeader,
    raw_header: &str,
    head: Option<&warchest::http::HttpHead>,
    mime: &str,
    textual: bool,
    preview: &str,
    damage: &[String],
    length: Option<u64>,
) -> warchest::Result<String> {
    let c = escape(&coll.name);
    let names = Names::of(coll);
    let (name, href) = (names.name(src.id), escape(&names.href(src.id)));
    let base = format!("/{c}/record/{href}/{off}");
    let mut b = String::new();
    let _ = write!(
        b,
        "<p>{} at offset {off}{}.</p><p><a href=\"{base}/warc\" id=\"download-record\">download the record (application/warc)</a> · \
<a href=\"/{c}/file/{}\">download the file</a> · <a href=\"{base}/payload\">payload</a>",
        escape(&name),
        length.map_or(String::new(), |l| format!(", {l} bytes stored")),
        href,
    );
    if let (Some(u), Some(d)) = (header.target_uri(), header.date())
        && let Ok(d) = d
    {
        let ts = d.timestamp14();
        let _ = write!(b, " · <a href=\"/{c}/{ts}/{}\">replay</a>", escape(&u));
    }
    b.push_str("</p><h2>WARC header</h2><pre id=\"warc-header\">");
    b.push_str(&escape(raw_header));
    b.push_str("</pre>");
    if let Some(h) = head {
        b.push_str("<h2>HTTP header</h2><pre id=\"http-header\">");
        b.push_str(&escape(&String::from_utf8_lossy(h.raw())));
        b.push_str("</pre>");
    }
    b.push_str("<h2>Payload</h2>");
    if !damage.is_empty() {
        b.push_str("<ul id=\"payload-damage\">");
        for d in damage {
            let _ = write!(b, "<li>{}</li>", escape(d));
        }
        b.push_str("</ul>");
    }
    if mime.starts_with("image/") {
        let _ = write!(
            b,
            "<img id=\"payload-image\" src=\"{base}/payload\" style=\"max-width:100%\">"
        );
    } else if textual {
        let _ = write!(b, "<pre id=\"payload-text\">{}</pre>", escape(preview));
        if preview.len() as u64 >= PREVIEW {
            let _ = write!(b, "<p>(first {PREVIEW} bytes)</p>");
        }
    } else {
        let _ = write!(
            b,
            "<p><a href=\"{base}/payload\">{}</a></p>",
            escape(if mime.is_empty() { "payload" } else { mime })
        );
    }
    b.push_str("<h2>Validation</h2>");
    match length {
        Some(len) => {
            let mut findings = Vec::new();
            let mut v = Validator::new(Options::default());
            let mut s = src.open_range(off, len)?;
            s.seek(io::SeekFrom::Start(off))?;
            let name = format!("{name}@{off}");
            let _ = v.validate_reader(&name, (&mut s).take(len), &mut |f| findings.push(f));
            // Record-level findings only: the file-level rules (a first
            // warcinfo record...) do not apply to a record cut out.
            findings.retain(|f| !f.rule.starts_with("file.") && f.rule != "warc.warcinfo.first");
            if findings.is_empty() {
                b.push_str("<p id=\"findings\">No findings.</p>");
            } else {
                b.push_str("<table id=\"findings\"><tr><th>severity</th><th>rule</th><th>what</th><th>clause</th></tr>");
                for f in &findings {
                    let _ = write!(
                        b,
                        "<tr class=\"{sev}\"><td>{sev}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        escape(f.rule),
                        escape(&f.message),
                        escape(f.clause),
                        sev = escape(&f.severity.to_string()),
                    );
                }
                b.push_str("</table>");
            }
        }
        None => b.push_str("<p>Not validated: the record has no stored length of its own.</p>"),
    }
    let title = header
        .target_uri()
        .map(|u| format!("Record: {u}"))
        .unwrap_or_else(|| "Record".into());
    Ok(page(&coll.name, &title, &b))
}
