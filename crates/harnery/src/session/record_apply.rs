//! How the session takes the lines of its own record: each record line
//! joined to the hook spans it matches (never rewriting them), usage
//! counted once per model call, record problems reported once per kind.
//! The state these rules keep (`RecordFollow`) is in the parent module.

use super::*;
use crate::agents::adapter::RecordTurns;

impl SessionProducer {
    /// Apply a run of record lines. A run that ends at or before the
    /// cursor was applied already (a finalizer killed between reading and
    /// committing reads it again) and yields nothing.
    pub(in crate::session) fn on_record_chunk(
        &mut self,
        chunk: RecordChunk,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let header = &chunk.header;
        let received = (trigger.time_unix_ns, trigger.time_source);
        self.settle_held(Settle::DueAt(received.0), trigger, out);
        let subagent = self.record.subagent(&header.path);
        let (cursor, agent) = match subagent {
            Some(i) => {
                let s = &self.record.subagents[i];
                (s.cursor, Some(s.agent_id.clone()))
            }
            None => (self.record.cursor, None),
        };
        if header.end <= cursor {
            // Nothing left to read: an empty chunk that reached the end
            // says how the record file is now.
            if subagent.is_none() && header.start == cursor && header.seen.is_some() {
                self.record.seen = header.seen;
            }
            return;
        }
        if subagent.is_none() && self.record.path.is_none() {
            self.record.path = Some(header.path.clone());
        }
        self.refuse_foreign_lines(header, &chunk.foreign, trigger, out);
        for (line_at, mut line) in chunk.lines {
            let offset = line_at.offset;
            if offset < cursor {
                continue;
            }
            (trigger.time_unix_ns, trigger.time_source) = match line.time_unix_ns {
                Some(t) => (t, TimeSource::Agent),
                None => received,
            };
            if line.agent_id.is_none() {
                line.agent_id = agent.clone();
            }
            let own = subagent.is_none().then(|| {
                let closes = line.agent_id.is_none()
                    && line.items.iter().any(|i| matches!(i, RecordItem::Shutdown));
                (line.uuid.clone(), closes)
            });
            self.on_record_line(&header.path, offset, line, received.0, trigger, out);
            if let Some((id, closes)) = own {
                self.record.locate.line(line_at, id.as_deref(), closes);
                self.emit_places(trigger, out);
            }
        }
        (trigger.time_unix_ns, trigger.time_source) = received;
        match subagent {
            // Read after its subagent stopped: at its end it is done.
            Some(i) if header.at_end => {
                self.record.subagents.remove(i);
            }
            Some(i) => {
                let s = &mut self.record.subagents[i];
                s.cursor = header.end;
                s.fingerprint = header.fingerprint.clone();
            }
            None => {
                self.record.cursor = header.end;
                self.record.fingerprint = header.fingerprint.clone();
                self.record.seen = header.seen;
                self.record.problem = None;
                if header.at_end {
                    self.record.locate.read_to_end();
                }
            }
        }
    }

    /// Lines of a chunk that name another session: one loud
    /// `record.problem` (kind `refused`) for the chunk, none of them read.
    fn refuse_foreign_lines(
        &mut self,
        header: &crate::agents::harnery::RecordChunkHeader,
        foreign: &[(u64, String)],
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let Some((first, named)) = foreign.first() else {
            return;
        };
        let detail = format!(
            "{}: {} line(s) from offset {first} name another session ({named:?} first), not \
             {:?}: refused, not read",
            header.path,
            foreign.len(),
            self.stamp.session.session_id
        );
        let draft = Draft {
            tag: format!("record-foreign:{}:{first}", header.path),
            payload: Payload::RecordProblem(RecordProblem {
                path: header.path.clone(),
                kind: "refused".to_string(),
                detail,
            }),
            provenance: super::super::emit::derived_high(),
            turn: TurnAttribution::none(),
            agent_id: None,
        };
        self.emit(trigger, draft, out);
    }

