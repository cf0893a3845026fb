//! The `harnery` command line: one module per subcommand, each parsing its
//! arguments, calling the library (`harnery`) and printing. The process
//! entry point is `bin/harnery.rs`.

// The arguments' doc comments are also clap's help text, where a
// placeholder is written `<name>`: rustdoc would read it as an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

pub mod commands;
