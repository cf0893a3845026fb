//! The agents' own records: the normalizers over every checked-in record.

mod opencode;
mod record_normalizers;
