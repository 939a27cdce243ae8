//! Files that appear under their name whole or not at all, and stay so
//! after a crash or a power loss: written under a temporary sibling name,
//! the file synced, renamed to its name, and the directory synced, so
//! that the rename itself is on disk. A reader (or a resume) never sees a
//! part of a file under its final name, and a name once given is not
//! taken back by a power loss.
//!
//! [`write_whole`] does it for bytes at hand (a state file, a small
//! object); [`commit`] and [`commit_path`] do the last steps for a file
//! written over time under its temporary name (`NAME.open`, `NAME.tmp`).
//! The caller names the temporary file: the helpers never make up a
//! name, so a resume finds the leftovers it looks for.
//!
//! The rotating WARC writer ([`RotatingWriter`](super::RotatingWriter))
//! makes these steps itself, since its syncs can be turned off and it
//! lists a closed file between the rename and the directory's sync.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::sync_dir;
use crate::error::{Error, Result};

/// Writes `bytes` as the file `path`, whole or not at all: into `tmp` (a
/// sibling of `path`, created or truncated), synced, then renamed over
/// `path` (which may exist: it is replaced), and `path`'s directory
/// synced ([`sync_dir`]). A crash at any moment leaves `path` with its old
/// contents or its new ones, never a part, and perhaps `tmp`.
///
/// # Errors
/// Creating, writing or syncing `tmp`, the rename, or the directory's
/// sync failed; the error names the file (`tmp` until the rename).
pub fn write_whole(path: &Path, tmp: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::create(tmp).map_err(|e| Error::from(e).in_file(tmp))?;
    f.write_all(bytes)
        .map_err(|e| Error::from(e).in_file(tmp))?;
    commit(&f, tmp, path)
}

/// Gives the whole file `tmp` its name `path`: syncs `file` (a handle of
/// `tmp`, written and flushed), renames `tmp` to `path` (replacing a file
/// there) and syncs the directory, so that the data is on disk before the
/// name is, and the name is on disk when this returns.
///
/// # Errors
/// The file's sync (naming `tmp`), the rename or the directory's sync
/// (naming `path` or its directory) failed.
pub fn commit(file: &File, tmp: &Path, path: &Path) -> Result<()> {
    file.sync_all().map_err(|e| Error::from(e).in_file(tmp))?;
    rename_synced(tmp, path)
}

/// [`commit`] for a file whose handle the caller no longer has (it went
/// into a writer that was consumed): `tmp` is opened again to sync it.
///
/// # Errors
/// As [`commit`], and `tmp` cannot be opened for writing.
pub fn commit_path(tmp: &Path, path: &Path) -> Result<()> {
    // For writing: a handle only read from cannot be synced everywhere
    // (Windows); opening it so truncates nothing.
    let f = OpenOptions::new()
        .write(true)
        .open(tmp)
        .map_err(|e| Error::from(e).in_file(tmp))?;
    commit(&f, tmp, path)
}

/// Renames `tmp` to `path` and syncs the directory that holds `path`.
fn rename_synced(tmp: &Path, path: &Path) -> Result<()> {
    std::fs::rename(tmp, path).map_err(|e| Error::from(e).in_file(path))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::rotate::DIR_SYNCS;

    fn dir_syncs() -> u64 {
        DIR_SYNCS.with(|n| n.get())
    }

    #[test]
    fn write_whole_replaces_and_syncs_the_directory() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("state.json");
        let tmp = d.path().join("state.json.tmp");
        let before = dir_syncs();
        write_whole(&path, &tmp, b"one").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        assert!(!tmp.exists());
        // An existing file is replaced whole; a leftover temporary file
        // (a crash before the rename) is written over.
        std::fs::write(&tmp, b"a longer leftover").unwrap();
        write_whole(&path, &tmp, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert!(!tmp.exists());
        if !cfg!(windows) {
            assert_eq!(dir_syncs(), before + 2);
        }
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
    }

    #[test]
    fn commit_gives_an_open_file_its_name() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("out.warc");
        let open = d.path().join("out.warc.open");
        let mut f = File::create(&open).unwrap();
        f.write_all(b"records").unwrap();
        let before = dir_syncs();
        commit(&f, &open, &path).unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"records");
        assert!(!open.exists());
        // By path, its handle gone: nothing is truncated.
        std::fs::write(&open, b"more records").unwrap();
        commit_path(&open, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"more records");
        assert!(!open.exists());
        if !cfg!(windows) {
            assert_eq!(dir_syncs(), before + 2);
        }
    }

    #[test]
    fn failures_name_the_file_and_leave_the_old_one() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("kept");
        std::fs::write(&path, b"old").unwrap();
        // No directory for the temporary file: nothing renamed.
        let tmp = d.path().join("missing").join("kept.tmp");
        let e = write_whole(&path, &tmp, b"new").unwrap_err();
        assert!(e.to_string().contains("kept.tmp"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let e = commit_path(&d.path().join("gone.open"), &path).unwrap_err();
        assert!(e.to_string().contains("gone.open"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
    }
}
