package broker

import (
	"errors"
	"testing"

	"github.com/samsa-kafka/samsa/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaderAndIsr reads the topic config (from ZooKeeper in a broker) once per topic whose log
// is missing, without holding stateMu, and creates the logs with it; a failed read fails
// only that topic's new partitions.
func TestLeaderAndIsrReadsTopicConfigOutsideStateLock(t *testing.T) {
	e := newDataEnv(t)
	calls := map[string]int{}
	e.rm.cfg.TopicConfig = func(topic string) (map[string]string, error) {
		if !e.rm.stateMu.TryLock() {
			t.Errorf("topic config of %s read under stateMu", topic)
		} else {
			e.rm.stateMu.Unlock()
		}
		calls[topic]++
		if topic == "unreadable" {
			return nil, errors.New("zookeeper is down")
		}
		return map[string]string{"segment.bytes": "1048577"}, nil
	}

	e.createTopic("cfg", 2)
	for p := int32(0); p < 2; p++ {
		l, ok := e.logs.GetLog(logstore.TopicPartition{Topic: "cfg", Partition: p})
		if !ok || l.Config().SegmentBytes != 1048577 {
			t.Fatalf("log cfg-%d: exists %v, want segment.bytes from the topic config", p, ok)
		}
	}
	e.leaderAndIsr("cfg", testBrokerID, []int32{testBrokerID}) // logs exist: no read
	if calls["cfg"] != 1 {
		t.Fatalf("topic config read %d times, want once", calls["cfg"])
	}

	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version, req.ControllerEpoch = 7, e.ctrlEp
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "unreadable", [16]byte{0xee}
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = testBrokerID, 1, []int32{testBrokerID}, []int32{testBrokerID}
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	resp := e.rm.BecomeLeaderOrFollower(req)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode == 0 {
		t.Fatalf("unreadable topic config: %+v", resp)
	}
	if _, ok := e.logs.GetLog(logstore.TopicPartition{Topic: "unreadable"}); ok {
		t.Fatal("log created without its topic config")
	}
}
