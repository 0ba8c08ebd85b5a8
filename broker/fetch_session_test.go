package broker

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFetchSessionEpochWraps(t *testing.T) {
	if nextFetchSessionEpoch(0) != 1 || nextFetchSessionEpoch(5) != 6 || nextFetchSessionEpoch(math.MaxInt32) != 1 {
		t.Fatal("epoch arithmetic")
	}
}

func TestFetchSessionCacheEviction(t *testing.T) {
	c := NewFetchSessionCache(2, 1000)
	a := c.maybeCreate(0, false, false, 5)
	b := c.maybeCreate(10, false, false, 5)
	if a == nil || b == nil || a.ID() == b.ID() || a.ID() <= 0 || a.Epoch() != 1 {
		t.Fatalf("create: %v %v", a, b)
	}
	// Full, nothing stale or evictable yet: a consumer session is refused...
	if s := c.maybeCreate(20, false, false, 100); s != nil {
		t.Fatalf("created %d in a full cache", s.ID())
	}
	// ...but a follower (privileged) session may evict a consumer one.
	f := c.maybeCreate(30, true, false, 1)
	if f == nil || c.Len() != 2 || c.Stats().Evicted != 1 {
		t.Fatalf("privileged: %v len %d stats %+v", f, c.Len(), c.Stats())
	}
	// Stale sessions go first (LRU among those idle past the eviction time).
	rest := a
	if c.Get(a.ID()) == nil {
		rest = b
	}
	if s := c.maybeCreate(1020, false, false, 0); s == nil || c.Get(rest.ID()) != nil || c.Get(f.ID()) == nil {
		t.Fatalf("stale eviction: %v", s)
	}
	// Zero slots: sessions disabled.
	if s := NewFetchSessionCache(0, 1000).maybeCreate(0, true, false, 1); s != nil {
		t.Fatal("created with 0 slots")
	}
}

func TestFetchSessionCacheEvictsSmallerOldSession(t *testing.T) {
	c := NewFetchSessionCache(1, 100)
	a := c.maybeCreate(0, false, false, 3)
	c.mu.Lock()
	a.lastUsedMs = 150 // recently used, but created more than 100 ms ago: evictable by all
	c.mu.Unlock()
	for i := 0; i < 3; i++ {
		a.add(&cachedPartition{key: fetchSessionKey{topic: "x", partition: int32(i)}})
	}
	if s := c.maybeCreate(160, false, false, 2); s != nil {
		t.Fatal("a smaller session evicted a larger one")
	}
	if s := c.maybeCreate(160, false, false, 4); s == nil || c.Get(a.ID()) != nil {
		t.Fatal("a larger session did not evict the smaller old one")
	}
}

// sessionFetch is a v12 (names) or v13 (ids) fetch of the given partitions of topic.
func sessionFetch(e *dataEnv, version int16, id, epoch int32, topic string, parts map[int32]int64) *kmsg.FetchRequest {
	req := fetchReq(version, 0, 1, 1<<20, topic, nil, 1<<20)
	req.Topics[0].Partitions = nil
	for p := int32(0); p < 64; p++ {
		if off, ok := parts[p]; ok {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, off, 1<<20
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, fp)
		}
	}
	if len(req.Topics[0].Partitions) == 0 {
		req.Topics = nil
	}
	if version >= 13 && req.Topics != nil {
		req.Topics[0].Topic, req.Topics[0].TopicID = "", e.topics[topic]
	}
	req.SessionID, req.SessionEpoch = id, epoch
	return req
}

func respParts(r *kmsg.FetchResponse) map[int32]kmsg.FetchResponseTopicPartition {
	m := map[int32]kmsg.FetchResponseTopicPartition{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			m[p.Partition] = p
		}
	}
	return m
}

