//! Access control: which captures a collection shows, to whom. pywb's
//! rules, read from its access control files (`.aclj`), and its embargo:
//!
//! - a rule is a SURT prefix (`com,example)/private`), or an exact key
//!   (`com,example)/private###`, that URL alone), or `*,` (every URL), and
//!   an access: `allow`, `block` (listed in the index, its content refused
//!   with 451), `exclude` (as if never archived: in no index, 404) or
//!   `allow_ignore_embargo`;
//! - a rule may be for one `user` only (named by a header a front end sets)
//!   and may hold only for captures `before` or `after` a time, or `newer`
//!   or `older` than a period;
//! - the longest key that is a prefix of the capture's decides (an exact
//!   key first); at one key, the viewer's own rules come before everyone's
//!   and dated rules before undated ones, and the first whose conditions
//!   hold decides; when none holds there, the next shorter key is looked at;
//! - the embargo (by capture time) turns what would be shown into its own
//!   access (`exclude` unless said), except under `allow_ignore_embargo`.
//!
//! docs/serve.md ("Access control") says where this differs from pywb.
//!
//! ```
//! use warchest_replay::access::{AccessRules, Verdict};
//! let rules = AccessRules::parse(
//!     "com,example)/private - {\"access\": \"exclude\"}\n\
//!      com,example)/private/open - {\"access\": \"allow\"}\n",
//!     "rules.aclj",
//! )
//! .unwrap();
//! let who = rules.viewer(None);
//! assert_eq!(who.verdict("com,example)/private/a", "20200101000000"), Verdict::Exclude);
//! assert_eq!(who.verdict("com,example)/private/open/a", "20200101000000"), Verdict::Allow);
//! assert_eq!(who.verdict("com,example)/", "20200101000000"), Verdict::Allow);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use serde_json::Value;
use warchest::error::{Error, ErrorKind, Result};
use warchest::http::date::{pad_timestamp, timestamp_seconds};
use warchest::warc::{DatePrecision, WarcDate};
use warchest_index::region::Region;

/// The largest access control file read (they are lists of prefixes: a
/// larger one is a mistake, not a rule set).
pub const MAX_FILE: u64 = 256 << 20;

/// The most rules all files together hold.
const MAX_RULES: usize = 4_000_000;

/// The largest [`Region`] [`Viewer::allowed`] gives (nodes): past it the
/// rules are too many to be a query.
const MAX_REGION: usize = 200_000;

/// The suffix of an exact key in a rule file (pywb's).
const EXACT: &str = "###";

/// The key of a rule for every URL (pywb's).
const ANY: &str = "*,";

/// What a rule allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Shown and served (unless the embargo holds).
    Allow,
    /// Listed, its content refused (451).
    Block,
    /// As if never archived (404, in no index).
    Exclude,
    /// Shown and served, whatever the embargo.
    AllowIgnoreEmbargo,
}

impl Access {
    /// pywb's name of it.
    pub fn name(self) -> &'static str {
        match self {
            Access::Allow => "allow",
            Access::Block => "block",
            Access::Exclude => "exclude",
            Access::AllowIgnoreEmbargo => "allow_ignore_embargo",
        }
    }

    /// Parses pywb's names (`allow`, `block`, `exclude`,
    /// `allow_ignore_embargo`).
    pub fn parse(s: &str) -> Option<Access> {
        Some(match s {
            "allow" => Access::Allow,
            "block" => Access::Block,
            "exclude" => Access::Exclude,
            "allow_ignore_embargo" => Access::AllowIgnoreEmbargo,
            _ => return None,
        })
    }
}

/// What a viewer gets of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Shown and served.
    Allow,
    /// Listed; its content refused (451).
    Block,
    /// Not there at all (404, in no index).
    Exclude,
}

/// A span of the calendar back from now: pywb's `years`, `months`,
/// `weeks`, `days`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Period {
    /// Years.
    pub years: u32,
    /// Months.
    pub months: u32,
    /// Weeks.
    pub weeks: u32,
    /// Days.
    pub days: u32,
}

impl Period {
    /// Parses `1y2m3w4d` (any of the four, in that order, at least one).
    pub fn parse(s: &str) -> Option<Period> {
        let mut p = Period::default();
        let mut n: Option<u32> = None;
        let mut last = 0u8;
        for b in s.trim().bytes() {
            if b.is_ascii_digit() {
                n = Some(
                    n.unwrap_or(0)
                        .checked_mul(10)?
                        .checked_add(u32::from(b - b'0'))?,
                );
                continue;
            }
            let order = match b {
                b'y' => 1,
                b'm' => 2,
                b'w' => 3,
                b'd' => 4,
                _ => return None,
            };
            if order <= last {
                return None;
            }
            last = order;
            let v = n.take()?;
            match b {
                b'y' => p.years = v,
                b'm' => p.months = v,
                b'w' => p.weeks = v,
                _ => p.days = v,
            }
        }
        (n.is_none() && last > 0).then_some(p)
    }

