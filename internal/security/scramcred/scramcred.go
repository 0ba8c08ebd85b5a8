// Package scramcred is Kafka's ScramCredential and its string form in ZooKeeper
// (ScramCredentialUtils): "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>".
// Credentials are derived as ScramFormatter does (RFC 5802 without SASLprep: the password's
// UTF-8 bytes are used as they are), so a credential written by Kafka's tools verifies here
// and the other way round.
package scramcred

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"strconv"
	"strings"
)

// Mechanisms Kafka supports for SCRAM.
const (
	SHA256 = "SCRAM-SHA-256"
	SHA512 = "SCRAM-SHA-512"
)

// Iteration bounds of both mechanisms (ScramMechanism.minIterations/maxIterations). Parse
// does not enforce them (Kafka reads whatever is stored); New and the admin APIs do.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// Credential is one user's salted credential for one mechanism.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// Mechanisms lists the SCRAM mechanism names, in Kafka's order.
func Mechanisms() []string { return []string{SHA256, SHA512} }

// IsMechanism reports whether name is a SCRAM mechanism Kafka supports.
func IsMechanism(name string) bool { return name == SHA256 || name == SHA512 }

// Hash returns the hash function of a SCRAM mechanism.
func Hash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case SHA256:
		return sha256.New, nil
	case SHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unsupported SCRAM mechanism %q (supported: %s)", mechanism, strings.Join(Mechanisms(), ", "))
}

const (
	keySalt       = "salt"
	keyStoredKey  = "stored_key"
	keyServerKey  = "server_key"
	keyIterations = "iterations"
)

// String writes the credential as ScramCredentialUtils.credentialToString.
func (c Credential) String() string {
	enc := base64.StdEncoding
	return keySalt + "=" + enc.EncodeToString(c.Salt) + "," +
		keyStoredKey + "=" + enc.EncodeToString(c.StoredKey) + "," +
		keyServerKey + "=" + enc.EncodeToString(c.ServerKey) + "," +
		keyIterations + "=" + strconv.Itoa(c.Iterations)
}

// Parse reads the form String writes, with ScramCredentialUtils.credentialFromString's
// rules: comma-separated key=value tokens, exactly the four keys (a repeated key keeps its
// last value), standard base64 with optional padding.
func Parse(s string) (Credential, error) {
	invalid := func(cause error) (Credential, error) {
		if cause != nil {
			return Credential{}, fmt.Errorf("credentials not valid: %w", cause)
		}
		return Credential{}, errors.New("credentials not valid: expected salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>")
	}
	// Java's String.split drops trailing empty tokens; an empty token elsewhere is an error.
	tokens := strings.Split(s, ",")
	for len(tokens) > 0 && tokens[len(tokens)-1] == "" {
		tokens = tokens[:len(tokens)-1]
	}
	props := make(map[string]string, 4)
	for _, tok := range tokens {
		i := strings.IndexByte(tok, '=')
		if i <= 0 {
			return invalid(nil)
		}
		props[tok[:i]] = tok[i+1:]
	}
	if len(props) != 4 {
		return invalid(nil)
	}
	var c Credential
	for _, f := range []struct {
		key string
		dst *[]byte
	}{{keySalt, &c.Salt}, {keyStoredKey, &c.StoredKey}, {keyServerKey, &c.ServerKey}} {
		v, ok := props[f.key]
		if !ok {
			return invalid(nil)
		}
		b, err := decodeBase64(v)
		if err != nil {
			return invalid(fmt.Errorf("%s: %w", f.key, err))
		}
		*f.dst = b
	}
	it, ok := props[keyIterations]
	if !ok {
		return invalid(nil)
	}
	n, err := strconv.ParseInt(it, 10, 32)
	if err != nil {
		return invalid(fmt.Errorf("iterations: %w", err))
	}
	c.Iterations = int(n)
	return c, nil
}

// decodeBase64 accepts padded and unpadded standard base64, as java.util.Base64's basic
// decoder does.
func decodeBase64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("illegal line break in base64")
	}
	if strings.HasSuffix(s, "=") || len(s)%4 == 0 {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// New derives a credential for password with a fresh random salt, as
// ScramFormatter.generateCredential does (the salt is the UTF-8 form of a random 130-bit
// number written in base 36, like Kafka's).
func New(mechanism, password string, iterations int) (Credential, error) {
	salt, err := randomSalt()
	if err != nil {
		return Credential{}, fmt.Errorf("generate SCRAM salt: %w", err)
	}
	return NewWithSalt(mechanism, password, salt, iterations)
}

func randomSalt() ([]byte, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 130))
	if err != nil {
		return nil, err
	}
	return []byte(n.Text(36)), nil
}

// NewWithSalt derives a credential from a given salt (tests, and known-answer checks).
func NewWithSalt(mechanism, password string, salt []byte, iterations int) (Credential, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("iterations %d out of range for %s: must be between %d and %d",
			iterations, mechanism, MinIterations, MaxIterations)
	}
	salted, err := SaltedPassword(mechanism, password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return FromSaltedPassword(mechanism, salt, salted, iterations)
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations) over the password's UTF-8
// bytes (ScramFormatter.saltedPassword; Kafka applies no SASLprep).
func SaltedPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h, err := Hash(mechanism)
	if err != nil {
		return nil, err
	}
	if iterations < 1 {
		return nil, fmt.Errorf("iterations %d: must be positive", iterations)
	}
	key, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return nil, fmt.Errorf("derive SCRAM salted password: %w", err)
	}
	return key, nil
}

// FromSaltedPassword completes a credential from a salted password, as the broker does for
// AlterUserScramCredentials (the client sends salt and salted password, never the
// password): StoredKey = H(HMAC(salted, "Client Key")), ServerKey = HMAC(salted, "Server Key").
func FromSaltedPassword(mechanism string, salt, saltedPassword []byte, iterations int) (Credential, error) {
	h, err := Hash(mechanism)
	if err != nil {
		return Credential{}, err
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(saltedPassword, "Client Key")
	d := h()
	d.Write(clientKey)
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  d.Sum(nil),
		ServerKey:  mac(saltedPassword, "Server Key"),
		Iterations: iterations,
	}, nil
}
