package integration

// Recovery of the transaction index after kill -9: one broker (so the restarted broker
// rebuilds everything itself: the partition's log, producer state and .txnindex files, and
// __transaction_state), a one-partition topic with small segments written by two
// interleaved franz-go transactional producers (aborted ranges overlap committed data of the
// other producer) and a third whose transaction is still open at the kill. The
// log.flush.interval.* settings stay at Kafka's never-flush defaults, and no periodic
// recovery-point checkpoint is written (log.flush.offset.checkpoint.interval.ms is an hour),
// so after the kill recovery re-reads every segment from the checkpointed recovery point
// on, and the .txnindex entries must come back byte for byte as Kafka writes them
// (AbortedTxn: version int16 0, producerId, firstOffset, lastOffset, lastStableOffset).

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnIndexRecoveryAfterKill9 runs two variants side by side:
//
//   - deleted: no recovery-point checkpoint was ever written (recovery point 0), and every
//     .txnindex is removed after the kill: recovery rebuilds them all from the log, from a
//     producer-state replay that starts at offset 0.
//   - checkpointed: a recovery-point checkpoint is forced in the middle (deleting a scratch
//     topic checkpoints the dir, LogManager.asyncDelete), after an aborted transaction began
//     below that point and before its ABORT marker; segments below it keep their
//     .txnindex, and a stale entry is appended to the files recovery must reset. The
//     rebuilt entry of the spanning transaction needs its first offset, below the
//     recovery point, from the producer snapshot its replay starts from.
//
// Both then check the .txnindex files, the LSO (stuck at the open transaction's first
// offset until its timeout aborts it after the restart, then equal to the high watermark),
// read_committed and read_uncommitted readers, and a commit by a surviving producer.
func TestTxnIndexRecoveryAfterKill9(t *testing.T) {
	for _, variant := range []string{"deleted", "checkpointed"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			txnRecRun(t, variant == "checkpointed")
		})
	}
}

// txnRecHungTimeout is the transaction timeout of the producer left open at the kill: long
// enough for the kill and restart, short for the test.
const txnRecHungTimeout = 9 * time.Second

// txnRecAborted is one AbortedTxn entry of a .txnindex.
type txnRecAborted struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

func (a txnRecAborted) String() string {
	return fmt.Sprintf("{pid %d first %d last %d lso %d}", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
}

// txnRecModel follows the partition as the test writes it: every offset, which
// transaction each record belongs to, and the aborted-transaction entries Kafka's
// ProducerStateManager.completeTxn would index.
type txnRecModel struct {
	t       testing.TB
	adm     *kadm.Client
	topic   string
	next    int64            // log end offset
	open    map[string]int64 // producer -> first offset of its transaction on the partition
	pids    map[string]int64
	recs    []txnRecRecord
	pending map[string][]int // producer -> indexes into recs of its open transaction
	aborted []txnRecAborted
}

type txnRecRecord struct {
	offset int64
	value  string
	state  int // 0 open, 1 committed, 2 aborted
}

type txnRecProducer struct {
	name string
	cl   *kgo.Client
}

func (m *txnRecModel) producer(c *Cluster, name string, timeout time.Duration) *txnRecProducer {
	m.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.TransactionalID("txnrec-"+name),
		kgo.TransactionTimeout(timeout), kgo.DefaultProduceTopic(m.topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // the records' bytes fill the small segments
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.WithLogger(kgoTestLogger(m.t)))
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(cl.Close)
	return &txnRecProducer{name: name, cl: cl}
}

func (m *txnRecModel) begin(p *txnRecProducer) {
	m.t.Helper()
	if err := p.cl.BeginTransaction(); err != nil {
		m.t.Fatalf("%s: begin: %v", p.name, err)
	}
}

// produce writes n records one batch each and checks they land at the model's offsets.
func (m *txnRecModel) produce(p *txnRecProducer, tag string, n int) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s-%s-%d-%s", p.name, tag, i, strings.Repeat("x", 120))
		r, err := p.cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).First()
		if err != nil {
			m.t.Fatalf("%s: produce %s: %v", p.name, v[:len(v)-121], err)
		}
		if r.Offset != m.next {
			m.t.Fatalf("%s: record at offset %d, the model expected %d", p.name, r.Offset, m.next)
		}
		if old, ok := m.pids[p.name]; ok && old != r.ProducerID {
			m.t.Fatalf("%s: producer id %d, was %d", p.name, r.ProducerID, old)
		}
		m.pids[p.name] = r.ProducerID
		if _, ok := m.open[p.name]; !ok {
			m.open[p.name] = m.next
		}
		m.pending[p.name] = append(m.pending[p.name], len(m.recs))
		m.recs = append(m.recs, txnRecRecord{offset: m.next, value: v})
		m.next++
	}
}

