//! One session's page: a header, a legend, the time axis with turns as
//! bands, one lane per agent with its markers and span marks, a details
//! panel, and the lines `harnery show` prints.
//!
//! Positions are percentages of the time axis, so zooming only widens the
//! axis (the text keeps its size) and the page needs no script to draw.
//! Each span's element carries `data-span-id` (its request event id) and
//! `data-span-state`; its state is also in a glyph and a pattern, never in
//! colour alone. Every item is focusable, and its details are its title.
//! A range a resume superseded is a hatched band with a label, and each
//! span inside it carries `data-superseded="true"`; a session without one
//! draws exactly as before.
//! [`body`] and [`timeline`] are the content alone, for a page that
//! frames it otherwise (`harnery serve`).

use maud::{Markup, html};

use super::html::{Lines, document, duration, since, tick_step};
use super::model::{
    EDGE_PERCENT, Lane, MIN_WIDTH_PERCENT, Marker, MarkerKind, SessionView, SpanMark,
    SupersededBand, TurnBand,
};
use crate::clock::format_time;
use crate::ledger::SpanState;

/// The script: details on hover and focus, and zoom.
pub(crate) const SCRIPT: &str = include_str!("page.js");

/// Pixel heights the stylesheet and the layout agree on.
const ROW_PX: usize = 20;
const MARKER_ROW_PX: usize = 22;

/// The most ticks the axis gets.
const MAX_TICKS: u64 = 12;

/// The page of one session.
pub(crate) fn render(v: &SessionView) -> String {
    let title = format!(
        "harnery view: {} {}",
        v.summary.session.adapter.as_str(),
        v.summary.session.session_id
    );
    document(&title, body(v), Some(SCRIPT))
}

/// The page's content without the document around it: the drawing
/// ([`timeline`]) and the lines of `harnery show`.
pub(crate) fn body(v: &SessionView) -> Markup {
    html! {
        (timeline(v))
        (lines(v))
    }
}

/// The drawing alone: header, legend, zoom controls and the time axis
/// with its turns, lanes, markers and spans. The script ([`SCRIPT`])
/// looks for the `detail`, `track` and `zoom-level` elements it holds.
pub(crate) fn timeline(v: &SessionView) -> Markup {
    html! {
        (header(v))
        (legend())
        (controls())
        style { ".span { min-width: " (MIN_WIDTH_PERCENT) "%; }" } "\n"
        @if !v.superseded.is_empty() { style { (SUPERSEDED_STYLE) } "\n" }
        div.scroll { div.track #track {
            "\n"
            (axis(v))
            @for (i, t) in v.turns.iter().enumerate() { (turn(v, t, i)) }
            @for b in &v.superseded { (superseded_band(v, b)) }
            @for b in &v.boundaries {
                div.boundary tabindex="0" style={ "left:" (pct(v, b.at_ns)) }
                    title=(Lines(&format!("epoch boundary: {} → {}", b.from, b.to))) {}
                "\n"
            }
            @for (i, lane) in v.lanes.iter().enumerate() { (lane_section(v, i, lane)) }
        } } "\n"
    }
}

/// Where `ns` falls on the axis, as a CSS percentage.
fn pct(v: &SessionView, ns: i64) -> String {
    format!("{:.4}%", share(v, ns))
}

fn share(v: &SessionView, ns: i64) -> f64 {
    let total = (v.end_ns - v.start_ns).max(1) as f64;
    let frac = ((ns - v.start_ns) as f64 / total).clamp(0.0, 1.0);
    EDGE_PERCENT + frac * (100.0 - 2.0 * EDGE_PERCENT)
}

fn width(v: &SessionView, from: i64, to: i64) -> String {
    format!("{:.4}%", (share(v, to) - share(v, from)).max(0.0))
}

fn ms_since(v: &SessionView, ns: i64) -> i64 {
    (ns - v.start_ns) / 1_000_000
}

