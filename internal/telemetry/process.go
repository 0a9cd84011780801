package telemetry

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dsh-host/dsh-host/internal/version"
)

// The metrics of the process as a whole, and those several packages count.
var (
	// BuildInfo is a constant 1 whose labels say the build, so that a
	// dashboard can join any series with the version that produced it.
	BuildInfo = Def{Name: "dsh_build_info", Kind: Gauge, Process: true,
		Help:   "1, labelled with the version, commit and Go version of the dsh-host build serving.",
		Labels: []string{"version", "commit", "goversion"}}
	// Panics counts the panics recovered while serving one request;
	// each package that recovers registers it and counts its where.
	Panics = Def{Name: "dsh_panics_total", Kind: Counter,
		Help:   "Panics recovered while serving one request (answered with an error, logged with their stack), by where: gateway (an MCP request's handling), http (the gateway's HTTP handlers), tool (a tool, hook or render in the tool registry).",
		Labels: []string{"where"}}
)

// MetricDefs are the metrics this package declares (docs/operations.md).
var MetricDefs = []Def{BuildInfo, Panics}

// Where a recovered panic happened (dsh_panics_total's where label).
const (
	PanicGateway = "gateway" // an MCP request's handling in the gateway (middleware, handlers)
	PanicHTTP    = "http"    // the gateway's HTTP handlers, before or around go-sdk's
	PanicTool    = "tool"    // a tool, hook or render run by the tool registry
)

// NewRegistry returns the process's registry (never client_golang's
// default one, which is global), with the build's identity and the Go
// runtime's and the process's collectors: what the binary gives the host
// (host.Options.Metrics).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	bi := version.Get()
	if err := BuildInfo.GaugeFunc(reg, func() float64 { return 1 }, bi.Version, bi.Commit, bi.GoVersion); err != nil {
		panic(err) // a new registry has nothing to collide with
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Scrapes in flight past ScrapesInFlight are answered 503 at once, and a
// scrape's gathering is given up after scrapeTimeout: a flood of scrapes
// cannot queue gatherings (each holds the host's metrics lock, which a
// reload waits for).
const (
	ScrapesInFlight = 2
	scrapeTimeout   = 10 * time.Second
)

// Handler serves g's metrics in Prometheus text format (at /metrics); a
// collector's error leaves out its series, not the others'.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: ScrapesInFlight,
		Timeout:             scrapeTimeout,
	})
}
