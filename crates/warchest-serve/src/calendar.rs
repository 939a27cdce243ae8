//! The captures page of a URL as a calendar, as pywb and the Wayback
//! Machine show it: the years with their counts, then the months of one
//! year with theirs and the days captured; the flat list below it holds
//! the captures of the period chosen, a page at a time.
//!
//! Pages are periods, named as pywb names them, by a timestamp prefix and
//! `*`: `/{coll}/*/{url}` (all, the latest year's calendar),
//! `/{coll}/2019*/{url}` (2019), `/{coll}/201903*/{url}` (March 2019),
//! `/{coll}/20190307*/{url}` (a day), down to the second. (A query string
//! would be taken for the archived URL's own.) A period holding more than
//! [`PAGE`] captures lists its first [`PAGE`] and says so: its months,
//! days and hours are the next pages, linked from the calendar.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::exchange::{escape, query_escape};
use super::names::Names;
use super::pages::{count, page, search_form};
use warchest_replay::Collection;
use warchest_replay::access::{Verdict, Viewer};
use warchest_replay::store::{Capture, KeyRange, MatchType, Query};
use warchest_wacz::iso_date;

/// Captures listed on one page of the flat list.
pub(super) const PAGE: usize = 100;

/// Captures of one URL counted at most (the calendar's bound on work).
const MAX_COUNTED: usize = 1_000_000;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// What one pass over a URL's captures gathers.
#[derive(Default)]
struct Counts {
    total: u64,
    first: String,
    last: String,
    /// Captures by year.
    years: BTreeMap<String, u64>,
    /// Captures by day (`YYYYMMDD`).
    days: BTreeMap<String, u64>,
    /// The year shown: captures by month.
    months: [u64; 12],
    /// The flat list's page: the first captures of the period.
    listed: Vec<Capture>,
    /// Captures of the period.
    in_period: u64,
    /// The period's captures by hour, when the period is a day or finer.
    hours: BTreeMap<String, u64>,
}

/// The captures page of `target` for `period` (digits: a timestamp
/// prefix, empty for all), of the captures `who` may see.
pub(super) fn captures(
    coll: &Collection,
    who: &Viewer<'_>,
    target: &str,
    period: &str,
) -> warchest::Result<String> {
    let range = KeyRange::new(target, MatchType::Exact);
    let mut k = Counts::default();
    let key = warchest_index::surt::url_key(target);
    let mut read = 0usize;
    // The counts from the index's keys alone: no capture decoded.
    coll.store.timestamps(&range, |ts| {
        read += 1;
        if !who.sees_all() && who.verdict(&key, ts) == Verdict::Exclude {
            return read < MAX_COUNTED;
        }
        k.total += 1;
        if k.first.is_empty() {
            k.first = ts.to_string();
        }
        if let (Some(y), Some(d)) = (ts.get(..4), ts.get(..8)) {
            *k.years.entry(y.to_string()).or_default() += 1;
            *k.days.entry(d.to_string()).or_default() += 1;
        }
        if ts.starts_with(period) {
            k.in_period += 1;
            if period.len() >= 8
                && let Some(h) = ts.get(..10)
            {
                *k.hours.entry(h.to_string()).or_default() += 1;
            }
        }
        k.last = ts.to_string();
        read < MAX_COUNTED
    })?;
    // The year shown: the period's, else the latest captured.
    let year = match period.get(..4) {
        Some(y) => y.to_string(),
        None => k.years.keys().next_back().cloned().unwrap_or_default(),
    };
    for (d, n) in k.days.range(year.clone()..) {
        if !d.starts_with(&year) {
            break;
        }
        if let Some(m) = d.get(4..6).and_then(|m| m.parse::<usize>().ok())
            && (1..=12).contains(&m)
        {
            k.months[m - 1] += n;
        }
    }
    // One page of the flat list: the period's first captures.
    let bound = (!period.is_empty()).then(|| period.to_string());
    coll.store.query(
        &Query {
            range,
            from: bound.clone(),
            to: bound,
            limit: PAGE,
            reverse: false,
            skip: 0,
            resume: None,
        },
        |c| {
            if who.sees(&c) {
                k.listed.push(c);
            }
            true
        },
    )?;
    Ok(render(coll, target, period, &year, &k))
}

/// The period a timestamp prefix names, in words.
fn period_words(period: &str) -> String {
    let month = |m: &str| {
        m.parse::<usize>()
            .ok()
            .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
            .copied()
            .unwrap_or("?")
    };
    match period.len() {
        0 => "all".into(),
        4 => period.to_string(),
        6 => format!("{} {}", month(&period[4..6]), &period[..4]),
        n if n >= 8 => {
            let day = format!(
                "{} {} {}",
                &period[6..8],
                month(&period[4..6]),
                &period[..4]
            );
            if n >= 10 {
                format!("{day}, {}h", &period[8..10])
            } else {
                day
            }
        }
        _ => period.to_string(),
    }
}

