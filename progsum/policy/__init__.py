"""progsum.policy."""
