//! The agent's own title of the session (generation 11): from a line of
//! its record (`RecordItem::Title`) or from the file it keeps beside the
//! record (`harnery.title`: Copilot's `workspace.yaml`). The title is
//! hostile text: it is cleaned here (one line, no control characters, at
//! most 100 characters: `ledger::write::titles::record_title`) before it
//! is recorded, and recorded only when it is not the one the session last
//! took, so a rename is one newer `session.titled` and an unchanged title
//! none.

use super::SessionProducer;
use super::emit::{Draft, Trigger};
use super::record::RecordFollow;
use crate::contract::{
    Attestation, Confidence, Event, Payload, Provenance, SessionTitled, TurnAttribution,
};

impl RecordFollow {
    /// `said`, cleaned, when it is a title the session has not taken last
    /// (and remember it).
    pub(super) fn take_title(&mut self, mut said: SessionTitled) -> Option<SessionTitled> {
        let title = crate::ledger::record_title(&said.title)?;
        if self.title.as_deref() == Some(title.as_str()) {
            return None;
        }
        self.title = Some(title.clone());
        said.title = title;
        Some(said)
    }
}

impl SessionProducer {
    pub(super) fn on_titled(
        &mut self,
        said: SessionTitled,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let Some(titled) = self.record.take_title(said) else {
            return;
        };
        let draft = Draft {
            tag: "titled".to_string(),
            payload: Payload::SessionTitled(titled),
            provenance: Provenance {
                attestation: Attestation::Record,
                confidence: Confidence::High,
            },
            turn: TurnAttribution::none(),
            agent_id: None,
        };
        self.emit(trigger, draft, out);
    }
}
