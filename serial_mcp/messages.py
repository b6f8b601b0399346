"""Every user-facing string of serial-mcp: errors, tool and parameter descriptions, prompts.

Kept in one module so wording is reviewed in one place. Strings are ``str.format``
templates; callers fill them with keyword arguments.
"""

from __future__ import annotations

# --- engine & tools ----------------------------------------------------------------------------

BAD_HEX = "{field} is not valid hex: use pairs of hex digits such as '41 54 0d' (spaces allowed)."
BAD_BASE64 = "{field} is not valid base64: check the padding and alphabet, or send encoding 'hex'."
MATCH_EMPTY = "match.pattern is empty; give the text (or bytes) to wait for."
MATCH_NOT_OBJECT = 'match must be an object like {"pattern": "OK", "mode": "literal"} or a plain string.'
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
PORT_PERMISSION = (
    "no permission to open {port!r}; add your user to the port's group "
    "(often 'dialout' or 'uucp') and log in again."
)
PORT_BAD_URL = "port {port!r} is not a valid device path or URL: {error}"
RFC2217_CONTROL_HINT = (
    "the RFC 2217 server did not confirm a DTR/RTS/BREAK change (ser2net does this for devices "
    "without modem lines); open {url} instead to send line changes without waiting for confirmation"
)
PORT_OPEN_FAILED = "could not open {port!r}: {error}"
CURSOR_BAD_NAME = (
    "cursor name {name!r} is not valid; use 1-64 letters, digits, '_', '.', ':' or '-', "
    "starting with a letter or digit."
)
CURSOR_TOO_MANY = "this connection already has {max} cursors; reuse an existing cursor name."
READ_BAD_FROM = (
    "from {value!r} is not valid; use 'cursor', 'now', 'buffer_start', 'last_boot', {{event: SEQ}} or a"
    " non-negative stream offset such as a previous next_offset."
)
READ_FROM_FUTURE = (
    "from {value} is beyond the newest byte (end_offset {end}); use 'now' to wait for new data."
)
READ_BAD_TIMEOUT = "timeout_ms {value!r} is out of range; use 0 (return at once) up to {max}."
READ_BAD_IDLE = "idle_ms {value!r} is out of range; use 1 up to {max}."
READ_BAD_MAX_FRAMES = "max_frames {value!r} is out of range; use 1 up to {max}."
READ_BAD_MAX_BYTES = "max_bytes {value!r} is out of range; use 1 up to {max}."
CONNECTION_CLOSED = "connection {id!r} is closed; open the port again to get a new connection."
OPEN_NO_PORT = "port is empty; give a device path (/dev/ttyUSB0, COM3) or URL (socket://host:port, loop://)."
BAD_RX_BUFFER = "rx_buffer_size {value!r} is out of range; use {min} up to {max} bytes (default 262144)."
PORT_OPENING_HERE = "port {port!r} is being opened by another call on this server; use that connection once it is open."
PORT_BUSY_HERE = (
    "port {port!r} is already open here as connection {id!r} (state {state}); use that connection, "
    "or close it first."
)
TOO_MANY_CONNECTIONS = "this server has {n} open connection(s) (--max-connections {max}) and {free} of its {files} file descriptors free (a port holds 9); close one, or restart the server with a higher --max-connections or file limit (`ulimit -n`)."
CONNECTION_NOT_FOUND = "no connection {id!r}; open connections: {known}. Call open(port) to create one."
WRITE_EMPTY = "data is empty; give the text (or hex/base64 bytes) to send."
NOT_CONNECTED = (
    "connection {id!r} is {state} (last error: {error}); nothing was sent. {advice}"
)
WRITE_TIMEOUT = (
    "writing to {id!r} timed out (flow control holding the line?); check flow_control and cabling."
)
WRITE_FAILED = "writing to {id!r} failed: {error}; the connection is now disconnected."
IO_ERROR = "the port reported an I/O error: {error}. Check get_status; the device may be unplugged."
INTERNAL_ERROR = "serial-mcp hit an internal error ({error}); the server keeps running. Please report it."
UNKNOWN_TOOL = "{detail}; tools/list shows the tools this server has."
ARGUMENT_REJECTED = "invalid arguments: {detail}"
UNKNOWN_ARGUMENT = "{tool} has no argument {key!r}{hint}; its arguments are: {allowed}."
DID_YOU_MEAN = " (did you mean {name!r}?)"
SIM_UNKNOWN = "simulated port {port!r} is not known; built-in simulations: {kinds} (e.g. sim://modem)."
RECONNECT_BAD = (
    'reconnect must be true, false, or an object like {"max_attempts": 10, '
    '"initial_delay_ms": 200, "max_delay_ms": 5000, "backoff": 2}.'
)
RECONNECT_RANGE = (
    "reconnect values out of range: max_attempts 0..10000 (0 = until closed), "
    "1 <= initial_delay_ms <= max_delay_ms <= 600000, backoff 1..10."
)
RECONNECT_GAVE_UP = (
    "gave up reconnecting after {n} attempt(s); last error: {error}. Call reconnect to try again."
)
RECONNECT_UNSUPPORTED = "connection {id!r} cannot be reopened by this server."
RECONNECT_FAILED = "reopening {id!r} failed: {error}"
PACE_BAD = 'pace must be an object like {"inter_byte_us": 500} or {"inter_line_ms": 20}.'
PACE_RANGE = "pace values must be whole numbers: inter_byte_us 0..{byte}, inter_line_ms 0..{line}."
RESET_BAD = (
    'reset must be null or an object like {"dtr": false, "rts": true, "hold_ms": 100} with true/false levels.'
)
RESET_NO_LINE = "reset names no line; give dtr and/or rts (the level held during the pulse), or pass reset: null to only arm the capture."
RESET_HOLD = "reset.hold_ms must be a whole number from 1 to {max}."
LINES_NONE = "give dtr and/or rts (true = asserted)."
BREAK_RANGE = "duration_ms must be a whole number from 1 to {max}."
BREAK_PROGRESS = "holding BREAK"
SETTINGS_REJECTED = "the port refused the new settings ({error}); the previous settings are back in place."
LOG_BAD_LIMIT = "limit must be 1..{max}."
LOG_BAD_SINCE = "since must be a non-negative seq number (a previous last_seq)."
CAPTURE_NAME_EMPTY = "path is empty; give a bare file name like 'session-1.jsonl'."
CAPTURE_NAME_LONG = "path is too long; capture names are at most {max} characters."
CAPTURE_NAME_PATH = "path {name!r} is not a bare file name; give only a name like 'session-1.jsonl' (it goes into the capture directory)."
CAPTURE_NAME_SHAPE = "path {name!r} is not allowed; use letters, digits, '.', '_' or '-', starting with a letter or digit, ending in .jsonl."
CAPTURE_NAME_RESERVED = "path {name!r} uses a reserved device name; choose another name."
CAPTURE_DISABLED = (
    "capture files are disabled: start serial-mcp with --capture-dir DIR (or set SERIAL_MCP_CAPTURE_DIR) "
    "to export and record sessions."
)
CAPTURE_EXISTS = (
    "a capture named {name!r} already exists; captures are never overwritten — choose another name."
)
CAPTURE_QUOTA_FILES = "the capture directory already holds its maximum of {max} files; delete some or raise --capture-max-files."
CAPTURE_QUOTA_BYTES = (
    "the capture would need {need} bytes but only {room} are allowed (per file {file}, total {total}); "
    "delete captures or raise --capture-max-file-bytes / --capture-max-total-bytes."
)
RECORD_NEEDS_PATH = "record start needs path: a bare file name like 'session.jsonl'."
NOT_RECORDING = "connection {id!r} is not recording."
ALREADY_RECORDING = "connection {id!r} is already recording to {path}; stop it first."
ALLOW_EMPTY = "the allowlist is empty; give patterns like /dev/ttyUSB*, usb:0403:6001 or socket://host:*, or omit --allowlist."
ALLOW_BAD = "allowlist pattern {pattern!r} is not valid; use an absolute path glob, a URL glob (scheme://...) or usb:VID:PID[:SERIAL]."
ALLOW_BAD_USB = "allowlist pattern {pattern!r} is not a valid USB identity; use usb:VID:PID or usb:VID:PID:SERIAL with 4-digit hex ids."
NOT_ALLOWED = (
    "port {port!r} (resolves to {real}) is not on this server's allowlist; ask the operator to add it."
)
READ_ONLY = "{tool} is refused: this server runs in --read-only mode (monitoring only; reading tools work)."
PORT_AMBIGUOUS = "port {port!r} matches several ports: {candidates}; give the exact device path."
RESPOND_BAD = (
    'respond must be an object like {"on": "Hit any key", "send": " ", "times": 1} '
    "(on = a match, send = non-empty data)."
)
RESPOND_TIMES = "respond.times must be a whole number from 1 to {max}."
PROFILES_DISABLED = "device profiles are not available on this server."
PROFILE_NO_SUCH = "no profile named {name!r}; list_profiles shows the stored ones."
PROFILE_NO_UNIQUE = "profile {name!r} must match exactly one live port, but matches: {ports}. Connect the device, or open the port directly."
PROFILE_IN_USE = "profile {name!r} is in use by connection(s) {ids}; close them first."
CONFIGURE_ONE_OF = "give exactly one of profile or connection_id."
CONFIGURE_LIVE_FIELDS = (
    "a connection can change {key!r} only through its profile; live fields are: {allowed}."
)
BAUD_ARGS = "give 1..{max} candidate rates and window_ms 50..10000."
TRANSFER_NEEDS_DATA = "direction send needs data (the file contents, base64 by default)."
TRANSFER_TOO_BIG = "the file is larger than {max} bytes."
TRANSFER_PROGRESS = "block {block}"
BAD_RS485 = (
    "rs485 must be an object with any of: {allowed} (levels true/false, delays in seconds 0..1), "
    'e.g. {{"rts_level_for_tx": true, "rts_level_for_rx": false}}.'
)
BAD_LOW_LATENCY = "low_latency must be true or false."
RS485_UNSUPPORTED = (
    "port {port!r} cannot switch to RS-485 mode ({error}): the driver lacks TIOCSRS485 support "
    "(Linux only, and only UARTs/adapters that implement it). Open without rs485, or drive RTS yourself."
)
SCREEN_SIZE = 'screen must be {{"cols": C, "rows": R}} with {min}..{cols} columns and {min}..{rows} rows.'
BAD_ENCODING = "encoding {value!r} for {field} is not known; use one of: {allowed}."

# --- command line ---------------------------------------------------------------------------------

CLI_UNKNOWN_OPTION = "unrecognized option {option}{hint}"
CLI_DID_YOU_MEAN = "; did you mean {option}?"
CLI_DESCRIPTION = (
    "MCP server for serial ports. Without a command it serves MCP over stdio; configure it in "
    "your agent's MCP client as the command 'serial-mcp'."
)
CLI_SERVE = "serve MCP over stdio (the default)"
CLI_DEMO = "run a scripted agent session against a built-in simulated device and print the transcript"
CLI_DEMO_PORT = "port to use (default sim://modem, a simulated AT modem with a GPS)"
# issue 42: one CLI dialect, and a start that talks to a person
CLI_PORT = (
    "the port: a device path (/dev/ttyUSB0, COM3) or a URL: sim://modem (a simulator: sim://echo, "
    "sim://reboot-board, ... see docs/simulated-devices.md), socket://HOST:PORT, rfc2217://HOST:PORT, "
    "replay://FILE.jsonl, labgrid://PLACE"
)
CLI_TOP_PORT_NOT_A_NUMBER = (
    "--port {value!r} before the command is the HTTP port of --transport http (a number); a serial "
    "port goes after the command: serial-mcp {command} {example}"
)
# a tool's words in a CLI message become the command a person types
CLI_TOOL_WORDS = {"call list_ports": "run 'serial-mcp ports'"}
CLI_SERVING_STDIO = (
    "serial-mcp {version} serves MCP over stdio and waits for a client: an MCP client launches it "
    '(config: {{"command": "serial-mcp"}}, see README). Try serial-mcp demo; serial-mcp --help lists '
    "the commands. Ctrl-D ends it."
)
CLI_SERVING_HTTP = "serial-mcp {version}: serving MCP over HTTP at {url}; Ctrl-C ends it"

DEMO_TOOLS = "serial-mcp server started over stdio; {n} tools: {names}"

