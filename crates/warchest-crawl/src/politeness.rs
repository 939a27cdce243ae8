//! When a host may be fetched next: Heritrix's delay rule (a factor of the
//! last fetch's duration, clamped), robots.txt `Crawl-delay`, and
//! `Retry-After` on 429 and 503 with bounded exponential backoff.
//!
//! Pure functions of durations and headers: the engine keeps the clock.

use std::time::{Duration, SystemTime};

use serde::Deserialize;

/// Politeness settings: keys of the crawl's TOML file, and flags of the
/// same names. Times are in seconds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct PolitenessConfig {
    /// The wait after a fetch, as a multiple of how long it took
    /// (Heritrix's `delayFactor`, 5.0).
    pub delay_factor: f64,
    /// The shortest wait between fetches from one host (Heritrix's
    /// `minDelayMs`, 3 s).
    pub min_delay: f64,
    /// The longest wait the factor gives (Heritrix's `maxDelayMs`, 30 s).
    pub max_delay: f64,
    /// Wait at least robots.txt's `Crawl-delay` (up to
    /// `max-crawl-delay`).
    pub respect_crawl_delay: bool,
    /// The longest `Crawl-delay` obeyed; a longer one is cut to this
    /// (Heritrix's `respectCrawlDelayUpToSeconds`, 300).
    pub max_crawl_delay: f64,
    /// How many times a URI that failed for a retryable reason (429, 503,
    /// a connection error) is tried again (Heritrix's `maxRetries`, 30,
    /// is for days-long crawls; 5 here).
    pub max_retries: u32,
    /// The first wait before a retry without `Retry-After`, doubled at each
    /// attempt (Heritrix's `retryDelaySeconds`, 900, is for days-long
    /// crawls; 10 here).
    pub retry_delay: f64,
    /// The longest wait before a retry, `Retry-After` included.
    pub max_retry_delay: f64,
    /// URIs of one host fetched at once (1 to 64). 1, one connection per
    /// host as Heritrix keeps, is polite; more is for sites the crawl's
    /// operator may load harder, such as a browser crawl of one site with
    /// `browsers` tabs (Browsertrix's workers). The delays still hold: a
    /// fetch's end puts the host's next start back by its delay.
    pub host_parallel: u32,
    /// Keep a host's connection open between its fetches (HTTP/1.0
    /// `Connection: keep-alive`) where the server agrees; `false`: a new
    /// connection for each request (`Connection: close`).
    pub keep_alive: bool,
}

impl Default for PolitenessConfig {
    fn default() -> PolitenessConfig {
        PolitenessConfig {
            delay_factor: 5.0,
            min_delay: 3.0,
            max_delay: 30.0,
            respect_crawl_delay: true,
            max_crawl_delay: 300.0,
            max_retries: 5,
            retry_delay: 10.0,
            max_retry_delay: 3600.0,
            host_parallel: 1,
            keep_alive: true,
        }
    }
}

/// Seconds as a duration: negative, NaN and huge values made safe.
pub fn secs(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        Duration::ZERO
    } else {
        // Bounded at a year: no caller means more.
        Duration::from_secs_f64(s.min(365.0 * 86400.0))
    }
}

impl PolitenessConfig {
    /// The wait before the next fetch from a host whose last fetch took
    /// `last_fetch`: `delay-factor` × `last_fetch`, clamped to
    /// [`min-delay`, `max-delay`], and at least `crawl_delay` (robots.txt's,
    /// when obeyed, cut to `max-crawl-delay`).
    pub fn next_fetch_delay(
        &self,
        last_fetch: Duration,
        crawl_delay: Option<Duration>,
    ) -> Duration {
        let min = secs(self.min_delay);
        let max = secs(self.max_delay).max(min);
        let scaled = secs(last_fetch.as_secs_f64() * self.delay_factor);
        let mut d = scaled.clamp(min, max);
        if self.respect_crawl_delay
            && let Some(c) = crawl_delay
        {
            d = d.max(c.min(secs(self.max_crawl_delay)));
        }
        d
    }

