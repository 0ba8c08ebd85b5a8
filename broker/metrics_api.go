package broker

// metrics_api.go — metrics the request handlers mark: kafka.server BrokerTopicMetrics
// (KafkaApis / ReplicaManager mark them in Kafka).

import "github.com/samsa-kafka/samsa/internal/metrics"

// apiMetrics are the meters the handlers mark. A nil *apiMetrics (APIs built by hand in
// tests) marks nothing.
type apiMetrics struct {
	messagesIn *metrics.TopicMeter
}

func newAPIMetrics(reg *metrics.Registry) *apiMetrics {
	return &apiMetrics{
		messagesIn: reg.TopicMeter("server", "BrokerTopicMetrics", "MessagesInPerSec", "Records appended by produce requests"),
	}
}
