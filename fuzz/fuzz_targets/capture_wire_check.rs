//! The checks of the `capture_wire` fuzz target, shared with the replay of
//! fuzz/regressions/capture_wire/ in warchest-capture's tests
//! (crates/warchest-capture/tests/it/fuzz_regressions.rs).
//!
//! What a capture reads off the network, over any bytes: a server's HTTP
//! answer as the client and the proxy read it (interim responses set
//! aside, the head, the body as its framing ends it, forwarded without its
//! chunked coding) or a message read as a request (`read_head`,
//! `request_framing`), each read whole and through a connection handing
//! out small pieces (the first byte picks the piece size, which, the
//! method and the head limit): the same outcome both ways, a head within
//! its limit, a body within the length limit; a DNS answer (decoded
//! answers are sane: a fully qualified name of one token, one master-file
//! line each) and a response made to any query (it reads back as the
//! addresses given); FTP control replies (whole and in pieces alike, each
//! starting with its code's three digits) and passive-mode answers; the
//! capture's URL parser (what it parses prints back as the same URL) and
//! its redirect resolution.
use std::io::{BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use warchest::digest::Algorithm;
use warchest::http::PayloadDigests;
use warchest::write::CaptureLimits;
use warchest_capture::Url;
use warchest_capture::client::{
    ReadOptions, Tee, capture_message, read_head, read_response_head, request_framing,
    response_framing,
};
use warchest_capture::dns::{self, AnswerData, Lookup};
use warchest_capture::fuzzing::{Collect, Pieces, ftp_epsv, ftp_pasv, ftp_reply};

/// What reading one message gave, to compare (two an input, never
/// stored: their size does not matter).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The connection ended before any byte.
    Nothing,
    /// The head could not be read.
    HeadError,
    /// The head was read (its bytes, the interim responses' lines) but the
    /// message could not be captured.
    CaptureError(Vec<u8>, Vec<String>),
    Captured {
        head: Vec<u8>,
        interim: Vec<String>,
        block: Vec<u8>,
        len: u64,
        payload: PayloadDigests,
        truncated: bool,
        complete: bool,
        forwarded: Collect,
    },
}

/// Reads one message from `conn` as the client reads a response (or the
/// proxy a request), captures it; also returns whether its connection
/// was left reusable.
fn read_message(
    conn: &mut dyn Read,
    response: bool,
    head_only: bool,
    max_head: usize,
) -> (Outcome, bool) {
    let mut buf = Vec::new();
    let (n, interim) = if response {
        match read_response_head(conn, &mut buf, max_head) {
            Ok(Some(h)) => h,
            Ok(None) => return (Outcome::Nothing, false),
            Err(_) => return (Outcome::HeadError, false),
        }
    } else {
        match read_head(conn, &mut buf, max_head) {
            Ok(Some(n)) => (n, Vec::new()),
            Ok(None) => return (Outcome::Nothing, false),
            Err(_) => return (Outcome::HeadError, false),
        }
    };
    assert!(n <= buf.len());
    let head = buf[..n].to_vec();
    let opts = ReadOptions {
        limits: CaptureLimits {
            max_len: Some(24 << 10),
            max_time: None,
        },
        digest: Algorithm::Sha1,
        // Inputs are at most 64 KiB: spooled in memory only.
        spool_threshold: 1 << 20,
        max_head,
    };
    let method: &[u8] = if head_only { b"HEAD" } else { b"GET" };
    let mut forwarded = Collect::default();
    let captured = capture_message(
        conn,
        buf,
        n,
        |h| {
            if response {
                response_framing(h, method)
            } else {
                request_framing(h)
            }
        },
        &opts,
        &mut Tee::to(&mut forwarded),
    );
    let mut c = match captured {
        Ok(c) => c,
        Err(_) => return (Outcome::CaptureError(head, interim), false),
    };
    let mut block = Vec::new();
    c.block.read_to_end(&mut block).expect("a spool reads back");
    assert_eq!(block.len() as u64, c.len);
    assert!(block.starts_with(&head), "the block starts with the head");
    // The body is cut at the length limit.
    assert!(c.len - head.len() as u64 <= 24 << 10);
    let reusable = c.reusable;
    (
        Outcome::Captured {
            head,
            interim,
            block,
            len: c.len,
            payload: c.payload,
            truncated: c.truncated.is_some(),
            complete: c.complete,
            forwarded,
        },
        reusable,
    )
}

