"""Front-door commands and the pytest plugin, used as a person would: subprocesses and pytester runs."""
