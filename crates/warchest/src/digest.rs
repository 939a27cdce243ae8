//! Digests: the hash algorithms WARC records name, their encodings, and the
//! `WARC-Block-Digest` / `WARC-Payload-Digest` field values.
//!
//! A WARC digest field holds a *labelled digest*, `algorithm ":" value`
//! (WARC 1.1 section 5.8), e.g. `sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ`. The
//! convention is SHA-1 in upper-case base32, but real files also carry
//! hexadecimal and base64 values and other algorithms, so [`Digest::parse`]
//! accepts all of them and tells which encoding it found.
//!
//! [`Hasher`] computes any supported [`Algorithm`]; [`DigestReader`] and
//! [`DigestWriter`] hash the bytes that pass through a stream, with one or
//! several algorithms at once.

use std::fmt;
use std::io::{self, BufRead, Read, Write};

use digest::Digest as _;

/// A hash algorithm a WARC digest field may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum Algorithm {
    /// MD5 (16 bytes). Broken, but found in old archives. (The `md5`
    /// feature.)
    #[cfg(feature = "md5")]
    Md5,
    /// SHA-1 (20 bytes), the WARC convention.
    Sha1,
    /// SHA-224 (28 bytes).
    Sha224,
    /// SHA-256 (32 bytes).
    Sha256,
    /// SHA-384 (48 bytes).
    Sha384,
    /// SHA-512 (64 bytes).
    Sha512,
    /// SHA-512/224 (28 bytes).
    Sha512_224,
    /// SHA-512/256 (32 bytes).
    Sha512_256,
    /// SHA3-224 (28 bytes). (The `sha3` feature.)
    #[cfg(feature = "sha3")]
    Sha3_224,
    /// SHA3-256 (32 bytes). (The `sha3` feature.)
    #[cfg(feature = "sha3")]
    Sha3_256,
    /// SHA3-384 (48 bytes). (The `sha3` feature.)
    #[cfg(feature = "sha3")]
    Sha3_384,
    /// SHA3-512 (64 bytes). (The `sha3` feature.)
    #[cfg(feature = "sha3")]
    Sha3_512,
}

impl Algorithm {
    /// Every supported algorithm, in declaration order: 12 with the `md5`
    /// and `sha3` features, 7 (SHA-1 and SHA-2) without.
    pub const ALL: [Algorithm; Algorithm::COUNT] = [
        #[cfg(feature = "md5")]
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha224,
        Algorithm::Sha256,
        Algorithm::Sha384,
        Algorithm::Sha512,
        Algorithm::Sha512_224,
        Algorithm::Sha512_256,
        #[cfg(feature = "sha3")]
        Algorithm::Sha3_224,
        #[cfg(feature = "sha3")]
        Algorithm::Sha3_256,
        #[cfg(feature = "sha3")]
        Algorithm::Sha3_384,
        #[cfg(feature = "sha3")]
        Algorithm::Sha3_512,
    ];

    /// How many algorithms this build supports.
    const COUNT: usize =
        7 + if cfg!(feature = "md5") { 1 } else { 0 } + if cfg!(feature = "sha3") { 4 } else { 0 };

    /// The algorithm a label names, or `None` when it is not one we know.
    /// Without the `md5` or `sha3` feature their labels are not known
    /// either: a digest of theirs is kept unchecked, as an unknown
    /// algorithm's is (see [`Algorithm::missing_feature`] for the reason).
    ///
    /// Case, `-`, `_` and `/` are ignored, so `SHA-1`, `sha1`, `sha-256`,
    /// `SHA256`, `sha3_256` and `SHA-512/224` all work. Surrounding white
    /// space is ignored too.
    pub fn from_label(label: &str) -> Option<Algorithm> {
        // Normalise into a small stack buffer: labels are short and this is
        // called once per record.
        let mut buf = [0u8; 16];
        let mut n = 0;
        for b in label.trim().bytes() {
            if matches!(b, b'-' | b'_' | b'/') {
                continue;
            }
            if n == buf.len() {
                return None;
            }
            buf[n] = b.to_ascii_lowercase();
            n += 1;
        }
        Some(match &buf[..n] {
            #[cfg(feature = "md5")]
            b"md5" => Algorithm::Md5,
            b"sha1" => Algorithm::Sha1,
            b"sha224" => Algorithm::Sha224,
            b"sha256" => Algorithm::Sha256,
            b"sha384" => Algorithm::Sha384,
            b"sha512" => Algorithm::Sha512,
            b"sha512224" => Algorithm::Sha512_224,
            b"sha512256" => Algorithm::Sha512_256,
            #[cfg(feature = "sha3")]
            b"sha3224" => Algorithm::Sha3_224,
            #[cfg(feature = "sha3")]
            b"sha3256" => Algorithm::Sha3_256,
            #[cfg(feature = "sha3")]
            b"sha3384" => Algorithm::Sha3_384,
            #[cfg(feature = "sha3")]
            b"sha3512" => Algorithm::Sha3_512,
            _ => return None,
        })
    }

    /// The canonical lower-case label used when writing: `md5`, `sha1`,
    /// `sha256`, ..., `sha512-224`, `sha3-256`. (The dash stays where
    /// removing it would run two numbers together.)
    pub fn label(self) -> &'static str {
        match self {
            #[cfg(feature = "md5")]
            Algorithm::Md5 => "md5",
            Algorithm::Sha1 => "sha1",
            Algorithm::Sha224 => "sha224",
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha384 => "sha384",
            Algorithm::Sha512 => "sha512",
            Algorithm::Sha512_224 => "sha512-224",
            Algorithm::Sha512_256 => "sha512-256",
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_224 => "sha3-224",
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_256 => "sha3-256",
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_384 => "sha3-384",
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_512 => "sha3-512",
        }
    }

    /// The length of the digest in bytes.
    pub fn output_len(self) -> usize {
        match self {
            #[cfg(feature = "md5")]
            Algorithm::Md5 => 16,
            Algorithm::Sha1 => 20,
            Algorithm::Sha224 | Algorithm::Sha512_224 => 28,
            Algorithm::Sha256 | Algorithm::Sha512_256 => 32,
            Algorithm::Sha384 => 48,
            Algorithm::Sha512 => 64,
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_224 => 28,
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_256 => 32,
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_384 => 48,
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_512 => 64,
        }
    }
}