/// Where two outcomes differ, shortly (the bytes can be long).
fn difference(a: &Outcome, b: &Outcome) -> String {
    match (a, b) {
        (
            Outcome::Captured {
                head: h1,
                interim: i1,
                block: b1,
                len: l1,
                payload: p1,
                truncated: t1,
                complete: c1,
                forwarded: f1,
            },
            Outcome::Captured {
                head: h2,
                interim: i2,
                block: b2,
                len: l2,
                payload: p2,
                truncated: t2,
                complete: c2,
                forwarded: f2,
            },
        ) => format!(
            "heads {} and {} bytes, interim {i1:?} {i2:?}, blocks equal {}, len {l1} {l2}, payload {p1:?} {p2:?}, truncated {t1} {t2}, complete {c1} {c2}, forwarded status {:?} {:?}, {} and {} bytes",
            h1.len(),
            h2.len(),
            b1 == b2,
            f1.status,
            f2.status,
            f1.body.len(),
            f2.body.len()
        ),
        (Outcome::CaptureError(h, i), _) | (_, Outcome::CaptureError(h, i)) => {
            format!(
                "one capture failed (head {} bytes, interim {i:?}); whole: {}",
                h.len(),
                matches!(a, Outcome::CaptureError(..))
            )
        }
        _ => format!("{:?} / {:?}", short(a), short(b)),
    }
}

fn short(o: &Outcome) -> &'static str {
    match o {
        Outcome::Nothing => "nothing",
        Outcome::HeadError => "head error",
        Outcome::CaptureError(..) => "capture error",
        Outcome::Captured { .. } => "captured",
    }
}

fn http(data: &[u8], first: u8) {
    let piece = usize::from(first % 8) + 1;
    let response = first & 0x08 == 0;
    let head_only = first & 0x10 != 0;
    let max_head = 64 << ((first >> 5) % 8);
    let (whole, whole_reusable) = read_message(&mut &data[..], response, head_only, max_head);
    let (pieces, pieces_reusable) =
        read_message(&mut Pieces(data, piece), response, head_only, max_head);
    if whole != pieces {
        panic!(
            "read whole and in pieces of {piece} (response: {response}, HEAD: {head_only}, max head {max_head}): {}",
            difference(&whole, &pieces)
        );
    }
    // Read whole, more bytes past the body were received with it.
    assert!(!whole_reusable || pieces_reusable);
    if let Outcome::Captured { head, .. } = &whole {
        assert!(
            head.len() <= max_head,
            "a head of {} bytes, the limit {max_head}",
            head.len()
        );
    }
}

/// Whether a name of the DNS client's is sane: fully qualified, one
/// token, bounded.
fn sane_name(n: &str) -> bool {
    n.ends_with('.') && n.len() <= 4 * 1024 && n.bytes().all(|b| b.is_ascii_graphic())
}

fn dns(data: &[u8]) {
    if let Ok(answers) = dns::decode_response("fuzz.test", data) {
        // The header takes 12 bytes, each answer at least 11.
        assert!(12 + 11 * answers.len() <= data.len());
        for a in &answers {
            assert!(sane_name(&a.name), "{a:?}");
            if let AnswerData::Cname(c) = &a.data {
                assert!(sane_name(c), "{a:?}");
            }
        }
        let l = Lookup {
            host: "fuzz.test".into(),
            server: "127.0.0.1:53".parse().unwrap(),
            date: time::OffsetDateTime::UNIX_EPOCH,
            answers: answers.clone(),
        };
        let text = l.to_text();
        assert_eq!(text.lines().count(), answers.len() + 1, "{text:?}");
        assert!(
            text.lines().skip(1).all(|l| l.split('\t').count() == 5),
            "{text:?}"
        );
    }
    // Any bytes as a query: a response to it reads back as the addresses
    // given that fit its type, when its name has no compression pointer
    // (which would point into a header the response does not share).
    let v4 = IpAddr::V4(Ipv4Addr::new(10, 0, 0, data.first().copied().unwrap_or(1)));
    let v6 = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 7));
    let ttl = u32::from(data.get(1).copied().unwrap_or(0)) << 20 | 5;
    let addrs = [v4, v6];
    if let Some(r) = dns::encode_answer(data, &addrs, ttl) {
        let answers = dns::decode_response("fuzz.test", &r);
        if plain_question(data) {
            let answers = answers.expect("a response made to a query decodes");
            let qend = question_end(data);
            let want = match u16::from_be_bytes([data[qend], data[qend + 1]]) {
                1 => vec![v4],
                28 => vec![v6],
                _ => vec![],
            };
            let got: Vec<IpAddr> = answers
                .iter()
                .filter_map(|a| match a.data {
                    AnswerData::A(ip) => Some(IpAddr::V4(ip)),
                    AnswerData::Aaaa(ip) => Some(IpAddr::V6(ip)),
                    AnswerData::Cname(_) => None,
                })
                .collect();
            assert_eq!(got, want);
            assert!(answers.iter().all(|a| a.ttl == ttl));
        }
    }
}

