package integration

// Issue 13: transactions end to end with real clients against three brokers — sarama's
// transactional producer (commit, abort, TxnOffsetCommit through AddMessageToTxn and
// AddOffsetsToTxn), franz-go's GroupTransactSession in a consume-transform-produce chain,
// kcat with -X transactional.id, read_committed against read_uncommitted readers of each
// client, zombie fencing, a hung transaction aborted by the coordinator after its timeout,
// and `samsa transactions find-hanging` / `abort` on a transaction that no coordinator
// knows. The chaos copier is in txn_chaos_test.go. Helpers here are prefixed txn.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// txnStatePartitions keeps __transaction_state small in tests: creating Kafka's 50
// partitions with three replicas each costs seconds per cluster.
const txnStatePartitions = 5

// txnProps are the brokers' properties for transaction tests: a small __transaction_state
// (replication factor 3 as Kafka's default, so every test cluster has three brokers), and a
// coordinator that looks for timed-out transactions every 500 ms instead of every 10 s.
func txnProps(extra map[string]string) map[string]string {
	p := map[string]string{
		"transaction.state.log.num.partitions":                        strconv.Itoa(txnStatePartitions),
		"offsets.topic.num.partitions":                                "5",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// txnRec is one record as a test reader saw it.
type txnRec struct {
	partition int32
	offset    int64
	key       string
	value     string
}

// txnReadKgo reads every partition of topic from the start with a groupless kgo consumer at
// the given isolation level until it has want records, then keeps polling for settle so
// that records beyond want (duplicates, aborted data) are seen too. Records come back in
// partition, offset order.
func txnReadKgo(t testing.TB, c *Cluster, topic string, committed bool, want int, settle time.Duration) []txnRec {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond),
		kgo.WithLogger(kgoTestLogger(t)),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []txnRec
	deadline := time.Now().Add(60 * time.Second)
	var settleEnd time.Time
	for {
		now := time.Now()
		if len(got) >= want && settleEnd.IsZero() {
			settleEnd = now.Add(settle)
		}
		if !settleEnd.IsZero() && now.After(settleEnd) {
			break
		}
		if now.After(deadline) {
			t.Fatalf("%s (read_committed=%v): %d of %d records after 60s", topic, committed, len(got), want)
		}
		end := deadline
		if !settleEnd.IsZero() {
			end = settleEnd
		}
		ctx, cancel := context.WithDeadline(context.Background(), end)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch %s-%d: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, txnRec{r.Partition, r.Offset, string(r.Key), string(r.Value)})
		})
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].partition != got[j].partition {
			return got[i].partition < got[j].partition
		}
		return got[i].offset < got[j].offset
	})
	return got
}

// txnValues lists the records' values in partition, offset order.
func txnValues(rs []txnRec) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.value
	}
	return out
}

// txnOffsets lists every partition's high watermark (read_uncommitted) and last stable
// offset (read_committed) through ListOffsets.
func txnOffsets(t testing.TB, c *Cluster, topic string) (hw, lso map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := adminClient(t, c)
	collect := func(l kadm.ListedOffsets, err error) map[int32]int64 {
		if err != nil {
			t.Fatalf("list offsets %s: %v", topic, err)
		}
		out := map[int32]int64{}
		l.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				t.Fatalf("list offsets %s-%d: %v", topic, o.Partition, o.Err)
			}
			out[o.Partition] = o.Offset
		})
		return out
	}
	hw = collect(adm.ListEndOffsets(ctx, topic))
	lso = collect(adm.ListCommittedOffsets(ctx, topic))
	return hw, lso
}

// txnWaitStable waits until every partition's last stable offset equals its high
// watermark: no transaction is open on topic.
func txnWaitStable(t testing.TB, c *Cluster, topic string, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, func() error {
		hw, lso := txnOffsets(t, c, topic)
		for p, h := range hw {
			if lso[p] != h {
				return fmt.Errorf("%s-%d: last stable offset %d, high watermark %d", topic, p, lso[p], h)
			}
		}
		return nil
	})
}

// txnSameStrings fails the test unless got and want hold the same strings in the same order.
func txnSameStrings(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	t.Errorf("%s: got %d records, want %d", what, len(got), len(want))
	n := 0
	for i := 0; i < max(len(got), len(want)) && n < 10; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s: record %d is %q, want %q", what, i, g, w)
			n++
		}
	}
}

// ---- sarama ----

// TestTxnSarama: sarama's transactional SyncProducer (Config.Version 3.7 and sarama's
// default) copies records of an input topic into an output topic in three transactions,
// committing the consumed offsets of a group in each: one committed with AddMessageToTxn,
// one aborted, one committed with AddOffsetsToTxn that redoes the aborted work. sarama
// consumers with IsolationLevel ReadCommitted see the committed copies only, in order;
// ReadUncommitted ones see the aborted copies too; the group's offsets are those of the
// committed transactions only.
func TestTxnSarama(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: txnProps(nil)})
	for _, v := range []struct {
		name    string
		version *sarama.KafkaVersion
	}{
		{"V3_7_0_0", &sarama.V3_7_0_0},
		{"default", nil},
	} {
		t.Run(v.name, func(t *testing.T) { txnSaramaRun(t, c, v.name, v.version) })
	}
}

