//! `usage` (tokens and cost by day, model or session), `checkpoints` (a
//! session's pinned points) and `restore_plan` (what restoring would give
//! back; it never applies or records anything).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::budget::{ANSWER_BYTES, Budget, Page, cut};
use super::{Answer, CallError, chain, epoch, instant, open};
use crate::clock::format_time;
use crate::contract::Observation;
use crate::epoch::EpochSelector;
use crate::home::Home;
use crate::report::usage::GroupBy;
use crate::report::usage_doc::UsageDoc;
use crate::report::usage_epochs::{UsageAsk, UsageError, prices, tally_epochs};
use crate::restore::plan::{self, PlanError, RestoreRequest};
use crate::restore::shim::Transport;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageArgs {
    /// Group by day (the default), model or session.
    pub by: Option<String>,
    /// Only usage recorded at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only this session (its id, a unique prefix, or agent/id).
    pub session: Option<String>,
    /// Which ledger epoch: live (the default), all, or a genesis id.
    pub epoch: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsArgs {
    /// The session: its id, a unique prefix of one, or agent/id.
    pub session: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestorePlanArgs {
    /// The session: its id, a unique prefix of one, or agent/id.
    pub session: String,
    /// The checkpoint id, or latest (the default).
    pub checkpoint: Option<String>,
}

pub(super) fn usage(home: &Home, b: &Budget, a: &UsageArgs) -> Result<Answer, CallError> {
    let by = match a.by.as_deref() {
        None => GroupBy::Day,
        Some(s) => s
            .parse::<GroupBy>()
            .map_err(|e| CallError::BadArguments(format!("by: {e}")))?,
    };
    let prices = prices(None).map_err(CallError::failed)?;
    let label = prices.label();
    let epochs = open(home, &epoch(a.epoch.as_deref())?)?;
    let ask = UsageAsk {
        session: a.session.as_deref(),
        by,
        since_unix_ns: instant("since", a.since.as_deref())?,
        imported: None,
    };
    let (tally, _damaged) = tally_epochs(&epochs, &ask, prices).map_err(|e| match &e {
        UsageError::Source(_) => CallError::BadArguments(chain(&e)),
        _ => CallError::Failed(format!("usage cannot be read: {}", chain(&e))),
    })?;
    let mut text = b.mask(&tally.text());
    if tally.total.records > 0 {
        text.push_str(&format!("priced_cost at {label}\n"));
    }
    let doc = UsageDoc::of(&tally).to_json(&label);
    let structured = bounded(doc, ANSWER_BYTES - text.len().min(ANSWER_BYTES / 2));
    Ok(Answer {
        text: cut(&text, ANSWER_BYTES / 2),
        structured,
    })
}

/// `doc` when it fits in `bytes`; else its totals, saying the groups were
/// too many (ask a narrower `since` or another grouping).
fn bounded(doc: Value, bytes: usize) -> Value {
    if doc.to_string().len() <= bytes {
        return doc;
    }
    let mut small = json!({});
    if let Value::Object(map) = &doc {
        for (k, v) in map {
            if v.to_string().len() <= 4096 {
                small[k] = v.clone();
            }
        }
    }
    small["left_out"] = Value::String(
        "the groups are too many for one answer: narrow with since or session, or group by model"
            .into(),
    );
    small
}

pub(super) fn checkpoints(
    home: &Home,
    b: &Budget,
    a: &CheckpointsArgs,
) -> Result<Answer, CallError> {
    let log = crate::restore::epochs::live_log(home, &a.session).map_err(plan_error)?;
    let s = &log.session;
    let head = format!(
        "{}/{}: head offset {}, incarnation {}, {} checkpoints, {} resumes",
        s.adapter,
        s.session_id,
        log.head,
        log.incarnation,
        log.checkpoints.len(),
        log.resumes.len()
    );
    let mut page = Page::new(head);
    for cp in &log.checkpoints {
        let commit = match &cp.commit {
            Observation::Observed(sha) => sha.clone(),
            Observation::Unknown(_) => "unknown".into(),
        };
        let state = match cp.invalidated_at {
            Some(at) => format!("invalid (resume at offset {at})"),
            None => "valid".into(),
        };
        let line = format!(
            "- {} offset {} {} origin {} commit {} effects {} incarnation {} {state}{}",
            cp.checkpoint_id,
            cp.offset,
            format_time(cp.time_unix_ns),
            cp.origin,
            commit,
            cp.effects.len(),
            cp.incarnation,
            cp.cwd
                .as_deref()
                .map(|c| format!(" cwd {}", b.clip(c, 200)))
                .unwrap_or_default()
        );
        let item = json!({
            "checkpoint_id": cp.checkpoint_id,
            "offset": cp.offset,
            "time": format_time(cp.time_unix_ns),
            "origin": cp.origin,
            "commit": commit,
            "effects": cp.effects.len(),
            "incarnation": cp.incarnation,
            "valid": cp.invalidated_at.is_none(),
            "cwd": cp.cwd.as_deref().map(|c| b.clip(c, 200)),
        });
        if !page.push(line, item) {
            break;
        }
    }
    let shown = page.len();
    let more = (shown < log.checkpoints.len()).then(|| {
        format!(
            "{} more checkpoints are not shown (harnery checkpoints {} lists them all).",
            log.checkpoints.len() - shown,
            s.session_id
        )
    });
    let extra = json!({"agent": s.adapter.as_str(), "session": s.session_id, "head": log.head});
    Ok(page.finish("checkpoints", more, extra))
}

pub(super) fn restore_plan(
    home: &Home,
    b: &Budget,
    a: &RestorePlanArgs,
) -> Result<Answer, CallError> {
    let checkpoint = a.checkpoint.clone().unwrap_or_else(|| "latest".into());
    let (ledger, _) = crate::restore::epochs::restore_ledger(
        home,
        &EpochSelector::Live,
        &a.session,
        &checkpoint,
        false,
    )
    .map_err(plan_error)?;
    let req = RestoreRequest {
        checkpoint: checkpoint.clone(),
        include_superseded: false,
        transport: Transport::Cli,
        sdk: None,
        sdk_timeout: None,
        apply: false,
        exec: false,
        record: false,
        new_id: None,
        cwd: None,
        copilot_home: None,
        now: None,
        copilot: Default::default(),
        epoch: EpochSelector::Live,
        agent_args: Vec::new(),
    };
    let restored = plan::restore(home, &ledger, &a.session, &req).map_err(plan_error)?;
    let events = restored
        .restore
        .seed
        .events
        .count()
        .map_err(CallError::failed)?;
    let text = cut(
        &b.mask(&restored.text(events, false, false)),
        ANSWER_BYTES / 3,
    );
    let apply = match &restored.plan {
        Ok(p) => serde_json::to_string(p)
            .ok()
            .map(|j| b.mask_json(&j))
            .and_then(|j| serde_json::from_str::<Value>(&j).ok())
            .filter(|v| v.to_string().len() <= ANSWER_BYTES / 3)
            .unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    let structured = json!({
        "session": a.session,
        "checkpoint": checkpoint,
        "seed_events": events,
        "apply": apply,
        "apply_refused": restored.plan.as_ref().err().map(|e| b.mask(&e.to_string())),
        "plan": text,
        "applied": false,
    });
    Ok(Answer {
        text: format!("{text}\n(shown only: nothing was restored or recorded)"),
        structured,
    })
}

/// An unknown session or checkpoint is the caller's to correct.
fn plan_error(e: PlanError) -> CallError {
    CallError::BadArguments(chain(&e))
}
