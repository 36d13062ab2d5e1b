//! A stopwatch for the steps of an iteration, on the process's monotonic clock (a virtual clock
//! in `simulate` would make them zero). What is decided never depends on it.

use std::time::{Duration, Instant};

/// Laps of a stopwatch: each `lap` is the time since the previous one (or the start).
pub struct Laps(Instant);

impl Laps {
    pub fn start() -> Self {
        Laps(Instant::now())
    }

    /// The time since the last lap (or the start), and a new lap.
    pub fn lap(&mut self) -> Duration {
        let now = Instant::now();
        let elapsed = now.duration_since(self.0);
        self.0 = now;
        elapsed
    }
}
