"""The frame of every job: the run skeleton, options, per job a plain runner and a flow if any; the CLI."""
