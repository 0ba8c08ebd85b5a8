package controller

// Log dir failure against a real ZooKeeper and the real channel manager: a broker writes a
// log dir event notification; the controller deletes it, asks the broker with LeaderAndIsr,
// and the broker's KAFKA_STORAGE_ERROR answer (decoded from the wire, by topic id) moves
// leadership to the other ISR member.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kafkatest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// failingDirBroker is a recordingBroker whose LeaderAndIsr answers carry KAFKA_STORAGE_ERROR
// for the partitions on its failed dir.
type failingDirBroker struct {
	*recordingBroker
	mu     sync.Mutex
	failed map[TopicPartition]bool
}

func newFailingDirBroker(t *testing.T) *failingDirBroker {
	b := &failingDirBroker{recordingBroker: &recordingBroker{}, failed: map[TopicPartition]bool{}}
	b.srv = kafkatest.NewServer(t, b.answer)
	return b
}

func (b *failingDirBroker) fail(tp TopicPartition) {
	b.mu.Lock()
	b.failed[tp] = true
	b.mu.Unlock()
}

func (b *failingDirBroker) answer(key, version int16, req kmsg.Request) kmsg.Response {
	resp := b.recordingBroker.answer(key, version, req)
	lr, ok := req.(*kmsg.LeaderAndISRRequest)
	if !ok || resp == nil {
		return resp
	}
	r := resp.(*kmsg.LeaderAndISRResponse)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ts := range lr.TopicStates {
		rt := kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = ts.TopicID
		for _, ps := range ts.PartitionStates {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition = ts.Topic, ps.Partition
			if b.failed[TopicPartition{ts.Topic, ps.Partition}] {
				rp.ErrorCode = kerr.KafkaStorageError.Code
			}
			if version >= 5 {
				rt.Partitions = append(rt.Partitions, rp)
			} else {
				r.Partitions = append(r.Partitions, rp)
			}
		}
		if version >= 5 {
			r.Topics = append(r.Topics, rt)
		}
	}
	return r
}

func (b *failingDirBroker) leaderAndIsrCount() int {
	b.recordingBroker.mu.Lock()
	defer b.recordingBroker.mu.Unlock()
	n := 0
	for _, r := range b.reqs {
		if _, ok := r.(*kmsg.LeaderAndISRRequest); ok {
			n++
		}
	}
	return n
}

func TestControllerLogDirFailure(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("logdir"))
	zk1, zk2 := connectZK(t, connect), connectZK(t, connect)
	if err := zk1.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	b1, b2 := newFailingDirBroker(t), newFailingDirBroker(t)
	ctx := context.Background()
	for i, reg := range []struct {
		zk *zkmeta.Client
		b  *failingDirBroker
	}{{zk1, b1}, {zk2, b2}} {
		id := int32(i + 1)
		if _, err := reg.zk.RegisterBroker(ctx, zkmeta.BrokerInfo{ID: id, Endpoints: []zkmeta.Endpoint{{ListenerName: "PLAINTEXT",
			Host: "127.0.0.1", Port: reg.b.port(), SecurityProtocol: "PLAINTEXT"}}}); err != nil {
			t.Fatal(err)
		}
	}
	c := newController(Config{BrokerID: 1, Log: testLog(t), RetryBackoff: 50 * time.Millisecond}, zk1, kclientDial)
	runController(t, c)
	waitFor(t, 10*time.Second, "controller active", c.IsActive)

	admin := connectZK(t, connect)
	if err := admin.CreateTopic("logs", zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "LeaderAndIsr for logs-0 on both brokers", func() bool {
		_, _, _, ok1 := b1.leaderAndIsr("logs", 0)
		_, _, _, ok2 := b2.leaderAndIsr("logs", 0)
		return ok1 && ok2
	})
	before := b1.leaderAndIsrCount()

	// Broker 1's dir holding logs-0 fails; it tells the controller through ZooKeeper.
	b1.fail(TopicPartition{"logs", 0})
	path, err := zk1.CreateLogDirEventNotification(1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "LeaderAndIsr to broker 1 after its log dir event", func() bool {
		return b1.leaderAndIsrCount() > before
	})
	waitFor(t, 10*time.Second, "log dir event notification deleted", func() bool {
		ok, _, err := admin.Exists(path)
		return err == nil && !ok
	})
	waitFor(t, 10*time.Second, "broker 2 elected for logs-0", func() bool {
		st, _, _, ok := b2.leaderAndIsr("logs", 0)
		return ok && st.Leader == 2 && st.LeaderEpoch == 1 && slices.Equal(st.ISR, []int32{2})
	})
	st, err := admin.GetPartitionState("logs", 0)
	if err != nil || st.Leader != 2 || !slices.Equal(st.ISR, []int32{2}) {
		t.Fatalf("state znode logs-0 = %+v, %v; want leader 2 isr [2]", st, err)
	}
}
