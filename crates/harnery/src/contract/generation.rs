//! The contract generations this build can read: each one's number, its
//! pinned schema digest, what it changed, and its shape (the shipped ones
//! frozen, see `frozen`). A ledger epoch names its generation by digest
//! (in `genesis.json`), so archived epochs are read, and their rows
//! judged, under their own generation and never repaired in place.
//! Entries are appended, never edited: a shipped generation's digest is
//! history.

use super::digest::{CONTRACT_GENERATION, contract_shape};
use super::frozen;
use super::shape::Shape;

/// One shipped contract generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    pub number: u32,
    /// The schema digest, lowercase hex, as `genesis.json` stores it.
    pub digest: &'static str,
    /// What this generation is, for a human.
    pub description: &'static str,
}

/// Every generation this build reads, oldest first. The last is the one
/// it writes.
pub const GENERATIONS: &[Generation] = &[
    Generation {
        number: 1,
        digest: "1256ec3093dd7e2056634101779618c6a94c7ae34a1b5e4010dd47febaaedcec",
        description: "canonical events v2 with the ADR 0078 recovery block on \
                      tool.requested, tool.completed and command.completed",
    },
    Generation {
        number: 2,
        digest: "0ece7050ac464dba001262163418b978f92cd3e67db863fbaa5f8e69fe277b64",
        description: "multi-signal finalization: the agent's own record joins the hook \
                      signals (messages, reasoning, usage, session metadata, recorded tool \
                      calls, record problems; attestation `record`; a record position on \
                      signal.unrecognized)",
    },
    Generation {
        number: 3,
        digest: "c4e3acfec414616c891af6e2da5e2b55061b668625a323bae207017f3e24f4f3",
        description: "the session log of seed 004: checkpoints pinned to an offset with a \
                      commit and an effect ledger (checkpoint.recorded), restores \
                      (restore.recorded), resumes that supersede a range and start an \
                      incarnation (session.resumed), stale signals of an older incarnation \
                      (session.stale_signal)",
    },
    Generation {
        number: 4,
        digest: "4e298a5e525d5682afa5287b991b099fe53a843cf9bdc7d17e33a3e63cc71a92",
        description: "the agent's record, exactly: usage.reported token kinds mean the same \
                      for every agent (input excludes cache reads; Copilot's inputTokens are \
                      reduced by them), with reasoning tokens where reported and the agent's own \
                      usage object kept as `raw`; a generation-3 Copilot row (no `raw`) is \
                      normalized by readers",
    },
    Generation {
        number: 5,
        digest: "b4eafa6a9bc7bede11c80d010606b6181100aa48b73bd49c77731a803c26a07a",
        description: "the agent's own session totals: usage.summary, one per model as the agent \
                      last wrote them (Copilot's session.shutdown modelMetrics: requests, premium \
                      requests, credits, tokens), cumulative and never added to usage.reported; \
                      usage.reported names the session that made a call copied from another \
                      (copied_from_session: a --fork-session copy), which is never counted again",
    },
    Generation {
        number: 6,
        digest: "dbb71c8f699a0110309706c91a7be9b3d6eb7378e27294ad92221eb5114890b0",
        description: "a resume on the agent's own word: session.resumed follows only the agent's \
                      resume signal (a session start with source resume, Claude Code's \
                      SessionStart or Copilot's sessionStart) or a main-agent prompt after the \
                      session's native end, never any native signal after a recorded restore, so \
                      a process that still runs keeps its prompts, tools and stops on its own \
                      line, and a tool call it left open at the resume is salvaged by the resume; \
                      message.user names who sent a message that was not the user \
                      (source: Copilot's data.source, steering); checkpoint.recorded names the \
                      session's working directory (cwd)",
    },
    Generation {
        number: 7,
        digest: "946ccbb2424d4f33151a7231bbdddd0709179294b4f7c061078332cd405a4b0d",
        description: "a checkpoint's place in the agent's own record: checkpoint.located, written \
                      once by finalize when the record was read past the checkpoint's turn, names \
                      the checkpoint (its id and event id), the record's path, the byte where the \
                      kept record ends (the cut restore derives: at the next turn's first line, \
                      its preamble left out) and the agent's own id of the last line kept \
                      (Claude Code's uuid, Copilot's event id) and where that line starts",
    },
    Generation {
        number: 8,
        digest: "3e51b41f91f0a4ac0291c1cb3f6e3b2d4fbdaabc5b6356b3ede9b158e69512db",
        description: "the digest covers the contract: it is derived from the types \
                      themselves (every member of the envelope, of every payload and of every \
                      struct and enum nested in them, such as record_at, effect and \
                      offset_range, with its type, integer width, whether a reader requires it, \
                      enum values and closed structs) and hashed in a canonical encoding, with \
                      the validator rules; no member changed from generation 7",
    },
    Generation {
        number: 9,
        digest: "4e1bdb3de36ea40587aba91328ba8213bb86f8ab8b86baaa9f81a253552868d6",
        description: "every agent with hooks: the adapter ids codex, gemini-cli, qwen-code and \
                      opencode; tool.completed says when its request was found by order \
                      (paired_by: order, the oldest open request of the same tool and input, for \
                      an agent that sends no call id) rather than by a call id; hook.observed, a \
                      hook that fired and says no more the ledger models (a model step, a \
                      compaction check that changed nothing), with the agent's name of it",
    },
    Generation {
        number: 10,
        digest: "79ce73ff16f48337f3b544607748fc7101bd1cb7aac1bfa641d55456fb6147fb",
        description: "history from before install: session.imported, the first event of a \
                      session `harnery import` read from the agent's own record (its path, \
                      size and modification time when found), which makes the session of \
                      evidence class imported (never eligible evidence), also when hooks see \
                      it later",
    },
    Generation {
        number: 11,
        digest: "53f6521997460c5ecf8d7003236c50eed7e7071d7a818519dee96f7cb45c4444",
        description: "titles from the agent's own record: session.titled, the title the \
                      agent's record gives the session (Copilot's workspace.yaml name, Qwen \
                      Code's custom_title, Gemini CLI's summary, OpenCode's session title), \
                      on one line, without control characters, at most 100 characters, with \
                      the field and file it was read from; a later rename is a newer event, \
                      and the newest is the session's title ahead of its first prompt; and \
                      tool results' text from the agent's own record: tool.recorded's output \
                      (Claude Code's tool_result content, Copilot's result.content), at most \
                      64 KiB, with output_cut_bytes when it was cut",
    },
    Generation {
        number: 12,
        digest: "081a2061e45f712d36111cfebe19bf4e19a1c28c81ac75c0abd959721c187c16",
        description: "tool results' text from every agent's own record and from hooks' batch \
                      summaries: tool.recorded's output also from Codex's rollout (a \
                      function_call_output or custom_tool_call_output), Gemini CLI's and Qwen \
                      Code's functionResponse (its output, else its error) and OpenCode's tool \
                      part (its state's output, else its error); tool.batch_result, one call's \
                      result as Claude Code's PostToolBatch lists it (the text the model was \
                      given, at most 64 KiB, with output_cut_bytes when it was cut), written \
                      for a call whose span is known unless its hook completion holds the same \
                      text",
    },
];

