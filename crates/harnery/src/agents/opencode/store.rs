//! OpenCode's record: `opencode.db`, read as lines.
//!
//! OpenCode keeps a session in SQLite (`<data dir>/opencode/opencode.db`,
//! WAL mode). Its `message`, `part` and `session` rows are rewritten in
//! place as a turn goes on; its `event` table is an append-only journal per
//! session (`aggregate_id` = the session id, `seq` 0, 1, 2, … with no gap),
//! one row per `session.created`, `session.updated`, `message.updated` and
//! `message.part.updated`, each holding the message or part whole. A
//! message or part appears once per update: a shell call is `pending`, then
//! `running` (several times), then `completed` or `error`.
//!
//! [`render`] turns a session's journal into JSON lines, one per row in
//! `seq` order: `{"seq", "id", "type", "role", "model", "starts", "ends",
//! "data"}`,
//! `data` being the row's JSON exactly as OpenCode wrote it. The other
//! members are worked out from the rows before it, so a line never changes
//! once written and the rendering only grows, as a JSONL record does: the
//! finalizer's cursor and fingerprint work on it unchanged. `role` and
//! `model` are the role of the message a part belongs to and the model that
//! wrote it; `starts` marks the first row of a
//! tool call that is under way (running or finished) and `ends` the first
//! row where a tool call, a text or reasoning part, or an assistant message
//! is finished, so a stateless reader says each once. A row whose data is
//! not JSON on one line is kept as a string (`data_text`).
//!
//! Each run renders a followed session's journal from its first row (the
//! offsets and marks need every row before the cursor) but keeps only the
//! stretch the finalizer reads, so memory stays bounded by one pass; only
//! the members the marks need are parsed, the data is copied as it is.
//!
//! The database is opened read-only, and nothing is read from it unless
//! the path has the shape OpenCode gives it (see `record_shape`). A gap in
//! `seq` (rows removed from the journal) is an error: the rendering would
//! no longer be what was read before.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::agents::adapter::RenderedRecord;
use serde::Deserialize;

/// The file name OpenCode's release builds give the database.
pub(crate) const DB_NAME: &str = "opencode.db";

/// OpenCode's data directory, as OpenCode resolves it:
/// `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`.
pub(crate) fn data_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => crate::home::env_home()?.join(".local/share"),
    };
    Some(base.join("opencode"))
}

/// The database: `$OPENCODE_DB` when set (a path, or a name in the data
/// directory; `:memory:` is no file at all), else `opencode.db` in the data
/// directory. Whether harnery reads it is `record_shape`'s call.
pub(crate) fn db_path() -> Option<PathBuf> {
    let dir = data_dir();
    match std::env::var_os("OPENCODE_DB").filter(|v| !v.is_empty()) {
        Some(db) if db == ":memory:" => None,
        Some(db) if Path::new(&db).is_absolute() => Some(PathBuf::from(db)),
        Some(db) => Some(dir?.join(db)),
        None => Some(dir?.join(DB_NAME)),
    }
}

/// The sessions in `db` and when each was last updated (unix ns), for
/// `health`; nothing when the database cannot be read.
pub(crate) fn sessions(db: &Path) -> Vec<(String, i64)> {
    let read = || -> rusqlite::Result<Vec<(String, i64)>> {
        let conn = open(db)?;
        let mut stmt = conn.prepare("SELECT id, time_updated FROM session")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        rows.map(|r| r.map(|(id, ms)| (id, ms.saturating_mul(1_000_000))))
            .collect()
    };
    read().unwrap_or_default()
}

fn open(db: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_MS))?;
    Ok(conn)
}

/// How long a read waits for OpenCode's writer.
const BUSY_MS: u64 = 2000;

/// The session's journal in `db` as JSON lines (each ends with a newline):
/// the stretch from byte `keep_from` on, up to the end of the first line
/// that reaches `upto` (the rows before `keep_from` are rendered, for the
/// offsets and marks, but not kept).
pub(crate) fn render(
    db: &Path,
    session_id: &str,
    keep_from: u64,
    upto: u64,
) -> std::io::Result<RenderedRecord> {
    let conn = open(db).map_err(io)?;
    let mut stmt = conn
        .prepare("SELECT seq, id, type, data FROM event WHERE aggregate_id = ?1 ORDER BY seq")
        .map_err(io)?;
    let mut rows = stmt.query([session_id]).map_err(io)?;
    let (mut kept, mut line) = (Vec::new(), Vec::new());
    let mut state = Journal::default();
    let (mut expected, mut at) = (0i64, 0u64);
    while at < upto {
        let Some(row) = rows.next().map_err(io)? else {
            break;
        };
        let seq: i64 = row.get(0).map_err(io)?;
        if seq != expected {
            return Err(std::io::Error::other(format!(
                "the journal of {session_id} goes from seq {} to {seq}",
                expected - 1
            )));
        }
        expected += 1;
        let id: String = row.get(1).map_err(io)?;
        let kind: String = row.get(2).map_err(io)?;
        let data: String = row.get(3).map_err(io)?;
        line.clear();
        state.line(seq, &id, &kind, &data, &mut line);
        let end = at + line.len() as u64;
        if end > keep_from {
            kept.extend_from_slice(&line[keep_from.saturating_sub(at) as usize..]);
        }
        at = end;
    }
    Ok(RenderedRecord {
        base: keep_from.min(at),
        bytes: kept,
    })
}

