//! `harnery`: the command line's entry point. It sets up the process (the
//! allocator, transparent huge pages off, SQLite's allocation counts off)
//! and hands over to `harnery_cli`, which parses, dispatches and maps the
//! outcome to an exit code.

use std::ffi::{c_int, c_long};

// `finalize` allocates on its stage-one thread and frees on the append
// thread; glibc's arenas serialise those frees on a lock, mimalloc does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
    #[cfg(test)]
    fn mi_option_get(option: c_int) -> c_long;
}

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_e`).
const MI_OPTION_PURGE_DELAY: c_int = 15;
/// How long freed memory stays committed before it is handed back to the
/// kernel (see `main`).
const PURGE_DELAY_MS: c_long = 250;

fn main() -> std::process::ExitCode {
    // Memory one finalize chunk frees is wanted again by the next chunk
    // tens of milliseconds later; handed back to the kernel before that,
    // it would come back as fresh pages to fault in and zero. Never
    // handed back, though, every region a drain's large buffers ever
    // spread over stays resident: a 1M-signal drain's peak RSS then
    // ranged 123-156 MiB from run to run, against 93-112 MiB when memory
    // idle for 250 ms is returned (at about four times the page faults,
    // 130-182k against 31-37k, and no time measurably lost). mimalloc's
    // own default is 1000 ms (116-135 MiB).
    // SAFETY: setting an option before any thread starts; the option id
    // is checked against mimalloc's default in the test below.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    // mimalloc asks for transparent huge pages, so each arena region a
    // thread touches would be backed 2 MiB at a time: read commands that
    // stream (a few threads, each with a little memory) were a third to a
    // half larger in resident memory with them, and finalize no faster.
    // Its own option comes too late here (the first arena exists before
    // `main`); the kernel's per-process switch covers every later fault.
    // SAFETY: a plain prctl on this process; failure leaves THP as it was.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    // SQLite counts every allocation for `sqlite3_status` under one global
    // mutex, which finalize's threads (appending, normalizing, checkpointing,
    // indexing) take turns on: about 6% of a 1M-signal finalize's time.
    // Nothing here reads those counts (`PRAGMA shrink_memory` does not
    // need them).
    // SAFETY: a configuration call with its one int argument, made before
    // anything uses SQLite (the only time SQLite takes it).
    let counting = unsafe {
        rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int)
    };
    debug_assert_eq!(
        counting,
        rusqlite::ffi::SQLITE_OK,
        "SQLite is configured before its first use"
    );
    harnery_cli::commands::main()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // mimalloc v3's default purge delay is 1000 ms (options.c); a
        // shifted option table would show another value here.
        // SAFETY: reading an option takes no pointer and mimalloc is
        // initialised on first use.
        assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, 1000);
    }
}
