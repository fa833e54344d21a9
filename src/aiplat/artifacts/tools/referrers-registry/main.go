// Command referrers-registry serves go-containerregistry's registry with the OCI 1.1
// referrers API switched on (GET /v2/<name>/referrers/<digest>), for aiplat's interop
// tests: distribution v3.1 and Debian's docker-registry 2.8 do not serve referrers, and
// zot is not on the Go module proxy. Manifests live in memory, blobs on disk.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("address", "127.0.0.1:0", "host:port to listen on")
	blobs := flag.String("blobs", "", "directory for blobs (default: in memory)")
	flag.Parse()
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	opts := []registry.Option{registry.WithReferrersSupport(true),
		registry.Logger(log.New(os.Stderr, "", log.LstdFlags))}
	if *blobs != "" {
		if err := os.MkdirAll(*blobs, 0o700); err != nil {
			log.Fatal(err)
		}
		opts = append(opts, registry.WithBlobHandler(registry.NewDiskBlobHandler(*blobs)))
	}
	log.Printf("serving on %s", listener.Addr())
	s := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: registry.New(opts...)}
	log.Fatal(s.Serve(listener))
}
