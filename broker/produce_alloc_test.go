package broker

// produce_alloc_test.go: the produce path from wire bytes to response bytes, in process,
// for counting allocations per request (BenchmarkProducePath, TestProduceAllocsBounded).

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// produceShape is one request shape of the produce benchmarks.
type produceShape struct {
	partitions int32 // one batch per partition
	records    int   // records per batch
	acks       int16
}

func (s produceShape) String() string {
	return fmt.Sprintf("p%d-r%d-acks%d", s.partitions, s.records, s.acks)
}

// produceWire drives one produce frame through what serveConn does per request: the body
// lands in the connection's reused read buffer, parseRequest decodes it, the dispatcher
// handles it (append to the real log), and the response is encoded into a pooled buffer.
type produceWire struct {
	e     *dataEnv
	s     *SocketServer
	topic string
	frame []byte // size-prefixed request frame; never modified
	buf   []byte // the connection's read buffer (serveConn's reuse)
	addr  net.Addr
	cid   *string // serveConn's lastCID
}

func newProduceWire(tb testing.TB, e *dataEnv, shape produceShape) *produceWire {
	tb.Helper()
	topic := fmt.Sprintf("alloc-%d", len(e.topics))
	e.createTopic(topic, shape.partitions)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = shape.acks, 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	for p := int32(0); p < shape.partitions; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, valuesBatch(shape.records, 16)
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	frame := appendRequestFrame(nil, req, 1, "alloc-test")
	w := &produceWire{e: e, topic: topic, s: &SocketServer{h: e.apis, listenerName: "PLAINTEXT"}, frame: frame,
		buf: make([]byte, 0, len(frame)), addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}}
	return w
}

// roundTrip handles the frame once and returns the response frame size (0 for acks=0).
// Every step is one serveConn takes; copying the frame into buf stands for the socket read
// (the request's batch is rewritten in place, so each request needs fresh bytes, as it has
// on a real connection).
func (w *produceWire) roundTrip(ctx context.Context) (int, error) {
	body := w.buf[:len(w.frame)-4]
	copy(body, w.frame[4:])
	h, req, err := parseRequestReusing(body, w.cid)
	if err != nil {
		return 0, err
	}
	w.cid = h.clientID
	rc := &RequestContext{
		ClientID:      clientIDString(h.clientID),
		CorrelationID: h.correlationID,
		APIKey:        h.key,
		APIVersion:    h.version,
		HeaderVersion: h.headerVersion,
		RemoteAddr:    w.addr,
		ListenerName:  w.s.listenerName,
		Received:      time.Now(),
		Log:           w.e.log,
	}
	resp, err := w.s.handle(ctx, rc, req)
	if err != nil || resp == nil {
		return 0, err
	}
	if p := resp.(*kmsg.ProduceResponse); p.Topics[0].Partitions[0].ErrorCode != 0 {
		return 0, fmt.Errorf("produce: error code %d", p.Topics[0].Partitions[0].ErrorCode)
	}
	rb := getResponseBuffer()
	*rb = appendResponse((*rb)[:0], h.correlationID, resp)
	n := len(*rb)
	putResponseBuffer(rb)
	return n, nil
}

// logEnd is the partition 0 log end offset, to check that acks=0 requests were appended.
func (w *produceWire) logEnd(tb testing.TB) int64 {
	tb.Helper()
	l, ok := w.e.logs.GetLog(logstore.TopicPartition{Topic: w.topic, Partition: 0})
	if !ok {
		tb.Fatalf("no log for %s-0", w.topic)
	}
	return l.LogEndOffset()
}

