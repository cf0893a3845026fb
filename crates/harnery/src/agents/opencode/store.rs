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
//! `seq` order: `{"seq", "id", "type", "role", "starts", "ends", "data"}`.
//! `data` is the row's own JSON; the other members are worked out from the
//! rows before it, so a line never changes once written and the rendering
//! only grows, as a JSONL record does: the finalizer's cursor and
//! fingerprint work on it unchanged. `role` is the role of the message a
//! part belongs to; `starts` marks the first row of a tool call that is
//! under way (running or finished) and `ends` the first row where a tool
//! call, a text or reasoning part, or an assistant message is finished, so
//! a stateless reader says each once.
//!
//! The database is opened read-only, and nothing is read from it unless
//! the path has the shape OpenCode gives it (see `record_shape`). A gap in
//! `seq` (rows removed from the journal) is an error: the rendering would
//! no longer be what was read before.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

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

/// The most bytes one rendering holds; a journal longer than this is not
/// rendered (the finalizer reports it unreadable).
pub(crate) const RENDER_CEILING: usize = 256 << 20;

/// How long a read waits for OpenCode's writer.
const BUSY_MS: u64 = 2000;

/// The session's journal in `db` as JSON lines (each ends with a newline).
pub(crate) fn render(db: &Path, session_id: &str) -> std::io::Result<Vec<u8>> {
    let conn = open(db).map_err(io)?;
    let mut stmt = conn
        .prepare("SELECT seq, id, type, data FROM event WHERE aggregate_id = ?1 ORDER BY seq")
        .map_err(io)?;
    let mut rows = stmt.query([session_id]).map_err(io)?;
    let mut out = Vec::new();
    let mut state = Journal::default();
    let mut expected = 0i64;
    while let Some(row) = rows.next().map_err(io)? {
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
        state.line(seq, &id, &kind, &data, &mut out);
        if out.len() > RENDER_CEILING {
            return Err(std::io::Error::other(format!(
                "the journal of {session_id} is over {RENDER_CEILING} bytes as lines"
            )));
        }
    }
    Ok(out)
}

fn io(e: rusqlite::Error) -> std::io::Error {
    std::io::Error::other(e)
}

/// What the rows so far said, for the rows after them.
#[derive(Default)]
struct Journal {
    /// Message id → role.
    roles: HashMap<String, String>,
    /// Parts (and messages) already marked started / ended.
    started: HashSet<String>,
    ended: HashSet<String>,
}

impl Journal {
    fn line(&mut self, seq: i64, id: &str, kind: &str, data: &str, out: &mut Vec<u8>) {
        let parsed: Option<Value> = serde_json::from_str(data).ok();
        let (role, starts, ends) = match &parsed {
            Some(v) => self.marks(kind, v),
            None => (None, false, false),
        };
        let mut line = serde_json::Map::new();
        line.insert("seq".into(), seq.into());
        line.insert("id".into(), id.into());
        line.insert("type".into(), kind.into());
        if let Some(role) = role {
            line.insert("role".into(), role.into());
        }
        if starts {
            line.insert("starts".into(), true.into());
        }
        if ends {
            line.insert("ends".into(), true.into());
        }
        match parsed {
            Some(v) => line.insert("data".into(), v),
            // Kept as text: the reader says it is not a row it knows.
            None => line.insert("data_text".into(), data.into()),
        };
        serde_json::to_writer(&mut *out, &Value::Object(line)).expect("a map of JSON writes");
        out.push(b'\n');
    }

    fn marks(&mut self, kind: &str, v: &Value) -> (Option<String>, bool, bool) {
        if kind.starts_with("message.updated.") {
            let info = &v["info"];
            let (Some(id), Some(role)) = (info["id"].as_str(), info["role"].as_str()) else {
                return (None, false, false);
            };
            self.roles
                .entry(id.to_string())
                .or_insert_with(|| role.to_string());
            let done = role == "assistant" && info["time"]["completed"].is_number();
            return (None, false, done && self.ended.insert(id.to_string()));
        }
        if !kind.starts_with("message.part.updated.") {
            return (None, false, false);
        }
        let part = &v["part"];
        let role = part["messageID"]
            .as_str()
            .and_then(|m| self.roles.get(m))
            .cloned();
        let Some(id) = part["id"].as_str() else {
            return (role, false, false);
        };
        let (under_way, done) = match part["type"].as_str() {
            Some("tool") => {
                let status = part["state"]["status"].as_str().unwrap_or("");
                (
                    matches!(status, "running" | "completed" | "error"),
                    matches!(status, "completed" | "error"),
                )
            }
            // A user's text is whole when it is written; the model's when
            // its part has an end time.
            Some("text") if role.as_deref() == Some("user") => (false, true),
            Some("text" | "reasoning") => (false, part["time"]["end"].is_number()),
            _ => (false, false),
        };
        let starts = under_way && self.started.insert(id.to_string());
        let ends = done && self.ended.insert(id.to_string());
        (role, starts, ends)
    }
}
