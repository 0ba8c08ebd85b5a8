package broker

// 42_delete_groups.go — DeleteGroups v0-2 (KafkaApis.handleDeleteGroupsRequest): only Empty
// groups are deleted (NON_EMPTY_GROUP otherwise), with tombstones in __consumer_offsets.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 2, (*APIs).handleDeleteGroups) }

func (a *APIs) handleDeleteGroups(ctx context.Context, rc *RequestContext, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	errs := a.groupCoordinator().DeleteGroups(ctx, req.Groups)
	for _, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = id, errCode(errs[id])
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
