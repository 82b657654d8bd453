//! The pure core of the recorder: Daytona's `GET /sandbox` answer read
//! strictly, a walk's pages checked (cursors, duplicates, page bound, the
//! organization), the label scope, the mapping to the inventory
//! `record_inventory_snapshot` takes, the routing-domain coverage of the
//! ledger, and the retry waits. No I/O here.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

/// The Daytona API release this program was written against: its
/// `ListSandboxesResponse` and `SandboxListItem` (openapi.yaml of v0.190.0).
pub const API_RELEASE: &str = "Daytona v0.190.0 (GET /sandbox: {items, nextCursor})";

/// One listed sandbox: only what the inventory needs. A `SandboxListItem`
/// has many more fields (and the pre-v0.180 `Sandbox` its environment
/// variables): they are never read nor kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub id: String,
    pub organization_id: String,
    pub labels: BTreeMap<String, String>,
    /// `createdAt` (optional in the spec, fact b3), as an instant; None when missing or not a date-time.
    pub created_at: Option<crate::ranges::Instant>,
}

/// One answer of `GET /sandbox`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub items: Vec<Sandbox>,
    /// `nextCursor`: None when null (the last page).
    pub next_cursor: Option<String>,
    /// The plain array Daytona answered before v0.180 (no paging).
    pub plain_array: bool,
}

/// The shape the program relies on was not there: fail closed, naming the
/// release it was written against (the hosted API may have drifted).
fn shape(what: impl std::fmt::Display) -> String {
    format!("the answer is not the listing of {API_RELEASE}: {what}")
}

/// The documented page, read without building the fields the recorder does
/// not use (a page of 200 items in a fraction of the time of a JSON tree).
#[derive(Deserialize)]
struct TypedPage {
    items: Vec<TypedItem>,
    /// None: the member is missing; Some(None): null.
    #[serde(rename = "nextCursor", default, deserialize_with = "present")]
    next_cursor: Option<Option<String>>,
}

