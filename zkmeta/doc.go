// Package zkmeta is samsa's KafkaZkClient: every znode path Kafka uses with its exact JSON
// (znodes.go), conditional writes by zkVersion, watches delivered as events, chroot
// support, and session expiry handling. Nothing above it sees go-zookeeper errors.
//
// Files:
//   - znodes.go: ZkData. Paths and the JSON codecs of each znode, byte-for-byte as Kafka 3.7
//     writes them (key order pinned; readers never depend on it).
//   - client.go: KafkaZkClient + the topic/config writes of AdminZkClient: cluster id, broker
//     id generation and registration (broker epoch = czxid), topics, configs and their change
//     notifications, partition state, controller election and epoch-fenced controller writes.
//   - session.go: ZooKeeperClient. Connection, chroot (go-zookeeper has none: every path is
//     prefixed, event paths and sequential names are stripped), session events, one-shot
//     watches as channels, retry after connection loss, multi with the /controller_epoch check.
//   - errors.go: sentinels and the go-zookeeper error mapping.
//
// Sessions: go-zookeeper reconnects by itself; within the session timeout the session, its
// ephemeral nodes and its watches survive. When the server has expired the session, the client
// opens a new one: SessionEvents delivers SessionExpired then SessionReestablished, armed
// watches fire EventNotWatching with ErrSessionExpired, and the broker calls ReRegisterBroker.
//
// Concurrency: a Client is safe for concurrent use. It owns one goroutine for session state
// and one per armed watch; Close ends them all and waits.
package zkmeta
