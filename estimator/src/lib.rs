//! Binpacking estimator (to be written).
