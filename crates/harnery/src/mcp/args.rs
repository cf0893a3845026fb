//! Why a tool's arguments do not fit its input schema, in words that name
//! the argument: an unknown name, a missing required one, a value of the
//! wrong type or below its minimum. Only the shapes the tools' schemas
//! use are read (an object of named properties, each a type or a list of
//! types, arrays of strings).

use serde_json::{Map, Value};

/// What is wrong with `arguments`, if the schema can say.
pub(super) fn explain(schema: &Map<String, Value>, arguments: &Value) -> Option<String> {
    let Value::Object(given) = arguments else {
        return Some("the arguments must be a JSON object".into());
    };
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let names: Vec<&str> = properties.keys().map(String::as_str).collect();
    for key in given.keys() {
        if !properties.contains_key(key) {
            return Some(format!(
                "there is no argument {key:?}; the arguments are {}",
                names.join(", ")
            ));
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !given.contains_key(name) {
            return Some(format!("{name} is required"));
        }
    }
    for (key, value) in given {
        if let Some(why) = properties.get(key).and_then(|p| mismatch(p, value)) {
            return Some(format!("{key}: {why}"));
        }
    }
    None
}

/// Why `value` does not fit the property schema `p`.
fn mismatch(p: &Value, value: &Value) -> Option<String> {
    let types: Vec<&str> = match p.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if !types.iter().any(|t| fits(t, value)) {
        let wanted: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
        return Some(format!("expected {}, got {value}", wanted.join(" or ")));
    }
    if let (Some(min), Some(n)) = (p.get("minimum").and_then(Value::as_f64), value.as_f64())
        && n < min
    {
        return Some(format!("must be {min} or more, got {value}"));
    }
    if let (Some(items), Value::Array(given)) = (p.get("items"), value) {
        for item in given {
            if let Some(why) = mismatch(items, item) {
                return Some(format!("an item: {why}"));
            }
        }
    }
    None
}

fn fits(ty: &str, value: &Value) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::explain;
    use serde_json::json;

    fn schema() -> serde_json::Map<String, serde_json::Value> {
        let s = json!({
            "type": "object",
            "required": ["query"],
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 0},
                "kind": {"type": "array", "items": {"type": "string"}},
            },
        });
        s.as_object().unwrap().clone()
    }

    #[test]
    fn each_misfit_names_its_argument() {
        let s = schema();
        let says = |v| explain(&s, &v).unwrap_or_default();
        assert!(says(json!([])).contains("JSON object"));
        assert!(says(json!({"query": "x", "colour": 1})).contains("\"colour\""));
        assert_eq!(says(json!({})), "query is required");
        assert!(says(json!({"query": 3})).starts_with("query: expected string"));
        assert!(says(json!({"query": "x", "limit": -1})).starts_with("limit: must be 0"));
        assert!(says(json!({"query": "x", "limit": "9"})).starts_with("limit: expected integer"));
        assert!(says(json!({"query": "x", "kind": [1]})).starts_with("kind: an item"));
        assert_eq!(explain(&s, &json!({"query": "x", "limit": null})), None);
    }
}
