//! Shared fixtures for the end-to-end tests in `tests/tests/`.
