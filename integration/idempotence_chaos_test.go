package integration

// Issue 8: the replication chaos test (TestReplicationChaos) repeated with idempotent
// producers: sarama with Producer.Idempotent=true (MaxOpenRequests=1, as sarama requires)
// and franz-go's default idempotent producer (acks=all, 5 requests in flight per broker).
// Same kill count variable, SAMSA_CHAOS_KILLS (default 3). Every acknowledged record must be
// present exactly once, in order, at its acknowledged offset. Helpers are prefixed idemChaos;
// the chaos machinery (replLeader, replWaitFullISR, replConsumeAll, replCheckAcked,
// replWaitIdentical) is reused from replication_test.go.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// idemChaosProducer is a producer writing numbered, keyed records until closed, recording
// each acknowledgment (partition, offset, value) in acknowledgment order.
type idemChaosProducer struct {
	id    int
	close func()

	mu     sync.Mutex
	acked  []replAck
	failed int
	first  error
}

func (p *idemChaosProducer) ack(a replAck) {
	p.mu.Lock()
	p.acked = append(p.acked, a)
	p.mu.Unlock()
}

func (p *idemChaosProducer) fail(err error) {
	p.mu.Lock()
	p.failed++
	if p.first == nil {
		p.first = err
	}
	p.mu.Unlock()
}

func (p *idemChaosProducer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

func idemChaosValue(id, seq int) string { return fmt.Sprintf("p%d-%09d", id, seq) }

// startIdemChaosSarama: sarama AsyncProducer, Idempotent=true, acks=all, MaxOpenRequests=1.
func startIdemChaosSarama(t *testing.T, c *Cluster, topic string, id int, interval time.Duration) *idemChaosProducer {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_7_0_0
	cfg.ClientID = fmt.Sprintf("idem-chaos-sarama-%d", id)
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 40
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Timeout = 10 * time.Second
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Metadata.RefreshFrequency = 2 * time.Second
	sp, err := sarama.NewAsyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("sarama idempotent producer: %v", err)
	}
	p := &idemChaosProducer{id: id}
	stop, feedDone, collDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(feedDone)
		for seq := 0; ; seq++ {
			v := idemChaosValue(id, seq)
			m := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder("key-" + strconv.Itoa(seq%97)),
				Value: sarama.StringEncoder(v), Metadata: v}
			select {
			case <-stop:
				return
			case sp.Input() <- m:
			}
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	go func() {
		defer close(collDone)
		succ, errs := sp.Successes(), sp.Errors()
		for succ != nil || errs != nil {
			select {
			case m, ok := <-succ:
				if !ok {
					succ = nil
					continue
				}
				p.ack(replAck{m.Partition, m.Offset, m.Metadata.(string)})
			case e, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				p.fail(e.Err)
			}
		}
	}()
	p.close = func() {
		close(stop)
		<-feedDone
		sp.AsyncClose()
		<-collDone
	}
	return p
}

// startIdemChaosFranzGo: a kgo client with its defaults (idempotent, acks=all, 5 produce
// requests in flight per broker, unlimited retries), records keyed like the sarama ones.
func startIdemChaosFranzGo(t *testing.T, c *Cluster, topic string, id int, interval time.Duration) *idemChaosProducer {
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
	p := &idemChaosProducer{id: id}
	stop, feedDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(feedDone)
		for seq := 0; ; seq++ {
			v := idemChaosValue(id, seq)
			r := &kgo.Record{Key: []byte("key-" + strconv.Itoa(seq%97)), Value: []byte(v)}
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

func idemChaosKills(t *testing.T) int {
	kills := 3
	if s := os.Getenv("SAMSA_CHAOS_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("SAMSA_CHAOS_KILLS=%q", s)
		}
		kills = n
	}
	return kills
}

// idemChaosRun is TestReplicationChaos's kill loop with the given producers; then every
// acked record is at its acked offset, in ack order, and no acked value occurs more than
// once in its partition (nor in any other).
func idemChaosRun(t *testing.T, start func(t *testing.T, c *Cluster, topic string, id int, interval time.Duration) *idemChaosProducer) {
	kills := idemChaosKills(t)
	begin := time.Now()
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{
		"zookeeper.session.timeout.ms": "3000",
		"replica.fetch.backoff.ms":     "200",
	}})
	const topic, partitions = "idem-chaos", 6
	minISR := "2"
	createTopic(t, c, topic, partitions, 3, map[string]*string{"min.insync.replicas": &minISR})
	replWaitFullISR(t, c, topic, partitions, 3, 30*time.Second)

	producers := []*idemChaosProducer{start(t, c, topic, 0, 2*time.Millisecond), start(t, c, topic, 1, 2*time.Millisecond)}
	closed := false
	defer func() {
		if !closed {
			for _, p := range producers {
				p.close()
			}
		}
	}()
	acked := func() int {
		n := 0
		for _, p := range producers {
			n += p.ackedCount()
		}
		return n
	}
	waitFor(t, 30*time.Second, func() error {
		if n := acked(); n < 200 {
			return fmt.Errorf("%d records acked", n)
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 8))
	for k := range kills {
		p := int32(rng.IntN(partitions))
		leader, isr, err := replLeader(c, topic, p)
		if err != nil || leader < 0 {
			t.Fatalf("kill %d: leader of %s-%d: %d %v", k, topic, p, leader, err)
		}
		before := acked()
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
		waitFor(t, 30*time.Second, func() error {
			if n := acked(); n < before+100 {
				return fmt.Errorf("%d acked since the kill", n-before)
			}
			return nil
		})
		c.Broker(leader).Restart()
		replWaitFullISR(t, c, topic, partitions, 3, 60*time.Second)
		t.Logf("kill %d/%d: broker %d (leader of %s-%d, ISR %v): new leader in %v, back in every ISR %v after the kill; %d acked so far",
			k+1, kills, leader, topic, p, isr, failover.Round(time.Millisecond), time.Since(killAt).Round(time.Millisecond), acked())
	}
	for _, p := range producers {
		p.close()
	}
	closed = true
	failed := 0
	for _, p := range producers {
		failed += p.failed
		if p.first != nil {
			t.Logf("producer %d: %d records failed; first error: %v", p.id, p.failed, p.first)
		}
	}
	replWaitFullISR(t, c, topic, partitions, 3, 60*time.Second)
	got := replConsumeAll(t, c, topic)

	// At its acked offset and in ack order: the replication test's check.
	asRepl := make([]*replProducer, len(producers))
	for i, p := range producers {
		asRepl[i] = &replProducer{id: p.id, acked: p.acked}
	}
	total := replCheckAcked(t, got, asRepl)

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
	replWaitIdentical(t, c, topic, partitions, 60*time.Second)
	t.Logf("idempotent chaos: %d kills, %d records acked (%d exactly once, %d failed), %d records in the log, %d duplicates, took %v",
		kills, total, ackedOnce, failed, inLog, dups, time.Since(begin).Round(time.Millisecond))
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
