//! Where the central server is and how to reach it: a libpq-style target
//! (a `postgresql://` URL or `key=value` pairs), filled in from the usual
//! `PG*` environment variables and the password file as libpq does, and
//! the TLS policy its `sslmode` asks for.
//!
//! The Rust client understands `sslmode` disable, prefer and require only;
//! `verify-ca` and `verify-full` (and `sslrootcert`) are taken out of the
//! target here and enforced by the TLS verifier this module builds. Like
//! libpq, `prefer` and `require` encrypt without checking the certificate
//! (unless a root certificate is given), `verify-ca` checks the chain, and
//! `verify-full` checks the chain and the host name.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// Why a target could not be resolved or reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("the server target {target:?} does not parse: {source}")]
    Parse {
        target: String,
        source: postgres::Error,
    },
    #[error("sslmode {0:?} is not one of disable, allow, prefer, require, verify-ca, verify-full")]
    SslMode(String),
    #[error("sslrootcert {path}: {detail}")]
    RootCert { path: PathBuf, detail: String },
    #[error(
        "no server to ship to: give --to URL, set ship.to in {config}, or set PGHOST (and PGUSER, PGDATABASE)"
    )]
    NoTarget { config: PathBuf },
    #[error(
        "cannot reach the server at {target}: {source}; nothing was changed, and the next run catches up"
    )]
    Unreachable {
        target: String,
        source: postgres::Error,
    },
    #[error("the server at {target} refused the credentials of user {user:?}: {source}")]
    Credentials {
        target: String,
        user: String,
        source: postgres::Error,
    },
}

/// How far the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verify {
    /// Encrypt when asked, check nothing (libpq `prefer`, `require`).
    Nothing,
    /// The chain to a trusted root (libpq `verify-ca`).
    Chain,
    /// The chain and the host name (libpq `verify-full`).
    Full,
}

/// A resolved target: the client's configuration and the TLS policy.
pub struct Target {
    pub config: postgres::Config,
    verify: Verify,
    root_cert: Option<PathBuf>,
    /// The `sslmode` asked for, as given.
    ssl_mode: Option<String>,
}

/// The environment a target is completed from (all of it, for tests).
#[derive(Debug, Clone, Default)]
pub struct PgEnv {
    pub vars: std::collections::BTreeMap<String, String>,
    pub home: Option<PathBuf>,
}

