//go:build dockertest

package faults

// The harness of the fault scenarios: the compose project's containers (SAMSA_FAULTS_PROJECT,
// default samsa-faults), clients that reach the brokers' internal listeners from the docker
// host, idempotent acks=all producers, per-broker probes, ZooKeeper reads, the fault tool.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const partitions = 3

type env struct {
	t      *testing.T
	p      *Project
	boot   []string
	zk     *zk.Conn
	chroot string
	admin  *kadm.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	name := os.Getenv("SAMSA_FAULTS_PROJECT")
	if name == "" {
		name = "samsa-faults"
	}
	p, err := FindProject(name)
	if err != nil {
		t.Fatalf("%v (start it with docker/test-partitions.sh)", err)
	}
	e := &env{t: t, p: p}
	if e.boot, err = p.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	servers, chroot, err := p.ZKConnect()
	if err != nil {
		t.Fatal(err)
	}
	e.chroot = chroot
	e.zk, _, err = zk.Connect(servers, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.boot...), kgo.Dialer(e.dial))
	if err != nil {
		t.Fatal(err)
	}
	e.admin = kadm.NewClient(cl)
	t.Cleanup(func() {
		for _, c := range append(append([]*Container{}, p.Brokers...), p.ZK...) {
			_ = e.tool("heal", c.Name) // a failed scenario leaves no cut behind
		}
		cl.Close()
		e.zk.Close()
	})
	t.Logf("project %s: brokers %v, ZooKeeper %v, chroot %q", name, e.boot, servers, chroot)
	return e
}

// dial reaches a broker's advertised name through its container address.
func (e *env) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	return d.DialContext(ctx, network, e.p.Resolve(host))
}

