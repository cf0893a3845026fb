//! Shared helpers for the ledger, finalize and epoch tests: a temporary
//! home, the real binaries, and hand-built ready batches.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;
use harnery::contract::{
    AdapterId, Attestation, Confidence, Event, EventId, Observation, Outcome, Payload, Provenance,
    Recovery, RecoveryReason, SessionRef, TimeSource, ToolCompleted, ToolRequested,
    TurnAttribution, TurnSource, TurnStarted,
};
use harnery::home::Home;
use harnery::ledger::{AppendBatch, ReadyEvent, binary_digest};

pub const NOW: &str = "2026-11-30T12:00:00Z";

pub fn harnery(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("harnery").expect("the harnery binary is built");
    isolated(&mut cmd, home);
    cmd
}

/// [`harnery`] as a plain process, for a test that kills it.
pub fn harnery_process(home: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"));
    isolated(&mut cmd, home);
    cmd
}

/// What every test's `harnery` runs with: its home, the pinned clock, no
/// failpoints, and records not followed (the corpus hooks name transcripts
/// on the machine that captured them; tests of the agents' own records
/// turn following back on).
fn isolated<C: Environment>(cmd: &mut C, home: &Path) {
    cmd.set("HARNERY_HOME", home.as_os_str());
    cmd.set("HARNERY_NOW", NOW.as_ref());
    cmd.set("HARNERY_RECORDS", "off".as_ref());
    cmd.unset("HARNERY_FAILPOINTS");
    cmd.unset("HARNERY_TEST_SCHEMA_SUFFIX");
}

/// A delay in [0, `span`) from `seed` and `round`, so that a random-moment
/// kill test that fails can be replayed from the seed it prints.
pub fn kill_delay(seed: u64, round: u64, span: std::time::Duration) -> std::time::Duration {
    let x = seed
        .wrapping_add(round)
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    span.mul_f64(((x >> 33) % 1000) as f64 / 1000.0)
}

/// Run `cmd` (its output discarded) and SIGKILL it after `wait`, unless
/// it has ended by then.
pub fn kill_after(cmd: &mut std::process::Command, wait: std::time::Duration) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the command starts");
    std::thread::sleep(wait);
    child.kill().expect("a child is killed, or has ended");
    child.wait().expect("a killed child is reaped");
}

/// `cmd` as on a machine where no agent is installed but what the test
/// puts under `user`: `HOME`, the caches and npm prefixes Copilot is
/// looked for in (`agents::copilot::package`), the agents' homes, the hooks'
/// hints of a running Copilot and every `copilot` on `PATH` lead there
/// or nowhere. What the person running the tests has installed (a
/// `~/.cache/copilot/pkg`, a global npm Copilot) never decides a test.
/// A test sets what it needs after this.
pub fn without_installed_agents<C: Environment>(cmd: &mut C, user: &Path) {
    cmd.set("HOME", user.as_os_str());
    cmd.set("XDG_CACHE_HOME", user.join(".cache").as_os_str());
    cmd.set("HARNERY_NPM_PREFIXES", "".as_ref());
    cmd.set("COPILOT_HOME", user.join(".copilot").as_os_str());
    cmd.set("CLAUDE_CONFIG_DIR", user.join(".claude").as_os_str());
    cmd.set("PATH", &path_without_copilot());
    for var in [
        "COPILOT_PKG_CACHE_HOME",
        "COPILOT_CACHE_HOME",
        "NPM_CONFIG_PREFIX",
        "COPILOT_CLI_BINARY_VERSION",
        "COPILOT_CLI_RESOLVED_DIST_DIR",
        "HARNERY_COPILOT_SDK",
        // The other agents' directories: each resolves under `user`.
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
        "QWEN_HOME",
        "QWEN_RUNTIME_DIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "OPENCODE_DB",
    ] {
        cmd.unset(var);
    }
}

