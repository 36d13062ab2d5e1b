//! WatermarkPodAutoscalers (Datadog's CRD, `datadoghq.com/v1alpha1`) as a kube-rs resource,
//! and whether the cluster has the CRD at all: without it the WPA reflector is not started
//! (a watch on a missing resource would only fail and back off forever).

use std::borrow::Cow;

use ::kube::{Client, Resource};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::hpa::wpa::WatermarkPodAutoscaler;

pub const WPA_GROUP: &str = "datadoghq.com";
pub const WPA_VERSION: &str = "v1alpha1";
pub const WPA_PLURAL: &str = "watermarkpodautoscalers";

impl Resource for WatermarkPodAutoscaler {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "WatermarkPodAutoscaler".into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        WPA_GROUP.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        WPA_VERSION.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        WPA_PLURAL.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Whether the API server serves `watermarkpodautoscalers` in `datadoghq.com/v1alpha1`
/// (discovery). Any failure, a missing group included, counts as "no".
pub async fn wpa_crd_installed(client: &Client) -> bool {
    match client.list_api_group_resources(&format!("{WPA_GROUP}/{WPA_VERSION}")).await {
        Ok(list) => list.resources.iter().any(|r| r.name == WPA_PLURAL),
        Err(error) => {
            tracing::debug!(%error, "no WatermarkPodAutoscaler CRD; WPAs are not watched");
            false
        }
    }
}
