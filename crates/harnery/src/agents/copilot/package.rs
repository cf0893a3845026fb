//! Copilot package discovery: where the Copilot that would run is
//! installed, and its version, read-only: the running-copilot
//! hint, the unpacked package cache, and global `node_modules`. Nothing here
//! runs `npm` or `copilot`; it only looks at files.
//!
//! Locations, in the order they are searched:
//! - the hint's dist dir (`COPILOT_CLI_RESOLVED_DIST_DIR` as a hook saw it);
//! - `--copilot-package DIR` (a package folder holding `package.json`);
//! - the first `copilot` on `PATH`, followed through its symlinks to the
//!   package folder it lives in (npm's `.bin/copilot` is a link to
//!   `@github/copilot/npm-loader.js`; the platform binary sits in
//!   `@github/copilot-<platform>/`). A `copilot` outside any package (a
//!   standalone binary) has no version here. It comes before the caches and
//!   prefixes so that a global npm install reached from `PATH` is listed as
//!   on `PATH` (a folder found twice is listed once, first place wins);
//! - package caches: `$COPILOT_PKG_CACHE_HOME/<platform>/<version>/`,
//!   `$COPILOT_CACHE_HOME/pkg/<platform>/<version>/`,
//!   `${XDG_CACHE_HOME:-~/.cache}/copilot/pkg/<platform>/<version>/`;
//! - `<prefix>/lib/node_modules/@github/copilot/` for the usual global npm
//!   prefixes (`$NPM_CONFIG_PREFIX`, `~/.npm-global`, `~/.local`, `/usr/local`,
//!   `/usr`, `/opt/homebrew`, and each `~/.nvm/versions/node/*`).
//!   `HARNERY_NPM_PREFIXES` (colon-separated) replaces that list.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::version::Version;

/// What the running Copilot told its hooks, when known.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunningCopilotHint {
    pub binary_version: Option<String>,
    pub resolved_dist_dir: Option<PathBuf>,
    /// Where each value came from (`flag`, `env`, `spool:<file>`).
    pub source: Vec<String>,
}

/// The kind of place a package was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    DistDir,
    PackageFlag,
    PkgCache,
    NodeModules,
    OnPath,
}

/// One installed package.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub place: Place,
    pub dir: PathBuf,
    /// From `package.json`, else the cache folder's name.
    pub version: Option<String>,
    /// `changelog.json` beside it, when present.
    pub changelog: Option<PathBuf>,
}

impl Installed {
    pub(crate) fn parsed_version(&self) -> Option<Version> {
        self.version.as_deref().and_then(Version::parse)
    }
}

/// Where to look (resolved from flags and the environment by the CLI).
#[derive(Debug, Clone, Default)]
pub struct SearchPlan {
    pub package_dirs: Vec<PathBuf>,
    pub cache_pkg_dirs: Vec<PathBuf>,
    pub npm_prefixes: Vec<PathBuf>,
    /// The directories of `PATH`, in order.
    pub path_dirs: Vec<PathBuf>,
}

impl SearchPlan {
    /// The default plan for this environment.
    pub fn from_env(package_dirs: Vec<PathBuf>) -> SearchPlan {
        let home = crate::home::env_home();
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let mut cache_pkg_dirs = Vec::new();
        cache_pkg_dirs.extend(var("COPILOT_PKG_CACHE_HOME"));
        cache_pkg_dirs.extend(var("COPILOT_CACHE_HOME").map(|d| d.join("pkg")));
        let xdg = var("XDG_CACHE_HOME").or_else(|| home.as_ref().map(|h| h.join(".cache")));
        cache_pkg_dirs.extend(xdg.map(|d| d.join("copilot").join("pkg")));
        let npm_prefixes = match std::env::var_os("HARNERY_NPM_PREFIXES") {
            Some(list) => std::env::split_paths(&list)
                .filter(|p| !p.as_os_str().is_empty())
                .collect(),
            None => default_prefixes(home.as_deref(), var("NPM_CONFIG_PREFIX")),
        };
        let path_dirs = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        SearchPlan {
            package_dirs,
            cache_pkg_dirs,
            npm_prefixes,
            path_dirs,
        }
    }
}

fn default_prefixes(home: Option<&Path>, npm_prefix: Option<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = npm_prefix.into_iter().collect();
    if let Some(h) = home {
        out.push(h.join(".npm-global"));
        out.push(h.join(".local"));
    }
    out.extend(["/usr/local", "/usr", "/opt/homebrew"].map(PathBuf::from));
    if let Some(h) = home {
        out.extend(subdirs(&h.join(".nvm/versions/node")));
    }
    out
}

/// Every package the plan finds, dist dir first.
pub(crate) fn discover(plan: &SearchPlan, hint: &RunningCopilotHint) -> Vec<Installed> {
    let mut found: Vec<Installed> = Vec::new();
    if let Some(dir) = &hint.resolved_dist_dir {
        found.extend(package_at(dir, Place::DistDir, version_named(dir)));
    }
    for dir in &plan.package_dirs {
        found.extend(package_at(dir, Place::PackageFlag, None));
    }
    found.extend(on_path(&plan.path_dirs).and_then(|exe| package_of(&exe)));
    for pkg in &plan.cache_pkg_dirs {
        for platform in subdirs(pkg) {
            for version_dir in subdirs(&platform) {
                let name = version_dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned());
                found.extend(package_at(&version_dir, Place::PkgCache, name));
            }
        }
    }
    for prefix in &plan.npm_prefixes {
        let dir = prefix.join("lib/node_modules/@github/copilot");
        found.extend(package_at(&dir, Place::NodeModules, None));
    }
    dedupe(found)
}

