//! The application's managed-environment rules, decided in pure Rust: the
//! metadata key set, the stock object, the status rules, and what to write.
//! The SPI shell reads the rows, asks these functions, and writes the answer.

use super::input::Desired;
use super::js::{self, member, member_is, Object};
use super::vocabulary::{ARCHIVE_TOKEN_KEY, KUBERNETES_MARKER, MANAGED_BY_KEY, PROVIDER_KEY};
use crate::stock::canonical::locale_compare;
use crate::stock::status::{resource_status, StockStatus};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

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
    /// Shared: every company's binding usually records the same stock, read once.
    pub defaults: Rc<Value>,
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
        if let Some(Value::Object(metadata)) = member(&binding.defaults, "metadata") {
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
    if replace {
        return company_ids.to_vec();
    }
    // A set, not a scan per company: every company has a binding in the common case.
    let bound: HashSet<&str> = bindings.iter().map(|b| b.company_id.as_str()).collect();
    company_ids.iter().filter(|c| !bound.contains(c.as_str())).cloned().collect()
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

/// One row of `managed_environment_drift` (beyond the seed, read-only).
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub company_id: String,
    pub environment_id: String,
    pub binding_stock_hash: String,
    /// `None`: the environment row is gone.
    pub current_hash: Option<String>,
    pub stock_status: StockStatus,
}

