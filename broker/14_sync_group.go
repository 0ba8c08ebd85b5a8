package broker

// 14_sync_group.go — SyncGroup v0-5 (KafkaApis.handleSyncGroupRequest). v3+ GroupInstanceId;
// v5 ProtocolType/ProtocolName, checked with INCONSISTENT_GROUP_PROTOCOL. Followers wait for
// the leader's assignment.

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
)

func init() { registerAPI(0, 5, (*APIs).handleSyncGroup) }

func (a *APIs) handleSyncGroup(ctx context.Context, rc *RequestContext, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.MemberAssignment = []byte{}
	if req.InstanceID != nil && req.Version < 3 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) { // KafkaApis: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	sr := group.SyncRequest{GroupID: req.Group, GenerationID: req.Generation, MemberID: req.MemberID,
		GroupInstanceID: req.InstanceID, Assignments: map[string][]byte{}}
	if req.Version >= 5 {
		sr.ProtocolType, sr.ProtocolName = req.ProtocolType, req.Protocol
	}
	for _, ga := range req.GroupAssignment {
		// Copy: the bytes alias the connection's reused frame buffer; the group keeps them.
		sr.Assignments[ga.MemberID] = bytes.Clone(ga.MemberAssignment)
	}
	r := a.groupCoordinator().SyncGroup(ctx, sr)
	resp.ErrorCode = errCode(r.Err)
	resp.ProtocolType, resp.Protocol = r.ProtocolType, r.ProtocolName
	if r.Assignment != nil {
		resp.MemberAssignment = r.Assignment
	}
	return resp, nil
}