OPT_CONFIG = "TOML config file with any of the options below (keys as in the option names, e.g. capture_dir)"
OPT_LOG_LEVEL = "log level for stderr"
OPT_TRANSPORT = "stdio (default) or http (streamable HTTP at /mcp)"
OPT_HOST = "HTTP bind address; anything but loopback needs --auth-token"
OPT_PORT = "HTTP port for --transport http (a serial port goes after the command: serial-mcp demo --port /dev/ttyUSB0)"
OPT_AUTH_TOKEN = "bearer token HTTP clients must send (Authorization: Bearer TOKEN)"
OPT_READ_ONLY = "monitor mode: tools that write, drive lines or change settings are refused"
OPT_ALLOWLIST = "comma-separated ports that may be opened: path globs, URL globs, usb:VID:PID[:SERIAL]"
HTTP_NEEDS_TOKEN = "--host {host} is not a loopback address: set --auth-token (or SERIAL_MCP_TOKEN) so the server is not open to the network"
HTTP_UNAUTHORIZED = '{"error": "unauthorized", "message": "send Authorization: Bearer <token>"}'
CAPTURE_DIR_UNUSABLE = (
    "capture directory {dir} cannot be used ({error}); give --capture-dir (or capture_dir) a directory "
    "this user can create and write, or leave it unset to disable capture files."
)
OPT_CAPTURE_DIR = "directory for capture files (export_log, record, list_captures); unset = disabled"
OPT_CAPTURE_MAX_FILE = "largest capture file in bytes"
OPT_CAPTURE_MAX_TOTAL = "most bytes all capture files may use together"
OPT_CAPTURE_MAX_FILES = "most capture files in the directory"
OPT_PROFILES_PATH = "device profiles TOML file (default: the user config dir's serial-mcp/profiles.toml)"
CONFIG_BAD_VALUE = "{where}: {value!r} is not valid ({error})"
CONFIG_BAD_CHOICE = "{where}: {value!r} is not one of {allowed}"
CONFIG_UNREADABLE = "cannot read config file {path}: {error}"
CONFIG_NOT_TOML = "config file {path} is not valid TOML: {error}"
CONFIG_UNKNOWN_KEY = "config file {path} has an unknown key {key!r}; see serial-mcp --help for the options"

CLI_RECORD = "record a port to a capture file until Ctrl-C (no MCP needed)"
CLI_RECORD_OUTPUT = "capture file to create (never overwritten)"
CLI_MIRROR = "show a port on a PTY so a person can watch it (picocom, tio, screen) until Ctrl-C"
CLI_MIRROR_RW = "let the person type to the device too"
CLI_MIRRORING = "mirroring {port} on {path} ({mode}); Ctrl-C ends it"
CLI_REPLAY = "play a capture file to stdout, or into a PTY (--pty) that other programs can open"
CLI_REPLAY_FILE = "capture file (JSONL)"
CLI_REPLAY_PTY = "create a PTY, print its path, play into it and answer writes (respond mode)"
CLI_DECODE = "decode a capture (or a raw byte file) offline through the same framing and parsers"
CLI_DECODE_FILE = "capture file (JSONL) or raw byte file"
CLI_JSON_OPTION = "JSON object, as the tool parameter of the same name"
CLI_BAD_JSON = "{name} is not valid JSON: {error}"
CLI_RECORDING = "recording {port} to {path}; press Ctrl-C to stop"
CLI_RECORDED = "recorded {n} event(s), {b} bytes to {path} ({reason})"
CLI_REPLAY_PTY_READY = (
    "replaying into {path} ({mode}); open it with picocom, pyserial or your own software. Ctrl-C ends it."
)
CLI_REPLAY_DONE = "the recording has been played completely into {path}; Ctrl-C to end"
CLI_REPLAY_MISMATCHES = "{n} host write(s) differed from the recording (respond mode)"

# --- tool & parameter descriptions --------------------------------------------------------------

SERVER_INSTRUCTIONS = (
    "serial-mcp talks to serial ports (USB-serial, UARTs, socket:// and rfc2217:// network ports). "
    "A question to a port is one call: transact(port=P, data='AT\\r') (read, write and capture_boot take "
    "port too; baud_rate and protocol if needed) uses your connection to P or opens one, held: it closes "
    "after 60 s unused (--held-idle-s) unless open(P) adopts it. For a long session: open(port, baud_rate) "
    "-> transact/write/read(connection_id) -> close; list_ports shows USB ports. What is on a port, and "
    "how to talk to it: identify(ports=[...]) listens (probe=true pokes safely) and gives the open arguments. "
    "Received bytes are kept in a ring buffer per connection with absolute offsets; read consumes "
    "through a cursor ('default' unless you name your own) and reports bytes_lost if the ring overran. "
    "Use match to wait for a pattern, timeout_ms to bound waits; a plain read returns once the line is idle. "
    "Payloads are utf8 text unless you ask for hex or base64; a few non-UTF-8 bytes come back as \\xNN "
    "(encoding utf8_escaped), mostly binary data as hex, never lost. "
    "Dialogs: transact(steps=[{send, expect}]); "
    "open(respond=[{on, send}]) answers a prompt (e.g. stop autoboot) however late your first read comes. "
    "No device at hand? replay://captures/FILE.jsonl?mode=instant|respond&speed=N&loop=1 replays a recorded "
    "session, and the built-in simulators open like any port:\n"
    "- sim://modem: AT modem (AT, ATI, AT+CSQ, AT+CPIN?, ATZ, ATE0, AT+CMEE=1; unknown -> ERROR)\n"
    "- sim://echo: returns every byte written\n"
    "- sim://slow-modem: AT modem with echo, replies in parts 20-150 ms apart, URCs inside them\n"
    "- sim://reboot-board: U-Boot countdown (?bootdelay=0-9), loader '=> ', shell '# ', reboot\n"
    "- sim://micropython: MicroPython REPL with raw REPL and raw-paste\n"
    "- sim://esp32-rom: ESP32 ROM loader + 4 MB flash; esptool --no-stub via open(mirror='rfc2217+esp-reset')"
)
D_LIST_PORTS = "List serial ports on this machine with USB identity (vid, pid, serial). Start here."
D_LIST_CONNECTIONS = "List open connections with state and byte counters."
D_OPEN = "Open a port for a long session (/dev/ttyUSB0, COM3, socket://h:p, rfc2217://h:p, sim://KIND, replay://f.jsonl), or keep one a call by port holds. 115200 8N1. rx_framing/rx_parser/tx_framing/pace: defaults, as in read/write."
D_CLOSE = "Close a connection and release the port."
D_GET_STATUS = "State, settings, counters, ring offsets, cursors, bytes lost, modem lines (null if none)."
D_READ = "Read received bytes (of a port, or a connection_id) from a cursor or offset. Ends on match, max_bytes, idle_ms quiet, or timeout_ms."
D_WRITE = "Send bytes (utf8 text, or hex/base64); add line endings yourself. port, protocol: as in read."
D_TRANSACT = "Ask a port in one call: transact(port, data) writes, then reads the reply from a mark taken just before the write (never misses a fast reply). Options as in write and read; naming no end, it ends on a final (AT, parser, a packet) or 500 ms quiet after the echo."
D_FLUSH = "Discard unread input of a cursor, the OS output queue, or both."

D_CAPTURE_BOOT = "Reset (DTR/RTS pulse or send) and capture only the output that follows, atomically. port and read options as in read."
D_RECONNECT = (
    "Reopen the port of a connection (after an unplug or to recover); the ring and offsets carry on."
)
D_SET_DTR_RTS = "Set the DTR and/or RTS output lines (e.g. reset or boot-mode pins)."
D_SET_FLOW = "Switch flow control live: none, software (XON/XOFF) or hardware (RTS/CTS)."
D_SEND_BREAK = "Hold a BREAK condition on TX for duration_ms, then release it (released even if cancelled)."
D_RECONFIGURE = (
    "Change UART settings live (baud_rate, data_bits, parity, stop_bits, flow_control); validated first."
)
D_COMPUTE_CHECKSUM = "Checksum or CRC of data: xor, lrc, sum8, fletcher16, adler32, any CRC catalogue model."
D_GET_LOG = "Event log: open/close, rx/tx bytes, lines, BREAK, config, errors."
D_CLEAR_LOG = "Empty the event log of a connection (sequence numbers keep increasing)."
P_LOG_LIMIT = "Most events to return (default 100, max 1000)."
P_LOG_SINCE = "Return events after this seq (from a previous last_seq); omit for the newest."
P_LOG_PAYLOADS = "Include rx/tx bytes (default true)."
D_EXPORT_LOG = (
    "Write the event log to a capture file (replayable) in the capture directory; never overwrites."
)
D_RECORD = "Record a connection continuously to a capture file: action start (with path), stop or status."
D_LIST_CAPTURES = "List capture files in the capture directory (name, size, created, port, duration)."
P_CAPTURE_NAME = "Bare file name in the capture directory, e.g. 'boot-1.jsonl'."
P_NOTE = "Free text stored in the capture header."
P_RECORD_ACTION = "start, stop or status (default)."
D_LIST_PROFILES = "Stored device profiles (selector, defaults, revision, last used)."
D_OPEN_PROFILE = "Open the one live port that matches a profile's selector, with the profile's settings."
D_SAVE_PROFILE = "Remember a connection's settings as a profile for its device (overwrite to replace)."
D_DELETE_PROFILE = "Delete a profile (refused while a connection uses it)."
D_CONFIGURE = "Change a profile's defaults or a connection's settings (live, saved to its profile); exactly one of the two."
D_ROLLBACK = "Restore an earlier revision of a profile as a new revision."
P_PROFILE = "Profile name."
P_EXPECTED_REVISION = "Refuse if the profile's revision differs (compare-and-swap)."
P_OVERWRITE = "Replace an existing profile of that name."
P_DEFAULTS = "Fields to change: baud_rate, data_bits, parity, stop_bits, flow_control; a connection also respond (standing rules, [] clears); profiles also protocol, framings, pace ..."
P_TO_REVISION = "Revision to restore (see the profile's history)."
P_PROFILE_MODE = "auto (default) or none: remember this device's settings in a profile."
P_CONNECTION_ID = "From open (or the port name)."
# issue 39: a question to a port is one call (engine/held.py)
P_ON_PORT = "Instead of connection_id: a port as in open. Uses your connection to it, or opens one, held: closed after idle unless open adopts it."
PORT_OR_CONNECTION = "{tool} needs connection_id (from open) or port (a device path or URL: its connection is used, or one is opened)."
PORT_AND_CONNECTION = "connection_id {id!r} is on {on!r}, not port {port!r}; give one of the two."
HELD_NOTE = "{id} held: closes after {s:g} s idle; open(port) adopts it"
HELD_SETTINGS_DIFFER = (
    "connection {id!r} to {port!r} has {name} {now}, not {given}; change it with reconfigure(connection_id={id!r}), "
    "or close it first."
)
HELD_ADOPT_AS_IS = "open adopts held connection {id!r} as it is, without {names}; open(port) alone, or close {id!r} first."
OPT_HELD_IDLE_S = "seconds a connection opened by read/write/transact/capture_boot(port=...) stays open unused"
P_PORT = "Device path or URL, or a USB serial number."
P_RX_BUFFER = "RX ring size in bytes (default 262144)."
P_FROM = "'cursor' (default), 'now', 'buffer_start', 'last_boot', {event: seq} or an absolute offset."
P_CURSOR = "Cursor name (default 'default'); a new name starts its own cursor."
P_TIMEOUT_MS = "Longest wait, ms (default 1000; 0 = no wait)."
P_IDLE_MS = (
    "Return once quiet this long after data (read: default 100; none with match, until or max_frames)."
)
P_MAX_BYTES = "Most bytes to return (default 65536)."
P_MATCH = "Stop at this: a string or {pattern, mode: literal|regex|glob, pattern_encoding, ansi: keep|ignore}."
P_ENCODING_OUT = "utf8 (default; a few invalid bytes as \\xNN: utf8_escaped; mostly binary data: hex), hex or base64."
P_ENCODING_IN = "Encoding of data: utf8 (default; file_transfer: base64), hex or base64."
P_ENCODING_BOTH = "Encoding of data and of the reply: utf8 (default), hex or base64."
P_READ_ENCODING = "Reply encoding if it differs from encoding."
P_DATA = "Bytes to send (in encoding); add line endings yourself."
P_MAX_FRAMES = "Most frames to return (default 100; lines if unframed); waits for them without idle_ms."
P_PROTOCOL = "Preset: at_command, nmea0183, gnss, modbus_ascii, modbus_rtu, json_lines, ndjson, slip, cobs, grbl; raw = none."
P_RX_FRAMING = "{type: line|delimiter|length_prefixed|start_end|slip|cobs|binary|ubx|rtcm3|gnss|modbus_rtu|nmea|none, ...}: return frames[]. binary: sync (hex|list), length {offset,size,endianness,counts payload|frame|from,from,adjust,mask}|int, header_length, checksum {algorithm,endianness,start,stop,position}, max_length."
P_TX_FRAMING = "{type: line|delimiter|length_prefixed|start_end|slip|cobs|nmea|modbus_ascii|modbus_rtu|ubx|binary|none, ...}; binary takes rx_framing's keys."
P_RX_PARSER = "{type: at_command|json_lines|shell_prompt|nmea|modbus_ascii|modbus_rtu|ubx|rtcm3|gnss|grbl|esp_log|raw, validate}; esp_log: print_filter 'tag:level ...' (esp-idf-monitor syntax)."
P_PACE = "Slow the write down: {inter_byte_us, inter_line_ms}."
P_RESET = "{dtr, rts, hold_ms}: levels held hold_ms (default 100) then restored; null = just arm."
P_RECONNECT = "Auto-reconnect: true or {max_attempts, initial_delay_ms, max_delay_ms, backoff}."
P_DTR = "DTR level: true = asserted."
P_RTS = "RTS level: true = asserted."
P_BREAK_MS = "How long to hold BREAK, ms (default 250)."
P_FLOW = "none, software (XON/XOFF) or hardware (RTS/CTS)."
P_ALGORITHM = "e.g. crc16_modbus, crc32, crc16_ccitt_false, crc8, xor, lrc, sum8, fletcher16, adler32, or a CRC catalogue name."
P_RECORD_OPEN = "Record the session to this capture file (needs --capture-dir)."
P_RESPOND = "Answer a pattern at once while this call waits: {on, send, encoding, times}."
D_DETECT_BAUD = (
    "Try baud rates, score what is heard (optional probe), restore settings; may say inconclusive."
)
D_FILE_TRANSFER = "Send or receive a file with XMODEM (checksum, CRC, 1K) or YMODEM to/from a bootloader."
P_CANDIDATES = "Rates to try (default: common rates 1200..921600)."
P_WINDOW_MS = "How long to listen at each rate (default 600)."
D_IDENTIFY = (
    "What is on each port and how to talk to it: kind, evidence, open arguments. Listens only; "
    "probe=true sends a few safe bytes, listed. Ports it opens stay open, held."
)
P_IDENTIFY_PORTS = "Up to 16 (default: every USB serial port)."
P_LISTEN_MS = "Listening per port, ms."
P_IDENTIFY_PROBE = "Poke (\\r, AT\\r, Modbus read) where listening left it open."
IDENTIFY_TOO_MANY = "{n} ports given; identify takes at most {max} at once."
IDENTIFY_NOT_PROBED = "not probed: {why}"
S_IDENTIFY = "{port}: {kind} ({confidence}){baud} heard {evidence}"
S_IDENTIFY_ERROR = "{port}: {code}: {why}"
S_IDENTIFY_OPEN = "open({args})"
S_IDENTIFY_ASK = "ask transact/read({args})"
S_IDENTIFY_PROMPT = "prompt {prompt}"
S_IDENTIFY_SENT = "sent {sent}"
S_IDENTIFY_RESETS = "opening resets this board"
S_IDENTIFY_RESETS_KEPT = "opening reset this board; HUPCL cleared, closing will not reset it again"
S_IDENTIFY_COMPETING = "also held by {names}"
S_IDENTIFY_HOLDER = "program {program} pid {pid}"
S_IDENTIFY_CONN = "kept open as {id}"
S_IDENTIFY_HELD = "held {id}"
S_PORTS_UNSEEN = "; not listed (name them): PTYs, socket://, rfc2217://; identify says what is on any port"
S_IDENTIFY_NONE = "no USB serial port found; name ports (PTYs, socket://, rfc2217://, sim://) to identify them."
S_IDENTIFY_PROBE_HINT = "silent or unknown ports may answer identify(probe=true), which sends a few safe bytes."
P_PROBE = "Text to send at each rate to provoke an answer (e.g. '\\r')."
P_DIRECTION = "send or receive."
P_XPROTOCOL = "xmodem (checksum), xmodem_crc (default), xmodem_1k or ymodem."
P_XDATA = "File contents to send, in encoding (base64 unless encoding says otherwise)."
P_XFILENAME = "YMODEM file name to announce."
P_KEYS = "Named keys sent after data: ctrl-c, enter, esc, up, f1 ..."
P_STRIP_ANSI = "Remove ANSI/VT100 escape sequences from the text."
P_RS485 = "RS-485 transceiver control: {rts_level_for_tx, rts_level_for_rx, loopback, delay_before_tx, delay_before_rx}."
P_LOW_LATENCY = "Ask the driver for low latency (Linux ASYNC_LOW_LATENCY); get_status says if it took."
P_READ_ECHO = "RS-485: keep our own echoed bytes in the reply (default: skip them)."
P_SCREEN = "Render a full-screen TUI: {cols, rows} (kept per cursor) → screen rows of text."
P_FLUSH_TARGET = "input (default), output or both."

