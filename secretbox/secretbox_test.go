package secretbox_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck/secretbox"
)

func TestSealOpenAndRotate(t *testing.T) {
	oldKey, newKey := strings.Repeat("01", 32), strings.Repeat("ab", 32)
	old, err := secretbox.Parse(oldKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, ct, err := old.Seal([]byte("whsec_abc"), []byte("we_1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(ct, []byte("whsec_abc")) || id != old.CurrentKeyID() {
		t.Fatalf("sealed %x under %s", ct, id)
	}
	if _, err := old.Open(id, ct, []byte("we_2")); err == nil {
		t.Fatal("opened with another endpoint's context")
	}
	flipped := bytes.Clone(ct)
	flipped[len(flipped)-1] ^= 1
	if _, err := old.Open(id, flipped, []byte("we_1")); err == nil {
		t.Fatal("opened an altered ciphertext")
	}

	rotated, err := secretbox.Parse(newKey, []string{oldKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(id, ct, []byte("we_1")); err != nil || string(got) != "whsec_abc" {
		t.Fatalf("the previous key opens %q, %v", got, err)
	}
	newID, _, _ := rotated.Seal([]byte("x"), nil)
	if newID == id {
		t.Fatal("a rotated keyring seals with the old key")
	}
	onlyNew, _ := secretbox.Parse(newKey, nil)
	if _, err := onlyNew.Open(id, ct, []byte("we_1")); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Fatalf("open without the old key: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("z", 64), strings.Repeat("ab", 31)} {
		if _, err := secretbox.ParseKey(s); err == nil {
			t.Errorf("accepted %q", s)
		}
	}
	for _, s := range []string{strings.Repeat("Ab", 32), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="} {
		if _, err := secretbox.ParseKey(s); err != nil {
			t.Errorf("refused %q: %v", s, err)
		}
	}
}
