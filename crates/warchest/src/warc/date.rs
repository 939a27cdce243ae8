//! WARC-Date values: W3C-DTF (ISO 8601 profile) in UTC.
//!
//! WARC 1.0 requires `YYYY-MM-DDThh:mm:ssZ`; 1.1 also allows reduced
//! precision (`2016`, `2016-09`, ...) and fractions of a second. The parser
//! accepts every W3C-DTF form and, leniently, numeric offsets (`-0800`,
//! `+01:00`, seen in ClueWeb09), normalising to UTC; it remembers what it saw
//! so a validator can judge the form against the record's version.
//!
//! The calendar arithmetic (proleptic Gregorian, years 0 to 9999) is done
//! here, exactly, on nanoseconds since the Unix epoch
//! ([`WarcDate::to_unix_nanos`]); the `time` feature adds conversions to
//! and from `time::OffsetDateTime`.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

const NANOS_PER_SEC: i128 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;

/// Days from 1970-01-01 to `year-month-day` (negative before it), in the
/// proleptic Gregorian calendar; `month` 1-12, `day` 1-31 (not checked
/// against the month). Howard Hinnant's `days_from_civil`: exact for every
/// year an `i64` day count holds.
pub(crate) const fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    // Years start in March, so the leap day ends the year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // 0..=399
    let mp = (month as i64 + 9) % 12; // March 0 .. February 11
    let doy = (153 * mp + 2) / 5 + day as i64 - 1; // 0..=365
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // 0..=146096
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01 (before it when negative): year,
/// month (1-12), day (1-31). The inverse of [`days_from_civil`].
pub(crate) const fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // 0..=365
    let mp = (5 * doy + 2) / 153; // 0..=11
    let day = doy - (153 * mp + 2) / 5 + 1; // 1..=31
    let month = if mp < 10 { mp + 3 } else { mp - 9 }; // 1..=12
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month as u8, day as u8)
}

/// The first instant a [`WarcDate`] holds, 0000-01-01T00:00:00Z, in
/// nanoseconds since the epoch.
const MIN_NANOS: i128 = days_from_civil(0, 1, 1) as i128 * SECS_PER_DAY as i128 * NANOS_PER_SEC;
/// The last, 9999-12-31T23:59:59.999999999Z.
const MAX_NANOS: i128 =
    days_from_civil(10_000, 1, 1) as i128 * SECS_PER_DAY as i128 * NANOS_PER_SEC - 1;

/// How much of the date was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DatePrecision {
    /// `YYYY`
    Year,
    /// `YYYY-MM`
    Month,
    /// `YYYY-MM-DD`
    Day,
    /// `YYYY-MM-DDThh:mmZ`
    Minute,
    /// `YYYY-MM-DDThh:mm:ssZ`
    Second,
    /// `YYYY-MM-DDThh:mm:ss.sZ` with this many fraction digits (1 to 9).
    Fraction(u8),
}

/// A parsed WARC date, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WarcDate {
    /// Year (0-9999).
    pub year: u16,
    /// Month, 1-12 (1 when not written).
    pub month: u8,
    /// Day, 1-31 (1 when not written).
    pub day: u8,
    /// Hour, 0-23.
    pub hour: u8,
    /// Minute, 0-59.
    pub minute: u8,
    /// Second, 0-60 (60 for a leap second).
    pub second: u8,
    /// Nanoseconds.
    pub nanos: u32,
    /// What was written.
    pub precision: DatePrecision,
    /// True when the value used a numeric offset instead of `Z` (converted to UTC).
    pub had_offset: bool,
}

/// Why a date does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid date {value:?}: {reason}")]
pub struct DateError {
    /// The value.
    pub value: String,
    /// What is wrong.
    pub reason: &'static str,
}

pub(crate) fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        _ => 28,
    }
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let s = b.get(at..at + n)?;
    let mut v = 0u32;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

