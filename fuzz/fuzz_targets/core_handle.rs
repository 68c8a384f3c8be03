//! The whole server dispatch on an in-memory export: any record gets a
//! reply or none, never a panic. Starts from a mounted root so mutated
//! inputs reach the operations, not only the header checks.
#![no_main]
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use server_core::exports::{ClientMatcher, ClientRule, ExportOptions};
use server_core::{Core, CoreSettings, Export, PeerInfo, ServicePorts};

fn core() -> &'static Core {
    static CORE: OnceLock<Core> = OnceLock::new();
    CORE.get_or_init(|| {
        let options = ExportOptions { read_only: false, root_squash: false, secure: false, ..ExportOptions::default() };
        let export = Export {
            id: 1,
            path: "/fuzz".into(),
            fs: Arc::new(vfs::MemFs::new()),
            rules: vec![ClientRule::new(ClientMatcher::Everyone, options)],
        };
        Core::new(CoreSettings::default(), vec![export], [7; 32], [1; 8], ServicePorts { tcp: 2049, udp: None })
    })
}

fuzz_target!(|data: &[u8]| {
    let peer = PeerInfo {
        addr: SocketAddr::from(([127, 0, 0, 1], 700)),
        local: SocketAddr::from(([127, 0, 0, 1], 2049)),
        hostname: None,
    };
    let _ = core().handle(bytes::Bytes::copy_from_slice(data), &peer);
});
