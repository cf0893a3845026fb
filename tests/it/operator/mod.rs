//! The operator's commands: `harnery exec`.

mod exec;
