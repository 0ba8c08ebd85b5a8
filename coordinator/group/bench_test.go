package group

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

func benchCoordinator(b *testing.B, cfg Config) (*Coordinator, *fakeLog) {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	cfg.Logger = logrus.NewEntry(logger)
	if cfg.NumPartitions == 0 {
		cfg.NumPartitions = 50
	}
	fl := newFakeLog()
	for p := int32(0); p < cfg.NumPartitions; p++ {
		fl.leaders[p] = 1
	}
	c := New(cfg, fl)
	for p := int32(0); p < cfg.NumPartitions; p++ {
		c.OnElection(p, 1)
	}
	c.wg.Wait()
	c.Start()
	b.Cleanup(c.Shutdown)
	return c, fl
}

// BenchmarkCommits100Groups: 100 standalone groups committing one partition each, in
// parallel, through the coordinator and an in-memory log (the coordinator's own cost:
// validation, record encoding, batch building, cache update).
func BenchmarkCommits100Groups(b *testing.B) {
	c, _ := benchCoordinator(b, Config{})
	const groups = 100
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := max(b.N/groups, 1)
	for g := 0; g < groups; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("bench-group-%d", g)
			for i := 0; i < per; i++ {
				errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: id, GenerationID: -1,
					Offsets: map[TopicPartition]OffsetAndMetadata{{"t", int32(g % 6)}: {Offset: int64(i), LeaderEpoch: -1, ExpireTimestamp: -1}}})
				for _, err := range errs {
					if err != nil {
						b.Errorf("commit: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*groups)/time.Since(start).Seconds(), "commits/s")
}

// BenchmarkRebalance50Members: time from the first JoinGroup of 50 new members to every
// member holding its assignment (join, protocol selection, leader SyncGroup, group record),
// with group.initial.rebalance.delay.ms=20 so that all 50 land in the first generation (as
// Kafka's 3 s default intends); the 20 ms are included.
func BenchmarkRebalance50Members(b *testing.B) {
	const members = 50
	var total time.Duration
	for i := 0; i < b.N; i++ {
		c, _ := benchCoordinator(b, Config{InitialRebalanceDelay: 20 * time.Millisecond, MinSessionTimeout: time.Second})
		groupID := fmt.Sprintf("rebalance-%d", i)
		start := time.Now()
		var wg sync.WaitGroup
		results := make([]JoinResult, members)
		for m := 0; m < members; m++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[m] = c.JoinGroup(context.Background(), JoinRequest{GroupID: groupID, ClientID: "bench",
					SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second, ProtocolType: "consumer",
					Protocols: []Protocol{{Name: "range", Metadata: consumerMeta("t")}}})
			}()
		}
		wg.Wait()
		var leader JoinResult
		for _, r := range results {
			if r.Err != nil {
				b.Fatalf("join: %v", r.Err)
			}
			if r.MemberID == r.LeaderID {
				leader = r
			}
		}
		assign := map[string][]byte{}
		for _, m := range leader.Members {
			assign[m.MemberID] = []byte("a")
		}
		syncErrs := make([]*kerr.Error, members)
		for m := 0; m < members; m++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := SyncRequest{GroupID: groupID, GenerationID: results[m].GenerationID, MemberID: results[m].MemberID}
				if results[m].MemberID == leader.MemberID {
					req.Assignments = assign
				}
				syncErrs[m] = c.SyncGroup(context.Background(), req).Err
			}()
		}
		wg.Wait()
		for _, err := range syncErrs {
			if err != nil {
				b.Fatalf("sync: %v", err)
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/rebalance")
}
