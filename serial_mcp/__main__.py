"""``python -m serial_mcp`` = ``serial-mcp``."""

import sys

from serial_mcp.cli import main

sys.exit(main())
