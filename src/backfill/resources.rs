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

use crate::stock::json::Value;
use crate::stock::jsonb_binary;
use std::collections::HashSet;

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

/// The keys `Fields` reads, in its field order.
pub const FIELD_KEYS: [&str; 6] = [
    "kind",
    "sandboxId",
    "modalAppId",
    "daytonaOrganizationId",
    "runtimeEnvironment",
    "daytonaEnvironment",
];

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
        (
            self.provider,
            &self.sandbox_id,
            self.routing_domain.as_deref().unwrap_or(b""),
        )
    }

    /// `'backfill:' || provider || ':' || sandbox_id || ':' || routing_domain_key`.
    pub fn operation_key(&self) -> Vec<u8> {
        let (provider, sandbox_id, domain_key) = self.identity();
        [
            b"backfill:",
            provider.as_str().as_bytes(),
            b":",
            sandbox_id,
            b":",
            domain_key,
        ]
        .concat()
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
    let environment = non_empty(fields.runtime_environment)
        .or(non_empty(fields.daytona_environment))
        .unwrap_or(b"production");
    Some(Resource {
        ordinal,
        provider,
        sandbox_id: sandbox_id.to_vec(),
        routing_domain: routing_domain.map(<[u8]>::to_vec),
        environment: environment.to_vec(),
    })
}

/// What `->>` prints for a member, when this module can say it without the server.
enum Text<'a> {
    Known(Option<&'a [u8]>),
    /// A number or a container: the server prints it.
    Unknown,
}

fn member_text<'a>(members: &'a [(std::borrow::Cow<'a, str>, Value<'a>)], key: &str) -> Text<'a> {
    match members.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
        None | Some(Value::Null) => Text::Known(None),
        Some(Value::String(s)) => Text::Known(Some(s.as_bytes())),
        Some(Value::Bool(true)) => Text::Known(Some(b"true")),
        Some(Value::Bool(false)) => Text::Known(Some(b"false")),
        Some(Value::Number(_) | Value::Array(_) | Value::Object(_)) => Text::Unknown,
    }
}

/// The sandbox resources of an attempt's `resource_json` (the payload of a
/// non-NULL jsonb), in ordinal order: an array's elements, anything else as a
/// one-element array. `None` when a field the page reads is a number or a
/// container (or the value cannot be read here): ask the server instead.
pub fn from_jsonb(payload: &[u8]) -> Option<Vec<Resource>> {
    let value = jsonb_binary::decode(payload).ok()?;
    let elements = match &value {
        Value::Array(items) => items.as_slice(),
        other => std::slice::from_ref(other),
    };
    let mut resources = Vec::new();
    for (index, element) in elements.iter().enumerate() {
        // `->>` on anything but an object is NULL: not a sandbox.
        let Value::Object(members) = element else {
            continue;
        };
        // A kind that is not a string prints as a number, true/false or JSON text: never a sandbox kind.
        let kind = match members.iter().find(|(k, _)| k == "kind").map(|(_, v)| v) {
            Some(Value::String(s)) => s.as_bytes(),
            _ => continue,
        };
        let mut texts: [Option<&[u8]>; 5] = [None; 5];
        for (slot, key) in texts.iter_mut().zip(&FIELD_KEYS[1..]) {
            match member_text(members, key) {
                Text::Known(text) => *slot = text,
                Text::Unknown => return None,
            }
        }
        let [sandbox_id, modal_app_id, daytona_organization_id, runtime_environment, daytona_environment] =
            texts;
        let fields = Fields {
            kind: Some(kind),
            sandbox_id,
            modal_app_id,
            daytona_organization_id,
            runtime_environment,
            daytona_environment,
        };
        let ordinal = i32::try_from(index + 1).ok()?;
        resources.extend(resource(ordinal, &fields));
    }
    Some(resources)
}

/// The resources an applied page inserts, given the page's resources in
/// keyset order: the first of each identity (later ones rank below it),
/// returned as indices in identity order (bytewise), the order the SQL page
/// inserts them in.
pub fn winners(page: &[&Resource]) -> Vec<usize> {
    let mut seen = HashSet::with_capacity(page.len());
    let mut first: Vec<usize> = (0..page.len())
        .filter(|&i| seen.insert(page[i].identity()))
        .collect();
    first.sort_unstable_by(|&a, &b| page[a].identity().cmp(&page[b].identity()));
    first
}

/// How many attempts to fetch for `wanted` more resources, given the
/// resources per attempt seen so far (a little more, so that one fetch
/// usually fills the page; a short fetch is followed by another).
pub fn attempts_to_fetch(wanted: usize, resources_per_attempt: f64) -> i64 {
    let rate = if resources_per_attempt.is_finite() {
        resources_per_attempt.clamp(0.1, 1000.0)
    } else {
        1.0
    };
    ((wanted as f64 / rate) * 1.05).ceil() as i64 + 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(kind: &'a str, sandbox_id: &'a str) -> Fields<'a> {
        Fields {
            kind: Some(kind.as_bytes()),
            sandbox_id: Some(sandbox_id.as_bytes()),
            ..Fields::default()
        }
    }

    #[test]
    fn only_sandbox_kinds_with_an_id_are_resources() {
        assert!(resource(1, &fields("daytona_sandbox", "a")).is_some());
        assert!(resource(1, &fields("modal_sandbox", "a")).is_some());
        assert!(resource(1, &fields("docker", "a")).is_none());
        assert!(resource(1, &fields("daytona_sandbox", "")).is_none());
        assert!(resource(
            1,
            &Fields {
                sandbox_id: Some(b"a"),
                ..Fields::default()
            }
        )
        .is_none());
        assert!(resource(
            1,
            &Fields {
                kind: Some(b"modal_sandbox"),
                ..Fields::default()
            }
        )
        .is_none());
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

        let d = resource(
            1,
            &Fields {
                kind: Some(b"daytona_sandbox"),
                modal_app_id: Some(b""),
                ..f
            },
        )
        .unwrap();
        assert_eq!(d.provider, Provider::Daytona);
        assert_eq!(d.routing_domain.as_deref(), Some(&b"org"[..]));

        let bare = resource(
            1,
            &Fields {
                daytona_organization_id: Some(b""),
                ..fields("daytona_sandbox", "x")
            },
        )
        .unwrap();
        assert_eq!(
            (bare.routing_domain.as_deref(), bare.environment.as_slice()),
            (None, &b"production"[..])
        );
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
    fn fetch_sizes_cover_the_page_with_a_margin() {
        assert_eq!(attempts_to_fetch(1000, 2.0), 529);
        assert_eq!(attempts_to_fetch(1000, 1.0), 1054);
        assert_eq!(attempts_to_fetch(1, 3.0), 5);
        // Few resources per attempt: at most ten attempts a resource per fetch.
        assert_eq!(attempts_to_fetch(10, 0.0), 109);
        assert_eq!(attempts_to_fetch(10, f64::NAN), 15);
    }
}
