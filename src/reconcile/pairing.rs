//! The reconciliation's decisions over rows already read from the ledger:
//! which items own a reserved create, which items and operations pair up,
//! which live operations the inventory no longer lists, and which matched
//! sandboxes need a capacity lease. Pure: the SQL shell reads the ledger once
//! (a handful of columns as arrays) and hands the slices here.
//!
//! Every comparison is the SQL one the application makes: text equality
//! (bytewise, as in any deterministic collation), `IS NOT DISTINCT FROM` for
//! routing domains where the application uses it, and `coalesce(x, '')` where
//! its JavaScript keys do.

use super::inventory::InventoryItem;
use crate::fast_hash::{hash_of, FastMap, FastSet, RowIndex};

/// Live and deleting production Daytona operations, column by column.
#[derive(Debug, Default, Clone)]
pub struct Operations<'a> {
    pub operation_keys: Vec<&'a str>,
    pub sandbox_ids: Vec<Option<&'a str>>,
    pub routing_domains: Vec<Option<&'a str>>,
    /// `state = 'live'` (otherwise `deleting`).
    pub live: Vec<bool>,
}

impl Operations<'_> {
    pub fn len(&self) -> usize {
        self.operation_keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.operation_keys.is_empty()
    }
}

/// (sandbox_id, routing_domain) rows: Daytona capacity leases, or durably
/// deleted Daytona cleanups.
#[derive(Debug, Default, Clone)]
pub struct Identities<'a> {
    pub sandbox_ids: Vec<Option<&'a str>>,
    pub routing_domains: Vec<Option<&'a str>>,
}

/// Items owned by the unique operation label of a reserved create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    pub owned: Vec<bool>,
    /// (item, reserved operation) pairs by label, as the application counts
    /// its lookup rows: every item, unique label or not.
    pub reserved_rows: i64,
}

/// `reserved_labels` holds one label per reserved production create with an
/// open lease (a label repeats when several creates carry it).
pub fn ownership(items: &[InventoryItem<'_>], reserved_labels: &[&str]) -> Ownership {
    // label -> (reserved creates carrying it, items carrying it). Only labels
    // of reserved creates matter, so the map stays as small as they are few.
    let mut labels: FastMap<&str, (i64, i64)> =
        FastMap::with_capacity_and_hasher(reserved_labels.len(), Default::default());
    for label in reserved_labels {
        labels.entry(label).or_default().0 += 1;
    }
    let mut reserved_rows = 0;
    for item in items {
        if let Some(counts) = item.operation_key.and_then(|label| labels.get_mut(label)) {
            counts.1 += 1;
            reserved_rows += counts.0;
        }
    }
    // Owned: the item's label is on a reserved create and on no other item.
    let owned = items
        .iter()
        .map(|item| item.operation_key.and_then(|label| labels.get(label)).is_some_and(|c| c.1 == 1))
        .collect();
    Ownership { owned, reserved_rows }
}

/// The inventory paired with the operations by identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    /// (item index, operation index): a matched sandbox, one per pair as the
    /// application counts them, in inventory order.
    pub pairs: Vec<(usize, usize)>,
    /// Items no operation matched and no reserved create owns, in inventory order.
    pub unmatched: Vec<usize>,
    /// Live operations no item matched, in ledger read order.
    pub lone_live: Vec<usize>,
    /// The operations by identity, kept for the inspection: the open leases are looked up in it (one probe
    /// per lease) rather than gathered into a second table of as many identities.
    by_identity: IdentityIndex,
}

/// Rows of (sandbox_id, routing_domain) columns by identity, every one of them (a schema without the unique
/// identity key may hold several of one identity), found in read order: the operations, the deleted cleanups.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IdentityIndex(RowIndex);

fn identity_hash(sandbox_id: &str, routing_domain: Option<&str>) -> u64 {
    hash_of(&(sandbox_id, routing_domain))
}

/// The identity hash of every row with a sandbox id. Hashed in a pass of their own before the table is built or
/// probed: a loop that only touches the table keeps many of its cache misses in flight at once, one that also
/// hashes does not.
fn identity_hashes(sandbox_ids: &[Option<&str>], routing_domains: &[Option<&str>]) -> Vec<Option<u64>> {
    sandbox_ids.iter().zip(routing_domains).map(|(sandbox_id, domain)| sandbox_id.map(|s| identity_hash(s, *domain))).collect()
}

