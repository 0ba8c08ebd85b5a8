package broker

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// sessionTP names partition p of topic "s".
func sessionTP(p int32) logstore.TopicPartition {
	return logstore.TopicPartition{Topic: "s", Partition: p}
}

var sessionTopicID = [16]byte{0x5e, 0x55}

func partData(offset int64) fetchPartitionData {
	return fetchPartitionData{topicID: sessionTopicID, fetchOffset: offset, maxBytes: 1 << 20, currentLeaderEpoch: 3, lastFetchedEpoch: 2}
}

// build adds offsets (partition -> fetch offset, in partition order) and builds.
func buildFetch(h *fetchSessionHandler, offsets map[int32]int64) fetchRequestData {
	b := h.newBuilder()
	var ps []int32
	for p := range offsets {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		b.add(sessionTP(p), partData(offsets[p]))
	}
	return b.build()
}

func sentParts(ps []fetchSessionPartition) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s-%d@%d", p.tp.Topic, p.tp.Partition, p.data.fetchOffset))
	}
	return out
}

// fetchResp is a v13+ response naming partitions of topic "s" by id.
func fetchResp(sessionID int32, errCode int16, parts ...int32) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(16)
	r.SessionID, r.ErrorCode = sessionID, errCode
	if len(parts) > 0 {
		t := kmsg.NewFetchResponseTopic()
		t.TopicID = sessionTopicID
		for _, p := range parts {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p
			t.Partitions = append(t.Partitions, rp)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// TestFetchSessionHandler follows Kafka's FetchSessionHandlerTest: full fetch, then
// incremental fetches with only the changes, then resets on errors.
func TestFetchSessionHandler(t *testing.T) {
	log, _ := newTestLogger(t)
	h := newFetchSessionHandler(1, log)
	meta := func(want fetchMetadata, d fetchRequestData) {
		t.Helper()
		if d.metadata != want {
			t.Fatalf("metadata %v, want %v", d.metadata, want)
		}
	}
	all := map[int32]int64{0: 10, 1: 20, 2: 30}

	// Full fetch: every partition, epoch 0 asks for a session.
	d := buildFetch(h, all)
	meta(fetchMetadata{0, 0}, d)
	if got := sentParts(d.toSend); !slices.Equal(got, []string{"s-0@10", "s-1@20", "s-2@30"}) || !d.canUseTopicIDs {
		t.Fatalf("full: %v ids %v", got, d.canUseTopicIDs)
	}
	if !h.handleResponse(fetchResp(77, 0, 0, 1, 2), 16) || h.sessionID() != 77 {
		t.Fatalf("full response not accepted: next %v", h.next)
	}

	// Nothing changed: an empty incremental request.
	d = buildFetch(h, all)
	meta(fetchMetadata{77, 1}, d)
	if len(d.toSend) != 0 || len(d.toForget) != 0 || len(d.session) != 3 {
		t.Fatalf("idle incremental: %+v", d)
	}
	// The response carries only partition 1 (the others are implied).
	if !h.handleResponse(fetchResp(77, 0, 1), 16) {
		t.Fatal("incremental response not accepted")
	}

	// Partition 1 moved on, 2 is no longer fetched, 3 is new.
	d = buildFetch(h, map[int32]int64{0: 10, 1: 25, 3: 0})
	meta(fetchMetadata{77, 2}, d)
	if got := sentParts(d.toSend); !slices.Equal(got, []string{"s-3@0", "s-1@25"}) {
		t.Fatalf("incremental sends %v", got)
	}
	if got := sentParts(d.toForget); !slices.Equal(got, []string{"s-2@30"}) {
		t.Fatalf("incremental forgets %v", got)
	}
	req := kmsg.NewPtrFetchRequest()
	d.request(req, 16)
	if req.SessionID != 77 || req.SessionEpoch != 2 || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 2 ||
		req.Topics[0].TopicID != sessionTopicID || len(req.ForgottenTopics) != 1 ||
		req.ForgottenTopics[0].TopicID != sessionTopicID || !slices.Equal(req.ForgottenTopics[0].Partitions, []int32{2}) {
		t.Fatalf("request %+v", req)
	}
	// A partition outside the session in an incremental response: dropped, new session.
	if h.handleResponse(fetchResp(77, 0, 2), 16) {
		t.Fatal("response with a forgotten partition accepted")
	}
	meta(fetchMetadata{77, 0}, buildFetch(h, map[int32]int64{0: 10, 1: 25, 3: 0}))
	if !h.handleResponse(fetchResp(78, 0, 0, 1, 3), 16) {
		t.Fatal("full response not accepted")
	}

	// INVALID_FETCH_SESSION_EPOCH: close this session and ask for a new one (id, 0) with
	// every partition.
	meta(fetchMetadata{78, 1}, buildFetch(h, map[int32]int64{0: 10, 1: 25, 3: 0}))
	if h.handleResponse(fetchResp(78, kerr.InvalidFetchSessionEpoch.Code), 16) {
		t.Fatal("error response accepted")
	}
	d = buildFetch(h, map[int32]int64{0: 10, 1: 25, 3: 0})
	meta(fetchMetadata{78, 0}, d)
	if len(d.toSend) != 3 {
		t.Fatalf("full after error sends %v", sentParts(d.toSend))
	}
	// The leader created no session (no free slot): full fetches, sessionless.
	if !h.handleResponse(fetchResp(0, 0, 0, 1, 3), 16) {
		t.Fatal("sessionless full response not accepted")
	}
	meta(fetchMetadata{0, 0}, buildFetch(h, map[int32]int64{0: 10, 1: 25, 3: 0}))
	// A full response omitting a partition is unusable.
	if h.handleResponse(fetchResp(79, 0, 0, 1), 16) {
		t.Fatal("full response omitting a partition accepted")
	}
	meta(fetchMetadata{0, 0}, buildFetch(h, map[int32]int64{0: 10}))
	if !h.handleResponse(fetchResp(79, 0, 0), 16) {
		t.Fatal("full response not accepted")
	}
	// FETCH_SESSION_ID_NOT_FOUND (the leader evicted the session or restarted): (0, 0).
	meta(fetchMetadata{79, 1}, buildFetch(h, map[int32]int64{0: 10}))
	h.handleResponse(fetchResp(0, kerr.FetchSessionIDNotFound.Code), 16)
	meta(fetchMetadata{0, 0}, buildFetch(h, map[int32]int64{0: 10}))
	h.handleResponse(fetchResp(80, 0, 0), 16)
	// A network error: close and re-create.
	meta(fetchMetadata{80, 1}, buildFetch(h, map[int32]int64{0: 11}))
	h.handleError(net.ErrClosed)
	meta(fetchMetadata{80, 0}, buildFetch(h, map[int32]int64{0: 11}))
	h.handleResponse(fetchResp(81, 0, 0), 16)
	// An incremental response with session id 0: the leader closed the session.
	buildFetch(h, map[int32]int64{0: 11})
	if !h.handleResponse(fetchResp(0, 0), 16) {
		t.Fatal("closing incremental response not accepted")
	}
	meta(fetchMetadata{0, 0}, buildFetch(h, map[int32]int64{0: 11}))

	// Epochs wrap from MaxInt32 to 1.
	h.next = fetchMetadata{81, math.MaxInt32}
	if h.next.nextIncremental() != (fetchMetadata{81, 1}) || (fetchMetadata{81, -1}).nextIncremental().epoch != -1 {
		t.Fatal("epoch wrap")
	}
}

// TestFetchSessionHandlerTopicIDs: a partition without a topic id makes requests v12 (by
// name); a partition re-created with a new id is forgotten by its old id at v13+ only.
func TestFetchSessionHandlerTopicIDs(t *testing.T) {
	log, _ := newTestLogger(t)
	h := newFetchSessionHandler(1, log)
	b := h.newBuilder()
	b.add(sessionTP(0), partData(0))
	b.add(logstore.TopicPartition{Topic: "old", Partition: 0}, fetchPartitionData{fetchOffset: 5})
	if d := b.build(); d.canUseTopicIDs {
		t.Fatal("topic ids with a partition lacking one")
	}
	r := fetchResp(5, 0)
	r.SetVersion(12)
	for _, name := range []string{"s", "old"} {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = name
		rt.Partitions = append(rt.Partitions, kmsg.NewFetchResponseTopicPartition())
		r.Topics = append(r.Topics, rt)
	}
	if !h.handleResponse(r, 12) {
		t.Fatal("v12 full response not accepted")
	}

	h = newFetchSessionHandler(1, log)
	buildFetch(h, map[int32]int64{0: 0})
	h.handleResponse(fetchResp(9, 0, 0), 16)
	b = h.newBuilder()
	newID := [16]byte{0x99}
	b.add(sessionTP(0), fetchPartitionData{topicID: newID})
	d := b.build()
	if len(d.toReplace) != 1 || d.toReplace[0].data.topicID != sessionTopicID || len(d.toSend) != 1 || d.toSend[0].data.topicID != newID {
		t.Fatalf("replace: %+v", d)
	}
	for _, c := range []struct {
		version int16
		forgets int
	}{{16, 1}, {12, 0}} {
		req := kmsg.NewPtrFetchRequest()
		d.request(req, c.version)
		if len(req.ForgottenTopics) != c.forgets {
			t.Fatalf("v%d forgotten %+v", c.version, req.ForgottenTopics)
		}
	}
}

// recordedFetch is one follower Fetch the leader served.
type recordedFetch struct {
	sessionID, epoch int32
	parts            []int32 // partitions in the request
	forgotten        []int32
	respSessionID    int32
	respErr          int16
	respParts        int
}

func (r recordedFetch) String() string {
	return fmt.Sprintf("{id %d epoch %d parts %v forgotten %v → id %d err %d parts %d}", r.sessionID, r.epoch, r.parts,
		r.forgotten, r.respSessionID, r.respErr, r.respParts)
}

// fetchRecorder is a Handler that records the follower Fetch requests it passes on.
type fetchRecorder struct {
	h  Handler
	mu sync.Mutex
	rs []recordedFetch
}

func (f *fetchRecorder) Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	fr, ok := req.(*kmsg.FetchRequest)
	if !ok || fr.ReplicaState.ID < 0 && fr.ReplicaID < 0 {
		return f.h.Handle(ctx, rc, req)
	}
	rec := recordedFetch{sessionID: fr.SessionID, epoch: fr.SessionEpoch}
	for _, t := range fr.Topics {
		for _, p := range t.Partitions {
			rec.parts = append(rec.parts, p.Partition)
		}
	}
	for _, t := range fr.ForgottenTopics {
		rec.forgotten = append(rec.forgotten, t.Partitions...)
	}
	resp, err := f.h.Handle(ctx, rc, req)
	if r, ok := resp.(*kmsg.FetchResponse); ok {
		rec.respSessionID, rec.respErr = r.SessionID, r.ErrorCode
		for _, t := range r.Topics {
			rec.respParts += len(t.Partitions)
		}
	}
	f.mu.Lock()
	f.rs = append(f.rs, rec)
	f.mu.Unlock()
	return resp, err
}

func (f *fetchRecorder) take() []recordedFetch {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.rs
	f.rs = nil
	return rs
}

func (f *fetchRecorder) snapshot() []recordedFetch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rs)
}

