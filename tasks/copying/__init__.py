"""What the copying jobs (archive, backup) share below their flows: the context and steps, the run report."""
