//! What `validate` reports: one row that breaks a contract or ledger
//! rule, named by its event id and the rule.

use serde::Serialize;

/// One row that breaks a contract or ledger rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationProblem {
    pub event_id: String,
    /// `rule-N-name` for the validator rules, else a ledger rule name.
    pub rule: String,
    pub detail: String,
}

pub(super) fn problem(id: &str, rule: &str, detail: String) -> ValidationProblem {
    ValidationProblem {
        event_id: id.to_string(),
        rule: rule.to_string(),
        detail,
    }
}