#[derive(Deserialize)]
struct TypedItem {
    id: String,
    #[serde(rename = "organizationId")]
    organization_id: String,
    labels: BTreeMap<String, String>,
    #[serde(rename = "createdAt", default)]
    created_at: Option<String>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Read one answer. `first`: the request carried no cursor (only then is the
/// old plain array accepted, as the listing of a server without paging).
/// The documented page is read typed; anything else (or a typed read that
/// fails) is read again as a JSON tree, which names what is wrong.
pub fn parse_page(body: &str, first: bool) -> Result<Page, String> {
    if let Ok(TypedPage { items, next_cursor: Some(next_cursor) }) = serde_json::from_str::<TypedPage>(body) {
        if items.iter().all(|i| !i.id.is_empty()) {
            let items = items
                .into_iter()
                .map(|i| Sandbox {
                    id: i.id,
                    organization_id: i.organization_id,
                    labels: i.labels,
                    created_at: i.created_at.as_deref().and_then(crate::ranges::parse),
                })
                .collect();
            return Ok(Page { items, next_cursor, plain_array: false });
        }
    }
    parse_tree(body, first)
}

fn parse_tree(body: &str, first: bool) -> Result<Page, String> {
    let value: Value = serde_json::from_str(body).map_err(|e| shape(format_args!("not JSON ({e})")))?;
    match value {
        Value::Array(items) if first => Ok(Page { items: parse_items(&items)?, next_cursor: None, plain_array: true }),
        Value::Array(_) => Err(shape("a plain array answered a request with a cursor")),
        Value::Object(object) => {
            let items = match object.get("items") {
                Some(Value::Array(items)) => parse_items(items)?,
                Some(_) => return Err(shape("\"items\" is not an array")),
                None => return Err(shape("no \"items\"")),
            };
            let next_cursor = match object.get("nextCursor") {
                Some(Value::Null) => None,
                Some(Value::String(cursor)) => Some(cursor.clone()),
                Some(_) => return Err(shape("\"nextCursor\" is neither a string nor null")),
                None => return Err(shape("no \"nextCursor\"")),
            };
            Ok(Page { items, next_cursor, plain_array: false })
        }
        _ => Err(shape("neither an object nor an array")),
    }
}

fn parse_items(items: &[Value]) -> Result<Vec<Sandbox>, String> {
    items.iter().enumerate().map(|(i, item)| parse_item(item).map_err(|e| shape(format_args!("item {i}: {e}")))).collect()
}

fn parse_item(item: &Value) -> Result<Sandbox, String> {
    let object = item.as_object().ok_or("not an object")?;
    let id = match object.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        Some(Value::String(_)) => return Err("\"id\" is empty".into()),
        _ => return Err("\"id\" is not a string".into()),
    };
    let organization_id = match object.get("organizationId") {
        Some(Value::String(org)) => org.clone(),
        _ => return Err(format!("sandbox {id}: \"organizationId\" is not a string")),
    };
    let labels = match object.get("labels") {
        Some(Value::Object(labels)) => labels
            .iter()
            .map(|(k, v)| match v {
                Value::String(v) => Ok((k.clone(), v.clone())),
                _ => Err(format!("sandbox {id}: label {k:?} is not a string")),
            })
            .collect::<Result<BTreeMap<_, _>, _>>()?,
        _ => return Err(format!("sandbox {id}: \"labels\" is not an object")),
    };
    let created_at = object.get("createdAt").and_then(Value::as_str).and_then(crate::ranges::parse);
    Ok(Sandbox { id, organization_id, labels, created_at })
}

/// One organization's walk over its pages, checked as it goes: every page
/// arrived and parsed, no id twice, no empty or repeated cursor, at most
/// `max_pages` pages, every item of the organization listed. It keeps each
/// sandbox as its inventory item only (not its labels).
#[derive(Debug)]
pub struct Walk {
    organization: String,
    max_pages: usize,
    operation_label: String,
    routing: RoutingDomain,
    /// The label scope every item must carry (Daytona's filter, checked again).
    scope: BTreeMap<String, String>,
    pages: usize,
    ids: HashSet<String>,
    cursors: HashSet<String>,
    items: Vec<Item>,
    /// Each item's `createdAt` (the parallel listing places items by it).
    created: Vec<Option<crate::ranges::Instant>>,
    /// Items created after this are left to the next range: the walk ends at the first (a range's
    /// `createdAtBefore` applied to a walk that continues an unfiltered cursor).
    until: Option<crate::ranges::Instant>,
    /// The walk reached an item past `until`.
    passed: bool,
}

/// What comes after a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Ask for the page after this cursor.
    Page(String),
    /// The walk ended on a null cursor.
    Done,
}

impl Walk {
    pub fn new(organization: &str, max_pages: usize, operation_label: &str, routing: RoutingDomain) -> Self {
        Walk {
            organization: organization.to_owned(),
            max_pages,
            operation_label: operation_label.to_owned(),
            routing,
            scope: BTreeMap::new(),
            pages: 0,
            ids: HashSet::new(),
            cursors: HashSet::new(),
            items: Vec::new(),
            created: Vec::new(),
            until: None,
            passed: false,
        }
    }

    /// End the walk at the first item created after `until` (it and the rest of its page are left out).
    pub fn until(&mut self, until: crate::ranges::Instant) {
        self.until = Some(until);
    }

    /// The `createdAt` of the last item taken (None: none yet, or it had none).
    pub fn last_created(&self) -> Option<crate::ranges::Instant> {
        self.created.last().copied().flatten()
    }

    /// Check every item against the label scope too: a server (or a proxy,
    /// or a later API) that ignores the `labels` filter must not get a foreign
    /// listing recorded.
    pub fn scoped(mut self, scope: &BTreeMap<String, String>) -> Self {
        self.scope = scope.clone();
        self
    }

    pub fn pages(&self) -> usize {
        self.pages
    }

    pub fn listed(&self) -> usize {
        self.items.len()
    }