    /// pywb's JSON form: `{"years": 1, "months": 2, "weeks": 3, "days": 4}`,
    /// at least one of them.
    fn from_json(v: &Value) -> Option<Period> {
        let o = v.as_object()?;
        if o.is_empty()
            || o.keys()
                .any(|k| !["years", "months", "weeks", "days"].contains(&k.as_str()))
        {
            return None;
        }
        let get = |k: &str| -> Option<u32> {
            match o.get(k) {
                None => Some(0),
                Some(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            }
        };
        Some(Period {
            years: get("years")?,
            months: get("months")?,
            weeks: get("weeks")?,
            days: get("days")?,
        })
    }

    /// The second (since 1970) this period before `now` (a 14-digit
    /// timestamp): years and months on the calendar (31 March less a
    /// month is the last of February), then weeks and days.
    fn before(&self, now: &str) -> i64 {
        let n = |a: usize, b: usize| {
            now.get(a..b)
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(0)
        };
        let months =
            n(0, 4) * 12 + (n(4, 6) - 1) - i64::from(self.years) * 12 - i64::from(self.months);
        let (y, m) = (months.div_euclid(12).max(0), months.rem_euclid(12) + 1);
        let ts = format!("{y:04}{m:02}{}", now.get(6..).unwrap_or(""));
        timestamp_seconds(&ts) - (i64::from(self.weeks) * 7 + i64::from(self.days)) * 86_400
    }
}

/// A condition on a capture's time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// Captured before this second (since 1970).
    Before(i64),
    /// Captured after this second.
    After(i64),
    /// Captured less than this period ago.
    Newer(Period),
    /// Captured more than this period ago.
    Older(Period),
}

impl When {
    /// A timestamp (`2010`, `20101201`, ...) as its earliest second.
    pub fn at(ts: &str) -> Option<i64> {
        let digits = ts.bytes().filter(u8::is_ascii_digit).count();
        (digits >= 4 && ts.bytes().all(|b| b.is_ascii_digit()))
            .then(|| timestamp_seconds(&pad_timestamp(ts)))
    }

    /// The captures it holds for, as of `now`.
    fn region(&self, now: &str) -> Region {
        let (after, before) = match self {
            When::Before(t) => (None, Some(*t)),
            When::After(t) => (Some(*t), None),
            When::Newer(p) => (Some(p.before(now)), None),
            When::Older(p) => (None, Some(p.before(now))),
        };
        Region::Time { after, before }
    }

    fn holds(&self, at: i64, now: &str) -> bool {
        match self {
            When::Before(t) => at < *t,
            When::After(t) => at > *t,
            When::Newer(p) => at > p.before(now),
            When::Older(p) => at < p.before(now),
        }
    }
}

/// The embargo: captures whose time meets any of its conditions get its
/// access instead of what the rules allow (unless a rule says
/// `allow_ignore_embargo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embargo {
    /// The conditions, any of which embargoes a capture.
    pub when: Vec<When>,
    /// What an embargoed capture gets: [`Verdict::Exclude`] (pywb's
    /// default) or [`Verdict::Block`].
    pub verdict: Verdict,
}

#[derive(Debug, Clone)]
struct Rule {
    access: Access,
    user: Option<String>,
    when: Vec<When>,
}

impl Rule {
    /// The order rules of one key are tried in: the viewer's own first,
    /// then everyone's; in each, dated rules before undated.
    fn rank(&self) -> (bool, bool) {
        (self.user.is_none(), self.when.is_empty())
    }
}

/// One line of a rule file: `KEY - JSON`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleLine {
    /// The SURT prefix; `###` at its end for that key alone, `*,` for
    /// every URL.
    pub key: String,
    /// What the rule allows.
    pub access: Access,
    /// The one user it is for, if any.
    pub user: Option<String>,
    /// The capture times it holds for (all of them).
    pub when: Vec<When>,
}

impl RuleLine {
    /// Reads one line: `None` for a blank line or a comment (`#`), else the
    /// rule, or why the line is none.
    ///
    /// # Errors
    /// Why the line is not a rule.
    pub fn parse(line: &str) -> std::result::Result<Option<RuleLine>, String> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let none = || "no rule after the key".to_string();
        let (key, rest) = line.split_once(' ').ok_or_else(none)?;
        let (_, json) = rest.trim_start().split_once(' ').ok_or_else(none)?;
        if key.contains("://") {
            return Err("the key is a URL, not a SURT prefix (com,example)/path)".into());
        }
        let v: Value =
            serde_json::from_str(json.trim()).map_err(|e| format!("the rule is not JSON ({e})"))?;
        let access = v["access"].as_str().ok_or("no \"access\"")?;
        let access = Access::parse(access)
            .ok_or("access is allow, block, exclude or allow_ignore_embargo")?;
        let user = match &v["user"] {
            Value::Null => None,
            Value::String(u) => Some(u.clone()),
            _ => return Err("\"user\" is a string".into()),
        };
        let mut when = Vec::new();
        for (k, make) in [
            ("before", When::Before as fn(i64) -> When),
            ("after", When::After),
        ] {
            match &v[k] {
                Value::Null => {}
                t => {
                    let t = t
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| t.as_u64().map(|n| n.to_string()));
                    let s = t
                        .as_deref()
                        .and_then(When::at)
                        .ok_or_else(|| format!("\"{k}\" is a timestamp (2010, 20101201...)"))?;
                    when.push(make(s));
                }
            }
        }
        for (k, make) in [
            ("newer", When::Newer as fn(Period) -> When),
            ("older", When::Older),
        ] {
            match &v[k] {
                Value::Null => {}
                p => {
                    let p = Period::from_json(p).ok_or_else(|| {
                        format!(
                            "\"{k}\" is {{\"years\", \"months\", \"weeks\", \"days\"}}, at least one"
                        )
                    })?;
                    when.push(make(p));
                }
            }
        }
        Ok(Some(RuleLine {
            key: key.to_string(),
            access,
            user,
            when,
        }))
    }

    /// A rule's line as pywb writes it: `KEY - {"access": ..., "url": ...,
    /// "user": ...}` (`url`, the URL the key was made of, and `user` when
    /// given).
    pub fn format(key: &str, access: Access, url: Option<&str>, user: Option<&str>) -> String {
        // Spaced as Python's json.dumps writes it, as in pywb's files.
        let mut fields = vec![("access", access.name())];
        fields.extend(url.map(|u| ("url", u)));
        fields.extend(user.map(|u| ("user", u)));
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("\"{k}\": {}", Value::from(*v)))
            .collect();
        format!("{key} - {{{}}}", body.join(", "))
    }
}

