//! WARC-Date values: W3C-DTF (ISO 8601 profile) in UTC.
//!
//! WARC 1.0 requires `YYYY-MM-DDThh:mm:ssZ`; 1.1 also allows reduced
//! precision (`2016`, `2016-09`, ...) and fractions of a second. The parser
//! accepts every W3C-DTF form and, leniently, numeric offsets (`-0800`,
//! `+01:00`, seen in ClueWeb09), normalising to UTC; it remembers what it saw
//! so a validator can judge the form against the record's version.

use std::fmt;

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

fn days_in_month(year: u16, month: u8) -> u8 {
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
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            nanos: 0,
            precision: DatePrecision::Year,
            had_offset: false,
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

    /// Moves the date by `minutes` (used to normalise offsets to UTC).
    fn shift_minutes(&mut self, minutes: i64) {
        if let Some(dt) = self.to_datetime() {
            let dt = dt + time::Duration::minutes(minutes);
            let keep = (self.precision, self.had_offset);
            if let Some(mut n) = WarcDate::from_datetime(dt, keep.0) {
                n.had_offset = keep.1;
                *self = n;
            }
        }
    }

    /// The same instant as a `time` date-time (a leap second becomes :59).
    pub fn to_datetime(&self) -> Option<time::OffsetDateTime> {
        let month = time::Month::try_from(self.month).ok()?;
        let date = time::Date::from_calendar_date(i32::from(self.year), month, self.day).ok()?;
        let t = time::Time::from_hms_nano(self.hour, self.minute, self.second.min(59), self.nanos)
            .ok()?;
        Some(time::PrimitiveDateTime::new(date, t).assume_utc())
    }

    /// A date from a `time` date-time, written at `precision`.
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
        let now = time::OffsetDateTime::now_utc();
        WarcDate::from_datetime(now, precision).unwrap_or(WarcDate {
            year: 1970,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            nanos: 0,
            precision,
            had_offset: false,
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
}
