//! The `harnery` command line: one module per subcommand, each parsing its
//! arguments, calling the library (`harnery`) and printing. The process
//! entry point is `bin/harnery.rs`.

pub mod commands;
