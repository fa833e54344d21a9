// The CDI reference loader (tags.cncf.io/container-device-interface, pkg/cdi), pinned, for
// aiplat's differential tests: cdi-oracle/ is a main of ours around cdi.ReadSpec. Built by
// `python -m aiplat.devices.oracles` with `go build` into a cache outside the repo.
module aiplat.local/tools/devices

go 1.26

require tags.cncf.io/container-device-interface v1.1.2

require (
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	github.com/opencontainers/runtime-spec v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.19.0 // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.1 // indirect
)
