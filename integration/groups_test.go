package integration

// Consumer groups against the group coordinator (issue 7): a sarama ConsumerGroup of three
// members over six partitions (ownership, clean leave, a crashed member, resuming at
// committed offsets), franz-go's group consumer with cooperative-sticky, kcat -G, and the
// __consumer_offsets records decoded with kmsg.
//
// Replication does not exist yet, so topics and __consumer_offsets have replication factor 1
// (the harness sets offsets.topic.replication.factor=1) and brokers run in process; a
// "kill -9" of a member is simulated by cutting all its connections and refusing new ones
// (no LeaveGroup reaches the coordinator, as after a crash). Coordinator failover needs
// replicated offsets partitions and is not tested here yet.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupProps lower the session timeout floor so tests can use short sessions.
var groupProps = map[string]string{
	"group.min.session.timeout.ms": "1000",
	"offsets.topic.num.partitions": "10",
}

// ownership records which member holds each partition and which records each consumed.
type ownership struct {
	mu         sync.Mutex
	owner      map[int32]string
	dead       map[string]bool
	violations []string
	seen       map[[2]int64]int
	first      map[string]map[int32]int64 // member -> partition -> first offset consumed
}

func newOwnership() *ownership {
	return &ownership{owner: map[int32]string{}, dead: map[string]bool{}, seen: map[[2]int64]int{},
		first: map[string]map[int32]int64{}}
}

func (o *ownership) claim(member string, p int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead[member] {
		return
	}
	if cur, ok := o.owner[p]; ok && cur != member && !o.dead[cur] {
		o.violations = append(o.violations, fmt.Sprintf("partition %d claimed by %s while %s owns it", p, member, cur))
	}
	o.owner[p] = member
}

func (o *ownership) release(member string, p int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.owner[p] == member {
		delete(o.owner, p)
	}
}

func (o *ownership) consumed(member string, p int32, off int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead[member] {
		return // a crashed process consumes nothing more
	}
	o.seen[[2]int64{int64(p), off}]++
	if o.first[member] == nil {
		o.first[member] = map[int32]int64{}
	}
	if _, ok := o.first[member][p]; !ok {
		o.first[member][p] = off
	}
}

func (o *ownership) kill(member string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dead[member] = true
	for p, m := range o.owner {
		if m == member {
			delete(o.owner, p)
		}
	}
}

// owners returns member -> owned partitions (sorted).
func (o *ownership) owners() map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int32{}
	for p, m := range o.owner {
		out[m] = append(out[m], p)
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return out
}

func (o *ownership) missing(sent []record) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range sent {
		if o.seen[[2]int64{int64(r.Partition), r.Offset}] == 0 {
			n++
		}
	}
	return n
}

func (o *ownership) duplicates() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.seen {
		n += c - 1
	}
	return n
}

