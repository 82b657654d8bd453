//! The application's environment tables, validated once per call: their schema and owner, and the statements
//! the managed functions run on them as that owner.

use super::*;

/// The application's schema, validated: a plain identifier that holds the
/// three tables, all owned by one role, which the caller may act as.
pub(super) struct App {
    pub(super) schema: SchemaName,
    /// The tables' owner: the statements run as it (shell::owner), so code
    /// attached to the tables never runs with the caller's privileges.
    pub(super) owner: pg_sys::Oid,
}

impl App {
    pub(super) fn open(app_schema: Option<Name>, function: &'static str) -> App {
        let Some(value) = app_schema else { Error::argument("app_schema", "must not be null").raise() };
        let schema = schema_name("app_schema", value.as_str()).or_raise();
        let install = format!("SELECT runtime_sandbox.install_environment_tables('{}')", schema.name);
        let (exists, missing, owner, foreign) = Spi::connect(|client| {
            let row = client
                .select(sql!("missing_tables.sql"), None, &[schema.name.as_str().into()])
                .unwrap_or_else(|e| failed("checking app_schema", e))
                .first();
            (
                row.get::<bool>(1).unwrap_or_else(|e| failed("checking app_schema", e)),
                row.get::<String>(2).unwrap_or_else(|e| failed("checking app_schema", e)),
                row.get::<i64>(3).unwrap_or_else(|e| failed("checking app_schema", e)),
                row.get::<String>(4).unwrap_or_else(|e| failed("checking app_schema", e)),
            )
        });
        if exists != Some(true) {
            Error::argument("app_schema", format!("schema {:?} does not exist", schema.name))
                .hint(format!("{install} creates it with the application's tables."))
                .raise();
        }
        if let Some(missing) = missing {
            Error::new(Kind::NotInstalled, format!("app_schema {:?} lacks the application's table(s) {missing}", schema.name))
                .detail("Managed environments work on the application's environments, built_in_managed_resources and companies tables.")
                .hint(format!("Point app_schema at the application's schema, or run {install} to create the tables."))
                .raise();
        }
        let owner = pg_sys::Oid::from(owner.unwrap_or_default() as u32);
        let owner_name = owner::role_name(owner);
        if let Some(foreign) = foreign {
            Error::new(
                Kind::UnusableLedger,
                format!("app_schema {:?}: {foreign}, not by the owner of environments ({owner_name})", schema.name),
            )
            .detail("The managed-environment functions run their statements as the owner of the application's tables, which must be one role.")
            .hint(format!("ALTER TABLE ... OWNER TO \"{owner_name}\"; for each of them."))
            .raise();
        }
        if !owner::may_act_as(owner) {
            Error::not_owner(function, &schema.name, &owner_name, &owner::role_name(owner::current_user()))
                .raise();
        }
        App { schema, owner }
    }

    /// Run `work` as the tables' owner, in a security-restricted operation.
    pub(super) fn as_owner<R>(&self, work: impl FnOnce() -> R) -> R {
        owner::as_owner(self.owner, work)
    }

    pub(super) fn sql(&self, template: &str) -> String {
        template.replace("@app@", &self.schema.quoted)
    }

