//! The application's managed-environment rules, decided in pure Rust: the
//! metadata key set, the stock object, the status rules, and what to write.
//! The SPI shell reads the rows, asks these functions, and writes the answer.

use super::input::Desired;
use super::js::{self, member, member_is, Object};
use crate::stock::canonical::locale_compare;
use crate::stock::status::{resource_status, StockStatus};
use serde_json::Value;

pub const BUNDLE_KEY: &str = "managed-sandbox-environment";
pub const RESOURCE_KIND: &str = "environment";
pub const RESOURCE_KEY: &str = "managed-sandbox";
pub const DEFAULT_STOCK_VERSION: &str = "managed-environment-v1";
/// Stored in the row's metadata and in each binding's defaults; never hashed.
pub const ARCHIVE_TOKEN_KEY: &str = "_paperclipManagedArchiveToken";
pub const MANAGED_BY_KEY: &str = "managedByPaperclip";
pub const PROVIDER_KEY: &str = "managedSandboxProvider";
pub const KUBERNETES_MARKER: &str = "managedKubernetesSandbox";
pub const ARCHIVED_ACTIVITY: &str = "environment.managed_provider_unavailable_archived";

/// A row of `environments` as the application reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub status: String,
    pub config: Value,
    /// SQL NULL reads as `null`.
    pub metadata: Value,
}

impl Environment {
    /// `metadata?.managedByPaperclip === true`.
    pub fn is_managed(&self) -> bool {
        member(&self.metadata, MANAGED_BY_KEY) == Some(&Value::Bool(true))
    }

    fn archive_token(&self) -> Option<&str> {
        member(&self.metadata, ARCHIVE_TOKEN_KEY).and_then(Value::as_str)
    }
}

/// A row of `built_in_managed_resources` for the managed-sandbox slot.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub id: String,
    pub company_id: String,
    pub resource_id: String,
    pub stock_version: Option<String>,
    pub stock_hash: String,
    pub defaults: Value,
}

/// The seed's `sandboxRows.find(managed) ?? sandboxRows.find(same name)`.
/// Rows come ordered by id; the partial unique index allows one managed row
/// and the name index one row per name, so the pick does not depend on order.
pub fn pick_row<'a>(rows: &'a [Environment], name: &str) -> Option<&'a Environment> {
    rows.iter().find(|r| r.is_managed()).or_else(|| rows.iter().find(|r| r.name == name))
}

/// `managedMetadataKeys`: the three markers, the desired keys and every
/// binding's stock metadata keys, sorted with `localeCompare`.
pub fn metadata_keys(desired_metadata: &Object, bindings: &[Binding]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut add = |key: &str| {
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_owned());
        }
    };
    for key in [MANAGED_BY_KEY, PROVIDER_KEY, KUBERNETES_MARKER] {
        add(key);
    }
    desired_metadata.keys().for_each(|k| add(k));
    for binding in bindings {
        if let Some(metadata) = js::clone_record(member(&binding.defaults, "metadata")) {
            metadata.keys().for_each(|k| add(k));
        }
    }
    keys.sort_by(|a, b| locale_compare(a, b)); // stable, like Array#sort
    keys
}

/// `managedEnvironmentStock`: what the hash covers. env_vars never is.
pub fn stock(
    name: &str,
    description: Option<&str>,
    config: &Value,
    metadata: &Value,
    status: &str,
    keys: &[String],
) -> Value {
    let own = js::spread(metadata); // `metadata ?? {}` + hasOwnProperty
    let restricted: Object =
        keys.iter().map(|k| (k.clone(), own.get(k).cloned().unwrap_or(Value::Null))).collect();
    let mut out = Object::new();
    out.insert("name".into(), Value::String(name.to_owned()));
    out.insert("description".into(), description.map_or(Value::Null, |d| Value::String(d.to_owned())));
    out.insert("config".into(), config.clone());
    out.insert("metadata".into(), Value::Object(restricted));
    out.insert("status".into(), Value::String(status.to_owned()));
    Value::Object(out)
}

