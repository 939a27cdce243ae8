//! Checks across records and files: duplicate ids, references to records
//! that exist (and are of the right kind), capture-event dates, revisit
//! targets and continuation chains.
//!
//! Memory stays small per record: an id is kept as a 64-bit hash plus a
//! 32-bit CRC (a false duplicate needs both to collide), with the record's
//! type, place and hashes of its date and target URI: about 48 bytes a
//! record. References whose target has not been read yet are kept until
//! the end, with the text needed to report them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry as Slot;
use std::hash::{BuildHasherDefault, Hasher};

use super::rules::{self, Rule};
use super::{At, Emit};
use warchest::warc::{RecordType, WarcDate};

/// What the cross-record checks need of one record, borrowed from its
/// header where it can be.
#[derive(Debug, Clone)]
pub(crate) struct RecordInfo<'h> {
    /// WARC-Record-ID as written (trimmed), for findings; its id is this
    /// without `<>`.
    pub record_id: Option<Cow<'h, str>>,
    pub offset: u64,
    pub kind: RecordType,
    pub date: Option<WarcDate>,
    /// WARC-Target-URI without `<>`.
    pub target_uri: Option<Cow<'h, str>>,
    /// References, without `<>`.
    pub concurrent_to: Vec<Cow<'h, str>>,
    pub refers_to: Option<Cow<'h, str>>,
    pub warcinfo_id: Option<Cow<'h, str>>,
    pub origin_id: Option<Cow<'h, str>>,
    pub segment_number: Option<u64>,
    pub total_length: Option<u64>,
    pub refers_to_target_uri: Option<Cow<'h, str>>,
    pub refers_to_date: Option<WarcDate>,
    /// Block bytes actually read.
    pub block_len: u64,
}

/// A hasher for keys that are hashes already.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// An id's 64-bit hash and its 32-bit check.
fn key(id: &str) -> (u64, u32) {
    (hash64(id.as_bytes()), crc32fast::hash(id.as_bytes()))
}

/// A fast 64-bit hash of an id: eight bytes a step, each mixed in with a
/// folded multiply (the 128-bit product's halves XORed, as wyhash and
/// foldhash do), then a final mix so that every bit of the input reaches
/// the low bits (the table's bucket) and the high ones (its 7-bit tag).
/// A plain 64-bit multiply a step carried a byte's change only upwards:
/// the top byte of one step, rotated, could be cancelled by a byte of the
/// next, so ids differing in two bytes three apart collided on all 64 bits
/// (and a colliding id was then not kept in the map). SipHash cost 450
/// instructions an id; it guards against chosen collisions, which buy
/// nothing here: the [`key`]'s CRC-32 must collide too, and the ids of a
/// file are its writer's anyway (SipHash ran with fixed keys).
fn hash64(bytes: &[u8]) -> u64 {
    const MUL: u64 = 0x9e37_79b9_7f4a_7c15;
    fn step(h: u64, w: u64) -> u64 {
        let p = u128::from(h ^ w) * u128::from(MUL);
        (p as u64) ^ ((p >> 64) as u64)
    }
    let mut h = (bytes.len() as u64).wrapping_mul(MUL);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = step(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(w));
    }
    // The finaliser of SplitMix64.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A non-zero 32-bit hash of some bytes (0 means "none").
fn hash32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes).max(1)
}

fn date_hash(d: &Option<WarcDate>) -> u32 {
    d.as_ref().map_or(0, |d| {
        let mut b = [0u8; 11];
        b[..2].copy_from_slice(&d.year.to_le_bytes());
        b[2..7].copy_from_slice(&[d.month, d.day, d.hour, d.minute, d.second]);
        b[7..].copy_from_slice(&d.nanos.to_le_bytes());
        hash32(&b)
    })
}

fn uri_hash(u: &Option<Cow<'_, str>>) -> u32 {
    u.as_deref().map_or(0, |u| hash32(u.as_bytes()))
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    offset: u64,
    file: u32,
    check: u32,
    date: u32,
    uri: u32,
    kind: RecordType,
    first_segment: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RefKind {
    ConcurrentTo,
    RefersTo,
    WarcinfoId,
    SegmentOriginId,
}

impl RefKind {
    fn field(self) -> &'static str {
        match self {
            RefKind::ConcurrentTo => warchest::warc::field::CONCURRENT_TO,
            RefKind::RefersTo => warchest::warc::field::REFERS_TO,
            RefKind::WarcinfoId => warchest::warc::field::WARCINFO_ID,
            RefKind::SegmentOriginId => warchest::warc::field::SEGMENT_ORIGIN_ID,
        }
    }
}

