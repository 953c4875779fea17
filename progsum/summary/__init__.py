"""progsum.summary."""
