"""Files serial-mcp keeps on disk: device profiles (shared by every process) and captures."""
