// Package zkmeta is samsa's KafkaZkClient: every znode path Kafka uses with its exact JSON
// (znodes.go), conditional writes by zkVersion, watches delivered as events, chroot
// support, and session expiry handling. Nothing above it sees go-zookeeper errors.
package zkmeta
