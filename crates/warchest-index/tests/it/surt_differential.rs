//! SURT keys against the python `surt` package (0.3.1, what pywb and
//! cdxj-indexer use): every target URI of every fixture, a list of tricky
//! URLs and combinations of hosts, paths and queries.
//!
//! Set WARCHEST_SKIP_PYTHON=1 to skip where Python or surt is missing; CI
//! never sets it.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use warchest::archive::Reader;
use warchest_index::surt::surt;

/// `surt.surt(url)` for each URL, `Err` with the exception name.
fn python_surt(urls: &[String]) -> Vec<Result<String, String>> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/differential/surt_keys.py"
    );
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    let mut input = String::new();
    for u in urls {
        input.push_str(&serde_json::to_string(u).expect("json"));
        input.push('\n');
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("python output");
    writer.join().expect("writer").expect("write urls");
    assert!(out.status.success(), "surt_keys.py failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            match v.get("key").and_then(|k| k.as_str()) {
                Some(k) => Ok(k.to_string()),
                None => Err(v["error"].as_str().unwrap_or("?").to_string()),
            }
        })
        .collect()
}

const TRICKY: &[&str] = &[
    "http://www.example.com/",
    "HTTP://WWW.EXAMPLE.COM/INDEX.HTML",
    "https://www.example.com:443/a",
    "https://www.example.com:8443/a",
    "http://www.example.com:80",
    "http://www.example.com:0080/",
    "http://www.example.com:/",
    "http://www.example.com::/",
    "http://www.example.com:99999/",
    "http://www.example.com:-1/",
    "http://www.example.com: 80/",
    "http://user@www.example.com/",
    "http://user:pass@www.example.com:8080/",
    "http://@example.com/",
    "http://a@b@example.com/",
    "www.example.com",
    "example.com/path?q=1",
    "//example.com/x",
    "/relative/path",
    "?q=only",
    "#frag",
    "mailto:someone@example.com",
    "javascript:void(0)",
    "urn:uuid:1234-ABCD",
    "dns:WWW.Example.COM",
    "whois://whois.example.com/x",
    "ftp://ftp.example.com:21/pub/",
    "ftp://ftp.example.com/pub/",
    "file:///C:/Windows/x.txt",
    "filedesc://IA-2006.arc",
    "filedescription",
    "data:text/plain;base64,SGVsbG8=",
    "http://http://www.example.com/",
    "http://https://www.example.com/",
    "https://http://www.example.com/",
    "http:www.example.com/",
    "http:/www.example.com/",
    "http:////www.example.com/a/",
    "https:///",
    "http://",
    "http://?",
    "http://#",
    "http://example.com?",
    "http://example.com/?",
    "http://example.com/#",
    "http://example.com/?#",
    "http://example.com/a?b#c?d",
    "http://www2.example.com/",
    "http://www10.example.com/",
    "http://wwwa.example.com/",
    "http://www.www.example.com/",
    "http://www./",
    "http://www/",
    "http://.example.com./",
    "http://example..com/",
    "http://example...com/",
    "http://..../",
    "http://example.com./",
    "http://EXAMPLE.com/A/B/C/",
    "http://example.com/a/b/../../c",
    "http://example.com/../a",
    "http://example.com/./a/./b/.",
    "http://example.com/a/..",
    "http://example.com//a///b//",
    "http://example.com/a%2Fb",
    "http://example.com/a%2fb%20c",
    "http://example.com/%7Euser",
    "http://example.com/%25",
    "http://example.com/%2525",
    "http://example.com/%",
    "http://example.com/%zz",
    "http://example.com/%4",
    "http://example.com/a b",
    "http://example.com/a\tb\nc\rd",
    "  http://example.com/trim  ",
    "\u{b}http://example.com/vt",
    "http://example.com/\u{7f}",
    "http://example.com/#a#b",
    "http://example.com/a#b?c",
    "http://example.com/é",
    "http://example.com/%C3%A9",
    "http://example.com/?é=ü",
    "http://example.com/?q=%E2%82%AC+x",
    "http://example.com/a\\b",
    "http://example.com/\"quoted\"",
    "http://example.com/<tag>",
    "http://example.com/{x}|^`",
    "http://example.com/?b=2&a=1",
    "http://example.com/?b=2&a=1&a",
    "http://example.com/?a=&a",
    "http://example.com/?&&",
    "http://example.com/?=",
    "http://example.com/?a=1=2",
    "http://example.com/?B=1&a=2",
    "http://example.com/?x=%41&y=%61",
    "http://example.com/?jsessionid=0123456789abcdef0123456789abcdef",
    "http://example.com/?a=1&jsessionid=0123456789ABCDEF0123456789ABCDEF&b=2",
    "http://example.com/?JSESSIONID=0123456789abcdef0123456789abcdef&b=2",
    "http://example.com/?jsessionid=0123456789abcdef0123456789abcde",
    "http://example.com/?jsessionid=0123456789abcdef0123456789abcdefg",
    "http://example.com/?phpsessid=0123456789abcdef0123456789abcdef&x",
    "http://example.com/?sid=0123456789abcdef0123456789abcdef&",
    "http://example.com/?foosid=0123456789abcdef0123456789abcdef",
    "http://example.com/?ASPSESSIONIDABCDEFGH=ABCDEFGHIJKLMNOPQRSTUVWX&z=1",
    "http://example.com/?aspsessionidabcdefgh=abcdefghijklmnopqrstuvwx",
    "http://example.com/?cfid=123&cftoken=456",
    "http://example.com/?a=1&cfid=123&cftoken=456&b=2",
    "http://example.com/?cfid=1&cftoken=2&cfid=3&cftoken=4",
    "http://example.com/?cfid=&cftoken=4",
    "http://example.com/(S(abcdefghijklmnopqrstuvwx))/page.aspx",
    "http://example.com/x/(a(abcdefghijklmnopqrstuvwx)b(abcdefghijklmnopqrstuvwx))/p.aspx?q=1",
    "http://example.com/(abcdefghijklmnopqrstuvwx)/default.aspx",
    "http://example.com/(abcdefghijklmnopqrstuvwx)/default.asp",
    "http://example.com/(abcdefghijklmnopqrstuvwx)/.aspx",
    "http://example.com/a/(abcdefghijklmnopqrstuvwx)/b/(abcdefghijklmnopqrstuvwx)/c.aspx",
    "http://127.0.0.1/",
    "http://127.0.0.1:8080/x",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://017700000001/",
    "http://0177.0.0.1/",
    "http://0177.1/",
    "http://127.1/",
    "http://127.0.1/",
    "http://256.1.1.1/",
    "http://1.2.3.4.5/",
    "http://01.1.1.1/",
    "http://08.1.1.1/",
    "http://1.2.3.04/",
    "http://00000000000000000000000000000000001/",
    "http://99999999999999999999/",
    "http://[::1]/",
    "http://[2001:DB8::1]:8080/a",
    "http://[fe80::1%25eth0]/",
    "http://[::1/",
    "http://%77%77%77.example.com/",
    "http://ex%41mple.com/",
    "http://ex%2Eample.com/",
    "http://bücher.de/",
    "http://BÜCHER.DE/",
    "http://www.bücher.de/",
    "http://straße.de/",
    "http://ÄÖÜ.example/",
    "http://例子.测试/",
    "http://例子。测试/",
    "http://日本語.jp/パス?クエリ=値",
    "http://xn--bcher-kva.de/",
    "http://xn--bcher-kva.bücher.de/",
    "http://ü.xn--ü.de/",
    "http://пример.рф/",
    "http://مثال.إختبار/",
    "http://a‌b.com/",
    "http://ＥＸＡＭＰＬＥ.com/",
    "http://😀.example/",
    "http://\u{ad}soft.example/",
    "http://ü..example/",
    "http://ü.example../",
    "http://%C3%BC.example/",
    "http://%FC.example/",
    "http://\u{e9}\u{301}.example/",
    "http://a.b.c.d.e.f.example.co.uk/",
    "http://localhost/",
    "http://LOCALHOST:80/",
    "http://example.com/a;b=c/d",
    "http://example.com/index.php?title=Main_Page&action=edit",
    "http://example.com/search?q=a+b&q=a%20b",
    "http://example.com/?%3D=%26",
    "http://example.com/?%26=1&%3D=2",
    "metadata://gnu.org/software/wget/warc/MANIFEST.txt",
    "urn:X-wpull:log",
    "clientdns:example.com",
    "http://example.com:80:80/",
    "http://[::1]:80/",
    "https://[::1]:443/",
    "x-y+z.w:opaque",
    "1http://example.com/",
    "http//example.com/",
    "",
    " ",
    "\t\r\n",
];

