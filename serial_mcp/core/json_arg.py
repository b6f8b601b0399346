"""A JSON value given as a command-line option (``--rx-framing '{"type": "binary", ...}'``)."""

from __future__ import annotations

import json
from typing import Any

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument


def json_option(text: str | None, name: str) -> Any:
    """``text`` parsed as JSON (None when the option was not given); bad JSON is ``invalid_argument``
    naming the option."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(messages.CLI_BAD_JSON.format(name=name, error=exc)) from None