impl IdentityIndex {
    fn new(sandbox_ids: &[Option<&str>], routing_domains: &[Option<&str>]) -> Self {
        let mut rows = RowIndex::with_capacity(sandbox_ids.len());
        for (row, hash) in identity_hashes(sandbox_ids, routing_domains).into_iter().enumerate() {
            if let Some(hash) = hash {
                rows.insert(hash, row);
            }
        }
        IdentityIndex(rows)
    }

    /// The rows of one identity (`hash`: its [`identity_hash`]) in the columns the index was built from, in
    /// read order.
    fn of<'i>(
        &'i self,
        (sandbox_ids, routing_domains): (&'i [Option<&str>], &'i [Option<&str>]),
        hash: u64,
        sandbox_id: &'i str,
        routing_domain: Option<&'i str>,
    ) -> impl Iterator<Item = usize> + 'i {
        self.0.rows(hash).filter(move |&row| sandbox_ids[row] == Some(sandbox_id) && routing_domains[row] == routing_domain)
    }
}

/// Pair items and operations: same sandbox id and `routing_domain IS NOT
/// DISTINCT FROM`. An operation without a sandbox id matches nothing.
pub fn pair(items: &[InventoryItem<'_>], owned: &[bool], operations: &Operations) -> Pairing {
    let by_identity = IdentityIndex::new(&operations.sandbox_ids, &operations.routing_domains);
    let columns = (&operations.sandbox_ids[..], &operations.routing_domains[..]);
    let hashes: Vec<u64> = items.iter().map(|item| identity_hash(item.sandbox_id, item.routing_domain)).collect();
    let mut paired = vec![false; operations.len()];
    let mut pairs = Vec::with_capacity(items.len());
    let mut unmatched = Vec::new();
    for (item_index, item) in items.iter().enumerate() {
        let before = pairs.len();
        for operation in by_identity.of(columns, hashes[item_index], item.sandbox_id, item.routing_domain) {
            pairs.push((item_index, operation));
            paired[operation] = true;
        }
        if pairs.len() == before && !owned[item_index] {
            unmatched.push(item_index);
        }
    }
    let lone_live = (0..operations.len()).filter(|&i| operations.live[i] && !paired[i]).collect();
    Pairing { pairs, unmatched, lone_live, by_identity }
}

/// What the capacity inspection finds for the matched sandboxes.
///
/// A matched identity with an open Daytona lease is never seeded, whatever
/// its history holds; only the matched sandboxes with an identity lacking an
/// open lease (the ones `to_inspect` names) have their history read. The
/// counts are taken over those sandboxes: the application counts over every
/// matched sandbox (telemetry only: what is seeded is the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// Distinct (sandbox_id, routing_domain) of the leases, open or released,
    /// on the inspected sandboxes.
    pub lease_identities: i64,
    /// Distinct (sandbox_id, routing_domain) of the durably deleted cleanups
    /// on the inspected sandboxes.
    pub terminal_identities: i64,
    /// Matched pairs with neither a lease nor a terminal cleanup for their
    /// identity (routing domains compared as `coalesce(x, '')`).
    pub to_seed: i64,
    /// The operations those pairs name, each once, first-seen order.
    pub seed_operations: Vec<usize>,
}

/// The distinct routing domains of the leases (or terminal cleanups) on one
/// matched sandbox id: nearly always one, so the first is kept inline.
#[derive(Default)]
struct Domains<'a> {
    first: Option<Option<&'a str>>,
    more: Vec<Option<&'a str>>,
}

impl<'a> Domains<'a> {
    /// Record a row's routing domain; true when it was not seen yet
    /// (NULL and '' are different rows, as in SQL's DISTINCT).
    fn add(&mut self, domain: Option<&'a str>) -> bool {
        match self.first {
            None => {
                self.first = Some(domain);
                true
            }
            Some(first) if first == domain || self.more.contains(&domain) => false,
            Some(_) => {
                self.more.push(domain);
                true
            }
        }
    }

    /// Whether a row covers `domain`, NULL and '' alike (the application's keys).
    fn covers(&self, domain: &str) -> bool {
        self.first.iter().chain(&self.more).any(|d| d.unwrap_or("") == domain)
    }
}