func txnSaramaConfig(t *testing.T, version *sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	if version != nil {
		cfg.Version = *version
	}
	cfg.ClientID = "samsa-it-" + strings.ReplaceAll(t.Name(), "/", "-")
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	return cfg
}

func txnSaramaRun(t *testing.T, c *Cluster, name string, version *sarama.KafkaVersion) {
	in, out := "txn-sarama-"+name+"-in", "txn-sarama-"+name+"-out"
	group, txnID := "txn-sarama-"+name, "txn-sarama-"+name
	const parts, n = 3, 30
	createTopic(t, c, in, parts, 3, nil)
	createTopic(t, c, out, parts, 3, nil)

	// The input: n plain records, spread over the partitions by key.
	pcfg := txnSaramaConfig(t, version)
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	saramaProduceSync(t, c, pcfg, in, n)

	// Read them back as sarama ConsumerMessages, in partition, offset order.
	ccfg := txnSaramaConfig(t, version)
	msgs := txnSaramaRead(t, c, ccfg, in, n)
	if len(msgs) != n {
		t.Fatalf("read %d input records, want %d", len(msgs), n)
	}

	tcfg := txnSaramaConfig(t, version)
	tcfg.Producer.Idempotent = true
	tcfg.Producer.Transaction.ID = txnID
	tcfg.Producer.RequiredAcks = sarama.WaitForAll
	tcfg.Producer.Retry.Backoff = 100 * time.Millisecond
	tcfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	tcfg.Producer.Partitioner = sarama.NewManualPartitioner
	tcfg.Net.MaxOpenRequests = 1
	tp, err := sarama.NewSyncProducer(c.Bootstrap(), tcfg)
	if err != nil {
		t.Fatalf("sarama transactional producer: %v", err)
	}
	defer tp.Close()
	if !tp.IsTransactional() {
		t.Fatal("sarama producer with Transaction.ID is not transactional")
	}
	send := func(tag string, m *sarama.ConsumerMessage) {
		t.Helper()
		_, _, err := tp.SendMessage(&sarama.ProducerMessage{Topic: out, Partition: m.Partition,
			Key: sarama.ByteEncoder(m.Key), Value: sarama.StringEncoder(tag + "-" + string(m.Value))})
		if err != nil {
			t.Fatalf("send %s copy of %s-%d@%d: %v", tag, m.Topic, m.Partition, m.Offset, err)
		}
	}
	offsets := func() map[int32]int64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		got := map[int32]int64{}
		resp, err := adminClient(t, c).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("fetch offsets of %s: %v", group, err)
		}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil {
				t.Errorf("offset of %s %s-%d: %v", group, o.Topic, o.Partition, o.Err)
			}
			if o.Topic == in {
				got[o.Partition] = o.At
			}
		})
		return got
	}
	// next[p] after consuming msgs[:i]: the offsets a group has committed after them.
	nextAfter := func(ms []*sarama.ConsumerMessage) map[int32]int64 {
		out := map[int32]int64{}
		for _, m := range ms {
			out[m.Partition] = max(out[m.Partition], m.Offset+1)
		}
		return out
	}

	// Transaction 1, committed: the first third, each record's offset through AddMessageToTxn.
	first, second, rest := msgs[:n/3], msgs[n/3:2*n/3], msgs[n/3:]
	if err := tp.BeginTxn(); err != nil {
		t.Fatalf("BeginTxn: %v", err)
	}
	for _, m := range first {
		send("commit1", m)
		if err := tp.AddMessageToTxn(m, group, nil); err != nil {
			t.Fatalf("AddMessageToTxn: %v", err)
		}
	}
	if err := tp.CommitTxn(); err != nil {
		t.Fatalf("CommitTxn 1: %v", err)
	}
	want1 := nextAfter(first)
	waitFor(t, 20*time.Second, func() error {
		if got := offsets(); fmt.Sprint(got) != fmt.Sprint(want1) {
			return fmt.Errorf("group %s offsets %v after the first commit, want %v", group, got, want1)
		}
		return nil
	})

	// Transaction 2, aborted: the second third, with its offsets.
	if err := tp.BeginTxn(); err != nil {
		t.Fatalf("BeginTxn 2: %v", err)
	}
	for _, m := range second {
		send("abort", m)
		if err := tp.AddMessageToTxn(m, group, nil); err != nil {
			t.Fatalf("AddMessageToTxn: %v", err)
		}
	}
	if err := tp.AbortTxn(); err != nil {
		t.Fatalf("AbortTxn: %v", err)
	}
	txnWaitStable(t, c, "__consumer_offsets", 20*time.Second)
	if got := offsets(); fmt.Sprint(got) != fmt.Sprint(want1) {
		t.Errorf("group %s offsets %v after the abort, want the first commit's %v", group, got, want1)
	}

	// Transaction 3, committed: the aborted third again and the last third, offsets through
	// AddOffsetsToTxn.
	if err := tp.BeginTxn(); err != nil {
		t.Fatalf("BeginTxn 3: %v", err)
	}
	for _, m := range rest {
		send("commit2", m)
	}
	var pom []*sarama.PartitionOffsetMetadata
	for p, off := range nextAfter(rest) {
		pom = append(pom, &sarama.PartitionOffsetMetadata{Partition: p, Offset: off})
	}
	if err := tp.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{in: pom}, group); err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	if err := tp.CommitTxn(); err != nil {
		t.Fatalf("CommitTxn 3: %v", err)
	}
	wantAll := nextAfter(msgs)
	waitFor(t, 20*time.Second, func() error {
		if got := offsets(); fmt.Sprint(got) != fmt.Sprint(wantAll) {
			return fmt.Errorf("group %s offsets %v after the last commit, want %v", group, got, wantAll)
		}
		return nil
	})
	txnWaitStable(t, c, out, 20*time.Second)

	// What each isolation level reads of the output, per partition in offset order.
	var wantCommitted, wantAll2 []string
	for p := int32(0); p < parts; p++ {
		for _, m := range first {
			if m.Partition == p {
				wantCommitted = append(wantCommitted, "commit1-"+string(m.Value))
				wantAll2 = append(wantAll2, "commit1-"+string(m.Value))
			}
		}
		for _, m := range second {
			if m.Partition == p {
				wantAll2 = append(wantAll2, "abort-"+string(m.Value))
			}
		}
		for _, m := range rest {
			if m.Partition == p {
				wantCommitted = append(wantCommitted, "commit2-"+string(m.Value))
				wantAll2 = append(wantAll2, "commit2-"+string(m.Value))
			}
		}
	}
	rc := txnSaramaConfig(t, version)
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	if version == nil {
		// sarama's default version predates read_committed fetches (Fetch v4).
		rc.Version = sarama.V3_7_0_0
	}
	gotCommitted := txnSaramaRead(t, c, rc, out, len(wantCommitted))
	txnSameStrings(t, "sarama read_committed", txnSaramaValues(gotCommitted), wantCommitted)
	gotAll := txnSaramaRead(t, c, txnSaramaConfig(t, version), out, len(wantAll2))
	txnSameStrings(t, "sarama read_uncommitted", txnSaramaValues(gotAll), wantAll2)
	// kgo's read_committed agrees.
	txnSameStrings(t, "kgo read_committed", txnValues(txnReadKgo(t, c, out, true, len(wantCommitted), 300*time.Millisecond)), wantCommitted)
}

