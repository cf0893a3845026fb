//! Compaction after a `finalize` run: each batch of the raw archive the
//! run (and earlier ones) kept as linked spool files, or an older build
//! compressed file by file, is packed into one compressed file
//! (`ledger::write::compact`, `ledger::rawz`) by default, so a user who
//! never runs `harnery archive compact` still gets the saving. `harnery
//! archive compact` itself runs [`compact_now`]: every batch, under the
//! lease, without a budget.
//!
//! Off the commit path: it starts only after the run has committed and
//! released the ledger, takes the finalizer lease only if it is free
//! (a `finalize` waiting for the lease is never held up by more than the
//! batch in hand: it says it waits, `lease::someone_waits`, and compaction
//! stops at the next batch), and packs every batch not packed yet, or
//! what fits in a time budget if the config sets one, leaving the rest to
//! the next run. Each batch goes through `archive compact`'s own steps,
//! so a kill at any moment leaves every record readable and every file
//! recorded as it is. A failure here is a warning: the run's ledger is
//! already complete. Once every batch is packed, the same pass packs the
//! events written since the last one in blocks (`ledger::eventz::pack`),
//! a transaction a step, stopping between steps (and interrupting the
//! file's rewrite) the same way.
//!
//! Off with `finalize --no-compact`, or in `HARNERY_HOME/config.toml`:
//!
//! ```toml
//! [archive]
//! compact = false          # default true
//! compact_budget_ms = 1000 # default none: every batch; with one, no new batch is begun after it
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::lease::Lease;
use crate::home::Home;
use crate::ledger::compact::Compacted;
use crate::ledger::compact_events::EventsPacked;
use crate::ledger::rawz::DEFAULT_LEVEL;
use crate::ledger::{LedgerError, LedgerReader, LedgerWriter};

/// `[archive]` of `HARNERY_HOME/config.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompactSettings {
    pub enabled: bool,
    /// No new batch is begun once it is spent; `None` (the default): every
    /// batch is packed (unless another finalizer waits for the lease).
    pub budget: Option<Duration>,
}

impl Default for CompactSettings {
    fn default() -> Self {
        CompactSettings {
            enabled: true,
            budget: None,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    archive: ArchiveTable,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchiveTable {
    compact: Option<bool>,
    compact_budget_ms: Option<u64>,
}

/// Why compaction after a run did not happen or stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompactionError {
    #[error("{path}: {detail}")]
    Config { path: PathBuf, detail: String },
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl CompactSettings {
    /// The settings in `home`'s `config.toml` (none there: the defaults).
    /// Other tables belong to others and are not read here.
    pub(crate) fn load(home: &Home) -> Result<CompactSettings, CompactionError> {
        let file: ConfigFile =
            crate::config::read(home.root()).map_err(|e| CompactionError::Config {
                path: e.path().to_path_buf(),
                detail: e.detail(),
            })?;
        let defaults = Self::default();
        Ok(CompactSettings {
            enabled: file.archive.compact.unwrap_or(defaults.enabled),
            budget: file
                .archive
                .compact_budget_ms
                .map_or(defaults.budget, |ms| Some(Duration::from_millis(ms))),
        })
    }
}

/// Pack the live epoch's raw archive batches not packed yet, then pack the
/// events written since the last pass (`ledger::eventz_pack`): all of
/// it, or what fits in `budget`, stopping early for a finalizer that waits
/// for the lease. `None` when there was nothing to do here: no live epoch, or
/// another finalizer holds the lease (it, or the next run, will).
pub(crate) fn after_run(
    home: &Home,
    now_unix_ns: i64,
    budget: Option<Duration>,
) -> Result<Option<(Compacted, EventsPacked)>, CompactionError> {
    let deadline = budget.map(|b| Instant::now() + b);
    if !LedgerReader::live_dir(home)
        .join(crate::ledger::GENESIS_FILE)
        .exists()
    {
        return Ok(None);
    }
    let Some(_lease) = Lease::try_take(home).map_err(|e| LedgerError::Io {
        path: home.ledgers_dir(),
        source: std::io::Error::other(e.to_string()),
    })?
    else {
        return Ok(None);
    };
    let mut ledger = LedgerWriter::open(home, now_unix_ns)?;
    let stop =
        || deadline.is_some_and(|d| Instant::now() >= d) || super::lease::someone_waits(home);
    let archive = ledger.compact_archive_within(DEFAULT_LEVEL, &stop)?;
    if archive.unfinished {
        return Ok(Some((archive, EventsPacked::default())));
    }
    let events = ledger.pack_events_within(&stop)?;
    Ok(Some((archive, events)))
}

/// Why `harnery archive compact` did not compact.
#[derive(Debug, thiserror::Error)]
pub enum CompactNowError {
    #[error(transparent)]
    Lease(#[from] super::lease::LeaseError),
    #[error(transparent)]
    Now(#[from] crate::now::BadNow),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// `harnery archive compact`: every batch of the live epoch's raw archive
/// packed at `level`, under the finalizer lease (waited for as
/// `finalize` waits for it), and the archive's size after.
pub fn compact_now(
    home: &Home,
    level: i32,
) -> Result<(Compacted, crate::ledger::ArchiveSize), CompactNowError> {
    let _lease = Lease::take(home)?;
    let now = crate::now::resolve_now(None)?;
    let mut ledger = LedgerWriter::open(home, now)?;
    let done = ledger.compact_archive(level)?;
    let size = ledger.raw().size()?;
    Ok((done, size))
}

/// `harnery archive compact-events`: the live epoch's event texts moved to
/// compact storage (an epoch an older build wrote; a newer one is compact
/// already and only has its file shrunk if it has free pages), under the
/// finalizer lease.
pub fn compact_events_now(
    home: &Home,
) -> Result<crate::ledger::compact_events::EventsCompacted, CompactNowError> {
    let _lease = Lease::take(home)?;
    let now = crate::now::resolve_now(None)?;
    let mut ledger = LedgerWriter::open(home, now)?;
    Ok(ledger.compact_events()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_table_turns_compaction_off_and_sets_the_budget() {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        assert_eq!(
            CompactSettings::load(&home).unwrap(),
            CompactSettings::default()
        );
        let config = t.path().join("config.toml");
        std::fs::write(&config, "[ship]\nto = 'x'\n[archive]\ncompact = false\n").unwrap();
        assert!(!CompactSettings::load(&home).unwrap().enabled);
        std::fs::write(&config, "[archive]\ncompact_budget_ms = 50\n").unwrap();
        let s = CompactSettings::load(&home).unwrap();
        assert!(s.enabled && s.budget == Some(Duration::from_millis(50)));
        std::fs::write(&config, "[archive]\ncompacts = false\n").unwrap();
        let err = CompactSettings::load(&home).unwrap_err().to_string();
        assert!(
            err.contains("config.toml") && err.contains("compacts"),
            "{err}"
        );
    }
}
