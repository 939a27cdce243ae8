//! Searching: a request (query, filters, page) in, a [`SearchResults`]
//! out: hits with a highlighted snippet, facets, a date histogram. The
//! same struct serves the command line, the JSON API and the HTML page.

use std::ops::Bound;
use tantivy::aggregation::AggregationCollector;
use tantivy::aggregation::agg_req::Aggregations;
use tantivy::collector::{Count, TopDocs};

use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, Query, QueryParser, RangeQuery,
    RegexQuery, TermQuery,
};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{DateTime, TantivyDocument, Term};
use warchest_index::region::Region;

use crate::Error;
use crate::fulltext::SearchIndex;

/// Longest query accepted, in bytes.
pub const MAX_QUERY: usize = 2048;
/// Most hits on one page.
pub const MAX_PER_PAGE: usize = 100;
/// Deepest nesting of parentheses a query may have: tantivy's query
/// parser recurses once per level, and a thread's stack (2 MiB for a
/// server's workers) would not hold a query of a thousand.
pub const MAX_NESTING: usize = 32;
/// Hits per page by default.
pub const DEFAULT_PER_PAGE: usize = 10;
/// Deepest hit a page may reach (page × per page): deep paging costs the
/// search a heap of that size.
pub const MAX_DEPTH: usize = 10_000;
/// Values shown per facet.
pub const FACET_SIZE: u32 = 20;
/// Longest snippet, in characters.
pub const SNIPPET_CHARS: usize = 200;

/// What to search for.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SearchRequest {
    /// The query, in tantivy's query language: words (all must match, as
    /// SolrWayback's `q.op=AND`), `"a phrase"`, `-word`, `a OR b`,
    /// `field:value` (`host:`, `mime:`, `language:`, `status:`, `year:`,
    /// `title:`, `url:`, `surt:`), `date:[2020-01-01T00:00:00Z TO *]`.
    /// Empty or `*`: every document.
    pub query: String,
    /// Page, from 1.
    pub page: usize,
    /// Hits per page (at most [`MAX_PER_PAGE`]).
    pub per_page: usize,
    /// Only this host.
    pub host: Option<String>,
    /// Only this year.
    pub year: Option<u64>,
    /// Only this media type.
    pub mime: Option<String>,
    /// Only this language.
    pub language: Option<String>,
}

/// One value of a facet and its count.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FacetValue {
    /// The value.
    pub value: String,
    /// Documents matching the query with it.
    pub count: u64,
}

/// The facets of a result: for each field, the values most found among
/// all the documents matching (not only the page shown), most first.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Facets {
    /// By host.
    pub host: Vec<FacetValue>,
    /// By year of capture, in year order.
    pub year: Vec<FacetValue>,
    /// By media type.
    pub mime: Vec<FacetValue>,
    /// By language.
    pub language: Vec<FacetValue>,
}

/// A snippet of a hit's text with the words matched marked.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Snippet {
    /// The text of the snippet.
    pub text: String,
    /// Byte ranges of `text` matched, in order.
    pub highlights: Vec<(usize, usize)>,
    /// The snippet as HTML: text escaped, matches in `<b>`.
    pub html: String,
}

/// One document found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Hit {
    /// Relevance (BM25); 0 for a query matching every document.
    pub score: f32,
    /// Captured URL.
    pub url: String,
    /// Title of the page.
    pub title: String,
    /// Capture time, 14 digits (the replay timestamp).
    pub timestamp: String,
    /// Host.
    pub host: String,
    /// SURT form of the URL.
    pub surt: String,
    /// Media type.
    pub mime: String,
    /// HTTP status.
    pub status: Option<u64>,
    /// Language.
    pub language: Option<String>,
    /// Archive file.
    pub file: String,
    /// Offset of the record in the file.
    pub offset: u64,
    /// WARC-Type.
    pub record_type: String,
    /// The text around the words matched.
    pub snippet: Snippet,
}