/// `mergeManagedEnvironmentMetadata`: managed keys take the desired value;
/// a null (or absent) desired value removes the key; other keys stay.
pub fn merge_metadata(current: &Value, desired: &Object, keys: &[String]) -> Object {
    let mut merged = js::spread(current);
    for key in keys {
        match desired.get(key) {
            None | Some(Value::Null) => {
                merged.remove(key);
            }
            Some(value) => {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    merged
}

/// `managedEnvironmentBaselineDefaults`: a binding's defaults without the archive token.
pub fn baseline_defaults(defaults: &Value) -> Object {
    let mut baseline = js::spread(defaults);
    baseline.remove(ARCHIVE_TOKEN_KEY);
    baseline
}

/// `withoutManagedEnvironmentArchiveToken`.
pub fn without_archive_token(metadata: &Value) -> Value {
    if js::falsy(metadata) {
        return Value::Null;
    }
    let mut next = js::spread(metadata);
    next.remove(ARCHIVE_TOKEN_KEY);
    Value::Object(next)
}

fn with_status(mut object: Object, status: &str) -> Object {
    object.insert("status".into(), Value::String(status.to_owned()));
    object
}

/// One binding row to write for each target company.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingWrite {
    /// true: upsert every company (replace); false: insert only companies
    /// that had no binding at all (insert-missing).
    pub replace: bool,
    pub stock_version: String,
    pub stock_hash: String,
    pub defaults: Value,
}

/// `writeBindings`' target companies.
pub fn binding_targets(company_ids: &[String], bindings: &[Binding], replace: bool) -> Vec<String> {
    company_ids
        .iter()
        .filter(|c| replace || !bindings.iter().any(|b| &b.company_id == *c))
        .cloned()
        .collect()
}

/// A binding rewritten in place (archive / reactivation).
#[derive(Debug, Clone, PartialEq)]
pub struct BindingRehash {
    pub binding_id: String,
    pub stock_hash: String,
    pub defaults: Value,
}

/// A new managed row.
#[derive(Debug, Clone, PartialEq)]
pub struct Insertion {
    pub metadata: Value,
    pub bindings: BindingWrite,
}

/// The row to insert when there is none, and the bindings that record it.
/// The stock is computed from exactly the values inserted.
pub fn insertion(desired: &Desired, keys: &[String]) -> Insertion {
    let metadata = Value::Object(merge_metadata(&Value::Null, &desired.metadata, keys));
    let config = Value::Object(desired.config.clone());
    let stock = stock(&desired.name, desired.description.as_deref(), &config, &metadata, "active", keys);
    let stock_hash = js::stock_hash(&stock);
    Insertion {
        metadata,
        bindings: BindingWrite { replace: true, stock_version: desired.stock_version.clone(), stock_hash, defaults: stock },
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentUpdate {
    pub name: String,
    pub description: Option<String>,
    pub config: Value,
    pub metadata: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Reactivation {
    /// The row's metadata without the archive token.
    pub metadata: Value,
    pub bindings: Vec<BindingRehash>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Operator-owned: keep the row; maybe restore what the reconciler archived.
    Skip { reactivation: Option<Reactivation>, bindings: BindingWrite },
    /// Already stock: no environment write.
    Unchanged { bindings: BindingWrite },
    /// Stock-controlled and outdated: write the stock.
    Update { environment: EnvironmentUpdate, bindings: BindingWrite },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Classification before anything is written.
    pub stock_status: StockStatus,
    pub latest_hash: String,
    pub current_hash: String,
    pub plan: Plan,
}

impl Decision {
    pub fn action(&self) -> &'static str {
        match self.plan {
            Plan::Skip { .. } => "skipped",
            Plan::Unchanged { .. } => "unchanged",
            Plan::Update { .. } => "updated",
        }
    }

    pub fn update_available(&self) -> bool {
        matches!(self.plan, Plan::Skip { .. })
    }
}

/// The seed's classification and choice of writes for an existing row.
/// `name_owner_id`: the row that holds `desired.name`, if any.
pub fn decide(
    row: &Environment,
    name_owner_id: Option<&str>,
    desired: &Desired,
    bindings: &[Binding],
    keys: &[String],
) -> Decision {
    // Never take a name another row holds.
    let desired_name = match name_owner_id {
        Some(owner) if owner != row.id => row.name.clone(),
        _ => desired.name.clone(),
    };
    let desired_config = Value::Object(desired.config.clone());
    let desired_stock = stock(
        &desired_name,
        desired.description.as_deref(),
        &desired_config,
        &Value::Object(desired.metadata.clone()),
        "active",
        keys,
    );
    let latest_hash = js::stock_hash(&desired_stock);
    let current_stock = stock(&row.name, row.description.as_deref(), &row.config, &row.metadata, &row.status, keys);
    let current_hash = js::stock_hash(&current_stock);

    let matching: Vec<&Binding> = bindings.iter().filter(|b| b.resource_id == row.id).collect();
    let status_against = |binding_hash: Option<&str>| {
        resource_status(Some(&row.id), Some(&current_hash), binding_hash, Some(&latest_hash))
    };
    let mut stock_status = status_against(matching.first().map(|b| b.stock_hash.as_str()));
    // Any binding that still matches the row proves the row is stock-controlled.
    if stock_status == StockStatus::OperatorModified
        && matching.iter().any(|b| status_against(Some(&b.stock_hash)) == StockStatus::StockUpdateAvailable)
    {
        stock_status = StockStatus::StockUpdateAvailable;
    }
    let row_token = row.archive_token();
    let archived_row = row.status == "archived";
    // The reconciler archived it, but with a token the row no longer carries:
    // someone archived it again on purpose.
    let operator_reaffirmed_archive = archived_row
        && matching.iter().any(|b| {
            member_is(&b.defaults, "status", "archived")
                && matches!(member(&b.defaults, ARCHIVE_TOKEN_KEY), Some(Value::String(t)) if Some(t.as_str()) != row_token)
        });
    if operator_reaffirmed_archive {
        stock_status = StockStatus::OperatorModified;
    }
    // The platform_fully_managed bypass needs a prior binding for this exact row.
    if desired.platform_fully_managed
        && stock_status == StockStatus::OperatorModified
        && !operator_reaffirmed_archive
        && !matching.is_empty()
    {
        stock_status = StockStatus::StockUpdateAvailable;
    }

    let plan = match stock_status {
        StockStatus::OperatorModified => {
            let baseline = matching.first().copied();
            let mut baseline_defaults_value =
                baseline.map_or_else(|| desired_stock.clone(), |b| Value::Object(baseline_defaults(&b.defaults)));
            let mut baseline_hash = baseline.map_or_else(|| latest_hash.clone(), |b| b.stock_hash.clone());
            let archived_by_reconciler = archived_row
                && row_token.is_some_and(|token| {
                    matching.iter().any(|b| {
                        member_is(&b.defaults, "status", "archived") && member_is(&b.defaults, ARCHIVE_TOKEN_KEY, token)
                    })
                });
            let reactivation = archived_by_reconciler.then(|| {
                let rehashed: Vec<BindingRehash> = matching
                    .iter()
                    .map(|b| {
                        let defaults = Value::Object(with_status(baseline_defaults(&b.defaults), "active"));
                        BindingRehash { binding_id: b.id.clone(), stock_hash: js::stock_hash(&defaults), defaults }
                    })
                    .collect();
                if let Some(base) = baseline {
                    if let Some(r) = rehashed.iter().find(|r| r.binding_id == base.id) {
                        baseline_defaults_value = r.defaults.clone();
                        baseline_hash = r.stock_hash.clone();
                    }
                }
                Reactivation { metadata: without_archive_token(&row.metadata), bindings: rehashed }
            });
            let stock_version = baseline
                .and_then(|b| b.stock_version.clone())
                .unwrap_or_else(|| desired.stock_version.clone());
            Plan::Skip {
                reactivation,
                bindings: BindingWrite {
                    replace: false,
                    stock_version,
                    stock_hash: baseline_hash,
                    defaults: baseline_defaults_value,
                },
            }
        }
        StockStatus::StockCurrent => Plan::Unchanged {
            bindings: BindingWrite {
                replace: false,
                stock_version: desired.stock_version.clone(),
                stock_hash: latest_hash.clone(),
                defaults: desired_stock,
            },
        },
        StockStatus::StockUpdateAvailable | StockStatus::Missing => Plan::Update {
            environment: EnvironmentUpdate {
                name: desired_name,
                description: desired.description.clone(),
                config: desired_config,
                metadata: without_archive_token(&Value::Object(merge_metadata(&row.metadata, &desired.metadata, keys))),
            },
            bindings: BindingWrite {
                replace: true,
                stock_version: desired.stock_version.clone(),
                stock_hash: latest_hash.clone(),
                defaults: desired_stock,
            },
        },
    };
    Decision { stock_status, latest_hash, current_hash, plan }
}

/// The activity the application would log, or `None` when it logs nothing.
pub fn activity_action(action: &str, tracking_initialized: bool) -> Option<&'static str> {
    match action {
        "added" => Some("environment.managed_stock_added"),
        "updated" => Some("environment.managed_stock_updated"),
        "skipped" => Some("environment.managed_stock_skipped"),
        _ if tracking_initialized => Some("environment.managed_stock_tracking_initialized"),
        _ => None,
    }
}

/// `archiveManagedSandboxEnvironment`'s target: the managed row, only while
/// it is active and provisioned for this provider.
pub fn archive_target<'a>(rows: &'a [Environment], provider: &str) -> Option<&'a Environment> {
    let row = rows.iter().find(|r| r.is_managed())?;
    (row.status == "active" && member_is(&row.metadata, PROVIDER_KEY, provider)).then_some(row)
}

/// The archived row's metadata (token added) and each binding's archived
/// baseline: only the status changes, so operator edits stay out of stock.
pub fn archive(row: &Environment, bindings: &[Binding], token: &str) -> (Value, Vec<BindingRehash>) {
    let mut metadata = js::spread(&row.metadata);
    metadata.insert(ARCHIVE_TOKEN_KEY.into(), Value::String(token.to_owned()));
    let rehashed = bindings
        .iter()
        .map(|b| {
            let archived = with_status(baseline_defaults(&b.defaults), "archived");
            let stock_hash = js::stock_hash(&Value::Object(archived.clone()));
            let mut defaults = archived;
            defaults.insert(ARCHIVE_TOKEN_KEY.into(), Value::String(token.to_owned()));
            BindingRehash { binding_id: b.id.clone(), stock_hash, defaults: Value::Object(defaults) }
        })
        .collect();
    (Value::Object(metadata), rehashed)
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
