use super::*;
use crate::stock::managed::input::{desired, ReconcileArgs};
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
                defaults: w.defaults.clone(),
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
                        b.defaults = rh.defaults.clone();
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
            b.defaults = rh.defaults;
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
    let mut without_token = b.defaults.clone();
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
        defaults: json!({}),
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
        defaults: json!({}),
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
        defaults: json!({"metadata": {"legacyKey": 1, "Zeta": 2}}),
    };
    let d = want("S", "p", "{}");
    let keys = metadata_keys(&d.metadata, &[b]);
    assert_eq!(keys, ["legacyKey", "managedByPaperclip", "managedKubernetesSandbox", "managedSandboxProvider", "Zeta"]);
    let merged = merge_metadata(&json!({"legacyKey": 1, "other": 3}), &d.metadata, &keys);
    assert_eq!(Value::Object(merged), json!({"other":3,"managedByPaperclip":true,"managedSandboxProvider":"p"}));
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
        defaults: json!({}),
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