/// Documents per month of capture, in time order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bucket {
    /// `YYYY-MM`.
    pub month: String,
    /// Documents matching captured in that month.
    pub count: u64,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SearchResults {
    /// The request, with its page and size as used.
    pub request: SearchRequest,
    /// Documents matching.
    pub total: u64,
    /// Pages of hits (`total` over per page, at most as deep as
    /// [`MAX_DEPTH`] allows).
    pub pages: usize,
    /// This page's hits, best first.
    pub hits: Vec<Hit>,
    /// Facets over all the documents matching.
    pub facets: Facets,
    /// Documents matching per month of capture.
    pub histogram: Vec<Bucket>,
}

impl SearchResults {
    /// The highest count of a month in the histogram (at least 1), to
    /// scale its bars.
    pub fn histogram_max(&self) -> u64 {
        self.histogram
            .iter()
            .map(|b| b.count)
            .max()
            .unwrap_or(1)
            .max(1)
    }
}

impl SearchRequest {
    /// A request for `query`, first page, default size.
    pub fn new(query: impl Into<String>) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            page: 1,
            per_page: DEFAULT_PER_PAGE,
            ..SearchRequest::default()
        }
    }

    /// The request with page and size within bounds.
    ///
    /// # Errors
    /// The query is too long, or the page too deep.
    pub fn checked(&self) -> Result<SearchRequest, Error> {
        if self.query.len() > MAX_QUERY {
            return Err(Error::Query(format!(
                "the query is {} bytes long; at most {MAX_QUERY} are accepted",
                self.query.len()
            )));
        }
        let depth = nesting(&self.query);
        if depth > MAX_NESTING {
            return Err(Error::Query(format!(
                "the query nests parentheses {depth} deep; at most {MAX_NESTING} are accepted"
            )));
        }
        let mut r = self.clone();
        r.page = r.page.max(1);
        r.per_page = match r.per_page {
            0 => DEFAULT_PER_PAGE,
            n => n.min(MAX_PER_PAGE),
        };
        if r.page.saturating_mul(r.per_page) > MAX_DEPTH {
            return Err(Error::Query(format!(
                "page {} of {} hits goes deeper than the first {MAX_DEPTH} hits: narrow the query",
                r.page, r.per_page
            )));
        }
        Ok(r)
    }
}