// saramaHandler records each claim, and each record consumed, in o; it marks what it
// consumed for sarama's auto-commit.
type saramaHandler struct {
	name    string
	o       *ownership
	onClaim func(sarama.ConsumerGroupClaim) // optional: called as each claim starts
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	if h.onClaim != nil {
		h.onClaim(c)
	}
	h.o.claim(h.name, c.Partition())
	defer h.o.release(h.name, c.Partition())
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.o.consumed(h.name, m.Partition, m.Offset)
			s.MarkMessage(m, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// cuttableDialer lets a test cut every connection of one client at once, like a crash.
type cuttableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (d *cuttableDialer) Dial(network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("connection refused (member crashed)")
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttableDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
}

type saramaMember struct {
	name   string
	group  sarama.ConsumerGroup
	dialer *cuttableDialer
	cancel context.CancelFunc
	done   chan struct{}
}

func startSaramaMember(t *testing.T, c *Cluster, groupID, topic, name string, o *ownership) *saramaMember {
	return startSaramaMemberVersion(t, c, groupID, topic, name, o, &sarama.V3_7_0_0)
}

// startSaramaMemberVersion starts a member with sarama's Config.Version set to v (nil: sarama's default).
func startSaramaMemberVersion(t *testing.T, c *Cluster, groupID, topic, name string, o *ownership, v *sarama.KafkaVersion) *saramaMember {
	t.Helper()
	return runSaramaMember(t, c, groupID, topic, saramaMemberConfig(name, v), &saramaHandler{name: name, o: o})
}

// saramaMemberConfig is the group members' config: 3 s sessions, 300 ms heartbeats,
// auto-commit every 200 ms, from the oldest offset when nothing is committed.
func saramaMemberConfig(name string, v *sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	if v != nil {
		cfg.Version = *v
	}
	cfg.ClientID = name
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 3 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Return.Errors = false
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	return cfg
}

// runSaramaMember joins groupID with cfg (its ClientID names the member) through a
// cuttableDialer and consumes topic with h until stopped; the test's end stops it.
func runSaramaMember(t *testing.T, c *Cluster, groupID, topic string, cfg *sarama.Config, h sarama.ConsumerGroupHandler) *saramaMember {
	t.Helper()
	name := cfg.ClientID
	d := &cuttableDialer{}
	cfg.Net.Proxy.Enable, cfg.Net.Proxy.Dialer = true, d
	g, err := sarama.NewConsumerGroup(c.Bootstrap(), groupID, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{name: name, group: g, dialer: d, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop leaves the group cleanly (sarama commits marked offsets and sends LeaveGroup).
func (m *saramaMember) stop() {
	m.cancel()
	<-m.done
	m.group.Close()
}

func assignmentString(owners map[string][]int32) string {
	var names []string
	for n := range owners {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%v ", n, owners[n])
	}
	return b.String()
}

// waitOwners waits until exactly the members in want own all six partitions, evenly.
func waitOwners(t *testing.T, o *ownership, want ...string) {
	t.Helper()
	waitFor(t, 60*time.Second, func() error {
		owners := o.owners()
		total := 0
		for _, n := range want {
			if len(owners[n]) != 6/len(want) {
				return fmt.Errorf("assignment %s, want %v with %d each", assignmentString(owners), want, 6/len(want))
			}
			total += len(owners[n])
		}
		if total != 6 || len(owners) != len(want) {
			return fmt.Errorf("assignment %s", assignmentString(owners))
		}
		return nil
	})
}

func waitConsumed(t *testing.T, o *ownership, sent []record) {
	t.Helper()
	waitFor(t, 60*time.Second, func() error {
		if n := o.missing(sent); n > 0 {
			return fmt.Errorf("%d of %d records not consumed yet", n, len(sent))
		}
		return nil
	})
}

func TestSaramaConsumerGroup(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, groupID = "groups-sarama", "sarama-group"
	createTopic(t, c, topic, 6, 1, nil)
	o := newOwnership()
	var sent []record
	sent = append(sent, kgoProduceFrom(t, c, topic, 0, 300, kgo.NoCompression(), false)...)

	a := startSaramaMember(t, c, groupID, topic, "member-a", o)
	b := startSaramaMember(t, c, groupID, topic, "member-b", o)
	m3 := startSaramaMember(t, c, groupID, topic, "member-c", o)
	waitOwners(t, o, "member-a", "member-b", "member-c")
	waitConsumed(t, o, sent)
	t.Logf("3 members: %s", assignmentString(o.owners()))

	// A clean leave: the two others take over its partitions.
	m3.stop()
	waitOwners(t, o, "member-a", "member-b")
	sent = append(sent, kgoProduceFrom(t, c, topic, 300, 300, kgo.NoCompression(), false)...)
	waitConsumed(t, o, sent)
	t.Logf("after a clean leave: %s", assignmentString(o.owners()))

	// A crash: no LeaveGroup; the coordinator removes it after its session timeout. Crash
	// once everything consumed is committed, so the survivor must resume exactly there.
	waitCommittedEnds(t, c, groupID, topic, sent)
	crashed := time.Now()
	b.dialer.crash()
	o.kill("member-b")
	sent = append(sent, kgoProduceFrom(t, c, topic, 600, 300, kgo.NoCompression(), false)...)
	waitOwners(t, o, "member-a")
	t.Logf("after a crash: %s (took over in %v)", assignmentString(o.owners()), time.Since(crashed).Round(time.Millisecond))
	waitConsumed(t, o, sent)

	// Resume at the committed offsets: a new member after the last one left.
	a.stop()
	committed := committedOffsets(t, c, groupID, topic)
	for p := int32(0); p < 6; p++ {
		end := int64(0)
		for _, r := range sent {
			if r.Partition == p && r.Offset+1 > end {
				end = r.Offset + 1
			}
		}
		if committed[p] != end {
			t.Errorf("partition %d: committed %d, want %d (everything consumed)", p, committed[p], end)
		}
	}
	more := kgoProduceFrom(t, c, topic, 900, 120, kgo.NoCompression(), false)
	sent = append(sent, more...)
	startSaramaMember(t, c, groupID, topic, "member-d", o)
	waitOwners(t, o, "member-d")
	waitConsumed(t, o, sent)
	o.mu.Lock()
	for p, off := range o.first["member-d"] {
		if off != committed[p] {
			t.Errorf("member-d started partition %d at %d, committed %d", p, off, committed[p])
		}
	}
	o.mu.Unlock()
	o.mu.Lock()
	violations := o.violations
	o.mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	if d := o.duplicates(); d != 0 {
		t.Errorf("%d records consumed twice: a member did not resume at the committed offset", d)
	}
	t.Logf("%d records consumed exactly once", len(sent))

	checkOffsetsTopicRecords(t, c, groupID, topic)
}

// waitCommittedEnds waits until the group committed the end of every partition of sent.
func waitCommittedEnds(t *testing.T, c *Cluster, groupID, topic string, sent []record) {
	t.Helper()
	ends := map[int32]int64{}
	for _, r := range sent {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	waitCommitted(t, c, groupID, topic, ends)
}

// waitCommitted waits until the group's committed offsets are ends (partition → offset).
func waitCommitted(t *testing.T, c *Cluster, groupID, topic string, ends map[int32]int64) {
	t.Helper()
	waitFor(t, 30*time.Second, func() error {
		committed := committedOffsets(t, c, groupID, topic)
		for p, end := range ends {
			if committed[p] != end {
				return fmt.Errorf("partition %d: committed %d, want %d", p, committed[p], end)
			}
		}
		return nil
	})
}

// committedOffsets asks the group's coordinator (OffsetFetch through kadm).
func committedOffsets(t *testing.T, c *Cluster, groupID, topic string) map[int32]int64 {
	t.Helper()
	adm := adminClient(t, c)
	out := map[int32]int64{}
	waitFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := adm.FetchOffsets(ctx, groupID)
		if err != nil {
			return err
		}
		if err := resp.Error(); err != nil {
			return err
		}
		for p, o := range resp[topic] {
			out[p] = o.At
		}
		return nil
	})
	return out
}

// checkOffsetsTopicRecords reads __consumer_offsets and decodes every record with kmsg's
// OffsetCommitKey/Value and GroupMetadataKey/Value.
func checkOffsetsTopicRecords(t *testing.T, c *Cluster, groupID, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumeTopics("__consumer_offsets"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithLogger(kgoTestLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var commits, groups int
	var lastGroup *kmsg.GroupMetadataValue
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil && (commits == 0 || groups == 0 || lastGroup == nil || lastGroup.Generation < 3) {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Key) < 2 {
				t.Errorf("short key at %d-%d", r.Partition, r.Offset)
				return
			}
			switch version := int16(r.Key[0])<<8 | int16(r.Key[1]); version {
			case 0, 1:
				var k kmsg.OffsetCommitKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Errorf("offset commit key: %v", err)
					return
				}
				if k.Group != groupID || r.Value == nil {
					return
				}
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil || v.Version != 3 || k.Topic != topic {
					t.Errorf("offset commit value v%d of %s/%s-%d: %v", v.Version, k.Group, k.Topic, k.Partition, err)
				}
				commits++
			case 2:
				var k kmsg.GroupMetadataKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Errorf("group metadata key: %v", err)
					return
				}
				if k.Group != groupID || r.Value == nil {
					return
				}
				var v kmsg.GroupMetadataValue
				if err := v.ReadFrom(r.Value); err != nil || v.Version != 3 || v.ProtocolType != "consumer" {
					t.Errorf("group metadata value v%d: %v", v.Version, err)
					return
				}
				groups++
				lastGroup = &v
			default:
				t.Errorf("unknown key version %d", version)
			}
		})
	}
	if commits == 0 || groups == 0 || lastGroup == nil {
		t.Fatalf("__consumer_offsets: %d offset commits, %d group records of %s", commits, groups, groupID)
	}
	t.Logf("__consumer_offsets: %d offset commits and %d group records of %s decoded with kmsg; last generation %d",
		commits, groups, groupID, lastGroup.Generation)
}

// TestFranzGoCooperativeStickyGroup runs three kgo group consumers with the
// cooperative-sticky balancer: every record is consumed, partitions are spread.
func TestFranzGoCooperativeStickyGroup(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, groupID = "groups-kgo", "kgo-group"
	createTopic(t, c, topic, 6, 1, nil)
	sent := kgoProduce(t, c, topic, 600, kgo.NoCompression(), false)
	o := newOwnership()
	var clients []*kgo.Client
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		for _, cl := range clients {
			cl.Close()
		}
	}()
	assigned := make([]map[int32]bool, 3)
	var amu sync.Mutex
	for i := range 3 {
		name := fmt.Sprintf("kgo-%d", i)
		assigned[i] = map[int32]bool{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(3*time.Second),
			kgo.HeartbeatInterval(300*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.ClientID(name), kgo.WithLogger(kgoTestLogger(t)),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				amu.Lock()
				defer amu.Unlock()
				for _, p := range m[topic] {
					assigned[i][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
				// What kgo does when this callback is not set: commit before giving up partitions.
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					t.Logf("%s: commit on revoke: %v", name, err)
				}
				amu.Lock()
				defer amu.Unlock()
				for _, p := range m[topic] {
					delete(assigned[i], p)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) { o.consumed(name, r.Partition, r.Offset) })
			}
		}()
	}
	waitConsumed(t, o, sent)
	waitFor(t, 60*time.Second, func() error {
		amu.Lock()
		defer amu.Unlock()
		seen := map[int32]int{}
		for i := range assigned {
			if len(assigned[i]) != 2 {
				return fmt.Errorf("member %d owns %d partitions: %v", i, len(assigned[i]), assigned)
			}
			for p := range assigned[i] {
				seen[p]++
			}
		}
		for p := int32(0); p < 6; p++ {
			if seen[p] != 1 {
				return fmt.Errorf("partition %d owned %d times", p, seen[p])
			}
		}
		return nil
	})
	if d := o.duplicates(); d != 0 {
		t.Errorf("%d records consumed twice", d)
	}
}

