//! `finalize_overdue`: signals wait in the spool and no `harnery finalize`
//! has run for longer than a working schedule would allow, so nothing the
//! agents did lately reaches the ledger. Judged from the time the last run
//! recorded (`finalize::last_run`, outside the ledger) and the spool's
//! facts; the condition says which schedule is installed, if any, since
//! that is what to fix.

use serde::Serialize;

use super::health::{Condition, SpoolFacts, human_age};
use crate::home::Home;
use crate::install::schedule::{self, Installed};

/// The condition's code.
pub const FINALIZE_OVERDUE: &str = "finalize_overdue";

/// How long without a finalize, with signals waiting at least as long,
/// before `health` says so: ten runs of the once-a-minute schedule
/// `harnery install` sets up.
pub const FINALIZE_OVERDUE_NS: i64 = 10 * 60 * 1_000_000_000;

/// What `health` knows about finalize runs; these fields are added to the
/// `finalize_overdue` condition's JSON line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FinalizeFacts {
    /// When the last run finished (absent: none recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_finalize_unix_ns: Option<i64>,
    /// Signals waiting in the intake spool.
    pub pending_signals: u64,
    /// The oldest of them was received then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_pending_unix_ns: Option<i64>,
    /// The schedule installed for this home: `systemd`, `cron` or `none`
    /// (looked for only when the condition is present).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<&'static str>,
}

/// The facts of `home`: its last recorded run and its spool.
pub fn facts(home: &Home, spool: &SpoolFacts) -> FinalizeFacts {
    FinalizeFacts {
        last_finalize_unix_ns: crate::finalize::last_run::read(home).map(|r| r.finished_unix_ns),
        pending_signals: spool.sessions.iter().map(|s| s.records).sum(),
        oldest_pending_unix_ns: spool.sessions.iter().map(|s| s.oldest_unix_ns).min(),
        schedule: None,
    }
}

/// Whether the facts make the condition, judged at `now_ns`: signals
/// have waited past [`FINALIZE_OVERDUE_NS`], and the last run (if any)
/// is older than that too.
pub fn is_overdue(facts: &FinalizeFacts, now_ns: i64) -> bool {
    let waited = facts
        .oldest_pending_unix_ns
        .is_some_and(|t| now_ns - t > FINALIZE_OVERDUE_NS);
    let quiet = facts
        .last_finalize_unix_ns
        .is_none_or(|t| now_ns - t > FINALIZE_OVERDUE_NS);
    facts.pending_signals > 0 && waited && quiet
}

/// The condition for `home`, when overdue; fills in `facts.schedule`.
pub fn condition(home: &Home, facts: &mut FinalizeFacts, now_ns: i64) -> Option<Condition> {
    if !is_overdue(facts, now_ns) {
        return None;
    }
    let installed = crate::home::user_dir()
        .ok()
        .map(|user| schedule::installed(home.root(), &user));
    facts.schedule = installed.as_ref().map(Installed::kind);
    Some(Condition {
        code: FINALIZE_OVERDUE.into(),
        session: None,
        at_unix_ns: facts.last_finalize_unix_ns,
        detail: detail(facts, installed.as_ref(), now_ns),
    })
}

/// "no finalize for 2h00m while the spool holds 14 signal(s) …", then
/// what to look at for the schedule found.
fn detail(facts: &FinalizeFacts, installed: Option<&Installed>, now_ns: i64) -> String {
    let since = match facts.last_finalize_unix_ns {
        Some(t) => format!("no finalize for {}", human_age(now_ns - t)),
        None => "no finalize recorded".to_string(),
    };
    let oldest = facts.oldest_pending_unix_ns.map_or(0, |t| now_ns - t);
    let why = match installed {
        Some(Installed::Systemd(timer)) => {
            let name = timer
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stem = name.trim_end_matches(".timer");
            format!(
                "the systemd user timer {} is installed but did not run it: see `systemctl --user \
                 status {name}` and `journalctl --user -u {stem}` (a user systemd stops at logout \
                 unless `loginctl enable-linger` is set)",
                timer.display()
            )
        }
        Some(Installed::Cron) => "harnery's crontab line is installed but did not run it: is cron \
             running? (cron mails a failed run's errors to the user)"
            .to_string(),
        Some(Installed::None) | None => "is the schedule installed? `harnery install <agent>` \
             (or `harnery install schedule`) sets it up"
            .to_string(),
    };
    format!(
        "{since} while the spool holds {} signal(s), the oldest waiting {}: {why}",
        facts.pending_signals,
        human_age(oldest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60 * 1_000_000_000;

    fn facts(last: Option<i64>, pending: u64, oldest: Option<i64>) -> FinalizeFacts {
        FinalizeFacts {
            last_finalize_unix_ns: last,
            pending_signals: pending,
            oldest_pending_unix_ns: oldest,
            schedule: None,
        }
    }

    #[test]
    fn overdue_needs_waiting_signals_and_a_quiet_finalize() {
        let now = 1_000 * MIN;
        // Two hours quiet, signals waiting for 118 minutes.
        assert!(is_overdue(
            &facts(Some(now - 120 * MIN), 14, Some(now - 118 * MIN)),
            now
        ));
        // Never ran, signals waiting past the limit.
        assert!(is_overdue(&facts(None, 1, Some(now - 11 * MIN)), now));
        // A fresh run: the schedule works (old signals are `stale_spool`'s).
        assert!(!is_overdue(
            &facts(Some(now - MIN), 14, Some(now - 118 * MIN)),
            now
        ));
        // Nothing waits.
        assert!(!is_overdue(&facts(Some(now - 120 * MIN), 0, None), now));
        // A signal that just arrived after a quiet day: not yet.
        assert!(!is_overdue(
            &facts(Some(now - 120 * MIN), 2, Some(now - 5 * MIN)),
            now
        ));
        // Exactly at the limit is not past it.
        assert!(!is_overdue(
            &facts(Some(now - 10 * MIN), 2, Some(now - 10 * MIN)),
            now
        ));
    }

    #[test]
    fn the_detail_says_how_long_and_what_to_do() {
        let now = 1_000 * MIN;
        let f = facts(Some(now - 120 * MIN), 14, Some(now - 118 * MIN));
        assert_eq!(
            detail(&f, Some(&Installed::None), now),
            "no finalize for 2h00m while the spool holds 14 signal(s), the oldest waiting 1h58m: \
             is the schedule installed? `harnery install <agent>` (or `harnery install schedule`) \
             sets it up"
        );
        let f = facts(None, 3, Some(now - 11 * MIN));
        let text = detail(&f, Some(&Installed::Cron), now);
        assert!(text.starts_with("no finalize recorded while the spool holds 3 signal(s), the oldest waiting 11m00s: harnery's crontab line"), "{text}");
    }
}