// txnSaramaRead reads every partition of topic from the oldest offset with sarama's
// consumer until it has want messages, plus a short settle for extras; partition, offset
// order.
func txnSaramaRead(t *testing.T, c *Cluster, cfg *sarama.Config, topic string, want int) []*sarama.ConsumerMessage {
	t.Helper()
	cons, err := sarama.NewConsumer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	parts, err := cons.Partitions(topic)
	if err != nil {
		t.Fatalf("partitions of %s: %v", topic, err)
	}
	msgs := make(chan *sarama.ConsumerMessage, 1024)
	var pcs []sarama.PartitionConsumer
	for _, p := range parts {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("consume %s-%d: %v", topic, p, err)
		}
		pcs = append(pcs, pc)
		go func() {
			for m := range pc.Messages() {
				msgs <- m
			}
		}()
		go func() {
			for e := range pc.Errors() {
				t.Logf("sarama consumer %s-%d: %v", topic, p, e)
			}
		}()
	}
	defer func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
	}()
	var got []*sarama.ConsumerMessage
	timeout := time.After(60 * time.Second)
	var settle <-chan time.Time
	for done := false; !done; {
		if len(got) >= want && settle == nil {
			settle = time.After(300 * time.Millisecond)
		}
		select {
		case m := <-msgs:
			got = append(got, m)
		case <-settle:
			done = true
		case <-timeout:
			t.Fatalf("sarama: %d of %d records of %s after 60s", len(got), want, topic)
		}
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
}

func txnSaramaValues(ms []*sarama.ConsumerMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Value)
	}
	return out
}

// ---- franz-go ----

