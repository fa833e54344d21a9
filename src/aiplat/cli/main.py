"""The ``aiplat`` command group and its error handling.

Subcommands load lazily: each lives in its own module with heavy imports (jinja2,
kubernetes-validate, numpy, httpx), and a command should pay only for what it uses. The
top-level ``--help`` and the completion of command names read ``SUMMARIES`` (each command's
one-line help, kept equal to the real one by tests/unit/test_cli_startup.py) instead of
importing every module, which is what keeps ``aiplat --help`` near bare-interpreter time.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from aiplat import __version__
from aiplat.errors import AiplatError
from aiplat.text import shown_lines

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, attribute), in the order `aiplat --help` lists them
    "plan": ("aiplat.cli.plan", "plan"),
    "spec": ("aiplat.cli.spec", "spec"),
    "node": ("aiplat.cli.node", "node"),
    "cdi": ("aiplat.cli.devices", "cdi_group"),
    "runtime": ("aiplat.cli.devices", "runtime_group"),
    "sharing": ("aiplat.cli.devices", "sharing_group"),
    "accounting": ("aiplat.cli.devices", "accounting_group"),
    "kube": ("aiplat.cli.kube", "kube"),
    "sim": ("aiplat.cli.sim", "sim"),
    "model": ("aiplat.cli.model", "model"),
    "lab": ("aiplat.cli.lab", "lab"),
    "net": ("aiplat.cli.lab", "net"),
    "diagnose": ("aiplat.cli.lab", "diagnose"),
    "maintain": ("aiplat.cli.maintain", "maintain"),
    "slurm": ("aiplat.cli.slurm", "slurm"),
    "matrix": ("aiplat.cli.handover", "matrix_group"),
    "accept": ("aiplat.cli.handover", "accept_group"),
    "monitoring": ("aiplat.cli.ops", "monitoring"),
    "runbook": ("aiplat.cli.ops", "runbook"),
    "samples": ("aiplat.cli.samples", "samples"),
    "catalog": ("aiplat.cli.catalog", "catalog"),
    "version": ("aiplat.cli.version", "version"),
    "completion": ("aiplat.cli.completion", "completion"),
}

SUMMARIES: dict[str, str] = {
    # name: the command's short help as click derives it (its first sentence)
    "plan": "Size the platform in SPEC (default: the built-in example) and write the plan.",
    "spec": "Validate the platform spec, print its JSON Schema or the built-in example.",
    "node": "Inspect, check and prepare a Linux accelerator node.",
    "cdi": "Generate, validate and verify (in real containers) Container Device Interface "
           "specs.",
    "runtime": "Container runtime configuration for CDI and NRI.",
    "sharing": "GPU sharing: strategies, MIG layout plans, device plugin / DRA configs, "
               "comparison.",
    "accounting": "GPU-hours and weighted slice-hours per tenant.",
    "kube": "Kubernetes manifests for the platform: render, validate, lint, explain pending "
            "work.",
    "sim": "Simulate Kueue queues and GPU placement: waits, fairness, fragmentation, cost.",
    "model": "Package, sign, push, pull, cache, verify and benchmark model artifacts (OCI).",
    "lab": "A lab on this host: network namespaces as nodes on management, storage, service "
           "and hpc bridges, a model store, Prometheus; fault injection.",
    "net": "Network checks.",
    "diagnose": "Rank causes of slow model pulls and network trouble from Prometheus metrics.",
    "maintain": "Rolling maintenance of a pool: canary, batches, each node's steps.",
    "slurm": "Slurm for the bare-metal deployment: the same pools and tenants as a Slurm "
             "cluster.",
    "matrix": "The approved version combinations, checked against compatibility facts.",
    "accept": "Acceptance: function, performance, isolation and repeatability in one record.",
    "monitoring": "Prometheus rules, their unit tests, scrape configuration and checklist.",
    "runbook": "Write the runbook for SPEC (default: the built-in example) as Markdown and "
               "HTML.",
    "samples": "Sample inputs for the tour: node trees, a containerd config, cluster snapshots.",
    "catalog": "List the built-in catalog: GPUs, models and node types.",
    "version": "Print aiplat's version, commit, Python and the upstream versions it targets.",
    "completion": "Print the shell completion script for bash, zsh or fish.",
}


class Finite(click.FloatRange):
    """A float option that must be a finite number (click's FloatRange lets ``nan`` through,
    since every comparison with NaN is false) within the given range."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return float(rv)


