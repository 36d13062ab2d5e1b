//! Embedded pod autoscalers (HPA autoscaling/v2 and Watermark Pod Autoscaler).
