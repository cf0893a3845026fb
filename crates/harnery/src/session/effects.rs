//! A checkpoint's effect ledger, as the producer gathers it: what the
//! session did that a restore cannot take back. A tool or command span
//! becomes an effect when it closes natively (tool, call id, outcome; file
//! paths for file tools; command and exit code for shells and `harnery
//! exec`); a span recovered by a derived terminal is no effect. The
//! effects gathered since the previous checkpoint go into the next one.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agents::wire::optional_str;
use crate::contract::{
    Attestation, CommandCompleted, Effect, Event, OffsetRange, Payload, ToolCompleted,
};

/// A span still open, as an effect in waiting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct OpenEffect {
    /// The offset of the span's request.
    pub offset: u64,
    pub effect: Effect,
}

/// Effects closed since the previous checkpoint, and spans that would
/// become effects if they closed natively.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct EffectBook {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    closed: Vec<Effect>,
    /// By request event id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    open: BTreeMap<String, OpenEffect>,
}

impl EffectBook {
    /// The effects closed since the last call: the next checkpoint's.
    pub(crate) fn take_closed(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.closed)
    }

    /// Learn from one emitted event.
    pub(crate) fn observe(&mut self, e: &Event) {
        match &e.payload {
            Payload::ToolRequested(p) if p.recovery.is_none() => {
                let (paths, command) = effect_detail(p.input.as_ref());
                let effect = Effect {
                    kind: "tool".into(),
                    reference: e.id.as_str().to_string(),
                    tool_name: Some(p.tool_name.clone()),
                    tool_call_id: p.tool_call_id.clone(),
                    outcome: None,
                    paths,
                    command,
                    exit_code: None,
                };
                self.open(e, effect);
            }
            Payload::CommandRequested(p) => self.open(e, command_effect(e, &p.argv)),
            Payload::ToolCompleted(ToolCompleted {
                requested_event_id,
                outcome,
                exit_code,
                recovery,
                ..
            })
            | Payload::CommandCompleted(CommandCompleted {
                requested_event_id,
                outcome,
                exit_code,
                recovery,
                ..
            }) => {
                let native = recovery.is_none() && e.provenance.attestation == Attestation::Native;
                self.close_effect(requested_event_id.as_ref(), native, *outcome, *exit_code);
            }
            _ => {}
        }
    }

    fn open(&mut self, request: &Event, effect: Effect) {
        let offset = request.offset;
        let open = OpenEffect { offset, effect };
        self.open.insert(request.id.as_str().to_string(), open);
    }

    /// Forget the open spans requested in `range`: their line was
    /// superseded, so no sweep or salvage of the live line may reach them.
    pub(crate) fn forget_open(&mut self, range: OffsetRange) -> Vec<String> {
        self.forget_open_where(range, |_| true)
    }

    /// Forget the open tool calls requested in `range` (not `harnery exec`
    /// commands, which are no process's incarnation).
    pub(crate) fn forget_open_tools(&mut self, range: OffsetRange) -> Vec<String> {
        self.forget_open_where(range, |e| e.kind == "tool")
    }

    fn forget_open_where(
        &mut self,
        range: OffsetRange,
        pick: impl Fn(&Effect) -> bool,
    ) -> Vec<String> {
        let gone: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| range.contains(o.offset) && pick(&o.effect))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.open.remove(id);
        }
        gone
    }

    fn close_effect(
        &mut self,
        request: Option<&crate::contract::EventId>,
        native: bool,
        outcome: crate::contract::Outcome,
        exit_code: Option<i64>,
    ) {
        let Some(request) = request else { return };
        let Some(OpenEffect { mut effect, .. }) = self.open.remove(request.as_str()) else {
            return;
        };
        if native {
            effect.outcome = Some(outcome);
            effect.exit_code = exit_code;
            self.closed.push(effect);
        }
    }
}

/// File paths and the shell command a tool input names.
pub(crate) fn effect_detail(
    input: Option<&crate::contract::Json>,
) -> (Vec<String>, Option<String>) {
    // Only these members are read (into borrowed text where it has no
    // escapes); every other member of the input is skipped unparsed.
    #[derive(Deserialize)]
    struct Detail<'a> {
        #[serde(default, borrow, deserialize_with = "optional_str")]
        file_path: Option<Cow<'a, str>>,
        #[serde(default, borrow, deserialize_with = "optional_str")]
        notebook_path: Option<Cow<'a, str>>,
        #[serde(default, borrow, deserialize_with = "optional_str")]
        path: Option<Cow<'a, str>>,
        #[serde(
            default,
            borrow,
            deserialize_with = "optional_str",
            rename = "filePath"
        )]
        file_path_camel: Option<Cow<'a, str>>,
        #[serde(default, borrow, deserialize_with = "optional_str")]
        command: Option<Cow<'a, str>>,
    }
    let Some(d) = input.and_then(|j| serde_json::from_str::<Detail>(j.as_str()).ok()) else {
        return (Vec::new(), None);
    };
    let paths = [d.file_path, d.notebook_path, d.path, d.file_path_camel]
        .into_iter()
        .flatten()
        .map(Cow::into_owned)
        .collect();
    (paths, d.command.map(Cow::into_owned))
}

/// The effect a command request becomes (its outcome and exit code are
/// filled in when it closes): the producer's ledger and the read side's
/// join of `harnery exec` commands make it alike.
pub(crate) fn command_effect(request: &Event, argv: &[String]) -> Effect {
    Effect {
        kind: "command".into(),
        reference: request.id.as_str().to_string(),
        tool_name: None,
        tool_call_id: None,
        outcome: None,
        paths: Vec::new(),
        command: Some(argv.join(" ")),
        exit_code: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Json;

    fn input(text: &str) -> Json {
        Json::parse(text).expect("valid JSON")
    }

    #[test]
    fn file_tools_name_paths_and_shells_their_command() {
        let edit = input(r#"{"file_path":"/p/a.rs","old_string":"x"}"#);
        assert_eq!(effect_detail(Some(&edit)), (vec!["/p/a.rs".into()], None));
        let view = input(r#"{"path":"/p/b.md"}"#);
        assert_eq!(effect_detail(Some(&view)), (vec!["/p/b.md".into()], None));
        let bash = input(r#"{"command":"ls -a","description":"d"}"#);
        assert_eq!(effect_detail(Some(&bash)), (vec![], Some("ls -a".into())));
        assert_eq!(effect_detail(None), (vec![], None));
    }
}
