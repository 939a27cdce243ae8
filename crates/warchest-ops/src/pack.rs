//! Local files archived as WARC records (ISO 28500 Annex D use case two:
//! a file transferred to the archive), and unpacked again.
//!
//! Each file becomes a `resource` record (section 6.4): its target URI a
//! `file://` URI of its absolute path, or a caller's base URI followed by
//! its path relative to what was packed; its Content-Type found from its
//! bytes; its modification time as WARC-Date. A `metadata` record follows,
//! WARC-Concurrent-To the resource as the use case shows, holding the
//! file's size, original path, relative path, permissions and modification
//! time as `application/warc-fields`. Rotation and segmentation are the
//! [`RotatingWriter`]'s.
//!
//! Unpacking writes resource records back to files under one directory and
//! never outside it: relative paths with `..`, absolute paths and paths
//! through symbolic links are refused, existing files are not replaced.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use warchest::io::read_up_to;

use crate::reassemble::Segments;
use warchest::error::{Error, Result, Warning, WarningKind};
use warchest::fields::Fields;
use warchest::warc::{self, DatePrecision, RecordType, Version, WarcDate, field};
use warchest::write::{Body, RotatingWriter, identify, records};

/// How files are packed.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// The URI each file's relative path is appended to (`https://example.org/files/`);
    /// `None` for `file://` URIs of absolute paths.
    pub base_uri: Option<String>,
    /// The version of the records (default 1.1).
    pub version: Version,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            base_uri: None,
            version: Version::V1_1,
        }
    }
}

/// What packing did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PackStats {
    /// Files archived.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Paths left out (symbolic links, sockets, devices...), and why.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Percent-encodes what cannot stand in a URI path (RFC 3986 `pchar` and
/// `/` are kept).
pub fn encode_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'/'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
            );
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Undoes [`encode_path`] (invalid escapes are kept as they are).
pub fn decode_path(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Archives `inputs` (files, and directories walked in name order) with
/// `w`, each file as a resource record and a metadata record.
///
/// # Errors
/// A file cannot be read, or writing failed.
pub fn pack<P: AsRef<Path>>(
    inputs: &[P],
    w: &mut RotatingWriter,
    opts: &PackOptions,
) -> Result<PackStats> {
    let mut stats = PackStats::default();
    for input in inputs {
        let input = input.as_ref();
        let meta = fs::symlink_metadata(input).map_err(|e| Error::from(e).in_file(input))?;
        // The name the tree is packed under: the last component.
        let root_name = input
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("root"));
        if meta.is_dir() {
            walk(input, &root_name, w, opts, &mut stats)?;
        } else {
            pack_one(input, &root_name, w, opts, &mut stats)?;
        }
    }
    Ok(stats)
}

fn walk(
    dir: &Path,
    rel: &Path,
    w: &mut RotatingWriter,
    opts: &PackOptions,
    stats: &mut PackStats,
) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| Error::from(e).in_file(dir))?
        .collect::<io::Result<Vec<_>>>()
        .map_err(|e| Error::from(e).in_file(dir))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = rel.join(e.file_name());
        let ft = e
            .file_type()
            .map_err(|err| Error::from(err).in_file(&path))?;
        if ft.is_dir() {
            walk(&path, &rel, w, opts, stats)?;
        } else {
            pack_one(&path, &rel, w, opts, stats)?;
        }
    }
    Ok(())
}

