package broker

// 31_delete_acls.go — DeleteAcls v0-3 (kafka.server.AclApis.handleDeleteAcls): cluster
// ALTER, then every ACL matching each filter is deleted, reported under the first filter
// that matched it. Without an authorizer: SECURITY_DISABLED. UNKNOWN elements and v0 filters
// on patterns other than LITERAL/ANY fail to parse and close the connection, as in Kafka.
// Deviations: none beyond DescribeAcls's message.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security/acl"
)

func init() { registerAPI(0, 3, (*APIs).handleDeleteACLs) }

func (a *APIs) handleDeleteACLs(ctx context.Context, rc *RequestContext, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	// DeleteAclsRequest.normalizeAndValidate.
	for i := range req.Filters {
		f := &req.Filters[i]
		if req.Version == 0 {
			switch f.ResourcePatternType {
			case kmsg.ACLResourcePatternTypeAny:
				f.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
			case kmsg.ACLResourcePatternTypeLiteral:
			default:
				return nil, fmt.Errorf("DeleteAcls v0: version 0 does not support pattern type %s (only LITERAL and ANY are supported)", f.ResourcePatternType)
			}
		}
		if f.ResourcePatternType == kmsg.ACLResourcePatternTypeUnknown || f.ResourceType == kmsg.ACLResourceTypeUnknown ||
			f.Operation == kmsg.ACLOperationUnknown || f.PermissionType == kmsg.ACLPermissionTypeUnknown {
			return nil, fmt.Errorf("DeleteAcls: filters contain UNKNOWN elements")
		}
	}
	fail := func(code int16, msg *string) (kmsg.Response, error) {
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	if !a.authorize(rc, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, clusterResourceName) {
		return fail(kerr.ClusterAuthorizationFailed.Code, aclDeniedMessage(rc))
	}
	adm := a.aclAdmin()
	if adm == nil {
		return fail(kerr.SecurityDisabled.Code, strp("No Authorizer is configured."))
	}
	filters := make([]acl.BindingFilter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = acl.BindingFilter{
			Resource: acl.ResourceFilter{Type: f.ResourceType, Name: f.ResourceName, Pattern: f.ResourcePatternType},
			Entry:    acl.EntryFilter{Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType},
		}
	}
	for _, res := range adm.DeleteAcls(filters) {
		r := kmsg.NewDeleteACLsResponseResult()
		for _, d := range sortedDeleted(res.Deleted) {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ErrorCode, m.ErrorMessage = aclErrorCode(d.Err)
			b := d.Binding
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.Resource.Type, b.Resource.Name, b.Resource.Pattern
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Entry.Principal, b.Entry.Host, b.Entry.Operation, b.Entry.Permission
			r.MatchingACLs = append(r.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
