"""The setup job: its options, its plain runner and its Prefect flows."""
