package broker

// 42_delete_groups.go — DeleteGroups v0-2 (KafkaApis.handleDeleteGroupsRequest): only Empty
// groups are deleted (NON_EMPTY_GROUP otherwise), with tombstones in __consumer_offsets.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 2, (*APIs).handleDeleteGroups) }

func (a *APIs) handleDeleteGroups(ctx context.Context, rc *RequestContext, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	// KafkaApis: DELETE on each group; the unauthorized ones are answered after the rest,
	// each id once.
	var allowed, denied []string
	seen := map[string]bool{}
	for _, id := range req.Groups {
		if seen[id] {
			continue
		}
		seen[id] = true
		if a.authorize(rc, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, id) {
			allowed = append(allowed, id)
		} else {
			denied = append(denied, id)
		}
	}
	if len(denied) == 0 {
		allowed = req.Groups // unchanged when everything is allowed, repeats included
	}
	var errs map[string]*kerr.Error
	if len(allowed) > 0 {
		errs = a.groupCoordinator().DeleteGroups(ctx, allowed)
	}
	for _, id := range allowed {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = id, errCode(errs[id])
		resp.Groups = append(resp.Groups, g)
	}
	for _, id := range denied {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
