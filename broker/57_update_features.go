package broker

// 57_update_features.go — UpdateFeatures v0-1 (KafkaApis.handleUpdateFeatures, ZooKeeper
// mode): ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED), only on the active
// controller (else NOT_CONTROLLER), only when inter.broker.protocol.version supports feature
// versioning (else INVALID_REQUEST "Feature versioning system is disabled."). The controller
// validates and rewrites /feature, then waits up to timeout_ms for this broker's feature
// cache to reach the new epoch (controller/features.go). Top-level errors carry Kafka's
// default messages (new ApiError(error)).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() { registerAPI(0, 1, (*APIs).handleUpdateFeatures) }

func (a *APIs) handleUpdateFeatures(ctx context.Context, rc *RequestContext, req *kmsg.UpdateFeaturesRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	topLevel := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp, nil
	}
	if !a.authorizeCluster(rc, kmsg.ACLOperationAlter) {
		return topLevel(kerr.ClusterAuthorizationFailed.Code, "Cluster authorization failed.")
	}
	ad := a.admin()
	if ad == nil || ad.controller == nil || !ad.isController() {
		return topLevel(kerr.NotController.Code, "This is not the correct controller for this cluster.")
	}
	if enabled, _, err := zkmeta.FeatureVersioning(a.config().InterBrokerProtocolVersion); err != nil || !enabled {
		return topLevel(kerr.InvalidRequest.Code, "Feature versioning system is disabled.")
	}
	out := ad.controller.UpdateFeatures(ctx, req)
	out.SetVersion(req.GetVersion())
	return out, nil
}
