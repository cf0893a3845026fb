//! Plain-text rendering of packets and resume assessments, for humans and for
//! pasting into a fresh agent session. The JSON form is the serde form of the
//! same structs.

use std::fmt::Write;

use super::packet::{IndexStatus, Packet, PacketEntry, Part};
use super::policy::ResumeAssessment;

/// The packet as text.
pub fn packet_text(p: &Packet) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Recovery packet: {} session {}",
        p.agent, p.session_id
    );
    latest_section(&mut out, p);
    part_section(
        &mut out,
        "1. Direct user direction (raw stream)",
        &p.direction,
    );
    part_section(&mut out, "2. Indexed conversation", &p.conversation);
    part_section(
        &mut out,
        "3. Agent steering (sourced messages, not the user)",
        &p.steering,
    );
    part_section(
        &mut out,
        "4. Recent activity (raw stream)",
        &p.recent_activity,
    );
    stream_section(&mut out, p);
    if !p.warnings.is_empty() {
        let _ = writeln!(out, "\n## Warnings");
        for w in &p.warnings {
            let _ = writeln!(out, "- {w}");
        }
    }
    let _ = writeln!(out, "\n## Resume");
    resume_lines(&mut out, &p.resume);
    out
}

fn latest_section(out: &mut String, p: &Packet) {
    let _ = writeln!(out, "\n## Latest direction");
    let Some(l) = &p.latest_direction else {
        let _ = writeln!(out, "(no direct user message found)");
        return;
    };
    let status = match l.index_status {
        IndexStatus::Indexed => "indexed",
        IndexStatus::NotIndexed => "NOT INDEXED: exists only in the raw stream",
        IndexStatus::Unknown => "index status unknown",
        IndexStatus::NotApplicable => "raw transcript",
    };
    let _ = writeln!(
        out,
        "[{}] ({status}{})",
        l.timestamp.as_deref().unwrap_or("no timestamp"),
        explained(&l.explanation)
    );
    let _ = writeln!(out, "{}", quote(&l.text));
    if l.text.len() < l.text_bytes {
        let _ = writeln!(
            out,
            "> [... cut: {} of {} bytes shown]",
            l.text.len(),
            l.text_bytes
        );
    }
}

fn explained(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("; {text}")
    }
}

fn part_section(out: &mut String, title: &str, part: &Part) {
    let _ = writeln!(out, "\n## {title}");
    let _ = writeln!(out, "Source: {}", part.source);
    for e in &part.entries {
        entry_lines(out, e);
    }
    if part.entries.is_empty() {
        let _ = writeln!(out, "(none)");
    }
    let t = &part.truncation;
    if t.truncated {
        let _ = writeln!(
            out,
            "[truncated: {} of {} shown; {} left out by count, {} by the byte budget; {} cut, {} bytes cut]",
            t.shown, t.total, t.omitted_by_count, t.omitted_by_bytes, t.cut_entries, t.bytes_cut
        );
    }
}

fn entry_lines(out: &mut String, pe: &PacketEntry) {
    let e = &pe.entry;
    let mut head = format!("- {}", e.kind.name());
    if let Some(tool) = &e.tool {
        let _ = write!(head, " {tool}");
    }
    if let Some(ok) = e.ok {
        head.push_str(if ok { " ok" } else { " FAILED" });
    }
    if let Some(ts) = &e.timestamp {
        let _ = write!(head, " [{ts}]");
    }
    if let Some(src) = &e.source {
        let _ = write!(head, " source={src}");
    }
    if let Some(turn) = pe.turn_index {
        let _ = write!(head, " turn={turn}");
    }
    if let Some(status) = pe.index_status {
        let name = match status {
            IndexStatus::Indexed => "indexed",
            IndexStatus::NotIndexed => "not-indexed",
            IndexStatus::Unknown => "index-unknown",
            IndexStatus::NotApplicable => "",
        };
        if !name.is_empty() {
            let _ = write!(head, " ({name})");
        }
    }
    let _ = writeln!(out, "{head}");
    let _ = writeln!(out, "{}", indent(&e.text));
    if e.is_cut() {
        let _ = writeln!(
            out,
            "  [... cut: {} of {} bytes shown]",
            e.text.len(),
            e.text_bytes
        );
    }
}

fn quote(text: &str) -> String {
    text.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn indent(text: &str) -> String {
    if text.is_empty() {
        return "  (empty)".into();
    }
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn stream_section(out: &mut String, p: &Packet) {
    let s = &p.stream;
    let _ = writeln!(out, "\n## Stream");
    let _ = writeln!(
        out,
        "{}: {} bytes at scan start, {} scanned, {} records",
        s.path, s.bytes_at_scan_start, s.bytes_scanned, s.records
    );
    let k = &s.skipped;
    let _ = writeln!(
        out,
        "skipped: oversized {}, torn {}, nul-run {}, invalid {}, unterminated tail {}; records run together {}",
        k.oversized, k.torn, k.nul_run, k.invalid, k.unterminated_tail, k.concatenated
    );
    let i = &p.index;
    let via = i
        .opened_via
        .map(|v| format!(" via {v:?}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "index: {}{} ({} turns){}",
        i.status,
        via,
        i.turns,
        i.path
            .as_deref()
            .map(|p| format!(" {p}"))
            .unwrap_or_default()
    );
}

/// The resume assessment as text.
pub fn resume_text(a: &ResumeAssessment) -> String {
    let mut out = String::new();
    resume_lines(&mut out, a);
    out
}

fn resume_lines(out: &mut String, a: &ResumeAssessment) {
    let version = a.selected.version.as_deref().unwrap_or("unknown");
    let _ = writeln!(out, "agent: {}", a.agent);
    if a.agent == "copilot" {
        let _ = writeln!(
            out,
            "copilot version: {version} (chosen by {})",
            a.selected.chosen_by
        );
        for i in &a.installed {
            let _ = writeln!(
                out,
                "  found {:?} {} at {}{}",
                i.place,
                i.version.as_deref().unwrap_or("?"),
                i.dir.display(),
                if i.changelog.is_some() {
                    " (with changelog.json)"
                } else {
                    ""
                }
            );
        }
        let log = a
            .changelog
            .as_ref()
            .map_or("none found".to_string(), |p| p.display().to_string());
        let _ = writeln!(out, "changelog: {log}");
        if let Some(e) = &a.deciding_entry {
            let _ = writeln!(
                out,
                "deciding entry: {} ({}): {:?}",
                e.version, e.kind, e.description
            );
        }
    }
    let _ = writeln!(out, "policy: {}: {}", a.policy.name(), a.reason);
    if let Some(s) = &a.stream {
        let rel = if s.over_ceiling { "OVER" } else { "within" };
        let _ = writeln!(
            out,
            "stream: {} bytes, {} UTF-16 chars ({}), {rel} the legacy ceiling of {} chars",
            s.bytes, s.chars, s.chars_counted, s.ceiling
        );
    }
    if let Some(cmd) = &a.command {
        let _ = writeln!(out, "run: {cmd}");
    }
}
