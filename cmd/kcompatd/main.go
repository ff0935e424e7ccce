// Command kcompatd runs a Kafka-compatible broker.
//
//	kcompatd [--config server.properties] [-c key=value]... [--check-config]
//	kcompatd dump-log [--print-data-log] [--offsets-decoder] [--transaction-log-decoder] [--json] FILE...
//	kcompatd verify DIR
//
// Settings use Kafka's property names and defaults; -c overrides win over
// the file. See README.md for every supported property. The dump-log and
// verify subcommands read a data dir offline (package offline).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd"
	"github.com/kcompatd/kcompatd/cmd/kcompatd/offline"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the broker could not start or stopped with an error
	exitUsage  = 2 // bad flags or configuration
)

func main() {
	// Milliseconds matter to a broker that starts in a few of them. This
	// is zerolog's one global; the process is ours to set it for.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "dump-log":
			return offline.DumpLog(args[1:], os.Stdout, os.Stderr)
		case "verify":
			return offline.Verify(args[1:], os.Stdout, os.Stderr)
		}
	}
	flags := flag.NewFlagSet("kcompatd", flag.ContinueOnError)
	configFile := flags.String("config", "", "read properties from `FILE` (Kafka's server.properties format)")
	var overrides overrideFlag
	flags.Var(&overrides, "c", "set a property, `key=value`; repeatable, wins over --config")
	flags.Var(&overrides, "override", "same as -c: `key=value` (the flag name of kafka-server-start.sh)")
	checkConfig := flags.Bool("check-config", false, "check the configuration, print the effective properties and exit")
	logLevel := flags.String("log-level", "info", "log `level`: debug, info, warn or error")
	logFormat := flags.String("log-format", "auto", "log `format`: console, json, or auto (console on a terminal, else JSON)")
	var createTopics listFlag
	flags.Var(&createTopics, "create-topic", "create `name:partitions[:key=value;...]` at start-up if it is missing; repeatable (kcompatd.create.topics)")
	debugAddr := flags.String("debug-addr", "", "serve Go's runtime profiles (net/http/pprof) on `ADDR`, a loopback host:port; off by default")
	flags.Usage = func() { usage(flags.Output(), flags) }
	// kafka-server-start.sh takes the properties file as an argument,
	// with --override flags before or after it.
	var rest []string
	for {
		if err := flags.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		if flags.NArg() == 0 {
			break
		}
		rest = append(rest, flags.Arg(0))
		args = flags.Args()[1:]
	}
	switch {
	case len(rest) == 1 && *configFile == "":
		*configFile = rest[0]
	case len(rest) > 0:
		fmt.Fprintf(os.Stderr, "kcompatd: unexpected arguments %q\n", rest)
		flags.Usage()
		return exitUsage
	}

	log, err := newLogger(os.Stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kcompatd: %v\n", err)
		return exitUsage
	}

	props, err := loadProperties(*configFile, overrides)
	if err != nil {
		log.Error().Err(err).Msg("cannot read configuration")
		return exitUsage
	}
	cfg, warnings, err := kcompatd.ParseConfig(props)
	for _, w := range warnings {
		ev := log.Warn()
		if w.Reason == kcompatd.WarnSingleNode {
			ev = log.Info() // expected in a stock server.properties
		}
		ev.Str("property", w.Property).Msg(w.Reason)
	}
	if err == nil && len(createTopics) > 0 {
		cfg.CreateTopics = strings.Join(append([]string{cfg.CreateTopics}, createTopics...), ",")
		err = cfg.Validate()
	}
	if err != nil {
		for _, e := range unjoin(err) {
			log.Error().Err(e).Msg("invalid configuration")
		}
		return exitUsage
	}
	if *checkConfig {
		for _, kv := range cfg.Properties() {
			fmt.Printf("%s=%s\n", kv[0], kv[1])
		}
		return exitOK
	}

	// Signals are caught before the broker starts, so that none is lost.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	if *debugAddr != "" {
		srv, err := startDebug(*debugAddr, log)
		if err != nil {
			log.Error().Err(err).Msg("cannot start debug listener")
			return exitUsage
		}
		defer srv.Close()
	}

	broker, err := kcompatd.New(cfg, log)
	if err != nil {
		log.Error().Err(err).Msg("cannot start broker")
		return exitFailed
	}
	select {
	case sig := <-sigs:
		log.Info().Str("signal", sig.String()).Msg("shutting down")
		go func() {
			sig := <-sigs
			log.Warn().Str("signal", sig.String()).Msg("second signal, exiting without a clean shutdown")
			os.Exit(exitFailed)
		}()
	case <-broker.Done():
		log.Error().Err(broker.Err()).Msg("broker stopped serving")
	}
	if err := broker.Close(); err != nil {
		return exitFailed
	}
	if broker.Err() != nil {
		return exitFailed
	}
	return exitOK
}

// usage prints the synopsis of the broker and of the offline
// subcommands to out, then the broker's flags if flags is not nil.
func usage(out io.Writer, flags *flag.FlagSet) {
	fmt.Fprintf(out, "usage: kcompatd [server.properties] [--config FILE] [-c key=value]... [--check-config]\n"+
		"       kcompatd dump-log [--print-data-log] [--offsets-decoder] [--transaction-log-decoder] [--json] FILE...\n"+
		"       kcompatd verify DIR\n"+
		"dump-log prints segment, index, snapshot and transaction index files as kafka-dump-log.sh does;\n"+
		"verify checks a data dir or one partition dir offline (exit 0 clean, 1 problems found).\n"+
		"Run a subcommand with --help for its flags. Broker flags:\n")
	if flags != nil {
		flags.PrintDefaults()
	}
}

// overrideFlag collects repeated -c key=value flags in order.
// listFlag collects a repeatable flag's values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

type overrideFlag [][2]string

func (o *overrideFlag) String() string { return "" }

func (o *overrideFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if k = strings.TrimSpace(k); !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	*o = append(*o, [2]string{k, v})
	return nil
}

// loadProperties reads the properties file, if any, and applies the
// overrides over it.
func loadProperties(file string, overrides overrideFlag) (map[string]string, error) {
	props := map[string]string{}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if props, err = kcompatd.ReadProperties(f); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	for _, kv := range overrides {
		props[kv[0]] = kv[1]
	}
	return props, nil
}

// newLogger logs human-readable lines to a terminal and JSON otherwise.
func newLogger(w *os.File, level, format string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || lvl == zerolog.NoLevel {
		return zerolog.Logger{}, fmt.Errorf("unknown log level %q", level)
	}
	var out io.Writer = w
	switch format {
	case "json":
	case "console":
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339Nano, NoColor: !isatty.IsTerminal(w.Fd())}
	case "auto":
		if isatty.IsTerminal(w.Fd()) {
			out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
		}
	default:
		return zerolog.Logger{}, fmt.Errorf("unknown log format %q", format)
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
