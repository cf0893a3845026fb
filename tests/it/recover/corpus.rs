//! `harnery recover` over real client data (tests/fixtures/recover, copied
//! from the corpus): Copilot sessions with their real session-store.db, the
//! damaged large-resume excerpts, and real Claude Code transcripts.

use std::path::{Path, PathBuf};

use harnery::agents::copilot::package::{RunningCopilotHint, SearchPlan};
use harnery::recover::canonical::EntryKind;
use harnery::recover::chronicle::{self, OpenStrategy, OpenedVia};
use harnery::recover::packet::{IndexStatus, Packet, PacketLimits};
use harnery::recover::{self, Agent, RecoverRequest};

const KILLED: &str = "93ac04b6-be37-48e5-9126-c3f986eaa653";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recover")
        .join(rel)
}

/// A private copy of a fixture folder (opening a WAL db may add side files).
fn home_copy(rel: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_tree(&fixture(rel), tmp.path());
    tmp
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture dir") {
        let entry = entry.expect("entry");
        let dest = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

fn limits() -> PacketLimits {
    PacketLimits {
        max_direct: 20,
        max_indexed: 20,
        max_steering: 10,
        max_recent: 20,
        max_bytes: 65_536,
    }
}

fn request(home: &Path, id: &str) -> RecoverRequest {
    RecoverRequest {
        session_id: id.into(),
        agent: None,
        copilot_home: home.into(),
        claude_home: home.join("no-claude"),
        limits: limits(),
        max_record: 4 << 20,
        open_strategy: OpenStrategy::Auto,
        hint: RunningCopilotHint::default(),
        plan: SearchPlan::default(),
        progress: harnery::progress::Progress::none(),
    }
}

fn packet(rel: &str, id: &str) -> Packet {
    let home = home_copy(rel);
    recover::recover(&request(home.path(), id)).expect("packet")
}

fn latest_text(p: &Packet) -> &str {
    &p.latest_direction
        .as_ref()
        .expect("a latest direction")
        .text
}

#[test]
fn sigkill_killed_prompt_is_latest_and_not_indexed() {
    let p = packet("copilot/interrupted-sigkill-1-killed", KILLED);
    let latest = p.latest_direction.as_ref().expect("latest");
    assert!(
        latest
            .text
            .starts_with("Run the shell command that prints hello-from-fake-model")
    );
    assert_eq!(latest.index_status, IndexStatus::NotIndexed);
    assert_eq!(p.index.status, "read");
    assert_eq!(p.index.opened_via, Some(OpenedVia::ReadOnly));
    assert_eq!(p.index.turns, 0);
    assert!(
        p.warnings.iter().any(|w| w.contains("interrupted")),
        "{:?}",
        p.warnings
    );
    let call = &p.recent_activity.entries[0].entry;
    assert_eq!(
        (call.kind, call.tool.as_deref()),
        (EntryKind::ToolCall, Some("bash"))
    );
    assert!(call.text.contains("sleep 40"));
    assert!(
        p.warnings.iter().any(|w| w.contains("has no result")),
        "{:?}",
        p.warnings
    );
    assert_eq!(p.stream.skipped.total_skipped(), 0);
    assert_eq!(p.stream.bytes_scanned, 30_688);
}

#[test]
fn sigkill_resumed_prompt_is_indexed_but_the_killed_one_is_not() {
    let p = packet("copilot/interrupted-sigkill-2-resumed", KILLED);
    assert_eq!(latest_text(&p), "Continue where you left off.");
    let direct = &p.direction.entries;
    assert_eq!(direct.len(), 2);
    assert_eq!(
        (direct[0].index_status, direct[0].turn_index),
        (Some(IndexStatus::Indexed), Some(0))
    );
    assert_eq!(direct[1].index_status, Some(IndexStatus::NotIndexed));
    assert!(direct[1].entry.text.starts_with("Run the shell command"));
    // The synthetic interrupted result the resume wrote is a failed tool result.
    assert!(
        p.recent_activity
            .entries
            .iter()
            .any(|e| e.entry.kind == EntryKind::ToolResult && e.entry.ok == Some(false))
    );
}

#[test]
fn resumed_run_orders_by_stream_not_turn_index() {
    let p = packet(
        "copilot/resume-2-resumed-run",
        "7271c131-2f28-400e-a537-c4eb30e50959",
    );
    assert_eq!(latest_text(&p), "Run the probe command again please.");
    let l = p.latest_direction.as_ref().expect("latest");
    assert_eq!(
        (l.index_status, l.matched_turn_index),
        (IndexStatus::Indexed, Some(1))
    );
    let turns: Vec<_> = p
        .conversation
        .entries
        .iter()
        .map(|e| (e.turn_index, e.entry.kind))
        .collect();
    assert_eq!(turns[0], (Some(1), EntryKind::Assistant));
    assert_eq!(turns[1], (Some(1), EntryKind::User));
    assert!(
        !p.warnings.iter().any(|w| w.contains("interrupted")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn subagent_prompt_is_steering_not_direction() {
    let p = packet(
        "copilot/subagent-task",
        "3390a855-a71e-4e90-937d-c5e1dcb418a6",
    );
    assert_eq!(
        latest_text(&p),
        "Delegate running the probe command to a subagent and report."
    );
    assert_eq!(p.stream.direct_messages, 1);
    assert_eq!(p.stream.steering_messages, 1);
    let steer = &p.steering.entries[0].entry;
    assert_eq!(
        steer.text,
        "Run the probe shell command and report its output."
    );
    assert!(
        steer
            .source
            .as_deref()
            .is_some_and(|s| s.starts_with("agent-"))
    );
}

#[test]
fn sigterm_turn_without_response_is_shown_as_such() {
    let p = packet(
        "copilot/interrupted-sigterm",
        "fb3abc2b-d60f-4788-8df1-ce0df7ded44c",
    );
    let reply = &p.conversation.entries[0].entry;
    assert_eq!(reply.kind, EntryKind::Assistant);
    assert_eq!(reply.text, "(no response recorded)");
    assert!(
        p.stream
            .lifecycle
            .as_ref()
            .expect("copilot lifecycle")
            .aborts
            >= 1
    );
}

#[test]
fn completed_prompt_whose_turn_row_was_lost_is_not_indexed() {
    let p = packet(
        "copilot/turn-row-lost-at-shutdown",
        "9f63b009-94a9-4942-938a-50ce501b5c35",
    );
    assert_eq!(
        p.latest_direction.as_ref().expect("latest").index_status,
        IndexStatus::NotIndexed
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("only in the raw stream"))
    );
    assert!(
        !p.warnings.iter().any(|w| w.contains("interrupted")),
        "it shut down normally: {:?}",
        p.warnings
    );
}

#[test]
fn large_resume_excerpts_skip_cut_lines_and_keep_the_resumed_prompt() {
    for rel in [
        "large-resume-600MB-v1.0.102",
        "large-resume-600MB-conversational-v1.0.102",
    ] {
        let home = tempfile::tempdir().expect("tmp");
        let id = "2605ae26-e9b5-47e7-9335-2ea4f8303bd6";
        let dir = home.path().join("session-state").join(id);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::copy(
            fixture(&format!("copilot/{rel}/events.jsonl.excerpt.txt")),
            dir.join("events.jsonl"),
        )
        .expect("copy");
        let p = recover::recover(&request(home.path(), id)).expect("packet");
        assert_eq!(latest_text(&p), "Say hi after resuming.", "{rel}");
        assert!(
            p.stream.skipped.torn > 20,
            "{rel}: cut lines are counted: {:?}",
            p.stream.skipped
        );
        assert_eq!(p.index.status, "missing");
        assert_eq!(
            p.latest_direction.as_ref().expect("latest").index_status,
            IndexStatus::Unknown
        );
    }
}

#[test]
fn private_copy_reads_the_same_rows_without_touching_the_home() {
    let home = home_copy("copilot/interrupted-sigkill-2-resumed");
    let db = home.path().join("session-store.db");
    let c = chronicle::read(&db, KILLED, OpenStrategy::PrivateCopyOnly).expect("copy read");
    assert_eq!(c.opened_via, OpenedVia::PrivateCopy);
    assert_eq!(c.turns.len(), 1);
    assert_eq!(
        c.session.expect("session row").summary.as_deref(),
        Some("Continue where you left off.")
    );
    assert!(
        !home.path().join("session-store.db-shm").exists(),
        "the live folder is not touched"
    );
}

#[test]
fn live_wal_rows_are_seen_without_checkpoint() {
    let home = tempfile::tempdir().expect("tmp");
    let db = home.path().join("session-store.db");
    let writer = rusqlite::Connection::open(&db).expect("writer");
    harnery::ledger::eventz::register(&writer).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, summary TEXT, created_at TEXT, updated_at TEXT);
             CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, turn_index INTEGER,
                                 user_message TEXT, assistant_response TEXT, timestamp TEXT);
             INSERT INTO sessions VALUES ('s1', 'hello', '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z');
             INSERT INTO turns (session_id, turn_index, user_message, assistant_response, timestamp)
               VALUES ('s1', 0, 'hello', 'hi', '2026-01-01T00:00:02Z');",
        )
        .expect("schema");
    assert!(home.path().join("session-store.db-wal").exists());
    // The writer stays open (a running Copilot); the reader must see the WAL.
    let c = chronicle::read(&db, "s1", OpenStrategy::Auto).expect("read-only read");
    assert_eq!(c.opened_via, OpenedVia::ReadOnly);
    assert_eq!(c.turns.len(), 1);
    writer
        .execute(
            "INSERT INTO turns (session_id, turn_index, user_message) VALUES ('s1', 1, 'more')",
            [],
        )
        .expect("write while read");
    let c = chronicle::read(&db, "s1", OpenStrategy::PrivateCopyOnly).expect("copy read");
    assert_eq!(c.turns.len(), 2);
}

