//! How files are named to visitors: relative to the roots given to
//! `serve` (a file given by itself: its file name), never by their place
//! in the server's file system. The same names are used in `record/` and
//! `file/` URLs; a source's number (what those URLs held before) is still
//! understood there, so older links keep working.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use warchest_replay::Collection;
use warchest_replay::store::Source;

/// A root given to `serve`: as given (for URLs), canonical (for files).
struct Root {
    text: String,
    canonical: Option<PathBuf>,
    dir: bool,
}

impl Root {
    fn new(p: &Path) -> Root {
        let canonical = std::fs::canonicalize(p).ok();
        Root {
            text: p.to_string_lossy().into_owned(),
            dir: canonical.as_deref().is_some_and(Path::is_dir),
            canonical,
        }
    }
}

/// The public name of each source of a collection.
pub(super) struct Names {
    by_id: Vec<(u32, String)>,
}

impl Names {
    /// The names of `coll`'s sources now. Two sources that would get the
    /// same name (the same file name under two roots) are told apart by
    /// `~` and the second one's number.
    pub(super) fn of(coll: &Collection) -> Names {
        let roots: Vec<Root> = coll.paths.iter().map(|p| Root::new(p)).collect();
        let mut seen = HashSet::new();
        let mut by_id = Vec::new();
        for s in coll.store.sources() {
            let mut n = public_name(&roots, &s);
            if !seen.insert(n.clone()) {
                n = format!("{n}~{}", s.id);
                seen.insert(n.clone());
            }
            by_id.push((s.id, n));
        }
        Names { by_id }
    }

    /// The name of source `id` (its number when it has none).
    pub(super) fn name(&self, id: u32) -> String {
        self.by_id
            .iter()
            .find(|(i, _)| *i == id)
            .map_or_else(|| id.to_string(), |(_, n)| n.clone())
    }

    /// The name of source `id` for a URL path (percent-encoded).
    pub(super) fn href(&self, id: u32) -> String {
        encode(&self.name(id))
    }

    /// The source a URL names: by name (percent-encoded), or by number.
    pub(super) fn find(&self, coll: &Collection, segment: &str) -> Option<Source> {
        let name = decode(segment)?;
        let id = match self.by_id.iter().find(|(_, n)| *n == name) {
            Some((id, _)) => *id,
            None => name.parse().ok()?,
        };
        coll.store.source(id)
    }
}

/// `s` named relative to the root that holds it.
fn public_name(roots: &[Root], s: &Source) -> String {
    // A WACZ member is `WACZ#ENTRY`: the WACZ named, the entry kept.
    let (whole, member) = match &s.entry {
        Some(e) if s.name.ends_with(e.as_str()) && s.name.len() > e.len() => {
            let cut = s.name.len() - e.len() - 1;
            (&s.name[..cut], &s.name[cut..])
        }
        _ => (s.name.as_str(), ""),
    };
    let last = || {
        whole
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(whole)
            .to_string()
    };
    let name = if s.url.is_some() {
        // An object: relative to the prefix (or glob's directory) given.
        roots
            .iter()
            .filter_map(|r| {
                let base = &r.text[..r.text.rfind('/').map_or(0, |i| i + 1)];
                whole.strip_prefix(base).filter(|rest| !rest.is_empty())
            })
            .min_by_key(|rest| rest.len())
            .map_or_else(last, str::to_string)
    } else {
        let path = Path::new(whole);
        roots
            .iter()
            .filter_map(|r| {
                let c = r.canonical.as_deref()?;
                if path == c {
                    return path.file_name().map(|n| n.to_string_lossy().into_owned());
                }
                let rel = path.strip_prefix(c).ok().filter(|_| r.dir)?;
                Some(rel.to_string_lossy().into_owned())
            })
            .min_by_key(String::len)
            .unwrap_or_else(last)
    };
    format!("{name}{member}")
}

/// `name` for a URL path: letters, digits, `-._~/` as they are, every
/// other byte percent-encoded.
fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A percent-encoded URL path segment decoded (`None`: not UTF-8 or a
/// bad escape).
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_urls() {
        for n in [
            "a.warc.gz",
            "sub dir/x#archive/data.warc",
            "100%.warc",
            "ü.arc",
        ] {
            let e = encode(n);
            assert!(!e.contains(' ') && !e.contains('#'), "{e}");
            assert_eq!(decode(&e).as_deref(), Some(n));
        }
        assert_eq!(decode("%zz"), None);
    }
}
