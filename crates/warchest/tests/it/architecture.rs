//! docs/architecture.md against the workspace: every crate under crates/
//! has a row in its table and a place in its layers, and every crate's
//! warchest dependencies sit on lower layers. A crate added without a word
//! in the document (or an arrow pointing up) fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's crates: each directory of crates/ with a Cargo.toml,
/// by package name, with the warchest crates among its normal
/// dependencies.
fn crates() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let mut section = String::new();
        let mut name = None;
        let mut deps = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_string();
                continue;
            }
            let key = line.split(['=', '.', ' ']).next().unwrap_or("");
            if section == "[package]" && key == "name" {
                name = line.split('"').nth(1).map(str::to_string);
            }
            // Normal dependencies, also target-specific ones.
            let normal = section == "[dependencies]"
                || (section.starts_with("[target.") && section.ends_with(".dependencies]"));
            if normal && (key == "warchest" || key.starts_with("warchest-")) {
                deps.push(key.to_string());
            }
        }
        let name = name.unwrap_or_else(|| panic!("{}: no package name", manifest.display()));
        out.insert(name, deps);
    }
    out
}

/// The document's `layers` block: crate name to layer number.
fn layers(doc: &str) -> BTreeMap<String, u32> {
    let start = doc
        .find("```layers\n")
        .expect("docs/architecture.md has a ```layers block");
    let block = &doc[start + 10..];
    let block = &block[..block.find("```").expect("the layers block ends")];
    let mut out = BTreeMap::new();
    for line in block.lines() {
        let (head, names) = line.split_once(':').expect("`layer N: crate crate...`");
        let n: u32 = head
            .trim()
            .strip_prefix("layer ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not `layer N`: {line}"));
        for name in names.split_whitespace() {
            assert!(
                out.insert(name.to_string(), n).is_none(),
                "{name} is on two layers"
            );
        }
    }
    out
}

#[test]
fn every_crate_is_in_the_architecture_document() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let crates = crates();
    assert!(crates.len() >= 10, "{crates:?}");
    let layers = layers(&doc);
    let mut missing = Vec::new();
    for name in crates.keys() {
        if !doc.contains(&format!("| `crates/{name}` |")) {
            missing.push(format!(
                "{name}: no row `| `crates/{name}` | ...` in the table"
            ));
        }
        if !layers.contains_key(name) {
            missing.push(format!("{name}: on no layer of the ```layers block"));
        }
    }
    for name in layers.keys() {
        if !crates.contains_key(name) {
            missing.push(format!(
                "{name}: in the layers but not a crate under crates/"
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not match the workspace:\n{}",
        missing.join("\n")
    );
    // Every arrow points down.
    let mut up = Vec::new();
    for (name, deps) in &crates {
        for d in deps {
            if layers[d] >= layers[name] {
                up.push(format!(
                    "{name} (layer {}) depends on {d} (layer {})",
                    layers[name], layers[d]
                ));
            }
        }
    }
    assert!(up.is_empty(), "arrows pointing up:\n{}", up.join("\n"));
}
