//! One page of the backfill: fetch the attempts, read their resources in place, insert the winners (or ask which
//! exist), and the single-page SQL functions built on it.

use super::*;

const ATTEMPTS_FROM_START: &str = include_str!("../../../sql/queries/backfill/attempts_from_start.sql");
const ATTEMPTS_FROM_CURSOR: &str = include_str!("../../../sql/queries/backfill/attempts_from_cursor.sql");
const ATTEMPTS_AFTER: &str = include_str!("../../../sql/queries/backfill/attempts_after.sql");
const RESOURCE_FIELDS: &str = include_str!("../../../sql/queries/backfill/resource_fields.sql");
const INSERT_OPERATIONS: &str = include_str!("../../../sql/queries/backfill/insert_operations.sql");
const INSERT_OPERATIONS_RETURNING_KEYS: &str =
    include_str!("../../../sql/queries/backfill/insert_operations_returning_keys.sql");
const INSERT_NEW_OPERATIONS: &str = include_str!("../../../sql/queries/backfill/insert_new_operations.sql");
const INSERT_OPERATIONS_TYPED_ORG_ID: &str = include_str!("../../../sql/queries/backfill/insert_operations_typed_org_id.sql");
const INSERT_OPERATIONS_RETURNING_KEYS_TYPED_ORG_ID: &str =
    include_str!("../../../sql/queries/backfill/insert_operations_returning_keys_typed_org_id.sql");
const INSERT_NEW_OPERATIONS_TYPED_ORG_ID: &str =
    include_str!("../../../sql/queries/backfill/insert_new_operations_typed_org_id.sql");
const EXISTING_IDENTITIES: &str = include_str!("../../../sql/queries/backfill/existing_identities.sql");
const PAGE_ROW: &str = include_str!("../../../sql/queries/backfill/page_row.sql");

thread_local! {
    /// Whether the next applied page tries the optimistic insert.
    static INSERT_MODE: Cell<InsertMode> = const { Cell::new(InsertMode::new()) };
    /// Sandbox resources per attempt in this backend's last page: sizes the next fetch.
    static RESOURCES_PER_ATTEMPT: Cell<f64> = const { Cell::new(1.0) };
}

// ---------------------------------------------------------------------------
// The page

/// Fetch the next attempts (the kept plan per ledger, keyset kind and fetch size).
pub(super) fn fetch_attempts(client: &mut SpiClient<'_>, ledger: &SchemaName, from: &FetchFrom, fetch: i64) -> Rows {
    let (statement, key) = match from {
        FetchFrom::Start => (ATTEMPTS_FROM_START, None),
        FetchFrom::AtOrAfter(key) => (ATTEMPTS_FROM_CURSOR, Some(key)),
        FetchFrom::After(key) => (ATTEMPTS_AFTER, Some(key)),
    };
    let sql = statement.replace("@fetch@", &fetch.to_string()).replace("@ledger@", &ledger.quoted);
    // Within a page, the next fetch starts after the last attempt read: a
    // char(n) run_id compares with text without its blanks there. (A cursor
    // keeps them, as the application's does, and compares as its does.)
    let trimmed;
    let run_id = match (from, key) {
        (FetchFrom::After(_), Some(key)) if crate::ledger::padded_run_id(ledger) => {
            trimmed = without_trailing_blanks(&key.run_id);
            Some(trimmed)
        }
        (_, key) => key.map(|k| k.run_id.as_slice()),
    };
    let args: Vec<DatumWithOid<'static>> = match (key, run_id) {
        (Some(key), Some(run_id)) => vec![timestamptz_arg(Some(key.updated_at)), text_arg(Some(run_id)), key.attempt.into()],
        _ => Vec::new(),
    };
    run_kept(client, &sql, &args, &|e| page_failed(ledger, e));
    use pg_sys::{BOOLOID, INT4OID, JSONBOID, TEXTOID, TIMESTAMPTZOID};
    Rows::of_last_statement(&[TIMESTAMPTZOID, TEXTOID, INT4OID, TEXTOID, JSONBOID, BOOLOID])
}

/// A char(n) value as PostgreSQL converts it to text (bpchar's rtrim of blanks).
pub(super) fn without_trailing_blanks(id: &[u8]) -> &[u8] {
    &id[..id.len() - id.iter().rev().take_while(|&&b| b == b' ').count()]
}

