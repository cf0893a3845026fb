//! One session's page: a header, a legend, the time axis with turns as
//! bands, one lane per agent with its markers and span marks, a details
//! panel, and the lines `harnery show` prints.
//!
//! Positions are percentages of the time axis, so zooming only widens the
//! axis (the text keeps its size) and the page needs no script to draw.
//! Each span's element carries `data-span-id` (its request event id) and
//! `data-span-state`; its state is also in a glyph and a pattern, never in
//! colour alone. Every item is focusable, and its details are its title.

use std::fmt::Write;

use super::html::{attr, document, duration, since, text, tick_step};
use super::model::{
    EDGE_PERCENT, Lane, MIN_WIDTH_PERCENT, Marker, MarkerKind, SessionView, SpanMark, TurnBand,
};
use crate::ledger::{SpanState, format_time};

/// The script: details on hover and focus, and zoom.
const SCRIPT: &str = include_str!("page.js");

/// Pixel heights the stylesheet and the layout agree on.
const ROW_PX: usize = 20;
const MARKER_ROW_PX: usize = 22;

/// The most ticks the axis gets.
const MAX_TICKS: u64 = 12;

/// The page of one session.
pub fn render(v: &SessionView) -> String {
    let mut body = String::with_capacity(512 + v.spans.len() * 600 + v.lines.len() * 160);
    header(&mut body, v);
    legend(&mut body);
    controls(&mut body);
    let _ = writeln!(
        body,
        "<style>.span {{ min-width: {MIN_WIDTH_PERCENT}%; }}</style>"
    );
    body.push_str("<div class=\"scroll\"><div class=\"track\" id=\"track\">\n");
    axis(&mut body, v);
    for (i, t) in v.turns.iter().enumerate() {
        turn(&mut body, v, t, i);
    }
    for b in &v.boundaries {
        let _ = writeln!(
            body,
            "<div class=\"boundary\" tabindex=\"0\" style=\"left:{}\" title=\"{}\"></div>",
            pct(v, b.at_ns),
            attr(&format!("epoch boundary: {} → {}", b.from, b.to))
        );
    }
    for (i, lane) in v.lanes.iter().enumerate() {
        lane_section(&mut body, v, i, lane);
    }
    body.push_str("</div></div>\n");
    lines(&mut body, v);
    let title = format!(
        "harnery view: {} {}",
        v.summary.session.adapter.as_str(),
        v.summary.session.session_id
    );
    document(&title, &body, Some(SCRIPT))
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

fn header(out: &mut String, v: &SessionView) {
    let s = &v.summary;
    let _ = writeln!(
        out,
        "<header><h1>{} <code>{}</code></h1>\n<p>{} .. {} · {} events · {} turns · spans: \
         {} closed natively, {} recovered, {} open{}</p></header>",
        text(s.session.adapter.as_str()),
        text(&s.session.session_id),
        format_time(s.first_unix_ns),
        format_time(s.last_unix_ns),
        s.events,
        s.turns,
        s.spans.closed_native,
        s.spans.recovered,
        s.spans.open,
        if v.epochs.is_empty() {
            String::new()
        } else {
            text(&format!(" · epochs: {}", v.epochs.join(" → ")))
        }
    );
}

fn legend(out: &mut String) {
    out.push_str(
        "<ul class=\"legend\" aria-label=\"legend\">\
         <li><span class=\"key span st-closed_native oc-success\">✓</span> closed natively, success</li>\
         <li><span class=\"key span st-closed_native oc-failure\">✗</span> closed natively, failure</li>\
         <li><span class=\"key span st-closed_native oc-other\">•</span> closed natively, other outcome</li>\
         <li><span class=\"key span st-recovered\">?</span> recovered: outcome and duration unknown</li>\
         <li><span class=\"key span st-recovered bounded\">?</span> hatched: upper bound, not a duration</li>\
         <li><span class=\"key span st-open\">→</span> open: no completion yet, drawn to the last event</li>\
         <li><span class=\"key marker\">P</span> markers: S session, P prompt, A subagent, \
         E end, H health, ! error, C compaction</li>\
         </ul>\n",
    );
}

fn controls(out: &mut String) {
    out.push_str(
        "<div class=\"controls\"><span>zoom</span> \
         <button type=\"button\" data-zoom=\"0.5\" aria-label=\"zoom out\">−</button> \
         <button type=\"button\" data-zoom=\"2\" aria-label=\"zoom in\">+</button> \
         <button type=\"button\" data-zoom=\"fit\">fit</button> \
         <span id=\"zoom-level\">1×</span> \
         <span class=\"hint\">(keys + − 0 anywhere on the page)</span></div>\n\
         <div id=\"detail\" role=\"status\" aria-live=\"polite\">Hover over or focus \
         (Tab) any bar, marker or turn for its details.</div>\n",
    );
}

fn axis(out: &mut String, v: &SessionView) {
    let total = u64::try_from(ms_since(v, v.end_ns)).unwrap_or(0);
    let step = tick_step(total, MAX_TICKS);
    out.push_str("<div class=\"axis\" aria-hidden=\"true\">");
    let mut at = 0u64;
    while at <= total {
        let ns = v.start_ns + (at as i64) * 1_000_000;
        let _ = write!(
            out,
            "<span class=\"tick\" style=\"left:{}\">{}</span>",
            pct(v, ns),
            if at == 0 {
                "0".to_string()
            } else {
                format!("+{}", duration(at))
            }
        );
        at += step;
    }
    out.push_str("</div>\n");
}

fn turn(out: &mut String, v: &SessionView, t: &TurnBand, i: usize) {
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
    let _ = writeln!(
        out,
        "<div class=\"turn{}\" tabindex=\"0\" data-turn-id=\"{}\" style=\"left:{};width:{}\" \
         title=\"{}\"><span class=\"turn-label\">{}</span></div>",
        if i % 2 == 1 { " odd" } else { "" },
        attr(&t.turn_id),
        pct(v, t.from_ns),
        width(v, t.from_ns, t.to_ns),
        attr(&detail),
        text(&label)
    );
}

fn lane_section(out: &mut String, v: &SessionView, i: usize, lane: &Lane) {
    let name = match &lane.agent_id {
        None => "session".to_string(),
        Some(id) => format!(
            "subagent {} {}",
            lane.agent_type.as_deref().unwrap_or("-"),
            id
        ),
    };
    let spans: Vec<&SpanMark> = v.spans.iter().filter(|s| s.lane == i).collect();
    let _ = writeln!(
        out,
        "<section class=\"lane\" data-lane=\"{i}\" aria-label=\"{}\">\n\
         <h2 class=\"lane-label\">{} <small>{} span{}</small></h2>",
        attr(&name),
        text(&name),
        spans.len(),
        if spans.len() == 1 { "" } else { "s" }
    );
    if let Some(from) = lane.started_ns {
        let to = lane.stopped_ns.unwrap_or(v.end_ns);
        let _ = writeln!(
            out,
            "<div class=\"alive\" style=\"left:{};width:{}\" aria-hidden=\"true\"></div>",
            pct(v, from),
            width(v, from, to)
        );
    }
    let _ = writeln!(
        out,
        "<div class=\"markers\" style=\"height:{MARKER_ROW_PX}px\">"
    );
    for m in v.markers.iter().filter(|m| m.lane == i) {
        marker(out, v, m);
    }
    out.push_str("</div>\n");
    let _ = writeln!(
        out,
        "<div class=\"rows\" style=\"height:{}px\">",
        lane.rows.max(1) * ROW_PX
    );
    for s in spans {
        span(out, v, s);
    }
    out.push_str("</div>\n</section>\n");
}

fn marker(out: &mut String, v: &SessionView, m: &Marker) {
    let glyph = match m.kind {
        MarkerKind::Session => "S",
        MarkerKind::Prompt => "P",
        MarkerKind::Subagent => "A",
        MarkerKind::End => "E",
        MarkerKind::Health => "H",
        MarkerKind::Error => "!",
        MarkerKind::Compaction => "C",
    };
    let detail = format!(
        "{}\n{} at {}\nevent: {}",
        m.text,
        m.event_type,
        since(ms_since(v, m.at_ns)),
        m.event_id
    );
    let _ = writeln!(
        out,
        "<div class=\"marker mk-{}\" tabindex=\"0\" data-event-id=\"{}\" data-event-type=\"{}\" \
         style=\"left:{}\" title=\"{}\">{glyph}</div>",
        m.kind.as_str(),
        attr(&m.event_id),
        attr(&m.event_type),
        pct(v, m.at_ns),
        attr(&detail)
    );
}

fn span(out: &mut String, v: &SessionView, s: &SpanMark) {
    let (class, glyph, label) = look(s);
    let _ = writeln!(
        out,
        "<div class=\"span {class}\" tabindex=\"0\" data-span-id=\"{}\" data-span-state=\"{}\" \
         style=\"left:{};width:{};top:{}px\" title=\"{}\">\
         <span class=\"glyph\">{glyph}</span> {}</div>",
        attr(&s.request_event_id),
        s.state.as_str(),
        pct(v, s.from_ns),
        width(v, s.from_ns, s.to_ns),
        s.row * ROW_PX,
        attr(&span_detail(v, s)),
        text(&label)
    );
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
fn lines(out: &mut String, v: &SessionView) {
    let open = if v.lines.len() <= 200 { " open" } else { "" };
    let _ = writeln!(
        out,
        "<details class=\"lines\"{open}><summary>The {} lines of <code>harnery show</code></summary>\n\
         <table><thead><tr><th>offset</th><th>time</th>{}<th>entry</th><th>agent</th></tr></thead><tbody>",
        v.lines.len(),
        if v.epochs.is_empty() {
            ""
        } else {
            "<th>epoch</th>"
        }
    );
    for l in &v.lines {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td></tr>",
            l.offset,
            since(l.at_ms),
            if v.epochs.is_empty() {
                String::new()
            } else {
                format!("<td>{}</td>", text(&l.epoch))
            },
            text(&l.text),
            text(l.agent_id.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody></table></details>\n");
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
