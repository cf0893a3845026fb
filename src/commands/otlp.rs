//! `harnery otlp push`: deliver the ledger's sessions as traces to an
//! OTLP/HTTP receiver, each span once as it is (what each endpoint took
//! is remembered in `HARNERY_HOME/otlp/delivered.sqlite`). Where: flags,
//! else `OTEL_EXPORTER_OTLP_*`, else `[otlp]` in `config.toml`, else
//! `http://localhost:4318/v1/traces`. Every rule is in `harnery::otlp`.

use std::io::Write;

use super::{CmdResult, EpochArg, Outcome};
use harnery::export::{SPANS_PER_DOCUMENT, source};
use harnery::home::Home;
use harnery::otlp::{Layer, PushOptions, PushSummary, Settings, push};
use harnery::report::epochs::Epochs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: OtlpCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum OtlpCommand {
    /// Send the spans an OTLP/HTTP receiver has not taken (new sessions, and what sessions added since).
    #[command(after_help = PUSH_HELP)]
    Push(PushArgs),
}

const PUSH_HELP: &str = "Settings: flags, else OTEL_EXPORTER_OTLP_{ENDPOINT,TRACES_ENDPOINT,HEADERS,\
PROTOCOL,TIMEOUT}, else [otlp] in HARNERY_HOME/config.toml, else http://localhost:4318/v1/traces. \
--content (or [otlp] content) also comes from the config; a change of it sends again every span whose \
words it changes.\n\
Exit codes: 0 delivered (or nothing new); 1 delivered, but the receiver rejected spans or ledger \
rows were left out; 2 the receiver stayed down or refused (nothing is lost: the next push sends \
what this one did not).";

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// Base URL: traces go to <URL>/v1/traces (as OTEL_EXPORTER_OTLP_ENDPOINT).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The traces URL, used as it is (as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
    #[arg(long, value_name = "URL")]
    traces_endpoint: Option<String>,
    /// A header for every request, KEY=VALUE (repeat for more).
    #[arg(long = "header", value_name = "KEY=VALUE")]
    headers: Vec<String>,
    /// http/protobuf (the default) or http/json.
    #[arg(long, value_name = "PROTOCOL")]
    protocol: Option<String>,
    /// Each request's timeout, in milliseconds (default 10000).
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// What of prompts, messages and tools' inputs and outputs the spans
    /// carry, as for `ship`: none (the default: names, ids, times and
    /// counts only, no command lines), masked (secrets replaced), or full.
    #[arg(long, value_name = "MODE", value_parser = ["none", "masked", "full"])]
    content: Option<String>,
    /// Tries again after a 429, 502, 503, 504 or a failed connection.
    #[arg(long, default_value_t = 5)]
    retries: u32,
    /// The most spans one request carries (for a receiver that limits a body's size).
    #[arg(long, default_value_t = SPANS_PER_DOCUMENT as u64, value_parser = clap::value_parser!(u64).range(1..=SPANS_PER_DOCUMENT as u64))]
    spans_per_request: u64,
    /// Only this session (its id, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Count what would be sent; connect to nothing, record nothing.
    #[arg(long)]
    dry_run: bool,
    /// Forget what this endpoint took, and send everything again.
    #[arg(long, conflicts_with = "dry_run")]
    resend: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    match args.command {
        OtlpCommand::Push(a) => run_push(a),
    }
}

fn flag_layer(a: &PushArgs) -> Result<Layer, String> {
    let mut headers = std::collections::BTreeMap::new();
    for h in &a.headers {
        let (k, v) = h
            .split_once('=')
            .ok_or_else(|| format!("--header {h:?} is not KEY=VALUE"))?;
        headers.insert(k.trim().to_string(), v.to_string());
    }
    Ok(Layer {
        endpoint: a.endpoint.clone(),
        traces_endpoint: a.traces_endpoint.clone(),
        headers,
        protocol: a.protocol.clone(),
        timeout_ms: a.timeout_ms,
        content: a.content.clone(),
    })
}

fn run_push(a: PushArgs) -> CmdResult {
    let home = Home::from_env()?;
    let flags = flag_layer(&a)?;
    let env = Layer::from_env(|k| std::env::var(k).ok())?;
    let config = Layer::from_config(home.root())?;
    let settings = Settings::resolve(&[&flags, &env, &config])?;
    let epochs = Epochs::open(&home, &a.epoch.epoch)?;
    epochs.report_unreadable("otlp push")?;
    let sources = source::sources(&epochs, a.session.as_deref(), None)?;
    let progress = super::progress::bar("rows", a.json);
    progress.stage("push");
    let options = PushOptions {
        spans_per_request: a.spans_per_request as usize,
        retries: a.retries,
        dry_run: a.dry_run,
    };
    let summary = push(
        &home, &epochs, &sources, &settings, &options, a.resend, &progress,
    )?;
    drop(progress);
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string(&summary)?)?;
    } else {
        write!(out, "{}", text(&summary))?;
    }
    for message in summary.rejections.iter().filter(|m| !m.is_empty()) {
        eprintln!("harnery otlp push: the receiver said: {message}");
    }
    let set_aside = epochs.report_set_aside("otlp push");
    Ok(Outcome::problems_if(
        summary.rejected_spans > 0 || summary.rows_left_out > 0 || set_aside,
    ))
}

fn text(s: &PushSummary) -> String {
    let verb = if s.dry_run { "would send" } else { "sent" };
    let mut out = format!(
        "{}: {verb} {} spans of {} traces in {} requests ({}); {} spans already there; \
         {} sessions unchanged since the last push\n",
        s.endpoint,
        s.spans_sent,
        s.traces,
        s.requests,
        s.protocol,
        s.spans_unchanged,
        s.sessions_unchanged
    );
    if s.retries > 0 {
        out.push_str(&format!("{} requests tried again\n", s.retries));
    }
    if s.rejected_spans > 0 {
        out.push_str(&format!(
            "the receiver rejected {} spans\n",
            s.rejected_spans
        ));
    }
    if s.rows_left_out > 0 {
        out.push_str(&format!(
            "{} ledger rows left out (named above)\n",
            s.rows_left_out
        ));
    }
    out
}
