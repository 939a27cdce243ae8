//! Host lookups a capture records: a small DNS client over UDP (A, then
//! AAAA when there is no A record) whose answers, with their TTLs, become a
//! `dns:` record in the RFC 2540 text form Heritrix writes.
//!
//! Without a DNS server to ask (none given, none in /etc/resolv.conf, or no
//! answer), the system resolver is used and no `dns:` record is written,
//! since its answer carries no TTL or server to record.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::CaptureError;

/// One answer record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Owner name, fully qualified (ends with `.`).
    pub name: String,
    /// Time to live, seconds.
    pub ttl: u32,
    /// The data.
    pub data: AnswerData,
}

/// The data of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerData {
    /// An IPv4 address.
    A(Ipv4Addr),
    /// An IPv6 address.
    Aaaa(Ipv6Addr),
    /// An alias, fully qualified.
    Cname(String),
}

/// A lookup made with the DNS client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The host asked about.
    pub host: String,
    /// The server that answered.
    pub server: SocketAddr,
    /// When it answered.
    pub date: time::OffsetDateTime,
    /// The answers, in the order received (A or AAAA, and CNAMEs).
    pub answers: Vec<Answer>,
}

impl Lookup {
    /// The addresses among the answers.
    pub fn addresses(&self) -> Vec<IpAddr> {
        self.answers
            .iter()
            .filter_map(|a| match a.data {
                AnswerData::A(ip) => Some(IpAddr::V4(ip)),
                AnswerData::Aaaa(ip) => Some(IpAddr::V6(ip)),
                AnswerData::Cname(_) => None,
            })
            .collect()
    }

    /// The `text/dns` block: the 14-digit date of the lookup, then one
    /// master-file line per answer (RFC 2540 / RFC 1035 section 5), as
    /// Heritrix writes them.
    pub fn to_text(&self) -> String {
        let fmt = time::macros::format_description!("[year][month][day][hour][minute][second]");
        let mut s = self.date.format(&fmt).unwrap_or_default();
        s.push('\n');
        for a in &self.answers {
            let (t, d) = match &a.data {
                AnswerData::A(ip) => ("A", ip.to_string()),
                AnswerData::Aaaa(ip) => ("AAAA", ip.to_string()),
                AnswerData::Cname(n) => ("CNAME", n.clone()),
            };
            let _ = writeln!(s, "{}\t{}\tIN\t{t}\t{d}", a.name, a.ttl);
        }
        s
    }
}

/// How hosts are resolved.
#[derive(Debug, Clone, Default)]
pub struct ResolverOptions {
    /// The DNS server to ask; `None`: the first `nameserver` of
    /// /etc/resolv.conf.
    pub server: Option<SocketAddr>,
    /// Fixed answers (`--resolve HOST=ADDR`): no lookup, no record.
    pub overrides: HashMap<String, Vec<IpAddr>>,
    /// Per query (default 5 s).
    pub timeout: Option<Duration>,
    /// Only addresses of 127.0.0.0/8 are answered ([`test_loopback`]); a
    /// host with none is an error. A crawl's `resolve-only`: the crawl's
    /// HTTP client and a browser's recording proxy both resolve with
    /// these options, so `localhost` reaches 127.0.0.1 and never `::1`.
    pub loopback_only: bool,
}

/// Whether `ip` is in 127.0.0.0/8 (or is such an address mapped into
/// IPv6, `::ffff:127.x.y.z`): the only addresses a `resolve-only` crawl
/// reaches ([`ResolverOptions::loopback_only`]). `::1` is loopback too but
/// is left out, so that one rule, 127.0.0.0/8, says what a crawl under
/// test may reach.
pub fn test_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// A resolution: the addresses and, when the DNS client made it, the lookup.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Addresses to connect to.
    pub addrs: Vec<IpAddr>,
    /// The lookup to record.
    pub lookup: Option<Arc<Lookup>>,
}