/// `text` as a JSON string.
fn write_string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(out, text).expect("a string writes as JSON");
}

fn io(e: rusqlite::Error) -> std::io::Error {
    std::io::Error::other(e)
}

/// What the rows so far said, for the rows after them.
#[derive(Default)]
struct Journal {
    /// Message id → its role and the model that wrote it.
    messages: HashMap<String, (String, Option<String>)>,
    /// Parts (and messages) already marked started / ended.
    started: HashSet<String>,
    ended: HashSet<String>,
}

/// The few members of a row's data the marks are worked out from; serde
/// skips the rest (a tool's output, a message's text) without keeping it.
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(default, borrow)]
    info: Option<Item<'a>>,
    #[serde(default, borrow)]
    part: Option<Item<'a>>,
}

/// A message (`info`) or a part.
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "messageID")]
    message_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "modelID")]
    model_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    state: Option<State<'a>>,
    #[serde(default)]
    time: Option<Times>,
}

#[derive(Deserialize)]
struct State<'a> {
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
}

/// Only whether a message is completed, or a part has ended.
#[derive(Deserialize)]
struct Times {
    #[serde(default)]
    completed: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    end: Option<serde::de::IgnoredAny>,
}

/// The marks of one row: the role of its part's message and the model
/// that wrote it, and whether it starts or ends something for the first
/// time.
#[derive(Default)]
struct Marks {
    role: Option<String>,
    model: Option<String>,
    starts: bool,
    ends: bool,
}

impl Journal {
    /// One row as a line: the marks, then the row's data as OpenCode wrote
    /// it (a row whose data is not JSON, or not on one line, is kept as a
    /// string, `data_text`, which the reader reports).
    fn line(&mut self, seq: i64, id: &str, kind: &str, data: &str, out: &mut Vec<u8>) {
        let shape = match data.contains('\n') {
            true => None,
            false => serde_json::from_str::<Shape>(data).ok(),
        };
        let parsed = shape.is_some();
        let marks = shape.map(|s| self.marks(kind, s)).unwrap_or_default();
        out.extend_from_slice(format!("{{\"seq\":{seq},\"id\":").as_bytes());
        write_string(out, id);
        out.extend_from_slice(b",\"type\":");
        write_string(out, kind);
        if let Some(role) = &marks.role {
            out.extend_from_slice(b",\"role\":");
            write_string(out, role);
        }
        if let Some(model) = &marks.model {
            out.extend_from_slice(b",\"model\":");
            write_string(out, model);
        }
        if marks.starts {
            out.extend_from_slice(b",\"starts\":true");
        }
        if marks.ends {
            out.extend_from_slice(b",\"ends\":true");
        }
        match parsed {
            true => {
                out.extend_from_slice(b",\"data\":");
                out.extend_from_slice(data.as_bytes());
            }
            false => {
                out.extend_from_slice(b",\"data_text\":");
                write_string(out, data);
            }
        }
        out.extend_from_slice(b"}\n");
    }

    fn marks(&mut self, kind: &str, shape: Shape) -> Marks {
        if kind.starts_with("message.updated.") {
            let Some(info) = shape.info else {
                return Marks::default();
            };
            let (Some(id), Some(role)) = (info.id, info.role) else {
                return Marks::default();
            };
            let done = role == "assistant" && info.time.is_some_and(|t| t.completed.is_some());
            let ends = done && self.ended.insert(id.to_string());
            let known = self
                .messages
                .entry(id.into_owned())
                .or_insert_with(|| (role.into_owned(), None));
            if known.1.is_none() {
                known.1 = info.model_id.map(Cow::into_owned);
            }
            return Marks {
                ends,
                ..Marks::default()
            };
        }
        let Some(part) = shape
            .part
            .filter(|_| kind.starts_with("message.part.updated."))
        else {
            return Marks::default();
        };
        let (role, model) = part
            .message_id
            .as_deref()
            .and_then(|m| self.messages.get(m))
            .cloned()
            .unzip();
        let model = model.flatten();
        let Some(id) = part.id.as_deref() else {
            return Marks {
                role,
                model,
                ..Marks::default()
            };
        };
        let status = part.state.as_ref().and_then(|s| s.status.as_deref());
        let (under_way, done) = match part.kind.as_deref() {
            Some("tool") => (
                matches!(status, Some("running" | "completed" | "error")),
                matches!(status, Some("completed" | "error")),
            ),
            // A user's text is whole when it is written; the model's when
            // its part has an end time.
            Some("text") if role.as_deref() == Some("user") => (false, true),
            Some("text" | "reasoning") => (false, part.time.is_some_and(|t| t.end.is_some())),
            _ => (false, false),
        };
        Marks {
            starts: under_way && self.started.insert(id.to_string()),
            ends: done && self.ended.insert(id.to_string()),
            role,
            model,
        }
    }
}