    /// Follow a subagent's own record from now on; one given up to make
    /// room is a loud `record.problem` (kind `not_followed`).
    pub(in crate::session) fn follow_subagent_record(
        &mut self,
        agent_id: String,
        path: String,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let Some(given_up) = self.record.follow_subagent(agent_id, path) else {
            return;
        };
        let detail = format!(
            "{}: subagent {}'s record was not read to its end; {FOLLOWED_SUBAGENTS} newer \
             subagent records were waiting",
            given_up.path, given_up.agent_id
        );
        let draft = Draft {
            tag: format!("record-not-followed:{}", given_up.path),
            payload: Payload::RecordProblem(RecordProblem {
                path: given_up.path,
                kind: "not_followed".to_string(),
                detail,
            }),
            provenance: super::super::emit::derived_high(),
            turn: TurnAttribution::none(),
            agent_id: None,
        };
        self.emit(trigger, draft, out);
    }

    /// A problem following the record, reported once per kind. Hook
    /// requests stay remembered for joining: the record may be read again.
    /// A record the agent deleted after it was read (`removed`) is a note,
    /// not a problem: what was read is kept in the raw archive.
    pub(in crate::session) fn on_record_problem(
        &mut self,
        problem: RecordProblem,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        if let Some(i) = self.record.subagent(&problem.path) {
            // A subagent's record that cannot be read is reported once and
            // given up; the session's own record goes on.
            self.record.subagents.remove(i);
        } else {
            self.settle_held(Settle::All, trigger, out);
            if self.record.problem.as_deref() == Some(&problem.kind) {
                return;
            }
            self.record.problem = Some(problem.kind.clone());
        }
        let draft = Draft {
            tag: format!("record-problem:{}", problem.kind),
            payload: Payload::RecordProblem(problem),
            provenance: super::super::emit::derived_high(),
            turn: TurnAttribution::none(),
            agent_id: None,
        };
        self.emit(trigger, draft, out);
    }

