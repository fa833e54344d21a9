"""The platform's version matrix (pure): ``aiplat matrix show|check|diff``.

``versions.approved`` in the spec lists the combinations the platform team approved (kernel,
firmware, driver, CUDA, container toolkit, runtime, Kubernetes, GPU operator, DRA driver,
Kueue). This module checks each entry against compatibility facts and against the rest of the
spec, and shows what a planned patch (an edited entry) changes and which facts it violates.

Why on top of :mod:`aiplat.node.matrix`: that module owns the node-side facts (CUDA↔driver
minimums, driver-branch end of life) and the version-constraint grammar (``580.95.05``,
``>=6.1,<6.13``, ``containerd 2.1``). They are reused here, never copied; this module only
adds the cluster-side facts a node cannot observe:

- Kubernetes minor -> served ``resource.k8s.io`` versions: ``v1`` is GA from 1.34;
  1.32 serves v1alpha3/v1beta1, 1.33 adds v1beta2 (../shared/FACTS.md). aiplat renders DRA
  objects as ``resource.k8s.io/v1``, so ``gpuResources: dra`` needs >= 1.34;
- Kueue release -> served ``kueue.x-k8s.io`` versions: v1beta1 from 0.3 (still served in
  0.19), v1beta2 from 0.15 (the storage version in 0.19); the spec's ``kueueApi`` must be one
  the approved Kueue serves;
- consistency with the spec: the entry's Kubernetes and Kueue must admit the versions the
  manifests are rendered for (``kubernetes.version``, ``kubernetes.kueueVersion``).

Facts are checked at each entry's *lowest admitted version* (``>=6.1,<6.13`` -> 6.1;
``580.95.05`` -> itself): an approval is only as good as the oldest thing it lets through.
Everything takes ``today`` so end-of-life results are reproducible in tests.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from aiplat import __version__
from aiplat.errors import InputError
from aiplat.findings import Finding, line
from aiplat.findings import table as findings_table
from aiplat.node.matrix import MATRIX_KEYS, driver_facts, version_matches, vtuple

__all__ = ["LABELS", "MATRIX_KEYS", "EntryCheck", "MatrixCheck", "MatrixDiff", "check_entry",
           "check_matrix", "diff_entries", "dra_versions", "lowest", "matrix_document"]
from aiplat.report.document import Document, KeyFigure, Section, Table
from aiplat.spec.models import PATTERN_HINTS, Platform, VersionEntry

# Kubernetes minor -> resource.k8s.io versions served by default (FACTS.md, DRA section).
DRA_API_VERSIONS: dict[int, tuple[str, ...]] = {
    31: ("v1alpha3",),
    32: ("v1alpha3", "v1beta1"),
    33: ("v1alpha3", "v1beta1", "v1beta2"),
}
DRA_V1_FROM = (1, 34)
# kueue.x-k8s.io API version -> first Kueue release serving it.
KUEUE_API_FROM: dict[str, tuple[int, ...]] = {"v1beta1": (0, 3), "v1beta2": (0, 15)}
LABELS = {"kernel": "kernel", "firmware": "firmware (VBIOS)", "driver": "driver",
          "cuda": "CUDA", "container_toolkit": "container toolkit",
          "container_runtime": "container runtime", "kubernetes": "Kubernetes",
          "gpu_operator": "GPU operator", "dra_driver": "DRA driver", "kueue": "Kueue"}


class MatrixModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EntryCheck(MatrixModel):
    name: str
    values: dict[str, str | None]
    facts: list[Finding]

    @property
    def status(self) -> Literal["pass", "warn", "fail"]:
        sev = {f.severity for f in self.facts}
        return "fail" if "error" in sev else "warn" if "warning" in sev else "pass"


class MatrixCheck(MatrixModel):
    platform: str
    today: str
    aiplat: str
    entries: list[EntryCheck]
    facts: list[Finding]  # about the matrix as a whole

    @property
    def status(self) -> Literal["pass", "warn", "fail"]:
        sev = {f.severity for f in self.facts} | {e.status for e in self.entries}
        return "fail" if "error" in sev else "warn" if "warning" in sev else "pass"


class Change(MatrixModel):
    key: str
    before: str | None
    after: str | None


class MatrixDiff(MatrixModel):
    before: str
    after: str
    changes: list[Change]
    new_facts: list[Finding]  # violated by the planned entry but not by the current one
    resolved: list[Finding]  # violated now, gone after the patch
    after_check: EntryCheck

    @property
    def status(self) -> Literal["pass", "warn", "fail"]:
        return self.after_check.status


def lowest(constraint: str) -> str | None:
    """The lowest version a constraint admits, as text (None: no lower bound).

    >>> lowest(">=6.1,<6.13"), lowest("containerd 2.1"), lowest("v25.10.0"), lowest("<2")
    ('6.1', '2.1', '25.10.0', None)
    """
    text = constraint.strip()
    word = re.match(r"^([A-Za-z][\w.-]*)\s+(.+)$", text)
    if word and not re.match(r"^[<>=!~]", text):
        text = word.group(2)
    lows = []
    for clause in (c.strip() for c in text.split(",") if c.strip()):
        m = re.match(r"^(>=|<=|==|!=|>|<)?\s*(.+)$", clause)
        if m is None:
            continue
        op, ver = m.group(1), m.group(2)
        try:
            vt = vtuple(ver)
        except ValueError:
            continue
        if op in (None, "==", ">=", ">"):
            lows.append((vt, ver.strip().lstrip("v")))
    return max(lows)[1] if lows else None


def _kueue_serves(kueue: tuple[int, ...], api: str) -> bool:
    first = KUEUE_API_FROM.get(api)
    return first is not None and kueue[:len(first)] >= first


def dra_versions(kubernetes: str) -> tuple[str, ...]:
    """``resource.k8s.io`` versions a Kubernetes minor serves by default."""
    major, minor = (*vtuple(kubernetes), 0)[:2]
    if (major, minor) >= DRA_V1_FROM:
        return ("v1", "v1beta1", "v1beta2")
    return DRA_API_VERSIONS.get(minor, ()) if major == 1 else ()


def entry_values(entry: VersionEntry) -> dict[str, str | None]:
    data = entry.model_dump()
    return {k: data.get(k) for k in MATRIX_KEYS}


def check_entry(entry: VersionEntry, platform: Platform, today: date) -> EntryCheck:  # noqa: C901 (ratchet)
    """Facts about one approved entry: node-side facts from :mod:`aiplat.node.matrix` at the
    lowest admitted versions, then cluster-side facts and consistency with the spec."""
    values = entry_values(entry)
    facts: list[Finding] = []
    low = {k: (lowest(v) if v else None) for k, v in values.items()}
    for key, value in values.items():
        if value is None:
            continue
        try:
            version_matches(value, value)
        except (ValueError, AssertionError):
            facts.append(Finding(severity="error", subject=f"{key} {value}",
                              message="not a version or range aiplat can read",
                              fix="write e.g. 580.95.05, >=6.1,<6.13 or 'containerd 2.1'"))
    facts += driver_facts({"driver": low["driver"], "cuda": low["cuda"]}, today)
    k8s = values["kubernetes"]
    spec_k8s = platform.kubernetes.version
    if k8s is None:
        facts.append(Finding(severity="warning", subject="kubernetes", message="not pinned",
                          fix=f"add kubernetes: \"{spec_k8s}\" (the version manifests target)"))
    else:
        if not version_matches(k8s, spec_k8s):
            facts.append(Finding(
                severity="error", subject=f"kubernetes {k8s}",
                message=f"the spec renders manifests for Kubernetes {spec_k8s}, which this "
                        "entry does not admit",
                fix=f"approve {spec_k8s}, or set kubernetes.version to the approved minor"))
        if low["kubernetes"]:
            served = dra_versions(low["kubernetes"])
            if platform.kubernetes.gpu_resources == "dra" and "v1" not in served:
                facts.append(Finding(
                    severity="error", subject=f"kubernetes {k8s}",
                    message="gpuResources: dra renders resource.k8s.io/v1 objects; Kubernetes "
                            f"{low['kubernetes']} serves {', '.join(served) or 'no DRA API'}",
                    fix="approve Kubernetes >= 1.34, or use gpuResources: device-plugin"))
            elif values["dra_driver"] and "v1" not in served:
                facts.append(Finding(
                    severity="warning", subject=f"dra_driver {values['dra_driver']}",
                    message=f"Kubernetes {low['kubernetes']} does not serve resource.k8s.io/v1 "
                            f"(serves {', '.join(served) or 'no DRA API'})",
                    fix="check the DRA driver's release notes for its minimum Kubernetes"))
    kueue = values["kueue"]
    if kueue is None:
        facts.append(Finding(severity="warning", subject="kueue", message="not pinned",
                          fix=f"add kueue: {platform.kubernetes.kueue_version}"))
    else:
        if not version_matches(kueue, platform.kubernetes.kueue_version):
            facts.append(Finding(
                severity="error", subject=f"kueue {kueue}",
                message=f"the spec renders for Kueue {platform.kubernetes.kueue_version}, which "
                        "this entry does not admit",
                fix="approve that Kueue, or set kubernetes.kueueVersion to the approved one"))
        if low["kueue"] and not _kueue_serves(vtuple(low["kueue"]), platform.kubernetes.kueue_api):
            first = ".".join(map(str, KUEUE_API_FROM.get(platform.kubernetes.kueue_api, ())))
            facts.append(Finding(
                severity="error", subject=f"kueue {kueue}",
                message=f"kueueApi {platform.kubernetes.kueue_api} is served from Kueue "
                        f"{first or '?'}; the entry admits {low['kueue']}",
                fix=f"approve Kueue >= {first}, or set kueueApi: v1beta1"))
    gpu_pools = [p.name for p in platform.pools if p.node.gpu is not None]
    if gpu_pools:
        for key in ("driver", "cuda", "container_toolkit"):
            if values[key] is None:
                facts.append(Finding(
                    severity="warning", subject=key,
                    message=f"not pinned although pools {', '.join(gpu_pools)} have GPUs",
                    fix=f"add {key} to the entry so nodes are patched to one version"))
    for key in ("kernel", "container_runtime"):
        if values[key] is None:
            facts.append(Finding(severity="info", subject=key, message="not pinned"))
    return EntryCheck(name=entry.name, values=values, facts=facts)


def check_matrix(platform: Platform, today: date) -> MatrixCheck:
    entries = [check_entry(e, platform, today) for e in platform.versions.approved]
    facts = []
    if not entries:
        facts.append(Finding(severity="error", subject="versions.approved",
                          message="no approved combination: nodes cannot be accepted or "
                                  "patched against anything",
                          fix="add versions.approved with at least kernel, driver, "
                              "kubernetes and kueue"))
    return MatrixCheck(platform=platform.metadata.name, today=today.isoformat(),
                       aiplat=__version__, entries=entries, facts=facts)


def find_entry(platform: Platform, name: str | None, *, last: bool = False) -> VersionEntry:
    """The approved entry ``name``; without a name the first (``last``: the last, where the
    runbook's updates go)."""
    approved = platform.versions.approved
    if not approved:
        raise InputError("the spec has no versions.approved entries (fix: add one)")
    if name is None:
        return approved[-1] if last else approved[0]
    for e in approved:
        if e.name == name:
            return e
    raise InputError(f"no approved entry '{name}' (fix: use one of "
                     f"{', '.join(e.name for e in approved)})")


def parse_changes(values: list[str]) -> dict[str, str | None]:
    """``KEY=VALUE`` (``KEY=`` removes the pin); keys as in the spec or with dashes."""
    out: dict[str, str | None] = {}
    aliases = {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): k for k in MATRIX_KEYS}
    for v in values:
        key, sep, value = v.partition("=")
        norm = re.sub(r"(?<!^)(?=[A-Z])", "_", key.strip()).lower().replace("-", "_")
        if not sep or norm not in aliases:
            raise InputError(f"--set {v!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(MATRIX_KEYS)} (e.g. driver=580.105.08)")
        out[norm] = value.strip() or None
    return out