    /// Take the next page; an error ends the walk as a failure.
    pub fn take(&mut self, page: Page) -> Result<Next, String> {
        self.pages += 1;
        let number = self.pages;
        for sandbox in page.items {
            if sandbox.organization_id != self.organization {
                return Err(format!(
                    "page {number}: sandbox {} belongs to organization {:?}, not {:?}: the credentials list another \
                     organization than the one configured",
                    sandbox.id, sandbox.organization_id, self.organization
                ));
            }
            if let Some(reason) = outside_scope(&sandbox, &self.scope) {
                return Err(format!("page {number}: sandbox {} is outside the label scope: {reason}", sandbox.id));
            }
            if let (Some(until), Some(created)) = (self.until, sandbox.created_at) {
                if created > until {
                    self.passed = true;
                    break;
                }
            }
            if !self.ids.insert(sandbox.id.clone()) {
                return Err(format!("page {number}: sandbox {} was already listed (the cursor walked back)", sandbox.id));
            }
            self.items.push(item(&sandbox, &self.operation_label, self.routing));
            self.created.push(sandbox.created_at);
        }
        match page.next_cursor {
            None => Ok(Next::Done),
            Some(_) if self.passed => Ok(Next::Done),
            Some(cursor) if cursor.is_empty() => Err(format!("page {number}: an empty nextCursor")),
            Some(cursor) if !self.cursors.insert(cursor.clone()) => {
                Err(format!("page {number}: nextCursor repeats an earlier one (the walk would loop)"))
            }
            Some(_) if number >= self.max_pages => {
                Err(format!("more than {} pages (--max-pages): the listing did not end", self.max_pages))
            }
            Some(cursor) => Ok(Next::Page(cursor)),
        }
    }

    pub fn finish(self) -> Vec<Item> {
        self.items
    }

    /// The items with their `createdAt` (for the union of a parallel listing's ranges).
    pub fn finish_placed(self) -> (Vec<Item>, Vec<Option<crate::ranges::Instant>>) {
        (self.items, self.created)
    }
}

/// Why `sandbox` is outside `scope` (None: it carries every label with its value).
pub fn outside_scope(sandbox: &Sandbox, scope: &BTreeMap<String, String>) -> Option<String> {
    scope.iter().find_map(|(key, value)| match sandbox.labels.get(key) {
        None => Some(format!("it has no label {key:?} (the scope asks for {value:?})")),
        Some(found) if found != value => Some(format!("its label {key:?} is {found:?}, not {value:?}")),
        Some(_) => None,
    })
}

/// The label scope: Daytona's `labels` parameter, a JSON object of strings.
pub fn label_scope(text: &str) -> Result<BTreeMap<String, String>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(object) = value else { return Err("not a JSON object".into()) };
    object
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(v) => Ok((k, v)),
            other => Err(format!("the value of {k:?} is not a string ({other})")),
        })
        .collect()
}

/// The `labels` query value, as the SDKs send it (`JSON.stringify`).
pub fn labels_parameter(scope: &BTreeMap<String, String>) -> String {
    serde_json::to_string(scope).expect("a map of strings serializes")
}

/// How each item's routing domain is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoutingDomain {
    /// The sandbox's `organizationId` (the ledger's operations carry it).
    Organization,
    /// None (the ledger's operations carry no routing domain).
    None,
}

/// One entry of the inventory: exactly what is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    #[serde(rename = "sandboxId")]
    pub sandbox_id: String,
    #[serde(rename = "operationKey")]
    pub operation_key: Option<String>,
    #[serde(rename = "routingDomain")]
    pub routing_domain: Option<String>,
}

/// A listed sandbox as the inventory holds it.
pub fn item(sandbox: &Sandbox, operation_label: &str, routing: RoutingDomain) -> Item {
    Item {
        sandbox_id: sandbox.id.clone(),
        operation_key: sandbox.labels.get(operation_label).cloned(),
        routing_domain: match routing {
            RoutingDomain::Organization => Some(sandbox.organization_id.clone()),
            RoutingDomain::None => None,
        },
    }
}

