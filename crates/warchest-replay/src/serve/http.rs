//! A small HTTP/1.1 server side: requests read with bounds (head size,
//! header count, body size), responses with a length or streamed in
//! chunks (HTTP/1.0 clients: until the connection closes).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

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

/// Longest time a request head may take to arrive, however slowly its
/// bytes trickle in (each read has its own shorter timeout too).
pub const HEAD_DEADLINE: Duration = Duration::from_secs(30);

/// A connection whose reads fail once a deadline has passed.
#[derive(Debug)]
pub struct Timed {
    /// The connection.
    pub stream: TcpStream,
    /// When reads stop being allowed (`None`: no deadline).
    pub deadline: Option<Instant>,
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "request too slow"));
        }
        self.stream.read(buf)
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The connection closed (or timed out) before a request began.
    Closed,
    /// The request is malformed or too large: answer with this status.
    Bad(u16, &'static str),
    /// The connection failed (nothing to answer on it).
    Io,
}

/// Reads one request head (and skips a body of at most [`MAX_BODY`]).
///
/// # Errors
/// See [`ReadError`].
pub fn read_request(r: &mut BufReader<Timed>) -> Result<Request, ReadError> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = r
            .by_ref()
            .take((MAX_HEAD + 1 - head.len()) as u64)
            .read_until(b'\n', &mut head)
            .map_err(|e| {
                if head.is_empty()
                    && matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    )
                {
                    ReadError::Closed
                } else {
                    ReadError::Io
                }
            })?;
        if n == 0 {
            return if head.is_empty() {
                Err(ReadError::Closed)
            } else {
                Err(ReadError::Bad(400, "incomplete request"))
            };
        }
        if head.len() > MAX_HEAD {
            return Err(ReadError::Bad(431, "request head too large"));
        }
        let line = &head[before..];
        // Blank lines before the request line are allowed (RFC 9112 2.2).
        if (line == b"\r\n" || line == b"\n") && before == 0 {
            head.clear();
            continue;
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let start = lines.next().unwrap_or("");
    let mut parts = start.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(400, "bad request line"));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(ReadError::Bad(400, "bad request line"));
    }
    let mut headers = Vec::new();
    for l in lines {
        if l.is_empty() {
            continue;
        }
        let Some((n, v)) = l.split_once(':') else {
            return Err(ReadError::Bad(400, "bad header field"));
        };
        if headers.len() >= MAX_FIELDS {
            return Err(ReadError::Bad(431, "too many header fields"));
        }
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let req = Request {
        method: method.to_string(),
        target: target.to_string(),
        http10: version == "HTTP/1.0",
        headers,
        peer: None,
    };
    if req.header("transfer-encoding").is_some() {
        return Err(ReadError::Bad(
            411,
            "chunked request bodies are not accepted",
        ));
    }
    if let Some(len) = req.header("content-length") {
        let len: u64 = len
            .parse()
            .map_err(|_| ReadError::Bad(400, "bad Content-Length"))?;
        if len > MAX_BODY {
            return Err(ReadError::Bad(413, "request body too large"));
        }
        io::copy(&mut r.by_ref().take(len), &mut io::sink()).map_err(|_| ReadError::Io)?;
    }
    Ok(req)
}

/// The reason phrase of a status code this server sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        421 => "Misdirected Request",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Writes one response to a connection.
pub struct Responder<'a> {
    out: &'a mut dyn Write,
    /// A HEAD request: headers only.
    pub head_only: bool,
    http10: bool,
    /// Keep the connection open after this response.
    pub keep_alive: bool,
    /// The status sent, once sent.
    pub status: Option<u16>,
    /// Where the answer came from, for the access log (`archive`, `page`,
    /// `api`, `static`, `miss`, `error`).
    pub source: &'static str,
}

