package broker

// OffsetCommit v0 / OffsetFetch v0 against a real broker and ZooKeeper, sent by sarama's
// request types pinned to version 0 (sarama's offset manager itself starts at v1).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestOffsetsV0InZooKeeper(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, testChroot(t), map[string]string{"offsets.topic.num.partitions": "1",
		"offset.metadata.max.bytes": "8", "group.initial.rebalance.delay.ms": "0"})
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := adm.CreateTopics(ctx, 2, 1, nil, "zo"); err != nil || r["zo"].Err != nil {
		t.Fatalf("CreateTopics: %v %v", err, r["zo"].Err)
	}

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_8_2_0
	sb := sarama.NewBroker(addr)
	if err := sb.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer sb.Close()

	commit := &sarama.OffsetCommitRequest{Version: 0, ConsumerGroup: "old-group"}
	commit.AddBlock("zo", 0, 17, 0, "meta")
	commit.AddBlock("zo", 1, 4, 0, strings.Repeat("m", 9)) // over offset.metadata.max.bytes=8
	commit.AddBlock("zo", 5, 3, 0, "")                     // no such partition
	commit.AddBlock("nope", 0, 3, 0, "")                   // no such topic
	cresp, err := sb.CommitOffset(commit)
	if err != nil {
		t.Fatalf("OffsetCommit v0: %v", err)
	}
	for _, c := range []struct {
		topic string
		part  int32
		want  sarama.KError
	}{{"zo", 0, sarama.ErrNoError}, {"zo", 1, sarama.ErrOffsetMetadataTooLarge},
		{"zo", 5, sarama.ErrUnknownTopicOrPartition}, {"nope", 0, sarama.ErrUnknownTopicOrPartition}} {
		if got := cresp.Errors[c.topic][c.part]; got != c.want {
			t.Errorf("commit %s-%d: %v, want %v", c.topic, c.part, got, c.want)
		}
	}

	// The znode as Kafka writes it; nothing for the refused ones.
	zk := b.ZK()
	if data, _, err := zk.Get("/consumers/old-group/offsets/zo/0"); err != nil || string(data) != "17" {
		t.Errorf("znode zo/0: %q, %v; want \"17\"", data, err)
	}
	if ok, _, _ := zk.Exists("/consumers/old-group/offsets/zo/1"); ok {
		t.Error("a commit refused for its metadata was stored")
	}
	if ok, _, _ := zk.Exists("/consumers/old-group/offsets/nope"); ok {
		t.Error("a commit for an unknown topic was stored")
	}

	fetchV0 := func(parts map[string][]int32) *sarama.OffsetFetchResponse {
		t.Helper()
		req := &sarama.OffsetFetchRequest{Version: 0, ConsumerGroup: "old-group"}
		for topic, ps := range parts {
			for _, p := range ps {
				req.AddPartition(topic, p)
			}
		}
		resp, err := sb.FetchOffset(req)
		if err != nil {
			t.Fatalf("OffsetFetch v0: %v", err)
		}
		return resp
	}
	resp := fetchV0(map[string][]int32{"zo": {0, 1, 7}, "nope": {0}})
	for _, c := range []struct {
		topic string
		part  int32
		off   int64
	}{{"zo", 0, 17}, {"zo", 1, -1}, {"zo", 7, -1}, {"nope", 0, -1}} {
		blk := resp.GetBlock(c.topic, c.part)
		if blk == nil || blk.Err != sarama.ErrNoError || blk.Offset != c.off || blk.Metadata != "" {
			t.Errorf("fetch %s-%d: %+v, want offset %d, no error, no metadata", c.topic, c.part, blk, c.off)
		}
	}

	// A znode written by hand (an old consumer, or kafka's own tools) is read back, and a
	// second commit overwrites.
	if err := zk.SetOrCreateConsumerOffset("old-group", "zo", 1, 99); err != nil {
		t.Fatal(err)
	}
	again := &sarama.OffsetCommitRequest{Version: 0, ConsumerGroup: "old-group"}
	again.AddBlock("zo", 0, 18, 0, "")
	if r, err := sb.CommitOffset(again); err != nil || r.Errors["zo"][0] != sarama.ErrNoError {
		t.Fatalf("second commit: %v %v", err, r)
	}
	resp = fetchV0(map[string][]int32{"zo": {0, 1}})
	if blk := resp.GetBlock("zo", 0); blk == nil || blk.Offset != 18 {
		t.Errorf("after the second commit zo-0: %+v, want 18", blk)
	}
	if blk := resp.GetBlock("zo", 1); blk == nil || blk.Offset != 99 {
		t.Errorf("hand-written zo-1: %+v, want 99", blk)
	}

	// v1+ asks the group coordinator, which never saw these commits.
	var offs kadm.OffsetResponses
	adminWaitFor(t, 20*time.Second, "the group coordinator", func() bool {
		offs, err = adm.FetchOffsets(ctx, "old-group")
		return !errors.Is(err, kerr.CoordinatorNotAvailable) && !errors.Is(err, kerr.CoordinatorLoadInProgress)
	})
	if err != nil {
		t.Fatalf("FetchOffsets (v1+): %v", err)
	}
	if o, ok := offs.Lookup("zo", 0); ok && o.Err == nil && o.At >= 0 {
		t.Errorf("the coordinator reports a v0 commit: %+v", o)
	}
	if err := offs.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("FetchOffsets error: %v", err)
	}
}