/// The routing domains of the ledger's live operations (of the environment
/// recorded) that the listing does not cover: with `Organization`, every
/// non-NULL one must be a configured organization and none may be NULL; with
/// `None`, all must be NULL. The snapshot is the whole fleet to the
/// reconcile, so an organization left out would look absent.
pub fn uncovered(ledger: &[Option<String>], organizations: &[String], routing: RoutingDomain) -> Result<(), String> {
    let listed: BTreeSet<&str> = organizations.iter().map(String::as_str).collect();
    match routing {
        RoutingDomain::Organization => {
            if ledger.iter().any(Option::is_none) {
                return Err("the ledger holds live operations without a routing domain: list with --routing-domain none \
                            if its operations never carry one"
                    .into());
            }
            let missing: BTreeSet<&str> =
                ledger.iter().flatten().map(String::as_str).filter(|d| !listed.contains(d)).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "the ledger holds live operations in routing domain(s) {} that no configured organization lists: \
                     their sandboxes would all look absent; add each organization (--organization)",
                    missing.iter().map(|d| format!("{d:?}")).collect::<Vec<_>>().join(", ")
                ));
            }
            Ok(())
        }
        RoutingDomain::None => {
            let named: BTreeSet<&str> = ledger.iter().flatten().map(String::as_str).collect();
            if named.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "--routing-domain none, but the ledger's live operations carry routing domain(s) {}: use \
                     --routing-domain organization",
                    named.iter().map(|d| format!("{d:?}")).collect::<Vec<_>>().join(", ")
                ))
            }
        }
    }
}

