SELECT control.value::text FROM @ledger@.control AS control WHERE control.key = $1
