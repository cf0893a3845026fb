//! The claude_code dialect of the agent's own record (normalizer in progress).

use super::RecordLine;
use crate::contract::RecordAt;

/// Read one line of the record.
pub fn read_line(_line: &[u8], _at: &RecordAt) -> RecordLine {
    RecordLine::empty()
}
