//! The duplicate-delivery memory: the delivery keys of the last
//! [`DELIVERY_MEMORY`] signals and the first event each produced.
//!
//! Every signal is looked up here, so the lookup must not compare strings
//! against the whole memory: each key carries a 64-bit fingerprint, the scan
//! compares fingerprints, and only a matching fingerprint is confirmed by
//! comparing the key itself. The fingerprints are derived, never stored: the
//! stored form is the list of `(key, event id)` pairs, oldest first, exactly
//! as before they existed.

use std::collections::VecDeque;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::contract::EventId;

/// How many recent deliveries are remembered for duplicate detection.
pub const DELIVERY_MEMORY: usize = 256;

/// Recent delivery keys and the first event each produced, oldest first.
#[derive(Debug, Clone, Default)]
pub(super) struct DeliveryMemory {
    entries: VecDeque<(String, EventId)>,
    /// The fingerprint of each entry's key, in the same order.
    prints: VecDeque<u64>,
}

impl DeliveryMemory {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The event of the oldest remembered delivery that has one of `keys`.
    pub fn first_of(&self, keys: &[String]) -> Option<EventId> {
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
    pub fn remember(&mut self, keys: Vec<String>, first: EventId) {
        for key in keys {
            self.prints.push_back(fingerprint(&key));
            self.entries.push_back((key, first.clone()));
        }
        while self.entries.len() > DELIVERY_MEMORY {
            self.entries.pop_front();
            self.prints.pop_front();
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
        let prints = entries.iter().map(|(key, _)| fingerprint(key)).collect();
        Ok(DeliveryMemory { entries, prints })
    }
}

fn fingerprint(key: &str) -> u64 {
    crate::finalize::fingerprint::fingerprint(key.as_bytes())
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
        memory.remember(vec!["a".into()], id(1));
        memory.remember(vec!["b".into(), "c".into()], id(2));
        assert_eq!(memory.first_of(&["c".into(), "a".into()]), Some(id(1)));
        assert_eq!(memory.first_of(&["c".into()]), Some(id(2)));
        assert_eq!(memory.first_of(&["d".into()]), None);
    }

    #[test]
    fn the_stored_form_is_the_list_of_pairs() {
        let mut memory = DeliveryMemory::default();
        memory.remember(vec!["exact:Stop:00".into()], id(7));
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
            memory.remember(vec![format!("key-{n}")], id(n));
        }
        assert_eq!(memory.len(), DELIVERY_MEMORY);
        assert_eq!(memory.first_of(&["key-9".into()]), None);
        assert_eq!(memory.first_of(&["key-10".into()]), Some(id(10)));
    }
}
