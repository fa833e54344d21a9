"""Sizing engine: pure functions from workload figures to infrastructure figures.

Every function takes plain numbers (not spec objects, so each formula can be checked against
its published source in isolation) and returns a frozen ``Result`` that carries the figures,
the formula in words and the inputs it used; ``aiplat.plan`` maps the spec onto these calls.

Units are in the field names: ``_bytes``, ``_flops``, ``_seconds``, ``_w`` (watts),
``_bps`` (bytes per second), ``_gpus``; ``GB`` in prose means 10^9 bytes, ``GiB`` 2^30.
"""
