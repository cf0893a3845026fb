//! `HARNERY_HOME`: where everything lives, and the permissions it keeps.
//!
//! The home is `$HARNERY_HOME` when set, else `$HOME/.harnery`, else the
//! password database's home directory for the effective user plus `.harnery`
//! (hooks can run with `HOME` unset). Everything harnery creates below the
//! root is a directory of mode 0700 or a file of mode 0600, and it is reached
//! one component at a time with `openat(…, O_NOFOLLOW)`: a symlink planted
//! anywhere below the root is refused, never followed. The root itself is the
//! user's choice and may be a symlink.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// Why the home directory could not be determined.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// Neither `HARNERY_HOME`, `HOME` nor the password database named a home.
    #[error(
        "cannot find a home directory: HARNERY_HOME and HOME are unset and the user has no passwd entry"
    )]
    NoHome,
    /// `HARNERY_HOME` was set to a relative path.
    #[error("HARNERY_HOME must be an absolute path, got {0:?}")]
    Relative(PathBuf),
}

/// The root of harnery's on-disk state and the layout below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// `$HARNERY_HOME`, else `$HOME/.harnery`, else `<passwd home>/.harnery`.
    pub fn from_env() -> Result<Home, HomeError> {
        Self::from_vars(
            std::env::var_os("HARNERY_HOME"),
            env_home().map(PathBuf::into_os_string),
        )
    }

    /// The same rule as [`Home::from_env`] over given values (for tests).
    pub fn from_vars(
        harnery_home: Option<OsString>,
        home: Option<OsString>,
    ) -> Result<Home, HomeError> {
        if let Some(h) = harnery_home.filter(|h| !h.is_empty()) {
            let root = PathBuf::from(h);
            if root.is_relative() {
                return Err(HomeError::Relative(root));
            }
            return Ok(Home { root });
        }
        let base = user_dir_from(home.map(PathBuf::from)).ok_or(HomeError::NoHome)?;
        Ok(Home {
            root: base.join(".harnery"),
        })
    }

    /// A home rooted at `root` exactly.
    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `root/spool`: the intake spool, the ready spool and dead letters.
    pub fn spool_dir(&self) -> PathBuf {
        self.root.join("spool")
    }

    /// `root/spool/intake`: one directory per adapter, one per session below.
    pub fn intake_dir(&self) -> PathBuf {
        self.spool_dir().join("intake")
    }

    /// `root/spool/dead-letter`: records no session directory could take.
    pub fn dead_letter_dir(&self) -> PathBuf {
        self.spool_dir().join("dead-letter")
    }

    /// `root/ledgers`: live and archived ledger epochs.
    pub fn ledgers_dir(&self) -> PathBuf {
        self.root.join("ledgers")
    }

    /// Create (if needed) and open `root/<components…>` as 0700 directories,
    /// refusing symlinks below the root. See [`PrivateDir::open_path`].
    pub fn private_dir(&self, components: &[&str]) -> io::Result<PrivateDir> {
        PrivateDir::open_path(&self.root, components, true)
    }
}

/// The effective user's home from the password database (a failpoint build
/// lets a test name it instead: [`crate::failpoint::TEST_PASSWD_HOME_ENV`]).
/// `$HOME` exactly as the environment gives it (unset: none): the one place
/// harnery reads it. Where an agent's directory is derived from it, the
/// agent's own rule decides what an empty or missing value means.
pub fn env_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// The user's home directory as [`Home`] finds it without `HARNERY_HOME`:
/// `$HOME` when it is an absolute path, else the password database's home
/// directory for the effective user.
pub fn user_dir() -> Result<PathBuf, HomeError> {
    user_dir_from(env_home()).ok_or(HomeError::NoHome)
}

fn user_dir_from(home: Option<PathBuf>) -> Option<PathBuf> {
    home.filter(|p| p.is_absolute()).or_else(passwd_home)
}

fn passwd_home() -> Option<PathBuf> {
    if let Some(stand_in) = crate::failpoint::tuning_text(crate::failpoint::TEST_PASSWD_HOME_ENV) {
        return Some(PathBuf::from(stand_in)).filter(|p| p.is_absolute());
    }
    let mut buf = vec![0u8; 4096];
    // SAFETY: `passwd` is a plain C struct of pointers and integers, for
    // which all zero bytes is a valid value; getpwuid_r fills it.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: buffers are valid for the sizes given; `out` is set by libc.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut out,
        )
    };
    if rc != 0 || out.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points into `buf`, NUL-terminated by getpwuid_r.
    let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
    let path = PathBuf::from(OsStr::from_bytes(dir.to_bytes()));
    path.is_absolute().then_some(path)
}

/// An open directory handle reached without following symlinks.
///
/// Files and subdirectories are created relative to the handle (`openat`,
/// `mkdirat`, `renameat`), so a directory swapped for a symlink after it was
/// opened cannot redirect a write.
#[derive(Debug)]
pub struct PrivateDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Mode of every directory harnery creates.
pub const DIR_MODE: Mode = Mode::RWXU;
/// Mode of every file harnery creates.
pub const FILE_MODE: Mode = Mode::from_bits_retain(0o600);

