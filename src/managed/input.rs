//! Validation of `reconcile_managed_environment`'s arguments into the desired
//! state (`desiredConfig`, `desiredMetadata` in the application).

use super::js::{self, Object};
use super::vocabulary::{DEFAULT_STOCK_VERSION, KUBERNETES_MARKER, MANAGED_BY_KEY, PROVIDER_KEY};
use crate::args::{json_kind, ArgError};
use serde_json::Value;

/// The arguments as SQL hands them over (jsonb as its text, NULL as `None`).
#[derive(Debug, Clone, Default)]
pub struct ReconcileArgs {
    pub name: Option<String>,
    pub provider: Option<String>,
    pub config: Option<String>,
    pub description: Option<String>,
    pub extra_metadata: Option<String>,
    pub stock_version: Option<String>,
    pub platform_fully_managed: Option<bool>,
}

/// What the reconciler wants the managed row to look like.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    pub name: String,
    pub provider: String,
    pub description: Option<String>,
    /// `{ ...config, provider }`.
    pub config: Object,
    /// `{ managedByPaperclip: true, managedSandboxProvider, ...extra }`, with the
    /// Kubernetes marker null unless it is exactly `true`.
    pub metadata: Object,
    pub stock_version: String,
    pub platform_fully_managed: bool,
}

/// The name and provider are btree index keys (environments' name index, the
/// bindings' resource key), which hold at most about 2,700 bytes: a longer
/// value would fail inside PostgreSQL with a message that names no argument.
pub const MAX_KEY_BYTES: usize = 1000;

fn required_text(argument: &'static str, value: Option<String>) -> Result<String, ArgError> {
    match value {
        None => Err(ArgError::new(argument, "must not be null")),
        Some(v) if v.is_empty() => Err(ArgError::new(argument, "must not be empty")),
        Some(v) if v.len() > MAX_KEY_BYTES => {
            Err(ArgError::new(argument, format!("is {} bytes long, more than the {MAX_KEY_BYTES} allowed", v.len())))
        }
        Some(v) => Ok(v),
    }
}

/// A JSON object argument; SQL NULL means `{}` (the application's `?? {}`).
fn object_argument(argument: &'static str, text: Option<&str>) -> Result<Object, ArgError> {
    let Some(text) = text else { return Ok(Object::new()) };
    match js::parse(text).map_err(|e| ArgError::new(argument, e))? {
        Value::Object(members) => Ok(members),
        other => Err(ArgError::new(argument, format!("must be a JSON object, got {}", json_kind(&other)))),
    }
}

pub fn desired(args: ReconcileArgs) -> Result<Desired, ArgError> {
    let name = required_text("name", args.name)?;
    let provider = required_text("provider", args.provider)?;
    let mut config = object_argument("config", args.config.as_deref())?;
    let extra = object_argument("extra_metadata", args.extra_metadata.as_deref())?;

    config.insert("provider".into(), Value::String(provider.clone()));
    let mut metadata = Object::new();
    metadata.insert(MANAGED_BY_KEY.into(), Value::Bool(true));
    metadata.insert(PROVIDER_KEY.into(), Value::String(provider.clone()));
    metadata.extend(extra);
    if metadata.get(KUBERNETES_MARKER) != Some(&Value::Bool(true)) {
        metadata.insert(KUBERNETES_MARKER.into(), Value::Null);
    }
    Ok(Desired {
        name,
        provider,
        description: args.description,
        config,
        metadata,
        stock_version: args.stock_version.unwrap_or_else(|| DEFAULT_STOCK_VERSION.to_owned()),
        platform_fully_managed: args.platform_fully_managed.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(name: &str, provider: &str) -> ReconcileArgs {
        ReconcileArgs { name: Some(name.into()), provider: Some(provider.into()), ..Default::default() }
    }

    #[test]
    fn provider_is_forced_into_config_and_metadata() {
        let d = desired(ReconcileArgs {
            config: Some(r#"{"provider":"other","target":"us"}"#.into()),
            extra_metadata: Some(r#"{"tier":"gold"}"#.into()),
            ..args("Daytona", "daytona")
        })
        .unwrap();
        assert_eq!(Value::Object(d.config), json!({"provider":"daytona","target":"us"}));
        assert_eq!(
            Value::Object(d.metadata),
            json!({"managedByPaperclip":true,"managedSandboxProvider":"daytona","tier":"gold","managedKubernetesSandbox":null})
        );
        assert_eq!(d.stock_version, "managed-environment-v1");
        assert!(!d.platform_fully_managed);
    }

    #[test]
    fn extra_metadata_overrides_markers_and_kubernetes_marker_must_be_true() {
        let d = desired(ReconcileArgs {
            extra_metadata: Some(r#"{"managedSandboxProvider":"x","managedKubernetesSandbox":true}"#.into()),
            ..args("K", "kubernetes")
        })
        .unwrap();
        assert_eq!(d.metadata["managedSandboxProvider"], json!("x"));
        assert_eq!(d.metadata["managedKubernetesSandbox"], json!(true));
        let d = desired(ReconcileArgs {
            extra_metadata: Some(r#"{"managedKubernetesSandbox":"true"}"#.into()),
            ..args("K", "kubernetes")
        })
        .unwrap();
        assert_eq!(d.metadata["managedKubernetesSandbox"], Value::Null);
    }

    #[test]
    fn bad_arguments_name_themselves() {
        let cases = [
            (ReconcileArgs { name: None, ..args("", "p") }, "name"),
            (args("", "p"), "name"),
            (args(&"n".repeat(MAX_KEY_BYTES + 1), "p"), "name"),
            (args("n", &"p".repeat(MAX_KEY_BYTES + 1)), "provider"),
            (args("n", ""), "provider"),
            (ReconcileArgs { provider: None, ..args("n", "p") }, "provider"),
            (ReconcileArgs { config: Some("[1]".into()), ..args("n", "p") }, "config"),
            (ReconcileArgs { config: Some("null".into()), ..args("n", "p") }, "config"),
            (ReconcileArgs { extra_metadata: Some("\"x\"".into()), ..args("n", "p") }, "extra_metadata"),
        ];
        for (input, argument) in cases {
            assert_eq!(desired(input).unwrap_err().argument, argument);
        }
    }

    #[test]
    fn null_objects_mean_empty() {
        let d = desired(args("n", "p")).unwrap();
        assert_eq!(Value::Object(d.config), json!({"provider":"p"}));
    }
}
