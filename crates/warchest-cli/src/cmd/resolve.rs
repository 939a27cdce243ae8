//! Revisits resolved to their original's payload, for `extract`.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};
use warchest::warc::WarcHeader;
use warchest_ops::dedupe::DigestIndex;
use warchest_ops::revisit::{Resolver, payload_at};

use crate::report::Global;

/// Writes the payload of `revisit`'s original, found in `files` or through
/// the digest index at `index`, to `out`; its payload digest is checked
/// against the revisit's. The recoveries in `files` go to `g`, each file's
/// once: a file named twice (by the same name or another) is read once.
pub fn payload(
    g: &Global,
    revisit: &WarcHeader,
    files: &[String],
    index: Option<&Path>,
    decode: bool,
    out: &mut dyn Write,
) -> Result<()> {
    if !files.is_empty() {
        let files = distinct(files);
        let resolver =
            Resolver::scan_with(&files, &mut |f, w| g.warnings(&f.to_string_lossy(), w))?;
        if resolver.locate(revisit).is_some() || index.is_none() {
            resolver.open_payload(revisit, decode)?.copy_to(out)?;
            return Ok(());
        }
    }
    if let Some(p) = index {
        if !p.exists() {
            bail!("{}: no such digest index", p.display());
        }
        let idx = DigestIndex::open(p)?;
        let Some(loc) = idx.locate(revisit)? else {
            bail!(
                "the original of revisit {} is not in {}",
                revisit.record_id().unwrap_or_default(),
                p.display()
            );
        };
        payload_at(&loc, revisit, decode)?.copy_to(out)?;
    }
    Ok(())
}

/// Whether `a` and `b` name the same file: the same name, or the same
/// file by another name (`./a.warc` and `a.warc`, a hard link:
/// [`warchest_ops::copy::same_file`]). A name that is no file here (a
/// URL, a missing file) is only the same as itself.
pub fn same_file(a: &str, b: &str) -> bool {
    a == b || warchest_ops::copy::same_file(std::path::Path::new(a), std::path::Path::new(b))
}

/// `files` without the ones that name a file named before (in the order
/// given).
fn distinct(files: &[String]) -> Vec<&String> {
    let mut seen = std::collections::HashSet::new();
    files
        .iter()
        .filter(|f| {
            let key = std::fs::canonicalize(f).unwrap_or_else(|_| f.as_str().into());
            seen.insert(key)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_named_twice_is_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.warc");
        let b = dir.path().join("b.warc");
        std::fs::write(&a, "x").unwrap();
        std::fs::write(&b, "x").unwrap();
        let a = a.to_str().unwrap().to_string();
        let b = b.to_str().unwrap().to_string();
        let a2 = format!("{}/./a.warc", dir.path().display());
        assert!(same_file(&a, &a2));
        assert!(!same_file(&a, &b));
        assert!(same_file("http://x/y.warc", "http://x/y.warc"));
        assert!(!same_file("http://x/y.warc", "http://x/z.warc"));
        let files = [a.clone(), b.clone(), a2, a.clone()];
        assert_eq!(distinct(&files), [&a, &b]);
    }
}
