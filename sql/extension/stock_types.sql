-- How a managed resource relates to its stock baseline (the application's
-- ManagedResourceStockStatus). managed_resource_status (Rust, src/stock/shell.rs)
-- returns it; the labels are StockStatus::as_str.
CREATE TYPE @extschema@.managed_stock_status AS ENUM (
    'missing', 'stock_current', 'stock_update_available', 'operator_modified'
);
