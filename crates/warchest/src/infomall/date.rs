//! Web InfoMall capture times: RFC 822 as the specification asks, in the
//! forms real writers produced (RFC 1123 with `GMT` in every known file).

use crate::warc::{DatePrecision, WarcDate};

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

fn zone_minutes(t: &str) -> Option<i64> {
    let u = t.to_ascii_uppercase();
    let h = match u.as_str() {
        "GMT" | "UT" | "UTC" | "Z" => 0,
        "EST" => -5,
        "EDT" => -4,
        "CST" => -6,
        "CDT" => -5,
        "MST" => -7,
        "MDT" => -6,
        "PST" => -8,
        "PDT" => -7,
        _ => {
            let b = t.as_bytes();
            if b.len() == 5 && matches!(b[0], b'+' | b'-') && b[1..].iter().all(u8::is_ascii_digit)
            {
                let v: i64 = t[1..].parse().ok()?;
                let m = (v / 100) * 60 + v % 100;
                return Some(if b[0] == b'-' { -m } else { m });
            }
            return None;
        }
    };
    Some(h * 60)
}

/// Parses a capture time: RFC 822 / 1123 (`Tue, 28 Feb 2006 05:42:09
/// GMT`), RFC 850 (`Tuesday, 28-Feb-06 05:42:09 GMT`) and asctime (`Tue Feb
/// 28 05:42:09 2006`); two-digit years are 1950-2049; seconds may be
/// missing; a missing zone is GMT. The result is in UTC, whole seconds.
pub fn parse_date(s: &str) -> Option<WarcDate> {
    let (mut day, mut month, mut year) = (None::<u8>, None::<u8>, None::<i32>);
    let mut hms = None::<(u8, u8, u8)>;
    let mut zone = None::<i64>;
    let mut tokens: Vec<&str> = Vec::new();
    for t in s.split(|c: char| c.is_ascii_whitespace() || c == ',') {
        if t.is_empty() {
            continue;
        }
        // dd-Mon-yy (RFC 850) splits into its parts; a lone +hhmm / -hhmm
        // zone does not.
        if t.contains('-') && !t.starts_with('-') && t.bytes().any(|b| b.is_ascii_alphabetic()) {
            tokens.extend(t.split('-'));
        } else {
            tokens.push(t);
        }
    }
    for t in tokens {
        if t.contains(':') {
            let mut p = t.split(':');
            let h: u8 = p.next()?.parse().ok()?;
            let m: u8 = p.next()?.parse().ok()?;
            let sec: u8 = match p.next() {
                Some(x) => x.parse().ok()?,
                None => 0,
            };
            hms = Some((h, m, sec));
        } else if t.bytes().all(|b| b.is_ascii_digit()) {
            if day.is_none() && t.len() <= 2 && year.is_none() {
                day = Some(t.parse().ok()?);
            } else if year.is_none() {
                let y: i32 = t.parse().ok()?;
                year = Some(match t.len() {
                    1 | 2 if y < 50 => 2000 + y,
                    1 | 2 => 1900 + y,
                    3 => 1900 + y,
                    _ => y,
                });
            } else {
                return None;
            }
        } else if let Some(z) = zone_minutes(t) {
            zone = Some(z);
        } else {
            let l = t.to_ascii_lowercase();
            if l.len() >= 3
                && let Some(i) = MONTHS.iter().position(|m| l.starts_with(m))
            {
                month = Some(i as u8 + 1);
            } else if l.len() >= 3 && DAYS.iter().any(|d| l.starts_with(d)) {
                // The weekday says nothing the date does not.
            } else {
                return None;
            }
        }
    }
    let (h, mi, sec) = hms?;
    // As written, then moved to UTC: to_unix_nanos checks the day and the
    // time (a 30 February, an hour 24 are no date).
    let local = WarcDate {
        year: u16::try_from(year?).ok().filter(|y| *y <= 9999)?,
        month: month?,
        day: day?,
        hour: h,
        minute: mi,
        second: sec.min(59),
        nanos: 0,
        precision: DatePrecision::Second,
        had_offset: false,
    };
    let utc = local.to_unix_nanos()? - i128::from(zone.unwrap_or(0)) * 60 * 1_000_000_000;
    WarcDate::from_unix_nanos(utc, DatePrecision::Second)
}

