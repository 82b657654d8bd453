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
//! The thresholds are reach::capacity_reach.

use super::{PLAIN_PROBES, THROUGH_PARTIAL_INDEX};
use crate::reconcile::pairing;
use crate::reconcile::reach::{self, DeletedReach};
use crate::fast_hash::FastSet;
use crate::shell::spi::clock;
use crate::shell::spi::ReadValue;
use crate::shell::statement::{execute, planned, run_count, Ledger};
use pgrx::datum::{Array, DatumWithOid};
use pgrx::prelude::*;
use pgrx::spi::{SpiClient, SpiTupleTable};


const SIZES: &str = include_str!("../../../sql/queries/reconcile/capacity_sizes.sql");
const RELEASE_FROM_CLEANUPS: &str = include_str!("../../../sql/queries/reconcile/release_from_cleanups.sql");
const RELEASE_TERMINAL_CAPACITY: &str = include_str!("../../../sql/queries/reconcile/release_terminal_capacity.sql");
const WOULD_RELEASE_FROM_CLEANUPS: &str = include_str!("../../../sql/queries/reconcile/would_release_from_cleanups.sql");
const WOULD_RELEASE_TERMINAL_CAPACITY: &str = include_str!("../../../sql/queries/reconcile/would_release_terminal_capacity.sql");
const OPEN_LEASES: &str = include_str!("../../../sql/queries/reconcile/open_leases.sql");
const LEASE_IDENTITIES: &str = include_str!("../../../sql/queries/reconcile/lease_identities.sql");
const LEASE_IDENTITIES_OPEN: &str = include_str!("../../../sql/queries/reconcile/lease_identities_open.sql");
const RELEASED_LEASE_IDENTITIES: &str = include_str!("../../../sql/queries/reconcile/released_lease_identities.sql");
const BOUND_LEASE_IDENTITIES: &str = include_str!("../../../sql/queries/reconcile/bound_lease_identities.sql");
const DELETED: &str = include_str!("../../../sql/queries/reconcile/deleted.sql");
const DELETED_PROBED: &str = include_str!("../../../sql/queries/reconcile/deleted_probed.sql");
const DELETED_BY_KEY: &str = include_str!("../../../sql/queries/reconcile/deleted_by_key.sql");
const RELEASED_BY_KEY: &str = include_str!("../../../sql/queries/reconcile/released_by_key.sql");

/// One read's N text columns, each written by the statement as two result
/// columns (`cut` reads them).
pub(super) struct Columns<'t, const N: usize>([Vec<Option<&'t str>>; N]);

impl<'t, const N: usize> Columns<'t, N> {
    fn read(client: &mut SpiClient, sql: &str, params: &[DatumWithOid]) -> Self {
        let (table, _) = execute(client, sql, params);
        let table = table.first();
        Columns(std::array::from_fn(|c| cut(&table, 2 * c + 1)))
    }

    fn columns(&self) -> &[Vec<Option<&'t str>>; N] {
        &self.0
    }
}

impl<'t> Columns<'t, 5> {
    /// lease_identities.sql's read: the open leases (id, sandbox, routing
    /// domain; no ids unless asked for) and the released ones (sandbox,
    /// routing domain).
    fn leases(client: &mut SpiClient, ledger: &Ledger, with_ids: bool) -> (Columns<'t, 3>, Columns<'t, 2>) {
        let read = Columns::<5>::read(client, &ledger.sql(LEASE_IDENTITIES), &[with_ids.into()]);
        let [ids, sandboxes, domains, released_sandboxes, released_domains] = read.0;
        (Columns([ids, sandboxes, domains]), Columns([released_sandboxes, released_domains]))
    }
}

