"""Lint rules for DRA's objects against the devices the pools publish: a DeviceClass that
selects no device, a claim naming a DeviceClass that does not exist or constraining on an
attribute no device has. Their symptoms and sources: docs/lint-classes.md (DRA, devices
and fit).
"""

from __future__ import annotations

from collections.abc import Iterable

from aiplat.findings import Finding
from aiplat.kube import cel
from aiplat.kube.inventory import PoolInventory
from aiplat.kube.lint.base import Context, Obj, finding, rule
from aiplat.kube.lint.objects import device_subrequests
from aiplat.kube.validate import ref


def _devices(ctx: Context) -> list[tuple[PoolInventory, Obj]]:
    return [(p, d) for p in ctx.inventory.pools for d in p.devices]


@rule("deviceclass-matches", "each DeviceClass selector matches a device of some pool")
def deviceclass_matches(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    devices = _devices(ctx)
    if not devices:
        return out  # the inventory publishes no device: nothing to match against (unknown)
    for dc in ctx.kind("DeviceClass"):
        exprs = [(s.get("cel") or {}).get("expression", "")
                 for s in (dc.get("spec") or {}).get("selectors") or []]
        errors: set[str] = set()
        matched = []
        for pool, d in devices:
            ok = True
            for e in exprs:
                try:
                    ok = ok and cel.evaluate(e, pool.driver, d)
                except cel.CelError as err:
                    errors.add(str(err))
                    ok = False
            if ok:
                matched.append(pool.name)
        if not matched:
            why = "its selectors match no device of any pool"
            if errors:
                why += f" ({'; '.join(sorted(errors))[:200]})"
            out.append(finding("error", "deviceclass-matches", ref(dc),
                               why + ": claims on it never allocate",
                               "compare the selector with `kubectl get resourceslices -o yaml`"
                               " (productName, memory capacity, driverVersion)"))
    return out


def _claim_specs(ctx: Context) -> Iterable[tuple[Obj, Obj]]:
    for o in ctx.kind("ResourceClaimTemplate"):
        yield o, ((o.get("spec") or {}).get("spec") or {})
    for o in ctx.kind("ResourceClaim"):
        yield o, (o.get("spec") or {})


@rule("claim-deviceclass", "claim templates name existing DeviceClasses",
      severities=("error", "warning"))
def claim_deviceclass(ctx: Context) -> list[Finding]:
    classes = ctx.names("DeviceClass")
    out = []
    for o, spec in _claim_specs(ctx):
        for req in ((spec.get("devices") or {}).get("requests")) or []:
            for s in device_subrequests(req):
                dc = s.get("deviceClassName")
                if dc in classes:
                    continue
                # A DRA driver's chart installs its DeviceClasses: a tree that brings none
                # leaves them to the cluster.
                out.append(finding(
                    "error", "claim-deviceclass", ref(o),
                    f"request {req.get('name')!r} names DeviceClass {dc!r}, which does not "
                    "exist: pods using it stay Pending", f"use one of {sorted(classes)}")
                    if classes else finding(
                    "warning", "claim-deviceclass", ref(o),
                    f"request {req.get('name')!r} names DeviceClass {dc!r}, which the tree "
                    "does not define: unless the cluster has it (a DRA driver installs its "
                    "classes), pods using it stay Pending",
                    f"check `kubectl get deviceclass {dc}`"))
    return out


@rule("claim-constraint", "matchAttribute names an attribute the devices have")
def claim_constraint(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    known: set[str] = set()
    for pool, d in _devices(ctx):
        for k in d.get("attributes") or {}:
            known.add(k if "/" in k else f"{pool.driver}/{k}")
    if not known:
        return out  # the inventory publishes no device: nothing to compare with (unknown)
    for o, spec in _claim_specs(ctx):
        for c in ((spec.get("devices") or {}).get("constraints")) or []:
            attr = c.get("matchAttribute") or c.get("distinctAttribute")
            if attr and attr not in known:
                out.append(finding("error", "claim-constraint", ref(o),
                                   f"constraint attribute {attr!r} is published by no device: "
                                   "the constraint can never be satisfied",
                                   f"use an attribute the driver publishes, e.g. "
                                   f"{sorted(known)[:3]}"))
    return out
