//! Whose model call a usage record is, across the sessions of a home.
//!
//! A call is counted once, in the session that made it. A record of a call
//! is inherited (shown, never counted again) only where it provably is a
//! copy: the record says another session made it (Claude Code's
//! `requestSessionId` on a `--fork-session` copy: `copied_from_session`),
//! the same session reports it again (a record read twice), or the session
//! descends from the one that counted it (a `restore --apply` session,
//! linked to its parent by its first checkpoint's `restored_from` effect,
//! or a fork). Two sessions unrelated to each other that report the same
//! call id (a proxy or a local model that does not make ids unique) each
//! keep their tokens: the call is counted in both, and the ids they share
//! are kept for `health` to report. Nothing is ever dropped in silence.
//!
//! A copy also carries its parent's running cost, and a session's reported
//! cost is its own. Claude Code's cost line is cumulative (harnery records
//! what it grew by): a fork's first one starts from the parent's total as
//! the fork began, so the parent's running total when the fork reported
//! its first cost is taken out of that first report (never below zero). A
//! `restore --apply` session's record may hold a copy of the parent's cost
//! line (the client resumes its count from it): a first report that equals
//! one of the parent's running totals is that copy, inherited whole.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;

use crate::contract::{AdapterId, Event, Payload, UsageReported};
use crate::report::superseded::{RESTORED_FROM, RestoredFrom};

/// How far a chain of parents is followed (a restore of a restore …).
const MAX_ANCESTORS: usize = 64;

/// Two costs this close are one figure (sums of the growth harnery
/// records, written to ten decimal places).
const SAME_COST: f64 = 1e-9;

/// What a usage record is to the session that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The session's own call: counted.
    Own,
    /// A copy of a call counted elsewhere (or already here): not counted.
    Inherited,
    /// A call id another, unrelated, session reported too: counted here
    /// as well, and reported.
    Shared,
}

/// Model call ids that two sessions, neither a copy of the other, both
/// reported: counted in each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SharedCalls {
    pub adapter: AdapterId,
    /// The session that reported the ids first.
    pub first: String,
    /// The session that reported them again.
    pub then: String,
    /// The ids, in order.
    pub ids: BTreeSet<String>,
}

/// The sessions' model calls and links seen so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallOwners {
    /// Each call id, and the session that reported it first.
    first: HashMap<(AdapterId, String), String>,
    /// Each session's parent, where it is a copy of one.
    parents: HashMap<(AdapterId, String), String>,
    /// The sessions whose parent is known from their copies' own word
    /// (a fork), not from a `restore --apply` link.
    forks: HashSet<(AdapterId, String)>,
    /// Each session's running cost per model, as the agent reported it
    /// (what it grew by, summed), with the time of each report.
    costs: HashMap<(AdapterId, String, String), Vec<(i64, f64)>>,
    /// Ids shared by unrelated sessions, by (adapter, first, then).
    shared: BTreeMap<(AdapterId, String, String), BTreeSet<String>>,
}

impl CallOwners {
    /// Note what `event` says about calls and links, without judging it.
    pub(crate) fn note_link(&mut self, event: &Event) {
        let Payload::CheckpointRecorded(c) = &event.payload else {
            return;
        };
        let from = c
            .effects
            .iter()
            .filter(|x| x.kind == RESTORED_FROM)
            .find_map(|x| RestoredFrom::parse(&x.reference));
        let Some(from) = from else {
            return;
        };
        let Some((adapter, parent)) = from.session.split_once('/') else {
            return;
        };
        if adapter == event.session.adapter.as_str() {
            let child = (event.session.adapter, event.session.session_id.clone());
            self.parents
                .entry(child)
                .or_insert_with(|| parent.to_string());
        }
    }