fn claude_request(rel: &str, id: &str) -> (tempfile::TempDir, RecoverRequest) {
    let home = home_copy(rel);
    let mut req = request(&home.path().join("no-copilot"), id);
    req.claude_home = home.path().into();
    (home, req)
}

#[test]
fn claude_code_transcript_packet() {
    let (_home, req) = claude_request("claude-code/resume", "8d31d374-43c7-42c3-aadb-185a6df76fcf");
    let p = recover::recover(&req).expect("packet");
    assert_eq!(p.agent, "claude-code");
    assert_eq!(latest_text(&p), "[[scenario:resume2]] Second turn.");
    assert_eq!(p.direction.entries.len(), 2);
    assert_eq!(p.index.status, "not-applicable");
    let kinds: Vec<EntryKind> = p
        .recent_activity
        .entries
        .iter()
        .map(|e| e.entry.kind)
        .collect();
    assert_eq!(
        &kinds[..3],
        [
            EntryKind::Assistant,
            EntryKind::ToolResult,
            EntryKind::ToolCall
        ]
    );
    assert_eq!(
        p.recent_activity.entries[1].entry.tool.as_deref(),
        Some("Bash")
    );
    assert_eq!(
        p.resume.command.as_deref(),
        Some("claude --resume 8d31d374-43c7-42c3-aadb-185a6df76fcf")
    );
}

