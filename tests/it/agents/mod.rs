//! The agents' own records: the normalizers over every checked-in record.

mod gemini_cli;
mod record_normalizers;