    /// Whether `u`, a record of `event`'s session, is that session's own
    /// call (and remember it).
    pub(crate) fn judge(&mut self, event: &Event, u: &UsageReported) -> Verdict {
        let adapter = event.session.adapter;
        let session = &event.session.session_id;
        if let Some(parent) = &u.copied_from_session {
            self.parents
                .entry((adapter, session.clone()))
                .or_insert_with(|| parent.clone());
            self.forks.insert((adapter, session.clone()));
            if let Some(id) = &u.message_id {
                self.first
                    .entry((adapter, id.clone()))
                    .or_insert_with(|| parent.clone());
            }
            return Verdict::Inherited;
        }
        let Some(id) = &u.message_id else {
            return Verdict::Own;
        };
        let Some(first) = self.first.get(&(adapter, id.clone())) else {
            self.first.insert((adapter, id.clone()), session.clone());
            return Verdict::Own;
        };
        if first == session || self.descends(adapter, session, first) {
            return Verdict::Inherited;
        }
        let key = (adapter, first.clone(), session.clone());
        self.shared.entry(key).or_default().insert(id.clone());
        Verdict::Shared
    }

    /// The session `session` is a copy of, where one is known.
    pub(crate) fn parent(&self, adapter: AdapterId, session: &str) -> Option<&str> {
        self.parents
            .get(&(adapter, session.to_string()))
            .map(String::as_str)
    }

    /// Whether `session` is a copy of `ancestor`, or of a copy of it.
    fn descends(&self, adapter: AdapterId, session: &str, ancestor: &str) -> bool {
        let mut at = session;
        for _ in 0..MAX_ANCESTORS {
            match self.parents.get(&(adapter, at.to_string())) {
                Some(parent) if parent == ancestor => return true,
                Some(parent) => at = parent,
                None => return false,
            }
        }
        false
    }

    /// The part of a cost-only report `cost` (what the agent's running
    /// total for `model` grew by) that is `event`'s session's own: a
    /// fork's first report less its parent's running total then; a
    /// restored session's first report nothing when it is a copy of one of
    /// its parent's running totals.
    pub(crate) fn own_cost(&mut self, event: &Event, model: &str, cost: f64) -> f64 {
        let adapter = event.session.adapter;
        let session = event.session.session_id.clone();
        let key = (adapter, session.clone(), model.to_string());
        let first = !self.costs.contains_key(&key);
        self.costs
            .entry(key)
            .or_default()
            .push((event.time_unix_ns, cost));
        let child = (adapter, session);
        let Some(parent) = self.parents.get(&child).filter(|_| first) else {
            return cost;
        };
        let totals = self.running_totals(adapter, parent, model, event.time_unix_ns);
        if self.forks.contains(&child) {
            let carried = totals.last().copied().unwrap_or(0.0);
            return (cost - carried).max(0.0);
        }
        match totals.iter().any(|t| (t - cost).abs() < SAME_COST) {
            true => 0.0,
            false => cost,
        }
    }

    /// `session`'s running totals for `model` up to `at`, oldest first.
    fn running_totals(&self, adapter: AdapterId, session: &str, model: &str, at: i64) -> Vec<f64> {
        let key = (adapter, session.to_string(), model.to_string());
        let reports = self.costs.get(&key).map_or(&[][..], Vec::as_slice);
        let mut sum = 0.0;
        reports
            .iter()
            .filter(|(t, _)| *t <= at)
            .map(|(_, c)| {
                sum += c;
                sum
            })
            .collect()
    }

