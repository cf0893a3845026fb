//! The relevance score of a word query: FTS5's own BM25 (k1 1.2, b 0.75,
//! the same IDF and its floor, the same arithmetic, so the same scores to
//! the bit), computed by an FTS5 auxiliary function of ours,
//! `harnery_rank(words, kinds, tool, failed)`, registered on the index's
//! connection through the `fts5_api` pointer.
//!
//! It differs from `bm25()` in what it reads per match: a doc's length
//! comes from the [`Facts`] loaded before the query (FTS5's `bm25()` runs
//! a `docsize` lookup for every match), and a doc whose tag rules it out
//! (see [`TagFilter`]) gets NULL at once, so `--kind`, `--tool` and
//! `--failed` read no `docs` row for a match they cannot keep. A doc
//! without known facts is scored with FTS5's length and never filtered.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use rusqlite::ffi;

use super::facts::{Facts, TagFilter};

/// What the function's queries share: the facts, set before the first,
/// and the BM25 constants the first computed (a [`Ranker`] serves one
/// search, whose queries all match the same words).
#[derive(Default)]
struct State {
    facts: Option<Arc<Facts>>,
    constants: Option<Constants>,
}

type Shared = Mutex<State>;

/// FTS5's BM25 constants for one query's phrases.
#[derive(Clone)]
struct Constants {
    idf: Vec<f64>,
    avgdl: f64,
}

/// The function registered on one connection, for one search's words.
pub(crate) struct Ranker {
    shared: Arc<Shared>,
}

impl Ranker {
    /// Register `harnery_rank` on `conn`.
    pub(crate) fn register(conn: &Connection) -> Result<Ranker, rusqlite::Error> {
        let shared: Arc<Shared> = Arc::new(Mutex::new(State::default()));
        let api = fts5_api(conn)?;
        let context = Box::into_raw(Box::new(Arc::clone(&shared)));
        // SAFETY: `api` is the live fts5_api of `conn`; the context is
        // owned by SQLite from here and freed by `drop_context`.
        let rc = unsafe {
            let create = (*api).xCreateFunction.ok_or_else(misuse)?;
            create(
                api,
                c"harnery_rank".as_ptr(),
                context.cast::<c_void>(),
                Some(rank),
                Some(drop_context),
            )
        };
        if rc != ffi::SQLITE_OK {
            // SAFETY: SQLite did not take the context.
            drop(unsafe { Box::from_raw(context) });
            return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
        }
        Ok(Ranker { shared })
    }

    /// The facts the next queries read.
    pub(crate) fn use_facts(&self, facts: Facts) {
        self.shared.lock().unwrap_or_else(|e| e.into_inner()).facts = Some(Arc::new(facts));
    }
}

/// The function stays registered until the connection closes; what it
/// holds for this search is let go now.
impl Drop for Ranker {
    fn drop(&mut self) {
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = State::default();
    }
}

fn misuse() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_MISUSE), None)
}

/// FTS5's API of `conn` (`SELECT fts5(?1)` with a pointer bound).
fn fts5_api(conn: &Connection) -> Result<*mut ffi::fts5_api, rusqlite::Error> {
    let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
    // SAFETY: the statement lives inside this block on `conn`'s own
    // handle; the bound pointer outlives the step that writes it.
    let rc = unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = std::ptr::null_mut();
        let mut rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            std::ptr::null_mut(),
        );
        if rc == ffi::SQLITE_OK {
            ffi::sqlite3_bind_pointer(
                stmt,
                1,
                (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
                c"fts5_api_ptr".as_ptr(),
                None,
            );
            ffi::sqlite3_step(stmt);
            rc = ffi::sqlite3_finalize(stmt);
        }
        rc
    };
    if rc != ffi::SQLITE_OK || api.is_null() {
        return Err(rusqlite::Error::SqliteFailure(
            ffi::Error::new(if rc == ffi::SQLITE_OK {
                ffi::SQLITE_ERROR
            } else {
                rc
            }),
            Some("FTS5 is not available".into()),
        ));
    }
    Ok(api)
}

unsafe extern "C" fn drop_context(p: *mut c_void) {
    // SAFETY: `p` is the box made in `register`, freed once by SQLite.
    drop(unsafe { Box::from_raw(p.cast::<Arc<Shared>>()) });
}

/// What one query computes once: FTS5's BM25 constants for its phrases.
struct PerQuery {
    facts: Option<Arc<Facts>>,
    c: Constants,
    freq: Vec<f64>,
}

