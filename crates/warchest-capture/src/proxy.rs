//! The recording proxy (`warchest proxy`), as warcprox does it: every
//! exchange that passes is forwarded and recorded through the same
//! [`Recorder`] as `warchest capture`. The client gets the response's bytes
//! as they arrive from the server, unchanged.
//!
//! Plain HTTP comes as absolute-form requests (`GET http://host/ HTTP/1.1`);
//! HTTPS as `CONNECT host:port`, answered by a TLS handshake with a
//! certificate for that host signed on the fly by the proxy's CA, after
//! which the requests inside are read, forwarded over a TLS connection of
//! the proxy's own, and recorded with `https://` target URIs.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use warchest::http::HttpHead;
use warchest::write::{Body, CaptureLimits};

use super::http::{self as client, Framing, ReadOptions, Stream, Tee};
use super::record::{HttpRecord, Recorder};
use super::tls::CertAuthority;
use super::url::{Scheme, Url};
use super::{CaptureError, dns};

/// How the proxy runs.
#[derive(Clone)]
pub struct ProxyOptions {
    /// Upstream connections: TLS settings, timeout, and how responses are
    /// read (limits apply to what is recorded and passed on alike).
    pub fetch: client::FetchOptions,
    /// The CA that signs per-host certificates for CONNECT.
    pub ca: Arc<CertAuthority>,
    /// How upstream hosts are resolved.
    pub resolver: dns::ResolverOptions,
    /// Who may use the proxy, and for which destinations.
    pub access: Access,
}

/// Who may use a proxy and where it may connect: without this, a proxy on
/// a reachable address is an open relay into the networks behind it.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// Basic credentials (user, password) every request must carry in
    /// `Proxy-Authorization`; `None`: none asked (a loopback proxy).
    pub credentials: Option<(String, String)>,
    /// Destinations allowed although they are in a range denied by default
    /// ([`is_internal`]): the test servers of a loopback crawl, an intranet.
    pub allow: Vec<ipnet::IpNet>,
    /// Further destinations denied.
    pub deny: Vec<ipnet::IpNet>,
}

impl Access {
    /// True when the proxy may connect to `ip`: not in `deny`, and either
    /// outside the internal ranges or inside `allow`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        if self.deny.iter().any(|n| n.contains(&ip)) {
            return false;
        }
        !is_internal(ip) || self.allow.iter().any(|n| n.contains(&ip))
    }

    /// True when `header` (a `Proxy-Authorization` value, if any) carries
    /// the credentials, or none are asked.
    pub fn admits(&self, header: Option<&[u8]>) -> bool {
        let Some((user, password)) = &self.credentials else {
            return true;
        };
        let Some(v) = header else {
            return false;
        };
        let v = String::from_utf8_lossy(v);
        let mut parts = v.split_ascii_whitespace();
        let (Some(scheme), Some(token), None) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case("basic") {
            return false;
        }
        let Ok(decoded) = data_encoding::BASE64.decode(token.as_bytes()) else {
            return false;
        };
        decoded == format!("{user}:{password}").as_bytes()
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The ranges a proxy does not connect to unless allowed: loopback,
/// private (RFC 1918, RFC 6598 shared, IPv6 unique local), link-local,
/// unspecified, broadcast and multicast.
pub fn is_internal(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
        }
    }
}

/// A listening recording proxy.
pub struct Proxy {
    listener: TcpListener,
    recorder: Arc<Recorder>,
    opts: ProxyOptions,
    resolver: Arc<dns::Resolver>,
}

impl Proxy {
    /// Listens on `addr`.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn bind(
        addr: SocketAddr,
        recorder: Arc<Recorder>,
        opts: ProxyOptions,
    ) -> Result<Proxy, CaptureError> {
        let listener =
            TcpListener::bind(addr).map_err(|e| CaptureError::Io(addr.to_string(), e))?;
        Ok(Proxy {
            listener,
            recorder,
            resolver: Arc::new(dns::Resolver::new(opts.resolver.clone())),
            opts,
        })
    }

    /// The address listened on (with the port the system chose for port 0).
    ///
    /// # Errors
    /// The socket cannot tell.
    pub fn local_addr(&self) -> Result<SocketAddr, CaptureError> {
        self.listener
            .local_addr()
            .map_err(|e| CaptureError::Io("listener".into(), e))
    }

    /// Serves until `stop` is set (checked every 100 ms), each client
    /// connection on a thread of its own; waits for the open connections
    /// to end (at most the timeout) before returning.
    ///
    /// # Errors
    /// The listener failed.
    pub fn serve(&self, stop: &AtomicBool) -> Result<(), CaptureError> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| CaptureError::Io("listener".into(), e))?;
        let active = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let me = self.local_addr()?;
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((sock, peer)) => {
                    // A thread per connection, so their number is capped.
                    if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                        tracing::warn!("proxy: {MAX_CONNECTIONS} connections open; {peer} refused");
                        continue;
                    }
                    let _ = sock.set_nonblocking(false);
                    let recorder = self.recorder.clone();
                    let opts = self.opts.clone();
                    let resolver = self.resolver.clone();
                    let busy = active.clone();
                    let open = open.clone();
                    open.fetch_add(1, Ordering::SeqCst);
                    std::thread::spawn(move || {
                        let ctx = Context {
                            recorder: &recorder,
                            opts: &opts,
                            resolver: &resolver,
                            busy: &busy,
                            me,
                        };
                        if let Err(e) = handle(sock, &ctx) {
                            tracing::warn!("proxy client {peer}: {e}");
                        }
                        open.fetch_sub(1, Ordering::SeqCst);
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CaptureError::Io("accept".into(), e)),
            }
        }
        // Exchanges under way are finished; idle keep-alive connections
        // are left.
        let until = Instant::now() + self.opts.fetch.timeout;
        while active.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

