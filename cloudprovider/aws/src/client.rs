//! The AWS clients, built the SDK's standard way, with one interceptor that counts every
//! operation (and refuses changing ones when built for `plan`) and the histogram behind
//! upstream's `aws_request_duration_seconds`.
//!
//! Credentials, region, retries and endpoints come from `aws_config` (environment variables
//! including `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_AUTO_SCALING` / `AWS_ENDPOINT_URL_EC2`,
//! `AWS_MAX_ATTEMPTS`, profiles, IRSA web identity, instance metadata). The only additions are
//! upstream's cloud-config endpoint overrides. Throttling and 5xx answers are retried with
//! backoff by the SDK's standard retry strategy.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use aws_config::Region;
use aws_config::SdkConfig;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::config::CloudConfig;
use crate::error::status_label;

type Labels = [(&'static str, String); 2];

/// Upstream's buckets for `aws_request_duration_seconds`, in seconds.
const BUCKETS: [f64; 17] = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0];

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// What the provider's AWS calls did: a count per operation (every operation, through the
/// interceptor) and the request-duration histogram (per call site, with the AWS error code).
#[derive(Debug)]
pub struct ApiStats {
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    calls: Mutex<BTreeMap<String, u64>>,
    refused: Mutex<Vec<String>>,
}

impl Default for ApiStats {
    fn default() -> Self {
        ApiStats {
            durations: Family::new_with_constructor(histogram),
            calls: Mutex::new(BTreeMap::new()),
            refused: Mutex::new(Vec::new()),
        }
    }
}

impl ApiStats {
    /// How many times each operation (`DescribeAutoScalingGroups`, …) was sent so far.
    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// How many times `operation` was sent so far.
    pub fn count(&self, operation: &str) -> u64 {
        self.calls().get(operation).copied().unwrap_or(0)
    }

    /// Operations refused because the clients are read-only (built for `plan`).
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Registers `aws_request_duration_seconds{endpoint,status}` (the caller's registry carries
    /// the `cluster_autoscaler` prefix).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "aws_request_duration_seconds",
            "Time taken by AWS requests, by method and status code, in seconds",
            self.durations.clone(),
        );
    }

    fn observe(&self, endpoint: &str, status: String, seconds: f64) {
        self.durations.get_or_create(&[("endpoint", endpoint.to_string()), ("status", status)]).observe(seconds);
    }
}

/// Counts every operation by its name and, for read-only clients, refuses any operation that
/// is not a `Describe…` before it is sent.
#[derive(Debug)]
struct CountingInterceptor {
    stats: Arc<ApiStats>,
    read_only: bool,
}

impl Intercept for CountingInterceptor {
    fn name(&self) -> &'static str {
        "CountingInterceptor"
    }

    /// Runs once per operation (not per retry), after the operation's configuration (and so its
    /// name) is in place.
    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg.load::<Metadata>().map_or("unknown", |m| m.name()).to_string();
        if self.read_only && !operation.starts_with("Describe") {
            self.stats.refused.lock().unwrap_or_else(PoisonError::into_inner).push(operation.clone());
            return Err(format!("{operation} refused: the aws provider was built read-only (plan)").into());
        }
        *self.stats.calls.lock().unwrap_or_else(PoisonError::into_inner).entry(operation).or_insert(0) += 1;
        Ok(())
    }
}

/// The two service clients and what they record.
#[derive(Clone, Debug)]
pub struct AwsClients {
    pub(crate) autoscaling: aws_sdk_autoscaling::Client,
    pub(crate) ec2: aws_sdk_ec2::Client,
    pub(crate) stats: Arc<ApiStats>,
}

impl AwsClients {
    /// Clients from configuration builders (the SDK's, or test doubles'); `read_only` refuses
    /// every operation but `Describe…`.
    pub fn new(
        autoscaling: aws_sdk_autoscaling::config::Builder,
        ec2: aws_sdk_ec2::config::Builder,
        read_only: bool,
    ) -> AwsClients {
        let stats = Arc::new(ApiStats::default());
        let interceptor = || CountingInterceptor { stats: stats.clone(), read_only };
        AwsClients {
            autoscaling: aws_sdk_autoscaling::Client::from_conf(autoscaling.interceptor(interceptor()).build()),
            ec2: aws_sdk_ec2::Client::from_conf(ec2.interceptor(interceptor()).build()),
            stats,
        }
    }

    /// Clients from the SDK's standard configuration, with the cloud-config's endpoint
    /// overrides for the configured region.
    pub fn from_sdk_config(sdk: &SdkConfig, cloud: &CloudConfig, read_only: bool) -> AwsClients {
        let region = sdk.region().map(|r| r.to_string()).unwrap_or_default();
        let mut autoscaling = aws_sdk_autoscaling::config::Builder::from(sdk);
        if let Some(o) = cloud.override_for("autoscaling", &region) {
            autoscaling = autoscaling.endpoint_url(&o.url).region(Region::new(o.signing_region.clone()));
        }
        let mut ec2 = aws_sdk_ec2::config::Builder::from(sdk);
        if let Some(o) = cloud.override_for("ec2", &region) {
            ec2 = ec2.endpoint_url(&o.url).region(Region::new(o.signing_region.clone()));
        }
        AwsClients::new(autoscaling, ec2, read_only)
    }

    pub fn stats(&self) -> &Arc<ApiStats> {
        &self.stats
    }

    /// Runs one AWS call and records its duration under `endpoint` with upstream's status
    /// label (`success` or the AWS error code).
    pub(crate) async fn timed<T, E, R>(
        &self,
        endpoint: &'static str,
        call: impl Future<Output = Result<T, SdkError<E, R>>>,
    ) -> Result<T, SdkError<E, R>>
    where
        E: ProvideErrorMetadata,
    {
        let start = Instant::now();
        let result = call.await;
        let code = result.as_ref().err().and_then(|e| e.code().map(str::to_string));
        self.stats.observe(endpoint, status_label(code.as_deref(), result.is_err()), start.elapsed().as_secs_f64());
        result
    }
}
