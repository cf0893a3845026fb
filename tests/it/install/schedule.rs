//! `harnery install` sets up the periodic `finalize` on a scratch machine
//! ([`super::machine`]): a systemd user timer where a user systemd answers,
//! else one crontab line beside the user's own, else the line to add by
//! hand; idempotent, skipped by `--no-schedule`, removed with the last
//! agent's hooks; a crontab that fails is a clear error after the hooks.

use super::machine::{Machine, Manager, cron_line, cron_line_running, harnery_bin, ok};

const SERVICE: &str = "harnery-finalize.service";
const TIMER: &str = "harnery-finalize.timer";

fn has_hooks(m: &Machine) -> bool {
    let text = std::fs::read_to_string(m.user.join(".claude/settings.json")).unwrap_or_default();
    text.contains("harnery-hook")
}

#[test]
fn a_user_systemd_gets_a_timer_that_runs_this_harnery_on_this_home() {
    let m = Machine::new(Manager::Running);
    let out = ok(&m.hooks("install", "claude-code", &[]));
    assert!(
        out.contains("systemd user timer harnery-finalize.timer: harnery finalize every minute"),
        "{out}"
    );
    let service = std::fs::read_to_string(m.unit_dir().join(SERVICE)).unwrap();
    let exec = format!("\nExecStart=\"{}\" finalize\n", harnery_bin().display());
    assert!(service.contains(&exec), "{service}");
    let env = format!(
        "\nEnvironment=\"HARNERY_HOME={}\"\n",
        m.default_home().display()
    );
    assert!(service.contains(&env), "{service}");
    assert!(service.contains("\nType=oneshot\n"));
    let timer = std::fs::read_to_string(m.unit_dir().join(TIMER)).unwrap();
    assert!(timer.contains("\nOnCalendar=*-*-* *:*:00\n"), "{timer}");
    assert!(timer.contains("\nWantedBy=timers.target\n"));
    let log = m.log();
    let reload = log
        .iter()
        .position(|l| l == "systemctl --user daemon-reload");
    let enable = log
        .iter()
        .position(|l| l == "systemctl --user enable --now harnery-finalize.timer");
    assert!(reload.is_some() && reload < enable, "{log:?}");
    assert!(m.timer_enabled(TIMER));
    // The crontab is left alone: read (for a line to replace), never written.
    assert!(!log.iter().any(|l| l == "crontab -"), "{log:?}");
    assert_eq!(m.crontab(), None);
    assert!(has_hooks(&m));

    // A second install changes nothing and says so.
    let before = m.log().len();
    let again = ok(&m.hooks("install", "claude-code", &[]));
    assert!(
        again.contains("systemd user timer harnery-finalize.timer: already set up"),
        "{again}"
    );
    let since: Vec<String> = m.log()[before..].to_vec();
    assert!(
        !since
            .iter()
            .any(|l| l.contains("enable --now") || l.contains("daemon-reload")),
        "{since:?}"
    );

    // The last agent's uninstall disables and removes the timer.
    let out = ok(&m.hooks("uninstall", "claude-code", &[]));
    assert!(
        out.contains("systemd user timer harnery-finalize.timer: removed"),
        "{out}"
    );
    assert!(!m.unit_dir().join(SERVICE).exists() && !m.unit_dir().join(TIMER).exists());
    assert!(!m.timer_enabled(TIMER));
    let log = m.log();
    let disable = log
        .iter()
        .rposition(|l| l == "systemctl --user disable --now harnery-finalize.timer");
    let reload = log
        .iter()
        .rposition(|l| l == "systemctl --user daemon-reload");
    assert!(disable.is_some() && disable < reload, "{log:?}");
}

