package config

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateDynamicConfigsKafkaMessages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		props     map[string]string
		perBroker bool
		want      string // "" = valid
	}{
		{"dynamic log key", map[string]string{"log.retention.ms": "1000", "log.cleaner.threads": "2"}, false, ""},
		{"custom key", map[string]string{"my.custom.key": "x"}, false, ""},
		{"dynamic-only key", map[string]string{"leader.replication.throttled.rate": "100"}, true, ""},
		{"non-dynamic", map[string]string{"log.dirs": "/x", "broker.rack": "r", "log.retention.ms": "5"}, true,
			"Cannot update these configs dynamically: Set(broker.rack, log.dirs)"},
		{"lower synonym not dynamic", map[string]string{"log.retention.hours": "1"}, false,
			"Cannot update these configs dynamically: Set(log.retention.hours)"},
		{"unprefixed security", map[string]string{"ssl.keystore.location": "/k"}, true,
			"These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{"bad int", map[string]string{"log.cleaner.threads": "many"}, false,
			"Invalid value many for configuration log.cleaner.threads: Not a number of type INT"},
		{"bad range", map[string]string{"leader.replication.throttled.rate": "-1"}, true,
			"Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"},
		{"bad bool", map[string]string{"unclean.leader.election.enable": "yes"}, false,
			"Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false"},
		{"listener key checked as base", map[string]string{"listener.name.internal.max.connections": "x"}, false,
			"Invalid value x for configuration max.connections: Not a number of type INT"},
		{"per-broker at default", map[string]string{"listener.name.ssl.ssl.keystore.location": "/k", "max.connections": "10"}, false,
			"Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.ssl.ssl.keystore.location)"},
		{"per-broker at broker", map[string]string{"listener.name.ssl.ssl.keystore.location": "/k"}, true, ""},
		{"cluster-level listener key at default", map[string]string{"listener.name.ssl.max.connections": "10"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateDynamicConfigs(tc.props, tc.perBroker)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDynamicKeySets(t *testing.T) {
	for _, k := range []string{"listener.name.ssl.ssl.key.password", "sasl.jaas.config", "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"} {
		if !IsDynamicPasswordConfig(k) {
			t.Errorf("%s should be a dynamic password config", k)
		}
	}
	if IsDynamicPasswordConfig("log.retention.ms") || IsDynamicPasswordConfig("zookeeper.ssl.keystore.location") {
		t.Error("non-password keys classified as passwords")
	}
	if got := DynamicUpdateMode("listeners"); got != "per-broker" {
		t.Errorf("listeners mode %s", got)
	}
	if got := DynamicUpdateMode("log.retention.ms"); got != "cluster-wide" {
		t.Errorf("log.retention.ms mode %s", got)
	}
	if got := DynamicUpdateMode("log.dirs"); got != "read-only" {
		t.Errorf("log.dirs mode %s", got)
	}
	if got := BrokerConfigSynonyms("listener.name.sasl_ssl.plain.sasl.jaas.config", true); len(got) != 2 || got[1] != "sasl.jaas.config" {
		t.Errorf("mechanism synonyms %v", got)
	}
	props := map[string]string{"log.roll.ms": "5", "log.retention.hours": "2"}
	OverrideProps(props, map[string]string{"log.roll.hours": "3"})
	if _, ok := props["log.roll.ms"]; ok || props["log.roll.hours"] != "3" || props["log.retention.hours"] != "2" {
		t.Errorf("OverrideProps: %v", props)
	}
}

func TestPasswordEncoderRoundTrip(t *testing.T) {
	for _, cipherAlg := range []string{"AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"} {
		for _, kfa := range []string{"", "PBKDF2WithHmacSHA1"} {
			e := NewPasswordEncoder("s3cret", kfa, cipherAlg, 128, 1024)
			pw := "pässword-with-ünïcode-and-more-than-one-block"
			enc, err := e.Encode(pw)
			if err != nil {
				t.Fatalf("%s/%s encode: %v", cipherAlg, kfa, err)
			}
			if strings.Contains(enc, pw) {
				t.Fatalf("encoded value holds the password: %s", enc)
			}
			for _, k := range []string{"keyFactoryAlgorithm:", "cipherAlgorithm:" + cipherAlg, "keyLength:128", "salt:", "iterations:1024", "encryptedPassword:", "passwordLength:", "initializationVector:"} {
				if !strings.Contains(enc, k) {
					t.Errorf("encoded value lacks %q: %s", k, enc)
				}
			}
			// Decoding reads the parameters from the value, not from the decoder's settings.
			got, err := NewPasswordEncoder("s3cret", "", "AES/CBC/PKCS5Padding", 256, 4096).Decode(enc)
			if err != nil || got != pw {
				t.Fatalf("%s/%s decode = %q, %v", cipherAlg, kfa, got, err)
			}
			if _, err := NewPasswordEncoder("other", "", cipherAlg, 128, 1024).Decode(enc); !errors.Is(err, ErrPasswordDecode) {
				t.Fatalf("decode with the wrong secret: %v", err)
			}
		}
	}
	if _, err := NewPasswordEncoder("s", "", "DES/ECB/NoPadding", 128, 1024).Encode("x"); err == nil {
		t.Fatal("unsupported cipher accepted")
	}
	e := PasswordEncoderFromProps(map[string]string{"password.encoder.secret": "x", "password.encoder.iterations": "2048"}, "password.encoder.secret")
	if e == nil || e.iterations != 2048 || e.keyLength != 128 || e.cipherAlgorithm != "AES/CBC/PKCS5Padding" {
		t.Fatalf("from props: %+v", e)
	}
	if PasswordEncoderFromProps(map[string]string{}, "password.encoder.secret") != nil {
		t.Fatal("encoder without a secret")
	}
}

// Values encrypted by the JCE calls Kafka's EncryptingPasswordEncoder makes (secret
// "sekret", PBKDF2WithHmacSHA512, 4096 iterations, 128-bit AES), so what a Kafka broker
// stored in /config/brokers decodes here.
const (
	jceEncodedCBC = "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,salt:bB4ipUA6YiuqTJPRHNSda4PyGfjfQzeV4UyA7iw171lmDhDpGAsTDP2Lpb/tOTacfZIhOoogqF/HTBKeFo/wMKF0kB+yQoXTXopHOoRXJfxRMZtAUlNJWn34WrlWWIALlpwKxPZI+yAt+4OiXaqj+6q0OJPV9JFT0KRTEWCeMQH7htdpPmiEGQyJIw+3KHrrp5GQ8GS2ZAY9bcsDtOmAL5FwyxmW+bIVBUio8czFsskHlxu6pXuJ+TOuMBkRP83AgDfVMgOudpHhSyjEEptAhk77vUbR8X0noIhNpDg6z55q/niJ9ECjO1PpZw/BtUcB3eFSyF1p9osVaSl+KBO3EA==,iterations:4096,encryptedPassword:e7HlWC0Ky64LrK60CZ6FvA==,passwordLength:10,initializationVector:csaLqtYwfe3vsPKT83An/Q=="
	jceEncodedGCM = "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/GCM/NoPadding,keyLength:128,salt:qQ26lrmORF41RO09u3zcQPTeR2NkIMTefXOjHG5nWvNmcf3lhMcQXRp85kT9E92VemrJp4A7Sa9CjZ8q/0lA2f7cMYnxQbyKSp7HD+XSo5zrEIf+ZCQJbtPun+YppbQQpjJqx+OaIu7iAad/aL1u5JaxlJ7iJ43PSU8iD63fwY/UvtrMIfS9YF5tBPMFaRe6VGclaUb8/ksrAxPZ10wJtXfNprIOdQmlxUV7EHGm0aqiLCQFaO3BayRZ0CalE0KooiTKFQod+4OQn/xvnXOjlQfIxjmuAqx3W6NiYz3bXp4PvNC5MFdSdaWn67CCpJr12gqZG8/RWPVJCsYZmckWwA==,iterations:4096,encryptedPassword:f9zY58p5Iegmg4EzOpN7PCBpy5a5Lkc1sd2DiQ==,passwordLength:10,initializationVector:iRHQTsMOoA/Tds1i,authenticationTagLength:128"
)

func TestPasswordEncoderDecodesKafkaValues(t *testing.T) {
	e := NewPasswordEncoder("sekret", "", "AES/CBC/PKCS5Padding", 128, 4096)
	for enc, want := range map[string]string{jceEncodedCBC: "pässwörd-1", jceEncodedGCM: "pässwörd-2"} {
		if got, err := e.Decode(enc); err != nil || got != want {
			t.Errorf("decode = %q, %v; want %q", got, err, want)
		}
	}
}
