AND (attempt.updated_at, attempt.run_id, attempt.attempt) >= ($1, $2, $3) AND (attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal) > ($1, $2, $3, $4)