/// A reference from one record to another. Its texts are borrowed from
/// the record while it is checked, and copied (`Box<str>`) only when its
/// target is not read yet and it waits in [`Index::pending`].
#[derive(Debug, Clone)]
struct Ref<S> {
    kind: RefKind,
    target: (u64, u32),
    target_text: S,
    file: u32,
    offset: u64,
    record_id: Option<S>,
    /// The referring record's WARC-Date hash (capture events).
    date: u32,
    /// Revisit: hashes of WARC-Refers-To-Target-URI and -Date.
    rt_uri: u32,
    rt_date: u32,
}

impl<S: AsRef<str>> Ref<S> {
    fn at(&self) -> At {
        At {
            offset: Some(self.offset),
            record_id: self.record_id.as_ref().map(|r| r.as_ref().to_owned()),
        }
    }

    /// The target as written (without `<>`).
    fn text(&self) -> &str {
        self.target_text.as_ref()
    }

    /// The same reference, owning its texts.
    fn to_owned(&self) -> Ref<Box<str>> {
        Ref {
            kind: self.kind,
            target: self.target,
            target_text: self.text().into(),
            file: self.file,
            offset: self.offset,
            record_id: self.record_id.as_ref().map(|r| r.as_ref().into()),
            date: self.date,
            rt_uri: self.rt_uri,
            rt_date: self.rt_date,
        }
    }
}

/// One segment of a segmented record.
#[derive(Debug, Clone)]
struct Segment {
    number: u64,
    len: u64,
    total: Option<u64>,
    uri: u32,
    file: u32,
    offset: u64,
    record_id: Option<Box<str>>,
}

impl Segment {
    fn at(&self) -> At {
        At {
            offset: Some(self.offset),
            record_id: self.record_id.as_deref().map(str::to_owned),
        }
    }
}

#[derive(Debug, Default)]
struct Chain {
    origin: Option<Segment>,
    segments: Vec<Segment>,
}

/// The index of every record read so far.
#[derive(Debug, Default)]
pub(crate) struct Index {
    records: KeyMap<Entry>,
    pending: Vec<Ref<Box<str>>>,
    chains: KeyMap<Chain>,
    keys: RecentKeys,
}

/// The last few ids given a [`key`], with their keys: most references name
/// an id just seen (WARC-Warcinfo-ID the same warcinfo record, a
/// response's WARC-Concurrent-To the request before it), and comparing
/// the text costs less than hashing it twice.
#[derive(Debug, Default)]
struct RecentKeys {
    ids: [String; RECENT_KEYS],
    keys: [(u64, u32); RECENT_KEYS],
    /// Slots filled so far (up to `RECENT_KEYS`).
    filled: usize,
    /// The slot the next new id goes to.
    next: usize,
}

const RECENT_KEYS: usize = 4;
/// Longer ids are not kept (a slot's text stays allocated).
const RECENT_KEY_LEN: usize = 256;

impl RecentKeys {
    /// [`key`] of `id`.
    fn key(&mut self, id: &str) -> (u64, u32) {
        if let Some(i) = self.ids[..self.filled].iter().position(|s| s == id) {
            return self.keys[i];
        }
        let k = key(id);
        if id.len() <= RECENT_KEY_LEN {
            let i = self.next;
            self.next = (i + 1) % RECENT_KEYS;
            self.filled = self.filled.max(i + 1);
            self.ids[i].clear();
            self.ids[i].push_str(id);
            self.keys[i] = k;
        }
        k
    }
}

