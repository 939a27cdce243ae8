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
    // A dated rule written by hand is not the one `add` replaces.
    let before = std::fs::read_to_string(d.join("r.aclj")).unwrap();
    let mut text = before.clone();
    text.push_str("org,b)/ - {\"access\": \"allow\", \"before\": \"2010\"}\n");
    std::fs::write(d.join("r.aclj"), &text).unwrap();
    let o = acl(d, &["add", "r.aclj", "org,b)/", "block"]);
    assert!(stderr(&o).contains("replaced org,b)/"), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.join("r.aclj")).unwrap();
    assert!(
        text.contains("org,b)/ - {\"access\": \"allow\", \"before\": \"2010\"}\n"),
        "{text}"
    );
    assert!(
        text.contains("org,b)/ - {\"access\": \"block\"}\n"),
        "{text}"
    );
    assert_eq!(stdout(&acl(d, &["check", "r.aclj"])), "7 rule(s)\n");
    // `remove` takes the key's rules, dated or not.
    let o = acl(d, &["remove", "r.aclj", "org,b)/"]);
    assert!(stderr(&o).contains("removed org,b)/"), "{}", stderr(&o));
    assert_eq!(stdout(&acl(d, &["check", "r.aclj"])), "5 rule(s)\n");
    std::fs::write(d.join("r.aclj"), &before).unwrap();

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

/// The same rules, written by `warchest acl`, in pywb (its collection's
/// `acl/` directory) and in `warchest serve --acl`: for each URL, for the
/// public and for the user `staff` (pywb's header), the CDX API lists the
/// same number of captures and replay answers the same status (200, 404
/// for excluded, 451 for blocked).
#[test]
fn access_rules_agree_with_pywb() {
    if !crate::common::python_has("pywb") {
        eprintln!("skipped: WARCHEST_SKIP_PYTHON");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let urls = [
        "http://a.test/",
        "http://a.test/secret/x",
        "http://a.test/secret/open/y",
        "http://a.test/blocked",
        "http://a.test/page",
        "http://a.test/page/sub",
        "http://a.test/staff",
        "http://b.test/",
    ];
    let mut warc = Vec::new();
    for (i, u) in urls.iter().enumerate() {
        let body = format!("content of {u}");
        warc.extend(crate::common::text_response(
            i,
            u,
            "2024-06-01T00:00:00Z",
            &body,
        ));
    }
    let file = d.join("a.warc");
    std::fs::write(&file, warc).unwrap();
    let rules = d.join("access-rules.aclj");
    let r = rules.to_str().unwrap();
    for args in [
        &["add", r, "http://a.test/secret", "exclude"][..],
        &["add", r, "http://a.test/secret/open", "allow"],
        &["add", r, "http://a.test/blocked", "block"],
        &["add", r, "http://a.test/page", "exclude", "--exact"],
        &["add", r, "http://a.test/staff", "block"],
        &["add", r, "http://a.test/staff", "allow", "--user", "staff"],
        &["add", r, "test,b)/", "block"],
        &["add", r, "test,b)/", "allow", "--user", "staff"],
    ] {
        let o = acl(d, args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let pywb = crate::fidelity::start_pywb_with(d, &file, |coll| {
        std::fs::create_dir_all(coll.join("acl")).unwrap();
        std::fs::copy(&rules, coll.join("acl/access-rules.aclj")).unwrap();
    });
    let s = crate::serve::Server::start(
        &[&file],
        &d.join("index.redb"),
        &[
            "--poll",
            "0",
            "--acl",
            r,
            "--acl-user-header",
            "X-Pywb-ACL-User",
        ],
    );
    let paddr = format!("127.0.0.1:{}", pywb.port);
    let lines = |body: &[u8]| {
        String::from_utf8_lossy(body)
            .lines()
            .filter(|l| l.starts_with('{'))
            .count()
    };
    let mut seen = std::collections::BTreeSet::new();
    for user in [None, Some("staff")] {
        let h: Vec<(&str, &str)> = user.map(|u| ("X-Pywb-ACL-User", u)).into_iter().collect();
        for u in urls {
            let pc = crate::serve::get(&paddr, &format!("/fid/cdx?url={u}&output=json"), &h);
            let wc = crate::serve::get(&s.addr, &format!("/archive/cdx?url={u}&output=json"), &h);
            assert_eq!(
                (wc.status, lines(&wc.body)),
                (pc.status, lines(&pc.body)),
                "CDX of {u} as {user:?}: pywb {}",
                String::from_utf8_lossy(&pc.body)
            );
            let path = format!("20240601000000id_/{u}");
            let pr = crate::serve::get(&paddr, &format!("/fid/{path}"), &h);
            let wr = crate::serve::get(&s.replay, &format!("/archive/{path}"), &h);
            assert_eq!(wr.status, pr.status, "replay of {u} as {user:?}");
            seen.insert(wr.status);
        }
    }
    // The three answers were all met.
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [200, 404, 451]);
}
