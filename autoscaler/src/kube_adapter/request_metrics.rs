//! client-go's `rest_client_requests_total{code,method,host}`, which upstream's `/metrics`
//! exposes (its metrics package registers client-go's metrics): every HTTP request the
//! controller's Kubernetes clients make, by answer. A burst of 5xx or 429 answers from the API
//! server shows here, retried attempts included, while the loop itself goes on (a list or watch
//! that fails is retried by the reflector; upstream's `errors_total` counts failed loops only).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tower::{Layer, Service};

type Labels = [(&'static str, String); 3];

/// client-go's `code` label for a request that got no HTTP answer (connection refused, reset).
pub const NO_ANSWER_CODE: &str = "<error>";

/// The counter family, shared by every client of one process (cloning shares it).
#[derive(Clone, Debug, Default)]
pub struct RestClientRequests(Family<Labels, Counter>);

impl RestClientRequests {
    /// Registers `rest_client_requests_total` in `registry` (which must have no prefix: the
    /// name is client-go's, not `cluster_autoscaler_*`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            self.0.clone(),
        );
    }

    fn count(&self, code: String, method: &http::Method, host: &str) {
        self.0.get_or_create(&[("code", code), ("method", method.to_string()), ("host", host.to_string())]).inc();
    }

    /// The count so far for one label set (tests).
    pub fn get(&self, code: &str, method: &str, host: &str) -> u64 {
        self.0.get_or_create(&[("code", code.into()), ("method", method.into()), ("host", host.into())]).get()
    }
}

/// A tower layer counting every request that passes through it; `host` is the API server's
/// `host:port`, as client-go's label.
#[derive(Clone, Debug)]
pub struct CountRequestsLayer {
    pub counts: RestClientRequests,
    pub host: String,
}

impl<S> Layer<S> for CountRequestsLayer {
    type Service = CountRequests<S>;

    fn layer(&self, inner: S) -> CountRequests<S> {
        CountRequests { inner, counts: self.counts.clone(), host: self.host.clone() }
    }
}

#[derive(Clone, Debug)]
pub struct CountRequests<S> {
    inner: S,
    counts: RestClientRequests,
    host: String,
}

impl<S, RequestBody, ResponseBody> Service<http::Request<RequestBody>> for CountRequests<S>
where
    S: Service<http::Request<RequestBody>, Response = http::Response<ResponseBody>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<RequestBody>) -> Self::Future {
        let method = request.method().clone();
        let (counts, host) = (self.counts.clone(), self.host.clone());
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = response.await;
            let code = match &result {
                Ok(answer) => answer.status().as_u16().to_string(),
                Err(_) => NO_ANSWER_CODE.to_string(),
            };
            counts.count(code, &method, &host);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server answering `Some(status)`, or failing without an answer for `None`.
    struct Answer(Option<u16>);

    impl Service<http::Request<()>> for Answer {
        type Response = http::Response<()>;
        type Error = &'static str;
        type Future = std::future::Ready<Result<http::Response<()>, &'static str>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: http::Request<()>) -> Self::Future {
            std::future::ready(match self.0 {
                Some(status) => Ok(http::Response::builder().status(status).body(()).expect("a valid status")),
                None => Err("connection refused"),
            })
        }
    }

    #[tokio::test]
    async fn every_answer_is_counted_by_code_method_and_host_and_a_failure_as_error() {
        let counts = RestClientRequests::default();
        let layer = CountRequestsLayer { counts: counts.clone(), host: "api:6443".into() };
        for status in [200, 500, 500, 429] {
            let get = http::Request::get("/api/v1/pods").body(()).unwrap();
            layer.layer(Answer(Some(status))).call(get).await.unwrap();
        }
        let post = http::Request::post("/api/v1/namespaces/default/events").body(()).unwrap();
        assert!(layer.layer(Answer(None)).call(post).await.is_err());
        assert_eq!(counts.get("200", "GET", "api:6443"), 1);
        assert_eq!(counts.get("500", "GET", "api:6443"), 2);
        assert_eq!(counts.get("429", "GET", "api:6443"), 1);
        assert_eq!(counts.get(NO_ANSWER_CODE, "POST", "api:6443"), 1);
        let mut registry = Registry::default();
        counts.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains(r#"rest_client_requests_total{code="500",method="GET",host="api:6443"} 2"#), "{text}");
    }
}