impl<'a> Responder<'a> {
    /// A responder for `req` writing to `out`.
    pub fn new(out: &'a mut dyn Write, req: &Request) -> Responder<'a> {
        Responder {
            out,
            head_only: req.method == "HEAD",
            http10: req.http10,
            keep_alive: req.keep_alive(),
            status: None,
            source: "error",
        }
    }

    fn write_head(
        &mut self,
        status: u16,
        reason: &str,
        headers: &[(String, String)],
        framing: &str,
    ) -> io::Result<()> {
        let mut h = Vec::with_capacity(512);
        let version = if self.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
        let reason: String = reason.chars().filter(|c| !c.is_control()).collect();
        write!(h, "{version} {status} {reason}\r\n")?;
        for (n, v) in headers {
            // Values come from archived responses: no line breaks through.
            let v: String = v.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            write!(h, "{n}: {v}\r\n")?;
        }
        h.extend_from_slice(framing.as_bytes());
        let conn = if self.keep_alive {
            "keep-alive"
        } else {
            "close"
        };
        write!(h, "Connection: {conn}\r\n\r\n")?;
        self.status = Some(status);
        self.out.write_all(&h)
    }

    /// Sends a whole response.
    ///
    /// # Errors
    /// Writing failed.
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
    /// Writing failed.
    pub fn send_with_reason(
        &mut self,
        status: u16,
        reason: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<()> {
        let framing = format!("Content-Length: {}\r\n", body.len());
        self.write_head(status, reason, headers, &framing)?;
        if !self.head_only {
            self.out.write_all(body)?;
        }
        self.out.flush()
    }

    /// Starts a streamed response: the body is written to what is returned
    /// (in chunks for HTTP/1.1; HTTP/1.0 until the connection closes).
    ///
    /// # Errors
    /// Writing failed.
    pub fn stream(
        &mut self,
        status: u16,
        reason: &str,
        headers: &[(String, String)],
    ) -> io::Result<BodyWriter<'_>> {
        let no_body = self.head_only || status == 204 || status == 304 || status < 200;
        let framing = if no_body {
            if status == 204 || status == 304 || status < 200 {
                String::new()
            } else {
                "Transfer-Encoding: chunked\r\n".to_string()
            }
        } else if self.http10 {
            self.keep_alive = false;
            String::new()
        } else {
            "Transfer-Encoding: chunked\r\n".to_string()
        };
        self.write_head(status, reason, headers, &framing)?;
        Ok(BodyWriter {
            out: &mut *self.out,
            chunked: !self.http10 && !no_body,
            discard: no_body,
            buf: Vec::with_capacity(64 << 10),
        })
    }
}

/// The body of a streamed response.
pub struct BodyWriter<'a> {
    out: &'a mut dyn Write,
    chunked: bool,
    discard: bool,
    buf: Vec<u8>,
}

impl BodyWriter<'_> {
    fn emit(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.chunked {
            write!(self.out, "{:x}\r\n", self.buf.len())?;
            self.out.write_all(&self.buf)?;
            self.out.write_all(b"\r\n")?;
        } else {
            self.out.write_all(&self.buf)?;
        }
        self.buf.clear();
        Ok(())
    }

    /// Ends the body.
    ///
    /// # Errors
    /// Writing failed.
    pub fn finish(mut self) -> io::Result<()> {
        if self.discard {
            return self.out.flush();
        }
        self.emit()?;
        if self.chunked {
            self.out.write_all(b"0\r\n\r\n")?;
        }
        self.out.flush()
    }
}

impl Write for BodyWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.discard {
            return Ok(data.len());
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 64 << 10 {
            self.emit()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.emit()?;
        self.out.flush()
    }
}

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
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
    fn decodes_percent_escapes() {
        let req = Request {
            method: "GET".into(),
            target: "/?q=a%20b+c%zz%4&r=%41".into(),
            http10: false,
            headers: vec![],
            peer: None,
        };
        assert_eq!(req.param("q").as_deref(), Some("a b c%zz%4"));
        assert_eq!(req.param("r").as_deref(), Some("A"));
    }

    #[test]
    fn chunked_bodies() {
        let req = Request {
            method: "GET".into(),
            target: "/".into(),
            http10: false,
            headers: vec![],
            peer: None,
        };
        let mut out = Vec::new();
        {
            let mut r = Responder::new(&mut out, &req);
            let mut b = r.stream(200, "OK", &[]).unwrap();
            b.write_all(b"hello").unwrap();
            b.finish().unwrap();
        }
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.starts_with("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"),
            "{s}"
        );
        assert!(s.ends_with("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), "{s}");
    }

    #[test]
    fn params() {
        let req = Request {
            method: "GET".into(),
            target: "/c/cdx?url=http%3A%2F%2Fa.com%2F&limit=2".into(),
            http10: false,
            headers: vec![],
            peer: None,
        };
        assert_eq!(req.param("url").as_deref(), Some("http://a.com/"));
        assert_eq!(req.param("limit").as_deref(), Some("2"));
        assert_eq!(req.param("x"), None);
        assert_eq!(req.path(), "/c/cdx");
    }
}