// TestTxnFranzGoChain: two franz-go GroupTransactSessions in a chain, txn-chain-0 →
// stage 1 → txn-chain-1 → stage 2 → txn-chain-2, each reading read_committed and writing
// every record it consumes to the same partition of the next topic, in one transaction with
// its group's offsets. Stage 1 aborts every third transaction on purpose (the session then
// rewinds to its committed offsets and redoes the work). The last topic read read_committed
// holds every input record exactly once, transformed by both stages, in the input's order
// per partition; the middle topic read read_uncommitted holds the aborted copies too.
func TestTxnFranzGoChain(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: txnProps(nil)})
	const parts, n = 3, 600
	topics := []string{"txn-chain-0", "txn-chain-1", "txn-chain-2"}
	for _, tp := range topics {
		createTopic(t, c, tp, parts, 3, nil)
	}
	kgoProduceWith(t, c, topics[0], 0, n, false, nil)
	input := txnReadKgo(t, c, topics[0], false, n, 0)

	ctx, cancel := context.WithCancel(context.Background())
	stages := []*txnStage{
		{name: "stage-1", src: topics[0], dst: topics[1], abortEvery: 3},
		{name: "stage-2", src: topics[1], dst: topics[2]},
	}
	var wg sync.WaitGroup
	for _, s := range stages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run(ctx, t, c)
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	waitFor(t, 90*time.Second, func() error {
		if got := stages[1].committedCount(); got < n {
			return fmt.Errorf("stage 2 committed %d of %d records (stage 1: %d)", got, n, stages[0].committedCount())
		}
		return nil
	})
	cancel()
	wg.Wait()
	for _, s := range stages {
		t.Logf("%s: %d transactions committed, %d aborted (%d on purpose), %d records committed", s.name, s.commits, s.aborts, s.purposeAborts, s.committed)
		if s.fatal != nil {
			t.Errorf("%s: %v", s.name, s.fatal)
		}
	}
	if stages[0].purposeAborts == 0 {
		t.Error("stage 1 aborted no transaction with records")
	}

	var want []string
	for _, r := range input {
		want = append(want, "s2(s1("+r.value+"))")
	}
	txnWaitStable(t, c, topics[2], 20*time.Second)
	txnSameStrings(t, topics[2]+" read_committed", txnValues(txnReadKgo(t, c, topics[2], true, n, 500*time.Millisecond)), want)
	mid := txnReadKgo(t, c, topics[1], false, n+1, 500*time.Millisecond)
	if len(mid) <= n {
		t.Errorf("%s read_uncommitted: %d records, want more than the %d committed (stage 1 aborted %d transactions)", topics[1], len(mid), n, stages[0].purposeAborts)
	}
	// Stage 1's group committed the input's end offsets.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	resp, err := adminClient(t, c).FetchOffsets(ctx2, "txn-chain-stage-1")
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	hw, _ := txnOffsets(t, c, topics[0])
	for p, end := range hw {
		o, ok := resp.Lookup(topics[0], p)
		if !ok || o.At != end {
			t.Errorf("stage 1 group offset of %s-%d: %v (found %v), want the end offset %d", topics[0], p, o.At, ok, end)
		}
	}
}

// txnStage is one consume-transform-produce step on a kgo GroupTransactSession.
type txnStage struct {
	name       string
	src, dst   string
	abortEvery int // abort every abortEvery-th transaction that has records (0: never)

	mu                                   sync.Mutex
	committed                            int
	commits, aborts, purposeAborts, txns int
	fatal                                error
}

func (s *txnStage) committedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

func (s *txnStage) run(ctx context.Context, t *testing.T, c *Cluster) {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.TransactionalID("txn-chain-"+s.name),
		kgo.ConsumerGroup("txn-chain-"+s.name),
		kgo.ConsumeTopics(s.src),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(s.dst),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.TransactionTimeout(20*time.Second),
		kgo.WithLogger(kgoTestLogger(t)),
	)
	if err != nil {
		s.fatal = err
		return
	}
	defer sess.Close()
	for ctx.Err() == nil {
		// At most 50 records per transaction, so that 600 make a dozen transactions.
		fs := sess.PollRecords(ctx, 50)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("%s: fetch %s-%d: %v", s.name, tp, p, err) })
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			s.mu.Lock()
			s.fatal = fmt.Errorf("begin: %w", err)
			s.mu.Unlock()
			return
		}
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Topic: s.dst, Partition: r.Partition, Key: r.Key,
				Value: []byte("s" + strings.TrimPrefix(s.name, "stage-") + "(" + string(r.Value) + ")")}, nil)
		}
		s.mu.Lock()
		s.txns++
		purpose := s.abortEvery > 0 && s.txns%s.abortEvery == 0
		s.mu.Unlock()
		try := kgo.TryCommit
		if purpose {
			// Flush first: an abort drops records still buffered in the client, and the
			// test wants aborted records in the log.
			if err := sess.Client().Flush(ctx); err != nil && ctx.Err() == nil {
				t.Logf("%s: flush: %v", s.name, err)
			}
			try = kgo.TryAbort
		}
		committed, err := sess.End(ctx, try)
		s.mu.Lock()
		switch {
		case committed:
			s.commits++
			s.committed += len(recs)
		case purpose && err == nil:
			s.aborts++
			s.purposeAborts++
		default:
			s.aborts++
			if err != nil && ctx.Err() == nil {
				t.Logf("%s: end transaction: %v", s.name, err)
			}
		}
		s.mu.Unlock()
	}
}

// ---- kcat ----