fn reply(client: &mut Stream, status: &str, text: &str) {
    let _ = write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = client.flush();
}

/// The most client connections served at once (each has a thread).
const MAX_CONNECTIONS: usize = 1024;

/// Longest time a client's request head may take to arrive (less when the
/// timeout is shorter).
const HEAD_DEADLINE: Duration = Duration::from_secs(20);

/// A reader whose reads fail once a deadline has passed.
struct Deadline<'a, R: Read> {
    inner: &'a mut R,
    until: Instant,
}

impl<R: Read> Read for Deadline<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if Instant::now() > self.until {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the request head took too long",
            ));
        }
        self.inner.read(buf)
    }
}

/// What a connection's thread works with.
struct Context<'a> {
    recorder: &'a Recorder,
    opts: &'a ProxyOptions,
    resolver: &'a dns::Resolver,
    busy: &'a AtomicUsize,
    /// The proxy's own address, so a request for it is refused.
    me: SocketAddr,
}

/// Whether `ip:port` is the proxy itself (a request that would loop).
fn is_self(me: SocketAddr, ip: std::net::IpAddr, port: u16) -> bool {
    port == me.port()
        && (ip == me.ip()
            || me.ip().is_unspecified()
            || (ip.is_loopback() && me.ip().is_loopback()))
}

/// Counts an exchange under way while alive.
struct Busy<'a>(&'a AtomicUsize);

