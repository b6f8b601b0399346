"""One agent's serial-mcp engine in a process of its own (its labgrid identity is its environment's
``LG_USERNAME``/``LG_HOSTNAME``): reads commands on stdin, answers one JSON line each on stdout.

``open PORT`` → ``{"ok": true, "id": …}`` or ``{"code": …, "message": …}``; ``transact`` →
``{"ok": true, "text": …}``; ``close`` → ``{"ok": true}``; end of input ends the process.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from serial_mcp.api import SyncConnection, SyncEngine
from serial_mcp.errors import SerialMcpError


def main() -> None:
    conn: SyncConnection | None = None
    with SyncEngine() as eng:  # the coordinator comes from LG_COORDINATOR, as labgrid's own tools take it
        for line in sys.stdin:
            command, _, arg = line.strip().partition(" ")
            answer: dict[str, Any]
            try:
                if command == "open":
                    conn = eng.open(arg)
                    answer = {"ok": True}
                elif command == "transact" and conn is not None:
                    result = conn.transact("AT\r", match="OK", timeout_ms=10000)
                    answer = {"ok": True, "text": result.read.data}
                elif command == "close" and conn is not None:
                    conn.close()
                    conn = None
                    answer = {"ok": True}
                else:
                    answer = {"code": "bad_command", "message": line}
            except SerialMcpError as exc:
                answer = {"code": str(exc.code), "message": exc.message}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
