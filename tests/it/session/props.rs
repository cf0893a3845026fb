//! Property: for random interleavings of signals (lost posts, lost stops,
//! duplicates, out-of-order arrival, reboots, clock jumps, ticks far into
//! the future), every event validates, offsets stay gapless, and every span
//! ends in exactly one of three states: closed natively, recovered with a
//! reason, or open awaiting salvage.

use crate::session::support as producer_support;

use harnery::agents::RecoveryPolicy;
use harnery::clock::ClockSample;
use harnery::contract::{AdapterId, Event, SessionRef};
use harnery::session::SessionProducer;
use producer_support::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    Prompt(u8),
    Pre(u8, u8),
    Post(u8, u8, bool),
    Stop(u8),
    Batch(u8, u8),
    SubagentStart(u8),
    SubagentStop(u8),
    SessionEnd,
    OperatorEnd,
    CommandRequested(u8),
    CommandCompleted(u8),
    /// Deliver the previous payload again, byte for byte.
    Repeat,
    Reboot,
    ClockBack,
    Tick(u8),
    Garbage,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..4u8).prop_map(Step::Prompt),
        6 => (0..8u8, 0..4u8).prop_map(|(c, t)| Step::Pre(c, t)),
        5 => (0..8u8, 0..4u8, any::<bool>()).prop_map(|(c, t, f)| Step::Post(c, t, f)),
        2 => (0..4u8).prop_map(Step::Stop),
        1 => (0..8u8, 0..4u8).prop_map(|(c, t)| Step::Batch(c, t)),
        1 => (0..2u8).prop_map(Step::SubagentStart),
        1 => (0..2u8).prop_map(Step::SubagentStop),
        1 => Just(Step::SessionEnd),
        1 => Just(Step::OperatorEnd),
        1 => (0..3u8).prop_map(Step::CommandRequested),
        1 => (0..3u8).prop_map(Step::CommandCompleted),
        2 => Just(Step::Repeat),
        1 => Just(Step::Reboot),
        1 => Just(Step::ClockBack),
        2 => (0..30u8).prop_map(Step::Tick),
        1 => Just(Step::Garbage),
    ]
}

fn policy() -> impl Strategy<Value = Option<RecoveryPolicy>> {
    prop_oneof![
        Just(None),
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(a, b, c, d, e, f, g)| Some(RecoveryPolicy {
                request_not_observed: a,
                turn_end_sweep: b,
                next_turn_sweep: c,
                span_cap_pressure: d,
                explicit_end_salvage: e,
                command_closer: f,
                record_turn_end_sweep: g,
            })),
    ]
}

