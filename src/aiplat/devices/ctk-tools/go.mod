// nvidia-ctk's spec generator (github.com/NVIDIA/nvidia-container-toolkit pkg/nvcdi),
// pinned, driven by ctk-generate/ (a main of ours) with go-nvml's DGX A100 mock instead of a
// real driver, so aiplat's generated GPU spec can be compared with nvidia-ctk's for the same
// fake driver root. Needs cgo (go-nvml); built by aiplat.devices.oracles.build_ctk.
module aiplat.local/tools/devices-ctk

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/NVIDIA/nvidia-container-toolkit v1.20.2
)

require (
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/NVIDIA/go-nvlib v0.12.0 // indirect
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/moby/sys/devices v0.1.0 // indirect
	github.com/opencontainers/cgroups v0.1.0 // indirect
	github.com/opencontainers/runtime-spec v1.3.0 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
	tags.cncf.io/container-device-interface v1.1.1 // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.1 // indirect
)
