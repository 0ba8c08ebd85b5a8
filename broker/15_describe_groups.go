package broker

// 15_describe_groups.go — DescribeGroups v0-5 (KafkaApis.handleDescribeGroupsRequest).
// An unknown group is described as state "Dead" with no error. v3+ authorized operations are
// not computed (no authorizer): Int.MinValue, as Kafka sends when not requested.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 5, (*APIs).handleDescribeGroups) }

func (a *APIs) handleDescribeGroups(ctx context.Context, rc *RequestContext, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	c := a.groupCoordinator()
	for _, id := range req.Groups {
		s, err := c.DescribeGroup(id)
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.ErrorCode = id, errCode(err)
		g.State, g.ProtocolType, g.Protocol = s.State, s.ProtocolType, s.Protocol
		g.AuthorizedOperations = -2147483648
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
