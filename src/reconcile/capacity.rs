//! The run's reads of the Daytona capacity leases and the durably deleted
//! cleanups: the two release passes and the capacity inspection.
//!
//! Both tables keep history forever (released leases, deleted cleanups).
//! While a table is small next to the listing (its size estimated from its
//! pages, no statistics needed) it is read whole, as the application's
//! statements would; once it is not, only the current fleet's rows are read:
//! the open leases (a partial index holds them), and, probed sandbox by
//! sandbox, the deleted cleanups and released leases of the sandboxes the run
//! looks at. Then the first release pass reads the open leases and the
//! deleted cleanups of their sandboxes once, and the inspection reuses them. Either way a run's reads stay
//! proportional to the listing, not to the ledger's age.

use super::pairing;
use super::sql::{execute, Ledger};
use crate::fast_hash::FastSet;
use pgrx::datum::{Array, DatumWithOid};
use pgrx::spi::SpiClient;

const SIZES: &str = include_str!("../../sql/reconcile/capacity_sizes.sql");
const RELEASE_FROM_CLEANUPS: &str = include_str!("../../sql/reconcile/release_from_cleanups.sql");
const RELEASE_FOR_CLEANUPS: &str = include_str!("../../sql/reconcile/release_for_cleanups.sql");
const RELEASE_TERMINAL_CAPACITY: &str = include_str!("../../sql/reconcile/release_terminal_capacity.sql");
const OPEN_LEASES: &str = include_str!("../../sql/reconcile/open_leases.sql");
const LEASE_IDENTITIES: &str = include_str!("../../sql/reconcile/lease_identities.sql");
const RELEASED_LEASE_IDENTITIES: &str = include_str!("../../sql/reconcile/released_lease_identities.sql");
const BOUND_LEASE_IDENTITIES: &str = include_str!("../../sql/reconcile/bound_lease_identities.sql");
const DELETED: &str = include_str!("../../sql/reconcile/deleted.sql");
const DELETED_PROBED: &str = include_str!("../../sql/reconcile/deleted_probed.sql");

/// Text columns of one read; rows borrow from them.
type Texts<'t> = Option<Array<'t, &'t str>>;

fn texts<'a>(array: &'a Texts<'_>) -> Vec<Option<&'a str>> {
    array.iter().flat_map(|a| a.iter()).collect()
}

/// One read's text columns, the first row-count-many columns of its result.
struct Columns<'t, const N: usize>([Texts<'t>; N]);

impl<'t, const N: usize> Columns<'t, N> {
    fn read(client: &mut SpiClient, sql: &str, params: &[DatumWithOid]) -> Self {
        let (table, _) = execute(client, sql, params);
        let table = table.first();
        Columns(std::array::from_fn(|c| table.get::<Array<'t, &'t str>>(c + 1).ok().flatten()))
    }

    fn columns(&self) -> [Vec<Option<&str>>; N] {
        self.0.each_ref().map(texts)
    }
}

/// (sandbox, routing domain) rows: leases or deleted cleanups, for the inspection.
fn identities<'c, 'a>(columns: &'c [Vec<Option<&'a str>>]) -> impl Iterator<Item = (&'a str, Option<&'a str>)> + 'c {
    columns[0].iter().zip(&columns[1]).map(|(sandbox, domain)| (sandbox.unwrap_or_default(), *domain))
}

/// Distinct sandbox ids, in byte order (neighbouring probes share index pages).
fn distinct<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn count(client: &mut SpiClient, sql: &str, params: &[DatumWithOid]) -> i64 {
    let (table, _) = execute(client, sql, params);
    table.first().get::<i64>(1).ok().flatten().unwrap_or(0)
}

pub(crate) struct Capacity<'t> {
    /// A table estimated at most this large is read whole.
    cap: i64,
    /// (the lease table is read whole, the deleted cleanups are), decided on first use.
    whole: Option<(bool, bool)>,
    /// When deleted cleanups are not read whole, the first release pass's
    /// reads: the open leases, and the deleted cleanups of their sandboxes
    /// and of the sandboxes probed since (`probed`).
    open: Option<Columns<'t, 3>>,
    deleted: Vec<Columns<'t, 3>>,
    probed: FastSet<String>,
    /// The leases recovery bound (the second pass re-checks them; the open
    /// leases read before are stale for them).
    bound: Vec<String>,
}

impl<'t> Capacity<'t> {
    /// A few times the listing: below it one pass over a table costs less
    /// than a probe per listed sandbox.
    pub fn new(listed: usize) -> Self {
        Capacity {
            cap: 4 * listed.max(1000) as i64,
            whole: None,
            open: None,
            deleted: Vec::new(),
            probed: FastSet::default(),
            bound: Vec::new(),
        }
    }

    fn whole(&mut self, client: &mut SpiClient, ledger: &Ledger) -> (bool, bool) {
        if self.whole.is_none() {
            let (table, _) = execute(client, &ledger.sql(SIZES), &[]);
            let table = table.first();
            let small = |c: usize| table.get::<i64>(c).ok().flatten().unwrap_or(i64::MAX) <= self.cap;
            self.whole = Some((small(1), small(2)));
        }
        self.whole.expect("decided above")
    }

