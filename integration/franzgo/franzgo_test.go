// Package franzgo runs franz-go's own kgo test suite (pinned at the version
// in go.mod, v1.22.3) against a kcompatd binary and compares the outcome of
// each top-level test with the checked-in lists not_passing.txt and
// skipping.txt. See README.md.
package franzgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcompatd/kcompatd/integration/harness"
)

// franzVersion is the franz-go version the lists describe.
const franzVersion = "v1.22.3"

// Environment knobs (see README.md).
const (
	envAll      = "KCOMPATD_FRANZ_ALL"      // 1: also run the tests listed as hanging
	envUpdate   = "KCOMPATD_FRANZ_UPDATE"   // 1: rewrite the lists from this run
	envRun      = "KCOMPATD_FRANZ_RUN"      // regexp: only these top-level tests
	envTimeout  = "KCOMPATD_FRANZ_TIMEOUT"  // per-test timeout (Go duration), default 90s
	envParallel = "KCOMPATD_FRANZ_PARALLEL" // kgo test processes at once, default 2
)

// outcome of one top-level kgo test.
type outcome string

const (
	pass    outcome = "pass"
	fail    outcome = "fail"
	skip    outcome = "skip"
	timeout outcome = "timeout" // the per-test timeout killed it: a hang
)

// listEntry is one line of not_passing.txt or skipping.txt:
//
//	TestName  # missing feature
//
// In not_passing.txt a reason starting with "hang:" marks a test that hangs
// rather than fails; it is not run unless KCOMPATD_FRANZ_ALL=1.
type listEntry struct {
	name   string
	reason string
}

func (e listEntry) hangs() bool { return strings.HasPrefix(e.reason, "hang:") }

func readList(t *testing.T, path string) map[string]listEntry {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]listEntry{}
	for i, line := range strings.Split(string(raw), "\n") {
		name, reason, _ := strings.Cut(line, "#")
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if strings.ContainsAny(name, " \t") || !strings.HasPrefix(name, "Test") {
			t.Fatalf("%s:%d: want `TestName  # missing feature`, got %q", path, i+1, line)
		}
		if strings.TrimSpace(reason) == "" {
			t.Errorf("%s:%d: %s has no reason; say which feature is missing", path, i+1, name)
		}
		if _, dup := out[name]; dup {
			t.Errorf("%s:%d: %s listed twice", path, i+1, name)
		}
		out[name] = listEntry{name: name, reason: strings.TrimSpace(reason)}
	}
	return out
}

