//! Both cores for a job list whose results must come out in order: jobs
//! made on the calling thread, worked on by a few threads, and their
//! results handed, in the order the jobs were made, to one writer thread.
//!
//! Used by the export (the thread that owns the ledger connection reads
//! rows and makes jobs; workers check or build; the writer puts results
//! out, so the output is a single thread's whatever the scheduling) and by
//! `finalize` following the agents' records (one job a session). At most
//! `in_flight` jobs are between the maker and the writer at once, which
//! bounds the memory the pipeline holds to that many jobs and results. A
//! writer that fails (a closed pipe) stops the maker at its next job.

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};

/// How the job maker hands jobs on.
pub(crate) struct Feed<J> {
    jobs: SyncSender<(usize, J)>,
    credits: Receiver<()>,
    next: usize,
}

impl<J> Feed<J> {
    /// Hand on one job, waiting while `in_flight` are already out. False
    /// once the writer has stopped: no job will be used any more.
    pub(crate) fn send(&mut self, job: J) -> bool {
        if self.credits.recv().is_err() {
            return false;
        }
        let sent = self.jobs.send((self.next, job)).is_ok();
        self.next += 1;
        sent
    }
}

/// How many threads work on jobs: one fewer than the cores there are (the
/// reading thread keeps one busy: sharing it with a worker slowed the whole
/// pipeline down), at least one and at most four.
pub(crate) fn workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores - 1).clamp(1, 4)
}

/// Run `produce` here, `work` on `workers` threads and `consume` (over
/// `sink`) on a writer thread, in job order. Returns what `produce`
/// returned, and the sink or the writer's first error.
pub(crate) fn run_ordered<J, R, S, E>(
    workers: usize,
    in_flight: usize,
    produce: impl FnOnce(&mut Feed<J>) -> Result<(), E>,
    work: impl Fn(J) -> R + Sync,
    sink: S,
    mut consume: impl FnMut(&mut S, R) -> io::Result<()> + Send,
) -> (Result<(), E>, io::Result<S>)
where
    J: Send,
    R: Send,
    S: Send,
{
    let (job_tx, job_rx) = sync_channel::<(usize, J)>(in_flight.max(1));
    let job_rx = Mutex::new(job_rx);
    let (done_tx, done_rx) = channel::<(usize, R)>();
    let (credit_tx, credit_rx) = channel::<()>();
    for _ in 0..in_flight.max(1) {
        credit_tx.send(()).expect("the receiver is alive");
    }
    std::thread::scope(|scope| {
        let (work, job_rx) = (&work, &job_rx);
        for _ in 0..workers.max(1) {
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                loop {
                    let job = job_rx.lock().expect("no worker panics holding it").recv();
                    let Ok((i, job)) = job else { break };
                    if done_tx.send((i, work(job))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let writer = scope.spawn(move || {
            let mut sink = sink;
            let mut waiting = BTreeMap::new();
            let mut next = 0;
            for (i, result) in done_rx {
                waiting.insert(i, result);
                while let Some(result) = waiting.remove(&next) {
                    consume(&mut sink, result)?;
                    next += 1;
                    // The maker may be done already; a credit nobody takes
                    // is fine.
                    let _ = credit_tx.send(());
                }
            }
            Ok(sink)
        });
        let mut feed = Feed {
            jobs: job_tx,
            credits: credit_rx,
            next: 0,
        };
        let produced = produce(&mut feed);
        drop(feed);
        let written = writer.join().expect("the writer thread does not panic");
        (produced, written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_out_in_job_order() {
        let (made, written) = run_ordered(
            3,
            4,
            |feed| {
                for i in 0..200u64 {
                    assert!(feed.send(i));
                }
                Ok::<_, ()>(())
            },
            |i| {
                // Later jobs finish first now and then.
                if i % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                i * 2
            },
            Vec::new(),
            |out, r| {
                out.push(r);
                Ok(())
            },
        );
        assert_eq!(made, Ok(()));
        let expected: Vec<u64> = (0..200).map(|i| i * 2).collect();
        assert_eq!(written.unwrap(), expected);
    }

    #[test]
    fn a_failed_writer_stops_the_maker() {
        let (made, written) = run_ordered(
            2,
            2,
            |feed| {
                let mut sent = 0;
                while feed.send(sent) {
                    sent += 1;
                    assert!(sent < 1_000, "the maker was never stopped");
                }
                Ok::<_, ()>(())
            },
            |i: u32| i,
            0u32,
            |_, r| {
                if r == 5 {
                    return Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"));
                }
                Ok(())
            },
        );
        assert_eq!(made, Ok(()));
        assert_eq!(written.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    }
}
