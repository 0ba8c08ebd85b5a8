package controller

import (
	"slices"
	"testing"
)

func liveSet(ids ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

func TestOfflinePartitionLeaderElection(t *testing.T) {
	tests := []struct {
		name       string
		assignment []int32
		isr        []int32
		live       []int32
		unclean    bool
		wantOK     bool
		leader     int32
		isrOut     []int32
		wantDirty  bool
	}{
		{"first live ISR member in assignment order", []int32{1, 2, 3}, []int32{3, 2}, []int32{2, 3}, false, true, 2, []int32{3, 2}, false},
		{"dead leader dropped from ISR", []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3}, false, true, 2, []int32{2, 3}, false},
		{"preferred still wins when live", []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1, 2, 3}, false, true, 1, []int32{1, 2, 3}, false},
		{"live replica outside ISR not chosen (clean)", []int32{1, 2, 3}, []int32{1}, []int32{2, 3}, false, false, 0, nil, false},
		{"unclean picks first live replica", []int32{1, 2, 3}, []int32{1}, []int32{3, 2}, true, true, 2, []int32{2}, true},
		{"unclean but an ISR member is live: clean", []int32{1, 2, 3}, []int32{1, 3}, []int32{2, 3}, true, true, 3, []int32{3}, false},
		{"nothing live", []int32{1, 2}, []int32{1, 2}, nil, true, false, 0, nil, false},
		{"ISR member not in assignment is ignored as leader", []int32{1, 2}, []int32{5, 2}, []int32{2, 5}, false, true, 2, []int32{5, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ok := offlinePartitionLeaderElection(tt.assignment, tt.isr, liveSet(tt.live...), tt.unclean)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if res.Leader != tt.leader || !slices.Equal(res.ISR, tt.isrOut) || res.Unclean != tt.wantDirty {
				t.Fatalf("got %+v, want leader %d isr %v unclean %v", res, tt.leader, tt.isrOut, tt.wantDirty)
			}
		})
	}
}

func TestOtherElections(t *testing.T) {
	t.Run("preferred", func(t *testing.T) {
		if r, ok := preferredReplicaPartitionLeaderElection([]int32{2, 1}, []int32{1, 2}, liveSet(1, 2)); !ok || r.Leader != 2 || !slices.Equal(r.ISR, []int32{1, 2}) {
			t.Fatalf("got %+v %v", r, ok)
		}
		if _, ok := preferredReplicaPartitionLeaderElection([]int32{2, 1}, []int32{1}, liveSet(1, 2)); ok {
			t.Fatal("preferred replica outside the ISR elected")
		}
		if _, ok := preferredReplicaPartitionLeaderElection([]int32{2, 1}, []int32{1, 2}, liveSet(1)); ok {
			t.Fatal("dead preferred replica elected")
		}
	})
	t.Run("reassign", func(t *testing.T) {
		if r, ok := reassignPartitionLeaderElection([]int32{4, 5}, []int32{1, 5}, liveSet(1, 4, 5)); !ok || r.Leader != 5 {
			t.Fatalf("got %+v %v", r, ok)
		}
	})
	t.Run("controlled shutdown", func(t *testing.T) {
		r, ok := controlledShutdownPartitionLeaderElection([]int32{1, 2, 3}, []int32{1, 2, 3}, liveSet(1, 2, 3), liveSet(1))
		if !ok || r.Leader != 2 || !slices.Equal(r.ISR, []int32{2, 3}) {
			t.Fatalf("got %+v %v", r, ok)
		}
		if _, ok := controlledShutdownPartitionLeaderElection([]int32{1}, []int32{1}, liveSet(1), liveSet(1)); ok {
			t.Fatal("elected the only, shutting-down replica")
		}
	})
	t.Run("initial", func(t *testing.T) {
		r, ok := initialLeaderAndISR([]int32{3, 1, 2}, liveSet(1, 2))
		if !ok || r.Leader != 1 || !slices.Equal(r.ISR, []int32{1, 2}) {
			t.Fatalf("got %+v %v", r, ok)
		}
		if _, ok := initialLeaderAndISR([]int32{3}, liveSet(1)); ok {
			t.Fatal("elected a dead replica")
		}
	})
}

func TestRemoveReplicaFromISR(t *testing.T) {
	tests := []struct {
		name       string
		leader     int32
		isr        []int32
		replica    int32
		wantLeader int32
		wantISR    []int32
	}{
		{"follower leaves", 1, []int32{1, 2, 3}, 2, 1, []int32{1, 3}},
		{"leader leaves: no leader", 1, []int32{1, 2}, 1, NoLeader, []int32{2}},
		{"last ISR member stays", 1, []int32{1}, 1, NoLeader, []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, isr := removeReplicaFromISR(tt.leader, tt.isr, tt.replica)
			if l != tt.wantLeader || !slices.Equal(isr, tt.wantISR) {
				t.Fatalf("got %d %v, want %d %v", l, isr, tt.wantLeader, tt.wantISR)
			}
		})
	}
}