// tool runs docker/partition/net.sh.
func (e *env) tool(args ...string) error {
	out, err := exec.Command("../partition/net.sh", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("net.sh %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (e *env) must(args ...string) {
	e.t.Helper()
	if err := e.tool(args...); err != nil {
		e.t.Fatal(err)
	}
}

// cut isolates c from every container in peers (net.sh cut, rules in c's namespace).
func (e *env) cut(c *Container, peers ...*Container) {
	e.t.Helper()
	args := []string{"cut", c.Name}
	for _, p := range peers {
		args = append(args, p.Name)
	}
	e.must(args...)
}

// others is every broker and ZooKeeper container but those named.
func (e *env) others(not ...*Container) (brokers, zks []*Container) {
	for _, b := range e.p.Brokers {
		if !slices.Contains(not, b) {
			brokers = append(brokers, b)
		}
	}
	for _, z := range e.p.ZK {
		if !slices.Contains(not, z) {
			zks = append(zks, z)
		}
	}
	return brokers, zks
}

// partState is /brokers/topics/<t>/partitions/<p>/state, written by the controller.
type partState struct {
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
}

func (e *env) state(topic string, p int32) (partState, error) {
	var s partState
	data, _, err := e.zk.Get(fmt.Sprintf("%s/brokers/topics/%s/partitions/%d/state", e.chroot, topic, p))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(data, &s)
}

// controller is /controller's broker id and the znode's czxid (a new one per election).
func (e *env) controller() (int32, int64, error) {
	data, st, err := e.zk.Get(e.chroot + "/controller")
	if err != nil {
		return -1, 0, err
	}
	var c struct {
		BrokerID int32 `json:"brokerid"`
	}
	return c.BrokerID, st.Czxid, json.Unmarshal(data, &c)
}

// registration is /brokers/ids/<id>'s czxid and ephemeral owner (the broker's session).
func (e *env) registration(id int32) (czxid, owner int64, err error) {
	_, st, err := e.zk.Get(fmt.Sprintf("%s/brokers/ids/%d", e.chroot, id))
	if err != nil {
		return 0, 0, err
	}
	return st.Czxid, st.EphemeralOwner, nil
}

// waitFor polls fn every 200 ms until it returns nil or timeout passes.
func (e *env) waitFor(what string, timeout time.Duration, fn func() error) time.Duration {
	e.t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < timeout {
		if err = fn(); err == nil {
			return time.Since(start)
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.t.Fatalf("%s: not within %v: %v", what, timeout, err)
	return 0
}

// waitFullISR waits until every partition has every broker in its ISR, led by one of them.
func (e *env) waitFullISR(topic string, timeout time.Duration) {
	e.t.Helper()
	e.waitFor("every replica in every ISR of "+topic, timeout, func() error {
		for p := int32(0); p < partitions; p++ {
			s, err := e.state(topic, p)
			if err != nil {
				return err
			}
			if len(s.ISR) != len(e.p.Brokers) || s.Leader < 0 {
				return fmt.Errorf("%s-%d: leader %d, ISR %v", topic, p, s.Leader, s.ISR)
			}
		}
		return nil
	})
}

// createTopic: partitions partitions, RF = the broker count, min.insync.replicas=2.
func (e *env) createTopic(topic string) {
	e.t.Helper()
	two := "2"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := e.admin.CreateTopic(ctx, partitions, int16(len(e.p.Brokers)), map[string]*string{"min.insync.replicas": &two}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		e.t.Fatalf("create %s: %v", topic, err)
	}
	e.waitFullISR(topic, 30*time.Second)
}

// ledBy is the partitions of topic that broker id leads (per ZooKeeper).
func (e *env) ledBy(topic string, id int32) []int32 {
	e.t.Helper()
	var out []int32
	for p := int32(0); p < partitions; p++ {
		s, err := e.state(topic, p)
		if err != nil {
			e.t.Fatal(err)
		}
		if s.Leader == id {
			out = append(out, p)
		}
	}
	return out
}

// load is the writes of one scenario: producers idempotent, acks=all, and probes.
type load struct {
	e       *env
	topic   string
	ledger  *Ledger
	stop    chan struct{}
	wg      sync.WaitGroup
	closes  []func()
	history history

	watchStop chan struct{} // the ZooKeeper watch runs on until finish has healed everything
	watchWG   sync.WaitGroup
	closeOnce sync.Once
	watchOnce sync.Once
}

// stopWatch stops the ZooKeeper watch and waits for it.
func (l *load) stopWatch() {
	l.watchOnce.Do(func() { close(l.watchStop) })
	l.watchWG.Wait()
}

// startLoad starts two franz-go producers (idempotent, acks=all, unlimited retries), each
// writing every 20 ms to every partition with at most 100 records outstanding per
// partition (so a stalled partition does not hold up the others), and one probe per broker
// and partition every 500 ms.
func (e *env) startLoad(topic string) *load {
	e.t.Helper()
	l := &load{e: e, topic: topic, ledger: &Ledger{}, stop: make(chan struct{}), watchStop: make(chan struct{})}
	e.t.Cleanup(func() { // a test that failed before finish: stop what finish stops
		l.close()
		l.stopWatch()
	})
	l.watch()
	for id := range 2 {
		l.startProducer(id)
	}
	for _, b := range e.p.Brokers {
		for p := int32(0); p < partitions; p++ {
			l.startProbe(b, p)
		}
	}
	// Under way: 200 writes acknowledged and a probe accepted for every partition (the
	// leaders before the fault are then on record).
	e.waitFor("200 acknowledged writes and a probe accepted for every partition", 30*time.Second, func() error {
		if n := l.ledger.Acked(); n < 200 {
			return fmt.Errorf("%d acked", n)
		}
		_, probes, _, _ := l.ledger.Snapshot()
		ok := map[int32]bool{}
		for _, p := range probes {
			ok[p.Partition] = ok[p.Partition] || p.Err == nil
		}
		for p := int32(0); p < partitions; p++ {
			if !ok[p] {
				return fmt.Errorf("no probe accepted for partition %d yet", p)
			}
		}
		return nil
	})
	return l
}

func (l *load) startProducer(id int) {
	e := l.e
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.boot...),
		kgo.Dialer(e.dial),
		kgo.DefaultProduceTopic(l.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ClientID(fmt.Sprintf("faults-producer-%d", id)),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	if err != nil {
		e.t.Fatal(err)
	}
	var feeders sync.WaitGroup
	for p := int32(0); p < partitions; p++ {
		feeders.Add(1)
		go func() {
			defer feeders.Done()
			outstanding := make(chan struct{}, 100)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for seq := 0; ; seq++ {
				select {
				case <-l.stop:
					return
				case outstanding <- struct{}{}:
				}
				r := &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "p%d-%d-%09d", id, p, seq)}
				cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
					<-outstanding
					if err != nil {
						l.ledger.Fail(err)
						return
					}
					l.ledger.Ack(Ack{Producer: id, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: time.Now()})
				})
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	l.closes = append(l.closes, func() {
		feeders.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := cl.Flush(ctx); err != nil {
			e.t.Errorf("producer %d: flush: %v", id, err)
		}
		cl.Close()
	})
}

// startProbe sends b, over its own connection, one record for partition p with acks=all
// and a 2 s timeout every 500 ms: the leader's answer says whether it accepted the write.
func (l *load) startProbe(b *Container, p int32) {
	addr := ""
	for i, c := range l.e.p.Brokers {
		if c == b {
			addr = l.e.boot[i]
		}
	}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Net.ReadTimeout = 5 * time.Second
	cfg.Net.WriteTimeout = 2 * time.Second
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		var conn *sarama.Broker
		defer func() {
			if conn != nil {
				_ = conn.Close()
			}
		}()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			if conn == nil {
				conn = sarama.NewBroker(addr)
				if err := conn.Open(cfg); err != nil {
					conn = nil
					continue
				}
			}
			v := fmt.Sprintf("probe-b%d-p%d-%06d", b.BrokerID, p, seq)
			now := time.Now()
			req := &sarama.ProduceRequest{RequiredAcks: sarama.WaitForAll, Timeout: 2000, Version: 7}
			req.AddBatch(l.topic, p, &sarama.RecordBatch{
				Version: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
				FirstTimestamp: now, MaxTimestamp: now,
				Records: []*sarama.Record{{Value: []byte(v)}},
			})
			pr := Probe{Broker: b.BrokerID, Partition: p, Value: v, Sent: now}
			resp, err := conn.Produce(req)
			pr.Done = time.Now()
			switch {
			case err != nil:
				pr.Err = err
				_ = conn.Close()
				conn = nil
			case resp.GetBlock(l.topic, p) == nil:
				pr.Err = errors.New("no answer for the partition")
			case resp.GetBlock(l.topic, p).Err != sarama.ErrNoError:
				pr.Err = resp.GetBlock(l.topic, p).Err
			default:
				pr.Offset = resp.GetBlock(l.topic, p).Offset
			}
			l.ledger.Probe(pr)
		}
	}()
}

// close stops feeding and probing and waits for every outstanding answer.
func (l *load) close() {
	l.closeOnce.Do(func() {
		close(l.stop)
		l.wg.Wait()
		for _, c := range l.closes {
			c()
		}
	})
}

// waitWrites waits until every partition has an acknowledgment newer than since.
func (l *load) waitWrites(since time.Time, timeout time.Duration) time.Duration {
	l.e.t.Helper()
	return l.e.waitFor("writes to every partition", timeout, func() error {
		for p := int32(0); p < partitions; p++ {
			if !l.ledger.LastAck(p).After(since) {
				return fmt.Errorf("no acknowledgment for partition %d since %v", p, since.Format("15:04:05.000"))
			}
		}
		return nil
	})
}

// readBack consumes the whole topic up to its high watermarks: offset → value and leader epoch.
func (e *env) readBack(topic string) map[int32]map[int64]Stored {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := e.admin.ListEndOffsets(ctx, topic)
	if err != nil {
		e.t.Fatalf("end offsets: %v", err)
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		want[o.Partition] = o.Offset
		offsets[o.Partition] = kgo.NewOffset().AtStart()
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.boot...), kgo.Dialer(e.dial),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32]map[int64]Stored{}
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read back %s: %v (at %v of %v)", topic, ctx.Err(), next, want)
		}
		fs.EachError(func(_ string, p int32, err error) { e.t.Logf("read back %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if got[r.Partition] == nil {
				got[r.Partition] = map[int64]Stored{}
			}
			got[r.Partition][r.Offset] = Stored{Value: string(r.Value), Epoch: r.LeaderEpoch}
			next[r.Partition] = r.Offset + 1
		})
	}
	return got
}

