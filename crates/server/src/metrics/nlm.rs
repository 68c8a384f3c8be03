//! NLM's blocked lock requests and the grants told to clients, read from
//! the core at scrape time.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

pub(super) struct NlmCollector(pub Arc<server_core::Core>);

impl std::fmt::Debug for NlmCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NlmCollector")
    }
}

impl Collector for NlmCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let blocked = ConstGauge::new(self.0.nlm_blocked() as i64);
        blocked.encode(encoder.encode_descriptor(
            "nfsx_nlm_blocked",
            "Blocking NLM lock requests waiting for their range",
            None,
            blocked.metric_type(),
        )?)?;
        let (acknowledged, refused, given_up) = self.0.nlm_grants();
        let mut m = encoder.encode_descriptor(
            "nfsx_nlm_grant_callbacks",
            "Blocked NLM requests granted and told to the client (NLM_GRANTED), by how it ended: acknowledged, refused by the client (the lock released), given up after every try (the lock released)",
            None,
            MetricType::Counter,
        )?;
        for (result, n) in [("acknowledged", acknowledged), ("refused", refused), ("given_up", given_up)] {
            ConstCounter::new(n).encode(m.encode_family(&[("result", result)])?)?;
        }
        drop(m);
        let (monitored, answered, gave_up) = self.0.nsm_counts();
        let hosts = ConstGauge::new(monitored as i64);
        hosts.encode(encoder.encode_descriptor(
            "nfsx_nsm_monitored",
            "NFSv3 hosts NSM monitors (granted a lock or a share, or waiting for a lock): told of a restart",
            None,
            hosts.metric_type(),
        )?)?;
        let mut m = encoder.encode_descriptor(
            "nfsx_nsm_notify",
            "SM_NOTIFY calls telling hosts of this server's restart, by how they ended: answered, or given up",
            None,
            MetricType::Counter,
        )?;
        for (result, n) in [("answered", answered), ("given_up", gave_up)] {
            ConstCounter::new(n).encode(m.encode_family(&[("result", result)])?)?;
        }
        Ok(())
    }
}
