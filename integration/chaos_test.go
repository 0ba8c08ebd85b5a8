package integration

// The chaos run shared by TestReplicationChaos and its idempotent-producer variants: two
// producers write to a replicated topic while the leader of a random partition is killed
// with SIGKILL and restarted, SAMSA_CHAOS_KILLS times (default 3).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// chaosPartitions is the chaos topic's partition count (replication factor 3).
const chaosPartitions = 6

// chaosKills reads SAMSA_CHAOS_KILLS, the number of leader kills in a chaos run (default 3).
func chaosKills(t *testing.T) int {
	t.Helper()
	s := os.Getenv("SAMSA_CHAOS_KILLS")
	if s == "" {
		return 3
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("SAMSA_CHAOS_KILLS=%q", s)
	}
	return n
}

// chaosStart starts producer id writing keyed records to topic every interval.
type chaosStart func(t *testing.T, c *Cluster, topic string, id int, interval time.Duration) *replProducer

// chaosRun is what a chaos run leaves for the test to check.
type chaosRun struct {
	c         *Cluster
	producers []*replProducer            // closed: acked holds every acknowledgment
	got       map[int32]map[int64]string // the topic read back: partition → offset → value
	failed    int                        // records the producers gave up on
}

// runChaos starts 3 broker processes (3 s ZooKeeper sessions) and topic with
// chaosPartitions partitions, RF 3, min.insync.replicas=2; two producers from start write
// every 2 ms while chaosKillLeaders kills leaders kills times (whileDown as there). Then it
// closes the producers, waits until every replica is back in every ISR and reads the
// topic back.
func runChaos(t *testing.T, topic string, kills int, start chaosStart, whileDown func(c *Cluster, k int)) *chaosRun {
	t.Helper()
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{
		"zookeeper.session.timeout.ms": "3000",
		"replica.fetch.backoff.ms":     "200",
	}})
	minISR := "2"
	createTopic(t, c, topic, chaosPartitions, 3, map[string]*string{"min.insync.replicas": &minISR})
	replWaitFullISR(t, c, topic, chaosPartitions, 3, 30*time.Second)

	producers := []*replProducer{start(t, c, topic, 0, 2*time.Millisecond), start(t, c, topic, 1, 2*time.Millisecond)}
	closed := false
	defer func() {
		if !closed { // a failed wait: stop the producers before the cluster goes
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
	chaosKillLeaders(t, c, topic, chaosPartitions, kills, acked, whileDown)
	for _, p := range producers {
		p.close()
	}
	closed = true
	failed := 0
	for _, p := range producers {
		failed += p.failed
		if p.first != nil {
			t.Logf("producer %d: %d records failed after retries; first error: %v", p.id, p.failed, p.first)
		}
	}
	replWaitFullISR(t, c, topic, chaosPartitions, 3, 60*time.Second)
	return &chaosRun{c: c, producers: producers, got: replConsumeAll(t, c, topic), failed: failed}
}

// chaosKillLeaders kill -9s the leader of a random partition of topic, kills times. After
// each kill it waits for a new leader from the ISR (session expiry + election), calls
// whileDown (if set) with the kill's index while the broker is down, waits until the producers got 100 more
// acknowledgments without the broker, restarts it and waits until every partition has
// all 3 replicas in its ISR again.
func chaosKillLeaders(t *testing.T, c *Cluster, topic string, partitions int32, kills int, acked func() int, whileDown func(c *Cluster, k int)) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos: %d kills, seed %d", kills, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for k := range kills {
		p := rng.Int32N(partitions)
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
		if whileDown != nil {
			whileDown(c, k)
		}
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
}