impl Algorithm {
    /// The Cargo feature this build lacks for the algorithm `label` names
    /// (`md5`, `sha3`), when that is why [`Algorithm::from_label`] does not
    /// know it; `None` for labels it knows and for unknown ones.
    pub fn missing_feature(label: &str) -> Option<&'static str> {
        let norm: String = label
            .trim()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '/'))
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match norm.as_str() {
            "md5" if !cfg!(feature = "md5") => Some("md5"),
            "sha3224" | "sha3256" | "sha3384" | "sha3512" if !cfg!(feature = "sha3") => {
                Some("sha3")
            }
            _ => None,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The largest digest any [`Algorithm`] produces, in bytes.
pub const MAX_OUTPUT_LEN: usize = 64;

/// A computed digest: up to [`MAX_OUTPUT_LEN`] bytes, kept inline so hashing
/// a record allocates nothing. Dereferences to `[u8]`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Output {
    len: u8,
    bytes: [u8; MAX_OUTPUT_LEN],
}

impl Output {
    fn from_slice(s: &[u8]) -> Output {
        // Only called with hasher output, which is never longer.
        let len = s.len().min(MAX_OUTPUT_LEN);
        let mut bytes = [0u8; MAX_OUTPUT_LEN];
        bytes[..len].copy_from_slice(&s[..len]);
        Output {
            len: len as u8,
            bytes,
        }
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The digest encoded with `encoding` (upper-case, padded where the
    /// encoding pads).
    pub fn encode(&self, encoding: Encoding) -> String {
        encoding.encode(self.as_bytes())
    }
}

impl std::ops::Deref for Output {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Output {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq<[u8]> for Output {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl fmt::Debug for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Output({})", Encoding::Base16.encode(self.as_bytes()))
    }
}

/// An incremental hash of one [`Algorithm`].
///
/// Also a [`Write`], so `io::copy` can feed it.
#[derive(Clone)]
pub struct Hasher {
    alg: Algorithm,
    state: State,
}

// Enum dispatch rather than `Box<dyn DynDigest>`: no allocation, and the
// match is cheaper than the hashing it guards.
#[derive(Clone)]
enum State {
    #[cfg(feature = "md5")]
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
    Sha512_224(sha2::Sha512_224),
    Sha512_256(sha2::Sha512_256),
    #[cfg(feature = "sha3")]
    Sha3_224(sha3::Sha3_224),
    #[cfg(feature = "sha3")]
    Sha3_256(sha3::Sha3_256),
    #[cfg(feature = "sha3")]
    Sha3_384(sha3::Sha3_384),
    #[cfg(feature = "sha3")]
    Sha3_512(sha3::Sha3_512),
}

macro_rules! dispatch {
    ($state:expr, $h:ident => $body:expr) => {
        match $state {
            #[cfg(feature = "md5")]
            State::Md5($h) => $body,
            State::Sha1($h) => $body,
            State::Sha224($h) => $body,
            State::Sha256($h) => $body,
            State::Sha384($h) => $body,
            State::Sha512($h) => $body,
            State::Sha512_224($h) => $body,
            State::Sha512_256($h) => $body,
            #[cfg(feature = "sha3")]
            State::Sha3_224($h) => $body,
            #[cfg(feature = "sha3")]
            State::Sha3_256($h) => $body,
            #[cfg(feature = "sha3")]
            State::Sha3_384($h) => $body,
            #[cfg(feature = "sha3")]
            State::Sha3_512($h) => $body,
        }
    };
}

impl Hasher {
    /// A fresh hasher for `alg`.
    pub fn new(alg: Algorithm) -> Hasher {
        let state = match alg {
            #[cfg(feature = "md5")]
            Algorithm::Md5 => State::Md5(md5::Md5::new()),
            Algorithm::Sha1 => State::Sha1(sha1::Sha1::new()),
            Algorithm::Sha224 => State::Sha224(sha2::Sha224::new()),
            Algorithm::Sha256 => State::Sha256(sha2::Sha256::new()),
            Algorithm::Sha384 => State::Sha384(sha2::Sha384::new()),
            Algorithm::Sha512 => State::Sha512(sha2::Sha512::new()),
            Algorithm::Sha512_224 => State::Sha512_224(sha2::Sha512_224::new()),
            Algorithm::Sha512_256 => State::Sha512_256(sha2::Sha512_256::new()),
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_224 => State::Sha3_224(sha3::Sha3_224::new()),
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_256 => State::Sha3_256(sha3::Sha3_256::new()),
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_384 => State::Sha3_384(sha3::Sha3_384::new()),
            #[cfg(feature = "sha3")]
            Algorithm::Sha3_512 => State::Sha3_512(sha3::Sha3_512::new()),
        };
        Hasher { alg, state }
    }

    /// The algorithm this hasher computes.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// Hashes `data`.
    pub fn update(&mut self, data: &[u8]) {
        dispatch!(&mut self.state, h => h.update(data))
    }

    /// The digest of everything hashed so far; consumes the hasher.
    pub fn finalize(self) -> Output {
        dispatch!(self.state, h => Output::from_slice(&h.finalize()))
    }

    /// The digest of everything hashed so far, and starts over.
    pub fn finalize_reset(&mut self) -> Output {
        dispatch!(&mut self.state, h => Output::from_slice(&h.finalize_reset()))
    }

    /// One-shot digest of `data`.
    pub fn digest(alg: Algorithm, data: &[u8]) -> Output {
        let mut h = Hasher::new(alg);
        h.update(data);
        h.finalize()
    }
}

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hasher").field("alg", &self.alg).finish()
    }
}

impl Write for Hasher {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How the bytes of a digest are written as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum Encoding {
    /// RFC 4648 base32, upper-case alphabet: the WARC convention.
    Base32,
    /// Hexadecimal.
    Base16,
    /// RFC 4648 base64, standard alphabet.
    Base64,
    /// RFC 4648 base64, URL-safe alphabet (`-` and `_`); only ever detected
    /// when reading.
    Base64Url,
}

impl Encoding {
    /// A short lower-case name for reports: `base32`, `base16`, `base64`,
    /// `base64url`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Base32 => "base32",
            Encoding::Base16 => "base16",
            Encoding::Base64 => "base64",
            Encoding::Base64Url => "base64url",
        }
    }

