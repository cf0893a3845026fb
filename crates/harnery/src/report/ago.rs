//! Times for people: how long ago something happened ("just now", "3 min
//! ago", "5 h ago", "yesterday", "4 days ago"), and the date beyond a week.
//! Machine output (`--json`) keeps absolute times; this is only for text.

const MINUTE: i64 = 60 * 1_000_000_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// How long before `now_unix_ns` the time `unix_ns` was, in words. A time
/// ahead of now (a clock that ran fast) is "just now" within a minute,
/// else its date.
pub fn ago(unix_ns: i64, now_unix_ns: i64) -> String {
    let past = now_unix_ns.saturating_sub(unix_ns);
    match past {
        p if p < -MINUTE => date(unix_ns),
        p if p < MINUTE => "just now".into(),
        p if p < HOUR => format!("{} min ago", p / MINUTE),
        p if p < DAY => format!("{} h ago", p / HOUR),
        p if p < 2 * DAY => "yesterday".into(),
        p if p < 7 * DAY => format!("{} days ago", p / DAY),
        _ => date(unix_ns),
    }
}

/// The UTC date of `unix_ns` (`2026-11-30`).
fn date(unix_ns: i64) -> String {
    let full = crate::clock::format_time(unix_ns);
    full.get(..10).map_or(full.clone(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_range_reads_as_people_say_it() {
        let now = 1_796_000_000 * 1_000_000_000;
        assert_eq!(ago(now - 5 * 1_000_000_000, now), "just now");
        assert_eq!(ago(now + 5 * 1_000_000_000, now), "just now");
        assert_eq!(ago(now - 3 * MINUTE, now), "3 min ago");
        assert_eq!(ago(now - 5 * HOUR - MINUTE, now), "5 h ago");
        assert_eq!(ago(now - 30 * HOUR, now), "yesterday");
        assert_eq!(ago(now - 4 * DAY, now), "4 days ago");
        assert_eq!(ago(now - 30 * DAY, now), "2026-10-31");
        assert_eq!(ago(now + 2 * DAY, now), "2026-12-02");
    }
}
