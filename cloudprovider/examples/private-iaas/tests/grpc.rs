//! `private-iaas-grpc` as a process, in front of the IaaS API process, reached through the
//! externalgrpc client (`--cloud-provider=externalgrpc`): the pools as node groups over the
//! wire, scale-ups that create VMs, refusals that keep their text, and mutual TLS.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use cloudprovider::{BuildError, CloudProvider, InstanceState, NodeGroup, ProviderContext, Purpose};
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use support::{IaasProcess, crate_dir, temp_dir, vms, write};

/// The gRPC server process; killed when dropped.
struct GrpcProcess {
    child: Child,
    address: String,
}

impl GrpcProcess {
    fn start(args: &[&str]) -> GrpcProcess {
        let mut child = Command::new(grpc_binary())
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting private-iaas-grpc");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let address =
            line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("the server said {line:?}")).to_string();
        GrpcProcess { child, address }
    }
}

impl Drop for GrpcProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn grpc_binary() -> std::path::PathBuf {
    std::env::var_os("CARGO_BIN_EXE_private-iaas-grpc")
        .map_or_else(|| env!("CARGO_BIN_EXE_private-iaas-grpc").into(), std::path::PathBuf::from)
}

/// The IaaS API process (the example's, but VMs build until settled: nothing changes by the
/// clock) and the example cloud-config pointed at it.
fn iaas(dir: &Path) -> (IaasProcess, std::path::PathBuf) {
    let example = std::fs::read_to_string(crate_dir().join("config/iaas.yaml")).unwrap();
    let manual = example.replace("buildSeconds: 1 ", "buildSeconds: null ");
    assert_ne!(manual, example, "the example's buildSeconds");
    let iaas = IaasProcess::start(&write(dir, "iaas.yaml", &manual));
    let example = std::fs::read_to_string(crate_dir().join("config/cloud-config.yaml")).unwrap();
    let config = write(dir, "cloud-config.yaml", &example.replace("http://127.0.0.1:8774", &iaas.url));
    (iaas, config)
}

/// The externalgrpc client, built by its factory from an upstream-format cloud-config.
async fn client(dir: &Path, config: &str) -> Result<Arc<dyn CloudProvider>, BuildError> {
    let mut context = ProviderContext::new(cloudprovider_externalgrpc::PROVIDER_NAME, Purpose::Controller);
    context.cloud_config = Some(write(dir, "externalgrpc.yaml", config));
    cloudprovider_externalgrpc::build(context).await
}

