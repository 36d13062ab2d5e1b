//! The externalgrpc client and server, end to end over loopback TCP.

mod caching;
mod common;
mod config;
mod faults;
mod roundtrip;
mod tls;