fn header(v: &SessionView) -> Markup {
    let s = &v.summary;
    html! {
        header {
            h1 { (s.session.adapter.as_str()) " " code { (s.session.session_id) } } "\n"
            @if let Some(title) = &s.title { p.title { (title) } "\n" }
            @if let Some(project) = &s.project { p.project { "project: " code { (project) } } "\n" }
            p {
                (format_time(s.first_unix_ns)) " .. " (format_time(s.last_unix_ns))
                " · " (s.events) " events · " (s.turns) " turns · spans: "
                (s.spans.closed_native) " closed natively, " (s.spans.recovered) " recovered, "
                (s.spans.open) " open"
                @if !v.epochs.is_empty() { " · epochs: " (v.epochs.join(" → ")) }
            }
        } "\n"
    }
}

fn legend() -> Markup {
    html! {
        ul.legend aria-label="legend" {
            li { span.key.span.st-closed_native.oc-success { "✓" } " closed natively, success" }
            li { span.key.span.st-closed_native.oc-failure { "✗" } " closed natively, failure" }
            li { span.key.span.st-closed_native.oc-other { "•" } " closed natively, other outcome" }
            li { span.key.span.st-recovered { "?" } " recovered: outcome and duration unknown" }
            li { span.key.span.st-recovered.bounded { "?" } " hatched: upper bound, not a duration" }
            li { span.key.span.st-open { "→" } " open: no completion yet, drawn to the last event" }
            li {
                span.key.marker { "P" }
                " markers: S session, P prompt, » steering (a message not from the user), \
                 A subagent, E end, H health, ! error, C compaction"
            }
        } "\n"
    }
}

fn controls() -> Markup {
    html! {
        div.controls {
            span { "zoom" } " "
            button type="button" data-zoom="0.5" aria-label="zoom out" { "−" } " "
            button type="button" data-zoom="2" aria-label="zoom in" { "+" } " "
            button type="button" data-zoom="fit" { "fit" } " "
            span #zoom-level { "1×" } " "
            span.hint { "(keys + − 0 anywhere on the page)" }
        } "\n"
        div #detail role="status" aria-live="polite" {
            "Hover over or focus (Tab) any bar, marker or turn for its details."
        } "\n"
    }
}

fn axis(v: &SessionView) -> Markup {
    let total = u64::try_from(ms_since(v, v.end_ns)).unwrap_or(0);
    let step = tick_step(total, MAX_TICKS);
    let ticks = (0..=total).step_by(usize::try_from(step).unwrap_or(usize::MAX));
    html! {
        div.axis aria-hidden="true" {
            @for at in ticks {
                span.tick style={ "left:" (pct(v, v.start_ns + (at as i64) * 1_000_000)) } {
                    @if at == 0 { "0" } @else { "+" (duration(at)) }
                }
            }
        } "\n"
    }
}

fn turn(v: &SessionView, t: &TurnBand, i: usize) -> Markup {
    let mut label = format!("turn {}", t.number);
    if let Some(tokens) = t.tokens {
        label.push_str(&format!(" · {tokens} tokens"));
    }
    let mut detail = format!(
        "{label}\nid: {}\n{} .. {} ({})\n{}",
        t.turn_id,
        since(ms_since(v, t.from_ns)),
        since(ms_since(v, t.to_ns)),
        duration(u64::try_from((t.to_ns - t.from_ns) / 1_000_000).unwrap_or(0)),
        match &t.completed {
            Some(stop) => format!("completed: {stop}"),
            None => "no turn.completed recorded".to_string(),
        }
    );
    match t.tokens {
        Some(n) => detail.push_str(&format!("\ntokens: {n}")),
        None => detail.push_str("\ntokens: not recorded"),
    }
    if let Some(p) = &t.prompt {
        detail.push_str(&format!("\nprompt: {p}"));
    }
    html! {
        div.turn.odd[i % 2 == 1] tabindex="0" data-turn-id=(t.turn_id)
            style={ "left:" (pct(v, t.from_ns)) ";width:" (width(v, t.from_ns, t.to_ns)) }
            title=(Lines(&detail)) {
            span.turn-label { (label) }
        } "\n"
    }
}