impl Index {
    /// Adds a record read from the file `out` is on, checking what can be
    /// checked now.
    pub(crate) fn add(&mut self, info: &RecordInfo<'_>, out: &mut dyn Emit) {
        let file = out.file() as u32;
        let id = info
            .record_id
            .as_deref()
            .map(|r| super::grammar::strip_brackets(r).0);
        let date = date_hash(&info.date);
        let uri = uri_hash(&info.target_uri);
        let first_segment = info.kind != RecordType::Continuation && info.segment_number == Some(1);
        if let Some(id) = id {
            let k = self.keys.key(id);
            // One probe of the table for both the look-up and the insert.
            match self.records.entry(k.0) {
                Slot::Occupied(o) if o.get().check == k.1 => {
                    let e = o.get();
                    let where_ = if e.file == file {
                        format!("offset {}", e.offset)
                    } else {
                        let name = out.file_name(e.file as usize);
                        format!("offset {} of {name}", e.offset)
                    };
                    let at = At {
                        offset: Some(info.offset),
                        record_id: info.record_id.as_deref().map(str::to_owned),
                    };
                    out.push(
                        &rules::RECORD_ID_DUPLICATE,
                        &at,
                        format!("WARC-Record-ID <{id}> is also the id of the record at {where_}"),
                    );
                }
                Slot::Occupied(_) => {}
                Slot::Vacant(v) => {
                    v.insert(Entry {
                        offset: info.offset,
                        file,
                        check: k.1,
                        date,
                        uri,
                        kind: info.kind,
                        first_segment,
                    });
                }
            }
        }
        // In the order the fields are checked; nothing is allocated for a
        // reference whose target was read already (most of them).
        let refs = info
            .concurrent_to
            .iter()
            .map(|t| (RefKind::ConcurrentTo, t.as_ref()))
            .chain(info.refers_to.as_deref().map(|t| (RefKind::RefersTo, t)))
            .chain(
                info.warcinfo_id
                    .as_deref()
                    .map(|t| (RefKind::WarcinfoId, t)),
            )
            .chain(
                info.origin_id
                    .as_deref()
                    .filter(|_| info.kind == RecordType::Continuation)
                    .map(|t| (RefKind::SegmentOriginId, t)),
            );
        let revisit = info.kind == RecordType::Revisit;
        for (kind, target) in refs {
            let r = Ref {
                kind,
                target: self.keys.key(target),
                target_text: target,
                file,
                offset: info.offset,
                record_id: info.record_id.as_deref(),
                date,
                rt_uri: if revisit {
                    uri_hash(&info.refers_to_target_uri)
                } else {
                    0
                },
                rt_date: if revisit {
                    date_hash(&info.refers_to_date)
                } else {
                    0
                },
            };
            match self.lookup(r.target) {
                Some(e) => check_ref(&r, &e, out),
                None => self.pending.push(r.to_owned()),
            }
        }
        // Segments, keyed by the origin's id.
        let segmented = first_segment || info.kind == RecordType::Continuation;
        if !segmented {
            return;
        }
        let record_id: Option<Box<str>> = info.record_id.as_deref().map(Box::from);
        let seg = |number: u64| Segment {
            number,
            len: info.block_len,
            total: info.total_length,
            uri,
            file,
            offset: info.offset,
            record_id: record_id.clone(),
        };
        if first_segment && let Some(id) = id {
            let chain = self.chains.entry(key(id).0).or_default();
            if chain.origin.is_none() {
                chain.origin = Some(seg(1));
            }
        }
        if info.kind == RecordType::Continuation
            && let (Some(origin), Some(n)) = (&info.origin_id, info.segment_number)
        {
            self.chains
                .entry(key(origin).0)
                .or_default()
                .segments
                .push(seg(n));
        }
    }

    fn lookup(&self, k: (u64, u32)) -> Option<Entry> {
        self.records.get(&k.0).filter(|e| e.check == k.1).copied()
    }

    /// Resolves the references left and checks the continuation chains.
    pub(crate) fn finish(&mut self, out: &mut dyn Emit) {
        for r in std::mem::take(&mut self.pending) {
            match self.lookup(r.target) {
                Some(e) => check_ref(&r, &e, out),
                None => out.push_to(
                    r.file as usize,
                    &rules::REFERENCE_MISSING,
                    &r.at(),
                    format!(
                        "{} names <{}>, which is not among the records read",
                        r.kind.field(),
                        r.text()
                    ),
                ),
            }
        }
        let mut chains: Vec<Chain> = std::mem::take(&mut self.chains).into_values().collect();
        // Report in file order.
        chains.sort_by_key(|c| {
            let s = c.origin.as_ref().or(c.segments.first());
            s.map(|s| (s.file, s.offset))
        });
        for c in chains {
            check_chain(c, out);
        }
    }
}

