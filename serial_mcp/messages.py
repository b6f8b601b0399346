"""Every user-facing string of serial-mcp: errors, tool and parameter descriptions, prompts.

Kept in one module so wording is reviewed in one place. Strings are ``str.format``
templates; callers fill them with keyword arguments.
"""

from __future__ import annotations

# --- engine & tools ----------------------------------------------------------------------------

# --- framing, parsers, checksums (core/framing, core/parsers, core/checksums) -------------------
