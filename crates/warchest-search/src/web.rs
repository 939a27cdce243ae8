//! Search on a web server: a request read from a query string, the
//! results as an HTML fragment (hits with snippet and replay link, facets,
//! histogram, paging) and as JSON. A server frames the fragment in its
//! own page; everything taken from the request or the archive is escaped.

use crate::search::{FacetValue, SearchRequest, SearchResults, escape_html};

/// The request a query string (`q`, `page`, `n`, `host`, `year`, `mime`,
/// `language`; without the `?`) asks for. Unknown parameters are ignored;
/// a page or size that is not a number is the default.
pub fn request_from_query(query: &str) -> SearchRequest {
    let mut r = SearchRequest::new("");
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        let v = v.into_owned();
        match k.as_ref() {
            "q" => r.query = v,
            "page" => r.page = v.parse().unwrap_or(1),
            "n" => r.per_page = v.parse().unwrap_or(crate::search::DEFAULT_PER_PAGE),
            "host" if !v.is_empty() => r.host = Some(v),
            "year" => r.year = v.parse().ok(),
            "mime" if !v.is_empty() => r.mime = Some(v),
            "language" if !v.is_empty() => r.language = Some(v),
            _ => {}
        }
    }
    r
}

/// The query string of `r` (for links to other pages and facets).
pub fn query_of(r: &SearchRequest) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    s.append_pair("q", &r.query);
    if r.page > 1 {
        s.append_pair("page", &r.page.to_string());
    }
    if r.per_page != crate::search::DEFAULT_PER_PAGE {
        s.append_pair("n", &r.per_page.to_string());
    }
    if let Some(h) = &r.host {
        s.append_pair("host", h);
    }
    if let Some(y) = r.year {
        s.append_pair("year", &y.to_string());
    }
    if let Some(m) = &r.mime {
        s.append_pair("mime", m);
    }
    if let Some(l) = &r.language {
        s.append_pair("language", l);
    }
    s.finish()
}

/// The search form; `action` the path it is sent to.
pub fn form_html(action: &str, query: &str) -> String {
    format!(
        "<form action=\"{a}\" method=\"get\" id=\"fulltext\"><input type=\"text\" name=\"q\" \
value=\"{q}\" placeholder=\"words, &quot;a phrase&quot;, -not, title:word\"> \
<button>Search text</button></form>",
        a = escape_html(action),
        q = escape_html(query),
    )
}

/// The results as HTML: the form, a summary, the facets (each value a
/// link narrowing the search), the month histogram, the hits (title a
/// replay link under `replay_prefix`, `/{coll}/` say, then the timestamp
/// and URL), and links to the other pages. `action` is the search page's
/// path.
pub fn results_html(action: &str, replay_prefix: &str, r: &SearchResults) -> String {
    let q = &r.request;
    let mut o = form_html(action, &q.query);
    let link =
        |req: &SearchRequest| format!("{}?{}", escape_html(action), escape_html(&query_of(req)));
    // Filters in force, each with a link dropping it.
    let mut filters = Vec::new();
    let mut drop = |name: &str, value: String, req: SearchRequest| {
        filters.push(format!(
            "{name}: <b>{}</b> <a href=\"{}\" title=\"remove\">✕</a>",
            escape_html(&value),
            link(&req)
        ));
    };
    if let Some(h) = &q.host {
        drop(
            "host",
            h.clone(),
            SearchRequest {
                host: None,
                page: 1,
                ..q.clone()
            },
        );
    }
    if let Some(y) = q.year {
        drop(
            "year",
            y.to_string(),
            SearchRequest {
                year: None,
                page: 1,
                ..q.clone()
            },
        );
    }
    if let Some(m) = &q.mime {
        drop(
            "type",
            m.clone(),
            SearchRequest {
                mime: None,
                page: 1,
                ..q.clone()
            },
        );
    }
    if let Some(l) = &q.language {
        drop(
            "language",
            l.clone(),
            SearchRequest {
                language: None,
                page: 1,
                ..q.clone()
            },
        );
    }
    o.push_str(&format!(
        "<p class=\"summary\">{} {}{}{}</p>",
        r.total,
        if r.total == 1 { "hit" } else { "hits" },
        if r.total > 0 {
            format!(", page {} of {}", q.page, r.pages.max(1))
        } else {
            String::new()
        },
        if filters.is_empty() {
            String::new()
        } else {
            format!(" · {}", filters.join(" · "))
        }
    ));
    if r.total == 0 {
        return o;
    }
    o.push_str("<div class=\"facets\" style=\"display:flex;gap:2em;flex-wrap:wrap\">");
    let facet = |title: &str, values: &[FacetValue], set: &dyn Fn(&str) -> SearchRequest| {
        let mut s = format!("<div class=\"facet\"><b>{title}</b><ul>");
        for v in values {
            s.push_str(&format!(
                "<li><a href=\"{}\">{}</a> {}</li>",
                link(&set(&v.value)),
                escape_html(&v.value),
                v.count
            ));
        }
        s.push_str("</ul></div>");
        s
    };
    let base = SearchRequest {
        page: 1,
        ..q.clone()
    };
    o.push_str(&facet("Host", &r.facets.host, &|v| SearchRequest {
        host: Some(v.to_string()),
        ..base.clone()
    }));
    o.push_str(&facet("Year", &r.facets.year, &|v| SearchRequest {
        year: v.parse().ok(),
        ..base.clone()
    }));
    o.push_str(&facet("Type", &r.facets.mime, &|v| SearchRequest {
        mime: Some(v.to_string()),
        ..base.clone()
    }));
    o.push_str(&facet("Language", &r.facets.language, &|v| SearchRequest {
        language: Some(v.to_string()),
        ..base.clone()
    }));
    o.push_str("</div>");
    // The histogram: one bar a month, scaled to the highest.
    let most = r.histogram_max();
    o.push_str(
        "<div class=\"histogram\" style=\"display:flex;align-items:flex-end;height:60px;gap:1px;margin:8px 0\">",
    );
    for b in &r.histogram {
        let h = (b.count * 60).div_ceil(most);
        o.push_str(&format!(
            "<div title=\"{m}: {c}\" data-month=\"{m}\" data-count=\"{c}\" style=\"width:6px;height:{h}px;background:#1d3557\"></div>",
            m = escape_html(&b.month),
            c = b.count,
        ));
    }
    o.push_str("</div>");
    o.push_str("<ol class=\"hits\" start=\"");
    o.push_str(&((q.page - 1) * q.per_page + 1).to_string());
    o.push_str("\">");
    for h in &r.hits {
        let replay = format!("{replay_prefix}{}/{}", h.timestamp, h.url);
        let title = if h.title.is_empty() { &h.url } else { &h.title };
        o.push_str(&format!(
            "<li class=\"hit\"><a class=\"replay\" href=\"{href}\">{t}</a><br>\
<small>{u} · {ts} · {m}{st}{lang}</small><br><span class=\"snippet\">{s}</span></li>",
            href = escape_html(&replay),
            t = escape_html(title),
            u = escape_html(&h.url),
            ts = escape_html(&pretty_timestamp(&h.timestamp)),
            m = escape_html(&h.mime),
            st = h.status.map(|s| format!(" · {s}")).unwrap_or_default(),
            lang = h
                .language
                .as_ref()
                .map(|l| format!(" · {}", escape_html(l)))
                .unwrap_or_default(),
            s = h.snippet.html,
        ));
    }
    o.push_str("</ol>");
    if r.pages > 1 {
        o.push_str("<p class=\"pages\">");
        if q.page > 1 {
            let prev = SearchRequest {
                page: q.page - 1,
                ..q.clone()
            };
            o.push_str(&format!(
                "<a rel=\"prev\" href=\"{}\">← previous</a> ",
                link(&prev)
            ));
        }
        if q.page < r.pages {
            let next = SearchRequest {
                page: q.page + 1,
                ..q.clone()
            };
            o.push_str(&format!(
                "<a rel=\"next\" href=\"{}\">next →</a>",
                link(&next)
            ));
        }
        o.push_str("</p>");
    }
    o
}

