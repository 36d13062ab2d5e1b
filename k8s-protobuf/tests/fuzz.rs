//! The decoders take bytes from the network: random and mutated input must give a value or a
//! `DecodeError`, never a panic; and whatever decodes must survive a round trip unchanged (the Go
//! normalisations — empty string to `None`, zero time to `None` — are idempotent).

#![recursion_limit = "256"]

mod common;

use std::sync::LazyLock;

use k8s_protobuf::{node_from_bytes, node_to_bytes, pod_from_bytes, pod_to_bytes};
use proptest::prelude::*;

static SEEDS: LazyLock<[Vec<u8>; 2]> =
    LazyLock::new(|| [node_to_bytes(&common::rich_node()), pod_to_bytes(&common::rich_pod())]);

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), 0..8u8).prop_map(|(i, bit)| Mutation::Flip(i, 1 << bit)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::Set(i, b) if !bytes.is_empty() => bytes[i % len] = b,
            Mutation::Flip(i, mask) if !bytes.is_empty() => bytes[i % len] ^= mask,
            Mutation::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            Mutation::Delete(i) if !bytes.is_empty() => {
                bytes.remove(i % len);
            }
            Mutation::Truncate(i) => bytes.truncate(i % len),
            _ => {}
        }
    }
    bytes
}

/// Decodes as both kinds; whatever decodes must re-encode to an equal object.
fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(node) = node_from_bytes(bytes) {
        let again = node_from_bytes(&node_to_bytes(&node));
        prop_assert_eq!(again.ok(), Some(node));
    }
    if let Ok(pod) = pod_from_bytes(bytes) {
        let again = pod_from_bytes(&pod_to_bytes(&pod));
        prop_assert_eq!(again.ok(), Some(pod));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes)?;
    }

    #[test]
    fn mutated_objects_never_panic(seed in 0..2usize, mutations in proptest::collection::vec(mutation(), 1..6)) {
        check(&mutate(SEEDS[seed].clone(), &mutations))?;
    }
}

#[test]
fn every_truncation_of_a_valid_object_is_handled() {
    for seed in SEEDS.iter() {
        for end in 0..seed.len() {
            check(&seed[..end]).unwrap();
        }
    }
}
