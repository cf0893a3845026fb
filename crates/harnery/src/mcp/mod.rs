//! What `harnery mcp` answers, without the protocol: the tools an agent
//! can call to recall its own history (search, sessions, one session's
//! turns, usage, a file's history, checkpoints and restore plans), each
//! with its input schema, each answer a short readable text and the same
//! facts as structured JSON. The command line's MCP glue (rmcp, stdio)
//! only lists [`specs`] and hands each call to [`Tools::call`].
//!
//! Read-only: every call opens the ledger's epochs as a reader, afresh (a
//! session finalized a moment ago is there on the next call), and writes
//! nothing to them. `search` and `file_history` bring the search index up
//! to date first, exactly as `harnery search` does: the index is its own
//! derived file under the home (`search/index.sqlite`), never the ledger.
//!
//! Every answer fits a budget ([`Budget`]): a client's context is
//! precious, so a long list stops early and says which `offset` asks for
//! the rest, and a long text is cut and says so. Text is masked as `ship
//! --content masked` masks it (`[mcp] content = "full"` in the config
//! turns that off; [`Content`]).

mod args;
mod budget;
mod find;
mod history;
mod restore;
mod sessions;

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use budget::{Budget, Content, SetupError};

use crate::home::Home;

/// One tool: its name, what it does, and the JSON Schema of its arguments.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: serde_json::Map<String, Value>,
}

/// A tool's answer: the text a model reads, and the same facts as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub text: String,
    pub structured: Value,
}

/// Why a call has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No tool has this name (a protocol error: the client asked for
    /// something `tools/list` never offered).
    #[error("there is no tool {0:?}; the tools are {list}", list = names().join(", "))]
    UnknownTool(String),
    /// The arguments do not fit the tool's schema, or name what is not
    /// there (a tool error the model can read and correct).
    #[error("{0}")]
    BadArguments(String),
    /// The tool ran and could not answer (a damaged ledger, an unknown
    /// session, a failed read).
    #[error("{0}")]
    Failed(String),
}

impl CallError {
    fn failed(e: impl std::fmt::Display) -> CallError {
        CallError::Failed(e.to_string())
    }
}

/// Every tool, in the order `tools/list` gives them.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        spec::<find::SearchArgs>(
            "search",
            "Search past sessions",
            "Find what agents said or did in earlier sessions recorded by harnery: prompts, \
             assistant messages, reasoning, tool inputs and outputs, commands. Query syntax: \
             words must all match (any case); pre* is a prefix; \"two words\" is a phrase; text \
             with punctuation (src/ledger, --force) or quoted is found anywhere, inside words \
             too (3 characters at least). Each hit names its session and offset: call `session` \
             with that offset to read around it.",
        ),
        spec::<sessions::SessionsArgs>(
            "sessions",
            "List recorded sessions",
            "Recorded sessions, the most recently started first: agent, id, start and last \
             activity, turns, events, tool spans and their outcomes. Page with offset/limit.",
        ),
        spec::<sessions::SessionArgs>(
            "session",
            "Read one session",
            "One session's turns in order: prompts, assistant messages, tool calls with their \
             inputs, outputs and outcomes, commands; each text trimmed. Give `offset` (an event \
             offset, e.g. from a search hit) to start there; the answer says the offset to ask \
             for next.",
        ),
        spec::<restore::UsageArgs>(
            "usage",
            "Tokens and cost",
            "Tokens and priced cost the agents' records reported, grouped by day, model or \
             session (bundled model prices).",
        ),
        spec::<history::FileHistoryArgs>(
            "file_history",
            "Sessions that touched a file",
            "Which sessions read or changed a path, and the tool calls that did: every tool \
             call whose input names the path (a path fragment matches anywhere, e.g. \
             src/main.rs), with its tool, time, outcome and whether it read or changed it.",
        ),
        spec::<restore::CheckpointsArgs>(
            "checkpoints",
            "A session's checkpoints",
            "The checkpoints of one session (pinned points a session can be restored to): \
             id, offset, origin, commit, effects, whether still valid.",
        ),
        spec::<restore::RestorePlanArgs>(
            "restore_plan",
            "What restoring would give back",
            "What restoring a session to a checkpoint would give back (the seed of events, the \
             command that resumes the agent, what `harnery restore --apply` would put back). \
             It only shows: nothing is restored or recorded.",
        ),
    ]
}

