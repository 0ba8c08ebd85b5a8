package logstore

import (
	"errors"
	"strings"
	"testing"
)

func TestLogConfigDefaults(t *testing.T) {
	c := DefaultLogConfig()
	if c.SegmentBytes != 1<<30 || c.SegmentMs != 604800000 || c.RetentionMs != 604800000 || c.RetentionBytes != -1 ||
		c.SegmentIndexBytes != 10<<20 || c.IndexIntervalBytes != 4096 || c.MaxMessageBytes != 1048588 ||
		c.CompressionType != "producer" || c.MessageTimestampType != "CreateTime" || c.FileDeleteDelayMs != 60000 ||
		c.MinCleanableDirtyRatio != 0.5 || c.DeleteRetentionMs != 86400000 || !c.Delete() || c.Compact() ||
		c.FlushMessages != longMax || c.FlushMs != longMax || c.MinInSyncReplicas != 1 || c.LocalRetentionMs != -2 {
		t.Fatalf("defaults: %+v", c)
	}
	if v, ok := c.Get("retention.ms"); !ok || v != "604800000" {
		t.Fatalf("Get retention.ms = %q", v)
	}
}

func TestLogConfigPrecedence(t *testing.T) {
	broker := map[string]string{
		"log.retention.hours": "1", "log.retention.minutes": "2", "log.segment.bytes": "1000",
		"log.roll.hours": "2", "log.cleanup.policy": "compact", "message.max.bytes": "5000",
		"log.message.timestamp.difference.max.ms": "60000",
	}
	c, err := NewLogConfig(broker, map[string]string{"segment.bytes": "2000", "cleanup.policy": "compact,delete"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionMs != 120000 { // minutes beat hours
		t.Errorf("retention.ms %d", c.RetentionMs)
	}
	if c.SegmentBytes != 2000 || c.Source("segment.bytes") != SourceTopic {
		t.Errorf("segment.bytes %d source %d", c.SegmentBytes, c.Source("segment.bytes"))
	}
	if c.SegmentMs != 7200000 || c.MaxMessageBytes != 5000 || c.Source("max.message.bytes") != SourceStaticBroker {
		t.Errorf("segment.ms %d max.message.bytes %d", c.SegmentMs, c.MaxMessageBytes)
	}
	if !c.Compact() || !c.Delete() {
		t.Errorf("cleanup.policy %v", c.CleanupPolicy)
	}
	// difference.max.ms stands in for before/after while they are unset.
	if c.MessageTimestampBeforeMaxMs != 60000 || c.MessageTimestampAfterMaxMs != 60000 {
		t.Errorf("timestamp bounds %d %d", c.MessageTimestampBeforeMaxMs, c.MessageTimestampAfterMaxMs)
	}
	c, _ = NewLogConfig(map[string]string{"log.retention.ms": "-5", "log.retention.hours": "1"}, nil)
	if c.RetentionMs != -1 {
		t.Errorf("negative retention -> %d", c.RetentionMs)
	}
	if BrokerSynonym("retention.ms") != "log.retention.ms" || BrokerSynonym("max.message.bytes") != "message.max.bytes" ||
		BrokerSynonym("file.delete.delay.ms") != "log.segment.delete.delay.ms" || BrokerSynonym("remote.storage.enable") != "" {
		t.Error("synonyms")
	}
	if len(TopicConfigNames()) < 30 {
		t.Error("topic config names")
	}
}

func TestLogConfigInvalid(t *testing.T) {
	for _, c := range []struct{ broker, topic map[string]string }{
		{nil, map[string]string{"segment.bytes": "10"}},
		{nil, map[string]string{"retention.ms": "abc"}},
		{nil, map[string]string{"cleanup.policy": "purge"}},
		{nil, map[string]string{"min.cleanable.dirty.ratio": "1.5"}},
		{nil, map[string]string{"message.timestamp.type": "Now"}},
		{nil, map[string]string{"preallocate": "yes"}},
		{map[string]string{"log.segment.bytes": "x"}, nil},
		{nil, map[string]string{"segment.index.bytes": "99999999999"}},
	} {
		_, err := NewLogConfig(c.broker, c.topic)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v %v: %v", c.broker, c.topic, err)
			continue
		}
		for k, v := range c.topic {
			if !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), v) {
				t.Errorf("error %q does not name %s=%s", err, k, v)
			}
		}
	}
	if err := ValidateTopicConfig(map[string]string{"no.such.key": "1"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unknown key: %v", err)
	}
}
