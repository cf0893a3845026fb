//! Records are followed only where the agent writes them for that very
//! session: every path a hook payload can name that is not that (a FIFO, a
//! socket, a device, a directory, a symlink loop, a relative or `..` path,
//! a foreign file, a Copilot session id with separators) is one
//! `record.problem` of kind `refused` naming the path, nothing of it is
//! read, `finalize` exits 0 without hanging, and every hook signal lands.
//! Real binaries, a temporary home, real FIFOs and sockets.

use crate::common::{self, hook};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// The `basic` scenario's session (its hooks are the fixture's).
const SID: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";
/// Bytes that appear only inside files that must never be read.
const MARKER: &str = "FOREIGN-BYTES-7f3a";
/// A guard against a hang (a FIFO's `open` can block for good), not a
/// speed target: a run that takes this long has hung.
const HANG_GUARD: Duration = Duration::from_secs(300);

/// A temporary root holding harnery's home and the agents' directories.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Root {
        let root = Root {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(root.projects()).unwrap();
        std::fs::create_dir_all(root.home()).unwrap();
        root
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("harnery")
    }

    /// Claude Code's project directory for the session.
    fn projects(&self) -> PathBuf {
        self.dir.path().join("claude/projects/-tmp-proj")
    }

    /// Where Claude Code writes the session's transcript.
    fn transcript(&self) -> PathBuf {
        self.projects().join(format!("{SID}.jsonl"))
    }

    fn copilot_home(&self) -> PathBuf {
        self.dir.path().join("copilot")
    }

    /// A file outside every agent's shape holding JSON lines that would
    /// read as this session's messages, carrying [`MARKER`].
    fn foreign_file(&self) -> PathBuf {
        let path = self.dir.path().join("secret/passwd");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, marker_lines(SID)).unwrap();
        path
    }

    fn harnery(&self) -> assert_cmd::Command {
        let mut cmd = common::harnery(&self.home());
        cmd.env("HARNERY_RECORDS", "on")
            .env("COPILOT_HOME", self.copilot_home())
            .timeout(HANG_GUARD);
        cmd
    }

    /// One `finalize`: it exits 0; its summary.
    fn finalize(&self) -> Value {
        let out = self
            .harnery()
            .args(["finalize", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "finalize: {:?} {}",
            out.status,
            common::stderr(&out)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn events(&self) -> Vec<Value> {
        let out = self
            .harnery()
            .args(["export", "--format", "jsonl"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Feed the `basic` scenario's Claude Code hooks naming `path` as the
    /// transcript; how many.
    fn feed_claude(&self, path: &Path) -> u64 {
        let hooks = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/claude-code/basic/hooks.jsonl"),
        )
        .unwrap();
        let mut n = 0;
        for line in hooks.lines().filter(|l| !l.trim().is_empty()) {
            let mut payload: Value = serde_json::from_str(line).unwrap();
            payload["transcript_path"] = Value::String(path.display().to_string());
            hook(&self.home(), &["claude-code"], payload.to_string());
            n += 1;
        }
        n
    }

    /// Feed a small Copilot session `session` whose `agentStop` names
    /// `transcript` (when given); how many.
    fn feed_copilot(&self, session: &str, transcript: Option<&Path>) -> u64 {
        let t = 1_795_997_711_000_i64;
        let mut stop = serde_json::json!({"sessionId": session, "timestamp": t + 4,
            "stopReason": "end_turn", "cwd": "/p"});
        if let Some(path) = transcript {
            stop["transcriptPath"] = Value::String(path.display().to_string());
        }
        let signals = [
            (
                "sessionStart",
                serde_json::json!({"sessionId": session, "timestamp": t,
                "source": "new", "cwd": "/p"}),
            ),
            (
                "userPromptSubmitted",
                serde_json::json!({"sessionId": session,
                "timestamp": t + 1, "prompt": "list", "cwd": "/p"}),
            ),
            (
                "preToolUse",
                serde_json::json!({"sessionId": session, "timestamp": t + 2,
                "toolName": "bash", "toolArgs": {"command": "ls"}, "cwd": "/p"}),
            ),
            (
                "postToolUse",
                serde_json::json!({"sessionId": session, "timestamp": t + 3,
                "toolName": "bash", "toolArgs": {"command": "ls"},
                "toolResult": {"resultType": "success", "textResultForLlm": "a"}, "cwd": "/p"}),
            ),
            ("agentStop", stop),
            (
                "sessionEnd",
                serde_json::json!({"sessionId": session, "timestamp": t + 5,
                "reason": "complete", "cwd": "/p"}),
            ),
        ];
        for (event, payload) in &signals {
            hook(&self.home(), &["copilot", event], payload.to_string());
        }
        signals.len() as u64
    }

    /// Whether [`MARKER`] is anywhere in harnery's home (spool, raw
    /// archive, ledger).
    fn home_holds_marker(&self) -> bool {
        files_under(&self.home())
            .iter()
            .any(|p| contains(&std::fs::read(p).unwrap_or_default(), MARKER.as_bytes()))
    }
}

/// Claude Code lines that would be this session's messages and usage.
fn marker_lines(session: &str) -> String {
    let user = serde_json::json!({"type": "user", "sessionId": session, "uuid": "m-1",
        "timestamp": "2026-11-30T00:00:00.000Z",
        "message": {"role": "user", "content": MARKER}});
    let assistant = serde_json::json!({"type": "assistant", "sessionId": session, "uuid": "m-2",
        "timestamp": "2026-11-30T00:00:01.000Z",
        "message": {"id": "msg-foreign", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": MARKER}],
            "usage": {"input_tokens": 999_999, "output_tokens": 1}}});
    format!("{user}\n{assistant}\n")
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            out.extend(files_under(&e.path()));
        } else if t.is_file() {
            out.push(e.path());
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

/// The one `record.problem` of `events`: kind `refused`, naming `path`; its
/// detail.
fn the_refusal(events: &[Value], path: &str) -> String {
    let problems = of_type(events, "record.problem");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0]["payload"];
    assert_eq!(p["kind"], "refused", "{p}");
    assert_eq!(p["path"], path, "{p}");
    let detail = p["detail"].as_str().unwrap().to_string();
    assert!(detail.contains(path), "{detail}");
    detail
}

/// Finalize a Claude Code session whose hooks name `path`: exit 0, one
/// refusal naming it (its detail returned), nothing of the file read,
/// every hook signal recorded, and a second run reports nothing new.
fn refused_claude(root: &Root, path: &Path) -> String {
    let hooks = root.feed_claude(path);
    let summary = root.finalize();
    let drained = summary["signals_drained"].as_u64().unwrap();
    let own = summary["record_signals"].as_u64().unwrap();
    assert_eq!(drained - own, hooks, "every hook signal drained: {summary}");
    let events = root.events();
    let detail = the_refusal(&events, &path.display().to_string());
    assert_eq!(of_type(&events, "tool.requested").len(), 1);
    assert_eq!(of_type(&events, "tool.completed").len(), 1);
    assert!(of_type(&events, "message.user").is_empty(), "nothing read");
    assert!(
        of_type(&events, "usage.reported").is_empty(),
        "nothing read"
    );
    assert!(!root.home_holds_marker(), "nothing of the file kept");
    root.finalize();
    assert_eq!(root.events().len(), events.len(), "reported once");
    detail
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let root = Root::new();
    let path = root.transcript();
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let detail = refused_claude(&root, &path);
    assert!(detail.contains("a FIFO"), "{detail}");
}

#[test]
fn a_socket_is_refused() {
    let root = Root::new();
    let path = root.transcript();
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let detail = refused_claude(&root, &path);
    assert!(detail.contains("a socket"), "{detail}");
}

#[test]
fn a_device_is_refused_named_or_linked() {
    let root = Root::new();
    let detail = refused_claude(&root, Path::new("/dev/zero"));
    assert!(detail.contains("projects/<project dir>"), "{detail}");

    let root = Root::new();
    let path = root.transcript();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let detail = refused_claude(&root, &path);
    assert!(detail.contains("resolves to /dev/zero"), "{detail}");
}

#[test]
fn a_directory_is_refused() {
    let root = Root::new();
    let path = root.transcript();
    std::fs::create_dir(&path).unwrap();
    let detail = refused_claude(&root, &path);
    assert!(detail.contains("a directory"), "{detail}");
}

#[test]
fn a_symlink_loop_is_refused() {
    let root = Root::new();
    let path = root.transcript();
    std::os::unix::fs::symlink(&path, &path).unwrap();
    let detail = refused_claude(&root, &path);
    assert!(detail.contains("symlink loop"), "{detail}");
}

#[test]
fn a_symlink_out_of_the_shape_is_refused() {
    let root = Root::new();
    let path = root.transcript();
    std::os::unix::fs::symlink(root.foreign_file(), &path).unwrap();
    let detail = refused_claude(&root, &path);
    assert!(detail.contains("resolves to"), "{detail}");
}

#[test]
fn a_relative_path_is_refused() {
    let root = Root::new();
    // The transcript is really there, relative to where finalize runs.
    std::fs::write(root.transcript(), marker_lines(SID)).unwrap();
    let relative = format!("claude/projects/-tmp-proj/{SID}.jsonl");
    let hooks = root.feed_claude(Path::new(&relative));
    let out = root
        .harnery()
        .current_dir(root.dir.path())
        .args(["finalize", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let own = summary["record_signals"].as_u64().unwrap();
    assert_eq!(summary["signals_drained"].as_u64().unwrap() - own, hooks);
    let detail = the_refusal(&root.events(), &relative);
    assert!(detail.contains("not an absolute path"), "{detail}");
    assert!(!root.home_holds_marker());
}

#[test]
fn a_dot_dot_path_is_refused_even_to_a_real_transcript() {
    let root = Root::new();
    std::fs::write(root.transcript(), marker_lines(SID)).unwrap();
    let path = root
        .projects()
        .join("..")
        .join("-tmp-proj")
        .join(format!("{SID}.jsonl"));
    let detail = refused_claude(&root, &path);
    assert!(detail.contains("`..`"), "{detail}");
}

#[test]
fn a_foreign_file_is_refused() {
    let root = Root::new();
    let path = root.foreign_file();
    let detail = refused_claude(&root, &path);
    assert!(detail.contains(&format!("{SID}.jsonl")), "{detail}");
}

#[test]
fn another_sessions_transcript_is_refused() {
    let root = Root::new();
    let other = root.projects().join("0ther-5e55-1on.jsonl");
    std::fs::write(&other, marker_lines("0ther-5e55-1on")).unwrap();
    refused_claude(&root, &other);
}

#[test]
fn a_copilot_session_id_with_separators_never_leaves_the_home() {
    let root = Root::new();
    let session = "../../outside";
    // What the id would reach: <root>/outside/events.jsonl.
    let reached = root.dir.path().join("outside/events.jsonl");
    std::fs::create_dir_all(reached.parent().unwrap()).unwrap();
    std::fs::write(&reached, copilot_lines(session)).unwrap();
    std::fs::create_dir_all(root.copilot_home().join("session-state")).unwrap();
    let hooks = root.feed_copilot(session, None);
    let summary = root.finalize();
    let own = summary["record_signals"].as_u64().unwrap();
    assert_eq!(summary["signals_drained"].as_u64().unwrap() - own, hooks);
    let events = root.events();
    let named = root
        .copilot_home()
        .join("session-state")
        .join(session)
        .join("events.jsonl");
    let detail = the_refusal(&events, &named.display().to_string());
    assert!(detail.contains("not a Copilot session id"), "{detail}");
    assert!(of_type(&events, "message.assistant").is_empty());
    assert!(!root.home_holds_marker());
}

#[test]
fn a_copilot_transcript_path_names_only_its_own_session() {
    let root = Root::new();
    let session = "3390a855-a71e-4e90-937d-c5e1dcb418a6";
    let path = root.foreign_file();
    let hooks = root.feed_copilot(session, Some(&path));
    let summary = root.finalize();
    let own = summary["record_signals"].as_u64().unwrap();
    assert_eq!(summary["signals_drained"].as_u64().unwrap() - own, hooks);
    let detail = the_refusal(&root.events(), &path.display().to_string());
    assert!(detail.contains("session-state/3390a855"), "{detail}");
    assert!(!root.home_holds_marker());

    // The same session's own events.jsonl, anywhere a Copilot home is, is
    // followed (a cron finalize does not know the agent's COPILOT_HOME).
    let root = Root::new();
    let elsewhere = root
        .dir
        .path()
        .join("other-home/session-state")
        .join(session)
        .join("events.jsonl");
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    std::fs::write(&elsewhere, copilot_lines(session)).unwrap();
    root.feed_copilot(session, Some(&elsewhere));
    root.finalize();
    let events = root.events();
    assert!(of_type(&events, "record.problem").is_empty());
    let said = of_type(&events, "message.assistant");
    assert_eq!(said.len(), 1, "{said:?}");
}

/// A Copilot `events.jsonl` for `session`: its start and one message.
fn copilot_lines(session: &str) -> String {
    let start = serde_json::json!({"type": "session.start", "data": {"sessionId": session,
        "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.102",
        "startTime": "2026-11-30T00:15:11.321Z", "context": {"cwd": "/p"}},
        "id": "e-1", "timestamp": "2026-11-30T00:15:11.378Z", "parentId": null});
    let said = serde_json::json!({"type": "assistant.message", "data": {"messageId": "m-1",
        "content": MARKER, "toolRequests": []},
        "id": "e-2", "timestamp": "2026-11-30T00:15:12.000Z", "parentId": "e-1"});
    format!("{start}\n{said}\n")
}

#[test]
fn lines_naming_another_session_are_refused_not_adopted() {
    let root = Root::new();
    let path = root.transcript();
    let own = serde_json::json!({"type": "user", "sessionId": SID, "uuid": "u-1",
        "timestamp": "2026-11-30T00:00:00.000Z",
        "message": {"role": "user", "content": "mine"}});
    std::fs::write(&path, format!("{own}\n{}", marker_lines("another-session"))).unwrap();
    root.feed_claude(&path);
    root.finalize();
    let events = root.events();
    let detail = the_refusal(&events, &path.display().to_string());
    assert!(detail.contains("2 line(s)"), "{detail}");
    assert!(detail.contains("another-session"), "{detail}");
    let users: Vec<&Value> = of_type(&events, "message.user");
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(users[0]["payload"]["text"], "mine");
    assert!(of_type(&events, "usage.reported").is_empty());
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains(MARKER), "no foreign line became an event");
}

/// A 512 MiB sparse file: the zeros are one line over the ceiling (one
/// unrecognized line, 4 KiB of it kept, not 512 MiB), the run stops there
/// (a run reads at most its share of a session's record), and the next run
/// reads on.
#[test]
fn a_sparse_512_mib_file_is_read_bounded_per_run() {
    let root = Root::new();
    let path = root.transcript();
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(512 << 20).unwrap();
    drop(file);
    let after = serde_json::json!({"type": "user", "sessionId": SID, "uuid": "u-1",
        "timestamp": "2026-11-30T00:00:00.000Z",
        "message": {"role": "user", "content": "after the gap"}});
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        write!(f, "\n{after}\n").unwrap();
    }
    let hooks = root.feed_claude(&path);
    let summary = root.finalize();
    let own = summary["record_signals"].as_u64().unwrap();
    assert_eq!(summary["signals_drained"].as_u64().unwrap() - own, hooks);
    let events = root.events();
    let unrecognized: Vec<&Value> = of_type(&events, "signal.unrecognized")
        .into_iter()
        .filter(|e| e["payload"]["record"]["offset"] == 0)
        .collect();
    assert_eq!(unrecognized.len(), 1, "{unrecognized:?}");
    let reason = unrecognized[0]["payload"]["reason"].as_str().unwrap();
    assert!(reason.contains("line ceiling"), "{reason}");
    assert!(
        of_type(&events, "message.user").is_empty(),
        "the next run's"
    );
    let kept: u64 = files_under(&root.home())
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(kept < 64 << 20, "the home holds {kept} bytes");

    root.finalize();
    let users = of_type(&root.events(), "message.user")
        .into_iter()
        .filter(|e| e["payload"]["text"] == "after the gap")
        .count();
    assert_eq!(users, 1);
}

/// A run reads at most its share of one session's record
/// (`HARNERY_RECORD_RUN_BYTES` here, 64 MiB by default): the rest is read
/// by the next runs, and what lands is what one unbounded run lands.
#[test]
fn a_record_is_read_a_share_per_run() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/records/claude-code/basic.jsonl");
    let len = std::fs::metadata(&fixture).unwrap().len();
    let messages = |share: Option<u64>| {
        let root = Root::new();
        std::fs::copy(&fixture, root.transcript()).unwrap();
        root.feed_claude(&root.transcript());
        let mut runs = 0;
        loop {
            let mut cmd = root.harnery();
            if let Some(share) = share {
                cmd.env("HARNERY_RECORD_RUN_BYTES", share.to_string());
            }
            let out = cmd.args(["finalize", "--json"]).output().unwrap();
            assert!(out.status.success(), "{}", common::stderr(&out));
            let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
            runs += 1;
            if summary["record_signals"] == 0 {
                break;
            }
        }
        let events = root.events();
        let texts: Vec<String> = of_type(&events, "message.assistant")
            .iter()
            .chain(of_type(&events, "message.user").iter())
            .map(|e| e["payload"]["text"].to_string())
            .collect();
        (runs, texts)
    };
    let (one_run, whole) = messages(None);
    assert_eq!(one_run, 2, "one run reads it, the next finds nothing new");
    let (runs, shared) = messages(Some(len / 3));
    assert!(runs >= 4, "three shares or more, then nothing: {runs}");
    assert_eq!(shared, whole);
}

/// A record with more unread bytes than the ceiling (1 GiB) is a health
/// condition naming it; the run that found it read nothing of the line
/// still being written and held none of it.
#[test]
fn a_backlog_past_the_ceiling_is_a_health_condition() {
    let root = Root::new();
    let path = root.transcript();
    let file = std::fs::File::create(&path).unwrap();
    file.set_len((1 << 30) + (1 << 20)).unwrap();
    drop(file);
    root.feed_claude(&path);
    root.finalize();
    assert!(of_type(&root.events(), "record.problem").is_empty());
    let out = root.harnery().args(["health"]).output().unwrap();
    let text = common::stdout(&out);
    assert!(text.contains("record_backlog"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
}

#[test]
fn proc_files_are_refused() {
    let root = Root::new();
    let detail = refused_claude(&root, Path::new("/proc/self/environ"));
    assert!(detail.contains("not <config dir>/projects"), "{detail}");
}

/// A `SubagentStop` naming a file outside the session's
/// `<session>/subagents/agent-<id>.jsonl` is refused and given up; the
/// session's own transcript is followed as always.
#[test]
fn a_subagent_record_is_followed_only_in_its_sessions_subagents() {
    let root = Root::new();
    let transcript = root.transcript();
    let own = serde_json::json!({"type": "user", "sessionId": SID, "uuid": "u-1",
        "timestamp": "2026-11-30T00:00:00.000Z",
        "message": {"role": "user", "content": "mine"}});
    std::fs::write(&transcript, format!("{own}\n")).unwrap();
    let hooks = root.feed_claude(&transcript);
    let foreign = root.foreign_file();
    let stop = serde_json::json!({"session_id": SID, "hook_event_name": "SubagentStop",
        "transcript_path": transcript.display().to_string(), "agent_id": "a6ade36a38f2eaf92",
        "agent_transcript_path": foreign.display().to_string(), "stop_hook_active": false});
    hook(&root.home(), &["claude-code"], stop.to_string());
    let summary = root.finalize();
    let own_signals = summary["record_signals"].as_u64().unwrap();
    let drained = summary["signals_drained"].as_u64().unwrap();
    assert_eq!(drained - own_signals, hooks + 1, "{summary}");
    let events = root.events();
    let detail = the_refusal(&events, &foreign.display().to_string());
    assert!(
        detail.contains("subagents/agent-a6ade36a38f2eaf92.jsonl"),
        "{detail}"
    );
    let users: Vec<&Value> = of_type(&events, "message.user");
    assert_eq!(users.len(), 1, "the session's own record is read");
    assert!(!root.home_holds_marker());
    root.finalize();
    assert_eq!(root.events().len(), events.len(), "given up once");
}
