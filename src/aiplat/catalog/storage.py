"""What each CSI driver actually implements, so storage objects ask only for what works.

A StorageClass is schema-valid whatever its provisioner can do; a PVC on it binds only if
the driver implements CreateVolume for that access mode, a VolumeSnapshotClass works only if
it implements CreateSnapshot, a VolumeGroupSnapshotClass only with the group controller
service. Each row says where the figure comes from (the driver's advertised capabilities in
its source, or its support matrix). A provisioner not listed here is the admin's own: aiplat
renders what the spec says and assumes nothing about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RWO, ROX, RWX = "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"


@dataclass(frozen=True)
class CsiDriver:
    name: str
    dynamic: bool  # CreateVolume: a PVC on a StorageClass provisions its own volume
    access_modes: tuple[str, ...]
    snapshots: bool
    group_snapshots: bool
    expansion: bool
    required: tuple[str, ...] = ()  # StorageClass parameters CreateVolume refuses without
    example: dict[str, str] = field(default_factory=dict)  # for the error's hint
    source: str = ""


DRIVERS = {d.name: d for d in (
    CsiDriver("nfs.csi.k8s.io", dynamic=True, access_modes=(RWO, ROX, RWX), snapshots=True,
              group_snapshots=False, expansion=True, required=("server", "share"),
              example={"server": "nfs.example.internal", "share": "/exports/aiplat"},
              source="kubernetes-csi/csi-driver-nfs v4.13 pkg/nfs/nfs.go (controller "
                     "capabilities: CREATE_DELETE_VOLUME, CREATE_DELETE_SNAPSHOT, "
                     "EXPAND_VOLUME; no group controller), controllerserver.go ('server is a "
                     "required parameter'; share is the export the volumes are made under)"),
    CsiDriver("rbd.csi.ceph.com", dynamic=True, access_modes=(RWO,), snapshots=True,
              group_snapshots=True, expansion=True,
              required=("clusterID", "pool"), example={"clusterID": "ceph", "pool": "rbd"},
              source="ceph/ceph-csi README support matrix: RWO file mode (RWX only for raw "
                     "block), snapshots GA, VolumeGroupSnapshot from v3.13 with Ceph Squid "
                     "19.2; clusterID and pool required by the RBD StorageClass"),
    CsiDriver("cephfs.csi.ceph.com", dynamic=True, access_modes=(RWO, ROX, RWX),
              snapshots=True, group_snapshots=True, expansion=True,
              required=("clusterID", "fsName"),
              example={"clusterID": "ceph", "fsName": "cephfs"},
              source="ceph/ceph-csi README support matrix: RWX, snapshots GA, volume group "
                     "snapshots from v3.11 (Squid)"),
    CsiDriver("s3.csi.aws.com", dynamic=False, access_modes=(ROX, RWX), snapshots=False,
              group_snapshots=False, expansion=False, required=("bucketName",),
              example={"bucketName": "aiplat-models"},
              source="awslabs/mountpoint-s3-csi-driver docs/CONFIGURATION.md: 'supports only "
                     "static provisioning for an existing S3 bucket' (dynamic provisioning: "
                     "issue #125, open); a PV names the bucket in volumeAttributes.bucketName"),
    CsiDriver("kubernetes.io/no-provisioner", dynamic=False, access_modes=(RWO,),
              snapshots=False, group_snapshots=False, expansion=False,
              source="Kubernetes local volumes: static PVs (the local static provisioner "
                     "creates one per disk), WaitForFirstConsumer binding, no snapshots"),
)}

DEFAULT_PROVISIONERS = {
    "block": "rbd.csi.ceph.com",
    "file": "nfs.csi.k8s.io",
    "object": "s3.csi.aws.com",
    "local-nvme": "kubernetes.io/no-provisioner",
}
"""The driver a storage tier gets when the spec names no provisioner."""


def driver(provisioner: str) -> CsiDriver | None:
    return DRIVERS.get(provisioner)
