package group

// Strings longer than an int16 length carries (group ids from OffsetCommit v8+, JoinGroup
// v6+ and TxnOffsetCommit v3 are compact strings; member ids are the client id plus a UUID)
// must fail the request the way Kafka's serializer does, never become a record whose key
// names a truncated group.

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetCommitOfGroupIDOverInt16IsRefused(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	long := strings.Repeat("g", 70000)
	allWant(t, "plain commit", e.plainCommit(long, map[TopicPartition]int64{{"t", 0}: 5}), kerr.UnknownServerError)
	allWant(t, "txn commit", e.txnCommit(long, testPID, "", nil, -1, map[TopicPartition]int64{{"t", 1}: 6}), kerr.UnknownServerError)
	e.settle()
	if recs := e.log.records(t, 0); len(recs) != 0 {
		t.Fatalf("%d records written, first of group length %d", len(recs), len(recs[0].Group))
	}
	// Nothing was left pending: Kafka throws before prepareTxnOffsetCommit/addProducerGroup.
	g := e.c.getGroup(long)
	g.mu.Lock()
	pending := len(g.pendingTxnOffsetCommits) + len(g.pendingOffsetCommits)
	g.mu.Unlock()
	e.c.mu.Lock()
	open := len(e.c.mu.openGroupsForProducer)
	e.c.mu.Unlock()
	if pending != 0 || open != 0 {
		t.Fatalf("pending offsets %d, producers with open groups %d", pending, open)
	}

	// The longest id that fits is written whole.
	max := strings.Repeat("m", maxStringLen)
	allNil(t, "commit at the limit", e.plainCommit(max, map[TopicPartition]int64{{"t", 0}: 7}))
	recs := e.log.records(t, 0)
	if len(recs) != 1 || recs[0].Group != max || recs[0].Offset == nil || recs[0].Offset.Offset != 7 {
		t.Fatalf("records at the limit: %d, group length %d", len(recs), len(recs[0].Group))
	}
}

func TestOffsetCommitMetadataOverInt16IsRefused(t *testing.T) {
	// offset.metadata.max.bytes raised past what the value's int16 length carries.
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1; c.OffsetMetadataMaxBytes = 1 << 20 })
	errs := e.c.CommitOffsets(t.Context(), CommitRequest{GroupID: "g", GenerationID: -1, Offsets: map[TopicPartition]OffsetAndMetadata{
		{"t", 0}: {Offset: 1, LeaderEpoch: -1, Metadata: strings.Repeat("x", 40000), ExpireTimestamp: -1},
		{"t", 1}: {Offset: 2, LeaderEpoch: -1, ExpireTimestamp: -1},
	}})
	allWant(t, "commit", errs, kerr.UnknownServerError)
	e.settle()
	if recs := e.log.records(t, 0); len(recs) != 0 {
		t.Fatalf("%d records written", len(recs))
	}
}

// syncWith runs a two-step join of one dynamic member in group, then its SyncGroup as leader.
func syncWith(t *testing.T, e *env, group, clientID string) (*JoinResult, *SyncResult) {
	t.Helper()
	var mu sync.Mutex
	var jr *JoinResult
	join := func(memberID string) {
		e.c.HandleJoinGroup(JoinRequest{GroupID: group, MemberID: memberID, RequireKnownMemberID: true,
			ClientID: clientID, ClientHost: "/127.0.0.1", SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
			ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: consumerMeta("t")}}}, func(r JoinResult) {
			mu.Lock()
			jr = &r
			mu.Unlock()
		})
		e.settle()
	}
	join("")
	mu.Lock()
	first := jr
	jr = nil
	mu.Unlock()
	if first == nil || first.Err != kerr.MemberIDRequired {
		t.Fatalf("first join %+v", first)
	}
	join(first.MemberID)
	e.advance(3 * time.Second)
	mu.Lock()
	r := jr
	mu.Unlock()
	if r == nil || r.Err != nil || r.LeaderID != r.MemberID {
		t.Fatalf("join %+v", r)
	}
	var sr *SyncResult
	e.c.HandleSyncGroup(SyncRequest{GroupID: group, GenerationID: r.GenerationID, MemberID: r.MemberID,
		Assignments: map[string][]byte{r.MemberID: []byte("a")}}, func(s SyncResult) {
		mu.Lock()
		sr = &s
		mu.Unlock()
	})
	e.settle()
	mu.Lock()
	defer mu.Unlock()
	if sr == nil {
		t.Fatalf("SyncGroup not answered")
	}
	return r, sr
}

