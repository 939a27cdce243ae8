//! `warchest acl`: write and try the access control files `serve --acl`
//! reads (pywb's `.aclj`), as pywb's `wb-manager acl` does.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use warchest_replay::access::{Access, AccessRules, RuleLine, Verdict, rule_key};

use crate::report::{Global, Outcome};

// The largest rule file or list read: serve reads no larger rule file.
use warchest_replay::access::MAX_FILE;

/// `path` as text, at most [`MAX_FILE`] bytes; `None` when there is none.
fn read_bounded(path: &Path) -> Result<Option<String>> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_FILE => bail!(
            "{}: {} bytes, more than a rule file or list may hold ({MAX_FILE})",
            path.display(),
            m.len()
        ),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("{}: cannot read", path.display())),
    }
    std::fs::read_to_string(path)
        .map(Some)
        .with_context(|| format!("{}: cannot read", path.display()))
}

/// Write, check and try access control files for `serve --acl` (pywb's
/// `.aclj`: one rule a line, `SURT-PREFIX - {"access": ...}`).
///
/// Example: `warchest acl add rules.aclj http://example.com/private exclude`,
/// then `warchest acl match http://example.com/private/a --acl rules.aclj`
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Add a rule (or replace the undated one of the same key and user;
    /// dated rules, written by hand, are left as they are), the file kept
    /// in pywb's order (lines sorted in reverse) and written whole before
    /// it replaces the old (created when missing).
    Add {
        /// The rule file.
        file: PathBuf,
        /// A URL (the rule covers it and all under it) or a SURT prefix,
        /// used as given (`com,example)/path`, `com,example,`, `*,`).
        target: String,
        /// allow, block, exclude or allow_ignore_embargo.
        access: String,
        /// For this user only (serve --acl-user-header names who).
        #[arg(short, long)]
        user: Option<String>,
        /// That URL alone, not what is under it.
        #[arg(long)]
        exact: bool,
    },
    /// Remove the rule of a URL or SURT prefix (and user, and --exact).
    /// Exits 1 when there is none.
    Remove {
        /// The rule file.
        file: PathBuf,
        /// As `add` was given it.
        target: String,
        /// The rule of this user.
        #[arg(short, long)]
        user: Option<String>,
        /// The rule of that URL alone.
        #[arg(long)]
        exact: bool,
    },
    /// Add a rule for each line of a list (a URL or SURT prefix a line, as
    /// OpenWayback's exclusion lists; blank lines and `#` lines passed
    /// over), with one access.
    Import {
        /// The rule file.
        file: PathBuf,
        /// The list.
        list: PathBuf,
        /// allow, block, exclude or allow_ignore_embargo.
        access: String,
        /// For this user only.
        #[arg(short, long)]
        user: Option<String>,
    },
    /// What serve would do with a URL: the verdict, and the rule that
    /// decided (or the default) and whether the embargo did.
    Match {
        /// The URL.
        url: String,
        /// Rule files or directories, as serve's --acl.
        #[arg(long = "acl", value_name = "PATH", required = true)]
        acl: Vec<PathBuf>,
        /// The capture's time (default: now).
        #[arg(long, value_name = "TS")]
        timestamp: Option<String>,
        /// As this user.
        #[arg(short, long)]
        user: Option<String>,
        /// As serve's --default-access.
        #[arg(long, value_name = "ACCESS", default_value = "allow",
              value_parser = ["allow", "block", "exclude"])]
        default_access: String,
    },
    /// Read rule files as serve would, and count their rules. Exits 1 on a
    /// line that is not a rule, naming it.
    Check {
        /// Rule files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    match args.command {
        Sub::Add {
            file,
            target,
            access,
            user,
            exact,
        } => {
            let access = parse_access(&access)?;
            let n = edit(&file, |rules| {
                Ok(usize::from(rules.put(
                    &target,
                    exact,
                    access,
                    user.as_deref(),
                )))
            })?;
            if !g.quiet {
                let what = if n == 1 { "added" } else { "replaced" };
                eprintln!("warchest acl: {what} {}", rule_key(&target, exact));
            }
            Ok(Outcome::Ok)
        }
        Sub::Remove {
            file,
            target,
            user,
            exact,
        } => {
            let key = rule_key(&target, exact);
            let gone = edit(&file, |rules| Ok(rules.remove(&key, user.as_deref())))?;
            if gone == 0 {
                eprintln!("warchest acl: no rule of {key} in {}", file.display());
                return Ok(Outcome::Problem);
            }
            if !g.quiet {
                eprintln!("warchest acl: removed {key}");
            }
            Ok(Outcome::Ok)
        }
        Sub::Import {
            file,
            list,
            access,
            user,
        } => {
            let access = parse_access(&access)?;
            let Some(text) = read_bounded(&list)? else {
                bail!("{}: no such file", list.display());
            };
            let (mut added, mut replaced) = (0usize, 0usize);
            edit(&file, |rules| {
                for t in text.lines().map(str::trim) {
                    if t.is_empty() || t.starts_with('#') {
                        continue;
                    }
                    if rules.put(t, false, access, user.as_deref()) {
                        added += 1;
                    } else {
                        replaced += 1;
                    }
                }
                Ok(added + replaced)
            })?;
            if !g.quiet {
                eprintln!("warchest acl: {added} rule(s) added, {replaced} replaced");
            }
            Ok(Outcome::Ok)
        }
        Sub::Match {
            url,
            acl,
            timestamp,
            user,
            default_access,
        } => {
            let rules = AccessRules::load(&acl)?
                .with_default(Access::parse(&default_access).unwrap_or(Access::Allow));
            let ts = timestamp.unwrap_or_else(|| {
                warchest::warc::WarcDate::now(warchest::warc::DatePrecision::Second).timestamp14()
            });
            let key = warchest_index::surt::url_key(&url);
            let e = rules.viewer(user.as_deref()).explain(&key, &ts);
            let verdict = match e.verdict {
                Verdict::Allow => "allow",
                Verdict::Block => "block",
                Verdict::Exclude => "exclude",
            };
            let why = match &e.rule {
                Some((k, a, Some(u))) => format!("rule {k} ({}, user {u})", a.name()),
                Some((k, a, None)) => format!("rule {k} ({})", a.name()),
                None => format!("default ({})", e.default.name()),
            };
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "{verdict}\t{key}\t{why}{}",
                if e.embargoed { ", embargoed" } else { "" }
            )?;
            Ok(Outcome::Ok)
        }
        Sub::Check { paths } => match AccessRules::load(&paths) {
            Ok(r) => {
                println!("{} rule(s)", r.len());
                Ok(Outcome::Ok)
            }
            Err(e) => {
                eprintln!("warchest acl: {e}");
                Ok(Outcome::Problem)
            }
        },
    }
}

