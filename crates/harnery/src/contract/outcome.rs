//! The one rule for a span's outcome once its exit code is known, read by
//! every layer that files or shows an outcome (the ledger's span rows,
//! search, `show`, the read side's spans). It decides nothing about what
//! an event holds: the events keep what the agent said.

use super::payload::Outcome;

impl Outcome {
    /// The outcome a span ended with, once its exit code is known: a
    /// non-zero exit is a failure, whatever the agent called the result
    /// (Copilot reports a shell command that exited 3 as `success`, and
    /// only its record has the exit code). An interrupted call stays
    /// interrupted. The one rule every reader of an outcome applies; the
    /// events keep what the agent said.
    pub fn judged(self, exit_code: Option<i64>) -> Outcome {
        match (self, exit_code) {
            (Outcome::Success | Outcome::Unknown, Some(code)) if code != 0 => Outcome::Failure,
            (outcome, _) => outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    #[test]
    fn a_non_zero_exit_is_a_failure_and_an_interrupt_stays_one() {
        assert_eq!(Outcome::Success.judged(Some(3)), Outcome::Failure);
        assert_eq!(Outcome::Unknown.judged(Some(-1)), Outcome::Failure);
        assert_eq!(Outcome::Success.judged(Some(0)), Outcome::Success);
        assert_eq!(Outcome::Success.judged(None), Outcome::Success);
        assert_eq!(Outcome::Interrupted.judged(Some(130)), Outcome::Interrupted);
        assert_eq!(Outcome::Failure.judged(Some(0)), Outcome::Failure);
    }
}
