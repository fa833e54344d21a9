#!/usr/bin/env bash
# Label and taint the nodes of each pool. Review, then run with the pool name and its
# node names in physical order (rack by rack): ./label-and-taint.sh h100 node-a node-b
# Rack and block labels follow the spec's nodesPerRack and racksPerBlock.
# Add --dry-run=server to each kubectl call to preview.
set -euo pipefail
pool="${1:?usage: $0 POOL NODE...}"; shift
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
i=0
for node in "$@"; do
  rack=$(( i / per_rack )); block=$(( rack / racks_per_block ))
  kubectl label node "$node" --overwrite "${labels[@]}" \
    "$rack_label=$pool-rack-$rack" "$block_label=$pool-block-$block"
  if [ ${#taints[@]} -gt 0 ]; then
    kubectl taint node "$node" --overwrite "${taints[@]}"
  fi
  i=$(( i + 1 ))
done