pub(super) fn page_failed(ledger: &SchemaName, e: impl std::fmt::Display) -> ! {
    error!("runtime_sandbox: backfill page on {} failed: {e}", ledger.name)
}

pub(super) type ToastKey = (pg_sys::Oid, pg_sys::Oid, i32, u32);

/// Values at least this large, stored out of line, are kept detoasted between pages.
pub(super) const LARGE_VALUE_BYTES: usize = 1 << 20;

thread_local! {
    /// The last large resource_json a page read, detoasted, by its TOAST
    /// pointer (toast relation, value id, sizes and compression: the stored
    /// value itself, whatever row version points to it). The next page of
    /// the same attempt reads it from here instead of decompressing it again:
    /// a page's cost stays the page's, not the attempt's.
    static LARGE_VALUE: RefCell<Option<(ToastKey, Vec<u8>)>> = const { RefCell::new(None) };
}

/// `read` the payload of a non-NULL jsonb datum, from the cache when it is
/// the large value read last.
pub(super) fn with_large_value<R>(json: pg_sys::Datum, read: impl FnOnce(&[u8]) -> R) -> R {
    let pointer = json.cast_mut_ptr::<pg_sys::varlena>();
    // SAFETY: a varlena datum; an on-disk TOAST pointer is the 2-byte header and a varatt_external.
    let stored = unsafe {
        (pgrx::varatt_is_1b_e(pointer) && pgrx::vartag_external(pointer) == pg_sys::vartag_external::VARTAG_ONDISK as u8)
            .then(|| {
                let external: pg_sys::varatt_external =
                    std::ptr::read_unaligned((pointer as *const u8).add(2) as *const pg_sys::varatt_external);
                (external.va_toastrelid, external.va_valueid, external.va_rawsize, external.va_extinfo)
            })
    };
    if let Some(key) = stored {
        let hit = LARGE_VALUE.with_borrow(|cached| cached.as_ref().is_some_and(|(k, _)| *k == key));
        if !hit {
            // SAFETY: a non-NULL jsonb datum of the current tuple table.
            let payload = unsafe { JsonbBytes::from_polymorphic_datum(json, false, pg_sys::JSONBOID) }.expect("not NULL");
            if payload.as_bytes().len() < LARGE_VALUE_BYTES {
                return read(payload.as_bytes());
            }
            LARGE_VALUE.with_borrow_mut(|cached| *cached = Some((key, payload.as_bytes().to_vec())));
        }
        return LARGE_VALUE.with_borrow(|cached| read(&cached.as_ref().expect("cached above").1));
    }
    // SAFETY: a non-NULL jsonb datum of the current tuple table.
    let payload = unsafe { JsonbBytes::from_polymorphic_datum(json, false, pg_sys::JSONBOID) }.expect("not NULL");
    read(payload.as_bytes())
}

/// The sandbox resources of one attempt's resource_json: read in place, or
/// (when jsonb's layout is not what the reader expects) from the server's `->>`.
pub(super) fn attempt_resources(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    json: pg_sys::Datum,
    (after, room): (i32, usize),
) -> Vec<Resource> {
    let found = with_large_value(json, |payload| resources::window_of_jsonb(payload, after, room));
    if let Some(found) = found {
        if found.len() < room {
            // The attempt is read to its end: its cached copy is of no more use.
            LARGE_VALUE.with_borrow_mut(|cached| *cached = None);
        }
        return found;
    }
    // SAFETY: the jsonb datum, typed as jsonb.
    let arg = unsafe { DatumWithOid::new(json, pg_sys::JSONBOID) };
    run_kept(client, RESOURCE_FIELDS, &[arg], &|e| page_failed(ledger, e));
    let rows = Rows::of_last_statement(&[pg_sys::INT4OID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID]);
    let mut found = Vec::new();
    for row in 0..rows.count {
        let ordinal = rows.int(row, 1).expect("an ordinal") as i32;
        let column = |field: Field| 2 + Field::ALL.iter().position(|&f| f == field).expect("a field") as i32;
        let resource = resources::resource(ordinal, |field| Ok::<_, ()>(rows.bytes(row, column(field)).map(Cow::Borrowed)));
        found.extend(resource.expect("infallible"));
    }
    found
}

