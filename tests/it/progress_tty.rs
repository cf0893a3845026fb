//! Progress bars appear on a terminal and only there: under a real
//! pseudo-terminal (util-linux `script`) the long commands draw one on
//! stderr; with `--json`, or with stderr a pipe, nothing is drawn.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// Run `harnery args…` under a pseudo-terminal; its terminal output.
fn on_a_terminal(home: &Path, args: &[&str]) -> String {
    let bin = assert_cmd::cargo::cargo_bin("harnery");
    let line = format!("{} {}", bin.display(), args.join(" "));
    let out: Output = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("HARNERY_HOME", home)
        .env("HARNERY_NOW", NOW)
        .env("TERM", "xterm")
        .output()
        .expect("util-linux `script` runs");
    assert!(out.status.success(), "{line}: {}", stdout(&out));
    stdout(&out)
}

fn home_with_rows() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    for i in 0..40 {
        inject(
            home.path(),
            &format!("{:020}-p{i}", i + 1),
            small_session(&format!("p{i:02}")),
        );
    }
    assert!(run(home.path(), &["finalize"]).status.success());
    home
}

#[test]
fn a_terminal_gets_progress_and_a_pipe_or_json_gets_none() {
    let home = home_with_rows();
    let h = home.path();
    let shown = on_a_terminal(h, &["verify"]);
    assert!(shown.contains("rows ("), "{shown:?}");
    assert!(shown.contains("ok: 160 rows"), "{shown:?}");
    let shown = on_a_terminal(h, &["validate"]);
    assert!(shown.contains("rows ("), "{shown:?}");
    let shown = on_a_terminal(h, &["export"]);
    assert!(shown.contains("rows ("), "{shown:?}");
    let json = on_a_terminal(h, &["verify", "--json"]);
    assert!(!json.contains("rows ("), "{json:?}");
    assert!(
        !json.contains('\u{1b}'),
        "no escape sequences with --json: {json:?}"
    );
    for args in [&["verify"][..], &["validate"], &["finalize"], &["export"]] {
        let piped = run(h, args);
        assert!(piped.status.success());
        assert_eq!(stderr(&piped), "", "{args:?}: nothing on a piped stderr");
    }
}
