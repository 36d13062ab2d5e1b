//! The fuzzing machinery of `fuzz_readers.rs`: input generators and the runner.

pub mod generate;
pub mod harness;
