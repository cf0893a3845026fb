//! Reading a chunk's entries: a JSON array of flat arrays of strings,
//! integers and nulls, read by hand (serde's general reader cost more than
//! the rest of an entry's decoding), each entry's strings borrowed where
//! they hold no escape.

use std::borrow::Cow;

use super::{CHUNK_EVENTS, FACTS, HEAD, ToolFacts, TraceFacts, TracePart, TurnMarkFacts};
use crate::contract::json::plain_len;
use crate::contract::{Attestation, Observation, Outcome, TurnSource};

/// One entry: its event's seq, and its facts or what is wrong with them.
pub(crate) type Entry<'a> = (i64, Result<TraceFacts<'a>, String>);

/// A chunk's entries, decoded.
pub(in crate::ledger) fn entries(text: &str) -> Result<Vec<Entry<'_>>, String> {
    let mut out = Vec::with_capacity(CHUNK_EVENTS);
    each_entry(text, |entry| out.push(entry))?;
    Ok(out)
}

/// Each of a chunk's entries in order, decoded and handed to `take`; what
/// is wrong with the chunk, if it is not an array of entries with a seq
/// each (`take` may have had some of its entries by then).
pub(super) fn each_entry<'a>(text: &'a str, mut take: impl FnMut(Entry<'a>)) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut pieces = Pieces::default();
    let start = skip_ws(bytes, 0);
    let end = array_at(bytes, start, "entries", |at| {
        let end = pieces_at(text, at, &mut pieces)?;
        take(entry(pieces.as_slice())?);
        Ok(end)
    })?;
    if skip_ws(bytes, end) != bytes.len() {
        return Err(format!("its entries are followed by more (at byte {end})"));
    }
    Ok(())
}

/// Walk the JSON array that starts at byte `at` of `bytes`: `item` reads
/// the member that starts at the byte it is given and says where it ends.
/// Where the array ends; `what` names the array in what is wrong with it.
fn array_at(
    bytes: &[u8],
    at: usize,
    what: &str,
    mut item: impl FnMut(usize) -> Result<usize, String>,
) -> Result<usize, String> {
    let bad = |at: usize| format!("{what} are not a JSON array (at byte {at})");
    if bytes.get(at) != Some(&b'[') {
        return Err(bad(at));
    }
    let mut at = skip_ws(bytes, at + 1);
    if bytes.get(at) == Some(&b']') {
        return Ok(at + 1);
    }
    loop {
        at = skip_ws(bytes, item(skip_ws(bytes, at))?);
        match bytes.get(at) {
            Some(b',') => at += 1,
            Some(b']') => return Ok(at + 1),
            _ => return Err(bad(at)),
        }
    }
}

/// One entry from its pieces; what is wrong with the chunk, if the entry
/// has no seq.
fn entry<'a>(p: &[Piece<'a>]) -> Result<Entry<'a>, String> {
    let Some(Piece::Int(seq)) = p.get(1) else {
        return Err("an entry has no integer seq".into());
    };
    Ok((*seq, facts_of_entry(*seq, p)))
}

fn facts_of_entry<'a>(seq: i64, p: &[Piece<'a>]) -> Result<TraceFacts<'a>, String> {
    let int = |i: usize, what: &str| match p.get(i) {
        Some(Piece::Int(n)) => Ok(*n),
        _ => Err(format!("no integer {what}")),
    };
    let (offset, time) = (int(0, "offset")?, int(2, "time")?);
    let part_name = match p.get(3) {
        Some(Piece::Text(t)) => t,
        _ => return Err("no part".into()),
    };
    let part =
        TracePart::parse(part_name).ok_or_else(|| format!("unknown trace part {part_name:?}"))?;
    let facts = &p[HEAD.min(p.len())..];
    if facts.len() != part.facts() {
        return Err(format!(
            "a {} entry holds {} facts, not {} (seq {seq})",
            part.as_str(),
            facts.len(),
            part.facts()
        ));
    }
    Ok(TraceFacts {
        offset: u64::try_from(offset).map_err(|_| format!("negative offset {offset}"))?,
        time_unix_ns: time,
        part,
        marks: marks_of(facts)?,
        tool: tool_of(part, facts)?,
    })
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| b.is_ascii_whitespace()) {
        at += 1;
    }
    at
}

/// One member of a row's `facts`.
#[derive(Debug)]
enum Piece<'a> {
    Null,
    Int(i64),
    Text(Cow<'a, str>),
}

/// At most an entry's pieces, held in place.
struct Pieces<'a> {
    items: [Piece<'a>; HEAD + FACTS.len()],
    len: usize,
}

impl Default for Pieces<'_> {
    fn default() -> Self {
        Pieces {
            items: std::array::from_fn(|_| Piece::Null),
            len: 0,
        }
    }
}

impl<'a> Pieces<'a> {
    fn push(&mut self, piece: Piece<'a>) -> bool {
        let Some(slot) = self.items.get_mut(self.len) else {
            return false;
        };
        *slot = piece;
        self.len += 1;
        true
    }

