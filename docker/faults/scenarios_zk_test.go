//go:build dockertest

package faults

// ZooKeeper ensemble faults under load: a server killed or cut off from everything and back.
// The brokers must keep their sessions (same registration znodes, same owners: no
// re-registration), the controller must not change, no write may fail (retriable errors
// only), nothing acknowledged may be lost.

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// sessions is every broker's registration (czxid, ephemeral owner) and the controller's.
type sessions struct {
	regs       map[int32][2]int64
	controller int32
	czxid      int64
}

func (e *env) sessions() sessions {
	e.t.Helper()
	s := sessions{regs: map[int32][2]int64{}}
	for _, b := range e.p.Brokers {
		cz, owner, err := e.registration(b.BrokerID)
		if err != nil {
			e.t.Fatal(err)
		}
		s.regs[b.BrokerID] = [2]int64{cz, owner}
	}
	var err error
	if s.controller, s.czxid, err = e.controller(); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// checkKept: every broker and the controller as in before.
func (e *env) checkKept(before sessions) {
	e.t.Helper()
	for _, b := range e.p.Brokers {
		cz, owner, err := e.registration(b.BrokerID)
		if err != nil {
			e.t.Errorf("broker %d: %v", b.BrokerID, err)
			continue
		}
		if was := before.regs[b.BrokerID]; [2]int64{cz, owner} != was {
			e.t.Errorf("broker %d re-registered: czxid/session %#x/%#x, was %#x/%#x", b.BrokerID, cz, owner, was[0], was[1])
		}
	}
	if now, cz, err := e.controller(); err != nil || now != before.controller || cz != before.czxid {
		e.t.Errorf("controller %d (czxid %#x), was %d (czxid %#x): %v", now, cz, before.controller, before.czxid, err)
	}
}

// busiestFollower is the ZooKeeper follower (not in skip) most brokers have their sessions
// on: taking it away makes them move.
func (e *env) busiestFollower(skip *Container) *Container {
	e.t.Helper()
	leader := e.zkLeader()
	var z *Container
	most := -1
	for _, c := range e.p.ZK {
		if c == leader || c == skip {
			continue
		}
		if s, err := e.zkSessions(c); err == nil && len(s) > most {
			z, most = c, len(s)
		}
	}
	if z == nil {
		e.t.Fatal("no ZooKeeper follower answers stat")
	}
	return z
}

// TestZooKeeperEnsembleRestarts: the ensemble's leader, then a follower, killed and
// restarted under load.
func TestZooKeeperEnsembleRestarts(t *testing.T) {
	e := setup(t)
	topic := topicName("ensemble")
	e.createTopic(topic)
	l := e.startLoad(topic)
	before := e.sessions()
	t0 := time.Now()
	var last *Container
	for _, role := range []string{"leader", "follower"} {
		z := e.zkLeader()
		if role == "follower" {
			z = e.busiestFollower(last) // the restarted one's sessions have moved away
		}
		on, err := e.zkSessions(z)
		if err != nil {
			t.Fatalf("stat %s: %v", z.Name, err)
		}
		last = z
		killed := time.Now()
		e.must("kill", z.Name)
		resumed := l.waitWrites(time.Now(), 60*time.Second)
		t.Logf("killed ZooKeeper %s (%s, sessions of brokers %v); %s leads the ensemble; writes to every partition %v after the kill",
			z.Name, role, on, e.zkLeader().Name, resumed.Round(time.Millisecond))
		time.Sleep(2 * time.Second)
		e.must("start", z.Name)
		e.waitFor(z.Name+" serving again", 60*time.Second, func() error { return serves(z) })
		t.Logf("%s back after %v", z.Name, time.Since(killed).Round(time.Millisecond))
	}
	l.waitWrites(time.Now(), 60*time.Second)
	e.checkKept(before)
	if r := e.finish(l, t0); r.Failed > 0 {
		t.Errorf("%d writes failed: ZooKeeper restarts must cost producers retries only", r.Failed)
	}
}

// TestZooKeeperServerDisconnected: the ZooKeeper server most brokers have their sessions on
// (leader or follower) taken off the network (docker network disconnect: not even the host
// reaches it) until those sessions have moved, and put back.
func TestZooKeeperServerDisconnected(t *testing.T) {
	e := setup(t)
	topic := topicName("zkdisconnect")
	e.createTopic(topic)
	l := e.startLoad(topic)
	before := e.sessions()
	leader := e.zkLeader()
	var z *Container
	var on []int32
	for _, c := range e.p.ZK {
		s, err := e.zkSessions(c)
		if err != nil {
			t.Fatalf("stat %s: %v", c.Name, err)
		}
		if z == nil || len(s) > len(on) {
			z, on = c, s
		}
	}
	role := "follower"
	if z == leader {
		role = "leader"
	}
	t0 := time.Now()
	e.must("disconnect", z.Name, z.Network)
	if err := serves(z); err == nil {
		t.Fatalf("%s still serves after docker network disconnect", z.Name)
	}
	resumed := l.waitWrites(time.Now(), 60*time.Second)
	// Off long enough to matter: its brokers' clients notice (no answer to their pings
	// within 2/3 of the session timeout) and take their sessions elsewhere, and the ensemble
	// drops it (syncLimit, 2 ticks of 2 s).
	moved := e.waitFor("the sessions on "+z.Name+" moved to other servers", 60*time.Second, func() error {
		var elsewhere []int32
		for _, c := range e.p.ZK {
			if c != z {
				s, err := e.zkSessions(c)
				if err != nil {
					return err
				}
				elsewhere = append(elsewhere, s...)
			}
		}
		for _, id := range on {
			if !slices.Contains(elsewhere, id) {
				return fmt.Errorf("broker %d has no session on the other servers (%v there)", id, elsewhere)
			}
		}
		return nil
	})
	if d := 6*time.Second - time.Since(t0); d > 0 {
		time.Sleep(d)
	}
	t.Logf("disconnected ZooKeeper %s (%s, sessions of brokers %v); writes to every partition %v later; sessions moved after %v",
		z.Name, role, on, resumed.Round(time.Millisecond), moved.Round(time.Millisecond))
	e.must("reconnect", z.Name, z.Network)
	e.waitFor(z.Name+" serving again", 60*time.Second, func() error { return serves(z) })
	t.Logf("%s back in the ensemble %v after the disconnect", z.Name, time.Since(t0).Round(time.Millisecond))
	l.waitWrites(time.Now(), 60*time.Second)
	e.checkKept(before)
	if r := e.finish(l, t0); r.Failed > 0 {
		t.Errorf("%d writes failed: a lost ZooKeeper server must cost producers retries only", r.Failed)
	}
}
