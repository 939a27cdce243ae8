//! The handlers' view of HTTP: a [`Request`] (taken from hyper's, see
//! `net.rs`) and a [`Responder`] that hands the answer to the connection's
//! task, whole or streamed through a bounded channel.

use std::io::{self, Write};

/// Largest request head accepted (request line and header fields).
pub const MAX_HEAD: usize = 32 << 10;
/// Most header fields accepted.
pub const MAX_FIELDS: usize = 100;
/// Largest request body read (and thrown away: replay serves GET).
pub const MAX_BODY: u64 = 1 << 20;

/// A request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// HTTP/1.0 (no chunked responses, no keep-alive unless asked).
    pub http10: bool,
    /// Header fields, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The client's address, when known.
    pub peer: Option<std::net::IpAddr>,
    /// Which origin the request came to, and the other's address.
    pub origin: Origin,
}

/// The two origins of a server (docs/serve.md, "Isolation"): the UI, and
/// the replay origin that alone serves archived bytes.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The request came to the replay origin.
    pub replay: bool,
    /// The UI origin as this request's client reaches it
    /// (`http://host:port`).
    pub ui: String,
    /// The replay origin as this request's client reaches it.
    pub replay_base: String,
}

impl Request {
    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path (before `?`).
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The query string (after `?`), empty without one.
    pub fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }

    /// The value of query parameter `name`, percent-decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query().as_bytes())
            .find_map(|(k, v)| (k == name).then(|| v.into_owned()))
    }

    /// Every value of query parameter `name`, percent-decoded.
    pub fn params(&self, name: &str) -> Vec<String> {
        form_urlencoded::parse(self.query().as_bytes())
            .filter_map(|(k, v)| (k == name).then(|| v.into_owned()))
            .collect()
    }

    /// Whether the client wants the connection kept open.
    pub fn keep_alive(&self) -> bool {
        let conn = self.header("connection").map(str::to_ascii_lowercase);
        if self.http10 {
            conn.is_some_and(|c| c.contains("keep-alive"))
        } else {
            !conn.is_some_and(|c| c.contains("close"))
        }
    }
}

/// The reason phrase of a status code this server sends: the `http`
/// crate's, except 413's, which RFC 9110 renamed ("Content Too Large";
/// `http` keeps RFC 7231's "Payload Too Large"). Empty for a code without
/// one.
pub fn reason(status: u16) -> &'static str {
    match status {
        413 => "Content Too Large",
        _ => ::http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or(""),
    }
}

/// What a handler answers, handed to the connection's task: the status
/// line and header fields, and either the whole body or a stream of it.
#[derive(Debug)]
pub struct Head {
    /// The status code.
    pub status: u16,
    /// The reason phrase (HTTP/1.x only).
    pub reason: String,
    /// Header fields.
    pub headers: Vec<(String, String)>,
    /// The whole body (`None`: it follows through [`Exchange`]'s channel).
    pub body: Option<Vec<u8>>,
    /// Close the connection after this response.
    pub close: bool,
}

/// A piece of a streamed body (shared with the proxy's server).
pub use warchest_net::Chunk;

/// The blocking handler's side of one exchange: the head goes through a
/// one-shot channel, a streamed body through a bounded one (a few chunks
/// of 64 KiB), so a payload is never held whole and a client that stops
/// reading stops the handler.
#[derive(Debug)]
pub struct Exchange {
    head: Option<tokio::sync::oneshot::Sender<Head>>,
    body: tokio::sync::mpsc::Sender<Chunk>,
}

impl Exchange {
    /// An exchange over these channels.
    pub fn new(
        head: tokio::sync::oneshot::Sender<Head>,
        body: tokio::sync::mpsc::Sender<Chunk>,
    ) -> Exchange {
        Exchange {
            head: Some(head),
            body,
        }
    }

    /// Whether the head has gone out.
    pub fn head_sent(&self) -> bool {
        self.head.is_none()
    }

    fn send_head(&mut self, head: Head) -> io::Result<()> {
        let tx = self
            .head
            .take()
            .ok_or_else(|| io::Error::other("a response was already sent"))?;
        tx.send(head)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }

