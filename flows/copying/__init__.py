"""The frame of the copying jobs (archive, backup): the runner's preamble and outcome, the flow's summary
artifact, the command's shape; each job brings only its own work (flows/archive, flows/backup)."""
