package broker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

func init() {
	// rt-0 to the dir it is in already (no move, no error), rt-1 to a dir the broker does
	// not have (LOG_DIR_NOT_FOUND).
	requestBuilders[34] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrAlterReplicaLogDirsRequest()
			for i, dir := range []string{e.logs.Dirs()[0], "/no/such/dir"} {
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = dir
				rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				rt.Topic, rt.Partitions = "rt", []int32{int32(i)}
				d.Topics = append(d.Topics, rt)
				req.Dirs = append(req.Dirs, d)
			}
			return req
		},
		check: func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.AlterReplicaLogDirsResponse)
			if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 {
				t.Fatalf("response: %+v", r.Topics)
			}
			for _, p := range r.Topics[0].Partitions {
				want := int16(0)
				if p.Partition == 1 {
					want = kerr.LogDirNotFound.Code
				}
				if p.ErrorCode != want {
					t.Errorf("rt-%d: %v, want %v", p.Partition, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(want))
				}
			}
		},
	}
}

// alterLogDir sends one AlterReplicaLogDirs and returns the partition's error code.
func alterLogDir(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partition int32, dir string) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	d.Topics = append(d.Topics, rt)
	req.Dirs = append(req.Dirs, d)
	kr, err := cl.Broker(1).Request(ctx, req) // to the replica's broker, as Kafka's admin client
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", err)
	}
	resp := kr.(*kmsg.AlterReplicaLogDirsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("AlterReplicaLogDirs response: %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// logDirEntry is one partition of a DescribeLogDirs answer.
type logDirEntry struct {
	dir      string
	lag      int64
	isFuture bool
}

// describePartition lists where DescribeLogDirs places topic-partition.
func describePartition(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partition int32) []logDirEntry {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	var out []logDirEntry
	for _, d := range resp.Dirs {
		for _, dt := range d.Topics {
			for _, p := range dt.Partitions {
				if dt.Topic == topic && p.Partition == partition {
					out = append(out, logDirEntry{dir: d.Dir, lag: p.OffsetLag, isFuture: p.IsFuture})
				}
			}
		}
	}
	return out
}

// dirEntries lists the names in dir that belong to topic-partition (current, future or
// deleted copies).
func dirEntries(t *testing.T, dir, tp string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() == tp || strings.HasPrefix(e.Name(), tp+".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestAlterReplicaLogDirsLiveMove moves a partition between the two log dirs of a live
// broker while an acks=all producer keeps writing: DescribeLogDirs shows the future replica
// while the move is throttled (replica.alter.log.dirs.io.max.bytes.per.second), the
// partition ends in the new dir, every acknowledged record reads back at consecutive
// offsets, and the old dir no longer holds it. It also checks the API's errors and that a
// dir named before the partition exists is where its log is created.
func TestAlterReplicaLogDirsLiveMove(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	b := startTestBroker(t, testChroot(t), map[string]string{"log.dirs": dirA + "," + dirB, "replica.fetch.backoff.ms": "50"})
	waitController(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.DefaultProduceTopic("mv"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // the throttle counts real bytes
		kgo.ProducerBatchMaxBytes(32<<10))                 // under segment.bytes
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	segBytes, delay := "65536", "100"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &segBytes, "file.delete.delay.ms": &delay}, "mv"); err != nil {
		t.Fatal(err)
	}
	tp := logstore.TopicPartition{Topic: "mv", Partition: 0}
	adminWaitFor(t, 15*time.Second, "log of mv-0", func() bool { _, ok := b.logs.GetLog(tp); return ok })

	// About 2 MiB before the move, so the copy takes several rounds.
	payload := strings.Repeat("x", 1000)
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		next  int
	)
	produce := func(n int) {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			mu.Lock()
			v := "r-" + strconv.Itoa(next) + "-" + payload
			next++
			mu.Unlock()
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err == nil {
					mu.Lock()
					acked[string(r.Value)] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	produce(2000)
	if len(acked) != 2000 {
		t.Fatalf("%d of 2000 records acknowledged before the move", len(acked))
	}

	cur, _ := b.logs.GetLog(tp)
	src := filepath.Dir(cur.Dir())
	dst := dirB
	if src == dirB {
		dst = dirA
	}

	// Errors first: a dir not in log.dirs, a relative one.
	for _, bad := range []string{filepath.Join(dst, "nope"), "relative/dir"} {
		if code := alterLogDir(ctx, t, cl, "mv", 0, bad); code != kerr.LogDirNotFound.Code {
			t.Fatalf("move to %s: %v, want LOG_DIR_NOT_FOUND", bad, kerr.ErrorForCode(code))
		}
	}

	// A tiny throttle holds the move so its future replica can be seen.
	setThrottle := func(v *string) {
		op := kadm.SetConfig
		if v == nil {
			op = kadm.DeleteConfig
		}
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: config.ReplicaAlterLogDirsIOMaxBytesPerSecond, Value: v}}, 1)
		if err == nil {
			for _, r := range rs {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatalf("set the log-dir move throttle: %v", err)
		}
	}
	slow := "100000"
	setThrottle(&slow)
	adminWaitFor(t, 15*time.Second, "the throttle to apply", func() bool { return b.replicas.alterLogDirs.quota.UpperBound() == 100000 })

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the running producer
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			produce(20)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	if code := alterLogDir(ctx, t, cl, "mv", 0, dst); code != 0 {
		t.Fatalf("move to %s: %v", dst, kerr.ErrorForCode(code))
	}
	if code := alterLogDir(ctx, t, cl, "mv", 0, dst); code != 0 { // again: the same move, no error
		t.Fatalf("repeated move to %s: %v", dst, kerr.ErrorForCode(code))
	}
	adminWaitFor(t, 20*time.Second, "the future replica in DescribeLogDirs", func() bool {
		for _, e := range describePartition(ctx, t, cl, "mv", 0) {
			if e.isFuture && e.dir == dst && e.lag > 0 {
				return true
			}
		}
		return false
	})

	setThrottle(nil)
	adminWaitFor(t, 45*time.Second, "the partition to end in its new dir", func() bool {
		es := describePartition(ctx, t, cl, "mv", 0)
		return len(es) == 1 && es[0].dir == dst && !es[0].isFuture
	})
	if l, _ := b.logs.GetLog(tp); filepath.Dir(l.Dir()) != dst {
		t.Fatalf("log of mv-0 in %s, want %s", l.Dir(), dst)
	}
	if _, ok := b.logs.GetFutureLog(tp); ok {
		t.Fatal("future log left after the move")
	}
	// The producer goes on writing to the moved log.
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	adminWaitFor(t, 20*time.Second, "records acknowledged after the move", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= before+200
	})
	close(stop)
	<-done
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Every acknowledged record is there, at consecutive offsets.
	l, _ := b.logs.GetLog(tp)
	end := l.HighWatermark()
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"mv": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	want := int64(0)
	for want < end {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed up to offset %d of %d: %v", want, end, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != want {
				t.Fatalf("record at offset %d, want %d", r.Offset, want)
			}
			want++
			seen[string(r.Value)] = true
		})
	}
	mu.Lock()
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %s... lost (%d acknowledged, %d read)", v[:12], len(acked), len(seen))
		}
	}
	t.Logf("%d records acknowledged, %d read back from the moved log", len(acked), len(seen))
	mu.Unlock()

	// The old dir lets go of the partition once file.delete.delay.ms has passed.
	adminWaitFor(t, 20*time.Second, "the old dir to drop mv-0", func() bool { return len(dirEntries(t, src, "mv-0")) == 0 })
	if got := dirEntries(t, dst, "mv-0"); len(got) != 1 || got[0] != "mv-0" {
		t.Fatalf("new dir holds %v, want [mv-0]", got)
	}

	// A partition that does not exist yet: UNKNOWN_TOPIC_OR_PARTITION, and its log is later
	// created in the dir asked for, though the other dir holds fewer partitions.
	if code := alterLogDir(ctx, t, cl, "later", 0, dst); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("move of an unknown partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "later"); err != nil {
		t.Fatal(err)
	}
	later := logstore.TopicPartition{Topic: "later", Partition: 0}
	adminWaitFor(t, 15*time.Second, "log of later-0", func() bool { _, ok := b.logs.GetLog(later); return ok })
	if l, _ := b.logs.GetLog(later); filepath.Dir(l.Dir()) != dst {
		t.Fatalf("later-0 created in %s, want the preferred dir %s", filepath.Dir(l.Dir()), dst)
	}
}

