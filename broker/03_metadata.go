package broker

// 03_metadata.go — Metadata (key 3) v0-12, answered from the metadata cache as
// KafkaApis.handleTopicMetadataRequest does in ZK mode:
//   - v0 empty topic list = all topics; v1+ null = all, empty = none.
//   - Unknown topics are auto-created through the AutoCreateTopic hook when
//     auto.create.topics.enable and the request allows it (always before v4, never for an
//     all-topics request); they answer LEADER_NOT_AVAILABLE until the controller elected
//     leaders; a failed creation answers its own error (e.g. INVALID_REPLICATION_FACTOR).
//   - A partition whose leader is not alive: leader -1 and LEADER_NOT_AVAILABLE; alive but
//     without the request's listener: LISTENER_NOT_FOUND (v6+).
//   - v10+ topic ids; v12 topics by id (UNKNOWN_TOPIC_ID). Names and ids in v10/v11
//     requests must be name-only (INVALID_REQUEST otherwise), as in Kafka.
//   - Authorization (authz.go): topics without DESCRIBE are left out of an all-topics
//     answer and TOPIC_AUTHORIZATION_FAILED when named; auto-creation needs CREATE on the
//     cluster or the topic. Authorized operations (v8+, when asked) are the principal's;
//     without an authorizer, every operation.
// Deviation: internal topics are not created here (the group coordinator will do that).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 12, (*APIs).handleMetadata) }