/// One payload per step, in each dialect.
fn payload(adapter: AdapterId, step: &Step, at_ms: i64) -> Option<(Option<&'static str>, String)> {
    let claude = adapter == AdapterId::ClaudeCode;
    let own = |name: &'static str, body: String| Some((Some(name), body));
    match step {
        Step::SessionEnd if claude => Some((
            None,
            r#"{"hook_event_name":"SessionEnd","reason":"other"}"#.into(),
        )),
        Step::SessionEnd => Some((
            Some("sessionEnd"),
            format!(r#"{{"sessionId":"s","timestamp":{at_ms},"reason":"complete"}}"#),
        )),
        Step::OperatorEnd => own("harnery.end_requested", "{}".into()),
        Step::CommandRequested(c) => own(
            "harnery.command_requested",
            format!(r#"{{"command_id":"c{c}","argv":["x"]}}"#),
        ),
        Step::CommandCompleted(c) => own(
            "harnery.command_completed",
            format!(r#"{{"command_id":"c{c}","exit_code":0,"duration_ms":3}}"#),
        ),
        Step::Garbage => Some((
            if claude { None } else { Some("preToolUse") },
            "{\"torn".into(),
        )),
        _ if claude => claude_payload(step).map(|p| (None, p)),
        _ => copilot_payload(step, at_ms),
    }
}

fn claude_payload(step: &Step) -> Option<String> {
    Some(match step {
        Step::Prompt(t) => {
            format!(r#"{{"hook_event_name":"UserPromptSubmit","prompt_id":"p{t}"}}"#)
        }
        Step::Pre(c, t) => format!(
            r#"{{"hook_event_name":"PreToolUse","prompt_id":"p{t}","tool_name":"Bash","tool_input":{{"n":{c}}},"tool_use_id":"u{c}"}}"#
        ),
        Step::Post(c, t, failed) => {
            let name = if *failed {
                "PostToolUseFailure"
            } else {
                "PostToolUse"
            };
            format!(
                r#"{{"hook_event_name":"{name}","prompt_id":"p{t}","tool_name":"Bash","tool_input":{{"n":{c}}},"tool_use_id":"u{c}","duration_ms":2}}"#
            )
        }
        Step::Stop(t) => format!(r#"{{"hook_event_name":"Stop","prompt_id":"p{t}"}}"#),
        Step::Batch(c, t) => format!(
            r#"{{"hook_event_name":"PostToolBatch","prompt_id":"p{t}","tool_calls":[{{"tool_name":"Bash","tool_input":{{"n":{c}}},"tool_use_id":"u{c}","tool_response":"ok"}}]}}"#
        ),
        Step::SubagentStart(a) => {
            format!(r#"{{"hook_event_name":"SubagentStart","agent_id":"a{a}"}}"#)
        }
        Step::SubagentStop(a) => {
            format!(r#"{{"hook_event_name":"SubagentStop","agent_id":"a{a}"}}"#)
        }
        _ => return None,
    })
}

fn copilot_payload(step: &Step, at: i64) -> Option<(Option<&'static str>, String)> {
    let tool = |c: &u8| format!(r#""toolName":"bash","toolArgs":{{"n":{c}}}"#);
    Some(match step {
        Step::Prompt(_) => (
            Some("userPromptSubmitted"),
            format!(r#"{{"sessionId":"s","timestamp":{at},"prompt":"go"}}"#),
        ),
        Step::Pre(c, _) => (
            Some("preToolUse"),
            format!(r#"{{"sessionId":"s","timestamp":{at},{}}}"#, tool(c)),
        ),
        Step::Post(c, _, false) => (
            Some("postToolUse"),
            format!(
                r#"{{"sessionId":"s","timestamp":{at},{},"toolResult":{{"resultType":"success"}}}}"#,
                tool(c)
            ),
        ),
        Step::Post(c, _, true) => (
            Some("postToolUseFailure"),
            format!(
                r#"{{"sessionId":"s","timestamp":{at},{},"error":"e"}}"#,
                tool(c)
            ),
        ),
        Step::Stop(_) => (
            Some("agentStop"),
            format!(r#"{{"sessionId":"s","timestamp":{at},"stopReason":"end_turn"}}"#),
        ),
        Step::SubagentStart(a) => (
            Some("subagentStart"),
            format!(r#"{{"sessionId":"s","timestamp":{at},"agentId":"a{a}","parentAgentId":"s"}}"#),
        ),
        Step::SubagentStop(a) => (
            Some("subagentStop"),
            format!(r#"{{"sessionId":"s","timestamp":{at},"agentId":"a{a}","parentAgentId":"s"}}"#),
        ),
        Step::Batch(c, _) => (
            Some("preToolUse"),
            format!(
                r#"{{"sessionId":"a0","agentId":"a0","parentAgentId":"s","timestamp":{at},{}}}"#,
                tool(c)
            ),
        ),
        _ => return None,
    })
}

struct Sim {
    adapter: AdapterId,
    producer: SessionProducer,
    events: Vec<Event>,
    now: i64,
    boot: u32,
    boottime: i64,
    last: Option<Record>,
}

impl Sim {
    fn clock(&self) -> ClockSample {
        ClockSample {
            boot_id: Some(format!("boot-{}", self.boot)),
            boottime_ns: u64::try_from(self.boottime).ok(),
        }
    }

    fn apply(&mut self, step: &Step) {
        self.now += 1_000_000;
        self.boottime += 1_000_000;
        match step {
            Step::Reboot => {
                self.boot += 1;
                self.boottime = 1;
                return;
            }
            Step::ClockBack => {
                self.boottime = (self.boottime - 50_000_000).max(0);
                return;
            }
            Step::Tick(hours) => {
                self.now += i64::from(*hours) * 3_600_000_000_000;
                let out = self.producer.tick(self.now, &self.clock());
                self.events.extend(out);
                return;
            }
            Step::Repeat => {
                if let Some(r) = self.last.clone() {
                    self.ingest(&r);
                }
                return;
            }
            _ => {}
        }
        let Some((event, body)) = payload(self.adapter, step, self.now / 1_000_000) else {
            return;
        };
        let mut r = record(self.adapter, event, "s", &body, self.now);
        r.clock = self.clock();
        self.ingest(&r);
        self.last = Some(r);
    }

    fn ingest(&mut self, r: &Record) {
        let ingested = self.producer.ingest(&r.signal());
        if ingested.duplicate_of.is_some() {
            assert!(ingested.events.is_empty());
        }
        self.events.extend(ingested.events);
    }
}

fn simulate(copilot: bool, policy: Option<RecoveryPolicy>, steps: &[Step]) -> Sim {
    let adapter = if copilot {
        AdapterId::Copilot
    } else {
        AdapterId::ClaudeCode
    };
    let session = SessionRef {
        adapter,
        session_id: "s".into(),
    };
    let producer = match policy {
        Some(p) => SessionProducer::with_policy(session, p),
        None => SessionProducer::new(session),
    };
    let mut sim = Sim {
        adapter,
        producer,
        events: Vec::new(),
        now: START_NS,
        boot: 0,
        boottime: 1_000_000_000,
        last: None,
    };
    for s in steps {
        sim.apply(s);
    }
    sim
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// A producer that says it ticks to nothing emits nothing when ticked,
    /// now or however much later: the finalizer does not load such a state
    /// again to tick it until a batch changes it.
    #[test]
    fn a_state_that_ticks_nothing_emits_nothing_at_any_later_tick(
        copilot in any::<bool>(),
        policy in policy(),
        steps in prop::collection::vec(step(), 0..80),
    ) {
        let sim = simulate(copilot, policy, &steps);
        if sim.producer.ticks_nothing() {
            for hours in [0_i64, 1, 25, 24 * 30] {
                let mut later = sim.producer.clone();
                let out = later.tick(sim.now + hours * 3_600_000_000_000, &sim.clock());
                prop_assert!(out.is_empty(), "{hours} h later: {out:?}");
            }
        }
    }

    #[test]
    fn every_span_ends_in_exactly_one_state_and_every_event_validates(
        copilot in any::<bool>(),
        policy in policy(),
        steps in prop::collection::vec(step(), 0..80),
    ) {
        let first = simulate(copilot, policy, &steps);
        check_events(&first.events);
        check_span_states(&first.events, &first.producer);
        // Normalizing the same signals again yields the same events.
        let again = simulate(copilot, policy, &steps);
        prop_assert_eq!(&first.events, &again.events);
        let counts = first.producer.span_counts();
        prop_assert!(counts.open <= steps.len() as u64);
    }
}