    /// Encodes `bytes`: base32 upper-case with `=` padding, hex lower-case,
    /// base64 with padding.
    pub fn encode(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Base32 => data_encoding::BASE32.encode(bytes),
            // Lower-case hex: what sha256sum and most tools print.
            Encoding::Base16 => data_encoding::HEXLOWER.encode(bytes),
            Encoding::Base64 => data_encoding::BASE64.encode(bytes),
            Encoding::Base64Url => data_encoding::BASE64URL.encode(bytes),
        }
    }

    /// Decodes `text` in this encoding: case-insensitive for base32 and
    /// base16, trailing `=` padding optional. `None` when a character is
    /// not of the alphabet.
    pub fn decode(self, text: &str) -> Option<Vec<u8>> {
        let t = text.trim_end_matches('=').as_bytes();
        let r = match self {
            Encoding::Base32 => data_encoding::BASE32_NOPAD_NOCASE.decode(t),
            Encoding::Base16 => data_encoding::HEXLOWER_PERMISSIVE.decode(t),
            Encoding::Base64 => data_encoding::BASE64_NOPAD.decode(t),
            Encoding::Base64Url => data_encoding::BASE64URL_NOPAD.decode(t),
        };
        r.ok()
    }

    /// The length of the unpadded text encoding `n` bytes.
    fn unpadded_len(self, n: usize) -> usize {
        match self {
            Encoding::Base32 => (n * 8).div_ceil(5),
            Encoding::Base16 => n * 2,
            Encoding::Base64 | Encoding::Base64Url => (n * 4).div_ceil(3),
        }
    }

    /// The encoding a value of an algorithm whose output is `output_len`
    /// bytes must be in, judged from the value's length (padding ignored)
    /// and, for base64, whether it uses the URL-safe characters. The
    /// lengths never collide for the supported algorithms (sha1: 40 hex, 32
    /// base32, 27 base64).
    pub fn detect(value: &str, output_len: usize) -> Option<Encoding> {
        let t = value.trim_end_matches('=');
        let len = t.len();
        if len == Encoding::Base16.unpadded_len(output_len) {
            Some(Encoding::Base16)
        } else if len == Encoding::Base32.unpadded_len(output_len) {
            Some(Encoding::Base32)
        } else if len == Encoding::Base64.unpadded_len(output_len) {
            if t.bytes().any(|b| b == b'-' || b == b'_') {
                Some(Encoding::Base64Url)
            } else {
                Some(Encoding::Base64)
            }
        } else {
            None
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a digest field value does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DigestError {
    /// No `:` between algorithm and value.
    #[error("digest has no ':' between algorithm and value")]
    NoColon,
    /// Nothing before the colon.
    #[error("digest has no algorithm before ':'")]
    EmptyLabel,
    /// Nothing after the colon.
    #[error("digest has no value after ':'")]
    EmptyValue,
    /// The value's length fits no encoding of the algorithm's output.
    #[error(
        "{algorithm} digest value has {len} characters, which is no encoding of {} bytes",
        algorithm.output_len()
    )]
    WrongLength {
        /// The algorithm named.
        algorithm: Algorithm,
        /// The value's length in characters, padding included.
        len: usize,
    },
    /// The value has characters outside the alphabet its length implies.
    #[error("{algorithm} digest value has characters that are not {encoding}")]
    BadCharacters {
        /// The algorithm named.
        algorithm: Algorithm,
        /// The encoding the value's length implies.
        encoding: Encoding,
    },
}

/// A labelled digest, `algorithm ":" value`, as in `WARC-Block-Digest` and
/// `WARC-Payload-Digest`.
///
/// A label we do not know is *not* an error: the digest is kept with
/// [`algorithm`](Digest::algorithm) `None` and no bytes, so a validator can
/// say "unknown algorithm, not checked" rather than "malformed".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    raw: String,
    colon: usize,
    algorithm: Option<Algorithm>,
    encoding: Option<Encoding>,
    bytes: Vec<u8>,
}

impl Digest {
    /// Parses a field value. White space around the whole value and around
    /// the digest value is ignored (but kept in [`as_str`](Digest::as_str)).
    pub fn parse(text: &str) -> Result<Digest, DigestError> {
        let colon = text.find(':').ok_or(DigestError::NoColon)?;
        let label = text[..colon].trim();
        let value = text[colon + 1..].trim();
        if label.is_empty() {
            return Err(DigestError::EmptyLabel);
        }
        if value.is_empty() {
            return Err(DigestError::EmptyValue);
        }
        let mut d = Digest {
            raw: text.to_owned(),
            colon,
            algorithm: None,
            encoding: None,
            bytes: Vec::new(),
        };
        let Some(alg) = Algorithm::from_label(label) else {
            return Ok(d);
        };
        let encoding =
            Encoding::detect(value, alg.output_len()).ok_or(DigestError::WrongLength {
                algorithm: alg,
                len: value.len(),
            })?;
        let bytes = encoding.decode(value).ok_or(DigestError::BadCharacters {
            algorithm: alg,
            encoding,
        })?;
        if bytes.len() != alg.output_len() {
            // Unreachable given detect(), but cheap to guard.
            return Err(DigestError::WrongLength {
                algorithm: alg,
                len: value.len(),
            });
        }
        d.algorithm = Some(alg);
        d.encoding = Some(encoding);
        d.bytes = bytes;
        Ok(d)
    }

    /// A digest of `alg` with value `bytes`, to be written in base32. The
    /// bytes are taken as given; they should be `alg.output_len()` long.
    pub fn new(alg: Algorithm, bytes: &[u8]) -> Digest {
        Digest::with_encoding(alg, bytes, Encoding::Base32)
    }

