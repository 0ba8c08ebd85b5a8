package integration

// Idempotent producers (issue 8) on an RF=1 topic: franz-go's default idempotent producer
// (acks=all, up to 5 requests in flight) and sarama with Producer.Idempotent=true
// (MaxOpenRequests=1 as sarama requires, Version V3_7_0_0). Every acknowledged record comes
// back exactly once, in order, at its acknowledged offset, and every batch carries a
// producer id from a block the controller allocated in /latest_producer_id_block.
// (The replication chaos variant waits for follower replication.)

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

const idempotentRecords = 20_000

func TestIdempotentProducers(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3})
	pids := map[string]map[int64]bool{}

	t.Run("franz-go", func(t *testing.T) {
		topic := "idem-kgo"
		createTopic(t, c, topic, testPartitions, 1, nil)
		sent := kgoProduceIdempotent(t, c, topic, idempotentRecords)
		got, ids := kgoConsumeWithProducerIDs(t, c, topic, len(sent))
		checkRecords(t, sent, got)
		pids["franz-go"] = ids
	})
	t.Run("sarama", func(t *testing.T) {
		topic := "idem-sarama"
		createTopic(t, c, topic, testPartitions, 1, nil)
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V3_7_0_0
		cfg.ClientID = "samsa-it-idempotent"
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Retry.Max = 10
		cfg.Producer.Return.Successes = true
		cfg.Producer.Return.Errors = true
		cfg.Consumer.Return.Errors = true
		sent := saramaProduceAsync(t, c, cfg, topic, idempotentRecords)
		got, ids := kgoConsumeWithProducerIDs(t, c, topic, len(sent))
		checkRecords(t, sent, got)
		pids["sarama"] = ids
	})
	if t.Failed() {
		return
	}
	// Producer ids: each client got its own id(s) (one per producer, as no error forced a
	// reset), distinct across clients and within the blocks recorded in ZooKeeper.
	data, _, ok := c.ZKGet("/latest_producer_id_block")
	if !ok {
		t.Fatal("no /latest_producer_id_block")
	}
	var block struct {
		Version    int    `json:"version"`
		Broker     int32  `json:"broker"`
		BlockStart string `json:"block_start"`
		BlockEnd   string `json:"block_end"`
	}
	if err := json.Unmarshal(data, &block); err != nil || block.Version != 1 {
		t.Fatalf("/latest_producer_id_block = %s (%v)", data, err)
	}
	end, err := strconv.ParseInt(block.BlockEnd, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]string{}
	for client, ids := range pids {
		if len(ids) == 0 {
			t.Fatalf("%s: no producer id on its batches", client)
		}
		for id := range ids {
			if id < 0 || id > end {
				t.Fatalf("%s: producer id %d outside the allocated blocks (last ends at %d)", client, id, end)
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("producer id %d used by %s and %s", id, other, client)
			}
			seen[id] = client
		}
	}
	t.Logf("producer ids %v; /latest_producer_id_block %s", seen, data)
}

// kgoProduceIdempotent produces with kgo's defaults for idempotence (acks=all,
// MaxProduceRequestsInflightPerBroker 5 with idempotence on), async; every record must be
// acknowledged with a producer id.
func kgoProduceIdempotent(t testing.TB, c *Cluster, topic string, n int) []record {
	t.Helper()
	return kgoProduceWith(t, c, topic, 0, n, false, func(r *kgo.Record) error {
		if r.ProducerID < 0 {
			return errors.New("record acknowledged without a producer id")
		}
		return nil
	})
}

