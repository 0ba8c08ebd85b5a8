package broker

// quota_fetch.go is FetchContext.getThrottledResponse: what a consumer over its quota gets
// instead of records.

import "github.com/twmb/franz-go/pkg/kmsg"

// throttledResponse empties resp and sets its throttle time: no partitions, error NONE; an
// incremental fetch keeps its session id (the session's epoch has moved on, so the client
// continues the session), a full fetch creates no session (Kafka answers
// INVALID_SESSION_ID = 0 and the client starts over).
func (fc *fetchContext) throttledResponse(resp *kmsg.FetchResponse, throttleMs int32) *kmsg.FetchResponse {
	resp.ThrottleMillis = throttleMs
	resp.ErrorCode = 0
	resp.Topics = nil
	resp.Brokers = nil
	resp.SessionID = 0
	if fc.incremental && fc.session != nil {
		resp.SessionID = fc.session.id
	}
	return resp
}