/// The key of a rule for `target`: a SURT prefix as given (it holds `)` or
/// ends in `,`, or is `*,`), else the SURT key of a URL (`http://` added
/// when it has no scheme); `exact` adds `###`.
pub fn rule_key(target: &str, exact: bool) -> String {
    let t = target.trim();
    let surt = !t.contains("://") && (t.contains(')') || t.ends_with(','));
    let key = if surt {
        t.to_string()
    } else if t.contains("://") {
        warchest_index::surt::url_key(t)
    } else {
        warchest_index::surt::url_key(&format!("http://{t}"))
    };
    if exact && key != ANY {
        format!("{key}{EXACT}")
    } else {
        key
    }
}

/// A collection's access rules, its default access and its embargo.
#[derive(Debug, Clone)]
pub struct AccessRules {
    prefix: BTreeMap<Vec<u8>, Vec<Rule>>,
    exact: HashMap<String, Vec<Rule>>,
    any: Vec<Rule>,
    default: Access,
    embargo: Option<Embargo>,
    rules: usize,
    users: bool,
}

impl Default for AccessRules {
    fn default() -> AccessRules {
        AccessRules::allow_all()
    }
}

fn bad(msg: String) -> Error {
    Error::new(ErrorKind::Usage(msg))
}

impl AccessRules {
    /// No rules, no embargo: everything shown.
    pub fn allow_all() -> AccessRules {
        AccessRules {
            prefix: BTreeMap::new(),
            exact: HashMap::new(),
            any: Vec::new(),
            default: Access::Allow,
            embargo: None,
            rules: 0,
            users: false,
        }
    }

    /// The rules of `text`, one per line as pywb writes them (`KEY - JSON`,
    /// in any order); `name` names it in errors. Blank lines and lines
    /// starting with `#` are passed over.
    ///
    /// # Errors
    /// A line that is not a rule, named by `name` and its number.
    pub fn parse(text: &str, name: &str) -> Result<AccessRules> {
        let mut r = AccessRules::allow_all();
        r.add(text, name)?;
        Ok(r.ranked())
    }

    /// The rules of the files at `paths` (a directory: its `.aclj` files).
    ///
    /// # Errors
    /// A path that cannot be read, or a line that is not a rule.
    pub fn load(paths: &[PathBuf]) -> Result<AccessRules> {
        let mut r = AccessRules::allow_all();
        for f in Self::files(paths)? {
            r.add_file(&f)?;
        }
        Ok(r.ranked())
    }

