package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func encodeFrame(req kmsg.Request, corr int32) []byte {
	return appendRequestFrame(nil, req, corr, "conn-test")
}

func TestParseRequest(t *testing.T) {
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(9) // flexible: header v2
	metaFrame := encodeFrame(meta, 7)[4:]

	// A flexible header carrying an unknown tagged field must be skipped (KIP-482).
	tagged := append([]byte{}, metaFrame[:8]...)
	tagged = kbin.AppendNullableString(tagged, kmsg.StringPtr("conn-test"))
	tagged = append(tagged, 1, 5, 2, 0xaa, 0xbb) // one tag: id 5, 2 bytes
	tagged = append(tagged, meta.AppendTo(nil)...)

	// key 52 (Vote) is known to kmsg but not served by a ZK broker.
	vote := make([]byte, 8)
	binary.BigEndian.PutUint16(vote, 52)

	tests := []struct {
		name    string
		body    []byte
		wantErr error
		wantHV  int16
	}{
		{name: "flexible metadata", body: metaFrame, wantHV: 2},
		{name: "unknown header tag skipped", body: tagged, wantHV: 2},
		{name: "3-byte body", body: []byte{0, 3, 0}, wantErr: errMalformed},
		{name: "empty body", body: nil, wantErr: errMalformed},
		{name: "unknown key 999", body: []byte{0x03, 0xe7, 0, 0, 0, 0, 0, 1}, wantErr: errUnknownAPIKey},
		{name: "negative key", body: []byte{0xff, 0xff, 0, 0, 0, 0, 0, 1}, wantErr: errUnknownAPIKey},
		{name: "unserved key 52", body: vote, wantErr: errUnknownAPIKey},
		{name: "metadata v13", body: []byte{0, 3, 0, 13, 0, 0, 0, 1, 0xff, 0xff}, wantErr: errUnsupportedVer},
		{name: "fetch v17 above max", body: []byte{0, 1, 0, 17, 0, 0, 0, 1, 0xff, 0xff}, wantErr: errUnsupportedVer},
		{name: "client id longer than body", body: []byte{0, 18, 0, 0, 0, 0, 0, 1, 0, 10, 'a'}, wantErr: errMalformed},
		{name: "truncated body", body: metaFrame[:len(metaFrame)-1], wantErr: errMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, req, err := parseRequest(tt.body)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.headerVersion != tt.wantHV || h.correlationID != 7 || req.Key() != 3 || clientIDString(h.clientID) != "conn-test" {
				t.Fatalf("header %+v key %d", h, req.Key())
			}
		})
	}
}

func TestAppendResponseHeaderVersions(t *testing.T) {
	for _, tt := range []struct {
		resp    kmsg.Response
		version int16
		tagByte bool
	}{
		{kmsg.NewPtrMetadataResponse(), 8, false},
		{kmsg.NewPtrMetadataResponse(), 9, true},
		{kmsg.NewPtrApiVersionsResponse(), 3, false}, // ApiVersions: header v0 even when flexible
		{kmsg.NewPtrProduceResponse(), 9, true},
	} {
		tt.resp.SetVersion(tt.version)
		frame := appendResponse([]byte("junk"), 42, tt.resp)[4:]
		body := tt.resp.AppendTo(nil)
		want := 8 + len(body)
		if tt.tagByte {
			want++
		}
		if len(frame) != want || int(binary.BigEndian.Uint32(frame)) != want-4 || binary.BigEndian.Uint32(frame[4:]) != 42 {
			t.Errorf("%s v%d: frame %x", kmsg.NameForKey(tt.resp.Key()), tt.version, frame)
		}
		if tt.tagByte && frame[8] != 0 {
			t.Errorf("%s v%d: missing empty tag section", kmsg.NameForKey(tt.resp.Key()), tt.version)
		}
	}
}

// testClient is a raw Kafka protocol client for socket tests.
type testClient struct {
	t *testing.T
	c net.Conn
}

func dialTest(t *testing.T, addr string) *testClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{t: t, c: c}
}