impl PgEnv {
    pub fn from_process() -> PgEnv {
        let vars = std::env::vars()
            .filter(|(k, _)| k.starts_with("PG") || k == "USER")
            .collect();
        PgEnv {
            vars,
            home: crate::home::env_home(),
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

impl Target {
    /// Resolve `text` (or, with none, the environment alone).
    pub fn resolve(text: Option<&str>, env: &PgEnv) -> Result<Target, ConnectError> {
        let text = text.unwrap_or("");
        let (rest, mut ssl) = take_ssl_params(text);
        let mut config: postgres::Config = if rest.trim().is_empty() {
            postgres::Config::new()
        } else {
            rest.parse().map_err(|source| ConnectError::Parse {
                target: redact(text),
                source,
            })?
        };
        ssl.mode = ssl.mode.or(env.get("PGSSLMODE").map(str::to_string));
        ssl.root_cert = ssl
            .root_cert
            .or(env.get("PGSSLROOTCERT").map(PathBuf::from));
        fill_from_env(&mut config, env);
        let verify = apply_ssl_mode(&mut config, ssl.mode.as_deref())?;
        let ssl_mode = ssl.mode.clone();
        let root_cert = ssl.root_cert.or_else(|| {
            let default = env.home.as_ref()?.join(".postgresql/root.crt");
            default.exists().then_some(default)
        });
        // libpq checks the chain under `require` when a root is there.
        let verify = match (verify, &root_cert) {
            (Verify::Nothing, Some(_)) if config.get_ssl_mode() == SslMode::Require => {
                Verify::Chain
            }
            (v, _) => v,
        };
        Ok(Target {
            config,
            verify,
            root_cert,
            ssl_mode,
        })
    }

    /// The same server and database as another role: a key=value target
    /// (what `fleet add-host` prints for the host).
    pub fn for_role(&self, user: &str, password: &str) -> String {
        let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
        let mut parts = Vec::new();
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        if !hosts.is_empty() {
            parts.push(format!("host={}", quote(&hosts.join(","))));
        }
        if let Some(port) = self.config.get_ports().first() {
            parts.push(format!("port={port}"));
        }
        if let Some(db) = self.config.get_dbname() {
            parts.push(format!("dbname={}", quote(db)));
        }
        parts.push(format!("user={}", quote(user)));
        parts.push(format!("password={}", quote(password)));
        if let Some(mode) = &self.ssl_mode {
            parts.push(format!("sslmode={mode}"));
        }
        if let Some(root) = &self.root_cert {
            parts.push(format!(
                "sslrootcert={}",
                quote(&root.display().to_string())
            ));
        }
        parts.join(" ")
    }

    /// Where this target points, without the password (for messages).
    pub fn describe(&self) -> String {
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        format!(
            "{}:{port}/{} as {}",
            hosts.join(","),
            self.config.get_dbname().unwrap_or("-"),
            self.config.get_user().unwrap_or("-")
        )
    }

    /// Connect, telling an unreachable server from refused credentials.
    pub fn connect(&self) -> Result<postgres::Client, ConnectError> {
        let tls = self.tls()?;
        self.config.connect(tls).map_err(|source| {
            let refused = source.code().is_some_and(|c| {
                *c == postgres::error::SqlState::INVALID_PASSWORD
                    || *c == postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            });
            if refused {
                ConnectError::Credentials {
                    target: self.describe(),
                    user: self.config.get_user().unwrap_or_default().to_string(),
                    source,
                }
            } else {
                ConnectError::Unreachable {
                    target: self.describe(),
                    source,
                }
            }
        })
    }

    fn tls(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect, ConnectError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match self.verify {
            Verify::Nothing => Arc::new(AcceptAny(provider.clone())),
            Verify::Chain | Verify::Full => {
                let roots = Arc::new(self.roots()?);
                let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    roots,
                    provider.clone(),
                )
                .build()
                .map_err(|e| ConnectError::RootCert {
                    path: self.root_cert.clone().unwrap_or_default(),
                    detail: e.to_string(),
                })?;
                Arc::new(Checked {
                    inner,
                    names: self.verify == Verify::Full,
                })
            }
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("the ring provider supports the default protocol versions")
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }

    /// The trusted roots: `sslrootcert` (a PEM file, or `system`), else
    /// the system's store.
    fn roots(&self) -> Result<rustls::RootCertStore, ConnectError> {
        let mut store = rustls::RootCertStore::empty();
        match &self.root_cert {
            Some(path) if path != Path::new("system") => {
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| ConnectError::RootCert {
                        path: path.clone(),
                        detail: e.to_string(),
                    })?;
                for cert in certs {
                    store.add(cert).map_err(|e| ConnectError::RootCert {
                        path: path.clone(),
                        detail: e.to_string(),
                    })?;
                }
            }
            _ => {
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = store.add(cert);
                }
            }
        }
        Ok(store)
    }
}

#[derive(Default)]
struct SslParams {
    mode: Option<String>,
    root_cert: Option<PathBuf>,
}

/// Take `sslmode` and `sslrootcert` out of a URL's query or a key=value
/// string; the rest goes to the client's own parser.
fn take_ssl_params(text: &str) -> (String, SslParams) {
    let mut ssl = SslParams::default();
    let mut take = |key: &str, value: &str| match key {
        "sslmode" => {
            ssl.mode = Some(value.to_string());
            true
        }
        "sslrootcert" => {
            ssl.root_cert = Some(PathBuf::from(value));
            true
        }
        _ => false,
    };
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        let Some((base, query)) = text.split_once('?') else {
            return (text.to_string(), ssl);
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                !take(k, &percent_decode(v))
            })
            .collect();
        let rest = match kept.is_empty() {
            true => base.to_string(),
            false => format!("{base}?{}", kept.join("&")),
        };
        return (rest, ssl);
    }
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            !take(k.trim(), v.trim_matches('\''))
        })
        .collect();
    (kept.join(" "), ssl)
}

/// `%XX` decoded (a bad escape stays as it was), lossily as UTF-8.
pub(crate) fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// What libpq takes from the environment when the target leaves it out.
fn fill_from_env(config: &mut postgres::Config, env: &PgEnv) {
    if config.get_hosts().is_empty() {
        let hosts = env.get("PGHOST").unwrap_or("localhost");
        for host in hosts.split(',') {
            match host.starts_with('/') {
                true => config.host_path(host),
                false => config.host(host),
            };
        }
    }
    if config.get_ports().is_empty()
        && let Some(port) = env.get("PGPORT").and_then(|p| p.parse().ok())
    {
        config.port(port);
    }
    if config.get_user().is_none() {
        let user = env.get("PGUSER").or(env.get("USER")).unwrap_or("postgres");
        config.user(user);
    }
    if config.get_dbname().is_none()
        && let Some(db) = env.get("PGDATABASE")
    {
        config.dbname(db);
    }
    if config.get_password().is_none() {
        let password = env
            .get("PGPASSWORD")
            .map(str::to_string)
            .or_else(|| passfile_password(config, env));
        if let Some(p) = password {
            config.password(p);
        }
    }
    if config.get_connect_timeout().is_none() {
        let secs = env
            .get("PGCONNECT_TIMEOUT")
            .and_then(|s| s.parse().ok())
            .unwrap_or(10);
        config.connect_timeout(Duration::from_secs(secs));
    }
    if config.get_application_name().is_none() {
        config.application_name("harnery");
    }
}

/// The password file's entry for this target (`PGPASSFILE`, else
/// `~/.pgpass`): `host:port:database:user:password`, `*` matching any.
fn passfile_password(config: &postgres::Config, env: &PgEnv) -> Option<String> {
    let path = env
        .get("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| env.home.as_ref().map(|h| h.join(".pgpass")))?;
    let text = std::fs::read_to_string(path).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    let want = [host.as_str(), port.as_str(), db, user];
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| passfile_match(line, &want))
}

