//! The errors of managed environments and stock hashes, as a client sees them:
//! SQLSTATE, message, DETAIL and HINT (conditions the code foresees are never XX000).
mod common;

use postgres::Client;

#[derive(Debug)]
struct Raised {
    code: String,
    message: String,
    detail: Option<String>,
    hint: Option<String>,
}

fn raised(c: &mut Client, sql: &str) -> Raised {
    let err = c.batch_execute(sql).expect_err(sql);
    let db = err.as_db_error().unwrap_or_else(|| panic!("{sql}: {err}"));
    Raised {
        code: db.code().code().into(),
        message: db.message().into(),
        detail: db.detail().map(Into::into),
        hint: db.hint().map(Into::into),
    }
}

#[test]
fn managed_errors_name_their_class_and_what_to_do() {
    let db = common::fresh_database("managed_errors");
    let mut c = common::connect(&db);
    c.batch_execute("CREATE SCHEMA half; CREATE TABLE half.environments (id uuid)").unwrap();

    // Tables missing: 42P01, with the call that installs them.
    for sql in [
        "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'half')",
        "SELECT runtime_sandbox.archive_managed_environment('daytona', app_schema => 'half')",
        "SELECT * FROM runtime_sandbox.managed_environment_drift('half')",
    ] {
        let e = raised(&mut c, sql);
        assert_eq!(e.code, "42P01", "{sql}: {e:?}");
        assert_eq!(e.message, "runtime_sandbox: app_schema \"half\" lacks the application's table(s) built_in_managed_resources, companies");
        assert!(e.detail.as_deref().is_some_and(|d| d.contains("environments, built_in_managed_resources and companies")), "{e:?}");
        assert!(e.hint.as_deref().is_some_and(|h| h.contains("SELECT runtime_sandbox.install_environment_tables('half')")), "{e:?}");
    }

    // A schema that does not exist is a bad argument (22023), with the same remedy.
    let e = raised(&mut c, "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'nope')");
    assert_eq!((e.code.as_str(), e.message.as_str()), ("22023", "runtime_sandbox: invalid argument app_schema: schema \"nope\" does not exist"));
    assert!(e.hint.as_deref().is_some_and(|h| h.contains("install_environment_tables('nope')")), "{e:?}");

    // The name held by a non-sandbox row: 23505, as the application's error, with what to do.
    c.batch_execute(
        "SELECT runtime_sandbox.install_environment_tables('public');
         INSERT INTO environments (name, driver) VALUES ('Daytona', 'local');",
    )
    .unwrap();
    let e = raised(&mut c, "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona')");
    assert_eq!(e.code, "23505");
    assert_eq!(
        e.message,
        "runtime_sandbox: failed to ensure managed sandbox environment: environment \"Daytona\" already exists with driver \"local\""
    );
    assert!(e.detail.is_some() && e.hint.is_some(), "{e:?}");

    // Arguments stay 22023 with their message.
    let e = raised(&mut c, "SELECT runtime_sandbox.archive_managed_environment(NULL)");
    assert_eq!((e.code.as_str(), e.message.as_str()), ("22023", "runtime_sandbox: invalid argument provider: must not be null"));
    let e = raised(&mut c, "SELECT runtime_sandbox.install_environment_tables('a-b')");
    assert_eq!(e.code, "22023");

    // Stored JSON deeper than the application's reader: 54000 naming the column, not XX000.
    c.batch_execute("DELETE FROM environments").unwrap();
    c.batch_execute(&format!(
        "INSERT INTO environments (name, driver, config, metadata)
         VALUES ('Daytona', 'sandbox', '{}{}'::jsonb, '{{\"managedByPaperclip\": true}}')",
        "[".repeat(200),
        "]".repeat(200)
    ))
    .unwrap();
    let e = raised(&mut c, "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona')");
    assert_eq!(e.code, "54000", "{e:?}");
    assert!(e.message.contains("environments.config"), "{e:?}");
}

#[test]
fn stock_hash_of_text_that_is_not_utf8_is_22021() {
    // Only a database whose encoding is not UTF8 can store such a jsonb string.
    let name = "managed_errors_sql_ascii";
    let mut admin = common::connect("postgres");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"))
        .unwrap();
    let mut c = common::connect(name);
    c.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap();
    let e = raised(&mut c, r#"SELECT runtime_sandbox.stock_hash(E'{"k": "\xff"}'::jsonb)"#);
    assert_eq!(e.code, "22021", "{e:?}");
    assert!(e.hint.as_deref().is_some_and(|h| h.contains("UTF8")), "{e:?}");
    admin.batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)")).unwrap();
}
