package broker

// 13_leave_group.go — LeaveGroup v0-5 (KafkaApis.handleLeaveGroupRequest). v0-2 carry one
// member id; v3+ a batch of members by member id and/or group instance id; v5 a reason.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
)

func init() { registerAPI(0, 5, (*APIs).handleLeaveGroup) }

func (a *APIs) handleLeaveGroup(ctx context.Context, rc *RequestContext, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) { // KafkaApis: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var members []group.MemberIdentity
	if req.Version < 3 {
		members = []group.MemberIdentity{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			mi := group.MemberIdentity{MemberID: m.MemberID, GroupInstanceID: m.InstanceID}
			if m.Reason != nil {
				mi.Reason = *m.Reason
			}
			members = append(members, mi)
		}
	}
	topErr, errs := a.groupCoordinator().LeaveGroup(req.Group, members)
	if topErr != nil {
		resp.ErrorCode = topErr.Code
		return resp, nil
	}
	if req.Version < 3 {
		resp.ErrorCode = errCode(errs[0])
		return resp, nil
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, errCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