/// The first executable file called `copilot` in `dirs`, as a shell would
/// find it, with its symlinks resolved.
pub(crate) fn on_path(dirs: &[PathBuf]) -> Option<PathBuf> {
    let dirs = dirs.iter().filter(|d| !d.as_os_str().is_empty());
    executable_in(dirs, "copilot").and_then(|p| fs::canonicalize(p).ok())
}

/// The first executable file called `name` in `dirs`, in their order.
pub(crate) fn executable_in<'a>(
    dirs: impl IntoIterator<Item = &'a PathBuf>,
    name: &str,
) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The Copilot package a resolved executable belongs to: the folder holding
/// it, when that folder's `package.json` names `@github/copilot` or one of its
/// platform packages (`@github/copilot-linux-x64`, ...).
pub(crate) fn package_of(exe: &Path) -> Option<Installed> {
    let dir = exe.parent()?;
    let json = read_package_json(&dir.join("package.json"))?;
    let name = json.get("name")?.as_str()?;
    if name != "@github/copilot" && !name.starts_with("@github/copilot-") {
        return None;
    }
    package_at(dir, Place::OnPath, None)
}

/// The same folder reached twice (a dist dir inside the cache) is listed once.
fn dedupe(found: Vec<Installed>) -> Vec<Installed> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for pkg in found {
        let key = fs::canonicalize(&pkg.dir).unwrap_or_else(|_| pkg.dir.clone());
        if !seen.contains(&key) {
            seen.push(key);
            out.push(pkg);
        }
    }
    out
}

/// A folder's name when it is a version (`.../pkg/linux-x64/1.0.102`).
fn version_named(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?;
    Version::parse(name).map(|_| name.to_string())
}

fn package_at(dir: &Path, place: Place, dir_version: Option<String>) -> Option<Installed> {
    if !dir.is_dir() {
        return None;
    }
    let version = package_version(&dir.join("package.json")).or(dir_version);
    let changelog = Some(dir.join("changelog.json")).filter(|p| p.is_file());
    if version.is_none() && changelog.is_none() {
        return None;
    }
    Some(Installed {
        place,
        dir: dir.to_path_buf(),
        version,
        changelog,
    })
}

fn package_version(path: &Path) -> Option<String> {
    let json = read_package_json(path)?;
    json.get("version")?.as_str().map(str::to_string)
}

fn read_package_json(path: &Path) -> Option<serde_json::Value> {
    let meta = fs::metadata(path).ok()?;
    if meta.len() > 1 << 20 {
        return None;
    }
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    fn executable(path: &Path) {
        fs::write(path, "#!/bin/sh\n").expect("write");
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[test]
    fn the_first_executable_copilot_on_path_is_followed_to_its_package() {
        let t = tempfile::tempdir().expect("tempdir");
        let (plain, npm_bin) = (t.path().join("plain"), t.path().join("npm/.bin"));
        let pkg = t.path().join("npm/@github/copilot-linux-x64");
        for d in [&plain, &npm_bin, &pkg] {
            fs::create_dir_all(d).expect("mkdir");
        }
        // Not executable: a shell skips it, and so does the search.
        fs::write(plain.join("copilot"), "data").expect("write");
        executable(&pkg.join("copilot"));
        let manifest = r#"{"name": "@github/copilot-linux-x64", "version": "1.0.86"}"#;
        fs::write(pkg.join("package.json"), manifest).expect("write");
        symlink(pkg.join("copilot"), npm_bin.join("copilot")).expect("symlink");

        let exe = on_path(&[plain.clone(), npm_bin]).expect("found");
        assert_eq!(exe, fs::canonicalize(pkg.join("copilot")).expect("real"));
        let found = package_of(&exe).expect("a copilot package");
        assert_eq!(
            (found.place, found.version.as_deref()),
            (Place::OnPath, Some("1.0.86"))
        );

        // A standalone binary, or one in somebody else's package, has no version.
        executable(&plain.join("copilot"));
        assert!(package_of(&on_path(std::slice::from_ref(&plain)).expect("found")).is_none());
        fs::write(
            plain.join("package.json"),
            r#"{"name": "other", "version": "9.9.9"}"#,
        )
        .expect("write");
        assert!(package_of(&plain.join("copilot")).is_none());
    }

    #[test]
    fn a_global_npm_install_reached_from_path_is_listed_as_on_path() {
        let t = tempfile::tempdir().expect("tempdir");
        let prefix = t.path().join("usr-local");
        let pkg = prefix.join("lib/node_modules/@github/copilot");
        let bin = prefix.join("bin");
        fs::create_dir_all(&pkg).expect("mkdir");
        fs::create_dir_all(&bin).expect("mkdir");
        let manifest = r#"{"name": "@github/copilot", "version": "1.0.102"}"#;
        fs::write(pkg.join("package.json"), manifest).expect("write");
        executable(&pkg.join("npm-loader.js"));
        symlink(
            "../lib/node_modules/@github/copilot/npm-loader.js",
            bin.join("copilot"),
        )
        .expect("symlink");
        let plan = SearchPlan {
            npm_prefixes: vec![prefix],
            path_dirs: vec![bin],
            ..SearchPlan::default()
        };
        let found = discover(&plan, &RunningCopilotHint::default());
        let places: Vec<Place> = found.iter().map(|i| i.place).collect();
        assert_eq!(places, [Place::OnPath]);
    }
}