/// The look of a superseded band, written only on a page that has one
/// (so every other page keeps its bytes).
const SUPERSEDED_STYLE: &str = ".superseded { position: absolute; top: 22px; bottom: 0; z-index: 0; min-width: 2px; \
background: repeating-linear-gradient(135deg, rgba(90,90,90,.18) 0 6px, transparent 6px 12px); \
border-left: 2px dotted #555; border-right: 2px dotted #555; } \
.superseded:focus { outline: 3px solid #000; outline-offset: 1px; z-index: 5; } \
.superseded-label { position: absolute; top: 1px; left: 3px; font-size: 11px; color: #333; white-space: nowrap; \
background: rgba(255,255,255,.85); } \
.superseded.late .superseded-label { left: auto; right: 3px; }";

fn superseded_band(v: &SessionView, b: &SupersededBand) -> Markup {
    let label = format!("superseded by the resume at offset {}", b.resume_offset);
    let detail = format!(
        "{label}\n{} .. {}\nleft out of the counts; `harnery replay --include-superseded` shows its events",
        since(ms_since(v, b.from_ns)),
        since(ms_since(v, b.to_ns)),
    );
    // A band in the right half hangs its label to the left, inside the axis.
    let late = share(v, b.from_ns) > 50.0;
    html! {
        div.superseded.late[late] tabindex="0" data-resume-offset=(b.resume_offset)
            style={ "left:" (pct(v, b.from_ns)) ";width:" (width(v, b.from_ns, b.to_ns)) }
            title=(Lines(&detail)) {
            span.superseded-label { (label) }
        } "\n"
    }
}

fn lane_section(v: &SessionView, i: usize, lane: &Lane) -> Markup {
    let name = match &lane.agent_id {
        None => "session".to_string(),
        Some(id) => format!(
            "subagent {} {}",
            lane.agent_type.as_deref().unwrap_or("-"),
            id
        ),
    };
    let spans: Vec<&SpanMark> = v.spans.iter().filter(|s| s.lane == i).collect();
    let alive = lane
        .started_ns
        .map(|from| (from, lane.stopped_ns.unwrap_or(v.end_ns)));
    html! {
        section.lane data-lane=(i) aria-label=(name) {
            "\n"
            h2.lane-label {
                (name) " " small { (spans.len()) " span" @if spans.len() != 1 { "s" } }
            } "\n"
            @if let Some((from, to)) = alive {
                div.alive style={ "left:" (pct(v, from)) ";width:" (width(v, from, to)) }
                    aria-hidden="true" {} "\n"
            }
            div.markers style={ "height:" (MARKER_ROW_PX) "px" } {
                "\n" @for m in v.markers.iter().filter(|m| m.lane == i) { (marker(v, m)) }
            } "\n"
            div.rows style={ "height:" (lane.rows.max(1) * ROW_PX) "px" } {
                "\n" @for s in spans { (span(v, s)) }
            } "\n"
        } "\n"
    }
}

fn marker(v: &SessionView, m: &Marker) -> Markup {
    let glyph = match m.kind {
        MarkerKind::Session => "S",
        MarkerKind::Prompt => "P",
        MarkerKind::Subagent => "A",
        MarkerKind::End => "E",
        MarkerKind::Health => "H",
        MarkerKind::Error => "!",
        MarkerKind::Compaction => "C",
        MarkerKind::Steering => "»",
    };
    let detail = format!(
        "{}\n{} at {}\nevent: {}",
        m.text,
        m.event_type,
        since(ms_since(v, m.at_ns)),
        m.event_id
    );
    html! {
        div class={ "marker mk-" (m.kind.as_str()) } tabindex="0" data-event-id=(m.event_id)
            data-event-type=(m.event_type) style={ "left:" (pct(v, m.at_ns)) }
            title=(Lines(&detail)) { (glyph) } "\n"
    }
}

