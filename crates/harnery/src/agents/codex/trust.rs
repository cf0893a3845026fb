//! Hook trust: Codex (0.169.0) runs no hook from `hooks.json` until the
//! user's `config.toml` trusts it, and says nothing when it skips one. So
//! `harnery install codex` writes the trust of each of harnery's hooks the
//! way Codex's own `/hooks` review does, and `uninstall` takes it away.
//!
//! One table per hook, in the user's `$CODEX_HOME/config.toml` (a
//! project's `.codex/config.toml` is not read for trust):
//!
//! ```toml
//! [hooks.state."/home/u/.codex/hooks.json:pre_tool_use:0:0"]
//! trusted_hash = "sha256:<hex>"
//! ```
//!
//! - the key is the absolute path Codex gives `hooks.json`, the event in
//!   snake case, the matcher group's index and the handler's index in it;
//! - the hash is SHA-256 over the compact JSON, keys sorted, of the hook's
//!   normalized identity `{"event_name", "hooks": [{"async", "command",
//!   "timeout", "type": "command"}]}` (with `matcher` and `statusMessage`
//!   only when set), `timeout` being the one Codex applies: 600 s unless
//!   given, at least 1, and for SessionEnd 1 s unless given and at most 3.
//!
//! Both were checked against Codex's own `hooks/list` (`codex app-server`);
//! the tests pin hashes it reported. The key is positional, so a hand edit
//! that moves harnery's group makes Codex skip it until install runs again.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table, TableLike};

/// A hook's trust: its key and the hash Codex expects under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trust {
    pub key: String,
    pub hash: String,
}

/// The event's name in a trust key (`PreToolUse` -> `pre_tool_use`).
pub(crate) fn snake(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The timeout Codex applies to a hook of `event` given `timeout` seconds.
pub(crate) fn effective_timeout(event: &str, timeout: Option<u64>) -> u64 {
    match event {
        "SessionEnd" => timeout.unwrap_or(1).clamp(1, 3),
        _ => timeout.unwrap_or(600).max(1),
    }
}

/// One command handler as `hooks.json` holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handler<'a> {
    pub event: &'a str,
    pub matcher: Option<&'a str>,
    pub command: &'a str,
    pub timeout: Option<u64>,
    pub is_async: bool,
    pub status_message: Option<&'a str>,
}

/// The hash Codex computes for `handler` (see the module doc). The JSON is
/// written out in its one key order, never left to a map's.
pub(crate) fn hash(handler: &Handler) -> String {
    let text = |s: &str| Value::String(s.to_owned()).to_string();
    let mut entry = format!(
        "{{\"async\":{},\"command\":{}",
        handler.is_async,
        text(handler.command)
    );
    if let Some(message) = handler.status_message {
        entry.push_str(&format!(",\"statusMessage\":{}", text(message)));
    }
    let timeout = effective_timeout(handler.event, handler.timeout);
    entry.push_str(&format!(",\"timeout\":{timeout},\"type\":\"command\"}}"));
    let mut identity = format!(
        "{{\"event_name\":{},\"hooks\":[{entry}]",
        text(&snake(handler.event))
    );
    if let Some(matcher) = handler.matcher {
        identity.push_str(&format!(",\"matcher\":{}", text(matcher)));
    }
    identity.push('}');
    let digest = ring::digest::digest(&ring::digest::SHA256, identity.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The trust of every harnery handler (`is_ours` tells its command) in
/// the `hooks.json` text `hooks`, keyed under `named` (the path Codex
/// gives that file). A text that is not a JSON object of event lists has
/// none.
pub(crate) fn of_harnery_hooks(named: &Path, hooks: &str, is_ours: fn(&str) -> bool) -> Vec<Trust> {
    let Ok(doc) = serde_json::from_str::<Value>(hooks) else {
        return Vec::new();
    };
    let Some(events) = doc.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, entry) in handlers.into_iter().flatten().enumerate() {
                let Some(handler) = handler(event, group, entry) else {
                    continue;
                };
                if !is_ours(handler.command) {
                    continue;
                }
                out.push(Trust {
                    key: format!("{}:{}:{g}:{h}", named.display(), snake(event)),
                    hash: hash(&handler),
                });
            }
        }
    }
    out
}

