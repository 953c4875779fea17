"""progsum.contract."""
