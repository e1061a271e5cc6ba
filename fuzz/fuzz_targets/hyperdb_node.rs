#![no_main]
//! Node (protobuf Entry + trie) decoding of untrusted blocks: never panics; a decoded node
//! re-encodes to bytes that decode to the same node.

use libfuzzer_sys::fuzz_target;
use strata_hyperdb::Node;

fuzz_target!(|data: &[u8]| {
    let (seq, block) = match data.split_first() {
        Some((&s, rest)) => (u64::from(s) + 1, rest),
        None => return,
    };
    if let Ok(node) = Node::decode(0, seq, block) {
        let again = node.encode(None);
        let back = Node::decode(0, seq, &again).expect("re-encoded node decodes");
        assert_eq!(back.key, node.key);
        assert_eq!(back.trie_owned(), node.trie_owned());
        assert_eq!(back.value, node.value);
        assert_eq!(back.deleted, node.deleted);
    }
});
