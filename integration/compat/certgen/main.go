// Command certgen writes the throwaway certificates make compat's SASL_SSL
// listener uses, so that the run needs no openssl: DIR/ca.pem (the CA the
// clients trust) and DIR/server.pem (the broker's key and certificate for
// 127.0.0.1 and localhost, issued by that CA).
//
//	go run ./integration/compat/certgen DIR
package main

import (
	"fmt"
	"os"

	"github.com/kcompatd/kcompatd/internal/testcerts"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: certgen DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	ca := testcerts.NewCA("kcompatd compat CA")
	server := ca.Server()
	for name, b := range map[string][]byte{
		"ca.pem":     ca.CertPEM(),
		"server.pem": append(server.KeyPEM(), server.CertPEM()...),
	} {
		if err := os.WriteFile(dir+"/"+name, b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "certgen:", err)
			os.Exit(1)
		}
	}
}
