package controller

// AllocateProducerIds against a real ZooKeeper: two brokers asking concurrently, a third
// writer racing on /latest_producer_id_block, and a controller failover in the middle never
// produce overlapping blocks.

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

type pidBlock struct {
	broker     int32
	start, end int64 // inclusive
}

func TestAllocateProducerIDsNeverOverlapAcrossFailover(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("producer-ids"))
	zks := map[int32]*zkmeta.Client{1: connectZK(t, connect), 2: connectZK(t, connect)}
	if err := zks[1].CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	var epochMu sync.Mutex
	epochs := map[int32]int64{}
	register := func(id int32, zk *zkmeta.Client) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e, err := zk.RegisterBroker(ctx, zkmeta.BrokerInfo{ID: id, JMXPort: -1,
			Endpoints: []zkmeta.Endpoint{{ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: 1, SecurityProtocol: "PLAINTEXT"}}})
		if err != nil {
			t.Fatal(err)
		}
		epochMu.Lock()
		epochs[id] = e
		epochMu.Unlock()
	}
	register(1, zks[1])
	register(2, zks[2])
	ctrls := map[int32]*Controller{}
	for id := int32(1); id <= 2; id++ {
		ctrls[id] = newController(Config{BrokerID: id, Log: testLog(t)}, zks[id], kclientDial)
		runController(t, ctrls[id])
	}
	waitFor(t, 10*time.Second, "an active controller", func() bool { return ctrls[1].IsActive() != ctrls[2].IsActive() })
	active := func() *Controller {
		for _, c := range ctrls {
			if c.IsActive() {
				return c
			}
		}
		return nil
	}
	first := active()
	other := ctrls[3-first.cfg.BrokerID]

	// Checks a broker's request goes through: not the controller, unknown broker, stale epoch.
	req := func(id int32, epoch int64) *kmsg.AllocateProducerIDsRequest {
		r := kmsg.NewPtrAllocateProducerIDsRequest()
		r.BrokerID, r.BrokerEpoch = id, epoch
		return r
	}
	ctx := context.Background()
	if resp := other.AllocateProducerIDs(ctx, req(1, epochs[1])); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("non-controller: %+v", resp)
	}
	if resp := first.AllocateProducerIDs(ctx, req(9, 1)); resp.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregistered broker: %+v", resp)
	}
	if resp := first.AllocateProducerIDs(ctx, req(1, epochs[1]-1)); resp.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale broker epoch: %+v", resp)
	}

	var mu sync.Mutex
	var blocks []pidBlock
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Brokers 1 and 2 keep asking whichever controller is active.
	for id := int32(1); id <= 2; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := active()
				epochMu.Lock()
				e := epochs[id]
				epochMu.Unlock()
				if c == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				resp := c.AllocateProducerIDs(ctx, req(id, e))
				if resp.ErrorCode != 0 {
					time.Sleep(10 * time.Millisecond) // NOT_CONTROLLER / STALE_BROKER_EPOCH during failover
					continue
				}
				if resp.ProducerIDLen != zkmeta.ProducerIDBlockSize {
					t.Errorf("block length %d", resp.ProducerIDLen)
				}
				mu.Lock()
				blocks = append(blocks, pidBlock{id, resp.ProducerIDStart, resp.ProducerIDStart + int64(resp.ProducerIDLen) - 1})
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	// A deposed controller still writing (its own session): the conditional update keeps it
	// from reusing a block.
	racer := connectZK(t, connect)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := racer.AllocateProducerIDBlock(99)
			if err != nil {
				t.Errorf("racing allocation: %v", err)
				return
			}
			mu.Lock()
			blocks = append(blocks, pidBlock{99, b.BlockStart, b.BlockEnd})
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	count := func(broker int32) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, b := range blocks {
			if b.broker == broker {
				n++
			}
		}
		return n
	}
	waitFor(t, 20*time.Second, "blocks for both brokers", func() bool { return count(1) >= 10 && count(2) >= 10 })

	// Controller failover: the active controller's broker loses its session, re-registers with
	// a new session (new broker epoch) and keeps asking the new controller.
	deadID := first.cfg.BrokerID
	before := count(1) + count(2)
	zks[deadID].Close()
	waitFor(t, 15*time.Second, "failover", func() bool { return other.IsActive() })
	fresh := connectZK(t, connect)
	register(deadID, fresh)
	waitFor(t, 20*time.Second, "blocks from the new controller for both brokers", func() bool {
		return count(1)+count(2) >= before+20 && count(deadID) > 0
	})
	after := count(deadID)
	waitFor(t, 20*time.Second, "the re-registered broker gets blocks", func() bool { return count(deadID) >= after+5 })
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].start < blocks[j].start })
	for i, b := range blocks {
		if b.end-b.start+1 != zkmeta.ProducerIDBlockSize {
			t.Fatalf("block %+v has the wrong size", b)
		}
		if i > 0 && b.start <= blocks[i-1].end {
			t.Fatalf("overlapping blocks %+v and %+v", blocks[i-1], b)
		}
	}
	t.Logf("%d blocks, none overlapping, last ends at %d", len(blocks), blocks[len(blocks)-1].end)

	// /latest_producer_id_block holds the last block in Kafka's JSON.
	data, _, err := fresh.Get(zkmeta.LatestProducerIDBlockPath)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Version    int    `json:"version"`
		Broker     int32  `json:"broker"`
		BlockStart string `json:"block_start"`
		BlockEnd   string `json:"block_end"`
	}
	if err := json.Unmarshal(data, &js); err != nil || js.Version != 1 {
		t.Fatalf("znode %s: %v", data, err)
	}
	last := blocks[len(blocks)-1]
	cur, err := zkmeta.DecodeProducerIDBlock(data)
	if err != nil || cur.BlockEnd < last.end {
		t.Fatalf("znode %s behind the last block handed out %+v", data, last)
	}
}