// TestKcatGroup consumes a topic with kcat -G (librdkafka's balanced consumer).
func TestKcatGroup(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: apt-get install -y kcat")
	}
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, groupID = "groups-kcat", "kcat-group"
	createTopic(t, c, topic, 6, 1, nil)
	sent := kgoProduce(t, c, topic, 300, kgo.NoCompression(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", strings.Join(c.Bootstrap(), ","), "-G", groupID, "-X", "auto.offset.reset=earliest",
		"-X", "session.timeout.ms=6000", "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=200",
		"-f", "%p\t%o\n", "-e", topic)
	w := newTestLogWriter(t, "kcat: ")
	defer w.Close()
	cmd.Stderr = w
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat -G: %v (%d bytes of output)", err, len(out))
	}
	o := newOwnership()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var p int32
		var off int64
		if _, err := fmt.Sscanf(line, "%d\t%d", &p, &off); err != nil {
			t.Fatalf("kcat line %q: %v", line, err)
		}
		o.consumed("kcat", p, off)
	}
	if n := o.missing(sent); n > 0 {
		t.Fatalf("kcat -G missed %d of %d records", n, len(sent))
	}
	// librdkafka commits on close: the group's offsets are at the end of every partition.
	committed := committedOffsets(t, c, groupID, topic)
	ends := map[int32]int64{}
	for _, r := range sent {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	for p, end := range ends {
		if committed[p] != end {
			t.Errorf("partition %d: committed %d, want %d", p, committed[p], end)
		}
	}
}

