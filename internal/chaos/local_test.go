package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// samsaBinary builds cmd/samsa once per test binary.
func samsaBinary(t *testing.T) string {
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "samsa-chaos-bin-"); buildErr == nil {
			buildErr = BuildSamsa(context.Background(), filepath.Join(binDir, "samsa"))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "samsa")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// startLocal builds samsa and starts a 3-broker --start-local cluster with a topic "t"
// (3 partitions, RF 3, min.insync.replicas 2).
func startLocal(t *testing.T) (*FaultOptions, *LocalCluster, *kgo.Client) {
	if testing.Short() {
		t.Skip("starts a 3-broker cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := samsaBinary(t)
	zk := zktest.Start(t)
	l := logrus.New()
	l.SetOutput(t.Output())
	o := &FaultOptions{StartLocal: 3, ZooKeeper: zk.Connect("chaos-local"), SamsaBinary: bin, Topic: "t",
		LocalProps: []string{"offsets.topic.replication.factor=3"}}
	if d := os.Getenv("SAMSA_CHAOS_TEST_DIR"); d != "" { // keep the brokers' logs
		o.LocalCluster = filepath.Join(d, t.Name())
		os.RemoveAll(o.LocalCluster)
	}
	lc, err := StartLocalCluster(ctx, o, logrus.NewEntry(l))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(lc.Bootstrap()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("t"), kgo.RecordRetries(1000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	two := "2"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &two}, "t"); err != nil {
		t.Fatal(err)
	}
	produce(t, cl)
	return o, lc, cl
}

// produce writes one record with acks=all and waits for the ack (the cluster is serving).
func produce(t *testing.T, cl *kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// TestLocalActions applies each built-in action to broker 2 of a --start-local cluster, checks
// that it did what it says, undoes it, and checks that the cluster serves acks=all again.
func TestLocalActions(t *testing.T) {
	o, lc, cl := startLocal(t)
	ctx := context.Background()
	b := lc.brokers[2]
	app := localApplier{lc}
	tg := target{id: 2, why: "broker 2"}

	t.Run("kill", func(t *testing.T) {
		pid, _ := lc.pid(b)
		old, _ := lc.owner(2)
		undo, detail, err := app.apply(ctx, "kill-random", tg)
		if err != nil || !strings.Contains(detail, "SIGKILL") {
			t.Fatalf("%v %q", err, detail)
		}
		if isBroker(pid, b.config) {
			t.Fatal("still running after SIGKILL")
		}
		if owner, _ := lc.owner(2); owner != old {
			t.Fatalf("a crash closed the session (owner %#x, was %#x): it must be left to expire", owner, old)
		}
		more, err := undo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if owner, _ := lc.owner(2); owner == old || owner == 0 {
			t.Fatalf("restarted (%s) but not registered in a new session", more)
		}
		produce(t, cl)
	})
	t.Run("term", func(t *testing.T) {
		pid, _ := lc.pid(b)
		undo, detail, err := app.apply(ctx, "term-leader", tg)
		if err != nil || !strings.Contains(detail, "SIGTERM") || strings.Contains(detail, "still running") {
			t.Fatalf("%v %q", err, detail)
		}
		if isBroker(pid, b.config) {
			t.Fatal("still running after the controlled shutdown")
		}
		if owner, _ := lc.owner(2); owner != 0 {
			t.Fatalf("a controlled shutdown left /brokers/ids/2 (session %#x)", owner)
		}
		if _, err := undo(ctx); err != nil {
			t.Fatal(err)
		}
		produce(t, cl)
	})
	t.Run("pause", func(t *testing.T) {
		pid, _ := lc.pid(b)
		undo, _, err := app.apply(ctx, "pause-leader", tg)
		if err != nil {
			t.Fatal(err)
		}
		s := procState(pid)
		if _, err := undo(ctx); err != nil {
			t.Fatal(err)
		}
		if s != 'T' {
			t.Fatalf("state %c after SIGSTOP", s)
		}
		time.Sleep(100 * time.Millisecond) // SIGCONT is asynchronous too
		if s := procState(pid); s == 'T' {
			t.Fatal("still stopped after SIGCONT")
		}
		produce(t, cl)
	})
	t.Run("expire", func(t *testing.T) {
		pid, _ := lc.pid(b)
		old, _ := lc.owner(2)
		undo, detail, err := app.apply(ctx, "expire-zk-session", tg)
		if err != nil || !strings.Contains(detail, "expired") {
			t.Fatalf("%v %q", err, detail)
		}
		if _, err := undo(ctx); err != nil {
			t.Fatal(err)
		}
		if now, _ := lc.pid(b); now != pid {
			t.Fatalf("the broker process changed (%d -> %d): the session must expire under a live broker", pid, now)
		}
		if owner, _ := lc.owner(2); owner == old || owner == 0 {
			t.Fatal("not registered again in a new session")
		}
		produce(t, cl)
	})
	// The same directory opened as a scripts/cluster.sh cluster (no proxies): a broker killed
	// through it is started again from what /proc said about it.
	t.Run("cluster.sh dir", func(t *testing.T) {
		l := logrus.New()
		l.SetOutput(t.Output())
		sh, err := OpenLocalCluster(lc.Dir(), logrus.NewEntry(l))
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close()
		if got := len(sh.Bootstrap()); got != 3 || sh.brokers[3].sessionTimeout != 6*time.Second {
			t.Fatalf("opened %d brokers %v, session timeout %v", got, sh.Bootstrap(), sh.brokers[3].sessionTimeout)
		}
		pid, _ := sh.pid(sh.brokers[3])
		want, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		undo, _, err := localApplier{sh}.apply(ctx, "kill-controller", target{id: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := undo(ctx); err != nil {
			t.Fatal(err)
		}
		now, err := sh.pid(sh.brokers[3])
		if err != nil || now == pid {
			t.Fatalf("pid %d -> %d, %v", pid, now, err)
		}
		got, _ := os.ReadFile("/proc/" + strconv.Itoa(now) + "/cmdline")
		if string(got) != string(want) {
			t.Fatalf("restarted as %q, was %q", got, want)
		}
		produce(t, cl)
	})
	t.Run("cut", func(t *testing.T) {
		pid, _ := lc.pid(b)
		undo, _, err := app.apply(ctx, "cut-broker", tg)
		if err != nil {
			t.Fatal(err)
		}
		// Nothing reaches broker 2, and broker 2 holds no connection to another broker.
		direct, err := kgo.NewClient(kgo.SeedBrokers(b.listen.Addr()), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Close()
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = kadm.NewClient(direct).BrokerMetadata(rctx)
		cancel()
		if err == nil {
			t.Fatal("a client reached the cut broker")
		}
		owned := ownedBy(pid)
		for _, o := range lc.brokers {
			if o == b {
				continue
			}
			o.listen.mu.Lock()
			for pc := range o.listen.conns {
				if owned(pc.client) {
					t.Errorf("broker 2 still connected to broker %d", o.id)
				}
			}
			o.listen.mu.Unlock()
		}
		if _, err := undo(ctx); err != nil {
			t.Fatal(err)
		}
		rctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := kadm.NewClient(direct).BrokerMetadata(rctx); err != nil {
			t.Fatalf("after healing: %v", err)
		}
		produce(t, cl)
	})
	// Hooks: the user's commands apply and undo the fault; here they signal the broker whose
	// id they are given, through its pid file.
	t.Run("hooks", func(t *testing.T) {
		pidFile := filepath.Join(lc.Dir(), "broker-{broker}", "broker.pid")
		hookLog := filepath.Join(t.TempDir(), "hook.log")
		ho := &FaultOptions{Faults: []string{"pause-controller"}, Interval: time.Second, Length: time.Second, Duration: 2500 * time.Millisecond,
			Topic: "t", FaultCmd: "kill -STOP $(cat " + pidFile + ") && echo {action} {broker} {host} {port} >> " + hookLog,
			HealCmd: "kill -CONT $(cat " + pidFile + ") && echo healed {broker} >> " + hookLog}
		l := logrus.New()
		l.SetOutput(t.Output())
		inj, err := NewInjector(ho, lc.Bootstrap(), logrus.NewEntry(l))
		if err != nil {
			t.Fatal(err)
		}
		if err := inj.Run(ctx); err != nil {
			t.Fatal(err)
		}
		ws := inj.Windows()
		if len(ws) != 1 || ws[0].Err != "" || ws[0].End.IsZero() {
			t.Fatalf("windows %+v", ws)
		}
		b := lc.brokers[ws[0].Broker]
		got, _ := os.ReadFile(hookLog)
		want := fmt.Sprintf("pause-controller %d 127.0.0.1 %s\nhealed %d\n", b.id, b.listen.Addr()[len("127.0.0.1:"):], b.id)
		if string(got) != want {
			t.Fatalf("hooks wrote %q, want %q", got, want)
		}
		if pid, _ := lc.pid(b); procState(pid) == 'T' {
			t.Fatal("still stopped after the heal command")
		}
	})
	// A short schedule: every planned fault becomes a closed window, and the cluster serves
	// afterwards.
	t.Run("injector", func(t *testing.T) {
		o.Faults, o.Interval, o.Length, o.Duration, o.Seed = []string{"pause-leader", "pause-controller", "kill-random"}, 2*time.Second, time.Second, 7*time.Second, 11
		l := logrus.New()
		l.SetOutput(t.Output())
		inj, err := NewInjector(o, o.local.Bootstrap(), logrus.NewEntry(l))
		if err != nil {
			t.Fatal(err)
		}
		planned := inj.(*injector).Steps()
		if err := inj.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ws := inj.Windows()
		if len(ws) != len(planned) || len(ws) != 3 {
			t.Fatalf("%d windows for %d planned faults: %+v", len(ws), len(planned), ws)
		}
		for i, w := range ws {
			if w.Seq != planned[i].Seq || w.Action != planned[i].Action || w.Broker < 1 || w.End.IsZero() || w.Err != "" || w.End.Before(w.Start) {
				t.Errorf("window %+v for step %v", w, planned[i])
			}
		}
		produce(t, cl)

		// Cancelled in the middle of a fault: Run undoes it before it returns.
		o.Faults, o.Interval, o.Length, o.Duration = []string{"pause-leader"}, time.Second, time.Minute, 2*time.Minute
		inj, err = NewInjector(o, o.local.Bootstrap(), logrus.NewEntry(l))
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- inj.Run(rctx) }()
		for {
			if ws := inj.Windows(); len(ws) > 0 && ws[0].Detail != "" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ws = inj.Windows()
		if len(ws) != 1 || ws[0].End.IsZero() || ws[0].End.Sub(ws[0].Start) > 30*time.Second {
			t.Fatalf("windows after cancel: %+v", ws)
		}
		for _, b := range lc.brokers {
			if pid, err := lc.pid(b); err != nil || procState(pid) == 'T' {
				t.Fatalf("broker %d after Run returned: %v, state %c", b.id, err, procState(pid))
			}
		}
		produce(t, cl)
	})
}
