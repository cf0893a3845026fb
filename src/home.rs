//! `HARNERY_HOME`: where everything lives, and the permissions it keeps.