#[test]
fn claude_code_commands_and_notifications_are_steering() {
    let (_home, req) = claude_request(
        "claude-code/interactive",
        "deba59d7-ffd5-47cf-963a-b4dc9c83f265",
    );
    let p = recover::recover(&req).expect("packet");
    assert_eq!(
        latest_text(&p),
        "[[scenario:tool-failure]] Run a failing command."
    );
    assert_eq!(
        p.steering.entries[0].entry.source.as_deref(),
        Some("local-command")
    );
    let failed = p
        .recent_activity
        .entries
        .iter()
        .find(|e| e.entry.kind == EntryKind::ToolResult)
        .expect("result");
    assert_eq!(failed.entry.ok, Some(false));

    let (_home, req) = claude_request(
        "claude-code/subagent",
        "2668abe1-379d-47fc-a818-0f8a3d39c1bf",
    );
    let p = recover::recover(&req).expect("packet");
    assert_eq!(
        latest_text(&p),
        "[[scenario:subagent]] Ask a subagent to run echo."
    );
    assert_eq!(
        p.steering.entries[0].entry.source.as_deref(),
        Some("system:task_notification")
    );
}

#[test]
fn agent_is_found_where_the_session_is() {
    let (_home, mut req) =
        claude_request("claude-code/resume", "8d31d374-43c7-42c3-aadb-185a6df76fcf");
    assert_eq!(
        recover::locate(&req).expect("found").agent,
        Agent::ClaudeCode
    );
    req.agent = Some(Agent::Copilot);
    assert!(matches!(
        recover::locate(&req),
        Err(recover::RecoverError::NotFound { .. })
    ));
    req.session_id = "../escape".into();
    assert!(matches!(
        recover::locate(&req),
        Err(recover::RecoverError::BadSessionId(_))
    ));
}

