package controller

// Tests against a real ZooKeeper (internal/zktest): election, failover with epoch + 1,
// fencing of a deposed controller, and the full path topic znode → partition state znodes →
// LeaderAndIsr/UpdateMetadata over the Kafka protocol to (fake) brokers.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kafkatest"
	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

var (
	zkOnce   sync.Once
	zkServer *zktest.Server
	zkStop   func()
	zkErr    error
)

// sharedZK starts one ZooKeeper for the package on first use; TestMain stops it.
func sharedZK(t testing.TB) *zktest.Server {
	t.Helper()
	zkOnce.Do(func() { zkServer, zkStop, zkErr = zktest.Shared() })
	if zkErr != nil {
		t.Fatalf("zktest: %v", zkErr)
	}
	return zkServer
}

func TestMain(m *testing.M) {
	code := m.Run()
	if zkStop != nil {
		zkStop()
	}
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leaked goroutines:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits for goroutines running controller or kclient code to end and
// returns the stacks of those that do not.
func leakedGoroutines(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "samsa/controller.TestMain") {
				continue
			}
			if strings.Contains(g, "samsa-kafka/samsa/controller.") || strings.Contains(g, "samsa-kafka/samsa/internal/kclient.") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// uniqueChroot gives every test run its own chroot (go test -count=N reuses the server).
func uniqueChroot(name string) string { return fmt.Sprintf("/%s-%d", name, time.Now().UnixNano()) }

func connectZK(t *testing.T, connect string) *zkmeta.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zkmeta.Connect(ctx, connect, 4*time.Second, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func waitFor(t *testing.T, timeout time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runController runs c until the test ends.
func runController(t *testing.T, c *Controller) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("controller Run did not return")
		}
	})
}

func TestElectionFailoverAndFencing(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("election"))
	zk1, zk2 := connectZK(t, connect), connectZK(t, connect)
	if err := zk1.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	c1 := newController(Config{BrokerID: 1, Log: testLog(t)}, zk1, kclientDial)
	c2 := newController(Config{BrokerID: 2, Log: testLog(t)}, zk2, kclientDial)
	runController(t, c1)
	runController(t, c2)

	waitFor(t, 10*time.Second, "one active controller", func() bool { return c1.IsActive() != c2.IsActive() })
	winner, loser, winnerZK, loserZK := c1, c2, zk1, zk2
	if c2.IsActive() {
		winner, loser, winnerZK, loserZK = c2, c1, zk2, zk1
	}
	epoch, epochZkVersion, err := loserZK.GetControllerEpoch()
	if err != nil {
		t.Fatal(err)
	}
	if epoch != 1 || winner.Epoch() != 1 {
		t.Fatalf("first controller epoch: znode %d, controller %d; want 1", epoch, winner.Epoch())
	}
	waitFor(t, 5*time.Second, "/feature written at failover", func() bool {
		data, _, err := loserZK.Get(zkmeta.FeaturePath)
		return err == nil && strings.Contains(string(data), `"status":1`)
	})
	time.Sleep(200 * time.Millisecond)
	if loser.IsActive() || !winner.IsActive() {
		t.Fatal("controller changed without a failure")
	}

	// The winner's session ends: the other broker takes over with epoch 2.
	winnerZK.Close()
	waitFor(t, 10*time.Second, "failover to the other broker", func() bool { return loser.IsActive() && !winner.IsActive() })
	if loser.Epoch() != 2 {
		t.Fatalf("new controller epoch = %d, want 2", loser.Epoch())
	}
	if e, _, _ := loserZK.GetControllerEpoch(); e != 2 {
		t.Fatalf("/controller_epoch = %d, want 2", e)
	}
	if id, _ := loserZK.GetControllerID(); id != winnerIDOf(loser) {
		t.Fatalf("/controller = %d, want %d", id, winnerIDOf(loser))
	}

	// A deposed controller (epoch 1, paused while the other took over) wakes up and processes
	// a topic change: its writes are refused and it resigns; nothing is written under epoch 1.
	staleZK := connectZK(t, connect)
	if err := staleZK.CreateTopic("fenced", zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	staleCfg := Config{BrokerID: winnerIDOf(winner), Log: testLog(t)}
	staleCfg.setDefaults()
	var out strings.Builder
	stale := newEventLoop(staleCfg, staleZK, &fakeChannels{out: &out}, 1, epochZkVersion, context.Background())
	stale.ctx.liveBrokers[1] = zkmeta.BrokerInfo{ID: 1, Epoch: 1}
	err = stale.process(topicChangeEvent{})
	if !errors.Is(err, errResign) || !errors.Is(err, zkmeta.ErrControllerMoved) {
		t.Fatalf("deposed controller's topic change: err = %v, want resign on ErrControllerMoved", err)
	}
	if _, err := staleZK.UpdatePartitionState("fenced", 0, zkmeta.PartitionState{}, 0, epochZkVersion); !errors.Is(err, zkmeta.ErrControllerMoved) {
		t.Fatalf("write with the old epoch zkVersion: err = %v, want ErrControllerMoved", err)
	}
	if st, err := staleZK.GetPartitionState("fenced", 0); err == nil && st.ControllerEpoch < 2 {
		t.Fatalf("partition state written under epoch %d", st.ControllerEpoch)
	}

	// An operator deletes /controller (kafka's "force re-election"): the controller resigns and
	// the election runs again, with epoch 3.
	if err := staleZK.Delete(zkmeta.ControllerPath, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "re-election with epoch 3", func() bool {
		e, _, _ := staleZK.GetControllerEpoch()
		return e == 3 && loser.IsActive() && loser.Epoch() == 3
	})
}

