// Package integration holds tests that run a real ZooKeeper and real samsa brokers, driven
// by real Kafka clients (sarama, franz-go, kcat).
package integration
