// Package controller is classic Kafka's KafkaController (ZooKeeper mode, Kafka 3.7): election
// through the ephemeral /controller znode and /controller_epoch, one event loop that owns the
// cluster state, and the requests (LeaderAndIsr, UpdateMetadata, StopReplica) it sends to brokers.
//
// Files and their Kafka counterparts:
//
//	controller.go       KafkaController: Config, New, Run (campaign, term, resignation), IsActive, Epoch, AlterPartition
//	events.go           ControllerEventManager: the event types and the unbounded event queue
//	loop.go             KafkaController.process and its handlers (failover, broker change, topic change, ...): the I/O
//	decisions.go        PartitionStateMachine / ReplicaStateMachine decisions as plain functions of the context
//	election.go         PartitionLeaderElectionAlgorithms: pure election functions
//	state.go            ControllerContext and the partition states
//	request_batch.go    ControllerBrokerRequestBatch: builds LeaderAndIsr, UpdateMetadata, StopReplica
//	channel_manager.go  ControllerChannelManager / RequestSendThread: one queue and sender per live broker
//	alter_partition.go  AlterPartition (ISR changes proposed by leaders)
//	topic_deletion.go   TopicDeletionManager (simplified)
//	controlled_shutdown.go  ControlledShutdown (doControlledShutdown) and the shutting-down broker set
//	preferred_election.go   preferred-replica election, auto leader rebalance, ElectLeaders
//	assignment.go       AdminUtils.assignReplicasToBrokers (used by the brokers' CreateTopics/CreatePartitions)
//	session_guard.go    a term writes only in the ZooKeeper session it was elected in
//	log_dir_failure.go  LogDirEventNotification, LeaderAndIsrResponseReceived (KAFKA_STORAGE_ERROR), replicasOnOfflineDirs
//
// Model (etcd raft's Ready idea): ZooKeeper watches and requests only enqueue events; one
// goroutine processes them in order. A handler reads what it needs from ZooKeeper into the
// controllerContext, calls a decision (controllerContext.decide*) that returns the partition
// state writes to make, performs them (each fenced by /controller_epoch's zkVersion: a deposed
// controller's write fails with zkmeta.ErrControllerMoved and the term ends), and queues the
// resulting requests per broker. testdata/ holds scripted step tests of this loop.
//
// A term ends when its ZooKeeper session does: the loop checks the session before every
// event and every write is refused once the client has a new session, so a controller that
// was paused or partitioned past its session timeout changes nothing when it wakes. Malformed
// JSON in a topic or partition state znode is logged with its path and that topic is left
// out of the context (skipped) until its znodes change or the next failover.
//
// Not yet: ISR-change notifications (pre-2.7 IBP).
package controller
