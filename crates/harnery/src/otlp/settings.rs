//! Where a push goes and how, the OpenTelemetry way: flags over the
//! `OTEL_EXPORTER_OTLP_*` environment over `[otlp]` in `config.toml`,
//! then the OTLP default (`http://localhost:4318/v1/traces`,
//! `http/protobuf`, 10 s).
//!
//! - `endpoint` (`OTEL_EXPORTER_OTLP_ENDPOINT`, `--endpoint`): a base
//!   URL, traces going to `<endpoint>/v1/traces`;
//! - `traces_endpoint` (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//!   `--traces-endpoint`): the traces URL, used as it is, and over
//!   `endpoint` of the same source;
//! - `headers` (`OTEL_EXPORTER_OTLP_HEADERS` and `_TRACES_HEADERS`,
//!   `key=value` pairs joined by commas, values percent-encoded;
//!   `--header K=V`; a table in the config): merged key by key, the
//!   stronger source winning;
//! - `protocol` (`OTEL_EXPORTER_OTLP_PROTOCOL` and `_TRACES_PROTOCOL`):
//!   `http/protobuf` or `http/json` (`grpc` is not spoken);
//! - `timeout_ms` (`OTEL_EXPORTER_OTLP_TIMEOUT` and `_TRACES_TIMEOUT`, in
//!   milliseconds): for each request;
//! - `content` (`--content`; no OpenTelemetry variable names it): what
//!   of the prompts, messages and tools' inputs and outputs the spans
//!   carry, as for `ship`: `none` (the default), `masked` or `full`.
//!
//! ```toml
//! [otlp]
//! endpoint = "https://otel.example.com:4318"
//! protocol = "http/json"
//! timeout_ms = 30000
//! content = "masked"
//! [otlp.headers]
//! authorization = "Bearer …"
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::http::Url;
use crate::config::ConfigError;
use crate::fleet::ship::Content;

/// How spans are put on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Protocol {
    #[serde(rename = "http/protobuf")]
    Protobuf,
    #[serde(rename = "http/json")]
    Json,
}

impl Protocol {
    pub fn parse(text: &str) -> Result<Protocol, String> {
        match text.trim() {
            "http/protobuf" => Ok(Protocol::Protobuf),
            "http/json" => Ok(Protocol::Json),
            "grpc" => Err("protocol grpc is not spoken: use http/protobuf or http/json".into()),
            other => Err(format!(
                "protocol {other:?} is not http/protobuf or http/json"
            )),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Protobuf => "http/protobuf",
            Protocol::Json => "http/json",
        }
    }
}

/// One source's word on each setting (a flag, the environment, the
/// config file); `None` where it says nothing.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    pub endpoint: Option<String>,
    pub traces_endpoint: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub protocol: Option<String>,
    pub timeout_ms: Option<u64>,
    /// `none`, `masked` or `full`.
    pub content: Option<String>,
}

/// `--content` / `[otlp] content` as words.
pub fn parse_content(text: &str) -> Result<Content, String> {
    match text.trim() {
        "none" => Ok(Content::None),
        "masked" => Ok(Content::Masked),
        "full" => Ok(Content::Full),
        other => Err(format!("content {other:?} is not none, masked or full")),
    }
}

#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    otlp: Layer,
}

impl Layer {
    /// `[otlp]` of the config in `home_root`.
    pub fn from_config(home_root: &Path) -> Result<Layer, ConfigError> {
        Ok(crate::config::read::<ConfigFile>(home_root)?.otlp)
    }

    /// The `OTEL_EXPORTER_OTLP_*` variables `var` gives (the traces ones
    /// over the general ones).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Layer, String> {
        let pick = |general: &str| {
            let traces = general.replace("OTLP_", "OTLP_TRACES_");
            var(&traces)
                .or_else(|| var(general))
                .filter(|v| !v.trim().is_empty())
        };
        let mut headers = BTreeMap::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(text) = var(name) {
                for (k, v) in parse_headers(&text).map_err(|e| format!("{name}: {e}"))? {
                    headers.insert(k, v);
                }
            }
        }
        let timeout_ms = match pick("OTEL_EXPORTER_OTLP_TIMEOUT") {
            Some(t) => Some(t.trim().parse().map_err(|_| {
                format!("OTEL_EXPORTER_OTLP_TIMEOUT {t:?} is not a number of milliseconds")
            })?),
            None => None,
        };
        Ok(Layer {
            endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|v| !v.trim().is_empty()),
            traces_endpoint: var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .filter(|v| !v.trim().is_empty()),
            headers,
            protocol: pick("OTEL_EXPORTER_OTLP_PROTOCOL"),
            timeout_ms,
            content: None,
        })
    }

    /// The traces URL this source names, if it names one.
    fn traces_url(&self) -> Option<String> {
        if let Some(t) = &self.traces_endpoint {
            return Some(t.trim().to_string());
        }
        let base = self.endpoint.as_ref()?.trim();
        Some(format!("{}/v1/traces", base.trim_end_matches('/')))
    }
}

/// `k=v,k2=v2` as the OpenTelemetry environment spells headers (values
/// percent-decoded).
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("header {pair:?} is not key=value"))?;
        let v = percent_encoding::percent_decode_str(v.trim()).decode_utf8_lossy();
        out.push((k.trim().to_string(), v.into_owned()));
    }
    Ok(out)
}