# one-line human summaries that accompany every structured result
S_PORTS = "{n} port(s): {names}"
S_CONNECTIONS = "{n} connection(s): {items}"
S_OPEN = "opened {port} as {id} at {baud} baud"
S_OPEN_PROTOCOL = ", protocol {protocol}"
S_CLOSE = "closed {id} ({port}); received {rx} bytes, sent {tx}"
S_STATUS = "{id} {port}: {state}; rx {rx} bytes, tx {tx}, unread {unread}, lost {lost}{error}"
S_READ = "{n} bytes [{start}..{end}) stop={stop}{lost}{enc}: {data}"
S_READ_FRAMES = "{k} frame(s) [{start}..{end}) stop={stop}{lost}{dropped}{error}: {frames}"
S_DROPPED = " dropped {n} bad frame(s)"
S_CAPTURE = "boot capture from mark {mark}: {read}"
S_LINES = "{id}: DTR={dtr} RTS={rts}"
S_BREAK = "{id}: BREAK held for {ms} ms and released"
S_RECONFIGURE = "{id}: changed {changed}"
S_CHECKSUM = "{algorithm} = 0x{hex} ({value})"
S_RECONNECT = "{id}: {state}; the stream continues at offset {offset}"
S_LOG = "{n} event(s) of {id} up to seq {last} {kinds}{evicted}"
S_EVICTED = "; {n} older event(s) evicted"
S_CLEAR_LOG = "cleared {n} event(s) of {id}"
S_EXPORT = "exported {n} event(s), {b} bytes, to {path}"
S_RECORD = "{id}: {state} to {path}; {n} event(s), {b} bytes"
S_NOT_RECORDING = "{id}: not recording"
S_CAPTURES = "{n} capture(s) in {dir}: {names}"
S_PROFILE = "profile {name} at revision {rev}{extra}"
S_PROFILES = "{n} profile(s): {names}"
S_OPEN_PROFILE = " (profile {name}: {action})"
S_BAUD = "{id}: {verdict} ({reason}); top {top}"
S_TRANSFER = "transfer {state}: {b} bytes in {n} blocks, {r} retries"
S_LOST = " LOST {n} bytes before this data"
S_WRITE = "wrote {n} bytes to {id}"
S_FLUSH = "flushed {target} of {id}; {n} unread bytes discarded"

# --- resources and prompts ----------------------------------------------------------------------

R_PORTS = "Serial ports on this machine with USB identity and which are open (updates on hotplug)."
R_CONNECTIONS = "Open connections with state and counters (updates on open/close)."
R_CAPTURES = "Capture files in the capture directory."
R_CONNECTION = "One connection's full status; reading it consumes nothing (updates as data arrives)."
R_LOG = "The newest events of one connection's log, with payloads; reading it consumes nothing."
PROMPT_DIAGNOSE = (
    "Identify the device on serial port {port} with the serial-mcp tools.\n"
    "1. identify(ports=['{port}']): it listens without writing and says the kind, the evidence and the open "
    "arguments to use. list_ports does not list PTYs or network ports: name them.\n"
    "2. If it says silent or unknown, identify(ports=['{port}'], probe=true): a few safe bytes, each listed.\n"
    "3. Talk to it with the open arguments it gave (transact with port=..., or open then transact). If it is "
    "still unknown, read with timeout_ms 2000 and quote what you see; never send what could erase or reflash it.\n"
    "Report what the device is, the evidence (quote bytes), how sure you are, and how to talk to it."
)
PROMPT_TERMINAL = (
    "Act as a serial terminal on connection {connection_id}. For each line the user gives you, send it with "
    "transact (add the device's line ending, usually '\\r' or '\\r\\n'; use match on the prompt if you know it, "
    "else idle_ms 300) and show the reply verbatim. Use write for keys without a reply and read to see more output. "
    "Report bytes_lost or a disconnected state at once. Do not send commands on your own initiative."
)

# --- framing, parsers, checksums (core/framing, core/parsers, core/checksums) -------------------

# terminal keys (core/keys.py)
KEYS_UNKNOWN = "unknown key {key!r}{hint}; valid keys include {examples}, ctrl-a ... ctrl-z and f1 ... f12."
KEYS_DID_YOU_MEAN = " (did you mean {names}?)"
KEYS_BREAK = "'break' is a line condition, not a key; call send_break to hold BREAK on the line."
KEYS_EMPTY = "keys is empty; give at least one key name such as 'ctrl-c' or 'enter'."
KEYS_NOT_STRING = "each key must be a string such as 'ctrl-c' or 'enter', not {value!r}."

# baud detection verdicts (core/baud.py)
BAUD_NO_CANDIDATES = "inconclusive: no candidate rates were tried."
BAUD_SILENT = "inconclusive: no bytes arrived at any of the {count} rates tried; the device may be silent (send a probe such as '\\r', or reset it while detecting)."
BAUD_TOO_FEW = "inconclusive: only {count} bytes arrived at {baud} (at least {need} are needed); listen longer or send a probe."
BAUD_NOT_TEXT = "inconclusive: no rate reads as text (best {baud} scores {score:.2f}); the device may speak a binary protocol, use other framing (data bits, parity), or only talk when asked."
BAUD_TOO_CLOSE = "inconclusive: {baud} ({score:.2f}) and {other} ({other_score:.2f}) read about equally well; try each, or listen longer."
BAUD_TEXT = "{baud} reads as text (score {score:.2f}); the next best, {other}, scores {other_score:.2f}."
BAUD_TEXT_ONLY = "{baud} reads as text (score {score:.2f}); it was the only rate tried."
BAUD_PROBE_ONE = "only {baud} answered the probe."
BAUD_PROBE_MANY = "inconclusive: the probe was answered at several rates ({bauds})."

# XMODEM / YMODEM (core/xmodem.py)
XMODEM_BAD_MODE = "mode {value!r} is not known; use one of: {allowed}."
XMODEM_BAD_RETRIES = "{field} must be a whole number of at least 1, not {value!r}."
XMODEM_BAD_BLOCK_SIZE = "block_size must be 128 or 1024, not {value!r}."
XMODEM_BAD_NAME = "YMODEM file name {name!r} is not valid: it must be non-empty and contain no NUL character."
XMODEM_NAME_TOO_LONG = (
    "YMODEM file name {name!r} does not fit in a 1024-byte header block; use a shorter name."
)
XMODEM_CANCELLED_LOCAL = "the transfer was cancelled here; CAN was sent to the other side."
XMODEM_CANCELLED_PEER = "the other side cancelled the transfer (it sent CAN CAN)."
XMODEM_NO_START = "the receiver never asked for data (no NAK or 'C' after {tries} timeouts); start its XMODEM/YMODEM receive command first (e.g. U-Boot 'loadx' / 'loady')."
XMODEM_NO_SENDER = (
    "no block arrived after {tries} requests; start the sending side's XMODEM/YMODEM send command first."
)
XMODEM_TOO_MANY_RETRIES = (
    "block {block} failed {retries} times in a row (last: {reason}); the transfer was cancelled."
)
XMODEM_OUT_OF_SYNC = "received block {got} while expecting block {expected}: the two sides lost step, so the transfer was cancelled."
XMODEM_TOO_LARGE = "the incoming data passed the limit of {limit} bytes; the transfer was cancelled."
XMODEM_EOT_UNANSWERED = "every block was acknowledged, but the end of file (EOT) was not, after {tries} tries; the receiver may still have the whole file: check on the device."
XMODEM_REASON_NAK = "the receiver answered NAK"
XMODEM_REASON_TIMEOUT = "no answer in time"
XMODEM_REASON_NO_REQUEST = "the receiver did not ask for the next file"
XMODEM_REASON_BAD_NUMBER = "block number and its complement disagree"
XMODEM_REASON_BAD_CHECK = "checksum/CRC mismatch"
XMODEM_REASON_SHORT = "block incomplete when the time ran out"
XMODEM_REASON_NOISE = "unexpected bytes where a block should start"
XMODEM_REASON_DUPLICATE = "block repeated (an ACK was lost)"

