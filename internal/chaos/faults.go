package chaos

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fault names, as --faults takes them. The suffix picks the target through the Kafka protocol
// (a Metadata request for the chaos topic), so the same names work against any cluster:
//
//	-leader      the leader of a random partition of the chaos topic
//	-controller  the active controller (Metadata's ControllerId)
//	-random      a random broker of the cluster
//
// The prefix is the action. With a local cluster (--local-cluster or --start-local) it is
// built in; with --fault-cmd the command does it and {action} tells it which one was drawn.
var faultDocs = []struct{ name, doc string }{
	{"kill-leader", "SIGKILL the leader (a crash: its ZooKeeper session lives on until it expires); restarted after the window"},
	{"kill-controller", "SIGKILL the controller; restarted after the window"},
	{"kill-random", "SIGKILL a random broker; restarted after the window"},
	{"term-leader", "SIGTERM the leader (controlled shutdown: leadership moves first); restarted after the window"},
	{"pause-leader", "SIGSTOP the leader for the window, then SIGCONT (a long GC pause or a frozen VM)"},
	{"pause-controller", "SIGSTOP the controller for the window, then SIGCONT"},
	{"expire-zk-session", "cut only the leader's ZooKeeper connection (through a local proxy) for longer than its zookeeper.session.timeout.ms: ZooKeeper expires the session, the broker re-registers when healed"},
	{"cut-broker", "drop every connection of the leader through the local proxies (clients, followers, the controller's requests, its own fetchers) for the window; its ZooKeeper session stays"},
}

// FaultNames lists the names --faults accepts.
func FaultNames() []string {
	out := make([]string, len(faultDocs))
	for i, f := range faultDocs {
		out[i] = f.name
	}
	return out
}

// FaultOptions are the fault flags of `samsa chaos`. The command wires them like this:
//
//	fo := chaos.RegisterFaultFlags(fs)
//	// parse; then
//	fo.Seed, fo.Duration, fo.Topic = seed, duration, topic
//	if err := fo.Validate(); err != nil { /* usage error, exit 2 */ }
//	if fo.StartLocal > 0 { // samsa starts the cluster itself, behind proxies
//		lc, err := chaos.StartLocalCluster(ctx, fo, log)
//		defer lc.Close()
//		bootstrap = lc.Bootstrap() // unless --bootstrap-server was given
//	}
//	// create the topic, then
//	inj, err := chaos.NewInjector(fo, bootstrap, log) // logs the schedule
//	go inj.Run(ctx) // returns after undoing what it applied
//
// The CI test needs no cluster of its own: `samsa chaos --start-local 3 --zookeeper
// 127.0.0.1:PORT/CHROOT` starts three brokers of the same binary (so a -tags samsa_mutations
// binary with SAMSA_MUTATIONS in its environment starts broken brokers), and only such a
// cluster can have expire-zk-session and cut-broker applied to it. The command registers them with
// RegisterFaultFlags, and after parsing sets Seed, Duration and Topic from its own flags (the
// same seed drives the workload and the schedule).
type FaultOptions struct {
	Faults   []string      // --faults: names from FaultNames
	Interval time.Duration // --interval: one fault every Interval, the first after one Interval
	Length   time.Duration // --fault-length: how long a fault stays applied (0: Interval/2)

	FaultCmd string // --fault-cmd: shell command applying a fault ({broker} {host} {port} {action})
	HealCmd  string // --heal-cmd: shell command undoing it (same placeholders)

	LocalCluster string   // --local-cluster: a scripts/cluster.sh directory (broker-N/server.yaml, broker-N/broker.pid)
	StartLocal   int      // --start-local N: start N brokers behind proxies (see local.go)
	ZooKeeper    string   // --zookeeper: ZooKeeper connect string for --start-local (host:port[/chroot])
	SamsaBinary  string   // --samsa-binary: the binary --start-local runs brokers with (default: this one)
	LocalProps   []string // --local-prop key=value: extra broker properties for --start-local

	// Set by the caller after parsing.
	Seed     int64
	Duration time.Duration
	Topic    string

	local *LocalCluster // set by StartLocalCluster; NewInjector's actions use its proxies
}

