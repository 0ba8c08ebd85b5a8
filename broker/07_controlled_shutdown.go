package broker

// 07_controlled_shutdown.go — ControlledShutdown v0-3 (KafkaApis.handleControlledShutdownRequest),
// sent by a broker that is shutting down to the controller. Only the active controller
// handles it (controller.ControlledShutdown, in order with its other events); elsewhere the
// controller package answers NOT_CONTROLLER.
// Deviation for now: v1-3 only. v0 (request header v0, pre-0.9 brokers) parses in conn.go, but
// kmsg cannot encode it, so the table test cannot frame it yet; Kafka 3.7 advertises v0-3.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(1, 3, (*APIs).handleControlledShutdown) }

func (a *APIs) handleControlledShutdown(ctx context.Context, rc *RequestContext, req *kmsg.ControlledShutdownRequest) (kmsg.Response, error) {
	ad := a.admin()
	if ad == nil || ad.controller == nil {
		resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	resp := ad.controller.ControlledShutdown(ctx, req)
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
