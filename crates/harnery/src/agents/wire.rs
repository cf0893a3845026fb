//! The bottom of the agents layer: how any agent payload or record line is
//! parsed, and the tool-input digest both sides of a pairing compute.
//!
//! Every dialect (hooks and records, of every agent) builds on these; this
//! module imports nothing else from `agents`, so nothing here can pull a
//! dialect in.

use crate::contract::Json;

/// Parse a payload as JSON. A payload that is valid UTF-8 as a whole is
/// parsed as text, which spares serde_json from validating every string it
/// reads one by one; any other payload is parsed as bytes, so a malformed
/// one fails with exactly the error it always did.
pub(crate) fn parse_payload<'a, T: serde::Deserialize<'a>>(
    payload: &'a [u8],
) -> serde_json::Result<T> {
    match std::str::from_utf8(payload) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(payload),
    }
}

/// An optional borrowed wire string, owned.
pub(crate) fn owned(value: &Option<std::borrow::Cow<'_, str>>) -> Option<String> {
    value.as_ref().map(|v| v.to_string())
}

/// The digest of a tool input (of its canonical text); a missing input
/// has its own fixed digest.
pub(crate) fn input_digest(input: Option<&Json>) -> String {
    let digest = match input {
        Some(json) => blake3::hash(json.as_str().as_bytes()),
        None => blake3::hash(b"<absent>"),
    };
    digest.to_hex().as_str().to_owned()
}

/// Tool inputs sometimes arrive as a JSON string holding JSON: parse it so
/// that both shapes digest the same.
pub(crate) fn normalize_input(value: Json) -> Json {
    value
        .as_string()
        .and_then(|text| Json::parse(&text).ok())
        .filter(|parsed| parsed.as_str().starts_with(['{', '[']))
        .unwrap_or(value)
}

/// An optional string field of a wire struct, borrowed from the payload
/// unless it holds escapes: `#[serde(default, borrow, deserialize_with =
/// "optional_str")]`. (Left to serde, an `Option<Cow<str>>` is always an
/// owned copy: `borrow` reaches a `Cow` only when it is the field itself.)
pub(crate) fn optional_str<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<std::borrow::Cow<'de, str>>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Text<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);
    let text: Option<Text<'de>> = serde::Deserialize::deserialize(d)?;
    Ok(text.map(|t| t.0))
}

/// A JSON field of a wire struct, read as borrowed text and kept in
/// canonical form (no `Value` tree is built for it):
/// `#[serde(default, deserialize_with = "raw_json")]`.
pub(crate) fn raw_json<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
    let raw: Option<&'de serde_json::value::RawValue> = serde::Deserialize::deserialize(d)?;
    raw.map(|r| Json::parse(r.get()).map_err(serde::de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_strings_are_borrowed_unless_escaped() {
        #[derive(serde::Deserialize)]
        struct Wire<'a> {
            #[serde(default, borrow, deserialize_with = "optional_str")]
            plain: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "optional_str")]
            escaped: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "optional_str")]
            null: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "optional_str")]
            absent: Option<std::borrow::Cow<'a, str>>,
        }
        let wire: Wire = parse_payload(br#"{"plain":"a","escaped":"b\nc","null":null}"#).unwrap();
        assert!(matches!(wire.plain, Some(std::borrow::Cow::Borrowed("a"))));
        assert!(matches!(wire.escaped.as_deref(), Some("b\nc")));
        assert!(matches!(wire.escaped, Some(std::borrow::Cow::Owned(_))));
        assert!(wire.null.is_none() && wire.absent.is_none());
    }

    #[test]
    fn string_and_object_inputs_digest_the_same() {
        let object = Json::from_value(&json!({"command": "ls", "description": "x"}));
        let string = Json::from_value(&json!(r#"{"description":"x","command":"ls"}"#));
        assert_eq!(
            input_digest(Some(&normalize_input(string))),
            input_digest(Some(&object))
        );
        assert_ne!(
            input_digest(None),
            input_digest(Some(&Json::from_value(&json!({}))))
        );
    }

    #[test]
    fn a_plain_string_input_stays_a_string() {
        let text = Json::from_value(&json!("not json"));
        assert_eq!(normalize_input(text.clone()), text);
        let number = Json::from_value(&json!("42"));
        assert_eq!(normalize_input(number.clone()), number);
    }
}