/// Whether the question name at offset 12 is labels only, ending in a
/// zero byte (no compression pointer).
fn plain_question(m: &[u8]) -> bool {
    let mut i = 12;
    while let Some(&len) = m.get(i) {
        if len == 0 {
            return true;
        }
        if len & 0xc0 == 0xc0 {
            return false;
        }
        i += 1 + usize::from(len);
    }
    false
}

/// Where the question's type starts (past the name's zero byte), for a
/// [`plain_question`].
fn question_end(m: &[u8]) -> usize {
    let mut i = 12;
    while m[i] != 0 {
        i += 1 + usize::from(m[i]);
    }
    i + 1
}

/// Every reply of a control connection until one fails (each with where
/// its lines start in the log), the log, and whether the loop stopped on
/// its bound.
type Replies = (Vec<(u16, String, usize)>, Vec<u8>, bool);

fn ftp_replies(conn: &mut dyn Read, cap: usize) -> Replies {
    let mut r = BufReader::with_capacity(cap, conn);
    let mut log = Vec::new();
    let mut replies = Vec::new();
    loop {
        let at = log.len();
        match ftp_reply(&mut r, &mut log) {
            Ok((code, text)) => replies.push((code, text, at)),
            Err(_) => return (replies, log, false),
        }
        if replies.len() > 64 * 1024 {
            return (replies, log, true);
        }
    }
}

fn ftp(data: &[u8], first: u8) {
    let piece = usize::from(first % 16) + 1;
    let whole = ftp_replies(&mut &data[..], 8192);
    let pieces = ftp_replies(&mut Pieces(data, piece), piece);
    assert_eq!(whole, pieces, "in pieces of {piece}");
    let (replies, log, _) = whole;
    assert!(log.len() <= data.len());
    for (code, text, at) in &replies {
        // A reply starts with its code, three digits.
        assert_eq!(
            log.get(*at..at + 3),
            Some(format!("{code:03}").as_bytes()),
            "code {code} of {text:?}"
        );
        let _ = ftp_epsv(text);
        let _ = ftp_pasv(text);
    }
    let text = String::from_utf8_lossy(data);
    let _ = ftp_epsv(&text);
    let _ = ftp_pasv(&text);
}

fn url(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let Some(first) = lines.next() else { return };
    let Ok(u) = Url::parse(first) else { return };
    assert!(!u.host.is_empty());
    assert!(!u.host.bytes().any(|b| b.is_ascii_uppercase()), "{u:?}");
    assert!(u.path_and_query.starts_with('/'), "{u:?}");
    assert!(!u.path_and_query.contains('#'), "{u:?}");
    // What a request line and a Host field are made of: one token each.
    assert!(
        !u.path_and_query.bytes().any(|b| b <= b' ' || b == 0x7f),
        "{u:?}"
    );
    assert!(
        !u.authority().bytes().any(|b| b <= b' ' || b == 0x7f),
        "{u:?}"
    );
    let printed = u.to_string();
    let again =
        Url::parse(&printed).unwrap_or_else(|e| panic!("{first:?} printed as {printed:?}: {e}"));
    assert_eq!(
        (
            again.scheme,
            &again.userinfo,
            &again.host,
            again.port_or_default(),
            &again.path_and_query
        ),
        (
            u.scheme,
            &u.userinfo,
            &u.host,
            u.port_or_default(),
            &u.path_and_query
        ),
        "{first:?} printed as {printed:?}"
    );
    for reference in lines.take(4) {
        if let Ok(j) = u.join(reference) {
            assert!(j.path_and_query.starts_with('/'), "{j:?}");
        }
    }
}

/// The target's checks on one input.
pub fn check(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    http(rest, first);
    dns(rest);
    ftp(rest, first);
    url(rest);
}
