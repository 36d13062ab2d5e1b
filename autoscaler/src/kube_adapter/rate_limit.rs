//! Client-side rate limiting like client-go's (`--kube-client-qps`, `--kube-client-burst`): a
//! token bucket that holds up to `burst` tokens and refills at `qps` per second. Each request
//! (a watch counts once, when it connects) takes a token or waits for the next one.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower::{Layer, Service};

/// The token bucket, shared by every client built from one set of options.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    /// Tokens available (negative: reserved by waiting requests) and when last refilled.
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// `None` when `qps <= 0`: no limit, as client-go does for a negative QPS.
    pub fn new(qps: f32, burst: u32) -> Option<Arc<TokenBucket>> {
        (qps > 0.0).then(|| {
            let burst = f64::from(burst.max(1));
            Arc::new(TokenBucket { qps: f64::from(qps), burst, state: Mutex::new((burst, Instant::now())) })
        })
    }

    /// Reserves a token at `now`; returns how long the caller must wait before using it.
    pub fn reserve_at(&self, now: Instant) -> Duration {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, last) = *state;
        let elapsed = now.saturating_duration_since(last).as_secs_f64();
        let tokens = (tokens + elapsed * self.qps).min(self.burst) - 1.0;
        *state = (tokens, now.max(last));
        if tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-tokens / self.qps) }
    }

    pub fn reserve(&self) -> Duration {
        self.reserve_at(Instant::now())
    }
}

/// A tower layer that makes every request wait for a token of the bucket.
#[derive(Debug, Clone)]
pub struct RateLimitLayer(pub Arc<TokenBucket>);

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited { inner, bucket: self.0.clone() }
    }
}

#[derive(Debug, Clone)]
pub struct RateLimited<S> {
    inner: S,
    bucket: Arc<TokenBucket>,
}

impl<S, Request> Service<Request> for RateLimited<S>
where
    S: Service<Request>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let wait = self.bucket.reserve();
        // The inner future is lazy (hyper sends when polled), so waiting before polling it
        // delays the request itself.
        let response = self.inner.call(request);
        Box::pin(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            response.await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_is_free_then_requests_are_spaced_at_qps() {
        let bucket = TokenBucket::new(2.0, 3).unwrap();
        let t0 = Instant::now();
        assert_eq!(bucket.reserve_at(t0), Duration::ZERO);
        assert_eq!(bucket.reserve_at(t0), Duration::ZERO);
        assert_eq!(bucket.reserve_at(t0), Duration::ZERO);
        assert_eq!(bucket.reserve_at(t0), Duration::from_millis(500));
        assert_eq!(bucket.reserve_at(t0), Duration::from_millis(1000));
    }

    #[test]
    fn tokens_refill_over_time_up_to_the_burst() {
        let bucket = TokenBucket::new(1.0, 2).unwrap();
        let t0 = Instant::now();
        bucket.reserve_at(t0);
        bucket.reserve_at(t0);
        // Ten seconds later the bucket holds the burst (2), not 10.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(bucket.reserve_at(later), Duration::ZERO);
        assert_eq!(bucket.reserve_at(later), Duration::ZERO);
        assert_eq!(bucket.reserve_at(later), Duration::from_secs(1));
    }

    #[test]
    fn non_positive_qps_means_no_limit() {
        assert!(TokenBucket::new(0.0, 10).is_none());
        assert!(TokenBucket::new(-1.0, 10).is_none());
    }
}