fn parse_access(s: &str) -> Result<Access> {
    Access::parse(s).with_context(|| format!("{s}: allow, block, exclude or allow_ignore_embargo"))
}

/// A rule file's lines being changed: its comments, and its rules each
/// with its key, user and whether it is dated (`add` manages the undated
/// rule of a key and user; a dated one, written by hand, is left alone).
struct RuleFile {
    notes: Vec<String>,
    rules: Vec<(String, Option<String>, bool, String)>,
    /// Where the undated rule of each key and user is in `rules`.
    undated: HashMap<(String, Option<String>), usize>,
}

impl RuleFile {
    fn index(&mut self) {
        self.undated = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, (_, _, dated, _))| !dated)
            .map(|(i, (k, u, _, _))| ((k.clone(), u.clone()), i))
            .collect();
    }

    /// Puts the undated rule of `target`, in place of the one of the same
    /// key and user if there is one; true when it was added.
    fn put(&mut self, target: &str, exact: bool, access: Access, user: Option<&str>) -> bool {
        let key = rule_key(target, exact);
        let url = target.contains("://").then_some(target);
        let line = RuleLine::format(&key, access, url, user);
        let id = (key, user.map(str::to_string));
        match self.undated.get(&id) {
            Some(&i) => {
                self.rules[i].3 = line;
                false
            }
            None => {
                self.undated.insert(id.clone(), self.rules.len());
                self.rules.push((id.0, id.1, false, line));
                true
            }
        }
    }

    /// Takes out every rule of `key` for `user`; how many there were.
    fn remove(&mut self, key: &str, user: Option<&str>) -> usize {
        let before = self.rules.len();
        self.rules
            .retain(|(k, u, _, _)| !(k == key && u.as_deref() == user));
        self.index();
        before - self.rules.len()
    }
}

/// Reads the rule file (none: empty), lets `change` change its rules, and
/// writes it whole (comments first, then the rules in reverse order, as
/// pywb keeps them) beside it before it replaces the old. A file with a
/// line that is not a rule is refused, untouched.
fn edit(file: &Path, change: impl FnOnce(&mut RuleFile) -> Result<usize>) -> Result<usize> {
    let text = read_bounded(file)?.unwrap_or_default();
    let mut f = RuleFile {
        notes: Vec::new(),
        rules: Vec::new(),
        undated: HashMap::new(),
    };
    for (i, l) in text.lines().enumerate() {
        match RuleLine::parse(l) {
            Ok(None) if !l.trim().is_empty() => f.notes.push(l.to_string()),
            Ok(None) => {}
            Ok(Some(r)) => f
                .rules
                .push((r.key, r.user, !r.when.is_empty(), l.trim().to_string())),
            Err(why) => bail!("{}:{}: {why}: {}", file.display(), i + 1, l.trim()),
        }
    }
    f.index();
    let n = change(&mut f)?;
    let mut lines: Vec<String> = f.rules.into_iter().map(|r| r.3).collect();
    lines.sort_by(|a, b| b.cmp(a));
    let mut out = f.notes.join("\n");
    for l in &lines {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(l);
    }
    out.push('\n');
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".open");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, out).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("{}: cannot write", file.display()))?;
    Ok(n)
}
