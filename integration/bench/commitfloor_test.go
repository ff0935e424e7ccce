package main

import (
	"os"
	"testing"
	"time"
)

// TestCommitFloorCoversEveryRecord runs a short group-commit floor:
// measureCommitFloor fails unless every write was covered by an fsync; its
// figures are ordered and its files removed.
func TestCommitFloorCoversEveryRecord(t *testing.T) {
	dir := t.TempDir()
	p50, p99, err := measureCommitFloor(dir, 2000, 50*time.Millisecond, 3, 128)
	if err != nil {
		t.Fatal(err)
	}
	if p50 <= 0 || p99 < p50 {
		t.Fatalf("p50 %v, p99 %v", p50, p99)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
