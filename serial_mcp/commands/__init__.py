"""The ``serial-mcp`` front-door commands other than the server: each module is one command family.

``cli.py`` parses flags and calls ``run_*`` here; these call only the public API
(``serial_mcp.api``: the engine, PTY serving, replay playback) and the pure decoders in ``core/``.
Nothing here touches a port handle, a lock, a thread or a PTY itself.
"""