// TestTxnKcat: kcat -P -X transactional.id commits what it read when its input ends and
// aborts when it gets SIGTERM. kcat -C with isolation.level=read_committed reads the
// committed records only; read_uncommitted reads both.
func TestTxnKcat(t *testing.T) {
	kcat := txnKcatPath(t)
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: txnProps(nil)})
	const topic = "txn-kcat"
	createTopic(t, c, topic, 3, 3, nil)
	brokers := strings.Join(c.Bootstrap(), ",")

	// Committed: 100 records through stdin, which then closes.
	var in strings.Builder
	var committed []string
	for i := range 100 {
		fmt.Fprintf(&in, "key-%d\tkcat-commit-%d\n", i%7, i)
		committed = append(committed, fmt.Sprintf("kcat-commit-%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := exec.CommandContext(ctx, kcat, "-b", brokers, "-P", "-t", topic, "-K", "\t",
		"-X", "transactional.id=txn-kcat-commit", "-X", "linger.ms=5")
	prod.Stdin = strings.NewReader(in.String())
	out, err := prod.CombinedOutput()
	t.Logf("kcat -P (commit):\n%s", out)
	if err != nil {
		t.Fatalf("kcat -P -X transactional.id: %v", err)
	}

	// Aborted: 48 records, then SIGTERM while stdin is still open.
	base := txnEndSum(t, c, topic) // the committed records and their markers
	aborted := txnKcatStart(t, kcat, brokers, topic, "txn-kcat-abort", nil)
	var abortedValues []string
	for i := range 48 {
		line := txnKcatLine(fmt.Sprintf("key-%d", i%7), fmt.Sprintf("kcat-abort-%d", i))
		abortedValues = append(abortedValues, strings.TrimSuffix(strings.SplitN(line, "\t", 2)[1], "\n"))
		io.WriteString(aborted.stdin, line)
	}
	txnWaitEnd(t, c, topic, base+48, 30*time.Second)
	// kcat aborts when a signal ended it; it notices once its blocked read of stdin returns.
	aborted.cmd.Process.Signal(syscall.SIGTERM)
	aborted.stdin.Close()
	if err := aborted.wait(30 * time.Second); err != nil {
		t.Logf("kcat -P (abort) exited: %v", err)
	}
	t.Logf("kcat -P (abort):\n%s", aborted.output())
	txnWaitStable(t, c, topic, 20*time.Second)

	read := func(level string) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, "-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e",
			"-X", "isolation.level="+level, "-f", "%s\n")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat -C isolation.level=%s: %v\n%s", level, err, stderr.String())
		}
		vals := strings.Fields(string(out))
		sort.Strings(vals)
		return vals
	}
	sorted := func(v []string) []string {
		s := append([]string(nil), v...)
		sort.Strings(s)
		return s
	}
	txnSameStrings(t, "kcat read_committed", read("read_committed"), sorted(committed))
	txnSameStrings(t, "kcat read_uncommitted", read("read_uncommitted"), sorted(append(committed, abortedValues...)))
}

func txnKcatPath(t *testing.T) string {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: apt-get install -y kcat (or run ./scripts/test.sh, which installs it)")
	}
	return kcat
}

// txnKcat is a kcat -P process whose stdin stays open until the test closes it.
type txnKcat struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	exited  chan struct{} // closed once Wait returned, with waitErr set
	waitErr error
	mu      sync.Mutex
	outBuf  strings.Builder
}

func (k *txnKcat) output() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.outBuf.String()
}

func (k *txnKcat) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.outBuf.Write(p)
}

func (k *txnKcat) wait(timeout time.Duration) error {
	select {
	case <-k.exited:
		return k.waitErr
	case <-time.After(timeout):
		k.cmd.Process.Kill()
		<-k.exited
		return fmt.Errorf("kcat still running after %v: killed", timeout)
	}
}

// txnKcatStart starts kcat -P -X transactional.id=txnID on topic (key and value split by a
// tab) with extra -X settings.
func txnKcatStart(t *testing.T, kcat, brokers, topic, txnID string, extra []string) *txnKcat {
	t.Helper()
	args := []string{"-b", brokers, "-P", "-t", topic, "-K", "\t", "-X", "transactional.id=" + txnID, "-X", "linger.ms=5"}
	for _, x := range extra {
		args = append(args, "-X", x)
	}
	k := &txnKcat{cmd: exec.Command(kcat, args...), exited: make(chan struct{})}
	stdin, err := k.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	k.stdin = stdin
	k.cmd.Stdout, k.cmd.Stderr = k, k
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start kcat: %v", err)
	}
	go func() {
		k.waitErr = k.cmd.Wait()
		close(k.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-k.exited:
		default:
			k.cmd.Process.Kill()
			<-k.exited
		}
	})
	return k
}

// txnKcatLine is one kcat -P -K '\t' input line of exactly 64 bytes. Debian's kcat 1.7.1
// reads its input in blocks of 1024 bytes and produces nothing of a block before it is
// full or the input ends (kcat issue #343, fixed in 1.8.0), so a test that keeps stdin
// open writes whole blocks: a multiple of 16 of these lines.
func txnKcatLine(key, value string) string {
	line := key + "\t" + value + "-"
	return line + strings.Repeat(".", 63-len(line)) + "\n"
}

