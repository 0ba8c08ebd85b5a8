package transaction

import (
	"io"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestRemoveMarkersKeepsNewerEpochCompletion: a broker elected again for its own
// __transaction_state partition (a leader epoch bump without a leader change, as when a
// follower leaves the ISR) reloads and resumes a Prepare* transaction at the new coordinator
// epoch while answers to the old epoch's markers still arrive. Cancelling the old epoch's
// markers must keep the new epoch's pending completion, or the transaction stays in Prepare*
// and its producer gets CONCURRENT_TRANSACTIONS forever (seen in the integration chaos test).
// Kafka removes only the very PendingCompleteTxn it is given.
func TestRemoveMarkersKeepsNewerEpochCompletion(t *testing.T) {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	m := newTransactionMarkerChannelManager(Config{}, nil, nil, nil, logrus.NewEntry(logger))
	newer := &pendingCompleteTxn{transactionalID: "t", coordinatorEpoch: 10}
	m.pending["t"] = newer
	m.removeMarkersForTxnID("t", 9)
	if m.pending["t"] != newer {
		t.Fatal("cancelling coordinator epoch 9's markers dropped epoch 10's pending completion")
	}
	m.removeMarkersForTxnID("t", 10)
	if _, ok := m.pending["t"]; ok {
		t.Fatal("cancelling coordinator epoch 10's markers kept its pending completion")
	}
}