impl PrivateDir {
    /// Open `root` (following it if it is a symlink: the user chose it), then
    /// each component below with `O_NOFOLLOW`, creating missing ones as 0700
    /// when `create` is set. A newly created directory is made durable by
    /// fsyncing its parent.
    pub fn open_path(root: &Path, components: &[&str], create: bool) -> io::Result<PrivateDir> {
        if create {
            create_root(root)?;
        }
        let mut dir = PrivateDir::open_root(root)?;
        for name in components {
            dir = dir.child(name, create)?;
        }
        Ok(dir)
    }

    fn open_root(root: &Path) -> io::Result<PrivateDir> {
        if root.as_os_str().as_bytes().contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "path contains NUL",
            ));
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(PrivateDir {
            fd: rustix::fs::open(root, flags, Mode::empty())?,
            path: root.to_path_buf(),
        })
    }

    /// Open the subdirectory `name` (a single component), creating it as 0700
    /// when `create` is set. A symlink in its place is an error (`ELOOP` or
    /// `ENOTDIR`).
    pub fn child(&self, name: &str, create: bool) -> io::Result<PrivateDir> {
        check_component(name)?;
        if create {
            match rustix::fs::mkdirat(&self.fd, name, DIR_MODE) {
                Ok(()) => self.sync()?,
                Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(PrivateDir {
            fd: rustix::fs::openat(&self.fd, name, flags, Mode::empty())?,
            path: self.path.join(name),
        })
    }

    /// Open (creating if `create`) the regular file `name` for appending or
    /// reading, never through a symlink, never blocking on a FIFO. Returns the
    /// file and whether this call created it.
    pub fn open_file(&self, name: &str, flags: OFlags, create: bool) -> io::Result<(File, bool)> {
        check_component(name)?;
        let base = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let open = |flags| rustix::fs::openat(&self.fd, name, flags, FILE_MODE);
        let mut fd = open(base);
        let mut created = false;
        if create && matches!(fd, Err(Errno::NOENT)) {
            fd = open(base | OFlags::CREATE | OFlags::EXCL);
            created = fd.is_ok();
            if matches!(fd, Err(Errno::EXIST)) {
                fd = open(base);
            }
        }
        let file = File::from(fd?);
        if !file.metadata()?.is_file() {
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                self.path.join(name).display()
            )));
        }
        Ok((file, created))
    }

    /// Create the new file `name` exclusively (0600, no symlink follow).
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        check_component(name)?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(
            &self.fd, name, flags, FILE_MODE,
        )?))
    }

    /// Rename `from` to `to` within this directory (no fsync; see [`sync`](Self::sync)).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        check_component(from)?;
        check_component(to)?;
        Ok(rustix::fs::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Remove the file `name` from this directory.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        check_component(name)?;
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// fsync the directory, making renames and creations in it durable.
    pub fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.fd)?)
    }

    /// The path this handle was opened at (for messages and listings).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn create_root(root: &Path) -> io::Result<()> {
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::other(format!(
            "{} is not a directory",
            root.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE.bits())
                .create(root)
        }
        Err(e) => Err(e),
    }
}

/// A name is one path component: not empty, not `.`/`..`, no `/` or NUL.
fn check_component(name: &str) -> io::Result<()> {
    let bad =
        name.is_empty() || name == "." || name == ".." || name.bytes().any(|b| b == b'/' || b == 0);
    if bad {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("unsafe path component {name:?}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_dir_is_an_absolute_home_else_the_password_databases() {
        let given = |h: &str| user_dir_from(Some(PathBuf::from(h)));
        assert_eq!(given("/home/u"), Some(PathBuf::from("/home/u")));
        assert_eq!(given(""), passwd_home());
        assert_eq!(given("relative/u"), passwd_home());
        assert_eq!(user_dir_from(None), passwd_home());
    }

    #[test]
    fn harnery_home_wins_and_home_falls_back() {
        let h = Home::from_vars(Some("/x/h".into()), Some("/home/u".into())).unwrap();
        assert_eq!(h.root(), Path::new("/x/h"));
        let h = Home::from_vars(None, Some("/home/u".into())).unwrap();
        assert_eq!(h.root(), Path::new("/home/u/.harnery"));
        assert!(Home::from_vars(Some("rel".into()), None).is_err());
        let h = Home::from_vars(None, None).unwrap();
        assert!(h.root().ends_with(".harnery"));
    }

    #[test]
    fn symlinked_component_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path().join("h"));
        home.private_dir(&["spool"]).unwrap();
        std::os::unix::fs::symlink(t.path(), home.spool_dir().join("intake")).unwrap();
        assert!(home.private_dir(&["spool", "intake"]).is_err());
    }
}