/// Assemble one page after `after` by the given rules.
pub(super) fn scan_page(client: &mut SpiClient<'_>, ledger: &SchemaName, rules: Rules, after: Option<After>) -> Page {
    let mut scan = Scan::new(rules, after);
    let rate = RESOURCES_PER_ATTEMPT.with(Cell::get);
    while let Some((from, fetch)) = scan.next_fetch(rate) {
        let from = from.clone();
        let rows = fetch_attempts(client, ledger, &from, fetch);
        for row in 0..rows.count {
            if scan.is_full() {
                break;
            }
            let key = AttemptKey {
                updated_at: rows.int(row, 1).expect("updated_at is NOT NULL"),
                run_id: rows.bytes(row, 2).expect("run_id is NOT NULL").to_vec(),
                attempt: rows.int(row, 3).expect("attempt is NOT NULL") as i32,
            };
            let attempt = Attempt {
                key,
                org_id: rows.bytes(row, 4).map(<[u8]>::to_vec),
                has_run: rows.bool(row, 6).expect("has_run is NOT NULL"),
            };
            let found = if scan.reads(&attempt) {
                let window = scan.window(&attempt.key);
                attempt_resources(client, ledger, rows.datum(row, 5).expect("resource_json is NOT NULL here"), window)
            } else {
                Vec::new()
            };
            scan.push(attempt, found);
        }
        scan.end_fetch(rows.count, fetch);
    }
    let page = scan.finish();
    if let Some(rate) = page.resources_per_attempt() {
        RESOURCES_PER_ATTEMPT.with(|r| r.set(rate));
    }
    page
}

/// The two forms of the winners' INSERT.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Insert {
    /// `ON CONFLICT (identity) DO NOTHING`: the application's insert.
    SkipExisting,
    /// A plain INSERT: cheaper (no speculative pre-check of the identity
    /// index per row), and the same rows when no winner's identity exists yet.
    New,
}

/// What the winners' INSERT did: how many rows, and (when asked) their operation keys.
pub(super) struct Inserted {
    pub(super) count: i64,
    pub(super) keys: Option<FastSet<Vec<u8>>>,
}

/// Insert the page's winners as live operations; existing operations are never changed.
pub(super) fn insert_winners(client: &mut SpiClient<'_>, ledger: &SchemaName, page: &Page, winners: &[usize], with_keys: bool) -> Inserted {
    if winners.is_empty() {
        return Inserted { count: 0, keys: with_keys.then(FastSet::default) };
    }
    let items: Vec<_> = winners.iter().map(|&i| page.item(i)).collect();
    let keys: Vec<Vec<u8>> = items.iter().map(|item| item.resource.operation_key()).collect();
    // A char(n) run_id goes in as PostgreSQL converts it to text: without its trailing blanks.
    let padded = crate::ledger::padded_run_id(ledger);
    let run_ids: Vec<&[u8]> = items
        .iter()
        .map(|item| if padded { without_trailing_blanks(&item.attempt.key.run_id) } else { item.attempt.key.run_id.as_slice() })
        .collect();
    let args = [
        texts(keys.iter().map(|k| Some(k.as_slice()))),
        texts(items.iter().map(|item| Some(item.resource.provider.as_str().as_bytes()))),
        texts(run_ids.iter().map(|id| Some(*id))),
        integers(items.iter().map(|item| item.attempt.key.attempt)),
        texts(items.iter().map(|item| item.attempt.org_id.as_deref())),
        texts(items.iter().map(|item| Some(item.resource.environment.as_slice()))),
        texts(items.iter().map(|item| Some(item.resource.sandbox_id.as_slice()))),
        texts(items.iter().map(|item| item.resource.routing_domain.as_deref())),
        timestamps(items.iter().map(|item| item.attempt.key.updated_at)),
    ];
    let all = winners.len() as i64;
    // On Citus the plain INSERT runs as a COPY, whose unique violation comes back as XX000, and an INSERT ...
    // SELECT ... ON CONFLICT DO NOTHING reports the rows it sent, not those inserted: there the rows are
    // counted from RETURNING.
    if crate::ledger::in_citus(ledger) {
        let inserted = run_insert(client, ledger, Insert::SkipExisting, &args, &keys, true);
        let keys = inserted.keys.expect("asked for");
        return Inserted { count: keys.len() as i64, keys: with_keys.then_some(keys) };
    }
    if INSERT_MODE.with(Cell::get).optimistic() {
        if let Some(inserted) = insert_without_conflicts(client, ledger, &args, &keys, with_keys) {
            return inserted;
        }
        INSERT_MODE.with(|m| m.set(InsertMode::after_conflict()));
    }
    let inserted = run_insert(client, ledger, Insert::SkipExisting, &args, &keys, with_keys);
    INSERT_MODE.with(|m| m.set(m.get().after_page(inserted.count == all)));
    inserted
}