// serveRecorded serves e through a fetchRecorder, as dataEnv.serve does with e.apis.
func serveRecorded(t *testing.T, e *dataEnv) *fetchRecorder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &fetchRecorder{h: e.apis}
	s := NewSocketServer(l, "PLAINTEXT", rec, e.cfg.SocketRequestMaxBytes, e.log)
	e.addr = l.Addr().String()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	e.updateMetadata()
	return rec
}

// TestFollowerFetchSession: a real follower fetches from a real leader over loopback in
// an incremental fetch session: after the first full fetch its requests carry only the
// partitions whose fetch state changed, the leader answers only partitions with news,
// a partition removed from or added to the fetcher is forgotten or added, and when the
// leader loses the session the follower recovers with a full fetch and replication goes on.
func TestFollowerFetchSession(t *testing.T) {
	e := newDataEnv(t)
	rec := serveRecorded(t, e)
	const topic, n = "sess", 4
	id := [16]byte{0x5e, 0x55, 0x10}
	e.topics[topic], e.parts[topic] = id, n
	replicas := []int32{1, 2}
	for p := range int32(n) {
		lisr(t, e.rm, e.ctrlEp, id, logstore.TopicPartition{Topic: topic, Partition: p}, 1, 0, replicas, replicas)
	}
	e.updateMetadataWithLeader(topic, 1, replicas)
	f := newFollowerEnv(t, e)
	for p := range int32(n) {
		lisr(t, f.rm, e.ctrlEp, id, logstore.TopicPartition{Topic: topic, Partition: p}, 1, 0, replicas, replicas)
	}
	cache := e.apis.fetchSessions()

	produce := func(p int32) {
		t.Helper()
		tp := logstore.TopicPartition{Topic: topic, Partition: p}
		r := e.rm.AppendRecords(context.Background(), 10*time.Second, -1, []logstore.TopicPartition{tp}, [][]byte{valuesBatch(2, 10)})[0]
		if r.Err != nil {
			t.Fatalf("acks=-1 produce to %d: %v", p, r.Err)
		}
	}
	replicated := func() {
		t.Helper()
		waitFor(t, 10*time.Second, func() bool {
			for p := range int32(n) {
				tp := logstore.TopicPartition{Topic: topic, Partition: p}
				ll, _ := e.logs.GetLog(tp)
				fl, _ := f.logs.GetLog(tp)
				if fl == nil || fl.LogEndOffset() != ll.LogEndOffset() || fl.HighWatermark() != ll.HighWatermark() {
					return false
				}
			}
			return true
		})
		for p := range int32(n) {
			tp := logstore.TopicPartition{Topic: topic, Partition: p}
			ll, _ := e.logs.GetLog(tp)
			fl, _ := f.logs.GetLog(tp)
			if string(logBytes(t, ll)) != string(logBytes(t, fl)) {
				t.Fatalf("partition %d: follower bytes differ from the leader's", p)
			}
		}
	}
	// idleIncremental waits for an incremental fetch with no partition (steady state).
	idleIncremental := func() {
		t.Helper()
		waitFor(t, 10*time.Second, func() bool {
			for _, r := range rec.snapshot() {
				if r.sessionID != 0 && r.epoch > 0 && len(r.parts) == 0 && len(r.forgotten) == 0 && r.respErr == 0 {
					return true
				}
			}
			return false
		})
	}

	for p := range int32(n) {
		produce(p)
	}
	replicated()
	idleIncremental()
	first := rec.take()
	// The fetcher may start with the first partition alone: the others join the session
	// through incremental fetches.
	if r := first[0]; r.sessionID != 0 || r.epoch != 0 || len(r.parts) == 0 || r.respSessionID == 0 {
		t.Fatalf("first fetch %v, want a full fetch creating a session", r)
	}
	sid := first[0].respSessionID
	s := cache.Get(sid)
	if cache.Len() != 1 || s == nil || s.Size() != n || !s.privileged {
		t.Fatalf("leader's sessions: %d, session %d: %+v", cache.Len(), sid, s)
	}

	// Steady state: produce to partition 2 only; every request is incremental in the same
	// session and names partition 2 at most.
	produce(2)
	produce(2)
	replicated()
	idleIncremental()
	rs := rec.take()
	sent2 := false
	for _, r := range rs {
		if r.sessionID != sid || r.epoch <= 0 || r.respErr != 0 || r.respSessionID != sid {
			t.Fatalf("steady-state fetch %v, want incremental in session %d", r, sid)
		}
		if len(r.parts) > 1 || len(r.parts) == 1 && r.parts[0] != 2 || len(r.forgotten) > 0 || r.respParts > 1 {
			t.Fatalf("steady-state fetch %v carries more than partition 2", r)
		}
		sent2 = sent2 || len(r.parts) == 1
	}
	if !sent2 {
		t.Fatalf("partition 2's new fetch offset was never sent: %v", rs)
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].epoch != nextFetchSessionEpoch(rs[i-1].epoch) {
			t.Fatalf("epochs not consecutive: %v", rs)
		}
	}

	// The fetcher's partition set changes: partition 3 is forgotten, then added back.
	tp3 := logstore.TopicPartition{Topic: topic, Partition: 3}
	f.rm.fetchers.removeFetchers([]logstore.TopicPartition{tp3})
	produce(0) // wakes the leader's wait so the next request goes out
	waitFor(t, 10*time.Second, func() bool { return s.Size() == n-1 })
	p3, err := f.rm.Partition(tp3)
	if err != nil {
		t.Fatal(err)
	}
	f.rm.fetchers.addFetcher(p3, 1, 0)
	produce(3)
	replicated()
	waitFor(t, 10*time.Second, func() bool { return s.Size() == n })
	idleIncremental()
	var forgot, readded bool
	for _, r := range rec.take() {
		if r.sessionID != sid || r.epoch <= 0 {
			t.Fatalf("fetch %v left session %d", r, sid)
		}
		forgot = forgot || slices.Equal(r.forgotten, []int32{3})
		readded = readded || slices.Contains(r.parts, 3)
	}
	if !forgot || !readded {
		t.Fatalf("partition 3 forgotten %v, re-added %v", forgot, readded)
	}

	// The leader loses every session (as on a restart or eviction): the follower's next
	// incremental fetch gets FETCH_SESSION_ID_NOT_FOUND, and it starts over with a full fetch.
	cache.Clear()
	produce(1)
	produce(3)
	replicated()
	idleIncremental()
	rs = rec.take()
	i := slices.IndexFunc(rs, func(r recordedFetch) bool { return r.respErr == kerr.FetchSessionIDNotFound.Code })
	if i < 0 || i+1 >= len(rs) {
		t.Fatalf("no FETCH_SESSION_ID_NOT_FOUND then retry: %v", rs)
	}
	if r := rs[i+1]; r.sessionID != 0 || r.epoch != 0 || len(r.parts) != n || r.respSessionID == 0 || r.respSessionID == sid {
		t.Fatalf("after the lost session %v, want a full fetch of %d partitions creating a new session", r, n)
	}
	if cache.Len() != 1 || cache.Get(rs[i+1].respSessionID) == nil {
		t.Fatalf("leader's sessions after recovery: %d", cache.Len())
	}
	st := cache.Stats()
	t.Logf("leader fetch session stats: %+v", st)
	if st.Created != 2 || st.Errors < 1 || st.Incremental < 5 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFollowerDivergenceWithoutProgress: a diverging epoch that leaves the follower where
