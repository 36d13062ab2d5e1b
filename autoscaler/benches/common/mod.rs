//! The ports the control-loop benches run through: a fixed cluster view and an action side that
//! does nothing.

use async_trait::async_trait;
use autoscaler::core::ClusterView;
use autoscaler::ports::{ClusterActions, ClusterReader, Event, EvictionError, PortError, Scale, ScaleTarget};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::api::core::v1::Taint;

/// The cluster, the same at every read.
pub struct FixedView(pub ClusterView);

#[async_trait]
impl ClusterReader for FixedView {
    async fn view(&self) -> Result<ClusterView, PortError> {
        Ok(self.0.clone())
    }
}

/// Every action succeeds and changes nothing.
pub struct NoActions;

#[async_trait]
impl ClusterActions for NoActions {
    async fn taint_node(&self, _: &str, _: Taint, _: bool) -> Result<(), PortError> {
        Ok(())
    }
    async fn untaint_node(&self, _: &str, _: &str, _: bool) -> Result<(), PortError> {
        Ok(())
    }
    async fn evict_pod(&self, _: &str, _: &str, _: i64) -> Result<(), EvictionError> {
        Ok(())
    }
    async fn get_scale(&self, t: &ScaleTarget) -> Result<Scale, PortError> {
        Err(PortError::NotFound { kind: t.kind.clone(), name: t.name.clone() })
    }
    async fn set_scale(&self, _: &ScaleTarget, _: i32) -> Result<(), PortError> {
        Ok(())
    }
    async fn write_status(&self, _: &str, _: &str, _: &str, _: &str) -> Result<(), PortError> {
        Ok(())
    }
    async fn record_event(&self, _: Event) -> Result<(), PortError> {
        Ok(())
    }
    async fn update_hpa_status(&self, _: &str, _: &str, _: HorizontalPodAutoscalerStatus) -> Result<(), PortError> {
        Ok(())
    }
    async fn update_wpa_status(
        &self,
        _: &str,
        _: &str,
        _: autoscaler::hpa::wpa::WatermarkPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        Ok(())
    }
}
