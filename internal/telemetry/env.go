package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TracingFromEnv returns the tracer provider the standard OTEL_* variables
// ask for, or nil when they ask for none. Traces are exported over OTLP
// when OTEL_TRACES_EXPORTER is "otlp", or when it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set; "none", OTEL_SDK_DISABLED=true, or neither variable means off.
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL may be http/protobuf (the default);
// the exporter reads the endpoint, headers, timeout, compression and
// certificates from the environment itself, the SDK reads OTEL_BSP_* and
// OTEL_TRACES_SAMPLER, and the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES (service.name defaults to "dsh-host").
//
// A failed export is logged through logger (rate limited: the first at
// once, then one line a minute), never printed by OTel itself.
//
// The caller must Shutdown the provider on exit: that flushes the spans
// still batched.
func TracingFromEnv(ctx context.Context, getenv func(string) string, version string, logger *slog.Logger) (*sdktrace.TracerProvider, error) {
	on, err := tracingWanted(getenv)
	if err != nil || !on {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "dsh-host"), attribute.String("service.version", version)),
		resource.WithFromEnv(), // after the defaults: OTEL_SERVICE_NAME wins
		resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(newLoggedExporter(exp, logger)), sdktrace.WithResource(res)), nil
}

// tracingWanted says whether the environment asks for traces, and refuses
// what this build cannot do rather than silently exporting nothing.
func tracingWanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporter {
	case "none":
		return false, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, nil
		}
	case "otlp":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: dsh-host exports traces over otlp only; set otlp, or none for no traces", exporter)
	}
	// The traces-specific variable wins over the general one.
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := strings.TrimSpace(getenv(name))
	if protocol == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = strings.TrimSpace(getenv(name))
	}
	if protocol != "" && protocol != "http/protobuf" {
		return false, fmt.Errorf("%s=%s: dsh-host exports OTLP over http/protobuf only; set http/protobuf (port 4318 of a collector)", name, protocol)
	}
	return true, nil
}
