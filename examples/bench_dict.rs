//! Dictionary training, measured: zstd's default training (which tries
//! four segment sizes and keeps the best) against the fixed-parameter
//! fastCover the ledger trains with (`harnery::ledger::eventz::fast_cover`).
//! For each ledger size given, it samples the events before it as the
//! writer does (at most 4,000 spread evenly, 4 MiB), trains both ways, and
//! compresses every tenth event of those the dictionary would serve (up to
//! four times as many) at level 1, as a body is written.
//!
//! Usage: harnery export > events.jsonl;
//!        bench_dict events.jsonl [sizes…]   (default 16000 64000 256000 1024000)

use std::time::Instant;

use harnery::ledger::eventz::{DICT_MAX, SAMPLE_BYTES, SAMPLE_ROWS};
use zstd::zstd_safe::{CCtx, CDict};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: bench_dict <events.jsonl> [sizes…]");
        std::process::exit(2);
    };
    let text = std::fs::read(path).expect("the export reads");
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let sizes: Vec<usize> = match args.len() {
        2 => vec![16_000, 64_000, 256_000, 1_024_000],
        _ => args[2..]
            .iter()
            .map(|a| a.parse().expect("a size"))
            .collect(),
    };
    println!(
        "{:>9} {:>10} {:>12} {:>10} {:>12} {:>7}",
        "events", "default_s", "default_B", "fast_s", "fast_B", "fast/default"
    );
    for head in sizes.into_iter().filter(|&h| h > 0 && h < lines.len()) {
        let (samples, lens) = sample(&lines, head);
        let later: Vec<&[u8]> = lines[head..(head * 4).min(lines.len())]
            .iter()
            .step_by(10)
            .copied()
            .collect();
        let t = Instant::now();
        let default = zstd::dict::from_continuous(&samples, &lens, DICT_MAX).expect("trains");
        let default_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let fast = harnery::ledger::eventz::fast_cover(&samples, &lens).expect("trains");
        let fast_s = t.elapsed().as_secs_f64();
        let (d, f) = (compressed(&default, &later), compressed(&fast, &later));
        println!(
            "{head:>9} {default_s:>10.3} {d:>12} {fast_s:>10.3} {f:>12} {:>7.3}",
            f as f64 / d as f64
        );
    }
}

/// The events before `head`, newest first, spread evenly: as the writer samples.
fn sample(lines: &[&[u8]], head: usize) -> (Vec<u8>, Vec<usize>) {
    let step = (head / SAMPLE_ROWS as usize).max(1);
    let (mut samples, mut lens) = (Vec::new(), Vec::new());
    let mut at = head;
    while at >= 1 && samples.len() < SAMPLE_BYTES {
        samples.extend_from_slice(lines[at - 1]);
        lens.push(lines[at - 1].len());
        at = at.saturating_sub(step);
    }
    (samples, lens)
}

/// The bytes of `texts` compressed one by one at level 1 with `dict`.
fn compressed(dict: &[u8], texts: &[&[u8]]) -> usize {
    let cdict = CDict::create(dict, 1);
    let mut cctx = CCtx::create();
    let mut out = Vec::with_capacity(1 << 16);
    texts
        .iter()
        .map(|t| {
            out.clear();
            cctx.compress_using_cdict(&mut out, t, &cdict)
                .expect("compresses");
            out.len()
        })
        .sum()
}
