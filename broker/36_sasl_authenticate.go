package broker

// 36_sasl_authenticate.go — SaslAuthenticate (key 36) v0-2. The authenticator
// (conn_security.go) consumes every SaslAuthenticate of an exchange in progress; one reaching
// this handler came outside an exchange (a PLAINTEXT or SSL listener, or an authenticated
// SASL connection), which Kafka's KafkaApis answers with ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 2, (*APIs).handleSaslAuthenticate) }

func (a *APIs) handleSaslAuthenticate(_ context.Context, _ *RequestContext, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp, nil
}
