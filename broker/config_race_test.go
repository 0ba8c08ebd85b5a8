package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// A topic config change that lands while a LeaderAndIsr creates one of the topic's logs (after
// the config was read, before the log exists) reaches the new log: the config handler flags
// the log being created and the ReplicaManager re-reads the config once it is created, again
// if a further change lands during that re-read (LogManager.topicConfigUpdated /
// finishedInitializingLog). ZooKeeper is real; the test's topic-config reader pauses
// LeaderAndIsr after each read while the test applies a change through the handler.
func TestTopicConfigChangeDuringLogCreationReachesNewLog(t *testing.T) {
	e := newDataEnv(t)
	zk, err := zkmeta.Connect(context.Background(), testZK(t).Connect(testChroot(t)), 6*time.Second, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	handler := &configChangeListener{zk: zk, logs: e.logs.AllLogs, topicConfigUpdated: e.logs.TopicConfigUpdated,
		brokerProps: func() map[string]string { return e.cfg.Props }, log: e.log, now: time.Now, lastExecuted: -1}
	// change stores a new retention.ms and runs the handler over the notification, as the
	// broker's listener does when the /config/changes watch fires.
	change := func(retentionMs string) {
		t.Helper()
		if err := zk.SetTopicConfig("racy", map[string]string{"retention.ms": retentionMs}); err != nil {
			t.Fatal(err)
		}
		children, err := zk.Children(zkmeta.ConfigChangesPath)
		if err != nil {
			t.Fatal(err)
		}
		handler.processNotifications(children)
	}
	change("1000")

	reads := make(chan string) // the retention.ms each paused read returned
	resume := make(chan struct{})
	calls := 0 // only LeaderAndIsr's goroutine touches it
	e.rm.cfg.TopicConfig = func(topic string) (map[string]string, error) {
		o, err := zk.GetTopicConfig(topic)
		if calls++; calls <= 2 {
			reads <- o["retention.ms"]
			<-resume
		}
		return o, err
	}
	e.topics["racy"], e.parts["racy"] = [16]byte{0x7a}, 1
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version, req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 7, testBrokerID, e.ctrlEp, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "racy", e.topics["racy"]
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = e.ctrlEp, testBrokerID, 0
	ps.ISR, ps.Replicas, ps.IsNew = []int32{testBrokerID}, []int32{testBrokerID}, true
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	done := make(chan *kmsg.LeaderAndISRResponse, 1)
	go func() { done <- e.rm.BecomeLeaderOrFollower(req) }()

	tp := logstore.TopicPartition{Topic: "racy", Partition: 0}
	retention := func() int64 {
		l, ok := e.logs.GetLog(tp)
		if !ok {
			t.Fatal("no log for racy-0")
		}
		return l.Config().RetentionMs
	}
	// 1. LeaderAndIsr read the config before creating the log; change it now.
	if got := <-reads; got != "1000" {
		t.Fatalf("first read: retention.ms %q, want 1000", got)
	}
	if _, ok := e.logs.GetLog(tp); ok {
		t.Fatal("log exists before LeaderAndIsr resumed")
	}
	change("2000") // no log yet: the handler can only flag the creation
	resume <- struct{}{}

	// 2. The log is created with the stale config and the flagged change makes LeaderAndIsr
	// read again; change the config once more during that read.
	select {
	case got := <-reads:
		if got != "2000" {
			t.Fatalf("re-read: retention.ms %q, want 2000", got)
		}
	case <-done:
		t.Fatalf("LeaderAndIsr ended without re-reading the config changed during log creation; log retention.ms %d, want 2000", retention())
	}
	change("3000") // the log exists now: applied to it directly, and flagged again
	resume <- struct{}{}

	// 3. The re-read's stale 2000 must not stay: the second flag gives a third read.
	resp := <-done
	if code := resp.Topics[0].Partitions[0].ErrorCode; resp.ErrorCode != 0 || code != 0 {
		t.Fatalf("LeaderAndIsr: error %d, partition error %d", resp.ErrorCode, code)
	}
	if got := retention(); got != 3000 {
		t.Fatalf("log retention.ms %d after the changes, want 3000", got)
	}
	if calls != 3 {
		t.Fatalf("topic config read %d times, want 3 (create, re-read, re-read)", calls)
	}

	// A later LeaderAndIsr (log exists, nothing in flight) reads nothing and changes nothing.
	e.epochs[tp] = 1
	e.leaderAndIsr("racy", testBrokerID, []int32{testBrokerID})
	if calls != 3 || retention() != 3000 {
		t.Fatalf("after a second LeaderAndIsr: %d reads, retention.ms %d", calls, retention())
	}
}
