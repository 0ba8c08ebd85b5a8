package broker

// dataenv_test.go: a broker data path without ZooKeeper for the data-path tests: a real
// logstore.Manager in a temp dir, a metadata cache and ReplicaManager fed with synthetic
// UpdateMetadata and LeaderAndIsr requests, and optionally a SocketServer on loopback.

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

// testLogWriter sends log lines to t.Log and keeps them for assertions.
type testLogWriter struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
	done  bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(p))
	// Benchmarks always print what they log; keep their output to the results.
	if _, bench := w.t.(*testing.B); !w.done && !bench {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// contains reports whether some log line contains every substring.
func (w *testLogWriter) contains(subs ...string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
next:
	for _, l := range w.lines {
		for _, s := range subs {
			if !strings.Contains(l, s) {
				continue next
			}
		}
		return true
	}
	return false
}

func newTestLogger(t testing.TB) (*logrus.Entry, *testLogWriter) {
	w := &testLogWriter{t: t}
	l := logrus.New()
	l.SetOutput(w)
	l.SetLevel(logrus.DebugLevel)
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return logrus.NewEntry(l), w
}

const testBrokerID = 1

type dataEnv struct {
	t       testing.TB
	cfg     *config.Config
	logs    *logstore.Manager
	mc      *MetadataCache
	rm      *ReplicaManager
	apis    *APIs
	log     *logrus.Entry
	logW    *testLogWriter
	ctrlEp  int32
	topics  map[string][16]byte
	parts   map[string]int32
	epochs  map[logstore.TopicPartition]int32
	addr    string // SocketServer address once serve() ran
	created []string
}

func newDataEnv(t testing.TB) *dataEnv {
	t.Helper()
	log, w := newTestLogger(t)
	cfg := &config.Config{
		BrokerID:               testBrokerID,
		AutoCreateTopicsEnable: true,
		NumPartitions:          1,
		SocketRequestMaxBytes:  100 << 20,
		MinInSyncReplicas:      1,
		ReplicaLagTimeMax:      30 * time.Second,
		Props:                  map[string]string{},
	}
	logs, err := logstore.OpenManager(logstore.ManagerConfig{Dirs: []string{t.TempDir()}, BrokerID: testBrokerID, Log: log})
	if err != nil {
		t.Fatalf("open log manager: %v", err)
	}
	t.Cleanup(func() {
		if err := logs.Shutdown(); err != nil {
			t.Errorf("log manager shutdown: %v", err)
		}
	})
	mc := NewMetadataCache(testBrokerID)
	rm := NewReplicaManager(ReplicaManagerConfig{BrokerID: testBrokerID, Config: cfg, Logs: logs, Metadata: mc, Log: log})
	e := &dataEnv{t: t, cfg: cfg, logs: logs, mc: mc, rm: rm, log: log, logW: w, ctrlEp: 1,
		topics: map[string][16]byte{}, parts: map[string]int32{}, epochs: map[logstore.TopicPartition]int32{}}
	e.apis = NewAPIs(cfg, testBrokerID, "test-cluster-id", rm, mc, log)
	e.apis.AutoCreateTopic = func(ctx context.Context, topic string) error {
		e.created = append(e.created, topic)
		return nil
	}
	e.updateMetadata()
	return e
}

// createTopic makes this broker the leader of every partition of a new topic, as the
// controller would: LeaderAndIsr, then UpdateMetadata.
func (e *dataEnv) createTopic(name string, partitions int32) {
	e.t.Helper()
	id := [16]byte{byte(len(e.topics) + 1), 0xab}
	e.topics[name] = id
	e.parts[name] = partitions
	e.leaderAndIsr(name, testBrokerID, []int32{testBrokerID})
}

// leaderAndIsr sends a LeaderAndIsr for every partition of name with a new leader epoch.
func (e *dataEnv) leaderAndIsr(name string, leader int32, replicas []int32) {
	e.t.Helper()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 7
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = name, e.topics[name]
	for p := int32(0); p < e.parts[name]; p++ {
		tp := logstore.TopicPartition{Topic: name, Partition: p}
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Partition, ps.ControllerEpoch, ps.Leader = p, e.ctrlEp, leader
		ps.LeaderEpoch = e.epochs[tp]
		e.epochs[tp]++
		ps.ISR, ps.Replicas, ps.ZKVersion, ps.IsNew = replicas, replicas, 0, true
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	resp := e.rm.BecomeLeaderOrFollower(req)
	if resp.ErrorCode != 0 {
		e.t.Fatalf("LeaderAndIsr: error %d", resp.ErrorCode)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				e.t.Fatalf("LeaderAndIsr %s-%d: error %d", name, p.Partition, p.ErrorCode)
			}
		}
	}
	e.updateMetadataWithLeader(name, leader, replicas)
}

