//! The read side's "now", injectable for tests: `--now`, else `HARNERY_NOW`,
//! else the wall clock. Either form is accepted: RFC 3339
//! (`2026-11-30T01:00:00Z`) or integer unix nanoseconds, the unit every
//! ledger row uses.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The environment variable that pins "now" for every harnery command.
pub const NOW_ENV: &str = "HARNERY_NOW";

#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read {value:?} as a time: give RFC 3339 (2026-11-30T01:00:00Z) or unix nanoseconds"
)]
pub struct BadNow {
    pub value: String,
}

/// `flag` if given, else `HARNERY_NOW` if set, else the wall clock.
pub fn resolve_now(flag: Option<&str>) -> Result<i64, BadNow> {
    let env = std::env::var(NOW_ENV).ok().filter(|v| !v.is_empty());
    match flag.map(str::to_string).or(env) {
        Some(value) => parse_time(&value),
        None => Ok(crate::clock::wall_now_ns()),
    }
}

/// RFC 3339 or integer unix nanoseconds.
pub fn parse_time(value: &str) -> Result<i64, BadNow> {
    let bad = || BadNow {
        value: value.to_string(),
    };
    if let Ok(ns) = value.trim().parse::<i64>() {
        return Ok(ns);
    }
    let parsed = OffsetDateTime::parse(value.trim(), &Rfc3339).map_err(|_| bad())?;
    i64::try_from(parsed.unix_timestamp_nanos()).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_parse() {
        assert_eq!(parse_time("1000").unwrap(), 1000);
        assert_eq!(
            parse_time("2026-11-30T00:00:00Z").unwrap(),
            1_795_996_800_000_000_000
        );
        assert!(parse_time("yesterday").is_err());
    }
}
