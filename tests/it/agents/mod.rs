//! The agents' own records: the normalizers over every checked-in record.

mod codex;
mod record_normalizers;