// TestProduceAllocsBounded: allocations per produce request are a small constant that
// does not grow with the records in a batch, for every acks; B/op stays far below the batch
// size, so the batch is not copied on the way to the log. A per-record allocation anywhere
// on the path (decode, validation, append, response) fails it.
func TestProduceAllocsBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector are not the program's")
	}
	const (
		runs = 300
		// maxAllocs bounds one request of any shape below: decode (request, its topic and
		// partition arrays, topic name), the RequestContext, the response and its two
		// arrays, the append's result lists, and for acks=-1 the purgatory waiter.
		maxAllocs = 14
	)
	e := newDataEnv(t)
	ctx := context.Background()
	measure := func(shape produceShape) (allocs, bytes float64, batch int) {
		t.Helper()
		w := newProduceWire(t, e, shape)
		var failed error
		round := func() {
			if _, err := w.roundTrip(ctx); err != nil && failed == nil {
				failed = err
			}
		}
		round() // warm up: segment, pools
		start := w.logEnd(t)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		allocs = testing.AllocsPerRun(runs, round)
		runtime.ReadMemStats(&after)
		if failed != nil {
			t.Fatalf("%s: %v", shape, failed)
		}
		// AllocsPerRun calls round runs+1 times.
		if got, want := w.logEnd(t)-start, int64((runs+1)*shape.records); got != want {
			t.Fatalf("%s: appended %d records, want %d", shape, got, want)
		}
		bytes = float64(after.TotalAlloc-before.TotalAlloc) / (runs + 1)
		return allocs, bytes, len(w.frame)
	}
	for _, acks := range []int16{1, 0, -1} {
		t.Run(fmt.Sprintf("acks=%d", acks), func(t *testing.T) {
			few, _, _ := measure(produceShape{1, 10, acks})
			many, manyBytes, frame := measure(produceShape{1, 1000, acks})
			parts, _, _ := measure(produceShape{6, 10, acks})
			t.Logf("allocs/request: 10 records %.0f, 1000 records %.0f (%.0f B for a %d-byte request), 6 partitions %.0f",
				few, many, manyBytes, frame, parts)
			if many > few {
				t.Errorf("allocs per request grow with records per batch: %.0f for 10 records, %.0f for 1000", few, many)
			}
			for _, a := range []float64{few, many, parts} {
				if a > maxAllocs {
					t.Errorf("%.0f allocs per request, want at most %d", a, maxAllocs)
				}
			}
			if manyBytes > float64(frame)/4 {
				t.Errorf("%.0f bytes allocated per %d-byte request: the batch is copied", manyBytes, frame)
			}
		})
	}
}

// TestProduceWritesRequestBuffer: the bytes the log writes to the segment file are the
// request's own batch bytes in the connection's read buffer, offsets assigned in place:
// the one copy is the write into the kernel.
func TestProduceWritesRequestBuffer(t *testing.T) {
	fsys := &writeRecordingFS{}
	e := newDataEnv(t)
	logs, err := logstore.OpenManager(logstore.ManagerConfig{Dirs: []string{t.TempDir()}, BrokerID: testBrokerID, Log: e.log, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := logs.Shutdown(); err != nil {
			t.Errorf("log manager shutdown: %v", err)
		}
	})
	e.logs = logs
	e.rm = NewReplicaManager(ReplicaManagerConfig{BrokerID: testBrokerID, Config: e.cfg, Logs: logs, Metadata: e.mc, Log: e.log})
	e.apis = NewAPIs(e.cfg, testBrokerID, "test-cluster-id", e.rm, e.mc, e.log)
	e.updateMetadata()

	for _, acks := range []int16{1, 0, -1} {
		w := newProduceWire(t, e, produceShape{1, 100, acks})
		// Where the batch lies in the frame body: decode the frame itself (records alias it).
		_, req, err := parseRequest(w.frame[4:])
		if err != nil {
			t.Fatal(err)
		}
		recs := req.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records
		recordsAt := int(uintptr(unsafe.Pointer(unsafe.SliceData(recs))) - uintptr(unsafe.Pointer(unsafe.SliceData(w.frame[4:]))))
		for i := 0; i < 3; i++ {
			fsys.reset()
			if _, err := w.roundTrip(context.Background()); err != nil {
				t.Fatal(err)
			}
			writes := fsys.logWrites()
			if len(writes) != 1 {
				t.Fatalf("acks=%d: %d writes to .log files, want 1", acks, len(writes))
			}
			batch := w.buf[recordsAt : recordsAt+len(writes[0])]
			if unsafe.SliceData(writes[0]) != unsafe.SliceData(batch) {
				t.Fatalf("acks=%d: the segment write is not the request buffer's batch (written from %p, batch at %p)",
					acks, unsafe.SliceData(writes[0]), unsafe.SliceData(batch))
			}
			b := recordbatch.Batch(batch)
			if got, want := b.BaseOffset(), int64(i*100); got != want {
				t.Fatalf("acks=%d: base offset in the request buffer is %d, want %d (assigned in place)", acks, got, want)
			}
			if !b.ValidCRC() {
				t.Fatalf("acks=%d: CRC of the rewritten batch does not match", acks)
			}
		}
	}
}

// writeRecordingFS remembers the slices handed to WriteAt on segment (.log) files.
type writeRecordingFS struct {
	logstore.OSFS
	mu     sync.Mutex
	writes [][]byte
}

func (f *writeRecordingFS) OpenFile(name string, flag int, perm fs.FileMode) (logstore.File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return &writeRecordingFile{File: file, fs: f}, nil
}

func (f *writeRecordingFS) reset() {
	f.mu.Lock()
	f.writes = nil
	f.mu.Unlock()
}

func (f *writeRecordingFS) logWrites() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.writes...)
}

type writeRecordingFile struct {
	logstore.File
	fs *writeRecordingFS
}

func (f *writeRecordingFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes = append(f.fs.writes, p)
	f.fs.mu.Unlock()
	return f.File.WriteAt(p, off)
}

func (f *writeRecordingFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes = append(f.fs.writes, p)
	f.fs.mu.Unlock()
	return f.File.Write(p)
}