// TestFranzGoSuite builds kcompatd and franz-go's kgo test binary, starts the
// broker, runs each top-level kgo test in its own process (so that a hang
// costs one per-test timeout, not the whole run) and checks the outcomes
// against the lists: CI fails when a test outside not_passing.txt fails, one
// outside skipping.txt skips, or a listed test passes.
func TestFranzGoSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("franz-go's suite takes minutes; run without -short")
	}
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	checkPinned(t, root)

	notPassing := readList(t, "not_passing.txt")
	skipping := readList(t, "skipping.txt")
	for name := range notPassing {
		if _, ok := skipping[name]; ok {
			t.Errorf("%s is in both not_passing.txt and skipping.txt", name)
		}
	}

	dir := t.TempDir()
	// The broker is not race-built here: the suite checks compatibility
	// under realistic timing, and integration/ runs the broker under -race.
	bin, err := harness.Build(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	kgoTest := filepath.Join(dir, "kgo.test")
	build := exec.Command("go", "test", "-c", "-o", kgoTest, "github.com/twmb/franz-go/pkg/kgo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building franz-go's kgo tests: %v\n%s", err, out)
	}
	// go test runs a test binary in its package's source directory, and
	// some kgo tests read their own sources (TestOptValuesCoversEveryOption
	// parses config.go).
	pkgDirCmd := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/twmb/franz-go/pkg/kgo")
	pkgDirCmd.Dir = root
	pkgDirOut, err := pkgDirCmd.Output()
	if err != nil {
		t.Fatalf("locating franz-go's kgo package: %v", err)
	}
	pkgDir := strings.TrimSpace(string(pkgDirOut))
	listOut, err := exec.Command(kgoTest, "-test.list", "^Test").Output()
	if err != nil {
		t.Fatalf("listing kgo tests: %v", err)
	}
	all := strings.Fields(string(listOut))
	exists := map[string]bool{}
	for _, name := range all {
		exists[name] = true
	}
	for _, l := range []map[string]listEntry{notPassing, skipping} {
		for name := range l {
			if !exists[name] {
				t.Errorf("listed test %s does not exist in franz-go %s's kgo package", name, franzVersion)
			}
		}
	}

	var filter *regexp.Regexp
	if s := os.Getenv(envRun); s != "" {
		filter = regexp.MustCompile(s)
	}
	runAll := os.Getenv(envAll) == "1"
	var toRun, excluded []string
	for _, name := range all {
		if filter != nil && !filter.MatchString(name) {
			continue
		}
		if e, ok := notPassing[name]; ok && e.hangs() && !runAll {
			excluded = append(excluded, name)
			continue
		}
		toRun = append(toRun, name)
	}

	perTest := 90 * time.Second
	if s := os.Getenv(envTimeout); s != "" {
		if perTest, err = time.ParseDuration(s); err != nil {
			t.Fatalf("%s: %v", envTimeout, err)
		}
	}
	parallel := 2
	if s := os.Getenv(envParallel); s != "" {
		if parallel, err = strconv.Atoi(s); err != nil || parallel < 1 {
			t.Fatalf("%s=%q: want a positive integer", envParallel, s)
		}
	}

	dataDir := t.TempDir()
	// A SASL_PLAINTEXT listener with SCRAM-SHA-256 beside PLAINTEXT, for
	// TestSCRAMAuth and TestSCRAMAuthBadCredentials (KGO_TEST_SCRAM_SEEDS).
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	saslPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	saslAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(saslPort))
	// And one with OAUTHBEARER and Kafka's unsecured validator, for
	// TestOAuthAuth (KGO_TEST_OAUTH_SEEDS).
	oauthPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	oauthAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(oauthPort))
	b, err := harness.Start(harness.Options{
		Binary:  bin,
		DataDir: dataDir,
		Port:    port,
		Configs: []string{
			// franz-go's tests create topics of up to 31 partitions and
			// rely on auto-creation in a few places, as against a
			// default Kafka.
			"auto.create.topics.enable=true",
			"listeners=PLAINTEXT://127.0.0.1:" + strconv.Itoa(port) + ",SASL_PLAINTEXT://" + saslAddr + ",OAUTH://" + oauthAddr,
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,OAUTH:SASL_PLAINTEXT",
			"sasl.enabled.mechanisms=SCRAM-SHA-256",
			"listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER",
			"listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"admin\";",
		},
		Logf: func(string, ...any) {}, // kept in b.Output() for failures
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Kill() })
	scramUser := createSCRAMUser(t, b.Addr)

	env := append(os.Environ(),
		"KGO_SEEDS="+b.Addr,
		"KGO_TEST_RF=1",
		"KGO_TEST_SCRAM_SEEDS="+saslAddr,
		"KGO_TEST_SCRAM="+scramUser,
		"KGO_TEST_OAUTH_SEEDS="+oauthAddr,
	)
	if os.Getenv("KGO_TEST_RECORDS") == "" {
		env = append(env, "KGO_TEST_RECORDS=50000")
	}

	var deadline time.Time
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-30 * time.Second) // leave time to report
	}
	results := map[string]*result{}
	var mu sync.Mutex
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var outOfTime []string
	for _, name := range toRun {
		if !deadline.IsZero() && time.Now().Add(perTest).After(deadline) {
			outOfTime = append(outOfTime, name)
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			r := runOne(kgoTest, pkgDir, name, perTest, env)
			t.Logf("%-50s %-7s %v", name, r.outcome, time.Since(start).Round(time.Millisecond))
			mu.Lock()
			results[name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	select {
	case <-b.Exited():
		t.Errorf("the broker exited during the suite; its last output:\n%s", b.Output())
	default:
	}
	if s := b.Suspicious(); s != "" {
		t.Errorf("broker output contains %q:\n%s", s, b.Output())
	}
	if len(outOfTime) > 0 {
		t.Errorf("the go test -timeout left no time for %d tests (use -timeout 30m): %v", len(outOfTime), outOfTime)
	}

	counts := map[outcome]int{}
	names := make([]string, 0, len(results))
	for name := range results {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := results[name]
		counts[r.outcome]++
		_, listedNP := notPassing[name]
		_, listedSkip := skipping[name]
		switch r.outcome {
		case pass:
			if listedNP {
				t.Errorf("%s passes now: remove it from not_passing.txt", name)
			}
			if listedSkip {
				t.Errorf("%s passes now: remove it from skipping.txt", name)
			}
		case fail, timeout:
			if !listedNP {
				t.Errorf("%s: %s (not listed in not_passing.txt)\n%s", name, r.outcome, r.tail())
			}
		case skip:
			if !listedSkip {
				t.Errorf("%s skips (not listed in skipping.txt): %s", name, r.skipReason())
			}
		}
	}
	t.Logf("franz-go %s kgo suite against kcompatd: %d run (%d pass, %d fail, %d timeout, %d skip), %d not run as listed hangs",
		franzVersion, len(results), counts[pass], counts[fail], counts[timeout], counts[skip], len(excluded))
	if len(excluded) > 0 {
		t.Logf("not run (listed as hanging; %s=1 runs them): %v", envAll, excluded)
	}

	if os.Getenv(envUpdate) == "1" {
		writeLists(t, results, notPassing, skipping, excluded)
	}
}

// checkPinned fails unless the module graph uses franz-go at franzVersion:
// the lists describe that version only.
func checkPinned(t *testing.T, root string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/twmb/franz-go")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m github.com/twmb/franz-go: %v", err)
	}
	if v := strings.TrimSpace(string(out)); v != franzVersion {
		t.Fatalf("go.mod has franz-go %s; the lists describe %s: keep it pinned or redo the lists", v, franzVersion)
	}
}