    /// The first release pass: leases whose cleanup (same sandbox, routing
    /// domain and run) is durably deleted. Returns how many were released.
    pub fn release_first(&mut self, client: &mut SpiClient, ledger: &Ledger) -> i64 {
        if self.whole(client, ledger).1 {
            return count(client, &ledger.sql(RELEASE_FROM_CLEANUPS), &[]);
        }
        let open = Columns::<3>::read(client, &ledger.sql(OPEN_LEASES), &[]);
        let deleted = {
            let [_, sandboxes, _] = open.columns();
            Columns::<3>::read(
                client,
                &ledger.sql(DELETED_PROBED),
                &[distinct(sandboxes.iter().map(|s| s.unwrap_or_default())).into()],
            )
        };
        let released = {
            let [sandboxes, domains, runs] = deleted.columns();
            if sandboxes.is_empty() {
                0
            } else {
                count(client, &ledger.sql(RELEASE_FOR_CLEANUPS), &[sandboxes.into(), domains.into(), runs.into()])
            }
        };
        self.open = Some(open);
        self.deleted.push(deleted);
        released
    }

    /// Recovery bound these leases to their new sandboxes.
    pub fn bound(&mut self, bound: Vec<String>) {
        self.bound = bound;
    }

    /// The second release pass: of this run's own writes only recovery can
    /// bind a lease to a sandbox whose cleanup is already deleted (seeding
    /// never does, marking releases what it marks); those are re-checked.
    pub fn release_second(&mut self, client: &mut SpiClient, ledger: &Ledger) -> i64 {
        if self.bound.is_empty() {
            return 0;
        }
        count(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[self.bound.clone().into()])
    }

    /// The capacity inspection's rows for the matched sandboxes `matched`
    /// (distinct): their leases, released or not, and their durably deleted
    /// cleanups, as (sandbox, routing domain) identities.
    pub fn inspect(
        &mut self,
        client: &mut SpiClient,
        ledger: &Ledger,
        matched: &[&str],
        inspect: impl FnOnce(&pairing::Identities, &pairing::Identities),
    ) {
        let (leases_whole, deleted_whole) = self.whole(client, ledger);

        // Leases: all of them, or the open ones (as read by the first pass,
        // the ones recovery bound re-read) and the released ones probed.
        let mut lease_reads: Vec<Columns<2>> = Vec::new();
        let use_open = !leases_whole && self.open.is_some();
        if !use_open {
            let which = if leases_whole { "" } else { "AND released_at IS NULL" };
            lease_reads.push(Columns::read(client, &ledger.sql(&LEASE_IDENTITIES.replace("@open@", which)), &[]));
        } else if !self.bound.is_empty() {
            lease_reads.push(Columns::read(client, &ledger.sql(BOUND_LEASE_IDENTITIES), &[self.bound.clone().into()]));
        }
        if !leases_whole {
            lease_reads.push(Columns::read(client, &ledger.sql(RELEASED_LEASE_IDENTITIES), &[matched.to_vec().into()]));
        }

        // Deleted cleanups: all of them, or those of the sandboxes not yet probed.
        let mut deleted_reads: Vec<Columns<2>> = Vec::new();
        if deleted_whole {
            deleted_reads.push(Columns::read(client, &ledger.sql(DELETED), &[]));
        } else {
            let missing: Vec<&str> = {
                let mut covered: FastSet<&str> = self.probed.iter().map(String::as_str).collect();
                if let Some(open) = &self.open {
                    let [_, sandboxes, _] = open.columns();
                    covered.extend(sandboxes.iter().map(|s| s.unwrap_or_default()));
                }
                matched.iter().copied().filter(|id| !covered.contains(id)).collect()
            };
            if !missing.is_empty() {
                let read = Columns::<3>::read(client, &ledger.sql(DELETED_PROBED), &[missing.clone().into()]);
                self.probed.extend(missing.iter().map(|id| id.to_string()));
                self.deleted.push(read);
            }
        }

        let bound: FastSet<&str> = self.bound.iter().map(String::as_str).collect();
        let mut leases = pairing::Identities::default();
        if use_open {
            let [ids, sandboxes, domains] = self.open.as_ref().expect("checked").columns();
            for i in (0..ids.len()).filter(|&i| !bound.contains(ids[i].unwrap_or_default())) {
                leases.sandbox_ids.push(sandboxes[i]);
                leases.routing_domains.push(domains[i]);
            }
        }
        let lease_columns: Vec<[Vec<Option<&str>>; 2]> = lease_reads.iter().map(Columns::columns).collect();
        for columns in &lease_columns {
            for (sandbox, domain) in identities(columns) {
                leases.sandbox_ids.push(Some(sandbox));
                leases.routing_domains.push(domain);
            }
        }
        let mut deleted = pairing::Identities::default();
        let deleted_columns: Vec<[Vec<Option<&str>>; 2]> = deleted_reads.iter().map(Columns::columns).collect();
        for columns in &deleted_columns {
            for (sandbox, domain) in identities(columns) {
                deleted.sandbox_ids.push(Some(sandbox));
                deleted.routing_domains.push(domain);
            }
        }
        let probed: Vec<[Vec<Option<&str>>; 3]> = self.deleted.iter().map(Columns::columns).collect();
        for [sandboxes, domains, _] in &probed {
            deleted.sandbox_ids.extend(sandboxes);
            deleted.routing_domains.extend(domains);
        }
        inspect(&leases, &deleted);
    }
}