# device profiles: the store (store/profiles.py) and port identity (core/identity.py)
PROFILE_FILE_HEADER = (
    "# serial-mcp device profiles: one [profiles.<name>.*] group per device, shared by every serial-mcp\n"
    "# process. Hand edits are fine while no serial-mcp is writing; comments and key order are kept.\n"
)
PROFILE_BAD_NAME = "profile name {name!r} is not valid; use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit."
PROFILE_NOT_OBJECT = "{field} must be an object, not {value!r}."
PROFILE_MISSING = "{field} is missing."
PROFILE_UNKNOWN_KEY = "{field} has an unknown key {key!r}.{hint} Allowed keys: {allowed}."
PROFILE_SELECTOR_EMPTY = (
    "{field} is empty; give at least one of: {allowed} (e.g. vid, pid and serial_number from list_ports)."
)
PROFILE_SELECTOR_BAD_ID = "{key} {value!r} is not a USB id; use 4 hex digits such as '0403'."
PROFILE_SELECTOR_BAD_TEXT = "{key} must be a non-empty string, not {value!r}."
PROFILE_BAD_PROTOCOL = "{field} must be a protocol preset name such as 'nmea', not {value!r}."
PROFILE_BAD_RECONNECT = "{field} must be true, false or a reconnect policy object, not {value!r}."
PROFILE_NOT_STORABLE = "{field} holds {value!r}, which a TOML file cannot store; use strings, numbers, true/false, lists and objects."
PROFILE_BAD_FIELD = "{field} must be {expected}, not {value!r}."
PROFILE_EXPECT_REVISION = "a whole number of at least 1"
PROFILE_EXPECT_COUNT = "a whole number of at least 0"
PROFILE_EXPECT_TIME = "a date-time such as 2025-01-31T12:00:00Z"
PROFILE_EXPECT_BOOL = "true or false"
PROFILE_EXPECT_LIST = "a list of tables"
PROFILE_BAD_HISTORY = "{field} holds revision {revision}, which is not older than the current revision {current} or appears twice."
PROFILE_UNSET_AND_SET = "defaults.{key} is both given and unset; do one or the other."
PROFILE_REPLACE_NEEDS_DEFAULTS = "replace needs defaults (pass an empty object to clear them all)."
PROFILE_NOT_FOUND = "no profile {name!r}; saved profiles: {known}. Call list_profiles to see them."
PROFILES_FULL = "the profile store already holds {max} profiles, the most it keeps; delete some (delete_profile) before saving another."
PROFILE_EXISTS = (
    "profile {name!r} already exists (revision {revision}); choose another name or update that profile."
)
PROFILE_EXISTS_SAVE = "profile {name!r} already exists (revision {revision}); pass overwrite: true to replace it, or choose another name."
PROFILE_REVISION_CONFLICT = (
    "profile {name!r} is at revision {current}, not the expected revision {expected}: it was changed "
    "elsewhere. Nothing was written; fetch it again (list_profiles) and retry with expected_revision {current}."
)
PROFILE_REVISION_GONE = "profile {name!r} no longer exists (expected revision {expected}); it was deleted elsewhere. Nothing was written."
PROFILE_ROLLBACK_CURRENT = (
    "revision {revision} is already the current revision of {name!r}; nothing to roll back."
)
PROFILE_ROLLBACK_UNKNOWN = (
    "profile {name!r} has no retained revision {revision}; retained revisions: {retained}."
)
PROFILE_STORE_UNREADABLE = "cannot read the profiles file {path}: {error}. Fix its permissions, or choose another file with --profiles-path or SERIAL_MCP_PROFILES; it was not modified."
PROFILE_STORE_CORRUPT = (
    "the profiles file {path} is not valid TOML ({error}); fix it or move it away. It was not modified."
)
PROFILE_STORE_INVALID = (
    "the profiles file {path} is invalid at {where}: {error} Fix it or move it away; it was not modified."
)
PROFILE_STORE_NO_VERSION = "the profiles file {path} has no schema_version; add 'schema_version = {current}' at the top. It was not modified."
PROFILE_STORE_VERSION_NEW = "the profiles file {path} has schema_version {version}, newer than this serial-mcp reads ({current}); upgrade serial-mcp or choose another file with --profiles-path. It was not modified."
PROFILE_STORE_VERSION_BAD = "the profiles file {path} has schema_version {version!r}; this serial-mcp reads version {current} only. It was not modified."
PROFILE_STORE_WRITE_FAILED = "could not write the profiles file {path}: {error}; the file is unchanged."
PROFILE_STORE_LOCK_TIMEOUT = "timed out after {seconds:g} s waiting for the profiles lock {lock} (another serial-mcp process is writing); nothing was written. Retry."
PROFILE_STORE_VERIFY_FAILED = "serial-mcp could not update the profiles file {path} faithfully ({error}); the file is unchanged. Please report it."
PROFILE_BAD_MODE = "profile_mode {value!r} is not known; use one of: {allowed}."
PROFILE_WHY_NO_SERIAL = "USB {vid}:{pid} without a serial number"
PROFILE_WHY_PARTIAL_USB = "partial USB information"
PROFILE_WHY_DESCRIPTION = "only a description"
PROFILE_WHY_PATH = "only a path"
PROFILE_PLAN_DISABLED = "profile_mode is 'none': no profile is read or written."
PROFILE_PLAN_WEAK = "{confidence} identity ({why}) cannot recognise this device reliably, so the session is transient (no profile is read or written).{hint}"
PROFILE_PLAN_CANDIDATES = " Profiles matching it: {names}; use open_profile to apply one."
PROFILE_PLAN_DUPLICATE = "{count} connected ports share the identity {fingerprint} ({ports}), so the session is transient; use open_profile with a port_glob selector to pick one."
PROFILE_PLAN_REUSE = "reusing profile {name!r} (revision {revision}), the most recently used profile matching this device{others}."
PROFILE_PLAN_OTHERS = "; other matches: {names}"
PROFILE_PLAN_GENERATE = "no profile matches this device ({fingerprint}); profile {name!r} will be created from this open's settings."

# capture files (core/capture.py) and replay:// (serial/replay.py)
CAPTURE_EMPTY = (
    'the capture is empty; line 1 must be the header, e.g. {"format": "serial-mcp-capture", '
    '"version": 1, "created": "2026-11-30T10:15:02.123456Z"}.'
)
CAPTURE_NOT_JSON = "capture line {line} is not valid JSON ({error}); every line must be one JSON object."
CAPTURE_NOT_UTF8 = (
    "capture line {line} is not valid UTF-8 (at byte {position} of the line); capture files are UTF-8 text."
)
CAPTURE_NOT_OBJECT = (
    "capture line {line} is a JSON {kind}, not an object; every line must be one JSON object."
)
CAPTURE_BAD_FORMAT = (
    'capture line {line}: format is not "serial-mcp-capture"; this is not a serial-mcp capture file.'
)
CAPTURE_BAD_VERSION = (
    "capture line {line}: this version is not supported; this reader understands version 1."
)
CAPTURE_MISSING = "capture line {line}: {field} is required{hint}."
CAPTURE_BAD_CREATED = (
    'capture line {line}: created is not an ISO 8601 UTC time such as "2026-11-30T10:15:02.123456Z".'
)
CAPTURE_BAD_FIELD = "capture line {line}: {field} must be {expected} (it is a JSON {kind})."
CAPTURE_BAD_T = "capture line {line}: t must be a finite number of seconds >= 0 (since the header's created)."
CAPTURE_T_BACKWARDS = "capture line {line}: t is earlier than the previous event's t; events must be in time order."
CAPTURE_BAD_HEX = (
    'capture line {line}: data must be hex digit pairs without separators (e.g. "4f4b0d0a"): {problem}.'
)
CAPTURE_TEXT_ONLY = (
    "capture line {line}: {type} event has text but no data; data (hex) is the payload, text is never read."
)
CAPTURE_BAD_EVENT = "capture event {field} must be {expected}, not {value}."
REPLAY_BAD_URL = "replay URL {url!r} is not valid: {problem}. Form: replay://FILE.jsonl?mode=timed|instant|respond&speed=1&loop=false"
REPLAY_NO_PATH = "it names no capture file"
REPLAY_UNKNOWN_OPTION = "option {key!r} is not known{hint}; options are mode, speed, loop"
REPLAY_DUPLICATE_OPTION = "option {key!r} is given more than once"
REPLAY_BAD_MODE = "mode {value!r} is not known; use timed, instant or respond"
REPLAY_BAD_SPEED = (
    "speed {value!r} must be a number above 0 and at most {max} (e.g. 10 plays ten times faster)"
)
REPLAY_BAD_LOOP = "loop {value!r} must be true or false"
REPLAY_NOT_FOUND = "capture file {path!r} not found (looked at {tried}).{available}"
REPLAY_AVAILABLE = " Captures available: {names}."
REPLAY_NOT_FILE = "{path!r} is not a regular file; replay:// plays a capture file (.jsonl)."
REPLAY_TOO_BIG = "capture file {path!r} is {size} bytes, above the replay limit of {max} bytes."
REPLAY_READ_FAILED = "could not read capture file {path!r}: {error}"
REPLAY_CLOSED = "the replay port {port!r} is closed"
REPLAY_MISMATCH = "replay {port}: the host wrote {actual} where the recording has {expected} (tx #{index}); replay continues."

# framing / parser option objects (core/framing/options.py, config.py)
OPTIONS_NOT_OBJECT = "{field} must be an object such as {example}, not {got}."
OPTIONS_UNKNOWN_KEY = "unknown key {key!r} in {field}.{hint} Allowed keys{context}: {allowed}."
OPTIONS_FOR_TYPE = " for type {type!r}"
OPTIONS_DID_YOU_MEAN = " Did you mean {match!r}?"
OPTIONS_MISSING = "{field}.{key} is required; use one of: {allowed}."
OPTIONS_REQUIRED = "{field}.{key} is required."
OPTIONS_BAD_CHOICE = "{field}.{key} {value} is not known.{hint} Use one of: {allowed}."
OPTIONS_BAD_BOOL = "{field}.{key} must be true or false, not {value}."
OPTIONS_BAD_INT = "{field}.{key} must be a whole number from {low} to {high}, not {value}."
OPTIONS_BAD_STRING = "{field}.{key} must be a non-empty string, not {value}."
OPTIONS_BAD_STRING_LIST = (
    '{field}.{key} must be a non-empty string or a list of them (e.g. ["$", "!"]), not {value}.'
)
CHECKSUM_BAD_SEPARATOR = (
    '{field}.separator must be a string (the text between payload and checksum, e.g. "*").'
)
FRAMING_TX_AUTO = (
    "{field}.ending 'auto' only applies to received data; use 'lf', 'cr' or 'crlf' for what you send."
)
PARSER_BAD_PROMPT = (
    "{field}.prompt is not a valid regular expression ({error}); fix it or leave it out for the defaults."
)
PRESET_UNKNOWN = "protocol {name!r} is not a known preset.{hint} Valid presets: {allowed}."

# framing errors in the received stream (FramingError.message)
FRAMING_TOO_LONG = (
    "frame longer than max_length ({max_length} bytes) without a terminator; skipped up to the next one."
)
FRAMING_LENGTH_TOO_BIG = (
    "length prefix {length} is above max_length {max_length}: the stream is out of step; "
    "skipping bytes until a plausible length is found."
)
FRAMING_SLIP_BAD_ESCAPE = "invalid SLIP escape (0xDB not followed by 0xDC or 0xDD); packet dropped."
FRAMING_SLIP_END_INSIDE = "SLIP packet contains an END byte (0xC0) inside; it holds more than one packet."
FRAMING_COBS_ZERO = "COBS frame contains a 0x00 byte; 0x00 only delimits frames."
FRAMING_COBS_EMPTY = "COBS frame is empty; even an empty payload encodes as 0x01."
FRAMING_COBS_TRUNCATED = (
    "COBS code byte 0x{code:02x} at position {position} runs past the end of the frame; frame dropped."
)

# encoding what is sent
FRAMING_SHORTER_THAN_HEADER = (
    "payload of {length} bytes is shorter than header_offset ({header_offset}); include the header bytes."
)
FRAMING_PAYLOAD_TOO_LONG = (
    "payload needs a length of {length}, above the limit of {limit} for this tx_framing."
)
NMEA_NOT_ASCII = "an NMEA sentence must be plain ASCII."
NMEA_MULTILINE = "send one NMEA sentence per write; this one contains a line break inside."
NMEA_BAD_CHECKSUM_FIELD = (
    "the text after '*' must be two hex digits, got {given!r}; or leave '*HH' out and it is added."
)
NMEA_CHECKSUM_MISMATCH = (
    "NMEA checksum *{given} does not match the sentence (it should be *{expected}); fix it or leave it out."
)
MODBUS_PDU_TOO_SHORT = "a Modbus frame needs at least the address and function code (2 bytes), got {length}."

CHECKSUM_UNKNOWN = (
    "algorithm {name!r} is not known; did you mean {suggestions}? "
    "Case and '-', '/', '_' or spaces don't matter (CRC-16/MODBUS = crc16_modbus)."
)
CHECKSUM_UNKNOWN_NO_MATCH = (
    "algorithm {name!r} is not known; use one of {examples}, or any CRC catalogue name "
    "such as CRC-16/MODBUS or crc32_iscsi ({count} algorithms in all)."
)
CHECKSUM_AMBIGUOUS = (
    "algorithm {name!r} is ambiguous: {count} CRC models have that width, e.g. {examples}; "
    "name the one your device uses."
)
CHECKSUM_AND_MORE = " (and {count} more)"
CHECKSUM_NOT_A_NAME = "algorithm must be a string such as 'crc16_modbus', not {type}."