/// Each binding against its environment as it is now: the current hash is the
/// reconciler's own (`stock` over `metadata_keys` without a desired input: the
/// markers and every binding's stock metadata keys), and "latest" is the stock
/// of the environment's newest binding (`newest`, decided by the caller's
/// `updated_at, id` order). Rows come out in the bindings' order.
pub fn drift(bindings: &[Binding], newest: &[bool], environments: &[Environment]) -> Vec<Drift> {
    let keys = metadata_keys(&Object::new(), bindings);
    let current: HashMap<&str, String> = environments
        .iter()
        .map(|e| {
            let stock = stock(&e.name, e.description.as_deref(), &e.config, &e.metadata, &e.status, &keys);
            (e.id.as_str(), js::stock_hash(&stock))
        })
        .collect();
    let latest: HashMap<&str, &str> = bindings
        .iter()
        .zip(newest)
        .filter(|(_, &newest)| newest)
        .map(|(b, _)| (b.resource_id.as_str(), b.stock_hash.as_str()))
        .collect();
    bindings
        .iter()
        .map(|b| {
            let current_hash = current.get(b.resource_id.as_str()).cloned();
            let row = current_hash.is_some().then_some(b.resource_id.as_str());
            let latest = latest.get(b.resource_id.as_str()).copied();
            Drift {
                company_id: b.company_id.clone(),
                environment_id: b.resource_id.clone(),
                binding_stock_hash: b.stock_hash.clone(),
                stock_status: resource_status(row, current_hash.as_deref(), Some(&b.stock_hash), latest),
                current_hash,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managed::input::{desired, ReconcileArgs};
    use proptest::prelude::*;
    use serde_json::json;

    fn want(name: &str, provider: &str, config: &str) -> Desired {
        desired(ReconcileArgs {
            name: Some(name.into()),
            provider: Some(provider.into()),
            config: Some(config.into()),
            description: Some("Managed sandbox.".into()),
            ..Default::default()
        })
        .unwrap()
    }

    /// A tiny in-memory application: one row, bindings per company.
    struct World {
        row: Option<Environment>,
        bindings: Vec<Binding>,
        companies: Vec<String>,
    }

    impl World {
        fn new(companies: &[&str]) -> Self {
            World { row: None, bindings: vec![], companies: companies.iter().map(|c| c.to_string()).collect() }
        }

        fn write(&mut self, env_id: &str, w: &BindingWrite) {
            for company in binding_targets(&self.companies, &self.bindings.clone(), w.replace) {
                let fresh = Binding {
                    id: format!("b-{company}"),
                    company_id: company.clone(),
                    resource_id: env_id.into(),
                    stock_version: Some(w.stock_version.clone()),
                    stock_hash: w.stock_hash.clone(),
                    defaults: Rc::new(w.defaults.clone()),
                };
                match self.bindings.iter_mut().find(|b| b.company_id == company) {
                    Some(existing) if w.replace => *existing = fresh,
                    Some(_) => {}
                    None => self.bindings.push(fresh),
                }
            }
        }

        fn reconcile(&mut self, d: &Desired) -> Decision {
            let keys = metadata_keys(&d.metadata, &self.bindings);
            let Some(row) = self.row.clone() else {
                let ins = insertion(d, &keys);
                self.row = Some(Environment {
                    id: "env".into(),
                    name: d.name.clone(),
                    description: d.description.clone(),
                    status: "active".into(),
                    config: Value::Object(d.config.clone()),
                    metadata: ins.metadata.clone(),
                });
                self.write("env", &ins.bindings);
                return Decision {
                    stock_status: StockStatus::Missing,
                    latest_hash: ins.bindings.stock_hash.clone(),
                    current_hash: String::new(),
                    plan: Plan::Unchanged { bindings: ins.bindings },
                };
            };
            let decision = decide(&row, Some(&row.id), d, &self.bindings, &keys);
            let row = self.row.as_mut().unwrap();
            match &decision.plan {
                Plan::Skip { reactivation, bindings } => {
                    if let Some(r) = reactivation {
                        row.status = "active".into();
                        row.metadata = r.metadata.clone();
                        for rh in &r.bindings {
                            let b = self.bindings.iter_mut().find(|b| b.id == rh.binding_id).unwrap();
                            b.stock_hash = rh.stock_hash.clone();
                            b.defaults = Rc::new(rh.defaults.clone());
                        }
                    }
                    let bindings = bindings.clone();
                    self.write("env", &bindings);
                }
                Plan::Unchanged { bindings } => {
                    let bindings = bindings.clone();
                    self.write("env", &bindings);
                }
                Plan::Update { environment, bindings } => {
                    row.name = environment.name.clone();
                    row.description = environment.description.clone();
                    row.config = environment.config.clone();
                    row.metadata = environment.metadata.clone();
                    row.status = "active".into();
                    let bindings = bindings.clone();
                    self.write("env", &bindings);
                }
            }
            decision
        }

        fn archive(&mut self, provider: &str, token: &str) -> bool {
            let rows: Vec<Environment> = self.row.iter().cloned().collect();
            let Some(row) = archive_target(&rows, provider) else { return false };
            let (metadata, rehashed) = archive(row, &self.bindings, token);
            let row = self.row.as_mut().unwrap();
            row.status = "archived".into();
            row.metadata = metadata;
            for rh in rehashed {
                let b = self.bindings.iter_mut().find(|b| b.id == rh.binding_id).unwrap();
                b.stock_hash = rh.stock_hash;
                b.defaults = Rc::new(rh.defaults);
            }
            true
        }
    }

    #[test]
    fn stock_hash_vector_from_the_application() {
        // The foundation's vector for a Daytona managed environment.
        let d = desired(ReconcileArgs {
            name: Some("Daytona".into()),
            provider: Some("daytona".into()),
            config: Some(r#"{"target":"us"}"#.into()),
            description: Some("Managed Daytona sandbox environment.".into()),
            ..Default::default()
        })
        .unwrap();
        let keys = metadata_keys(&d.metadata, &[]);
        assert_eq!(keys, ["managedByPaperclip", "managedKubernetesSandbox", "managedSandboxProvider"]);
        let ins = insertion(&d, &keys);
        assert_eq!(ins.bindings.stock_hash, "sha256:2c054730c82fd5f741172d425fada5832bea988ab8008a86088cc04f0d8fcc5f");
        // The Kubernetes marker is null in stock and absent from the row.
        assert_eq!(ins.metadata, json!({"managedByPaperclip":true,"managedSandboxProvider":"daytona"}));
    }

    #[test]
    fn lifecycle_added_unchanged_updated_skipped() {
        let mut w = World::new(&["c1", "c2"]);
        let d1 = want("Sandbox", "daytona", r#"{"target":"us"}"#);
        w.reconcile(&d1);
        assert_eq!(w.bindings.len(), 2);
        let again = w.reconcile(&d1);
        assert_eq!((again.action(), again.stock_status), ("unchanged", StockStatus::StockCurrent));

        let d2 = want("Sandbox", "daytona", r#"{"target":"eu"}"#);
        let upd = w.reconcile(&d2);
        assert_eq!((upd.action(), upd.stock_status), ("updated", StockStatus::StockUpdateAvailable));
        assert_eq!(w.row.as_ref().unwrap().config, json!({"target":"eu","provider":"daytona"}));
        assert!(w.bindings.iter().all(|b| b.stock_hash == upd.latest_hash));

        // An operator edits the config: the next stock change is held back.
        w.row.as_mut().unwrap().config = json!({"target":"eu","provider":"daytona","cpu":4});
        let d3 = want("Sandbox", "daytona", r#"{"target":"ap"}"#);
        let skip = w.reconcile(&d3);
        assert_eq!((skip.action(), skip.stock_status, skip.update_available()), ("skipped", StockStatus::OperatorModified, true));
        assert_eq!(w.row.as_ref().unwrap().config["cpu"], json!(4));
        assert!(w.bindings.iter().all(|b| b.stock_hash == upd.latest_hash), "baseline kept");
    }

    #[test]
    fn unrelated_metadata_and_env_vars_do_not_count() {
        let mut w = World::new(&["c1"]);
        let d = want("Sandbox", "daytona", "{}");
        w.reconcile(&d);
        let row = w.row.as_mut().unwrap();
        row.metadata.as_object_mut().unwrap().insert("owner".into(), json!("ops"));
        let again = w.reconcile(&d);
        assert_eq!(again.stock_status, StockStatus::StockCurrent);
    }

    #[test]
    fn provider_outage_archives_then_reactivates_keeping_operator_fields() {
        let mut w = World::new(&["c1"]);
        let d = want("Sandbox", "daytona", r#"{"target":"us"}"#);
        w.reconcile(&d);
        w.row.as_mut().unwrap().description = Some("operator text".into());
        assert!(!w.archive("kubernetes", "t0"), "other provider untouched");
        assert!(w.archive("daytona", "t1"));
        assert!(!w.archive("daytona", "t2"), "already archived");
        let b = &w.bindings[0];
        assert_eq!(b.defaults["status"], json!("archived"));
        assert_eq!(b.defaults[ARCHIVE_TOKEN_KEY], json!("t1"));
        let mut without_token = (*b.defaults).clone();
        without_token.as_object_mut().unwrap().remove(ARCHIVE_TOKEN_KEY);
        assert_eq!(b.stock_hash, js::stock_hash(&without_token), "token excluded from the hash");

        let back = w.reconcile(&d);
        assert_eq!(back.action(), "skipped");
        let Plan::Skip { reactivation: Some(r), .. } = &back.plan else { panic!("{back:?}") };
        assert_eq!(r.bindings.len(), 1);
        let row = w.row.as_ref().unwrap();
        assert_eq!(row.status, "active");
        assert_eq!(row.description.as_deref(), Some("operator text"));
        assert!(member(&row.metadata, ARCHIVE_TOKEN_KEY).is_none());
        assert_eq!(w.bindings[0].defaults["status"], json!("active"));
    }

    #[test]
    fn archive_of_a_stock_row_then_reconcile_updates_it_back() {
        let mut w = World::new(&["c1"]);
        let d = want("Sandbox", "daytona", "{}");
        w.reconcile(&d);
        assert!(w.archive("daytona", "t1"));
        // Row = archived stock = binding: stock_update_available → updated, token stripped.
        let back = w.reconcile(&d);
        assert_eq!((back.action(), back.stock_status), ("updated", StockStatus::StockUpdateAvailable));
        let row = w.row.as_ref().unwrap();
        assert_eq!(row.status, "active");
        assert!(member(&row.metadata, ARCHIVE_TOKEN_KEY).is_none());
    }

    #[test]
    fn operator_archive_by_hand_stays_archived() {
        let mut w = World::new(&["c1"]);
        let d = want("Sandbox", "daytona", "{}");
        w.reconcile(&d);
        w.row.as_mut().unwrap().status = "archived".into();
        let r = w.reconcile(&d);
        assert_eq!((r.action(), r.stock_status), ("skipped", StockStatus::OperatorModified));
        assert_eq!(w.row.as_ref().unwrap().status, "archived");
        assert!(!w.archive("daytona", "t1"), "only active rows are archived");
    }

    #[test]
    fn reaffirmed_archive_is_not_bypassed() {
        let mut w = World::new(&["c1"]);
        let d = want("Sandbox", "daytona", "{}");
        w.reconcile(&d);
        assert!(w.archive("daytona", "t1"));
        // Someone re-archives: the token in the row is replaced.
        let row = w.row.as_mut().unwrap();
        row.metadata.as_object_mut().unwrap().insert(ARCHIVE_TOKEN_KEY.into(), json!("by-hand"));
        let mut pfm = d.clone();
        pfm.platform_fully_managed = true;
        let r = w.reconcile(&pfm);
        assert_eq!((r.action(), r.stock_status), ("skipped", StockStatus::OperatorModified));
        assert_eq!(w.row.as_ref().unwrap().status, "archived");
    }

    #[test]
    fn platform_fully_managed_needs_a_binding_for_this_row() {
        let d = want("Sandbox", "daytona", "{}");
        let mut pfm = d.clone();
        pfm.platform_fully_managed = true;
        let row = Environment {
            id: "tenant".into(),
            name: "Sandbox".into(),
            description: None,
            status: "active".into(),
            config: json!({"mine":true}),
            metadata: Value::Null,
        };
        let keys = metadata_keys(&pfm.metadata, &[]);
        let r = decide(&row, Some("tenant"), &pfm, &[], &keys);
        assert_eq!(r.action(), "skipped");
        // Without a baseline, insert-missing records the desired stock.
        let Plan::Skip { bindings, reactivation: None } = &r.plan else { panic!() };
        assert_eq!(bindings.stock_hash, r.latest_hash);

        let binding = Binding {
            id: "b".into(),
            company_id: "c1".into(),
            resource_id: "tenant".into(),
            stock_version: None,
            stock_hash: "sha256:older".into(),
            defaults: json!({}).into(),
        };
        let r = decide(&row, Some("tenant"), &pfm, std::slice::from_ref(&binding), &keys);
        assert_eq!((r.action(), r.stock_status), ("updated", StockStatus::StockUpdateAvailable));
        let r = decide(&row, Some("tenant"), &d, &[binding], &keys);
        assert_eq!(r.action(), "skipped");
    }

    #[test]
    fn a_name_held_by_another_row_is_not_taken() {
        let d = want("Wanted", "daytona", "{}");
        let row = Environment {
            id: "managed".into(),
            name: "Old".into(),
            description: None,
            status: "active".into(),
            config: json!({}),
            metadata: json!({"managedByPaperclip": true}),
        };
        let keys = metadata_keys(&d.metadata, &[]);
        let r = decide(&row, Some("someone-else"), &d, &[], &keys);
        // No binding: operator_modified, skipped; with the bypass it would keep "Old".
        assert_eq!(r.action(), "skipped");
        let mut pfm = d.clone();
        pfm.platform_fully_managed = true;
        let b = Binding {
            id: "b".into(),
            company_id: "c".into(),
            resource_id: "managed".into(),
            stock_version: None,
            stock_hash: "x".into(),
            defaults: json!({}).into(),
        };
        let r = decide(&row, Some("someone-else"), &pfm, &[b], &keys);
        let Plan::Update { environment, .. } = r.plan else { panic!() };
        assert_eq!(environment.name, "Old");
    }

    #[test]
    fn binding_keys_join_the_key_set_and_are_removed_on_update() {
        let b = Binding {
            id: "b".into(),
            company_id: "c".into(),
            resource_id: "e".into(),
            stock_version: None,
            stock_hash: "h".into(),
            defaults: json!({"metadata": {"legacyKey": 1, "Zeta": 2}}).into(),
        };
        let d = want("S", "p", "{}");
        let keys = metadata_keys(&d.metadata, &[b]);
        assert_eq!(keys, ["legacyKey", "managedByPaperclip", "managedKubernetesSandbox", "managedSandboxProvider", "Zeta"]);
        let merged = merge_metadata(&json!({"legacyKey": 1, "other": 3}), &d.metadata, &keys);
        assert_eq!(Value::Object(merged), json!({"other":3,"managedByPaperclip":true,"managedSandboxProvider":"p"}));
    }

    #[test]
    fn drift_reads_each_binding_against_the_row_as_it_is() {
        let mut w = World::new(&["c1", "c2"]);
        let d = want("Sandbox", "daytona", r#"{"target":"us"}"#);
        let added = w.reconcile(&d);
        let row = |w: &World| vec![w.row.clone().unwrap()];
        let report = |w: &World, rows: &[Environment], newest: &[bool]| drift(&w.bindings, newest, rows);
        let rows = report(&w, &row(&w), &[false, true]);
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(r.stock_status, StockStatus::StockCurrent);
            assert_eq!(r.current_hash.as_deref(), Some(added.latest_hash.as_str()), "the reconciler's own hash");
            assert_eq!((r.environment_id.as_str(), r.binding_stock_hash.as_str()), ("env", added.latest_hash.as_str()));
        }
        assert_eq!(rows.iter().map(|r| r.company_id.as_str()).collect::<Vec<_>>(), ["c1", "c2"]);

        // c2's binding records a newer stock than c1's and the row is still at c1's.
        w.bindings[1].stock_hash = "sha256:newer".into();
        let rows = report(&w, &row(&w), &[false, true]);
        assert_eq!(rows[0].stock_status, StockStatus::StockUpdateAvailable);
        assert_eq!(rows[1].stock_status, StockStatus::OperatorModified, "the row matches neither of c2's hashes");
        // The newest binding decides "latest": with c1's, the row is current for both.
        let rows = report(&w, &row(&w), &[true, false]);
        assert_eq!(rows[0].stock_status, StockStatus::StockCurrent);
        assert_eq!(rows[1].stock_status, StockStatus::StockCurrent);

        w.row.as_mut().unwrap().config = json!({"target":"eu"});
        let rows = report(&w, &row(&w), &[true, false]);
        assert_eq!(rows[0].stock_status, StockStatus::OperatorModified);
        assert_eq!(report(&w, &[], &[true, false])[0].stock_status, StockStatus::Missing);
        assert_eq!(report(&w, &[], &[true, false])[0].current_hash, None);
    }

    #[test]
    fn drift_key_set_takes_every_bindings_metadata_keys() {
        let mut w = World::new(&["c1"]);
        let d = want("Sandbox", "daytona", "{}");
        w.reconcile(&d);
        w.row.as_mut().unwrap().metadata.as_object_mut().unwrap().insert("owner".into(), json!("ops"));
        let row = vec![w.row.clone().unwrap()];
        assert_eq!(drift(&w.bindings, &[true], &row)[0].stock_status, StockStatus::StockCurrent, "not a managed key");
        // A binding (of any company) that recorded `owner` in its stock makes it a managed key.
        let mut other = w.bindings[0].clone();
        other.company_id = "c9".into();
        other.defaults = json!({"metadata": {"owner": null}}).into();
        let bindings = vec![w.bindings[0].clone(), other];
        assert_eq!(drift(&bindings, &[true, false], &row)[0].stock_status, StockStatus::OperatorModified);
    }

    #[test]
    fn activity_names() {
        assert_eq!(activity_action("added", false), Some("environment.managed_stock_added"));
        assert_eq!(activity_action("unchanged", false), None);
        assert_eq!(activity_action("unchanged", true), Some("environment.managed_stock_tracking_initialized"));
        assert_eq!(activity_action("skipped", false), Some("environment.managed_stock_skipped"));
    }

    #[test]
    fn insert_missing_skips_companies_with_any_binding() {
        let b = Binding {
            id: "b".into(),
            company_id: "c1".into(),
            resource_id: "elsewhere".into(),
            stock_version: None,
            stock_hash: "h".into(),
            defaults: json!({}).into(),
        };
        let companies = vec!["c1".to_string(), "c2".to_string()];
        assert_eq!(binding_targets(&companies, std::slice::from_ref(&b), false), ["c2"]);
        assert_eq!(binding_targets(&companies, &[b], true), ["c1", "c2"]);
    }

    proptest! {
        /// After any reconcile that writes the stock, the next one is unchanged.
        #[test]
        fn reconcile_converges(target in "[a-z]{0,6}", n in proptest::num::i64::ANY, extra in "[a-zA-Z_]{1,8}") {
            let mut w = World::new(&["c1", "c2"]);
            let d = desired(ReconcileArgs {
                name: Some("S".into()),
                provider: Some("p".into()),
                config: Some(json!({"target": target, "n": n}).to_string()),
                extra_metadata: Some(json!({ extra.clone(): n }).to_string()),
                ..Default::default()
            }).unwrap();
            w.reconcile(&d);
            let again = w.reconcile(&d);
            prop_assert_eq!(again.action(), "unchanged");
            prop_assert_eq!(again.current_hash, again.latest_hash);
        }
    }
}

#[cfg(test)]
mod javascript_parity {
    //! The Rust core against an independent JavaScript statement of the same
    //! rules (`testdata/node_parity.js`), on generated inputs with the awkward parts:
    //! locale-ordered keys, JavaScript number printing, present-null vs absent,
    //! binding-only metadata keys. Skipped (with a note) when `node` is missing.

    use super::*;
    use crate::managed::input::{desired, ReconcileArgs};
    use serde_json::Value;
    use std::io::Write;
    use std::process::{Command, Stdio};

    const KEYS: &[&str] = &[
        "a", "B", "b", "A", "_x", "Zeta", "é", "e", "10", "2", "ß", "ss", "tier", "managedKubernetesSandbox",
        "managedByPaperclip", "managedSandboxProvider", "_paperclipManagedArchiveToken",
    ];
    const VALUES: &[&str] = &[
        "1", "1.0", "1e21", "1.5e-7", "-0", "0.1", "9007199254740993", "123456789012345678901234567890", "\"s\"",
        "\"é\\u00e9\"", "true", "false", "null", "[1,\"x\",{\"b\":1,\"a\":2}]", "{\"n\":{\"z\":1,\"a\":2}}",
    ];

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as usize
        }

        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.next() % from.len()]
        }

        /// A JSON object as text, so number spellings like `1.0` and `-0` survive.
        fn object(&mut self, max: usize) -> String {
            let n = self.next() % (max + 1);
            let members: Vec<String> =
                (0..n).map(|_| format!("{}:{}", Value::String(self.pick(KEYS).into()), self.pick(VALUES))).collect();
            format!("{{{}}}", members.join(","))
        }
    }

    fn node_available() -> bool {
        Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
    }

    #[test]
    fn core_agrees_with_javascript_on_generated_cases() {
        if !node_available() {
            eprintln!("node not found: skipping the JavaScript parity check");
            return;
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut cases = Vec::new();
        let mut texts = Vec::new();
        for i in 0..300 {
            let config = rng.object(4);
            let extra = rng.object(3);
            let row_config = rng.object(3);
            let row_metadata = if i % 7 == 0 { "null".to_string() } else { rng.object(5) };
            let binding_metadata: Vec<String> = (0..rng.next() % 3).map(|_| rng.object(3)).collect();
            let description = if i % 3 == 0 { "null".to_string() } else { Value::String(format!("d{}", rng.next() % 3)).to_string() };
            let status = ["\"active\"", "\"archived\""][rng.next() % 2];
            texts.push((config.clone(), extra.clone(), description.clone()));
            cases.push(format!(
                r#"{{"input":{{"name":"S","provider":"p","config":{config},"description":{description},"extraMetadata":{extra}}},
                    "row":{{"name":"S","description":{description},"config":{row_config},"metadata":{row_metadata},"status":{status}}},
                    "bindings":[{}]}}"#,
                binding_metadata.iter().map(|m| format!(r#"{{"defaultsJson":{{"metadata":{m}}}}}"#)).collect::<Vec<_>>().join(",")
            ));
        }
        let input = format!("[{}]", cases.join(","));

        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/src/managed/testdata/node_parity.js");
        let mut child = Command::new("node").arg(script).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "node failed");
        let expected: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();

        let parsed: Vec<Value> = js::parse(&input).unwrap().as_array().unwrap().clone();
        for (i, (case, want)) in parsed.iter().zip(&expected).enumerate() {
            let (config, extra, _) = &texts[i];
            let description = case["input"]["description"].as_str().map(str::to_owned);
            let d = desired(ReconcileArgs {
                name: Some("S".into()),
                provider: Some("p".into()),
                config: Some(config.clone()),
                description,
                extra_metadata: Some(extra.clone()),
                ..Default::default()
            })
            .unwrap();
            let bindings: Vec<Binding> = case["bindings"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(n, b)| Binding {
                    id: format!("b{n}"),
                    company_id: format!("c{n}"),
                    resource_id: "other".into(),
                    stock_version: None,
                    stock_hash: "h".into(),
                    defaults: b["defaultsJson"].clone().into(),
                })
                .collect();
            let row = &case["row"];
            let env = Environment {
                id: "env".into(),
                name: "S".into(),
                description: row["description"].as_str().map(str::to_owned),
                status: row["status"].as_str().unwrap().into(),
                config: row["config"].clone(),
                metadata: row["metadata"].clone(),
            };
            let keys = metadata_keys(&d.metadata, &bindings);
            assert_eq!(serde_json::to_value(&keys).unwrap(), want["keys"], "case {i}: keys");
            let decision = decide(&env, None, &d, &bindings, &keys);
            assert_eq!(decision.latest_hash, want["latest"].as_str().unwrap(), "case {i}: latest\n{}", cases[i]);
            assert_eq!(decision.current_hash, want["current"].as_str().unwrap(), "case {i}: current\n{}", cases[i]);
            let merged = Value::Object(merge_metadata(&env.metadata, &d.metadata, &keys));
            assert_eq!(merged, js::parse(&want["merged"].to_string()).unwrap(), "case {i}: merged");
        }
    }
}