// TestIdempotentStateSurvivesKill: many producers (raw Produce requests with chosen producer
// ids and sequences) write a topic with small segments to one broker process; kill -9;
// the broker's files, opened as a log, load producer state from the latest roll snapshot and
// replay only the batches after it; after the restart a retry of every producer's last batch
// is acknowledged with its original offset and not stored again.
func TestIdempotentStateSurvivesKill(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 1, Process: true})
	const topic = "idem-kill"
	segBytes := "8192"
	createTopic(t, c, topic, 1, 1, map[string]*string{"segment.bytes": &segBytes})
	b := c.Broker(0)
	const producers, batches, perBatch = 50, 30, 5
	type sentBatch struct {
		pid      int64
		seq      int32
		base     int64
		recordTS int64
	}
	last := map[int64]sentBatch{}
	var cl *kgo.Client // one connection to the broker, redialled after the restart
	produce := func(pid int64, seq int32, ts int64) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		recs := make([]recordbatch.Record, perBatch)
		for i := range recs {
			recs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: []byte(strconv.FormatInt(pid, 10)),
				Value: []byte(strconv.Itoa(int(seq) + i))}
		}
		batch, err := recordbatch.Build(recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: perBatch - 1,
			BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}, recs, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		var resp kmsg.Response
		waitFor(t, 30*time.Second, func() error {
			if cl == nil {
				if cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.WithLogger(kgoTestLogger(t))); err != nil {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err = cl.SeedBrokers()[0].Request(ctx, req)
			if err != nil {
				cl.Close()
				cl = nil
			}
			return err
		})
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	ts := time.Now().UnixMilli()
	for i := 0; i < batches; i++ {
		for p := int64(0); p < producers; p++ {
			pid := 5000 + p
			seq := int32(i * perBatch)
			r := produce(pid, seq, ts)
			if r.ErrorCode != 0 {
				t.Fatalf("producer %d seq %d: %v", pid, seq, kerr.ErrorForCode(r.ErrorCode))
			}
			last[pid] = sentBatch{pid, seq, r.BaseOffset, ts}
		}
	}
	leo := int64(producers * batches * perBatch)
	partDir := filepath.Join(b.Dir, topic+"-0")
	b.Kill()
	cl.Close()
	cl = nil

	// What recovery does with these files (a copy, opened as the broker would after a crash).
	copyDir := filepath.Join(t.TempDir(), topic+"-0")
	if err := os.MkdirAll(copyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(partDir)
	if err != nil {
		t.Fatal(err)
	}
	var snaps []string
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(partDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), logstore.SnapshotFileSuffix) {
			snaps = append(snaps, e.Name())
		}
	}
	if len(snaps) < 2 {
		t.Fatalf("snapshots after kill -9: %v (want one per roll)", snaps)
	}
	var logBuf bytes.Buffer
	lg := logrus.New()
	lg.SetOutput(&logBuf)
	cfg, err := logstore.NewLogConfig(nil, map[string]string{"segment.bytes": segBytes})
	if err != nil {
		t.Fatal(err)
	}
	l, err := logstore.OpenLog(copyDir, logstore.LogOpenOptions{Config: cfg, Log: logrus.NewEntry(lg)})
	if err != nil {
		t.Fatal(err)
	}
	replayed := l.ProducerStateReplayedBatches()
	states := l.ProducerStates()
	l.Close()
	t.Logf("recovery of the killed broker's files: %d snapshots, replayed %d of %d batches; %s",
		len(snaps), replayed, producers*batches, strings.TrimSpace(grepLine(logBuf.String(), "producer state")))
	if !strings.Contains(logBuf.String(), "loaded producer state from snapshot") || replayed >= producers*batches/2 || len(states) != producers {
		t.Fatalf("recovery replayed %d of %d batches, %d producers; log:\n%s", replayed, producers*batches, len(states), logBuf.String())
	}

	b.Restart()
	waitLeaders(t, c, topic, 1)
	for p := int64(0); p < producers; p++ {
		s := last[5000+p]
		r := produce(s.pid, s.seq, s.recordTS)
		if r.ErrorCode != 0 || r.BaseOffset != s.base {
			t.Fatalf("producer %d: retry after kill -9 got %v base %d, want base %d", s.pid, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset, s.base)
		}
	}
	// Stored once: the next batch of one producer lands right at the old LEO.
	r := produce(5000, int32(batches*perBatch), ts)
	if r.ErrorCode != 0 || r.BaseOffset != leo {
		t.Fatalf("next batch after the retries: %v base %d, want %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset, leo)
	}
}

func grepLine(s, sub string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}