SEED = click.IntRange(0, 2**32 - 1)
"""A random seed: what numpy and ``random`` accept."""


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        _verbose_anywhere(command)
        return command

    def _listed(self, ctx: click.Context, name: str) -> click.Command | None:
        """The command as a listing shows it: a stand-in carrying its summary when one is
        known (no import), else the real command."""
        if name in SUMMARIES and name in COMMANDS:
            return click.Command(name, help=SUMMARIES[name])
        return self.get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click.Group.format_commands, with the stand-ins instead of imported commands.
        commands = [(n, c) for n in self.list_commands(ctx)
                    if (c := self._listed(ctx, n)) is not None and not c.hidden]
        if not commands:
            return
        limit = formatter.width - 6 - max(len(n) for n, _ in commands)
        with formatter.section("Commands"):
            formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in commands])

    def shell_complete(self, ctx: click.Context,
                       incomplete: str) -> list[CompletionItem]:
        # click.Group.shell_complete, with the stand-ins: completing a command name imports
        # nothing; completing below it loads that one command.
        from click.shell_completion import CompletionItem

        items = [CompletionItem(n, help=c.get_short_help_str())
                 for n in self.list_commands(ctx) if n.startswith(incomplete)
                 if (c := self._listed(ctx, n)) is not None and not c.hidden]
        return items + click.Command.shell_complete(self, ctx, incomplete)


class _Verbosity:
    """The -v count of this invocation, wherever on the line they were given."""

    count = 0


def _more_verbose(_ctx: click.Context, _param: click.Parameter, value: int) -> None:
    if value:
        _Verbosity.count += value
        _log_level(_Verbosity.count)


def _verbose_anywhere(command: click.Command) -> None:
    """``-v`` after the command name too (``aiplat kube lint tree/ -v``), as before it: each
    command and subcommand gets the option, hidden from its help (the group's help shows
    it once). Added once, when the lazy group loads the command; no command has a -v of
    its own (a test walks the tree)."""
    if any("--verbose" in p.opts for p in command.params):
        return
    command.params.append(click.Option(
        ["-v", "--verbose"], count=True, expose_value=False, hidden=True,
        callback=_more_verbose, help="More detail on stderr (as `aiplat -v`)."))
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _verbose_anywhere(sub)


EPILOG = """\b
Exit codes:
  0    done; every check passed
  1    a check failed or found problems (the output says which)
  2    usage, input or output error (the message names the file, the field and the fix)
  130  interrupted

\b
Examples:
  aiplat catalog node-types
  aiplat spec example > platform.yaml
  aiplat -v spec validate platform.yaml
  aiplat version -o json
"""


@click.group(cls=LazyGroup, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _p, value: _print_version(ctx) if value else None,
              help="Show the version, commit and Python, and exit (`aiplat version` for the "
                   "upstream versions).")
@click.option("-v", "--verbose", count=True,
              help="More detail on stderr: -v logs aiplat's steps and shows the cause chain "
                   "of an error, -vv debug logs; also after the command name.")
@click.option("--catalog", "catalogs", multiple=True, metavar="FILE",
              envvar="AIPLAT_CATALOG", type=click.Path(dir_okay=False),
              help="Your own GPUs, models and node types on top of the built-in catalog "
                   "(repeatable; $AIPLAT_CATALOG, paths separated by ':'), in its form: "
                   "gpus:, models:, nodeTypes:. An entry named like a built-in one "
                   "replaces it.")
def cli(verbose: int, catalogs: tuple[str, ...]) -> None:
    """aiplat: size, build, check and hand over an AI platform from one spec."""
    _Verbosity.count = verbose
    _log_level(verbose)
    _use_catalogs(catalogs)


