//! The recovery packet: raw direct user direction first, then the indexed
//! conversation, then agent steering, then recent raw activity, each with its
//! own count limit and its own byte budget, so no part can crowd out another.
//! Every part says what it left out. Parts list entries newest first, so the
//! latest direction is the first thing a reader sees.

use serde::Serialize;

use super::canonical::{Entry, EntryKind, cut};
use super::chronicle::{Chronicle, OpenedVia, SessionRow, TurnRow};
use super::policy::ResumeAssessment;
use super::stream::{Lifecycle, OversizedRecord, RawMessage, Scanned, SkipCounts};

/// Format tag of the JSON packet.
pub(crate) const PACKET_FORMAT: &str = "harnery.recover/1";

/// Per-part limits.
#[derive(Debug, Clone, Copy)]
pub struct PacketLimits {
    pub max_direct: usize,
    pub max_indexed: usize,
    pub max_steering: usize,
    pub max_recent: usize,
    /// Byte budget for the text of each part (each part has its own).
    pub max_bytes: usize,
}

/// What a part left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Truncation {
    /// How many the source holds.
    pub total: u64,
    pub shown: usize,
    /// Left out by the count limit.
    pub omitted_by_count: u64,
    /// Left out because the part's byte budget was spent.
    pub omitted_by_bytes: u64,
    /// Shown, but with their text cut.
    pub cut_entries: u64,
    pub bytes_cut: u64,
    pub truncated: bool,
}

/// Whether a direct message is in the indexed store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IndexStatus {
    Indexed,
    NotIndexed,
    Unknown,
    NotApplicable,
}

/// One shown entry.
#[derive(Debug, Clone, Serialize)]
pub struct PacketEntry {
    #[serde(flatten)]
    pub entry: Entry,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_status: Option<IndexStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_index: Option<i64>,
}

impl From<Entry> for PacketEntry {
    fn from(entry: Entry) -> Self {
        PacketEntry {
            entry,
            index_status: None,
            turn_index: None,
        }
    }
}

/// One part of the packet.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub source: String,
    pub entries: Vec<PacketEntry>,
    pub truncation: Truncation,
}

/// The newest direct message and what the index says about it.
#[derive(Debug, Clone, Serialize)]
pub struct LatestDirection {
    pub text: String,
    pub text_bytes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    pub index_status: IndexStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_turn_index: Option<i64>,
    pub explanation: String,
}

/// The scan, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    pub path: String,
    pub bytes_at_scan_start: u64,
    pub bytes_scanned: u64,
    pub records: u64,
    pub direct_messages: u64,
    pub steering_messages: u64,
    pub skipped: SkipCounts,
    pub oversized_records: Vec<OversizedRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
}

/// The indexed store, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    /// `read`, `missing`, `unreadable` or `not-applicable`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opened_via: Option<OpenedVia>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRow>,
    pub turns: usize,
}

/// The whole packet.
#[derive(Debug, Clone, Serialize)]
pub struct Packet {
    pub format: &'static str,
    pub agent: String,
    pub session_id: String,
    pub latest_direction: Option<LatestDirection>,
    pub direction: Part,
    pub conversation: Part,
    pub steering: Part,
    pub recent_activity: Part,
    pub stream: StreamReport,
    pub index: IndexReport,
    pub resume: ResumeAssessment,
    pub warnings: Vec<String>,
}

/// The index input: what was read, or why not.
pub(crate) enum IndexInput {
    Read(Chronicle),
    Missing(String),
    Unreadable(String, String),
    NotApplicable,
}

