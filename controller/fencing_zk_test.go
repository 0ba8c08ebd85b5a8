package controller

// Real-ZooKeeper tests for issue 4's fencing and bad-input rules: a term whose session ended
// writes nothing on the client's next session, and malformed topic and partition state
// znodes are logged with their path and skip only their topic.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// TestTermEndsWithItsSession: the controller's client loses its session (a network partition
// longer than the session timeout) and go-zookeeper opens a new one. An event the old term
// still processes on the new session — no other controller has bumped the epoch, so the
// /controller_epoch check would pass — must write nothing and end the term.
func TestTermEndsWithItsSession(t *testing.T) {
	srv := sharedZK(t)
	chroot := uniqueChroot("session-term")
	proxy := zktest.StartProxy(t, srv.Addr())
	// A short session (ZooKeeper's minimum is 2 ticks = 1 s) keeps the test quick.
	zk1, err := zkmeta.Connect(context.Background(), proxy.Connect(chroot), 2*time.Second, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk1.Close() })
	admin := connectZK(t, srv.Connect(chroot))
	if err := admin.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	if _, err := zk1.RegisterBroker(context.Background(), zkmeta.BrokerInfo{ID: 1, Endpoints: []zkmeta.Endpoint{
		{ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: 1, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	epoch, epochZkVersion, err := zk1.TryElectController(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{BrokerID: 1, Log: testLog(t), DisableAutoLeaderRebalance: true}
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loop := newEventLoop(cfg, zk1, &fakeChannels{out: &strings.Builder{}, discard: true}, epoch, epochZkVersion, ctx)
	defer func() { cancel(); loop.watchWG.Wait() }()
	if err := loop.process(startupEvent{}); err != nil {
		t.Fatal(err)
	}
	oldSession := zk1.SessionID()

	proxy.Partition()
	waitFor(t, 15*time.Second, "the session to expire (/controller gone)", func() bool {
		id, err := admin.GetControllerID()
		return err == nil && id == -1
	})
	proxy.Heal()
	waitFor(t, 15*time.Second, "a new session", func() bool {
		sid := zk1.SessionID()
		return sid != 0 && sid != oldSession
	})
	// A topic the stale term would create partition states for (broker 1 is still live in
	// its context).
	if err := admin.CreateTopic("late", zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	_, topicVersion, err := admin.GetTopic("late")
	if err != nil {
		t.Fatal(err)
	}
	err = loop.process(topicChangeEvent{})
	if !errors.Is(err, errResign) || !errors.Is(err, errSessionLost) {
		t.Fatalf("stale term's TopicChange: err = %v, want resignation for the lost session", err)
	}
	if _, err := admin.GetPartitionState("late", 0); !errors.Is(err, zkmeta.ErrNoNode) {
		t.Fatalf("late-0 state written by a term whose session ended: err = %v", err)
	}
	if _, v, err := admin.GetTopic("late"); err != nil || v != topicVersion {
		t.Fatalf("topic znode rewritten by a term whose session ended: version %d, was %d (%v)", v, topicVersion, err)
	}
}

// logCapture records log entries (and still sends them to t.Log).
type logCapture struct {
	mu      sync.Mutex
	entries []*logrus.Entry
}

func (h *logCapture) Levels() []logrus.Level { return logrus.AllLevels }
func (h *logCapture) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, e)
	return nil
}

// errorAt reports whether an error-level entry names zkPath.
func (h *logCapture) errorAt(zkPath string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.entries {
		if e.Level <= logrus.ErrorLevel && e.Data["zk_path"] == zkPath {
			return true
		}
	}
	return false
}

// TestMalformedZnodesSkipTheirTopic: malformed JSON in a topic znode and in a partition state
// znode is logged with the path; that topic is skipped; the controller stays active (also
// across a failover that reads everything again) and other topics, older and newer, are
// handled as usual.
func TestMalformedZnodesSkipTheirTopic(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("malformed"))
	zk1, admin := connectZK(t, connect), connectZK(t, connect)
	if err := admin.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	b1 := newRecordingBroker(t)
	if _, err := zk1.RegisterBroker(context.Background(), zkmeta.BrokerInfo{ID: 1, Endpoints: []zkmeta.Endpoint{
		{ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: b1.port(), SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	log := testLog(t)
	capture := &logCapture{}
	log.Logger.AddHook(capture)
	c := newController(Config{BrokerID: 1, Log: log, RetryBackoff: 50 * time.Millisecond, DisableAutoLeaderRebalance: true}, zk1, kclientDial)
	runController(t, c)
	waitFor(t, 10*time.Second, "controller active", c.IsActive)

	hasState := func(topic string, epoch int32) func() bool {
		return func() bool {
			st, err := admin.GetPartitionState(topic, 0)
			return err == nil && st.Leader == 1 && st.ControllerEpoch == epoch
		}
	}
	one := zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {1}}}
	for _, topic := range []string{"before", "bad-state"} {
		if err := admin.CreateTopic(topic, one, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, topic+"-0 online", hasState(topic, 1))
	}

	// A topic znode with malformed JSON, created while the controller runs.
	badTopicPath := zkmeta.TopicPath("bad-assign")
	if _, err := admin.Create(badTopicPath, []byte(`{"version":2,"partitions":{"0":[1]`), zkmeta.Persistent); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the malformed topic znode logged with its path", func() bool { return capture.errorAt(badTopicPath) })
	// A partition state znode with malformed JSON.
	badStatePath := zkmeta.PartitionStatePath("bad-state", 0)
	garbage := []byte(`{"controller_epoch":1,"leader":1,"isr":[1`)
	if _, err := admin.Set(badStatePath, garbage, -1); err != nil {
		t.Fatal(err)
	}

	// A failover reads every znode again: force one (an operator deletes /controller).
	if err := admin.Delete(zkmeta.ControllerPath, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "re-election with epoch 2", func() bool { return c.IsActive() && c.Epoch() == 2 })
	waitFor(t, 10*time.Second, "the malformed state znode logged with its path", func() bool { return capture.errorAt(badStatePath) })

	// Other topics: the old one is sent to the broker by the new term, a new one is created.
	waitFor(t, 10*time.Second, "LeaderAndIsr for before-0 from epoch 2", func() bool {
		st, req, _, ok := b1.leaderAndIsr("before", 0)
		return ok && req.ControllerEpoch == 2 && st.Leader == 1
	})
	if err := admin.CreateTopic("after", one, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "after-0 online", hasState("after", 2))
	waitFor(t, 10*time.Second, "LeaderAndIsr for after-0", func() bool {
		st, _, _, ok := b1.leaderAndIsr("after", 0)
		return ok && st.Leader == 1 && st.IsNew
	})

	// The skipped topics: nothing written, nothing sent by the new term.
	if data, _, err := admin.Get(badStatePath); err != nil || !slices.Equal(data, garbage) {
		t.Errorf("%s rewritten: %q, %v", badStatePath, data, err)
	}
	if _, err := admin.GetPartitionState("bad-assign", 0); !errors.Is(err, zkmeta.ErrNoNode) {
		t.Errorf("bad-assign-0 got a state: %v", err)
	}
	if _, req, _, ok := b1.leaderAndIsr("bad-state", 0); ok && req.ControllerEpoch == 2 {
		t.Errorf("LeaderAndIsr for the skipped topic bad-state from epoch 2")
	}
	if _, _, _, ok := b1.leaderAndIsr("bad-assign", 0); ok {
		t.Errorf("LeaderAndIsr for the skipped topic bad-assign")
	}
	if !c.IsActive() || c.Epoch() != 2 {
		t.Errorf("controller active %v epoch %d, want active with epoch 2", c.IsActive(), c.Epoch())
	}
}
