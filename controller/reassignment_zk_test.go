package controller

// Reassignment across a controller failover on a real ZooKeeper: controller A starts moving
// r-0 from {1,2} to {2,3} and dies before the new replica joins the ISR; controller B reads
// adding/removing replicas from the topic znode, resumes, and completes the move when the
// leader's AlterPartition adds broker 3 to the ISR. The legacy /admin/reassign_partitions
// znode is also honoured and removed.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func TestReassignmentSurvivesFailover(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("reassign-failover"))
	admin := connectZK(t, connect)
	if err := admin.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	for id := int32(1); id <= 3; id++ {
		zc := connectZK(t, connect)
		if _, err := zc.RegisterBroker(context.Background(), zkmeta.BrokerInfo{ID: id, Endpoints: []zkmeta.Endpoint{
			{ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + id, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.CreateTopic("r", zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	zkA := connectZK(t, connect)
	a := newController(Config{BrokerID: 10, Log: testLog(t), DisableAutoLeaderRebalance: true}, zkA, stubDial)
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan struct{})
	go func() { defer close(doneA); a.Run(ctxA) }()
	waitFor(t, 10*time.Second, "partition state", func() bool { _, err := admin.GetPartitionState("r", 0); return err == nil })

	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "r"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, []int32{2, 3}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	waitFor(t, 10*time.Second, "controller A active", a.IsActive)
	resp := a.AlterPartitionReassignments(context.Background(), req)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reassign: %+v", resp)
	}
	ta, _, _ := admin.GetTopic("r")
	if !slices.Equal(ta.Partitions[0], []int32{2, 3, 1}) || !slices.Equal(ta.Adding[0], []int32{3}) || !slices.Equal(ta.Removing[0], []int32{1}) {
		t.Fatalf("topic znode mid-reassignment: %+v", ta)
	}
	// A dies.
	stopA()
	<-doneA
	zkA.Close()

	zkB := connectZK(t, connect)
	bc := newController(Config{BrokerID: 11, Log: testLog(t), DisableAutoLeaderRebalance: true}, zkB, stubDial)
	runController(t, bc)
	waitFor(t, 10*time.Second, "controller B active", bc.IsActive)
	lr := bc.ListPartitionReassignments(context.Background(), kmsg.NewPtrListPartitionReassignmentsRequest())
	if lr.ErrorCode != 0 || len(lr.Topics) != 1 || !slices.Equal(lr.Topics[0].Partitions[0].AddingReplicas, []int32{3}) {
		t.Fatalf("B does not list the reassignment: %+v", lr)
	}
	// The leader (broker 1) adds 3 to the ISR.
	st, err := admin.GetPartitionState("r", 0)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := admin.GetBroker(1)
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.SetVersion(3)
	ap.BrokerID, ap.BrokerEpoch = st.Leader, b1.Epoch
	at := kmsg.NewAlterPartitionRequestTopic()
	at.TopicID = ta.TopicID
	pp := kmsg.NewAlterPartitionRequestTopicPartition()
	pp.Partition, pp.LeaderEpoch, pp.PartitionEpoch = 0, st.LeaderEpoch, st.PartitionEpoch
	for _, id := range []int32{1, 2, 3} {
		pp.NewEpochISR = append(pp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: -1})
	}
	at.Partitions = append(at.Partitions, pp)
	ap.Topics = append(ap.Topics, at)
	if r := bc.AlterPartition(context.Background(), ap); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartition: %+v", r)
	}
	waitFor(t, 10*time.Second, "reassignment completed", func() bool {
		ta, _, err := admin.GetTopic("r")
		st, serr := admin.GetPartitionState("r", 0)
		return err == nil && serr == nil && slices.Equal(ta.Partitions[0], []int32{2, 3}) && len(ta.Adding) == 0 &&
			len(ta.Removing) == 0 && st.Leader == 2 && slices.Equal(st.ISR, []int32{2, 3})
	})

	// Legacy znode: r-0 back to {3,2} (all in the ISR: completes at once), the znode goes.
	if _, err := admin.Create(zkmeta.ReassignPartitionsPath, zkmeta.EncodeReassignment([]zkmeta.ReassignmentEntry{
		{Topic: "r", Partition: 0, Replicas: []int32{3, 2}}, {Topic: "missing", Partition: 0, Replicas: []int32{1}}}), zkmeta.Persistent); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "legacy reassignment done and znode removed", func() bool {
		ok, _, _ := admin.Exists(zkmeta.ReassignPartitionsPath)
		ta, _, err := admin.GetTopic("r")
		return !ok && err == nil && slices.Equal(ta.Partitions[0], []int32{3, 2})
	})
}
