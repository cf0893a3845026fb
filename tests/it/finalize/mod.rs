//! `harnery finalize`: chunks, the corpus, crashes and kills, records, the WAL.

mod after_run;
mod batch_results;
mod chunks;
mod corpus;
mod crash;
mod kill_campaign;
mod quiet;
mod record_kill;
mod record_output;
pub(crate) mod records;
mod records_corpus;
mod unchanged;
mod wal;