    fn as_slice(&self) -> &[Piece<'a>] {
        &self.items[..self.len]
    }
}

/// Read into `out` the flat array of strings, integers and nulls that
/// starts at byte `at` of `text` (an entry), its strings borrowed where
/// they hold no escape; where it ends.
fn pieces_at<'a>(text: &'a str, at: usize, out: &mut Pieces<'a>) -> Result<usize, String> {
    out.len = 0;
    array_at(text.as_bytes(), at, "an entry's members", |at| {
        let (piece, end) = piece_at(text, at).ok_or_else(|| {
            format!("an entry holds something not a string, integer or null (at byte {at})")
        })?;
        if !out.push(piece) {
            return Err(format!(
                "an entry holds more than {} members",
                HEAD + FACTS.len()
            ));
        }
        Ok(end)
    })
}

/// The value that starts at byte `at` of `text`, and where it ends.
fn piece_at(text: &str, at: usize) -> Option<(Piece<'_>, usize)> {
    let bytes = text.as_bytes();
    match *bytes.get(at)? {
        b'n' => text[at..]
            .starts_with("null")
            .then_some((Piece::Null, at + 4)),
        b'"' => {
            // Up to the first byte that is not plain text: most strings
            // end there.
            let mut end = at + 1 + plain_len(&bytes[at + 1..]);
            if bytes.get(end) == Some(&b'"') {
                return Some((Piece::Text(Cow::Borrowed(text.get(at + 1..end)?)), end + 1));
            }
            loop {
                match *bytes.get(end)? {
                    b'"' => break,
                    b'\\' => end += 2,
                    0x00..=0x1f => return None,
                    _ => end += 1,
                }
            }
            let quoted = text.get(at..=end)?;
            let piece = Piece::Text(Cow::Owned(serde_json::from_str::<String>(quoted).ok()?));
            Some((piece, end + 1))
        }
        b'-' | b'0'..=b'9' => {
            // Summed as a negative number, so that i64::MIN fits too.
            let negative = bytes[at] == b'-';
            let digits = at + usize::from(negative);
            let mut end = digits;
            let mut n: i64 = 0;
            while let Some(d) = bytes.get(end).filter(|b| b.is_ascii_digit()) {
                n = n.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
                end += 1;
            }
            let n = if negative { n } else { n.checked_neg()? };
            (end > digits).then_some((Piece::Int(n), end))
        }
        _ => None,
    }
}

/// Fact `i` as text, if it is text; as nothing, if null.
fn text_at<'a>(facts: &[Piece<'a>], i: usize) -> Result<Option<Cow<'a, str>>, String> {
    match &facts[i] {
        Piece::Null => Ok(None),
        Piece::Text(t) => Ok(Some(t.clone())),
        Piece::Int(_) => Err(format!("{} is not text", FACTS[i])),
    }
}

fn named_at<'a>(facts: &[Piece<'a>], i: usize) -> Result<Cow<'a, str>, String> {
    text_at(facts, i)?.ok_or_else(|| format!("trace row has no {}", FACTS[i]))
}

fn marks_of<'a>(facts: &[Piece<'a>]) -> Result<Option<TurnMarkFacts<'a>>, String> {
    if facts.is_empty() {
        return Ok(None);
    }
    Ok(Some(TurnMarkFacts {
        turn_source: parse_name(&named_at(facts, 0)?, "turn source", TURN_SOURCES)?,
        turn_id: text_at(facts, 1)?,
        attestation: parse_name(&named_at(facts, 2)?, "attestation", ATTESTATIONS)?,
    }))
}

fn tool_of<'a>(part: TracePart, facts: &[Piece<'a>]) -> Result<Option<ToolFacts<'a>>, String> {
    let terminal = match part {
        TracePart::ToolRequested => false,
        TracePart::ToolCompleted => true,
        _ => return Ok(None),
    };
    let (outcome, duration_ms, requested_event_id) = if terminal {
        let outcome = parse_name(&named_at(facts, 7)?, "outcome", OUTCOMES)?;
        let duration = match (&facts[8], text_at(facts, 9)?) {
            (Piece::Int(ms), None) => Observation::Observed(
                u64::try_from(*ms).map_err(|_| format!("negative duration {ms}"))?,
            ),
            (Piece::Null, Some(why)) => Observation::Unknown(why.into_owned()),
            _ => {
                return Err(
                    "a tool terminal holds not exactly one of duration_ms and duration_unknown"
                        .into(),
                );
            }
        };
        (Some(outcome), Some(duration), text_at(facts, 6)?)
    } else {
        (None, None, None)
    };
    Ok(Some(ToolFacts {
        event_id: named_at(facts, 3)?,
        tool_call_id: text_at(facts, 4)?,
        tool_name: named_at(facts, 5)?,
        requested_event_id,
        outcome,
        duration_ms,
    }))
}

fn parse_name<T: Copy>(text: &str, what: &str, names: &[(T, &str)]) -> Result<T, String> {
    names
        .iter()
        .find(|(_, n)| *n == text)
        .map(|(v, _)| *v)
        .ok_or_else(|| format!("unknown {what} {text:?}"))
}