fn check_ref<S: AsRef<str>>(r: &Ref<S>, e: &Entry, out: &mut dyn Emit) {
    let file = r.file as usize;
    let push = |out: &mut dyn Emit, rule: &'static Rule, msg: String| {
        out.push_to(file, rule, &r.at(), msg);
    };
    match r.kind {
        RefKind::ConcurrentTo => {
            if r.date != 0 && e.date != 0 && r.date != e.date {
                push(
                    out,
                    &rules::CONCURRENT_DATE,
                    format!(
                        "WARC-Concurrent-To names <{}> (a {} record), whose WARC-Date differs from this record's",
                        r.text(),
                        e.kind
                    ),
                );
            }
        }
        RefKind::WarcinfoId => {
            if e.kind != RecordType::Warcinfo {
                push(
                    out,
                    &rules::REFERENCE_WRONG_TYPE,
                    format!(
                        "WARC-Warcinfo-ID names <{}>, a {} record, not a warcinfo record",
                        r.text(),
                        e.kind
                    ),
                );
            }
        }
        RefKind::SegmentOriginId => {
            if !e.first_segment {
                push(
                    out,
                    &rules::REFERENCE_WRONG_TYPE,
                    format!(
                        "WARC-Segment-Origin-ID names <{}>, a {} record that is not a first segment (WARC-Segment-Number 1)",
                        r.text(),
                        e.kind
                    ),
                );
            }
        }
        RefKind::RefersTo => {
            let mut differ = Vec::new();
            if r.rt_uri != 0 && e.uri != 0 && r.rt_uri != e.uri {
                differ.push("WARC-Refers-To-Target-URI differs from its WARC-Target-URI");
            }
            if r.rt_date != 0 && e.date != 0 && r.rt_date != e.date {
                differ.push("WARC-Refers-To-Date differs from its WARC-Date");
            }
            if !differ.is_empty() {
                push(
                    out,
                    &rules::REVISIT_REFERS_TO_MISMATCH,
                    format!(
                        "the revisit record refers to <{}>, but {}",
                        r.text(),
                        differ.join(", and ")
                    ),
                );
            }
        }
    }
}

fn check_chain(mut c: Chain, out: &mut dyn Emit) {
    c.segments.sort_by_key(|s| s.number);
    let push = |out: &mut dyn Emit, s: &Segment, rule: &'static Rule, msg: String| {
        out.push_to(s.file as usize, rule, &s.at(), msg);
    };
    for w in c.segments.windows(2) {
        if w[0].number == w[1].number {
            push(
                out,
                &w[1],
                &rules::SEGMENT_DUPLICATE_NUMBER,
                format!(
                    "two continuation records of one segmented record have WARC-Segment-Number {}",
                    w[1].number
                ),
            );
        }
    }
    let uris: Vec<(u32, &Segment)> = c
        .origin
        .iter()
        .chain(c.segments.iter())
        .map(|s| (s.uri, s))
        .collect();
    if let Some(&(u0, _)) = uris.first()
        && let Some(&(_, s)) = uris.iter().find(|(u, _)| *u != u0)
    {
        push(
            out,
            s,
            &rules::SEGMENT_TARGET_URI,
            format!(
                "segment {} has another WARC-Target-URI than the first segment of its record",
                s.number
            ),
        );
    }
    let Some(last) = c.segments.last() else {
        if let Some(o) = &c.origin {
            push(
                out,
                o,
                &rules::SEGMENT_CHAIN,
                "the record is a first segment (WARC-Segment-Number 1) but no continuation record of it was read".into(),
            );
        }
        return;
    };
    let max = last.number;
    for s in &c.segments {
        if s.total.is_some() && s.number != max {
            push(
                out,
                s,
                &rules::SEGMENT_TOTAL_LENGTH,
                format!(
                    "segment {} has WARC-Segment-Total-Length but segment {max} follows it",
                    s.number
                ),
            );
        }
    }
    let mut missing = Vec::new();
    if c.origin.is_none() {
        missing.push("the first segment".to_string());
    }
    let mut expect = 2;
    for s in &c.segments {
        if s.number > expect {
            missing.push(if s.number == expect + 1 {
                format!("segment {expect}")
            } else {
                format!("segments {expect}-{}", s.number - 1)
            });
        }
        expect = expect.max(s.number + 1);
    }
    if last.total.is_none() {
        missing.push(format!(
            "a last segment with WARC-Segment-Total-Length (segment {max}, the last read, has none)"
        ));
    }
    let anchor = c.origin.as_ref().unwrap_or(&c.segments[0]);
    if !missing.is_empty() {
        push(
            out,
            anchor,
            &rules::SEGMENT_CHAIN,
            format!(
                "the segmented record is incomplete in the files read: missing {}",
                missing.join(", ")
            ),
        );
        return;
    }
    let sum: u64 = c
        .origin
        .iter()
        .chain(c.segments.iter())
        .map(|s| s.len)
        .sum();
    if let Some(total) = last.total
        && total != sum
    {
        push(
            out,
            last,
            &rules::SEGMENT_TOTAL_LENGTH,
            format!(
                "WARC-Segment-Total-Length is {total} but the {} segments hold {sum} bytes",
                c.segments.len() + 1
            ),
        );
    }
}

