"""``aiplat model policy``: write the TrustPolicy ``model pull --policy`` reads, from public
key files and repository patterns, so nobody pastes PEM into YAML by hand.

The text is parsed back with the same parser ``pull --policy`` uses before it is printed:
what this prints is a policy pull accepts (a private key or a malformed file is refused
here, with the file named).
"""

from __future__ import annotations

import click

from aiplat.errors import InputError


def _key(value: str) -> tuple[str, str]:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise InputError(f"--key {value!r}: expected NAME=FILE.pub, e.g. "
                         "release=./release.key.pub")
    from aiplat import inputs
    from aiplat.artifacts.signing import load_public_key

    pem = inputs.read_text(path, "a public key file")
    load_public_key(pem, f"--key {name}={path}")  # a private key or junk: refused, file named
    return name, pem


@click.command()
@click.option("--key", "keys", multiple=True, required=True, metavar="NAME=FILE.pub",
              help="a trusted public key (PEM, as `model sign --generate-key` or cosign "
                   "writes it)")
@click.option("--signed", multiple=True, required=True, metavar="PATTERN",
              help="repositories (host/path, * and ? match) whose models need a signature by "
                   "one of the keys")
@click.option("--unsigned", multiple=True, metavar="PATTERN",
              help="repositories that need none (after the --signed rules)")
def policy(keys: tuple[str, ...], signed: tuple[str, ...], unsigned: tuple[str, ...]) -> None:
    """Print a TrustPolicy for `model pull --policy`: the --signed repositories need a
    signature by one of the keys, the --unsigned ones none, any other is refused.

    \b
    Examples:
      aiplat model sign --generate-key release.key
      aiplat model policy --key release=release.key.pub --signed '127.0.0.1:5000/models/*'
    """
    from aiplat.artifacts.signing import parse_policy
    from aiplat.kube.render_models import trust_policy_text

    pems = dict(_key(k) for k in keys)
    text = trust_policy_text(pems, list(signed), list(unsigned))
    parse_policy(text, "the policy")  # refuses a private key, bad PEM, unsafe patterns
    click.echo(text, nl=False)
