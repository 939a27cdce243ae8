//! Replay: finding the capture of a URL nearest to a time, reading its
//! payload (revisits resolved to the record that holds it), and rewriting
//! pages so their links stay in the archive. `warchest serve` (the
//! `warchest-serve` crate) puts this on the web; docs/serve.md has the rules.
//!
//! ```
//! use warchest_replay::archive_url::{TimeSpec, resolve};
//! let t = TimeSpec::parse("20140126200624im_").unwrap();
//! assert_eq!(t.modifier, "im_");
//! assert_eq!(resolve("http://example.com/a/b", "../c").as_deref(), Some("http://example.com/c"));
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod access;
pub mod fuzzy;
mod js_location;
pub mod remote;

pub mod archive_url;
pub mod rewrite;
pub mod store;

use std::io::BufRead;
use std::path::PathBuf;

use store::{Capture, Store};
use warchest::error::{Error, ErrorKind, Result};
use warchest::http::HttpHead;
use warchest::http::date::{pad_timestamp, timestamp_seconds};
use warchest::warc::WarcHeader;

/// How many captures around a time are looked at to find one that fits.
const CLOSEST_SCAN: usize = 64;

/// A collection: its name, its files and its index store.
#[derive(Debug)]
pub struct Collection {
    /// The name in URLs (`/{name}/...`).
    pub name: String,
    /// The files and directories it is made of.
    pub paths: Vec<PathBuf>,
    /// The index.
    pub store: Store,
    /// Fuzzy-matching rules for URLs with no capture of their own
    /// ([`fuzzy::FuzzyRules::none`]: off).
    pub fuzzy: fuzzy::FuzzyRules,
    /// Damaged records and undecodable payloads served from it, counted
    /// since it was made (`ServedDamage::default()` to start from none).
    pub served: ServedDamage,
}

/// What a collection served that was not whole, counted as it is served
/// (not per distinct record: a damaged record served twice counts twice).
/// [`Collection::with_payload`] counts damaged records itself; a server
/// that reads records on its own counts through
/// [`ServedDamage::count_damaged`] what [`report_damage`] found, and what
/// it could not decode through [`ServedDamage::count_undecodable`].
#[derive(Debug, Default)]
pub struct ServedDamage {
    damaged: std::sync::atomic::AtomicU64,
    undecodable: std::sync::atomic::AtomicU64,
}

