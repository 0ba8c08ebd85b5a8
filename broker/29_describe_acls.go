package broker

// 29_describe_acls.go — DescribeAcls v0-3 (kafka.server.AclApis.handleDescribeAcls): cluster
// DESCRIBE, then the authorizer's cached ACLs matching the filter, grouped per resource
// pattern. Without an authorizer: SECURITY_DISABLED. A filter with an UNKNOWN element, or a
// v0 filter on a pattern type other than LITERAL/ANY, fails to parse in Kafka, which closes
// the connection; so do we. Deviations: the CLUSTER_AUTHORIZATION_FAILED message names the
// API and principal instead of Kafka's dump of the request.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security/acl"
)

func init() { registerAPI(0, 3, (*APIs).handleDescribeACLs) }

func (a *APIs) handleDescribeACLs(ctx context.Context, rc *RequestContext, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	// DescribeAclsRequest.normalizeAndValidate.
	if req.Version == 0 {
		switch req.ResourcePatternType {
		case kmsg.ACLResourcePatternTypeAny:
			req.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		case kmsg.ACLResourcePatternTypeLiteral:
		default:
			return nil, fmt.Errorf("DescribeAcls v0: version 0 only supports literal resource pattern types, got %s", req.ResourcePatternType)
		}
	}
	if req.ResourcePatternType == kmsg.ACLResourcePatternTypeUnknown || req.ResourceType == kmsg.ACLResourceTypeUnknown ||
		req.PermissionType == kmsg.ACLPermissionTypeUnknown || req.Operation == kmsg.ACLOperationUnknown {
		return nil, fmt.Errorf("DescribeAcls: request contains UNKNOWN elements")
	}
	if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, clusterResourceName) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, aclDeniedMessage(rc)
		return resp, nil
	}
	adm := a.aclAdmin()
	if adm == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = strp("No Authorizer is configured on the broker")
		return resp, nil
	}
	filter := acl.BindingFilter{
		Resource: acl.ResourceFilter{Type: req.ResourceType, Name: req.ResourceName, Pattern: req.ResourcePatternType},
		Entry:    acl.EntryFilter{Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType},
	}
	resp.Resources = aclResourcesOf(adm.Acls(filter))
	return resp, nil
}

// aclDeniedMessage is the message of the ClusterAuthorizationException AuthHelper throws.
func aclDeniedMessage(rc *RequestContext) *string {
	if rc == nil {
		return strp("Request is not authorized.")
	}
	return strp(fmt.Sprintf("Request %s from %s at %s is not authorized.", kmsg.NameForKey(rc.APIKey), rc.Principal, aclHost(rc)))
}
