package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// target is the broker a step hits, as Metadata named it.
type target struct {
	id   int32
	host string
	port int32
	why  string // "leader of chaos-3", "controller", "random broker"
}

// undoFunc undoes an applied fault and describes what it did.
type undoFunc func(ctx context.Context) (string, error)

// applier applies faults: the built-in actions of a LocalCluster, or the user's hooks.
type applier interface {
	// apply applies fault (a name from FaultNames) to t and returns what undoes it (nil: it
	// needs no undo) and what it did.
	apply(ctx context.Context, fault string, t target) (undoFunc, string, error)
	// minHold is the shortest time the fault must stay applied to mean anything.
	minHold(fault string, id int32) time.Duration
}

// localApplier maps fault names to a LocalCluster's actions.
type localApplier struct{ c *LocalCluster }

func (l localApplier) apply(ctx context.Context, fault string, t target) (undoFunc, string, error) {
	return l.c.apply(ctx, faultAction(fault), t.id)
}

func (l localApplier) minHold(fault string, id int32) time.Duration {
	return l.c.minHold(faultAction(fault), id)
}

// faultAction is the action part of a fault name: kill, term, pause, expire, cut.
func faultAction(fault string) string {
	a, _, _ := strings.Cut(fault, "-")
	return a
}

// faultTarget is the target part: leader, controller or random. expire-zk-session and
// cut-broker hit the leader of a random partition.
func faultTarget(fault string) string {
	switch {
	case strings.HasSuffix(fault, "-controller"):
		return "controller"
	case strings.HasSuffix(fault, "-random"):
		return "random"
	}
	return "leader"
}

type injector struct {
	opts   *FaultOptions
	steps  []Step
	length time.Duration
	app    applier
	client *kgo.Client
	log    *logrus.Entry

	mu      sync.Mutex
	windows []FaultWindow
}

// NewInjector builds the injector for opts (after Validate, with Seed, Duration and Topic
// set): faults on the cluster StartLocalCluster started with these options, or on the
// scripts/cluster.sh cluster in opts.LocalCluster, or through opts.FaultCmd. bootstrap is
// how it asks the cluster (Metadata) which broker is a partition's leader or the controller.
// It logs the schedule. Without faults, Run does nothing.
func NewInjector(opts *FaultOptions, bootstrap []string, log *logrus.Entry) (Injector, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	in := &injector{opts: opts, length: opts.length(), log: log}
	if len(opts.Faults) == 0 {
		return in, nil
	}
	if opts.Topic == "" {
		return nil, errors.New("chaos: no topic to pick leaders from")
	}
	switch {
	case opts.local != nil:
		in.app = localApplier{opts.local}
	case opts.LocalCluster != "":
		c, err := OpenLocalCluster(opts.LocalCluster, log)
		if err != nil {
			return nil, err
		}
		in.app = localApplier{c}
	default:
		in.app = &hookApplier{faultCmd: opts.FaultCmd, healCmd: opts.HealCmd}
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		return nil, err
	}
	in.client = client
	in.steps = Schedule(opts.Seed, opts.Faults, opts.Interval, in.length, opts.Duration, 0)
	if opts.Duration <= 0 {
		in.steps = Schedule(opts.Seed, opts.Faults, opts.Interval, in.length, 0, 1000)
	}
	log.WithFields(logrus.Fields{"seed": opts.Seed, "faults": len(in.steps), "interval": opts.Interval, "length": in.length}).Info("fault schedule")
	for _, s := range in.steps {
		log.WithFields(logrus.Fields{"step": s.Seq, "at": s.At, "fault": s.Action, "pick": fmt.Sprintf("%#x", s.Pick)}).Info("planned fault")
	}
	return in, nil
}

// Steps is the schedule NewInjector planned (for printing).
func (in *injector) Steps() []Step { return in.steps }

func (in *injector) Windows() []FaultWindow {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]FaultWindow, len(in.windows))
	copy(out, in.windows)
	return out
}

func (in *injector) record(w FaultWindow) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.windows = append(in.windows, w)
	return len(in.windows) - 1
}

func (in *injector) update(i int, f func(*FaultWindow)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	f(&in.windows[i])
}

// Run applies the schedule's faults one at a time until ctx is done or the schedule ends;
// each is undone before the next starts, and before Run returns.
func (in *injector) Run(ctx context.Context) error {
	if in.client == nil {
		return nil
	}
	defer in.client.Close()
	start := time.Now()
	for _, s := range in.steps {
		if wait := time.Until(start.Add(s.At)); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		} else if ctx.Err() != nil {
			return nil
		}
		in.step(ctx, s)
	}
	return nil
}

