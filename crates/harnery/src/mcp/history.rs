//! `file_history`: the tool calls whose input names a path, found through
//! the search index (their `tool-input` text), grouped by session.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::budget::{Budget, Page};
use super::find::search_error;
use super::{Answer, CallError, epoch, instant, open};
use crate::home::Home;
use crate::search::{Hit, Kind, Query, Sort};

/// Tool calls looked at, at most (newest first).
const MAX_CALLS: usize = 500;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileHistoryArgs {
    /// The path, or a fragment of it found anywhere in a tool's input
    /// (src/main.rs, README.md); 3 characters at least.
    pub path: String,
    /// Only sessions of this agent.
    pub agent: Option<String>,
    /// Only calls at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Skip this many calls first (newest first; to page on).
    #[serde(default)]
    pub offset: usize,
    /// At most this many calls (default 50, at most 500).
    pub limit: Option<usize>,
    /// Which ledger epoch: live (the default), all, or a genesis id.
    pub epoch: Option<String>,
}

pub(super) fn file_history(
    home: &Home,
    b: &Budget,
    a: &FileHistoryArgs,
) -> Result<Answer, CallError> {
    let path = a.path.trim();
    if path.contains('"') {
        return Err(CallError::BadArguments(
            "path: a path with a double quote in it cannot be looked for".into(),
        ));
    }
    if path.chars().count() < 3 {
        return Err(CallError::BadArguments(format!(
            "path: {path:?} is too short: give 3 characters at least"
        )));
    }
    let limit = a.limit.unwrap_or(50).clamp(1, MAX_CALLS);
    let q = Query {
        text: format!("\"{path}\""),
        session: None,
        adapter: a.agent.as_deref().map(super::sessions::agent).transpose()?,
        since_unix_ns: instant("since", a.since.as_deref())?,
        until_unix_ns: None,
        kinds: vec![Kind::ToolInput],
        tool: None,
        failed: false,
        epoch: epoch(a.epoch.as_deref())?,
        limit: a.offset + limit,
        sort: Sort::Time,
    };
    let epochs = open(home, &q.epoch)?;
    let hits = crate::search::search_epochs(home, &epochs, &q).map_err(search_error)?;
    let asked = hits.len();
    // Sessions in the order of their newest call, each with its calls.
    let mut order: Vec<String> = Vec::new();
    let mut calls: BTreeMap<String, Vec<&Hit>> = BTreeMap::new();
    for hit in hits.iter().skip(a.offset) {
        let key = format!("{}/{}", hit.session.adapter, hit.session.session_id);
        if !calls.contains_key(&key) {
            order.push(key.clone());
        }
        calls.entry(key).or_default().push(hit);
    }
    let shown_path = b.clip(path, 200);
    let head = format!(
        "file {shown_path:?}: tool calls whose input names it, newest first, by session \
         (read: the tool only looked; changed: it wrote or edited; other: a command or a tool that may have done either)"
    );
    let mut page = Page::new(head);
    let mut shown = 0;
    'sessions: for key in &order {
        for hit in &calls[key] {
            let access = access(hit.tool.as_deref().unwrap_or(""));
            let tool = b.clip(hit.tool.as_deref().unwrap_or("-"), 80);
            let outcome = hit.outcome.as_deref().unwrap_or("-");
            let line = format!(
                "- {key} @{} {} {tool} ({access}, {outcome}): {}",
                hit.offset,
                hit.time,
                b.clip(&hit.snippet, 300).replace('\n', " ")
            );
            let item = json!({
                "session": key,
                "offset": hit.offset,
                "time": hit.time,
                "tool": tool,
                "access": access,
                "outcome": hit.outcome,
                "input": b.clip(&hit.snippet, 300),
            });
            if !page.push(line, item) {
                break 'sessions;
            }
            shown += 1;
        }
    }
    let next = a.offset + shown;
    let more = (page.full || asked == a.offset + limit)
        .then(|| format!("More calls may follow: call file_history again with offset {next}."));
    let sessions = order.len();
    let mut answer = page.finish(
        "calls",
        more,
        json!({"path": &shown_path, "offset": a.offset, "sessions": sessions}),
    );
    if shown == 0 {
        answer.text = format!("file {shown_path:?}: no tool call's input names it");
    }
    Ok(answer)
}

/// Whether a tool (by the names the agents give their file tools) reads
/// or changes what it names.
pub(super) fn access(tool: &str) -> &'static str {
    let t = tool.to_ascii_lowercase();
    const CHANGES: [&str; 9] = [
        "write",
        "edit",
        "multiedit",
        "create",
        "str_replace",
        "apply_patch",
        "notebookedit",
        "replace",
        "delete",
    ];
    const READS: [&str; 7] = ["read", "view", "grep", "glob", "ls", "search", "cat"];
    if CHANGES.iter().any(|c| t.contains(c)) {
        "changed"
    } else if READS.iter().any(|r| t.contains(r)) {
        "read"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::access;

    #[test]
    fn file_tools_read_or_change_and_shells_are_other() {
        assert_eq!(access("Read"), "read");
        assert_eq!(access("Edit"), "changed");
        assert_eq!(access("str_replace_editor"), "changed");
        assert_eq!(access("write_file"), "changed");
        assert_eq!(access("Bash"), "other");
    }
}
