package integration

// Issue 13's chaos test: a transactional copier (a franz-go GroupTransactSession) reads
// topic A read_committed and writes each record to the same partition of topic B,
// committing its group's offsets in the same transaction, while the leaders of A's and B's
// partitions, of the copier's __transaction_state partition and of its group's
// __consumer_offsets partition are killed with SIGKILL and restarted, SAMSA_CHAOS_KILLS
// times (default 3, as the replication chaos test). A itself is written by a transactional
// producer that aborts every fifth transaction on purpose. At the end B read read_committed
// must equal A read read_committed partition by partition: every committed record of A
// exactly once, in A's order, and nothing from an aborted transaction.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	txnChaosA, txnChaosB = "txn-chaos-a", "txn-chaos-b"
	txnChaosPartitions   = 3
	txnChaosCopierID     = "txn-chaos-copier" // transactional id and group id
	txnChaosSourceID     = "txn-chaos-source"
)

// TestTxnChaos: see the file comment.
func TestTxnChaos(t *testing.T) {
	kills := chaosKills(t)
	begin := time.Now()
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: txnProps(map[string]string{
		"zookeeper.session.timeout.ms":     "3000",
		"replica.fetch.backoff.ms":         "200",
		"offsets.topic.replication.factor": "3",
		"group.min.session.timeout.ms":     "1000",
	})})
	minISR := "2"
	for _, tp := range []string{txnChaosA, txnChaosB} {
		createTopic(t, c, tp, txnChaosPartitions, 3, map[string]*string{"min.insync.replicas": &minISR})
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &txnChaosSource{}
	cp := &txnChaosCopier{}
	var wg sync.WaitGroup
	srcCtx, stopSource := context.WithCancel(ctx)
	wg.Add(2)
	go func() { defer wg.Done(); src.run(srcCtx, t, c) }()
	go func() { defer wg.Done(); cp.run(ctx, t, c) }()
	defer func() {
		cancel()
		wg.Wait()
	}()
	waitFor(t, 60*time.Second, func() error {
		if n := cp.committedCount(); n < 200 {
			return fmt.Errorf("copier committed %d records (source %d)", n, src.committedCount())
		}
		return nil
	})
	t.Logf("copier running: %d records copied after %v", cp.committedCount(), time.Since(begin).Round(time.Millisecond))

	// The internal topics exist now; every partition is replicated 3 times.
	txnPart := txnJavaHashPartition(txnChaosCopierID, txnStatePartitions)
	offsetsPart := txnJavaHashPartition(txnChaosCopierID, 5)
	replWaitFullISR(t, c, "__transaction_state", txnStatePartitions, 3, 60*time.Second)
	replWaitFullISR(t, c, "__consumer_offsets", 5, 3, 60*time.Second)

	seed := uint64(time.Now().UnixNano())
	t.Logf("txn chaos: %d kills, seed %d; copier's coordinator partitions: __transaction_state-%d, __consumer_offsets-%d", kills, seed, txnPart, offsetsPart)
	rng := rand.New(rand.NewPCG(seed, seed))
	first := rng.IntN(4)
	for k := range kills {
		var topic string
		var p int32
		switch (first + k) % 4 {
		case 0:
			topic, p = txnChaosA, rng.Int32N(txnChaosPartitions)
		case 1:
			topic, p = txnChaosB, rng.Int32N(txnChaosPartitions)
		case 2:
			topic, p = "__transaction_state", txnPart
		case 3:
			topic, p = "__consumer_offsets", offsetsPart
		}
		leader, isr, err := replLeader(c, topic, p)
		if err != nil || leader < 0 {
			t.Fatalf("kill %d: leader of %s-%d: %d %v", k, topic, p, leader, err)
		}
		before := cp.committedCount()
		killAt := time.Now()
		c.Broker(leader).Kill()
		waitFor(t, 30*time.Second, func() error {
			l, _, err := replLeader(c, topic, p)
			if err != nil {
				return err
			}
			if l == leader || l < 0 {
				return fmt.Errorf("%s-%d leader %d", topic, p, l)
			}
			return nil
		})
		failover := time.Since(killAt)
		waitFor(t, 60*time.Second, func() error {
			if n := cp.committedCount(); n < before+100 {
				return fmt.Errorf("copier committed %d records since the kill of broker %d (leader of %s-%d)", n-before, leader, topic, p)
			}
			return nil
		})
		progress := time.Since(killAt)
		c.Broker(leader).Restart()
		for _, w := range []struct {
			topic string
			n     int32
		}{{txnChaosA, txnChaosPartitions}, {txnChaosB, txnChaosPartitions}, {"__transaction_state", txnStatePartitions}, {"__consumer_offsets", 5}} {
			replWaitFullISR(t, c, w.topic, w.n, 3, 60*time.Second)
		}
		t.Logf("kill %d/%d: broker %d (leader of %s-%d, ISR %v): new leader in %v, copier +100 records in %v, back in every ISR %v after the kill; %d copied so far",
			k+1, kills, leader, topic, p, isr, failover.Round(time.Millisecond), progress.Round(time.Millisecond),
			time.Since(killAt).Round(time.Millisecond), cp.committedCount())
	}

	// Stop the source, then let the copier drain A.
	stopSource()
	waitFor(t, 60*time.Second, func() error {
		if !src.stopped() {
			return errors.New("source producer still running")
		}
		return nil
	})
	txnWaitStable(t, c, txnChaosA, 60*time.Second)
	truth := txnReadKgo(t, c, txnChaosA, true, src.committedCount(), 2*time.Second)
	waitFor(t, 90*time.Second, func() error {
		if n := cp.committedCount(); n < len(truth) {
			return fmt.Errorf("copier committed %d of %d records", n, len(truth))
		}
		return nil
	})
	cancel()
	wg.Wait()
	txnWaitStable(t, c, txnChaosB, 60*time.Second)
	got := txnReadKgo(t, c, txnChaosB, true, len(truth), 2*time.Second)
	allA := txnReadKgo(t, c, txnChaosA, false, len(truth), time.Second)
	allB := txnReadKgo(t, c, txnChaosB, false, len(got), time.Second)

	// B == A, per partition in offset order; no aborted record of A.
	perPart := func(rs []txnRec) map[int32][]string {
		m := map[int32][]string{}
		for _, r := range rs {
			m[r.partition] = append(m[r.partition], r.value)
		}
		return m
	}
	wantB, gotB := perPart(truth), perPart(got)
	for p := int32(0); p < txnChaosPartitions; p++ {
		txnSameStrings(t, fmt.Sprintf("%s-%d read_committed against %s-%d", txnChaosB, p, txnChaosA, p), gotB[p], wantB[p])
	}
	abortedInB := 0
	for _, r := range got {
		if strings.Contains(r.value, "ABORT") {
			abortedInB++
		}
	}
	if abortedInB > 0 {
		t.Errorf("%d records of the source's aborted transactions in %s read_committed", abortedInB, txnChaosB)
	}
	if src.committedCount() != len(truth) {
		t.Logf("source producer counted %d committed records, %s read_committed holds %d", src.committedCount(), txnChaosA, len(truth))
	}
	if len(truth) == 0 {
		t.Fatal("nothing committed to A")
	}
	t.Logf("txn chaos: %d kills; A: %d committed records (%d in all, %d in %d+%d aborted source transactions); copier: %d transactions committed, %d aborted, %d session restarts; B: %d committed records (%d in all, so %d aborted copies); took %v",
		kills, len(truth), len(allA), len(allA)-len(truth), src.purposeAborts, src.otherAborts,
		cp.commits, cp.aborts, cp.restarts, len(got), len(allB), len(allB)-len(got), time.Since(begin).Round(time.Millisecond))
}