/// Resolves hosts, each once per run.
pub struct Resolver {
    opts: ResolverOptions,
    server: Option<SocketAddr>,
    cache: Mutex<HashMap<String, Resolved>>,
}

impl Resolver {
    /// A resolver.
    pub fn new(opts: ResolverOptions) -> Resolver {
        let server = opts.server.or_else(system_nameserver);
        Resolver {
            opts,
            server,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The addresses of `host` (an IP literal is its own address), held
    /// to 127.0.0.0/8 with [`ResolverOptions::loopback_only`].
    ///
    /// # Errors
    /// The host has no address (none in 127.0.0.0/8, when held to it).
    pub fn resolve(&self, host: &str) -> Result<Resolved, CaptureError> {
        let mut r = self.lookup(host)?;
        if self.opts.loopback_only {
            r.addrs.retain(|a| test_loopback(*a));
            if r.addrs.is_empty() {
                return Err(CaptureError::Dns(format!(
                    "{host}: no address in 127.0.0.0/8 (resolve-only)"
                )));
            }
        }
        Ok(r)
    }

    fn lookup(&self, host: &str) -> Result<Resolved, CaptureError> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(Resolved {
                addrs: vec![ip],
                lookup: None,
            });
        }
        // RFC 6761 section 6.3: localhost is loopback, never asked about.
        if host == "localhost" || host.ends_with(".localhost") {
            return Ok(Resolved {
                addrs: vec![
                    IpAddr::V4(Ipv4Addr::LOCALHOST),
                    IpAddr::V6(Ipv6Addr::LOCALHOST),
                ],
                lookup: None,
            });
        }
        if let Some(a) = self.opts.overrides.get(host) {
            return Ok(Resolved {
                addrs: a.clone(),
                lookup: None,
            });
        }
        if let Some(r) = self.cache.lock().ok().and_then(|c| c.get(host).cloned()) {
            return Ok(r);
        }
        let timeout = self.opts.timeout.unwrap_or(Duration::from_secs(5));
        let mut resolved = None;
        if let Some(server) = self.server {
            match lookup(host, server, timeout) {
                Ok(l) if !l.addresses().is_empty() => {
                    resolved = Some(Resolved {
                        addrs: l.addresses(),
                        lookup: Some(Arc::new(l)),
                    })
                }
                Ok(_) => {
                    return Err(CaptureError::Dns(format!("{host}: no address")));
                }
                Err(e) => tracing::warn!("{e}; using the system resolver"),
            }
        }
        let resolved = match resolved {
            Some(r) => r,
            None => {
                let addrs: Vec<IpAddr> = (host, 0)
                    .to_socket_addrs()
                    .map_err(|e| CaptureError::Dns(format!("{host}: {e}")))?
                    .map(|a| a.ip())
                    .collect();
                if addrs.is_empty() {
                    return Err(CaptureError::Dns(format!("{host}: no address")));
                }
                Resolved {
                    addrs,
                    lookup: None,
                }
            }
        };
        if let Ok(mut c) = self.cache.lock() {
            c.insert(host.to_string(), resolved.clone());
        }
        Ok(resolved)
    }
}

fn system_nameserver() -> Option<SocketAddr> {
    let text = std::fs::read_to_string("/etc/resolv.conf").ok()?;
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some("nameserver"))
            .then(|| w.next()?.parse::<IpAddr>().ok())
            .flatten()
            .map(|ip| SocketAddr::new(ip, 53))
    })
}

/// Asks `server` for the A records of `host`, then AAAA when there are none.
///
/// # Errors
/// No answer in time, or an answer that is not a valid reply to the query.
pub fn lookup(host: &str, server: SocketAddr, timeout: Duration) -> Result<Lookup, CaptureError> {
    let mut answers = query(host, 1, server, timeout)?;
    if !answers.iter().any(|a| matches!(a.data, AnswerData::A(_))) {
        let more = query(host, 28, server, timeout)?;
        if more.iter().any(|a| matches!(a.data, AnswerData::Aaaa(_))) {
            answers = more;
        }
    }
    Ok(Lookup {
        host: host.to_string(),
        server,
        date: time::OffsetDateTime::now_utc(),
        answers,
    })
}

