// Command resend shows a partition leader's duplicate detection for idempotent producers
// (chapter 05 of the study guide, docs/study/05-idempotence.md). It does by hand what an
// idempotent producer does: it asks for a producer id (InitProducerId), then sends record
// batches stamped with that id, its epoch and a sequence number, and sends one of them twice,
// as a producer retrying after a lost response would. It prints what the leader answered.
//
//	go run ./docs/study/_examples/resend --bootstrap-server localhost:9092 --topic study-idempotence
//
// The directory starts with "_" so that `go build ./...` leaves it out; `go run` with its
// path builds it.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	bootstrap := flag.String("bootstrap-server", "localhost:9092", "a broker to start from")
	topic := flag.String("topic", "study-idempotence", "the topic (partition 0 is used)")
	flag.Parse()
	if err := run(*bootstrap, *topic); err != nil {
		fmt.Fprintln(os.Stderr, "resend:", err)
		os.Exit(1)
	}
}

func run(bootstrap, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()

	// The partition's leader: produce requests go to it.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) == 0 {
		return fmt.Errorf("topic %s not found", topic)
	}
	if err := kerr.ErrorForCode(mresp.Topics[0].Partitions[0].ErrorCode); err != nil {
		return fmt.Errorf("metadata of %s-0: %w", topic, err)
	}
	leader := cl.Broker(int(mresp.Topics[0].Partitions[0].Leader))

	// InitProducerId without a transactional id: a new producer id, epoch 0.
	ireq := kmsg.NewPtrInitProducerIDRequest()
	ireq.TransactionTimeoutMillis = 60000
	iresp, err := ireq.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(iresp.ErrorCode); err != nil {
		return fmt.Errorf("InitProducerId: %w", err)
	}
	fmt.Printf("InitProducerId: producer id %d\n", iresp.ProducerID)
	fmt.Printf("producer epoch %d\n", iresp.ProducerEpoch)

	send := func(what string, seq int32, value string) error {
		batch := oneRecordBatch(iresp.ProducerID, iresp.ProducerEpoch, seq, []byte(value))
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = 0
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, leader)
		if err != nil {
			return err
		}
		p := resp.Topics[0].Partitions[0]
		fmt.Printf("%-34s sequence %d, %-8q -> ", what, seq, value)
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			fmt.Printf("error %s\n", kerr.TypedErrorForCode(p.ErrorCode).Message)
			return nil
		}
		fmt.Printf("offset %d\n", p.BaseOffset)
		return nil
	}
	steps := []struct {
		what  string
		seq   int32
		value string
	}{
		{"a first batch:", 0, "first"},
		{"the next one:", 1, "second"},
		{"the same batch again (a retry):", 1, "second"},
		{"a batch that skips a sequence:", 3, "fourth"},
		{"the next one, in order:", 2, "third"},
	}
	for _, s := range steps {
		if err := send(s.what, s.seq, s.value); err != nil {
			return err
		}
	}
	return nil
}

// oneRecordBatch encodes a v2 record batch (Kafka's DefaultRecordBatch) of one record with no
// key, stamped with the producer's id, epoch and sequence. The leader assigns the offsets.
func oneRecordBatch(producerID int64, producerEpoch int16, seq int32, value []byte) []byte {
	var rec []byte
	rec = append(rec, 0)               // attributes
	rec = binary.AppendVarint(rec, 0)  // timestamp delta
	rec = binary.AppendVarint(rec, 0)  // offset delta
	rec = binary.AppendVarint(rec, -1) // key length: no key
	rec = binary.AppendVarint(rec, int64(len(value)))
	rec = append(rec, value...)
	rec = binary.AppendVarint(rec, 0) // headers
	records := binary.AppendVarint(nil, int64(len(rec)))
	records = append(records, rec...)

	now := time.Now().UnixMilli()
	b := make([]byte, 0, 61+len(records))
	b = binary.BigEndian.AppendUint64(b, 0)                       // base offset (the leader sets it)
	b = binary.BigEndian.AppendUint32(b, uint32(49+len(records))) // batch length: what follows this field
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)              // partition leader epoch (-1: the leader sets it)
	b = append(b, 2)                                              // magic
	b = binary.BigEndian.AppendUint32(b, 0)                       // CRC, below
	b = binary.BigEndian.AppendUint16(b, 0)                       // attributes: no compression, not transactional
	b = binary.BigEndian.AppendUint32(b, 0)                       // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(now))             // base timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(now))             // max timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(producerID))      // producer id
	b = binary.BigEndian.AppendUint16(b, uint16(producerEpoch))   // producer epoch
	b = binary.BigEndian.AppendUint32(b, uint32(seq))             // base sequence
	b = binary.BigEndian.AppendUint32(b, 1)                       // record count
	b = append(b, records...)
	// The CRC (Castagnoli) covers everything from the attributes on.
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
