//! Where a server over a shared file system holds its NFSv4 share modes:
//! only in its own table until some client asks for an OPEN that denies,
//! in the store as well from then on (docs/SCALE-OUT.md, "Share
//! reservations").

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;

pub(super) struct SharesCollector(pub Arc<server_core::Core>);

impl std::fmt::Debug for SharesCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharesCollector")
    }
}

impl Collector for SharesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some((held, denials)) = self.0.share_store_state() else { return Ok(()) };
        let gauges = [
            (
                "nfsx_share_modes_in_store",
                "1 while every NFSv4 open's share modes are held in the shared file system too (0: no client anywhere has denied yet)",
                held,
            ),
            ("nfsx_share_denials_granted", "1 once OPENs that deny are granted (every server holds its modes)", denials),
        ];
        for (name, help, on) in gauges {
            let g = ConstGauge::new(i64::from(on));
            g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)?;
        }
        Ok(())
    }
}
