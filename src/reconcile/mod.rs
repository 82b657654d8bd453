//! Reconciliation of a provider inventory (Daytona) against the sandbox ledger.
