package integration

// Consumer groups on replicated partitions (issue 7 with replication, issue 5): three
// `samsa broker` processes, offsets.topic.replication.factor=3 and topics with replication
// factor 3. A sarama ConsumerGroup of three members consumes a six-partition topic while a
// producer (acks=all) writes to it; then the broker coordinating the group is killed with
// SIGKILL and a new coordinator (the new leader of the group's __consumer_offsets partition)
// must load the committed offsets. Helpers here are prefixed rf3.

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const rf3OffsetsPartitions = 6

func rf3Props() map[string]string {
	return map[string]string{
		"offsets.topic.replication.factor": "3",
		"offsets.topic.num.partitions":     fmt.Sprint(rf3OffsetsPartitions),
		"default.replication.factor":       "3",
		"group.min.session.timeout.ms":     "1000",
		"group.initial.rebalance.delay.ms": "300",
		"zookeeper.session.timeout.ms":     "3000",
		"replica.fetch.backoff.ms":         "200",
	}
}

// rf3Claim is one claim a member started: when, of which partition, at which offset.
type rf3Claim struct {
	member    string
	partition int32
	initial   int64 // the offset the claim starts at (the committed offset, or the oldest)
	at        time.Time
}

// rf3Group is what one group's members record: ownership, and every claim started.
type rf3Group struct {
	o      *ownership
	mu     sync.Mutex
	claims []rf3Claim
}

func (g *rf3Group) claimsSince(t time.Time) []rf3Claim {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []rf3Claim
	for _, c := range g.claims {
		if !c.at.Before(t) {
			out = append(out, c)
		}
	}
	return out
}

// startMember starts a sarama member (the shared member config, with 2 s metadata
// refreshes and dial timeouts) that records each claim it starts in g.claims.
func (g *rf3Group) startMember(t *testing.T, c *Cluster, groupID, topic, name string) *saramaMember {
	t.Helper()
	cfg := saramaMemberConfig(name, &sarama.V3_7_0_0)
	cfg.Metadata.RefreshFrequency = 2 * time.Second
	cfg.Net.DialTimeout = 2 * time.Second
	h := &saramaHandler{name: name, o: g.o, onClaim: func(cl sarama.ConsumerGroupClaim) {
		g.mu.Lock()
		g.claims = append(g.claims, rf3Claim{name, cl.Partition(), cl.InitialOffset(), time.Now()})
		g.mu.Unlock()
	}}
	return runSaramaMember(t, c, groupID, topic, cfg, h)
}

// rf3WaitConsumed waits until the group consumed every record rp has had acknowledged.
func rf3WaitConsumed(t *testing.T, o *ownership, rp *replProducer, timeout time.Duration) {
	t.Helper()
	rp.mu.Lock()
	acked := make([]record, len(rp.acked))
	for i, a := range rp.acked {
		acked[i] = record{Partition: a.partition, Offset: a.offset}
	}
	rp.mu.Unlock()
	waitFor(t, timeout, func() error {
		if n := o.missing(acked); n > 0 {
			return fmt.Errorf("%d of %d acknowledged records not consumed yet", n, len(acked))
		}
		return nil
	})
}

func rf3Violations(t *testing.T, o *ownership) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range o.violations {
		t.Error(v)
	}
}

// rf3Coordinator asks a broker FindCoordinator (group key) for groupID.
func rf3Coordinator(t *testing.T, c *Cluster, groupID string) int32 {
	t.Helper()
	var node int32 = -1
	waitFor(t, 30*time.Second, func() error {
		for _, addr := range c.Bootstrap() {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = groupID
			req.CoordinatorKeys = []string{groupID}
			resp, err := requestTo[*kmsg.FindCoordinatorResponse](t, addr, req)
			if err != nil {
				return err
			}
			code, id := resp.ErrorCode, resp.NodeID
			if resp.Version >= 4 {
				if len(resp.Coordinators) != 1 {
					return fmt.Errorf("%d coordinators", len(resp.Coordinators))
				}
				code, id = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
			}
			if code != 0 {
				return fmt.Errorf("FindCoordinator at %s: error %d", addr, code)
			}
			node = id
			return nil
		}
		return fmt.Errorf("no broker running")
	})
	return node
}