/// A text column read as `string_agg(x, ''), array_agg(octet_length(x))`
/// (result columns `c` and `c + 1`): its values cut from the one string by
/// their lengths, NULL where the length is. PostgreSQL builds that string and
/// an array of integers for a third of what an array of 100k texts costs it
/// (each element copied twice). The string is copied out of SPI's memory
/// into the call's, where it stays until the call returns.
pub(crate) fn cut<'t>(table: &SpiTupleTable, c: usize) -> Vec<Option<&'t str>> {
    let joined: &'t str = table.get::<&'t str>(c).read_value().unwrap_or_default();
    let lengths = table.get::<Array<i32>>(c + 1).read_value();
    // Read in place when no length is NULL (no value is), else element by element.
    let cut = match lengths.as_ref().map(Array::as_slice) {
        Some(Ok(lengths)) => reach::cut_by_lengths(joined, lengths.iter().map(|&l| Some(l))),
        _ => reach::cut_by_lengths(joined, lengths.iter().flat_map(|l| l.iter())),
    };
    cut.unwrap_or_else(|| {
        error!("runtime_sandbox: a statement's result could not be read: column {c} does not fit its lengths")
    })
}

/// Distinct sandbox ids, in byte order (neighbouring probes share index pages).
fn distinct<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}


/// Read history rows of `sandboxes` by one index scan keyed by all of them
/// (`sql.0`) where the ledger has install_ledger's index (`by_key`) and the
/// planner keys that scan by them, else by one probe per sandbox (`sql.1`);
/// plain index scans either way. The plan is looked at first: without
/// statistics the planner may rather walk another index of the table (the
/// application's own, or the one on (provider, sandbox_id)) and test every
/// entry against the whole array, one comparison per key (2.2 s for 10k keys
/// on a never-analyzed 22k-row table).
fn by_key_or_probed<'t, const N: usize>(
    client: &mut SpiClient,
    ledger: &Ledger,
    by_key: bool,
    sql: (&str, &str),
    sandboxes: Vec<&str>,
) -> Columns<'t, N> {
    planned(client, PLAIN_PROBES, |client| {
        let keyed = by_key && {
            // The array is behind a sub-select, so the plan does not depend on it: one key shows the plan
            // without building the whole array a second time.
            let sample: Vec<&str> = sandboxes.iter().take(1).copied().collect();
            let (plan, _) = execute(client, &format!("EXPLAIN (COSTS OFF) {}", ledger.sql(sql.0)), &[sample.into()]);
            let lines: Vec<String> = plan.filter_map(|row| row.get::<String>(1).read_value()).collect();
            reach::keyed_by_the_array(&lines)
        };
        Columns::read(client, &ledger.sql(if keyed { sql.0 } else { sql.1 }), &[sandboxes.into()])
    })
}

/// Whether the deleted cleanups and the released leases are probed by one
/// index scan keyed by all the sandboxes (capacity_sizes.sql).
#[derive(Default, Clone, Copy)]
struct ByKey {
    deleted: bool,
    released: bool,
}

pub struct Capacity<'t> {
    /// The listing's size: the fleet a run looks at.
    listed: usize,
    /// (the lease table is read whole, how deleted cleanups are read), decided on first use.
    reach: Option<(bool, DeletedReach)>,
    /// Which history tables have install_ledger's bytewise index (decided with `reach`).
    by_key: ByKey,
    /// The open leases (lease id, sandbox, routing domain), when the first
    /// pass read them.
    open: Option<Columns<'t, 3>>,
    /// The released leases (sandbox, routing domain), when the first pass
    /// read the whole table.
    released: Option<Columns<'t, 2>>,
    /// Deleted cleanups read (sandbox, routing domain, run): all of them, or
    /// those of the open leases' sandboxes and of `probed`.
    deleted: Vec<Columns<'t, 3>>,
    probed: FastSet<String>,
    /// The sandboxes whose deleted cleanups the first pass probed, distinct, in byte order.
    first_probed: Vec<&'t str>,
    /// The leases recovery bound (the second pass re-checks them; rows read
    /// before recovery are stale for them).
    bound: Vec<String>,
}

impl<'t> Capacity<'t> {
    pub fn new(listed: usize) -> Self {
        Capacity {
            listed,
            reach: None,
            by_key: ByKey::default(),
            open: None,
            released: None,
            deleted: Vec::new(),
            probed: FastSet::default(),
            first_probed: Vec::new(),
            bound: Vec::new(),
        }
    }

