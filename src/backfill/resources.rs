//! The sandbox resources of an attempt, the rows a page inserts, and how the
//! page reads its attempts: the rules of the application's page SQL (its
//! `->>` per field, CASE/NULLIF/COALESCE, `row_number()` per identity) in Rust.
//!
//! `from_jsonb` reads the fields straight from jsonb's binary container, a
//! number or container printed as `->>` prints it (`crate::jsonb`), and only the
//! fields a rule needs (a skipped element is not read further). The shell asks
//! the server for the texts only when the binary format is not what this
//! reader expects.

use crate::fast_hash::FastSet;
use crate::jsonb::{self, Container, DecodeError, Item, Kind};
use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provider {
    Daytona,
    Modal,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Daytona => "daytona",
            Provider::Modal => "modal",
        }
    }
}

/// The members of a resource element the page reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Kind,
    SandboxId,
    ModalAppId,
    DaytonaOrganizationId,
    RuntimeEnvironment,
    DaytonaEnvironment,
}

impl Field {
    pub const ALL: [Field; 6] = [
        Field::Kind,
        Field::SandboxId,
        Field::ModalAppId,
        Field::DaytonaOrganizationId,
        Field::RuntimeEnvironment,
        Field::DaytonaEnvironment,
    ];

    pub fn key(self) -> &'static [u8] {
        match self {
            Field::Kind => b"kind",
            Field::SandboxId => b"sandboxId",
            Field::ModalAppId => b"modalAppId",
            Field::DaytonaOrganizationId => b"daytonaOrganizationId",
            Field::RuntimeEnvironment => b"runtimeEnvironment",
            Field::DaytonaEnvironment => b"daytonaEnvironment",
        }
    }
}

/// One sandbox resource of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// 1-based position in the attempt's resource array.
    pub ordinal: i32,
    pub provider: Provider,
    pub sandbox_id: Vec<u8>,
    pub routing_domain: Option<Vec<u8>>,
    pub environment: Vec<u8>,
}

impl Resource {
    /// The operation identity (provider, sandbox id, routing_domain_key), compared bytewise.
    pub fn identity(&self) -> (Provider, &[u8], &[u8]) {
        (self.provider, &self.sandbox_id, self.routing_domain_key())
    }

    /// `coalesce(routing_domain, '')`.
    pub fn routing_domain_key(&self) -> &[u8] {
        self.routing_domain.as_deref().unwrap_or(b"")
    }

    /// `'backfill:' || provider || ':' || sandbox_id || ':' || routing_domain_key`.
    pub fn operation_key(&self) -> Vec<u8> {
        let (provider, sandbox_id, domain_key) = self.identity();
        [b"backfill:", provider.as_str().as_bytes(), b":", sandbox_id, b":", domain_key].concat()
    }
}

fn non_empty(text: Option<Cow<'_, [u8]>>) -> Option<Cow<'_, [u8]>> {
    text.filter(|t| !t.is_empty())
}

/// The element as a sandbox resource, or `None` when the page skips it: the
/// kind must be daytona_sandbox or modal_sandbox and the sandbox id non-empty.
/// `field` gives a member's `->>` text (`None`: SQL NULL); it is asked only
/// for the members the rules look at.
pub fn resource<'a, E>(
    ordinal: i32,
    mut field: impl FnMut(Field) -> Result<Option<Cow<'a, [u8]>>, E>,
) -> Result<Option<Resource>, E> {
    let provider = match field(Field::Kind)?.as_deref() {
        Some(b"daytona_sandbox") => Provider::Daytona,
        Some(b"modal_sandbox") => Provider::Modal,
        _ => return Ok(None),
    };
    let Some(sandbox_id) = non_empty(field(Field::SandboxId)?) else { return Ok(None) };
    let routing_domain = non_empty(field(match provider {
        Provider::Modal => Field::ModalAppId,
        Provider::Daytona => Field::DaytonaOrganizationId,
    })?);
    let environment = match non_empty(field(Field::RuntimeEnvironment)?) {
        Some(environment) => environment,
        None => non_empty(field(Field::DaytonaEnvironment)?).unwrap_or(Cow::Borrowed(b"production")),
    };
    Ok(Some(Resource {
        ordinal,
        provider,
        sandbox_id: sandbox_id.into_owned(),
        routing_domain: routing_domain.map(Cow::into_owned),
        environment: environment.into_owned(),
    }))
}