fn dns_err(host: &str, why: impl std::fmt::Display) -> CaptureError {
    CaptureError::Dns(format!("{host}: {why}"))
}

/// The query message for `host`, type `qtype`, with id `id`.
pub fn encode_query(host: &str, qtype: u16, id: u16) -> Result<Vec<u8>, CaptureError> {
    let mut m = Vec::with_capacity(32 + host.len());
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in host.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(dns_err(host, "not a host name"));
        }
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    Ok(m)
}

fn query(
    host: &str,
    qtype: u16,
    server: SocketAddr,
    timeout: Duration,
) -> Result<Vec<Answer>, CaptureError> {
    let id = (uuid::Uuid::new_v4().as_u128() & 0xffff) as u16;
    let msg = encode_query(host, qtype, id)?;
    let bind: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind).map_err(|e| dns_err(host, e))?;
    sock.set_read_timeout(Some(timeout))
        .map_err(|e| dns_err(host, e))?;
    sock.connect(server).map_err(|e| dns_err(host, e))?;
    let mut buf = [0u8; 4096];
    // Two tries: UDP may lose the first.
    for _ in 0..2 {
        sock.send(&msg).map_err(|e| dns_err(host, e))?;
        loop {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    if n >= 2 && buf[..2] == id.to_be_bytes() {
                        // TC: the answer did not fit a datagram; ask over
                        // TCP (RFC 7766).
                        if n > 2 && buf[2] & 0x02 != 0 {
                            return query_tcp(host, &msg, id, server, timeout);
                        }
                        return decode_response(host, &buf[..n]);
                    }
                    // Another query's late answer: keep waiting.
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break;
                }
                Err(e) => return Err(dns_err(host, e)),
            }
        }
    }
    Err(dns_err(host, format!("no answer from {server}")))
}

/// The query over TCP: each message preceded by its 16-bit length.
fn query_tcp(
    host: &str,
    msg: &[u8],
    id: u16,
    server: SocketAddr,
    timeout: Duration,
) -> Result<Vec<Answer>, CaptureError> {
    use std::io::{Read, Write};
    let mut s =
        std::net::TcpStream::connect_timeout(&server, timeout).map_err(|e| dns_err(host, e))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| dns_err(host, e))?;
    let mut out = (msg.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(msg);
    s.write_all(&out).map_err(|e| dns_err(host, e))?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(|e| dns_err(host, e))?;
    // At most 65535 bytes: the length is 16 bits.
    let mut m = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut m).map_err(|e| dns_err(host, e))?;
    if m.len() < 2 || m[..2] != id.to_be_bytes() {
        return Err(dns_err(host, "TCP answer to another query"));
    }
    decode_response(host, &m)
}

