//! Time as harnery records it: UTC wall time plus a boot-relative monotonic
//! sample (boot id + CLOCK_BOOTTIME). Two samples bound an interval only when
//! they share one boot id; across boots they prove nothing.

use serde::{Deserialize, Serialize};

/// A boot-relative monotonic clock reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSample {
    pub boot_id: Option<String>,
    pub boottime_ns: Option<u64>,
}
