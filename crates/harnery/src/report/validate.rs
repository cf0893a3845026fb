//! `harnery validate`'s checks: every row against the contract, offsets,
//! span states, and the live genesis digest against this build's.
//!
//! The live epoch must speak this build's digest; an archive validates
//! under its own contract generation, so its digest is never compared with
//! this build's. A live epoch file that is not what the ledger recorded is
//! a finding (`home-damaged`), as `harnery finalize` refuses to write over
//! it. An epoch that cannot be read at all is a problem of that epoch, and
//! the others are still checked.

use serde::Serialize;

use super::epochs::open_as_written;
use crate::epoch::{EpochEntry, EpochError, EpochSelector, select};
use crate::home::Home;
use crate::ledger::integrity::RawFault;
use crate::ledger::{LedgerError, LedgerReader, ValidationProblem, binary_digest};
use crate::progress::Progress;

/// One epoch's validation (`validate --epoch …`'s JSON, per epoch).
#[derive(Serialize)]
pub struct Checked {
    pub epoch: String,
    pub genesis_id: String,
    pub rows: u64,
    pub ok: bool,
    pub violations: Vec<ValidationProblem>,
    /// Why this build could not validate the epoch at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// The digest the epoch's genesis records.
    #[serde(skip)]
    pub digest: String,
}

/// The live epoch's rows and every problem found in it (an empty list is
/// a valid epoch).
pub fn validate_live(
    home: &Home,
    progress: &Progress,
) -> Result<(u64, Vec<ValidationProblem>), LedgerError> {
    match LedgerReader::open_dir(&LedgerReader::live_dir(home), None) {
        Ok(ledger) => {
            let mut problems = digest_problems(&ledger);
            problems.extend(home_problems(&ledger)?);
            let (rows, found) = ledger.verify().validate_with(progress)?;
            problems.extend(found);
            problems.extend(crate::ledger::check_session_usage(&ledger)?);
            Ok((rows, problems))
        }
        Err(e) => Ok((0, vec![damage_problem(e.damage().ok_or(e)?)])),
    }
}

/// Each selected epoch, validated on its own, oldest first.
pub fn validate_epochs(
    home: &Home,
    selector: &EpochSelector,
    progress: &Progress,
) -> Result<Vec<Checked>, EpochError> {
    Ok(select(home, selector)?
        .iter()
        .map(|e| check(e, progress))
        .collect())
}

/// A live epoch file that is not what the ledger recorded, as a problem.
fn damage_problem(fault: RawFault) -> ValidationProblem {
    ValidationProblem {
        event_id: "home".into(),
        rule: "home-damaged".into(),
        detail: format!(
            "{} {}; {}",
            fault.path.display(),
            fault.what,
            crate::ledger::integrity::recovery(&fault.path)
        ),
    }
}

/// The live epoch's raw archive files against what the ledger recorded.
fn home_problems(ledger: &LedgerReader) -> Result<Vec<ValidationProblem>, LedgerError> {
    Ok(ledger
        .raw()
        .faults()?
        .into_iter()
        .map(damage_problem)
        .collect())
}

/// The live epoch must speak this build's digest; an archive speaks its own.
fn digest_problems(ledger: &LedgerReader) -> Vec<ValidationProblem> {
    let binary = binary_digest();
    if ledger.genesis().schema_digest == binary {
        return Vec::new();
    }
    vec![ValidationProblem {
        event_id: "genesis".into(),
        rule: "genesis-digest".into(),
        detail: format!(
            "ledger schema digest {} is not this build's {binary}; run `harnery epoch advance`",
            ledger.genesis().schema_digest
        ),
    }]
}

fn check(entry: &EpochEntry, progress: &Progress) -> Checked {
    progress.stage(entry.label());
    let mut c = Checked {
        epoch: entry.label().to_string(),
        genesis_id: entry.genesis_id.clone(),
        rows: 0,
        ok: false,
        violations: Vec::new(),
        unreadable: None,
        digest: String::new(),
    };
    let ledger = match open_as_written(entry) {
        Ok(l) => l,
        Err(why) => {
            c.unreadable = Some(why);
            return c;
        }
    };
    c.digest = ledger.genesis().schema_digest.clone();
    if entry.live {
        c.violations = digest_problems(&ledger);
        match home_problems(&ledger) {
            Ok(found) => c.violations.extend(found),
            Err(e) => c.unreadable = Some(e.to_string()),
        }
    }
    match ledger.verify().validate_with(progress) {
        Ok((rows, found)) => {
            c.rows = rows;
            c.violations.extend(found);
            match crate::ledger::check_session_usage(&ledger) {
                Ok(found) => c.violations.extend(found),
                Err(e) => c.unreadable = Some(e.to_string()),
            }
            c.ok = c.violations.is_empty();
        }
        Err(e) => c.unreadable = Some(e.to_string()),
    }
    c
}
