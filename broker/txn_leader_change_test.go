package broker

// A partition leader change in the middle of a transaction (three brokers, real ZooKeeper,
// franz-go transactional producers): the followers rebuilt the producer state from the
// replicated batches, so the new leader holds the last stable offset at the open
// transaction's first offset (ListOffsets and Fetch read_committed, DescribeProducers), and
// the markers the coordinator sends to the new leader end the transaction — commit on one
// partition, abort on the other, where read_committed Fetch names the aborted transaction.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// listOffsetLatest is ListOffsets v5 (latest) for one partition at the isolation level.
func listOffsetLatest(t testing.TB, addr, topic string, partition int32, isolation int8) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return adminDial(t, addr).request(req, 5).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// rawFetch is one consumer Fetch at version v from offset 0 of topic-partition, not waiting.
func rawFetch(t testing.TB, addr, topic string, partition int32, v int16, isolation int8) kmsg.FetchResponseTopicPartition {
	t.Helper()
	return rawFetchAt(t, addr, topic, partition, 0, v, isolation)
}

// rawFetchAt is rawFetch from offset.
func rawFetchAt(t testing.TB, addr, topic string, partition int32, offset int64, v int16, isolation int8) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = -1, 0, 0, 1<<20, isolation
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := adminDial(t, addr).request(req, v).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch v%d: %+v", v, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// rawBatches splits a Fetch response's records into batches, failing on a torn one (a
// partial batch at the end of a response is allowed, as clients allow it).
func rawBatches(t testing.TB, raw []byte) []recordbatch.Batch {
	t.Helper()
	var out []recordbatch.Batch
	for len(raw) > 0 {
		b, rest, err := recordbatch.Next(raw)
		if err != nil {
			break
		}
		out = append(out, b)
		raw = rest
	}
	return out
}

// abortedQueue is a fetch's aborted transactions by first offset, each once, as the consumer
// queues them (CompletedFetch.abortedTransactions).
func abortedQueue(aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	q := slices.Clone(aborted)
	slices.SortFunc(q, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return cmp.Or(cmp.Compare(a.FirstOffset, b.FirstOffset), cmp.Compare(a.ProducerID, b.ProducerID))
	})
	return slices.CompactFunc(q, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) bool {
		return a.FirstOffset == b.FirstOffset && a.ProducerID == b.ProducerID
	})
}

