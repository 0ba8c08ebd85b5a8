package logstore

// Fuzz targets for the transaction code's decoders: .txnindex files and end-transaction
// markers. Seeds live in testdata/fuzz/<target>; rewrite them with
//
//	SAMSA_WRITE_FUZZ_SEEDS=1 go test -run TestWriteTxnFuzzSeeds ./logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// txnFuzzLog is a one-segment log of three transactions (pid 1 aborted, pid 2 committed,
// pid 3 aborted) and plain data, closed cleanly: its directory, its true aborted list and
// its .txnindex bytes.
type txnFuzzLog struct {
	dir     string
	aborted []AbortedTxn
	index   []byte
	leo     int64
}

var (
	txnFuzzOnce sync.Once
	txnFuzzSrc  txnFuzzLog
	txnFuzzErr  error
)

var txnFuzzCfg = map[string]string{"segment.bytes": "1048576", "segment.index.bytes": "4096", "index.interval.bytes": "200"}

func txnFuzzSource(t testing.TB) txnFuzzLog {
	txnFuzzOnce.Do(func() {
		dir, err := os.MkdirTemp("", "samsa-txn-fuzz-*")
		if err != nil {
			txnFuzzErr = err
			return
		}
		src := filepath.Join(dir, "txn-0")
		clock := newStepClock(1_700_000_000_000)
		cfg, _ := NewLogConfig(nil, txnFuzzCfg)
		l, err := OpenLog(src, LogOpenOptions{Config: cfg, Clock: clock.Now, FS: noSyncFS{}})
		if err != nil {
			txnFuzzErr = err
			return
		}
		ts := clock.Now().UnixMilli()
		app := func(b []byte) {
			if _, err := l.AppendAsLeader(b, 0); err != nil && txnFuzzErr == nil {
				txnFuzzErr = err
			}
		}
		marker := func(pid int64, commit bool) {
			if _, err := l.AppendTxnMarker(pid, 0, commit, 1, 0); err != nil && txnFuzzErr == nil {
				txnFuzzErr = err
			}
		}
		app(txnBatch(t, 1, 0, 0, keysN("a", 3), ts, true))
		app(txnBatch(t, 2, 0, 0, keysN("b", 2), ts, true))
		app(makeBatch(t, 2, 10, ts, recordbatch.None, true))
		marker(1, false)
		app(txnBatch(t, 3, 0, 0, keysN("c", 2), ts, true))
		marker(2, true)
		app(txnBatch(t, 3, 0, 2, keysN("d", 1), ts, true))
		marker(3, false)
		app(makeBatch(t, 1, 10, ts, recordbatch.None, true))
		txnFuzzSrc = txnFuzzLog{dir: src, aborted: l.CollectAbortedTransactions(0, l.LogEndOffset()), leo: l.LogEndOffset()}
		if err := l.Close(); err != nil && txnFuzzErr == nil {
			txnFuzzErr = err
		}
		txnFuzzSrc.index, err = os.ReadFile(TxnIndexFileName(src, 0))
		if err != nil && txnFuzzErr == nil {
			txnFuzzErr = err
		}
		if len(txnFuzzSrc.aborted) != 2 && txnFuzzErr == nil {
			txnFuzzErr = fmt.Errorf("setup: aborted %+v", txnFuzzSrc.aborted)
		}
	})
	if txnFuzzErr != nil {
		t.Fatal(txnFuzzErr)
	}
	return txnFuzzSrc
}

// refDecodeTxnIndex is TransactionIndex's reading of a file: whole 34-byte entries (a
// torn tail ignored); corrupt if an entry's version is above 0 or its last offset below
// the segment's base offset (sanityCheck).
func refDecodeTxnIndex(b []byte, base int64) (entries []AbortedTxn, corrupt bool) {
	be := binary.BigEndian
	for ; len(b) >= 34; b = b[34:] {
		a := AbortedTxn{ProducerID: int64(be.Uint64(b[2:])), FirstOffset: int64(be.Uint64(b[10:])),
			LastOffset: int64(be.Uint64(b[18:])), LastStableOffset: int64(be.Uint64(b[26:]))}
		if int16(be.Uint16(b)) > 0 || a.LastOffset < base {
			return nil, true
		}
		entries = append(entries, a)
	}
	return entries, false
}

