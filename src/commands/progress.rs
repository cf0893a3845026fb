//! Progress bars on stderr, for a person at a terminal only: never when
//! stderr is not a terminal (a pipe, a file, cron), never with `--json`,
//! never in the hook (which has no CLI). Drawn with `indicatif`; cleared
//! when the command ends.

use std::io::IsTerminal;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

use harnery::progress::{Progress, ProgressSink};

/// A bar counting `unit`s (rows, events, bytes) for a command whose
/// output is `json` or not.
pub fn bar(unit: &'static str, json: bool) -> Progress {
    if json || !std::io::stderr().is_terminal() {
        return Progress::none();
    }
    Progress::to(Arc::new(Bar::new(unit)))
}

struct Bar {
    bar: ProgressBar,
    unit: &'static str,
}

impl Bar {
    fn new(unit: &'static str) -> Bar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_finish(ProgressFinish::AndClear);
        bar.set_style(spinner_style(unit));
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Bar { bar, unit }
    }
}

fn spinner_style(unit: &str) -> ProgressStyle {
    ProgressStyle::with_template(&format!(
        "{{spinner}} {{msg}} {{human_pos}} {unit} ({{per_sec}}, {{elapsed}})"
    ))
    .expect("the template is valid")
}

fn bar_style(unit: &str) -> ProgressStyle {
    let template = if unit == "bytes" {
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})".to_string()
    } else {
        format!(
            "{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{per_sec}}, eta {{eta}})"
        )
    };
    ProgressStyle::with_template(&template)
        .expect("the template is valid")
        .progress_chars("=> ")
}

impl ProgressSink for Bar {
    fn total(&self, n: u64) {
        self.bar.set_length(n);
        self.bar.set_style(bar_style(self.unit));
    }

    fn add(&self, n: u64) {
        self.bar.inc(n);
    }

    fn stage(&self, what: &str) {
        self.bar.set_message(what.to_string());
    }
}
