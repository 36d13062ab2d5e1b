//! Mutual TLS with certificates made at test time; plaintext; refusals that say why.

use std::sync::Arc;

use cloudprovider::{CloudProvider, CloudProviderError};

use crate::common::*;

fn tls_config(dir: &std::path::Path, address: std::net::SocketAddr, pki: &Pki) -> std::path::PathBuf {
    let (ca, cert, key) = pki.write_client_files(dir);
    write(
        dir,
        "cloud.yaml",
        &format!(
            "address: {address}\ncert: {}\nkey: {}\ncacert: {}\ngrpc_timeout: 5s\n",
            cert.display(),
            key.display(),
            ca.display()
        ),
    )
}

#[test]
fn mutual_tls_with_certificates_of_one_ca_works() {
    let pki = Pki::new("good");
    let (memory, _) = memory_provider();
    let server = TestServer::start(memory, Some(pki.server_tls()));
    let dir = temp_dir("mtls");
    let client = client(&tls_config(dir.path(), server.address, &pki));
    runtime().block_on(async {
        client.refresh().await.unwrap();
        assert_eq!(client.node_groups().await.len(), 3);
    });
    // Also by name: the server certificate names localhost too.
    let by_name = temp_dir("mtls-name");
    let (ca, cert, key) = pki.write_client_files(by_name.path());
    let config = write(
        by_name.path(),
        "cloud.yaml",
        &format!(
            "address: localhost:{}\ncert: {}\nkey: {}\ncacert: {}\n",
            server.address.port(),
            cert.display(),
            key.display(),
            ca.display()
        ),
    );
    let by_name = crate::common::client(&config);
    runtime().block_on(async { client_ok(&by_name).await });
}

async fn client_ok(client: &Arc<dyn CloudProvider>) {
    client.refresh().await.unwrap();
}

/// The refusal's gRPC code and message.
fn refusal(client: &Arc<dyn CloudProvider>) -> (String, String) {
    match runtime().block_on(client.refresh()) {
        Err(CloudProviderError::Cloud { code: Some(code), message }) => {
            // Refused during the handshake: UNAVAILABLE; by an alert after it: UNKNOWN. With
            // TLS 1.3 the server checks the client's certificate after the client has finished
            // its side of the handshake, so the connection may also close before the alert is
            // read (CANCELLED, or UNKNOWN with a broken pipe), and then nothing tells the client
            // why.
            assert!(matches!(code.as_str(), "UNAVAILABLE" | "UNKNOWN" | "CANCELLED"), "{code}: {message}");
            (code, message)
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_client_trusting_another_ca_is_refused_with_a_clear_error() {
    let pki = Pki::new("server");
    let other = Pki::new("other");
    let (memory, _) = memory_provider();
    let server = TestServer::start(memory, Some(pki.server_tls()));
    let dir = temp_dir("wrong-ca");
    // The client's own certificate is fine; only its trust is wrong.
    let (_, cert, key) = pki.write_client_files(dir.path());
    let ca = write(dir.path(), "other-ca.crt", &other.ca_pem);
    let config = write(
        dir.path(),
        "cloud.yaml",
        &format!(
            "address: {}\ncert: {}\nkey: {}\ncacert: {}\n",
            server.address,
            cert.display(),
            key.display(),
            ca.display()
        ),
    );
    let (code, message) = refusal(&client(&config));
    assert_ne!(code, "CANCELLED", "the client itself rejects the server: {message}");
    assert!(message.contains(&format!("externalgrpc Refresh at {}", server.address)), "{message}");
    assert!(message.to_lowercase().contains("certificate"), "the cause is named: {message}");
}

#[test]
fn a_client_without_a_certificate_of_the_servers_ca_is_refused() {
    let pki = Pki::new("server");
    let stranger = Pki::new("stranger");
    let (memory, _) = memory_provider();
    let server = TestServer::start(memory, Some(pki.server_tls()));
    let dir = temp_dir("wrong-client-cert");
    let ca = write(dir.path(), "ca.crt", &pki.ca_pem);
    let cert = write(dir.path(), "tls.crt", &stranger.client_cert_pem);
    let key = write(dir.path(), "tls.key", &stranger.client_key_pem);
    let config = write(
        dir.path(),
        "cloud.yaml",
        &format!(
            "address: {}\ncert: {}\nkey: {}\ncacert: {}\n",
            server.address,
            cert.display(),
            key.display(),
            ca.display()
        ),
    );
    // Whether the server's reason reaches the client is a race (above): only the refusal and
    // the place are certain.
    let (_, message) = refusal(&client(&config));
    assert!(message.contains(&format!("externalgrpc Refresh at {}", server.address)), "{message}");
}

#[test]
fn a_plaintext_client_of_a_tls_server_is_refused_and_plaintext_works_with_a_plaintext_server() {
    let pki = Pki::new("server");
    let (memory, _) = memory_provider();
    let server = TestServer::start(memory.clone(), Some(pki.server_tls()));
    let client = plaintext_client(server.address, "2s");
    let error = runtime().block_on(client.refresh()).unwrap_err();
    assert!(matches!(&error, CloudProviderError::Cloud { .. }), "{error:?}");
    assert!(error.to_string().contains("externalgrpc Refresh"), "{error}");

    let plain = TestServer::start(memory, None);
    let plain_client = plaintext_client(plain.address, "2s");
    runtime().block_on(async { client_ok(&plain_client).await });
}

#[test]
fn the_server_refuses_bad_tls_material_before_serving() {
    let listener = runtime().block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let (memory, _) = memory_provider();
    let tls = cloudprovider_externalgrpc::server::ServerTls {
        cert_pem: b"not a certificate".to_vec(),
        key_pem: b"nor a key".to_vec(),
        client_ca_pem: None,
    };
    let error = runtime()
        .block_on(cloudprovider_externalgrpc::server::serve(memory, listener, Some(tls), async {}))
        .unwrap_err();
    assert!(error.to_string().contains("server certificate"), "{error}");
}