# --- Callers, sessions and read-only mode (engine/access.py) ---------------------------------------
CURSOR_EMPTY = "cursor must be a non-empty name such as 'logger' (omit it for your default cursor)."
NOT_OWNER = (
    "connection {id} was opened by another session; it may be read here (with your own cursor) but "
    "not {action}. The session that opened it can allow this with open(share='write')."
)
CURSOR_BUSY = (
    "cursor {cursor!r} of {id} is busy with another read that did not finish within {ms} ms; "
    "wait for it, or read with your own cursor name."
)
READ_ONLY_ARG = "{tool}({arg}=...) is refused: this server runs in --read-only mode ({why})."
READ_ONLY_WHY_RESPOND = "respond writes to the device"
READ_ONLY_WHY_PROBE = "probe writes to the devices; without it identify only listens"
READ_ONLY_WHY_MIRROR_RW = "a read-write mirror forwards typing to the device"
READ_ONLY_WHY_RS485 = "RS-485 mode drives the RTS line"
P_SHARE = (
    "read (default): other sessions may only read; write: they may also write and close. Other programs"
    " get 'busy' while it is held (root's opens are reported); lend hands it over."
)

# profiles: nesting limits (core/profile_model.py, store/profiles.py) -- issue 15
PROFILE_TOO_DEEP = "{field} is nested more than {limit} levels deep; no profile setting needs that many."
PROFILE_STORE_TOO_DEEP = (
    "the profiles file {path} is nested too deeply to read (lists or tables inside each other "
    "hundreds of levels deep); fix it or move it away. It was not modified."
)

# --- User patterns on RE2 and malformed requests (core/match.py, mcp/argument_guard.py, mcp/line_screen.py) ------------
RE2_UNSUPPORTED = (
    "patterns use RE2 syntax, which always runs in linear time: backreferences (\\1), lookahead and "
    "lookbehind ((?=, (?!, (?<=, (?<!), atomic groups, possessive quantifiers and conditionals are "
    "not supported, and Python's \\Z is written \\z"
)
MATCH_BAD_RE2 = "match.pattern is not a valid pattern ({error}); {unsupported}. Fix it or use mode 'literal'."
PATTERN_TOO_LONG = "{field} is {size} bytes long; at most {max} bytes are accepted."
PATTERN_TOO_COMPLEX = (
    "{field} is too complex ({size} RE2 instructions, at most {max}); shorten alternations and "
    "counted repetitions such as {{1000}}."
)
REQUEST_LONE_SURROGATE = (
    "{where} holds a lone surrogate ({char}), which is not text; send valid Unicode, or bytes with "
    "encoding 'hex' or 'base64'."
)
REQUEST_TOO_DEEP = "{where} is nested deeper than {max} levels; tool arguments are shallow objects and lists."
REQUEST_NOT_JSON = "the request is not valid JSON ({error})."
REQUEST_NOT_JSON_RPC = "the request is not a valid JSON-RPC 2.0 message."
HTTP_CLIENT_GONE_MID_BODY = "an HTTP client went away after %d bytes of its request body; nothing to answer"
LISTENS_FULL = "this client already holds {max} subscriptions/listen streams open, the most this server keeps; cancel one (notifications/cancelled) before listening again."
REQUEST_BAD_ID = (
    "the request's id is {kind}; ids are strings or integers (never booleans, floats or null), so "
    'this reply carries id null. Send the request again with an id such as 1 or "r1".'
)
REQUEST_ID_KINDS = {
    "bool": "a boolean",
    "float": "a number written as a float (such as 1.5 or 1e3)",
    "NoneType": "null",
    "list": "an array",
    "dict": "an object",
}
REQUEST_ID_KIND_OTHER = "not a string or an integer"
REQUEST_BAD_PARAMS = "the {method} request's params are not valid: {errors}. Fix them and send it again."
REQUEST_BAD_PARAM = "{where}: {problem} (got {kind})"
REQUEST_MISSING_PARAM = "{where} is required"
REQUEST_WHERE_ARGUMENT = "argument {path}"
REQUEST_WHERE_PARAMS = "params.{path}"
REQUEST_WHERE_WHOLE = "the request"

# --- view: a capture as one self-contained HTML page (serial_mcp/view/, `serial-mcp view`) ---------
CLI_VIEW = "write a capture as one self-contained HTML page: timeline, transcript, decoded frames, plots"
CLI_VIEW_FILE = "capture file (JSONL) or raw byte file"
CLI_VIEW_OUTPUT = "HTML file to write (default: the capture's name with .html); an older report is replaced"
CLI_VIEW_OPEN = "open the page in the default browser when written"
CLI_VIEW_FIELDS = "numeric fields to plot, e.g. GGA.satellites,altitude_m (default: the few that vary)"
CLI_VIEW_GAP = "label silences longer than this many seconds (default 1.0)"
VIEW_CANNOT_READ = "cannot read {path}: {reason}."
VIEW_CANNOT_WRITE = "cannot write {path}: {reason}."
VIEW_SAME_FILE = "the report would overwrite the capture {path}; pass -o with another name."
VIEW_BAD_GAP = "--gap must be a number of seconds > 0, got {value}."
VIEW_RAW_NOTE = "not a capture file: all bytes shown as one rx chunk at t=0, as `serial-mcp decode` reads it"
VIEW_PROGRESS_READ = "view: read {path} ({mb:.1f} MB)"
VIEW_PROGRESS_PARSED = "view: parsed {n} of {total} lines"
VIEW_PROGRESS_EVENTS = "view: {n} events"
VIEW_PROGRESS_FRAMES = "view: decoded {n} frame(s), {bad} bad"
VIEW_FIELDS_MISSING = "view: no numeric field named {names}; available: {available}"
VIEW_WROTE = "wrote {path} ({kb} kB): open it in any browser, no network needed"
# For export_log / record results: how to see a capture.
VIEW_HINT = "See it in a browser: serial-mcp view {path} (timeline, transcript, decoded frames, plots)."

# --- URL schemes, allowlist facts and replay confinement (core/port_url.py, serial/policy.py, serial/replay.py)
URL_SCHEME_REFUSED = (
    "URL scheme {scheme!r} is not enabled on this server (offered: {offered} and device paths); "
    "the operator can enable it with --enable-url-scheme {scheme}."
)
URL_SCHEME_NAME_BAD = "{name!r} is not a URL scheme name (e.g. spy or hwgrep)"
PORT_CONTROL_CHARS = "port contains control characters or text that is not valid Unicode; give a device path or a URL such as socket://host:4000."
URL_BAD = "port URL {port!r} is not valid: {problem}."
URL_USERINFO = "it has a user@ part; give socket://HOST:PORT (pyserial would connect to the host after '@')"
URL_NO_PATH = "only scheme://HOST:PORT[?options] is accepted (no path or #fragment)"
URL_BAD_PORT = "it needs a TCP port from 1 to 65535 after the host (HOST:PORT)"
URL_BAD_HOST = "the host must be a plain host name, an IPv4 address or an [IPv6] literal"
URL_LOOP_NO_PATH = "loop:// takes no host or path, only ?logging=LEVEL"
URL_UNKNOWN_OPTION = "option {key!r} is not known for {scheme}://; options are {allowed}"
URL_DUPLICATE_OPTION = "option {key!r} is given more than once"
URL_BAD_LOGGING = "logging must be one of {levels}"
URL_BAD_TIMEOUT = "timeout must be a number of seconds above 0 and at most {max}"
URL_SWITCH_VALUE = "{key} is a switch: give it without a value (?{key})"
ALLOW_BAD_NET = (
    "allowlist pattern {pattern!r} is not valid; network patterns are scheme://HOST:PORT globs "
    "(e.g. socket://10.0.0.5:*, rfc2217://bench-*.lan:2217 or rfc2217://[::1]:2217), without user@, path or options."
)
NOT_ALLOWED_URL = "port {port!r} ({target}) is not on this server's allowlist; ask the operator to add it."
PORT_CHANGED = (
    "port {port!r} changed between the allowlist check and the open (it is no longer the file that was "
    "judged); nothing was opened."
)
REPLAY_REFUSED = (
    "replay:// {path!r} is not allowed: replay reads capture files only from the capture directory, "
    "the working directory's captures/ and paths on the allowlist."
)
REPLAY_CHANGED = "capture file {path!r} changed while it was being opened; nothing was read."
OPT_ENABLE_URL_SCHEMES = (
    "enable a pyserial URL scheme beyond the default ones (socket, rfc2217, loop, replay, sim), e.g. spy; "
    "repeat the flag or give a comma-separated list. Enabled schemes are passed to pyserial unchecked"
)
CALL_CANCELLED = "the call was cancelled because its client went away; nothing more was sent for it."

# XMODEM / YMODEM: the port went away mid-transfer (core/xmodem_machine.py) -- issue 15
XMODEM_PEER_GONE = (
    "the other side went away during the transfer (the port was lost after {blocks} data blocks "
    "got through); nothing more could be sent or received, so no CAN was sent."
)

# --- binary, GNSS and Modbus RTU framing (core/framing/binary*.py, gnss.py, modbus_rtu.py) -------
BINARY_BAD_HEX = "{field} must be hex bytes such as 'AA55' or 'B5 62', not {value}."
BINARY_LAYOUT = "{field}: {problem}."
BINARY_LENGTH_OVERLAPS_SYNC = "length.offset {offset} lies inside the {sync}-byte sync word"
BINARY_FROM_NEEDS_START = "length.counts 'from' needs length.from (the offset the count starts at)"
BINARY_CHECKSUM_COVERS_ITSELF = "the checksum range [{start}:{stop}] covers the checksum itself at {at}"
BINARY_MAX_BELOW_MIN = "max_length {max_length} is below the shortest possible frame ({least} bytes)"
BINARY_TX_FIXED_LENGTH = (
    "the frame is fixed at {frame} bytes, so the data must be {expected} bytes "
    "(without sync, length and checksum), not {length}."
)
BINARY_TX_TOO_SHORT = "the data is {length} bytes; this frame needs at least {least} (its header)."
BINARY_TX_TOO_LONG = "{length} bytes of data do not fit this frame's length field or max_length {max_length}."
MODBUS_RTU_TOO_SHORT = (
    "a Modbus RTU frame needs at least the address and function code (2 bytes) before its CRC, got {length}."
)
UBX_TX_TOO_SHORT = "a UBX message needs at least its class and id (2 bytes) before the payload, got {length}."
VIEW_NOTE_SKIPPED = "skipped {n} event(s) of types this version does not know: {kinds}"
VIEW_NOTE_TORN = "the last line was cut short (the writer stopped mid-line) and is left out"
VIEW_NOTE_LOST = "{n} bytes were lost before they could be recorded"
VIEW_PROGRESS_ROWS = "view: transcript of {n} rows"
VIEW_PROGRESS_WRITING = "view: writing {path}"

# --- one-shot CLI commands: ports, send, read (commands/oneshot.py, core/escapes.py) -------------
CLI_PORTS = "list the serial ports this machine shows, with their USB identity"
CLI_IDENTIFY = "say what is on each port and how to talk to it (listens; --probe sends a few safe bytes)"
CLI_IDENTIFY_PORTS = "ports or URLs (PTYs, socket://, sim://); none: every USB serial port"
CLI_SEND = "send DATA to a port and print the reply (exit 1 if --expect's text does not come)"
CLI_SEND_DATA = r"what to send; escapes \r \n \t \0 \e \\ and \xHH are bytes (e.g. 'AT\r')"
CLI_READ = "print what a port sends (exit 1 if nothing, or --expect's text, comes in time)"
CLI_EXPECT = "wait for this text (the tool's match: a literal string); exit 1 when it does not come"
CLI_TIMEOUT_MS = "how long to wait for the reply, in milliseconds (default 1000, as the tool)"
CLI_BAUD_RATE = "baud rate (default 115200)"
CLI_JSON = "print the tool's result as JSON (every field, defaults included) on stdout instead of the data"
CLI_PORTS_FOUND = "{n} port(s)"
CLI_PORTS_LAB_ERROR = "labgrid places not listed: {error}"
CLI_ONESHOT_FAILED = "serial-mcp: {message}"
ESCAPE_BAD = r"DATA has an unknown escape {escape} at position {pos}; use \r \n \t \0 \e \\ or \xHH."