// refCollect is collectAbortedTxns over one index.
func refCollect(list []AbortedTxn, fetchOffset, upperBound int64) []AbortedTxn {
	var out []AbortedTxn
	for _, a := range list {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			out = append(out, a)
		}
		if a.LastStableOffset >= upperBound {
			break
		}
	}
	return out
}

// FuzzTxnIndexFile: whatever a segment's .txnindex holds after a clean shutdown, the log
// opens; a corrupt index (CorruptIndexException) is rebuilt from the log, anything else is
// believed as Kafka believes it (torn tail ignored). When the entries leave room, a new
// abort marker appends its entry over any torn tail and the index reads back after a
// restart.
func FuzzTxnIndexFile(f *testing.F) {
	src := txnFuzzSource(f)
	for _, s := range txnIndexSeeds(src) {
		f.Add(s)
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := filepath.Join(root, "txn-0")
		os.RemoveAll(dir)
		copyDir(t, src.dir, dir)
		if err := os.WriteFile(TxnIndexFileName(dir, 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, _ := NewLogConfig(nil, txnFuzzCfg)
		clock := newStepClock(1_700_000_100_000)
		open := func() *Log {
			l, err := OpenLog(dir, LogOpenOptions{Config: cfg, Clock: clock.Now, FS: noSyncFS{}, CleanShutdown: true, RecoveryPoint: src.leo})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			return l
		}
		l := open()
		entries, corrupt := refDecodeTxnIndex(data, 0)
		want := refCollect(entries, 0, l.LogEndOffset())
		if corrupt {
			want = src.aborted
		}
		if got := l.CollectAbortedTransactions(0, l.LogEndOffset()); !reflect.DeepEqual(got, want) {
			l.Close()
			t.Fatalf("aborted after open (corrupt=%t)\n%+v\nwant\n%+v", corrupt, got, want)
		}
		if corrupt {
			entries = src.aborted
		}
		leo := l.LogEndOffset()
		if n := len(entries); n > 0 && entries[n-1].LastOffset >= leo+2 {
			l.Close() // no room for a new marker: Kafka's append would throw as well
			return
		}
		if _, err := l.AppendAsLeader(txnBatch(t, 9, 0, 0, keysN("z", 2), clock.Now().UnixMilli(), true), 0); err != nil {
			l.Close()
			t.Fatal(err)
		}
		if _, err := l.AppendTxnMarker(9, 0, false, 1, 0); err != nil {
			l.Close()
			t.Fatal(err)
		}
		// Two records then the marker; no other transaction is open, so the entry's LSO is the
		// offset after the marker.
		entries = append(entries, AbortedTxn{ProducerID: 9, FirstOffset: leo, LastOffset: leo + 2, LastStableOffset: leo + 3})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(TxnIndexFileName(dir, 0))
		if err != nil || st.Size() != int64(len(entries))*abortedTxnSize {
			t.Fatalf("index of %d entries: %v size %d", len(entries), err, st.Size())
		}
		l = open()
		defer l.Close()
		if got, want := l.CollectAbortedTransactions(0, l.LogEndOffset()), refCollect(entries, 0, l.LogEndOffset()); !reflect.DeepEqual(got, want) {
			t.Fatalf("aborted after reopen\n%+v\nwant\n%+v", got, want)
		}
	})
}

// txnIndexSeeds are the real index and variations of it.
func txnIndexSeeds(src txnFuzzLog) [][]byte {
	idx := src.index
	mod := func(fn func(b []byte) []byte) []byte { return fn(append([]byte(nil), idx...)) }
	return [][]byte{
		idx,
		{},
		idx[:abortedTxnSize],   // the first entry only
		idx[:abortedTxnSize+7], // a torn tail
		idx[:5],                // only a torn entry
		mod(func(b []byte) []byte { b[1] = 1; return b }),    // version 1: corrupt
		mod(func(b []byte) []byte { b[0] = 0xff; return b }), // negative version: read
		mod(func(b []byte) []byte { // last offset below the base: corrupt
			binary.BigEndian.PutUint64(b[18:], ^uint64(0))
			return b
		}),
		mod(func(b []byte) []byte { // entries out of order: believed
			return append(append([]byte(nil), b[abortedTxnSize:]...), b[:abortedTxnSize]...)
		}),
		mod(func(b []byte) []byte { // a last offset far ahead: no room for a new marker
			binary.BigEndian.PutUint64(b[abortedTxnSize+18:], 1<<40)
			return b
		}),
		mod(func(b []byte) []byte { // an LSO that ends collection early
			binary.BigEndian.PutUint64(b[26:], 0)
			return b
		}),
	}
}

// FuzzParseEndTxnMarker: a control batch reads as Kafka's EndTransactionMarker from its
// first record only (ProducerAppendInfo.append), when that record's key is at least 4 bytes
// with a version >= 0 and type ABORT (0) or COMMIT (1), and its value at least 6 bytes with
// a version >= 0; the coordinator epoch is value[2:6]. Anything else is ErrInvalidRecord
// (Kafka's InvalidRecordException, or IllegalArgumentException for another control type),
// never "no marker". A second record never changes the outcome. kafka-dump-log's rendering
// agrees with the type.
func FuzzParseEndTxnMarker(f *testing.F) {
	for _, s := range markerSeeds() {
		f.Add(s.key, s.value, s.logAppendTime)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, logAppendTime bool) {
		h := recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl, BaseTimestamp: 1_700_000_000_000,
			MaxTimestamp: 1_700_000_000_777, ProducerID: 5, ProducerEpoch: 1, BaseSequence: -1}
		if logAppendTime {
			h.Attributes |= recordbatch.AttrLogAppendTime
		}
		if len(key) == 0 {
			key = nil
		}
		if len(value) == 0 {
			value = nil
		}
		raw, err := recordbatch.Build(h, []recordbatch.Record{{TimestampDelta: 3, Key: key, Value: value}}, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		b := recordbatch.Batch(raw)
		m, ok, perr := parseEndTxnMarker(b)
		// EndTransactionMarker.deserialize: key of at least 4 bytes with a version >= 0 and
		// type ABORT (0) or COMMIT (1); value of at least 6 bytes with a version >= 0.
		// Everything else is refused, never read as "no marker".
		typ := int16(-1)
		wantOK := len(key) >= 4 && len(value) >= 6
		if len(key) >= 4 {
			typ = int16(binary.BigEndian.Uint16(key[2:]))
			wantOK = wantOK && int16(binary.BigEndian.Uint16(key)) >= 0 && (typ == 0 || typ == 1)
		}
		if len(value) >= 2 {
			wantOK = wantOK && int16(binary.BigEndian.Uint16(value)) >= 0
		}
		if ok != wantOK {
			t.Fatalf("key %x value %x: ok %t (%v), want %t", key, value, ok, perr, wantOK)
		}
		if ok == (perr != nil) {
			t.Fatalf("key %x value %x: ok %t with error %v", key, value, ok, perr)
		}
		if perr != nil && !errors.Is(perr, ErrInvalidRecord) {
			t.Fatalf("key %x value %x: error %v is not ErrInvalidRecord", key, value, perr)
		}
		// Only the first record counts (ProducerAppendInfo.append reads one): a well-formed
		// COMMIT after it changes nothing, and a broken record after a marker is not read.
		second := recordbatch.Record{OffsetDelta: 1, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 99}}
		if ok {
			second = recordbatch.Record{OffsetDelta: 1, Key: []byte{0xff, 0xff}}
		}
		h2 := h
		h2.LastOffsetDelta = 1
		raw2, err := recordbatch.Build(h2, []recordbatch.Record{{TimestampDelta: 3, Key: key, Value: value}, second}, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		m2, ok2, perr2 := parseEndTxnMarker(recordbatch.Batch(raw2))
		if ok2 != ok || m2 != m || (perr2 != nil) != (perr != nil) {
			t.Fatalf("key %x value %x: with a second record %+v %t %v, alone %+v %t %v", key, value, m2, ok2, perr2, m, ok, perr)
		}
		var rendered string
		if err := b.ForEachRecord(false, func(r *recordbatch.Record) error { rendered = controlRecordString(r); return nil }); err != nil {
			t.Fatal(err)
		}
		if !ok {
			if (typ == 0 || typ == 1) != strings.HasPrefix(rendered, " endTxnMarker: ") {
				t.Fatalf("no marker rendered as %q", rendered)
			}
			return
		}
		wantTS := int64(1_700_000_000_003)
		if logAppendTime {
			wantTS = 1_700_000_000_777
		}
		epoch := int32(binary.BigEndian.Uint32(value[2:]))
		if m.commit != (typ == 1) || m.coordinatorEpoch != epoch || m.timestamp != wantTS {
			t.Fatalf("key %x value %x: %+v", key, value, m)
		}
		name := map[bool]string{true: "COMMIT", false: "ABORT"}[m.commit]
		if want := fmt.Sprintf(" endTxnMarker: %s coordinatorEpoch: %d", name, epoch); rendered != want {
			t.Fatalf("rendered %q, want %q", rendered, want)
		}
		// The builder's markers read back the same.
		again, ok, err := parseEndTxnMarker(endTxnMarkerBatch(5, 1, m.commit, m.coordinatorEpoch, 42))
		if err != nil || !ok || again.commit != m.commit || again.coordinatorEpoch != m.coordinatorEpoch || again.timestamp != 42 {
			t.Fatalf("endTxnMarkerBatch round trip: %+v %t %v", again, ok, err)
		}
	})
}

