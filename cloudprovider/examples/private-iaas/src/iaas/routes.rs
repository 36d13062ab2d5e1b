//! HTTP: routes, JSON bodies, the request-level faults. Handlers hold the state's lock only for
//! the synchronous model call, never across an await.

use std::sync::{MutexGuard, PoisonError};
use std::time::Instant;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::SharedCloud;
use super::state::{ApiError, Cloud, RequestFault};
use crate::api::{
    CreateVm, ErrorBody, ErrorDetail, FaultRequest, FlavorList, Image, ImageList, PoolList, SettleRequest, VmList,
};

/// The API's routes over `cloud`.
pub fn router(cloud: SharedCloud) -> Router {
    let v1 = Router::new()
        .route("/v1/flavors", get(flavors))
        .route("/v1/images", get(images))
        .route("/v1/pools", get(pools))
        .route("/v1/pools/{pool}/vms", get(list_vms).post(create_vm))
        .route("/v1/pools/{pool}/vms/{id}", get(get_vm).delete(delete_vm))
        // A route layer runs only for matched routes: unknown paths get no faults and no stats.
        .route_layer(middleware::from_fn_with_state(cloud.clone(), request_faults));
    let admin = Router::new()
        .route("/admin/faults", get(get_faults).post(arm_faults).delete(clear_faults))
        .route("/admin/stats", get(stats))
        .route("/admin/settle", axum::routing::post(settle));
    v1.merge(admin)
        .fallback(|| async { error(StatusCode::NOT_FOUND, "NotFound", "no such route".into()) })
        .method_not_allowed_fallback(|| async {
            error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "method not allowed on this route".into())
        })
        .with_state(cloud)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error(self.status, self.code, self.message)
    }
}

fn error(status: StatusCode, code: &str, message: String) -> Response {
    (status, Json(ErrorBody { error: ErrorDetail { code: code.to_string(), message } })).into_response()
}

/// The state, even if a handler panicked while holding it (the model stays consistent between
/// calls: every mutation is a single push, retain or field update).
fn lock(cloud: &SharedCloud) -> MutexGuard<'_, Cloud> {
    cloud.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A JSON body, or 400 with serde's message (axum's own extractor answers 415 / 422 in text).
fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
}

fn ok<T: Serialize>(status: StatusCode, value: T) -> Response {
    (status, Json(value)).into_response()
}

/// Path parameters, or 400 with a JSON message (axum's own extractor answers in text).
struct Params<T>(T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Params<T>, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(params)) => Ok(Params(params)),
            Err(rejection) => Err(ApiError::bad_request(rejection.body_text())),
        }
    }
}

/// The route a `/v1` path matched, with its parameters as written in the router
/// (`/v1/pools/{pool}/vms`), for the stats. (axum's `MatchedPath` would need another feature of
/// axum for the whole workspace.)
fn route_of(path: &str) -> String {
    let mut segments: Vec<&str> = path.split('/').collect();
    // ["", "v1", "pools", pool, "vms", id]
    if segments.get(2) == Some(&"pools") && segments.len() > 3 {
        segments[3] = "{pool}";
        if segments.len() > 5 {
            segments[5] = "{id}";
        }
    }
    segments.join("/")
}

async fn request_faults(State(cloud): State<SharedCloud>, request: Request, next: Next) -> Response {
    let route = format!("{} {}", request.method(), route_of(request.uri().path()));
    let fault = {
        let mut cloud = lock(&cloud);
        let fault = cloud.take_request_fault(&route);
        cloud.count(route);
        fault
    };
    match fault {
        RequestFault::ServerError => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "injected fault: server error".into())
        }
        RequestFault::Slow(delay) => {
            let response = next.run(request).await;
            tokio::time::sleep(delay).await;
            response
        }
        RequestFault::None => next.run(request).await,
    }
}

async fn flavors(State(cloud): State<SharedCloud>) -> Response {
    ok(StatusCode::OK, FlavorList { flavors: lock(&cloud).flavors() })
}

async fn images(State(cloud): State<SharedCloud>) -> Response {
    let images = lock(&cloud).images().into_iter().map(|name| Image { name }).collect();
    ok(StatusCode::OK, ImageList { images })
}

async fn pools(State(cloud): State<SharedCloud>) -> Response {
    ok(StatusCode::OK, PoolList { pools: lock(&cloud).pools(Instant::now()) })
}

async fn list_vms(State(cloud): State<SharedCloud>, Params(pool): Params<String>) -> Result<Response, ApiError> {
    let vms = lock(&cloud).list(&pool, Instant::now())?;
    Ok(ok(StatusCode::OK, VmList { vms }))
}

async fn create_vm(
    State(cloud): State<SharedCloud>,
    Params(pool): Params<String>,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let request: CreateVm = body(&bytes)?;
    let vm = lock(&cloud).create(&pool, request, Instant::now())?;
    Ok(ok(StatusCode::ACCEPTED, vm))
}

async fn get_vm(
    State(cloud): State<SharedCloud>,
    Params((pool, id)): Params<(String, String)>,
) -> Result<Response, ApiError> {
    let vm = lock(&cloud).get(&pool, &id, Instant::now())?;
    Ok(ok(StatusCode::OK, vm))
}

async fn delete_vm(
    State(cloud): State<SharedCloud>,
    Params((pool, id)): Params<(String, String)>,
) -> Result<Response, ApiError> {
    let vm = lock(&cloud).delete(&pool, &id, Instant::now())?;
    Ok(ok(StatusCode::ACCEPTED, vm))
}

async fn get_faults(State(cloud): State<SharedCloud>) -> Response {
    ok(StatusCode::OK, lock(&cloud).faults())
}

async fn arm_faults(State(cloud): State<SharedCloud>, bytes: Bytes) -> Result<Response, ApiError> {
    let request: FaultRequest = body(&bytes)?;
    let faults = lock(&cloud).arm(request)?;
    Ok(ok(StatusCode::OK, faults))
}

async fn clear_faults(State(cloud): State<SharedCloud>) -> Response {
    ok(StatusCode::OK, lock(&cloud).clear_faults())
}

async fn settle(State(cloud): State<SharedCloud>, bytes: Bytes) -> Result<Response, ApiError> {
    let request: SettleRequest =
        if bytes.iter().all(u8::is_ascii_whitespace) { SettleRequest::default() } else { body(&bytes)? };
    let settled = lock(&cloud).settle_now(request.pool.as_deref(), Instant::now())?;
    Ok(ok(StatusCode::OK, settled))
}

async fn stats(State(cloud): State<SharedCloud>) -> Response {
    ok(StatusCode::OK, lock(&cloud).stats())
}
