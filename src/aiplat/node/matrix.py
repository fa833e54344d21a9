"""Version matrix (pure): does this node run an approved combination of kernel, firmware,
driver, CUDA, container stack and Kubernetes versions, and are those versions still sane?

Built-in facts (../shared/FACTS.md, from NVIDIA's CUDA release notes and driver lifecycle):
- minimum Linux driver per CUDA major: 11.x >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580
  (minor-version compatibility: any driver at or above the major's minimum runs that major);
- driver branches and their end of life: R535 LTSB 2026-06, R580 LTSB 2028-06,
  R595 production 2027-03, R620 LTSB 2029-09.

An approved entry's value is a version (``580.95.05``: equal, or a prefix on component
boundaries, so ``1.34`` matches ``1.34.2``), a comma-separated range (``>=6.1,<6.13``), or a
tool name and version (``containerd 2.1``). Versions compare as integer tuples; Debian
revisions (``2.1.4-1``) and local suffixes (``6.8.0-49-generic``) do not take part.
"""

from __future__ import annotations

import re
from datetime import date

from pydantic import BaseModel, ConfigDict

from aiplat.errors import InputError
from aiplat.findings import Finding
from aiplat.node.inventory import Inventory

CUDA_MIN_DRIVER: dict[int, tuple[int, ...]] = {11: (450, 80, 2), 12: (525, 60, 13), 13: (580,)}
DRIVER_BRANCHES: dict[int, tuple[str, date]] = {
    535: ("LTSB", date(2026, 6, 30)),
    580: ("LTSB", date(2028, 6, 30)),
    595: ("production", date(2027, 3, 31)),
    620: ("LTSB", date(2029, 9, 30)),
}
MATRIX_KEYS = ("kernel", "firmware", "driver", "cuda", "container_toolkit", "container_runtime",
               "kubernetes", "gpu_operator", "dra_driver", "kueue")
# Keys the node itself cannot observe; they come from the cluster (``--observed KEY=VALUE``).
CLUSTER_KEYS = ("gpu_operator", "dra_driver", "kueue")
# Keys the node always shows when installed: absent means "not installed", a difference.
# cuda and firmware need NVML or nvidia-smi output; absent there means "unknown".
INSTALLED_KEYS = ("kernel", "driver", "container_toolkit", "container_runtime", "kubernetes")


class MatrixModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Difference(MatrixModel):
    key: str
    expected: str
    observed: str | None


class EntryResult(MatrixModel):
    name: str
    matches: bool
    differences: list[Difference]
    unobserved: list[str]


class MatrixReport(MatrixModel):
    observed: dict[str, str | None]
    entries: list[EntryResult]
    matched: str | None
    closest: str | None
    facts: list[Finding]

    @property
    def ok(self) -> bool:
        return self.matched is not None and not any(f.severity == "error" for f in self.facts)


def vtuple(text: str) -> tuple[int, ...]:
    """``v1.34.2`` -> (1, 34, 2); ``6.8.0-49-generic`` -> (6, 8, 0); ``2.1.4-1`` -> (2, 1, 4)."""
    m = re.search(r"(\d+(?:\.\d+)*)", text)
    if not m:
        raise ValueError(f"no version number in {text!r}")
    return tuple(int(x) for x in m.group(1).split("."))


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    pa, pb = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (pa > pb) - (pa < pb)