fn span(v: &SessionView, s: &SpanMark) -> Markup {
    let (class, glyph, label) = look(s);
    html! {
        div class={ "span " (class) } tabindex="0" data-span-id=(s.request_event_id)
            data-span-state=(s.state.as_str())
            data-superseded=[s.superseded.then_some("true")]
            style={
                "left:" (pct(v, s.from_ns)) ";width:" (width(v, s.from_ns, s.to_ns))
                ";top:" (s.row * ROW_PX) "px"
            }
            title=(Lines(&span_detail(v, s))) {
            span.glyph { (glyph) } " " (label)
        } "\n"
    }
}

/// A span's classes, glyph and visible label.
fn look(s: &SpanMark) -> (String, &'static str, String) {
    match s.state {
        SpanState::ClosedNative => {
            let (oc, glyph) = match s.outcome.as_deref() {
                Some("success") => ("oc-success", "✓"),
                Some("failure") => ("oc-failure", "✗"),
                _ => ("oc-other", "•"),
            };
            (format!("st-closed_native {oc}"), glyph, s.name.clone())
        }
        SpanState::Recovered if s.upper_bound_ms.is_some() => (
            "st-recovered bounded".into(),
            "?",
            format!("{} recovered · upper bound, not a duration", s.name),
        ),
        SpanState::Recovered => ("st-recovered".into(), "?", format!("{} recovered", s.name)),
        SpanState::Open => ("st-open".into(), "→", format!("{} open", s.name)),
    }
}

/// What hovering or focusing a span says.
fn span_detail(v: &SessionView, s: &SpanMark) -> String {
    let state = match s.state {
        SpanState::ClosedNative => "closed natively",
        SpanState::Recovered => "recovered (derived terminal)",
        SpanState::Open => "open: no completion recorded",
    };
    let mut d = format!("{} {} — {state}", s.kind, s.name);
    let mut line = |k: &str, val: &str| {
        d.push('\n');
        d.push_str(k);
        d.push_str(": ");
        d.push_str(val);
    };
    line("call id", s.tool_call_id.as_deref().unwrap_or("none"));
    if let Some(j) = &s.record {
        if let Some(t) = &j.turn_id {
            line("record turn", t);
        }
        if let Some(c) = j.exit_code {
            line("exit code", &c.to_string());
        }
    }
    line("request event", &s.request_event_id);
    line("outcome", s.outcome.as_deref().unwrap_or("none yet"));
    line("duration", &duration_text(s));
    if let Some(ms) = s.upper_bound_ms {
        line(
            "upper bound",
            &format!("{ms} ms (upper bound, not a duration)"),
        );
    }
    line("recovery reason", s.reason.as_deref().unwrap_or("none"));
    line(
        "confidence",
        s.confidence.map_or("unknown", |c| match c {
            crate::contract::Confidence::High => "high",
            crate::contract::Confidence::Medium => "medium",
            crate::contract::Confidence::Low => "low",
        }),
    );
    line("requested at", &since(ms_since(v, s.from_ns)));
    if let Some(turn) = &s.turn_id {
        line("turn", turn);
    }
    if let Some(input) = &s.input {
        line("input", input);
    }
    d
}

fn duration_text(s: &SpanMark) -> String {
    match (s.state, s.duration_ms) {
        (SpanState::Recovered, _) => "unknown".into(),
        (SpanState::Open, _) => "unknown (still open)".into(),
        (_, Some(ms)) => format!("{ms} ms (reported)"),
        (_, None) if s.reason.is_none() && s.to_ns >= s.from_ns => format!(
            "{} ms between request and completion",
            (s.to_ns - s.from_ns) / 1_000_000
        ),
        (_, None) => "unknown".into(),
    }
}

