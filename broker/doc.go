// Package broker is a samsa broker process: the Kafka wire-protocol server (SocketServer,
// KafkaApis), the partitions it hosts (ReplicaManager), its metadata cache, and KafkaServer's
// start and stop order. It hosts this process's controller and coordinators.
//
// SimBroker (sim.go) runs one broker's replication path — ReplicaManager, partitions,
// replica fetchers, log store — without goroutines, for the deterministic simulation in
// integration/sim.
package broker