/// Assemble the packet from a scan, the index, and the resume answer.
pub(crate) fn build(
    agent: &str,
    session_id: &str,
    scanned: Scanned,
    index: IndexInput,
    resume: ResumeAssessment,
    limits: PacketLimits,
) -> Packet {
    let turns: Vec<TurnRow> = match &index {
        IndexInput::Read(c) => c.turns.clone(),
        _ => Vec::new(),
    };
    let turns = turns.as_slice();
    let index_known = matches!(index, IndexInput::Read(_));
    let applicable = !matches!(index, IndexInput::NotApplicable);
    let state = &scanned.state;
    let status_of = |m: &RawMessage| match (applicable, index_known) {
        (false, _) => (IndexStatus::NotApplicable, None, String::new()),
        (true, false) => (
            IndexStatus::Unknown,
            None,
            "the indexed store could not be read".to_string(),
        ),
        (true, true) => index_status(m, turns),
    };
    let latest_direction = state.direct.newest().map(|m| latest(m, status_of(m)));
    let direct: Vec<PacketEntry> = state
        .direct
        .newest_first()
        .map(|m| {
            let (status, turn, _) = status_of(m);
            PacketEntry {
                entry: m.entry.clone(),
                index_status: Some(status),
                turn_index: turn,
            }
        })
        .collect();
    let direction = part(
        raw_source(agent, "direct user messages"),
        direct,
        state.direct.seen(),
        limits.max_direct,
        limits.max_bytes,
    );
    let steering_entries = state
        .steering
        .newest_first()
        .map(|m| m.entry.clone().into())
        .collect();
    let steering = part(
        raw_source(agent, "sourced user messages"),
        steering_entries,
        state.steering.seen(),
        limits.max_steering,
        limits.max_bytes,
    );
    let conversation = conversation_part(&index, turns, limits);
    let recent = pair_tool_names(scanned.recent.clone());
    let recent_total = scanned.activity_seen.max(recent.len() as u64);
    let recent_activity = part(
        raw_source(agent, "activity"),
        recent.into_iter().map(Into::into).collect(),
        recent_total,
        limits.max_recent,
        limits.max_bytes,
    );
    let mut packet = Packet {
        format: PACKET_FORMAT,
        agent: agent.into(),
        session_id: session_id.into(),
        latest_direction,
        direction,
        conversation,
        steering,
        recent_activity,
        stream: stream_report(&scanned, agent),
        index: index_report(index),
        resume,
        warnings: Vec::new(),
    };
    packet.warnings = warnings(&packet, &scanned, turns);
    packet
}

fn raw_source(agent: &str, what: &str) -> String {
    let file = if agent == "copilot" {
        "events.jsonl"
    } else {
        "transcript"
    };
    format!("raw {file}: {what}, newest first")
}

fn latest(
    m: &RawMessage,
    (status, turn, explanation): (IndexStatus, Option<i64>, String),
) -> LatestDirection {
    LatestDirection {
        text: m.entry.text.clone(),
        text_bytes: m.entry.text_bytes,
        timestamp: m.entry.timestamp.clone(),
        offset: m.entry.offset,
        index_status: status,
        matched_turn_index: turn,
        explanation,
    }
}

/// Indexed when a turn with the same text was written at or after the message
/// (turns rows are written at shutdown, after their prompt). A same-text turn
/// written before it belongs to an earlier prompt and never counts.
fn index_status(m: &RawMessage, turns: &[TurnRow]) -> (IndexStatus, Option<i64>, String) {
    let same: Vec<&TurnRow> = turns
        .iter()
        .filter(|t| t.digest == Some(m.digest))
        .collect();
    let at = m
        .entry
        .timestamp
        .as_deref()
        .and_then(crate::clock::parse_rfc3339_ns);
    if same.is_empty() {
        return (
            IndexStatus::NotIndexed,
            None,
            "no indexed turn holds this message".into(),
        );
    }
    let Some(at) = at else {
        return (
            IndexStatus::Unknown,
            None,
            "the message has no readable timestamp to order it against turns".into(),
        );
    };
    let later = same.iter().find(|t| {
        t.timestamp
            .as_deref()
            .and_then(crate::clock::parse_rfc3339_ns)
            .is_some_and(|tt| tt >= at)
    });
    match later {
        Some(t) => (
            IndexStatus::Indexed,
            Some(t.turn_index),
            format!("indexed as turn {}", t.turn_index),
        ),
        None => {
            let t = same[0];
            let explanation = format!(
                "the same text is indexed only for an earlier prompt (turn {} at {}); this message is not indexed",
                t.turn_index,
                t.timestamp.as_deref().unwrap_or("?")
            );
            (IndexStatus::NotIndexed, None, explanation)
        }
    }
}