/// What `->>` prints for a member.
fn member_text<'a>(object: &Container<'a>, key: &[u8]) -> Result<Option<Cow<'a, [u8]>>, DecodeError> {
    Ok(match object.get(key)? {
        None | Some(Item::Null) => None,
        Some(Item::String(s)) => Some(Cow::Borrowed(s)),
        Some(Item::Bool(true)) => Some(Cow::Borrowed(b"true")),
        Some(Item::Bool(false)) => Some(Cow::Borrowed(b"false")),
        Some(Item::Number(numeric)) => Some(Cow::Owned(jsonb::numeric_out(numeric)?.into_bytes())),
        Some(Item::Container(container)) => Some(Cow::Owned(jsonb::container_text(container)?.into_bytes())),
    })
}

/// The sandbox resources of an attempt's `resource_json` (the payload of a
/// non-NULL jsonb), in ordinal order: an array's elements, anything else as a
/// one-element array. `None` when the value is not laid out as this reader
/// expects: the shell asks the server instead.
pub fn from_jsonb(payload: &[u8]) -> Option<Vec<Resource>> {
    resources_of(payload, 0, usize::MAX).ok()
}

/// The first `room` sandbox resources whose ordinal is after `after`: what a
/// page takes of an attempt. Elements before `after` are not read, so a page
/// inside an attempt of a million resources costs the page, not the attempt.
pub fn window_of_jsonb(payload: &[u8], after: i32, room: usize) -> Option<Vec<Resource>> {
    resources_of(payload, usize::try_from(after).unwrap_or(0), room).ok()
}

fn resources_of(payload: &[u8], skip: usize, room: usize) -> Result<Vec<Resource>, DecodeError> {
    let root = Container::read(payload)?;
    let mut resources = Vec::new();
    match root.kind {
        // A top-level scalar is a one-element array of a non-object: no resources.
        Kind::Scalar => {}
        Kind::Object if skip == 0 && room > 0 => resources.extend(resource(1, |f| member_text(&root, f.key()))?),
        Kind::Object => {}
        Kind::Array => {
            for (index, element) in root.elements_from(skip)?.enumerate() {
                if resources.len() >= room {
                    break;
                }
                // `->>` on anything but an object is NULL: not a sandbox.
                if let Item::Container(object) = element? {
                    if object.kind == Kind::Object {
                        let ordinal = i32::try_from(skip + index + 1).map_err(|_| DecodeError("too many elements"))?;
                        resources.extend(resource(ordinal, |f| member_text(&object, f.key()))?);
                    }
                }
            }
        }
    }
    Ok(resources)
}

/// The resources an applied page inserts, given the page's resources in
/// keyset order: the first of each identity (later ones rank below it),
/// returned as indices in identity order (bytewise), the order the SQL page
/// inserts them in.
pub fn winners(page: &[&Resource]) -> Vec<usize> {
    let mut seen = FastSet::with_capacity_and_hasher(page.len(), Default::default());
    let mut first: Vec<usize> = (0..page.len()).filter(|&i| seen.insert(page[i].identity())).collect();
    first.sort_unstable_by(|&a, &b| page[a].identity().cmp(&page[b].identity()));
    first
}

/// How many attempts to fetch for `wanted` more resources, given the
/// resources per attempt seen so far (a little more, so that one fetch
/// usually fills the page; a short fetch is followed by another), rounded up
/// to a multiple of 8 (to 64 beyond 64) so that few fetch sizes, each with
/// its kept plan, serve every page.
pub fn attempts_to_fetch(wanted: usize, resources_per_attempt: f64) -> i64 {
    let rate = if resources_per_attempt.is_finite() { resources_per_attempt.clamp(0.1, 1000.0) } else { 1.0 };
    let fetch = ((wanted as f64 / rate) * 1.05).ceil() as i64 + 4;
    let step = if fetch <= 64 { 8 } else { 64 };
    (fetch + step - 1) / step * step
}

/// When the applied page tries the optimistic insert: after a page whose
/// winners all inserted; after a conflict, only once `CLEAN_PAGES` pages in a
/// row have inserted all their winners with ON CONFLICT (so a stretch of
/// pages that meet existing operations costs one rolled-back attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsertMode {
    clean_pages: u32,
}

const CLEAN_PAGES: u32 = 4;