# --- careless input and faults (issue 15): strict values, bounded writes/answers/memory, storage ---
RING_MEMORY_LIMIT = (
    "rx_buffer_size {size} would take the server past its ring memory limit ({used} of {limit} bytes in use, "
    "{free} free); use a smaller rx_buffer_size, close a connection, or raise --max-ring-memory."
)
RING_ALLOC_FAILED = (
    "the {size}-byte RX buffer could not be allocated (out of memory); the port was not opened. "
    "Use a smaller rx_buffer_size."
)
OPT_MAX_CONNECTIONS = "most connections open at once (default 256); each holds 9 file descriptors, and the soft file limit is raised to the hard one at start"
OPT_MAX_RING_MEMORY = "most bytes all connections' RX buffers may hold together; an open beyond it is refused"
P_WRITE_TIMEOUT_MS = "Longest write, ms (default 10000 plus wire time)."
WRITE_BAD_TIMEOUT = "write timeout {value!r} is out of range; use 1 up to {max} ms."
WRITE_STOPPED_TIMEOUT = (
    "the write to {id!r} timed out after {ms} ms with {written} of {total} bytes sent: the device is not "
    "taking data (flow control holding the line, or nothing reading); nothing was read."
)
STORAGE_ERROR = (
    "the capture directory could not be written ({error}); the port is fine. Free space or fix the "
    "directory, then record again."
)
RECORDER_BEHIND_REASON = (
    "storage error: the disk fell more than {mib} MiB behind the port; the capture holds what came before"
)
RECORDER_BEHIND_LOG = "recording of %s stopped: the disk fell more than %d MiB behind (the port is fine)"
RECORDER_BEHIND_MARKER = "recording stopped: the disk fell more than {mib} MiB behind the port"
RECORDER_QUOTA_MARKER = "recording stopped: file quota reached"
RECORDER_STORAGE_STOPPED = "recording of %s stopped: %s (the port is fine; the capture file keeps what was written)"
RESPOND_LIST_BAD = "respond must be a list of at most {max} rules {{on, send, encoding, times}}."
P_RESPOND_OPEN = "Standing rules [{on, send, encoding, times} | \"terminal\" (answers ESC[6n)] armed from the first byte; configure changes them."
S_STATUS_RESPONDED = "; respond rules answered {n} time(s)"

# --- pytest plugin (pytest_plugin.py) -------------------------------------------------------------
PYTEST_ENGINE_NOT_ASYNC = (
    "serial_engine is an async Engine: use it in an 'async def' test marked @pytest.mark.anyio, "
    "or use 'with serial_mcp.SyncEngine() as eng:' in a synchronous test."
)
PYTEST_ENGINE_BACKEND = "serial_engine runs on asyncio, not {backend}"
S_WRITE_TIMED_OUT = " before the timeout: the device stopped taking data (flow control, or nothing reading)"
STEPS_BAD = "steps must be a list of 1 to {max} steps such as {{\"send\": \"root\\n\", \"expect\": \"Password:\"}}."
STEP_BAD = "step {i}: {problem}."
P_STEPS = "Dialog: [{send, keys, encoding, expect, reply, timeout_ms, idle_ms, respond} | {micropython: script, interrupt, timeout_ms}] in order; stops at the first miss."
S_STEPS = "{ok} of {n} steps ok"
STEPS_WITH_DATA = "give either data (one write and read) or steps (a dialog), not both; put the first send in steps[0]."

# --- simulated devices (serial/sim/) --------------------------------------------------------------
SIM_BAD_OPTION = "{port!r}: option {option} must be {allowed}."
P_BOOT_SEND = "Text to send after the mark to trigger the boot (e.g. 'reset\\r'), for boards without a line reset."
S_BEFORE_MARK = " ({n} unread bytes arrived before the mark: read from='buffer_start' to see them)"
NOT_CONNECTED_RECONNECTING = "Auto-reconnect is running: wait and call again, or call reconnect (closing would lose the buffer and offsets)."
NOT_CONNECTED_GONE = "Call reconnect once the device is back (the buffer and offsets are kept), or close it."
P_CHECKSUM_DATA = "Bytes to checksum (in encoding)."
P_BYTE_ORDER = "Byte order of wire_hex: big (default) or little (e.g. CRC-16/MODBUS)."
S_CHECKSUM_WIRE = ", on the wire ({order}-endian): {wire}"
CHECKSUM_BAD_ORDER = "byte_order is {value!r}; use big or little."
NO_MODEM_LINES = "{port} has no modem-control lines (a PTY or socket:// port), so {what} cannot be driven; nothing was changed."
P_RECORD_DURATION = "With start: stop by itself after this many ms."
RECORD_BAD_DURATION = "duration_ms must be a whole number of milliseconds from 1 to {max}."
S_LOG_TRUNCATED = "; cut at the 4 MiB answer cap: call again with since={since} for the rest"
P_FRAMES_VIEW = "Framed reads: parsed | raw | both (default) — what each frame carries."
MPY_NO_RAW_REPL = "the board did not enter the raw REPL (heard {got}); {hint}"
MPY_HINT_INTERRUPT = "a program may be running: run the step with interrupt true (Ctrl-C first)."
MPY_HINT_BOARD = "is this a MicroPython board at the right baud rate, with its REPL on this port?"
MPY_NOT_OK = "the board answered {got} where the raw REPL protocol expected its reply; nothing more was sent."
MPY_TIMEOUT = "the script did not finish in time (last heard {got}); raise timeout_ms, or interrupt it with keys ['ctrl-c']."
MPY_STEP_ALONE = "a micropython step holds the script alone (with timeout_ms and interrupt), without send, keys or expect"
S_MPY = "stdout {out} stderr {err}"
MATCH_BAD_ANSI = "match.ansi is {value!r}; use keep (default) or ignore (match the text without ANSI sequences)."
S_SKIPPED = " skipped {n} byte(s) between frames"
MODBUS_ASCII_FRAME_BAD = "{frame!r} looks like a whole Modbus ASCII frame but its hex or LRC is wrong; send the address + PDU bytes instead (the LRC is added for you)."
UNKNOWN_KEY = "{field} has an unknown key {key!r}.{hint} Allowed keys: {allowed}."

# --- stdio transport ---------------------------------------------------------------------------
STDIO_CLIENT_GONE = "the client closed the server's stdout; shutting down"
REQUEST_TOO_LONG = "the request is longer than {max} bytes, more than any tool call needs; it was not read. Send large data in several writes."

# --- issue 27.6: the SDK's private names (mcp/sdk_private.py) ---
SDK_UNVERIFIED = (
    "mcp {installed} is installed; serial-mcp's fast stdio path was verified on mcp {verified} only, so "
    "it serves through the SDK's public path (slower per call; 2025-era resources/subscribe off). "
    "Re-verify serial_mcp/mcp/sdk_private.py against this SDK, or install mcp=={verified}."
)

# --- issue 28.14: the capture view under hostile files ----------------------------------------------
VIEW_NOTE_NOT_FINITE = (
    "{n} numeric value(s) were not finite or too large for a float (such as 1e999, NaN or a 400-digit"
    " integer) and are shown as missing"
)
VIEW_NOT_REGULAR_INPUT = "cannot view {path}: it is {kind}, not a regular file; save the capture to a file and view that."
VIEW_NOT_REGULAR_OUTPUT = (
    "will not write the page to {path}: it is {kind}, not a regular file, and would be replaced;"
    " pass -o with the name of a regular file."
)
VIEW_INPUT_TOO_BIG = (
    "cannot view {path}: it holds {size} bytes, more than the {max} bytes a page is made from; view a part"
    " of it (a capture cut short is read up to its last whole line, e.g. head -c {max} {path} > part.jsonl)."
)
VIEW_FAILED_SILENT = "view of {path} failed: {kind} (the error gave no message)."
FILE_KIND_FIFO = "a FIFO (named pipe)"
FILE_KIND_CHAR = "a character device"
FILE_KIND_BLOCK = "a block device"
FILE_KIND_SOCKET = "a socket"
FILE_KIND_DIR = "a directory"
FILE_KIND_OTHER = "a special file"

# --- issue 28.4: responder writer ------------------------------------------------------------------
RESPOND_FAILED = "respond failed: the answer to {on!r} ({n} bytes) was dropped: {why}"
RESPOND_WHY_TIMEOUT = "the device took {written} of its bytes within {ms} ms"
RESPOND_WHY_QUEUE = "{n} earlier answers are still waiting for the device"
RESPOND_WHY_IO = "the write failed: {error}"
S_STATUS_RESPOND_FAILED = " ({n} dropped: the device did not take them)"

# --- issue 28.6: write stall ----------------------------------------------------------------------
P_WRITE_STALL_MS = "End the write once the device took no byte for this long, ms (default 3000)."
WRITE_BAD_STALL = "stall_ms {value!r} is out of range; use 1 up to {max} ms."
WRITE_STOPPED_STALLED = (
    "the write to {id!r} stopped: the device took no byte for {ms} ms, with {written} of {total} bytes "
    "sent (flow control holding the line, or nothing reading); nothing was read."
)
S_WRITE_STALLED = " (stopped: the device took no byte for the stall time)"

# --- issue 28.1: hostile GNSS frames -----------------------------------------------------------
UBX_COUNT_OVERCLAIMS = "{count} says {claimed} repeated groups ({need} bytes or more) but the payload has {have} bytes left: not decoded (the frame is corrupt or its count lies)."

# --- issue 28.3: a board that floods raw-paste window credit -----------------------------------------
MPY_NO_END = (
    "the board never sent the raw REPL's end marker (the read stopped: {why}; last heard {got}): a board "
    "flooding the port, or a script printing more than {max} MiB; the output is not trusted."
)

# --- issue 28.5: a micropython step's timeout --------------------------------------------------------
MPY_STEP_TIMEOUT = "a micropython step's timeout_ms is the script's whole time: give 1 ms or more (default 10000)"

# --- issue 28.11: every front door, one policy ------------------------------------------------------
POLICY_NOT_A_LIST = "{name} is a list of strings, not the string {value!r}; write {name}=[{value!r}]."
POLICY_BAD_SCHEME = "enable_url_schemes: {error}."
POLICY_SCHEMES_NEED_DEFAULT_OPENER = (
    "enable_url_schemes configures the default opener; with an opener of your own, let that opener "
    "decide which schemes it opens (and leave enable_url_schemes out)."
)

# --- issue 28.15: the one-shots under bad data ------------------------------------------------------
CLI_MAX_BYTES = (
    "read at most N bytes of the reply (default 65536, or the most a read takes, {max}, with --expect)"
)
CLI_MAX_BYTES_BAD = "--max-bytes is {value!r}; give a whole number of bytes from 1 to {max}"
CLI_EXPECT_CUT = (
    "stopped at max_bytes ({n} bytes) before {pattern!r} came; raise --max-bytes (at most {max}) "
    "or expect something nearer the start"
)
CLI_NO_STDOUT = (
    "{command} writes its data to stdout, which is closed; give it somewhere to go (a file, a pipe, "
    "or /dev/null to drop it)"
)

# --- issue 28.16: what a dropped engine leaves behind ---------------------------------------------
SYNC_ENGINE_NOT_CLOSED = (
    "a SyncEngine was dropped without close(): its ports are closed now; use 'with SyncEngine() as eng:' "
    "or call eng.close()"
)

# --- issue 23.4: sim://esp32-rom ---------------------------------------------------------------------
SIM_UNKNOWN_OPTION = "{port!r}: option {option!r} is not known.{hint} Options: {allowed}."

# --- issue 24: events ---------------------------------------------------------------------------
ELF_TOO_LARGE = "the ELF is {size} bytes, over the {max}-byte limit; give the application's own .elf from its build directory (objcopy --only-keep-debug makes a smaller one that keeps the symbols and DWARF)."
ELF_NOT_ELF = "this is not an ELF file (it starts {start!r}, not b'\\x7fELF'); give the firmware's .elf from its build directory, not the .bin or .hex image."
ELF_UNREADABLE = "the ELF could not be read ({error}); it may be truncated or damaged: rebuild it, or give the .elf from the build directory."
EVENTS_BOOT_PATTERNS_TOO_BIG = "boot_patterns together with the built-in crash and boot signatures are over the regex budget ({error}); give fewer or shorter patterns."