// TestConsumerGroupsCommand drives `samsa console-consumer --group` (which commits) and
// `samsa consumer-groups` (kafka-consumer-groups.sh) against the coordinator.
func TestConsumerGroupsCommand(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, groupID = "groups-cli", "cli-group"
	createTopic(t, c, topic, 3, 1, nil)
	sent := kgoProduce(t, c, topic, 30, kgo.NoCompression(), false)
	bs := strings.Join(c.Bootstrap(), ",")
	if out, err := samsaStdout(t, "console-consumer", "--bootstrap-server", bs, "--topic", topic, "--group", groupID,
		"--from-beginning", "--max-messages", "30"); err != nil || strings.Count(out, "\n") != 30 {
		t.Fatalf("console-consumer --group: %v, %d lines", err, strings.Count(out, "\n"))
	}
	waitCommittedEnds(t, c, groupID, topic, sent)

	out, err := samsaStdout(t, "consumer-groups", "--bootstrap-server", bs, "--list")
	if err != nil || !containsLine(out, groupID) {
		t.Fatalf("--list: %v\n%s", err, out)
	}
	out, err = samsaStdout(t, "consumer-groups", "--bootstrap-server", bs, "--describe", "--group", groupID)
	if err != nil || !strings.Contains(out, "has no active members") || !strings.Contains(out, "LOG-END-OFFSET") {
		t.Fatalf("--describe: %v\n%s", err, out)
	}
	ends := map[int32]int64{}
	for _, r := range sent {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	for p, end := range ends {
		row := fmt.Sprintf("%s %s %d %d %d 0 - - -", groupID, topic, p, end, end)
		if !containsFields(out, row) {
			t.Errorf("--describe: no row %q in\n%s", row, out)
		}
	}
	out, err = samsaStdout(t, "consumer-groups", "--bootstrap-server", bs, "--reset-offsets", "--group", groupID,
		"--topic", topic, "--to-earliest", "--execute")
	if err != nil || !strings.Contains(out, "NEW-OFFSET") {
		t.Fatalf("--reset-offsets: %v\n%s", err, out)
	}
	committed := committedOffsets(t, c, groupID, topic)
	for p := range ends {
		if committed[p] != 0 {
			t.Errorf("after --to-earliest: partition %d committed %d", p, committed[p])
		}
	}
	out, err = samsaStdout(t, "consumer-groups", "--bootstrap-server", bs, "--describe", "--group", groupID, "--state")
	if err != nil || !containsFields(out, groupID) || !strings.Contains(out, "Empty") {
		t.Fatalf("--describe --state: %v\n%s", err, out)
	}
	out, err = samsaStdout(t, "consumer-groups", "--bootstrap-server", bs, "--delete", "--group", groupID)
	if err != nil || !strings.Contains(out, "Deletion of requested consumer groups ('"+groupID+"') was successful.") {
		t.Fatalf("--delete: %v\n%s", err, out)
	}
	out, err = samsaStdout(t, "consumer-groups", "--bootstrap-server", bs, "--list")
	if err != nil || containsLine(out, groupID) {
		t.Fatalf("--list after delete: %v\n%s", err, out)
	}
}

// containsFields reports a line whose whitespace-separated fields equal want's.
func containsFields(out, want string) bool {
	w := strings.Fields(want)
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < len(w) {
			continue
		}
		ok := true
		for i := range w {
			ok = ok && f[i] == w[i]
		}
		if ok {
			return true
		}
	}
	return false
}