/// The lines of `harnery show`, as a table under the picture.
fn lines(v: &SessionView) -> Markup {
    let tagged = !v.epochs.is_empty();
    html! {
        details.lines open[v.lines.len() <= 200] {
            summary { "The " (v.lines.len()) " lines of " code { "harnery show" } } "\n"
            table {
                thead { tr {
                    th { "offset" } th { "time" } @if tagged { th { "epoch" } }
                    th { "entry" } th { "agent" }
                } }
                tbody {
                    "\n"
                    @for l in &v.lines {
                        tr.superseded-line[l.superseded] data-steering=[l.steering.as_deref()] {
                            td { (l.offset) } td { (since(l.at_ms)) }
                            @if tagged { td { (l.epoch) } }
                            td { (l.text) @if l.superseded { " · superseded" } }
                            td { (l.agent_id.as_deref().unwrap_or("")) }
                        } "\n"
                    }
                }
            }
        } "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{AdapterId, SessionRef};
    use crate::ledger::{SessionSummary, SpanCounts};

    fn turn(number: usize, tokens: Option<u64>) -> TurnBand {
        TurnBand {
            turn_id: format!("t{number}"),
            number,
            from_ns: 0,
            to_ns: 1_000_000_000,
            completed: Some("stop".into()),
            prompt: None,
            tokens,
        }
    }

    fn recovered(bound: Option<u64>) -> SpanMark {
        SpanMark {
            request_event_id: "ev_r".into(),
            kind: "tool".into(),
            name: "Read".into(),
            tool_call_id: Some("call-1".into()),
            turn_id: Some("t1".into()),
            lane: 0,
            row: 0,
            state: SpanState::Recovered,
            outcome: Some("unknown".into()),
            reason: Some("completion_not_observed_before_turn_end".into()),
            from_ns: 100_000_000,
            to_ns: 100_000_000 + bound.unwrap_or(0) as i64 * 1_000_000,
            duration_ms: None,
            upper_bound_ms: bound,
            confidence: Some(crate::contract::Confidence::Medium),
            input: None,
            record: None,
            superseded: false,
        }
    }

    fn view(turns: Vec<TurnBand>, spans: Vec<SpanMark>) -> SessionView {
        SessionView {
            summary: SessionSummary {
                session: SessionRef {
                    adapter: AdapterId::ClaudeCode,
                    session_id: "s".into(),
                },
                first_unix_ns: 0,
                last_unix_ns: 2_000_000_000,
                events: 4,
                turns: turns.len() as u64,
                spans: SpanCounts::default(),
                title: None,
                project: None,
                cwd: None,
            },
            epochs: Vec::new(),
            start_ns: 0,
            end_ns: 2_000_000_000,
            lanes: vec![Lane {
                agent_id: None,
                agent_type: None,
                started_ns: None,
                stopped_ns: None,
                rows: 1,
            }],
            turns,
            spans,
            markers: Vec::new(),
            boundaries: Vec::new(),
            lines: Vec::new(),
            superseded: Vec::new(),
        }
    }

    #[test]
    fn a_turn_shows_tokens_only_where_they_were_recorded() {
        let html = render(&view(vec![turn(1, Some(1234)), turn(2, None)], Vec::new()));
        assert!(html.contains(">turn 1 · 1234 tokens</span>"), "{html}");
        assert!(html.contains(">turn 2</span>"));
        assert!(html.contains("tokens: not recorded"));
    }

    #[test]
    fn a_recovered_span_has_no_duration_and_its_bound_says_what_it_is() {
        let html = render(&view(Vec::new(), vec![recovered(Some(40))]));
        assert!(html.contains("data-span-state=\"recovered\""));
        assert!(html.contains("class=\"span st-recovered bounded\""));
        assert!(html.contains("Read recovered · upper bound, not a duration"));
        assert!(
            html.contains("duration: unknown&#10;upper bound: 40 ms (upper bound, not a duration)")
        );
        assert!(html.contains("confidence: medium"));
        let bare = render(&view(Vec::new(), vec![recovered(None)]));
        assert!(bare.contains("class=\"span st-recovered\""));
        assert!(!bare.contains("upper bound:"));
    }
}
