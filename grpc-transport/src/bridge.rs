//! A background thread with its own tokio runtime, for gRPC.
//!
//! Why: the expanders and `PricingModel` are synchronous (they run inside the pure decision
//! function, sometimes on a current-thread runtime), yet talk gRPC. Blocking on a future from a
//! thread that is itself driving a runtime deadlocks a current-thread runtime and panics in tokio
//! (`block_on` inside a runtime). Here the future runs on the bridge's own thread and the caller
//! only waits on a plain channel, with a deadline, which is safe from any thread.
//!
//! Async callers use it too ([`BlockingBridge::run`]): the channel and its connection live on
//! the bridge, so calls work whatever runtime the caller is on (even one without timers, or a
//! runtime that did not exist when the channel was made), and a provider built in one runtime
//! keeps working in another.

use std::future::Future;
use std::sync::Mutex;
use std::sync::mpsc;
use std::thread::ThreadId;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BridgeError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the gRPC client runtime has stopped")]
    Stopped,
    #[error("the gRPC call failed unexpectedly (it panicked)")]
    Panicked,
    #[error("cannot start the gRPC client runtime: {0}")]
    Start(String),
}

/// Owns a thread driving a current-thread tokio runtime (with I/O and timers). Dropping the
/// bridge stops the runtime; calls still running then end with [`BridgeError::Stopped`].
#[derive(Debug)]
pub struct BlockingBridge {
    handle: Handle,
    thread: ThreadId,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
}

impl BlockingBridge {
    /// Starts the thread (named `name`) and its runtime.
    pub fn start(name: &str) -> Result<BlockingBridge, BridgeError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| BridgeError::Start(e.to_string()))?;
        let handle = runtime.handle().clone();
        let (shutdown, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                // Returns when the bridge is dropped (the sender goes away); the runtime is then
                // dropped here, outside any async context, which cancels what is left.
                let _ = runtime.block_on(stopped);
            })
            .map_err(|e| BridgeError::Start(e.to_string()))?;
        Ok(BlockingBridge { handle, thread: thread.thread().id(), shutdown: Mutex::new(Some(shutdown)) })
    }

    /// The bridge's runtime, e.g. to create a channel inside it (`let _guard = handle.enter()`).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `future` on the bridge and waits for it, at most `deadline`, from synchronous code.
    /// Safe from any thread, including one driving another tokio runtime (the caller's thread
    /// is blocked meanwhile, as for any synchronous call). On the deadline the future is
    /// dropped, which cancels the call.
    pub fn block_on<F>(&self, deadline: Duration, future: F) -> Result<F::Output, BridgeError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if std::thread::current().id() == self.thread {
            // A future running on the bridge waiting for the bridge would wait for itself.
            return Err(BridgeError::Stopped);
        }
        let (sender, receiver) = mpsc::sync_channel(1);
        let task = self.handle.spawn(async move {
            let outcome = tokio::time::timeout(deadline, future).await;
            let _ = sender.send(outcome);
        });
        match receiver.recv_timeout(deadline + Duration::from_millis(50)) {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(_elapsed)) => Err(BridgeError::Timeout(deadline)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                task.abort();
                Err(BridgeError::Timeout(deadline))
            }
            // The task went away without sending: it panicked, or the runtime stopped.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(if self.is_stopped() { BridgeError::Stopped } else { BridgeError::Panicked })
            }
        }
    }

    /// Runs `future` on the bridge, for async callers on any runtime. No deadline here: the
    /// future carries its own ([`crate::with_deadline`]).
    pub async fn run<F>(&self, future: F) -> Result<F::Output, BridgeError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.handle.spawn(future).await {
            Ok(output) => Ok(output),
            Err(e) if e.is_panic() => Err(BridgeError::Panicked),
            Err(_) => Err(BridgeError::Stopped),
        }
    }

    fn is_stopped(&self) -> bool {
        self.shutdown.lock().map_or(true, |s| s.as_ref().is_none_or(|s| s.is_closed()))
    }
}

impl Drop for BlockingBridge {
    /// Signals the thread and does not wait for it: dropping may happen inside a runtime or on
    /// the bridge thread itself, where joining would block or deadlock.
    fn drop(&mut self) {
        if let Ok(mut shutdown) = self.shutdown.lock()
            && let Some(sender) = shutdown.take()
        {
            let _ = sender.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_synchronous_caller_gets_the_answer() {
        let bridge = BlockingBridge::start("test-bridge").unwrap();
        assert_eq!(bridge.block_on(Duration::from_secs(5), async { 6 * 7 }), Ok(42));
    }

    #[test]
    fn calls_from_inside_a_current_thread_runtime_without_timers_do_not_deadlock() {
        let bridge = Arc::new(BlockingBridge::start("test-bridge").unwrap());
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let inner = bridge.clone();
        let answer = runtime.block_on(async move {
            // Uses the bridge's timers, not the caller's (this runtime has none).
            inner.block_on(Duration::from_secs(5), async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                "slept"
            })
        });
        assert_eq!(answer, Ok("slept"));
        let answer = runtime.block_on(bridge.run(async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            7
        }));
        assert_eq!(answer, Ok(7));
    }

    #[test]
    fn calls_from_inside_a_multi_thread_runtime_do_not_panic() {
        let bridge = Arc::new(BlockingBridge::start("test-bridge").unwrap());
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let inner = bridge.clone();
        let answer = runtime.block_on(async move { inner.block_on(Duration::from_secs(5), async { 1 }) });
        assert_eq!(answer, Ok(1));
    }

    #[test]
    fn a_slow_future_is_a_timeout_after_about_the_deadline() {
        let bridge = BlockingBridge::start("test-bridge").unwrap();
        let started = Instant::now();
        let outcome = bridge.block_on(Duration::from_millis(100), async {
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        assert_eq!(outcome, Err(BridgeError::Timeout(Duration::from_millis(100))));
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(100) && elapsed < Duration::from_secs(2), "{elapsed:?}");
    }

    #[test]
    fn a_panicking_future_is_an_error_not_a_panic() {
        let bridge = BlockingBridge::start("test-bridge").unwrap();
        let outcome = bridge.block_on(Duration::from_secs(5), async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
        });
        assert_eq!(outcome, Err(BridgeError::Panicked));
        // The bridge still works afterwards.
        assert_eq!(bridge.block_on(Duration::from_secs(5), async { 2 }), Ok(2));
    }

    #[test]
    fn waiting_on_the_bridge_from_the_bridge_is_refused_not_a_deadlock() {
        let bridge = Arc::new(BlockingBridge::start("test-bridge").unwrap());
        let inner = bridge.clone();
        let outcome =
            bridge.block_on(Duration::from_secs(5), async move { inner.block_on(Duration::from_secs(5), async { 1 }) });
        assert_eq!(outcome, Ok(Err(BridgeError::Stopped)));
    }
}