// TestAlterReplicaLogDirsResumesAfterRestart stops a broker in the middle of a throttled
// move: the -future dir is loaded at start-up, the move resumes from what was copied and
// completes once the throttle goes, with every record in the new dir.
func TestAlterReplicaLogDirsResumesAfterRestart(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	chroot := testChroot(t)
	props := map[string]string{"log.dirs": dirA + "," + dirB, "replica.fetch.backoff.ms": "50"}
	b := startTestBroker(t, chroot, props)
	waitController(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := func(b *Broker) (*kgo.Client, *kadm.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.DefaultProduceTopic("rs"),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(32<<10))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl, kadm.NewClient(cl)
	}
	cl, adm := client(b)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "rs"); err != nil {
		t.Fatal(err)
	}
	tp := logstore.TopicPartition{Topic: "rs", Partition: 0}
	adminWaitFor(t, 15*time.Second, "log of rs-0", func() bool { _, ok := b.logs.GetLog(tp); return ok })
	value := strings.Repeat("y", 1000)
	const n = 3000 // about 3 MiB: more than one read (replica.fetch.max.bytes)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i) + value)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cur, _ := b.logs.GetLog(tp)
	if cur.LogEndOffset() != n {
		t.Fatalf("log ends at %d, want %d", cur.LogEndOffset(), n)
	}
	dst := dirB
	if filepath.Dir(cur.Dir()) == dirB {
		dst = dirA
	}
	slow := "50000"
	set := func(adm *kadm.Client, v *string) {
		op := kadm.SetConfig
		if v == nil {
			op = kadm.DeleteConfig
		}
		if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: config.ReplicaAlterLogDirsIOMaxBytesPerSecond, Value: v}}, 1); err != nil {
			t.Fatal(err)
		}
	}
	set(adm, &slow)
	adminWaitFor(t, 15*time.Second, "the throttle to apply", func() bool { return b.replicas.alterLogDirs.quota.UpperBound() == 50000 })
	if code := alterLogDir(ctx, t, cl, "rs", 0, dst); code != 0 {
		t.Fatalf("move: %v", kerr.ErrorForCode(code))
	}
	adminWaitFor(t, 20*time.Second, "some of the log copied", func() bool {
		f, ok := b.logs.GetFutureLog(tp)
		return ok && f.LogEndOffset() > 0
	})
	b.Shutdown()
	if got := dirEntries(t, dst, "rs-0"); len(got) != 1 || !strings.HasSuffix(got[0], "-future") {
		t.Fatalf("after shutdown the new dir holds %v, want the -future dir", got)
	}

	b = startTestBroker(t, chroot, props)
	waitController(t, b)
	cl, adm = client(b)
	adminWaitFor(t, 15*time.Second, "the move to resume", func() bool {
		if _, ok := b.logs.GetFutureLog(tp); !ok {
			return false
		}
		return b.replicas.alterLogDirs.moving(tp)
	})
	set(adm, nil)
	adminWaitFor(t, 45*time.Second, "the partition to end in its new dir", func() bool {
		es := describePartition(ctx, t, cl, "rs", 0)
		return len(es) == 1 && es[0].dir == dst && !es[0].isFuture
	})
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rs": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := 0; i < n; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", i, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(i) || string(r.Value) != strconv.Itoa(i)+value {
				t.Fatalf("record %d: offset %d value %.10q", i, r.Offset, r.Value)
			}
			i++
		})
	}
}

