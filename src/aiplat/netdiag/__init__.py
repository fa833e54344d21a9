"""Lab (network namespaces as nodes), fault injection, network checks and diagnosis.

Pure: :mod:`.model` (lab layout and commands as data), :mod:`.faults` (fault plans),
:mod:`.netcheck` (findings from probe results), :mod:`.correlate` (ranking causes over metric
series), :mod:`.rdma` and :mod:`.collective` (readers of perftest, ibstat, InfiniBand counters,
ethtool -S and nccl-tests output), :mod:`.rdma_diagnose` (ranking RDMA causes across nodes and
rails). I/O edges: :mod:`.rdma_folder` (a folder of recorded outputs, read through
:mod:`aiplat.inputs`), :mod:`.sh` (commands, processes), :mod:`.state` (the state file),
:mod:`.lab` (up, status, down, faults), :mod:`.probes` (net check), :mod:`.prom` (Prometheus
HTTP API), :mod:`.diagnose`, :mod:`.pullprobe` (the model-pull symptom). Test helpers:
:mod:`.testing`.
"""