def version_matches(expected: str, observed: str) -> bool:
    """Does ``observed`` satisfy ``expected`` (exact/prefix, range, or 'name version')?"""
    exp = expected.strip()
    obs = observed.strip()
    word = re.match(r"^([A-Za-z][\w.-]*)\s+(.+)$", exp)
    if word and not re.match(r"^[<>=!~]", exp):
        name, exp = word.group(1), word.group(2)
        if not obs.lower().startswith(name.lower()):
            return False
        obs = obs[len(name):].strip()
    try:
        ov = vtuple(obs)
    except ValueError:
        return False
    for clause in (c.strip() for c in exp.split(",") if c.strip()):
        m = re.match(r"^(>=|<=|==|!=|>|<)?\s*(.+)$", clause)
        assert m
        op, ver = m.group(1), m.group(2)
        ev = vtuple(ver)
        if op is None or op == "==":
            if ov[:len(ev)] != ev:
                return False
            continue
        c = _cmp(ov, ev)
        ok = {">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0, "!=": c != 0}[op]
        if not ok:
            return False
    return True


def observe(inv: Inventory, extra: dict[str, str] | None = None) -> dict[str, str | None]:
    """The node's value for every matrix key (None: not observable here)."""
    rt = inv.software.runtimes
    runtime = None
    for tool in ("containerd", "cri-o"):
        if rt.get(tool):
            runtime = f"{tool} {rt[tool]}"
            break
    vbios = sorted({d.vbios for d in inv.gpu_details if d.vbios})
    driver = inv.software.nvidia_driver.version if inv.software.nvidia_driver else None
    if driver is None:
        nv = inv.software.module("nvidia") or inv.software.module("amdgpu")
        driver = nv.version if nv else None
    obs: dict[str, str | None] = {
        "kernel": inv.host.kernel,
        "firmware": ",".join(vbios) if vbios else None,
        "driver": driver,
        "cuda": inv.driver_cuda_version,
        "container_toolkit": rt.get("nvidia-container-toolkit"),
        "container_runtime": runtime,
        "kubernetes": rt.get("kubelet"),
        "gpu_operator": None,
        "dra_driver": None,
        "kueue": None,
    }
    for key, value in (extra or {}).items():
        if key not in obs:
            raise InputError(f"--observed {key}: unknown key (fix: use one of {', '.join(obs)})")
        obs[key] = value
    return obs


def parse_observed(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not value:
            raise InputError(f"--observed {v!r}: expected KEY=VALUE, e.g. kueue=0.19.2")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def evaluate_matrix(approved: list[dict[str, str | None]], observed: dict[str, str | None],
                    today: date) -> MatrixReport:
    """``approved``: the spec's entries as dicts (``name`` plus MATRIX_KEYS)."""
    results = []
    for entry in approved:
        diffs, unobserved = [], []
        for key in MATRIX_KEYS:
            expected = entry.get(key)
            if expected is None:
                continue
            value = observed.get(key)
            if value is None:
                if key in INSTALLED_KEYS:
                    diffs.append(Difference(key=key, expected=expected, observed=None))
                else:
                    unobserved.append(key)
                continue
            values = value.split(",")
            if not all(version_matches(expected, v) for v in values):
                diffs.append(Difference(key=key, expected=expected, observed=value))
        results.append(EntryResult(name=str(entry.get("name")), matches=not diffs,
                                   differences=diffs, unobserved=unobserved))
    matched = next((r.name for r in results if r.matches), None)
    closest = min(results, key=lambda r: len(r.differences)).name if results else None
    return MatrixReport(observed=observed, entries=results, matched=matched,
                        closest=None if matched else closest,
                        facts=driver_facts(observed, today))


def driver_facts(observed: dict[str, str | None], today: date) -> list[Finding]:
    facts: list[Finding] = []
    driver = observed.get("driver")
    cuda = observed.get("cuda")
    if driver:
        dv = vtuple(driver)
        branch = DRIVER_BRANCHES.get(dv[0])
        if branch is None:
            facts.append(Finding(severity="info", subject=f"driver {driver}",
                              message=f"branch R{dv[0]} is not in aiplat's lifecycle table",
                              fix="check NVIDIA's driver lifecycle page for its end of life"))
        elif today > branch[1]:
            facts.append(Finding(
                severity="warning", subject=f"driver {driver}",
                message=f"R{dv[0]} {branch[0]} reached end of life on {branch[1].isoformat()}",
                fix="approve and roll out a supported branch (e.g. R580 LTSB until 2028-06)"))
        if cuda:
            need = CUDA_MIN_DRIVER.get(vtuple(cuda)[0])
            if need and _cmp(dv, need) < 0:
                facts.append(Finding(
                    severity="error", subject=f"cuda {cuda}",
                    message=f"CUDA {cuda} needs driver >= {'.'.join(map(str, need))}, node has "
                            f"{driver}", fix="upgrade the driver or approve an older CUDA"))
    return facts


def image_cuda_version(config: dict[str, object], source: str) -> str:
    """CUDA version an OCI image was built for, from its config's ``CUDA_VERSION`` env
    (NVIDIA's base images) or ``NVIDIA_REQUIRE_CUDA=cuda>=12.4``."""
    cfg = config.get("config") if isinstance(config.get("config"), dict) else config
    env = cfg.get("Env", []) if isinstance(cfg, dict) else []
    if not isinstance(env, list):
        env = []
    values = dict(str(e).split("=", 1) for e in env if "=" in str(e))
    if "CUDA_VERSION" in values:
        return values["CUDA_VERSION"]
    m = re.search(r"cuda>=\s*(\d+\.\d+)", values.get("NVIDIA_REQUIRE_CUDA", ""))
    if m:
        return m.group(1)
    raise InputError(f"{source}: no CUDA_VERSION or NVIDIA_REQUIRE_CUDA in config.Env "
                     "(fix: pass the image's OCI config JSON, e.g. from `skopeo inspect "
                     "--config docker://IMAGE`)")


def check_image(image_cuda: str, driver: str | None, driver_cuda: str | None) -> Finding:
    subject = f"image CUDA {image_cuda}"
    if driver is None:
        return Finding(severity="warning", subject=subject, message="no NVIDIA driver on the node",
                    fix="install the approved driver first")
    iv = vtuple(image_cuda)
    need = CUDA_MIN_DRIVER.get(iv[0])
    if need is None:
        return Finding(severity="warning", subject=subject,
                    message=f"CUDA {iv[0]}.x is not in aiplat's compatibility table")
    if _cmp(vtuple(driver), need) < 0:
        return Finding(severity="error", subject=subject,
                    message=f"needs driver >= {'.'.join(map(str, need))}; node has {driver}",
                    fix="upgrade the node driver, or rebuild the image on an older CUDA")
    if driver_cuda and _cmp(iv[:2], vtuple(driver_cuda)[:2]) > 0:
        return Finding(severity="warning", subject=subject,
                    message=f"newer than the driver's CUDA {driver_cuda}: runs through minor "
                            "version compatibility; PTX JIT of newer code may fail",
                    fix="prefer images at or below the driver's CUDA version")
    return Finding(severity="info", subject=subject,
                message=f"runs on driver {driver} (CUDA {driver_cuda or 'unknown'})")