func (a *APIs) handleMetadata(ctx context.Context, rc *RequestContext, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	mc := a.Metadata
	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)

	if !allTopics && req.Version < 12 {
		for _, t := range req.Topics {
			if t.Topic == nil || t.TopicID != ([16]byte{}) {
				// Kafka throws InvalidRequestException: every topic gets INVALID_REQUEST.
				for _, t := range req.Topics {
					rt := kmsg.NewMetadataResponseTopic()
					rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, kerr.InvalidRequest.Code
					resp.Topics = append(resp.Topics, rt)
				}
				return resp, nil
			}
		}
	}

	// Brokers: the live brokers that have the listener this request came in on.
	for _, b := range mc.AliveBrokers() {
		ep, ok := b.Endpoint(rc.ListenerName)
		if !ok {
			continue
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = b.ID, ep.Host, ep.Port, b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	if req.Version >= 2 {
		id := a.ClusterID
		resp.ClusterID = &id
	}
	resp.ControllerID = mc.ControllerID()
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = a.clusterAuthorizedOperations(rc)
	}

	var names []string
	byID := map[string][16]byte{} // v12: names asked for by topic id
	if allTopics {
		names = mc.TopicNames()
	} else {
		seen := map[string]bool{}
		for _, t := range req.Topics {
			if t.Topic == nil { // v12 by id
				name, ok := mc.TopicName(t.TopicID)
				if !ok {
					rt := kmsg.NewMetadataResponseTopic()
					rt.TopicID, rt.ErrorCode = t.TopicID, kerr.UnknownTopicID.Code
					resp.Topics = append(resp.Topics, rt)
					continue
				}
				if !seen[name] {
					seen[name] = true
					names = append(names, name)
					byID[name] = t.TopicID
				}
				continue
			}
			if !seen[*t.Topic] {
				seen[*t.Topic] = true
				names = append(names, *t.Topic)
			}
		}
	}

	// KafkaApis: topics the principal may not DESCRIBE are left out of an all-topics
	// answer and answered TOPIC_AUTHORIZATION_FAILED when named, without saying whether
	// they exist. Auto-creating a missing topic needs CREATE on the cluster or the topic.
	describable := a.filterAuthorized(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, n := range names {
			add(n)
		}
	})
	autoCreateRequested := a.Config != nil && a.Config.AutoCreateTopicsEnable && (req.Version < 4 || req.AllowAutoTopicCreation)
	creatable := authzSet{}
	if autoCreateRequested && !allTopics {
		var missing []string
		for _, n := range names {
			if describable.has(n) && !mc.Contains(n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 && !a.authorizeCluster(rc, kmsg.ACLOperationCreate) {
			creatable = a.filterAuthorized(rc, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, func(add func(string)) {
				for _, n := range missing {
					add(n)
				}
			})
		}
	}

	allowAutoCreate := autoCreateRequested && a.AutoCreateTopic != nil && !allTopics
	errorUnavailableEndpoints := req.Version == 0
	errorUnavailableListeners := req.Version >= 6
	topicOps := req.Version >= 8 && req.IncludeTopicAuthorizedOperations

	for _, name := range names {
		if !describable.has(name) {
			if allTopics {
				continue
			}
			rt := kmsg.NewMetadataResponseTopic()
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			if id, ok := byID[name]; ok {
				rt.TopicID = id // ids are not secret; the name is
			} else {
				n := name
				rt.Topic = &n
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		t, ok := mc.Topic(name)
		if !ok {
			rt := kmsg.NewMetadataResponseTopic()
			n := name
			rt.Topic, rt.IsInternal = &n, isInternalTopicName(name)
			if !creatable.has(name) {
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			switch {
			case validateTopicName(name) != nil:
				rt.ErrorCode = kerr.InvalidTopicException.Code
			case allowAutoCreate:
				rt.ErrorCode = a.autoCreateTopic(ctx, rc, name)
			default:
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			if topicOps {
				rt.AuthorizedOperations = a.authorizedOperations(rc, kmsg.ACLResourceTypeTopic, name)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt := a.topicMetadata(rc, req, t, errorUnavailableEndpoints, errorUnavailableListeners)
		if topicOps {
			rt.AuthorizedOperations = a.authorizedOperations(rc, kmsg.ACLResourceTypeTopic, name)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// autoCreateTopic runs the hook and returns the code Metadata reports for the new topic.
func (a *APIs) autoCreateTopic(ctx context.Context, rc *RequestContext, name string) int16 {
	err := a.AutoCreateTopic(ctx, name)
	code := ErrorCode(err)
	switch code {
	case 0, kerr.TopicAlreadyExists.Code, kerr.RequestTimedOut.Code:
		// Created (or being created by someone else): no leader yet.
		if err == nil {
			rc.Log.WithField("topic", name).Info("auto-created topic")
		}
		return kerr.LeaderNotAvailable.Code
	}
	rc.Log.WithError(err).WithField("topic", name).Info("topic auto-creation failed")
	return code
}

// topicMetadata is ZkMetadataCache.getPartitionMetadata for one known topic.
func (a *APIs) topicMetadata(rc *RequestContext, req *kmsg.MetadataRequest, t *TopicMetadata, errorUnavailableEndpoints, errorUnavailableListeners bool) kmsg.MetadataResponseTopic {
	mc := a.Metadata
	rt := kmsg.NewMetadataResponseTopic()
	n := t.Name
	rt.Topic, rt.TopicID, rt.IsInternal = &n, t.ID, isInternalTopicName(t.Name)
	// filter keeps the replicas Metadata may list: all of them, except for v0 clients,
	// which only get replicas that are alive with the listener.
	filter := func(ids []int32) []int32 {
		if !errorUnavailableEndpoints {
			return ids
		}
		out := make([]int32, 0, len(ids))
		for _, id := range ids {
			if b, ok := mc.Broker(id); ok {
				if _, ok := b.Endpoint(rc.ListenerName); ok {
					out = append(out, id)
				}
			}
		}
		return out
	}
	for _, p := range sortedPartitionIDs(t) {
		pm := t.Partitions[p]
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition, rp.LeaderEpoch = p, pm.LeaderEpoch
		rp.Replicas, rp.ISR = filter(pm.Replicas), filter(pm.ISR)
		rp.OfflineReplicas = filter(pm.OfflineReplicas)
		if rp.OfflineReplicas == nil {
			rp.OfflineReplicas = []int32{}
		}
		leader, alive := mc.Broker(pm.Leader)
		_, hasListener := leader.Endpoint(rc.ListenerName)
		switch {
		case !alive:
			rp.Leader, rp.ErrorCode = NoLeader, kerr.LeaderNotAvailable.Code
		case !hasListener:
			rp.Leader, rp.ErrorCode = NoLeader, kerr.LeaderNotAvailable.Code
			if errorUnavailableListeners {
				rp.ErrorCode = kerr.ListenerNotFound.Code
			}
		default:
			rp.Leader = pm.Leader
			if len(rp.Replicas) < len(pm.Replicas) || len(rp.ISR) < len(pm.ISR) {
				rp.ErrorCode = kerr.ReplicaNotAvailable.Code
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

func sortedPartitionIDs(t *TopicMetadata) []int32 {
	ids := make([]int32, 0, len(t.Partitions))
	for p := range t.Partitions {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	return ids
}

// isInternalTopicName is Topic.isInternal.
func isInternalTopicName(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}
