package zkmeta

import (
	"errors"
	"testing"
)

// TestControllerWriteNeedsControllerZnode: a controller write passes only while the
// /controller znode of its election exists, even if /controller_epoch did not move (a
// controller whose session ended before another broker was elected).
func TestControllerWriteNeedsControllerZnode(t *testing.T) {
	c := newClient(t)
	if err := c.CreateTopic("t", TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	_, epochV, err := c.TryElectController(1)
	if err != nil {
		t.Fatal(err)
	}
	s := PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, ISR: []int32{1}}, ControllerEpoch: 1}
	if err := c.CreatePartitionState("t", 0, s, epochV); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ControllerPath, -1); err != nil { // as the session's end does
		t.Fatal(err)
	}
	if _, err := c.UpdatePartitionState("t", 0, s, 0, epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("UpdatePartitionState without /controller = %v, want ErrControllerMoved", err)
	}
	if err := c.CreatePartitionState("t", 1, s, epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("CreatePartitionState without /controller = %v, want ErrControllerMoved", err)
	}
	if st, err := c.GetPartitionState("t", 0); err != nil || st.PartitionEpoch != 0 {
		t.Fatalf("state changed: %+v, %v", st, err)
	}
	// A new election (epoch + 1) makes the new zkVersion the only one that writes.
	_, epochV2, err := c.TryElectController(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdatePartitionState("t", 0, s, 0, epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("old epoch after re-election = %v, want ErrControllerMoved", err)
	}
	if _, err := c.UpdatePartitionState("t", 0, s, 0, epochV2); err != nil {
		t.Fatalf("new epoch: %v", err)
	}
}
