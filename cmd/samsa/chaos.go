package main

// chaos runs a checked workload against any Kafka-protocol cluster while faults are applied
// to it on a seeded schedule (internal/chaos): idempotent and transactional acks=all
// producers, a read_committed consumer group, a final read of every partition, then a checker
// that proves or refutes the cluster's guarantees from what the clients saw. It prints a
// verdict line (PASS or FAIL: n violations), the counts, the fault windows and every
// violation; --report writes the same as one HTML file with a timeline. Exit status: 0 PASS,
// 1 FAIL (or the run could not be carried out), 2 usage error.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/chaos"
)

func init() {
	commands["chaos"] = command{runChaos, "run a checked workload while faults hit the cluster; PASS or the violations, an HTML report"}
}

const chaosUsage = `usage: samsa chaos (--bootstrap-server HOST:PORT[,...] | --start-local N --zookeeper ZK) [flags]

Examples:
  samsa chaos --start-local 3 --zookeeper 127.0.0.1:2181/chaos \
      --faults kill-leader,pause-leader,expire-zk-session --interval 10s --duration 5m --report chaos.html
  samsa chaos --bootstrap-server 127.0.0.1:9092 --local-cluster .cluster --faults kill-leader,term-leader
  samsa chaos --bootstrap-server kafka1:9092 --faults kill-random \
      --fault-cmd 'ssh kafka{broker} sudo systemctl kill -s KILL kafka' \
      --heal-cmd 'ssh kafka{broker} sudo systemctl start kafka'

Flags:`

type chaosOpts struct {
	bootstrap     string
	topic         string
	partitions    int
	producers     int
	transactional int
	consumers     int
	rate          int
	duration      time.Duration
	drain         time.Duration
	seed          int64
	report        string
	history       string
	commandConfig optString
	verbose       bool
	faults        *chaos.FaultOptions
}

func parseChaosArgs(args []string, stderr io.Writer) (*chaosOpts, error) {
	fs := newFlagSet("chaos", stderr)
	o := &chaosOpts{}
	fs.StringVar(&o.bootstrap, "bootstrap-server", "", "the cluster's brokers, host:port[,host:port...] (not with --start-local)")
	fs.StringVar(&o.topic, "topic", "samsa-chaos", "topic of the workload; created when missing (replication factor 3, min.insync.replicas 2)")
	fs.IntVar(&o.partitions, "partitions", 6, "partitions of the topic when it is created")
	fs.IntVar(&o.producers, "producers", 2, "idempotent acks=all producers")
	fs.IntVar(&o.transactional, "transactional", 1, "transactional producers (transactions of 1-8 records, a quarter aborted)")
	fs.IntVar(&o.consumers, "consumers", 2, "members of the read_committed consumer group")
	fs.IntVar(&o.rate, "rate", 100, "records per second per producer")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long the workload and the faults run")
	fs.DurationVar(&o.drain, "drain-timeout", time.Minute, "bound of each phase after the faults (in-flight records, end markers, consumers catching up, final read)")
	fs.Int64Var(&o.seed, "seed", 0, "seed of the fault schedule and of the workload's choices (0: from the clock; printed)")
	fs.StringVar(&o.report, "report", "", "write an HTML report (timeline, faults, violations) to this file")
	fs.StringVar(&o.history, "history", "", "write everything the clients saw (acknowledgements, errors, transactions, consumed records, assignments, committed offsets, faults, the final read) to this file as JSON")
	fs.Var(&o.commandConfig, "command-config", "client properties file (security.protocol, ssl.*, sasl.*) for every client of the workload")
	fs.BoolVar(&o.verbose, "verbose", false, "log at debug level")
	o.faults = chaos.RegisterFaultFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, chaosUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	switch {
	case o.bootstrap == "" && o.faults.StartLocal == 0:
		return nil, usageErr("--bootstrap-server or --start-local is required")
	case o.bootstrap != "" && o.faults.StartLocal > 0:
		return nil, usageErr("--bootstrap-server cannot be combined with --start-local (it starts its own brokers)")
	case o.partitions < 1 || o.partitions > 10000:
		return nil, usageErr("--partitions must be between 1 and 10000")
	case o.producers < 0 || o.transactional < 0 || o.producers+o.transactional == 0:
		return nil, usageErr("--producers and --transactional must not be negative, and one must be positive")
	case o.consumers < 1:
		return nil, usageErr("--consumers must be positive")
	case o.rate < 1:
		return nil, usageErr("--rate must be positive")
	case o.duration <= 0 || o.drain <= 0:
		return nil, usageErr("--duration and --drain-timeout must be positive")
	case o.topic == "":
		return nil, usageErr("--topic must not be empty")
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() & (1<<53 - 1)
	}
	o.faults.Seed, o.faults.Duration, o.faults.Topic = o.seed, o.duration, o.topic
	if err := o.faults.Validate(); err != nil {
		return nil, usageErr("%v", err)
	}
	return o, nil
}

func runChaos(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, err := parseChaosArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "samsa chaos: %v\n", strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	}
	sec, ok := adminClientSecurity("chaos", "command-config", o.commandConfig, stderr)
	if !ok {
		return 2
	}
	root := logrus.New()
	root.SetOutput(stderr)
	root.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05.000"})
	if o.verbose {
		root.SetLevel(logrus.DebugLevel)
	}
	log := logrus.NewEntry(root).WithField("tool", "chaos")
	log.WithField("seed", o.seed).Infof("replay this run's faults and choices with --seed %d", o.seed)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bootstrap := splitList(o.bootstrap)
	if o.faults.StartLocal > 0 {
		lc, err := chaos.StartLocalCluster(ctx, o.faults, log)
		if err != nil {
			fmt.Fprintf(stderr, "samsa chaos: start the local cluster: %v\n", err)
			return 1
		}
		defer lc.Close()
		bootstrap = lc.Bootstrap()
	}
	inj, err := chaos.NewInjector(o.faults, bootstrap, log)
	if err != nil {
		fmt.Fprintf(stderr, "samsa chaos: %v\n", err)
		return 2
	}
	h, err := chaos.Run(ctx, chaos.Config{
		Bootstrap: bootstrap, Topic: o.topic, Partitions: int32(o.partitions),
		Producers: o.producers, Transactional: o.transactional, Consumers: o.consumers,
		Rate: o.rate, Duration: o.duration, DrainTimeout: o.drain, Seed: o.seed,
		Log: log, ClientOpts: sec,
	}, inj)
	if err != nil && h.End.IsZero() {
		fmt.Fprintf(stderr, "samsa chaos: %v\n", err)
		return 1
	}
	if err != nil {
		log.WithError(err).Warn("fault injector ended with an error")
	}
	res := chaos.Check(h)
	chaos.WriteText(stdout, h, res)
	if o.report != "" {
		if err := writeChaosReport(o.report, h, res); err != nil {
			fmt.Fprintf(stderr, "samsa chaos: --report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "report: %s\n", o.report)
	}
	if o.history != "" {
		if err := writeChaosHistory(o.history, h); err != nil {
			fmt.Fprintf(stderr, "samsa chaos: --history: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "history: %s\n", o.history)
	}
	if !res.Pass() {
		return 1
	}
	return 0
}

func writeChaosReport(path string, h *chaos.History, res chaos.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := chaos.WriteHTML(f, h, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeChaosHistory(path string, h *chaos.History) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := h.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
