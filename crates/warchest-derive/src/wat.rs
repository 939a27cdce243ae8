//! WAT: one `metadata` record per input record, holding a JSON envelope
//! in Common Crawl's layout (docs/derive.md lists the keys and where we
//! differ from the Java tool).

use crate::html::{Token, Tokenizer, decode_entities};
use crate::json::Json;
use crate::source::SourceRecord;
use warchest::warc::RecordType;

/// Anchor texts are cut to this many characters, as Common Crawl does.
const MAX_ANCHOR: usize = 128;

/// Links, metas and scripts kept per page at most: a bound on the JSON a
/// hostile page can make us write.
const MAX_ITEMS: usize = 10_000;

/// The `HTML-Metadata` object of a page: `Head` (`Title`, `Base`,
/// `Metas`, `Link`, `Scripts`) and `Links`.
pub fn html_metadata(page: &str) -> Json {
    let mut title: Option<String> = None;
    let mut base: Option<String> = None;
    let mut metas = Vec::new();
    let mut head_links = Vec::new();
    let mut scripts = Vec::new();
    let mut links: Vec<Json> = Vec::new();
    let mut in_title = false;
    let mut svg = 0usize;
    // The anchor being read: its index in `links` and its text so far.
    let mut anchor: Option<(usize, String)> = None;
    let mut lang: Option<String> = None;
    // Just after a `<style>` start tag: its raw text is CSS.
    let mut in_style = false;
    for token in Tokenizer::new(page) {
        let after_style = std::mem::take(&mut in_style);
        match token {
            Token::Text(t) => {
                if in_title {
                    if title.is_none() {
                        title = Some(collapse(&decode_entities(t)));
                    }
                } else if let Some((_, text)) = &mut anchor
                    && text.len() < MAX_ANCHOR * 4
                {
                    text.push_str(&decode_entities(t));
                }
            }
            Token::Start(tag) => {
                let name = tag.name();
                let total = metas.len() + head_links.len() + scripts.len() + links.len();
                match name {
                    "title" if svg == 0 => in_title = true,
                    "svg" => svg += 1,
                    "html" => lang = tag.attr("lang").map(|v| v.into_owned()),
                    "base" if base.is_none() => base = tag.attr("href").map(|v| v.into_owned()),
                    "meta" if total < MAX_ITEMS => {
                        let mut m = Json::obj();
                        // Common Crawl's keys in its order, then ours.
                        for key in [
                            "name",
                            "rel",
                            "content",
                            "http-equiv",
                            "property",
                            "itemprop",
                            "charset",
                        ] {
                            if let Some(v) = tag.attr(key) {
                                m.put(key, v.into_owned());
                            }
                        }
                        if !m.is_empty() {
                            metas.push(m);
                        }
                    }
                    "link" if total < MAX_ITEMS => {
                        if let Some(href) = tag.attr("href") {
                            let mut l = Json::obj();
                            l.put("path", "LINK@/href").put("url", href.into_owned());
                            for key in ["rel", "type", "hreflang", "title"] {
                                if let Some(v) = tag.attr(key) {
                                    l.put(key, v.into_owned());
                                }
                            }
                            head_links.push(l);
                        }
                    }
                    "script" if total < MAX_ITEMS => {
                        if let Some(src) = tag.attr("src") {
                            let mut s = Json::obj();
                            s.put("path", "SCRIPT@/src").put("url", src.into_owned());
                            if let Some(t) = tag.attr("type") {
                                s.put("type", t.into_owned());
                            }
                            scripts.push(s);
                        }
                    }
                    _ if total < MAX_ITEMS => {
                        // Common Crawl's global attributes, then the
                        // tag's own link attributes.
                        let upper = name.to_ascii_uppercase();
                        for (attr, value) in tag.attrs() {
                            let attr = attr.to_ascii_lowercase();
                            if GLOBAL_LINK_ATTRS.contains(&attr.as_str()) {
                                let mut l = Json::obj();
                                l.put("path", format!("{upper}@/{attr}"))
                                    .put("url", value.into_owned());
                                links.push(l);
                            }
                        }
                        for (attr, extra) in tag_links(name) {
                            let Some(url) = tag.attr(attr) else { continue };
                            let mut l = Json::obj();
                            l.put("path", format!("{upper}@/{attr}"))
                                .put("url", url.into_owned());
                            for key in *extra {
                                if let Some(v) = tag.attr(key) {
                                    l.put(key, v.into_owned());
                                }
                            }
                            if name == "a" && !tag.self_closing() {
                                finish_anchor(&mut links, anchor.take());
                                anchor = Some((links.len(), String::new()));
                            }
                            links.push(l);
                        }
                        if matches!(name, "div" | "input")
                            && let Some(js) = tag.attr("onclick")
                        {
                            for url in crate::links::onclick_urls(&js) {
                                let mut l = Json::obj();
                                l.put("path", format!("{upper}@/onclick")).put("url", url);
                                links.push(l);
                            }
                        }
                        in_style = name == "style";
                    }
                    _ => {}
                }
            }
            Token::RawText(css) if after_style => {
                let room = MAX_ITEMS
                    .saturating_sub(metas.len() + head_links.len() + scripts.len() + links.len());
                // Entities decoded first, as Common Crawl's tool does.
                for url in crate::links::css_urls(&decode_entities(css), room) {
                    let mut l = Json::obj();
                    // `href`, not `url`: Common Crawl's key for CSS links.
                    l.put("path", "STYLE/#text").put("href", url);
                    links.push(l);
                }
            }
            Token::End(name) => match name.as_str() {
                "title" => in_title = false,
                "svg" => svg = svg.saturating_sub(1),
                "a" => finish_anchor(&mut links, anchor.take()),
                _ => {}
            },
            Token::RawText(_) | Token::Comment(_) | Token::Declaration(_) => {}
        }
    }
    finish_anchor(&mut links, anchor.take());
    if let Some(l) = lang {
        // Common Crawl files `<html lang>` as a pseudo-meta.
        let mut m = Json::obj();
        m.put("name", "HTML@/lang").put("content", l);
        metas.insert(0, m);
    }
    let mut head = Json::obj();
    if let Some(t) = title {
        head.put("Title", t);
    }
    if let Some(b) = base {
        head.put("Base", b);
    }
    if !metas.is_empty() {
        head.put("Metas", Json::Arr(metas));
    }
    if !head_links.is_empty() {
        head.put("Link", Json::Arr(head_links));
    }
    if !scripts.is_empty() {
        head.put("Scripts", Json::Arr(scripts));
    }
    let mut meta = Json::obj();
    meta.put("Head", head);
    if !links.is_empty() {
        meta.put("Links", Json::Arr(links));
    }
    meta
}

