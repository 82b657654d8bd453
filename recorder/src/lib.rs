//! runtime-sandbox-recorder: list Daytona's sandboxes completely (every
//! configured organization, the scheduler's label scope, to the null cursor)
//! and record the listing with `runtime_sandbox.record_inventory_snapshot`,
//! so that `reconcile_daytona_latest` (a pg_cron job) reconciles with no
//! application running. A listing is recorded whole or not at all.
//!
//! The pure cores: `listing` (shapes, walk checks, mapping, coverage, waits),
//! `ranges` (the parallel listing's time ranges and their union),
//! `conninfo` (libpq's parameters), `pgpass`; `failure` (why nothing was
//! recorded, and the exit code) below everything; `daytona`, `record` and
//! `tls` are the I/O at the edges; `run` (the command line and the run) ties
//! them. This file only wires.

pub mod conninfo;
pub mod daytona;
pub mod failure;
pub mod listing;
pub mod pgpass;
pub mod ranges;
pub mod record;
pub mod run;
pub mod tls;
pub mod vars;

pub use failure::{exit, Failure};
pub use run::{run, Cli, Outcome, RoutingDomainFlag, DEFAULT_API_URL};

