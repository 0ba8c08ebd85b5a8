package broker

// ListOffsets MAX_TIMESTAMP (-3) through a real client (KAFKA-16310): the offset of the
// record with the largest timestamp, even in the middle of a batch.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestListOffsetsMaxTimestampRecord(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Manual flushing puts every record of a flush into one batch per partition.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.ManualFlushing(), kgo.DefaultProduceTopic("mts"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, "mts"); err != nil || r["mts"].Err != nil {
		t.Fatalf("CreateTopics: %v %v", err, r["mts"].Err)
	}

	listMax := func() (int64, int64, int32) {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "mts"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -3, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ListOffsets: %v", err)
		}
		if resp.Version < 7 {
			t.Fatalf("ListOffsets v%d, want 7+ for MAX_TIMESTAMP", resp.Version)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("ListOffsets error %d", p.ErrorCode)
		}
		return p.Offset, p.Timestamp, p.LeaderEpoch
	}

	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	produce := func(offsets ...int) {
		t.Helper()
		for _, d := range offsets {
			cl.Produce(ctx, &kgo.Record{Value: []byte("v"), Timestamp: base.Add(time.Duration(d) * time.Millisecond)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	// Batch 0-5: the max (base+90) at offset 2 and again at 4.
	produce(10, 20, 90, 30, 90, 40)
	if off, ts, ep := listMax(); off != 2 || ts != base.Add(90*time.Millisecond).UnixMilli() || ep != 0 {
		t.Fatalf("MAX_TIMESTAMP = offset %d ts %d epoch %d; want offset 2 at base+90, epoch 0", off, ts, ep)
	}
	// A later, lower batch changes nothing; a later batch with a new max in its middle wins.
	produce(50, 60, 70)
	if off, _, _ := listMax(); off != 2 {
		t.Fatalf("after a lower batch: offset %d, want 2", off)
	}
	produce(100, 500, 200)
	if off, ts, _ := listMax(); off != 10 || ts != base.Add(500*time.Millisecond).UnixMilli() {
		t.Fatalf("after a higher batch: offset %d ts %d, want 10 at base+500", off, ts)
	}
}
