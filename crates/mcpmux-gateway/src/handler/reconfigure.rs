//! What a running gateway serves changes: a reload's new servers and the servers readiness
//! waits for (`reconfigure`; which of them the scope admits is the hub's to say, from the
//! new servers' own declarations), and whether it is ready now.

use super::Gateway;

/// Why [`Gateway::reconfigure`] changed nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconfigureError {
    /// The gateway serves one server under its own names and the new config has not one.
    #[error(transparent)]
    Passthrough(#[from] crate::passthrough::PassthroughError),
    /// The hub refused the new config.
    #[error(transparent)]
    Hub(#[from] mcpmux::Error),
}

impl Gateway {
    /// Whether the gateway is ready, else why not: every required server connected (in the
    /// state it is in now, so one that failed and came back is ready again); with none
    /// required, once the servers' first connection attempts have settled. The reason names
    /// the servers only: their errors are `mcpmux servers`' to show (a probe needs no token).
    pub fn readiness(&self) -> Result<(), String> {
        let required = self.required();
        if required.is_empty() {
            return if *self.inner.startup.borrow() {
                Ok(())
            } else {
                Err("servers are still starting".into())
            };
        }
        let servers = self.inner.hub.servers();
        let missing: Vec<&str> = required
            .iter()
            .filter(|name| {
                !servers.iter().any(|s| {
                    &s.name == *name && matches!(s.state, mcpmux::ServerState::Connected { .. })
                })
            })
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "required servers not connected: {}",
                missing.join(", ")
            ))
        }
    }

    /// The servers readiness waits for now.
    fn required(&self) -> Vec<String> {
        mcpmux::cli_support::sync::read(&self.inner.required).clone()
    }

    /// Serves the servers of `config` from now on (see [`mcpmux::Hub::reconfigure`]), with
    /// `required` the servers readiness waits for. Sessions are kept; those that listen for
    /// tool-list changes hear of the new tool set. An invalid config changes nothing.
    pub async fn reconfigure(
        &self,
        config: mcpmux::ConfigSet,
        required: Vec<String>,
    ) -> Result<mcpmux::Reload, ReconfigureError> {
        let inner = &self.inner;
        if inner.options.passthrough {
            // Names are served unprefixed only because there is one server to route to.
            let names: Vec<String> = config.servers.iter().map(|s| s.name.clone()).collect();
            crate::passthrough::check_one_server(&names)?;
        }
        // A new server's resources are never shown outside the scope: the hub judges it by
        // its own declaration as it arrives (`Hub::in_scope`).
        let reload = inner.hub.reconfigure(config).await?;
        *mcpmux::cli_support::sync::write(&inner.required) = required;
        Ok(reload)
    }
}
