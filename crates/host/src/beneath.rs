//! Files under the base directory, reached without following symbolic links (`-B`).
//!
//! Anyone who can write inside `-b` (a client that creates its own files there: collectd,
//! gmetad, Munin) could otherwise make the daemon, often root, write or remove files
//! elsewhere: a symlink planted at a temporary name, a series' directory swapped for a
//! link while the daemon is stopped. So every file the daemon makes, reads, renames or
//! removes under `-b` is reached as a directory handle and a name in it ([`At`]): under
//! `-B` each directory between the base and the file is opened with `O_NOFOLLOW` (a link
//! there is refused, `Permission denied`), and the file itself is always opened, made,
//! renamed and removed relative to that handle with `O_NOFOLLOW` and, for new files,
//! `O_EXCL`. Without `-B`, links in the directories are followed, as rrdcached does (a
//! series directory may be a link to another disk), but never at the file itself.
//!
//! Hand-written over `libc`'s `*at` calls: std has no directory handles.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// A file's directory, open, and its name in it.
pub struct At {
    pub dir: File,
    pub name: CString,
}

fn cstr(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// Open `name` in `dir` with `flags` (`O_NOFOLLOW` and `O_CLOEXEC` added).
fn open_in(dir: &File, name: &CString, flags: libc::c_int, mode: libc::mode_t) -> io::Result<File> {
    // SAFETY: a valid directory descriptor and a NUL-terminated name; the descriptor
    // returned is owned by the File below.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        return Err(last_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

fn open_dir(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        })
}

/// A link where a directory was expected: refused.
fn link_refused(what: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{} is a symbolic link", what.display()),
    )
}

impl At {
    /// The directory of `path` and its file name. Under `beneath` (the base directory as
    /// the daemon reaches it, with `-B`), every directory below it is opened without
    /// following a link; `create`: missing directories are made (as `mkdir -p`).
    pub fn of(beneath: Option<&Path>, path: &Path, create: bool) -> io::Result<At> {
        let file = path
            .file_name()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let name = cstr(file)?;
        let parent = path.parent().unwrap_or(Path::new(""));
        let rel = beneath.and_then(|b| parent.strip_prefix(b).ok().map(|r| (b, r)));
        let Some((base, rel)) = rel else {
            if create {
                mkdir_p(parent)?;
            }
            return Ok(At {
                dir: open_dir(parent)?,
                name,
            });
        };
        let mut dir = open_dir(base)?;
        let mut walked = base.to_path_buf();
        for c in rel.components() {
            let Component::Normal(c) = c else {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{}: a path that leaves the base directory", path.display()),
                ));
            };
            walked.push(c);
            let cname = cstr(c)?;
            let flags = libc::O_RDONLY | libc::O_DIRECTORY;
            dir = match open_in(&dir, &cname, flags, 0) {
                Ok(d) => d,
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    // SAFETY: a valid directory descriptor and a NUL-terminated name.
                    let r = unsafe { libc::mkdirat(dir.as_raw_fd(), cname.as_ptr(), 0o755) };
                    if r != 0 && io::Error::last_os_error().kind() != io::ErrorKind::AlreadyExists {
                        return Err(last_error());
                    }
                    open_in(&dir, &cname, flags, 0)
                        .map_err(|e| refused_if_link(&dir, &cname, &walked, e))?
                }
                Err(e) => return Err(refused_if_link(&dir, &cname, &walked, e)),
            };
        }
        Ok(At { dir, name })
    }

    /// Open the file for reading, not following a link (a link: `ELOOP`).
    pub fn open_read(&self) -> io::Result<File> {
        open_read_in(&self.dir, &self.name)
    }

    /// The whole file.
    pub fn read(&self) -> io::Result<Vec<u8>> {
        let mut f = self.open_read()?;
        let mut v = Vec::new();
        f.read_to_end(&mut v)?;
        Ok(v)
    }

    /// What is at the name, not following a link: None if nothing.
    pub fn stat(&self) -> io::Result<Option<libc::stat>> {
        stat_in(&self.dir, &self.name)
    }

    /// Write `bytes` as the file: a temporary file made beside it exclusively (whatever was
    /// at the temporary name, a link included, is removed first, never followed), then
    /// renamed over the name. `sync`: the file and the directory are synced.
    pub fn replace(&self, bytes: &[u8], sync: bool) -> io::Result<()> {
        let mut tmp = self.name.as_bytes().to_vec();
        tmp.extend_from_slice(format!(".ringlet-tmp-{}", std::process::id()).as_bytes());
        let tmp = CString::new(tmp).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        self.unlink_name(&tmp).or_else(|e| match e.kind() {
            io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        })?;
        let r = (|| {
            let mut f = open_in(
                &self.dir,
                &tmp,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                0o644,
            )?;
            f.write_all(bytes)?;
            if sync {
                f.sync_all()?;
            }
            drop(f);
            // SAFETY: valid descriptors and NUL-terminated names.
            let r = unsafe {
                libc::renameat(
                    self.dir.as_raw_fd(),
                    tmp.as_ptr(),
                    self.dir.as_raw_fd(),
                    self.name.as_ptr(),
                )
            };
            if r != 0 {
                return Err(last_error());
            }
            if sync {
                self.dir.sync_all()?;
            }
            Ok(())
        })();
        if r.is_err() {
            let _ = self.unlink_name(&tmp);
        }
        r
    }

    fn unlink_name(&self, name: &CString) -> io::Result<()> {
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        if unsafe { libc::unlinkat(self.dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
            return Err(last_error());
        }
        Ok(())
    }

    /// Remove the file (a link is removed, not followed).
    pub fn remove(&self) -> io::Result<()> {
        self.unlink_name(&self.name)
    }

    /// A hard link to the file at `dest` (outside the base directory: the store's).
    pub fn link_to(&self, dest: &Path) -> io::Result<()> {
        let d = cstr(dest.as_os_str())?;
        // SAFETY: valid descriptor, NUL-terminated names; flags 0: a link is not followed.
        let r = unsafe {
            libc::linkat(
                self.dir.as_raw_fd(),
                self.name.as_ptr(),
                libc::AT_FDCWD,
                d.as_ptr(),
                0,
            )
        };
        if r != 0 {
            return Err(last_error());
        }
        Ok(())
    }
}