unsafe extern "C" fn drop_per_query(p: *mut c_void) {
    // SAFETY: `p` is the box made in `per_query`, freed once by FTS5.
    drop(unsafe { Box::from_raw(p.cast::<PerQuery>()) });
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 calls this with its API, the current row's context and
    // `n` arguments.
    unsafe {
        let args = std::slice::from_raw_parts(args, n.max(0) as usize);
        let int = |i: usize| args.get(i).map_or(0, |v| ffi::sqlite3_value_int64(*v));
        let filter = TagFilter {
            kinds: int(0) as u8,
            tool: int(1) as u16,
            failed: int(2) != 0,
        };
        match score(&*api, fts, filter) {
            Ok(Some(s)) => ffi::sqlite3_result_double(ctx, s),
            Ok(None) => ffi::sqlite3_result_null(ctx),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

/// FTS5's result code, as an error.
fn check(rc: c_int) -> Result<(), c_int> {
    match rc {
        ffi::SQLITE_OK => Ok(()),
        rc => Err(rc),
    }
}

/// The current row's BM25 (as `bm25()`: negated, lower is better), or
/// `None` when its tag rules it out.
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    filter: TagFilter,
) -> Result<Option<f64>, c_int> {
    // SAFETY: the callers' contract: `api` and `fts` are FTS5's own.
    unsafe {
        let q = &mut *per_query(api, fts)?;
        let rowid = (api.xRowid.ok_or(ffi::SQLITE_MISUSE)?)(fts);
        let fact = q.facts.as_ref().and_then(|f| f.get(rowid));
        if let Some((_, tag)) = fact
            && !filter.admits(tag)
        {
            return Ok(None);
        }
        let d = match fact {
            Some((len, _)) => f64::from(len),
            None => {
                let mut n: c_int = 0;
                check((api.xColumnSize.ok_or(ffi::SQLITE_MISUSE)?)(
                    fts, -1, &mut n,
                ))?;
                f64::from(n)
            }
        };
        q.freq.iter_mut().for_each(|f| *f = 0.0);
        let mut insts: c_int = 0;
        check((api.xInstCount.ok_or(ffi::SQLITE_MISUSE)?)(fts, &mut insts))?;
        let inst = api.xInst.ok_or(ffi::SQLITE_MISUSE)?;
        for i in 0..insts {
            let (mut phrase, mut col, mut off): (c_int, c_int, c_int) = (0, 0, 0);
            check(inst(fts, i, &mut phrase, &mut col, &mut off))?;
            if let Some(f) = q.freq.get_mut(phrase as usize) {
                *f += 1.0;
            }
        }
        let mut score = 0.0;
        for (idf, f) in q.c.idf.iter().zip(&q.freq) {
            score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / q.c.avgdl)));
        }
        Ok(Some(-score))
    }
}