/// How long to wait before retry `attempt` (1-based): the server's
/// `Retry-After-<throttler>` (or plain `Retry-After`) seconds when it sent
/// any (the longest), else `base` doubled per attempt; never more than `cap`.
/// None: the server asks for longer than `cap` (give up rather than wait).
pub fn retry_wait(attempt: u32, base: Duration, cap: Duration, retry_after: &[&str]) -> Option<Duration> {
    let asked = retry_after.iter().filter_map(|v| v.trim().parse::<f64>().ok()).filter(|s| s.is_finite() && *s >= 0.0).fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    match asked {
        Some(seconds) => {
            let wait = Duration::from_secs_f64(seconds.min(1e6));
            (wait <= cap).then_some(wait)
        }
        None => Some(base.saturating_mul(1u32 << (attempt.saturating_sub(1)).min(16)).min(cap)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, org: &str, labels: &[(&str, &str)]) -> Value {
        let labels: serde_json::Map<String, Value> = labels.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect();
        serde_json::json!({"id": id, "organizationId": org, "labels": labels, "state": "started", "env": {"SECRET": "x"}})
    }

    #[test]
    fn a_page_of_the_documented_shape_reads_and_ignores_other_fields() {
        let body = serde_json::json!({"items": [item("a", "o", &[("k", "v")])], "nextCursor": "eyJ+/=", "total": 3}).to_string();
        let page = parse_page(&body, false).unwrap();
        assert_eq!(page.items, vec![Sandbox { id: "a".into(), organization_id: "o".into(), labels: [("k".into(), "v".into())].into(), created_at: None }]);
        assert_eq!(page.next_cursor.as_deref(), Some("eyJ+/="));
        let last = parse_page(r#"{"items": [], "nextCursor": null}"#, true).unwrap();
        assert_eq!(last, Page { items: vec![], next_cursor: None, plain_array: false });
    }

    #[test]
    fn the_typed_read_and_the_tree_agree() {
        let body = serde_json::json!({"items": [item("a", "o", &[("k", "v")]), item("b", "o", &[])], "nextCursor": null}).to_string();
        assert_eq!(parse_page(&body, false), parse_tree(&body, false));
        let body = serde_json::json!({"items": [item("a", "o", &[])], "nextCursor": "c"}).to_string();
        assert_eq!(parse_page(&body, true), parse_tree(&body, true));
    }

    #[test]
    fn the_old_plain_array_is_a_listing_only_for_the_first_request() {
        let body = serde_json::json!([item("a", "o", &[])]).to_string();
        let page = parse_page(&body, true).unwrap();
        assert!(page.plain_array);
        assert_eq!(page.next_cursor, None);
        assert!(parse_page(&body, false).unwrap_err().contains("plain array"));
    }

    #[test]
    fn any_other_shape_fails_naming_the_release() {
        for (body, why) in [
            ("<html>", "not JSON"),
            ("{}", "no \"items\""),
            (r#"{"items": {}, "nextCursor": null}"#, "\"items\" is not an array"),
            (r#"{"items": []}"#, "no \"nextCursor\""),
            (r#"{"items": [], "nextCursor": 5}"#, "neither a string nor null"),
            (r#"{"items": [1], "nextCursor": null}"#, "item 0: not an object"),
            (r#"{"items": [{"id": "", "organizationId": "o", "labels": {}}], "nextCursor": null}"#, "\"id\" is empty"),
            (r#"{"items": [{"id": 7, "organizationId": "o", "labels": {}}], "nextCursor": null}"#, "\"id\" is not a string"),
            (r#"{"items": [{"id": "a", "labels": {}}], "nextCursor": null}"#, "\"organizationId\" is not a string"),
            (r#"{"items": [{"id": "a", "organizationId": "o"}], "nextCursor": null}"#, "\"labels\" is not an object"),
            (r#"{"items": [{"id": "a", "organizationId": "o", "labels": {"k": 1}}], "nextCursor": null}"#, "label \"k\" is not a string"),
            ("17", "neither an object nor an array"),
        ] {
            let e = parse_page(body, true).unwrap_err();
            assert!(e.contains(why) && e.contains(API_RELEASE), "{body}: {e}");
        }
    }

    fn page(ids: &[&str], next: Option<&str>) -> Page {
        Page {
            items: ids.iter().map(|id| Sandbox { id: id.to_string(), organization_id: "o".into(), labels: BTreeMap::new(), created_at: None }).collect(),
            next_cursor: next.map(String::from),
            plain_array: false,
        }
    }

    #[test]
    fn a_walk_ends_on_null_and_refuses_what_a_whole_listing_cannot_show() {
        let mut walk = Walk::new("o", 10, "op", RoutingDomain::Organization);
        assert_eq!(walk.take(page(&["a", "b"], Some("c1"))), Ok(Next::Page("c1".into())));
        assert_eq!(walk.take(page(&["c"], None)), Ok(Next::Done));
        assert_eq!(walk.finish().len(), 3);

        let mut twice = Walk::new("o", 10, "op", RoutingDomain::Organization);
        twice.take(page(&["a"], Some("c1"))).unwrap();
        assert!(twice.take(page(&["a"], None)).unwrap_err().contains("sandbox a was already listed"));

        let mut looping = Walk::new("o", 10, "op", RoutingDomain::Organization);
        looping.take(page(&["a"], Some("c1"))).unwrap();
        assert!(looping.take(page(&["b"], Some("c1"))).unwrap_err().contains("repeats"));

        assert!(Walk::new("o", 10, "op", RoutingDomain::Organization).take(page(&["a"], Some(""))).unwrap_err().contains("empty nextCursor"));

        let mut bounded = Walk::new("o", 2, "op", RoutingDomain::Organization);
        bounded.take(page(&["a"], Some("c1"))).unwrap();
        assert!(bounded.take(page(&["b"], Some("c2"))).unwrap_err().contains("--max-pages"));

        let scope: BTreeMap<String, String> = [("app".to_string(), "x".to_string())].into();
        let labelled = |id: &str, labels: &[(&str, &str)]| Sandbox {
            id: id.into(),
            organization_id: "o".into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            created_at: None,
        };
        let mut scoped = Walk::new("o", 10, "op", RoutingDomain::Organization).scoped(&scope);
        let outside = Page { items: vec![labelled("a", &[("app", "x")]), labelled("b", &[("app", "y")])], next_cursor: None, plain_array: false };
        assert_eq!(scoped.take(outside).unwrap_err(), r#"page 1: sandbox b is outside the label scope: its label "app" is "y", not "x""#);
        assert_eq!(outside_scope(&labelled("c", &[]), &scope).as_deref(), Some(r#"it has no label "app" (the scope asks for "x")"#));
        assert_eq!(outside_scope(&labelled("d", &[("app", "x"), ("more", "1")]), &scope), None);
        let mut foreign = Walk::new("other", 10, "op", RoutingDomain::Organization);
        assert!(foreign.take(page(&["a"], None)).unwrap_err().contains("belongs to organization \"o\", not \"other\""));
    }

    #[test]
    fn the_scope_is_a_json_object_of_strings() {
        let scope = label_scope(r#"{"team": "x", "app": "runtime"}"#).unwrap();
        assert_eq!(labels_parameter(&scope), r#"{"app":"runtime","team":"x"}"#);
        assert!(label_scope("{}").unwrap().is_empty());
        assert!(label_scope("[1]").unwrap_err().contains("not a JSON object"));
        assert!(label_scope(r#"{"a": 1}"#).unwrap_err().contains("\"a\" is not a string"));
        assert!(label_scope("team=x").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn the_inventory_maps_label_and_organization() {
        let sandboxes = vec![
            Sandbox { id: "a".into(), organization_id: "org-1".into(), labels: [("op".into(), "tok-a".into())].into(), created_at: None },
            Sandbox { id: "b".into(), organization_id: "org-1".into(), labels: BTreeMap::new(), created_at: None },
        ];
        let items: Vec<Item> = sandboxes.iter().map(|s| super::item(s, "op", RoutingDomain::Organization)).collect();
        assert_eq!(
            serde_json::to_string(&items).unwrap(),
            r#"[{"sandboxId":"a","operationKey":"tok-a","routingDomain":"org-1"},{"sandboxId":"b","operationKey":null,"routingDomain":"org-1"}]"#
        );
        assert_eq!(super::item(&sandboxes[0], "op", RoutingDomain::None).routing_domain, None);
    }

    #[test]
    fn the_listing_must_cover_the_ledgers_routing_domains() {
        let orgs = vec!["org-1".to_string(), "org-2".to_string()];
        let d = |v: &str| Some(v.to_string());
        assert!(uncovered(&[d("org-1"), d("org-2")], &orgs, RoutingDomain::Organization).is_ok());
        assert!(uncovered(&[], &orgs, RoutingDomain::Organization).is_ok());
        assert!(uncovered(&[d("org-3")], &orgs, RoutingDomain::Organization).unwrap_err().contains("\"org-3\""));
        assert!(uncovered(&[None], &orgs, RoutingDomain::Organization).unwrap_err().contains("--routing-domain none"));
        assert!(uncovered(&[None], &orgs, RoutingDomain::None).is_ok());
        assert!(uncovered(&[d("org-1")], &orgs, RoutingDomain::None).unwrap_err().contains("--routing-domain organization"));
    }

    #[test]
    fn retries_wait_as_the_server_asks_within_the_cap() {
        let (base, cap) = (Duration::from_millis(100), Duration::from_secs(30));
        assert_eq!(retry_wait(1, base, cap, &[]), Some(Duration::from_millis(100)));
        assert_eq!(retry_wait(3, base, cap, &[]), Some(Duration::from_millis(400)));
        assert_eq!(retry_wait(30, base, cap, &[]), Some(cap));
        assert_eq!(retry_wait(1, base, cap, &["2"]), Some(Duration::from_secs(2)));
        assert_eq!(retry_wait(1, base, cap, &["1", "3", "x"]), Some(Duration::from_secs(3)));
        assert_eq!(retry_wait(1, base, cap, &["31"]), None);
    }
}