/// The names of every tool.
pub fn names() -> Vec<&'static str> {
    specs().iter().map(|s| s.name).collect()
}

fn spec<A: schemars::JsonSchema>(
    name: &'static str,
    title: &'static str,
    description: &'static str,
) -> ToolSpec {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<A>();
    let mut input_schema = match schema.to_value() {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    input_schema.remove("$schema");
    input_schema.remove("title");
    input_schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    ToolSpec {
        name,
        title,
        description,
        input_schema,
    }
}

/// The tools over one home, with the budget and masking every answer keeps.
pub struct Tools {
    home: Home,
    budget: Budget,
}

impl Tools {
    /// The tools over `home`; `[mcp]` of its config says whether text is
    /// masked (a config that does not parse is an error naming it).
    pub fn new(home: Home) -> Result<Tools, SetupError> {
        let content = Content::configured(home.root())?;
        Ok(Tools {
            home,
            budget: Budget::new(content),
        })
    }

    /// Answer one call. A panic inside a tool (a bug) is an error answer,
    /// never the end of the server.
    pub fn call(&self, name: &str, arguments: Option<Value>) -> Result<Answer, CallError> {
        let arguments = arguments.unwrap_or(Value::Object(Default::default()));
        match catch_unwind(AssertUnwindSafe(|| self.dispatch(name, arguments))) {
            Ok(answer) => answer,
            Err(_) => Err(CallError::Failed(format!(
                "the tool {name:?} failed inside harnery (a bug; see stderr); the server goes on"
            ))),
        }
    }

    fn dispatch(&self, name: &str, arguments: Value) -> Result<Answer, CallError> {
        let (home, b) = (&self.home, &self.budget);
        match name {
            "search" => find::search(home, b, &args(name, arguments)?),
            "sessions" => sessions::sessions(home, b, &args(name, arguments)?),
            "session" => sessions::session(home, b, &args(name, arguments)?),
            "usage" => restore::usage(home, b, &args(name, arguments)?),
            "file_history" => history::file_history(home, b, &args(name, arguments)?),
            "checkpoints" => restore::checkpoints(home, b, &args(name, arguments)?),
            "restore_plan" => restore::restore_plan(home, b, &args(name, arguments)?),
            other => Err(CallError::UnknownTool(other.to_string())),
        }
    }
}

/// The arguments of `tool`, or an error naming the argument that does
/// not fit its schema (serde's own words when the schema finds nothing).
fn args<A: DeserializeOwned>(tool: &str, arguments: Value) -> Result<A, CallError> {
    A::deserialize(&arguments).map_err(|e| {
        let why = specs()
            .into_iter()
            .find(|s| s.name == tool)
            .and_then(|s| args::explain(&s.input_schema, &arguments))
            .unwrap_or_else(|| e.to_string());
        CallError::BadArguments(format!("bad arguments for {tool}: {why}"))
    })
}

/// A time argument (RFC 3339), as Unix nanoseconds.
fn instant(field: &str, text: Option<&str>) -> Result<Option<i64>, CallError> {
    text.map(|t| {
        crate::clock::parse_instant(t).ok_or_else(|| {
            CallError::BadArguments(format!(
                "{field}: {t:?} is not an RFC 3339 time (e.g. 2026-12-01T09:00:00Z)"
            ))
        })
    })
    .transpose()
}

/// An `epoch` argument: live (the default), all, or a genesis id.
fn epoch(text: Option<&str>) -> Result<crate::epoch::EpochSelector, CallError> {
    text.unwrap_or("live")
        .parse()
        .map_err(|e: String| CallError::BadArguments(format!("epoch: {e}")))
}

/// The epochs `selector` names, opened read-only.
fn open(
    home: &Home,
    selector: &crate::epoch::EpochSelector,
) -> Result<crate::report::epochs::Epochs, CallError> {
    crate::report::epochs::Epochs::open(home, selector)
        .map_err(|e| CallError::Failed(format!("the ledger cannot be read: {}", chain(&e))))
}

/// An error and its causes, one sentence.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}
