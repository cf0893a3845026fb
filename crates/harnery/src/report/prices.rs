//! A user's prices (`--prices FILE`, TOML) and the table bundled with
//! harnery (LiteLLM's model price list): per model, a price per million
//! tokens of each kind. Usage is priced with them apart from any cost the
//! agent reported ([`super::usage`]); a kind without a price leaves its
//! records unpriced, never priced at zero.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::contract::UsageReported;

/// A user's prices: per model, a price per million tokens of each kind.
/// A kind left out has no price, and usage of that kind cannot be priced.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Where the prices come from, and as of when (the bundled table names
    /// both; a user's file may).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub date: Option<String>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelPrices>,
}

/// The price table shipped with harnery (`prices/litellm.toml`, from
/// LiteLLM's model price list, MIT), used when no `--prices` is given.
const BUNDLED_PRICES: &str = include_str!("../../prices/litellm.toml");

/// One model's prices per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrices {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

/// Why a prices file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("cannot read prices file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("prices file {path} is not valid: {detail}")]
    Malformed { path: PathBuf, detail: String },
}

impl Prices {
    /// The bundled price table, dated.
    pub fn bundled() -> Prices {
        Prices::parse(BUNDLED_PRICES).expect("the bundled price table parses")
    }

    /// `source, date` as a note, e.g. `LiteLLM 1.110.2 model price list of 2026-12-02`.
    pub fn label(&self) -> String {
        match (&self.source, &self.date) {
            (Some(s), Some(d)) => format!("{s} of {d}"),
            (Some(s), None) => s.clone(),
            (None, Some(d)) => format!("prices of {d}"),
            (None, None) => "the prices file given".into(),
        }
    }

    /// Read and check the TOML prices file at `path`.
    pub(crate) fn load(path: &Path) -> Result<Prices, PricesError> {
        let text = std::fs::read_to_string(path).map_err(|source| PricesError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Prices::parse(&text).map_err(|detail| PricesError::Malformed {
            path: path.to_path_buf(),
            detail,
        })
    }

    /// Parse prices text; the error names the line and column.
    pub(crate) fn parse(text: &str) -> Result<Prices, String> {
        let prices: Prices = toml::from_str(text).map_err(|e| locate(text, &e))?;
        for (model, p) in &prices.models {
            let all = [p.input, p.output, p.cache_read, p.cache_write];
            if all.iter().flatten().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(format!("model {model:?}: a price must be a number >= 0"));
            }
        }
        Ok(prices)
    }

    /// What one record costs at these prices, in millionths of the
    /// prices' unit (summed so, and divided once, to keep decimal prices
    /// from drifting); `None` when its model, or a kind of token it
    /// reports, has no price.
    pub(super) fn price_millionths(&self, u: &UsageReported) -> Option<f64> {
        let p = self.models.get(u.model.as_deref()?)?;
        let kinds = [
            (u.input_tokens, p.input),
            (u.output_tokens, p.output),
            (u.cache_read_tokens, p.cache_read),
            (u.cache_write_tokens, p.cache_write),
        ];
        let mut total = 0.0;
        for (count, price) in kinds {
            match (count, price) {
                (None | Some(0), _) => {}
                (Some(n), Some(per_million)) => total += n as f64 * per_million,
                (Some(_), None) => return None,
            }
        }
        Some(total)
    }
}

impl Prices {
    /// What token sums by model cost at these prices, in millionths (each
    /// model's sums those of records [`Prices::price_millionths`] prices,
    /// so each kind counted has a price): in model order, kind by kind.
    pub(crate) fn sums_millionths(&self, sums: &BTreeMap<String, [u64; 4]>) -> f64 {
        let mut total = 0.0;
        for (model, counts) in sums {
            let Some(p) = self.models.get(model) else {
                continue;
            };
            let prices = [p.input, p.output, p.cache_read, p.cache_write];
            for (n, price) in counts.iter().zip(prices) {
                if let (n @ 1.., Some(per_million)) = (*n, price) {
                    total += n as f64 * per_million;
                }
            }
        }
        total
    }
}

/// A TOML error as "line L, column C: message".
fn locate(text: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    let Some(span) = e.span() else {
        return message.to_string();
    };
    let Some(before) = text.get(..span.start) else {
        return message.to_string();
    };
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {column}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_prices_file_names_the_line() {
        let err = Prices::parse("[models.m1]\ninput = \"x\"\n").unwrap_err();
        assert!(err.starts_with("line 2, column 9:"), "{err}");
        let err = Prices::parse("[models.m1]\nsnacks = 1.0\n").unwrap_err();
        assert!(err.starts_with("line 2,"), "{err}");
    }
}
