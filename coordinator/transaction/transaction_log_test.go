package transaction

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/coordinator"
)

// unhex decodes hex with spaces and "|" separators (readable byte diagrams).
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

// The goldens are built by hand from TransactionLogKey.json / TransactionLogValue.json
// (Kafka 3.7): key v0, value v0 written, v1 (flexible) read.
const (
	goldenKey = "0000 | 0005 7478 6e2d 31" // version 0 | "txn-1"

	goldenValueOngoing = "0000" + // version 0
		"| 0000 0000 0000 03e8" + // producerId 1000
		"| 0005" + // producerEpoch 5
		"| 0000 ea60" + // transactionTimeoutMs 60000
		"| 01" + // status Ongoing
		"| 0000 0002" + // 2 topics
		"| 0001 61 | 0000 0002 | 0000 0000 | 0000 0001" + // "a" [0, 1]
		"| 0002 6262 | 0000 0001 | 0000 0002" + // "bb" [2]
		"| 0000 018b cfe5 687b" + // lastUpdate 1700000000123
		"| 0000 018b cfe5 6800" // start 1700000000000

	goldenValueEmpty = "0000 | 0000 0000 0000 03e8 | 0006 | 0000 ea60 | 00" +
		"| ffff ffff" + // null partitions in Empty
		"| 0000 018b cfe5 687b | ffff ffff ffff ffff" // start -1

	goldenValueV1 = "0001" + // version 1, flexible
		"| 0000 0000 0000 03e8 | 0005 | 0000 ea60 | 02" + // PrepareCommit
		"| 03" + // compact array: 2 topics
		"| 02 61 | 03 0000 0000 0000 0001 | 00" + // "a" [0, 1], no tags
		"| 03 6262 | 02 0000 0002 | 00" + // "bb" [2], no tags
		"| 0000 018b cfe5 687b | 0000 018b cfe5 6800" +
		"| 01 05 02 abcd" // one unknown tagged field (tag 5, 2 bytes): skipped
)

func TestRecordGoldens(t *testing.T) {
	if got := keyToBytes("txn-1"); !bytes.Equal(got, unhex(t, goldenKey)) {
		t.Fatalf("key: got %x", got)
	}
	ongoing := TxnTransitMetadata{ProducerID: 1000, ProducerEpoch: 5, TxnTimeoutMs: 60000, TxnState: Ongoing,
		TopicPartitions: []TopicPartition{{"a", 0}, {"a", 1}, {"bb", 2}}, TxnStartTimestamp: 1700000000000, TxnLastUpdateTimestamp: 1700000000123}
	got, err := valueToBytes(ongoing)
	if err != nil || !bytes.Equal(got, unhex(t, goldenValueOngoing)) {
		t.Fatalf("ongoing value: %v\n got %x\nwant %x", err, got, unhex(t, goldenValueOngoing))
	}
	empty := TxnTransitMetadata{ProducerID: 1000, ProducerEpoch: 6, TxnTimeoutMs: 60000, TxnState: Empty, TxnStartTimestamp: -1, TxnLastUpdateTimestamp: 1700000000123}
	got, err = valueToBytes(empty)
	if err != nil || !bytes.Equal(got, unhex(t, goldenValueEmpty)) {
		t.Fatalf("empty value: %v\n got %x", err, got)
	}
	empty.TopicPartitions = []TopicPartition{{"a", 0}}
	if _, err := valueToBytes(empty); !errors.Is(err, errIllegalState) {
		t.Fatalf("Empty with partitions: %v", err)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		state       TransactionState
		epoch       int16
		start       int64
		partitions  string
	}{
		{"v0 ongoing", goldenValueOngoing, Ongoing, 5, 1700000000000, "[a-0,a-1,bb-2]"},
		{"v0 empty", goldenValueEmpty, Empty, 6, -1, "[]"},
		{"v1 flexible with tags", goldenValueV1, PrepareCommit, 5, 1700000000000, "[a-0,a-1,bb-2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := readTxnRecordKey(unhex(t, goldenKey))
			if err != nil || id != "txn-1" {
				t.Fatalf("key: %q %v", id, err)
			}
			m, err := readTxnRecordValue(id, unhex(t, tc.value))
			if err != nil {
				t.Fatal(err)
			}
			if m.producerID != 1000 || m.producerEpoch != tc.epoch || m.txnTimeoutMs != 60000 || m.state != tc.state ||
				m.txnStartTimestamp != tc.start || m.txnLastUpdateTimestamp != 1700000000123 ||
				formatPartitions(m.partitionsLocked()) != tc.partitions || m.lastProducerEpoch != -1 || m.lastProducerID != -1 {
				t.Fatalf("decoded %s", m)
			}
			if tc.state != Empty { // re-encoding the v0 golden gives the same bytes
				b, err := valueToBytes(TxnTransitMetadata{ProducerID: m.producerID, ProducerEpoch: m.producerEpoch, TxnTimeoutMs: m.txnTimeoutMs,
					TxnState: Ongoing, TopicPartitions: m.partitionsLocked(), TxnStartTimestamp: m.txnStartTimestamp, TxnLastUpdateTimestamp: m.txnLastUpdateTimestamp})
				if err != nil || !bytes.Equal(b, unhex(t, goldenValueOngoing)) {
					t.Fatalf("re-encoded %x %v", b, err)
				}
			}
		})
	}
}

