package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestBuilder makes a valid request of one API at version v against a dataEnv that has
// the topic "rt" (2 partitions, led here). check, if set, asserts on the response beyond
// well-formedness.
type requestBuilder struct {
	build func(e *dataEnv, v int16) kmsg.Request
	check func(t *testing.T, resp kmsg.Response)
}

// requestBuilders has one entry per API key the broker serves. Owners of a handler file add
// theirs (from their own _test.go file's init); TestEveryAdvertisedVersionRoundTrips fails
// for a registered key without one.
var requestBuilders = map[int16]requestBuilder{
	0: {
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 5000
			t := kmsg.NewProduceRequestTopic()
			t.Topic = "rt"
			p := kmsg.NewProduceRequestTopicPartition()
			p.Records = valuesBatch(3, 10)
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.ProduceResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("produce response: %+v", resp.Topics)
			}
		},
	},
	1: {
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = "rt", e.topics["rt"]
			for p := int32(0); p < 2; p++ {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, 0, 1<<20
				t.Partitions = append(t.Partitions, fp)
			}
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.FetchResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("fetch response: %+v", resp)
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.HighWatermark < 0 {
					t.Fatalf("fetch partition: %+v", p)
				}
			}
		},
	},
	2: {
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrListOffsetsRequest()
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = "rt"
			for p, ts := range []int64{-1, -2} {
				lp := kmsg.NewListOffsetsRequestTopicPartition()
				lp.Partition, lp.Timestamp = int32(p), ts
				t.Partitions = append(t.Partitions, lp)
			}
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.ListOffsetsResponse)
			for _, p := range resp.Topics[0].Partitions {
				if resp.Version == 0 {
					if p.ErrorCode != 0 || len(p.OldStyleOffsets) != 1 {
						t.Fatalf("list offsets v0 partition: %+v", p)
					}
					continue
				}
				if p.ErrorCode != 0 || p.Offset < 0 {
					t.Fatalf("list offsets partition: %+v", p)
				}
			}
		},
	},
	3: {
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrMetadataRequest()
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr("rt")
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.MetadataResponse)
			if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 || len(resp.Brokers) != 1 {
				t.Fatalf("metadata response: %+v", resp)
			}
			if resp.Topics[0].Partitions[0].Leader != testBrokerID {
				t.Fatalf("leader %d", resp.Topics[0].Partitions[0].Leader)
			}
		},
	},
	18: {
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-test", "1.0"
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(registry) {
				t.Fatalf("api versions: error %d, %d keys, registry has %d", resp.ErrorCode, len(resp.ApiKeys), len(registry))
			}
		},
	},
}

// roundTripFrame encodes req as a client would, then decodes it as the SocketServer does.
func roundTripFrame(t *testing.T, req kmsg.Request, corr int32) (requestHeader, kmsg.Request) {
	t.Helper()
	frame := appendRequestFrame(nil, req, corr, "table-test")
	if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
		t.Fatalf("frame size %d, body %d", got, len(frame)-4)
	}
	h, decoded, err := parseRequest(frame[4:])
	if err != nil {
		t.Fatalf("parseRequest: %v", err)
	}
	wantCID := "table-test"
	if h.headerVersion == 0 {
		wantCID = ""
	}
	if h.key != req.Key() || h.version != req.GetVersion() || h.correlationID != corr || clientIDString(h.clientID) != wantCID {
		t.Fatalf("header %+v", h)
	}
	// The decoded request re-encodes to the same bytes: nothing was lost or misread.
	if a, b := req.AppendTo(nil), decoded.AppendTo(nil); !bytes.Equal(a, b) {
		t.Fatalf("request body changed in decoding:\n%x\n%x", a, b)
	}
	return h, decoded
}

// appendRequestFrame encodes a request as a client does. (kmsg's RequestFormatter omits the
// body and size of ControlledShutdown v0, whose request header is v0.)
func appendRequestFrame(dst []byte, req kmsg.Request, corr int32, clientID string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, corr)
	if !(req.Key() == 7 && req.GetVersion() == 0) {
		dst = kbin.AppendNullableString(dst, &clientID)
		if req.IsFlexible() {
			dst = append(dst, 0)
		}
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// decodeResponseFrame parses a response frame as a client would (ApiVersions: header v0).
func decodeResponseFrame(t *testing.T, frame []byte, key, version int16, corr int32) kmsg.Response {
	t.Helper()
	if len(frame) < 8 || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		t.Fatalf("bad response frame size")
	}
	if got := int32(binary.BigEndian.Uint32(frame[4:])); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	body := frame[8:]
	if resp.IsFlexible() && key != 18 {
		r := kbin.Reader{Src: body}
		kmsg.SkipTags(&r)
		if err := r.Complete(); err != nil {
			t.Fatalf("response header tags: %v", err)
		}
		body = r.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode response: %v", err)
	}
	if !bytes.Equal(resp.AppendTo(nil), body) {
		t.Fatalf("response does not re-encode to the same bytes")
	}
	return resp
}

func TestEveryAdvertisedVersionRoundTrips(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("rt", 2)

	var keys []int16
	for _, k := range supportedAPIs() {
		keys = append(keys, k.ApiKey)
	}
	for _, key := range keys {
		minV, maxV, _ := SupportedVersions(key)
		b, ok := requestBuilders[key]
		if !ok {
			t.Errorf("API key %d (%s) is registered but has no request builder in requestBuilders", key, kmsg.NameForKey(key))
			continue
		}
		for v := minV; v <= maxV; v++ {
			t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(key), v), func(t *testing.T) {
				req := b.build(e, v)
				req.SetVersion(v)
				corr := int32(key)<<16 | int32(v)
				_, decoded := roundTripFrame(t, req, corr)
				rc := &RequestContext{ClientID: "table-test", CorrelationID: corr, APIKey: key, APIVersion: v,
					ListenerName: "PLAINTEXT", Received: time.Now(), Log: e.log}
				resp, err := e.apis.Handle(t.Context(), rc, decoded)
				if err != nil {
					t.Fatalf("handler error: %v", err)
				}
				if resp == nil {
					t.Fatalf("no response")
				}
				if resp.Key() != key || resp.GetVersion() != v {
					t.Fatalf("response key %d v%d", resp.Key(), resp.GetVersion())
				}
				got := decodeResponseFrame(t, appendResponse(nil, corr, resp), key, v, corr)
				if b.check != nil {
					b.check(t, got)
				}
			})
		}
	}
}

func TestRegistryMatchesKafka37Ranges(t *testing.T) {
	// The data-path keys with Kafka 3.7's full version ranges, old message formats
	// included (Produce v0-v2, Fetch v0-v3).
	want := map[int16][2]int16{0: {0, 10}, 1: {0, 16}, 2: {0, 8}, 3: {0, 12}, 18: {0, 3}}
	for key, r := range want {
		minV, maxV, ok := SupportedVersions(key)
		if !ok || minV != r[0] || maxV != r[1] {
			t.Errorf("key %d: got [%d, %d] ok=%v, want %v", key, minV, maxV, ok, r)
		}
	}
}
