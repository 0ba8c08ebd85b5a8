package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func (e *dataEnv) metadata(v int16, allowAuto bool, topics ...string) *kmsg.MetadataResponse {
	e.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v)
	req.AllowAutoTopicCreation = allowAuto
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := e.handle(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.(*kmsg.MetadataResponse)
}

func TestMetadata(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("a", 3)
	e.createTopic("b", 1)

	r := e.metadata(12, true) // null topics: all
	if len(r.Topics) != 2 || *r.ClusterID != "test-cluster-id" || r.ControllerID != testBrokerID || len(r.Brokers) != 1 {
		t.Fatalf("all topics: %+v", r)
	}
	empty := kmsg.NewPtrMetadataRequest()
	empty.SetVersion(12)
	empty.Topics = []kmsg.MetadataRequestTopic{}
	if resp, _ := e.handle(empty); len(resp.(*kmsg.MetadataResponse).Topics) != 0 {
		t.Fatal("v1+ empty topic list must mean no topics")
	}
	v0 := kmsg.NewPtrMetadataRequest()
	v0.SetVersion(0)
	v0.Topics = []kmsg.MetadataRequestTopic{}
	if resp, _ := e.handle(v0); len(resp.(*kmsg.MetadataResponse).Topics) != 2 {
		t.Fatal("v0 empty topic list must mean all topics")
	}

	a := e.metadata(10, true, "a").Topics[0]
	if a.ErrorCode != 0 || a.TopicID != e.topics["a"] || len(a.Partitions) != 3 || a.Partitions[2].Partition != 2 ||
		a.Partitions[0].Leader != testBrokerID || a.Partitions[0].LeaderEpoch != 0 {
		t.Fatalf("topic a: %+v", a)
	}

	// Auto-creation through the hook: LEADER_NOT_AVAILABLE on the first call.
	if c := e.metadata(12, true, "new").Topics[0].ErrorCode; c != kerr.LeaderNotAvailable.Code || len(e.created) != 1 || e.created[0] != "new" {
		t.Fatalf("auto-create: code %d created %v", c, e.created)
	}
	// Not allowed by the request (v4+), or disabled: UNKNOWN_TOPIC_OR_PARTITION.
	if c := e.metadata(12, false, "new2").Topics[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("allow=false: %d", c)
	}
	e.cfg.AutoCreateTopicsEnable = false
	if c := e.metadata(3, false, "new3").Topics[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("disabled: %d", c)
	}
	e.cfg.AutoCreateTopicsEnable = true
	// Before v4 auto-creation is always requested.
	if c := e.metadata(3, false, "new4").Topics[0].ErrorCode; c != kerr.LeaderNotAvailable.Code {
		t.Fatalf("v3 auto-create: %d", c)
	}
	// Creation failure passes its code through.
	e.apis.AutoCreateTopic = func(context.Context, string) error {
		return errors.Join(errors.New("only 1 broker"), kerr.InvalidReplicationFactor)
	}
	if c := e.metadata(12, true, "new5").Topics[0].ErrorCode; c != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("failed auto-create: %d", c)
	}
	if c := e.metadata(12, true, "bad name!").Topics[0].ErrorCode; c != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid name: %d", c)
	}

	// v12 by topic id; unknown id.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	for _, id := range [][16]byte{e.topics["b"], {0xde, 0xad}} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	resp, _ := e.handle(req)
	mr := resp.(*kmsg.MetadataResponse)
	if len(mr.Topics) != 2 || mr.Topics[0].ErrorCode != kerr.UnknownTopicID.Code || *mr.Topics[1].Topic != "b" {
		t.Fatalf("by id: %+v", mr.Topics)
	}
	// v10 with an id: INVALID_REQUEST.
	req.SetVersion(10)
	resp, _ = e.handle(req)
	if c := resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode; c != kerr.InvalidRequest.Code {
		t.Fatalf("v10 by id: %d", c)
	}

	// The leader's broker dies: leader -1, LEADER_NOT_AVAILABLE.
	e.leaderAndIsr("b", 2, []int32{2, testBrokerID})
	if p := e.metadata(12, false, "b").Topics[0].Partitions[0]; p.Leader != -1 || p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("dead leader: %+v", p)
	}
	// Alive but without our listener: LISTENER_NOT_FOUND from v6, LEADER_NOT_AVAILABLE before.
	e.updateMetadataReq(func(req *kmsg.UpdateMetadataRequest) {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = 2
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = "h2", 9999, "INTERNAL"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	})
	if p := e.metadata(6, false, "b").Topics[0].Partitions[0]; p.ErrorCode != kerr.ListenerNotFound.Code {
		t.Fatalf("v6 listener not found: %+v", p)
	}
	if p := e.metadata(5, false, "b").Topics[0].Partitions[0]; p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("v5 listener not found: %+v", p)
	}
	// v0 lists only reachable replicas and flags the missing ones.
	if p := e.metadata(0, false, "a").Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.Replicas) != 1 {
		t.Fatalf("v0 healthy: %+v", p)
	}
	e.leaderAndIsr("a", testBrokerID, []int32{testBrokerID, 2})
	if p := e.metadata(0, false, "a").Topics[0].Partitions[0]; p.ErrorCode != kerr.ReplicaNotAvailable.Code || len(p.Replicas) != 1 {
		t.Fatalf("v0 with a replica on a broker without our listener: %+v", p)
	}
	if p := e.metadata(1, false, "a").Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.Replicas) != 2 {
		t.Fatalf("v1 lists every replica: %+v", p)
	}
	if r := e.metadata(12, false, "b"); len(r.Brokers) != 1 {
		t.Fatalf("brokers without our listener must be left out: %+v", r.Brokers)
	}
}

