package transaction

// Fuzz targets for the __transaction_state decoders and the load path. Seeds live in
// testdata/fuzz/<target>; rewrite them with
//
//	SAMSA_WRITE_FUZZ_SEEDS=1 go test -run TestWriteTxnFuzzSeeds ./coordinator/transaction

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

func mustUnhex(s string) []byte {
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s))
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzReadTxnRecordKey: any key decodes to an id, an unknown version or ErrMalformedRecord;
// a decoded id re-encodes to a prefix of the input (the reader ignores trailing bytes, as
// Kafka's generated reader does).
func FuzzReadTxnRecordKey(f *testing.F) {
	for _, s := range keySeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := readTxnRecordKey(b)
		var unknown errUnknownKeyVersion
		switch {
		case errors.As(err, &unknown):
			if len(b) < 2 || unknown.version == keyVersion {
				t.Fatalf("unknown version %d from %x", unknown.version, b)
			}
		case err != nil:
			if !errors.Is(err, ErrMalformedRecord) {
				t.Fatalf("untyped error %v", err)
			}
		default:
			if enc := keyToBytes(id); !bytes.HasPrefix(b, enc) {
				t.Fatalf("id %q re-encodes to %x, not a prefix of %x", id, enc, b)
			}
		}
	})
}

// FuzzLoadTransactionState feeds a malformed __transaction_state log to the state manager's
// loader through env_test.go's memLog: one valid record, then the fuzzed bytes (as if they
// were more batches of the same read), then a valid batch. The load must finish (log and
// skip), never panic, and leave only consistent metadata; Prepare* states it resumes are
// driven through the marker channel manager.
func FuzzLoadTransactionState(f *testing.F) {
	for _, s := range loadSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := newEnv(t)
		e.c.state.logger.Logger.SetLevel(logrus.PanicLevel)
		pre, err := buildBatch(time.Unix(1_700_000_000, 0), []kv{{keyToBytes("pre"), mustUnhex(goldenValueOngoing)}})
		if err != nil {
			t.Fatal(err)
		}
		e.log.mu.Lock()
		e.log.batches[0] = [][]byte{append(pre, data...)} // base offset 0, one record
		e.log.next[0] = 1
		e.log.mu.Unlock()
		e.log.appendRecords(t, 0, kv{keyToBytes("post"), mustUnhex(goldenValueEmpty)})
		e.elect(e.c, 0, 2) // fatal unless the load completes
		e.c.state.mu.RLock()
		entry := e.c.state.cache[0]
		var ms []*TransactionMetadata
		for id, m := range entry.metadata {
			if m.transactionalID != id {
				t.Errorf("cached under %q: metadata of %q", id, m.transactionalID)
			}
			ms = append(ms, m)
		}
		e.c.state.mu.RUnlock()
		for _, m := range ms {
			m.mu.Lock()
			if m.state == Empty && len(m.topicPartitions) != 0 {
				t.Errorf("%q Empty with partitions %v", m.transactionalID, m.partitionsLocked())
			}
			m.mu.Unlock()
		}
		e.pump(e.c)
		e.settle(e.c)
		_, code, _ := e.c.ListTransactions(nil, nil)
		if code != 0 {
			t.Fatalf("ListTransactions after the load: error %d", code)
		}
	})
}

// keySeeds are real key encodings and broken ones.
func keySeeds() [][]byte {
	return [][]byte{
		mustUnhex(goldenKey),
		keyToBytes(""),
		keyToBytes(strings.Repeat("x", 300)),
		mustUnhex("0001 0003 616263"),      // unknown key version 1
		mustUnhex("ffff 0003 616263"),      // negative version
		mustUnhex("0000 0005 7478"),        // truncated id
		mustUnhex("0000 ffff"),             // null id
		mustUnhex("00"),                    // truncated version
		{},                                 // empty key
		mustUnhex("0000 0001 61 deadbeef"), // trailing bytes
	}
}

