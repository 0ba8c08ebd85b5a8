package integration

// follower_fetch_test.go: KIP-392 end to end. Three broker processes, one rack each, with
// Kafka's RackAwareReplicaSelector; a kgo consumer in a follower's rack must get every
// record batch from that follower, keep reading (from the leader) once the follower is
// killed, and never receive a record at or past the high watermark of the response that
// carried it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// batchSources records which broker returned each fetched batch (kgo's OnFetchBatchRead).
type batchSources struct {
	mu    sync.Mutex
	nodes map[int32]int // broker id → batches read from it
}

func (b *batchSources) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	b.mu.Lock()
	b.nodes[meta.NodeID]++
	b.mu.Unlock()
}

// take returns the counts so far and starts new ones.
func (b *batchSources) take() map[int32]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.nodes
	b.nodes = map[int32]int{}
	return out
}

func TestFollowerFetching(t *testing.T) {
	t.Parallel() // mostly waits for the killed broker's ZooKeeper session to expire
	const topic = "kip392"
	racks := map[int32]map[string]string{}
	for id := range int32(3) {
		racks[id] = map[string]string{"broker.rack": fmt.Sprintf("rack-%d", id)}
	}
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, BrokerProps: racks, Props: map[string]string{
		"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
	}})
	createTopic(t, c, topic, 1, 3, nil)
	var leader, follower int32 = -1, -1
	waitFor(t, 30*time.Second, func() error {
		parts, _, err := metadataPartitions(t, c.Bootstrap()[0], topic)
		if err != nil {
			return err
		}
		p := parts[0]
		if len(p.ISR) != 3 {
			return fmt.Errorf("ISR %v", p.ISR)
		}
		leader = p.Leader
		for _, r := range p.Replicas {
			if r != leader {
				follower = r
				break
			}
		}
		return nil
	})
	t.Logf("leader %d; the consumer is in rack-%d with follower %d", leader, follower, follower)

	acksAll := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()}
	sent := kgoProduceWith(t, c, topic, 0, 300, false, nil, acksAll...)

	sources := &batchSources{nodes: map[int32]int{}}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Rack(fmt.Sprintf("rack-%d", follower)),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond), // find the new leader epoch soon after the kill
		kgo.WithHooks(sources),
		kgo.WithLogger(kgoTestLogger(t)),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []record
	consume := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records after 2m", len(got), n)
			}
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Logf("fetch %s-%d: %v", topic, p, err) // a killed broker's connection errors are expected
				}
			})
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				for _, r := range p.Records {
					// KIP-392: a follower serves only what it knows is committed.
					if r.Offset >= p.HighWatermark {
						t.Errorf("record at offset %d in a response with high watermark %d", r.Offset, p.HighWatermark)
					}
					g := record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
					for _, h := range r.Headers {
						g.Headers = append(g.Headers, header{h.Key, string(h.Value)})
					}
					got = append(got, g)
				}
			})
		}
	}
	consume(len(sent))
	if from := sources.take(); len(from) != 1 || from[follower] == 0 {
		t.Fatalf("batches read by broker: %v; want all from follower %d (the consumer's rack)", from, follower)
	}

	// The follower dies: the controller drops it from the ISR (new leader epoch), the
	// consumer's metadata moves it back to the leader, which no longer names the follower.
	start := time.Now()
	c.Broker(follower).Kill()
	more := kgoProduceWith(t, c, topic, len(sent), 200, false, nil, acksAll...)
	sent = append(sent, more...)
	consume(len(sent))
	t.Logf("%d more records read %v after the kill", len(more), time.Since(start).Round(time.Millisecond))
	from := sources.take()
	if from[follower] != 0 || from[leader] == 0 {
		t.Fatalf("batches read after the follower was killed: %v; want all from leader %d", from, leader)
	}
	checkRecords(t, sent, got)
	offsets := make([]int64, len(got))
	for i, r := range got {
		offsets[i] = r.Offset
	}
	if !slices.IsSorted(offsets) {
		t.Error("records not consumed in offset order")
	}
}
