package apiserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/api"
)

// Every phase of a connection is bounded, and a request's own deadline ends before the write
// timeout, so its 503 reaches the caller instead of a cut connection.
func TestHTTPServerBoundsEveryPhase(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler())
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 {
			t.Errorf("%s is %v: unbounded", name, d)
		}
	}
	if srv.WriteTimeout <= api.DefaultRequestTimeout {
		t.Errorf("write timeout %s does not outlast the request deadline %s", srv.WriteTimeout, api.DefaultRequestTimeout)
	}
}