#[test]
fn read_only_open_reads_the_wal_even_where_no_shm_can_be_made() {
    // A live home: committed rows only in the -wal, the writer still open.
    let live = tempfile::tempdir().expect("tmp");
    let writer = rusqlite::Connection::open(live.path().join("session-store.db")).expect("writer");
    harnery::ledger::eventz::register(&writer).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, summary TEXT, created_at TEXT, updated_at TEXT);
             CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, turn_index INTEGER,
                                 user_message TEXT, assistant_response TEXT, timestamp TEXT);
             INSERT INTO turns (session_id, turn_index, user_message) VALUES ('s1', 0, 'hello');",
        )
        .expect("schema");
    // Its db and -wal as they are on disk, where the -shm cannot be created
    // (as in a read-only folder without one).
    let home = tempfile::tempdir().expect("tmp");
    for name in ["session-store.db", "session-store.db-wal"] {
        std::fs::copy(live.path().join(name), home.path().join(name)).expect("copy");
    }
    std::fs::create_dir(home.path().join("session-store.db-shm")).expect("block -shm");
    let db = home.path().join("session-store.db");
    // SQLite reads a WAL database read-only without a -shm (heap memory
    // instead); had it refused, the private copy would have been read.
    let c = chronicle::read(&db, "s1", OpenStrategy::Auto).expect("read");
    assert_eq!(
        c.turns.len(),
        1,
        "the rows that exist only in the -wal are seen"
    );
    let c = chronicle::read(&db, "s1", OpenStrategy::PrivateCopyOnly).expect("copy read");
    assert_eq!(c.turns.len(), 1);
    drop(writer);
}

#[cfg(feature = "failpoints")]
#[test]
fn refused_read_only_open_falls_back_to_a_private_copy() {
    let home = home_copy("copilot/interrupted-sigkill-2-resumed");
    let db = home.path().join("session-store.db");
    recover::failpoints::set_read_only_open_fails(&db);
    let c = chronicle::read(&db, KILLED, OpenStrategy::Auto).expect("fallback read");
    assert_eq!(c.opened_via, OpenedVia::PrivateCopy);
    assert!(
        c.read_only_error
            .as_deref()
            .is_some_and(|e| e.contains("failpoint"))
    );
    assert_eq!(c.turns.len(), 1);
}

#[test]
fn claude_code_direction_survives_compaction() {
    // Compaction restarts the parentUuid chain; direction is read in file order.
    let (_home, req) = claude_request(
        "claude-code/compact",
        "221d6ed5-93db-49fb-b651-1c5540460db1",
    );
    let p = recover::recover(&req).expect("packet");
    let texts: Vec<&str> = p
        .direction
        .entries
        .iter()
        .map(|e| e.entry.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "[[scenario:resume2]] After compaction.",
            "[[scenario:resume1]] First turn."
        ]
    );
    let sources: Vec<&str> = p
        .steering
        .entries
        .iter()
        .filter_map(|e| e.entry.source.as_deref())
        .collect();
    assert!(
        sources.contains(&"compact-summary") && sources.contains(&"local-command"),
        "{sources:?}"
    );
}