// TestCoordinatorCrashReloadsOffsets kill -9s the broker coordinating a group (processes,
// RF 1) and restarts it: on becoming leader of its offsets partition again it loads the
// group and offsets from __consumer_offsets, and a new member resumes exactly at the commits.
// With replication factor 1 the offsets partition is offline while its only replica is down;
// failover to another replica needs replication (a later issue).
func TestCoordinatorCrashReloadsOffsets(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: groupProps})
	const topic, groupID = "groups-crash", "crash-group"
	createTopic(t, c, topic, 6, 1, nil)
	sent := kgoProduce(t, c, topic, 300, kgo.NoCompression(), false)
	o := newOwnership()
	consume := func(name string, want []record) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.SessionTimeout(3*time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID(name),
			kgo.WithLogger(kgoTestLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close() // commits what was polled and leaves the group
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for ctx.Err() == nil && o.missing(want) > 0 {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { o.consumed(name, r.Partition, r.Offset) })
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("%s: commit: %v", name, err)
		}
	}
	consume("before-crash", sent)
	before := committedOffsets(t, c, groupID, topic)

	adm := adminClient(t, c)
	var coordinator int32 = -1
	waitFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := adm.DescribeGroups(ctx, groupID)
		if err != nil {
			return err
		}
		if d[groupID].Err != nil {
			return d[groupID].Err
		}
		coordinator = d[groupID].Coordinator.NodeID
		return nil
	})
	killed := c.Broker(coordinator)
	killed.Kill()
	t.Logf("killed coordinator broker %d", coordinator)
	killed.Restart()
	more := kgoProduceFrom(t, c, topic, 300, 120, kgo.NoCompression(), false)
	after := committedOffsets(t, c, groupID, topic)
	for p, off := range before {
		if after[p] != off {
			t.Errorf("partition %d: committed %d before the crash, %d after reloading", p, off, after[p])
		}
	}
	all := append(append([]record(nil), sent...), more...)
	consume("after-crash", all)
	o.mu.Lock()
	for p, off := range o.first["after-crash"] {
		if off != before[p] {
			t.Errorf("after the crash partition %d resumed at %d, committed %d", p, off, before[p])
		}
	}
	o.mu.Unlock()
	if d := o.duplicates(); d != 0 {
		t.Errorf("%d records consumed twice", d)
	}
}

