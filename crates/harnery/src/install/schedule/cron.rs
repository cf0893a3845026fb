//! The crontab line: `crontab -l`, harnery's one line added, replaced or
//! removed, `crontab -` to write it back. Every other line is kept byte
//! for byte, in its place.
//!
//! The line runs every minute and ends in a shell comment, the marker,
//! that names harnery and the home it finalizes:
//!
//! ```text
//! * * * * * HARNERY_HOME='/home/u/.harnery' '/usr/local/bin/harnery' finalize >/dev/null # harnery finalize schedule for HARNERY_HOME=/home/u/.harnery
//! ```
//!
//! A line is this home's when its marker names this home; installing
//! replaces it (a moved binary) and removing drops it. The summary that
//! `finalize` prints goes to `/dev/null`; errors stay on stderr, which
//! cron mails to the user as it does for every job. Every `%` is written
//! `\%`, since cron turns a bare one into a line break.

use super::program::{self, Ran};
use super::{Job, ScheduleError};

/// The program.
pub const CRONTAB: &str = "crontab";

/// What starts harnery's marker, a shell comment at the end of its line.
pub const MARKER: &str = "# harnery finalize schedule for HARNERY_HOME=";

/// A planned crontab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrontabPlan {
    /// `crontab -l` (None: the user has no crontab).
    pub before: Option<Vec<u8>>,
    pub after: Vec<u8>,
    /// The line added (None when removing).
    pub line: Option<String>,
}

impl CrontabPlan {
    pub fn changes(&self) -> bool {
        self.before.as_deref().unwrap_or_default() != self.after.as_slice()
    }
}

/// The crontab line for `job`.
pub fn line(job: &Job) -> String {
    let home = job.home.to_string_lossy();
    let bin = job.harnery.to_string_lossy();
    let command = format!(
        "HARNERY_HOME={} {} finalize >/dev/null {MARKER}{home}",
        crate::install::shell_quote(&home),
        crate::install::shell_quote(&bin),
    );
    format!("* * * * * {}", command.replace('%', "\\%"))
}

/// The marker that ends `job`'s line.
fn marker(job: &Job) -> String {
    format!("{MARKER}{}", job.home.to_string_lossy()).replace('%', "\\%")
}

/// Whether `line` (without its line feed) is `job`'s.
fn is_line_of(line: &[u8], job: &Job) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let marker = marker(job);
    line.ends_with(marker.as_bytes()) && !line.trim_ascii_start().starts_with(b"#")
}

/// Whether the crontab `text` holds `job`'s line.
pub(crate) fn holds_line_of(text: &[u8], job: &Job) -> bool {
    text.split(|&b| b == b'\n').any(|l| is_line_of(l, job))
}

