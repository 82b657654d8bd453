SELECT ROW($1::uuid, $2, $3::runtime_sandbox.managed_stock_status, $4, $5, $6, $7, $8, $9::uuid[])
       ::runtime_sandbox.managed_environment_reconciliation