    /// Whether the lease table is read whole and how deleted cleanups are
    /// read, from the tables' estimated sizes (reach::capacity_reach).
    fn reach(&mut self, client: &mut SpiClient, ledger: &Ledger) -> (bool, DeletedReach) {
        if self.reach.is_none() {
            let (table, _) = execute(client, &ledger.sql(SIZES), &[]);
            let table = table.first();
            let rows = |c: usize| table.get::<i64>(c).read_value().unwrap_or(i64::MAX);
            self.reach = Some(reach::capacity_reach(self.listed, rows(1), rows(2)));
            let flag = |c: usize| table.get::<bool>(c).read_value().unwrap_or(false);
            self.by_key = ByKey { deleted: flag(3), released: flag(4) };
        }
        self.reach.expect("decided above")
    }

    /// The first release pass: leases whose cleanup (same sandbox, routing
    /// domain and run) is durably deleted. Returns how many were released.
    /// `count_only`: a dry run's count of the same leases, read only (the
    /// rows read are kept for the inspection as an apply's are).
    pub fn release_first(&mut self, client: &mut SpiClient, ledger: &Ledger, count_only: bool) -> i64 {
        let (leases_whole, deleted_reach) = self.reach(client, ledger);
        if deleted_reach == DeletedReach::Few {
            if count_only {
                return run_count(client, &ledger.sql(WOULD_RELEASE_FROM_CLEANUPS), &[]);
            }
            return run_count(client, &ledger.sql(RELEASE_FROM_CLEANUPS), &[clock()]);
        }
        // A small lease table is read whole once, here, for the inspection too (one scan instead of the open
        // leases now and every lease later).
        let open = if leases_whole {
            let (open, released) = Columns::leases(client, ledger, true);
            self.released = Some(released);
            open
        } else {
            planned(client, THROUGH_PARTIAL_INDEX, |client| Columns::<3>::read(client, &ledger.sql(OPEN_LEASES), &[]))
        };
        let deleted = if deleted_reach == DeletedReach::Whole {
            Columns::<3>::read(client, &ledger.sql(DELETED), &[])
        } else {
            let [_, sandboxes, ..] = open.columns();
            self.first_probed = distinct(sandboxes.iter().map(|s| s.unwrap_or_default()));
            self.deleted_of(client, ledger, self.first_probed.clone())
        };
        let terminal: Vec<&str> = {
            let ([ids, sandboxes, domains], [deleted_sandboxes, deleted_domains, _]) = (open.columns(), deleted.columns());
            pairing::terminal_candidates([ids, sandboxes, domains], [deleted_sandboxes, deleted_domains])
        };
        self.open = Some(open);
        self.deleted.push(deleted);
        if terminal.is_empty() {
            return 0;
        }
        if count_only {
            return run_count(client, &ledger.sql(WOULD_RELEASE_TERMINAL_CAPACITY), &[terminal.into()]);
        }
        run_count(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[terminal.into(), clock()])
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
        run_count(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[self.bound.clone().into(), clock()])
    }

