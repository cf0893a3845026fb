//! The spool: `harnery spool`, sealing while writers append.

mod cli;
mod seal;
