-- The application's schema, when install_environment_tables finds none (@app@: the quoted app_schema).
CREATE SCHEMA @app@
