"""progsum.cli."""
