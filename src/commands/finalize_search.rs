//! The search index kept current beside a `finalize` run. Once the run
//! reaches the agents' own records (the hook signals' drain, the run's
//! peak of memory, is over), a thread of its own indexes what each batch
//! committed while the run reads on; after the run, one last catch-up.
//! A run indexes at most its budget of rows in all (`search::finalize_budget`), as when the
//! index was brought up to date after the run alone, so the index holds
//! the same rows afterwards; only the time it took moved off the end of
//! the run. The index is never the truth: a failure is one warning, and
//! the next run (or the next search) catches up from where it stopped.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};

use harnery::finalize::RECORDS_STAGE;
use harnery::home::Home;
use harnery::progress::{Progress, ProgressSink};
use harnery::search::{finalize_budget, update_live_within};

/// Run `run` with a progress handle that also wakes the indexer (and shows
/// on `shown`); then the last catch-up, if the run succeeded.
pub fn beside<T, E>(
    home: &Home,
    shown: Progress,
    run: impl FnOnce(Progress) -> Result<T, E>,
) -> Result<T, E> {
    let (wake, woken) = channel();
    std::thread::scope(|scope| {
        let indexer = std::thread::Builder::new()
            .name("harnery-search".into())
            .spawn_scoped(scope, || index_while_woken(home, woken));
        let Ok(indexer) = indexer else {
            // No thread: the run alone, then the index, as one thread would.
            let ran = run(shown);
            if ran.is_ok() {
                catch_up(home, finalize_budget());
            }
            return ran;
        };
        // The run drops its handle (and so the sender) when it returns,
        // which ends the indexer's loop.
        let ran = run(Progress::to(Arc::new(Waking { shown, wake })));
        let left = indexer.join().expect("the search indexer does not panic");
        if ran.is_ok() && left > 0 {
            catch_up(home, left);
        }
        ran
    })
}

/// What the run tells the indexer.
enum Wake {
    /// The run reads the agents' records now.
    Records,
    /// A batch was committed.
    Committed,
}

/// The run's progress: shown where it was shown before, and each commit
/// (once the records are read) a wake for the indexer.
struct Waking {
    shown: Progress,
    wake: Sender<Wake>,
}

impl ProgressSink for Waking {
    fn total(&self, n: u64) {
        self.shown.total(n);
    }

    fn add(&self, n: u64) {
        self.shown.add(n);
        // An indexer that is gone leaves the last catch-up to do it all.
        let _ = self.wake.send(Wake::Committed);
    }

    fn stage(&self, what: &str) {
        self.shown.stage(what);
        if what == RECORDS_STAGE {
            let _ = self.wake.send(Wake::Records);
        }
    }
}

/// Index what was committed at each wake from the records stage on, until
/// the run is over; the rows of the budget left. Wakes that came while it
/// indexed are one catch-up. A failure here is tried again at the next
/// wake, and the last catch-up reports one that stays.
fn index_while_woken(home: &Home, woken: Receiver<Wake>) -> u64 {
    let mut left = finalize_budget();
    let mut reading = false;
    while let Ok(first) = woken.recv() {
        for w in std::iter::once(first).chain(woken.try_iter()) {
            reading |= matches!(w, Wake::Records);
        }
        if reading
            && left > 0
            && let Ok(read) = update_live_within(home, left)
        {
            left = left.saturating_sub(read);
        }
    }
    left
}

/// Bring the index up to date, `budget` rows at most; a failure is a
/// warning.
fn catch_up(home: &Home, budget: u64) {
    if let Err(e) = update_live_within(home, budget) {
        harnery::terminal::warn(&format!(
            "harnery finalize: the search index was not brought up to date ({e}); \
             the ledger is complete, and the next finalize or search tries again"
        ));
    }
}