/// This query's constants, computed at its first row as `bm25()` does.
unsafe fn per_query(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<*mut PerQuery, c_int> {
    // SAFETY: the callers' contract.
    unsafe {
        let have = (api.xGetAuxdata.ok_or(ffi::SQLITE_MISUSE)?)(fts, 0).cast::<PerQuery>();
        if !have.is_null() {
            return Ok(have);
        }
        let shared = &*(api.xUserData.ok_or(ffi::SQLITE_MISUSE)?)(fts).cast::<Arc<Shared>>();
        let (facts, known) = {
            let state = shared.lock().unwrap_or_else(|e| e.into_inner());
            (state.facts.clone(), state.constants.clone())
        };
        let phrases = (api.xPhraseCount.ok_or(ffi::SQLITE_MISUSE)?)(fts).max(0) as usize;
        let c = match known {
            Some(c) if c.idf.len() == phrases => c,
            _ => {
                let c = constants(api, fts, phrases)?;
                shared.lock().unwrap_or_else(|e| e.into_inner()).constants = Some(c.clone());
                c
            }
        };
        let q = Box::into_raw(Box::new(PerQuery {
            facts,
            c,
            freq: vec![0.0; phrases],
        }));
        let rc = (api.xSetAuxdata.ok_or(ffi::SQLITE_MISUSE)?)(
            fts,
            q.cast::<c_void>(),
            Some(drop_per_query),
        );
        // On failure FTS5 has already called the destructor.
        check(rc)?;
        Ok(q)
    }
}

/// The average length and each phrase's IDF, as `bm25()` computes them
/// (a pass over each phrase's matches to count them).
unsafe fn constants(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    phrases: usize,
) -> Result<Constants, c_int> {
    // SAFETY: the callers' contract.
    unsafe {
        let (mut rows, mut tokens): (i64, i64) = (0, 0);
        check((api.xRowCount.ok_or(ffi::SQLITE_MISUSE)?)(fts, &mut rows))?;
        check((api.xColumnTotalSize.ok_or(ffi::SQLITE_MISUSE)?)(
            fts,
            -1,
            &mut tokens,
        ))?;
        let mut idf = Vec::with_capacity(phrases);
        let query_phrase = api.xQueryPhrase.ok_or(ffi::SQLITE_MISUSE)?;
        for i in 0..phrases {
            let mut hits: i64 = 0;
            check(query_phrase(
                fts,
                i as c_int,
                (&mut hits as *mut i64).cast::<c_void>(),
                Some(count),
            ))?;
            let v = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
            idf.push(if v <= 0.0 { 1e-6 } else { v });
        }
        Ok(Constants {
            idf,
            avgdl: tokens as f64 / rows as f64,
        })
    }
}

unsafe extern "C" fn count(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    hits: *mut c_void,
) -> c_int {
    // SAFETY: `hits` is the counter `per_query` passed.
    unsafe { *hits.cast::<i64>() += 1 };
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use super::super::extract::Kind;
    use super::super::facts::{self, Pending, Tag};
    use super::super::store::SCHEMA;
    use super::*;

    /// Texts whose words are in few of them, so that no IDF is at its floor.
    const TEXTS: [&str; 16] = [
        "git commit -m 'run echo'",
        "run echo hi; run echo bye; commit",
        "a long text about a commit, a commit again and once more the commit of commits",
        "echo run echo run",
        "nothing to see here",
        "commit",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
    ];

    fn index() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let tx = conn.transaction().unwrap();
        for (id, text) in TEXTS.iter().enumerate() {
            for table in ["texts", "words"] {
                tx.execute(
                    &format!("INSERT INTO {table} (rowid, text) VALUES (?1, ?2)"),
                    rusqlite::params![id as i64 + 1, text],
                )
                .unwrap();
            }
        }
        // Facts for docs 1–5: doc 6 and the fillers are scored by FTS5's length.
        let mut pending = Pending::default();
        for (id, len) in facts::lengths(&tx, 1, 5).unwrap() {
            let kind = if id % 2 == 0 {
                Kind::Prompt
            } else {
                Kind::Command
            };
            pending.set(&tx, id, len, Tag::new(kind, None)).unwrap();
        }
        pending.flush(&tx).unwrap();
        tx.commit().unwrap();
        conn
    }

    fn scores(conn: &Connection, expr: &str, query: &str) -> Vec<(i64, Option<f64>)> {
        let mut stmt = conn
            .prepare(&format!(
                "SELECT rowid, {expr} FROM words WHERE words MATCH ?1 ORDER BY rowid"
            ))
            .unwrap();
        let rows = stmt
            .query_map([query], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        rows.map(Result::unwrap).collect()
    }

    #[test]
    fn harnery_rank_is_bm25_to_the_bit_and_its_tags_rule_out() {
        let conn = index();
        let rank = || {
            let ranker = Ranker::register(&conn).unwrap();
            ranker.use_facts(Facts::load(&conn, &[(0, 1 << 20)], true).unwrap());
            ranker
        };
        for query in [
            "\"commit\"",
            "\"run echo\"",
            "\"comm\"*",
            "\"echo\" AND \"run\"",
        ] {
            let _ranker = rank();
            let ours = scores(&conn, "harnery_rank(words)", query);
            // A second query of the same search reuses the constants.
            assert_eq!(scores(&conn, "harnery_rank(words)", query), ours);
            let bm25 = scores(&conn, "bm25(words)", query);
            assert!(!bm25.is_empty(), "{query}");
            let bits = |v: &[(i64, Option<f64>)]| -> Vec<(i64, u64)> {
                v.iter()
                    .map(|(id, s)| (*id, s.unwrap().to_bits()))
                    .collect()
            };
            assert_eq!(bits(&ours), bits(&bm25), "{query}");
            assert!(
                bm25.iter().all(|(_, s)| s.unwrap() < -1e-3),
                "{query}: IDF above its floor"
            );
        }
        // Commands only: the prompts (even ids) score NULL; the doc without
        // facts (6) is never ruled out.
        let _ranker = rank();
        let commands = 1u8 << (Kind::ALL.iter().position(|k| *k == Kind::Command).unwrap() + 1);
        let ours = scores(
            &conn,
            &format!("harnery_rank(words, {commands}, 0, 0)"),
            "\"commit\"",
        );
        let kept: Vec<i64> = ours
            .iter()
            .filter(|(_, s)| s.is_some())
            .map(|r| r.0)
            .collect();
        assert_eq!(kept, vec![1, 3, 6]);
    }
}