/// A link (or a file) where the walk needed a directory: said as such.
fn refused_if_link(dir: &File, name: &CString, walked: &Path, e: io::Error) -> io::Error {
    match stat_in(dir, name) {
        Ok(Some(st)) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => link_refused(walked),
        _ => e,
    }
}

/// `name` in `dir` opened for reading, not following a link (a link: `ELOOP`).
pub fn open_read_in(dir: &File, name: &CString) -> io::Result<File> {
    open_in(
        dir,
        name,
        libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
        0,
    )
}

/// What is at `name` in `dir`, not following a link: None if nothing.
pub fn stat_in(dir: &File, name: &CString) -> io::Result<Option<libc::stat>> {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, NUL-terminated name, a `stat` to fill.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        let e = last_error();
        return match e.kind() {
            io::ErrorKind::NotFound => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(st))
}

/// `mkdir -p` without recursion: a client's name may be thousands of directories deep, and a
/// connection thread's stack is small (std's `create_dir_all` recurses once per level).
pub fn mkdir_p(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at {
        if d.as_os_str().is_empty() || d.is_dir() {
            break;
        }
        missing.push(d);
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ringlet-beneath-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_link_below_the_base_is_refused_and_nothing_outside_is_touched() {
        let root = tmp("link");
        let (base, outside) = (root.join("base"), root.join("outside"));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, base.join("d")).unwrap();
        for create in [false, true] {
            let e = At::of(Some(&base), &base.join("d/x.rrd"), create)
                .err()
                .expect("refused");
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        let e = At::of(Some(&base), &base.join("a/../d/x.rrd"), true)
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        // Without -B the link is followed, as rrdcached does.
        let at = At::of(None, &base.join("d/x.rrd"), false).unwrap();
        at.replace(b"x", false).unwrap();
        assert_eq!(std::fs::read(outside.join("x.rrd")).unwrap(), b"x");
        // Missing directories are made beneath, and files written there.
        let at = At::of(Some(&base), &base.join("n/m/y.rrd"), true).unwrap();
        at.replace(b"y", true).unwrap();
        assert_eq!(std::fs::read(base.join("n/m/y.rrd")).unwrap(), b"y");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_link_planted_at_the_temporary_name_is_removed_not_followed() {
        let root = tmp("tmp");
        let victim = root.join("victim.txt");
        std::fs::write(&victim, "ORIGINAL").unwrap();
        let base = root.join("base");
        std::fs::create_dir_all(&base).unwrap();
        let planted = base.join(format!("new.rrd.ringlet-tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        // And a link at the name itself: replaced, not followed.
        std::os::unix::fs::symlink(&victim, base.join("new.rrd")).unwrap();
        let at = At::of(Some(&base), &base.join("new.rrd"), false).unwrap();
        at.replace(b"placeholder", false).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "ORIGINAL");
        let m = std::fs::symlink_metadata(base.join("new.rrd")).unwrap();
        assert!(m.file_type().is_file());
        assert!(std::fs::symlink_metadata(&planted).is_err());
        // Reading does not follow a link at the name either.
        std::os::unix::fs::symlink(&victim, base.join("l.rrd")).unwrap();
        let at = At::of(Some(&base), &base.join("l.rrd"), false).unwrap();
        assert!(at.read().is_err());
        at.remove().unwrap();
        assert!(victim.exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