// end commits or aborts p's transaction and waits for its marker, so that every later
// write lands after it.
func (m *txnRecModel) end(p *txnRecProducer, commit bool) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	how := kgo.TryAbort
	if commit {
		how = kgo.TryCommit
	}
	if err := p.cl.EndTransaction(ctx, how); err != nil {
		m.t.Fatalf("%s: end transaction (commit %v): %v", p.name, commit, err)
	}
	m.marker(p.name, commit)
}

// marker records the marker of name's transaction at the log end and waits for it.
func (m *txnRecModel) marker(name string, commit bool) {
	m.t.Helper()
	first, ok := m.open[name]
	if !ok {
		m.t.Fatalf("%s: no transaction open on the partition", name)
	}
	at := m.next
	m.next++
	delete(m.open, name)
	state := 2
	if commit {
		state = 1
	}
	for _, i := range m.pending[name] {
		m.recs[i].state = state
	}
	delete(m.pending, name)
	if !commit {
		lso := at + 1 // ProducerStateManager.completeTxn: firstUndecidedOffset, else lastOffset+1
		for _, f := range m.open {
			lso = min(lso, f)
		}
		m.aborted = append(m.aborted, txnRecAborted{m.pids[name], first, at, lso})
	}
	m.waitEnd(m.next, 30*time.Second)
}

// waitEnd waits for the high watermark to reach end (and fails if it passes it).
func (m *txnRecModel) waitEnd(end int64, timeout time.Duration) {
	m.t.Helper()
	waitFor(m.t, timeout, func() error {
		hw, _ := m.offsets()
		if hw > end {
			m.t.Fatalf("%s: high watermark %d, past the model's %d", m.topic, hw, end)
		}
		if hw != end {
			return fmt.Errorf("%s: high watermark %d, want %d", m.topic, hw, end)
		}
		return nil
	})
}

// offsets is the partition's high watermark and last stable offset (ListOffsets at
// read_uncommitted and read_committed).
func (m *txnRecModel) offsets() (hw, lso int64) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get := func(l kadm.ListedOffsets, err error) int64 {
		if err != nil {
			m.t.Fatalf("list offsets %s: %v", m.topic, err)
		}
		o, ok := l.Lookup(m.topic, 0)
		if !ok {
			m.t.Fatalf("list offsets %s: no partition 0", m.topic)
		}
		if o.Err != nil {
			m.t.Fatalf("list offsets %s-0: %v", m.topic, o.Err)
		}
		return o.Offset
	}
	hw = get(m.adm.ListEndOffsets(ctx, m.topic))
	lso = get(m.adm.ListCommittedOffsets(ctx, m.topic))
	return hw, lso
}

