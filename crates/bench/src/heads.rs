//! One service reached through several NFS servers ("heads") that share a
//! store, named `nfs://HEAD1,HEAD2,.../export`: client `i` of a run
//! connects to head `i mod N`, so a multi-client run spreads its clients
//! over the heads as a load balancer or DNS round robin would.

use std::sync::Arc;
use std::time::Duration;

use crate::target::{BenchError, BenchFs, Result, Target};

pub struct Heads {
    name: String,
    heads: Vec<Arc<dyn Target>>,
}

/// The per-head URLs of `url` when its host part names several heads
/// (`nfs://a:1,b:2/x?q` gives `nfs://a:1/x?q` and `nfs://b:2/x?q`); `None`
/// for an ordinary URL.
pub fn split(url: &str) -> Option<Vec<String>> {
    let rest = url.strip_prefix("nfs://")?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (hosts, tail) = rest.split_at(end);
    if !hosts.contains(',') {
        return None;
    }
    Some(hosts.split(',').map(|h| format!("nfs://{}{tail}", h.trim())).collect())
}

impl Heads {
    /// Opens every head (each is reached and mounted now).
    pub fn open(name: &str, urls: &[String], open: impl Fn(&str) -> Result<Arc<dyn Target>>) -> Result<Heads> {
        if urls.iter().any(|u| u.starts_with("nfs:///") || u.starts_with("nfs://?")) {
            return Err(BenchError::Invalid(format!("{name}: an empty head between commas")));
        }
        let heads = urls.iter().map(|u| open(u)).collect::<Result<Vec<_>>>()?;
        Ok(Heads { name: name.to_string(), heads })
    }
}

impl Target for Heads {
    fn name(&self) -> &str {
        &self.name
    }

    fn connect(&self) -> Result<Arc<dyn BenchFs>> {
        self.connect_client(0)
    }

    fn connect_client(&self, index: usize) -> Result<Arc<dyn BenchFs>> {
        self.heads[index % self.heads.len()].connect()
    }

    fn set_callers(&self, callers: usize) {
        self.heads.iter().for_each(|h| h.set_callers(callers));
    }

    fn set_delay(&self, rtt: Duration, one_way: bool) -> Result<()> {
        self.heads.iter().try_for_each(|h| h.set_delay(rtt, one_way))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_hosts_and_keeps_the_rest() {
        assert_eq!(split("nfs://a/x"), None);
        assert_eq!(split("nfs://a:2049/x?version=3"), None);
        assert_eq!(
            split("nfs://10.0.0.1,10.0.0.2:2050/x/y?version=4.1").unwrap(),
            vec!["nfs://10.0.0.1/x/y?version=4.1", "nfs://10.0.0.2:2050/x/y?version=4.1"]
        );
        assert_eq!(split("nfs://a,b?version=3").unwrap(), vec!["nfs://a?version=3", "nfs://b?version=3"]);
    }
}