#[test]
fn cron_only_gains_exactly_one_line_and_keeps_every_other_byte() {
    let m = Machine::new(Manager::Offline);
    let theirs: &[u8] = b"MAILTO=me@example.org\r\n# nightly\n0 3 * * * /usr/local/bin/backup --to '/mnt/b' 2>&1 | logger %tag\n\n@reboot /bin/true\n";
    m.set_crontab(theirs);
    let home = m.user.join("a home");
    let vars: &[(&str, &std::path::Path)] = &[("HARNERY_HOME", &home)];
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let install = [
        "install",
        "claude-code",
        "--hook-bin",
        hook.to_str().unwrap(),
    ];
    let out = ok(&m.harnery(&install, vars));
    assert!(
        out.contains("crontab: harnery finalize every minute (one line written)"),
        "{out}"
    );
    let want = [theirs, cron_line(&home).as_bytes(), b"\n"].concat();
    assert_eq!(
        String::from_utf8_lossy(&m.crontab().unwrap()),
        String::from_utf8_lossy(&want)
    );
    assert!(m.log().iter().any(|l| l == "crontab -"));

    // Again: nothing written, and it says so.
    let writes = |m: &Machine| m.log().iter().filter(|l| *l == "crontab -").count();
    let again = ok(&m.harnery(&install, vars));
    assert!(
        again.contains("crontab: harnery finalize already runs every minute"),
        "{again}"
    );
    assert_eq!(writes(&m), 1);
    assert_eq!(m.crontab().unwrap(), want);

    // The last agent's uninstall takes our line and only ours.
    let uninstall = [
        "uninstall",
        "claude-code",
        "--hook-bin",
        hook.to_str().unwrap(),
    ];
    let out = ok(&m.harnery(&uninstall, vars));
    assert!(out.contains("crontab: harnery's line removed"), "{out}");
    assert_eq!(m.crontab().unwrap(), theirs);
}

#[test]
fn a_line_for_another_home_stays_and_a_moved_binary_is_replaced_in_place() {
    let m = Machine::new(Manager::Absent);
    let home = m.default_home();
    let old = cron_line(&home).replace(harnery_bin().to_str().unwrap(), "/old/harnery");
    let other = cron_line(&m.user.join("other"));
    m.set_crontab(format!("{old}\n{other}\n").as_bytes());
    ok(&m.hooks("install", "claude-code", &[]));
    let now = String::from_utf8(m.crontab().unwrap()).unwrap();
    assert_eq!(now, format!("{}\n{other}\n", cron_line(&home)));
    ok(&m.harnery(&["uninstall", "schedule"], &[]));
    assert_eq!(
        String::from_utf8(m.crontab().unwrap()).unwrap(),
        format!("{other}\n")
    );
}

#[test]
fn no_schedule_leaves_crontab_and_systemd_alone() {
    let m = Machine::new(Manager::Running);
    let out = ok(&m.hooks("install", "claude-code", &["--no-schedule"]));
    assert!(!out.contains("schedule") && !out.contains("timer"), "{out}");
    assert!(has_hooks(&m));
    assert_eq!(m.log(), Vec::<String>::new());
    assert!(!m.unit_dir().exists());
    ok(&m.hooks("uninstall", "claude-code", &["--no-schedule"]));
    assert_eq!(m.log(), Vec::<String>::new());
}

#[test]
fn a_crontab_that_fails_is_a_clear_error_after_the_hooks() {
    let m = Machine::new(Manager::Offline);
    std::fs::write(m.state.join("crontab-fails"), "").unwrap();
    let out = m.hooks("install", "claude-code", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the hooks are installed, but the finalize schedule is not")
            && err.contains("`crontab -` failed")
            && err.contains("Permission denied"),
        "{err}"
    );
    assert!(has_hooks(&m));
    assert_eq!(m.crontab(), None);
}

#[test]
fn with_neither_the_line_is_printed_and_install_succeeds() {
    let m = Machine::bare();
    let out = ok(&m.hooks("install", "claude-code", &[]));
    assert!(
        out.contains("no user systemd and no crontab found")
            && out.contains(&format!("\n{}\n", cron_line(&m.default_home()))),
        "{out}"
    );
    assert!(has_hooks(&m));
}

