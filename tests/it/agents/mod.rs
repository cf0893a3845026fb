//! The agents' own records: the normalizers over every checked-in record.

mod qwen;
mod record_normalizers;
