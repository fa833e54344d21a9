"""aiplat's verdict on issue #20's edge cases equals the reference loader's.

The verdicts in tests/fixtures/cdi_cases.yaml were taken from the real loader and are
proven against it again by tests/integration/test_cdi_reference.py; this file holds aiplat
to them without Go. A case marked ``host_check`` is accepted by the loader and reported by
aiplat only in its stricter ``host-check`` class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.devices import cdi

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parents[1] / "fixtures" / "cdi_cases.yaml").read_text())


def _stand_in(f: cdi.Finding) -> bool:
    """The cases' stand-ins, hook /bin/h (its env too) and node /dev/x, are no known CDI hook
    and no accelerator's node: issue #38's allow-lists report them in every case, whatever
    the case is about."""
    return f.escape and ("unknown hook binary 'h'" in f.message or "/dev/x" in f.message
                         or "in the hook's environment" in f.message)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_verdict_matches_the_reference(case: dict[str, Any]) -> None:
    found = cdi.validate_text(case["text"], "case" + case.get("suffix", ".yaml"))
    errors = cdi.spec_errors(found)
    assert bool(errors) == (case["reference"] == "reject"), [str(f) for f in found]
    strict = [f for f in found if f.check == "host-check" and f.severity == "error"
              and not _stand_in(f)]
    assert bool(strict) == bool(case.get("host_check")), [str(f) for f in strict]


def test_the_stand_ins_are_refused_by_the_allow_lists() -> None:
    uses = [c for c in CASES if "path: /bin/h" in c["text"] or "path: /dev/x" in c["text"]]
    assert uses
    for case in uses:
        found = cdi.validate_text(case["text"], "case.yaml")
        assert any(_stand_in(f) and f.severity == "error" for f in found), case["name"]


def test_missing_version_says_missing_not_none() -> None:
    found = cdi.validate_text("kind: a.com/b\ndevices: [{name: d, containerEdits: "
                              "{env: [A=1]}}]\n", "x.yaml")
    assert [f.message for f in found if f.field == "cdiVersion"] == ["missing"]


def test_decode_errors_carry_the_line() -> None:
    found = cdi.validate_text("cdiVersion: 0.3.0\nkind: a.com/b\ndevices:\n- name: d\n"
                              "  containerEdits: {Env: [A=1]}\n", "x.yaml")
    assert any(f.field == "(decode)" and f.message.startswith("line 5: field Env not found")
               and "did you mean 'env'" in f.message for f in found)


def test_leaking_specs_are_host_check_errors() -> None:
    base = ("cdiVersion: 0.5.0\nkind: a.com/b\ncontainerEdits:\n  deviceNodes: [{path: /dev/x1,"
            " permissions: rw}]\n  mounts: [{hostPath: /dev, containerPath: /hostdev, options:"
            " [ro, bind]}]\ndevices:\n- name: d0\n  containerEdits: {deviceNodes: [{path: "
            "/dev/x0}], mounts: [{hostPath: /dev/x1, containerPath: /opt/x1, options: [ro]}]}\n"
            "- name: d1\n  containerEdits: {deviceNodes: [{path: /dev/x1, permissions: r}]}\n")
    found = cdi.validate_text(base, "leaky.yaml")
    assert cdi.spec_errors(found) == []  # the reference loader takes it
    strict = {(f.device, f.field) for f in found if f.check == "host-check"}
    assert ("", "containerEdits.mounts[0].hostPath") in strict
    assert ("d0", "devices[0].containerEdits.mounts[0].hostPath") in strict
    assert ("d1", "containerEdits.deviceNodes") in strict
