package broker

// 15_describe_groups.go — DescribeGroups v0-5 (KafkaApis.handleDescribeGroupsRequest).
// An unknown group is described as state "Dead" with no error. A group the principal may not
// DESCRIBE answers GROUP_AUTHORIZATION_FAILED and nothing else. v3+ authorized operations,
// when asked, are the principal's group operations (all without an authorizer, authz.go);
// Int.MinValue otherwise, and on groups answered with an error.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 5, (*APIs).handleDescribeGroups) }

func (a *APIs) handleDescribeGroups(ctx context.Context, rc *RequestContext, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	c := a.groupCoordinator()
	for _, id := range req.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.AuthorizedOperations = authorizedOperationsNotRequested
		if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, id) {
			// DescribeGroupsResponse.groupError: nothing about the group but its id.
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		s, err := c.DescribeGroup(id)
		g.Group, g.ErrorCode = id, errCode(err)
		g.State, g.ProtocolType, g.Protocol = s.State, s.ProtocolType, s.Protocol
		if req.Version >= 3 && req.IncludeAuthorizedOperations && err == nil {
			g.AuthorizedOperations = a.authorizedOperations(rc, kmsg.ACLResourceTypeGroup, id)
		}
		for _, m := range s.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.InstanceID, gm.ClientID, gm.ClientHost = m.MemberID, m.GroupInstanceID, m.ClientID, m.ClientHost
			gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
