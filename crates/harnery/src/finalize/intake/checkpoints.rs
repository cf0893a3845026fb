//! The drain's fourth thread: it makes committed batches durable (one WAL
//! sync for all committed so far), only then releases them (deletes their
//! intake files), and checkpoints the WAL every [`CHECKPOINT_EVERY`]
//! batches, or at once when the appending thread is to start the WAL over.

use std::sync::mpsc::{Receiver, Sender};

use super::super::FinalizeError;
use super::super::apply::release;
use crate::failpoint;
use crate::home::Home;
use crate::ledger::{Checkpointer, LedgerError};

/// The checkpoint thread's work until the appending thread hangs up: each
/// time, every batch committed so far is synced and released, and every
/// [`CHECKPOINT_EVERY`] batches (or for a restart) the WAL is checkpointed
/// and the appending thread told how far, and whether the WAL can start
/// over.
pub(super) fn run(
    home: &Home,
    checkpointer: &Checkpointer,
    to_release: Receiver<Committed>,
    checkpointed: Sender<Checkpointed>,
) -> Result<(), FinalizeError> {
    let mut unchecked = 0;
    while let Ok(first) = to_release.recv() {
        // Everything committed so far is covered by one sync.
        let batches: Vec<Committed> = std::iter::once(first)
            .chain(to_release.try_iter())
            .collect();
        checkpointer.sync_wal().map_err(durability)?;
        for c in &batches {
            release(home, &c.sources)?;
        }
        let restart = batches.iter().any(|c| c.restart);
        unchecked += batches.len();
        if !restart && unchecked < CHECKPOINT_EVERY {
            continue;
        }
        unchecked = 0;
        failpoint::delay("slow-checkpoint");
        let restartable = checkpointer.run(restart).map_err(durability)?;
        let through = batches.last().map_or(0, |c| c.number);
        // The appending thread may be gone already; nothing waits.
        let _ = checkpointed.send(Checkpointed {
            through,
            restartable,
        });
    }
    Ok(())
}

/// A committed batch whose intake files wait for the WAL sync that makes
/// its commit durable.
pub(super) struct Committed {
    /// The batch's place in this drain, from 0.
    pub(super) number: usize,
    /// Checkpoint with a restart of the WAL: the appending thread waits.
    pub(super) restart: bool,
    pub(super) sources: Vec<String>,
}

/// The checkpoint thread's report: batches up to `through` are durable and
/// checkpointed, and whether the WAL can start over (see
/// `Checkpointer::run`).
pub(super) struct Checkpointed {
    pub(super) through: usize,
    pub(super) restartable: bool,
}

/// Batches committed between two checkpoints of a drain (one that lets the
/// WAL start over checkpoints at once). Each checkpoint copies the pages
/// changed since the last into the database file, and every batch changes
/// the same few (each b-tree's last leaf and the pages above it): a
/// checkpoint after every batch copied those each time, 1.6–2.9 CPU-s of a
/// 1M drain, against 0.9–1.35 for one every 16th (docs/perf/figures.md).
/// The WAL's size is still read after every commit
/// (`LedgerWriter::wal_frames`), so it starts over at its limit; its syncs,
/// and so the release of committed batches, stay one per loop.
const CHECKPOINT_EVERY: usize = 16;

/// WAL frames (16 KiB pages) past which the appending thread waits for a
/// checkpoint so that the WAL starts over (see `drain`): 256 MiB. Each
/// wait costs the appending thread a WAL sync and a checkpoint of the
/// batch it has just committed (tens of milliseconds), so not every batch;
/// `HARNERY_WAL_RESTART_FRAMES` overrides it in failpoint builds, for tests.
const WAL_RESTART_FRAMES: u64 = 16384;

pub(super) fn wal_restart_frames() -> u64 {
    failpoint::tuning(failpoint::WAL_RESTART_FRAMES_ENV).unwrap_or(WAL_RESTART_FRAMES)
}

fn durability(e: LedgerError) -> FinalizeError {
    FinalizeError::Durability(format!("checkpoint: {e}"))
}