// committedValues is what a read_committed consumer makes of a Fetch answer: data records
// below lso, without those of the aborted transactions listed (Kafka's consumer skips a
// producer's transactional batches from an aborted transaction's first offset to its
// marker: CompletedFetch.nextFetchedRecord).
func committedValues(t testing.TB, raw []byte, lso int64, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) []string {
	t.Helper()
	var out []string
	skipping := map[int64]bool{}
	pending := abortedQueue(aborted)
	for _, b := range rawBatches(t, raw) {
		if b.LastOffset() >= lso {
			t.Fatalf("read_committed returned the batch at %d-%d, at or past the LSO %d", b.BaseOffset(), b.LastOffset(), lso)
		}
		for len(pending) > 0 && pending[0].FirstOffset <= b.LastOffset() {
			skipping[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		if b.Control() {
			if isAbortMarker(b) {
				delete(skipping, b.ProducerID())
			}
			continue
		}
		if b.Transactional() && skipping[b.ProducerID()] {
			continue
		}
		err := b.ForEachRecord(false, func(r *recordbatch.Record) error {
			out = append(out, string(r.Value))
			return nil
		})
		if err != nil {
			t.Fatalf("records of the batch at %d: %v", b.BaseOffset(), err)
		}
	}
	return out
}

func TestTxnLeaderChangeKeepsOpenTransaction(t *testing.T) {
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("tx-lc%d", i)
	}
	c := startTxnCluster(t, ids...)
	coord := map[string]int32{}
	for _, id := range ids {
		coord[id] = c.findTxnCoordinator(id).NodeID
	}
	// The leader to stop is broker 2 or 3 (broker 1 stays controller) and coordinates
	// neither producer, so only the partitions' leadership moves.
	var victim int32
	var free []string
	for _, y := range []int32{2, 3} {
		free = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return coord[id] == y })
		if len(free) >= 2 {
			victim = y
			break
		}
	}
	if victim == 0 {
		t.Fatalf("no broker of 2 and 3 leaves two ids to other coordinators: %v", coord)
	}
	successor := 5 - victim // the other of 2 and 3, next in the assignment

	const topic = "txn-lc"
	top := adminTopic(topic, -1, -1, "min.insync.replicas", "2")
	for p := int32(0); p < 2; p++ {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{victim, successor, 1}
		top.ReplicaAssignment = append(top.ReplicaAssignment, ra)
	}
	cresp := adminDial(t, c.brokers[1].Addr("PLAINTEXT")).request(adminCreateTopicsReq(15000, false, top), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create "+topic, cresp.Topics[0].ErrorCode, nil)
	tps := []logstore.TopicPartition{{Topic: topic, Partition: 0}, {Topic: topic, Partition: 1}}
	partitionOn := func(b int32, tp logstore.TopicPartition) *Partition {
		if c.brokers[b] == nil {
			return nil
		}
		p, err := c.brokers[b].replicas.Partition(tp)
		if err != nil || p.Log() == nil {
			return nil
		}
		return p
	}
	adminWaitFor(t, 15*time.Second, "every replica of "+topic, func() bool {
		for _, tp := range tps {
			for _, b := range []int32{victim, successor, 1} {
				if p := partitionOn(b, tp); p == nil || p.IsLeader() != (b == victim) {
					return false
				}
			}
		}
		return true
	})

	// Partition 0: a committed transaction, then one left open that will commit; partition
	// 1: the same, the open one will abort.
	type txnCase struct {
		id        string
		partition int32
		commit    bool
		cl        *kgo.Client
		pid       int64
		openFirst int64 // first offset of the open transaction
		openEnd   int64 // its last offset + 1
		committed []string
		open      []string
	}
	cases := []*txnCase{{id: free[0], partition: 0, commit: true}, {id: free[1], partition: 1, commit: false}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range cases {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID(tc.id),
			kgo.TransactionTimeout(60*time.Second), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1000),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		tc.cl = cl
		produce := func(prefix string, n int) (first, end int64, values []string) {
			t.Helper()
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			first = -1
			for i := 0; i < n; i++ {
				v := fmt.Sprintf("%s-p%d-%d", prefix, tc.partition, i)
				r, err := cl.ProduceSync(ctx, &kgo.Record{Partition: tc.partition, Value: []byte(v)}).First()
				if err != nil {
					t.Fatalf("produce %s: %v", v, err)
				}
				if first < 0 {
					first = r.Offset
				}
				end = r.Offset + 1
				values = append(values, v)
			}
			return first, end, values
		}
		_, _, tc.committed = produce("committed", 3)
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit %s: %v", tc.id, err)
		}
		tc.openFirst, tc.openEnd, tc.open = produce("open", 2)
		tc.pid = c.describe(coord[tc.id], tc.id).ProducerID
	}

	// The followers hold every batch of the open transactions, and the old leader holds the
	// LSO at their first offsets.
	adminWaitFor(t, 15*time.Second, "the followers caught up", func() bool {
		for i, tp := range tps {
			for _, b := range []int32{successor, 1} {
				if l := partitionOn(b, tp).Log(); l.LogEndOffset() < cases[i].openEnd || l.HighWatermark() < cases[i].openEnd {
					return false
				}
			}
		}
		return true
	})
	for _, tc := range cases {
		lo := listOffsetLatest(t, c.brokers[victim].Addr("PLAINTEXT"), topic, tc.partition, 1)
		if lo.ErrorCode != 0 || lo.Offset != tc.openFirst {
			t.Fatalf("partition %d on the old leader: read_committed latest %d (%s), want the open transaction's first offset %d",
				tc.partition, lo.Offset, adminCodeName(lo.ErrorCode), tc.openFirst)
		}
	}

	// The leader goes away; the controller elects the next replica of the ISR.
	oldEpoch := partitionOn(successor, tps[0]).LeaderEpoch()
	c.brokers[victim].Shutdown()
	delete(c.brokers, victim)
	var leader int32
	adminWaitFor(t, 15*time.Second, "a new leader of both partitions", func() bool {
		for _, b := range []int32{successor, 1} {
			p0, p1 := partitionOn(b, tps[0]), partitionOn(b, tps[1])
			if p0 != nil && p1 != nil && p0.IsLeader() && p1.IsLeader() && p0.LeaderEpoch() > oldEpoch {
				leader = b
				return true
			}
		}
		return false
	})
	addr := c.brokers[leader].Addr("PLAINTEXT")
	t.Logf("leader %d stopped, broker %d leads %s", victim, leader, topic)

	// The new leader: LSO at the open transaction's first offset (OFFSET_NOT_AVAILABLE while
	// its high watermark is below the start of its epoch, as Partition.fetchOffsetForTimestamp;
	// never an LSO past the open transaction).
	for _, tc := range cases {
		adminWaitFor(t, 15*time.Second, fmt.Sprintf("partition %d's LSO on the new leader", tc.partition), func() bool {
			lo := listOffsetLatest(t, addr, topic, tc.partition, 1)
			if lo.ErrorCode == kerr.OffsetNotAvailable.Code {
				return false
			}
			if lo.ErrorCode != 0 || lo.Offset != tc.openFirst {
				t.Fatalf("partition %d on the new leader: read_committed latest %d (%s), want %d",
					tc.partition, lo.Offset, adminCodeName(lo.ErrorCode), tc.openFirst)
			}
			return true
		})
		if lo := listOffsetLatest(t, addr, topic, tc.partition, 0); lo.ErrorCode != 0 || lo.Offset != tc.openEnd {
			t.Fatalf("partition %d on the new leader: read_uncommitted latest %d (%s), want %d",
				tc.partition, lo.Offset, adminCodeName(lo.ErrorCode), tc.openEnd)
		}
		for _, v := range []int16{4, 11} {
			fp := rawFetch(t, addr, topic, tc.partition, v, 1)
			adminWantCode(t, fmt.Sprintf("Fetch v%d read_committed", v), fp.ErrorCode, nil)
			if fp.LastStableOffset != tc.openFirst || fp.HighWatermark != tc.openEnd || len(fp.AbortedTransactions) != 0 {
				t.Fatalf("partition %d, Fetch v%d read_committed: LSO %d HW %d aborted %+v, want LSO %d HW %d none",
					tc.partition, v, fp.LastStableOffset, fp.HighWatermark, fp.AbortedTransactions, tc.openFirst, tc.openEnd)
			}
			if got := committedValues(t, fp.RecordBatches, fp.LastStableOffset, fp.AbortedTransactions); !slices.Equal(got, tc.committed) {
				t.Fatalf("partition %d, Fetch v%d read_committed: %q, want %q", tc.partition, v, got, tc.committed)
			}
		}
		dp := kmsg.NewPtrDescribeProducersRequest()
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = topic, []int32{tc.partition}
		dp.Topics = append(dp.Topics, dt)
		pr := adminDial(t, addr).request(dp, 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
		if pr.ErrorCode != 0 || len(pr.ActiveProducers) != 1 || pr.ActiveProducers[0].ProducerID != tc.pid ||
			pr.ActiveProducers[0].CurrentTxnStartOffset != tc.openFirst || pr.ActiveProducers[0].LastSequence != 4 {
			t.Fatalf("partition %d, DescribeProducers on the new leader: %+v, want producer %d with its transaction open at %d, last sequence 4",
				tc.partition, pr, tc.pid, tc.openFirst)
		}
	}
	var wantCommitted []string
	for _, tc := range cases {
		wantCommitted = append(wantCommitted, tc.committed...)
	}
	slices.Sort(wantCommitted)
	got := consumeValues(t, addr, topic, kgo.ReadCommitted(), len(wantCommitted))
	if slices.Sort(got); !slices.Equal(got, wantCommitted) {
		t.Fatalf("read_committed consumer with the transactions open: %q, want %q", got, wantCommitted)
	}

	// The producers end their transactions through their coordinators, whose markers go to
	// the new leader.
	for _, tc := range cases {
		if err := tc.cl.EndTransaction(ctx, kgo.TransactionEndTry(tc.commit)); err != nil {
			t.Fatalf("end %s (commit %v): %v", tc.id, tc.commit, err)
		}
	}
	wantCommitted = nil
	for _, tc := range cases {
		// The marker is at openEnd: the LSO reaches the high watermark past it.
		adminWaitFor(t, 15*time.Second, fmt.Sprintf("partition %d's marker and LSO", tc.partition), func() bool {
			lo := listOffsetLatest(t, addr, topic, tc.partition, 1)
			return lo.ErrorCode == 0 && lo.Offset == tc.openEnd+1
		})
		if lo := listOffsetLatest(t, addr, topic, tc.partition, 0); lo.ErrorCode != 0 || lo.Offset != tc.openEnd+1 {
			t.Fatalf("partition %d: read_uncommitted latest %d (%s), want %d", tc.partition, lo.Offset, adminCodeName(lo.ErrorCode), tc.openEnd+1)
		}
		want := slices.Clone(tc.committed)
		var wantAborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
		if tc.commit {
			want = append(want, tc.open...)
		} else {
			a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			a.ProducerID, a.FirstOffset = tc.pid, tc.openFirst
			wantAborted = append(wantAborted, a)
		}
		wantCommitted = append(wantCommitted, want...)
		for _, v := range []int16{4, 11} {
			fp := rawFetch(t, addr, topic, tc.partition, v, 1)
			adminWantCode(t, fmt.Sprintf("Fetch v%d read_committed", v), fp.ErrorCode, nil)
			if fp.LastStableOffset != tc.openEnd+1 || fp.HighWatermark != tc.openEnd+1 {
				t.Fatalf("partition %d, Fetch v%d read_committed: LSO %d HW %d, want %d", tc.partition, v, fp.LastStableOffset, fp.HighWatermark, tc.openEnd+1)
			}
			if !slices.EqualFunc(fp.AbortedTransactions, wantAborted, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) bool {
				return a.ProducerID == b.ProducerID && a.FirstOffset == b.FirstOffset
			}) {
				t.Fatalf("partition %d, Fetch v%d read_committed: aborted transactions %+v, want %+v", tc.partition, v, fp.AbortedTransactions, wantAborted)
			}
			if got := committedValues(t, fp.RecordBatches, fp.LastStableOffset, fp.AbortedTransactions); !slices.Equal(got, want) {
				t.Fatalf("partition %d, Fetch v%d read_committed: %q, want %q", tc.partition, v, got, want)
			}
			// The marker itself: a control batch of the producer at openEnd.
			bs := rawBatches(t, fp.RecordBatches)
			if last := bs[len(bs)-1]; !last.Control() || last.BaseOffset() != tc.openEnd || last.ProducerID() != tc.pid {
				t.Fatalf("partition %d: last batch at %d control %v producer %d, want the marker at %d", tc.partition,
					last.BaseOffset(), last.Control(), last.ProducerID(), tc.openEnd)
			}
		}
		dp := kmsg.NewPtrDescribeProducersRequest()
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = topic, []int32{tc.partition}
		dp.Topics = append(dp.Topics, dt)
		pr := adminDial(t, addr).request(dp, 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
		if pr.ErrorCode != 0 || len(pr.ActiveProducers) != 1 || pr.ActiveProducers[0].CurrentTxnStartOffset != -1 {
			t.Fatalf("partition %d, DescribeProducers after the marker: %+v", tc.partition, pr)
		}
	}
	slices.Sort(wantCommitted)
	got = consumeValues(t, addr, topic, kgo.ReadCommitted(), len(wantCommitted))
	if slices.Sort(got); !slices.Equal(got, wantCommitted) {
		t.Fatalf("read_committed consumer after commit and abort: %q, want %q", got, wantCommitted)
	}
	if got := consumeValues(t, addr, topic, kgo.ReadUncommitted(), 10); len(got) != 10 {
		t.Fatalf("read_uncommitted consumer: %q, want all 10 records", got)
	}
}