// step applies one fault, holds it, and undoes it.
func (in *injector) step(ctx context.Context, s Step) {
	w := FaultWindow{Seq: s.Seq, Action: s.Action, Broker: -1, Start: time.Now()}
	t, err := in.pickTarget(ctx, s)
	if err != nil {
		w.End, w.Err, w.Detail = time.Now(), err.Error(), "no target"
		in.record(w)
		in.log.WithError(err).WithFields(logrus.Fields{"step": s.Seq, "fault": s.Action}).Warn("fault skipped")
		return
	}
	w.Broker = t.id
	log := in.log.WithFields(logrus.Fields{"step": s.Seq, "fault": s.Action, "broker": t.id, "target": t.why})
	w.Start = time.Now()
	i := in.record(w)
	undo, detail, err := in.app.apply(ctx, s.Action, t)
	detail = t.why + ": " + detail
	if err != nil {
		log.WithError(err).Warn("fault failed")
		in.update(i, func(w *FaultWindow) { w.Detail, w.Err = detail, err.Error() })
		if undo == nil {
			in.update(i, func(w *FaultWindow) { w.End = time.Now() })
			return
		}
	} else {
		in.update(i, func(w *FaultWindow) { w.Detail = detail })
		log.WithField("detail", detail).Info("fault applied")
	}
	hold := max(in.length, in.app.minHold(s.Action, t.id)) - time.Since(w.Start)
	if hold > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
	}
	if undo != nil {
		// Undo even after ctx is done: nothing may stay applied when Run returns.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		more, uerr := undo(uctx)
		cancel()
		in.update(i, func(w *FaultWindow) {
			if more != "" {
				w.Detail += "; " + more
			}
			if uerr != nil {
				w.Err = strings.TrimPrefix(w.Err+"; undo: "+uerr.Error(), "; ")
			}
		})
		if uerr != nil {
			log.WithError(uerr).Warn("undo failed")
		} else {
			log.WithField("detail", more).Info("fault undone")
		}
	}
	in.update(i, func(w *FaultWindow) { w.End = time.Now() })
}

// pickTarget asks the cluster (Metadata for the chaos topic) which broker the step hits.
func (in *injector) pickTarget(ctx context.Context, s Step) (target, error) {
	var resp *kmsg.MetadataResponse
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(in.opts.Topic)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err = req.RequestWith(rctx, in.client)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return target{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		return target{}, fmt.Errorf("metadata: %w", err)
	}
	return chooseTarget(resp, s)
}

// chooseTarget is the choice a step makes from a Metadata response: pure, so tests can
// check it.
func chooseTarget(resp *kmsg.MetadataResponse, s Step) (target, error) {
	brokers := map[int32]kmsg.MetadataResponseBroker{}
	var ids []int32
	for _, b := range resp.Brokers {
		brokers[b.NodeID] = b
		ids = append(ids, b.NodeID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	named := func(id int32, why string) (target, error) {
		b, ok := brokers[id]
		if !ok {
			return target{}, fmt.Errorf("%s is broker %d, which Metadata does not list", why, id)
		}
		return target{id: id, host: b.Host, port: b.Port, why: why}, nil
	}
	switch faultTarget(s.Action) {
	case "controller":
		if resp.ControllerID < 0 {
			return target{}, errors.New("no controller")
		}
		return named(resp.ControllerID, "controller")
	case "random":
		if len(ids) == 0 {
			return target{}, errors.New("no broker in Metadata")
		}
		return named(ids[pickOf(s.Pick, len(ids))], "random broker")
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return target{}, errors.New("the chaos topic has no partitions in Metadata")
	}
	t := resp.Topics[0]
	parts := append([]kmsg.MetadataResponseTopicPartition(nil), t.Partitions...)
	sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
	name := "?"
	if t.Topic != nil {
		name = *t.Topic
	}
	first := pickOf(s.Pick, len(parts))
	for k := range parts { // the drawn partition, or the next one that has a leader
		p := parts[(first+k)%len(parts)]
		if p.Leader >= 0 {
			return named(p.Leader, fmt.Sprintf("leader of %s-%d", name, p.Partition))
		}
	}
	return target{}, errors.New("no partition of the chaos topic has a leader")
}
