package broker

// 37_create_partitions.go — CreatePartitions v0-3 (KafkaApis.handleCreatePartitionsRequest,
// ZkAdminManager.createPartitions, AdminZkClient.createNewPartitionsAssignment). Served only
// by the active controller. The new assignment (existing partitions plus the new ones) is
// written to /brokers/topics/<t> conditionally on the version read; the controller's topic
// data watch creates the partitions. Like CreateTopics, the answer waits for leaders of all
// the topic's partitions (DelayedCreatePartitions) up to timeout_ms.
// ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED (authz.go).
// The controller mutation quota (controller_mutation_quota.go) charges each new partition,
// strictly from v3 (THROTTLING_QUOTA_EXCEEDED), and sets throttle_time_ms.
// Deviations: a concurrent change of the topic znode (Kafka writes unconditionally) is
// retried from a fresh read.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() { registerAPI(0, 3, (*APIs).handleCreatePartitions) }

func (a *APIs) handleCreatePartitions(ctx context.Context, rc *RequestContext, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	mq := a.controllerMutationQuotas().newQuotaFor(rc, 3)
	add := func(topic string, err error) {
		r := kmsg.NewCreatePartitionsResponseTopic()
		r.Topic = topic
		r.ErrorCode, r.ErrorMessage = apiErrorParts(err)
		resp.Topics = append(resp.Topics, r)
	}

	ad := a.admin()
	if !ad.isController() {
		for _, t := range req.Topics {
			add(t.Topic, &apiError{code: kerr.NotController})
		}
		return resp, nil
	}

	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	marked, markedErr := ad.zk.GetTopicsMarkedForDeletion()
	type pending struct {
		topic string
		parts []int32
		err   error
	}
	var todo []*pending
	var errs []*pending
	reported := map[string]bool{}
	// KafkaApis: ALTER on each (not duplicated) topic.
	alterable := a.filterAuthorized(rc, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, t := range req.Topics {
			if count[t.Topic] == 1 {
				add(t.Topic)
			}
		}
	})
	for _, t := range req.Topics {
		switch {
		case count[t.Topic] > 1:
			if !reported[t.Topic] {
				reported[t.Topic] = true
				errs = append(errs, &pending{topic: t.Topic, err: newAPIError(kerr.InvalidRequest, "Duplicate topic in request.")})
			}
		case !alterable.has(t.Topic):
			errs = append(errs, &pending{topic: t.Topic, err: newAPIError(kerr.TopicAuthorizationFailed, "The topic authorization is failed.")})
		case markedErr == nil && containsString(marked, t.Topic):
			errs = append(errs, &pending{topic: t.Topic, err: newAPIError(kerr.InvalidTopicException, "The topic is queued for deletion.")})
		default:
			p := &pending{topic: t.Topic}
			if markedErr != nil {
				p.err = markedErr
			} else {
				p.parts, p.err = ad.createPartitionsWithQuota(t, req.ValidateOnly, mq)
			}
			if isThrottlingError(p.err) {
				ad.log.WithField("topic", t.Topic).Debug("partition(s) creation not allowed because quota is violated")
			} else if p.err != nil {
				ad.log.WithError(p.err).WithField("topic", t.Topic).Info("error processing create partitions request")
			}
			todo = append(todo, p)
		}
	}

	anyOK := false
	for _, p := range todo {
		anyOK = anyOK || p.err == nil
	}
	if anyOK && !req.ValidateOnly {
		missing := func(p *pending) bool { return ad.missingLeaders(p.topic, p.parts) > 0 }
		if req.TimeoutMillis > 0 {
			ad.waitFor(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond, func() bool {
				for _, p := range todo {
					if p.err == nil && missing(p) {
						return false
					}
				}
				return true
			})
		}
		for _, p := range todo {
			if p.err == nil && (req.TimeoutMillis <= 0 || missing(p)) {
				p.err = &apiError{code: kerr.RequestTimedOut}
			}
		}
	}
	for _, p := range todo {
		add(p.topic, p.err)
	}
	for _, p := range errs {
		add(p.topic, p.err)
	}
	throttleControllerMutation(rc, mq, &resp.ThrottleMillis)
	return resp, nil
}

// createPartitions is one topic of ZkAdminManager.createPartitions. It returns every
// partition id of the topic after the change.
func (ad *adminState) createPartitions(t kmsg.CreatePartitionsRequestTopic, validateOnly bool) ([]int32, error) {
	for attempt := 0; ; attempt++ {
		parts, err := ad.tryCreatePartitions(t, validateOnly)
		if errors.Is(err, zkmeta.ErrBadVersion) && attempt < 3 {
			continue // the topic znode changed under us: recompute from a fresh read
		}
		return parts, err
	}
}

