#!/usr/bin/env bash
# Set up and run every test: virtual environment, the package with its dev extras, (as root)
# the Debian packages the integration tests drive, then ruff, mypy, import-linter and pytest.
# Extra arguments go to pytest. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(chromium chromium-driver podman runc busybox-static prometheus docker-registry
      iproute2 iptables iperf3 iputils-ping prometheus-node-exporter gcc libc6-dev debootstrap
      slurmctld slurmd slurmdbd slurm-client munge mariadb-server netplan.io)
if [ "$(id -u)" = 0 ]; then
  missing=()
  for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
else
  echo "not root: integration tests need ${debs[*]} installed already" >&2
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'

# The live-cluster tests' components (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, Kueue, JobSet, kwok), built with `go build` from the versions pinned in
# src/aiplat/cluster/tools/go.mod into ~/.cache/aiplat/cluster; a no-op once built. Then the
# GPU Operator's controller (test_gpu_operator_live.py) and the Prometheus Operator
# (test_prometheus_operator_live.py), whose modules pin the lab's library versions: after the
# lab they compile ~40 and ~310 packages of their own (about one and two minutes).
[ -x /usr/local/go/bin/go ] && PATH="$PATH:/usr/local/go/bin"
if command -v go >/dev/null; then
  .venv/bin/aiplat lab cluster build
  .venv/bin/python tests/integration/gpuoperator.py
  .venv/bin/python tests/integration/promop.py
  .venv/bin/python -m aiplat.artifacts.oracles
  .venv/bin/python -m aiplat.devices.oracles
else
  echo "go not found: the live-cluster tests need Go >= 1.26 (they fail in CI, skip here)" >&2
fi

.venv/bin/ruff check src tests bench
.venv/bin/mypy
.venv/bin/lint-imports
.venv/bin/pytest --durations=40 "$@"
