//! A passive-mode FTP client (RFC 959, RFC 2428 EPSV) that retrieves one
//! file and keeps the control conversation as it went, both directions, for
//! the metadata record that goes with the file's `resource` record.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use warchest::warc::TruncatedReason;
use warchest::write::{CaptureLimits, LimitedReader};

use super::CaptureError;
use super::wire_url::{Url, percent_decode};

/// Settings of [`retrieve`].
#[derive(Debug, Clone, Copy)]
pub struct FtpOptions {
    /// Connect and read timeout.
    pub timeout: Duration,
    /// Limits of the file.
    pub limits: CaptureLimits,
    /// Spool in memory up to this many bytes.
    pub spool_threshold: usize,
}

/// A retrieved file.
pub struct Retrieved {
    /// The server's address.
    pub ip: IpAddr,
    /// When the conversation began.
    pub started: time::OffsetDateTime,
    /// The file (rewound).
    pub file: tempfile::SpooledTempFile,
    /// Its length.
    pub len: u64,
    /// Why it was cut, if it was.
    pub truncated: Option<TruncatedReason>,
    /// The control conversation, as sent and received.
    pub control: Vec<u8>,
    /// The URL named a directory (ending in `/`): `file` is its `LIST`.
    pub listing: bool,
}

/// The longest reply line accepted, and the most lines in one reply.
const MAX_LINE: usize = 8192;
const MAX_REPLY_LINES: usize = 1000;

struct Control {
    r: BufReader<TcpStream>,
    w: TcpStream,
    log: Vec<u8>,
}

impl Control {
    fn err(what: &str, e: io::Error) -> CaptureError {
        CaptureError::Ftp(format!("{what}: {e}"))
    }

    fn send(&mut self, line: &str) -> Result<(), CaptureError> {
        let l = format!("{line}\r\n");
        self.w
            .write_all(l.as_bytes())
            .map_err(|e| Control::err("sending", e))?;
        self.log.extend_from_slice(l.as_bytes());
        Ok(())
    }

    /// A whole reply (multi-line ones included): (code, its text).
    fn reply(&mut self) -> Result<(u16, String), CaptureError> {
        read_reply(&mut self.r, &mut self.log)
    }

    fn expect(
        &mut self,
        cmd: &str,
        ok: impl Fn(u16) -> bool,
    ) -> Result<(u16, String), CaptureError> {
        self.send(cmd)?;
        let (c, t) = self.reply()?;
        if !ok(c) {
            let shown = if cmd.starts_with("PASS") { "PASS" } else { cmd };
            return Err(CaptureError::Ftp(format!("{shown}: {c} {t}")));
        }
        Ok((c, t))
    }
}

/// Reads a whole reply (multi-line ones included) from `r`: (code, its
/// text); each line read is appended to `log`. Lines are cut at
/// [`MAX_LINE`] bytes, and a reply holds at most [`MAX_REPLY_LINES`].
pub(crate) fn read_reply(
    r: &mut dyn BufRead,
    log: &mut Vec<u8>,
) -> Result<(u16, String), CaptureError> {
    let mut text = String::new();
    let mut code = None;
    for _ in 0..MAX_REPLY_LINES {
        let mut line = Vec::new();
        let n = (&mut *r)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
            .map_err(|e| Control::err("reading a reply", e))?;
        if n == 0 {
            return Err(CaptureError::Ftp(
                "the server closed the control connection".into(),
            ));
        }
        log.extend_from_slice(&line);
        let s = String::from_utf8_lossy(&line).trim_end().to_string();
        // Three digits (RFC 959 section 4.2): not `+12`, which `parse`
        // takes.
        let c = s
            .get(..3)
            .filter(|c| c.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|c| c.parse::<u16>().ok());
        match (code, c) {
            (None, Some(c)) => {
                code = Some(c);
                text = s.get(4..).unwrap_or("").to_string();
                if s.as_bytes().get(3) != Some(&b'-') {
                    return Ok((c, text));
                }
            }
            (Some(first), Some(c)) if c == first && s.as_bytes().get(3) == Some(&b' ') => {
                return Ok((c, text));
            }
            (None, None) => {
                return Err(CaptureError::Ftp(format!("not an FTP reply: {s:?}")));
            }
            _ => {}
        }
    }
    Err(CaptureError::Ftp("reply too long".into()))
}