# --- issue 23.2-3: lend, reclaim, follow -------------------------------------------------------------
FOLLOW_ABSENT = "{device} is not on the bus (last seen as {path}); it is looked for under any node it comes back as"
FOLLOW_OTHER_DEVICE = (
    "{path} is another device now ({other}), not {device}: it is not taken; {device} is looked for under any node"
)
FOLLOW_AMBIGUOUS = "{device} shows up as several ports ({ports}); not guessing which one: open the one you mean"
D_LEND = (
    "Lend the port to a flasher (arduino-cli, avrdude): release closes the OS handle, keeping buffer, "
    "offsets and recording, until reclaim, timeout_ms or that program lets go."
)
P_LEND_ACTION = "release, reclaim or status (default)."
P_LEND_TIMEOUT = "release: reclaim after this at the latest (default {default})."
PORT_RELEASED = (
    "connection {id!r} is released: its port {port!r} is lent to another program{since}; nothing was "
    "sent or read. It comes back by itself when that program lets go (or in {left_ms} ms); call "
    "lend(action=\"reclaim\") to take it back now."
)
PORT_RELEASED_SINCE = " since {when}"
LEND_NOT_OPEN = (
    "connection {id!r} is {state}, not open: only an open port can be released{advice}"
)
LEND_NOT_OPEN_RELEASED = " (it is released already; reclaim takes it back)"
LEND_TIMEOUT_BAD = "timeout_ms is {value!r}; give whole milliseconds from 1 to {max} (default {default})"
LEND_TIMEOUT_NOT_RELEASE = (
    "timeout_ms goes with action=\"release\" only (how long the port may stay lent); reclaim takes it back now"
)
S_LEND_RELEASED = (
    "{id}: {port} released at offset {offset}; {watch} It comes back within {ms} ms at the latest."
)
S_LEND_WATCHING = "it comes back as soon as the program that takes it lets go."
S_LEND_NOT_WATCHING = "who holds it cannot be seen here, so only reclaim or the timeout bring it back."
S_LEND_STATE = "{id}: {port} is {state}, RX at offset {offset}."
P_RESET_TOUCH = ' Or {"kind": "1200bps_touch"}: the Arduino native-USB reset.'
RESET_TOUCH_ALONE = 'reset {{"kind": "1200bps_touch"}} takes no other key (it got {keys}); the touch sets the baud rate and DTR itself.'
RESET_KIND_BAD = "reset.kind is {value!r}; give \"lines\" (a DTR/RTS pulse, the default) or \"1200bps_touch\"."
TOUCH_UNSUPPORTED = "connection {id!r} cannot be reopened, so it cannot do the 1200-baud touch"
TOUCH_FAILED = "the 1200-baud touch: {error}; waiting for the board to come back anyway"

# --- issue 24.2-5: events surfaced ---------------------------------------------------------------
EVENT_MARK_ALERT = "⚠"
EVENT_MARK_INFO = "↻"
EVENT_LINE = "{mark} {summary}{where}"
EVENT_LINE_WHERE = " — {where}"
EVENT_LINES_MORE = "… and {n} more event(s): get_log lists them all"
ELF_BAD_NAME = "elf must be a file name or path (the firmware's .elf from its build directory)."
ELF_REFUSED = "elf {path!r} is outside the places firmware files may be read from: the capture directory, captures/, the allowlist's replay:// paths and the --firmware-dir directories; copy the .elf there or ask the operator to add its build directory with --firmware-dir."
ELF_NOT_FOUND = "elf {path!r} was not found as a file in the working directory, the --firmware-dir directories, the capture directory or captures/; give the path of the .elf in the firmware's build directory."
ELF_READ_FAILED = "elf {path!r} could not be read: {error}."
P_UNTIL = "End on a detected event (reset: an unannounced reboot too), after its lines: stop_reason 'event'."
P_ELF = "Firmware .elf (DWARF): crash backtraces as function at file:line. From captures/ or --firmware-dir."
S_EVENTS_STATUS = "; events: {boots} boot(s), {crashes} crash(es){exceptions}{loops}{last}"
S_EVENTS_STATUS_EXCEPTIONS = ", {n} exception(s)"
S_EVENTS_STATUS_LOOPS = ", {n} boot loop(s)"
S_EVENTS_STATUS_LAST = ", last: {kind} at offset {offset}: {line}"
S_EVENTS_NOT_SCANNED = "; {n} byte(s) not scanned for events (the detector fell behind a flood; the latest: offsets {lo}-{hi})"
OPT_FIRMWARE_DIR = "directory of firmware builds whose ELF files open(elf=...) may read (repeatable)"
READ_BAD_UNTIL = "until {value!r} is not a list of event kinds; use some of: {allowed}."
CLI_DECODE_EVENTS = "list the boots, resets, crashes and boot loops in the received bytes instead of frames"
CLI_EVENTS_NO_FILTER = "--events lists boots, resets and crashes; --print-filter filters esp_log frames: give one of them."
CLI_DECODED_EVENTS = "{n} event(s), {crashes} crash(es)"

# --- issue 25: labgrid ---------------------------------------------------------------------------
LABGRID_URL_FORM = "give labgrid://PLACE or labgrid://PLACE/RESOURCE (names of letters, digits, '_', '.', '+', '-'); no user@, port, options or #fragment: the coordinator says where the place's serial port is"
LABGRID_NOT_INSTALLED = "labgrid:// ports need labgrid, which is not installed ({error}); install it into this environment: pip install 'labgrid=={version}' (the labgrid extra; from serial-mcp's clone: pip install '.[labgrid]'; it brings pyserial-labgrid)."
LABGRID_NO_COORDINATOR = "{port!r} needs a labgrid coordinator: start serial-mcp with --labgrid-coordinator HOST:PORT, or set LG_COORDINATOR."
LABGRID_NO_ANSWER = "no answer within {seconds} s"
LABGRID_UNAVAILABLE = "the labgrid coordinator at {address} cannot be reached ({error}); check that labgrid-coordinator runs there and that --labgrid-coordinator / LG_COORDINATOR names it."
LABGRID_PLACE_NOT_FOUND = (
    "labgrid place {place!r} does not exist on the coordinator at {address}.{hint} Places: {places}."
)
LABGRID_BUSY = "labgrid place {place!r} is acquired by {holder} (since {since}); this server is {me}. Wait until it is released, or, if that holder is gone (a stopped agent keeps labgrid's lock), release it: labgrid-client -x {address} -p {place} release --kick"
LABGRID_ACQUIRE_REFUSED = "the coordinator refused to acquire labgrid place {place!r} for {me}: {error}. See labgrid-client -p {place} show (a reservation, or a resource another place holds)."
LABGRID_RELEASE_FAILED = "labgrid place {place} could not be released ({error}); it stays acquired: labgrid-client -p {place} release"
LABGRID_RESOURCE_NOT_FOUND = (
    "labgrid place {place!r} has no serial resource named {name!r}.{hint} Its serial resources: {names}."
)
LABGRID_NO_SERIAL = "labgrid place {place!r} holds no NetworkSerialPort (it holds: {resources}); add the board's serial port to it: labgrid-client -p {place} add-match EXPORTER/GROUP/NetworkSerialPort"
LABGRID_SERIAL_AMBIGUOUS = (
    "labgrid place {place!r} has several serial ports ({names}); name one: labgrid://{place}/NAME."
)
LABGRID_SERIAL_UNAVAILABLE = "the serial port {name!r} of labgrid place {place!r} is not available now: its exporter {exporter} is disconnected from the coordinator at {address}, or its device is gone; retry once the exporter is back (a reconnect policy retries by itself)."
LABGRID_SWITCH_FAILED = "switching the {what} of labgrid place {place!r} {state} failed: {error}"
LABGRID_NO_SWITCH = "labgrid place {place!r} has no {what} switch{name} that serial-mcp drives (it holds: {resources}); supported: {supported}."
LABGRID_SWITCH_AMBIGUOUS = "labgrid place {place!r} has several {what} switches ({names}); name one with reset.name / reset.digital_output."
LAB_RESET_POWER = 'reset.power must be "cycle" (off, off_ms, arm the capture, on).'
LAB_RESET_OFF_MS = "reset.off_ms must be a whole number of milliseconds from 0 to {max}."
LAB_RESET_NAME = "reset.name must be the name of one of the place's power switches."
LAB_RESET_OUTPUT = (
    "reset.digital_output must be the name of one of the place's digital outputs, or true for its only one."
)
LAB_RESET_NOT_LAB = "{port} is not a labgrid place: power and digital_output resets switch a lab board (labgrid://PLACE); use reset {{dtr, rts}} or send for this port."
P_RESET_LAB = "labgrid:// also: {power: cycle, off_ms} or {digital_output: NAME|true, hold_ms}."
OPT_LABGRID_COORDINATOR = "labgrid coordinator for labgrid://PLACE ports and list_ports"
CLI_POWER_CYCLE = (
    "labgrid:// only: power-cycle the board and print its boot (DATA, if given, is sent after power on)"
)
CLI_OFF_MS = "with --power-cycle: how long the power stays off, ms (default 1000)"
CLI_SEND_NEEDS_DATA = "send needs DATA (only --power-cycle may go without)"
CLI_POWER_CYCLE_DATA = "with --power-cycle DATA is sent as text: it must be UTF-8 after escapes"
S_LAB_ERROR = " labgrid places not listed: {error}"

# --- issue 23.1: RFC 2217 mirror -------------------------------------------------------------------
P_MIRROR_KINDS = (
    "ro|rw: also show the device on a PTY for a person (rw: they can type); rfc2217: serve it on "
    "rfc2217://127.0.0.1:PORT (mirror_url) for esptool/mpremote; rfc2217+esp-reset: and play "
    "esptool's download reset on the port."
)
MIRROR_BAD_KIND = (
    "mirror {value!r} is not valid; use 'ro' (watch on a PTY), 'rw' (watch and type), 'rfc2217' "
    "(serve the port to esptool/mpremote over rfc2217://) or 'rfc2217+esp-reset' (and play esptool's "
    "download-mode reset on the port itself)."
)
MIRROR_CONFIGURE_BAD = (
    "configure's mirror is {value!r}; on a live connection give \"rfc2217\" (start an RFC 2217 mirror), "
    "\"rfc2217+esp-reset\" (one that plays esptool's download reset on the port) or null (end it)."
)
S_RFC2217_MIRROR = "; RFC 2217 mirror on {url}"
S_STATUS_LENT = "; lent to RFC 2217 client {client} (writes refused without force, responders held)"
PORT_LENT = (
    "{id} is lent to the RFC 2217 client {client} on {url}: serial-mcp writes nothing of its own "
    "meanwhile. Wait for it to leave (get_status shows rfc2217.client), {hint}"
)
PORT_LENT_FORCE = "or pass force=true to write over it."
PORT_LENT_NO_FORCE = "or close the client first: reopening or lending the port under it would cut it off mid-flash."
PORT_LENT_CONFIGURE = "or change the settings with reconfigure(force=true)."
CLI_MIRROR_RFC2217 = (
    "serve the port as an RFC 2217 server on 127.0.0.1 instead (esptool/mpremote --port rfc2217://…); "
    "receive-only under --read-only"
)
CLI_MIRROR_ONE_KIND = "give --rw or --rfc2217, not both"
CLI_MIRROR_ESP_RESET = (
    "with --rfc2217: play esptool's download-mode reset on the port itself (pyserial's client is too "
    "slow between DTR and RTS for an auto-program circuit); off by default"
)
CLI_MIRROR_ESP_RESET_ALONE = "--esp-reset goes with --rfc2217"
CLI_MIRRORING_RFC2217 = "serving {port} on {url}{ro}; Ctrl-C ends it"
CLI_MIRROR_RECEIVE_ONLY = " (read-only: receive-only)"

# --- issue 24.4 / 26.8: esp_log, frames to count on ---
ESP_FILTER_COLONS = "print_filter item {item!r} has more than one ':'; write tag:level, e.g. 'wifi:W' or '*:E'."
ESP_FILTER_NO_TAG = "print_filter item {item!r} has no tag before ':'; write tag:level, or '*{item}' for every tag."
ESP_FILTER_LEVEL = "print_filter item {item!r}: level {level!r} is not one of N, E, W, I, D, V (or *); e.g. 'wifi:W'."
CLI_PRINT_FILTER = "esp-idf-monitor's --print_filter for ESP-IDF logs, e.g. 'wifi:W *:E' (implies the esp_log parser)"
CLI_FILTERED = "{n} line(s) hidden by --print-filter {filter!r}"
CLI_PRINT_FILTER_PARSER = "--print-filter filters ESP-IDF log lines and needs the esp_log parser, not {parser!r}; drop --rx-parser/--protocol or give --rx-parser '{{\"type\": \"esp_log\"}}'."

