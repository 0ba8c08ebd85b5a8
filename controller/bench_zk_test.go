package controller

// BenchmarkController10kPartitions: controller work for 10,000 partitions (10 topics × 1,000,
// replication factor 3 over brokers 1-3, leaders spread evenly) on a real ZooKeeper, with
// in-process stub brokers that acknowledge every LeaderAndIsr/UpdateMetadata/StopReplica at
// once. The controller runs as broker 0 (hosting no replica). Reported, per run:
//   create_ms      first controller creates all 10,000 partition state znodes
//   failover_ms    a new controller loads the cluster (Startup processed)
//   shutdown_ms    ControlledShutdown of broker 3 (leads a third) until none remains led by it
//   death_ms       broker 2's session closes → its partitions have new leaders (BrokerChange processed)
// Run: go test ./controller/ -run '^$' -bench Controller10k -benchtime=1x

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

type ackingBroker struct{}

func (ackingBroker) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
func (ackingBroker) Close() error { return nil }

func stubDial(ctx context.Context, addr, clientID string) (requester, error) {
	return ackingBroker{}, nil
}

// probe runs fn on c's active loop; false if no term is running or it ended first.
func probe(c *Controller, fn func(*eventLoop)) bool {
	c.mu.Lock()
	loop := c.mu.loop
	c.mu.Unlock()
	if loop == nil {
		return false
	}
	ev := probeEvent{fn: fn, done: make(chan struct{})}
	loop.queue.put(ev)
	select {
	case <-ev.done:
		return true
	case <-loop.done:
		return false
	}
}

// waitProbe polls fn (on the loop) until it returns true.
func waitProbe(b testing.TB, c *Controller, timeout time.Duration, what string, fn func(*eventLoop) bool) {
	deadline := time.Now().Add(timeout)
	for {
		ok := false
		probe(c, func(l *eventLoop) { ok = fn(l) })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func BenchmarkController10kPartitions(b *testing.B) {
	const topics, perTopic = 10, 1000
	total := topics * perTopic
	srv := sharedZK(b)
	quiet := logrus.New()
	quiet.SetLevel(logrus.ErrorLevel)
	log := logrus.NewEntry(quiet)
	var createMs, failoverMs, shutdownMs, deathMs float64
	for n := 0; n < b.N; n++ {
		ctx := context.Background()
		connect := srv.Connect(fmt.Sprintf("/bench10k-%d", time.Now().UnixNano()))
		conn := func() *zkmeta.Client {
			c, err := zkmeta.Connect(ctx, connect, 10*time.Second, log)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		admin := conn()
		if err := admin.CreateTopLevelPaths(); err != nil {
			b.Fatal(err)
		}
		brokers := map[int32]*zkmeta.Client{}
		for id := int32(1); id <= 3; id++ {
			c := conn()
			if _, err := c.RegisterBroker(ctx, zkmeta.BrokerInfo{ID: id, Endpoints: []zkmeta.Endpoint{{ListenerName: "PLAINTEXT",
				Host: "127.0.0.1", Port: 9000 + id, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
				b.Fatal(err)
			}
			brokers[id] = c
		}
		for t := 0; t < topics; t++ {
			a := map[int32][]int32{}
			for p := 0; p < perTopic; p++ {
				s := int32((t*perTopic + p) % 3)
				a[int32(p)] = []int32{1 + s, 1 + (s+1)%3, 1 + (s+2)%3}
			}
			if err := admin.CreateTopic(fmt.Sprintf("t%d", t), zkmeta.TopicAssignment{TopicID: zkmeta.NewUUID(), Partitions: a}, nil); err != nil {
				b.Fatal(err)
			}
		}
		start := func() (*Controller, func()) {
			zc := conn()
			c := newController(Config{BrokerID: 0, DisableAutoLeaderRebalance: true, Log: log}, zc, stubDial)
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); c.Run(cctx) }()
			return c, func() { cancel(); <-done; zc.Close() }
		}
		b.ResetTimer()
		t0 := time.Now()
		c1, stop1 := start()
		waitProbe(b, c1, 5*time.Minute, "partition creation", func(l *eventLoop) bool {
			return len(l.ctx.partitionLeadership) == total
		})
		createMs += float64(time.Since(t0).Milliseconds())
		stop1()

		t0 = time.Now()
		c2, stop2 := start()
		waitProbe(b, c2, 5*time.Minute, "failover", func(l *eventLoop) bool { return len(l.ctx.partitionLeadership) == total })
		failoverMs += float64(time.Since(t0).Milliseconds())

		var led3 int
		probe(c2, func(l *eventLoop) { led3 = len(l.ctx.partitionsLedBy(3)) })
		req := kmsg.NewPtrControlledShutdownRequest()
		req.SetVersion(3)
		req.BrokerID, req.BrokerEpoch = 3, -1
		t0 = time.Now()
		resp := c2.ControlledShutdown(ctx, req)
		shutdownMs += float64(time.Since(t0).Milliseconds())
		if resp.ErrorCode != 0 || len(resp.PartitionsRemaining) != 0 || led3 < total/3-1 {
			b.Fatalf("controlled shutdown: error %d, %d remaining, broker 3 led %d", resp.ErrorCode, len(resp.PartitionsRemaining), led3)
		}

		var led2 int
		probe(c2, func(l *eventLoop) { led2 = len(l.ctx.partitionsLedBy(2)) })
		t0 = time.Now()
		brokers[2].Close()
		waitProbe(b, c2, 2*time.Minute, "broker 2 failure handled", func(l *eventLoop) bool {
			return !l.ctx.isRegistered(2) && len(l.ctx.partitionsLedBy(2)) == 0
		})
		deathMs += float64(time.Since(t0).Milliseconds())
		b.StopTimer()
		b.Logf("run %d: broker 3 led %d partitions, broker 2 led %d before dying", n, led3, led2)
		stop2()
		for _, c := range brokers {
			c.Close()
		}
		admin.DeleteRecursive("/")
		admin.Close()
		b.StartTimer()
	}
	b.ReportMetric(createMs/float64(b.N), "create_ms")
	b.ReportMetric(failoverMs/float64(b.N), "failover_ms")
	b.ReportMetric(shutdownMs/float64(b.N), "shutdown_ms")
	b.ReportMetric(deathMs/float64(b.N), "death_ms")
}
