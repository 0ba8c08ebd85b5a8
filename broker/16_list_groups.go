package broker

// 16_list_groups.go — ListGroups v0-4 (KafkaApis.handleListGroupsRequest): the groups this
// broker coordinates; v4 filters by state (KIP-518).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 4, (*APIs).handleListGroups) }

func (a *APIs) handleListGroups(ctx context.Context, rc *RequestContext, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	var states []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	groups, err := a.groupCoordinator().ListGroups(states)
	resp.ErrorCode = errCode(err)
	// KafkaApis: DESCRIBE on the cluster lists every group, else only the groups the
	// principal may DESCRIBE.
	all := a.authorizeCluster(rc, kmsg.ACLOperationDescribe)
	for _, g := range groups {
		if !all && !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.GroupID) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState = g.GroupID, g.ProtocolType, g.State
		resp.Groups = append(resp.Groups, lg)
	}
	return resp, nil
}