    /// The wait before retry number `attempt` (1 for the first retry) of a
    /// URI answered with `status` and `headers`, or `None` when it is not
    /// retried (not a retryable status, or out of retries). 429 and 503
    /// take `Retry-After` (seconds or an HTTP date, relative to `now`),
    /// else `retry-delay` × 2^(attempt-1); both at most `max-retry-delay`.
    /// A `status` of 0 stands for a connection failure.
    pub fn retry_after<I, N, V>(
        &self,
        status: u16,
        headers: I,
        attempt: u32,
        now: SystemTime,
    ) -> Option<Duration>
    where
        I: IntoIterator<Item = (N, V)>,
        N: AsRef<str>,
        V: AsRef<[u8]>,
    {
        if attempt == 0 || attempt > self.max_retries {
            return None;
        }
        if !matches!(status, 0 | 408 | 429 | 500 | 502 | 503 | 504) {
            return None;
        }
        let max = secs(self.max_retry_delay);
        let given = matches!(status, 429 | 503)
            .then(|| {
                headers
                    .into_iter()
                    .find(|(n, _)| n.as_ref().eq_ignore_ascii_case("retry-after"))
                    .and_then(|(_, v)| parse_retry_after(v.as_ref(), now))
            })
            .flatten();
        let backoff = || {
            let exp = 2f64.powi((attempt - 1).min(30) as i32);
            secs(self.retry_delay * exp)
        };
        Some(given.unwrap_or_else(backoff).min(max))
    }
}

/// A `Retry-After` value: delay seconds, or an HTTP date (a date in the
/// past is no wait).
pub fn parse_retry_after(v: &[u8], now: SystemTime) -> Option<Duration> {
    let s = std::str::from_utf8(v).ok()?.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        // Digits beyond u64 are "a very long time".
        return Some(s.parse::<u64>().map_or(Duration::MAX, Duration::from_secs));
    }
    let when = httpdate::parse_http_date(s).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_is_factor_times_fetch_clamped() {
        let p = PolitenessConfig::default();
        assert_eq!(
            p.next_fetch_delay(Duration::from_millis(100), None),
            secs(3.0)
        );
        assert_eq!(p.next_fetch_delay(Duration::from_secs(2), None), secs(10.0));
        assert_eq!(
            p.next_fetch_delay(Duration::from_secs(60), None),
            secs(30.0)
        );
        let zero = PolitenessConfig {
            delay_factor: 0.0,
            min_delay: 0.0,
            max_delay: 0.0,
            ..PolitenessConfig::default()
        };
        assert_eq!(
            zero.next_fetch_delay(Duration::from_secs(5), None),
            Duration::ZERO
        );
    }

    #[test]
    fn crawl_delay_is_a_floor_and_bounded() {
        let p = PolitenessConfig::default();
        let d = p.next_fetch_delay(Duration::from_millis(10), Some(secs(7.0)));
        assert_eq!(d, secs(7.0));
        let d = p.next_fetch_delay(Duration::from_millis(10), Some(secs(100_000.0)));
        assert_eq!(d, secs(300.0));
        let ignore = PolitenessConfig {
            respect_crawl_delay: false,
            ..PolitenessConfig::default()
        };
        let d = ignore.next_fetch_delay(Duration::from_millis(10), Some(secs(7.0)));
        assert_eq!(d, secs(3.0));
    }

    const NONE: [(&str, &[u8]); 0] = [];

    #[test]
    fn retry_after_seconds_date_and_backoff() {
        let p = PolitenessConfig::default();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let h: [(&str, &[u8]); 1] = [("Retry-After", b"42")];
        assert_eq!(p.retry_after(429, h, 1, now), Some(secs(42.0)));
        let date = httpdate::fmt_http_date(now + Duration::from_secs(120));
        let h: [(&str, &[u8]); 1] = [("retry-after", date.as_bytes())];
        assert_eq!(p.retry_after(503, h, 1, now), Some(secs(120.0)));
        // No header: retry-delay doubled each attempt.
        assert_eq!(p.retry_after(503, NONE, 1, now), Some(secs(10.0)));
        assert_eq!(p.retry_after(503, NONE, 3, now), Some(secs(40.0)));
        assert_eq!(p.retry_after(0, NONE, 2, now), Some(secs(20.0)));
        // Bounded, and out of retries.
        let h: [(&str, &[u8]); 1] = [("Retry-After", b"99999999999999999999999")];
        assert_eq!(p.retry_after(429, h, 1, now), Some(secs(3600.0)));
        assert_eq!(p.retry_after(429, NONE, 6, now), None);
        // Not retryable.
        assert_eq!(p.retry_after(404, NONE, 1, now), None);
        // A 500's Retry-After is not used (RFC 9110 gives it to 503 and 3xx).
        let h: [(&str, &[u8]); 1] = [("Retry-After", b"1")];
        assert_eq!(p.retry_after(500, h, 1, now), Some(secs(10.0)));
    }

    #[test]
    fn retry_after_values() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after(b" 5 ", now), Some(secs(5.0)));
        assert_eq!(parse_retry_after(b"soon", now), None);
        assert_eq!(parse_retry_after(b"-1", now), None);
        let past = httpdate::fmt_http_date(now - Duration::from_secs(10));
        assert_eq!(
            parse_retry_after(past.as_bytes(), now),
            Some(Duration::ZERO)
        );
    }
}