#[cfg(test)]
#[test]
fn hash64_separates_close_ids() {
    let mut seen = std::collections::HashSet::new();
    for i in 0..20_000u32 {
        // Ids that differ in one byte, at the start, the end, or a chunk
        // boundary, and ids that differ only by trailing zero bytes.
        let id = format!("urn:uuid:{i:08x}-0c3b-40d7-bcfd-86ef6d885fee");
        assert!(seen.insert(hash64(id.as_bytes())), "{id}");
        let rev = format!("<urn:uuid:86ef6d885fee-40d7-{i:08x}>");
        assert!(seen.insert(hash64(rev.as_bytes())), "{rev}");
    }
    assert_ne!(hash64(b""), hash64(b"\0"));
    assert_ne!(hash64(b"a"), hash64(b"a\0"));
    assert_ne!(hash64(b"abcdefgh"), hash64(b"abcdefgh\0"));
    // Low bits (the bucket) vary too.
    let low: std::collections::HashSet<u64> = (0..256u32)
        .map(|i| hash64(&i.to_le_bytes()) & 0xff)
        .collect();
    assert!(low.len() > 128, "{}", low.len());
}

#[cfg(test)]
#[test]
fn recent_keys_are_the_keys() {
    let long = "x".repeat(RECENT_KEY_LEN + 1);
    let ids = [
        "", "a", "b", "a", "", "c", "d", "e", "a", "b", &long, "e", &long, "d", "", "f", "f",
    ];
    let mut recent = RecentKeys::default();
    // Twice through, so that every id comes both fresh and remembered.
    for id in ids.iter().chain(ids.iter()) {
        assert_eq!(recent.key(id), key(id), "{id:?}");
    }
    assert!(recent.ids.iter().all(|s| s.len() <= RECENT_KEY_LEN));
}

#[cfg(test)]
#[test]
fn hash64_spreads_the_tag_bits_and_separates_near_ids() {
    use std::collections::HashSet;
    // Random v4 ids as writers make them, without `<>` as they are keyed.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z ^ (z >> 31)
    };
    let mut tags = [0u32; 128];
    let mut buckets = HashSet::new();
    for _ in 0..10_000 {
        let (a, b) = (next(), next());
        let id = format!(
            "urn:uuid:{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | (b >> 48) & 0x3fff,
            b & 0xffff_ffff_ffff
        );
        let h = hash64(id.as_bytes());
        // hashbrown's tag is the top 7 bits, its bucket the low ones.
        tags[(h >> 57) as usize] += 1;
        buckets.insert(h & 1023);
    }
    let used = tags.iter().filter(|&&n| n > 0).count();
    assert!(used >= 120, "the top 7 bits took {used} of 128 values");
    // About 78 each; a tag value at twice that would mean a skew.
    assert!(tags.iter().all(|&n| (20..160).contains(&n)), "{tags:?}");
    assert!(buckets.len() >= 1000, "{} of 1024 buckets", buckets.len());
    // Ids that differ from one in one byte, anywhere (so from each other
    // in two): no two collide on 64 bits. The multiply-a-step hash made
    // 643 collisions of these (a chunk's top byte against the next's
    // third).
    let base = b"urn:uuid:c8a92ada-c092-47f0-ae7e-264720e210b8";
    let mut near = HashSet::new();
    let mut hashes = HashSet::new();
    for p in 0..base.len() {
        for v in 0..=255u8 {
            let mut id = *base;
            id[p] = v;
            if near.insert(id) {
                assert!(
                    hashes.insert(hash64(&id)),
                    "{}",
                    String::from_utf8_lossy(&id)
                );
            }
        }
    }
    assert!(near.len() > 10_000, "{}", near.len());
}