// txnEndSum adds up topic's high watermarks.
func txnEndSum(t testing.TB, c *Cluster, topic string) int64 {
	t.Helper()
	hw, _ := txnOffsets(t, c, topic)
	var sum int64
	for _, h := range hw {
		sum += h
	}
	return sum
}

// txnWaitEnd waits until topic's high watermarks add up to at least n.
func txnWaitEnd(t testing.TB, c *Cluster, topic string, n int64, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, func() error {
		if sum := txnEndSum(t, c, topic); sum < n {
			return fmt.Errorf("%s: high watermarks add up to %d, want %d", topic, sum, n)
		}
		return nil
	})
}

// ---- zombie fencing ----

// TestTxnZombieFencing: two kgo producers with the same transactional id. The second one's
// InitProducerId bumps the epoch and aborts the first one's open transaction; the first
// one's next write (subtest write) or its EndTxn (subtest end-txn) fails with the fencing
// error, and read_committed readers see only what the second one committed.
func TestTxnZombieFencing(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: txnProps(nil)})
	for _, mode := range []string{"write", "end-txn"} {
		t.Run(mode, func(t *testing.T) {
			topic, txnID := "txn-zombie-"+mode, "txn-zombie-"+mode
			createTopic(t, c, topic, 2, 3, nil)
			newProducer := func() *kgo.Client {
				cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.TransactionalID(txnID),
					kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
					kgo.TransactionTimeout(30*time.Second), kgo.WithLogger(kgoTestLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cl.Close)
				return cl
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			old := newProducer()
			if err := old.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := old.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("old-before-fence")}).FirstErr(); err != nil {
				t.Fatalf("old producer, before the fence: %v", err)
			}

			// The new instance: InitProducerId fences the old one.
			young := newProducer()
			if err := young.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := young.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("new-1")}).FirstErr(); err != nil {
				t.Fatalf("new producer: %v", err)
			}
			if err := young.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("new producer: commit: %v", err)
			}

			fenced := func(what string, err error) {
				t.Helper()
				t.Logf("old producer, %s after the fence: %v", what, err)
				if err == nil {
					t.Errorf("old producer: %s after the fence succeeded", what)
				} else if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
					t.Errorf("old producer: %s after the fence: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", what, err)
				}
			}
			if mode == "write" {
				// Both the partition it already wrote to and one new to its transaction.
				fenced("write to partition 0", old.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("old-after-fence-0")}).FirstErr())
				if err := old.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("old-after-fence-1")}).FirstErr(); err == nil {
					t.Error("old producer: write to partition 1 after the fence succeeded")
				}
				if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
					t.Error("old producer: commit after fenced writes succeeded")
				}
			} else {
				fenced("EndTxn(commit)", old.EndTransaction(ctx, kgo.TryCommit))
			}

			txnWaitStable(t, c, topic, 20*time.Second)
			txnSameStrings(t, "read_committed", txnValues(txnReadKgo(t, c, topic, true, 1, 500*time.Millisecond)), []string{"new-1"})
			all := txnValues(txnReadKgo(t, c, topic, false, 2, 500*time.Millisecond))
			sort.Strings(all)
			txnSameStrings(t, "read_uncommitted", all, []string{"new-1", "old-before-fence"})
		})
	}
}

// ---- a hung transaction ----