def planned_entry(current: VersionEntry, changes: dict[str, str | None],
                  name: str | None = None) -> VersionEntry:
    data = current.model_dump()
    data.update(changes)
    data["name"] = name or current.name
    try:
        return VersionEntry.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"--set {'.'.join(map(str, err['loc']))}: {_problem(err)}"
                             for err in e.errors())
        raise InputError(f"{problems} (fix: give a version such as 580.105.08, or a range "
                         "such as '>=6.1,<6.9')") from None


def _problem(err: ErrorDetails) -> str:
    """The spec loader's wording for a value that is not a version (not the pattern)."""
    pattern = str((err.get("ctx") or {}).get("pattern", ""))
    if err["type"] == "string_pattern_mismatch" and pattern in PATTERN_HINTS:
        return f"{err['input']!r} is not {PATTERN_HINTS[pattern][0]}"
    return str(err["msg"]).removeprefix("Value error, ")


def _entry_id(name: str) -> str:
    """``entry-<name>`` as an HTML anchor of at most 64 characters (names may have 63)."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if len(slug) <= 58:
        return f"entry-{slug}"
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"entry-{slug[:49].rstrip('-')}-{digest}"


def _fkey(f: Finding) -> tuple[str, str]:
    return (f.severity, f.message)


def diff_entries(before: VersionEntry, after: VersionEntry, platform: Platform,
                 today: date) -> MatrixDiff:
    """What a planned patch changes, and which facts it newly violates or resolves."""
    b, a = check_entry(before, platform, today), check_entry(after, platform, today)
    changes = [Change(key=k, before=b.values[k], after=a.values[k])
               for k in MATRIX_KEYS if b.values[k] != a.values[k]]
    old = {_fkey(f) for f in b.facts}
    new = {_fkey(f) for f in a.facts}
    return MatrixDiff(before=before.name, after=after.name, changes=changes,
                      new_facts=[f for f in a.facts if _fkey(f) not in old],
                      resolved=[f for f in b.facts if _fkey(f) not in new], after_check=a)


def _findings_table(findings: list[Finding]) -> Table:
    columns, rows = findings_table(findings)
    return Table(columns=columns, rows=rows)


def matrix_document(check: MatrixCheck) -> Document:
    """The matrix as a report (Markdown/HTML through :mod:`aiplat.report`)."""
    names = [e.name for e in check.entries]
    rows = [[LABELS[k], *(e.values[k] or "–" for e in check.entries)] for k in MATRIX_KEYS]
    rows.append(["aiplat", *(check.aiplat for _ in check.entries)])
    rows.append(["status", *(e.status for e in check.entries)])
    sections = [Section(
        id="approved", title="Approved combinations",
        paragraphs=["Each column is one approved entry of versions.approved; a value is a "
                    "version (prefix on component boundaries), a range or 'tool version'. "
                    "aiplat is the toolkit version that checked the matrix."],
        tables=[Table(columns=["component", *names], rows=rows)] if names else [],
        notes=[line(f) for f in check.facts])]
    for e in check.entries:
        sections.append(Section(
            id=_entry_id(e.name),
            title=f"Facts for {e.name}",
            tables=[_findings_table(e.facts)],
            paragraphs=[] if e.facts else ["No fact is violated."]))
    sections.append(Section(
        id="facts", title="Compatibility facts used",
        paragraphs=["CUDA needs a minimum driver per major (11.x >= 450.80.02, 12.x >= "
                    "525.60.13, 13.x >= 580); driver branches end of life: R535 2026-06, R580 "
                    "2028-06, R595 2027-03, R620 2029-09; resource.k8s.io/v1 is served from "
                    "Kubernetes 1.34; kueue.x-k8s.io/v1beta2 from Kueue 0.15, v1beta1 from 0.3. "
                    "Facts are checked at the lowest version each entry admits."]))
    return Document(
        title=f"Version matrix — {check.platform}",
        subtitle=f"checked {check.today} by aiplat {check.aiplat}",
        summary=[KeyFigure(label="approved entries", value=str(len(check.entries))),
                 KeyFigure(label="status", value=check.status)],
        sections=sections)
