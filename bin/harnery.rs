//! The `harnery` command line: parse, dispatch, map the outcome to an exit code.

// `finalize` allocates on its stage-one thread and frees on the append
// thread; glibc's arenas serialise those frees on a lock, mimalloc does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    harnery::cli::main()
}
