"""Node operations as functions: what each ``aiplat node`` command does, minus the printing.

The CLI parses arguments and calls one of these; tests and the agent call them directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from aiplat.errors import InputError
from aiplat.findings import Finding
from aiplat.node.baseline import fingerprint, fingerprint_changes, load_baseline, rollback_steps
from aiplat.node.checks import (
    CheckContext,
    CheckReport,
    Expectations,
    node_condition,
    node_taints,
    run_checks,
)
from aiplat.node.collect import collect_inventory
from aiplat.node.inventory import Inventory
from aiplat.node.kernlog import read_xids
from aiplat.node.matrix import (
    MatrixReport,
    check_image,
    evaluate_matrix,
    image_cuda_version,
    observe,
)
from aiplat.node.tree import Tree
from aiplat.spec.models import Platform


@dataclass(frozen=True)
class CheckOutcome:
    inventory: Inventory
    report: CheckReport
    matrix: MatrixReport | None
    image: Finding | None
    rollback: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # files of the tree refused

    @property
    def exit_code(self) -> int:
        failed = self.report.failed
        if self.matrix is not None and not self.matrix.ok:
            failed = True
        if self.image is not None and self.image.severity == "error":
            failed = True
        return 1 if failed else 0

    def as_data(self) -> dict[str, object]:
        data: dict[str, object] = self.report.model_dump()
        # What the agent would publish on the Node: a condition and (on failure) a taint.
        data["node_condition"] = node_condition(self.report, self.inventory.collected_at)
        data["node_taints"] = node_taints(self.report)
        if self.matrix is not None:
            data["matrix"] = self.matrix.model_dump()
        if self.image is not None:
            data["image"] = self.image.model_dump()
        if self.rollback:
            data["rollback"] = self.rollback
        if self.warnings:
            data["warnings"] = self.warnings
        return data


def load_image_config(path: str | Path) -> dict[str, object]:
    from aiplat import inputs

    what = "an OCI image config (JSON)"
    fix = "pass the OCI image config, e.g. `skopeo inspect --config docker://IMG`"
    try:
        return inputs.mapping(inputs.load_json(path, what), path, what, fix)
    except InputError as e:
        raise InputError(f"--image-config {e}") from None


def check_node(*, root: str | Path = "/", recorded: Mapping[str, Path] | None = None,  # noqa: PLR0913 (ratchet)
               platform: Platform | None = None, pool: str | None = None,
               kernel_log: str | Path | None = None, matrix: bool = False,
               observed: dict[str, str] | None = None, image_config: str | Path | None = None,
               only: list[str] | None = None, skip: list[str] | None = None,
               today: date | None = None, inventory: Inventory | None = None,
               baseline: str | Path | None = None, live_gpu: bool | None = None
               ) -> CheckOutcome:
    """Run the checks (and optionally the matrix and an image's CUDA). With ``baseline``, a
    failure comes with rollback steps naming that last good state and what changed since.
    ``live_gpu`` reads the GPUs through NVML/nvidia-smi in this process even when ``root`` is
    not / (the node agent's pod: the host's /sys and /proc under /host, the GPUs and the
    driver's tools given to the container by the NVIDIA runtime)."""
    if (platform is None) != (pool is None) and platform is not None:
        raise InputError("SPEC needs --pool (fix: name the pool this node belongs to)")
    if pool is not None and platform is None:
        raise InputError("--pool needs SPEC (fix: pass the platform spec file)")
    if matrix and platform is None:
        raise InputError("--matrix needs SPEC (the approved combinations are in "
                         "versions.approved)")
    tree = Tree.of(root)
    inv = inventory or collect_inventory(tree, recorded, live_gpu)
    exp = Expectations.from_platform(platform, pool) if platform and pool else Expectations()
    xids = read_xids(tree, kernel_log)
    report = run_checks(CheckContext(inv=inv, exp=exp, xids=xids), only=only, skip=skip)
    mreport = None
    if matrix and platform is not None:
        entries = [e.model_dump() for e in platform.versions.approved]
        mreport = evaluate_matrix(entries, observe(inv, observed), today or date.today())
    image = None
    if image_config is not None:
        cuda = image_cuda_version(load_image_config(image_config), str(image_config))
        driver = inv.software.nvidia_driver.version if inv.software.nvidia_driver else None
        image = check_image(cuda, driver, inv.driver_cuda_version)
    outcome = CheckOutcome(inventory=inv, report=report, matrix=mreport, image=image,
                           warnings=list(tree.warnings))
    if baseline is not None:
        base = load_baseline(baseline)
        if outcome.exit_code:
            changed = fingerprint_changes(base, fingerprint(inv))
            changed.pop("cpusAvailable", None)  # a property of this process, not the node
            steps = rollback_steps(base, changed, str(baseline))
            outcome = replace(outcome, rollback=steps)
    return outcome
