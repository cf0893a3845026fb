//! Turn attribution: which turn an event belongs to, and how we know.
//!
//! A turn is *native* when the signal names it (Claude Code `prompt_id`),
//! *stamped* when producer state supplies it (Copilot: from a
//! `userPromptSubmitted` until its `agentStop`; Claude Code: a signal
//! without `prompt_id` inside a turn the state learned natively), and
//! absent otherwise. Each
//! agent in a session (the main agent, and every Copilot subagent, which
//! runs its own prompt … agentStop cycle inside the parent's turn) has at
//! most one current turn. The book remembers the last few turns so that the
//! closed-span memory can be bounded to the current turn plus the two most
//! recent ones.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::contract::{TurnAttribution, TurnSource};

/// How many turns the closed-span memory covers: the current plus two.
pub(crate) const REMEMBERED_TURNS: usize = 3;

/// The key of the main agent in the per-agent maps.
const MAIN_AGENT: &str = "";

/// A turn as producer state attributes it to a signal that did not name
/// it: the turn id it holds, labelled stamped whatever the turn's origin.
pub(super) fn stamped_by_state(turn: TurnAttribution) -> TurnAttribution {
    match turn.source {
        TurnSource::Native => TurnAttribution {
            source: TurnSource::Stamped,
            turn_id: turn.turn_id,
        },
        TurnSource::Stamped | TurnSource::None => turn,
    }
}

/// Who spoke and in which turn: the context of one signal.
pub(super) struct Speaker {
    pub turn: TurnAttribution,
    pub agent_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct TurnBook {
    /// Current (started, not ended) turn per agent key.
    current: BTreeMap<String, TurnAttribution>,
    /// Every turn id seen recently, oldest first, bounded.
    recent: VecDeque<String>,
    /// Stamped turns minted so far (for readable stamped ids).
    stamped: u64,
}

fn agent_key(agent: Option<&str>) -> String {
    agent.unwrap_or(MAIN_AGENT).to_string()
}

impl TurnBook {
    /// The turn of a signal: its native id when it names one, else the
    /// speaking agent's current turn as stamped by producer state, else
    /// none. A turn the signal did not name is never labelled native, even
    /// when producer state learned it from a native id (a Claude Code
    /// signal without `prompt_id`).
    pub(super) fn speaker(&self, agent: Option<String>, native_turn: Option<String>) -> Speaker {
        let turn = match native_turn {
            Some(id) => TurnAttribution {
                source: TurnSource::Native,
                turn_id: Some(id),
            },
            None => self
                .current_for(agent.as_deref())
                .cloned()
                .map(stamped_by_state)
                .unwrap_or_else(TurnAttribution::none),
        };
        Speaker {
            turn,
            agent_id: agent,
        }
    }

    /// The current turn of this agent, falling back to the main agent's.
    pub(crate) fn current_for(&self, agent: Option<&str>) -> Option<&TurnAttribution> {
        self.current
            .get(&agent_key(agent))
            .or_else(|| self.current.get(MAIN_AGENT))
    }

    /// The current turn of exactly this agent.
    pub(crate) fn own_current(&self, agent: Option<&str>) -> Option<&TurnAttribution> {
        self.current.get(&agent_key(agent))
    }

    /// Whether a turn is still going on for some agent.
    pub(crate) fn is_active(&self, turn_id: &str) -> bool {
        self.current
            .values()
            .any(|t| t.turn_id.as_deref() == Some(turn_id))
    }

    /// Whether a turn id was seen recently (current or one of the last few).
    pub(crate) fn is_known(&self, turn_id: &str) -> bool {
        self.recent.iter().any(|t| t == turn_id) || self.is_active(turn_id)
    }

    /// Whether closed spans of this turn are still worth remembering.
    pub(crate) fn is_remembered(&self, turn_id: &str) -> bool {
        self.is_known(turn_id)
    }

    /// A fresh stamped turn id.
    pub(crate) fn mint_stamped(&mut self, seed: &str) -> TurnAttribution {
        self.stamped += 1;
        let short: String = seed
            .chars()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        TurnAttribution {
            source: TurnSource::Stamped,
            turn_id: Some(format!("stamped-{}-{short}", self.stamped)),
        }
    }

    /// Make `turn` the agent's current turn; returns the turn it replaces
    /// when that one never saw its end.
    pub(crate) fn start(
        &mut self,
        agent: Option<&str>,
        turn: TurnAttribution,
    ) -> Option<TurnAttribution> {
        if let Some(id) = &turn.turn_id {
            self.recent.retain(|t| t != id);
            self.recent.push_back(id.clone());
            while self.recent.len() > REMEMBERED_TURNS {
                self.recent.pop_front();
            }
        }
        self.current.insert(agent_key(agent), turn)
    }

    /// Make a native turn that already saw its end current again, when it
    /// is the latest turn and the main agent has no other: the agent went
    /// on working in it (a Stop hook that blocked the stop does this).
    pub(crate) fn resume_latest(&mut self, turn_id: &str) -> bool {
        let latest = self.recent.back().is_some_and(|t| t == turn_id);
        if !latest || self.current.contains_key(MAIN_AGENT) {
            return false;
        }
        let turn = TurnAttribution {
            source: TurnSource::Native,
            turn_id: Some(turn_id.to_string()),
        };
        self.current.insert(MAIN_AGENT.to_string(), turn);
        true
    }

    /// Forget every agent's current turn (the memory of recent turn ids
    /// stays, so a known native id does not start its turn a second time).
    pub(crate) fn forget_current(&mut self) {
        self.current.clear();
    }

    /// End the agent's current turn (if `turn_id` names another turn, that
    /// one is ended wherever it is current).
    pub(crate) fn end(
        &mut self,
        agent: Option<&str>,
        turn_id: Option<&str>,
    ) -> Option<TurnAttribution> {
        let key = match turn_id {
            Some(id) => self
                .current
                .iter()
                .find(|(_, t)| t.turn_id.as_deref() == Some(id))
                .map(|(k, _)| k.clone())?,
            None => agent_key(agent),
        };
        self.current.remove(&key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native(id: &str) -> TurnAttribution {
        TurnAttribution {
            source: TurnSource::Native,
            turn_id: Some(id.into()),
        }
    }

    #[test]
    fn memory_keeps_the_current_and_two_recent_turns() {
        let mut book = TurnBook::default();
        for id in ["a", "b", "c", "d"] {
            book.start(None, native(id));
        }
        assert!(!book.is_remembered("a"));
        assert!(book.is_remembered("b") && book.is_remembered("d"));
        assert!(book.is_active("d") && !book.is_active("c"));
    }

    #[test]
    fn subagents_have_their_own_current_turn() {
        let mut book = TurnBook::default();
        book.start(None, native("main"));
        book.start(Some("sub"), native("inner"));
        assert_eq!(book.current_for(Some("sub")), Some(&native("inner")));
        assert_eq!(book.end(Some("sub"), None), Some(native("inner")));
        assert_eq!(book.current_for(Some("sub")), Some(&native("main")));
        assert_eq!(book.end(None, Some("main")), Some(native("main")));
        assert_eq!(book.current_for(None), None);
    }
}
