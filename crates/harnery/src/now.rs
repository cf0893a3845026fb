//! The one "now" of every harnery command: `--now` if given, else
//! `HARNERY_NOW` (set and not empty), else the wall clock. Both take a time
//! as [`crate::clock::parse_instant`] reads it: RFC 3339
//! (`2026-11-30T01:00:00Z`) or integer Unix nanoseconds. Tests pin it; a
//! pinned now carries no monotonic clock sample of its own.

/// The environment variable that pins "now" for every harnery command.
pub(crate) const NOW_ENV: &str = "HARNERY_NOW";

#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read {value:?} as a time: give RFC 3339 (2026-11-30T01:00:00Z) or unix nanoseconds"
)]
pub struct BadNow {
    pub value: String,
}

/// The pinned now, if `flag` or `HARNERY_NOW` gives one.
pub fn pinned_now(flag: Option<&str>) -> Result<Option<i64>, BadNow> {
    let env = std::env::var(NOW_ENV).ok().filter(|v| !v.is_empty());
    match flag.map(str::to_string).or(env) {
        Some(value) => parse_time(&value).map(Some),
        None => Ok(None),
    }
}

/// The pinned now, else the wall clock.
pub fn resolve_now(flag: Option<&str>) -> Result<i64, BadNow> {
    Ok(pinned_now(flag)?.unwrap_or_else(crate::clock::wall_now_ns))
}

/// A user-given time (RFC 3339 or integer Unix nanoseconds).
pub(crate) fn parse_time(value: &str) -> Result<i64, BadNow> {
    crate::clock::parse_instant(value).ok_or_else(|| BadNow {
        value: value.to_string(),
    })
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

    #[test]
    fn a_flag_wins_over_the_environment() {
        assert_eq!(pinned_now(Some("7")).unwrap(), Some(7));
        assert!(resolve_now(Some("nonsense")).is_err());
    }
}
