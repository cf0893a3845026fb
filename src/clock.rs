//! Time as harnery records it: UTC wall time plus a boot-relative monotonic
//! sample (boot id + CLOCK_BOOTTIME). Two samples bound an interval only when
//! they share one boot id; across boots they prove nothing.
