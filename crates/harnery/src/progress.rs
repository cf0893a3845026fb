//! Progress of long work (a drain, a chain check, an export, a scan), told
//! to whoever watches. The library only counts; `cli` decides whether a
//! person is watching (a terminal on stderr, no `--json`) and draws it.
//! The default reports to nobody and costs a branch per call.
//! [`timing`] tells, on request, how long each phase of a run took.

use std::sync::Arc;

/// With `HARNERY_TIMING` set, tell on stderr how long a phase of a run took
/// (`timing <phase>: <elapsed>`), for whoever measures where a run's time goes.
pub(crate) fn timing(phase: &str, since: std::time::Instant) {
    if std::env::var_os("HARNERY_TIMING").is_some() {
        eprintln!("timing {phase}: {:?}", since.elapsed());
    }
}

/// Where progress goes.
pub trait ProgressSink: Send + Sync {
    /// The work is `n` units in all (rows, bytes), once that is known.
    fn total(&self, n: u64);
    /// `n` more units are done.
    fn add(&self, n: u64);
    /// The work moved on to another stage.
    fn stage(&self, what: &str);
}

/// A handle to a sink, or to nobody.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn ProgressSink>>);

impl Progress {
    /// Progress that reports to nobody.
    pub fn none() -> Progress {
        Progress(None)
    }

    pub fn to(sink: Arc<dyn ProgressSink>) -> Progress {
        Progress(Some(sink))
    }

    pub(crate) fn total(&self, n: u64) {
        if let Some(s) = &self.0 {
            s.total(n);
        }
    }

    pub(crate) fn add(&self, n: u64) {
        if let Some(s) = &self.0 {
            s.add(n);
        }
    }

    pub fn stage(&self, what: &str) {
        if let Some(s) = &self.0 {
            s.stage(what);
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(shown)"
        } else {
            "Progress(none)"
        })
    }
}
