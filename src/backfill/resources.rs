//! The sandbox resources of an attempt and the rows an applied page inserts,
//! computed in Rust for the orchestrator's applied page (the page SQL in
//! `sql/backfill/page_resources.sql` and `apply_page.sql` says the same in SQL;
//! the single-page functions and the previews still use it).
//!
//! The SQL reads every field with `->>`; `Fields` holds those texts, so the
//! rules below are the SQL's CASE/NULLIF/COALESCE expressions one for one.
//! `from_jsonb` reads the texts straight from jsonb's binary container; where
//! `->>` would print a JSON number or container (text this module does not
//! reproduce), it answers `None` and the shell asks the server for the texts.

use crate::fast_hash::FastSet;
use crate::stock::jsonb_binary::{self as binary, DecodeError};

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

/// The `->>` texts of one element of an attempt's resource array (`None`: SQL NULL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fields<'a> {
    pub kind: Option<&'a [u8]>,
    pub sandbox_id: Option<&'a [u8]>,
    pub modal_app_id: Option<&'a [u8]>,
    pub daytona_organization_id: Option<&'a [u8]>,
    pub runtime_environment: Option<&'a [u8]>,
    pub daytona_environment: Option<&'a [u8]>,
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
        (self.provider, &self.sandbox_id, self.routing_domain.as_deref().unwrap_or(b""))
    }

    /// `'backfill:' || provider || ':' || sandbox_id || ':' || routing_domain_key`.
    pub fn operation_key(&self) -> Vec<u8> {
        let (provider, sandbox_id, domain_key) = self.identity();
        [b"backfill:", provider.as_str().as_bytes(), b":", sandbox_id, b":", domain_key].concat()
    }
}

fn non_empty(text: Option<&[u8]>) -> Option<&[u8]> {
    text.filter(|t| !t.is_empty())
}

/// The element as a sandbox resource, or `None` when the page skips it: the
/// kind must be daytona_sandbox or modal_sandbox and the sandbox id non-empty.
pub fn resource(ordinal: i32, fields: &Fields<'_>) -> Option<Resource> {
    let provider = match fields.kind? {
        b"daytona_sandbox" => Provider::Daytona,
        b"modal_sandbox" => Provider::Modal,
        _ => return None,
    };
    let sandbox_id = non_empty(fields.sandbox_id)?;
    let routing_domain = match provider {
        Provider::Modal => non_empty(fields.modal_app_id),
        Provider::Daytona => non_empty(fields.daytona_organization_id),
    };
    let environment =
        non_empty(fields.runtime_environment).or(non_empty(fields.daytona_environment)).unwrap_or(b"production");
    Some(Resource {
        ordinal,
        provider,
        sandbox_id: sandbox_id.to_vec(),
        routing_domain: routing_domain.map(<[u8]>::to_vec),
        environment: environment.to_vec(),
    })
}

/// What `->>` prints for a member, when this module can say it without the server.
fn member_text<'a>(object: &binary::Container<'a>, key: &[u8]) -> Result<Option<&'a [u8]>, NeedsServer> {
    match object.get(key)? {
        None | Some(binary::Item::Null) => Ok(None),
        Some(binary::Item::String(s)) => Ok(Some(s)),
        Some(binary::Item::Bool(true)) => Ok(Some(b"true")),
        Some(binary::Item::Bool(false)) => Ok(Some(b"false")),
        // A number or a container: the server prints it.
        Some(binary::Item::Number | binary::Item::Container(_)) => Err(NeedsServer),
    }
}

/// A field the page reads is a number or a container, or the value is not
/// what this reader expects: the server reads this attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsServer;

impl From<DecodeError> for NeedsServer {
    fn from(_: DecodeError) -> Self {
        NeedsServer
    }
}

/// The sandbox resources of an attempt's `resource_json` (the payload of a
/// non-NULL jsonb), in ordinal order: an array's elements, anything else as a
/// one-element array. `None` when a field the page reads is a number or a
/// container (or the value cannot be read here): ask the server instead.
pub fn from_jsonb(payload: &[u8]) -> Option<Vec<Resource>> {
    resources_of(payload).ok()
}

fn resources_of(payload: &[u8]) -> Result<Vec<Resource>, NeedsServer> {
    let root = binary::Container::read(payload)?;
    let mut resources = Vec::new();
    match root.kind {
        // A top-level scalar is a one-element array of a non-object: no resources.
        binary::Kind::Scalar => {}
        binary::Kind::Object => resources.extend(element_resource(1, &root)?),
        binary::Kind::Array => {
            for (index, element) in root.elements().enumerate() {
                // `->>` on anything but an object is NULL: not a sandbox.
                if let binary::Item::Container(object) = element? {
                    if object.kind == binary::Kind::Object {
                        let ordinal = i32::try_from(index + 1).map_err(|_| NeedsServer)?;
                        resources.extend(element_resource(ordinal, &object)?);
                    }
                }
            }
        }
    }
    Ok(resources)
}

