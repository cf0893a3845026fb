//! blake3 of many short messages at once, each digest the same as
//! `blake3::hash` gives.
//!
//! A drain hashes every spool record to check it, then every hook payload
//! again for its record digest: about a kilobyte each. blake3 hashes one
//! kilobyte (one chunk) as sixteen compressions, each waiting on the one
//! before, so one message at a time leaves the vector unit idle: on the
//! project's machine 1 KiB takes 1.5 µs, and 4 KiB (four chunks, which
//! blake3 itself hashes side by side) 1.6 µs. With AVX2, this hashes
//! eight messages side by side, one in each 32-bit lane,
//! block by block: a message of at most two chunks (2 KiB) is its chunks
//! in lanes, then its root as a parent node in lanes. A longer one, and
//! every message on a machine without AVX2, goes through `blake3::hash`.
//! The tests hold every length up to three chunks to `blake3::hash`;
//! `examples/bench_hash_many.rs` measures both.

// The lanes are x86-64's; elsewhere every message takes `blake3::hash`.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

const CHUNK_LEN: usize = 1024;
const BLOCK_LEN: usize = 64;
const CHUNK_START: u32 = 1;
const CHUNK_END: u32 = 2;
const PARENT: u32 = 4;
const ROOT: u32 = 8;
const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];

/// The digest of each message, in order, into `out` (cleared first).
pub fn hash_each(messages: &[&[u8]], out: &mut Vec<[u8; 32]>) {
    out.clear();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available, checked just above.
        unsafe { lanes::hash_each(messages, out) };
        return;
    }
    out.extend(messages.iter().map(|m| *blake3::hash(m).as_bytes()));
}

/// One node's compressions: a chunk's blocks, or a parent's one block.
struct Job<'a> {
    data: &'a [u8],
    /// The chunk's index in its message (0 for a parent).
    counter: u32,
    /// Flags of its first block, its last, and every block.
    first: u32,
    last: u32,
    every: u32,
}

impl Job<'_> {
    fn blocks(&self) -> usize {
        self.data.len().div_ceil(BLOCK_LEN).max(1)
    }

    /// Block `j`, its length and its flags: a whole block is borrowed
    /// where it lies, a short last one copied into `pad` with zeros after
    /// it (the hash reads a block as sixteen little-endian words).
    fn block<'s>(
        &'s self,
        j: usize,
        pad: &'s mut [u8; BLOCK_LEN],
    ) -> (&'s [u8; BLOCK_LEN], u32, u32) {
        let at = (j * BLOCK_LEN).min(self.data.len());
        let part = &self.data[at..(at + BLOCK_LEN).min(self.data.len())];
        let mut flags = self.every;
        if j == 0 {
            flags |= self.first;
        }
        if j + 1 == self.blocks() {
            flags |= self.last;
        }
        let bytes = match part.try_into() {
            Ok(whole) => whole,
            Err(_) => {
                pad.fill(0);
                pad[..part.len()].copy_from_slice(part);
                &*pad
            }
        };
        (bytes, part.len() as u32, flags)
    }
}

/// The word order of each of the seven rounds: the message permutation
/// applied once more each round.
const SCHEDULE: [[usize; 16]; 7] = {
    const PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
    let mut s = [[0usize; 16]; 7];
    let mut i = 0;
    while i < 16 {
        s[0][i] = i;
        i += 1;
    }
    let mut r = 1;
    while r < 7 {
        let mut i = 0;
        while i < 16 {
            s[r][i] = s[r - 1][PERMUTATION[i]];
            i += 1;
        }
        r += 1;
    }
    s
};

