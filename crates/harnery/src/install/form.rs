//! Which form of hook entry `harnery install copilot` writes, and why.
//!
//! Copilot CLI runs a hook entry either through a shell (`"bash": "<command
//! line>"`) or directly (`"exec": "<program>", "args": [...]`, the payload on
//! stdin). The exec form saves a `bash` start per event, but a client that
//! does not know it would skip harnery's hooks, so it is chosen only on
//! evidence: the version of the Copilot that will run the hooks, found on
//! disk by [`crate::agents::copilot::package`] (the same search `resume-policy`
//! uses), at or above [`EXEC_FORM_OLDEST_VERIFIED`]. Anything else, including
//! no Copilot found or an unreadable version, gets the `bash` form, which
//! every version runs. This module never runs `copilot`.

use std::fmt;

use crate::agents::copilot::package::{
    self as evidence, Installed, Place, RunningCopilotHint, SearchPlan,
};
use crate::agents::copilot::version::Version;

/// The oldest Copilot CLI seen running exec-form hooks: 1.0.63, 1.0.86 and
/// 1.0.102 each ran every exec entry with exactly its `args` and the payload
/// on stdin (real clients, offline, one scripted session each). Older
/// versions were not tried, so they get the `bash` form.
pub(crate) const EXEC_FORM_OLDEST_VERIFIED: &str = "1.0.63";

/// The two ways a Copilot hook entry can start `harnery-hook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopilotForm {
    /// `"exec": "<abs path>", "args": ["copilot", "<event>"]`.
    Exec,
    /// `"bash": "'<abs path>' copilot <event>"`.
    Bash,
}

impl CopilotForm {
    pub(crate) fn name(self) -> &'static str {
        match self {
            CopilotForm::Exec => "exec",
            CopilotForm::Bash => "bash",
        }
    }
}

impl fmt::Display for CopilotForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The form chosen and the sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormChoice {
    pub form: CopilotForm,
    pub reason: String,
}

/// The form `--form` asked for.
pub(crate) fn forced(form: CopilotForm) -> FormChoice {
    FormChoice {
        form,
        reason: format!("--form {form} was given"),
    }
}

/// The form to write: `flag` when given, else judged from the Copilot
/// packages on disk (the search `resume-policy` uses, without its recorded
/// running-version hint: that one describes the client before an upgrade).
pub(crate) fn choose(flag: Option<CopilotForm>) -> FormChoice {
    match flag {
        Some(form) => forced(form),
        None => {
            let plan = SearchPlan::from_env(Vec::new());
            from_installed(&evidence::discover(&plan, &RunningCopilotHint::default()))
        }
    }
}

/// The form of `agent`'s entries, and why when it was judged: Claude Code
/// entries (and every other agent's) have one form (nothing to judge,
/// `None`); a Copilot
/// form is judged by [`choose`].
pub fn for_agent(agent: super::Agent, flag: Option<CopilotForm>) -> Option<FormChoice> {
    match agent {
        super::Agent::Copilot => Some(choose(flag)),
        _ => None,
    }
}

/// Choose from what is installed: the `copilot` on `PATH` when its package
/// version is readable (that is the client a user starts), else the newest
/// installed package with a readable version.
pub(crate) fn from_installed(installed: &[Installed]) -> FormChoice {
    let readable = |i: &&Installed| i.parsed_version().is_some();
    let on_path = installed
        .iter()
        .filter(readable)
        .find(|i| i.place == Place::OnPath);
    match on_path {
        Some(i) => judge(i, "the copilot on PATH"),
        None => match installed.iter().filter(readable).max_by_key(|i| i.parsed_version()) {
            Some(i) => judge(i, "no copilot on PATH has a readable version; the newest installed Copilot"),
            None => FormChoice {
                form: CopilotForm::Bash,
                reason: "no Copilot CLI with a readable version was found (PATH, package caches, global node_modules), so its support for exec hooks is unknown".into(),
            },
        },
    }
}

fn judge(client: &Installed, which: &str) -> FormChoice {
    let version = client
        .parsed_version()
        .expect("only packages with a readable version are judged");
    let oldest = Version::parse(EXEC_FORM_OLDEST_VERIFIED).expect("the constant is a version");
    let at = client.dir.display();
    if version >= oldest {
        FormChoice {
            form: CopilotForm::Exec,
            reason: format!(
                "{which} ({at}) is {version}, at or above {oldest}, the oldest version verified to run exec hooks"
            ),
        }
    } else {
        FormChoice {
            form: CopilotForm::Bash,
            reason: format!(
                "{which} ({at}) is {version}, older than {oldest}, the oldest version verified to run exec hooks"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn pkg(place: Place, version: Option<&str>) -> Installed {
        Installed {
            place,
            dir: PathBuf::from(format!("/p/{place:?}/{}", version.unwrap_or("none"))),
            version: version.map(str::to_owned),
            changelog: None,
        }
    }

    #[test]
    fn the_boundary_is_the_oldest_verified_version() {
        let at = |v| from_installed(&[pkg(Place::OnPath, Some(v))]).form;
        assert_eq!(at("1.0.63"), CopilotForm::Exec);
        assert_eq!(at("1.0.102"), CopilotForm::Exec);
        assert_eq!(at("1.0.63-1"), CopilotForm::Bash);
        assert_eq!(at("1.0.62"), CopilotForm::Bash);
        assert_eq!(at("0.0.400"), CopilotForm::Bash);
    }

    #[test]
    fn path_wins_over_a_newer_cache() {
        let choice = from_installed(&[
            pkg(Place::PkgCache, Some("1.0.102")),
            pkg(Place::OnPath, Some("1.0.60")),
        ]);
        assert_eq!(choice.form, CopilotForm::Bash);
        assert!(
            choice.reason.contains("copilot on PATH"),
            "{}",
            choice.reason
        );
        assert!(
            choice.reason.contains("1.0.60, older than 1.0.63"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn without_path_the_newest_readable_package_decides() {
        let choice = from_installed(&[
            pkg(Place::NodeModules, Some("1.0.60")),
            pkg(Place::PkgCache, Some("1.0.86")),
            pkg(Place::OnPath, None),
            pkg(Place::PkgCache, Some("not-a-version")),
        ]);
        assert_eq!(choice.form, CopilotForm::Exec);
        assert!(
            choice.reason.contains("PkgCache/1.0.86"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn nothing_readable_is_bash_and_says_unknown() {
        let choice = from_installed(&[pkg(Place::PkgCache, Some("latest"))]);
        assert_eq!(choice.form, CopilotForm::Bash);
        assert!(choice.reason.contains("unknown"), "{}", choice.reason);
        assert_eq!(from_installed(&[]).form, CopilotForm::Bash);
    }
}
