"""The migrate job: its options, its plain runner and its Prefect flow."""
