//! `harnery export`: JSONL and OTLP streams, trace rows.

mod otlp_proto;
mod stream;
mod trace_rows;