fn element_resource(ordinal: i32, object: &binary::Container<'_>) -> Result<Option<Resource>, NeedsServer> {
    // A kind that is not a string prints as a number, true/false or JSON text: never a sandbox kind.
    let kind = match object.get(b"kind")? {
        Some(binary::Item::String(kind)) => kind,
        _ => return Ok(None),
    };
    if kind != b"daytona_sandbox" && kind != b"modal_sandbox" {
        return Ok(None);
    }
    let fields = Fields {
        kind: Some(kind),
        sandbox_id: member_text(object, b"sandboxId")?,
        modal_app_id: member_text(object, b"modalAppId")?,
        daytona_organization_id: member_text(object, b"daytonaOrganizationId")?,
        runtime_environment: member_text(object, b"runtimeEnvironment")?,
        daytona_environment: member_text(object, b"daytonaEnvironment")?,
    };
    Ok(resource(ordinal, &fields))
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

    fn fields<'a>(kind: &'a str, sandbox_id: &'a str) -> Fields<'a> {
        Fields { kind: Some(kind.as_bytes()), sandbox_id: Some(sandbox_id.as_bytes()), ..Fields::default() }
    }

    #[test]
    fn only_sandbox_kinds_with_an_id_are_resources() {
        assert!(resource(1, &fields("daytona_sandbox", "a")).is_some());
        assert!(resource(1, &fields("modal_sandbox", "a")).is_some());
        assert!(resource(1, &fields("docker", "a")).is_none());
        assert!(resource(1, &fields("daytona_sandbox", "")).is_none());
        assert!(resource(1, &Fields { sandbox_id: Some(b"a"), ..Fields::default() }).is_none());
        assert!(resource(1, &Fields { kind: Some(b"modal_sandbox"), ..Fields::default() }).is_none());
    }

    #[test]
    fn provider_routing_domain_and_environment_follow_the_sql() {
        let f = Fields {
            kind: Some(b"modal_sandbox"),
            sandbox_id: Some(b"sb"),
            modal_app_id: Some(b"app"),
            daytona_organization_id: Some(b"org"),
            runtime_environment: Some(b""),
            daytona_environment: Some(b"staging"),
        };
        let r = resource(3, &f).unwrap();
        assert_eq!((r.ordinal, r.provider), (3, Provider::Modal));
        assert_eq!(r.routing_domain.as_deref(), Some(&b"app"[..]));
        assert_eq!(r.environment, b"staging");
        assert_eq!(r.operation_key(), b"backfill:modal:sb:app");

        let d = resource(1, &Fields { kind: Some(b"daytona_sandbox"), modal_app_id: Some(b""), ..f }).unwrap();
        assert_eq!(d.provider, Provider::Daytona);
        assert_eq!(d.routing_domain.as_deref(), Some(&b"org"[..]));

        let bare =
            resource(1, &Fields { daytona_organization_id: Some(b""), ..fields("daytona_sandbox", "x") }).unwrap();
        assert_eq!((bare.routing_domain.as_deref(), bare.environment.as_slice()), (None, &b"production"[..]));
        assert_eq!(bare.operation_key(), b"backfill:daytona:x:");
        let runtime = Fields {
            runtime_environment: Some(b"dev"),
            daytona_environment: Some(b"x"),
            ..fields("modal_sandbox", "y")
        };
        assert_eq!(resource(1, &runtime).unwrap().environment, b"dev");
    }

    #[test]
    fn the_first_resource_of_an_identity_wins_and_winners_come_in_identity_order() {
        let r = |kind: &str, id: &str, domain: Option<&str>| {
            let f = Fields {
                daytona_organization_id: domain.map(str::as_bytes),
                modal_app_id: domain.map(str::as_bytes),
                ..fields(kind, id)
            };
            resource(1, &f).unwrap()
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

    /// A jsonb value to encode in the server's binary format (numbers as an opaque aligned blob).
    enum J {
        Null,
        Bool(bool),
        Str(&'static str),
        Num,
        Arr(Vec<J>),
        Obj(Vec<(&'static str, J)>),
    }

    /// jsonb's binary container for `j`, storing an end offset every `stride` children as the server does every 32.
    fn encode(j: &J, stride: usize) -> Vec<u8> {
        match j {
            J::Arr(_) | J::Obj(_) => container(j, stride),
            scalar => container_of(0x4000_0000 | 0x1000_0000, &[scalar], stride),
        }
    }

    fn container(j: &J, stride: usize) -> Vec<u8> {
        match j {
            J::Arr(items) => container_of(0x4000_0000, &items.iter().collect::<Vec<_>>(), stride),
            J::Obj(members) => {
                let mut sorted: Vec<&(&str, J)> = members.iter().collect();
                sorted.sort_by(|a, b| (a.0.len(), a.0).cmp(&(b.0.len(), b.0)));
                let keys: Vec<J> = sorted.iter().map(|(k, _)| J::Str(k)).collect();
                let children: Vec<&J> = keys.iter().chain(sorted.iter().map(|(_, v)| v)).collect();
                let mut out = container_of(0x2000_0000, &children, stride);
                out[..4].copy_from_slice(&(0x2000_0000u32 | members.len() as u32).to_ne_bytes());
                out
            }
            _ => unreachable!(),
        }
    }

    fn container_of(flags: u32, children: &[&J], stride: usize) -> Vec<u8> {
        let (mut entries, mut data) = (Vec::new(), Vec::<u8>::new());
        for (i, child) in children.iter().enumerate() {
            let start = data.len();
            let kind = match child {
                J::Null => 0x4000_0000,
                J::Bool(false) => 0x2000_0000,
                J::Bool(true) => 0x3000_0000,
                J::Str(s) => {
                    data.extend_from_slice(s.as_bytes());
                    0
                }
                J::Num | J::Arr(_) | J::Obj(_) => {
                    data.resize((data.len() + 3) & !3, 0);
                    let bytes = if let J::Num = child { vec![9u8; 8] } else { container(child, stride) };
                    data.extend_from_slice(&bytes);
                    if let J::Num = child {
                        0x1000_0000
                    } else {
                        0x5000_0000
                    }
                }
            };
            let entry = if i % stride == 0 {
                kind | 0x8000_0000 | data.len() as u32
            } else {
                kind | (data.len() - start) as u32
            };
            entries.push(entry);
        }
        let mut out = (flags | children.len() as u32).to_ne_bytes().to_vec();
        entries.iter().for_each(|e| out.extend_from_slice(&e.to_ne_bytes()));
        out.extend_from_slice(&data);
        out
    }

    fn sandbox(kind: &'static str, id: J, extra: Vec<(&'static str, J)>) -> J {
        let mut members = vec![("kind", J::Str(kind)), ("sandboxId", id)];
        members.extend(extra);
        J::Obj(members)
    }

    #[test]
    fn jsonb_resources_are_read_in_place() {
        let doc = J::Arr(vec![
            sandbox(
                "daytona_sandbox",
                J::Str("d1"),
                vec![
                    ("daytonaOrganizationId", J::Str("org")),
                    ("runtimeEnvironment", J::Str("")),
                    ("daytonaEnvironment", J::Str("dev")),
                ],
            ),
            J::Str("not an object"),
            J::Null,
            J::Arr(vec![sandbox("modal_sandbox", J::Str("nested"), vec![])]),
            sandbox("docker", J::Str("x"), vec![]),
            J::Obj(vec![("kind", J::Num), ("sandboxId", J::Str("k"))]),
            sandbox(
                "modal_sandbox",
                J::Bool(true),
                vec![("modalAppId", J::Null), ("runtimeEnvironment", J::Bool(false)), ("other", J::Num)],
            ),
            sandbox("modal_sandbox", J::Str(""), vec![]),
            sandbox("daytona_sandbox", J::Str("ü"), vec![("unrelated", J::Obj(vec![("a", J::Num)]))]),
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
        let object = sandbox("modal_sandbox", J::Str("m"), vec![("modalAppId", J::Str("app"))]);
        let found = from_jsonb(&encode(&object, 32)).unwrap();
        assert_eq!((found.len(), found[0].ordinal, found[0].operation_key()), (1, 1, b"backfill:modal:m:app".to_vec()));
        assert_eq!(from_jsonb(&encode(&J::Str("scalar"), 32)), Some(vec![]));
        assert_eq!(from_jsonb(&encode(&J::Null, 32)), Some(vec![]));
        assert_eq!(from_jsonb(&encode(&J::Arr(vec![]), 32)), Some(vec![]));
    }

    #[test]
    fn numbers_and_containers_the_page_reads_go_to_the_server() {
        for (key, value) in
            [("sandboxId", J::Num), ("modalAppId", J::Arr(vec![])), ("daytonaEnvironment", J::Obj(vec![]))]
        {
            let doc = J::Arr(vec![
                sandbox("modal_sandbox", J::Str("m"), vec![]),
                J::Obj(vec![("kind", J::Str("modal_sandbox")), (key, value)]),
            ]);
            assert_eq!(from_jsonb(&encode(&doc, 32)), None, "{key}");
        }
        // Only sandbox kinds are read: a number elsewhere does not matter.
        let docker = J::Arr(vec![sandbox("docker", J::Num, vec![])]);
        assert_eq!(from_jsonb(&encode(&docker, 32)), Some(vec![]));
    }

    #[test]
    fn truncated_jsonb_goes_to_the_server_without_panicking() {
        let bytes =
            encode(&J::Arr(vec![sandbox("modal_sandbox", J::Str("m"), vec![("modalAppId", J::Str("app"))])]), 32);
        for len in 0..bytes.len() {
            let _ = from_jsonb(&bytes[..len]);
        }
        assert_eq!(from_jsonb(&[0, 0, 0, 0]), None);
    }
}
