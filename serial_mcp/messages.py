"""Every user-facing string of serial-mcp: errors, tool and parameter descriptions, prompts.

Kept in one module so wording is reviewed in one place. Strings are ``str.format``
templates; callers fill them with keyword arguments.
"""

from __future__ import annotations

# --- engine & tools ----------------------------------------------------------------------------

BAD_HEX = "{field} is not valid hex: use pairs of hex digits such as '41 54 0d' (spaces allowed)."
BAD_BASE64 = "{field} is not valid base64: check the padding and alphabet, or send encoding 'hex'."
MATCH_EMPTY = "match.pattern is empty; give the text (or bytes) to wait for."
MATCH_BAD_REGEX = "match.pattern is not a valid regular expression ({error}); fix it or use mode 'literal'."
MATCH_NOT_OBJECT = "match must be an object like {{\"pattern\": \"OK\", \"mode\": \"literal\"}} or a plain string."
MATCH_UNKNOWN_KEY = "match has an unknown key {key!r}; allowed keys: {allowed}."
MATCH_NO_PATTERN = "match.pattern is required and must be a string."
MATCH_BAD_MODE = "match.mode {value!r} is not known; use one of: {allowed}."
BAD_BAUD = "baud_rate {value!r} is not valid; give a whole number from 1 to {max} (e.g. 9600 or 115200)."
BAD_DATA_BITS = "data_bits {value!r} is not valid; use 5, 6, 7 or 8."
BAD_PARITY = "parity {value!r} is not known; use one of: {allowed} (or N, E, O, M, S)."
BAD_STOP_BITS = "stop_bits {value!r} is not valid; use 1, 1.5 or 2."
BAD_FLOW = "flow_control {value!r} is not known; use one of: {allowed}."
PORT_EOF = "the port reported end of file (device unplugged or far end closed)"
PORT_NOT_FOUND = "port {port!r} does not exist; call list_ports to see the ports on this machine."
PORT_BUSY_OTHER = "port {port!r} is in use by another program; close that program (or its session) and retry."
PORT_PERMISSION = ("no permission to open {port!r}; add your user to the port's group "
                   "(often 'dialout' or 'uucp') and log in again.")
PORT_BAD_URL = "port {port!r} is not a valid device path or URL: {error}"
PORT_OPEN_FAILED = "could not open {port!r}: {error}"
CURSOR_BAD_NAME = ("cursor name {name!r} is not valid; use 1-64 letters, digits, '_', '.', ':' or '-', "
                   "starting with a letter or digit.")
CURSOR_TOO_MANY = "this connection already has {max} cursors; reuse an existing cursor name."
READ_BAD_FROM = ("from {value!r} is not valid; use 'cursor', 'now', 'buffer_start' or a non-negative "
                 "stream offset such as a previous next_offset.")
READ_FROM_FUTURE = "from {value} is beyond the newest byte (end_offset {end}); use 'now' to wait for new data."
READ_BAD_TIMEOUT = "timeout_ms {value!r} is out of range; use 0 (return at once) up to {max}."
READ_BAD_IDLE = "idle_ms {value!r} is out of range; use 1 up to {max}."
READ_BAD_MAX_BYTES = "max_bytes {value!r} is out of range; use 1 up to {max}."
CONNECTION_CLOSED = "connection {id!r} is closed; open the port again to get a new connection."
OPEN_NO_PORT = "port is empty; give a device path (/dev/ttyUSB0, COM3) or URL (socket://host:port, loop://)."
BAD_RX_BUFFER = "rx_buffer_size {value!r} is out of range; use {min} up to {max} bytes (default 262144)."
PORT_BUSY_HERE = ("port {port!r} is already open here as connection {id!r} (state {state}); use that connection, "
                  "or close it first.")
TOO_MANY_CONNECTIONS = "this server already has {max} open connections; close one first."
CONNECTION_NOT_FOUND = "no connection {id!r}; open connections: {known}. Call open(port) to create one."
BAD_ENCODING = "encoding {value!r} for {field} is not known; use one of: {allowed}."

# --- framing, parsers, checksums (core/framing, core/parsers, core/checksums) -------------------