func TestDecodeRecord(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       string
		wantErr    bool
	}{
		{"ongoing", unhex(t, goldenKey), unhex(t, goldenValueOngoing),
			"key: transaction_metadata::transactionalId=txn-1 payload: producerId:1000,producerEpoch:5,state=Ongoing,partitions=[a-0,a-1,bb-2],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000", false},
		{"empty", unhex(t, goldenKey), unhex(t, goldenValueEmpty),
			"key: transaction_metadata::transactionalId=txn-1 payload: producerId:1000,producerEpoch:6,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000", false},
		{"tombstone", unhex(t, goldenKey), nil, "key: transaction_metadata::transactionalId=txn-1 payload: <DELETE>", false},
		{"unknown key version", unhex(t, "0001 0003 616263"), nil, "key: unknown::version=1", false},
		{"null key", nil, nil, "", true},
		{"truncated key", unhex(t, "0000 0005 7478"), nil, "", true},
		{"truncated value", unhex(t, goldenKey), unhex(t, goldenValueOngoing)[:20], "", true},
		{"unknown value version", unhex(t, goldenKey), unhex(t, "0002 0000"), "", true},
		{"bad state id", unhex(t, goldenKey), unhex(t, "0000 0000 0000 0000 03e8 0005 0000 ea60 09 ffffffff 0000 018b cfe5 687b ffff ffff ffff ffff"), "", true},
		{"huge array count", unhex(t, goldenKey), unhex(t, "0000 0000 0000 0000 03e8 0005 0000 ea60 01 7fffffff"), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRecord(tc.key, tc.value)
			if tc.wantErr {
				if !errors.Is(err, ErrMalformedRecord) {
					t.Fatalf("want ErrMalformedRecord, got %q %v", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

func FuzzReadTxnRecordValue(f *testing.F) {
	for _, s := range []string{goldenValueOngoing, goldenValueEmpty, goldenValueV1} {
		b, _ := hex.DecodeString(strings.NewReplacer(" ", "", "|", "").Replace(s))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := readTxnRecordValue("x", b)
		if err != nil {
			if !errors.Is(err, ErrMalformedRecord) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if m == nil {
			t.Fatal("nil metadata without error for a non-nil value")
		}
		// What was read re-encodes (as v0, the version written) to a value that reads back the same.
		parts := m.partitionsLocked()
		if m.state == Empty && len(parts) != 0 {
			t.Fatalf("Empty with partitions %v", parts)
		}
		enc, err := valueToBytes(TxnTransitMetadata{ProducerID: m.producerID, ProducerEpoch: m.producerEpoch, TxnTimeoutMs: m.txnTimeoutMs,
			TxnState: m.state, TopicPartitions: parts, TxnStartTimestamp: m.txnStartTimestamp, TxnLastUpdateTimestamp: m.txnLastUpdateTimestamp})
		if err != nil {
			t.Fatalf("re-encode %s: %v", m, err)
		}
		m2, err := readTxnRecordValue("x", enc)
		if err != nil {
			t.Fatalf("re-read %x: %v", enc, err)
		}
		if m2.producerID != m.producerID || m2.producerEpoch != m.producerEpoch || m2.txnTimeoutMs != m.txnTimeoutMs || m2.state != m.state ||
			m2.txnStartTimestamp != m.txnStartTimestamp || m2.txnLastUpdateTimestamp != m.txnLastUpdateTimestamp ||
			formatPartitions(m2.partitionsLocked()) != formatPartitions(parts) {
			t.Fatalf("round trip: %s became %s", m, m2)
		}
	})
}

func TestPartitionFor(t *testing.T) {
	// Java: "txn-1".hashCode() == 110_810_510 (31-polynomial over the chars); abs % 50.
	if h := coordinator.JavaStringHashCode("txn-1"); h != 110810510 {
		t.Fatalf("hash %d", h)
	}
	if p := coordinator.PartitionFor("txn-1", 50); p != 110810510%50 {
		t.Fatalf("partition %d", p)
	}
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE, which Utils.abs maps to 0.
	if p := coordinator.PartitionFor("polygenelubricants", 50); p != 0 {
		t.Fatalf("MIN_VALUE hash: partition %d", p)
	}
}
