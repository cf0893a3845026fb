//! Training the ledger's dictionaries (`ledger::eventz`): the sample the
//! writer takes of the ledger's own events, and zstd's fastCover at fixed
//! parameters.

use rusqlite::{Connection, OptionalExtension};

use super::UNDECODABLE;
use crate::ledger::LedgerError;

/// A dictionary's largest size (zstd's own default).
pub const DICT_MAX: usize = 110 << 10;
/// At most this many events, spread evenly over the ledger, and this many
/// bytes of them, train a dictionary (public, with [`DICT_MAX`], for
/// `examples/bench_dict.rs`, which samples as the writer does).
pub const SAMPLE_ROWS: i64 = 4_000;
pub const SAMPLE_BYTES: usize = 4 << 20;

/// A dictionary trained on events spread evenly over seqs 1 to `head` (and
/// how many it saw); `None` when zstd finds too little to train on. (The
/// latest events alone describe the sessions of the moment: trained on
/// them, a dictionary did a quarter worse on the rest of a 27,000-event
/// ledger, docs/perf/figures.md.)
pub(super) fn train(conn: &Connection, head: i64) -> Result<Option<(Vec<u8>, i64)>, LedgerError> {
    let mut stmt = conn.prepare_cached("SELECT CAST(json AS BLOB) FROM events WHERE seq = ?1")?;
    let step = (head / SAMPLE_ROWS).max(1);
    let (mut data, mut sizes) = (Vec::new(), Vec::new());
    let mut seq = head;
    while seq >= 1 && data.len() < SAMPLE_BYTES {
        let text: Option<Vec<u8>> = stmt.query_row([seq], |r| r.get(0)).optional()?;
        seq -= step;
        let Some(text) = text.filter(|t| !t.starts_with(UNDECODABLE.as_bytes())) else {
            continue;
        };
        data.extend_from_slice(&text);
        sizes.push(text.len());
    }
    if sizes.len() < 8 {
        return Ok(None);
    }
    Ok(fast_cover(&data, &sizes).map(|d| (d, sizes.len() as i64)))
}

/// A dictionary trained from `samples` (concatenated, `sizes` apart) by
/// zstd's fastCover at fixed parameters: segments of 2,000 bytes (`k`),
/// 8-byte matches (`d`), a table of 2^18 entries (`f`: 1.5 MiB while it
/// trains, where zstd's default takes 6), every sample trained on.
/// Measured on a million bench events against zstd's default training,
/// which tries four segment sizes on three quarters of the samples and
/// keeps the one that compresses the rest best: 0.02–0.05 s a dictionary
/// instead of 0.12–0.15 s, and the events after it within 1% of the same
/// size (docs/perf/figures.md, "Dictionary training"). Training runs
/// inside the append, on the writer's thread (public for
/// `examples/bench_dict.rs`). `None` when zstd finds too little to train
/// on.
pub fn fast_cover(samples: &[u8], sizes: &[usize]) -> Option<Vec<u8>> {
    use zstd::zstd_safe::zstd_sys;
    let params = zstd_sys::ZDICT_fastCover_params_t {
        k: 2000,
        d: 8,
        f: 18,
        steps: 0,
        nbThreads: 0,
        splitPoint: 1.0,
        accel: 1,
        shrinkDict: 0,
        shrinkDictMaxRegression: 0,
        zParams: zstd_sys::ZDICT_params_t {
            compressionLevel: 0,
            notificationLevel: 0,
            dictID: 0,
        },
    };
    let mut dict = vec![0u8; DICT_MAX];
    debug_assert_eq!(sizes.iter().sum::<usize>(), samples.len());
    // SAFETY: zstd reads `sizes.len()` samples whose sizes sum to
    // `samples.len()` (the caller concatenated them so) and writes at most
    // `dict.len()` bytes into `dict`.
    let n = unsafe {
        zstd_sys::ZDICT_trainFromBuffer_fastCover(
            dict.as_mut_ptr().cast(),
            dict.len(),
            samples.as_ptr().cast(),
            sizes.as_ptr(),
            u32::try_from(sizes.len()).ok()?,
            params,
        )
    };
    // SAFETY: a pure function of the returned code.
    if unsafe { zstd_sys::ZDICT_isError(n) } != 0 {
        return None;
    }
    dict.truncate(n);
    Some(dict)
}