// waitSettled waits until none of the transactional ids is in PrepareCommit/PrepareAbort.
func (m *txnRecModel) waitSettled(ids ...string) {
	m.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		described, err := m.adm.DescribeTransactions(ctx, ids...)
		cancel()
		pending := ""
		if err != nil {
			pending = err.Error()
		}
		described.Each(func(d kadm.DescribedTransaction) {
			if d.Err != nil || d.State == "PrepareCommit" || d.State == "PrepareAbort" {
				pending = fmt.Sprintf("%s: %s %v", d.TxnID, d.State, d.Err)
			}
		})
		if pending == "" {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("transactions not settled after 30s: %s", pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (m *txnRecModel) values(keep func(txnRecRecord) bool) []string {
	var out []string
	for _, r := range m.recs {
		if keep(r) {
			out = append(out, r.value)
		}
	}
	return out
}

// txnRecSegments lists a partition directory's segment base offsets and its .txnindex
// files' entries by base offset (a missing file is no entries).
func txnRecSegments(t testing.TB, dir string) ([]int64, map[int64][]txnRecAborted) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	idx := map[int64][]txnRecAborted{}
	for _, e := range ents {
		name := e.Name()
		base, err := strconv.ParseInt(strings.SplitN(name, ".", 2)[0], 10, 64)
		if err != nil || len(name) < 20 {
			continue
		}
		switch name[20:] {
		case ".log":
			bases = append(bases, base)
		case ".txnindex":
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if len(data)%34 != 0 {
				t.Errorf("%s: %d bytes, not a whole number of 34-byte entries", name, len(data))
			}
			be := binary.BigEndian
			for p := data; len(p) >= 34; p = p[34:] {
				if v := int16(be.Uint16(p)); v != 0 {
					t.Errorf("%s: entry version %d, want 0", name, v)
				}
				idx[base] = append(idx[base], txnRecAborted{int64(be.Uint64(p[2:])), int64(be.Uint64(p[10:])),
					int64(be.Uint64(p[18:])), int64(be.Uint64(p[26:]))})
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, idx
}

// txnRecExpectedIndex files each aborted transaction under the segment holding its ABORT
// marker.
func txnRecExpectedIndex(bases []int64, aborted []txnRecAborted) map[int64][]txnRecAborted {
	out := map[int64][]txnRecAborted{}
	for _, a := range aborted {
		seg := bases[0]
		for _, b := range bases {
			if b <= a.LastOffset {
				seg = b
			}
		}
		out[seg] = append(out[seg], a)
	}
	return out
}

func txnRecCheckIndex(t testing.TB, what string, got, want map[int64][]txnRecAborted) {
	t.Helper()
	var bases []int64
	for b := range got {
		bases = append(bases, b)
	}
	for b := range want {
		if _, ok := got[b]; !ok {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for _, b := range bases {
		if fmt.Sprint(got[b]) != fmt.Sprint(want[b]) {
			t.Errorf("%s: %020d.txnindex holds %v, want %v", what, b, got[b], want[b])
		}
	}
}

// txnRecRecoveryPoint reads the topic's partition 0 from the dir's
// recovery-point-offset-checkpoint (-1 when the file or the line is missing).
func txnRecRecoveryPoint(t testing.TB, logDir, topic string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(logDir, "recovery-point-offset-checkpoint"))
	if os.IsNotExist(err) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == topic && f[1] == "0" {
			off, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("recovery-point-offset-checkpoint line %q: %v", line, err)
			}
			return off
		}
	}
	return -1
}

func txnRecRun(t *testing.T, checkpointed bool) {
	c := StartCluster(t, ClusterConfig{Brokers: 1, Process: true, Props: txnProps(map[string]string{
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		// Only the test's forced checkpoint (checkpointed) writes the recovery point.
		"log.flush.offset.checkpoint.interval.ms": "3600000",
		// A killed broker's registration must expire before the restarted one registers.
		"zookeeper.session.timeout.ms": "3000",
	})})
	b := c.Broker(0)
	topic := "txnrec-deleted"
	if checkpointed {
		topic = "txnrec-checkpointed"
	}
	createTopic(t, c, topic, 1, 1, map[string]*string{
		"segment.bytes":       kadm.StringPtr("2048"),
		"min.insync.replicas": kadm.StringPtr("1"),
	})
	// Deleting a topic checkpoints the dir's recovery points; spares in case the first
	// delete comes before the roll flush moved this log's recovery point.
	scratch := []string{"txnrec-scratch-0", "txnrec-scratch-1", "txnrec-scratch-2"}
	if checkpointed {
		for _, s := range scratch {
			createTopic(t, c, s, 1, 1, nil)
		}
	}
	m := &txnRecModel{t: t, adm: adminClient(t, c), topic: topic,
		open: map[string]int64{}, pids: map[string]int64{}, pending: map[string][]int{}}
	pa := m.producer(c, "a", time.Minute)
	pb := m.producer(c, "b", time.Minute)
	start := time.Now()

	// Round 1: a's aborted transaction holds b's committed records inside its range.
	m.begin(pa)
	m.produce(pa, "r1", 3)
	m.begin(pb)
	m.produce(pb, "r1", 3)
	m.produce(pa, "r1b", 2)
	m.end(pa, false) // LSO: b's first offset
	m.produce(pb, "r1b", 2)
	m.end(pb, true)
	// Round 2: the other way round.
	m.begin(pa)
	m.produce(pa, "r2", 3)
	m.begin(pb)
	m.produce(pb, "r2", 4)
	m.end(pb, false) // LSO: a's first offset
	m.produce(pa, "r2b", 2)
	m.end(pa, true)
	// Round 3: a's transaction spans segments (and, checkpointed, the recovery point).
	m.begin(pa)
	m.produce(pa, "r3", 2)
	spanFirst := m.open["a"]
	m.begin(pb)
	m.produce(pb, "r3", 16) // over 2 KiB: the segment rolls
	if checkpointed {
		// The roll flush moves the recovery point to the new segment's base; deleting a
		// topic writes it to the checkpoint (as LogManager.asyncDelete).
		for i, s := range scratch {
			time.Sleep(300 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if _, err := m.adm.DeleteTopics(ctx, s); err != nil {
				t.Fatalf("delete %s: %v", s, err)
			}
			cancel()
			waitFor(t, 20*time.Second, func() error {
				data, err := os.ReadFile(filepath.Join(b.Dir, "recovery-point-offset-checkpoint"))
				if err != nil || strings.Contains(string(data), s+" ") {
					return fmt.Errorf("no recovery-point checkpoint without %s yet (%v)", s, err)
				}
				return nil
			})
			rp := txnRecRecoveryPoint(t, b.Dir, topic)
			if rp > spanFirst {
				break
			}
			if i == len(scratch)-1 {
				t.Fatalf("recovery point %d checkpointed after %d deletes; want it past %d", rp, len(scratch), spanFirst)
			}
			t.Logf("recovery point %d checkpointed; not past %d yet, deleting another topic", rp, spanFirst)
		}
	}
	m.end(pb, true)
	m.produce(pa, "r3b", 2)
	m.end(pa, false) // LSO: its own marker + 1
	spanMarker := m.aborted[len(m.aborted)-1].LastOffset
	// Round 4: several short ones across more segments.
	for i := 0; i < 4; i++ {
		m.begin(pb)
		m.produce(pb, fmt.Sprintf("r4.%d", i), 3)
		m.begin(pa)
		m.produce(pa, fmt.Sprintf("r4.%d", i), 3)
		m.end(pb, i%2 == 0)
		m.produce(pa, fmt.Sprintf("r4.%db", i), 1)
		m.end(pa, i%2 == 1)
	}
	// The hung transaction, then a commit and an abort after it.
	pc := m.producer(c, "c", txnRecHungTimeout)
	m.begin(pc)
	m.produce(pc, "hung", 3)
	hungStart := time.Now() // its transaction started a little before
	hungFirst := m.open["c"]
	m.begin(pb)
	m.produce(pb, "r5", 2)
	m.end(pb, true)
	m.begin(pa)
	m.produce(pa, "r5", 2)
	m.end(pa, false) // LSO: c's first offset
	t.Logf("%d records and markers written in %v, %d aborted transactions", m.next, time.Since(start).Round(time.Millisecond), len(m.aborted))

	dir := filepath.Join(b.Dir, topic+"-0")
	bases, before := txnRecSegments(t, dir)
	files := 0
	for _, es := range before {
		if len(es) > 0 {
			files++
		}
	}
	if len(bases) < 5 || files < 3 {
		t.Fatalf("before the kill: segments %v, %d .txnindex files with entries; the test wants several of each", bases, files)
	}
	txnRecCheckIndex(t, "before the kill", before, txnRecExpectedIndex(bases, m.aborted))
	if hw, lso := m.offsets(); hw != m.next || lso != hungFirst {
		t.Errorf("before the kill: high watermark %d, LSO %d; want %d and %d", hw, lso, m.next, hungFirst)
	}

	// The coordinator writes CompleteCommit/CompleteAbort to __transaction_state only after
	// the markers are in: a kill before that would leave a Prepare state whose markers the
	// restarted coordinator writes again (as Kafka's does), one more control batch than this
	// test counts. Wait until a and b have settled.
	m.waitSettled("txnrec-a", "txnrec-b")
	b.Kill()
	if _, err := os.Stat(filepath.Join(b.Dir, ".kafka_cleanshutdown")); err == nil {
		t.Fatal("a .kafka_cleanshutdown marker after kill -9")
	}
	rp := txnRecRecoveryPoint(t, b.Dir, topic)
	firstRecovered := bases[0]
	for _, base := range bases {
		if base <= rp {
			firstRecovered = base
		}
	}
	if checkpointed {
		// The spanning transaction began in a segment recovery does not touch and ended
		// in one it does.
		if !(spanFirst < firstRecovered && firstRecovered <= spanMarker) {
			t.Fatalf("recovery point %d (segment %d): want the transaction at %d..%d to span it", rp, firstRecovered, spanFirst, spanMarker)
		}
		stale := txnRecAborted{ProducerID: 999999, FirstOffset: 0, LastOffset: 0, LastStableOffset: 0}
		n := 0
		for _, base := range bases {
			if base < firstRecovered {
				continue
			}
			stale.FirstOffset, stale.LastOffset, stale.LastStableOffset = base, base+1_000_000, base
			buf := make([]byte, 34)
			be := binary.BigEndian
			be.PutUint64(buf[2:], uint64(stale.ProducerID))
			be.PutUint64(buf[10:], uint64(stale.FirstOffset))
			be.PutUint64(buf[18:], uint64(stale.LastOffset))
			be.PutUint64(buf[26:], uint64(stale.LastStableOffset))
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%020d.txnindex", base)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(buf)
			f.Close()
			n++
		}
		t.Logf("recovery point %d: segments %v, recovery from %d; a stale entry appended to %d .txnindex files it must reset", rp, bases, firstRecovered, n)
	} else {
		if rp > 0 {
			t.Fatalf("recovery point %d in the checkpoint; this variant wants none", rp)
		}
		n := 0
		for _, base := range bases {
			if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.txnindex", base))); err == nil {
				n++
			} else if !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		t.Logf("recovery point %d: segments %v; %d .txnindex files deleted", rp, bases, n)
	}

	restart := time.Now()
	b.Restart()
	waitLeaders(t, c, topic, 1)
	t.Logf("restarted in %v (%v after the hung transaction's writes)", time.Since(restart).Round(time.Millisecond), time.Since(hungStart).Round(time.Millisecond))

	// Still open: the LSO is the hung transaction's first offset until its ABORT marker.
	hw, lso := m.offsets()
	since := time.Since(hungStart)
	switch {
	case hw == m.next:
		if lso != hungFirst {
			t.Errorf("after the restart, %v into the hung transaction: LSO %d, want its first offset %d (high watermark %d)", since.Round(time.Millisecond), lso, hungFirst, hw)
		}
		if since < txnRecHungTimeout/2 {
			want := m.values(func(r txnRecRecord) bool { return r.state == 1 && r.offset < hungFirst })
			got := txnValues(txnReadKgo(t, c, topic, true, len(want), 300*time.Millisecond))
			txnSameStrings(t, "read_committed while the transaction is open", got, want)
		} else {
			t.Logf("restart took until %v after the hung writes: read_committed not checked while it is open", since.Round(time.Millisecond))
		}
	case hw == m.next+1 && since >= txnRecHungTimeout*3/4:
		t.Logf("restart took until %v after the hung writes (timeout %v): the transaction was already aborted; its open state not observed", since.Round(time.Millisecond), txnRecHungTimeout)
	default:
		t.Errorf("after the restart, %v into the hung transaction: high watermark %d, LSO %d; want %d and %d", since.Round(time.Millisecond), hw, lso, m.next, hungFirst)
	}
	_, afterRestart := txnRecSegments(t, dir)
	txnRecCheckIndex(t, "after the restart", afterRestart, txnRecExpectedIndex(bases, m.aborted))

	// The coordinator (its state recovered from __transaction_state) aborts it on time.
	m.marker("c", false)
	aborted := time.Since(hungStart)
	t.Logf("hung transaction aborted %v after its writes (timeout %v)", aborted.Round(time.Millisecond), txnRecHungTimeout)
	if aborted < txnRecHungTimeout*3/4 {
		t.Errorf("hung transaction aborted %v after its writes, before its %v timeout", aborted, txnRecHungTimeout)
	}
	// A producer from before the kill commits again.
	m.begin(pb)
	m.produce(pb, "after", 2)
	m.end(pb, true)
	if hw, lso := m.offsets(); hw != m.next || lso != hw {
		t.Errorf("at the end: high watermark %d, LSO %d; want both %d", hw, lso, m.next)
	}
	bases, final := txnRecSegments(t, dir)
	txnRecCheckIndex(t, "at the end", final, txnRecExpectedIndex(bases, m.aborted))
	committed := m.values(func(r txnRecRecord) bool { return r.state == 1 })
	all := m.values(func(txnRecRecord) bool { return true })
	gotC := txnValues(txnReadKgo(t, c, topic, true, len(committed), 500*time.Millisecond))
	gotU := txnValues(txnReadKgo(t, c, topic, false, len(all), 300*time.Millisecond))
	txnSameStrings(t, "read_committed", gotC, committed)
	txnSameStrings(t, "read_uncommitted", gotU, all)
	t.Logf("%d aborted transactions indexed in %d segments; %d committed of %d records", len(m.aborted), len(bases), len(committed), len(all))
}
