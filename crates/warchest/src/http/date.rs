//! HTTP dates (`Sun, 26 Jan 2014 20:06:24 GMT`, RFC 9110's IMF-fixdate)
//! and the 14-digit timestamps of indexes and archival URLs
//! (`20140126200624`, UTC), converted into each other for Memento
//! (`Memento-Datetime`, `Accept-Datetime`) and replayed cookies; and the
//! one rule by which a partial timestamp (`2014`) is padded to 14 digits
//! ([`pad_timestamp`], [`pad_timestamp_up`]), which replay and its CDX
//! API use too.
//!
//! The calendar arithmetic is [`WarcDate`](crate::warc::WarcDate)'s.
//! The crawler's `Retry-After` is read with the `httpdate` crate instead,
//! on purpose: a server may send RFC 850 or asctime dates there, which
//! archives' own headers and indexes never hold.

use crate::warc::date::{days_from_civil, days_in_month};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
/// From 1970-01-01, a Thursday.
const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// The earliest values of a timestamp's digits: January 1st, 00:00:00.
const LOW: &[u8; 14] = b"00000101000000";
/// The latest values of a timestamp's digits, as a bound compared as
/// text: not a date (day 31 of every month).
const HIGH: &[u8; 14] = b"99991231235959";

/// The padding rule of timestamps, in one place: the first 14 digits of
/// `ts` (anything else in it skipped), and where it has fewer, `fill`'s
/// digits at the same places.
fn fill14(ts: &str, fill: &[u8; 14]) -> [u8; 14] {
    let mut d = *fill;
    for (slot, b) in d.iter_mut().zip(ts.bytes().filter(u8::is_ascii_digit)) {
        *slot = b;
    }
    d
}

/// A partial timestamp padded to 14 digits with the earliest values, as
/// an archival URL's timestamp is read (`2014` is `20140101000000`).
///
/// The rule, shared with [`timestamp_seconds`] and [`http_date`]: only
/// digits count (`2014-01-26` is `20140126000000`), and only the first 14
/// of them; the missing trailing digits are the earliest's, each in its
/// place, so an odd count completes its pair with the earliest's digit
/// (`2014013` is the 31st, `20140` is `20140101000000`). Unlike those two,
/// a year of `0000` (no digits, or zeros) is `1000`, so that an empty
/// timestamp is `10000101000000` (as in pywb); the text is not checked
/// otherwise (`20141399` stays month 13, day 99).
pub fn pad_timestamp(ts: &str) -> String {
    let mut d = fill14(ts, LOW);
    if d[..4] == *b"0000" {
        d[..4].copy_from_slice(b"1000");
    }
    d.iter().map(|&b| char::from(b)).collect()
}

/// A partial timestamp padded to 14 digits with the latest values
/// (`2014` is `20141231235959`), as the upper bound of a range compared
/// as text (a `to=`): the same rule as [`pad_timestamp`] with `9999` 12
/// 31 23:59:59 as the fill, so `201402` is `20140231235959`, after every
/// second of February without being a date.
pub fn pad_timestamp_up(ts: &str) -> String {
    fill14(ts, HIGH).iter().map(|&b| char::from(b)).collect()
}

/// The parts of a timestamp: its first 14 digits, the missing trailing
/// ones the earliest (`2014` is 2014-01-01 00:00:00; [`fill14`]), each
/// part clamped into its range (month 1-12, day 1 to the month's last,
/// hour 0-23, minute and second 0-59) so any text gives a date.
fn parts(ts: &str) -> [u32; 6] {
    let d = fill14(ts, LOW);
    let n = |a: usize, b: usize| {
        d[a..b]
            .iter()
            .fold(0u32, |v, c| v * 10 + u32::from(c - b'0'))
    };
    let (y, mo) = (n(0, 4), n(4, 6).clamp(1, 12));
    // The month's own last day, so that a date printed is one that parses
    // back (`20140231` is 28 February, not "31 Feb" or 3 March).
    let last = u32::from(days_in_month(y as u16, mo as u8));
    [
        y,
        mo,
        n(6, 8).clamp(1, last),
        n(8, 10).min(23),
        n(10, 12).min(59),
        n(12, 14).min(59),
    ]
}

/// Seconds since 1970-01-01T00:00:00Z of a 14-digit timestamp; a partial
/// one (`2014`, `201401`) is its earliest second, and out-of-range parts
/// are clamped (month 13 is December), so closeness can be measured for
/// any timestamp an index holds.
pub fn timestamp_seconds(ts: &str) -> i64 {
    let [y, mo, d, h, mi, s] = parts(ts);
    days_from_civil(i64::from(y), mo, d) * 86_400
        + i64::from(h) * 3600
        + i64::from(mi) * 60
        + i64::from(s)
}

/// A 14-digit timestamp as an HTTP date (`Sun, 26 Jan 2014 20:06:24
/// GMT`), as `Memento-Datetime` wants it; partial or out-of-range parts as
/// [`timestamp_seconds`] reads them.
pub fn http_date(ts: &str) -> String {
    let [y, mo, d, h, mi, s] = parts(ts);
    let days = timestamp_seconds(ts).div_euclid(86_400);
    let dow = WEEKDAYS[days.rem_euclid(7) as usize];
    format!(
        "{dow}, {d:02} {} {y:04} {h:02}:{mi:02}:{s:02} GMT",
        MONTHS[mo as usize - 1]
    )
}

