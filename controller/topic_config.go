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

// uncleanLeaderElectionEnableEvent is KafkaController's UncleanLeaderElectionEnable: the
// broker-level default changed (dynamic broker config).
type uncleanLeaderElectionEnableEvent struct{ enable bool }

func (uncleanLeaderElectionEnableEvent) String() string { return "UncleanLeaderElectionEnable" }

// SetDefaultUncleanLeaderElection applies a dynamic change of the broker's
// unclean.leader.election.enable (KafkaController.enableDefaultUncleanLeaderElection): later
// terms and the running one use it; when it turns on, the active controller runs the
// offline election again, so leaderless partitions of topics without their own override
// may elect an out-of-sync replica (a topic override still wins in the election).
func (c *Controller) SetDefaultUncleanLeaderElection(enable bool) {
	c.mu.Lock()
	c.mu.uncleanDefault = &enable
	loop := c.mu.loop
	c.mu.Unlock()
	if loop != nil {
		loop.queue.put(uncleanLeaderElectionEnableEvent{enable: enable})
	}
}

func (l *eventLoop) onUncleanLeaderElectionEnable(enable bool) error {
	was := l.cfg.UncleanLeaderElectionEnable
	l.cfg.UncleanLeaderElectionEnable = enable
	if !enable || was {
		return nil
	}
	l.log.Info("unclean leader election has been enabled by default")
	return l.triggerOnlinePartitionStateChange()
}