/// The crontab `before` with `job`'s line put in place of the first line
/// of its home (others of its home dropped), or added at the end; with
/// `new` None, the home's lines only dropped.
pub(crate) fn edit(before: &[u8], job: &Job, new: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(before.len() + 200);
    let mut placed = false;
    for piece in before.split_inclusive(|&b| b == b'\n') {
        let body = piece.strip_suffix(b"\n").unwrap_or(piece);
        if !is_line_of(body, job) {
            out.extend_from_slice(piece);
            continue;
        }
        if let (Some(line), false) = (new, placed) {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        placed = true;
    }
    if let (Some(line), false) = (new, placed) {
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

/// The user's crontab (`crontab -l`); None when they have none.
pub(crate) fn read() -> Result<Option<Vec<u8>>, ScheduleError> {
    let args = ["-l"];
    let ran = program::run(CRONTAB, &args, None)?;
    if ran.success {
        return Ok(Some(ran.stdout));
    }
    match says_no_crontab(&ran) {
        true => Ok(None),
        false => Err(program::failed(CRONTAB, &args, &ran).into()),
    }
}

/// `crontab -l`'s answer for a user without a crontab: cronie, Debian's
/// cron and BSD say "no crontab for `<user>`"; busybox cannot open the file.
fn says_no_crontab(ran: &Ran) -> bool {
    let said = ran.stderr.to_ascii_lowercase();
    said.contains("no crontab") || said.contains("no such file")
}

/// Plan adding `job`'s line.
pub fn plan_install(job: &Job) -> Result<CrontabPlan, ScheduleError> {
    let before = read()?;
    let new = line(job);
    let after = edit(before.as_deref().unwrap_or_default(), job, Some(&new));
    Ok(CrontabPlan {
        before,
        after,
        line: Some(new),
    })
}

/// Plan removing `job`'s line.
pub fn plan_uninstall(job: &Job) -> Result<CrontabPlan, ScheduleError> {
    let before = read()?;
    let after = edit(before.as_deref().unwrap_or_default(), job, None);
    Ok(CrontabPlan {
        before,
        after,
        line: None,
    })
}

/// Write the planned crontab back (`crontab -`) when it changes.
pub fn apply(plan: &CrontabPlan) -> Result<bool, ScheduleError> {
    if !plan.changes() {
        return Ok(false);
    }
    program::run_ok(CRONTAB, &["-"], Some(&plan.after))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn job(home: &str) -> Job {
        Job::new(
            PathBuf::from("/opt/h 1/harnery"),
            Path::new(home),
            Path::new("/home/u"),
        )
    }

    #[test]
    fn the_line_quotes_paths_escapes_percent_and_ends_in_the_marker() {
        assert_eq!(
            line(&job("/home/u/.harnery")),
            "* * * * * HARNERY_HOME='/home/u/.harnery' '/opt/h 1/harnery' finalize >/dev/null \
             # harnery finalize schedule for HARNERY_HOME=/home/u/.harnery"
        );
        assert_eq!(
            line(&job("/tmp/50%'s")),
            "* * * * * HARNERY_HOME='/tmp/50\\%'\\''s' '/opt/h 1/harnery' finalize >/dev/null \
             # harnery finalize schedule for HARNERY_HOME=/tmp/50\\%'s"
        );
    }

    #[test]
    fn adding_keeps_every_other_byte_and_a_second_add_is_the_same() {
        let before = b"MAILTO=me\r\n# a comment\n0 3 * * * backup --all %daily\n@reboot x";
        let j = job("/home/u/.harnery");
        let once = edit(before, &j, Some(&line(&j)));
        let mut want = before.to_vec();
        want.extend_from_slice(b"\n");
        want.extend_from_slice(line(&j).as_bytes());
        want.extend_from_slice(b"\n");
        assert_eq!(once, want);
        assert_eq!(edit(&once, &j, Some(&line(&j))), once);
        assert_eq!(edit(&once, &j, None), [&before[..], b"\n"].concat());
    }

    #[test]
    fn a_moved_binary_replaces_the_line_in_place_and_other_homes_stay() {
        let a = job("/home/u/.harnery");
        let b = job("/srv/h");
        let mut old = a.clone();
        old.harnery = PathBuf::from("/old/harnery");
        let text = format!("{}\n1 * * * * other\n{}\n", line(&old), line(&b));
        let after = edit(text.as_bytes(), &a, Some(&line(&a)));
        let want = format!("{}\n1 * * * * other\n{}\n", line(&a), line(&b));
        assert_eq!(String::from_utf8(after).unwrap(), want);
        let removed = edit(want.as_bytes(), &b, None);
        assert_eq!(
            String::from_utf8(removed).unwrap(),
            format!("{}\n1 * * * * other\n", line(&a))
        );
    }

    #[test]
    fn a_commented_out_line_is_the_users_not_ours() {
        let j = job("/home/u/.harnery");
        let text = format!("# {}\n", line(&j));
        assert!(!holds_line_of(text.as_bytes(), &j));
        let after = edit(text.as_bytes(), &j, None);
        assert_eq!(after, text.as_bytes());
    }
}
