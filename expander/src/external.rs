//! The `grpc` step: upstream's gRPC expander (`grpcplugin`) as a chain step, backed by any
//! [`ExternalExpander`]. The transport lives elsewhere (the `expander-grpc` crate); this crate
//! keeps upstream's rules for what the step keeps, so they hold whatever the backend:
//!
//! - the backend could not answer (connection, deadline, TLS, …): every option passes, logged;
//! - it answered no options: none is kept (the scale-up chooses nothing);
//! - ids it answers that are not among the options are dropped, each logged; if none of its
//!   ids is known, every option passes, logged.

use std::fmt;

use crate::ExpansionOption;

/// A synchronous "best options" oracle, such as a gRPC expander service. Called inside the
/// decision function, so it must return within its own deadline and never panic.
pub trait ExternalExpander: Send + Sync + fmt::Debug {
    /// The node group ids the backend prefers among `options`, or why it gave no answer.
    fn best_options(&self, options: &[&ExpansionOption]) -> Result<Vec<String>, String>;
}

/// Upstream's filtering of an external answer: which of `survivors` (indices into `options`)
/// the `grpc` step keeps, in the order they entered the step.
pub(crate) fn external_among(
    backend: Option<&dyn ExternalExpander>,
    options: &[ExpansionOption],
    survivors: &[usize],
) -> Vec<usize> {
    let Some(backend) = backend else {
        tracing::warn!("grpc expander: no client configured, filtering no options");
        return survivors.to_vec();
    };
    let offered: Vec<&ExpansionOption> = survivors.iter().map(|&i| &options[i]).collect();
    let answer = match backend.best_options(&offered) {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!("grpc expander: call failed, no options filtered: {error}");
            return survivors.to_vec();
        }
    };
    if answer.is_empty() {
        tracing::info!("grpc expander: the service returned no options");
        return Vec::new();
    }
    for id in &answer {
        if !offered.iter().any(|o| &o.node_group_id == id) {
            tracing::warn!("grpc expander: the service returned an unknown node group id {id:?}, dropped");
        }
    }
    let kept: Vec<usize> =
        survivors.iter().copied().filter(|&i| answer.iter().any(|id| *id == options[i].node_group_id)).collect();
    if kept.is_empty() {
        tracing::warn!("grpc expander: none of the returned ids is an option, no options filtered");
        return survivors.to_vec();
    }
    kept
}
