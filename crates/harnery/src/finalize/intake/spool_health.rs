//! Health events about the spool itself, so damage is never only in a
//! log: a damaged byte range becomes a `spool_damage` event, a record of an
//! adapter this build does not know an `unknown_adapter` event.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::normalizer::Normalizer;
use super::{ChunkRecord, SPOOL_HEALTH_SESSION, relative, signal_row};
use crate::contract::{
    AdapterId, Attestation, Confidence, Event, EventId, HealthCondition, Payload, Provenance,
    RawRef, SessionRef, TimeSource, TurnAttribution, digest_parts,
};
use crate::finalize::FinalizeError;
use crate::finalize::summary::{DamagedRange, FinalizeOptions};
use crate::home::Home;
use crate::ledger::{AppendBatch, ReadyEvent};
use crate::spool::Damage;

/// Health events about the spool itself, so damage is never only in a log:
/// in the session whose spool file was damaged when its records say which,
/// else under the session `harnery:spool` of an adapter.
pub(super) struct SpoolHealth<'a> {
    pub(super) normalizer: &'a mut Normalizer,
    pub(super) opts: &'a FinalizeOptions,
    pub(super) damaged: Vec<DamagedRange>,
}

impl SpoolHealth<'_> {
    /// Every damaged byte range becomes one `spool_damage` event.
    pub(super) fn damage(
        &mut self,
        home: &Home,
        damage: &[(Damage, Arc<str>)],
        owners: &HashMap<PathBuf, SessionRef>,
        batch: &mut AppendBatch,
    ) -> Result<(), FinalizeError> {
        for (d, adapter_dir) in damage {
            let adapter = AdapterId::parse(adapter_dir).unwrap_or(AdapterId::ClaudeCode);
            let r = DamagedRange {
                file: relative(home, &d.file),
                start: d.start,
                end: d.end,
                kind: d.kind.as_str().to_string(),
            };
            let id = EventId::derive(
                "harnery.spool-damage",
                &[
                    r.file.as_bytes(),
                    &r.start.to_le_bytes(),
                    &r.end.to_le_bytes(),
                    r.kind.as_bytes(),
                ],
            );
            let detail = format!(
                "{} bytes {}..{} skipped: {}",
                r.file, r.start, r.end, r.kind
            );
            match owners.get(&d.file) {
                Some(session) => self.in_session(session, &id, detail, batch)?,
                None => self.push(adapter, id, "spool_damage", detail, Vec::new(), batch)?,
            }
            self.damaged.push(r);
        }
        Ok(())
    }

    /// Damage inside a session's own spool: recorded by that session's
    /// producer, so its offsets stay gapless and the audit sees it there.
    fn in_session(
        &mut self,
        session: &SessionRef,
        key: &EventId,
        detail: String,
        batch: &mut AppendBatch,
    ) -> Result<(), FinalizeError> {
        let mut producer = self.normalizer.producer(session, batch)?;
        let event =
            producer.record_health(key.as_str(), "spool_damage", detail, self.opts.now_unix_ns);
        batch.events.push(ReadyEvent::new(event));
        self.normalizer.keep_state(session, producer, batch);
        Ok(())
    }

    /// A record of an adapter this build does not know: its raw bytes are
    /// kept in the ledger and one `unknown_adapter` event points at them.
    pub(super) fn unknown_adapter(
        &mut self,
        home: &Home,
        r: &ChunkRecord,
        batch: &mut AppendBatch,
    ) -> Result<(), FinalizeError> {
        let rec = &r.rec;
        let env = &rec.envelope;
        let parts: [&[u8]; 3] = [
            env.session_key.as_bytes(),
            &env.received_ns.to_le_bytes(),
            rec.payload,
        ];
        let digest = digest_parts(env.adapter.as_bytes(), &parts)
            .to_hex()
            .to_string();
        let id = EventId::derive("harnery.unknown-adapter", &[digest.as_bytes()]);
        let detail = format!(
            "{} record at byte {}: adapter {:?} is unknown to this build; raw bytes kept",
            relative(home, rec.file),
            rec.offset,
            env.adapter
        );
        let raw = vec![RawRef {
            record_digest: digest.clone(),
            event_name: env.event.as_deref().map(str::to_owned),
        }];
        batch.signals.push(signal_row(
            r,
            &env.adapter,
            digest,
            vec![id.to_string()],
            None,
        ));
        self.push(
            AdapterId::ClaudeCode,
            id,
            "unknown_adapter",
            detail,
            raw,
            batch,
        )
    }

    fn push(
        &mut self,
        adapter: AdapterId,
        id: EventId,
        code: &str,
        detail: String,
        raw: Vec<RawRef>,
        batch: &mut AppendBatch,
    ) -> Result<(), FinalizeError> {
        let session = SessionRef {
            adapter,
            session_id: SPOOL_HEALTH_SESSION.into(),
        };
        let offset = self.normalizer.next_offset(&session)?;
        batch.events.push(ReadyEvent::new(Event {
            id,
            session,
            offset,
            time_unix_ns: self.opts.now_unix_ns,
            time_source: TimeSource::Finalizer,
            clock: None,
            agent_id: None,
            turn: TurnAttribution::none(),
            provenance: Provenance {
                attestation: Attestation::Derived,
                confidence: Confidence::High,
            },
            raw,
            payload: Payload::HealthCondition(HealthCondition {
                code: code.into(),
                detail,
            }),
        }));
        Ok(())
    }
}
