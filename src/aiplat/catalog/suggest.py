"""Suggestions for a catalog name that is not there, which never change what was asked for.

A misspelt node type must not be "corrected" to a server with another accelerator:
``pcie-l4-4`` is close to ``pcie-l40s-4`` as text, but an L4 is not an L40S (half the
memory, a quarter of the power), so a user who takes the hint gets another platform. The
GPU a node-type name means is the pool's ``gpu.model`` when the spec gives one, else the GPU
whose name or alias appears in the typed name (``l4`` in ``pcie-l4-4``); suggestions are
drawn only from node types carrying that GPU. When none does, the hint says so and how to
describe the node without a node type. A word shaped like an accelerator's designation that
is no catalog GPU (``h20`` in ``hgx-h20-8``: an H20 is not an H200) gets no node-type
suggestion either.

Any other name (a GPU, a model, a pool, a tenant) gets a suggestion only when it is a small
edit away (difflib's ratio at least ``CLOSE``) and keeps the numbers typed, in order (the
choice may add one a truncated name left out: ``cpu-mgmt`` -> ``cpu-mgmt-2s``): in hardware
and model names the numbers are the product (an H20 is not an H200, Llama 2 7B not Llama 3
8B, Gemma 3 27B nothing like Llama 3 70B), so a hint that changes one proposes another real
product, never a spelling. Such a name gets the list to choose from instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from aiplat.catalog.models import Catalog, GpuModel

CLOSE = 0.75
"""The least difflib ratio of a suggestion: one or two characters off in a short name
('bacth' -> 'batch' 0.8, 'h100-sxm-80g' -> 'h100-sxm-80gb' 0.96), not another word
('gemma-3-27b' -> 'llama-3-70b' 0.64)."""
_NUMBER = re.compile(r"[0-9]+")


def closest(value: str, choices: Iterable[str], cutoff: float = CLOSE, *,
            same_numbers: bool = True) -> str | None:
    """The choice nearest to ``value`` ignoring case (difflib's ratio), or None; with
    ``same_numbers`` only among choices that keep ``value``'s numbers in order (another
    number is another product)."""
    numbers = _NUMBER.findall(value)
    choices = [c for c in choices if not same_numbers or _keeps(numbers, _NUMBER.findall(c))]
    close = difflib.get_close_matches(value.lower(), [c.lower() for c in choices], n=1,
                                      cutoff=cutoff)
    return next(c for c in choices if c.lower() == close[0]) if close else None


def _keeps(typed: list[str], numbers: list[str]) -> bool:
    """``typed`` is a subsequence of ``numbers``: each typed number there, in order."""
    rest = iter(numbers)
    return all(n in rest for n in typed)


def hint(value: str, choices: Sequence[str], listed: Sequence[str] | None = None) -> str:
    """'did you mean ...?' for a near spelling with the same numbers among ``choices``
    (names and aliases), else the list (``listed``: the names alone, default ``choices``)."""
    match = closest(value, choices)
    return f"did you mean '{match}'?" if match else one_of(listed or choices)


def one_of(choices: Sequence[str], most: int = 12) -> str:
    return "use one of: " + ", ".join(choices[:most]) + (" ..." if len(choices) > most else "")


def gpu_named_in(name: str, catalog: Catalog) -> GpuModel | None:
    """The GPU whose name or alias is a run of ``name``'s dash-separated words, the longest
    run winning (``hgx-h100-nvl-8`` means H100-NVL, not H100-SXM)."""
    words = [w for w in re.split(r"[-_.\s/]+", name.lower()) if w]
    for size in range(len(words), 0, -1):
        for start in range(len(words) - size + 1):
            gpu = catalog.gpu("-".join(words[start:start + size]))
            if gpu is not None:
                return gpu
    return None


# An accelerator designation: letters then digits (h100, l4, mi300x, gh200, a10g, b200).
_GPU_WORD = re.compile(r"^[a-z]{1,3}\d{1,4}[a-z]{0,2}$")
_DESCRIBE = ("drop nodeType and describe the node with gpu, cpuCores and memoryGiB (and powerKW "
             "for the power budget); `aiplat catalog node-types` lists the built-in ones")


def _gpu_words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_.\s/]+", name.lower()) if _GPU_WORD.match(w)]


def suggest_node_type(name: str, catalog: Catalog, gpu_model: str | None = None) -> str:
    """The hint for an unknown node type ``name`` in a pool whose ``gpu.model`` is
    ``gpu_model`` (None: not given)."""
    gpu = (catalog.gpu(gpu_model) if gpu_model else None) or gpu_named_in(name, catalog)
    if gpu is None and (words := _gpu_words(name)):
        aliases = [a for g in catalog.gpus for a in (g.name.lower(), *g.aliases)]
        near = closest(words[0], aliases)
        return (f"'{words[0]}' is no GPU in the catalog"
                + (f" (the nearest is '{near}', another GPU)" if near else "")
                + f"; {_DESCRIBE}")
    if gpu is None:
        return hint(name, [n.name for n in catalog.node_types])
    same = [n.name for n in catalog.node_types if n.gpu and catalog.gpu(n.gpu) == gpu]
    if not same:
        return f"no built-in node type carries {gpu.name}; {_DESCRIBE}"
    # the GPU is settled: the nearest of its node types, whatever their GPU count
    match = closest(name, same, cutoff=0.0, same_numbers=False) if len(same) > 1 else same[0]
    return f"did you mean '{match}' (the built-in node type with {gpu.name})?"
