"""progsum.state."""
