"""``aiplat ARGS`` run in the test's own process, for tests that run the CLI over many files
(a subprocess per file would cost seconds each)."""

from __future__ import annotations

import contextlib
import io

from aiplat.cli.main import main as aiplat_main


def run(*args: str) -> tuple[int | None, str, str]:
    """(exit code, stdout, stderr); exit code None when it ended in an exception no handler
    caught (what a user sees as a traceback), its type and text then on stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | None = aiplat_main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except Exception as e:  # the crash the callers exist to catch
            code = None
            err.write(f"{type(e).__module__}.{type(e).__qualname__}: {e}")
    return code, out.getvalue(), err.getvalue()