    /// The ids unrelated sessions shared, pair by pair.
    pub(crate) fn shared(&self) -> Vec<SharedCalls> {
        self.shared
            .iter()
            .map(|((adapter, first, then), ids)| SharedCalls {
                adapter: *adapter,
                first: first.clone(),
                then: then.clone(),
                ids: ids.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Provenance, RecordAt};
    use crate::report::testkit::Script;

    fn call(id: &str, copied: Option<&str>) -> UsageReported {
        UsageReported {
            record: RecordAt {
                path: "t.jsonl".into(),
                offset: 0,
            },
            message_id: Some(id.into()),
            model: Some("m".into()),
            input_tokens: Some(1),
            output_tokens: Some(1),
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost: None,
            duration_ms: None,
            time_to_first_token_ms: None,
            reasoning_tokens: None,
            raw: None,
            copied_from_session: copied.map(String::from),
        }
    }

    fn event_of(session: &str, u: &UsageReported) -> Event {
        let mut s = Script::new(session);
        s.push(0, Payload::UsageReported(u.clone()), Provenance::NATIVE);
        s.events().remove(0)
    }

    #[test]
    fn unrelated_sessions_sharing_an_id_each_keep_it_and_it_is_reported() {
        let mut owners = CallOwners::default();
        let u = call("msg_1", None);
        let verdicts: Vec<Verdict> = ["a", "b", "c", "a"]
            .iter()
            .map(|s| owners.judge(&event_of(s, &u), &u))
            .collect();
        use Verdict::*;
        assert_eq!(verdicts, [Own, Shared, Shared, Inherited]);
        let shared = owners.shared();
        assert_eq!(shared.len(), 2);
        assert_eq!(
            (shared[0].first.as_str(), shared[0].then.as_str()),
            ("a", "b")
        );
        assert!(shared[0].ids.contains("msg_1"));
    }

    #[test]
    fn a_copy_is_inherited_whether_it_names_its_parent_or_descends_from_it() {
        let mut owners = CallOwners::default();
        let u = call("msg_1", None);
        assert_eq!(owners.judge(&event_of("p", &u), &u), Verdict::Own);
        // A fork's copy names the session that made the call.
        let copied = call("msg_1", Some("p"));
        assert_eq!(
            owners.judge(&event_of("f", &copied), &copied),
            Verdict::Inherited
        );
        // A fork of the fork repeats it without naming anyone: it descends.
        owners
            .parents
            .insert((AdapterId::ClaudeCode, "g".into()), "f".into());
        assert_eq!(owners.judge(&event_of("g", &u), &u), Verdict::Inherited);
        assert!(owners.shared().is_empty());
    }

    fn cost_of(session: &str, at: i64) -> Event {
        let mut e = event_of(session, &call("x", None));
        e.time_unix_ns = at;
        e
    }

    #[test]
    fn a_forks_first_cost_leaves_out_its_parents_running_total() {
        let mut owners = CallOwners::default();
        assert_eq!(owners.own_cost(&cost_of("p", 1), "m", 0.0010), 0.0010);
        assert_eq!(owners.own_cost(&cost_of("p", 2), "m", 0.0007), 0.0007);
        let copied = call("msg_1", Some("p"));
        owners.judge(&event_of("f", &copied), &copied);
        let own = owners.own_cost(&cost_of("f", 3), "m", 0.0026);
        assert!((own - 0.0009).abs() < 1e-12, "{own}");
        assert_eq!(owners.own_cost(&cost_of("f", 4), "m", 0.0005), 0.0005);
    }

    #[test]
    fn a_restored_sessions_copy_of_its_parents_cost_line_is_inherited() {
        let link = |owners: &mut CallOwners, child: &str| {
            owners
                .parents
                .insert((AdapterId::ClaudeCode, child.into()), "p".into());
        };
        let mut owners = CallOwners::default();
        owners.own_cost(&cost_of("p", 1), "m", 0.0010);
        owners.own_cost(&cost_of("p", 2), "m", 0.0007);
        // Its record copied the parent's first cost line (total 0.0010).
        link(&mut owners, "r");
        assert_eq!(owners.own_cost(&cost_of("r", 3), "m", 0.0010), 0.0);
        assert_eq!(owners.own_cost(&cost_of("r", 4), "m", 0.0003), 0.0003);
        // Its record copied none: its first cost is its own.
        link(&mut owners, "s");
        assert_eq!(owners.own_cost(&cost_of("s", 3), "m", 0.0004), 0.0004);
    }
}
