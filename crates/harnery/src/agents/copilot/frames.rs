//! The `data` of the `events.jsonl` frames a reader shows (a user's or a
//! subagent's message, what the model said and thought, what a tool
//! gave back), read loosely: every field optional, unknown ones ignored.
//! A `data` that does not fit leaves that one frame unread, never the
//! stream. The finalizer's reader (`record`) reads the same frames for
//! the ledger, strictly; `harnery recover`'s scan reads these.

use std::borrow::Cow;

use serde::Deserialize;

/// A `user.message`'s data: the text, and who sent it when it was not
/// the user (`source`, any JSON: a reader decides what counts).
#[derive(Deserialize)]
pub(crate) struct UserMessageData<'a> {
    #[serde(borrow, default)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default)]
    pub source: Option<serde_json::Value>,
}

/// An `assistant.message`'s data: the reply, its reasoning text and the
/// tool calls it asked for.
#[derive(Deserialize)]
pub(crate) struct AssistantMessageData<'a> {
    #[serde(borrow, default)]
    pub content: Option<Cow<'a, str>>,
    #[serde(rename = "reasoningText", borrow, default)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(rename = "toolRequests", default)]
    pub tool_requests: Vec<ToolRequest>,
}

/// One tool call an `assistant.message` asked for.
#[derive(Deserialize)]
pub(crate) struct ToolRequest {
    #[serde(rename = "toolCallId", default)]
    pub call_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<serde_json::Value>,
}

/// An `assistant.reasoning`'s data.
#[derive(Deserialize)]
pub(crate) struct ReasoningData<'a> {
    #[serde(borrow, default)]
    pub content: Option<Cow<'a, str>>,
}

/// A `tool.execution_complete`'s data: the call, whether it succeeded,
/// and what it gave back (`result`) or why it failed (`error`).
#[derive(Deserialize)]
pub(crate) struct ToolCompleteData {
    #[serde(rename = "toolCallId", default)]
    pub call_id: Option<String>,
    #[serde(default)]
    pub success: Option<bool>,
    #[serde(default)]
    pub result: Option<serde_json::Value>,
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}

/// A frame's `type` alone, whatever else the line holds.
pub(crate) fn frame_type(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct TypeOnly<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    serde_json::from_slice::<TypeOnly<'_>>(line)
        .ok()
        .map(|t| t.kind.into_owned())
}
