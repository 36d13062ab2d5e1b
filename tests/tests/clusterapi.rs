//! The `clusterapi` provider against the fake API server serving the Cluster API CRDs, with the
//! real kube-rs client: the provider alone (`clusterapi/provider.rs`) and the real binary in
//! both layouts (`clusterapi/controller.rs`), with a small stand-in for Cluster API's controllers
//! (`clusterapi/fixtures.rs`).

#[path = "clusterapi/controller.rs"]
mod controller;
#[path = "clusterapi/fixtures.rs"]
mod fixtures;
#[path = "clusterapi/provider.rs"]
mod provider;