// it was (no records to cut, same last epoch) is logged at Info once, at Debug after,
// and delays the partition by replica.fetch.backoff.ms instead of fetching again at once.
func TestFollowerDivergenceWithoutProgress(t *testing.T) {
	e := newDataEnv(t)
	p, l, _ := replicatedPartition(t, e, "stuck", []int32{1, 2, 3})
	appendN(t, p, 3) // epoch 0: [0, 3)
	mgr := &ReplicaFetcherManager{rm: e.rm, cfg: FetcherConfig{Backoff: time.Hour}, log: e.log}
	flog := e.log.WithField("component", "replica.fetcher")
	f := &replicaFetcher{m: mgr, log: flog, partitions: map[logstore.TopicPartition]*fetchState{}, session: newFetchSessionHandler(1, flog)}
	st := &fetchState{p: p, fetchOffset: 3, currentLeaderEpoch: 0, lastFetchedEpoch: 0}
	f.partitions[p.tp] = st
	// The leader says epoch 0 ends at 5: our epoch 0 ends at 3 = our LEO; nothing to cut.
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = 0, 5

	countLevel := func(level string) int {
		e.logW.mu.Lock()
		defer e.logW.mu.Unlock()
		c := 0
		for _, line := range e.logW.lines {
			if strings.Contains(line, "leader reported a diverging epoch") && strings.Contains(line, "level="+level) {
				c++
			}
		}
		return c
	}
	for round := 0; round < 3; round++ {
		f.mu.Lock()
		cur := f.partitions[p.tp]
		f.processPartitionLocked(cur, &rp)
		next := f.partitions[p.tp]
		f.mu.Unlock()
		if next.fetchOffset != 3 || next.truncating || l.LogEndOffset() != 3 {
			t.Fatalf("round %d: state %+v, LEO %d", round, next, l.LogEndOffset())
		}
		if time.Until(next.delayUntil) < 30*time.Minute {
			t.Fatalf("round %d: no progress but not delayed (until %v)", round, next.delayUntil)
		}
	}
	if i, d := countLevel("info"), countLevel("debug"); i != 1 || d != 2 {
		t.Fatalf("diverging epoch logged %d times at Info and %d at Debug, want 1 and 2", i, d)
	}
	// A different divergence is news again.
	rp.DivergingEpoch.EndOffset = 6
	f.mu.Lock()
	f.processPartitionLocked(f.partitions[p.tp], &rp)
	f.mu.Unlock()
	if i := countLevel("info"); i != 2 {
		t.Fatalf("a new divergence logged %d times at Info, want 2", i)
	}
	// A delayed partition is not fetched: doWork waits instead of spinning.
	if d := f.doWork(); d < 30*time.Minute {
		t.Fatalf("doWork wants to run again in %v", d)
	}
}
