package msgset

// Message sets as sarama's encoder writes them (Produce v0 with magic 0, Produce v2 with
// magic 1, wrappers compressed by sarama), captured off a socket and decoded.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saramaProduceRecords sends req with acks=0 (no response expected) over a sarama Broker
// to a socket and returns the records bytes of its first partition, read back with kmsg.
func saramaProduceRecords(t *testing.T, version sarama.KafkaVersion, req *sarama.ProduceRequest) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	frames := make(chan []byte, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(frames)
			return
		}
		defer func() { <-done; c.Close() }() // sarama must not see the socket close under it
		var n [4]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			close(frames)
			return
		}
		buf := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(c, buf); err != nil {
			close(frames)
			return
		}
		frames <- buf
	}()
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ApiVersionsRequest = false // the only request on the socket is the Produce
	b := sarama.NewBroker(ln.Addr().String())
	if err := b.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	req.RequiredAcks = sarama.NoResponse
	req.Timeout = 1000
	if _, err := b.Produce(req); err != nil {
		t.Fatalf("produce: %v", err)
	}
	var frame []byte
	select {
	case frame = <-frames:
	case <-time.After(30 * time.Second):
		t.Fatal("no request arrived")
	}
	if frame == nil {
		t.Fatal("reading the request failed")
	}
	// Request header v1: api_key, api_version, correlation_id, client_id (nullable string).
	if key := int16(binary.BigEndian.Uint16(frame)); key != 0 {
		t.Fatalf("api key %d", key)
	}
	ver := int16(binary.BigEndian.Uint16(frame[2:]))
	idLen := int16(binary.BigEndian.Uint16(frame[8:]))
	body := frame[10+max(int(idLen), 0):]
	pr := kmsg.NewPtrProduceRequest()
	pr.Version = ver
	if err := pr.ReadFrom(body); err != nil {
		t.Fatalf("decode produce v%d: %v", ver, err)
	}
	return pr.Topics[0].Partitions[0].Records
}

func TestDecodeSaramaMessageSets(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	for _, c := range []struct {
		version sarama.KafkaVersion
		reqV    int16
		magic   int8
	}{
		{sarama.V0_8_2_0, 0, MagicV0},
		{sarama.V0_10_2_0, 2, MagicV1},
	} {
		msg := func(i int) *sarama.Message {
			m := &sarama.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("value-%d", i)), Version: c.magic}
			if i == 1 {
				m.Key = nil
			}
			if i == 2 {
				m.Value = nil
			}
			if c.magic == MagicV1 {
				m.Timestamp = ts.Add(time.Duration(i) * time.Millisecond)
			}
			return m
		}
		want := func(offsets ...int64) []Message {
			var out []Message
			for i, off := range offsets {
				m := msg(i)
				w := Message{Offset: off, Magic: c.magic, Timestamp: NoTimestamp, Key: m.Key, Value: m.Value}
				if c.magic == MagicV1 {
					w.Timestamp = m.Timestamp.UnixMilli()
				}
				out = append(out, w)
			}
			return out
		}
		// Uncompressed: sarama sends offset 0 for every message.
		plain := &sarama.ProduceRequest{Version: c.reqV}
		set := &sarama.MessageSet{}
		for i := 0; i < 3; i++ {
			set.Messages = append(set.Messages, &sarama.MessageBlock{Offset: int64(i), Msg: msg(i)})
		}
		plain.AddSet("t", 0, set)
		raw := saramaProduceRecords(t, c.version, plain)
		got, err := Decode(raw)
		if err != nil {
			t.Fatalf("%s plain: %v", c.version, err)
		}
		sameMessages(t, got, want(0, 1, 2))

		// Compressed: sarama's encoding of the inner set, compressed by sarama into a wrapper
		// (its producer uses relative inner offsets and wrapper offset 0 for magic 1).
		for _, codec := range []sarama.CompressionCodec{sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4} {
			w := &sarama.Message{Codec: codec, Value: raw, Version: c.magic, Timestamp: ts}
			req := &sarama.ProduceRequest{Version: c.reqV}
			req.AddMessage("t", 0, w)
			wrapped := saramaProduceRecords(t, c.version, req)
			es, err := Entries(wrapped)
			if err != nil || len(es) != 1 || es[0].Codec() != int8(codec) {
				t.Fatalf("%s %s: entries %+v, %v", c.version, codec, es, err)
			}
			got, err := Decode(wrapped)
			if err != nil {
				t.Fatalf("%s %s: %v", c.version, codec, err)
			}
			sameMessages(t, got, want(0, 1, 2))
		}
	}
}
