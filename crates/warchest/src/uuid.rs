//! UUIDs for record ids (RFC 9562): random ones (version 4) and name-based
//! ones hashed with SHA-1 (version 5), written in lower case with hyphens.
//! A few lines instead of a crate: the record layers need nothing else.

use std::fmt;

use sha1::{Digest as _, Sha1};

/// A UUID's 16 bytes, in network order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Uuid([u8; 16]);

impl Uuid {
    /// The name space of URLs (RFC 9562 section 6.6),
    /// `6ba7b811-9dad-11d1-80b4-00c04fd430c8`.
    pub(crate) const NAMESPACE_URL: Uuid = Uuid([
        0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30,
        0xc8,
    ]);

    /// `bytes` with the version (the high nibble of octet 6) and the
    /// RFC 9562 variant (`10` in the high bits of octet 8) set.
    fn with_version(mut bytes: [u8; 16], version: u8) -> Uuid {
        bytes[6] = (bytes[6] & 0x0f) | (version << 4);
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Uuid(bytes)
    }

    /// A random UUID (version 4), from the operating system's generator.
    pub(crate) fn new_v4() -> Uuid {
        Uuid::with_version(random_bytes(), 4)
    }

    /// The name-based UUID (version 5) of `name` in `namespace`: the first
    /// 16 bytes of SHA-1(namespace, name), version and variant set.
    pub(crate) fn new_v5(namespace: &Uuid, name: &[u8]) -> Uuid {
        let mut h = Sha1::new();
        h.update(namespace.0);
        h.update(name);
        let hash = h.finalize();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&hash[..16]);
        Uuid::with_version(bytes, 5)
    }

    /// The 16 bytes.
    #[cfg(test)]
    fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Display for Uuid {
    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower-case hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 36];
        let mut at = 0;
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out[at] = b'-';
                at += 1;
            }
            out[at] = HEX[usize::from(b >> 4)];
            out[at + 1] = HEX[usize::from(b & 0x0f)];
            at += 2;
        }
        // Only ASCII was written.
        f.write_str(std::str::from_utf8(&out).unwrap_or_default())
    }
}

/// 16 random bytes from the operating system. Should it fail (it does not
/// on the platforms warchest runs on), bytes mixed from the clock, a
/// counter and the standard library's per-process random hash keys: ids
/// still unique, if not unpredictable.
fn random_bytes() -> [u8; 16] {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_ok() {
        return b;
    }
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    for (i, half) in b.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(t);
        h.write_u64(n);
        h.write_usize(i);
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v5_known_values() {
        // RFC 9562 appendix A.4, and Python's uuid.uuid5.
        let dns = Uuid([
            0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
            0x30, 0xc8,
        ]);
        assert_eq!(
            Uuid::new_v5(&dns, b"www.example.com").to_string(),
            "2ed6657d-e927-568b-95e1-2665a8aea6a2"
        );
        assert_eq!(
            Uuid::new_v5(&Uuid::NAMESPACE_URL, b"https://example.com/").to_string(),
            "dd2c1780-811a-5296-81c5-178a0ef488bc"
        );
        assert_eq!(
            Uuid::NAMESPACE_URL.to_string(),
            "6ba7b811-9dad-11d1-80b4-00c04fd430c8"
        );
    }

    #[test]
    fn v4_version_variant_and_form() {
        let a = Uuid::new_v4();
        let b = Uuid::new_v4();
        assert_ne!(a, b);
        for u in [a, b] {
            assert_eq!(u.as_bytes()[6] >> 4, 4);
            assert_eq!(u.as_bytes()[8] >> 6, 0b10);
            let s = u.to_string();
            assert_eq!(s.len(), 36);
            for (i, c) in s.char_indices() {
                if matches!(i, 8 | 13 | 18 | 23) {
                    assert_eq!(c, '-', "{s}");
                } else {
                    assert!(matches!(c, '0'..='9' | 'a'..='f'), "{s}");
                }
            }
            assert_eq!(&s[14..15], "4");
            assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"), "{s}");
        }
    }
}
