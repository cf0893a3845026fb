//! Where the rules' events go: stamped with the session's next offset,
//! shown to the record's locator, and queued.

use super::emit::{Draft, Stamp, Trigger};
use super::record::RecordFollow;
use crate::contract::{Event, EventId};

/// Where the rules' events go: stamped, shown to the record's locator
/// (which places checkpoints by the events it sees), and queued. Borrows
/// only those two parts of the producer, so a rule that owns another part
/// (the span pairer) can emit while it changes its own.
pub(super) struct Emitter<'a> {
    pub stamp: &'a mut Stamp,
    pub record: &'a mut RecordFollow,
}

impl Emitter<'_> {
    /// Stamp a draft with offset, id, time and raw pointer, and queue it;
    /// its id, for the rules that keep it (most do not: no copy is made).
    pub(super) fn emit<'o>(
        &mut self,
        trigger: &mut Trigger,
        draft: Draft,
        out: &'o mut Vec<Event>,
    ) -> &'o EventId {
        let event = self.stamp.stamp(trigger, draft);
        let record = &mut *self.record;
        record.locate.observe(&event, record.path.as_deref());
        out.push(event);
        &out.last().expect("the event just queued").id
    }
}

impl super::SessionProducer {
    /// The emitter over this producer's stamp and record.
    pub(super) fn emitter(&mut self) -> Emitter<'_> {
        Emitter {
            stamp: &mut self.stamp,
            record: &mut self.record,
        }
    }

    /// Stamp a draft with offset, id, time and raw pointer, and queue it.
    pub(super) fn emit<'o>(
        &mut self,
        trigger: &mut Trigger,
        draft: Draft,
        out: &'o mut Vec<Event>,
    ) -> &'o EventId {
        self.emitter().emit(trigger, draft, out)
    }
}
