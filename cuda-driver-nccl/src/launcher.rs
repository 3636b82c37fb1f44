//! This process's place in the job, from the variables its launcher set: [`RankEnv`], and
//! [`RendezvousError`], what reading them or the exchange of the unique id can fail with.
//! Both are re-exported by [`rendezvous`](crate::rendezvous), their public home; this module
//! sits below the crate's [`Error`](crate::Error), which wraps a `RendezvousError`.

use std::io;
use std::time::Duration;

/// torchrun's default `MASTER_PORT`.
pub const DEFAULT_PORT: u16 = 29500;

/// Which launcher's variables described the rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launcher {
    /// `RANK`, `WORLD_SIZE`, `LOCAL_RANK` (torchrun).
    Torchrun,
    /// `OMPI_COMM_WORLD_*` (Open MPI).
    OpenMpi,
    /// `PMI_RANK`, `PMI_SIZE` (MPICH, Intel MPI, Slurm).
    Pmi,
}

/// This process's place in the job: its rank, the number of ranks, its rank on this host
/// and where rank 0 hands out the unique id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankEnv {
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    /// The number of ranks.
    pub world_size: usize,
    /// The rank among the processes of this host, when the launcher says.
    pub local_rank: Option<usize>,
    /// Rank 0's host (`MASTER_ADDR`); `None` is allowed for one rank only.
    pub master_addr: Option<String>,
    /// The port rank 0 listens on (`MASTER_PORT`, default [`DEFAULT_PORT`]).
    pub master_port: u16,
    /// Whose variables these were.
    pub launcher: Launcher,
}

/// Why the launcher's environment or the exchange failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RendezvousError {
    /// A variable the launcher should have set is missing.
    #[error("{var} is not set ({hint})")]
    MissingVar {
        /// The variable.
        var: &'static str,
        /// What it is and who sets it.
        hint: &'static str,
    },
    /// A variable holds something else than expected.
    #[error("{var}={value:?} is not {expected}")]
    BadVar {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// The rank is not below the world size.
    #[error(
        "rank {rank} is out of range for a world of {world_size} ranks ({launcher:?} variables)"
    )]
    RankOutOfRange {
        /// The rank.
        rank: usize,
        /// The world size.
        world_size: usize,
        /// Whose variables these were.
        launcher: Launcher,
    },
    /// A socket operation failed.
    #[error("rendezvous: {what} {addr}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The exchange did not complete in time.
    #[error("rendezvous at {addr}: not complete after {timeout:?}: {detail}")]
    Timeout {
        /// The address.
        addr: String,
        /// The timeout.
        timeout: Duration,
        /// What was still missing.
        detail: String,
    },
    /// The other side answered something that is not this exchange, or refused this rank.
    #[error("rendezvous at {addr}: {message}")]
    Protocol {
        /// The address.
        addr: String,
        /// What was wrong.
        message: String,
    },
}

type RResult<T> = std::result::Result<T, RendezvousError>;

impl RankEnv {
    /// This process's place in the job from the launcher's environment variables (see the
    /// [module docs](crate::rendezvous)); `Ok(None)` when no launcher set any.
    pub fn from_env() -> RResult<Option<RankEnv>> {
        RankEnv::from_vars(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) with the variables looked up through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> RResult<Option<RankEnv>> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        struct Names {
            launcher: Launcher,
            rank: &'static str,
            size: &'static str,
            local: &'static [&'static str],
        }
        const LAUNCHERS: [Names; 3] = [
            Names {
                launcher: Launcher::Torchrun,
                rank: "RANK",
                size: "WORLD_SIZE",
                local: &["LOCAL_RANK"],
            },
            Names {
                launcher: Launcher::OpenMpi,
                rank: "OMPI_COMM_WORLD_RANK",
                size: "OMPI_COMM_WORLD_SIZE",
                local: &["OMPI_COMM_WORLD_LOCAL_RANK"],
            },
            Names {
                launcher: Launcher::Pmi,
                rank: "PMI_RANK",
                size: "PMI_SIZE",
                local: &["MPI_LOCALRANKID", "PMI_LOCAL_RANK"],
            },
        ];
        let Some(n) = LAUNCHERS
            .iter()
            .find(|n| var(n.rank).is_some() || var(n.size).is_some())
        else {
            return Ok(None);
        };
        let number = |name: &'static str, hint: &'static str| -> RResult<usize> {
            let v = var(name).ok_or(RendezvousError::MissingVar { var: name, hint })?;
            v.trim().parse().map_err(|_| RendezvousError::BadVar {
                var: name,
                value: v,
                expected: "a number",
            })
        };
        let rank = number(n.rank, "this process's rank, set by the launcher")?;
        let world_size = number(n.size, "the number of ranks, set by the launcher")?;
        if world_size == 0 {
            return Err(RendezvousError::BadVar {
                var: n.size,
                value: "0".into(),
                expected: "a positive number",
            });
        }
        if rank >= world_size {
            return Err(RendezvousError::RankOutOfRange {
                rank,
                world_size,
                launcher: n.launcher,
            });
        }
        let mut local_rank = None;
        for name in n.local {
            if var(name).is_some() {
                local_rank = Some(number(name, "the rank on this host")?);
                break;
            }
        }
        let master_addr = var("MASTER_ADDR").map(|a| a.trim().to_string());
        if master_addr.is_none() && world_size > 1 {
            return Err(RendezvousError::MissingVar {
                var: "MASTER_ADDR",
                hint: "rank 0's host name or address, where the ranks meet; torchrun sets it, \
                       with mpirun pass -x MASTER_ADDR=<host of rank 0>",
            });
        }
        let master_port = match var("MASTER_PORT") {
            None => DEFAULT_PORT,
            Some(p) => p.trim().parse().map_err(|_| RendezvousError::BadVar {
                var: "MASTER_PORT",
                value: p,
                expected: "a TCP port number",
            })?,
        };
        Ok(Some(RankEnv {
            rank,
            world_size,
            local_rank,
            master_addr,
            master_port,
            launcher: n.launcher,
        }))
    }

    /// The GPU this rank uses among `device_count`: its local rank when the launcher gave
    /// one, else its rank, modulo the count (one process per GPU).
    pub fn device_ordinal(&self, device_count: usize) -> usize {
        self.local_rank.unwrap_or(self.rank) % device_count.max(1)
    }

    /// `MASTER_ADDR:MASTER_PORT`, as written.
    pub(crate) fn master(&self) -> RResult<(String, u16)> {
        match &self.master_addr {
            Some(a) => Ok((a.clone(), self.master_port)),
            None => Err(RendezvousError::MissingVar {
                var: "MASTER_ADDR",
                hint: "rank 0's host name or address, where the ranks meet",
            }),
        }
    }
}
