//! `harnery recover` over streams built for one rule each: raw-only direction
//! comes first, steering cannot displace direction, oversized and damaged
//! records are skipped and counted, appends during a scan are not read.

use std::io::Write;
use std::path::PathBuf;

use harnery::resume::chronicle::OpenStrategy;
use harnery::resume::evidence::{RunningCopilotHint, SearchPlan};
use harnery::resume::packet::{IndexStatus, Packet, PacketLimits};
use harnery::resume::{self, RecoverRequest};

const ID: &str = "0b1c2d3e-0000-4000-8000-000000000001";

/// A record laid out as the CLI writes it: `type` first, then `data`, `id`, `timestamp`.
fn event(kind: &str, data: serde_json::Value, ts: &str) -> String {
    format!(r#"{{"type":"{kind}","data":{data},"id":"e-{ts}","timestamp":"{ts}"}}"#)
}

fn user(text: &str, ts: &str, source: Option<&str>) -> String {
    let mut data = serde_json::json!({ "content": text, "messageId": "m" });
    if let Some(s) = source {
        data["source"] = s.into();
    }
    event("user.message", data, ts)
}

fn padding(bytes: usize, ts: &str) -> String {
    event(
        "session.info",
        serde_json::json!({ "infoType": "pad", "message": "p".repeat(bytes) }),
        ts,
    )
}

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(lines: &[String]) -> Home {
        let dir = tempfile::tempdir().expect("tmp");
        let state = dir.path().join("session-state").join(ID);
        std::fs::create_dir_all(&state).expect("mkdir");
        let mut body = lines.join("\n");
        body.push('\n');
        std::fs::write(state.join("events.jsonl"), body).expect("write stream");
        Home { dir }
    }

    fn stream(&self) -> PathBuf {
        self.dir
            .path()
            .join("session-state")
            .join(ID)
            .join("events.jsonl")
    }

    fn with_turns(self, turns: &[(i64, &str, &str)]) -> Home {
        let conn =
            rusqlite::Connection::open(self.dir.path().join("session-store.db")).expect("db");
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, summary TEXT, created_at TEXT, updated_at TEXT);
             CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, turn_index INTEGER,
                                 user_message TEXT, assistant_response TEXT, timestamp TEXT);",
        )
        .expect("schema");
        for (index, text, ts) in turns {
            conn.execute(
                "INSERT INTO turns (session_id, turn_index, user_message, assistant_response, timestamp) VALUES (?1, ?2, ?3, 'done', ?4)",
                rusqlite::params![ID, index, text, ts],
            )
            .expect("turn");
        }
        self
    }

    fn request(&self) -> RecoverRequest {
        RecoverRequest {
            session_id: ID.into(),
            agent: None,
            copilot_home: self.dir.path().into(),
            claude_home: self.dir.path().join("none"),
            limits: PacketLimits {
                max_direct: 5,
                max_indexed: 5,
                max_steering: 5,
                max_recent: 5,
                max_bytes: 4096,
            },
            max_record: 256 << 10,
            open_strategy: OpenStrategy::Auto,
            hint: RunningCopilotHint::default(),
            plan: SearchPlan::default(),
            progress: harnery::progress::Progress::none(),
        }
    }

    fn packet(&self) -> Packet {
        resume::recover(&self.request()).expect("packet")
    }
}

#[test]
fn raw_only_direction_comes_first_and_older_indexed_turn_does_not_pass_for_it() {
    let home = Home::new(&[
        user("Refactor the parser.", "2026-01-01T00:00:01Z", None),
        padding(2000, "2026-01-01T00:00:02Z"),
        user("Stop: keep the old API.", "2026-01-01T00:00:10Z", None),
        padding(2000, "2026-01-01T00:00:11Z"),
    ])
    .with_turns(&[(0, "Refactor the parser.", "2026-01-01T00:00:05Z")]);
    let p = home.packet();
    let latest = p.latest_direction.as_ref().expect("latest");
    assert_eq!(latest.text, "Stop: keep the old API.");
    assert_eq!(latest.index_status, IndexStatus::NotIndexed);
    assert_eq!(p.direction.entries[0].entry.text, "Stop: keep the old API.");
    assert_eq!(
        p.direction.entries[1].index_status,
        Some(IndexStatus::Indexed)
    );
    assert!(
        p.warnings[0].contains("only in the raw stream"),
        "{:?}",
        p.warnings
    );
    assert!(p.warnings[0].contains("turn 0"), "{:?}", p.warnings);
}

