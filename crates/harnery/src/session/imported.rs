//! A session `harnery import` started from the agent's own record
//! (`harnery.import`): the record it names is the one followed from its
//! start, and the session's `session.imported` event makes it of evidence
//! class `imported`. Hooks that arrive later (the session resumed in the
//! agent) add to the same session and the same record cursor; the class
//! stays `imported`, since the start of its history was seen by no hook.

use super::SessionProducer;
use super::emit::{Draft, Trigger, derived_high};
use crate::agents::signal::Imported;
use crate::contract::{Event, Payload, TurnAttribution};

impl SessionProducer {
    pub(super) fn on_imported(
        &mut self,
        imported: Imported,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let Imported {
            session: imported,
            subagents,
        } = imported;
        // A record already being read (hooks named it) keeps its cursor.
        if self.record.unread() {
            self.record.path = Some(imported.path.clone());
            self.record.problem = None;
        }
        let draft = Draft {
            tag: "imported".to_string(),
            payload: Payload::SessionImported(imported),
            provenance: derived_high(),
            turn: TurnAttribution::none(),
            agent_id: None,
        };
        self.emit(trigger, draft, out);
        // Claude Code's subagents write records of their own beside it.
        for (agent_id, path) in subagents {
            self.follow_subagent_record(agent_id, path, trigger, out);
        }
    }
}
