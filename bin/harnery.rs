//! The `harnery` command line: parse, dispatch, map the outcome to an exit code.
fn main() -> std::process::ExitCode {
    harnery::cli::main()
}
