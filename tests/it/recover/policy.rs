//! Resume safety from the real Copilot package files: 1.0.63 (changelog in
//! node_modules) keeps the legacy ceiling, 1.0.102 (changelog in the package
//! cache) allows native resume, and removed, malformed or older evidence keeps
//! the ceiling with its reason.

use std::path::{Path, PathBuf};

use harnery::home::Home;
use harnery::resume::evidence::{RunningCopilotHint, SearchPlan};
use harnery::resume::policy::{Policy, StreamSize};
use harnery::resume::recorded::hint_from_harnery;
use harnery::resume::{assess_copilot, with_stream};
use harnery::spool::SpoolWriter;

fn package(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recover/packages")
        .join(version)
}

/// `<prefix>/lib/node_modules/@github/copilot` with the given files.
fn node_modules(root: &Path, files: &[(&str, Vec<u8>)]) -> PathBuf {
    let dir = root.join("prefix/lib/node_modules/@github/copilot");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).expect("write");
    }
    root.join("prefix")
}

/// `<cache>/copilot/pkg/linux-x64/<version>/` holding a changelog.
fn pkg_cache(root: &Path, version: &str, changelog: Vec<u8>) -> PathBuf {
    let dir = root.join("cache/copilot/pkg/linux-x64").join(version);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("changelog.json"), changelog).expect("write");
    std::fs::copy(
        package(version).join("package.json"),
        dir.join("package.json"),
    )
    .ok();
    root.join("cache/copilot/pkg")
}

fn read(version: &str, name: &str) -> Vec<u8> {
    std::fs::read(package(version).join(name)).expect("fixture")
}

fn plan(prefixes: Vec<PathBuf>, caches: Vec<PathBuf>) -> SearchPlan {
    SearchPlan {
        package_dirs: Vec::new(),
        cache_pkg_dirs: caches,
        npm_prefixes: prefixes,
        path_dirs: Vec::new(),
    }
}

fn hint(version: &str) -> RunningCopilotHint {
    RunningCopilotHint {
        binary_version: Some(version.into()),
        resolved_dist_dir: None,
        source: vec!["test".into()],
    }
}

/// The real 1.0.102 changelog with every advertising entry taken out.
fn without_advert() -> Vec<u8> {
    let mut log: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&read("1.0.102", "changelog.json")).expect("real changelog parses");
    for entries in log.values_mut() {
        if let Some(list) = entries.as_array_mut() {
            list.retain(|e| {
                !e["description"]
                    .as_str()
                    .unwrap_or("")
                    .contains("Resume very large local sessions")
            });
        }
    }
    serde_json::to_vec(&log).expect("serialize")
}

#[test]
fn copilot_1_0_63_in_node_modules_keeps_the_legacy_ceiling() {
    let tmp = tempfile::tempdir().expect("tmp");
    let prefix = node_modules(
        tmp.path(),
        &[
            ("package.json", read("1.0.63", "package.json")),
            ("changelog.json", read("1.0.63", "changelog.json")),
        ],
    );
    let a = assess_copilot(RunningCopilotHint::default(), &plan(vec![prefix], vec![]));
    assert_eq!(a.selected.version.as_deref(), Some("1.0.63"));
    assert_eq!(a.selected.chosen_by, "newest-installed");
    assert_eq!(a.policy, Policy::LegacyCeiling);
    assert!(
        a.reason.contains("has no entry advertising"),
        "{}",
        a.reason
    );
    assert!(
        a.changelog
            .expect("found")
            .ends_with("node_modules/@github/copilot/changelog.json")
    );
}

