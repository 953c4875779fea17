"""progsum.engine."""
