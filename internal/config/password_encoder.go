package config

// password_encoder.go mirrors kafka.utils.PasswordEncoder (EncryptingPasswordEncoder): how
// dynamic password configs are stored in /config/brokers/<id>. The key is PBKDF2 of
// password.encoder.secret over a random 256-byte salt, the cipher AES (CBC with PKCS#5
// padding, or GCM), and the stored value Kafka's comma-separated map
// keyFactoryAlgorithm:...,cipherAlgorithm:...,keyLength:...,salt:...,iterations:...,
// encryptedPassword:...,passwordLength:...,initializationVector:...[,authenticationTagLength:...]
// so values written by Kafka decode here and the other way round.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"unicode/utf16"
)

// PasswordEncoder encrypts and decrypts dynamic password configs with one secret.
type PasswordEncoder struct {
	secret              string
	keyFactoryAlgorithm string // "" = PBKDF2WithHmacSHA512, as Kafka picks when unset
	cipherAlgorithm     string
	keyLength           int // bits
	iterations          int
}

// NewPasswordEncoder is PasswordEncoder.encrypting. Unsupported algorithms are reported when
// a password is encoded or decoded, as in Kafka.
func NewPasswordEncoder(secret, keyFactoryAlgorithm, cipherAlgorithm string, keyLength, iterations int) *PasswordEncoder {
	return &PasswordEncoder{secret: secret, keyFactoryAlgorithm: keyFactoryAlgorithm,
		cipherAlgorithm: cipherAlgorithm, keyLength: keyLength, iterations: iterations}
}

// PasswordEncoderFromProps builds the encoder for the secret in props[secretKey]
// (password.encoder.secret or password.encoder.old.secret) with the password.encoder.*
// settings of props; nil when the secret is not set.
func PasswordEncoderFromProps(props map[string]string, secretKey string) *PasswordEncoder {
	secret, ok := props[secretKey]
	if !ok {
		return nil
	}
	num := func(k string, def int) int {
		if n, err := strconv.Atoi(strings.TrimSpace(props[k])); err == nil {
			return n
		}
		return def
	}
	cipherAlg := props["password.encoder.cipher.algorithm"]
	if cipherAlg == "" {
		cipherAlg = "AES/CBC/PKCS5Padding"
	}
	return NewPasswordEncoder(secret, props["password.encoder.keyfactory.algorithm"], cipherAlg,
		num("password.encoder.key.length", 128), num("password.encoder.iterations", 4096))
}

const (
	pwKeyFactoryAlgorithm  = "keyFactoryAlgorithm"
	pwCipherAlgorithm      = "cipherAlgorithm"
	pwInitializationVector = "initializationVector"
	pwKeyLength            = "keyLength"
	pwSalt                 = "salt"
	pwIterations           = "iterations"
	pwEncryptedPassword    = "encryptedPassword"
	pwPasswordLength       = "passwordLength"
	pwAuthTagLength        = "authenticationTagLength"
)

func prfFor(keyFactoryAlgorithm string) (func() hash.Hash, error) {
	switch keyFactoryAlgorithm {
	case "PBKDF2WithHmacSHA512":
		return sha512.New, nil
	case "PBKDF2WithHmacSHA256":
		return sha256.New, nil
	case "PBKDF2WithHmacSHA1":
		return sha1.New, nil
	}
	return nil, fmt.Errorf("%s SecretKeyFactory not available", keyFactoryAlgorithm)
}

// mode splits "AES/CBC/PKCS5Padding" into its mode; only AES in CBC/PKCS5 or GCM/NoPadding.
func cipherMode(cipherAlgorithm string) (string, error) {
	parts := strings.Split(cipherAlgorithm, "/")
	if len(parts) == 3 && parts[0] == "AES" {
		switch {
		case parts[1] == "CBC" && (parts[2] == "PKCS5Padding" || parts[2] == "PKCS7Padding"):
			return "CBC", nil
		case parts[1] == "GCM" && parts[2] == "NoPadding":
			return "GCM", nil
		}
	}
	return "", fmt.Errorf("cannot find any provider supporting %s", cipherAlgorithm)
}

func (e *PasswordEncoder) key(keyFactoryAlgorithm string, salt []byte, iterations, keyLength int) ([]byte, error) {
	prf, err := prfFor(keyFactoryAlgorithm)
	if err != nil {
		return nil, err
	}
	if keyLength != 128 && keyLength != 192 && keyLength != 256 {
		return nil, fmt.Errorf("invalid AES key length: %d bits", keyLength)
	}
	// PBEKeySpec takes the secret as chars; SunJCE's PBKDF2 hashes them as UTF-8.
	return pbkdf2.Key(prf, e.secret, salt, iterations, keyLength/8)
}