/// The deepest nesting of parentheses in a query, outside quoted phrases
/// and escapes (`\(`).
fn nesting(query: &str) -> usize {
    let (mut depth, mut deepest, mut quoted, mut escaped) = (0usize, 0, false, false);
    for c in query.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '(' if !quoted => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' if !quoted => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

impl SearchIndex {
    /// Searches the index.
    ///
    /// # Errors
    /// The request is out of bounds ([`SearchRequest::checked`]) or its
    /// query cannot be parsed, or the index cannot be read.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults, Error> {
        self.search_in(req, &Region::All)
    }

    /// Searches the documents of the captures in `shown` only (what access
    /// rules let a viewer see): the hits, their count, the facets and the
    /// histogram are all of those.
    ///
    /// # Errors
    /// As [`SearchIndex::search`].
    pub fn search_in(&self, req: &SearchRequest, shown: &Region) -> Result<SearchResults, Error> {
        let req = req.checked()?;
        let f = &self.fields;
        let dir = self.dir();
        let searcher = self.reader()?.searcher();
        let q = req.query.trim();
        let mut parts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let text_query: Option<Box<dyn Query>> = if q.is_empty() || q == "*" {
            None
        } else {
            let mut parser =
                QueryParser::for_index(&self.index, vec![f.title, f.text, f.url_words]);
            parser.set_conjunction_by_default();
            parser.set_field_boost(f.title, 2.0);
            Some(
                parser
                    .parse_query(q)
                    .map_err(|e| Error::Query(format!("{q:?}: {e}")))?,
            )
        };
        if let Some(tq) = &text_query {
            parts.push((Occur::Must, tq.box_clone()));
        } else {
            parts.push((Occur::Must, Box::new(tantivy::query::AllQuery)));
        }
        let term = |field, v: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, v),
                IndexRecordOption::Basic,
            ))
        };
        if let Some(h) = &req.host {
            parts.push((Occur::Must, term(f.host, h)));
        }
        if let Some(m) = &req.mime {
            parts.push((Occur::Must, term(f.mime, m)));
        }
        if let Some(l) = &req.language {
            parts.push((Occur::Must, term(f.language, l)));
        }
        if let Some(y) = req.year {
            parts.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_u64(f.year, y),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if *shown != Region::All {
            // Scored as nothing: it selects, the words rank.
            parts.push((
                Occur::Must,
                Box::new(ConstScoreQuery::new(self.region_query(shown, 0)?, 0.0)),
            ));
        }
        let query = BooleanQuery::new(parts);
        let aggs: Aggregations = serde_json::from_value(serde_json::json!({
            "host": {"terms": {"field": "host", "size": FACET_SIZE, "segment_size": 1000}},
            "year": {"terms": {"field": "year", "size": 1000}},
            "mime": {"terms": {"field": "mime", "size": FACET_SIZE, "segment_size": 1000}},
            "language": {"terms": {"field": "language", "size": FACET_SIZE, "segment_size": 1000}},
            "month": {"terms": {"field": "month", "size": 12 * 1000}},
        }))
        .map_err(|e| Error::Query(format!("aggregation request: {e}")))?;
        let offset = (req.page - 1) * req.per_page;
        let top = TopDocs::with_limit(req.per_page)
            .and_offset(offset)
            .order_by_score();
        let aggc = AggregationCollector::from_aggs(aggs, Default::default());
        let (top, total, aggs) =
            searcher
                .search(&query, &(top, Count, aggc))
                .map_err(|e| match e {
                    // `FIELD:*` parses for any name, and is answered only for
                    // a fast field: the query's fault, not the index's.
                    tantivy::TantivyError::SchemaError(_)
                    | tantivy::TantivyError::FieldNotFound(_) => Error::Query(format!(
                        "{q:?}: {e} (FIELD:* works for host, mime, language, file, year, \
                         status and date)"
                    )),
                    e => Error::index(dir, e),
                })?;
        let snippets = match &text_query {
            Some(tq) => {
                let mut g = SnippetGenerator::create(&searcher, &**tq, f.text)
                    .map_err(|e| Error::index(dir, e))?;
                g.set_max_num_chars(SNIPPET_CHARS);
                Some(g)
            }
            None => None,
        };
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr).map_err(|e| Error::index(dir, e))?;
            let s = |field| {
                d.get_first(field)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            let snippet = snippet(snippets.as_ref(), &d, &s(f.text));
            hits.push(Hit {
                score,
                url: s(f.url),
                title: s(f.title),
                timestamp: s(f.timestamp),
                host: s(f.host),
                surt: s(f.surt),
                mime: s(f.mime),
                status: d.get_first(f.status).and_then(|v| v.as_u64()),
                language: Some(s(f.language)).filter(|l| !l.is_empty()),
                file: s(f.file),
                offset: d.get_first(f.offset).and_then(|v| v.as_u64()).unwrap_or(0),
                record_type: s(f.record_type),
                snippet,
            });
        }
        let aggs = serde_json::to_value(&aggs)
            .map_err(|e| Error::Query(format!("aggregation result: {e}")))?;
        let mut year = buckets(&aggs, "year");
        year.sort_by(|a, b| a.value.cmp(&b.value));
        let mut months = buckets(&aggs, "month");
        months.sort_by(|a, b| a.value.cmp(&b.value));
        let histogram = months
            .into_iter()
            .filter(|b| b.value.len() == 6)
            .map(|b| Bucket {
                month: format!("{}-{}", &b.value[..4], &b.value[4..]),
                count: b.count,
            })
            .collect();
        let reachable = MAX_DEPTH / req.per_page;
        let pages = total.div_ceil(req.per_page).min(reachable);
        Ok(SearchResults {
            total: total as u64,
            pages,
            hits,
            facets: Facets {
                host: buckets(&aggs, "host"),
                year,
                mime: buckets(&aggs, "mime"),
                language: buckets(&aggs, "language"),
            },
            histogram,
            request: req,
        })
    }
}