fn to_bytes(cv: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(cv) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

#[cfg(target_arch = "x86_64")]
mod lanes {
    use super::*;
    use std::arch::x86_64::*;

    const LANES: usize = 8;

    #[target_feature(enable = "avx2")]
    pub(super) fn hash_each(messages: &[&[u8]], out: &mut Vec<[u8; 32]>) {
        // Every chunk of the messages of one or two chunks; the others are
        // hashed whole, on their own.
        let mut chunks = Vec::with_capacity(messages.len());
        for m in messages {
            match chunks_in(m) {
                1 => chunks.push(Job {
                    data: m,
                    counter: 0,
                    first: CHUNK_START,
                    last: CHUNK_END | ROOT,
                    every: 0,
                }),
                2 => {
                    let (left, right) = m.split_at(CHUNK_LEN);
                    for (counter, data) in [(0, left), (1, right)] {
                        chunks.push(Job {
                            data,
                            counter,
                            first: CHUNK_START,
                            last: CHUNK_END,
                            every: 0,
                        });
                    }
                }
                _ => {}
            }
        }
        let cvs = run(&chunks);
        // Two-chunk messages: their roots, as parent nodes over their
        // chunks' chaining values.
        let mut parents: Vec<[u8; BLOCK_LEN]> = Vec::new();
        let mut at = 0;
        for m in messages {
            match chunks_in(m) {
                1 => at += 1,
                2 => {
                    let mut block = [0u8; BLOCK_LEN];
                    block[..32].copy_from_slice(&to_bytes(&cvs[at]));
                    block[32..].copy_from_slice(&to_bytes(&cvs[at + 1]));
                    parents.push(block);
                    at += 2;
                }
                _ => {}
            }
        }
        let parent_jobs: Vec<Job> = parents
            .iter()
            .map(|block| Job {
                data: block,
                counter: 0,
                first: 0,
                last: ROOT,
                every: PARENT,
            })
            .collect();
        let roots = run(&parent_jobs);
        let (mut chunk, mut parent) = (0, 0);
        for m in messages {
            out.push(match chunks_in(m) {
                1 => {
                    chunk += 1;
                    to_bytes(&cvs[chunk - 1])
                }
                2 => {
                    chunk += 2;
                    parent += 1;
                    to_bytes(&roots[parent - 1])
                }
                _ => *blake3::hash(m).as_bytes(),
            });
        }
    }

    /// The chunks of a message hashed in lanes: 1 or 2; 0 for a longer one.
    fn chunks_in(message: &[u8]) -> usize {
        match message.len().div_ceil(CHUNK_LEN) {
            0 | 1 => 1,
            2 => 2,
            _ => 0,
        }
    }

    /// The output chaining value of each job, eight jobs side by side.
    /// Jobs go into lanes by their number of blocks, not in their order: a
    /// group takes as many steps as its longest job, and a lane whose job
    /// is done idles through the rest, so eight of like length waste none.
    #[target_feature(enable = "avx2")]
    fn run(jobs: &[Job]) -> Vec<[u32; 8]> {
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_unstable_by_key(|&j| jobs[j].blocks());
        let mut out = vec![[0u32; 8]; jobs.len()];
        for indices in order.chunks(LANES) {
            let group: Vec<&Job> = indices.iter().map(|&j| &jobs[j]).collect();
            let cv = group_cvs(&group);
            for (l, &j) in indices.iter().enumerate() {
                out[j] = std::array::from_fn(|i| cv[i][l]);
            }
        }
        out
    }

    /// Up to eight jobs, one in each lane, block by block; a lane whose job
    /// has no block left (or that has no job) keeps its chaining value.
    #[target_feature(enable = "avx2")]
    fn group_cvs(group: &[&Job]) -> [[u32; LANES]; 8] {
        let steps = group.iter().map(|job| job.blocks()).max().unwrap_or(0);
        let mut cv: [__m256i; 8] = std::array::from_fn(|i| _mm256_set1_epi32(IV[i] as i32));
        let mut counter = [0u32; LANES];
        for (l, job) in group.iter().enumerate() {
            counter[l] = job.counter;
        }
        let counter = vector(&counter);
        let mut pads = [[0u8; BLOCK_LEN]; LANES];
        for j in 0..steps {
            let mut rows = [&NO_BLOCK; LANES];
            let (mut len, mut flags, mut idle) = ([0u32; LANES], [0u32; LANES], [u32::MAX; LANES]);
            for ((l, job), pad) in group.iter().enumerate().zip(&mut pads) {
                if j < job.blocks() {
                    let (bytes, n, f) = job.block(j, pad);
                    rows[l] = bytes;
                    (len[l], flags[l], idle[l]) = (n, f, 0);
                }
            }
            let m = words(&rows);
            let next = compress(&cv, &m, counter, vector(&len), vector(&flags));
            let idle = vector(&idle);
            for i in 0..8 {
                cv[i] = _mm256_blendv_epi8(next[i], cv[i], idle);
            }
        }
        cv.map(|v| {
            let mut lanes = [0u32; LANES];
            for (l, lane) in lanes.iter_mut().enumerate() {
                *lane = extract(v, l);
            }
            lanes
        })
    }

    /// What an idle lane reads: any block would do, its result is discarded.
    static NO_BLOCK: [u8; BLOCK_LEN] = [0; BLOCK_LEN];

    /// The sixteen message words of eight blocks, word `w` of every lane
    /// in vector `w`: each block's halves loaded as they lie, then
    /// transposed eight by eight (no byte is copied one at a time).
    #[target_feature(enable = "avx2")]
    fn words(rows: &[&[u8; BLOCK_LEN]; LANES]) -> [__m256i; 16] {
        let half = |h: usize| -> [__m256i; LANES] {
            std::array::from_fn(|l| {
                let bytes: &[u8; 32] = rows[l][32 * h..32 * h + 32]
                    .try_into()
                    .expect("half of a block is 32 bytes");
                // SAFETY: `bytes` is 32 readable bytes, what one unaligned
                // 256-bit load reads; `loadu` needs no alignment.
                unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
            })
        };
        let (low, high) = (transpose(half(0)), transpose(half(1)));
        std::array::from_fn(|w| if w < 8 { low[w] } else { high[w - 8] })
    }

    /// An 8x8 matrix of 32-bit words transposed: row `l` holds lane `l`'s
    /// words 0..8; the result's row `w` holds word `w` of lanes 0..8.
    #[target_feature(enable = "avx2")]
    fn transpose(r: [__m256i; LANES]) -> [__m256i; LANES] {
        // Pairs of rows interleaved by word, then by pairs of words: each
        // 128-bit half then holds one word of four lanes.
        let t = [
            _mm256_unpacklo_epi32(r[0], r[1]),
            _mm256_unpackhi_epi32(r[0], r[1]),
            _mm256_unpacklo_epi32(r[2], r[3]),
            _mm256_unpackhi_epi32(r[2], r[3]),
            _mm256_unpacklo_epi32(r[4], r[5]),
            _mm256_unpackhi_epi32(r[4], r[5]),
            _mm256_unpacklo_epi32(r[6], r[7]),
            _mm256_unpackhi_epi32(r[6], r[7]),
        ];
        let u = [
            _mm256_unpacklo_epi64(t[0], t[2]),
            _mm256_unpackhi_epi64(t[0], t[2]),
            _mm256_unpacklo_epi64(t[1], t[3]),
            _mm256_unpackhi_epi64(t[1], t[3]),
            _mm256_unpacklo_epi64(t[4], t[6]),
            _mm256_unpackhi_epi64(t[4], t[6]),
            _mm256_unpacklo_epi64(t[5], t[7]),
            _mm256_unpackhi_epi64(t[5], t[7]),
        ];
        // u[k] holds word k of lanes 0..4 (low half) and word k + 4 (high
        // half); u[k + 4] the same of lanes 4..8.
        [
            _mm256_permute2x128_si256::<0x20>(u[0], u[4]),
            _mm256_permute2x128_si256::<0x20>(u[1], u[5]),
            _mm256_permute2x128_si256::<0x20>(u[2], u[6]),
            _mm256_permute2x128_si256::<0x20>(u[3], u[7]),
            _mm256_permute2x128_si256::<0x31>(u[0], u[4]),
            _mm256_permute2x128_si256::<0x31>(u[1], u[5]),
            _mm256_permute2x128_si256::<0x31>(u[2], u[6]),
            _mm256_permute2x128_si256::<0x31>(u[3], u[7]),
        ]
    }

    #[target_feature(enable = "avx2")]
    fn vector(lanes: &[u32; LANES]) -> __m256i {
        let l = lanes.map(|v| v as i32);
        _mm256_setr_epi32(l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7])
    }

    #[target_feature(enable = "avx2")]
    fn extract(v: __m256i, lane: usize) -> u32 {
        (match lane {
            0 => _mm256_extract_epi32::<0>(v),
            1 => _mm256_extract_epi32::<1>(v),
            2 => _mm256_extract_epi32::<2>(v),
            3 => _mm256_extract_epi32::<3>(v),
            4 => _mm256_extract_epi32::<4>(v),
            5 => _mm256_extract_epi32::<5>(v),
            6 => _mm256_extract_epi32::<6>(v),
            _ => _mm256_extract_epi32::<7>(v),
        }) as u32
    }

    /// The compression function, eight lanes at once: the chaining values
    /// it outputs (the first half of the state, folded with the second).
    #[target_feature(enable = "avx2")]
    fn compress(
        cv: &[__m256i; 8],
        m: &[__m256i; 16],
        counter: __m256i,
        len: __m256i,
        flags: __m256i,
    ) -> [__m256i; 8] {
        let iv = |i: usize| _mm256_set1_epi32(IV[i] as i32);
        let mut s = [
            cv[0],
            cv[1],
            cv[2],
            cv[3],
            cv[4],
            cv[5],
            cv[6],
            cv[7],
            iv(0),
            iv(1),
            iv(2),
            iv(3),
            counter,
            _mm256_setzero_si256(),
            len,
            flags,
        ];
        macro_rules! round {
            ($r:expr) => {{
                const S: [usize; 16] = SCHEDULE[$r];
                g(&mut s, [0, 4, 8, 12], m[S[0]], m[S[1]]);
                g(&mut s, [1, 5, 9, 13], m[S[2]], m[S[3]]);
                g(&mut s, [2, 6, 10, 14], m[S[4]], m[S[5]]);
                g(&mut s, [3, 7, 11, 15], m[S[6]], m[S[7]]);
                g(&mut s, [0, 5, 10, 15], m[S[8]], m[S[9]]);
                g(&mut s, [1, 6, 11, 12], m[S[10]], m[S[11]]);
                g(&mut s, [2, 7, 8, 13], m[S[12]], m[S[13]]);
                g(&mut s, [3, 4, 9, 14], m[S[14]], m[S[15]]);
            }};
        }
        round!(0);
        round!(1);
        round!(2);
        round!(3);
        round!(4);
        round!(5);
        round!(6);
        std::array::from_fn(|i| _mm256_xor_si256(s[i], s[i + 8]))
    }

    /// The quarter-round on four state words, mixing in `x` and `y`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn g(s: &mut [__m256i; 16], [a, b, c, d]: [usize; 4], x: __m256i, y: __m256i) {
        s[a] = _mm256_add_epi32(_mm256_add_epi32(s[a], s[b]), x);
        s[d] = rot_bytes(_mm256_xor_si256(s[d], s[a]), 2);
        s[c] = _mm256_add_epi32(s[c], s[d]);
        s[b] = rot(_mm256_xor_si256(s[b], s[c]), 12);
        s[a] = _mm256_add_epi32(_mm256_add_epi32(s[a], s[b]), y);
        s[d] = rot_bytes(_mm256_xor_si256(s[d], s[a]), 1);
        s[c] = _mm256_add_epi32(s[c], s[d]);
        s[b] = rot(_mm256_xor_si256(s[b], s[c]), 7);
    }

    /// Each lane rotated right by a whole number of bytes: a byte
    /// shuffle, the same in both 128-bit halves.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn rot_bytes(x: __m256i, bytes: i8) -> __m256i {
        // Byte i of a little-endian word takes the byte `bytes` above it.
        let o = |i: i8| (i & !3) + (i + bytes) % 4;
        let half = _mm_setr_epi8(
            o(0),
            o(1),
            o(2),
            o(3),
            o(4),
            o(5),
            o(6),
            o(7),
            o(8),
            o(9),
            o(10),
            o(11),
            o(12),
            o(13),
            o(14),
            o(15),
        );
        _mm256_shuffle_epi8(x, _mm256_broadcastsi128_si256(half))
    }

    /// Each lane rotated right by `n` bits (two shifts).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn rot(x: __m256i, n: i32) -> __m256i {
        match n {
            12 => _mm256_or_si256(_mm256_srli_epi32::<12>(x), _mm256_slli_epi32::<20>(x)),
            _ => _mm256_or_si256(_mm256_srli_epi32::<7>(x), _mm256_slli_epi32::<25>(x)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes with no pattern a wrong lane could get right by accident
    /// (blake3's own extendable output, a different path from the one
    /// tested).
    fn bytes(n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        blake3::Hasher::new()
            .update(b"hash_many test bytes")
            .finalize_xof()
            .fill(&mut out);
        out
    }

    #[test]
    fn every_length_up_to_three_chunks_hashes_as_blake3_does() {
        let data = bytes(4 * CHUNK_LEN);
        // Each length at a different offset, in one call: lanes of mixed
        // lengths side by side, and every path (one chunk, two, longer).
        let messages: Vec<&[u8]> = (0..=3 * CHUNK_LEN + 1)
            .map(|n| &data[n % 97..n % 97 + n])
            .collect();
        let mut out = Vec::new();
        hash_each(&messages, &mut out);
        assert_eq!(out.len(), messages.len());
        for (m, digest) in messages.iter().zip(&out) {
            assert_eq!(
                blake3::hash(m).as_bytes(),
                digest,
                "a message of {} bytes",
                m.len()
            );
        }
    }

    #[test]
    fn messages_out_of_length_order_come_back_in_their_own() {
        let data = bytes(3 * CHUNK_LEN);
        // Lengths shuffled (1 to 2,500 bytes, a step coprime to the range),
        // so lanes are filled from all over the list.
        let messages: Vec<&[u8]> = (0..2500)
            .map(|i| (i * 1_543) % 2500 + 1)
            .map(|n| &data[n % 31..n % 31 + n])
            .collect();
        let mut out = Vec::new();
        hash_each(&messages, &mut out);
        assert_eq!(out, one_at_a_time(&messages));
    }

    #[test]
    fn a_few_messages_and_none() {
        let data = bytes(3000);
        let mut out = vec![[1u8; 32]];
        hash_each(&[], &mut out);
        assert!(out.is_empty());
        for n in [1, 7, 9] {
            let messages: Vec<&[u8]> = (0..n).map(|i| &data[i..i + 64 * i]).collect();
            hash_each(&messages, &mut out);
            assert_eq!(out, one_at_a_time(&messages));
        }
    }

    /// What `blake3::hash` gives for each message, in order.
    fn one_at_a_time(messages: &[&[u8]]) -> Vec<[u8; 32]> {
        messages
            .iter()
            .map(|m| *blake3::hash(m).as_bytes())
            .collect()
    }
}