    /// Like [`new`](Digest::new), written in `encoding`.
    pub fn with_encoding(alg: Algorithm, bytes: &[u8], encoding: Encoding) -> Digest {
        let label = alg.label();
        let raw = format!("{label}:{}", encoding.encode(bytes));
        Digest {
            raw,
            colon: label.len(),
            algorithm: Some(alg),
            encoding: Some(encoding),
            bytes: bytes.to_vec(),
        }
    }

    /// The whole value as given to [`parse`](Digest::parse) (or as built).
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The algorithm label as written, trimmed (`SHA-1`, `sha1`, ...).
    pub fn label(&self) -> &str {
        self.raw[..self.colon].trim()
    }

    /// The digest value as written, trimmed.
    pub fn value(&self) -> &str {
        self.raw[self.colon + 1..].trim()
    }

    /// The algorithm, when the label names one we know.
    pub fn algorithm(&self) -> Option<Algorithm> {
        self.algorithm
    }

    /// The encoding the value was found in; `None` for unknown algorithms.
    pub fn encoding(&self) -> Option<Encoding> {
        self.encoding
    }

    /// The decoded digest; empty for unknown algorithms.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// True when the algorithm is known (and so the value was decoded).
    pub fn is_known(&self) -> bool {
        self.algorithm.is_some()
    }

    /// True when the algorithm is known and `computed` is this digest.
    pub fn matches(&self, computed: &[u8]) -> bool {
        self.is_known() && self.bytes == computed
    }

    /// True when the value is already written the canonical way: the
    /// canonical label and upper-case base32 (padded as [`Encoding::encode`]
    /// pads).
    pub fn is_canonical(&self) -> bool {
        self.is_known() && self.raw == self.to_string()
    }

    /// Parses a digest field of an index (CDXJ, CDX): like
    /// [`parse`](Digest::parse), but a value without a label is a SHA-1,
    /// as pywb and cdxj-indexer write it (base32, no `sha1:`). Such a value
    /// gains the `sha1:` label in [`as_str`](Digest::as_str).
    ///
    /// # Errors
    /// As [`parse`](Digest::parse).
    pub fn parse_indexed(text: &str) -> Result<Digest, DigestError> {
        if text.contains(':') {
            Digest::parse(text)
        } else {
            Digest::parse(&format!("sha1:{text}"))
        }
    }

    /// The key this digest is looked up by: the canonical label and the
    /// value in unpadded upper-case base32, whatever label spelling
    /// (`SHA-1`, `Sha1`) and encoding (base16, base32, base64) it was
    /// written in, so two writings of one digest meet. Unknown algorithms:
    /// the text as given, trimmed and lower-cased.
    ///
    /// Only for lookups: what is written to disk keeps its own form.
    pub fn lookup_key(&self) -> String {
        match self.algorithm {
            Some(alg) => format!(
                "{}:{}",
                alg.label(),
                data_encoding::BASE32_NOPAD.encode(&self.bytes)
            ),
            None => self.raw.trim().to_ascii_lowercase(),
        }
    }
}

/// The lookup key ([`Digest::lookup_key`]) of a digest as found in a WARC
/// header or an index ([`Digest::parse_indexed`]: no label is SHA-1); a
/// value that does not parse is its own key, trimmed and lower-cased.
///
/// ```
/// use warchest::digest::lookup_key;
/// let key = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
/// assert_eq!(lookup_key("3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"), key);
/// assert_eq!(lookup_key("SHA-1:da39a3ee5e6b4b0d3255bfef95601890afd80709"), key);
/// assert_eq!(lookup_key("Sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk="), key);
/// ```
pub fn lookup_key(text: &str) -> String {
    let text = text.trim();
    // The usual writing (an index's SHA-1 in base32, labelled or not) is
    // its own key: no parse, no decode and encode again, for each record
    // a store indexes.
    let value = match text.get(..5) {
        Some(l) if l.eq_ignore_ascii_case("sha1:") => &text[5..],
        _ => text,
    };
    if value.len() == 32
        && value
            .bytes()
            .all(|b| matches!(b, b'A'..=b'Z' | b'2'..=b'7'))
    {
        return format!("sha1:{value}");
    }
    match Digest::parse_indexed(text) {
        Ok(d) => d.lookup_key(),
        Err(_) => text.to_ascii_lowercase(),
    }
}

impl fmt::Display for Digest {
    /// Known algorithms: `label:BASE32`, canonical whatever was parsed.
    /// Unknown ones: the text as given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.algorithm {
            Some(alg) => write!(
                f,
                "{}:{}",
                alg.label(),
                Encoding::Base32.encode(&self.bytes)
            ),
            None => f.write_str(&self.raw),
        }
    }
}

impl std::str::FromStr for Digest {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Digest, DigestError> {
        Digest::parse(s)
    }
}

fn hashers(algs: &[Algorithm]) -> Vec<Hasher> {
    algs.iter().map(|&a| Hasher::new(a)).collect()
}

fn finish_all(hashers: Vec<Hasher>) -> Vec<Output> {
    hashers.into_iter().map(Hasher::finalize).collect()
}

/// A [`Read`] (and, over a [`BufRead`], a `BufRead`) that hashes every
/// byte read through it, with one or more algorithms.
///
/// Bytes read through [`get_mut`](DigestReader::get_mut) bypass the hash.
#[derive(Debug)]
pub struct DigestReader<R> {
    inner: R,
    hashers: Vec<Hasher>,
    count: u64,
}

impl<R> DigestReader<R> {
    /// Hashes `inner` with `alg`.
    pub fn new(inner: R, alg: Algorithm) -> Self {
        DigestReader::with_algorithms(inner, &[alg])
    }

    /// Hashes `inner` with each of `algs` (e.g. sha1 for the file and sha256
    /// for a manifest, in one pass).
    pub fn with_algorithms(inner: R, algs: &[Algorithm]) -> Self {
        DigestReader {
            inner,
            hashers: hashers(algs),
            count: 0,
        }
    }

    /// The wrapped reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The wrapped reader; what is read through it is not hashed.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The wrapped reader, dropping the hash state.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// How many bytes have been hashed.
    pub fn bytes_read(&self) -> u64 {
        self.count
    }