/// Attributes holding a link on any element (Common Crawl's global
/// attributes).
const GLOBAL_LINK_ATTRS: [&str; 3] = ["background", "data-href", "data-uri"];

/// The link attributes of an element and the attributes kept with each,
/// as Common Crawl's extractors read them.
fn tag_links(name: &str) -> &'static [(&'static str, &'static [&'static str])] {
    match name {
        "a" => &[(
            "href",
            &["target", "alt", "title", "rel", "hreflang", "type"],
        )],
        "applet" => &[("codebase", &[]), ("cdata", &[])],
        "area" => &[("href", &["rel"])],
        "button" => &[("formaction", &[])],
        "embed" | "frame" | "iframe" | "audio" | "track" | "source" => &[("src", &[])],
        "video" => &[("src", &[]), ("poster", &[])],
        "form" => &[("action", &["target", "method"])],
        "img" => &[("src", &["alt", "title"]), ("longdesc", &[])],
        "input" => &[("src", &[]), ("formaction", &[])],
        "object" => &[("codebase", &[]), ("cdata", &[]), ("data", &[])],
        "q" | "blockquote" | "del" | "ins" => &[("cite", &[])],
        "menuitem" => &[("icon", &[])],
        _ => &[],
    }
}

fn finish_anchor(links: &mut [Json], anchor: Option<(usize, String)>) {
    let Some((i, text)) = anchor else { return };
    let text = collapse(&text);
    if text.is_empty() {
        return;
    }
    let text: String = text.chars().take(MAX_ANCHOR).collect();
    if let Some(Json::Obj(fields)) = links.get_mut(i) {
        // Last, as Common Crawl adds it when the anchor ends.
        fields.push(("text".to_string(), Json::Str(text)));
    }
}

