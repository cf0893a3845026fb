//! A scratch machine for the schedule tests: a user home, an
//! `XDG_CONFIG_HOME`, and a `PATH` holding only a fake `crontab` and a
//! fake `systemctl` (small shell scripts that log their argv, keep the
//! crontab in a file and answer as a user systemd would), so no test ever
//! reaches the real crontab or systemd of the person running it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Machine {
    _dir: tempfile::TempDir,
    pub user: PathBuf,
    pub xdg: PathBuf,
    pub bin: PathBuf,
    pub state: PathBuf,
}

/// What the fake `systemctl --user is-system-running` answers.
pub enum Manager {
    Running,
    Offline,
    /// No `systemctl` on `PATH`.
    Absent,
}

const CRONTAB: &str = r#"#!/bin/sh
PATH=/usr/bin:/bin
state='@STATE@'
printf 'crontab %s\n' "$*" >> "$state/log"
case "$1" in
  -l)
    if [ -f "$state/crontab" ]; then cat "$state/crontab"; exit 0; fi
    echo "no crontab for tester" >&2; exit 1 ;;
  -)
    if [ -f "$state/crontab-fails" ]; then
      cat > /dev/null
      echo "crontab: installing new crontab: Permission denied" >&2; exit 1
    fi
    cat > "$state/crontab.new" && mv "$state/crontab.new" "$state/crontab" ;;
  *) echo "fake crontab: unexpected $*" >&2; exit 2 ;;
esac
"#;

const SYSTEMCTL: &str = r#"#!/bin/sh
PATH=/usr/bin:/bin
state='@STATE@'
printf 'systemctl %s\n' "$*" >> "$state/log"
[ "$1" = "--user" ] || { echo "fake systemctl: only --user" >&2; exit 2; }
case "$2" in
  is-system-running) cat "$state/manager"; [ "$(cat "$state/manager")" = running ] ;;
  is-enabled) if [ -f "$state/on-$3" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) if [ -f "$state/on-$3" ]; then echo active; else echo inactive; exit 3; fi ;;
  daemon-reload) ;;
  enable) [ "$3" = --now ] && touch "$state/on-$4" ;;
  disable) [ "$3" = --now ] && rm -f "$state/on-$4" ;;
  *) echo "fake systemctl: unexpected $*" >&2; exit 2 ;;
esac
"#;

impl Machine {
    pub fn new(manager: Manager) -> Machine {
        let dir = tempfile::tempdir().unwrap();
        let (user, xdg) = (dir.path().join("user"), dir.path().join("xdg"));
        let (bin, state) = (dir.path().join("bin"), dir.path().join("state"));
        for d in [&user, &xdg, &bin, &state] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(state.join("log"), "").unwrap();
        write_script(&bin.join("crontab"), CRONTAB, &state);
        let answer = match manager {
            Manager::Running => "running",
            Manager::Offline | Manager::Absent => "offline",
        };
        std::fs::write(state.join("manager"), format!("{answer}\n")).unwrap();
        if !matches!(manager, Manager::Absent) {
            write_script(&bin.join("systemctl"), SYSTEMCTL, &state);
        }
        Machine {
            _dir: dir,
            user,
            xdg,
            bin,
            state,
        }
    }

    /// A machine with neither a crontab nor a systemctl.
    pub fn bare() -> Machine {
        let m = Machine::new(Manager::Absent);
        std::fs::remove_file(m.bin.join("crontab")).unwrap();
        m
    }

    /// `harnery args…` with only this machine's environment (the default
    /// home, `~/.harnery`, unless `vars` set `HARNERY_HOME`).
    pub fn harnery(&self, args: &[&str], vars: &[(&str, &Path)]) -> Output {
        self.harnery_at(&harnery_bin(), args, vars)
    }

    /// The same, started by the path `bin`.
    pub fn harnery_at(&self, bin: &Path, args: &[&str], vars: &[(&str, &Path)]) -> Output {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .env_clear()
            .env("HOME", &self.user)
            .env("XDG_CONFIG_HOME", &self.xdg)
            .env("PATH", &self.bin)
            .env("HARNERY_NPM_PREFIXES", "")
            .env("HARNERY_RECORDS", "off")
            .current_dir(&self.user);
        for (name, value) in vars {
            cmd.env(name, value);
        }
        cmd.output().unwrap()
    }

    /// `harnery install|uninstall <agent>` with the built hook binary.
    pub fn hooks(&self, verb: &str, agent: &str, more: &[&str]) -> Output {
        let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
        let mut args = vec![verb, agent, "--hook-bin", hook.to_str().unwrap()];
        args.extend(more);
        self.harnery(&args, &[])
    }

    pub fn log(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.state.join("log")).unwrap();
        text.lines().map(str::to_string).collect()
    }

    pub fn crontab(&self) -> Option<Vec<u8>> {
        std::fs::read(self.state.join("crontab")).ok()
    }

    pub fn set_crontab(&self, text: &[u8]) {
        std::fs::write(self.state.join("crontab"), text).unwrap();
    }

    pub fn unit_dir(&self) -> PathBuf {
        self.xdg.join("systemd/user")
    }

    pub fn timer_enabled(&self, timer: &str) -> bool {
        self.state.join(format!("on-{timer}")).exists()
    }

    pub fn default_home(&self) -> PathBuf {
        self.user.join(".harnery")
    }
}

fn write_script(path: &Path, text: &str, state: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let quoted = state.to_str().unwrap().replace('\'', "'\\''");
    std::fs::write(path, text.replace("@STATE@", &quoted)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The harnery the tests run, as the schedule names it (the path it was
/// started by).
pub fn harnery_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_harnery"))
}

/// The crontab line `harnery install` writes for `home`.
pub fn cron_line(home: &Path) -> String {
    cron_line_running(home, &harnery_bin())
}

/// The crontab line for `home` written by the harnery at `bin`.
pub fn cron_line_running(home: &Path, bin: &Path) -> String {
    let q = |p: &Path| format!("'{}'", p.to_str().unwrap().replace('\'', "'\\''"));
    format!(
        "* * * * * HARNERY_HOME={} {} finalize >/dev/null # harnery finalize schedule for HARNERY_HOME={}",
        q(home),
        q(bin),
        home.display()
    )
}
