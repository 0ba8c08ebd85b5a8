package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestDecode feeds arbitrary frame bodies to the SocketServer's decoder. It must
// never panic; whatever it accepts must re-encode to a body that decodes to the same
// request (so no field is misread), and the header must match the bytes it came from.
// Seeds: testdata/fuzz/FuzzRequestDecode (regenerate with SAMSA_WRITE_FUZZ_SEEDS=1
// go test -run TestWriteFuzzSeeds ./broker) plus one valid request per served key/version.
func FuzzRequestDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, req, err := parseRequest(body)
		if err != nil {
			if req != nil {
				t.Fatalf("request returned with error %v", err)
			}
			return
		}
		if req.Key() != h.key || req.GetVersion() != h.version {
			t.Fatalf("header %+v, request key %d v%d", h, req.Key(), req.GetVersion())
		}
		minV, maxV, ok := SupportedVersions(h.key)
		if !ok || h.version < minV || h.version > maxV {
			t.Fatalf("accepted unserved %d v%d", h.key, h.version)
		}
		// Canonical re-encoding is stable: encode(decode(encode(req))) == encode(req).
		enc := req.AppendTo(nil)
		again := kmsg.RequestForKey(h.key)
		again.SetVersion(h.version)
		if err := again.ReadFrom(enc); err != nil {
			t.Fatalf("re-decode of canonical encoding failed: %v", err)
		}
		if !bytes.Equal(again.AppendTo(nil), enc) {
			t.Fatalf("re-encoding is not stable for %s v%d", kmsg.NameForKey(h.key), h.version)
		}
	})
}

// fuzzSeeds returns one valid frame body per served (key, version), built with the table
// test's builders where they exist, plus a few malformed bodies.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, k := range supportedAPIs() {
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := kmsg.RequestForKey(k.ApiKey)
			req.SetVersion(v)
			frame := appendRequestFrame(nil, req, int32(v), "fuzz")
			seeds = append(seeds, frame[4:])
		}
	}
	seeds = append(seeds,
		nil,
		[]byte{0, 3, 0},
		[]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 0, 0},
		[]byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 4, 'f', 'u', 'z', 'z', 0},
		[]byte{0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x3a, 0x98, 0xff, 0xff, 0xff, 0xff, 0x0f},
	)
	return seeds
}

// TestWriteFuzzSeeds writes the committed corpora of FuzzRequestDecode and
// FuzzRequestHandle; it does nothing unless asked. SAMSA_WRITE_FUZZ_SEEDS=1 writes every
// key's seeds; a comma-separated list of API keys (SAMSA_WRITE_FUZZ_SEEDS=24,25) writes
// only those keys'.
func TestWriteFuzzSeeds(t *testing.T) {
	which := os.Getenv("SAMSA_WRITE_FUZZ_SEEDS")
	if which == "" {
		t.Log("set SAMSA_WRITE_FUZZ_SEEDS=1 (or a list of API keys) to rewrite testdata/fuzz/FuzzRequest{Decode,Handle}")
		return
	}
	var only map[int16]bool
	if which != "1" {
		only = map[int16]bool{}
		for _, k := range strings.Split(which, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(k), 10, 16)
			if err != nil {
				t.Fatalf("SAMSA_WRITE_FUZZ_SEEDS: %v", err)
			}
			only[int16(n)] = true
		}
	}
	dirs := []string{filepath.Join("testdata", "fuzz", "FuzzRequestDecode"), filepath.Join("testdata", "fuzz", "FuzzRequestHandle")}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := newDataEnv(t)
	e.createTopic("rt", 2)
	write := func(name string, body []byte) {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", body)
		for _, dir := range dirs {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	keys := make([]int16, 0, len(requestBuilders))
	for key := range requestBuilders {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		minV, maxV, ok := SupportedVersions(key)
		if !ok || (only != nil && !only[key]) {
			continue
		}
		for v := minV; v <= maxV; v++ {
			req := requestBuilders[key].build(e, v)
			req.SetVersion(v)
			frame := appendRequestFrame(nil, req, 1, "seed")
			write(fmt.Sprintf("%s-v%d", kmsg.NameForKey(key), v), frame[4:])
			if extra := txnSeedRequest(e, key, v); extra != nil {
				extra.SetVersion(v)
				frame := appendRequestFrame(nil, extra, 1, "seed")
				write(fmt.Sprintf("%s-txn-v%d", kmsg.NameForKey(key), v), frame[4:])
			}
		}
	}
	if only == nil {
		for i, s := range fuzzSeeds()[len(fuzzSeeds())-5:] {
			write(fmt.Sprintf("malformed-%d", i), s)
		}
	}
}

// txnSeedRequest is a second seed for the keys whose transactional form differs from the
// builder's: FindCoordinator for a transactional id (key type 1) and InitProducerId with a
// transactional id. nil for other keys.
func txnSeedRequest(e *dataEnv, key, v int16) kmsg.Request {
	switch key {
	case 10:
		if v < 1 {
			return nil // key type arrived in v1
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		if v >= 4 {
			req.CoordinatorKeys = []string{"txn-a", "txn-b"}
		} else {
			req.CoordinatorKey = "txn-a"
		}
		return req
	case 22:
		txnReady(e)
		id := fmt.Sprintf("seed-init-%d", v)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		if v >= 3 { // KIP-360: an existing producer bumping its epoch
			pid, epoch := txnInit(e, id)
			req.ProducerID, req.ProducerEpoch = pid, epoch
		}
		return req
	}
	return nil
}

// FuzzRequestHandle sends whatever decodes to the real handlers (a data env with a topic,
// no ZooKeeper): no input may panic a handler or make it return a response of another
// key or version. Requests are cut short after 100 ms (fetch max wait, acks=all).
func FuzzRequestHandle(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	e := newDataEnv(f)
	e.createTopic("rt", 2)
	// The coordinators are up, so the group and transaction keys reach their state
	// machines rather than stopping at COORDINATOR_NOT_AVAILABLE.
	groupsReady(e)
	txnReady(e)
	e.log.Logger.SetLevel(logrus.PanicLevel)
	f.Fuzz(func(t *testing.T, body []byte) {
		h, req, err := parseRequest(body)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		rc := &RequestContext{ClientID: clientIDString(h.clientID), CorrelationID: h.correlationID, APIKey: h.key,
			APIVersion: h.version, ListenerName: "PLAINTEXT", Received: time.Now(), Log: e.log}
		var resp kmsg.Response
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err = e.apis.Handle(ctx, rc, req)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s v%d still running 5 s after a 100 ms deadline: %+v", kmsg.NameForKey(h.key), h.version, req)
		}
		if err != nil || resp == nil {
			return // closing the connection is a valid answer (acks=0)
		}
		if resp.Key() != h.key || resp.GetVersion() != h.version {
			t.Fatalf("%s v%d answered with key %d v%d", kmsg.NameForKey(h.key), h.version, resp.Key(), resp.GetVersion())
		}
		_ = appendResponse(nil, h.correlationID, resp)
	})
}