fn collapse(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Header fields as a JSON object: a repeated name becomes an array, as
/// Common Crawl writes it.
fn fields_object(fields: impl Iterator<Item = (String, String)>) -> Json {
    let mut out: Vec<(String, Json)> = Vec::new();
    for (name, value) in fields {
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, Json::Arr(v))) => v.push(Json::Str(value)),
            Some((_, old)) => {
                let first = std::mem::replace(old, Json::Arr(Vec::new()));
                if let Json::Arr(v) = old {
                    v.push(first);
                    v.push(Json::Str(value));
                }
            }
            None => out.push((name, Json::Str(value))),
        }
    }
    Json::Obj(out)
}

/// Whether a record's payload counts as HTML for the WAT: its
/// `WARC-Identified-Payload-Type` is `text/html` or
/// `application/xhtml+xml`, or else its HTTP `Content-Type` contains
/// `html` (Common Crawl's rule).
pub fn is_html(rec: &SourceRecord) -> bool {
    if let Some(t) = rec.field("WARC-Identified-Payload-Type") {
        let t = t.trim().to_ascii_lowercase();
        return t.starts_with("text/html") || t.starts_with("application/xhtml+xml");
    }
    rec.payload_content_type()
        .is_some_and(|c| c.to_ascii_lowercase().contains("html"))
}

