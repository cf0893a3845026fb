//! The intake spool: framed, checksummed records of raw agent signals.
