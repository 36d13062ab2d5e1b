//! The cloud-config file: upstream's keys, errors naming the file, the line and the key.

use std::time::Duration;

use cloudprovider::{BuildError, ProviderContext, Purpose};
use cloudprovider_externalgrpc::ExternalGrpcConfig;

use crate::common::*;

fn config_error(text: &str) -> String {
    let dir = temp_dir("config");
    let path = write(dir.path(), "cloud-config.yaml", text);
    match try_client(&path) {
        Err(BuildError::Config(message)) => message,
        Err(other) => panic!("expected a configuration error, got {other:?}"),
        Ok(_) => panic!("expected a configuration error for {text:?}"),
    }
}

#[test]
fn upstreams_keys_and_defaults() {
    let config = ExternalGrpcConfig::from_yaml_str("address: 10.0.0.1:8086\n", "c.yaml").unwrap();
    assert_eq!(config.address, "10.0.0.1:8086");
    assert_eq!(config.grpc_timeout, Duration::from_secs(5));
    assert_eq!(config.tls, None);
    let config = ExternalGrpcConfig::from_yaml_str("address: \"[::1]:8086\"\ngrpc_timeout: 1m30s\n", "c.yaml").unwrap();
    assert_eq!(config.grpc_timeout, Duration::from_secs(90));
    // key / cacert without cert: plaintext, as upstream.
    let config = ExternalGrpcConfig::from_yaml_str("address: h:1\ncacert: /nowhere/ca.crt\n", "c.yaml").unwrap();
    assert_eq!(config.tls, None);
}

#[test]
fn the_tls_server_name_is_the_host_of_the_address() {
    let pki = Pki::new("names");
    let dir = temp_dir("names");
    let (ca, cert, key) = pki.write_client_files(dir.path());
    let text = format!(
        "address: \"[fd00::1]:8086\"\ncert: {}\nkey: {}\ncacert: {}\n",
        cert.display(),
        key.display(),
        ca.display()
    );
    let config = ExternalGrpcConfig::from_yaml_str(&text, "c.yaml").unwrap();
    assert_eq!(config.tls.unwrap().server_name, "fd00::1");
}

#[test]
fn errors_name_the_file_line_and_key() {
    let message = config_error("address: 10.0.0.1:8086\ngrpc_timeout: 5 seconds\n");
    assert!(message.contains("cloud-config.yaml:2: grpc_timeout: invalid duration"), "{message}");
    let message = config_error("address: 10.0.0.1:8086\ngrpc_timeout: 0s\n");
    assert!(message.contains("cloud-config.yaml:2: grpc_timeout: must be positive"), "{message}");
    let message = config_error("# the provider\naddress: 10.0.0.1\n");
    assert!(message.contains("cloud-config.yaml:2: address: invalid address \"10.0.0.1\""), "{message}");
    let message = config_error("address: 10.0.0.1:8086\ntimeout: 5s\n");
    assert!(message.contains("cloud-config.yaml:2") && message.contains("timeout"), "{message}");
    let message = config_error("grpc_timeout: 5s\n");
    assert!(message.contains("cloud-config.yaml: address: required"), "{message}");
    let message = config_error("address: h:1\ncert: /nowhere/tls.crt\n");
    assert!(message.contains("cloud-config.yaml:2: key: required with cert"), "{message}");
    let message =
        config_error("address: h:1\ncert: /nowhere/tls.crt\nkey: /nowhere/tls.key\ncacert: /nowhere/ca.crt\n");
    assert!(message.contains("cloud-config.yaml:4: cacert: /nowhere/ca.crt: cannot read the file"), "{message}");
}

#[test]
fn a_bad_certificate_file_is_named() {
    let pki = Pki::new("bad");
    let dir = temp_dir("bad-cert");
    let (ca, _, key) = pki.write_client_files(dir.path());
    let cert = write(dir.path(), "tls.crt", "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n");
    let message = config_error(&format!(
        "address: h:1\ncert: {}\nkey: {}\ncacert: {}\n",
        cert.display(),
        key.display(),
        ca.display()
    ));
    assert!(message.contains(":2: cert: ") && message.contains("tls.crt"), "{message}");
    let empty_key = write(dir.path(), "empty.key", "");
    let message = config_error(&format!(
        "address: h:1\ncert: {}\nkey: {}\ncacert: {}\n",
        pki_cert(dir.path(), &pki).display(),
        empty_key.display(),
        ca.display()
    ));
    assert!(message.contains(":3: key: ") && message.contains("empty.key"), "{message}");
}

fn pki_cert(dir: &std::path::Path, pki: &Pki) -> std::path::PathBuf {
    write(dir, "good.crt", &pki.client_cert_pem)
}

#[test]
fn the_factory_needs_a_cloud_config_and_refuses_flags_it_cannot_use() {
    let rt = runtime();
    let context = ProviderContext::new("externalgrpc", Purpose::Check);
    let error = rt.block_on(cloudprovider_externalgrpc::build(context)).err().unwrap();
    assert!(error.to_string().contains("--cloud-config"), "{error}");
    assert_eq!(error.exit_code(), 2);
    let mut context = ProviderContext::new("externalgrpc", Purpose::Check);
    context.node_group_specs = vec!["1:3:pool".into()];
    let error = rt.block_on(cloudprovider_externalgrpc::build(context)).err().unwrap();
    assert!(error.to_string().contains("--nodes=1:3:pool"), "{error}");
}

#[test]
fn a_check_does_not_connect() {
    // Nothing listens there; a check must still succeed, quickly.
    let dir = temp_dir("check");
    let path = write(dir.path(), "cloud.yaml", "address: 127.0.0.1:9\n");
    let mut context = ProviderContext::new("externalgrpc", Purpose::Check);
    context.cloud_config = Some(path);
    let started = std::time::Instant::now();
    assert!(runtime().block_on(cloudprovider_externalgrpc::build(context)).is_ok());
    assert!(started.elapsed() < Duration::from_secs(1));
}
