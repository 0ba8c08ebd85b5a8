package logstore

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// memLog is an in-memory compactLog: segments of raw batches. It lets the cleaner's
// algorithm be checked against a model quickly, apart from the file mechanics.
type memLog struct {
	tp    TopicPartition
	cfg   LogConfig
	segs  []memSeg
	start int64
	leo   int64
	hw    int64
	// lso < 0: the LSO is the high watermark. aborted is the transaction index.
	lso     int64
	aborted []AbortedTxn
}

type memSeg struct {
	base    int64
	batches [][]byte
}

func (l *memLog) TopicPartition() TopicPartition { return l.tp }
func (l *memLog) Config() LogConfig              { return l.cfg }
func (l *memLog) LogStartOffset() int64          { return l.start }
func (l *memLog) LogEndOffset() int64            { return l.leo }
func (l *memLog) HighWatermark() int64           { return l.hw }
func (l *memLog) LastStableOffset() int64 {
	if l.lso > 0 && l.lso < l.hw {
		return l.lso
	}
	return l.hw
}

func (l *memLog) collectAbortedTransactions(start, upper int64) []AbortedTxn {
	var out []AbortedTxn
	for _, a := range l.aborted {
		if a.LastOffset >= start && a.FirstOffset < upper {
			out = append(out, a)
		}
	}
	return out
}

// lastRecordsOfActiveProducers scans the log (memLog keeps no producer state).
func (l *memLog) lastRecordsOfActiveProducers() map[int64]lastRecord {
	out := map[int64]lastRecord{}
	for _, s := range l.segs {
		for _, raw := range s.batches {
			b := recordbatch.Batch(raw)
			pid := b.ProducerID()
			if pid < 0 {
				continue
			}
			lr, ok := out[pid]
			if !ok {
				lr.lastDataOffset = -1
			}
			lr.epoch = b.ProducerEpoch()
			if !b.Control() {
				lr.lastDataOffset = b.LastOffset()
			}
			out[pid] = lr
		}
	}
	return out
}

func (l *memLog) Segments() []SegmentInfo {
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		info := SegmentInfo{BaseOffset: s.base, LargestTimestamp: -1, FirstBatchTimestamp: -1}
		if i+1 < len(l.segs) {
			info.NextOffset = l.segs[i+1].base
		} else {
			info.NextOffset = l.leo
			info.Active = true
		}
		for j, b := range s.batches {
			info.Size += int64(len(b))
			ts := recordbatch.Batch(b).MaxTimestamp()
			info.LargestTimestamp = max(info.LargestTimestamp, ts)
			if j == 0 {
				info.FirstBatchTimestamp = ts
			}
		}
		out[i] = info
	}
	return out
}

