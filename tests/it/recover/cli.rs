//! `harnery recover` and `harnery resume-policy` through the real binary, in
//! an isolated environment (HOME, caches, HARNERY_HOME and npm prefixes all
//! point into a temporary folder). Exit codes: 0 ok, 2 usage or I/O error.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

const KILLED: &str = "93ac04b6-be37-48e5-9126-c3f986eaa653";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recover")
        .join(rel)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture dir").flatten() {
        let dest = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            tmp: tempfile::tempdir().expect("tmp"),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn with_copilot(self, scenario: &str) -> Env {
        copy_tree(
            &fixture(&format!("copilot/{scenario}")),
            &self.path("copilot"),
        );
        self
    }

    fn with_claude(self, scenario: &str) -> Env {
        copy_tree(
            &fixture(&format!("claude-code/{scenario}")),
            &self.path("claude"),
        );
        self
    }

    fn with_cached_package(self, version: &str) -> Env {
        copy_tree(
            &fixture(&format!("packages/{version}")),
            &self.path(&format!("cache/copilot/pkg/linux-x64/{version}")),
        );
        self
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("harnery").expect("binary");
        crate::common::without_installed_agents(&mut cmd, &self.path("home"));
        cmd.env("XDG_CACHE_HOME", self.path("cache"))
            .env("HARNERY_HOME", self.path("harnery"))
            .env("COPILOT_HOME", self.path("copilot"))
            .env("CLAUDE_CONFIG_DIR", self.path("claude"));
        cmd
    }
}

fn stdout_json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn text_packet_puts_the_latest_direction_first() {
    let env = Env::new().with_copilot("interrupted-sigkill-1-killed");
    let out = env.cmd().args(["recover", KILLED]).output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let latest = text.find("## Latest direction").expect("latest section");
    let prompt = text
        .find("Run the shell command that prints hello-from-fake-model")
        .expect("prompt");
    let indexed = text
        .find("## 2. Indexed conversation")
        .expect("indexed section");
    assert!(latest < prompt && prompt < indexed);
    assert!(text.contains("NOT INDEXED"));
    assert!(text.contains(&format!("run: copilot --resume {KILLED}")));
}

#[test]
fn json_packet_has_the_documented_shape() {
    let env = Env::new()
        .with_copilot("interrupted-sigkill-2-resumed")
        .with_cached_package("1.0.102");
    let out = env
        .cmd()
        .args(["recover", KILLED, "--json", "--max-direct", "1"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let p = stdout_json(&out);
    let keys: Vec<&str> = p
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "format",
        "agent",
        "session_id",
        "latest_direction",
        "direction",
        "conversation",
        "steering",
        "recent_activity",
        "stream",
        "index",
        "resume",
        "warnings",
    ] {
        assert!(keys.contains(&key), "missing {key} in {keys:?}");
    }
    assert_eq!(
        p["latest_direction"]["text"],
        "Continue where you left off."
    );
    assert_eq!(p["direction"]["truncation"]["omitted_by_count"], 1);
    assert_eq!(p["direction"]["entries"][0]["kind"], "user");
    assert_eq!(p["resume"]["policy"], "native");
    assert_eq!(p["resume"]["deciding_entry"]["version"], "1.0.87");
}

#[test]
fn preview_reports_version_changelog_policy_and_command() {
    let env = Env::new()
        .with_copilot("interrupted-sigkill-1-killed")
        .with_cached_package("1.0.102");
    let out = env
        .cmd()
        .args(["recover", KILLED, "--preview", "--json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let a = stdout_json(&out);
    assert_eq!(a["selected"]["version"], "1.0.102");
    assert_eq!(a["policy"], "native");
    assert!(
        a["changelog"]
            .as_str()
            .expect("path")
            .ends_with("1.0.102/changelog.json")
    );
    assert_eq!(a["stream"]["bytes"], 30_688);
    assert_eq!(a["stream"]["ceiling"], 536_870_888u64);
    assert_eq!(a["command"], format!("copilot --resume {KILLED}"));

    let out = env
        .cmd()
        .args([
            "recover",
            KILLED,
            "--preview",
            "--copilot-version",
            "1.0.63",
        ])
        .output()
        .expect("run");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        text.contains("policy: legacy-ceiling: Copilot 1.0.63 is older than 1.0.87"),
        "{text}"
    );
}

#[test]
fn resume_policy_reads_the_hook_environment() {
    let env = Env::new().with_cached_package("1.0.102");
    let out = env
        .cmd()
        .args(["resume-policy", "--json"])
        .env("COPILOT_CLI_BINARY_VERSION", "1.0.86")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let a = stdout_json(&out);
    assert_eq!(a["selected"]["chosen_by"], "hint");
    assert_eq!(a["hint"]["source"][0], "env:COPILOT_CLI_BINARY_VERSION");
    assert_eq!(a["policy"], "legacy-ceiling");

    let out = Env::new()
        .cmd()
        .args(["resume-policy"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no installed Copilot package"));
}

#[test]
fn claude_code_session_is_found_by_its_id() {
    let env = Env::new().with_claude("resume");
    let out = env
        .cmd()
        .args(["recover", "8d31d374-43c7-42c3-aadb-185a6df76fcf"])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("[[scenario:resume2]] Second turn."));
    assert!(text.contains("run: claude --resume 8d31d374-43c7-42c3-aadb-185a6df76fcf"));
}

#[test]
fn missing_session_exits_2_naming_the_path() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["recover", "no-such-session", "--agent", "copilot"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = env.path("copilot/session-state/no-such-session/events.jsonl");
    assert!(err.contains(&expected.display().to_string()), "{err}");
}

#[test]
fn unsafe_session_id_and_bad_flags_exit_2() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["recover", "../../etc"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a session id"));
    let out = env
        .cmd()
        .args(["recover", "x", "--max-bytes", "zero"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn ambiguous_session_asks_for_the_agent() {
    let env = Env::new().with_copilot("interrupted-sigkill-1-killed");
    let project = env.path(&format!("claude/projects/p/{KILLED}.jsonl"));
    std::fs::create_dir_all(project.parent().expect("parent")).expect("mkdir");
    std::fs::write(&project, "").expect("write");
    let out = env.cmd().args(["recover", KILLED]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--agent"));
    let out = env
        .cmd()
        .args(["recover", KILLED, "--agent", "copilot"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn unreadable_stream_exits_2_naming_the_path() {
    let env = Env::new();
    let stream = env.path(&format!("copilot/session-state/{KILLED}/events.jsonl"));
    std::fs::create_dir_all(&stream).expect("a folder where the file should be");
    let out = env
        .cmd()
        .args(["recover", KILLED, "--agent", "copilot"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("events.jsonl"));
}
