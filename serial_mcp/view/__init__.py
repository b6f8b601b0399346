"""A capture as one self-contained HTML page: timeline, transcript, decoded frames and plots.

``model`` builds the data (parsing with ``core/capture``, decoding as ``serial-mcp decode`` does),
``render`` writes the page with the inline ``assets/``, ``command`` is the CLI front door.
"""