/// What the inspection records of one inspected sandbox: the routing domains
/// of its open leases, of all its leases, and of its terminal cleanups.
#[derive(Default)]
struct Matched<'a> {
    open: Domains<'a>,
    leases: Domains<'a>,
    terminal: Domains<'a>,
}

/// The inspection in two steps: from the open leases, which sandboxes need
/// their history read (`inspected`); then, with it, the counts and what to
/// seed (`finish`). Only the pairs no open lease covers are looked at twice:
/// in a steady fleet they are few, so the rest costs one set of the open
/// identities and one lookup per pair.
pub struct Inspector<'p, 'a, 'r> {
    pairing: &'p Pairing,
    operations: &'p Operations<'a>,
    /// Positions in `pairing.pairs` of the pairs whose identity no open lease
    /// covers (routing domains compared as `coalesce(x, '')`), in pair order.
    uncovered: Vec<usize>,
    /// The inspected sandboxes (those of `uncovered`) -> their entry.
    index: FastMap<&'a str, usize>,
    matched: Vec<Matched<'r>>,
}

impl<'p, 'a, 'r> Inspector<'p, 'a, 'r> {
    pub fn new(pairing: &'p Pairing, operations: &'p Operations<'a>, open: &Identities<'r>) -> Self {
        let rows = || open.sandbox_ids.iter().zip(&open.routing_domains);
        // The operations an open lease covers: same sandbox, routing domains equal as `coalesce(x, '')` (a
        // lease without one, NULL or '', is looked up under both, the other one after the first pass).
        let hashes = identity_hashes(&open.sandbox_ids, &open.routing_domains);
        let columns = (&operations.sandbox_ids[..], &operations.routing_domains[..]);
        let mut covered = vec![false; operations.len()];
        let mut cover = |hash, sandbox_id, domain| {
            pairing.by_identity.of(columns, hash, sandbox_id, domain).for_each(|o| covered[o] = true)
        };
        let mut blank = Vec::new();
        for ((sandbox_id, domain), hash) in rows().zip(&hashes) {
            let (Some(sandbox_id), Some(hash)) = (*sandbox_id, *hash) else { continue };
            cover(hash, sandbox_id, *domain);
            match *domain {
                None => blank.push((sandbox_id, Some(""))),
                Some("") => blank.push((sandbox_id, None)),
                Some(_) => {}
            }
        }
        for (sandbox_id, domain) in blank {
            cover(identity_hash(sandbox_id, domain), sandbox_id, domain);
        }
        let mut uncovered = Vec::new();
        let mut index: FastMap<&str, usize> = FastMap::default();
        let mut matched: Vec<Matched> = Vec::new();
        for (position, &(_, operation)) in pairing.pairs.iter().enumerate() {
            if covered[operation] {
                continue;
            }
            // Paired operations always have a sandbox id.
            let sandbox_id = operations.sandbox_ids[operation].unwrap_or("");
            uncovered.push(position);
            index.entry(sandbox_id).or_insert_with(|| {
                matched.push(Matched::default());
                matched.len() - 1
            });
        }
        // The open leases of the inspected sandboxes count among their leases.
        if !index.is_empty() {
            for (sandbox_id, domain) in rows() {
                if let Some(&entry) = sandbox_id.and_then(|id| index.get(id)) {
                    matched[entry].open.add(*domain);
                }
            }
        }
        Inspector { pairing, operations, uncovered, index, matched }
    }

    /// The matched sandbox ids whose history the inspection needs (an
    /// identity without an open lease), distinct, in byte order.
    pub fn inspected(&self) -> Vec<&'a str> {
        let mut ids: Vec<&str> = self.index.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The inspection from the open leases given to `new`, the released ones and the
    /// durably deleted cleanups (of at least the inspected sandboxes; rows of
    /// others are not counted).
    pub fn finish(mut self, released: &Identities<'r>, terminal: &Identities<'r>) -> Inspection {
        // The open leases of an inspected sandbox count among its leases (they were recorded per sandbox
        // already: no second pass over the rows).
        let mut lease_identities = 0;
        for entry in &mut self.matched {
            for domain in entry.open.first.iter().chain(&entry.open.more) {
                lease_identities += entry.leases.add(*domain) as i64;
            }
        }
        let (index, matched) = (&self.index, &mut self.matched);
        lease_identities += record(released, index, matched, false);
        let terminal_identities = record(terminal, index, matched, true);
        // A covered pair is never seeded; an uncovered one when no lease nor terminal cleanup covers it.
        let mut to_seed = 0;
        let mut seed_operations = Vec::new();
        let mut seen = FastSet::default();
        for &position in &self.uncovered {
            let operation = self.pairing.pairs[position].1;
            let sandbox_id = self.operations.sandbox_ids[operation].unwrap_or("");
            let domain = self.operations.routing_domains[operation].unwrap_or("");
            let entry = &self.matched[self.index[sandbox_id]];
            if entry.leases.covers(domain) || entry.terminal.covers(domain) {
                continue;
            }
            to_seed += 1;
            if seen.insert(operation) {
                seed_operations.push(operation);
            }
        }
        Inspection { lease_identities, terminal_identities, to_seed, seed_operations }
    }
}