#[test]
fn dry_run_shows_the_schedule_and_writes_nothing() {
    let m = Machine::new(Manager::Offline);
    let out = ok(&m.hooks("install", "claude-code", &["--dry-run"]));
    let line = cron_line(&m.default_home());
    assert!(
        out.contains(&format!("# crontab (would gain this line)\n{line}\n")),
        "{out}"
    );
    let cron: Vec<String> = m
        .log()
        .into_iter()
        .filter(|l| l.starts_with("crontab"))
        .collect();
    assert_eq!(cron, vec!["crontab -l".to_string()]);
    assert_eq!(m.crontab(), None);

    let m = Machine::new(Manager::Running);
    let out = ok(&m.hooks("install", "claude-code", &["--dry-run"]));
    let unit = m.unit_dir().join(TIMER);
    assert!(
        out.contains(&format!("# {} (would change)\n", unit.display()))
            && out.contains("\n# then: systemctl --user enable --now harnery-finalize.timer\n"),
        "{out}"
    );
    assert!(!unit.exists());
    assert!(!m.log().iter().any(|l| l.contains("enable --now")));
}

#[test]
fn the_schedule_stays_while_another_agent_records_through_it() {
    let m = Machine::new(Manager::Offline);
    ok(&m.hooks("install", "claude-code", &[]));
    ok(&m.hooks("install", "gemini-cli", &[]));
    let line = cron_line(&m.default_home());
    let out = ok(&m.hooks("uninstall", "claude-code", &[]));
    assert!(
        out.contains("finalize schedule kept: gemini-cli still record through it"),
        "{out}"
    );
    assert_eq!(m.crontab().unwrap(), format!("{line}\n").as_bytes());
    let out = ok(&m.hooks("uninstall", "gemini-cli", &[]));
    assert!(out.contains("crontab: harnery's line removed"), "{out}");
    assert_eq!(m.crontab().unwrap(), b"");
    let out = ok(&m.harnery(&["uninstall", "schedule"], &[]));
    assert!(
        out.contains("finalize schedule: none installed for"),
        "{out}"
    );
}

#[test]
fn a_timer_replaces_the_same_homes_crontab_line() {
    let m = Machine::new(Manager::Running);
    let line = cron_line(&m.default_home());
    m.set_crontab(format!("5 * * * * mine\n{line}\n").as_bytes());
    let out = ok(&m.harnery(&["install", "schedule"], &[]));
    assert!(out.contains("crontab: harnery's line removed"), "{out}");
    assert_eq!(m.crontab().unwrap(), b"5 * * * * mine\n");
    assert!(m.timer_enabled(TIMER));
}

#[test]
fn a_symlinked_harnery_is_scheduled_through_its_link() {
    let m = Machine::new(Manager::Absent);
    let link = m.user.join("bin/harnery");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(harnery_bin(), &link).unwrap();
    ok(&m.harnery_at(&link, &["install", "schedule"], &[]));
    let line = cron_line_running(&m.default_home(), &link);
    assert_eq!(m.crontab().unwrap(), format!("{line}\n").as_bytes());
}

#[test]
fn with_no_manager_answering_removal_still_takes_the_units_and_link() {
    let m = Machine::new(Manager::Running);
    ok(&m.harnery(&["install", "schedule"], &[]));
    let link = m.unit_dir().join("timers.target.wants").join(TIMER);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(m.unit_dir().join(TIMER), &link).unwrap();
    std::fs::write(m.state.join("manager"), "offline\n").unwrap();
    let out = ok(&m.harnery(&["uninstall", "schedule"], &[]));
    assert!(
        out.contains("systemd user timer harnery-finalize.timer: removed"),
        "{out}"
    );
    assert!(!m.unit_dir().join(TIMER).exists() && !m.unit_dir().join(SERVICE).exists());
    assert!(link.symlink_metadata().is_err());
    assert!(
        !m.log().iter().any(|l| l.contains("disable")),
        "{:?}",
        m.log()
    );
}
