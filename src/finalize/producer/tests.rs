//! Unit tests of the producer over built signal sequences.