    /// The wrapped reader and the digests so far, one per algorithm in the
    /// order given.
    pub fn finish(self) -> (R, Vec<Output>) {
        (self.inner, finish_all(self.hashers))
    }

    fn hash(&mut self, data: &[u8]) {
        for h in &mut self.hashers {
            h.update(data);
        }
        self.count += data.len() as u64;
    }
}

impl<R: Read> Read for DigestReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        // A misbehaving reader may claim more than the buffer; never slice past it.
        let n = n.min(buf.len());
        self.hash(&buf[..n]);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for DigestReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // The BufRead contract makes a second fill_buf before consume return
        // the same bytes without I/O, so this sees exactly what is consumed.
        if let Ok(buf) = self.inner.fill_buf() {
            let n = amt.min(buf.len());
            for h in &mut self.hashers {
                h.update(&buf[..n]);
            }
            self.count += n as u64;
        }
        self.inner.consume(amt);
    }
}

/// A [`Write`] that hashes every byte the inner writer accepts, with one or
/// more algorithms.
///
/// Bytes written through [`get_mut`](DigestWriter::get_mut) bypass the hash.
#[derive(Debug)]
pub struct DigestWriter<W> {
    inner: W,
    hashers: Vec<Hasher>,
    count: u64,
}

impl<W> DigestWriter<W> {
    /// Hashes what is written to `inner` with `alg`.
    pub fn new(inner: W, alg: Algorithm) -> Self {
        DigestWriter::with_algorithms(inner, &[alg])
    }

    /// Hashes what is written to `inner` with each of `algs`.
    pub fn with_algorithms(inner: W, algs: &[Algorithm]) -> Self {
        DigestWriter {
            inner,
            hashers: hashers(algs),
            count: 0,
        }
    }

    /// The wrapped writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The wrapped writer; what is written through it is not hashed.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The wrapped writer, dropping the hash state.
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// How many bytes have been hashed.
    pub fn bytes_written(&self) -> u64 {
        self.count
    }

    /// The wrapped writer (not flushed) and the digests, one per algorithm
    /// in the order given.
    pub fn finish(self) -> (W, Vec<Output>) {
        (self.inner, finish_all(self.hashers))
    }
}

impl<W: Write> Write for DigestWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?.min(buf.len());
        // Only what the inner writer took: a short write is retried by the
        // caller and must not be hashed twice.
        for h in &mut self.hashers {
            h.update(&buf[..n]);
        }
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// SHA-1 over a stream of bytes, on the `sha1` crate's block function, so
/// that two streams over the same bytes can be fed together
/// ([`Sha1Stream::update_pair`]): a record's block digest and the payload
/// digest of its HTTP body are two SHA-1s over nearly the same bytes, and
/// SHA-1 is bound by the latency of its rounds, so the rounds of two
/// independent blocks issued side by side run in about 60 % of the time of
/// one after the other (docs/performance-history.md, "check and validate, round
/// three"). Its digests are the `sha1` crate's (tests below).
#[derive(Clone)]
pub(crate) struct Sha1Stream {
    state: [u32; 5],
    buf: [u8; 64],
    buf_len: usize,
    len: u64,
}

type Sha1Block = digest::generic_array::GenericArray<u8, digest::typenum::U64>;

fn sha1_block(state: &mut [u32; 5], block: &[u8]) {
    sha1::compress(state, std::slice::from_ref(Sha1Block::from_slice(block)));
}

impl Sha1Stream {
    /// A fresh stream.
    pub(crate) fn new() -> Sha1Stream {
        Sha1Stream {
            state: [
                0x6745_2301,
                0xEFCD_AB89,
                0x98BA_DCFE,
                0x1032_5476,
                0xC3D2_E1F0,
            ],
            buf: [0; 64],
            buf_len: 0,
            len: 0,
        }
    }

    /// Bytes hashed so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Completes a partly filled block from the start of `data`; what is
    /// left of `data`.
    fn top_up<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        self.len += data.len() as u64;
        if self.buf_len == 0 {
            return data;
        }
        let take = (64 - self.buf_len).min(data.len());
        self.buf[self.buf_len..self.buf_len + take].copy_from_slice(&data[..take]);
        self.buf_len += take;
        if self.buf_len == 64 {
            sha1_block(&mut self.state, &self.buf);
            self.buf_len = 0;
        }
        &data[take..]
    }

    /// Keeps the last partial block of `rest` (less than 64 bytes). The
    /// buffer is empty unless `rest` is (see `top_up`).
    fn keep(&mut self, rest: &[u8]) {
        if rest.is_empty() {
            return;
        }
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buf_len = rest.len();
    }

    /// Hashes `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        let data = self.top_up(data);
        let mut blocks = data.chunks_exact(64);
        for b in &mut blocks {
            sha1_block(&mut self.state, b);
        }
        self.keep(blocks.remainder());
    }

    /// Hashes `data` into both `a` and `b`, their blocks interleaved.
    #[cfg(test)]
    pub(crate) fn update_pair(a: &mut Sha1Stream, b: &mut Sha1Stream, data: &[u8]) {
        Sha1Stream::update_two(a, data, b, data);
    }

    /// Hashes `da` into `a` and `db` into `b`, their blocks interleaved
    /// (`db` is usually the tail of `da`: a body after its head).
    pub(crate) fn update_two(a: &mut Sha1Stream, da: &[u8], b: &mut Sha1Stream, db: &[u8]) {
        let da = a.top_up(da);
        let db = b.top_up(db);
        let mut ba = da.chunks_exact(64);
        let mut bb = db.chunks_exact(64);
        // The two block functions are independent: issued one after the
        // other, the CPU runs their rounds side by side.
        // By count, not `zip`: zip would drop a block of `ba` when `bb`
        // has run out.
        for _ in 0..ba.len().min(bb.len()) {
            if let (Some(x), Some(y)) = (ba.next(), bb.next()) {
                sha1_block(&mut a.state, x);
                sha1_block(&mut b.state, y);
            }
        }
        for x in &mut ba {
            sha1_block(&mut a.state, x);
        }
        for y in &mut bb {
            sha1_block(&mut b.state, y);
        }
        a.keep(ba.remainder());
        b.keep(bb.remainder());
    }

    /// The digest (FIPS 180-4 padding: 0x80, zeros, the length in bits).
    pub(crate) fn finalize(mut self) -> Output {
        let bits = self.len.wrapping_mul(8);
        let n = self.buf_len;
        self.buf[n] = 0x80;
        self.buf[n + 1..].fill(0);
        if n >= 56 {
            sha1_block(&mut self.state, &self.buf);
            self.buf.fill(0);
        }
        self.buf[56..].copy_from_slice(&bits.to_be_bytes());
        sha1_block(&mut self.state, &self.buf);
        let mut out = [0u8; 20];
        for (o, w) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&w.to_be_bytes());
        }
        Output::from_slice(&out)
    }
}

