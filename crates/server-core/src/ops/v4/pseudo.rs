//! The pseudo file system (RFC 8881 section 7.3): read-only directories
//! that join every export's path under one root, so a client can mount
//! `/` and walk to any export, and PUTROOTFH has somewhere to point.

use crate::Export;

/// What a pseudo directory entry leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Child {
    Node(u32),
    /// The root of the export with this id.
    Export(u32),
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub parent: u32,
    pub children: Vec<(Vec<u8>, Child)>,
}

/// The tree; node 0 is the root.
#[derive(Debug, Clone)]
pub(crate) struct PseudoFs {
    pub nodes: Vec<Node>,
    /// An export mounted at `/` replaces the pseudo root.
    pub root_export: Option<u32>,
}

impl PseudoFs {
    pub fn build(exports: &[Export]) -> PseudoFs {
        let mut fs = PseudoFs { nodes: vec![Node { parent: 0, children: Vec::new() }], root_export: None };
        for x in exports {
            let comps: Vec<&[u8]> = x.path.as_bytes().split(|b| *b == b'/').filter(|c| !c.is_empty()).collect();
            let Some((last, dirs)) = comps.split_last() else {
                fs.root_export = Some(x.id);
                continue;
            };
            let mut at = 0u32;
            let mut blocked = false;
            for c in dirs {
                match fs.child(at, c) {
                    Some(Child::Node(n)) => at = n,
                    // An export nested inside another export is reached
                    // through the outer export itself.
                    Some(Child::Export(_)) => {
                        blocked = true;
                        break;
                    }
                    None => {
                        let n = fs.nodes.len() as u32;
                        fs.nodes.push(Node { parent: at, children: Vec::new() });
                        fs.nodes[at as usize].children.push((c.to_vec(), Child::Node(n)));
                        at = n;
                    }
                }
            }
            if !blocked && fs.child(at, last).is_none() {
                fs.nodes[at as usize].children.push((last.to_vec(), Child::Export(x.id)));
            }
        }
        fs
    }

    pub fn child(&self, node: u32, name: &[u8]) -> Option<Child> {
        let n = self.nodes.get(node as usize)?;
        n.children.iter().find(|(c, _)| c == name).map(|(_, k)| *k)
    }

    pub fn parent(&self, node: u32) -> Option<u32> {
        self.nodes.get(node as usize).map(|n| n.parent)
    }

    /// The pseudo directory an export's root hangs from, and its name there.
    pub fn mount_point(&self, export_id: u32) -> Option<(u32, &[u8])> {
        self.nodes.iter().enumerate().find_map(|(i, n)| {
            n.children.iter().find(|(_, c)| *c == Child::Export(export_id)).map(|(name, _)| (i as u32, name.as_slice()))
        })
    }

    pub fn exists(&self, node: u32) -> bool {
        (node as usize) < self.nodes.len()
    }
}
