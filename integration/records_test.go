package integration

// What every client test checks, whatever the client: every record produced comes back
// exactly once, in the order the broker acknowledged it per partition, with key, value,
// headers and timestamp intact.

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// numKeys is how many distinct keys the test records use (record i has key i % numKeys).
const numKeys = 1000

type header struct{ Key, Value string }

// record is one record as produced (Offset: as acknowledged) or as consumed.
type record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []header
	Timestamp time.Time // ms precision; zero = not checked (client sets it itself)
}

// testRecord is the i-th record of a run: small keyed values that say where they come from.
func testRecord(client string, i int, base time.Time) record {
	return record{
		Key:       []byte("key-" + strconv.Itoa(i%numKeys)),
		Value:     []byte(client + "-" + strconv.Itoa(i)),
		Headers:   []header{{"client", client}, {"seq", strconv.Itoa(i)}},
		Timestamp: base.Add(time.Duration(i) * time.Millisecond).Truncate(time.Millisecond),
	}
}

// seqOf reads i back from a testRecord value.
func seqOf(value []byte) (int, error) {
	s := string(value)
	j := strings.LastIndexByte(s, '-')
	if j < 0 {
		return 0, fmt.Errorf("value %q is not a test record", s)
	}
	return strconv.Atoi(s[j+1:])
}

// checkRecords compares acknowledged records with consumed ones. The topic was empty before,
// so each partition's offsets are 0..n-1 with no gap.
func checkRecords(t testing.TB, sent, got []record) {
	t.Helper()
	if len(got) != len(sent) {
		t.Errorf("consumed %d records, produced %d", len(got), len(sent))
	}
	sentBy := byPartition(sent)
	gotBy := byPartition(got) // keeps consumption order
	errs := 0
	fail := func(format string, args ...any) {
		errs++
		if errs <= 10 {
			t.Errorf(format, args...)
		}
	}
	for p, ss := range sentBy {
		sort.Slice(ss, func(i, j int) bool { return ss[i].Offset < ss[j].Offset })
		gs := gotBy[p]
		lastSeq := map[string]int{}
		for i, s := range ss {
			if s.Offset != int64(i) {
				fail("partition %d: acknowledged offsets have a gap: %d at position %d", p, s.Offset, i)
				break
			}
			// The producer sent each key's records in order and no retry happened, so the
			// log keeps that order.
			seq, err := seqOf(s.Value)
			if err == nil {
				if prev, ok := lastSeq[string(s.Key)]; ok && seq < prev {
					fail("partition %d offset %d: key %s record %d after %d", p, s.Offset, s.Key, seq, prev)
				}
				lastSeq[string(s.Key)] = seq
			}
			if i >= len(gs) {
				fail("partition %d: consumed %d records, produced %d", p, len(gs), len(ss))
				break
			}
			g := gs[i]
			switch {
			case g.Offset != s.Offset:
				fail("partition %d: consumed offset %d at position %d, want %d", p, g.Offset, i, s.Offset)
			case !bytes.Equal(g.Key, s.Key) || !bytes.Equal(g.Value, s.Value):
				fail("partition %d offset %d: got key %q value %q, want %q %q", p, g.Offset, g.Key, g.Value, s.Key, s.Value)
			case !headersEqual(g.Headers, s.Headers):
				fail("partition %d offset %d: got headers %v, want %v", p, g.Offset, g.Headers, s.Headers)
			case !s.Timestamp.IsZero() && !g.Timestamp.Equal(s.Timestamp):
				fail("partition %d offset %d: got timestamp %v, want %v", p, g.Offset, g.Timestamp.UnixMilli(), s.Timestamp.UnixMilli())
			}
		}
		if len(gs) > len(ss) {
			fail("partition %d: consumed %d records, produced %d", p, len(gs), len(ss))
		}
	}
	for p := range gotBy {
		if _, ok := sentBy[p]; !ok {
			fail("consumed records from partition %d, none produced there", p)
		}
	}
	if errs > 10 {
		t.Errorf("... %d mismatches in all", errs)
	}
}

func headersEqual(a, b []header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func byPartition(rs []record) map[int32][]record {
	m := map[int32][]record{}
	for _, r := range rs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

// countsByPartition is how many records each partition should end up with.
func countsByPartition(rs []record) map[int32]int {
	m := map[int32]int{}
	for _, r := range rs {
		m[r.Partition]++
	}
	return m
}

// ---- admin through kadm (franz-go) ----

func adminClient(t testing.TB, c *Cluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.WithLogger(kgoTestLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates a topic through CreateTopics and waits until every partition has a
// leader in every broker's metadata.
func createTopic(t testing.TB, c *Cluster, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminClient(t, c)
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("create topic %s: %v (%s)", topic, resp.Err, resp.ErrMessage)
	}
	waitLeaders(t, c, topic, partitions)
}

// waitLeaders waits until every running broker's Metadata shows a leader for each partition
// (asked of each broker directly: kgo's own metadata requests are rate limited).
func waitLeaders(t testing.TB, c *Cluster, topic string, partitions int32) {
	t.Helper()
	for _, addr := range c.Bootstrap() {
		waitFor(t, 30*time.Second, func() error {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			md, err := requestTo[*kmsg.MetadataResponse](t, addr, req)
			if err != nil {
				return err
			}
			if len(md.Topics) != 1 {
				return fmt.Errorf("%s: Metadata for %s has %d topics", addr, topic, len(md.Topics))
			}
			td := md.Topics[0]
			if err := kerr.ErrorForCode(td.ErrorCode); err != nil {
				return fmt.Errorf("%s: topic %s: %w", addr, topic, err)
			}
			if int32(len(td.Partitions)) != partitions {
				return fmt.Errorf("%s: topic %s has %d partitions, want %d", addr, topic, len(td.Partitions), partitions)
			}
			for _, p := range td.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 {
					return fmt.Errorf("%s: %s-%d: leader %d, %v", addr, topic, p.Partition, p.Leader, err)
				}
			}
			return nil
		})
	}
}

// kgoTestLogger sends franz-go's warnings and errors to t.Log.
func kgoTestLogger(t testing.TB) kgo.Logger {
	w := newTestLogWriter(t, "kgo: ")
	t.Cleanup(w.Close)
	return kgo.BasicLogger(w, kgo.LogLevelWarn, nil)
}