func TestMetadataCacheUpdateVersions(t *testing.T) {
	mc := NewMetadataCache(1)
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = 2
	req.ControllerID = 3
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID = 3
	ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
	ep.Host, ep.Port, ep.SecurityProtocol = "h", 1, 0
	lb.Endpoints = append(lb.Endpoints, ep)
	req.LiveBrokers = append(req.LiveBrokers, lb)
	for p := int32(0); p < 2; p++ {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.Replicas = "t", p, 3, []int32{3}
		req.PartitionStates = append(req.PartitionStates, ps)
	}
	mc.UpdateMetadata(req)
	if b, ok := mc.Broker(3); !ok || b.Endpoints[0].ListenerName != "PLAINTEXT" {
		t.Fatalf("pre-v3 listener name: %+v", b)
	}
	if tm, ok := mc.Topic("t"); !ok || len(tm.Partitions) != 2 || mc.ControllerID() != 3 {
		t.Fatalf("topic: %+v", tm)
	}
	// Deletion: leader -2 drops the partition; the last one drops the topic.
	req.PartitionStates = req.PartitionStates[:1]
	req.PartitionStates[0].Leader = LeaderDuringDelete
	if d := mc.UpdateMetadata(req); len(d) != 1 || d[0] != (logstore.TopicPartition{Topic: "t", Partition: 0}) {
		t.Fatalf("deleted %v", d)
	}
	req.PartitionStates[0].Partition = 1
	mc.UpdateMetadata(req)
	if mc.Contains("t") {
		t.Fatal("topic survived deletion of all partitions")
	}
}

func TestLeaderAndIsrFencing(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("f", 1) // controller epoch 1, leader epoch 0

	send := func(ctrlEpoch, leaderEpoch int32, replicas []int32) *kmsg.LeaderAndISRResponse {
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.Version, req.ControllerEpoch = 7, ctrlEpoch
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = "f", e.topics["f"]
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = testBrokerID, leaderEpoch, replicas, replicas
		ts.PartitionStates = append(ts.PartitionStates, ps)
		req.TopicStates = append(req.TopicStates, ts)
		return e.rm.BecomeLeaderOrFollower(req)
	}
	if r := send(0, 5, []int32{1}); r.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("stale controller epoch: %+v", r)
	}
	if r := send(1, 0, []int32{1}); r.Topics[0].Partitions[0].ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("same leader epoch: %+v", r)
	}
	if r := send(2, 3, []int32{5}); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("not a replica: %+v", r)
	}
	var hookLeaders []logstore.TopicPartition
	e.rm.OnLeadershipChange(func(leaders, followers []logstore.TopicPartition) {
		hookLeaders = append(hookLeaders, leaders...)
		e.rm.ControllerEpoch() // the hook runs without ReplicaManager locks held
	})
	if r := send(2, 3, []int32{1}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("newer epoch: %+v", r)
	}
	if len(hookLeaders) != 1 || hookLeaders[0].Topic != "f" {
		t.Fatalf("leadership hook got %v", hookLeaders)
	}
	p, _ := e.rm.Partition(logstore.TopicPartition{Topic: "f", Partition: 0})
	if st := p.State(); st.LeaderEpoch != 3 || !st.IsLeader {
		t.Fatalf("state %+v", st)
	}
	if e.rm.ControllerEpoch() != 2 {
		t.Fatalf("controller epoch %d", e.rm.ControllerEpoch())
	}
	// UpdateMetadata from the old controller is now fenced too.
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version, um.ControllerEpoch = 8, 1
	if _, err := e.rm.MaybeUpdateMetadataCache(um); !errors.Is(err, ErrStaleControllerEpoch) {
		t.Fatalf("stale UpdateMetadata: %v", err)
	}
}

func TestStopReplica(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("gone", 2)
	tp0 := logstore.TopicPartition{Topic: "gone", Partition: 0}
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version, req.ControllerEpoch = 4, e.ctrlEp
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = "gone"
	for p, epoch := range []int32{-2, -7} {
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = int32(p), epoch, true
		st.PartitionStates = append(st.PartitionStates, ps)
	}
	req.Topics = append(req.Topics, st)
	resp := e.rm.StopReplicas(req)
	if resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 || resp.Partitions[1].ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("StopReplica: %+v", resp)
	}
	if _, ok := e.logs.GetLog(tp0); ok {
		t.Fatal("log of a deleted replica still open")
	}
	if p := e.produce(produceReq(9, 1, 100, "gone", 0, valuesBatch(1, 1))); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to stopped replica (still in metadata): %+v", p)
	}
	if p := e.produce(produceReq(9, 1, 100, "gone", 1, valuesBatch(1, 1))); p.ErrorCode != 0 {
		t.Fatalf("produce to fenced-stop partition: %+v", p)
	}
	req.ControllerEpoch = 0
	if r := e.rm.StopReplicas(req); r.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("stale StopReplica: %+v", r)
	}
}