func (e *dataEnv) updateMetadataWithLeader(name string, leader int32, replicas []int32) {
	e.updateMetadataReq(func(req *kmsg.UpdateMetadataRequest) {
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = name, e.topics[name]
		for p := int32(0); p < e.parts[name]; p++ {
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Topic, ps.Partition, ps.ControllerEpoch, ps.Leader = name, p, e.ctrlEp, leader
			ps.LeaderEpoch = e.epochs[logstore.TopicPartition{Topic: name, Partition: p}] - 1
			ps.ISR, ps.Replicas = replicas, replicas
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		req.TopicStates = append(req.TopicStates, ts)
	})
}

func (e *dataEnv) updateMetadata() { e.updateMetadataReq(func(*kmsg.UpdateMetadataRequest) {}) }

// updateMetadataReq sends an UpdateMetadata with this broker alive at e.addr (or a
// placeholder before serve()).
func (e *dataEnv) updateMetadataReq(fill func(*kmsg.UpdateMetadataRequest)) {
	e.t.Helper()
	host, port := "127.0.0.1", int32(9092)
	if e.addr != "" {
		ta := mustTCPAddr(e.t, e.addr)
		host, port = ta.IP.String(), int32(ta.Port)
	}
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = 8
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID = testBrokerID
	ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
	ep.Host, ep.Port, ep.ListenerName, ep.SecurityProtocol = host, port, "PLAINTEXT", 0
	lb.Endpoints = append(lb.Endpoints, ep)
	req.LiveBrokers = append(req.LiveBrokers, lb)
	fill(req)
	if _, err := e.rm.MaybeUpdateMetadataCache(req); err != nil {
		e.t.Fatalf("UpdateMetadata: %v", err)
	}
}

func mustTCPAddr(t testing.TB, addr string) *net.TCPAddr {
	t.Helper()
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ta
}

// serve starts a SocketServer on loopback and re-announces this broker at its address.
func (e *dataEnv) serve(opts ...func(*SocketServer)) *SocketServer {
	e.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	s := NewSocketServer(l, "PLAINTEXT", e.apis, e.cfg.SocketRequestMaxBytes, e.log)
	for _, o := range opts {
		o(s)
	}
	e.addr = l.Addr().String()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	e.t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			e.t.Errorf("Serve: %v", err)
		}
	})
	e.updateMetadata()
	for name := range e.topics {
		e.updateMetadataWithLeader(name, testBrokerID, []int32{testBrokerID})
	}
	return s
}

// handle runs req through the dispatcher as the SocketServer would.
func (e *dataEnv) handle(req kmsg.Request) (kmsg.Response, error) {
	rc := &RequestContext{ClientID: "test", APIKey: req.Key(), APIVersion: req.GetVersion(), ListenerName: "PLAINTEXT",
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, Received: time.Now(), Log: e.log}
	return e.apis.Handle(context.Background(), rc, req)
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

type testRecord struct {
	key, value []byte
	headers    []kmsg.Header
	tsDelta    int64
}

// makeBatch builds a v2 record batch as a producer sends it (offset 0, no compression).
func makeBatch(firstTimestamp int64, recs ...testRecord) []byte {
	var body []byte
	for i, r := range recs {
		var rb []byte
		rb = append(rb, 0) // attributes
		rb = kbin.AppendVarlong(rb, r.tsDelta)
		rb = kbin.AppendVarint(rb, int32(i))
		if r.key == nil {
			rb = kbin.AppendVarint(rb, -1)
		} else {
			rb = kbin.AppendVarint(rb, int32(len(r.key)))
			rb = append(rb, r.key...)
		}
		rb = kbin.AppendVarint(rb, int32(len(r.value)))
		rb = append(rb, r.value...)
		rb = kbin.AppendVarint(rb, int32(len(r.headers)))
		for _, h := range r.headers {
			rb = kbin.AppendVarint(rb, int32(len(h.Key)))
			rb = append(rb, h.Key...)
			rb = kbin.AppendVarint(rb, int32(len(h.Value)))
			rb = append(rb, h.Value...)
		}
		body = kbin.AppendVarint(body, int32(len(rb)))
		body = append(body, rb...)
	}
	maxTS := firstTimestamp
	for _, r := range recs {
		maxTS = max(maxTS, firstTimestamp+r.tsDelta)
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: firstTimestamp, MaxTimestamp: maxTS, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: body,
	}
	b.Length = int32(49 + len(body))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32c))
	return out
}

func valuesBatch(n int, size int) []byte {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{key: []byte{byte(i)}, value: make([]byte, size)}
	}
	return makeBatch(time.Now().UnixMilli(), recs...)
}