type markerSeed struct {
	key, value    []byte
	logAppendTime bool
}

func markerSeeds() []markerSeed {
	return []markerSeed{
		{[]byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 5}, false},                // ABORT, epoch 5 (what the broker writes)
		{[]byte{0, 0, 0, 1}, []byte{0, 0, 0x7f, 0xff, 0xff, 0xff}, true},     // COMMIT, max epoch, log-append time
		{[]byte{0, 0, 0, 2}, []byte{0, 0, 0, 1}, false},                      // LEADER_CHANGE
		{[]byte{0, 0, 0, 7}, nil, false},                                     // unknown type
		{[]byte{0, 0}, nil, false},                                           // short key
		{nil, nil, false},                                                    // null key
		{[]byte{0, 0, 0, 1}, []byte{0, 0, 0, 5}, false},                      // short value
		{[]byte{0xff, 0xff, 0, 1}, []byte{0, 0, 0, 0, 0, 1}, false},          // negative key version
		{[]byte{0, 0, 0, 0}, []byte{0xff, 0xff, 0, 0, 0, 1}, false},          // negative value version
		{[]byte{0, 1, 0, 1, 9, 9}, []byte{0, 1, 0, 0, 0, 1, 1, 2, 3}, false}, // newer versions with extra bytes
	}
}