type listFlag struct{ p *[]string }

func (l listFlag) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l.p = append(*l.p, s)
		}
	}
	return nil
}

// RegisterFaultFlags registers the fault flags on fs and returns the options they fill.
func RegisterFaultFlags(fs *flag.FlagSet) *FaultOptions {
	o := &FaultOptions{}
	var names strings.Builder
	for _, f := range faultDocs {
		fmt.Fprintf(&names, "\n  %-18s %s", f.name, f.doc)
	}
	fs.Var(listFlag{&o.Faults}, "faults", "comma-separated faults to draw from (repeatable):"+names.String())
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "time between the starts of two faults")
	fs.DurationVar(&o.Length, "fault-length", 0, "how long a fault stays applied before it is undone (default: half the interval; expire-zk-session lasts at least the session timeout plus a margin)")
	fs.StringVar(&o.FaultCmd, "fault-cmd", "", "shell command that applies a fault to a broker of any cluster, e.g. 'ssh h{broker} sudo systemctl kill kafka'; {broker} {host} {port} {action} are filled in")
	fs.StringVar(&o.HealCmd, "heal-cmd", "", "shell command that undoes --fault-cmd after the window, e.g. 'ssh h{broker} sudo systemctl start kafka'")
	fs.StringVar(&o.LocalCluster, "local-cluster", "", "a scripts/cluster.sh cluster directory (broker-N/server.yaml, broker-N/broker.pid): faults are applied by signals to its brokers; with --start-local, where that cluster is written")
	fs.IntVar(&o.StartLocal, "start-local", 0, "start N local brokers (this binary) behind TCP proxies for their listeners and ZooKeeper connections, so that every fault, including expire-zk-session and cut-broker, can be applied; stopped at the end")
	fs.StringVar(&o.ZooKeeper, "zookeeper", "", "ZooKeeper connect string for --start-local, e.g. 127.0.0.1:2181/chaos")
	fs.StringVar(&o.SamsaBinary, "samsa-binary", "", "the samsa binary --start-local runs brokers with (default: this one)")
	fs.Var(listFlag{&o.LocalProps}, "local-prop", "extra broker property key=value for --start-local (repeatable)")
	return o
}

// Validate checks the options before anything starts; the errors are usage errors.
func (o *FaultOptions) Validate() error {
	for _, f := range o.Faults {
		if !slices.Contains(FaultNames(), f) {
			return fmt.Errorf("unknown fault %q (known: %s)", f, strings.Join(FaultNames(), ", "))
		}
	}
	if len(o.Faults) > 0 && o.Interval <= 0 {
		return errors.New("--interval must be positive")
	}
	if o.Length < 0 {
		return errors.New("--fault-length must not be negative")
	}
	if o.StartLocal < 0 {
		return errors.New("--start-local must not be negative")
	}
	if o.StartLocal > 0 && o.ZooKeeper == "" {
		return errors.New("--start-local needs --zookeeper")
	}
	if o.FaultCmd != "" && (o.StartLocal > 0 || o.LocalCluster != "") {
		return errors.New("--fault-cmd cannot be combined with --local-cluster or --start-local")
	}
	if o.HealCmd != "" && o.FaultCmd == "" {
		return errors.New("--heal-cmd needs --fault-cmd")
	}
	if len(o.Faults) > 0 && o.FaultCmd == "" && o.StartLocal == 0 && o.LocalCluster == "" {
		return errors.New("--faults needs a way to apply them: --start-local, --local-cluster or --fault-cmd")
	}
	if o.StartLocal == 0 && o.LocalCluster != "" {
		for _, f := range o.Faults {
			if f == "expire-zk-session" || f == "cut-broker" {
				return fmt.Errorf("%s needs the proxies of --start-local (a scripts/cluster.sh cluster connects directly)", f)
			}
		}
	}
	for _, p := range o.LocalProps {
		if !strings.Contains(p, "=") {
			return fmt.Errorf("--local-prop %q: expected key=value", p)
		}
	}
	return nil
}

// length is how long fault windows last.
func (o *FaultOptions) length() time.Duration {
	if o.Length > 0 {
		return o.Length
	}
	return o.Interval / 2
}
