//! `harnery_spool::hash_many::hash_each` against `blake3::hash` one
//! message at a time, on messages of the sizes a drain hashes (a spool
//! record, a hook payload), in one run: nanoseconds a message each way and
//! the ratio, the best of five passes over 100,000 messages.
//!
//! A size of `mix` hashes messages of 64 to 2,047 bytes in no order, as a
//! chunk's records are (lanes then hold messages of unlike lengths).
//!
//! Usage: bench_hash_many [sizes…]   (default 300 1000 1500 4000 mix)

use std::time::Instant;

fn main() {
    let sizes: Vec<String> = match std::env::args().skip(1).collect::<Vec<_>>() {
        a if a.is_empty() => ["300", "1000", "1500", "4000", "mix"]
            .map(String::from)
            .to_vec(),
        a => a,
    };
    let data: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    println!(
        "{:>6} {:>12} {:>12} {:>7}",
        "bytes", "one_ns", "many_ns", "ratio"
    );
    for size in sizes {
        let messages: Vec<&[u8]> = if size == "mix" {
            // 64 to 2,047 bytes, the step coprime to the range: no order.
            (0..100_000)
                .map(|i| &data[i % 64..i % 64 + 64 + (i * 1_543) % 1_984])
                .collect()
        } else {
            // Lengths vary a little around `size`, as records do.
            let size: usize = size.parse().expect("a size, or mix");
            (0..100_000)
                .map(|i| &data[i % 64..i % 64 + size - (i % 50).min(size)])
                .collect()
        };
        let best = |f: &mut dyn FnMut()| {
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::MAX, f64::min)
        };
        let mut sink = 0u8;
        let one = best(&mut || {
            for m in &messages {
                sink ^= blake3::hash(m).as_bytes()[0];
            }
        });
        let mut out = Vec::new();
        let many = best(&mut || harnery_spool::hash_many::hash_each(&messages, &mut out));
        let n = messages.len() as f64;
        println!(
            "{size:>6} {:>12.0} {:>12.0} {:>7.2}{}",
            one * 1e9 / n,
            many * 1e9 / n,
            one / many,
            if sink == 0 { "" } else { " " }
        );
    }
}
