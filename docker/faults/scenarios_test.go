//go:build dockertest

package faults

// The scenarios of issue 18, each on its own topic (3 partitions, RF 3, min.insync.replicas=2)
// under two idempotent acks=all producers and per-broker probes. Each waits for what the
// protocol promises (a new leader, a new controller, writes resuming), heals, waits until
// every replica is back in every ISR and checks every acknowledged write (finish).

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// nonController is a broker that leads a partition of topic and is not the controller.
func (e *env) nonController(topic string) *Container {
	e.t.Helper()
	ctl, _, err := e.controller()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, b := range e.p.Brokers {
		if b.BrokerID != ctl && len(e.ledBy(topic, b.BrokerID)) > 0 {
			return b
		}
	}
	e.t.Fatalf("no broker but the controller %d leads a partition of %s", ctl, topic)
	return nil
}

// checkCutOff: broker b, cut off from the other brokers (or frozen) from `from` (when the
// rules were in) until to, acknowledged none of the probes sent to it meanwhile, whenever
// it answered them (call it after finish: every probe has its answer). Its followers cannot
// fetch, so its high watermark cannot pass what they had before the cut, and it cannot
// shrink its ISR without ZooKeeper. (200 ms of slack for packets already on their way when
// the rules went in.)
func (l *load) checkCutOff(b *Container, from, to time.Time) {
	l.e.t.Helper()
	accepted, sent := l.acceptedBy(b.BrokerID, from.Add(200*time.Millisecond), to)
	l.e.t.Logf("broker %d, isolated: acknowledged %d of the %d probes sent to it", b.BrokerID, len(accepted), sent)
	for _, p := range accepted {
		l.e.t.Errorf("broker %d acknowledged a write while cut off from its followers: partition %d offset %d, sent %v after the cut, answered %v later",
			b.BrokerID, p.Partition, p.Offset, p.Sent.Sub(from).Round(time.Millisecond), p.Done.Sub(p.Sent).Round(time.Millisecond))
	}
}

// waitLeadersMoved waits until no partition of topic is led by id (per ZooKeeper) and
// returns how long that took.
func (e *env) waitLeadersMoved(topic string, id int32, timeout time.Duration) time.Duration {
	e.t.Helper()
	return e.waitFor(fmt.Sprintf("leaders of %s off broker %d", topic, id), timeout, func() error {
		if led := e.ledBy(topic, id); len(led) > 0 {
			return fmt.Errorf("broker %d still leads %v", id, led)
		}
		return nil
	})
}

// waitRegistered waits until broker id is registered in ZooKeeper.
func (e *env) waitRegistered(id int32, timeout time.Duration) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("broker %d registered", id), timeout, func() error {
		_, _, err := e.registration(id)
		return err
	})
}

// waitUnregistered waits until broker id's registration is gone (its session expired).
func (e *env) waitUnregistered(id int32, timeout time.Duration) time.Duration {
	e.t.Helper()
	return e.waitFor(fmt.Sprintf("broker %d's registration gone", id), timeout, func() error {
		if _, _, err := e.registration(id); err == nil {
			return fmt.Errorf("broker %d still registered", id)
		}
		return nil
	})
}

// TestLeaderCutOff: scenario 1. A partition leader (not the controller) is cut off from
// ZooKeeper and the other brokers; clients still reach it. Its session expires, the
// controller elects new leaders from the ISR; the cut-off broker cannot shrink its ISR
// (no ZooKeeper), so its high watermark cannot move and it acknowledges nothing.
func TestLeaderCutOff(t *testing.T) {
	e := setup(t)
	topic := topicName("leader")
	e.createTopic(topic)
	l := e.startLoad(topic)
	b := e.nonController(topic)
	led := e.ledBy(topic, b.BrokerID)
	brokers, zks := e.others(b)
	t0 := time.Now()
	e.cut(b, append(brokers, zks...)...)
	cutAt := time.Now() // the rules are in
	t.Logf("broker %d (leader of %v) cut off from ZooKeeper and brokers %v", b.BrokerID, led, ids(brokers))
	moved := e.waitLeadersMoved(topic, b.BrokerID, 60*time.Second)
	resumed := l.waitWrites(time.Now(), 60*time.Second)
	t.Logf("new leaders after %v; writes to every partition %v later", moved.Round(time.Millisecond), resumed.Round(time.Millisecond))
	time.Sleep(3 * time.Second) // the cut-off broker keeps getting probes
	e.must("heal", b.Name)
	healAt := time.Now()
	e.waitRegistered(b.BrokerID, 60*time.Second)
	t.Logf("healed after %v", time.Since(t0).Round(time.Millisecond))
	e.finish(l, t0)
	l.checkCutOff(b, cutAt, healAt)
}

