//! `warchest acl`: rule files written as pywb keeps them (reverse order,
//! one rule a key and user), read back by `match` and `check` as serve
//! reads them.

use std::path::Path;
use std::process::Output;

use crate::common::bin;

fn acl(dir: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(dir)
        .arg("acl")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn rules_are_added_replaced_removed_imported_and_matched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for args in [
        &["add", "r.aclj", "http://example.com/private", "exclude"][..],
        &["add", "r.aclj", "http://example.com/private/open", "allow"],
        &["add", "r.aclj", "com,", "block", "--user", "staff"],
        &["add", "r.aclj", "example.com/private", "block", "--exact"],
        // The same key and user: replaced, not added.
        &["add", "r.aclj", "http://example.com/private", "exclude"],
    ] {
        let o = acl(d, args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    assert!(
        stderr(&acl(
            d,
            &["add", "r.aclj", "http://example.com/private", "block"]
        ))
        .contains("replaced com,example)/private")
    );
    let text = std::fs::read_to_string(d.join("r.aclj")).unwrap();
    assert_eq!(
        text,
        "com,example)/private/open - {\"access\": \"allow\", \"url\": \"http://example.com/private/open\"}\n\
         com,example)/private### - {\"access\": \"block\"}\n\
         com,example)/private - {\"access\": \"block\", \"url\": \"http://example.com/private\"}\n\
         com, - {\"access\": \"block\", \"user\": \"staff\"}\n"
    );
    let matched = |url: &str, extra: &[&str]| {
        let mut args = vec!["match", url, "--acl", "r.aclj", "--timestamp", "2020"];
        args.extend_from_slice(extra);
        let o = acl(d, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(
        matched("http://example.com/private", &[]),
        "block\tcom,example)/private\trule com,example)/private### (block)\n"
    );
    assert_eq!(
        matched("http://example.com/private/open/a", &[]),
        "allow\tcom,example)/private/open/a\trule com,example)/private/open (allow)\n"
    );
    assert_eq!(
        matched("http://example.com/", &["-u", "staff"]),
        "block\tcom,example)/\trule com, (block, user staff)\n"
    );
    assert_eq!(
        matched("http://example.org/", &["--default-access", "exclude"]),
        "exclude\torg,example)/\tdefault (exclude)\n"
    );

    std::fs::write(
        d.join("list.txt"),
        "# takedowns\nhttp://a.test/x\n\norg,b)/\n",
    )
    .unwrap();
    let o = acl(d, &["import", "r.aclj", "list.txt", "exclude"]);
    assert!(
        stderr(&o).contains("2 rule(s) added, 0 replaced"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        matched("http://b.org/y", &[]),
        "exclude\torg,b)/y\trule org,b)/ (exclude)\n"
    );
    let o = acl(d, &["check", "r.aclj"]);
    assert_eq!(stdout(&o), "6 rule(s)\n");

    let o = acl(d, &["remove", "r.aclj", "http://example.com/private"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = acl(d, &["remove", "r.aclj", "http://example.com/private"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no rule of com,example)/private in r.aclj"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&acl(d, &["check", "r.aclj"])), "5 rule(s)\n");

    // A line that is no rule: check says where (exit 1); add leaves the
    // file as it was (exit 2).
    let mut text = std::fs::read_to_string(d.join("r.aclj")).unwrap();
    text.push_str("com,c)/ - {\"access\": \"hide\"}\n");
    std::fs::write(d.join("r.aclj"), &text).unwrap();
    let o = acl(d, &["check", "r.aclj"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("r.aclj:6: access is allow"),
        "{}",
        stderr(&o)
    );
    let o = acl(d, &["add", "r.aclj", "http://d.test/", "allow"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(d.join("r.aclj")).unwrap(), text);
    let o = acl(d, &["add", "r2.aclj", "http://d.test/", "hide"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("hide: allow, block, exclude"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("r2.aclj").exists());
}
