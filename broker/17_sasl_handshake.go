package broker

// 17_sasl_handshake.go — SaslHandshake (key 17) v0-1. On SASL listeners the authenticator
// (conn_security.go) answers every handshake that starts an authentication or a
// re-authentication; a handshake reaching this handler came on a PLAINTEXT or SSL listener, or
// on an authenticated SASL connection that may not re-authenticate now (no session expiry, or
// less than a second since the last re-authentication began). Kafka's KafkaApis answers those
// with ILLEGAL_SASL_STATE and no mechanisms.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 1, (*APIs).handleSaslHandshake) }

func (a *APIs) handleSaslHandshake(_ context.Context, _ *RequestContext, req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}
