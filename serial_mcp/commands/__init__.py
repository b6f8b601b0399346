"""Front-door commands of the CLI (record, replay, decode, mirror, ports, send, read, view): each
built on the public API, never on engine internals."""
