"""The vocabulary every package shares: the item model, field rules and secret redaction."""
