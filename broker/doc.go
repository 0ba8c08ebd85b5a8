// Package broker is a samsa broker process: the Kafka wire-protocol server (SocketServer,
// KafkaApis), the partitions it hosts (ReplicaManager), its metadata cache, and KafkaServer's
// start and stop order. It hosts this process's controller and coordinators.
package broker
