//! OpenTelemetry for `mcpmux call`, `run` and `serve`, switched on the standard way: with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, the spans of
//! the library (`mcpmux::call`), the gateway and the agent are exported over OTLP —
//! `OTEL_EXPORTER_OTLP_PROTOCOL` `http/protobuf` (the default) or `grpc` (over TLS to an
//! `https` endpoint: the system's roots, `OTEL_EXPORTER_OTLP_CERTIFICATE`'s CA, a client
//! certificate for mutual TLS) — under the resource
//! `OTEL_SERVICE_NAME` (`mcpmux` when unset) and `OTEL_RESOURCE_ATTRIBUTES` name, sampled as
//! `OTEL_TRACES_SAMPLER` says; and the library's propagator is installed, so that what mcpmux
//! sends carries W3C trace context and the gateway continues its clients' traces.
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keeps it off. Off, nothing here runs.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// The crates whose spans are exported (every span at `info` and above of each).
const TRACED: [&str; 4] = ["mcpmux", "mcpmux_gateway", "mcpmux_agent", "mcpmux_cli"];

/// A running export: shut down (its last spans sent) before the process exits.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

/// Whether the environment asks for export.
pub fn wanted() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let is = |name: &str, value: &str| {
        std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case(value))
    };
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
}

/// Starts the export the environment asks for (call inside the runtime: a gRPC exporter
/// needs it), and the layer that feeds it; `None` when not asked for.
pub fn start<S>() -> Result<Option<(Telemetry, impl Layer<S> + Send + Sync)>, String>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    if !wanted() {
        return Ok(None);
    }
    let builder = opentelemetry_otlp::SpanExporter::builder();
    let exporter = match grpc_tls()? {
        Some(tls) => {
            use opentelemetry_otlp::WithTonicConfig;
            builder.with_tonic().with_tls_config(tls).build()
        }
        None => builder.build(),
    }
    .map_err(|e| format!("cannot export traces (OTEL_EXPORTER_OTLP_*): {e}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !names_service() {
        resource = resource.with_service_name("mcpmux");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("mcpmux");
    mcpmux::telemetry::propagate::install(mcpmux::telemetry::w3c::W3cPropagator::default());
    let targets = TRACED.iter().fold(Targets::new(), |t, name| {
        t.with_target(*name, LevelFilter::INFO)
    });
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(targets);
    Ok(Some((Telemetry { provider }, layer)))
}

/// The first of `names` set (the signal's own variable, then the general one), trimmed.
fn first_set(names: [&str; 2]) -> Option<String> {
    names.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

/// For gRPC to an `https` endpoint, the TLS it is reached over (the exporter's own has no root
/// to trust): the system's roots, the CA of `OTEL_EXPORTER_OTLP_CERTIFICATE` (a collector's
/// own, self-signed), a client certificate and key for mutual TLS
/// (`OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE`, `…_CLIENT_KEY`); each `…_TRACES_…` first. `None`
/// for HTTP (reqwest's rustls has the roots) or a plain `http` endpoint.
fn grpc_tls() -> Result<Option<opentelemetry_otlp::tonic_types::transport::ClientTlsConfig>, String>
{
    use opentelemetry_otlp::tonic_types::transport::{Certificate, ClientTlsConfig, Identity};
    let protocol = first_set([
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]);
    let endpoint = first_set([
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]);
    let https = endpoint.is_some_and(|e| e.to_ascii_lowercase().starts_with("https://"));
    if protocol.as_deref() != Some("grpc") || !https {
        return Ok(None);
    }
    let read = |names: [&str; 2]| -> Result<Option<Vec<u8>>, String> {
        match first_set(names) {
            Some(path) => std::fs::read(&path)
                .map(Some)
                .map_err(|e| format!("cannot read {} ({path}): {e}", names[1])),
            None => Ok(None),
        }
    };
    let mut tls = ClientTlsConfig::new().with_native_roots();
    if let Some(ca) = read([
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
    ])? {
        tls = tls.ca_certificate(Certificate::from_pem(ca));
    }
    let cert = read([
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    ])?;
    let key = read([
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
        "OTEL_EXPORTER_OTLP_CLIENT_KEY",
    ])?;
    match (cert, key) {
        (Some(cert), Some(key)) => tls = tls.identity(Identity::from_pem(cert, key)),
        (None, None) => {}
        _ => {
            return Err(
                "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY \
                 go together (mutual TLS): set both or neither"
                    .into(),
            );
        }
    }
    Ok(Some(tls))
}

/// Whether the environment names the service (`OTEL_SERVICE_NAME`, or `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES`): else it is `mcpmux`.
fn names_service() -> bool {
    std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|attributes| {
            attributes
                .split(',')
                .any(|pair| pair.trim_start().starts_with("service.name="))
        })
}

impl Telemetry {
    /// Sends what is still queued and stops; on the runtime's blocking pool, so that a gRPC
    /// exporter's connection (a task of the runtime) is still driven meanwhile.
    pub async fn shutdown(self) {
        let provider = self.provider;
        let ended = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = ended {
            tracing::warn!("the last spans may not have been exported: {e}");
        }
    }
}
