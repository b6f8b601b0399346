"""Frozen copies of the decode code before the issue 14 throughput work, so bench_decode.py can time
the old and the new implementation in the same run (and check that they emit the same output)."""