// result of one kgo test process.
type result struct {
	outcome outcome
	output  []string // the process's output lines
	own     []string // the output lines of the top-level test itself
}

func (r *result) tail() string {
	const n = 60
	lines := r.output
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\t" + strings.Join(lines, "\t")
}

// skipReason is the t.Skip message: the test's last output line that isn't
// a "--- SKIP" or "=== RUN" line.
func (r *result) skipReason() string {
	for i := len(r.own) - 1; i >= 0; i-- {
		l := strings.TrimSpace(r.own[i])
		if l != "" && !strings.HasPrefix(l, "--- SKIP") && !strings.HasPrefix(l, "=== ") {
			return l
		}
	}
	return ""
}

// event is one line of test2json output.
type event struct {
	Action string
	Test   string
	Output string
}

// runOne runs one top-level test in its own kgo.test process, through
// test2json, and returns its outcome. A process still running after perTest
// is killed and counts as a timeout.
func runOne(kgoTest, pkgDir, name string, perTest time.Duration, env []string) *result {
	ctx, cancel := context.WithTimeout(context.Background(), perTest+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "tool", "test2json", "-t", "-p", "kgo",
		kgoTest, "-test.v=test2json", "-test.count=1",
		"-test.run", "^"+regexp.QuoteMeta(name)+"$",
		"-test.timeout", perTest.String())
	cmd.Env = env
	cmd.Dir = pkgDir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()

	r := &result{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			r.output = append(r.output, sc.Text()+"\n")
			continue
		}
		if ev.Output != "" {
			r.output = append(r.output, ev.Output)
			if ev.Test == name {
				r.own = append(r.own, ev.Output)
			}
			if strings.Contains(ev.Output, "panic: test timed out after") {
				r.outcome = timeout
			}
		}
		if ev.Test != name || r.outcome == timeout {
			continue
		}
		switch ev.Action {
		case "pass":
			r.outcome = pass
		case "fail":
			r.outcome = fail
		case "skip":
			r.outcome = skip
		}
	}
	if ctx.Err() != nil {
		r.outcome = timeout
	}
	if r.outcome == "" {
		r.outcome = fail
		r.output = append(r.output, fmt.Sprintf("no outcome for %s (%v); stderr: %s\n", name, runErr, stderr.String()))
	}
	return r
}

// writeLists rewrites not_passing.txt and skipping.txt from this run,
// keeping the reasons already given and marking new entries for a person to
// explain. Tests not run keep their entries.
func writeLists(t *testing.T, results map[string]*result, notPassing, skipping map[string]listEntry, excluded []string) {
	t.Helper()
	np := map[string]string{}
	sk := map[string]string{}
	for _, name := range excluded {
		np[name] = notPassing[name].reason
	}
	for name, e := range notPassing {
		if _, ran := results[name]; !ran {
			np[name] = e.reason
		}
	}
	for name, e := range skipping {
		if _, ran := results[name]; !ran {
			sk[name] = e.reason
		}
	}
	for name, r := range results {
		switch r.outcome {
		case fail, timeout:
			reason := notPassing[name].reason
			if reason == "" {
				reason = "TODO: explain (" + string(r.outcome) + ")"
				if r.outcome == timeout {
					reason = "hang: TODO: explain"
				}
			}
			np[name] = reason
		case skip:
			reason := skipping[name].reason
			if reason == "" {
				reason = "TODO: explain; skip message: " + r.skipReason()
			}
			sk[name] = reason
		}
	}
	write := func(path, heading string, m map[string]string) {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		var buf bytes.Buffer
		buf.WriteString(heading)
		for _, n := range names {
			fmt.Fprintf(&buf, "%s  # %s\n", n, m[n])
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("not_passing.txt", notPassingHeading, np)
	write("skipping.txt", skippingHeading, sk)
	t.Logf("rewrote not_passing.txt (%d) and skipping.txt (%d)", len(np), len(sk))
}

const notPassingHeading = `# franz-go ` + franzVersion + ` kgo tests that do not pass against kcompatd yet, with
# the missing feature. Format: TestName  # reason. A reason starting with
# "hang:" means the test hangs rather than fails; TestFranzGoSuite does not
# run it unless KCOMPATD_FRANZ_ALL=1, so its passing cannot be noticed
# otherwise. Remove a line when the test passes (CI says so).
`

const skippingHeading = `# franz-go ` + franzVersion + ` kgo tests that skip against kcompatd, with the reason.
# Format: TestName  # reason. Remove a line when the test runs and passes.
`

// createSCRAMUser creates a SCRAM-SHA-256 user with AlterUserScramCredentials
// over the PLAINTEXT listener at addr, as franz-go's CI creates one against
// Kafka, and returns it as KGO_TEST_SCRAM wants it: user:password:256.
func createSCRAMUser(t *testing.T, addr string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "kgo-scram", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "kgo-scram-secret"},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("creating the SCRAM user: %v", err)
	}
	return "kgo-scram:kgo-scram-secret:256"
}