const TURN_SOURCES: &[(TurnSource, &str)] = &[
    (TurnSource::Native, "native"),
    (TurnSource::Stamped, "stamped"),
    (TurnSource::None, "none"),
];
const ATTESTATIONS: &[(Attestation, &str)] = &[
    (Attestation::Native, "native"),
    (Attestation::Derived, "derived"),
    (Attestation::Record, "record"),
];
const OUTCOMES: &[(Outcome, &str)] = &[
    (Outcome::Success, "success"),
    (Outcome::Failure, "failure"),
    (Outcome::Interrupted, "interrupted"),
    (Outcome::Unknown, "unknown"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::json::{attestation_name, outcome_name, turn_source_name};
    use proptest::prelude::*;

    fn as_values(pieces: Pieces<'_>) -> Vec<serde_json::Value> {
        pieces
            .as_slice()
            .iter()
            .map(|p| match p {
                Piece::Null => serde_json::Value::Null,
                Piece::Int(n) => (*n).into(),
                Piece::Text(t) => t.to_string().into(),
            })
            .collect()
    }

    #[test]
    fn the_names_read_are_the_names_written() {
        for (v, n) in TURN_SOURCES {
            assert_eq!(turn_source_name(*v), *n);
        }
        for (v, n) in ATTESTATIONS {
            assert_eq!(attestation_name(*v), *n);
        }
        for (v, n) in OUTCOMES {
            assert_eq!(outcome_name(*v), *n);
        }
        for p in TracePart::ALL {
            assert_eq!(TracePart::parse(p.as_str()), Some(p));
        }
    }

    fn read(text: &str) -> Result<Vec<serde_json::Value>, String> {
        let mut pieces = Pieces::default();
        pieces_at(text, skip_ws(text.as_bytes(), 0), &mut pieces).map(|_| as_values(pieces))
    }

    #[test]
    fn entries_read_as_serde_reads_them_and_nothing_else() {
        let text = r#" [ "a\"b\u00e9\n", null, -12, 7 ,"" , 0, -0, 007,
            9223372036854775807, -9223372036854775808, "\\", "x\"" ] "#;
        let want: Vec<serde_json::Value> =
            serde_json::from_str(&text.replace("007", "7").replace("-0,", "0,")).unwrap();
        assert_eq!(read(text).unwrap(), want);
        assert_eq!(read("[]").unwrap(), Vec::<serde_json::Value>::new());
        assert!(read(&format!("[{}]", ["1"; 15].join(","))).is_err());
        for bad in [
            "",
            "[",
            "[1,]",
            "[nul]",
            "[1.5]",
            "[true]",
            "[\"a]",
            "[\"a\u{1}\"]",
            "{}",
            "[-]",
            "[9223372036854775808]",
            "[-9223372036854775809]",
        ] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
        assert!(entries("[[0,1,2,\"mark\",\"native\",null,\"native\"]] x").is_err());
        assert!(entries("[[0,\"one\",2,\"mark\"]]").is_err(), "no seq");
        let short = entries("[[0,1,2,\"mark\",\"native\",null]]").unwrap();
        assert_eq!(short[0].0, 1);
        assert!(
            short[0]
                .1
                .as_ref()
                .unwrap_err()
                .contains("holds 2 facts, not 3")
        );
        let one = entries("[[3,9,5,\"mark\",\"stamped\",\"t1\",\"record\"]]").unwrap();
        assert_eq!(one[0].0, 9);
        let facts = one[0].1.as_ref().unwrap();
        assert_eq!(facts.offset, 3);
        assert_eq!(
            facts.marks.as_ref().unwrap().attestation,
            Attestation::Record
        );
    }

    proptest! {
        #[test]
        fn any_entry_written_reads_back(
            turn in proptest::option::of(any::<String>()), name in any::<String>(),
            why in any::<String>(), offset in 0u64..1 << 40, seq in any::<i64>(), time in any::<i64>()
        ) {
            let id = "ev_1".to_string();
            for duration in [Observation::Observed(offset), Observation::Unknown(why.clone())] {
                let facts = TraceFacts {
                    offset,
                    time_unix_ns: time,
                    part: TracePart::ToolCompleted,
                    marks: Some(TurnMarkFacts {
                        turn_source: TurnSource::Native,
                        turn_id: turn.as_deref().map(Cow::Borrowed),
                        attestation: Attestation::Native,
                    }),
                    tool: Some(ToolFacts {
                        event_id: Cow::Borrowed(&id),
                        tool_call_id: None,
                        tool_name: Cow::Borrowed(&name),
                        requested_event_id: Some(Cow::Borrowed("ev_0")),
                        outcome: Some(Outcome::Failure),
                        duration_ms: Some(duration),
                    }),
                };
                let mut text = String::from("[");
                facts.write_entry(&mut text, seq);
                text.push(']');
                let back = entries(&text).unwrap();
                prop_assert_eq!(back.len(), 1);
                prop_assert_eq!(back[0].0, seq);
                prop_assert_eq!(back[0].1.as_ref().unwrap(), &facts);
            }
        }
    }
}