fn pack_one(
    path: &Path,
    rel: &Path,
    w: &mut RotatingWriter,
    opts: &PackOptions,
    stats: &mut PackStats,
) -> Result<()> {
    let locate = |e: io::Error| Error::from(e).in_file(path);
    let meta = fs::symlink_metadata(path).map_err(locate)?;
    if meta.file_type().is_symlink() {
        stats
            .skipped
            .push((path.to_path_buf(), "symbolic link, not followed".into()));
        return Ok(());
    }
    if !meta.is_file() {
        stats
            .skipped
            .push((path.to_path_buf(), "not a regular file".into()));
        return Ok(());
    }
    let abs = fs::canonicalize(path).map_err(locate)?;
    let rel_text = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    let uri = match &opts.base_uri {
        Some(base) => {
            let sep = if base.ends_with('/') { "" } else { "/" };
            format!("{base}{sep}{}", encode_path(&rel_text))
        }
        None => format!("file://{}", encode_path(&path_text(&abs))),
    };
    let mut file = File::open(path).map_err(locate)?;
    let mut start = vec![0u8; identify::SNIFF_LEN];
    let n = read_up_to(&mut file, &mut start).map_err(locate)?;
    let content_type = identify::identify(&start[..n]).unwrap_or("application/octet-stream");
    io::Seek::seek(&mut file, io::SeekFrom::Start(0)).map_err(locate)?;
    let date = meta.modified().ok().and_then(|t| {
        let precision = if opts.version >= Version::V1_1 {
            DatePrecision::Fraction(6)
        } else {
            DatePrecision::Second
        };
        WarcDate::from_datetime(time::OffsetDateTime::from(t), precision)
    });
    let mut res = records::resource(&uri, content_type, opts.version)?;
    if let Some(d) = &date {
        res.date(*d);
    }
    let len = meta.len();
    w.write(
        &mut res,
        Body::Seekable {
            reader: &mut file,
            len: Some(len),
        },
    )
    .map_err(|e| e.in_file(path))?;
    let mut m = warchest::write::NewRecord::with_version(RecordType::Metadata, opts.version);
    m.set(field::TARGET_URI, &uri)?;
    m.set(field::CONCURRENT_TO, res.record_id())?;
    m.set(field::CONTENT_TYPE, records::WARC_FIELDS)?;
    if let Some(d) = &date {
        m.date(*d);
    }
    let size = len.to_string();
    let original = encode_path(&path_text(&abs));
    let relative = encode_path(&rel_text);
    let mut fields: Vec<(&str, &str)> = vec![
        ("size", &size),
        ("path", &original),
        ("relative-path", &relative),
    ];
    let perms = permissions(&meta);
    if let Some(p) = &perms {
        fields.push(("permissions", p));
    }
    let modified = date.as_ref().map(|d| d.to_string());
    if let Some(d) = &modified {
        fields.push(("modified", d));
    }
    let block = records::warc_fields(fields)?;
    w.write(&mut m, Body::Bytes(&block))?;
    stats.files += 1;
    stats.bytes += len;
    Ok(())
}

#[cfg(unix)]
fn permissions(meta: &fs::Metadata) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    Some(format!("{:04o}", meta.permissions().mode() & 0o7777))
}

#[cfg(not(unix))]
fn permissions(meta: &fs::Metadata) -> Option<String> {
    Some(
        if meta.permissions().readonly() {
            "0444"
        } else {
            "0644"
        }
        .to_string(),
    )
}

/// `rel` (a `/`-separated relative path) under `root`, or `None` when it
/// would leave `root`: absolute, with `..`, empty, or with a NUL.
pub fn safe_join(root: &Path, rel: &[u8]) -> Option<PathBuf> {
    if rel.contains(&0) {
        return None;
    }
    let text = String::from_utf8_lossy(rel);
    if text.starts_with('/') || text.starts_with('\\') {
        return None;
    }
    let mut out = root.to_path_buf();
    let mut any = false;
    for part in text.split(['/', '\\']) {
        match part {
            "" | "." => continue,
            ".." => return None,
            p => {
                let c = Path::new(p).components().next()?;
                if !matches!(c, Component::Normal(_)) {
                    return None;
                }
                out.push(p);
                any = true;
            }
        }
    }
    any.then_some(out)
}

/// Creates `path`'s directories under `root` and the file itself, refusing
/// to pass through a symbolic link or to replace anything.
fn create_under(root: &Path, path: &Path) -> io::Result<File> {
    let rel = path
        .strip_prefix(root)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "outside the output directory"))?;
    let mut cur = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for (i, c) in parts.iter().enumerate() {
        cur.push(c.as_os_str());
        let last = i + 1 == parts.len();
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is a symbolic link: not followed", cur.display()),
                ));
            }
            Ok(m) if !last && m.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists: not replaced", cur.display()),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !last {
                    fs::create_dir(&cur)?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    // create_new refuses an existing file or link, even one made since.
    OpenOptions::new().write(true).create_new(true).open(&cur)
}

/// What a packed file's metadata record says of it.
#[derive(Debug, Clone, Default)]
struct FileInfo {
    /// Its relative path.
    rel: Option<Vec<u8>>,
    /// Its permission bits.
    mode: Option<u32>,
    /// Its modification time, as a WARC date.
    modified: Option<String>,
    /// Its size.
    size: Option<u64>,
    /// What of the metadata could not be read.
    problem: Option<String>,
}

