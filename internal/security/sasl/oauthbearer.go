package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/internal/security"
)

// MechanismOAuthBearer is SASL/OAUTHBEARER (RFC 7628), served with Kafka's unsecured JWS
// validation (OAuthBearerUnsecuredValidatorCallbackHandler), the broker's default.
const MechanismOAuthBearer = "OAUTHBEARER"

// OAuthBearerUnsecuredValidatorCallbackHandler's JAAS options.
const (
	optPrincipalClaim = "unsecuredValidatorPrincipalClaimName"
	optScopeClaim     = "unsecuredValidatorScopeClaimName"
	optRequiredScope  = "unsecuredValidatorRequiredScope"
	optClockSkew      = "unsecuredValidatorAllowableClockSkewMs"
)

// oauthValidator is the configured unsecured validator.
type oauthValidator struct {
	principalClaim string
	scopeClaim     string
	requiredScope  []string
	clockSkewMs    int64
}

var scopeItemRE = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)

// newOAuthValidator reads the options up front; Kafka reads them on every validation and a
// bad value then fails each login, here it fails start-up.
func newOAuthValidator(e JAASEntry) (*oauthValidator, error) {
	v := &oauthValidator{principalClaim: "sub", scopeClaim: "scope"}
	if s := strings.TrimSpace(e.Options[optPrincipalClaim]); s != "" {
		v.principalClaim = s
	}
	if s := strings.TrimSpace(e.Options[optScopeClaim]); s != "" {
		v.scopeClaim = s
	}
	if s := strings.TrimSpace(e.Options[optRequiredScope]); s != "" {
		for _, item := range strings.Split(s, " ") {
			if item == "" {
				continue
			}
			if !scopeItemRE.MatchString(item) {
				return nil, fmt.Errorf("%s: invalid scope value: %s", optRequiredScope, item)
			}
			v.requiredScope = append(v.requiredScope, item)
		}
	}
	if s := strings.TrimSpace(e.Options[optClockSkew]); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", optClockSkew, err)
		}
		if n < 0 {
			return nil, fmt.Errorf("%s: allowable clock skew millis must not be negative: %s", optClockSkew, s)
		}
		v.clockSkewMs = n
	}
	return v, nil
}

// The client's first message (OAuthBearerClientInitialResponse):
// "n,[a=authzid],\x01auth=<scheme> <token>\x01[key=value\x01]*\x01".
var (
	oauthInitialRE = regexp.MustCompile(`^n,(?:a=(` + reSaslName + `))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$`)
	oauthAuthRE    = regexp.MustCompile(`^(\w+) +([-_.a-zA-Z0-9]+)$`)
)

type oauthInitial struct {
	authzid    string // as sent, not unescaped (Kafka compares it raw)
	token      string
	extensions map[string]string
}

func parseOAuthInitial(msg []byte) (oauthInitial, error) {
	m := oauthInitialRE.FindStringSubmatch(string(msg))
	if m == nil {
		return oauthInitial{}, errors.New("invalid OAUTHBEARER client first message")
	}
	props := map[string]string{}
	if m[2] != "" {
		for _, kv := range strings.Split(strings.TrimSuffix(m[2], "\x01"), "\x01") {
			k, v, _ := strings.Cut(kv, "=")
			props[k] = v
		}
	}
	auth, ok := props["auth"]
	if !ok {
		return oauthInitial{}, errors.New("invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	delete(props, "auth")
	a := oauthAuthRE.FindStringSubmatch(auth)
	if a == nil {
		return oauthInitial{}, errors.New("invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(a[1], "bearer") {
		return oauthInitial{}, fmt.Errorf("invalid scheme in OAUTHBEARER client first message: %s", a[1])
	}
	return oauthInitial{authzid: m[1], token: a[2], extensions: props}, nil
}

// oauthToken is a validated OAuthBearerUnsecuredJws.
type oauthToken struct {
	principal  string
	lifetimeMs int64
	scope      []string
}

// tokenError is OAuthBearerIllegalTokenException: the validation failure, and the scope
// that was missing for an insufficient_scope failure.
type tokenError struct {
	msg   string
	scope string
}

func (e *tokenError) Error() string { return e.msg }

func illegal(format string, args ...any) *tokenError {
	return &tokenError{msg: fmt.Sprintf(format, args...)}
}

// claim values as Kafka's OAuthBearerUnsecuredJws.convert keeps them: numbers, strings
// (any other scalar as its text) and lists of element texts.
type claimNumber float64

// decodeJWSPart decodes one dot-separated part to its top-level JSON members. Kafka decodes
// with the basic Base64 alphabet although JWS uses base64url; both alphabets are accepted
// here, since a token's ASCII letters and digits mean the same in both.
func decodeJWSPart(part string) (map[string]any, error) {
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if raw, err = enc.DecodeString(part); err == nil {
			break
		}
	}
	if err != nil {
		return nil, illegal("malformed Base64 URL encoded value")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, illegal("malformed JSON")
	}
	obj, _ := top.(map[string]any)
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = convertClaim(v)
	}
	return out, nil
}

func convertClaim(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return claimNumber(f)
	case []any:
		list := make([]string, 0, len(x))
		for _, e := range x {
			list = append(list, claimText(e))
		}
		return list
	}
	return claimText(v)
}