// TestTxnHungTransactionTimesOut: a kcat transactional producer is killed with SIGKILL in
// the middle of a transaction (transaction.timeout.ms 4000). Until the coordinator aborts
// it, the partition's last stable offset stays at the transaction's first offset, so a
// transaction committed after it by another producer is not readable read_committed; after
// the timeout the coordinator aborts it with an epoch bump, the LSO moves to the high
// watermark and read_committed readers see the later commit but none of kcat's records.
func TestTxnHungTransactionTimesOut(t *testing.T) {
	kcat := txnKcatPath(t)
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: txnProps(nil)})
	const topic, txnID = "txn-hung", "txn-hung-kcat"
	const timeoutMs = 4000
	createTopic(t, c, topic, 1, 3, nil)
	brokers := strings.Join(c.Bootstrap(), ",")

	k := txnKcatStart(t, kcat, brokers, topic, txnID, []string{fmt.Sprintf("transaction.timeout.ms=%d", timeoutMs)})
	const hung = 32 // two of kcat's input blocks (txnKcatLine)
	for i := range hung {
		io.WriteString(k.stdin, txnKcatLine("k", fmt.Sprintf("hung-%d", i)))
	}
	txnWaitEnd(t, c, topic, hung, 30*time.Second)
	written := time.Now() // the transaction started a little before
	hw, lso := txnOffsets(t, c, topic)
	if lso[0] != 0 || hw[0] != hung {
		t.Errorf("open transaction: last stable offset %d, high watermark %d; want 0 and %d", lso[0], hw[0], hung)
	}
	k.cmd.Process.Kill()
	k.wait(10 * time.Second)
	t.Logf("kcat killed %v after its records were written; its output:\n%s", time.Since(written).Round(time.Millisecond), k.output())

	// Another producer commits after the hung transaction.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	other, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.TransactionalID("txn-hung-other"),
		kgo.DefaultProduceTopic(topic), kgo.WithLogger(kgoTestLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var later []string
	for i := range 5 {
		v := fmt.Sprintf("later-%d", i)
		later = append(later, v)
		if err := other.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	hw, lso = txnOffsets(t, c, topic)
	if since := time.Since(written); since < timeoutMs*time.Millisecond*3/4 {
		// Still well inside kcat's transaction timeout: nothing may be stable past it.
		if lso[0] != 0 {
			t.Errorf("%v after the hung transaction's writes: last stable offset %d, want 0 (high watermark %d)", since.Round(time.Millisecond), lso[0], hw[0])
		}
	} else {
		t.Logf("the later commit took until %v after the hung writes: LSO not checked before the timeout", since.Round(time.Millisecond))
	}

	start := time.Now()
	txnWaitStable(t, c, topic, 30*time.Second)
	aborted := time.Since(written)
	t.Logf("hung transaction: LSO reached the high watermark %v after its writes (%v after the later commit), transaction.timeout.ms=%d",
		aborted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), timeoutMs)
	if aborted < timeoutMs*time.Millisecond*3/4 {
		t.Errorf("the hung transaction ended %v after its writes, before its %d ms timeout", aborted, timeoutMs)
	}
	txnSameStrings(t, "read_committed", txnValues(txnReadKgo(t, c, topic, true, len(later), 500*time.Millisecond)), later)
	if got := txnReadKgo(t, c, topic, false, hung+len(later), 300*time.Millisecond); len(got) != hung+len(later) {
		t.Errorf("read_uncommitted: %d records, want %d", len(got), hung+len(later))
	}

	// The coordinator's view: aborted, with the epoch bumped to fence the dead producer.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	ds, err := adminClient(t, c).DescribeTransactions(dctx, txnID)
	if err != nil {
		t.Fatalf("DescribeTransactions: %v", err)
	}
	d, err := ds.On(txnID, nil)
	if err != nil {
		t.Fatalf("DescribeTransactions %s: %v", txnID, err)
	}
	t.Logf("%s: state %s, producer id %d epoch %d, timeout %d ms", txnID, d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis)
	if d.State != "CompleteAbort" || d.ProducerEpoch < 1 || d.TimeoutMillis != timeoutMs {
		t.Errorf("%s: state %s epoch %d timeout %d; want CompleteAbort, an epoch bumped past 0, timeout %d", txnID, d.State, d.ProducerEpoch, d.TimeoutMillis, timeoutMs)
	}
}

// ---- find-hanging and abort ----