func winnerIDOf(c *Controller) int32 { return c.cfg.BrokerID }

// ---- end to end with fake brokers ----

// recordingBroker is a tiny Kafka-protocol server that answers ApiVersions (Kafka 3.7's
// controller API ranges), LeaderAndIsr, UpdateMetadata and StopReplica, recording requests.
type recordingBroker struct {
	srv  *kafkatest.Server
	mu   sync.Mutex
	reqs []kmsg.Request
}

func newRecordingBroker(t *testing.T) *recordingBroker {
	b := &recordingBroker{}
	b.srv = kafkatest.NewServer(t, b.answer)
	return b
}

func (b *recordingBroker) port() int32 { return b.srv.Port() }

// answer records the controller's requests and acknowledges each; anything else gets no
// answer.
func (b *recordingBroker) answer(key, version int16, req kmsg.Request) kmsg.Response {
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		av := kmsg.NewPtrApiVersionsResponse()
		for _, k := range [][3]int16{{18, 0, 3}, {4, 0, 7}, {5, 0, 4}, {6, 0, 8}} {
			av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k[0], MinVersion: k[1], MaxVersion: k[2]})
		}
		resp = av
	case *kmsg.LeaderAndISRRequest:
		resp = r.ResponseKind()
	case *kmsg.UpdateMetadataRequest:
		resp = r.ResponseKind()
	case *kmsg.StopReplicaRequest:
		resp = r.ResponseKind()
	default:
		return nil
	}
	b.mu.Lock()
	b.reqs = append(b.reqs, req)
	b.mu.Unlock()
	resp.SetVersion(version)
	return resp
}

// leaderAndIsr returns the latest state of tp this broker was sent in a LeaderAndIsr.
func (b *recordingBroker) leaderAndIsr(topic string, p int32) (st kmsg.LeaderAndISRRequestTopicPartition, req *kmsg.LeaderAndISRRequest, topicID [16]byte, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.reqs {
		l, isL := r.(*kmsg.LeaderAndISRRequest)
		if !isL {
			continue
		}
		for _, ts := range l.TopicStates {
			for _, ps := range ts.PartitionStates {
				if ts.Topic == topic && ps.Partition == p {
					st, req, topicID, ok = ps, l, ts.TopicID, true
				}
			}
		}
	}
	return
}

func (b *recordingBroker) metadataLeader(topic string, p int32) (int32, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	leader, ok := int32(-1), false
	for _, r := range b.reqs {
		u, isU := r.(*kmsg.UpdateMetadataRequest)
		if !isU {
			continue
		}
		for _, ts := range u.TopicStates {
			for _, ps := range ts.PartitionStates {
				if ts.Topic == topic && ps.Partition == p {
					leader, ok = ps.Leader, true
				}
			}
		}
	}
	return leader, ok
}

