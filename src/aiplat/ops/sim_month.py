"""The queues a simulated month runs on: the Kueue objects the tree renders, read back.

"What is simulated is what would be applied" holds by construction: the simulator's
ClusterQueues, Cohorts and Configuration (fair sharing or classic, waitForPodsReady) are
read from the ``kueue/`` manifests ``aiplat kube render`` writes — the ConfigMap's embedded
Configuration included — by the one reader of Kueue objects
(:func:`aiplat.sched.kueue_objects.from_objects`), never derived from the spec a second time.

- :func:`rendered_queues`: from a tree already rendered (``aiplat plan`` renders it anyway);
- :func:`tree_queues`: render only the ``kueue/`` part for a spec (``aiplat sim run``).

This module sits above both ``kube`` and ``sched`` (they are independent siblings) and
supplies the YAML reader ``sched`` does not have. Pure: no I/O.
"""

from __future__ import annotations

from aiplat import inputs
from aiplat.catalog import Catalog, load_catalog
from aiplat.kube.facts import pool_facts
from aiplat.kube.objects import Obj
from aiplat.kube.render import Rendered
from aiplat.kube.render_kueue import render_kueue
from aiplat.plan.resolve import resolve
from aiplat.sched.kueue import KueueConfig
from aiplat.sched.kueue_objects import from_objects
from aiplat.spec.models import Platform

SOURCE = "kube/kueue/"


def kueue_objects(manifests: dict[str, list[Obj]]) -> list[Obj]:
    """The objects of the tree's ``kueue/`` folder, in file order."""
    return [o for path, objs in sorted(manifests.items()) if path.startswith("kueue/")
            for o in objs]


def read_queues(manifests: dict[str, list[Obj]], source: str = SOURCE) -> KueueConfig:
    return from_objects(kueue_objects(manifests), source, load_text=inputs.embedded_mappings)


def rendered_queues(rendered: Rendered) -> KueueConfig:
    """The simulator's queues from a rendered tree."""
    return read_queues(rendered.manifests)


def tree_queues(platform: Platform, catalog: Catalog | None = None) -> KueueConfig:
    """The simulator's queues for ``platform``: its ``kueue/`` manifests rendered as
    ``aiplat kube render`` renders them, then read back."""
    resolved = resolve(platform, catalog or load_catalog())
    manifests, _ = render_kueue(platform, pool_facts(resolved))
    return read_queues(manifests)
