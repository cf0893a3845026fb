//! `harnery-hook <adapter> [event]`: record one agent hook signal.
//!
//! Always exits 0 and never writes to stdout, whatever happens; see
//! `harnery_spool::spool::hook` for the guarantees and their bounds.
fn main() {
    harnery_spool::spool::hook::guard_process();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let _ = std::panic::catch_unwind(move || harnery_spool::spool::hook::run(args));
    std::process::exit(0);
}
