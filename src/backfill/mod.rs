//! Backfill paging: builds runtime_sandbox_operations from attempt JSON, one keyset page at a time.
