SELECT ROW($1::uuid, $2, $3::uuid, $4, $5)::runtime_sandbox.managed_environment_archive
