#!/usr/bin/env bash
# Label and taint the nodes of each pool. Review, then run with the pool name and its
# node names in physical order (rack by rack): ./label-and-taint.sh h100 node-a node-b
# Rack and block labels follow the spec's nodesPerRack and racksPerBlock. A node that
# replaces one: --at POSITION, its place in the pool's order (0-based, rack by rack),
# gets the rack and block of the node it replaces: ./label-and-taint.sh --at 9 h100 n
# Add --dry-run=server to each kubectl call to preview.
set -euo pipefail
usage="usage: $0 [--at POSITION] POOL NODE..."
i=0
if [ "${1:-}" = "--at" ]; then i="${2:?$usage}"; shift 2; fi
case "$i" in
  ""|*[!0-9]*) echo "--at takes a position: 0, 1, 2 ... ($usage)" >&2; exit 2 ;;
esac
i=$((10#$i)); pool="${1:?$usage}"; shift
case "$pool" in
  h100)
    per_rack=2; racks_per_block=3
    labels=(aiplat.io/pool=h100 topology.kubernetes.io/zone=zone-a aiplat.io/gpu-resources=device-plugin)
    taints=(nvidia.com/gpu:NoSchedule)
    rack_label=topology.aiplat.io/rack; block_label=topology.aiplat.io/block
    ;;
  l40s)
    per_rack=9; racks_per_block=4
    labels=(aiplat.io/pool=l40s topology.kubernetes.io/zone=zone-a aiplat.io/gpu-resources=dra nvidia.com/gpu.deploy.device-plugin=false)
    taints=(nvidia.com/gpu:NoSchedule)
    rack_label=topology.aiplat.io/rack; block_label=topology.aiplat.io/block
    ;;
  *) echo "unknown pool $pool" >&2; exit 2 ;;
esac
for node in "$@"; do
  rack=$(( i / per_rack )); block=$(( rack / racks_per_block ))
  kubectl label node "$node" --overwrite "${labels[@]}" \
    "$rack_label=$pool-rack-$rack" "$block_label=$pool-block-$block"
  if [ ${#taints[@]} -gt 0 ]; then
    kubectl taint node "$node" --overwrite "${taints[@]}"
  fi
  i=$(( i + 1 ))
done