impl Default for InsertMode {
    fn default() -> InsertMode {
        InsertMode::new()
    }
}

impl InsertMode {
    pub const fn new() -> InsertMode {
        InsertMode { clean_pages: CLEAN_PAGES }
    }

    pub fn optimistic(self) -> bool {
        self.clean_pages >= CLEAN_PAGES
    }

    pub fn after_conflict() -> InsertMode {
        InsertMode { clean_pages: 0 }
    }

    pub fn after_page(self, all_inserted: bool) -> InsertMode {
        if all_inserted {
            InsertMode { clean_pages: self.clean_pages.saturating_add(1) }
        } else {
            InsertMode::after_conflict()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The resource of an element whose `->>` texts are `fields` (absent: NULL).
    fn resource_of(fields: &[(Field, &str)]) -> Option<Resource> {
        resource(1, |f| {
            Ok::<_, ()>(fields.iter().find(|(g, _)| *g == f).map(|(_, text)| Cow::Owned(text.as_bytes().to_vec())))
        })
        .unwrap()
    }

    proptest::proptest! {
        /// A page's window of an attempt is the attempt's resources after the
        /// cursor's ordinal, the first `room` of them, whatever the mix of
        /// elements (sandboxes, other kinds, non-objects) and the array's size
        /// (past jsonb's every-32nd stored offset).
        #[test]
        fn a_window_is_the_resources_after_the_ordinal(
            kinds in proptest::collection::vec(0u8..4, 0..200),
            after in 0i32..210,
            room in 0usize..80,
        ) {
            let elements: Vec<serde_json::Value> = kinds
                .iter()
                .enumerate()
                .map(|(i, k)| match k {
                    0 => serde_json::json!({"kind": "daytona_sandbox", "sandboxId": format!("d{i}")}),
                    1 => serde_json::json!({"kind": "modal_sandbox", "sandboxId": format!("m{i}"), "modalAppId": "a"}),
                    2 => serde_json::json!({"kind": "docker", "id": i}),
                    _ => serde_json::json!(i),
                })
                .collect();
            let payload = crate::jsonb::encode::encode(&serde_json::Value::Array(elements));
            let all = from_jsonb(&payload).unwrap();
            let want: Vec<(i32, Vec<u8>)> =
                all.iter().filter(|r| r.ordinal > after).take(room).map(|r| (r.ordinal, r.sandbox_id.clone())).collect();
            let got: Vec<(i32, Vec<u8>)> =
                window_of_jsonb(&payload, after, room).unwrap().iter().map(|r| (r.ordinal, r.sandbox_id.clone())).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn only_sandbox_kinds_with_an_id_are_resources() {
        use Field::*;
        assert!(resource_of(&[(Kind, "daytona_sandbox"), (SandboxId, "a")]).is_some());
        assert!(resource_of(&[(Kind, "modal_sandbox"), (SandboxId, "a")]).is_some());
        assert!(resource_of(&[(Kind, "docker"), (SandboxId, "a")]).is_none());
        assert!(resource_of(&[(Kind, "daytona_sandbox"), (SandboxId, "")]).is_none());
        assert!(resource_of(&[(SandboxId, "a")]).is_none());
        assert!(resource_of(&[(Kind, "modal_sandbox")]).is_none());
    }

    #[test]
    fn provider_routing_domain_and_environment_follow_the_sql() {
        use Field::*;
        let all = [
            (Kind, "modal_sandbox"),
            (SandboxId, "sb"),
            (ModalAppId, "app"),
            (DaytonaOrganizationId, "org"),
            (RuntimeEnvironment, ""),
            (DaytonaEnvironment, "staging"),
        ];
        let r = resource(3, |f| Ok::<_, ()>(all.iter().find(|(g, _)| *g == f).map(|(_, t)| Cow::Borrowed(t.as_bytes()))))
            .unwrap()
            .unwrap();
        assert_eq!((r.ordinal, r.provider), (3, Provider::Modal));
        assert_eq!(r.routing_domain.as_deref(), Some(&b"app"[..]));
        assert_eq!(r.environment, b"staging");
        assert_eq!(r.operation_key(), b"backfill:modal:sb:app");

        let mut daytona = all;
        daytona[0].1 = "daytona_sandbox";
        daytona[2].1 = "";
        let d = resource_of(&daytona).unwrap();
        assert_eq!(d.provider, Provider::Daytona);
        assert_eq!(d.routing_domain.as_deref(), Some(&b"org"[..]));

        let bare = resource_of(&[(Kind, "daytona_sandbox"), (SandboxId, "x"), (DaytonaOrganizationId, "")]).unwrap();
        assert_eq!((bare.routing_domain.as_deref(), bare.environment.as_slice()), (None, &b"production"[..]));
        assert_eq!(bare.operation_key(), b"backfill:daytona:x:");
        let runtime =
            [(Kind, "modal_sandbox"), (SandboxId, "y"), (RuntimeEnvironment, "dev"), (DaytonaEnvironment, "x")];
        assert_eq!(resource_of(&runtime).unwrap().environment, b"dev");
    }

    #[test]
    fn only_the_fields_a_rule_needs_are_read() {
        let mut asked = Vec::new();
        let texts = |f: Field| match f {
            Field::Kind => Some("daytona_sandbox"),
            Field::SandboxId => Some("d"),
            Field::RuntimeEnvironment => Some("dev"),
            _ => Some("never read"),
        };
        resource(1, |f| {
            asked.push(f);
            Ok::<_, ()>(texts(f).map(|t| Cow::Borrowed(t.as_bytes())))
        })
        .unwrap();
        assert_eq!(asked, [Field::Kind, Field::SandboxId, Field::DaytonaOrganizationId, Field::RuntimeEnvironment]);
        asked.clear();
        let skipped = resource(1, |f| {
            asked.push(f);
            Ok::<_, ()>((f == Field::Kind).then_some(Cow::Borrowed(&b"modal_sandbox"[..])))
        });
        assert_eq!((skipped, asked), (Ok(None), vec![Field::Kind, Field::SandboxId]));
    }

    #[test]
    fn the_first_resource_of_an_identity_wins_and_winners_come_in_identity_order() {
        let r = |kind: &str, id: &str, domain: Option<&str>| {
            let mut fields = vec![(Field::Kind, kind), (Field::SandboxId, id)];
            if let Some(domain) = domain {
                fields.extend([(Field::DaytonaOrganizationId, domain), (Field::ModalAppId, domain)]);
            }
            resource_of(&fields).unwrap()
        };
        let page = [
            r("modal_sandbox", "b", None),
            r("daytona_sandbox", "b", None),
            r("modal_sandbox", "b", Some("")), // same identity as the first: no domain is ''
            r("modal_sandbox", "a", Some("x")),
            r("daytona_sandbox", "b", None),
            r("modal_sandbox", "a", None),
        ];
        let refs: Vec<&Resource> = page.iter().collect();
        // daytona < modal; within modal ("a", "") < ("a", "x") < ("b", "").
        assert_eq!(winners(&refs), vec![1, 5, 3, 0]);
        assert!(winners(&[]).is_empty());
    }

    #[test]
    fn the_optimistic_insert_waits_for_clean_pages_after_a_conflict() {
        let mut mode = InsertMode::new();
        assert!(mode.optimistic());
        mode = mode.after_page(true);
        assert!(mode.optimistic());
        mode = InsertMode::after_conflict();
        for _ in 0..CLEAN_PAGES {
            assert!(!mode.optimistic());
            mode = mode.after_page(true);
        }
        assert!(mode.optimistic());
        assert!(!mode.after_page(false).optimistic());
        assert!(!InsertMode::after_conflict().after_page(true).after_page(false).after_page(true).optimistic());
    }

    #[test]
    fn fetch_sizes_cover_the_page_with_a_margin() {
        assert_eq!(attempts_to_fetch(1000, 2.0), 576);
        assert_eq!(attempts_to_fetch(1000, 1.0), 1088);
        assert_eq!(attempts_to_fetch(1, 3.0), 8);
        assert_eq!(attempts_to_fetch(40, 1.0), 48);
        // Few resources per attempt: at most ten attempts a resource per fetch.
        assert_eq!(attempts_to_fetch(10, 0.0), 128);
        assert_eq!(attempts_to_fetch(10, f64::NAN), 16);
    }

    use crate::jsonb::encode::encode_with_stride as encode;
    use serde_json::{json, Value as J};

    fn obj(members: Vec<(&str, J)>) -> J {
        J::Object(members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    fn sandbox(kind: &'static str, id: J, extra: Vec<(&'static str, J)>) -> J {
        let mut members = vec![("kind", J::from(kind)), ("sandboxId", id)];
        members.extend(extra);
        obj(members)
    }

    #[test]
    fn jsonb_resources_are_read_in_place() {
        let doc = J::Array(vec![
            sandbox(
                "daytona_sandbox",
                J::from("d1"),
                vec![
                    ("daytonaOrganizationId", J::from("org")),
                    ("runtimeEnvironment", J::from("")),
                    ("daytonaEnvironment", J::from("dev")),
                ],
            ),
            J::from("not an object"),
            J::Null,
            J::Array(vec![sandbox("modal_sandbox", J::from("nested"), vec![])]),
            sandbox("docker", J::from("x"), vec![]),
            obj(vec![("kind", json!(42)), ("sandboxId", J::from("k"))]),
            sandbox(
                "modal_sandbox",
                J::Bool(true),
                vec![("modalAppId", J::Null), ("runtimeEnvironment", J::Bool(false)), ("other", json!(42))],
            ),
            sandbox("modal_sandbox", J::from(""), vec![]),
            sandbox("daytona_sandbox", J::from("ü"), vec![("unrelated", obj(vec![("a", json!(42))]))]),
        ]);
        for stride in [1, 2, 3, 32] {
            let found = from_jsonb(&encode(&doc, stride)).expect("readable here");
            let summary: Vec<_> = found
                .iter()
                .map(|r| (r.ordinal, r.provider, r.sandbox_id.clone(), r.routing_domain.clone(), r.environment.clone()))
                .collect();
            assert_eq!(
                summary,
                vec![
                    (1, Provider::Daytona, b"d1".to_vec(), Some(b"org".to_vec()), b"dev".to_vec()),
                    (7, Provider::Modal, b"true".to_vec(), None, b"false".to_vec()),
                    (9, Provider::Daytona, "ü".as_bytes().to_vec(), None, b"production".to_vec()),
                ],
                "stride {stride}"
            );
        }
    }

    #[test]
    fn jsonb_that_is_not_an_array_is_one_element() {
        let object = sandbox("modal_sandbox", J::from("m"), vec![("modalAppId", J::from("app"))]);
        let found = from_jsonb(&encode(&object, 32)).unwrap();
        assert_eq!((found.len(), found[0].ordinal, found[0].operation_key()), (1, 1, b"backfill:modal:m:app".to_vec()));
        assert_eq!(from_jsonb(&encode(&J::from("scalar"), 32)), Some(vec![]));
        assert_eq!(from_jsonb(&encode(&J::Null, 32)), Some(vec![]));
        assert_eq!(from_jsonb(&encode(&J::Array(vec![]), 32)), Some(vec![]));
    }

    #[test]
    fn numbers_and_containers_read_as_the_server_prints_them() {
        let doc = J::Array(vec![
            sandbox("modal_sandbox", json!(42), vec![("modalAppId", J::Array(vec![json!(42), J::from("a\"b")]))]),
            sandbox("daytona_sandbox", obj(vec![("bb", J::Null), ("a", obj(vec![]))]), vec![("daytonaEnvironment", json!(42))]),
        ]);
        let found = from_jsonb(&encode(&doc, 32)).unwrap();
        let texts: Vec<_> = found
            .iter()
            .map(|r| (String::from_utf8(r.operation_key()).unwrap(), String::from_utf8(r.environment.clone()).unwrap()))
            .collect();
        assert_eq!(
            texts,
            [
                (r#"backfill:modal:42:[42, "a\"b"]"#.to_owned(), "production".to_owned()),
                (r#"backfill:daytona:{"a": {}, "bb": null}:"#.to_owned(), "42".to_owned()),
            ]
        );
        // A skipped element is not read further.
        let skipped = J::Array(vec![obj(vec![("kind", J::from("modal_sandbox")), ("sandboxId", J::from("")), ("modalAppId", json!(42))])]);
        assert_eq!(from_jsonb(&encode(&skipped, 32)), Some(vec![]));
    }

    #[test]
    fn truncated_jsonb_goes_to_the_server_without_panicking() {
        let bytes =
            encode(&J::Array(vec![sandbox("modal_sandbox", J::from("m"), vec![("modalAppId", J::from("app"))])]), 32);
        for len in 0..bytes.len() {
            let _ = from_jsonb(&bytes[..len]);
        }
        assert_eq!(from_jsonb(&[0, 0, 0, 0]), None);
    }
}