#[test]
fn copilot_1_0_102_in_the_package_cache_allows_native_resume() {
    let tmp = tempfile::tempdir().expect("tmp");
    // npm's package.json for 1.0.102 ships no changelog; the cache holds it.
    let prefix = node_modules(
        tmp.path(),
        &[("package.json", read("1.0.102", "npm-package.json"))],
    );
    let cache = pkg_cache(tmp.path(), "1.0.102", read("1.0.102", "changelog.json"));
    let a = assess_copilot(
        RunningCopilotHint::default(),
        &plan(vec![prefix], vec![cache]),
    );
    assert_eq!(a.selected.version.as_deref(), Some("1.0.102"));
    assert_eq!(a.policy, Policy::Native, "{}", a.reason);
    let entry = a.deciding_entry.expect("deciding entry");
    assert_eq!(entry.version, "1.0.87");
    assert_eq!(
        entry.description,
        "Resume very large local sessions and continue with new prompts reliably."
    );
    assert!(
        a.changelog
            .expect("found")
            .ends_with("pkg/linux-x64/1.0.102/changelog.json")
    );
    assert_eq!(a.installed.len(), 2);
}

#[test]
fn changelog_with_the_entry_removed_keeps_the_ceiling() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = pkg_cache(tmp.path(), "1.0.102", without_advert());
    let a = assess_copilot(RunningCopilotHint::default(), &plan(vec![], vec![cache]));
    assert_eq!(a.policy, Policy::LegacyCeiling);
    assert!(
        a.reason.contains("has no entry advertising"),
        "{}",
        a.reason
    );
}

#[test]
fn malformed_changelog_keeps_the_ceiling_with_the_reason() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut bytes = read("1.0.102", "changelog.json");
    bytes.truncate(bytes.len() / 2);
    let cache = pkg_cache(tmp.path(), "1.0.102", bytes);
    let a = assess_copilot(RunningCopilotHint::default(), &plan(vec![], vec![cache]));
    assert_eq!(a.policy, Policy::LegacyCeiling);
    assert!(
        a.reason.contains("is malformed: not valid JSON"),
        "{}",
        a.reason
    );
}

#[test]
fn nothing_installed_keeps_the_ceiling() {
    let a = assess_copilot(RunningCopilotHint::default(), &plan(vec![], vec![]));
    assert_eq!(a.policy, Policy::LegacyCeiling);
    assert!(a.reason.contains("no installed Copilot"), "{}", a.reason);
}

#[test]
fn running_version_hint_beats_the_installed_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let prefix = node_modules(
        tmp.path(),
        &[
            ("package.json", read("1.0.63", "package.json")),
            ("changelog.json", read("1.0.63", "changelog.json")),
        ],
    );
    let cache = pkg_cache(tmp.path(), "1.0.102", read("1.0.102", "changelog.json"));
    // Auto-update: 1.0.90 runs; the 1.0.102 changelog's history covers it.
    let a = assess_copilot(
        hint("1.0.90"),
        &plan(vec![prefix.clone()], vec![cache.clone()]),
    );
    assert_eq!(
        (a.selected.version.as_deref(), a.selected.chosen_by.as_str()),
        (Some("1.0.90"), "hint")
    );
    assert_eq!(a.policy, Policy::Native, "{}", a.reason);
    // An older runtime than the entry stays legacy, whatever is installed.
    let a = assess_copilot(hint("1.0.86"), &plan(vec![prefix.clone()], vec![cache]));
    assert_eq!(a.policy, Policy::LegacyCeiling);
    assert!(a.reason.contains("older than 1.0.87"), "{}", a.reason);
    // A prerelease below the first advertising release and prerelease.
    let a = assess_copilot(hint("1.0.87-0"), &plan(vec![prefix.clone()], vec![]));
    assert_eq!(
        a.policy,
        Policy::LegacyCeiling,
        "only the 1.0.63 changelog: silent"
    );
    let a = assess_copilot(hint("not-a-version"), &plan(vec![prefix], vec![]));
    assert!(a.reason.contains("not a valid version"), "{}", a.reason);
}

#[test]
fn dist_dir_hint_names_the_changelog_that_runs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = pkg_cache(tmp.path(), "1.0.102", read("1.0.102", "changelog.json"));
    let dist = cache.join("linux-x64/1.0.102");
    let h = RunningCopilotHint {
        binary_version: None,
        resolved_dist_dir: Some(dist.clone()),
        source: vec![],
    };
    let a = assess_copilot(h, &plan(vec![], vec![]));
    assert_eq!(
        (a.selected.version.as_deref(), a.selected.chosen_by.as_str()),
        (Some("1.0.102"), "dist-dir")
    );
    assert_eq!(a.changelog, Some(dist.join("changelog.json")));
    assert_eq!(a.policy, Policy::Native);
}

