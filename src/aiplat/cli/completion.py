"""``aiplat completion bash|zsh|fish``: the shell script that completes aiplat's commands.

The script is click's own (``click.shell_completion``): it calls ``aiplat`` back with
``_AIPLAT_COMPLETE=<shell>_complete`` and the words typed so far, and click answers from the
command tree, so completion never goes stale. Command names complete without importing any
command module (``LazyGroup.shell_complete``); below a command only that one loads.
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    Load it in the current shell with `eval "$(aiplat completion bash)"`, or install it:

    \b
      bash: echo 'eval "$(aiplat completion bash)"' >> ~/.bashrc
      zsh:  echo 'eval "$(aiplat completion zsh)"' >> ~/.zshrc
      fish: aiplat completion fish > ~/.config/fish/completions/aiplat.fish

    Bash needs version 4.4 or later; zsh needs `compinit` run first.

    Exit codes: 0 printed, 2 unknown SHELL.

    \b
    Example:
      aiplat completion bash > /tmp/aiplat.bash
    """
    from aiplat.cli.main import cli

    cls = get_completion_class(shell)
    assert cls is not None  # every name in SHELLS is one click provides
    script = cls(cli, {}, "aiplat", "_AIPLAT_COMPLETE").source()
    click.echo(script, nl=not script.endswith("\n"))
