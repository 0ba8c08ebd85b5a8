package broker

// End to end with three brokers and real ZooKeeper: one of broker 2's two log dirs fails,
// and the controller (LogDirEventNotification → LeaderAndIsr → KAFKA_STORAGE_ERROR) moves
// leadership of the partitions on that dir to another replica and drops broker 2 from their
// ISRs, while broker 2 stays registered and keeps leading the partitions on its healthy dir.

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// dirFailingFS is failingFS for the files under one log dir only; the other dirs stay on
// the OS filesystem.
type dirFailingFS struct {
	failingFS
	dir string
}

func (f *dirFailingFS) under(name string) bool {
	return name == f.dir || strings.HasPrefix(name, f.dir+string(filepath.Separator))
}

func (f *dirFailingFS) OpenFile(name string, flag int, perm fs.FileMode) (logstore.File, error) {
	if !f.under(name) {
		return f.OSFS.OpenFile(name, flag, perm)
	}
	return f.failingFS.OpenFile(name, flag, perm)
}

func (f *dirFailingFS) SyncDir(path string) error {
	if f.under(path) && f.fail.Load() {
		return &fs.PathError{Op: "fsync", Path: path, Err: syscall.EIO}
	}
	return f.OSFS.SyncDir(path)
}

func TestLogDirFailureMovesLeadership(t *testing.T) {
	const (
		topic      = "ldf"
		partitions = 6
		failed     = int32(2)
		perPart    = 10
		// zookeeper.session.timeout.ms (6 s, testBrokerConfig) plus a margin.
		bound = 15 * time.Second
	)
	chroot := testChroot(t)
	b1 := startTestBroker(t, chroot, nil)
	waitController(t, b1)

	goodDir, badDir := t.TempDir(), t.TempDir()
	ffs := &dirFailingFS{dir: badDir}
	b2, err := New(testBrokerConfig(t, chroot, map[string]string{"broker.id": "2", "log.dirs": goodDir + "," + badDir}), adminLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b2.fs = ffs
	startCtx, startCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer startCancel()
	if err := b2.Start(startCtx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(b2.Shutdown)
	b3 := startTestBroker(t, chroot, map[string]string{"broker.id": "3"})
	brokers := map[int32]*Broker{1: b1, 2: b2, 3: b3}
	adminWaitFor(t, 10*time.Second, "all brokers in the controller's cache", func() bool {
		return b1.Metadata().IsBrokerAlive(2) && b1.Metadata().IsBrokerAlive(3)
	})

	// Broker 2 is the preferred leader of every partition, so its two dirs (filled fewest
	// partitions first) each hold some partitions it leads.
	tc := adminDial(t, b1.Addr("PLAINTEXT"))
	ct := adminTopic(topic, -1, -1)
	for p := int32(0); p < partitions; p++ {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{2, 1, 3}
		if p%2 == 1 {
			ra.Replicas = []int32{2, 3, 1}
		}
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	}
	cresp := tc.request(adminCreateTopicsReq(15000, false, ct), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", cresp.Topics[0].ErrorCode, nil)

	zk := b1.ZK()
	state := func(p int32) (zkmeta.PartitionState, bool) {
		s, err := zk.GetPartitionState(topic, p)
		return s, err == nil
	}
	adminWaitFor(t, 10*time.Second, "broker 2 leading every partition with a full ISR, logs created", func() bool {
		for p := int32(0); p < partitions; p++ {
			s, ok := state(p)
			if !ok || s.Leader != failed || len(s.ISR) != 3 {
				return false
			}
			if _, ok := b2.logs.GetLog(logstore.TopicPartition{Topic: topic, Partition: p}); !ok {
				return false
			}
		}
		return true
	})
	var onBad, onGood []int32
	for p := int32(0); p < partitions; p++ {
		l, _ := b2.logs.GetLog(logstore.TopicPartition{Topic: topic, Partition: p})
		if filepath.Dir(l.Dir()) == badDir {
			onBad = append(onBad, p)
		} else {
			onGood = append(onGood, p)
		}
	}
	if len(onBad) == 0 || len(onGood) == 0 {
		t.Fatalf("partitions on the failing dir %v, on the healthy dir %v: want some on each", onBad, onGood)
	}
	t.Logf("broker 2: partitions %v on the failing dir, %v on the healthy dir", onBad, onGood)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr("PLAINTEXT"), b3.Addr("PLAINTEXT")),
		kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// acked[p] holds the values acknowledged with acks=all on partition p.
	var mu sync.Mutex
	acked := map[int32][]string{}
	produce := func(round string) {
		t.Helper()
		var wg sync.WaitGroup
		for p := int32(0); p < partitions; p++ {
			for i := 0; i < perPart; i++ {
				v := fmt.Sprintf("%s-%d-%d", round, p, i)
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}, func(r *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						t.Errorf("produce %s: %v", v, err)
						return
					}
					mu.Lock()
					acked[p] = append(acked[p], v)
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	produce("before")

	// The disk dies; the next append to a log on it hits EIO and takes the dir offline.
	ffs.fail.Store(true)
	t0 := time.Now()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = onBad[0], valuesBatch(1, 10)
	pt.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
	req.Topics = []kmsg.ProduceRequestTopic{pt}
	presp := adminDial(t, b2.Addr("PLAINTEXT")).request(req, 9).(*kmsg.ProduceResponse)
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to partition %d on the failing dir: error %s, want KAFKA_STORAGE_ERROR", onBad[0], adminCodeName(code))
	}

	// The state znodes: partitions on the failed dir led elsewhere without broker 2 in the
	// ISR; those on the healthy dir still led by broker 2.
	var last string
	waitState := func() bool {
		for _, p := range onBad {
			s, ok := state(p)
			if !ok || s.Leader == failed || s.Leader < 0 || slices.Contains(s.ISR, failed) {
				last = fmt.Sprintf("partition %d (failed dir): %+v", p, s)
				return false
			}
		}
		for _, p := range onGood {
			if s, ok := state(p); !ok || s.Leader != failed {
				last = fmt.Sprintf("partition %d (healthy dir): %+v", p, s)
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(bound)
	for !waitState() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", bound, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("leadership moved off the failed dir %v after the failure", time.Since(t0).Round(time.Millisecond))
	if ok, _, err := zk.Exists(zkmeta.BrokerIDPath(failed)); err != nil || !ok {
		t.Fatalf("broker 2 registration after the log dir failure: exists %v, %v", ok, err)
	}
	if b2.Err() != nil {
		t.Fatalf("broker 2 stopped: %v", b2.Err())
	}

	// Every broker's metadata (what clients see) agrees with the znodes.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = []kmsg.MetadataRequestTopic{mt}
	checkMetadata := func(id int32) bool {
		r, err := cl.Broker(int(id)).Request(ctx, mreq)
		if err != nil {
			last = fmt.Sprintf("metadata from broker %d: %v", id, err)
			return false
		}
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != partitions {
			last = fmt.Sprintf("metadata from broker %d: %+v", id, resp.Topics)
			return false
		}
		for _, mp := range resp.Topics[0].Partitions {
			bad := slices.Contains(onBad, mp.Partition)
			moved := mp.Leader != failed && mp.Leader >= 0 && !slices.Contains(mp.ISR, failed)
			if bad != moved || mp.ErrorCode != 0 {
				last = fmt.Sprintf("metadata from broker %d: partition %d leader %d isr %v error %s",
					id, mp.Partition, mp.Leader, mp.ISR, adminCodeName(mp.ErrorCode))
				return false
			}
		}
		return true
	}
	deadline = time.Now().Add(bound)
	for id := range brokers {
		for !checkMetadata(id) {
			if time.Now().After(deadline) {
				t.Fatal(last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Writes with acks=all keep working on every partition.
	produce("after")

	// Every acked record is readable, from the new leaders for the moved partitions.
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	for p := int32(0); p < partitions; p++ {
		offsets[topic][p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr("PLAINTEXT"), b3.Addr("PLAINTEXT")),
		kgo.ConsumePartitions(offsets), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	want := 0
	missing := map[string]bool{}
	for _, vs := range acked {
		for _, v := range vs {
			missing[v] = true
			want++
		}
	}
	for len(missing) > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d acked records not read: %v", len(missing), want, ctx.Err())
		}
		fs.EachError(func(tpc string, p int32, err error) { t.Logf("fetch %s-%d: %v", tpc, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if !slices.Contains(acked[r.Partition], string(r.Value)) {
				return // the unacked trigger write, if any
			}
			delete(missing, string(r.Value))
		})
	}
	t.Logf("read all %d acked records", want)
}
