//! An epoch's rows judged by the contract generation that wrote it: its
//! genesis names that generation by digest, and each row is checked
//! against the generation's own shape (frozen for a shipped one), not
//! against what this build's types accept. A row of a type, a member or a
//! value its generation did not have is a problem of that epoch even where
//! this build would read it, and a row its generation allowed is not one
//! merely because this build's types have moved on.

use super::finding::{ValidationProblem, problem};
use super::verify::Verify;
use crate::contract::{CONTRACT_GENERATION, Generation, Shape, generation_by_digest};
use crate::ledger::{LedgerError, binary_digest};

/// A shipped generation, older than this build's, and its shape.
pub(super) struct OwnGeneration {
    pub number: u32,
    shape: Shape,
}

impl OwnGeneration {
    pub(crate) fn of(generation: &Generation) -> OwnGeneration {
        OwnGeneration {
            number: generation.number,
            shape: generation.shape(),
        }
    }

    /// Whether the row fits its generation; what does not is reported.
    pub fn check(&self, seq: i64, id: &str, json: &[u8], out: &mut Vec<ValidationProblem>) -> bool {
        let value: serde_json::Value = match serde_json::from_slice(json) {
            Ok(v) => v,
            Err(e) => {
                out.push(problem(
                    id,
                    "contract-parse",
                    format!("row seq {seq} is not JSON: {e}"),
                ));
                return false;
            }
        };
        let found = self.shape.check(&value);
        for p in &found {
            out.push(problem(
                id,
                "contract-shape",
                format!(
                    "row seq {seq} does not fit contract generation {}, which wrote it: {p}",
                    self.number
                ),
            ));
        }
        found.is_empty()
    }
}

impl Verify<'_> {
    /// The generation that wrote this epoch, when it is a shipped one
    /// older than this build's (whose own types judge its rows anyway).
    pub(super) fn older_generation(&self) -> Option<OwnGeneration> {
        let digest = &self.r.genesis().schema_digest;
        if *digest == binary_digest() {
            return None;
        }
        generation_by_digest(digest)
            .filter(|g| g.number != CONTRACT_GENERATION)
            .map(OwnGeneration::of)
    }

    /// Every row checked against `generation`'s shape (for `epoch
    /// verify`, which reads every epoch under the generation that wrote
    /// it): the rows read and the problems.
    pub(crate) fn shape_problems(
        &self,
        generation: &Generation,
    ) -> Result<(u64, Vec<ValidationProblem>), LedgerError> {
        let own = OwnGeneration::of(generation);
        let mut problems = Vec::new();
        let mut stmt = self
            .r
            .conn
            .prepare("SELECT seq, id, CAST(json AS BLOB) FROM events ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut count = 0u64;
        while let Some(r) = rows.next()? {
            count += 1;
            let seq: i64 = r.get(0)?;
            let id =
                String::from_utf8_lossy(r.get_ref(1)?.as_bytes().unwrap_or_default()).into_owned();
            own.check(
                seq,
                &id,
                r.get_ref(2)?.as_blob().unwrap_or_default(),
                &mut problems,
            );
        }
        Ok((count, problems))
    }
}