impl FileInfo {
    /// Reads the fields of a metadata block `pack` wrote; `None` for a
    /// block that is not one (another tool's metadata: not
    /// `application/warc-fields`, or with no `relative-path`).
    fn parse(block: &[u8], warc_fields: bool, truncated: bool) -> Option<FileInfo> {
        let f = match Fields::parse_warc_fields(block) {
            Ok((f, _)) => f,
            // Another tool's metadata in its own format.
            Err(_) if !warc_fields => return None,
            Err(e) => {
                return Some(FileInfo {
                    problem: Some(format!(
                        "its metadata record does not parse ({e}): path, permissions and \
                         modification time not restored"
                    )),
                    ..FileInfo::default()
                });
            }
        };
        let rel = f.value("relative-path")?;
        let mut info = FileInfo {
            rel: Some(decode_path(&rel)),
            ..FileInfo::default()
        };
        let mut bad = Vec::new();
        if truncated {
            bad.push("its metadata record is truncated".to_string());
        }
        if let Some(p) = f.value("permissions") {
            info.mode = u32::from_str_radix(p.trim(), 8).ok();
            if info.mode.is_none() {
                bad.push(format!(
                    "permissions {:?} are not octal: not restored",
                    p.trim()
                ));
            }
        }
        if let Some(m) = f.value("modified") {
            if WarcDate::parse(m.trim()).is_ok() {
                info.modified = Some(m.trim().to_string());
            } else {
                bad.push(format!(
                    "modified {:?} is not a WARC date: not restored",
                    m.trim()
                ));
            }
        }
        if let Some(s) = f.value("size") {
            info.size = s.trim().parse().ok();
            if info.size.is_none() {
                bad.push(format!("size {:?} is not a number", s.trim()));
            }
        }
        if !bad.is_empty() {
            info.problem = Some(bad.join("; "));
        }
        Some(info)
    }
}

/// What unpacking did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnpackStats {
    /// Files written whole.
    pub files: u64,
    /// The bytes written, of whole files and truncated ones.
    pub bytes: u64,
    /// Records not written, and why (unsafe paths, existing files).
    pub refused: Vec<(String, String)>,
    /// Files written short, and why: the archive ends inside their record
    /// (or its block ends before the size recorded, or one of its segments
    /// is missing or cut short). Each is left where it
    /// was written, as `tar` leaves what it could read of a cut archive,
    /// without its recorded modification time so that it does not pass
    /// for the original.
    pub truncated: Vec<(String, String)>,
    /// Files written whole whose bytes are known wrong: from segments
    /// whose payload digest, taken over the reassembled block, does not
    /// match the one recorded, or from a block the reader recovered from
    /// damage (a gzip member that does not inflate to its end or whose
    /// checksum does not match): the file, and why. Each is left as
    /// written, without its recorded modification time.
    pub damaged: Vec<(String, String)>,
    /// Files written whose metadata record could not be read whole (it
    /// does not parse, or a value in it does not): the file, and what was
    /// not restored.
    pub metadata_problems: Vec<(String, String)>,
    /// Recoveries of the lenient reader (given to the caller of
    /// [`unpack_with`] as they are made).
    pub recoveries: u64,
}

impl UnpackStats {
    /// Whether every resource record was written whole, where it belongs.
    pub fn is_clean(&self) -> bool {
        self.refused.is_empty()
            && self.truncated.is_empty()
            && self.damaged.is_empty()
            && self.metadata_problems.is_empty()
    }
}

/// Writes the resource records of `inputs` as files under `out_dir`, at the
/// relative path their metadata record gives (else their target URI's
/// path), with their permissions and modification time. Segmented records
/// are reassembled across the inputs. The lenient reader's recoveries are
/// counted in [`UnpackStats::recoveries`]; [`unpack_with`] hands them over.
///
/// # Errors
/// An input cannot be read, or the output directory cannot be written.
pub fn unpack<P: AsRef<Path>>(inputs: &[P], out_dir: &Path) -> Result<UnpackStats> {
    unpack_with(inputs, out_dir, &mut |_, _| {})
}