#[test]
fn surt_matches_python_surt() {
    if !common::python_has("surt") {
        return;
    }
    let mut urls: Vec<String> = TRICKY.iter().map(|s| s.to_string()).collect();
    // Every target URI of every fixture.
    for path in common::warc_fixtures() {
        let Ok(mut reader) = Reader::open(&path) else {
            continue;
        };
        while let Ok(Some(rec)) = reader.next_record() {
            if let Some(u) = rec.header().target_uri() {
                urls.push(u.into_owned());
            }
            if rec.finish().is_err() {
                break;
            }
        }
    }
    // Combinations.
    let hosts = [
        "www.Example.com",
        "EXAMPLE.com:8080",
        "127.0.0.1",
        "bücher.de",
        "",
        "www1.a.b",
    ];
    let paths = [
        "",
        "/",
        "/A/./b/../C/",
        "/x%2541%zz",
        "/(abcdefghijklmnopqrstuvwx)/d.aspx",
    ];
    let queries = [
        "",
        "?",
        "?b=1&A=2&a",
        "?sid=0123456789abcdef0123456789abcdef&x=%20y",
    ];
    for scheme in ["http://", "https://", "ftp://", "dns:"] {
        for h in hosts {
            for p in paths {
                for q in queries {
                    urls.push(format!("{scheme}{h}{p}{q}#f"));
                }
            }
        }
    }
    // Random URLs over an alphabet of the characters the rules care about
    // (fixed seed: the same list every run).
    let pieces = [
        "a",
        "Z",
        "0",
        "9",
        ".",
        "..",
        "-",
        "_",
        "~",
        "%",
        "%25",
        "%41",
        "%2e",
        "%zz",
        "/",
        "//",
        ":",
        ":80",
        ":443",
        "?",
        "#",
        "&",
        "=",
        ";",
        "@",
        "[",
        "]",
        "!",
        "(",
        ")",
        " ",
        "\t",
        "é",
        "例",
        "www.",
        "www1.",
        "sid=0123456789abcdef0123456789abcdef",
        "cfid=1&cftoken=2",
        "(abcdefghijklmnopqrstuvwx)/",
        ".aspx",
        "xn--",
        "0x1",
        "017",
        "1.2",
        "255",
    ];
    let starts = [
        "", "http://", "https://", "HTTP://", "dns:", "ftp://", "http:/", "urn:",
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    for _ in 0..3000 {
        let mut u = starts[next(starts.len())].to_string();
        for _ in 0..1 + next(12) {
            u.push_str(pieces[next(pieces.len())]);
        }
        urls.push(u);
    }
    assert!(urls.len() > 4000, "{} urls", urls.len());
    let want = python_surt(&urls);
    assert_eq!(want.len(), urls.len());
    let mut failures = Vec::new();
    for (u, w) in urls.iter().zip(&want) {
        let got = surt(u);
        let same = match (&got, w) {
            (Ok(g), Ok(w)) => g == w,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !same {
            failures.push(format!("{u:?}: warchest {got:?}, python {w:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