/// Parses a response message: its answers of type A, AAAA and CNAME.
///
/// # Errors
/// A failure code, or a message cut short or malformed.
pub fn decode_response(host: &str, m: &[u8]) -> Result<Vec<Answer>, CaptureError> {
    let short = || dns_err(host, "malformed DNS answer");
    let u16_at = |i: usize| -> Result<u16, CaptureError> {
        Ok(u16::from_be_bytes([
            *m.get(i).ok_or_else(short)?,
            *m.get(i + 1).ok_or_else(short)?,
        ]))
    };
    if m.len() < 12 {
        return Err(short());
    }
    let rcode = m[3] & 0x0f;
    if m[2] & 0x80 == 0 {
        return Err(dns_err(host, "not a response"));
    }
    if rcode == 3 {
        return Err(dns_err(host, "no such host (NXDOMAIN)"));
    }
    if rcode != 0 {
        return Err(dns_err(host, format!("server failure (rcode {rcode})")));
    }
    let qd = u16_at(4)?;
    let an = u16_at(6)?;
    let mut i = 12;
    for _ in 0..qd {
        let (_, next) = read_name(m, i).ok_or_else(short)?;
        i = next + 4;
    }
    let mut out = Vec::new();
    for _ in 0..an {
        let (name, next) = read_name(m, i).ok_or_else(short)?;
        i = next;
        let rtype = u16_at(i)?;
        let ttl = u32::from(u16_at(i + 4)?) << 16 | u32::from(u16_at(i + 6)?);
        let rdlen = usize::from(u16_at(i + 8)?);
        let rd = i + 10;
        let data = m.get(rd..rd + rdlen).ok_or_else(short)?;
        let data = match (rtype, data.len()) {
            (1, 4) => Some(AnswerData::A(Ipv4Addr::new(
                data[0], data[1], data[2], data[3],
            ))),
            (28, 16) => {
                let mut a = [0u8; 16];
                a.copy_from_slice(data);
                Some(AnswerData::Aaaa(Ipv6Addr::from(a)))
            }
            (5, _) => Some(AnswerData::Cname(read_name(m, rd).ok_or_else(short)?.0)),
            _ => None,
        };
        if let Some(data) = data {
            out.push(Answer { name, ttl, data });
        }
        i = rd + rdlen;
    }
    Ok(out)
}

/// A possibly compressed name at `i`: (the name with a final `.`, where
/// the name's bytes end at `i`). Pointers are followed a bounded number of
/// times, so a loop in a hostile message ends.
fn read_name(m: &[u8], mut i: usize) -> Option<(String, usize)> {
    let mut name = String::new();
    let mut end = None;
    let mut jumps = 0;
    loop {
        let len = *m.get(i)? as usize;
        if len == 0 {
            i += 1;
            break;
        }
        if len & 0xc0 == 0xc0 {
            let p = ((len & 0x3f) << 8) | *m.get(i + 1)? as usize;
            end.get_or_insert(i + 2);
            jumps += 1;
            if jumps > 32 {
                return None;
            }
            i = p;
            continue;
        }
        let label = m.get(i + 1..i + 1 + len)?;
        for &b in label {
            // Keep the text one token: escape what master files escape.
            if b.is_ascii_graphic() && b != b'.' && b != b'\\' {
                name.push(b as char);
            } else {
                let _ = write!(name, "\\{b:03}");
            }
        }
        name.push('.');
        if name.len() > 1024 {
            return None;
        }
        i += 1 + len;
    }
    if name.is_empty() {
        name.push('.');
    }
    Some((name, end.unwrap_or(i)))
}