/// The WAT envelope of `rec`, read from the file named `filename`.
pub fn envelope(rec: &SourceRecord, filename: &str) -> Json {
    let mut container = Json::obj();
    let compressed = rec.codec != warchest::codec::Codec::None;
    container
        .put("Filename", filename)
        .put("Compressed", compressed)
        .put("Offset", rec.offset);
    if let (Some(header), Some(stored)) = (rec.gzip_header_len, rec.stored_len) {
        let mut g = Json::obj();
        g.put("Deflate-Length", stored.saturating_sub(header + 8))
            .put("Header-Length", header)
            .put("Footer-Length", 8u64)
            .put("Inflated-CRC", (rec.inflated_crc as i32).to_string())
            .put("Inflated-Length", rec.inflated_len);
        container.put("Gzip-Metadata", g);
    }
    let mut env = Json::obj();
    if let Some(arc) = &rec.arc {
        // An ARC record: its URL-record line, as Common Crawl's tool
        // gives it (`Format: ARC`, `ARC-Header-Metadata`).
        let mut fields = Json::obj();
        fields
            .put("Target-URI", arc.url.clone())
            .put("IP-Address", arc.ip.clone())
            .put("Date", arc.date.clone())
            .put("Content-Type", arc.content_type.clone())
            .put("Content-Length", arc.length.clone());
        env.put("Format", "ARC")
            .put("ARC-Header-Length", arc.len)
            .put("Block-Digest", rec.block_digest.clone())
            .put("Actual-Content-Length", rec.block_len)
            .put("ARC-Header-Metadata", fields);
    } else {
        env.put("Format", "WARC")
            .put("WARC-Header-Length", rec.header_len)
            .put("Block-Digest", rec.block_digest.clone())
            .put("Actual-Content-Length", rec.block_len)
            .put(
                "WARC-Header-Metadata",
                fields_object(rec.fields.iter().cloned()),
            );
    }
    let mut payload = Json::obj();
    payload
        .put("Actual-Content-Length", rec.block_len)
        .put("Block-Digest", rec.block_digest.clone())
        .put("Trailing-Slop-Length", rec.trailing_slop);
    match (rec.record_type, &rec.http) {
        (_, _)
            if rec.arc.as_ref().is_some_and(|a| {
                a.url
                    .get(..11)
                    .is_some_and(|p| p.eq_ignore_ascii_case("filedesc://"))
            }) =>
        {
            // An ARC file's `filedesc://` record.
            payload.put("Actual-Content-Type", "alexa/filedesc");
            payload.put("Filedesc-Metadata", filedesc(&rec.payload));
        }
        (RecordType::Warcinfo, _) => {
            payload.put("Actual-Content-Type", "application/warc-fields");
            payload.put("WARC-Info-Metadata", warc_fields(&rec.payload, false));
        }
        (RecordType::Metadata, _) => {
            payload.put("Actual-Content-Type", "application/metadata-fields");
            let mut m = Json::obj();
            m.put("Metadata-Records", warc_fields(&rec.payload, true));
            payload.put("WARC-Metadata-Metadata", m);
        }
        (_, Some(head)) if head.is_request() => {
            payload.put("Actual-Content-Type", "application/http; msgtype=request");
            let mut m = Json::obj();
            let mut msg = Json::obj();
            msg.put("Method", lossy(head.method().unwrap_or_default()))
                .put("Path", lossy(head.request_target().unwrap_or_default()))
                .put("Version", lossy(head.version().unwrap_or_default()));
            m.put("Request-Message", msg);
            http_common(&mut m, rec, head);
            payload.put("HTTP-Request-Metadata", m);
        }
        (_, Some(head)) => {
            payload.put("Actual-Content-Type", "application/http; msgtype=response");
            let mut m = Json::obj();
            let mut msg = Json::obj();
            msg.put("Version", lossy(head.version().unwrap_or_default()))
                .put(
                    "Status",
                    head.status().map(|s| s.to_string()).unwrap_or_default(),
                )
                .put("Reason", lossy(head.reason()));
            m.put("Response-Message", msg);
            http_common(&mut m, rec, head);
            if rec.record_type != RecordType::Revisit && is_html(rec) {
                let body = crate::charset::decode(
                    &rec.payload,
                    rec.payload_content_type().as_deref(),
                    true,
                );
                m.put("HTML-Metadata", html_metadata(&body.text));
            }
            payload.put("HTTP-Response-Metadata", m);
        }
        // Resources and conversions: the envelope only, as Common Crawl's
        // tool maps no factory to them.
        _ => {}
    }
    env.put("Payload-Metadata", payload);
    let mut root = Json::obj();
    root.put("Container", container).put("Envelope", env);
    root
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn http_common(m: &mut Json, rec: &SourceRecord, head: &warchest::http::HttpHead) {
    m.put("Headers-Length", head.raw().len() as u64);
    m.put(
        "Headers",
        fields_object(
            head.headers()
                .map(|f| (f.name_str().into_owned(), lossy(&f.value()))),
        ),
    );
    m.put("Entity-Length", rec.entity_len)
        .put("Entity-Digest", rec.entity_digest.clone())
        .put("Entity-Trailing-Slop-Length", 0u64);
}

/// An ARC `filedesc://` block: the version line (`1 1 Organization`),
/// the field-names line and the rest.
fn filedesc(block: &[u8]) -> Json {
    let text = String::from_utf8_lossy(block);
    // The block as the reader gives it may start with the URL-record line.
    let text = match text.get(..11) {
        Some(p) if p.eq_ignore_ascii_case("filedesc://") => {
            text.split_once('\n').map_or("", |(_, rest)| rest)
        }
        _ => &text,
    };
    let mut lines = text.splitn(3, '\n');
    let mut o = Json::obj();
    let version = lines.next().unwrap_or("").trim();
    let mut words = version.splitn(3, ' ');
    o.put("Major-Version", words.next().unwrap_or("").to_string())
        .put("Minor-Version", words.next().unwrap_or("").to_string())
        .put(
            "Organization",
            words.next().unwrap_or("").trim().to_string(),
        )
        .put("Format", lines.next().unwrap_or("").trim().to_string())
        .put("Data", lines.next().unwrap_or("").to_string());
    o
}

/// `name: value` lines of a warcinfo or metadata block: an object (or, for
/// metadata, an array of `{Name, Value}`).
fn warc_fields(block: &[u8], records: bool) -> Json {
    let text = String::from_utf8_lossy(block);
    let pairs = text.lines().filter_map(|l| {
        let (n, v) = l.split_once(':')?;
        let n = n.trim();
        (!n.is_empty()).then(|| (n.to_string(), v.trim().to_string()))
    });
    if records {
        Json::Arr(
            pairs
                .map(|(n, v)| {
                    let mut o = Json::obj();
                    o.put("Name", n).put("Value", v);
                    o
                })
                .collect(),
        )
    } else {
        let mut o = Json::obj();
        for (n, v) in pairs {
            o.put(&n, v);
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_metadata_keys() {
        let page = r#"<html lang="en"><head><title>T &amp; t</title><base href="http://b/">
            <meta name="description" content="d"><meta property="og:title" content="o">
            <link rel="stylesheet" href="/s.css" type="text/css"><script src="/a.js"></script></head>
            <body><a href="/x" title="tt">Go <b>there</b></a><img src="i.png" alt="pic">
            <form action="/f"></form><svg><title>no</title></svg></body></html>"#;
        let m = html_metadata(page).to_text();
        let v: serde_json::Value = serde_json::from_str(&m).unwrap();
        let head = &v["Head"];
        assert_eq!(head["Title"], "T & t");
        assert_eq!(head["Base"], "http://b/");
        assert_eq!(head["Metas"][0]["name"], "HTML@/lang");
        assert_eq!(head["Metas"][1]["content"], "d");
        assert_eq!(head["Metas"][2]["property"], "og:title");
        assert_eq!(head["Link"][0]["path"], "LINK@/href");
        assert_eq!(head["Link"][0]["rel"], "stylesheet");
        assert_eq!(head["Scripts"][0]["url"], "/a.js");
        let links = &v["Links"];
        assert_eq!(links[0]["path"], "A@/href");
        assert_eq!(links[0]["url"], "/x");
        assert_eq!(links[0]["text"], "Go there");
        assert_eq!(links[0]["title"], "tt");
        assert_eq!(links[1]["path"], "IMG@/src");
        assert_eq!(links[1]["alt"], "pic");
        assert_eq!(links[2]["path"], "FORM@/action");
    }

    #[test]
    fn links_from_css_script_handlers_and_every_link_attribute() {
        let page = r#"<html><head><style>
            @import "/print.css";
            body { background: url('/bg.png') }
            .x { background-image: url(&quot;/ent.png&quot;) }
            </style><style></style></head>
            <body data-href="/dh"><div onclick="location.href='/next.html'">n</div>
            <input type="button" onclick="window.open('/pop.html', 'w')">
            <span onclick="location='/not-read.html'">s</span>
            <script>var u = "url(/no.png)";</script>
            <video src="/v.mp4" poster="/p.jpg"></video>
            <blockquote cite="/q"></blockquote>
            <img src="/i.png" longdesc="/d.html" alt="a">
            <form action="/f" method="post" target="_top"></form></body></html>"#;
        let v: serde_json::Value = serde_json::from_str(&html_metadata(page).to_text()).unwrap();
        let links: Vec<(String, String, String)> = v["Links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let (key, url) = if let Some(h) = l.get("href") {
                    ("href", h)
                } else {
                    ("url", &l["url"])
                };
                (
                    l["path"].as_str().unwrap().to_string(),
                    key.to_string(),
                    url.as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want: Vec<(String, String, String)> = [
            // url() first, then @import, with the key `href`.
            ("STYLE/#text", "href", "/bg.png"),
            ("STYLE/#text", "href", "/ent.png"),
            ("STYLE/#text", "href", "/print.css"),
            ("BODY@/data-href", "url", "/dh"),
            ("DIV@/onclick", "url", "/next.html"),
            ("INPUT@/onclick", "url", "/pop.html"),
            ("VIDEO@/src", "url", "/v.mp4"),
            ("VIDEO@/poster", "url", "/p.jpg"),
            ("BLOCKQUOTE@/cite", "url", "/q"),
            ("IMG@/src", "url", "/i.png"),
            ("IMG@/longdesc", "url", "/d.html"),
            ("FORM@/action", "url", "/f"),
        ]
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
        assert_eq!(links, want);
        let form = &v["Links"][11];
        assert_eq!(form["method"], "post");
        assert_eq!(form["target"], "_top");
        assert_eq!(v["Links"][9]["alt"], "a");
    }

    #[test]
    fn repeated_fields_become_arrays() {
        let o = fields_object(
            [("A", "1"), ("B", "2"), ("A", "3")]
                .into_iter()
                .map(|(a, b)| (a.to_string(), b.to_string())),
        );
        assert_eq!(o.to_text(), r#"{"A":["1","3"],"B":"2"}"#);
    }
}
