//! Any bytes as a pywb access control file (`serve --acl`): parsed or
//! refused with the line named, never a panic; once parsed, every line's
//! key and its prefixes and extensions judged for the public and for a
//! user, with any timestamp, and the region of what each is allowed
//! (`Viewer::allowed`, what full-text search selects by) holding exactly
//! the captures judged allow. A rule file of one undated rule for everyone
//! gives that rule's access to its own key.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::http::date::{pad_timestamp, timestamp_seconds};
use warchest_replay::access::{Access, AccessRules, Verdict};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let rules = match AccessRules::parse(&text, "f.aclj") {
        Ok(r) => r,
        Err(e) => {
            assert!(e.to_string().contains("f.aclj:"), "{e}");
            return;
        }
    };
    let ts = text
        .bytes()
        .filter(u8::is_ascii_digit)
        .take(14)
        .map(char::from)
        .collect::<String>();
    let at = timestamp_seconds(&pad_timestamp(&ts));
    for who in [rules.viewer(None), rules.viewer(Some("staff"))] {
        let region = who.allowed();
        for line in text.lines().take(64) {
            let key = line.split(' ').next().unwrap_or("");
            let key = key.strip_suffix("###").unwrap_or(key);
            for k in [
                key,
                key.get(..key.len() / 2).unwrap_or(""),
                &format!("{key}/x"),
                "",
            ] {
                let v = who.verdict(k, &ts);
                if let Some(r) = &region {
                    assert_eq!(r.contains(k, at), v == Verdict::Allow, "{k:?} at {ts:?}");
                }
            }
        }
    }
    // One undated rule for everyone: its access, at its own key.
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if let [line] = lines[..]
        && let Some((key, rest)) = line.split_once(' ')
        && let Some((_, json)) = rest.trim_start().split_once(' ')
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(json.trim())
        && v.as_object()
            .is_some_and(|o| o.keys().all(|k| k == "access" || k == "url"))
        && let Some(access) = v["access"].as_str().and_then(Access::parse)
    {
        let key = if key == "*," {
            "org,any)/"
        } else {
            key.strip_suffix("###").unwrap_or(key)
        };
        let want = match access {
            Access::Allow | Access::AllowIgnoreEmbargo => Verdict::Allow,
            Access::Block => Verdict::Block,
            Access::Exclude => Verdict::Exclude,
        };
        assert_eq!(rules.viewer(None).verdict(key, &ts), want, "{line}");
    }
});