func TestSyncGroupOfGroupIDOverInt16IsRefused(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	long := strings.Repeat("g", 70000)
	jr, sr := syncWith(t, e, long, "client")
	mustErr(t, "leader sync", sr.Err, kerr.UnknownServerError)
	g := e.c.getGroup(long)
	g.mu.Lock()
	state := g.state
	g.mu.Unlock()
	if state != CompletingRebalance {
		t.Fatalf("state %s, want CompletingRebalance", state)
	}
	// The member leaves: the group goes Empty in a new generation whose record cannot be
	// written either, and the cleanup that then removes the Dead group has no tombstone to
	// write for it.
	top, _ := e.c.LeaveGroup(long, []MemberIdentity{{MemberID: jr.MemberID}})
	mustErr(t, "leave", top, nil)
	e.advance(time.Second)
	g.mu.Lock()
	state, gen := g.state, g.generationID
	g.mu.Unlock()
	if state != Empty || gen != 2 {
		t.Fatalf("after the leave: %s generation %d, want Empty generation 2", state, gen)
	}
	e.c.CleanupGroupMetadata()
	e.settle()
	if e.c.getGroup(long) != nil {
		t.Fatal("the empty group was not removed")
	}
	if recs := e.log.records(t, 0); len(recs) != 0 {
		t.Fatalf("%d records written, first of group length %d", len(recs), len(recs[0].Group))
	}
}

func TestSyncGroupOfMemberIDOverInt16IsRefused(t *testing.T) {
	// The client id fits a request header's int16 string; the member id made of it and a
	// UUID does not fit the group record.
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	jr, sr := syncWith(t, e, "g", strings.Repeat("c", maxStringLen))
	if len(jr.MemberID) <= maxStringLen {
		t.Fatalf("member id of %d bytes", len(jr.MemberID))
	}
	mustErr(t, "leader sync", sr.Err, kerr.UnknownServerError)
	if recs := e.log.records(t, 0); len(recs) != 0 {
		t.Fatalf("%d records written", len(recs))
	}
}

func TestRecordEncodersRefuseStringsOverInt16(t *testing.T) {
	long := strings.Repeat("x", maxStringLen+1)
	inst := long
	proto := long
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType = "consumer"
	m := kmsg.NewGroupMetadataValueMember()
	m.MemberID, m.ClientID, m.ClientHost = "m", "c", "h"
	for name, fn := range map[string]func() error{
		"offset key group": func() error { _, err := encodeOffsetCommitKey(long, TopicPartition{"t", 0}); return err },
		"offset key topic": func() error { _, err := encodeOffsetCommitKey("g", TopicPartition{long, 0}); return err },
		"offset value": func() error {
			_, err := encodeOffsetCommitValue(OffsetAndMetadata{Metadata: long, ExpireTimestamp: -1})
			return err
		},
		"group key":     func() error { _, err := encodeGroupMetadataKey(long); return err },
		"protocol type": func() error { w := v; w.ProtocolType = long; _, err := encodeGroupMetadataValue(&w); return err },
		"protocol":      func() error { w := v; w.Protocol = &proto; _, err := encodeGroupMetadataValue(&w); return err },
		"member id": func() error {
			w, mm := v, m
			mm.MemberID = long
			w.Members = []kmsg.GroupMetadataValueMember{mm}
			_, err := encodeGroupMetadataValue(&w)
			return err
		},
		"instance id": func() error {
			w, mm := v, m
			mm.InstanceID = &inst
			w.Members = []kmsg.GroupMetadataValueMember{mm}
			_, err := encodeGroupMetadataValue(&w)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := fn(); !errors.Is(err, ErrFieldTooLong) {
				t.Fatalf("error %v, want ErrFieldTooLong", err)
			}
		})
	}
}
