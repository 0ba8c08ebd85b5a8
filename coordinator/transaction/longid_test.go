package transaction

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A transactional id whose key cannot be encoded (strings in TransactionLogKey v0 carry an
// int16 length: at most 32767 bytes) must not reach __transaction_state. InitProducerId v2+
// carries the id as a compact string, so a client can send a longer one. Written as is, its
// length wrapped: a 70000-byte id was stored with a 4464-byte length and came back after a
// failover as another id (its first 4464 bytes); a 40000-byte one as a negative length,
// skipped on load. Kafka's TransactionLogKey serializer throws instead (the client gets
// UNKNOWN_SERVER_ERROR).
func TestInitProducerIDRejectsUnencodableTransactionalID(t *testing.T) {
	e := newEnv(t)
	for _, n := range []int{32768, 40000, 70000} {
		id := strings.Repeat("x", n)
		_, _, code := e.c.HandleInitProducerID(bg, id, 60000, -1, -1)
		expectCode(t, "oversized id", code, kerr.UnknownServerError)
		if cur, ke := e.c.state.getTransactionState(id); ke != nil || cur != nil {
			t.Fatalf("%d-byte id left in the cache: %v %v", n, cur, ke)
		}
	}
	for p := int32(0); p < testPartitions; p++ {
		if recs := e.log.records(t, p); len(recs) != 0 {
			t.Fatalf("partition %d: %d records written for oversized ids", p, len(recs))
		}
	}
	// The longest encodable id works and survives a failover under its own name.
	id := strings.Repeat("y", 32767)
	pid, epoch := e.init(id)
	p := e.c.PartitionFor(id)
	e.c.OnResignation(p, nil)
	c2 := e.newCoordinator()
	e.elect(c2, p, 5)
	cur, ke := c2.state.getTransactionState(id)
	if ke != nil || cur == nil {
		t.Fatalf("32767-byte id not loaded: %v", ke)
	}
	if cur.txn.producerID != pid || cur.txn.producerEpoch != epoch {
		t.Fatalf("loaded %s", cur.txn)
	}
}