// TestTxnFindHangingAndAbort: with transaction.partition.verification.enable=false, a raw
// Produce of a transactional batch opens a transaction on the partition that no
// coordinator knows (KIP-664's hanging transaction). `samsa transactions find-hanging`
// lists it (Kafka's columns), `abort --start-offset` writes the ABORT marker, after which
// the LSO reaches the high watermark, find-hanging lists nothing and read_committed
// readers see only the record written after it.
func TestTxnFindHangingAndAbort(t *testing.T) {
	samsaBinary(t)
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: txnProps(map[string]string{
		"transaction.partition.verification.enable": "false",
	})})
	const topic = "txn-hanging"
	createTopic(t, c, topic, 1, 3, nil)
	bs := strings.Join(c.Bootstrap(), ",")
	leader := txnLeaderAddr(t, c, topic, 0)

	// A producer id without a transactional id, then a transactional batch under it.
	var ip *kmsg.InitProducerIDResponse
	waitFor(t, 20*time.Second, func() error {
		// COORDINATOR_LOAD_IN_PROGRESS until the broker has its first block of producer ids.
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = 60000
		resp, err := requestTo[*kmsg.InitProducerIDResponse](t, leader, req)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("InitProducerId: %w", err)
		}
		ip = resp
		return nil
	})
	ts := time.Now().Add(-time.Hour).UnixMilli() // an hour old: past find-hanging's 15 minutes
	var recs []recordbatch.Record
	for i := range 3 {
		recs = append(recs, recordbatch.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte(fmt.Sprintf("hanging-%d", i))})
	}
	batch, err := recordbatch.Build(recordbatch.Header{
		Attributes: recordbatch.AttrTransactional, LastOffsetDelta: 2, BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch, BaseSequence: 0, PartitionLeaderEpoch: -1,
	}, recs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	preq := kmsg.NewPtrProduceRequest()
	preq.Acks = -1
	preq.TimeoutMillis = 10000
	preq.TransactionID = kmsg.StringPtr("txn-hanging-writer") // Kafka requires one on transactional batches
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	presp, err := requestTo[*kmsg.ProduceResponse](t, leader, preq)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce of a transactional batch without verification: %v", kerr.ErrorForCode(code))
	}
	kgoProduceWith(t, c, topic, 0, 1, true, nil, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	hw, lso := txnOffsets(t, c, topic)
	if hw[0] != 4 || lso[0] != 0 {
		t.Fatalf("hanging transaction open: high watermark %d, LSO %d; want 4 and 0", hw[0], lso[0])
	}

	row := regexp.MustCompile(`(?m)^` + topic + `\s+0\s+` + strconv.FormatInt(ip.ProducerID, 10) + `\s+` +
		strconv.Itoa(int(ip.ProducerEpoch)) + `\s+-1\s+0\s+` + strconv.FormatInt(ts, 10) + `\s+(\d+)\s*$`)
	head := regexp.MustCompile(`(?m)^Topic\s+Partition\s+ProducerId\s+ProducerEpoch\s+CoordinatorEpoch\s+StartOffset\s+LastTimestamp\s+Duration\(min\)\s*$`)
	out, err := samsaStdout(t, "transactions", "--bootstrap-server", bs, "find-hanging", "--topic", topic)
	if err != nil {
		t.Fatalf("transactions find-hanging: %v", err)
	}
	m := row.FindStringSubmatch(out)
	if !head.MatchString(out) || m == nil {
		t.Fatalf("find-hanging printed:\n%s\nwant Kafka's header and a row: %s 0 %d %d -1 0 %d <minutes>", out, topic, ip.ProducerID, ip.ProducerEpoch, ts)
	}
	if mins, _ := strconv.Atoi(m[1]); mins < 59 || mins > 61 {
		t.Errorf("find-hanging: Duration(min) %s, want about 60", m[1])
	}
	out, err = samsaStdout(t, "transactions", "--bootstrap-server", bs, "find-hanging", "--broker-id", "0")
	if err != nil {
		t.Fatalf("transactions find-hanging --broker-id 0: %v", err)
	}
	if !row.MatchString(out) {
		t.Errorf("find-hanging --broker-id 0 printed:\n%s\nwant the hanging transaction's row (all of the topic's replicas are on every broker)", out)
	}

	if out, err := samsaCmd(t, "", "transactions", "--bootstrap-server", bs, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0"); err != nil {
		t.Fatalf("transactions abort: %v\n%s", err, out)
	}
	txnWaitStable(t, c, topic, 20*time.Second)
	out, err = samsaStdout(t, "transactions", "--bootstrap-server", bs, "find-hanging", "--topic", topic)
	if err != nil {
		t.Fatalf("transactions find-hanging after abort: %v", err)
	}
	if !head.MatchString(out) || len(strings.Split(strings.TrimSpace(out), "\n")) != 1 {
		t.Errorf("find-hanging after the abort printed:\n%s\nwant the header only", out)
	}
	out, err = samsaStdout(t, "transactions", "--bootstrap-server", bs, "describe-producers", "--topic", topic, "--partition", "0")
	if err != nil {
		t.Fatalf("transactions describe-producers: %v", err)
	}
	// The marker, written at coordinator epoch 0 (DescribeProducers said -1), closed the
	// transaction; the last sequence is still the batch's.
	prow := regexp.MustCompile(`(?m)^` + strconv.FormatInt(ip.ProducerID, 10) + `\s+` + strconv.Itoa(int(ip.ProducerEpoch)) + `\s+0\s+2\s+\d+\s+None\s*$`)
	if !strings.Contains(out, "CurrentTransactionStartOffset") || !prow.MatchString(out) {
		t.Errorf("describe-producers printed:\n%s\nwant a row: %d %d 0 2 <timestamp> None", out, ip.ProducerID, ip.ProducerEpoch)
	}
	got := txnReadKgo(t, c, topic, true, 1, 500*time.Millisecond)
	if len(got) != 1 || got[0].offset != 3 {
		t.Errorf("read_committed after the abort: %v, want the one plain record at offset 3", got)
	}
}

// txnLeaderAddr is the address of partition p's leader, from its state znode.
func txnLeaderAddr(t testing.TB, c *Cluster, topic string, p int32) string {
	t.Helper()
	var addr string
	waitFor(t, 20*time.Second, func() error {
		st, _, err := c.partitionState(topic, p)
		if err != nil {
			return err
		}
		if st.Leader < 0 {
			return fmt.Errorf("%s-%d has no leader", topic, p)
		}
		addr = c.Broker(st.Leader).Addr()
		return nil
	})
	return addr
}

// txnJavaHashPartition is Kafka's partitionFor for a group or transactional id:
// abs(String.hashCode) % partitions (ids here are ASCII, so bytes are UTF-16 units).
func txnJavaHashPartition(id string, partitions int32) int32 {
	var h int32
	for i := 0; i < len(id); i++ {
		h = 31*h + int32(id[i])
	}
	if h == -2147483648 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitions
}
