"""The emulator's state, split per resource: a core registry and one backend per group of operations."""