/// [`Inspector::inspected`] in one call.
pub fn to_inspect<'a>(pairing: &Pairing, operations: &Operations<'a>, open: &Identities<'_>) -> Vec<&'a str> {
    Inspector::new(pairing, operations, open).inspected()
}

/// Record `rows` on the inspected sandboxes they name; returns how many
/// distinct (sandbox_id, routing_domain) rows that was.
fn record<'r>(
    rows: &Identities<'r>,
    index: &FastMap<&str, usize>,
    matched: &mut [Matched<'r>],
    terminal: bool,
) -> i64 {
    let mut distinct = 0;
    for (sandbox_id, domain) in rows.sandbox_ids.iter().zip(&rows.routing_domains) {
        if let Some(&entry) = sandbox_id.and_then(|id| index.get(id)) {
            let entry = &mut matched[entry];
            let domains = if terminal { &mut entry.terminal } else { &mut entry.leases };
            distinct += domains.add(*domain) as i64;
        }
    }
    distinct
}

/// [`Inspector`] in one call.
pub fn inspect<'a, 'r>(
    pairing: &Pairing,
    operations: &Operations<'a>,
    open: &Identities<'r>,
    released: &Identities<'r>,
    terminal: &Identities<'r>,
) -> Inspection {
    Inspector::new(pairing, operations, open).finish(released, terminal)
}

