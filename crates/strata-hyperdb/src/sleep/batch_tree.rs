//! The merkle nodes of one append (a batch of blocks), hashed a depth at a time.

use super::crypto::{self, TreeNode};
use super::flat;

/// The merkle nodes an append makes. Which parents a batch creates (and their indexes and
/// sizes) follows from the indexes alone; their hashes are computed afterwards, a depth at a
/// time, several in one pass ([`crypto::parent_hashes`]): the parents of one depth only need
/// nodes of the depth below.
///
/// Kept by the feed and reused: its vectors (about 100 KB for a 1,000-block batch) are not
/// allocated per append (fresh pages each time).
#[derive(Default)]
pub(crate) struct BatchTree {
    /// The feed's roots before the append, then every node made, children before parents.
    pub(crate) nodes: Vec<TreeNode>,
    /// Where the nodes made by the append start in `nodes`.
    pub(crate) new_from: usize,
    /// The roots after the append, as positions in `nodes`, left to right.
    pub(crate) roots: Vec<usize>,
    /// (depth, parent, left child, right child) of each parent made: positions in `nodes`.
    parents: Vec<(u32, usize, usize, usize)>,
    /// The children of the parents of one depth.
    pairs: Vec<(TreeNode, TreeNode)>,
}

impl BatchTree {
    /// Makes the nodes of appending `blocks` (whose leaf hashes are `leaves`) to a feed of
    /// `length` blocks whose roots are `old_roots`; `scratch` holds hash inputs.
    pub(crate) fn build<B: AsRef<[u8]>>(
        &mut self,
        old_roots: &[TreeNode],
        length: u64,
        blocks: &[B],
        leaves: Vec<[u8; 32]>,
        scratch: &mut Vec<u8>,
    ) {
        let BatchTree {
            nodes,
            new_from,
            roots,
            parents,
            pairs,
        } = self;
        nodes.clear();
        nodes.extend_from_slice(old_roots);
        *new_from = nodes.len();
        roots.clear();
        roots.extend(0..nodes.len());
        parents.clear();
        for (i, (b, hash)) in blocks.iter().zip(leaves).enumerate() {
            nodes.push(TreeNode {
                index: 2 * (length + i as u64),
                hash,
                size: b.as_ref().len() as u64,
            });
            roots.push(nodes.len() - 1);
            while roots.len() >= 2 {
                let a = nodes[roots[roots.len() - 2]];
                let c = nodes[roots[roots.len() - 1]];
                let p = flat::parent(a.index);
                if flat::parent(c.index) != p || flat::depth(a.index) != flat::depth(c.index) {
                    break;
                }
                nodes.push(TreeNode {
                    index: p,
                    hash: [0; 32],
                    size: a.size + c.size,
                });
                let at = nodes.len() - 1;
                parents.push((
                    flat::depth(p),
                    at,
                    roots[roots.len() - 2],
                    roots[roots.len() - 1],
                ));
                roots.truncate(roots.len() - 2);
                roots.push(at);
            }
        }
        // A stable sort: the parents of one depth stay in creation order.
        parents.sort_by_key(|&(depth, ..)| depth);
        for group in parents.chunk_by(|x, y| x.0 == y.0) {
            pairs.clear();
            pairs.extend(group.iter().map(|&(_, _, a, c)| (nodes[a], nodes[c])));
            for (&(_, at, ..), hash) in group.iter().zip(crypto::parent_hashes(pairs, scratch)) {
                nodes[at].hash = hash;
            }
        }
    }
}
