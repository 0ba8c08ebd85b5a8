package broker

// 12_heartbeat.go — Heartbeat v0-4 (KafkaApis.handleHeartbeatRequest); v3+ GroupInstanceId.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 4, (*APIs).handleHeartbeat) }

func (a *APIs) handleHeartbeat(ctx context.Context, rc *RequestContext, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if req.InstanceID != nil && req.Version < 3 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) { // KafkaApis: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	resp.ErrorCode = errCode(a.groupCoordinator().Heartbeat(req.Group, req.MemberID, req.InstanceID, req.Generation))
	return resp, nil
}
