//! Generates the gRPC client and server of `proto/externalgrpc.proto`. protox parses the file in
//! pure Rust (it carries the well-known `google/protobuf/*.proto` types), so no `protoc` needs
//! to be installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/externalgrpc.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(descriptors)?;
    Ok(())
}
