//! What every command does with input that holds no record, and how
//! lenient-reading recoveries are shown without `-w` (issue 19).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::{bin, run};

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.warc.gz")
}

/// Every command that reads archives, on `file`, with outputs in `out`.
fn commands(file: &Path, out: &Path) -> Vec<Vec<String>> {
    let f = file.to_string_lossy().to_string();
    let o = |n: &str| out.join(n).to_string_lossy().to_string();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&["ls", &f]),
        v(&["ls", "--json", &f]),
        v(&["check", &f]),
        v(&["index", &f]),
        v(&["index", "--format", "cdx", &f]),
        v(&["stats", &f]),
        v(&["extract", &f, "--offset", "0"]),
        v(&["validate", &f]),
        v(&["convert", "-o", &o("x.warc.gz"), &f]),
        v(&["dedupe", "-o", &o("d"), &f]),
        v(&[
            "filter",
            &f,
            "-o",
            &o("f.warc.gz"),
            "warc-type == \"response\"",
        ]),
        v(&["recompress", &f, "-o", &o("r.warc.gz")]),
        v(&["split", &f, "--max-size", "1MB", "-o", &o("s")]),
        v(&["concat", &f, "-o", &o("c.warc.gz")]),
        v(&["recover", &f, "-o", &o("rec.warc.gz")]),
        v(&["segment", &f, "-o", &o("seg")]),
        v(&["reassemble", &f, "-o", &o("re.warc.gz")]),
        v(&["annotate", &f, "-o", &o("a.warc.gz"), "--exec", "cat"]),
        v(&[
            "migrate",
            &f,
            "-o",
            &o("m.warc.gz"),
            "--from",
            "text/html",
            "--exec",
            "cat",
        ]),
        v(&["unpack", &f, "-o", &o("u")]),
        v(&["wacz", "create", &f, "-o", &o("w.wacz")]),
    ]
}

#[test]
fn no_record_found_is_an_error_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("passwd");
    std::fs::write(
        &text,
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
    )
    .unwrap();
    // An empty file has no record either: the same error.
    let empty = dir.path().join("empty.warc.gz");
    std::fs::write(&empty, b"").unwrap();
    for file in [&text, &empty] {
        let expected = format!(
            "no WARC, ARC or Web InfoMall record found in {}",
            file.display()
        );
        let out = tempfile::tempdir().unwrap();
        for args in commands(file, out.path()) {
            let (code, _, err) = run(bin().args(&args));
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(err.contains(&expected), "{args:?}: {err}");
        }
        // Nothing written under a final name.
        for n in [
            "x.warc.gz",
            "f.warc.gz",
            "r.warc.gz",
            "c.warc.gz",
            "rec.warc.gz",
            "w.wacz",
        ] {
            assert!(!out.path().join(n).exists(), "{n}");
        }
    }
    // Standard input, which is read once: counted as read.
    for args in [
        vec!["ls", "-"],
        vec!["check", "-"],
        vec!["convert", "-o", "-", "-"],
    ] {
        let mut child = bin()
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"root:x:0:0:root:/root:/bin/bash\n")
            .unwrap();
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no WARC, ARC or Web InfoMall record found in -"),
            "{args:?}: {err}"
        );
    }
    // A real archive still reads.
    let (code, _, err) = run(bin().arg("ls").arg(sample()));
    assert_eq!(code, 0, "{err}");
}