impl WarcDate {
    /// 1970-01-01T00:00:00Z at second precision: the date given to a record
    /// whose own date is missing or unreadable.
    pub const EPOCH: WarcDate = WarcDate {
        year: 1970,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
        nanos: 0,
        precision: DatePrecision::Second,
        had_offset: false,
    };

    /// Parses a W3C-DTF date.
    ///
    /// # Errors
    /// The value is not a W3C-DTF date or names an impossible day or time.
    pub fn parse(value: &str) -> Result<WarcDate, DateError> {
        let err = |reason| DateError {
            value: value.to_string(),
            reason,
        };
        let b = value.trim().as_bytes();
        let year = digits(b, 0, 4).ok_or_else(|| err("no four-digit year"))? as u16;
        let mut d = WarcDate {
            year,
            precision: DatePrecision::Year,
            ..WarcDate::EPOCH
        };
        if b.len() == 4 {
            return Ok(d);
        }
        if b.get(4) != Some(&b'-') {
            return Err(err("expected '-' after the year"));
        }
        d.month = digits(b, 5, 2).ok_or_else(|| err("bad month"))? as u8;
        if !(1..=12).contains(&d.month) {
            return Err(err("month out of range"));
        }
        d.precision = DatePrecision::Month;
        if b.len() == 7 {
            return Ok(d);
        }
        if b.get(7) != Some(&b'-') {
            return Err(err("expected '-' after the month"));
        }
        d.day = digits(b, 8, 2).ok_or_else(|| err("bad day"))? as u8;
        if d.day == 0 || d.day > days_in_month(d.year, d.month) {
            return Err(err("day out of range"));
        }
        d.precision = DatePrecision::Day;
        if b.len() == 10 {
            return Ok(d);
        }
        if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
            return Err(err("expected 'T' after the day"));
        }
        d.hour = digits(b, 11, 2).ok_or_else(|| err("bad hour"))? as u8;
        if b.get(13) != Some(&b':') {
            return Err(err("expected ':' after the hour"));
        }
        d.minute = digits(b, 14, 2).ok_or_else(|| err("bad minute"))? as u8;
        if d.hour > 23 || d.minute > 59 {
            return Err(err("time out of range"));
        }
        d.precision = DatePrecision::Minute;
        let mut i = 16;
        if b.get(i) == Some(&b':') {
            d.second = digits(b, 17, 2).ok_or_else(|| err("bad second"))? as u8;
            if d.second > 60 {
                return Err(err("second out of range"));
            }
            d.precision = DatePrecision::Second;
            i = 19;
            if b.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                let mut nanos = 0u64;
                while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
                    if i - start < 9 {
                        nanos = nanos * 10 + u64::from(c - b'0');
                    }
                    i += 1;
                }
                let n = i - start;
                if n == 0 {
                    return Err(err("no digits after the decimal point"));
                }
                for _ in n.min(9)..9 {
                    nanos *= 10;
                }
                d.nanos = nanos as u32;
                d.precision = DatePrecision::Fraction(n.min(9) as u8);
            }
        }
        match &b[i.min(b.len())..] {
            b"Z" | b"z" => Ok(d),
            [sign @ (b'+' | b'-'), rest @ ..] => {
                let (h, m) = match rest {
                    [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => {
                        let s = [*h1, *h2, *m1, *m2];
                        (digits(&s, 0, 2), digits(&s, 2, 2))
                    }
                    [h1, h2] => (digits(&[*h1, *h2], 0, 2), Some(0)),
                    _ => (None, None),
                };
                let (Some(h), Some(m)) = (h, m) else {
                    return Err(err("bad time zone offset"));
                };
                if h > 23 || m > 59 {
                    return Err(err("time zone offset out of range"));
                }
                let offset = (h * 60 + m) as i64 * if *sign == b'+' { 1 } else { -1 };
                d.had_offset = true;
                d.shift_minutes(-offset);
                Ok(d)
            }
            [] => Err(err("no time zone designator")),
            _ => Err(err("unexpected characters after the time")),
        }
    }

    /// Moves the date by `minutes` (used to normalise offsets to UTC). A
    /// date the move would take out of years 0-9999 stays as it was.
    fn shift_minutes(&mut self, minutes: i64) {
        if let Some(n) = self.to_unix_nanos() {
            let keep = (self.precision, self.had_offset);
            let moved = n + i128::from(minutes) * 60 * NANOS_PER_SEC;
            if let Some(mut d) = WarcDate::from_unix_nanos(moved, keep.0) {
                d.had_offset = keep.1;
                *self = d;
            }
        }
    }

    /// The instant as nanoseconds since 1970-01-01T00:00:00Z (negative
    /// before it); a leap second counts as :59. `None` when the fields do
    /// not make a date (a month 13, a 30 February, a year past 9999, an
    /// hour 24, nanoseconds past a second...), which [`WarcDate::parse`]
    /// never gives.
    pub fn to_unix_nanos(&self) -> Option<i128> {
        let valid = self.year <= 9999
            && (1..=12).contains(&self.month)
            && (1..=days_in_month(self.year, self.month)).contains(&self.day)
            && self.hour < 24
            && self.minute < 60
            && self.second <= 60
            && i128::from(self.nanos) < NANOS_PER_SEC;
        if !valid {
            return None;
        }
        let days = days_from_civil(
            i64::from(self.year),
            u32::from(self.month),
            u32::from(self.day),
        );
        let secs = days * SECS_PER_DAY
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second.min(59));
        Some(i128::from(secs) * NANOS_PER_SEC + i128::from(self.nanos))
    }

    /// The date `nanos` nanoseconds after 1970-01-01T00:00:00Z (before it
    /// when negative), written at `precision`; `None` outside years 0-9999.
    pub fn from_unix_nanos(nanos: i128, precision: DatePrecision) -> Option<WarcDate> {
        if !(MIN_NANOS..=MAX_NANOS).contains(&nanos) {
            return None;
        }
        // In range, so the seconds fit an i64 and the rest a u32.
        let secs = i64::try_from(nanos.div_euclid(NANOS_PER_SEC)).ok()?;
        let sub = u32::try_from(nanos.rem_euclid(NANOS_PER_SEC)).ok()?;
        let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
        let in_day = secs.rem_euclid(SECS_PER_DAY);
        Some(WarcDate {
            year: u16::try_from(year).ok()?,
            month,
            day,
            hour: (in_day / 3600) as u8,
            minute: (in_day % 3600 / 60) as u8,
            second: (in_day % 60) as u8,
            nanos: sub,
            precision,
            had_offset: false,
        })
    }

    /// A date from a system time, written at `precision`; `None` outside
    /// years 0-9999.
    pub fn from_system_time(t: SystemTime, precision: DatePrecision) -> Option<WarcDate> {
        let nanos = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => i128::try_from(d.as_nanos()).ok()?,
            Err(e) => -i128::try_from(e.duration().as_nanos()).ok()?,
        };
        WarcDate::from_unix_nanos(nanos, precision)
    }

    /// The same instant as a `time` date-time (a leap second becomes :59).
    /// (The `time` feature; [`WarcDate::to_unix_nanos`] is the same without
    /// the crate.)
    #[cfg(feature = "time")]
    pub fn to_datetime(&self) -> Option<time::OffsetDateTime> {
        let month = time::Month::try_from(self.month).ok()?;
        let date = time::Date::from_calendar_date(i32::from(self.year), month, self.day).ok()?;
        let t = time::Time::from_hms_nano(self.hour, self.minute, self.second.min(59), self.nanos)
            .ok()?;
        Some(time::PrimitiveDateTime::new(date, t).assume_utc())
    }

    /// A date from a `time` date-time, written at `precision`. (The `time`
    /// feature; see [`WarcDate::from_unix_nanos`].)
    #[cfg(feature = "time")]
    pub fn from_datetime(dt: time::OffsetDateTime, precision: DatePrecision) -> Option<WarcDate> {
        let dt = dt.to_offset(time::UtcOffset::UTC);
        let year = u16::try_from(dt.year()).ok().filter(|y| *y <= 9999)?;
        Some(WarcDate {
            year,
            month: dt.month() as u8,
            day: dt.day(),
            hour: dt.hour(),
            minute: dt.minute(),
            second: dt.second(),
            nanos: dt.nanosecond(),
            precision,
            had_offset: false,
        })
    }

    /// The current time at `precision`.
    pub fn now(precision: DatePrecision) -> WarcDate {
        WarcDate::from_system_time(SystemTime::now(), precision).unwrap_or(WarcDate {
            precision,
            ..WarcDate::EPOCH
        })
    }

    /// The 14-digit timestamp `YYYYMMDDhhmmss` of CDX indexes and file names.
    pub fn timestamp14(&self) -> String {
        format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// Parses a 14-digit (or shorter, 4 to 17 digit) ARC / CDX timestamp.
    pub fn from_timestamp14(ts: &str) -> Option<WarcDate> {
        let b = ts.as_bytes();
        if b.len() < 4 || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let get = |at: usize, n: usize, default: u32| {
            if b.len() >= at + n {
                digits(b, at, n)
            } else {
                Some(default)
            }
        };
        let d = WarcDate {
            year: get(0, 4, 0)? as u16,
            month: get(4, 2, 1)? as u8,
            day: get(6, 2, 1)? as u8,
            hour: get(8, 2, 0)? as u8,
            minute: get(10, 2, 0)? as u8,
            second: get(12, 2, 0)? as u8,
            nanos: 0,
            precision: DatePrecision::Second,
            had_offset: false,
        };
        let ok = (1..=12).contains(&d.month)
            && d.day >= 1
            && d.day <= days_in_month(d.year, d.month)
            && d.hour < 24
            && d.minute < 60
            && d.second <= 60;
        ok.then_some(d)
    }
}

