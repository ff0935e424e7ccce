package panics

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// Run logs a panic of f at Error, with the message, the value and the
// stack, and returns normally.
func TestRunLogsAndReturns(t *testing.T) {
	var buf bytes.Buffer
	ran := false
	Run(zerolog.New(&buf), "task panicked", func() {
		ran = true
		panic("boom")
	})
	s := buf.String()
	if !ran || !strings.Contains(s, `"level":"error"`) || !strings.Contains(s, `"panic":"boom"`) ||
		!strings.Contains(s, "task panicked") || !strings.Contains(s, `"stack"`) {
		t.Fatalf("ran %v, logged %s", ran, s)
	}
	buf.Reset()
	Run(zerolog.New(&buf), "quiet", func() {})
	if buf.Len() != 0 {
		t.Fatalf("logged without a panic: %s", buf.String())
	}
}
