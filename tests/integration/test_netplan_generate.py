"""The rendered netplan files read by netplan's own generator (Debian's netplan.io):
``netplan generate --root-dir`` turns each pool's file, its placeholders filled as an admin
would (``string.Template``, the ``${VAR}`` syntax envsubst fills), into systemd-networkd
units, and those carry the MTUs, the LACP bond's options, the VLANs and the IPoIB mode.

Only ``--root-dir`` is used, in a temporary folder: nothing is written to the host's /etc or
/run, no udev trigger, never ``netplan apply``. What this cannot show: real NICs (the MACs
are made up, so no port is matched or renamed), the bond's LACP negotiation with a pair of
MLAG switches, jumbo frames passing every switch hop, and an IPoIB link coming up (this
kernel has no InfiniBand).
"""

from __future__ import annotations

import os
import re
import shutil
import string
import subprocess
from pathlib import Path
from typing import Any

import yaml
from conftest import need

from aiplat.catalog import load_catalog
from aiplat.kube.render_netplan import netplan_files, netplan_path
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform

NETPLAN = shutil.which("netplan") or "/usr/sbin/netplan"


def platform_from(edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def values(text: str) -> dict[str, str]:
    """A made-up node's values for each placeholder: MACs (20-byte IPoIB ones for the rails),
    addresses in the segments' networks, gateways."""
    out: dict[str, str] = {}
    for i, var in enumerate(sorted(set(re.findall(r"\$\{([A-Z0-9_]+)\}", text))), start=1):
        if var.startswith("RAIL") and var.endswith("_MAC"):
            out[var] = f"80:00:00:68:fe:80:00:00:00:00:00:00:b8:ce:f6:03:00:{i:02x}:{i:02x}:01"
        elif var.endswith("_MAC"):
            out[var] = f"02:00:00:00:00:{i:02x}"
        elif var.endswith("_GATEWAY"):
            out[var] = "10.10.0.1" if var.startswith("MGMT") else "10.30.0.1"
        else:
            net = {"MGMT": 10, "STOR": 20, "SVC": 30}.get(var[:4].rstrip("0123456789_"), 40)
            out[var] = f"10.{net}.{i}.11/24"
    return out


def generate(tmp: Path, text: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    need(None if os.access(NETPLAN, os.X_OK) else "netplan is not installed (Debian netplan.io)")
    conf = tmp / "etc" / "netplan" / "60-aiplat.yaml"
    conf.parent.mkdir(parents=True)
    conf.write_text(text)
    conf.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "SNAP"}  # SNAP: it would call D-Bus
    done = subprocess.run([NETPLAN, "generate", "--root-dir", str(tmp)], capture_output=True,
                          text=True, env=env, check=False, timeout=60)
    units = tmp / "run" / "systemd" / "network"
    got = {p.name: p.read_text() for p in units.glob("*")} if units.is_dir() else {}
    return done, got


def filled(platform: Platform, pool: str) -> str:
    text = netplan_files(platform)[netplan_path(pool)]
    return string.Template(text).substitute(values(text))


def test_h100_bond_rails_and_mtus_as_networkd_units(tmp_path: Path) -> None:
    done, units = generate(tmp_path, filled(platform_from(), "h100"))
    assert done.returncode == 0, done.stderr
    bond = units["10-netplan-bond-stor.netdev"]
    for line in ("Kind=bond", "MTUBytes=9000", "Mode=802.3ad", "TransmitHashPolicy=layer3+4",
                 "LACPTransmitRate=fast", "MIIMonitorSec=100ms"):
        assert line in bond.splitlines(), line
    for port in ("stor0", "stor1"):
        net = units[f"10-netplan-{port}.network"].splitlines()
        assert "Bond=bond-stor" in net and "MTUBytes=9000" in net
    assert "Address=10.20." in units["10-netplan-bond-stor.network"]
    for i in range(8):
        rail = units[f"10-netplan-rail{i}.network"].splitlines()
        assert {"MTUBytes=4092", "[IPoIB]", "Mode=datagram"} <= set(rail)
        assert not any(line.startswith("Bond=") for line in rail)
        assert f"Name=rail{i}" in units[f"10-netplan-rail{i}.link"].splitlines()
    mgmt = units["10-netplan-mgmt0.network"].splitlines()
    assert {"MTUBytes=1500", "Gateway=10.10.0.1"} <= set(mgmt)


def test_vlan_on_the_bond_keeps_jumbo_frames(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        for s in d["network"]["segments"]:
            if s["name"] == "storage":
                s["vlan"] = 20
    done, units = generate(tmp_path, filled(platform_from(edit), "h100"))
    assert done.returncode == 0, done.stderr
    vlan = units["10-netplan-bond-stor.20.netdev"].splitlines()
    assert {"Kind=vlan", "Id=20", "MTUBytes=9000"} <= set(vlan)
    assert "VLAN=bond-stor.20" in units["10-netplan-bond-stor.network"].splitlines()
    assert "Address=10.20." in units["10-netplan-bond-stor.20.network"]
    assert "MTUBytes=9000" in units["10-netplan-bond-stor.netdev"].splitlines()


def test_l40s_service_bond_with_the_default_route(tmp_path: Path) -> None:
    done, units = generate(tmp_path, filled(platform_from(), "l40s"))
    assert done.returncode == 0, done.stderr
    assert "Mode=802.3ad" in units["10-netplan-bond-svc.netdev"].splitlines()
    assert "Gateway=10.30.0.1" in units["10-netplan-bond-svc.network"].splitlines()


def test_an_unfilled_file_is_refused(tmp_path: Path) -> None:
    text = netplan_files(platform_from())[netplan_path("l40s")]
    done, units = generate(tmp_path, text)
    assert done.returncode != 0 and "Invalid MAC address '${" in done.stderr
    assert not units
