//! Any bytes as a WACZ (a ZIP file): its entries as the reading commands
//! list them (from memory and from a file alike), its archive files, each
//! stored one read in place (a window that reads exactly the ZIP's bytes
//! at its offset, cut at the file's end), and the validator over it: no
//! panic, and memory bounded whatever sizes the ZIP claims (libFuzzer's
//! `-rss_limit_mb` and `-malloc_limit_mb` catch an allocation of a claimed
//! size). The validator fails only where listing the entries does, and
//! checks at most its bound of index lines.
#![no_main]
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use warchest_wacz::{archive_entries_of, entries, entries_of, open_entry, validate};

/// The file the input is written to, once per process.
fn file() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fuzz.wacz");
        (d, p)
    })
    .1
}

fuzz_target!(|data: &[u8]| {
    let path = file();
    let listed = entries_of(Cursor::new(data), path);
    std::fs::write(path, data).unwrap();
    let from_file = entries(path);
    assert_eq!(
        listed.as_ref().ok(),
        from_file.as_ref().ok(),
        "listed from memory and from the file"
    );
    if let Ok(all) = &listed {
        if let Ok(archives) = archive_entries_of(all.clone(), path) {
            for e in &archives {
                assert!(e.stored && e.name.starts_with("archive/") && all.contains(e));
                // Its name as the commands give it splits back, in any case.
                let named = format!("x.WaCz#{}", e.name);
                let split = warchest_wacz::split_at_wacz(&named);
                assert_eq!(split, Some(("x.WaCz", e.name.as_str())));
                // The window reads the ZIP's bytes at the entry's offset,
                // to its stored size or the file's end.
                let Ok(s) = open_entry(path, e) else { continue };
                let mut got = Vec::new();
                s.take(1 << 17).read_to_end(&mut got).unwrap();
                let start = usize::try_from(e.data_start)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let end = e.data_start.saturating_add(e.compressed_size.min(1 << 17));
                let end = usize::try_from(end).unwrap_or(usize::MAX).min(data.len());
                assert_eq!(got, data[start..end.max(start)], "{e:?}");
            }
        }
    }
    if let Ok(rep) = validate(path) {
        assert!(listed.is_ok(), "validated what does not list");
        assert!(rep.index_entries_checked <= 100_000);
    }
});
