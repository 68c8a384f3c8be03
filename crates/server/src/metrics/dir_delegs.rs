//! Directory delegations: held, what their holders were told, and the
//! recalls by cause, read from the core at scrape time.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use server_core::state::dir_delegs::RecallCause;

pub(super) struct DirDelegCollector(pub Arc<server_core::Core>);

impl std::fmt::Debug for DirDelegCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DirDelegCollector")
    }
}

impl Collector for DirDelegCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = self.0.dir_delegation_counts();
        let held = ConstGauge::new(c.held as i64);
        held.encode(encoder.encode_descriptor(
            "nfsx_dir_delegations_held",
            "NFSv4.1 directory delegations held by clients (GET_DIR_DELEGATION)",
            None,
            held.metric_type(),
        )?)?;
        for (name, help, n) in [
            ("nfsx_dir_delegations_granted", "Directory delegations granted", c.granted),
            ("nfsx_dir_notify_calls", "CB_NOTIFY calls sent to holders of directory delegations", c.notify_calls),
            ("nfsx_dir_notify_changes", "Changes of delegated directories told in CB_NOTIFY", c.notify_changes),
        ] {
            ConstCounter::new(n).encode(encoder.encode_descriptor(name, help, None, MetricType::Counter)?)?;
        }
        let mut m = encoder.encode_descriptor(
            "nfsx_dir_delegation_recalls",
            "Directory delegations recalled (or revoked where the holder could not be told), by cause: not_asked (a change the holder did not ask to hear of), overflow (dir_notify_queue), undescribable (the directory went, events lost), refused and not_answered (CB_NOTIFY), backchannel_lost, conflict (another client changed the directory itself)",
            None,
            MetricType::Counter,
        )?;
        for (cause, n) in RecallCause::ALL.iter().zip(c.recalls) {
            ConstCounter::new(n).encode(m.encode_family(&[("cause", cause.label())])?)?;
        }
        Ok(())
    }
}
