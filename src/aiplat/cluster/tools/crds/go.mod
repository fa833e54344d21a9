// Modules whose CRDs `aiplat lab cluster up` installs besides Kueue's and JobSet's; nothing
// here is built, their config/crd folders are copied out of the module cache. A module of
// its own so these versions do not move the programs' dependencies in ../go.mod.
module aiplat.local/tools/cluster/crds

go 1.26.0

// CRDs only (example/prometheus-operator-crd, deployment/base/nfd-crds); no package of
// them is imported, so this require stays as written (never `go mod tidy` this file).
require (
	github.com/k8snetworkplumbingwg/network-attachment-definition-client v1.7.7
	github.com/prometheus-operator/prometheus-operator v0.92.0
	sigs.k8s.io/node-feature-discovery v0.19.0
)

require (
	github.com/kubernetes-csi/external-snapshotter/client/v8 v8.6.0
	sigs.k8s.io/gateway-api v1.6.1
	sigs.k8s.io/gateway-api-inference-extension v1.6.0
	sigs.k8s.io/lws v0.9.0
)

require (
	github.com/fxamacker/cbor/v2 v2.9.2 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/text v0.39.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/api v0.36.3 // indirect
	k8s.io/apimachinery v0.36.3 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.0.0-20260501160325-927ab1f70cd6 // indirect
	k8s.io/utils v0.0.0-20260319190234-28399d86e0b5 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.4.2 // indirect
)
