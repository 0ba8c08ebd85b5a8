package transaction

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// TestValidTransitions pins Kafka 3.7's validPreviousStates table (TransactionMetadata.scala).
func TestValidTransitions(t *testing.T) {
	valid := map[TransactionState][]TransactionState{
		Empty:             {Empty, CompleteCommit, CompleteAbort},
		Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
		PrepareCommit:     {Ongoing},
		PrepareAbort:      {Ongoing, PrepareEpochFence},
		CompleteCommit:    {PrepareCommit},
		CompleteAbort:     {PrepareAbort},
		Dead:              {Empty, CompleteAbort, CompleteCommit},
		PrepareEpochFence: {Ongoing},
	}
	for to := Empty; to <= PrepareEpochFence; to++ {
		for from := Empty; from <= PrepareEpochFence; from++ {
			want := false
			for _, p := range valid[to] {
				want = want || p == from
			}
			t.Run(fmt.Sprintf("%s to %s", from, to), func(t *testing.T) {
				if got := to.validPrevious(from); got != want {
					t.Fatalf("validPrevious = %v, want %v", got, want)
				}
			})
		}
	}
}

func TestStateNames(t *testing.T) {
	for i, want := range []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"} {
		s := TransactionState(i)
		if s.String() != want {
			t.Fatalf("%d: %s", i, s)
		}
		if got, ok := StateFromName(want); !ok || got != s {
			t.Fatalf("StateFromName(%s) = %v %v", want, got, ok)
		}
	}
	if _, ok := StateFromName("Bogus"); ok {
		t.Fatal("Bogus is not a state")
	}
	for _, s := range []TransactionState{Empty, CompleteCommit, CompleteAbort} {
		if !s.isExpirationAllowed() {
			t.Fatalf("%s should expire", s)
		}
	}
}

func meta(state TransactionState, epoch int16) *TransactionMetadata {
	return newTransactionMetadata("t", 10, -1, epoch, -1, 1000, state, -1, 100)
}

func TestPrepareIncrementProducerEpoch(t *testing.T) {
	e := func(v int16) *int16 { return &v }
	for _, tc := range []struct {
		name           string
		epoch, last    int16
		expected       *int16
		wantEpoch      int16
		wantLast       int16
		wantFenced     bool
		wantIllegalErr bool
	}{
		{"no expected epoch bumps", 3, -1, nil, 4, -1, false, false},
		{"new producer gets 0", -1, -1, nil, 0, -1, false, false},
		{"KIP-360 expected == current bumps and remembers", 3, -1, e(3), 4, 3, false, false},
		{"KIP-360 new id with any expected epoch", -1, -1, e(7), 0, -1, false, false},
		{"KIP-360 retry of a successful bump", 4, 3, e(3), 4, 3, false, false},
		{"KIP-360 stale epoch is fenced", 5, 4, e(2), 0, 0, true, false},
		{"exhausted epoch refuses", math.MaxInt16 - 1, -1, nil, 0, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := meta(Empty, tc.epoch)
			m.lastProducerEpoch = tc.last
			tr, fenced, err := m.prepareIncrementProducerEpoch(2000, tc.expected, 200)
			if tc.wantIllegalErr {
				if !errors.Is(err, errIllegalState) {
					t.Fatalf("want illegal state, got %v", err)
				}
				return
			}
			if err != nil || fenced != tc.wantFenced {
				t.Fatalf("fenced=%v err=%v", fenced, err)
			}
			if fenced {
				if m.hasPendingState {
					t.Fatal("fenced must not leave a pending state")
				}
				return
			}
			if tr.ProducerEpoch != tc.wantEpoch || tr.LastProducerEpoch != tc.wantLast || tr.TxnState != Empty || tr.TxnTimeoutMs != 2000 ||
				tr.TxnStartTimestamp != -1 || !m.pendingIs(Empty) {
				t.Fatalf("transit %s", tr)
			}
			if err := m.completeTransitionTo(tr); err != nil {
				t.Fatal(err)
			}
			if m.producerEpoch != tc.wantEpoch || m.lastProducerEpoch != tc.wantLast || m.txnTimeoutMs != 2000 || m.hasPendingState {
				t.Fatalf("after complete %s", m)
			}
		})
	}
}