// finish closes the load, heals everything, waits until every replica is back in every ISR,
// reads the topic back and checks it; the report's gaps cover [from, now].
func (e *env) finish(l *load, from time.Time) *Report {
	e.t.Helper()
	to := time.Now()
	l.close()
	for _, c := range append(append([]*Container{}, e.p.Brokers...), e.p.ZK...) {
		e.must("heal", c.Name)
	}
	e.waitFullISR(l.topic, 90*time.Second)
	l.stopWatch()
	acks, probes, failed, first := l.ledger.Snapshot()
	if first != nil {
		e.t.Logf("%d writes failed after retries; first: %v", failed, first)
	}
	r := Check(acks, probes, failed, e.readBack(l.topic), from, to)
	e.t.Logf("%s", r)
	for _, s := range l.history.lines(from) {
		e.t.Logf("ZooKeeper: %s", s)
	}
	for _, s := range r.Leaders {
		e.t.Logf("leaders accepting writes: %s", s)
	}
	for _, s := range r.Problems {
		e.t.Error(s)
	}
	if r.Acked == 0 {
		e.t.Error("nothing acknowledged")
	}
	if !r.OK() {
		e.t.Errorf("checker: %s", r)
	}
	return r
}

// topicName is a fresh topic per scenario, so a rerun against the same cluster starts clean.
func topicName(scenario string) string {
	return "faults-" + scenario + "-" + strconv.FormatInt(time.Now().Unix(), 36)
}