fn passfile_match(line: &str, want: &[&str; 4]) -> Option<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    if fields.len() != 5 {
        return None;
    }
    let all = fields[..4]
        .iter()
        .zip(want)
        .all(|(f, w)| f == "*" || f == w);
    all.then(|| fields[4].clone())
}

fn apply_ssl_mode(
    config: &mut postgres::Config,
    mode: Option<&str>,
) -> Result<Verify, ConnectError> {
    let (client, verify) = match mode.unwrap_or("prefer") {
        "disable" => (SslMode::Disable, Verify::Nothing),
        "allow" | "prefer" => (SslMode::Prefer, Verify::Nothing),
        "require" => (SslMode::Require, Verify::Nothing),
        "verify-ca" => (SslMode::Require, Verify::Chain),
        "verify-full" => (SslMode::Require, Verify::Full),
        other => return Err(ConnectError::SslMode(other.to_string())),
    };
    config.ssl_mode(client);
    Ok(verify)
}

/// A target's text with any password replaced.
pub(crate) fn redact(text: &str) -> String {
    let url = regex::Regex::new(r"(://[^:/@]*:)[^@]*@").expect("the URL pattern is valid");
    let pair = regex::Regex::new(r"(password\s*=\s*)\S+").expect("the pair pattern is valid");
    let text = url.replace_all(text, "${1}***@");
    pair.replace_all(&text, "${1}***").into_owned()
}

/// `prefer` and `require` without a root: encrypt, trust any certificate
/// (what libpq does), still checking the handshake signatures.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca` and `verify-full`: the chain always, the name for full.
#[derive(Debug)]
struct Checked {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let checked =
            self.inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now);
        match checked {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode_and_bad_ones_stay() {
        assert_eq!(percent_decode("a%2Fb%20c%C3%A9"), "a/b cé");
        // Two hex digits or it is not an escape (a sign is not a digit).
        assert_eq!(percent_decode("%zz%+A%4"), "%zz%+A%4");
        assert_eq!(percent_decode("%FF"), "\u{FFFD}");
    }

    fn env(pairs: &[(&str, &str)]) -> PgEnv {
        PgEnv {
            vars: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            home: None,
        }
    }

    #[test]
    fn verify_modes_leave_the_url_and_set_the_policy() {
        let t = Target::resolve(
            Some("postgresql://u@db.example:6543/fleet?sslmode=verify-full&application_name=x"),
            &env(&[]),
        )
        .unwrap();
        assert_eq!(t.verify, Verify::Full);
        assert_eq!(t.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(t.config.get_application_name(), Some("x"));
        assert_eq!(t.describe(), "db.example:6543/fleet as u");
        let t = Target::resolve(Some("host=h user=u sslmode=verify-ca"), &env(&[])).unwrap();
        assert_eq!(t.verify, Verify::Chain);
        assert!(matches!(
            Target::resolve(Some("host=h sslmode=bogus"), &env(&[])),
            Err(ConnectError::SslMode(_))
        ));
    }

    #[test]
    fn the_environment_fills_what_the_target_leaves_out() {
        let e = env(&[
            ("PGHOST", "/run/pg"),
            ("PGPORT", "5999"),
            ("PGUSER", "shipper"),
            ("PGDATABASE", "fleet"),
            ("PGPASSWORD", "pw"),
            ("PGSSLMODE", "disable"),
        ]);
        let t = Target::resolve(None, &e).unwrap();
        assert_eq!(t.config.get_hosts(), &[Host::Unix("/run/pg".into())]);
        assert_eq!(t.config.get_ports(), &[5999]);
        assert_eq!(t.config.get_user(), Some("shipper"));
        assert_eq!(t.config.get_password(), Some(&b"pw"[..]));
        assert_eq!(t.config.get_ssl_mode(), SslMode::Disable);
        // The target's own fields win over the environment.
        let t = Target::resolve(Some("postgresql://other@h/db"), &e).unwrap();
        assert_eq!(t.config.get_user(), Some("other"));
        assert_eq!(t.config.get_hosts(), &[Host::Tcp("h".into())]);
    }

    #[test]
    fn the_password_file_matches_with_wildcards_and_escapes() {
        let want = ["h", "5432", "db", "u"];
        assert_eq!(
            passfile_match("h:*:db:u:s\\:ecret", &want),
            Some("s:ecret".into())
        );
        assert_eq!(passfile_match("*:*:*:*:any", &want), Some("any".into()));
        assert_eq!(passfile_match("other:*:*:*:no", &want), None);
    }

    #[test]
    fn redaction_hides_passwords() {
        assert_eq!(
            redact("postgresql://u:hunter2@h/db"),
            "postgresql://u:***@h/db"
        );
        assert_eq!(
            redact("host=h password=hunter2 user=u"),
            "host=h password=*** user=u"
        );
    }
}
