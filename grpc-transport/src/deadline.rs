//! Per-call deadlines, as upstream's Go clients set them: the deadline travels to the server in
//! the `grpc-timeout` header (so the server can give up too) and is enforced locally, connection
//! set-up included (tonic's own timeout starts only once a connection exists).

use std::future::Future;
use std::time::Duration;

use tonic::{Code, Request, Status};

/// `message` as a request whose deadline is `deadline` from now, sent to the server.
pub fn request_with_deadline<T>(message: T, deadline: Duration) -> Request<T> {
    let mut request = Request::new(message);
    request.set_timeout(deadline);
    request
}

/// Runs a call with a local deadline. A call still running at the deadline ends with
/// `DEADLINE_EXCEEDED`, as in Go; tonic's own expiry (reported as `CANCELLED`, "Timeout
/// expired") is reported the same way.
pub async fn with_deadline<T, F>(deadline: Duration, call: F) -> Result<T, Status>
where
    F: Future<Output = Result<T, Status>>,
{
    match tokio::time::timeout(deadline, call).await {
        Ok(Err(status)) if status.code() == Code::Cancelled && status.message() == "Timeout expired" => {
            Err(Status::deadline_exceeded(format!("no answer within {deadline:?}")))
        }
        Ok(outcome) => outcome,
        Err(_) => Err(Status::deadline_exceeded(format!("no answer within {deadline:?}"))),
    }
}

/// The canonical name of a status code (`UNAVAILABLE`, `DEADLINE_EXCEEDED`), as the gRPC
/// specification and other languages' logs spell it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// A status for people: `unavailable: <message and its causes>`.
pub fn code_text(status: &Status) -> String {
    let code = code_name(status.code()).to_lowercase().replace('_', " ");
    let mut text = format!("{code}: {}", status.message());
    // Transport failures (refused connections, TLS) keep their cause in the source chain.
    let mut source = std::error::Error::source(status);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_deadline_to_the_server() {
        let request = request_with_deadline((), Duration::from_millis(1500));
        let header = request.metadata().get("grpc-timeout").unwrap().to_str().unwrap().to_string();
        assert_eq!(header, "1500000u");
    }

    #[test]
    fn a_call_past_its_deadline_is_deadline_exceeded() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let status = runtime
            .block_on(with_deadline(Duration::from_millis(20), async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<(), Status>(())
            }))
            .unwrap_err();
        assert_eq!(status.code(), Code::DeadlineExceeded);
        let status = runtime.block_on(with_deadline(Duration::from_secs(1), async {
            Err::<(), _>(Status::cancelled("Timeout expired"))
        }));
        assert_eq!(status.unwrap_err().code(), Code::DeadlineExceeded);
    }

    #[test]
    fn codes_read_like_the_specification() {
        assert_eq!(code_name(Code::Unavailable), "UNAVAILABLE");
        assert_eq!(code_text(&Status::unavailable("connection refused")), "unavailable: connection refused");
        assert_eq!(code_text(&Status::deadline_exceeded("late")), "deadline exceeded: late");
    }
}
