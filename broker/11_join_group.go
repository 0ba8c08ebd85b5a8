package broker

// 11_join_group.go — JoinGroup v0-9 (KafkaApis.handleJoinGroupRequest). v0 has no rebalance
// timeout (the session timeout is used); v4+ members without an id get MEMBER_ID_REQUIRED;
// v5+ static membership; v9 SkipAssignment. The request waits for the rebalance.

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
)

func init() { registerAPI(0, 9, (*APIs).handleJoinGroup) }

func (a *APIs) handleJoinGroup(ctx context.Context, rc *RequestContext, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if req.InstanceID != nil && req.Version < 5 {
		// Kafka: UNSUPPORTED_VERSION for a group instance id below v5.
		resp.ErrorCode, resp.Generation = kerr.UnsupportedVersion.Code, -1
		return resp, nil
	}
	if !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) { // KafkaApis: READ on the group
		resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
		if req.Version < 7 {
			empty := "" // JoinGroupRequest.getErrorResponse: UNKNOWN_PROTOCOL_NAME before v7
			resp.Protocol = &empty
		}
		return resp, nil
	}
	jr := group.JoinRequest{
		GroupID: req.Group, MemberID: req.MemberID, GroupInstanceID: req.InstanceID,
		RequireKnownMemberID: req.Version >= 4, SkipAssignmentOK: req.Version >= 9,
		ClientID: rc.ClientID, ClientHost: clientHost(rc),
		SessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		ProtocolType:     req.ProtocolType,
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	if req.Reason != nil {
		jr.Reason = *req.Reason
	}
	for _, p := range req.Protocols {
		// Copy: the request's bytes alias the connection's frame buffer, reused for the
		// next request, and the group keeps member metadata.
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	r := a.groupCoordinator().JoinGroup(ctx, jr)
	resp.ErrorCode = errCode(r.Err)
	resp.Generation, resp.MemberID, resp.LeaderID = r.GenerationID, r.MemberID, r.LeaderID
	resp.ProtocolType, resp.Protocol, resp.SkipAssignment = r.ProtocolType, r.ProtocolName, r.SkipAssignment
	if req.Version < 7 && resp.Protocol == nil {
		empty := "" // non-nullable before v7
		resp.Protocol = &empty
	}
	for _, m := range r.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.GroupInstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
