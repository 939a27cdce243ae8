//! Byte sizes as users write them: `500MB`, `1GiB`, `1.5GB`, `8388608`.
//!
//! One reading for every place a size is given, the command's flags
//! (`--max-size`, `--dict-size`...) and the environment variables
//! (`WARCHEST_REMOTE_BLOCK`...) alike, so that `8M` means one size
//! everywhere: `K`/`KB`, `M`/`MB`, `G`/`GB` and `T`/`TB` are powers of
//! 1000 (as in SI, and as wget's and Heritrix's sizes read), `KiB`,
//! `MiB`, `GiB` and `TiB` powers of 1024, `B` or no unit bytes. Case is
//! ignored, a space may stand between the number and its unit, and the
//! number may have a fraction when it has a unit above bytes (`1.5GiB`;
//! the result is rounded down to a whole byte; `1.5` or `1.5B` is an
//! error, not a rounded byte count).

use std::fmt;

/// A size that could not be read: what was given and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseSizeError(String);

impl fmt::Display for ParseSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseSizeError {}

/// Parses a size in bytes (see the module's docs for the units).
///
/// ```
/// use warchest::size::parse_size;
/// assert_eq!(parse_size("500MB"), Ok(500_000_000));
/// assert_eq!(parse_size("1GiB"), Ok(1 << 30));
/// assert_eq!(parse_size("8 k"), Ok(8_000));
/// assert!(parse_size("8 megabytes").is_err());
/// ```
///
/// # Errors
/// No number, an unknown unit, a negative number or a size past
/// `u64::MAX`. Zero is a size: callers that need more say so.
pub fn parse_size(s: &str) -> Result<u64, ParseSizeError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(ParseSizeError(format!("{s:?}: a size cannot be negative")));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let mult: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(ParseSizeError(format!(
                "unknown unit {unit:?} in {s:?}: use B, KB, MB, GB, TB (K, M, G, T: powers of 1000), KiB, MiB, GiB or TiB (powers of 1024)"
            )));
        }
    };
    if num.is_empty() || num.matches('.').count() > 1 || num.starts_with('.') || num.ends_with('.')
    {
        return Err(ParseSizeError(format!(
            "{s:?} is not a size such as 1GB, 500MB or 1GiB"
        )));
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if mult == 1 && num.contains('.') {
        return Err(ParseSizeError(format!(
            "{s:?}: a byte count is whole (a fraction needs a unit such as KB or MiB)"
        )));
    }
    let int: u64 = int
        .parse()
        .map_err(|_| ParseSizeError(format!("{s:?}: number too large")))?;
    let mut v = int
        .checked_mul(mult)
        .ok_or_else(|| ParseSizeError(format!("{s:?}: size too large")))?;
    if !frac.is_empty() {
        // Exact decimal arithmetic: frac digits / 10^len * mult.
        let digits = frac.len().min(18);
        let f: u64 = frac[..digits]
            .parse()
            .map_err(|_| ParseSizeError(format!("{s:?} is not a size")))?;
        let add = u128::from(f) * u128::from(mult) / 10u128.pow(digits as u32);
        v = v
            .checked_add(u64::try_from(add).unwrap_or(u64::MAX))
            .ok_or_else(|| ParseSizeError(format!("{s:?}: size too large")))?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_powers_of_1000_and_of_1024() {
        let ok: &[(&str, u64)] = &[
            ("0", 0),
            ("1", 1),
            ("8388608", 8 << 20),
            ("123B", 123),
            ("1GB", 1_000_000_000),
            ("500MB", 500_000_000),
            ("500mb", 500_000_000),
            (" 8M ", 8_000_000),
            ("10k", 10_000),
            ("2T", 2_000_000_000_000),
            ("0.5KB", 500),
            ("1GiB", 1 << 30),
            ("8MiB", 8 << 20),
            ("512kib", 512 << 10),
            ("1.5GiB", 3 << 29),
            ("2 KiB", 2048),
            ("1TiB", 1 << 40),
            // Rounded down to a byte.
            ("1.0001KiB", 1024),
        ];
        for (s, v) in ok {
            assert_eq!(parse_size(s), Ok(*v), "{s}");
        }
        for bad in [
            "",
            "GB",
            "M",
            "1XB",
            "8 megabytes",
            "1..2GB",
            "-1GB",
            "-1",
            ".5GB",
            "99999999999999999999",
            "99999999999999999999GB",
            "99999999999G",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        let e = parse_size("8XB").unwrap_err().to_string();
        assert!(e.contains("\"xb\"") && e.contains("KiB"), "{e}");
    }

    #[test]
    fn a_trailing_point_is_an_error() {
        for bad in ["1.", "1.GB", "2. MiB"] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.contains("is not a size"), "{bad}: {e}");
        }
    }

    #[test]
    fn bytes_have_no_fraction() {
        for bad in ["1.5", "0.9", "1.5B", "2.0 b"] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.contains("whole"), "{bad}: {e}");
        }
        assert_eq!(parse_size("1.5KB"), Ok(1_500));
    }

    #[test]
    fn a_leading_minus_is_negative() {
        for bad in ["-1", "-1GB", " -0.5KiB"] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.contains("negative") && !e.contains("unit"), "{bad}: {e}");
        }
    }
}