/// A Copilot hook record of `session` whose envelope carries the running
/// version and (when given) its dist dir, as the hook captures them.
fn record_running(writer: &SpoolWriter, session: &str, version: &str, dist: Option<&str>) {
    let payload = format!(r#"{{"sessionId":"{session}","timestamp":1,"reason":"complete"}}"#);
    let mut env = vec![(
        "COPILOT_CLI_BINARY_VERSION".to_string(),
        version.to_string(),
    )];
    if let Some(d) = dist {
        env.push(("COPILOT_CLI_RESOLVED_DIST_DIR".to_string(), d.to_string()));
    }
    writer
        .append("copilot", Some("sessionEnd"), payload.as_bytes(), &env)
        .expect("append");
}

#[test]
fn recorded_hint_prefers_the_session_then_the_newest_in_spool_and_ledger() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = Home::at(tmp.path().join("hh"));
    assert!(hint_from_harnery(&home, None).binary_version.is_none());
    let writer = SpoolWriter::new(home.clone());
    record_running(&writer, "sess-a", "1.0.86", Some("/pkg/linux-x64/1.0.86"));
    record_running(&writer, "sess-b", "1.0.102", None);
    let newest = hint_from_harnery(&home, None);
    assert_eq!(newest.binary_version.as_deref(), Some("1.0.102"));
    // The dist dir was only recorded by sess-a: it is still the newest one.
    assert_eq!(
        newest.resolved_dist_dir,
        Some(PathBuf::from("/pkg/linux-x64/1.0.86"))
    );
    let own = hint_from_harnery(&home, Some("sess-a"));
    assert_eq!(own.binary_version.as_deref(), Some("1.0.86"));
    assert!(
        own.source.iter().all(|s| s.starts_with("spool:")),
        "{:?}",
        own.source
    );
    // After finalize drains the spool, the envelopes are read from the ledger.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnery"))
        .arg("finalize")
        .env("HARNERY_HOME", home.root())
        .output()
        .expect("finalize runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let own = hint_from_harnery(&home, Some("sess-a"));
    assert_eq!(own.binary_version.as_deref(), Some("1.0.86"));
    assert!(
        own.source.iter().all(|s| s.starts_with("ledger:")),
        "{:?}",
        own.source
    );
    assert_eq!(
        hint_from_harnery(&home, Some("sess-zzz"))
            .binary_version
            .as_deref(),
        Some("1.0.102")
    );
}

#[test]
fn stream_over_the_ceiling_is_not_resumed_under_the_legacy_policy() {
    let legacy = assess_copilot(RunningCopilotHint::default(), &plan(vec![], vec![]));
    let over = StreamSize::new(600_220_870, Some(600_220_000));
    let a = with_stream(legacy.clone(), "s-1", over.clone());
    assert_eq!(a.resume_is_safe, Some(false));
    assert!(
        a.command
            .as_deref()
            .is_some_and(|c| c.starts_with("harnery recover s-1"))
    );
    assert!(
        a.reason.ends_with("the stream exceeds the ceiling"),
        "{}",
        a.reason
    );
    let within = with_stream(legacy, "s-1", StreamSize::new(30_688, None));
    assert_eq!(within.command.as_deref(), Some("copilot --resume s-1"));
    let s = within.stream.expect("size");
    assert_eq!(
        (s.chars, s.chars_counted.as_str(), s.over_ceiling),
        (30_688, "upper-bound", false)
    );

    let tmp = tempfile::tempdir().expect("tmp");
    let cache = pkg_cache(tmp.path(), "1.0.102", read("1.0.102", "changelog.json"));
    let native = with_stream(
        assess_copilot(RunningCopilotHint::default(), &plan(vec![], vec![cache])),
        "s-1",
        over,
    );
    assert_eq!(
        (native.resume_is_safe, native.command.as_deref()),
        (Some(true), Some("copilot --resume s-1"))
    );
}
