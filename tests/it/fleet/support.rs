//! A throwaway PostgreSQL for the fleet tests: `initdb` into a temporary
//! directory, `pg_ctl start` listening on a Unix socket there only, one
//! superuser `harnery` with a password, stopped (immediately) on drop.
//! The binaries come from `PATH` or `/usr/lib/postgresql/*/bin`; as root
//! they run as the `postgres` user, since PostgreSQL refuses root.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const PASSWORD: &str = "fleet-test-pw";
pub const INSTALL: &str = "apt-get install -y postgresql";

pub struct PgServer {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub socket_dir: PathBuf,
    bin: PathBuf,
    /// Set by [`PgServer::start_tls`]: the TCP port it also listens on.
    tls: Option<Tls>,
}

/// A server that also listens on 127.0.0.1 with TLS: its port and the CA
/// that signed its certificate (for `localhost` only, not 127.0.0.1).
#[derive(Clone)]
pub struct Tls {
    pub port: u16,
    pub ca: PathBuf,
    /// A CA that signed nothing the server has.
    pub other_ca: PathBuf,
}

fn find_bin() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut candidates: Vec<PathBuf> = on_path;
    if let Ok(dirs) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = dirs
            .filter_map(|d| d.ok())
            .map(|d| d.path().join("bin"))
            .collect();
        versions.sort();
        versions.reverse();
        candidates.extend(versions);
    }
    candidates
        .into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        .unwrap_or_else(|| {
            panic!("PostgreSQL (initdb, pg_ctl) is not installed; install it with: {INSTALL}")
        })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl PgServer {
    pub fn start() -> PgServer {
        let bin = find_bin();
        let dir = tempfile::Builder::new()
            .prefix("hpg")
            .tempdir_in("/tmp")
            .unwrap();
        let root = dir.path().to_path_buf();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let socket_dir = root.join("s");
        std::fs::create_dir(&socket_dir).unwrap();
        let pwfile = root.join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&root)
                .status()
                .expect("chown runs");
            assert!(status.success(), "chown the server directory to postgres");
        }
        let server = PgServer {
            _dir: dir,
            root,
            socket_dir,
            bin,
            tls: None,
        };
        let data = server.root.join("data");
        let out = server
            .pg("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "harnery",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.ctl_start();
        server
    }

    /// A PostgreSQL program, as the postgres user when we are root.
    fn pg(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    /// A server that also takes TLS on a TCP port of 127.0.0.1, with a
    /// certificate made here by `openssl` for the name `localhost`.
    pub fn start_tls() -> PgServer {
        let mut server = PgServer::start();
        server.stop_immediate();
        let certs = server.root.join("certs");
        std::fs::create_dir(&certs).unwrap();
        let sh = |script: &str| {
            let out = Command::new("sh")
                .arg("-ec")
                .arg(script)
                .current_dir(&certs)
                .output()
                .expect("sh runs");
            assert!(
                out.status.success(),
                "openssl: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        sh(
            "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca \
              -keyout ca.key -out ca.crt 2>/dev/null
            openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca \
              -keyout other.key -out other.crt 2>/dev/null
            openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
              -keyout server.key -out server.csr 2>/dev/null
            printf 'subjectAltName=DNS:localhost\n' > ext
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
              -days 2 -extfile ext -out server.crt 2>/dev/null
            chmod 600 server.key",
        );
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&certs)
                .status()
                .expect("chown runs");
            assert!(status.success());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        server.tls = Some(Tls {
            port,
            ca: certs.join("ca.crt"),
            other_ca: certs.join("other.crt"),
        });
        server.ctl_start();
        server
    }

    /// A key=value target reaching database `db` over TCP at `host`
    /// (`localhost` or `127.0.0.1`), with `ssl` as the TLS settings.
    pub fn tls_target(&self, db: &str, host: &str, ssl: &str) -> String {
        let tls = self.tls.as_ref().expect("a TLS server");
        format!(
            "host={host} port={} user=harnery password={PASSWORD} dbname={db} {ssl}",
            tls.port
        )
    }

    pub fn tls(&self) -> &Tls {
        self.tls.as_ref().expect("a TLS server")
    }

    pub fn ctl_start(&self) {
        let listen = match &self.tls {
            None => "-c listen_addresses=''".to_string(),
            Some(t) => {
                let certs = self.root.join("certs");
                format!(
                    "-c listen_addresses=127.0.0.1 -p {} -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                    t.port,
                    certs.join("server.crt").display(),
                    certs.join("server.key").display()
                )
            }
        };
        let opts = format!(
            "-k {} {listen} -c fsync=off -c max_connections=100",
            self.socket_dir.display()
        );
        let out = self
            .pg("pg_ctl")
            .arg("-D")
            .arg(self.root.join("data"))
            .arg("-l")
            .arg(self.root.join("log"))
            .args(["-o", &opts, "-w", "start"])
            .output()
            .expect("pg_ctl runs");
        assert!(
            out.status.success(),
            "pg_ctl start: {} {}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.root.join("log")).unwrap_or_default()
        );
    }

    /// `pg_ctl stop -m immediate`: the server dies as in a crash.
    pub fn stop_immediate(&self) {
        let _ = self
            .pg("pg_ctl")
            .arg("-D")
            .arg(self.root.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }

    /// A key=value target for database `db`.
    pub fn target(&self, db: &str) -> String {
        let port = self.tls.as_ref().map_or(5432, |t| t.port);
        format!(
            "host={} port={port} user=harnery password={PASSWORD} dbname={db} sslmode=disable",
            self.socket_dir.display()
        )
    }

    pub fn client(&self, db: &str) -> postgres::Client {
        postgres::Client::connect(&self.target(db), postgres::NoTls)
            .expect("the test server answers")
    }

    /// A client of database `db` as another role.
    pub fn client_as(&self, db: &str, user: &str, password: &str) -> postgres::Client {
        let port = self.tls.as_ref().map_or(5432, |t| t.port);
        let target = format!(
            "host={} port={port} user={user} password={password} dbname={db} sslmode=disable",
            self.socket_dir.display()
        );
        postgres::Client::connect(&target, postgres::NoTls).expect("the role connects")
    }

    /// `pg_dump` of database `db`: everything the server holds, as SQL.
    pub fn pg_dump(&self, db: &str) -> String {
        let port = self.tls.as_ref().map_or(5432, |t| t.port);
        // `pg_dump` may live beside the server's binaries or on PATH only.
        let program = [self.bin.clone()]
            .into_iter()
            .chain(
                std::fs::read_dir("/usr/lib/postgresql")
                    .into_iter()
                    .flatten()
                    .filter_map(|d| d.ok())
                    .map(|d| d.path().join("bin")),
            )
            .map(|d| d.join("pg_dump"))
            .find(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("pg_dump"));
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        let out = cmd
            .env("PGPASSWORD", PASSWORD)
            .arg("-h")
            .arg(&self.socket_dir)
            .args(["-p", &port.to_string(), "-U", "harnery", "-d", db])
            .output()
            .expect("pg_dump runs");
        assert!(
            out.status.success(),
            "pg_dump: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A fresh, empty database; its target.
    pub fn database(&self, name: &str) -> String {
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("database created");
        self.target(name)
    }

    /// Every row the fleet tables hold, as text, in key order (what
    /// "the same server state" means; host timestamps left out).
    pub fn dump(&self, db: &str) -> Vec<String> {
        let mut c = self.client(db);
        let mut out = Vec::new();
        let tables = [
            ("hosts", "host_id, hostname", "host_id"),
            ("epochs", "*", "host_id, genesis_id"),
            ("events", "*", "host_id, genesis_id, seq"),
            ("sessions", "*", "host_id, genesis_id, adapter, session_id"),
            (
                "spans",
                "*",
                "host_id, genesis_id, adapter, session_id, request_event_id",
            ),
            (
                "receipts",
                "*",
                "host_id, genesis_id, adapter, session_id, turn_index",
            ),
        ];
        for (table, cols, order) in tables {
            let sql = format!(
                "SELECT row_to_json(t)::text FROM (SELECT {cols} FROM harnery.{table} ORDER BY {order}) t"
            );
            for r in c.query(&sql, &[]).expect("dump query") {
                out.push(format!("{table}: {}", r.get::<_, String>(0)));
            }
        }
        out
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop_immediate();
    }
}

/// Wait (at most a minute) until `path` exists.
pub fn wait_for(path: &Path) {
    for _ in 0..1200 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} never appeared", path.display());
}

/// A line of the `basic` Claude Code fixture's hooks, by event name.
pub fn fixture_line(event: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/basic/hooks.jsonl"),
    )
    .unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("\"hook_event_name\":\"{event}\"")))
        .unwrap_or_else(|| panic!("the fixture has a {event} line"));
    serde_json::from_str(line).unwrap()
}

/// `harnery ship --to target` from `home`, with `extra` flags.
pub fn ship(home: &Path, target: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["ship", "--to", target];
    args.extend_from_slice(extra);
    crate::common::run(home, &args)
}

/// [`ship`], which must succeed; its stdout.
pub fn ship_ok(home: &Path, target: &str, extra: &[&str]) -> String {
    let out = ship(home, target, extra);
    assert!(
        out.status.success(),
        "ship: {}",
        crate::common::stderr(&out)
    );
    crate::common::stdout(&out)
}

/// `harnery fleet ARGS[0] --from target ARGS[1..]`, from `home` or from no home.
pub fn fleet(home: Option<&Path>, target: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = crate::common::harnery(home.unwrap_or(Path::new("/nonexistent-harnery-home")));
    cmd.arg("fleet")
        .arg(args[0])
        .args(["--from", target])
        .args(&args[1..]);
    cmd.output().unwrap()
}

/// The host id a home's first ship made.
pub fn host_id(home: &Path) -> String {
    std::fs::read_to_string(home.join("host-id"))
        .unwrap()
        .trim()
        .to_string()
}
