//! Several crawlers on one crawl: `shard = "K/N"`.
//!
//! Hosts are split by a hash of their SURT host (FNV-1a, stable across
//! machines and builds), so every URL of a host goes to one crawler, which
//! alone keeps its politeness clock and robots.txt. A crawler that finds
//! a URL of another shard hands it off: it appends a line to
//! `HANDOFF/to-J/from-K.jsonl` (its own file: no two writers share one),
//! and shard J reads every `to-J/*` file from where it last stopped
//! (offsets kept in its crawl directory, `handoff-read.json`), queueing
//! what it has not seen. The hand-off prefix is a directory every crawler
//! can write (a shared file system); docs/crawl.md says how an object
//! store prefix takes its place.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use url::Url;

use crate::uri::CrawlUri;

/// The SURT host of `url` (`org,example,www` style, as CDXJ keys write it).
pub fn surt_host(url: &Url) -> String {
    let key = warchest_index::surt::url_key(url.as_str());
    key.split(')').next().unwrap_or("").to_string()
}

/// The shard (1..=n) of `url`'s host.
pub fn shard_of(url: &Url, n: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in surt_host(url).bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % n.max(1) as u64) as u32 + 1
}

fn handoff_root(dir: &Path, handoff: Option<&Path>) -> PathBuf {
    handoff
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join("handoff"))
}

/// Writes `uri` to the inbox of its shard.
///
/// # Errors
/// The file cannot be written.
pub fn hand_off(
    dir: &Path,
    handoff: Option<&Path>,
    me: Option<(u32, u32)>,
    uri: &CrawlUri,
) -> std::io::Result<()> {
    let Some((k, n)) = me else { return Ok(()) };
    let to = shard_of(&uri.url, n);
    let d = handoff_root(dir, handoff).join(format!("to-{to}"));
    std::fs::create_dir_all(&d)?;
    let line = serde_json::json!({
        "url": uri.url.as_str(),
        "hops": uri.hops,
        "via": uri.via.as_ref().map(|v| v.as_str()),
        "seed": uri.seed,
    });
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(d.join(format!("from-{k}.jsonl")))?;
    // One write per line: whole lines, whatever reads concurrently.
    f.write_all(format!("{line}\n").as_bytes())
}

/// Reads the URIs handed off to this shard since the last call.
///
/// # Errors
/// The files cannot be read.
pub fn read_inbox(
    dir: &Path,
    handoff: Option<&Path>,
    me: (u32, u32),
) -> std::io::Result<Vec<CrawlUri>> {
    let inbox = handoff_root(dir, handoff).join(format!("to-{}", me.0));
    let state = dir.join("handoff-read.json");
    let mut offsets: BTreeMap<String, u64> = std::fs::read(&state)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(&inbox) else {
        return Ok(out);
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let mut f = std::fs::File::open(e.path())?;
        let from = offsets.get(&name).copied().unwrap_or(0);
        f.seek(SeekFrom::Start(from))?;
        let mut text = Vec::new();
        // Bounded per call; the rest next time.
        f.take(16 << 20).read_to_end(&mut text)?;
        // Only whole lines: a line being written is read next time.
        let end = text
            .iter()
            .rposition(|&b| b == b'\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        for line in text[..end].split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            let Some(url) = v["url"].as_str().and_then(|u| Url::parse(u).ok()) else {
                continue;
            };
            out.push(CrawlUri {
                url,
                hops: v["hops"].as_str().unwrap_or("").to_string(),
                via: v["via"].as_str().and_then(|u| Url::parse(u).ok()),
                seed: v["seed"].as_u64().unwrap_or(0) as u32,
            });
        }
        offsets.insert(name, from + end as u64);
    }
    let tmp = state.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec(&offsets).unwrap_or_default())?;
    std::fs::rename(&tmp, &state)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_one_shard() {
        let a = Url::parse("http://www.example.org/a").unwrap();
        let b = Url::parse("https://www.example.org/b?x").unwrap();
        for n in 1..5 {
            assert_eq!(shard_of(&a, n), shard_of(&b, n));
            assert!((1..=n).contains(&shard_of(&a, n)));
        }
        let hosts: std::collections::HashSet<u32> = (0..50)
            .map(|i| shard_of(&Url::parse(&format!("http://h{i}.test/")).unwrap(), 2))
            .collect();
        assert_eq!(hosts.len(), 2, "hosts spread over both shards");
    }

    #[test]
    fn handed_off_uris_are_read_once() {
        let d = tempfile::tempdir().unwrap();
        let u = Url::parse("http://h1.test/x").unwrap();
        let to = shard_of(&u, 2);
        let from = 3 - to;
        let uri = CrawlUri::seed(Url::parse("http://h0.test/").unwrap(), 0)
            .child(u, crate::uri::Hop::Link);
        hand_off(d.path(), None, Some((from, 2)), &uri).unwrap();
        let got = read_inbox(d.path(), None, (to, 2)).unwrap();
        assert_eq!(got, vec![uri]);
        assert!(read_inbox(d.path(), None, (to, 2)).unwrap().is_empty());
    }
}