// txnChaosSource writes A in transactions of 10 records (partition i % 3), one every
// 20 ms; every fifth is aborted on purpose and its values say ABORT. A transaction that
// fails is aborted; a producer that cannot go on is replaced.
type txnChaosSource struct {
	mu                         sync.Mutex
	committed                  int
	purposeAborts, otherAborts int
	done                       bool
}

func (s *txnChaosSource) committedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

func (s *txnChaosSource) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func (s *txnChaosSource) run(ctx context.Context, t *testing.T, c *Cluster) {
	defer func() {
		s.mu.Lock()
		s.done = true
		s.mu.Unlock()
	}()
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.TransactionalID(txnChaosSourceID),
			kgo.DefaultProduceTopic(txnChaosA), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.TransactionTimeout(30*time.Second), kgo.MetadataMinAge(250*time.Millisecond),
			kgo.WithLogger(kgoTestLogger(t)))
		if err != nil {
			t.Errorf("source producer: %v", err)
			return nil
		}
		return cl
	}
	cl := newClient()
	if cl == nil {
		return
	}
	defer func() { cl.Close() }()
	for txn := 0; ctx.Err() == nil; txn++ {
		purpose := txn%5 == 4
		if err := cl.BeginTransaction(); err != nil {
			t.Logf("source: begin: %v; new producer", err)
			cl.Close()
			if cl = newClient(); cl == nil {
				return
			}
			continue
		}
		// Produce without the caller's context: stopping ends the loop, not a transaction
		// half way.
		var failed bool
		var fmu sync.Mutex
		for i := range 10 {
			v := fmt.Sprintf("a-%06d-%d", txn, i)
			if purpose {
				v += "-ABORT"
			}
			cl.Produce(context.Background(), &kgo.Record{Partition: int32(i % txnChaosPartitions), Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					fmu.Lock()
					failed = true
					fmu.Unlock()
				}
			})
		}
		ectx, ecancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := cl.Flush(ectx)
		fmu.Lock()
		commit := err == nil && !failed && !purpose
		fmu.Unlock()
		try := kgo.TryAbort
		if commit {
			try = kgo.TryCommit
		} else if err := cl.AbortBufferedRecords(ectx); err != nil {
			t.Logf("source: abort buffered records: %v", err)
		}
		err = cl.EndTransaction(ectx, try)
		ecancel()
		s.mu.Lock()
		switch {
		case err == nil && commit:
			s.committed += 10
		case purpose:
			s.purposeAborts++
		default:
			s.otherAborts++
		}
		s.mu.Unlock()
		if err != nil {
			t.Logf("source: end transaction %d (commit %v): %v; new producer", txn, commit, err)
			cl.Close()
			if cl = newClient(); cl == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// txnChaosCopier copies A to B with a GroupTransactSession; on any failed transaction it
// closes the session and starts a new one with the same transactional id (as an
// application restarting would), which fences the old producer and rewinds to the group's
// committed offsets.
type txnChaosCopier struct {
	mu                        sync.Mutex
	committed                 int
	commits, aborts, restarts int
}

func (cp *txnChaosCopier) committedCount() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.committed
}