# --- issue 26: answers, not bytes ---------------------------------------------------------------
P_SUMMARY = (
    "Count instead of returning frames: per message type n/bad, last values, ranges; bad frames by reason. "
    "Window: from..to, or all that arrives within timeout_ms."
)
P_TO = "summary: end of the window (an absolute offset)."
P_FIELDS = "summary: numeric fields to range over (e.g. hMSL, registers[0]); default: the decoded ones."
P_REPLY = "With match: 'match' returns only the match, 'tail:N' it and N bytes before; the rest is skipped and counted."
P_VERBOSE = "Structured result with every field (nulls, defaults, per-frame t)."
P_VALIDATE_DEFAULT = "validate: drop bad-checksum frames (default false; presets nmea0183, gnss, modbus_rtu: true)."
READ_BAD_REPLY = "reply is {value}; give 'match' or 'tail:N' (N bytes before the match, 0 to {max})"
READ_REPLY_NEEDS_MATCH = "reply needs match: it says which part of what arrived to return"
READ_SUMMARY_ONLY = "{name} belongs to a summary read; add summary: true (or leave {name} out)"
READ_SUMMARY_BAD_TO = "to is {to}, before the window's start {start}; give an offset at or after it"
READ_SUMMARY_FIELDS = "fields: give at most {max} field names (strings), e.g. ['hMSL', 'registers[0]']"
READ_SUMMARY_WITH = "summary reads count frames; {name} does not apply to them (leave it out)"
S_SUMMARY = "summary [{start}..{end}) stop={stop}{lost}: {frames} frame(s){bad}{rate}{skipped}{pending}; {types}"
S_SUMMARY_BAD = ": {valid} valid, {n} bad ({reasons})"
S_SUMMARY_RATE = " in {s} s ({rate}/s)"
S_SUMMARY_BAD_FRAMES = "; bad: {items}"
S_REPLY_SKIPPED = " skipped {n} byte(s) before it"
S_DROPPED_NAMED = " dropped {n} bad frame(s): {items}"
R_COUNTS = (
    "{frames (= valid + bad), valid, bad, bad_reasons, bytes_skipped, skipped_reason, pending: {offset, bytes, "
    "damaged}, first_offset, last_offset, seconds, rate_per_s, types: {'<kind> <type>': {n (= valid + bad), "
    "valid, bad, last, last_offset, ranges: {field: {min, max, mean, last}}}}, bad_frames}"
)
S_OPEN_RULES = "; standing rules armed: {rules}"
S_STATUS_CURSOR_LOST = "; the default cursor lost {n} byte(s) (evicted from the ring before it read them; {evicted} evicted in all)"
S_RECORD_REPLAY = ". Replay it with open(port='replay://{name}')"
S_CAPTURE_ITEM = "{name} ({size} B{duration})"
S_MPY_RAISED = "the script raised: {error}"
S_STANDING_ANSWERED = "; responder {on!r} answered at offset {offset}"
S_FRAMES_SKIPPED = " skipped {n} frame(s) before the match"

# --- issue 27.7: XMODEM machines as transition tables ---------------------------------------------
XMODEM_PROTOCOL_ERROR = (
    "the transfer hit {event} while {state}, which the protocol does not allow ({why}); it was cancelled. "
    "Retry the transfer; if it recurs, capture the line and report it."
)

# --- issue 27/28: start-up and leftovers ---------------------------------------------------------
DECODE_NOT_REGULAR_INPUT = (
    "cannot decode {path}: it is {kind}, not a regular file, and could be read for ever; save the"
    " bytes to a file first (e.g. head -c 1M {path} > part.bin) and decode that."
)
DECODE_INPUT_TOO_BIG = (
    "cannot decode {path}: it holds {size} bytes, more than the {max} bytes decode reads; decode a part"
    " of it (e.g. head -c {max} {path} > part.bin)."
)

# --- issue 24 follow-up: print_filter counts in results, the view's --print-filter, offline ELF ----
S_FRAMES_FILTERED = " hid {n} frame(s) by the print filter"
CLI_ELF = "the firmware's ELF (build/app.elf): the backtrace addresses of the events become function at file:line"
CLI_ELF_NOT_FOUND = "--elf {path!r}: no such file; give the path of the firmware's .elf in its build directory."
CLI_ELF_NOT_REGULAR = "--elf {path!r} is not a regular file; give the firmware's .elf from its build directory."
CLI_ELF_NEEDS_EVENTS = "--elf decodes the backtraces of the events --events lists; give --events too (frames are not decoded against an ELF)."

# --- E: the whole story in the text (issue 38.3-4) ---
EVENTS_NOT_SCANNED_RANGE = "… offsets {lo}-{hi} ({n} bytes) were not scanned for events: the detector fell behind a flood"
S_LOG_EVENTS_HEAD = "\n{n} detected event(s), most important first:"
S_LOG_EVENT_LINE = "\n#{seq} {line}"
S_LOG_EVENTS_MORE = "\n… and {n} more detected event(s) in this page"
P_LOG_KINDS = "Only these entries: log types (rx, tx, open, event, ...) or event kinds (crash, boot_loop, boot, ...)."
LOG_BAD_KINDS = "kinds {value!r} has {bad!r}, which is neither a log type nor an event kind; use some of: {allowed}."
# --- D2 ---
EVENT_WHERE_CALLER = " ← "  # between a crash's frame and its caller's, innermost first
EVENT_WHERE_MORE = " ← … and {n} more"  # after the frames a text line names
# --- C (issue 36.5, 36.8): a reopen opens the same device; a held port is exclusive ---------------
PORT_CHANGED_REOPEN = (
    "port {port!r} names another device now ({now}), not the one this connection opened ({first}); "
    "it was not opened and nothing was written to it. Point {port!r} back at {first}, or close this "
    "connection and open the other device by name."
)
# --- B ---
ELF_INFLATES_TOO_MUCH = (
    "the ELF's compressed debug sections would inflate to more than the {max}-byte limit (section {section}"
    " claims {claim} bytes; {total} in all so far): it was not read. Give the application's own .elf from its"
    " build directory; a real one inflates to far less."
)
ELF_OUT_OF_MEMORY = (
    "the ELF could not be read: it needs more memory than this server can give it; give the application's"
    " own .elf from its build directory (objcopy --only-keep-debug makes a smaller one)."
)
# --- D1 (issue 38): events you can act on — the resets a user caused, exceptions ---------------------
EVENT_MARK_EXCEPTION = "✗"
EVENT_RESET_LINES = "DTR/RTS set by the caller"
EVENT_RESET_LINES_BY = "DTR/RTS set by {who}"
EVENT_RESET_MIRROR_CLIENT = "the RFC 2217 client"
EVENT_RESET_CAPTURE_BOOT = "capture_boot"
EVENT_RESET_LEND = "lend{to}"
EVENT_RESET_LEND_TO = " to pid {pids}"
# --- A ---
MIRROR_REFUSED_USER = (
    "serial-mcp: refused: this RFC 2217 mirror serves only its owner (uid {uid}) and root, and this"
    " connection is from {who}. Ask the owner of the port, or run serial-mcp as your own user.\r\n"
)
MIRROR_SUBNEGOTIATION_TOO_LONG = (
    "a Telnet subnegotiation longer than {limit} bytes (RFC 2217's are at most 10)"
)
OPT_MIRROR_ANY_USER = (
    "let the mirrors serve a peer whose uid cannot be found (no /proc/net/tcp); the server's own user"
    " and root are always served, other users never"
)
MIRROR_DOOR = (
    "{port} is {mirror} of {id}, which {owner}: opening it would reach {id}'s device past its owner"
    " and its port_lent, so it is refused."
)
MIRROR_DOOR_RFC2217 = "the RFC 2217 mirror {url}"
MIRROR_DOOR_PTY = "the PTY mirror {path}"
MIRROR_DOOR_YOURS = "you own: use {id} itself (write/transact, force=true while a mirror client holds it)"
MIRROR_DOOR_THEIRS = (
    'another session owns: only that session may write to it, unless it opens it with share="write"'
)
MIRROR_DOOR_NOBODYS = "no session owns now (its opener left it shared): write to {id} itself"
SETTINGS_BY_BORROWER = "the program the port is released to (lend)"
SETTINGS_BY_CLIENT = "the RFC 2217 client {client}"
S_STATUS_SETTINGS_BY = (
    "; the port runs at {now}, set by {by}; the connection's own {own} come back when it leaves"
)
S_STATUS_SETTINGS_UNSEEN = (
    "; the port's settings are set by {by}, not seen here; the connection's own {own} come back at reclaim"
)
MIRROR_PEER_UNKNOWN = "a peer whose uid could not be found"
MIRROR_PEER_GONE = "a peer that closed its socket before it was accepted"
# --- F: issue 37 items 1, 2 and 8 (counts that add up, no silent bad frame, readable text) --------
FRAMING_REPLY_TO = (
    "rx_framing.reply_to {value!r} is not the hex of a Modbus RTU request (at least address and function);"
    " give the request's bytes, e.g. \"01 03 00 00 00 01 84 0A\"."
)
S_DAMAGED_PENDING = "1 damaged frame pending at offset {offset} (it failed its CRC at its shorter shape)"
S_SUMMARY_SKIPPED = "; skipped {n} byte(s) {why}"
S_SUMMARY_PENDING = "; {n} byte(s) pending at offset {offset} when the window ended"
S_SUMMARY_PENDING_DAMAGED = "; 1 damaged frame pending at offset {offset} (counted bad)"
S_SUMMARY_TYPE_BAD = " ({valid} valid, {bad} bad)"
READ_SUMMARY_UNKNOWN_FIELD = (
    "fields: {name!r} is not a value a summary knows.{hint} Give decoded values such as hdop, sv, alt, "
    "lat, lon, height (NMEA, UBX), a UBX/RTCM3 field (numSV, hMSL) or Modbus registers[N]."
)
CLI_DECODED_COUNTS = (
    "{total} frame(s): {valid} valid, {bad} bad ({dropped} dropped by validation, {marked} shown marked bad, "
    "{errors} framing error(s))"
)
CLI_DECODED_SKIPPED = "; {n} byte(s) in no frame"
# --- G1 (issue 37: recordings from byte 0, demo checks, simulators, replay paths) ----------------
P_RECORD_FROM = "'now' (default), 'buffer_start' or an RX offset."
RECORD_FROM_NOT_START = "from is for action 'start' (where the recording begins); leave it out for stop and status."
RECORD_BAD_FROM = "from is {value!r}; give 'now', 'buffer_start' or an RX offset from 0 to {end} (the newest byte)."
S_RECORD_FROM = " from RX offset {offset}"
S_RECORD_LOST = " ({n} byte(s) from there were already dropped by the ring: a lost line)"
DEMO_DONE = "demo finished: all {n} steps gave what they should (the typo 'baudrate' was refused on purpose)."
DEMO_FAILED = "demo FAILED at {step}: {why}"
DEMO_STEP = "step {n} ({tool} {args})"
DEMO_NO_MATCH = "the reply never matched (stop={stop}, got {data!r})"
DEMO_NOT_OK = "the command did not end in OK (got {got})"
DEMO_NO_FRAMES = "no frame came (stop={stop})"
DEMO_NO_EVENTS = "the log holds no event"
DEMO_NO_CONNECTION = "no connection_id in the result"
DEMO_NOT_REFUSED = "the call was not refused with {code}"
DEMO_ERROR = "the call failed: {error}"
REPLAY_NOT_READ = (
    " Not read: {paths} — the server reads replay files only from the capture directory, the working"
    " directory's captures/ and the allowlist's replay:// paths, not the working directory itself; move"
    " the file into captures/ or start the server with --capture-dir set to its directory."
)
SIM_ESP32_NO_RAM_CODE = "serial-mcp sim://esp32-rom cannot run code loaded into RAM (a stub flasher): run esptool with --no-stub"
ESP_HINT_SIM = "esptool: open with mirror='rfc2217+esp-reset' and run esptool --no-stub on its URL (plain rfc2217 resets too slowly: 'Wrong boot mode')"
ESP_HINT_SIM_MIRRORED = "esptool: run it with --no-stub on the mirror's URL (the simulator cannot run esptool's stub)"
ESP_HINT_ESPRESSIF = "an Espressif USB device: for esptool, open with mirror='rfc2217+esp-reset' (plain rfc2217 resets too slowly: 'Wrong boot mode')"
ESP_HINT_BRIDGE = "a {bridge} USB-UART bridge: if this is an ESP32, esptool needs mirror='rfc2217+esp-reset' (plain rfc2217 resets too slowly)"
S_OPEN_HINT = ". {hint}"
# --- G2 ---
S_NOTHING_SINCE_OPEN = "nothing received since the port opened"
S_NOTHING_NEWLINE = " (the device may be waiting for a newline: end data with \\r or \\n)"
S_NOTHING_CHECK = " (check the port, its baud rate and wiring, and that the device is powered)"
S_NOTHING_READ = " (the device may be waiting for a command; else check the port, baud rate and wiring)"
READ_FROM_NO_BOOT = (
    "from 'last_boot': no boot seen on this connection yet ({n} event(s) kept); read from 'buffer_start',"
    " or reset the board with capture_boot."
)
READ_FROM_NO_EVENT = (
    "from {{event: {seq}}}: this connection keeps no event {seq} (kept: {kept}); a result's events and"
    " get_log give each event's seq."
)
# identify: kinds (core/port_kinds.py: what is on a port, judged from bytes) ---------------------------
KIND_HOLD_COUNTDOWN = "U-Boot autoboot countdown or boot menu: any byte stops it"
KIND_HOLD_BOOT = "boot in progress"
KIND_FEW_BYTES = "only {count} bytes"
KIND_NOT_TEXT = "{count} bytes, not text: wrong baud rate?"
KIND_BINARY = "{count} bytes, not text: {first}"
KIND_FRAMES = "{count} valid {what} frames: {first}"
KIND_MODBUS_REPLY = "slave {slave} at {baud} {framing}: {frame}"
KIND_REPLY = "{poke} -> {reply}"
