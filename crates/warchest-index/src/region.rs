//! A set of captures told by their SURT key and capture time, as an
//! expression: what access rules let a viewer see
//! (`warchest_replay::access`), handed to an index that selects by it (the
//! full-text search, `warchest_search`), which turns it into its own query.
//!
//! ```
//! use warchest_index::region::Region;
//! let r = Region::and([
//!     Region::KeyPrefix("com,example)/".into()),
//!     Region::not(Region::KeyPrefix("com,example)/private".into())),
//! ]);
//! assert!(r.contains("com,example)/a", 0));
//! assert!(!r.contains("com,example)/private/a", 0));
//! ```

/// A set of captures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Region {
    /// Every capture.
    All,
    /// None.
    Nothing,
    /// Those whose SURT key starts with this.
    KeyPrefix(String),
    /// Those whose SURT key is this.
    KeyIs(String),
    /// Those captured after `after` and before `before` (seconds since
    /// 1970, both excluded; `None`: no bound).
    Time {
        /// The capture is later than this.
        after: Option<i64>,
        /// The capture is earlier than this.
        before: Option<i64>,
    },
    /// In all of these.
    And(Vec<Region>),
    /// In any of these.
    Or(Vec<Region>),
    /// Not in this.
    Not(Box<Region>),
}

impl Region {
    /// The intersection, simplified (`All` dropped, `Nothing` wins).
    pub fn and(parts: impl IntoIterator<Item = Region>) -> Region {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Region::All => {}
                Region::Nothing => return Region::Nothing,
                Region::And(v) => out.extend(v),
                p => out.push(p),
            }
        }
        match out.len() {
            0 => Region::All,
            1 => out.pop().unwrap_or(Region::All),
            _ => Region::And(out),
        }
    }

    /// The union, simplified (`Nothing` dropped, `All` wins).
    pub fn or(parts: impl IntoIterator<Item = Region>) -> Region {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Region::Nothing => {}
                Region::All => return Region::All,
                Region::Or(v) => out.extend(v),
                p => out.push(p),
            }
        }
        match out.len() {
            0 => Region::Nothing,
            1 => out.pop().unwrap_or(Region::Nothing),
            _ => Region::Or(out),
        }
    }

    /// The complement, simplified.
    #[allow(clippy::should_implement_trait)]
    pub fn not(r: Region) -> Region {
        match r {
            Region::All => Region::Nothing,
            Region::Nothing => Region::All,
            Region::Not(inner) => *inner,
            r => Region::Not(Box::new(r)),
        }
    }

    /// Whether the capture of `key` at `at` (seconds since 1970) is in it.
    pub fn contains(&self, key: &str, at: i64) -> bool {
        match self {
            Region::All => true,
            Region::Nothing => false,
            Region::KeyPrefix(p) => key.starts_with(p.as_str()),
            Region::KeyIs(k) => key == k,
            Region::Time { after, before } => {
                after.is_none_or(|a| at > a) && before.is_none_or(|b| at < b)
            }
            Region::And(v) => v.iter().all(|r| r.contains(key, at)),
            Region::Or(v) => v.iter().any(|r| r.contains(key, at)),
            Region::Not(r) => !r.contains(key, at),
        }
    }

    /// How many nodes it has (what turning it into a query costs).
    pub fn size(&self) -> usize {
        match self {
            Region::And(v) | Region::Or(v) => 1 + v.iter().map(Region::size).sum::<usize>(),
            Region::Not(r) => 1 + r.size(),
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Region;

    #[test]
    fn simplified_as_built() {
        let p = || Region::KeyPrefix("a".into());
        assert_eq!(Region::and([Region::All, p()]), p());
        assert_eq!(Region::and([Region::Nothing, p()]), Region::Nothing);
        assert_eq!(Region::or([Region::Nothing, p()]), p());
        assert_eq!(Region::or([Region::All, p()]), Region::All);
        assert_eq!(Region::not(Region::not(p())), p());
        assert_eq!(Region::and([]), Region::All);
        assert_eq!(Region::or([]), Region::Nothing);
        let t = Region::Time {
            after: Some(10),
            before: Some(20),
        };
        assert!(t.contains("x", 11) && !t.contains("x", 10) && !t.contains("x", 20));
        assert_eq!(
            Region::and([t.clone(), Region::and([p(), t.clone()])]).size(),
            4
        );
    }
}