/// Retrieves `url`'s file: anonymous login unless the URL has user and
/// password, `TYPE I`, `EPSV` (else `PASV`), `RETR` (`LIST` for a path
/// ending in `/`).
///
/// # Errors
/// The server cannot be reached or refuses; a file cut by a limit or a
/// dropped data connection is not an error but [`Retrieved::truncated`].
pub fn retrieve(url: &Url, addrs: &[IpAddr], opts: &FtpOptions) -> Result<Retrieved, CaptureError> {
    let started = time::OffsetDateTime::now_utc();
    let port = url.port_or_default();
    let mut last = None;
    let mut conn = None;
    for ip in addrs {
        match TcpStream::connect_timeout(&SocketAddr::new(*ip, port), opts.timeout) {
            Ok(s) => {
                conn = Some((s, *ip));
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let (sock, ip) = conn.ok_or_else(|| {
        CaptureError::Ftp(format!(
            "{}: {}",
            url.authority(),
            last.map(|e| e.to_string())
                .unwrap_or_else(|| "no address".into())
        ))
    })?;
    sock.set_read_timeout(Some(opts.timeout))
        .and_then(|_| sock.set_write_timeout(Some(opts.timeout)))
        .map_err(|e| Control::err("socket", e))?;
    let mut c = Control {
        r: BufReader::new(sock.try_clone().map_err(|e| Control::err("socket", e))?),
        w: sock,
        log: Vec::new(),
    };
    let (code, text) = c.reply()?;
    if code != 220 {
        return Err(CaptureError::Ftp(format!("greeting: {code} {text}")));
    }
    let (user, pass) = match &url.userinfo {
        Some(u) => match u.split_once(':') {
            Some((u, p)) => (
                String::from_utf8_lossy(&percent_decode(u)).into_owned(),
                String::from_utf8_lossy(&percent_decode(p)).into_owned(),
            ),
            None => (
                String::from_utf8_lossy(&percent_decode(u)).into_owned(),
                String::new(),
            ),
        },
        None => ("anonymous".into(), "warchest@".into()),
    };
    let (code, _) = c.expect(&format!("USER {user}"), |c| c == 230 || c == 331)?;
    if code == 331 {
        c.expect(&format!("PASS {pass}"), |c| c == 230 || c == 202)?;
    }
    c.expect("TYPE I", |c| c == 200)?;
    let data_port = match c.expect("EPSV", |c| c == 229) {
        Ok((_, t)) => parse_epsv(&t),
        Err(_) => None,
    };
    let data_port = match data_port {
        Some(p) => p,
        None => {
            let (_, t) = c.expect("PASV", |c| c == 227)?;
            parse_pasv(&t).ok_or_else(|| CaptureError::Ftp(format!("PASV reply: {t}")))?
        }
    };
    // The data connection goes to the control connection's address, not
    // the one a PASV reply names (a server behind NAT names a private one,
    // and a hostile one could name any).
    let data = TcpStream::connect_timeout(&SocketAddr::new(ip, data_port), opts.timeout)
        .map_err(|e| Control::err("data connection", e))?;
    data.set_read_timeout(Some(opts.timeout))
        .map_err(|e| Control::err("data connection", e))?;
    let path = url.path();
    let path = String::from_utf8_lossy(&percent_decode(path)).into_owned();
    if path.contains(['\r', '\n']) {
        return Err(CaptureError::Ftp("a path with a line break".into()));
    }
    // A path ending in `/` is a directory: its listing is what is kept.
    let listing = path.ends_with('/');
    let cmd = if listing { "LIST" } else { "RETR" };
    c.expect(&format!("{cmd} {path}"), |c| c == 150 || c == 125)?;
    let mut file = tempfile::SpooledTempFile::new(opts.spool_threshold);
    let mut limited = LimitedReader::new(data, opts.limits);
    let len = io::copy(&mut limited, &mut file).map_err(|e| Control::err("data", e))?;
    let truncated = limited.truncated().cloned();
    drop(limited);
    let truncated = match truncated {
        Some(t) => {
            // The transfer was cut on our side: tell the server so.
            let _ = c.send("ABOR");
            let _ = c.reply();
            Some(t)
        }
        None => match c.reply() {
            Ok((226, _)) | Ok((250, _)) => None,
            // The server says the transfer failed: the file is short.
            Ok(_) | Err(_) => Some(TruncatedReason::Disconnect),
        },
    };
    let _ = c.send("QUIT");
    let _ = c.reply();
    file.seek(SeekFrom::Start(0))
        .map_err(|e| Control::err("spool", e))?;
    Ok(Retrieved {
        ip,
        started,
        file,
        len,
        truncated,
        control: c.log,
        listing,
    })
}

/// The port of `229 Entering Extended Passive Mode (|||6446|)`.
pub(crate) fn parse_epsv(text: &str) -> Option<u16> {
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let inner = text.get(open + 1..close)?;
    let d = inner.chars().next()?;
    let parts: Vec<&str> = inner.split(d).collect();
    parts.get(3)?.parse().ok()
}

/// The port of `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)`.
pub(crate) fn parse_pasv(text: &str) -> Option<u16> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let nums: Vec<u16> = text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(6)
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    if nums.len() < 6 || nums[4] > 255 || nums[5] > 255 {
        return None;
    }
    Some(nums[4] * 256 + nums[5])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(wire: &[u8]) -> Vec<Result<(u16, String), String>> {
        let mut r = wire;
        let mut log = Vec::new();
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(read_reply(&mut r, &mut log).map_err(|e| e.to_string()));
        }
        assert_eq!(log, wire);
        out
    }

    #[test]
    fn control_replies() {
        assert_eq!(
            replies(b"220-Welcome\r\n more\r\n220 ready\r\n331 pw\r\n"),
            [Ok((220, "Welcome".into())), Ok((331, "pw".into()))]
        );
        // What the capture_wire fuzz target found: `+31` was read as the
        // code 31. A reply's code is three digits.
        let r = replies(b"+31 pw\r\n");
        assert!(
            r[0].as_ref().is_err_and(|e| e.contains("not an FTP reply")),
            "{r:?}"
        );
        // In a multi-line reply, a line that is not its end.
        assert_eq!(
            replies(b"220-a\r\n+22 b\r\n220 c\r\n"),
            [Ok((220, "a".into()))]
        );
    }

    #[test]
    fn passive_replies() {
        assert_eq!(
            parse_epsv("Entering Extended Passive Mode (|||6446|)"),
            Some(6446)
        );
        assert_eq!(parse_epsv("no"), None);
        assert_eq!(parse_epsv(")(|||1|"), None);
        assert_eq!(
            parse_pasv("Entering Passive Mode (127,0,0,1,4,1)."),
            Some(1025)
        );
        assert_eq!(parse_pasv("(1,2,3,4,999,1)"), None);
        assert_eq!(parse_pasv("(1,2,3)"), None);
    }
}
