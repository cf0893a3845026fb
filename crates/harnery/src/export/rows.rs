//! Rows as the reading thread hands them on: consecutive rows of one
//! source, their stored text side by side in one buffer.

use crate::ledger::StoredText;

/// Consecutive rows of one source as read (a JSON lines job, or one
/// session's rows for OTLP): their stored text, each followed by a newline
/// (so that, all rows sound and untagged, a JSON lines job is its own
/// output), their ids, and each row's (seq, end of id, end of text).
pub(super) struct RowBatch {
    pub source: usize,
    pub text: Vec<u8>,
    ids: Vec<u8>,
    rows: Vec<(i64, usize, usize)>,
}

impl RowBatch {
    pub(crate) fn new(source: usize, bytes: usize) -> RowBatch {
        RowBatch {
            source,
            text: Vec::with_capacity(bytes + 4096),
            ids: Vec::new(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, row: StoredText<'_>) {
        self.ids.extend_from_slice(row.id.as_bytes());
        self.text.extend_from_slice(row.json);
        self.rows.push((row.seq, self.ids.len(), self.text.len()));
        self.text.push(b'\n');
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Each row: seq, id, stored text (without its newline).
    pub(crate) fn each(&self) -> impl Iterator<Item = (i64, &[u8], &[u8])> {
        let mut starts = (0, 0);
        self.rows.iter().map(move |&(seq, id_end, end)| {
            let (id, text) = (&self.ids[starts.0..id_end], &self.text[starts.1..end]);
            starts = (id_end, end + 1);
            (seq, id, text)
        })
    }
}
