package integration

// Issue 8: the replication chaos test (TestReplicationChaos) repeated with idempotent
// producers: sarama with Producer.Idempotent=true (MaxOpenRequests=1, as sarama requires)
// and franz-go's default idempotent producer (acks=all, 5 requests in flight per broker).
// Same kill count variable, SAMSA_CHAOS_KILLS (default 3). Every acknowledged record must be
// present exactly once, in order, at its acknowledged offset. The chaos run (runChaos) is
// chaos_test.go's; the checks (replCheckAcked, replWaitIdentical) are replication_test.go's.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// startIdemChaosSarama: sarama AsyncProducer, Idempotent=true, acks=all, MaxOpenRequests=1.
func startIdemChaosSarama(t *testing.T, c *Cluster, topic string, id int, interval time.Duration) *replProducer {
	return startSaramaReplProducer(t, c, topic, id, interval, true)
}

// startIdemChaosFranzGo: a kgo client with its defaults (idempotent, acks=all, 5 produce
// requests in flight per broker, unlimited retries), records keyed like the sarama ones.
func startIdemChaosFranzGo(t *testing.T, c *Cluster, topic string, id int, interval time.Duration) *replProducer {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.DefaultProduceTopic(topic),
		kgo.ClientID(fmt.Sprintf("idem-chaos-kgo-%d", id)),
		kgo.WithLogger(kgoTestLogger(t)),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("kgo producer: %v", err)
	}
	p := &replProducer{id: id}
	stop, feedDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(feedDone)
		for seq := 0; ; seq++ {
			r := &kgo.Record{Key: []byte(replKey(seq)), Value: []byte(replValue(id, seq))}
			// Callbacks run in order per partition.
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				if err != nil {
					p.fail(err)
					return
				}
				p.ack(replAck{r.Partition, r.Offset, string(r.Value)})
			})
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	p.close = func() {
		close(stop)
		<-feedDone
		fctx, fcancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer fcancel()
		if err := cl.Flush(fctx); err != nil {
			t.Errorf("kgo producer %d: flush: %v", id, err)
		}
		cl.Close()
	}
	return p
}

// idemChaosRun is TestReplicationChaos's run with the given producers; then every acked
// record is at its acked offset, in ack order, and no acked value occurs more than once in
// its partition (nor in any other).
func idemChaosRun(t *testing.T, start chaosStart) {
	kills := chaosKills(t)
	begin := time.Now()
	const topic = "idem-chaos"
	run := runChaos(t, topic, kills, start, nil)
	got, producers := run.got, run.producers

	// At its acked offset and in ack order: the replication test's check.
	total := replCheckAcked(t, got, producers)

	// Exactly once: no value (each is unique per producer and sequence) occurs twice.
	count := map[string]int{}
	inLog := 0
	for _, offs := range got {
		for _, v := range offs {
			count[v]++
			inLog++
		}
	}
	dups := 0
	for v, n := range count {
		if n > 1 {
			if dups < 10 {
				t.Errorf("record %s stored %d times", v, n)
			}
			dups += n - 1
		}
	}
	// Every acked value exactly once (its presence at its offset was checked above).
	ackedOnce := 0
	for _, p := range producers {
		for _, a := range p.acked {
			if count[a.value] == 1 {
				ackedOnce++
			}
		}
	}
	replWaitIdentical(t, run.c, topic, chaosPartitions, 60*time.Second)
	t.Logf("idempotent chaos: %d kills, %d records acked (%d exactly once, %d failed), %d records in the log, %d duplicates, took %v",
		kills, total, ackedOnce, run.failed, inLog, dups, time.Since(begin).Round(time.Millisecond))
	if total == 0 {
		t.Fatal("nothing acked")
	}
	if dups > 0 || ackedOnce != total {
		t.Errorf("%d duplicate records in the log; %d of %d acked records present exactly once", dups, ackedOnce, total)
	}
}

// TestIdempotentChaosSarama: TestReplicationChaos with sarama Producer.Idempotent=true
// (MaxOpenRequests=1): every acked record present exactly once, in order, at its offset.
func TestIdempotentChaosSarama(t *testing.T) {
	idemChaosRun(t, startIdemChaosSarama)
}

// TestIdempotentChaosFranzGo: TestReplicationChaos with franz-go's default idempotent
// producer (5 requests in flight): every acked record present exactly once, in order, at
// its offset.
func TestIdempotentChaosFranzGo(t *testing.T) {
	idemChaosRun(t, startIdemChaosFranzGo)
}