fn conversation_part(index: &IndexInput, turns: &[TurnRow], limits: PacketLimits) -> Part {
    let source = match index {
        IndexInput::Read(c) => format!("indexed turns in {}, newest first", c.path.display()),
        IndexInput::NotApplicable => {
            "none: this agent keeps no separate index; see recent activity".into()
        }
        _ => "indexed store unavailable".into(),
    };
    let mut entries = Vec::new();
    for t in turns.iter().take(limits.max_indexed) {
        let ts = t.timestamp.clone();
        let reply = t
            .assistant_response
            .as_deref()
            .unwrap_or("(no response recorded)");
        for (kind, text) in [
            (EntryKind::Assistant, reply),
            (EntryKind::User, t.user_message.as_deref().unwrap_or("")),
        ] {
            let mut e = Entry::new(kind, text, limits.max_bytes);
            e.timestamp = ts.clone();
            entries.push(PacketEntry {
                entry: e,
                index_status: None,
                turn_index: Some(t.turn_index),
            });
        }
    }
    let total_entries = turns.len() as u64 * 2;
    part(
        source,
        entries,
        total_entries,
        limits.max_indexed.saturating_mul(2),
        limits.max_bytes,
    )
}

/// Apply a part's limits to candidates given newest first.
fn part(
    source: String,
    candidates: Vec<PacketEntry>,
    total: u64,
    max_count: usize,
    budget: usize,
) -> Part {
    let mut t = Truncation {
        total,
        ..Truncation::default()
    };
    let mut entries = Vec::new();
    let mut remaining = budget;
    let kept = candidates.len().min(max_count);
    t.omitted_by_count = total.saturating_sub(kept as u64);
    for (i, mut pe) in candidates.into_iter().take(kept).enumerate() {
        if remaining == 0 && i > 0 {
            t.omitted_by_bytes += 1;
            continue;
        }
        if pe.entry.text.len() > remaining {
            pe.entry.text = cut(&pe.entry.text, remaining).to_string();
        }
        remaining -= pe.entry.text.len();
        if pe.entry.is_cut() {
            t.cut_entries += 1;
            t.bytes_cut += (pe.entry.text_bytes - pe.entry.text.len()) as u64;
        }
        entries.push(pe);
    }
    t.shown = entries.len();
    t.truncated = t.omitted_by_count + t.omitted_by_bytes + t.cut_entries > 0;
    Part {
        source,
        entries,
        truncation: t,
    }
}

/// Results carry the tool name of their call when the call is in view.
fn pair_tool_names(mut recent: Vec<Entry>) -> Vec<Entry> {
    let names: Vec<(String, String)> = recent
        .iter()
        .filter(|e| e.kind == EntryKind::ToolCall)
        .filter_map(|e| Some((e.call_id.clone()?, e.tool.clone()?)))
        .collect();
    for e in recent
        .iter_mut()
        .filter(|e| e.kind == EntryKind::ToolResult && e.tool.is_none())
    {
        e.tool = names
            .iter()
            .find(|(id, _)| Some(id) == e.call_id.as_ref())
            .map(|(_, n)| n.clone());
    }
    recent
}