func (tc *testClient) write(b []byte) {
	tc.t.Helper()
	tc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.c.Write(b); err != nil {
		tc.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame (without the size prefix).
func (tc *testClient) readFrame() ([]byte, error) {
	tc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(tc.c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(tc.c, b)
	return b, err
}

// expectClosed asserts the server closed the connection without answering.
func (tc *testClient) expectClosed() {
	tc.t.Helper()
	b, err := tc.readFrame()
	if err == nil {
		tc.t.Fatalf("got a %d-byte response, want a closed connection", len(b))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		tc.t.Fatalf("connection still open: %v", err)
	}
}

func (tc *testClient) request(req kmsg.Request, corr int32) kmsg.Response {
	tc.t.Helper()
	tc.write(encodeFrame(req, corr))
	b, err := tc.readFrame()
	if err != nil {
		tc.t.Fatalf("read response: %v", err)
	}
	return decodeResponseFrame(tc.t, append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...), req.Key(), req.GetVersion(), corr)
}

// checkServing asserts that another client is still served.
func checkServing(t *testing.T, addr string) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "probe", "1"
	resp := dialTest(t, addr).request(req, 99).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("probe: %+v", resp)
	}
}

func sizePrefix(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

func TestSocketServerBadInput(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.SocketRequestMaxBytes = 1 << 20
	e.serve()

	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	metaFrame := encodeFrame(meta, 5)
	truncated := append(sizePrefix(int32(len(metaFrame)-4-2)), metaFrame[4:len(metaFrame)-2]...)

	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 512)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}

	tests := []struct {
		name      string
		send      []byte
		closeSend bool     // half-close after sending (the frame is incomplete)
		logWant   []string // substrings of one log line
	}{
		{name: "random bytes", send: random, closeSend: true},
		{name: "size 2^31-1", send: sizePrefix(math.MaxInt32), logWant: []string{"invalid request size", "2147483647"}},
		{name: "negative size", send: sizePrefix(-5), logWant: []string{"invalid request size", "-5"}},
		{name: "3-byte body", send: append(sizePrefix(3), 0, 3, 0), logWant: []string{"malformed request", "3-byte"}},
		{name: "unknown api key", send: append(sizePrefix(10), 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff), logWant: []string{"unknown API key 32512"}},
		{name: "unsupported version", send: append(sizePrefix(10), 0, 3, 0, 99, 0, 0, 0, 1, 0xff, 0xff), logWant: []string{"unsupported API version", "Metadata v99"}},
		{name: "truncated request", send: truncated, logWant: []string{"malformed request", "Metadata v12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := dialTest(t, e.addr)
			tc.write(tt.send)
			if tt.closeSend {
				tc.c.(*net.TCPConn).CloseWrite()
			}
			tc.expectClosed()
			if len(tt.logWant) > 0 && !e.logW.contains(append([]string{"closing connection: bad request"}, tt.logWant...)...) {
				t.Errorf("no log line with %q", tt.logWant)
			}
			checkServing(t, e.addr)
		})
	}
	if e.logW.contains("level=error") {
		t.Errorf("bad client input was logged at error level")
	}
}

func TestSocketServerApiVersionsUnsupportedVersion(t *testing.T) {
	e := newDataEnv(t)
	e.serve()
	tc := dialTest(t, e.addr)
	// ApiVersions v4 (kmsg knows it, 3.7 does not): a v0 body with UNSUPPORTED_VERSION.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "x", "1"
	tc.write(encodeFrame(req, 77))
	b, err := tc.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	frame := append(sizePrefix(int32(len(b))), b...)
	resp := decodeResponseFrame(t, frame, 18, 0, 77).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 3 {
		t.Fatalf("response %+v", resp)
	}
	// The connection stays usable: the client retries with v3.
	req.SetVersion(3)
	if r := tc.request(req, 78).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("v3 retry: %+v", r)
	}
	// Invalid software name (v3): INVALID_REQUEST.
	req.ClientSoftwareName = "-bad name"
	if r := tc.request(req, 79).(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("bad software name: error %d", r.ErrorCode)
	}
}

