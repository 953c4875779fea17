"""progsum.judge."""
