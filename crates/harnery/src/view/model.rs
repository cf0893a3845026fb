//! What the picture of one session holds, built from the ledger's rows
//! and nothing else: lanes (the session's own agent, then each subagent),
//! turns, one mark per span row, markers for the events a reader looks for,
//! the ranges a resume superseded (from the timeline's marks), and the
//! lines `harnery show` prints.
//!
//! Times stay Unix nanoseconds here; only the page turns them into
//! positions. A recovered span keeps no length: its extent is its upper
//! bound, when the terminal carries one, and is labelled as such.

use std::collections::{HashMap, HashSet};

use crate::contract::{Confidence, Event, Payload};
use crate::ledger::{SessionSummary, SpanRow, SpanState};
use crate::report::epochs::combine;
use crate::report::timeline::{Timeline, TimelineEntry};
use crate::report::usage::turn_usage;

/// One epoch's part of a session, as the ledger holds it.
pub(crate) struct PartRows<'a> {
    /// `live`, or an archive's genesis id.
    pub epoch: &'a str,
    pub timeline: &'a Timeline,
    pub spans: &'a [SpanRow],
    pub events: &'a [Event],
}

/// Everything one session's page shows.
#[derive(Debug, Clone)]
pub(crate) struct SessionView {
    pub summary: SessionSummary,
    /// The epochs the session spans, when more than the live one was read.
    pub epochs: Vec<String>,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Lane 0 is the session's own agent; the others are subagents.
    pub lanes: Vec<Lane>,
    pub turns: Vec<TurnBand>,
    pub spans: Vec<SpanMark>,
    pub markers: Vec<Marker>,
    /// Where one epoch's part ends and the next begins.
    pub boundaries: Vec<Boundary>,
    /// The lines of `harnery show`, in order.
    pub lines: Vec<ShowLine>,
    /// The time ranges a resume superseded, one per resume and part.
    pub superseded: Vec<SupersededBand>,
}

/// The time a resume's superseded range covers: from its first event to
/// its last (a span's completion included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SupersededBand {
    /// The offset of the `session.resumed` event that superseded it.
    pub resume_offset: u64,
    pub from_ns: i64,
    pub to_ns: i64,
}

#[derive(Debug, Clone)]
pub(crate) struct Lane {
    /// `None` for the session's own agent.
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// When the subagent started and stopped, as far as the ledger knows.
    pub started_ns: Option<i64>,
    pub stopped_ns: Option<i64>,
    /// How many rows its spans need so that none overlaps another.
    pub rows: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnBand {
    pub turn_id: String,
    /// 1-based, in order of first appearance.
    pub number: usize,
    pub from_ns: i64,
    pub to_ns: i64,
    /// The stop reason of its `turn.completed`, when one was recorded.
    pub completed: Option<String>,
    pub prompt: Option<String>,
    /// Input plus output tokens the turn's `usage.reported` records
    /// reported; empty when none did (never estimated).
    pub tokens: Option<u64>,
}

/// One span row of the ledger, placed.
#[derive(Debug, Clone)]
pub(crate) struct SpanMark {
    pub request_event_id: String,
    /// `tool` or `command`.
    pub kind: String,
    pub name: String,
    pub tool_call_id: Option<String>,
    pub turn_id: Option<String>,
    pub lane: usize,
    pub row: usize,
    pub state: SpanState,
    pub outcome: Option<String>,
    pub reason: Option<String>,
    pub from_ns: i64,
    /// Closed natively: the completion. Open: the session's last event.
    /// Recovered: the end of the upper bound, or `from_ns` without one.
    pub to_ns: i64,
    pub duration_ms: Option<u64>,
    pub upper_bound_ms: Option<u64>,
    pub confidence: Option<Confidence>,
    /// The tool input or command line, clipped.
    pub input: Option<String>,
    /// What the agent's own record says of the call (call id, turn id,
    /// exit code), where a `tool.recorded` joined this span.
    pub record: Option<crate::report::timeline::RecordJoin>,
    /// Requested in a range a resume superseded.
    pub superseded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkerKind {
    Session,
    Prompt,
    Subagent,
    End,
    Health,
    Error,
    Compaction,
    /// A message that was not the user's (steering), apart from prompts.
    Steering,
}

impl MarkerKind {
    /// The kind of marker a shown event gets, if any.
    fn of_entry(entry: &TimelineEntry) -> Option<MarkerKind> {
        if entry.steering.is_some() {
            return Some(MarkerKind::Steering);
        }
        MarkerKind::of(&entry.kind)
    }

