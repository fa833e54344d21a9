// Command ctk-generate prints the CDI spec nvidia-ctk's library (pkg/nvcdi, mode nvml)
// generates for a driver root, with go-nvml's DGX A100 mock standing in for the driver:
// -root DIR (the fake driver root), -gpus N (the mock's first N GPUs), -version V (the
// driver version the mock reports). The same steps as `nvidia-ctk cdi generate`: device
// specs, common edits, an "all" device, YAML on stdout.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi/spec"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi/transform"
)

func main() {
	root := flag.String("root", "/", "driver root")
	hook := flag.String("hook", "/usr/bin/nvidia-cdi-hook", "nvidia-cdi-hook path")
	gpus := flag.Int("gpus", 1, "GPUs of the mock to use")
	version := flag.String("version", "550.54.15", "driver version the mock reports")
	inventory := flag.String("inventory", "", "write the mock GPUs' identities (JSON) here")
	flag.Parse()

	server := dgxa100.New()
	server.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return *version, nvml.SUCCESS }
	server.DeviceGetCountFunc = func() (int, nvml.Return) { return *gpus, nvml.SUCCESS }
	for _, d := range server.Devices {
		d.(*dgxa100.Device).GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
	}
	var _ *mock.Interface // the mock implements nvml.Interface
	if *inventory != "" {
		writeInventory(server, *gpus, *inventory)
	}

	lib, err := nvcdi.New(nvcdi.WithDriverRoot(*root), nvcdi.WithDevRoot(*root),
		nvcdi.WithNVIDIACDIHookPath(*hook), nvcdi.WithMode(nvcdi.ModeNvml),
		nvcdi.WithNvmlLib(server))
	if err != nil {
		fail(err)
	}
	devices, err := lib.GetDeviceSpecsByID("all")
	if err != nil {
		fail(err)
	}
	common, err := lib.GetCommonEdits()
	if err != nil {
		fail(err)
	}
	s, err := spec.New(spec.WithVendor("nvidia.com"), spec.WithClass("gpu"),
		spec.WithDeviceSpecs(devices), spec.WithEdits(*common.ContainerEdits),
		spec.WithFormat("yaml"),
		spec.WithMergedDeviceOptions(transform.WithName("all"), transform.WithSkipIfExists(true)))
	if err != nil {
		fail(err)
	}
	if _, err := s.WriteTo(os.Stdout); err != nil {
		fail(err)
	}
}

// writeInventory: index, UUID, minor number and PCI bus id of the mock GPUs, in the shape
// `aiplat cdi generate --inventory` reads.
func writeInventory(server *dgxa100.Server, n int, path string) {
	var gpus []map[string]any
	for i := 0; i < n; i++ {
		d := server.Devices[i]
		uuid, _ := d.GetUUID()
		minor, _ := d.GetMinorNumber()
		pci, _ := d.GetPciInfo()
		bus := make([]byte, 0, len(pci.BusId))
		for _, c := range pci.BusId {
			if c == 0 {
				break
			}
			bus = append(bus, byte(c))
		}
		gpus = append(gpus, map[string]any{"index": i, "uuid": uuid, "minor": minor,
			"pci": string(bus)})
	}
	data, err := json.Marshal(map[string]any{"gpus": gpus})
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}