    fn on_record_line(
        &mut self,
        path: &str,
        offset: u64,
        mut line: RecordLine,
        received_ns: i64,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let turns = crate::agents::agent(self.stamp.session.adapter).record_turns();
        let turn = match turns {
            RecordTurns::PromptChain => {
                // A line before any prompt belongs to no turn (not to
                // whichever turn the hooks have open when it is read).
                line.native_turn_id = self.record.line_prompt(&line);
                match &line.native_turn_id {
                    Some(_) => self.turns.speaker(None, line.native_turn_id.clone()).turn,
                    None => TurnAttribution::none(),
                }
            }
            // Copilot's lines take the stamped turn of the hook prompt their
            // interaction's user message met (see the module doc).
            RecordTurns::PromptText => {
                let said = line.items.iter().find_map(|item| match item {
                    RecordItem::UserMessage(m) => Some(m.text.as_deref()),
                    _ => None,
                });
                if let Some(text) = said {
                    self.record
                        .enter_interaction(line.agent_id.as_deref(), text);
                }
                self.record.interaction_turn(line.agent_id.as_deref())
            }
        };
        for item in line.items {
            let payload = match item {
                RecordItem::UserMessage(m) => Payload::MessageUser(m),
                RecordItem::AssistantMessage(m) => Payload::MessageAssistant(m),
                RecordItem::Reasoning(r) => Payload::ReasoningRecorded(r),
                RecordItem::Metadata(m) => {
                    self.record.note_model(&m);
                    if !self.record.new_metadata(&m) {
                        continue;
                    }
                    Payload::SessionMetadata(m)
                }
                RecordItem::Usage(mut u) => {
                    if !self.record.first_usage(u.message_id.as_deref()) {
                        continue;
                    }
                    // Any agent's usage line that names no model was made
                    // with the model its record last named (Codex names it
                    // once a turn, in `turn_context`, and never on usage).
                    if u.model.is_none() {
                        u.model = self.record.last_model();
                    }
                    Payload::UsageReported(u)
                }
                RecordItem::ToolStarted(call) => {
                    let at = RecordAt {
                        path: path.to_string(),
                        offset,
                    };
                    let young = trigger.time_unix_ns + SETTLE_NS > received_ns;
                    let from = (line.agent_id.as_deref(), &line.native_turn_id, &turn);
                    match self.record.recorded_start(
                        self.stamp.session.adapter,
                        at,
                        call,
                        from,
                        young,
                        trigger,
                    ) {
                        Some(payload) => payload,
                        None => continue,
                    }
                }
                RecordItem::CopiedCall { tool_call_id } => {
                    self.record.note_copied(tool_call_id);
                    continue;
                }
                RecordItem::ToolFinished(result) if self.record.copied(&result.tool_call_id) => {
                    continue;
                }
                RecordItem::ToolFinished(result) => {
                    self.settle_held(Settle::Call(&result.tool_call_id), trigger, out);
                    self.record.recorded_finish(path, offset, result)
                }
                RecordItem::TurnEnded { turn_id } => {
                    self.record_turn_end(line.agent_id.as_deref(), &turn_id, trigger, out);
                    continue;
                }
                RecordItem::Unrecognized { reason } => {
                    Payload::SignalUnrecognized(SignalUnrecognized {
                        adapter_event: None,
                        reason,
                        record: Some(RecordAt {
                            path: path.to_string(),
                            offset,
                        }),
                    })
                }
                // Turn starts, resumes and shutdowns of the record carry no
                // event of their own in this generation, and neither do the
                // agent's running totals: they restate the calls' usage,
                // which is recorded call by call.
                // Claude Code writes its cost only as a running total per
                // model: what it grew by since the last total is recorded
                // as a cost report of its own (no tokens: the calls carry
                // them).
                RecordItem::UsageTotal(total) => match self.record.cost_growth(total) {
                    Some(report) => Payload::UsageReported(report),
                    None => continue,
                },
                RecordItem::UsageSummary(summary) => Payload::UsageSummary(summary),
                // A subagent's own record titles the subagent, not the
                // session.
                RecordItem::Title(_) if line.agent_id.is_some() => continue,
                RecordItem::Title(t) => {
                    let said = SessionTitled {
                        title: t.title,
                        field: t.field,
                        user_named: t.user_named,
                        path: path.to_string(),
                        offset: Some(offset),
                    };
                    match self.record.take_title(said) {
                        Some(titled) => Payload::SessionTitled(titled),
                        None => continue,
                    }
                }
                RecordItem::TurnStarted { .. } | RecordItem::Resumed | RecordItem::Shutdown => {
                    continue;
                }
            };
            let draft = Draft {
                tag: format!("record:{offset}"),
                payload,
                provenance: from_record(),
                turn: turn.clone(),
                agent_id: line.agent_id.clone(),
            };
            self.emit(trigger, draft, out);
        }
    }

    /// Join the held calls `which` selects again, and record each (with
    /// the span it joined, or none: the hook signal was lost), at the
    /// time and place of its own line.
    fn settle_held(&mut self, which: Settle, trigger: &mut Trigger, out: &mut Vec<Event>) {
        if self.record.held.is_empty() {
            return;
        }
        let (settled, kept): (VecDeque<HeldCall>, VecDeque<HeldCall>) =
            std::mem::take(&mut self.record.held)
                .into_iter()
                .partition(|h| match which {
                    Settle::DueAt(now) => h.time_unix_ns + SETTLE_NS <= now,
                    Settle::Call(id) => h.tool_call_id == id,
                    Settle::Turn(agent, turn) => {
                        h.agent.as_deref() == agent && h.turn_id.as_deref() == Some(turn)
                    }
                    Settle::All => true,
                });
        self.record.held = kept;
        let now = (trigger.time_unix_ns, trigger.time_source);
        for h in settled {
            let call = h.call();
            let span = self.record.join(self.stamp.session.adapter, &call);
            (trigger.time_unix_ns, trigger.time_source) = (h.time_unix_ns, h.time_source);
            let draft = Draft {
                tag: format!("record:{}", h.record.offset),
                payload: recorded_call(h.record, span, call, h.turn_id),
                provenance: from_record(),
                turn: h.turn,
                agent_id: h.agent,
            };
            self.emit(trigger, draft, out);
        }
        (trigger.time_unix_ns, trigger.time_source) = now;
    }