func TestControllerNewTopicAndBrokerFailureEndToEnd(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("e2e"))
	zk1, zk2 := connectZK(t, connect), connectZK(t, connect)
	if err := zk1.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	b1, b2 := newRecordingBroker(t), newRecordingBroker(t)
	ctx := context.Background()
	epochs := map[int32]int64{}
	for i, reg := range []struct {
		zk *zkmeta.Client
		b  *recordingBroker
	}{{zk1, b1}, {zk2, b2}} {
		id := int32(i + 1)
		e, err := reg.zk.RegisterBroker(ctx, zkmeta.BrokerInfo{ID: id, Endpoints: []zkmeta.Endpoint{{ListenerName: "PLAINTEXT",
			Host: "127.0.0.1", Port: reg.b.port(), SecurityProtocol: "PLAINTEXT"}}})
		if err != nil {
			t.Fatal(err)
		}
		epochs[id] = e
	}
	// Broker 1 runs the controller (only one candidate, so it wins).
	c := newController(Config{BrokerID: 1, Log: testLog(t), RetryBackoff: 50 * time.Millisecond}, zk1, kclientDial)
	runController(t, c)
	waitFor(t, 10*time.Second, "controller active", c.IsActive)

	// The broker handling CreateTopics computes the assignment and writes the topic znode.
	assignment, err := AssignReplicasToBrokers([]BrokerMetadata{{ID: 1}, {ID: 2}}, 2, 2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	admin := connectZK(t, connect)
	if err := admin.CreateTopic("orders", zkmeta.TopicAssignment{Partitions: assignment}, nil); err != nil {
		t.Fatal(err)
	}
	topic, _, err := admin.GetTopic("orders")
	if err != nil {
		t.Fatal(err)
	}

	for p, replicas := range assignment {
		for _, b := range []*recordingBroker{b1, b2} {
			waitFor(t, 10*time.Second, "LeaderAndIsr for the new partition", func() bool {
				_, _, _, ok := b.leaderAndIsr("orders", p)
				return ok
			})
			st, req, id, _ := b.leaderAndIsr("orders", p)
			if st.Leader != replicas[0] || st.LeaderEpoch != 0 || !slices.Equal(st.ISR, replicas) || !st.IsNew ||
				!slices.Equal(st.Replicas, replicas) || id != topic.TopicID {
				t.Fatalf("LeaderAndIsr orders-%d = %+v (topic id %x), want leader %d isr %v epoch 0 new, topic id %x",
					p, st, id, replicas[0], replicas, topic.TopicID)
			}
			if req.ControllerEpoch != c.Epoch() || req.ControllerID != 1 || req.Version != 7 {
				t.Fatalf("LeaderAndIsr header: controller %d epoch %d v%d", req.ControllerID, req.ControllerEpoch, req.Version)
			}
			wantEpoch := epochs[1]
			if b == b2 {
				wantEpoch = epochs[2]
			}
			if req.BrokerEpoch != wantEpoch {
				t.Fatalf("broker epoch in LeaderAndIsr = %d, want %d (czxid)", req.BrokerEpoch, wantEpoch)
			}
			waitFor(t, 5*time.Second, "UpdateMetadata for the new partition", func() bool {
				l, ok := b.metadataLeader("orders", p)
				return ok && l == replicas[0]
			})
		}
		st, err := admin.GetPartitionState("orders", p)
		if err != nil || st.Leader != replicas[0] || !slices.Equal(st.ISR, replicas) || st.ControllerEpoch != c.Epoch() {
			t.Fatalf("state znode orders-%d = %+v, %v", p, st, err)
		}
	}

	// Broker 1, leader of one partition, shrinks its ISR through AlterPartition.
	var led1, led2 int32 = -1, -1
	for p, r := range assignment {
		if r[0] == 2 {
			led2 = p
		} else {
			led1 = p
		}
	}
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.SetVersion(3)
	ap.BrokerID, ap.BrokerEpoch = 1, epochs[1]
	apt := kmsg.NewAlterPartitionRequestTopic()
	apt.TopicID = topic.TopicID
	app := kmsg.NewAlterPartitionRequestTopicPartition()
	app.Partition, app.LeaderEpoch, app.PartitionEpoch = led1, 0, 0
	app.NewEpochISR = []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{{BrokerID: 1, BrokerEpoch: epochs[1]}}
	apt.Partitions = append(apt.Partitions, app)
	ap.Topics = append(ap.Topics, apt)
	apr := c.AlterPartition(ctx, ap)
	if apr.ErrorCode != 0 || len(apr.Topics) != 1 || apr.Topics[0].Partitions[0].ErrorCode != 0 ||
		!slices.Equal(apr.Topics[0].Partitions[0].ISR, []int32{1}) || apr.Topics[0].Partitions[0].PartitionEpoch != 1 {
		t.Fatalf("AlterPartition response %+v", apr)
	}
	if st, err := admin.GetPartitionState("orders", led1); err != nil || !slices.Equal(st.ISR, []int32{1}) || st.PartitionEpoch != 1 {
		t.Fatalf("state znode after AlterPartition = %+v, %v", st, err)
	}
	// The same proposal again is stale now (partition epoch 0 < 1 and ISR unchanged → already applied).
	if again := c.AlterPartition(ctx, ap); again.Topics[0].Partitions[0].ErrorCode != 0 || again.Topics[0].Partitions[0].PartitionEpoch != 1 {
		t.Fatalf("retried AlterPartition: %+v", again)
	}

	// Broker 2 dies: the partition it led moves to broker 1 with leader epoch 1.
	zk2.Close()
	waitFor(t, 10*time.Second, "offline partition election", func() bool {
		st, _, _, ok := b1.leaderAndIsr("orders", led2)
		return ok && st.Leader == 1 && st.LeaderEpoch == 1 && slices.Equal(st.ISR, []int32{1})
	})
	st, err := admin.GetPartitionState("orders", led2)
	if err != nil || st.Leader != 1 || st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("state znode after failure = %+v, %v", st, err)
	}
}