/// The snippet of a hit: the best fragment of its text, else its start.
fn snippet(g: Option<&SnippetGenerator>, d: &TantivyDocument, text: &str) -> Snippet {
    if let Some(g) = g {
        let s = g.snippet_from_doc(d);
        if !s.fragment().is_empty() {
            return Snippet {
                text: s.fragment().to_string(),
                highlights: s.highlighted().iter().map(|r| (r.start, r.end)).collect(),
                html: s.to_html(),
            };
        }
    }
    let mut t = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if crate::doc::cut_at_char(&mut t, SNIPPET_CHARS) {
        t.push('…');
    }
    Snippet {
        html: escape_html(&t),
        text: t,
        highlights: Vec::new(),
    }
}

/// `s` with `&`, `<`, `>`, `"` and `'` escaped for HTML.
pub fn escape_html(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The buckets of a terms aggregation, as serialised.
fn buckets(aggs: &serde_json::Value, name: &str) -> Vec<FacetValue> {
    let Some(list) = aggs
        .get(name)
        .and_then(|a| a.get("buckets"))
        .and_then(|b| b.as_array())
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|b| {
            let key = b.get("key")?;
            let value = match key {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => match n.as_u64() {
                    Some(u) => u.to_string(),
                    // Numbers come as floats; years and months are whole.
                    None => format!("{}", n.as_f64()? as u64),
                },
                _ => return None,
            };
            Some(FacetValue {
                value,
                count: b.get("doc_count")?.as_u64()?,
            })
        })
        .collect()
}

impl SearchIndex {
    /// `r` as a query: SURT prefixes over the `surt` terms, times over
    /// `date`; `depth` levels down already (at most [`MAX_NESTING`] * 2).
    fn region_query(&self, r: &Region, depth: usize) -> Result<Box<dyn Query>, Error> {
        if depth > MAX_NESTING * 2 {
            return Err(Error::Query(format!(
                "access rules nested more than {} deep",
                MAX_NESTING * 2
            )));
        }
        let f = &self.fields;
        let sub = |x: &Region| self.region_query(x, depth + 1);
        Ok(match r {
            Region::All => Box::new(AllQuery),
            Region::Nothing => Box::new(EmptyQuery),
            Region::KeyIs(k) => Box::new(TermQuery::new(
                Term::from_field_text(f.surt, k),
                IndexRecordOption::Basic,
            )),
            Region::KeyPrefix(p) => {
                // Every term starting with `p`: its characters other than
                // letters and digits written by code point.
                let mut pattern = String::with_capacity(p.len() * 2 + 8);
                for c in p.chars() {
                    if c.is_alphanumeric() {
                        pattern.push(c);
                    } else {
                        pattern.push_str(&format!("\\x{{{:X}}}", u32::from(c)));
                    }
                }
                pattern.push_str("(?s:.)*");
                Box::new(
                    RegexQuery::from_pattern(&pattern, f.surt)
                        .map_err(|e| Error::Query(format!("access rule {p:?}: {e}")))?,
                )
            }
            Region::Time { after, before } => {
                let at = |t: i64| {
                    Term::from_field_date_for_search(f.date, DateTime::from_timestamp_secs(t))
                };
                let lower = after.map_or(Bound::Unbounded, |t| Bound::Excluded(at(t)));
                let upper = before.map_or(Bound::Unbounded, |t| Bound::Excluded(at(t)));
                if matches!((&lower, &upper), (Bound::Unbounded, Bound::Unbounded)) {
                    Box::new(AllQuery)
                } else {
                    Box::new(RangeQuery::new(lower, upper))
                }
            }
            Region::And(v) => Box::new(BooleanQuery::new(
                v.iter()
                    .map(|x| Ok((Occur::Must, sub(x)?)))
                    .collect::<Result<Vec<_>, Error>>()?,
            )),
            Region::Or(v) => Box::new(BooleanQuery::new(
                v.iter()
                    .map(|x| Ok((Occur::Should, sub(x)?)))
                    .collect::<Result<Vec<_>, Error>>()?,
            )),
            Region::Not(x) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                (Occur::MustNot, sub(x)?),
            ])),
        })
    }
}
