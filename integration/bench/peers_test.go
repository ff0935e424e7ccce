package main

import (
	"encoding/base64"
	"testing"
)

// The storage tool takes the cluster id as an argument: never one it would
// read as an option, and always a version-4 UUID in Kafka's encoding.
func TestClusterID(t *testing.T) {
	for range 2000 { // about 31 ids starting with '-' would be drawn
		id := clusterID()
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(b) != 16 || len(id) != 22 || id[0] == '-' || b[6]>>4 != 4 || b[8]>>6 != 2 {
			t.Fatalf("cluster id %q (%x, %v)", id, b, err)
		}
	}
}
