// Command cdi-oracle loads CDI spec files with the reference loader (cdi.ReadSpec: the
// strict YAML/JSON decoding, version, name, annotation and edit checks that containerd,
// CRI-O and Podman run) and prints one JSON line per file: {"file", "ok", "error"}.
// Files come as arguments, or one path per line on stdin with "-", so thousands of specs
// are checked in one process.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"tags.cncf.io/container-device-interface/pkg/cdi"
)

type verdict struct {
	File  string `json:"file"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// load runs the reference loader; a panic in it (pkg/cdi v1.1.2 dereferences a null
// deviceNodes entry) is a rejection too: the runtime linking it would crash on that file.
func load(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	_, err = cdi.ReadSpec(path, 0)
	return err
}

func check(out *json.Encoder, path string) error {
	v := verdict{File: path, OK: true}
	if err := load(path); err != nil {
		v.OK, v.Error = false, err.Error()
	}
	return out.Encode(v)
}

func main() {
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	out := json.NewEncoder(w)
	paths := os.Args[1:]
	if len(paths) == 1 && paths[0] == "-" {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<20), 1<<20)
		for in.Scan() {
			if err := check(out, in.Text()); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		return
	}
	for _, p := range paths {
		if err := check(out, p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}
