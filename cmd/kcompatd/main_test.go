package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -c overrides win over the file, and a later -c over an earlier one.
func TestLoadPropertiesOverridesWin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	content := "# comment\nnum.partitions=3\nlog.dirs=/from/file\nnode.id = 2\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var o overrideFlag
	for _, s := range []string{"num.partitions=5", "log.dirs=/a", "log.dirs=/b=c", "empty="} {
		if err := o.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	props, err := loadProperties(file, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"num.partitions": "5", "log.dirs": "/b=c", "node.id": "2", "empty": ""}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
	if len(props) != len(want) {
		t.Errorf("props %v, want %v", props, want)
	}
}

func TestOverrideFlagRejects(t *testing.T) {
	for _, s := range []string{"novalue", "=x", " =x"} {
		var o overrideFlag
		if err := o.Set(s); err == nil {
			t.Errorf("Set(%q) accepted", s)
		}
	}
}

func TestLoadPropertiesMissingFile(t *testing.T) {
	if _, err := loadProperties(filepath.Join(t.TempDir(), "nope"), nil); err == nil {
		t.Fatal("missing file accepted")
	}
}

// run's exit codes for the paths that need no broker.
func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"--check-config", "-c", "log.dirs=" + dir}, exitOK},
		{[]string{"--check-config", "-c", "num.partitions=0"}, exitUsage},
		{[]string{"--check-config", "--config", filepath.Join(dir, "missing.properties")}, exitUsage},
		{[]string{"--no-such-flag"}, exitUsage},
		{[]string{"a.properties", "b.properties"}, exitUsage},
		{[]string{"--log-level", "loud", "--check-config"}, exitUsage},
		{[]string{"-c", "listeners=SSL://127.0.0.1:0", "-c", "log.dirs=" + dir}, exitUsage},
		{[]string{"--check-config", "--create-topic", "orders:3:cleanup.policy=compact,delete", "--create-topic", "events:1"}, exitOK},
		{[]string{"--check-config", "--create-topic", "orders:0"}, exitUsage},
		{[]string{"--check-config", "--create-topic", "orders:1", "-c", "kcompatd.create.topics=orders:2"}, exitUsage}, // named twice
		// The offline subcommands.
		{[]string{"verify", dir}, exitOK},
		{[]string{"verify"}, exitUsage},
		{[]string{"verify", filepath.Join(dir, "missing")}, exitFailed},
		{[]string{"dump-log"}, exitUsage},
		{[]string{"dump-log", "--help"}, exitOK},
		{[]string{"dump-log", filepath.Join(dir, "00000000000000000000.log")}, exitFailed},
	}
	for _, tt := range tests {
		if got := run(tt.args); got != tt.want {
			t.Errorf("run(%q) = %d, want %d", tt.args, got, tt.want)
		}
	}
}

// The broker's usage names the offline subcommands.
func TestUsageMentionsSubcommands(t *testing.T) {
	var buf bytes.Buffer
	usage(&buf, nil)
	for _, want := range []string{"kcompatd dump-log [--print-data-log]", "kcompatd verify DIR", "--check-config"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, buf.String())
		}
	}
}