    /// The kind of marker an event type gets, if any.
    fn of(kind: &str) -> Option<MarkerKind> {
        Some(match kind {
            "session.started" | "session.ended" => MarkerKind::Session,
            "prompt.submitted" => MarkerKind::Prompt,
            "subagent.started" | "subagent.stopped" => MarkerKind::Subagent,
            "end.requested" | "end.salvaged" | "end.cancelled" | "end.expired" => MarkerKind::End,
            "health.condition" => MarkerKind::Health,
            "error.reported" => MarkerKind::Error,
            "compaction.started" | "compaction.completed" => MarkerKind::Compaction,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MarkerKind::Session => "session",
            MarkerKind::Prompt => "prompt",
            MarkerKind::Subagent => "subagent",
            MarkerKind::End => "end",
            MarkerKind::Health => "health",
            MarkerKind::Error => "error",
            MarkerKind::Compaction => "compaction",
            MarkerKind::Steering => "steering",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Marker {
    pub kind: MarkerKind,
    pub event_type: String,
    pub lane: usize,
    pub at_ns: i64,
    pub event_id: String,
    /// The line `harnery show` prints for the event.
    pub text: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Boundary {
    pub at_ns: i64,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone)]
pub(crate) struct ShowLine {
    pub epoch: String,
    pub offset: u64,
    /// Milliseconds since the session's first event in any part.
    pub at_ms: i64,
    pub agent_id: Option<String>,
    pub text: String,
    pub superseded: bool,
    /// A message that was not the user's: who sent it (steering).
    pub steering: Option<String>,
}

/// The narrowest a span is drawn, as a share of the time axis: wide enough
/// for its state glyph at the default zoom, and the same share at any zoom.
pub(crate) const MIN_WIDTH_PERCENT: f64 = 1.25;

/// The share of the axis kept free at each end, so that a marker at the
/// first or last event is drawn whole.
pub(crate) const EDGE_PERCENT: f64 = 1.5;

/// The longest tool input a span's details keep.
const INPUT_CLIP: usize = 400;
/// The longest prompt a turn's details keep.
const PROMPT_CLIP: usize = 400;

/// Build the view of a session from its parts, in chain order.
pub(crate) fn build(parts: &[PartRows], tagged: bool) -> SessionView {
    let summaries: Vec<SessionSummary> = parts.iter().map(|p| p.timeline.summary.clone()).collect();
    let summary = combine(&summaries).expect("a viewed session has a part");
    let (start_ns, end_ns) = (summary.first_unix_ns, summary.last_unix_ns);
    let events: Vec<&Event> = parts.iter().flat_map(|p| p.events.iter()).collect();
    let by_id: HashMap<&str, &Event> = events.iter().map(|e| (e.id.as_str(), *e)).collect();
    let mut lanes = lanes_of(&events, parts);
    let lane_of: HashMap<Option<String>, usize> = lanes
        .iter()
        .enumerate()
        .map(|(i, l)| (l.agent_id.clone(), i))
        .collect();
    let lane = |agent: &Option<String>| lane_of.get(agent).copied().unwrap_or(0);
    let joins = crate::report::timeline::RecordJoin::of_events(events.iter().copied());
    let mut spans: Vec<SpanMark> = parts
        .iter()
        .flat_map(|p| p.spans.iter())
        .map(|s| {
            let mut m = mark(s, &by_id, end_ns, lane(&s.agent_id));
            m.record = joins.get(&s.request_event_id).cloned();
            if m.tool_call_id.is_none() {
                m.tool_call_id = m.record.as_ref().map(|j| j.tool_call_id.clone());
            }
            m
        })
        .collect();
    let (superseded, gone) = superseded_of(parts);
    for m in &mut spans {
        m.superseded = gone.contains(&m.request_event_id);
    }
    let drawn = 100.0 - 2.0 * EDGE_PERCENT;
    let min_extent = ((end_ns - start_ns) as f64 * MIN_WIDTH_PERCENT / drawn) as i64;
    pack_rows(&mut spans, &mut lanes, min_extent);
    SessionView {
        epochs: if tagged {
            parts.iter().map(|p| p.epoch.to_string()).collect()
        } else {
            Vec::new()
        },
        turns: turns_of(&events),
        markers: markers_of(parts, &lane),
        boundaries: boundaries_of(parts),
        lines: lines_of(parts, start_ns),
        superseded,
        summary,
        start_ns,
        end_ns,
        lanes,
        spans,
    }
}

/// The session's own lane, then one per subagent in order of first sight.
fn lanes_of(events: &[&Event], parts: &[PartRows]) -> Vec<Lane> {
    let mut lanes = vec![Lane::new(None)];
    let mut at: HashMap<String, usize> = HashMap::new();
    let agents = events.iter().map(|e| e.agent_id.as_ref()).chain(
        parts
            .iter()
            .flat_map(|p| p.spans.iter().map(|s| s.agent_id.as_ref())),
    );
    for agent in agents.flatten() {
        at.entry(agent.clone()).or_insert_with(|| {
            lanes.push(Lane::new(Some(agent.clone())));
            lanes.len() - 1
        });
    }
    for e in events {
        match &e.payload {
            Payload::SubagentStarted(s) => {
                let lane = &mut lanes[*at.entry(s.agent_id.clone()).or_insert(0)];
                lane.started_ns.get_or_insert(e.time_unix_ns);
                lane.agent_type = lane.agent_type.take().or(s.agent_type.clone());
            }
            Payload::SubagentStopped(s) => {
                let lane = &mut lanes[*at.entry(s.agent_id.clone()).or_insert(0)];
                lane.stopped_ns = Some(e.time_unix_ns);
                lane.agent_type = lane.agent_type.take().or(s.agent_type.clone());
            }
            _ => {}
        }
    }
    lanes
}

impl Lane {
    fn new(agent_id: Option<String>) -> Lane {
        Lane {
            agent_id,
            agent_type: None,
            started_ns: None,
            stopped_ns: None,
            rows: 0,
        }
    }
}

/// Place one span row; what the row lacks (confidence, the upper bound,
/// the input) comes from its events.
fn mark(s: &SpanRow, by_id: &HashMap<&str, &Event>, end_ns: i64, lane: usize) -> SpanMark {
    let request = by_id.get(s.request_event_id.as_str()).copied();
    let terminal = s
        .completed_event_id
        .as_deref()
        .and_then(|id| by_id.get(id).copied());
    let from_ns = s
        .requested_unix_ns
        .or(s.completed_unix_ns)
        .unwrap_or(end_ns);
    let upper_bound_ms = terminal
        .and_then(|t| t.payload.recovery()?.elapsed_upper_bound_ms.as_ref())
        .and_then(|b| b.observed().copied());
    let to_ns = match s.state {
        SpanState::ClosedNative => s.completed_unix_ns.unwrap_or(from_ns).max(from_ns),
        SpanState::Open => end_ns.max(from_ns),
        SpanState::Recovered => {
            from_ns.saturating_add(upper_bound_ms.map_or(0, |ms| ms as i64 * 1_000_000))
        }
    };
    SpanMark {
        request_event_id: s.request_event_id.clone(),
        kind: s.kind.clone(),
        name: s.name.clone(),
        tool_call_id: s.tool_call_id.clone(),
        turn_id: s.turn_id.clone(),
        lane,
        row: 0,
        state: s.state,
        outcome: s.outcome.clone(),
        reason: s.reason.clone(),
        from_ns,
        to_ns,
        duration_ms: s.duration_ms,
        upper_bound_ms,
        confidence: terminal.or(request).map(|e| e.provenance.confidence),
        input: request.and_then(input_of),
        record: None,
        superseded: false,
    }
}

/// The bands of the ranges the timelines mark superseded (one per resume
/// in each part), and the request ids of the spans inside them.
fn superseded_of(parts: &[PartRows]) -> (Vec<SupersededBand>, HashSet<String>) {
    let mut bands: Vec<SupersededBand> = Vec::new();
    let mut spans = HashSet::new();
    for part in parts {
        let times: HashMap<u64, i64> = part
            .events
            .iter()
            .map(|e| (e.offset, e.time_unix_ns))
            .collect();
        let first = bands.len();
        for e in &part.timeline.entries {
            let Some(resume_offset) = e.superseded_by else {
                continue;
            };
            let start = part.timeline.summary.first_unix_ns;
            let at = times
                .get(&e.offset)
                .copied()
                .unwrap_or(start + e.at_ms * 1_000_000);
            let mut end = at;
            if let Some(s) = &e.span {
                spans.insert(s.request_event_id.clone());
                end = end.max(s.completed_unix_ns.unwrap_or(at));
            }
            match bands[first..]
                .iter_mut()
                .find(|b| b.resume_offset == resume_offset)
            {
                Some(b) => (b.from_ns, b.to_ns) = (b.from_ns.min(at), b.to_ns.max(end)),
                None => bands.push(SupersededBand {
                    resume_offset,
                    from_ns: at,
                    to_ns: end,
                }),
            }
        }
    }
    (bands, spans)
}

fn input_of(e: &Event) -> Option<String> {
    match &e.payload {
        Payload::ToolRequested(p) => p.input.as_ref().map(|j| clip(j.as_str(), INPUT_CLIP)),
        Payload::CommandRequested(p) => Some(clip(&p.argv.join(" "), INPUT_CLIP)),
        _ => None,
    }
}

/// Give each span the first row of its lane that is free at its start, so
/// parallel spans stack instead of covering each other. A span takes at
/// least `min_extent` (the page draws none narrower), so a short one
/// keeps its row to itself for as long as it is drawn.
fn pack_rows(spans: &mut [SpanMark], lanes: &mut [Lane], min_extent: i64) {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].lane, spans[i].from_ns, i));
    let mut row_ends: Vec<Vec<i64>> = vec![Vec::new(); lanes.len()];
    for i in order {
        let s = &mut spans[i];
        let ends = &mut row_ends[s.lane];
        let row = match ends.iter().position(|&end| end < s.from_ns) {
            Some(r) => r,
            None => {
                ends.push(i64::MIN);
                ends.len() - 1
            }
        };
        ends[row] = s.to_ns.max(s.from_ns.saturating_add(min_extent));
        s.row = row;
    }
    for (lane, ends) in lanes.iter_mut().zip(&row_ends) {
        lane.rows = ends.len();
    }
}

/// Each turn from its first to its last event, in order of first sight.
fn turns_of(events: &[&Event]) -> Vec<TurnBand> {
    let mut turns: Vec<TurnBand> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for e in events {
        let Some(id) = e.turn.turn_id.as_deref() else {
            continue;
        };
        let i = *at.entry(id).or_insert_with(|| {
            turns.push(TurnBand {
                turn_id: id.to_string(),
                number: turns.len() + 1,
                from_ns: e.time_unix_ns,
                to_ns: e.time_unix_ns,
                completed: None,
                prompt: None,
                tokens: None,
            });
            turns.len() - 1
        });
        let t = &mut turns[i];
        t.from_ns = t.from_ns.min(e.time_unix_ns);
        t.to_ns = t.to_ns.max(e.time_unix_ns);
        match &e.payload {
            Payload::TurnCompleted(c) => {
                t.completed = Some(c.stop_reason.clone().unwrap_or_else(|| "completed".into()))
            }
            Payload::PromptSubmitted(p) if t.prompt.is_none() => {
                t.prompt = p.prompt.as_deref().map(|x| clip(x, PROMPT_CLIP))
            }
            _ => {}
        }
    }
    let usage = turn_usage(events.iter().copied());
    for t in &mut turns {
        t.tokens = usage.get(&t.turn_id).and_then(|u| u.tokens.in_out());
    }
    turns
}

/// A marker for each shown event of a kind a reader looks for, with the
/// text `show` gives it.
fn markers_of(parts: &[PartRows], lane: &dyn Fn(&Option<String>) -> usize) -> Vec<Marker> {
    let mut out = Vec::new();
    for part in parts {
        let at_offset: HashMap<u64, &Event> = part.events.iter().map(|e| (e.offset, e)).collect();
        for entry in &part.timeline.entries {
            let (Some(kind), Some(e)) = (MarkerKind::of_entry(entry), at_offset.get(&entry.offset))
            else {
                continue;
            };
            out.push(Marker {
                kind,
                event_type: entry.kind.clone(),
                lane: lane(&entry.agent_id),
                at_ns: e.time_unix_ns,
                event_id: e.id.as_str().to_string(),
                text: entry.text.clone(),
            });
        }
    }
    out
}

fn boundaries_of(parts: &[PartRows]) -> Vec<Boundary> {
    parts
        .windows(2)
        .map(|w| Boundary {
            at_ns: w[1].timeline.summary.first_unix_ns,
            from: w[0].epoch.to_string(),
            to: w[1].epoch.to_string(),
        })
        .collect()
}

fn lines_of(parts: &[PartRows], start_ns: i64) -> Vec<ShowLine> {
    let mut out = Vec::new();
    for part in parts {
        let shift = (part.timeline.summary.first_unix_ns - start_ns) / 1_000_000;
        out.extend(part.timeline.entries.iter().map(|e| ShowLine {
            epoch: part.epoch.to_string(),
            offset: e.offset,
            at_ms: e.at_ms + shift,
            agent_id: e.agent_id.clone(),
            text: e.text.clone(),
            superseded: e.superseded,
            steering: e.steering.clone(),
        }));
    }
    out
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(from: i64, to: i64) -> SpanMark {
        SpanMark {
            request_event_id: format!("ev_{from}"),
            kind: "tool".into(),
            name: "Bash".into(),
            tool_call_id: None,
            turn_id: None,
            lane: 0,
            row: 0,
            state: SpanState::ClosedNative,
            outcome: Some("success".into()),
            reason: None,
            from_ns: from,
            to_ns: to,
            duration_ms: None,
            upper_bound_ms: None,
            confidence: None,
            input: None,
            record: None,
            superseded: false,
        }
    }

    #[test]
    fn a_turn_carries_the_tokens_its_usage_reported_and_none_without() {
        use crate::contract::{Provenance, RecordAt, UsageReported};
        let mut s = crate::report::testkit::Script::new("s1");
        s.turn("t1");
        s.start(0);
        let usage = |input, output| {
            Payload::UsageReported(UsageReported {
                record: RecordAt {
                    path: "t.jsonl".into(),
                    offset: 0,
                },
                message_id: None,
                model: None,
                input_tokens: Some(input),
                output_tokens: Some(output),
                cache_read_tokens: Some(1000),
                cache_write_tokens: None,
                cost: None,
                duration_ms: None,
                time_to_first_token_ms: None,
                reasoning_tokens: None,
                raw: None,
                copied_from_session: None,
            })
        };
        s.push(1, usage(100, 20), Provenance::NATIVE);
        s.push(2, usage(5, 7), Provenance::NATIVE);
        s.turn("t2");
        s.start(3);
        let events = s.events();
        let refs: Vec<&Event> = events.iter().collect();
        let turns = turns_of(&refs);
        assert_eq!(turns[0].tokens, Some(132));
        assert_eq!(turns[1].tokens, None);
    }

    #[test]
    fn parallel_spans_stack_and_serial_ones_share_a_row() {
        let mut spans = vec![span(0, 10), span(5, 20), span(11, 12), span(21, 30)];
        let mut lanes = vec![Lane::new(None)];
        pack_rows(&mut spans, &mut lanes, 0);
        let rows: Vec<usize> = spans.iter().map(|s| s.row).collect();
        assert_eq!(rows, [0, 1, 0, 0]);
        assert_eq!(lanes[0].rows, 2);
    }

    #[test]
    fn spans_at_one_instant_do_not_share_a_row() {
        let mut spans = vec![span(7, 7), span(7, 7)];
        let mut lanes = vec![Lane::new(None)];
        pack_rows(&mut spans, &mut lanes, 0);
        assert_eq!((spans[0].row, spans[1].row), (0, 1));
    }

    #[test]
    fn a_short_span_keeps_its_row_for_its_drawn_width() {
        let mut spans = vec![span(0, 1), span(5, 6)];
        let mut lanes = vec![Lane::new(None)];
        pack_rows(&mut spans, &mut lanes, 10);
        assert_eq!((spans[0].row, spans[1].row), (0, 1));
    }

    #[test]
    fn clip_cuts_on_characters() {
        assert_eq!(clip("héllo", 3), "hél…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
