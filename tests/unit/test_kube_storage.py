"""Storage objects ask only for what each CSI driver implements (catalog/storage.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.catalog.storage import DRIVERS
from aiplat.errors import AiplatError
from aiplat.kube.crds import index_crds
from aiplat.kube.render import render
from aiplat.kube.validate import validate_objects
from aiplat.spec.load import example_text, parse_platform
from aiplat.spec.models import Platform

Obj = dict[str, Any]


def platform_from(edit: Callable[[Obj], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def _storage(p: Platform) -> dict[str, list[Obj]]:
    return {k: v for k, v in render(p, load_catalog()).manifests.items()
            if k.startswith("storage/")}


def test_every_driver_row_names_its_source() -> None:
    assert all(d.source for d in DRIVERS.values())


def test_nfs_class_carries_server_and_share_and_no_group_snapshot_class() -> None:
    st = _storage(platform_from())
    nfs = next(o for o in st["storage/storageclasses.yaml"] if o["metadata"]["name"] == "shared-fs")
    assert nfs["provisioner"] == "nfs.csi.k8s.io"
    assert nfs["parameters"] == {"server": "nfs.storage.internal", "share": "/exports/aiplat"}
    kinds = [(o["kind"], o["driver"]) for o in st["storage/snapshotclasses.yaml"]]
    # csi-driver-nfs implements CreateSnapshot but no group controller service.
    assert kinds == [("VolumeSnapshotClass", "nfs.csi.k8s.io")]


@pytest.mark.parametrize(("tier", "words"), [
    ("file", "needs parameters server, share"),
    ("object", "needs parameters bucketName"),
    ("block", "needs parameters clusterID, pool"),
])
def test_a_class_without_the_parameters_its_driver_needs_is_refused(tier: str, words: str
                                                                     ) -> None:
    def edit(d: Obj) -> None:
        d["storage"]["classes"].append({"name": "extra", "tier": tier, "capacityTB": 1})
    with pytest.raises(AiplatError, match=words):
        platform_from(edit)


def test_an_object_only_store_gets_static_pvs_bound_to_its_claims() -> None:
    """Mountpoint for S3 cannot CreateVolume: each claim gets a PV naming the bucket."""
    def edit(d: Obj) -> None:
        d["storage"]["classes"] = [c for c in d["storage"]["classes"] if c["tier"] != "file"]
        d["storage"]["classes"].append({"name": "ceph", "tier": "block", "capacityTB": 10,
                                        "parameters": {"clusterID": "c", "pool": "p"}})
    st = _storage(platform_from(edit))
    objs = st["storage/pvcs.yaml"]
    pvs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "PersistentVolume"}
    pvcs = [o for o in objs if o["kind"] == "PersistentVolumeClaim"]
    assert pvcs and len(pvs) == len(pvcs)
    for pvc in pvcs:
        pv = pvs[pvc["spec"]["volumeName"]]
        assert pv["spec"]["claimRef"] == {"namespace": pvc["metadata"]["namespace"],
                                          "name": pvc["metadata"]["name"]}
        assert pv["spec"]["csi"]["volumeAttributes"] == {"bucketName": "aiplat-models"}
        assert pv["spec"]["accessModes"] == pvc["spec"]["accessModes"]
        assert f"prefix {pvc['metadata']['namespace']}/" in pv["spec"]["mountOptions"]
    # Ceph RBD has group snapshots (ceph-csi >= 3.13); Mountpoint has no snapshots at all.
    drivers = {(o["kind"], o["driver"]) for o in st["storage/snapshotclasses.yaml"]}
    assert drivers == {("VolumeSnapshotClass", "rbd.csi.ceph.com"),
                       ("VolumeGroupSnapshotClass", "rbd.csi.ceph.com")}
    result = validate_objects([("storage/pvcs.yaml", o) for o in objs], "1.34", index_crds([]))
    assert not result.issues, result.issues


def test_claims_only_use_access_modes_their_driver_serves() -> None:
    for p in (platform_from(),):
        classes = {o["metadata"]["name"]: o["provisioner"]
                   for o in _storage(p)["storage/storageclasses.yaml"]}
        for o in _storage(p)["storage/pvcs.yaml"]:
            if o["kind"] != "PersistentVolumeClaim":
                continue
            d = DRIVERS[classes[o["spec"]["storageClassName"]]]
            assert set(o["spec"]["accessModes"]) <= set(d.access_modes), o