async fn group(provider: &dyn CloudProvider, id: &str) -> Arc<dyn NodeGroup> {
    provider.node_groups().await.into_iter().find(|g| g.id() == id).expect("the node group")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pools_are_served_over_externalgrpc() {
    let dir = temp_dir("grpc");
    let (iaas, cloud_config) = iaas(dir.path());
    let server = GrpcProcess::start(&["--cloud-config", cloud_config.to_str().unwrap()]);
    let provider = client(dir.path(), &format!("address: {}\ngrpc_timeout: 5s\n", server.address)).await.unwrap();

    provider.refresh().await.unwrap();
    let ids: Vec<String> = provider.node_groups().await.iter().map(|g| g.id().to_string()).collect();
    assert_eq!(ids, ["compute", "gpu"]);
    let gpu = group(provider.as_ref(), "gpu").await;
    let template = gpu.template_node_info().await.unwrap().node;
    let capacity = template.status.as_ref().unwrap().capacity.clone().unwrap();
    assert_eq!(capacity["nvidia.com/gpu"], Quantity("1".into()));
    assert_eq!(template.metadata.labels.as_ref().unwrap()["nvidia.com/gpu.product"], "Tesla-T4");

    let compute = group(provider.as_ref(), "compute").await;
    compute.increase_size(2).await.unwrap();
    assert_eq!(vms(&iaas.url, "compute").len(), 2);
    provider.refresh().await.unwrap();
    let instances = compute.nodes().await.unwrap();
    assert_eq!(instances.len(), 2);
    assert!(instances.iter().all(|i| i.id.starts_with("private-iaas://compute/vm-")), "{instances:?}");
    assert!(instances.iter().all(|i| i.status.as_ref().is_some_and(|s| s.state == InstanceState::Creating)));

    // A node is matched to its group by providerID on the server.
    let node = Node {
        metadata: ObjectMeta { name: Some("compute-x".into()), ..Default::default() },
        spec: Some(NodeSpec { provider_id: Some(instances[0].id.clone()), ..Default::default() }),
        status: None,
    };
    let owner = provider.node_group_for_node(&node).await.unwrap().expect("the node's group");
    assert_eq!(owner.id(), "compute");

    // Refusals cross the wire with their text.
    let error = compute.increase_size(20).await.unwrap_err();
    assert!(error.to_string().contains("size increase too large - desired:22 max:12"), "{error}");

    // Prices too.
    let pricing = provider.pricing().unwrap();
    let start = Timestamp::UNIX_EPOCH;
    let price = pricing.node_price(&node, start, start + SignedDuration::from_hours(1)).unwrap();
    assert!((price - 0.34).abs() < 1e-9, "{price}");
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files in `dir`.
fn pki(dir: &Path) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "private-iaas test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    for (name, sans, usage) in [
        ("server", vec!["127.0.0.1".to_string()], ExtendedKeyUsagePurpose::ServerAuth),
        ("client", Vec::new(), ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer).unwrap();
        write(dir, &format!("{name}.crt"), &cert.pem());
        write(dir, &format!("{name}.key"), &key.serialize_pem());
    }
    write(dir, "ca.crt", &ca.pem());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_admits_only_clients_with_a_certificate() {
    let dir = temp_dir("grpc-mtls");
    let (_iaas, cloud_config) = iaas(dir.path());
    pki(dir.path());
    let file = |name: &str| dir.path().join(name).display().to_string();
    let server = GrpcProcess::start(&[
        "--cloud-config",
        cloud_config.to_str().unwrap(),
        "--cert",
        &file("server.crt"),
        "--key",
        &file("server.key"),
        "--cacert",
        &file("ca.crt"),
    ]);

    let with_certificate = format!(
        "address: {}\ncert: {}\nkey: {}\ncacert: {}\ngrpc_timeout: 5s\n",
        server.address,
        file("client.crt"),
        file("client.key"),
        file("ca.crt")
    );
    let provider = client(dir.path(), &with_certificate).await.unwrap();
    provider.refresh().await.unwrap();
    assert_eq!(provider.node_groups().await.len(), 2);

    let plaintext =
        client(temp_dir("grpc-mtls-plain").path(), &format!("address: {}\ngrpc_timeout: 2s\n", server.address))
            .await
            .unwrap();
    assert!(plaintext.refresh().await.is_err());
}

#[test]
fn bad_flags_and_files_exit_2() {
    let dir = temp_dir("grpc-bad");
    let bad_config = write(dir.path(), "cloud-config.yaml", "endpoint: http://127.0.0.1:1\nnodeGroups: []\n");
    let run = |args: &[&str]| {
        let output = Command::new(grpc_binary()).args(["--listen", "127.0.0.1:0"]).args(args).output().unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).to_string())
    };
    let (code, stderr) = run(&["--cloud-config", bad_config.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{}:2: nodeGroups: ", bad_config.display())), "{stderr}");
    let (code, stderr) = run(&["--cloud-config", bad_config.to_str().unwrap(), "--cacert", "ca.crt"]);
    assert_eq!(code, Some(2), "{stderr}");
    let missing = dir.path().join("missing.crt").display().to_string();
    let (code, stderr) = run(&["--cloud-config", bad_config.to_str().unwrap(), "--cert", &missing, "--key", &missing]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("missing.crt"), "{stderr}");
}
