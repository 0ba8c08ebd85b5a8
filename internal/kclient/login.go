package kclient

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The login modules whose client side samsa plays.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// MechanismFromJAAS builds the client side of a SASL mechanism from one JAAS login module
// entry, as a Kafka client (or a broker talking to its peers) logs in:
//   - PLAIN with PlainLoginModule and SCRAM-SHA-256/512 with ScramLoginModule: the
//     `username` and `password` options;
//   - OAUTHBEARER with OAuthBearerLoginModule: an unsecured JWS built like Kafka's
//     OAuthBearerUnsecuredLoginCallbackHandler (unsecuredLoginStringClaim_<name>,
//     unsecuredLoginNumberClaim_<name>, unsecuredLoginListClaim_<name>,
//     unsecuredLoginPrincipalClaimName, unsecuredLoginLifetimeSeconds,
//     unsecuredLoginExtension_<name>), a fresh token for every authentication.
//
// now is the clock for OAUTHBEARER tokens (nil: time.Now).
func MechanismFromJAAS(mechanism, loginModule string, options map[string]string, now func() time.Time) (sasl.Mechanism, error) {
	want := map[string]string{
		"PLAIN":         PlainLoginModule,
		"SCRAM-SHA-256": ScramLoginModule,
		"SCRAM-SHA-512": ScramLoginModule,
		"OAUTHBEARER":   OAuthBearerLoginModule,
	}[mechanism]
	if want == "" {
		return nil, fmt.Errorf("SASL mechanism %q is not supported as a client; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", mechanism)
	}
	if loginModule != want {
		return nil, fmt.Errorf("SASL mechanism %s needs login module %s, not %q", mechanism, want, loginModule)
	}
	if mechanism == "OAUTHBEARER" {
		return unsecuredOAuth(options, now)
	}
	user, pass := options["username"], options["password"]
	if user == "" {
		return nil, fmt.Errorf("%s login module for %s has no username option", loginModule, mechanism)
	}
	if _, ok := options["password"]; !ok {
		return nil, fmt.Errorf("%s login module for %s has no password option", loginModule, mechanism)
	}
	switch mechanism {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	default:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
}

const unsecuredPrefix = "unsecuredLogin"

// unsecuredOAuth is OAuthBearerUnsecuredLoginCallbackHandler's token: header {"alg":"none"},
// claims exp and iat (seconds, fractional as Kafka writes them) then the configured claims,
// no signature. The options are checked once, here, so a broken entry fails start-up.
func unsecuredOAuth(options map[string]string, now func() time.Time) (sasl.Mechanism, error) {
	if now == nil {
		now = time.Now
	}
	hasClaim := false
	for k := range options {
		if !strings.HasPrefix(k, unsecuredPrefix+"Extension_") {
			hasClaim = true
		}
	}
	if !hasClaim {
		return nil, errors.New("OAuthBearerLoginModule has no unsecuredLogin options: the login cannot make a token (set unsecuredLoginStringClaim_sub)")
	}
	lifetime := int64(3600)
	if v, ok := options[unsecuredPrefix+"LifetimeSeconds"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("OAuthBearerLoginModule: invalid unsecuredLoginLifetimeSeconds %q", v)
		}
		lifetime = n
	}
	principalClaim := strings.TrimSpace(options[unsecuredPrefix+"PrincipalClaimName"])
	if principalClaim == "" {
		principalClaim = "sub"
	}
	// Claims in a fixed order (Kafka iterates a map; any order is valid JSON).
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var claims strings.Builder
	extensions := map[string]string{}
	principal := ""
	for _, k := range keys {
		v := options[k]
		var name, text string
		switch {
		case strings.HasPrefix(k, unsecuredPrefix+"StringClaim_") && len(k) > len(unsecuredPrefix+"StringClaim_"):
			name, text = k[len(unsecuredPrefix+"StringClaim_"):], jsonString(v)
			if name == principalClaim {
				principal = v
			}
		case strings.HasPrefix(k, unsecuredPrefix+"NumberClaim_") && len(k) > len(unsecuredPrefix+"NumberClaim_"):
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("OAuthBearerLoginModule: invalid number for %s: %q", k, v)
			}
			name, text = k[len(unsecuredPrefix+"NumberClaim_"):], strconv.FormatFloat(f, 'f', -1, 64)
		case strings.HasPrefix(k, unsecuredPrefix+"ListClaim_") && len(k) > len(unsecuredPrefix+"ListClaim_"):
			name, text = k[len(unsecuredPrefix+"ListClaim_"):], jsonList(v)
		case strings.HasPrefix(k, unsecuredPrefix+"Extension_"):
			ext := k[len(unsecuredPrefix+"Extension_"):]
			if ext == "auth" || !validExtensionKey(ext) {
				return nil, fmt.Errorf("OAuthBearerLoginModule: invalid extension name %q", ext)
			}
			extensions[ext] = v
			continue
		default:
			continue
		}
		if name == "iat" || name == "exp" {
			return nil, fmt.Errorf("OAuthBearerLoginModule: cannot explicitly set the '%s' claim", name)
		}
		claims.WriteString("," + jsonString(name) + ":" + text)
	}
	if strings.TrimSpace(principal) == "" {
		return nil, fmt.Errorf("OAuthBearerLoginModule: no value for the principal claim %q (set unsecuredLoginStringClaim_%s)", principalClaim, principalClaim)
	}
	extra := claims.String()
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		t := float64(now().UnixMilli()) / 1000
		body := `{"exp":` + strconv.FormatFloat(t+float64(lifetime), 'f', -1, 64) +
			`,"iat":` + strconv.FormatFloat(t, 'f', -1, 64) + extra + `}`
		enc := base64.RawURLEncoding
		token := enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString([]byte(body)) + "."
		return oauth.Auth{Token: token, Extensions: extensions}, nil
	}), nil
}

// jsonString quotes s as Kafka's handler does: only `"` and `\` are escaped; control
// characters are escaped too so the JSON stays valid.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsonList is Kafka's listJsonText: the first character is the delimiter of the rest
// ("|a|b" → ["a","b"]); an empty element anywhere adds one "" at the end, as Java's
// String.split drops trailing empties and Kafka appends a single "".
func jsonList(v string) string {
	if len(v) <= 1 {
		return "[]"
	}
	delim, rest := v[:1], v[1:]
	parts := strings.Split(rest, delim)
	for len(parts) > 0 && parts[len(parts)-1] == "" { // Java's split drops trailing empties
		parts = parts[:len(parts)-1]
	}
	elems := make([]string, 0, len(parts)+1)
	for _, p := range parts {
		elems = append(elems, jsonString(p))
	}
	if strings.HasPrefix(rest, delim) || strings.HasSuffix(rest, delim) || strings.Contains(rest, delim+delim) {
		elems = append(elems, `""`)
	}
	return "[" + strings.Join(elems, ",") + "]"
}

// validExtensionKey is OAuthBearerClientInitialResponse's EXTENSION_KEY pattern [A-Za-z]+.
func validExtensionKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
