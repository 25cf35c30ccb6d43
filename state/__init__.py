"""The SQLite ledger: schema, item and operation state machines, reconciliation queries."""