    /// The rule files `paths` names, in order: a file as given, a
    /// directory's `.aclj` files by name.
    ///
    /// # Errors
    /// A directory that cannot be listed or holds no `.aclj` file.
    fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for p in paths {
            if !p.is_dir() {
                out.push(p.clone());
                continue;
            }
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| bad(format!("{}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "aclj") && f.is_file())
                .collect();
            if files.is_empty() {
                return Err(bad(format!(
                    "{}: no .aclj file in this directory",
                    p.display()
                )));
            }
            files.sort();
            out.extend(files);
        }
        Ok(out)
    }

    /// The rules of the files at `paths` read again, with this default
    /// access and embargo (a server's rules after a file changed).
    ///
    /// # Errors
    /// As [`AccessRules::load`].
    pub fn reloaded(&self, paths: &[PathBuf]) -> Result<AccessRules> {
        Ok(AccessRules::load(paths)?
            .with_default(self.default)
            .with_embargo(self.embargo.clone()))
    }

    /// The rule files `paths` names (a directory's `.aclj` files), each
    /// with its length and time of change: what changes when a rule file
    /// is edited, added or removed. What cannot be listed or read is left
    /// out (reading the rules again then says why).
    pub fn stamp(paths: &[PathBuf]) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
        Self::files(paths)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|f| {
                let m = std::fs::metadata(&f).ok()?;
                Some((f, m.len(), m.modified().ok()))
            })
            .collect()
    }

    fn add_file(&mut self, path: &Path) -> Result<()> {
        let name = path.display().to_string();
        let len = std::fs::metadata(path)
            .map_err(|e| bad(format!("{name}: {e}")))?
            .len();
        if len > MAX_FILE {
            return Err(bad(format!(
                "{name}: {len} bytes, more than an access control file may hold ({MAX_FILE})"
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| bad(format!("{name}: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            bad(format!(
                "{name}: not UTF-8 (byte {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        self.add(&text, &name)
    }

    fn add(&mut self, text: &str, name: &str) -> Result<()> {
        for (i, line) in text.lines().enumerate() {
            let at = |why: &str| bad(format!("{name}:{}: {why}: {}", i + 1, line.trim()));
            let Some(RuleLine {
                key,
                access,
                user,
                when,
            }) = RuleLine::parse(line).map_err(|why| at(&why))?
            else {
                continue;
            };
            if self.rules == MAX_RULES {
                return Err(at(&format!("more than {MAX_RULES} rules")));
            }
            self.rules += 1;
            self.users |= user.is_some();
            let list = if key == ANY {
                &mut self.any
            } else if let Some(k) = key.strip_suffix(EXACT) {
                self.exact.entry(k.to_string()).or_default()
            } else {
                self.prefix.entry(key.into_bytes()).or_default()
            };
            list.push(Rule { access, user, when });
        }
        Ok(())
    }

    /// Each key's rules in the order they are tried ([`Rule::rank`]),
    /// sorted once all are read; stable, so the files' order stays within
    /// a rank.
    fn ranked(mut self) -> AccessRules {
        let lists = self
            .prefix
            .values_mut()
            .chain(self.exact.values_mut())
            .chain([&mut self.any]);
        for list in lists {
            list.sort_by_key(Rule::rank);
        }
        self
    }

    /// The access of a capture no rule matches (pywb's `default_access`;
    /// allow unless set).
    pub fn with_default(mut self, access: Access) -> AccessRules {
        self.default = access;
        self
    }

    /// The embargo.
    pub fn with_embargo(mut self, embargo: Option<Embargo>) -> AccessRules {
        self.embargo = embargo.filter(|e| !e.when.is_empty());
        self
    }

    /// How many rules were read.
    pub fn len(&self) -> usize {
        self.rules
    }

    /// True when no rule was read.
    pub fn is_empty(&self) -> bool {
        self.rules == 0
    }

    /// True when some rule is for one user only.
    pub fn has_user_rules(&self) -> bool {
        self.users
    }

    /// True when everything is shown to everyone: no rule, the default
    /// allow, no embargo.
    pub fn is_open(&self) -> bool {
        self.rules == 0 && self.default == Access::Allow && self.embargo.is_none()
    }

    /// What `user` (none: the public) is shown, as of now.
    pub fn viewer<'a>(&'a self, user: Option<&'a str>) -> Viewer<'a> {
        let now = if self.is_open() {
            String::new()
        } else {
            WarcDate::now(DatePrecision::Second).timestamp14()
        };
        let embargo = self
            .embargo
            .as_ref()
            .map(|e| (Region::or(e.when.iter().map(|w| w.region(&now))), e.verdict));
        Viewer {
            rules: self,
            user,
            now,
            embargo,
        }
    }

    /// The first rule of `list` that holds for `user` at `at`.
    fn pick<'r>(list: &'r [Rule], user: Option<&str>, at: i64, now: &str) -> Option<&'r Rule> {
        list.iter()
            .filter(|r| r.user.is_none() || r.user.as_deref() == user)
            .find(|r| r.when.iter().all(|w| w.holds(at, now)))
    }

    /// The rule for `key` (a SURT key), and where it was found: an exact
    /// key, then the longest prefix whose rules hold, then `*,`.
    fn find<'r>(
        &'r self,
        key: &str,
        user: Option<&str>,
        at: i64,
        now: &str,
    ) -> Option<(&'r Rule, Under<'r>)> {
        if let Some(r) = self
            .exact
            .get(key)
            .and_then(|l| Self::pick(l, user, at, now))
        {
            return Some((r, Under::Exact));
        }
        for (k, list) in self.prefixes(key.as_bytes()) {
            if let Some(r) = Self::pick(list, user, at, now) {
                return Some((r, Under::Prefix(k)));
            }
        }
        Self::pick(&self.any, user, at, now).map(|r| (r, Under::Any))
    }

    /// The prefix keys with rules that are prefixes of `key` (itself
    /// included), longest first.
    fn prefixes<'m, 'k>(&'m self, key: &'k [u8]) -> Prefixes<'m, 'k> {
        Prefixes {
            map: &self.prefix,
            key,
            bound: Some(key),
        }
    }
}

/// Where [`AccessRules::find`] found the rule: named only when
/// [`Viewer::explain`] says so, not on every verdict.
enum Under<'r> {
    /// The capture's own key, `###`.
    Exact,
    /// This prefix key.
    Prefix(&'r [u8]),
    /// `*,`.
    Any,
}

/// [`AccessRules::prefixes`]: a walk down the sorted keys, each turn
/// shortening the bound, so at most the key's length of turns.
struct Prefixes<'m, 'k> {
    map: &'m BTreeMap<Vec<u8>, Vec<Rule>>,
    key: &'k [u8],
    bound: Option<&'k [u8]>,
}

impl<'m> Iterator for Prefixes<'m, '_> {
    type Item = (&'m [u8], &'m [Rule]);

    fn next(&mut self) -> Option<Self::Item> {
        let key = self.key;
        while let Some((k, list)) = self
            .map
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(self.bound?)))
            .next_back()
        {
            if key.starts_with(k) {
                // Only a shorter prefix is left after it.
                self.bound = k.len().checked_sub(1).map(|n| &key[..n]);
                return Some((k.as_slice(), list.as_slice()));
            }
            // The prefixes of `key` below `k` are at most as long as what
            // the two share.
            let shared = k.iter().zip(key).take_while(|(a, b)| a == b).count();
            self.bound = Some(&key[..shared]);
        }
        self.bound = None;
        None
    }
}

