//! Headless Chromium for the view tests: find it, dump a page's DOM after
//! its inline script ran, take a screenshot and count its colours.
//!
//! The browser runs with no network (every host name resolves to nothing),
//! so a page that needed one would show it.
#![allow(dead_code)]

mod cdp;
pub use cdp::Devtools;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What to run when no browser is found.
pub const INSTALL: &str = "apt-get install -y chromium";

pub struct Browser {
    pub(crate) bin: PathBuf,
}

impl Browser {
    /// `HARNERY_CHROMIUM`, else the first Chromium on `PATH`; a test that
    /// needs one fails, saying how to install it, when there is none.
    pub fn find() -> Browser {
        let named = std::env::var_os("HARNERY_CHROMIUM").map(PathBuf::from);
        let found = named.or_else(|| {
            [
                "chromium",
                "chromium-browser",
                "google-chrome",
                "google-chrome-stable",
            ]
            .iter()
            .find_map(|name| on_path(name))
        });
        match found {
            Some(bin) => Browser { bin },
            None => panic!(
                "the view tests need headless Chromium and found none on PATH \
                 (or in HARNERY_CHROMIUM); install it with: {INSTALL}"
            ),
        }
    }

    /// [`Browser::find`], or `None` (saying why and how to install one)
    /// when there is none: for tests that skip rather than fail without
    /// a browser.
    pub fn find_or_skip() -> Option<Browser> {
        let found = std::env::var_os("HARNERY_CHROMIUM").is_some()
            || [
                "chromium",
                "chromium-browser",
                "google-chrome",
                "google-chrome-stable",
            ]
            .iter()
            .any(|name| on_path(name).is_some());
        if !found {
            println!(
                "skipped: no headless Chromium on PATH (or in HARNERY_CHROMIUM); install it with: {INSTALL}"
            );
            return None;
        }
        Some(Browser::find())
    }

    fn command(&self, profile: &Path) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--headless")
            .arg("--no-sandbox")
            .arg("--disable-gpu")
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--no-first-run")
            .arg("--no-default-browser-check")
            .arg("--disable-extensions")
            .arg("--disable-background-networking")
            .arg("--host-resolver-rules=MAP * ~NOTFOUND")
            .arg("--hide-scrollbars")
            .arg("--timeout=60000");
        cmd
    }

    /// The DOM of `page` once loaded, and how long the browser ran.
    pub fn dump_dom(&self, page: &Path) -> (String, Duration) {
        let profile = tempfile::tempdir().expect("a browser profile directory");
        let started = Instant::now();
        let out = self
            .command(profile.path())
            .arg("--dump-dom")
            .arg(url(page))
            .output()
            .expect("chromium runs");
        let took = started.elapsed();
        assert!(
            out.status.success(),
            "chromium --dump-dom failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).expect("the DOM is UTF-8"),
            took,
        )
    }

    /// A `width`×`height` screenshot of `page` at `png`.
    pub fn screenshot(&self, page: &Path, png: &Path, width: u32, height: u32) -> Duration {
        let profile = tempfile::tempdir().expect("a browser profile directory");
        let started = Instant::now();
        let out = self
            .command(profile.path())
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--screenshot={}", png.display()))
            .arg(url(page))
            .output()
            .expect("chromium runs");
        assert!(
            out.status.success() && png.is_file(),
            "chromium --screenshot failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        started.elapsed()
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn url(page: &Path) -> String {
    let abs = std::fs::canonicalize(page).expect("the page exists");
    format!("file://{}", abs.display())
}

/// How many distinct colours a PNG holds.
pub fn colours(png: &Path) -> usize {
    let file = std::fs::File::open(png).expect("the screenshot opens");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("a sane image size")];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    let bytes = &buf[..info.buffer_size()];
    let px = info.color_type.samples() * usize::from(info.bit_depth as u8).div_ceil(8);
    let distinct: std::collections::HashSet<&[u8]> = bytes.chunks(px).collect();
    distinct.len()
}

/// Each span mark of a dumped DOM: (`data-span-id`, `data-span-state`), in
/// document order.
pub fn span_marks(dom: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find("data-span-id=\"") {
        rest = &rest[at + "data-span-id=\"".len()..];
        let id = value(rest);
        let state_at = rest
            .find("data-span-state=\"")
            .expect("a span mark has a state");
        let state = value(&rest[state_at + "data-span-state=\"".len()..]);
        out.push((id, state));
    }
    out
}

fn value(from: &str) -> String {
    from[..from.find('"').expect("a closed attribute")].to_string()
}

/// The value of attribute `name` on the dumped document's root element.
pub fn root_attr(dom: &str, name: &str) -> Option<String> {
    let html = &dom[dom.find("<html")?..];
    let tag = &html[..html.find('>')?];
    let key = format!("{name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(value(&tag[at..]))
}
