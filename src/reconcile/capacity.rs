//! The run's reads of the Daytona capacity leases and the durably deleted
//! cleanups: the two release passes and the capacity inspection.
//!
//! Both tables keep history forever (released leases, deleted cleanups), so
//! how they are read depends on how large they are next to the listing (their
//! size estimated from their pages: no statistics needed, `capacity_sizes.sql`):
//!
//! - deleted cleanups few (at most a quarter of the listing): the first
//!   release pass is one statement driven by them, as the application's;
//! - at most twice the listing: read whole, once, at the first pass;
//! - more (a long history): only those of the sandboxes the run looks at,
//!   probed sandbox by sandbox from the open leases (a partial index holds
//!   them) and the matched sandboxes.
//!
//! The leases likewise: read whole while the table is at most three times the
//! listing, else the open ones plus, probed, the released ones of the matched
//! sandboxes. Everything read at the first pass is reused by the inspection.
//! Either way a run's reads stay proportional to the listing, not to the
//! ledger's age, and no statement's plan can turn one probe into a scan.

use super::pairing::{self, Deleted, Lease};
use super::sql::{execute, Ledger};
use crate::fast_hash::FastSet;
use pgrx::datum::{Array, DatumWithOid};
use pgrx::spi::SpiClient;

const SIZES: &str = include_str!("../../sql/reconcile/capacity_sizes.sql");
const RELEASE_FROM_CLEANUPS: &str = include_str!("../../sql/reconcile/release_from_cleanups.sql");
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

/// One read's first N result columns (text arrays).
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

/// How the deleted cleanups are read (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeletedReach {
    Few,
    Whole,
    Probed,
}

pub(crate) struct Capacity<'t> {
    /// The listing's size (at least 1,000): the fleet a run looks at.
    listed: i64,
    /// (the lease table is read whole, how deleted cleanups are read), decided on first use.
    reach: Option<(bool, DeletedReach)>,
    /// The open leases (lease id, sandbox, routing domain, run), when the
    /// first pass read them.
    open: Option<Columns<'t, 4>>,
    /// Deleted cleanups read (sandbox, routing domain, run): all of them, or
    /// those of the open leases' sandboxes and of `probed`.
    deleted: Vec<Columns<'t, 3>>,
    probed: FastSet<String>,
    /// The leases recovery bound (the second pass re-checks them; rows read
    /// before recovery are stale for them).
    bound: Vec<String>,
}

impl<'t> Capacity<'t> {
    pub fn new(listed: usize) -> Self {
        Capacity {
            listed: listed.max(1000) as i64,
            reach: None,
            open: None,
            deleted: Vec::new(),
            probed: FastSet::default(),
            bound: Vec::new(),
        }
    }

    /// Where reading a table whole costs about what probing it would (a
    /// probe costs two to three scanned rows here; probing the leases also
    /// reads the open ones): leases up to 3x the listing, deleted cleanups
    /// up to 2x are read whole. Deleted cleanups drive the first pass only
    /// while there are fewer of them than a quarter of the listing.
    fn reach(&mut self, client: &mut SpiClient, ledger: &Ledger) -> (bool, DeletedReach) {
        if self.reach.is_none() {
            let (table, _) = execute(client, &ledger.sql(SIZES), &[]);
            let table = table.first();
            let rows = |c: usize| table.get::<i64>(c).ok().flatten().unwrap_or(i64::MAX);
            let (leases, deleted) = (rows(1), rows(2));
            let deleted = if deleted <= self.listed / 4 {
                DeletedReach::Few
            } else if deleted <= 2 * self.listed {
                DeletedReach::Whole
            } else {
                DeletedReach::Probed
            };
            self.reach = Some((leases <= 3 * self.listed, deleted));
        }
        self.reach.expect("decided above")
    }

