//! The payloads of a session's own history as harnery keeps it beside
//! what the agent did: restores, resumes, signals of an older incarnation,
//! a session imported from the agent's record after the fact, and the
//! title the agent's own record gives the session.

use serde::{Deserialize, Serialize};

use super::OffsetRange;

payload_struct!(
    /// `harnery restore` handed the events below `boundary_offset` (the
    /// checkpoint's) to a fresh incarnation of the agent.
    RestoreRecorded {
        checkpoint_id: String,
        boundary_offset: u64,
    }
);
payload_struct!(
    /// The session was resumed: events from `superseded.from` up to this
    /// event are no longer the live line (they stay in the ledger, marked
    /// on read), the checkpoints pinned above the boundary are invalid, and
    /// this event and the ones after it belong to `incarnation`.
    SessionResumed {
        boundary_offset: u64,
        superseded: OffsetRange,
        invalidated_checkpoints: Vec<String>,
        incarnation: u64,
        /// The restore's checkpoint, when a recorded restore led here.
        #[serde(default)] checkpoint_id: Option<String>,
        /// `restore` (a recorded restore, then native activity),
        /// `agent_resume` (the agent said it resumed: `source: resume`) or
        /// `prompt_after_end` (a new prompt after a native session end).
        evidence: String,
    }
);
payload_struct!(
    /// A signal of an older incarnation that arrived after a resume:
    /// evidence, kept off the live line.
    StaleSignal {
        #[serde(default)] adapter_event: Option<String>,
        /// Why it is taken for an older incarnation's.
        reason: String,
        live_incarnation: u64,
    }
);

payload_struct!(
    /// The session was imported from the agent's own record by `harnery
    /// import` (generation 10), not seen by hooks: everything after it was
    /// read from that record, so the session is of evidence class
    /// `imported`, never eligible evidence, even when hooks see it later
    /// (a resume adds to it).
    SessionImported {
        /// The record the session was read from, as import found it.
        path: String,
        /// The record's size in bytes when import found it.
        bytes: u64,
        /// The record's modification time then (unix ns).
        modified_unix_ns: i64,
    }
);

payload_struct!(
    /// The agent's own title of the session, as its record keeps it
    /// (generation 11): Copilot's `workspace.yaml` `name`, Qwen Code's
    /// `custom_title` line, Gemini CLI's `summary`, OpenCode's session
    /// title. A later one (the session renamed) is a newer event; the
    /// newest is the session's title, ahead of its first prompt.
    SessionTitled {
        /// On one line, control characters taken out, at most 100
        /// characters (the last one `…` when it was cut).
        title: String,
        /// What the agent calls it where it keeps it: `name`
        /// (`workspace.yaml`), `custom_title`, `summary`, `title`.
        field: String,
        /// Whether the user named the session rather than the agent, where
        /// the record says (Copilot's `user_named`).
        #[serde(default)] user_named: Option<bool>,
        /// The file it was read from: the record itself, or the file the
        /// agent keeps beside it (Copilot's `workspace.yaml`).
        path: String,
        /// The record line it was read from (`None`: a file that is not
        /// lines).
        #[serde(default)] offset: Option<u64>,
    }
);