func TestFetchSessionIncremental(t *testing.T) {
	for _, v := range []int16{12, 13} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			e := newDataEnv(t)
			e.createTopic("inc", 3)
			e.produce(produceReq(9, 1, 5000, "inc", 0, valuesBatch(2, 10)))

			r := e.fetch(sessionFetch(e, v, 0, 0, "inc", map[int32]int64{0: 0, 1: 0, 2: 0}))
			id := r.SessionID
			if r.ErrorCode != 0 || id == 0 || len(respParts(r)) != 3 {
				t.Fatalf("full: %+v", r)
			}
			// Incremental with nothing changed: empty response, same session.
			r = e.fetch(sessionFetch(e, v, id, 1, "inc", map[int32]int64{0: 2}))
			if r.ErrorCode != 0 || r.SessionID != id || len(r.Topics) != 0 {
				t.Fatalf("no change: %+v", r)
			}
			// New records on partition 1 only: only it comes back, from the cached offset.
			e.produce(produceReq(9, 1, 5000, "inc", 1, valuesBatch(3, 10)))
			r = e.fetch(sessionFetch(e, v, id, 2, "inc", nil))
			ps := respParts(r)
			if p, ok := ps[1]; len(ps) != 1 || !ok || p.HighWatermark != 3 || len(batchOffsets(t, p.RecordBatches)) != 1 {
				t.Fatalf("changed: %+v", r)
			}
			if v >= 13 && r.Topics[0].TopicID != e.topics["inc"] {
				t.Fatalf("topic id %v", r.Topics[0].TopicID)
			}
			// Fairness: the answered partition moved to the end of the session's order.
			if s := e.apis.fetchSessions().Get(id); s.order[len(s.order)-1].partition != 1 {
				t.Fatalf("order %v", s.order)
			}
			// Wrong epoch, unknown id.
			if r = e.fetch(sessionFetch(e, v, id, 7, "inc", nil)); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(r.Topics) != 0 {
				t.Fatalf("bad epoch: %+v", r)
			}
			if r = e.fetch(sessionFetch(e, v, id+1, 3, "inc", nil)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
				t.Fatalf("bad id: %+v", r)
			}
			// The other request version on the session: topic id error.
			other := int16(25 - v)
			if r = e.fetch(sessionFetch(e, other, id, 3, "inc", nil)); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
				t.Fatalf("topic id mismatch: %+v", r)
			}
			// Forget partition 1, then produce to it: nothing comes back; partition 2 does.
			req := sessionFetch(e, v, id, 3, "inc", map[int32]int64{1: 3})
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.Partitions = "inc", []int32{1}
			if v >= 13 {
				ft.Topic, ft.TopicID = "", e.topics["inc"]
			}
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			req.Topics = nil
			if r = e.fetch(req); r.ErrorCode != 0 || len(r.Topics) != 0 || e.apis.fetchSessions().Get(id).Size() != 2 {
				t.Fatalf("forget: %+v", r)
			}
			e.produce(produceReq(9, 1, 5000, "inc", 1, valuesBatch(1, 10)))
			e.produce(produceReq(9, 1, 5000, "inc", 2, valuesBatch(1, 10)))
			ps = respParts(e.fetch(sessionFetch(e, v, id, 4, "inc", nil)))
			if _, ok := ps[2]; len(ps) != 1 || !ok {
				t.Fatalf("after forget: %v", ps)
			}
			// Close: sessionless full fetch, the session is gone.
			r = e.fetch(sessionFetch(e, v, id, -1, "inc", map[int32]int64{0: 0}))
			if r.ErrorCode != 0 || r.SessionID != 0 || len(r.Topics) != 1 || e.apis.fetchSessions().Get(id) != nil {
				t.Fatalf("close: %+v", r)
			}
			st := e.apis.fetchSessions().Stats()
			if st.Created != 1 || st.Incremental != 4 || st.Errors != 3 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestFetchSessionSlotsConfig(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["max.incremental.fetch.session.cache.slots"] = "0"
	e.createTopic("noslot", 1)
	if r := e.fetch(sessionFetch(e, 12, 0, 0, "noslot", map[int32]int64{0: 0})); r.ErrorCode != 0 || r.SessionID != 0 || len(r.Topics) != 1 {
		t.Fatalf("no slots: %+v", r)
	}
}

// TestFetchSessionKgo50Partitions: kgo uses fetch sessions by default; over 50 partitions
// on the zero-copy path it reads everything, with incremental fetches.
func TestFetchSessionKgo50Partitions(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("fifty", 50)
	e.serve()

	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ConsumeTopics("fifty"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const rounds, perRound = 4, 500
	want := map[string]bool{}
	got := map[string]bool{}
	last := map[int32]int64{}
	for round := 0; round < rounds; round++ {
		for i := 0; i < perRound; i++ {
			v := fmt.Sprintf("r%d-%d", round, i)
			want[v] = true
			cl.Produce(ctx, &kgo.Record{Topic: "fifty", Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for len(got) < len(want) {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d: %v", len(got), len(want), err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				if prev, ok := last[r.Partition]; ok && r.Offset != prev+1 {
					t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
				}
				last[r.Partition] = r.Offset
				if got[string(r.Value)] || !want[string(r.Value)] {
					t.Fatalf("unexpected or duplicate %q", r.Value)
				}
				got[string(r.Value)] = true
			})
		}
	}
	if len(last) != 50 {
		t.Fatalf("records from %d partitions", len(last))
	}
	st := e.apis.fetchSessions().Stats()
	t.Logf("fetch session stats: %+v", st)
	if st.Created == 0 || st.Incremental == 0 {
		t.Fatalf("no sessions used: %+v", st)
	}
}

// TestFetchSessionSarama: sarama sends sessionless fetches (id 0, epoch -1) and still works
// (TestSaramaProduceConsume covers the consume path); it creates no session.
func TestFetchSessionSarama(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("sar", 1)
	e.serve()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_7_0_0
	cfg.Producer.Return.Successes = true
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	client, err := sarama.NewClient([]string{e.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 20; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sar", Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition("sar", 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for i := 0; i < 20; i++ {
		select {
		case m := <-pc.Messages():
			if string(m.Value) != fmt.Sprint(i) {
				t.Fatalf("message %d: %q", i, m.Value)
			}
		case err := <-pc.Errors():
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out at %d", i)
		}
	}
	if st := e.apis.fetchSessions().Stats(); st.Created != 0 || st.Incremental != 0 || st.Full == 0 {
		t.Fatalf("sarama stats %+v", st)
	}
}
