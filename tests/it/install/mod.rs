//! `harnery install` / `uninstall` on copies of real settings files.

mod roundtrip;
