// Package controller is classic Kafka's KafkaController: election through the ephemeral
// /controller znode and /controller_epoch, one event loop that owns the cluster state,
// and the requests (LeaderAndIsr, UpdateMetadata, StopReplica) it sends to brokers.
package controller
