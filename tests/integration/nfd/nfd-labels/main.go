// nfd-labels: the labels node-feature-discovery would put on a node, computed by NFD's own
// feature sources (pci, memory) reading a host tree at ROOT, and NFD's own rule engine
// running the rules of a NodeFeatureRule. For aiplat's differential test against its node
// agent's labels on the same tree.
//
// usage: nfd-labels ROOT RULE.json   (RULE.json: a NodeFeatureRule as JSON)
// prints {"labels": {...}, "features": {...}} as JSON.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"
	"sigs.k8s.io/node-feature-discovery/pkg/apis/nfd/nodefeaturerule"
	"sigs.k8s.io/node-feature-discovery/pkg/utils/hostpath"
	"sigs.k8s.io/node-feature-discovery/source"
	_ "sigs.k8s.io/node-feature-discovery/source/memory"
	_ "sigs.k8s.io/node-feature-discovery/source/pci"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: nfd-labels ROOT RULE.json")
		os.Exit(2)
	}
	root := os.Args[1]
	hostpath.SysfsDir = hostpath.HostDir(filepath.Join(root, "sys") + "/")
	hostpath.ProcDir = hostpath.HostDir(filepath.Join(root, "proc") + "/")
	for _, name := range []string{"pci", "memory"} {
		if err := source.GetFeatureSource(name).Discover(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
	}
	features := source.GetAllFeatures()
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var rule nfdv1alpha1.NodeFeatureRule
	if err := json.Unmarshal(data, &rule); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	labels := map[string]string{}
	for i := range rule.Spec.Rules {
		out, err := nodefeaturerule.Execute(&rule.Spec.Rules[i], features, true)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rule %q: %v\n", rule.Spec.Rules[i].Name, err)
			os.Exit(1)
		}
		for k, v := range out.Labels {
			labels[k] = v
		}
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(map[string]any{"labels": labels, "features": features}); err != nil {
		os.Exit(1)
	}
}