func TestSocketServerPipelinedInOrderAndAcks0(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("p", 1)
	e.serve()
	tc := dialTest(t, e.addr)

	// Pipeline: metadata, acks=0 produce (no response), fetch with max wait, metadata.
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	prod := kmsg.NewPtrProduceRequest()
	prod.SetVersion(9)
	prod.Acks = 0
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "p"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = valuesBatch(2, 5)
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis, fetch.MinBytes = 2000, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "p"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	var all []byte
	all = append(all, encodeFrame(meta, 1)...)
	all = append(all, encodeFrame(prod, 2)...)
	all = append(all, encodeFrame(fetch, 3)...)
	all = append(all, encodeFrame(meta, 4)...)
	tc.write(all)
	for _, want := range []int32{1, 3, 4} {
		b, err := tc.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		if got := int32(binary.BigEndian.Uint32(b)); got != want {
			t.Fatalf("correlation id %d, want %d", got, want)
		}
		if want == 3 {
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(11)
			if err := resp.ReadFrom(b[4:]); err != nil {
				t.Fatal(err)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.HighWatermark != 2 || len(p.RecordBatches) == 0 {
				t.Fatalf("fetch after acks=0 produce: %+v", p)
			}
		}
	}

	// acks=0 produce to an unknown topic: Kafka closes the connection instead of answering.
	prod.Topics[0].Topic = "nope"
	tc.write(encodeFrame(prod, 5))
	tc.expectClosed()
}

func TestSocketServerCloseWaitsForConnections(t *testing.T) {
	e := newDataEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSocketServer(l, "PLAINTEXT", e.apis, 1<<20, e.log)
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	e.createTopic("w", 1)
	tc := dialTest(t, l.Addr().String())
	// A fetch parked in purgatory for a long time...
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.MaxWaitMillis, fetch.MinBytes = 60000, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "w"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	tc.write(encodeFrame(fetch, 1))
	time.Sleep(50 * time.Millisecond) // let it park; Close must not wait for max wait
	start := time.Now()
	s.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	_, _ = tc.readFrame() // the parked fetch may be answered or the connection closed; either is fine
}

func TestReadBodyGrowsLargeFrames(t *testing.T) {
	// A client announcing more than 1 MiB and sending less gets an error, not a full allocation.
	_, err := readBody(bytes.NewReader(make([]byte, 10)), 50<<20, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v", err)
	}
	want := make([]byte, 3<<20+5)
	for i := range want {
		want[i] = byte(i * 7)
	}
	b, err := readBody(bytes.NewReader(want), int32(len(want)), nil)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("len %d err %v, or the bytes differ", len(b), err)
	}
	if cap(b) != 4<<20 {
		t.Fatalf("cap %d, want the 4 MiB class so it can be pooled", cap(b))
	}
}

func TestReadBodyReusesLargeFrames(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	// sync.Pool keeps a Put in the putting P's private slot: a goroutine moved to another P
	// in between, or a GC, misses it. So look for reuse over a few attempts.
	src := bytes.Repeat([]byte{1}, 3<<20+100)
	reused := false
	for attempt := 0; attempt < 10 && !reused; attempt++ {
		first, err := readBody(bytes.NewReader(src), int32(len(src)), nil)
		if err != nil {
			t.Fatal(err)
		}
		putLargeFrame(first)
		src[0]++
		second, err := readBody(bytes.NewReader(src), int32(len(src)), nil)
		if err != nil || !bytes.Equal(second, src) {
			t.Fatalf("err %v, or the bytes differ", err)
		}
		reused = &first[0] == &second[0]
		putLargeFrame(second)
	}
	if !reused {
		t.Fatal("a large frame of the same class never reused the pooled buffer")
	}
	src2 := src
	allocs := testing.AllocsPerRun(20, func() {
		b, err := readBody(bytes.NewReader(src2), int32(len(src2)), nil)
		if err != nil {
			t.Fatal(err)
		}
		putLargeFrame(b)
	})
	if allocs > 3 { // the reader and the pool's pointer; a rare pool miss adds a few
		t.Fatalf("%.1f allocations per large frame", allocs)
	}
}

func TestSocketServerClosesIdleConnections(t *testing.T) {
	e := newDataEnv(t)
	e.serve(func(s *SocketServer) { s.ConnectionsMaxIdle = 200 * time.Millisecond })
	tc := dialTest(t, e.addr)
	checkServing(t, e.addr)
	start := time.Now()
	tc.expectClosed()
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Fatalf("idle connection closed after %v", d)
	}
	if !e.logW.contains("closing idle connection") {
		t.Error("no log line for the idle close")
	}
}

// panicOnMetadata is a Handler with a bug: it panics on Metadata.
type panicOnMetadata struct{ next Handler }

func (p panicOnMetadata) Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	if req.Key() == 3 {
		panic("boom")
	}
	return p.next.Handle(ctx, rc, req)
}

func TestSocketServerSurvivesHandlerPanic(t *testing.T) {
	e := newDataEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSocketServer(l, "PLAINTEXT", panicOnMetadata{e.apis}, 1<<20, e.log)
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	defer func() { s.Close(); <-done }()

	tc := dialTest(t, l.Addr().String())
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	tc.write(encodeFrame(meta, 1))
	tc.expectClosed()
	if !e.logW.contains("request handler panicked", "boom") {
		t.Error("no log line for the panic")
	}
	checkServing(t, l.Addr().String())
}
