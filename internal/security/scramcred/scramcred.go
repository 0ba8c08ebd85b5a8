// Package scramcred is Kafka's ScramCredential and its string form in ZooKeeper
// (ScramCredentialUtils): "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>".
package scramcred

// Mechanisms Kafka supports for SCRAM.
const (
	SHA256 = "SCRAM-SHA-256"
	SHA512 = "SCRAM-SHA-512"
)

// Credential is one user's salted credential for one mechanism.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}
