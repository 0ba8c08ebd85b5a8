package broker

// api_versions.go — ApiVersions (key 18) v0-3, computed from the registry (apis.go).
// A request above v3 never reaches this handler: the SocketServer answers it with a v0
// UNSUPPORTED_VERSION response listing only ApiVersions, as Kafka does (see
// unsupportedApiVersionsResponse). v3 fields (DefaultApiVersionManager): SupportedFeatures
// is empty (a ZooKeeper-mode broker supports no feature), FinalizedFeatures and
// FinalizedFeaturesEpoch come from the /feature cache (features.go): the znode's features
// and version, none and -1 while it is missing or disabled. ZkMigrationReady stays false
// (no KRaft migration).

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 3, (*APIs).handleApiVersions) }

// softwareNameRe is ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN.
var softwareNameRe = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (a *APIs) handleApiVersions(_ context.Context, _ *RequestContext, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwareNameRe.MatchString(req.ClientSoftwareName) || !softwareNameRe.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = supportedAPIs()
	a.Features.apiVersionsFeatures(resp)
	return resp, nil
}

// unsupportedApiVersionsResponse is Kafka's answer to an ApiVersions request whose version
// it does not know: a v0 body with UNSUPPORTED_VERSION and only ApiVersions' own range.
func unsupportedApiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	minV, maxV, _ := SupportedVersions(18)
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = 18, minV, maxV
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	return resp
}