/// A response to `query` answering with `addrs` (TTL `ttl`): for tests
/// and the tiny responders they start.
pub fn encode_answer(query: &[u8], addrs: &[IpAddr], ttl: u32) -> Option<Vec<u8>> {
    if query.len() < 12 {
        return None;
    }
    let (_, qend) = read_name(query, 12)?;
    let qtype = u16::from_be_bytes([*query.get(qend)?, *query.get(qend + 1)?]);
    let question = query.get(12..qend + 4)?;
    let fits: Vec<&IpAddr> = addrs
        .iter()
        .filter(|a| matches!((a, qtype), (IpAddr::V4(_), 1) | (IpAddr::V6(_), 28)))
        .collect();
    let mut m = Vec::new();
    m.extend_from_slice(&query[..2]);
    m.extend_from_slice(&[0x81, 0x80, 0, 1]);
    m.extend_from_slice(&(fits.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(question);
    for a in fits {
        m.extend_from_slice(&[0xc0, 12]);
        m.extend_from_slice(&qtype.to_be_bytes());
        m.extend_from_slice(&[0, 1]);
        m.extend_from_slice(&ttl.to_be_bytes());
        match a {
            IpAddr::V4(v) => {
                m.extend_from_slice(&[0, 4]);
                m.extend_from_slice(&v.octets());
            }
            IpAddr::V6(v) => {
                m.extend_from_slice(&[0, 16]);
                m.extend_from_slice(&v.octets());
            }
        }
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held to 127.0.0.0/8, `localhost` is 127.0.0.1 only, and `::1` is
    /// refused (the crawl's `resolve-only`, for its client and its
    /// browser's proxy alike); without, `localhost` is both.
    #[test]
    fn loopback_only_keeps_127_0_0_0_8() {
        let held = Resolver::new(ResolverOptions {
            loopback_only: true,
            ..ResolverOptions::default()
        });
        let r = held.resolve("localhost").unwrap();
        assert_eq!(r.addrs, vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        assert!(
            held.resolve("a.localhost")
                .unwrap()
                .addrs
                .iter()
                .all(|a| a.is_ipv4())
        );
        let e = held.resolve("::1").unwrap_err().to_string();
        assert!(e.contains("127.0.0.0/8"), "{e}");
        assert_eq!(held.resolve("127.0.0.2").unwrap().addrs.len(), 1);
        let free = Resolver::new(ResolverOptions::default());
        assert!(
            free.resolve("localhost")
                .unwrap()
                .addrs
                .contains(&IpAddr::V6(Ipv6Addr::LOCALHOST))
        );
        assert!(test_loopback("::ffff:127.0.0.3".parse().unwrap()));
        assert!(!test_loopback("::1".parse().unwrap()));
    }

    #[test]
    fn round_trip_and_text() {
        let q = encode_query("www.example.test", 1, 7).unwrap();
        let a = encode_answer(&q, &["10.1.2.3".parse().unwrap()], 300).unwrap();
        let answers = decode_response("www.example.test", &a).unwrap();
        assert_eq!(
            answers,
            vec![Answer {
                name: "www.example.test.".into(),
                ttl: 300,
                data: AnswerData::A(Ipv4Addr::new(10, 1, 2, 3)),
            }]
        );
        let l = Lookup {
            host: "www.example.test".into(),
            server: "127.0.0.1:53".parse().unwrap(),
            date: time::macros::datetime!(2026-11-22 10:00:00 UTC),
            answers,
        };
        assert_eq!(
            l.to_text(),
            "20261122100000\nwww.example.test.\t300\tIN\tA\t10.1.2.3\n"
        );
    }

    #[test]
    fn truncated_answer_is_asked_again_over_tcp() {
        use std::io::{Read, Write};
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            let (n, from) = udp.recv_from(&mut buf).unwrap();
            let mut a = encode_answer(&buf[..n], &[], 1).unwrap();
            a[2] |= 0x02;
            udp.send_to(&a, from).unwrap();
            let (mut s, _) = tcp.accept().unwrap();
            let mut len = [0u8; 2];
            s.read_exact(&mut len).unwrap();
            let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
            s.read_exact(&mut q).unwrap();
            let many: Vec<IpAddr> = (1..=60)
                .map(|i| IpAddr::V4(Ipv4Addr::new(10, 0, 0, i)))
                .collect();
            let a = encode_answer(&q, &many, 60).unwrap();
            s.write_all(&(a.len() as u16).to_be_bytes()).unwrap();
            s.write_all(&a).unwrap();
        });
        let l = lookup(
            "many.test",
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(l.addresses().len(), 60);
    }

    #[test]
    fn hostile_answers_fail_cleanly() {
        // A name pointing at itself.
        let mut m = vec![0, 7, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0, 0xc0, 12];
        m.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]);
        assert!(decode_response("h", &m).is_err());
        // Cut short.
        let q = encode_query("a.b", 1, 1).unwrap();
        let a = encode_answer(&q, &["1.2.3.4".parse().unwrap()], 1).unwrap();
        for n in 0..a.len() {
            let _ = decode_response("a.b", &a[..n]);
        }
        let mut nx = q.clone();
        nx[2] = 0x81;
        nx[3] = 0x83;
        assert!(
            decode_response("a.b", &nx)
                .unwrap_err()
                .to_string()
                .contains("NXDOMAIN")
        );
    }
}