/// A command whose environment a helper sets: a plain process or
/// assert_cmd's.
pub trait Environment {
    fn set(&mut self, name: &str, value: &std::ffi::OsStr);
    fn unset(&mut self, name: &str);
}

impl Environment for Command {
    fn set(&mut self, name: &str, value: &std::ffi::OsStr) {
        self.env(name, value);
    }
    fn unset(&mut self, name: &str) {
        self.env_remove(name);
    }
}

impl Environment for std::process::Command {
    fn set(&mut self, name: &str, value: &std::ffi::OsStr) {
        self.env(name, value);
    }
    fn unset(&mut self, name: &str) {
        self.env_remove(name);
    }
}

/// This process's `PATH` without the directories that hold a `copilot`.
pub fn path_without_copilot() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&path).filter(|d| !d.join("copilot").exists());
    std::env::join_paths(kept).expect("PATH's own directories join again")
}

/// A user home of the test binary's own with nothing installed in it
/// (under the target dir, made once), for tests that need no files of
/// the agents.
pub fn empty_user_home() -> &'static Path {
    static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("empty-user-home");
        std::fs::create_dir_all(&dir).expect("the target dir is writable");
        dir
    })
}

pub fn run(home: &Path, args: &[&str]) -> Output {
    harnery(home).args(args).output().expect("harnery runs")
}