/// Writes a capture time as every known writer did:
/// `Tue, 28 Feb 2006 05:42:09 GMT` (RFC 1123).
pub fn format_date(d: &WarcDate) -> String {
    // 1970-01-01 was a Thursday, three days after a Monday.
    let wd = d
        .to_unix_nanos()
        .map(|n| (n.div_euclid(86_400 * 1_000_000_000) + 3).rem_euclid(7) as usize)
        .unwrap_or(0);
    let day = DAYS[wd % 7];
    let month = MONTHS[usize::from(d.month.clamp(1, 12)) - 1];
    let cap = |s: &str| {
        let mut c = s.to_string();
        c[..1].make_ascii_uppercase();
        c
    };
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        cap(day),
        d.day,
        cap(month),
        d.year,
        d.hour,
        d.minute,
        d.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_real_writers_used() {
        let want = "2006-02-28T05:42:09Z";
        for s in [
            "Tue, 28 Feb 2006 05:42:09 GMT",
            "Tue, 28 Feb 06 05:42:09 GMT",
            "Tuesday, 28-Feb-06 05:42:09 GMT",
            "Tue Feb 28 05:42:09 2006",
            "28 Feb 2006 05:42:09",
            "Tue, 28 Feb 2006 13:42:09 +0800",
            "Tue, 28 Feb 2006 00:42:09 EST",
        ] {
            assert_eq!(
                parse_date(s).map(|d| d.to_string()).as_deref(),
                Some(want),
                "{s}"
            );
        }
        assert_eq!(
            parse_date("Tue, 28 Feb 2006 05:42 GMT")
                .unwrap()
                .to_string(),
            "2006-02-28T05:42:00Z"
        );
        for s in [
            "",
            "yesterday",
            "Tue, 30 Feb 2006 05:42:09 GMT",
            "28 Feb 2006",
        ] {
            assert!(parse_date(s).is_none(), "{s}");
        }
    }

    #[test]
    fn zones_move_across_days_and_years() {
        for (s, want) in [
            ("Sat, 01 Jan 2000 00:30:00 +0100", "1999-12-31T23:30:00Z"),
            ("Fri, 31 Dec 1999 23:30:00 -0100", "2000-01-01T00:30:00Z"),
            ("Thu, 29 Feb 2024 20:00:00 PST", "2024-03-01T04:00:00Z"),
            ("Fri, 01 Mar 2024 05:59:00 +0559", "2024-03-01T00:00:00Z"),
            ("Fri, 01 Mar 2024 05:00:00 +0600", "2024-02-29T23:00:00Z"),
            ("Fri, 31 Dec 9999 23:59:59 GMT", "9999-12-31T23:59:59Z"),
            ("Sat, 01 Jan 0000 00:00:00 GMT", "0000-01-01T00:00:00Z"),
        ] {
            assert_eq!(
                parse_date(s).map(|d| d.to_string()).as_deref(),
                Some(want),
                "{s}"
            );
        }
        // Out of years 0-9999 once in UTC, or not a time: no date.
        for s in [
            "Fri, 31 Dec 9999 23:30:00 -0100",
            "Sat, 01 Jan 0000 00:30:00 +0100",
            "Sat, 01 Jan 10000 00:00:00 GMT",
            "Tue, 28 Feb 2006 24:00:00 GMT",
            "Tue, 28 Feb 2006 23:60:00 GMT",
            "Mon, 29 Feb 2100 00:00:00 GMT",
        ] {
            assert!(parse_date(s).is_none(), "{s}");
        }
    }

    #[test]
    fn weekdays() {
        for s in [
            "Thu, 01 Jan 1970 00:00:00 GMT",
            "Wed, 31 Dec 1969 23:59:59 GMT",
            "Tue, 29 Feb 2000 12:00:00 GMT",
            "Mon, 01 Jan 0001 00:00:00 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "Sat, 01 Jan 0000 00:00:00 GMT",
        ] {
            assert_eq!(format_date(&parse_date(s).unwrap()), s);
        }
    }

    #[test]
    fn formats_round_trip() {
        let s = "Tue, 28 Feb 2006 05:42:09 GMT";
        assert_eq!(format_date(&parse_date(s).unwrap()), s);
        let s = "Sun, 01 Jan 2006 00:00:00 GMT";
        assert_eq!(format_date(&parse_date(s).unwrap()), s);
    }
}
