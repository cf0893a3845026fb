//! Time as harnery records it: UTC wall time plus a boot-relative monotonic
//! sample (boot id + CLOCK_BOOTTIME). Two samples bound an interval only when
//! they share one boot id; across boots they prove nothing.
//!
//! Reading a sample costs one small file read and one `clock_gettime`; both
//! may fail (no `/proc`, a sandbox), in which case the field is `None` and
//! consumers treat the interval as unknown.

use serde::{Deserialize, Serialize};

/// A boot-relative monotonic clock sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ClockSample {
    /// `/proc/sys/kernel/random/boot_id`, trimmed (a UUID, new every boot).
    pub boot_id: Option<String>,
    /// `CLOCK_BOOTTIME` in nanoseconds (counts suspended time too).
    pub boottime_ns: Option<u64>,
}

impl ClockSample {
    /// Sample the boot id and `CLOCK_BOOTTIME` now.
    pub fn now() -> ClockSample {
        ClockSample {
            boot_id: boot_id(),
            boottime_ns: boottime_ns(),
        }
    }
}

/// The current boot id, if the kernel exposes it.
pub fn boot_id() -> Option<String> {
    let raw = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = raw.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// `CLOCK_BOOTTIME` in nanoseconds.
pub fn boottime_ns() -> Option<u64> {
    use rustix::time::{ClockId, DynamicClockId, clock_gettime_dynamic};
    let ts = clock_gettime_dynamic(DynamicClockId::Known(ClockId::Boottime)).ok()?;
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// UTC wall time in nanoseconds since the Unix epoch (negative before 1970).
pub fn wall_now_ns() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

/// Parse an RFC 3339 time (an agent's ISO-8601 timestamp, a command-line
/// `--since`) as UTC nanoseconds since the Unix epoch; the inverse of
/// [`format_ns`].
pub fn parse_rfc3339_ns(text: &str) -> Option<i64> {
    let t =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos()).ok()
}

/// Parse a time a user gives (`--now`, `HARNERY_NOW`, `--since`,
/// `--until`): integer Unix nanoseconds (the unit every ledger row uses) or
/// RFC 3339, surrounding blanks ignored. The one parser of user-given
/// times; an agent's own timestamps go through [`parse_rfc3339_ns`] alone.
pub fn parse_instant(text: &str) -> Option<i64> {
    let text = text.trim();
    text.parse::<i64>().ok().or_else(|| parse_rfc3339_ns(text))
}

/// Format unix nanoseconds as RFC 3339 UTC (for human output).
pub fn format_ns(ns: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns))
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("{ns}ns"))
}

/// UTC time of a nanosecond timestamp as RFC 3339 with milliseconds
/// (`2026-11-30T01:00:00.000Z`; the digits alone when out of range), as
/// tables and listings show it.
pub fn format_time(unix_ns: i64) -> String {
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ns)) else {
        return unix_ns.to_string();
    };
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&fmt).unwrap_or_else(|_| unix_ns.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_are_pinned() {
        let ns = 1_780_000_000_123_456_789;
        assert_eq!(format_time(ns), "2026-05-28T20:26:40.123Z");
        assert_eq!(format_ns(ns), "2026-05-28T20:26:40.123456789Z");
        assert_eq!(parse_rfc3339_ns(&format_ns(ns)), Some(ns));
    }

    #[test]
    fn sample_is_monotonic_within_a_boot() {
        let a = ClockSample::now();
        let b = ClockSample::now();
        assert_eq!(a.boot_id, b.boot_id);
        if let (Some(a), Some(b)) = (a.boottime_ns, b.boottime_ns) {
            assert!(b >= a, "{b} < {a}");
        }
        assert!(wall_now_ns() > 1_600_000_000_000_000_000);
    }

    #[test]
    fn an_instant_is_unix_nanoseconds_or_rfc_3339() {
        assert_eq!(parse_instant("1000"), Some(1000));
        assert_eq!(parse_instant("-5"), Some(-5));
        let day = Some(1_795_996_800_000_000_000);
        assert_eq!(parse_instant("2026-11-30T00:00:00Z"), day);
        assert_eq!(parse_instant(" 2026-11-30T01:00:00+01:00 "), day);
        assert_eq!(parse_instant("yesterday"), None);
        assert_eq!(parse_instant(""), None);
        assert_eq!(parse_rfc3339_ns("1000"), None);
    }
}