    pub(super) fn rows<T>(
        &self,
        template: &str,
        args: &[DatumWithOid<'_>],
        mut read: impl FnMut(&SpiHeapTupleData<'_>) -> spi::Result<T>,
    ) -> Vec<T> {
        let query = self.sql(template);
        Spi::connect(|client| {
            let table = crate::shell::spi::execute(client, query.as_str(), None, args)?;
            table.map(|row| read(&row)).collect::<spi::Result<Vec<T>>>()
        })
        .unwrap_or_else(|e| failed(&format!("query on app_schema {:?}", self.schema.name), e))
    }

    /// The id the statement returned, if it touched a row.
    pub(super) fn returning_id(&self, template: &str, args: &[DatumWithOid<'_>]) -> Option<String> {
        self.rows(template, args, |row| row.get::<String>(1)).into_iter().next().flatten()
    }

    pub(super) fn run(&self, template: &str, args: &[DatumWithOid<'_>]) {
        crate::shell::spi::run_with_args(&self.sql(template), args)
            .unwrap_or_else(|e| failed(&format!("write to app_schema {:?}", self.schema.name), e));
    }

    pub(super) fn company_ids(&self, company_id: Option<pgrx::Uuid>) -> Vec<String> {
        match company_id {
            Some(id) => vec![id.to_string()],
            None => self.rows(sql!("companies.sql"), &[], |row| row.get::<String>(1)).into_iter().flatten().collect(),
        }
    }

    /// A row of `environments` (id, name, description, status, config, metadata).
    pub(super) fn environment(&self, row: &SpiHeapTupleData<'_>) -> spi::Result<Environment> {
        Ok(Environment {
            id: row.get::<String>(1)?.unwrap_or_default(),
            name: row.get::<String>(2)?.unwrap_or_default(),
            description: row.get::<String>(3)?,
            status: row.get::<String>(4)?.unwrap_or_default(),
            config: self.json_column("environments.config", row.get::<String>(5)?),
            metadata: self.json_column("environments.metadata", row.get::<String>(6)?),
        })
    }

    /// A row of `built_in_managed_resources` (id, company, resource, version,
    /// hash, defaults). Every company's binding usually records the same stock,
    /// so each distinct `defaults_json` text is read once per call (`seen`).
    pub(super) fn binding(
        &self,
        row: &SpiHeapTupleData<'_>,
        seen: &mut HashMap<String, Rc<serde_json::Value>>,
    ) -> spi::Result<Binding> {
        let defaults = match row.get::<String>(6)? {
            Some(text) => match seen.get(&text) {
                Some(value) => value.clone(),
                None => {
                    let value = Rc::new(self.json_column("built_in_managed_resources.defaults_json", Some(text.clone())));
                    seen.insert(text, value.clone());
                    value
                }
            },
            None => Rc::new(serde_json::Value::Null),
        };
        Ok(Binding {
            id: row.get::<String>(1)?.unwrap_or_default(),
            company_id: row.get::<String>(2)?.unwrap_or_default(),
            resource_id: row.get::<String>(3)?.unwrap_or_default(),
            stock_version: row.get::<String>(4)?,
            stock_hash: row.get::<String>(5)?.unwrap_or_default(),
            defaults,
        })
    }

    /// A jsonb column as the application's `JSON.parse` sees it (SQL NULL → null).
    pub(super) fn json_column(&self, column: &str, text: Option<String>) -> serde_json::Value {
        text.map_or(serde_json::Value::Null, |t| {
            js::parse(&t).unwrap_or_else(|e| {
                Error::new(Kind::LimitExceeded, format!("a value of {column} in app_schema {:?} cannot be read", self.schema.name))
                    .detail(e)
                    .hint("Managed-environment JSON is read as the application reads it, at most 128 levels deep.")
                    .raise()
            })
        })
    }

    pub(super) fn lock_sandbox_rows(&self) -> Vec<Environment> {
        self.rows(sql!("lock_sandbox_rows.sql"), &[], |row| self.environment(row))
    }

    pub(super) fn bindings(&self, company_ids: &[String], resource_id: Option<&str>) -> Vec<Binding> {
        if company_ids.is_empty() {
            return Vec::new();
        }
        let args: [DatumWithOid; 5] = [
            uuids(company_ids).into(),
            vocabulary::BUNDLE_KEY.into(),
            vocabulary::RESOURCE_KIND.into(),
            vocabulary::RESOURCE_KEY.into(),
            resource_id.map(str::to_owned).into(),
        ];
        let mut seen = HashMap::new();
        let mut rows =
            self.rows(sql!("bindings.sql"), &args, |row| Ok((timestamp(row, 7)?, self.binding(row, &mut seen)?)));
        // Oldest first: created_at (NULLs last, as ORDER BY puts them), then id
        // (uuid text sorts as the uuid). Sorted here, not by the query: its rows are wide.
        rows.sort_unstable_by(|(a_at, a), (b_at, b)| {
            a_at.is_none().cmp(&b_at.is_none()).then(a_at.cmp(b_at)).then_with(|| a.id.cmp(&b.id))
        });
        rows.into_iter().map(|(_, binding)| binding).collect()
    }

    /// (id, driver) of the row holding `name`.
    pub(super) fn name_owner(&self, name: &str) -> Option<(String, String)> {
        self.rows(sql!("name_owner.sql"), &[name.into()], |row| {
            Ok((row.get::<String>(1)?.unwrap_or_default(), row.get::<String>(2)?.unwrap_or_default()))
        })
        .into_iter()
        .next()
    }

    /// The lock-then-read rule needs the reads after the lock to see what is
    /// committed by then. READ COMMITTED gives each statement a fresh snapshot;
    /// REPEATABLE READ and SERIALIZABLE keep the transaction's, which may predate
    /// a concurrent pass this call waited for. There, what the call decides from
    /// (the sandbox rows, the row holding `name`, the companies' bindings) is
    /// read again with the newest committed data; any difference is a 40001.
    pub(super) fn require_current_snapshot(&self, company_ids: &[String], name: Option<&str>) {
        if !uses_transaction_snapshot() {
            return;
        }
        let query = self.sql(sql!("decision_inputs.sql"));
        let args: [DatumWithOid; 5] = [
            uuids(company_ids).into(),
            vocabulary::BUNDLE_KEY.into(),
            vocabulary::RESOURCE_KIND.into(),
            vocabulary::RESOURCE_KEY.into(),
            name.map(str::to_owned).into(),
        ];
        let seen = crate::shell::spi::get_one_with_args::<String>(&query, &args).unwrap_or_else(|e| failed("reading app_schema", e));
        let committed = read_with_latest_snapshot(&query, &args);
        if seen != committed {
            concurrent_change(
                "rows or bindings it decides from were committed after the transaction's snapshot",
                format!(
                    "At REPEATABLE READ and SERIALIZABLE the call reads with the transaction's snapshot, which predates \
                     its row locks; a concurrent transaction has since changed the sandbox environments or bindings \
                     in app_schema {:?}.",
                    self.schema.name
                ),
            )
            .raise();
        }
    }

    pub(super) fn write_bindings(&self, environment_id: &str, company_ids: &[String], bindings: &[Binding], write: &BindingWrite) {
        let targets = rules::binding_targets(company_ids, bindings, write.replace);
        if targets.is_empty() {
            return;
        }
        let args: [DatumWithOid; 8] = [
            uuids(&targets).into(),
            vocabulary::BUNDLE_KEY.into(),
            vocabulary::RESOURCE_KIND.into(),
            vocabulary::RESOURCE_KEY.into(),
            environment_id.into(),
            write.stock_version.as_str().into(),
            write.stock_hash.as_str().into(),
            js::to_text(&write.defaults).into(),
        ];
        let template = if write.replace { sql!("upsert_bindings.sql") } else { sql!("insert_missing_bindings.sql") };
        self.run(template, &args);
    }

    pub(super) fn rehash_bindings(&self, environment_id: &str, rehashed: &[BindingRehash]) {
        if rehashed.is_empty() {
            return;
        }
        let args: [DatumWithOid; 4] = [
            rehashed.iter().map(|r| r.binding_id.clone()).collect::<Vec<_>>().into(),
            environment_id.into(),
            rehashed.iter().map(|r| r.stock_hash.clone()).collect::<Vec<_>>().into(),
            rehashed.iter().map(|r| js::to_text(&r.defaults)).collect::<Vec<_>>().into(),
        ];
        self.run(sql!("rehash_bindings.sql"), &args);
    }
}

/// The first column of `query`'s first row, read with a snapshot of everything
/// committed now instead of the transaction's (as PostgreSQL's own foreign-key
/// checks do at REPEATABLE READ: ri_triggers.c, `detectNewRows`).
pub(super) fn read_with_latest_snapshot(query: &str, args: &[DatumWithOid<'_>]) -> Option<String> {
    let query = std::ffi::CString::new(query).expect("statements have no NUL");
    let mut types: Vec<pg_sys::Oid> = args.iter().map(DatumWithOid::oid).collect();
    let mut values: Vec<pg_sys::Datum> =
        args.iter().map(|a| a.datum().map_or(pg_sys::Datum::from(0usize), |d| d.sans_lifetime())).collect();
    let nulls: Vec<std::ffi::c_char> =
        args.iter().map(|a| if a.datum().is_some() { b' ' } else { b'n' } as std::ffi::c_char).collect();
    Spi::connect(|_| {
        // SAFETY: inside an SPI connection; the plan, the arguments and the result
        // live in SPI's memory until the connection ends, after we copied the text.
        unsafe {
            let plan = pg_sys::SPI_prepare(query.as_ptr(), types.len() as i32, types.as_mut_ptr());
            if plan.is_null() {
                failed("preparing the snapshot check", pg_sys::SPI_result);
            }
            pg_sys::CommandCounterIncrement();
            let status = pg_sys::SPI_execute_snapshot(
                plan,
                values.as_mut_ptr(),
                nulls.as_ptr(),
                pg_sys::GetLatestSnapshot(),
                std::ptr::null_mut(),
                true,
                false,
                1,
            );
            if status != pg_sys::SPI_OK_SELECT as i32 {
                failed("running the snapshot check", status);
            }
            let table = pg_sys::SPI_tuptable;
            if table.is_null() || (*table).numvals == 0 {
                return None;
            }
            let text = pg_sys::SPI_getvalue(*(*table).vals, (*table).tupdesc, 1);
            (!text.is_null()).then(|| std::ffi::CStr::from_ptr(text).to_string_lossy().into_owned())
        }
    })
}