// rf3OffsetsPartition is Kafka's partitionFor: abs(String.hashCode(group)) % partitions.
func rf3OffsetsPartition(groupID string) int32 {
	var h int32
	for _, r := range groupID { // test group ids are ASCII, so runes are UTF-16 units
		h = 31*h + int32(r)
	}
	if h == -2147483648 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % rf3OffsetsPartitions
}

// rf3Start starts three broker processes (rf3Props), topic with 6 partitions and
// replication factor 3, a producer (acks=all) writing to it, and members member-a, -b and
// -c of groupID; it returns once each member owns two partitions and every
// __consumer_offsets partition has its 3 replicas in sync.
func rf3Start(t *testing.T, topic, groupID string) (*Cluster, *replProducer, *rf3Group, []*saramaMember) {
	t.Helper()
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: rf3Props()})
	createTopic(t, c, topic, 6, 3, nil)
	rp := startReplProducer(t, c, topic, 0, 2*time.Millisecond)
	g := &rf3Group{o: newOwnership()}
	var members []*saramaMember
	for _, name := range []string{"member-a", "member-b", "member-c"} {
		members = append(members, g.startMember(t, c, groupID, topic, name))
	}
	waitOwners(t, g.o, "member-a", "member-b", "member-c")
	t.Logf("3 members: %s", assignmentString(g.o.owners()))
	replWaitFullISR(t, c, "__consumer_offsets", rf3OffsetsPartitions, 3, 30*time.Second)
	return c, rp, g, members
}

