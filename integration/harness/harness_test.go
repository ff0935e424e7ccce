package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeBrokerEnv makes the test binary act as a minimal broker: it parses the
// -c flags, listens, logs the started line the way kcompatd does and exits 0
// on SIGTERM.
const fakeBrokerEnv = "KCOMPATD_HARNESS_FAKE_BROKER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeBrokerEnv); mode != "" {
		os.Exit(fakeBroker(mode))
	}
	os.Exit(m.Run())
}

func fakeBroker(mode string) int {
	var listener string
	for i, a := range os.Args {
		if a == "-c" && i+1 < len(os.Args) {
			if v, ok := strings.CutPrefix(os.Args[i+1], "listeners=PLAINTEXT://"); ok {
				listener = v
			}
		}
	}
	if mode == "crash" {
		fmt.Println("panic: boom")
		return 2
	}
	ln, err := net.Listen("tcp", listener)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer ln.Close()
	line, _ := json.Marshal(map[string]any{
		"level": "info", "message": StartedMessage, "addr": ln.Addr().String(), "recovery_bytes_read": 42,
	})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	fmt.Printf("{\"level\":\"info\",\"message\":\"some other line\"}\n%s\n", line)
	<-sig
	return 0
}

func fakeOptions(t *testing.T, mode string) Options {
	t.Setenv(fakeBrokerEnv, mode)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Binary: exe, DataDir: t.TempDir(), Logf: t.Logf, StartTimeout: 20 * time.Second}
}

func TestStartStop(t *testing.T) {
	b, err := Start(fakeOptions(t, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Kill()
	if addr, _ := b.StartedField("addr"); addr != b.Addr {
		t.Errorf("addr field %v, broker Addr %s", addr, b.Addr)
	}
	if n, err := b.RecoveryBytesRead(); err != nil || n != 42 {
		t.Errorf("RecoveryBytesRead = %d, %v", n, err)
	}
	c, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if cpu, err := b.CPUTime(); err != nil || cpu < 0 {
		t.Errorf("CPUTime = %v, %v", cpu, err)
	}
	if err := b.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := b.Kill(); err != nil {
		t.Errorf("Kill after Stop: %v", err)
	}
}

func TestKill(t *testing.T) {
	b, err := Start(fakeOptions(t, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := b.Stop(time.Second); !errors.As(err, &ee) {
		t.Errorf("Stop after Kill = %v, want the kill's exit error", err)
	}
}

func TestStartFailure(t *testing.T) {
	b, err := Start(fakeOptions(t, "crash"))
	if err == nil {
		b.Kill()
		t.Fatal("Start succeeded for a broker that exits")
	}
	if !strings.Contains(err.Error(), "panic: boom") {
		t.Errorf("error does not carry the output: %v", err)
	}
}

func TestProcCPUTime(t *testing.T) {
	if _, err := ProcCPUTime(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}