impl fmt::Display for WarcDate {
    /// Writes the date in W3C-DTF at its precision.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}", self.year)?;
        if self.precision == DatePrecision::Year {
            return Ok(());
        }
        write!(f, "-{:02}", self.month)?;
        if self.precision == DatePrecision::Month {
            return Ok(());
        }
        write!(f, "-{:02}", self.day)?;
        if self.precision == DatePrecision::Day {
            return Ok(());
        }
        write!(f, "T{:02}:{:02}", self.hour, self.minute)?;
        match self.precision {
            DatePrecision::Minute => {}
            DatePrecision::Second => write!(f, ":{:02}", self.second)?,
            DatePrecision::Fraction(n) => {
                let n = usize::from(n.clamp(1, 9));
                let frac = format!("{:09}", self.nanos);
                write!(f, ":{:02}.{}", self.second, &frac[..n])?;
            }
            _ => {}
        }
        f.write_str("Z")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_and_reduced_forms() {
        let d = WarcDate::parse("2016-09-19T18:03:53Z").unwrap();
        assert_eq!(d.timestamp14(), "20160919180353");
        assert_eq!(d.precision, DatePrecision::Second);
        assert_eq!(d.to_string(), "2016-09-19T18:03:53Z");
        let d = WarcDate::parse("2016-09-19T18:03:53.123456Z").unwrap();
        assert_eq!(d.nanos, 123_456_000);
        assert_eq!(d.precision, DatePrecision::Fraction(6));
        assert_eq!(d.to_string(), "2016-09-19T18:03:53.123456Z");
        for (s, p) in [
            ("2016", DatePrecision::Year),
            ("2016-09", DatePrecision::Month),
            ("2016-09-19", DatePrecision::Day),
            ("2016-09-19T18:03Z", DatePrecision::Minute),
        ] {
            let d = WarcDate::parse(s).unwrap();
            assert_eq!(d.precision, p, "{s}");
            assert_eq!(d.to_string(), s);
        }
    }

