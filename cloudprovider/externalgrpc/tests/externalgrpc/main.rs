//! The externalgrpc client and server, end to end over loopback TCP.

mod common;
mod roundtrip;
