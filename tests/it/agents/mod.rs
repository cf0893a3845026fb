//! The agents' own records: the normalizers over every checked-in record.

mod record_normalizers;