// claimText is Jackson's JsonNode.asText for a value.
func claimText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	return "" // objects and arrays
}

func claimTypeName(v any) string {
	switch v.(type) {
	case claimNumber:
		return "Number"
	case []string:
		return "ArrayList"
	}
	return "String"
}

// parseUnsecuredJWS is OAuthBearerUnsecuredJws's constructor followed by the checks of
// OAuthBearerUnsecuredValidatorCallbackHandler.handleCallback.
func (v *oauthValidator) validate(token string, nowMs int64) (oauthToken, *tokenError) {
	if strings.Contains(token, "..") {
		return oauthToken{}, illegal("Malformed compact serialization contains '..'")
	}
	splits := strings.Split(token, ".")
	if len(splits) != 3 {
		return oauthToken{}, illegal("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := decodeJWSPart(splits[0])
	if err != nil {
		return oauthToken{}, err.(*tokenError)
	}
	claims, err := decodeJWSPart(splits[1])
	if err != nil {
		return oauthToken{}, err.(*tokenError)
	}
	alg, ok := header["alg"]
	if !ok {
		return oauthToken{}, illegal("JWS header must have an Algorithm value")
	}
	if algText(alg) != "none" {
		return oauthToken{}, illegal("Unsecured JWS must have 'none' for an algorithm")
	}
	if splits[2] != "" {
		return oauthToken{}, illegal("Unsecured JWS must not contain a digital signature")
	}

	var scope []string
	switch s := claims[v.scopeClaim].(type) {
	case nil:
	case string:
		if strings.TrimSpace(s) != "" {
			scope = []string{strings.TrimSpace(s)}
		}
	case []string:
		for _, item := range s {
			if strings.TrimSpace(item) != "" {
				scope = append(scope, strings.TrimSpace(item))
			}
		}
	default:
		return oauthToken{}, illegal("The '%s' claim was not of type List: %s", v.scopeClaim, claimTypeName(s))
	}

	exp, err := numberClaim(claims, "exp")
	if err != nil {
		return oauthToken{}, err.(*tokenError)
	}
	if exp == nil {
		return oauthToken{}, illegal("No expiration time in JWT")
	}
	principal := ""
	switch p := claims[v.principalClaim].(type) {
	case nil:
	case string:
		principal = p
	default:
		return oauthToken{}, illegal("The '%s' claim was not of type String: %s", v.principalClaim, claimTypeName(p))
	}
	if strings.TrimSpace(principal) == "" {
		return oauthToken{}, illegal("No principal name in JWT claim: %s", v.principalClaim)
	}
	iat, err := numberClaim(claims, "iat")
	if err != nil {
		return oauthToken{}, err.(*tokenError)
	}

	if iat != nil && 1000**iat > float64(nowMs+v.clockSkewMs) {
		return oauthToken{}, illegal("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)",
			*iat, nowMs, v.clockSkewMs)
	}
	if float64(nowMs-v.clockSkewMs) >= 1000**exp {
		return oauthToken{}, illegal("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)",
			nowMs, v.clockSkewMs, *exp)
	}
	if iat != nil && *exp <= *iat {
		return oauthToken{}, illegal("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", *exp, *iat)
	}
	have := make(map[string]bool, len(scope))
	for _, s := range scope {
		have[s] = true
	}
	for _, req := range v.requiredScope {
		if !have[req] {
			e := illegal("The provided scope (%s) was missing a required scope (%s).  All required scope elements: %s",
				javaSet(scope), req, javaList(v.requiredScope))
			e.scope = javaList(v.requiredScope)
			return oauthToken{}, e
		}
	}
	return oauthToken{principal: principal, lifetimeMs: roundMs(*exp), scope: scope}, nil
}

// roundMs is Math.round(seconds * 1000), saturating as Java's does.
func roundMs(seconds float64) int64 {
	ms := math.Floor(seconds*1000 + 0.5)
	switch {
	case ms >= math.MaxInt64:
		return math.MaxInt64
	case ms <= math.MinInt64:
		return math.MinInt64
	}
	return int64(ms)
}

func algText(v any) string {
	switch x := v.(type) {
	case claimNumber:
		return strconv.FormatFloat(float64(x), 'g', -1, 64)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case string:
		return x
	}
	return ""
}

func numberClaim(claims map[string]any, name string) (*float64, error) {
	switch x := claims[name].(type) {
	case nil:
		return nil, nil
	case claimNumber:
		f := float64(x)
		return &f, nil
	default:
		return nil, illegal("The '%s' claim was not of type Number: %s", name, claimTypeName(x))
	}
}

// javaList writes a list as Java's AbstractCollection.toString does.
func javaList(items []string) string { return "[" + strings.Join(items, ", ") + "]" }

// javaSet writes a set; Java's HashSet order is not reproduced, the items are sorted.
func javaSet(items []string) string {
	s := append([]string(nil), items...)
	sort.Strings(s)
	return javaList(s)
}

// oauthSession is Kafka's OAuthBearerSaslServer with the unsecured validator.
type oauthSession struct {
	v   *oauthValidator
	now func() time.Time

	errorMessage string // the JSON error sent to the client, awaiting its %x01
	failure      error  // why the token was refused, for the broker's log
	principal    string
	expiry       time.Time
	done         bool
}

func (s *oauthSession) Step(msg []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, private(MechanismOAuthBearer, "unexpected OAUTHBEARER message after authentication completed", nil)
	}
	if len(msg) == 1 && msg[0] == 0x01 && s.errorMessage != "" {
		e := public(MechanismOAuthBearer, s.errorMessage)
		e.Err = s.failure
		return nil, false, e
	}
	s.errorMessage, s.failure = "", nil
	in, err := parseOAuthInitial(msg)
	if err != nil {
		return nil, false, private(MechanismOAuthBearer, err.Error(), nil)
	}
	tok, terr := s.v.validate(in.token, s.now().UnixMilli())
	if terr != nil {
		// RFC 7628: the failure goes back as a JSON challenge; the client answers %x01 and
		// the exchange then fails with that JSON as the message.
		status := "invalid_token"
		js := `{"status":"invalid_token"}`
		if terr.scope != "" {
			status = "insufficient_scope"
			js = fmt.Sprintf(`{"status":"%s", "scope":"%s"}`, status, terr.scope)
		}
		s.errorMessage, s.failure = js, terr
		return []byte(js), false, nil
	}
	if in.authzid != "" && in.authzid != tok.principal {
		return nil, false, public(MechanismOAuthBearer, fmt.Sprintf(
			"Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			in.authzid, tok.principal))
	}
	s.principal = tok.principal
	s.expiry = time.UnixMilli(tok.lifetimeMs)
	s.done = true
	return []byte{}, true, nil
}

func (s *oauthSession) Principal() security.Principal { return security.User(s.principal) }

// Expiry is the token's exp (OAuthBearerToken.lifetimeMs).
func (s *oauthSession) Expiry() time.Time { return s.expiry }