func TestTransitionsThroughACommit(t *testing.T) {
	m := meta(Empty, 0)
	step := func(tr TxnTransitMetadata, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !m.hasPendingState {
			t.Fatal("no pending state after prepare")
		}
		if _, err := m.prepareAbortOrCommit(PrepareCommit, 0); !errors.Is(err, errIllegalState) {
			t.Fatalf("second prepare while pending: %v", err)
		}
		if err := m.completeTransitionTo(tr); err != nil {
			t.Fatal(err)
		}
	}
	step(m.prepareAddPartitions([]TopicPartition{{"a", 0}}, 500))
	if m.state != Ongoing || m.txnStartTimestamp != 500 {
		t.Fatalf("%s", m)
	}
	step(m.prepareAddPartitions([]TopicPartition{{"b", 1}}, 600))
	if m.txnStartTimestamp != 500 || len(m.topicPartitions) != 2 || m.txnLastUpdateTimestamp != 600 {
		t.Fatalf("start timestamp must stay at the first add: %s", m)
	}
	step(m.prepareAbortOrCommit(PrepareCommit, 700))
	if err := m.removePartition(TopicPartition{"a", 0}); err != nil {
		t.Fatal(err)
	}
	tr, err := m.prepareComplete(800)
	if err != nil || tr.TxnState != CompleteCommit || len(tr.TopicPartitions) != 0 {
		t.Fatalf("%s %v", tr, err)
	}
	if err := m.completeTransitionTo(tr); err != nil {
		t.Fatal(err)
	}
	if m.state != CompleteCommit || len(m.topicPartitions) != 0 || m.txnStartTimestamp != 500 {
		t.Fatalf("%s", m)
	}
	if err := m.removePartition(TopicPartition{"b", 1}); !errors.Is(err, errIllegalState) {
		t.Fatalf("removePartition outside Prepare*: %v", err)
	}
	// The next transaction restarts the start timestamp.
	step(m.prepareAddPartitions([]TopicPartition{{"c", 0}}, 900))
	if m.txnStartTimestamp != 900 {
		t.Fatalf("%s", m)
	}
	// Ongoing cannot go to Empty.
	if _, _, err := m.prepareIncrementProducerEpoch(1000, nil, 1000); !errors.Is(err, errIllegalState) {
		t.Fatalf("Ongoing -> Empty: %v", err)
	}
}

func TestFenceEpoch(t *testing.T) {
	m := meta(Ongoing, 4)
	tr, err := m.prepareFenceProducerEpoch()
	if err != nil || tr.ProducerEpoch != 5 || tr.TxnState != PrepareEpochFence || tr.LastProducerEpoch != -1 {
		t.Fatalf("%s %v", tr, err)
	}
	// A fence never completes as such (it continues as PrepareAbort).
	if err := m.completeTransitionTo(tr); !errors.Is(err, errIllegalState) {
		t.Fatalf("completing PrepareEpochFence: %v", err)
	}
	m.clearPending()
	m.hasFailedEpochFence = true
	tr, err = m.prepareFenceProducerEpoch()
	if err != nil || tr.ProducerEpoch != 4 {
		t.Fatalf("after a failed fence the epoch is not bumped again: %s %v", tr, err)
	}
	m = meta(Ongoing, math.MaxInt16)
	if _, err := m.prepareFenceProducerEpoch(); !errors.Is(err, errIllegalState) {
		t.Fatalf("fence at Short.MaxValue: %v", err)
	}
}

func TestCompleteTransitionChecks(t *testing.T) {
	m := meta(Empty, 2)
	tr, _, err := m.prepareIncrementProducerEpoch(1000, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	bad := tr
	bad.ProducerEpoch = 7 // neither same, +1 nor a new producer id at 0
	if err := m.completeTransitionTo(bad); !errors.Is(err, errIllegalState) {
		t.Fatalf("epoch jump: %v", err)
	}
	bad = tr
	bad.TxnState = Ongoing
	if err := m.completeTransitionTo(bad); !errors.Is(err, errIllegalState) {
		t.Fatalf("state differs from pending: %v", err)
	}
	if err := m.completeTransitionTo(tr); err != nil {
		t.Fatal(err)
	}
	if err := m.completeTransitionTo(tr); !errors.Is(err, errIllegalState) {
		t.Fatalf("complete without pending: %v", err)
	}
	// Rotation: new producer id at epoch 0.
	m.producerEpoch = math.MaxInt16 - 1
	tr, err = m.prepareProducerIdRotation(99, 1000, 5, true)
	if err != nil || tr.ProducerID != 99 || tr.ProducerEpoch != 0 || tr.LastProducerEpoch != math.MaxInt16-1 || tr.LastProducerID != 10 {
		t.Fatalf("%s %v", tr, err)
	}
	if err := m.completeTransitionTo(tr); err != nil || m.producerID != 99 || m.lastProducerID != 10 {
		t.Fatalf("%s %v", m, err)
	}
}