// TestStaticMemberRestartWithoutRebalance: two static members (group.instance.id, eager range
// assignor); one restarts within the session timeout and gets its partitions back without a
// rebalance: the other member is never revoked.
func TestStaticMemberRestartWithoutRebalance(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, groupID = "groups-static", "static-group"
	createTopic(t, c, topic, 6, 1, nil)
	type counts struct{ assigned, revoked int }
	var mu sync.Mutex
	cnt := map[string]*counts{}
	owned := map[string]map[int32]bool{}
	start := func(name, instance string) *kgo.Client {
		mu.Lock()
		cnt[name] = &counts{}
		owned[name] = map[int32]bool{}
		mu.Unlock()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.InstanceID(instance), kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(10*time.Second),
			kgo.HeartbeatInterval(300*time.Millisecond), kgo.ClientID(name), kgo.WithLogger(kgoTestLogger(t)),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				cnt[name].assigned++
				for _, p := range m[topic] {
					owned[name][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				cnt[name].revoked++
				for _, p := range m[topic] {
					delete(owned[name], p)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				fs := cl.PollFetches(context.Background())
				if fs.IsClientClosed() {
					return
				}
			}
		}()
		return cl
	}
	a := start("static-a", "instance-a")
	b := start("static-b", "instance-b")
	defer b.Close()
	ownsThree := func(names ...string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			for _, n := range names {
				if len(owned[n]) != 3 {
					return fmt.Errorf("%s owns %v", n, owned[n])
				}
			}
			return nil
		}
	}
	waitFor(t, 60*time.Second, ownsThree("static-a", "static-b"))
	mu.Lock()
	bBefore := *cnt["static-b"]
	mu.Unlock()

	a.Close() // a static member sends no LeaveGroup
	a2 := start("static-a2", "instance-a")
	defer a2.Close()
	waitFor(t, 30*time.Second, ownsThree("static-a2", "static-b"))
	mu.Lock()
	bAfter := *cnt["static-b"]
	mu.Unlock()
	if bAfter != bBefore {
		t.Fatalf("the other static member saw a rebalance: before %+v, after %+v", bBefore, bAfter)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := adminClient(t, c).DescribeGroups(ctx, groupID)
	if err != nil || d[groupID].State != "Stable" || len(d[groupID].Members) != 2 {
		t.Fatalf("describe: %v %+v", err, d[groupID])
	}
}

// TestMixedGroupKcatAndFranzGo: kcat -G (librdkafka) and a kgo consumer share a group with the
// range assignor; each partition is consumed by exactly one of them. Then kcat is killed with
// SIGKILL (a real crash of a member) and kgo takes over all partitions after the session timeout.
func TestMixedGroupKcatAndFranzGo(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: apt-get install -y kcat")
	}
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, groupID = "groups-mixed", "mixed-group"
	createTopic(t, c, topic, 6, 1, nil)
	o := newOwnership()

	var kcatOut lockedBuffer
	cmd := exec.Command(kcat, "-b", strings.Join(c.Bootstrap(), ","), "-G", groupID, "-X", "auto.offset.reset=earliest",
		"-X", "session.timeout.ms=3000", "-X", "heartbeat.interval.ms=300", "-X", "partition.assignment.strategy=range",
		"-u", "-f", "%p\t%o\n", topic)
	cmd.Stdout = &kcatOut
	w := newTestLogWriter(t, "kcat: ")
	defer w.Close()
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	var mu sync.Mutex
	kgoOwned := map[int32]bool{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("kgo-mixed"), kgo.WithLogger(kgoTestLogger(t)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m[topic] {
				kgoOwned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx)
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m[topic] {
				delete(kgoOwned, p)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { o.consumed("kgo", r.Partition, r.Offset) })
		}
	}()
	adm := adminClient(t, c)
	waitFor(t, 60*time.Second, func() error {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		d, err := adm.DescribeGroups(dctx, groupID)
		if err != nil {
			return err
		}
		g := d[groupID]
		mu.Lock()
		n := len(kgoOwned)
		mu.Unlock()
		if g.State != "Stable" || len(g.Members) != 2 || n != 3 {
			return fmt.Errorf("group %s with %d members, kgo owns %d", g.State, len(g.Members), n)
		}
		return nil
	})
	sent := kgoProduce(t, c, topic, 300, kgo.NoCompression(), false)
	kcatParts := map[int32]bool{}
	processed := 0 // complete lines of kcat's output already counted
	readKcat := func() {
		out := kcatOut.String()
		lines := strings.Split(out[:strings.LastIndexByte(out, '\n')+1], "\n")
		for _, line := range lines[min(processed, len(lines)):] {
			var p int32
			var off int64
			if _, err := fmt.Sscanf(line, "%d\t%d", &p, &off); err == nil {
				o.consumed("kcat", p, off)
				kcatParts[p] = true
			}
		}
		processed = max(len(lines)-1, 0)
	}
	waitFor(t, 60*time.Second, func() error {
		readKcat()
		if n := o.missing(sent); n > 0 {
			return fmt.Errorf("%d of %d records not consumed", n, len(sent))
		}
		return nil
	})
	mu.Lock()
	for p := range kcatParts {
		if kgoOwned[p] {
			t.Errorf("partition %d consumed by kcat while kgo owns it", p)
		}
	}
	if len(kcatParts)+len(kgoOwned) != 6 {
		t.Errorf("kcat consumed %v, kgo owns %v", kcatParts, kgoOwned)
	}
	mu.Unlock()

	// kill -9 the librdkafka member: no LeaveGroup; kgo gets everything after the session timeout.
	killed := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(kgoOwned) != 6 {
			return fmt.Errorf("kgo owns %v", kgoOwned)
		}
		return nil
	})
	t.Logf("kgo took over kcat's partitions %v in %v", kcatParts, time.Since(killed).Round(time.Millisecond))
	more := kgoProduceFrom(t, c, topic, 300, 120, kgo.NoCompression(), false)
	waitConsumed(t, o, append(sent, more...))
}