impl ServedDamage {
    /// Records served truncated or read with lenient recoveries (what
    /// [`report_damage`] warns of).
    pub fn damaged(&self) -> u64 {
        self.damaged.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Payloads whose transfer or content codings could not be undone
    /// (the coding unknown, the bytes not in it), as they were to be
    /// served; a record may be counted here and in
    /// [`ServedDamage::damaged`] both.
    pub fn undecodable(&self) -> u64 {
        self.undecodable.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts one damaged record served.
    pub fn count_damaged(&self) {
        self.damaged
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Counts one payload that could not be decoded.
    pub fn count_undecodable(&self) {
        self.undecodable
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The payload of a capture, ready to be served.
pub struct Payload<'a> {
    /// The WARC header of the capture asked for (the revisit, for a
    /// revisit).
    pub header: WarcHeader,
    /// The WARC header of the record the payload comes from (the original,
    /// for a revisit).
    pub source_header: WarcHeader,
    /// The HTTP head, when the record holds an HTTP response.
    pub head: Option<HttpHead>,
    /// The body after the head, as stored (transfer and content codings
    /// still applied).
    pub body: &'a mut dyn BufRead,
}

/// What reading a record of `source` found wrong with it, one sentence
/// each: the lenient recoveries `reader` met (one summary), and of `end`,
/// the record's [`Record::finish`](warchest::archive::Record::finish) when
/// it was read to its end, a block cut short or an error before its end.
/// Empty when the record was whole. What [`report_damage`] logs and a
/// page showing a record says: one reasoning for both.
pub fn record_damage<S: warchest::codec::Source>(
    source: &str,
    end: Option<&Result<warchest::warc::RecordEnd>>,
    reader: &mut warchest::archive::Reader<S>,
) -> Vec<String> {
    let mut recovered = warchest::recoveries::Recoveries::keeping(0);
    recovered.add_all(source, &reader.take_warnings());
    let mut damage: Vec<String> = recovered.summary().into_iter().collect();
    match end {
        Some(Ok(e)) if e.truncated => damage.push(format!(
            "truncated: the record ends before its Content-Length ({} block bytes present)",
            e.block_len
        )),
        Some(Err(e)) => damage.push(format!("unreadable to its end: {e}")),
        _ => {}
    }
    damage
}

/// Logs what reading the record at `offset` of `source` recovered from,
/// after its payload was handed over (a streamed response has been sent
/// by then: the log is all that can say it was damaged): what
/// [`record_damage`] finds of the reader's recoveries and of `end`, the
/// record's [`Record::finish`](warchest::archive::Record::finish) when the
/// record was read to its end (`None` when its reader stopped early: a
/// preview does not make the rest of a large record be read for the log).
/// Used by [`Collection::with_payload`] and by servers that stream a
/// record themselves. Returns whether the record was damaged (and logged),
/// for the caller to count ([`ServedDamage::count_damaged`]).
#[must_use = "a damaged record served is counted (ServedDamage::count_damaged)"]
pub fn report_damage<S: warchest::codec::Source>(
    source: &str,
    offset: u64,
    end: Option<Result<warchest::warc::RecordEnd>>,
    reader: &mut warchest::archive::Reader<S>,
) -> bool {
    let damage = record_damage(source, end.as_ref(), reader);
    if damage.is_empty() {
        return false;
    }
    tracing::warn!(
        source,
        offset,
        damage = damage.join("; "),
        "record served damaged"
    );
    true
}

/// Whether `body` was read to its end (a read error counts: finishing the
/// record then says what it was). A handler that stopped early (a client
/// gone, a HEAD) leaves the rest unread.
fn at_end(body: &mut dyn BufRead) -> bool {
    body.fill_buf().map_or(true, |b| b.is_empty())
}

fn not_found(msg: String) -> Error {
    Error::new(ErrorKind::Usage(msg))
}

impl Collection {
    /// The capture to replay for `url` at `timestamp`: the nearest in time
    /// among responses, revisits and resources, skipping redirects to the
    /// URL itself (an `http` to `https` redirect archived with its target
    /// would loop) when another capture exists.
    ///
    /// Captures `who` may not see ([`access::Verdict::Exclude`]) are not
    /// looked at; a blocked one may be found (its content is refused by
    /// the caller).
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn find(
        &self,
        target: &str,
        timestamp: &str,
        who: &access::Viewer<'_>,
    ) -> Result<Option<Capture>> {
        match self.find_exact(target, timestamp, who)? {
            Some(c) => Ok(Some(c)),
            None => self.find_fuzzy(target, timestamp, who),
        }
    }

    /// Most captures looked at for a fuzzy match.
    pub const FUZZY_SCAN: usize = 10_000;

    /// The capture nearest in time among those whose URL is `target`'s
    /// once the fuzzy rules took out what does not pick the resource
    /// (cache busters, session ids, JSONP callbacks): pywb's fuzzy match.
    /// The captures looked at are those of the same host and path, with or
    /// without query and path parameters (at most 10,000).
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn find_fuzzy(
        &self,
        target: &str,
        timestamp: &str,
        who: &access::Viewer<'_>,
    ) -> Result<Option<Capture>> {
        let at = timestamp_seconds(&pad_timestamp(timestamp));
        let mut best: Option<(i64, Capture)> = None;
        self.fuzzy_matches(target, None, None, who, |c| {
            let replayable = c.entry.record_type.as_deref().is_some_and(|t| {
                ["response", "revisit", "resource"]
                    .iter()
                    .any(|k| t.eq_ignore_ascii_case(k))
            });
            if replayable {
                let d = (timestamp_seconds(&c.entry.timestamp) - at).abs();
                if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                    best = Some((d, c));
                }
            }
        })?;
        Ok(best.map(|(_, c)| c))
    }

    /// Calls `f` with each capture, in the index's order, whose URL is
    /// `target`'s once the fuzzy rules took out what does not pick the
    /// resource, among those of the same host and path with or without
    /// query and path parameters (not the paths below it: `/` would be the
    /// whole site), within `from..=to` (CDX timestamps, padded as a
    /// [`store::Query`]'s), at most [`Collection::FUZZY_SCAN`] looked at,
    /// those `who` may not see passed over.
    /// None when there are no rules or `target` is no http(s) URL. The
    /// replay's fuzzy match ([`Collection::find_fuzzy`]) and the CDX API's
    /// fuzzy answer are made of these.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn fuzzy_matches(
        &self,
        target: &str,
        from: Option<String>,
        to: Option<String>,
        who: &access::Viewer<'_>,
        mut f: impl FnMut(Capture),
    ) -> Result<()> {
        if self.fuzzy.is_empty() {
            return Ok(());
        }
        let (Some(want), Some(prefix)) = (
            self.fuzzy.key(target),
            fuzzy::FuzzyRules::search_prefix(target),
        ) else {
            return Ok(());
        };
        let key = warchest_index::surt::url_key(&archive_url::normalize_target(&prefix));
        let mut budget = Self::FUZZY_SCAN;
        // The path itself, with path parameters, with a query: the index's
        // order.
        for end in [" ", ";", "?"] {
            let q = store::Query {
                range: store::KeyRange::raw(format!("{key}{end}")),
                from: from.clone(),
                to: to.clone(),
                limit: budget,
                reverse: false,
                skip: 0,
                resume: None,
            };
            self.store.query(&q, |c| {
                budget = budget.saturating_sub(1);
                if c.entry
                    .url
                    .as_deref()
                    .and_then(|u| self.fuzzy.key(u))
                    .is_some_and(|k| k == want)
                    && who.sees(&c)
                {
                    f(c);
                }
                budget > 0
            })?;
            if budget == 0 {
                break;
            }
        }
        Ok(())
    }

    /// The capture of exactly `target` to replay (see [`Collection::find`]).
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn find_exact(
        &self,
        target: &str,
        timestamp: &str,
        who: &access::Viewer<'_>,
    ) -> Result<Option<Capture>> {
        let key = warchest_index::surt::url_key(target);
        let found = self.store.closest(target, timestamp, CLOSEST_SCAN, |c| {
            c.entry.record_type.as_deref().is_some_and(|t| {
                ["response", "revisit", "resource"]
                    .iter()
                    .any(|k| t.eq_ignore_ascii_case(k))
            }) && who.sees(c)
        })?;
        let self_redirect = |c: &Capture| {
            c.status().is_some_and(|s| (300..400).contains(&s))
                && c.entry.redirect.as_deref().is_some_and(|loc| {
                    let base = c.entry.url.as_deref().unwrap_or(target);
                    archive_url::resolve(base, loc)
                        .is_some_and(|abs| warchest_index::surt::url_key(&abs) == key)
                })
        };
        Ok(found
            .iter()
            .find(|c| !self_redirect(c))
            .or(found.first())
            .cloned())
    }

    /// Reads the payload of `cap` and hands it to `f`; once `f` is done
    /// with it, a record found truncated or read with lenient recoveries
    /// (a damaged gzip member...) is logged as a warning with its source,
    /// offset and kinds, since what `f` served was not the record whole,
    /// and counted in [`Collection::served`]. A revisit's payload
    /// is its original's, found by WARC-Refers-To, else by the same URL and
    /// payload digest, else by the digest alone; the HTTP head is the
    /// original's too (a server-not-modified revisit's 304 is not what a
    /// browser should see).
    ///
    /// # Errors
    /// The record cannot be read, or a revisit's original is not in the
    /// collection.
    pub fn with_payload<R>(
        &self,
        cap: &Capture,
        f: impl FnOnce(Payload<'_>) -> Result<R>,
    ) -> Result<R> {
        let src = self
            .store
            .source(cap.src)
            .ok_or_else(|| not_found(format!("no source {}", cap.src)))?;
        // An object's record: one range request of the indexed length.
        let mut reader = src.record_reader(cap.entry.offset, cap.entry.length)?;
        let mut rec = reader
            .next_record()?
            .ok_or_else(|| not_found(format!("no record at offset {}", cap.entry.offset)))?;
        if rec.location().offset != cap.entry.offset {
            return Err(not_found(format!(
                "no record at offset {} of {}",
                cap.entry.offset, src.name
            )));
        }
        let header = rec.header().clone();
        if cap.is_revisit() {
            let (osrc, ooff, olen) = self.original_of(cap, &header)?.ok_or_else(|| {
                not_found(format!(
                    "the original of revisit {} is not in the collection",
                    header.record_id().unwrap_or_default()
                ))
            })?;
            let osource = self
                .store
                .source(osrc)
                .ok_or_else(|| not_found(format!("no source {osrc}")))?;
            let mut oreader = osource.record_reader(ooff, olen)?;
            let mut rec = oreader
                .next_record()?
                .ok_or_else(|| not_found(format!("no record at offset {ooff}")))?;
            let source_header = rec.header().clone();
            let head = rec.http()?.cloned();
            let mut block = rec.block();
            let out = f(Payload {
                header,
                source_header,
                head,
                body: &mut block,
            });
            // Not on `out`'s error: a client that went away must not make
            // the handler read (and fetch) the rest of a large record.
            let whole = at_end(&mut block);
            let end = whole.then(|| rec.finish());
            if report_damage(&osource.name, ooff, end, &mut oreader) {
                self.served.count_damaged();
            }
            return out;
        }
        let head = rec.http()?.cloned();
        let mut block = rec.block();
        let out = f(Payload {
            source_header: header.clone(),
            header,
            head,
            body: &mut block,
        });
        let whole = at_end(&mut block);
        let end = whole.then(|| rec.finish());
        if report_damage(&src.name, cap.entry.offset, end, &mut reader) {
            self.served.count_damaged();
        }
        out
    }

    fn original_of(
        &self,
        cap: &Capture,
        header: &WarcHeader,
    ) -> Result<Option<(u32, u64, Option<u64>)>> {
        if let Some(id) = header.refers_to()
            && let Some(loc) = self.store.record_of_id(&id)?
        {
            return Ok(Some(loc));
        }
        let Some(digest) = cap.entry.digest.clone() else {
            return Ok(None);
        };
        let url = header
            .refers_to_target_uri()
            .map(|u| u.into_owned())
            .or_else(|| cap.entry.url.clone())
            .unwrap_or_default();
        let same = self.store.closest(&url, &cap.entry.timestamp, 1, |c| {
            !c.is_revisit() && c.entry.digest.as_deref() == Some(digest.as_str())
        })?;
        if let Some(c) = same.first() {
            return Ok(Some((c.src, c.entry.offset, c.entry.length)));
        }
        self.store.record_of_digest(&digest)
    }
}
