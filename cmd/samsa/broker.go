package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
)

// runBroker is kafka-server-start.sh: load the config, start the broker (KafkaServer), and
// shut it down cleanly on SIGTERM or SIGINT.
//
//	samsa broker --config <file> [--override key=value]...
//	samsa broker <file> [--override key=value]...   (kafka-server-start.sh's form)
func runBroker(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	opts, fs, err := parseBrokerArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	cfg, warnings, err := config.Load(opts.configPath, opts.overrides)
	return startLoadedBroker("samsa broker", opts.configPath, cfg, warnings, err, stderr)
}

// startLoadedBroker runs a broker from a loaded configuration until SIGTERM or SIGINT: a
// configuration error (loadErr) exits 1 with every problem and warning on stderr; otherwise
// the warnings and the configuration are logged first, as KafkaConfig logs its values.
// cmd names the command and source where the configuration came from, for the messages.
func startLoadedBroker(cmd, source string, cfg *config.Config, warnings []string, loadErr error, stderr io.Writer) int {
	if loadErr != nil {
		for _, w := range warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", cmd, w)
		}
		fmt.Fprintf(stderr, "%s: invalid configuration in %s:\n%v\n", cmd, source, indent(loadErr.Error()))
		return 1
	}
	root, err := newRootLogger(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	log := logrus.NewEntry(root)
	for _, w := range warnings {
		log.WithField("component", "config").Warn(w)
	}
	logConfig(log.WithField("component", "config"), cfg)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serveBroker(ctx, cfg, log)
}

// serveBroker runs the broker until ctx ends (a signal) or the broker fails on its own, then
// shuts it down (Kafka.main: startup, awaitShutdown, the shutdown hook). Start returns once
// the broker serves; ctx bounds only start-up there, so a signal during start-up aborts it.
func serveBroker(ctx context.Context, cfg *config.Config, log *logrus.Entry) int {
	b, err := newBroker(cfg, log)
	if err != nil {
		log.WithError(err).Error("broker could not be created")
		return 1
	}
	if err := b.Start(ctx); err != nil {
		log.WithError(err).Error("broker failed to start")
		b.Shutdown()
		return 1
	}
	exit := 0
	select {
	case <-ctx.Done():
		log.Info("shutdown signal received; shutting down broker")
	case <-b.Done():
		log.WithError(b.Err()).Error("broker stopped on its own; shutting down")
		exit = 1
	}

	// A second signal while shutting down exits at once, as a second Ctrl-C should.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Shutdown()
	}()
	select {
	case <-done:
		log.Info("broker shut down")
		return exit
	case s := <-sig:
		log.WithField("signal", s.String()).Error("second signal during shutdown; exiting without waiting")
		return 1
	}
}

type brokerOpts struct {
	configPath string
	overrides  []string
}

func parseBrokerArgs(args []string, stderr io.Writer) (brokerOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa broker", stderr)
	var configPath optString
	var overrides multiFlag
	fs.Var(&configPath, "config", "broker config file: YAML with Kafka's property names, or a Java server.properties file")
	fs.Var(&overrides, "override", "key=value: a property that overrides the config file (repeatable)")
	// kafka-server-start.sh takes the file as its first argument: accept that form too.
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		configPath.Set(args[0])
		args = args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return brokerOpts{}, fs, err
	}
	if !configPath.set || configPath.v == "" {
		return brokerOpts{}, fs, usageErr("missing required argument \"[config]\"")
	}
	for _, o := range overrides {
		if !strings.Contains(o, "=") {
			return brokerOpts{}, fs, usageErr("invalid --override %q: expected key=value", o)
		}
	}
	return brokerOpts{configPath: configPath.v, overrides: overrides}, fs, nil
}

// newRootLogger builds the process's root logger from samsa.log.format and samsa.log.level.
func newRootLogger(cfg *config.Config, out io.Writer) (*logrus.Logger, error) {
	l := logrus.New()
	l.SetOutput(out)
	level, err := logrus.ParseLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("samsa.log.level: %w", err)
	}
	l.SetLevel(level)
	if cfg.LogFormat == "json" {
		l.SetFormatter(&logrus.JSONFormatter{})
	} else {
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "2006-01-02 15:04:05.000"})
	}
	return l, nil
}

// logConfig logs the effective configuration at debug level, as KafkaConfig logs "KafkaConfig
// values" at startup; passwords are hidden.
func logConfig(log *logrus.Entry, cfg *config.Config) {
	if !log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		return
	}
	keys := make([]string, 0, len(cfg.Props))
	for k := range cfg.Props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := cfg.Props[k]
		if d, ok := config.Lookup(k); ok && d.Sensitive() {
			v = "[hidden]"
		}
		fmt.Fprintf(&b, "\t%s = %s\n", k, v)
	}
	log.Debug("KafkaConfig values:\n" + b.String())
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
