package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// LeaderAndIsr and StopReplica load and unload __consumer_offsets partitions in the group
// coordinator at once (KafkaApis' onLeadershipChange → onElection / onResignation), without
// waiting for the coordinator's one-second sweep.
func TestOffsetsLeadershipFollowsLeaderAndIsr(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.OffsetsTopicNumPartitions = 2
	defer e.apis.ShutdownGroupCoordinator()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 7
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = GroupMetadataTopicName, [16]byte{0xcc}
	for p := int32(0); p < 2; p++ {
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = p, e.ctrlEp, testBrokerID, 3
		ps.ISR, ps.Replicas, ps.IsNew = []int32{testBrokerID}, []int32{testBrokerID}, true
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	resp, err := e.apis.handleLeaderAndIsr(t.Context(), nil, req)
	if err != nil || resp.(*kmsg.LeaderAndISRResponse).ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %v %+v", err, resp)
	}
	c := e.apis.groupCoordinator()
	// The sweep first runs a second after the coordinator started; well before, both
	// partitions must be loaded.
	deadline := time.Now().Add(900 * time.Millisecond)
	for !c.Loaded(0) || !c.Loaded(1) {
		if time.Now().After(deadline) {
			t.Fatalf("offsets partitions not loaded after LeaderAndIsr: %v %v", c.Loaded(0), c.Loaded(1))
		}
		time.Sleep(5 * time.Millisecond)
	}

	stop := kmsg.NewPtrStopReplicaRequest()
	stop.Version = 3
	stop.ControllerID, stop.ControllerEpoch, stop.BrokerEpoch = testBrokerID, e.ctrlEp, -1
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = GroupMetadataTopicName
	ps := kmsg.NewStopReplicaRequestTopicPartitionState()
	ps.Partition, ps.LeaderEpoch, ps.Delete = 1, -2, true
	st.PartitionStates = append(st.PartitionStates, ps)
	stop.Topics = append(stop.Topics, st)
	sresp, err := e.apis.handleStopReplica(t.Context(), nil, stop)
	if err != nil || sresp.(*kmsg.StopReplicaResponse).ErrorCode != 0 {
		t.Fatalf("StopReplica: %v %+v", err, sresp)
	}
	if c.Loaded(1) || !c.Loaded(0) {
		t.Fatalf("after StopReplica of partition 1: loaded(0)=%v loaded(1)=%v", c.Loaded(0), c.Loaded(1))
	}
	if _, ok := e.logs.GetLog(logstore.TopicPartition{Topic: GroupMetadataTopicName, Partition: 1}); ok {
		t.Fatal("partition 1's log not deleted")
	}
}