// txnSegmentSeed is a log segment of transactional batches and markers, for
// FuzzRecoverSegment: recovery rebuilds the aborted index and replays producer state.
func txnSegmentSeed(t testing.TB) []byte {
	ts := int64(1_700_000_000_000)
	var out []byte
	off := int64(0)
	add := func(b []byte) {
		rb := recordbatch.Batch(b)
		rb.SetBaseOffset(off)
		rb.SetCRC()
		off = rb.NextOffset()
		out = append(out, rb...)
	}
	add(txnBatch(t, 1, 0, 0, keysN("a", 3), ts, true))
	add(txnBatch(t, 2, 0, 0, keysN("b", 2), ts, true))
	add(endTxnMarkerBatch(1, 0, false, 1, ts))
	add(makeBatch(t, 2, 10, ts, recordbatch.None, true))
	add(endTxnMarkerBatch(2, 0, true, 1, ts))
	add(txnBatch(t, 1, 1, 0, keysN("c", 1), ts, true)) // an open transaction at the end
	return out
}

// TestWriteTxnFuzzSeeds writes the committed corpora; it does nothing unless asked.
func TestWriteTxnFuzzSeeds(t *testing.T) {
	if os.Getenv("SAMSA_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set SAMSA_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz")
	}
	write := func(target, name string, args ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		sb.WriteString("go test fuzz v1\n")
		for _, a := range args {
			switch v := a.(type) {
			case []byte:
				fmt.Fprintf(&sb, "[]byte(%q)\n", v)
			case bool:
				fmt.Fprintf(&sb, "bool(%t)\n", v)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range txnIndexSeeds(txnFuzzSource(t)) {
		write("FuzzTxnIndexFile", fmt.Sprintf("seed-%02d", i), s)
	}
	for i, s := range markerSeeds() {
		write("FuzzParseEndTxnMarker", fmt.Sprintf("seed-%02d", i), s.key, s.value, s.logAppendTime)
	}
	seg := txnSegmentSeed(t)
	write("FuzzRecoverSegment", "txn-markers", seg)
	write("FuzzRecoverSegment", "txn-markers-cut", seg[:len(seg)-20])
}