    #[test]
    fn offsets_normalised_to_utc() {
        let d = WarcDate::parse("2009-03-05T08:43:19-0800").unwrap();
        assert!(d.had_offset);
        assert_eq!(d.timestamp14(), "20090305164319");
        let d = WarcDate::parse("2009-12-31T23:30:00-01:00").unwrap();
        assert_eq!(d.timestamp14(), "20100101003000");
    }

    #[test]
    fn impossible_dates_rejected() {
        for s in [
            "2009-03-65T08:43:19Z",
            "2009-02-29T00:00:00Z",
            "2009-13-01T00:00:00Z",
            "2009-01-01T24:00:00Z",
            "2009-01-01T00:00:00",
            "20090101",
            "",
            "2009-01-01T00:00:00.Z",
        ] {
            assert!(WarcDate::parse(s).is_err(), "{s}");
        }
        assert!(WarcDate::parse("2008-02-29T00:00:00Z").is_ok());
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            WarcDate::from_timestamp14("20140216050323")
                .unwrap()
                .to_string(),
            "2014-02-16T05:03:23Z"
        );
        assert_eq!(
            WarcDate::from_timestamp14("2014").unwrap().timestamp14(),
            "20140101000000"
        );
        assert!(WarcDate::from_timestamp14("20141316050323").is_none());
        assert!(WarcDate::from_timestamp14("abc").is_none());
    }

    fn date(s: &str) -> WarcDate {
        WarcDate::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_epoch_and_the_ends() {
        let epoch = date("1970-01-01T00:00:00Z");
        assert_eq!(epoch.to_unix_nanos(), Some(0));
        assert_eq!(
            WarcDate::from_unix_nanos(0, DatePrecision::Second),
            Some(epoch)
        );
        assert_eq!(
            WarcDate::from_unix_nanos(-1, DatePrecision::Fraction(9))
                .unwrap()
                .to_string(),
            "1969-12-31T23:59:59.999999999Z"
        );
        assert_eq!(
            date("2001-09-09T01:46:40Z").to_unix_nanos(),
            Some(1_000_000_000 * NANOS_PER_SEC)
        );
        // Years 0 and 9999 are the ends, to the nanosecond.
        let first = date("0000-01-01T00:00:00Z");
        assert_eq!(first.to_unix_nanos(), Some(-62_167_219_200 * NANOS_PER_SEC));
        assert_eq!(first.to_unix_nanos(), Some(MIN_NANOS));
        let last = date("9999-12-31T23:59:59.999999999Z");
        assert_eq!(last.to_unix_nanos(), Some(253_402_300_799_999_999_999));
        assert_eq!(last.to_unix_nanos(), Some(MAX_NANOS));
        let p = DatePrecision::Fraction(9);
        assert_eq!(
            WarcDate::from_unix_nanos(MIN_NANOS, p).unwrap().to_string(),
            "0000-01-01T00:00:00.000000000Z"
        );
        assert_eq!(WarcDate::from_unix_nanos(MAX_NANOS, p), Some(last));
        assert_eq!(WarcDate::from_unix_nanos(MIN_NANOS - 1, p), None);
        assert_eq!(WarcDate::from_unix_nanos(MAX_NANOS + 1, p), None);
        assert_eq!(WarcDate::from_unix_nanos(i128::MIN, p), None);
        assert_eq!(WarcDate::from_unix_nanos(i128::MAX, p), None);
        assert_eq!(
            WarcDate::from_system_time(UNIX_EPOCH, DatePrecision::Second),
            Some(epoch)
        );
        let before = UNIX_EPOCH - std::time::Duration::from_millis(1500);
        assert_eq!(
            WarcDate::from_system_time(before, DatePrecision::Fraction(3))
                .unwrap()
                .to_string(),
            "1969-12-31T23:59:58.500Z"
        );
        let now = WarcDate::now(DatePrecision::Second);
        assert!(now.year >= 2024 && now.to_unix_nanos().is_some(), "{now}");
    }

    #[test]
    fn leap_years() {
        for (y, leap) in [
            (2000, true),
            (1900, false),
            (2024, true),
            (2023, false),
            (0, true),
            (400, true),
            (9996, true),
            (9999, false),
        ] {
            let feb29 = days_from_civil(y, 3, 1) - days_from_civil(y, 2, 28) == 2;
            assert_eq!(feb29, leap, "{y}");
            let year_len = days_from_civil(y + 1, 1, 1) - days_from_civil(y, 1, 1);
            assert_eq!(year_len, if leap { 366 } else { 365 }, "{y}");
            let s = format!("{y:04}-02-29T00:00:00Z");
            assert_eq!(WarcDate::parse(&s).is_ok(), leap, "{s}");
        }
        // The day after a leap day, and after the 28th otherwise.
        let d = date("2024-02-29T12:00:00Z").to_unix_nanos().unwrap();
        let next = WarcDate::from_unix_nanos(d + 86_400 * NANOS_PER_SEC, DatePrecision::Second);
        assert_eq!(next.unwrap().to_string(), "2024-03-01T12:00:00Z");
        let d = date("2100-02-28T12:00:00Z").to_unix_nanos().unwrap();
        let next = WarcDate::from_unix_nanos(d + 86_400 * NANOS_PER_SEC, DatePrecision::Second);
        assert_eq!(next.unwrap().to_string(), "2100-03-01T12:00:00Z");
    }

    #[test]
    fn civil_days_round_trip() {
        // Every day of years 0 to 9999, in order.
        let mut days = days_from_civil(0, 1, 1);
        for year in 0..=9999i64 {
            for month in 1..=12u8 {
                for day in 1..=days_in_month(year as u16, month) {
                    assert_eq!(
                        days_from_civil(year, u32::from(month), u32::from(day)),
                        days
                    );
                    assert_eq!(civil_from_days(days), (year, month, day));
                    days += 1;
                }
            }
        }
        assert_eq!(days, days_from_civil(10_000, 1, 1));
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn nanos_round_trip() {
        let p = DatePrecision::Fraction(9);
        let mut n = MIN_NANOS;
        // A stride that lands on every time of day over the range.
        let stride = (MAX_NANOS - MIN_NANOS) / 100_003 + 7_919;
        while n <= MAX_NANOS {
            let d = WarcDate::from_unix_nanos(n, p).unwrap();
            assert_eq!(d.to_unix_nanos(), Some(n), "{d}");
            assert_eq!(date(&d.to_string()), d);
            n += stride;
        }
    }

    #[test]
    fn invalid_fields_have_no_instant() {
        let ok = date("2009-03-05T08:43:19Z");
        assert!(ok.to_unix_nanos().is_some());
        let leap_second = WarcDate { second: 60, ..ok };
        assert_eq!(
            leap_second.to_unix_nanos(),
            WarcDate { second: 59, ..ok }.to_unix_nanos()
        );
        for bad in [
            WarcDate { year: 10_000, ..ok },
            WarcDate { month: 0, ..ok },
            WarcDate { month: 13, ..ok },
            WarcDate { day: 0, ..ok },
            WarcDate {
                month: 2,
                day: 29,
                ..ok
            },
            WarcDate {
                month: 4,
                day: 31,
                ..ok
            },
            WarcDate { hour: 24, ..ok },
            WarcDate { minute: 60, ..ok },
            WarcDate { second: 61, ..ok },
            WarcDate {
                nanos: 1_000_000_000,
                ..ok
            },
        ] {
            assert_eq!(bad.to_unix_nanos(), None, "{bad:?}");
        }
    }

    #[test]
    fn minute_offsets() {
        for (s, utc) in [
            ("2009-03-05T08:43:19-0800", "2009-03-05T16:43:19Z"),
            ("2009-03-05T08:43:19+05:45", "2009-03-05T02:58:19Z"),
            ("2009-03-05T08:43:19+00:00", "2009-03-05T08:43:19Z"),
            ("2009-03-05T08:43:19-00", "2009-03-05T08:43:19Z"),
            ("2010-01-01T00:30:00+01:00", "2009-12-31T23:30:00Z"),
            ("2024-02-29T23:30:00-01:00", "2024-03-01T00:30:00Z"),
            ("2023-03-01T00:10:00+00:11", "2023-02-28T23:59:00Z"),
            ("2024-03-01T00:10:00+23:59", "2024-02-29T00:11:00Z"),
            ("2009-03-05T08:43Z", "2009-03-05T08:43Z"),
            ("2009-03-05T08:43+01:30", "2009-03-05T07:13Z"),
            ("2009-03-05T08:43:19.25-01:00", "2009-03-05T09:43:19.25Z"),
        ] {
            let d = date(s);
            assert_eq!(d.to_string(), utc, "{s}");
            assert_eq!(
                d.had_offset,
                s.ends_with(|c: char| c.is_ascii_digit()),
                "{s}"
            );
        }
        // Out of years 0-9999 after the move: the date stays as written.
        for s in ["9999-12-31T23:30:00-01:00", "0000-01-01T00:30:00+01:00"] {
            let d = date(s);
            assert!(d.had_offset);
            assert_eq!(d.to_string(), format!("{}Z", &s[..19]), "{s}");
        }
    }

    /// The arithmetic agrees with the `time` crate wherever both work.
    #[cfg(feature = "time")]
    #[test]
    fn agrees_with_the_time_crate() {
        let p = DatePrecision::Fraction(9);
        let stride = (MAX_NANOS - MIN_NANOS) / 50_021 + 104_729;
        let mut n = MIN_NANOS;
        while n <= MAX_NANOS {
            let dt = time::OffsetDateTime::from_unix_timestamp_nanos(n).unwrap();
            let ours = WarcDate::from_unix_nanos(n, p).unwrap();
            assert_eq!(WarcDate::from_datetime(dt, p), Some(ours), "{n}");
            assert_eq!(ours.to_datetime(), Some(dt), "{n}");
            assert_eq!(ours.to_unix_nanos(), Some(dt.unix_timestamp_nanos()));
            n += stride;
        }
        // Offsets in whole minutes, as `time` applies them.
        let base = date("2016-02-29T23:58:59.5Z");
        for minutes in (-1439i64..=1439).step_by(7) {
            let sign = if minutes < 0 { '-' } else { '+' };
            let m = minutes.unsigned_abs();
            let s = format!("2016-02-29T23:58:59.5{sign}{:02}:{:02}", m / 60, m % 60);
            let want = base.to_datetime().unwrap() - time::Duration::minutes(minutes);
            let got = date(&s);
            assert_eq!(got.to_datetime(), Some(want), "{s}");
        }
        // Invalid fields: no instant either way.
        let ok = base;
        for d in [
            ok,
            WarcDate { year: 10_000, ..ok },
            WarcDate { month: 13, ..ok },
            WarcDate { day: 30, ..ok },
            WarcDate { hour: 24, ..ok },
            WarcDate { second: 60, ..ok },
            WarcDate {
                nanos: 1_000_000_000,
                ..ok
            },
        ] {
            assert_eq!(
                d.to_unix_nanos(),
                d.to_datetime()
                    .map(time::OffsetDateTime::unix_timestamp_nanos),
                "{d:?}"
            );
        }
        let now = time::OffsetDateTime::now_utc();
        let ours = WarcDate::from_system_time(now.into(), p).unwrap();
        assert_eq!(ours.to_datetime(), Some(now));
    }
}