// TestSaramaConsumerGroupRF3: three sarama members over six partitions with replication
// factor 3 everywhere, on broker processes, consuming while a producer writes; one member
// leaves cleanly, then one crashes (its connections cut, as in groups_test.go): each
// partition is owned by exactly one member at any time, the survivors take over, every
// acknowledged record is consumed and everything consumed ends up committed.
func TestSaramaConsumerGroupRF3(t *testing.T) {
	start := time.Now()
	const topic, groupID = "groups-rf3", "sarama-rf3"
	c, rp, g, members := rf3Start(t, topic, groupID)
	m2, m3 := members[1], members[2]
	time.Sleep(time.Second) // consume while producing
	m3.stop()               // a clean leave while producing: the two others take over
	waitOwners(t, g.o, "member-a", "member-b")
	t.Logf("after member-c left: %s", assignmentString(g.o.owners()))
	time.Sleep(time.Second)
	crashed := time.Now() // a crashed member (no LeaveGroup): removed after its session timeout
	m2.dialer.crash()
	g.o.kill("member-b")
	waitOwners(t, g.o, "member-a")
	t.Logf("after member-b crashed: %s (took over in %v)", assignmentString(g.o.owners()), time.Since(crashed).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	rp.close()
	if rp.failed > 0 {
		t.Fatalf("producer: %d failed, first %v", rp.failed, rp.first)
	}
	rf3WaitConsumed(t, g.o, rp, 30*time.Second)
	rf3Violations(t, g.o)
	ends := map[int32]int64{}
	for _, a := range rp.acked {
		ends[a.partition] = max(ends[a.partition], a.offset+1)
	}
	waitCommitted(t, c, groupID, topic, ends)
	t.Logf("%d records produced with acks=all and consumed (%d duplicates) in %v", len(rp.acked), g.o.duplicates(),
		time.Since(start).Round(time.Millisecond))
}

// TestSaramaGroupCoordinatorFailoverRF3: kill -9 the broker coordinating a group of three
// sarama members while they consume and commit; the new leader of the group's
// __consumer_offsets partition becomes the coordinator and loads the offsets; the members
// rejoin; committed offsets never go backwards, no member resumes before the last commit
// seen before the kill, and every acknowledged record is consumed.
func TestSaramaGroupCoordinatorFailoverRF3(t *testing.T) {
	start := time.Now()
	const topic, groupID = "groups-rf3-failover", "sarama-rf3-failover"
	c, rp, g, _ := rf3Start(t, topic, groupID)
	replWaitFullISR(t, c, topic, 6, 3, 30*time.Second)

	offsetsPartition := rf3OffsetsPartition(groupID)
	coordinator := rf3Coordinator(t, c, groupID)
	leader, isr, err := replLeader(c, "__consumer_offsets", offsetsPartition)
	if err != nil {
		t.Fatal(err)
	}
	if leader != coordinator {
		t.Fatalf("coordinator %d is not the leader %d of __consumer_offsets-%d", coordinator, leader, offsetsPartition)
	}
	time.Sleep(time.Second) // consume and commit a while
	before := committedOffsets(t, c, groupID, topic)
	for p := int32(0); p < 6; p++ {
		if before[p] <= 0 {
			t.Fatalf("nothing committed for partition %d before the kill: %v", p, before)
		}
	}
	killed := time.Now()
	c.Broker(coordinator).Kill()
	t.Logf("killed coordinator broker %d (leader of __consumer_offsets-%d, ISR %v); committed before: %v",
		coordinator, offsetsPartition, isr, before)

	var newCoordinator int32
	waitFor(t, 30*time.Second, func() error {
		l, _, err := replLeader(c, "__consumer_offsets", offsetsPartition)
		if err != nil {
			return err
		}
		if l == coordinator || l < 0 {
			return fmt.Errorf("__consumer_offsets-%d still led by %d", offsetsPartition, l)
		}
		newCoordinator = l
		return nil
	})
	// Brokers learn the new leader through UpdateMetadata, so FindCoordinator follows shortly.
	waitFor(t, 10*time.Second, func() error {
		if got := rf3Coordinator(t, c, groupID); got != newCoordinator {
			return fmt.Errorf("FindCoordinator answers %d, the new leader of __consumer_offsets-%d is %d", got, offsetsPartition, newCoordinator)
		}
		return nil
	})
	t.Logf("new coordinator %d after %v", newCoordinator, time.Since(killed).Round(time.Millisecond))
	waitFor(t, 60*time.Second, func() error { // a new generation claimed every partition
		parts := map[int32]bool{}
		for _, cl := range g.claimsSince(killed) {
			parts[cl.partition] = true
		}
		if len(parts) != 6 {
			return fmt.Errorf("claims since the kill: %v", parts)
		}
		return nil
	})
	waitOwners(t, g.o, "member-a", "member-b", "member-c")
	t.Logf("members rejoined after %v: %s", time.Since(killed).Round(time.Millisecond), assignmentString(g.o.owners()))
	time.Sleep(time.Second) // consume and commit under the new coordinator
	rp.close()
	if rp.failed > 0 {
		t.Fatalf("producer: %d failed, first %v", rp.failed, rp.first)
	}
	rf3WaitConsumed(t, g.o, rp, 60*time.Second)

	after := committedOffsets(t, c, groupID, topic)
	for p, off := range before {
		if after[p] < off {
			t.Errorf("partition %d: committed offset went backwards: %d before the kill, %d after", p, off, after[p])
		}
	}
	claims := g.claimsSince(killed)
	resumed := map[int32]bool{}
	for _, cl := range claims {
		resumed[cl.partition] = true
		t.Logf("after the kill %s claimed partition %d at offset %d (committed before the kill: %d)",
			cl.member, cl.partition, cl.initial, before[cl.partition])
		if cl.initial < before[cl.partition] {
			t.Errorf("%s resumed partition %d at %d after the failover, below the offset %d committed before the kill",
				cl.member, cl.partition, cl.initial, before[cl.partition])
		}
	}
	// Records consumed twice must all be ones not yet committed when the coordinator died.
	g.o.mu.Lock()
	for k, n := range g.o.seen {
		if p, off := int32(k[0]), k[1]; n > 1 && off < before[p] {
			t.Errorf("partition %d offset %d consumed %d times, below the offset %d committed before the kill", p, off, n, before[p])
		}
	}
	g.o.mu.Unlock()
	if len(resumed) != 6 {
		t.Errorf("after the failover claims started on partitions %v, want all 6 (members rejoined)", resumed)
	}
	rf3Violations(t, g.o)
	t.Logf("%d acknowledged records all consumed (%d consumed twice: uncommitted at the kill); committed %v after; %d claims after the kill; took %v",
		len(rp.acked), g.o.duplicates(), after, len(claims), time.Since(start).Round(time.Millisecond))
}