/// [`unpack`], handing the lenient reader's recoveries in each input to
/// `on_warnings` (the input, its warnings) as they are made.
///
/// # Errors
/// As [`unpack`].
pub fn unpack_with<P: AsRef<Path>>(
    inputs: &[P],
    out_dir: &Path,
    on_warnings: &mut dyn FnMut(&Path, &[Warning]),
) -> Result<UnpackStats> {
    // First the metadata, which follows its resource: relative paths and
    // permissions by resource id. This pass's recoveries are not handed
    // over: the second pass reads the same bytes the same way and meets
    // each again.
    let mut info: HashMap<String, FileInfo> = HashMap::new();
    for input in inputs {
        let mut r = warc::Reader::open(input.as_ref())?;
        loop {
            // Dropped as met (the second pass reports them): a damaged
            // file's would otherwise pile up in the reader.
            r.take_warnings();
            let Some(mut rec) = r.next_record()? else {
                break;
            };
            let h = rec.header().clone();
            if h.record_type() != RecordType::Metadata || h.content_length().unwrap_or(0) > 1 << 20
            {
                continue;
            }
            let Some(to) = h.concurrent_to().next().map(|s| s.trim().to_string()) else {
                continue;
            };
            let warc_fields = h.content_type().is_some_and(|t| {
                t.trim()
                    .to_ascii_lowercase()
                    .starts_with("application/warc-fields")
            });
            let block = rec.read_block()?;
            let truncated = rec.finish()?.truncated;
            if let Some(i) = FileInfo::parse(&block, warc_fields, truncated) {
                // pack's own record for the file, once found, is not
                // replaced by another metadata record about it.
                if info.get(&to).is_none_or(|old| old.rel.is_none()) {
                    info.insert(to, i);
                }
            }
        }
    }
    let segments = Segments::scan(inputs)?;
    // Made once every input has been read through: a name mistyped leaves
    // no empty directory behind.
    fs::create_dir_all(out_dir).map_err(|e| Error::from(e).in_file(out_dir))?;
    let mut stats = UnpackStats::default();
    for input in inputs {
        let input = input.as_ref();
        let mut r = warc::Reader::open(input)?;
        loop {
            // Taken as the reading goes (a damaged file's warnings are not
            // all held at once), and at the end, where trailing garbage is
            // met.
            let w = r.take_warnings();
            if !w.is_empty() {
                stats.recoveries += w.len() as u64;
                on_warnings(input, &w);
            }
            let Some(mut rec) = r.next_record()? else {
                let w = r.take_warnings();
                if !w.is_empty() {
                    stats.recoveries += w.len() as u64;
                    on_warnings(input, &w);
                }
                break;
            };
            let h = rec.header().clone();
            if h.record_type() != RecordType::Resource {
                continue;
            }
            let id = h
                .record_id()
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            let meta = info.get(&id).cloned().unwrap_or_default();
            let rel = meta.rel.clone().unwrap_or_else(|| {
                let uri = h.target_uri().unwrap_or_default();
                let path = uri
                    .split_once("://")
                    .map_or("", |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
                decode_path(path.trim_start_matches('/'))
            });
            let Some(dest) = safe_join(out_dir, &rel) else {
                stats.refused.push((
                    String::from_utf8_lossy(&rel).into_owned(),
                    "path leaves the output directory".into(),
                ));
                continue;
            };
            let mut file = match create_under(out_dir, &dest) {
                Ok(f) => f,
                Err(e) => {
                    stats
                        .refused
                        .push((dest.display().to_string(), e.to_string()));
                    continue;
                }
            };
            let locate = |e: io::Error| Error::from(e).in_file(&dest);
            // Why a segmented file's reassembly stopped short, or was
            // found wrong at its end (its payload digest).
            let mut broken: Option<String> = None;
            let mut wrong = false;
            let (n, cut, want) = if h.segment_number().is_some() {
                // A series with a part missing or cut short is this
                // file's loss alone: the other files are still restored.
                match segments.open(&id) {
                    Ok(mut l) => {
                        let want = l.header().content_length();
                        let (n, failed) = copy_reading(&mut l, &mut file).map_err(locate)?;
                        if let Some(e) = failed {
                            // The digest is checked once every byte was read.
                            wrong = l.check().is_some();
                            broken = Some(e.to_string());
                        }
                        (n, false, want)
                    }
                    Err(e) => {
                        broken = Some(e.to_string());
                        (0, false, h.segment_total_length().flatten())
                    }
                }
            } else {
                let want = h.content_length();
                let (n, failed) = copy_reading(&mut rec.block(), &mut file).map_err(locate)?;
                // A read error is the input's (named, with where it
                // stopped), not the file written; the reader cannot go on.
                if let Some(e) = failed {
                    return Err(Error::from(e).in_file(input));
                }
                // How the record ended: the lenient reader gives what there
                // is of a block the input ends inside.
                let truncated = rec.finish()?.truncated;
                // Its bytes were recovered from damage (a member that does
                // not inflate to its end, a checksum that does not match):
                // the file is written, and named as damaged.
                // (A block the input ends inside is truncated, said so below.)
                let w = r.take_warnings();
                if let Some(bad) = w.iter().filter(|_| !truncated).find(|w| {
                    matches!(
                        w.kind,
                        WarningKind::DamagedMember
                            | WarningKind::BadChecksum
                            | WarningKind::DamagedContent
                    )
                }) {
                    wrong = true;
                    broken = Some(format!("offset {}: {}", bad.offset, bad.message));
                }
                if !w.is_empty() {
                    stats.recoveries += w.len() as u64;
                    on_warnings(input, &w);
                }
                (n, truncated, want)
            };
            file.flush().map_err(locate)?;
            let want = meta.size.or(want);
            let short = cut || (broken.is_some() && !wrong) || want.is_some_and(|w| n < w);
            #[cfg(unix)]
            if let Some(m) = meta.mode {
                use std::os::unix::fs::PermissionsExt;
                // Permission bits only: never set-id bits from an archive.
                fs::set_permissions(&dest, fs::Permissions::from_mode(m & 0o777))
                    .map_err(locate)?;
            }
            #[cfg(not(unix))]
            let _ = meta.mode;
            if !short
                && !wrong
                && let Some(t) = meta
                    .modified
                    .and_then(|m| WarcDate::parse(&m).ok())
                    .and_then(|d| d.to_datetime())
            {
                let _ = file.set_modified(t.into());
            }
            let name = dest.display().to_string();
            if let Some(p) = meta.problem {
                stats.metadata_problems.push((name.clone(), p));
            }
            if wrong {
                let why = broken.unwrap_or_default();
                stats.damaged.push((name, why));
            } else if short {
                let of = want.map_or(String::new(), |w| format!(" of {w}"));
                let why = match &broken {
                    Some(e) => e.as_str(),
                    None if cut => "the archive ends inside its record",
                    None => "its record's block is shorter than the size recorded",
                };
                stats
                    .truncated
                    .push((name, format!("{n}{of} bytes restored: {why}")));
            } else {
                stats.files += 1;
            }
            stats.bytes += n;
        }
    }
    Ok(stats)
}

/// Copies `from` into `to`: the bytes copied, and the error that ended the
/// reading early, if one did. A write error is the error returned: the
/// output, not the archive, failed.
fn copy_reading(from: &mut impl Read, to: &mut impl Write) -> io::Result<(u64, Option<io::Error>)> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        let k = match from.read(&mut buf) {
            Ok(0) => return Ok((n, None)),
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Ok((n, Some(e))),
        };
        to.write_all(&buf[..k])?;
        n += k as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside() {
        let root = Path::new("/out");
        assert_eq!(
            safe_join(root, b"a/b.txt"),
            Some(PathBuf::from("/out/a/b.txt"))
        );
        assert_eq!(safe_join(root, b"./a//b"), Some(PathBuf::from("/out/a/b")));
        for bad in [
            &b"../x"[..],
            b"a/../../x",
            b"/etc/passwd",
            b"\\x",
            b"",
            b"a\0b",
            b"..",
        ] {
            assert_eq!(
                safe_join(root, bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn path_encoding_round_trips() {
        let p = "dir/a b%c\n\u{e9}.txt";
        let e = encode_path(p);
        assert!(!e.contains(' ') && !e.contains('\n'), "{e}");
        assert_eq!(decode_path(&e), p.as_bytes());
        assert_eq!(decode_path("%zz%4"), b"%zz%4");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_not_followed_when_unpacking() {
        let out = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), out.path().join("link")).unwrap();
        let dest = safe_join(out.path(), b"link/evil.txt").unwrap();
        assert!(create_under(out.path(), &dest).is_err());
        assert!(!elsewhere.path().join("evil.txt").exists());
        let ok = safe_join(out.path(), b"d/f.txt").unwrap();
        create_under(out.path(), &ok).unwrap();
        assert!(create_under(out.path(), &ok).is_err(), "no replacing");
    }
}