func (cp *txnChaosCopier) run(ctx context.Context, t *testing.T, c *Cluster) {
	for ctx.Err() == nil {
		cp.session(ctx, t, c)
		if ctx.Err() == nil {
			cp.mu.Lock()
			cp.restarts++
			cp.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// session runs one GroupTransactSession until a transaction fails or ctx ends.
func (cp *txnChaosCopier) session(ctx context.Context, t *testing.T, c *Cluster) {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.TransactionalID(txnChaosCopierID),
		kgo.ConsumerGroup(txnChaosCopierID),
		kgo.ConsumeTopics(txnChaosA),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(txnChaosB),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.TransactionTimeout(30*time.Second),
		kgo.SessionTimeout(10*time.Second),
		kgo.MetadataMinAge(250*time.Millisecond),
		kgo.WithLogger(kgoTestLogger(t)),
	)
	if err != nil {
		t.Logf("copier: new session: %v", err)
		return
	}
	defer sess.Close()
	for ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("copier: fetch %s-%d: %v", tp, p, err) })
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Logf("copier: begin: %v", err)
			return
		}
		for _, r := range recs {
			sess.Produce(context.Background(), &kgo.Record{Topic: txnChaosB, Partition: r.Partition, Key: r.Key, Value: r.Value}, nil)
		}
		ectx, ecancel := context.WithTimeout(context.Background(), 60*time.Second)
		committed, err := sess.End(ectx, kgo.TryCommit)
		ecancel()
		cp.mu.Lock()
		if committed {
			cp.commits++
			cp.committed += len(recs)
		} else {
			cp.aborts++
		}
		cp.mu.Unlock()
		if err != nil {
			t.Logf("copier: end transaction (%d records): %v; new session", len(recs), err)
			return
		}
	}
}