/// Run one form of the INSERT (`winner_keys`: the operation keys of the rows in `args`).
pub(super) fn run_insert(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    insert: Insert,
    args: &[DatumWithOid<'static>],
    winner_keys: &[Vec<u8>],
    with_keys: bool,
) -> Inserted {
    let statement = match (insert, with_keys, crate::ledger::typed_org_id(ledger)) {
        (Insert::New, _, false) => INSERT_NEW_OPERATIONS,
        (Insert::SkipExisting, false, false) => INSERT_OPERATIONS,
        (Insert::SkipExisting, true, false) => INSERT_OPERATIONS_RETURNING_KEYS,
        (Insert::New, _, true) => INSERT_NEW_OPERATIONS_TYPED_ORG_ID,
        (Insert::SkipExisting, false, true) => INSERT_OPERATIONS_TYPED_ORG_ID,
        (Insert::SkipExisting, true, true) => INSERT_OPERATIONS_RETURNING_KEYS_TYPED_ORG_ID,
    };
    let sql = statement.replace("@ledger@", &ledger.quoted);
    run_kept(client, &sql, args, &|e| page_failed(ledger, e));
    // SAFETY: SPI_processed of the INSERT just run.
    let count = unsafe { pg_sys::SPI_processed } as i64;
    let keys = with_keys.then(|| match insert {
        // A plain INSERT inserts every row or fails.
        Insert::New => winner_keys.iter().cloned().collect(),
        Insert::SkipExisting => {
            let rows = Rows::of_last_statement(&[pg_sys::TEXTOID]);
            (0..rows.count).map(|row| rows.bytes(row, 1).expect("operation_key is NOT NULL").to_vec()).collect()
        }
    });
    Inserted { count, keys }
}

/// The optimistic insert: a plain INSERT in a subtransaction. `None` (and
/// nothing written) when a winner's identity (or operation key) already
/// exists: the caller inserts with ON CONFLICT DO NOTHING instead, so the
/// rows written, the count and any error are the application's. Any other
/// error rolls the subtransaction back and is raised as it is.
pub(super) fn insert_without_conflicts(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    args: &[DatumWithOid<'static>],
    winner_keys: &[Vec<u8>],
    with_keys: bool,
) -> Option<Inserted> {
    // As PL/pgSQL runs a block with an EXCEPTION clause (pl_exec.c).
    // SAFETY: the subtransaction is begun here and released or rolled back on every path below.
    let (context, owner) = unsafe {
        let saved = (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner);
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(saved.0);
        saved
    };
    let end = move |commit: bool| unsafe {
        if commit {
            pg_sys::ReleaseCurrentSubTransaction();
        } else {
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
        }
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
    };
    PgTryBuilder::new(AssertUnwindSafe(|| {
        let inserted = run_insert(client, ledger, Insert::New, args, winner_keys, with_keys);
        end(true);
        Some(inserted)
    }))
    .catch_when(PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION, |_| {
        end(false);
        None
    })
    .catch_others(|error| {
        end(false);
        error.rethrow()
    })
    .execute()
}

/// Which of the winners' identities have an operation already.
pub(super) fn existing(client: &mut SpiClient<'_>, ledger: &SchemaName, page: &Page, winners: &[usize]) -> FastSet<usize> {
    if winners.is_empty() {
        return FastSet::default();
    }
    let resources: Vec<&Resource> = winners.iter().map(|&i| page.item(i).resource).collect();
    let args = [
        texts(resources.iter().map(|r| Some(r.provider.as_str().as_bytes()))),
        texts(resources.iter().map(|r| Some(r.sandbox_id.as_slice()))),
        texts(resources.iter().map(|r| Some(r.routing_domain_key()))),
    ];
    let sql = EXISTING_IDENTITIES.replace("@ledger@", &ledger.quoted);
    run_kept(client, &sql, &args, &|e| page_failed(ledger, e));
    let rows = Rows::of_last_statement(&[pg_sys::INT4OID]);
    (0..rows.count).map(|row| winners[rows.int(row, 1).expect("a position") as usize - 1]).collect()
}

/// A page's targets (keyset order) as the arrays page_row.sql and progress_row.sql take.
pub(super) fn target_args(page: &Page, would_insert: &dyn Fn(usize) -> bool) -> [DatumWithOid<'static>; 6] {
    let items: Vec<_> = page.items().collect();
    [
        texts(items.iter().map(|item| Some(item.attempt.key.run_id.as_slice()))),
        integers(items.iter().map(|item| item.attempt.key.attempt)),
        integers(items.iter().map(|item| item.resource.ordinal)),
        texts(items.iter().map(|item| Some(item.resource.provider.as_str().as_bytes()))),
        texts(items.iter().map(|item| Some(item.resource.sandbox_id.as_slice()))),
        booleans((0..items.len()).map(would_insert)),
    ]
}

/// The page's last resource as the four cursor arguments (NULL on an empty page).
pub(super) fn next_cursor_args(next: Option<&After>) -> [DatumWithOid<'static>; 4] {
    [
        timestamptz_arg(next.map(|n| n.attempt.updated_at)),
        text_arg(next.map(|n| n.attempt.run_id.as_slice())),
        next.map(|n| n.attempt.attempt).into(),
        next.map(|n| n.ordinal).into(),
    ]
}

pub(super) fn next_of(page: &Page) -> Option<After> {
    page.last().map(|item| After { attempt: item.attempt.key.clone(), ordinal: item.resource.ordinal })
}

// ---------------------------------------------------------------------------
// The single-page functions

#[derive(Clone, Copy, PartialEq, Eq)]
enum PageKind {
    Apply,
    Preview,
}

fn page_function(
    kind: PageKind,
    batch_size: Option<i32>,
    after: Option<PgHeapTuple<'_, AllocatedByRust>>,
    ledger_schema: Option<Name>,
) -> Row {
    let limit = page_limit(batch_size);
    let after = after_position(after);
    let (ledger, access) = ledger(ledger_schema, kind == PageKind::Preview);
    if kind == PageKind::Apply {
        crate::shell::standby::refuse_writes("backfill_sandbox_operations");
    }
    access.run(|| Spi::connect_mut(|client| {
        let page = scan_page(client, &ledger, Rules::applied(limit), after);
        let winners = page.winners();
        let (inserted, would_insert): (i64, Box<dyn Fn(usize) -> bool>) = match kind {
            PageKind::Apply => {
                let inserted = insert_winners(client, &ledger, &page, &winners, true);
                let keys = inserted.keys.unwrap_or_default();
                let won: FastSet<usize> = winners.iter().copied().filter(|&i| keys.contains(&page.item(i).resource.operation_key())).collect();
                (inserted.count, Box::new(move |i| won.contains(&i)))
            }
            PageKind::Preview => {
                let present = existing(client, &ledger, &page, &winners);
                let won: FastSet<usize> = winners.iter().copied().filter(|i| !present.contains(i)).collect();
                (0, Box::new(move |i| won.contains(&i)))
            }
        };
        let next = next_of(&page);
        let mut args = vec![(page.scanned() as i64).into(), inserted.into(), page.has_more().into()];
        args.extend(next_cursor_args(next.as_ref()));
        args.extend(target_args(&page, &*would_insert));
        let table = run_kept(client, PAGE_ROW, &args, &|e| page_failed(&ledger, e));
        table.first().get_one::<Row>().ok().flatten().unwrap_or_else(|| error!("runtime_sandbox: building the backfill page row failed"))
    }))
}

/// One bounded page of the operation backfill, applied: the application's
/// `backfillRuntimeSandboxOperationsFromAttemptResources`.
#[pg_extern(volatile, parallel_unsafe, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
fn backfill_sandbox_operations(
    batch_size: default!(Option<i32>, 500),
    after: default!(Option<pgrx::composite_type!("runtime_sandbox.backfill_cursor")>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_page") {
    page_function(PageKind::Apply, batch_size, after, ledger_schema)
}

/// The same page as `backfill_sandbox_operations`, without writing.
#[pg_extern(stable, parallel_restricted, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
fn preview_sandbox_operation_backfill(
    batch_size: default!(Option<i32>, 500),
    after: default!(Option<pgrx::composite_type!("runtime_sandbox.backfill_cursor")>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_page") {
    page_function(PageKind::Preview, batch_size, after, ledger_schema)
}