// TestAlterReplicaLogDirsFollower moves a follower's replica while the leader takes acks=all
// writes: the follower keeps fetching into whichever log is current, stays in the ISR, and
// its moved log holds exactly the leader's records.
func TestAlterReplicaLogDirsFollower(t *testing.T) {
	chroot := testChroot(t)
	b1 := startTestBroker(t, chroot, nil)
	waitController(t, b1)
	dirA, dirB := t.TempDir(), t.TempDir()
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2", "log.dirs": dirA + "," + dirB})
	adminWaitFor(t, 15*time.Second, "broker 2 in the controller's cache", func() bool { return b1.Metadata().IsBrokerAlive(2) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr("PLAINTEXT")),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tc := adminDial(t, b1.Addr("PLAINTEXT"))
	ct := adminTopic("fm2", -1, -1)
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	cresp := tc.request(adminCreateTopicsReq(15000, false, ct), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", cresp.Topics[0].ErrorCode, nil)
	tp := logstore.TopicPartition{Topic: "fm2", Partition: 0}
	adminWaitFor(t, 15*time.Second, "the follower's log", func() bool { _, ok := b2.logs.GetLog(tp); return ok })

	// A partition broker 2 knows of but does not host: REPLICA_NOT_AVAILABLE.
	only1 := adminTopic("only1", -1, -1)
	ra1 := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra1.Partition, ra1.Replicas = 0, []int32{1}
	only1.ReplicaAssignment = append(only1.ReplicaAssignment, ra1)
	cresp = tc.request(adminCreateTopicsReq(15000, false, only1), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", cresp.Topics[0].ErrorCode, nil)
	b2c := adminDial(t, b2.Addr("PLAINTEXT"))
	moveReq := func(topic, dir string) *kmsg.AlterReplicaLogDirsRequest {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = dir
		rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		d.Topics = append(d.Topics, rt)
		req.Dirs = append(req.Dirs, d)
		return req
	}
	adminWaitFor(t, 15*time.Second, "only1 in broker 2's metadata", func() bool {
		_, known := b2.Metadata().Partition(logstore.TopicPartition{Topic: "only1", Partition: 0})
		return known
	})
	for _, v := range []int16{0, 2} {
		resp := b2c.request(moveReq("only1", dirA), v).(*kmsg.AlterReplicaLogDirsResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.ReplicaNotAvailable.Code {
			t.Fatalf("v%d move of a partition not hosted: %v, want REPLICA_NOT_AVAILABLE", v, kerr.ErrorForCode(code))
		}
	}

	value := strings.Repeat("z", 500)
	var (
		mu    sync.Mutex
		acked int
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fm2", Value: []byte(strconv.Itoa(i) + value)}).FirstErr(); err == nil {
				mu.Lock()
				acked++
				mu.Unlock()
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return acked }
	adminWaitFor(t, 20*time.Second, "records before the move", func() bool { return count() >= 300 })

	fl, _ := b2.logs.GetLog(tp)
	dst := dirB
	if filepath.Dir(fl.Dir()) == dirB {
		dst = dirA
	}
	resp := b2c.request(moveReq("fm2", dst), -1).(*kmsg.AlterReplicaLogDirsResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("move: %v", kerr.ErrorForCode(code))
	}
	adminWaitFor(t, 30*time.Second, "the follower's log in its new dir", func() bool {
		l, ok := b2.logs.GetLog(tp)
		_, moving := b2.logs.GetFutureLog(tp)
		return ok && !moving && filepath.Dir(l.Dir()) == dst
	})
	before := count()
	adminWaitFor(t, 20*time.Second, "records after the move", func() bool { return count() >= before+200 })
	close(stop)
	<-done

	// The follower catches up to the leader's end in its new log, byte for byte.
	leader, _ := b1.logs.GetLog(tp)
	adminWaitFor(t, 20*time.Second, "the follower to catch up", func() bool {
		l, _ := b2.logs.GetLog(tp)
		return l.LogEndOffset() == leader.LogEndOffset() && l.HighWatermark() == leader.HighWatermark()
	})
	follower, _ := b2.logs.GetLog(tp)
	read := func(l *logstore.Log) []byte {
		var out []byte
		for off := int64(0); off < l.LogEndOffset(); {
			ri, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
			if err != nil {
				t.Fatal(err)
			}
			data, err := ri.Bytes()
			if err != nil || len(data) == 0 {
				t.Fatalf("read %s at %d: %v", l.Dir(), off, err)
			}
			out = append(out, data...)
			for rest := data; len(rest) > 0; {
				b, r, err := recordbatch.Next(rest)
				if err != nil {
					break
				}
				off, rest = b.LastOffset()+1, r
			}
		}
		return out
	}
	if lb, fb := read(leader), read(follower); !bytes.Equal(lb, fb) {
		t.Fatalf("follower's moved log differs from the leader's (%d vs %d bytes)", len(fb), len(lb))
	}
	if p, err := b1.replicas.Partition(tp); err != nil || len(p.State().ISR) != 2 {
		t.Fatalf("ISR after the move: %v %v", p.State().ISR, err)
	}
	t.Logf("%d records acknowledged with acks=all; the follower moved to %s", count(), dst)
}

// The future log follows truncations of the current log: one marked by the follower's
// truncation, and, for a reloaded future log, one found by leader epochs.
func TestAlterLogDirsTruncation(t *testing.T) {
	tp := logstore.TopicPartition{Topic: "tr", Partition: 0}
	open := func() *logstore.Log {
		l, err := logstore.OpenLog(filepath.Join(t.TempDir(), "tr-0"), logstore.LogOpenOptions{LogStartOffset: -1, CleanShutdown: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	appendN := func(l *logstore.Log, epoch int32, n int) {
		for i := 0; i < n; i++ {
			if _, err := l.AppendAsLeader(valuesBatch(1, 10), epoch); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := &alterLogDirsManager{fetchSize: 1 << 20, marks: map[logstore.TopicPartition]truncationMark{},
		active: map[logstore.TopicPartition]bool{tp: true}}
	m.quota = newReplicationQuotaManager("AlterLogDirsReplication", 1, 11, time.Second, nil, time.Now, adminLogger(t))
	th := &alterLogDirsThread{m: m}
	st := &moveState{p: newPartition(tp, 1, time.Second, time.Now, adminLogger(t))}
	same := func(cur, fut *logstore.Log) bool {
		a, _ := cur.Read(0, 1<<20, cur.LogEndOffset(), true)
		b, _ := fut.Read(0, 1<<20, fut.LogEndOffset(), true)
		ab, _ := a.Bytes()
		bb, _ := b.Bytes()
		return bytes.Equal(ab, bb)
	}

	cur, fut := open(), open()
	appendN(cur, 0, 5)
	appendN(cur, 1, 5)
	if full, err := th.copyChunk(cur, fut); err != nil || full || !same(cur, fut) {
		t.Fatalf("copy: %v full=%v", err, full)
	}
	// The follower truncates at 7 and the leader's records of epoch 2 replace 7-9: both logs
	// end at 10 again, with different records.
	if err := cur.TruncateTo(7); err != nil {
		t.Fatal(err)
	}
	appendN(cur, 2, 3)
	if cur.LogEndOffset() != fut.LogEndOffset() || same(cur, fut) {
		t.Fatal("setup: want equal ends, different records")
	}
	m.markForTruncation(tp, 7, false)
	if err := th.applyTruncation(st, cur, fut); err != nil {
		t.Fatal(err)
	}
	if fut.LogEndOffset() != 7 {
		t.Fatalf("future log ends at %d after the marked truncation, want 7", fut.LogEndOffset())
	}
	if _, err := th.copyChunk(cur, fut); err != nil || !same(cur, fut) {
		t.Fatalf("copy after truncation: %v", err)
	}

	// A reloaded future log (no mark): the epochs find where it left the current log.
	cur2, fut2 := open(), open()
	appendN(cur2, 0, 5)
	appendN(cur2, 1, 5)
	th.copyChunk(cur2, fut2)
	cur2.TruncateTo(7)
	appendN(cur2, 2, 3)
	st.truncating = true
	if err := th.applyTruncation(st, cur2, fut2); err != nil {
		t.Fatal(err)
	}
	if fut2.LogEndOffset() != 7 || st.truncating {
		t.Fatalf("future log ends at %d after the epoch truncation, want 7", fut2.LogEndOffset())
	}
	if _, err := th.copyChunk(cur2, fut2); err != nil || !same(cur2, fut2) {
		t.Fatalf("copy after epoch truncation: %v", err)
	}
}
