"""The frame of every job: the run skeleton, options declared once, per job a runner and a flow; the CLI."""
