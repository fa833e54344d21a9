// The upstream Helm charts test_charts_live.py renders with aiplat's
// values, pinned as Go modules (the chart files come with each project's module); nothing
// here is built or imported, `go mod download -json` in this folder fetches them (checked
// against go.sum). Never `go mod tidy` this file: it would drop every require.
//
// - github.com/NVIDIA/gpu-operator: the proxy serves no semver tag of this module, only
//   pseudo-versions; this is the newest (main on 2025-09-17), deployments/gpu-operator, the
//   same pin as the controller test's (../gpu-operator/go.mod).
//   Its chart carries NFD's chart as a subchart (charts/node-feature-discovery, v0.17.3).
// - sigs.k8s.io/node-feature-discovery: the version that GPU Operator chart depends on
//   (Chart.lock), deployment/helm/node-feature-discovery. The lab cluster's NFD CRDs are
//   pinned separately (src/aiplat/cluster/tools/crds/go.mod).
// Kueue's chart comes with the Kueue the lab runs (src/aiplat/cluster/tools/go.mod).
module aiplat.local/tests/helmcharts

go 1.26.0

require (
	github.com/NVIDIA/gpu-operator v0.0.0-20250917190837-d73a0086a6ba
	sigs.k8s.io/node-feature-discovery v0.17.3
)