/// `harnery <args>` on `home`, which must succeed: its stdout.
pub fn ok(home: &Path, args: &[&str]) -> String {
    let out = run(home, args);
    assert!(
        out.status.success(),
        "harnery {args:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// Every file below `dir`, at any depth, sorted.
pub fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The event types of the tool-output hits in `search --json`'s lines.
pub fn tool_output_types(search_json: &str) -> Vec<String> {
    search_json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a hit is JSON"))
        .filter(|hit| hit["kind"] == "tool-output")
        .map(|hit| {
            hit["event_type"]
                .as_str()
                .expect("a hit's event type")
                .to_string()
        })
        .collect()
}

pub fn session(id: &str) -> SessionRef {
    SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: id.into(),
    }
}

pub fn event(s: &SessionRef, offset: u64, payload: Payload) -> Event {
    Event {
        id: EventId::derive("test", &[s.session_id.as_bytes(), &offset.to_le_bytes()]),
        session: s.clone(),
        offset,
        time_unix_ns: 1_780_000_000_000_000_000 + offset as i64 * 250_000_000,
        time_source: TimeSource::Received,
        clock: None,
        agent_id: None,
        turn: TurnAttribution {
            source: TurnSource::Native,
            turn_id: Some("turn-1".into()),
        },
        provenance: Provenance::NATIVE,
        raw: vec![],
        payload,
    }
}

pub fn tool_request(s: &SessionRef, offset: u64, call: &str) -> Event {
    event(
        s,
        offset,
        Payload::ToolRequested(ToolRequested {
            tool_call_id: Some(call.into()),
            tool_name: "Bash".into(),
            input_digest: "digest".into(),
            input: None,
            recovery: None,
        }),
    )
}

pub fn tool_done(s: &SessionRef, offset: u64, call: &str, req: &EventId) -> Event {
    event(
        s,
        offset,
        Payload::ToolCompleted(ToolCompleted {
            tool_call_id: Some(call.into()),
            tool_name: "Bash".into(),
            requested_event_id: Some(req.clone()),
            outcome: Outcome::Success,
            duration_ms: Observation::Observed(40),
            exit_code: Some(0),
            error: None,
            content: None,
            recovery: None,
            paired_by: None,
        }),
    )
}

/// A small session: turn start, two tool calls, one left open.
pub fn small_session(id: &str) -> Vec<Event> {
    let s = session(id);
    let t = event(
        &s,
        0,
        Payload::TurnStarted(TurnStarted {
            prompt_event_id: None,
        }),
    );
    let r1 = tool_request(&s, 1, "c1");
    let d1 = tool_done(&s, 2, "c1", &r1.id);
    let r2 = tool_request(&s, 3, "c2");
    vec![t, r1, d1, r2]
}

/// A recovered completion that is valid under every rule.
pub fn recovered_done(s: &SessionRef, offset: u64, req: &EventId) -> Event {
    let mut e = event(
        s,
        offset,
        Payload::ToolCompleted(ToolCompleted {
            tool_call_id: Some("c2".into()),
            tool_name: "Bash".into(),
            requested_event_id: Some(req.clone()),
            outcome: Outcome::Unknown,
            duration_ms: Observation::Unknown("completion_not_observed_before_turn_end".into()),
            exit_code: None,
            error: None,
            content: None,
            recovery: Some(Recovery {
                reason: RecoveryReason::CompletionNotObservedBeforeTurnEnd,
                requested_event_id: Some(req.clone()),
                elapsed_upper_bound_ms: None,
            }),
            paired_by: None,
        }),
    );
    e.provenance = Provenance {
        attestation: Attestation::Derived,
        confidence: Confidence::Medium,
    };
    e
}

/// Drop a ready batch of `events` into the home's ready spool.
pub fn inject(home: &Path, id: &str, events: Vec<Event>) {
    inject_with_digest(home, id, events, &binary_digest());
}

pub fn inject_with_digest(home: &Path, id: &str, events: Vec<Event>, digest: &str) {
    let batch = AppendBatch {
        id: id.into(),
        contract_digest: digest.into(),
        sources: vec![],
        signals: vec![],
        events: events.into_iter().map(ReadyEvent::new).collect(),
        states: vec![],
    };
    harnery::finalize::ready::write(&Home::at(home), &batch).expect("ready file written");
}

/// The live ledger of `home`, with the SQL functions its compact views
/// read through (`harnery::ledger::eventz::register`).
pub fn open_ledger(home: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite"))
        .expect("the ledger opens");
    harnery::ledger::eventz::register(&conn).unwrap();
    conn
}

/// Every event row as (id, json, hex hash), in chain order.
pub fn ledger_rows(home: &Path) -> Vec<(String, String, String)> {
    let db = home.join("ledgers/v2/ledger.sqlite");
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("ledger opens");
    harnery::ledger::eventz::register(&conn).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, json, hex(hash) FROM events ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Copy a directory tree (for running one spool several ways).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Deliver one captured line (a Claude Code payload, or a Copilot capture
/// record with its event name and stdin) through the real `harnery-hook`.
pub fn deliver(home: &Path, agent: &str, line: &str) {
    let (args, stdin): (Vec<String>, Vec<u8>) = if agent == "copilot" {
        let v: serde_json::Value = serde_json::from_str(line).expect("capture line is JSON");
        let event = v["event"].as_str().expect("event name").to_string();
        let raw = v["stdin_raw"].as_str().unwrap_or("").as_bytes().to_vec();
        (vec!["copilot".into(), event], raw)
    } else {
        (vec!["claude-code".into()], line.as_bytes().to_vec())
    };
    hook(home, &args, stdin);
}

/// Deliver `stdin` to the real `harnery-hook` run with `args` (the agent,
/// and the event where the agent passes it so), as the agent does; the
/// hook always exits 0.
pub fn hook(home: &Path, args: &[impl AsRef<std::ffi::OsStr>], stdin: impl Into<Vec<u8>>) {
    Command::cargo_bin("harnery-hook")
        .expect("hook binary built")
        .env("HARNERY_HOME", home)
        .args(args)
        .write_stdin(stdin)
        .assert()
        .success();
}

/// Feed one corpus fixture through the real `harnery-hook`, one process
/// per signal, exactly as the agent would.
pub fn feed_fixture(home: &Path, agent: &str, scenario: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(agent)
        .join(scenario);
    let file = if agent == "copilot" {
        "hook-capture.jsonl"
    } else {
        "hooks.jsonl"
    };
    let text = std::fs::read_to_string(root.join(file)).expect("fixture exists");
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        deliver(home, agent, line);
        n += 1;
    }
    n
}

/// `harnery sessions --json`, parsed.
pub fn sessions_json(home: &Path) -> Vec<serde_json::Value> {
    let out = run(home, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The contract a test build advances to: `HARNERY_TEST_SCHEMA_SUFFIX`
/// perturbs the schema digest (feature `failpoints`).
pub const NEXT_CONTRACT: &str = "next-contract";

/// `harnery args…` as the build of the next contract.
pub fn next(home: &Path, args: &[&str]) -> Output {
    harnery(home)
        .env("HARNERY_TEST_SCHEMA_SUFFIX", NEXT_CONTRACT)
        .args(args)
        .output()
        .expect("harnery runs")
}

/// (id, hash) of every event row of a database, in chain order.
pub type ChainRows = Vec<(String, String)>;

pub fn chain_rows(db: &Path) -> ChainRows {
    let conn = rusqlite::Connection::open_with_flags(
        format!("file:{}?immutable=1", db.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("the database opens");
    harnery::ledger::eventz::register(&conn).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, hex(hash) FROM events ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The one archived epoch of `home`.
pub fn the_archive(home: &Path) -> std::path::PathBuf {
    let dir = home.join("ledgers/v2-candidates");
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(found.len(), 1, "one archive in {}", dir.display());
    found.remove(0)
}

/// After an `epoch advance` from an older home: the live epoch speaks this
/// build's contract generation (its pinned digest) and is anchored to the
/// epoch it archived. Its genesis manifest, parsed.
pub fn live_epoch_is_current_and_anchored(home: &Path) -> serde_json::Value {
    let genesis: serde_json::Value = serde_json::from_slice(
        &std::fs::read(home.join("ledgers/v2/genesis.json")).expect("a live genesis"),
    )
    .expect("genesis is JSON");
    let current = harnery::contract::current_generation();
    assert_eq!(genesis["contract_generation"], current.number);
    assert_eq!(genesis["schema_digest"], current.digest);
    assert!(genesis["anchor"].is_object(), "anchored: {genesis}");
    genesis
}

/// After an advance: `validate` and `verify` pass over every epoch, and
/// `export --epoch all` gives the archived rows with the live ones, each
/// line tagged with one of the two epochs. The exported lines' count.
pub fn both_epochs_stay_readable(home: &Path) -> usize {
    for cmd in ["validate", "verify"] {
        let out = run(home, &[cmd, "--epoch", "all"]);
        assert!(
            out.status.success(),
            "{cmd}: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    let out = run(home, &["export", "--epoch", "all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let epochs: std::collections::BTreeSet<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["epoch"].to_string())
        .collect();
    assert_eq!(epochs.len(), 2, "{epochs:?}");
    text.lines().count()
}

/// Change the trace entry of the event row `seq` in the live ledger
/// (`ledger::trace_rows`): `edit` gets the entry, `[offset, seq, time,
/// part, facts…]`, and the chunk's list of whole seqs follows its parts.
pub fn edit_trace_entry(home: &Path, seq: i64, edit: impl FnOnce(&mut Vec<serde_json::Value>)) {
    use serde_json::Value;
    let db = home.join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let (adapter, session, first, text): (String, String, i64, String) = conn
        .query_row(
            "SELECT c.adapter, c.session_id, c.first_offset, c.entries FROM trace_chunks c \
             JOIN events e ON e.adapter = c.adapter AND e.session_id = c.session_id \
             WHERE e.seq = ?1 AND c.first_offset <= e.offset ORDER BY c.first_offset DESC LIMIT 1",
            [seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let mut entries: Vec<Vec<Value>> = serde_json::from_str(&text).unwrap();
    let entry = entries
        .iter_mut()
        .find(|e| e[1] == seq)
        .expect("the chunk holds the row's entry");
    edit(entry);
    let wholes: Vec<&Value> = entries
        .iter()
        .filter(|e| e[3] == "whole")
        .map(|e| &e[1])
        .collect();
    let wholes = (!wholes.is_empty()).then(|| serde_json::to_string(&wholes).unwrap());
    let changed = conn
        .execute(
            "UPDATE trace_chunk_store SET entries = event_body(?1), wholes = ?2 \
             WHERE adapter = ?3 AND session_id = ?4 AND first_offset = ?5",
            rusqlite::params![
                serde_json::to_string(&entries).unwrap(),
                wholes,
                adapter,
                session,
                first
            ],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

/// Start a session the way its agent does: one `sessionStart` /
/// `SessionStart` signal through the real `harnery-hook`, so that commands
/// that name a session (`end`, `exec`, `checkpoint`) find it.
pub fn start_session(home: &Path, agent: &str, id: &str) {
    let line = match agent {
        "copilot" => serde_json::json!({
            "event": "sessionStart",
            "stdin_raw": serde_json::json!({"sessionId": id, "timestamp": 1_795_997_711_500_i64,
                "cwd": "/tmp", "source": "new"}).to_string(),
        }),
        _ => serde_json::json!({"hook_event_name": "SessionStart", "session_id": id,
            "source": "startup", "cwd": "/tmp"}),
    };
    deliver(home, agent, &line.to_string());
}

/// Deliver a Copilot scenario's captured hooks through the real
/// `harnery-hook`, each `transcriptPath` pointing at `events_file` (the
/// record where this machine has it, not the capturing machine's path).
pub fn copilot_hooks(home: &Path, scenario: &str, events_file: &Path) {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/fixtures/copilot/{scenario}/hook-capture.jsonl"
    ));
    let text = std::fs::read_to_string(capture).expect("fixture exists");
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut v: serde_json::Value = serde_json::from_str(line).expect("capture line is JSON");
        let raw = v["stdin_raw"].as_str().unwrap_or("");
        if let Ok(mut payload) = serde_json::from_str::<serde_json::Value>(raw)
            && payload.get("transcriptPath").is_some()
        {
            payload["transcriptPath"] = events_file.display().to_string().into();
            v["stdin_raw"] = payload.to_string().into();
        }
        deliver(home, "copilot", &v.to_string());
    }
}

/// The `basic` Claude Code capture's hook payloads, `(event, text)`, its
/// session id replaced by `SESSION`.
pub fn basic_hook_lines() -> Vec<(String, String)> {
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/basic/hooks.jsonl"),
    )
    .unwrap();
    fixture
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let event = v["hook_event_name"].as_str().unwrap().to_string();
            let sid = v["session_id"].as_str().unwrap().to_string();
            (event, l.replace(&sid, "SESSION"))
        })
        .collect()
}

/// Spool `lines` for each of `sessions` Claude Code sessions (ids
/// `<prefix>-<nnnn>-0000-4000-8000-000000000000`) with the in-process
/// spool writer, unsynced, received from `at` on, a microsecond apart.
pub fn spool_sessions(
    home: &Path,
    prefix: &str,
    sessions: usize,
    lines: &[(String, String)],
    at: i64,
) {
    use harnery::spool::{Signal, SpoolWriter, WriterOptions};
    let writer = SpoolWriter::with_options(
        Home::at(home),
        WriterOptions {
            sync: false,
            ..WriterOptions::default()
        },
    );
    for s in 0..sessions {
        let sid = format!("{prefix}-{s:04}-0000-4000-8000-000000000000");
        let texts: Vec<String> = lines
            .iter()
            .map(|(_, text)| text.replace("SESSION", &sid))
            .collect();
        let signals: Vec<Signal> = lines
            .iter()
            .zip(&texts)
            .enumerate()
            .map(|(i, ((event, _), text))| {
                let mut sig = Signal::new("claude-code", Some(event), Some(&sid), text.as_bytes());
                sig.received_ns = at + (s * 1000 + i) as i64 * 1_000;
                sig.clock = harnery::clock::ClockSample::default();
                sig
            })
            .collect();
        writer.append_batch(&signals).unwrap();
    }
}