// lockedBuffer is an io.Writer safe to read while a process writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFindCoordinatorNeedsEnoughBrokers: with offsets.topic.replication.factor=3 and one live
// broker, FindCoordinator answers COORDINATOR_NOT_AVAILABLE and __consumer_offsets is not
// created (Kafka does not cap the replication factor).
func TestFindCoordinatorNeedsEnoughBrokers(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 1, Props: map[string]string{"offsets.topic.replication.factor": "3"}})
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = "lonely-group"            // v0-3
	req.CoordinatorKeys = []string{"lonely-group"} // v4 (kgo picks the highest version)
	resp, err := requestTo[*kmsg.FindCoordinatorResponse](t, c.Bootstrap()[0], req)
	if err != nil {
		t.Fatal(err)
	}
	code := resp.ErrorCode
	if resp.Version >= 4 {
		if len(resp.Coordinators) != 1 {
			t.Fatalf("FindCoordinator v%d: %d coordinators", resp.Version, len(resp.Coordinators))
		}
		code = resp.Coordinators[0].ErrorCode
	}
	if code != 15 {
		t.Fatalf("FindCoordinator v%d error %d, want COORDINATOR_NOT_AVAILABLE (15)", resp.Version, code)
	}
	if _, _, ok := c.ZKGet("/brokers/topics/__consumer_offsets"); ok {
		t.Fatalf("__consumer_offsets was created with too few brokers")
	}
}

