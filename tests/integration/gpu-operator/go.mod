// The NVIDIA GPU Operator's controller (cmd/gpu-operator), pinned, for aiplat's live proof of
// the rendered ClusterPolicy on the lab cluster (test_gpu_operator_live.py). Built by the test's
// helper (gpuoperator.py) with `go build` into a cache outside the repo, after the lab's build
// (scripts/test.sh). The operator's module has no release tags the Go proxy serves and the
// proxy serves no pseudo-version newer than the pin (2025-09-17, which pins Kubernetes 1.32
// and controller-runtime 0.20; upstream's 2026 main pins the lab's 1.36.3 and 0.24.1 but is
// not on the proxy). This module requires every module the lab's tools module
// (src/aiplat/cluster/tools/go.mod) also needs at the lab's version, with the lab's replace
// block, so the build shares the lab's Go build cache: ~40 packages compile after the lab's
// build instead of ~1000 (test_gpu_operator_pins.py keeps the two in step). The one raise
// this needs: openshift/client-go to the 2026-07-23 pseudo-version upstream's main uses
// (the 2025-01 one's applyconfigurations are generated for structured-merge-diff v4, the
// 1.36 libraries use v6).
module aiplat.local/tools/gpuoperator

go 1.26.0

require (
	dario.cat/mergo v1.0.1 // indirect
	github.com/Azure/go-ansiterm v0.0.0-20250102033503-faa5f7b0171c // indirect
	github.com/MakeNowJust/heredoc v1.0.0 // indirect
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/Masterminds/sprig/v3 v3.3.0 // indirect
	github.com/NVIDIA/gpu-operator v0.0.0-20250917190837-d73a0086a6ba // indirect
	github.com/NVIDIA/k8s-kata-manager v0.2.3 // indirect
	github.com/NVIDIA/k8s-operator-libs v0.0.0-20250311214045-7d667fbaa7ac // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chai2010/gettext-go v1.0.3 // indirect
	github.com/creack/pty v1.1.24 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.13.0 // indirect
	github.com/evanphx/json-patch v5.9.11+incompatible // indirect
	github.com/evanphx/json-patch/v5 v5.9.11 // indirect
	github.com/exponent-io/jsonpath v0.0.0-20210407135951-1de76d718b3f // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/fxamacker/cbor/v2 v2.9.1 // indirect
	github.com/go-errors/errors v1.5.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/zapr v1.3.0 // indirect
	github.com/go-openapi/jsonpointer v0.23.1 // indirect
	github.com/go-openapi/jsonreference v0.21.5 // indirect
	github.com/go-openapi/swag v0.26.0 // indirect
	github.com/go-openapi/swag/cmdutils v0.26.0 // indirect
	github.com/go-openapi/swag/conv v0.26.0 // indirect
	github.com/go-openapi/swag/fileutils v0.26.0 // indirect
	github.com/go-openapi/swag/jsonname v0.26.0 // indirect
	github.com/go-openapi/swag/jsonutils v0.26.0 // indirect
	github.com/go-openapi/swag/loading v0.26.0 // indirect
	github.com/go-openapi/swag/mangling v0.26.0 // indirect
	github.com/go-openapi/swag/netutils v0.26.0 // indirect
	github.com/go-openapi/swag/stringutils v0.26.0 // indirect
	github.com/go-openapi/swag/typeutils v0.26.0 // indirect
	github.com/go-openapi/swag/yamlutils v0.26.0 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/google/gnostic-models v0.7.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/huandu/xstrings v1.5.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/klauspost/compress v1.18.4 // indirect
	github.com/liggitt/tabwriter v0.0.0-20181228230101-89fcab3d43de // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/go-wordwrap v1.0.1 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/moby/term v0.5.2 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/monochromegane/go-gitignore v0.0.0-20200626010858-205db1a8cc00 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/onsi/ginkgo/v2 v2.32.0 // indirect
	github.com/onsi/gomega v1.42.1 // indirect
	github.com/openshift/api v0.0.0-20260723163829-0f2bcae5eb15 // indirect
	github.com/openshift/client-go v0.0.0-20260723174158-ae2315de9d73 // indirect
	github.com/peterbourgon/diskv v2.0.1+incompatible // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring v0.81.0 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.70.0 // indirect
	github.com/prometheus/procfs v0.21.0 // indirect
	github.com/regclient/regclient v0.8.2 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/stretchr/objx v0.5.3 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	github.com/xlab/treeprint v1.2.0 // indirect
	go.uber.org/automaxprocs v1.6.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/crypto v0.53.0 // indirect
	golang.org/x/mod v0.37.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/term v0.44.0 // indirect
	golang.org/x/text v0.38.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	golang.org/x/tools v0.47.0 // indirect
	gomodules.xyz/jsonpatch/v2 v2.5.0 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/api v0.36.3 // indirect
	k8s.io/apiextensions-apiserver v0.36.2 // indirect
	k8s.io/apimachinery v0.36.3 // indirect
	k8s.io/cli-runtime v0.36.3 // indirect
	k8s.io/client-go v0.36.3 // indirect
	k8s.io/component-base v0.36.3 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.0.0-20260618221249-bc653b64f974 // indirect
	k8s.io/kubectl v0.36.2 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
	sigs.k8s.io/controller-runtime v0.24.1 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/kustomize/api v0.21.1 // indirect
	sigs.k8s.io/kustomize/kyaml v0.21.1 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.4.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

tool github.com/NVIDIA/gpu-operator/cmd/gpu-operator

replace (
	k8s.io/api => k8s.io/api v0.36.3
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.36.3
	k8s.io/apimachinery => k8s.io/apimachinery v0.36.3
	k8s.io/apiserver => k8s.io/apiserver v0.36.3
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.36.3
	k8s.io/client-go => k8s.io/client-go v0.36.3
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.36.3
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.36.3
	k8s.io/code-generator => k8s.io/code-generator v0.36.3
	k8s.io/component-base => k8s.io/component-base v0.36.3
	k8s.io/component-helpers => k8s.io/component-helpers v0.36.3
	k8s.io/controller-manager => k8s.io/controller-manager v0.36.3
	k8s.io/cri-api => k8s.io/cri-api v0.36.3
	k8s.io/cri-client => k8s.io/cri-client v0.36.3
	k8s.io/cri-streaming => k8s.io/cri-streaming v0.36.3
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.36.3
	k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.36.3
	k8s.io/endpointslice => k8s.io/endpointslice v0.36.3
	k8s.io/externaljwt => k8s.io/externaljwt v0.36.3
	k8s.io/kms => k8s.io/kms v0.36.3
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.36.3
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.36.3
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.36.3
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.36.3
	k8s.io/kubectl => k8s.io/kubectl v0.36.3
	k8s.io/kubelet => k8s.io/kubelet v0.36.3
	k8s.io/metrics => k8s.io/metrics v0.36.3
	k8s.io/mount-utils => k8s.io/mount-utils v0.36.3
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.36.3
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.36.3
	k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.36.3
	k8s.io/sample-controller => k8s.io/sample-controller v0.36.3
	k8s.io/streaming => k8s.io/streaming v0.36.3
)
