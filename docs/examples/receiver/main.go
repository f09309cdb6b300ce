// Command receiver is a minimal webhook receiver for bgcheck, to copy from. It verifies each
// delivery's X-Service-Signature over the raw body with the endpoint's secret, answers 204
// quickly, and ignores an event id it has already seen (deliveries are at least once).
//
//	BGCHECK_WEBHOOK_SECRET=whsec_… go run ./docs/examples/receiver -addr 127.0.0.1:9000
//
// then register http://127.0.0.1:9000/webhooks as an endpoint (bgcheck must run with
// BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS=true to deliver to a local address, as make dev does).
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"sync"

	"github.com/bgcheck/bgcheck/webhook"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	flag.Parse()
	secret := os.Getenv("BGCHECK_WEBHOOK_SECRET")
	if secret == "" {
		log.Fatal("set BGCHECK_WEBHOOK_SECRET to the endpoint's secret (whsec_…)")
	}
	http.Handle("POST /webhooks", handler(secret, log.Default()))
	log.Printf("listening on http://%s/webhooks", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// handler verifies and records deliveries. In production, keep the seen ids in your database
// (a unique key on the event id) rather than in memory.
func handler(secret string, logger *log.Logger) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Verify over the exact bytes received: never over re-encoded JSON.
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, body, r.Header.Get(webhook.SignatureHeader)); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev webhook.Envelope
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		mu.Lock()
		dup := seen[ev.ID]
		seen[ev.ID] = true
		mu.Unlock()
		if dup {
			logger.Printf("%s %s (attempt %s): already handled", ev.Type, ev.ID, r.Header.Get("X-Service-Delivery-Attempt"))
		} else {
			logger.Printf("%s %s (attempt %s): %s", ev.Type, ev.ID, r.Header.Get("X-Service-Delivery-Attempt"), ev.Data)
		}
		w.WriteHeader(http.StatusNoContent) // answer fast; do slow work after, or in a queue
	})
}