impl Generation {
    /// The contract this generation wrote, member by member: frozen for a
    /// shipped generation, read from the types for this build's own.
    pub(crate) fn shape(&self) -> Shape {
        if let Some(text) = frozen::described_text(self.number) {
            return frozen::described_shape(&frozen::parse(text));
        }
        if let Some(json) = frozen::frozen_shape_json(self.number) {
            return serde_json::from_str(json)
                .expect("a frozen shape reads back (a test reads each)");
        }
        contract_shape().clone()
    }
}

/// The generation whose schema digest is `digest`, if this build reads it.
pub fn generation_by_digest(digest: &str) -> Option<&'static Generation> {
    GENERATIONS.iter().find(|g| g.digest == digest)
}

/// The generation this build writes.
pub fn current_generation() -> &'static Generation {
    GENERATIONS
        .iter()
        .find(|g| g.number == CONTRACT_GENERATION)
        .expect("the registry lists the build's own generation")
}

/// The schema digest of this build's contract: its generation's pinned
/// digest, which `the_current_generation_is_the_computed_contract` holds
/// equal to the one derived from the types.
pub fn schema_digest() -> blake3::Hash {
    blake3::Hash::from_hex(current_generation().digest)
        .expect("a pinned digest is 64 hex digits (a test reads each)")
}

/// The digest as lowercase hex, as stored in `genesis.json`.
pub fn schema_digest_hex() -> String {
    current_generation().digest.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::derived_schema_digest;

    #[test]
    fn the_current_generation_is_the_computed_contract() {
        let current = current_generation();
        assert_eq!(current.number, CONTRACT_GENERATION);
        assert_eq!(current.digest, derived_schema_digest().to_hex().as_str());
        assert_eq!(schema_digest(), derived_schema_digest());
        assert_eq!(GENERATIONS.last(), Some(current), "the last one is written");
        assert_eq!(generation_by_digest(&schema_digest_hex()), Some(current));
    }

    #[test]
    fn generation_one_is_pinned() {
        let one = generation_by_digest(
            "1256ec3093dd7e2056634101779618c6a94c7ae34a1b5e4010dd47febaaedcec",
        )
        .expect("generation 1 is readable");
        assert_eq!(one.number, 1);
        assert_eq!(generation_by_digest(&"0".repeat(64)), None);
        assert_eq!(generation_by_digest(""), None);
    }

    #[test]
    fn generation_two_is_pinned() {
        let two = generation_by_digest(
            "0ece7050ac464dba001262163418b978f92cd3e67db863fbaa5f8e69fe277b64",
        )
        .expect("generation 2 is readable");
        assert_eq!(two.number, 2);
    }

    #[test]
    fn generations_count_up_and_digests_are_distinct() {
        for (n, g) in GENERATIONS.iter().enumerate() {
            assert_eq!(g.number as usize, n + 1, "numbered from 1 without gaps");
            assert_eq!(g.digest.len(), 64);
            assert!(
                g.digest
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            );
            assert!(!g.description.is_empty());
            assert_eq!(
                generation_by_digest(g.digest),
                Some(g),
                "digests are distinct"
            );
        }
    }
}
