//! `warchest crawl --shard K/N` (issue 29, "Several machines"): two
//! crawlers at once on one machine, handing URLs off through a directory
//! and through an S3 prefix (moto), each exiting 0 by itself when the
//! whole crawl is done, and fetching together what one crawler fetches.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use warchest_crawl::shard::shard_of;
use warchest_crawl::testweb::{TestWeb, TestWebConfig};

use crate::common::{bin, run};
use crate::remote::servers::Moto;

fn web() -> TestWeb {
    let w = TestWeb::start(TestWebConfig {
        sites: 4,
        pages: 6,
        special: false,
        ..TestWebConfig::default()
    })
    .unwrap();
    let shards: BTreeSet<u32> = w.seeds().iter().map(|u| shard_of(u, 2)).collect();
    assert_eq!(shards.len(), 2, "the sites fall in both shards");
    w
}

fn args(w: &TestWeb, dir: &std::path::Path) -> Vec<String> {
    let mut a = vec!["crawl".to_string()];
    a.extend(w.seeds().iter().map(|u| u.to_string()));
    a.push("-o".into());
    a.push(dir.display().to_string());
    for k in ["--delay-factor", "--min-delay", "--max-delay"] {
        a.push(k.into());
        a.push("0".into());
    }
    a.push("--resolve-only".into());
    for (h, addr) in w.hosts() {
        a.push("--resolve".into());
        a.push(format!("{h}:{}", addr.ip()));
    }
    a
}

/// The URLs served, robots.txt aside (each crawler asks for it), each
/// once.
fn served_once(w: &TestWeb) -> BTreeSet<String> {
    let twice: Vec<_> = w
        .served_twice()
        .into_keys()
        .filter(|u| !u.ends_with("/robots.txt"))
        .collect();
    assert!(twice.is_empty(), "fetched twice: {twice:?}");
    w.served_urls().into_iter().collect()
}

/// Runs shards 1/2 and 2/2 at once with `handoff`; both must exit 0 by
/// themselves within 60 s.
fn two_shards(w: &TestWeb, handoff: &str, env: &[(&'static str, String)]) -> BTreeSet<String> {
    let out = tempfile::tempdir().unwrap();
    let mut children: Vec<_> = (1..=2)
        .map(|k| {
            let mut c = bin();
            c.args(args(w, &out.path().join(format!("s{k}"))))
                .args(["--shard", &format!("{k}/2"), "--handoff", handoff])
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            for (k, v) in env {
                c.env(k, v);
            }
            c.spawn().unwrap()
        })
        .collect();
    let t0 = Instant::now();
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        if t0.elapsed() > Duration::from_secs(60) {
            for c in &mut children {
                let _ = c.kill();
            }
            panic!("the shards did not finish by themselves in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for (k, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "shard {}: {}",
            k + 1,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    served_once(w)
}

fn one_crawler(w: &TestWeb) -> BTreeSet<String> {
    let out = tempfile::tempdir().unwrap();
    let (code, _, err) = run(bin().args(args(w, &out.path().join("one"))));
    assert_eq!(code, 0, "{err}");
    served_once(w)
}

#[test]
fn two_shards_through_a_directory_finish_together_with_one_crawlers_urls() {
    let w = web();
    let one = one_crawler(&w);
    for u in w.site_urls() {
        assert!(one.contains(&u), "{u} not fetched");
    }
    w.clear();
    let out = tempfile::tempdir().unwrap();
    let handoff = out.path().join("handoff");
    let two = two_shards(&w, &handoff.display().to_string(), &[]);
    assert_eq!(two, one);
    // Batches went both ways, and both statuses say idle.
    for k in 1..=2 {
        let to = handoff.join(format!("to-{k}/from-{}", 3 - k));
        assert!(
            std::fs::read_dir(&to).unwrap().count() > 0,
            "{}",
            to.display()
        );
        let st = std::fs::read_to_string(handoff.join(format!("status/shard-{k}.json"))).unwrap();
        assert!(st.contains("\"idle\""), "{st}");
    }
}

#[test]
fn two_shards_through_an_s3_prefix() {
    let moto = Moto::start();
    moto.upload("bucket", &[]);
    let w = web();
    let two = two_shards(&w, "s3://bucket/crawl/handoff", &moto.env());
    assert_eq!(two.len(), w.served_urls().len());
    for u in w.site_urls() {
        assert!(two.contains(&u), "{u} not fetched");
    }
    // The batches and statuses are objects under the prefix.
    let o = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import boto3\ns3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='testing', aws_secret_access_key='testing', region_name='us-east-1')\nfor o in s3.list_objects_v2(Bucket='bucket', Prefix='crawl/handoff/')['Contents']: print(o['Key'])",
                moto.endpoint()
            ),
        ])
        .output()
        .unwrap();
    let keys = String::from_utf8_lossy(&o.stdout);
    for k in [
        "crawl/handoff/status/shard-1.json",
        "crawl/handoff/status/shard-2.json",
        "crawl/handoff/to-1/from-2/0000000001.jsonl",
        "crawl/handoff/to-2/from-1/0000000001.jsonl",
    ] {
        assert!(keys.lines().any(|l| l == k), "{k} not in {keys}");
    }
}
