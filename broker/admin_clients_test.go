package broker

// Admin APIs through real client libraries (sarama's ClusterAdmin and franz-go's kadm), on a
// single in-process broker: the clients find the controller from Metadata, pick versions
// from ApiVersions and parse our responses.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestAdminWithKadm(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	created, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("60000")}, "kadm-topic")
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	ct, err := created.On("kadm-topic", nil)
	if err != nil || ct.Err != nil || ct.NumPartitions != 3 || ct.ID == ([16]byte{}) {
		t.Fatalf("CreateTopics result %+v, %v", ct, err)
	}
	again, _ := adm.CreateTopics(ctx, 3, 1, nil, "kadm-topic")
	if r, _ := again.On("kadm-topic", nil); !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v", r.Err)
	}

	rcs, err := adm.DescribeTopicConfigs(ctx, "kadm-topic")
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On("kadm-topic", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs result %+v, %v", rc, err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = c.MaybeValue() == "60000" && c.Source.String() == "DYNAMIC_TOPIC_CONFIG"
		}
	}
	if !found {
		t.Fatalf("retention.ms not reported as the topic override: %+v", rc.Configs)
	}

	cps, err := adm.CreatePartitions(ctx, 2, "kadm-topic")
	if err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	if r, err := cps.On("kadm-topic", nil); err != nil || r.Err != nil {
		t.Fatalf("CreatePartitions result %+v, %v", r, err)
	}
	if a, _, err := b.ZK().GetTopic("kadm-topic"); err != nil || len(a.Partitions) != 5 {
		t.Fatalf("after CreatePartitions: %+v, %v", a, err)
	}

	meta, err := adm.BrokerMetadata(ctx)
	if err != nil || meta.Controller != 1 || meta.Cluster != b.ClusterID() {
		t.Fatalf("BrokerMetadata %+v, %v", meta, err)
	}
}

func TestAdminWithSarama(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	for _, v := range []sarama.KafkaVersion{sarama.V3_7_0_0, sarama.NewConfig().Version} {
		t.Run(v.String(), func(t *testing.T) {
			cfg := sarama.NewConfig()
			cfg.Version = v
			cfg.Admin.Timeout = 15 * time.Second
			adm, err := sarama.NewClusterAdmin([]string{b.Addr("PLAINTEXT")}, cfg)
			if err != nil {
				t.Fatalf("NewClusterAdmin: %v", err)
			}
			defer adm.Close()
			topic := "sarama-" + v.String()
			retention := "120000"
			err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
				ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
			if err != nil {
				t.Fatalf("CreateTopic: %v", err)
			}
			err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false)
			if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
				t.Fatalf("second CreateTopic: %v", err)
			}
			err = adm.CreateTopic(topic+"-rf", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 3}, false)
			if !errors.Is(err, sarama.ErrInvalidReplicationFactor) {
				t.Fatalf("rf 3 CreateTopic: %v", err)
			}
			entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
			if err != nil {
				t.Fatalf("DescribeConfig: %v", err)
			}
			ok := false
			for _, e := range entries {
				if e.Name == "retention.ms" {
					ok = e.Value == retention && e.Source == sarama.SourceTopic
				}
			}
			if !ok {
				t.Fatalf("retention.ms entry missing or wrong: %+v", entries)
			}
			if err := adm.CreatePartitions(topic, 4, nil, false); err != nil {
				t.Fatalf("CreatePartitions: %v", err)
			}
			if err := adm.CreatePartitions(topic, 3, nil, false); !errors.Is(err, sarama.ErrInvalidPartitions) {
				t.Fatalf("shrinking CreatePartitions: %v", err)
			}
			topics, err := adm.ListTopics()
			if err != nil || topics[topic].NumPartitions != 4 {
				t.Fatalf("ListTopics %v, %v", topics[topic], err)
			}
		})
	}
}
