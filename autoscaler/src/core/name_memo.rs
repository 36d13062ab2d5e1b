//! `NameMemo`: what a walk over the pods found for each node name, remembered by the name's
//! address. Every source interns the names pods share (the kube adapter's pod watch, the memory
//! cluster and `plan`'s reader convert pods through one `PodInterner`), so the pods of a node
//! hold the very same string: looking a pod's node up costs a hash of two words instead of a
//! hash of the name and a compare, once per pod of a 100,000-pod list.
//!
//! Names not interned are still answered right, only remembered once per copy.

use rustc_hash::FxHashMap;

/// Answers per name for the names of one walk. Kept only while the strings asked about are
/// alive (one walk over one list of pods, which holds them): a string freed and another one
/// made at its address would be taken for it. (Addresses are only compared, never read.)
pub struct NameMemo<V> {
    by_address: FxHashMap<(*const u8, usize), V>,
}

impl<V> Default for NameMemo<V> {
    fn default() -> Self {
        NameMemo { by_address: FxHashMap::default() }
    }
}

impl<V: Copy> NameMemo<V> {
    /// The answer for `name`: remembered, or `find`'s (asked once per address).
    pub fn get(&mut self, name: &str, find: impl FnOnce(&str) -> V) -> V {
        *self.by_address.entry((name.as_ptr(), name.len())).or_insert_with(|| find(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_once_per_address_and_copies_are_answered_alike() {
        let (first, copy) = (String::from("node-a"), String::from("node-a"));
        let other = String::from("node-b");
        let mut asked = Vec::new();
        let mut memo = NameMemo::default();
        for name in [&first, &first, &copy, &other, &first] {
            let answer = memo.get(name, |n| {
                asked.push(n.to_string());
                n == "node-a"
            });
            assert_eq!(answer, name == "node-a", "{name}");
        }
        assert_eq!(asked, ["node-a", "node-a", "node-b"], "one ask per address: the copy is asked for itself");
        // A part of a name has the same address and another length: not the same entry.
        assert!(!memo.get(&first[..4], |n| n == "node-a"));
    }
}
