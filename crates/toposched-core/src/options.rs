//! What every policy file uses to declare its options: the JSON object they arrive in,
//! parsing with errors that name the policy, the schema of an options struct, and the
//! pairing of an entry with its file's documentation. Depends on nothing else in the crate.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Options of one policy, as a JSON object (`{}` for the defaults).
pub type Options = Map<String, Value>;

/// A policy entry and the long documentation of its file.
pub struct Registered<E: 'static> {
    pub policy: &'static E,
    pub doc: &'static str,
}

/// Parse a policy's options, naming the policy in every error.
pub fn parse_options<T: DeserializeOwned>(policy: &str, options: &Options) -> Result<T, String> {
    serde_json::from_value(Value::Object(options.clone())).map_err(|e| format!("{policy}: {e}"))
}

/// JSON schema of an options struct, for [`AllocEntry::options`].
pub fn schema_of<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::schema_for!(T)
}

/// The options of a policy without any.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NoOptions {}

/// Option names a schema declares, in declaration order.
pub fn option_names(schema: &schemars::Schema) -> Vec<String> {
    schema
        .as_object()
        .and_then(|o| o.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}


/// `NAME:KEY=VALUE,...` to `NAME` and its options, merged over `options` (the name's win):
/// the short form some callers use for a policy and its settings in one string. A value is
/// a whole number, `true`/`false`, or else a string. A name without a colon is returned as is.
pub fn split_params(name: &str, options: &Options) -> Result<(String, Options), String> {
    let Some((base, params)) = name.split_once(':') else { return Ok((name.to_string(), options.clone())) };
    let mut out = options.clone();
    for item in params.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| format!("{base}: expected KEY=VALUE, got {item:?}"))?;
        let value = if let Ok(i) = v.parse::<i64>() {
            Value::from(i)
        } else if let Ok(b) = v.parse::<bool>() {
            Value::from(b)
        } else {
            Value::from(v)
        };
        out.insert(k.to_string(), value);
    }
    Ok((base.to_string(), out))
}
