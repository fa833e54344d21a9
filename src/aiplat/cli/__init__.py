"""Thin command-line shell: parse arguments, call one library function, print.

Data goes to stdout, progress and errors to stderr; exit 0 ok, 1 failed checks or findings,
2 bad usage or input. Every ``AiplatError`` is caught once, in ``main``.
"""
