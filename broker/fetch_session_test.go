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

// sizedParts returns n cached partitions of topic "x".
func sizedParts(n int) []*cachedPartition {
	var ps []*cachedPartition
	for i := range n {
		ps = append(ps, &cachedPartition{key: fetchSessionKey{topic: "x", partition: int32(i)}})
	}
	return ps
}

// touch uses s at nowMs as an incremental fetch does.
func touch(c *FetchSessionCache, s *FetchSession, nowMs int64) {
	c.mu.Lock()
	s.mu.Lock()
	c.touchLocked(s, nowMs)
	s.mu.Unlock()
	c.mu.Unlock()
}

// TestFetchSessionCacheEviction follows Kafka's FetchSessionTest (testSessionCache,
// testPrivilegedSessionHandling, testZeroSizeFetchSession...): FetchSessionCache.tryEvict
// with its stale-first rule and the evictableByPrivileged / evictableByAll sets.
func TestFetchSessionCacheEviction(t *testing.T) {
	const evictionMs = 100
	created := func(t *testing.T, c *FetchSessionCache, now int64, privileged bool, size int) *FetchSession {
		t.Helper()
		s := c.maybeCreate(now, privileged, false, sizedParts(size))
		if s == nil {
			t.Fatalf("no session created at %d (privileged %v, size %d)", now, privileged, size)
		}
		return s
	}
	refused := func(t *testing.T, c *FetchSessionCache, now int64, privileged bool, size int) {
		t.Helper()
		if s := c.maybeCreate(now, privileged, false, sizedParts(size)); s != nil {
			t.Fatalf("session %d created at %d (privileged %v, size %d) in a full cache", s.ID(), now, privileged, size)
		}
	}
	gone := func(t *testing.T, c *FetchSessionCache, ss ...*FetchSession) {
		t.Helper()
		for _, s := range ss {
			if c.Get(s.ID()) != nil {
				t.Fatalf("session %d (privileged %v, size %d) still cached", s.ID(), s.privileged, s.Size())
			}
		}
	}
	kept := func(t *testing.T, c *FetchSessionCache, ss ...*FetchSession) {
		t.Helper()
		for _, s := range ss {
			if c.Get(s.ID()) == nil {
				t.Fatalf("session %d (privileged %v, size %d) evicted", s.ID(), s.privileged, s.Size())
			}
		}
	}

	t.Run("stale", func(t *testing.T) {
		c := NewFetchSessionCache(2, evictionMs)
		a := created(t, c, 0, true, 50) // a follower's big session...
		b := created(t, c, 10, false, 1)
		touch(c, b, 90)
		s := created(t, c, 101, false, 1) // ...idle for 101 ms is stale: evicted by a tiny consumer
		gone(t, c, a)
		kept(t, c, b, s)
		if st := c.Stats(); st.Evicted != 1 || st.Partitions != 2 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("a follower evicts the least valuable consumer session", func(t *testing.T) {
		c := NewFetchSessionCache(3, evictionMs)
		a := created(t, c, 0, false, 5)
		b := created(t, c, 1, false, 3)
		f1 := created(t, c, 2, true, 1)
		f2 := created(t, c, 3, true, 1) // EvictableKey (false, 3, b) is the smallest
		gone(t, c, b)
		kept(t, c, a, f1, f2)
		f3 := created(t, c, 4, true, 1)
		gone(t, c, a)
		// Only followers left, none old: another follower cannot evict one.
		refused(t, c, 5, true, 1000)
		kept(t, c, f1, f2, f3)
	})
	t.Run("a consumer cannot evict a young session", func(t *testing.T) {
		c := NewFetchSessionCache(1, evictionMs)
		a := created(t, c, 0, false, 1)
		touch(c, a, 50)
		refused(t, c, 60, false, 1000)
		kept(t, c, a)
	})
	t.Run("evictability is decided at the last touch", func(t *testing.T) {
		c := NewFetchSessionCache(1, evictionMs)
		a := created(t, c, 0, false, 1)
		touch(c, a, 80) // not yet older than 100 ms when last used
		refused(t, c, 150, false, 1000)
		touch(c, a, 150) // now it is: evictable by all
		created(t, c, 160, false, 2)
		gone(t, c, a)
	})
	t.Run("a consumer evicts an old smaller session, not an equal or larger one", func(t *testing.T) {
		c := NewFetchSessionCache(1, evictionMs)
		a := created(t, c, 0, false, 3)
		touch(c, a, 150)
		refused(t, c, 160, false, 2)
		refused(t, c, 160, false, 3) // key (false, 3, 0) is smaller than (false, 3, id)
		created(t, c, 160, false, 4)
		gone(t, c, a)
	})
	t.Run("the size compared is the one at the last touch", func(t *testing.T) {
		c := NewFetchSessionCache(1, evictionMs)
		a := created(t, c, 0, false, 1)
		touch(c, a, 150)
		a.mu.Lock()
		for _, cp := range sizedParts(10) {
			a.add(cp) // grown since, but not touched
		}
		a.mu.Unlock()
		created(t, c, 160, false, 2)
		gone(t, c, a)
	})
	t.Run("a consumer never evicts a follower that is not stale", func(t *testing.T) {
		c := NewFetchSessionCache(1, evictionMs)
		f := created(t, c, 0, true, 1)
		touch(c, f, 150) // old: in evictableByAll, but (true, 1, id) outranks any consumer
		refused(t, c, 160, false, 1000)
		// Another follower's session evicts it only if larger: (true, 1, 0) < (true, 1, id).
		refused(t, c, 160, true, 1)
		created(t, c, 160, true, 2)
		gone(t, c, f)
	})
	t.Run("zero slots disable sessions", func(t *testing.T) {
		refused(t, NewFetchSessionCache(0, evictionMs), 0, true, 1)
	})
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

// TestFetchSessionForgetAllCloses: an incremental fetch that forgets the session's last
// partition closes it and is answered sessionless (FetchManager.newContext).
func TestFetchSessionForgetAllCloses(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("last", 1)
	r := e.fetch(sessionFetch(e, 13, 0, 0, "last", map[int32]int64{0: 0}))
	id := r.SessionID
	if r.ErrorCode != 0 || id == 0 {
		t.Fatalf("full: %+v", r)
	}
	req := sessionFetch(e, 13, id, 1, "last", nil)
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.TopicID, ft.Partitions = e.topics["last"], []int32{0}
	req.ForgottenTopics = append(req.ForgottenTopics, ft)
	if r = e.fetch(req); r.ErrorCode != 0 || r.SessionID != 0 || len(r.Topics) != 0 {
		t.Fatalf("forget all: %+v", r)
	}
	if c := e.apis.fetchSessions(); c.Get(id) != nil || c.Len() != 0 || c.Stats().Partitions != 0 {
		t.Fatalf("session %d still cached (%d sessions, %+v)", id, c.Len(), c.Stats())
	}
	if r = e.fetch(sessionFetch(e, 13, id, 2, "last", nil)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: %+v", r)
	}
}

// TestFetchInconsistentTopicID: from v13 a partition whose topic id differs from the
// hosted partition's is answered INCONSISTENT_TOPIC_ID (ReplicaManager.readFromLocalLog's
// hasConsistentTopicId), both in a full and in an incremental fetch; an id the metadata
// cache no longer knows is UNKNOWN_TOPIC_ID; v12 (by name) has no id to check. The case
// arises when a topic is deleted and re-created under the same name and the metadata
// cache learns the new id before this broker's old partition goes.
func TestFetchInconsistentTopicID(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("recreated", 1)
	e.produce(produceReq(9, 1, 5000, "recreated", 0, valuesBatch(2, 10)))
	oldID := e.topics["recreated"]
	newID := [16]byte{0xee, 0x01}
	part := func(r *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
		t.Helper()
		ps := respParts(r)
		p, ok := ps[0]
		if r.ErrorCode != 0 || len(ps) != 1 || !ok {
			t.Fatalf("response %+v", r)
		}
		return p
	}

	// A session created while the ids agree.
	r := e.fetch(sessionFetch(e, 13, 0, 0, "recreated", map[int32]int64{0: 0}))
	if p := part(r); p.ErrorCode != 0 || p.HighWatermark != 2 {
		t.Fatalf("consistent fetch: %+v", p)
	}
	oldSession := r.SessionID

	// The metadata cache now maps the name to a new id; the hosted partition keeps the old.
	e.topics["recreated"] = newID
	e.updateMetadataWithLeader("recreated", testBrokerID, []int32{testBrokerID})
	e.topics["recreated"] = oldID

	for _, v := range []int16{13, 16} {
		req := sessionFetch(e, v, 0, -1, "recreated", map[int32]int64{0: 0})
		req.Topics[0].TopicID = newID
		if p := part(e.fetch(req)); p.ErrorCode != kerr.InconsistentTopicID.Code || len(p.RecordBatches) != 0 {
			t.Fatalf("v%d new id: error %d, %d record bytes; want INCONSISTENT_TOPIC_ID", v, p.ErrorCode, len(p.RecordBatches))
		}
		req = sessionFetch(e, v, 0, -1, "recreated", map[int32]int64{0: 0})
		if p := part(e.fetch(req)); p.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("v%d old id: error %d; want UNKNOWN_TOPIC_ID", v, p.ErrorCode)
		}
	}
	if p := part(e.fetch(sessionFetch(e, 12, 0, -1, "recreated", map[int32]int64{0: 0}))); p.ErrorCode != 0 || p.HighWatermark != 2 {
		t.Fatalf("v12 by name: %+v", p)
	}

	// The old session's partition (old id) is now unknown; a new session with the new id
	// gets the error in the full response and again in every incremental one.
	if p := part(e.fetch(sessionFetch(e, 13, oldSession, 1, "recreated", nil))); p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("old session: error %d", p.ErrorCode)
	}
	req := sessionFetch(e, 13, 0, 0, "recreated", map[int32]int64{0: 0})
	req.Topics[0].TopicID = newID
	r = e.fetch(req)
	if p := part(r); p.ErrorCode != kerr.InconsistentTopicID.Code || r.SessionID == 0 {
		t.Fatalf("new session: %+v", r)
	}
	if p := part(e.fetch(sessionFetch(e, 13, r.SessionID, 1, "recreated", nil))); p.ErrorCode != kerr.InconsistentTopicID.Code {
		t.Fatalf("incremental: error %d", p.ErrorCode)
	}
}