// Encode encrypts password with a fresh salt and IV.
func (e *PasswordEncoder) Encode(password string) (string, error) {
	kfa := e.keyFactoryAlgorithm
	if kfa == "" {
		kfa = "PBKDF2WithHmacSHA512"
	}
	mode, err := cipherMode(e.cipherAlgorithm)
	if err != nil {
		return "", err
	}
	salt := make([]byte, 256)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	k, err := e.key(kfa, salt, e.iterations, e.keyLength)
	if err != nil {
		return "", err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return "", fmt.Errorf("password cipher: %w", err)
	}
	var iv, sealed []byte
	extra := ""
	switch mode {
	case "CBC":
		iv = make([]byte, aes.BlockSize)
		if _, err := rand.Read(iv); err != nil {
			return "", fmt.Errorf("password iv: %w", err)
		}
		sealed = pkcs5Pad([]byte(password), aes.BlockSize)
		cipher.NewCBCEncrypter(block, iv).CryptBlocks(sealed, sealed)
	case "GCM":
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return "", fmt.Errorf("password cipher: %w", err)
		}
		iv = make([]byte, gcm.NonceSize())
		if _, err := rand.Read(iv); err != nil {
			return "", fmt.Errorf("password iv: %w", err)
		}
		sealed = gcm.Seal(nil, iv, []byte(password), nil)
		extra = "," + pwAuthTagLength + ":" + strconv.Itoa(gcm.Overhead()*8)
	}
	b64 := base64.StdEncoding.EncodeToString
	return pwKeyFactoryAlgorithm + ":" + kfa +
		"," + pwCipherAlgorithm + ":" + e.cipherAlgorithm +
		"," + pwKeyLength + ":" + strconv.Itoa(e.keyLength) +
		"," + pwSalt + ":" + b64(salt) +
		"," + pwIterations + ":" + strconv.Itoa(e.iterations) +
		"," + pwEncryptedPassword + ":" + b64(sealed) +
		"," + pwPasswordLength + ":" + strconv.Itoa(javaLength(password)) +
		"," + pwInitializationVector + ":" + b64(iv) + extra, nil
}

// ErrPasswordDecode is Kafka's "Password could not be decoded".
var ErrPasswordDecode = errors.New("Password could not be decoded")

// Decode decrypts a value Encode (or Kafka) wrote, with the algorithms it names.
func (e *PasswordEncoder) Decode(encoded string) (string, error) {
	params := map[string]string{}
	for _, kv := range strings.Split(encoded, ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return "", fmt.Errorf("%w: malformed encoded password", ErrPasswordDecode)
		}
		params[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	need := func(k string) (string, error) {
		v, ok := params[k]
		if !ok {
			return "", fmt.Errorf("%w: %s missing", ErrPasswordDecode, k)
		}
		return v, nil
	}
	var err error
	get := func(k string) string {
		v, e := need(k)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	kfa, cipherAlg := get(pwKeyFactoryAlgorithm), get(pwCipherAlgorithm)
	keyLength, _ := strconv.Atoi(get(pwKeyLength))
	iterations, _ := strconv.Atoi(get(pwIterations))
	pwLen, perr := strconv.Atoi(get(pwPasswordLength))
	saltB64, encB64, ivB64 := get(pwSalt), get(pwEncryptedPassword), get(pwInitializationVector)
	if err != nil {
		return "", err
	}
	if perr != nil {
		return "", fmt.Errorf("%w: bad %s", ErrPasswordDecode, pwPasswordLength)
	}
	salt, err1 := base64.StdEncoding.DecodeString(saltB64)
	enc, err2 := base64.StdEncoding.DecodeString(encB64)
	iv, err3 := base64.StdEncoding.DecodeString(ivB64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return "", fmt.Errorf("%w: %v", ErrPasswordDecode, err)
	}
	mode, err := cipherMode(cipherAlg)
	if err != nil {
		return "", err
	}
	k, err := e.key(kfa, salt, iterations, keyLength)
	if err != nil {
		return "", err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPasswordDecode, err)
	}
	var plain []byte
	switch mode {
	case "CBC":
		if len(iv) != aes.BlockSize || len(enc) == 0 || len(enc)%aes.BlockSize != 0 {
			return "", ErrPasswordDecode
		}
		plain = make([]byte, len(enc))
		cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, enc)
		if plain, err = pkcs5Unpad(plain, aes.BlockSize); err != nil {
			return "", ErrPasswordDecode
		}
	case "GCM":
		tagBits := 128
		if v, ok := params[pwAuthTagLength]; ok {
			tagBits, _ = strconv.Atoi(v)
		}
		var gcm cipher.AEAD
		if len(iv) == 12 {
			gcm, err = cipher.NewGCMWithTagSize(block, tagBits/8)
		} else {
			gcm, err = cipher.NewGCMWithNonceSize(block, len(iv))
		}
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrPasswordDecode, err)
		}
		if plain, err = gcm.Open(nil, iv, enc, nil); err != nil {
			return "", ErrPasswordDecode
		}
	}
	password := string(plain)
	if javaLength(password) != pwLen { // Kafka's sanity check
		return "", fmt.Errorf("%w, sanity check of length failed", ErrPasswordDecode)
	}
	return password, nil
}

// javaLength is String.length: UTF-16 code units.
func javaLength(s string) int { return len(utf16.Encode([]rune(s))) }

func pkcs5Pad(b []byte, size int) []byte {
	n := size - len(b)%size
	return append(append([]byte(nil), b...), bytes.Repeat([]byte{byte(n)}, n)...)
}

func pkcs5Unpad(b []byte, size int) ([]byte, error) {
	if len(b) == 0 || len(b)%size != 0 {
		return nil, ErrPasswordDecode
	}
	n := int(b[len(b)-1])
	if n == 0 || n > size || n > len(b) {
		return nil, ErrPasswordDecode
	}
	for _, c := range b[len(b)-n:] {
		if int(c) != n {
			return nil, ErrPasswordDecode
		}
	}
	return b[:len(b)-n], nil
}