    /// The first release pass: leases whose cleanup (same sandbox, routing
    /// domain and run) is durably deleted. Returns how many were released.
    pub fn release_first(&mut self, client: &mut SpiClient, ledger: &Ledger) -> i64 {
        let deleted_reach = self.reach(client, ledger).1;
        if deleted_reach == DeletedReach::Few {
            return count(client, &ledger.sql(RELEASE_FROM_CLEANUPS), &[]);
        }
        let open = Columns::<4>::read(client, &ledger.sql(OPEN_LEASES), &[]);
        let deleted = if deleted_reach == DeletedReach::Whole {
            Columns::<3>::read(client, &ledger.sql(DELETED), &[])
        } else {
            let [_, sandboxes, ..] = open.columns();
            let ids = distinct(sandboxes.iter().map(|s| s.unwrap_or_default()));
            Columns::<3>::read(client, &ledger.sql(DELETED_PROBED), &[ids.into()])
        };
        self.open = Some(open);
        self.deleted.push(deleted);
        let terminal: Vec<&str> = {
            let [ids, sandboxes, domains, runs] = self.open.as_ref().expect("just read").columns();
            let open: Vec<Lease> = (0..ids.len())
                .map(|i| Lease {
                    lease_id: ids[i].unwrap_or_default(),
                    sandbox_id: sandboxes[i].unwrap_or_default(),
                    routing_domain: domains[i],
                    run_id: runs[i],
                })
                .collect();
            let deleted = self.deleted_rows();
            pairing::terminal_leases(&open, &deleted)
        };
        if terminal.is_empty() {
            return 0;
        }
        count(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[terminal.into()])
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

    fn deleted_rows(&self) -> Vec<Deleted<'_>> {
        let mut rows = Vec::new();
        for read in &self.deleted {
            let [sandboxes, domains, runs] = read.columns();
            rows.extend((0..sandboxes.len()).map(|i| Deleted {
                sandbox_id: sandboxes[i].unwrap_or_default(),
                routing_domain: domains[i],
                run_id: runs[i],
            }));
        }
        rows
    }

    /// The capacity inspection's rows for the matched sandboxes `matched`
    /// (distinct): their leases, released or not, and their durably deleted
    /// cleanups, as (sandbox, routing domain) identities, handed to `inspect`.
    pub fn inspect(
        &mut self,
        client: &mut SpiClient,
        ledger: &Ledger,
        matched: &[&str],
        inspect: impl FnOnce(&pairing::Identities, &pairing::Identities),
    ) {
        let (leases_whole, deleted_reach) = self.reach(client, ledger);

        // Leases: all of them (read now, after recovery); or the open ones,
        // as the first pass read them with the ones recovery bound re-read
        // (a dry run reads them now), and the released ones probed.
        let mut lease_reads: Vec<Columns<2>> = Vec::new();
        let reuse_open = !leases_whole && self.open.is_some();
        if !reuse_open {
            let which = if leases_whole { "" } else { "AND released_at IS NULL" };
            lease_reads.push(Columns::read(client, &ledger.sql(&LEASE_IDENTITIES.replace("@open@", which)), &[]));
        } else if !self.bound.is_empty() {
            lease_reads.push(Columns::read(client, &ledger.sql(BOUND_LEASE_IDENTITIES), &[self.bound.clone().into()]));
        }
        if !leases_whole {
            lease_reads.push(Columns::read(client, &ledger.sql(RELEASED_LEASE_IDENTITIES), &[matched.to_vec().into()]));
        }

        // Deleted cleanups: as the first pass read them (recovery only adds
        // pending ones), or read now; probed: those of sandboxes not yet probed.
        match deleted_reach {
            DeletedReach::Few => self.deleted.push(Columns::read(client, &ledger.sql(DELETED), &[])),
            DeletedReach::Whole if self.deleted.is_empty() => {
                self.deleted.push(Columns::read(client, &ledger.sql(DELETED), &[]))
            }
            DeletedReach::Whole => {}
            DeletedReach::Probed => {
                let missing: Vec<&str> = {
                    let mut covered: FastSet<&str> = self.probed.iter().map(String::as_str).collect();
                    if let Some(open) = &self.open {
                        let [_, sandboxes, ..] = open.columns();
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
        }

        let mut leases = pairing::Identities::default();
        let open_columns = if reuse_open { self.open.as_ref().map(Columns::columns) } else { None };
        if let Some([ids, sandboxes, domains, _]) = &open_columns {
            let bound: FastSet<&str> = self.bound.iter().map(String::as_str).collect();
            for i in (0..ids.len()).filter(|&i| !bound.contains(ids[i].unwrap_or_default())) {
                leases.sandbox_ids.push(sandboxes[i]);
                leases.routing_domains.push(domains[i]);
            }
        }
        let lease_columns: Vec<[Vec<Option<&str>>; 2]> = lease_reads.iter().map(Columns::columns).collect();
        for [sandboxes, domains] in &lease_columns {
            leases.sandbox_ids.extend(sandboxes);
            leases.routing_domains.extend(domains);
        }
        let mut deleted = pairing::Identities::default();
        let deleted_columns: Vec<[Vec<Option<&str>>; 3]> = self.deleted.iter().map(Columns::columns).collect();
        for [sandboxes, domains, _] in &deleted_columns {
            deleted.sandbox_ids.extend(sandboxes);
            deleted.routing_domains.extend(domains);
        }
        inspect(&leases, &deleted);
    }
}
