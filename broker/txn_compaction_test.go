package broker

// Compaction of a transactional topic on a real broker (ZooKeeper, the transaction
// coordinator, franz-go producers), as Kafka's LogCleaner with CleanedTransactionMetadata:
// a pass drops the batches of aborted transactions and compacts the rest by key; a marker
// whose transaction has no batch left gets a delete horizon (now + delete.retention.ms) and
// a pass after the horizon removes it. A producer's last data batch stays (emptied if need
// be) to keep its sequence and epoch, so the marker of its transaction stays too.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// txnLogView is a whole partition read with Fetch v11 from offset 0 at an isolation level:
// its batches (in offset order, one segment per response as Kafka reads) and the aborted
// transactions the responses listed.
type txnLogView struct {
	batches []recordbatch.Batch
	aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	end     int64 // high watermark (read_uncommitted) or LSO (read_committed)
}

func readTxnLog(t *testing.T, addr, topic string, isolation int8) txnLogView {
	t.Helper()
	var v txnLogView
	for off := int64(0); ; {
		fp := rawFetchAt(t, addr, topic, 0, off, 11, isolation)
		adminWantCode(t, "fetch "+topic, fp.ErrorCode, nil)
		v.end = fp.HighWatermark
		if isolation == 1 {
			v.end = fp.LastStableOffset
		}
		v.aborted = append(v.aborted, fp.AbortedTransactions...)
		bs := rawBatches(t, fp.RecordBatches)
		if len(bs) == 0 {
			if off < v.end {
				t.Fatalf("fetch %s at %d below %d returned no batch", topic, off, v.end)
			}
			return v
		}
		v.batches = append(v.batches, bs...)
		off = bs[len(bs)-1].NextOffset()
		if off >= v.end {
			return v
		}
	}
}

// keyValues maps each key of the data records to its values in offset order; with
// read_committed, records of aborted transactions are left out as a consumer does.
func (v txnLogView) keyValues(t testing.TB, committed bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	skipping := map[int64]bool{}
	pending := abortedQueue(v.aborted)
	for _, b := range v.batches {
		if committed {
			if b.LastOffset() >= v.end {
				t.Fatalf("read_committed returned the batch at %d, past the LSO %d", b.BaseOffset(), v.end)
			}
			for len(pending) > 0 && pending[0].FirstOffset <= b.LastOffset() {
				skipping[pending[0].ProducerID] = true
				pending = pending[1:]
			}
		}
		if b.Control() {
			if isAbortMarker(b) {
				delete(skipping, b.ProducerID())
			}
			continue
		}
		if b.Transactional() && skipping[b.ProducerID()] {
			continue
		}
		err := b.ForEachRecord(false, func(r *recordbatch.Record) error {
			out[string(r.Key)] = append(out[string(r.Key)], string(r.Value))
			return nil
		})
		if err != nil {
			t.Fatalf("records of the batch at %d: %v", b.BaseOffset(), err)
		}
	}
	return out
}

// markerType is an end-transaction marker's type: "COMMIT" or "ABORT" (the control record
// key: version int16, type int16).
func markerType(t testing.TB, b recordbatch.Batch) string {
	t.Helper()
	typ := ""
	err := b.ForEachRecord(false, func(r *recordbatch.Record) error {
		if len(r.Key) < 4 {
			return fmt.Errorf("control record key %x", r.Key)
		}
		switch binary.BigEndian.Uint16(r.Key[2:]) {
		case 0:
			typ = "ABORT"
		case 1:
			typ = "COMMIT"
		default:
			return fmt.Errorf("control record type %d", binary.BigEndian.Uint16(r.Key[2:]))
		}
		return nil
	})
	if err != nil || typ == "" {
		t.Fatalf("control batch at %d (%d records): %v", b.BaseOffset(), b.RecordCount(), err)
	}
	return typ
}

