package broker

// Request builders for the group coordinator's keys in TestEveryAdvertisedVersionRoundTrips,
// plus a handler-level test of a whole join/sync/commit/fetch cycle on the data env.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// groupsReady makes the data env's broker lead a one-partition __consumer_offsets, with
// group.initial.rebalance.delay.ms=0, and waits until the coordinator loaded it.
func groupsReady(e *dataEnv) {
	e.t.Helper()
	if e.parts[GroupMetadataTopicName] == 0 {
		e.cfg.OffsetsTopicNumPartitions = 1
		e.cfg.Props["group.initial.rebalance.delay.ms"] = "0"
		e.createTopic(GroupMetadataTopicName, 1)
		e.t.Cleanup(e.apis.ShutdownGroupCoordinator)
	}
	c := e.apis.groupCoordinator()
	tp := logstore.TopicPartition{Topic: GroupMetadataTopicName, Partition: 0}
	c.OnElection(0, e.epochs[tp]-1)
	deadline := time.Now().Add(10 * time.Second)
	for !c.Loaded(0) {
		if time.Now().After(deadline) {
			e.t.Fatalf("offsets partition not loaded")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func expectCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: error %d (%v), want %d", what, got, kerr.ErrorForCode(got), w)
	}
}

// zkOnlyV0 is the answer of the data env (no ZooKeeper) to OffsetCommit/OffsetFetch:
// version 0 lives in ZooKeeper only (offsets_zk.go, tested in offsets_zk_test.go).
func zkOnlyV0(v int16) *kerr.Error {
	if v == 0 {
		return kerr.UnsupportedVersion
	}
	return nil
}

func init() {
	requestBuilders[8] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation, req.MemberID, req.RetentionTimeMillis = "rt-group", -1, "", -1
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = "rt"
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			md := "m"
			p.Partition, p.Offset, p.Metadata, p.LeaderEpoch, p.Timestamp = 0, int64(v)+1, &md, -1, -1
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.OffsetCommitResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("offset commit response %+v", resp)
			}
			expectCode(t, "offset commit", resp.Topics[0].Partitions[0].ErrorCode, zkOnlyV0(resp.Version))
		},
	}
	requestBuilders[9] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrOffsetFetchRequest()
			if v >= 8 {
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group = "rt-group"
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = "rt", []int32{0, 1}
				g.Topics = append(g.Topics, gt)
				req.Groups = append(req.Groups, g)
				return req
			}
			req.Group = "rt-group"
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic, t.Partitions = "rt", []int32{0, 1}
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.OffsetFetchResponse)
			n := 0
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					expectCode(t, "offset fetch partition", p.ErrorCode, zkOnlyV0(resp.Version))
					n++
				}
			}
			for _, g := range resp.Groups {
				expectCode(t, "offset fetch group", g.ErrorCode, nil)
				for _, tp := range g.Topics {
					n += len(tp.Partitions)
				}
			}
			expectCode(t, "offset fetch", resp.ErrorCode, nil)
			if n != 2 {
				t.Fatalf("offset fetch: %d partitions, want 2: %+v", n, resp)
			}
		},
	}
	requestBuilders[10] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = "rt-group"
			req.CoordinatorKeys = []string{"rt-group"}
			return req
		},
	}
	requestBuilders[11] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group = fmt.Sprintf("rt-join-v%d", v)
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 6000, 6000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 1}
			req.Protocols = append(req.Protocols, p)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.JoinGroupResponse)
			if resp.Version >= 4 {
				expectCode(t, "join", resp.ErrorCode, kerr.MemberIDRequired)
				if resp.MemberID == "" {
					t.Fatalf("MEMBER_ID_REQUIRED without a member id")
				}
				return
			}
			expectCode(t, "join", resp.ErrorCode, nil)
			if resp.Generation != 1 || resp.LeaderID != resp.MemberID || len(resp.Members) != 1 {
				t.Fatalf("join response %+v", resp)
			}
		},
	}
	requestBuilders[12] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = "rt-nogroup", 1, "m"
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			expectCode(t, "heartbeat", r.(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
		},
	}
	requestBuilders[13] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group, req.MemberID = "rt-nogroup", "m"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			req.Members = append(req.Members, m)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.LeaveGroupResponse)
			if resp.Version < 3 {
				expectCode(t, "leave", resp.ErrorCode, kerr.UnknownMemberID)
				return
			}
			expectCode(t, "leave", resp.ErrorCode, nil)
			if len(resp.Members) != 1 {
				t.Fatalf("leave response %+v", resp)
			}
			expectCode(t, "leave member", resp.Members[0].ErrorCode, kerr.UnknownMemberID)
		},
	}
	requestBuilders[14] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = "rt-nogroup", 1, "m"
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			expectCode(t, "sync", r.(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
		},
	}
	requestBuilders[15] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{"rt-nogroup"}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DescribeGroupsResponse)
			if len(resp.Groups) != 1 || resp.Groups[0].State != "Dead" || resp.Groups[0].ErrorCode != 0 {
				t.Fatalf("describe response %+v", resp)
			}
		},
	}
	requestBuilders[16] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			return kmsg.NewPtrListGroupsRequest()
		},
		check: func(t *testing.T, r kmsg.Response) {
			expectCode(t, "list groups", r.(*kmsg.ListGroupsResponse).ErrorCode, nil)
		},
	}
	requestBuilders[42] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{"rt-nogroup"}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DeleteGroupsResponse)
			if len(resp.Groups) != 1 {
				t.Fatalf("delete groups response %+v", resp)
			}
			expectCode(t, "delete groups", resp.Groups[0].ErrorCode, kerr.GroupIDNotFound)
		},
	}
	requestBuilders[47] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Group = "rt-nogroup"
			t := kmsg.NewOffsetDeleteRequestTopic()
			t.Topic = "rt"
			t.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			expectCode(t, "offset delete", r.(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
		},
	}
}