// TestSaramaConsumerGroupOlderVersions runs two sarama members with sarama's default
// Config.Version and with V2_0_0_0 (JoinGroup v3, no MEMBER_ID_REQUIRED round trip), then
// checks the commits.
func TestSaramaConsumerGroupOlderVersions(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Props: groupProps})
	for _, v := range []struct {
		name    string
		version *sarama.KafkaVersion
	}{{"default", nil}, {"V2_0_0_0", &sarama.V2_0_0_0}} {
		t.Run(v.name, func(t *testing.T) {
			topic, groupID := "groups-sarama-"+v.name, "sarama-"+v.name
			createTopic(t, c, topic, 6, 1, nil)
			sent := kgoProduce(t, c, topic, 120, kgo.NoCompression(), false)
			o := newOwnership()
			a := startSaramaMemberVersion(t, c, groupID, topic, "a", o, v.version)
			b := startSaramaMemberVersion(t, c, groupID, topic, "b", o, v.version)
			waitOwners(t, o, "a", "b")
			waitConsumed(t, o, sent)
			a.stop()
			b.stop()
			waitCommittedEnds(t, c, groupID, topic, sent)
			if d := o.duplicates(); d != 0 {
				t.Errorf("%d duplicates", d)
			}
		})
	}
}

// BenchmarkOffsetCommits100Groups: OffsetCommit from 100 groups at once (standalone commits of
// one partition each, kadm over one client) against 3 in-process brokers; every commit is
// appended to __consumer_offsets with acks=-1 (RF 1 until replication exists).
func BenchmarkOffsetCommits100Groups(b *testing.B) {
	c := StartCluster(b, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, groups = "bench-commits", 100
	createTopic(b, c, topic, 6, 1, nil)
	adm := adminClient(b, c)
	ctx := context.Background()
	commit := func(g, i int) error {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: topic, Partition: int32(g % 6), At: int64(i), LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctx, fmt.Sprintf("bench-group-%d", g), os)
		if err != nil {
			return err
		}
		return resp.Error()
	}
	for g := 0; g < groups; g++ { // warm up: create __consumer_offsets, find coordinators
		waitFor(b, 60*time.Second, func() error { return commit(g, 0) })
	}
	b.ResetTimer()
	start := time.Now()
	per := max(b.N/groups, 1)
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	for g := 0; g < groups; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= per; i++ {
				if err := commit(g, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*groups)/time.Since(start).Seconds(), "commits/s")
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkRebalance50Members: 50 kgo group members (range) join a new group over a
// 50-partition topic; the time until every member holds its one partition. The harness sets
// group.initial.rebalance.delay.ms=0, so members arriving apart cause several rebalances, as
// they would on Kafka with that setting.
func BenchmarkRebalance50Members(b *testing.B) {
	c := StartCluster(b, ClusterConfig{Brokers: 3, Props: groupProps})
	const topic, members = "bench-rebalance", 50
	createTopic(b, c, topic, members, 1, nil)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		groupID := fmt.Sprintf("bench-rebalance-%d", i)
		var mu sync.Mutex
		owned := make([]int, members)
		var clients []*kgo.Client
		start := time.Now()
		for m := 0; m < members; m++ {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
				kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(6*time.Second), kgo.WithLogger(kgoTestLogger(b)),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
					mu.Lock()
					owned[m] += len(a[topic])
					mu.Unlock()
				}),
				kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
					mu.Lock()
					owned[m] -= len(r[topic])
					mu.Unlock()
				}))
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, cl)
			go func() {
				for !cl.PollFetches(context.Background()).IsClientClosed() {
				}
			}()
		}
		waitFor(b, 120*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			for m, n := range owned {
				if n != 1 {
					return fmt.Errorf("member %d owns %d partitions", m, n)
				}
			}
			return nil
		})
		total += time.Since(start)
		for _, cl := range clients {
			cl.Close()
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/rebalance")
}
