package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

// The grammar of Kafka's ScramMessages, in RE2 form (Java's class intersections spelled
// out). Kafka accepts only gs2 flag "n" (no channel binding) and ignores a reserved "m="
// extension and any trailing extensions other than tokenauth.
const (
	reAlpha     = `[A-Za-z]+`
	reValue     = `[\x01-\x2B\x2D-\x7F]+`                      // [\x01-\x7F] but ','
	rePrintable = `[\x21-\x2B\x2D-\x7E]+`                      // [\x21-\x7E] but ','
	reSaslName  = `(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+` // '=' only as an escape
	reB64Char   = `[a-zA-Z0-9/+]`
	reBase64    = `(?:` + reB64Char + `{4})*(?:` + reB64Char + `{3}=|` + reB64Char + `{2}==)?`
	reReserved  = `(?:m=` + reValue + `,)?`
	reExts      = `(?:,` + reAlpha + `=` + reValue + `)*`
)

var (
	scramClientFirstRE = regexp.MustCompile(`^n,(?:a=(` + reSaslName + `))?,` + reReserved +
		`n=(` + reSaslName + `),r=(` + rePrintable + `)(` + reExts + `)$`)
	scramClientFinalRE = regexp.MustCompile(`^c=(` + reBase64 + `),r=(` + rePrintable + `)` + reExts +
		`,p=(` + reBase64 + `)$`)
)

// scramClientFirst is ScramMessages.ClientFirstMessage.
type scramClientFirst struct {
	authzid    string // as sent: Kafka compares it to the user name without unescaping
	saslName   string
	nonce      string
	extensions string // ",k=v,..." as sent, possibly empty
	extMap     map[string]string
}

func parseScramClientFirst(msg []byte) (scramClientFirst, error) {
	m := scramClientFirstRE.FindStringSubmatch(string(msg))
	if m == nil {
		return scramClientFirst{}, errors.New("invalid SCRAM client first message format")
	}
	f := scramClientFirst{authzid: m[1], saslName: m[2], nonce: m[3], extensions: m[4], extMap: map[string]string{}}
	if f.extensions != "" {
		for _, kv := range strings.Split(f.extensions[1:], ",") {
			k, v, _ := strings.Cut(kv, "=")
			f.extMap[k] = v
		}
	}
	return f, nil
}

// bare is client-first-message-bare for the auth message. Kafka rebuilds it from the parsed
// fields (so a reserved "m=" part is left out); extensions are kept as the client sent them.
func (f scramClientFirst) bare() string {
	return "n=" + f.saslName + ",r=" + f.nonce + f.extensions
}

// tokenAuth is ScramExtensions.tokenAuthenticated: Boolean.parseBoolean of "tokenauth".
func (f scramClientFirst) tokenAuth() bool {
	return strings.EqualFold(f.extMap["tokenauth"], "true")
}

// scramClientFinal is ScramMessages.ClientFinalMessage.
type scramClientFinal struct {
	channelBinding []byte
	nonce          string
	proof          []byte
}

func parseScramClientFinal(msg []byte) (scramClientFinal, error) {
	m := scramClientFinalRE.FindStringSubmatch(string(msg))
	if m == nil {
		return scramClientFinal{}, errors.New("invalid SCRAM client final message format")
	}
	cb, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		return scramClientFinal{}, fmt.Errorf("invalid SCRAM client final message channel binding: %w", err)
	}
	proof, err := base64.StdEncoding.DecodeString(m[3])
	if err != nil {
		return scramClientFinal{}, fmt.Errorf("invalid SCRAM client final message proof: %w", err)
	}
	return scramClientFinal{channelBinding: cb, nonce: m[2], proof: proof}, nil
}

// withoutProof is client-final-message-without-proof as Kafka rebuilds it (extensions dropped).
func (f scramClientFinal) withoutProof() string {
	return "c=" + base64.StdEncoding.EncodeToString(f.channelBinding) + ",r=" + f.nonce
}

// scramUsername is ScramFormatter.username: "=2C" → ","; any '=' left that does not start
// "=3D" is an error; then "=3D" → "=".
func scramUsername(saslName string) (string, error) {
	u := strings.ReplaceAll(saslName, "=2C", ",")
	if strings.Contains(strings.ReplaceAll(u, "=3D", ""), "=") {
		return "", fmt.Errorf("invalid username: %s", saslName)
	}
	return strings.ReplaceAll(u, "=3D", "="), nil
}

