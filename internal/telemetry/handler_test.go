package telemetry

import (
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// slowGatherer holds every gathering until released.
type slowGatherer struct {
	started chan struct{}
	release chan struct{}
}

func (g slowGatherer) Gather() ([]*dto.MetricFamily, error) {
	g.started <- struct{}{}
	<-g.release
	return nil, nil
}

// TestScrapeFloodRefused: scrapes past ScrapesInFlight are answered 503
// at once instead of queueing gatherings behind the host's metrics lock.
func TestScrapeFloodRefused(t *testing.T) {
	g := slowGatherer{started: make(chan struct{}, ScrapesInFlight), release: make(chan struct{})}
	h := Handler(g)
	done := make(chan int, ScrapesInFlight)
	for range ScrapesInFlight {
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			done <- rec.Code
		}()
	}
	for range ScrapesInFlight {
		<-g.started
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a scrape past %d in flight: %d, want 503", ScrapesInFlight, rec.Code)
	}
	close(g.release)
	for range ScrapesInFlight {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a scrape in flight: %d", code)
		}
	}
}
