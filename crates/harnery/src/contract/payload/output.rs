//! How much of a tool result's text a `tool.recorded` keeps (generation
//! 11), and the cut that keeps it.

use super::ToolRecorded;

/// The most bytes of a recorded tool result's text a `tool.recorded`
/// keeps (generation 11); the rest is counted in `output_cut_bytes` and
/// stays in the raw archive.
pub const OUTPUT_CAP: usize = 64 * 1024;

impl ToolRecorded {
    /// `text`, cut at [`OUTPUT_CAP`] bytes (at a character boundary), and
    /// how many bytes were cut off (`None`: none).
    pub fn capped_output(mut text: String) -> (String, Option<u64>) {
        if text.len() <= OUTPUT_CAP {
            return (text, None);
        }
        let mut end = OUTPUT_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = (text.len() - end) as u64;
        text.truncate(end);
        (text, Some(cut))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary_and_says_how_much() {
        let whole = format!("a{}", "é".repeat(OUTPUT_CAP));
        let (kept, cut) = ToolRecorded::capped_output(whole.clone());
        // `a` then two-byte characters: the cap falls inside one.
        assert_eq!(kept.len(), OUTPUT_CAP - 1);
        assert!(whole.starts_with(&kept));
        assert_eq!(cut, Some((whole.len() - kept.len()) as u64));
        let short = "needs approval".to_string();
        assert_eq!(ToolRecorded::capped_output(short.clone()), (short, None));
        let exact = "x".repeat(OUTPUT_CAP);
        assert_eq!(ToolRecorded::capped_output(exact.clone()), (exact, None));
    }
}