/// `20140126200624` as `2014-01-26 20:06:24`; other text as it is.
pub fn pretty_timestamp(ts: &str) -> String {
    if ts.len() == 14 && ts.bytes().all(|b| b.is_ascii_digit()) {
        format!(
            "{}-{}-{} {}:{}:{}",
            &ts[..4],
            &ts[4..6],
            &ts[6..8],
            &ts[8..10],
            &ts[10..12],
            &ts[12..]
        )
    } else {
        ts.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{Bucket, Facets, Hit, Snippet};

    #[test]
    fn query_strings_round_trip() {
        let r = request_from_query(
            "q=a+%22b%22&page=3&n=20&host=x.org&year=2014&mime=text%2Fhtml&language=eng&zz=1",
        );
        assert_eq!(r.query, "a \"b\"");
        assert_eq!((r.page, r.per_page, r.year), (3, 20, Some(2014)));
        assert_eq!(r.host.as_deref(), Some("x.org"));
        assert_eq!(request_from_query(&query_of(&r)), r);
        let d = request_from_query("q=x&page=zz&n=-1");
        assert_eq!((d.page, d.per_page), (1, crate::search::DEFAULT_PER_PAGE));
    }

    #[test]
    fn html_is_escaped_and_links_replay() {
        let mut req = SearchRequest::new("<script>");
        req.host = Some("a\"b".into());
        let r = SearchResults {
            request: req,
            total: 11,
            pages: 2,
            hits: vec![Hit {
                url: "http://x.org/?a=1&b=\"<".into(),
                title: "<i>T</i>".into(),
                timestamp: "20140126200624".into(),
                mime: "text/html".into(),
                snippet: Snippet {
                    text: "a <b>".into(),
                    highlights: vec![],
                    html: "a &lt;b&gt;".into(),
                },
                ..Hit::default()
            }],
            facets: Facets {
                host: vec![FacetValue {
                    value: "<h>".into(),
                    count: 11,
                }],
                ..Facets::default()
            },
            histogram: vec![Bucket {
                month: "2014-01".into(),
                count: 11,
            }],
        };
        let h = results_html("/c/fulltext", "/c/", &r);
        assert!(!h.contains("<script>"), "{h}");
        assert!(!h.contains("<i>"), "{h}");
        assert!(!h.contains("<h>"), "{h}");
        assert!(
            h.contains("href=\"/c/20140126200624/http://x.org/?a=1&amp;b=&quot;&lt;\""),
            "{h}"
        );
        assert!(h.contains("&lt;i&gt;T&lt;/i&gt;"), "{h}");
        assert!(
            h.contains(
                "rel=\"next\" href=\"/c/fulltext?q=%3Cscript%3E&amp;page=2&amp;host=a%22b\""
            ),
            "{h}"
        );
        assert!(
            h.contains("data-month=\"2014-01\" data-count=\"11\""),
            "{h}"
        );
    }
}
