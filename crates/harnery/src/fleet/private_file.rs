//! Publishing a small private file (the host id, the ship key) exactly
//! once: written to a temporary file of mode 0600, synced, then linked into
//! place, so a reader sees the whole file or none and two runs racing to
//! create it agree on one.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What publishing did.
pub enum Published {
    /// This run made the file.
    Created,
    /// Another run made it first; its content is the one to use.
    Exists,
}

/// Publish `line` as `dir/name`, mode 0600, unless the file exists. An
/// error names the path it happened on.
pub fn publish_once(
    dir: &Path,
    name: &str,
    line: &str,
) -> Result<Published, (PathBuf, std::io::Error)> {
    let at = |path: &Path| {
        let path = path.to_path_buf();
        move |e| (path, e)
    };
    std::fs::create_dir_all(dir).map_err(at(dir))?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(at(&tmp))?;
        writeln!(f, "{line}").map_err(at(&tmp))?;
        f.sync_all().map_err(at(&tmp))?;
    }
    let path = dir.join(name);
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(Published::Created)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Published::Exists),
        Err(e) => Err((path, e)),
    }
}
