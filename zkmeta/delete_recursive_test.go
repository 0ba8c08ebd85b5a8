package zkmeta

import (
	"errors"
	"fmt"
	"testing"
)

// A 64-partition topic's znodes (topic, 64 partitions with their state) are deleted with
// the pipelined deleteRecursive; a deposed controller's attempt, fenced on every delete,
// leaves every znode in place.
func TestDeleteTopicZNodesWideTree(t *testing.T) {
	a := newClient(t)
	const n = 64
	asg := TopicAssignment{Partitions: map[int32][]int32{}}
	states := map[TopicPartition]PartitionState{}
	for p := int32(0); p < n; p++ {
		asg.Partitions[p] = []int32{1}
		states[TopicPartition{Topic: "wide", Partition: p}] = PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, ISR: []int32{1}}}
	}
	if err := a.CreateTopic("wide", asg, map[string]string{"retention.ms": "1"}); err != nil {
		t.Fatal(err)
	}
	_, epochV, err := a.TryElectController(1)
	if err != nil {
		t.Fatal(err)
	}
	for tp, err := range a.CreatePartitionStates(states, epochV) {
		if err != nil {
			t.Fatalf("create state %v: %v", tp, err)
		}
	}
	if err := a.MarkTopicForDeletion("wide"); err != nil {
		t.Fatal(err)
	}

	// Deposed: a newer controller epoch exists.
	if err := a.ResignController(1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.TryElectController(2); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteTopicZNodes("wide", epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("deposed DeleteTopicZNodes = %v, want ErrControllerMoved", err)
	}
	got, err := a.GetPartitionStates("wide")
	if err != nil || len(got) != n {
		t.Fatalf("after a deposed delete: %d partition states (%v), want all %d", len(got), err, n)
	}

	_, epochV2, err := a.GetControllerEpoch()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteTopicZNodes("wide", epochV2); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{TopicPath("wide"), TopicConfigPath("wide"), DeleteTopicPath("wide")} {
		if ok, _, err := a.Exists(p); err != nil || ok {
			t.Errorf("%s still exists after DeleteTopicZNodes (%v)", p, err)
		}
	}
	// Without fencing (the tools' DeleteRecursive), a missing path is no error.
	if err := a.DeleteRecursive(TopicPath("wide")); err != nil {
		t.Errorf("DeleteRecursive of a deleted path: %v", err)
	}
}

// BenchmarkDeleteTopicZNodes deletes a 64-partition topic's /brokers/topics/<t> subtree
// (about 130 znodes), fenced by the controller epoch: one request per znode as Kafka's
// deleteRecursive does (seq), against the level-pipelined reads and batched multi deletes
// (batched). One op is one topic.
//
//	go test ./zkmeta -run '^$' -bench DeleteTopicZNodes -benchtime 20x
func BenchmarkDeleteTopicZNodes(b *testing.B) {
	a := newClient(b)
	_, epochV, err := a.TryElectController(1)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"seq", "batched"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				name := fmt.Sprintf("bench-%s-%d", mode, i)
				asg := TopicAssignment{Partitions: map[int32][]int32{}}
				states := map[TopicPartition]PartitionState{}
				for p := int32(0); p < 64; p++ {
					asg.Partitions[p] = []int32{1}
					states[TopicPartition{Topic: name, Partition: p}] = PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, ISR: []int32{1}}}
				}
				if err := a.CreateTopic(name, asg, nil); err != nil {
					b.Fatal(err)
				}
				for _, err := range a.CreatePartitionStates(states, epochV) {
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if mode == "seq" {
					err = a.deleteRecursiveSeq(TopicPath(name), epochV)
				} else {
					err = a.deleteRecursive(TopicPath(name), epochV)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