fn render(coll: &Collection, target: &str, period: &str, year: &str, k: &Counts) -> String {
    let c = escape(&coll.name);
    let u = escape(target);
    let mut b = search_form(&coll.name, target);
    let _ = write!(
        b,
        "<p id=\"count\">{} of <code>{u}</code>{}.</p>",
        count(k.total, "capture", "captures"),
        if k.total > 0 {
            format!(
                ", from {} to {}",
                escape(&iso_date(&k.first)),
                escape(&iso_date(&k.last))
            )
        } else {
            String::new()
        }
    );
    b.push_str(CALENDAR_STYLE);
    // The years, each with its count.
    b.push_str("<nav id=\"years\">");
    for (y, n) in &k.years {
        let cls = if y == year { " class=\"shown\"" } else { "" };
        let _ = write!(
            b,
            "<a{cls} href=\"/{c}/{y}*/{u}\"><span class=\"year\">{y}</span> <span class=\"n\">{n}</span></a> ",
        );
    }
    b.push_str("</nav>");
    // The months of the year shown, with their counts and days.
    if !year.is_empty() {
        let _ = write!(b, "<div id=\"calendar\" data-year=\"{}\">", escape(year));
        for (i, name) in MONTHS.iter().enumerate() {
            let m = i + 1;
            let n = k.months[i];
            let _ = write!(
                b,
                "<section class=\"month{}\"><h3><a href=\"/{c}/{y}{m:02}*/{u}\">{name}</a> <span class=\"n\">{n}</span></h3><p class=\"days\">",
                if n == 0 { " none" } else { "" },
                y = escape(year),
            );
            let ym = format!("{year}{m:02}");
            for (day, dn) in k.days.range(ym.clone()..) {
                if !day.starts_with(&ym) {
                    break;
                }
                let d = &day[6..];
                let _ = write!(
                    b,
                    "<a href=\"/{c}/{}*/{u}\" title=\"{}\">{}</a> ",
                    escape(day),
                    count(*dn, "capture", "captures"),
                    escape(d.trim_start_matches('0')),
                );
            }
            b.push_str("</p></section>");
        }
        b.push_str("</div>");
    }
    // The flat list of the period's captures, a page at a time.
    let _ = write!(
        b,
        "<h2 id=\"list-title\">Captures: {}{}</h2>",
        escape(&period_words(period)),
        if k.in_period as usize > k.listed.len() {
            format!(
                " (the first {} of {} listed: choose a month or a day above)",
                k.listed.len(),
                k.in_period
            )
        } else {
            String::new()
        }
    );
    if k.in_period as usize > k.listed.len() && !k.hours.is_empty() {
        // A day (or hour) too full for one page: its hours are its pages.
        b.push_str("<p id=\"hours\">");
        for (h, n) in &k.hours {
            let _ = write!(
                b,
                "<a href=\"/{c}/{h}*/{u}\">{}h</a> <span class=\"n\">{n}</span> ",
                &h[8..10]
            );
        }
        b.push_str("</p>");
    }
    b.push_str(
        "<table id=\"captures\"><tr><th>captured</th><th>status</th><th>type</th><th>record</th><th>length</th><th></th></tr>",
    );
    let names = Names::of(coll);
    for cap in &k.listed {
        let e = &cap.entry;
        let eu = escape(e.url.as_deref().unwrap_or(target));
        let _ = write!(
            b,
            "<tr><td><a href=\"/{c}/{ts}/{eu}\">{date}</a></td><td>{st}</td><td>{mime}</td><td>{rt}</td><td>{len}</td>\
<td><a href=\"/{c}/{ts}id_/{eu}\">as archived</a> · <a href=\"/{c}/record/{src}/{off}\">record</a></td></tr>",
            ts = e.timestamp,
            date = iso_date(&e.timestamp),
            st = escape(e.status.as_deref().unwrap_or("-")),
            mime = escape(e.mime.as_deref().unwrap_or("-")),
            rt = escape(e.record_type.as_deref().unwrap_or("-")),
            len = e.length.map_or("-".to_string(), |l| l.to_string()),
            src = escape(&names.href(cap.src)),
            off = e.offset,
        );
    }
    b.push_str("</table>");
    let _ = write!(
        b,
        "<p><a href=\"/{c}/timemap/link/{u}\">TimeMap</a> · <a href=\"/{c}/cdx?url={}&amp;output=json\">CDX</a></p>",
        escape(&query_escape(target))
    );
    page(&coll.name, &format!("Captures of {target}"), &b)
}

/// The calendar's look: months in a grid, months without captures dim.
const CALENDAR_STYLE: &str = "<style>#years a{margin-right:.8em}#years a.shown{font-weight:bold}\
#years .n,.month .n{color:#666;font-size:90%}\
#calendar{display:grid;grid-template-columns:repeat(auto-fill,minmax(14em,1fr));gap:.5em 1.5em;margin:1em 0}\
.month h3{margin:.2em 0;font-size:100%}.month.none{opacity:.45}.days a{margin-right:.35em}</style>";