// The broker that is both controller and leader dies: the other broker becomes controller
// with epoch 2, loads the state, and moves leadership to a live ISR member.
func TestControllerAndLeaderDies(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("ctrl-and-leader"))
	zk1, zk2 := connectZK(t, connect), connectZK(t, connect)
	if err := zk1.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	b1, b2 := newRecordingBroker(t), newRecordingBroker(t)
	for i, reg := range []struct {
		zk *zkmeta.Client
		b  *recordingBroker
	}{{zk1, b1}, {zk2, b2}} {
		if _, err := reg.zk.RegisterBroker(context.Background(), zkmeta.BrokerInfo{ID: int32(i + 1), Endpoints: []zkmeta.Endpoint{
			{ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: reg.b.port(), SecurityProtocol: "PLAINTEXT"}}}); err != nil {
			t.Fatal(err)
		}
	}
	c1 := newController(Config{BrokerID: 1, Log: testLog(t), RetryBackoff: 50 * time.Millisecond}, zk1, kclientDial)
	runController(t, c1)
	waitFor(t, 10*time.Second, "broker 1 controller", c1.IsActive)
	c2 := newController(Config{BrokerID: 2, Log: testLog(t), RetryBackoff: 50 * time.Millisecond}, zk2, kclientDial)
	runController(t, c2)

	admin := connectZK(t, connect)
	if err := admin.CreateTopic("t", zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {1, 2}, 1: {2, 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "partition states", func() bool {
		_, err0 := admin.GetPartitionState("t", 0)
		_, err1 := admin.GetPartitionState("t", 1)
		return err0 == nil && err1 == nil
	})

	zk1.Close() // broker 1 "crashes": its registration and /controller go with its session
	waitFor(t, 10*time.Second, "broker 2 controller with epoch 2", func() bool { return c2.IsActive() && c2.Epoch() == 2 })
	waitFor(t, 10*time.Second, "t-0 led by broker 2", func() bool {
		st, err := admin.GetPartitionState("t", 0)
		return err == nil && st.Leader == 2 && slices.Equal(st.ISR, []int32{2}) && st.ControllerEpoch == 2
	})
	waitFor(t, 10*time.Second, "LeaderAndIsr from the new controller", func() bool {
		st, req, _, ok := b2.leaderAndIsr("t", 0)
		return ok && st.Leader == 2 && req.ControllerEpoch == 2 && req.ControllerID == 2
	})
	if c1.IsActive() {
		t.Fatal("the dead broker's controller is still active")
	}
}