// scramNonce is ScramFormatter.secureRandomString: a random 130-bit number in base 36.
func scramNonce() (string, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 130))
	if err != nil {
		return "", err
	}
	return n.Text(36), nil
}

type scramState int

const (
	scramReceiveClientFirst scramState = iota
	scramReceiveClientFinal
	scramComplete
	scramFailed
)

// scramSession is Kafka's ScramSaslServer for one mechanism.
type scramSession struct {
	mechanism string
	hash      func() hash.Hash
	store     CredentialStore
	nonceGen  func() (string, error)

	state       scramState
	username    string
	cred        scramcred.Credential
	clientFirst scramClientFirst
	serverFirst string
	nonce       string // client nonce + server nonce
}

func (s *scramSession) Step(msg []byte) ([]byte, bool, error) {
	reply, err := s.step(msg)
	if err != nil {
		s.state = scramFailed
		s.cred = scramcred.Credential{}
		return nil, false, err
	}
	return reply, s.state == scramComplete, nil
}

func (s *scramSession) step(msg []byte) ([]byte, error) {
	switch s.state {
	case scramReceiveClientFirst:
		first, err := parseScramClientFirst(msg)
		if err != nil {
			return nil, private(s.mechanism, err.Error(), nil)
		}
		serverNonce, err := s.nonceGen()
		if err != nil {
			return nil, private(s.mechanism, "Authentication failed: Credentials could not be obtained", err)
		}
		user, err := scramUsername(first.saslName)
		if err != nil {
			return nil, private(s.mechanism, "Authentication failed: Credentials could not be obtained", err)
		}
		if first.tokenAuth() {
			// Delegation tokens are not served: every token id is unknown, as it would be to
			// a Kafka broker holding no tokens.
			return nil, private(s.mechanism, "Token Authentication failed: Invalid tokenId : "+user, nil)
		}
		cred, ok := s.store.ScramCredential(s.mechanism, user)
		if !ok {
			return nil, private(s.mechanism, "Authentication failed: Invalid user credentials", nil)
		}
		if first.authzid != "" && first.authzid != user {
			return nil, public(s.mechanism, "Authentication failed: Client requested an authorization id that is different from username")
		}
		if cred.Iterations < scramcred.MinIterations {
			return nil, private(s.mechanism, fmt.Sprintf("Iterations %d is less than the minimum %d for %s",
				cred.Iterations, scramcred.MinIterations, s.mechanism), nil)
		}
		s.username, s.cred, s.clientFirst = user, cred, first
		s.nonce = first.nonce + serverNonce
		s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) +
			",i=" + strconv.Itoa(cred.Iterations)
		s.state = scramReceiveClientFinal
		return []byte(s.serverFirst), nil

	case scramReceiveClientFinal:
		final, err := parseScramClientFinal(msg)
		if err != nil {
			return nil, private(s.mechanism, err.Error(), nil)
		}
		authMessage := []byte(s.clientFirst.bare() + "," + s.serverFirst + "," + final.withoutProof())
		mac := func(key []byte) []byte {
			m := hmac.New(s.hash, key)
			m.Write(authMessage)
			return m.Sum(nil)
		}
		clientSignature := mac(s.cred.StoredKey)
		if len(final.proof) != len(clientSignature) {
			return nil, private(s.mechanism, "Invalid client credentials", errors.New("client proof has the wrong length"))
		}
		clientKey := make([]byte, len(clientSignature))
		subtle.XORBytes(clientKey, clientSignature, final.proof)
		h := s.hash()
		h.Write(clientKey)
		// The final nonce must end with the server-first nonce, as Kafka checks since the
		// CVE-2024-56128 fix (3.7.2): a suffix, not equality, because librdkafka 2.0.x sends
		// the client nonce twice (Debian's kcat), and Kafka accepts that.
		if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 || !strings.HasSuffix(final.nonce, s.nonce) {
			return nil, private(s.mechanism, "Invalid client credentials", nil)
		}
		serverSignature := mac(s.cred.ServerKey)
		s.cred = scramcred.Credential{}
		s.state = scramComplete
		return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil

	default:
		return nil, private(s.mechanism, fmt.Sprintf("Unexpected challenge in Sasl server state %s", s.stateName()), nil)
	}
}

func (s *scramSession) stateName() string {
	switch s.state {
	case scramComplete:
		return "COMPLETE"
	case scramFailed:
		return "FAILED"
	}
	return strconv.Itoa(int(s.state))
}

func (s *scramSession) Principal() security.Principal { return security.User(s.username) }

func (s *scramSession) Expiry() time.Time { return time.Time{} }
