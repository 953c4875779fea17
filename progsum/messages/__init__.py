"""progsum.messages."""