// valueSeeds are real value encodings (v0 as written, v1 as a future broker would write
// them) and truncated or corrupt ones.
func valueSeeds() [][]byte {
	ongoing, empty, v1 := mustUnhex(goldenValueOngoing), mustUnhex(goldenValueEmpty), mustUnhex(goldenValueV1)
	out := [][]byte{ongoing, empty, v1}
	for _, st := range []TransactionState{PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence, Dead} {
		b, err := valueToBytes(TxnTransitMetadata{ProducerID: 4242, ProducerEpoch: 3, TxnTimeoutMs: 900000, TxnState: st,
			TopicPartitions: []TopicPartition{{"__consumer_offsets", 7}, {"a", 0}, {"a", 1}}, TxnStartTimestamp: 1700000000000,
			TxnLastUpdateTimestamp: 1700000000500})
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	// v1 Empty with a null compact array, and v1 with tags inside a partitions entry.
	out = append(out,
		mustUnhex("0001 | 0000 0000 0000 03e8 | 0006 | 0000 ea60 | 00 | 00 | 0000 018b cfe5 687b | ffff ffff ffff ffff | 00"),
		mustUnhex("0001 | 0000 0000 0000 03e8 | 0005 | 0000 ea60 | 01 | 02 | 02 61 | 02 0000 0000 | 02 00 01 ff 07 00 | 0000 018b cfe5 687b | 0000 018b cfe5 6800 | 00"),
	)
	// Truncations at field boundaries and in the middle of one.
	for _, n := range []int{0, 1, 2, 9, 11, 15, 16, 20, 24, len(ongoing) - 8, len(ongoing) - 1} {
		out = append(out, ongoing[:n])
	}
	out = append(out, v1[:len(v1)-3])
	out = append(out,
		mustUnhex("0002 0000"), // unknown version
		mustUnhex("0000 0000 0000 0000 03e8 0005 0000 ea60 09 ffffffff 0000 018b cfe5 687b ffff ffff ffff ffff"),                    // bad state
		mustUnhex("0000 0000 0000 0000 03e8 0005 0000 ea60 01 7fffffff"),                                                            // huge count
		mustUnhex("0000 0000 0000 0000 03e8 0005 0000 ea60 01 0000 0001 0001 61 ffff ffff 0000 018b cfe5 687b 0000 018b cfe5 6800"), // null ids
		mustUnhex("0001 0000 0000 0000 03e8 0005 0000 ea60 01 ffffffffffffffffffff01"),                                              // overlong varint
	)
	return out
}

// loadSeeds are byte strings to append after a valid batch of the log.
func loadSeeds(t testing.TB) [][]byte {
	batch := func(recs ...kv) []byte {
		b, err := buildBatch(time.Unix(1_700_000_000, 0), recs)
		if err != nil {
			t.Fatal(err)
		}
		recordbatch.Batch(b).SetBaseOffset(1)
		return b
	}
	prepare, _ := valueToBytes(TxnTransitMetadata{ProducerID: 77, ProducerEpoch: 1, TxnTimeoutMs: 60000, TxnState: PrepareCommit,
		TopicPartitions: []TopicPartition{{"a", 0}, {"unknown-topic", 3}}, TxnStartTimestamp: 1700000000000, TxnLastUpdateTimestamp: 1700000000000})
	abort, _ := valueToBytes(TxnTransitMetadata{ProducerID: 78, ProducerEpoch: 1, TxnTimeoutMs: 60000, TxnState: PrepareAbort,
		TopicPartitions: []TopicPartition{{"b", 0}}, TxnStartTimestamp: 1700000000000, TxnLastUpdateTimestamp: 1700000000000})
	good := batch(kv{keyToBytes("p1"), prepare}, kv{keyToBytes("p2"), abort}, kv{keyToBytes("pre"), nil})
	bad := batch(kv{mustUnhex("0000 0005 7478"), mustUnhex(goldenValueOngoing)}, // truncated key
		kv{mustUnhex("0001 0001 61"), mustUnhex(goldenValueOngoing)}, // unknown key version
		kv{keyToBytes("v"), mustUnhex(goldenValueOngoing)[:20]},      // truncated value
		kv{keyToBytes("w"), mustUnhex("0000 0000 0000 0000 03e8 0005 0000 ea60 09 ffffffff 0000 018b cfe5 687b ffff ffff ffff ffff")},
		kv{nil, nil}, // null key
		kv{keyToBytes("ok"), mustUnhex(goldenValueV1)})
	badRecords := append([]byte(nil), good...)
	// A batch whose record count overstates its records.
	recordbatch.Batch(badRecords).SetBaseOffset(1)
	binary32(badRecords[57:], 9)
	badMagic := append([]byte(nil), good...)
	badMagic[16] = 1
	control := batch(kv{mustUnhex("0000 0001"), mustUnhex("0000 0000 0005")})
	control[22] |= 0x20 // control attribute (low byte of the int16 attributes)
	return [][]byte{
		{},
		good,
		bad,
		badRecords,
		badMagic,
		good[:len(good)-5], // a partial batch at the end of the read
		good[:30],          // a partial header
		append(append([]byte(nil), control...), good...),
		append(append([]byte(nil), bad...), bad...),
		mustUnhex("0000 0000 0000 0001 ffff fff0"), // negative length
	}
}

func binary32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// TestWriteTxnFuzzSeeds writes the committed corpora; it does nothing unless asked.
func TestWriteTxnFuzzSeeds(t *testing.T) {
	if os.Getenv("SAMSA_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set SAMSA_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz")
	}
	write := func(target string, seeds [][]byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("FuzzReadTxnRecordKey", keySeeds())
	write("FuzzReadTxnRecordValue", valueSeeds())
	write("FuzzLoadTransactionState", loadSeeds(t))
}

// TestLoadSkipsMalformedRecords pins what FuzzLoadTransactionState's seeds load: the
// malformed records of a batch are skipped, the good ones around them kept.
func TestLoadSkipsMalformedRecords(t *testing.T) {
	e := newEnv(t)
	pre, err := buildBatch(time.Unix(1_700_000_000, 0), []kv{{keyToBytes("pre"), mustUnhex(goldenValueOngoing)}})
	if err != nil {
		t.Fatal(err)
	}
	e.log.mu.Lock()
	e.log.batches[0] = [][]byte{append(pre, loadSeeds(t)[2]...)}
	e.log.next[0] = 7
	e.log.mu.Unlock()
	e.log.appendRecords(t, 0, kv{keyToBytes("post"), mustUnhex(goldenValueEmpty)})
	e.elect(e.c, 0, 2)
	e.c.state.mu.RLock()
	defer e.c.state.mu.RUnlock()
	var ids []string
	for id := range e.c.state.cache[0].metadata {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if got := strings.Join(ids, ","); got != "ok,post,pre" {
		t.Fatalf("loaded %s, want ok,post,pre", got)
	}
}
