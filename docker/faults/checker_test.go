package faults

import (
	"errors"
	"testing"
	"time"
)

// checkFixture: producer 0 acked a0..a2 on partition 0, a probe to broker 1 in epoch 3 and
// one to broker 2 in epoch 4, all stored where acknowledged.
func checkFixture() ([]Ack, []Probe, map[int32]map[int64]Stored, time.Time) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	acks := []Ack{
		{Producer: 0, Partition: 0, Offset: 0, Value: "a0", At: at(10)},
		{Producer: 0, Partition: 0, Offset: 1, Value: "a1", At: at(20)},
		{Producer: 0, Partition: 0, Offset: 4, Value: "a2", At: at(3000)},
	}
	probes := []Probe{
		{Broker: 1, Partition: 0, Value: "probe-1", Offset: 2, Sent: at(30), Done: at(40)},
		{Broker: 2, Partition: 0, Value: "probe-2", Err: errors.New("NOT_LEADER_OR_FOLLOWER"), Sent: at(30), Done: at(35)},
		{Broker: 2, Partition: 0, Value: "probe-3", Offset: 3, Sent: at(2500), Done: at(2600)},
	}
	stored := map[int32]map[int64]Stored{0: {
		0: {"a0", 3}, 1: {"a1", 3}, 2: {"probe-1", 3}, 3: {"probe-3", 4}, 4: {"a2", 4},
	}}
	return acks, probes, stored, t0
}

func TestCheckClean(t *testing.T) {
	acks, probes, stored, t0 := checkFixture()
	r := Check(acks, probes, 0, stored, t0, t0.Add(4*time.Second))
	if !r.OK() || len(r.Problems) != 0 {
		t.Fatalf("clean history reported: %s %v", r, r.Problems)
	}
	if r.Acked != 5 {
		t.Errorf("acked %d, want 5 (3 records, 2 accepted probes)", r.Acked)
	}
	if want := 2560 * time.Millisecond; r.MaxGap[0] != want { // probe-1 at 40 ms → probe-3 at 2600 ms
		t.Errorf("max gap %v, want %v", r.MaxGap[0], want)
	}
	if len(r.Leaders) != 1 || r.Leaders[0] != "partition 0: broker 1 (epoch 3) → broker 2 (epoch 4)" {
		t.Errorf("leaders %q", r.Leaders)
	}
}

func TestCheckLostMisplacedDuplicate(t *testing.T) {
	acks, probes, stored, t0 := checkFixture()
	delete(stored[0], 1)              // a1 lost (truncated away)
	stored[0][5] = Stored{"a0", 4}    // a0 twice
	stored[0][4] = Stored{"other", 4} // a2 not at its offset...
	stored[0][6] = Stored{"a2", 4}    // ...but later
	acks = append(acks, Ack{Producer: 0, Partition: 0, Offset: 3, Value: "a3", At: t0.Add(3500 * time.Millisecond)})
	stored[0][3] = Stored{"a3", 4} // and the probe it displaced counts as lost
	r := Check(acks, probes, 0, stored, t0, t0.Add(4*time.Second))
	if r.OK() {
		t.Fatal("report OK")
	}
	if r.Lost != 2 || r.Misplaced != 1 || r.Duplicates != 1 || r.OutOfOrder != 1 {
		t.Errorf("lost %d misplaced %d duplicates %d out of order %d, want 2 1 1 1: %v", r.Lost, r.Misplaced, r.Duplicates, r.OutOfOrder, r.Problems)
	}
}

func TestCheckTwoLeaders(t *testing.T) {
	acks, probes, stored, t0 := checkFixture()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Broker 1 still accepts, in epoch 3, a probe sent after broker 2 acknowledged in epoch 4.
	probes = append(probes, Probe{Broker: 1, Partition: 0, Value: "probe-4", Offset: 5, Sent: at(2700), Done: at(2800)})
	stored[0][5] = Stored{"probe-4", 3}
	// And broker 2 writes in broker 1's epoch.
	probes = append(probes, Probe{Broker: 2, Partition: 0, Value: "probe-5", Offset: 6, Sent: at(10), Done: at(20)})
	stored[0][6] = Stored{"probe-5", 3}
	r := Check(acks, probes, 0, stored, t0, t0.Add(4*time.Second))
	if r.SplitBrain != 1 || r.SharedEpochs != 1 || r.OK() {
		t.Errorf("split brain %d, shared epochs %d, want 1 1: %v", r.SplitBrain, r.SharedEpochs, r.Problems)
	}
}