    fn send_chunk(&mut self, c: Chunk) -> io::Result<()> {
        // Blocking: the handler runs on a blocking thread, and waits here
        // while the client reads (or until the connection is dropped).
        self.body
            .blocking_send(c)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

/// Writes one response.
pub struct Responder<'a> {
    out: &'a mut Exchange,
    /// A HEAD request: headers only.
    pub head_only: bool,
    /// Keep the connection open after this response.
    pub keep_alive: bool,
    /// The status sent, once sent.
    pub status: Option<u16>,
    /// Where the answer came from, for the access log (`archive`, `page`,
    /// `api`, `static`, `miss`, `error`).
    pub source: &'static str,
}

impl<'a> Responder<'a> {
    /// A responder for `req` answering through `out`.
    pub fn new(out: &'a mut Exchange, req: &Request) -> Responder<'a> {
        Responder {
            out,
            head_only: req.method == "HEAD",
            keep_alive: req.keep_alive(),
            status: None,
            source: "error",
        }
    }

    /// Sends a whole response.
    ///
    /// # Errors
    /// The client went away, or a response was already sent.
    pub fn send(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<()> {
        self.send_with_reason(status, reason(status), headers, body)
    }

    /// Sends a whole response with its reason phrase.
    ///
    /// # Errors
    /// The client went away, or a response was already sent.
    pub fn send_with_reason(
        &mut self,
        status: u16,
        reason: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut headers = headers.to_vec();
        let body = if self.head_only {
            // The length a GET would have, without the body.
            headers.push(("Content-Length".into(), body.len().to_string()));
            Vec::new()
        } else {
            body.to_vec()
        };
        self.status = Some(status);
        self.out.send_head(Head {
            status,
            reason: reason.to_string(),
            headers,
            body: Some(body),
            close: !self.keep_alive,
        })
    }

    /// Starts a streamed response: the body is written to what is returned.
    ///
    /// # Errors
    /// The client went away, or a response was already sent.
    pub fn stream(
        &mut self,
        status: u16,
        reason: &str,
        headers: &[(String, String)],
    ) -> io::Result<BodyWriter<'_>> {
        let no_body = self.head_only || status == 204 || status == 304 || status < 200;
        self.status = Some(status);
        self.out.send_head(Head {
            status,
            reason: reason.to_string(),
            headers: headers.to_vec(),
            body: None,
            close: !self.keep_alive,
        })?;
        Ok(BodyWriter {
            out: &mut *self.out,
            discard: no_body,
            buf: Vec::new(),
        })
    }
}

/// Bytes gathered before a chunk goes to the connection.
const CHUNK: usize = 64 << 10;

/// The body of a streamed response.
pub struct BodyWriter<'a> {
    out: &'a mut Exchange,
    discard: bool,
    buf: Vec<u8>,
}

impl BodyWriter<'_> {
    fn emit(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let data = bytes::Bytes::from(std::mem::take(&mut self.buf));
        self.out.send_chunk(Chunk::Data(data))
    }

    /// Ends the body.
    ///
    /// # Errors
    /// The client went away.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.discard {
            self.emit()?;
        }
        self.out.send_chunk(Chunk::End)
    }
}

impl Write for BodyWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.discard {
            return Ok(data.len());
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve(CHUNK);
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.emit()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.emit()
    }
}

/// Escapes text for HTML (`&`, `<`, `>`, `"`, `'`): the full-text
/// pages' escaping, one copy for both.
pub fn escape(s: &str) -> String {
    warchest_search::escape_html(s)
}

/// Escapes a value for a query string.
pub fn query_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/:".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_phrases_as_before() {
        for (code, phrase) in [
            (200, "OK"),
            (206, "Partial Content"),
            (302, "Found"),
            (304, "Not Modified"),
            (404, "Not Found"),
            (413, "Content Too Large"),
            (421, "Misdirected Request"),
            (431, "Request Header Fields Too Large"),
            (503, "Service Unavailable"),
            (599, ""),
        ] {
            assert_eq!(reason(code), phrase, "{code}");
        }
    }

    #[test]
    fn decodes_percent_escapes() {
        let req = Request {
            method: "GET".into(),
            target: "/?q=a%20b+c%zz%4&r=%41".into(),
            http10: false,
            headers: vec![],
            peer: None,
            origin: Origin::default(),
        };
        assert_eq!(req.param("q").as_deref(), Some("a b c%zz%4"));
        assert_eq!(req.param("r").as_deref(), Some("A"));
    }

    #[test]
    fn streamed_bodies_go_through_the_channel_in_pieces() {
        let req = Request {
            method: "GET".into(),
            target: "/".into(),
            http10: false,
            headers: vec![],
            peer: None,
            origin: Origin::default(),
        };
        let (htx, mut hrx) = tokio::sync::oneshot::channel();
        let (btx, mut brx) = tokio::sync::mpsc::channel(64);
        let mut ex = Exchange::new(htx, btx);
        {
            let mut r = Responder::new(&mut ex, &req);
            let mut b = r.stream(200, "OK", &[]).unwrap();
            b.write_all(&vec![b'x'; CHUNK + 5]).unwrap();
            b.write_all(b"hello").unwrap();
            b.finish().unwrap();
            // One response only.
            assert!(r.send(200, &[], b"again").is_err());
        }
        let head = hrx.try_recv().unwrap();
        assert_eq!(head.status, 200);
        assert!(head.body.is_none());
        let mut sizes = Vec::new();
        while let Ok(c) = brx.try_recv() {
            match c {
                Chunk::Data(d) => sizes.push(d.len()),
                Chunk::End => sizes.push(0),
            }
        }
        assert_eq!(sizes, vec![CHUNK + 5, 5, 0]);
    }

    #[test]
    fn head_requests_get_the_length_without_the_body() {
        let req = Request {
            method: "HEAD".into(),
            target: "/".into(),
            http10: false,
            headers: vec![("connection".into(), "close".into())],
            peer: None,
            origin: Origin::default(),
        };
        let (htx, mut hrx) = tokio::sync::oneshot::channel();
        let (btx, _brx) = tokio::sync::mpsc::channel(1);
        let mut ex = Exchange::new(htx, btx);
        Responder::new(&mut ex, &req)
            .send(200, &[], b"hello")
            .unwrap();
        let head = hrx.try_recv().unwrap();
        assert_eq!(head.body.as_deref(), Some(&b""[..]));
        assert!(head.close);
        assert!(
            head.headers
                .contains(&("Content-Length".to_string(), "5".to_string()))
        );
    }

    #[test]
    fn params() {
        let req = Request {
            method: "GET".into(),
            target: "/c/cdx?url=http%3A%2F%2Fa.com%2F&limit=2".into(),
            http10: false,
            headers: vec![],
            peer: None,
            origin: Origin::default(),
        };
        assert_eq!(req.param("url").as_deref(), Some("http://a.com/"));
        assert_eq!(req.param("limit").as_deref(), Some("2"));
        assert_eq!(req.param("x"), None);
        assert_eq!(req.path(), "/c/cdx");
    }
}