    /// The record shows `agent`'s turn `turn_id` over: the hook spans of
    /// the calls it started in that turn and never finished get the
    /// turn-end terminal where the recovery table enables it (Copilot,
    /// whose hooks give no boundary a sweep may trust, but whose record
    /// names each call's turn and writes the turn's end even when the
    /// turn is interrupted). A span already closed is left alone.
    fn record_turn_end(
        &mut self,
        agent: Option<&str>,
        turn_id: &str,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        self.settle_held(Settle::Turn(agent, turn_id), trigger, out);
        let unfinished = self.record.unfinished_in_turn(agent, turn_id);
        if !self.policy().record_turn_end_sweep {
            return;
        }
        for request in unfinished {
            if let Some(span) = self.pairer.spans.take_by_request(&request) {
                let reason = RecoveryReason::CompletionNotObservedBeforeTurnEnd;
                let (pairer, mut em) = self.pairing();
                pairer.recover_span(&mut em, span, reason, trigger, out);
            }
        }
    }
}

/// The record part of the rules that need nothing else.
impl RecordFollow {
    /// A call the record started: joined now, or, when it joins nothing
    /// and its line is `young`, held (`None`).
    fn recorded_start(
        &mut self,
        adapter: AdapterId,
        record: RecordAt,
        call: RecordedCall,
        (agent, line_turn, turn): (Option<&str>, &Option<String>, &TurnAttribution),
        young: bool,
        trigger: &Trigger,
    ) -> Option<Payload> {
        let span = self.join(adapter, &call);
        let turn_id = call.turn_id.clone().or_else(|| line_turn.clone());
        self.remember_call(&call, agent, turn_id.as_deref());
        // Bounded: with the queue full, a call waits no longer.
        if span.is_none() && young && self.held.len() < REMEMBERED_REQUESTS {
            self.held.push_back(HeldCall {
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
                input_digest: call.input_digest,
                turn_id,
                agent: agent.map(str::to_string),
                turn: turn.clone(),
                record,
                time_unix_ns: trigger.time_unix_ns,
                time_source: trigger.time_source,
            });
            return None;
        }
        Some(recorded_call(record, span, call, turn_id))
    }

    fn recorded_finish(&mut self, path: &str, offset: u64, result: RecordedResult) -> Payload {
        let joined = self.joined(&result.tool_call_id);
        self.forget(&result.tool_call_id);
        let tool_name = self
            .call_name(&result.tool_call_id)
            .or_else(|| joined.as_ref().map(|(_, name)| name.clone()))
            .unwrap_or_else(|| "unknown".to_string());
        let span = joined.map(|(id, _)| id);
        let (output, output_cut_bytes) = match result.output {
            Some(text) => {
                let (text, cut) = ToolRecorded::capped_output(text);
                (Some(text), cut)
            }
            None => (None, None),
        };
        Payload::ToolRecorded(ToolRecorded {
            record: RecordAt {
                path: path.to_string(),
                offset,
            },
            span_request_event_id: span,
            tool_call_id: result.tool_call_id,
            tool_name,
            turn_id: result.turn_id,
            success: result.success,
            exit_code: result.exit_code,
            output,
            output_cut_bytes,
        })
    }
}

/// The `tool.recorded` of a call's start.
fn recorded_call(
    record: RecordAt,
    span: Option<EventId>,
    call: RecordedCall,
    turn_id: Option<String>,
) -> Payload {
    Payload::ToolRecorded(ToolRecorded {
        record,
        span_request_event_id: span,
        tool_call_id: call.tool_call_id,
        tool_name: call.tool_name,
        turn_id,
        success: None,
        exit_code: None,
        output: None,
        output_cut_bytes: None,
    })
}