fn handler<'a>(event: &'a str, group: &'a Value, entry: &'a Value) -> Option<Handler<'a>> {
    (entry.get("type").and_then(Value::as_str) == Some("command")).then_some(())?;
    Some(Handler {
        event,
        matcher: group.get("matcher").and_then(Value::as_str),
        command: entry.get("command").and_then(Value::as_str)?,
        timeout: entry.get("timeout").and_then(Value::as_u64),
        is_async: entry.get("async").and_then(Value::as_bool).unwrap_or(false),
        status_message: entry.get("statusMessage").and_then(Value::as_str),
    })
}

/// The path Codex gives the `hooks.json` at `file`: the user's own under
/// an unset `CODEX_HOME` as it stands (`$HOME/.codex/hooks.json`), any
/// other with its directory's symlinks resolved (Codex resolves
/// `CODEX_HOME`, and a project's folder comes from its working directory).
pub(crate) fn named_path(file: &Path, default_home: &Path, moved: bool) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("/"));
    if !moved && dir == default_home {
        return file.to_path_buf();
    }
    match std::fs::canonicalize(dir) {
        Ok(real) => real.join(file.file_name().unwrap_or_default()),
        Err(_) => file.to_path_buf(),
    }
}

/// `config` (the text of `config.toml`, `None` when there is none) with
/// the `stale` trust taken away where it still holds harnery's hash, and
/// the `fresh` trust set; the rest of the file as it was. `Ok(None)`: no
/// file before and none needed.
pub(crate) fn updated_config(
    config: Option<&str>,
    stale: &[Trust],
    fresh: &[Trust],
) -> Result<Option<String>, String> {
    let mut doc: DocumentMut = config
        .unwrap_or("")
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("not valid TOML: {}", e.message()))?;
    let state = state_table(&mut doc)?;
    for old in stale.iter().filter(|old| !fresh.contains(old)) {
        let held = state
            .get(&old.key)
            .and_then(|t| t.get("trusted_hash"))
            .and_then(Item::as_str);
        if held == Some(old.hash.as_str()) {
            remove_trust(state, &old.key);
        }
    }
    for new in fresh {
        let held = state.get(&new.key).and_then(|t| t.get("trusted_hash"));
        if held.and_then(Item::as_str) == Some(new.hash.as_str()) {
            continue;
        }
        let table = state
            .entry(&new.key)
            .or_insert_with(|| Item::Table(Table::new()));
        let Some(table) = table.as_table_like_mut() else {
            return Err(format!("`hooks.state.{:?}` is not a table", new.key));
        };
        table.insert("trusted_hash", toml_edit::value(new.hash.as_str()));
    }
    prune(&mut doc);
    let text = doc.to_string();
    Ok((config.is_some() || !text.trim().is_empty()).then_some(text))
}

/// `hooks.state`, made when missing (implicit, so that only the hook
/// tables show).
fn state_table(doc: &mut DocumentMut) -> Result<&mut dyn TableLike, String> {
    let hooks = doc.entry("hooks").or_insert_with(implicit_table);
    let hooks = hooks
        .as_table_like_mut()
        .ok_or("`hooks` in config.toml is not a table")?;
    let state = hooks.entry("state").or_insert_with(implicit_table);
    state
        .as_table_like_mut()
        .ok_or_else(|| "`hooks.state` in config.toml is not a table".to_string())
}

fn implicit_table() -> Item {
    let mut table = Table::new();
    table.set_implicit(true);
    Item::Table(table)
}

/// Take harnery's trust away; a table that holds more (the user's
/// `enabled`) keeps the rest.
fn remove_trust(state: &mut dyn TableLike, key: &str) {
    let Some(table) = state.get_mut(key).and_then(Item::as_table_like_mut) else {
        return;
    };
    table.remove("trusted_hash");
    if table.is_empty() {
        state.remove(key);
    }
}