// TestControllerCutOffFromZooKeeper: scenario 2. The controller loses ZooKeeper (brokers
// and clients still reach it): its session expires, another broker wins /controller, and
// the partitions the old controller led move; on healing it re-registers as a plain broker.
func TestControllerCutOffFromZooKeeper(t *testing.T) {
	e := setup(t)
	topic := topicName("controller")
	e.createTopic(topic)
	l := e.startLoad(topic)
	ctl, czxid, err := e.controller()
	if err != nil {
		t.Fatal(err)
	}
	b := e.p.Broker(ctl)
	_, zks := e.others(b)
	t0 := time.Now()
	e.cut(b, zks...)
	t.Logf("controller %d (leader of %v) cut off from ZooKeeper", ctl, e.ledBy(topic, ctl))
	elected := e.waitFor("a new controller", 60*time.Second, func() error {
		id, cz, err := e.controller()
		if err != nil {
			return err
		}
		if cz == czxid || id == ctl {
			return fmt.Errorf("controller still %d", id)
		}
		return nil
	})
	moved := e.waitLeadersMoved(topic, ctl, 60*time.Second)
	resumed := l.waitWrites(time.Now(), 60*time.Second)
	id, _, _ := e.controller()
	t.Logf("controller %d after %v; leaders off broker %d after %v more; writes to every partition %v later",
		id, elected.Round(time.Millisecond), ctl, moved.Round(time.Millisecond), resumed.Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	e.must("heal", b.Name)
	e.waitRegistered(ctl, 60*time.Second)
	if now, _, err := e.controller(); err != nil || now == ctl {
		t.Errorf("controller after healing: %d %v (the old controller must not take over by itself)", now, err)
	}
	e.finish(l, t0)
}

// TestPausedLeader: a partition leader (not the controller) frozen with docker pause (every
// process SIGSTOPped, as in a long GC pause) past its ZooKeeper session; new leaders are
// elected meanwhile. Probes sent to it pile up in its sockets. When it thaws it serves them
// believing it still leads, but its followers now follow the new leaders: it must
// acknowledge none of them, and it must step down.
func TestPausedLeader(t *testing.T) {
	e := setup(t)
	topic := topicName("paused")
	e.createTopic(topic)
	l := e.startLoad(topic)
	b := e.nonController(topic)
	led := e.ledBy(topic, b.BrokerID)
	t0 := time.Now()
	e.must("pause", b.Name)
	pausedAt := time.Now()
	t.Logf("broker %d (leader of %v) paused", b.BrokerID, led)
	moved := e.waitLeadersMoved(topic, b.BrokerID, 60*time.Second)
	resumed := l.waitWrites(time.Now(), 60*time.Second)
	t.Logf("new leaders after %v; writes to every partition %v later", moved.Round(time.Millisecond), resumed.Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	e.must("unpause", b.Name)
	thawAt := time.Now()
	e.waitRegistered(b.BrokerID, 60*time.Second)
	t.Logf("thawed and registered again %v after the pause", time.Since(t0).Round(time.Millisecond))
	e.finish(l, t0)
	// What was sent while it was frozen waited in its sockets and was answered after the thaw.
	l.checkCutOff(b, pausedAt, thawAt)
}

// zkLeader is the ZooKeeper server that listens on the quorum port (only the leader does).
func (e *env) zkLeader() *Container {
	e.t.Helper()
	var leader *Container
	e.waitFor("a ZooKeeper leader", 30*time.Second, func() error {
		for _, z := range e.p.ZK {
			ok, err := listens(z.Name, e.p.QuorumPort())
			if err != nil {
				return err
			}
			if ok {
				leader = z
				return nil
			}
		}
		return fmt.Errorf("no ZooKeeper server listens on %d", e.p.QuorumPort())
	})
	return leader
}

// TestZooKeeperMinorityWithBroker: scenario 3. A ZooKeeper follower and a broker that leads
// a partition are cut off together from the rest (they still reach each other; clients
// reach the broker). The minority server stops serving, the broker's session expires on
// the majority side and its partitions move.
func TestZooKeeperMinorityWithBroker(t *testing.T) {
	e := setup(t)
	topic := topicName("zkminority")
	e.createTopic(topic)
	l := e.startLoad(topic)
	// A broker that leads a partition (not the controller) and a ZooKeeper follower, the one
	// that broker has its session on if there is such a pair: the minority is its server.
	leader := e.zkLeader()
	ctl, _, err := e.controller()
	if err != nil {
		t.Fatal(err)
	}
	var b, z *Container
pick:
	for _, c := range e.p.Brokers {
		if c.BrokerID == ctl || len(e.ledBy(topic, c.BrokerID)) == 0 {
			continue
		}
		for _, f := range e.p.ZK {
			if f == leader {
				continue
			}
			if b == nil {
				b, z = c, f
			}
			if s, err := e.zkSessions(f); err == nil && slices.Contains(s, c.BrokerID) {
				b, z = c, f
				t.Logf("broker %d has its ZooKeeper session on %s", b.BrokerID, z.Name)
				break pick
			}
		}
	}
	if b == nil {
		t.Fatalf("no broker but the controller %d leads a partition of %s", ctl, topic)
	}
	brokers, zks := e.others(b, z)
	t0 := time.Now()
	e.cut(z, append(brokers, zks...)...)
	e.cut(b, append(brokers, zks...)...)
	cutAt := time.Now() // the rules are in
	t.Logf("ZooKeeper %s (follower) and broker %d (leader of %v) cut off from %v and brokers %v",
		z.Name, b.BrokerID, e.ledBy(topic, b.BrokerID), names(zks), ids(brokers))
	gone := e.waitUnregistered(b.BrokerID, 60*time.Second)
	moved := e.waitLeadersMoved(topic, b.BrokerID, 60*time.Second)
	resumed := l.waitWrites(time.Now(), 60*time.Second)
	t.Logf("broker %d's session expired after %v; its partitions moved %v later; writes to every partition %v later",
		b.BrokerID, gone.Round(time.Millisecond), moved.Round(time.Millisecond), resumed.Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	e.must("heal", z.Name)
	e.must("heal", b.Name)
	healAt := time.Now()
	e.waitRegistered(b.BrokerID, 60*time.Second)
	e.finish(l, t0)
	l.checkCutOff(b, cutAt, healAt)
}

// TestFlappingLink: scenario 4. The link between a partition's leader and one of its
// followers goes down and up: short blips (1 s, shorter than replica.lag.time.max.ms, 5 s
// here: the follower stays in the ISR and acks=all waits for it) and a longer cut (8 s: the
// leader drops it from the ISR, and takes it back once it has caught up). ZooKeeper reaches
// both throughout.
func TestFlappingLink(t *testing.T) {
	e := setup(t)
	topic := topicName("flap")
	e.createTopic(topic)
	l := e.startLoad(topic)
	s, err := e.state(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := e.p.Broker(s.Leader)
	var f *Container
	for _, id := range s.ISR {
		if id != s.Leader {
			f = e.p.Broker(id)
			break
		}
	}
	t0 := time.Now()
	t.Logf("flapping the link between broker %d (leader of partition 0) and broker %d", a.BrokerID, f.BrokerID)
	for _, down := range []time.Duration{time.Second, time.Second, 8 * time.Second, time.Second} {
		e.must("cut", a.Name, f.Name)
		time.Sleep(down)
		e.must("uncut", a.Name, f.Name)
		time.Sleep(2 * time.Second)
	}
	resumed := l.waitWrites(time.Now(), 60*time.Second)
	t.Logf("flapped for %v; writes to every partition %v after the last heal", time.Since(t0).Round(time.Millisecond), resumed.Round(time.Millisecond))
	e.finish(l, t0)
}

func ids(cs []*Container) []int32 {
	var out []int32
	for _, c := range cs {
		out = append(out, c.BrokerID)
	}
	return out
}

func names(cs []*Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
