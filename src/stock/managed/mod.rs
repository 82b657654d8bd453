//! Managed sandbox environment reconciliation on the application's tables.
