//! Configuration: upstream's flags (`flags`) and the typed options the core reads (`options`).

pub mod compat;
pub mod flags;
pub mod logging;
pub mod options;

pub use flags::DecisionFlags;
pub use options::{AutoscalingOptions, BalancingOptions, ConfigError, GpuLimit};
