package sasl

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/internal/security"
)

// MechanismPlain is SASL/PLAIN (RFC 4616).
const MechanismPlain = "PLAIN"

// plainUsers holds PlainLoginModule's `user_<name>="<password>"` options
// (PlainServerCallbackHandler).
type plainUsers map[string]string

func newPlainUsers(e JAASEntry) plainUsers {
	users := make(plainUsers)
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return users
}

// authenticate compares in constant time, as Utils.isEqualConstantTime does.
func (u plainUsers) authenticate(user, password string) bool {
	want, ok := u[user]
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
}

// plainSession is Kafka's PlainSaslServer: one message, authzid NUL authcid NUL passwd.
type plainSession struct {
	users     plainUsers
	principal security.Principal
	done      bool
}

func (s *plainSession) Step(msg []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, private(MechanismPlain, "unexpected SASL/PLAIN message after authentication completed", nil)
	}
	authzid, user, password, err := parsePlainMessage(msg)
	if err != nil {
		return nil, false, err
	}
	if user == "" {
		return nil, false, public(MechanismPlain, "Authentication failed: username not specified")
	}
	if password == "" {
		return nil, false, public(MechanismPlain, "Authentication failed: password not specified")
	}
	if !s.users.authenticate(user, password) {
		return nil, false, public(MechanismPlain, "Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return nil, false, public(MechanismPlain, "Authentication failed: Client requested an authorization id that is different from username")
	}
	s.principal = security.User(user)
	s.done = true
	return []byte{}, true, nil
}

// parsePlainMessage splits the message as PlainSaslServer.extractTokens does: up to four
// NUL-separated tokens are read, and exactly three are required.
func parsePlainMessage(msg []byte) (authzid, user, password string, err error) {
	s := string(msg)
	tokens := make([]string, 0, 4)
	for i := 0; i < 4; i++ {
		end := strings.IndexByte(s, 0)
		if end < 0 {
			tokens = append(tokens, s)
			break
		}
		tokens = append(tokens, s[:end])
		s = s[end+1:]
	}
	if len(tokens) != 3 {
		return "", "", "", public(MechanismPlain, fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(tokens)))
	}
	return tokens[0], tokens[1], tokens[2], nil
}

func (s *plainSession) Principal() security.Principal { return s.principal }

func (s *plainSession) Expiry() time.Time { return time.Time{} }
