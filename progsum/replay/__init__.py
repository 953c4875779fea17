"""progsum.replay."""
