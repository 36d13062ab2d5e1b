//! Channels to `host:port` addresses, connected on first use: a server that is down when the
//! autoscaler starts must not stop it (the loop reports the errors and tries again next time).

use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

use crate::ClientTls;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("invalid address {address:?}: {reason}")]
    Address { address: String, reason: String },
    #[error("TLS settings for {address}: {message}")]
    Tls { address: String, message: String },
}

/// The host of `host:port`, `[v6]:port` or `[v6%zone]:port`, without brackets (what the TLS
/// server name is checked against, as Go's `net.SplitHostPort` gives it).
pub fn host_of(address: &str) -> Result<&str, EndpointError> {
    let fail = |reason: &str| EndpointError::Address { address: address.to_string(), reason: reason.to_string() };
    let (host, port) = if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| fail("missing ']' after an IPv6 host"))?;
        let port = after.strip_prefix(':').ok_or_else(|| fail("missing port after ']'"))?;
        (host, port)
    } else {
        let (host, port) = address.rsplit_once(':').ok_or_else(|| fail("missing port (expected host:port)"))?;
        if host.contains(':') {
            return Err(fail("too many colons (write IPv6 addresses as [addr]:port)"));
        }
        (host, port)
    };
    if port.is_empty() || port.parse::<u16>().is_err() {
        return Err(fail(&format!("port {port:?} is not a number from 0 to 65535")));
    }
    Ok(host)
}

/// A channel to `address` (`host:port`) that connects on the first call, over TLS when `tls` is
/// given, plaintext HTTP/2 otherwise. It must be created inside a tokio runtime (the
/// [`crate::BlockingBridge`]'s), which then drives its connection.
pub fn lazy_channel(
    address: &str,
    tls: Option<&ClientTls>,
    connect_timeout: Duration,
) -> Result<Channel, EndpointError> {
    host_of(address)?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let uri = format!("{scheme}://{address}");
    let mut endpoint = Endpoint::from_shared(uri)
        .map_err(|e| EndpointError::Address { address: address.to_string(), reason: e.to_string() })?
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        // Idle connections to a provider are kept alive, so a loop every 10 s reuses one.
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    if let Some(tls) = tls {
        endpoint = endpoint
            .tls_config(tls.to_tonic())
            .map_err(|e| EndpointError::Tls { address: address.to_string(), message: error_chain(&e) })?;
    }
    Ok(endpoint.connect_lazy())
}

/// An error and its sources, `a: b: c` (tonic's transport errors say little at the top level).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_come_out_of_addresses_as_go_splits_them() {
        assert_eq!(host_of("10.0.0.1:8086").unwrap(), "10.0.0.1");
        assert_eq!(host_of("provider.kube-system.svc:443").unwrap(), "provider.kube-system.svc");
        assert_eq!(host_of("[::1]:8086").unwrap(), "::1");
        assert_eq!(host_of("[fe80::1%eth0]:8086").unwrap(), "fe80::1%eth0");
        assert_eq!(host_of(":8086").unwrap(), "");
    }

    #[test]
    fn addresses_without_a_port_or_with_bare_ipv6_are_refused() {
        for bad in ["localhost", "::1:8086", "[::1]", "[::1]8086", "host:port", "host:", "host:70000"] {
            assert!(host_of(bad).is_err(), "{bad} should be refused");
        }
    }
}