#[test]
fn repeated_text_indexed_earlier_is_not_the_latest() {
    let home = Home::new(&[
        user("Run it again.", "2026-01-01T00:00:01Z", None),
        user("Run it again.", "2026-01-01T00:01:00Z", None),
    ])
    .with_turns(&[(0, "Run it again.", "2026-01-01T00:00:30Z")]);
    let p = home.packet();
    let latest = p.latest_direction.as_ref().expect("latest");
    assert_eq!(latest.index_status, IndexStatus::NotIndexed);
    assert!(
        latest.explanation.contains("earlier prompt"),
        "{}",
        latest.explanation
    );
}

#[test]
fn huge_steering_cannot_displace_direct_direction() {
    let mut lines = vec![user(
        "Only touch src/parser.rs.",
        "2026-01-01T00:00:01Z",
        None,
    )];
    for i in 0..20 {
        lines.push(user(
            &"steer ".repeat(20_000),
            &format!("2026-01-01T00:01:{i:02}Z"),
            Some("agent-7"),
        ));
    }
    let p = Home::new(&lines).packet();
    assert_eq!(
        p.latest_direction.as_ref().expect("latest").text,
        "Only touch src/parser.rs."
    );
    assert_eq!(p.direction.entries.len(), 1);
    assert!(!p.direction.truncation.truncated);
    let t = &p.steering.truncation;
    assert_eq!(t.total, 20);
    assert!(
        t.truncated && t.omitted_by_count == 15 && t.cut_entries >= 1,
        "{t:?}"
    );
    assert!(
        p.steering
            .entries
            .iter()
            .map(|e| e.entry.text.len())
            .sum::<usize>()
            <= 4096
    );
}

#[test]
fn records_over_the_bound_are_skipped_and_counted() {
    let p = Home::new(&[
        user("Small and readable.", "2026-01-01T00:00:01Z", None),
        padding(300 << 10, "2026-01-01T00:00:02Z"),
        user(&"x".repeat(300 << 10), "2026-01-01T00:00:03Z", None),
        event(
            "assistant.message",
            serde_json::json!({ "content": "after" }),
            "2026-01-01T00:00:04Z",
        ),
    ])
    .packet();
    assert_eq!(p.stream.skipped.oversized, 2);
    let types: Vec<_> = p
        .stream
        .oversized_records
        .iter()
        .map(|o| o.record_type.as_deref())
        .collect();
    assert_eq!(types, [Some("user.message"), Some("session.info")]);
    assert_eq!(
        p.latest_direction.as_ref().expect("latest").text,
        "Small and readable."
    );
    assert!(
        p.warnings.iter().any(|w| w.contains("raise --max-record")),
        "{:?}",
        p.warnings
    );
    assert_eq!(p.recent_activity.entries[0].entry.text, "after");
}

#[test]
fn torn_nul_and_run_together_records_are_counted_and_salvaged() {
    let mut nul_line = "\0".repeat(64);
    nul_line.push_str(&user("After the NUL run.", "2026-01-01T00:00:03Z", None));
    let torn = format!(
        "{{\"type\":\"assistant.message\",\"data\":{{\"con{}",
        user("Hidden behind a torn write.", "2026-01-01T00:00:04Z", None)
    );
    let together = format!(
        "{}{}",
        padding(10, "2026-01-01T00:00:05Z"),
        user("Run together.", "2026-01-01T00:00:06Z", None)
    );
    let p = Home::new(&[
        user("First.", "2026-01-01T00:00:01Z", None),
        nul_line,
        torn,
        together,
        "garbage that is not json".into(),
        "{\"type\":\"user.message\",\"data\":{\"content\":\"cut sh".into(),
    ])
    .packet();
    let texts: Vec<&str> = p
        .direction
        .entries
        .iter()
        .map(|e| e.entry.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "Run together.",
            "Hidden behind a torn write.",
            "After the NUL run.",
            "First."
        ]
    );
    let s = &p.stream.skipped;
    assert_eq!((s.nul_run, s.concatenated), (1, 1), "{s:?}");
    assert_eq!(
        s.torn, 3,
        "torn prefix, garbage line, cut user message: {s:?}"
    );
}