func (l *memLog) forEachBatch(base int64, fn func(recordbatch.Batch) error) error {
	for _, s := range l.segs {
		if s.base != base {
			continue
		}
		for _, b := range s.batches {
			if err := recordbatch.Validate(recordbatch.Batch(b)); err != nil {
				return err
			}
			if err := fn(recordbatch.Batch(b)); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("no segment %d", base)
}

func (l *memLog) replaceWithCleaned(base int64, old []int64, emit func(func([]byte) error, func(AbortedTxn) error) error) error {
	ns := memSeg{base: base}
	if err := emit(func(b []byte) error { ns.batches = append(ns.batches, append([]byte(nil), b...)); return nil },
		func(AbortedTxn) error { return nil }); err != nil {
		return err
	}
	drop := make(map[int64]bool)
	for _, b := range old {
		drop[b] = true
	}
	var segs []memSeg
	inserted := false
	for _, s := range l.segs {
		if drop[s.base] {
			if !inserted {
				segs = append(segs, ns)
				inserted = true
			}
			continue
		}
		segs = append(segs, s)
	}
	l.segs = segs
	return nil
}

// roll starts a new active segment at the LEO unless the active one is empty (a real log
// never has two segments with one base offset).
func (l *memLog) roll() {
	if n := len(l.segs); n > 0 && l.segs[n-1].base == l.leo {
		return
	}
	l.segs = append(l.segs, memSeg{base: l.leo})
}

// append adds one batch of records (key, value; value nil = tombstone) at the LEO.
func (l *memLog) append(t testing.TB, ts int64, recs []modelRecord) int64 {
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: r.key, Value: r.value}
	}
	h := recordbatch.Header{BaseOffset: l.leo, LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: ts,
		MaxTimestamp: ts + int64(len(recs)-1), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := recordbatch.Build(h, rs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.segs) == 0 {
		l.segs = append(l.segs, memSeg{base: l.leo})
	}
	last := &l.segs[len(l.segs)-1]
	last.batches = append(last.batches, b)
	base := l.leo
	l.leo += int64(len(recs))
	l.hw = l.leo
	return base
}

// records lists every record in the log as (offset, key, value, batch base, horizon).
func (l *memLog) records(t testing.TB) []modelRecord {
	var out []modelRecord
	prev := int64(-1)
	for _, s := range l.segs {
		for _, raw := range s.batches {
			b := recordbatch.Batch(raw)
			if err := recordbatch.Validate(b); err != nil {
				t.Fatalf("invalid batch at %d: %v", b.BaseOffset(), err)
			}
			if b.BaseOffset() <= prev {
				t.Fatalf("batch base %d not after %d", b.BaseOffset(), prev)
			}
			prev = b.LastOffset()
			hz, _ := b.DeleteHorizon()
			err := b.ForEachRecord(false, func(r *recordbatch.Record) error {
				out = append(out, modelRecord{offset: b.BaseOffset() + int64(r.OffsetDelta), key: cloneBytes(r.Key),
					value: cloneBytes(r.Value), batch: b.BaseOffset(), ts: b.BaseTimestamp() + r.TimestampDelta, horizon: hz})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

type modelRecord struct {
	offset     int64
	key, value []byte
	batch      int64
	ts         int64
	horizon    int64
}

func compactConfig(t testing.TB, overrides map[string]string) LogConfig {
	o := map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "1000"}
	for k, v := range overrides {
		o[k] = v
	}
	c, err := NewLogConfig(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompactionModel runs seeded random produce/roll/clean steps and checks after every
// pass that the log holds exactly what Kafka's rules keep: the latest record per key,
// original offsets and values and timestamps, tombstones until their batch's delete
// horizon (set by the first pass that retains them) has passed.
func TestCompactionModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	var passes, dropped int64
	for iter := 0; iter < 40; iter++ {
		rng := rand.New(rand.NewSource(seed + int64(iter)))
		p, d := runCompactionModel(t, rng, seed+int64(iter))
		passes += p
		dropped += d
	}
	t.Logf("%d cleaning passes, %d tombstones dropped", passes, dropped)
	if passes == 0 || dropped == 0 {
		t.Fatalf("model run too weak: %d passes, %d tombstones dropped", passes, dropped)
	}
}

func runCompactionModel(t *testing.T, rng *rand.Rand, seed int64) (passes, tombstonesDropped int64) {
	const deleteRetention = 1000
	l := &memLog{tp: TopicPartition{"compacted", 0}, cfg: compactConfig(t, nil)}
	l.cfg.SegmentBytes = 4 << 10
	nKeys := 1 + rng.Intn(20)
	now := int64(1_700_000_000_000)
	// model: surviving records by offset; batch horizons.
	model := map[int64]modelRecord{}
	horizon := map[int64]int64{}
	checkpoint, hasCheckpoint := int64(0), false

	for step := 0; step < 60; step++ {
		now += int64(rng.Intn(400))
		switch op := rng.Intn(10); {
		case op < 6:
			n := 1 + rng.Intn(5)
			recs := make([]modelRecord, n)
			for i := range recs {
				recs[i].key = []byte(fmt.Sprintf("k%d", rng.Intn(nKeys)))
				if rng.Intn(5) > 0 {
					recs[i].value = []byte(fmt.Sprintf("v%d-%d", step, i))
					if rng.Intn(10) == 0 {
						recs[i].value = []byte{} // empty is not null
					}
				}
			}
			base := l.append(t, now, recs)
			for i, r := range recs {
				r.offset, r.batch, r.ts = base+int64(i), base, now+int64(i)
				model[r.offset] = r
			}
		case op < 8:
			if l.leo > 0 {
				l.roll()
			}
		default:
			stats, _, err := compact(l, checkpoint, hasCheckpoint, time.UnixMilli(now), 1<<20, nil)
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			end := stats.EndOffset
			tombstonesDropped += stats.TombstonesDropped
			if end > stats.FirstDirty {
				passes++
				// latest offset per key in the dirty range
				latest := map[string]int64{}
				for off, r := range model {
					if off >= stats.FirstDirty && off < end {
						if cur, ok := latest[string(r.key)]; !ok || off > cur {
							latest[string(r.key)] = off
						}
					}
				}
				lastMapped := int64(-1)
				for _, off := range latest {
					lastMapped = max(lastMapped, off)
				}
				for off, r := range model {
					if off > lastMapped {
						continue
					}
					if f, ok := latest[string(r.key)]; ok && off < f {
						delete(model, off)
						continue
					}
					if r.value == nil {
						if h, ok := horizon[r.batch]; ok && now >= h {
							delete(model, off)
						}
					}
				}
				// batches that now retain tombstones get a horizon if they had none
				for off, r := range model {
					if off <= lastMapped && r.value == nil {
						if _, ok := horizon[r.batch]; !ok {
							horizon[r.batch] = now + deleteRetention
						}
					}
				}
				checkpoint, hasCheckpoint = end, true
			}
		}
	}
	got := l.records(t)
	if len(got) != len(model) {
		inLog := map[int64]bool{}
		for _, r := range got {
			inLog[r.offset] = true
		}
		for off, m := range model {
			if !inLog[off] {
				t.Errorf("seed %d: model offset %d %s=%q (tombstone %v, batch %d, horizon %d) missing from the log",
					seed, off, m.key, m.value, m.value == nil, m.batch, horizon[m.batch])
			}
		}
		t.Fatalf("seed %d: log has %d records, model %d (checkpoint %d)", seed, len(got), len(model), checkpoint)
	}
	for _, r := range got {
		m, ok := model[r.offset]
		if !ok {
			t.Fatalf("seed %d: offset %d (key %s) should have been cleaned", seed, r.offset, r.key)
		}
		if !bytes.Equal(r.key, m.key) || !bytes.Equal(r.value, m.value) || (r.value == nil) != (m.value == nil) || r.ts != m.ts {
			t.Fatalf("seed %d: offset %d got %s=%q ts %d, want %s=%q ts %d", seed, r.offset, r.key, r.value, r.ts, m.key, m.value, m.ts)
		}
		if r.value == nil && r.offset < checkpoint {
			if h, ok := horizon[r.batch]; !ok || r.horizon != h {
				t.Fatalf("seed %d: tombstone at %d horizon %d, want %d", seed, r.offset, r.horizon, h)
			}
		}
	}
	return passes, tombstonesDropped
}

// TestCompactionKeepsLatestAndHoles is a fixed scenario: offsets survive with holes, the
// active segment is untouched, tombstones go after delete.retention.ms.
func TestCompactionKeepsLatestAndHoles(t *testing.T) {
	l := &memLog{tp: TopicPartition{"c", 0}, cfg: compactConfig(t, nil)}
	now := int64(1_000_000)
	l.append(t, now, []modelRecord{{key: []byte("a"), value: []byte("1")}, {key: []byte("b"), value: []byte("1")}}) // 0,1
	l.append(t, now, []modelRecord{{key: []byte("a"), value: []byte("2")}})                                         // 2
	l.roll()
	l.append(t, now, []modelRecord{{key: []byte("b"), value: nil}, {key: []byte("c"), value: []byte("1")}}) // 3,4
	l.roll()
	l.append(t, now, []modelRecord{{key: []byte("a"), value: []byte("3")}}) // 5 (active)

	stats, _, err := compact(l, 0, false, time.UnixMilli(now), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.EndOffset != 5 || stats.FirstDirty != 0 {
		t.Fatalf("stats %+v", stats)
	}
	offs := func() (out []string) {
		for _, r := range l.records(t) {
			v := "null"
			if r.value != nil {
				v = string(r.value)
			}
			out = append(out, fmt.Sprintf("%d:%s=%s", r.offset, r.key, v))
		}
		return
	}
	want := "[2:a=2 3:b=null 4:c=1 5:a=3]"
	if got := fmt.Sprint(offs()); got != want {
		t.Fatalf("after first pass %s want %s", got, want)
	}
	// The retained tombstone's batch now carries a delete horizon of now + 1000.
	for _, s := range l.segs {
		for _, raw := range s.batches {
			b := recordbatch.Batch(raw)
			if b.BaseOffset() == 3 {
				if h, ok := b.DeleteHorizon(); !ok || h != now+1000 {
					t.Fatalf("horizon %d %v", h, ok)
				}
			}
		}
	}
	// New dirty data, cleaned before the horizon: the tombstone stays.
	l.roll()
	l.append(t, now+10, []modelRecord{{key: []byte("d"), value: []byte("1")}})
	l.roll()
	if _, _, err := compact(l, stats.EndOffset, true, time.UnixMilli(now+500), 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	// a=2 is superseded by a=3 (offset 5, dirty this time); the tombstone is kept.
	if got := fmt.Sprint(offs()); got != "[3:b=null 4:c=1 5:a=3 6:d=1]" {
		t.Fatalf("before horizon %s", got)
	}
	l.append(t, now+10, []modelRecord{{key: []byte("e"), value: []byte("1")}})
	l.roll()
	if _, _, err := compact(l, 7, true, time.UnixMilli(now+1000), 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(offs()); got != "[4:c=1 5:a=3 6:d=1 7:e=1]" {
		t.Fatalf("after horizon %s", got)
	}
	for _, r := range l.records(t) {
		if r.value == nil {
			t.Fatalf("tombstone survived its horizon: %+v", r)
		}
	}
	// Keys are unique below the cleaned end.
	seen := map[string]bool{}
	for _, r := range l.records(t) {
		if r.offset < 8 && seen[string(r.key)] {
			t.Fatalf("duplicate key %s below the cleaned end", r.key)
		}
		seen[string(r.key)] = true
	}
}

func TestCleanableOffsets(t *testing.T) {
	now := int64(10_000_000)
	mk := func(lag string) *memLog {
		l := &memLog{tp: TopicPartition{"c", 0}, cfg: compactConfig(t, map[string]string{"min.compaction.lag.ms": lag})}
		l.append(t, now-5000, []modelRecord{{key: []byte("a"), value: []byte("1")}})
		l.roll()
		l.append(t, now-100, []modelRecord{{key: []byte("a"), value: []byte("2")}})
		l.roll()
		l.append(t, now, []modelRecord{{key: []byte("a"), value: []byte("3")}})
		return l
	}
	cases := []struct {
		name             string
		lag              string
		cp               int64
		hasCP            bool
		hw               int64
		wantFD, wantFU   int64
		wantNeedNowLagMs string
	}{
		{"no lag: up to active", "0", 0, false, 3, 0, 2, ""},
		{"lag excludes young segment", "1000", 0, false, 3, 0, 1, ""},
		{"hw bounds", "0", 0, false, 1, 0, 1, ""},
		{"checkpoint used", "0", 1, true, 3, 1, 2, ""},
		{"checkpoint beyond LEO reset", "0", 99, true, 3, 0, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(c.lag)
			l.hw = c.hw
			fd, fu, _ := cleanableOffsets(l, c.cp, c.hasCP, now)
			if fd != c.wantFD || fu != c.wantFU {
				t.Fatalf("got [%d,%d) want [%d,%d)", fd, fu, c.wantFD, c.wantFU)
			}
		})
	}
	l := mk("0")
	l.cfg.MaxCompactionLagMs = 1000
	if _, _, needNow := cleanableOffsets(l, 0, false, now); !needNow {
		t.Fatal("max.compaction.lag.ms passed but not needed now")
	}
}

// TestCompactionRetainsEmptyProducerBatch: the batch holding an idempotent producer's last
// offset is kept as an empty batch with its offsets when all its records are cleaned.
func TestCompactionRetainsEmptyProducerBatch(t *testing.T) {
	l := &memLog{tp: TopicPartition{"c", 0}, cfg: compactConfig(t, nil)}
	now := int64(1_000_000)
	rs := []recordbatch.Record{{Key: []byte("a"), Value: []byte("1")}, {OffsetDelta: 1, Key: []byte("b"), Value: []byte("1")}}
	b, _ := recordbatch.Build(recordbatch.Header{BaseOffset: 0, LastOffsetDelta: 1, BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0}, rs, recordbatch.None)
	l.segs = []memSeg{{base: 0, batches: [][]byte{b}}}
	l.leo = 2
	l.append(t, now, []modelRecord{{key: []byte("a"), value: []byte("2")}, {key: []byte("b"), value: []byte("2")}})
	l.roll()
	l.append(t, now, []modelRecord{{key: []byte("z"), value: []byte("1")}})
	if _, _, err := compact(l, 0, false, time.UnixMilli(now), 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	first := recordbatch.Batch(l.segs[0].batches[0])
	if first.BaseOffset() != 0 || first.LastOffset() != 1 || first.RecordCount() != 0 || first.ProducerID() != 7 || !first.ValidCRC() {
		t.Fatalf("empty producer batch: base %d last %d count %d pid %d", first.BaseOffset(), first.LastOffset(), first.RecordCount(), first.ProducerID())
	}
	var offs []int64
	for _, r := range l.records(t) {
		offs = append(offs, r.offset)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	if fmt.Sprint(offs) != "[2 3 4]" {
		t.Fatalf("offsets %v", offs)
	}
}
