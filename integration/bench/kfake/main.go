// Command kfake runs franz-go's fake broker (pkg/kfake) as a child process
// of the bench, so that its CPU is read from /proc/PID/stat as the other
// brokers' is, apart from the load generator's. It is its own module so
// that kfake's requirements do not move the main module's.
//
//	kfake -port N (kfake listens on 127.0.0.1) -data-dir DIR [-sync-writes]
//
// It prints "listening on ADDR" once serving and runs until SIGTERM/SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port to listen on (127.0.0.1)")
	dataDir := flag.String("data-dir", "", "kfake's data dir (disk persistence); empty for memory only")
	syncWrites := flag.Bool("sync-writes", false, "fsync every produced batch (as log.flush.interval.messages=1)")
	flag.Parse()
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if *syncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	fmt.Println("listening on", c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
}
