"""Persistent stores shared by every serial-mcp process on the machine (device profiles)."""
