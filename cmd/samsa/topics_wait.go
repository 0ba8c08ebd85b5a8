package main

// topics_wait.go: after a successful CreateTopics, wait until every live broker's metadata
// has the new topic with a leader for each partition. In ZooKeeper mode the controller
// answers CreateTopics once its own metadata cache has the leaders
// (DelayedCreatePartitions); the other brokers learn the topic from an UpdateMetadata that
// may still be on its way, so a describe sent at once through them could miss it. Kafka's
// own admin-client users close that window the same way (TestUtils.createTopic waits for
// the metadata of every broker).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicMetadataPollInterval is the pause between two rounds of Metadata requests.
const topicMetadataPollInterval = 50 * time.Millisecond

// waitTopicOnAllBrokers polls Metadata on every live broker until each reports topic with
// partitions partitions (-1: any number) all led, or ctx ends, or a broker answers with an
// error that waiting cannot cure (TOPIC_AUTHORIZATION_FAILED for a principal that may
// create but not describe). It returns nil once they all have it, and otherwise why not.
func waitTopicOnAllBrokers(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	for {
		err := topicOnAllBrokers(ctx, cl, topic, partitions)
		if err == nil {
			return nil
		}
		if errors.Is(err, errTopicWaitFinal) {
			return err
		}
		t := time.NewTimer(topicMetadataPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for every broker's metadata of %s: %w", topic, err)
		case <-t.C:
		}
	}
}

// errTopicWaitFinal marks a metadata answer that ends the wait.
var errTopicWaitFinal = errors.New("not waiting for the topic's metadata")

// topicOnAllBrokers asks each live broker (as the cluster's metadata lists them) for the
// topic's metadata; nil if all of them have it with leaders.
func topicOnAllBrokers(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	first, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := topicLed(first, topic, partitions); err != nil {
		return err
	}
	for _, b := range first.Brokers {
		resp, err := cl.Broker(int(b.NodeID)).Request(ctx, req)
		if err != nil {
			return fmt.Errorf("broker %d: %w", b.NodeID, err)
		}
		if err := topicLed(resp.(*kmsg.MetadataResponse), topic, partitions); err != nil {
			return fmt.Errorf("broker %d: %w", b.NodeID, err)
		}
	}
	return nil
}

// topicLed checks one broker's answer: the topic without error, the expected partition
// count, and a leader for every partition.
func topicLed(resp *kmsg.MetadataResponse, topic string, partitions int32) error {
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		switch t.ErrorCode {
		case 0:
		case kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code:
			return kerr.ErrorForCode(t.ErrorCode)
		default:
			return fmt.Errorf("%w: %w", errTopicWaitFinal, kerr.ErrorForCode(t.ErrorCode))
		}
		if len(t.Partitions) == 0 || (partitions > 0 && int32(len(t.Partitions)) != partitions) {
			return fmt.Errorf("%d of %d partitions known", len(t.Partitions), partitions)
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 { // a partition error with a leader (an offline replica) is fine
				return fmt.Errorf("partition %d has no leader yet", p.Partition)
			}
		}
		return nil
	}
	return fmt.Errorf("topic %s not in the metadata", topic)
}