impl<'a> Busy<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Busy(n)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn handle(sock: TcpStream, ctx: &Context<'_>) -> Result<(), CaptureError> {
    let (recorder, opts, resolver, busy) = (ctx.recorder, ctx.opts, ctx.resolver, ctx.busy);
    let timeout = opts.fetch.timeout;
    let _ = sock.set_read_timeout(Some(timeout));
    let _ = sock.set_write_timeout(Some(timeout));
    let mut client = Stream::Plain(sock);
    // Set after CONNECT: requests inside are for https://authority.
    let mut tunnel: Option<Url> = None;
    let max_head = opts.fetch.read.max_head;
    let req_opts = ReadOptions {
        limits: CaptureLimits::default(),
        ..opts.fetch.read
    };
    loop {
        let mut buf = Vec::new();
        // The whole head within a deadline, however slowly its bytes
        // trickle (each read has the socket timeout too): a slow client
        // holds its thread for a bounded time.
        let deadline = Instant::now() + timeout.min(HEAD_DEADLINE);
        let head = client::read_head(
            &mut Deadline {
                inner: &mut client,
                until: deadline,
            },
            &mut buf,
            max_head,
        )?;
        let Some(head_len) = head else {
            return Ok(());
        };
        let _busy = Busy::new(busy);
        let head = match HttpHead::parse(&buf[..head_len]) {
            Ok(Some((h, _))) if h.is_request() => h,
            _ => {
                reply(&mut client, "400 Bad Request", "not an HTTP request\n");
                return Ok(());
            }
        };
        // Inside a CONNECT tunnel the client was admitted at the CONNECT.
        if tunnel.is_none()
            && !opts
                .access
                .admits(head.header("Proxy-Authorization").as_deref())
        {
            let text = "proxy credentials needed\n";
            let _ = write!(
                client,
                "HTTP/1.1 407 Proxy Authentication Required\r\n\
                 Proxy-Authenticate: Basic realm=\"warchest proxy\"\r\n\
                 Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = client.flush();
            return Ok(());
        }
        let method = head.method().unwrap_or(b"GET").to_vec();
        let target = String::from_utf8_lossy(head.request_target().unwrap_or(b"/")).into_owned();
        if method.eq_ignore_ascii_case(b"CONNECT") {
            if tunnel.is_some() {
                reply(&mut client, "400 Bad Request", "CONNECT inside CONNECT\n");
                return Ok(());
            }
            let Ok(url) = Url::parse(&format!("https://{target}/")) else {
                reply(&mut client, "400 Bad Request", "bad CONNECT target\n");
                return Ok(());
            };
            let cfg = opts.ca.server_config(&url.host)?;
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .and_then(|_| client.flush())
                .map_err(|e| CaptureError::Io("client".into(), e))?;
            let Stream::Plain(sock) = client else {
                return Ok(());
            };
            let conn =
                rustls::ServerConnection::new(cfg).map_err(|e| CaptureError::Tls(e.to_string()))?;
            let mut tls = rustls::StreamOwned::new(conn, sock);
            while tls.conn.is_handshaking() {
                tls.conn.complete_io(&mut tls.sock).map_err(|e| {
                    CaptureError::Tls(format!("client handshake for {}: {e}", url.host))
                })?;
            }
            client = Stream::TlsServer(Box::new(tls));
            tunnel = Some(url);
            continue;
        }
        let url = match &tunnel {
            Some(base) if target.starts_with('/') => {
                let mut u = base.clone();
                u.path_and_query = target.clone();
                Ok(u)
            }
            Some(_) => Url::parse(&target),
            None if target.starts_with('/') => match head.header("Host") {
                Some(h) => Url::parse(&format!(
                    "http://{}{target}",
                    String::from_utf8_lossy(&h).trim()
                )),
                None => Err(CaptureError::Url("no Host".into())),
            },
            None => Url::parse(&target),
        };
        let url = match url {
            Ok(u) if u.scheme != Scheme::Ftp => u,
            _ => {
                reply(
                    &mut client,
                    "400 Bad Request",
                    "cannot proxy this request target\n",
                );
                return Ok(());
            }
        };
        let client_close = wants_close(&head);
        // The body is read whole before it goes upstream, so the proxy
        // itself says go ahead (RFC 9110 section 10.1.1 lets it); a 100
        // from the server later is passed on too, which clients accept.
        if client::request_framing(&head) != Framing::Empty
            && head
                .header("Expect")
                .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"100-continue"))
        {
            let _ = client
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .and_then(|_| client.flush());
        }
        // The request's body, spooled (bounded memory).
        let mut req = client::capture_message(
            &mut client,
            buf,
            head_len,
            client::request_framing,
            &req_opts,
            &mut Tee::none(),
        )?;
        if req.truncated.is_some() || !req.complete {
            return Ok(());
        }
        // What is sent upstream: origin-form, hop-by-hop proxy fields gone.
        let mut upstream_req = tempfile::SpooledTempFile::new(opts.fetch.read.spool_threshold);
        let up_len = write_upstream_request(&mut upstream_req, &mut req, &method, &url)
            .map_err(|e| CaptureError::Io("spool".into(), e))?;
        let started = time::OffsetDateTime::now_utc();
        let t0 = Instant::now();
        let addrs = match resolver.resolve(&url.host) {
            Ok(r) => {
                if let Some(l) = &r.lookup {
                    recorder.record_dns(l)?;
                }
                r.addrs
            }
            Err(e) => {
                reply(&mut client, "502 Bad Gateway", &format!("{e}\n"));
                return Ok(());
            }
        };
        // Only the permitted addresses are tried (a name may resolve to
        // both a public and a loopback address); none: refused.
        let denied = addrs.first().copied();
        let addrs: Vec<_> = addrs
            .into_iter()
            .filter(|ip| opts.access.permits(*ip))
            .collect();
        if addrs.is_empty() {
            let why = match denied {
                Some(ip) => format!(
                    "{} resolves to {ip}, in a range this proxy does not connect to \
                     (loopback, private, link-local); --allow-dest allows it\n",
                    url.host
                ),
                None => format!("{} has no address\n", url.host),
            };
            reply(&mut client, "403 Forbidden", &why);
            return Ok(());
        }
        if addrs
            .iter()
            .any(|ip| is_self(ctx.me, *ip, url.port_or_default()))
        {
            reply(
                &mut client,
                "508 Loop Detected",
                "a request for the proxy itself\n",
            );
            return Ok(());
        }
        let (mut up, ip) = match client::connect(&url, &addrs, &opts.fetch.tls, timeout) {
            Ok(x) => x,
            Err(e) => {
                reply(&mut client, "502 Bad Gateway", &format!("{e}\n"));
                return Ok(());
            }
        };
        upstream_req
            .seek(SeekFrom::Start(0))
            .and_then(|_| io::copy(&mut upstream_req, &mut up))
            .and_then(|_| up.flush())
            .map_err(|e| CaptureError::Io(url.to_string(), e))?;
        let tls = up.tls_info();
        let mut rbuf = Vec::new();
        let mut tee = Tee::to(&mut client);
        let (rlen, interim) =
            match client::read_response_head(&mut up, &mut rbuf, max_head, &mut tee)? {
                Some(x) => x,
                None => {
                    reply(&mut client, "502 Bad Gateway", "no response\n");
                    return Ok(());
                }
            };
        let mut resp = client::capture_message(
            &mut up,
            rbuf,
            rlen,
            |h| client::response_framing(h, &method),
            &opts.fetch.read,
            &mut tee,
        )?;
        let client_alive = tee.alive();
        let mut protocols = vec!["http/1.1".to_string()];
        if let Some(p) = tls.0.clone() {
            protocols.push(p);
        }
        upstream_req
            .seek(SeekFrom::Start(0))
            .map_err(|e| CaptureError::Io("spool".into(), e))?;
        let keep = client_alive
            && !client_close
            && resp.complete
            && resp.truncated.is_none()
            && client::response_framing(&resp.head, &method) != Framing::Close
            && !wants_close(&resp.head);
        recorder.record_http(HttpRecord {
            target_uri: url.to_string(),
            ip: Some(ip),
            date: started,
            request: Body::Seekable {
                reader: &mut upstream_req,
                len: Some(up_len),
            },
            response: &mut resp,
            protocols,
            cipher_suite: tls.1,
            metadata: vec![
                (
                    "fetchTimeMs".to_string(),
                    t0.elapsed().as_millis().to_string(),
                ),
                ("proxied".to_string(), "true".to_string()),
            ]
            .into_iter()
            .chain(
                interim
                    .into_iter()
                    .map(|l| ("interimResponse".to_string(), l)),
            )
            .collect(),
            conditional_of: None,
        })?;
        if !keep {
            return Ok(());
        }
    }
}