/// Why a viewer gets what it gets of a capture ([`Viewer::explain`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    /// What the viewer gets.
    pub verdict: Verdict,
    /// The rule that decided: its key, its access and its user (`None`:
    /// no rule held, the default access decided).
    pub rule: Option<(String, Access, Option<String>)>,
    /// The default access, when no rule held.
    pub default: Access,
    /// True when the embargo changed what the rule allowed.
    pub embargoed: bool,
}

/// The rules as one viewer (a user, or the public) sees them, at one time.
#[derive(Debug)]
pub struct Viewer<'a> {
    rules: &'a AccessRules,
    user: Option<&'a str>,
    now: String,
    /// The embargo's conditions as of `now` (its periods counted back
    /// once, not at each capture), and what it gives.
    embargo: Option<(Region, Verdict)>,
}

impl Viewer<'_> {
    /// What this viewer gets of the capture of `urlkey` (its SURT key) at
    /// `timestamp` (14 digits).
    pub fn verdict(&self, urlkey: &str, timestamp: &str) -> Verdict {
        if self.rules.is_open() {
            return Verdict::Allow;
        }
        self.decide(urlkey, timestamp).0
    }

    /// The verdict, the rule that decided and where, and whether the
    /// embargo did.
    fn decide(&self, urlkey: &str, timestamp: &str) -> (Verdict, Option<(&Rule, Under<'_>)>, bool) {
        let r = self.rules;
        let at = timestamp_seconds(&pad_timestamp(timestamp));
        let found = r.find(urlkey, self.user, at, &self.now);
        let access = found.as_ref().map_or(r.default, |(rule, _)| rule.access);
        let embargo = self
            .embargo
            .as_ref()
            .filter(|(when, _)| when.contains(urlkey, at))
            .map(|(_, v)| *v);
        let (verdict, embargoed) = match (access, embargo) {
            (Access::Exclude, _) => (Verdict::Exclude, false),
            (Access::AllowIgnoreEmbargo, _) | (Access::Allow, None) => (Verdict::Allow, false),
            (Access::Allow, Some(v)) => (v, true),
            (Access::Block, Some(Verdict::Exclude)) => (Verdict::Exclude, true),
            (Access::Block, _) => (Verdict::Block, false),
        };
        (verdict, found, embargoed)
    }

    /// [`Viewer::verdict`], with the rule that decided and whether the
    /// embargo did (`warchest acl match` prints it).
    pub fn explain(&self, urlkey: &str, timestamp: &str) -> Explained {
        let (verdict, found, embargoed) = self.decide(urlkey, timestamp);
        Explained {
            verdict,
            rule: found.map(|(rule, under)| {
                let key = match under {
                    Under::Exact => format!("{urlkey}{EXACT}"),
                    Under::Prefix(k) => String::from_utf8_lossy(k).into_owned(),
                    Under::Any => ANY.to_string(),
                };
                (key, rule.access, rule.user.clone())
            }),
            default: self.rules.default,
            embargoed,
        }
    }

    /// The captures this viewer is shown whole ([`Verdict::Allow`]), as a
    /// [`Region`] of SURT keys and times for an index to select by (the
    /// full-text search); `None` when the rules make a region of more than
    /// 200,000 nodes.
    pub fn allowed(&self) -> Option<Region> {
        let r = self.rules;
        if r.is_open() {
            return Some(Region::All);
        }
        // Each key makes a node at least: past the bound, no need to build.
        if r.prefix.len() + r.exact.len() > MAX_REGION {
            return None;
        }
        let user = self.user;
        let now = self.now.as_str();
        let applicable = |list: &'_ [Rule]| -> bool {
            list.iter()
                .any(|x| x.user.is_none() || x.user.as_deref() == user)
        };
        // The prefix keys with a rule for this viewer, longest first, that
        // are prefixes of `key` (itself included).
        let ancestors = |key: &[u8]| -> Vec<&'_ [u8]> {
            r.prefixes(key)
                .filter(|(_, list)| applicable(list))
                .map(|(k, _)| k)
                .collect()
        };
        let embargo = self.embargo.as_ref().map(|(when, _)| when.clone());
        let allow_of = |a: Access| match a {
            Access::AllowIgnoreEmbargo => Region::All,
            Access::Allow => embargo.clone().map_or(Region::All, Region::not),
            Access::Block | Access::Exclude => Region::Nothing,
        };
        // Where a chain of rules (tried in order, then the default) allows.
        let chain_allows = |lists: &[&[Rule]]| -> Region {
            let mut out = Vec::new();
            let mut none_before: Vec<Region> = Vec::new();
            for rule in lists
                .iter()
                .flat_map(|l| l.iter())
                .filter(|x| x.user.is_none() || x.user.as_deref() == user)
            {
                let holds = Region::and(rule.when.iter().map(|w| w.region(now)));
                let unreachable_after = holds == Region::All;
                out.push(Region::and(
                    none_before
                        .iter()
                        .cloned()
                        .chain([holds.clone(), allow_of(rule.access)]),
                ));
                if unreachable_after {
                    return Region::or(out);
                }
                none_before.push(Region::not(holds));
            }
            out.push(Region::and(
                none_before.into_iter().chain([allow_of(r.default)]),
            ));
            Region::or(out)
        };
        let chain_of = |keys: &[&[u8]]| -> Vec<&[Rule]> {
            keys.iter()
                .filter_map(|k| r.prefix.get(*k).map(Vec::as_slice))
                .chain([r.any.as_slice()])
                .collect()
        };
        // Each prefix key's own region: under it, not under a longer key
        // with a rule (its children).
        let live: Vec<&[u8]> = r
            .prefix
            .iter()
            .filter(|(_, l)| applicable(l))
            .map(|(k, _)| k.as_slice())
            .collect();
        let mut children: HashMap<&[u8], Vec<&[u8]>> = HashMap::new();
        let mut top: Vec<&[u8]> = Vec::new();
        let mut size = 0usize;
        for k in &live {
            match ancestors(&k[..k.len().saturating_sub(1)]).first() {
                Some(p) if !k.is_empty() => children.entry(p).or_default().push(k),
                _ => top.push(k),
            }
        }
        let prefix_region = |k: &[u8]| Region::KeyPrefix(String::from_utf8_lossy(k).into_owned());
        let mut parts = Vec::new();
        for k in &live {
            let under = children
                .get(k)
                .map(|c| Region::or(c.iter().map(|c| prefix_region(c))))
                .unwrap_or(Region::Nothing);
            let own = Region::and([prefix_region(k), Region::not(under)]);
            let part = Region::and([own, chain_allows(&chain_of(&ancestors(k)))]);
            size += part.size();
            if size > MAX_REGION {
                return None;
            }
            parts.push(part);
        }
        let outside = Region::not(Region::or(top.iter().map(|k| prefix_region(k))));
        parts.push(Region::and([outside, chain_allows(&chain_of(&[]))]));
        let by_prefix = Region::or(parts);
        // Exact keys come before every prefix.
        let mut exact = Vec::new();
        let mut exact_keys = Vec::new();
        for (e, list) in &r.exact {
            if !applicable(list) {
                continue;
            }
            let mut lists = vec![list.as_slice()];
            lists.extend(chain_of(&ancestors(e.as_bytes())));
            let part = Region::and([Region::KeyIs(e.clone()), chain_allows(&lists)]);
            size += part.size();
            if size > MAX_REGION {
                return None;
            }
            exact.push(part);
            exact_keys.push(Region::KeyIs(e.clone()));
        }
        let region = Region::or(exact.into_iter().chain([Region::and([
            Region::not(Region::or(exact_keys)),
            by_prefix,
        ])]));
        (region.size() <= MAX_REGION).then_some(region)
    }

    /// What this viewer gets of `c`.
    pub fn of(&self, c: &crate::store::Capture) -> Verdict {
        self.verdict(&c.entry.urlkey, &c.entry.timestamp)
    }

    /// Whether `c` is there for this viewer at all (allowed or blocked,
    /// not excluded).
    pub fn sees(&self, c: &crate::store::Capture) -> bool {
        self.of(c) != Verdict::Exclude
    }

    /// True when this viewer is shown everything (no rules to look at).
    pub fn sees_all(&self) -> bool {
        self.rules.is_open()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "20200101000000";

    fn rules(text: &str) -> AccessRules {
        AccessRules::parse(text, "t.aclj").unwrap()
    }

    #[test]
    fn the_longest_prefix_decides_and_an_exact_key_first() {
        let r = rules(
            "org,httpbin)/anything/something - {\"access\": \"allow\"}\n\
             org,httpbin)/anything - {\"access\": \"exclude\"}\n\
             org,httpbin)/ - {\"access\": \"block\"}\n\
             org,httpbin)/anything/something/x### - {\"access\": \"exclude\"}\n\
             com, - {\"access\": \"allow\"}\n",
        )
        .with_default(Access::Block);
        let v = r.viewer(None);
        assert_eq!(
            v.verdict("org,httpbin)/anything/something", TS),
            Verdict::Allow
        );
        assert_eq!(
            v.verdict("org,httpbin)/anything/something/y", TS),
            Verdict::Allow
        );
        assert_eq!(
            v.verdict("org,httpbin)/anything/something/x", TS),
            Verdict::Exclude
        );
        assert_eq!(
            v.verdict("org,httpbin)/anything/something/xy", TS),
            Verdict::Allow
        );
        assert_eq!(v.verdict("org,httpbin)/anything", TS), Verdict::Exclude);
        assert_eq!(v.verdict("org,httpbin)/anythingelse", TS), Verdict::Exclude);
        assert_eq!(v.verdict("org,httpbin)/", TS), Verdict::Block);
        assert_eq!(v.verdict("org,httpbin)/b", TS), Verdict::Block);
        assert_eq!(v.verdict("com,example)/", TS), Verdict::Allow);
        // Keys between the rule and the capture's that are no prefix of it.
        assert_eq!(v.verdict("org,httpbin)/anythinz", TS), Verdict::Block);
        assert_eq!(v.verdict("net,example)/", TS), Verdict::Block);
        assert_eq!(v.verdict("", TS), Verdict::Block);
    }

    #[test]
    fn users_dates_and_fall_through() {
        let r = rules(
            "com,example)/restricted - {\"access\": \"block\"}\n\
             com,example)/restricted - {\"access\": \"allow\", \"before\": \"20101201\"}\n\
             com,example)/restricted - {\"access\": \"allow_ignore_embargo\", \"user\": \"staff\"}\n\
             com,example)/r - {\"access\": \"exclude\", \"user\": \"other\"}\n\
             *, - {\"access\": \"exclude\", \"after\": \"2030\"}\n",
        )
        .with_embargo(Some(Embargo {
            when: vec![When::After(When::at("2019").unwrap())],
            verdict: Verdict::Exclude,
        }));
        let public = r.viewer(None);
        let staff = r.viewer(Some("staff"));
        let other = r.viewer(Some("other"));
        assert_eq!(
            public.verdict("com,example)/restricted/a", "20090101"),
            Verdict::Allow
        );
        assert_eq!(
            public.verdict("com,example)/restricted/a", "20110101"),
            Verdict::Block
        );
        // Blocked and embargoed (exclude): excluded.
        assert_eq!(
            public.verdict("com,example)/restricted/a", TS),
            Verdict::Exclude
        );
        assert_eq!(
            staff.verdict("com,example)/restricted/a", TS),
            Verdict::Allow
        );
        // Another user's rule is not this viewer's: the next key's.
        assert_eq!(
            public.verdict("com,example)/rx", "20100101"),
            Verdict::Allow
        );
        assert_eq!(
            other.verdict("com,example)/rx", "20100101"),
            Verdict::Exclude
        );
        assert_eq!(public.verdict("com,example)/", TS), Verdict::Exclude);
        assert_eq!(public.verdict("com,example)/", "2018"), Verdict::Allow);
        assert_eq!(public.verdict("com,example)/", "2031"), Verdict::Exclude);
        assert!(r.has_user_rules() && r.len() == 5);
    }

    #[test]
    fn periods_count_back_on_the_calendar() {
        let p = Period::parse("1y1m").unwrap();
        assert_eq!(
            p.before("20200331120000"),
            timestamp_seconds("20190228120000")
        );
        assert_eq!(
            Period::parse("2w3d").unwrap().before("20200131000000"),
            timestamp_seconds("20200114000000")
        );
        assert_eq!(
            Period::parse("13m").unwrap().before("20200115000000"),
            timestamp_seconds("20181215000000")
        );
        for bad in ["", "y", "1", "1d1y", "1y1y", "1x", "99999999999d"] {
            assert_eq!(Period::parse(bad), None, "{bad}");
        }
        let r = rules("com, - {\"access\": \"block\", \"newer\": {\"days\": 30}}\n");
        let v = r.viewer(None);
        assert_eq!(v.verdict("com,a)/", "2001"), Verdict::Allow);
        assert_eq!(v.verdict("com,a)/", &v.now), Verdict::Block);
    }

    #[test]
    fn a_line_that_is_no_rule_is_named() {
        for (text, why) in [
            ("com,a)/", "no rule after the key"),
            ("com,a)/ - {", "not JSON"),
            ("com,a)/ - {\"url\": \"x\"}", "no \"access\""),
            ("com,a)/ - {\"access\": \"hide\"}", "access is allow"),
            (
                "http://a.com/ - {\"access\": \"allow\"}",
                "a URL, not a SURT",
            ),
            (
                "com,a)/ - {\"access\": \"allow\", \"before\": \"soon\"}",
                "\"before\" is a timestamp",
            ),
            (
                "com,a)/ - {\"access\": \"allow\", \"older\": {\"ages\": 1}}",
                "\"older\" is",
            ),
            (
                "com,a)/ - {\"access\": \"allow\", \"user\": 1}",
                "\"user\" is a string",
            ),
        ] {
            let e = AccessRules::parse(&format!("# a comment\n\n{text}\n"), "r.aclj")
                .unwrap_err()
                .to_string();
            assert!(e.contains("r.aclj:3:") && e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn lines_are_written_as_they_are_read_and_keys_made_of_urls() {
        let line = RuleLine::format(
            "com,example)/a###",
            Access::AllowIgnoreEmbargo,
            Some("http://example.com/a"),
            Some("staff"),
        );
        assert_eq!(
            line,
            "com,example)/a### - {\"access\": \"allow_ignore_embargo\", \"url\": \"http://example.com/a\", \"user\": \"staff\"}"
        );
        let back = RuleLine::parse(&line).unwrap().unwrap();
        assert_eq!(
            (back.key.as_str(), back.access, back.user.as_deref()),
            (
                "com,example)/a###",
                Access::AllowIgnoreEmbargo,
                Some("staff")
            )
        );
        assert_eq!(RuleLine::parse("  # note").unwrap(), None);
        assert_eq!(
            rule_key("http://www.Example.com/a?b=1", false),
            "com,example)/a?b=1"
        );
        assert_eq!(rule_key("example.com/a", true), "com,example)/a###");
        assert_eq!(rule_key("com,example)/a", false), "com,example)/a");
        assert_eq!(rule_key("com,", true), "com,###");
        assert_eq!(rule_key("*,", true), "*,");
    }

    #[test]
    fn explained_names_the_rule_and_the_embargo() {
        let r = rules("com,a)/x - {\"access\": \"allow\"}\ncom,a)/x### - {\"access\": \"block\", \"user\": \"u\"}\n")
            .with_embargo(Some(Embargo { when: vec![When::Before(When::at("2000").unwrap())], verdict: Verdict::Block }));
        let e = r.viewer(None).explain("com,a)/xy", "1999");
        assert_eq!(e.verdict, Verdict::Block);
        assert_eq!(e.rule, Some(("com,a)/x".to_string(), Access::Allow, None)));
        assert!(e.embargoed);
        let e = r.viewer(Some("u")).explain("com,a)/x", TS);
        assert_eq!(
            (e.verdict, e.rule.unwrap().0.as_str(), e.embargoed),
            (Verdict::Block, "com,a)/x###", false)
        );
        let e = r.viewer(None).explain("org,b)/", TS);
        assert_eq!(
            (e.verdict, e.rule, e.default),
            (Verdict::Allow, None, Access::Allow)
        );
    }

    /// [`Viewer::allowed`] holds a capture exactly when the viewer's
    /// verdict on it is allow: random rule sets over a few keys, users,
    /// dates and embargoes, each judged at many keys and times.
    #[test]
    fn the_allowed_region_is_the_verdict() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let keys = ["a", "ab", "abc", "b", "abcd", "*,", "ab###", "abc###", "ba"];
        let accesses = ["allow", "block", "exclude", "allow_ignore_embargo"];
        let times = ["2000", "2005", "2010", "2015", "2020"];
        let probes = ["a", "ab", "abc", "abcd", "abd", "b", "ba", "bb", "c", ""];
        let mut seen = [0usize; 2];
        for case in 0..400 {
            let mut text = String::new();
            for _ in 0..(1 + next(6)) {
                let key = keys[next(keys.len() as u64) as usize];
                let access = accesses[next(4) as usize];
                let mut extra = String::new();
                if next(3) == 0 {
                    extra.push_str(&format!(", \"user\": \"{}\"", ["u", "v"][next(2) as usize]));
                }
                match next(6) {
                    0 => extra.push_str(&format!(", \"before\": \"{}\"", times[next(5) as usize])),
                    1 => extra.push_str(&format!(", \"after\": \"{}\"", times[next(5) as usize])),
                    2 => extra.push_str(", \"newer\": {\"years\": 10}"),
                    _ => {}
                }
                text.push_str(&format!("{key} - {{\"access\": \"{access}\"{extra}}}\n"));
            }
            let default = [Access::Allow, Access::Block, Access::Exclude][next(3) as usize];
            let embargo = match next(3) {
                0 => None,
                n => Some(Embargo {
                    when: vec![When::After(When::at(times[next(5) as usize]).unwrap())],
                    verdict: if n == 1 {
                        Verdict::Exclude
                    } else {
                        Verdict::Block
                    },
                }),
            };
            let rules = rules(&text).with_default(default).with_embargo(embargo);
            for user in [None, Some("u")] {
                let v = rules.viewer(user);
                let region = v.allowed().expect("small");
                for key in probes {
                    for t in ["1999", "2000", "2003", "2010", "2012", "2019", "2026"] {
                        let at = timestamp_seconds(&pad_timestamp(t));
                        let ts = pad_timestamp(t);
                        seen[usize::from(region.contains(key, at))] += 1;
                        assert_eq!(
                            region.contains(key, at),
                            v.verdict(key, &ts) == Verdict::Allow,
                            "case {case}, {user:?}, {key:?} at {t}: {text}{default:?} {region:?}"
                        );
                    }
                }
            }
        }
        // Both answers were met, often.
        assert!(seen[0] > 10_000 && seen[1] > 10_000, "{seen:?}");
    }

    #[test]
    fn no_rules_show_everything() {
        let r = AccessRules::allow_all();
        assert!(r.is_open() && r.viewer(None).sees_all());
        assert_eq!(r.viewer(None).verdict("com,a)/", TS), Verdict::Allow);
        let closed = AccessRules::allow_all().with_default(Access::Exclude);
        assert!(!closed.is_open());
        assert_eq!(closed.viewer(None).verdict("com,a)/", TS), Verdict::Exclude);
    }
}