/// Drop `hooks.state` and `hooks` where harnery emptied or made them.
fn prune(doc: &mut DocumentMut) {
    let empty = |item: Option<&Item>| {
        item.and_then(Item::as_table_like)
            .is_some_and(|t| t.is_empty())
    };
    if let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_like_mut)
        && empty(hooks.get("state"))
    {
        hooks.remove("state");
    }
    if empty(doc.get("hooks")) {
        doc.remove("hooks");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handler<'a>(event: &'a str, command: &'a str, timeout: Option<u64>) -> Handler<'a> {
        Handler {
            event,
            matcher: None,
            command,
            timeout,
            is_async: false,
            status_message: None,
        }
    }

    /// Hashes Codex 0.169.0's `hooks/list` reported (`currentHash`) for
    /// the capture hooks of the probe, one per timeout rule.
    #[test]
    fn hashes_are_the_ones_codex_reports() {
        let dir = "CAPTURE_FILE=/work/wt/cap-codex/probe1/hooks.jsonl /work/wt/cap-codex/capture_hook.py codex";
        let pre = format!("{dir} PreToolUse");
        assert_eq!(
            hash(&handler("PreToolUse", &pre, None)),
            "sha256:d2eff590536c9241911f76afd87b135cafe486843e06793c989a1cd30948ad10"
        );
        let end = format!("{dir} SessionEnd");
        assert_eq!(
            hash(&handler("SessionEnd", &end, None)),
            "sha256:a42de7fda4eddc6d9ad65a05ab10db9b99c3680b6404dd4d628a7e9c1f222b91"
        );
        assert_eq!(
            hash(&handler("SessionEnd", &end, Some(3))),
            hash(&handler("SessionEnd", &end, Some(10))),
            "a SessionEnd timeout over 3 s is Codex's 3"
        );
    }

    #[test]
    fn events_are_named_in_snake_case() {
        assert_eq!(snake("PreToolUse"), "pre_tool_use");
        assert_eq!(snake("SessionEnd"), "session_end");
        assert_eq!(snake("Stop"), "stop");
        assert_eq!(snake("PreModelRequest"), "pre_model_request");
    }

    fn trust(key: &str, hash: &str) -> Trust {
        Trust {
            key: key.into(),
            hash: hash.into(),
        }
    }

    #[test]
    fn trust_is_set_and_taken_away_leaving_the_rest() {
        let config = "model = \"m\"\n\n[hooks.state.\"/u/hooks.json:stop:0:0\"]\nenabled = false\n";
        let ours = [
            trust("/u/hooks.json:stop:0:0", "sha256:aa"),
            trust("/u/hooks.json:pre_tool_use:1:0", "sha256:bb"),
        ];
        let installed = updated_config(Some(config), &[], &ours).unwrap().unwrap();
        assert!(installed.starts_with("model = \"m\"\n"));
        let doc: toml::Table = toml::from_str(&installed).unwrap();
        let state = &doc["hooks"]["state"];
        assert_eq!(
            state["/u/hooks.json:stop:0:0"]["enabled"].as_bool(),
            Some(false)
        );
        assert_eq!(
            state["/u/hooks.json:stop:0:0"]["trusted_hash"].as_str(),
            Some("sha256:aa")
        );
        assert_eq!(
            state["/u/hooks.json:pre_tool_use:1:0"]["trusted_hash"].as_str(),
            Some("sha256:bb")
        );
        assert_eq!(
            updated_config(Some(&installed), &ours, &ours)
                .unwrap()
                .unwrap(),
            installed,
            "installing twice is installing once"
        );
        let removed = updated_config(Some(&installed), &ours, &[])
            .unwrap()
            .unwrap();
        assert_eq!(
            removed, config,
            "uninstall leaves the user's own state as it was"
        );
    }

    #[test]
    fn trust_the_user_changed_is_not_taken_away() {
        let config = "[hooks.state.\"/u/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:theirs\"\n";
        let ours = [trust("/u/hooks.json:stop:0:0", "sha256:ours")];
        assert_eq!(
            updated_config(Some(config), &ours, &[]).unwrap().as_deref(),
            Some(config)
        );
    }

    #[test]
    fn a_config_that_is_not_toml_is_refused() {
        let err = updated_config(Some("model = \n"), &[], &[trust("k", "h")]).unwrap_err();
        assert!(err.starts_with("not valid TOML"), "{err}");
        let err = updated_config(Some("hooks = 3\n"), &[], &[trust("k", "h")]).unwrap_err();
        assert!(err.contains("`hooks`"), "{err}");
    }

    #[test]
    fn harnery_hooks_are_found_by_their_binary() {
        let hooks = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/mine"}]},
            {"hooks": [{"type": "command", "command": "'/opt/harnery-hook' codex Stop", "timeout": 10}]}]}}"#;
        let ours = |cmd: &str| cmd.contains("harnery-hook");
        let found = of_harnery_hooks(Path::new("/u/.codex/hooks.json"), hooks, ours);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].key, "/u/.codex/hooks.json:stop:1:0");
        let want = hash(&handler("Stop", "'/opt/harnery-hook' codex Stop", Some(10)));
        assert_eq!(found[0].hash, want);
        assert!(of_harnery_hooks(Path::new("/x"), "not json", ours).is_empty());
    }
}
