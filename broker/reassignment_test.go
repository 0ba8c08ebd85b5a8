package broker

// Partition reassignment end to end on a real ZooKeeper with in-process brokers: AlterPartitionReassignments
// at the controller, the new replica catches up by follower fetching, the leader adds it to the ISR
// with AlterPartition, and the controller completes the move (topic znode without
// adding/removing replicas, old replica stopped and deleted).

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func TestPartitionReassignment(t *testing.T) {
	chroot := testChroot(t)
	b1 := startTestBroker(t, chroot, nil)
	waitController(t, b1)
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2"})
	adminWaitFor(t, 10*time.Second, "two live brokers", func() bool { return len(b1.Metadata().AliveBrokers()) == 2 })
	tc := adminDial(t, b1.Addr("PLAINTEXT"))

	ct := adminTopic("moving", 1, 1)
	ca := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ca.Partition, ca.Replicas = 0, []int32{1}
	ct.NumPartitions, ct.ReplicationFactor, ct.ReplicaAssignment = -1, -1, append(ct.ReplicaAssignment, ca)
	cresp := tc.request(adminCreateTopicsReq(10000, false, ct), -1).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", cresp.Topics[0].ErrorCode, nil)
	tp := logstore.TopicPartition{Topic: "moving", Partition: 0}
	adminWaitFor(t, 10*time.Second, "leadership on broker 1", func() bool {
		p, err := b1.replicas.Partition(tp)
		return err == nil && p.IsLeader()
	})
	for i := 0; i < 5; i++ {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "moving"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = valuesBatch(4, 50)
		pt.Partitions = append(pt.Partitions, pp)
		req.Topics = append(req.Topics, pt)
		presp := tc.request(req, -1).(*kmsg.ProduceResponse)
		adminWantCode(t, "produce", presp.Topics[0].Partitions[0].ErrorCode, nil)
	}

	reassign := func(topic string, p int32, replicas []int32) *kmsg.AlterPartitionAssignmentsResponse {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, replicas
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return tc.request(req, -1).(*kmsg.AlterPartitionAssignmentsResponse)
	}
	// Bad input first.
	if r := reassign("moving", 0, []int32{2, 7}); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("dead broker: %+v", r)
	}
	if r := reassign("missing", 0, []int32{2}); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", r)
	}
	// A broker that is not the controller says NOT_CONTROLLER.
	tc2 := adminDial(t, b2.Addr("PLAINTEXT"))
	if r := tc2.request(kmsg.NewPtrListPartitionReassignmentsRequest(), -1).(*kmsg.ListPartitionReassignmentsResponse); r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("list at non-controller: %+v", r)
	}

	r := reassign("moving", 0, []int32{2})
	adminWantCode(t, "reassign", r.Topics[0].Partitions[0].ErrorCode, nil)
	adminWaitFor(t, 20*time.Second, "reassignment to complete", func() bool {
		a, _, err := b1.ZK().GetTopic("moving")
		return err == nil && slices.Equal(a.Partitions[0], []int32{2}) && len(a.Adding) == 0 && len(a.Removing) == 0
	})
	lr := tc.request(kmsg.NewPtrListPartitionReassignmentsRequest(), -1).(*kmsg.ListPartitionReassignmentsResponse)
	if lr.ErrorCode != 0 || len(lr.Topics) != 0 {
		t.Fatalf("still listed: %+v", lr)
	}
	adminWaitFor(t, 10*time.Second, "broker 2 to lead with all records", func() bool {
		p, err := b2.replicas.Partition(tp)
		if err != nil || !p.IsLeader() {
			return false
		}
		l, ok := b2.logs.GetLog(tp)
		return ok && l.LogEndOffset() == 20
	})
	adminWaitFor(t, 10*time.Second, "broker 1 to drop its replica", func() bool {
		_, ok := b1.logs.GetLog(tp)
		return !ok
	})
}