impl fmt::Debug for Sha1Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sha1Stream")
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_stream_is_sha1_in_any_pieces() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        for n in [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000] {
            let want = Hasher::digest(Algorithm::Sha1, &data[..n]);
            for piece in [1, 3, 63, 64, 65, 200, 1000] {
                let mut s = Sha1Stream::new();
                for p in data[..n].chunks(piece) {
                    s.update(p);
                }
                assert_eq!(s.len(), n as u64);
                assert_eq!(s.finalize(), want, "{n} bytes in pieces of {piece}");
            }
        }
    }

    #[test]
    fn sha1_pair_is_two_sha1s() {
        // `b` starts `skip` bytes into the data, as a payload starts after
        // the HTTP head; both are fed the same pieces afterwards.
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 17 + i / 5) as u8).collect();
        for skip in [0, 1, 37, 64, 100, 999] {
            for piece in [1, 7, 64, 65, 500, 3000] {
                let (mut a, mut b) = (Sha1Stream::new(), Sha1Stream::new());
                a.update(&data[..skip]);
                for p in data[skip..].chunks(piece) {
                    Sha1Stream::update_pair(&mut a, &mut b, p);
                }
                let ctx = format!("skip {skip}, pieces of {piece}");
                assert_eq!(
                    a.finalize(),
                    Hasher::digest(Algorithm::Sha1, &data),
                    "{ctx}"
                );
                assert_eq!(
                    b.finalize(),
                    Hasher::digest(Algorithm::Sha1, &data[skip..]),
                    "{ctx}"
                );
            }
        }
    }

    #[test]
    fn sha1_two_streams_of_a_block_and_its_tail() {
        // As a checker feeds them: the whole piece to the block digest,
        // the piece after the head to the payload digest.
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 13 + i / 3) as u8).collect();
        for head in [0, 1, 63, 64, 200, 4999, 5000] {
            let (mut a, mut b) = (Sha1Stream::new(), Sha1Stream::new());
            Sha1Stream::update_two(&mut a, &data, &mut b, &data[head..]);
            assert_eq!(
                a.finalize(),
                Hasher::digest(Algorithm::Sha1, &data),
                "{head}"
            );
            assert_eq!(
                b.finalize(),
                Hasher::digest(Algorithm::Sha1, &data[head..]),
                "{head}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn sha1_pair_any_split(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700), skip in 0usize..700, cuts in proptest::collection::vec(1usize..150, 1..8)) {
            let skip = skip.min(data.len());
            let (mut a, mut b) = (Sha1Stream::new(), Sha1Stream::new());
            a.update(&data[..skip]);
            let mut rest = &data[skip..];
            let mut i = 0;
            while !rest.is_empty() {
                let n = cuts[i % cuts.len()].min(rest.len());
                Sha1Stream::update_pair(&mut a, &mut b, &rest[..n]);
                rest = &rest[n..];
                i += 1;
            }
            proptest::prop_assert_eq!(a.finalize(), Hasher::digest(Algorithm::Sha1, &data));
            proptest::prop_assert_eq!(b.finalize(), Hasher::digest(Algorithm::Sha1, &data[skip..]));
        }
    }

    const EMPTY_SHA1_B32: &str = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
    const EMPTY_SHA1_HEX: &str = "da39a3ee5e6b4b0d3255bfef95601890afd80709";

    #[test]
    fn labels_normalise() {
        for (label, alg) in [
            ("SHA-1", Algorithm::Sha1),
            ("sha1", Algorithm::Sha1),
            ("Sha_1", Algorithm::Sha1),
            ("sha-256", Algorithm::Sha256),
            ("SHA256", Algorithm::Sha256),
            #[cfg(feature = "md5")]
            ("md5", Algorithm::Md5),
            #[cfg(feature = "md5")]
            ("MD-5", Algorithm::Md5),
            ("sha512/224", Algorithm::Sha512_224),
            ("SHA-512/256", Algorithm::Sha512_256),
            #[cfg(feature = "sha3")]
            ("sha3-256", Algorithm::Sha3_256),
            #[cfg(feature = "sha3")]
            ("SHA3_512", Algorithm::Sha3_512),
            (" sha384 ", Algorithm::Sha384),
        ] {
            assert_eq!(Algorithm::from_label(label), Some(alg), "{label}");
        }
        for bad in ["", "sha", "sha2", "crc32", "sha1sha1sha1sha1sha1", "sha 1"] {
            assert_eq!(Algorithm::from_label(bad), None, "{bad}");
        }
        // Every canonical label reads back as its algorithm.
        for alg in Algorithm::ALL {
            assert_eq!(Algorithm::from_label(alg.label()), Some(alg));
            assert_eq!(Hasher::digest(alg, b"abc").len(), alg.output_len());
        }
    }

    #[test]
    fn known_vectors() {
        let sha1 = Hasher::digest(Algorithm::Sha1, b"");
        assert_eq!(sha1.encode(Encoding::Base32), EMPTY_SHA1_B32);
        assert_eq!(sha1.encode(Encoding::Base16), EMPTY_SHA1_HEX);
        let cases: &[(Algorithm, &str)] = &[
            #[cfg(feature = "md5")]
            (Algorithm::Md5, "900150983cd24fb0d6963f7d28e17f72"),
            (Algorithm::Sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                Algorithm::Sha256,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            #[cfg(feature = "sha3")]
            (
                Algorithm::Sha3_256,
                "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
            ),
            (
                Algorithm::Sha512_224,
                "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa",
            ),
        ];
        for &(alg, hex) in cases {
            assert_eq!(
                Hasher::digest(alg, b"abc").encode(Encoding::Base16),
                hex,
                "{alg}"
            );
        }
    }

    #[test]
    fn finalize_reset_starts_over() {
        let mut h = Hasher::new(Algorithm::Sha256);
        h.update(b"ab");
        h.update(b"c");
        let first = h.finalize_reset();
        h.update(b"abc");
        assert_eq!(first, h.finalize());
        assert_eq!(first, Hasher::digest(Algorithm::Sha256, b"abc"));
        let mut h = Hasher::new(Algorithm::Sha1);
        h.update(b"x");
        assert_ne!(h.finalize_reset(), h.clone().finalize());
    }

    #[test]
    fn encodings_round_trip() {
        for alg in Algorithm::ALL {
            let d = Hasher::digest(alg, b"round trip");
            for enc in [
                Encoding::Base32,
                Encoding::Base16,
                Encoding::Base64,
                Encoding::Base64Url,
            ] {
                let text = d.encode(enc);
                assert_eq!(
                    Encoding::detect(&text, alg.output_len()),
                    Some(enc_or_b64(enc, &text))
                );
                assert_eq!(enc.decode(&text).as_deref(), Some(&d[..]), "{alg} {enc}");
                // Without padding, and case-folded where that is allowed.
                let bare = text.trim_end_matches('=');
                assert_eq!(enc.decode(bare).as_deref(), Some(&d[..]));
                if matches!(enc, Encoding::Base32 | Encoding::Base16) {
                    assert_eq!(
                        enc.decode(&text.to_ascii_lowercase()).as_deref(),
                        Some(&d[..])
                    );
                    assert_eq!(
                        enc.decode(&text.to_ascii_uppercase()).as_deref(),
                        Some(&d[..])
                    );
                }
                let parsed = Digest::parse(&format!("{}:{text}", alg.label())).unwrap();
                assert!(parsed.matches(&d));
                assert_eq!(parsed.to_string(), Digest::new(alg, &d).to_string());
            }
        }
    }

    // A URL-safe base64 value without '-' or '_' is indistinguishable from
    // standard base64, and detect() says so.
    fn enc_or_b64(enc: Encoding, text: &str) -> Encoding {
        if enc == Encoding::Base64Url && !text.contains(['-', '_']) {
            Encoding::Base64
        } else {
            enc
        }
    }

    #[test]
    fn parse_detects_encoding() {
        let empty = Hasher::digest(Algorithm::Sha1, b"");
        for (text, enc) in [
            ("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", Encoding::Base32),
            ("SHA-1:3i42h3s6nnfq2msvx7xzkyayscx5qbyj", Encoding::Base32),
            (
                "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
                Encoding::Base16,
            ),
            (
                "sha1:DA39A3EE5E6B4B0D3255BFEF95601890AFD80709",
                Encoding::Base16,
            ),
            ("sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk=", Encoding::Base64),
            ("sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk", Encoding::Base64),
            ("sha1:2jmj7l5rSw0yVb_vlWAYkK_YBwk", Encoding::Base64Url),
            (" sha1: 3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ ", Encoding::Base32),
        ] {
            let d = Digest::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(d.algorithm(), Some(Algorithm::Sha1), "{text}");
            assert_eq!(d.encoding(), Some(enc), "{text}");
            assert!(d.matches(&empty), "{text}");
            assert!(!d.matches(&Hasher::digest(Algorithm::Sha1, b"x")));
            assert_eq!(d.as_str(), text);
            assert_eq!(d.to_string(), format!("sha1:{EMPTY_SHA1_B32}"));
        }
        let d = Digest::parse("SHA-1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ").unwrap();
        assert_eq!(d.label(), "SHA-1");
        assert_eq!(d.value(), EMPTY_SHA1_B32);
        assert!(!d.is_canonical());
        assert!(
            Digest::parse("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
                .unwrap()
                .is_canonical()
        );
        // md5 padded base32 is 32 characters, as long as md5 hex: padding tells.
        #[cfg(feature = "md5")]
        {
            let md5 = Hasher::digest(Algorithm::Md5, b"");
            let b32 = md5.encode(Encoding::Base32);
            assert_eq!(b32.len(), 32);
            let d = Digest::parse(&format!("md5:{b32}")).unwrap();
            assert_eq!(d.encoding(), Some(Encoding::Base32));
            assert!(d.matches(&md5));
            let d = Digest::parse(&format!("md5:{}", md5.encode(Encoding::Base16))).unwrap();
            assert_eq!(d.encoding(), Some(Encoding::Base16));
            assert!(d.matches(&md5));
        }
    }

    #[test]
    fn parse_errors() {
        assert_eq!(Digest::parse("sha1"), Err(DigestError::NoColon));
        assert_eq!(Digest::parse(":abc"), Err(DigestError::EmptyLabel));
        assert_eq!(Digest::parse("sha1:  "), Err(DigestError::EmptyValue));
        assert_eq!(
            Digest::parse("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBY"),
            Err(DigestError::WrongLength {
                algorithm: Algorithm::Sha1,
                len: 31
            })
        );
        assert_eq!(
            Digest::parse("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBY1"),
            Err(DigestError::BadCharacters {
                algorithm: Algorithm::Sha1,
                encoding: Encoding::Base32
            })
        );
        assert_eq!(
            Digest::parse("sha1:zz39a3ee5e6b4b0d3255bfef95601890afd80709"),
            Err(DigestError::BadCharacters {
                algorithm: Algorithm::Sha1,
                encoding: Encoding::Base16
            })
        );
        let msg = Digest::parse("sha256:abc").unwrap_err().to_string();
        assert!(msg.contains("32 bytes"), "{msg}");
    }

    #[test]
    fn unknown_algorithm_is_kept() {
        let d = Digest::parse("crc32:ABCDEF12").unwrap();
        assert_eq!(d.algorithm(), None);
        assert!(!d.is_known());
        assert_eq!(d.label(), "crc32");
        assert_eq!(d.value(), "ABCDEF12");
        assert!(!d.matches(&[]));
        assert!(d.bytes().is_empty());
        assert_eq!(d.to_string(), "crc32:ABCDEF12");
        assert_eq!(Algorithm::missing_feature("crc32"), None);
        assert_eq!(Algorithm::missing_feature("sha-1"), None);
    }

    /// An algorithm whose feature is off is an unknown one, and says why.
    #[test]
    fn algorithms_of_features_that_are_off() {
        let md5 = "md5:1B2M2Y8AsgTpgAmY7PhCfg==";
        let sha3 = "sha3-256:a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a";
        for (text, feature, on) in [
            (md5, "md5", cfg!(feature = "md5")),
            (sha3, "sha3", cfg!(feature = "sha3")),
        ] {
            let d = Digest::parse(text).unwrap();
            assert_eq!(d.is_known(), on, "{text}");
            let label = d.label().to_owned();
            let want = (!on).then_some(feature);
            assert_eq!(Algorithm::missing_feature(&label), want, "{text}");
            assert_eq!(Algorithm::from_label(&label).is_some(), on, "{text}");
        }
        assert_eq!(
            Algorithm::ALL.len(),
            7 + usize::from(cfg!(feature = "md5")) + 4 * usize::from(cfg!(feature = "sha3"))
        );
    }

    #[test]
    fn new_and_display() {
        let out = Hasher::digest(Algorithm::Sha1, b"");
        let d = Digest::new(Algorithm::Sha1, &out);
        assert_eq!(d.to_string(), format!("sha1:{EMPTY_SHA1_B32}"));
        assert_eq!(d.as_str(), d.to_string());
        let d = Digest::with_encoding(Algorithm::Sha1, &out, Encoding::Base16);
        assert_eq!(d.as_str(), format!("sha1:{EMPTY_SHA1_HEX}"));
        assert_eq!(d.encoding(), Some(Encoding::Base16));
        // Display is canonical base32 whatever the encoding.
        assert_eq!(d.to_string(), format!("sha1:{EMPTY_SHA1_B32}"));
        let s256 = Digest::new(Algorithm::Sha256, &Hasher::digest(Algorithm::Sha256, b""));
        assert!(s256.to_string().ends_with("===="), "{s256}");
        assert_eq!(Digest::parse(&s256.to_string()).unwrap(), s256);
    }

    #[test]
    fn reader_and_writer_hash_what_passes() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let algs = [Algorithm::Sha1, Algorithm::Sha256];
        let mut r = DigestReader::with_algorithms(&data[..], &algs);
        let mut out = Vec::new();
        let mut buf = [0u8; 333];
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(r.bytes_read(), data.len() as u64);
        let (_, d) = r.finish();
        assert_eq!(out, data);
        assert_eq!(d[0], Hasher::digest(Algorithm::Sha1, &data));
        assert_eq!(d[1], Hasher::digest(Algorithm::Sha256, &data));

        // BufRead path: consume in odd amounts.
        let mut r = DigestReader::new(
            io::BufReader::with_capacity(100, &data[..]),
            Algorithm::Sha512_224,
        );
        let mut total = 0;
        loop {
            let avail = r.fill_buf().unwrap().len();
            if avail == 0 {
                break;
            }
            let n = avail.min(37);
            r.consume(n);
            total += n;
        }
        assert_eq!(total, data.len());
        let (_, d) = r.finish();
        assert_eq!(d[0], Hasher::digest(Algorithm::Sha512_224, &data));

        let mut w = DigestWriter::with_algorithms(Vec::new(), &algs);
        w.write_all(&data[..5000]).unwrap();
        w.write_all(&data[5000..]).unwrap();
        w.flush().unwrap();
        assert_eq!(w.bytes_written(), data.len() as u64);
        let (v, d) = w.finish();
        assert_eq!(v, data);
        assert_eq!(d[1], Hasher::digest(Algorithm::Sha256, &data));
    }

    #[test]
    fn writer_hashes_only_accepted_bytes() {
        // A writer that takes at most 3 bytes per call.
        struct Short(Vec<u8>);
        impl Write for Short {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                let n = b.len().min(3);
                self.0.extend_from_slice(&b[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = DigestWriter::new(Short(Vec::new()), Algorithm::Sha1);
        w.write_all(b"hello, world").unwrap();
        let (inner, d) = w.finish();
        assert_eq!(inner.0, b"hello, world");
        assert_eq!(d[0], Hasher::digest(Algorithm::Sha1, b"hello, world"));
    }

    #[test]
    fn lookup_keys_meet_whatever_the_writing() {
        let key = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
        for written in [
            "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            "SHA1:3i42h3s6nnfq2msvx7xzkyayscx5qbyj",
            "Sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            "SHA-1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            " sha1: 3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ ",
            // An index's field: no label.
            "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
            "sha1:DA39A3EE5E6B4B0D3255BFEF95601890AFD80709",
            "da39a3ee5e6b4b0d3255bfef95601890afd80709",
            "sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
            "sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk",
        ] {
            assert_eq!(lookup_key(written), key, "{written}");
        }
        let d = Digest::parse("SHA-1:da39a3ee5e6b4b0d3255bfef95601890afd80709").unwrap();
        assert_eq!(d.lookup_key(), key);
        // Padding is not part of the key (sha256 base32 is padded).
        let bytes = Hasher::digest(Algorithm::Sha256, b"");
        let padded = Digest::new(Algorithm::Sha256, bytes.as_bytes());
        assert!(padded.as_str().ends_with('='));
        assert!(!padded.lookup_key().ends_with('='));
        let hex = Digest::with_encoding(Algorithm::Sha256, bytes.as_bytes(), Encoding::Base16);
        assert_eq!(lookup_key(hex.as_str()), padded.lookup_key());
        // Unknown or malformed: the text itself, trimmed, lower-cased.
        assert_eq!(lookup_key(" X-Custom:AbC "), "x-custom:abc");
        assert_eq!(lookup_key("sha1:abc"), "sha1:abc");
        // An index's field keeps the label it was given.
        let d = Digest::parse_indexed("3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ").unwrap();
        assert_eq!(d.as_str(), key);
    }
}
