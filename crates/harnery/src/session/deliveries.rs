//! The duplicate-delivery memory: the delivery keys of the last
//! [`DELIVERY_MEMORY`] signals and the first event each produced.
//!
//! Every signal is looked up here, and almost none is a duplicate, so a
//! lookup must not walk the memory: each key carries a 64-bit fingerprint,
//! a count per fingerprint answers "certainly not here" at once, and only
//! when a fingerprint is present does the scan (comparing fingerprints, then
//! the key itself) find the oldest match. The fingerprints are derived,
//! never stored: the stored form is the list of `(key, event id)` pairs,
//! oldest first, exactly as before they existed.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::contract::EventId;
use crate::fingerprint::FingerprintState;

/// How many recent deliveries are remembered for duplicate detection.
pub(crate) const DELIVERY_MEMORY: usize = 256;

/// Recent delivery keys and the first event each produced, oldest first.
#[derive(Debug, Clone, Default)]
pub(super) struct DeliveryMemory {
    entries: VecDeque<(String, EventId)>,
    /// The fingerprint of each entry's key, in the same order.
    prints: VecDeque<u64>,
    /// How many entries have each fingerprint.
    present: HashMap<u64, u32, FingerprintState>,
}

impl DeliveryMemory {
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The event of the oldest remembered delivery that has one of `keys`.
    pub(crate) fn first_of(&self, keys: &[String]) -> Option<EventId> {
        if !keys
            .iter()
            .any(|k| self.present.contains_key(&fingerprint(k)))
        {
            return None;
        }
        let wanted: Vec<u64> = keys.iter().map(|k| fingerprint(k)).collect();
        self.prints
            .iter()
            .zip(&self.entries)
            .filter(|(print, _)| wanted.contains(print))
            .find(|(_, (key, _))| keys.contains(key))
            .map(|(_, (_, id))| id.clone())
    }

    /// Remember `keys` as delivered, each pointing at `first`; the oldest
    /// entries past the bound are forgotten.
    pub(crate) fn remember(&mut self, keys: Vec<String>, first: &EventId) {
        for key in keys {
            let print = fingerprint(&key);
            *self.present.entry(print).or_default() += 1;
            self.prints.push_back(print);
            self.entries.push_back((key, first.clone()));
        }
        while self.entries.len() > DELIVERY_MEMORY {
            self.entries.pop_front();
            if let Some(print) = self.prints.pop_front() {
                self.forget(print);
            }
        }
    }

    fn forget(&mut self, print: u64) {
        if let Some(n) = self.present.get_mut(&print) {
            *n -= 1;
            if *n == 0 {
                self.present.remove(&print);
            }
        }
    }
}

impl PartialEq for DeliveryMemory {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl Serialize for DeliveryMemory {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.entries.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for DeliveryMemory {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = VecDeque::<(String, EventId)>::deserialize(deserializer)?;
        let mut memory = DeliveryMemory::default();
        for (key, _) in &entries {
            let print = fingerprint(key);
            *memory.present.entry(print).or_default() += 1;
            memory.prints.push_back(print);
        }
        memory.entries = entries;
        Ok(memory)
    }
}

fn fingerprint(key: &str) -> u64 {
    crate::fingerprint::fingerprint(key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> EventId {
        EventId(format!("ev_{n}"))
    }

    #[test]
    fn the_oldest_matching_delivery_answers() {
        let mut memory = DeliveryMemory::default();
        memory.remember(vec!["a".into()], &id(1));
        memory.remember(vec!["b".into(), "c".into()], &id(2));
        assert_eq!(memory.first_of(&["c".into(), "a".into()]), Some(id(1)));
        assert_eq!(memory.first_of(&["c".into()]), Some(id(2)));
        assert_eq!(memory.first_of(&["d".into()]), None);
    }

    #[test]
    fn the_stored_form_is_the_list_of_pairs() {
        let mut memory = DeliveryMemory::default();
        memory.remember(vec!["exact:Stop:00".into()], &id(7));
        let text = serde_json::to_string(&memory).expect("serializes");
        assert_eq!(text, r#"[["exact:Stop:00","ev_7"]]"#);
        let back: DeliveryMemory = serde_json::from_str(&text).expect("loads");
        assert_eq!(back, memory);
        assert_eq!(back.first_of(&["exact:Stop:00".into()]), Some(id(7)));
    }

    #[test]
    fn memory_is_bounded_and_forgets_the_oldest() {
        let mut memory = DeliveryMemory::default();
        for n in 0..(DELIVERY_MEMORY as u32 + 10) {
            memory.remember(vec![format!("key-{n}")], &id(n));
        }
        assert_eq!(memory.len(), DELIVERY_MEMORY);
        assert_eq!(memory.first_of(&["key-9".into()]), None);
        assert_eq!(memory.first_of(&["key-10".into()]), Some(id(10)));
    }

    /// A key delivered twice stays known while either delivery is
    /// remembered, and is forgotten with the last.
    #[test]
    fn a_key_is_known_until_its_last_delivery_is_forgotten() {
        let mut memory = DeliveryMemory::default();
        memory.remember(vec!["twice".into()], &id(1));
        memory.remember(vec!["twice".into()], &id(2));
        for n in 0..(DELIVERY_MEMORY as u32 - 1) {
            memory.remember(vec![format!("other-{n}")], &id(100 + n));
        }
        assert_eq!(memory.first_of(&["twice".into()]), Some(id(2)));
        memory.remember(vec!["last".into()], &id(3));
        assert_eq!(memory.first_of(&["twice".into()]), None);
        assert_eq!(memory.present.len(), DELIVERY_MEMORY);
    }
}