/// Parses an HTTP date (`Sun, 26 Jan 2014 20:06:24 GMT`, as in
/// `Accept-Datetime` and a cookie's `Expires` once its `-`s are spaces)
/// into a 14-digit timestamp. The weekday is optional and not checked;
/// the time zone is taken to be GMT, as HTTP dates always are.
///
/// `None` unless each part is in its range: a day the month has, hours
/// 0-23, minutes 0-59, seconds 0-60 (a leap second is read as second 59,
/// which a timestamp can hold), a year of at most four digits.
pub fn parse_http_date(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.split_once(',').map_or(s, |(_, r)| r).trim();
    let mut it = s.split_ascii_whitespace();
    let day: u32 = it.next()?.parse().ok()?;
    let mon = it.next()?;
    let mo = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(mon))? + 1;
    let year: u32 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':').map(|x| x.parse::<u32>().ok());
    let (h, mi, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || year > 9999 || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    if day == 0 || day > u32::from(days_in_month(year as u16, mo as u8)) {
        return None;
    }
    let sec = sec.min(59);
    Some(format!("{year:04}{mo:02}{day:02}{h:02}{mi:02}{sec:02}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_http_dates() {
        assert_eq!(timestamp_seconds("19700101000000"), 0);
        // A day past its month's end is that month's last, and prints as
        // a date that parses back.
        assert_eq!(http_date("20140231120000"), "Fri, 28 Feb 2014 12:00:00 GMT");
        assert_eq!(timestamp_seconds("20140231"), timestamp_seconds("20140228"));
        assert_eq!(
            parse_http_date(&http_date("20160231")).as_deref(),
            Some("20160229000000")
        );
        assert_eq!(timestamp_seconds("20140126200624"), 1_390_766_784);
        assert_eq!(
            timestamp_seconds("2014"),
            timestamp_seconds("20140101000000")
        );
        // Out-of-range parts clamped: month 13 is December, 99:99:99 the
        // day's last second.
        assert_eq!(
            timestamp_seconds("20141301999999"),
            timestamp_seconds("20141201235959")
        );
        assert_eq!(http_date("20140126200624"), "Sun, 26 Jan 2014 20:06:24 GMT");
        assert_eq!(http_date("19700101"), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            parse_http_date("Sun, 26 Jan 2014 20:06:24 GMT").as_deref(),
            Some("20140126200624")
        );
        assert_eq!(
            parse_http_date("26 jan 2014 20:06:24").as_deref(),
            Some("20140126200624")
        );
        assert_eq!(
            parse_http_date("Tue, 31 Dec 2016 23:59:60 GMT").as_deref(),
            Some("20161231235959")
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }

    #[test]
    fn timestamps_are_padded() {
        for (ts, down, up) in [
            // Short, and each length up to 14.
            ("2014", "20140101000000", "20141231235959"),
            ("201401", "20140101000000", "20140131235959"),
            ("20140126200624", "20140126200624", "20140126200624"),
            // An odd count: the pair is completed with the fill's digit.
            ("201", "20100101000000", "20191231235959"),
            ("20140", "20140101000000", "20140231235959"),
            ("2014013", "20140131000000", "20140131235959"),
            // Only digits count, wherever they are.
            ("2014-01-26", "20140126000000", "20140126235959"),
            ("x2014y01", "20140101000000", "20140131235959"),
            ("2014-01-26T20:06:24Z", "20140126200624", "20140126200624"),
            // Only the first 14.
            ("201401262006249", "20140126200624", "20140126200624"),
            ("2014012620062499999", "20140126200624", "20140126200624"),
            // Nothing, or a year of zeros, is the year 1000 going down.
            ("", "10000101000000", "99991231235959"),
            ("abc", "10000101000000", "99991231235959"),
            ("0", "10000101000000", "09991231235959"),
            ("000012", "10001201000000", "00001231235959"),
            // Not checked: month 13 stays 13.
            ("201413", "20141301000000", "20141331235959"),
        ] {
            assert_eq!(pad_timestamp(ts), down, "{ts:?}");
            assert_eq!(pad_timestamp_up(ts), up, "{ts:?}");
            assert_eq!(pad_timestamp(&pad_timestamp(ts)), down, "{ts:?}");
            // Seconds and HTTP dates read a timestamp by the same rule
            // (the year-0000 rule aside).
            if !down.starts_with("1000") {
                assert_eq!(timestamp_seconds(ts), timestamp_seconds(down), "{ts:?}");
                assert_eq!(http_date(ts), http_date(down), "{ts:?}");
            }
        }
    }

    #[test]
    fn out_of_range_http_dates_are_refused() {
        for bad in [
            "Sun, 26 Jan 2014 99:99:99 GMT",
            "Sun, 26 Jan 2014 24:00:00 GMT",
            "Sun, 26 Jan 2014 20:60:00 GMT",
            "Sun, 26 Jan 2014 20:06:61 GMT",
            "Sun, 26 Jan 2014 20:06 GMT",
            "Sun, 26 Jan 2014 20:06:24:00 GMT",
            "Sun, 00 Jan 2014 20:06:24 GMT",
            "Sun, 32 Jan 2014 20:06:24 GMT",
            "Sat, 29 Feb 2014 20:06:24 GMT",
            "Sun, 26 Jan 10000 20:06:24 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
        assert!(parse_http_date("Sat, 29 Feb 2020 20:06:24 GMT").is_some());
    }
}
