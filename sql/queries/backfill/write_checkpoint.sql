-- As the application writes it: the value only (control.updated_at keeps its default).
INSERT INTO @ledger@.control (key, value) VALUES ($1, $2::jsonb)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
