package controller

// Dynamic topic config on the controller: KafkaController.enableTopicUncleanLeaderElection.
// When a broker's TopicConfigHandler sees unclean.leader.election.enable switched on for a
// topic and that broker is the active controller, the controller re-reads the override and
// runs the offline election for the topic's leaderless partitions
// (TopicUncleanLeaderElectionEnable event).

import (
	"strconv"

	"github.com/sirupsen/logrus"
)

type topicUncleanLeaderElectionEnableEvent struct{ topic string }

func (topicUncleanLeaderElectionEnableEvent) String() string {
	return "TopicUncleanLeaderElectionEnable"
}

// TopicConfigChanged tells the active controller that a topic's config changed (called by
// the broker's config change listener). Nothing happens on a broker that is not the
// active controller.
func (c *Controller) TopicConfigChanged(topic string) {
	if loop := c.activeLoop(); loop != nil {
		loop.queue.put(topicUncleanLeaderElectionEnableEvent{topic: topic})
	}
}

func (l *eventLoop) onTopicUncleanLeaderElectionEnable(topic string) error {
	t := l.ctx.topics[topic]
	if t == nil || l.ctx.topicsToDelete[topic] {
		return nil
	}
	cfg, err := l.zk.GetTopicConfig(topic)
	if err != nil {
		return err
	}
	t.unclean = nil
	if v, ok := cfg["unclean.leader.election.enable"]; ok {
		if b, perr := strconv.ParseBool(v); perr == nil {
			t.unclean = &b
		}
	}
	if t.unclean == nil || !*t.unclean {
		return nil
	}
	var offline []TopicPartition
	for _, tp := range l.ctx.partitionsInStates(OfflinePartition) {
		if tp.Topic == topic {
			offline = append(offline, tp)
		}
	}
	if len(offline) == 0 {
		return nil
	}
	l.log.WithFields(logrus.Fields{"topic": topic, "partitions": len(offline)}).Info("unclean leader election enabled for topic; electing offline partitions")
	b := newRequestBatch()
	if err := l.electOffline(offline, false, b); err != nil {
		return err
	}
	l.sendBatch(b)
	return nil
}