fn stream_report(scanned: &Scanned, agent: &str) -> StreamReport {
    let s = &scanned.state;
    StreamReport {
        path: scanned.path.display().to_string(),
        bytes_at_scan_start: scanned.bytes_at_start,
        bytes_scanned: scanned.read.bytes,
        records: s.records,
        direct_messages: s.direct.seen(),
        steering_messages: s.steering.seen(),
        skipped: s.skipped.clone(),
        oversized_records: s.oversized.newest_first().cloned().collect(),
        lifecycle: (agent == "copilot").then(|| s.lifecycle.clone()),
    }
}

fn index_report(index: IndexInput) -> IndexReport {
    let blank = |status: &str| IndexReport {
        status: status.into(),
        path: None,
        opened_via: None,
        error: None,
        session: None,
        turns: 0,
    };
    match index {
        IndexInput::Read(c) => IndexReport {
            path: Some(c.path.display().to_string()),
            opened_via: Some(c.opened_via),
            error: c.read_only_error,
            session: c.session,
            turns: c.turns.len(),
            ..blank("read")
        },
        IndexInput::Missing(path) => IndexReport {
            path: Some(path),
            ..blank("missing")
        },
        IndexInput::Unreadable(path, e) => IndexReport {
            path: Some(path),
            error: Some(e),
            ..blank("unreadable")
        },
        IndexInput::NotApplicable => blank("not-applicable"),
    }
}

fn warnings(p: &Packet, scanned: &Scanned, turns: &[TurnRow]) -> Vec<String> {
    let mut out = Vec::new();
    let s = &scanned.state;
    match &p.latest_direction {
        None => out.push("no direct user message was found in the raw stream".into()),
        Some(l) if l.index_status == IndexStatus::NotIndexed => {
            let newest = turns.first().map_or(
                "the index holds no turn for this session".to_string(),
                |t| {
                    format!(
                        "the newest indexed turn (turn {} at {}) is older",
                        t.turn_index,
                        t.timestamp.as_deref().unwrap_or("?")
                    )
                },
            );
            out.push(format!(
                "the latest direction{} exists only in the raw stream, not in the indexed store; {newest}: do not take the indexed conversation for the latest direction",
                l.timestamp.as_deref().map(|t| format!(" ({t})")).unwrap_or_default()
            ));
        }
        _ => {}
    }
    if s.oversized_user_after_direct > 0 {
        out.push(format!(
            "{} user message record(s) after the latest readable direction were larger than --max-record and skipped: newer direction may exist; raise --max-record",
            s.oversized_user_after_direct
        ));
    }
    let skipped = s.skipped.total_skipped();
    if skipped > 0 {
        out.push(format!(
            "{skipped} record(s) were skipped as oversized or malformed (see stream.skipped)"
        ));
    }
    if p.agent == "copilot" {
        interrupted_warning(
            &mut out,
            s.direct.newest().and_then(|m| m.entry.offset),
            s.lifecycle.last_shutdown_offset,
        );
    }
    unanswered_calls(&mut out, &p.recent_activity);
    out
}

fn interrupted_warning(
    out: &mut Vec<String>,
    newest_direct: Option<u64>,
    last_shutdown: Option<u64>,
) {
    let Some(direct_at) = newest_direct else {
        return;
    };
    if last_shutdown.is_none_or(|s| s < direct_at) {
        out.push(
            "the session did not shut down after its latest direction: it was interrupted".into(),
        );
    }
}

fn unanswered_calls(out: &mut Vec<String>, recent: &Part) {
    let results: Vec<&str> = recent
        .entries
        .iter()
        .filter(|e| e.entry.kind == EntryKind::ToolResult)
        .filter_map(|e| e.entry.call_id.as_deref())
        .collect();
    for call in recent
        .entries
        .iter()
        .filter(|e| e.entry.kind == EntryKind::ToolCall)
    {
        let Some(id) = call.entry.call_id.as_deref() else {
            continue;
        };
        if !results.contains(&id) {
            let tool = call.entry.tool.as_deref().unwrap_or("?");
            out.push(format!("tool call {tool} ({id}) has no result in the stream: it may have been interrupted; check its effects before continuing"));
        }
    }
}
