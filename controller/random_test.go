package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRandomBrokerChurnInvariants drives the event loop with seeded random broker failures,
// returns, restarts and topic creations (unclean election off) and checks after every event:
//   - a partition's leader is -1, or live, assigned and in the ISR;
//   - the ISR is never empty; with a leader, every ISR member is live;
//   - if any ISR member is live, the partition has a leader (the election is complete);
//   - leader epochs and partition epochs never go backwards;
//   - the controller's cache equals the state znodes.
func TestRandomBrokerChurnInvariants(t *testing.T) {
	seeds := []uint64{1, 2, uint64(time.Now().UnixNano())}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runChurn(t, seed, 150) })
	}
}

func runChurn(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed))
	h := &stepHarness{t: t, quiet: true}
	h.zk = newFakeStore(&h.out)
	h.run("broker up 1")
	h.run("broker up 2")
	h.run("broker up 3")
	h.run("elect")
	type epochs struct{ leader, partition int32 }
	last := map[TopicPartition]epochs{}
	topics := 0
	for step := 0; step < steps; step++ {
		var op string
		switch r := rng.IntN(10); {
		case r < 3:
			op = fmt.Sprintf("broker up %d", 1+rng.IntN(5)) // new or bounced
		case r < 7:
			ids := sortedKeys(h.zk.brokers)
			if len(ids) == 0 {
				continue
			}
			op = fmt.Sprintf("broker down %d", ids[rng.IntN(len(ids))])
		default:
			topics++
			rf := int16(1 + rng.IntN(3))
			a, err := AssignReplicasToBrokers(brokersNoRack(1, 2, 3, 4, 5), int32(1+rng.IntN(3)), rf, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for p, rs := range a {
				var ids []string
				for _, r := range rs {
					ids = append(ids, fmt.Sprint(r))
				}
				parts = append(parts, fmt.Sprintf("%d=%s", p, strings.Join(ids, ",")))
			}
			op = fmt.Sprintf("topic t%d %s", topics, strings.Join(parts, " "))
		}
		h.out.Reset()
		h.run(op)
		if strings.HasPrefix(op, "topic") {
			h.run("event TopicChange")
		} else {
			h.run("event BrokerChange")
		}
		if strings.Contains(h.out.String(), "resign") {
			t.Fatalf("seed %d step %d (%s): controller resigned:\n%s", seed, step, op, h.out.String())
		}
		c := h.loop.ctx
		for _, tp := range c.allPartitions() {
			st, ok := c.partitionLeadership[tp]
			zst, zok := h.zk.states[tp]
			if ok != zok || (ok && fmtState(st) != fmtState(zst)) {
				t.Fatalf("seed %d step %d (%s): %s cache %v/%s, znode %v/%s", seed, step, op, tp, ok, fmtState(st), zok, fmtState(zst))
			}
			if !ok {
				// Only a partition none of whose replicas was ever live may lack a state.
				for _, r := range c.replicas(tp) {
					if c.isLive(r) {
						t.Fatalf("seed %d step %d (%s): %s has a live replica %d but no state", seed, step, op, tp, r)
					}
				}
				continue
			}
			fail := func(msg string) {
				t.Fatalf("seed %d step %d (%s): %s %s: %s", seed, step, op, tp, fmtState(st), msg)
			}
			if len(st.ISR) == 0 {
				fail("empty ISR")
			}
			if st.Leader != NoLeader {
				if !c.isLive(st.Leader) || !slices.Contains(st.ISR, st.Leader) || !slices.Contains(c.replicas(tp), st.Leader) {
					fail("leader not live, not in the ISR or not assigned")
				}
				for _, r := range st.ISR {
					if !c.isLive(r) {
						fail(fmt.Sprintf("dead broker %d in the ISR of a led partition", r))
					}
				}
			} else {
				for _, r := range st.ISR {
					if c.isLive(r) && slices.Contains(c.replicas(tp), r) {
						fail(fmt.Sprintf("no leader although ISR member %d is live", r))
					}
				}
			}
			if prev, seen := last[tp]; seen && (st.LeaderEpoch < prev.leader || st.PartitionEpoch < prev.partition) {
				fail(fmt.Sprintf("epochs went backwards from %+v", prev))
			}
			last[tp] = epochs{st.LeaderEpoch, st.PartitionEpoch}
		}
	}
}
