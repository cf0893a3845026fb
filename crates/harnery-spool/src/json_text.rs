//! The bytes a JSON string cannot hold as they are (a control character,
//! `"` or `\`), found eight bytes at a time: the one scan that both the
//! envelope reader (where a string stops) and the event writer (whether a
//! string needs escaping) use, since both spend most of their time here.

/// Whether any byte is a control character, `"` or `\`.
pub fn needs_escape(bytes: &[u8]) -> bool {
    plain_len(bytes) < bytes.len()
}

/// How many bytes lead `bytes` before the first that needs escaping (a
/// control character, `"` or `\`); all of them, if none does. Eight bytes
/// at a time: a word has a byte below `n` (for `n` up to 128) exactly when
/// `(w - n·0x01…) & !w & 0x80…` is not zero, and a byte equal to `b` when
/// `w ^ b·0x01…` has a zero byte. A borrow can flag a byte only above one
/// that is flagged rightly, so the lowest flag is always the first such
/// byte.
pub fn plain_len(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * n as u64) & !w & HIGH;
    let mut words = bytes.chunks_exact(8);
    for (i, word) in (&mut words).enumerate() {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of eight bytes"));
        let flags = below(w, 0x20)
            | below(w ^ (ONES * b'"' as u64), 1)
            | below(w ^ (ONES * b'\\' as u64), 1);
        if flags != 0 {
            return i * 8 + flags.trailing_zeros() as usize / 8;
        }
    }
    let done = bytes.len() - words.remainder().len();
    let rest = words.remainder().iter();
    done + rest
        .take_while(|&&b| b >= 0x20 && b != b'"' && b != b'\\')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plain_len_byte_by_byte(bytes: &[u8]) -> usize {
        let escaped = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
        bytes.iter().position(escaped).unwrap_or(bytes.len())
    }

    proptest! {
        #[test]
        fn plain_len_finds_the_first_byte_to_escape(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x21, 0x5au8..0x60, any::<u8>()],
                0..40,
            )
        ) {
            prop_assert_eq!(plain_len(&bytes), plain_len_byte_by_byte(&bytes));
            prop_assert_eq!(needs_escape(&bytes), plain_len_byte_by_byte(&bytes) < bytes.len());
        }
    }
}
