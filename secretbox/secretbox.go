// Package secretbox encrypts small secrets for storage with AES-256-GCM under a keyring: one
// current key that seals, and previous keys that still open what they sealed, so the key can be
// rotated without a moment when stored secrets cannot be read. Each sealed value names the key
// that sealed it by a key id derived from the key, never the key itself.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// Keyring seals with its current key and opens with any of its keys.
type Keyring struct {
	currentID string
	aeads     map[string]cipher.AEAD
}

// New returns a keyring sealing with current and also opening with previous.
func New(current []byte, previous ...[]byte) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for i, key := range append([][]byte{current}, previous...) {
		if len(key) != KeySize {
			return nil, fmt.Errorf("secretbox: a key has %d bytes, not %d", len(key), KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := KeyID(key)
		k.aeads[id] = aead
		if i == 0 {
			k.currentID = id
		}
	}
	return k, nil
}

// Parse builds a keyring from keys written as 64 hex digits or the standard base64 of 32 bytes,
// as BGCHECK_SECRETS_KEY and BGCHECK_SECRETS_PREVIOUS_KEYS hold them.
func Parse(current string, previous []string) (*Keyring, error) {
	var keys [][]byte
	for _, s := range append([]string{current}, previous...) {
		key, err := ParseKey(s)
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return New(keys[0], keys[1:]...)
}

// ParseKey reads one key: 64 hex digits, or base64 of 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	return nil, errors.New("secretbox: a key is 32 random bytes written as 64 hex digits or base64 (openssl rand -hex 32)")
}

// KeyID names a key without revealing it: the first 16 hex digits of its SHA-256.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// CurrentKeyID is the id of the key Seal uses.
func (k *Keyring) CurrentKeyID() string { return k.currentID }

// Seal encrypts plaintext under the current key. context binds the ciphertext to where it is
// stored (the endpoint's id): opened with another context, it fails, so a sealed secret copied
// to another row is useless there. The ciphertext is the nonce followed by the sealed bytes.
func (k *Keyring) Seal(plaintext, context []byte) (keyID string, ciphertext []byte, err error) {
	aead := k.aeads[k.currentID]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, err
	}
	return k.currentID, aead.Seal(nonce, nonce, plaintext, context), nil
}

// ErrUnknownKey is returned by Open for a value sealed by a key the keyring does not hold.
var ErrUnknownKey = errors.New("secretbox: sealed by a key this keyring does not have; add it to the previous keys")

// Open decrypts what Seal returned, with the key it names.
func (k *Keyring) Open(keyID string, ciphertext, context []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w (key id %s)", ErrUnknownKey, keyID)
	}
	if len(ciphertext) < aead.NonceSize() {
		return nil, errors.New("secretbox: ciphertext too short")
	}
	nonce, sealed := ciphertext[:aead.NonceSize()], ciphertext[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, sealed, context)
	if err != nil {
		return nil, errors.New("secretbox: the ciphertext was altered or belongs elsewhere")
	}
	return plain, nil
}