func TestTxnCompactionRemovesAbortedDataAndMarkers(t *testing.T) {
	const deleteRetention = time.Second
	b := startTestBroker(t, testChroot(t), map[string]string{
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"transaction.state.log.num.partitions":     "2",
		"offsets.topic.num.partitions":             "1",
		"controlled.shutdown.enable":               "false",
		"log.cleaner.backoff.ms":                   "100",
	})
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")
	const topic = "txn-compact"
	// The transactions below fit the first segment (under 2 KiB of 4); the fillers roll it.
	cresp := adminDial(t, addr).request(adminCreateTopicsReq(15000, false, adminTopic(topic, 1, 1,
		"cleanup.policy", "compact", "segment.bytes", "4096", "min.cleanable.dirty.ratio", "0.01",
		"delete.retention.ms", fmt.Sprint(deleteRetention.Milliseconds()))), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create "+topic, cresp.Topics[0].ErrorCode, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newClient := func(txnID string) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
		if txnID != "" {
			opts = append(opts, kgo.TransactionalID(txnID), kgo.TransactionTimeout(60*time.Second))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// produce writes key=value pairs one batch each and returns the first and last offsets.
	produce := func(cl *kgo.Client, kvs ...string) (first, last int64) {
		t.Helper()
		first = -1
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			r, err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}).First()
			if err != nil {
				t.Fatalf("produce %s: %v", kv, err)
			}
			if first < 0 {
				first = r.Offset
			}
			last = r.Offset
		}
		return first, last
	}
	txn := func(cl *kgo.Client, commit bool, kvs ...string) (first, last int64) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		first, last = produce(cl, kvs...)
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v) %v: %v", commit, kvs, err)
		}
		// The marker lands asynchronously; waiting for it (the LSO reaches the HW) keeps
		// the layout fixed: each transaction's marker right after its data.
		adminWaitFor(t, 15*time.Second, fmt.Sprintf("the marker of %v", kvs), func() bool {
			c, u := listOffsetLatest(t, addr, topic, 0, 1), listOffsetLatest(t, addr, topic, 0, 0)
			return c.ErrorCode == 0 && u.ErrorCode == 0 && c.Offset == u.Offset
		})
		return first, last
	}
	p1, p2, plain := newClient("cmp-1"), newClient("cmp-2"), newClient("")
	txn(p1, true, "k0=a1", "k1=a1")
	txn(p1, false, "k0=a2", "k1=a2", "k2=a2")
	txn(p1, true, "k2=a3")
	txn(p1, false, "k0=a4")
	_, p1Last := txn(p1, true, "k0=a5", "k1=a5") // p1's last data batch: kept with its marker
	txn(p2, true, "k3=b1")
	p2First, p2Last := txn(p2, false, "k3=b2", "k4=b2") // p2's last data batch (emptied) and its ABORT stay
	produce(plain, "k2=n1", "k3=n1", "k4=n1")
	want := map[string][]string{"k0": {"a5"}, "k1": {"a5"}, "k2": {"n1"}, "k3": {"n1"}, "k4": {"n1"}}
	aborted := []string{"a2", "a4", "b2"}

	pids := map[int64]string{}
	type marker struct {
		pid      int64
		producer string
		typ      string
		keep     bool
		horizon  int64 // -1 until seen with a delete horizon
		goneAt   int64 // 0 while present
	}
	markers := map[int64]*marker{} // by offset
	// The log as written, before any cleaning (it is all in the active segment): seven
	// markers, five COMMIT/ABORT of p1 and two of p2, and the aborted values.
	initial := readTxnLog(t, addr, topic, 0)
	for _, bt := range initial.batches {
		if !bt.Transactional() {
			continue
		}
		if _, ok := pids[bt.ProducerID()]; !ok {
			pids[bt.ProducerID()] = fmt.Sprintf("p%d", len(pids)+1)
		}
		if bt.Control() {
			m := &marker{pid: bt.ProducerID(), typ: markerType(t, bt), horizon: -1, producer: pids[bt.ProducerID()]}
			last := p1Last
			if m.producer == "p2" {
				last = p2Last
			}
			// Kafka keeps the marker of a transaction whose batches remain: p1's last (its
			// data survives compaction) and p2's last (its last batch is kept, empty).
			m.keep = bt.BaseOffset() == firstMarkerAfter(initial.batches, bt.ProducerID(), last)
			markers[bt.BaseOffset()] = m
		}
	}
	var seq []string
	for _, off := range slices.Sorted(maps.Keys(markers)) {
		m := markers[off]
		seq = append(seq, fmt.Sprintf("%s:%s", m.producer, m.typ))
	}
	if got := strings.Join(seq, ","); got != "p1:COMMIT,p1:ABORT,p1:COMMIT,p1:ABORT,p1:COMMIT,p2:COMMIT,p2:ABORT" {
		t.Fatalf("markers as written: %s", got)
	}
	kv := initial.keyValues(t, false)
	for _, a := range aborted {
		if !slices.ContainsFunc(slices.Collect(maps.Values(kv)), func(vs []string) bool { return slices.Contains(vs, a) }) {
			t.Fatalf("aborted value %s missing before cleaning: %v", a, kv)
		}
	}

	// observe reads the log, checks the markers against what Kafka allows and reports
	// whether only the markers to keep are left.
	start := time.Now()
	observe := func() (txnLogView, bool) {
		v := readTxnLog(t, addr, topic, 0)
		now := time.Now().UnixMilli()
		present := map[int64]bool{}
		for _, bt := range v.batches {
			if !bt.Control() {
				continue
			}
			off := bt.BaseOffset()
			m := markers[off]
			if m == nil {
				t.Fatalf("a control batch at %d that was not written", off)
			}
			if bt.ProducerID() != m.pid || bt.RecordCount() != 1 || markerType(t, bt) != m.typ {
				t.Fatalf("marker at %d changed: producer %d, %d records", off, bt.ProducerID(), bt.RecordCount())
			}
			if m.goneAt != 0 {
				t.Fatalf("marker at %d came back", off)
			}
			present[off] = true
			if h, ok := bt.DeleteHorizon(); ok {
				if m.keep {
					t.Fatalf("%s's %s marker at %d got a delete horizon, but its transaction's batch stays", m.producer, m.typ, off)
				}
				switch {
				case m.horizon < 0:
					m.horizon = h
					// Set by a pass that happened before now: now + delete.retention.ms at most.
					if h > now+deleteRetention.Milliseconds() || h < start.UnixMilli()+deleteRetention.Milliseconds() {
						t.Fatalf("marker at %d: delete horizon %d, seen at %d (delete.retention.ms %d)", off, h, now, deleteRetention.Milliseconds())
					}
				case h != m.horizon:
					t.Fatalf("marker at %d: delete horizon moved from %d to %d", off, m.horizon, h)
				}
			}
		}
		done := true
		for off, m := range markers {
			switch {
			case present[off] && !m.keep:
				done = false
			case !present[off] && m.keep:
				t.Fatalf("%s's %s marker at %d was removed; its transaction's batch stays", m.producer, m.typ, off)
			case !present[off] && m.goneAt == 0:
				m.goneAt = now
				if m.horizon < 0 {
					t.Fatalf("marker at %d removed without a delete horizon having been set", off)
				}
				if now < m.horizon {
					t.Fatalf("marker at %d removed at %d, before its delete horizon %d", off, now, m.horizon)
				}
			}
		}
		return v, done
	}

	// Fillers roll segments and keep the log dirty; the cleaner (every 100 ms) drops the
	// aborted batches and compacts by key.
	filler := func(i int) {
		t.Helper()
		produce(plain, fmt.Sprintf("fill-%d=%s", i%3, strings.Repeat("x", 1000)))
	}
	i := 0
	adminWaitFor(t, 10*time.Second, "aborted data removed and keys compacted", func() bool {
		filler(i)
		i++
		v, _ := observe()
		got := v.keyValues(t, false)
		for k, vs := range want {
			if !slices.Equal(got[k], vs) {
				return false
			}
		}
		return true
	})
	t.Logf("aborted data removed after %v and %d fillers", time.Since(start), i)
	for _, level := range []int8{0, 1} {
		v := readTxnLog(t, addr, topic, level)
		got := v.keyValues(t, level == 1)
		for k, vs := range want {
			if !slices.Equal(got[k], vs) {
				t.Fatalf("isolation %d: key %s has %q, want %q", level, k, got[k], vs)
			}
		}
		for k, vs := range got {
			for _, a := range aborted {
				if slices.Contains(vs, a) {
					t.Fatalf("isolation %d: aborted value %s of key %s still read", level, a, k)
				}
			}
		}
	}

	// After delete.retention.ms and another pass the markers of transactions with no batch
	// left are gone; the two kept are p1's last COMMIT and p2's last ABORT.
	var final txnLogView
	adminWaitFor(t, 10*time.Second, "markers removed", func() bool {
		filler(i)
		i++
		var done bool
		final, done = observe()
		return done
	})
	t.Logf("markers removed after %v and %d fillers", time.Since(start), i)
	var kept []string
	for _, bt := range final.batches {
		if bt.Control() {
			m := markers[bt.BaseOffset()]
			kept = append(kept, fmt.Sprintf("%s:%s", m.producer, m.typ))
		}
	}
	if got := strings.Join(kept, ","); got != "p1:COMMIT,p2:ABORT" {
		t.Fatalf("markers left: %s", got)
	}
	// p2's last batch is still there, empty, with its producer fields; so is p1's, whose
	// record is its key's latest.
	for _, x := range []struct {
		name    string
		last    int64
		records int32
	}{{"p1", p1Last, 1}, {"p2", p2Last, 0}} {
		i := slices.IndexFunc(final.batches, func(bt recordbatch.Batch) bool { return bt.LastOffset() == x.last })
		if i < 0 || !final.batches[i].Transactional() || pids[final.batches[i].ProducerID()] != x.name ||
			final.batches[i].RecordCount() != x.records {
			t.Fatalf("%s's last batch (offset %d) was not kept with %d records", x.name, x.last, x.records)
		}
	}

	// read_committed still reads the latest committed value of every key; a franz-go
	// read_committed consumer agrees.
	// Of the aborted transactions only p2's, whose marker stays, is still indexed (the
	// cleaned segment's .txnindex keeps the aborted transactions of retained ABORT markers).
	v := readTxnLog(t, addr, topic, 1)
	p2pid := int64(-1)
	for pid, name := range pids {
		if name == "p2" {
			p2pid = pid
		}
	}
	if q := abortedQueue(v.aborted); len(q) != 1 || q[0].ProducerID != p2pid || q[0].FirstOffset != p2First {
		t.Fatalf("read_committed aborted transactions after cleaning: %+v, want p2 (%d) at %d", q, p2pid, p2First)
	}
	got := v.keyValues(t, true)
	for k, vs := range want {
		if !slices.Equal(got[k], vs) {
			t.Fatalf("read_committed after marker removal: key %s has %q, want %q", k, got[k], vs)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	consumed := map[string][]string{}
	for done := false; !done; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v, never reached offset %d", consumed, v.end-1)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			consumed[string(r.Key)] = append(consumed[string(r.Key)], string(r.Value))
			done = done || r.Offset >= v.end-1
		})
	}
	for k, vs := range want {
		if !slices.Equal(consumed[k], vs) {
			t.Fatalf("franz-go read_committed: key %s has %q, want %q", k, consumed[k], vs)
		}
	}

	// A transaction left open holds the LSO, and the cleaner stops there: while it is
	// undecided, its record and everything after it stay as written, even a later write of
	// the same key, and the latest committed value below the LSO too.
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	openFirst, _ := produce(p1, "k0=a6")
	produce(plain, "k0=n2")
	for until := time.Now().Add(time.Second); time.Now().Before(until); i++ {
		filler(i) // about ten cleaner passes' time, with dirty segments to clean
	}
	if lo := listOffsetLatest(t, addr, topic, 0, 1); lo.ErrorCode != 0 || lo.Offset != openFirst {
		t.Fatalf("read_committed latest with a transaction open: %d (%s), want %d", lo.Offset, adminCodeName(lo.ErrorCode), openFirst)
	}
	if got := readTxnLog(t, addr, topic, 0).keyValues(t, false)["k0"]; !slices.Equal(got, []string{"a5", "a6", "n2"}) {
		t.Fatalf("read_uncommitted with a transaction open: k0 has %q, want [a5 a6 n2]", got)
	}
	if got := readTxnLog(t, addr, topic, 1).keyValues(t, true)["k0"]; !slices.Equal(got, []string{"a5"}) {
		t.Fatalf("read_committed with a transaction open: k0 has %q, want [a5]", got)
	}
	if err := p1.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "k0 compacted past the committed transaction", func() bool {
		filler(i)
		i++
		return slices.Equal(readTxnLog(t, addr, topic, 0).keyValues(t, false)["k0"], []string{"n2"})
	})
	v = readTxnLog(t, addr, topic, 1)
	if got := v.keyValues(t, true); !slices.Equal(got["k0"], []string{"n2"}) || !slices.Equal(got["k1"], []string{"a5"}) {
		t.Fatalf("read_committed after the commit: k0 %q k1 %q, want [n2] [a5]", got["k0"], got["k1"])
	}
	// p1's last transaction (its batch emptied, kept as p1's last) keeps its COMMIT, and the
	// one before it too (k1=a5 is still its key's latest).
	kept = nil
	for _, bt := range v.batches {
		if bt.Control() {
			kept = append(kept, fmt.Sprintf("%s:%s", pids[bt.ProducerID()], markerType(t, bt)))
		}
	}
	if got := strings.Join(kept, ","); got != "p1:COMMIT,p2:ABORT,p1:COMMIT" {
		t.Fatalf("markers left after the last commit: %s", got)
	}
}

// isAbortMarker is the consumer's containsAbortMarker: a control batch whose first record
// is an ABORT marker.
func isAbortMarker(b recordbatch.Batch) bool {
	abort := false
	b.ForEachRecord(false, func(r *recordbatch.Record) error {
		abort = len(r.Key) >= 4 && binary.BigEndian.Uint16(r.Key[2:]) == 0
		return errors.New("first record only")
	})
	return b.Control() && abort
}

// firstMarkerAfter is the offset of producer pid's first control batch after offset.
func firstMarkerAfter(batches []recordbatch.Batch, pid, offset int64) int64 {
	for _, b := range batches {
		if b.Control() && b.ProducerID() == pid && b.BaseOffset() > offset {
			return b.BaseOffset()
		}
	}
	return -1
}