fn wants_close(head: &HttpHead) -> bool {
    let closes = |v: &[u8]| {
        String::from_utf8_lossy(v)
            .split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("close"))
    };
    head.header_all("Connection").any(|v| closes(&v))
        || head.version_number().is_some_and(|v| v < (1, 1))
            && !head.header_all("Connection").any(|v| {
                String::from_utf8_lossy(&v)
                    .to_ascii_lowercase()
                    .contains("keep-alive")
            })
}

/// Writes the request to send upstream: the start line in origin form,
/// the fields but Proxy-Connection and Proxy-Authorization, then the body
/// as the client sent it. Returns its length.
fn write_upstream_request(
    out: &mut tempfile::SpooledTempFile,
    req: &mut client::Captured,
    method: &[u8],
    url: &Url,
) -> io::Result<u64> {
    let mut head = Vec::new();
    head.extend_from_slice(method);
    head.push(b' ');
    head.extend_from_slice(url.path_and_query.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    for f in req.head.headers() {
        if f.is("Proxy-Connection") || f.is("Proxy-Authorization") {
            continue;
        }
        head.extend_from_slice(f.raw_line());
        if !f.raw_line().ends_with(b"\n") {
            head.extend_from_slice(b"\r\n");
        }
    }
    head.extend_from_slice(b"\r\n");
    out.write_all(&head)?;
    let head_len = req.head.raw().len() as u64;
    req.block.seek(SeekFrom::Start(head_len))?;
    let body = io::copy(
        &mut (&mut req.block).take(req.len.saturating_sub(head_len)),
        out,
    )?;
    Ok(head.len() as u64 + body)
}

#[cfg(test)]
mod access_tests {
    use super::*;

    #[test]
    fn internal_ranges_are_denied_unless_allowed() {
        let a = Access::default();
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!a.permits(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "172.32.0.1"] {
            assert!(a.permits(ip.parse().unwrap()), "{ip}");
        }
        let a = Access {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            deny: vec!["93.184.216.0/24".parse().unwrap()],
            ..Access::default()
        };
        assert!(a.permits("127.0.0.2".parse().unwrap()));
        assert!(!a.permits("10.0.0.1".parse().unwrap()));
        assert!(!a.permits("93.184.216.34".parse().unwrap()));
    }

    #[test]
    fn credentials() {
        let open = Access::default();
        assert!(open.admits(None));
        let a = Access {
            credentials: Some(("u".into(), "p:w".into())),
            ..Access::default()
        };
        assert!(!a.admits(None));
        // base64("u:p:w") = "dTpwOnc="
        assert!(a.admits(Some(b"Basic dTpwOnc=")));
        assert!(a.admits(Some(b"basic  dTpwOnc=")));
        assert!(!a.admits(Some(b"Basic dTpw")));
        assert!(!a.admits(Some(b"Bearer dTpwOnc=")));
        assert!(!a.admits(Some(b"Basic !!!")));
    }
}