    /// The durably deleted cleanups of these sandboxes (distinct): one index
    /// scan keyed by all of them where the ledger has install_ledger's
    /// bytewise index, else a probe per sandbox; plain index scans either way.
    fn deleted_of(&self, client: &mut SpiClient, ledger: &Ledger, sandboxes: Vec<&str>) -> Columns<'t, 3> {
        by_key_or_probed(client, ledger, self.by_key.deleted, (DELETED_BY_KEY, DELETED_PROBED), sandboxes)
    }

    /// The capacity inspection: the open leases of the matched sandboxes;
    /// `to_inspect` names, from them, the sandboxes whose history decides
    /// (an identity without an open lease); their released leases and durably
    /// deleted cleanups are read (probed, on a long history), and `inspect` is
    /// handed the open leases, the released ones and the deleted cleanups as
    /// (sandbox, routing domain) identities.
    pub fn inspect(
        &mut self,
        client: &mut SpiClient,
        ledger: &Ledger,
        pairs: &pairing::Pairing,
        operations: &pairing::Operations<'t>,
    ) -> pairing::Inspection {
        let (leases_whole, deleted_reach) = self.reach(client, ledger);

        // Open leases: as the first pass read them, with the ones recovery bound re-read (their rows read
        // before recovery are stale); or read now (a dry run, or no first pass read): the whole table's
        // rows, the released ones apart (a small table), or the open ones.
        // Leases the first pass released count as open here: either way they cover their identity (an
        // open lease covers its pairs; a released one is among the inspected sandboxes' leases).
        let reuse_open = self.open.is_some();
        let mut released_read = None;
        let mut open_reads: Vec<Columns<2>> = Vec::new();
        if reuse_open && !self.bound.is_empty() {
            open_reads.push(Columns::read(client, &ledger.sql(BOUND_LEASE_IDENTITIES), &[self.bound.clone().into()]));
        } else if leases_whole && !reuse_open {
            let (Columns([_, sandboxes, domains]), released) = Columns::leases(client, ledger, false);
            open_reads.push(Columns([sandboxes, domains]));
            released_read = Some(released);
        } else if !reuse_open {
            open_reads.push(planned(client, THROUGH_PARTIAL_INDEX, |client| {
                Columns::read(client, &ledger.sql(LEASE_IDENTITIES_OPEN), &[])
            }));
        }
        let bound: FastSet<&str> = self.bound.iter().map(String::as_str).collect();
        let mut open = pairing::Identities::default();
        let mut released = pairing::Identities::default();
        if let Some([ids, sandboxes, domains]) = self.open.as_ref().map(Columns::columns) {
            for i in (0..ids.len()).filter(|&i| !bound.contains(ids[i].unwrap_or_default())) {
                open.sandbox_ids.push(sandboxes[i]);
                open.routing_domains.push(domains[i]);
            }
        }
        for [sandboxes, domains] in open_reads.iter().map(Columns::columns) {
            open.sandbox_ids.extend(sandboxes);
            open.routing_domains.extend(domains);
        }
        if let Some([sandboxes, domains]) = self.released.as_ref().or(released_read.as_ref()).map(Columns::columns) {
            released.sandbox_ids.extend(sandboxes);
            released.routing_domains.extend(domains);
        }
        let inspector = pairing::Inspector::new(pairs, operations, &open);
        let inspected = inspector.inspected();

        // Released leases of the inspected sandboxes, probed (a long history).
        let released_read = (!leases_whole && !inspected.is_empty()).then(|| {
            // Plain index probes, not a bitmap each (settings.sql).
            let sql = (RELEASED_BY_KEY, RELEASED_LEASE_IDENTITIES);
            by_key_or_probed::<2>(client, ledger, self.by_key.released, sql, inspected.clone())
        });

        // Deleted cleanups: as the first pass read them (recovery only adds
        // pending ones), or read now; probed: those of inspected sandboxes not
        // yet probed.
        let mut deleted_reads: Vec<Columns<3>> = Vec::new();
        match deleted_reach {
            DeletedReach::Few => deleted_reads.push(Columns::read(client, &ledger.sql(DELETED), &[])),
            DeletedReach::Whole if self.deleted.is_empty() => {
                deleted_reads.push(Columns::read(client, &ledger.sql(DELETED), &[]))
            }
            DeletedReach::Whole => {}
            DeletedReach::Probed => {
                let missing: Vec<&str> = {
                    let first = &self.first_probed;
                    let covered = |id: &str| first.binary_search(&id).is_ok() || self.probed.contains(id);
                    inspected.iter().copied().filter(|id| !covered(id)).collect()
                };
                if !missing.is_empty() {
                    deleted_reads.push(self.deleted_of(client, ledger, missing.clone()));
                    self.probed.extend(missing.iter().map(|id| id.to_string()));
                }
            }
        }

        let released_columns = released_read.as_ref().map(Columns::columns);
        if let Some([sandboxes, domains]) = &released_columns {
            released.sandbox_ids.extend(sandboxes);
            released.routing_domains.extend(domains);
        }
        let mut deleted = pairing::Identities::default();
        for [sandboxes, domains, _] in self.deleted.iter().chain(&deleted_reads).map(Columns::columns) {
            deleted.sandbox_ids.extend(sandboxes);
            deleted.routing_domains.extend(domains);
        }
        inspector.finish(&released, &deleted)
    }
}
