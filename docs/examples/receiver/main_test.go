package main

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck/webhook"
)

func TestReceiverVerifiesAndDeduplicates(t *testing.T) {
	var out bytes.Buffer
	srv := httptest.NewServer(handler("whsec_s", log.New(&out, "", 0)))
	defer srv.Close()
	body := []byte(`{"id":"evt_1","type":"check.completed","created_at":"2026-11-21T05:24:00Z","data":{"status":"complete"}}`)
	post := func(b []byte, sig string) int {
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(b))
		req.Header.Set(webhook.SignatureHeader, sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if c := post(body, webhook.Sign("whsec_s", body)); c != 204 {
		t.Fatalf("signed delivery: %d", c)
	}
	if c := post(body, webhook.Sign("whsec_s", body)); c != 204 || !strings.Contains(out.String(), "already handled") {
		t.Fatalf("repeat delivery: %d, log %q", c, out.String())
	}
	tampered := bytes.Replace(body, []byte("complete"), []byte("canceled"), 1)
	if c := post(tampered, webhook.Sign("whsec_s", body)); c != 401 {
		t.Fatalf("tampered body: %d", c)
	}
	if c := post(body, webhook.Sign("whsec_other", body)); c != 401 {
		t.Fatalf("wrong secret: %d", c)
	}
}