#[test]
fn unterminated_last_record_is_reported_as_a_tail() {
    let home = Home::new(&[user("Done.", "2026-01-01T00:00:01Z", None)]);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(home.stream())
        .expect("open");
    f.write_all(b"{\"type\":\"user.message\",\"data\":{\"content\":\"half")
        .expect("append");
    drop(f);
    let p = home.packet();
    assert_eq!(
        p.stream.skipped.unterminated_tail, 1,
        "{:?}",
        p.stream.skipped
    );
    assert_eq!(p.latest_direction.as_ref().expect("latest").text, "Done.");
}

#[cfg(feature = "failpoints")]
#[test]
fn appends_during_the_scan_are_not_read() {
    // Several read chunks of stream, so the append lands mid-scan.
    let mut lines = vec![user("Before the scan.", "2026-01-01T00:00:01Z", None)];
    for i in 0..40 {
        lines.push(padding(100 << 10, &format!("2026-01-01T00:01:{i:02}Z")));
    }
    let home = Home::new(&lines);
    let stream = home.stream();
    let size_before = std::fs::metadata(&stream).expect("stat").len();
    let target: PathBuf = stream.clone();
    resume::failpoints::set_after_first_read(&stream, Box::new(move || append_direction(&target)));
    let p = home.packet();
    assert!(
        std::fs::metadata(&stream).expect("stat").len() > size_before,
        "the hook appended"
    );
    assert_eq!(p.stream.bytes_at_scan_start, size_before);
    assert_eq!(p.stream.bytes_scanned, size_before);
    assert_eq!(
        p.latest_direction.as_ref().expect("latest").text,
        "Before the scan."
    );
    assert_eq!(
        p.stream.skipped.total_skipped(),
        0,
        "{:?}",
        p.stream.skipped
    );
}

#[cfg(feature = "failpoints")]
fn append_direction(path: &std::path::Path) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open for append");
    for _ in 0..3 {
        writeln!(
            f,
            "{}",
            user("Appended during the scan.", "2026-01-01T00:09:00Z", None)
        )
        .expect("append");
    }
}

/// One step of a generated stream: a record, or a kind of damage.
fn step(op: u8, variant: u8, n: usize, lines: &mut Vec<String>, expected: &mut Vec<String>) {
    let ts = format!("2026-01-01T00:{:02}:{:02}Z", n / 60 % 60, n % 60);
    let direct = |expected: &mut Vec<String>| {
        let text = format!("direct {n}");
        expected.push(text.clone());
        user(&text, &ts, None)
    };
    let line = match (op, variant) {
        (0, _) => direct(expected),
        (1, _) => user(&format!("steer {n}"), &ts, Some("skill-x")),
        (2, _) => padding(50 + n, &ts),
        (3, _) => event(
            "assistant.message",
            serde_json::json!({ "content": format!("reply {n}") }),
            &ts,
        ),
        // Damage that must not hide the direct message glued after it.
        (4, 0) => format!(
            "{{\"type\":\"assistant.message\",\"data\":{{\"content\":\"cut{}",
            direct(expected)
        ),
        (4, 1) => format!("{}{}", "\0".repeat(17), direct(expected)),
        (4, _) => format!("{}{}", padding(5, &ts), direct(expected)),
        // Damage that must never become direction.
        (_, 0) => "not json at all".into(),
        (_, 1) => "{\"type\":\"user.message\",\"data\":{\"content\":\"lost".into(),
        (_, _) => "\0".repeat(40),
    };
    lines.push(line);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]
    #[test]
    fn damage_never_hides_nor_invents_direction(ops in proptest::collection::vec((0u8..6, 0u8..3), 1..25)) {
        let mut lines = Vec::new();
        let mut expected = Vec::new();
        for (n, (op, variant)) in ops.into_iter().enumerate() {
            step(op, variant, n, &mut lines, &mut expected);
        }
        let home = Home::new(&lines);
        let mut req = home.request();
        req.limits.max_direct = 100;
        req.limits.max_bytes = 1 << 20;
        let p = resume::recover(&req).expect("packet");
        let got: Vec<String> = p.direction.entries.iter().rev().map(|e| e.entry.text.clone()).collect();
        proptest::prop_assert_eq!(&got, &expected);
        proptest::prop_assert_eq!(p.latest_direction.map(|l| l.text), expected.last().cloned());
    }
}
