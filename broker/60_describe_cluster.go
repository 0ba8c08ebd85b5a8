package broker

// 60_describe_cluster.go — DescribeCluster v0-1 (KafkaApis.handleDescribeCluster,
// AuthHelper.computeDescribeClusterResponse). Answered by any broker from its metadata
// cache: the live brokers with an endpoint on the listener the request came in on, the
// controller id (-1 when unknown or not among those brokers), the cluster id. A ZK broker
// is a BROKER endpoint (type 1); v1 requests for another type get MISMATCHED_ENDPOINT_TYPE,
// unknown types UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST in v0).
// Authorized operations (when asked): the principal's cluster operations, 0 without
// DESCRIBE on the cluster, all of them without an authorizer (authz.go).
// Deviations: none.

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 1, (*APIs).handleDescribeCluster) }

const (
	endpointTypeBroker     int8 = 1
	endpointTypeController int8 = 2
)

// clusterOperations is the bit field of AclEntry.supportedOperations(CLUSTER): CREATE,
// CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE, all
// allowed without an authorizer (authz.go computes the same from aclSupportedOperations).
const clusterOperations int32 = 1<<5 | 1<<9 | 1<<10 | 1<<11 | 1<<12 | 1<<7 | 1<<8

func (a *APIs) handleDescribeCluster(ctx context.Context, rc *RequestContext, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	et := req.EndpointType
	if req.Version < 1 {
		et = endpointTypeBroker
	}
	if et != endpointTypeBroker && et != endpointTypeController {
		code := kerr.UnsupportedEndpointType.Code
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		resp.ErrorCode = code
		resp.ErrorMessage = strp(fmt.Sprintf("Unsupported endpoint type %d", et))
		return resp, nil
	}
	if et != endpointTypeBroker {
		code := kerr.MismatchedEndpointType.Code
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		resp.ErrorCode = code
		resp.ErrorMessage = strp("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		return resp, nil
	}

	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.IncludeClusterAuthorizedOperations {
		// AuthHelper.computeDescribeClusterResponse: 0 without DESCRIBE on the cluster.
		resp.ClusterAuthorizedOperations = a.clusterAuthorizedOperations(rc)
	}
	resp.ClusterID = a.ClusterID
	resp.EndpointType = endpointTypeBroker
	resp.ControllerID = -1
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{}
	if a.Metadata == nil {
		return resp, nil
	}
	controllerID := a.Metadata.ControllerID()
	for _, b := range a.Metadata.AliveBrokers() {
		e, ok := b.Endpoint(rc.ListenerName)
		if !ok {
			continue
		}
		nb := kmsg.NewDescribeClusterResponseBroker()
		nb.NodeID, nb.Host, nb.Port, nb.Rack = b.ID, e.Host, e.Port, b.Rack
		resp.Brokers = append(resp.Brokers, nb)
		if b.ID == controllerID {
			resp.ControllerID = controllerID
		}
	}
	return resp, nil
}
