//! Atomic, durable replacement of a file (temporary file, sync, rename,
//! directory sync), with symbolic links followed and concurrent saves to
//! one path kept apart.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use wgrad_core::{Error, Result};

/// Suffix of the temporary file a save writes next to its target.
const TEMP_SUFFIX: &str = ".wgrad-tmp";

/// Replaces the file at `path` with what `write` writes, atomically and
/// durably:
///
/// * symbolic links are followed, so the file a link points to is replaced
///   and the link stays;
/// * the data goes to `.{name}.wgrad-tmp` in the target's directory, a
///   predictable name, so an interrupted save leaves at most that one file
///   and the next save removes it (a save still running holds an advisory
///   lock on it, and a second save to the same path fails instead of
///   removing it);
/// * the temporary file is synced, gets the permissions of the file it
///   replaces (a new file keeps `0o666` less the umask), is renamed over the
///   target, and the directory is synced.
///
/// Any failure before the rename removes the temporary file and leaves the
/// target as it was.
pub(crate) fn write_atomically(
    op: &'static str,
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    // Operating-system failures keep their io::Error as the source
    // (Error::Io); the checks below that find no file to write are
    // InvalidArgument.
    let target = resolve_symlinks(path).map_err(|e| {
        Error::io(
            op,
            path,
            "cannot write: cannot resolve the symbolic link",
            e,
        )
    })?;
    // Where a link was followed, messages say where to.
    let via = if target == path {
        String::new()
    } else {
        format!(" (-> {})", target.display())
    };
    let shown = format!("{}{via}", path.display());
    let fail = |what: String, e: io::Error| Error::io(op, path, what, e);
    let Some(name) = target.file_name() else {
        return Err(Error::invalid(
            op,
            format!("cannot write {shown}: the path does not name a file"),
        ));
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(Error::invalid(
            op,
            format!(
                "cannot write {shown}: directory {} does not exist",
                dir.display()
            ),
        ));
    }
    let permissions = match std::fs::metadata(&target) {
        Ok(meta) if meta.is_file() => Some(meta.permissions()),
        Ok(_) => {
            return Err(Error::invalid(
                op,
                format!("cannot write {shown}: it exists and is not a regular file"),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(format!("cannot write{via}"), e)),
    };
    let mut temp_name = OsString::from(".");
    temp_name.push(name);
    temp_name.push(TEMP_SUFFIX);
    let temp = dir.join(temp_name);
    let file = claim_temp(&temp).map_err(|e| {
        fail(
            format!("cannot write{via}: temporary file {}", temp.display()),
            e,
        )
    })?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        write(&mut out)?;
        out.flush()?;
        drop(out);
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        std::fs::rename(&temp, &target)
    })();
    if let Err(e) = written {
        // Still locked by us, so `temp` is our file: no other save removes
        // or renames it.
        let _ = std::fs::remove_file(&temp);
        return Err(fail(format!("cannot write{via}"), e));
    }
    sync_dir(&dir).map_err(|e| {
        fail(
            format!(
                "wrote it{via}, but could not sync its directory {} (the new file may not survive a crash)",
                dir.display()
            ),
            e,
        )
    })?;
    // Dropping `file` releases the lock (the renamed file is the target now).
    drop(file);
    Ok(())
}

/// `path` with symbolic links in its last component followed (relative
/// targets resolve against the link's directory), up to 40 of them as
/// Linux allows. A dangling link gives the path it points to, which the
/// save creates.
fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Creates the temporary file `temp`, fresh (so it gets the umask's
/// permissions) and locked (advisory, exclusive). Whatever is at `temp`
/// already is stale, left by an interrupted save, and is removed, unless a
/// save still running holds its lock: then this fails. One rule keeps
/// concurrent saves apart: `temp` is only written, renamed or removed by the
/// holder of the lock on the file it names.
fn claim_temp(temp: &Path) -> io::Result<File> {
    for _ in 0..8 {
        // Junk that no save creates (a link, a directory) is not locked by
        // anyone; a link is removed rather than followed.
        if let Ok(meta) = std::fs::symlink_metadata(temp)
            && !meta.is_file()
        {
            if meta.is_dir() {
                return Err(io::Error::other(
                    "a directory is in the way of the temporary file",
                ));
            }
            remove_if_present(temp)?;
        }
        let (file, fresh) = match OpenOptions::new().write(true).create_new(true).open(temp) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Read-only suffices to lock, and the stale file may be
                // read-only.
                match File::open(temp) {
                    Ok(file) => (file, false),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(io::Error::other(
                    "another save to the same path is in progress",
                ));
            }
            // No advisory locks on this file system: go on unlocked.
            Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        if !names_file(temp, &file)? {
            // Removed or replaced between our open and our lock: try again.
            continue;
        }
        if fresh {
            return Ok(file);
        }
        remove_if_present(temp)?;
    }
    Err(io::Error::other(
        "other saves keep replacing the temporary file",
    ))
}

/// Whether `path` still names the open `file` (the same inode).
fn names_file(path: &Path, file: &File) -> io::Result<bool> {
    let at_path = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let open = file.metadata()?;
        Ok(open.dev() == at_path.dev() && open.ino() == at_path.ino())
    }
    #[cfg(not(unix))]
    {
        // Open files cannot be removed or renamed on Windows, so the path
        // still names the file we opened.
        let _ = file;
        Ok(at_path.is_file())
    }
}

/// Removes the file `path`; one that is already gone is fine.
fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Syncs directory `dir`, so a rename in it survives a crash (Unix; other
/// systems cannot open directories as files and sync renames themselves).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}
