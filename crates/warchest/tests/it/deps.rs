//! The format crate stays light: the packages `cargo tree` counts for it
//! (normal dependencies, warchest included) must not creep back up, with
//! the default features and with none (gzip and SHA-1/SHA-2 reading and
//! writing need no feature). See the `[features]` of Cargo.toml.

use std::collections::BTreeSet;
use std::process::Command;

/// Most packages with the default features.
const MAX_DEFAULT: usize = 60;
/// Most packages with `--no-default-features`.
const MAX_CORE: usize = 30;

/// The unique package names of `cargo tree -p warchest -e normal`, with
/// `extra` arguments.
fn packages(extra: &[&str]) -> BTreeSet<String> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--manifest-path", manifest])
        .args(["-p", "warchest", "-e", "normal", "--prefix", "none"])
        .args(extra)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {extra:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn check(extra: &[&str], max: usize) -> BTreeSet<String> {
    let p = packages(extra);
    assert!(p.contains("warchest"), "{p:?}");
    assert!(
        p.len() <= max,
        "warchest {extra:?} depends on {} packages, more than {max}:\n{}",
        p.len(),
        p.iter().cloned().collect::<Vec<_>>().join("\n")
    );
    p
}

#[test]
fn default_features_stay_light() {
    check(&[], MAX_DEFAULT);
}

#[test]
fn the_core_stays_light() {
    let p = check(&["--no-default-features"], MAX_CORE);
    // What the features add stays out of the core, and what was replaced
    // by a few lines (uuid, time) or dropped (tracing) stays out of both.
    for name in [
        "zstd",
        "lz4_flex",
        "brotli-decompressor",
        "libdeflate-sys",
        "serde",
        "md-5",
        "sha3",
        "infer",
        "encoding_rs",
        "time",
        "uuid",
        "tracing",
    ] {
        assert!(!p.contains(name), "{name} in the core: {p:?}");
    }
    let all = packages(&[]);
    assert!(!all.contains("tracing"), "{all:?}");
    // `infer` without its `std` feature: no `cfb`, and through it no
    // `uuid` (write::identify reads OLE2 class ids itself).
    for name in ["uuid", "cfb"] {
        assert!(!all.contains(name), "{name} in the default tree: {all:?}");
    }
    // The core's own pieces are there: the count is of a real tree.
    for name in ["flate2", "sha1", "sha2", "getrandom"] {
        assert!(p.contains(name), "{name} missing: {p:?}");
    }
}
