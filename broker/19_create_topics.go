package broker

// 19_create_topics.go — CreateTopics v0-7 (KafkaApis.handleCreateTopicsRequest and
// ZkAdminManager.createTopics). Served only by the active controller; other brokers answer
// NOT_CONTROLLER. The handling broker validates, assigns replicas over the registered
// brokers and writes the topic znodes; the controller's topic watch elects the leaders. The
// response waits (DelayedCreatePartitions) until every new partition has a leader in this
// broker's metadata cache or timeout_ms passes (then REQUEST_TIMED_OUT, as Kafka: the topic
// is created anyway). timeout_ms <= 0 answers REQUEST_TIMED_OUT at once for created topics.
// CREATE on the cluster or the topic, else TOPIC_AUTHORIZATION_FAILED; without
// DESCRIBE_CONFIGS the answer carries no configs (topic_config_error_code
// TOPIC_AUTHORIZATION_FAILED). __cluster_metadata is never created, as in Kafka.
// The controller mutation quota (controller_mutation_quota.go) charges each created
// partition, strictly from v6 (THROTTLING_QUOTA_EXCEEDED), and sets throttle_time_ms.
// Deviations: no CreateTopicPolicy.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 7, (*APIs).handleCreateTopics) }

// clusterMetadataTopicName is Topic.CLUSTER_METADATA_TOPIC_NAME, which CreateTopics refuses.
const clusterMetadataTopicName = "__cluster_metadata"

func (a *APIs) handleCreateTopics(ctx context.Context, rc *RequestContext, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	mq := a.controllerMutationQuotas().newQuotaFor(rc, 6)
	results := make([]*kmsg.CreateTopicsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		r := kmsg.NewCreateTopicsResponseTopic()
		r.Topic = req.Topics[i].Topic
		results[i] = &r
	}
	finish := func() kmsg.Response {
		resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(results))
		for i, r := range results {
			resp.Topics[i] = *r
		}
		throttleControllerMutation(rc, mq, &resp.ThrottleMillis)
		return resp
	}

	ad := a.admin()
	if !ad.isController() {
		for _, r := range results {
			r.ErrorCode = kerr.NotController.Code
		}
		return finish(), nil
	}

	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	type pending struct {
		idx     int
		res     *kmsg.CreateTopicsResponseTopic
		created createdTopic
		err     error
		// hideConfigs: no DESCRIBE_CONFIGS, so the result says only whether it worked.
		hideConfigs bool
	}
	// KafkaApis: CREATE on the cluster, or else on each topic; DESCRIBE_CONFIGS on a topic
	// decides whether its configs, partition count, replication factor and id are returned
	// (TOPIC_AUTHORIZATION_FAILED in topic_config_error_code otherwise). The KRaft metadata
	// topic's name is never creatable.
	allTopics := func(add func(string)) {
		for _, t := range req.Topics {
			if t.Topic != clusterMetadataTopicName {
				add(t.Topic)
			}
		}
	}
	creatable := authzSet{}
	if !a.authorizeCluster(rc, kmsg.ACLOperationCreate) {
		creatable = a.filterAuthorized(rc, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, allTopics)
	}
	describable := a.filterAuthorized(rc, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, allTopics)
	var todo []*pending
	for i, t := range req.Topics {
		showConfigs := describable.has(t.Topic) && t.Topic != clusterMetadataTopicName
		if !showConfigs {
			results[i].ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		if count[t.Topic] > 1 {
			results[i].ErrorCode = kerr.InvalidRequest.Code
			m := "Found multiple entries for this topic."
			results[i].ErrorMessage = &m
			continue
		}
		if !creatable.has(t.Topic) || t.Topic == clusterMetadataTopicName {
			results[i].ErrorCode = kerr.TopicAuthorizationFailed.Code
			m := "Authorization failed."
			results[i].ErrorMessage = &m
			continue
		}
		todo = append(todo, &pending{idx: i, res: results[i], hideConfigs: !showConfigs})
	}

	live, liveErr := ad.liveBrokers()
	for _, p := range todo {
		t := req.Topics[p.idx]
		spec := topicSpec{Name: t.Topic, NumPartitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, Configs: map[string]string{}}
		if len(t.ReplicaAssignment) > 0 {
			spec.Assignment = make(map[int32][]int32, len(t.ReplicaAssignment))
			for _, ra := range t.ReplicaAssignment {
				spec.Assignment[ra.Partition] = ra.Replicas
			}
		}
		for _, c := range t.Configs {
			if c.Value == nil {
				spec.NullConfigs = append(spec.NullConfigs, c.Name)
				continue
			}
			spec.Configs[c.Name] = *c.Value
		}
		if liveErr != nil {
			p.err = liveErr
			continue
		}
		p.created, p.err = ad.createTopicWithQuota(spec, req.ValidateOnly, live, mq)
		if p.err != nil {
			code, _ := apiErrorParts(p.err)
			entry := ad.log.WithError(p.err).WithField("topic", t.Topic)
			if isThrottlingError(p.err) {
				entry.Debug("topic creation not allowed because quota is violated")
			} else if code == kerr.UnknownServerError.Code {
				entry.Error("error processing create topic request")
			} else {
				entry.Info("error processing create topic request")
			}
		}
	}

	// DelayedCreatePartitions: wait for leaders of every successfully created topic.
	anyOK := false
	for _, p := range todo {
		if p.err == nil {
			anyOK = true
		}
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if anyOK && !req.ValidateOnly {
		if req.TimeoutMillis > 0 {
			ad.waitFor(ctx, timeout, func() bool {
				for _, p := range todo {
					if p.err == nil && ad.missingLeaders(p.res.Topic, sortedPartitions(p.created.Assignment)) > 0 {
						return false
					}
				}
				return true
			})
		}
		for _, p := range todo {
			if p.err == nil && (req.TimeoutMillis <= 0 || ad.missingLeaders(p.res.Topic, sortedPartitions(p.created.Assignment)) > 0) {
				p.err = &apiError{code: kerr.RequestTimedOut}
			}
		}
	}

	for _, p := range todo {
		r := p.res
		if p.err == nil && p.hideConfigs {
			r.Configs = []kmsg.CreateTopicsResponseTopicConfig{} // the schema's default: empty, not null
			continue
		}
		if p.created.TopicID != ([16]byte{}) {
			r.TopicID = p.created.TopicID
		}
		if p.err != nil {
			r.ErrorCode, r.ErrorMessage = apiErrorParts(p.err)
			// handleCreateTopicsResults resets what was populated before the failure.
			r.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
			r.NumPartitions, r.ReplicationFactor = -1, -1
			r.ConfigErrorCode = 0
			continue
		}
		r.NumPartitions = int32(len(p.created.Assignment))
		r.ReplicationFactor = int16(len(p.created.Assignment[0]))
		r.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		for _, e := range a.topicConfigEntries(p.created.Overrides, false, false) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.IsSensitive
			r.Configs = append(r.Configs, c)
		}
	}
	return finish(), nil
}