/// The open leases the first release pass hands to release_terminal_capacity.sql:
/// those with a durably deleted cleanup of the same sandbox and routing domain
/// (`IS NOT DISTINCT FROM`). The statement releases those whose cleanup also
/// has their run (the application's rule), so the run ids of 100k open leases
/// are never read. Each lease once, in order.
pub fn terminal_candidates<'a>(open: [&[Option<&'a str>]; 3], deleted: [&[Option<&str>]; 2]) -> Vec<&'a str> {
    let [leases, sandboxes, domains] = open;
    let by_identity = IdentityIndex::new(deleted[0], deleted[1]);
    let hashes = identity_hashes(sandboxes, domains);
    let mut seen = FastSet::default();
    (0..leases.len())
        .filter(|&i| match (sandboxes[i], hashes[i]) {
            (Some(sandbox_id), Some(hash)) => by_identity.of((deleted[0], deleted[1]), hash, sandbox_id, domains[i]).next().is_some(),
            _ => false,
        })
        .filter_map(|i| leases[i])
        .filter(|id| seen.insert(*id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn item<'a>(sandbox: &'a str, domain: Option<&'a str>, key: Option<&'a str>) -> InventoryItem<'a> {
        InventoryItem::new(sandbox, domain, key)
    }

    fn operations<'a>(rows: &[(&'a str, Option<&'a str>, Option<&'a str>, bool)]) -> Operations<'a> {
        Operations {
            operation_keys: rows.iter().map(|r| r.0).collect(),
            sandbox_ids: rows.iter().map(|r| r.1).collect(),
            routing_domains: rows.iter().map(|r| r.2).collect(),
            live: rows.iter().map(|r| r.3).collect(),
        }
    }

    fn identities<'a>(rows: &[(Option<&'a str>, Option<&'a str>)]) -> Identities<'a> {
        Identities {
            sandbox_ids: rows.iter().map(|r| r.0).collect(),
            routing_domains: rows.iter().map(|r| r.1).collect(),
        }
    }

    #[test]
    fn routing_domains_pair_not_distinct() {
        let items = [item("a", None, None), item("b", Some("eu"), None), item("c", None, None), item("d", None, None)];
        let ops = operations(&[
            ("op-a", Some("a"), None, true),
            ("op-b", Some("b"), Some("eu"), false),
            // '' is not NULL: item c (NULL) does not match it.
            ("op-c", Some("c"), Some(""), true),
            ("op-x", None, None, true),
            ("op-d", Some("d"), Some("us"), true),
        ]);
        let pairing = pair(&items, &[false; 4], &ops);
        assert_eq!(pairing.pairs, vec![(0, 0), (1, 1)]);
        assert_eq!(pairing.unmatched, vec![2, 3]);
        // Deleting op-b is never lone-live; an operation without a sandbox id is.
        assert_eq!(pairing.lone_live, vec![2, 3, 4]);
    }

    #[test]
    fn owned_items_are_not_unmatched_and_labels_count_every_item() {
        let items = [
            item("a", None, Some("k1")),
            item("b", None, Some("k2")),
            item("c", None, Some("k2")),
            item("d", None, Some("k3")),
        ];
        // k1 is on two reserved creates, k2 on one, k3 on none.
        let owner = ownership(&items, &["k1", "k2", "k1"]);
        assert_eq!(owner.owned, vec![true, false, false, false]);
        assert_eq!(owner.reserved_rows, 2 + 1 + 1);
        let pairing = pair(&items, &owner.owned, &operations(&[]));
        assert_eq!(pairing.unmatched, vec![1, 2, 3]);
    }

    #[test]
    fn one_identity_under_two_labels_is_two_pairs_one_seed() {
        let items = [item("a", None, Some("k1")), item("a", None, Some("k2"))];
        let ops = operations(&[("op-a", Some("a"), None, true)]);
        let pairing = pair(&items, &[false, false], &ops);
        assert_eq!(pairing.pairs, vec![(0, 0), (1, 0)]);
        let inspection = inspect(&pairing, &ops, &identities(&[]), &identities(&[]), &identities(&[]));
        assert_eq!(inspection.to_seed, 2);
        assert_eq!(inspection.seed_operations, vec![0]);
    }

    #[test]
    fn inspection_counts_distinct_identities_on_inspected_sandboxes_only() {
        let items = [
            item("a", None, None),
            item("b", Some("eu"), None),
            item("c", None, None),
            item("d", None, None),
        ];
        let ops = operations(&[
            ("op-a", Some("a"), None, true),
            ("op-b", Some("b"), Some("eu"), true),
            ("op-c", Some("c"), None, false),
            ("op-d", Some("d"), None, true),
        ]);
        let open = identities(&[
            (Some("a"), None),       // a's identity is leased: a is not inspected
            (Some("b"), Some("us")), // another domain: b is inspected, and this lease counted
            (Some("z"), None),       // not a matched sandbox
        ]);
        let released = identities(&[
            (Some("a"), Some("")),   // on a sandbox not inspected: not counted
            (Some("d"), None),
            (Some("d"), None),       // duplicate identity: counted once
            (Some("d"), Some("")),   // '' and NULL are distinct rows ...
            (None, None),
        ]);
        let terminal = identities(&[(Some("c"), Some("")), (Some("a"), None), (Some("y"), None)]);
        let pairing = pair(&items, &[false; 4], &ops);
        assert_eq!(to_inspect(&pairing, &ops, &open), vec!["b", "c", "d"]);
        let inspection = inspect(&pairing, &ops, &open, &released, &terminal);
        assert_eq!(inspection.lease_identities, 3);
        assert_eq!(inspection.terminal_identities, 1);
        // ... but the same key when deciding what to seed: a has its lease, d a
        // released one, c is terminal ('' = NULL there), b needs a lease.
        assert_eq!(inspection.to_seed, 1);
        assert_eq!(inspection.seed_operations, vec![1]);
    }

    /// The SQL the application runs, restated naively (nested loops over the
    /// rows): the fast paths above must agree with it on any ledger.
    fn naive(
        items: &[InventoryItem],
        owned: &[bool],
        ops: &Operations,
        leases: &Identities,
        terminal: &Identities,
        inspected: Option<&dyn Fn(&str) -> bool>,
    ) -> ((Vec<(usize, usize)>, Vec<usize>, Vec<usize>), Inspection) {
        let mut pairs = Vec::new();
        for (i, it) in items.iter().enumerate() {
            for j in 0..ops.len() {
                if ops.sandbox_ids[j] == Some(it.sandbox_id) && ops.routing_domains[j] == it.routing_domain {
                    pairs.push((i, j));
                }
            }
        }
        let unmatched = (0..items.len()).filter(|&i| !owned[i] && !pairs.iter().any(|p| p.0 == i)).collect();
        let lone_live = (0..ops.len()).filter(|&j| ops.live[j] && !pairs.iter().any(|p| p.1 == j)).collect();
        // The application counts over every matched sandbox; the extension over those it inspects.
        let ids: Vec<&str> = pairs
            .iter()
            .map(|p| ops.sandbox_ids[p.1].unwrap())
            .filter(|s| inspected.is_none_or(|keep| keep(s)))
            .collect();
        fn distinct<'a>(rows: &Identities<'a>, ids: &[&str]) -> Vec<(&'a str, Option<&'a str>)> {
            let mut seen: Vec<(&str, Option<&str>)> = Vec::new();
            for (s, d) in rows.sandbox_ids.iter().zip(&rows.routing_domains) {
                if let Some(s) = s {
                    if ids.contains(s) && !seen.contains(&(*s, *d)) {
                        seen.push((*s, *d));
                    }
                }
            }
            seen
        }
        let (leased, terminated) = (distinct(leases, &ids), distinct(terminal, &ids));
        let covered = |rows: &Vec<(&str, Option<&str>)>, s: &str, d: Option<&str>| {
            rows.iter().any(|r| r.0 == s && r.1.unwrap_or("") == d.unwrap_or(""))
        };
        // What to seed: over every lease and terminal cleanup, as the application decides.
        let (all_leased, all_terminated) = {
            let all: Vec<&str> = pairs.iter().map(|p| ops.sandbox_ids[p.1].unwrap()).collect();
            (distinct(leases, &all), distinct(terminal, &all))
        };
        let mut to_seed = 0;
        let mut seed_operations = Vec::new();
        for &(_, j) in &pairs {
            let (s, d) = (ops.sandbox_ids[j].unwrap(), ops.routing_domains[j]);
            if !covered(&all_leased, s, d) && !covered(&all_terminated, s, d) {
                to_seed += 1;
                if !seed_operations.contains(&j) {
                    seed_operations.push(j);
                }
            }
        }
        let inspection = Inspection {
            lease_identities: leased.len() as i64,
            terminal_identities: terminated.len() as i64,
            to_seed,
            seed_operations,
        };
        ((pairs, unmatched, lone_live), inspection)
    }

    #[test]
    fn terminal_candidates_are_the_open_leases_of_deleted_identities() {
        let leases = [Some("l1"), Some("l2"), Some("l3"), None, Some("l1"), Some("l5"), Some("l6"), Some("l7")];
        let sandboxes = [Some("a"), Some("b"), Some("a"), Some("a"), Some("a"), None, Some("a"), Some("c")];
        let domains = [None, None, None, None, None, None, Some(""), Some("eu")];
        let open = [&leases[..], &sandboxes[..], &domains[..]];
        let deleted = [&[Some("a"), None, Some("c")][..], &[None, None, Some("eu")][..]];
        // l1 read twice is handed over once; a lease without an id or a sandbox never; '' is not NULL (l6).
        assert_eq!(terminal_candidates(open, deleted), vec!["l1", "l3", "l7"]);
        assert!(terminal_candidates(open, [&[], &[]]).is_empty());
    }

    const NAMES: [&str; 4] = ["a", "b", "c", "d"];
    const DOMAINS: [Option<&str>; 3] = [None, Some(""), Some("eu")];

    proptest! {
        /// Owned: a unique label on a reserved create; rows: every (item, create) pair by label.
        #[test]
        fn ownership_agrees_with_the_naive_rule(
            item_labels in proptest::collection::vec(proptest::option::of(0usize..5), 0..12),
            reserved in proptest::collection::vec(0usize..5, 0..6),
        ) {
            const LABELS: [&str; 5] = ["k0", "k1", "k2", "k3", "k4"];
            let names: Vec<String> = (0..item_labels.len()).map(|i| format!("sb{i}")).collect();
            let items: Vec<InventoryItem> = item_labels.iter().zip(&names)
                .map(|(l, name)| item(name, None, l.map(|l| LABELS[l]))).collect();
            let reserved: Vec<&str> = reserved.iter().map(|&l| LABELS[l]).collect();
            let owner = ownership(&items, &reserved);
            let on_items = |label: &str| items.iter().filter(|i| i.operation_key == Some(label)).count();
            let on_creates = |label: &str| reserved.iter().filter(|&&r| r == label).count() as i64;
            let expected: Vec<bool> = items.iter()
                .map(|i| i.operation_key.as_deref().is_some_and(|l| on_creates(l) > 0 && on_items(l) == 1)).collect();
            let rows: i64 = items.iter().filter_map(|i| i.operation_key.as_deref()).map(on_creates).sum();
            prop_assert_eq!(owner, Ownership { owned: expected, reserved_rows: rows });
        }

        #[test]
        fn agrees_with_the_naive_sql(
            raw_items in proptest::collection::vec((0usize..4, 0usize..3, any::<bool>()), 0..12),
            raw_ops in proptest::collection::vec((proptest::option::of(0usize..4), 0usize..3, any::<bool>()), 0..12),
            raw_leases in proptest::collection::vec((proptest::option::of(0usize..4), 0usize..3, any::<bool>()), 0..12),
            raw_terminal in proptest::collection::vec((proptest::option::of(0usize..4), 0usize..3), 0..6),
        ) {
            // Items never carry '' (normalization makes blanks NULL).
            let items: Vec<InventoryItem> = raw_items.iter()
                .map(|&(s, d, _)| item(NAMES[s], if d == 1 { None } else { DOMAINS[d] }, None)).collect();
            let owned: Vec<bool> = raw_items.iter().map(|r| r.2).collect();
            let keys: Vec<String> = (0..raw_ops.len()).map(|i| format!("op-{i}")).collect();
            let ops = Operations {
                operation_keys: keys.iter().map(String::as_str).collect(),
                sandbox_ids: raw_ops.iter().map(|r| r.0.map(|s| NAMES[s])).collect(),
                routing_domains: raw_ops.iter().map(|r| DOMAINS[r.1]).collect(),
                live: raw_ops.iter().map(|r| r.2).collect(),
            };
            let rows = |raw: &[(Option<usize>, usize)]| Identities {
                sandbox_ids: raw.iter().map(|r| r.0.map(|s| NAMES[s])).collect(),
                routing_domains: raw.iter().map(|r| DOMAINS[r.1]).collect(),
            };
            let part = |open: bool| -> Vec<(Option<usize>, usize)> {
                raw_leases.iter().filter(|r| r.2 == open).map(|r| (r.0, r.1)).collect()
            };
            let (open, released) = (rows(&part(true)), rows(&part(false)));
            let all: Vec<(Option<usize>, usize)> = raw_leases.iter().map(|r| (r.0, r.1)).collect();
            let (leases, terminal) = (rows(&all), rows(&raw_terminal));
            let pairing = pair(&items, &owned, &ops);
            let inspected = to_inspect(&pairing, &ops, &open);
            let inspection = inspect(&pairing, &ops, &open, &released, &terminal);
            // The application's decisions over every lease; the counts over the inspected sandboxes.
            let (application_pairing, application) = naive(&items, &owned, &ops, &leases, &terminal, None);
            let keep = |s: &str| inspected.contains(&s);
            let (_, counted) = naive(&items, &owned, &ops, &leases, &terminal, Some(&keep));
            prop_assert_eq!(&(pairing.pairs.clone(), pairing.unmatched.clone(), pairing.lone_live.clone()), &application_pairing);
            prop_assert_eq!(inspection.to_seed, application.to_seed);
            prop_assert_eq!(&inspection.seed_operations, &application.seed_operations);
            prop_assert_eq!(inspection, counted);
            // A sandbox is inspected exactly when one of its matched identities has no open lease.
            for &(_, j) in &pairing.pairs {
                let (s, d) = (ops.sandbox_ids[j].unwrap(), ops.routing_domains[j].unwrap_or(""));
                let leased = open.sandbox_ids.iter().zip(&open.routing_domains)
                    .any(|(os, od)| *os == Some(s) && od.unwrap_or("") == d);
                prop_assert!(leased || inspected.contains(&s));
            }
        }
    }
}