/// What a push uses, every source weighed.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The traces URL, as given (what deliveries are remembered under).
    pub endpoint: String,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub protocol: Protocol,
    pub timeout: Duration,
    /// What of the words the spans carry (`none` unless asked).
    pub content: Content,
}

pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318/v1/traces";
const DEFAULT_TIMEOUT_MS: u64 = 10_000;

impl Settings {
    /// `layers` strongest first.
    pub fn resolve(layers: &[&Layer]) -> Result<Settings, String> {
        let endpoint = layers
            .iter()
            .find_map(|l| l.traces_url())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let url = Url::parse(&endpoint).map_err(|e| format!("endpoint {e}"))?;
        let mut merged = BTreeMap::new();
        for layer in layers.iter().rev() {
            for (k, v) in &layer.headers {
                merged.insert(k.to_ascii_lowercase(), (k.clone(), v.clone()));
            }
        }
        let mut headers = Vec::new();
        for (lower, (k, v)) in merged {
            let bad = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
            if k.is_empty() || bad(&k) || bad(&v) || k.contains([':', ' ']) {
                return Err(format!("header {k:?} is not a valid header name and value"));
            }
            if ["host", "content-length", "content-type", "connection"].contains(&lower.as_str()) {
                return Err(format!("header {k:?} is set by harnery itself"));
            }
            headers.push((k, v));
        }
        let protocol = match layers.iter().find_map(|l| l.protocol.as_deref()) {
            Some(p) => Protocol::parse(p)?,
            None => Protocol::Protobuf,
        };
        let timeout_ms = layers
            .iter()
            .find_map(|l| l.timeout_ms)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 {
            return Err("timeout 0 ms: give a positive number of milliseconds".into());
        }
        let content = match layers.iter().find_map(|l| l.content.as_deref()) {
            Some(c) => parse_content(c)?,
            None => Content::None,
        };
        Ok(Settings {
            endpoint,
            url,
            headers,
            protocol,
            timeout: Duration::from_millis(timeout_ms),
            content,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Layer {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Layer::from_env(|k| map.get(k).cloned()).unwrap()
    }

    #[test]
    fn the_base_endpoint_gets_the_traces_path_and_the_traces_one_is_taken_as_is() {
        let e = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]);
        assert_eq!(
            Settings::resolve(&[&e]).unwrap().endpoint,
            "http://c:4318/v1/traces"
        );
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"),
        ]);
        assert_eq!(
            Settings::resolve(&[&e]).unwrap().endpoint,
            "http://t:1/custom"
        );
        let none = Settings::resolve(&[&Layer::default()]).unwrap();
        assert_eq!(none.endpoint, DEFAULT_ENDPOINT);
        assert_eq!(none.protocol, Protocol::Protobuf);
        assert_eq!(none.timeout, Duration::from_secs(10));
    }

    #[test]
    fn flags_beat_env_beat_config_setting_by_setting() {
        let flags = Layer {
            headers: [("X-A".to_string(), "flag".to_string())].into(),
            ..Layer::default()
        };
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-a=env,x-b=a%20b"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ]);
        let config = Layer {
            endpoint: Some("https://cfg".into()),
            protocol: Some("http/protobuf".into()),
            headers: [("x-c".to_string(), "cfg".to_string())].into(),
            ..Layer::default()
        };
        let s = Settings::resolve(&[&flags, &e, &config]).unwrap();
        assert_eq!(s.endpoint, "https://cfg/v1/traces");
        assert_eq!(s.protocol, Protocol::Json);
        assert_eq!(s.timeout, Duration::from_millis(2500));
        let mut h = s.headers.clone();
        h.sort();
        assert_eq!(
            h,
            [
                ("X-A".into(), "flag".into()),
                ("x-b".into(), "a b".into()),
                ("x-c".into(), "cfg".into())
            ]
        );
    }

    #[test]
    fn content_is_none_unless_a_flag_or_the_config_says_otherwise() {
        let none = Settings::resolve(&[&Layer::default()]).unwrap();
        assert_eq!(none.content, Content::None);
        let config = Layer {
            content: Some("masked".into()),
            ..Layer::default()
        };
        let s = Settings::resolve(&[&Layer::default(), &config]).unwrap();
        assert_eq!(s.content, Content::Masked);
        let flag = Layer {
            content: Some("full".into()),
            ..Layer::default()
        };
        assert_eq!(
            Settings::resolve(&[&flag, &config]).unwrap().content,
            Content::Full
        );
        let bad = Layer {
            content: Some("some".into()),
            ..Layer::default()
        };
        assert!(Settings::resolve(&[&bad]).unwrap_err().contains("\"some\""));
    }

    #[test]
    fn bad_settings_are_named() {
        let grpc = Layer {
            protocol: Some("grpc".into()),
            ..Layer::default()
        };
        assert!(Settings::resolve(&[&grpc]).unwrap_err().contains("grpc"));
        let crlf = Layer {
            headers: [("x".to_string(), "a\r\nb: c".to_string())].into(),
            ..Layer::default()
        };
        assert!(Settings::resolve(&[&crlf]).is_err());
        let url = Layer {
            traces_endpoint: Some("localhost:4318".into()),
            ..Layer::default()
        };
        assert!(
            Settings::resolve(&[&url])
                .unwrap_err()
                .contains("localhost:4318")
        );
        let map: BTreeMap<&str, &str> = [("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")].into();
        assert!(Layer::from_env(|k| map.get(k).map(|v| v.to_string())).is_err());
    }
}