func (ad *adminState) tryCreatePartitions(t kmsg.CreatePartitionsRequestTopic, validateOnly bool) ([]int32, error) {
	topic := t.Topic
	allBrokers, err := ad.liveBrokers()
	if err != nil {
		return nil, err
	}
	brokerIDs := make(map[int32]bool, len(allBrokers))
	for _, b := range allBrokers {
		brokerIDs[b.ID] = true
	}

	existing, version, err := ad.zk.GetTopic(topic)
	if errors.Is(err, zkmeta.ErrNoNode) {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", topic)
	}
	if err != nil {
		return nil, err
	}
	if len(existing.Partitions) == 0 {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", topic)
	}
	if len(existing.Adding) > 0 || len(existing.Removing) > 0 {
		return nil, newAPIError(kerr.ReassignmentInProgress, "A partition reassignment is in progress for the topic '%s'.", topic)
	}
	oldN := int32(len(existing.Partitions))
	increment := t.Count - oldN
	if increment < 0 {
		return nil, newAPIError(kerr.InvalidPartitions, "Topic currently has %d partitions, which is higher than the requested %d.", oldN, t.Count)
	} else if increment == 0 {
		return nil, newAPIError(kerr.InvalidPartitions, "Topic already has %d partitions.", oldN)
	}

	var manual map[int32][]int32
	if t.Assignment != nil {
		var unknown []string
		seen := map[int32]bool{}
		for _, as := range t.Assignment {
			for _, b := range as.Replicas {
				if !brokerIDs[b] && !seen[b] {
					seen[b] = true
					unknown = append(unknown, fmt.Sprint(b))
				}
			}
		}
		if len(unknown) > 0 {
			return nil, newAPIError(kerr.InvalidReplicaAssignment, "Unknown broker(s) in replica assignment: %s.", strings.Join(unknown, ", "))
		}
		if int32(len(t.Assignment)) != increment {
			return nil, newAPIError(kerr.InvalidReplicaAssignment, "Increasing the number of partitions by %d but %d assignments provided.", increment, len(t.Assignment))
		}
		manual = make(map[int32][]int32, len(t.Assignment))
		for i, as := range t.Assignment {
			manual[oldN+int32(i)] = as.Replicas
		}
	}

	// AdminZkClient.createNewPartitionsAssignment
	p0, ok := existing.Partitions[0]
	if !ok {
		return nil, newAPIError(kerr.UnknownServerError, "Unexpected existing replica assignment for topic '%s', partition id 0 is missing. Assignment: %s", topic, formatAssignment(existing.Partitions))
	}
	var added map[int32][]int32
	if manual != nil {
		if err := validateNewPartitionsAssignment(manual, len(p0), brokerIDs); err != nil {
			return nil, err
		}
		added = manual
	} else {
		start := int32(0)
		if len(p0) > 0 {
			for i, b := range allBrokers {
				if b.ID >= p0[0] {
					start = int32(i)
					break
				}
			}
		}
		added, err = assignReplicas(allBrokers, increment, int16(len(p0)), start, oldN)
		if err != nil {
			return nil, err
		}
	}
	combined := make(map[int32][]int32, len(existing.Partitions)+len(added))
	for p, r := range existing.Partitions {
		combined[p] = r
	}
	for p, r := range added {
		combined[p] = r
	}
	if validateOnly {
		return sortedPartitions(combined), nil
	}
	next := existing
	next.Partitions = combined
	if err := ad.zk.SetTopicAssignment(topic, next, version); err != nil {
		return nil, fmt.Errorf("write assignment of %s: %w", topic, err)
	}
	ad.log.WithFields(logrus.Fields{"topic": topic, "partitions": len(combined), "added": formatAssignment(added)}).
		Info("created partitions")
	return sortedPartitions(combined), nil
}

// validateNewPartitionsAssignment is AdminZkClient.validateReplicaAssignment.
func validateNewPartitionsAssignment(a map[int32][]int32, rf int, available map[int32]bool) error {
	ids := make([]string, 0, len(available))
	sortedIDs := make([]int32, 0, len(available))
	for id := range available {
		sortedIDs = append(sortedIDs, id)
	}
	sort.Slice(sortedIDs, func(i, j int) bool { return sortedIDs[i] < sortedIDs[j] })
	for _, id := range sortedIDs {
		ids = append(ids, fmt.Sprint(id))
	}
	var badParts, badRFs []int32
	for _, p := range sortedPartitions(a) {
		replicas := a[p]
		if len(replicas) == 0 {
			return newAPIError(kerr.InvalidReplicaAssignment, "Cannot have replication factor of 0 for partition id %d.", p)
		}
		seen := map[int32]bool{}
		for _, b := range replicas {
			if seen[b] {
				return newAPIError(kerr.InvalidReplicaAssignment, "Duplicate brokers not allowed in replica assignment: %s for partition id %d.",
					formatList("", replicas, ""), p)
			}
			seen[b] = true
		}
		for _, b := range replicas {
			if !available[b] {
				return newAPIError(kerr.BrokerNotAvailable, "Some brokers specified for partition id %d are not available. Specified brokers: %s, available brokers: %s.",
					p, formatList("", replicas, ""), strings.Join(ids, ", "))
			}
		}
		if len(replicas) != rf {
			badParts = append(badParts, p)
			badRFs = append(badRFs, int32(len(replicas)))
		}
	}
	if len(badParts) > 0 {
		return newAPIError(kerr.InvalidReplicaAssignment, "Inconsistent replication factor between partitions, partition 0 has %d while partitions [%s] have replication factors [%s], respectively.",
			rf, formatList("", badParts, ""), formatList("", badRFs, ""))
	}
	return nil
}
