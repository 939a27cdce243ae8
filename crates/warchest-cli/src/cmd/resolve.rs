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
/// against the revisit's. The recoveries in `files` go to `g`.
pub fn payload(
    g: &Global,
    revisit: &WarcHeader,
    files: &[String],
    index: Option<&Path>,
    decode: bool,
    out: &mut dyn Write,
) -> Result<()> {
    if !files.is_empty() {
        let resolver = Resolver::scan_with(files, &mut |f, w| g.warnings(&f.to_string_lossy(), w))?;
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