def _use_catalogs(paths: tuple[str, ...]) -> None:
    """The site's catalog files, checked as a spec is, on top of the packaged catalog for
    this invocation (none given: the packaged one, even after an earlier in-process call;
    a process that has not loaded the catalog yet has nothing to reset, and a command that
    never reads it does not pay for its import)."""
    if not paths:
        loaded = sys.modules.get("aiplat.catalog.load")
        if loaded is not None:
            loaded.use_overlays([])
        return
    from aiplat.catalog.load import use_overlays
    from aiplat.spec.load import load_catalog_overlay

    use_overlays([])  # a file refused below leaves the packaged catalog, not the last call's

    for entry in use_overlays([load_catalog_overlay(p) for p in paths]):
        _error(f"note: --catalog replaces the built-in {entry}")


def _print_version(ctx: click.Context) -> None:
    import platform

    from aiplat.cli._build import commit

    head = commit()
    click.echo(f"aiplat {__version__} (commit {head[:12]}, Python {platform.python_version()})")
    ctx.exit()


def _log_level(verbose: int) -> None:
    """The ``aiplat`` logger for this invocation (set every time, so an in-process caller's
    next command does not inherit a -v): warnings by default, INFO with -v, DEBUG with -vv,
    always on stderr so data stays alone on stdout."""
    import logging

    class ToStderr(logging.Handler):
        # the current sys.stderr at each record (a test's capture, a redirected stream)
        def emit(self, record: logging.LogRecord) -> None:
            _error(self.format(record))

    logger = logging.getLogger("aiplat")
    if not any(type(h).__name__ == "ToStderr" for h in logger.handlers):
        handler = ToStderr()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel({0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG))


def verbosity(argv: list[str]) -> int:
    """How many -v/--verbose the group got: the options before the command name (main
    reads it after the command's context is gone, to show an error's cause chain)."""
    count = 0
    for arg in argv:
        if arg == "--verbose":
            count += 1
        elif arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) == {"v"}:
            count += len(arg) - 1
        elif not arg.startswith("-"):
            break
    return count


def main(argv: list[str] | None = None) -> int:
    """Run one command; map every expected failure to a message on stderr and an exit code.

    0 ok, 1 a failed check or findings, 2 a usage, input or output error (an ``OSError`` that
    escaped a command names its file), 130 interrupted (SIGINT). With ``-v`` an error's
    traceback and cause chain go to stderr before its message.
    """
    args = sys.argv[1:] if argv is None else argv
    _Verbosity.count = 0
    try:
        cli.main(args=args, prog_name="aiplat", standalone_mode=False)
    except (AiplatError, OSError, click.ClickException) as e:
        shown = max(verbosity(args), _Verbosity.count)
        if shown and not isinstance(e, click.UsageError | BrokenPipeError):
            _traceback(e)
        return _handled(e)
    except (click.exceptions.Abort, KeyboardInterrupt):
        _error("aborted (interrupted)")
        return 130
    except click.exceptions.Exit as e:
        return e.exit_code
    return 0


def _handled(e: AiplatError | OSError | click.ClickException) -> int:
    if isinstance(e, AiplatError):
        _error(f"error: {e}" if "\n" not in str(e) else f"error:\n{e}")
        return e.exit_code
    if isinstance(e, click.ClickException):
        e.show()
        return e.exit_code
    if isinstance(e, BrokenPipeError):
        # The reader of stdout went away (``aiplat ... | head``): nothing left to say to it.
        _quiet_stdout()
        return 1
    _error(f"error: {_os_error(e)}")
    return 2


def _traceback(e: BaseException) -> None:
    import traceback

    with contextlib.suppress(OSError, ValueError):
        traceback.print_exception(e, file=sys.stderr)


def _error(message: str) -> None:
    # An error quotes its input (a path, a name, a peer's message): each line is shown
    # terminal-safe, so no escape sequence or bidi override in it reaches the terminal.
    text = shown_lines(message)
    with contextlib.suppress(OSError, ValueError):  # stderr closed as well
        click.echo(text, err=True)


def _os_error(e: OSError) -> str:
    reason = e.strerror or str(e)
    if e.filename is None:
        return reason
    where = str(e.filename) if e.filename2 is None else f"{e.filename} -> {e.filename2}"
    return f"{where}: {reason}"


def _quiet_stdout() -> None:
    # Python flushes stdout at exit and would print a second BrokenPipeError; point it at
    # /dev/null instead, as the Python documentation recommends for SIGPIPE.
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
